/*
 * block.h -- the sorted key/value blocks SSTables are made of.
 *
 * A block is a run of entries followed by an array of restart offsets:
 *
 *     entry*  | fixed32 restart[num_restarts] | fixed32 num_restarts
 *     entry = varint32 shared | varint32 unshared | varint32 value_len |
 *             key bytes[unshared] | value bytes[value_len]
 *
 * Each key is stored as the number of bytes it shares with the previous key
 * plus the rest (prefix compression).  Every restart_interval entries the
 * full key is stored (shared = 0) and its offset recorded, so a seek can
 * binary-search the restart points and then scan at most one interval.
 * Blocks are compressed and checksummed by the SSTable layer, not here.
 */
#ifndef SMOLFS_BLOCK_H
#define SMOLFS_BLOCK_H

#include "dbformat.h"
#include "iter.h"

struct block_builder {
	struct buf data;
	struct buf last_key;
	uint32_t *restarts;
	size_t nrestarts, restarts_cap;
	int restart_interval;
	int counter;       /* entries since the last restart */
	size_t entries;
	int finished;
};

void blk_builder_init(struct block_builder *b, int restart_interval);
void blk_builder_free(struct block_builder *b);
void blk_builder_reset(struct block_builder *b);
/* REQUIRES: key > every key added since the last reset (in the table's order). */
void blk_add(struct block_builder *b, struct slice key, struct slice value);
/* Size of the block if finished now. */
size_t blk_size_estimate(const struct block_builder *b);
/* Append the restart array; the returned slice is valid until reset/free. */
struct slice blk_finish(struct block_builder *b);
static inline int blk_empty(const struct block_builder *b) { return b->entries == 0; }

/*
 * A parsed block.  The bytes belong to whoever filled contents (usually the
 * block cache); the block only points at them.
 */
struct block {
	struct slice contents;
	uint32_t restart_offset;   /* where the restart array begins */
	uint32_t nrestarts;
};

/* Check the trailer; -EUCLEAN if the restart array does not fit. */
int blk_parse(struct slice contents, struct block *out);

/*
 * Iterate a block with comparator cmp.  Every entry is bounds-checked as it
 * is decoded; a damaged entry makes the iterator invalid with -EUCLEAN.
 * The iterator does not own the block's bytes; release (may be NULL) is
 * called with release_arg when it is destroyed (used to unpin cache entries).
 */
struct iter *blk_iter_new(const struct block *blk, key_cmp_fn cmp,
			  void (*release)(void *arg), void *release_arg);

/*
 * The same iterator made in the caller's memory (on the stack, for a point
 * lookup that should not allocate): use &it->base as a struct iter, and
 * end it with blk_iter_release instead of iter_destroy.  The fields are
 * private to block.c.
 */
struct blk_iter {
	struct iter base;
	const char *data;
	uint32_t limit;          /* restart_offset: entries end here */
	const char *restarts;
	uint32_t nrestarts;
	key_cmp_fn cmp;
	/*
	 * The shortest key an entry may hold: 8 (the trailer) when cmp is
	 * ikey_cmp_fn, since ikey_cmp splits a key without checking its length;
	 * a shorter one is damage, reported like any other.
	 */
	uint32_t min_key;
	/*
	 * cur is the offset of the current entry (limit when not positioned);
	 * next_off the offset just past it; ridx the restart interval holding
	 * cur, which prev() uses to find where to re-scan from.
	 */
	uint32_t cur, next_off, ridx;
	struct buf key;          /* in key_inline while it fits */
	struct slice value;
	int status;
	void (*release)(void *arg);
	void *release_arg;
	char key_inline[48];
};
void blk_iter_init(struct blk_iter *it, const struct block *blk, key_cmp_fn cmp,
		   void (*release)(void *arg), void *release_arg);
void blk_iter_release(struct blk_iter *it);

/* Direct forms of the hot operations, for a caller that knows its iterator is a block's. */
static inline int blk_iter_valid(const struct blk_iter *it)
{
	return it->status == 0 && it->cur < it->limit;
}
static inline struct slice blk_iter_key(const struct blk_iter *it)
{
	return buf_slice(&it->key);
}
static inline struct slice blk_iter_value(const struct blk_iter *it)
{
	return it->value;
}
void blk_iter_next(struct blk_iter *it);   /* REQUIRES blk_iter_valid */

#endif
