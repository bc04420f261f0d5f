/*
 * rangedel.c -- fragmenting range tombstones and answering "which tombstone
 * covers this key" (see rangedel.h).
 *
 * Building sweeps the sorted boundary keys (every start and every end) from
 * left to right, keeping the tombstones active between the current boundary
 * and the next; each gap between two boundaries that some tombstone spans
 * becomes a fragment carrying the active sequence numbers, newest first.
 * The sweep costs O(B log B) for B boundaries, plus sorting each fragment's
 * sequences, so about the size of the output times a logarithm; for n
 * nested or staggered tombstones the output itself is O(n^2) sequence
 * numbers: that is the price of a representation where one lookup reads
 * one fragment.
 *
 * The set owns one arena holding each distinct boundary key once (a fragment's
 * end and the next one's start share bytes) and one array of all fragments'
 * sequence numbers, so freeing it is three calls whatever its size.
 *
 * The index (rdel_index, for memtables) keeps tombstones as a few such sets
 * of doubling sizes and merges two sets by one linear sweep of their sorted
 * boundaries, never re-sorting what is already fragmented.
 */
#include "rangedel.h"
#include "dbformat.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

struct rdel_set {
	struct rdel_frag *frags;
	size_t n;
	uint64_t *seqs;
	char *keys;
	size_t bytes;    /* the memory it holds, the struct included */
};

/* A boundary of the sweep: a key where some tombstone starts or ends. */
struct bound {
	struct slice key;
	size_t tomb;     /* index into the kept tombstones */
	int is_end;
};

static int bound_cmp(const void *a, const void *b)
{
	const struct bound *x = a, *y = b;

	return slice_cmp(x->key, y->key);
}

static int seq_desc_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x > y ? -1 : x < y;
}

struct rdel_set *rdel_set_build(const struct rtomb *t, size_t n, uint64_t max_seq, int newest_only)
{
	struct rdel_set *s = xcalloc(1, sizeof(*s));
	struct bound *b = NULL;
	size_t nb = 0, keybytes = 0, nactive = 0, seqs_len = 0, seqs_cap = 0, frags_cap = 0;
	size_t *active = NULL, *frag_seq_off = NULL;
	uint64_t *scratch = NULL;
	char *kp;

	if (n == 0)
		goto out;
	b = xmalloc(2 * n * sizeof(*b));
	for (size_t i = 0; i < n; i++) {
		assert(slice_cmp(t[i].start, t[i].end) < 0);
		/* Without asserts, an empty tombstone is dropped rather than made a fragment. */
		if (t[i].seq > max_seq || slice_cmp(t[i].start, t[i].end) >= 0)
			continue;
		b[nb++] = (struct bound){ t[i].start, i, 0 };
		b[nb++] = (struct bound){ t[i].end, i, 1 };
	}
	if (nb == 0)
		goto out;
	qsort(b, nb, sizeof(*b), bound_cmp);

	/* Copy each distinct boundary key into the arena once and repoint the bounds at it. */
	for (size_t i = 0; i < nb; i++)
		if (i == 0 || !slice_eq(b[i].key, b[i - 1].key))
			keybytes += b[i].key.len;
	s->keys = xmalloc(keybytes ? keybytes : 1);
	kp = s->keys;
	for (size_t i = 0; i < nb; i++) {
		if (i > 0 && slice_eq(b[i].key, b[i - 1].key)) {
			b[i].key = b[i - 1].key;
			continue;
		}
		if (b[i].key.len)
			memcpy(kp, b[i].key.data, b[i].key.len);
		b[i].key.data = kp;
		kp += b[i].key.len;
	}

	/*
	 * Sweep.  active holds the tombstones whose range contains the gap
	 * after the current boundary; a tombstone leaves when its end is
	 * reached.  active never exceeds n, and fragments never exceed nb.
	 */
	active = xmalloc(n * sizeof(*active));
	scratch = xmalloc(n * sizeof(*scratch));
	s->frags = xmalloc(nb * sizeof(*s->frags));
	frag_seq_off = xmalloc(nb * sizeof(*frag_seq_off));
	frags_cap = nb;
	for (size_t i = 0; i < nb;) {
		struct slice here = b[i].key;
		size_t j = i, ns = 0;

		for (; j < nb && slice_eq(b[j].key, here); j++) {
			if (!b[j].is_end) {
				active[nactive++] = b[j].tomb;
				continue;
			}
			for (size_t a = 0; a < nactive; a++) {
				if (active[a] == b[j].tomb) {
					active[a] = active[--nactive];
					break;
				}
			}
		}
		i = j;
		if (nactive == 0 || i == nb)
			continue;
		for (size_t a = 0; a < nactive; a++)
			scratch[a] = t[active[a]].seq;
		qsort(scratch, nactive, sizeof(*scratch), seq_desc_cmp);
		/* Equal sequence numbers (the same tombstone given twice) count once. */
		for (size_t a = 0; a < nactive; a++)
			if (ns == 0 || scratch[ns - 1] != scratch[a])
				scratch[ns++] = scratch[a];
		if (newest_only)
			ns = 1;
		if (seqs_len + ns > seqs_cap) {
			seqs_cap = seqs_cap * 2 > seqs_len + ns ? seqs_cap * 2 : seqs_len + ns + 64;
			s->seqs = xrealloc(s->seqs, seqs_cap * sizeof(*s->seqs));
		}
		memcpy(s->seqs + seqs_len, scratch, ns * sizeof(*scratch));
		assert(s->n < frags_cap);
		s->frags[s->n] = (struct rdel_frag){ here, b[i].key, NULL, ns };
		frag_seq_off[s->n] = seqs_len;
		seqs_len += ns;
		s->n++;
	}
	assert(nactive == 0);
	/* The seqs array has stopped moving; point the fragments into it. */
	for (size_t f = 0; f < s->n; f++)
		s->frags[f].seqs = s->seqs + frag_seq_off[f];
	s->bytes = frags_cap * sizeof(*s->frags) + seqs_cap * sizeof(*s->seqs) + keybytes;
out:
	s->bytes += sizeof(*s);
	free(b);
	free(active);
	free(scratch);
	free(frag_seq_off);
	return s;
}

void rdel_set_free(struct rdel_set *s)
{
	if (!s)
		return;
	free(s->frags);
	free(s->seqs);
	free(s->keys);
	free(s);
}

size_t rdel_set_count(const struct rdel_set *s)
{
	return s->n;
}

const struct rdel_frag *rdel_set_frag(const struct rdel_set *s, size_t i)
{
	assert(i < s->n);
	return &s->frags[i];
}

size_t rdel_set_find(const struct rdel_set *s, struct slice ukey)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (slice_cmp(s->frags[mid].end, ukey) > 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The largest sequence <= snap in a fragment's descending list, 0 if none. */
static uint64_t frag_visible_seq(const struct rdel_frag *f, uint64_t snap)
{
	size_t lo = 0, hi = f->nseqs;

	if (f->nseqs == 0 || f->seqs[0] <= snap)
		return f->nseqs ? f->seqs[0] : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->seqs[mid] <= snap)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < f->nseqs ? f->seqs[lo] : 0;
}

static uint64_t covering_at(const struct rdel_set *s, size_t i, struct slice ukey, uint64_t snap)
{
	if (i >= s->n || slice_cmp(s->frags[i].start, ukey) > 0)
		return 0;
	return frag_visible_seq(&s->frags[i], snap);
}

uint64_t rdel_set_covering(const struct rdel_set *s, struct slice ukey, uint64_t snap)
{
	return covering_at(s, rdel_set_find(s, ukey), ukey, snap);
}

void rdel_cursor_init(struct rdel_cursor *c, const struct rdel_set *s)
{
	c->set = s;
	c->idx = 0;
	c->found = NULL;
}

/* Steps taken one fragment at a time before a jump is assumed and a binary search done. */
#define CURSOR_STEPS 4

/*
 * The cursor keeps idx = rdel_set_find(set, last key).  For keys visited in
 * order that index moves by at most a fragment or two per call, so walking
 * from it is O(1) amortised; after a few steps without arriving the key has
 * jumped, and a binary search (O(log n)) is cheaper than walking further.
 */
uint64_t rdel_cursor_covering(struct rdel_cursor *c, struct slice ukey, uint64_t snap)
{
	const struct rdel_set *s = c->set;
	size_t i = c->idx;
	int steps = 0;
	uint64_t seq;

	if (i > s->n)
		i = s->n;
	while (i < s->n && slice_cmp(s->frags[i].end, ukey) <= 0 && steps < CURSOR_STEPS) {
		i++;
		steps++;
	}
	while (i > 0 && slice_cmp(s->frags[i - 1].end, ukey) > 0 && steps < CURSOR_STEPS) {
		i--;
		steps++;
	}
	if ((i < s->n && slice_cmp(s->frags[i].end, ukey) <= 0) ||
	    (i > 0 && slice_cmp(s->frags[i - 1].end, ukey) > 0))
		i = rdel_set_find(s, ukey);
	c->idx = i;
	seq = covering_at(s, i, ukey, snap);
	c->found = seq ? &s->frags[i] : NULL;
	return seq;
}

const struct rdel_frag *rdel_cursor_frag(const struct rdel_cursor *c)
{
	return c->found;
}

/* ------------------------------------------------------------------ index */

/* Appends ns sequences to the set's growing seqs array. */
static size_t seqs_append(struct rdel_set *s, size_t *len, size_t *cap, const uint64_t *q,
			  size_t ns)
{
	size_t off = *len;

	if (*len + ns > *cap) {
		*cap = *cap * 2 > *len + ns ? *cap * 2 : *len + ns + 64;
		s->seqs = xrealloc(s->seqs, *cap * sizeof(*s->seqs));
	}
	memcpy(s->seqs + *len, q, ns * sizeof(*q));
	*len += ns;
	return off;
}

/* The j-th boundary of a set in key order: start0, end0, start1, end1, ... */
static struct slice set_bound(const struct rdel_set *s, size_t j)
{
	return j & 1 ? s->frags[j / 2].end : s->frags[j / 2].start;
}

/*
 * One fragmented set holding every (fragment, sequence) of a and b.  Both
 * inputs' boundaries are already sorted, so the distinct boundaries of the
 * result come from one merge of the two lists; between two consecutive ones,
 * each input has at most one fragment covering the whole gap, found by a
 * pointer that only moves forward.  Linear in the sizes of a, b and the
 * result.
 */
static struct rdel_set *rdel_set_merge(const struct rdel_set *a, const struct rdel_set *b)
{
	struct rdel_set *s = xcalloc(1, sizeof(*s));
	size_t na = 2 * a->n, nb = 2 * b->n, ia = 0, ib = 0, nk = 0, keybytes = 0;
	size_t fa = 0, fb = 0, seqs_len = 0, seqs_cap = 0, scratch_cap = 0;
	struct slice *keys;
	size_t *off;
	uint64_t *scratch = NULL;
	char *kp;

	s->bytes = sizeof(*s);
	if (na + nb == 0)
		return s;
	keys = xmalloc((na + nb) * sizeof(*keys));
	while (ia < na || ib < nb) {
		struct slice k;

		if (ib >= nb || (ia < na && slice_cmp(set_bound(a, ia), set_bound(b, ib)) <= 0))
			k = set_bound(a, ia++);
		else
			k = set_bound(b, ib++);
		if (nk > 0 && slice_eq(keys[nk - 1], k))
			continue;
		keys[nk++] = k;
		keybytes += k.len;
	}
	s->keys = xmalloc(keybytes ? keybytes : 1);
	kp = s->keys;
	for (size_t j = 0; j < nk; j++) {
		if (keys[j].len)
			memcpy(kp, keys[j].data, keys[j].len);
		keys[j].data = kp;
		kp += keys[j].len;
	}

	s->frags = xmalloc(nk * sizeof(*s->frags));
	off = xmalloc(nk * sizeof(*off));
	for (size_t j = 0; j + 1 < nk; j++) {
		struct slice lo = keys[j], hi = keys[j + 1];
		const struct rdel_frag *x = NULL, *y = NULL;
		size_t ns = 0, i = 0, k = 0;

		while (fa < a->n && slice_cmp(a->frags[fa].end, lo) <= 0)
			fa++;
		while (fb < b->n && slice_cmp(b->frags[fb].end, lo) <= 0)
			fb++;
		if (fa < a->n && slice_cmp(a->frags[fa].start, lo) <= 0)
			x = &a->frags[fa];
		if (fb < b->n && slice_cmp(b->frags[fb].start, lo) <= 0)
			y = &b->frags[fb];
		if (!x && !y)
			continue;
		/* hi is the next boundary of either set, so a covering fragment spans [lo, hi) */
		assert(!x || slice_cmp(x->end, hi) >= 0);
		assert(!y || slice_cmp(y->end, hi) >= 0);
		if ((x ? x->nseqs : 0) + (y ? y->nseqs : 0) > scratch_cap) {
			scratch_cap = (x ? x->nseqs : 0) + (y ? y->nseqs : 0);
			scratch = xrealloc(scratch, scratch_cap * sizeof(*scratch));
		}
		/* both lists are descending: merge them, an equal sequence once */
		while ((x && i < x->nseqs) || (y && k < y->nseqs)) {
			uint64_t q;

			if (!y || k >= y->nseqs || (x && i < x->nseqs && x->seqs[i] >= y->seqs[k]))
				q = x->seqs[i++];
			else
				q = y->seqs[k++];
			if (ns == 0 || scratch[ns - 1] != q)
				scratch[ns++] = q;
		}
		off[s->n] = seqs_append(s, &seqs_len, &seqs_cap, scratch, ns);
		s->frags[s->n] = (struct rdel_frag){ lo, hi, NULL, ns };
		s->n++;
	}
	for (size_t f = 0; f < s->n; f++)
		s->frags[f].seqs = s->seqs + off[f];
	s->bytes = sizeof(*s) + nk * sizeof(*s->frags) + seqs_cap * sizeof(*s->seqs) + keybytes;
	free(keys);
	free(off);
	free(scratch);
	return s;
}

/* One set of the index, shared by every view that lists it. */
struct rdel_part {
	struct rdel_set *set;
	size_t ntombs;      /* tombstones merged into it: what the doubling counts */
	int refs;           /* atomic */
};

struct rdel_view {
	int refs;           /* atomic */
	size_t n;
	struct rdel_part *parts[];   /* oldest and largest first */
};

struct rdel_index {
	pthread_mutex_t mu;          /* guards cur (the pointer, not what it points to) */
	struct rdel_view *cur;       /* NULL while empty */
	size_t bytes;                /* held by cur's sets; written by the writer only */
};

static struct rdel_part *part_new(struct rdel_set *set, size_t ntombs)
{
	struct rdel_part *p = xmalloc(sizeof(*p));

	p->set = set;
	p->ntombs = ntombs;
	p->refs = 1;
	return p;
}

static void part_unref(struct rdel_part *p)
{
	if (__atomic_fetch_sub(&p->refs, 1, __ATOMIC_ACQ_REL) != 1)
		return;
	rdel_set_free(p->set);
	free(p);
}

struct rdel_index *rdel_index_new(void)
{
	struct rdel_index *x = xcalloc(1, sizeof(*x));

	pthread_mutex_init(&x->mu, NULL);
	return x;
}

void rdel_index_free(struct rdel_index *x)
{
	if (!x)
		return;
	rdel_view_release(x->cur);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

void rdel_index_add(struct rdel_index *x, struct slice start, struct slice end, uint64_t seq)
{
	struct rtomb t = { start, end, seq };
	struct rdel_view *old = x->cur, *v;   /* only the writer changes cur */
	struct rdel_part *p = part_new(rdel_set_build(&t, 1, SEQ_MAX, 0), 1);
	size_t keep = old ? old->n : 0, bytes = __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);

	/*
	 * Carry as a binary counter does: while the newest set is no larger,
	 * fold it in.  The old view still holds the folded sets, so readers
	 * of it are undisturbed; they go when it is released.
	 */
	while (keep > 0 && old->parts[keep - 1]->ntombs <= p->ntombs) {
		struct rdel_part *q = old->parts[keep - 1];
		struct rdel_part *m = part_new(rdel_set_merge(q->set, p->set), q->ntombs + p->ntombs);

		bytes -= q->set->bytes;
		part_unref(p);
		p = m;
		keep--;
	}
	bytes += p->set->bytes;
	__atomic_store_n(&x->bytes, bytes, __ATOMIC_RELAXED);
	v = xmalloc(sizeof(*v) + (keep + 1) * sizeof(v->parts[0]));
	v->refs = 1;
	v->n = keep + 1;
	for (size_t i = 0; i < keep; i++) {
		v->parts[i] = old->parts[i];
		__atomic_fetch_add(&v->parts[i]->refs, 1, __ATOMIC_RELAXED);
	}
	v->parts[keep] = p;
	pthread_mutex_lock(&x->mu);
	x->cur = v;
	pthread_mutex_unlock(&x->mu);
	rdel_view_release(old);
}

size_t rdel_index_bytes(const struct rdel_index *x)
{
	return __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);
}

struct rdel_view *rdel_index_view(struct rdel_index *x)
{
	struct rdel_view *v;

	pthread_mutex_lock(&x->mu);
	v = x->cur;
	if (v)
		__atomic_fetch_add(&v->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&x->mu);
	return v;
}

void rdel_view_release(struct rdel_view *v)
{
	if (!v || __atomic_fetch_sub(&v->refs, 1, __ATOMIC_ACQ_REL) != 1)
		return;
	for (size_t i = 0; i < v->n; i++)
		part_unref(v->parts[i]);
	free(v);
}

void rdel_view_collect(const struct rdel_view *v, const struct slice *lo, const struct slice *hi,
		       uint64_t snap, struct rtomb **t, size_t *n, size_t *cap)
{
	if (!v)
		return;
	for (size_t p = 0; p < v->n; p++) {
		const struct rdel_set *s = v->parts[p]->set;

		for (size_t i = lo ? rdel_set_find(s, *lo) : 0; i < s->n; i++) {
			const struct rdel_frag *f = &s->frags[i];
			uint64_t seq;

			if (hi && slice_cmp(f->start, *hi) >= 0)
				break;
			if ((seq = frag_visible_seq(f, snap)) == 0)
				continue;
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 16;
				*t = xrealloc(*t, *cap * sizeof(**t));
			}
			(*t)[(*n)++] = (struct rtomb){ f->start, f->end, seq };
		}
	}
}

uint64_t rdel_view_covering(const struct rdel_view *v, struct slice ukey, uint64_t snap)
{
	uint64_t best = 0;

	if (!v)
		return 0;
	for (size_t p = 0; p < v->n; p++) {
		uint64_t q = rdel_set_covering(v->parts[p]->set, ukey, snap);
		if (q > best)
			best = q;
	}
	return best;
}

size_t rdel_view_sets(const struct rdel_view *v)
{
	return v ? v->n : 0;
}
