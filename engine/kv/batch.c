/*
 * batch.c -- write batches: building them (the kv_batch_* calls of kv.h),
 * merging them for group commit, and reading them back from the log.
 *
 * A batch is kept encoded from the start (the layout is in batch.h), with the
 * count in its header always up to date, so the bytes of a batch are the
 * payload of its log record as they stand: the write path stamps the first
 * sequence number and appends them to the log without another copy.  Reading
 * is the other half: a record from the log is untrusted until batch_check has
 * bounds-checked every length in it, and batch_iterate checks before it
 * applies anything, so a damaged record is never half applied.
 */
#include "batch.h"
#include "wal.h"

#include <assert.h>
#include <stdlib.h>

uint64_t batch_seq(const struct kv_batch *b)
{
	return dec_fixed64(b->rep.data);
}

void batch_set_seq(struct kv_batch *b, uint64_t seq)
{
	enc_fixed64(b->rep.data, seq);
}

static void set_count(struct kv_batch *b, size_t count)
{
	/* WAL_MAX_RECORD bytes hold far fewer than 2^32 mutations of >= 2 bytes. */
	assert(count <= UINT32_MAX);
	b->count = count;
	enc_fixed32(b->rep.data + 8, (uint32_t)count);
}

struct kv_batch *kv_batch_new(void)
{
	struct kv_batch *b = xcalloc(1, sizeof(*b));

	buf_reserve(&b->rep, BATCH_HEADER);
	memset(b->rep.data, 0, BATCH_HEADER);
	b->rep.len = BATCH_HEADER;
	b->count = 0;
	return b;
}

void batch_init_fixed(struct kv_batch *b, char *mem, size_t cap)
{
	assert(cap >= BATCH_HEADER);
	memset(mem, 0, BATCH_HEADER);
	b->rep.data = mem;
	b->rep.len = BATCH_HEADER;
	b->rep.cap = cap;
	b->count = 0;
	b->has_trees = 0;
}

void kv_batch_free(struct kv_batch *b)
{
	if (!b)
		return;
	buf_free(&b->rep);
	free(b);
}

void kv_batch_clear(struct kv_batch *b)
{
	/* Keep the buffer: a cleared batch is usually refilled. */
	memset(b->rep.data, 0, BATCH_HEADER);
	b->rep.len = BATCH_HEADER;
	b->count = 0;
	b->has_trees = 0;
}

size_t kv_batch_count(const struct kv_batch *b)
{
	return b->count;
}

size_t kv_batch_bytes(const struct kv_batch *b)
{
	return b->rep.len;
}

static int check_key(const char *what, size_t len)
{
	if (len > KV_MAX_KEY_SIZE)
		return ERR_SET(-E2BIG, "%s of %zu bytes is longer than the limit of %u bytes",
				what, len, KV_MAX_KEY_SIZE);
	return 0;
}

/*
 * Room for one more mutation of the given key and value lengths (vlen: 0 for
 * none), keeping the batch within one log record.
 */
static int check_room(const struct kv_batch *b, size_t klen, size_t vlen)
{
	/* type + tree id + two varint32 lengths (5 bytes at most each) + the bytes */
	size_t need = 1 + 5 + 5 + klen + 5 + vlen;

	if (b->rep.len + need > WAL_MAX_RECORD)
		return ERR_SET(-E2BIG, "write batch of %zu bytes cannot grow by %zu more: "
				"a batch must fit one log record of %u bytes",
				b->rep.len, need, WAL_MAX_RECORD);
	return 0;
}

static void add(struct kv_batch *b, uint32_t tree, int type, struct slice key,
		const struct slice *value)
{
	/* within BATCH_MUTATION_OVERHEAD + key + value: batch_init_fixed relies on it */
	buf_reserve(&b->rep, 1 + 5 + 5 + key.len + (value ? 5 + value->len : 0));
	b->rep.data[b->rep.len++] = (char)(type | (tree ? BATCH_TREE_FLAG : 0));
	if (tree) {
		buf_put_varint32(&b->rep, tree);
		b->has_trees = 1;
	}
	buf_put_lenprefixed(&b->rep, key);
	if (value)
		buf_put_lenprefixed(&b->rep, *value);
	set_count(b, b->count + 1);
}

int kv_batch_put(struct kv_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
	API_ENTRY();
	return kv_batch_put_tree(b, NULL, key, klen, val, vlen);
}

int kv_batch_delete(struct kv_batch *b, const void *key, size_t klen)
{
	API_ENTRY();
	return kv_batch_delete_tree(b, NULL, key, klen);
}

int kv_batch_delete_range(struct kv_batch *b, const void *start, size_t slen, const void *end,
			  size_t elen)
{
	API_ENTRY();
	return kv_batch_delete_range_tree(b, NULL, start, slen, end, elen);
}

int kv_batch_put_tree(struct kv_batch *b, const struct kv_tree *t, const void *key, size_t klen,
		      const void *val, size_t vlen)
{
	API_ENTRY();
	int r = check_key("key", klen);

	if (r)
		return r;
	if (vlen > KV_MAX_VALUE_SIZE)
		return ERR_SET(-E2BIG, "value of %zu bytes is longer than the limit of %u bytes",
				vlen, KV_MAX_VALUE_SIZE);
	r = check_room(b, klen, vlen);
	if (r)
		return r;
	struct slice v = slice_make(val, vlen);
	add(b, db_tree_id(t), KT_PUT, slice_make(key, klen), &v);
	return 0;
}

int kv_batch_delete_tree(struct kv_batch *b, const struct kv_tree *t, const void *key, size_t klen)
{
	API_ENTRY();
	int r = check_key("key", klen);

	if (r)
		return r;
	r = check_room(b, klen, 0);
	if (r)
		return r;
	add(b, db_tree_id(t), KT_DELETE, slice_make(key, klen), NULL);
	return 0;
}

int kv_batch_delete_range_tree(struct kv_batch *b, const struct kv_tree *t, const void *start,
			       size_t slen, const void *end, size_t elen)
{
	API_ENTRY();
	struct slice s = slice_make(start, slen), e = slice_make(end, elen);
	int r = check_key("range start key", slen);

	if (r)
		return r;
	r = check_key("range end key", elen);
	if (r)
		return r;
	/* An empty or inverted range would be a tombstone that deletes nothing, or worse. */
	if (slice_cmp(s, e) >= 0)
		return ERR_SET(-EINVAL, "delete_range needs start < end (start %zu bytes, "
				"end %zu bytes)", slen, elen);
	r = check_room(b, slen, elen);
	if (r)
		return r;
	add(b, db_tree_id(t), KT_RANGE_DEL, s, &e);
	return 0;
}

void batch_append(struct kv_batch *dst, const struct kv_batch *src)
{
	assert(src->rep.len >= BATCH_HEADER && dst->rep.len >= BATCH_HEADER);
	buf_append(&dst->rep, src->rep.data + BATCH_HEADER, src->rep.len - BATCH_HEADER);
	set_count(dst, dst->count + src->count);
	dst->has_trees |= src->has_trees;
}

/*
 * Decode the mutation at *p, up to limit.  Returns 0 and advances *p, or
 * -1 if it is damaged (*why says how).
 */
static int parse_one(const char **p, const char *limit, uint32_t *tree, int *type,
		     struct slice *key, struct slice *value, const char **why)
{
	const char *q = *p;

	assert(q < limit);
	*type = (unsigned char)*q++;
	*tree = 0;
	if (*type & BATCH_TREE_FLAG) {
		*type &= ~BATCH_TREE_FLAG;
		q = dec_varint32(q, limit, tree);
		if (!q || *tree == 0) {
			*why = "bad tree id";
			return -1;
		}
	}
	if (*type != KT_PUT && *type != KT_DELETE && *type != KT_RANGE_DEL) {
		*why = "unknown mutation type";
		return -1;
	}
	q = dec_lenprefixed(q, limit, key);
	if (!q) {
		*why = "key runs past the end";
		return -1;
	}
	*value = slice_make(NULL, 0);
	if (*type != KT_DELETE) {
		q = dec_lenprefixed(q, limit, value);
		if (!q) {
			*why = *type == KT_PUT ? "value runs past the end"
					       : "range end key runs past the end";
			return -1;
		}
		/* Tombstones downstream assume start < end (rangedel.h). */
		if (*type == KT_RANGE_DEL && slice_cmp(*key, *value) >= 0) {
			*why = "range tombstone with start >= end";
			return -1;
		}
	}
	*p = q;
	return 0;
}

int batch_check(struct slice rep, uint32_t *count)
{
	if (rep.len < BATCH_HEADER)
		return ERR_CORRUPT("write batch of %zu bytes is shorter than its %d-byte header",
				  rep.len, BATCH_HEADER);

	uint64_t seq = dec_fixed64(rep.data);
	uint32_t want = dec_fixed32(rep.data + 8), n = 0;
	const char *p = rep.data + BATCH_HEADER, *limit = rep.data + rep.len;

	while (p < limit) {
		const char *why = NULL;
		struct slice key, value;
		uint32_t tree;
		int type;

		if (n == want)
			return ERR_CORRUPT("write batch holds more than the %u mutations its "
					  "header counts (at byte %zu)", want,
					  (size_t)(p - rep.data));
		if (parse_one(&p, limit, &tree, &type, &key, &value, &why) < 0)
			return ERR_CORRUPT("write batch damaged at byte %zu (mutation %u of %u): %s",
					  (size_t)(p - rep.data), n, want, why);
		n++;
	}
	if (n != want)
		return ERR_CORRUPT("write batch holds %u mutations but its header counts %u",
				  n, want);
	/* Sequence numbers must stay within the 56 bits of an internal key. */
	if (n > 0 && seq > SEQ_MAX - (n - 1))
		return ERR_CORRUPT("write batch sequence %llu + %u mutations overflows",
				  (unsigned long long)seq, n);
	*count = n;
	return 0;
}

int batch_iterate(struct slice rep, batch_fn fn, void *arg)
{
	uint32_t count;
	int r = batch_check(rep, &count);

	if (r)
		return r;
	return batch_apply(rep, count, fn, arg);
}

int batch_apply(struct slice rep, uint32_t count, batch_fn fn, void *arg)
{
	uint64_t seq = dec_fixed64(rep.data);
	int r;
	const char *p = rep.data + BATCH_HEADER, *limit = rep.data + rep.len;

	for (uint32_t i = 0; i < count; i++) {
		const char *why = NULL;
		struct slice key, value;
		uint32_t tree;
		int type;

		r = parse_one(&p, limit, &tree, &type, &key, &value, &why);
		assert(r == 0);   /* batch_check passed, or the batch is our own */
		r = fn(arg, seq + i, tree, type, key, value);
		if (r)
			return r;
	}
	assert(p == limit);
	return 0;
}
