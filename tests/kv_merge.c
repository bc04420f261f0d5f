/*
 * kv_merge.c -- tests for engine/merge.c, the merging iterator.
 *
 * Children are vector-backed iterators over sorted arrays of short byte
 * strings from a two-letter alphabet, so equal keys within and across
 * children are common.  The reference is every entry of every child sorted
 * by (key, child index, position in child): the order merge.h promises
 * forward, and whose reverse it promises backward.  Values name their child
 * and position, so a comparison checks which entry came out, not just its
 * key.  A child can be told to fail at its n-th move, to check that errors
 * stop the merge instead of being skipped; the failure either sticks or
 * clears on the child's next move, as a retried read might.
 */
#include "tap.h"
#include "memtable.h"
#include "merge.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- a vector-backed child iterator */

struct entry {
	char key[8];
	size_t klen;
	char val[16];
	size_t vlen;
	int child, pos;
};

struct vec_iter {
	struct iter base;
	const struct entry *e;     /* borrowed, sorted by key */
	long n, pos;               /* pos outside [0, n) = not valid */
	long moves, fail_at;       /* fail on move number fail_at (0 = never) */
	int status, fail_status;
	int transient;             /* a failure clears on the next move (else it stays) */
	uint64_t max_seq;
};

static struct slice ekey(const struct entry *e)
{
	return slice_make(e->key, e->klen);
}

static struct vec_iter *vec(struct iter *it)
{
	return (struct vec_iter *)it;
}

/* Count a move; 1 if the iterator is (now) failed and must stay invalid. */
static int vec_failed(struct vec_iter *v)
{
	v->moves++;
	if (v->transient)
		v->status = 0;
	if (v->fail_at && v->moves == v->fail_at)
		v->status = v->fail_status;
	if (v->status)
		v->pos = -1;
	return v->status != 0;
}

static int vec_valid(struct iter *it)
{
	return vec(it)->pos >= 0 && vec(it)->pos < vec(it)->n;
}

static void vec_seek_first(struct iter *it)
{
	if (!vec_failed(vec(it)))
		vec(it)->pos = 0;
}

static void vec_seek_last(struct iter *it)
{
	if (!vec_failed(vec(it)))
		vec(it)->pos = vec(it)->n - 1;
}

static void vec_seek(struct iter *it, struct slice target)
{
	struct vec_iter *v = vec(it);
	long lo = 0, hi = v->n;

	if (vec_failed(v))
		return;
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		if (slice_cmp(ekey(&v->e[mid]), target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	v->pos = lo;
}

static void vec_next(struct iter *it)
{
	if (!vec_valid(it))
		abort();   /* the merge broke the REQUIRES valid contract */
	if (!vec_failed(vec(it)))
		vec(it)->pos++;
}

static void vec_prev(struct iter *it)
{
	if (!vec_valid(it))
		abort();
	if (!vec_failed(vec(it)))
		vec(it)->pos--;
}

static struct slice vec_key(struct iter *it)
{
	if (!vec_valid(it))
		abort();
	return ekey(&vec(it)->e[vec(it)->pos]);
}

static struct slice vec_value(struct iter *it)
{
	const struct entry *e;

	if (!vec_valid(it))
		abort();
	e = &vec(it)->e[vec(it)->pos];
	return slice_make(e->val, e->vlen);
}

static int vec_status(struct iter *it)
{
	return vec(it)->status;
}

static void vec_destroy(struct iter *it)
{
	free(it);
}

static uint64_t vec_max_seq(struct iter *it)
{
	return vec(it)->max_seq;
}

static const struct iter_ops vec_ops = {
	.valid = vec_valid, .seek_first = vec_seek_first, .seek_last = vec_seek_last,
	.seek = vec_seek, .next = vec_next, .prev = vec_prev, .key = vec_key, .value = vec_value,
	.status = vec_status, .destroy = vec_destroy, .max_seq = vec_max_seq,
};

static const struct iter_ops vec_ops_no_max_seq = {
	.valid = vec_valid, .seek_first = vec_seek_first, .seek_last = vec_seek_last,
	.seek = vec_seek, .next = vec_next, .prev = vec_prev, .key = vec_key, .value = vec_value,
	.status = vec_status, .destroy = vec_destroy,
};

static struct vec_iter *vec_new(const struct entry *e, long n)
{
	struct vec_iter *v = xcalloc(1, sizeof(*v));

	v->base.ops = &vec_ops;
	v->e = e;
	v->n = n;
	v->pos = -1;
	return v;
}

/* ---- random data and the reference order */

#define MAXCHILD 8
#define MAXLEN 40

static uint64_t rng = 0x0123456789abcdefull;

struct dataset {
	int nchild;
	struct entry child[MAXCHILD][MAXLEN];
	long len[MAXCHILD];
	struct entry all[MAXCHILD * MAXLEN];   /* every entry, in reference order */
	long nall;
};

static int cmp_entry_key(const void *a, const void *b)
{
	return slice_cmp(ekey(a), ekey(b));
}

/* The merged order: key, then child index, then position in the child. */
static int cmp_entry_ref(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int r = slice_cmp(ekey(x), ekey(y));

	if (r == 0)
		r = x->child != y->child ? (x->child > y->child) - (x->child < y->child)
					 : (x->pos > y->pos) - (x->pos < y->pos);
	return r;
}

static void random_key(char *k, size_t *klen)
{
	*klen = rand_next(&rng) % 4;
	for (size_t i = 0; i < *klen; i++)
		k[i] = "ab"[rand_next(&rng) % 2];
}

static void make_dataset(struct dataset *d, int nchild, int maxlen)
{
	d->nchild = nchild;
	d->nall = 0;
	for (int c = 0; c < nchild; c++) {
		d->len[c] = maxlen ? (long)(rand_next(&rng) % (uint64_t)(maxlen + 1)) : 0;
		for (long i = 0; i < d->len[c]; i++)
			random_key(d->child[c][i].key, &d->child[c][i].klen);
		qsort(d->child[c], (size_t)d->len[c], sizeof(struct entry), cmp_entry_key);
		for (long i = 0; i < d->len[c]; i++) {
			struct entry *e = &d->child[c][i];
			e->child = c;
			e->pos = (int)i;
			e->vlen = (size_t)snprintf(e->val, sizeof(e->val), "c%d.%ld", c, i);
			d->all[d->nall++] = *e;
		}
	}
	qsort(d->all, (size_t)d->nall, sizeof(struct entry), cmp_entry_ref);
}

static struct iter *merge_of(struct dataset *d, struct vec_iter **kids)
{
	struct iter *its[MAXCHILD];

	for (int c = 0; c < d->nchild; c++) {
		struct vec_iter *v = vec_new(d->child[c], d->len[c]);
		v->max_seq = 100 + (uint64_t)c;
		if (kids)
			kids[c] = v;
		its[c] = &v->base;
	}
	return merge_iter_new(its, (size_t)d->nchild, ukey_cmp_fn);
}

/* Does the merge stand on reference entry i (or is it invalid when i is out of range)? */
static int at(struct iter *m, const struct dataset *d, long i)
{
	if (i < 0 || i >= d->nall)
		return !iter_valid(m);
	if (!iter_valid(m))
		return 0;
	return slice_eq(iter_key(m), ekey(&d->all[i])) &&
	       slice_eq(iter_value(m), slice_make(d->all[i].val, d->all[i].vlen));
}

/* Index of the first reference entry with key >= target. */
static long ref_seek(const struct dataset *d, struct slice target)
{
	long i = 0;

	while (i < d->nall && slice_cmp(ekey(&d->all[i]), target) < 0)
		i++;
	return i;
}

/* ---- walks */

static void test_full_walks(void)
{
	int bad_fwd = 0, bad_bwd = 0, bad_status = 0, trials = 0, dups = 0;
	static struct dataset d;

	for (int t = 0; t < 400; t++) {
		make_dataset(&d, (int)(rand_next(&rng) % (MAXCHILD + 1)), t % 4 == 0 ? 3 : MAXLEN);
		struct iter *m = merge_of(&d, NULL);
		long i = 0;

		for (iter_seek_first(m); i <= d.nall; i++) {
			if (!at(m, &d, i)) {
				bad_fwd++;
				break;
			}
			if (!iter_valid(m))
				break;
			iter_next(m);
		}
		i = d.nall - 1;
		for (iter_seek_last(m); i >= -1; i--) {
			if (!at(m, &d, i)) {
				bad_bwd++;
				break;
			}
			if (!iter_valid(m))
				break;
			iter_prev(m);
		}
		bad_status += iter_status(m) != 0;
		for (long j = 1; j < d.nall; j++)
			dups += slice_eq(ekey(&d.all[j]), ekey(&d.all[j - 1])) &&
				d.all[j].child != d.all[j - 1].child;
		iter_destroy(m);
		trials++;
	}
	diag("%d merges of 0..%d children; %d adjacent equal keys from different children",
	     trials, MAXCHILD, dups);
	is_int(bad_fwd, 0, "a forward walk yields every entry in (key, child, position) order");
	is_int(bad_bwd, 0, "a backward walk yields exactly the reverse of the forward walk");
	is_int(bad_status, 0, "status is 0 after walking off either end");
}

static void test_random_walks(void)
{
	static struct dataset d;
	int bad = 0, steps = 0, switches = 0;
	char where[160] = "";

	for (int t = 0; t < 300 && !bad; t++) {
		make_dataset(&d, 1 + (int)(rand_next(&rng) % MAXCHILD), MAXLEN);
		struct iter *m = merge_of(&d, NULL);
		long i = -1;
		int last_dir = 0;

		for (int s = 0; s < 300 && !bad; s++) {
			uint64_t r = rand_next(&rng) % 16;
			const char *op;

			if (!iter_valid(m) || r == 0) {
				/* Reposition: seek_first, seek_last or seek to a random key. */
				uint64_t how = rand_next(&rng) % 3;
				if (how == 0) {
					iter_seek_first(m);
					i = 0;
					op = "seek_first";
				} else if (how == 1) {
					iter_seek_last(m);
					i = d.nall - 1;
					op = "seek_last";
				} else {
					char k[8];
					size_t kl;
					random_key(k, &kl);
					iter_seek(m, slice_make(k, kl));
					i = ref_seek(&d, slice_make(k, kl));
					op = "seek";
				}
				last_dir = 0;
			} else if (r < 9) {
				iter_next(m);
				i++;
				op = "next";
				switches += last_dir < 0;
				last_dir = 1;
			} else {
				iter_prev(m);
				i--;
				op = "prev";
				switches += last_dir > 0;
				last_dir = -1;
			}
			steps++;
			if (!at(m, &d, i)) {
				bad++;
				snprintf(where, sizeof(where),
					 "trial %d step %d after %s: want index %ld of %ld",
					 t, s, op, i, d.nall);
			}
		}
		iter_destroy(m);
	}
	diag("%d random steps, %d direction switches", steps, switches);
	ok(bad == 0,
	   "random next/prev/seek/seek_first/seek_last always stand on the reference entry");
	if (bad)
		diag("%s", where);
}

/* Switching direction where many children hold the same key: the hard case. */
static void test_ties(void)
{
	static struct dataset d;
	int bad = 0;

	/* Every child holds "a" twice and "b" once; the current entry moves through the ties. */
	d.nchild = 4;
	d.nall = 0;
	for (int c = 0; c < 4; c++) {
		const char *keys[3] = { "a", "a", "b" };
		d.len[c] = 3;
		for (int i = 0; i < 3; i++) {
			struct entry *e = &d.child[c][i];
			e->klen = strlen(keys[i]);
			memcpy(e->key, keys[i], e->klen);
			e->child = c;
			e->pos = i;
			e->vlen = (size_t)snprintf(e->val, sizeof(e->val), "c%d.%d", c, i);
			d.all[d.nall++] = *e;
		}
	}
	qsort(d.all, (size_t)d.nall, sizeof(struct entry), cmp_entry_ref);
	/* From every entry: one step forward then back, and one step back then forward. */
	for (long start = 0; start < d.nall; start++) {
		struct iter *m = merge_of(&d, NULL);
		iter_seek_first(m);
		for (long i = 0; i < start; i++)
			iter_next(m);
		if (start + 1 < d.nall) {
			iter_next(m);
			iter_prev(m);
			bad += !at(m, &d, start);
		}
		if (start > 0) {
			iter_prev(m);
			bad += !at(m, &d, start - 1);
			iter_next(m);
			bad += !at(m, &d, start);
		}
		iter_destroy(m);
	}
	is_int(bad, 0,
	       "next-prev and prev-next return to the same entry among 4 children sharing "
	       "every key");
}

static void test_edges(void)
{
	static struct dataset d;
	struct iter *m;

	m = merge_iter_new(NULL, 0, ukey_cmp_fn);
	iter_seek_first(m);
	ok(!iter_valid(m) && iter_status(m) == 0, "a merge of no children is empty, status 0");
	iter_seek_last(m);
	iter_seek(m, slice_str("x"));
	ok(!iter_valid(m), "and stays empty after seek_last and seek");
	iter_destroy(m);

	/* Internal keys: the comparator decides, not memcmp. */
	{
		struct buf k[4] = { BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT };
		struct iter *kids[2];
		struct entry e[2][2];
		static const char *want[4] = { "a@3", "a@1", "b@5", "b@2" };
		static const struct { const char *u; int seq, child; } src[4] = {
			{ "a", 1, 0 }, { "b", 5, 0 }, { "a", 3, 1 }, { "b", 2, 1 },
		};
		int good = 1, n = 0;
		for (int i = 0; i < 4; i++) {
			struct entry *x = &e[src[i].child][i % 2];
			ikey_append(&k[i], slice_str(src[i].u), (uint64_t)src[i].seq, KT_PUT);
			memcpy(x->key, k[i].data, k[i].len);
			x->klen = k[i].len;
			x->vlen = (size_t)snprintf(x->val, sizeof(x->val),
				   "%s@%d", src[i].u, src[i].seq);
		}
		kids[0] = &vec_new(e[0], 2)->base;
		kids[1] = &vec_new(e[1], 2)->base;
		m = merge_iter_new(kids, 2, ikey_cmp_fn);
		for (iter_seek_first(m); iter_valid(m); iter_next(m), n++)
			good &= n < 4 && slice_eq(iter_value(m), slice_str(want[n]));
		ok(good && n == 4, "with ikey_cmp_fn versions merge newest first: a@3 a@1 b@5 b@2");
		iter_destroy(m);
		for (int i = 0; i < 4; i++)
			buf_free(&k[i]);
	}

	/* max_seq delegates to the current child, or is UINT64_MAX without one. */
	{
		struct vec_iter *kids[MAXCHILD];
		int good = 1, n = 0;
		make_dataset(&d, 3, MAXLEN);
		m = merge_of(&d, kids);
		kids[2]->base.ops = &vec_ops_no_max_seq;
		for (iter_seek_first(m); iter_valid(m); iter_next(m), n++) {
			int c = iter_value(m).data[1] - '0';
			uint64_t want = c == 2 ? UINT64_MAX : 100 + (uint64_t)c;
			good &= m->ops->max_seq && m->ops->max_seq(m) == want;
		}
		ok(good && n == d.nall,
		   "max_seq is the current child's, or UINT64_MAX if it has none");
		iter_destroy(m);
	}
}

/* ---- merge_iter_children and merge_iter_reheap */

static void test_reheap(void)
{
	static struct dataset d;
	static struct entry rest[MAXCHILD * MAXLEN];
	int bad = 0, trials = 0;

	for (int t = 0; t < 300; t++) {
		struct vec_iter *kids[MAXCHILD];
		struct iter **ch;
		long steps, nrest = 0;

		make_dataset(&d, 1 + (int)(rand_next(&rng) % MAXCHILD), MAXLEN);
		struct iter *m = merge_of(&d, kids);
		if (merge_iter_children(m, &ch) != (size_t)d.nchild || ch[0] != &kids[0]->base) {
			bad++;
			iter_destroy(m);
			break;
		}
		iter_seek_first(m);
		steps = d.nall ? (long)(rand_next(&rng) % (uint64_t)d.nall) : 0;
		for (long i = 0; i < steps; i++)
			iter_next(m);
		if (!iter_valid(m)) {
			iter_destroy(m);
			continue;
		}
		/* Seek some children (sometimes the current one) to keys >= the current key. */
		char cur[8];
		size_t curlen = iter_key(m).len;
		memcpy(cur, iter_key(m).data, curlen);
		for (int c = 0; c < d.nchild; c++) {
			if (rand_next(&rng) % 2)
				continue;
			char k[8];
			size_t kl;
			do
				random_key(k, &kl);
			while (slice_cmp(slice_make(k, kl), slice_make(cur, curlen)) < 0);
			iter_seek(ch[c], slice_make(k, kl));
		}
		merge_iter_reheap(m);
		/* What must follow: every child's remaining entries, merged. */
		for (int c = 0; c < d.nchild; c++)
			for (long p = kids[c]->pos; p >= 0 && p < kids[c]->n; p++)
				rest[nrest++] = d.child[c][p];
		qsort(rest, (size_t)nrest, sizeof(struct entry), cmp_entry_ref);
		for (long i = 0; i < nrest; i++, iter_next(m)) {
			struct slice want = slice_make(rest[i].val, rest[i].vlen);
			if (!iter_valid(m) || !slice_eq(iter_value(m), want)) {
				bad++;
				break;
			}
		}
		bad += iter_valid(m);
		trials++;
		iter_destroy(m);
	}
	diag("%d reheap trials", trials);
	is_int(bad, 0,
	       "after children are sought forward directly, merge_iter_reheap continues "
	       "with their merge");
}

/* ---- errors */

static void test_errors(void)
{
	static struct dataset d;
	int bad_prefix = 0, went_on = 0, bad_status = 0, failures = 0;

	/* A child fails mid-walk: the merge stops there, having yielded only a reference prefix. */
	for (int t = 0; t < 300; t++) {
		struct vec_iter *kids[MAXCHILD];
		int dir = t % 2 ? -1 : 1;
		long i, n = 0;

		make_dataset(&d, 2 + (int)(rand_next(&rng) % (MAXCHILD - 1)), MAXLEN);
		struct iter *m = merge_of(&d, kids);
		int victim = (int)(rand_next(&rng) % (uint64_t)d.nchild);
		if (d.len[victim] < 2) {
			iter_destroy(m);
			continue;
		}
		/* Fail while the victim still has entries: at its seek or an early step. */
		kids[victim]->fail_at = 1 + (long)(rand_next(&rng) % (uint64_t)d.len[victim]);
		kids[victim]->fail_status = -EIO;
		kids[victim]->transient = (t / 2) % 2;
		failures++;
		if (dir > 0)
			iter_seek_first(m);
		else
			iter_seek_last(m);
		i = dir > 0 ? 0 : d.nall - 1;
		for (; iter_valid(m); i += dir, n++) {
			if (!at(m, &d, i)) {
				bad_prefix++;
				break;
			}
			if (dir > 0)
				iter_next(m);
			else
				iter_prev(m);
		}
		/* Some of the victim's entries were never yielded: the walk must stop early. */
		went_on += n >= d.nall;
		bad_status += iter_status(m) != -EIO;
		iter_destroy(m);
	}
	diag("%d walks with a failing child", failures);
	is_int(bad_prefix, 0,
	       "before a child fails, the merge yields exactly the reference entries");
	is_int(went_on, 0,
	       "a failing child stops the walk: the merge never reaches the end without it");
	is_int(bad_status, 0, "after a child fails, status is its error");

	/* Failure while switching direction. */
	{
		struct vec_iter *kids[MAXCHILD];
		int fails = 0, tries = 0;
		for (int t = 0; t < 100; t++) {
			make_dataset(&d, 3, MAXLEN);
			struct iter *m = merge_of(&d, kids);
			iter_seek_first(m);
			if (d.nall < 4) {
				iter_destroy(m);
				continue;
			}
			iter_next(m);
			iter_next(m);
			/* A child that is not current fails on its next move: the repositioning. */
			int c = iter_value(m).data[1] - '0', victim = (c + 1) % 3;
			kids[victim]->fail_at = kids[victim]->moves + 1;
			kids[victim]->fail_status = -EUCLEAN;
			/* A failure that a later seek would clear must still be noticed. */
			kids[victim]->transient = t % 2;
			iter_prev(m);
			tries++;
			fails += !iter_valid(m) && iter_status(m) == -EUCLEAN;
			iter_destroy(m);
		}
		is_int(fails, tries,
		       "a child failing while the direction switches leaves the merge invalid "
		       "with its error");
	}

	/* Children that fail at once, in any seek. */
	{
		static const char *names[3] = { "seek_first", "seek_last", "seek" };
		make_dataset(&d, 3, MAXLEN);
		for (int how = 0; how < 3; how++) {
			struct iter *kids[4];
			struct iter *m;
			for (int c = 0; c < 3; c++) {
				struct vec_iter *v = vec_new(d.child[c], d.len[c]);
				kids[c] = &v->base;
			}
			kids[3] = iter_empty(-EIO);
			/* Put the failing child in the middle, so the first ones are fine. */
			struct iter *tmp = kids[1];
			kids[1] = kids[3];
			kids[3] = tmp;
			m = merge_iter_new(kids, 4, ukey_cmp_fn);
			if (how == 0)
				iter_seek_first(m);
			else if (how == 1)
				iter_seek_last(m);
			else
				iter_seek(m, slice_str(""));
			ok(!iter_valid(m) && iter_status(m) == -EIO,
			   "a child with an error makes %s invalid, status -EIO, though others "
			   "hold data", names[how]);
			iter_destroy(m);
		}
	}
	{
		struct iter *kids[3] = { iter_empty(0), iter_empty(-EIO), iter_empty(-EUCLEAN) };
		struct iter *m = merge_iter_new(kids, 3, ukey_cmp_fn);
		iter_seek_first(m);
		is_int(iter_status(m), -EIO,
		       "status is the first non-zero child status in child order");
		iter_destroy(m);
	}
}

/*
 * A child over a memtable that a writer adds to between the merge's seek of
 * it and its step back, as a concurrent kv_put can: turning backward, the
 * merge must still put the child before the current entry.  The hook adds
 * "z" (newer than any reader's snapshot) right after the child's seek found
 * nothing, so that seek_last lands on it.
 */
struct hook_iter {
	struct iter base;
	struct iter *inner;
	struct memtable *mem;
	int armed;
};

#define HOOK(it) ((struct hook_iter *)(it))
static int hook_valid(struct iter *it) { return iter_valid(HOOK(it)->inner); }
static void hook_seek_first(struct iter *it) { iter_seek_first(HOOK(it)->inner); }
static void hook_seek_last(struct iter *it) { iter_seek_last(HOOK(it)->inner); }
static void hook_next(struct iter *it) { iter_next(HOOK(it)->inner); }
static void hook_prev(struct iter *it) { iter_prev(HOOK(it)->inner); }
static struct slice hook_key(struct iter *it) { return iter_key(HOOK(it)->inner); }
static struct slice hook_value(struct iter *it) { return iter_value(HOOK(it)->inner); }
static int hook_status(struct iter *it) { return iter_status(HOOK(it)->inner); }

static void hook_seek(struct iter *it, struct slice target)
{
	struct hook_iter *h = HOOK(it);

	iter_seek(h->inner, target);
	if (h->armed && !iter_valid(h->inner)) {
		mem_add(h->mem, 9, KT_PUT, slice_str("z"), slice_str("new"));
		h->armed = 0;
	}
}

static void hook_destroy(struct iter *it)
{
	iter_destroy(HOOK(it)->inner);
	free(it);
}

static const struct iter_ops hook_ops = {
	.valid = hook_valid, .seek_first = hook_seek_first, .seek_last = hook_seek_last,
	.seek = hook_seek, .next = hook_next, .prev = hook_prev, .key = hook_key,
	.value = hook_value, .status = hook_status, .destroy = hook_destroy,
};

static int at_ikey(struct iter *m, const char *ukey, uint64_t seq)
{
	return iter_valid(m) && slice_cmp(ikey_user(iter_key(m)), slice_str(ukey)) == 0 &&
	       ikey_seq(iter_key(m)) == seq;
}

static void test_insert_while_turning(void)
{
	struct memtable *a = mem_new(), *b = mem_new();
	struct hook_iter *h = xcalloc(1, sizeof(*h));
	struct iter *ch[2], *m;

	mem_add(a, 1, KT_PUT, slice_str("a"), slice_str("1"));
	mem_add(b, 5, KT_PUT, slice_str("m"), slice_str("5"));
	h->base.ops = &hook_ops;
	h->inner = mem_iter_new(a);
	h->mem = a;
	ch[0] = &h->base;
	ch[1] = mem_iter_new(b);
	m = merge_iter_new(ch, 2, ikey_cmp_fn);
	iter_seek_first(m);
	ok(at_ikey(m, "a", 1), "memtables: seek_first gives a@1");
	iter_next(m);
	ok(at_ikey(m, "m", 5), "next gives m@5");
	h->armed = 1;
	iter_prev(m);
	ok(at_ikey(m, "a", 1), "prev gives a@1, though z@9 was added to a's memtable while turning");
	iter_prev(m);
	ok(!iter_valid(m) && iter_status(m) == 0, "and prev again ends the walk");
	iter_destroy(m);
	mem_unref(a);
	mem_unref(b);
}

int main(void)
{
	plan(22);
	diag("random seed %#" PRIx64, rng);
	test_full_walks();
	test_random_walks();
	test_ties();
	test_edges();
	test_reheap();
	test_errors();
	test_insert_while_turning();
	return exit_status();
}
