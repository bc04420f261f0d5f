/*
 * batch.h -- the encoding of a write batch, which is also the payload of a
 * write-ahead-log record:
 *
 *     fixed64 first sequence | fixed32 count | mutations...
 *
 * each mutation being one type byte (KT_PUT, KT_DELETE, KT_RANGE_DEL; with
 * BATCH_TREE_FLAG (0x80) set, a varint32 tree id > 0 follows it, and without
 * it the mutation is for tree 0, the default tree) then a
 * varint32-length-prefixed key and, for KT_PUT, a length-prefixed value, and
 * for KT_RANGE_DEL a length-prefixed end key.  The i-th mutation takes
 * sequence first + i.
 *
 * A batch never grows past WAL_MAX_RECORD bytes (wal.h), so that it always
 * fits one log record: kv_batch_put and friends return -E2BIG instead.
 */
#ifndef SMOLFS_BATCH_H
#define SMOLFS_BATCH_H

#include "kv.h"
#include "dbformat.h"

#define BATCH_HEADER 12
#define BATCH_TREE_FLAG 0x80

/* The id of a tree (0 for NULL, the default tree); defined in db.c. */
uint32_t db_tree_id(const struct kv_tree *t);

struct kv_batch {
	struct buf rep;   /* header + mutations; rep.len >= BATCH_HEADER always */
	size_t count;
	int has_trees;    /* some mutation names a tree other than the default */
};

static inline int batch_has_trees(const struct kv_batch *b)
{
	return b->has_trees;
}

/*
 * The most bytes one mutation adds to a batch besides its key and value (or
 * end key): type, tree id and two length prefixes.
 */
#define BATCH_MUTATION_OVERHEAD 16

/*
 * Make b an empty batch in the caller's memory mem of cap bytes, for one
 * write that should cost no allocation (kv_put).  The batch never grows:
 * REQUIRES cap >= BATCH_HEADER plus, for each mutation added,
 * BATCH_MUTATION_OVERHEAD + its key and value bytes.  Not freed with
 * kv_batch_free; mem belongs to the caller.
 */
void batch_init_fixed(struct kv_batch *b, char *mem, size_t cap);

uint64_t batch_seq(const struct kv_batch *b);
void batch_set_seq(struct kv_batch *b, uint64_t seq);
/*
 * Append every mutation of src to dst (group commit merges batches).
 * REQUIRES: the sum fits one log record (check kv_batch_bytes first).
 */
void batch_append(struct kv_batch *dst, const struct kv_batch *src);

/*
 * Walk an encoded batch (from a batch or a WAL record), calling fn for each
 * mutation with its sequence.  value is the value (KT_PUT), the end key
 * (KT_RANGE_DEL) or empty (KT_DELETE).  Stops at the first nonzero return of
 * fn and returns it; -EUCLEAN if the encoding is damaged, in which case fn was
 * never called (the whole batch is checked with batch_check first).
 */
typedef int (*batch_fn)(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
			struct slice value);
int batch_iterate(struct slice rep, batch_fn fn, void *arg);
/* Like batch_iterate, for a batch already checked (count from batch_check, or our own). */
int batch_apply(struct slice rep, uint32_t count, batch_fn fn, void *arg);
/*
 * Validate an encoded batch: known types, every length within the bytes,
 * range tombstones with start < end, sequences within SEQ_MAX, and exactly
 * the mutations the header counts.  Sets *count; -EUCLEAN if damaged.
 */
int batch_check(struct slice rep, uint32_t *count);

#endif
