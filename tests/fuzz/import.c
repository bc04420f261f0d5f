/*
 * import.c -- fuzz target for smolctl's import of JSON lines (tools/tio.c
 * and the strict JSON parser it reads each line with, tools/json.c).
 *   - Every line that json_parse accepts is written back out with the
 *     writing helpers (json_put_string; numbers as their text) and parses
 *     again to the same tree: same types, same decoded strings and keys,
 *     same number texts, in the same order.  A refused line is -EINVAL
 *     with an offset inside the line.
 *   - The whole input, imported in a dry run with --create into a database
 *     made once per process, returns 0 when no line was bad and -EINVAL
 *     when some were, never anything else; it counts every byte when it
 *     returns 0 (no more when it stops early), no more bad lines than
 *     lines, and at least one report per bad line.  The database holds a
 *     table "fuzz" with a family named after each type ("i64", "f64"...),
 *     for the Smoltable payloads (whose table is given, not declared).
 *     A dry run writes nothing, so one input cannot change the next.
 */
#include "fuzz.h"
#include "json.h"
#include "testutil.h"
#include "tio.h"
#include "util.h"

#include <errno.h>
#include <string.h>

static void put_json(struct buf *b, const struct json_value *v)
{
	switch (v->type) {
	case JSON_NULL:
		buf_append(b, "null", 4);
		break;
	case JSON_FALSE:
		buf_append(b, "false", 5);
		break;
	case JSON_TRUE:
		buf_append(b, "true", 4);
		break;
	case JSON_NUMBER:
		buf_append(b, v->u.text, v->len);
		break;
	case JSON_STRING:
		FUZZ_CHECK(json_put_string(b, v->u.text, v->len) == 0, "a parsed string is not UTF-8");
		break;
	case JSON_ARRAY:
		buf_append(b, "[", 1);
		for (size_t i = 0; i < v->len; i++) {
			if (i)
				buf_append(b, ",", 1);
			put_json(b, &v->u.items[i]);
		}
		buf_append(b, "]", 1);
		break;
	case JSON_OBJECT:
		buf_append(b, "{", 1);
		for (size_t i = 0; i < v->len; i++) {
			if (i)
				buf_append(b, ",", 1);
			FUZZ_CHECK(json_put_string(b, v->u.members[i].key, v->u.members[i].key_len) == 0,
				   "a parsed key is not UTF-8");
			buf_append(b, ":", 1);
			put_json(b, &v->u.members[i].value);
		}
		buf_append(b, "}", 1);
		break;
	default:
		FUZZ_CHECK(0, "a value of type %d", (int)v->type);
	}
}

static int bytes_eq(const char *a, const char *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

static int same_tree(const struct json_value *a, const struct json_value *b)
{
	if (a->type != b->type || a->len != b->len)
		return 0;
	switch (a->type) {
	case JSON_NUMBER:
	case JSON_STRING:
		return bytes_eq(a->u.text, b->u.text, a->len);
	case JSON_ARRAY:
		for (size_t i = 0; i < a->len; i++)
			if (!same_tree(&a->u.items[i], &b->u.items[i]))
				return 0;
		return 1;
	case JSON_OBJECT:
		for (size_t i = 0; i < a->len; i++) {
			const struct json_member *x = &a->u.members[i], *y = &b->u.members[i];

			if (x->key_len != y->key_len || !bytes_eq(x->key, y->key, x->key_len) ||
			    !same_tree(&x->value, &y->value))
				return 0;
		}
		return 1;
	default:
		return 1;
	}
}

static void json_round_trip(const char *line, size_t n)
{
	struct json_parser ps, ps2;
	const struct json_value *v, *v2;
	struct json_error err;
	struct buf out = { 0 };
	int r;

	json_parser_init(&ps, 0);
	r = json_parse(&ps, line, n, &v, &err);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL, "json_parse returned %d", r);
		FUZZ_CHECK(err.offset <= n, "refused at offset %zu of %zu", err.offset, n);
		json_parser_free(&ps);
		return;
	}
	put_json(&out, v);
	json_parser_init(&ps2, 0);
	r = json_parse(&ps2, out.data, out.len, &v2, &err);
	FUZZ_CHECK(r == 0, "the written form of a parsed line is refused: %s at %zu (%.*s)", err.msg,
		   err.offset, (int)out.len, out.data);
	FUZZ_CHECK(same_tree(v, v2), "the written form parses to another tree (%.*s)", (int)out.len,
		   out.data);
	json_parser_free(&ps2);
	json_parser_free(&ps);
	buf_free(&out);
}

static struct tbl_db *db;

static void close_db(void)
{
	tbl_close(db);
	rm_rf(tmpdir);
}

static void count_report(void *arg, const char *source, uint64_t line, const char *msg)
{
	(*(uint64_t *)arg)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tio_import_options o = { .dry_run = 1, .create = 1, .table = "fuzz",
					 .batch_bytes = 64 << 10, .max_line = 1 << 20 };
	struct tio_stats st;
	uint64_t reports = 0;
	const char *p = (const char *)data, *end = p + size;
	FILE *in;
	int r;

	if (size > 1 << 16)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		json_round_trip(p, n);
		p += n + 1;
	}

	if (!db) {
		struct tbl_options to;

		make_tmpdir("fuzz-import");
		tbl_options_init(&to);
		to.kv.create_if_missing = 1;
		r = tbl_open(tmpdir, &to, &db);
		FUZZ_CHECK(r == 0, "cannot open a database in %s (%d)", tmpdir, r);
		atexit(close_db);
		/* the table Smoltable payloads go to, with a family of each type */
		FUZZ_CHECK(tbl_create_table(db, "fuzz") == 0, "creating the table");
		for (enum cell_type ty = CELL_STRING; ty <= CELL_TYPE_MAX; ty++) {
			struct tbl_family_settings fs;

			tbl_family_settings_init(&fs);
			fs.type = ty;
			FUZZ_CHECK(tbl_add_family(db, "fuzz", cell_type_name(ty), &fs) == 0,
				   "adding a family");
		}
	}
	if (size == 0)
		return 0;   /* fmemopen takes no empty buffer */
	in = fmemopen((void *)data, size, "r");
	FUZZ_CHECK(in != NULL, "fmemopen");
	r = tio_import(db, in, "fuzz", &o, count_report, &reports, &st, NULL);
	fclose(in);
	FUZZ_CHECK(r == 0 || r == -EINVAL, "import returned %d: %s", r, tio_strerror(r));
	FUZZ_CHECK((r == -EINVAL) == (st.bad_lines > 0), "import returned %d with %llu bad lines",
		   r, (unsigned long long)st.bad_lines);
	FUZZ_CHECK(st.bytes <= size && (r != 0 || st.bytes == size), "%llu bytes counted of %zu",
		   (unsigned long long)st.bytes, size);
	FUZZ_CHECK(st.bad_lines <= st.lines, "more bad lines than lines");
	FUZZ_CHECK(reports >= st.bad_lines, "%llu reports for %llu bad lines",
		   (unsigned long long)reports, (unsigned long long)st.bad_lines);
	return 0;
}
