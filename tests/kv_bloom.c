/*
 * kv_bloom.c -- tests for engine/bloom.c: the documented encoding, no false
 * negatives, a measured false-positive rate, and the safe answer ("may
 * contain") for filters that are malformed.
 */
#include "tap.h"
#include "bloom.h"

#include <stdio.h>
#include <stdlib.h>

static struct slice key_of(char *b, const char *prefix, int i)
{
	int n = snprintf(b, 32, "%s%d", prefix, i);
	return slice_make(b, (size_t)n);
}

/* Build a filter over keys "<prefix>0" .. "<prefix>n-1". */
static void build_keys(struct buf *out, const char *prefix, int n, int bits_per_key)
{
	uint64_t *h = malloc((size_t)(n ? n : 1) * sizeof(*h));
	char b[32];

	for (int i = 0; i < n; i++)
		h[i] = bloom_hash(key_of(b, prefix, i));
	bloom_build(out, h, (size_t)n, bits_per_key);
	free(h);
}

static void test_encoding(void)
{
	struct buf f = BUF_INIT;
	char b[32];

	build_keys(&f, "k", 1000, 10);
	is_int(f.len, 1000 * 10 / 8 + 1,
	       "1000 keys at 10 bits/key take 1250 bytes of bits plus the k byte");
	is_int((unsigned char)f.data[f.len - 1], 7, "k is round(10 ln 2) = 7");

	buf_clear(&f);
	build_keys(&f, "k", 3, 10);
	is_int(f.len, 64 / 8 + 1, "a filter has at least 64 bits");

	buf_clear(&f);
	build_keys(&f, "k", 100, 1);
	is_int((unsigned char)f.data[f.len - 1], 1, "1 bit/key gives k = 1");
	buf_clear(&f);
	build_keys(&f, "k", 100, 100);
	is_int((unsigned char)f.data[f.len - 1], 30, "100 bits/key clamps k to 30");
	buf_clear(&f);
	build_keys(&f, "k", 100, 0);
	is_int((unsigned char)f.data[f.len - 1], 1, "0 bits/key still gives k = 1 (and 64 bits)");
	ok(f.len == 9 && bloom_may_contain(buf_slice(&f), key_of(b, "k", 5)),
	   "the smallest filter still holds its keys");

	/*
	 * One key in 64 bits: exactly the documented probe bits are set,
	 * bit (h1 + i*h2) mod 64 with h1 the low half and h2 the high half | 1.
	 */
	{
		struct slice key = slice_str("the one key");
		uint64_t h = bloom_hash(key);
		unsigned char want[8] = { 0 };
		buf_clear(&f);
		bloom_build(&f, &h, 1, 10);
		for (uint64_t i = 0; i < 7; i++) {
			uint64_t bit = ((h & 0xffffffffu) + i * ((h >> 32) | 1)) % 64;
			want[bit / 8] |= (unsigned char)(1u << (bit % 8));
		}
		is_mem(f.data, 8, want, 8,
		       "one key sets bits (h1 + i*h2) mod nbits, i = 0..k-1, as bloom.h documents");
	}

	/* bloom_build appends: what was in the buffer stays, the filter follows. */
	{
		struct buf g = BUF_INIT, solo = BUF_INIT;
		buf_append(&g, "prefix", 6);
		build_keys(&g, "a", 50, 10);
		build_keys(&solo, "a", 50, 10);
		ok(g.len == 6 + solo.len && memcmp(g.data, "prefix", 6) == 0 &&
		   memcmp(g.data + 6, solo.data, solo.len) == 0,
		   "bloom_build appends to what the buffer holds, and is deterministic");
		buf_free(&g);
		buf_free(&solo);
	}
	buf_free(&f);
}

static void test_membership(void)
{
	enum { N = 100000 };
	struct buf f = BUF_INIT;
	char b[32];
	int missing = 0, fp = 0, disagree = 0;

	build_keys(&f, "key", N, 10);
	for (int i = 0; i < N; i++)
		if (!bloom_may_contain(buf_slice(&f), key_of(b, "key", i)))
			missing++;
	is_int(missing, 0, "all 100000 inserted keys may be contained (no false negatives)");

	for (int i = 0; i < N; i++) {
		struct slice k = key_of(b, "absent", i);
		int r = bloom_may_contain(buf_slice(&f), k);
		fp += r;
		disagree += r != bloom_may_contain_hash(buf_slice(&f), bloom_hash(k));
	}
	diag("false positives at 10 bits/key: %d of %d absent keys (%.3f%%)", fp, N,
	     100.0 * fp / N);
	ok(fp < N / 50, "fewer than 2%% of 100000 absent keys pass a 10 bits/key filter");
	ok(fp > 0, "some absent keys pass (the filter is a real bloom filter, not an exact set)");
	is_int(disagree, 0, "bloom_may_contain(key) is bloom_may_contain_hash(bloom_hash(key))");

	/* Many sizes and densities: never a false negative. */
	{
		static const int sizes[] = { 1, 2, 7, 63, 64, 65, 500, 4097 };
		int bad = 0;
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			for (int bpk = 1; bpk <= 24; bpk += 3) {
				buf_clear(&f);
				build_keys(&f, "x", sizes[s], bpk);
				for (int i = 0; i < sizes[s]; i++)
					bad += !bloom_may_contain(buf_slice(&f), key_of(b, "x", i));
			}
		}
		is_int(bad, 0, "no false negatives for 1..4097 keys at 1..22 bits/key");
	}

	{
		int fp_empty = 0;
		buf_clear(&f);
		bloom_build(&f, NULL, 0, 10);
		for (int i = 0; i < 1000; i++)
			fp_empty += bloom_may_contain(buf_slice(&f), key_of(b, "key", i));
		ok(f.len == 9 && fp_empty == 0, "a filter over no keys rejects every key");
	}
	buf_free(&f);
}

static void test_malformed(void)
{
	char b[32];
	struct slice k = key_of(b, "anything", 1);
	char zeros[9] = { 0 };
	int all = 1;

	ok(bloom_may_contain(slice_make(NULL, 0), k) == 1, "an empty filter answers may-contain");
	ok(bloom_may_contain(slice_make("\x07", 1), k) == 1,
	   "a filter of only a k byte answers may-contain");
	zeros[8] = 0;
	ok(bloom_may_contain(slice_make(zeros, 9), k) == 1,
	   "a filter with k = 0 answers may-contain");
	zeros[8] = 31;
	ok(bloom_may_contain(slice_make(zeros, 9), k) == 1,
	   "a filter with k = 31 answers may-contain");
	zeros[8] = (char)255;
	ok(bloom_may_contain(slice_make(zeros, 9), k) == 1,
	   "a filter with k = 255 answers may-contain");
	zeros[8] = 30;
	ok(bloom_may_contain(slice_make(zeros, 9), k) == 0,
	   "an all-zero filter with k = 30 (well formed) answers absent");
	ok(bloom_may_contain(slice_make("\0\1", 2), k) == 0,
	   "a one-byte bit array (shorter than built ones) is still probed safely");
	for (int i = 0; i < 1000; i++) {
		zeros[8] = (char)(31 + i % 225);
		uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull;
		all &= bloom_may_contain_hash(slice_make(zeros, 9), h);
	}
	ok(all, "every k byte in 31..255 answers may-contain for any hash");
}

int main(void)
{
	plan(23);
	test_encoding();
	test_membership();
	test_malformed();
	return exit_status();
}
