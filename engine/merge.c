/*
 * merge.c -- the merging iterator of merge.h.
 *
 * The merged stream is the children's entries in the order (key, child
 * index, position in the child): equal keys come out lowest child first,
 * and a child's own equal keys in its order.  Walking backward gives exactly
 * the reverse, so a child with a higher index comes out first among equal
 * keys.
 *
 * The valid children sit in a binary heap of (key, index) nodes: a min-heap
 * while moving forward, a max-heap while moving backward; the top is the
 * current entry.  Each node caches its child's key slice, which stays valid
 * until that child moves, so comparisons touch only the heap array.
 *
 * Invariant, moving forward with current entry (K, c): every other child j
 * stands on its first entry after (K, c), that is its first key > K if j < c
 * and its first key >= K if j > c (or is exhausted).  Moving backward, every
 * other child stands on its last entry before (K, c): its last key <= K if
 * j < c, its last key < K if j > c.  A direction switch re-establishes the
 * other invariant for every child but c (fix_for_backward/fix_for_forward);
 * c is then the top of the new heap and takes the ordinary step.
 *
 * Errors: a child that meets an error becomes invalid and reports it through
 * its status.  If the merge simply dropped it from the heap, the stream would
 * go on without that child's entries, silently losing data; instead the
 * first error seen makes the merge invalid until the next seek, and status()
 * reports it.
 */
#include "merge.h"

#include <assert.h>
#include <stdlib.h>

enum { FORWARD, BACKWARD };

struct heap_node {
	struct slice key;
	size_t idx;
};

struct merge_iter {
	struct iter base;
	key_cmp_fn cmp;
	struct iter **children;    /* owned */
	size_t n;
	struct heap_node *heap;    /* n slots; the first nheap hold the valid children */
	size_t nheap;
	int dir;
	int err;                   /* first child error since the last seek; 0 if none */
};

static inline struct merge_iter *to_merge(struct iter *it)
{
	return (struct merge_iter *)it;
}

/* ---- the heap */

/* Does a belong above b?  Forward: the smaller (key, idx); backward: the larger. */
static inline int above(const struct merge_iter *m, const struct heap_node *a,
			const struct heap_node *b)
{
	int r = m->cmp(a->key, b->key);

	if (r == 0)
		r = a->idx < b->idx ? -1 : 1;
	return m->dir == FORWARD ? r < 0 : r > 0;
}

static void sift_down(struct merge_iter *m, size_t i)
{
	struct heap_node *h = m->heap;
	struct heap_node x = h[i];

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= m->nheap)
			break;
		if (child + 1 < m->nheap && above(m, &h[child + 1], &h[child]))
			child++;
		if (!above(m, &h[child], &x))
			break;
		h[i] = h[child];
		i = child;
	}
	h[i] = x;
}

/*
 * Note a child that just moved and is not valid: exhausted, or failed.  The
 * first failure is kept; later ones are reported by status() in child order.
 */
static void child_stopped(struct merge_iter *m, struct iter *child)
{
	int st = iter_status(child);

	if (st != 0 && m->err == 0)
		m->err = st;
}

/* Put every valid child in the heap for direction dir (Floyd's bottom-up build). */
static void rebuild(struct merge_iter *m, int dir)
{
	m->dir = dir;
	m->nheap = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct iter *child = m->children[i];
		if (iter_valid(child)) {
			m->heap[m->nheap].key = iter_key(child);
			m->heap[m->nheap].idx = i;
			m->nheap++;
		} else {
			child_stopped(m, child);
		}
	}
	for (size_t i = m->nheap / 2; i-- > 0;)
		sift_down(m, i);
}

/* The top child moved (next or prev): refresh its node or drop it. */
static void top_moved(struct merge_iter *m)
{
	struct iter *child = m->children[m->heap[0].idx];

	if (iter_valid(child)) {
		m->heap[0].key = iter_key(child);
	} else {
		child_stopped(m, child);
		m->heap[0] = m->heap[--m->nheap];
	}
	if (m->nheap > 0)
		sift_down(m, 0);
}

/* ---- direction switches */

/* Step child forward over every entry whose key equals k. */
static void skip_equal(struct merge_iter *m, struct iter *child, struct slice k)
{
	while (iter_valid(child) && m->cmp(iter_key(child), k) == 0)
		iter_next(child);
}

/*
 * Moving forward, the current entry is (k, c); put every other child on its
 * last entry before (k, c) in merged order.
 */
static void fix_for_backward(struct merge_iter *m, size_t c, struct slice k)
{
	for (size_t j = 0; j < m->n; j++) {
		struct iter *child = m->children[j];
		if (j == c)
			continue;
		iter_seek(child, k);
		/* For j < c, entries equal to k precede (k, c): keep them on our side. */
		if (j < c)
			skip_equal(m, child, k);
		if (iter_valid(child))
			iter_prev(child);
		else if (iter_status(child) == 0)
			iter_seek_last(child);   /* every entry of child is before (k, c) */
	}
}

/*
 * Moving backward, the current entry is (k, c); put every other child on its
 * first entry after (k, c) in merged order.
 */
static void fix_for_forward(struct merge_iter *m, size_t c, struct slice k)
{
	for (size_t j = 0; j < m->n; j++) {
		struct iter *child = m->children[j];
		if (j == c)
			continue;
		iter_seek(child, k);
		/* For j < c, entries equal to k precede (k, c): they were already visited. */
		if (j < c)
			skip_equal(m, child, k);
	}
}

/* ---- the iterator operations */

static int m_valid(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	return m->nheap > 0 && m->err == 0;
}

static void m_seek_first(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	m->err = 0;
	for (size_t i = 0; i < m->n; i++)
		iter_seek_first(m->children[i]);
	rebuild(m, FORWARD);
}

static void m_seek_last(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	m->err = 0;
	for (size_t i = 0; i < m->n; i++)
		iter_seek_last(m->children[i]);
	rebuild(m, BACKWARD);
}

static void m_seek(struct iter *it, struct slice target)
{
	struct merge_iter *m = to_merge(it);

	m->err = 0;
	for (size_t i = 0; i < m->n; i++)
		iter_seek(m->children[i], target);
	rebuild(m, FORWARD);
}

static void m_next(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	if (m->dir != FORWARD) {
		size_t c = m->heap[0].idx;
		fix_for_forward(m, c, m->heap[0].key);
		rebuild(m, FORWARD);
		if (m->err)
			return;
		/* Every other child is now after (k, c), so c is still the top. */
		assert(m->nheap > 0 && m->heap[0].idx == c);
	}
	iter_next(m->children[m->heap[0].idx]);
	top_moved(m);
}

static void m_prev(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	if (m->dir != BACKWARD) {
		size_t c = m->heap[0].idx;
		fix_for_backward(m, c, m->heap[0].key);
		rebuild(m, BACKWARD);
		if (m->err)
			return;
		assert(m->nheap > 0 && m->heap[0].idx == c);
	}
	iter_prev(m->children[m->heap[0].idx]);
	top_moved(m);
}

static struct slice m_key(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	return m->heap[0].key;
}

static struct slice m_value(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	return iter_value(m->children[m->heap[0].idx]);
}

static int m_status(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	for (size_t i = 0; i < m->n; i++) {
		int st = iter_status(m->children[i]);
		if (st != 0)
			return st;
	}
	return m->err;
}

static uint64_t m_max_seq(struct iter *it)
{
	struct merge_iter *m = to_merge(it);
	struct iter *child;

	assert(m_valid(it));
	child = m->children[m->heap[0].idx];
	return child->ops->max_seq ? child->ops->max_seq(child) : UINT64_MAX;
}

static void m_destroy(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	for (size_t i = 0; i < m->n; i++)
		iter_destroy(m->children[i]);
	free(m->children);
	free(m->heap);
	free(m);
}

static const struct iter_ops merge_ops = {
	.valid = m_valid,
	.seek_first = m_seek_first,
	.seek_last = m_seek_last,
	.seek = m_seek,
	.next = m_next,
	.prev = m_prev,
	.key = m_key,
	.value = m_value,
	.status = m_status,
	.destroy = m_destroy,
	.max_seq = m_max_seq,
};

struct iter *merge_iter_new(struct iter **children, size_t n, key_cmp_fn cmp)
{
	struct merge_iter *m = xcalloc(1, sizeof(*m));

	m->base.ops = &merge_ops;
	m->cmp = cmp;
	m->n = n;
	m->children = xmalloc(n * sizeof(*m->children));
	if (n)
		memcpy(m->children, children, n * sizeof(*children));
	m->heap = xmalloc(n * sizeof(*m->heap));
	m->dir = FORWARD;
	return &m->base;
}

size_t merge_iter_children(struct iter *it, struct iter ***children)
{
	struct merge_iter *m = to_merge(it);

	assert(it->ops == &merge_ops);
	*children = m->children;
	return m->n;
}

void merge_iter_reheap(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(it->ops == &merge_ops);
	rebuild(m, m->dir);
}
