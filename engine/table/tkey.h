/*
 * tkey.h -- the order-preserving encoding of the wide-column model's cell
 * coordinates onto kv keys.  Pure functions: no I/O, no global state.
 *
 * A cell (table, row, family, qualifier, timestamp) is stored under the kv key
 *
 *     table id     4 bytes, big-endian
 *     row          escaped, then the terminator 0x00 0x01
 *     family id    2 bytes, big-endian
 *     qualifier    escaped, then the terminator 0x00 0x01
 *     ~timestamp   8 bytes, big-endian, of UINT64_MAX - ts
 *
 * where escaping writes each 0x00 byte as 0x00 0xFF and leaves every other
 * byte alone.  So memcmp order of kv keys is: table id, then row key
 * byte-wise (a row that is a prefix of another sorts first), then family id,
 * then qualifier byte-wise, then timestamp NEWEST FIRST.  tkey.c explains why
 * the escaping preserves order.
 *
 * Ranges, all half-open [lower, upper) in kv key order:
 *     a table          [tkey_table_prefix(t), successor of it)
 *     a row            [tkey_row_prefix(t, r), tkey_row_end(t, r))
 *     rows [s, e)      [tkey_row_prefix(t, s), tkey_row_prefix(t, e))
 *     rows beginning p [tkey_row_scan_prefix(t, p), successor of it)
 *     a family in a row, a column (all versions of one qualifier):
 *                      [tkey_family_prefix / tkey_column_prefix, successor of it)
 *     a column's versions at or older than ts:
 *                      [tkey_encode(..., ts), successor of the column prefix)
 * "successor of it" is tkey_successor(), which may answer "no bound" (only for
 * table 0xFFFFFFFF), in which case the range is unbounded above.
 *
 * Every encoder APPENDS to out (so keys can be composed; buf_clear first for a
 * fresh key) and cannot fail.  Limits on row and qualifier lengths are the
 * table layer's business; nothing here depends on them.
 */
#ifndef SMOLFS_TKEY_H
#define SMOLFS_TKEY_H

#include "util.h"

#define TKEY_TABLE_LEN 4   /* bytes of the table id */
#define TKEY_FAMILY_LEN 2  /* bytes of the family id */
#define TKEY_TS_LEN 8      /* bytes of the inverted timestamp */

/* The parts of a decoded cell key.  row and qualifier are unescaped. */
struct tkey {
	uint32_t table;
	struct slice row;
	uint16_t family;
	struct slice qualifier;
	uint64_t ts;
};

/* The full kv key of one version of one cell. */
void tkey_encode(struct buf *out, uint32_t table, struct slice row, uint16_t family,
		 struct slice qualifier, uint64_t ts);

/* Every key of a table starts with this (the 4-byte table id). */
void tkey_table_prefix(struct buf *out, uint32_t table);

/*
 * Every cell of one row starts with this: table id, escaped row, terminator.
 * It is also the smallest kv key of that row: seek here to reach the row, and
 * use it as the (exclusive) upper bound for the rows before it.
 */
void tkey_row_prefix(struct buf *out, uint32_t table, struct slice row);

/*
 * The exclusive upper bound of one row's cells, and the place to seek to reach
 * the first key of the next row: table id, escaped row, 0x00 0x02.  Equal to
 * tkey_successor(row prefix).
 */
void tkey_row_end(struct buf *out, uint32_t table, struct slice row);

/* All cells of one family in one row: the row prefix and the family id. */
void tkey_family_prefix(struct buf *out, uint32_t table, struct slice row, uint16_t family);

/* All versions of one column: the family prefix, the escaped qualifier, its terminator. */
void tkey_column_prefix(struct buf *out, uint32_t table, struct slice row, uint16_t family,
			struct slice qualifier);

/*
 * For a prefix scan over row keys: the table id and the escaped row_prefix
 * WITHOUT a terminator.  A cell's kv key begins with this exactly when its row
 * key begins with row_prefix (byte-wise), also when row_prefix ends in 0x00
 * (escaped as 0x00 0xFF, which is how every longer row continues it).  The
 * scan's upper bound is tkey_successor() of it.
 */
void tkey_row_scan_prefix(struct buf *out, uint32_t table, struct slice row_prefix);

/*
 * The shortest key greater than every key that begins with prefix: prefix
 * without its trailing 0xFF bytes, its last byte then incremented.  Appends it
 * and returns 1; returns 0 and appends nothing when there is no such key
 * (prefix empty or all 0xFF): the range is then unbounded above.
 */
int tkey_successor(struct buf *out, struct slice prefix);

/*
 * Decode a cell key into its parts.  Returns 0, or -EUCLEAN (with a message,
 * see ERR_CORRUPT) if key is not exactly one well-formed cell key: too short
 * for a fixed field, a component without its terminator, 0x00 followed by
 * anything but 0x01 or 0xFF, or bytes left after the timestamp.  Never reads
 * outside key.
 *
 * Allocation-light: a component without escapes is returned as a slice into
 * key; one with escapes is unescaped into scratch (cleared first, grown at
 * most once).  So out->row and out->qualifier are valid while key's bytes and
 * scratch are alive and unchanged.  scratch must not hold key's bytes.
 */
int tkey_decode(struct slice key, struct tkey *out, struct buf *scratch);

/*
 * Decode only the table id and row of a key that begins with a row prefix (a
 * cell key or a row prefix itself); what follows the row is not read or
 * checked.  Same return values and slice rules as tkey_decode.
 */
int tkey_decode_row(struct slice key, uint32_t *table, struct slice *row, struct buf *scratch);

/*
 * The length of key's row prefix (table id, escaped row, terminator): two cell
 * keys belong to the same row exactly when these many leading bytes agree,
 * so a scan can find row boundaries without unescaping anything.  0 or
 * -EUCLEAN as for tkey_decode_row.
 */
int tkey_row_span(struct slice key, size_t *len);

#endif
