/*
 * sst.c -- writing and reading SSTables (layout in sst.h).
 *
 * The builder streams entries into a data block and writes the block out,
 * zstd-compressed when that saves at least an eighth (choose_form), whenever it reaches
 * the target size.  Everything needed to find a key without scanning (the
 * bloom filter over user keys, the range tombstones, the properties and the
 * index of data blocks) is written after the data, then the fixed-size
 * footer that points at those four blocks.  A reader therefore starts at the
 * end: footer, then the four metadata blocks, all checked and kept in memory
 * for the table's lifetime.  Data blocks are read on demand through the
 * shared block cache, each checked against its CRC before it is trusted;
 * where the environment can map the file, a block is read in place from
 * the map rather than copied by pread.
 *
 * The index holds, per data block, a separator key: >= every key of the block
 * and < every key of the next one, shortened where possible (dbformat.h) so
 * the index stays small.  Lookups binary-search the index, then the block.
 *
 * Every failure on the read side is reported with the table's name and the
 * offset of the block involved; corruption is -EUCLEAN and is never turned
 * into data.
 */
#include "sst.h"
#include "block.h"
#include "bloom.h"
#include "crc32c.h"
#include "mapguard.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * For ZSTD_c_literalCompressionMode (zstd 1.4.5 on): whether a frame's
 * literals are entropy-coded.  Where the library refuses it, every block is
 * compressed in the one form zstd picks for the level.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#if ZSTD_VERSION_NUMBER >= 10501
#define LITERALS_RAW ZSTD_ps_disable
#define LITERALS_CODED ZSTD_ps_auto
#else
#define LITERALS_RAW ZSTD_lcm_uncompressed
#define LITERALS_CODED ZSTD_lcm_auto
#endif

/* sst_set_always_two_forms: read by each new builder */
static int always_two_forms;

/*
 * Limits that keep every block below the 4 GiB its 32-bit offsets allow:
 * one entry (key and value) at most SST_MAX_ENTRY bytes, so a block is at
 * most block_size plus one entry.  The reader refuses to allocate more than
 * SST_MAX_BLOCK for one block, so damage that slipped past a checksum cannot
 * make it ask for 4 GiB.
 */
#define SST_MAX_ENTRY ((size_t)1 << 30)
#define SST_MAX_BLOCK_SIZE ((size_t)1 << 30)   /* largest target block size accepted */
#define SST_MAX_BLOCK ((uint64_t)1 << 31)

enum { COMP_NONE = 0, COMP_ZSTD = 1 };

struct blk_handle {
	uint64_t off, size;
};

static void put_handle(struct buf *b, struct blk_handle h)
{
	buf_put_varint64(b, h.off);
	buf_put_varint64(b, h.size);
}

/*
 * A single-entry record (sst.h): the length of the one value of a data
 * block and its first bytes.  Its key is the index entry's key.
 */
struct idx_record {
	uint64_t vlen;
	struct slice prefix;     /* min(vlen, SST_VALUE_PREFIX) bytes, into the index block */
};

/*
 * Decode an index entry's value: the handle, then either nothing (*has_rec
 * = 0) or a single-entry record that fills the rest exactly.  0 on damage.
 * Whether a record may be there at all (version 2 only) is check_index's
 * business, done once at open.
 */
static int get_index_value(struct slice v, struct blk_handle *h, int *has_rec,
			   struct idx_record *rec)
{
	const char *p = v.data, *end = v.data + v.len;

	*has_rec = 0;
	p = dec_varint64(p, end, &h->off);
	if (p)
		p = dec_varint64(p, end, &h->size);
	if (!p)
		return 0;
	if (p == end)
		return 1;
	p = dec_varint64(p, end, &rec->vlen);
	if (!p || rec->vlen > SST_MAX_ENTRY)
		return 0;
	rec->prefix = slice_make(p, rec->vlen < SST_VALUE_PREFIX ? rec->vlen : SST_VALUE_PREFIX);
	if ((size_t)(end - p) != rec->prefix.len)
		return 0;
	*has_rec = 1;
	return 1;
}

/* The handle of an index entry's value (a record after it is allowed); 0 on damage. */
static int get_handle(struct slice v, struct blk_handle *h)
{
	struct idx_record rec;
	int has_rec;

	return get_index_value(v, h, &has_rec, &rec);
}

/*
 * The properties block, one row per field, kept in name order because the
 * block format requires increasing keys.  Counts are varint64; the two keys
 * are stored as their raw bytes.
 */
enum { PROP_U64, PROP_KEY };
static const struct prop_field {
	const char *name;
	size_t off;
	int kind;
} prop_fields[] = {
	{ "data_bytes", offsetof(struct sst_props, data_bytes), PROP_U64 },
	{ "largest_key", offsetof(struct sst_props, largest), PROP_KEY },
	{ "largest_seq", offsetof(struct sst_props, largest_seq), PROP_U64 },
	{ "num_deletes", offsetof(struct sst_props, num_deletes), PROP_U64 },
	{ "num_entries", offsetof(struct sst_props, num_entries), PROP_U64 },
	{ "num_range_dels", offsetof(struct sst_props, num_range_dels), PROP_U64 },
	{ "raw_key_bytes", offsetof(struct sst_props, raw_key_bytes), PROP_U64 },
	{ "raw_value_bytes", offsetof(struct sst_props, raw_value_bytes), PROP_U64 },
	{ "smallest_key", offsetof(struct sst_props, smallest), PROP_KEY },
	{ "smallest_seq", offsetof(struct sst_props, smallest_seq), PROP_U64 },
};
#define NPROPS (sizeof(prop_fields) / sizeof(prop_fields[0]))

void sst_props_free(struct sst_props *p)
{
	buf_free(&p->smallest);
	buf_free(&p->largest);
}

static void props_copy(struct sst_props *dst, const struct sst_props *src)
{
	*dst = *src;
	memset(&dst->smallest, 0, sizeof(dst->smallest));
	memset(&dst->largest, 0, sizeof(dst->largest));
	buf_set(&dst->smallest, src->smallest.data, src->smallest.len);
	buf_set(&dst->largest, src->largest.data, src->largest.len);
}

static void oom_abort(const char *what)
{
	fprintf(stderr, "smolfs: out of memory creating %s\n", what);
	abort();
}

/* ------------------------------------------------------------ builder */

struct pending_tomb {
	size_t start_off, start_len, end_off, end_len;   /* into tomb_keys */
	uint64_t seq;
};

struct sst_builder {
	struct env_file *f;          /* not owned */
	struct sst_options o;
	char *name;
	uint64_t offset;             /* bytes appended to f so far */
	int status;                  /* first error; every later call returns it */
	int finished;
	struct block_builder data, index;
	struct buf last_key;
	/* A data block was just written; its index entry waits for the next key. */
	int pending_index;
	struct blk_handle pending;
	int pending_single;          /* ... and it holds one entry: the last one added */
	uint64_t last_vlen;          /* the last entry's value length and first bytes */
	char last_prefix[SST_VALUE_PREFIX];
	uint64_t *hashes;            /* bloom_hash of each distinct user key */
	size_t nhashes, hashes_cap;
	struct buf tomb_keys;
	struct pending_tomb *tombs;
	size_t ntombs, tombs_cap;
	ZSTD_CCtx *cctx;             /* NULL when compression is off */
	int two_forms;               /* try literals raw and entropy-coded (write_block) */
	int always_two_forms;        /* sst_set_always_two_forms */
	uint64_t nblocks, ncoded;    /* blocks compressed, and tried with coded literals too */
	struct buf scratch;          /* the compressed form of the block being written */
	struct buf scratch2;         /* ... and its other form, when two are tried */
	struct buf out;              /* written bytes not yet appended to f (see out_append) */
	struct sst_props props;
};

/*
 * Bytes are gathered and handed to the file in appends of about this size,
 * rather than two (block, trailer) per block: a flush or compaction writes
 * tens of thousands of small blocks, and each append is a system call.
 */
#define SST_WRITE_BUFFER ((size_t)64 << 10)

/* Hand the gathered bytes to the file. */
static int out_flush(struct sst_builder *b)
{
	int r = 0;

	if (b->out.len)
		r = env_append(b->f, b->out.data, b->out.len);
	buf_clear(&b->out);
	if (r < 0)
		b->status = r;
	return r;
}

/* Append n bytes to the file, through the buffer unless they are big. */
static int out_append(struct sst_builder *b, const void *p, size_t n)
{
	int r;

	if (b->out.len + n > SST_WRITE_BUFFER && (r = out_flush(b)) < 0)
		return r;
	if (n >= SST_WRITE_BUFFER) {
		r = env_append(b->f, p, n);
		if (r < 0)
			b->status = r;
		return r;
	}
	buf_append(&b->out, p, n);
	return 0;
}

struct sst_builder *sst_builder_new(struct env_file *f, const struct sst_options *o,
				    const char *name)
{
	struct sst_builder *b = xcalloc(1, sizeof(*b));

	b->f = f;
	b->o = *o;
	/* Unset options take the defaults of kv.h rather than building odd tables. */
	if (b->o.block_size == 0)
		b->o.block_size = 4096;
	if (b->o.block_size > SST_MAX_BLOCK_SIZE)
		b->o.block_size = SST_MAX_BLOCK_SIZE;
	if (b->o.restart_interval < 1)
		b->o.restart_interval = 16;
	if (b->o.compression_level > ZSTD_maxCLevel())
		b->o.compression_level = ZSTD_maxCLevel();
	if (b->o.compression_level < ZSTD_minCLevel())
		b->o.compression_level = ZSTD_minCLevel();
	b->name = xstrdup(name);
	blk_builder_init(&b->data, b->o.restart_interval);
	/* Interval 1: every index key is a restart point, so a seek is one binary search. */
	blk_builder_init(&b->index, 1);
	if (b->o.compression_level != 0) {
		b->cctx = ZSTD_createCCtx();
		if (!b->cctx)
			oom_abort("a zstd compression context");
		if (ZSTD_isError(ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_compressionLevel,
							b->o.compression_level)))
			oom_abort("a zstd compression level");
		/* fast levels never entropy-code literals: one form is all there is */
		b->always_two_forms = always_two_forms;
		b->two_forms = b->o.compression_level > 0 &&
			       !ZSTD_isError(ZSTD_CCtx_setParameter(b->cctx,
					ZSTD_c_literalCompressionMode, LITERALS_RAW));
	}
	return b;
}

void sst_set_always_two_forms(int on)
{
	always_two_forms = on;
}

void sst_builder_forms(const struct sst_builder *b, uint64_t *blocks, uint64_t *coded)
{
	*blocks = b->nblocks;
	*coded = b->ncoded;
}

void sst_builder_free(struct sst_builder *b)
{
	if (!b)
		return;
	blk_builder_free(&b->data);
	blk_builder_free(&b->index);
	buf_free(&b->last_key);
	buf_free(&b->tomb_keys);
	buf_free(&b->scratch);
	buf_free(&b->scratch2);
	buf_free(&b->out);
	free(b->hashes);
	free(b->tombs);
	ZSTD_freeCCtx(b->cctx);
	sst_props_free(&b->props);
	free(b->name);
	free(b);
}

uint64_t sst_builder_file_size(const struct sst_builder *b)
{
	return b->offset + (blk_empty(&b->data) ? 0 : blk_size_estimate(&b->data));
}

uint64_t sst_builder_entries(const struct sst_builder *b)
{
	return b->props.num_entries;
}

/*
 * Compress raw into *out (cleared first): the varint32 uncompressed length,
 * then one zstd frame made with the context's parameters.  0 if zstd fails.
 */
static int compress_into(ZSTD_CCtx *cctx, struct slice raw, struct buf *out)
{
	size_t bound = ZSTD_compressBound(raw.len), n;

	assert(raw.len <= UINT32_MAX);
	buf_clear(out);
	buf_reserve(out, 5 + bound);
	buf_put_varint32(out, (uint32_t)raw.len);
	n = ZSTD_compress2(cctx, out->data + out->len, bound, raw.data, raw.len);
	if (ZSTD_isError(n))
		return 0;
	out->len += n;
	return 1;
}

/*
 * log2(x) in 1/256ths of a bit, rounded down, for x >= 1: the integer part
 * from the highest bit, eight fraction bits by squaring the mantissa (kept
 * in [1, 2) with 30 fraction bits).
 */
static uint64_t log2_q8(uint64_t x)
{
	uint64_t r = 0, m;
	int e = 63 - __builtin_clzll(x);

	m = e >= 30 ? x >> (e - 30) : x << (30 - e);
	for (int i = 0; i < 8; i++) {
		m = (m * m) >> 30;
		r <<= 1;
		if (m >= (uint64_t)2 << 30) {
			m >>= 1;
			r |= 1;
		}
	}
	return ((uint64_t)e << 8) | r;
}

/*
 * log2_q8 of the counts a block's literals give most often, computed once:
 * run for every symbol of every block, the loop above took an eighth of
 * the compaction thread's CPU (perf of smolbench's fillrandom and compact,
 * 1 KiB values).
 */
#define LOG2_TABLE 8192
static uint16_t log2_table[LOG2_TABLE];
static pthread_once_t log2_once = PTHREAD_ONCE_INIT;

static void log2_fill(void)
{
	for (uint64_t x = 1; x < LOG2_TABLE; x++)
		log2_table[x] = (uint16_t)log2_q8(x);
}

/*
 * The most that entropy coding can save on the literals of a zstd frame
 * that was made with raw literals, in bytes: the literal bytes less their
 * order-0 entropy (no code does better than the entropy of the bytes it
 * codes alone, and zstd codes literals so, with a table on top).  The
 * literals are read where the frame format (RFC 8878) puts them: a raw
 * block's bytes, or the raw literals section that opens a compressed
 * block.  Returns -1 for a frame not as expected (the caller then tries
 * the coded form anyway).
 */
static int64_t literal_savings(const unsigned char *f, size_t len)
{
	uint32_t count[256] = { 0 };
	uint64_t n = 0, bits;
	size_t pos, hdr;
	int fhd, last = 0;
	static const size_t fcs_size[4] = { 0, 2, 4, 8 };
	static const size_t did_size[4] = { 0, 1, 2, 4 };

	if (len < 6 || f[0] != 0x28 || f[1] != 0xb5 || f[2] != 0x2f || f[3] != 0xfd)
		return -1;
	fhd = f[4];
	pos = 5 + (fhd & 0x20 ? 0 : 1) + did_size[fhd & 3] +
	      ((fhd >> 6) == 0 ? (fhd & 0x20 ? 1 : 0) : fcs_size[fhd >> 6]);
	while (!last) {
		uint32_t h, type, size;
		const unsigned char *lit = NULL;
		size_t nlit = 0;

		if (pos + 3 > len)
			return -1;
		h = (uint32_t)f[pos] | (uint32_t)f[pos + 1] << 8 | (uint32_t)f[pos + 2] << 16;
		pos += 3;
		last = (int)(h & 1);
		type = (h >> 1) & 3;
		size = h >> 3;
		if (type == 0) {             /* raw block: all of it is literals */
			lit = f + pos;
			nlit = size;
		} else if (type == 2) {      /* compressed: its literals section first */
			uint32_t b0;

			if (size < 1 || pos + size > len)
				return -1;
			b0 = f[pos];
			if ((b0 & 3) == 0) {         /* raw literals */
				switch ((b0 >> 2) & 3) {
				case 1:
					hdr = 2;
					nlit = size >= 2 ? (b0 >> 4) + ((uint32_t)f[pos + 1] << 4) : 0;
					break;
				case 3:
					hdr = 3;
					nlit = size >= 3 ? (b0 >> 4) + ((uint32_t)f[pos + 1] << 4) +
						((uint32_t)f[pos + 2] << 12) : 0;
					break;
				default:
					hdr = 1;
					nlit = b0 >> 3;
				}
				if (hdr + nlit > size)
					return -1;
				lit = f + pos + hdr;
			} else if ((b0 & 3) != 1) {  /* coded: not the frame asked for */
				return -1;
			}
		} else if (type != 1) {      /* reserved */
			return -1;
		}
		if (type != 1 && pos + size > len)
			return -1;
		for (size_t i = 0; i < nlit; i++)
			count[lit[i]]++;
		n += nlit;
		pos += type == 1 ? 1 : size;  /* an RLE block stores one byte */
	}
	if (n == 0)
		return 0;
	/* entropy in bits, as n log2 n - sum c log2 c, each term rounded down */
	pthread_once(&log2_once, log2_fill);
	bits = n * log2_q8(n);
	for (int c = 0; c < 256; c++)
		if (count[c])
			bits -= count[c] * (count[c] < LOG2_TABLE ? log2_table[count[c]]
					    : log2_q8(count[c]));
	/*
	 * Each term's rounding is less than 1/256 bit a byte, so the sum may
	 * exceed the entropy by up to n/256 bits: taken off, the estimate is
	 * never above it, and the saving never below the true bound.
	 */
	bits = bits > n ? bits - n : 0;
	return (int64_t)n - (int64_t)(bits / 256 / 8);
}

/*
 * The stored form of a block: raw, or a zstd form that pays for what it
 * costs readers.  Every decoding stage must save at least an eighth of the
 * raw size to be kept: compression at all (else the block is stored plain),
 * and, on top of that, zstd's entropy coding of the literals (the bytes no
 * match covers).  Decoding Huffman-coded literals is most of what zstd
 * costs a reader -- on half-random text in 4 KiB blocks it made
 * decompression about five times slower while saving 8% of the block -- so
 * where a level entropy-codes (levels 1 and up), the block is compressed
 * with literals raw first and the entropy-coded form is kept only if it is
 * smaller by another eighth.  The second compression is skipped where the
 * literals of the first cannot save that much (literal_savings): on
 * db_bench-style values (random printable text, about 6.6 bits a byte) it
 * never can, and compressing twice cost flushes and compactions a fifth to
 * a half more CPU.  At zstd's greedy and lazy levels the matches do not
 * depend on how literals are coded, so the skip changes no stored byte
 * (tests/kv_sst.c compares tables built both ways); the optimal parsers of
 * levels 16 and up weigh literal costs, and there it is a close estimate.
 * Returns the form in *stored and its compression byte.
 */
static int choose_form(struct sst_builder *b, struct slice raw, struct slice *stored)
{
	size_t eighth = raw.len / 8, best;
	int have = 0;

	*stored = raw;
	best = raw.len - eighth;   /* what compression must reach to be kept at all */
	b->nblocks++;
	if (b->two_forms) {
		int made;

		ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_literalCompressionMode, LITERALS_RAW);
		made = compress_into(b->cctx, raw, &b->scratch2);
		if (made && b->scratch2.len <= best) {
			*stored = buf_slice(&b->scratch2);
			best = b->scratch2.len >= eighth ? b->scratch2.len - eighth : 0;
			have = 1;
		}
		ZSTD_CCtx_setParameter(b->cctx, ZSTD_c_literalCompressionMode, LITERALS_CODED);
		if (made && !b->always_two_forms) {
			/* the frame follows compress_into's varint of the raw length */
			size_t skip = (size_t)varint_length(raw.len);
			int64_t can = literal_savings((const unsigned char *)b->scratch2.data + skip,
						      b->scratch2.len - skip);

			/* coded, the frame shrinks by at most `can`: it must reach best */
			if (can >= 0 && b->scratch2.len - (size_t)can > best)
				return have ? COMP_ZSTD : COMP_NONE;
		}
	}
	if (b->two_forms)
		b->ncoded++;
	if (compress_into(b->cctx, raw, &b->scratch) && b->scratch.len <= best) {
		*stored = buf_slice(&b->scratch);
		have = 1;
	}
	return have ? COMP_ZSTD : COMP_NONE;
}

/*
 * Append one block and its trailer, compressing when allowed and worth it
 * (choose_form).  Filters are written with compress = 0: their bits are
 * random by design.
 */
static int write_block(struct sst_builder *b, struct slice raw, int compress, struct blk_handle *h)
{
	struct slice stored = raw;
	char trailer[SST_TRAILER];
	uint32_t crc;
	int r;

	trailer[0] = COMP_NONE;
	if (compress && b->cctx && raw.len > 0)
		trailer[0] = (char)choose_form(b, raw, &stored);
	crc = crc32c_extend(crc32c(stored.data, stored.len), trailer, 1);
	enc_fixed32(trailer + 1, crc32c_mask(crc));
	r = out_append(b, stored.data, stored.len);
	if (r == 0)
		r = out_append(b, trailer, sizeof(trailer));
	if (r < 0)
		return r;
	h->off = b->offset;
	h->size = stored.len;
	b->offset += stored.len + SST_TRAILER;
	return 0;
}

static int flush_data(struct sst_builder *b)
{
	int r;

	assert(!blk_empty(&b->data) && !b->pending_index);
	r = write_block(b, blk_finish(&b->data), 1, &b->pending);
	if (r < 0)
		return r;
	b->props.data_bytes += b->pending.size + SST_TRAILER;
	b->pending_single = b->data.entries == 1;
	blk_builder_reset(&b->data);
	b->pending_index = 1;
	return 0;
}

/*
 * The index entry of the block just written: a short key between its last
 * key and next_key (the first key of the following block), or, after the
 * last block (next_key NULL), a short key >= its last key.  A block of one
 * entry gets that entry's key itself and a single-entry record (sst.h): the
 * few bytes that let a keys-only reader pass a large value unread.
 */
static void add_index_entry(struct sst_builder *b, const struct slice *next_key)
{
	struct buf sep = BUF_INIT, handle = BUF_INIT;

	assert(b->pending_index);
	buf_set(&sep, b->last_key.data, b->last_key.len);
	if (b->pending_single)
		;   /* the entry's own key: it is the block's last key and below next_key */
	else if (next_key)
		ikey_shortest_separator(&sep, *next_key);
	else
		ikey_short_successor(&sep);
	assert(ikey_cmp(buf_slice(&b->last_key), buf_slice(&sep)) <= 0);
	assert(!next_key || ikey_cmp(buf_slice(&sep), *next_key) < 0);
	put_handle(&handle, b->pending);
	if (b->pending_single) {
		buf_put_varint64(&handle, b->last_vlen);
		buf_append(&handle, b->last_prefix,
			   b->last_vlen < SST_VALUE_PREFIX ? b->last_vlen : SST_VALUE_PREFIX);
	}
	blk_add(&b->index, buf_slice(&sep), buf_slice(&handle));
	b->pending_index = 0;
	buf_free(&sep);
	buf_free(&handle);
}

static void extend_bounds(struct sst_props *p, struct slice ikey)
{
	if (p->smallest.len == 0 || ikey_cmp(ikey, buf_slice(&p->smallest)) < 0)
		buf_set(&p->smallest, ikey.data, ikey.len);
	if (p->largest.len == 0 || ikey_cmp(ikey, buf_slice(&p->largest)) > 0)
		buf_set(&p->largest, ikey.data, ikey.len);
}

static void note_seq(struct sst_props *p, uint64_t seq, int first)
{
	if (first || seq < p->smallest_seq)
		p->smallest_seq = seq;
	if (first || seq > p->largest_seq)
		p->largest_seq = seq;
}

int sst_builder_add(struct sst_builder *b, struct slice ikey, struct slice value)
{
	struct slice ukey;
	int r, first = b->props.num_entries == 0 && b->ntombs == 0;

	if (b->status)
		return b->status;
	assert(!b->finished);
	assert(ikey_valid(ikey));
	assert(ikey_type(ikey) == KT_PUT || ikey_type(ikey) == KT_DELETE);
	assert(b->props.num_entries == 0 || ikey_cmp(buf_slice(&b->last_key), ikey) < 0);
	if (ikey.len + value.len > SST_MAX_ENTRY)
		return ERR_SET(-E2BIG, "%s: entry of %zu bytes is too large for a table", b->name,
				ikey.len + value.len);

	/* A big entry gets a block of its own rather than dragging its neighbours along. */
	if (!blk_empty(&b->data) && ikey.len + value.len >= b->o.block_size) {
		r = flush_data(b);
		if (r < 0)
			return r;
	}
	if (b->pending_index)
		add_index_entry(b, &ikey);

	ukey = ikey_user(ikey);
	if (b->o.bloom_bits_per_key > 0 &&
	    (b->props.num_entries == 0 || !slice_eq(ukey, ikey_user(buf_slice(&b->last_key))))) {
		if (b->nhashes == b->hashes_cap) {
			b->hashes_cap = b->hashes_cap ? 2 * b->hashes_cap : 1024;
			b->hashes = xrealloc(b->hashes, b->hashes_cap * sizeof(*b->hashes));
		}
		b->hashes[b->nhashes++] = bloom_hash(ukey);
	}
	blk_add(&b->data, ikey, value);
	buf_set(&b->last_key, ikey.data, ikey.len);
	b->last_vlen = value.len;
	if (value.len)
		memcpy(b->last_prefix, value.data,
		       value.len < SST_VALUE_PREFIX ? value.len : SST_VALUE_PREFIX);

	if (b->props.num_entries == 0)
		buf_set(&b->props.smallest, ikey.data, ikey.len);
	b->props.num_entries++;
	if (ikey_type(ikey) == KT_DELETE)
		b->props.num_deletes++;
	b->props.raw_key_bytes += ikey.len;
	b->props.raw_value_bytes += value.len;
	note_seq(&b->props, ikey_seq(ikey), first);

	if (blk_size_estimate(&b->data) >= b->o.block_size)
		return flush_data(b);
	return 0;
}

int sst_builder_add_range_del(struct sst_builder *b, struct slice start, struct slice end,
			      uint64_t seq)
{
	struct pending_tomb *t;

	if (b->status)
		return b->status;
	assert(!b->finished);
	if (slice_cmp(start, end) >= 0 || seq > SEQ_MAX)
		return ERR_SET(-EINVAL, "%s: range tombstone is empty or has a bad sequence",
				b->name);
	if (b->ntombs == b->tombs_cap) {
		b->tombs_cap = b->tombs_cap ? 2 * b->tombs_cap : 16;
		b->tombs = xrealloc(b->tombs, b->tombs_cap * sizeof(*b->tombs));
	}
	note_seq(&b->props, seq, b->props.num_entries == 0 && b->ntombs == 0);
	t = &b->tombs[b->ntombs++];
	t->start_off = b->tomb_keys.len;
	t->start_len = start.len;
	buf_append(&b->tomb_keys, start.data, start.len);
	t->end_off = b->tomb_keys.len;
	t->end_len = end.len;
	buf_append(&b->tomb_keys, end.data, end.len);
	t->seq = seq;
	return 0;
}

/* qsort has no context argument; the arena the tombstones point into is passed here. */
static _Thread_local const char *sort_arena;

static int tomb_cmp(const void *x, const void *y)
{
	const struct pending_tomb *a = x, *b = y;
	int r = slice_cmp(slice_make(sort_arena + a->start_off, a->start_len),
			  slice_make(sort_arena + b->start_off, b->start_len));

	if (r == 0)
		r = a->seq > b->seq ? -1 : a->seq < b->seq;
	return r;
}

/*
 * Tombstones go to disk in internal-key order of (start, seq).  Two with the
 * same start and sequence (one tombstone handed over twice, perhaps cut at
 * different ends) delete the same versions, so they become one reaching to
 * the farther end.
 */
static int write_range_dels(struct sst_builder *b, struct blk_handle *h)
{
	struct block_builder bb;
	struct buf key = BUF_INIT;
	const char *arena = b->tomb_keys.data;
	size_t i, j;
	int r;

	blk_builder_init(&bb, b->o.restart_interval);
	sort_arena = arena;
	if (b->ntombs)
		qsort(b->tombs, b->ntombs, sizeof(*b->tombs), tomb_cmp);
	for (i = 0; i < b->ntombs; i = j) {
		struct pending_tomb *t = &b->tombs[i];
		struct slice start = slice_make(arena + t->start_off, t->start_len);
		struct slice end = slice_make(arena + t->end_off, t->end_len);

		for (j = i + 1; j < b->ntombs && tomb_cmp(t, &b->tombs[j]) == 0; j++) {
			struct pending_tomb *u = &b->tombs[j];
			struct slice e = slice_make(arena + u->end_off, u->end_len);
			if (slice_cmp(e, end) > 0)
				end = e;
		}
		buf_clear(&key);
		ikey_append(&key, start, t->seq, KT_RANGE_DEL);
		blk_add(&bb, buf_slice(&key), end);
		extend_bounds(&b->props, buf_slice(&key));
		buf_clear(&key);
		ikey_append(&key, end, SEQ_MAX, KT_RANGE_DEL);
		extend_bounds(&b->props, buf_slice(&key));
		b->props.num_range_dels++;
	}
	r = write_block(b, blk_finish(&bb), 1, h);
	blk_builder_free(&bb);
	buf_free(&key);
	return r;
}

static int write_props(struct sst_builder *b, struct blk_handle *h)
{
	struct block_builder bb;
	struct buf v = BUF_INIT;
	int r;

	blk_builder_init(&bb, b->o.restart_interval);
	for (size_t i = 0; i < NPROPS; i++) {
		const struct prop_field *pf = &prop_fields[i];
		const char *field = (const char *)&b->props + pf->off;

		assert(i == 0 || strcmp(prop_fields[i - 1].name, pf->name) < 0);
		buf_clear(&v);
		if (pf->kind == PROP_U64)
			buf_put_varint64(&v, *(const uint64_t *)(const void *)field);
		else
			buf_set(&v, ((const struct buf *)(const void *)field)->data,
				((const struct buf *)(const void *)field)->len);
		blk_add(&bb, slice_str(pf->name), buf_slice(&v));
	}
	r = write_block(b, blk_finish(&bb), 1, h);
	blk_builder_free(&bb);
	buf_free(&v);
	return r;
}

int sst_builder_finish(struct sst_builder *b, struct sst_props *props)
{
	struct blk_handle fh, rh, ph, ih;
	struct buf filter = BUF_INIT;
	char footer[SST_FOOTER_SIZE], *p = footer;
	int r;

	memset(props, 0, sizeof(*props));
	if (b->status)
		return b->status;
	assert(!b->finished);
	b->finished = 1;
	if (!blk_empty(&b->data)) {
		r = flush_data(b);
		if (r < 0)
			goto out;
	}
	if (b->pending_index)
		add_index_entry(b, NULL);
	if (b->props.num_entries)
		buf_set(&b->props.largest, b->last_key.data, b->last_key.len);

	if (b->o.bloom_bits_per_key > 0 && b->nhashes > 0)
		bloom_build(&filter, b->hashes, b->nhashes, b->o.bloom_bits_per_key);
	r = write_block(b, buf_slice(&filter), 0, &fh);
	if (r == 0)
		r = write_range_dels(b, &rh);
	if (r == 0)
		r = write_props(b, &ph);
	if (r == 0)
		r = write_block(b, blk_finish(&b->index), 1, &ih);
	if (r < 0)
		goto out;

	for (int i = 0; i < 4; i++) {
		struct blk_handle h = i == 0 ? fh : i == 1 ? rh : i == 2 ? ph : ih;
		enc_fixed64(p, h.off);
		enc_fixed64(p + 8, h.size);
		p += 16;
	}
	enc_fixed32(p, SST_FORMAT_VERSION);
	enc_fixed32(p + 4, crc32c_mask(crc32c(footer, 68)));
	enc_fixed64(p + 8, SST_MAGIC);
	assert(p + 16 == footer + SST_FOOTER_SIZE);
	r = out_append(b, footer, sizeof(footer));
	if (r == 0)
		r = out_flush(b);
	if (r < 0)
		goto out;
	b->offset += SST_FOOTER_SIZE;
	b->props.file_size = b->offset;
	props_copy(props, &b->props);
out:
	buf_free(&filter);
	return r;
}

/* ------------------------------------------------------------ reader */

struct sst {
	struct env_file *f;
	uint64_t file_size;
	char *name;
	struct cache *cache;         /* not owned; may be NULL */
	uint64_t cache_id;
	uint64_t *bytes_read;        /* not owned; may be NULL */
	struct sst_props props;
	struct blk_handle meta[4];   /* filter, range-del, properties, index */
	uint64_t data_end;           /* data blocks lie in [0, data_end) */
	uint32_t version;            /* the footer's format version: 1 or 2 */
	char *index_mem;
	struct block index;
	char *filter_mem;
	struct slice filter;         /* empty: no filter */
	struct rdel_set *rdels;
	const char *map;             /* the whole file mapped (env_map), or NULL: pread */
};

enum { META_FILTER, META_RANGE_DEL, META_PROPS, META_INDEX };
static const char *const meta_names[4] = { "filter", "range-del", "properties", "index" };

/*
 * Put the table's name and a block offset in front of the message a lower
 * layer (block.c) recorded.  The message is rewritten with err = 0 so no
 * second "[detected at]" tag is added: the one naming the real origin stays.
 */
static int annotate(const struct sst *t, const char *what, uint64_t off, int err)
{
	char msg[768];

	snprintf(msg, sizeof(msg), "%s", err_last());
	err_set(err, __FILE__, __LINE__, "%s: %s block at offset %llu: %s", t->name, what,
		(unsigned long long)off, msg);
	return err;
}

static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;

static void dctx_destroy(void *p)
{
	ZSTD_freeDCtx(p);
}

static void dctx_key_init(void)
{
	if (pthread_key_create(&dctx_key, dctx_destroy) != 0)
		oom_abort("a thread key");
}

/* This thread's decompression context, made on first use and freed when the thread exits. */
static ZSTD_DCtx *thread_dctx(void)
{
	ZSTD_DCtx *d;

	pthread_once(&dctx_once, dctx_key_init);
	d = pthread_getspecific(dctx_key);
	if (!d) {
		d = ZSTD_createDCtx();
		if (!d || pthread_setspecific(dctx_key, d) != 0)
			oom_abort("a zstd decompression context");
	}
	return d;
}

/* 1 if a block of h lies with its trailer inside [0, limit). */
static int handle_fits(struct blk_handle h, uint64_t limit)
{
	return h.off <= limit && h.size <= limit - h.off &&
	       SST_TRAILER <= limit - h.off - h.size && h.size <= SST_MAX_BLOCK;
}

/*
 * Where a block read goes: the memory of the block read_block_head returns,
 * and of the raw bytes it reads with pread.  alloc never fails; drop frees
 * what alloc gave.  Metadata blocks and checks go to the heap
 * (heap_alloc); data blocks into a block cache entry (struct entry_alloc).
 */
struct blk_alloc {
	char *(*alloc)(struct blk_alloc *a, size_t n);
	void (*drop)(struct blk_alloc *a, char *mem);
};

static char *heap_alloc_fn(struct blk_alloc *a, size_t n)
{
	(void)a;
	return xmalloc(n);
}

static void heap_drop_fn(struct blk_alloc *a, char *mem)
{
	(void)a;
	free(mem);
}

static struct blk_alloc heap_alloc = { heap_alloc_fn, heap_drop_fn };

/*
 * Check the checksum of the raw block at raw (h.size bytes and the trailer)
 * and decompress or copy it into memory from a: *mem, owned by the caller,
 * whose first head bytes are left for the caller's use, and *out the
 * block's bytes after them; an uncompressed block is not copied if raw is
 * itself head bytes into memory from a (own = 1): *mem is raw - head then.
 * On error *mem is NULL.
 */
static int decode_block(const struct sst *t, struct blk_handle h, const char *what,
			char *raw, int own, size_t head, struct blk_alloc *a, char **mem,
			struct slice *out)
{
	const char *p, *end = raw + h.size;
	uint32_t want, got, ulen;
	char *plain;
	size_t dn;

	want = crc32c_unmask(dec_fixed32(raw + h.size + 1));
	got = crc32c(raw, h.size + 1);
	if (want != got)
		return ERR_CORRUPT("%s: %s block at offset %llu: checksum mismatch", t->name, what,
				  (unsigned long long)h.off);
	switch (raw[h.size]) {
	case COMP_NONE:
		if (own) {
			*mem = raw - head;
		} else {
			*mem = a->alloc(a, head + h.size + 1);
			memcpy(*mem + head, raw, h.size);
		}
		*out = slice_make(*mem + head, h.size);
		return 0;
	case COMP_ZSTD:
		p = dec_varint32(raw, end, &ulen);
		if (!p || ulen > SST_MAX_BLOCK)
			return ERR_CORRUPT("%s: %s block at offset %llu: bad uncompressed length",
					  t->name, what, (unsigned long long)h.off);
		/* stored before the decompression that may fault, so the fault path frees it */
		*mem = a->alloc(a, head + ulen + 1);
		plain = *mem + head;
		dn = ZSTD_decompressDCtx(thread_dctx(), plain, ulen, p, (size_t)(end - p));
		if (ZSTD_isError(dn) || dn != ulen) {
			a->drop(a, *mem);
			*mem = NULL;
			return ERR_CORRUPT("%s: %s block at offset %llu: zstd cannot decompress (%s)",
					  t->name, what, (unsigned long long)h.off,
					  ZSTD_isError(dn) ? ZSTD_getErrorName(dn) : "short output");
		}
		*out = slice_make(plain, ulen);
		return 0;
	default:
		return ERR_CORRUPT("%s: %s block at offset %llu: unknown compression type %d",
				  t->name, what, (unsigned long long)h.off, raw[h.size] & 0xff);
	}
}

/*
 * Decode a block straight from the table's map, under a guard: a page of
 * the map the kernel cannot provide (the file was cut short under the open
 * table, or a sector cannot be read) is an -EIO naming the table, where an
 * unguarded read would be a SIGBUS that kills the process.
 */
static int decode_mapped_block(const struct sst *t, struct blk_handle h, const char *what,
			       size_t head, struct blk_alloc *a, char **mem, struct slice *out)
{
	/* volatile: decode_block may have stored a buffer here when the jump comes */
	char *volatile buf = NULL;
	struct slice got = { 0 };
	struct mapguard g;
	int r;

	mapguard_arm(&g, t->map, t->file_size);
	if (sigsetjmp(g.jb, 0)) {
		if (buf)
			a->drop(a, buf);
		return ERR_SET(-EIO, "%s: %s block at offset %llu: reading the table's map faulted "
				"at file offset %llu (the file was cut short, or the disk cannot "
				"read it)", t->name, what, (unsigned long long)h.off,
				(unsigned long long)((const char *)g.fault - t->map));
	}
	r = decode_block(t, h, what, (char *)t->map + h.off, 0, head, a, (char **)&buf, &got);
	mapguard_leave(&g);
	*mem = buf;
	*out = got;
	return r;
}

/*
 * Read the block at h, check its checksum, and decompress it.  On success
 * *mem is memory from a that the caller drops, and *out the block's bytes
 * in it, after head bytes the caller may use (a data block's cache entry
 * keeps its own record there: one allocation per block).  On error nothing
 * from a is left.
 * REQUIRES: handle_fits(h, file size).
 */
static int read_block_head(const struct sst *t, struct blk_handle h, const char *what,
			   size_t head, struct blk_alloc *a, char **mem, struct slice *out)
{
	size_t n = (size_t)h.size + SST_TRAILER;
	char *raw;
	int r;

	*mem = NULL;
	*out = slice_make(NULL, 0);
	if (t->bytes_read)
		__atomic_fetch_add(t->bytes_read, (uint64_t)n, __ATOMIC_RELAXED);
#ifdef SMOLFS_BENCH_UNGUARDED_MAP
	/* a benchmark-only build (smolbench(1)): the map read without its guard */
	if (t->map)
		return decode_block(t, h, what, (char *)t->map + h.off, 0, head, a, mem, out);
#endif
	if (t->map)   /* handle_fits: in the map */
		return decode_mapped_block(t, h, what, head, a, mem, out);
	raw = a->alloc(a, head + n);
	r = env_read_exact(t->f, raw + head, n, h.off);
	if (r < 0) {
		a->drop(a, raw);
		return annotate(t, what, h.off, r);
	}
	r = decode_block(t, h, what, raw + head, 1, head, a, mem, out);
	if (*mem != raw)
		a->drop(a, raw);
	return r;
}

/* read_block_head with nothing before the block's bytes: *mem is the block. */
static int read_block(const struct sst *t, struct blk_handle h, const char *what, char **mem,
		      struct slice *out)
{
	return read_block_head(t, h, what, 0, &heap_alloc, mem, out);
}

/* Read and parse a metadata block the table keeps for its lifetime. */
static int read_meta_block(const struct sst *t, int which, char **mem, struct block *blk)
{
	struct slice contents;
	int r = read_block(t, t->meta[which], meta_names[which], mem, &contents);

	if (r == 0 && which != META_FILTER) {
		r = blk_parse(contents, blk);
		if (r < 0)
			annotate(t, meta_names[which], t->meta[which].off, r);
	} else if (r == 0) {
		blk->contents = contents;
	}
	if (r < 0) {
		free(*mem);
		*mem = NULL;
	}
	return r;
}

/*
 * A data block as the cache holds it: the parsed block, at the start of the
 * value of the cache entry whose rest holds its bytes (read_block_head with
 * an entry_alloc): one allocation per block, handle included, which the
 * cache recycles (cache_entry_new).  Charged at the entry's full size, so
 * the cache's capacity bounds the memory its blocks take, but for the few
 * dead blocks' memory each reading thread keeps for reuse (CACHE_STASH).
 */
struct cached_block {
	struct block blk;
};

/*
 * A blk_alloc whose memory is the value of new cache entries under key
 * (none when there is no block cache): at most two at once, the block read
 * with pread and the block it decompresses to.
 */
struct entry_alloc {
	struct blk_alloc base;
	struct slice key;
	struct cache_handle *e[2];
};

static char *entry_alloc_fn(struct blk_alloc *a, size_t n)
{
	struct entry_alloc *ea = (struct entry_alloc *)a;
	int i = ea->e[0] != NULL;

	assert(!ea->e[i]);
	ea->e[i] = cache_entry_new(ea->key, n);
	return cache_value(ea->e[i]);
}

/* The entry whose value is mem, taken out of ea. */
static struct cache_handle *entry_take(struct entry_alloc *ea, char *mem)
{
	struct cache_handle *h;
	int i = !(ea->e[0] && cache_value(ea->e[0]) == mem);

	h = ea->e[i];
	assert(h && cache_value(h) == mem);
	ea->e[i] = NULL;
	return h;
}

static void entry_drop_fn(struct blk_alloc *a, char *mem)
{
	cache_entry_drop(entry_take((struct entry_alloc *)a, mem));
}

/*
 * What keeps a data block alive while an iterator reads it: a cache handle,
 * or, when the block was not put in the cache, its entry, held outside any
 * cache.  Lives in the iterator (or on the stack of sst_get); the block
 * iterator's release callback drops it.
 */
struct pin {
	struct cache *cache;
	struct cache_handle *h;
	struct cache_handle *owned;
};

static void pin_release(void *arg)
{
	struct pin *p = arg;

	if (p->h)
		cache_release(p->cache, p->h);
	else if (p->owned)
		cache_entry_drop(p->owned);
	p->h = NULL;
	p->owned = NULL;
}

static void block_cache_key(const struct sst *t, uint64_t off, char key[16])
{
	enc_fixed64(key, t->cache_id);
	enc_fixed64(key + 8, off);
}

/*
 * Ask the CPU for the block after h in the table's map, which a scan that
 * read h from the file will most likely read next.  A block read from the
 * map first costs a TLB walk and cache misses, one after another (the
 * trailer, then the bytes the checksum reads); prefetched while the scan
 * works through h, they overlap with that work.  The next block's size is
 * taken to be about h's.  A prefetch never faults, so a page the file no
 * longer has costs nothing here (the read itself will report it).
 */
static void prefetch_next_block(const struct sst *t, struct blk_handle h)
{
	uint64_t off = h.off + h.size + SST_TRAILER, end;

	if (!t->map || off >= t->data_end)
		return;
	end = off + h.size + SST_TRAILER;
	if (end > t->data_end)
		end = t->data_end;
	for (; off < end; off += 64)
		__builtin_prefetch((const char *)t->map + off);
	__builtin_prefetch((const char *)t->map + end - 1);
}

/*
 * Get data block h, from the cache or the file, pinned by *pin.  scanning:
 * the caller will likely read the next block too (prefetch_next_block).
 * REQUIRES: *pin holds nothing.
 */
static int load_data_block(const struct sst *t, struct blk_handle h, int fill_cache,
			   int scanning, struct pin *pin, const struct block **blk)
{
	struct entry_alloc ea = { { entry_alloc_fn, entry_drop_fn }, { NULL, 0 }, { NULL, NULL } };
	struct cached_block *cb;
	struct cache_handle *e;
	struct slice contents;
	char key[16], *mem;
	int r;

	assert(!pin->h && !pin->owned);
	if (!handle_fits(h, t->data_end))
		return ERR_CORRUPT("%s: index points at a data block outside the data area "
				  "(offset %llu, size %llu)", t->name, (unsigned long long)h.off,
				  (unsigned long long)h.size);
	if (t->cache) {
		block_cache_key(t, h.off, key);
		ea.key = slice_make(key, sizeof(key));
		pin->cache = t->cache;
		pin->h = cache_lookup(t->cache, ea.key);
		if (pin->h) {
			cb = cache_value(pin->h);
			*blk = &cb->blk;
			return 0;
		}
	}
	if (scanning)
		prefetch_next_block(t, h);
	r = read_block_head(t, h, "data", sizeof(*cb), &ea.base, &mem, &contents);
	if (r < 0) {
		/* read_block_head drops what it took; this also covers a jump out of the map */
		for (int i = 0; i < 2; i++)
			if (ea.e[i])
				cache_entry_drop(ea.e[i]);
		return r;
	}
	e = entry_take(&ea, mem);
	assert(!ea.e[0] && !ea.e[1]);
	cb = (struct cached_block *)(void *)mem;
	r = blk_parse(contents, &cb->blk);
	if (r < 0) {
		annotate(t, "data", h.off, r);
		cache_entry_drop(e);
		return r;
	}
	if (t->cache && fill_cache) {
		cache_entry_insert(t->cache, e);
		pin->h = e;
	} else {
		pin->owned = e;
	}
	*blk = &cb->blk;
	return 0;
}

/*
 * Check every index entry once at open, so readers may trust the keys' form
 * and the records' (a record only in version 2, keyed by a point entry's
 * internal key).
 */
static int check_index(struct sst *t)
{
	struct iter *it = blk_iter_new(&t->index, ikey_cmp_fn, NULL, NULL);
	struct buf prev = BUF_INIT;
	struct blk_handle h;
	struct idx_record rec;
	int r = 0, has_rec;

	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it);
		if (!ikey_valid(k) || (prev.len && ikey_cmp(buf_slice(&prev), k) >= 0)) {
			r = ERR_CORRUPT("%s: index block at offset %llu: bad or unordered key",
				       t->name, (unsigned long long)t->meta[META_INDEX].off);
			goto out;
		}
		if (!get_index_value(iter_value(it), &h, &has_rec, &rec) ||
		    !handle_fits(h, t->data_end)) {
			r = ERR_CORRUPT("%s: index block at offset %llu: bad data block handle",
				       t->name, (unsigned long long)t->meta[META_INDEX].off);
			goto out;
		}
		if (has_rec && (t->version < 2 || ikey_type(k) == KT_RANGE_DEL)) {
			r = ERR_CORRUPT("%s: index block at offset %llu: a single-entry record %s",
				       t->name, (unsigned long long)t->meta[META_INDEX].off,
				       t->version < 2 ? "in a version 1 table" :
				       "under a separator key");
			goto out;
		}
		buf_set(&prev, k.data, k.len);
	}
	r = iter_status(it);
	if (r < 0)
		annotate(t, "index", t->meta[META_INDEX].off, r);
out:
	buf_free(&prev);
	iter_destroy(it);
	return r;
}

static int load_props(struct sst *t)
{
	struct block blk;
	char *mem = NULL;
	struct iter *it;
	unsigned seen = 0;
	int r = read_meta_block(t, META_PROPS, &mem, &blk);

	if (r < 0)
		return r;
	it = blk_iter_new(&blk, ukey_cmp_fn, NULL, NULL);
	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it), v = iter_value(it);
		size_t i;

		for (i = 0; i < NPROPS; i++)
			if (slice_eq(k, slice_str(prop_fields[i].name)))
				break;
		if (i == NPROPS)
			continue;   /* a property a later writer added: not ours to read */
		char *field = (char *)&t->props + prop_fields[i].off;
		if (prop_fields[i].kind == PROP_KEY) {
			if (v.len && !ikey_valid(v))
				goto bad;
			buf_set((struct buf *)(void *)field, v.data, v.len);
		} else if (dec_varint64(v.data, v.data + v.len, (uint64_t *)(void *)field) !=
			   v.data + v.len) {
			goto bad;
		}
		seen |= 1u << i;
	}
	r = iter_status(it);
	if (r < 0) {
		annotate(t, "properties", t->meta[META_PROPS].off, r);
		goto out;
	}
	if (seen != (1u << NPROPS) - 1)
		goto bad;
	/*
	 * A table holding anything has internal keys for bounds: they become a
	 * version's file bounds (repair takes them from here), which ikey_cmp
	 * compares unchecked.  Only an empty table has empty ones.
	 */
	if ((t->props.num_entries || t->props.num_range_dels) &&
	    (!ikey_valid(buf_slice(&t->props.smallest)) || !ikey_valid(buf_slice(&t->props.largest))))
		goto bad;
	t->props.file_size = t->file_size;
	goto out;
bad:
	r = ERR_CORRUPT("%s: properties block at offset %llu: missing or malformed property",
		       t->name, (unsigned long long)t->meta[META_PROPS].off);
out:
	iter_destroy(it);
	free(mem);
	return r;
}

/* Read the tombstones and fragment them once; the table keeps only the fragments. */
static int load_range_dels(struct sst *t)
{
	struct block blk;
	char *mem = NULL;
	struct iter *it;
	struct rtomb *tombs = NULL;
	size_t n = 0, cap = 0;
	int r = read_meta_block(t, META_RANGE_DEL, &mem, &blk);

	if (r < 0)
		return r;
	it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it), v = iter_value(it);

		/*
		 * The end (a value) points into the block, which outlives the
		 * build; the start lives in the iterator's key buffer, which is
		 * rewritten as it moves, so it is copied.
		 */
		if (!ikey_valid(k) || ikey_type(k) != KT_RANGE_DEL ||
		    slice_cmp(ikey_user(k), v) >= 0) {
			r = ERR_CORRUPT("%s: range-del block at offset %llu: malformed tombstone",
				       t->name, (unsigned long long)t->meta[META_RANGE_DEL].off);
			goto out;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			tombs = xrealloc(tombs, cap * sizeof(*tombs));
		}
		tombs[n].start = slice_make(xmemdup(k.data, k.len - IKEY_TRAILER),
					    k.len - IKEY_TRAILER);
		tombs[n].end = v;
		tombs[n].seq = ikey_seq(k);
		n++;
	}
	r = iter_status(it);
	if (r < 0) {
		annotate(t, "range-del", t->meta[META_RANGE_DEL].off, r);
		goto out;
	}
	if (n != t->props.num_range_dels) {
		r = ERR_CORRUPT("%s: range-del block at offset %llu holds %zu tombstones, "
			       "properties say %llu", t->name,
			       (unsigned long long)t->meta[META_RANGE_DEL].off, n,
			       (unsigned long long)t->props.num_range_dels);
		goto out;
	}
	t->rdels = rdel_set_build(tombs, n, SEQ_MAX, 0);
out:
	for (size_t i = 0; i < n; i++)
		free((char *)tombs[i].start.data);
	free(tombs);
	iter_destroy(it);
	free(mem);
	return r;
}

int sst_open(struct env_file *f, uint64_t file_size, const char *name, struct cache *block_cache,
	     uint64_t *bytes_read, int use_map, struct sst **out)
{
	struct sst *t = xcalloc(1, sizeof(*t));
	char footer[SST_FOOTER_SIZE];
	struct block filter;
	uint64_t meta_end;
	int r;

	*out = NULL;
	t->f = f;
	t->file_size = file_size;
	t->name = xstrdup(name);
	t->cache = block_cache;
	t->bytes_read = bytes_read;
	if (file_size < SST_FOOTER_SIZE) {
		r = ERR_CORRUPT("%s: file of %llu bytes is too short for a table", name,
			       (unsigned long long)file_size);
		goto fail;
	}
	/* read blocks through a map where the environment offers one (else pread) */
	if (!use_map || env_map(f, file_size, &t->map) < 0)
		t->map = NULL;
	meta_end = file_size - SST_FOOTER_SIZE;
	r = env_read_exact(f, footer, sizeof(footer), meta_end);
	if (r < 0) {
		annotate(t, "footer", meta_end, r);
		goto fail;
	}
	if (dec_fixed64(footer + 72) != SST_MAGIC) {
		r = ERR_CORRUPT("%s: footer at offset %llu: bad magic number (not a table?)", name,
			       (unsigned long long)meta_end);
		goto fail;
	}
	if (crc32c_unmask(dec_fixed32(footer + 68)) != crc32c(footer, 68)) {
		r = ERR_CORRUPT("%s: footer at offset %llu: checksum mismatch", name,
			       (unsigned long long)meta_end);
		goto fail;
	}
	t->version = dec_fixed32(footer + 64);
	if (t->version != 1 && t->version != SST_FORMAT_VERSION) {
		r = ERR_CORRUPT("%s: footer at offset %llu: unknown format version %u (this "
			       "engine reads versions 1 and %d)", name,
			       (unsigned long long)meta_end, t->version, SST_FORMAT_VERSION);
		goto fail;
	}
	for (int i = 0; i < 4; i++) {
		t->meta[i].off = dec_fixed64(footer + 16 * i);
		t->meta[i].size = dec_fixed64(footer + 16 * i + 8);
		if (!handle_fits(t->meta[i], meta_end)) {
			r = ERR_CORRUPT("%s: footer at offset %llu: %s block handle out of range",
				       name, (unsigned long long)meta_end, meta_names[i]);
			goto fail;
		}
	}
	/* The filter is the first thing after the data. */
	t->data_end = t->meta[META_FILTER].off;

	r = load_props(t);
	if (r < 0)
		goto fail;
	r = read_meta_block(t, META_INDEX, &t->index_mem, &t->index);
	if (r < 0)
		goto fail;
	r = check_index(t);
	if (r < 0)
		goto fail;
	r = read_meta_block(t, META_FILTER, &t->filter_mem, &filter);
	if (r < 0)
		goto fail;
	t->filter = filter.contents;
	r = load_range_dels(t);
	if (r < 0)
		goto fail;
	t->cache_id = block_cache ? cache_new_id(block_cache) : 0;
	*out = t;
	return 0;
fail:
	t->cache = NULL;   /* nothing was cached under this table yet */
	sst_close(t);
	return r;
}

void sst_close(struct sst *t)
{
	if (!t)
		return;
	/*
	 * Drop this table's blocks from the cache now: nobody can ask for them
	 * again (the next open of the file gets a new cache id), and they would
	 * otherwise crowd out live blocks until the LRU reached them.
	 */
	if (t->cache && t->index_mem) {
		struct iter *it = blk_iter_new(&t->index, ikey_cmp_fn, NULL, NULL);
		struct blk_handle h;
		char key[16];

		for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
			if (!get_handle(iter_value(it), &h))
				continue;
			block_cache_key(t, h.off, key);
			cache_erase(t->cache, slice_make(key, sizeof(key)));
		}
		iter_destroy(it);
	}
	env_close(t->f);
	rdel_set_free(t->rdels);
	sst_props_free(&t->props);
	free(t->index_mem);
	free(t->filter_mem);
	free(t->name);
	free(t);
}

const struct rdel_set *sst_range_dels(const struct sst *t)
{
	return t->rdels;
}

const struct sst_props *sst_get_props(const struct sst *t)
{
	return &t->props;
}

uint32_t sst_format_version(const struct sst *t)
{
	return t->version;
}

int sst_get(struct sst *t, struct slice ukey, uint64_t snap_seq, int *type, uint64_t *seq,
	    struct buf *val, int *bloom_skipped)
{
	return sst_get_hashed(t, ukey, bloom_hash(ukey), snap_seq, type, seq, val, bloom_skipped);
}

int sst_get_hashed(struct sst *t, struct slice ukey, uint64_t hash, uint64_t snap_seq, int *type,
		   uint64_t *seq, struct buf *val, int *bloom_skipped)
{
	char tmem[128];
	struct slice target;
	struct buf tbuf = BUF_INIT;
	struct blk_iter idx;
	int r = 0;

	if (bloom_skipped)
		*bloom_skipped = 0;
	if (t->filter.len && !bloom_may_contain_hash(t->filter, hash)) {
		if (bloom_skipped)
			*bloom_skipped = 1;
		return 0;
	}
	/* the lookup key, on the stack when it fits; the iterators too: no allocation */
	target = ikey_seek_key(tmem, sizeof(tmem), &tbuf, ukey, snap_seq);
	blk_iter_init(&idx, &t->index, ikey_cmp_fn, NULL, NULL);
	/*
	 * Normally the block the index names holds the answer; but a separator
	 * may equal the target while the block ends below it, and then the
	 * answer is the first entry of the next block, so keep walking.
	 */
	for (iter_seek(&idx.base, target); iter_valid(&idx.base); iter_next(&idx.base)) {
		struct pin pin = { NULL, NULL, NULL };
		const struct block *blk;
		struct blk_handle h;
		struct blk_iter it;

		if (!get_handle(iter_value(&idx.base), &h)) {
			r = ERR_CORRUPT("%s: index block: bad data block handle", t->name);
			break;
		}
		r = load_data_block(t, h, 1, 0, &pin, &blk);
		if (r < 0)
			break;
		blk_iter_init(&it, blk, ikey_cmp_fn, pin_release, &pin);
		iter_seek(&it.base, target);
		if (iter_valid(&it.base)) {
			struct slice k = iter_key(&it.base);
			if (!ikey_valid(k) || ikey_type(k) == KT_RANGE_DEL) {
				r = ERR_CORRUPT("%s: data block at offset %llu: malformed key",
					       t->name, (unsigned long long)h.off);
			} else if (slice_eq(ikey_user(k), ukey)) {
				*type = ikey_type(k);
				*seq = ikey_seq(k);
				buf_set(val, iter_value(&it.base).data, iter_value(&it.base).len);
				r = 1;
			}
			blk_iter_release(&it);
			break;
		}
		r = iter_status(&it.base);
		if (r < 0)
			annotate(t, "data", h.off, r);
		blk_iter_release(&it);
		if (r < 0)
			break;
	}
	if (r == 0 && iter_status(&idx.base) < 0)
		r = annotate(t, "index", t->meta[META_INDEX].off, iter_status(&idx.base));
	blk_iter_release(&idx);
	buf_free(&tbuf);
	return r;
}

/* ------------------------------------------------------------ two-level iterator */

/*
 * The table iterator: an iterator over the index whose current entry names
 * a data block, and an iterator over that block.  Moving past either end of
 * the block moves the index and opens the next (or previous) block; empty
 * blocks are skipped.  Errors are sticky: once one is seen the iterator
 * stays invalid and status() reports it.
 *
 * Keys-only (SST_ITER_KEYS_ONLY): an index entry with a single-entry record
 * is itself the entry -- its key is the entry's key, the record gives the
 * value's length and first bytes -- so the iterator stands on the index
 * (on_record) and reads no block.  Every other block is opened as usual.
 * The record's key is >= any seek target that led the index to it (it is
 * the separator), so a seek that lands on a record is done.
 */
struct sst_iter {
	struct iter base;
	struct sst *t;
	int fill_cache;
	int streak;                  /* blocks opened in a row by stepping (SST_SCAN_FILL_BLOCKS) */
	int keys_only;
	int status;
	struct iter *index;
	struct iter *data;           /* &data_it when a block is open, else NULL */
	struct blk_iter data_it;     /* over the open block: called directly on hot paths */
	uint64_t data_off;           /* offset of the open block */
	struct pin pin;              /* keeps the open block alive */
	int on_record;               /* keys-only: standing on the index entry's record */
	struct idx_record rec;       /* ... which is this (prefix into the index block) */
	void (*release)(void *arg);  /* on destroy, if not NULL */
	void *release_arg;
	/*
	 * The key last handed out, so that a step can check it moved the right
	 * way: damage that its block's checksum does not show (a checksum
	 * collision, or bytes written wrong before they were checksummed) must
	 * end the walk with -EUCLEAN rather than give a merge keys out of order.
	 */
	struct buf last;
};

static void close_data(struct sst_iter *si)
{
	if (si->data)
		blk_iter_release(&si->data_it);   /* releases si->pin */
	si->data = NULL;
	si->on_record = 0;
	assert(!si->pin.h && !si->pin.owned);
}

static void set_error(struct sst_iter *si, int err)
{
	assert(err < 0);
	if (si->status == 0)
		si->status = err;
	close_data(si);
}

/*
 * Open the block the index iterator is on (keeping it if it is already
 * open), or, keys-only, stand on the index entry's record.
 */
static void open_data(struct sst_iter *si)
{
	const struct block *blk;
	struct blk_handle h;
	int r, has_rec;

	if (!iter_valid(si->index)) {
		close_data(si);
		r = iter_status(si->index);
		if (r < 0)
			set_error(si, annotate(si->t, "index", si->t->meta[META_INDEX].off, r));
		return;
	}
	if (!get_index_value(iter_value(si->index), &h, &has_rec, &si->rec)) {
		set_error(si, ERR_CORRUPT("%s: index block: bad data block handle", si->t->name));
		return;
	}
	if (si->keys_only && has_rec) {
		close_data(si);
		si->on_record = 1;
		return;
	}
	si->on_record = 0;
	if (si->data && si->data_off == h.off)
		return;
	close_data(si);
	r = load_data_block(si->t, h, si->fill_cache && si->streak < SST_SCAN_FILL_BLOCKS, 1,
			    &si->pin, &blk);
	if (r < 0) {
		set_error(si, r);
		return;
	}
	blk_iter_init(&si->data_it, blk, ikey_cmp_fn, pin_release, &si->pin);
	si->data = &si->data_it.base;
	si->data_off = h.off;
}

/* The open block's iterator ran out: record its error, if that is why. */
static int data_failed(struct sst_iter *si)
{
	int r = iter_status(si->data);

	if (r < 0)
		set_error(si, annotate(si->t, "data", si->data_off, r));
	return r < 0;
}

/* Standing on an entry: a record, or a valid entry of the open block. */
static int positioned(struct sst_iter *si)
{
	return si->on_record || (si->data && blk_iter_valid(&si->data_it));
}

static void skip_forward(struct sst_iter *si)
{
	while (si->status == 0 && !positioned(si)) {
		if (si->data && data_failed(si))
			return;
		if (!iter_valid(si->index)) {
			open_data(si);   /* closes the block and picks up an index error */
			return;
		}
		iter_next(si->index);
		si->streak++;
		open_data(si);
		if (si->data)
			iter_seek_first(si->data);
	}
}

static void skip_backward(struct sst_iter *si)
{
	while (si->status == 0 && !positioned(si)) {
		if (si->data && data_failed(si))
			return;
		if (!iter_valid(si->index)) {
			open_data(si);
			return;
		}
		iter_prev(si->index);
		si->streak++;
		open_data(si);
		if (si->data)
			iter_seek_last(si->data);
	}
}

static int si_valid(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	return si->status == 0 && positioned(si);
}

static struct slice cur_key(struct sst_iter *si)
{
	return si->on_record ? iter_key(si->index) : blk_iter_key(&si->data_it);
}

/*
 * After a move: the key now current must be a point entry's internal key
 * and lie after (dir > 0) or before (dir < 0) the one handed out last
 * (dir 0: a seek, nothing to compare with).  Else the walk ends in -EUCLEAN.
 */
static void check_step(struct sst_iter *si, int dir)
{
	struct slice k;
	int c;

	if (si->status || !positioned(si))
		return;
	k = cur_key(si);
	if (!ikey_valid(k) || ikey_type(k) == KT_RANGE_DEL) {
		set_error(si, ERR_CORRUPT("%s: data block at offset %llu: malformed key",
					  si->t->name, (unsigned long long)si->data_off));
		return;
	}
	if (dir != 0) {
		c = ikey_cmp(k, buf_slice(&si->last));
		if (dir > 0 ? c <= 0 : c >= 0) {
			set_error(si, ERR_CORRUPT("%s: data block at offset %llu: key out of order",
						  si->t->name, (unsigned long long)si->data_off));
			return;
		}
	}
	buf_set(&si->last, k.data, k.len);
}

static void si_seek_first(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	if (si->status)
		return;
	iter_seek_first(si->index);
	si->streak = 0;
	open_data(si);
	if (si->data)
		iter_seek_first(si->data);
	skip_forward(si);
	check_step(si, 0);
}

static void si_seek_last(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	if (si->status)
		return;
	iter_seek_last(si->index);
	si->streak = 0;
	open_data(si);
	if (si->data)
		iter_seek_last(si->data);
	skip_backward(si);
	check_step(si, 0);
}

static void si_seek(struct iter *base, struct slice target)
{
	struct sst_iter *si = (struct sst_iter *)base;

	if (si->status)
		return;
	iter_seek(si->index, target);
	si->streak = 0;
	open_data(si);
	if (si->data)
		iter_seek(si->data, target);
	skip_forward(si);
	check_step(si, 0);
}

static void si_next(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	assert(si_valid(base));
	if (si->on_record)
		si->on_record = 0;   /* skip_forward moves the index on */
	else
		blk_iter_next(&si->data_it);
	skip_forward(si);
	check_step(si, 1);
}

static void si_prev(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	assert(si_valid(base));
	if (si->on_record)
		si->on_record = 0;
	else
		iter_prev(si->data);
	skip_backward(si);
	check_step(si, -1);
}

static struct slice si_key(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	assert(si_valid(base));
	return cur_key(si);
}

static struct slice si_value(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	assert(si_valid(base));
	if (si->on_record)
		return si->rec.prefix;
	return blk_iter_value(&si->data_it);
}

static uint64_t si_value_size(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	assert(si_valid(base));
	if (si->on_record)
		return si->rec.vlen;
	return blk_iter_value(&si->data_it).len;
}

static int si_status(struct iter *base)
{
	return ((struct sst_iter *)base)->status;
}

static void si_destroy(struct iter *base)
{
	struct sst_iter *si = (struct sst_iter *)base;

	close_data(si);
	iter_destroy(si->index);
	buf_free(&si->last);
	if (si->release)
		si->release(si->release_arg);
	free(si);
}

static uint64_t si_max_seq(struct iter *base)
{
	return ((struct sst_iter *)base)->t->props.largest_seq;
}

static const struct iter_ops sst_iter_ops = {
	.valid = si_valid,
	.seek_first = si_seek_first,
	.seek_last = si_seek_last,
	.seek = si_seek,
	.next = si_next,
	.prev = si_prev,
	.key = si_key,
	.value = si_value,
	.status = si_status,
	.destroy = si_destroy,
	.max_seq = si_max_seq,
	.value_size = si_value_size,
};

struct iter *sst_iter_new_released(struct sst *t, unsigned flags, void (*release)(void *arg),
				   void *arg)
{
	struct sst_iter *si = xcalloc(1, sizeof(*si));

	si->base.ops = &sst_iter_ops;
	si->t = t;
	si->fill_cache = (flags & SST_ITER_FILL_CACHE) != 0;
	si->keys_only = (flags & SST_ITER_KEYS_ONLY) != 0;
	si->index = blk_iter_new(&t->index, ikey_cmp_fn, NULL, NULL);
	si->release = release;
	si->release_arg = arg;
	return &si->base;
}

struct iter *sst_iter_new(struct sst *t, unsigned flags)
{
	return sst_iter_new_released(t, flags, NULL, NULL);
}

/* ------------------------------------------------------------ verification */

struct verifier {
	struct sst *t;
	void (*report)(void *arg, uint64_t off, const char *msg);
	void *arg;
	unsigned problems;
};

/* Pass the message last recorded (by ERR_CORRUPT or a lower layer) to the report callback. */
static void problem(struct verifier *v, uint64_t off)
{
	v->problems++;
	if (v->report)
		v->report(v->arg, off, err_last());
}

/*
 * Check one data block's entries: well-formed point keys, strictly after
 * everything before them in the file, and not beyond the block's separator.
 */
static int verify_entries(struct verifier *v, const struct block *blk, uint64_t off,
			  struct slice sep, struct buf *prev, uint64_t *entries)
{
	struct sst *t = v->t;
	struct iter *it = blk_iter_new(blk, ikey_cmp_fn, NULL, NULL);
	int r = 0;

	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it);

		if (!ikey_valid(k) || ikey_type(k) == KT_RANGE_DEL) {
			r = ERR_CORRUPT("%s: data block at offset %llu: malformed key", t->name,
				       (unsigned long long)off);
			break;
		}
		if (prev->len && ikey_cmp(buf_slice(prev), k) >= 0) {
			r = ERR_CORRUPT("%s: data block at offset %llu: key out of order", t->name,
				       (unsigned long long)off);
			break;
		}
		if (ikey_cmp(k, sep) > 0) {
			r = ERR_CORRUPT("%s: data block at offset %llu: key beyond its separator",
				       t->name, (unsigned long long)off);
			break;
		}
		buf_set(prev, k.data, k.len);
		(*entries)++;
	}
	if (r == 0 && iter_status(it) < 0)
		r = annotate(t, "data", off, iter_status(it));
	iter_destroy(it);
	return r;
}

/*
 * A block with a single-entry record must hold exactly that entry: the
 * record's key (the separator), its value length and first bytes.  A
 * keys-only reader trusts the record without reading the block, so this is
 * where a record that lies is found.
 */
static int verify_record(const struct sst *t, const struct block *blk, uint64_t off,
			 struct slice sep, const struct idx_record *rec)
{
	struct iter *it = blk_iter_new(blk, ikey_cmp_fn, NULL, NULL);
	int r = 0;

	iter_seek_first(it);
	if (!iter_valid(it) || ikey_cmp(iter_key(it), sep) != 0 ||
	    iter_value(it).len != rec->vlen ||
	    memcmp(iter_value(it).data, rec->prefix.data, rec->prefix.len) != 0) {
		r = ERR_CORRUPT("%s: index block: the single-entry record of the data block at "
			       "offset %llu does not match the block's entry", t->name,
			       (unsigned long long)off);
	} else {
		iter_next(it);
		if (iter_valid(it))
			r = ERR_CORRUPT("%s: index block: the data block at offset %llu has a "
				       "single-entry record but more than one entry", t->name,
				       (unsigned long long)off);
	}
	iter_destroy(it);
	return r;
}

int sst_verify(struct sst *t, void (*report)(void *arg, uint64_t off, const char *msg), void *arg)
{
	struct verifier v = { t, report, arg, 0 };
	struct iter *idx = blk_iter_new(&t->index, ikey_cmp_fn, NULL, NULL);
	struct buf prev = BUF_INIT;
	uint64_t expect_off = 0, entries = 0;
	int r = 0;

	/* The metadata blocks were checked at open; check they still read back intact. */
	for (int i = 0; i < 4; i++) {
		struct slice contents;
		char *mem;

		r = read_block(t, t->meta[i], meta_names[i], &mem, &contents);
		free(mem);
		if (r < 0) {
			problem(&v, t->meta[i].off);
			if (r != -EUCLEAN)
				goto out;
		}
	}
	for (iter_seek_first(idx); iter_valid(idx); iter_next(idx)) {
		struct blk_handle h;
		struct idx_record rec;
		struct block blk;
		struct slice contents;
		char *mem;
		int has_rec;

		if (!get_index_value(iter_value(idx), &h, &has_rec, &rec) ||
		    !handle_fits(h, t->data_end)) {
			ERR_CORRUPT("%s: index block: bad data block handle", t->name);
			problem(&v, t->meta[META_INDEX].off);
			continue;
		}
		if (h.off != expect_off) {
			ERR_CORRUPT("%s: data block at offset %llu does not follow the previous "
				   "one (expected offset %llu)", t->name, (unsigned long long)h.off,
				   (unsigned long long)expect_off);
			problem(&v, h.off);
		}
		expect_off = h.off + h.size + SST_TRAILER;
		r = read_block(t, h, "data", &mem, &contents);
		if (r == 0) {
			r = blk_parse(contents, &blk);
			if (r < 0)
				annotate(t, "data", h.off, r);
		}
		if (r == 0)
			r = verify_entries(&v, &blk, h.off, iter_key(idx), &prev, &entries);
		if (r == 0 && has_rec)
			r = verify_record(t, &blk, h.off, iter_key(idx), &rec);
		free(mem);
		if (r < 0) {
			problem(&v, h.off);
			if (r != -EUCLEAN)
				goto out;
		}
	}
	r = 0;
	if (expect_off != t->data_end) {
		ERR_CORRUPT("%s: data blocks end at offset %llu but the filter starts at %llu",
			   t->name, (unsigned long long)expect_off,
			   (unsigned long long)t->data_end);
		problem(&v, expect_off);
	}
	/* A damaged block already explains a short count. */
	if (v.problems == 0 && entries != t->props.num_entries) {
		ERR_CORRUPT("%s: found %llu entries, the properties say %llu", t->name,
			   (unsigned long long)entries, (unsigned long long)t->props.num_entries);
		problem(&v, t->meta[META_PROPS].off);
	}
out:
	iter_destroy(idx);
	buf_free(&prev);
	if (r < 0)
		return r;
	return v.problems ? -EUCLEAN : 0;
}

int sst_salvage(struct sst *t, int (*add)(void *arg, struct slice ikey, struct slice value),
		void (*bad)(void *arg, uint64_t off, struct slice lo, struct slice hi),
		void *arg)
{
	struct iter *idx = blk_iter_new(&t->index, ikey_cmp_fn, NULL, NULL);
	struct buf prev = BUF_INIT, lo = BUF_INIT;
	int r = 0;

	for (iter_seek_first(idx); iter_valid(idx) && r == 0; iter_next(idx)) {
		struct slice sep = iter_key(idx), contents;
		struct blk_handle h;
		struct block blk;
		struct iter *it;
		char *mem = NULL;
		int rb;

		if (!get_handle(iter_value(idx), &h) || !handle_fits(h, t->data_end)) {
			bad(arg, t->meta[META_INDEX].off, buf_slice(&lo), sep);
			buf_set(&lo, sep.data, sep.len);
			continue;
		}
		rb = read_block(t, h, "data", &mem, &contents);
		if (rb == 0)
			rb = blk_parse(contents, &blk);
		if (rb == 0) {
			/* check the whole block before handing out any of it */
			struct buf p = BUF_INIT;
			buf_set(&p, prev.data, prev.len);
			it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
			for (iter_seek_first(it); iter_valid(it) && rb == 0; iter_next(it)) {
				struct slice k = iter_key(it);
				if (!ikey_valid(k) || ikey_type(k) == KT_RANGE_DEL ||
				    (p.len && ikey_cmp(buf_slice(&p), k) >= 0) || ikey_cmp(k, sep) > 0)
					rb = -EUCLEAN;
				else
					buf_set(&p, k.data, k.len);
			}
			if (rb == 0 && iter_status(it) < 0)
				rb = iter_status(it);
			iter_destroy(it);
			buf_free(&p);
		}
		if (rb == 0) {
			it = blk_iter_new(&blk, ikey_cmp_fn, NULL, NULL);
			for (iter_seek_first(it); iter_valid(it) && r == 0; iter_next(it)) {
				struct slice k = iter_key(it);
				r = add(arg, k, iter_value(it));
				buf_set(&prev, k.data, k.len);
			}
			iter_destroy(it);
		} else if (rb != -EUCLEAN && rb != -EIO) {
			r = rb;
		} else {
			bad(arg, h.off, buf_slice(&lo), sep);
		}
		free(mem);
		buf_set(&lo, sep.data, sep.len);
	}
	if (r == 0 && iter_status(idx) < 0)
		r = iter_status(idx);
	iter_destroy(idx);
	buf_free(&prev);
	buf_free(&lo);
	return r;
}
