/*
 * bloom.h -- bloom filters over user keys, one per SSTable.
 *
 * Encoding: the bit array (a whole number of bytes) followed by one byte
 * holding k, the number of probes.  Probes are derived from one 64-bit hash
 * (hash64) by double hashing, so building and probing hash each key once:
 * probe i of hash h tests bit (h1 + i * h2) mod nbits, where h1 is the low 32
 * bits of h, h2 its high 32 bits with the lowest bit set, and bit b is
 * bit b % 8 (1 << (b % 8)) of byte b / 8.  The array has at least 64 bits,
 * and k = round(bits_per_key * ln 2), clamped to 1..30.
 * With 10 bits per key and k = 7 about 1% of absent keys pass.
 */
#ifndef SMOLFS_BLOOM_H
#define SMOLFS_BLOOM_H

#include "util.h"

/* The hash stored per key while a table is being built. */
static inline uint64_t bloom_hash(struct slice key)
{
	return hash64(key.data, key.len, 0x5bd1e995u);
}

/* Append a filter for n keys, given their bloom_hash values, to out. */
void bloom_build(struct buf *out, const uint64_t *hashes, size_t n, int bits_per_key);
/* 0 if key is certainly absent; 1 if it may be present (or the filter is malformed). */
int bloom_may_contain(struct slice filter, struct slice key);
int bloom_may_contain_hash(struct slice filter, uint64_t h);

#endif
