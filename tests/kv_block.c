/*
 * kv_block.c -- tests of the prefix-compressed block format (engine/block.c):
 * round trips over many keys and restart intervals, every kind of iterator
 * movement from every position, the empty block, and damaged blocks, which
 * must give -EUCLEAN (or, where damage is undetectable, well-formed entries)
 * and never an out-of-bounds read.  Blocks under test are copied into
 * exactly-sized heap buffers so AddressSanitizer catches any overrun.
 */
#include "block.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

struct entry {
	char *key, *val;
	size_t klen, vlen;
};

struct set {
	struct entry *e;
	size_t n;
};

static uint64_t rng = 42;

/*
 * n sorted distinct keys with shared prefixes of varying length (so prefix
 * compression has work to do), some empty values and some up to maxval bytes.
 */
static struct set make_set(size_t n, size_t maxval)
{
	struct set s = { xcalloc(n ? n : 1, sizeof(struct entry)), n };

	for (size_t i = 0; i < n; i++) {
		char k[64];
		int kl = snprintf(k, sizeof(k), "%s%06zu%.*s", (i / 100) % 2 ? "pre/fix/" : "p",
				  i, (int)(i % 5), "zzzzz");
		size_t vl = rand_next(&rng) % 5 == 0 ? 0 : rand_next(&rng) % maxval;

		s.e[i].key = xmemdup(k, (size_t)kl);
		s.e[i].klen = (size_t)kl;
		s.e[i].val = xmalloc(vl + 1);
		for (size_t j = 0; j < vl; j++)
			s.e[i].val[j] = (char)rand_next(&rng);
		s.e[i].vlen = vl;
	}
	/* "p..." keys and "pre/fix/..." keys interleave; sort them. */
	for (size_t i = 1; i < n; i++) {
		struct entry x = s.e[i];
		size_t j = i;
		while (j > 0 && slice_cmp(slice_make(s.e[j - 1].key, s.e[j - 1].klen),
					  slice_make(x.key, x.klen)) > 0) {
			s.e[j] = s.e[j - 1];
			j--;
		}
		s.e[j] = x;
	}
	return s;
}

static void free_set(struct set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].key);
		free(s->e[i].val);
	}
	free(s->e);
}

static struct slice ekey(const struct set *s, size_t i)
{
	return slice_make(s->e[i].key, s->e[i].klen);
}

/* Build s into a block; returns a malloc'd copy of exactly its size. */
static char *build(const struct set *s, int interval, size_t *len, size_t *estimate)
{
	struct block_builder b;
	struct slice out;
	char *copy;

	blk_builder_init(&b, interval);
	for (size_t i = 0; i < s->n; i++)
		blk_add(&b, ekey(s, i), slice_make(s->e[i].val, s->e[i].vlen));
	if (estimate)
		*estimate = blk_size_estimate(&b);
	out = blk_finish(&b);
	copy = xmalloc(out.len ? out.len : 1);
	memcpy(copy, out.data, out.len);
	*len = out.len;
	blk_builder_free(&b);
	return copy;
}

static int at(struct iter *it, const struct set *s, size_t i)
{
	struct slice k, v;

	if (!iter_valid(it) || i >= s->n)
		return 0;
	k = iter_key(it);
	v = iter_value(it);
	return slice_eq(k, ekey(s, i)) && slice_eq(v, slice_make(s->e[i].val, s->e[i].vlen));
}

static void test_round_trip(size_t n, int interval)
{
	struct set s = make_set(n, 300);
	size_t len, est, bad;
	char *data = build(&s, interval, &len, &est);
	struct block blk;
	struct iter *it;
	size_t i;

	is_int(est, len, "n=%zu interval=%d: size estimate equals the finished size", n, interval);
	is_int(blk_parse(slice_make(data, len), &blk), 0, "n=%zu interval=%d: block parses",
	       n, interval);
	is_int(blk.nrestarts, (n + (size_t)interval - 1) / (size_t)interval,
	       "n=%zu interval=%d: one restart point per interval", n, interval);
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);

	for (iter_seek_first(it), i = 0, bad = 0; iter_valid(it); iter_next(it), i++)
		bad += !at(it, &s, i);
	ok(bad == 0 && i == n && iter_status(it) == 0,
	   "n=%zu interval=%d: forward walk returns every entry in order", n, interval);

	for (iter_seek_last(it), i = n, bad = 0; iter_valid(it); iter_prev(it), i--)
		bad += i == 0 || !at(it, &s, i - 1);
	ok(bad == 0 && i == 0 && iter_status(it) == 0,
	   "n=%zu interval=%d: backward walk returns every entry in reverse", n, interval);

	/* Seek to each key exactly, and then step both ways from there. */
	for (i = 0, bad = 0; i < n; i++) {
		iter_seek(it, ekey(&s, i));
		bad += !at(it, &s, i);
		iter_prev(it);
		bad += i == 0 ? iter_valid(it) : !at(it, &s, i - 1);
		iter_seek(it, ekey(&s, i));
		iter_next(it);
		bad += i + 1 == n ? iter_valid(it) : !at(it, &s, i + 1);
		if (i > 0 && i + 1 < n) {
			iter_prev(it);
			bad += !at(it, &s, i);
			iter_prev(it);
			bad += !at(it, &s, i - 1);
			iter_next(it);
			bad += !at(it, &s, i);
		}
	}
	ok(bad == 0, "n=%zu interval=%d: seek finds every key; prev and next from it are its "
	   "neighbours", n, interval);

	/* Targets between keys: key + "\0" lies strictly between key i and key i+1. */
	for (i = 0, bad = 0; i < n; i++) {
		struct buf t = BUF_INIT;
		buf_append(&t, s.e[i].key, s.e[i].klen);
		buf_append(&t, "", 1);
		iter_seek(it, buf_slice(&t));
		bad += i + 1 == n ? iter_valid(it) : !at(it, &s, i + 1);
		buf_free(&t);
	}
	ok(bad == 0, "n=%zu interval=%d: seek between keys lands on the next key", n, interval);

	iter_seek(it, slice_make("", 0));
	ok(n == 0 ? !iter_valid(it) : at(it, &s, 0),
	   "n=%zu interval=%d: seek to the empty key finds the first entry", n, interval);
	iter_seek(it, slice_str("\xff\xff"));
	ok(!iter_valid(it) && iter_status(it) == 0,
	   "n=%zu interval=%d: seek past the last key is invalid without error", n, interval);

	iter_destroy(it);
	free(data);
	free_set(&s);
}

static void test_empty(void)
{
	struct block_builder b;
	struct block blk;
	struct slice out;
	struct iter *it;

	blk_builder_init(&b, 16);
	ok(blk_empty(&b), "a new builder is empty");
	out = blk_finish(&b);
	is_int(out.len, 4, "an empty block is four bytes (a zero restart count)");
	is_int(blk_parse(out, &blk), 0, "an empty block parses");
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
	iter_seek_first(it);
	ok(!iter_valid(it), "seek_first on an empty block is invalid");
	iter_seek_last(it);
	ok(!iter_valid(it), "seek_last on an empty block is invalid");
	iter_seek(it, slice_str("a"));
	ok(!iter_valid(it) && iter_status(it) == 0, "seek on an empty block is invalid, status 0");
	iter_destroy(it);

	/* The builder can be reused after reset. */
	blk_builder_reset(&b);
	blk_add(&b, slice_str("k"), slice_str("v"));
	out = blk_finish(&b);
	is_int(blk_parse(out, &blk), 0, "a reset builder builds a new block");
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
	iter_seek_first(it);
	ok(iter_valid(it) && slice_eq(iter_key(it), slice_str("k")) &&
	   slice_eq(iter_value(it), slice_str("v")),
	   "the reset builder's block holds its one entry");
	iter_next(it);
	ok(!iter_valid(it), "and nothing else");
	iter_destroy(it);
	blk_builder_free(&b);
}

static int released;
static void count_release(void *arg)
{
	released += *(int *)arg;
}

static void test_release(void)
{
	struct block blk;
	int one = 1;
	struct iter *it;

	blk_parse(slice_make("\0\0\0\0", 4), &blk);
	it = blk_iter_new(&blk, ukey_cmp_fn, count_release, &one);
	is_int(released, 0, "the release callback does not run while the iterator lives");
	iter_destroy(it);
	is_int(released, 1, "destroying the iterator runs the release callback once");
}

static void test_internal_keys(void)
{
	struct block_builder b;
	struct buf k = BUF_INIT, t = BUF_INIT;
	struct block blk;
	struct iter *it;
	struct slice out;
	int good = 1;

	/* A user key's versions sort newest first; seeking (key, snapshot) finds the visible. */
	blk_builder_init(&b, 2);
	for (int u = 0; u < 10; u++) {
		char uk[16];
		snprintf(uk, sizeof(uk), "u%d", u);
		for (uint64_t seq = 50; seq >= 10; seq -= 10) {
			buf_clear(&k);
			ikey_append(&k, slice_str(uk), seq + (uint64_t)u, KT_PUT);
			blk_add(&b, buf_slice(&k), slice_str(uk));
		}
	}
	out = blk_finish(&b);
	is_int(blk_parse(out, &blk), 0, "a block of internal keys parses");
	it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
	for (int u = 0; u < 10; u++) {
		char uk[16];
		snprintf(uk, sizeof(uk), "u%d", u);
		buf_clear(&t);
		ikey_append(&t, slice_str(uk), 35 + (uint64_t)u, KT_SEEK);
		iter_seek(it, buf_slice(&t));
		good &= iter_valid(it) && slice_eq(ikey_user(iter_key(it)), slice_str(uk)) &&
			ikey_seq(iter_key(it)) == 30 + (uint64_t)u;
	}
	ok(good, "seek to (key, snapshot) with the internal-key order finds the newest visible "
	   "version");
	iter_destroy(it);
	blk_builder_free(&b);
	buf_free(&k);
	buf_free(&t);
}

/* Walk forward, collecting the keys; returns the status.  Bounded by len steps. */
static int walk(const char *data, size_t len, int backward, struct buf *keys, size_t *count)
{
	struct block blk;
	struct iter *it;
	size_t steps = 0;
	int r = blk_parse(slice_make(data, len), &blk);

	*count = 0;
	buf_clear(keys);
	if (r < 0)
		return r;
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
	if (backward)
		iter_seek_last(it);
	else
		iter_seek_first(it);
	while (iter_valid(it) && steps++ <= len) {
		buf_put_lenprefixed(keys, iter_key(it));
		buf_put_lenprefixed(keys, iter_value(it));
		(*count)++;
		if (backward)
			iter_prev(it);
		else
			iter_next(it);
	}
	r = iter_status(it);
	if (r == 0 && iter_valid(it))
		r = -ELOOP;   /* more steps than bytes: the walk would not end */
	iter_destroy(it);
	return r;
}

/* A copy of data[0, len) with its own exact-size allocation. */
static char *dup_exact(const char *data, size_t len)
{
	char *p = xmalloc(len ? len : 1);
	memcpy(p, data, len);
	return p;
}

/* Reverse a sequence of (key, value) length-prefixed pairs into out. */
static void reverse_pairs(struct slice in, struct buf *out)
{
	struct slice *items = xmalloc(sizeof(struct slice) * (in.len / 2 + 1));
	size_t n = 0;
	const char *p = in.data, *end = in.data + in.len;

	while (p < end) {
		p = dec_lenprefixed(p, end, &items[n++]);
		p = dec_lenprefixed(p, end, &items[n++]);
	}
	buf_clear(out);
	for (size_t i = n; i >= 2; i -= 2) {
		buf_put_lenprefixed(out, items[i - 2]);
		buf_put_lenprefixed(out, items[i - 1]);
	}
	free(items);
}

/* Walk it (forward or backward) to its end; the shortest key handed out in *shortest. */
static int walk_ikeys(struct iter *it, int backward, size_t *shortest)
{
	*shortest = SIZE_MAX;
	for (backward ? iter_seek_last(it) : iter_seek_first(it); iter_valid(it);
	     backward ? iter_prev(it) : iter_next(it))
		if (iter_key(it).len < *shortest)
			*shortest = iter_key(it).len;
	return iter_status(it);
}

/*
 * A block of internal keys holding one key shorter than its 8-byte
 * trailer (damage whose checksum was made right): read with ikey_cmp_fn, as
 * SSTables read their blocks, it is -EUCLEAN, walked either way or sought,
 * whether the short key is a restart point (compared in the binary search)
 * or decoded in a scan; no key of fewer than 8 bytes is handed out, since
 * ikey_cmp would read outside it.  Read as a block of plain keys it is
 * sound.
 */
static void test_short_internal_key(void)
{
	static const int intervals[] = { 1, 16 };

	for (size_t i = 0; i < sizeof(intervals) / sizeof(intervals[0]); i++) {
		struct block_builder b;
		struct buf k = BUF_INIT, target = BUF_INIT;
		struct block blk;
		struct iter *it;
		size_t shortest;
		int r;

		blk_builder_init(&b, intervals[i]);
		for (char c = 'a'; c <= 'e'; c++) {
			char uk[2] = { c, 0 };
			buf_clear(&k);
			if (c == 'c')
				buf_append(&k, "c-raw", 5);   /* no room for a trailer */
			else
				ikey_append(&k, slice_str(uk), 100, KT_PUT);
			blk_add(&b, buf_slice(&k), slice_str("v"));
		}
		is_int(blk_parse(blk_finish(&b), &blk), 0, "short key, interval %d: the block parses",
		       intervals[i]);
		it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
		r = walk_ikeys(it, 0, &shortest);
		ok(r == 0 && shortest == 5, "short key, interval %d: read as plain keys it is sound "
		   "(%d)", intervals[i], r);
		iter_destroy(it);

		it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
		r = walk_ikeys(it, 0, &shortest);
		ok(r == -EUCLEAN && shortest >= IKEY_TRAILER, "short key, interval %d: read as "
		   "internal keys, a forward walk is -EUCLEAN before the short key (%d, shortest %zu)",
		   intervals[i], r, shortest == SIZE_MAX ? 0 : shortest);
		ok(strstr(err_last(), "trailer") != NULL, "and the message says why (%s)",
		   err_last());
		iter_destroy(it);
		it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
		r = walk_ikeys(it, 1, &shortest);
		ok(r == -EUCLEAN && shortest >= IKEY_TRAILER, "short key, interval %d: so is a "
		   "backward walk (%d)", intervals[i], r);
		iter_destroy(it);
		for (char c = 'a'; c <= 'e'; c += 4) {
			char uk[2] = { c, 0 };
			it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
			ikey_append(&target, slice_str(uk), 200, KT_SEEK);
			iter_seek(it, buf_slice(&target));
			r = iter_status(it);
			/* the search of 'a' with interval 16 never meets the short key: it may succeed */
			ok(c == 'a' && intervals[i] == 16 ? r == 0 && iter_valid(it) :
			   r == -EUCLEAN && !iter_valid(it),
			   "short key, interval %d: a seek to %c %s (%d)", intervals[i], c,
			   c == 'a' && intervals[i] == 16 ? "before it finds its key" :
			   "that meets it is -EUCLEAN", r);
			buf_clear(&target);
			iter_destroy(it);
		}
		blk_builder_free(&b);
		buf_free(&k);
		buf_free(&target);
	}
}

static void test_handmade_damage(void)
{
	struct set s = make_set(40, 300);
	size_t len, count;
	char *good = build(&s, 4, &len, NULL), *d;
	struct buf keys = BUF_INIT;
	uint32_t n = dec_fixed32(good + len - 4);
	size_t ra = len - 4 - 4 * (size_t)n;   /* restart array offset */
	struct block blk;

	is_int(blk_parse(slice_make(good, 3), &blk), -EUCLEAN, "a block shorter than its trailer "
	       "is -EUCLEAN");
	d = dup_exact(good, len);
	enc_fixed32(d + len - 4, 0xffffff);
	is_int(blk_parse(slice_make(d, len), &blk), -EUCLEAN,
	       "a restart count larger than the block is -EUCLEAN");
	ok(strstr(err_last(), "restart") != NULL, "and the message says what is wrong (%s)",
	   err_last());
	enc_fixed32(d + len - 4, 0);
	is_int(blk_parse(slice_make(d, len), &blk), -EUCLEAN,
	       "a zero restart count with entries present is -EUCLEAN");
	free(d);

	d = dup_exact(good, len);
	enc_fixed32(d + ra, 3);
	is_int(blk_parse(slice_make(d, len), &blk), -EUCLEAN,
	       "a first restart point other than 0 is -EUCLEAN");
	free(d);

	d = dup_exact(good, len);
	enc_fixed32(d + ra + 4, (uint32_t)ra + 100);
	is_int(blk_parse(slice_make(d, len), &blk), -EUCLEAN,
	       "a restart point past the entries is -EUCLEAN");
	free(d);

	d = dup_exact(good, len);
	enc_fixed32(d + ra + 8, dec_fixed32(d + ra + 4));
	is_int(blk_parse(slice_make(d, len), &blk), -EUCLEAN,
	       "restart points out of order are -EUCLEAN");
	free(d);

	/* A restart point inside an entry: forward decoding steps over it. */
	d = dup_exact(good, len);
	enc_fixed32(d + ra + 4, dec_fixed32(d + ra + 4) + 1);
	is_int(walk(d, len, 0, &keys, &count), -EUCLEAN,
	       "a restart point that is not an entry boundary is -EUCLEAN when walked forward");
	is_int(walk(d, len, 1, &keys, &count), -EUCLEAN,
	       "and when walked backward");
	free(d);

	/* The entry at restart point 1 claims to share bytes with its predecessor. */
	d = dup_exact(good, len);
	d[dec_fixed32(d + ra + 4)] = 2;
	is_int(walk(d, len, 0, &keys, &count), -EUCLEAN,
	       "a restart entry that shares key bytes is -EUCLEAN forward");
	is_int(walk(d, len, 1, &keys, &count), -EUCLEAN, "and backward");
	free(d);

	/* First entry: shared must be 0 (no previous key); unshared too long. */
	d = dup_exact(good, len);
	memcpy(d + 1, "\xff\xff\xff\x0f", 4);
	is_int(walk(d, len, 0, &keys, &count), -EUCLEAN,
	       "a key length running past the entries is -EUCLEAN");
	free(d);

	d = dup_exact(good, len);
	memset(d, 0xff, 5);
	is_int(walk(d, len, 0, &keys, &count), -EUCLEAN, "an overlong varint is -EUCLEAN");
	free(d);

	/* Second entry (not a restart point with interval 4) shares more than the first key has. */
	d = dup_exact(good, len);
	{
		uint32_t sh, un, vl;
		const char *p = dec_varint32(d, d + len, &sh);
		p = dec_varint32(p, d + len, &un);
		p = dec_varint32(p, d + len, &vl);
		size_t second = (size_t)(p - d) + un + vl;
		d[second] = 0x70;
	}
	is_int(walk(d, len, 0, &keys, &count), -EUCLEAN,
	       "sharing more bytes than the previous key has is -EUCLEAN");
	free(d);

	/* A seek on a damaged block reports the error as well. */
	d = dup_exact(good, len);
	d[dec_fixed32(d + ra + 4 * (n / 2))] = 5;
	is_int(blk_parse(slice_make(d, len), &blk), 0, "a block damaged inside its entries parses");
	{
		struct iter *it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
		iter_seek(it, ekey(&s, 39));
		ok(!iter_valid(it) && iter_status(it) == -EUCLEAN,
		   "a seek whose binary search reads the damaged restart key is -EUCLEAN");
		iter_seek_first(it);
		ok(!iter_valid(it) && iter_status(it) == -EUCLEAN,
		   "the error stays: later seeks do not return entries");
		iter_destroy(it);
	}
	free(d);

	free(good);
	buf_free(&keys);
	free_set(&s);
}

/*
 * Truncation keeps the bytes before the cut, so a forward walk from offset 0
 * either hits damage or decodes a prefix of the original entries.
 */
static void test_truncation(void)
{
	struct set s = make_set(60, 300);
	size_t len, count, full_count, bad = 0, rejected = 0;
	char *good = build(&s, 8, &len, NULL);
	struct buf full = BUF_INIT, keys = BUF_INIT;

	is_int(walk(good, len, 0, &full, &full_count), 0, "the undamaged block walks cleanly");
	for (size_t cut = 0; cut < len; cut++) {
		char *d = dup_exact(good, cut);
		int r = walk(d, cut, 0, &keys, &count);
		if (r == -EUCLEAN)
			rejected++;
		else if (r != 0 || count > full_count || keys.len > full.len ||
			 memcmp(keys.data, full.data, keys.len) != 0)
			bad++;
		free(d);
	}
	ok(bad == 0, "every truncation gives -EUCLEAN or a prefix of the original entries");
	ok(rejected > len / 2, "most truncations are detected (%zu of %zu)", rejected, len);
	free(good);
	buf_free(&full);
	buf_free(&keys);
	free_set(&s);
}

/*
 * Byte flips cannot always be detected at this layer (the SSTable's checksum
 * does that), but decoding must stay in bounds, report only -EUCLEAN, always
 * end, and agree with itself: when both walks succeed, the backward walk is
 * the forward walk reversed.
 */
static void test_flips(void)
{
	struct set s = make_set(150, 24);
	size_t len, fc, bc, bad_status = 0, disagree = 0, detected = 0, trials = 0;
	char *good = build(&s, 16, &len, NULL);
	struct buf fk = BUF_INIT, bk = BUF_INIT, rev = BUF_INIT;

	for (size_t pos = 0; pos < len; pos++) {
		for (int kind = 0; kind < 2; kind++) {
			char *d = dup_exact(good, len);
			int rf, rb;

			if (kind == 0)
				d[pos] ^= (char)(1 << (rand_next(&rng) % 8));
			else
				d[pos] = (char)rand_next(&rng);
			rf = walk(d, len, 0, &fk, &fc);
			rb = walk(d, len, 1, &bk, &bc);
			trials++;
			if ((rf != 0 && rf != -EUCLEAN) || (rb != 0 && rb != -EUCLEAN))
				bad_status++;
			if (rf == -EUCLEAN || rb == -EUCLEAN)
				detected++;
			if (rf == 0 && rb == 0) {
				reverse_pairs(buf_slice(&bk), &rev);
				if (fc != bc || rev.len != fk.len ||
				    memcmp(rev.data, fk.data, fk.len) != 0)
					disagree++;
			}
			/* Seeks on the damaged block must also stay in bounds. */
			struct block blk;
			if (blk_parse(slice_make(d, len), &blk) == 0) {
				struct iter *it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
				for (size_t i = 0; i < s.n; i += 37) {
					iter_seek(it, ekey(&s, i));
					if (iter_valid(it))
						iter_prev(it);
				}
				if (iter_status(it) != 0 && iter_status(it) != -EUCLEAN)
					bad_status++;
				iter_destroy(it);
			}
			free(d);
		}
	}
	ok(bad_status == 0, "damaged blocks report no error but -EUCLEAN (%zu trials)", trials);
	ok(disagree == 0, "when a damaged block walks cleanly both ways, the walks agree");
	ok(detected > 0, "some damage is detected (%zu of %zu)", detected, trials);
	free(good);
	buf_free(&fk);
	buf_free(&bk);
	buf_free(&rev);
	free_set(&s);
}

static void test_big_entry(void)
{
	struct block_builder b;
	size_t vl = 3u << 20;
	char *v = xmalloc(vl);
	struct block blk;
	struct iter *it;
	struct slice out;

	for (size_t i = 0; i < vl; i++)
		v[i] = (char)(i * 7);
	blk_builder_init(&b, 16);
	blk_add(&b, slice_str("a"), slice_str("small"));
	blk_add(&b, slice_str("b"), slice_make(v, vl));
	blk_add(&b, slice_str("c"), slice_str(""));
	out = blk_finish(&b);
	ok(out.len > vl, "a block grows to hold a 3 MiB value");
	is_int(blk_parse(out, &blk), 0, "and parses");
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
	iter_seek(it, slice_str("b"));
	ok(iter_valid(it) && iter_value(it).len == vl && memcmp(iter_value(it).data, v, vl) == 0,
	   "the big value reads back intact");
	iter_next(it);
	ok(iter_valid(it) && slice_eq(iter_key(it), slice_str("c")) && iter_value(it).len == 0,
	   "the entry after it is an empty value");
	iter_prev(it);
	iter_prev(it);
	ok(iter_valid(it) && slice_eq(iter_value(it), slice_str("small")),
	   "prev over the big entry reaches the first one");
	iter_destroy(it);
	blk_builder_free(&b);
	free(v);
}

int main(void)
{
	static const size_t sizes[] = { 1, 2, 17, 1000 };
	static const int intervals[] = { 1, 2, 16, 1000 };

	plan(199);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(intervals) / sizeof(intervals[0]); j++)
			test_round_trip(sizes[i], intervals[j]);
	test_empty();
	test_release();
	test_internal_keys();
	test_handmade_damage();
	test_short_internal_key();
	test_truncation();
	test_flips();
	test_big_entry();
	return exit_status();
}
