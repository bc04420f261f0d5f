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

/*
 * A growing collection of range tombstones indexed by range, for a
 * memtable: a reader asks only for the tombstones overlapping its key span,
 * at a cost that depends on those (and on the logarithm of the rest), not on
 * how many were added elsewhere.
 *
 * It is a log-structured set of fragmented sets (Bentley and Saxe's
 * binary-counter method): each add makes a set of one tombstone, then merges
 * it with the newest sets while they hold no more tombstones than it does.
 * Sets then hold 1, 2, 4, ... tombstones, there are O(log n) of them, a
 * merge of two fragmented sets is linear in their sizes, so an add costs
 * O(log n) amortised and the largest merge is linear in n; a lookup does a
 * binary search in each set.
 *
 * Readers take a view: an immutable, reference-counted list of the sets as
 * they were, which the writer never changes (it publishes a new view under a
 * short mutex).  REQUIRES: one writer at a time (the memtable's writer);
 * any number of readers concurrently with it.
 */
struct rdel_index;
struct rdel_view;

struct rdel_index *rdel_index_new(void);
void rdel_index_free(struct rdel_index *x);   /* REQUIRES: no view outstanding */
/* Add [start, end) @ seq (copies the keys).  REQUIRES start < end. */
void rdel_index_add(struct rdel_index *x, struct slice start, struct slice end, uint64_t seq);

/* The memory the index's sets hold now (fragments, keys, sequences). */
size_t rdel_index_bytes(const struct rdel_index *x);
/* The current view, or NULL while the index is empty; release it when done. */
struct rdel_view *rdel_index_view(struct rdel_index *x);
void rdel_view_release(struct rdel_view *v);   /* v may be NULL */
/*
 * Append to (*t, *n, *cap) (a realloc'd array, the caller frees it) one
 * tombstone per fragment overlapping [lo, hi) (NULL: unbounded), with the
 * newest sequence <= snap covering that fragment.  The keys point into the
 * view: valid while it is held.
 */
void rdel_view_collect(const struct rdel_view *v, const struct slice *lo, const struct slice *hi,
		       uint64_t snap, struct rtomb **t, size_t *n, size_t *cap);
/* The largest sequence <= snap of a tombstone covering ukey; 0 if none. */
uint64_t rdel_view_covering(const struct rdel_view *v, struct slice ukey, uint64_t snap);
/* The number of sets in the view (for tests: O(log n)). */
size_t rdel_view_sets(const struct rdel_view *v);

#endif
