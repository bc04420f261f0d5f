/*
 * merge.c -- the merging iterator of merge.h.
 *
 * The merged stream is the children's entries in the order (key, child
 * index, position in the child): equal keys come out lowest child first,
 * and a child's own equal keys in its order.  Walking backward gives exactly
 * the reverse, so a child with a higher index comes out first among equal
 * keys.
 *
 * The children play a tournament (a loser tree): a complete binary tree
 * over the children, padded to a power of two with children that are
 * always exhausted, whose internal nodes each hold the child that lost the
 * match played there, and whose root slot holds the overall winner, the
 * current entry: the smallest (key, index) moving forward, the largest
 * moving backward.  When the winner moves, it replays only the matches on
 * its path to the root, exactly log2(leaves) comparisons, where a binary
 * heap's sift-down compares twice per level.  An exhausted child loses
 * every match.  Each child's key slice is cached (it stays valid until that
 * child moves), so a match touches only the merge's own arrays.
 *
 * Invariant, moving forward with current entry (K, c): every other child j
 * stands on its first entry after (K, c), that is its first key > K if j < c
 * and its first key >= K if j > c (or is exhausted).  Moving backward, every
 * other child stands on its last entry before (K, c): its last key <= K if
 * j < c, its last key < K if j > c.  A direction switch re-establishes the
 * other invariant for every child but c (fix_for_backward/fix_for_forward);
 * c then wins the new tournament and takes the ordinary step.
 *
 * Errors: a child that meets an error becomes invalid and reports it through
 * its status.  If the merge simply let it lose every match, the stream would
 * go on without that child's entries, silently losing data; instead the
 * first error seen makes the merge invalid until the next seek, and status()
 * reports it.
 */
#include "merge.h"

#include <assert.h>
#include <stdlib.h>

enum { FORWARD, BACKWARD };

struct merge_iter {
	struct iter base;
	key_cmp_fn cmp;
	int ikeys;                 /* cmp is ikey_cmp_fn: compare inline, without the call */
	struct iter **children;    /* owned */
	size_t n;
	size_t leaves;             /* the smallest power of two >= n (at least 1) */
	struct slice *keys;        /* leaves slots: each live child's current key */
	unsigned char *live;       /* leaves slots: 1 while the child is valid */
	size_t *tree;              /* leaves slots: [0] the winner, [1..] the losers */
	size_t *scratch;           /* 2 * leaves slots, for building the tree */
	int dir;
	int err;                   /* first child error since the last seek; 0 if none */
};

static inline struct merge_iter *to_merge(struct iter *it)
{
	return (struct merge_iter *)it;
}

/* ---- the tournament */

static inline int key_cmp(const struct merge_iter *m, struct slice a, struct slice b)
{
	return m->ikeys ? ikey_cmp(a, b) : m->cmp(a, b);
}

/*
 * Does child a come before child b?  Forward: the smaller (key, index);
 * backward: the larger.  An exhausted child comes after every live one.
 */
static inline __attribute__((always_inline)) int beats(const struct merge_iter *m, size_t a,
							      size_t b)
{
	int r;

	if (!m->live[a] || !m->live[b])
		return m->live[a] ? 1 : m->live[b] ? 0 : a < b;
	r = key_cmp(m, m->keys[a], m->keys[b]);
	if (r == 0)
		r = a < b ? -1 : 1;
	return m->dir == FORWARD ? r < 0 : r > 0;
}

static inline size_t winner(const struct merge_iter *m)
{
	return m->tree[0];
}

/* Play every match from the leaves up (leaves - 1 comparisons). */
static void build(struct merge_iter *m)
{
	size_t p = m->leaves, *win = m->scratch;

	for (size_t i = 0; i < p; i++)
		win[p + i] = i;
	for (size_t j = p - 1; j >= 1; j--) {
		size_t a = win[2 * j], b = win[2 * j + 1];
		if (beats(m, a, b)) {
			win[j] = a;
			m->tree[j] = b;
		} else {
			win[j] = b;
			m->tree[j] = a;
		}
	}
	m->tree[0] = p > 1 ? win[1] : 0;
}

/* Child c (the winner) moved: replay its matches up to the root. */
static void replay(struct merge_iter *m, size_t c)
{
	size_t w = c;

	for (size_t j = (c + m->leaves) >> 1; j >= 1; j >>= 1) {
		if (beats(m, m->tree[j], w)) {
			size_t t = m->tree[j];
			m->tree[j] = w;
			w = t;
		}
	}
	m->tree[0] = w;
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

/* Refresh child i's cached state after it moved. */
static inline void refresh(struct merge_iter *m, size_t i)
{
	struct iter *child = m->children[i];

	m->live[i] = (unsigned char)iter_valid(child);
	if (m->live[i])
		m->keys[i] = iter_key(child);
	else
		child_stopped(m, child);
}

/* Enter every child into a new tournament for direction dir. */
static void rebuild(struct merge_iter *m, int dir)
{
	m->dir = dir;
	for (size_t i = 0; i < m->n; i++)
		refresh(m, i);
	build(m);
}

/* The winner moved (next or prev): refresh it and replay its path. */
static void top_moved(struct merge_iter *m)
{
	size_t c = winner(m);

	refresh(m, c);
	replay(m, c);
}

/* ---- direction switches */

/* Step child forward over every entry whose key equals k. */
static void skip_equal(struct merge_iter *m, struct iter *child, struct slice k)
{
	while (iter_valid(child) && key_cmp(m, iter_key(child), k) == 0)
		iter_next(child);
}

/*
 * Moving forward, the current entry is (k, c); put every other child on its
 * last entry before (k, c) in merged order.
 *
 * A child over a memtable can gain entries between the seek and the step
 * back (writers do not wait for readers), so the step can land on an entry
 * that is not before (k, c) after all: one inserted just before where the
 * seek stopped, or after every entry when the seek found none.  Such a
 * child would win the backward tournament out of order; it steps back on
 * until it stands before (k, c).
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
		while (iter_valid(child)) {
			int r = key_cmp(m, iter_key(child), k);
			if (r < 0 || (r == 0 && j < c))
				break;
			iter_prev(child);
		}
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

	return m->live[winner(m)] && m->err == 0;
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
		size_t c = winner(m);
		fix_for_forward(m, c, m->keys[c]);
		rebuild(m, FORWARD);
		if (m->err)
			return;
		/* Every other child is now after (k, c), so c still wins. */
		assert(m->live[winner(m)] && winner(m) == c);
	}
	iter_next(m->children[winner(m)]);
	top_moved(m);
}

static void m_prev(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	if (m->dir != BACKWARD) {
		size_t c = winner(m);
		fix_for_backward(m, c, m->keys[c]);
		rebuild(m, BACKWARD);
		if (m->err)
			return;
		assert(m->live[winner(m)] && winner(m) == c);
	}
	iter_prev(m->children[winner(m)]);
	top_moved(m);
}

static struct slice m_key(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	return m->keys[winner(m)];
}

static struct slice m_value(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	return iter_value(m->children[winner(m)]);
}

static uint64_t m_value_size(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	assert(m_valid(it));
	return iter_value_size(m->children[winner(m)]);
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
	child = m->children[winner(m)];
	return child->ops->max_seq ? child->ops->max_seq(child) : UINT64_MAX;
}

static void m_destroy(struct iter *it)
{
	struct merge_iter *m = to_merge(it);

	for (size_t i = 0; i < m->n; i++)
		iter_destroy(m->children[i]);
	free(m->children);
	free(m->keys);
	free(m->live);
	free(m->tree);
	free(m->scratch);
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
	.value_size = m_value_size,
};

struct iter *merge_iter_new(struct iter **children, size_t n, key_cmp_fn cmp)
{
	struct merge_iter *m = xcalloc(1, sizeof(*m));

	m->base.ops = &merge_ops;
	m->cmp = cmp;
	m->ikeys = cmp == ikey_cmp_fn;
	m->n = n;
	m->children = xmalloc(n * sizeof(*m->children));
	if (n)
		memcpy(m->children, children, n * sizeof(*children));
	m->leaves = 1;
	while (m->leaves < n)
		m->leaves *= 2;
	m->keys = xcalloc(m->leaves, sizeof(*m->keys));
	m->live = xcalloc(m->leaves, sizeof(*m->live));   /* padding children never live */
	m->tree = xcalloc(m->leaves, sizeof(*m->tree));
	m->scratch = xmalloc(2 * m->leaves * sizeof(*m->scratch));
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
