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
 */
#include "rangedel.h"
#include "dbformat.h"

#include <assert.h>
#include <stdlib.h>

struct rdel_set {
	struct rdel_frag *frags;
	size_t n;
	uint64_t *seqs;
	char *keys;
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
		return s;
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
out:
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
