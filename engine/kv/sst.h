/*
 * sst.h -- SSTables: immutable sorted files of internal keys.
 *
 * File layout (all integers little-endian):
 *
 *     data block 0 | trailer
 *     ...
 *     data block N | trailer
 *     filter block | trailer        bloom filter over the user keys (bloom.h); empty if none
 *     range-del block | trailer     key = ikey(start, seq, KT_RANGE_DEL), value = end
 *     properties block | trailer    key = property name, value = varint64 (but for
 *                                   smallest_key, largest_key: the internal key bytes)
 *     index block | trailer         key = separator >= last key of block i and < first
 *                                   key of block i+1; value = varint64 offset, varint64 size
 *                                   [ | single-entry record ]
 *     footer (SST_FOOTER_SIZE bytes)
 *
 * The single-entry record (format version 2): the index entry of a data
 * block that holds exactly one entry -- a value of block_size bytes or more
 * always gets a block of its own -- has that entry's exact internal key as
 * its key (not a shortened separator), and its handle is followed by
 *
 *     varint64 value length | the value's first min(length, SST_VALUE_PREFIX) bytes
 *
 * so that a keys-only iterator steps over a large value without reading
 * its block.  Version 1 tables (no records) are still read.
 *
 *     trailer = 1 byte compression (0 none, 1 zstd) | fixed32 masked crc32c of
 *               the stored block bytes and the compression byte
 *     footer  = 4 x (fixed64 offset, fixed64 size) for filter, range-del,
 *               properties, index | fixed32 format version (2; 1 is read) |
 *               fixed32 masked crc32c of the preceding 68 bytes |
 *               fixed64 magic SST_MAGIC
 *
 * A zstd block stores the uncompressed length as a varint32 before the zstd
 * frame.  Blocks whose compressed form does not save at least 1/8 are stored
 * uncompressed.  Data blocks, range-del and index blocks use the block.h
 * format; sizes in handles exclude the trailer.
 *
 * Every block read is checked against its checksum before it is parsed or
 * decompressed; a mismatch is -EUCLEAN naming the file and offset.
 */
#ifndef SMOLFS_SST_H
#define SMOLFS_SST_H

#include "cache.h"
#include "dbformat.h"
#include "env.h"
#include "iter.h"
#include "rangedel.h"

#define SST_MAGIC UINT64_C(0x736d6f6c66737374)  /* "smolfsst" */
#define SST_FORMAT_VERSION 2      /* what the builder writes; versions 1 and 2 are read */
#define SST_VALUE_PREFIX 16       /* value bytes a single-entry record keeps */
#define SST_FOOTER_SIZE 80
#define SST_TRAILER 5

struct sst_options {
	size_t block_size;        /* target uncompressed data block size */
	int restart_interval;
	int compression_level;    /* zstd level; below 0 its fast levels; 0 = none */
	int bloom_bits_per_key;   /* 0 = no filter */
};

/* What a table holds; written into its properties block and returned by the builder. */
struct sst_props {
	uint64_t num_entries;       /* point entries (puts and deletes) */
	uint64_t num_deletes;
	uint64_t num_range_dels;
	uint64_t smallest_seq, largest_seq;  /* over all entries and tombstones */
	uint64_t raw_key_bytes, raw_value_bytes;
	uint64_t data_bytes;        /* stored data block bytes, with their trailers */
	uint64_t file_size;
	/*
	 * Smallest and largest internal keys, counting tombstones: a tombstone
	 * contributes ikey(start, seq, KT_RANGE_DEL) and ikey(end, SEQ_MAX,
	 * KT_RANGE_DEL) (its end is exclusive; this key sorts before every real
	 * version of end).  Filled by the builder; owned by the props.
	 */
	struct buf smallest, largest;
};
void sst_props_free(struct sst_props *p);

struct sst_builder;

/*
 * Write a table to f (not owned, not synced or closed here). name is for
 * messages.  The bytes reach f in appends of about 64 KiB, all of them by
 * the time sst_builder_finish returns; an append error is returned by the
 * call that made it, and by every later one.
 */
struct sst_builder *sst_builder_new(struct env_file *f, const struct sst_options *o, const char *name);
/* REQUIRES: ikeys strictly increasing (ikey_cmp), type KT_PUT or KT_DELETE. */
int sst_builder_add(struct sst_builder *b, struct slice ikey, struct slice value);
/* Tombstones may be added in any order, before finish. */
int sst_builder_add_range_del(struct sst_builder *b, struct slice start, struct slice end, uint64_t seq);
/*
 * Write the remaining blocks and footer; fills *props (caller frees with
 * sst_props_free; *props is zeroed first, so freeing it after a failure is safe).
 */
int sst_builder_finish(struct sst_builder *b, struct sst_props *props);
/* Bytes written so far (the size of the file if finished now, roughly). */
uint64_t sst_builder_file_size(const struct sst_builder *b);
uint64_t sst_builder_entries(const struct sst_builder *b);
/*
 * Blocks compressed so far, and how many of them were also compressed with
 * entropy-coded literals (choose_form); for tests and benchmarks.
 */
void sst_builder_forms(const struct sst_builder *b, uint64_t *blocks, uint64_t *coded);
/*
 * Tests: from the next builder on, compress every block in both literal
 * forms (choose_form), even where the raw-literal form shows that entropy
 * coding cannot pay (on = 1), or not (0, the default).
 */
void sst_set_always_two_forms(int on);
void sst_builder_free(struct sst_builder *b);

struct sst;

/*
 * Open a table: read and check the footer, index, filter, range-del and
 * properties blocks.  Takes ownership of f (sst_close closes it; a failed
 * open closes it before returning).  Data blocks are read on demand
 * through block_cache (may be NULL: no caching), keyed by cache_id.
 * bytes_read (may be NULL) is an atomic counter of block bytes read from
 * the file.  With use_map, blocks are read through a map of the file where
 * the environment offers one (under a guard: a page that is gone is -EIO),
 * else with pread.
 */
int sst_open(struct env_file *f, uint64_t file_size, const char *name, struct cache *block_cache,
	     uint64_t *bytes_read, int use_map, struct sst **out);
void sst_close(struct sst *t);

/*
 * Point lookup: find the first entry >= ikey(ukey, snap_seq, KT_SEEK).  If
 * its user key is ukey, return 1 and set *type, *seq and copy the value into
 * val (cleared first); return 0 if the table has no version of ukey visible
 * at snap_seq (the bloom filter usually answers without reading a block;
 * *bloom_skipped, if not NULL, is set to 1 then).  Negative on error.
 */
int sst_get(struct sst *t, struct slice ukey, uint64_t snap_seq, int *type, uint64_t *seq,
	    struct buf *val, int *bloom_skipped);
/* The same with hash = bloom_hash(ukey) given, so a lookup over many tables hashes once. */
int sst_get_hashed(struct sst *t, struct slice ukey, uint64_t hash, uint64_t snap_seq, int *type,
		   uint64_t *seq, struct buf *val, int *bloom_skipped);

/* Flags of a table iterator. */
#define SST_ITER_FILL_CACHE 1u  /* keep the blocks it reads in the block cache ... */
/*
 * ... except once it has opened this many blocks in a row by stepping from
 * one to the next: a long scan would only push out what other reads use
 * (and pay for the inserts and evictions: a 1 KiB-value scan of 300,000
 * entries took twice as long filling the cache as not), while the blocks
 * it reads once are dropped as soon as it leaves them.  It still finds what
 * is in the cache.  A seek starts the count again, so short scans (a seek
 * and a few hundred entries) fill the cache as before.
 */
#define SST_SCAN_FILL_BLOCKS 64
/*
 * Keys-only: value() may be only a prefix of the value -- at least its first
 * min(value_size(), SST_VALUE_PREFIX) bytes, all of it when the entry's
 * block was read anyway -- and value_size() is its full length.  An entry
 * with a single-entry record in the index is given from that record, and
 * its data block is not read.
 */
#define SST_ITER_KEYS_ONLY 2u

/* Iterator over the point entries (flags: SST_ITER_*, or 0). */
struct iter *sst_iter_new(struct sst *t, unsigned flags);
/*
 * The same, calling release(arg) when the iterator is destroyed (after it
 * last touches t): so whoever keeps t open for the iterator, such as the
 * table cache, needs no wrapping iterator of its own in every step.
 */
struct iter *sst_iter_new_released(struct sst *t, unsigned flags, void (*release)(void *arg),
				   void *arg);
/* The table's format version (the footer's): 1 or 2. */
uint32_t sst_format_version(const struct sst *t);
/* The table's range tombstones, fragmented (never NULL; may be empty). */
const struct rdel_set *sst_range_dels(const struct sst *t);
const struct sst_props *sst_get_props(const struct sst *t);
/*
 * Read every block, verify its checksum and the order of keys across the
 * whole file, and that each single-entry record of the index matches its
 * block; report each problem (offset, message).  0 or -EUCLEAN (or
 * the errno of an I/O error, which ends the check after reporting it).
 */
int sst_verify(struct sst *t, void (*report)(void *arg, uint64_t off, const char *msg), void *arg);
/*
 * For repair: every point entry of every data block that reads back whole
 * (checksum, format, key order), in order, through add (which may fail the
 * salvage with its error); for each block that does not, bad(off, lo, hi)
 * with the internal-key range the index gives it (lo: the previous block's
 * separator, empty for the first block; hi: its own).  Range tombstones
 * are not included (sst_range_dels has them; the open read them whole).
 * Returns 0, or an error of add or of the index (damage in a data block is
 * not an error here: it is what bad reports).
 */
int sst_salvage(struct sst *t, int (*add)(void *arg, struct slice ikey, struct slice value),
		void (*bad)(void *arg, uint64_t off, struct slice lo, struct slice hi),
		void *arg);

#endif
