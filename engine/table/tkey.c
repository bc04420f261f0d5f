/*
 * tkey.c -- the cell key encoding (tkey.h): escaping row keys and qualifiers
 * so that memcmp order of kv keys is the order of the wide-column model.
 *
 * Why escaping preserves order.  Write E(x) for the escaped form of x followed
 * by the terminator 0x00 0x01; escaping maps 0x00 to 0x00 0xFF and any other
 * byte b to itself.  Read E(x) as a string of tokens: a nonzero byte b, the
 * pair 0x00 0xFF (a zero byte of x), and the pair 0x00 0x01 (the end).  The
 * tokens are read left to right without ambiguity, and their order as bytes
 * is the order of what they stand for:
 *
 *     end (00 01)  <  x's byte 0x00 (00 FF)  <  x's byte b, b >= 1 (b)
 *
 * the first two because 0x01 < 0xFF after the common 0x00, the last because
 * a token that begins with 0x00 is below any token that begins with b >= 1.
 * Compare E(a) and E(b) for a != b:
 *   - a a proper prefix of b: after the common tokens, E(a) has "end" and
 *     E(b) a byte of b; end is below both kinds of byte token, so E(a) < E(b);
 *   - a and b first differ at byte i, a[i] < b[i]: the tokens for a[i] and
 *     b[i] are in that order (00 FF < b[i] when a[i] is 0, plain bytes
 *     otherwise), so E(a) < E(b).
 * In both cases the two encodings differ at a byte position that lies inside
 * both of them, so E is also prefix-free: whatever follows E(a) in a key
 * (the family, the qualifier, the timestamp) cannot change the comparison.
 * The fixed-width fields (table, family, timestamp) compare correctly as
 * big-endian numbers, the timestamp inverted so the newest sorts first.
 *
 * The same token view gives the other ranges in tkey.h: every row sharing the
 * byte prefix p has tokens beginning with those of p, so its key begins with
 * the escaped p without terminator (a p that ends in 0x00 ends in the full
 * token 00 FF, never in a dangling 0x00); and a row's cells all begin with
 * E(row) = ...00 01, while every greater row has, at that position, 00 FF or a
 * byte >= 1 -- so ...00 02 lies between them.
 */
#include "tkey.h"

#include <assert.h>

static void put_be16(struct buf *out, uint16_t v)
{
	char b[2] = { (char)(v >> 8), (char)v };

	buf_append(out, b, sizeof(b));
}

static void put_be32(struct buf *out, uint32_t v)
{
	char b[4] = { (char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v };

	buf_append(out, b, sizeof(b));
}

static void put_be64(struct buf *out, uint64_t v)
{
	put_be32(out, (uint32_t)(v >> 32));
	put_be32(out, (uint32_t)v);
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const unsigned char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Append s with each 0x00 written as 0x00 0xFF; runs without a zero are copied whole. */
static void put_escaped(struct buf *out, struct slice s)
{
	const char *p = s.data, *end = s.data + s.len;

	while (p < end) {
		const char *z = memchr(p, 0, (size_t)(end - p));
		size_t run = (size_t)((z ? z : end) - p);

		buf_append(out, p, run);
		if (!z)
			break;
		buf_append(out, "\0\xff", 2);
		p = z + 1;
	}
}

static void put_terminator(struct buf *out)
{
	buf_append(out, "\0\x01", 2);
}

void tkey_table_prefix(struct buf *out, uint32_t table)
{
	put_be32(out, table);
}

void tkey_row_scan_prefix(struct buf *out, uint32_t table, struct slice row_prefix)
{
	buf_reserve(out, TKEY_TABLE_LEN + 2 * row_prefix.len);
	put_be32(out, table);
	put_escaped(out, row_prefix);
}

void tkey_row_prefix(struct buf *out, uint32_t table, struct slice row)
{
	tkey_row_scan_prefix(out, table, row);
	put_terminator(out);
}

void tkey_row_end(struct buf *out, uint32_t table, struct slice row)
{
	tkey_row_scan_prefix(out, table, row);
	buf_append(out, "\0\x02", 2);
}

void tkey_family_prefix(struct buf *out, uint32_t table, struct slice row, uint16_t family)
{
	tkey_row_prefix(out, table, row);
	put_be16(out, family);
}

void tkey_column_prefix(struct buf *out, uint32_t table, struct slice row, uint16_t family,
			struct slice qualifier)
{
	buf_reserve(out, TKEY_TABLE_LEN + 2 * row.len + 2 + TKEY_FAMILY_LEN +
		    2 * qualifier.len + 2 + TKEY_TS_LEN);
	tkey_family_prefix(out, table, row, family);
	put_escaped(out, qualifier);
	put_terminator(out);
}

void tkey_encode(struct buf *out, uint32_t table, struct slice row, uint16_t family,
		 struct slice qualifier, uint64_t ts)
{
	tkey_column_prefix(out, table, row, family, qualifier);
	put_be64(out, UINT64_MAX - ts);
}

int tkey_successor(struct buf *out, struct slice prefix)
{
	size_t n = prefix.len;

	while (n > 0 && (unsigned char)prefix.data[n - 1] == 0xff)
		n--;
	if (n == 0)
		return 0;
	buf_append(out, prefix.data, n);
	out->data[out->len - 1] = (char)((unsigned char)out->data[out->len - 1] + 1);
	return 1;
}

/* ---------------------------------------------------------------- decoding */

/* Where one escaped component lies in a key, found by scan_component. */
struct component {
	size_t start;   /* offset of its first byte */
	size_t len;     /* escaped length, terminator excluded */
	size_t zeros;   /* escaped zero bytes in it (each 0x00 0xFF) */
};

/*
 * Scan the component that starts at offset pos of key up to its terminator;
 * on success *next is the offset after the terminator.  Jumps from zero byte
 * to zero byte with memchr, so a component costs about one pass over it.
 */
static int scan_component(struct slice key, size_t pos, const char *what, struct component *c,
			  size_t *next)
{
	const char *base = key.data, *p = key.data + pos, *end = key.data + key.len;

	c->start = pos;
	c->zeros = 0;
	for (;;) {
		const char *z = memchr(p, 0, (size_t)(end - p));

		if (!z)
			return ERR_CORRUPT("cell key: %s at offset %zu has no terminator", what,
					  pos);
		if (z + 1 == end)
			return ERR_CORRUPT("cell key: %s ends in a lone 0x00 at offset %zu", what,
					  (size_t)(z - base));
		if (z[1] == '\x01') {
			c->len = (size_t)(z - base) - pos;
			*next = (size_t)(z - base) + 2;
			return 0;
		}
		if (z[1] != '\xff')
			return ERR_CORRUPT("cell key: %s has 0x00 0x%02x at offset %zu", what,
					  (unsigned char)z[1], (size_t)(z - base));
		c->zeros++;
		p = z + 2;
	}
}

/* Unescape c (known well-formed) into dst, which has room for c->len - c->zeros bytes. */
static void unescape_into(char *dst, struct slice key, const struct component *c)
{
	const char *p = key.data + c->start, *end = p + c->len;

	while (p < end) {
		const char *z = memchr(p, 0, (size_t)(end - p));
		size_t run = (size_t)((z ? z : end) - p);

		memcpy(dst, p, run);
		dst += run;
		if (!z)
			break;
		assert(z + 1 < end && z[1] == '\xff');
		*dst++ = 0;
		p = z + 2;
	}
}

/*
 * Component c as a slice: of key if it has no escapes, else of its unescaped
 * bytes appended to scratch (the caller reserved the room, so nothing moves).
 */
static struct slice component_slice(struct slice key, const struct component *c,
				    struct buf *scratch)
{
	char *dst;

	if (c->zeros == 0)
		return slice_make(key.data + c->start, c->len);
	dst = scratch->data + scratch->len;
	unescape_into(dst, key, c);
	scratch->len += c->len - c->zeros;
	return slice_make(dst, c->len - c->zeros);
}

static size_t unescaped_len(const struct component *c)
{
	return c->zeros ? c->len - c->zeros : 0;
}

static int scan_row(struct slice key, struct component *row, size_t *next)
{
	if (key.len < TKEY_TABLE_LEN)
		return ERR_CORRUPT("cell key: %zu bytes, too short for a table id", key.len);
	return scan_component(key, TKEY_TABLE_LEN, "row", row, next);
}

int tkey_row_span(struct slice key, size_t *len)
{
	struct component row;

	return scan_row(key, &row, len);
}

int tkey_decode_row(struct slice key, uint32_t *table, struct slice *row, struct buf *scratch)
{
	struct component c;
	size_t next;
	int r = scan_row(key, &c, &next);

	if (r < 0)
		return r;
	buf_clear(scratch);
	buf_reserve(scratch, unescaped_len(&c));
	*table = get_be32((const unsigned char *)key.data);
	*row = component_slice(key, &c, scratch);
	return 0;
}

int tkey_decode(struct slice key, struct tkey *out, struct buf *scratch)
{
	struct component row, qual;
	size_t pos;
	int r = scan_row(key, &row, &pos);

	if (r < 0)
		return r;
	if (key.len - pos < TKEY_FAMILY_LEN)
		return ERR_CORRUPT("cell key: truncated in the family id at offset %zu", pos);
	r = scan_component(key, pos + TKEY_FAMILY_LEN, "qualifier", &qual, &pos);
	if (r < 0)
		return r;
	if (key.len - pos != TKEY_TS_LEN)
		return ERR_CORRUPT("cell key: %zu bytes after the qualifier at offset %zu, want %d",
				  key.len - pos, pos, TKEY_TS_LEN);

	/* One reservation for both, so the first slice cannot move while the second is written. */
	buf_clear(scratch);
	buf_reserve(scratch, unescaped_len(&row) + unescaped_len(&qual));
	out->table = get_be32((const unsigned char *)key.data);
	out->row = component_slice(key, &row, scratch);
	out->family = (uint16_t)((unsigned char)key.data[qual.start - 2] << 8 |
				 (unsigned char)key.data[qual.start - 1]);
	out->qualifier = component_slice(key, &qual, scratch);
	out->ts = UINT64_MAX - get_be64((const unsigned char *)key.data + pos);
	return 0;
}
