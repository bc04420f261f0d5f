/*
 * block.c -- building, parsing and iterating the prefix-compressed blocks of
 * SSTables (format in block.h).
 *
 * The builder appends entries to one growing buffer and records a restart
 * point (an entry whose key is stored whole) every restart_interval entries;
 * finish() appends the restart array.  A block holds any number of entries
 * and grows as large as one entry needs, so a 100 MiB value makes a 100 MiB
 * block; offsets are 32 bits, which bounds a block at 4 GiB (the SSTable
 * builder refuses entries that could come near).
 *
 * The reader trusts nothing: blk_parse() checks the restart array once, and
 * the iterator checks every varint and length against the end of the entry
 * area as it decodes, so a damaged block yields -EUCLEAN through status()
 * and never an out-of-bounds read.  In a block of internal keys (an
 * iterator with ikey_cmp_fn: SSTable data, index and tombstone blocks) a
 * key shorter than its 8-byte trailer is damage too, found once as the
 * entry is decoded, so that the comparator, run far more often, need not
 * check lengths.  The iterator keeps the current key in a
 * buffer (prefix compression means keys must be rebuilt) and points the value
 * straight into the block.
 */
#include "block.h"

#include <assert.h>
#include <stdlib.h>

/* ------------------------------------------------------------ builder */

void blk_builder_init(struct block_builder *b, int restart_interval)
{
	assert(restart_interval >= 1);
	memset(b, 0, sizeof(*b));
	b->restart_interval = restart_interval;
}

void blk_builder_free(struct block_builder *b)
{
	buf_free(&b->data);
	buf_free(&b->last_key);
	free(b->restarts);
	b->restarts = NULL;
	b->nrestarts = b->restarts_cap = 0;
}

void blk_builder_reset(struct block_builder *b)
{
	buf_clear(&b->data);
	buf_clear(&b->last_key);
	b->nrestarts = 0;
	b->counter = 0;
	b->entries = 0;
	b->finished = 0;
}

static void push_restart(struct block_builder *b, uint32_t off)
{
	if (b->nrestarts == b->restarts_cap) {
		b->restarts_cap = b->restarts_cap ? b->restarts_cap * 2 : 16;
		b->restarts = xrealloc(b->restarts, b->restarts_cap * sizeof(*b->restarts));
	}
	b->restarts[b->nrestarts++] = off;
}

/*
 * Restart points are recorded lazily, when the entry that starts an interval
 * arrives, so an empty block has no restart at all: its whole encoding is
 * fixed32 0 (four bytes), which blk_parse accepts as a block with no entries.
 */
void blk_add(struct block_builder *b, struct slice key, struct slice value)
{
	size_t shared = 0;

	assert(!b->finished);
	assert(b->counter <= b->restart_interval);
	assert(b->data.len <= UINT32_MAX);
	if (b->entries == 0 || b->counter == b->restart_interval) {
		push_restart(b, (uint32_t)b->data.len);
		b->counter = 0;
	} else {
		size_t n = key.len < b->last_key.len ? key.len : b->last_key.len;
		while (shared < n && key.data[shared] == b->last_key.data[shared])
			shared++;
	}
	assert(key.len <= UINT32_MAX && value.len <= UINT32_MAX);
	buf_reserve(&b->data, 15 + key.len - shared + value.len);
	buf_put_varint32(&b->data, (uint32_t)shared);
	buf_put_varint32(&b->data, (uint32_t)(key.len - shared));
	buf_put_varint32(&b->data, (uint32_t)value.len);
	buf_append(&b->data, key.data + shared, key.len - shared);
	buf_append(&b->data, value.data, value.len);
	/* Only the unshared tail of last_key changes. */
	b->last_key.len = shared;
	buf_append(&b->last_key, key.data + shared, key.len - shared);
	b->counter++;
	b->entries++;
}

size_t blk_size_estimate(const struct block_builder *b)
{
	if (b->finished)
		return b->data.len;
	return b->data.len + 4 * b->nrestarts + 4;
}

struct slice blk_finish(struct block_builder *b)
{
	if (!b->finished) {
		buf_reserve(&b->data, 4 * b->nrestarts + 4);
		for (size_t i = 0; i < b->nrestarts; i++)
			buf_put_fixed32(&b->data, b->restarts[i]);
		buf_put_fixed32(&b->data, (uint32_t)b->nrestarts);
		b->finished = 1;
	}
	return buf_slice(&b->data);
}

/* ------------------------------------------------------------ parsing */

/*
 * Check the restart array as a whole here, once per block load, so the
 * iterator may index it freely: the first restart is 0, they strictly
 * increase, and each leaves room for at least one entry (three one-byte
 * varints) before the array.
 */
int blk_parse(struct slice contents, struct block *out)
{
	uint32_t n, prev = 0;
	size_t limit;

	memset(out, 0, sizeof(*out));
	if (contents.len < 4)
		return ERR_CORRUPT("block of %zu bytes is too short for its trailer", contents.len);
	if (contents.len > UINT32_MAX)
		return ERR_CORRUPT("block of %zu bytes is larger than 4 GiB", contents.len);
	n = dec_fixed32(contents.data + contents.len - 4);
	if (n > (contents.len - 4) / 4)
		return ERR_CORRUPT("block of %zu bytes claims %u restart points", contents.len, n);
	limit = contents.len - 4 - 4 * (size_t)n;
	if (n == 0 && limit != 0)
		return ERR_CORRUPT("block has %zu bytes of entries but no restart point", limit);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = dec_fixed32(contents.data + limit + 4 * (size_t)i);
		if ((i == 0 && r != 0) || (i > 0 && r <= prev) || (size_t)r + 3 > limit)
			return ERR_CORRUPT("block restart point %u at %u is out of order or range",
					  i, r);
		prev = r;
	}
	out->contents = contents;
	out->restart_offset = (uint32_t)limit;
	out->nrestarts = n;
	return 0;
}

/* ------------------------------------------------------------ iterator */

/*
 * The current key lives in the iterator's own small buffer until one does
 * not fit, so neither an iterator on the stack nor a short key costs an
 * allocation.  Room for need bytes in it->key.
 */
static void key_reserve(struct blk_iter *it, size_t need)
{
	size_t cap;
	char *p;

	if (need <= it->key.cap)
		return;
	cap = it->key.cap * 2 > need ? it->key.cap * 2 : need;
	if (it->key.data == it->key_inline) {
		p = xmalloc(cap);
		memcpy(p, it->key.data, it->key.len);
	} else {
		p = xrealloc(it->key.data, cap);
	}
	it->key.data = p;
	it->key.cap = cap;
}

/* The comparator, inline for internal keys (nearly every block): no call per probe. */
static inline int blk_cmp(const struct blk_iter *it, struct slice a, struct slice b)
{
	return it->cmp == ikey_cmp_fn ? ikey_cmp(a, b) : it->cmp(a, b);
}

static inline uint32_t restart_at(const struct blk_iter *it, uint32_t i)
{
	assert(i < it->nrestarts);
	return dec_fixed32(it->restarts + 4 * (size_t)i);
}

static void mark_invalid(struct blk_iter *it)
{
	it->cur = it->next_off = it->limit;
	it->ridx = it->nrestarts;
	buf_clear(&it->key);
	it->value = slice_make(NULL, 0);
}

static void corrupt(struct blk_iter *it, uint32_t off, const char *what)
{
	if (it->status == 0)
		it->status = ERR_CORRUPT("damaged block entry at offset %u: %s", off, what);
	mark_invalid(it);
}

/*
 * Decode the header of the entry at off: shared, unshared and value lengths,
 * every one checked to lie inside [off, limit).  Returns the offset of the
 * key bytes, or 0 on damage (no entry's key can start at offset 0, since
 * three varints precede it).
 */
static uint32_t decode_header(const struct blk_iter *it, uint32_t off, uint32_t *shared,
			      uint32_t *unshared, uint32_t *vlen)
{
	const char *p = it->data + off, *end = it->data + it->limit;

	if ((p = dec_varint32(p, end, shared)) == NULL)
		return 0;
	if ((p = dec_varint32(p, end, unshared)) == NULL)
		return 0;
	if ((p = dec_varint32(p, end, vlen)) == NULL)
		return 0;
	if ((uint64_t)*unshared + *vlen > (uint64_t)(end - p))
		return 0;
	return (uint32_t)(p - it->data);
}

/* Decode the entry at next_off into the current position, using key as the previous key. */
static void parse_next(struct blk_iter *it)
{
	uint32_t off = it->next_off, shared, unshared, vlen, k;

	if (it->status)
		return;
	if (off >= it->limit) {
		/*
		 * The entries end here.  A restart point the walk has not reached
		 * lies inside the last entry: the same disagreement as below, which
		 * a forward walk would otherwise never see, while a backward one
		 * starts from that restart point.
		 */
		if (it->ridx + 1 < it->nrestarts) {
			corrupt(it, off, "a restart point falls inside the last entry");
			return;
		}
		mark_invalid(it);
		return;
	}
	/*
	 * Walking forward lands on every restart point in turn; one that lies
	 * inside the entry just passed means the restarts and the entries
	 * disagree, and prev() would decode garbage from it.
	 */
	while (it->ridx + 1 < it->nrestarts && restart_at(it, it->ridx + 1) <= off) {
		if (restart_at(it, it->ridx + 1) < off) {
			corrupt(it, off, "a restart point falls inside the previous entry");
			return;
		}
		it->ridx++;
	}
	k = decode_header(it, off, &shared, &unshared, &vlen);
	if (k == 0) {
		corrupt(it, off, "lengths run past the end of the entries");
		return;
	}
	if (shared > it->key.len) {
		corrupt(it, off, "shares more bytes than the previous key has");
		return;
	}
	if (shared != 0 && restart_at(it, it->ridx) == off) {
		corrupt(it, off, "restart point does not hold a whole key");
		return;
	}
	if ((uint64_t)shared + unshared < it->min_key) {
		corrupt(it, off, "an internal key shorter than its 8-byte trailer");
		return;
	}
	it->key.len = shared;
	key_reserve(it, (size_t)shared + unshared);
	memcpy(it->key.data + shared, it->data + k, unshared);
	it->key.len = (size_t)shared + unshared;
	it->value = slice_make(it->data + k + unshared, vlen);
	it->cur = off;
	it->next_off = k + unshared + vlen;
}

static void seek_restart(struct blk_iter *it, uint32_t i)
{
	buf_clear(&it->key);
	it->ridx = i;
	it->next_off = restart_at(it, i);
}

/* The whole key stored at restart point i, pointing into the block; 0 on damage. */
static int restart_key(struct blk_iter *it, uint32_t i, struct slice *key)
{
	uint32_t off = restart_at(it, i), shared, unshared, vlen, k;

	k = decode_header(it, off, &shared, &unshared, &vlen);
	if (k == 0 || shared != 0) {
		corrupt(it, off, "restart point does not hold a whole key");
		return 0;
	}
	if (unshared < it->min_key) {
		corrupt(it, off, "an internal key shorter than its 8-byte trailer");
		return 0;
	}
	*key = slice_make(it->data + k, unshared);
	return 1;
}

static int bi_valid(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	return it->status == 0 && it->cur < it->limit;
}

static void bi_seek_first(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	if (it->status || it->nrestarts == 0) {
		mark_invalid(it);
		return;
	}
	seek_restart(it, 0);
	parse_next(it);
}

static void bi_seek_last(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	if (it->status || it->nrestarts == 0) {
		mark_invalid(it);
		return;
	}
	seek_restart(it, it->nrestarts - 1);
	parse_next(it);
	while (it->status == 0 && it->next_off < it->limit)
		parse_next(it);
}

/*
 * Binary search for the last restart point whose key is < target (the
 * first if none is), then scan forward to the first entry >= target.  The
 * scan reads at most one interval plus the entry that ends it.
 */
static void bi_seek(struct iter *base, struct slice target)
{
	struct blk_iter *it = (struct blk_iter *)base;
	uint32_t lo = 0, hi;
	struct slice k;

	if (it->status || it->nrestarts == 0) {
		mark_invalid(it);
		return;
	}
	hi = it->nrestarts - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (!restart_key(it, mid, &k))
			return;
		if (blk_cmp(it, k, target) < 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	seek_restart(it, lo);
	for (;;) {
		parse_next(it);
		if (!bi_valid(base) || blk_cmp(it, buf_slice(&it->key), target) >= 0)
			return;
	}
}

static void bi_next(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	assert(bi_valid(base));
	parse_next(it);
}

void blk_iter_next(struct blk_iter *it)
{
	assert(bi_valid(&it->base));
	parse_next(it);
}

/*
 * Entries can only be decoded forwards, so step back to the restart point
 * before the current entry and scan up to the entry that ends where the
 * current one begins.
 */
static void bi_prev(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;
	uint32_t target = it->cur, r = it->ridx;

	assert(bi_valid(base));
	while (restart_at(it, r) >= target) {
		if (r == 0) {
			mark_invalid(it);
			return;
		}
		r--;
	}
	seek_restart(it, r);
	do {
		parse_next(it);
	} while (it->status == 0 && it->next_off < target);
	/*
	 * The scan must land exactly before target; it cannot overshoot in an
	 * undamaged block because target was reached by the same decoding.
	 */
	if (it->status == 0 && it->next_off != target)
		corrupt(it, it->cur, "entries do not chain to the current one");
}

static struct slice bi_key(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	assert(bi_valid(base));
	return buf_slice(&it->key);
}

static struct slice bi_value(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	assert(bi_valid(base));
	return it->value;
}

static int bi_status(struct iter *base)
{
	return ((struct blk_iter *)base)->status;
}

void blk_iter_release(struct blk_iter *it)
{
	if (it->release)
		it->release(it->release_arg);
	it->release = NULL;
	if (it->key.data != it->key_inline)
		free(it->key.data);
	it->key.data = it->key_inline;
	it->key.cap = sizeof(it->key_inline);
	it->key.len = 0;
}

static void bi_destroy(struct iter *base)
{
	struct blk_iter *it = (struct blk_iter *)base;

	blk_iter_release(it);
	free(it);
}

static const struct iter_ops blk_iter_ops = {
	.valid = bi_valid,
	.seek_first = bi_seek_first,
	.seek_last = bi_seek_last,
	.seek = bi_seek,
	.next = bi_next,
	.prev = bi_prev,
	.key = bi_key,
	.value = bi_value,
	.status = bi_status,
	.destroy = bi_destroy,
	.max_seq = NULL,
};

void blk_iter_init(struct blk_iter *it, const struct block *blk, key_cmp_fn cmp,
		   void (*release)(void *arg), void *release_arg)
{
	it->base.ops = &blk_iter_ops;
	it->key.data = it->key_inline;
	it->key.len = 0;
	it->key.cap = sizeof(it->key_inline);
	it->status = 0;
	it->data = blk->contents.data;
	it->limit = blk->restart_offset;
	it->restarts = blk->contents.data + blk->restart_offset;
	it->nrestarts = blk->nrestarts;
	it->cmp = cmp;
	it->min_key = cmp == ikey_cmp_fn ? IKEY_TRAILER : 0;
	it->release = release;
	it->release_arg = release_arg;
	mark_invalid(it);
}

struct iter *blk_iter_new(const struct block *blk, key_cmp_fn cmp,
			  void (*release)(void *arg), void *release_arg)
{
	struct blk_iter *it = xmalloc(sizeof(*it));

	blk_iter_init(it, blk, cmp, release, release_arg);
	return &it->base;
}
