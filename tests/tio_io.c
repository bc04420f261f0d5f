/*
 * tio_io.c -- tests for tools/tio.c, smolctl's import and export: the exact
 * bytes of the format for a known row; the lossless round trip (export ->
 * import into an empty database -> export is byte-identical) over every cell
 * type and awkward value, versions, adversarial row keys and qualifiers
 * (0x00, 0xff, invalid UTF-8, control characters, the size limits), both
 * kinds of locality group, cells whose type differs from their family's, and
 * tiny batches; malformed lines, each reported with its line number and
 * nothing of its row written while the other rows are; rows refused by the
 * table layer itself inside a batch; schema lines with and without create;
 * Smoltable's payload (times, column keys, types, bad items, truncation);
 * dry runs (nothing written, the same reports); a truncated last line; the
 * progress callback; tio_write_row.
 *
 * Inputs are given to tio_import through fmemopen and outputs taken from
 * tio_export through open_memstream, so the bytes are compared exactly.
 */
#include "tap.h"
#include "testutil.h"
#include "tio.h"
#include "json.h"
#include "util.h"   /* the engine's helpers, for the test's own buffers */

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXV 4096      /* the max_value_size of the small-limit database */

static int ndb;

/* A new empty database (max_value_size maxv; 0: the default). */
static struct tbl_db *new_db(size_t maxv)
{
	struct tbl_options o;
	struct tbl_db *d = NULL;
	char *dir = xasprintf("%s/db%d", tmpdir, ndb++);
	int r;

	tbl_options_init(&o);
	if (maxv)
		o.max_value_size = maxv;
	o.kv.write_buffer_size = 4u << 20;
	r = tbl_open(dir, &o, &d);
	if (r) {
		printf("Bail out! tbl_open %s: %s\n", dir, kv_strerror(r));
		exit(1);
	}
	free(dir);
	return d;
}

static void must(int r, const char *what)
{
	if (r) {
		printf("Bail out! %s: %s\n", what, kv_strerror(r));
		exit(1);
	}
}

static void family(struct tbl_db *d, const char *table, const char *fam, enum cell_type type,
		   uint32_t max_versions, uint64_t ttl, const char *group, int compression)
{
	struct tbl_family_settings s;

	tbl_family_settings_init(&s);
	s.type = type;
	s.max_versions = max_versions;
	s.ttl = ttl;
	s.compression = compression;
	if (group)
		snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	must(tbl_add_family(d, table, fam, &s), fam);
}

static struct cell_value val(enum cell_type t)
{
	struct cell_value v;

	memset(&v, 0, sizeof(v));
	v.type = t;
	return v;
}

static struct cell_value vdata(enum cell_type t, const void *p, size_t n)
{
	struct cell_value v = val(t);

	v.v.data = slice_make(p, n);
	return v;
}

static void put(struct tbl_db *d, const char *table, const void *row, size_t rlen,
		const char *fam, const void *q, size_t qlen, uint64_t ts, struct cell_value v)
{
	must(tbl_put(d, table, row, rlen, fam, q, qlen, ts, &v, 0), "tbl_put");
}

static void puts_(struct tbl_db *d, const char *table, const char *row, const char *fam,
		  const char *q, uint64_t ts, struct cell_value v)
{
	put(d, table, row, strlen(row), fam, q, strlen(q), ts, v);
}

/* ------------------------------------------------------------ running import and export */

struct report {
	uint64_t line;
	char msg[512];
};

struct reports {
	struct report r[64];
	int n;
};

static void on_report(void *arg, const char *source, uint64_t line, const char *msg)
{
	struct reports *rs = arg;

	(void)source;
	if (rs->n < 64) {
		rs->r[rs->n].line = line;
		snprintf(rs->r[rs->n].msg, sizeof(rs->r[rs->n].msg), "%s", msg);
	}
	rs->n++;
}

/* Export (table may be NULL) into a malloc'd buffer: *out, *len; returns tio_export's result. */
static int export_buf(struct tbl_db *d, const char *table, const char *prefix, char **out,
		      size_t *len, struct tio_stats *st)
{
	FILE *f = open_memstream(out, len);
	int r;

	r = tio_export(d, table, prefix, prefix ? strlen(prefix) : 0, f, st, NULL);
	fclose(f);
	return r;
}

static int import_buf(struct tbl_db *d, const char *text, size_t len,
		      const struct tio_import_options *o, struct reports *rs, struct tio_stats *st)
{
	FILE *f = fmemopen((void *)(len ? text : "x"), len ? len : 1, "r");
	int r;

	if (!len)
		getc(f);   /* an empty input: fmemopen wants a size of at least 1 here */
	memset(rs, 0, sizeof(*rs));
	r = tio_import(d, f, "test", o, on_report, rs, st, NULL);
	fclose(f);
	return r;
}

static int import_str(struct tbl_db *d, const char *text, const struct tio_import_options *o,
		      struct reports *rs, struct tio_stats *st)
{
	return import_buf(d, text, strlen(text), o, rs, st);
}

/* The kv sequence number: it moves exactly when something is written. */
static uint64_t last_seq(struct tbl_db *d)
{
	char *s = kv_property(tbl_kv(d), "stats");
	const char *p = s ? strstr(s, "last sequence ") : NULL;
	uint64_t n = p ? strtoull(p + 14, NULL, 10) : 0;

	free(s);
	return n;
}

/* Does the row exist (any visible cell)? */
static int has_row(struct tbl_db *d, const char *table, const void *row, size_t len)
{
	struct tbl_row *got = NULL;
	int r = tbl_get_row(d, table, row, len, NULL, &got);

	tbl_row_free(got);
	return r == 0;
}

/*
 * The cells of a row as "family:qualifier@ts=type:text ..." (qualifier and
 * text with non-printables as \xNN), or "ENOENT".  A malloc'd string.
 */
static char *row_text(struct tbl_db *d, const char *table, const void *row, size_t len)
{
	struct tbl_row *got = NULL;
	struct buf out = BUF_INIT, text = BUF_INIT;
	int r = tbl_get_row(d, table, row, len, NULL, &got);

	if (r)
		return xstrdup(r == -ENOENT ? "ENOENT" : "ERROR");
	for (size_t i = 0; i < got->ncells; i++) {
		const struct tbl_cell *c = &got->cells[i];
		char head[64];

		if (i)
			buf_append(&out, " ", 1);
		buf_append(&out, c->family, strlen(c->family));
		buf_append(&out, ":", 1);
		for (size_t k = 0; k < c->qualifier_len; k++) {
			unsigned char ch = ((const unsigned char *)c->qualifier)[k];
			char hex[8];

			snprintf(hex, sizeof(hex), ch >= 0x20 && ch < 0x7f ? "%c" : "\\x%02x", ch);
			buf_append(&out, hex, strlen(hex));
		}
		snprintf(head, sizeof(head), "@%llu=%s:", (unsigned long long)c->ts,
			 cell_type_name(c->value.type));
		buf_append(&out, head, strlen(head));
		buf_clear(&text);
		cell_render(&text, &c->value);
		if (c->value.type != CELL_BYTES && text.len)
			text.len--;
		for (size_t k = 0; k < text.len; k++) {
			unsigned char ch = (unsigned char)text.data[k];
			char hex[8];

			snprintf(hex, sizeof(hex), ch >= 0x20 && ch < 0x7f ? "%c" : "\\x%02x", ch);
			buf_append(&out, hex, strlen(hex));
		}
	}
	tbl_row_free(got);
	buf_free(&text);
	buf_append(&out, "", 1);
	return out.data;
}

#define is_row(d, table, row, want, ...)					\
	do {									\
		char *got_ = row_text((d), (table), (row), strlen(row));	\
		is_str(got_, (want), __VA_ARGS__);				\
		free(got_);							\
	} while (0)

/* Did some report name line `line`, with msg in it? */
static int reported(const struct reports *rs, uint64_t line, const char *msg)
{
	for (int i = 0; i < rs->n && i < 64; i++)
		if (rs->r[i].line == line && (!msg || strstr(rs->r[i].msg, msg)))
			return 1;
	return 0;
}

static void show_reports(const struct reports *rs)
{
	for (int i = 0; i < rs->n && i < 64; i++)
		diag("report: line %llu: %s", (unsigned long long)rs->r[i].line, rs->r[i].msg);
}

/* ------------------------------------------------------------ the exact format */

static void test_exact_format(void)
{
	struct tbl_db *d = new_db(0);
	struct tbl_family_settings s;
	struct cell_value v;
	struct tio_stats st;
	char *out = NULL;
	size_t len = 0;
	static const char want[] =
		"{\"table\":\"pin\",\"families\":{\"meta\":{\"type\":\"string\",\"max_versions\":0,"
		"\"ttl\":0,\"locality_group\":\"default\",\"compression\":1},\"miles\":{\"type\":"
		"\"i64\",\"max_versions\":2,\"ttl\":0,\"locality_group\":\"nums\",\"compression\""
		":3}}}\n"
		"{\"table\":\"pin\",\"row\":\"N123\",\"cells\":[{\"family\":\"meta\",\"qualifier\":"
		"\"model\",\"ts\":1706140800000000,\"type\":\"string\",\"value\":\"A320 \\\"neo\\\"\\n"
		"\"},{\"family\":\"miles\",\"qualifier\":\"\",\"ts\":1706140800000001,\"type\":"
		"\"i64\",\"value\":51000000},{\"family\":\"miles\",\"qualifier\":\"\",\"ts\":"
		"1706140800000000,\"type\":\"f64\",\"value\":0.1}]}\n"
		"{\"table\":\"pin\",\"row_b64\":\"/wA=\",\"cells\":[{\"family\":\"meta\","
		"\"qualifier_b64\":\"wyg=\",\"ts\":5,\"type\":\"bytes\",\"value_b64\":\"AAEC\"}]}\n";

	must(tbl_create_table(d, "pin"), "create pin");
	family(d, "pin", "meta", CELL_STRING, 0, 0, NULL, 1);
	family(d, "pin", "miles", CELL_I64, 2, 0, "nums", 3);
	puts_(d, "pin", "N123", "meta", "model", 1706140800000000ULL,
	      vdata(CELL_STRING, "A320 \"neo\"\n", 11));
	v = val(CELL_I64);
	v.v.i64 = 51000000;
	puts_(d, "pin", "N123", "miles", "", 1706140800000001ULL, v);
	v = val(CELL_F64);
	v.v.f64 = 0.1;
	puts_(d, "pin", "N123", "miles", "", 1706140800000000ULL, v);
	v = val(CELL_I64);
	v.v.i64 = 1;
	puts_(d, "pin", "N123", "miles", "", 1706140700000000ULL, v);   /* beyond max_versions */
	put(d, "pin", "\xff\x00", 2, "meta", "\xc3\x28", 2, 5, vdata(CELL_BYTES, "\0\1\2", 3));

	is_int(export_buf(d, "pin", NULL, &out, &len, &st), 0, "export of table pin");
	is_str(out, want, "the exact bytes: schema line, then rows in key order, keys in the "
	       "documented order, escapes, base64 for a non-UTF-8 row key and qualifier and for "
	       "bytes, newest version first, no version beyond max_versions");
	is_int(st.lines, 3, "three lines written");
	is_int(st.rows, 2, "two rows");
	is_int(st.cells, 4, "four cells");
	is_int(st.bytes, len, "bytes counts what was written");
	free(out);

	is_int(export_buf(d, "pin", "N", &out, &len, &st), 0, "export with prefix N");
	ok(strstr(out, "N123") && !strstr(out, "row_b64") && st.rows == 1 && st.lines == 2,
	   "only the rows with the prefix (and the schema line)");
	free(out);

	must(tbl_get_family(d, "pin", "miles", &s), "get miles");
	s.ttl = 86400;
	must(tbl_alter_family(d, "pin", "miles", &s), "alter miles");
	is_int(export_buf(d, "pin", NULL, &out, &len, &st), 0, "export with a one-day ttl");
	ok(strstr(out, "\"ttl\":86400") && strstr(out, "miles\",\"qualifier") == NULL,
	   "the schema line has the ttl, and versions older than it are not exported");
	free(out);
	is_int(export_buf(d, "nosuch", NULL, &out, &len, &st), -ENOENT, "export of no such table");
	free(out);
	tbl_close(d);
}

/* ------------------------------------------------------------ the lossless round trip */

static char long_key[TBL_MAX_ROW_KEY], long_q[TBL_MAX_QUALIFIER];

/* A database with everything that could be hard to carry through the format. */
static void fill_everything(struct tbl_db *d)
{
	static const char *const rows[] = { "", "plain", "sp ace", "quote\"back\\slash",
					    "tab\tnl\ncr\r", "caf\xc3\xa9", "emoji\xf0\x9f\x98\x80",
					    "del\x7f" };
	static const struct { const char *p; size_t n; } bin_rows[] = {
		{ "\0", 1 }, { "\xff", 1 }, { "a\0b", 3 }, { "\xc3\x28", 2 },
		{ "\xed\xa0\x80", 3 }, { "\xff\xff\xff\xff", 4 }, { "\0\0", 2 },
	};
	struct cell_value v;

	must(tbl_create_table(d, "every"), "create every");
	family(d, "every", "s", CELL_STRING, 0, 0, NULL, 1);
	family(d, "every", "b", CELL_BYTES, 0, 0, NULL, 0);
	family(d, "every", "bo", CELL_BOOLEAN, 0, 0, NULL, 1);
	family(d, "every", "by", CELL_BYTE, 0, 0, NULL, 1);
	family(d, "every", "n32", CELL_I32, 0, 0, NULL, 1);
	family(d, "every", "n64", CELL_I64, 8, 0, NULL, 1);
	family(d, "every", "f32", CELL_F32, 0, 0, "floats", 1);
	family(d, "every", "f64", CELL_F64, 0, 0, "floats", 9);
	family(d, "every", "lg", CELL_STRING, 3, 0, "grp", 0);
	family(d, "every", "old", CELL_I64, 0, 3153600000ULL, NULL, 1);
	must(tbl_create_table(d, "Other.#$_-9"), "create Other");
	family(d, "Other.#$_-9", "x", CELL_STRING, 0, 0, NULL, 22);
	must(tbl_create_table(d, "empty"), "create empty");
	family(d, "empty", "e", CELL_BYTES, 1, 60, "egrp", 2);
	must(tbl_create_table(d, "nofamilies"), "create nofamilies");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char q[32];

		puts_(d, "every", rows[i], "s", "", 10, vdata(CELL_STRING, rows[i], strlen(rows[i])));
		snprintf(q, sizeof(q), "q%zu", i);
		puts_(d, "every", rows[i], "lg", q, 11, vdata(CELL_STRING, "in grp", 6));
	}
	for (size_t i = 0; i < sizeof(bin_rows) / sizeof(bin_rows[0]); i++) {
		put(d, "every", bin_rows[i].p, bin_rows[i].n, "b", bin_rows[i].p, bin_rows[i].n, 1,
		    vdata(CELL_BYTES, bin_rows[i].p, bin_rows[i].n));
		put(d, "every", bin_rows[i].p, bin_rows[i].n, "f64", "", 0, 2, val(CELL_F64));
	}
	memset(long_key, 'k', sizeof(long_key));
	long_key[100] = '\xff';
	memset(long_q, 'q', sizeof(long_q));
	long_q[0] = '\0';
	put(d, "every", long_key, sizeof(long_key), "s", long_q, sizeof(long_q), 3,
	    vdata(CELL_STRING, "limits", 6));

	/* strings: escapes of every kind, NUL, non-ASCII, empty */
	puts_(d, "every", "str", "s", "ctl", 1, vdata(CELL_STRING, "\0\x01\x1f\x7f\b\f\n\r\t\"\\/", 12));
	puts_(d, "every", "str", "s", "uni", 1,
	      vdata(CELL_STRING, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 13));
	puts_(d, "every", "str", "s", "empty", 1, vdata(CELL_STRING, "", 0));
	put(d, "every", "str", 3, "s", "\x01\x02\n", 3, 1, vdata(CELL_STRING, "ctl-q", 5));
	put(d, "every", "str", 3, "s", "\xc0\xaf", 2, 1, vdata(CELL_STRING, "bad-q", 5));
	/* bytes: empty, binary, valid UTF-8 (still base64), long */
	puts_(d, "every", "bin", "b", "empty", 1, vdata(CELL_BYTES, "", 0));
	puts_(d, "every", "bin", "b", "all", 1, vdata(CELL_BYTES, "\0\xff\x80\n\"", 5));
	puts_(d, "every", "bin", "b", "utf8", 1, vdata(CELL_BYTES, "hello", 5));
	/* booleans and bytes */
	v = val(CELL_BOOLEAN);
	v.v.boolean = 1;
	puts_(d, "every", "num", "bo", "t", 1, v);
	v.v.boolean = 0;
	puts_(d, "every", "num", "bo", "f", 1, v);
	v = val(CELL_BYTE);
	v.v.byte = 0;
	puts_(d, "every", "num", "by", "0", 1, v);
	v.v.byte = 255;
	puts_(d, "every", "num", "by", "255", 1, v);
	/* integers at their limits, several versions */
	v = val(CELL_I32);
	v.v.i32 = INT32_MIN;
	puts_(d, "every", "num", "n32", "min", 1, v);
	v.v.i32 = INT32_MAX;
	puts_(d, "every", "num", "n32", "max", 1, v);
	v = val(CELL_I64);
	for (int k = 0; k < 7; k++) {
		v.v.i64 = k == 0 ? INT64_MIN : k == 1 ? INT64_MAX : k * 1000 - 3000;
		puts_(d, "every", "num", "n64", "v", (uint64_t)(100 + k), v);
	}
	v.v.i64 = -1;
	puts_(d, "every", "num", "n64", "ts0", 0, v);
	puts_(d, "every", "num", "n64", "tsmax", UINT64_MAX - 1, v);
	/* floats: shortest forms, signed zero, subnormals, extremes, NaN, infinities */
	{
		static const float f32s[] = { 0.1f, -0.0f, 1e-45f, 3.4028235e38f, 1.17549435e-38f,
					      16777216.0f, 123456.789f };
		static const double f64s[] = { 0.1, -0.0, 5e-324, 1.7976931348623157e308, 1e16,
					       1e-5, 123456.789, 2.5, -1e-300 };
		char q[16];

		v = val(CELL_F32);
		for (size_t k = 0; k < sizeof(f32s) / sizeof(f32s[0]); k++) {
			v.v.f32 = f32s[k];
			snprintf(q, sizeof(q), "%zu", k);
			puts_(d, "every", "flt", "f32", q, 1, v);
		}
		v.v.f32 = NAN;
		puts_(d, "every", "flt", "f32", "nan", 1, v);
		v.v.f32 = INFINITY;
		puts_(d, "every", "flt", "f32", "inf", 1, v);
		v.v.f32 = -INFINITY;
		puts_(d, "every", "flt", "f32", "ninf", 1, v);
		v = val(CELL_F64);
		for (size_t k = 0; k < sizeof(f64s) / sizeof(f64s[0]); k++) {
			v.v.f64 = f64s[k];
			snprintf(q, sizeof(q), "%zu", k);
			puts_(d, "every", "flt", "f64", q, 1, v);
		}
		v.v.f64 = -NAN;
		puts_(d, "every", "flt", "f64", "nan", 1, v);
		v.v.f64 = -INFINITY;
		puts_(d, "every", "flt", "f64", "ninf", 1, v);
	}
	/* cells whose type is not their family's */
	v = val(CELL_I64);
	v.v.i64 = 42;
	puts_(d, "every", "mixed", "s", "an-i64", 7, v);
	puts_(d, "every", "mixed", "n64", "a-string", 7, vdata(CELL_STRING, "42", 2));
	puts_(d, "every", "mixed", "bo", "bytes", 7, vdata(CELL_BYTES, "\x01", 1));
	/* versions beyond max_versions (lg keeps 3): only 3 are visible, so exported */
	for (uint64_t ts = 1; ts <= 6; ts++)
		puts_(d, "every", "versions", "lg", "five", ts, vdata(CELL_STRING, "v", 1));
	/* a ttl of 100 years: 2024's versions are visible */
	v = val(CELL_I64);
	v.v.i64 = 2024;
	puts_(d, "every", "versions", "old", "y", 1706140800000000ULL, v);
	puts_(d, "Other.#$_-9", "r", "x", "", 1, vdata(CELL_STRING, "other table", 11));
}

static void test_round_trip(void)
{
	struct tbl_db *d1 = new_db(TBL_LIMIT_MAX_VALUE), *d2 = new_db(TBL_LIMIT_MAX_VALUE),
		*d3 = new_db(TBL_LIMIT_MAX_VALUE);
	struct tio_import_options o;
	struct tio_stats st1, st2, sti;
	struct reports rs;
	char *out1 = NULL, *out2 = NULL, *out3 = NULL;
	size_t len1 = 0, len2 = 0, len3 = 0;
	int r;

	fill_everything(d1);
	is_int(export_buf(d1, NULL, NULL, &out1, &len1, &st1), 0, "export every table");
	ok(strstr(out1, "\"row\":\"\\u0000\"") && strstr(out1, "\"row\":\"a\\u0000b\""),
	   "row keys with 0x00 (valid UTF-8) are JSON strings with \\u0000");
	ok(strstr(out1, "\"row_b64\":\"/w==\"") && strstr(out1, "\"row_b64\":\"wyg=\"") &&
	   strstr(out1, "\"row_b64\":\"7aCA\""),
	   "row keys 0xff, C3 28 and an encoded surrogate (not UTF-8) go as row_b64");
	ok(strstr(out1, "\"row\":\"\",") != NULL, "the empty row key is \"row\":\"\"");
	ok(strstr(out1, "\"row\":\"caf\xc3\xa9\"") && strstr(out1, "\"row\":\"tab\\tnl\\ncr\\r\""),
	   "UTF-8 row keys go as JSON strings, with escapes");
	ok(strstr(out1, "\"qualifier_b64\":\"wK8=\"") &&
	   strstr(out1, "\"qualifier\":\"\\u0001\\u0002\\n\""),
	   "an invalid UTF-8 qualifier goes as qualifier_b64; control characters escaped");
	ok(strstr(out1, "\"value\":\"\\u0000\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\\\"\\\\/\"") != NULL,
	   "a string value with every kind of escape");
	ok(strstr(out1, "\"type\":\"bytes\",\"value_b64\":\"aGVsbG8=\"") != NULL,
	   "bytes that are valid UTF-8 still go as value_b64");
	ok(strstr(out1, "\"value\":\"nan\"") && strstr(out1, "\"value\":\"inf\"") &&
	   strstr(out1, "\"value\":\"-inf\""), "NaN and the infinities as strings");
	ok(strstr(out1, "\"value\":1e-45") && strstr(out1, "\"value\":3.4028235e+38") &&
	   strstr(out1, "\"value\":5e-324") && strstr(out1, "\"value\":-0}") &&
	   strstr(out1, "\"value\":1e+16") && strstr(out1, "\"value\":1e-05"),
	   "floats in their shortest round-trip text");
	ok(strstr(out1, "\"value\":-9223372036854775808") &&
	   strstr(out1, "\"value\":9223372036854775807") && strstr(out1, "\"value\":-2147483648"),
	   "integers exact at their limits");
	ok(strstr(out1, "\"family\":\"s\",\"qualifier\":\"an-i64\",\"ts\":7,\"type\":\"i64\"") != NULL,
	   "a cell keeps its own type, not its family's");
	ok(strstr(out1, "{\"table\":\"empty\",\"families\":{\"e\":{\"type\":\"bytes\",\"max_versions\":1,"
		  "\"ttl\":60,\"locality_group\":\"egrp\",\"compression\":2}}}\n{\"table\":\"every\"")
	   != NULL, "a table without rows has its schema line, and tables come in name order");
	ok(strstr(out1, "{\"table\":\"nofamilies\",\"families\":{}}\n") != NULL,
	   "a table without families: \"families\":{}");
	if (getenv("TIO_DUMP"))
		fwrite(out1, 1, len1, stderr);
	diag("export: %llu lines, %llu rows, %llu cells, %llu bytes",
	     (unsigned long long)st1.lines, (unsigned long long)st1.rows,
	     (unsigned long long)st1.cells, (unsigned long long)st1.bytes);

	memset(&o, 0, sizeof(o));
	o.create = 1;
	o.max_value_size = TBL_LIMIT_MAX_VALUE;
	r = import_buf(d2, out1, len1, &o, &rs, &sti);
	is_int(r, 0, "import of the export into an empty database (create)");
	show_reports(&rs);
	is_int(sti.lines, st1.lines, "import read every line");
	is_int(sti.rows, st1.rows, "import wrote every row");
	is_int(sti.cells, st1.cells, "import wrote every cell");
	is_int(sti.bytes, len1, "import counted every byte");
	is_int(export_buf(d2, NULL, NULL, &out2, &len2, &st2), 0, "export again");
	is_mem(out2, len2, out1, len1, "export -> import -> export is byte-identical");
	is_row(d2, "every", "mixed", "bo:bytes@7=bytes:\\x01 n64:a-string@7=string:42 "
	       "s:an-i64@7=i64:42", "the imported cells have their own types");
	is_row(d2, "every", "versions", "lg:five@6=string:v lg:five@5=string:v lg:five@4=string:v "
	       "old:y@1706140800000000=i64:2024", "versions and timestamps as exported");

	/* every row in its own batch: the same result */
	o.batch_bytes = 1;
	r = import_buf(d3, out1, len1, &o, &rs, &sti);
	is_int(r, 0, "import with one row per batch");
	is_int(export_buf(d3, NULL, NULL, &out3, &len3, &st2), 0, "export of that");
	is_mem(out3, len3, out1, len1, "is byte-identical too");
	free(out3);
	out3 = NULL;

	/* importing the same lines again changes nothing visible (the same keys) */
	o.batch_bytes = 0;
	o.create = 0;
	r = import_buf(d2, out1, len1, &o, &rs, &sti);
	is_int(r, 0, "importing the export again into the same database (schema exists)");
	free(out2);
	out2 = NULL;
	is_int(export_buf(d2, NULL, NULL, &out2, &len2, &st2), 0, "export after the second import");
	is_mem(out2, len2, out1, len1, "is still byte-identical");

	/* tio_write_row gives exactly the export's line */
	{
		struct tbl_row *row = NULL;
		char *line = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&line, &n);

		must(tbl_get_row(d1, "every", "num", 3, NULL, &row), "get num");
		is_int(tio_write_row(f, "every", row), 0, "tio_write_row");
		fclose(f);
		ok(n > 0 && line[n - 1] == '\n' && memmem(out1, len1, line, n) != NULL &&
		   (line == NULL || memmem(out1, len1, line, n) == out1 ||
		    ((char *)memmem(out1, len1, line, n))[-1] == '\n'),
		   "writes the row's line exactly as export does");
		tbl_row_free(row);
		free(line);
	}
	free(out1);
	free(out2);
	tbl_close(d1);
	tbl_close(d2);
	tbl_close(d3);
}

/* A large value: its line is longer than the reader's first buffer. */
static void test_big_value(void)
{
	struct tbl_db *d1 = new_db(TBL_LIMIT_MAX_VALUE), *d2 = new_db(TBL_LIMIT_MAX_VALUE);
	size_t n = 5u << 20, len1 = 0, len2 = 0;
	char *big = xmalloc(n), *out1 = NULL, *out2 = NULL;
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	uint64_t seed = 3;

	for (size_t i = 0; i < n; i++)
		big[i] = (char)rand_next(&seed);
	must(tbl_create_table(d1, "big"), "create big");
	family(d1, "big", "b", CELL_BYTES, 0, 0, NULL, 1);
	family(d1, "big", "s", CELL_STRING, 0, 0, NULL, 1);
	put(d1, "big", "r", 1, "b", "", 0, 1, vdata(CELL_BYTES, big, n));
	memset(big, 'x', n);
	put(d1, "big", "r", 1, "s", "", 0, 1, vdata(CELL_STRING, big, n));
	is_int(export_buf(d1, NULL, NULL, &out1, &len1, &st), 0, "export of a row of 10 MiB");
	ok(len1 > (5u << 20) * 4 / 3 + (5u << 20), "its line is longer than 11 MiB");
	memset(&o, 0, sizeof(o));
	o.create = 1;
	o.max_value_size = TBL_LIMIT_MAX_VALUE;
	is_int(import_buf(d2, out1, len1, &o, &rs, &st), 0, "import of it");
	is_int(export_buf(d2, NULL, NULL, &out2, &len2, &st), 0, "export again");
	is_mem(out2, len2, out1, len1, "the 5 MiB bytes and string values round-trip");
	free(out1);
	free(out2);
	free(big);
	tbl_close(d1);
	tbl_close(d2);
}

/* ------------------------------------------------------------ malformed input */

static void test_malformed(void)
{
	struct tbl_db *d = new_db(MAXV);
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	struct buf in = BUF_INIT;
	char *longv = xmalloc(MAXV + 2), *line;
	int r;

	must(tbl_create_table(d, "t"), "create t");
	family(d, "t", "s", CELL_STRING, 0, 0, NULL, 1);
	family(d, "t", "n", CELL_I64, 0, 0, NULL, 1);
	family(d, "t", "b", CELL_BYTES, 0, 0, "lg", 1);
	family(d, "t", "f", CELL_F64, 0, 0, NULL, 1);
	family(d, "t", "by", CELL_BYTE, 0, 0, NULL, 1);
	family(d, "t", "i", CELL_I32, 0, 0, NULL, 1);
#define L(s) buf_append(&in, s "\n", strlen(s) + 1)
#define L0(s) buf_append(&in, s, strlen(s))
	/* 1 */ L("{\"table\":\"t\",\"row\":\"ok1\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"q\",\"ts\":5,\"type\":\"i64\",\"value\":1}]}");
	/* 2 */ L("{\"table\":\"t\",\"row\":\"x2\",\"cells\":[{\"family\":\"n\",");
	/* 3 */ L("{\"table\":\"t\",\"row\":\"x3\",\"cells\":[{\"family\":\"nope\",\"qualifier\":\"q\",\"value\":1}]}");
	/* 4 */ L("{\"table\":\"t\",\"row\":\"x4\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"q\",\"type\":\"i64\",\"value\":\"abc\"}]}");
	/* 5 */ L("{\"table\":\"t\",\"row\":\"x5\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"q\",\"value\":1.5}]}");
	/* 6 */ L("{\"table\":\"t\",\"row\":\"x6\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"q\",\"type\":\"int\",\"value\":1}]}");
	memset(longv, 'v', MAXV + 1);
	longv[MAXV + 1] = 0;
	line = xasprintf("{\"table\":\"t\",\"row\":\"x7\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":\"%s\"}]}", longv);
	/* 7 */ L("");
	in.len--;
	buf_append(&in, line, strlen(line));
	buf_append(&in, "\n", 1);
	free(line);
	/* 8: MAXV + 3 bytes in base64 (MAXV + 3 is a multiple of 3 for MAXV 4096? 4099: no matter) */
	{
		struct buf b64 = BUF_INIT;
		char *raw = xcalloc(1, MAXV + 3);

		json_put_base64(&b64, raw, MAXV + 3);
		buf_append(&b64, "", 1);
		line = xasprintf("{\"table\":\"t\",\"row\":\"x8\",\"cells\":[{\"family\":\"b\",\"qualifier\":\"q\",\"value_b64\":%s}]}", b64.data);
		buf_append(&in, line, strlen(line));
		buf_append(&in, "\n", 1);
		free(line);
		free(raw);
		buf_free(&b64);
	}
	/* 9 */ L("{\"cells\":[{\"value\":\"hi\",\"family\":\"s\",\"qualifier\":\"\"}],\"row\":\"ok2\",\"table\":\"t\"}");
	/* 10 */ L("{\"table\":\"t\",\"row\":\"x10\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"a\",\"value\":\"good\"},{\"family\":\"n\",\"qualifier\":\"b\",\"value\":\"bad\"}]}");
	/* 11 */ L("{\"table\":\"nosuch\",\"row\":\"x11\",\"cells\":[]}");
	/* 12 */ L("   ");
	/* 13 */ L("[1,2]");
	/* 14 */ L("{\"table\":\"t\",\"row\":\"x14\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":\"v\",\"colour\":1}]}");
	/* 15 */ L("{\"table\":\"t\",\"row\":\"x15\",\"row_b64\":\"eDE1\",\"cells\":[]}");
	/* 16 */ L("{\"table\":\"t\",\"row\":\"x16\",\"cells\":[{\"family\":\"b\",\"qualifier\":\"q\",\"value_b64\":\"Zh==\"}]}");
	/* 17 */ L("{\"table\":\"t\",\"row\":\"x17\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"q\",\"ts\":18446744073709551615,\"value\":1}]}");
	/* 18 */ L("{\"table\":\"t\",\"row\":\"x18\",\"cells\":[{\"family\":\"by\",\"qualifier\":\"q\",\"value\":256}]}");
	/* 19 */ L("{\"table\":\"t\",\"row\":\"x19\",\"cells\":[{\"family\":\"i\",\"qualifier\":\"q\",\"value\":2147483648}]}");
	line = xmalloc(TBL_MAX_QUALIFIER + 2);
	memset(line, 'q', TBL_MAX_QUALIFIER + 1);
	line[TBL_MAX_QUALIFIER + 1] = 0;
	/* 20 */ L0("{\"table\":\"t\",\"row\":\"x20\",\"cells\":[{\"family\":\"s\",\"value\":\"v\",\"qualifier\":\"");
	buf_append(&in, line, strlen(line));
	L("\"}]}");
	/* 21 */ L0("{\"table\":\"t\",\"cells\":[],\"row\":\"");
	buf_append(&in, line, TBL_MAX_ROW_KEY + 1);
	L("\"}");
	free(line);
	/* 22 */ L("{\"table\":\"t\",\"row\":\"x22\",\"row\":\"x22b\",\"cells\":[]}");
	/* 23 */ L("{\"table\":\"t\",\"row\":\"x23\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"value\":1e400}]}");
	/* 24 */ L("{\"table\":\"t\",\"row\":\"x24\",\"cells\":[{\"family\":\"b\",\"qualifier\":\"q\",\"value\":\"raw\"}]}");
	/* 25 */ L("{\"table\":\"t\",\"row\":\"ok3\",\"cells\":[{\"family\":\"n\",\"qualifier\":\"now\",\"value\":-7},{\"family\":\"f\",\"qualifier\":\"n\",\"ts\":1,\"value\":\"-inf\"}]}");
	/* 26 */ L("{\"table\":\"t\",\"row\":\"x26\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"value\":\"Infinity\"}]}");
	/* 27 */ L("{\"table\":\"t\",\"row\":\"x27\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":\"bad\xff utf8\"}]}");
	/* 28: cut mid-JSON, no newline */
	L0("{\"table\":\"t\",\"row\":\"x28\",\"cells\":[{\"fami");
#undef L
#undef L0
	memset(&o, 0, sizeof(o));
	o.max_value_size = MAXV;
	r = import_buf(d, in.data, in.len, &o, &rs, &st);
	is_int(r, -EINVAL, "an input with bad lines: -EINVAL");
	is_int(st.lines, 28, "28 lines read");
	is_int(st.bad_lines, 24, "24 of them bad");
	is_int(rs.n, 24, "24 reports");
	is_int(st.rows, 3, "3 rows written");
	ok(reported(&rs, 2, "bad JSON at column 48: expected a string key, found the end"), "line 2: bad JSON, with its column");
	ok(reported(&rs, 3, "no family \"nope\""), "line 3: unknown family");
	ok(reported(&rs, 4, "type i64 needs a JSON integer, not a string"),
	   "line 4: a string for an i64");
	ok(reported(&rs, 5, "1.5 is not a i64"), "line 5: 1.5 for an i64");
	ok(reported(&rs, 6, "unknown type \"int\""), "line 6: unknown type name");
	ok(reported(&rs, 7, "longer than the maximum value size"), "line 7: an oversized string");
	ok(reported(&rs, 8, "longer than the maximum value size"), "line 8: an oversized bytes value");
	ok(reported(&rs, 10, "cells[1]: type i64 needs a JSON integer"),
	   "line 10: the second cell is bad");
	ok(reported(&rs, 11, "no table \"nosuch\""), "line 11: unknown table");
	ok(!reported(&rs, 12, NULL), "line 12 (blank) is skipped without a report");
	ok(reported(&rs, 13, "must hold a JSON object"), "line 13: an array, not an object");
	ok(reported(&rs, 14, "unknown key \"colour\""), "line 14: an unknown key");
	ok(reported(&rs, 15, "exactly one of \"row\" and \"row_b64\""), "line 15: row and row_b64");
	ok(reported(&rs, 16, "not canonical base64"), "line 16: bad base64");
	ok(reported(&rs, 17, "\"ts\" must be an integer"), "line 17: ts 2^64 - 1 (reserved)");
	ok(reported(&rs, 18, "256 is not a byte"), "line 18: byte 256");
	ok(reported(&rs, 19, "2147483648 is not a i32"), "line 19: i32 overflow");
	ok(reported(&rs, 20, "qualifier of 16385 bytes"), "line 20: qualifier too long");
	ok(reported(&rs, 21, "row key of 4097 bytes"), "line 21: row key too long");
	ok(reported(&rs, 22, "duplicate key \"row\""), "line 22: a key twice");
	ok(reported(&rs, 23, "1e400 is out of range for f64"), "line 23: a float too large");
	ok(reported(&rs, 24, "\"value_b64\""), "line 24: bytes given as value");
	ok(reported(&rs, 26, "not the string \"Infinity\""), "line 26: \"Infinity\" is not one of the strings");
	ok(reported(&rs, 27, "bad JSON at column"), "line 27: invalid UTF-8 is bad JSON");
	ok(reported(&rs, 28, "truncated"), "line 28: the truncated last line");
	for (int i = 0; i + 1 < rs.n && i + 1 < 64; i++)
		if (rs.r[i].line >= rs.r[i + 1].line) {
			ok(0, "reports come in line order");
			break;
		}
	if (rs.n != 24 || getenv("TIO_DUMP"))
		show_reports(&rs);
	is_row(d, "t", "ok1", "n:q@5=i64:1", "ok1 (line 1) is written");
	{
		char *got = row_text(d, "t", "ok2", 3);

		ok(strncmp(got, "s:@", 3) == 0 && strstr(got, "=string:hi"),
		   "ok2: keys in another order; ts absent takes the server time");
		free(got);
		got = row_text(d, "t", "ok3", 3);
		ok(strstr(got, "f:n@1=f64:-inf") && strstr(got, "=i64:-7"),
		   "ok3 (line 25): -inf from its string; type absent takes the family's (i64)");
		free(got);
	}
	{
		static const char *const badrows[] = { "x2", "x3", "x4", "x5", "x6", "x7", "x8",
						       "x10", "x14", "x15", "x16", "x17", "x18",
						       "x19", "x20", "x22", "x23", "x24", "x26",
						       "x27", "x28" };
		int written = 0;

		for (size_t i = 0; i < sizeof(badrows) / sizeof(badrows[0]); i++)
			written += has_row(d, "t", badrows[i], strlen(badrows[i]));
		is_int(written, 0, "nothing of any bad row is written (line 10's good cell neither)");
	}
	buf_free(&in);
	free(longv);
	tbl_close(d);
}

/*
 * A row that passes import's own checks but that the table layer refuses
 * (here: a value over the database's limit when import was not told the
 * limit): reported with its line, taken out of its batch, the other rows of
 * the batch written.
 */
static void test_refused_in_batch(void)
{
	struct tbl_db *d = new_db(MAXV);
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	struct buf in = BUF_INIT;
	char *big = xmalloc(MAXV + 100), *line;
	int r;

	must(tbl_create_table(d, "t"), "create t");
	family(d, "t", "s", CELL_STRING, 0, 0, NULL, 1);
	memset(big, 'z', MAXV + 99);
	big[MAXV + 99] = 0;
	for (int i = 1; i <= 6; i++) {
		line = xasprintf("{\"table\":\"t\",\"row\":\"r%d\",\"cells\":[{\"family\":\"s\","
				 "\"qualifier\":\"q\",\"ts\":1,\"value\":\"%s\"}]}\n", i,
				 i == 2 || i == 5 ? big : "small");
		buf_append(&in, line, strlen(line));
		free(line);
	}
	memset(&o, 0, sizeof(o));   /* max_value_size 0: import assumes the default 10 MiB */
	r = import_buf(d, in.data, in.len, &o, &rs, &st);
	is_int(r, -EINVAL, "rows refused by the table layer make the import -EINVAL");
	is_int(rs.n, 2, "two reports");
	ok(reported(&rs, 2, "exceeds the maximum") && reported(&rs, 5, "exceeds the maximum"),
	   "lines 2 and 5 are reported with the table layer's reason");
	if (rs.n != 2)
		show_reports(&rs);
	ok(has_row(d, "t", "r1", 2) && has_row(d, "t", "r3", 2) && has_row(d, "t", "r4", 2) &&
	   has_row(d, "t", "r6", 2), "the other four rows of the batch are written");
	ok(!has_row(d, "t", "r2", 2) && !has_row(d, "t", "r5", 2), "rows 2 and 5 are not");
	is_int(st.rows, 4, "4 rows counted");
	is_int(st.bad_lines, 2, "2 bad lines counted");
	free(big);
	buf_free(&in);
	tbl_close(d);
}

/* Lines longer than the limit are reported and skipped, however long, and the rest goes on. */
static void test_long_lines(void)
{
	struct tbl_db *d = new_db(0);
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	struct buf in = BUF_INIT;
	size_t sizes[3] = { 5000, 3u << 20, 2000 };   /* of the long lines, "\n" not counted */
	char *pad = xmalloc(3u << 20);
	int r;

	must(tbl_create_table(d, "t"), "create t");
	family(d, "t", "s", CELL_STRING, 0, 0, NULL, 1);
	memset(pad, 'p', 3u << 20);
#define L0(s) buf_append(&in, s, strlen(s))
	for (int i = 0; i < 3; i++) {
		char *line = xasprintf("{\"table\":\"t\",\"row\":\"ok%d\",\"cells\":[{\"family\":"
				       "\"s\",\"qualifier\":\"\",\"ts\":1,\"value\":\"v\"}]}\n", i);

		buf_append(&in, line, strlen(line));
		free(line);
		L0("{\"table\":\"t\",\"row\":\"long\",\"cells\":[{\"family\":\"s\","
		   "\"qualifier\":\"\",\"value\":\"");
		buf_append(&in, pad, sizes[i] - 73 - 4);
		buf_append(&in, "\"}]}", 4);
		if (i < 2)
			buf_append(&in, "\n", 1);
	}
#undef L0
	memset(&o, 0, sizeof(o));
	o.max_line = 1000;
	r = import_buf(d, in.data, in.len, &o, &rs, &st);
	is_int(r, -EINVAL, "lines over max_line: -EINVAL");
	is_int(st.lines, 6, "6 lines read");
	ok(reported(&rs, 2, "a line of 5000 bytes is longer than the limit of 1000") &&
	   reported(&rs, 4, "a line of 3145728 bytes") && reported(&rs, 6, "a line of 2000 bytes"),
	   "lines 2, 4 (3 MiB, over several reads) and 6 (the last, without a newline) are "
	   "reported with their lengths");
	is_int(rs.n, 3, "and nothing else");
	if (rs.n != 3)
		show_reports(&rs);
	is_int(st.rows, 3, "the three short rows are written");
	ok(has_row(d, "t", "ok0", 3) && has_row(d, "t", "ok1", 3) && has_row(d, "t", "ok2", 3) &&
	   !has_row(d, "t", "long", 4), "rows ok0, ok1, ok2 are there, row long is not");
	is_int(st.bytes, in.len, "every byte was read");
	o.max_line = 0;
	is_int(import_buf(d, in.data, in.len, &o, &rs, &st), 0, "with the default limit they are fine");
	ok(has_row(d, "t", "long", 4), "and row long is written");
	buf_free(&in);
	free(pad);
	tbl_close(d);
}

/*
 * TBL_SYNC makes the import durable: the last batch is written synced; when
 * the last write was an unsynced one (every row its own batch here, so the
 * final flush has nothing left), the memtables are flushed instead.
 */
static void test_sync(void)
{
	struct tbl_db *d = new_db(0);
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	struct kv_stats k0, k1;
	static const char in[] =
		"{\"table\":\"t\",\"row\":\"a\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"\",\"ts\":1,\"value\":\"1\"}]}\n"
		"{\"table\":\"t\",\"row\":\"b\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"\",\"ts\":1,\"value\":\"2\"}]}\n";

	must(tbl_create_table(d, "t"), "create t");
	family(d, "t", "s", CELL_STRING, 0, 0, NULL, 1);
	memset(&o, 0, sizeof(o));
	o.flags = TBL_SYNC;
	kv_get_stats(tbl_kv(d), &k0);
	is_int(import_str(d, in, &o, &rs, &st), 0, "an import with TBL_SYNC in one batch");
	kv_get_stats(tbl_kv(d), &k1);
	is_int(k1.flushes, k0.flushes, "its last (only) batch is written synced: no flush needed");
	o.batch_bytes = 1;
	is_int(import_str(d, in, &o, &rs, &st), 0, "an import with TBL_SYNC, a batch per row");
	kv_get_stats(tbl_kv(d), &k0);
	ok(k0.flushes > k1.flushes, "the last write was not synced: the memtables were flushed");
	o.flags = 0;
	is_int(import_str(d, in, &o, &rs, &st), 0, "without TBL_SYNC");
	kv_get_stats(tbl_kv(d), &k1);
	is_int(k1.flushes, k0.flushes, "nothing is flushed");
	tbl_close(d);
}

/* ------------------------------------------------------------ schema lines */

static void test_schema_lines(void)
{
	struct tbl_db *d = new_db(0);
	struct tio_import_options o;
	struct tbl_family_settings s;
	struct tio_stats st;
	struct reports rs;
	uint64_t seq;
	static const char in[] =
		"{\"table\":\"new\",\"families\":{\"a\":{\"type\":\"i32\",\"max_versions\":4,\"ttl\":99,"
		"\"locality_group\":\"g1\",\"compression\":0},\"b\":{}}}\n"
		"{\"table\":\"new\",\"row\":\"r\",\"cells\":[{\"family\":\"a\",\"qualifier\":\"\","
		"\"value\":3},{\"family\":\"b\",\"qualifier\":\"\",\"ts\":1,\"value\":\"s\"}]}\n";
	static const char bad_schema[] =
		"{\"table\":\"t2\",\"families\":{\"a\":{\"type\":\"int\"}}}\n"
		"{\"table\":\"t2\",\"families\":{\"a\":{\"ttl\":-1}}}\n"
		"{\"table\":\"t2\",\"families\":{\"a\":{\"compression\":23}}}\n"
		"{\"table\":\"t2\",\"families\":{\"a/b\":{}}}\n"
		"{\"table\":\"t/2\",\"families\":{}}\n"
		"{\"table\":\"t2\",\"families\":{\"a\":{\"colour\":1}}}\n"
		"{\"table\":\"t2\",\"families\":{\"a\":{\"locality_group\":\"..\"}}}\n"
		"{\"table\":\"t2\",\"families\":[]}\n"
		"{\"table\":\"t2\",\"families\":{},\"x\":1}\n";

	memset(&o, 0, sizeof(o));
	is_int(import_str(d, in, &o, &rs, &st), -EINVAL, "without create, a new table is refused");
	ok(reported(&rs, 1, "no table new (--create would create it)"),
	   "line 1: the schema line names a missing table");
	ok(reported(&rs, 2, "no table \"new\""), "line 2: so does the row");
	is_int(tbl_table_exists(d, "new"), -ENOENT, "nothing was created");

	o.dry_run = 1;
	o.create = 1;
	seq = last_seq(d);
	is_int(import_str(d, in, &o, &rs, &st), 0, "a dry run with create: the lines are good");
	is_int(st.rows, 1, "the row would be written");
	is_int(st.cells, 2, "with its two cells");
	is_int(tbl_table_exists(d, "new"), -ENOENT, "but the dry run created nothing");
	is_int(last_seq(d), seq, "and wrote nothing at all");

	o.dry_run = 0;
	is_int(import_str(d, in, &o, &rs, &st), 0, "with create, the table and families are made");
	show_reports(&rs);
	is_int(tbl_get_family(d, "new", "a", &s), 0, "family a exists");
	ok(s.type == CELL_I32 && s.max_versions == 4 && s.ttl == 99 &&
	   strcmp(s.locality_group, "g1") == 0 && s.compression == 0,
	   "with the line's settings");
	is_int(tbl_get_family(d, "new", "b", &s), 0, "family b exists");
	ok(s.type == CELL_STRING && s.max_versions == 0 && s.ttl == 0 &&
	   strcmp(s.locality_group, "default") == 0 && s.compression == 1,
	   "with the defaults for the settings the line leaves out");
	{
		char *got = row_text(d, "new", "r", 1);

		ok(strncmp(got, "a:@", 3) == 0 && strstr(got, "=i32:3 b:@1=string:s"),
		   "the row is written (a at the server time: its ttl is 99 s)");
		free(got);
	}

	/* an existing family keeps its settings */
	is_int(import_str(d, "{\"table\":\"new\",\"families\":{\"a\":{\"type\":\"f64\"}}}", &o,
			  &rs, &st), 0, "a schema line for existing families");
	ok(tbl_get_family(d, "new", "a", &s) == 0 && s.type == CELL_I32,
	   "leaves their settings as they are");
	o.create = 0;
	is_int(import_str(d, "{\"table\":\"new\",\"families\":{\"zz\":{}}}\n", &o, &rs, &st),
	       -EINVAL, "without create, a missing family in a schema line is refused");
	ok(reported(&rs, 1, "has no family zz"), "and reported");

	o.create = 1;
	is_int(import_str(d, bad_schema, &o, &rs, &st), -EINVAL, "bad schema lines");
	is_int(rs.n, 9, "each of the 9 is reported");
	ok(reported(&rs, 1, "\"type\" must be one of"), "line 1: unknown type");
	ok(reported(&rs, 2, "\"ttl\" must be an integer"), "line 2: negative ttl");
	ok(reported(&rs, 3, "\"compression\" must be an integer from 0 to 22"),
	   "line 3: compression 23");
	ok(reported(&rs, 4, "family name \"a/b\""), "line 4: a bad family name");
	ok(reported(&rs, 5, "table name \"t/2\""), "line 5: a bad table name");
	ok(reported(&rs, 6, "unknown setting \"colour\""), "line 6: an unknown setting");
	ok(reported(&rs, 7, "locality_group"), "line 7: a bad group name");
	ok(reported(&rs, 8, "must be an object"), "line 8: families as an array");
	ok(reported(&rs, 9, "unknown key \"x\""), "line 9: an unknown key");
	is_int(tbl_table_exists(d, "t2"), -ENOENT, "no bad schema line created anything");
	tbl_close(d);
}

/* ------------------------------------------------------------ dry run */

static void test_dry_run(void)
{
	struct tbl_db *d = new_db(MAXV);
	struct tio_import_options o;
	struct tio_stats st1, st2;
	struct reports rs1, rs2;
	uint64_t seq;
	int r1, r2, same = 1;
	static const char in[] =
		"{\"table\":\"t\",\"row\":\"a\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":\"1\"}]}\n"
		"{\"table\":\"t\",\"row\":\"b\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":1}]}\n"
		"{\"table\":\"t\",\"row\":\"c\",\"cells\":[{\"family\":\"zz\",\"qualifier\":\"q\",\"value\":1}]}\n"
		"not json\n"
		"{\"table\":\"t\",\"row\":\"d\",\"cells\":[{\"family\":\"s\",\"qualifier\":\"q\",\"value\":\"4\"}]}\n";

	must(tbl_create_table(d, "t"), "create t");
	family(d, "t", "s", CELL_STRING, 0, 0, NULL, 1);
	memset(&o, 0, sizeof(o));
	o.dry_run = 1;
	o.max_value_size = MAXV;
	seq = last_seq(d);
	r1 = import_str(d, in, &o, &rs1, &st1);
	is_int(r1, -EINVAL, "a dry run of an input with bad lines: -EINVAL");
	is_int(last_seq(d), seq, "a dry run writes nothing (the kv sequence has not moved)");
	ok(!has_row(d, "t", "a", 1) && !has_row(d, "t", "d", 1), "no row is there");
	is_int(st1.rows, 2, "it counts the 2 rows that would be written");
	o.dry_run = 0;
	r2 = import_str(d, in, &o, &rs2, &st2);
	is_int(r2, r1, "the real run gives the same result");
	is_int(rs2.n, rs1.n, "and the same number of reports (%d)", rs1.n);
	for (int i = 0; i < rs1.n && i < rs2.n && i < 64; i++)
		same &= rs1.r[i].line == rs2.r[i].line && strcmp(rs1.r[i].msg, rs2.r[i].msg) == 0;
	ok(same, "the same reports, line for line");
	ok(reported(&rs1, 2, NULL) && reported(&rs1, 3, NULL) && reported(&rs1, 4, NULL),
	   "lines 2, 3, 4 are the bad ones");
	is_int(st2.rows, st1.rows, "the same row count");
	ok(has_row(d, "t", "a", 1) && has_row(d, "t", "d", 1), "the real run wrote rows a and d");
	tbl_close(d);
}

/* ------------------------------------------------------------ Smoltable */

static void test_smoltable(void)
{
	struct tbl_db *d = new_db(MAXV);
	struct tio_import_options o;
	struct tio_stats st;
	struct reports rs;
	uint64_t seq;
	static const char payload[] =
		"\n  {\n"
		"  \"items\": [\n"
		"    {\"row_key\": \"r1\", \"cells\": [\n"
		"      {\"column_key\": \"s:name\", \"type\": \"string\", \"value\": \"x\", \"time\": 1706140800123456789},\n"
		"      {\"column_key\": \"n:\", \"type\": \"i64\", \"value\": 5, \"time\": 999},\n"
		"      {\"column_key\": \"f\", \"type\": \"f64\", \"value\": 1.5, \"time\": 3000}\n"
		"    ]},\n"
		"    {\"row_key\": \"r2\", \"cells\": [{\"column_key\": \"n:a:b\", \"type\": \"i32\", \"value\": 7, \"time\": 2000}]},\n"
		"    {\"row_key\": \"bad1\", \"cells\": [{\"column_key\": \"nofam:x\", \"type\": \"i64\", \"value\": 1, \"time\": 1}]},\n"
		"    {\"row_key\": \"bad2\", \"cells\": [{\"column_key\": \"n:x\", \"type\": \"u64\", \"value\": 1, \"time\": 1}]},\n"
		"    {\"row_key\": \"bad3\", \"cells\": [{\"column_key\": \"n:x\", \"type\": \"i64\", \"value\": 1, \"time\": -5}]},\n"
		"    {\"row_key\": \"bad4\", \"cells\": [{\"column_key\": \"n:x\", \"type\": \"i64\", \"value\": 1,\n"
		"       \"time\": 1, \"extra\": true}]},\n"
		"    {\"row_key\": \"bad5\", \"cells\": [{\"column_key\": \"n:x\", \"type\": \"i64\" \"value\": 1}]},\n"
		"    {\"row_key\": \"r3\", \"cells\": [{\"column_key\": \"b:x\", \"type\": \"bytes\", \"value_b64\": \"AP8=\", \"time\": 4000},\n"
		"                               {\"column_key\": \"bo:\", \"type\": \"boolean\", \"value\": true, \"time\": 4000},\n"
		"                               {\"column_key\": \"by:\", \"type\": \"byte\", \"value\": 200, \"time\": 4000},\n"
		"                               {\"column_key\": \"f3:\", \"type\": \"f32\", \"value\": 0.1, \"time\": 4000}]}\n"
		"  ]\n"
		"}\n";
	static const char good[] =
		"{\"items\":[{\"row_key\":\"g1\",\"cells\":[{\"column_key\":\"n:c\",\"type\":\"i64\","
		"\"value\":-1,\"time\":18446744073709551614999}]},{\"row_key\":\"g2\",\"cells\":[]}]}";
	static const char truncated[] =
		"{\"items\":[{\"row_key\":\"t1\",\"cells\":[{\"column_key\":\"n:c\",\"type\":\"i64\","
		"\"value\":1,\"time\":1000}]},\n{\"row_key\":\"t2\",\"cells\":[{\"column_key\":\"n:c\",\"ty";
	static const char broken[] =
		"{\"items\":[{\"row_key\":\"u1\",\"cells\":[]} {\"row_key\":\"u2\",\"cells\":[]}]}";
	static const char extra_key[] = "{\"items\":[],\"more\":1}";

	must(tbl_create_table(d, "smol"), "create smol");
	family(d, "smol", "s", CELL_STRING, 0, 0, NULL, 1);
	family(d, "smol", "n", CELL_I64, 0, 0, NULL, 1);
	family(d, "smol", "f", CELL_F64, 0, 0, "lg", 1);
	family(d, "smol", "b", CELL_BYTES, 0, 0, NULL, 1);
	family(d, "smol", "bo", CELL_BOOLEAN, 0, 0, NULL, 1);
	family(d, "smol", "by", CELL_BYTE, 0, 0, NULL, 1);
	family(d, "smol", "f3", CELL_F32, 0, 0, NULL, 1);
	memset(&o, 0, sizeof(o));
	o.max_value_size = MAXV;

	seq = last_seq(d);
	is_int(import_str(d, payload, &o, &rs, &st), -EINVAL,
	       "a Smoltable payload without a table: -EINVAL");
	ok(reported(&rs, 1, "--table"), "reported: it needs --table");
	is_int(last_seq(d), seq, "and nothing is written");

	o.table = "smol";
	o.dry_run = 1;
	is_int(import_str(d, payload, &o, &rs, &st), -EINVAL, "a dry run of the payload");
	is_int(last_seq(d), seq, "writes nothing");
	is_int(st.rows, 3, "and counts the 3 good items");
	o.dry_run = 0;
	is_int(import_str(d, payload, &o, &rs, &st), -EINVAL,
	       "the payload (spanning lines, with 5 bad items) into table smol: -EINVAL");
	is_int(rs.n, 5, "5 reports");
	if (rs.n != 5 || getenv("TIO_DUMP"))
		show_reports(&rs);
	ok(reported(&rs, 10, "no family \"nofam\""), "line 10: an unknown family");
	ok(reported(&rs, 11, "unknown type \"u64\""), "line 11: a type Smoltable and we lack");
	ok(reported(&rs, 12, "\"time\" must be a non-negative integer"), "line 12: a negative time");
	ok(reported(&rs, 13, "unknown key \"extra\""),
	   "line 13: an unknown key (the item begins on line 13, the key is on 14)");
	ok(reported(&rs, 15, "bad JSON in the item that begins on line 15"),
	   "line 15: bad JSON inside an item");
	is_int(st.rows, 3, "3 rows written");
	is_int(st.cells, 8, "8 cells written");
	is_int(st.lines, 21, "21 lines read");
	is_row(d, "smol", "r1", "f:@3=f64:1.5 n:@0=i64:5 s:name@1706140800123456=string:x",
	       "r1: ns to us rounded down (999 ns is 0 us), \"fam\" and \"fam:\" are the empty "
	       "qualifier");
	is_row(d, "smol", "r2", "n:a:b@2=i32:7", "r2: the qualifier is all after the first ':'");
	is_row(d, "smol", "r3", "b:x@4=bytes:\\x00\\xff bo:@4=boolean:true by:@4=byte:200 "
	       "f3:@4=f32:0.1", "r3: bytes, boolean, byte and f32 values");
	ok(!has_row(d, "smol", "bad1", 4) && !has_row(d, "smol", "bad2", 4) &&
	   !has_row(d, "smol", "bad3", 4) && !has_row(d, "smol", "bad4", 4) &&
	   !has_row(d, "smol", "bad5", 4), "no bad item is written");

	is_int(import_str(d, good, &o, &rs, &st), 0, "a good payload on one line");
	is_row(d, "smol", "g1", "n:c@18446744073709551614=i64:-1",
	       "a time above 2^64 ns whose us fit");
	is_int(st.rows, 2, "an item without cells counts as a row");

	is_int(import_str(d, truncated, &o, &rs, &st), -EINVAL, "a truncated payload: -EINVAL");
	ok(reported(&rs, 2, "truncated"), "reported at the line where the cut item begins");
	is_row(d, "smol", "t1", "n:c@1=i64:1", "the items before the cut are written");
	ok(!has_row(d, "smol", "t2", 2), "the cut item is not");

	is_int(import_str(d, broken, &o, &rs, &st), -EINVAL, "a missing comma between items");
	ok(reported(&rs, 1, "expected ',' or ']' after an item"), "is reported");
	ok(has_row(d, "smol", "u1", 2) == 0, "u1 has no cells, so no row shows");
	is_int(import_str(d, extra_key, &o, &rs, &st), -EINVAL, "a key after items");
	ok(reported(&rs, 1, "\"items\" is the only key"), "is reported");
	o.max_line = 60;
	is_int(import_str(d, good, &o, &rs, &st), -EINVAL, "an item longer than max_line");
	ok(reported(&rs, 1, "an item of 102 bytes is longer than the limit of 60 bytes"),
	   "is reported, and stops the import");
	o.max_line = 0;
	o.table = "nosuch";
	is_int(import_str(d, good, &o, &rs, &st), -EINVAL, "a payload for a missing table");
	ok(reported(&rs, 1, "no table nosuch"), "is reported");
	tbl_close(d);
}

/* ------------------------------------------------------------ odds and ends */

struct prog {
	int calls;
	uint64_t last_done, last_total;
	int backwards;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	if (done < p->last_done)
		p->backwards = 1;
	p->calls++;
	p->last_done = done;
	p->last_total = total;
}

static void test_progress_and_edges(void)
{
	struct tbl_db *d = new_db(0), *d2 = new_db(0);
	struct tio_import_options o;
	struct tio_progress pr;
	struct prog pe = { 0, 0, 0, 0 }, pi = { 0, 0, 0, 0 };
	struct tio_stats st;
	struct reports rs;
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	must(tbl_create_table(d, "p"), "create p");
	family(d, "p", "s", CELL_STRING, 0, 0, NULL, 1);
	{
		char v[1000];

		memset(v, 'v', sizeof(v));
		for (int i = 0; i < 5000; i++) {
			char row[16];

			snprintf(row, sizeof(row), "row%05d", i);
			puts_(d, "p", row, "s", "q", 1, vdata(CELL_STRING, v, sizeof(v)));
		}
	}
	pr.fn = on_progress;
	pr.arg = &pe;
	pr.stop = NULL;
	f = open_memstream(&out, &len);
	r = tio_export(d, NULL, NULL, 0, f, &st, &pr);
	fclose(f);
	is_int(r, 0, "export of 5000 rows of 1 KB with progress");
	ok(pe.calls >= 5 && !pe.backwards, "progress was called several times (%d), never backwards",
	   pe.calls);
	is_int(pe.last_done, len, "the last call reports every byte");

	memset(&o, 0, sizeof(o));
	o.create = 1;
	pr.arg = &pi;
	f = fmemopen(out, len, "r");
	r = tio_import(d2, f, "mem", &o, on_report, &rs, &st, &pr);
	fclose(f);
	is_int(r, 0, "import of it with progress");
	ok(pi.calls >= 5 && !pi.backwards, "progress was called several times (%d), never backwards",
	   pi.calls);
	is_int(pi.last_done, len, "the last call reports every byte");

	/* a stop flag (smolctl's SIGINT handler sets one): each stops after a whole line */
	{
		static volatile sig_atomic_t stop = 1;
		struct tio_progress ps = { NULL, NULL, &stop };
		char *out2 = NULL;
		size_t len2 = 0;

		f = open_memstream(&out2, &len2);
		r = tio_export(d, NULL, NULL, 0, f, &st, &ps);
		fclose(f);
		is_int(r, -EINTR, "an export asked to stop stops with -EINTR");
		is_int(st.lines, 1, "after its first line");
		is_int(len2, (long long)(strchr(out, '\n') - out + 1), "having written just that line");
		free(out2);
		f = fmemopen(out, len, "r");
		r = tio_import(d2, f, "mem", &o, on_report, &rs, &st, &ps);
		fclose(f);
		is_int(r, -EINTR, "an import asked to stop stops with -EINTR");
		is_int(st.lines, 1, "after its first line (which it did import)");
	}
	free(out);

	is_int(import_str(d2, "", &o, &rs, &st), 0, "an empty input is fine");
	is_int(st.lines, 0, "and has no lines");
	is_int(import_str(d2, "\n\n  \r\n", &o, &rs, &st), 0, "blank lines are fine");
	is_int(st.lines, 3, "3 lines");
	is_int(import_str(d2, "{\"table\":\"p\",\"row\":\"crlf\",\"cells\":[{\"family\":\"s\","
			  "\"qualifier\":\"\",\"ts\":1,\"value\":\"x\"}]}\r\n", &o, &rs, &st), 0,
	       "a line ended by CR LF");
	is_int(import_str(d2, "{\"table\":\"p\",\"row\":\"nonl\",\"cells\":[{\"family\":\"s\","
			  "\"qualifier\":\"\",\"ts\":1,\"value\":\"x\"}]}", &o, &rs, &st), 0,
	       "a complete last line without its newline");
	ok(has_row(d2, "p", "crlf", 4) && has_row(d2, "p", "nonl", 4), "both rows are written");
	is_int(import_str(d2, "{\"table\":\"p\",\"row\":\"nul\\u0000key\",\"cells\":[{\"family\":\"s\","
			  "\"qualifier\":\"a\\u0000b\",\"ts\":1,\"value\":\"x\"}]}\n", &o, &rs, &st), 0,
	       "\\u0000 in a row key and a qualifier");
	ok(has_row(d2, "p", "nul\0key", 7), "the row key holds the NUL byte");
	is_int(import_str(d2, "{\"table\":\"p\\u0000x\",\"row\":\"r\",\"cells\":[]}\n", &o, &rs, &st),
	       -EINVAL, "a table name with a NUL is no table");
	is_int(import_str(d2, "{\"table\":\"p\",\"row\":\"r\",\"cells\":[{\"family\":\"s\\u0000\","
			  "\"qualifier\":\"\",\"value\":\"x\"}]}\n", &o, &rs, &st),
	       -EINVAL, "a family name with a NUL is no family");
	tbl_close(d);
	tbl_close(d2);
}

int main(void)
{
	plan(202);
	make_tmpdir("tio_io");
	test_exact_format();
	test_round_trip();
	test_big_value();
	test_malformed();
	test_refused_in_batch();
	test_long_lines();
	test_sync();
	test_schema_lines();
	test_dry_run();
	test_smoltable();
	test_progress_and_edges();
	rm_rf(tmpdir);
	return exit_status();
}
