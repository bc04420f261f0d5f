/*
 * tio.c -- table import and export as JSON lines (tio.h): the format's
 * writer (export, tio_write_row), its reader and validator (import), and
 * the reader of Smoltable's write payload.  Import streams: it holds one
 * line (or one Smoltable item) and one batch of rows at a time.
 *
 * THE FORMAT (smolctl's JSON lines; copied into smolctl(1))
 *
 * UTF-8 text, one JSON object (RFC 8259) per line, each line ended by "\n".
 * A line is either a schema line, one per table, before the table's rows:
 *
 *   {"table":"T","families":{"F":{"type":"i64","max_versions":0,"ttl":0,
 *    "locality_group":"default","compression":1},...}}
 *
 * or a row line, one per row (shown folded here; it is one line):
 *
 *   {"table":"T","row":"KEY","cells":[{"family":"F","qualifier":"Q",
 *    "ts":1706140800000000,"type":"i64","value":51000000},...]}
 *
 * Export writes exactly this, and always the same bytes for the same
 * contents, so that export -> import into an empty database -> export gives
 * byte-identical output:
 *   - tables in byte order of their names, each as its schema line followed
 *     by its rows in row-key order (a table with no rows, or none with the
 *     prefix, still has its schema line);
 *   - in a schema line, families in byte order of their names, each with all
 *     five settings in the order shown: type (the family's default type),
 *     max_versions (0: unlimited), ttl (seconds, 0: forever),
 *     locality_group, compression (0: none, else the zstd level);
 *   - in a row line, the keys in the order shown, and the cells in the table
 *     layer's order: by family name, then qualifier (byte order), then newest
 *     version first; every visible version of every cell (what reads show:
 *     versions beyond max_versions or older than the ttl are not exported);
 *   - no whitespace outside strings;
 *   - strings as JSON strings: '"' and '\' escaped, the control characters
 *     U+0000..U+001F as \b \t \n \f \r or \u00XX (lower-case hex), every
 *     other character (U+007F and all non-ASCII ones included) as its own
 *     UTF-8 bytes, never as \u;
 *   - a row key that is not valid UTF-8 is written as "row_b64" in place of
 *     "row", a qualifier as "qualifier_b64" in place of "qualifier": standard
 *     base64 (RFC 4648 section 4, with "=" padding);
 *   - "ts": the version's timestamp in microseconds since the epoch;
 *   - "type": the cell's own type, which is stored with every version and
 *     may differ from its family's (after a change of the family's type):
 *     string, bytes, boolean, byte, i32, i64, f32 or f64;
 *   - the value, by type:
 *       string          "value": a JSON string
 *       bytes           "value_b64": standard base64 (always, even when the
 *                       bytes happen to be UTF-8)
 *       boolean         "value": true or false
 *       byte, i32, i64  "value": a JSON integer in decimal
 *       f32, f64        "value": a JSON number, the shortest text that reads
 *                       back to the same value (smolfs(5), as cat shows it):
 *                       0.1, 100, 1e+16, 1e-05, -0; and NaN and the
 *                       infinities, which JSON numbers cannot express, as the
 *                       strings "nan", "inf" and "-inf" (a NaN's sign and
 *                       payload are not kept).
 *
 * Import reads those lines.  Where it is lenient it cannot lose anything:
 *   - whitespace between tokens, the keys of an object in any order, empty
 *     and blank lines (skipped), CR before LF, and a last line without its
 *     "\n" if it is complete;
 *   - in a schema line every setting is optional (absent: the defaults of
 *     smolctl add-family: string, 0, 0, "default", 1);
 *   - in a row line: "row" or "row_b64" (exactly one); "cells" (may be []);
 *     in a cell: "family"; "qualifier" or "qualifier_b64" (exactly one);
 *     "ts" optional (absent: the server's current time, one for the whole
 *     row; else an integer below 2^64 - 1); "type" optional (absent: the
 *     family's type); "value" or, for bytes and only for bytes,
 *     "value_b64".
 * and strict everywhere else: an unknown key, a key given twice, a missing
 * one, or a JSON value of the wrong kind makes the line bad, and so does a
 * value that is not exactly of its type: integers must be JSON integers in
 * range (1.0, 1e3 and "42" are refused; byte is 0..255), booleans true or
 * false, floats any JSON number (rounded to the nearest f32/f64 as strtod
 * does; a finite number too large for the type is refused rather than
 * turned into infinity) or one of the strings "nan", "inf", "-inf"; base64
 * must be canonical (padding, no whitespace, unused bits zero).  The JSON
 * itself must be strict RFC 8259 (tools/json.h): valid UTF-8, control
 * characters escaped, no comments, NaN, trailing commas or leading zeros.
 *
 * Types: a cell is stored with the type its line gives, whatever its
 * family's type: a family's type is only the default for new cells (cells
 * of other types are legal in it, and an export of such a family must
 * import as it was), so "wrong type" means an unknown type name or a value
 * that is not one of the type named.
 *
 * Tables and families: every row line names its table, which must exist,
 * and each cell's family must be a live family of it.  A schema line
 * checks that its table and families exist; with --create (create) it
 * creates those that are missing, with the line's settings; the settings
 * of existing families are left as they are (smolctl alter-family changes
 * them).  Without --create a missing table or family makes the schema line
 * bad, and each row line that needs it.
 *
 * Limits: a line holds at most TIO_MAX_LINE (300 MiB) bytes; a row key at
 * most 4 KiB, a qualifier 16 KiB, a value the database's maximum value size
 * (10 MiB by default); a row must fit one atomic write (about 200 MiB).
 *
 * Errors: each line that breaks a rule is reported (source, line number,
 * and what is wrong -- with the column for a JSON syntax error), nothing of
 * it is written, and the import goes on with the next line; the result is
 * -EINVAL if any line was bad.  A last line cut short (no "\n" and not
 * complete JSON) is reported as truncated.  Each row is applied atomically;
 * rows are gathered into batches of about batch_bytes of keys and values
 * (tbl_write_rows), and nothing is atomic across batches: an import stopped
 * by an I/O error leaves a prefix of its rows written.  A dry run reads and
 * checks everything in the same way, with the same reports, and writes
 * nothing at all (not even the tables and families --create would make;
 * the rows after such a schema line are checked against it).  The counts:
 * lines read, rows and cells written (good row lines, with or without
 * cells), lines rejected, bytes read.
 *
 * THE SMOLTABLE PAYLOAD
 *
 * If the first non-whitespace character of the input opens an object whose
 * first key is "items", the input is one JSON document in Smoltable's write
 * format instead, spanning any number of lines:
 *
 *   {"items":[{"row_key":"KEY","cells":[{"column_key":"fam:qual",
 *    "type":"i64","value":51000000,"time":1706140800000000000},...]},...]}
 *
 * Its rows all go to the table given (smolctl import --table, required).
 * column_key is split at its first ':' into family and qualifier (no ':',
 * or nothing after it: the empty qualifier).  "time" is nanoseconds since
 * the epoch (Smoltable's unit; any non-negative integer up to 128 bits) and
 * is divided by 1000 and rounded down to our microseconds:
 * 1706140800123456789 ns is stored as 1706140800123456 us; absent, the
 * server's current time.  "type" is required; Smoltable's types are string,
 * boolean, byte, i32, i64, f32 and f64, which are ours with the same
 * meaning, and our "bytes" (with "value_b64") is taken too; any other name
 * is reported.  Values are read as in our lines.  Each item is a row: if it
 * is bad it is reported with the line on which it begins (a JSON syntax
 * error with the line where it is, the message naming the item's first
 * line), and nothing of it is written.  Unknown keys are refused at every level; after the items
 * array only "}" and whitespace may follow.  A payload that breaks the
 * document's structure (not an item inside it) is reported and stops the
 * import, since no later item can be found reliably.
 */
#include "tio.h"
#include "json.h"
#include "tutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROGRESS_STEP (1u << 20)
#define MAX_BATCH_BYTES (64u << 20)
#define READ_CHUNK (1u << 20)
#define SHOW_MAX 48

/* Returned by the line handlers for a line reported as bad (not an error of the import). */
#define BAD 1

/* The largest ttl the table layer takes (table.c: ttl * 10^6 us must not overflow). */
#define MAX_TTL (UINT64_MAX / 2 / 1000000u)

/* ------------------------------------------------------------ errors */

/*
 * The sentence for tio's own errors (a failed write of the export, a value
 * that does not render), kept with its code for this thread; errors that
 * come from the table layer pass through with the engine's sentence.
 * Cleared at the start of each public call, so it never outlives its call.
 */
static __thread int last_err;
static __thread char last_msg[1024];

__attribute__((format(printf, 2, 3)))
static int tio_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	last_err = err;
	return err;
}

static void clear_error(void)
{
	last_err = 0;
	last_msg[0] = 0;
}

const char *tio_strerror(int err)
{
	if (err < 0 && err == last_err)
		return last_msg;
	return kv_strerror(err);
}

/* ------------------------------------------------------------ shared helpers */

/* Bytes for a message: printable ASCII as is, the rest as \xNN, cut at SHOW_MAX bytes. */
static const char *shown(char *out, size_t size, const void *p, size_t n)
{
	const unsigned char *s = p;
	size_t o = 0, i;

	for (i = 0; i < n && i < SHOW_MAX && o + 8 < size; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' && s[i] != '"')
			out[o++] = (char)s[i];
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", s[i]);
	}
	if (i < n && o + 4 < size) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
	return out;
}

#define SHOWN_BUF (SHOW_MAX * 4 + 8)

static int write_out(FILE *out, const struct buf *b)
{
	if (b->len && fwrite(b->data, 1, b->len, out) != b->len)
		return tio_error(-EIO, "writing the export: %s", strerror(errno ? errno : EIO));
	return 0;
}

/* ------------------------------------------------------------ export */

static void put_lit(struct buf *b, const char *s)
{
	tool_buf_append(b, s, strlen(s));
}

static void put_u64(struct buf *b, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);

	tool_buf_append(b, num, (size_t)n);
}

/* "name":"utf-8" or "name_b64":"base64" */
static void put_bytes_field(struct buf *b, const char *name, const void *p, size_t n)
{
	size_t mark = b->len;

	tool_buf_append(b, "\"", 1);
	put_lit(b, name);
	tool_buf_append(b, "\":", 2);
	if (json_put_string(b, p, n) == 0)
		return;
	b->len = mark;
	tool_buf_append(b, "\"", 1);
	put_lit(b, name);
	tool_buf_append(b, "_b64\":", 6);
	json_put_base64(b, p, n);
}

/* "type":"t","value":... for one cell value; -EINVAL if it is invalid. */
static int put_value(struct buf *b, const struct cell_value *v, struct buf *scratch)
{
	const char *tn = cell_type_name(v->type);
	char num[32];
	int n;

	if (!tn)
		return tio_error(-EINVAL, "a cell of invalid type %d", (int)v->type);
	put_lit(b, "\"type\":\"");
	put_lit(b, tn);
	tool_buf_append(b, "\",", 2);
	switch (v->type) {
	case CELL_STRING:
		put_lit(b, "\"value\":");
		if (json_put_string(b, v->v.data.data, v->v.data.len))
			return tio_error(-EINVAL, "a string cell that is not UTF-8");
		return 0;
	case CELL_BYTES:
		put_lit(b, "\"value_b64\":");
		json_put_base64(b, v->v.data.data, v->v.data.len);
		return 0;
	case CELL_BOOLEAN:
		put_lit(b, v->v.boolean ? "\"value\":true" : "\"value\":false");
		return 0;
	case CELL_BYTE:
		n = snprintf(num, sizeof(num), "\"value\":%u", (unsigned)v->v.byte);
		break;
	case CELL_I32:
		n = snprintf(num, sizeof(num), "\"value\":%ld", (long)v->v.i32);
		break;
	case CELL_I64:
		n = snprintf(num, sizeof(num), "\"value\":%lld", (long long)v->v.i64);
		break;
	default:   /* f32, f64: the shortest round-trip text of cell_render */
		tool_buf_clear(scratch);
		if (cell_render(scratch, v) < 0 || scratch->len < 2)
			return tio_error(-EINVAL, "a %s cell that does not render", tn);
		scratch->len--;   /* its "\n" */
		put_lit(b, "\"value\":");
		if (scratch->data[scratch->len - 1] == 'n' || scratch->data[scratch->len - 1] == 'f') {
			/* "nan", "inf", "-inf": not JSON numbers */
			tool_buf_append(b, "\"", 1);
			tool_buf_append(b, scratch->data, scratch->len);
			tool_buf_append(b, "\"", 1);
		} else {
			tool_buf_append(b, scratch->data, scratch->len);
		}
		return 0;
	}
	tool_buf_append(b, num, (size_t)n);
	return 0;
}

/* Append the row line of row (its "\n" included) to b. */
static int format_row(struct buf *b, const char *table, const struct tbl_row *row,
		      struct buf *scratch)
{
	int r;

	put_lit(b, "{\"table\":");
	json_put_string(b, table, strlen(table));
	tool_buf_append(b, ",", 1);
	put_bytes_field(b, "row", row->key, row->key_len);
	put_lit(b, ",\"cells\":[");
	for (size_t i = 0; i < row->ncells; i++) {
		const struct tbl_cell *c = &row->cells[i];

		if (i)
			tool_buf_append(b, ",", 1);
		put_lit(b, "{\"family\":");
		json_put_string(b, c->family, strlen(c->family));
		tool_buf_append(b, ",", 1);
		put_bytes_field(b, "qualifier", c->qualifier, c->qualifier_len);
		put_lit(b, ",\"ts\":");
		put_u64(b, c->ts);
		tool_buf_append(b, ",", 1);
		r = put_value(b, &c->value, scratch);
		if (r) {
			char rt[SHOWN_BUF], why[sizeof(last_msg)];

			snprintf(why, sizeof(why), "%s", tio_strerror(r));
			return tio_error(r, "table %s, row \"%s\", family %s: %s", table,
					 shown(rt, sizeof(rt), row->key, row->key_len), c->family,
					 why);
		}
		tool_buf_append(b, "}", 1);
	}
	put_lit(b, "]}\n");
	return 0;
}

int tio_write_row(FILE *out, const char *table, const struct tbl_row *row)
{
	struct buf b = BUF_INIT, scratch = BUF_INIT;
	int r;

	clear_error();
	r = format_row(&b, table, row, &scratch);
	if (r == 0)
		r = write_out(out, &b);
	tool_buf_free(&b);
	tool_buf_free(&scratch);
	return r;
}

/* The schema line of table (its "\n" included). */
static int format_schema(struct tbl_db *db, const char *table, struct buf *b)
{
	char **fams = NULL;
	size_t n = 0;
	int r = tbl_list_families(db, table, &fams, &n);

	if (r)
		return r;
	put_lit(b, "{\"table\":");
	json_put_string(b, table, strlen(table));
	put_lit(b, ",\"families\":{");
	for (size_t i = 0; i < n; i++) {
		struct tbl_family_settings s;

		r = tbl_get_family(db, table, fams[i], &s);
		if (r)
			break;
		if (i)
			tool_buf_append(b, ",", 1);
		json_put_string(b, fams[i], strlen(fams[i]));
		put_lit(b, ":{\"type\":\"");
		put_lit(b, cell_type_name(s.type) ? cell_type_name(s.type) : "?");
		put_lit(b, "\",\"max_versions\":");
		put_u64(b, s.max_versions);
		put_lit(b, ",\"ttl\":");
		put_u64(b, s.ttl);
		put_lit(b, ",\"locality_group\":");
		json_put_string(b, s.locality_group, strlen(s.locality_group));
		put_lit(b, ",\"compression\":");
		put_u64(b, (uint64_t)(s.compression < 0 ? 0 : s.compression));
		tool_buf_append(b, "}", 1);
	}
	put_lit(b, "}}\n");
	tbl_free_names(fams, n);
	return r;
}

struct exporter {
	FILE *out;
	struct tio_stats st;
	const struct tio_progress *p;
	uint64_t next_progress;
	struct buf line, scratch;
};

static int emit(struct exporter *e)
{
	int r = write_out(e->out, &e->line);

	if (r)
		return r;
	e->st.lines++;
	e->st.bytes += e->line.len;
	tool_buf_clear(&e->line);
	if (e->p && e->p->fn && e->st.bytes >= e->next_progress) {
		e->p->fn(e->p->arg, e->st.bytes, 0);
		e->next_progress = e->st.bytes + PROGRESS_STEP;
	}
	if (e->p && e->p->stop && *e->p->stop)
		return tio_error(-EINTR, "the export was interrupted after %llu lines",
				 (unsigned long long)e->st.lines);
	return 0;
}

static int export_table(struct tbl_db *db, struct exporter *e, const char *table,
			const struct tbl_snapshot *snap, const void *prefix, size_t prefix_len)
{
	struct tbl_scan *scan = NULL;
	const struct tbl_row *row;
	struct tbl_read rd;
	int r;

	r = format_schema(db, table, &e->line);
	if (r == 0)
		r = emit(e);
	if (r)
		return r;
	memset(&rd, 0, sizeof(rd));
	rd.snapshot = snap;
	rd.prefix = prefix;
	rd.prefix_len = prefix ? prefix_len : 0;
	r = tbl_scan_new(db, table, &rd, &scan);
	if (r)
		return r;
	while ((r = tbl_scan_next(scan, &row)) == 1) {
		r = format_row(&e->line, table, row, &e->scratch);
		if (r == 0)
			r = emit(e);
		if (r)
			break;
		e->st.rows++;
		e->st.cells += row->ncells;
	}
	tbl_scan_free(scan);
	return r;
}

int tio_export(struct tbl_db *db, const char *table, const void *prefix, size_t prefix_len,
	       FILE *out, struct tio_stats *st, const struct tio_progress *p)
{
	struct exporter e;
	const struct tbl_snapshot *snap;
	char **names = NULL;
	size_t n = 0;
	int r;

	clear_error();
	memset(&e, 0, sizeof(e));
	e.out = out;
	e.p = p;
	if (table) {
		r = tbl_table_exists(db, table);
		if (r)
			return r;
	} else {
		r = tbl_list_tables(db, &names, &n);
		if (r)
			return r;
	}
	snap = tbl_snapshot_new(db);
	if (table) {
		r = export_table(db, &e, table, snap, prefix, prefix_len);
	} else {
		for (size_t i = 0; i < n && r == 0; i++) {
			r = export_table(db, &e, names[i], snap, prefix, prefix_len);
			/* dropped since it was listed: it is not in the export */
			if (r == -ENOENT && tbl_table_exists(db, names[i]) == -ENOENT)
				r = 0;
		}
	}
	tbl_snapshot_release(db, snap);
	tbl_free_names(names, n);
	if (r == 0 && fflush(out) != 0)
		r = tio_error(-EIO, "writing the export: %s", strerror(errno ? errno : EIO));
	if (r == 0 && p && p->fn)
		p->fn(p->arg, e.st.bytes, e.st.bytes);
	if (st)
		*st = e.st;
	tool_buf_free(&e.line);
	tool_buf_free(&e.scratch);
	return r;
}

/* ------------------------------------------------------------ import: the input */

/*
 * The input buffer: data[pos..len) is read but not consumed.  Lines are
 * found with memchr from `scanned`, so a long line is not searched again
 * each time more of it arrives.
 */
struct reader {
	FILE *in;
	const volatile sig_atomic_t *stop;   /* tio_progress.stop */
	char *data;
	size_t cap, pos, len, scanned;
	int eof;
	size_t max_line;       /* longer lines are skipped (LINE_TOO_LONG) */
	uint64_t consumed;     /* bytes handed out (lines with their "\n") */
};

/* Read more: room is made by moving data[pos..len) to the front, or by growing. */
static int rd_fill(struct reader *rd, size_t max_keep)
{
	size_t got;

	if (rd->eof)
		return 0;
	if (rd->pos) {
		memmove(rd->data, rd->data + rd->pos, rd->len - rd->pos);
		rd->len -= rd->pos;
		rd->scanned -= rd->pos;
		rd->pos = 0;
	}
	if (rd->cap - rd->len < READ_CHUNK / 2) {
		size_t cap = rd->cap ? rd->cap * 2 : READ_CHUNK;

		if (cap > max_keep + READ_CHUNK)
			cap = max_keep + READ_CHUNK;
		if (cap < rd->len + READ_CHUNK / 2)
			cap = rd->len + READ_CHUNK / 2;   /* never read into no room: 0 is EOF */
		if (cap > rd->cap) {
			rd->data = tool_realloc(rd->data, cap);
			rd->cap = cap;
		}
	}
	for (;;) {
		errno = 0;
		got = fread(rd->data + rd->len, 1, rd->cap - rd->len, rd->in);
		if (!ferror(rd->in) || errno != EINTR)
			break;
		/* a signal interrupted the read: stop if asked to, else read on */
		clearerr(rd->in);
		if (got)
			break;
		if (rd->stop && *rd->stop)
			return tio_error(-EINTR, "reading the input: interrupted");
	}
	rd->len += got;
	if (got == 0) {
		if (ferror(rd->in))
			return tio_error(-EIO, "reading the input: %s", strerror(errno ? errno : EIO));
		rd->eof = 1;
	}
	return 0;
}

enum { LINE_OK = 1, LINE_LAST = 2, LINE_TOO_LONG = 3 };

/*
 * The next line: LINE_OK (ended by "\n", which is not part of it),
 * LINE_LAST (the input's last bytes, without "\n"), LINE_TOO_LONG (longer
 * than rd->max_line: skipped up to its "\n", *n is what was seen of it), 0
 * at the end of the input, or < 0 on a read error.  *line is valid until
 * the next call.
 */
static int rd_line(struct reader *rd, const char **line, size_t *n)
{
	for (;;) {
		char *nl = rd->scanned < rd->len
			? memchr(rd->data + rd->scanned, '\n', rd->len - rd->scanned) : NULL;
		int r;

		if (nl) {
			*line = rd->data + rd->pos;
			*n = (size_t)(nl - *line);
			rd->consumed += *n + 1;
			rd->pos = rd->scanned = (size_t)(nl - rd->data) + 1;
			return *n > rd->max_line ? LINE_TOO_LONG : LINE_OK;
		}
		rd->scanned = rd->len;
		if (rd->len - rd->pos > rd->max_line) {
			/* skip the rest of it without keeping it */
			size_t seen = rd->len - rd->pos;

			for (;;) {
				rd->consumed += rd->len - rd->pos;
				rd->pos = rd->scanned = rd->len;
				r = rd_fill(rd, 0);
				if (r < 0)
					return r;
				if (rd->len == rd->pos)
					break;
				nl = memchr(rd->data + rd->pos, '\n', rd->len - rd->pos);
				if (nl) {
					seen += (size_t)(nl - (rd->data + rd->pos));
					rd->consumed += (size_t)(nl - (rd->data + rd->pos)) + 1;
					rd->pos = rd->scanned = (size_t)(nl - rd->data) + 1;
					break;
				}
				seen += rd->len - rd->pos;
			}
			*n = seen;
			return LINE_TOO_LONG;
		}
		if (rd->eof) {
			if (rd->pos == rd->len)
				return 0;
			*line = rd->data + rd->pos;
			*n = rd->len - rd->pos;
			rd->consumed += *n;
			rd->pos = rd->scanned = rd->len;
			return *n > rd->max_line ? LINE_TOO_LONG : LINE_LAST;
		}
		r = rd_fill(rd, rd->max_line + 1);
		if (r < 0)
			return r;
	}
}

/* ------------------------------------------------------------ import: the schema */

struct fam {
	char *name;
	enum cell_type type;
};

struct tab {
	char *name;
	int exists;               /* in the database (or created by this dry run) */
	struct fam *fams;
	size_t nfams;
	struct tab *next;
};

/* ------------------------------------------------------------ import: the batch */

/* A cell of the batch: its bytes are offsets into pending.arena until the write. */
struct pcell {
	const char *family;       /* a struct fam's name: stable for the whole import */
	size_t q_off, q_len;
	uint64_t ts;
	struct cell_value v;      /* string/bytes: v.v.data.data is NULL, the bytes at v_off */
	size_t v_off;
};

struct prow {
	size_t key_off, key_len;
	size_t c0, nc;            /* cells[c0..c0+nc) */
	uint64_t line;
};

struct pending {
	struct tab *tab;          /* the table of every row in it */
	struct buf arena;
	size_t key_bytes;         /* row key bytes the cells' kv keys will repeat */
	struct prow *rows;
	size_t nrows, caprows;
	struct pcell *cells;
	size_t ncells, capcells;
	/* what tbl_write_rows gets, rebuilt at each write */
	struct tbl_row_mutations *rm;
	struct tbl_mutation *m;
	size_t caprm, capm;
};

struct importer {
	struct tbl_db *db;
	int dry_run, create;
	size_t batch_bytes, max_value;
	unsigned flags;
	const char *table;        /* for a Smoltable payload */
	const char *source;
	tio_report_fn report;
	void *report_arg;
	struct tio_stats st;
	const struct tio_progress *p;
	uint64_t next_progress, total;
	struct reader rd;
	struct json_parser ps;
	struct tab *tabs, *last_tab;
	struct tab *missing;      /* the last table looked up that does not exist */
	struct pending pend;
	int unsynced;             /* the last write was not synced */
	int ends_line;            /* Smoltable: the last byte passed was a newline */
	uint64_t last_bad;        /* the line last counted in bad_lines (0: none) */
};

__attribute__((format(printf, 3, 4)))
static int bad(struct importer *im, uint64_t line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/*
	 * bad_lines counts lines, as its name says and smolctl prints it next
	 * to the lines read: a line with several problems (a Smoltable payload
	 * may hold many items on one line) is rejected once, though each
	 * problem is reported.
	 */
	if (line != im->last_bad) {
		im->st.bad_lines++;
		im->last_bad = line;
	}
	if (im->report)
		im->report(im->report_arg, im->source, line, msg);
	return BAD;
}

/* Asked to stop (tio_progress.stop)?  Checked between lines and items only. */
static int stopped(struct importer *im)
{
	return im->p && im->p->stop && *im->p->stop;
}

static void progress(struct importer *im)
{
	if (im->p && im->p->fn && im->rd.consumed >= im->next_progress) {
		im->p->fn(im->p->arg, im->rd.consumed, im->total);
		im->next_progress = im->rd.consumed + PROGRESS_STEP;
	}
}

static void free_tab(struct tab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nfams; i++)
		free(t->fams[i].name);
	free(t->fams);
	free(t->name);
	free(t);
}

static void free_tabs(struct importer *im)
{
	struct tab *t = im->tabs;

	while (t) {
		struct tab *next = t->next;

		free_tab(t);
		t = next;
	}
	free_tab(im->missing);
	im->tabs = im->last_tab = im->missing = NULL;
}

static void add_fam(struct tab *t, const char *name, enum cell_type type)
{
	t->fams = tool_realloc(t->fams, (t->nfams + 1) * sizeof(*t->fams));
	t->fams[t->nfams].name = tool_strdup(name);
	t->fams[t->nfams].type = type;
	t->nfams++;
}

/*
 * The cached schema of table name[0..len), loaded from the database the
 * first time.  A table that does not exist is not cached (a stream of lines
 * naming ever new tables must not grow a list): it comes back in
 * im->missing, which the next lookup reuses, unless a schema line adopts it
 * (adopt_tab).  NULL only with *err set, for a database error.
 */
static struct tab *find_tab(struct importer *im, const char *name, size_t len, int *err)
{
	struct tab *t;
	char **fams = NULL;
	size_t n = 0;
	int r;

	*err = 0;
	if (im->last_tab && strlen(im->last_tab->name) == len &&
	    memcmp(im->last_tab->name, name, len) == 0)
		return im->last_tab;
	for (t = im->tabs; t; t = t->next)
		if (strlen(t->name) == len && memcmp(t->name, name, len) == 0)
			return im->last_tab = t;
	t = tool_calloc(1, sizeof(*t));
	t->name = tool_malloc(len + 1);
	memcpy(t->name, name, len);
	t->name[len] = 0;
	/* a name with a NUL in it is no table's, and must not reach the table layer cut short */
	r = memchr(name, 0, len) ? -ENOENT : tbl_list_families(im->db, t->name, &fams, &n);
	if (r == 0) {
		t->exists = 1;
		for (size_t i = 0; i < n && r == 0; i++) {
			struct tbl_family_settings s;

			r = tbl_get_family(im->db, t->name, fams[i], &s);
			if (r == 0)
				add_fam(t, fams[i], s.type);
		}
		tbl_free_names(fams, n);
	}
	if (r == -ENOENT || r == -EINVAL) {
		/* no such table (-EINVAL: a name the table layer refuses) */
		free_tab(im->missing);
		im->missing = t;
		t->exists = 0;
		return t;
	}
	if (r) {
		*err = r;
		free_tab(t);
		return NULL;
	}
	t->next = im->tabs;
	im->tabs = t;
	return im->last_tab = t;
}

/* Keep t (from find_tab) in the cache, now that it is being created. */
static void adopt_tab(struct importer *im, struct tab *t)
{
	if (t != im->missing)
		return;
	im->missing = NULL;
	t->next = im->tabs;
	im->tabs = t;
}

static struct fam *find_fam(struct tab *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->nfams; i++)
		if (strncmp(t->fams[i].name, name, len) == 0 && t->fams[i].name[len] == 0)
			return &t->fams[i];
	return NULL;
}

/* ------------------------------------------------------------ import: writing batches */

static void pending_clear(struct pending *pd)
{
	pd->nrows = pd->ncells = 0;
	pd->key_bytes = 0;
	tool_buf_clear(&pd->arena);
	pd->tab = NULL;
}

static void pending_free(struct pending *pd)
{
	tool_buf_free(&pd->arena);
	free(pd->rows);
	free(pd->cells);
	free(pd->rm);
	free(pd->m);
	memset(pd, 0, sizeof(*pd));
}

/* Is r an error of the row (reported, the import goes on) rather than of the import? */
static int row_error(int r)
{
	return r == -EINVAL || r == -ENOENT || r == -ENAMETOOLONG || r == -EFBIG;
}

/* Build pd->rm and pd->m from the pending rows, pointers into the arena now that it is still. */
static void pending_build(struct pending *pd)
{
	if (pd->caprm < pd->nrows) {
		pd->caprm = pd->nrows;
		pd->rm = tool_realloc(pd->rm, pd->caprm * sizeof(*pd->rm));
	}
	if (pd->capm < pd->ncells) {
		pd->capm = pd->ncells;
		pd->m = tool_realloc(pd->m, pd->capm * sizeof(*pd->m));
	}
	for (size_t i = 0; i < pd->ncells; i++) {
		const struct pcell *c = &pd->cells[i];
		struct tbl_mutation *m = &pd->m[i];

		memset(m, 0, sizeof(*m));
		m->op = TBL_SET;
		m->family = c->family;
		m->qualifier = pd->arena.data + c->q_off;
		m->qualifier_len = c->q_len;
		m->ts = c->ts;
		m->value = c->v;
		if (c->v.type == CELL_STRING || c->v.type == CELL_BYTES)
			m->value.v.data.data = pd->arena.data + c->v_off;
	}
	for (size_t i = 0; i < pd->nrows; i++) {
		const struct prow *pr = &pd->rows[i];

		pd->rm[i].row = pd->arena.data + pr->key_off;
		pd->rm[i].row_len = pr->key_len;
		pd->rm[i].m = pd->m + pr->c0;
		pd->rm[i].n = pr->nc;
	}
}

/*
 * Write the pending rows.  A row the table layer refuses (which the checks
 * made while reading should leave to rare cases: a family dropped meanwhile)
 * is reported and taken out, and the rest written again; -E2BIG (the rows
 * do not fit one kv batch together) writes the part that fits first.
 */
static int flush(struct importer *im, int last)
{
	struct pending *pd = &im->pend;
	unsigned flags = last ? im->flags : 0;   /* only the last batch need be synced */
	size_t start = 0, n;
	int r = 0;

	if (pd->nrows == 0)
		goto out;
	if (im->dry_run) {
		im->st.rows += pd->nrows;
		im->st.cells += pd->ncells;
		goto out;
	}
	pending_build(pd);
	n = pd->nrows;
	while (start < n) {
		size_t bad_i = SIZE_MAX, count = n - start;   /* SIZE_MAX: no row to blame */

		r = tbl_write_rows(im->db, pd->tab->name, pd->rm + start, count, flags, &bad_i);
		if (r == -E2BIG && bad_i > 0 && bad_i < count) {
			/* the rows before bad_i fit, and were found valid */
			count = bad_i;
			r = tbl_write_rows(im->db, pd->tab->name, pd->rm + start, count, flags,
					   &bad_i);
		}
		if (r == 0) {
			for (size_t i = start; i < start + count; i++) {
				im->st.rows++;
				im->st.cells += pd->rm[i].n;
			}
			im->unsynced = !(flags & TBL_SYNC);
			start += count;
			continue;
		}
		if (!row_error(r) || bad_i >= count)
			goto out;
		bad(im, pd->rows[start + bad_i].line, "%s", kv_strerror(r));
		/* take the row out: the rows before it are written with the rest */
		memmove(pd->rm + start + bad_i, pd->rm + start + bad_i + 1,
			(n - start - bad_i - 1) * sizeof(*pd->rm));
		memmove(pd->rows + start + bad_i, pd->rows + start + bad_i + 1,
			(n - start - bad_i - 1) * sizeof(*pd->rows));
		n--;
		r = 0;
	}
out:
	pending_clear(pd);
	return r;
}

/* ------------------------------------------------------------ import: values */

/* Reserve n bytes at the end of the arena; returns their offset. */
static size_t arena_put(struct pending *pd, const void *p, size_t n)
{
	size_t off = pd->arena.len;

	tool_buf_append(&pd->arena, p, n);
	return off;
}

/* Where a value is, for messages: a line, and "cells[i]: " or "" for the row key. */
struct cell_ctx {
	struct importer *im;
	uint64_t line;
	char where[32];
};

static void cell_ctx_init(struct cell_ctx *cx, struct importer *im, uint64_t line, size_t index,
			  int is_cell)
{
	cx->im = im;
	cx->line = line;
	if (is_cell)
		snprintf(cx->where, sizeof(cx->where), "cells[%zu]: ", index);
	else
		cx->where[0] = 0;
}

/*
 * A base64 JSON string decoded onto the end of the arena: 0 and *off, *len,
 * or BAD (reported).  max: the largest decoded size allowed (checked before
 * decoding, so an oversized value costs no memory).
 */
static int decode_b64(struct cell_ctx *cx, const char *what, const struct json_value *v,
		      size_t max, const char *max_what, size_t *off, size_t *len)
{
	struct pending *pd = &cx->im->pend;
	size_t cap, got, at;

	if (v->type != JSON_STRING)
		return bad(cx->im, cx->line, "%s\"%s_b64\" must be a string of base64, not %s",
			   cx->where, what, json_type_name(v->type));
	/* decoded, it is len / 4 * 3 bytes less its padding (two at most) */
	if (v->len / 4 * 3 > max + 2)
		return bad(cx->im, cx->line, "%sthe %s in \"%s_b64\" is longer than %s (%zu "
			   "bytes)", cx->where, what, what, max_what, max);
	cap = json_base64_max(v->len);
	tool_buf_reserve(&pd->arena, cap);
	if (json_base64_decode(v->u.text, v->len, pd->arena.data + pd->arena.len, &got, &at))
		return bad(cx->im, cx->line, "%s\"%s_b64\" is not canonical base64 (at "
			   "character %zu of %zu)", cx->where, what, at + 1, v->len);
	if (got > max)
		return bad(cx->im, cx->line, "%sthe %s in \"%s_b64\" is longer than %s (%zu "
			   "bytes)", cx->where, what, what, max_what, max);
	*off = pd->arena.len;
	*len = got;
	pd->arena.len += got;
	return 0;
}

/*
 * The value of a cell of type t from its JSON "value" (val) or "value_b64"
 * (b64), into *c (bytes onto the arena).  0 or BAD (reported).
 */
static int read_value(struct cell_ctx *cx, enum cell_type t, const struct json_value *val,
		      const struct json_value *b64, struct pcell *c)
{
	struct importer *im = cx->im;
	const char *tn = cell_type_name(t);
	char text[SHOWN_BUF];
	struct slice s;
	int r;

	if (t == CELL_BYTES) {
		if (val || !b64)
			return bad(im, cx->line, "%sa bytes value is given as \"value_b64\" "
				   "(base64)%s", cx->where, val ? ", not \"value\"" : "");
		c->v.type = CELL_BYTES;
		return decode_b64(cx, "value", b64, im->max_value, "the maximum value size",
				  &c->v_off, &c->v.v.data.len);
	}
	if (b64 || !val)
		return bad(im, cx->line, "%sa %s value is given as \"value\"%s", cx->where,
			   tn, b64 ? " (\"value_b64\" is for bytes only)" : "");
	c->v.type = t;
	switch (t) {
	case CELL_STRING:
		if (val->type != JSON_STRING)
			return bad(im, cx->line, "%stype string needs a JSON string, not %s",
				   cx->where, json_type_name(val->type));
		if (val->len > im->max_value)
			return bad(im, cx->line, "%sa value of %zu bytes is longer than the "
				   "maximum value size (%zu bytes)", cx->where, val->len,
				   im->max_value);
		c->v_off = arena_put(&im->pend, val->u.text, val->len);
		c->v.v.data.data = NULL;
		c->v.v.data.len = val->len;
		return 0;
	case CELL_BOOLEAN:
		if (val->type != JSON_TRUE && val->type != JSON_FALSE)
			return bad(im, cx->line, "%stype boolean needs true or false, not %s",
				   cx->where, json_type_name(val->type));
		c->v.v.boolean = val->type == JSON_TRUE;
		return 0;
	case CELL_BYTE:
	case CELL_I32:
	case CELL_I64:
		if (val->type != JSON_NUMBER)
			return bad(im, cx->line, "%stype %s needs a JSON integer, not %s",
				   cx->where, tn, json_type_name(val->type));
		/* cell_parse reads the digits exactly, and refuses '.', 'e' and overflow */
		if (cell_parse(t, slice_make(val->u.text, val->len), &c->v) < 0)
			return bad(im, cx->line, "%s%s is not a %s (an integer%s)", cx->where,
				   shown(text, sizeof(text), val->u.text, val->len), tn,
				   t == CELL_BYTE ? " from 0 to 255" : " in range");
		return 0;
	default:   /* f32, f64 */
		if (val->type == JSON_NUMBER) {
			s = slice_make(val->u.text, val->len);
		} else if (val->type == JSON_STRING &&
			   (slice_eq(slice_make(val->u.text, val->len), slice_str("nan")) ||
			    slice_eq(slice_make(val->u.text, val->len), slice_str("inf")) ||
			    slice_eq(slice_make(val->u.text, val->len), slice_str("-inf")))) {
			s = slice_make(val->u.text, val->len);
		} else {
		{
			if (val->type == JSON_STRING)
				return bad(im, cx->line, "%stype %s needs a JSON number or \"nan\", "
					   "\"inf\", \"-inf\", not the string \"%s\"", cx->where, tn,
					   shown(text, sizeof(text), val->u.text, val->len));
			return bad(im, cx->line, "%stype %s needs a JSON number or \"nan\", "
				   "\"inf\", \"-inf\", not %s", cx->where, tn,
				   json_type_name(val->type));
		}
		}
		r = cell_parse(t, s, &c->v);
		if (r < 0)
			return bad(im, cx->line, "%s%s is out of range for %s", cx->where,
				   shown(text, sizeof(text), s.data, s.len), tn);
		return 0;
	}
}

/* A type name from JSON: 0 and *t, or BAD. */
static int read_type(struct cell_ctx *cx, const struct json_value *v, enum cell_type *t)
{
	char text[SHOWN_BUF];

	if (v->type != JSON_STRING)
		return bad(cx->im, cx->line, "%s\"type\" must be a string, not %s", cx->where,
			   json_type_name(v->type));
	if (cell_type_parse(slice_make(v->u.text, v->len), t) < 0)
		return bad(cx->im, cx->line, "%sunknown type \"%s\" (string, bytes, boolean, "
			   "byte, i32, i64, f32, f64)", cx->where,
			   shown(text, sizeof(text), v->u.text, v->len));
	return 0;
}

/* A qualifier (JSON string or base64) onto the arena: 0 or BAD. */
static int read_qualifier(struct cell_ctx *cx, const struct json_value *q,
			  const struct json_value *q64, struct pcell *c)
{
	if (!q == !q64)
		return bad(cx->im, cx->line, "%sgive exactly one of \"qualifier\" and "
			   "\"qualifier_b64\"", cx->where);
	if (q64)
		return decode_b64(cx, "qualifier", q64, TBL_MAX_QUALIFIER,
				  "the limit for qualifiers", &c->q_off, &c->q_len);
	if (q->type != JSON_STRING)
		return bad(cx->im, cx->line, "%s\"qualifier\" must be a string, not %s",
			   cx->where, json_type_name(q->type));
	if (q->len > TBL_MAX_QUALIFIER)
		return bad(cx->im, cx->line, "%sa qualifier of %zu bytes is longer than the "
			   "limit of %u bytes", cx->where, q->len, TBL_MAX_QUALIFIER);
	c->q_off = arena_put(&cx->im->pend, q->u.text, q->len);
	c->q_len = q->len;
	return 0;
}

/* The family named by a JSON string: 0 and *f, or BAD. */
static int read_family(struct cell_ctx *cx, struct tab *t, const char *name, size_t len,
		       struct fam **f)
{
	char text[SHOWN_BUF];

	*f = memchr(name, 0, len) ? NULL : find_fam(t, name, len);
	if (!*f)
		return bad(cx->im, cx->line, "%stable %s has no family \"%s\"%s", cx->where,
			   t->name, shown(text, sizeof(text), name, len),
			   cx->im->create ? "" : " (a schema line and --create would add it)");
	return 0;
}

/* ------------------------------------------------------------ import: rows */

/* Start a row of table t in the batch (flushing a batch of another table first). */
static int row_begin(struct importer *im, struct tab *t)
{
	struct pending *pd = &im->pend;

	if (pd->tab != t && pd->nrows) {
		int r = flush(im, 0);

		if (r)
			return r;
	}
	pd->tab = t;
	if (pd->nrows == pd->caprows) {
		pd->caprows = pd->caprows ? pd->caprows * 2 : 1024;
		pd->rows = tool_realloc(pd->rows, pd->caprows * sizeof(*pd->rows));
	}
	return 0;
}

static struct pcell *cell_new(struct pending *pd)
{
	if (pd->ncells == pd->capcells) {
		pd->capcells = pd->capcells ? pd->capcells * 2 : 8192;
		pd->cells = tool_realloc(pd->cells, pd->capcells * sizeof(*pd->cells));
	}
	memset(&pd->cells[pd->ncells], 0, sizeof(pd->cells[0]));
	return &pd->cells[pd->ncells++];
}

/* Where the batch stood before a row, to take the row back if it turns out bad. */
struct mark {
	size_t arena, ncells;
};

static struct mark mark_of(const struct pending *pd)
{
	struct mark m = { pd->arena.len, pd->ncells };

	return m;
}

static void roll_back(struct pending *pd, struct mark m)
{
	pd->arena.len = m.arena;
	pd->ncells = m.ncells;
}

/* Keep the row begun at m (its key at key_off) in the batch, and write the batch when it is full. */
static int row_commit(struct importer *im, struct mark m, size_t key_off, size_t key_len,
		      uint64_t line)
{
	struct pending *pd = &im->pend;
	struct prow *pr = &pd->rows[pd->nrows++];

	pr->key_off = key_off;
	pr->key_len = key_len;
	pr->c0 = m.ncells;
	pr->nc = pd->ncells - m.ncells;
	pr->line = line;
	/* the kv batch repeats the row key in every cell's key: count it so */
	pd->key_bytes += pr->nc * key_len;
	if (pd->arena.len + pd->key_bytes >= im->batch_bytes)
		return flush(im, 0);
	return 0;
}

/* One cell object of a row line into the batch: 0 or BAD. */
static int line_cell(struct importer *im, struct tab *t, const struct json_value *cv,
		     uint64_t line, size_t index)
{
	const struct json_value *fam = NULL, *q = NULL, *q64 = NULL, *ts = NULL, *type = NULL,
		*val = NULL, *b64 = NULL;
	struct cell_ctx cx;
	char text[SHOWN_BUF];
	enum cell_type ty;
	struct pcell *c;
	struct fam *f;
	int r;

	cell_ctx_init(&cx, im, line, index, 1);
	if (cv->type != JSON_OBJECT)
		return bad(im, line, "%sa cell must be an object, not %s", cx.where,
			   json_type_name(cv->type));
	for (size_t i = 0; i < cv->len; i++) {
		const struct json_member *m = &cv->u.members[i];

		if (json_key_is(m, "family"))
			fam = &m->value;
		else if (json_key_is(m, "qualifier"))
			q = &m->value;
		else if (json_key_is(m, "qualifier_b64"))
			q64 = &m->value;
		else if (json_key_is(m, "ts"))
			ts = &m->value;
		else if (json_key_is(m, "type"))
			type = &m->value;
		else if (json_key_is(m, "value"))
			val = &m->value;
		else if (json_key_is(m, "value_b64"))
			b64 = &m->value;
		else
			return bad(im, line, "%sunknown key \"%s\"", cx.where,
				   shown(text, sizeof(text), m->key, m->key_len));
	}
	if (!fam || fam->type != JSON_STRING)
		return bad(im, line, "%s\"family\" %s", cx.where,
			   fam ? "must be a string" : "is missing");
	r = read_family(&cx, t, fam->u.text, fam->len, &f);
	if (r)
		return r;
	ty = f->type;
	if (type && (r = read_type(&cx, type, &ty)))
		return r;
	c = cell_new(&im->pend);
	c->family = f->name;
	c->ts = TBL_TS_NOW;
	if (ts) {
		if (ts->type != JSON_NUMBER || json_get_u64(ts, &c->ts) || c->ts == TBL_TS_NOW)
			return bad(im, line, "%s\"ts\" must be an integer from 0 to "
				   "18446744073709551614 (microseconds), not %s", cx.where,
				   ts->type == JSON_NUMBER
				   ? shown(text, sizeof(text), ts->u.text, ts->len)
				   : json_type_name(ts->type));
	}
	r = read_qualifier(&cx, q, q64, c);
	if (r == 0)
		r = read_value(&cx, ty, val, b64, c);
	return r;
}

/* The row key of a row line ("row" or "row_b64") onto the arena: 0 or BAD. */
static int line_row_key(struct importer *im, const struct json_value *row,
			const struct json_value *row64, uint64_t line, size_t *off, size_t *len)
{
	struct cell_ctx cx;

	cell_ctx_init(&cx, im, line, 0, 0);
	if (!row == !row64)
		return bad(im, line, "give exactly one of \"row\" and \"row_b64\"");
	if (row64) {
		int r;

		if (row64->type != JSON_STRING)
			return bad(im, line, "\"row_b64\" must be a string of base64, not %s",
				   json_type_name(row64->type));
		r = decode_b64(&cx, "row", row64, TBL_MAX_ROW_KEY, "the limit for row keys", off,
			       len);
		return r;
	}
	if (row->type != JSON_STRING)
		return bad(im, line, "\"row\" must be a string, not %s", json_type_name(row->type));
	if (row->len > TBL_MAX_ROW_KEY)
		return bad(im, line, "a row key of %zu bytes is longer than the limit of %u bytes",
			   row->len, TBL_MAX_ROW_KEY);
	*off = arena_put(&im->pend, row->u.text, row->len);
	*len = row->len;
	return 0;
}

/* The table named by a JSON string that must exist: 0 and *t, BAD, or < 0. */
static int existing_table(struct importer *im, const struct json_value *name, uint64_t line,
			  struct tab **t)
{
	char text[SHOWN_BUF];
	int err;

	if (!name || name->type != JSON_STRING)
		return bad(im, line, "\"table\" %s", name ? "must be a string" : "is missing");
	*t = find_tab(im, name->u.text, name->len, &err);
	if (!*t)
		return err;   /* < 0 */
	if (!(*t)->exists)
		return bad(im, line, "no table \"%s\"%s",
			   shown(text, sizeof(text), name->u.text, name->len),
			   im->create ? "" : " (a schema line and --create would create it)");
	return 0;
}

static int row_line(struct importer *im, const struct json_value *root, uint64_t line)
{
	const struct json_value *table = NULL, *row = NULL, *row64 = NULL, *cells = NULL;
	char text[SHOWN_BUF];
	struct tab *t = NULL;
	struct mark m;
	size_t key_off = 0, key_len = 0;
	int r;

	for (size_t i = 0; i < root->len; i++) {
		const struct json_member *mb = &root->u.members[i];

		if (json_key_is(mb, "table"))
			table = &mb->value;
		else if (json_key_is(mb, "row"))
			row = &mb->value;
		else if (json_key_is(mb, "row_b64"))
			row64 = &mb->value;
		else if (json_key_is(mb, "cells"))
			cells = &mb->value;
		else
			return bad(im, line, "unknown key \"%s\" in a row line",
				   shown(text, sizeof(text), mb->key, mb->key_len));
	}
	r = existing_table(im, table, line, &t);
	if (r)
		return r;
	if (!cells || cells->type != JSON_ARRAY)
		return bad(im, line, "\"cells\" %s", cells ? "must be an array" : "is missing");
	r = row_begin(im, t);
	if (r)
		return r;
	m = mark_of(&im->pend);
	r = line_row_key(im, row, row64, line, &key_off, &key_len);
	for (size_t i = 0; i < cells->len && r == 0; i++)
		r = line_cell(im, t, &cells->u.items[i], line, i);
	if (r) {
		roll_back(&im->pend, m);
		return r;
	}
	return row_commit(im, m, key_off, key_len, line);
}

/* ------------------------------------------------------------ import: schema lines */

/*
 * The table layer's name rules (tbl_check_table_name, tbl_check_family_name),
 * so that a dry run reports what a real run would; s is a JSON string, which
 * may hold a NUL byte (never part of a name).
 */
static int name_ok(const char *s, size_t n, size_t max, int table)
{
	char name[(TBL_MAX_NAME > TBL_MAX_FAMILY_NAME ? TBL_MAX_NAME : TBL_MAX_FAMILY_NAME) + 1];

	if (n > max || n >= sizeof(name) || memchr(s, 0, n))
		return 0;
	memcpy(name, s, n);
	name[n] = 0;
	return (table ? tbl_check_table_name(name) : tbl_check_family_name(name)) == 0;
}

/* An unsigned setting no larger than max: 0 or BAD. */
static int setting_u64(struct importer *im, uint64_t line, const char *family,
		       const struct json_member *m, const char *name, uint64_t max, uint64_t *out)
{
	char text[SHOWN_BUF];

	if (m->value.type != JSON_NUMBER || json_get_u64(&m->value, out) || *out > max)
		return bad(im, line, "family %s: \"%s\" must be an integer from 0 to %llu, not %s",
			   family, name, (unsigned long long)max,
			   m->value.type == JSON_NUMBER
			   ? shown(text, sizeof(text), m->value.u.text, m->value.len)
			   : json_type_name(m->value.type));
	return 0;
}

/* One family's settings object of a schema line: 0 or BAD. */
static int family_settings(struct importer *im, uint64_t line, const char *family,
			   const struct json_value *v, struct tbl_family_settings *s)
{
	char text[SHOWN_BUF];
	uint64_t x;
	int r;

	tbl_family_settings_init(s);
	if (v->type != JSON_OBJECT)
		return bad(im, line, "family %s: its settings must be an object, not %s", family,
			   json_type_name(v->type));
	for (size_t i = 0; i < v->len; i++) {
		const struct json_member *m = &v->u.members[i];
		const struct json_value *mv = &m->value;

		if (json_key_is(m, "type")) {
			if (mv->type != JSON_STRING ||
			    cell_type_parse(slice_make(mv->u.text, mv->len), &s->type) < 0)
				return bad(im, line, "family %s: \"type\" must be one of string, "
					   "bytes, boolean, byte, i32, i64, f32, f64", family);
		} else if (json_key_is(m, "max_versions")) {
			if ((r = setting_u64(im, line, family, m, "max_versions", UINT32_MAX, &x)))
				return r;
			s->max_versions = (uint32_t)x;
		} else if (json_key_is(m, "ttl")) {
			if ((r = setting_u64(im, line, family, m, "ttl", MAX_TTL, &x)))
				return r;
			s->ttl = x;
		} else if (json_key_is(m, "compression")) {
			if ((r = setting_u64(im, line, family, m, "compression", 22, &x)))
				return r;
			s->compression = (int)x;
		} else if (json_key_is(m, "locality_group")) {
			if (mv->type != JSON_STRING ||
			    !name_ok(mv->u.text, mv->len, TBL_MAX_FAMILY_NAME, 0))
				return bad(im, line, "family %s: \"locality_group\" must be a name of 1 "
					   "to %u of A-Z a-z 0-9 - _ . (not . or ..)", family,
					   TBL_MAX_FAMILY_NAME);
			memcpy(s->locality_group, mv->u.text, mv->len);
			s->locality_group[mv->len] = 0;
		} else {
			return bad(im, line, "family %s: unknown setting \"%s\"", family,
				   shown(text, sizeof(text), m->key, m->key_len));
		}
	}
	return 0;
}

/*
 * A schema line: check it whole, then (with --create) create what is
 * missing.  Creating writes at once, not in the batch: it is a schema
 * change, synced by the table layer.
 */
static int schema_line(struct importer *im, const struct json_value *root, uint64_t line)
{
	const struct json_value *table = NULL, *fams = NULL;
	struct tbl_family_settings *settings = NULL;
	char text[SHOWN_BUF];
	struct tab *t;
	int r = 0, err;

	for (size_t i = 0; i < root->len; i++) {
		const struct json_member *mb = &root->u.members[i];

		if (json_key_is(mb, "table"))
			table = &mb->value;
		else if (json_key_is(mb, "families"))
			fams = &mb->value;
		else
			return bad(im, line, "unknown key \"%s\" in a schema line",
				   shown(text, sizeof(text), mb->key, mb->key_len));
	}
	if (!table || table->type != JSON_STRING)
		return bad(im, line, "\"table\" %s", table ? "must be a string" : "is missing");
	if (!name_ok(table->u.text, table->len, TBL_MAX_NAME, 1))
		return bad(im, line, "table name \"%s\": a table name is 1 to %u of A-Z a-z 0-9 - _ "
			   ". # $, and not . or ..", shown(text, sizeof(text), table->u.text,
							  table->len), TBL_MAX_NAME);
	if (fams->type != JSON_OBJECT)
		return bad(im, line, "\"families\" must be an object, not %s",
			   json_type_name(fams->type));
	t = find_tab(im, table->u.text, table->len, &err);
	if (!t)
		return err;
	if (!t->exists && !im->create)
		return bad(im, line, "no table %s (--create would create it)", t->name);
	settings = tool_calloc(fams->len ? fams->len : 1, sizeof(*settings));
	for (size_t i = 0; i < fams->len; i++) {
		const struct json_member *m = &fams->u.members[i];
		char name[TBL_MAX_FAMILY_NAME + 1];

		if (!name_ok(m->key, m->key_len, TBL_MAX_FAMILY_NAME, 0)) {
			r = bad(im, line, "family name \"%s\": a family name is 1 to %u of A-Z a-z "
				"0-9 - _ . (not . or ..)", shown(text, sizeof(text), m->key,
								 m->key_len), TBL_MAX_FAMILY_NAME);
			goto out;
		}
		memcpy(name, m->key, m->key_len);
		name[m->key_len] = 0;
		r = family_settings(im, line, name, &m->value, &settings[i]);
		if (r)
			goto out;
		if (!find_fam(t, name, m->key_len) && !im->create) {
			r = bad(im, line, "table %s has no family %s (--create would add it)",
				t->name, name);
			goto out;
		}
	}
	/* the line is good: create what is missing */
	if (!t->exists) {
		if (!im->dry_run && (r = tbl_create_table(im->db, t->name)) != 0)
			goto out;
		adopt_tab(im, t);
		t->exists = 1;
	}
	for (size_t i = 0; i < fams->len; i++) {
		const struct json_member *m = &fams->u.members[i];
		char name[TBL_MAX_FAMILY_NAME + 1];

		memcpy(name, m->key, m->key_len);
		name[m->key_len] = 0;
		if (find_fam(t, name, m->key_len))
			continue;
		if (!im->dry_run && (r = tbl_add_family(im->db, t->name, name, &settings[i])) != 0)
			goto out;
		add_fam(t, name, settings[i].type);
	}
out:
	free(settings);
	if (r < 0 && row_error(r))
		r = bad(im, line, "%s", kv_strerror(r));
	return r;
}

/* ------------------------------------------------------------ import: JSON lines */

static int blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return 0;
	return 1;
}

static int json_line(struct importer *im, const char *p, size_t n, uint64_t line, int last)
{
	const struct json_value *root;
	struct json_error e;

	if (blank(p, n))
		return 0;
	if (json_parse(&im->ps, p, n, &root, &e))
		return bad(im, line, "%sbad JSON at column %zu: %s",
			   last ? "the input ends in the middle of this line (truncated?): " : "",
			   e.offset + 1, e.msg);
	if (root->type != JSON_OBJECT)
		return bad(im, line, "a line must hold a JSON object, not %s",
			   json_type_name(root->type));
	if (json_get(root, "families"))
		return schema_line(im, root, line);
	return row_line(im, root, line);
}

static int import_lines(struct importer *im)
{
	const char *p;
	size_t n;
	int r, kind;

	while ((kind = rd_line(&im->rd, &p, &n)) > 0) {
		im->st.lines++;
		if (kind == LINE_TOO_LONG)
			r = bad(im, im->st.lines, "a line of %zu bytes is longer than the limit of %zu "
				"bytes", n, im->rd.max_line);
		else
			r = json_line(im, p, n, im->st.lines, kind == LINE_LAST);
		if (r < 0)
			return r;
		progress(im);
		if (stopped(im))
			return -EINTR;
	}
	return kind;
}

/* ------------------------------------------------------------ import: Smoltable's payload */

/*
 * The document is read as a stream: the reader's buffer holds the item
 * being read (and what follows it), never the whole document.  st.lines
 * counts the newlines passed, so a position's line is st.lines + 1.
 */

/* Make at least k bytes available at rd->pos (fewer only at the end of the input). */
static int need(struct importer *im, size_t k)
{
	struct reader *rd = &im->rd;

	while (rd->len - rd->pos < k && !rd->eof) {
		int r = rd_fill(rd, rd->max_line + 1);

		if (r)
			return r;
	}
	return 0;
}

static void advance(struct importer *im, size_t k)
{
	struct reader *rd = &im->rd;

	for (size_t i = 0; i < k; i++)
		if (rd->data[rd->pos + i] == '\n')
			im->st.lines++;
	if (k)
		im->ends_line = rd->data[rd->pos + k - 1] == '\n';
	rd->pos += k;
	rd->scanned = rd->pos;
	rd->consumed += k;
}

/* Skip whitespace; then the next byte, or -1 at the end of the input (or < -1 on error). */
static int peek_token(struct importer *im)
{
	struct reader *rd = &im->rd;

	for (;;) {
		int r = need(im, 1);

		if (r)
			return r < -1 ? r : -EIO;
		if (rd->pos == rd->len)
			return -1;
		switch (rd->data[rd->pos]) {
		case ' ': case '\t': case '\r': case '\n':
			advance(im, 1);
			break;
		default:
			return (unsigned char)rd->data[rd->pos];
		}
	}
}

/* Report a fault in the document's structure: it stops the import. */
static int structure(struct importer *im, const char *what)
{
	struct reader *rd = &im->rd;
	char w[32];

	if (rd->pos < rd->len)
		snprintf(w, sizeof(w), "'%c'", rd->data[rd->pos]);
	else
		snprintf(w, sizeof(w), "the end of the input");
	bad(im, im->st.lines + 1, "Smoltable payload: expected %s, found %s%s", what,
	    (unsigned char)w[1] >= 0x20 && (unsigned char)w[1] < 0x7f ? w : "a control byte",
	    rd->pos < rd->len ? "; the import stops here" : " (truncated?)");
	return -EINVAL;
}

/* Expect the literal s (after whitespace) and pass it. */
static int expect(struct importer *im, const char *s, const char *what)
{
	struct reader *rd = &im->rd;
	size_t n = strlen(s);
	int c = peek_token(im), r;

	if (c < -1)
		return c;
	r = need(im, n);
	if (r)
		return r;
	if (rd->len - rd->pos < n || memcmp(rd->data + rd->pos, s, n) != 0)
		return structure(im, what);
	advance(im, n);
	return 0;
}

/*
 * The extent of the JSON value at rd->pos: *n bytes such that data[pos..pos+n)
 * is the value if it is well formed -- brackets counted outside strings,
 * strings ended by an unescaped quote, scalars ended by a delimiter.
 * Reads more as needed.  0, or BAD (reported: the input ends inside the
 * value, or it is longer than rd->max_line), or < 0.
 */
static int value_extent(struct importer *im, size_t *n, uint64_t line)
{
	struct reader *rd = &im->rd;
	size_t i = 0;
	int depth = 0, in_str = 0, esc = 0, r;

	for (;;) {
		if (rd->pos + i == rd->len) {
			if (i > rd->max_line)
				return bad(im, line, "an item of more than %zu bytes is longer than the "
					   "limit of %zu bytes", i, rd->max_line);
			r = need(im, i + READ_CHUNK);
			if (r)
				return r;
			if (rd->pos + i == rd->len) {
				if (depth == 0 && !in_str && i > 0)
					break;   /* a scalar at the end of the input */
				return bad(im, line, "the input ends in the middle of this item "
					   "(truncated?)");
			}
		}
		char c = rd->data[rd->pos + i];

		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			i++;
			if (!in_str && depth == 0)
				break;
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				break;   /* the end of the array the value is in */
			if (--depth == 0) {
				i++;
				break;
			}
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\t' ||
					  c == '\r')) {
			break;
		}
		i++;
	}
	if (i > rd->max_line)
		return bad(im, line, "an item of %zu bytes is longer than the limit of %zu bytes", i,
			   rd->max_line);
	*n = i;
	return 0;
}

/* Split "family:qualifier" at its first ':'. */
static void split_column(const char *s, size_t n, size_t *flen, const char **q, size_t *qlen)
{
	const char *colon = memchr(s, ':', n);

	*flen = colon ? (size_t)(colon - s) : n;
	*q = colon ? colon + 1 : s + n;
	*qlen = colon ? n - *flen - 1 : 0;
}

/* One cell of a Smoltable item into the batch: 0 or BAD. */
static int smol_cell(struct importer *im, struct tab *t, const struct json_value *cv,
		     uint64_t line, size_t index)
{
	const struct json_value *col = NULL, *type = NULL, *val = NULL, *b64 = NULL, *time = NULL;
	struct cell_ctx cx;
	char text[SHOWN_BUF];
	const char *q;
	size_t flen, qlen;
	enum cell_type ty;
	struct pcell *c;
	struct fam *f;
	int r;

	cell_ctx_init(&cx, im, line, index, 1);
	if (cv->type != JSON_OBJECT)
		return bad(im, line, "%sa cell must be an object, not %s", cx.where,
			   json_type_name(cv->type));
	for (size_t i = 0; i < cv->len; i++) {
		const struct json_member *m = &cv->u.members[i];

		if (json_key_is(m, "column_key"))
			col = &m->value;
		else if (json_key_is(m, "type"))
			type = &m->value;
		else if (json_key_is(m, "value"))
			val = &m->value;
		else if (json_key_is(m, "value_b64"))
			b64 = &m->value;
		else if (json_key_is(m, "time"))
			time = &m->value;
		else
			return bad(im, line, "%sunknown key \"%s\"", cx.where,
				   shown(text, sizeof(text), m->key, m->key_len));
	}
	if (!col || col->type != JSON_STRING)
		return bad(im, line, "%s\"column_key\" %s", cx.where,
			   col ? "must be a string \"family:qualifier\"" : "is missing");
	if (!type)
		return bad(im, line, "%s\"type\" is missing", cx.where);
	split_column(col->u.text, col->len, &flen, &q, &qlen);
	r = read_family(&cx, t, col->u.text, flen, &f);
	if (r)
		return r;
	r = read_type(&cx, type, &ty);
	if (r)
		return r;
	c = cell_new(&im->pend);
	c->family = f->name;
	c->ts = TBL_TS_NOW;
	if (time) {
		r = time->type == JSON_NUMBER ? json_get_u64_div(time, 1000, &c->ts) : -EINVAL;
		if (r || c->ts == TBL_TS_NOW)
			return bad(im, line, "%s\"time\" must be a non-negative integer of "
				   "nanoseconds below 2^64 - 1 microseconds, not %s", cx.where,
				   time->type == JSON_NUMBER
				   ? shown(text, sizeof(text), time->u.text, time->len)
				   : json_type_name(time->type));
	}
	if (qlen > TBL_MAX_QUALIFIER)
		return bad(im, line, "%sa qualifier of %zu bytes is longer than the limit "
			   "of %u bytes", cx.where, qlen, TBL_MAX_QUALIFIER);
	c->q_off = arena_put(&im->pend, q, qlen);
	c->q_len = qlen;
	return read_value(&cx, ty, val, b64, c);
}

static int smol_item(struct importer *im, struct tab *t, const struct json_value *item,
		     uint64_t line)
{
	const struct json_value *key = NULL, *cells = NULL;
	char text[SHOWN_BUF];
	struct mark m;
	size_t key_off;
	int r = 0;

	if (item->type != JSON_OBJECT)
		return bad(im, line, "an item must be an object, not %s", json_type_name(item->type));
	for (size_t i = 0; i < item->len; i++) {
		const struct json_member *mb = &item->u.members[i];

		if (json_key_is(mb, "row_key"))
			key = &mb->value;
		else if (json_key_is(mb, "cells"))
			cells = &mb->value;
		else
			return bad(im, line, "unknown key \"%s\" in an item",
				   shown(text, sizeof(text), mb->key, mb->key_len));
	}
	if (!key || key->type != JSON_STRING)
		return bad(im, line, "\"row_key\" %s", key ? "must be a string" : "is missing");
	if (key->len > TBL_MAX_ROW_KEY)
		return bad(im, line, "a row key of %zu bytes is longer than the limit of %u bytes",
			   key->len, TBL_MAX_ROW_KEY);
	if (!cells || cells->type != JSON_ARRAY)
		return bad(im, line, "\"cells\" %s", cells ? "must be an array" : "is missing");
	r = row_begin(im, t);
	if (r)
		return r;
	m = mark_of(&im->pend);
	key_off = arena_put(&im->pend, key->u.text, key->len);
	for (size_t i = 0; i < cells->len && r == 0; i++)
		r = smol_cell(im, t, &cells->u.items[i], line, i);
	if (r) {
		roll_back(&im->pend, m);
		return r;
	}
	return row_commit(im, m, key_off, key->len, line);
}

static int import_smoltable(struct importer *im)
{
	struct reader *rd = &im->rd;
	struct tab *t;
	int r, c, err;

	if (!im->table) {
		bad(im, 1, "a Smoltable payload goes to one table: give it (--table)");
		return -EINVAL;
	}
	t = find_tab(im, im->table, strlen(im->table), &err);
	if (!t)
		return err;
	if (!t->exists) {
		bad(im, 1, "no table %s for the Smoltable payload", t->name);
		return -EINVAL;
	}
	if ((r = expect(im, "{", "'{'")) || (r = expect(im, "\"items\"", "\"items\"")) ||
	    (r = expect(im, ":", "':'")) || (r = expect(im, "[", "'[' (the items array)")))
		return r;
	c = peek_token(im);
	if (c == ']') {
		advance(im, 1);
	} else {
		for (;;) {
			const struct json_value *root;
			struct json_error e;
			uint64_t line;
			size_t n = 0;

			c = peek_token(im);
			if (c < -1)
				return c;
			if (c == -1 || c == ']' || c == ',')
				return structure(im, "an item");
			line = im->st.lines + 1;
			r = value_extent(im, &n, line);
			if (r)
				return r < 0 ? r : -EINVAL;
			if (json_parse(&im->ps, rd->data + rd->pos, n, &root, &e)) {
				/* the line of the error, within the item */
				uint64_t at = line;

				for (size_t i = 0; i < e.offset && i < n; i++)
					at += rd->data[rd->pos + i] == '\n';
				r = bad(im, at, "bad JSON in the item that begins on line %llu: %s",
					(unsigned long long)line, e.msg);
			} else {
				r = smol_item(im, t, root, line);
			}
			if (r < 0)
				return r;
			advance(im, n);
			progress(im);
			if (stopped(im))
				return -EINTR;
			c = peek_token(im);
			if (c == ',') {
				advance(im, 1);
				continue;
			}
			if (c == ']') {
				advance(im, 1);
				break;
			}
			return c < -1 ? c : structure(im, "',' or ']' after an item");
		}
	}
	r = expect(im, "}", "'}' after the items (\"items\" is the only key)");
	if (r)
		return r;
	c = peek_token(im);
	if (c < -1)
		return c;
	if (c != -1)
		return structure(im, "nothing after the payload");
	/* the last line, if it ends without "\n", still counts */
	if (rd->consumed && !im->ends_line)
		im->st.lines++;
	return 0;
}

/* Does the input start (after whitespace) with an object whose first key is "items"? */
static int is_smoltable(struct importer *im)
{
	struct reader *rd = &im->rd;
	size_t i = 0;
	int r;

	for (;;) {
		if (rd->pos + i >= rd->len) {
			r = need(im, i + 1);
			if (r)
				return r;
			if (rd->pos + i >= rd->len)
				return 0;
		}
		if (!strchr(" \t\r\n", rd->data[rd->pos + i]))
			break;
		i++;
	}
	if (rd->data[rd->pos + i] != '{')
		return 0;
	for (i++;; i++) {
		if (rd->pos + i >= rd->len) {
			r = need(im, i + 1);
			if (r)
				return r;
			if (rd->pos + i >= rd->len)
				return 0;
		}
		if (!strchr(" \t\r\n", rd->data[rd->pos + i]))
			break;
	}
	r = need(im, i + 7);
	if (r)
		return r;
	return rd->len - rd->pos >= i + 7 && memcmp(rd->data + rd->pos + i, "\"items\"", 7) == 0;
}

/* ------------------------------------------------------------ import */

int tio_import(struct tbl_db *db, FILE *in, const char *source,
	       const struct tio_import_options *o, tio_report_fn report, void *report_arg,
	       struct tio_stats *st, const struct tio_progress *p)
{
	struct importer *im = tool_calloc(1, sizeof(*im));
	struct stat sb;
	int r, fd;

	clear_error();
	im->db = db;
	im->dry_run = o && o->dry_run;
	im->create = o && o->create;
	im->table = o ? o->table : NULL;
	im->flags = o ? o->flags : 0;
	im->batch_bytes = o && o->batch_bytes ? o->batch_bytes : TIO_DEFAULT_BATCH_BYTES;
	if (im->batch_bytes > MAX_BATCH_BYTES)
		im->batch_bytes = MAX_BATCH_BYTES;
	im->max_value = o && o->max_value_size ? o->max_value_size : TBL_DEFAULT_MAX_VALUE;
	if (im->max_value > TBL_LIMIT_MAX_VALUE)
		im->max_value = TBL_LIMIT_MAX_VALUE;
	im->source = source ? source : "-";
	im->report = report;
	im->report_arg = report_arg;
	im->p = p;
	im->rd.in = in;
	im->rd.stop = p ? p->stop : NULL;
	im->rd.max_line = o && o->max_line && o->max_line < TIO_MAX_LINE ? o->max_line
									  : TIO_MAX_LINE;
	fd = fileno(in);
	if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		off_t at = ftello(in);

		im->total = (uint64_t)sb.st_size - (at > 0 ? (uint64_t)at : 0);
	}
	json_parser_init(&im->ps, 0);

	r = is_smoltable(im);
	if (r > 0)
		r = import_smoltable(im);
	else if (r == 0)
		r = import_lines(im);
	/* a signal at the very end (the input may have been cut short by it) still counts */
	if (r == 0 && stopped(im))
		r = -EINTR;
	/* interrupted: what was read is written, so the counts say where it stopped */
	if (r == 0 || r == -EINVAL || r == -EINTR) {
		int w = flush(im, 1);

		/*
		 * TBL_SYNC asked for a durable import, but the last write was an
		 * unsynced one (the last batch was full just before the input
		 * ended, or all that came after it was bad): a flush of the
		 * memtables makes everything written durable instead.
		 */
		if (w == 0 && (im->flags & TBL_SYNC) && im->unsynced)
			w = kv_flush(tbl_kv(db));
		if (w)
			r = w;
	}
	if (r == 0 && im->st.bad_lines)
		r = -EINVAL;
	/*
	 * A line a problem was reported on was read, even when the problem
	 * ended the import before the line did (a Smoltable payload whose
	 * structure breaks on its first line): count it, so that the lines
	 * read are never fewer than the lines rejected.
	 */
	if (im->st.lines < im->last_bad)
		im->st.lines = im->last_bad;
	if (r == 0 && p && p->fn)
		p->fn(p->arg, im->rd.consumed, im->total ? im->total : im->rd.consumed);
	if (st) {
		*st = im->st;
		st->bytes = im->rd.consumed;
	}
	if (r == -EINVAL && im->st.bad_lines)
		tio_error(-EINVAL, "%s: %llu bad line%s", im->source,
			  (unsigned long long)im->st.bad_lines, im->st.bad_lines == 1 ? "" : "s");
	if (r == -EINTR)
		tio_error(-EINTR, "%s: interrupted after line %llu", im->source,
			  (unsigned long long)im->st.lines);
	json_parser_free(&im->ps);
	pending_free(&im->pend);
	free_tabs(im);
	free(im->rd.data);
	free(im);
	return r;
}
