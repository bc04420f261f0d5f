/*
 * kv_util.c -- tests for engine/util.c and engine/dbformat.c: varints, fixed
 * encodings, length-prefixed strings, growable buffers, slice order, internal
 * keys and their separators, and the dispersion of hash64.
 *
 * Loops over many values report one assertion each, with the first failing
 * value printed as a diagnostic.
 */
#include "tap.h"
#include "util.h"
#include "dbformat.h"

#include <stdlib.h>

static uint64_t rng = 0x243f6a8885a308d3ull;

/* A random value of a random bit width, so that every encoded length is common. */
static uint64_t rand_width(void)
{
	int bits = (int)(rand_next(&rng) % 65);
	uint64_t v = rand_next(&rng);

	return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

/* ---- varints */

static int varint32_roundtrip(uint32_t v)
{
	char b[5];
	char *end = enc_varint32(b, v);
	uint32_t got = ~v;
	const char *p = dec_varint32(b, end, &got);

	return end - b == varint_length(v) && p == end && got == v;
}

static int varint64_roundtrip(uint64_t v)
{
	char b[10];
	char *end = enc_varint64(b, v);
	uint64_t got = ~v;
	const char *p = dec_varint64(b, end, &got);

	return end - b == varint_length(v) && p == end && got == v;
}

static void test_varint_roundtrip(void)
{
	long bad32 = -1, bad64 = -1;
	uint64_t badv32 = 0, badv64 = 0;
	int nfail = 0;

	/* Around every power of two: where the encoded length changes. */
	for (int b = 0; b <= 64; b++) {
		uint64_t p = b == 64 ? 0 : UINT64_C(1) << b;
		uint64_t cand[3] = { p - 1, p, p + 1 };
		for (int i = 0; i < 3; i++) {
			uint64_t v = cand[i];
			if (v <= UINT32_MAX && !varint32_roundtrip((uint32_t)v) && bad32 < 0) {
				bad32 = b;
				badv32 = v;
			}
			if (!varint64_roundtrip(v) && bad64 < 0) {
				bad64 = b;
				badv64 = v;
			}
		}
	}
	ok(bad32 < 0,
	   "varint32 round-trips 2^b-1, 2^b, 2^b+1 for every b, with varint_length bytes");
	if (bad32 >= 0)
		diag("first failure: %" PRIu64, badv32);
	ok(bad64 < 0,
	   "varint64 round-trips 2^b-1, 2^b, 2^b+1 for every b, with varint_length bytes");
	if (bad64 >= 0)
		diag("first failure: %" PRIu64, badv64);

	for (int i = 0; i < 100000; i++) {
		uint64_t v = rand_width();
		if (!varint64_roundtrip(v) || !varint32_roundtrip((uint32_t)v))
			nfail++;
	}
	is_int(nfail, 0,
	       "100000 random values of random widths round-trip as varint32 and varint64");

	ok(varint_length(0) == 1 && varint_length(127) == 1 && varint_length(128) == 2 &&
	   varint_length(UINT32_MAX) == 5 && varint_length(UINT64_MAX) == 10,
	   "varint_length is 1 up to 127, 2 from 128, 5 for UINT32_MAX, 10 for UINT64_MAX");

	{
		char b[5];
		enc_varint32(b, 300);
		ok((unsigned char)b[0] == 0xac && (unsigned char)b[1] == 0x02,
		   "300 encodes as 0xac 0x02: low 7 bits first, high bit marks continuation");
	}

	/* A stream of varints written by buf_put_* reads back in order. */
	{
		struct buf b = BUF_INIT;
		uint64_t vals[1000];
		const char *p, *limit;
		int good = 1;

		for (int i = 0; i < 1000; i++) {
			vals[i] = rand_width();
			if (i % 2)
				buf_put_varint64(&b, vals[i]);
			else
				buf_put_varint32(&b, (uint32_t)vals[i]);
		}
		p = b.data;
		limit = b.data + b.len;
		for (int i = 0; i < 1000 && good; i++) {
			if (i % 2) {
				uint64_t v;
				p = dec_varint64(p, limit, &v);
				good = p && v == vals[i];
			} else {
				uint32_t v;
				p = dec_varint32(p, limit, &v);
				good = p && v == (uint32_t)vals[i];
			}
		}
		ok(good && p == limit,
		   "1000 mixed varints appended to a buf decode back in order to its end");
		buf_free(&b);
	}
}

static void test_varint_malformed(void)
{
	int bad = 0;

	/* Every proper prefix of a multi-byte encoding is truncated. */
	for (int i = 0; i < 2000; i++) {
		uint64_t v = rand_width() | 0x80;
		char b[10];
		int n = (int)(enc_varint64(b, v) - b);
		for (int len = 0; len < n; len++) {
			uint64_t got;
			uint32_t got32;
			if (dec_varint64(b, b + len, &got) != NULL)
				bad++;
			if (len < 5 && dec_varint32(b, b + len, &got32) != NULL)
				bad++;
		}
	}
	is_int(bad, 0,
	       "every truncated varint (each proper prefix) decodes to NULL, 32 and 64 bit");

	{
		uint32_t v;
		uint64_t v64;
		const char e[1] = { 0 };
		ok(dec_varint32(e, e, &v) == NULL && dec_varint64(e, e, &v64) == NULL,
		   "an empty range holds no varint");
	}
	{
		/* Six bytes: longer than any varint32 may be, though the value (0) is small. */
		const char six[6] = { (char)0x80, (char)0x80, (char)0x80, (char)0x80, (char)0x80,
				      0 };
		uint32_t v;
		ok(dec_varint32(six, six + 6, &v) == NULL, "a 6-byte varint32 is too long: NULL");
	}
	{
		/* Five bytes whose value needs 35 bits. */
		const char big[5] = { (char)0xff, (char)0xff, (char)0xff, (char)0xff, 0x1f };
		const char max[5] = { (char)0xff, (char)0xff, (char)0xff, (char)0xff, 0x0f };
		uint32_t v = 0;
		ok(dec_varint32(big, big + 5, &v) == NULL,
		   "a 5-byte varint32 above UINT32_MAX is NULL");
		ok(dec_varint32(max, max + 5, &v) == max + 5 && v == UINT32_MAX,
		   "the 5-byte encoding of UINT32_MAX decodes");
	}
	{
		char eleven[11];
		char ten_over[10];
		uint64_t v;
		memset(eleven, 0x80, 10);
		eleven[10] = 0;
		memset(ten_over, 0xff, 9);
		ten_over[9] = 0x02;   /* bit 64: beyond a uint64 */
		ok(dec_varint64(eleven, eleven + 11, &v) == NULL,
		   "an 11-byte varint64 is too long: NULL");
		ok(dec_varint64(ten_over, ten_over + 10, &v) == NULL,
		   "a 10-byte varint64 carrying a 65th bit is NULL");
	}
}

/* ---- fixed-width and length-prefixed */

static void test_fixed(void)
{
	char b[8];
	int bad = 0;

	enc_fixed32(b, 0x04030201u);
	is_mem(b, 4, "\x01\x02\x03\x04", 4, "fixed32 is little-endian");
	enc_fixed64(b, 0x0807060504030201ull);
	is_mem(b, 8, "\x01\x02\x03\x04\x05\x06\x07\x08", 8, "fixed64 is little-endian");
	enc_fixed64(b, UINT64_MAX);
	ok(dec_fixed64(b) == UINT64_MAX, "fixed64 holds UINT64_MAX (no sign extension)");
	enc_fixed32(b, 0xfedcba98u);
	ok(dec_fixed32(b) == 0xfedcba98u, "fixed32 holds bytes with the high bit set");

	for (int i = 0; i < 10000; i++) {
		uint64_t v = rand_next(&rng);
		enc_fixed64(b, v);
		if (dec_fixed64(b) != v)
			bad++;
		enc_fixed32(b, (uint32_t)v);
		if (dec_fixed32(b) != (uint32_t)v)
			bad++;
	}
	is_int(bad, 0, "10000 random fixed32 and fixed64 values round-trip");

	{
		struct buf x = BUF_INIT;
		buf_put_fixed32(&x, 0xdeadbeefu);
		buf_put_fixed64(&x, 0x0123456789abcdefull);
		ok(x.len == 12 && dec_fixed32(x.data) == 0xdeadbeefu &&
		   dec_fixed64(x.data + 4) == 0x0123456789abcdefull,
		   "buf_put_fixed32 then buf_put_fixed64 append 12 bytes that decode");
		buf_free(&x);
	}
}

static void test_lenprefixed(void)
{
	struct buf b = BUF_INIT;
	struct slice s;
	const char *p;

	buf_put_lenprefixed(&b, slice_str("hello"));
	buf_put_lenprefixed(&b, slice_make(NULL, 0));
	p = dec_lenprefixed(b.data, b.data + b.len, &s);
	ok(p && slice_eq(s, slice_str("hello")), "a length-prefixed string reads back");
	p = p ? dec_lenprefixed(p, b.data + b.len, &s) : NULL;
	ok(p == b.data + b.len && s.len == 0,
	   "an empty length-prefixed string reads back and ends the buffer");

	ok(dec_lenprefixed(b.data, b.data + 6, &s) == b.data + 6,
	   "a string that exactly fills the range is accepted");
	ok(dec_lenprefixed(b.data, b.data + 5, &s) == NULL,
	   "a string one byte short of its length is NULL");
	ok(dec_lenprefixed(b.data, b.data, &s) == NULL, "a missing length is NULL");

	buf_clear(&b);
	buf_put_varint32(&b, UINT32_MAX);
	buf_append(&b, "abc", 3);
	ok(dec_lenprefixed(b.data, b.data + b.len, &s) == NULL,
	   "a length of UINT32_MAX over 3 bytes is NULL (no pointer overflow)");

	buf_clear(&b);
	buf_append(&b, "\x85", 1);   /* a length varint cut short */
	ok(dec_lenprefixed(b.data, b.data + b.len, &s) == NULL,
	   "a truncated length varint is NULL");
	buf_free(&b);
}

/* ---- buffers */

static void test_buf(void)
{
	struct buf b = BUF_INIT;
	char *ref = malloc(1 << 20);
	size_t rlen = 0;
	int good = 1;

	ok(b.data == NULL && b.len == 0 && b.cap == 0 && buf_slice(&b).len == 0,
	   "BUF_INIT is an empty buffer");

	while (rlen < (1 << 19)) {
		size_t n = (size_t)(rand_next(&rng) % 3000);
		char chunk[3000];
		for (size_t i = 0; i < n; i++)
			chunk[i] = (char)rand_next(&rng);
		buf_append(&b, chunk, n);
		memcpy(ref + rlen, chunk, n);
		rlen += n;
		if (b.len != rlen || b.cap < b.len)
			good = 0;
	}
	ok(good, "random appends grow len exactly and keep cap >= len");
	is_mem(b.data, b.len, ref, rlen,
	       "after growing to half a MiB the buffer holds every appended byte");

	buf_reserve(&b, 100000);
	ok(b.cap >= b.len + 100000, "buf_reserve(extra) leaves room for len + extra");
	{
		char *before = b.data;
		size_t cap = b.cap;
		buf_append(&b, ref, 100000);
		ok(b.data == before && b.cap == cap,
		   "appending within reserved room does not reallocate");
	}

	buf_set(&b, "xyz", 3);
	is_mem(b.data, b.len, "xyz", 3, "buf_set replaces the contents");
	{
		size_t cap = b.cap;
		buf_clear(&b);
		ok(b.len == 0 && b.cap == cap, "buf_clear empties but keeps the allocation");
	}
	buf_append(&b, NULL, 0);
	ok(b.len == 0, "appending zero bytes from NULL is allowed and adds nothing");
	buf_free(&b);
	ok(b.data == NULL && b.len == 0 && b.cap == 0, "buf_free returns the buffer to BUF_INIT");
	buf_append(&b, "again", 5);
	is_mem(b.data, b.len, "again", 5, "a freed buffer can be used again");
	buf_free(&b);
	free(ref);
}

/* ---- slices */

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static void test_slice_cmp(void)
{
	struct slice empty = slice_make(NULL, 0);
	int bad = 0;

	ok(slice_cmp(empty, empty) == 0 && slice_eq(empty, empty), "two empty slices are equal");
	ok(slice_cmp(empty, slice_str("a")) < 0, "the empty slice sorts before any other");
	ok(slice_cmp(slice_str("ab"), slice_str("abc")) < 0 &&
	   slice_cmp(slice_str("abc"), slice_str("ab")) > 0,
	   "a proper prefix sorts first");
	ok(slice_cmp(slice_make("a", 1), slice_make("a\0", 2)) < 0,
	   "\"a\" sorts before \"a\\0\" (a trailing NUL is a real byte)");
	ok(slice_cmp(slice_make("\x00", 1), slice_make("\xff", 1)) < 0,
	   "0x00 sorts before 0xff (bytes compare unsigned)");
	ok(slice_cmp(slice_make("\x7f", 1), slice_make("\x80", 1)) < 0, "0x7f sorts before 0x80");
	ok(slice_cmp(slice_make("\xff", 1), slice_make("\x00\x00", 2)) > 0,
	   "0xff sorts after 0x00 0x00: the first byte decides before length");
	ok(!slice_eq(slice_make("a\0", 2), slice_make("a\1", 2)) &&
	   slice_eq(slice_str("xy"), slice_make("xy", 2)),
	   "slice_eq compares every byte and the length");

	for (int i = 0; i < 20000; i++) {
		unsigned char a[6], b[6];
		size_t al = rand_next(&rng) % 6, bl = rand_next(&rng) % 6;
		for (int j = 0; j < 6; j++) {
			/* A tiny alphabet of extreme bytes makes shared prefixes common. */
			static const unsigned char alpha[4] = { 0x00, 0x01, 0x7f, 0xff };
			a[j] = alpha[rand_next(&rng) % 4];
			b[j] = alpha[rand_next(&rng) % 4];
		}
		struct slice sa = slice_make(a, al), sb = slice_make(b, bl);
		/* Reference: first differing byte, unsigned; else the shorter first. */
		int want = 0;
		size_t n = al < bl ? al : bl;
		for (size_t j = 0; j < n && !want; j++)
			want = a[j] < b[j] ? -1 : a[j] > b[j];
		if (!want)
			want = al < bl ? -1 : al > bl;
		if (sign(slice_cmp(sa, sb)) != want || sign(slice_cmp(sb, sa)) != -want ||
		    slice_eq(sa, sb) != (want == 0))
			bad++;
	}
	is_int(bad, 0,
	       "slice_cmp agrees with a byte-by-byte reference on 20000 random pairs, both ways");
}

/* ---- internal keys */

static void test_ikey(void)
{
	struct buf k = BUF_INIT, k2 = BUF_INIT;
	struct slice s;

	ikey_append(&k, slice_str("user"), 12345, KT_PUT);
	s = buf_slice(&k);
	ok(s.len == 4 + IKEY_TRAILER && memcmp(s.data, "user", 4) == 0 &&
	   dec_fixed64(s.data + 4) == (UINT64_C(12345) << 8 | KT_PUT),
	   "an internal key is the user key then fixed64(seq << 8 | type)");
	ok(slice_eq(ikey_user(s), slice_str("user")) && ikey_seq(s) == 12345 &&
	   ikey_type(s) == KT_PUT,
	   "ikey_user, ikey_seq and ikey_type take an internal key apart");
	ok(ikey_valid(s), "a well-formed internal key is valid");
	buf_clear(&k);
	ikey_append(&k, slice_str(""), SEQ_MAX, KT_DELETE);
	s = buf_slice(&k);
	ok(ikey_valid(s) && ikey_user(s).len == 0 && ikey_seq(s) == SEQ_MAX &&
	   ikey_type(s) == KT_DELETE,
	   "an empty user key with SEQ_MAX and KT_DELETE survives the encoding");
	ok(!ikey_valid(slice_make("1234567", 7)), "fewer than 8 bytes is not a valid internal key");
	{
		char bad[9] = "u";
		enc_fixed64(bad + 1, ikey_pack(5, 3));
		ok(!ikey_valid(slice_make(bad, 9)), "a type byte above KT_RANGE_DEL is not valid");
	}

	/* Order: user key ascending, then sequence descending, then type descending. */
	buf_clear(&k);
	ikey_append(&k, slice_str("a"), 5, KT_PUT);
	ikey_append(&k2, slice_str("a"), 6, KT_PUT);
	ok(ikey_cmp(buf_slice(&k2), buf_slice(&k)) < 0,
	   "a newer version of a key sorts before an older one");
	buf_clear(&k2);
	ikey_append(&k2, slice_str("a"), 5, KT_DELETE);
	ok(ikey_cmp(buf_slice(&k), buf_slice(&k2)) < 0,
	   "at equal sequence the larger type sorts first");
	buf_clear(&k2);
	ikey_append(&k2, slice_make("a\0", 2), SEQ_MAX, KT_SEEK);
	ok(ikey_cmp(buf_slice(&k), buf_slice(&k2)) < 0,
	   "the user key decides before the sequence (\"a\"@5 < \"a\\0\"@max)");
	buf_clear(&k2);
	ikey_append(&k2, slice_str("a"), 5, KT_SEEK);
	ok(ikey_cmp(buf_slice(&k2), buf_slice(&k)) < 0,
	   "the seek key (k, S, KT_SEEK) sorts before every version of k at sequence S");
	ok(ikey_cmp_fn(buf_slice(&k), buf_slice(&k)) == 0 &&
	   ikey_cmp_fn(buf_slice(&k2), buf_slice(&k)) < 0,
	   "ikey_cmp_fn is ikey_cmp");
	ok(ukey_cmp_fn(slice_str("ab"), slice_str("b")) < 0 &&
	   ukey_cmp_fn(slice_str("b"), slice_str("b")) == 0,
	   "ukey_cmp_fn is memcmp order on plain keys");

	/* Random pairs against the definition. */
	{
		int bad = 0;
		for (int i = 0; i < 20000; i++) {
			char ua[3], ub[3];
			size_t al = rand_next(&rng) % 3, bl = rand_next(&rng) % 3;
			uint64_t sa = rand_next(&rng) % 4, sb = rand_next(&rng) % 4;
			int ta = (int)(rand_next(&rng) % 3), tb = (int)(rand_next(&rng) % 3);
			for (int j = 0; j < 3; j++) {
				ua[j] = "a\xff"[rand_next(&rng) % 2];
				ub[j] = "a\xff"[rand_next(&rng) % 2];
			}
			buf_clear(&k);
			buf_clear(&k2);
			ikey_append(&k, slice_make(ua, al), sa, ta);
			ikey_append(&k2, slice_make(ub, bl), sb, tb);
			int want = sign(slice_cmp(slice_make(ua, al), slice_make(ub, bl)));
			if (!want)
				want = sa != sb ? (sa > sb ? -1 : 1) : (ta > tb ? -1 : ta < tb);
			if (sign(ikey_cmp(buf_slice(&k), buf_slice(&k2))) != want)
				bad++;
		}
		is_int(bad, 0,
		       "ikey_cmp orders 20000 random pairs by user key, then seq and type "
		       "descending");
	}
	buf_free(&k);
	buf_free(&k2);
}

static void random_ukey(struct buf *b, size_t maxlen)
{
	/* Few distinct bytes, including the extremes, so shared prefixes and 0xff runs occur. */
	static const unsigned char alpha[6] = { 0x00, 0x01, 'a', 'b', 0xfe, 0xff };
	size_t n = (size_t)(rand_next(&rng) % (maxlen + 1));

	buf_clear(b);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = alpha[rand_next(&rng) % 6];
		buf_append(b, &c, 1);
	}
}

static void test_separators(void)
{
	struct buf ua = BUF_INIT, ub = BUF_INIT, orig = BUF_INIT;
	struct buf start = BUF_INIT, limit = BUF_INIT;
	int bad_order = 0, bad_len = 0, tried = 0, shortened = 0, bad_succ = 0, succ_shortened = 0;

	for (int i = 0; i < 20000; i++) {
		random_ukey(&ua, 8);
		random_ukey(&ub, 8);
		buf_clear(&start);
		buf_clear(&limit);
		ikey_append(&start, buf_slice(&ua), rand_next(&rng) % 100, KT_PUT);
		ikey_append(&limit, buf_slice(&ub), rand_next(&rng) % 100, KT_PUT);
		if (ikey_cmp(buf_slice(&start), buf_slice(&limit)) >= 0)
			continue;
		tried++;
		buf_set(&orig, start.data, start.len);
		ikey_shortest_separator(&start, buf_slice(&limit));
		if (ikey_cmp(buf_slice(&orig), buf_slice(&start)) > 0 ||
		    ikey_cmp(buf_slice(&start), buf_slice(&limit)) >= 0 ||
		    !ikey_valid(buf_slice(&start)))
			bad_order++;
		if (start.len > orig.len)
			bad_len++;
		if (start.len < orig.len)
			shortened++;

		buf_set(&start, orig.data, orig.len);
		ikey_short_successor(&start);
		if (ikey_cmp(buf_slice(&start), buf_slice(&orig)) < 0 ||
		    !ikey_valid(buf_slice(&start)))
			bad_succ++;
		if (start.len < orig.len)
			succ_shortened++;
	}
	diag("%d ordered pairs: separator shortened %d, successor shortened %d", tried, shortened,
	     succ_shortened);
	is_int(bad_order, 0,
	       "ikey_shortest_separator gives start <= sep < limit, a valid internal key");
	is_int(bad_len, 0, "ikey_shortest_separator never makes a key longer");
	ok(shortened > tried / 10,
	   "ikey_shortest_separator shortens keys in a fair share of cases");
	is_int(bad_succ, 0, "ikey_short_successor gives a valid key >= the original");
	ok(succ_shortened > 0, "ikey_short_successor shortens keys in some cases");

	buf_clear(&start);
	buf_clear(&limit);
	ikey_append(&start, slice_str("abcdefg"), 7, KT_PUT);
	ikey_append(&limit, slice_str("abzzz"), 7, KT_PUT);
	ikey_shortest_separator(&start, buf_slice(&limit));
	ok(slice_eq(ikey_user(buf_slice(&start)), slice_str("abd")),
	   "separator of \"abcdefg\" and \"abzzz\" has user key \"abd\"");

	buf_clear(&start);
	buf_clear(&limit);
	ikey_append(&start, slice_str("same"), 9, KT_PUT);
	ikey_append(&limit, slice_str("same"), 3, KT_PUT);
	buf_set(&orig, start.data, start.len);
	ikey_shortest_separator(&start, buf_slice(&limit));
	is_mem(start.data, start.len, orig.data, orig.len,
	       "equal user keys leave the separator unchanged");

	buf_clear(&start);
	ikey_append(&start, slice_make("\xff\xff", 2), 9, KT_PUT);
	buf_set(&orig, start.data, start.len);
	ikey_short_successor(&start);
	is_mem(start.data, start.len, orig.data, orig.len,
	       "a user key of only 0xff bytes has itself as successor");

	buf_clear(&start);
	ikey_append(&start, slice_make("\xff" "abc", 4), 9, KT_PUT);
	ikey_short_successor(&start);
	ok(slice_eq(ikey_user(buf_slice(&start)), slice_make("\xff" "b", 2)),
	   "the successor of \"\\xffabc\" has user key \"\\xffb\"");

	buf_free(&ua);
	buf_free(&ub);
	buf_free(&start);
	buf_free(&limit);
	buf_free(&orig);
}

/* ---- hash64 */

static int popcount64(uint64_t x)
{
	return __builtin_popcountll(x);
}

static double chi_square(const unsigned *counts, int nbuckets, double expected)
{
	double chi = 0;

	for (int i = 0; i < nbuckets; i++) {
		double d = counts[i] - expected;
		chi += d * d / expected;
	}
	return chi;
}

static void test_hash64(void)
{
	enum { N = 100000 };
	unsigned hi[256] = { 0 }, lo[256] = { 0 };
	uint64_t *hs = malloc(N * sizeof(*hs));
	int dups = 0;

	ok(hash64("abc", 3, 1) == hash64("abc", 3, 1), "hash64 is deterministic");
	ok(hash64("abc", 3, 1) != hash64("abc", 3, 2), "the seed changes the hash");
	{
		/* Zero bytes of different lengths must not collide. */
		char z[17] = { 0 };
		int coll = 0;
		for (size_t a = 0; a <= 16; a++)
			for (size_t b = a + 1; b <= 16; b++)
				coll += hash64(z, a, 0) == hash64(z, b, 0);
		is_int(coll, 0, "runs of 0..16 zero bytes all hash differently");
	}

	/* Sequential integers: the worst case for a weak hash. */
	for (uint64_t i = 0; i < N; i++) {
		char b[8];
		enc_fixed64(b, i);
		hs[i] = hash64(b, 8, 0);
		hi[hs[i] >> 56]++;
		lo[hs[i] & 0xff]++;
	}
	{
		double chi_hi = chi_square(hi, 256, N / 256.0);
		double chi_lo = chi_square(lo, 256, N / 256.0);
		diag("chi-square over 256 buckets (255 df, mean 255, sd 22.6): "
		     "top byte %.1f, low byte %.1f", chi_hi, chi_lo);
		ok(chi_hi < 400 && chi_lo < 400,
		   "hashes of 100000 sequential integers spread evenly over top and low bytes");
	}
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < i + 64 && j < N; j++)
			dups += hs[i] == hs[j];
	is_int(dups, 0, "nearby sequential integers never collide");

	/* Avalanche: flipping one input bit flips about half the output bits. */
	{
		unsigned flips[64] = { 0 };
		long total = 0, trials = 0;
		int worst_ok = 1;
		for (int t = 0; t < 200; t++) {
			unsigned char in[13];
			for (int j = 0; j < 13; j++)
				in[j] = (unsigned char)rand_next(&rng);
			uint64_t h0 = hash64(in, sizeof(in), 7);
			for (int bit = 0; bit < 13 * 8; bit++) {
				in[bit / 8] ^= (unsigned char)(1u << (bit % 8));
				uint64_t d = h0 ^ hash64(in, sizeof(in), 7);
				in[bit / 8] ^= (unsigned char)(1u << (bit % 8));
				total += popcount64(d);
				trials++;
				for (int o = 0; o < 64; o++)
					flips[o] += (unsigned)(d >> o & 1);
			}
		}
		for (int o = 0; o < 64; o++) {
			double p = (double)flips[o] / (double)trials;
			if (p < 0.45 || p > 0.55)
				worst_ok = 0;
		}
		double mean = (double)total / (double)trials;
		diag("avalanche: %.2f output bits change per input bit flip", mean);
		ok(mean > 31 && mean < 33,
		   "one flipped input bit changes 31..33 of 64 output bits on average");
		ok(worst_ok, "every output bit flips with probability 0.45..0.55");
	}
	free(hs);
}

int main(void)
{
	plan(74);
	diag("random seed %#" PRIx64, rng);
	test_varint_roundtrip();
	test_varint_malformed();
	test_fixed();
	test_lenprefixed();
	test_buf();
	test_slice_cmp();
	test_ikey();
	test_separators();
	test_hash64();
	return exit_status();
}
