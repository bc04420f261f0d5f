/*
 * bloom.c -- building and probing the per-SSTable bloom filters (bloom.h).
 *
 * A filter is nbits bits (a multiple of 8, at least 64) followed by one byte
 * k.  Each key sets k bits chosen by double hashing from its 64-bit hash:
 * with h1 the low 32 bits and h2 the high 32 bits forced odd, probe i sets bit
 * (h1 + i * h2) mod nbits.  Forcing h2 odd matters because nbits is even: an
 * even step could be a multiple of nbits and put all k probes on one bit.
 * Kirsch and Mitzenmacher showed that two hashes combined this way give the
 * false-positive rate of k independent ones, so building and probing hash
 * each key once.
 *
 * The reader trusts nothing in the filter: a filter too short to hold a bit,
 * or with a k byte outside 1..30 (a newer format, or damage), answers "may
 * contain", which costs a block read but never loses a key.
 */
#include "bloom.h"

#include <assert.h>

#define BLOOM_MIN_BITS 64
#define BLOOM_MAX_K 30

/*
 * The number of probes that minimises false positives for m/n bits per key
 * is (m/n) ln 2; rounded, and clamped so that a silly bits_per_key still
 * gives a working filter (k = 0 would mean "everything matches").
 */
static int probes_for(int bits_per_key)
{
	int k = (int)(bits_per_key * 0.69314718055994531 + 0.5);

	if (k < 1)
		k = 1;
	if (k > BLOOM_MAX_K)
		k = BLOOM_MAX_K;
	return k;
}

/* Step through the k probe positions of hash h in a filter of nbits bits. */
struct probe {
	uint64_t pos, step, nbits;
};

static inline struct probe probe_start(uint64_t h, uint64_t nbits)
{
	struct probe p;

	p.nbits = nbits;
	p.pos = (h & 0xffffffffu) % nbits;
	p.step = ((h >> 32) | 1) % nbits;
	return p;
}

/* Advance to the next position; the same as (h1 + i * h2) mod nbits, without a division. */
static inline void probe_next(struct probe *p)
{
	p->pos += p->step;
	if (p->pos >= p->nbits)
		p->pos -= p->nbits;
}

void bloom_build(struct buf *out, const uint64_t *hashes, size_t n, int bits_per_key)
{
	int k = probes_for(bits_per_key);
	uint64_t nbits = (uint64_t)n * (uint64_t)(bits_per_key > 0 ? bits_per_key : 0);
	uint64_t nbytes;
	unsigned char *bits;

	if (nbits < BLOOM_MIN_BITS)
		nbits = BLOOM_MIN_BITS;
	nbytes = (nbits + 7) / 8;
	nbits = nbytes * 8;

	buf_reserve(out, (size_t)nbytes + 1);
	bits = (unsigned char *)out->data + out->len;
	memset(bits, 0, (size_t)nbytes);
	for (size_t i = 0; i < n; i++) {
		struct probe p = probe_start(hashes[i], nbits);
		for (int j = 0; j < k; j++) {
			bits[p.pos >> 3] |= (unsigned char)(1u << (p.pos & 7));
			probe_next(&p);
		}
	}
	bits[nbytes] = (unsigned char)k;
	out->len += (size_t)nbytes + 1;
}

int bloom_may_contain_hash(struct slice filter, uint64_t h)
{
	const unsigned char *bits = (const unsigned char *)filter.data;
	uint64_t nbits;
	int k;

	if (filter.len < 2)
		return 1;
	k = bits[filter.len - 1];
	if (k < 1 || k > BLOOM_MAX_K)
		return 1;
	nbits = (uint64_t)(filter.len - 1) * 8;

	struct probe p = probe_start(h, nbits);
	for (int j = 0; j < k; j++) {
		assert(p.pos < nbits);
		if (!(bits[p.pos >> 3] & (1u << (p.pos & 7))))
			return 0;
		probe_next(&p);
	}
	return 1;
}

int bloom_may_contain(struct slice filter, struct slice key)
{
	return bloom_may_contain_hash(filter, bloom_hash(key));
}
