/*
 * tbl_mutate.c -- tests for engine/tmutate.c, the table layer's row
 * mutations: every mutation kind with explicit and server timestamps, every
 * cell type set from values and from text (and refused when invalid), the
 * limits on row keys, qualifiers and values, all-or-nothing batches, the
 * exact boundaries of time-range deletes, row deletes across locality groups
 * (one range tombstone per group, in one batch), increment, append and
 * check-and-mutate with their type and range errors, tmut_read_newest under
 * GC rules and snapshots, durability across a reopen, and read-modify-write
 * atomicity under threads.
 *
 * The checks are white-box: what a mutation left behind is read straight
 * from the kv trees (tbl_kv) and decoded with tkey_decode and cell_decode,
 * every stored version included, so a test sees exactly the keys written and
 * deleted, not what a reader chooses to show.  "Nothing written" is checked
 * as the kv sequence number not moving.
 *
 * SMOLFS_TEST_SCALE scales the thread tests (default 1.0: 4 x 500 increments).
 */
#include "tap.h"
#include "testutil.h"
#include "table_int.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXV 1024      /* the max_value_size of the test database */

static struct tbl_db *db;

static struct tbl_db *open_db(const char *name)
{
	struct tbl_options o;
	struct tbl_db *d = NULL;
	char *dir = xasprintf("%s/%s", tmpdir, name);
	int r;

	tbl_options_init(&o);
	o.max_value_size = MAXV;
	r = tbl_open(dir, &o, &d);
	if (r) {
		printf("Bail out! tbl_open %s: %s\n", dir, kv_strerror(r));
		exit(1);
	}
	free(dir);
	return d;
}

static void add_family(struct tbl_db *d, const char *table, const char *family,
		       enum cell_type type, uint32_t max_versions, uint64_t ttl, const char *group)
{
	struct tbl_family_settings s;
	int r;

	tbl_family_settings_init(&s);
	s.type = type;
	s.max_versions = max_versions;
	s.ttl = ttl;
	if (group)
		snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	r = tbl_add_family(d, table, family, &s);
	if (r) {
		printf("Bail out! tbl_add_family %s %s: %s\n", table, family, kv_strerror(r));
		exit(1);
	}
}

/* ------------------------------------------------------------ values */

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

static struct cell_value vstr(const char *s)
{
	return vdata(CELL_STRING, s, strlen(s));
}

static struct cell_value vi64(int64_t x)
{
	struct cell_value v = val(CELL_I64);

	v.v.i64 = x;
	return v;
}

static struct cell_value vi32(int32_t x)
{
	struct cell_value v = val(CELL_I32);

	v.v.i32 = x;
	return v;
}

static struct tbl_mutation set(const char *family, const char *q, uint64_t ts,
			       struct cell_value v)
{
	struct tbl_mutation m;

	memset(&m, 0, sizeof(m));
	m.op = TBL_SET;
	m.family = family;
	m.qualifier = q;
	m.qualifier_len = strlen(q);
	m.ts = ts;
	m.value = v;
	return m;
}

static struct tbl_mutation del(enum tbl_op op, const char *family, const char *q, uint64_t ts,
			       uint64_t ts_end)
{
	struct tbl_mutation m;

	memset(&m, 0, sizeof(m));
	m.op = op;
	m.family = family;
	m.qualifier = q;
	m.qualifier_len = q ? strlen(q) : 0;
	m.ts = ts;
	m.ts_end = ts_end;
	return m;
}

static int put(const char *row, const char *family, const char *q, uint64_t ts,
	       struct cell_value v)
{
	return tbl_put(db, "t", row, strlen(row), family, q, strlen(q), ts, &v, 0);
}

static int put_text(const char *row, const char *family, const char *q, enum cell_type type,
		    const char *text, size_t len)
{
	return tbl_put_text(db, "t", row, strlen(row), family, q, strlen(q), 1000, type, text,
			    len, 0);
}

static int mutate(const char *row, const struct tbl_mutation *m, size_t n, uint64_t *ts_out)
{
	return tbl_mutate_row(db, "t", row, strlen(row), m, n, 0, ts_out);
}

/* ------------------------------------------------------------ reading the kv trees */

/* Bytes for a dump: printable ASCII as is, the rest as \xNN. */
static void put_shown(struct buf *out, struct slice s)
{
	char hex[8];

	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.data[i];

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			buf_append(out, &s.data[i], 1);
		} else {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			buf_append(out, hex, 4);
		}
	}
}

/*
 * Append every stored version in [lo, hi) of tree to out, as
 * "family:qualifier@ts=type:text" separated by spaces, in kv order; with
 * parts 1 only "qualifier@ts=type:text", with parts 0 only "@ts=type:text".
 * Values are rendered without the trailing newline.  Anything that does not decode shows as "BAD".
 */
static void dump_range(struct tsch_table *t, struct kv_tree *tree, struct slice lo,
		       struct slice hi, int parts, struct buf *out)
{
	struct kv_read_options ro;
	struct buf scratch = BUF_INIT, text = BUF_INIT;
	struct kv_iter *it;

	memset(&ro, 0, sizeof(ro));
	ro.tree = tree;
	ro.lower = lo.data;
	ro.lower_len = lo.len;
	ro.upper = hi.data;
	ro.upper_len = hi.len;
	it = kv_iter_new(tbl_kv(db), &ro);
	for (kv_iter_seek(it, lo.data, lo.len); kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *k = kv_iter_key(it, &klen), *v = kv_iter_value(it, &vlen);
		struct cell_value cv;
		struct tsch_family *f;
		struct tkey tk;
		char num[32];

		if (out->len)
			buf_append(out, " ", 1);
		if (tkey_decode(slice_make(k, klen), &tk, &scratch) ||
		    cell_decode(slice_make(v, vlen), &cv)) {
			buf_append(out, "BAD", 3);
			continue;
		}
		f = tsch_family_by_id(t, tk.family);
		if (parts == 2) {
			buf_append(out, f ? f->name : "?", strlen(f ? f->name : "?"));
			buf_append(out, ":", 1);
		}
		if (parts >= 1)
			put_shown(out, tk.qualifier);
		snprintf(num, sizeof(num), "@%llu=", (unsigned long long)tk.ts);
		buf_append(out, num, strlen(num));
		buf_append(out, cell_type_name(cv.type), strlen(cell_type_name(cv.type)));
		buf_append(out, ":", 1);
		buf_clear(&text);
		cell_render(&text, &cv);
		if (cv.type != CELL_BYTES && text.len)
			text.len--;
		put_shown(out, buf_slice(&text));
	}
	if (kv_iter_status(it))
		buf_append(out, " ITER-ERROR", 11);
	kv_iter_free(it);
	buf_free(&scratch);
	buf_free(&text);
}

/*
 * What table holds for row: every stored version in every locality group
 * (group order, then kv order) when family is NULL; else the versions of
 * that family (without the family part), or of one column (qualifier q)
 * when q is not NULL (without family and qualifier).  A malloc'd string; "" when there is nothing.
 */
static char *dump_in(const char *table, struct slice row, const char *family, const char *q,
		     size_t qlen)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT, out = BUF_INIT;
	struct tsch_table *t;

	if (tsch_lock_table(db, table, &t))
		return xstrdup("NO-TABLE");
	if (!family) {
		tkey_row_prefix(&lo, t->id, row);
		tkey_row_end(&hi, t->id, row);
		for (size_t g = 0; g < t->ngroups; g++)
			dump_range(t, tsch_group_tree(t->groups[g]), buf_slice(&lo), buf_slice(&hi),
				   2, &out);
	} else {
		struct tsch_family *f = tsch_find_family(t, family);

		if (!f) {
			tsch_unlock(db);
			return xstrdup("NO-FAMILY");
		}
		if (q)
			tkey_column_prefix(&lo, t->id, row, f->id, slice_make(q, qlen));
		else
			tkey_family_prefix(&lo, t->id, row, f->id);
		tkey_successor(&hi, buf_slice(&lo));
		dump_range(t, tsch_group_tree(f->group), buf_slice(&lo), buf_slice(&hi), q ? 0 : 1,
			   &out);
	}
	tsch_unlock(db);
	buf_free(&lo);
	buf_free(&hi);
	buf_append(&out, "", 1);
	return out.data;
}

static char *dump_row(const char *row)
{
	return dump_in("t", slice_str(row), NULL, NULL, 0);
}

static char *dump_col(const char *row, const char *family, const char *q)
{
	return dump_in("t", slice_str(row), family, q, strlen(q));
}

/* dump_col without the timestamps: "type:text type:text ...", newest first. */
static char *dump_vals(const char *row, const char *family, const char *q)
{
	char *d = dump_col(row, family, q), *in = d, *out = d;

	while (*in) {
		if (*in == '@') {
			in += strspn(in + 1, "0123456789") + 1;
			if (*in == '=')
				in++;
			continue;
		}
		*out++ = *in++;
	}
	*out = 0;
	return d;
}

/* is_str on a dump, freeing it. */
#define is_dump(expr, want, ...)			\
	do {						\
		char *got_ = (expr);			\
		is_str(got_, want, __VA_ARGS__);	\
		free(got_);				\
	} while (0)

/* The kv sequence number: it moves exactly when something is written. */
static uint64_t last_seq(struct tbl_db *d)
{
	char *s = kv_property(tbl_kv(d), "stats");
	const char *p = s ? strstr(s, "last sequence ") : NULL;
	uint64_t n = p ? strtoull(p + 14, NULL, 10) : 0;

	free(s);
	return n;
}

static int msg_has(const char *a, const char *b)
{
	const char *m = err_last();   /* whatever the error, the last sentence */

	return strstr(m, a) != NULL && (!b || strstr(m, b) != NULL);
}

/* The newest visible version of a column of table t, through tmut_read_newest. */
static int newest(const char *row, size_t rlen, const char *family, const char *q,
		  const struct kv_snapshot *snap, uint64_t *ts, struct cell_value *v, struct buf *b)
{
	struct tsch_table *t;
	struct tsch_family *f;
	int r = tsch_lock_table(db, "t", &t);

	if (r)
		return r;
	f = tsch_find_family(t, family);
	r = f ? tmut_read_newest(db, t, f, slice_make(row, rlen), slice_str(q), snap, ts, v, b)
	      : -ENOENT;
	tsch_unlock(db);
	return r;
}

/* ------------------------------------------------------------ sets */

static void test_set_every_type(void)
{
	struct cell_value v;
	uint64_t seq;

	is_int(put("types", "s", "a", 10, vstr("h\xc3\xa9llo")), 0, "set a string cell");
	is_int(put("types", "b", "a", 10, vdata(CELL_BYTES, "r\0\xff\n", 4)), 0,
	       "set a bytes cell with 0x00, 0xFF and a newline");
	v = val(CELL_BOOLEAN);
	v.v.boolean = 1;
	is_int(put("types", "bo", "a", 10, v), 0, "set a boolean cell");
	v = val(CELL_BYTE);
	v.v.byte = 255;
	is_int(put("types", "by", "a", 10, v), 0, "set a byte cell");
	is_int(put("types", "n32", "a", 10, vi32(INT32_MIN)), 0, "set an i32 cell");
	is_int(put("types", "n64", "a", 10, vi64(INT64_MAX)), 0, "set an i64 cell");
	v = val(CELL_F32);
	v.v.f32 = 0.1f;
	is_int(put("types", "f32", "a", 10, v), 0, "set an f32 cell");
	v = val(CELL_F64);
	v.v.f64 = -2.5e-300;
	is_int(put("types", "f64", "a", 10, v), 0, "set an f64 cell");
	is_int(put("types", "s", "i", 10, vi64(-7)), 0,
	       "a set may store another type than the family's default");
	is_dump(dump_row("types"),
		"s:a@10=string:h\\xc3\\xa9llo s:i@10=i64:-7 b:a@10=bytes:r\\x00\\xff\\x0a "
		"bo:a@10=boolean:true by:a@10=byte:255 n32:a@10=i32:-2147483648 "
		"n64:a@10=i64:9223372036854775807 f32:a@10=f32:0.1 f64:a@10=f64:-2.5e-300",
		"each set stored one version under its own family, qualifier and timestamp, "
		"with its type");

	seq = last_seq(db);
	is_int(put("types", "s", "bad", 10, vstr("\xff\xfe")), -EINVAL,
	       "a string value that is not UTF-8 is refused (-EINVAL)");
	ok(msg_has("s:bad", "UTF-8"), "the message names the column and says why: %s",
	   kv_strerror(-EINVAL));
	v = val(CELL_BOOLEAN);
	v.v.boolean = 2;
	is_int(put("types", "bo", "bad", 10, v), -EINVAL, "a boolean other than 0 or 1 is refused");
	is_int(put("types", "s", "bad", 10, val(CELL_INVALID)), -EINVAL,
	       "a value of type CELL_INVALID is refused");
	is_int(put("types", "s", "bad", 10, val((enum cell_type)99)), -EINVAL,
	       "a value of an unknown type is refused");
	is_int(last_seq(db), seq, "refused sets wrote nothing");
}

struct text_case {
	const char *family;
	enum cell_type type;        /* CELL_INVALID: the family's */
	const char *text;
	size_t len;
	const char *stored;         /* the dump of the column, or NULL: refused */
};

#define T(s) s, sizeof(s) - 1

static const struct text_case text_cases[] = {
	{ "s", CELL_INVALID, T("h\xc3\xa9llo\n"), "@1000=string:h\\xc3\\xa9llo" },
	{ "s", CELL_INVALID, T(" two\n\n"), "@1000=string: two\\x0a" },
	{ "s", CELL_INVALID, T(""), "@1000=string:" },
	{ "s", CELL_INVALID, T("\xc3"), NULL },
	{ "s", CELL_INVALID, T("\xed\xa0\x80"), NULL },
	{ "b", CELL_INVALID, T("raw\n\0\xff"), "@1000=bytes:raw\\x0a\\x00\\xff" },
	{ "bo", CELL_INVALID, T("true\n"), "@1000=boolean:true" },
	{ "bo", CELL_INVALID, T(" 0 "), "@1000=boolean:false" },
	{ "bo", CELL_INVALID, T("TRUE"), NULL },
	{ "bo", CELL_INVALID, T("yes"), NULL },
	{ "by", CELL_INVALID, T("255\n"), "@1000=byte:255" },
	{ "by", CELL_INVALID, T("256"), NULL },
	{ "by", CELL_INVALID, T("-1"), NULL },
	{ "n32", CELL_INVALID, T("-2147483648"), "@1000=i32:-2147483648" },
	{ "n32", CELL_INVALID, T("2147483648"), NULL },
	{ "n64", CELL_INVALID, T("+0042\n"), "@1000=i64:42" },
	{ "n64", CELL_INVALID, T("0x10"), NULL },
	{ "n64", CELL_INVALID, T("abc"), NULL },
	{ "n64", CELL_INVALID, T(""), NULL },
	{ "n64", CELL_INVALID, T("9223372036854775808"), NULL },
	{ "f32", CELL_INVALID, T("0.1\n"), "@1000=f32:0.1" },
	{ "f32", CELL_INVALID, T("1e39"), NULL },
	{ "f64", CELL_INVALID, T("1e-3"), "@1000=f64:0.001" },
	{ "f64", CELL_INVALID, T("1.5x"), NULL },
	{ "s", CELL_I64, T("7\n"), "@1000=i64:7" },
	{ "n64", CELL_STRING, T("seven\n"), "@1000=string:seven" },
	{ "n64", CELL_BOOLEAN, T("2"), NULL },
	{ "s", (enum cell_type)42, T("1"), NULL },
};

static void test_put_text(void)
{
	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		const struct text_case *c = &text_cases[i];
		char row[32], tname[16];
		uint64_t seq = last_seq(db);
		int r;

		snprintf(row, sizeof(row), "text%02zu", i);
		snprintf(tname, sizeof(tname), "%s", c->type == CELL_INVALID ? "family's type" :
			 cell_type_name(c->type) ? cell_type_name(c->type) : "bad type");
		r = put_text(row, c->family, "q", c->type, c->text, c->len);
		if (c->stored) {
			is_int(r, 0, "put_text %s as %s (case %zu) is accepted", c->family, tname,
			       i);
			is_dump(dump_col(row, c->family, "q"), c->stored,
				"put_text case %zu stored the parsed value", i);
		} else {
			is_int(r, -EINVAL, "put_text %s as %s (case %zu) does not parse: -EINVAL",
			       c->family, tname, i);
			ok(msg_has(c->family, ":q"), "its message names family and qualifier: %s",
			   kv_strerror(r));
			is_int(last_seq(db), seq, "and nothing is written (case %zu)", i);
		}
	}
	is_int(put_text("text", "nosuch", "q", CELL_INVALID, "1", 1), -ENOENT,
	       "put_text to an undeclared family: -ENOENT");
}

static void test_server_timestamps(void)
{
	struct tbl_mutation m[3] = {
		set("s", "a", TBL_TS_NOW, vstr("x")),
		set("n64", "b", TBL_TS_NOW, vi64(1)),
		set("s", "c", 77, vstr("explicit")),
	};
	uint64_t ts = 0, prev, before = wall_micros(), after;
	char want[256];
	int mono = 1;

	is_int(mutate("now", m, 3, &ts), 0, "a mutation with server and explicit timestamps");
	after = wall_micros();
	ok(ts + 2000000 >= before && ts <= after + 2000000,
	   "ts_out is the wall clock in microseconds (%llu, wall %llu)",
	   (unsigned long long)ts, (unsigned long long)before);
	snprintf(want, sizeof(want), "s:a@%llu=string:x s:c@77=string:explicit n64:b@%llu=i64:1",
		 (unsigned long long)ts, (unsigned long long)ts);
	is_dump(dump_row("now"), want,
		"every TBL_TS_NOW set of one call got the same timestamp, ts_out; explicit ones "
		"kept theirs");
	prev = ts;
	for (int i = 0; i < 200; i++) {
		m[0] = set("s", "a", TBL_TS_NOW, vstr("y"));
		if (mutate("now", m, 1, &ts) || ts <= prev)
			mono = 0;
		prev = ts;
	}
	ok(mono, "server timestamps strictly increase from call to call (200 calls)");
	ts = 12345;
	m[0] = set("s", "e", 5, vstr("z"));
	is_int(mutate("now", m, 1, &ts), 0, "a mutation with explicit timestamps only");
	is_int(ts, 0, "gives ts_out 0 (no server timestamp was used)");
	is_int(mutate("now", m, 1, NULL), 0, "ts_out may be NULL");
	m[0] = set("s", "f", UINT64_MAX - 1, vstr("late"));
	is_int(mutate("now", m, 1, NULL), 0, "the largest explicit timestamp, UINT64_MAX - 1");
	is_dump(dump_col("now", "s", "f"), "@18446744073709551614=string:late",
		"is stored as given");
}

/* ------------------------------------------------------------ limits and validation */

static void test_limits(void)
{
	char *big = xmalloc(TBL_MAX_QUALIFIER + 2);
	struct tbl_mutation m;
	uint64_t seq;

	memset(big, 'r', TBL_MAX_QUALIFIER + 2);
	m = set("s", "q", 5, vstr("v"));
	is_int(tbl_mutate_row(db, "t", big, TBL_MAX_ROW_KEY, &m, 1, 0, NULL), 0,
	       "a row key of 4096 bytes is accepted");
	is_dump(dump_in("t", slice_make(big, TBL_MAX_ROW_KEY), "s", "q", 1), "@5=string:v",
		"and stored under that row");
	seq = last_seq(db);
	is_int(tbl_mutate_row(db, "t", big, TBL_MAX_ROW_KEY + 1, &m, 1, 0, NULL), -ENAMETOOLONG,
	       "a row key of 4097 bytes: -ENAMETOOLONG");
	ok(msg_has("table t", "4097"), "the message names the table and the length: %s",
	   kv_strerror(-ENAMETOOLONG));
	is_int(last_seq(db), seq, "and nothing is written");
	memset(big, 0, TBL_MAX_ROW_KEY + 1);
	is_int(tbl_mutate_row(db, "t", big, TBL_MAX_ROW_KEY, &m, 1, 0, NULL), 0,
	       "a row key of 4096 zero bytes (twice as long escaped) is accepted");
	is_dump(dump_in("t", slice_make(big, TBL_MAX_ROW_KEY), "s", "q", 1), "@5=string:v",
		"and stored under that row");
	is_int(tbl_increment(db, "t", big, TBL_MAX_ROW_KEY + 1, "n64", "q", 1, 1, NULL, 0),
	       -ENAMETOOLONG, "increment checks the row key limit too");
	seq = last_seq(db);

	memset(big, 'q', TBL_MAX_QUALIFIER + 1);
	m.qualifier = big;
	m.qualifier_len = TBL_MAX_QUALIFIER;
	is_int(mutate("limits", &m, 1, NULL), 0, "a qualifier of 16384 bytes is accepted");
	is_dump(dump_in("t", slice_str("limits"), "s", big, TBL_MAX_QUALIFIER), "@5=string:v",
		"and stored under that qualifier");
	seq = last_seq(db);
	m.qualifier_len = TBL_MAX_QUALIFIER + 1;
	is_int(mutate("limits", &m, 1, NULL), -ENAMETOOLONG,
	       "a qualifier of 16385 bytes: -ENAMETOOLONG");
	ok(msg_has("row \"limits\", family s", "16385"),
	   "the message names row, family and the length: %s", kv_strerror(-ENAMETOOLONG));
	m = del(TBL_DELETE_CELL, "s", NULL, 0, 0);
	m.qualifier = big;
	m.qualifier_len = TBL_MAX_QUALIFIER + 1;
	is_int(mutate("limits", &m, 1, NULL), -ENAMETOOLONG,
	       "deletes check the qualifier limit too");
	is_int(tbl_append(db, "t", "limits", 6, "s", big, TBL_MAX_QUALIFIER + 1, "x", 1, 0),
	       -ENAMETOOLONG, "so does append");
	is_int(last_seq(db), seq, "nothing was written by the refused mutations");

	memset(big, 'v', MAXV + 1);
	is_int(put("limits", "s", "max", 5, vdata(CELL_STRING, big, MAXV)), 0,
	       "a string value of exactly max_value_size bytes is accepted");
	is_int(put("limits", "b", "max", 5, vdata(CELL_BYTES, big, MAXV)), 0,
	       "a bytes value of exactly max_value_size bytes is accepted");
	seq = last_seq(db);
	is_int(put("limits", "s", "max", 6, vdata(CELL_STRING, big, MAXV + 1)), -EFBIG,
	       "a string value of max_value_size + 1 bytes: -EFBIG");
	ok(msg_has("limits", "s:max"), "the message names row and column: %s",
	   kv_strerror(-EFBIG));
	is_int(put("limits", "b", "max", 6, vdata(CELL_BYTES, big, MAXV + 1)), -EFBIG,
	       "a bytes value of max_value_size + 1 bytes: -EFBIG");
	is_int(put_text("limits", "b", "max", CELL_INVALID, big, MAXV + 1), -EFBIG,
	       "put_text of max_value_size + 1 bytes: -EFBIG");
	is_int(last_seq(db), seq, "nothing was written by the refused sets");
	free(big);
}

static void test_validation(void)
{
	struct tbl_mutation good[3] = {
		set("s", "a", 5, vstr("one")),
		set("lg", "a", 5, vstr("two")),
		del(TBL_DELETE_CELL, "n64", "a", 0, 0),
	};
	struct tbl_mutation batch[4];
	struct {
		struct tbl_mutation m;
		int err;
		const char *what;
	} bad[] = {
		{ set("nosuch", "a", 5, vstr("x")), -ENOENT, "a set to an undeclared family" },
		{ set("dropped", "a", 5, vstr("x")), -ENOENT, "a set to a dropped family" },
		{ del(TBL_DELETE_FAMILY, "nosuch", NULL, 0, 0), -ENOENT,
		  "a family delete of an undeclared family" },
		{ del(TBL_DELETE_CELL, "dropped", "a", 0, 0), -ENOENT,
		  "a cell delete in a dropped family" },
		{ set(NULL, "a", 5, vstr("x")), -EINVAL, "a set naming no family" },
		{ set("s", "a", 5, vstr("\xc0\xaf")), -EINVAL, "an overlong UTF-8 string" },
		{ set("b", "a", 5, vdata(CELL_BYTES, "x", MAXV + 1)), -EFBIG,
		  "a value over the limit" },
		{ del(TBL_DELETE_VERSION, "s", "a", TBL_TS_NOW, 0), -EINVAL,
		  "deleting version TBL_TS_NOW" },
		{ del(TBL_DELETE_VERSIONS, "s", "a", 7, 7), -EINVAL,
		  "deleting versions in an empty time range [7, 7)" },
		{ del(TBL_DELETE_VERSIONS, "s", "a", 8, 7), -EINVAL,
		  "deleting versions in a reversed time range [8, 7)" },
		{ del((enum tbl_op)0, "s", "a", 0, 0), -EINVAL, "mutation kind 0" },
		{ del((enum tbl_op)99, "s", "a", 0, 0), -EINVAL, "an unknown mutation kind" },
	};
	uint64_t seq, ts = 99;

	seq = last_seq(db);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(batch, good, sizeof(good));
		batch[3] = bad[i].m;
		is_int(mutate("valid", batch, 4, &ts), bad[i].err,
		       "a batch of three good mutations and %s fails whole", bad[i].what);
		if (bad[i].err == -ENOENT)
			ok(msg_has("valid", bad[i].m.family),
			   "its message names row and family: %s", kv_strerror(-ENOENT));
	}
	memcpy(batch + 1, good, sizeof(good));
	batch[0] = bad[0].m;
	is_int(mutate("valid", batch, 4, NULL), -ENOENT,
	       "a batch whose FIRST mutation is bad fails whole");
	is_int(last_seq(db), seq, "none of the failed batches wrote anything");
	is_int(ts, 99, "ts_out is left alone on failure");
	is_dump(dump_row("valid"), "", "the row is still empty");

	is_int(tbl_mutate_row(db, "nosuch", "valid", 5, good, 3, 0, NULL), -ENOENT,
	       "mutating a table that does not exist: -ENOENT");
	ok(strstr(kv_strerror(-ENOENT), "nosuch") != NULL, "the message names the table: %s",
	   kv_strerror(-ENOENT));
	is_int(tbl_mutate_row(db, "t", "valid", 5, good, 3, 0x80, NULL), -EINVAL,
	       "unknown flags: -EINVAL");
	is_int(mutate("valid", good, 0, &ts), 0, "an empty mutation list is accepted");
	is_int(last_seq(db), seq, "and writes nothing");
	is_int(tbl_mutate_row(db, "t", "valid", 5, good, 3, TBL_SYNC, NULL), 0,
	       "the good mutations alone are applied (with TBL_SYNC)");
	is_dump(dump_row("valid"), "s:a@5=string:one lg:a@5=string:two",
		"both sets are stored, each in its family's locality group");
	is_int(last_seq(db), seq + 3, "as one batch of three kv mutations");
}

/* ------------------------------------------------------------ deletes */

static void test_delete_version(void)
{
	struct tbl_mutation m[2];

	for (uint64_t ts = 10; ts <= 30; ts += 10)
		put("dv", "s", "q", ts, vi64((int64_t)ts));
	put("dv", "s", "qa", 20, vstr("neighbour"));
	put("dv", "n64", "q", 20, vi64(-20));
	m[0] = del(TBL_DELETE_VERSION, "s", "q", 20, 0);
	is_int(mutate("dv", m, 1, NULL), 0, "delete version 20 of s:q");
	is_dump(dump_row("dv"), "s:q@30=i64:30 s:q@10=i64:10 s:qa@20=string:neighbour "
		"n64:q@20=i64:-20", "only that version is gone, not its neighbours");
	m[0] = del(TBL_DELETE_VERSION, "s", "q", 25, 0);
	is_int(mutate("dv", m, 1, NULL), 0, "deleting a version that does not exist is fine");
	is_dump(dump_col("dv", "s", "q"), "@30=i64:30 @10=i64:10", "and changes nothing");
	m[0] = set("s", "q", 20, vstr("again"));
	m[1] = del(TBL_DELETE_VERSION, "s", "q", 20, 0);
	is_int(mutate("dv", m, 2, NULL), 0, "set then delete the same version in one call");
	is_dump(dump_col("dv", "s", "q"), "@30=i64:30 @10=i64:10",
		"mutations apply in order: the delete wins");
	m[0] = del(TBL_DELETE_VERSION, "s", "q", 20, 0);
	m[1] = set("s", "q", 20, vstr("again"));
	is_int(mutate("dv", m, 2, NULL), 0, "delete then set the same version in one call");
	is_dump(dump_col("dv", "s", "q"), "@30=i64:30 @20=string:again @10=i64:10",
		"mutations apply in order: the set wins");
}

static void test_delete_versions(void)
{
	static const uint64_t stamps[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100,
					   UINT64_MAX - 2, UINT64_MAX - 1 };
	struct tbl_mutation m;

	for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++)
		put("dvs", "by", "q", stamps[i], val(CELL_BYTE));
	/* neighbours in key order: other qualifiers that extend "q", another family */
	put("dvs", "by", "", 5, val(CELL_BYTE));
	put("dvs", "by", "q\x01", 5, val(CELL_BYTE));
	put("dvs", "by", "qa", 5, val(CELL_BYTE));
	put("dvs", "bo", "q", 5, val(CELL_BOOLEAN));
	put("dvs\x01", "by", "q", 5, val(CELL_BYTE));
	is_int(tbl_put(db, "t", "dvs\0", 4, "by", "q", 1, 5, &(struct cell_value){ .type =
		       CELL_BYTE }, 0), 0, "a neighbour row \"dvs\\0\"");

	m = del(TBL_DELETE_VERSIONS, "by", "q", 3, 7);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [3, 7)");
	is_dump(dump_col("dvs", "by", "q"),
		"@18446744073709551614=byte:0 @18446744073709551613=byte:0 @100=byte:0 "
		"@9=byte:0 @8=byte:0 @7=byte:0 @2=byte:0 @1=byte:0 @0=byte:0",
		"3 (ts) and 6 (ts_end - 1) are deleted, 7 (ts_end) and 2 (ts - 1) kept");
	m = del(TBL_DELETE_VERSIONS, "by", "q", 0, 2);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [0, 2)");
	is_dump(dump_col("dvs", "by", "q"),
		"@18446744073709551614=byte:0 @18446744073709551613=byte:0 @100=byte:0 "
		"@9=byte:0 @8=byte:0 @7=byte:0 @2=byte:0",
		"a range from 0 deletes version 0 (the column's last key) and 1, keeps 2");
	m = del(TBL_DELETE_VERSIONS, "by", "q", UINT64_MAX - 1, UINT64_MAX);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [UINT64_MAX - 1, UINT64_MAX)");
	is_dump(dump_col("dvs", "by", "q"),
		"@18446744073709551613=byte:0 @100=byte:0 @9=byte:0 @8=byte:0 @7=byte:0 "
		"@2=byte:0", "the newest possible version (the column's first key) is deleted");
	m = del(TBL_DELETE_VERSIONS, "by", "q", 8, 101);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [8, 101)");
	is_dump(dump_col("dvs", "by", "q"), "@18446744073709551613=byte:0 @7=byte:0 @2=byte:0",
		"8, 9 and 100 are deleted, 7 and UINT64_MAX - 2 kept");
	put("dvs", "by", "q", 50, val(CELL_BYTE));
	m = del(TBL_DELETE_VERSIONS, "by", "q", 8, 0);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [8, no end): ts_end 0");
	is_dump(dump_col("dvs", "by", "q"), "@7=byte:0 @2=byte:0",
		"every version from 8 up is deleted, the newest possible included; 7 and 2 kept");
	m = del(TBL_DELETE_VERSIONS, "by", "q", 0, UINT64_MAX);
	is_int(mutate("dvs", &m, 1, NULL), 0, "delete versions [0, UINT64_MAX)");
	is_dump(dump_row("dvs"),
		"bo:q@5=boolean:false by:@5=byte:0 by:q\\x01@5=byte:0 by:qa@5=byte:0",
		"the whole column is gone; other columns and families of the row are untouched");
	is_dump(dump_in("t", slice_make("dvs\0", 4), NULL, NULL, 0), "by:q@5=byte:0",
		"so is the row \"dvs\\0\"");
	is_dump(dump_row("dvs\x01"), "by:q@5=byte:0", "and the row \"dvs\\x01\"");
}

static void test_delete_cell_family(void)
{
	struct tbl_mutation m;

	put("dc", "s", "q", 1, vstr("a"));
	put("dc", "s", "q", 2, vstr("b"));
	put("dc", "s", "q", UINT64_MAX - 1, vstr("c"));
	put("dc", "s", "", 1, vstr("empty"));
	put("dc", "s", "q\x01", 1, vstr("longer"));
	put("dc", "n64", "q", 1, vi64(1));
	put("dc", "n64", "r", 1, vi64(2));
	put("dc", "lgn", "q", 1, vi64(3));
	put("dc", "lgn", "r", 1, vi64(4));
	put("dc", "lg", "q", 1, vstr("lg"));
	put("dc2", "n64", "q", 1, vi64(5));
	is_int(tbl_put(db, "t", "dc\0", 3, "n64", "q", 1, 1, &(struct cell_value){ .type =
		       CELL_I64 }, 0), 0, "a neighbour row \"dc\\0\"");

	m = del(TBL_DELETE_CELL, "s", "q", 0, 0);
	is_int(mutate("dc", &m, 1, NULL), 0, "delete cell s:q");
	is_dump(dump_row("dc"),
		"s:@1=string:empty s:q\\x01@1=string:longer n64:q@1=i64:1 n64:r@1=i64:2 "
		"lg:q@1=string:lg lgn:q@1=i64:3 lgn:r@1=i64:4",
		"every version of s:q is gone; \"\" and \"q\\x01\" stay");
	m = del(TBL_DELETE_FAMILY, "n64", NULL, 0, 0);
	is_int(mutate("dc", &m, 1, NULL), 0, "delete family n64 in the row");
	is_dump(dump_row("dc"),
		"s:@1=string:empty s:q\\x01@1=string:longer lg:q@1=string:lg lgn:q@1=i64:3 "
		"lgn:r@1=i64:4", "all of n64 is gone from the row, the other families stay");
	m = del(TBL_DELETE_FAMILY, "lgn", NULL, 0, 0);
	is_int(mutate("dc", &m, 1, NULL), 0, "delete family lgn (locality group lg2) in the row");
	is_dump(dump_row("dc"), "s:@1=string:empty s:q\\x01@1=string:longer lg:q@1=string:lg",
		"it is gone from its group's tree, and lg in the same group stays");
	is_dump(dump_row("dc2"), "n64:q@1=i64:5", "the same family in another row is untouched");
	is_dump(dump_in("t", slice_make("dc\0", 3), NULL, NULL, 0), "n64:q@1=i64:0",
		"and so is the row \"dc\\0\"");
}

/* The summed range tombstones of the files of one tree ("" = the default tree). */
static long range_tombstones(struct tbl_db *d, const char *tree)
{
	char *s = kv_property(tbl_kv(d), "sstables"), *line, *save = NULL;
	long n = 0;

	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = strstr(line, " entries, ");
		int mine = *tree ? strncmp(line, "tree ", 5) == 0 &&
				   strncmp(line + 5, tree, strlen(tree)) == 0 &&
				   line[5 + strlen(tree)] == ' '
				 : strncmp(line, "tree ", 5) != 0;

		if (mine && p)
			n += strtol(p + 10, NULL, 10);
	}
	free(s);
	return n;
}

static void test_delete_row(void)
{
	struct tbl_mutation m[3];
	uint64_t seq;

	put("dr", "s", "a", 1, vstr("a"));
	put("dr", "n64", "b", 2, vi64(2));
	put("dr", "lg", "c", 3, vstr("c"));
	put("dr", "lgn", "d", 4, vi64(4));
	put("d", "lg", "c", 3, vstr("shorter"));
	put("drr", "lg", "c", 3, vstr("longer"));
	put("dr\x01", "s", "a", 1, vstr("x01"));
	is_int(tbl_put(db, "t", "dr\0", 3, "lgn", "d", 1, 4, &(struct cell_value){ .type =
		       CELL_I64 }, 0), 0, "a neighbour row \"dr\\0\"");
	is_int(tbl_put(db, "u", "dr", 2, "s", "a", 1, 1, &(struct cell_value){ .type =
		       CELL_I64 }, 0), 0, "the same row in another table");
	seq = last_seq(db);
	m[0] = del(TBL_DELETE_ROW, NULL, NULL, 0, 0);
	is_int(mutate("dr", m, 1, NULL), 0, "delete row dr (cells in two locality groups)");
	is_dump(dump_row("dr"), "", "every cell of the row is gone, in both groups");
	is_int(last_seq(db), seq + 2, "one batch of two kv mutations: one range delete per group");
	is_dump(dump_row("d"), "lg:c@3=string:shorter", "row \"d\" stays");
	is_dump(dump_row("drr"), "lg:c@3=string:longer", "row \"drr\" stays");
	is_dump(dump_row("dr\x01"), "s:a@1=string:x01", "row \"dr\\x01\" stays");
	is_dump(dump_in("t", slice_make("dr\0", 3), NULL, NULL, 0), "lgn:d@4=i64:0",
		"row \"dr\\0\" stays");
	is_dump(dump_in("u", slice_str("dr"), NULL, NULL, 0), "s:a@1=i64:0",
		"row dr of table u stays");

	m[0] = set("s", "a", 5, vstr("before"));
	m[1] = del(TBL_DELETE_ROW, "ignored", NULL, 0, 0);
	m[2] = set("lg", "c", 5, vstr("after"));
	is_int(mutate("dr", m, 3, NULL), 0, "set, delete row (family ignored), set in one call");
	is_dump(dump_row("dr"), "lg:c@5=string:after",
		"the row delete removes the set before it and not the one after");
}

/*
 * In a database of its own, so that the kv files hold nothing else: a row
 * delete is ONE range tombstone in each group's tree, not one per cell.
 */
static void test_delete_row_tombstones(void)
{
	struct tbl_db *saved = db;
	struct tbl_mutation m = del(TBL_DELETE_ROW, NULL, NULL, 0, 0);
	struct tsch_table *t;
	const char *g2 = NULL;
	char q[16];
	uint64_t seq;

	db = open_db("tombstones");
	tbl_create_table(db, "w");
	add_family(db, "w", "anchor", CELL_STRING, 0, 0, NULL);
	add_family(db, "w", "contents", CELL_BYTES, 0, 0, "contents");
	if (tsch_lock_table(db, "w", &t) == 0) {
		if (t->ngroups == 2)
			g2 = kv_tree_name(tsch_group_tree(t->groups[1]));
		tsch_unlock(db);
	}
	ok(g2 != NULL, "table w has two locality groups, the second its own tree (%s)",
	   g2 ? g2 : "none");
	if (!g2)
		g2 = "?";
	for (int i = 0; i < 50; i++) {
		snprintf(q, sizeof(q), "q%02d", i);
		tbl_put(db, "w", "com.github/about", 16, "anchor", q, 3, 1, &(struct cell_value){
			.type = CELL_STRING }, 0);
		tbl_put(db, "w", "com.github/about", 16, "contents", q, 3, 1, &(struct cell_value){
			.type = CELL_BYTES }, 0);
	}
	kv_flush(tbl_kv(db));
	is_int(range_tombstones(db, "") + range_tombstones(db, g2), 0,
	       "before: no range tombstones in either tree");
	seq = last_seq(db);
	is_int(tbl_mutate_row(db, "w", "com.github/about", 16, &m, 1, 0, NULL), 0,
	       "delete the row of 100 cells");
	is_int(last_seq(db), seq + 2, "the delete was one batch of two kv mutations");
	kv_flush(tbl_kv(db));
	is_int(range_tombstones(db, ""), 1, "the default tree holds one range tombstone");
	is_int(range_tombstones(db, g2), 1, "the contents group's tree holds one range tombstone");
	is_dump(dump_in("w", slice_str("com.github/about"), NULL, NULL, 0), "",
		"and the row is empty");
	tbl_close(db);
	db = saved;
}

/* ------------------------------------------------------------ read-modify-write */

static void test_read_newest(void)
{
	const struct kv_snapshot *snap;
	struct buf b = BUF_INIT;
	struct cell_value v;
	uint64_t ts = 0, old = wall_micros() - 10000000;

	is_int(newest("rn", 2, "s", "q", NULL, &ts, &v, &b), 0, "an absent column: 0");
	put("rn", "s", "q", 10, vstr("ten"));
	put("rn", "s", "q", 30, vstr("thirty"));
	put("rn", "s", "q", 20, vstr("twenty"));
	put("rn", "s", "q\x01", 40, vstr("next column"));
	is_int(newest("rn", 2, "s", "q", NULL, &ts, &v, &b), 1, "a column with versions: 1");
	is_int(ts, 30, "the newest version's timestamp");
	ok(v.type == CELL_STRING && slice_eq(v.v.data, slice_str("thirty")),
	   "the newest version's value");
	ok(v.v.data.data >= b.data && v.v.data.data + v.v.data.len <= b.data + b.len,
	   "its bytes point into the caller's buffer");
	snap = kv_snapshot_new(tbl_kv(db));
	put("rn", "s", "q", 50, vstr("fifty"));
	is_int(newest("rn", 2, "s", "q", snap, &ts, &v, &b), 1, "read at an older snapshot");
	is_int(ts, 30, "sees the version that was newest then");
	is_int(newest("rn", 2, "s", "q", NULL, &ts, &v, &b), 1, "read now");
	is_int(ts, 50, "sees the new one");
	kv_snapshot_release(tbl_kv(db), snap);

	put("rn", "ttl", "q", old, vi64(1));
	is_int(newest("rn", 2, "ttl", "q", NULL, &ts, &v, &b), 0,
	       "a version older than the family's TTL is not visible");
	put("rn", "ttl", "q", old - 1, vi64(2));
	is_int(newest("rn", 2, "ttl", "q", NULL, &ts, &v, &b), 0,
	       "nor one older still behind it");
	put("rn", "ttl", "q", TBL_TS_NOW, vi64(3));
	is_int(newest("rn", 2, "ttl", "q", NULL, &ts, &v, &b), 1, "a fresh version is visible");
	ok(v.type == CELL_I64 && v.v.i64 == 3, "and is the one returned");
	put("rn", "lgn", "q", 7, vi64(7));
	is_int(newest("rn", 2, "lgn", "q", NULL, &ts, &v, &b), 1,
	       "a column in another locality group is read from its tree");
	ok(ts == 7 && v.v.i64 == 7, "with its value");
	buf_free(&b);
}

static void test_increment(void)
{
	struct buf b = BUF_INIT;
	struct cell_value v;
	uint64_t seq, ts = 0, before;
	int64_t res = 0;

	is_int(tbl_increment(db, "t", "inc", 3, "n64", "c", 1, 5, &res, 0), 0,
	       "increment an absent cell of an i64 family by 5");
	is_int(res, 5, "absent counts as 0: the result is 5");
	before = wall_micros();
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "c", 1, -12, &res, TBL_SYNC), 0,
	       "increment it by -12 (with TBL_SYNC)");
	is_int(res, -7, "the result is -7");
	is_int(newest("inc", 3, "n64", "c", NULL, &ts, &v, &b), 1, "the cell has a newest version");
	ok(v.type == CELL_I64 && v.v.i64 == -7, "holding i64 -7");
	ok(ts + 1000000 > before && ts < wall_micros() + 1000000,
	   "written at the server's time (%llu)", (unsigned long long)ts);
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "c", 1, 0, NULL, 0), 0,
	       "increment by 0 with a NULL result pointer");
	is_dump(dump_vals("inc", "n64", "c"), "i64:-7 i64:-7 i64:5",
		"each increment wrote a new version, newest first");

	is_int(tbl_increment(db, "t", "inc", 3, "n32", "c", 1, -3, &res, 0), 0,
	       "increment an absent cell of an i32 family");
	is_int(res, -3, "the result is -3");
	is_int(newest("inc", 3, "n32", "c", NULL, &ts, &v, &b), 1, "and it is stored");
	ok(v.type == CELL_I32 && v.v.i32 == -3, "as an i32, the family's type");
	is_int(put("inc", "s", "num", 10, vi64(40)), 0, "an i64 cell in a string family");
	is_int(tbl_increment(db, "t", "inc", 3, "s", "num", 3, 2, &res, 0), 0,
	       "can be incremented: the stored cell's type decides");
	is_int(res, 42, "the result is 42");

	put("inc", "n32", "edge", 10, vi32(INT32_MAX - 1));
	is_int(tbl_increment(db, "t", "inc", 3, "n32", "edge", 4, 1, &res, 0), 0,
	       "i32 INT32_MAX - 1 + 1");
	is_int(res, INT32_MAX, "gives INT32_MAX");
	seq = last_seq(db);
	res = 123;
	is_int(tbl_increment(db, "t", "inc", 3, "n32", "edge", 4, 1, &res, 0), -ERANGE,
	       "i32 INT32_MAX + 1 overflows: -ERANGE");
	ok(msg_has("n32:edge", "overflow"), "the message names the column: %s",
	   kv_strerror(-ERANGE));
	is_int(res, 123, "the result is left alone");
	put("inc", "n32", "low", 10, vi32(INT32_MIN));
	is_int(tbl_increment(db, "t", "inc", 3, "n32", "low", 3, -1, &res, 0), -ERANGE,
	       "i32 INT32_MIN - 1 underflows: -ERANGE");
	is_int(tbl_increment(db, "t", "inc", 3, "n32", "low", 3, INT64_C(1) << 40, &res, 0),
	       -ERANGE, "a delta beyond i32's range: -ERANGE");
	put("inc", "n64", "edge", 10, vi64(INT64_MAX));
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "edge", 4, 1, &res, 0), -ERANGE,
	       "i64 INT64_MAX + 1 overflows: -ERANGE");
	put("inc", "n64", "low", 10, vi64(INT64_MIN + 1));
	seq = last_seq(db);
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "low", 3, INT64_MIN, &res, 0), -ERANGE,
	       "i64 INT64_MIN + 1 + INT64_MIN underflows: -ERANGE");
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "low", 3, -1, &res, 0), 0,
	       "i64 INT64_MIN + 1 - 1 does not");
	is_int(res, INT64_MIN, "and gives INT64_MIN");
	is_int(last_seq(db), seq + 1, "only the increment that succeeded wrote");

	seq = last_seq(db);
	put("inc", "s", "str", 10, vstr("12"));
	seq = last_seq(db);
	is_int(tbl_increment(db, "t", "inc", 3, "s", "str", 3, 1, &res, 0), -EINVAL,
	       "incrementing a string cell: -EINVAL");
	ok(msg_has("s:str", "string"), "the message names the column and its type: %s",
	   kv_strerror(-EINVAL));
	is_int(tbl_increment(db, "t", "inc", 3, "s", "absent", 6, 1, &res, 0), -EINVAL,
	       "incrementing an absent cell of a string family: -EINVAL");
	is_int(tbl_increment(db, "t", "inc", 3, "f64", "absent", 6, 1, &res, 0), -EINVAL,
	       "incrementing an absent cell of an f64 family: -EINVAL");
	is_int(tbl_increment(db, "t", "inc", 3, "nosuch", "c", 1, 1, &res, 0), -ENOENT,
	       "incrementing in an undeclared family: -ENOENT");
	is_int(tbl_increment(db, "t", "inc", 3, "dropped", "c", 1, 1, &res, 0), -ENOENT,
	       "incrementing in a dropped family: -ENOENT");
	is_int(tbl_increment(db, "nosuch", "inc", 3, "n64", "c", 1, 1, &res, 0), -ENOENT,
	       "incrementing in a table that does not exist: -ENOENT");
	is_int(last_seq(db), seq, "the refused increments wrote nothing");

	put("inc", "ttl", "c", wall_micros() - 10000000, vi64(1000));
	is_int(tbl_increment(db, "t", "inc", 3, "ttl", "c", 1, 1, &res, 0), 0,
	       "incrementing a cell whose only version is past the TTL");
	is_int(res, 1, "counts it as absent: the result is 1");
	put("inc", "ver2", "c", 10, vi64(10));
	put("inc", "ver2", "c", 20, vi64(20));
	put("inc", "ver2", "c", 30, vi64(30));
	is_int(tbl_increment(db, "t", "inc", 3, "ver2", "c", 1, 1, &res, 0), 0,
	       "incrementing a cell of a max_versions=2 family");
	is_int(res, 31, "starts from the newest version");

	put("inc", "n64", "future", UINT64_MAX / 2, vi64(100));
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "future", 6, 1, &res, 0), 0,
	       "incrementing a cell whose newest version has a future timestamp");
	is_int(newest("inc", 3, "n64", "future", NULL, &ts, &v, &b), 1, "reading it back");
	ok(ts == UINT64_MAX / 2 + 1 && v.v.i64 == 101,
	   "the result is the newest version, right after the future one (%llu)",
	   (unsigned long long)ts);
	put("inc", "n64", "end", UINT64_MAX - 1, vi64(100));
	seq = last_seq(db);
	is_int(tbl_increment(db, "t", "inc", 3, "n64", "end", 3, 1, &res, 0), -ERANGE,
	       "no newer timestamp than UINT64_MAX - 1 for the result: -ERANGE");
	is_int(last_seq(db), seq, "and nothing is written");
	put("inc", "lgn", "c", 5, vi64(5));
	is_int(tbl_increment(db, "t", "inc", 3, "lgn", "c", 1, 5, &res, 0), 0,
	       "increment a cell in another locality group");
	is_int(res, 10, "reads and writes its tree");
	buf_free(&b);
}

static void test_append(void)
{
	char *big = xmalloc(MAXV + 1);
	uint64_t seq;

	is_int(tbl_append(db, "t", "app", 3, "s", "c", 1, "ab", 2, 0), 0,
	       "append to an absent cell of a string family");
	is_int(tbl_append(db, "t", "app", 3, "s", "c", 1, "c\xc3\xa9", 3, 0), 0,
	       "append again");
	is_dump(dump_vals("app", "s", "c"), "string:abc\\xc3\\xa9 string:ab",
		"each append wrote a new version: \"ab\", then \"abc\\xc3\\xa9\"");
	is_int(tbl_append(db, "t", "app", 3, "b", "c", 1, "\0\xff", 2, 0), 0,
	       "append to an absent cell of a bytes family");
	is_int(tbl_append(db, "t", "app", 3, "b", "c", 1, "\n", 1, 0), 0, "append a newline");
	is_int(tbl_append(db, "t", "app", 3, "b", "c", 1, NULL, 0, 0), 0, "append nothing");
	{
		struct buf b = BUF_INIT;
		struct cell_value v;
		uint64_t ts;

		is_int(newest("app", 3, "b", "c", NULL, &ts, &v, &b), 1, "the bytes cell exists");
		ok(v.type == CELL_BYTES, "as bytes");
		is_mem(v.v.data.data, v.v.data.len, "\0\xff\n", 3, "holding 00 FF 0A");
		buf_free(&b);
	}
	seq = last_seq(db);
	is_int(tbl_append(db, "t", "app", 3, "s", "c", 1, "\xff", 1, 0), -EINVAL,
	       "appending bytes that are not UTF-8 to a string: -EINVAL");
	is_int(tbl_append(db, "t", "app", 3, "s", "c", 1, "\xc3", 1, 0), -EINVAL,
	       "appending half a UTF-8 sequence to a string: -EINVAL");
	put("app", "n64", "c", 1, vi64(1));
	seq = last_seq(db);
	is_int(tbl_append(db, "t", "app", 3, "n64", "c", 1, "1", 1, 0), -EINVAL,
	       "appending to an i64 cell: -EINVAL");
	is_int(tbl_append(db, "t", "app", 3, "n64", "absent", 6, "1", 1, 0), -EINVAL,
	       "appending to an absent cell of an i64 family: -EINVAL");
	is_int(tbl_append(db, "t", "app", 3, "nosuch", "c", 1, "1", 1, 0), -ENOENT,
	       "appending in an undeclared family: -ENOENT");
	is_int(last_seq(db), seq, "the refused appends wrote nothing");

	memset(big, 'x', MAXV + 1);
	is_int(tbl_append(db, "t", "app", 3, "b", "big", 3, big, MAXV - 1, 0), 0,
	       "append max_value_size - 1 bytes");
	is_int(tbl_append(db, "t", "app", 3, "b", "big", 3, big, 1, 0), 0,
	       "and 1 more: exactly max_value_size");
	seq = last_seq(db);
	is_int(tbl_append(db, "t", "app", 3, "b", "big", 3, big, 1, 0), -EFBIG,
	       "1 byte more than max_value_size: -EFBIG");
	is_int(tbl_append(db, "t", "app", 3, "b", "big2", 4, big, MAXV + 1, 0), -EFBIG,
	       "appending max_value_size + 1 bytes to nothing: -EFBIG");
	is_int(tbl_append(db, "t", "app", 3, "b", "big", 3, big, SIZE_MAX, 0), -EFBIG,
	       "a length of SIZE_MAX does not wrap around: -EFBIG");
	is_int(last_seq(db), seq, "the refused appends wrote nothing");
	free(big);
}

struct cam_case {
	const char *family;
	struct cell_value stored;   /* type CELL_INVALID: the cell is absent */
	const char *expected;       /* NULL: must be absent */
	size_t expected_len;
	int match;
};

static void test_check_and_mutate(void)
{
	struct cell_value f64 = val(CELL_F64), bo = val(CELL_BOOLEAN), by = val(CELL_BYTE);
	struct tbl_mutation yes = set("s", "result", 1, vstr("yes"));
	struct tbl_mutation no = set("s", "result", 1, vstr("no"));
	struct tbl_mutation bad = set("nosuch", "x", 1, vstr("x"));
	int matched = -1;
	uint64_t seq;

	f64.v.f64 = 0.1;
	bo.v.boolean = 1;
	by.v.byte = 7;
	struct cam_case cases[] = {
		{ "s", val(CELL_INVALID), NULL, 0, 1 },
		{ "s", val(CELL_INVALID), "", 0, 0 },
		{ "s", vstr(""), NULL, 0, 0 },
		{ "s", vstr(""), "", 0, 1 },
		{ "s", vstr("x"), "x", 1, 1 },
		{ "s", vstr("x"), "x\n", 2, 0 },
		{ "s", vstr("x\n"), "x\n", 2, 1 },
		{ "s", vstr("x"), "X", 1, 0 },
		{ "b", vdata(CELL_BYTES, "ab\n", 3), "ab\n", 3, 1 },
		{ "b", vdata(CELL_BYTES, "ab\n", 3), "ab", 2, 0 },
		{ "b", vdata(CELL_BYTES, "a\0b", 3), "a\0b", 3, 1 },
		{ "n64", vi64(-5), "-5", 2, 1 },
		{ "n64", vi64(-5), "-5\n", 3, 0 },
		{ "n64", vi64(5), "05", 2, 0 },
		{ "n32", vi32(5), "5", 1, 1 },
		{ "f64", f64, "0.1", 3, 1 },
		{ "f64", f64, "0.10", 4, 0 },
		{ "bo", bo, "true", 4, 1 },
		{ "bo", bo, "1", 1, 0 },
		{ "by", by, "7", 1, 1 },
		{ "s", vi64(3), "3", 1, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cam_case *c = &cases[i];
		char row[16];

		snprintf(row, sizeof(row), "cam%02zu", i);
		if (c->stored.type != CELL_INVALID)
			put(row, c->family, "q", 10, c->stored);
		matched = -1;
		is_int(tbl_check_and_mutate(db, "t", row, strlen(row), c->family, "q", 1,
					    c->expected, c->expected_len, &yes, 1, &no, 1,
					    &matched, 0), 0,
		       "check-and-mutate case %zu (%s, expected %s%s%s)", i,
		       c->stored.type ? cell_type_name(c->stored.type) : "absent",
		       c->expected ? "\"" : "", c->expected ? c->expected : "absent",
		       c->expected ? "\"" : "");
		is_int(matched, c->match, "case %zu %s", i,
		       c->match ? "matches" : "does not match");
		is_dump(dump_col(row, "s", "result"),
			c->match ? "@1=string:yes" : "@1=string:no",
			"case %zu applied the %s list", i, c->match ? "matching" : "other");
	}

	put("camv", "ver2", "q", 10, vi64(1));
	put("camv", "ver2", "q", 20, vi64(2));
	is_int(tbl_check_and_mutate(db, "t", "camv", 4, "ver2", "q", 1, "2", 1, &yes, 1, NULL, 0,
				    &matched, 0), 0, "check the newest of several versions");
	is_int(matched, 1, "the newest version is compared");
	put("camt", "ttl", "q", wall_micros() - 10000000, vi64(1));
	is_int(tbl_check_and_mutate(db, "t", "camt", 4, "ttl", "q", 1, NULL, 0, &yes, 1, NULL, 0,
				    &matched, 0), 0, "check a cell past its TTL for absence");
	is_int(matched, 1, "a version past the TTL counts as absent");
	seq = last_seq(db);
	is_int(tbl_check_and_mutate(db, "t", "camt", 4, "ttl", "q", 1, "1", 1, &yes, 1, NULL, 0,
				    &matched, 0), 0, "a failed check with no other mutations");
	is_int(matched, 0, "does not match");
	is_int(last_seq(db), seq, "and writes nothing");

	put("camb", "n64", "q", 10, vi64(1));
	seq = last_seq(db);
	matched = -1;
	is_int(tbl_check_and_mutate(db, "t", "camb", 4, "n64", "q", 1, "1", 1, &yes, 1, &bad, 1,
				    &matched, 0), -ENOENT,
	       "a bad mutation in the list NOT chosen is still an error");
	is_int(tbl_check_and_mutate(db, "t", "camb", 4, "n64", "q", 1, "1", 1, &bad, 1, &no, 1,
				    &matched, 0), -ENOENT, "and so in the list chosen");
	is_int(matched, -1, "matched is left alone on error");
	is_int(tbl_check_and_mutate(db, "t", "camb", 4, "nosuch", "q", 1, "1", 1, &yes, 1, &no,
				    1, &matched, 0), -ENOENT,
	       "checking an undeclared family: -ENOENT");
	is_int(tbl_check_and_mutate(db, "t", "camb", 4, "n64", "q", 1, "1", 1, &yes, 1, &no, 1,
				    &matched, 0x40), -EINVAL, "unknown flags: -EINVAL");
	is_int(last_seq(db), seq, "none of them wrote anything");
	{
		struct tbl_mutation swap[2] = {
			del(TBL_DELETE_CELL, "n64", "q", 0, 0),
			set("lgn", "q", TBL_TS_NOW, vi64(1)),
		};

		is_int(tbl_check_and_mutate(db, "t", "camb", 4, "n64", "q", 1, "1", 1, swap, 2,
					    NULL, 0, &matched, TBL_SYNC), 0,
		       "a matching check applies a list of mutations across locality groups");
		is_int(last_seq(db), seq + 2, "as one batch");
		is_dump(dump_col("camb", "n64", "q"), "", "the checked cell is deleted");
		is_dump(dump_vals("camb", "lgn", "q"), "i64:1", "and the other one set");
	}
}

/* ------------------------------------------------------------ threads */

struct worker {
	pthread_t th;
	int cas;          /* 0: tbl_increment; 1: check-and-mutate compare-and-swap */
	long n;
	long retries;
	int errors;
};

/* All workers start together, so that they really overlap even when each is brief. */
static pthread_barrier_t start_line;

static void *work(void *arg)
{
	struct worker *w = arg;
	struct buf b = BUF_INIT;

	pthread_barrier_wait(&start_line);

	for (long i = 0; i < w->n; i++) {
		if (!w->cas) {
			if (tbl_increment(db, "t", "ctr", 3, "n64", "hits", 4, 1, NULL, 0))
				w->errors++;
			continue;
		}
		for (;;) {
			struct cell_value v;
			struct tbl_mutation m;
			char text[32];
			uint64_t ts;
			int matched = 0, r;

			r = newest("ctr", 3, "n64", "hits", NULL, &ts, &v, &b);
			if (r < 0) {
				w->errors++;
				break;
			}
			snprintf(text, sizeof(text), "%lld", r ? (long long)v.v.i64 : 0LL);
			m = set("n64", "hits", TBL_TS_NOW, vi64((r ? v.v.i64 : 0) + 1));
			if (tbl_check_and_mutate(db, "t", "ctr", 3, "n64", "hits", 4,
						 r ? text : NULL, r ? strlen(text) : 0, &m, 1,
						 NULL, 0,
						 &matched, 0)) {
				w->errors++;
				break;
			}
			if (matched)
				break;
			w->retries++;
		}
	}
	buf_free(&b);
	return NULL;
}

static int64_t run_workers(const char *row_note, int nincr, int ncas, long n)
{
	struct worker w[8];
	struct buf b = BUF_INIT;
	struct cell_value v;
	struct tbl_mutation m = del(TBL_DELETE_ROW, NULL, NULL, 0, 0);
	uint64_t ts;
	int errors = 0, i, nw = nincr + ncas;
	long retries = 0;
	int64_t total = -1;

	mutate("ctr", &m, 1, NULL);
	memset(w, 0, sizeof(w));
	pthread_barrier_init(&start_line, NULL, (unsigned)nw);
	for (i = 0; i < nw; i++) {
		w[i].cas = i >= nincr;
		w[i].n = n;
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	for (i = 0; i < nw; i++) {
		pthread_join(w[i].th, NULL);
		errors += w[i].errors;
		retries += w[i].retries;
	}
	pthread_barrier_destroy(&start_line);
	is_int(errors, 0, "%s: no call failed", row_note);
	if (ncas)
		diag("%s: %ld compare-and-swap retries", row_note, retries);
	if (newest("ctr", 3, "n64", "hits", NULL, &ts, &v, &b) == 1)
		total = v.v.i64;
	buf_free(&b);
	return total;
}

static void test_threads(void)
{
	long n = scaled(500, 20);
	uint64_t t0 = now_micros();

	is_int(run_workers("4 incrementing threads", 4, 0, n), 4 * n,
	       "4 threads each incrementing one cell %ld times: the total is exact", n);
	is_int(run_workers("2 compare-and-swap threads", 0, 2, n), 2 * n,
	       "2 threads each adding 1 %ld times by check-and-mutate: the total is exact", n);
	is_int(run_workers("mixed", 2, 2, n), 4 * n,
	       "2 incrementing and 2 compare-and-swap threads on one cell: the total is exact");
	diag("thread tests took %.2f s", (double)(now_micros() - t0) / 1e6);
}

/* ------------------------------------------------------------ through the read API */

/*
 * Row row of table t as tbl_get_row (tscan.c) shows it, every visible version
 * of every column, in the dump's format; "ENOENT" for a row with nothing
 * visible.  A malloc'd string.
 */
static char *read_row(const char *row, uint32_t versions)
{
	struct tbl_read rd;
	struct tbl_row *got = NULL;
	struct buf out = BUF_INIT, text = BUF_INIT;
	int r;

	memset(&rd, 0, sizeof(rd));
	rd.versions = versions;
	r = tbl_get_row(db, "t", row, strlen(row), &rd, &got);
	if (r == -ENOENT)
		return xstrdup("ENOENT");
	if (r < 0)
		return xasprintf("ERROR %d", r);
	for (size_t i = 0; i < got->ncells; i++) {
		const struct tbl_cell *c = &got->cells[i];
		char num[32];

		if (out.len)
			buf_append(&out, " ", 1);
		buf_append(&out, c->family, strlen(c->family));
		buf_append(&out, ":", 1);
		put_shown(&out, slice_make(c->qualifier, c->qualifier_len));
		snprintf(num, sizeof(num), "@%llu=", (unsigned long long)c->ts);
		buf_append(&out, num, strlen(num));
		buf_append(&out, cell_type_name(c->value.type),
			   strlen(cell_type_name(c->value.type)));
		buf_append(&out, ":", 1);
		buf_clear(&text);
		cell_render(&text, &c->value);
		if (c->value.type != CELL_BYTES && text.len)
			text.len--;
		put_shown(&out, buf_slice(&text));
	}
	tbl_row_free(got);
	buf_free(&text);
	buf_append(&out, "", 1);
	return out.data;
}

/*
 * What the mutations leave is what the read API shows (sorted by family
 * name there): deletes of every kind hide exactly their cells, GC rules hide
 * what increments overwrite, and a deleted row is not found at all.
 */
static void test_read_api(void)
{
	struct tbl_mutation m[4] = {
		set("s", "a", 1, vstr("a1")),
		set("s", "a", 2, vstr("a2")),
		set("s", "a", 3, vstr("a3")),
		set("lg", "b", 5, vstr("b5")),
	};
	struct buf b = BUF_INIT;
	struct cell_value v;
	char want[256];
	int64_t res;
	uint64_t ts;

	is_int(mutate("api", m, 4, NULL), 0, "four sets in two locality groups");
	is_dump(read_row("api", 0), "lg:b@5=string:b5 s:a@3=string:a3 s:a@2=string:a2 "
		"s:a@1=string:a1", "tbl_get_row shows every version written");
	m[0] = del(TBL_DELETE_VERSIONS, "s", "a", 2, 4);
	m[1] = set("ver2", "c", 1, vi64(1));
	m[2] = set("ver2", "c", 2, vi64(2));
	m[3] = set("ver2", "c", 3, vi64(3));
	is_int(mutate("api", m, 4, NULL), 0, "delete versions [2, 4) and set three versions in a "
	       "max_versions=2 family");
	is_dump(read_row("api", 0), "lg:b@5=string:b5 s:a@1=string:a1 ver2:c@3=i64:3 "
		"ver2:c@2=i64:2", "tbl_get_row no longer shows 2 and 3, nor the third version");
	is_int(tbl_increment(db, "t", "api", 3, "ver2", "c", 1, 10, &res, 0), 0,
	       "increment the max_versions=2 cell");
	is_int(newest("api", 3, "ver2", "c", NULL, &ts, &v, &b), 1, "its new version's timestamp");
	snprintf(want, sizeof(want), "lg:b@5=string:b5 s:a@1=string:a1 ver2:c@%llu=i64:13",
		 (unsigned long long)ts);
	is_dump(read_row("api", 1), want, "tbl_get_row shows the sum as the newest version");
	m[0] = del(TBL_DELETE_FAMILY, "lg", NULL, 0, 0);
	m[1] = del(TBL_DELETE_CELL, "s", "a", 0, 0);
	is_int(mutate("api", m, 2, NULL), 0, "delete family lg and cell s:a");
	snprintf(want, sizeof(want), "ver2:c@%llu=i64:13 ver2:c@3=i64:3", (unsigned long long)ts);
	is_dump(read_row("api", 0), want, "only the two visible versions of ver2:c are left");
	m[0] = del(TBL_DELETE_ROW, NULL, NULL, 0, 0);
	is_int(mutate("api", m, 1, NULL), 0, "delete the row");
	is_dump(read_row("api", 0), "ENOENT", "tbl_get_row finds no such row");
	buf_free(&b);
}

/* ------------------------------------------------------------ durability */

static void test_reopen(void)
{
	char *before = dump_row("dvs"), *after;

	put("durable", "lg", "q", TBL_TS_NOW, vstr("kept"));
	tbl_close(db);
	db = open_db("db");
	after = dump_row("dvs");
	is_str(after, before, "after a reopen, a row shaped by range deletes reads the same");
	free(before);
	free(after);
	after = dump_col("durable", "lg", "q");
	ok(strstr(after, "=string:kept") != NULL, "a set in a locality group survives the reopen");
	free(after);
	is_int(put("durable", "s", "q", TBL_TS_NOW, vstr("again")), 0,
	       "mutations work after the reopen");
}

/* ------------------------------------------------------------ many rows in one batch */

static struct tbl_row_mutations rowm(const char *row, const struct tbl_mutation *m, size_t n)
{
	struct tbl_row_mutations r;

	r.row = row;
	r.row_len = strlen(row);
	r.m = m;
	r.n = n;
	return r;
}

#define WR_ROWS 64

struct rows_worker {
	pthread_t th;
	int mode;         /* 0: tbl_write_rows forward; 1: backward; 2: tbl_increment */
	long n;
	int errors;
};

static pthread_barrier_t wr_start;

static void *rows_work(void *arg)
{
	struct rows_worker *w = arg;
	struct tbl_row_mutations rm[WR_ROWS];
	struct tbl_mutation m[WR_ROWS];
	char names[WR_ROWS][16];

	for (int i = 0; i < WR_ROWS; i++) {
		int k = w->mode == 1 ? WR_ROWS - 1 - i : i;

		snprintf(names[i], sizeof(names[i]), "wr-%02d", k);
		m[i] = set("s", w->mode ? "back" : "fwd", TBL_TS_NOW, vstr("x"));
		rm[i] = rowm(names[i], &m[i], 1);
	}
	pthread_barrier_wait(&wr_start);
	for (long it = 0; it < w->n; it++) {
		if (w->mode < 2) {
			if (tbl_write_rows(db, "t", rm, WR_ROWS, 0, NULL))
				w->errors++;
			continue;
		}
		for (int i = 0; i < WR_ROWS; i++)
			if (tbl_increment(db, "t", names[i], strlen(names[i]), "n64", "hits", 4, 1,
					  NULL, 0))
				w->errors++;
	}
	return NULL;
}

/*
 * tbl_write_rows: every row's mutations as tbl_mutate_row would apply them,
 * all in one kv batch; any invalid row stops the call with its index and
 * nothing written; the stripes of many rows taken in an order that cannot
 * deadlock against other batches (in any row order) or single-row
 * read-modify-writes.
 */
static void test_write_rows(void)
{
	struct tbl_mutation a[3] = {
		set("s", "a", 5, vstr("row a")),
		set("lg", "g", 6, vstr("row a, group lg2")),
		set("n64", "n", 7, vi64(1)),
	};
	struct tbl_mutation b[2] = {
		set("lgn", "x", 1, vi64(2)),
		del(TBL_DELETE_CELL, "s", "old", 0, 0),
	};
	struct tbl_mutation c1 = set("s", "c", 1, vstr("first")),
		c2[2] = { del(TBL_DELETE_CELL, "s", "c", 0, 0), set("s", "c", 2, vstr("second")) },
		now1 = set("s", "now", TBL_TS_NOW, vstr("1")),
		now2 = set("s", "now", TBL_TS_NOW, vstr("2")),
		badfam = set("nosuch", "q", 1, vstr("x")),
		big;
	struct tbl_row_mutations rm[4];
	struct rows_worker w[4];
	struct buf buf = BUF_INIT;
	struct cell_value v;
	char *longrow = xmalloc(TBL_MAX_ROW_KEY + 2), bigval[MAXV + 1];
	uint64_t seq, ts1 = 0, ts2 = 0;
	size_t bad;
	long n = scaled(100, 10);
	int errors = 0;
	int64_t sum = 0;

	put("wr-b", "s", "old", 1, vstr("to be deleted"));
	seq = last_seq(db);
	rm[0] = rowm("wr-a", a, 3);
	rm[1] = rowm("wr-b", b, 2);
	rm[2] = rowm("wr-c", &c1, 1);
	rm[3] = rowm("wr-c", c2, 2);
	is_int(tbl_write_rows(db, "t", rm, 4, 0, NULL), 0,
	       "tbl_write_rows: three rows (one twice), two locality groups, sets and a delete");
	is_dump(dump_row("wr-a"), "s:a@5=string:row a n64:n@7=i64:1 lg:g@6=string:row a, group lg2",
		"row wr-a has its three sets, in both groups");
	is_dump(dump_row("wr-b"), "lgn:x@1=i64:2", "row wr-b: its set, and its cell delete applied");
	is_dump(dump_row("wr-c"), "s:c@2=string:second",
		"row wr-c given twice: its lists apply in order (the delete removes the first set)");
	is_int(last_seq(db), seq + 8, "one sequence number per mutation: 8");

	rm[0] = rowm("wr-now1", &now1, 1);
	rm[1] = rowm("wr-now2", &now2, 1);
	is_int(tbl_write_rows(db, "t", rm, 2, 0, NULL), 0, "two rows with TBL_TS_NOW sets");
	errors = newest("wr-now1", 7, "s", "now", NULL, &ts1, &v, &buf) != 1;
	errors += newest("wr-now2", 7, "s", "now", NULL, &ts2, &v, &buf) != 1;
	ok(!errors && ts1 > 1000000 && ts2 > ts1,
	   "each row gets its own server timestamp, increasing (%llu < %llu)",
	   (unsigned long long)ts1, (unsigned long long)ts2);
	errors = 0;

	seq = last_seq(db);
	rm[0] = rowm("wr-x0", &c1, 1);
	rm[1] = rowm("wr-x1", &badfam, 1);
	rm[2] = rowm("wr-x2", &c1, 1);
	bad = 99;
	is_int(tbl_write_rows(db, "t", rm, 3, 0, &bad), -ENOENT,
	       "a row naming an unknown family: -ENOENT");
	is_int(bad, 1, "*bad is its index, 1");
	ok(msg_has("wr-x1", "nosuch"), "the message names the row and family: %s",
	   kv_strerror(-ENOENT));
	is_int(last_seq(db), seq, "nothing at all was written, not even the rows before it");
	memset(longrow, 'r', TBL_MAX_ROW_KEY + 1);
	longrow[TBL_MAX_ROW_KEY + 1] = 0;
	rm[1] = rowm("wr-x1", &c1, 1);
	rm[2] = rowm(longrow, &c1, 1);
	is_int(tbl_write_rows(db, "t", rm, 3, 0, &bad), -ENAMETOOLONG,
	       "a row key over the limit: -ENAMETOOLONG");
	is_int(bad, 2, "*bad is 2");
	memset(bigval, 'v', sizeof(bigval));
	big = set("s", "big", 1, vdata(CELL_STRING, bigval, sizeof(bigval)));
	rm[0] = rowm("wr-x0", &big, 1);
	rm[2] = rowm("wr-x2", &c1, 1);
	is_int(tbl_write_rows(db, "t", rm, 3, 0, &bad), -EFBIG, "a value over the limit: -EFBIG");
	is_int(bad, 0, "*bad is 0");
	rm[0] = rowm("wr-x0", &c1, 1);
	rm[1].m = NULL;
	is_int(tbl_write_rows(db, "t", rm, 3, 0, &bad), -EINVAL, "a NULL mutation list: -EINVAL");
	is_int(bad, 1, "*bad is 1");
	rm[1] = rowm("wr-x1", &c1, 1);
	is_int(tbl_write_rows(db, "t", rm, 3, 4, &bad), -EINVAL, "unknown flags: -EINVAL");
	is_int(tbl_write_rows(db, "nosuch", rm, 3, 0, &bad), -ENOENT, "no such table: -ENOENT");
	is_int(tbl_write_rows(db, "t", NULL, 3, 0, &bad), -EINVAL, "a NULL row list: -EINVAL");
	is_int(last_seq(db), seq, "none of the refused calls wrote anything");
	is_int(tbl_write_rows(db, "t", rm, 0, 0, NULL), 0, "no rows at all is fine");
	is_int(last_seq(db), seq, "and writes nothing");
	is_int(tbl_write_rows(db, "t", rm, 3, TBL_SYNC, NULL), 0, "three valid rows with TBL_SYNC");
	is_dump(dump_row("wr-x2"), "s:c@1=string:first", "are written");

	/* two batch writers in opposite row orders and two incrementers on the same rows */
	memset(w, 0, sizeof(w));
	pthread_barrier_init(&wr_start, NULL, 4);
	for (int i = 0; i < 4; i++) {
		w[i].mode = i < 2 ? i : 2;
		w[i].n = n;
		pthread_create(&w[i].th, NULL, rows_work, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(w[i].th, NULL);
		errors += w[i].errors;
	}
	pthread_barrier_destroy(&wr_start);
	is_int(errors, 0, "batches of %d rows in opposite orders and increments of the same rows, "
	       "%ld rounds each, on 4 threads: no deadlock, no error", WR_ROWS, n);
	for (int i = 0; i < WR_ROWS; i++) {
		char row[16];

		snprintf(row, sizeof(row), "wr-%02d", i);
		if (newest(row, strlen(row), "n64", "hits", NULL, &ts1, &v, &buf) == 1)
			sum += v.v.i64;
	}
	is_int(sum, 2 * n * WR_ROWS, "no increment was lost while the batches ran");
	free(longrow);
	buf_free(&buf);
}

int main(void)
{
	plan(408);
	make_tmpdir("tbl_mutate");
	db = open_db("db");
	tbl_create_table(db, "t");
	tbl_create_table(db, "u");
	add_family(db, "t", "s", CELL_STRING, 0, 0, NULL);
	add_family(db, "t", "b", CELL_BYTES, 0, 0, NULL);
	add_family(db, "t", "bo", CELL_BOOLEAN, 0, 0, NULL);
	add_family(db, "t", "by", CELL_BYTE, 0, 0, NULL);
	add_family(db, "t", "n32", CELL_I32, 0, 0, NULL);
	add_family(db, "t", "n64", CELL_I64, 0, 0, NULL);
	add_family(db, "t", "f32", CELL_F32, 0, 0, NULL);
	add_family(db, "t", "f64", CELL_F64, 0, 0, NULL);
	add_family(db, "t", "ver2", CELL_I64, 2, 0, NULL);
	add_family(db, "t", "ttl", CELL_I64, 0, 1, NULL);
	add_family(db, "t", "lg", CELL_STRING, 0, 0, "lg2");
	add_family(db, "t", "lgn", CELL_I64, 0, 0, "lg2");
	add_family(db, "t", "dropped", CELL_STRING, 0, 0, NULL);
	add_family(db, "u", "s", CELL_STRING, 0, 0, NULL);
	if (tbl_drop_family(db, "t", "dropped", 1)) {
		printf("Bail out! tbl_drop_family: %s\n", kv_strerror(-1));
		return 1;
	}

	test_set_every_type();
	test_put_text();
	test_server_timestamps();
	test_limits();
	test_validation();
	test_delete_version();
	test_delete_versions();
	test_delete_cell_family();
	test_delete_row();
	test_delete_row_tombstones();
	test_read_newest();
	test_increment();
	test_append();
	test_check_and_mutate();
	test_read_api();
	test_threads();
	test_reopen();
	test_write_rows();

	tbl_close(db);
	rm_rf(tmpdir);
	return exit_status();
}
