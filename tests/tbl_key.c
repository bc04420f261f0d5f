/*
 * tbl_key.c -- tests for engine/tkey.c, the cell key encoding: the documented
 * bytes, round trips of random binary parts, order preservation (memcmp order
 * of keys is the order of (table, row, family, qualifier, newest first)) on
 * adversarial row keys, the row, family, column, row-range and prefix-scan
 * bounds checked against brute force, and malformed keys refused with
 * -EUCLEAN without reading outside the key.
 *
 * Loops report one assertion each, with the first failure as a diagnostic.
 * SMOLFS_TEST_SEED changes the random cases.
 */
#include "tap.h"
#include "testutil.h"
#include "tkey.h"

#include <stdlib.h>

#define S(lit) { lit, sizeof(lit) - 1 }

struct str {
	const char *p;
	size_t n;
};

/* Row keys (and qualifiers) that stress the escaping: zeros, 0xFF, prefixes of each other. */
static const struct str adversarial[] = {
	S(""), S("\0"), S("\0\0"), S("\0\x01"), S("\0\xff"), S("\x01"), S("\x02"), S("\xfe"),
	S("\xff"), S("\xff\0"), S("\xff\xff"), S("a"), S("a\0"), S("a\0\0"), S("a\0\x01"),
	S("a\0b"), S("a\0\xff"), S("a\x01"), S("a\x02"), S("a\xff"), S("a\xff\0"), S("ab"),
	S("b"),
};
#define NADV (sizeof(adversarial) / sizeof(adversarial[0]))

static const uint16_t some_families[] = { 0, 1, 0xff, 0x100, 0xffff };
static const struct str some_qualifiers[] = {
	S(""), S("\0"), S("\x01"), S("q"), S("q\0"), S("\xff"),
};
static const uint64_t some_ts[] = { 0, 1, 1700000000000000ull, UINT64_MAX - 1, UINT64_MAX };
#define NFAM (sizeof(some_families) / sizeof(some_families[0]))
#define NQUAL (sizeof(some_qualifiers) / sizeof(some_qualifiers[0]))
#define NTS (sizeof(some_ts) / sizeof(some_ts[0]))

static uint64_t rng = 0x6a09e667f3bcc908ull;

static struct slice sl(struct str s)
{
	return slice_make(s.p, s.n);
}

/* A cell coordinate with its own storage for row and qualifier. */
struct tuple {
	uint32_t table;
	char row[24];
	size_t rlen;
	uint16_t family;
	char qual[24];
	size_t qlen;
	uint64_t ts;
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int sign(int x)
{
	return x < 0 ? -1 : x > 0;
}

/* The model's order: table, row byte-wise, family, qualifier byte-wise, newest first. */
static int tuple_cmp(const struct tuple *a, const struct tuple *b)
{
	int r = cmp_u64(a->table, b->table);

	if (!r)
		r = slice_cmp(slice_make(a->row, a->rlen), slice_make(b->row, b->rlen));
	if (!r)
		r = cmp_u64(a->family, b->family);
	if (!r)
		r = slice_cmp(slice_make(a->qual, a->qlen), slice_make(b->qual, b->qlen));
	if (!r)
		r = cmp_u64(b->ts, a->ts);
	return r;
}

static void encode_tuple(struct buf *out, const struct tuple *t)
{
	buf_clear(out);
	tkey_encode(out, t->table, slice_make(t->row, t->rlen), t->family,
		    slice_make(t->qual, t->qlen), t->ts);
}

/* A byte that is often one of the interesting ones. */
static char rand_byte(void)
{
	static const unsigned char hot[] = {
		0x00, 0x00, 0x01, 0x02, 0x7f, 0xfe, 0xff, 0xff, 'a', 'b',
	};
	uint64_t r = rand_next(&rng);

	if (r % 10 < 7)
		return (char)hot[(r >> 8) % sizeof(hot)];
	return (char)(r >> 16);
}

static size_t rand_bytes(char *p, size_t max)
{
	size_t n = (size_t)(rand_next(&rng) % (max + 1));

	for (size_t i = 0; i < n; i++)
		p[i] = rand_byte();
	return n;
}

static void rand_tuple(struct tuple *t)
{
	static const uint32_t tables[] = { 0, 1, 0x7fffffff, 0xffffffff };
	uint64_t r = rand_next(&rng);

	t->table = r % 3 ? tables[(r >> 4) % 4] : (uint32_t)(r >> 32);
	t->rlen = rand_bytes(t->row, 12);
	r = rand_next(&rng);
	t->family = r % 2 ? some_families[(r >> 4) % NFAM] : (uint16_t)(r >> 32);
	t->qlen = rand_bytes(t->qual, 12);
	r = rand_next(&rng);
	t->ts = r % 2 ? some_ts[(r >> 4) % NTS] : rand_next(&rng);
}

/* A neighbour of a: equal but for one small change, so comparisons reach deep into the key. */
static void rand_neighbour(const struct tuple *a, struct tuple *b)
{
	uint64_t r = rand_next(&rng);

	*b = *a;
	switch (r % 8) {
	case 0:
		if (b->rlen < sizeof(b->row))
			b->row[b->rlen++] = rand_byte();
		break;
	case 1:
		if (b->rlen)
			b->rlen--;
		break;
	case 2:
		if (b->rlen)
			b->row[(r >> 8) % b->rlen] = rand_byte();
		break;
	case 3:
		b->family = (uint16_t)(b->family + ((r >> 8) % 2 ? 1 : -1));
		break;
	case 4:
		if (b->qlen < sizeof(b->qual))
			b->qual[b->qlen++] = rand_byte();
		break;
	case 5:
		if (b->qlen)
			b->qual[(r >> 8) % b->qlen] = rand_byte();
		break;
	case 6:
		b->ts = b->ts + ((r >> 8) % 2 ? 1 : -1);
		break;
	default:
		rand_tuple(b);
		break;
	}
}

/* Decode from an exactly-sized heap copy, so that any read past the key trips ASan. */
static int decode_exact(const char *p, size_t n, struct tkey *out, struct buf *scratch,
			char **copy)
{
	*copy = malloc(n ? n : 1);
	if (n)
		memcpy(*copy, p, n);
	return tkey_decode(slice_make(*copy, n), out, scratch);
}

static int in_range(struct slice k, struct slice lo, struct slice hi, int bounded)
{
	return slice_cmp(k, lo) >= 0 && (!bounded || slice_cmp(k, hi) < 0);
}

static int has_prefix(struct slice s, struct slice p)
{
	return s.len >= p.len && (p.len == 0 || memcmp(s.data, p.data, p.len) == 0);
}

/* ---------------------------------------------------------------- layout */

static void test_layout(void)
{
	struct buf k = BUF_INIT;
	static const char want[] = "\x01\x02\x03\x04" "a\0\xff" "b" "\0\x01" "\x05\x06"
				   "\0\xff" "q" "\0\x01" "\xff\xff\xff\xff\xff\xff\xff\xfa";
	static const char want_ts0[] = "\0\0\0\0" "\0\x01" "\0\0" "\0\x01"
				       "\xff\xff\xff\xff\xff\xff\xff\xff";

	tkey_encode(&k, 0x01020304, slice_make("a\0b", 3), 0x0506, slice_make("\0q", 2), 5);
	is_mem(k.data, k.len, want, sizeof(want) - 1,
	       "table BE | row with 00 as 00 FF | 00 01 | family BE | qualifier | 00 01 | ~ts BE");

	buf_clear(&k);
	tkey_encode(&k, 0, slice_make("", 0), 0, slice_make("", 0), 0);
	is_mem(k.data, k.len, want_ts0, sizeof(want_ts0) - 1,
	       "empty row and qualifier are just their terminators; ts 0 is stored as all ones");

	buf_clear(&k);
	tkey_encode(&k, 0, slice_make("", 0), 0, slice_make("", 0), UINT64_MAX);
	is_mem(k.data + k.len - 8, 8, "\0\0\0\0\0\0\0\0", 8, "ts UINT64_MAX is stored as zero");

	buf_clear(&k);
	buf_append(&k, "xy", 2);
	tkey_row_prefix(&k, 7, slice_make("r", 1));
	is_mem(k.data, k.len, "xy\0\0\0\x07r\0\x01", 9, "encoders append to what the buffer holds");

	buf_clear(&k);
	tkey_table_prefix(&k, 0xa0b0c0d0);
	is_mem(k.data, k.len, "\xa0\xb0\xc0\xd0", 4, "table prefix is the big-endian table id");
	buf_clear(&k);
	tkey_row_end(&k, 1, slice_make("a\0", 2));
	is_mem(k.data, k.len, "\0\0\0\x01" "a\0\xff" "\0\x02", 9,
	       "row end is the row with 00 02 for a terminator");
	buf_clear(&k);
	tkey_family_prefix(&k, 1, slice_make("", 0), 0xfffe);
	is_mem(k.data, k.len, "\0\0\0\x01" "\0\x01" "\xff\xfe", 8, "family prefix");
	buf_clear(&k);
	tkey_column_prefix(&k, 1, slice_make("r", 1), 2, slice_make("q", 1));
	is_mem(k.data, k.len, "\0\0\0\x01" "r\0\x01" "\0\x02" "q\0\x01", 12, "column prefix");
	buf_clear(&k);
	tkey_row_scan_prefix(&k, 1, slice_make("a\0", 2));
	is_mem(k.data, k.len, "\0\0\0\x01" "a\0\xff", 7,
	       "a row-scan prefix ending in 0x00 ends in the full escape 00 FF, no terminator");
	buf_free(&k);
}

static void test_successor(void)
{
	static const struct {
		struct str in, out;
		int bounded;
	} cases[] = {
		{ S(""), S(""), 0 },
		{ S("\xff"), S(""), 0 },
		{ S("\xff\xff\xff"), S(""), 0 },
		{ S("a"), S("b"), 1 },
		{ S("a\xff"), S("b"), 1 },
		{ S("a\x01\xff\xff"), S("a\x02"), 1 },
		{ S("\0"), S("\x01"), 1 },
		{ S("\0\x01"), S("\0\x02"), 1 },
		{ S("\xfe\xff"), S("\xff"), 1 },
	};
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		buf_clear(&b);
		r = tkey_successor(&b, sl(cases[i].in));
		ok(r == cases[i].bounded && b.len == cases[i].out.n &&
		   (b.len == 0 || memcmp(b.data, cases[i].out.p, b.len) == 0),
		   "successor of case %zu (%zu bytes) is %s", i, cases[i].in.n,
		   cases[i].bounded ? "the expected key" : "unbounded, nothing appended");
	}

	buf_clear(&b);
	tkey_table_prefix(&b, 0xffffffff);
	{
		struct buf s = BUF_INIT;

		is_int(tkey_successor(&s, buf_slice(&b)), 0,
		       "the last table id has no finite upper bound");
		is_int(s.len, 0, "and nothing is appended");
		buf_free(&s);
	}
	buf_free(&b);
}

/* ---------------------------------------------------------------- round trips */

static void test_roundtrip(int n)
{
	struct buf k = BUF_INIT, scratch = BUF_INIT;
	int bad = 0, zero_copy_bad = 0, unescaped_seen = 0, plain_seen = 0;

	for (int i = 0; i < n; i++) {
		struct tuple t;
		struct tkey d;
		char *copy;
		int r;

		rand_tuple(&t);
		encode_tuple(&k, &t);
		memset(&d, 0xa5, sizeof(d));
		r = decode_exact(k.data, k.len, &d, &scratch, &copy);
		if (r != 0 || d.table != t.table || d.family != t.family || d.ts != t.ts ||
		    !slice_eq(d.row, slice_make(t.row, t.rlen)) ||
		    !slice_eq(d.qualifier, slice_make(t.qual, t.qlen))) {
			if (!bad++)
				diag("case %d: decode returned %d, table %u/%u family %u/%u", i, r,
				     d.table, t.table, d.family, t.family);
		}
		/* No escapes to undo: the slices point into the key, scratch stays empty. */
		if (r == 0 && !memchr(t.row, 0, t.rlen) && !memchr(t.qual, 0, t.qlen)) {
			plain_seen++;
			if (scratch.len != 0 || d.row.data < copy || d.row.data > copy + k.len ||
			    d.qualifier.data < copy || d.qualifier.data > copy + k.len)
				zero_copy_bad++;
		} else if (r == 0) {
			unescaped_seen++;
			if (scratch.len != (memchr(t.row, 0, t.rlen) ? t.rlen : 0) +
					   (memchr(t.qual, 0, t.qlen) ? t.qlen : 0))
				zero_copy_bad++;
		}
		free(copy);
	}
	is_int(bad, 0, "%d random keys decode to exactly their parts", n);
	ok(plain_seen > 0 && unescaped_seen > 0,
	   "the random keys include both escaped (%d) and plain (%d) components", unescaped_seen,
	   plain_seen);
	is_int(zero_copy_bad, 0,
	       "components without escapes are slices of the key; only escaped ones use scratch");

	/* Decoding reuses scratch: earlier contents are cleared, not accumulated. */
	{
		struct tkey d;

		buf_set(&scratch, "junk", 4);
		buf_clear(&k);
		tkey_encode(&k, 9, slice_make("\0", 1), 3, slice_make("x\0", 2), 77);
		ok(tkey_decode(buf_slice(&k), &d, &scratch) == 0 && scratch.len == 3 &&
		   slice_eq(d.row, slice_make("\0", 1)) &&
		   slice_eq(d.qualifier, slice_make("x\0", 2)),
		   "both components unescaped into one cleared scratch, neither overwriting the "
		   "other");
	}

	/* Row-only decoding, on a cell key and on a row prefix. */
	{
		uint32_t table = 0;
		struct slice row;
		size_t span = 0;
		struct buf p = BUF_INIT;

		ok(tkey_decode_row(buf_slice(&k), &table, &row, &scratch) == 0 && table == 9 &&
		   slice_eq(row, slice_make("\0", 1)), "decode_row on a cell key");
		tkey_row_prefix(&p, 12, slice_make("ab\0", 3));
		ok(tkey_decode_row(buf_slice(&p), &table, &row, &scratch) == 0 && table == 12 &&
		   slice_eq(row, slice_make("ab\0", 3)), "decode_row on a row prefix");
		ok(tkey_row_span(buf_slice(&k), &span) == 0 && span == 4 + 2 + 2,
		   "row span of a cell key is table + escaped row + terminator");
		buf_free(&p);
	}
	buf_free(&k);
	buf_free(&scratch);
}

/* ---------------------------------------------------------------- order */

/*
 * Every pair of tuples over the adversarial rows and qualifiers, the edge
 * families and timestamps, two tables: encoded order equals tuple order.
 */
static void test_order_adversarial(void)
{
	static const uint32_t tables[] = { 0, 1 };
	static const uint16_t fams[] = { 0, 1, 0xffff };
	static const uint64_t tss[] = { 0, 1, UINT64_MAX };
	size_t n = 2 * NADV * 3 * NQUAL * 3, i = 0;
	struct tuple *t = xcalloc(n, sizeof(*t));
	struct buf *k = xcalloc(n, sizeof(*k));
	long bad = 0, pairs = 0;

	for (size_t a = 0; a < 2; a++)
		for (size_t r = 0; r < NADV; r++)
			for (size_t f = 0; f < 3; f++)
				for (size_t q = 0; q < NQUAL; q++)
					for (size_t s = 0; s < 3; s++, i++) {
						struct tuple *x = &t[i];

						x->table = tables[a];
						memcpy(x->row, adversarial[r].p, adversarial[r].n);
						x->rlen = adversarial[r].n;
						x->family = fams[f];
						memcpy(x->qual, some_qualifiers[q].p,
						       some_qualifiers[q].n);
						x->qlen = some_qualifiers[q].n;
						x->ts = tss[s];
						encode_tuple(&k[i], x);
					}
	for (i = 0; i < n; i++)
		for (size_t j = i; j < n; j++, pairs++) {
			int want = sign(tuple_cmp(&t[i], &t[j]));
			int got = sign(slice_cmp(buf_slice(&k[i]), buf_slice(&k[j])));

			if (want != got && !bad++)
				diag("tuples %zu and %zu: keys compare %d, tuples %d", i, j, got,
				     want);
		}
	is_int(bad, 0, "all %ld pairs of %zu adversarial cell coordinates: key order = model order",
	       pairs, n);
	for (i = 0; i < n; i++)
		buf_free(&k[i]);
	free(k);
	free(t);
}

static void test_order_random(int n)
{
	struct buf ka = BUF_INIT, kb = BUF_INIT;
	long bad = 0, equal = 0, rowprefix = 0;

	for (int i = 0; i < n; i++) {
		struct tuple a, b;
		int want, got;

		rand_tuple(&a);
		if (i % 4)
			rand_neighbour(&a, &b);
		else
			rand_tuple(&b);
		encode_tuple(&ka, &a);
		encode_tuple(&kb, &b);
		want = sign(tuple_cmp(&a, &b));
		got = sign(slice_cmp(buf_slice(&ka), buf_slice(&kb)));
		equal += want == 0;
		if (a.table == b.table && a.rlen != b.rlen &&
		    has_prefix(slice_make(a.row, a.rlen), slice_make(b.row, b.rlen)))
			rowprefix++;
		if (want != got && !bad++)
			diag("pair %d: keys compare %d, tuples %d", i, got, want);
	}
	is_int(bad, 0, "%d random pairs (3 in 4 near neighbours): key order = model order", n);
	ok(equal > 0 && rowprefix > n / 50,
	   "the pairs include equal tuples (%ld) and rows that are prefixes of each other (%ld)",
	   equal, rowprefix);
	buf_free(&ka);
	buf_free(&kb);
}

/* ---------------------------------------------------------------- ranges */

/* The rows used for the range tests: the adversarial ones and some short random ones. */
#define NRAND_ROWS 120
#define NROWS (NADV + NRAND_ROWS)
static struct str range_rows[NROWS];
static char range_row_bytes[NRAND_ROWS][4];

static void make_range_rows(void)
{
	for (size_t i = 0; i < NROWS; i++) {
		if (i < NADV) {
			range_rows[i] = adversarial[i];
		} else {
			range_rows[i].p = range_row_bytes[i - NADV];
			range_rows[i].n = rand_bytes(range_row_bytes[i - NADV], 4);
		}
	}
}

static struct slice row_of(size_t i)
{
	return sl(range_rows[i]);
}

/* A cell's place within its row; the range tests walk a small grid of them. */
struct cellpos {
	uint16_t family;
	size_t qual;   /* index into some_qualifiers */
	uint64_t ts;
};

#define NGRID (3 * NQUAL * 3)
static struct cellpos cgrid[NGRID];

static void make_grid(void)
{
	static const uint16_t fams[] = { 0, 1, 0xffff };
	static const uint64_t tss[] = { 0, 42, UINT64_MAX };
	size_t n = 0;

	for (size_t f = 0; f < 3; f++)
		for (size_t q = 0; q < NQUAL; q++)
			for (size_t s = 0; s < 3; s++, n++) {
				cgrid[n].family = fams[f];
				cgrid[n].qual = q;
				cgrid[n].ts = tss[s];
			}
}

static void cell_key(struct buf *k, uint32_t table, size_t row, const struct cellpos *c)
{
	buf_clear(k);
	tkey_encode(k, table, row_of(row), c->family, sl(some_qualifiers[c->qual]), c->ts);
}

/* k in [lo, hi) */
static int inb(const struct buf *k, const struct buf *lo, const struct buf *hi)
{
	return in_range(buf_slice(k), buf_slice(lo), buf_slice(hi), 1);
}

static int begins(const struct buf *k, const struct buf *prefix)
{
	return has_prefix(buf_slice(k), buf_slice(prefix));
}

/*
 * For row r of table 5: the cells in [row prefix, row end), and the keys that
 * begin with the row prefix, are exactly r's, among all rows of tables 4..6.
 */
static long check_one_row(size_t r, struct buf *lo, struct buf *hi, struct buf *k)
{
	long bad = 0;

	buf_clear(lo);
	buf_clear(hi);
	tkey_row_prefix(lo, 5, row_of(r));
	tkey_row_end(hi, 5, row_of(r));
	for (size_t s = 0; s < NROWS; s++)
		for (uint32_t t = 4; t <= 6; t++)
			for (size_t c = 0; c < NGRID; c++) {
				int same = t == 5 && slice_eq(row_of(s), row_of(r));

				cell_key(k, t, s, &cgrid[c]);
				if ((inb(k, lo, hi) != same || begins(k, lo) != same) && !bad++)
					diag("row %zu vs a cell of row %zu in table %u", r, s, t);
			}
	return bad;
}

static void test_row_ranges(void)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT, k = BUF_INIT, succ = BUF_INIT;
	long bad_row = 0, bad_end = 0;

	for (size_t r = 0; r < NROWS; r++) {
		bad_row += check_one_row(r, &lo, &hi, &k);
		buf_clear(&succ);
		if (tkey_successor(&succ, buf_slice(&lo)) != 1 ||
		    !slice_eq(buf_slice(&succ), buf_slice(&hi)))
			bad_end++;
	}
	is_int(bad_row, 0, "%zu rows x %zu rows x 3 tables x %d cells: a row's [prefix, end) "
	       "holds exactly its own cells, and only they begin with its prefix",
	       (size_t)NROWS, (size_t)NROWS, (int)NGRID);
	is_int(bad_end, 0, "row end = successor of the row prefix for every row");
	buf_free(&lo);
	buf_free(&hi);
	buf_free(&k);
	buf_free(&succ);
}

/*
 * Within table 5, over the adversarial rows: the family range and the column
 * range of (row r, cell c) hold exactly the cells of that family / column,
 * and [key at ts, column end) exactly that column's versions at or before ts.
 */
static void check_family_column(size_t r, const struct cellpos *c, long bad[3])
{
	struct buf fam = BUF_INIT, famhi = BUF_INIT, col = BUF_INIT, colhi = BUF_INIT;
	struct buf at = BUF_INIT, k = BUF_INIT;

	tkey_family_prefix(&fam, 5, row_of(r), c->family);
	tkey_column_prefix(&col, 5, row_of(r), c->family, sl(some_qualifiers[c->qual]));
	if (tkey_successor(&famhi, buf_slice(&fam)) != 1 ||
	    tkey_successor(&colhi, buf_slice(&col)) != 1)
		bad[0]++;
	cell_key(&at, 5, r, c);
	for (size_t s = 0; s < NADV; s++)
		for (size_t d = 0; d < NGRID; d++) {
			const struct cellpos *e = &cgrid[d];
			int same_fam = slice_eq(row_of(s), row_of(r)) && e->family == c->family;
			int same_col = same_fam && e->qual == c->qual;

			cell_key(&k, 5, s, e);
			bad[0] += inb(&k, &fam, &famhi) != same_fam;
			bad[1] += inb(&k, &col, &colhi) != same_col;
			if (same_col)
				bad[2] += inb(&k, &at, &colhi) != (e->ts <= c->ts);
		}
	buf_free(&fam);
	buf_free(&famhi);
	buf_free(&col);
	buf_free(&colhi);
	buf_free(&at);
	buf_free(&k);
}

static void test_family_column_ranges(void)
{
	long bad[3] = { 0, 0, 0 };

	for (size_t r = 0; r < NADV; r++)
		for (size_t c = 0; c < NGRID; c++)
			check_family_column(r, &cgrid[c], bad);
	is_int(bad[0], 0, "a family prefix and its successor bound exactly that family's cells");
	is_int(bad[1], 0, "a column prefix and its successor bound exactly its versions");
	is_int(bad[2], 0, "[key at ts, column end) holds exactly the versions at or before ts");
}

static void test_row_range_scan(void)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT, k = BUF_INIT;
	long bad = 0;

	for (size_t a = 0; a < NADV; a++)
		for (size_t b = 0; b < NADV; b++) {
			buf_clear(&lo);
			buf_clear(&hi);
			tkey_row_prefix(&lo, 5, row_of(a));
			tkey_row_prefix(&hi, 5, row_of(b));
			for (size_t s = 0; s < NROWS; s++)
				for (size_t c = 0; c < NGRID; c += 5) {
					int want = slice_cmp(row_of(s), row_of(a)) >= 0 &&
						   slice_cmp(row_of(s), row_of(b)) < 0;

					cell_key(&k, 5, s, &cgrid[c]);
					if (inb(&k, &lo, &hi) != want && !bad++)
						diag("range [%zu, %zu) and row %zu", a, b, s);
				}
		}
	is_int(bad, 0, "row range [start, end) = [row prefix of start, row prefix of end), "
	       "for every pair of adversarial rows");
	buf_free(&lo);
	buf_free(&hi);
	buf_free(&k);
}

/* Rows of tables 4..6 in the prefix scan of pre in table 5: exactly those beginning with pre. */
static long check_prefix(struct slice pre, long *matches)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT, k = BUF_INIT;
	long bad = 0;
	int bounded;

	tkey_row_scan_prefix(&lo, 5, pre);
	bounded = tkey_successor(&hi, buf_slice(&lo));
	if (!bounded)
		bad++;
	for (size_t s = 0; s < NROWS; s++)
		for (uint32_t t = 4; t <= 6; t++)
			for (size_t c = 0; c < NGRID; c += 2) {
				int want = t == 5 && has_prefix(row_of(s), pre);

				int got;

				cell_key(&k, t, s, &cgrid[c]);
				got = inb(&k, &lo, &hi);
				*matches += want;
				if ((got != want || begins(&k, &lo) != want) && !bad++)
					diag("prefix of %zu bytes, row %zu, table %u: want %d",
					     pre.len, s, t, want);
			}
	buf_free(&lo);
	buf_free(&hi);
	buf_free(&k);
	return bad;
}

static void test_prefix_scan(void)
{
	static const struct str extra[] = { S("a\0\0\0"), S("\xff\xff\xff"), S("\0\0\0"), S("zz") };
	struct buf lo = BUF_INIT, hi = BUF_INIT, k = BUF_INIT;
	long bad = 0, matches = 0;

	for (size_t p = 0; p < NADV; p++)
		bad += check_prefix(sl(adversarial[p]), &matches);
	for (size_t p = 0; p < sizeof(extra) / sizeof(extra[0]); p++)
		bad += check_prefix(sl(extra[p]), &matches);
	is_int(bad, 0, "prefix scans (%ld cells matched): the bounds hold exactly the rows that "
	       "begin with the prefix, also for prefixes ending in 0x00 or 0xFF", matches);

	/* The case the escaping has to get right, spelled out. */
	{
		static const struct str rows[] = { S("a"), S("a\0"), S("a\0\0"), S("a\0b"),
						   S("a\0\xff"), S("a\x01"), S("a\xff"), S("b") };
		static const int want[] = { 0, 1, 1, 1, 1, 0, 0, 0 };
		int agree = 1;

		tkey_row_scan_prefix(&lo, 5, slice_make("a\0", 2));
		tkey_successor(&hi, buf_slice(&lo));
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			buf_clear(&k);
			tkey_encode(&k, 5, sl(rows[i]), 1, slice_make("q", 1), 1);
			if (inb(&k, &lo, &hi) != want[i])
				agree = 0;
		}
		ok(agree, "prefix \"a\\0\" matches a\\0, a\\0\\0, a\\0b, a\\0\\xff; "
		   "not a, a\\1, a\\xff, b");
	}

	/* The last table: an empty row prefix has no finite upper bound, and needs none. */
	buf_clear(&lo);
	buf_clear(&hi);
	tkey_row_scan_prefix(&lo, 0xffffffff, slice_make("", 0));
	is_int(tkey_successor(&hi, buf_slice(&lo)), 0,
	       "table 0xFFFFFFFF, empty prefix: unbounded above");
	buf_clear(&lo);
	buf_clear(&hi);
	tkey_row_scan_prefix(&lo, 0xffffffff, slice_make("\xff", 1));
	is_int(tkey_successor(&hi, buf_slice(&lo)), 0,
	       "table 0xFFFFFFFF, prefix \"\\xff\": unbounded above");
	buf_free(&lo);
	buf_free(&hi);
	buf_free(&k);
}

/* ---------------------------------------------------------------- malformed */

static int decode_rc(const char *p, size_t n)
{
	struct buf scratch = BUF_INIT;
	struct tkey d;
	char *copy;
	int r = decode_exact(p, n, &d, &scratch, &copy);

	free(copy);
	buf_free(&scratch);
	return r;
}

static void test_malformed(int n)
{
	struct buf k = BUF_INIT, scratch = BUF_INIT;
	long bad_trunc = 0, bad_ext = 0, bad_row = 0;

	for (int i = 0; i < n; i++) {
		struct tuple t;
		size_t span;

		rand_tuple(&t);
		encode_tuple(&k, &t);
		if (tkey_row_span(buf_slice(&k), &span) != 0) {
			bad_row++;
			continue;
		}
		for (size_t cut = 0; cut < k.len; cut++) {
			uint32_t table;
			struct slice row;
			char *copy = malloc(cut ? cut : 1);
			int r, rr, rs;
			size_t s2;

			if (decode_rc(k.data, cut) != -EUCLEAN && !bad_trunc++)
				diag("key %d cut at %zu of %zu decodes", i, cut, k.len);
			memcpy(copy, k.data, cut);
			rr = tkey_decode_row(slice_make(copy, cut), &table, &row, &scratch);
			rs = tkey_row_span(slice_make(copy, cut), &s2);
			r = cut < span ? -EUCLEAN : 0;
			if ((rr != r || rs != r || (r == 0 && s2 != span)) && !bad_row++)
				diag("key %d cut at %zu: decode_row %d, row_span %d, want %d", i,
				     cut, rr, rs, r);
			free(copy);
		}
		for (int e = 0; e < 4; e++) {
			static const char more[] = { 0x00, 0x01, (char)0xff, 'x' };

			buf_append(&k, &more[e], 1);
			if (decode_rc(k.data, k.len) != -EUCLEAN && !bad_ext++)
				diag("key %d with a byte 0x%02x appended decodes", i,
				     (unsigned char)more[e]);
			k.len--;
		}
	}
	is_int(bad_trunc, 0, "every truncation of %d random keys is -EUCLEAN", n);
	is_int(bad_ext, 0, "a byte appended after the timestamp is -EUCLEAN");
	is_int(bad_row, 0, "decode_row and row_span: -EUCLEAN exactly when the row is cut");

	/* A bad escape (0x00 then anything but 0x01 / 0xFF) in the row and in the qualifier. */
	{
		long bad = 0;

		for (int which = 0; which < 2; which++)
			for (int v = 0; v < 256; v++) {
				size_t at;

				if (v == 0x01 || v == 0xff)
					continue;
				buf_clear(&k);
				tkey_encode(&k, 3, slice_make("r\0s", 3), 1, slice_make("q\0u", 3),
					    9);
				/* the 0xFF of the row's escape, then of the qualifier's */
				at = which == 0 ? 4 + 2 : 4 + 6 + 2 + 2;
				if ((unsigned char)k.data[at] != 0xff || k.data[at - 1] != 0) {
					bad++;
					continue;
				}
				k.data[at] = (char)v;
				if (decode_rc(k.data, k.len) != -EUCLEAN)
					bad++;
			}
		is_int(bad, 0, "0x00 followed by any byte but 0x01 or 0xFF, in row or qualifier, "
		       "is -EUCLEAN");
	}

	is_int(decode_rc("", 0), -EUCLEAN, "empty key");
	is_int(decode_rc("\0\0\x01", 3), -EUCLEAN, "three bytes: no room for the table id");
	is_int(decode_rc("\0\0\0\x01" "abc", 7), -EUCLEAN, "row without terminator");
	is_int(decode_rc("\0\0\0\x01" "abc\0", 8), -EUCLEAN, "row ending in a lone 0x00");
	is_int(decode_rc("\0\0\0\x01" "a\0\x01" "\0", 8), -EUCLEAN, "one byte of family id");
	is_int(decode_rc("\0\0\0\x01" "a\0\x01" "\0\x01" "q", 10), -EUCLEAN,
	       "qualifier without terminator");
	is_int(decode_rc("\0\0\0\x01" "a\0\x01" "\0\x01" "q\0\x01" "1234567", 19), -EUCLEAN,
	       "seven bytes of timestamp");
	is_int(decode_rc("\0\0\0\x01" "a\0\x01" "\0\x01" "q\0\x01" "12345678", 20), 0,
	       "eight bytes of timestamp: well-formed");
	{
		uint32_t table;
		struct slice row;

		ok(tkey_decode_row(slice_make("\0\0\0\x01" "a\0\x07", 7), &table, &row, &scratch) ==
		   -EUCLEAN && strstr(err_last(), "tkey.c") != NULL,
		   "the corruption message names where it was detected (%s)", err_last());
	}
	buf_free(&k);
	buf_free(&scratch);
}

/* The assertions of the randomized parts, run again with the seed drawn for this run. */
#define PLAN_RANDOM 22

int main(void)
{
	uint64_t seeds[2] = { 0, 0 }, t0 = now_micros();
	int nseeds = test_seeds(rng, seeds);

	rng = seeds[0];
	plan(53 + (nseeds - 1) * PLAN_RANDOM);
	test_layout();
	test_successor();
	test_roundtrip(20000);
	test_order_adversarial();
	test_order_random(200000);
	make_range_rows();
	make_grid();
	test_row_ranges();
	test_family_column_ranges();
	test_row_range_scan();
	test_prefix_scan();
	test_malformed(500);
	if (nseeds > 1) {
		rng = seeds[1];
		test_roundtrip(20000);
		test_order_random(50000);
		test_malformed(500);
	}
	diag("%.2f s", (double)(now_micros() - t0) / 1e6);
	return exit_status();
}
