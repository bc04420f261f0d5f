/*
 * tbl_api.c -- tests for the calls a front-end makes per file (table.h):
 * tbl_stat_cell and tbl_get_cell (newest or by timestamp, exact text size
 * for every type, GC visibility, snapshots, errors), tbl_row_exists,
 * tbl_row_has_family and tbl_row_families, the streamed and resumable
 * listing of a family (tbl_columns_*, with and without versions, resumed at
 * every position), exact resumption of row scans (start_exclusive), the
 * schema generation and table/family ids (never reused, also across a
 * reopen), tbl_sync (a power cut keeps what was synced after the fact),
 * tbl_rename_cell (plain, over a cell, no-replace, exchange, across
 * families and groups, GC, atomic for readers at snapshots),
 * tbl_convert_cell, and the validators.  What listing a family of large
 * cells reads (tbl_columns, keys_only, tbl_stat_cell, row_keys_only): their
 * sizes, not their bytes.
 *
 * GC visibility is tested with versions written far in the past for a
 * family with a ttl (they are invisible at once) and with max_versions.
 *
 * SMOLFS_TEST_SCALE scales the long listing (default 1.0: 20,000 qualifiers)
 * and the renames raced by a reader (2 x 500).
 */
#include "tap.h"
#include "table_int.h"
#include "env.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[512];
static struct tbl_db *db;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-tbl_api-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
}

static long scaled(long n, long min)
{
	const char *s = getenv("SMOLFS_TEST_SCALE");
	double v = s ? atof(s) : 1.0;

	n = (long)((double)n * (v > 0 ? v : 1.0));
	return n < min ? min : n;
}

static struct tbl_db *open_db(const char *name, struct kv_env *env)
{
	struct tbl_options o;
	struct tbl_db *d = NULL;
	char *dir = xasprintf("%s/%s", tmpdir, name);
	int r;

	tbl_options_init(&o);
	o.kv.env = env;
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

static void add_family(struct tbl_db *d, const char *table, const char *family,
		       uint32_t max_versions, uint64_t ttl, const char *group)
{
	struct tbl_family_settings s;

	tbl_family_settings_init(&s);
	s.max_versions = max_versions;
	s.ttl = ttl;
	if (group)
		snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	must(tbl_add_family(d, table, family, &s), family);
}

static void put(const char *table, const char *row, const char *family, const char *q,
		uint64_t ts, enum cell_type type, const char *text)
{
	must(tbl_put_text(db, table, row, strlen(row), family, q, strlen(q), ts, type, text,
			  strlen(text), 0), "tbl_put_text");
}

static void put_mem(const char *table, const void *row, size_t rlen, const char *family,
		    const void *q, size_t qlen, uint64_t ts, const char *text)
{
	must(tbl_put_text(db, table, row, rlen, family, q, qlen, ts, CELL_INVALID, text,
			  strlen(text), 0), "tbl_put_text");
}

static int stat_of(const char *table, const char *row, const char *family, const char *q,
		   uint64_t ts, struct tbl_cell_stat *st)
{
	return tbl_stat_cell(db, NULL, table, row, strlen(row), family, q, strlen(q), ts, st);
}

/* The text tbl_get_cell gives ("error N" on error), in a static buffer. */
static const char *get_text(const struct tbl_snapshot *snap, const char *table,
			    const char *row, const char *family, const char *q, uint64_t ts)
{
	static char out[4096];
	struct tbl_cell_stat st;
	void *data;
	size_t len;
	int r;

	r = tbl_get_cell(db, snap, table, row, strlen(row), family, q, strlen(q), ts, &st, &data,
			 &len);
	if (r) {
		snprintf(out, sizeof(out), "error %d", r);
		return out;
	}
	snprintf(out, sizeof(out), "%.*s", (int)len, (const char *)data);
	if (len != st.text_size)
		snprintf(out, sizeof(out), "text of %zu bytes but text_size %zu", len,
			 st.text_size);
	free(data);
	return out;
}

static uint64_t now_us(void)
{
	return tsch_wall();
}

/* ------------------------------------------------------------ cells */

static void test_cells(void)
{
	struct tbl_cell_stat st;
	const struct tbl_snapshot *snap;
	char big[20000];
	void *data;
	size_t len;
	uint64_t old = now_us() - 3600u * 1000000u;

	diag("tbl_stat_cell, tbl_get_cell");
	must(tbl_create_table(db, "c"), "create c");
	add_family(db, "c", "f", 0, 0, NULL);
	add_family(db, "c", "v2", 2, 0, NULL);
	add_family(db, "c", "ttl", 0, 60, NULL);
	add_family(db, "c", "lg", 0, 0, "grp");

	put("c", "r", "f", "s", 100, CELL_STRING, "hello");
	is_int(stat_of("c", "r", "f", "s", TBL_TS_NEWEST, &st), 0, "stat of a string cell");
	is_int(st.ts, 100, "its timestamp");
	is_int(st.type, CELL_STRING, "its type");
	is_int(st.value_size, 5, "value_size is the payload");
	is_int(st.text_size, 6, "text_size counts the newline cat prints");
	is_str(get_text(NULL, "c", "r", "f", "s", TBL_TS_NEWEST), "hello\n",
	       "tbl_get_cell gives the text cat prints");

	/* bytes: exact, with a NUL inside */
	must(tbl_put_text(db, "c", "r", 1, "f", "b", 1, 100, CELL_BYTES, "a\0b\n", 4, 0), "bytes");
	is_int(stat_of("c", "r", "f", "b", TBL_TS_NEWEST, &st), 0, "stat of a bytes cell");
	is_int(st.text_size, 4, "bytes: text_size is the length, nothing added");
	is_int(tbl_get_cell(db, NULL, "c", "r", 1, "f", "b", 1, TBL_TS_NEWEST, NULL, &data, &len),
	       0, "tbl_get_cell of bytes with st NULL");
	is_mem(data, len, "a\0b\n", 4, "bytes come back exactly");
	free(data);

	/* every fixed type: text_size is cell_render's length */
	{
		static const struct { enum cell_type t; const char *in, *out; } v[] = {
			{ CELL_BOOLEAN, "true", "true\n" }, { CELL_BOOLEAN, "0", "false\n" },
			{ CELL_BYTE, "255", "255\n" }, { CELL_I32, "-2147483648", "-2147483648\n" },
			{ CELL_I64, "-42", "-42\n" }, { CELL_F32, "0.1", "0.1\n" },
			{ CELL_F64, "1e300", "1e+300\n" }, { CELL_F64, "-0", "-0\n" },
			{ CELL_STRING, "", "\n" }, { CELL_BYTES, "", "" },
		};
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			char q[16];

			snprintf(q, sizeof(q), "t%zu", i);
			put("c", "types", "f", q, 7, v[i].t, v[i].in);
			is_int(stat_of("c", "types", "f", q, TBL_TS_NEWEST, &st), 0, "stat %s %s",
			       cell_type_name(v[i].t), v[i].in);
			is_int(st.text_size, strlen(v[i].out), "%s %s: text_size %zu",
			       cell_type_name(v[i].t), v[i].in, strlen(v[i].out));
			is_int(st.type, v[i].t, "and its type");
			is_str(get_text(NULL, "c", "types", "f", q, TBL_TS_NEWEST), v[i].out,
			       "%s %s renders as cat shows it", cell_type_name(v[i].t), v[i].in);
		}
	}

	/* versions */
	put("c", "r", "f", "v", 100, CELL_STRING, "one");
	put("c", "r", "f", "v", 200, CELL_STRING, "two");
	put("c", "r", "f", "v", 300, CELL_STRING, "three");
	is_str(get_text(NULL, "c", "r", "f", "v", TBL_TS_NEWEST), "three\n", "newest version");
	is_str(get_text(NULL, "c", "r", "f", "v", 200), "two\n", "a version by its timestamp");
	is_str(get_text(NULL, "c", "r", "f", "v", 100), "one\n", "the oldest by its timestamp");
	is_int(stat_of("c", "r", "f", "v", 250, &st), -ENOENT, "no version 250: -ENOENT");
	is_int(stat_of("c", "r", "f", "v", 50, &st), -ENOENT, "no version 50: -ENOENT");
	is_int(stat_of("c", "r", "f", "v", 301, &st), -ENOENT, "no version 301: -ENOENT");

	/* max_versions: the third-newest is hidden even by timestamp */
	put("c", "r", "v2", "q", 1, CELL_STRING, "a");
	put("c", "r", "v2", "q", 2, CELL_STRING, "b");
	put("c", "r", "v2", "q", 3, CELL_STRING, "c");
	is_str(get_text(NULL, "c", "r", "v2", "q", TBL_TS_NEWEST), "c\n", "max_versions 2: newest");
	is_str(get_text(NULL, "c", "r", "v2", "q", 2), "b\n", "the second-newest is visible");
	is_str(get_text(NULL, "c", "r", "v2", "q", 1), "error -2",
	       "the third-newest is hidden by max_versions: -ENOENT");

	/* ttl */
	put("c", "r", "ttl", "old", old, CELL_STRING, "gone");
	is_int(stat_of("c", "r", "ttl", "old", TBL_TS_NEWEST, &st), -ENOENT,
	       "a cell past its ttl is -ENOENT");
	is_int(stat_of("c", "r", "ttl", "old", old, &st), -ENOENT,
	       "and so is its version by timestamp");
	put("c", "r", "ttl", "mix", old, CELL_STRING, "gone");
	put("c", "r", "ttl", "mix", TBL_TS_NOW, CELL_STRING, "fresh");
	is_str(get_text(NULL, "c", "r", "ttl", "mix", TBL_TS_NEWEST), "fresh\n",
	       "a fresh version over an expired one is seen");
	is_int(stat_of("c", "r", "ttl", "mix", old, &st), -ENOENT,
	       "the expired version under it is not");

	/* another locality group */
	put("c", "r", "lg", "q", 5, CELL_I64, "12345");
	is_str(get_text(NULL, "c", "r", "lg", "q", TBL_TS_NEWEST), "12345\n",
	       "a cell in another locality group's tree");

	/* snapshots */
	snap = tbl_snapshot_new(db);
	put("c", "r", "f", "v", 400, CELL_STRING, "four");
	is_str(get_text(snap, "c", "r", "f", "v", TBL_TS_NEWEST), "three\n",
	       "at a snapshot: the newest version then");
	is_str(get_text(NULL, "c", "r", "f", "v", TBL_TS_NEWEST), "four\n", "now: the new one");
	is_int(tbl_stat_cell(db, snap, "c", "r", 1, "f", "v", 1, 400, &st), -ENOENT,
	       "a version written after the snapshot is -ENOENT at it");
	tbl_snapshot_release(db, snap);

	/* deletes */
	{
		struct tbl_mutation m;

		memset(&m, 0, sizeof(m));
		m.op = TBL_DELETE_VERSION;
		m.family = "f";
		m.qualifier = "v";
		m.qualifier_len = 1;
		m.ts = 400;
		must(tbl_mutate_row(db, "c", "r", 1, &m, 1, 0, NULL), "delete version");
		is_str(get_text(NULL, "c", "r", "f", "v", TBL_TS_NEWEST), "three\n",
		       "after deleting the newest version, the one before is the newest");
		m.op = TBL_DELETE_CELL;
		must(tbl_mutate_row(db, "c", "r", 1, &m, 1, 0, NULL), "delete cell");
		is_int(stat_of("c", "r", "f", "v", TBL_TS_NEWEST, &st), -ENOENT,
		       "a deleted cell is -ENOENT");
		is_int(stat_of("c", "r", "f", "v", 200, &st), -ENOENT,
		       "and so are its versions by timestamp");
	}

	/* big values: the stat is exact without rendering */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	put("c", "r", "f", "big", 9, CELL_STRING, big);
	is_int(stat_of("c", "r", "f", "big", TBL_TS_NEWEST, &st), 0, "stat of a big string");
	is_int(st.text_size, sizeof(big), "its text_size is its length + 1");

	/* errors */
	is_int(stat_of("nosuch", "r", "f", "s", TBL_TS_NEWEST, &st), -ENOENT, "no table: -ENOENT");
	is_int(stat_of("c", "r", "nosuch", "s", TBL_TS_NEWEST, &st), -ENOENT,
	       "no family: -ENOENT");
	is_int(stat_of("c", "nosuchrow", "f", "s", TBL_TS_NEWEST, &st), -ENOENT,
	       "no row: -ENOENT");
	is_int(stat_of("c", "r", "f", "nosuchq", TBL_TS_NEWEST, &st), -ENOENT,
	       "no qualifier: -ENOENT");
	ok(strstr(kv_strerror(-ENOENT), "no such cell") != NULL, "the message says so: %s",
	   kv_strerror(-ENOENT));
	{
		static char longq[TBL_MAX_QUALIFIER + 1], longr[TBL_MAX_ROW_KEY + 1];

		is_int(tbl_stat_cell(db, NULL, "c", "r", 1, "f", longq, sizeof(longq),
				     TBL_TS_NEWEST, &st), -ENAMETOOLONG,
		       "a qualifier over the limit: -ENAMETOOLONG");
		is_int(tbl_stat_cell(db, NULL, "c", longr, sizeof(longr), "f", "q", 1,
				     TBL_TS_NEWEST, &st), -ENAMETOOLONG,
		       "a row key over the limit: -ENAMETOOLONG");
		is_int(tbl_get_cell(db, NULL, "c", NULL, 3, "f", "q", 1, TBL_TS_NEWEST, &st, &data,
				    &len), -EINVAL, "a NULL row key with a length: -EINVAL");
		ok(data == NULL && len == 0, "and *data is NULL, *len 0 after an error");
	}

	/* a dropped family's cells */
	must(tbl_drop_family(db, "c", "lg", 1), "drop lg");
	is_int(stat_of("c", "r", "lg", "q", TBL_TS_NEWEST, &st), -ENOENT,
	       "a dropped family: -ENOENT");
	add_family(db, "c", "lg", 0, 0, "grp");
	is_int(stat_of("c", "r", "lg", "q", TBL_TS_NEWEST, &st), -ENOENT,
	       "declared again, the old cells stay invisible");
}

/* ------------------------------------------------------------ rows */

static void names_are(const char *row, const char *want)
{
	char **names;
	size_t n;
	char got[512] = "";
	int r = tbl_row_families(db, "e", row, strlen(row), &names, &n);

	if (r) {
		snprintf(got, sizeof(got), "error %d", r);
	} else {
		for (size_t i = 0; i < n; i++) {
			strcat(got, i ? "," : "");
			strcat(got, names[i]);
		}
		tbl_free_names(names, n);
	}
	is_str(got, want, "families of row \"%s\"", row);
}

static void test_rows(void)
{
	uint64_t old = now_us() - 3600u * 1000000u;

	diag("tbl_row_exists, tbl_row_has_family, tbl_row_families");
	must(tbl_create_table(db, "e"), "create e");
	add_family(db, "e", "b", 0, 0, NULL);
	add_family(db, "e", "a", 0, 0, NULL);
	add_family(db, "e", "ttl", 0, 60, NULL);
	add_family(db, "e", "g", 0, 0, "grp");
	add_family(db, "e", "gone", 0, 0, NULL);

	put("e", "ab", "b", "q", 1, CELL_STRING, "x");
	put("e", "ab", "a", "q", 1, CELL_STRING, "x");
	put("e", "only-g", "g", "q", 1, CELL_STRING, "x");
	put("e", "expired", "ttl", "q1", old, CELL_STRING, "x");
	put("e", "expired", "ttl", "q2", old, CELL_STRING, "x");
	put("e", "mixed", "ttl", "q1", old, CELL_STRING, "x");
	put("e", "mixed", "ttl", "q2", TBL_TS_NOW, CELL_STRING, "x");
	put("e", "dropped", "gone", "q", 1, CELL_STRING, "x");
	put_mem("e", "a\0b", 3, "a", "q", 1, 1, "x");
	must(tbl_drop_family(db, "e", "gone", 1), "drop gone");

	is_int(tbl_row_exists(db, "e", "ab", 2), 0, "a row with cells exists");
	is_int(tbl_row_exists(db, "e", "a", 1), -ENOENT, "a row that is a prefix of one does not");
	is_int(tbl_row_exists(db, "e", "a\0b", 3), 0, "a row key with a NUL byte");
	is_int(tbl_row_exists(db, "e", "a\0", 2), -ENOENT, "and its prefix \"a\\0\" does not");
	is_int(tbl_row_exists(db, "e", "only-g", 6), 0,
	       "a row with cells only in another group's tree exists");
	is_int(tbl_row_exists(db, "e", "expired", 7), -ENOENT,
	       "a row whose cells are all past the ttl does not exist");
	is_int(tbl_row_exists(db, "e", "mixed", 5), 0, "one fresh cell after expired ones");
	is_int(tbl_row_exists(db, "e", "dropped", 7), -ENOENT,
	       "a row with cells only in a dropped family does not exist");
	is_int(tbl_row_exists(db, "nosuch", "ab", 2), -ENOENT, "no table: -ENOENT");

	is_int(tbl_row_has_family(db, "e", "ab", 2, "a"), 0, "row ab has family a");
	is_int(tbl_row_has_family(db, "e", "ab", 2, "g"), -ENOENT, "but not g");
	is_int(tbl_row_has_family(db, "e", "only-g", 6, "g"), 0, "only-g has g");
	is_int(tbl_row_has_family(db, "e", "only-g", 6, "a"), -ENOENT, "but not a");
	is_int(tbl_row_has_family(db, "e", "mixed", 5, "ttl"), 0, "mixed has ttl");
	is_int(tbl_row_has_family(db, "e", "expired", 7, "ttl"), -ENOENT,
	       "expired has nothing visible in ttl");
	is_int(tbl_row_has_family(db, "e", "ab", 2, "gone"), -ENOENT, "a dropped family: -ENOENT");
	is_int(tbl_row_has_family(db, "e", "ab", 2, "undeclared"), -ENOENT,
	       "an undeclared family: -ENOENT");

	names_are("ab", "a,b");
	names_are("only-g", "g");
	names_are("mixed", "ttl");
	names_are("expired", "");
	names_are("dropped", "");
	names_are("nosuch", "");
	{
		char **names;
		size_t n;

		is_int(tbl_row_families(db, "nosuch", "ab", 2, &names, &n), -ENOENT,
		       "tbl_row_families of no table: -ENOENT");
	}
}

/* ------------------------------------------------------------ columns */

/*
 * The listing as text: "q@ts*" per entry (* newest), from (after, after_ts),
 * at most limit entries (0: all); *last gets the last entry.
 */
static char *list(const char *table, const char *row, const char *family, const char *after,
		  size_t after_len, uint64_t after_ts, unsigned flags, size_t limit, char *lastq,
		  size_t *lastlen, uint64_t *lastts)
{
	struct buf out = BUF_INIT;
	struct tbl_columns *c;
	const struct tbl_column *col;
	size_t n = 0;
	int r;

	r = tbl_columns_new(db, NULL, table, row, strlen(row), family, after, after_len,
			    after_ts, flags, &c);
	if (r) {
		char e[32];

		snprintf(e, sizeof(e), "error %d", r);
		buf_append(&out, e, strlen(e));
		buf_append(&out, "", 1);
		return out.data;
	}
	while ((limit == 0 || n < limit) && (r = tbl_columns_next(c, &col)) == 1) {
		char e[64];

		for (size_t i = 0; i < col->qualifier_len; i++) {
			unsigned char b = ((const unsigned char *)col->qualifier)[i];
			char x[8];

			snprintf(x, sizeof(x), b >= 0x21 && b < 0x7f ? "%c" : "\\x%02x", b);
			buf_append(&out, x, strlen(x));
		}
		snprintf(e, sizeof(e), "@%llu%s(%zu) ", (unsigned long long)col->ts,
			 col->newest ? "*" : "", col->text_size);
		buf_append(&out, e, strlen(e));
		if (lastq) {
			memcpy(lastq, col->qualifier, col->qualifier_len);
			*lastlen = col->qualifier_len;
			*lastts = col->ts;
		}
		n++;
	}
	if (r < 0) {
		char e[32];

		snprintf(e, sizeof(e), "error %d", r);
		buf_append(&out, e, strlen(e));
	}
	tbl_columns_free(c);
	buf_append(&out, "", 1);
	return out.data;
}

static void list_is(const char *row, const char *family, const char *after, uint64_t after_ts,
		    unsigned flags, const char *want, const char *what)
{
	char *got = list("l", row, family, after, after ? strlen(after) : 0, after_ts, flags, 0,
			 NULL, NULL, NULL);

	is_str(got, want, "%s", what);
	free(got);
}

/* List in pieces of `step` entries, each resumed after the last; compare with the whole. */
static void resume_is_exact(const char *row, const char *family, unsigned flags, size_t step)
{
	char *whole = list("l", row, family, NULL, 0, 0, flags, 0, NULL, NULL, NULL);
	struct buf pieces = BUF_INIT;
	char lastq[256], prevq[256];
	size_t lastlen = 0, prevlen;
	uint64_t lastts = 0;
	int first = 1;

	for (;;) {
		char *piece;

		memcpy(prevq, lastq, lastlen);
		prevlen = lastlen;
		lastlen = SIZE_MAX;
		piece = list("l", row, family, first ? NULL : prevq, prevlen, lastts, flags, step,
			     lastq, &lastlen, &lastts);
		first = 0;
		buf_append(&pieces, piece, strlen(piece));
		free(piece);
		if (lastlen == SIZE_MAX)
			break;
	}
	buf_append(&pieces, "", 1);
	is_str(pieces.data, whole, "row %s family %s%s: resumed every %zu entries, the listing "
	       "is the same", row, family, flags ? " with versions" : "", step);
	buf_free(&pieces);
	free(whole);
}

static void test_columns(void)
{
	uint64_t old = now_us() - 3600u * 1000000u, fresh = now_us() - 1000000u;
	char *got;
	long nq = scaled(20000, 200);
	struct tbl_columns *c;
	const struct tbl_column *col;
	char expect[512];

	diag("tbl_columns_*");
	must(tbl_create_table(db, "l"), "create l");
	add_family(db, "l", "f", 0, 0, NULL);
	add_family(db, "l", "v2", 2, 0, NULL);
	add_family(db, "l", "ttl", 0, 60, NULL);
	add_family(db, "l", "g", 0, 0, "grp");
	add_family(db, "l", "other", 0, 0, NULL);

	put("l", "r", "f", "a", 1, CELL_STRING, "x");
	put("l", "r", "f", "b", 1, CELL_STRING, "one");
	put("l", "r", "f", "b", 2, CELL_STRING, "two");
	put("l", "r", "f", "b", 3, CELL_I64, "-3");
	put("l", "r", "f", "c", 1, CELL_BYTES, "xyz");
	put("l", "r", "other", "zz", 1, CELL_STRING, "x");
	put("l", "r0", "f", "a", 1, CELL_STRING, "x");

	list_is("r", "f", NULL, 0, 0, "a@1*(2) b@3*(3) c@1*(3) ",
		"qualifiers, newest versions, text sizes");
	list_is("r", "f", NULL, 0, TBL_COLUMNS_VERSIONS,
		"a@1*(2) b@3*(3) b@2(4) b@1(4) c@1*(3) ", "with versions, newest first");
	list_is("r", "f", "a", 0, 0, "b@3*(3) c@1*(3) ", "after a");
	list_is("r", "f", "b", 0, 0, "c@1*(3) ", "after b");
	list_is("r", "f", "bb", 0, 0, "c@1*(3) ", "after bb, which does not exist");
	list_is("r", "f", "", 0, 0, "a@1*(2) b@3*(3) c@1*(3) ", "after the empty qualifier");
	list_is("r", "f", "c", 0, 0, "", "after the last: nothing");
	list_is("r", "f", "b", 3, TBL_COLUMNS_VERSIONS, "b@2(4) b@1(4) c@1*(3) ",
		"with versions after b@3");
	list_is("r", "f", "b", 2, TBL_COLUMNS_VERSIONS, "b@1(4) c@1*(3) ",
		"with versions after b@2");
	list_is("r", "f", "b", 1, TBL_COLUMNS_VERSIONS, "c@1*(3) ", "with versions after b@1");
	list_is("r", "f", "b", 0, TBL_COLUMNS_VERSIONS, "c@1*(3) ",
		"with versions after b@0 (older than all)");
	list_is("r", "f", "b", 5, TBL_COLUMNS_VERSIONS, "b@3*(3) b@2(4) b@1(4) c@1*(3) ",
		"with versions after b@5 (newer than all): b's newest comes next");
	list_is("r", "f", "b", UINT64_MAX, TBL_COLUMNS_VERSIONS, "b@3*(3) b@2(4) b@1(4) c@1*(3) ",
		"with versions after b@UINT64_MAX");
	list_is("r", "f", "a", 7, TBL_COLUMNS_VERSIONS, "a@1*(2) b@3*(3) b@2(4) b@1(4) c@1*(3) ",
		"with versions after a@7");
	list_is("nosuchrow", "f", NULL, 0, 0, "", "a row that does not exist lists nothing");
	list_is("r", "g", NULL, 0, 0, "", "a family without cells in the row lists nothing");
	list_is("r0", "f", NULL, 0, 0, "a@1*(2) ", "a row with a longer key is another row");

	/* max_versions */
	put("l", "r", "v2", "q", 1, CELL_STRING, "a");
	put("l", "r", "v2", "q", 2, CELL_STRING, "b");
	put("l", "r", "v2", "q", 3, CELL_STRING, "c");
	put("l", "r", "v2", "s", 1, CELL_STRING, "a");
	list_is("r", "v2", NULL, 0, TBL_COLUMNS_VERSIONS, "q@3*(2) q@2(2) s@1*(2) ",
		"max_versions 2: the oldest of three is not listed");
	list_is("r", "v2", "q", 3, TBL_COLUMNS_VERSIONS, "q@2(2) s@1*(2) ",
		"resumed after q@3: q@2, not newest");
	list_is("r", "v2", "q", 2, TBL_COLUMNS_VERSIONS, "s@1*(2) ",
		"resumed after q@2: the hidden q@1 is not listed");

	/* ttl */
	put("l", "r", "ttl", "a", old, CELL_STRING, "x");
	put("l", "r", "ttl", "b", old, CELL_STRING, "x");
	put("l", "r", "ttl", "b", fresh, CELL_STRING, "x");
	put("l", "r", "ttl", "c", old, CELL_STRING, "x");
	got = list("l", "r", "ttl", NULL, 0, 0, TBL_COLUMNS_VERSIONS, 0, NULL, NULL, NULL);
	snprintf(expect, sizeof(expect), "b@%llu*(2) ",
		 (unsigned long long)fresh);
	is_str(got, expect, "ttl: expired qualifiers and versions are not listed");
	free(got);

	/* another group */
	put("l", "r", "g", "x", 4, CELL_BOOLEAN, "true");
	list_is("r", "g", NULL, 0, 0, "x@4*(5) ", "a family in another group's tree");

	/* qualifiers with NUL bytes and 0xFF sort byte-wise */
	put_mem("l", "n", 1, "f", "a\0", 2, 1, "x");
	put_mem("l", "n", 1, "f", "a", 1, 1, "x");
	put_mem("l", "n", 1, "f", "a\xff", 2, 1, "x");
	put_mem("l", "n", 1, "f", "a\0\0", 3, 1, "x");
	must(tbl_columns_new(db, NULL, "l", "n", 1, "f", NULL, 0, 0, 0, &c), "columns n");
	{
		static const struct { const char *q; size_t n; } want[] = {
			{ "a", 1 }, { "a\0", 2 }, { "a\0\0", 3 }, { "a\xff", 2 },
		};
		size_t i = 0;
		int r;

		while ((r = tbl_columns_next(c, &col)) == 1 && i < 4) {
			is_mem(col->qualifier, col->qualifier_len, want[i].q, want[i].n,
			       "escaped qualifier %zu in byte order", i);
			i++;
		}
		is_int(r, 0, "and the listing ends");
		is_int(i, 4, "four qualifiers");
	}
	tbl_columns_free(c);

	/* errors */
	list_is("r", "nosuch", NULL, 0, 0, "error -2", "no family: -ENOENT");
	is_int(tbl_columns_new(db, NULL, "nosuch", "r", 1, "f", NULL, 0, 0, 0, &c), -ENOENT,
	       "no table: -ENOENT");
	is_int(tbl_columns_new(db, NULL, "l", "r", 1, "f", NULL, 0, 0, 4, &c), -EINVAL,
	       "unknown flags: -EINVAL");
	ok(c == NULL, "and *out is NULL");

	/* a snapshot */
	{
		const struct tbl_snapshot *snap = tbl_snapshot_new(db);
		int n = 0;

		put("l", "r", "f", "d", 1, CELL_STRING, "x");
		must(tbl_columns_new(db, snap, "l", "r", 1, "f", NULL, 0, 0, 0, &c), "columns");
		while (tbl_columns_next(c, &col) == 1)
			n++;
		is_int(n, 3, "at a snapshot: the qualifier written after it is not listed");
		tbl_columns_free(c);
		tbl_snapshot_release(db, snap);
	}

	/* many qualifiers, resumed at every step size */
	{
		struct tbl_row_mutations rm;
		struct tbl_mutation *m = xcalloc((size_t)nq, sizeof(*m));
		char (*qs)[24] = xcalloc((size_t)nq, sizeof(*qs));
		long i;
		int r;

		for (i = 0; i < nq; i++) {
			snprintf(qs[i], sizeof(qs[i]), "q%07ld", i * 7 % nq);
			m[i].op = TBL_SET;
			m[i].family = "f";
			m[i].qualifier = qs[i];
			m[i].qualifier_len = strlen(qs[i]);
			m[i].ts = (uint64_t)(i % 3) + 1;
			m[i].value.type = CELL_I32;
			m[i].value.v.i32 = (int32_t)i;
		}
		rm.row = "big";
		rm.row_len = 3;
		rm.m = m;
		rm.n = (size_t)nq;
		must(tbl_write_rows(db, "l", &rm, 1, 0, NULL), "write big");
		must(tbl_columns_new(db, NULL, "l", "big", 3, "f", NULL, 0, 0, 0, &c), "columns");
		i = 0;
		while ((r = tbl_columns_next(c, &col)) == 1) {
			char want[24];

			snprintf(want, sizeof(want), "q%07ld", i);
			if (col->qualifier_len != strlen(want) ||
			    memcmp(col->qualifier, want, col->qualifier_len))
				break;
			i++;
		}
		is_int(r, 0, "a family of %ld qualifiers lists to its end", nq);
		is_int(i, nq, "every qualifier once, in order");
		tbl_columns_free(c);
		free(m);
		free(qs);
	}

	resume_is_exact("r", "f", 0, 1);
	resume_is_exact("r", "f", TBL_COLUMNS_VERSIONS, 1);
	resume_is_exact("r", "f", TBL_COLUMNS_VERSIONS, 2);
	resume_is_exact("r", "v2", TBL_COLUMNS_VERSIONS, 1);
	resume_is_exact("r", "ttl", TBL_COLUMNS_VERSIONS, 1);
	resume_is_exact("n", "f", 0, 1);
	resume_is_exact("big", "f", 0, 997);
}

/* ------------------------------------------------------------ rename and convert */

/* Every visible version of a column as "ts=text,..." ("error N"), in a static buffer. */
static const char *versions_of(const char *row, const char *family, const char *q)
{
	static char out[1024];
	struct tbl_columns *c;
	const struct tbl_column *col;
	int r;

	out[0] = 0;
	r = tbl_columns_new(db, NULL, "m", row, strlen(row), family, NULL, 0, 0,
			    TBL_COLUMNS_VERSIONS, &c);
	if (r) {
		snprintf(out, sizeof(out), "error %d", r);
		return out;
	}
	while ((r = tbl_columns_next(c, &col)) == 1) {
		char text[256], *e = out + strlen(out);

		if (col->qualifier_len != strlen(q) || memcmp(col->qualifier, q, strlen(q)))
			continue;
		snprintf(text, sizeof(text), "%s", get_text(NULL, "m", row, family, q, col->ts));
		if (text[0] && text[strlen(text) - 1] == '\n')
			text[strlen(text) - 1] = 0;
		snprintf(e, sizeof(out) - (size_t)(e - out), "%s%llu=%s:%s", out[0] ? "," : "",
			 (unsigned long long)col->ts, cell_type_name(col->type), text);
	}
	tbl_columns_free(c);
	if (r < 0)
		snprintf(out, sizeof(out), "error %d", r);
	return out;
}

static int rename_cell(const char *row, const char *ff, const char *fq, const char *tf,
		       const char *tq, unsigned rflags)
{
	return tbl_rename_cell(db, "m", row, strlen(row), ff, fq, strlen(fq), tf, tq, strlen(tq),
			       rflags, 0);
}

struct flipper {
	long rounds;
	int stop;
	long bad, seen;
};

/* Readers: at any snapshot the cell is in exactly one of its two places. */
static void *flip_reader(void *arg)
{
	struct flipper *fl = arg;

	while (!__atomic_load_n(&fl->stop, __ATOMIC_ACQUIRE)) {
		const struct tbl_snapshot *snap = tbl_snapshot_new(db);
		struct tbl_cell_stat st;
		int a = tbl_stat_cell(db, snap, "m", "flip", 4, "f", "a", 1, TBL_TS_NEWEST, &st);
		int b = tbl_stat_cell(db, snap, "m", "flip", 4, "g", "b", 1, TBL_TS_NEWEST, &st);

		if ((a == 0) == (b == 0))
			fl->bad++;
		fl->seen++;
		tbl_snapshot_release(db, snap);
	}
	return NULL;
}

static void test_rename(void)
{
	uint64_t old = now_us() - 3600u * 1000000u;

	diag("tbl_rename_cell");
	must(tbl_create_table(db, "m"), "create m");
	add_family(db, "m", "f", 0, 0, NULL);
	add_family(db, "m", "g", 0, 0, "other");
	add_family(db, "m", "v2", 2, 0, NULL);
	add_family(db, "m", "ttl", 0, 60, NULL);

	put("m", "r", "f", "a", 1, CELL_STRING, "a1");
	put("m", "r", "f", "a", 2, CELL_I64, "2");
	put("m", "r", "f", "a", 3, CELL_STRING, "a3");
	is_int(rename_cell("r", "f", "a", "f", "b", 0), 0, "rename f:a to f:b");
	is_str(versions_of("r", "f", "b"), "3=string:a3,2=i64:2,1=string:a1",
	       "every version moved, with its timestamp, type and value");
	is_str(versions_of("r", "f", "a"), "", "and f:a is gone");

	put("m", "r", "f", "c", 5, CELL_STRING, "c5");
	put("m", "r", "f", "b", 9, CELL_STRING, "b9");
	is_int(rename_cell("r", "f", "c", "f", "b", 0), 0, "rename f:c over f:b");
	is_str(versions_of("r", "f", "b"), "5=string:c5",
	       "the target's versions are all replaced, also those at other timestamps");
	is_str(versions_of("r", "f", "c"), "", "and f:c is gone");

	put("m", "r", "f", "d", 1, CELL_STRING, "d1");
	is_int(rename_cell("r", "f", "d", "f", "b", TBL_RENAME_NOREPLACE), -EEXIST,
	       "no-replace over an existing cell: -EEXIST");
	is_str(versions_of("r", "f", "d"), "1=string:d1", "and the source is unchanged");
	is_str(versions_of("r", "f", "b"), "5=string:c5", "and the target too");
	is_int(rename_cell("r", "f", "d", "f", "e", TBL_RENAME_NOREPLACE), 0,
	       "no-replace to an absent cell");
	is_str(versions_of("r", "f", "e"), "1=string:d1", "moves it");

	is_int(rename_cell("r", "f", "b", "f", "e", TBL_RENAME_EXCHANGE), 0, "exchange f:b, f:e");
	is_str(versions_of("r", "f", "b"), "1=string:d1", "f:b has f:e's versions");
	is_str(versions_of("r", "f", "e"), "5=string:c5", "f:e has f:b's");
	is_int(rename_cell("r", "f", "b", "f", "zz", TBL_RENAME_EXCHANGE), -ENOENT,
	       "exchange with an absent cell: -ENOENT");
	is_str(versions_of("r", "f", "b"), "1=string:d1", "and nothing changed");

	is_int(rename_cell("r", "f", "e", "g", "e", 0), 0,
	       "rename across families (another locality group)");
	is_str(versions_of("r", "g", "e"), "5=string:c5", "g:e holds the cell");
	is_str(versions_of("r", "f", "e"), "", "f:e does not");
	is_int(rename_cell("r", "g", "e", "f", "b", TBL_RENAME_EXCHANGE), 0,
	       "exchange across families");
	is_str(versions_of("r", "g", "e"), "1=string:d1", "g:e has f:b's versions");
	is_str(versions_of("r", "f", "b"), "5=string:c5", "and f:b g:e's");

	is_int(rename_cell("r", "f", "b", "f", "b", 0), 0, "a cell renamed onto itself: 0");
	is_str(versions_of("r", "f", "b"), "5=string:c5", "and unchanged");
	is_int(rename_cell("r", "f", "b", "f", "b", TBL_RENAME_NOREPLACE), -EEXIST,
	       "onto itself with no-replace: -EEXIST");
	is_int(rename_cell("r", "f", "nosuch", "f", "x", 0), -ENOENT, "no source cell: -ENOENT");
	is_int(rename_cell("r", "f", "b", "nosuch", "x", 0), -ENOENT, "no target family: -ENOENT");
	is_int(rename_cell("r", "f", "b", "f", "x", 4), -EINVAL, "unknown rename flags: -EINVAL");
	is_int(rename_cell("r", "f", "b", "f", "x", TBL_RENAME_NOREPLACE | TBL_RENAME_EXCHANGE),
	       -EINVAL, "no-replace and exchange together: -EINVAL");
	is_int(tbl_rename_cell(db, "nosuch", "r", 1, "f", "b", 1, "f", "x", 1, 0, 0), -ENOENT,
	       "no table: -ENOENT");
	is_int(tbl_rename_cell(db, "m", "r", 1, "f", "b", 1, "f", "x", 1, 0, 8), -EINVAL,
	       "unknown mutation flags: -EINVAL");
	is_str(versions_of("r", "f", "b"), "5=string:c5", "after all these errors, unchanged");

	/* GC: only visible versions move */
	put("m", "r", "v2", "q", 1, CELL_STRING, "1");
	put("m", "r", "v2", "q", 2, CELL_STRING, "2");
	put("m", "r", "v2", "q", 3, CELL_STRING, "3");
	is_int(rename_cell("r", "v2", "q", "f", "q", 0), 0, "rename out of a max_versions 2 family");
	is_str(versions_of("r", "f", "q"), "3=string:3,2=string:2",
	       "the version max_versions hid is not moved into an unlimited family");
	is_int(rename_cell("r", "f", "q", "v2", "q", 0), 0, "and back");
	is_str(versions_of("r", "v2", "q"), "3=string:3,2=string:2", "the hidden one is gone");
	put("m", "r", "ttl", "t", old, CELL_STRING, "old");
	is_int(rename_cell("r", "ttl", "t", "f", "t", 0), -ENOENT,
	       "a cell past its ttl cannot be renamed: -ENOENT");
	is_int(tbl_stat_cell(db, NULL, "m", "r", 1, "f", "t", 1, TBL_TS_NEWEST, NULL), -ENOENT,
	       "and it does not come back in an unlimited family");

	/* many versions: deleted by one range, not one by one */
	{
		for (int i = 30; i >= 1; i--) {
			char v[16];

			snprintf(v, sizeof(v), "%d", i);
			put("m", "many", "f", "q", (uint64_t)i, CELL_STRING, v);
			put("m", "many", "v2", "q", (uint64_t)i, CELL_STRING, v);
		}
		is_int(rename_cell("many", "f", "q", "f", "r", 0), 0, "rename a cell of 30 versions");
		ok(strlen(versions_of("many", "f", "r")) > 200 &&
		   strncmp(versions_of("many", "f", "r"), "30=string:30,29=string:29,", 26) == 0,
		   "all 30 moved: %.40s...", versions_of("many", "f", "r"));
		is_str(versions_of("many", "f", "q"), "", "none left behind");
		is_int(rename_cell("many", "v2", "q", "f", "q", 0), 0,
		       "rename a max_versions 2 cell with 28 hidden versions");
		is_str(versions_of("many", "f", "q"), "30=string:30,29=string:29", "two moved");
		is_int(rename_cell("many", "f", "q", "v2", "q", 0), 0, "and back");
		is_str(versions_of("many", "v2", "q"), "30=string:30,29=string:29",
		       "the 28 hidden ones were deleted, not shown again");
	}

	/* atomic: readers at snapshots see the cell in exactly one place */
	{
		struct flipper fl = { .rounds = scaled(500, 50) };
		pthread_t th;
		long i;
		int fails = 0;

		put("m", "flip", "f", "a", 1, CELL_STRING, "x");
		pthread_create(&th, NULL, flip_reader, &fl);
		for (i = 0; i < fl.rounds; i++) {
			fails += tbl_rename_cell(db, "m", "flip", 4, "f", "a", 1, "g", "b", 1, 0, 0)
				 != 0;
			fails += tbl_rename_cell(db, "m", "flip", 4, "g", "b", 1, "f", "a", 1, 0, 0)
				 != 0;
		}
		__atomic_store_n(&fl.stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		is_int(fails, 0, "%ld renames back and forth across groups", 2 * fl.rounds);
		is_int(fl.bad, 0, "a reader at a snapshot never saw the cell in both places or "
		       "neither (%ld reads)", fl.seen);
	}
}

static int convert(const char *row, const char *q, enum cell_type to, unsigned cflags)
{
	return tbl_convert_cell(db, "m", row, strlen(row), "f", q, strlen(q), to, cflags, 0);
}

static void test_convert(void)
{
	diag("tbl_convert_cell");
	put("m", "cv", "f", "n", 1, CELL_STRING, "abc");
	put("m", "cv", "f", "n", 2, CELL_STRING, " 42\n");
	is_int(convert("cv", "n", CELL_I64, 0), 0, "convert the newest version to i64");
	is_str(versions_of("cv", "f", "n"), "2=i64:42,1=string:abc",
	       "the newest is i64 42 at its timestamp; the older keeps its type");
	is_int(convert("cv", "n", CELL_I64, TBL_CONVERT_ALL_VERSIONS), -EINVAL,
	       "converting every version when one does not convert: -EINVAL");
	ok(strstr(kv_strerror(-EINVAL), "abc") != NULL, "the message names the value: %s",
	   kv_strerror(-EINVAL));
	is_str(versions_of("cv", "f", "n"), "2=i64:42,1=string:abc", "and nothing changed");
	is_int(convert("cv", "n", CELL_STRING, TBL_CONVERT_ALL_VERSIONS), 0,
	       "every version to string");
	is_str(versions_of("cv", "f", "n"), "2=string:42,1=string:abc", "both strings now");
	is_int(convert("cv", "n", CELL_BYTES, 0), 0, "to bytes");
	is_str(versions_of("cv", "f", "n"), "2=bytes:42,1=string:abc",
	       "bytes render without a newline");

	put("m", "cv", "f", "x", 7, CELL_F64, "0.1");
	is_int(convert("cv", "x", CELL_F32, 0), 0, "f64 0.1 to f32");
	is_str(versions_of("cv", "f", "x"), "7=f32:0.1", "stays 0.1");
	is_int(convert("cv", "x", CELL_BOOLEAN, 0), -EINVAL, "0.1 to boolean: -EINVAL");
	is_int(convert("cv", "x", CELL_F32, 0), 0, "to its own type: 0");
	is_str(versions_of("cv", "f", "x"), "7=f32:0.1", "unchanged");
	is_int(convert("cv", "nosuch", CELL_I64, 0), -ENOENT, "no cell: -ENOENT");
	is_int(convert("cv", "x", (enum cell_type)0, 0), -EINVAL, "type 0: -EINVAL");
	is_int(convert("cv", "x", (enum cell_type)9, 0), -EINVAL, "type 9: -EINVAL");
	is_int(convert("cv", "x", CELL_I64, 2), -EINVAL, "unknown flags: -EINVAL");
	is_int(tbl_convert_cell(db, "m", "cv", 2, "nosuch", "x", 1, CELL_I64, 0, 0), -ENOENT,
	       "no family: -ENOENT");
}

static int rename_version(const char *row, const char *fq, uint64_t fts, const char *tq,
			  uint64_t tts, unsigned rflags)
{
	return tbl_rename_version(db, "m", row, strlen(row), "f", fq, strlen(fq), fts, "f", tq,
				  strlen(tq), tts, rflags, 0);
}

static void test_rename_version(void)
{
	diag("tbl_rename_version, tbl_convert_version");
	put("m", "rv", "f", "q", 1, CELL_STRING, "q1");
	put("m", "rv", "f", "q", 2, CELL_I64, "2");
	put("m", "rv", "f", "q", 3, CELL_STRING, "q3");
	put("m", "rv", "f", "p", 7, CELL_STRING, "p7");
	put("m", "rv", "f", "p", 8, CELL_STRING, "p8");
	is_int(rename_version("rv", "q", 2, "p", 0, TBL_RENAME_NOREPLACE), -EEXIST,
	       "a version onto an existing cell with no-replace: -EEXIST");
	is_int(rename_version("rv", "q", 2, "p", 0, 0), 0, "version 2 of q becomes the cell p");
	is_str(versions_of("rv", "f", "p"), "2=i64:2",
	       "p holds that version alone, with its timestamp and type");
	is_str(versions_of("rv", "f", "q"), "3=string:q3,1=string:q1", "q lost that version only");
	is_int(rename_version("rv", "q", 0, "p", 5, 0), 0, "the cell q becomes version 5 of p");
	is_str(versions_of("rv", "f", "p"), "5=string:q3,2=i64:2",
	       "p has q's newest value at 5 and keeps its other version");
	is_str(versions_of("rv", "f", "q"), "", "every version of q went");
	is_int(rename_version("rv", "p", 2, "p", 9, 0), 0, "a version moved within its cell");
	is_str(versions_of("rv", "f", "p"), "9=i64:2,5=string:q3", "to its new timestamp");
	is_int(rename_version("rv", "p", 9, "x", 5, TBL_RENAME_NOREPLACE), 0,
	       "no-replace onto an absent version");
	is_int(rename_version("rv", "p", 5, "x", 5, TBL_RENAME_NOREPLACE), -EEXIST,
	       "and onto that version now: -EEXIST");
	is_str(versions_of("rv", "f", "x"), "5=i64:2", "x has the moved version");
	is_int(rename_version("rv", "p", 4, "x", 0, 0), -ENOENT, "no such version: -ENOENT");
	is_int(rename_version("rv", "p", 5, "x", 0, TBL_RENAME_EXCHANGE), -EINVAL,
	       "an exchange of versions: -EINVAL");
	is_int(rename_version("rv", "p", 0, "x", TBL_TS_NOW, 0), -EINVAL,
	       "to the time of the call: -EINVAL");
	is_str(versions_of("rv", "f", "p"), "5=string:q3", "after these errors p is unchanged");
	put("m", "rv", "f", "n", 1, CELL_STRING, " 12\n");
	put("m", "rv", "f", "n", 2, CELL_STRING, "abc");
	is_int(tbl_convert_version(db, "m", "rv", 2, "f", "n", 1, 1, CELL_I64, 0), 0,
	       "convert the older version to i64");
	is_str(versions_of("rv", "f", "n"), "2=string:abc,1=i64:12", "that version alone changed");
	is_int(tbl_convert_version(db, "m", "rv", 2, "f", "n", 1, 2, CELL_I64, 0), -EINVAL,
	       "a version that does not convert: -EINVAL");
	is_int(tbl_convert_version(db, "m", "rv", 2, "f", "n", 1, 3, CELL_I64, 0), -ENOENT,
	       "no version at that timestamp: -ENOENT");
	is_int(tbl_convert_version(db, "m", "rv", 2, "f", "n", 1, 0, CELL_BYTES, 0), 0,
	       "timestamp 0: the newest");
	is_str(versions_of("rv", "f", "n"), "2=bytes:abc,1=i64:12", "converted");
}

/* ------------------------------------------------------------ scans resumed exactly */

static char *scan_keys(const char *table, const void *start, size_t start_len, int excl,
		       int reverse)
{
	struct tbl_read r;
	struct tbl_scan *s;
	const struct tbl_row *row;
	struct buf out = BUF_INIT;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.start_len = start_len;
	r.start_exclusive = excl;
	r.reverse = reverse;
	r.row_keys_only = 1;
	must(tbl_scan_new(db, table, &r, &s), "scan");
	while (tbl_scan_next(s, &row) == 1) {
		for (size_t i = 0; i < row->key_len; i++) {
			char c = ((const char *)row->key)[i];

			buf_append(&out, c ? &c : "0", 1);
		}
		buf_append(&out, " ", 1);
	}
	tbl_scan_free(s);
	buf_append(&out, "", 1);
	return out.data;
}

static void test_start_exclusive(void)
{
	char *got;

	diag("start_exclusive");
	must(tbl_create_table(db, "s"), "create s");
	add_family(db, "s", "f", 0, 0, NULL);
	put_mem("s", "a", 1, "f", "q", 1, 1, "x");
	put_mem("s", "b", 1, "f", "q", 1, 1, "x");
	put_mem("s", "b\0", 2, "f", "q", 1, 1, "x");
	put_mem("s", "bb", 2, "f", "q", 1, 1, "x");
	put_mem("s", "c", 1, "f", "q", 1, 1, "x");

	got = scan_keys("s", "b", 1, 0, 0);
	is_str(got, "b b0 bb c ", "start b: rows >= b");
	free(got);
	got = scan_keys("s", "b", 1, 1, 0);
	is_str(got, "b0 bb c ", "start b exclusive: b\\0 (the next possible key) comes next");
	free(got);
	got = scan_keys("s", "b\0", 2, 1, 0);
	is_str(got, "bb c ", "start b\\0 exclusive");
	free(got);
	got = scan_keys("s", "ba", 2, 1, 0);
	is_str(got, "bb c ", "start ba (absent) exclusive");
	free(got);
	got = scan_keys("s", "c", 1, 1, 0);
	is_str(got, "", "start at the last row, exclusive: nothing");
	free(got);
	got = scan_keys("s", "b", 1, 1, 1);
	is_str(got, "c bb b0 ", "reverse: start b exclusive is the lower bound");
	free(got);
}

/* ------------------------------------------------------------ ids and generation */

static void test_ids(void)
{
	uint64_t g0, g1, id1, id2, id3, fid1, fid2, fid3, other;

	diag("tbl_schema_generation, tbl_table_id, tbl_family_id");
	g0 = tbl_schema_generation(db);
	must(tbl_create_table(db, "i"), "create i");
	g1 = tbl_schema_generation(db);
	ok(g1 != g0, "creating a table changes the schema generation");
	add_family(db, "i", "f", 0, 0, NULL);
	ok(tbl_schema_generation(db) != g1, "adding a family changes it");
	g1 = tbl_schema_generation(db);
	put("i", "r", "f", "q", 1, CELL_STRING, "x");
	is_int(tbl_schema_generation(db), g1, "a write does not");
	{
		struct tbl_family_settings s;

		must(tbl_get_family(db, "i", "f", &s), "get family");
		s.max_versions = 3;
		must(tbl_alter_family(db, "i", "f", &s), "alter");
		ok(tbl_schema_generation(db) != g1, "altering a family changes it");
	}
	is_int(tbl_create_table(db, "i"), -EEXIST, "a failed schema change");
	g1 = tbl_schema_generation(db);
	is_int(tbl_create_table(db, "i"), -EEXIST, "(again)");
	is_int(tbl_schema_generation(db), g1, "does not change it");

	is_int(tbl_table_id(db, "i", &id1), 0, "tbl_table_id");
	is_int(tbl_family_id(db, "i", "f", &fid1), 0, "tbl_family_id");
	is_int(tbl_table_id(db, "nosuch", &other), -ENOENT, "no table: -ENOENT");
	is_int(tbl_family_id(db, "i", "nosuch", &other), -ENOENT, "no family: -ENOENT");
	is_int(tbl_family_id(db, "nosuch", "f", &other), -ENOENT, "no table: -ENOENT");

	must(tbl_drop_family(db, "i", "f", 1), "drop f");
	is_int(tbl_family_id(db, "i", "f", &other), -ENOENT, "a dropped family has no id");
	add_family(db, "i", "f", 0, 0, NULL);
	is_int(tbl_family_id(db, "i", "f", &fid2), 0, "declared again");
	ok(fid2 != fid1, "it has a new id (%llu, was %llu)", (unsigned long long)fid2,
	   (unsigned long long)fid1);

	g1 = tbl_schema_generation(db);
	must(tbl_drop_table(db, "i", 1), "drop i");
	ok(tbl_schema_generation(db) != g1, "dropping a table changes the generation");
	is_int(tbl_table_id(db, "i", &other), -ENOENT, "a dropped table has no id");
	must(tbl_create_table(db, "i"), "create i again");
	add_family(db, "i", "f", 0, 0, NULL);
	is_int(tbl_table_id(db, "i", &id2), 0, "created again");
	ok(id2 != id1, "a table created again under its name has a new id");
	is_int(tbl_family_id(db, "i", "f", &fid3), 0, "its family");
	ok(fid3 != fid1 && fid3 != fid2, "a family of the new table has an id no family of the "
	   "old one had");
	is_int(tbl_stat_cell(db, NULL, "i", "r", 1, "f", "q", 1, TBL_TS_NEWEST, NULL), -ENOENT,
	       "and the old table's cells are gone");

	/* across a reopen */
	must(tbl_close(db), "close");
	db = open_db("db", NULL);
	is_int(tbl_table_id(db, "i", &other), 0, "after a reopen");
	is_int(other, id2, "the table keeps its id");
	is_int(tbl_family_id(db, "i", "f", &other), 0, "and its family");
	is_int(other, fid3, "keeps its id");
	must(tbl_drop_table(db, "i", 1), "drop i");
	must(tbl_create_table(db, "i"), "create i a third time");
	is_int(tbl_table_id(db, "i", &id3), 0, "created a third time, after the reopen");
	ok(id3 != id1 && id3 != id2, "its id was never used before (%llu; %llu, %llu)",
	   (unsigned long long)id3, (unsigned long long)id1, (unsigned long long)id2);
	{
		uint64_t a, b;

		add_family(db, "i", "f", 0, 0, NULL);
		must(tbl_create_table(db, "j"), "create j");
		add_family(db, "j", "f", 0, 0, NULL);
		must(tbl_family_id(db, "i", "f", &a), "id i.f");
		must(tbl_family_id(db, "j", "f", &b), "id j.f");
		ok(a != b, "families of one name in two tables have different ids");
	}
}

/* ------------------------------------------------------------ sync */

/*
 * A write without TBL_SYNC, then the power goes: after the cut, only what
 * was fsynced is left.  With tbl_sync between the write and the cut, the
 * write must be there; without, it is gone (which shows the test can tell).
 */
static int survives_power_cut(const char *name, int sync)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct tbl_db *d, *saved = db;
	struct tbl_cell_stat st;
	int r, found;

	/* every unsynced byte lost (not each page by chance), so "gone" is certain */
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	d = open_db(name, fe);
	must(tbl_create_table(d, "t"), "create");   /* schema changes are synced */
	add_family(d, "t", "f", 0, 0, NULL);
	db = d;
	put("t", "r", "f", "q", 1, CELL_STRING, "v");
	r = sync ? tbl_sync(d) : 0;
	is_int(r, 0, "%s: tbl_sync", name);
	env_fault_power_cut_after(fe, 0);
	tbl_close(d);
	must(env_fault_drop_unsynced(fe), "drop unsynced");
	d = open_db(name, NULL);
	r = tbl_stat_cell(d, NULL, "t", "r", 1, "f", "q", 1, TBL_TS_NEWEST, &st);
	found = r == 0;
	tbl_close(d);
	env_fault_free(fe);
	db = saved;
	return found;
}

static void test_sync(void)
{
	diag("tbl_sync");
	ok(!survives_power_cut("nosync", 0), "without tbl_sync, an unsynced write is lost in a "
	   "power cut");
	ok(survives_power_cut("sync", 1), "tbl_sync after the write makes it survive the cut");
	is_int(tbl_sync(db), 0, "tbl_sync with nothing written");
	{
		struct kv_env *fe = env_fault_new(env_posix());
		struct tbl_db *d = open_db("syncfail", fe);

		env_fault_inject(fe, ENV_OP_SYNC, 0, -1, -EIO, NULL);
		is_int(tbl_sync(d), -EIO, "a failing fsync is returned by tbl_sync");
		env_fault_clear(fe);
		tbl_close(d);
		env_fault_free(fe);
	}
}

/* ------------------------------------------------------------ validators */

static void test_validators(void)
{
	char name[TBL_MAX_NAME + 2];

	diag("validators");
	is_int(tbl_check_table_name("flights"), 0, "a table name");
	is_int(tbl_check_table_name("a-b_c.d#e$f"), 0, "with every allowed punctuation");
	is_int(tbl_check_table_name(""), -EINVAL, "empty: -EINVAL");
	is_int(tbl_check_table_name("."), -EINVAL, ". : -EINVAL");
	is_int(tbl_check_table_name(".."), -EINVAL, ".. : -EINVAL");
	is_int(tbl_check_table_name("a/b"), -EINVAL, "a slash: -EINVAL");
	is_int(tbl_check_table_name("a b"), -EINVAL, "a space: -EINVAL");
	is_int(tbl_check_table_name(NULL), -EINVAL, "NULL: -EINVAL");
	memset(name, 't', TBL_MAX_NAME);
	name[TBL_MAX_NAME] = 0;
	is_int(tbl_check_table_name(name), 0, "511 characters");
	name[TBL_MAX_NAME] = 't';
	name[TBL_MAX_NAME + 1] = 0;
	is_int(tbl_check_table_name(name), -ENAMETOOLONG, "512: -ENAMETOOLONG");
	is_int(tbl_create_table(db, name), -ENAMETOOLONG, "and tbl_create_table agrees");

	is_int(tbl_check_family_name("meta-1_x.y"), 0, "a family name");
	is_int(tbl_check_family_name("a#b"), -EINVAL, "# is not allowed in a family: -EINVAL");
	is_int(tbl_check_family_name(""), -EINVAL, "empty family: -EINVAL");
	is_int(tbl_check_family_name(".."), -EINVAL, "..: -EINVAL");
	memset(name, 'f', TBL_MAX_FAMILY_NAME);
	name[TBL_MAX_FAMILY_NAME] = 0;
	is_int(tbl_check_family_name(name), 0, "64 characters");
	name[TBL_MAX_FAMILY_NAME] = 'f';
	name[TBL_MAX_FAMILY_NAME + 1] = 0;
	is_int(tbl_check_family_name(name), -ENAMETOOLONG, "65: -ENAMETOOLONG");

	{
		static char big[TBL_MAX_QUALIFIER + 1];

		is_int(tbl_check_row_key(big, 0), 0, "an empty row key");
		is_int(tbl_check_row_key(big, TBL_MAX_ROW_KEY), 0, "a 4096-byte row key");
		is_int(tbl_check_row_key(big, TBL_MAX_ROW_KEY + 1), -ENAMETOOLONG,
		       "4097: -ENAMETOOLONG");
		is_int(tbl_check_row_key(NULL, 1), -EINVAL, "NULL with a length: -EINVAL");
		is_int(tbl_check_row_key(NULL, 0), 0, "NULL with length 0 is the empty key");
		is_int(tbl_check_qualifier(big, TBL_MAX_QUALIFIER), 0, "a 16384-byte qualifier");
		is_int(tbl_check_qualifier(big, TBL_MAX_QUALIFIER + 1), -ENAMETOOLONG,
		       "16385: -ENAMETOOLONG");
		is_int(tbl_check_qualifier(NULL, 2), -EINVAL, "NULL qualifier with a length: "
		       "-EINVAL");
	}
}

/* ------------------------------------------------------------ listing large cells */

#define LC_BIG (1u << 20)

static uint64_t sst_bytes_read(void)
{
	struct kv_stats st;

	kv_get_stats(tbl_kv(db), &st);
	return st.bytes_read_sst;
}

/* Random bytes: they do not compress, so a table holds every byte of them. */
static void lc_fill(char *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(rand_next(seed) >> 56);
}

/* A scan of table lc's rows starting with prefix: keys_only, row_keys_only, or full. */
static struct tbl_scan *lc_scan(const char *prefix, int keys_only, int row_keys_only)
{
	struct tbl_read r;
	struct tbl_scan *s;

	memset(&r, 0, sizeof(r));
	r.keys_only = keys_only;
	r.row_keys_only = row_keys_only;
	r.prefix = prefix;
	r.prefix_len = strlen(prefix);
	must(tbl_scan_new(db, "lc", &r, &s), "tbl_scan_new");
	return s;
}

/*
 * What a front-end's readdir and getattr of a family of large cells cost:
 * 20 cells of 1 MiB (each a few bytes longer than the last, so each length
 * is its own), 4 string cells of 1 MiB and small numbers, flushed to the
 * tables, then, after a reopen (an empty cache), one cell deleted and one
 * added in the memtable.  tbl_columns, a keys_only scan and tbl_stat_cell
 * must give every cell's exact size -- text_size as tbl_get_cell's text
 * -- and not the deleted one, while reading far less than one cell's bytes
 * (bytes_read_sst: the tables' index, filter and properties, and the
 * blocks of the small cells); row_keys_only over rows of large cells reads
 * none of them.  A full scan, for contrast, reads them all.
 */
static void test_listing_cost(void)
{
	static const char *const numbers[][2] = {
		/* in qualifier order, as listings give them */
		{ "boolean", "true" }, { "byte", "7" }, { "f64", "2.5" }, { "i32", "123456" },
		{ "i64", "-9000000000000000000" },
	};
	char *val = xmalloc(LC_BIG + 64), q[32], row[16], expect[4096], got[4096];
	uint64_t seed = 99, before, cols_read, ko_read, stat_read, full_read, rko_read;
	struct tbl_columns *c;
	const struct tbl_column *col;
	struct tbl_scan *s;
	const struct tbl_row *rw;
	struct tbl_scan_counts counts;
	size_t n, o;
	int bad = 0;

	diag("listing large cells: what it reads");
	must(tbl_create_table(db, "lc"), "create lc");
	add_family(db, "lc", "f", 0, 0, NULL);
	add_family(db, "lc", "n", 0, 0, NULL);
	for (int i = 0; i < 20; i++) {
		struct cell_value v = { .type = i < 16 ? CELL_BYTES : CELL_STRING };

		lc_fill(val, LC_BIG + (size_t)i, &seed);
		if (i >= 16)
			for (size_t j = 0; j < LC_BIG + (size_t)i; j++)
				val[j] = (char)('a' + (unsigned char)val[j] % 26);   /* UTF-8 */
		v.v.data = slice_make(val, LC_BIG + (size_t)i);
		snprintf(q, sizeof(q), "q%02d", i);
		must(tbl_put(db, "lc", "big", 3, "f", q, strlen(q), 10, &v, 0), "put a large cell");
	}
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		enum cell_type t;

		must(cell_type_parse(slice_str(numbers[i][0]), &t), "type");
		must(tbl_put_text(db, "lc", "big", 3, "n", numbers[i][0], strlen(numbers[i][0]), 10,
				  t, numbers[i][1], strlen(numbers[i][1]), 0), "put a number");
	}
	/* rows of large cells, for row_keys_only */
	for (int i = 0; i < 8; i++) {
		snprintf(row, sizeof(row), "rows%02d", i);
		for (int j = 0; j < 3; j++) {
			struct cell_value v = { .type = CELL_BYTES };

			lc_fill(val, LC_BIG / 4, &seed);
			v.v.data = slice_make(val, LC_BIG / 4);
			snprintf(q, sizeof(q), "c%d", j);
			must(tbl_put(db, "lc", row, strlen(row), "f", q, strlen(q), 10, &v, 0),
			     "put a cell of a row");
		}
	}
	must(kv_flush(tbl_kv(db)), "flush");
	tbl_close(db);
	db = open_db("db", NULL);   /* an empty block cache: every block read is counted */
	{
		struct tbl_mutation del = { .op = TBL_DELETE_CELL, .family = "f", .qualifier = "q05",
					    .qualifier_len = 3 };
		struct cell_value v = { .type = CELL_BYTES };

		must(tbl_mutate_row(db, "lc", "big", 3, &del, 1, 0, NULL), "delete q05");
		lc_fill(val, LC_BIG + 20, &seed);
		v.v.data = slice_make(val, LC_BIG + 20);
		must(tbl_put(db, "lc", "big", 3, "f", "q20", 3, 10, &v, 0), "put q20");
	}

	/* what each cell's size must be: tbl_get_cell's text (read after the listings) */
	o = 0;
	expect[0] = 0;
	for (int i = 0; i <= 20; i++) {
		if (i == 5)
			continue;
		o += (size_t)snprintf(expect + o, sizeof(expect) - o, "f:q%02d %u %u;", i,
				      LC_BIG + i, LC_BIG + i + (i >= 16 && i < 20));
	}
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		o += (size_t)snprintf(expect + o, sizeof(expect) - o, "n:%s %zu;", numbers[i][0],
				      strlen(numbers[i][1]) + 1);

	/* tbl_columns of both families */
	before = sst_bytes_read();
	o = 0;
	for (int fam = 0; fam < 2; fam++) {
		must(tbl_columns_new(db, NULL, "lc", "big", 3, fam ? "n" : "f", NULL, 0, 0, 0, &c),
		     "tbl_columns_new");
		while (tbl_columns_next(c, &col) == 1) {
			if (fam)   /* a number: its text size (value_size is its width) */
				o += (size_t)snprintf(got + o, sizeof(got) - o, "n:%.*s %zu;",
						      (int)col->qualifier_len,
						      (const char *)col->qualifier, col->text_size);
			else
				o += (size_t)snprintf(got + o, sizeof(got) - o, "f:%.*s %zu %zu;",
						      (int)col->qualifier_len,
						      (const char *)col->qualifier, col->value_size,
						      col->text_size);
		}
		tbl_columns_free(c);
	}
	cols_read = sst_bytes_read() - before;
	is_str(got, expect, "listing large cells: tbl_columns gives every cell's exact value and "
	       "text size, not the deleted one");
	ok(cols_read < LC_BIG / 2, "listing large cells: and reads %llu SSTable bytes, far less "
	   "than one cell (of 21 MiB listed)", (unsigned long long)cols_read);

	/* a keys_only scan of the row */
	before = sst_bytes_read();
	s = lc_scan("big", 1, 0);
	o = 0;
	n = 0;
	while (tbl_scan_next(s, &rw) == 1)
		for (size_t i = 0; i < rw->ncells; i++, n++)
			if (rw->cells[i].family[0] == 'f')
				o += (size_t)snprintf(got + o, sizeof(got) - o, "%.*s %zu %d;",
						      (int)rw->cells[i].qualifier_len,
						      (const char *)rw->cells[i].qualifier,
						      rw->cells[i].value_size,
						      (int)rw->cells[i].value.type);
	tbl_scan_counts(s, &counts);
	tbl_scan_free(s);
	ko_read = sst_bytes_read() - before;
	o = 0;
	for (int i = 0; i <= 20; i++)
		if (i != 5)
			o += (size_t)snprintf(expect + o, sizeof(expect) - o, "q%02d %u %d;", i,
					      LC_BIG + i, i >= 16 && i < 20 ? CELL_STRING : CELL_BYTES);
	is_str(got, expect, "listing large cells: a keys_only scan gives each cell's type and "
	       "exact value_size");
	is_int(n, 25, "listing large cells: and the 5 numbers");
	ok(ko_read < LC_BIG / 2 && counts.bytes < 4096,
	   "listing large cells: it reads %llu SSTable bytes and is handed %llu bytes",
	   (unsigned long long)ko_read, (unsigned long long)counts.bytes);

	/* getattr of every cell */
	before = sst_bytes_read();
	for (int i = 0; i <= 20; i++) {
		struct tbl_cell_stat st;
		int rr;

		snprintf(q, sizeof(q), "q%02d", i);
		rr = stat_of("lc", "big", "f", q, TBL_TS_NEWEST, &st);
		if (i == 5)
			bad += rr != -ENOENT;
		else
			bad += rr != 0 || st.value_size != LC_BIG + (size_t)i ||
			       st.text_size != LC_BIG + (size_t)i + (i >= 16 && i < 20);
	}
	stat_read = sst_bytes_read() - before;
	is_int(bad, 0, "listing large cells: tbl_stat_cell gives each cell's sizes (and -ENOENT "
	       "for the deleted one)");
	ok(stat_read < LC_BIG / 2, "listing large cells: reading %llu SSTable bytes for 21 cells",
	   (unsigned long long)stat_read);
	bad = 0;
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		struct tbl_cell_stat st;
		const char *t = get_text(NULL, "lc", "big", "n", numbers[i][0], TBL_TS_NEWEST);

		bad += stat_of("lc", "big", "n", numbers[i][0], TBL_TS_NEWEST, &st) != 0 ||
		       st.text_size != strlen(t) || strncmp(t, numbers[i][1], strlen(numbers[i][1]));
	}
	is_int(bad, 0, "listing large cells: a number's text_size is the length of its text");

	/* row_keys_only over the rows of large cells */
	before = sst_bytes_read();
	s = lc_scan("rows", 0, 1);
	n = 0;
	while (tbl_scan_next(s, &rw) == 1)
		n += rw->ncells == 0;
	tbl_scan_free(s);
	rko_read = sst_bytes_read() - before;
	is_int(n, 8, "listing large cells: row_keys_only lists the 8 rows");
	ok(rko_read < LC_BIG / 4, "listing large cells: reading %llu SSTable bytes, less than one "
	   "of their 24 cells", (unsigned long long)rko_read);

	/* the contrast: a full read of the row */
	before = sst_bytes_read();
	s = lc_scan("big", 0, 0);
	while (tbl_scan_next(s, &rw) == 1)
		;
	tbl_scan_free(s);
	full_read = sst_bytes_read() - before;
	ok(full_read >= 19u * LC_BIG, "listing large cells: a full scan of the row reads %llu "
	   "SSTable bytes: all 19 tabled cells", (unsigned long long)full_read);
	diag("SSTable bytes read: columns %llu, keys_only scan %llu, 21 stats %llu, "
	     "row_keys_only %llu, full scan %llu", (unsigned long long)cols_read,
	     (unsigned long long)ko_read, (unsigned long long)stat_read,
	     (unsigned long long)rko_read, (unsigned long long)full_read);
	free(val);
}

int main(void)
{
	plan(314);
	make_tmpdir();
	db = open_db("db", NULL);
	test_cells();
	test_rows();
	test_columns();
	test_listing_cost();
	test_start_exclusive();
	test_rename();
	test_convert();
	test_rename_version();
	test_ids();
	test_sync();
	test_validators();
	tbl_close(db);
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return exit_status();
}
