/*
 * merge.h -- the merging iterator: n sorted children as one sorted stream.
 *
 * The children play a tournament (a loser tree) on their current keys, won
 * by the smallest moving forward and the largest moving backward (switching
 * direction repositions every child around the current key, as any merging
 * iterator must).  Equal keys from different children come out in child
 * order (lower index first), which the db uses to put newer sources first;
 * walking backward gives exactly the reverse sequence.  The merging
 * iterator owns its children.
 *
 * A child that fails makes the merge invalid (it never goes on without the
 * child's entries) until the next seek; status() is the first non-zero child
 * status in child order, or the failure seen since the last seek.
 * max_seq() is the current child's max_seq, or UINT64_MAX (no bound known,
 * so nothing may be skipped) when that child does not provide one.
 */
#ifndef SMOLFS_MERGE_H
#define SMOLFS_MERGE_H

#include "dbformat.h"
#include "iter.h"

/*
 * Takes ownership of the n iterators (destroyed with the merge); the array
 * itself is copied and stays the caller's.  Not positioned until a seek.
 */
struct iter *merge_iter_new(struct iter **children, size_t n, key_cmp_fn cmp);
/* Number of children and the i-th one (to reposition one child directly). */
size_t merge_iter_children(struct iter *it, struct iter ***children);
/*
 * After the caller moved some children directly (for example seeking those
 * inside a deleted range past it), replay the whole tournament of the
 * current direction.
 * REQUIRES: every moved child was sought, in the direction of travel, to a
 * key >= the current key (forward) or <= it (backward).
 */
void merge_iter_reheap(struct iter *it);

#endif
