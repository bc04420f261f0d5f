/*
 * kv_batch.c -- tests of write batches (engine/batch.c): the encoding of
 * batch.h byte for byte, round trips of every mutation type, counts, sizes,
 * merging, clearing, the limits of kv.h, and batch_check's refusal of every
 * damaged or truncated encoding.
 */
#include "batch.h"
#include "db.h"
#include "tap.h"

#include <stdlib.h>

struct seen {
	uint64_t seq;
	uint32_t tree;
	int type;
	struct buf key, value;
};

struct collect {
	struct seen s[64];
	int n;
	int stop_after;   /* return 99 from the callback after this many (0: never) */
};

static int collect_fn(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
		      struct slice value)
{
	struct collect *c = arg;

	if (c->n >= 64)
		return -1;
	c->s[c->n].seq = seq;
	c->s[c->n].tree = tree;
	c->s[c->n].type = type;
	buf_set(&c->s[c->n].key, key.data, key.len);
	buf_set(&c->s[c->n].value, value.data, value.len);
	c->n++;
	return c->stop_after && c->n == c->stop_after ? 99 : 0;
}

static void collect_free(struct collect *c)
{
	for (int i = 0; i < 64; i++) {
		buf_free(&c->s[i].key);
		buf_free(&c->s[i].value);
	}
}

static struct slice rep_of(const struct kv_batch *b)
{
	return buf_slice(&b->rep);
}

static int seen_is(const struct seen *s, uint64_t seq, int type, const void *k, size_t kl,
		   const void *v, size_t vl)
{
	return s->seq == seq && s->type == type &&
	       slice_eq(buf_slice(&s->key), slice_make(k, kl)) &&
	       slice_eq(buf_slice(&s->value), slice_make(v, vl));
}

static void test_empty(void)
{
	struct kv_batch *b = kv_batch_new();
	struct collect c = { .n = 0 };
	uint32_t count = 77;

	is_int(kv_batch_count(b), 0, "a new batch holds no mutations");
	is_int(kv_batch_bytes(b), BATCH_HEADER, "a new batch is just its 12-byte header");
	is_int(batch_seq(b), 0, "a new batch's sequence is 0");
	is_int(batch_check(rep_of(b), &count), 0, "an empty batch is well formed");
	is_int(count, 0, "batch_check counts 0 mutations in an empty batch");
	is_int(batch_iterate(rep_of(b), collect_fn, &c), 0, "iterating an empty batch succeeds");
	is_int(c.n, 0, "iterating an empty batch calls back nothing");
	kv_batch_free(b);
	kv_batch_free(NULL);
	ok(1, "kv_batch_free(NULL) is a no-op");
}

static void test_encoding(void)
{
	struct kv_batch *b = kv_batch_new();
	static const char want[] =
		"\x2a\x01\0\0\0\0\0\0"      /* fixed64 sequence 0x12a */
		"\x03\0\0\0"                /* fixed32 count 3 */
		"\x01\x01k\x02vv"           /* put k -> vv */
		"\x00\x02kk"                /* delete kk */
		"\x02\x01""a\x01z";         /* delete_range [a, z) */

	kv_batch_put(b, "k", 1, "vv", 2);
	kv_batch_delete(b, "kk", 2);
	kv_batch_delete_range(b, "a", 1, "z", 1);
	batch_set_seq(b, 0x12a);
	is_mem(b->rep.data, b->rep.len, want, sizeof(want) - 1,
	       "the encoding is fixed64 seq, fixed32 count, then type and length-prefixed keys");
	is_int(batch_seq(b), 0x12a, "batch_seq reads back what batch_set_seq wrote");
	kv_batch_free(b);
}

static void test_round_trip(void)
{
	struct kv_batch *b = kv_batch_new();
	struct collect c = { .n = 0 };
	char bin[300];
	size_t expect_bytes = BATCH_HEADER;
	uint32_t count = 0;

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)(i * 13);
	is_int(kv_batch_put(b, "alpha", 5, "one", 3), 0, "put is accepted");
	expect_bytes += 1 + 1 + 5 + 1 + 3;
	is_int(kv_batch_put(b, "", 0, "", 0), 0, "an empty key with an empty value is accepted");
	expect_bytes += 1 + 1 + 0 + 1 + 0;
	is_int(kv_batch_put(b, NULL, 0, NULL, 0), 0, "NULL pointers with length 0 are accepted");
	expect_bytes += 1 + 1 + 1;
	is_int(kv_batch_delete(b, "alpha", 5), 0, "delete is accepted");
	expect_bytes += 1 + 1 + 5;
	is_int(kv_batch_put(b, bin, sizeof(bin), bin, 200), 0,
	       "binary keys and values are accepted");
	expect_bytes += 1 + 2 + 300 + 2 + 200;
	is_int(kv_batch_delete_range(b, "b", 1, "bb", 2), 0, "delete_range [b, bb) is accepted");
	expect_bytes += 1 + 1 + 1 + 1 + 2;
	is_int(kv_batch_delete_range(b, "", 0, "\0", 1), 0,
	       "delete_range [\"\", \"\\0\") is accepted");
	expect_bytes += 1 + 1 + 0 + 1 + 1;

	is_int(kv_batch_count(b), 7, "count is the number of mutations added");
	is_int(kv_batch_bytes(b), expect_bytes, "bytes is the exact encoded size");
	batch_set_seq(b, 1000);
	is_int(batch_check(rep_of(b), &count), 0, "a built batch is well formed");
	is_int(count, 7, "batch_check counts the mutations");
	is_int(batch_iterate(rep_of(b), collect_fn, &c), 0, "iterating a built batch succeeds");
	is_int(c.n, 7, "iteration visits every mutation");
	ok(seen_is(&c.s[0], 1000, KT_PUT, "alpha", 5, "one", 3), "1st: put alpha=one at seq+0");
	ok(seen_is(&c.s[1], 1001, KT_PUT, "", 0, "", 0), "2nd: put of the empty key at seq+1");
	ok(seen_is(&c.s[2], 1002, KT_PUT, "", 0, "", 0), "3rd: put from NULL pointers at seq+2");
	ok(seen_is(&c.s[3], 1003, KT_DELETE, "alpha", 5, "", 0),
	   "4th: delete alpha, with an empty value");
	ok(seen_is(&c.s[4], 1004, KT_PUT, bin, 300, bin, 200),
	   "5th: the binary put, byte for byte");
	ok(seen_is(&c.s[5], 1005, KT_RANGE_DEL, "b", 1, "bb", 2),
	   "6th: range delete with the end key as value");
	ok(seen_is(&c.s[6], 1006, KT_RANGE_DEL, "", 0, "\0", 1),
	   "7th: range delete from the empty key");
	collect_free(&c);

	/* A callback's nonzero return stops the walk and is passed on. */
	struct collect c2 = { .n = 0, .stop_after = 3 };
	is_int(batch_iterate(rep_of(b), collect_fn, &c2), 99,
	       "batch_iterate returns the callback's nonzero result");
	is_int(c2.n, 3, "batch_iterate stops at the callback's nonzero result");
	collect_free(&c2);

	kv_batch_clear(b);
	is_int(kv_batch_count(b), 0, "clear empties the batch");
	is_int(kv_batch_bytes(b), BATCH_HEADER, "clear keeps only the header");
	is_int(batch_seq(b), 0, "clear resets the sequence");
	is_int(batch_check(rep_of(b), &count), 0, "a cleared batch is well formed");
	is_int(count, 0, "a cleared batch counts 0 mutations");
	kv_batch_put(b, "x", 1, "y", 1);
	is_int(kv_batch_count(b), 1, "a cleared batch can be refilled");
	kv_batch_free(b);
}

static void test_append(void)
{
	struct kv_batch *a = kv_batch_new(), *b = kv_batch_new(), *e = kv_batch_new();
	struct collect c = { .n = 0 };
	uint32_t count = 0;

	kv_batch_put(a, "a1", 2, "v1", 2);
	kv_batch_delete(a, "a2", 2);
	kv_batch_put(b, "b1", 2, "w1", 2);
	kv_batch_delete_range(b, "c", 1, "d", 1);
	kv_batch_put(b, "b3", 2, "w3", 2);
	batch_set_seq(a, 50);
	batch_set_seq(b, 9999);
	size_t abytes = kv_batch_bytes(a), bbytes = kv_batch_bytes(b);

	batch_append(a, b);
	is_int(kv_batch_count(a), 5, "append adds the source's count");
	is_int(kv_batch_bytes(a), abytes + bbytes - BATCH_HEADER,
	       "append adds the source's mutations without its header");
	is_int(batch_seq(a), 50, "append keeps the destination's sequence");
	is_int(kv_batch_count(b), 3, "append leaves the source alone");
	is_int(batch_check(rep_of(a), &count), 0, "an appended batch is well formed");
	is_int(count, 5, "its header counts all 5 mutations");
	batch_iterate(rep_of(a), collect_fn, &c);
	ok(c.n == 5 && seen_is(&c.s[0], 50, KT_PUT, "a1", 2, "v1", 2) &&
	   seen_is(&c.s[1], 51, KT_DELETE, "a2", 2, "", 0) &&
	   seen_is(&c.s[2], 52, KT_PUT, "b1", 2, "w1", 2) &&
	   seen_is(&c.s[3], 53, KT_RANGE_DEL, "c", 1, "d", 1) &&
	   seen_is(&c.s[4], 54, KT_PUT, "b3", 2, "w3", 2),
	   "the merged batch holds the destination's then the source's mutations, "
	   "numbered on from the destination's sequence");
	collect_free(&c);

	batch_append(a, e);
	is_int(kv_batch_count(a), 5, "appending an empty batch changes no count");
	is_int(kv_batch_bytes(a), abytes + bbytes - BATCH_HEADER,
	       "appending an empty batch changes no bytes");
	kv_batch_free(a);
	kv_batch_free(b);
	kv_batch_free(e);
}

static void test_limits(void)
{
	struct kv_batch *b = kv_batch_new();
	char *big = calloc(1, KV_MAX_KEY_SIZE + 2);
	int r;

	is_int(kv_batch_put(b, big, KV_MAX_KEY_SIZE, "v", 1), 0,
	       "a key of exactly the limit is accepted");
	size_t bytes = kv_batch_bytes(b);
	r = kv_batch_put(b, big, KV_MAX_KEY_SIZE + 1, "v", 1);
	is_int(r, -E2BIG, "put of a key one byte over the limit is -E2BIG");
	ok(strstr(kv_strerror(r), "65537") != NULL, "the message names the key's size: %s",
	   kv_strerror(r));
	is_int(kv_batch_delete(b, big, KV_MAX_KEY_SIZE + 1), -E2BIG,
	       "delete of a key over the limit is -E2BIG");
	/* The length is checked before the bytes are touched. */
	r = kv_batch_put(b, "k", 1, big, (size_t)KV_MAX_VALUE_SIZE + 1);
	is_int(r, -E2BIG, "put of a value one byte over the limit is -E2BIG");
	ok(strstr(kv_strerror(r), "value") != NULL, "the message says the value is too big: %s",
	   kv_strerror(r));
	is_int(kv_batch_delete_range(b, big, KV_MAX_KEY_SIZE + 1, "\xff", 1), -E2BIG,
	       "delete_range with a start key over the limit is -E2BIG");
	is_int(kv_batch_delete_range(b, "", 0, big, KV_MAX_KEY_SIZE + 1), -E2BIG,
	       "delete_range with an end key over the limit is -E2BIG");
	is_int(kv_batch_delete_range(b, "b", 1, "b", 1), -EINVAL,
	       "delete_range with start == end is -EINVAL");
	is_int(kv_batch_delete_range(b, "b", 1, "a", 1), -EINVAL,
	       "delete_range with start > end is -EINVAL");
	is_int(kv_batch_delete_range(b, "ab", 2, "a", 1), -EINVAL,
	       "delete_range with end a proper prefix of start is -EINVAL");
	is_int(kv_batch_delete_range(b, "", 0, "", 0), -EINVAL,
	       "delete_range of two empty keys is -EINVAL");
	is_int(kv_batch_delete_range(b, "\x7f", 1, "\x80", 1), 0,
	       "delete_range compares bytes unsigned (0x7f < 0x80)");
	is_int(kv_batch_count(b), 2, "refused mutations are not added");
	is_int(kv_batch_bytes(b), bytes + 1 + 1 + 1 + 1 + 1, "refused mutations add no bytes");
	free(big);
	kv_batch_free(b);
}

static struct kv_batch *sample_batch(void)
{
	struct kv_batch *b = kv_batch_new();

	kv_batch_put(b, "key1", 4, "value1", 6);
	kv_batch_delete(b, "key2", 4);
	kv_batch_delete_range(b, "k3", 2, "k4", 2);
	kv_batch_put(b, "", 0, "", 0);
	kv_batch_put(b, "key5", 4, "a longer value, 33 bytes of it..", 33);
	batch_set_seq(b, 7);
	return b;
}

static void test_damage(void)
{
	struct kv_batch *b = sample_batch();
	struct slice rep = rep_of(b);
	char *copy = malloc(rep.len);
	uint32_t count;
	size_t bad = 0, called = 0;
	int r;

	/* Every truncation is damage: a cut mutation, or fewer than the header counts. */
	for (size_t len = 0; len < rep.len; len++) {
		struct collect c = { .n = 0 };
		memcpy(copy, rep.data, len);
		if (batch_check(slice_make(copy, len), &count) != -EUCLEAN)
			bad++;
		if (batch_iterate(slice_make(copy, len), collect_fn, &c) != -EUCLEAN)
			bad++;
		called += (size_t)c.n;
		collect_free(&c);
	}
	is_int(bad, 0, "batch_check and batch_iterate reject each of the %zu truncations", rep.len);
	is_int(called, 0, "batch_iterate applies nothing of a truncated batch");

	memcpy(copy, rep.data, rep.len);
	enc_fixed32(copy + 8, 6);
	is_int(batch_check(slice_make(copy, rep.len), &count), -EUCLEAN,
	       "a header counting one mutation too many is damage");
	enc_fixed32(copy + 8, 4);
	r = batch_check(slice_make(copy, rep.len), &count);
	is_int(r, -EUCLEAN, "a header counting one mutation too few is damage");
	ok(strstr(kv_strerror(r), "write batch") != NULL, "the message says what is damaged: %s",
	   kv_strerror(r));

	memcpy(copy, rep.data, rep.len);
	copy[BATCH_HEADER] = 7;
	is_int(batch_check(slice_make(copy, rep.len), &count), -EUCLEAN,
	       "an unknown mutation type is damage");

	/* Swap the range delete's keys into an inverted range: [k4, k3). */
	memcpy(copy, rep.data, rep.len);
	char *rd = memchr(copy + BATCH_HEADER, KT_RANGE_DEL, rep.len - BATCH_HEADER);
	ok(rd && rd[2] == 'k' && rd[3] == '3' && rd[6] == '4',
	   "the sample holds [k3, k4) where expected");
	if (rd) {
		rd[3] = '4';
		rd[6] = '3';
	}
	is_int(batch_check(slice_make(copy, rep.len), &count), -EUCLEAN,
	       "a range tombstone with start >= end is damage");

	/* A length prefix that points past the end. */
	memcpy(copy, rep.data, rep.len);
	copy[BATCH_HEADER + 1] = 0x7f;
	is_int(batch_check(slice_make(copy, rep.len), &count), -EUCLEAN,
	       "a key length running past the end is damage");

	memcpy(copy, rep.data, rep.len);
	enc_fixed64(copy, SEQ_MAX - 3);
	is_int(batch_check(slice_make(copy, rep.len), &count), -EUCLEAN,
	       "sequence numbers beyond SEQ_MAX are damage");
	enc_fixed64(copy, SEQ_MAX - 4);
	is_int(batch_check(slice_make(copy, rep.len), &count), 0,
	       "sequence numbers ending exactly at SEQ_MAX are fine");

	/* Trailing garbage after the counted mutations. */
	struct buf longer = BUF_INIT;
	buf_append(&longer, rep.data, rep.len);
	buf_append(&longer, "\x00\x01z", 3);
	is_int(batch_check(buf_slice(&longer), &count), -EUCLEAN,
	       "a mutation beyond the header's count is damage");
	buf_free(&longer);

	is_int(batch_check(rep, &count), 0, "the undamaged sample is well formed");
	is_int(count, 5, "the undamaged sample counts 5 mutations");
	free(copy);
	kv_batch_free(b);
}

/* Mutations for trees other than the default one carry the tree's id. */
static void test_trees(void)
{
	struct kv_tree t7 = { .id = 7 }, t300 = { .id = 300 };
	struct kv_batch *b = kv_batch_new();
	struct collect c = { 0 };
	uint32_t count;

	ok(!batch_has_trees(b), "a new batch names no tree");
	is_int(kv_batch_put(b, "a", 1, "1", 1), 0, "a put to the default tree");
	ok(!batch_has_trees(b), "the default tree is not counted as naming a tree");
	is_int(kv_batch_put_tree(b, &t7, "b", 1, "2", 1), 0, "a put to tree 7");
	is_int(kv_batch_delete_tree(b, &t300, "c", 1), 0, "a delete in tree 300");
	is_int(kv_batch_delete_range_tree(b, &t7, "d", 1, "e", 1), 0, "a range delete in tree 7");
	is_int(kv_batch_put_tree(b, NULL, "f", 1, "3", 1), 0, "a put with a NULL tree");
	ok(batch_has_trees(b), "the batch now names trees");
	/* put to tree 7: type byte with the flag, then varint 7 */
	size_t off = BATCH_HEADER + 1 + 1 + 1 + 1 + 1;   /* the first mutation: 01 01 'a' 01 '1' */
	is_int((unsigned char)b->rep.data[off], KT_PUT | BATCH_TREE_FLAG,
	       "a mutation for another tree has the tree flag in its type byte");
	is_int((unsigned char)b->rep.data[off + 1], 7, "and its tree id follows as a varint");
	batch_set_seq(b, 100);
	is_int(batch_iterate(buf_slice(&b->rep), collect_fn, &c), 0, "iterate");
	is_int(c.n, 5, "five mutations");
	ok(c.s[0].tree == 0 && c.s[1].tree == 7 && c.s[2].tree == 300 && c.s[3].tree == 7 &&
	   c.s[4].tree == 0, "each mutation comes back with its tree");
	ok(seen_is(&c.s[3], 103, KT_RANGE_DEL, "d", 1, "e", 1), "the range delete keeps its keys");
	/* a flagged mutation naming tree 0 is damage: 0 is written without the flag */
	b->rep.data[off + 1] = 0;
	ok(batch_check(buf_slice(&b->rep), &count) == -EUCLEAN,
	   "a tree flag followed by tree id 0 is refused as damage");
	kv_batch_clear(b);
	ok(!batch_has_trees(b), "clear forgets the trees");
	collect_free(&c);
	kv_batch_free(b);
}

int main(void)
{
	plan(92);
	test_trees();
	test_empty();
	test_encoding();
	test_round_trip();
	test_append();
	test_limits();
	test_damage();
	return exit_status();
}
