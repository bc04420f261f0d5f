/*
 * rangedel.h -- range tombstones and their fragmented form.
 *
 * A range tombstone [start, end) @ seq deletes every version of every key k
 * with start <= k < end whose sequence is below seq.  Tombstones from one
 * source may overlap; to answer "which tombstones cover k" quickly they are
 * fragmented: cut at every start and end into sorted, non-overlapping
 * intervals, each carrying the sequence numbers (newest first) of the
 * tombstones that cover all of it.  Then a binary search finds the fragment
 * of k, and a cursor walking keys in order moves through fragments in
 * amortised constant time.
 *
 * A set is immutable once built and may be read by many threads.
 */
#ifndef SMOLFS_RANGEDEL_H
#define SMOLFS_RANGEDEL_H

#include "util.h"

struct rtomb {
	struct slice start, end;   /* REQUIRES start < end */
	uint64_t seq;
};

struct rdel_frag {
	struct slice start, end;
	const uint64_t *seqs;      /* descending */
	size_t nseqs;
};

struct rdel_set;

/*
 * Build a fragmented set from n tombstones in any order (copies their keys).
 * Only sequence numbers <= max_seq are kept (SEQ_MAX: all); with
 * newest_only, each fragment keeps only its largest sequence (what a reader
 * at one snapshot needs).  An empty input gives an empty set.
 */
struct rdel_set *rdel_set_build(const struct rtomb *t, size_t n, uint64_t max_seq, int newest_only);
void rdel_set_free(struct rdel_set *s);
size_t rdel_set_count(const struct rdel_set *s);
const struct rdel_frag *rdel_set_frag(const struct rdel_set *s, size_t i);
/* Index of the first fragment whose end > ukey (count if none). */
size_t rdel_set_find(const struct rdel_set *s, struct slice ukey);
/* The largest sequence <= snap of a tombstone covering ukey; 0 if none. */
uint64_t rdel_set_covering(const struct rdel_set *s, struct slice ukey, uint64_t snap);

/*
 * A cursor for keys visited in order (either direction): covering() gives the
 * same answer as rdel_set_covering but moves from where it last was.
 */
struct rdel_cursor {
	const struct rdel_set *set;
	size_t idx;                     /* rdel_set_find() of the last key */
	const struct rdel_frag *found;  /* what rdel_cursor_frag() returns */
};
void rdel_cursor_init(struct rdel_cursor *c, const struct rdel_set *s);
uint64_t rdel_cursor_covering(struct rdel_cursor *c, struct slice ukey, uint64_t snap);
/* The fragment the last covering() call found covering its key, or NULL. */
const struct rdel_frag *rdel_cursor_frag(const struct rdel_cursor *c);

#endif
