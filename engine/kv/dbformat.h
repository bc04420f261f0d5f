/*
 * dbformat.h -- internal keys: how the engine stores versions of user keys.
 *
 * Every entry in a memtable or SSTable is keyed by an internal key:
 *
 *     user key bytes | fixed64 little-endian (sequence << 8 | type)
 *
 * The sequence number orders all writes (each mutation of a batch takes the
 * next one); the type says what the entry is.  Internal keys sort by user key
 * (memcmp order) ascending, then by the 8-byte trailer descending, so the
 * newest version of a key comes first and a lookup for "key as of sequence S"
 * is a seek to (key, S, KT_SEEK).
 *
 * Range tombstones (delete every key in [start, end)) are kept apart from the
 * point entries (see rangedel.h) and carry type KT_RANGE_DEL.
 */
#ifndef SMOLFS_DBFORMAT_H
#define SMOLFS_DBFORMAT_H

#include "util.h"

enum key_type {
	KT_DELETE = 0,
	KT_PUT = 1,
	KT_RANGE_DEL = 2,
};
/* The type used in seek keys: the largest, so (k, S, KT_SEEK) sorts first among k's versions at S. */
#define KT_SEEK KT_RANGE_DEL

#define SEQ_MAX ((UINT64_C(1) << 56) - 1)
#define IKEY_TRAILER 8

static inline uint64_t ikey_pack(uint64_t seq, int type)
{
	return seq << 8 | (uint64_t)type;
}

/* Append an internal key to b. */
void ikey_append(struct buf *b, struct slice ukey, uint64_t seq, int type);
/*
 * The seek key (ukey, seq, KT_SEEK) for a point lookup: built in mem (cap
 * bytes, on the caller's stack) when it fits, so a lookup allocates
 * nothing, else in *spill (which the caller frees).
 */
static inline struct slice ikey_seek_key(char *mem, size_t cap, struct buf *spill,
					 struct slice ukey, uint64_t seq)
{
	if (ukey.len + IKEY_TRAILER > cap) {
		ikey_append(spill, ukey, seq, KT_SEEK);
		return buf_slice(spill);
	}
	if (ukey.len)
		memcpy(mem, ukey.data, ukey.len);
	enc_fixed64(mem + ukey.len, ikey_pack(seq, KT_SEEK));
	return slice_make(mem, ukey.len + IKEY_TRAILER);
}

/* Accessors; REQUIRES ikey.len >= 8 (check with ikey_valid on data read from disk). */
static inline int ikey_valid(struct slice ikey)
{
	return ikey.len >= IKEY_TRAILER && (ikey.data[ikey.len - 8] & 0xff) <= KT_RANGE_DEL;
}
static inline struct slice ikey_user(struct slice ikey)
{
	return slice_make(ikey.data, ikey.len - IKEY_TRAILER);
}
static inline uint64_t ikey_trailer(struct slice ikey)
{
	return dec_fixed64(ikey.data + ikey.len - IKEY_TRAILER);
}
static inline uint64_t ikey_seq(struct slice ikey)
{
	return ikey_trailer(ikey) >> 8;
}
static inline int ikey_type(struct slice ikey)
{
	return (int)(ikey_trailer(ikey) & 0xff);
}

/*
 * User key ascending, then trailer descending.  REQUIRES both keys at least
 * 8 bytes long (the trailer): keys we build always are, and every reader of
 * keys from disk checks them as it decodes them (the block iterator, the
 * manifest's file bounds and compact pointers, a table's properties), so
 * this runs on every comparison without a length check.
 */
static inline int ikey_cmp(struct slice a, struct slice b)
{
	int r = slice_cmp(ikey_user(a), ikey_user(b));

	if (r == 0) {
		uint64_t ta = ikey_trailer(a), tb = ikey_trailer(b);
		r = ta > tb ? -1 : ta < tb;
	}
	return r;
}

/* Comparator signature used by blocks, merging iterators and the skiplist. */
typedef int (*key_cmp_fn)(struct slice a, struct slice b);
int ikey_cmp_fn(struct slice a, struct slice b);
int ukey_cmp_fn(struct slice a, struct slice b);

/*
 * Shortest separators for index blocks: *start is replaced (in place, in the
 * buffer) by a key k with start <= k < limit, as short as possible; and a key
 * >= start that is short.  Both work on internal keys.
 */
void ikey_shortest_separator(struct buf *start, struct slice limit);
void ikey_short_successor(struct buf *key);

#endif
