/*
 * tbl_scan.c -- tests for engine/tscan.c: reading rows and scanning tables.
 *
 * Cells are mostly written with raw kv batches (tkey_encode + cell_encode into
 * the family's locality-group tree, resolved through the schema), so these
 * tests fail for scan bugs only, and can also plant what the mutation API
 * refuses to write: cells of unknown families, keys and values that do not
 * decode.  One section writes through tbl_put and tbl_mutate_row to check
 * that scans see mutations and their tombstones.
 *
 * Covered: every field of struct tbl_read alone and together (the randomized
 * part compares scans and row reads with a naive in-memory model over
 * adversarial row keys and qualifiers, two locality groups, GC settings, a
 * dropped family, flushes and a reopen), prefix and range boundaries, reverse
 * order equal to forward order reversed, versions and GC, cells of two
 * groups merged into rows, the cost of a one-group read and of row_keys_only
 * (kv bytes read), counts, errors, and the seeds' fixtures: the aircraft
 * table, the webtable, the bus-location table and a sensor time series with
 * a TTL.
 *
 * SMOLFS_TEST_SCALE multiplies the randomized rounds; SMOLFS_TEST_SEED
 * changes them.
 */
#include "tap.h"
#include "testutil.h"
#include "table_int.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEC UINT64_C(1000000)

static struct tbl_db *db;
static uint64_t rng = 0x243f6a8885a308d3ull;

/* ------------------------------------------------------------ setup */

/* Small memtables and blocks so that a few hundred cells make several SSTables. */
static void open_db(void)
{
	struct tbl_options o;
	char *dir = xasprintf("%s/db", tmpdir);
	int r;

	tbl_options_init(&o);
	o.kv.write_buffer_size = 256 * 1024;
	o.kv.target_file_size = 256 * 1024;
	o.kv.block_cache_size = 1 << 20;
	r = tbl_open(dir, &o, &db);
	free(dir);
	if (r < 0) {
		diag("tbl_open: %s", kv_strerror(r));
		exit(1);
	}
}

static void reopen_db(void)
{
	int r = tbl_close(db);

	if (r < 0)
		diag("tbl_close: %s", kv_strerror(r));
	open_db();
}

static void must(int r, const char *what)
{
	if (r < 0) {
		diag("%s: %s", what, kv_strerror(r));
		ok(0, "setup step succeeds: %s", what);
		exit(exit_status() ? exit_status() : 1);
	}
}

static void mk_table(const char *t)
{
	must(tbl_create_table(db, t), t);
}

static void mk_family(const char *t, const char *f, const char *group, uint32_t max_versions,
		      uint64_t ttl)
{
	struct tbl_family_settings s;

	tbl_family_settings_init(&s);
	if (group)
		snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	s.max_versions = max_versions;
	s.ttl = ttl;
	must(tbl_add_family(db, t, f, &s), f);
}

/* ------------------------------------------------------------ raw writes */

/*
 * Write one stored version straight into the engine: the kv key of tkey.h in
 * the family's locality-group tree, the value exactly as given (already
 * encoded, or deliberately damaged).
 */
static void raw_put_stored(const char *table, const void *row, size_t rlen, const char *family,
			   const void *q, size_t qlen, uint64_t ts, const void *val, size_t vlen)
{
	struct tsch_table *t;
	struct tsch_family *f;
	struct kv_tree *tree;
	struct buf key = BUF_INIT;
	struct kv_batch *b;
	uint16_t id;

	must(tsch_lock_table(db, table, &t), table);
	f = tsch_find_family(t, family);
	if (!f) {
		tsch_unlock(db);
		must(-ENOENT, family);
	}
	id = f->id;
	tree = tsch_group_tree(f->group);
	tkey_encode(&key, t->id, slice_make(row, rlen), id, slice_make(q, qlen), ts);
	tsch_unlock(db);
	b = kv_batch_new();
	must(kv_batch_put_tree(b, tree, key.data, key.len, val, vlen), "batch put");
	must(kv_write(tbl_kv(db), b, 0), "kv_write");
	kv_batch_free(b);
	buf_free(&key);
}

static void raw_put(const char *table, const void *row, size_t rlen, const char *family,
		    const void *q, size_t qlen, uint64_t ts, const struct cell_value *v)
{
	struct buf val = BUF_INIT;

	must(cell_encode(&val, v), "cell_encode");
	raw_put_stored(table, row, rlen, family, q, qlen, ts, val.data, val.len);
	buf_free(&val);
}

static struct cell_value str_value(const char *s)
{
	struct cell_value v;

	memset(&v, 0, sizeof(v));
	v.type = CELL_STRING;
	v.v.data = slice_str(s);
	return v;
}

/* The common case: text row, text qualifier, string value. */
static void put_str(const char *table, const char *row, const char *family, const char *q,
		    uint64_t ts, const char *val)
{
	struct cell_value v = str_value(val);

	raw_put(table, row, strlen(row), family, q, strlen(q), ts, &v);
}

/* Put a key with an arbitrary kv value into the tree of family's group. */
static void raw_kv_put(const char *family_table, const char *family, const void *key, size_t klen,
		       const void *val, size_t vlen)
{
	struct tsch_table *t;
	struct tsch_family *f;
	struct kv_tree *tree;
	struct kv_batch *b;

	must(tsch_lock_table(db, family_table, &t), family_table);
	f = tsch_find_family(t, family);
	tree = f ? tsch_group_tree(f->group) : NULL;
	tsch_unlock(db);
	b = kv_batch_new();
	must(kv_batch_put_tree(b, tree, key, klen, val, vlen), "batch put");
	must(kv_write(tbl_kv(db), b, 0), "kv_write");
	kv_batch_free(b);
}

static uint32_t table_id(const char *table)
{
	struct tsch_table *t;
	uint32_t id;

	must(tsch_lock_table(db, table, &t), table);
	id = t->id;
	tsch_unlock(db);
	return id;
}

/* ------------------------------------------------------------ rendering */

/* Bytes for comparison and diagnostics: printable ASCII as is, others as \xHH. */
static void esc(struct buf *out, const void *p, size_t n)
{
	const unsigned char *u = p;
	char hex[8];

	for (size_t i = 0; i < n; i++) {
		if (u[i] >= 0x21 && u[i] < 0x7f && u[i] != '\\' && u[i] != '|') {
			buf_append(out, &u[i], 1);
		} else {
			snprintf(hex, sizeof(hex), "\\x%02x", u[i]);
			buf_append(out, hex, 4);
		}
	}
}

static void puts_buf(struct buf *out, const char *s)
{
	buf_append(out, s, strlen(s));
}

/* One cell as " family:qualifier@ts=value" (keys_only: "=<type/size>"). */
static void render_cell(struct buf *out, const char *family, const void *q, size_t qlen,
			uint64_t ts, const struct cell_value *v, size_t value_size, int keys_only)
{
	char num[64];

	puts_buf(out, " ");
	puts_buf(out, family);
	puts_buf(out, ":");
	esc(out, q, qlen);
	snprintf(num, sizeof(num), "@%llu=", (unsigned long long)ts);
	puts_buf(out, num);
	if (keys_only) {
		snprintf(num, sizeof(num), "<%s/%zu>", cell_type_name(v->type), value_size);
		puts_buf(out, num);
	} else {
		struct buf text = BUF_INIT;

		if (cell_render(&text, v) < 0)
			puts_buf(out, "<unrenderable>");
		if (v->type != CELL_BYTES && text.len && text.data[text.len - 1] == '\n')
			text.len--;
		esc(out, text.data, text.len);
		snprintf(num, sizeof(num), "(%s/%zu)", cell_type_name(v->type), value_size);
		puts_buf(out, num);
		buf_free(&text);
	}
}

static void render_row(struct buf *out, const struct tbl_row *row, int keys_only)
{
	puts_buf(out, "[");
	esc(out, row->key, row->key_len);
	puts_buf(out, "]");
	for (size_t i = 0; i < row->ncells; i++) {
		const struct tbl_cell *c = &row->cells[i];

		render_cell(out, c->family, c->qualifier, c->qualifier_len, c->ts, &c->value,
			    c->value_size, keys_only);
	}
	puts_buf(out, "\n");
}

/*
 * The whole scan as text, or "error <errno>" if it fails.  Counts go to *c
 * (may be NULL).  The result is a malloc'd string.
 */
static char *scan_text(const char *table, const struct tbl_read *r, struct tbl_scan_counts *c)
{
	struct buf out = BUF_INIT;
	struct tbl_scan *s;
	const struct tbl_row *row;
	int err = tbl_scan_new(db, table, r, &s);

	if (err < 0)
		return xasprintf("error %d", err);
	while ((err = tbl_scan_next(s, &row)) == 1)
		render_row(&out, row, r && r->keys_only);
	if (c)
		tbl_scan_counts(s, c);
	tbl_scan_free(s);
	if (err < 0) {
		buf_free(&out);
		return xasprintf("error %d", err);
	}
	buf_append(&out, "", 1);
	return out.data ? out.data : xstrdup("");
}

/* tbl_get_row as text ("error <errno>" on failure). */
static char *row_text(const char *table, const void *row, size_t rlen, const struct tbl_read *r)
{
	struct tbl_row *got;
	struct buf out = BUF_INIT;
	int err = tbl_get_row(db, table, row, rlen, r, &got);

	if (err < 0)
		return xasprintf("error %d", err);
	render_row(&out, got, r && r->keys_only);
	tbl_row_free(got);
	buf_append(&out, "", 1);
	return out.data;
}

/* is_str that frees the result. */
static int text_is(char *got, const char *want, const char *name)
{
	int r = is_str(got, want, "%s", name);

	free(got);
	return r;
}

/* is_str that frees both. */
static int texts_are(char *got, char *want, const char *name)
{
	int r = text_is(got, want, name);

	free(want);
	return r;
}

/* Just the row keys of a scan, one per line. */
static char *scan_keys(const char *table, const struct tbl_read *r)
{
	struct buf out = BUF_INIT;
	struct tbl_scan *s;
	const struct tbl_row *row;
	int err = tbl_scan_new(db, table, r, &s);

	if (err < 0)
		return xasprintf("error %d", err);
	while ((err = tbl_scan_next(s, &row)) == 1) {
		esc(&out, row->key, row->key_len);
		puts_buf(&out, "\n");
	}
	tbl_scan_free(s);
	if (err < 0) {
		buf_free(&out);
		return xasprintf("error %d", err);
	}
	buf_append(&out, "", 1);
	return out.data ? out.data : xstrdup("");
}

static struct tbl_read read_init(void)
{
	struct tbl_read r;

	memset(&r, 0, sizeof(r));
	return r;
}

/* ------------------------------------------------------------ basic reads */

static void test_basic(void)
{
	struct tbl_read r = read_init();
	struct tbl_scan_counts c;
	struct tbl_scan *s;
	const struct tbl_row *row;
	struct tbl_row *got;
	struct cell_value v;
	const char *fams1[] = { "b" };

	diag("basic reads");
	mk_table("basic");
	mk_family("basic", "b", NULL, 0, 0);
	mk_family("basic", "a", NULL, 0, 0);

	text_is(scan_text("basic", NULL, &c), "", "an empty table scans to nothing");
	is_int(c.rows + c.cells, 0, "an empty scan counts no rows and no cells");

	put_str("basic", "r1", "b", "x", 10, "bx10");
	put_str("basic", "r1", "a", "y", 20, "ay20");
	put_str("basic", "r1", "a", "y", 30, "ay30");
	put_str("basic", "r2", "b", "", 5, "empty-qualifier");
	memset(&v, 0, sizeof(v));
	v.type = CELL_I64;
	v.v.i64 = -42;
	raw_put("basic", "r3", 2, "a", "n", 1, 7, &v);

	text_is(scan_text("basic", NULL, &c),
		"[r1] a:y@30=ay30(string/4) a:y@20=ay20(string/4) b:x@10=bx10(string/4)\n"
		"[r2] b:@5=empty-qualifier(string/15)\n"
		"[r3] a:n@7=-42(i64/8)\n",
		"a scan with r == NULL returns every row, cells by family name, newest first");
	is_int(c.rows, 3, "counts: three rows returned");
	is_int(c.cells, 5, "counts: five cells returned");
	/*
	 * bytes: every kv key and value read.  Keys are 4 (table) + row + 2 + 2 (family)
	 * + qualifier + 2 + 8 (ts): 21 for r1's and r3's, 20 for r2's; values 1 + payload.
	 */
	is_int(c.bytes, 3 * (21 + 5) + (20 + 16) + (21 + 9),
	       "counts: bytes are the kv keys and values read");

	text_is(row_text("basic", "r1", 2, NULL),
		"[r1] a:y@30=ay30(string/4) a:y@20=ay20(string/4) b:x@10=bx10(string/4)\n",
		"tbl_get_row with r == NULL returns every visible version of the row");
	text_is(row_text("basic", "r0", 2, NULL), "error -2",
		"tbl_get_row of a missing row: -ENOENT");
	ok(strstr(kv_strerror(-ENOENT), "r0") && strstr(kv_strerror(-ENOENT), "basic"),
	   "the message names the table and the row: %s", kv_strerror(-ENOENT));
	text_is(row_text("nosuchtable", "r1", 2, NULL), "error -2",
		"tbl_get_row of a missing table: -ENOENT");
	text_is(scan_text("nosuchtable", NULL, NULL), "error -2",
		"tbl_scan_new of a missing table: -ENOENT");
	ok(strstr(kv_strerror(-ENOENT), "nosuchtable") != NULL,
	   "the message names the missing table: %s", kv_strerror(-ENOENT));

	r.families = fams1;
	r.nfamilies = 1;
	text_is(row_text("basic", "r3", 2, &r), "error -2",
		"tbl_get_row: a row without cells of the asked families is -ENOENT");
	{
		const char *bad[] = { "nope" };

		r.families = bad;
		text_is(scan_text("basic", &r, NULL), "error -2",
			"a families filter naming an undeclared family: -ENOENT");
		ok(strstr(kv_strerror(-ENOENT), "nope") != NULL,
		   "the message names the family: %s", kv_strerror(-ENOENT));
	}
	r = read_init();
	r.ts_min = 10;
	r.ts_max = 5;
	text_is(scan_text("basic", &r, NULL), "error -22", "a reversed time range: -EINVAL");
	{
		char *big = xmalloc(TBL_MAX_ROW_KEY + 1);

		memset(big, 'k', TBL_MAX_ROW_KEY + 1);
		text_is(row_text("basic", big, TBL_MAX_ROW_KEY + 1, NULL), "error -36",
			"tbl_get_row of a row key over 4 KiB: -ENAMETOOLONG");
		free(big);
	}

	/* A scan's row stays valid until the next call; the row of get_row until freed. */
	must(tbl_scan_new(db, "basic", NULL, &s), "scan");
	is_int(tbl_scan_next(s, &row), 1, "tbl_scan_next returns 1 with a row");
	is_mem(row->key, row->key_len, "r1", 2, "the first row is r1");
	is_str(row->cells[0].family, "a", "cells report their family by name");
	is_int(tbl_scan_next(s, &row), 1, "then r2");
	is_int(tbl_scan_next(s, &row), 1, "then r3");
	is_int(tbl_scan_next(s, &row), 0, "then 0 at the end");
	is_int(tbl_scan_next(s, &row), 0, "and 0 again after the end");
	tbl_scan_free(s);
	must(tbl_get_row(db, "basic", "r2", 2, NULL, &got), "get r2");
	is_int(got->ncells, 1, "tbl_get_row returns the row's one cell");
	is_mem(got->cells[0].value.v.data.data, got->cells[0].value.v.data.len,
	       "empty-qualifier", 15, "its value is copied into the row");
	is_int(got->cells[0].qualifier_len, 0, "an empty qualifier reads back empty");
	tbl_row_free(got);
}

/* ------------------------------------------------------------ row ranges */

struct str {
	const char *p;
	size_t n;
};
#define S(lit) { lit, sizeof(lit) - 1 }

/* Row keys that stress the encoding: zeros, 0xFF, keys that are prefixes of each other. */
static const struct str adv_rows[] = {
	S("\0"), S("\0\0"), S("\0\x01"), S("\0\xff"), S("\x01"), S("\xfe"), S("\xff"),
	S("\xff\0"), S("\xff\xff"), S("a"), S("a\0"), S("a\0\0"), S("a\0\x01"), S("a\0b"),
	S("a\x01"), S("a\xff"), S("a\xff\0"), S("ab"), S("b"),
};
#define NADV (sizeof(adv_rows) / sizeof(adv_rows[0]))

static int cmp_str(const void *a, const void *b)
{
	const struct str *x = a, *y = b;

	return slice_cmp(slice_make(x->p, x->n), slice_make(y->p, y->n));
}

static int starts_with(struct str s, struct str p)
{
	return s.n >= p.n && (p.n == 0 || memcmp(s.p, p.p, p.n) == 0);
}

/* The expected key list for rows in [start, end) with prefix, in order, limited. */
static char *expected_keys(const struct str *sorted, size_t n, const struct str *prefix,
			   const struct str *start, const struct str *end, int reverse,
			   uint64_t limit)
{
	struct buf out = BUF_INIT;
	uint64_t got = 0;

	for (size_t k = 0; k < n; k++) {
		size_t i = reverse ? n - 1 - k : k;
		struct slice key = slice_make(sorted[i].p, sorted[i].n);

		if (prefix && !starts_with(sorted[i], *prefix))
			continue;
		if (start && slice_cmp(key, slice_make(start->p, start->n)) < 0)
			continue;
		if (end && slice_cmp(key, slice_make(end->p, end->n)) >= 0)
			continue;
		if (limit && got == limit)
			break;
		got++;
		esc(&out, key.data, key.len);
		puts_buf(&out, "\n");
	}
	buf_append(&out, "", 1);
	return out.data;
}

static void test_row_ranges(void)
{
	struct str sorted[NADV];
	struct tbl_read r;
	int bad;

	diag("prefix scans and row ranges over adversarial row keys");
	mk_table("adv");
	mk_family("adv", "f", NULL, 0, 0);
	mk_family("adv", "g", "other", 0, 0);
	mk_table("adv2");   /* a neighbour table: its rows must never leak into adv's scans */
	mk_family("adv2", "f", NULL, 0, 0);
	for (size_t i = 0; i < NADV; i++) {
		/* the rows alternate between the groups, some in both */
		raw_put("adv", adv_rows[i].p, adv_rows[i].n, i % 3 == 1 ? "g" : "f", "q", 1, 1,
			&(struct cell_value){ .type = CELL_BYTE, .v.byte = (uint8_t)i });
		if (i % 3 == 2)
			raw_put("adv", adv_rows[i].p, adv_rows[i].n, "g", "q", 1, 1,
				&(struct cell_value){ .type = CELL_BYTE, .v.byte = 0 });
		raw_put("adv2", adv_rows[i].p, adv_rows[i].n, "f", "q", 1, 1,
			&(struct cell_value){ .type = CELL_BYTE, .v.byte = 0 });
	}
	memcpy(sorted, adv_rows, sizeof(sorted));
	qsort(sorted, NADV, sizeof(sorted[0]), cmp_str);

	r = read_init();
	texts_are(scan_keys("adv", &r), expected_keys(sorted, NADV, NULL, NULL, NULL, 0, 0),
		  "a full scan returns the adversarial rows byte-wise sorted, once each "
		  "(no row of the neighbour table)");
	{
		char *want = expected_keys(sorted, NADV, NULL, NULL, NULL, 0, 0);

		r.prefix = "";
		r.prefix_len = 0;
		text_is(scan_keys("adv", &r), want, "an empty prefix matches every row");
		free(want);
	}

	/* Every key and a few more as prefix, start and end, forward and reverse. */
	static const struct str probes[] = {
		S(""), S("\0"), S("\0\0"), S("\0\xff"), S("\x01"), S("\xff"), S("\xff\xff"),
		S("\xff\xff\xff"), S("a"), S("a\0"), S("a\0\0"), S("a\xff"), S("ab"), S("abc"),
		S("b"), S("c"),
	};
	size_t np = sizeof(probes) / sizeof(probes[0]);

	bad = 0;
	for (size_t i = 0; i < np && !bad; i++) {
		for (int rev = 0; rev < 2 && !bad; rev++) {
			char *want = expected_keys(sorted, NADV, &probes[i], NULL, NULL, rev, 0);
			char *got;

			r = read_init();
			r.prefix = probes[i].p;
			r.prefix_len = probes[i].n;
			r.reverse = rev;
			got = scan_keys("adv", &r);
			if (strcmp(got, want)) {
				struct buf p = BUF_INIT;

				esc(&p, probes[i].p, probes[i].n);
				buf_append(&p, "", 1);
				diag("prefix \"%s\" reverse %d: got\n%s\nwant\n%s", p.data, rev,
				     got, want);
				buf_free(&p);
				bad = 1;
			}
			free(got);
			free(want);
		}
	}
	ok(!bad, "every prefix scan (0x00, 0xff, prefixes of each other) returns exactly the "
	   "rows that start with the prefix, forward and reverse");

	bad = 0;
	for (size_t i = 0; i < np && !bad; i++) {
		for (size_t j = 0; j < np && !bad; j++) {
			for (int rev = 0; rev < 2 && !bad; rev++) {
				char *want = expected_keys(sorted, NADV, NULL, &probes[i],
							   &probes[j], rev, 0);
				char *got;

				r = read_init();
				r.start = probes[i].p;
				r.start_len = probes[i].n;
				r.end = probes[j].p;
				r.end_len = probes[j].n;
				r.reverse = rev;
				got = scan_keys("adv", &r);
				if (strcmp(got, want)) {
					diag("range %zu..%zu reverse %d: got\n%s\nwant\n%s", i, j,
					     rev, got, want);
					bad = 1;
				}
				free(got);
				free(want);
			}
		}
	}
	ok(!bad, "every range [start, end) includes start and excludes end, forward and reverse "
	   "(an empty or reversed range is empty)");

	bad = 0;
	for (size_t i = 0; i < np && !bad; i++) {
		for (size_t j = 0; j < np && !bad; j++) {
			for (int rev = 0; rev < 2 && !bad; rev++) {
				uint64_t lim = (i + j) % 4;
				char *want = expected_keys(sorted, NADV, &probes[(i + j) % np],
							   &probes[i], NULL, rev, lim);
				char *got;

				r = read_init();
				r.prefix = probes[(i + j) % np].p;
				r.prefix_len = probes[(i + j) % np].n;
				r.start = probes[i].p;
				r.start_len = probes[i].n;
				r.reverse = rev;
				r.row_limit = lim;
				got = scan_keys("adv", &r);
				if (strcmp(got, want)) {
					diag("prefix %zu start %zu reverse %d limit %llu: got\n%s\n"
					     "want\n%s", (i + j) % np, i, rev,
					     (unsigned long long)lim, got, want);
					bad = 1;
				}
				free(got);
				free(want);
			}
		}
	}
	ok(!bad, "prefix, start, reverse and row_limit together give the intersection, limited "
	   "in scan order");

	/* A single row read of each adversarial key returns that row alone. */
	bad = 0;
	for (size_t i = 0; i < NADV && !bad; i++) {
		struct tbl_row *got;
		int err = tbl_get_row(db, "adv", adv_rows[i].p, adv_rows[i].n, NULL, &got);

		if (err < 0 || got->key_len != adv_rows[i].n ||
		    memcmp(got->key, adv_rows[i].p, adv_rows[i].n) != 0 ||
		    got->ncells != (i % 3 == 2 ? 2u : 1u)) {
			diag("row %zu: err %d", i, err);
			bad = 1;
		}
		if (err == 0)
			tbl_row_free(got);
	}
	ok(!bad, "tbl_get_row of each adversarial key returns exactly that row, from both groups");
	text_is(row_text("adv", "a\xff\xff", 3, NULL), "error -2",
		"tbl_get_row of a key that only extends stored keys: -ENOENT");
}

/* ------------------------------------------------------------ filters */

static void test_filters(void)
{
	struct tbl_read r;
	const char *only_b[] = { "b" };
	const char *b_and_a[] = { "b", "a" };

	diag("qualifier, time-range, versions and cells_per_row filters");
	mk_table("flt");
	/* ids in creation order z, b, a; groups: z and a default, b its own */
	mk_family("flt", "z", NULL, 0, 0);
	mk_family("flt", "b", "grp", 0, 0);
	mk_family("flt", "a", NULL, 0, 0);
	for (int ts = 1; ts <= 3; ts++) {
		put_str("flt", "row", "z", "q", (uint64_t)ts, "z");
		put_str("flt", "row", "b", "q", (uint64_t)ts, "b");
		put_str("flt", "row", "b", "qa", (uint64_t)ts, "b");
		put_str("flt", "row", "a", "p", (uint64_t)ts, "a");
		put_str("flt", "row", "a", "q", (uint64_t)ts, "a");
		put_str("flt", "row", "a", "q\x01", (uint64_t)ts, "a");
		put_str("flt", "row", "a", "r", (uint64_t)ts, "a");
	}
	put_str("flt", "row", "a", "", 9, "empty");

	r = read_init();
	r.versions = 1;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:@9=empty(string/5) a:p@3=a(string/1) a:q@3=a(string/1) "
		"a:q\\x01@3=a(string/1) a:r@3=a(string/1) b:q@3=b(string/1) b:qa@3=b(string/1) "
		"z:q@3=z(string/1)\n",
		"versions 1: the newest version of each column; families by name across groups");

	r = read_init();
	r.qualifier = "q";
	r.qualifier_len = 1;
	r.qualifier_exact = 1;
	r.versions = 2;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:q@3=a(string/1) a:q@2=a(string/1) b:q@3=b(string/1) b:q@2=b(string/1) "
		"z:q@3=z(string/1) z:q@2=z(string/1)\n",
		"an exact qualifier selects one column in every family (not q\\x01 or qa)");

	r.qualifier_exact = 0;
	r.versions = 1;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:q@3=a(string/1) a:q\\x01@3=a(string/1) b:q@3=b(string/1) "
		"b:qa@3=b(string/1) z:q@3=z(string/1)\n",
		"a qualifier prefix selects the columns that start with it");

	r.qualifier = "";
	r.qualifier_len = 0;
	r.qualifier_exact = 1;
	text_is(row_text("flt", "row", 3, &r), "[row] a:@9=empty(string/5)\n",
		"an empty exact qualifier selects the column with the empty qualifier");
	r.qualifier_exact = 0;
	r.families = only_b;
	r.nfamilies = 1;
	text_is(row_text("flt", "row", 3, &r), "[row] b:q@3=b(string/1) b:qa@3=b(string/1)\n",
		"an empty qualifier prefix matches every column; families filter alone");

	r = read_init();
	r.ts_min = 2;
	r.ts_max = 3;
	r.families = b_and_a;
	r.nfamilies = 2;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:p@2=a(string/1) a:q@2=a(string/1) a:q\\x01@2=a(string/1) "
		"a:r@2=a(string/1) b:q@2=b(string/1) b:qa@2=b(string/1)\n",
		"a time range [2, 3) keeps only versions at 2; families in name order, not request "
		"order");
	r.ts_min = 2;
	r.ts_max = 0;
	r.versions = 1;
	r.families = only_b;
	r.nfamilies = 1;
	text_is(row_text("flt", "row", 3, &r), "[row] b:q@3=b(string/1) b:qa@3=b(string/1)\n",
		"ts_max 0 means no upper bound");
	r.ts_min = 0;
	r.ts_max = 3;
	text_is(row_text("flt", "row", 3, &r), "[row] b:q@2=b(string/1) b:qa@2=b(string/1)\n",
		"versions counts after the time range: the newest version below ts_max");
	r.ts_min = 5;
	r.ts_max = 0;
	text_is(row_text("flt", "row", 3, &r), "error -2",
		"a time range that holds no version leaves no row: -ENOENT");

	r = read_init();
	r.cells_per_row = 4;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:@9=empty(string/5) a:p@3=a(string/1) a:p@2=a(string/1) "
		"a:p@1=a(string/1)\n",
		"cells_per_row takes the first cells in the row's order");
	r.cells_per_row = 3;
	r.versions = 1;
	r.qualifier = "q";
	r.qualifier_len = 1;
	r.qualifier_exact = 1;
	r.families = NULL;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:q@3=a(string/1) b:q@3=b(string/1) z:q@3=z(string/1)\n",
		"cells_per_row with versions and an exact qualifier over two groups");
	r.cells_per_row = 2;
	text_is(row_text("flt", "row", 3, &r), "[row] a:q@3=a(string/1) b:q@3=b(string/1)\n",
		"cells_per_row 2 cuts the row after family b, whose cells come from another group");
	r.keys_only = 1;
	text_is(row_text("flt", "row", 3, &r),
		"[row] a:q@3=<string/1> b:q@3=<string/1>\n",
		"keys_only gives type and size without values");
}

/* ------------------------------------------------------------ keys only */

static void test_keys_only(void)
{
	struct tbl_read r = read_init();
	struct tbl_scan *s;
	const struct tbl_row *row;
	char stored[6] = { CELL_STRING, 'a', '\xff', 'b', 'c', 'd' };  /* not UTF-8 */
	char bad_tag[2] = { 9, 0 };
	char big[1000];

	diag("keys_only");
	mk_table("ko");
	mk_family("ko", "f", NULL, 0, 0);
	memset(big, 'v', sizeof(big));
	raw_put("ko", "big", 3, "f", "q", 1, 1,
		&(struct cell_value){ .type = CELL_BYTES, .v.data = { big, sizeof(big) } });
	raw_put("ko", "num", 3, "f", "d", 1, 1,
		&(struct cell_value){ .type = CELL_F64, .v.f64 = 2.5 });
	raw_put_stored("ko", "utf", 3, "f", "q", 1, 1, stored, sizeof(stored));

	r.keys_only = 1;
	text_is(scan_text("ko", &r, NULL),
		"[big] f:q@1=<bytes/1000>\n[num] f:d@1=<f64/8>\n[utf] f:q@1=<string/5>\n",
		"keys_only reports each cell's type and stored size, without decoding the "
		"payload (the string that is not UTF-8 is no error)");
	must(tbl_scan_new(db, "ko", &r, &s), "scan");
	is_int(tbl_scan_next(s, &row), 1, "keys_only: first row");
	is_int(row->cells[0].value.type, CELL_BYTES, "the type comes from the tag byte");
	is_int(row->cells[0].value.v.data.len, 0, "the value's data is empty");
	is_int(row->cells[0].value_size, 1000, "value_size is the stored payload length");
	tbl_scan_free(s);

	r.keys_only = 0;
	text_is(scan_text("ko", &r, NULL), "error -117",
		"a full read of a string value that is not UTF-8: -EUCLEAN");
	ok(strstr(kv_strerror(-EUCLEAN), "ko") && strstr(kv_strerror(-EUCLEAN), "utf"),
	   "the message names the table and row: %s", kv_strerror(-EUCLEAN));

	raw_put_stored("ko", "utf", 3, "f", "q", 1, 1, bad_tag, sizeof(bad_tag));
	r.keys_only = 1;
	text_is(scan_text("ko", &r, NULL), "error -117",
		"keys_only still refuses a value whose tag byte is not a type: -EUCLEAN");
	raw_put_stored("ko", "utf", 3, "f", "q", 1, 1, "", 0);
	text_is(scan_text("ko", &r, NULL), "error -117",
		"keys_only refuses an empty stored value: -EUCLEAN");
}

/* ------------------------------------------------------------ corruption, unknown families */

static void test_damage(void)
{
	struct buf key = BUF_INIT;
	uint32_t id;

	diag("undecodable keys and cells of unknown families");
	mk_table("dmg");
	mk_family("dmg", "f", NULL, 0, 0);
	put_str("dmg", "a", "f", "q", 1, "fine");
	id = table_id("dmg");

	/* a cell of a family id the table never had: invisible */
	tkey_encode(&key, id, slice_str("b"), 999, slice_str("q"), 1);
	{
		struct buf val = BUF_INIT;
		struct cell_value v = str_value("ghost");

		cell_encode(&val, &v);
		raw_kv_put("dmg", "f", key.data, key.len, val.data, val.len);
		buf_free(&val);
	}
	text_is(scan_text("dmg", NULL, NULL), "[a] f:q@1=fine(string/4)\n",
		"a cell of a family id the table does not have is invisible, and so is its row");
	text_is(row_text("dmg", "b", 1, NULL), "error -2",
		"a row holding only cells of unknown families is -ENOENT");

	/* a key in the table's range that is not a cell key */
	buf_clear(&key);
	tkey_row_prefix(&key, id, slice_str("c"));
	buf_append(&key, "\x01", 1);   /* a family id cut short */
	raw_kv_put("dmg", "f", key.data, key.len, "\x01x", 2);
	text_is(scan_text("dmg", NULL, NULL), "error -117",
		"a key in the table that does not decode: -EUCLEAN from tbl_scan_next");
	ok(strstr(kv_strerror(-EUCLEAN), "dmg") != NULL, "the message names the table: %s",
	   kv_strerror(-EUCLEAN));
	{
		struct tbl_scan *s;
		const struct tbl_row *row;

		must(tbl_scan_new(db, "dmg", NULL, &s), "scan");
		is_int(tbl_scan_next(s, &row), 1, "the rows before the damage are returned");
		is_int(tbl_scan_next(s, &row), -EUCLEAN, "then -EUCLEAN");
		is_int(tbl_scan_next(s, &row), -EUCLEAN, "and -EUCLEAN again: the error is sticky");
		ok(row == NULL, "with no row");
		tbl_scan_free(s);
	}
	text_is(row_text("dmg", "a", 1, NULL), "[a] f:q@1=fine(string/4)\n",
		"a read of another row does not meet the damaged key");
	buf_free(&key);
}

/* ------------------------------------------------------------ versions and GC */

static void test_gc(void)
{
	uint64_t now = wall_micros();
	struct tbl_read r = read_init();
	struct tsch_table *t;

	diag("versions and garbage collection on reads");
	mk_table("gc");
	mk_family("gc", "two", NULL, 2, 0);
	mk_family("gc", "ttl", "g2", 0, 100);
	mk_family("gc", "both", NULL, 1, 100);
	for (int i = 1; i <= 3; i++)
		put_str("gc", "r", "two", "c", (uint64_t)i * 10,
			i == 1 ? "v1" : i == 2 ? "v2" : "v3");
	put_str("gc", "r", "ttl", "old", now - 500 * SEC, "expired");
	put_str("gc", "r", "ttl", "mix", now - 500 * SEC, "expired");
	put_str("gc", "r", "ttl", "mix", now - 10 * SEC, "fresh");
	put_str("gc", "r", "both", "c", now - 500 * SEC, "expired");
	put_str("gc", "r", "both", "c", now - 20 * SEC, "older-but-fresh");
	put_str("gc", "r", "both", "c", now - 10 * SEC, "newest");
	put_str("gc", "onlyold", "ttl", "x", now - 1000 * SEC, "expired");

	char *want = xasprintf("[r] both:c@%llu=newest(string/6) "
			       "ttl:mix@%llu=fresh(string/5) "
			       "two:c@30=v3(string/2) two:c@20=v2(string/2)\n",
			       (unsigned long long)(now - 10 * SEC),
			       (unsigned long long)(now - 10 * SEC));
	text_is(scan_text("gc", NULL, NULL), want,
		"max_versions 2 hides the third version; a ttl hides old versions and columns; "
		"a row with only expired cells is not returned");
	text_is(row_text("gc", "onlyold", 7, NULL), "error -2",
		"tbl_get_row of a row whose cells all expired: -ENOENT");
	r.ts_max = 30;
	text_is(row_text("gc", "r", 1, &r), "[r] two:c@20=v2(string/2)\n",
		"GC counts versions before the time range: the version at 10 stays hidden "
		"(it is the third newest), although only 20 is in [0, 30)");

	/* max_versions applies at once when the family is altered, and grows back too */
	{
		struct tbl_family_settings s;

		must(tbl_get_family(db, "gc", "two", &s), "get family");
		s.max_versions = 0;
		must(tbl_alter_family(db, "gc", "two", &s), "alter family");
		r = read_init();
		const char *two[] = { "two" };
		r.families = two;
		r.nfamilies = 1;
		text_is(row_text("gc", "r", 1, &r),
			"[r] two:c@30=v3(string/2) two:c@20=v2(string/2) two:c@10=v1(string/2)\n",
			"raising max_versions to unlimited shows the uncompacted third version");
		s.max_versions = 1;
		must(tbl_alter_family(db, "gc", "two", &s), "alter family");
		text_is(row_text("gc", "r", 1, &r), "[r] two:c@30=v3(string/2)\n",
			"max_versions 1 shows only the newest");
	}

	/* has_cells sees through GC */
	must(tsch_lock_table(db, "gc", &t), "lock");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "ttl"), slice_str("onlyold")), 0,
	       "tscan_row_has_cells: a row of expired cells has none of the family");
	is_int(tscan_row_has_cells(db, t, NULL, slice_str("onlyold")), 0,
	       "tscan_row_has_cells: ... nor of any family");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "ttl"), slice_str("r")), 1,
	       "tscan_row_has_cells: a row with a fresh ttl cell has the family");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "two"), slice_str("onlyold")), 0,
	       "tscan_row_has_cells: a family absent from the row");
	is_int(tscan_row_has_cells(db, t, NULL, slice_str("nosuchrow")), 0,
	       "tscan_row_has_cells: a missing row has no cells");
	is_int(tscan_table_has_cells(db, t, NULL), 1, "tscan_table_has_cells: the table has cells");
	is_int(tscan_table_has_cells(db, t, tsch_find_family(t, "both")), 1,
	       "tscan_table_has_cells: family both has a visible cell");
	tsch_unlock(db);
	free(want);
}

static void test_has_cells(void)
{
	struct tsch_table *t;
	uint64_t now = wall_micros();

	diag("existence checks");
	mk_table("hc");
	mk_family("hc", "a", NULL, 0, 0);
	mk_family("hc", "b", NULL, 0, 5);
	mk_family("hc", "c", "grp", 0, 0);
	mk_family("hc", "d", NULL, 0, 0);
	must(tsch_lock_table(db, "hc", &t), "lock");
	is_int(tscan_table_has_cells(db, t, NULL), 0, "an empty table has no cells");
	is_int(tscan_table_has_cells(db, t, tsch_find_family(t, "a")), 0,
	       "an empty table has no cells of a family");
	tsch_unlock(db);

	/* many rows of a (interleaved with d in the same tree), expired b, one d far down */
	for (int i = 0; i < 200; i++) {
		char row[16];

		snprintf(row, sizeof(row), "r%03d", i);
		put_str("hc", row, "a", "x", 1, "a");
		put_str("hc", row, "b", "x", now - 100 * SEC, "expired");
	}
	put_str("hc", "r150", "d", "x", 1, "d");
	must(tsch_lock_table(db, "hc", &t), "lock");
	is_int(tscan_table_has_cells(db, t, NULL), 1, "a table with cells has cells");
	is_int(tscan_table_has_cells(db, t, tsch_find_family(t, "b")), 0,
	       "a family whose cells all expired has none");
	is_int(tscan_table_has_cells(db, t, tsch_find_family(t, "c")), 0,
	       "a family in its own, empty group has none");
	is_int(tscan_table_has_cells(db, t, tsch_find_family(t, "d")), 1,
	       "a family with one cell in a late row is found");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "d"), slice_str("r150")), 1,
	       "tscan_row_has_cells finds it in its row");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "d"), slice_str("r149")), 0,
	       "and not in the row before");
	is_int(tscan_row_has_cells(db, t, tsch_find_family(t, "a"), slice_str("r15")), 0,
	       "a row key that is a prefix of stored rows has no cells");
	tsch_unlock(db);

	must(tbl_drop_family(db, "hc", "d", 1), "drop d");
	must(tsch_lock_table(db, "hc", &t), "lock");
	is_int(tscan_row_has_cells(db, t, NULL, slice_str("r150")), 1,
	       "after dropping d, the row still has a's cells");
	tsch_unlock(db);
	{
		const char *d[] = { "d" };
		struct tbl_read r = read_init();

		r.families = d;
		r.nfamilies = 1;
		text_is(scan_text("hc", &r, NULL), "error -2",
			"a dropped family cannot be asked for: -ENOENT");
		r = read_init();
		r.prefix = "r150";
		r.prefix_len = 4;
		text_is(scan_text("hc", &r, NULL), "[r150] a:x@1=a(string/1)\n",
			"a dropped family's cells are invisible at once");
	}
}

/* ------------------------------------------------------------ merging groups, reverse */

static void test_groups_and_reverse(void)
{
	struct tbl_read r = read_init();
	struct tbl_scan_counts c;
	char *fwd, *rev;
	struct buf want = BUF_INIT;

	diag("rows merged across locality groups; reverse scans");
	mk_table("mg");
	mk_family("mg", "x", "gx", 0, 0);
	mk_family("mg", "m", NULL, 0, 0);
	mk_family("mg", "y", "gy", 0, 0);
	/* row i: x if i%2==0, m if i%3==0, y if i%5==0; rows with none are absent */
	for (int i = 0; i < 60; i++) {
		char row[16];

		snprintf(row, sizeof(row), "row%02d", i);
		if (i % 2 == 0)
			put_str("mg", row, "x", "c", 1, "x");
		if (i % 3 == 0)
			put_str("mg", row, "m", "c", 1, "m");
		if (i % 5 == 0)
			put_str("mg", row, "y", "c", 1, "y");
		if (i % 2 && i % 3 && i % 5)
			continue;
		{
			char line[96];

			snprintf(line, sizeof(line), "[%s]%s%s%s\n", row,
				 i % 3 == 0 ? " m:c@1=m(string/1)" : "",
				 i % 2 == 0 ? " x:c@1=x(string/1)" : "",
				 i % 5 == 0 ? " y:c@1=y(string/1)" : "");
			puts_buf(&want, line);
		}
	}
	buf_append(&want, "", 1);
	must(kv_flush(tbl_kv(db)), "flush");
	put_str("mg", "row07", "y", "c", 2, "late");  /* memtable and SSTable together */

	fwd = scan_text("mg", &r, &c);
	{
		/* row07 (no cells before) gains the late y cell */
		struct buf w2 = BUF_INIT;
		const char *at = strstr(want.data, "[row08]");

		buf_append(&w2, want.data, (size_t)(at - want.data));
		puts_buf(&w2, "[row07] y:c@2=late(string/4)\n");
		puts_buf(&w2, at);
		buf_append(&w2, "", 1);
		is_str(fwd, w2.data,
		       "each row gathers its cells from three groups, in family order");
		buf_free(&w2);
	}
	is_int(c.rows, 45, "counts: rows returned");

	r.reverse = 1;
	rev = scan_text("mg", &r, NULL);
	{
		/* reverse the lines of fwd */
		struct buf w = BUF_INIT;
		size_t n = strlen(fwd);

		while (n > 0) {
			size_t end = n, start = n - 1;

			while (start > 0 && fwd[start - 1] != '\n')
				start--;
			buf_append(&w, fwd + start, end - start);
			n = start;
		}
		buf_append(&w, "", 1);
		is_str(rev, w.data, "a reverse scan returns the forward rows in reverse order, "
		       "each row's cells still in family, qualifier, newest-first order");
		buf_free(&w);
	}
	free(rev);

	/* limits apply in scan order */
	r.row_limit = 3;
	text_is(scan_keys("mg", &r), "row58\nrow57\nrow56\n", "reverse with row_limit 3: the last "
		"three rows");
	r.reverse = 0;
	text_is(scan_keys("mg", &r), "row00\nrow02\nrow03\n", "forward with row_limit 3: the "
		"first three rows");
	r.row_limit = 2;
	r.reverse = 1;
	r.start = "row10";
	r.start_len = 5;
	r.end = "row20";
	r.end_len = 5;
	text_is(scan_keys("mg", &r), "row18\nrow16\n", "reverse within [row10, row20): from "
		"the last row below the end");
	r = read_init();
	r.row_keys_only = 1;
	r.reverse = 1;
	r.prefix = "row0";
	r.prefix_len = 4;
	text_is(scan_text("mg", &r, &c),
		"[row09]\n[row08]\n[row07]\n[row06]\n[row05]\n[row04]\n[row03]\n[row02]\n[row00]\n",
		"row_keys_only in reverse within a prefix: keys alone");
	is_int(c.cells, 0, "row_keys_only returns no cells");
	free(fwd);
	buf_free(&want);
}

/* ------------------------------------------------------------ snapshots */

static void test_snapshots(void)
{
	struct tbl_read r = read_init();
	const struct tbl_snapshot *snap;
	struct tbl_scan *s;
	const struct tbl_row *row;

	diag("snapshots");
	mk_table("snap");
	mk_family("snap", "f", NULL, 0, 0);
	mk_family("snap", "g", "sg", 0, 0);
	put_str("snap", "a", "f", "q", 1, "a1");
	put_str("snap", "c", "g", "q", 1, "c1");
	snap = tbl_snapshot_new(db);
	put_str("snap", "b", "f", "q", 1, "b1");
	put_str("snap", "c", "f", "q", 1, "c-f");
	r.snapshot = snap;
	text_is(scan_text("snap", &r, NULL), "[a] f:q@1=a1(string/2)\n[c] g:q@1=c1(string/2)\n",
		"a scan at a caller's snapshot does not see later writes");
	text_is(row_text("snap", "b", 1, &r), "error -2",
		"tbl_get_row at a snapshot: a row written later is -ENOENT");
	tbl_snapshot_release(db, snap);

	/* without one, the scan takes its own when created, over every group */
	must(tbl_scan_new(db, "snap", NULL, &s), "scan");
	put_str("snap", "a", "g", "q", 2, "a-g");
	put_str("snap", "d", "f", "q", 2, "d");
	must(tbl_drop_family(db, "snap", "g", 1), "drop g");
	{
		struct buf out = BUF_INIT;

		while (tbl_scan_next(s, &row) == 1)
			render_row(&out, row, 0);
		buf_append(&out, "", 1);
		is_str(out.data, "[a] f:q@1=a1(string/2)\n[b] f:q@1=b1(string/2)\n"
		       "[c] f:q@1=c-f(string/3) g:q@1=c1(string/2)\n",
		       "a scan sees the table as of its creation, in both groups, with the schema "
		       "of then (a family dropped meanwhile still named)");
		buf_free(&out);
	}
	tbl_scan_free(s);
	text_is(scan_text("snap", NULL, NULL),
		"[a] f:q@1=a1(string/2)\n[b] f:q@1=b1(string/2)\n[c] f:q@1=c-f(string/3)\n"
		"[d] f:q@2=d(string/1)\n", "a new scan sees the later writes and the drop");
}

/* ------------------------------------------------------------ cost */

/* Random bytes (they do not compress), of the given size. */
static void random_bytes(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(rand_next(&rng) >> 56);
}

static uint64_t sst_bytes(void)
{
	struct kv_stats st;

	kv_get_stats(tbl_kv(db), &st);
	return st.bytes_read_sst;
}

static void test_cost(void)
{
	int rows = (int)(100 * test_scale());
	int wide = (int)(16 * test_scale());
	char big[2048];
	struct tbl_read r = read_init();
	struct tbl_scan_counts c, full;
	const char *small[] = { "small" };
	uint64_t before, small_read, all_read, rko_read, wide_read, reads[4];
	char *keys;

	diag("what reads cost: one group of two, row keys only");
	mk_table("cost");
	mk_family("cost", "small", NULL, 0, 0);
	mk_family("cost", "big", "bulk", 0, 0);
	for (int i = 0; i < rows; i++) {
		char row[16];

		snprintf(row, sizeof(row), "row%05d", i);
		put_str("cost", row, "small", "s", 1, "tiny");
		random_bytes(big, sizeof(big));
		raw_put("cost", row, strlen(row), "big", "b", 1, 1,
			&(struct cell_value){ .type = CELL_BYTES, .v.data = { big, sizeof(big) } });
	}
	/* wide rows: many big cells each */
	for (int i = 0; i < wide; i++) {
		char row[16], q[16];

		snprintf(row, sizeof(row), "wide%03d", i);
		for (int j = 0; j < 100; j++) {
			snprintf(q, sizeof(q), "q%03d", j);
			random_bytes(big, 1000);
			raw_put("cost", row, strlen(row), "big", q, strlen(q), 1,
				&(struct cell_value){ .type = CELL_BYTES,
						     .v.data = { big, 1000 } });
		}
	}
	must(kv_flush(tbl_kv(db)), "flush");
	reopen_db();   /* an empty block cache: every block read is counted */

	r.families = small;
	r.nfamilies = 1;
	before = sst_bytes();
	free(scan_text("cost", &r, &c));
	small_read = sst_bytes() - before;
	is_int(c.rows, rows, "the one-group scan returns every row of the small family");

	r = read_init();
	before = sst_bytes();
	free(scan_text("cost", &r, &full));
	all_read = sst_bytes() - before;
	diag("SSTable bytes read: small family %llu, all families %llu; scan bytes %llu / %llu",
	     (unsigned long long)small_read, (unsigned long long)all_read,
	     (unsigned long long)c.bytes, (unsigned long long)full.bytes);
	ok(all_read >= (uint64_t)(rows * 2048 + wide * 100000) * 9 / 10,
	   "a scan of every family reads the big group's bytes (the counter works)");
	ok(small_read * 20 < all_read,
	   "a scan of the small family does not read the big group's tree (%llu vs %llu)",
	   (unsigned long long)small_read, (unsigned long long)all_read);
	ok(c.bytes < (uint64_t)rows * 64, "its scan counts only small cells' bytes (%llu)",
	   (unsigned long long)c.bytes);

	reopen_db();
	r = read_init();
	r.prefix = "wide";
	r.prefix_len = 4;
	r.row_keys_only = 1;
	before = sst_bytes();
	keys = scan_keys("cost", &r);
	rko_read = sst_bytes() - before;
	free(scan_text("cost", &r, &c));
	is_int(c.rows, wide, "row_keys_only returns every wide row");
	r.row_keys_only = 0;
	r.keys_only = 1;
	before = sst_bytes();
	free(scan_text("cost", &r, &full));
	wide_read = sst_bytes() - before;
	diag("wide rows: row_keys_only read %llu SSTable bytes, keys_only %llu; scan bytes "
	     "%llu / %llu", (unsigned long long)rko_read, (unsigned long long)wide_read,
	     (unsigned long long)c.bytes, (unsigned long long)full.bytes);
	ok(c.bytes <= (uint64_t)wide * 1100,
	   "row_keys_only reads about one cell per row, whatever the row's width (%llu bytes)",
	   (unsigned long long)c.bytes);
	ok(rko_read * 4 < wide_read,
	   "row_keys_only skips the blocks of each row's cells (%llu vs %llu SSTable bytes)",
	   (unsigned long long)rko_read, (unsigned long long)wide_read);
	is_int(full.cells, wide * 100, "keys_only over the wide rows returns every cell");
	free(keys);

	/*
	 * no_fill_cache: what the scan reads is not kept, so reading again costs
	 * again.  The counter also counts what a background compaction reads and
	 * the metadata blocks a table's first use reads: every tree is compacted
	 * first (nothing is left for the background to do) and one scan opens
	 * the tables before the counted ones.
	 */
	reopen_db();
	must(tbl_compact(db, NULL, NULL, NULL), "tbl_compact");
	r = read_init();
	r.families = small;
	r.nfamilies = 1;
	r.no_fill_cache = 1;
	free(scan_text("cost", &r, &c));
	for (int pass = 0; pass < 4; pass++) {
		if (pass == 2)
			r.no_fill_cache = 0;
		before = sst_bytes();
		free(scan_text("cost", &r, &c));
		reads[pass] = sst_bytes() - before;
		is_int(c.rows, rows, pass < 2 ? "a no_fill_cache scan returns every row"
					      : "a filling scan returns every row");
	}
	diag("SSTable bytes read by two no_fill_cache scans %llu, %llu; then two filling "
	     "scans %llu, %llu", (unsigned long long)reads[0], (unsigned long long)reads[1],
	     (unsigned long long)reads[2], (unsigned long long)reads[3]);
	ok(reads[0] > 0 && reads[1] == reads[0],
	   "no_fill_cache keeps nothing: the second scan reads every block again");
	ok(reads[2] == reads[0] && reads[3] == 0,
	   "a filling scan after it finds nothing cached, and keeps what it read");
}

/*
 * Skipping inside a group: filters that leave a long stretch of a row's keys
 * useless must not read it.  Every kv entry of table "skip" is 25 bytes (key
 * 4 + 1 + 2 + 2 + 4 + 2 + 8, value 2), so counts.bytes / 25 is the number of
 * entries a read stopped on.  A skip may step over a few entries before it
 * seeks: up to 24 entries for these reads, against the hundreds of the row.
 */
static void test_skipping(void)
{
	struct tbl_read r;
	struct tbl_scan_counts c;
	const char *b_only[] = { "b" };
	const char *a_only[] = { "a" };
	const uint64_t entry = 25, most = 24 * 25;
	char q[8];

	diag("skipping inside a locality group");
	mk_table("skip");
	mk_family("skip", "a", NULL, 0, 0);
	mk_family("skip", "b", NULL, 0, 0);
	mk_family("skip", "other", "og", 0, 0);
	for (int i = 0; i < 100; i++) {
		snprintf(q, sizeof(q), "q%03d", i);
		put_str("skip", "w", "a", q, 1, "a");
		put_str("skip", "w", "b", q, 1, "b");
		put_str("skip", "v", "a", "q000", 1000 + (uint64_t)i, "v");
	}
	r = read_init();
	free(scan_text("skip", &r, &c));
	is_int(c.bytes, 300 * entry, "a full scan stops on every entry (300 of 25 bytes)");

	r.prefix = "w";
	r.prefix_len = 1;
	r.qualifier = "q050";
	r.qualifier_len = 4;
	r.qualifier_exact = 1;
	r.families = a_only;
	r.nfamilies = 1;
	text_is(scan_text("skip", &r, &c), "[w] a:q050@1=a(string/1)\n",
		"an exact qualifier in a wide row");
	ok(c.bytes <= most, "... seeks to the column and past the rest of the row (%llu entries)",
	   (unsigned long long)(c.bytes / entry));

	r = read_init();
	r.prefix = "w";
	r.prefix_len = 1;
	r.cells_per_row = 1;
	text_is(scan_text("skip", &r, &c), "[w] a:q000@1=a(string/1)\n",
		"cells_per_row 1 in a wide row of two families");
	ok(c.bytes <= most, "... stops reading each family after its first cell (%llu entries)",
	   (unsigned long long)(c.bytes / entry));

	r = read_init();
	r.prefix = "w";
	r.prefix_len = 1;
	r.families = b_only;
	r.nfamilies = 1;
	r.cells_per_row = 2;
	text_is(scan_text("skip", &r, &c), "[w] b:q000@1=b(string/1) b:q001@1=b(string/1)\n",
		"a families filter on a family that follows another in the same group");
	ok(c.bytes <= most, "... seeks over the other family's cells (%llu entries)",
	   (unsigned long long)(c.bytes / entry));

	r = read_init();
	r.prefix = "v";
	r.prefix_len = 1;
	r.versions = 1;
	text_is(scan_text("skip", &r, &c), "[v] a:q000@1099=v(string/1)\n",
		"versions 1 on a column with 100 versions");
	ok(c.bytes <= most, "... seeks past the older versions (%llu entries)",
	   (unsigned long long)(c.bytes / entry));
	r.versions = 0;
	r.ts_max = 1010;
	r.cells_per_row = 1;
	text_is(scan_text("skip", &r, &c), "[v] a:q000@1009=v(string/1)\n",
		"ts_max on a column with 100 versions and no max_versions");
	ok(c.bytes <= most, "... seeks to the first version below ts_max (%llu entries)",
	   (unsigned long long)(c.bytes / entry));

	/* row_keys_only over rows in two groups reads one entry per row, not one per group */
	for (int i = 0; i < 10; i++) {
		char row[2] = { (char)('0' + i), 0 };

		put_str("skip", row, "a", "q000", 1, "a");
		put_str("skip", row, "other", "q000", 1, "o");
	}
	r = read_init();
	r.start = "0";
	r.start_len = 1;
	r.end = "9\xff";
	r.end_len = 2;
	r.row_keys_only = 1;
	text_is(scan_keys("skip", &r), "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n",
		"row_keys_only over rows held by two groups");
	free(scan_text("skip", &r, &c));
	is_int(c.bytes, 10 * entry, "... stops on one entry per row: the second group's row is "
	       "passed over unread");
	r.families = a_only;
	r.nfamilies = 1;
	r.row_keys_only = 0;
	r.reverse = 1;
	free(scan_text("skip", &r, &c));
	is_int(c.bytes, 2 * 10 * entry, "a reverse scan reads each row's last entry, then the row "
	       "forward: two entries for one-cell rows");
}

/* ------------------------------------------------------------ the seeds' fixtures */

static void test_aircraft(void)
{
	struct tbl_read r = read_init();
	const char *meta[] = { "meta" };

	diag("fixture: the aircraft table");
	mk_table("aircraft");
	mk_family("aircraft", "flight", NULL, 0, 0);
	mk_family("aircraft", "meta", NULL, 0, 0);
	put_str("aircraft", "plane#TF-FIR", "meta", "model", 100, "A321");
	put_str("aircraft", "plane#TF-FIR", "meta", "airline", 100, "Icelandair");
	put_str("aircraft", "plane#TF-FIR", "flight", "last", 200, "FI318");
	put_str("aircraft", "plane#TF-FIS", "meta", "model", 100, "B757");
	/* the refactored design: one row per flight */
	static const char *const flights[][2] = {
		{ "flight#TF-FIR#2023-12-31#FI204", "KEF-CPH" },
		{ "flight#TF-FIR#2024-01-25#FI318", "KEF-OSL" },
		{ "flight#TF-FIR#2024-01-26#FI319", "OSL-KEF" },
		{ "flight#TF-FIR#2024-02-01#FI450", "KEF-LHR" },
		{ "flight#TF-FIR#2024-1#odd", "not January" },
		{ "flight#TF-FIS#2024-01-25#FI500", "KEF-JFK" },
	};
	for (size_t i = 0; i < sizeof(flights) / sizeof(flights[0]); i++)
		put_str("aircraft", flights[i][0], "flight", "route", 1000 + i, flights[i][1]);

	r.prefix = "flight#TF-FIR#2024-01-";
	r.prefix_len = strlen(r.prefix);
	text_is(scan_text("aircraft", &r, NULL),
		"[flight#TF-FIR#2024-01-25#FI318] flight:route@1001=KEF-OSL(string/7)\n"
		"[flight#TF-FIR#2024-01-26#FI319] flight:route@1002=OSL-KEF(string/7)\n",
		"the prefix scan flight#TF-FIR#2024-01- returns exactly the January 2024 flights");
	r.reverse = 1;
	text_is(scan_keys("aircraft", &r),
		"flight#TF-FIR#2024-01-26#FI319\nflight#TF-FIR#2024-01-25#FI318\n",
		"... and in reverse, the latest first");
	text_is(row_text("aircraft", "plane#TF-FIR", 12, NULL),
		"[plane#TF-FIR] flight:last@200=FI318(string/5) "
		"meta:airline@100=Icelandair(string/10) meta:model@100=A321(string/4)\n",
		"the plane row holds both families");
	r = read_init();
	r.families = meta;
	r.nfamilies = 1;
	r.qualifier = "model";
	r.qualifier_len = 5;
	r.qualifier_exact = 1;
	text_is(scan_text("aircraft", &r, NULL),
		"[plane#TF-FIR] meta:model@100=A321(string/4)\n"
		"[plane#TF-FIS] meta:model@100=B757(string/4)\n",
		"one column of many rows (t/*/meta/model) skips the flight rows");
}

static void test_webtable(void)
{
	struct tbl_read r = read_init();
	const char *contents[] = { "contents" };
	const char *anchor_language[] = { "language", "anchor" };
	struct tbl_scan_counts c;

	diag("fixture: the webtable");
	mk_table("webtable");
	mk_family("webtable", "language", NULL, 0, 0);
	mk_family("webtable", "anchor", NULL, 0, 0);
	mk_family("webtable", "contents", "contents", 3, 0);
	put_str("webtable", "com.cnn.www", "language", "", 1, "EN");
	put_str("webtable", "com.cnn.www", "anchor", "cnnsi.com", 9, "CNN");
	put_str("webtable", "com.cnn.www", "anchor", "my.look.ca", 8, "CNN.com");
	for (uint64_t t = 3; t <= 6; t++) {
		char page[32];

		snprintf(page, sizeof(page), "<html>cnn t%llu", (unsigned long long)t);
		put_str("webtable", "com.cnn.www", "contents", "", t, page);
	}
	put_str("webtable", "com.github/about", "language", "", 1, "EN");
	put_str("webtable", "com.github/about", "contents", "", 5, "<html>about v1");
	put_str("webtable", "com.github/about", "contents", "", 7, "<html>about v2");
	put_str("webtable", "com.github/", "contents", "", 4, "<html>home");
	put_str("webtable", "com.github/", "anchor", "news.ycombinator.com", 4, "GitHub");
	put_str("webtable", "com.githubusercontent/raw", "language", "", 1, "EN");
	put_str("webtable", "org.example/", "language", "", 1, "IS");

	text_is(row_text("webtable", "com.cnn.www", 11, NULL),
		"[com.cnn.www] anchor:cnnsi.com@9=CNN(string/3) "
		"anchor:my.look.ca@8=CNN.com(string/7) "
		"contents:@6=<html>cnn\\x20t6(string/12) contents:@5=<html>cnn\\x20t5(string/12) "
		"contents:@4=<html>cnn\\x20t4(string/12) language:@1=EN(string/2)\n",
		"com.cnn.www: anchors, the three newest contents versions (max_versions 3), "
		"language");
	r.families = contents;
	r.nfamilies = 1;
	r.versions = 1;
	text_is(scan_text("webtable", &r, &c),
		"[com.cnn.www] contents:@6=<html>cnn\\x20t6(string/12)\n"
		"[com.github/] contents:@4=<html>home(string/10)\n"
		"[com.github/about] contents:@7=<html>about\\x20v2(string/14)\n",
		"the contents group alone, newest version: rows without contents are skipped");
	r = read_init();
	r.prefix = "com.github/";
	r.prefix_len = strlen(r.prefix);
	r.families = anchor_language;
	r.nfamilies = 2;
	text_is(scan_text("webtable", &r, NULL),
		"[com.github/] anchor:news.ycombinator.com@4=GitHub(string/6)\n"
		"[com.github/about] language:@1=EN(string/2)\n",
		"prefix com.github/ with anchor and language: not com.githubusercontent");
	r = read_init();
	r.prefix = "com.github";
	r.prefix_len = strlen(r.prefix);
	r.row_keys_only = 1;
	text_is(scan_keys("webtable", &r),
		"com.github/\ncom.github/about\ncom.githubusercontent/raw\n",
		"prefix com.github (no slash) includes com.githubusercontent");
	r = read_init();
	r.ts_min = 5;
	r.ts_max = 7;
	r.families = contents;
	r.nfamilies = 1;
	text_is(scan_text("webtable", &r, NULL),
		"[com.cnn.www] contents:@6=<html>cnn\\x20t6(string/12) "
		"contents:@5=<html>cnn\\x20t5(string/12)\n"
		"[com.github/about] contents:@5=<html>about\\x20v1(string/14)\n",
		"contents in the time range [5, 7)");
}

static void test_bus(void)
{
	struct tbl_read r = read_init();

	diag("fixture: the bus-location table");
	mk_table("bus");
	mk_family("bus", "loc", NULL, 1, 0);
	static const char *const rows[] = {
		"STC#2#5", "STC#22#173", "STC#22#174", "STC#22#9", "STC#221#1", "STC#23#1",
		"STD#22#173",
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		put_str("bus", rows[i], "loc", "lat", 1, "64.1");
		put_str("bus", rows[i], "loc", "lat", 2, "64.2");
		put_str("bus", rows[i], "loc", "lon", 2, "-21.9");
	}
	r.prefix = "STC#22#";
	r.prefix_len = 7;
	text_is(scan_keys("bus", &r), "STC#22#173\nSTC#22#174\nSTC#22#9\n",
		"prefix STC#22# returns route 22's buses only (not route 2, 221 or 23)");
	text_is(row_text("bus", "STC#22#173", 10, NULL),
		"[STC#22#173] loc:lat@2=64.2(string/4) loc:lon@2=-21.9(string/5)\n",
		"max_versions 1: the latest position only");
	r.row_limit = 2;
	r.reverse = 1;
	text_is(scan_keys("bus", &r), "STC#22#9\nSTC#22#174\n",
		"reverse prefix scan with row_limit 2");
}

static void test_sensor(void)
{
	uint64_t now = wall_micros();
	struct tbl_read r = read_init();
	struct tbl_row *got;
	int good = 1;

	diag("fixture: a temperature-sensor time series with a TTL");
	mk_table("sensors");
	mk_family("sensors", "t", NULL, 0, 3600);
	/* one reading a minute for three hours, each 30 s off the minute */
	for (int k = 0; k < 180; k++) {
		struct cell_value v = { .type = CELL_F64, .v.f64 = 20.0 + k * 0.25 };

		raw_put("sensors", "sensor-7", 8, "t", "celsius", 7,
			now - (uint64_t)k * 60 * SEC - 30 * SEC, &v);
	}
	must(tbl_get_row(db, "sensors", "sensor-7", 8, NULL, &got), "get");
	is_int(got->ncells, 60, "only the readings of the last hour (ttl 3600 s) are visible");
	for (size_t i = 0; i < got->ncells; i++)
		if (got->cells[i].ts != now - (uint64_t)i * 60 * SEC - 30 * SEC ||
		    got->cells[i].value.v.f64 != 20.0 + (double)i * 0.25)
			good = 0;
	ok(good, "newest first, values intact");
	tbl_row_free(got);

	r.versions = 1;
	texts_are(row_text("sensors", "sensor-7", 8, &r),
		  xasprintf("[sensor-7] t:celsius@%llu=20(f64/8)\n",
			    (unsigned long long)(now - 30 * SEC)),
		  "versions 1: the latest reading");
	r.versions = 0;
	r.ts_min = now - 10 * 60 * SEC;
	r.ts_max = now - 5 * 60 * SEC;
	must(tbl_get_row(db, "sensors", "sensor-7", 8, &r, &got), "get range");
	is_int(got->ncells, 5, "the readings between 10 and 5 minutes ago");
	tbl_row_free(got);
	r.ts_min = now - 3 * 3600 * SEC;
	r.ts_max = now - 2 * 3600 * SEC;
	text_is(row_text("sensors", "sensor-7", 8, &r), "error -2",
		"a time range entirely beyond the ttl holds nothing");
}

/* ------------------------------------------------------------ through the mutation API */

static void test_with_mutations(void)
{
	struct tbl_mutation m[2];
	struct cell_value v = str_value("v");

	diag("scans see what tbl_put and tbl_mutate_row write and delete");
	mk_table("mut");
	mk_family("mut", "f", NULL, 0, 0);
	mk_family("mut", "g", "mg2", 0, 0);
	for (int i = 0; i < 5; i++) {
		char row[8];

		snprintf(row, sizeof(row), "r%d", i);
		must(tbl_put(db, "mut", row, 2, "f", "q", 1, 10, &v, 0), "put f");
		must(tbl_put(db, "mut", row, 2, "g", "q", 1, 10, &v, 0), "put g");
	}
	memset(m, 0, sizeof(m));
	m[0].op = TBL_DELETE_ROW;
	must(tbl_mutate_row(db, "mut", "r1", 2, m, 1, 0, NULL), "delete row");
	m[0].op = TBL_DELETE_CELL;
	m[0].family = "g";
	m[0].qualifier = "q";
	m[0].qualifier_len = 1;
	must(tbl_mutate_row(db, "mut", "r2", 2, m, 1, 0, NULL), "delete cell");
	m[0].op = TBL_DELETE_FAMILY;
	m[0].family = "f";
	m[1] = m[0];
	m[1].family = "g";
	must(tbl_mutate_row(db, "mut", "r3", 2, m, 2, 0, NULL), "delete families");
	text_is(scan_text("mut", NULL, NULL),
		"[r0] f:q@10=v(string/1) g:q@10=v(string/1)\n"
		"[r2] f:q@10=v(string/1)\n"
		"[r4] f:q@10=v(string/1) g:q@10=v(string/1)\n",
		"deleted rows, cells and families are not returned");
	{
		struct tbl_read r = read_init();

		r.reverse = 1;
		r.row_keys_only = 1;
		text_is(scan_keys("mut", &r), "r4\nr2\nr0\n",
			"nor by a reverse row_keys_only scan");
	}
}

/* ------------------------------------------------------------ the model */

struct mfam {
	const char *name;
	const char *group;
	uint32_t max_versions;
	uint64_t ttl;
	int dropped;
};

/* Created in this order, so ids, names and groups are in three different orders. */
static struct mfam mfams[] = {
	{ "zz", NULL, 0, 0, 0 },
	{ "b", "g2", 2, 0, 0 },
	{ "a", NULL, 0, 400, 0 },
	{ "m", "g2", 1, 0, 0 },
	{ "gone", NULL, 0, 0, 0 },
};
#define NMFAM (sizeof(mfams) / sizeof(mfams[0]))

static const struct str m_rows[] = {
	S("\0"), S("\0\0"), S("\0\xff"), S("\x01"), S("\xff"), S("\xff\0"), S("\xff\xff"),
	S("a"), S("a\0"), S("a\0b"), S("a\xff"), S("ab"), S("abc"), S("b"),
};
#define NMROWS (sizeof(m_rows) / sizeof(m_rows[0]))
static const struct str m_quals[] = {
	S(""), S("\0"), S("q"), S("q\0"), S("qa"), S("r"), S("\xff"),
};
#define NMQUALS (sizeof(m_quals) / sizeof(m_quals[0]))

struct mcell {
	int row, fam, qual;
	uint64_t ts;
	struct buf stored;   /* the encoded value */
};

static const char *m_table = "model";   /* the table test_model writes */
static struct mcell *mcells;
static size_t nmcells;
static uint64_t m_now;

/* Timestamps far from the ttl cut-off (now - 400 s) either way. */
static uint64_t m_ts(unsigned k)
{
	static const uint64_t ago[] = { 5, 50, 100, 300, 500, 900 };

	if (k < 6)
		return m_now - ago[k] * SEC;
	return 1000 + k;   /* ancient */
}

static void model_put(int row, int fam, int qual, uint64_t ts, const struct cell_value *v)
{
	struct mcell *c = NULL;

	for (size_t i = 0; i < nmcells; i++)
		if (mcells[i].row == row && mcells[i].fam == fam && mcells[i].qual == qual &&
		    mcells[i].ts == ts)
			c = &mcells[i];
	if (!c) {
		mcells = xrealloc(mcells, (nmcells + 1) * sizeof(*mcells));
		c = &mcells[nmcells++];
		memset(c, 0, sizeof(*c));
		c->row = row;
		c->fam = fam;
		c->qual = qual;
		c->ts = ts;
	}
	buf_clear(&c->stored);
	cell_encode(&c->stored, v);
	raw_put(m_table, m_rows[row].p, m_rows[row].n, mfams[fam].name, m_quals[qual].p,
		m_quals[qual].n, ts, v);
}

static int m_fam_wanted(const struct tbl_read *r, int fam)
{
	if (mfams[fam].dropped)
		return 0;
	if (!r->families)
		return 1;
	for (size_t i = 0; i < r->nfamilies; i++)
		if (strcmp(r->families[i], mfams[fam].name) == 0)
			return 1;
	return 0;
}

static int m_qual_ok(const struct tbl_read *r, int qual)
{
	struct str q = m_quals[qual];

	if (!r->qualifier)
		return 1;
	if (r->qualifier_exact)
		return q.n == r->qualifier_len && !memcmp(q.p, r->qualifier, q.n);
	return starts_with(q, (struct str){ r->qualifier, r->qualifier_len });
}

/* Visible before the read's versions limit: family, qualifier, GC, time range. */
static int m_passes(const struct tbl_read *r, const struct mcell *c)
{
	const struct mfam *f = &mfams[c->fam];
	uint32_t n = 0;

	if (!m_fam_wanted(r, c->fam) || !m_qual_ok(r, c->qual))
		return 0;
	for (size_t i = 0; i < nmcells; i++)
		if (mcells[i].row == c->row && mcells[i].fam == c->fam &&
		    mcells[i].qual == c->qual && mcells[i].ts > c->ts)
			n++;
	if (f->max_versions && n >= f->max_versions)
		return 0;
	if (f->ttl && c->ts + f->ttl * SEC < m_now)
		return 0;
	if (r->ts_max && c->ts >= r->ts_max)
		return 0;
	return c->ts >= r->ts_min;
}

static int m_visible(const struct tbl_read *r, const struct mcell *c)
{
	uint32_t newer = 0;

	if (!m_passes(r, c))
		return 0;
	if (!r->versions)
		return 1;
	for (size_t i = 0; i < nmcells; i++)
		if (mcells[i].row == c->row && mcells[i].fam == c->fam &&
		    mcells[i].qual == c->qual && mcells[i].ts > c->ts && m_passes(r, &mcells[i]))
			newer++;
	return newer < r->versions;
}

static int m_cmp_cell(const void *a, const void *b)
{
	const struct mcell *x = *(const struct mcell *const *)a;
	const struct mcell *y = *(const struct mcell *const *)b;
	int c = strcmp(mfams[x->fam].name, mfams[y->fam].name);

	if (!c)
		c = slice_cmp(slice_make(m_quals[x->qual].p, m_quals[x->qual].n),
			      slice_make(m_quals[y->qual].p, m_quals[y->qual].n));
	if (!c)
		c = x->ts < y->ts ? 1 : x->ts > y->ts ? -1 : 0;
	return c;
}

/* One row as the model sees it; 0 if it has no visible cell. */
static int model_row(struct buf *out, const struct tbl_read *r, int row, int row_keys_only)
{
	const struct mcell **v = xcalloc(nmcells + 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < nmcells; i++)
		if (mcells[i].row == row && m_visible(r, &mcells[i]))
			v[n++] = &mcells[i];
	if (!n) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), m_cmp_cell);
	if (r->cells_per_row && n > r->cells_per_row)
		n = r->cells_per_row;
	puts_buf(out, "[");
	esc(out, m_rows[row].p, m_rows[row].n);
	puts_buf(out, "]");
	for (size_t i = 0; i < n && !row_keys_only; i++) {
		struct cell_value cv;

		cell_decode(buf_slice(&v[i]->stored), &cv);
		render_cell(out, mfams[v[i]->fam].name, m_quals[v[i]->qual].p,
			    m_quals[v[i]->qual].n, v[i]->ts, &cv, v[i]->stored.len - 1,
			    r->keys_only);
	}
	puts_buf(out, "\n");
	free(v);
	return 1;
}

static char *model_scan(const struct tbl_read *r, struct tbl_scan_counts *c)
{
	struct str sorted[NMROWS];
	int order[NMROWS];
	struct buf out = BUF_INIT;

	memset(c, 0, sizeof(*c));
	memcpy(sorted, m_rows, sizeof(sorted));
	qsort(sorted, NMROWS, sizeof(sorted[0]), cmp_str);
	for (size_t i = 0; i < NMROWS; i++)
		for (size_t j = 0; j < NMROWS; j++)
			if (sorted[i].p == m_rows[j].p)
				order[i] = (int)j;
	for (size_t k = 0; k < NMROWS; k++) {
		size_t i = r->reverse ? NMROWS - 1 - k : k;
		struct slice key = slice_make(sorted[i].p, sorted[i].n);
		size_t before = out.len;

		if (r->prefix && !starts_with(sorted[i], (struct str){ r->prefix, r->prefix_len }))
			continue;
		if (r->start && slice_cmp(key, slice_make(r->start, r->start_len)) < 0)
			continue;
		if (r->end && slice_cmp(key, slice_make(r->end, r->end_len)) >= 0)
			continue;
		if (r->row_limit && c->rows == r->row_limit)
			break;
		if (model_row(&out, r, order[i], r->row_keys_only)) {
			c->rows++;
			for (size_t p = before; p < out.len; p++)
				c->cells += !r->row_keys_only && out.data[p] == ' ';
		}
	}
	buf_append(&out, "", 1);
	return out.data;
}

static const char *pick_family(void)
{
	static const char *live[] = { "zz", "b", "a", "m" };

	return live[rand_next(&rng) % 4];
}

/* A random read: each field set with some probability. */
static void random_read(struct tbl_read *r, const char **fams)
{
	static const uint64_t cut[] = { 0, 1005, 1000000 };

	*r = read_init();
	if (rand_next(&rng) % 3 == 0) {
		size_t n = 1 + rand_next(&rng) % 3;

		for (size_t i = 0; i < n; i++)
			fams[i] = pick_family();
		r->families = fams;
		r->nfamilies = n;
	}
	if (rand_next(&rng) % 3 == 0) {
		struct str q = m_quals[rand_next(&rng) % NMQUALS];

		r->qualifier = q.p;
		r->qualifier_len = q.n;
		r->qualifier_exact = (int)(rand_next(&rng) % 2);
	}
	if (rand_next(&rng) % 4 == 0) {
		unsigned a = (unsigned)(rand_next(&rng) % 9), b = (unsigned)(rand_next(&rng) % 9);

		r->ts_min = rand_next(&rng) % 2 ? m_ts(a) - 1 : cut[rand_next(&rng) % 3];
		r->ts_max = rand_next(&rng) % 3 ? m_ts(b) + 1 : 0;
		if (r->ts_max && r->ts_min > r->ts_max) {
			uint64_t t = r->ts_min;

			r->ts_min = r->ts_max;
			r->ts_max = t;
		}
	}
	if (rand_next(&rng) % 3 == 0)
		r->versions = (uint32_t)(rand_next(&rng) % 3);
	if (rand_next(&rng) % 4 == 0)
		r->cells_per_row = (uint32_t)(1 + rand_next(&rng) % 4);
	r->keys_only = rand_next(&rng) % 4 == 0;
	if (rand_next(&rng) % 3 == 0) {
		struct str p = m_rows[rand_next(&rng) % NMROWS];

		r->prefix = p.p;
		r->prefix_len = rand_next(&rng) % 2 ? p.n : p.n / 2;
	}
	if (rand_next(&rng) % 3 == 0) {
		struct str p = m_rows[rand_next(&rng) % NMROWS];

		r->start = p.p;
		r->start_len = p.n;
	}
	if (rand_next(&rng) % 3 == 0) {
		struct str p = m_rows[rand_next(&rng) % NMROWS];

		r->end = p.p;
		r->end_len = p.n;
	}
	r->reverse = (int)(rand_next(&rng) % 2);
	if (rand_next(&rng) % 3 == 0)
		r->row_limit = 1 + rand_next(&rng) % 4;
	r->row_keys_only = rand_next(&rng) % 5 == 0;
}

static void describe_read(const struct tbl_read *r)
{
	struct buf d = BUF_INIT;
	char num[200];

	if (r->families)
		for (size_t i = 0; i < r->nfamilies; i++) {
			puts_buf(&d, " family=");
			puts_buf(&d, r->families[i]);
		}
	if (r->qualifier) {
		puts_buf(&d, r->qualifier_exact ? " qualifier=" : " qualifier-prefix=");
		esc(&d, r->qualifier, r->qualifier_len);
	}
	if (r->prefix) {
		puts_buf(&d, " prefix=");
		esc(&d, r->prefix, r->prefix_len);
	}
	if (r->start) {
		puts_buf(&d, " start=");
		esc(&d, r->start, r->start_len);
	}
	if (r->end) {
		puts_buf(&d, " end=");
		esc(&d, r->end, r->end_len);
	}
	snprintf(num, sizeof(num), " ts=[%llu,%llu) versions=%u cells_per_row=%u keys_only=%d "
		 "reverse=%d row_limit=%llu row_keys_only=%d", (unsigned long long)r->ts_min,
		 (unsigned long long)r->ts_max, r->versions, r->cells_per_row, r->keys_only,
		 r->reverse, (unsigned long long)r->row_limit, r->row_keys_only);
	puts_buf(&d, num);
	buf_append(&d, "", 1);
	diag("read:%s", d.data);
	buf_free(&d);
}

/* Compare many random reads (scans and row reads) with the model; one assertion per round. */
static void model_round(const char *what, int reads)
{
	int bad = 0, rows_checked = 0;
	uint64_t cells_seen = 0;

	for (int i = 0; i < reads && !bad; i++) {
		struct tbl_read r;
		const char *fams[4];
		struct tbl_scan_counts got_c, want_c;
		char *got, *want;

		random_read(&r, fams);
		got = scan_text(m_table, &r, &got_c);
		want = model_scan(&r, &want_c);
		if (strcmp(got, want) || got_c.rows != want_c.rows || got_c.cells != want_c.cells) {
			describe_read(&r);
			diag("got (%llu rows, %llu cells):\n%s",
			     (unsigned long long)got_c.rows, (unsigned long long)got_c.cells, got);
			diag("want (%llu rows, %llu cells):\n%s",
			     (unsigned long long)want_c.rows, (unsigned long long)want_c.cells,
			     want);
			bad = 1;
		}
		cells_seen += want_c.cells;
		free(got);
		free(want);

		/* the same read of one row (scan-only fields are ignored by tbl_get_row) */
		if (!bad) {
			int row = (int)(rand_next(&rng) % NMROWS);
			struct buf w = BUF_INIT;

			r.row_keys_only = 0;
			if (!model_row(&w, &r, row, 0))
				puts_buf(&w, "error -2");
			buf_append(&w, "", 1);
			r.prefix = "zzz-ignored";
			r.prefix_len = 11;
			r.reverse = !r.reverse;
			r.row_limit = 0;
			r.row_keys_only = 1;
			got = row_text(m_table, m_rows[row].p, m_rows[row].n, &r);
			if (strcmp(got, w.data)) {
				describe_read(&r);
				diag("row %d: got\n%s\nwant\n%s", row, got, w.data);
				bad = 1;
			}
			rows_checked++;
			free(got);
			buf_free(&w);
		}
	}
	ok(!bad, "model: %d random scans and row reads agree with the model (%s; %llu cells)",
	   reads, what, (unsigned long long)cells_seen);
}

/* The model's run with seed, in a table of its own, at share of the full length. */
static void test_model(uint64_t seed, const char *table, double share)
{
	int reads = (int)(150 * test_scale() * share);
	int writes = (int)(120 * test_scale() * share);

	diag("randomized comparison with a model, seed %#llx", (unsigned long long)seed);
	rng = seed;
	m_table = table;
	mcells = NULL;
	nmcells = 0;
	for (size_t i = 0; i < NMFAM; i++)
		mfams[i].dropped = 0;
	m_now = wall_micros();
	mk_table(m_table);
	for (size_t i = 0; i < NMFAM; i++)
		mk_family(m_table, mfams[i].name, mfams[i].group, mfams[i].max_versions,
			  mfams[i].ttl);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < writes; i++) {
			struct cell_value v;
			char text[16];
			int kind = (int)(rand_next(&rng) % 3), fam;

			memset(&v, 0, sizeof(v));
			if (kind == 0) {
				v.type = CELL_STRING;
				snprintf(text, sizeof(text), "s%d", (int)(rand_next(&rng) % 1000));
				v.v.data = slice_str(text);
			} else if (kind == 1) {
				v.type = CELL_I64;
				v.v.i64 = (int64_t)(rand_next(&rng) % 2001) - 1000;
			} else {
				v.type = CELL_BYTES;
				text[0] = 0;
				text[1] = (char)(rand_next(&rng) >> 56);
				v.v.data = slice_make(text, 2);
			}
			fam = (int)(rand_next(&rng) % NMFAM);
			while (mfams[fam].dropped)   /* it cannot be written any more */
				fam = (int)(rand_next(&rng) % NMFAM);
			model_put((int)(rand_next(&rng) % NMROWS), fam,
				  (int)(rand_next(&rng) % NMQUALS),
				  m_ts((unsigned)(rand_next(&rng) % 9)), &v);
		}
		if (round == 1) {
			must(kv_flush(tbl_kv(db)), "flush");
		} else if (round == 2) {
			must(tbl_drop_family(db, m_table, "gone", 1), "drop gone");
			mfams[4].dropped = 1;
		} else if (round == 3) {
			reopen_db();
		}
		model_round(round == 0 ? "memtable" : round == 1 ? "flushed" :
			    round == 2 ? "flushed and memtable, a family dropped" : "reopened",
			    reads);
	}
	for (size_t i = 0; i < nmcells; i++)
		buf_free(&mcells[i].stored);
	free(mcells);
}

/* The assertions of one model run (test_model), made again with the seed drawn for this run. */
#define PLAN_MODEL 4

int main(void)
{
	uint64_t seeds[2] = { 0, 0 };
	int nseeds = test_seeds(rng, seeds);

	plan(152 + (nseeds - 1) * PLAN_MODEL);
	make_tmpdir("tbl_scan");
	open_db();

	test_basic();
	test_row_ranges();
	test_filters();
	test_keys_only();
	test_damage();
	test_gc();
	test_has_cells();
	test_groups_and_reverse();
	test_skipping();
	test_snapshots();
	test_aircraft();
	test_webtable();
	test_bus();
	test_sensor();
	test_with_mutations();
	test_model(seeds[0], "model", 1.0);
	test_cost();
	/* after test_cost, whose byte counts assume the database it knows */
	if (nseeds > 1)
		test_model(seeds[1], "model2", 0.25);

	must(tbl_close(db), "close");
	rm_rf(tmpdir);
	return exit_status();
}
