/*
 * sst.c -- fuzz target for opening SSTables (engine/kv/sst.c): footer,
 * index, filter, range-del and properties decoding, then reading.
 *
 * Every block of a table is checksummed, so bytes damaged at random are
 * nearly always refused at the checksum and the decoders behind it would
 * go unexplored.  So the input mostly describes a table and its damage:
 *
 *     byte  options: bit 7 raw (the rest of the input is the file itself),
 *           bits 0-3 restart interval, bits 4-5 block size, bit 6 zstd
 *     byte  number of entries, then per entry: key (length byte + bytes),
 *           value (length byte + bytes), a type/seq byte
 *     byte  number of range tombstones, then per tombstone: start, end, seq byte
 *     the rest: edits of 4 bytes -- which part (a block found through the
 *           footer or the index, the footer, or the whole file), offset,
 *           offset, xor -- after each of which the damaged part's checksum
 *           is made right again (not for the whole file)
 *
 * The table is written by the real builder into memory and opened through
 * an environment whose file reads that memory.  Invariants:
 *   - undamaged, it opens, gives back exactly its entries in order (plain
 *     and keys-only), finds each by sst_get, and sst_verify finds nothing;
 *   - damaged (or raw), sst_open returns an error or a table whose
 *     iterators, forward and backward, hand out valid internal keys in
 *     strictly increasing order (or stop with an error), whose lookups and
 *     verification return, and which verifies clean only if a forward walk
 *     reads it whole.
 */
#include "fuzz.h"
#include "block.h"
#include "crc32c.h"
#include "sst.h"

#include <errno.h>
#include <string.h>

struct entry {
	struct slice ukey, value;
	uint64_t seq;
	int type;
	struct buf ikey;
};

static int cmp_entry(const void *a, const void *b)
{
	return ikey_cmp(buf_slice(&((const struct entry *)a)->ikey),
			buf_slice(&((const struct entry *)b)->ikey));
}

/* A part of the file that an edit may damage. */
struct part {
	uint64_t off, size;   /* the block without its trailer */
};

/* The footer's handles and the index's, read from an undamaged table. */
static size_t find_parts(const struct buf *file, struct part *parts, size_t max)
{
	const char *footer = file->data + file->len - SST_FOOTER_SIZE;
	size_t n = 0;
	struct block idx;
	struct iter *it;

	for (int i = 0; i < 4 && n < max; i++) {
		parts[n].off = dec_fixed64(footer + 16 * i);
		parts[n].size = dec_fixed64(footer + 16 * i + 8);
		n++;
	}
	/* the index is the fourth: its values begin with the data blocks' handles */
	if (blk_parse(slice_make(file->data + parts[3].off, parts[3].size), &idx) < 0)
		return n;
	it = blk_iter_new(&idx, ikey_cmp_fn, NULL, NULL);
	for (iter_seek_first(it); iter_valid(it) && n < max; iter_next(it)) {
		struct slice v = iter_value(it);
		const char *p = v.data, *end = v.data + v.len;

		if ((p = dec_varint64(p, end, &parts[n].off)) && dec_varint64(p, end, &parts[n].size))
			n++;
	}
	iter_destroy(it);
	return n;
}

/* Checksum part again after its bytes changed, as the builder would have. */
static void fix_trailer(struct buf *file, struct part p)
{
	uint32_t crc;

	if (p.off + p.size + SST_TRAILER > file->len)
		return;
	crc = crc32c(file->data + p.off, p.size + 1);
	enc_fixed32(file->data + p.off + p.size + 1, crc32c_mask(crc));
}

static void damage(struct buf *file, struct fuzz_in *in)
{
	struct part parts[64];
	size_t nparts = find_parts(file, parts, 64);

	while (in->n >= 4) {
		unsigned which = fuzz_byte(in) % (nparts + 2);
		unsigned off = fuzz_byte(in);
		uint8_t x;

		off = off << 8 | fuzz_byte(in);
		x = (uint8_t)fuzz_byte(in);
		if (which == nparts) {                  /* anywhere, checksums left as they are */
			file->data[off % file->len] ^= (char)x;
		} else if (which == nparts + 1) {       /* the footer, its checksum made right */
			char *footer = file->data + file->len - SST_FOOTER_SIZE;

			footer[off % 68] ^= (char)x;
			enc_fixed32(footer + 68, crc32c_mask(crc32c(footer, 68)));
		} else {                                /* a block or its compression byte */
			struct part p = parts[which];

			if (p.off + p.size + SST_TRAILER > file->len)
				continue;
			file->data[p.off + off % (p.size + 1)] ^= (char)x;
			fix_trailer(file, p);
		}
	}
}

/* Walk t with flags; keys must be valid and strictly increasing (decreasing backward). */
static int check_order(struct sst *t, unsigned flags, int backward, size_t *count)
{
	struct iter *it = sst_iter_new(t, flags);
	struct buf last = { 0 };
	int have = 0, st;

	*count = 0;
	for (backward ? iter_seek_last(it) : iter_seek_first(it); iter_valid(it);
	     backward ? iter_prev(it) : iter_next(it)) {
		struct slice k = iter_key(it);

		FUZZ_CHECK(ikey_valid(k), "an iterator hands out a key of %zu bytes", k.len);
		FUZZ_CHECK(iter_value_size(it) >= iter_value(it).len, "value longer than its size");
		if (have) {
			int c = ikey_cmp(buf_slice(&last), k);
			FUZZ_CHECK(backward ? c > 0 : c < 0, "keys out of order %s (flags %u)",
				   backward ? "backward" : "forward", flags);
		}
		buf_set(&last, k.data, k.len);
		have = 1;
		(*count)++;
	}
	st = iter_status(it);
	FUZZ_CHECK(st <= 0, "iterator status %d", st);
	iter_destroy(it);
	buf_free(&last);
	return st;
}

static void no_report(void *arg, uint64_t off, const char *msg)
{
}

/* A damaged or raw table: any error, but nothing out of order. */
static void check_damaged(const struct buf *file, const struct entry *e, size_t n)
{
	struct sst *t;
	struct buf val = { 0 };
	size_t count, count_ko;
	int r = sst_open(fuzz_file_new((const uint8_t *)file->data, file->len), file->len, "fuzz.sst",
			 NULL, NULL, 0, &t);
	int st, st_ko;

	if (r < 0) {
		FUZZ_CHECK(t == NULL, "a failed open hands out a table");
		return;
	}
	FUZZ_CHECK(r == 0, "sst_open returned %d", r);
	st = check_order(t, 0, 0, &count);
	st_ko = check_order(t, SST_ITER_KEYS_ONLY, 0, &count_ko);
	check_order(t, 0, 1, &count);
	check_order(t, SST_ITER_KEYS_ONLY, 1, &count);
	for (size_t i = 0; i < n; i++) {
		int type;
		uint64_t seq;

		r = sst_get(t, e[i].ukey, SEQ_MAX, &type, &seq, &val, NULL);
		FUZZ_CHECK(r <= 1, "sst_get returned %d", r);
		FUZZ_CHECK(r != 1 || type == KT_PUT || type == KT_DELETE, "sst_get gives type %d", type);
	}
	r = sst_verify(t, no_report, NULL);
	FUZZ_CHECK(r <= 0, "sst_verify returned %d", r);
	if (r == 0)
		FUZZ_CHECK(st == 0 && st_ko == 0, "verified clean but reads with error %d / %d", st,
			   st_ko);
	buf_free(&val);
	sst_close(t);
}

/* The undamaged table: exactly its entries. */
static void check_whole(const struct buf *file, const struct entry *e, size_t n)
{
	struct sst *t;
	struct iter *it;
	struct buf val = { 0 };
	size_t i = 0;
	int r = sst_open(fuzz_file_new((const uint8_t *)file->data, file->len), file->len, "fuzz.sst",
			 NULL, NULL, 0, &t);

	FUZZ_CHECK(r == 0, "a table just built does not open (%d)", r);
	for (unsigned flags = 0; flags <= SST_ITER_KEYS_ONLY; flags += SST_ITER_KEYS_ONLY) {
		it = sst_iter_new(t, flags);
		for (i = 0, iter_seek_first(it); iter_valid(it); iter_next(it), i++) {
			struct slice v = iter_value(it);

			FUZZ_CHECK(i < n, "more entries read than written");
			FUZZ_CHECK(slice_eq(iter_key(it), buf_slice(&e[i].ikey)), "entry %zu: key", i);
			FUZZ_CHECK(iter_value_size(it) == e[i].value.len, "entry %zu: value size", i);
			FUZZ_CHECK(v.len <= e[i].value.len &&
				   (flags || v.len == e[i].value.len) &&
				   (v.len >= SST_VALUE_PREFIX || v.len == e[i].value.len) &&
				   (v.len == 0 || memcmp(v.data, e[i].value.data, v.len) == 0),
				   "entry %zu: value (flags %u)", i, flags);
		}
		FUZZ_CHECK(iter_status(it) == 0 && i == n, "%zu of %zu entries read (%d)", i, n,
			   iter_status(it));
		iter_destroy(it);
	}
	for (i = 0; i < n; i++) {
		int type;
		uint64_t seq;

		r = sst_get(t, e[i].ukey, e[i].seq, &type, &seq, &val, NULL);
		FUZZ_CHECK(r == 1 && type == e[i].type && seq == e[i].seq &&
			   slice_eq(buf_slice(&val), e[i].value), "sst_get of entry %zu (%d): type %d seq %llu, want %d %llu", i, r, type, (unsigned long long)seq, e[i].type, (unsigned long long)e[i].seq);
	}
	FUZZ_CHECK(sst_verify(t, no_report, NULL) == 0, "a table just built does not verify");
	buf_free(&val);
	sst_close(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned opt = fuzz_byte(&in), nent, ndel;
	struct sst_options o = {
		.block_size = (size_t)64 << (2 * ((opt >> 4) & 3)),
		.restart_interval = (int)(opt & 15) + 1,
		.compression_level = opt & 64 ? 1 : 0,
		.bloom_bits_per_key = 10,
	};
	struct entry *e;
	struct buf file = { 0 };
	struct env_file *f;
	struct sst_builder *b;
	struct sst_props props;
	size_t n = 0;
	int r;

	if (size > 1 << 16)
		return 0;
	if (opt & 128) {
		file.data = (char *)in.p;
		file.len = in.n;
		check_damaged(&file, NULL, 0);
		return 0;
	}
	nent = fuzz_byte(&in);
	e = xcalloc(nent + 1, sizeof(*e));
	for (unsigned i = 0; i < nent; i++) {
		size_t kl, vl;
		const uint8_t *k = fuzz_bytes(&in, 255, &kl), *v = fuzz_bytes(&in, 255, &vl);
		unsigned ts = fuzz_byte(&in);

		e[n].ukey = slice_make(k, kl);
		e[n].value = slice_make(v, vl);
		e[n].type = ts & 1 ? KT_DELETE : KT_PUT;
		e[n].seq = (ts >> 1) + 1;
		if (e[n].type == KT_DELETE)
			e[n].value = slice_make(NULL, 0);
		ikey_append(&e[n].ikey, e[n].ukey, e[n].seq, e[n].type);
		n++;
	}
	if (n)
		qsort(e, n, sizeof(*e), cmp_entry);
	/* one entry per user key and sequence number, as the engine writes them */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && slice_eq(e[m - 1].ukey, e[i].ukey) && e[m - 1].seq == e[i].seq) {
			buf_free(&e[i].ikey);
			continue;
		}
		e[m++] = e[i];
	}
	n = m;

	f = fuzz_file_append(&file);
	b = sst_builder_new(f, &o, "fuzz.sst");
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(sst_builder_add(b, buf_slice(&e[i].ikey), e[i].value) == 0, "builder add");
	ndel = fuzz_byte(&in) % 4;
	for (unsigned i = 0; i < ndel; i++) {
		size_t sl, el;
		const uint8_t *s = fuzz_bytes(&in, 32, &sl), *en = fuzz_bytes(&in, 32, &el);
		uint64_t seq = fuzz_byte(&in) + 1;

		if (ukey_cmp_fn(slice_make(s, sl), slice_make(en, el)) < 0)
			sst_builder_add_range_del(b, slice_make(s, sl), slice_make(en, el), seq);
	}
	r = sst_builder_finish(b, &props);
	FUZZ_CHECK(r == 0, "the builder fails (%d)", r);
	sst_props_free(&props);
	sst_builder_free(b);
	env_close(f);

	check_whole(&file, e, n);
	if (in.n >= 4) {
		damage(&file, &in);
		check_damaged(&file, e, n);
	}
	for (size_t i = 0; i < n; i++)
		buf_free(&e[i].ikey);
	free(e);
	buf_free(&file);
	return 0;
}
