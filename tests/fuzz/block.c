/*
 * block.c -- fuzz target for block decoding (engine/kv/block.c).
 *   - The input as a block: blk_parse refuses it with -EUCLEAN, or its
 *     iterator walks it forward to the end or to -EUCLEAN; after a clean
 *     forward walk, walking backward from the last entry gives the same
 *     entries in reverse, and when the keys ascend, seeking each key finds
 *     it with its value.
 *   - The input as a block of internal keys (as SSTables read theirs): every
 *     key handed out, walking or seeking, has its 8-byte trailer; a shorter
 *     one is -EUCLEAN.
 *   - The input as entries (length-prefixed keys and values; the first
 *     byte picks the restart interval): built into a block with the real
 *     builder, sorted, they parse and read back exactly, forward, backward
 *     and by seek.
 */
#include "fuzz.h"
#include "block.h"

#include <errno.h>
#include <string.h>

struct entry {
	struct slice key, value;
};

static int cmp_entry(const void *a, const void *b)
{
	return ukey_cmp_fn(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

/* Walk blk forward into keys/values (copies, in *arena); the iterator's status. */
static int walk_forward(const struct block *blk, struct buf *arena, struct entry **out, size_t *n)
{
	struct iter *it = blk_iter_new(blk, ukey_cmp_fn, NULL, NULL);
	size_t cap = 0, *offs = NULL;
	int st;

	*out = NULL;
	*n = 0;
	buf_clear(arena);
	buf_reserve(arena, 1);   /* never a NULL base, even for empty entries */
	/* offsets first: the arena moves as it grows */
	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it), v = iter_value(it);

		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			offs = xrealloc(offs, 2 * cap * sizeof(*offs));
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		offs[2 * *n] = arena->len;
		buf_append(arena, k.data, k.len);
		offs[2 * *n + 1] = arena->len;
		buf_append(arena, v.data, v.len);
		(*out)[*n].key.len = k.len;
		(*out)[*n].value.len = v.len;
		(*n)++;
	}
	for (size_t i = 0; i < *n; i++) {
		(*out)[i].key.data = arena->data + offs[2 * i];
		(*out)[i].value.data = arena->data + offs[2 * i + 1];
	}
	free(offs);
	st = iter_status(it);
	iter_destroy(it);
	return st;
}

/* The block holds exactly e[0..n) (a clean forward walk gave them): check backward and seek. */
static void check_backward_and_seek(const struct block *blk, const struct entry *e, size_t n)
{
	struct iter *it = blk_iter_new(blk, ukey_cmp_fn, NULL, NULL);
	size_t i = n, ascending = 1;

	for (iter_seek_last(it); iter_valid(it); iter_prev(it)) {
		FUZZ_CHECK(i > 0, "walking backward gives more than the %zu entries forward", n);
		i--;
		FUZZ_CHECK(slice_eq(iter_key(it), e[i].key) && slice_eq(iter_value(it), e[i].value),
			   "entry %zu differs backward", i);
	}
	FUZZ_CHECK(iter_status(it) == 0, "backward walk failed (%d) where forward did not",
		   iter_status(it));
	FUZZ_CHECK(i == 0, "walking backward gives %zu entries, forward %zu", n - i, n);

	for (i = 1; i < n; i++)
		if (ukey_cmp_fn(e[i - 1].key, e[i].key) >= 0)
			ascending = 0;
	if (ascending) {
		for (i = 0; i < n; i++) {
			iter_seek(it, e[i].key);
			FUZZ_CHECK(iter_valid(it), "seek to entry %zu finds nothing (%d)", i,
				   iter_status(it));
			FUZZ_CHECK(slice_eq(iter_key(it), e[i].key) &&
				   slice_eq(iter_value(it), e[i].value), "seek to entry %zu lands elsewhere",
				   i);
		}
	}
	iter_destroy(it);
}

static void as_block(const uint8_t *data, size_t size)
{
	struct block blk;
	struct buf arena = { 0 };
	struct entry *e;
	size_t n;
	int r = blk_parse(slice_make(data, size), &blk);

	if (r < 0) {
		FUZZ_CHECK(r == -EUCLEAN, "blk_parse returned %d", r);
		return;
	}
	r = walk_forward(&blk, &arena, &e, &n);
	FUZZ_CHECK(r == 0 || r == -EUCLEAN, "iterator status %d", r);
	if (r == 0)
		check_backward_and_seek(&blk, e, n);
	free(e);
	buf_free(&arena);
}

static void as_entries(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	int interval = (int)(fuzz_byte(&in) % 16) + 1;
	struct entry *e = NULL, *got;
	size_t n = 0, cap = 0, m = 0, ngot;
	struct block_builder b;
	struct block blk;
	struct buf arena = { 0 };
	int r;

	while (in.n > 0) {
		size_t kl, vl;
		const uint8_t *k = fuzz_bytes(&in, 255, &kl), *v = fuzz_bytes(&in, 255, &vl);

		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			e = xrealloc(e, cap * sizeof(*e));
		}
		e[n].key = slice_make(k, kl);
		e[n].value = slice_make(v, vl);
		n++;
	}
	if (n)
		qsort(e, n, sizeof(*e), cmp_entry);
	/* keep the first of equal keys: the builder takes each key once */
	for (size_t i = 0; i < n; i++)
		if (m == 0 || ukey_cmp_fn(e[m - 1].key, e[i].key) != 0)
			e[m++] = e[i];
	n = m;

	blk_builder_init(&b, interval);
	for (size_t i = 0; i < n; i++)
		blk_add(&b, e[i].key, e[i].value);
	r = blk_parse(blk_finish(&b), &blk);
	FUZZ_CHECK(r == 0, "a built block does not parse (%d)", r);
	r = walk_forward(&blk, &arena, &got, &ngot);
	FUZZ_CHECK(r == 0, "a built block reads with error %d", r);
	FUZZ_CHECK(ngot == n, "%zu entries built, %zu read", n, ngot);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(slice_eq(got[i].key, e[i].key) && slice_eq(got[i].value, e[i].value),
			   "entry %zu reads back different", i);
	check_backward_and_seek(&blk, e, n);
	blk_builder_free(&b);
	buf_free(&arena);
	free(got);
	free(e);
}

/* Every key it of a block of internal keys hands out has its trailer; its status. */
static int ikey_walk(struct iter *it, int forward)
{
	for (forward ? iter_seek_first(it) : iter_seek_last(it); iter_valid(it);
	     forward ? iter_next(it) : iter_prev(it))
		FUZZ_CHECK(iter_key(it).len >= IKEY_TRAILER, "a key of %zu bytes from a block of "
			   "internal keys", iter_key(it).len);
	return iter_status(it);
}

/*
 * The input as a block of internal keys, read as SSTable blocks are (with
 * ikey_cmp_fn, whose comparisons do not check lengths): forward, backward
 * and by seeks to keys made of the input's first bytes, every key handed
 * out has its 8-byte trailer, and a shorter one ends the walk with
 * -EUCLEAN; no comparison reads outside a key (the sanitizers check that).
 */
static void as_ikey_block(const uint8_t *data, size_t size)
{
	struct block blk;
	struct buf target = BUF_INIT;
	struct iter *it;
	int r;

	if (blk_parse(slice_make(data, size), &blk) < 0)
		return;
	it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
	r = ikey_walk(it, 1);
	FUZZ_CHECK(r == 0 || r == -EUCLEAN, "forward walk: status %d", r);
	r = ikey_walk(it, 0);
	FUZZ_CHECK(r == 0 || r == -EUCLEAN, "backward walk: status %d", r);
	iter_destroy(it);
	for (size_t n = 0; n <= 16 && n <= size; n += 4) {
		it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
		buf_clear(&target);
		ikey_append(&target, slice_make(data, n), n, KT_SEEK);
		iter_seek(it, buf_slice(&target));
		FUZZ_CHECK(!iter_valid(it) || iter_key(it).len >= IKEY_TRAILER, "seek: a key of %zu "
			   "bytes from a block of internal keys", iter_key(it).len);
		r = iter_status(it);
		FUZZ_CHECK(r == 0 || r == -EUCLEAN, "seek: status %d", r);
		iter_destroy(it);
	}
	buf_free(&target);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	as_block(data, size);
	as_ikey_block(data, size);
	as_entries(data, size);
	return 0;
}
