/*
 * kv_rangedel.c -- tests of range tombstone fragmentation (engine/rangedel.c).
 *
 * Hand-made cases pin down the shape of the fragments for overlapping,
 * nested and adjacent tombstones; random sets of tombstones over a small
 * alphabet (so they overlap a lot) are checked against a brute-force
 * reference that looks at every tombstone for every probe key, for the
 * fragments themselves, for rdel_set_find and rdel_set_covering, for the
 * cursor moving forward, backward and jumping, and for the max_seq and
 * newest_only variants.  The memtable's range index (rdel_index) is checked
 * the same way as tombstones arrive one by one: its point answers, what it
 * hands an iterator for a key span, views kept across later adds, and that
 * a span away from the tombstones is handed nothing.
 */
#include "rangedel.h"
#include "dbformat.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 7;

static struct rtomb T(const char *s, const char *e, uint64_t seq)
{
	struct rtomb t = { slice_str(s), slice_str(e), seq };
	return t;
}

static int frag_is(const struct rdel_set *s, size_t i, const char *start, const char *end,
		   const uint64_t *seqs, size_t n)
{
	const struct rdel_frag *f;

	if (i >= rdel_set_count(s))
		return 0;
	f = rdel_set_frag(s, i);
	if (!slice_eq(f->start, slice_str(start)) || !slice_eq(f->end, slice_str(end)) ||
	    f->nseqs != n)
		return 0;
	for (size_t j = 0; j < n; j++)
		if (f->seqs[j] != seqs[j])
			return 0;
	return 1;
}

static void test_shapes(void)
{
	struct rdel_set *s;
	struct rtomb t[4];

	s = rdel_set_build(NULL, 0, SEQ_MAX, 0);
	is_int(rdel_set_count(s), 0, "no tombstones give an empty set");
	is_int(rdel_set_covering(s, slice_str("a"), SEQ_MAX), 0, "an empty set covers nothing");
	is_int(rdel_set_find(s, slice_str("a")), 0, "find in an empty set returns the count (0)");
	rdel_set_free(s);

	t[0] = T("a", "c", 5);
	t[1] = T("b", "d", 7);
	s = rdel_set_build(t, 2, SEQ_MAX, 0);
	is_int(rdel_set_count(s), 3, "two overlapping tombstones make three fragments");
	ok(frag_is(s, 0, "a", "b", (uint64_t[]){ 5 }, 1), "overlap: [a,b) carries 5");
	ok(frag_is(s, 1, "b", "c", (uint64_t[]){ 7, 5 }, 2), "overlap: [b,c) carries 7 then 5");
	ok(frag_is(s, 2, "c", "d", (uint64_t[]){ 7 }, 1), "overlap: [c,d) carries 7");
	is_int(rdel_set_covering(s, slice_str("b"), SEQ_MAX), 7, "b is covered at 7 by the newest");
	is_int(rdel_set_covering(s, slice_str("b"), 6), 5, "at snapshot 6, b is covered at 5");
	is_int(rdel_set_covering(s, slice_str("b"), 4), 0, "at snapshot 4, nothing covers b");
	is_int(rdel_set_covering(s, slice_str("d"), SEQ_MAX), 0, "end keys are exclusive");
	is_int(rdel_set_covering(s, slice_str("a"), SEQ_MAX), 5, "start keys are inclusive");
	is_int(rdel_set_covering(s, slice_str(""), SEQ_MAX), 0,
	       "keys before every tombstone are not covered");
	rdel_set_free(s);

	t[0] = T("a", "z", 3);
	t[1] = T("m", "n", 9);
	s = rdel_set_build(t, 2, SEQ_MAX, 0);
	is_int(rdel_set_count(s), 3, "a nested tombstone splits its parent into three fragments");
	ok(frag_is(s, 0, "a", "m", (uint64_t[]){ 3 }, 1) &&
	   frag_is(s, 1, "m", "n", (uint64_t[]){ 9, 3 }, 2) &&
	   frag_is(s, 2, "n", "z", (uint64_t[]){ 3 }, 1), "nested: [a,m){3} [m,n){9,3} [n,z){3}");
	rdel_set_free(s);

	t[0] = T("b", "c", 2);
	t[1] = T("a", "b", 1);
	t[2] = T("x", "y", 4);
	s = rdel_set_build(t, 3, SEQ_MAX, 0);
	is_int(rdel_set_count(s), 3, "adjacent and disjoint tombstones stay separate fragments");
	ok(frag_is(s, 0, "a", "b", (uint64_t[]){ 1 }, 1) &&
	   frag_is(s, 1, "b", "c", (uint64_t[]){ 2 }, 1) &&
	   frag_is(s, 2, "x", "y", (uint64_t[]){ 4 }, 1),
	   "adjacent: [a,b){1} [b,c){2}, then [x,y){4} after a gap");
	is_int(rdel_set_covering(s, slice_str("d"), SEQ_MAX), 0, "the gap is not covered");
	is_int(rdel_set_find(s, slice_str("d")), 2, "find in the gap returns the next fragment");
	is_int(rdel_set_find(s, slice_str("y")), 3, "find at the last end returns the count");
	rdel_set_free(s);

	t[0] = T("a", "c", 6);
	t[1] = T("a", "c", 6);
	t[2] = T("", "a", 8);
	s = rdel_set_build(t, 3, SEQ_MAX, 0);
	ok(rdel_set_count(s) == 2 && frag_is(s, 0, "", "a", (uint64_t[]){ 8 }, 1) &&
	   frag_is(s, 1, "a", "c", (uint64_t[]){ 6 }, 1),
	   "a tombstone given twice counts once; the empty key can start a tombstone");
	rdel_set_free(s);

	t[0] = T("a", "c", 5);
	t[1] = T("b", "d", 7);
	t[2] = T("b", "e", 9);
	s = rdel_set_build(t, 3, 7, 0);
	ok(rdel_set_count(s) == 3 && frag_is(s, 1, "b", "c", (uint64_t[]){ 7, 5 }, 2) &&
	   frag_is(s, 2, "c", "d", (uint64_t[]){ 7 }, 1),
	   "max_seq drops newer tombstones before fragmenting");
	rdel_set_free(s);
	s = rdel_set_build(t, 3, SEQ_MAX, 1);
	ok(rdel_set_count(s) == 4 && frag_is(s, 1, "b", "c", (uint64_t[]){ 9 }, 1) &&
	   frag_is(s, 3, "d", "e", (uint64_t[]){ 9 }, 1),
	   "newest_only keeps one sequence per fragment, the largest");
	rdel_set_free(s);
	s = rdel_set_build(t, 3, 4, 0);
	is_int(rdel_set_count(s), 0, "a max_seq below every tombstone gives an empty set");
	rdel_set_free(s);
}

/* ------------------------------------------------------------ random, against brute force */

#define NPROBE 200

struct world {
	struct rtomb *t;
	size_t n;
	char (*keys)[4];         /* storage for tombstone keys */
	char probe[NPROBE][4];   /* every key of length <= 2 over "abcd", and more */
	size_t nprobe;
};

static int probe_cmp(const void *a, const void *b)
{
	return slice_cmp(slice_str(a), slice_str(b));
}

static void random_key(char *k)
{
	int len = 1 + (int)(rand_next(&rng) % 2);

	for (int i = 0; i < len; i++)
		k[i] = (char)('a' + rand_next(&rng) % 5);
	k[len] = 0;
}

static void make_world(struct world *w, size_t n)
{
	const char *alpha = "abcdef";

	w->n = n;
	w->t = xcalloc(n ? n : 1, sizeof(*w->t));
	w->keys = xcalloc(2 * n + 1, sizeof(*w->keys));
	for (size_t i = 0; i < n; i++) {
		char *a = w->keys[2 * i], *b = w->keys[2 * i + 1];
		do {
			random_key(a);
			random_key(b);
		} while (strcmp(a, b) == 0);
		if (strcmp(a, b) > 0) {
			char tmp[4];
			memcpy(tmp, a, 4);
			memcpy(a, b, 4);
			memcpy(b, tmp, 4);
		}
		/* Distinct sequences, as every mutation has its own; not in key order. */
		w->t[i] = (struct rtomb){ slice_str(a), slice_str(b),
					  1 + i * 3 + rand_next(&rng) % 3 };
	}
	w->nprobe = 0;
	strcpy(w->probe[w->nprobe++], "");
	for (int i = 0; i < 6; i++) {
		w->probe[w->nprobe][0] = alpha[i];
		w->probe[w->nprobe++][1] = 0;
		for (int j = 0; j < 6; j++) {
			w->probe[w->nprobe][0] = alpha[i];
			w->probe[w->nprobe][1] = alpha[j];
			w->probe[w->nprobe++][2] = 0;
		}
	}
	qsort(w->probe, w->nprobe, sizeof(w->probe[0]), probe_cmp);
}

static void free_world(struct world *w)
{
	free(w->t);
	free(w->keys);
}

/* The reference: the largest seq <= min(snap, max_seq) of a tombstone covering k. */
static uint64_t brute_covering(const struct world *w, struct slice k, uint64_t snap,
			       uint64_t max_seq)
{
	uint64_t best = 0;

	for (size_t i = 0; i < w->n; i++) {
		const struct rtomb *t = &w->t[i];
		if (t->seq <= snap && t->seq <= max_seq && slice_cmp(t->start, k) <= 0 &&
		    slice_cmp(k, t->end) < 0 && t->seq > best)
			best = t->seq;
	}
	return best;
}

/*
 * Check the fragments' structure: sorted, non-empty, non-overlapping,
 * cut at every boundary, each carrying exactly the sequences of the
 * tombstones that span it (newest first), and no gap left uncovered that a
 * tombstone spans.  Returns a description of the first problem, or NULL.
 */
static const char *check_structure(const struct world *w, const struct rdel_set *s,
				   uint64_t max_seq, int newest_only)
{
	size_t n = rdel_set_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct rdel_frag *f = rdel_set_frag(s, i);
		uint64_t want[64];
		size_t nw = 0;

		if (slice_cmp(f->start, f->end) >= 0)
			return "a fragment is empty";
		if (i > 0 && slice_cmp(rdel_set_frag(s, i - 1)->end, f->start) > 0)
			return "fragments overlap or are out of order";
		for (size_t j = 0; j < w->n; j++) {
			const struct rtomb *t = &w->t[j];
			if (t->seq > max_seq)
				continue;
			/* A boundary strictly inside a fragment means it was not cut there. */
			int start_in = slice_cmp(t->start, f->start) > 0 &&
				       slice_cmp(t->start, f->end) < 0;
			int end_in = slice_cmp(t->end, f->start) > 0 &&
				     slice_cmp(t->end, f->end) < 0;
			if (start_in || end_in)
				return "a tombstone boundary lies inside a fragment";
			if (slice_cmp(t->start, f->start) <= 0 && slice_cmp(t->end, f->end) >= 0)
				want[nw++] = t->seq;
		}
		if (nw == 0)
			return "a fragment no tombstone spans";
		for (size_t a = 1; a < nw; a++)   /* insertion sort, descending */
			for (size_t b = a; b > 0 && want[b] > want[b - 1]; b--) {
				uint64_t x = want[b];
				want[b] = want[b - 1];
				want[b - 1] = x;
			}
		if (newest_only)
			nw = 1;
		if (f->nseqs != nw)
			return "a fragment carries the wrong number of sequences";
		for (size_t a = 0; a < nw; a++)
			if (f->seqs[a] != want[a])
				return "a fragment carries the wrong sequences";
	}
	return NULL;
}

static size_t brute_find(const struct rdel_set *s, struct slice k)
{
	size_t i = 0;

	while (i < rdel_set_count(s) && slice_cmp(rdel_set_frag(s, i)->end, k) <= 0)
		i++;
	return i;
}

/* Cursor answers agree with rdel_set_covering, and its fragment with the answer. */
static int cursor_agrees(struct rdel_cursor *c, const struct rdel_set *s, struct slice k,
			 uint64_t snap)
{
	uint64_t got = rdel_cursor_covering(c, k, snap);
	const struct rdel_frag *f = rdel_cursor_frag(c);

	if (got != rdel_set_covering(s, k, snap))
		return 0;
	if (!got)
		return f == NULL;
	return f && slice_cmp(f->start, k) <= 0 && slice_cmp(k, f->end) < 0;
}

static void test_random(void)
{
	size_t rounds = 300, bad_struct = 0, bad_find = 0, bad_cover = 0, bad_fwd = 0,
	       bad_bwd = 0, bad_jump = 0, bad_maxseq = 0, bad_newest = 0;
	const char *why = NULL;

	for (size_t r = 0; r < rounds; r++) {
		struct world w;
		struct rdel_set *s, *sm, *sn;
		struct rdel_cursor c;
		uint64_t max_seq;
		const char *e;

		make_world(&w, rand_next(&rng) % 25);
		max_seq = 1 + rand_next(&rng) % (3 * w.n + 3);
		s = rdel_set_build(w.t, w.n, SEQ_MAX, 0);
		sm = rdel_set_build(w.t, w.n, max_seq, 0);
		sn = rdel_set_build(w.t, w.n, SEQ_MAX, 1);

		if ((e = check_structure(&w, s, SEQ_MAX, 0)) != NULL) {
			bad_struct++;
			why = e;
		}
		if ((e = check_structure(&w, sm, max_seq, 0)) != NULL) {
			bad_maxseq++;
			why = e;
		}
		if ((e = check_structure(&w, sn, SEQ_MAX, 1)) != NULL) {
			bad_newest++;
			why = e;
		}
		for (size_t p = 0; p < w.nprobe; p++) {
			struct slice k = slice_str(w.probe[p]);
			uint64_t snap = rand_next(&rng) % 2 ? SEQ_MAX
							    : rand_next(&rng) % (3 * w.n + 4);

			bad_find += rdel_set_find(s, k) != brute_find(s, k);
			bad_cover += rdel_set_covering(s, k, snap) !=
				     brute_covering(&w, k, snap, SEQ_MAX);
			bad_maxseq += rdel_set_covering(sm, k, snap) !=
				      brute_covering(&w, k, snap, max_seq);
			/* newest_only: right for a reader at the newest snapshot. */
			bad_newest += rdel_set_covering(sn, k, SEQ_MAX) !=
				      brute_covering(&w, k, SEQ_MAX, SEQ_MAX);
		}

		rdel_cursor_init(&c, s);
		for (size_t p = 0; p < w.nprobe; p++)
			bad_fwd += !cursor_agrees(&c, s, slice_str(w.probe[p]), SEQ_MAX);
		for (size_t p = w.nprobe; p > 0; p--)
			bad_bwd += !cursor_agrees(&c, s, slice_str(w.probe[p - 1]), 1 + p % 40);
		for (size_t p = 0; p < w.nprobe; p++) {
			size_t q = (size_t)(rand_next(&rng) % w.nprobe);
			bad_jump += !cursor_agrees(&c, s, slice_str(w.probe[q]), SEQ_MAX);
		}
		/* Walking every fragment's own boundaries, forward, hits each exactly. */
		rdel_cursor_init(&c, s);
		for (size_t i = 0; i < rdel_set_count(s); i++) {
			const struct rdel_frag *f = rdel_set_frag(s, i);
			bad_fwd += rdel_cursor_covering(&c, f->start, SEQ_MAX) != f->seqs[0];
			bad_fwd += rdel_cursor_frag(&c) != f;
		}

		rdel_set_free(s);
		rdel_set_free(sm);
		rdel_set_free(sn);
		free_world(&w);
	}
	ok(bad_struct == 0, "random tombstones fragment into sorted, disjoint, fully cut "
	   "fragments carrying exactly the covering sequences (%s)", why ? why : "no problem");
	ok(bad_find == 0, "rdel_set_find returns the first fragment ending after the key");
	ok(bad_cover == 0, "rdel_set_covering matches brute force over every tombstone at "
	   "random snapshots");
	ok(bad_maxseq == 0,
	   "a set built with max_seq matches brute force ignoring newer tombstones");
	ok(bad_newest == 0, "a newest_only set has one sequence per fragment and answers the "
	   "newest snapshot");
	ok(bad_fwd == 0, "a cursor walking keys forward agrees with binary search");
	ok(bad_bwd == 0, "a cursor walking keys backward agrees with binary search");
	ok(bad_jump == 0, "a cursor jumping between random keys agrees with binary search");
}

static void test_many(void)
{
	/* Many disjoint tombstones: the cursor walks through them without losing its place. */
	size_t n = 5000, bad = 0;
	struct rtomb *t = xmalloc(n * sizeof(*t));
	char (*k)[16] = xmalloc(2 * n * sizeof(*k));
	struct rdel_set *s;
	struct rdel_cursor c;

	for (size_t i = 0; i < n; i++) {
		snprintf(k[2 * i], 16, "k%06zu", 2 * i);
		snprintf(k[2 * i + 1], 16, "k%06zu", 2 * i + 1);
		t[i] = (struct rtomb){ slice_str(k[2 * i]), slice_str(k[2 * i + 1]), i + 1 };
	}
	s = rdel_set_build(t, n, SEQ_MAX, 0);
	is_int(rdel_set_count(s), n, "5000 disjoint tombstones make 5000 fragments");
	rdel_cursor_init(&c, s);
	for (size_t i = 0; i < 2 * n; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%06zu", i);
		bad += rdel_cursor_covering(&c, slice_str(key), SEQ_MAX) != (i % 2 ? 0 : i / 2 + 1);
	}
	ok(bad == 0, "a forward cursor over 10000 keys alternately in and out of tombstones is "
	   "right every time");
	rdel_set_free(s);
	free(t);
	free(k);
}

/* ------------------------------------------------------------ the range index */

/*
 * An iterator's use of the index: the tombstones collected for [lo, hi) at
 * snap, built into a newest_only set, must answer every key of the span as
 * brute force over all tombstones does; and nothing collected may lie wholly
 * outside the span.
 */
static int collect_agrees(const struct world *w, const struct rdel_view *v, const char *lo,
			  const char *hi, uint64_t snap)
{
	struct slice l = slice_str(lo), h = slice_str(hi);
	struct rtomb *t = NULL;
	size_t n = 0, cap = 0;
	struct rdel_set *s;
	int good = 1;

	rdel_view_collect(v, &l, &h, snap, &t, &n, &cap);
	for (size_t i = 0; i < n; i++)
		if (slice_cmp(t[i].end, l) <= 0 || slice_cmp(t[i].start, h) >= 0 || t[i].seq > snap)
			good = 0;
	s = rdel_set_build(t, n, snap, 1);
	for (size_t p = 0; p < w->nprobe; p++) {
		struct slice k = slice_str(w->probe[p]);
		if (slice_cmp(k, l) < 0 || slice_cmp(k, h) >= 0)
			continue;
		if (rdel_set_covering(s, k, snap) != brute_covering(w, k, snap, SEQ_MAX))
			good = 0;
	}
	rdel_set_free(s);
	free(t);
	return good;
}

static void test_index(void)
{
	size_t bad_point = 0, bad_collect = 0, bad_old = 0, bad_sets = 0, checks = 0;

	for (size_t r = 0; r < 150; r++) {
		struct world w, part;
		struct rdel_index *x = rdel_index_new();
		struct rdel_view *old = NULL;
		size_t old_n = 0;

		make_world(&w, 1 + rand_next(&rng) % 40);
		part = w;
		for (size_t i = 0; i < w.n; i++) {
			struct rdel_view *v;

			rdel_index_add(x, w.t[i].start, w.t[i].end, w.t[i].seq);
			part.n = i + 1;
			v = rdel_index_view(x);
			/* a binary counter: never more sets than bits in the count */
			size_t bits = 0;
			for (size_t c = i + 1; c; c >>= 1)
				bits++;
			bad_sets += rdel_view_sets(v) > bits;
			for (size_t p = 0; p < w.nprobe; p++) {
				struct slice k = slice_str(w.probe[p]);
				uint64_t snap = rand_next(&rng) % 2 ? SEQ_MAX
								    : rand_next(&rng) % (3 * w.n + 4);
				bad_point += rdel_view_covering(v, k, snap) !=
					     brute_covering(&part, k, snap, SEQ_MAX);
			}
			for (int q = 0; q < 4; q++) {
				const char *a = w.probe[rand_next(&rng) % w.nprobe];
				const char *b = w.probe[rand_next(&rng) % w.nprobe];
				uint64_t snap = q % 2 ? SEQ_MAX : rand_next(&rng) % (3 * w.n + 4);
				if (strcmp(a, b) > 0) {
					const char *c = a;
					a = b;
					b = c;
				}
				bad_collect += !collect_agrees(&part, v, a, b, snap);
				checks++;
			}
			/* keep one view while later tombstones arrive: it must not change */
			if (i == w.n / 2) {
				old = v;
				old_n = i + 1;
			} else {
				rdel_view_release(v);
			}
		}
		if (old) {
			part.n = old_n;
			for (size_t p = 0; p < w.nprobe; p++) {
				struct slice k = slice_str(w.probe[p]);
				bad_old += rdel_view_covering(old, k, SEQ_MAX) !=
					   brute_covering(&part, k, SEQ_MAX, SEQ_MAX);
			}
			rdel_view_release(old);
		}
		rdel_index_free(x);
		free_world(&w);
	}
	ok(bad_point == 0, "the range index answers which tombstone covers a key as brute force "
	   "does, after every add, at random snapshots");
	ok(bad_collect == 0, "what the index hands an iterator for a key span (%zu spans) lies in "
	   "the span and answers every key in it as brute force does", checks);
	ok(bad_old == 0, "a view taken earlier still answers as of its time after later adds");
	ok(bad_sets == 0, "the index holds at most log2(n)+1 sets");
}

static void test_index_unrelated(void)
{
	/* 20000 row-like tombstones in one table; a span of another table is handed none. */
	size_t n = 20000, nt = 0, cap = 0;
	struct rdel_index *x = rdel_index_new();
	struct rdel_view *v;
	struct rtomb *t = NULL;
	char a[16], b[16];
	struct slice lo = slice_str("u"), hi = slice_str("v"), mid;

	for (size_t i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "t%06zu", i);
		snprintf(b, sizeof(b), "t%06zu\x01", i);
		rdel_index_add(x, slice_str(a), slice_str(b), i + 1);
	}
	/* and one large tombstone over part of them, as a dropped family would be */
	rdel_index_add(x, slice_str("t000100"), slice_str("t000200"), n + 1);
	v = rdel_index_view(x);
	rdel_view_collect(v, &lo, &hi, SEQ_MAX, &t, &nt, &cap);
	is_int(nt, 0, "a span away from 20001 tombstones is handed none of them");
	mid = slice_str("t000150");
	is_int(rdel_view_covering(v, mid, SEQ_MAX), n + 1, "a key under the large tombstone is "
	       "covered by it");
	is_int(rdel_view_covering(v, mid, n), 151, "at an older snapshot, by its row's tombstone");
	lo = slice_str("t000150");
	hi = slice_str("t000152");
	rdel_view_collect(v, &lo, &hi, SEQ_MAX, &t, &nt, &cap);
	ok(nt >= 2 && nt <= 8, "a span of two rows is handed only the few fragments there (%zu)",
	   nt);
	free(t);
	rdel_view_release(v);
	rdel_index_free(x);
}

int main(void)
{
	plan(42);
	test_shapes();
	test_random();
	test_many();
	test_index();
	test_index_unrelated();
	return exit_status();
}
