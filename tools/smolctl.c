/*
 * smolctl.c -- the administration tool of a smolfs database directory: tables
 * and column families (create, alter, drop, describe), reads for people or as
 * JSON lines (get, scan), writes of one cell or row (set, delete-version,
 * delete-cell, delete-family, delete-row, increment, check-and-set), bulk
 * import and export (tools/tio.h does the work), and the engine's
 * housekeeping (check, compact, stats).  man/smolctl.1 is its manual; this
 * file is the command line around the table API (engine/table.h).
 *
 * Every command opens the database itself and closes it before exiting, so a
 * database is only ever held for the length of one command; the engine's lock
 * (kv_open's -EBUSY) keeps smolctl off a directory that a mounted smolfs or
 * another smolctl holds, and smolctl then changes nothing.  Only create-table
 * and import --create create a database; every other command wants one.
 *
 * Exit status: 0 success, 1 an error (every message goes to stderr as
 * "smolctl: ..." and names the directory, table, family, row, file or line
 * it concerns), 2 a usage error (the command line itself is wrong: unknown
 * command or option, missing or extra arguments, a value that does not
 * parse).  Usage errors are found before the database is opened.  3:
 * check-and-set's check failed, and nothing was written.  128 + N:
 * an export or import stopped cleanly by signal N (130 for Ctrl-C).
 *
 * smolctl works through the table API (engine/table.h): tbl_compact for
 * compaction, tbl_list_groups for the kv tree of each locality group; from
 * the kv layer underneath (tbl_kv) it reads only statistics (kv_property)
 * and, in check, the engine's own verification (kv_verify).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kv.h"
#include "table.h"
#include "tio.h"
#include "tutil.h"

#define EXIT_ERROR 1
#define EXIT_USAGE 2

/* The database directory: set once by main, read by every command. */
static const char *datadir;
/* --max-value-size: the largest cell value (0: the table layer's default). */
static size_t max_value_size;

/* ------------------------------------------------------------ messages */

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("smolctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * An error from the table or kv layer: what was being done in DATADIR, then
 * kv_strerror's sentence (which names the table, family, row or file).
 * Returns EXIT_ERROR so that callers can `return fail(...)`.
 */
static int vfail(const char *why, const char *fmt, va_list ap)
{
	char what[1024];

	vsnprintf(what, sizeof(what), fmt, ap);
	say("%s: %s: %s", datadir, what, why);
	return EXIT_ERROR;
}

__attribute__((format(printf, 2, 3)))
static int fail(int err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(kv_strerror(err), fmt, ap);
	va_end(ap);
	return r;
}

/* The same for an error returned by tio (import, export, JSON output). */
__attribute__((format(printf, 2, 3)))
static int fail_tio(int err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(tio_strerror(err), fmt, ap);
	va_end(ap);
	return r;
}

/* The engine's own log lines (warnings and errors only). */
static void engine_log(void *arg, enum kv_log_level level, const char *msg)
{
	if (level <= KV_LOG_WARN)
		say("%s: %s", (const char *)arg, msg);
}

/* ------------------------------------------------------------ commands and usage */

struct cmd {
	const char *name;
	int (*run)(const struct cmd *c, int argc, char **argv);
	const char *synopsis;       /* what follows the name */
	const char *summary;        /* one line for smolctl help */
	const char *help;           /* the options and what the command does */
};

/* "usage: smolctl [-d DATADIR] NAME SYNOPSIS", wrapped before a word at 80 columns. */
static void print_usage_line(FILE *f, const struct cmd *c)
{
	const char *p = c->synopsis;
	int col = fprintf(f, "usage: smolctl [-d DATADIR] %s", c->name);

	while (*p) {
		/* a word: an option in brackets (with its spaces) or an argument */
		const char *end = *p == '[' ? strchr(p, ']') : strchr(p, ' ');
		int n;

		end = end ? end + (*p == '[') : p + strlen(p);
		n = (int)(end - p);
		if (col + 1 + n > 79) {
			fputs("\n       ", f);
			col = 6;
		}
		col += fprintf(f, " %.*s", n, p);
		p = end;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

/* A usage error: the message, the synopsis, where to read more; EXIT_USAGE. */
__attribute__((format(printf, 2, 3)))
static int usage(const struct cmd *c, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "smolctl: %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_usage_line(stderr, c);
	fprintf(stderr, "Try 'smolctl %s --help' for more.\n", c->name);
	return EXIT_USAGE;
}

static int cmd_help_text(const struct cmd *c)
{
	print_usage_line(stdout, c);
	printf("%s\n\n%s", c->summary, c->help);
	printf("  -d, --datadir DATADIR  the database directory (default: $SMOLFS_DATADIR)\n"
	       "  -h, --help             this text\n");
	return 0;
}

/*
 * Option parsing shared by the commands.  Each command lists its own long
 * options, whose values are 256 and up (the O_ enum) or the character of
 * their short form; -d/--datadir and -h/--help are accepted by every command
 * (after the command name as well as before it).  opts_next returns the
 * option, OPT_DONE at the end of the options, OPT_HELP for -h, or OPT_BAD
 * after printing a usage error.
 */
#define OPT_DONE -1
#define OPT_HELP 1001
#define OPT_BAD 1002
#define OPT_LONG_HELP 1003   /* --help's value, so that --help=x is told apart from -h */
#define OPT_MAX_VALUE 1004   /* --max-value-size, taken by every command */

static int set_max_value_size(const char *s);

struct opts {
	const struct cmd *c;
	int argc;
	char **argv;
	struct option longopts[24];
	char shortopts[48];
};

static void opts_init(struct opts *o, const struct cmd *c, int argc, char **argv,
		      const char *shortopts, const struct option *longopts)
{
	size_t n = 0;

	memset(o, 0, sizeof(*o));
	o->c = c;
	o->argc = argc;
	o->argv = argv;
	snprintf(o->shortopts, sizeof(o->shortopts), ":hd:%s", shortopts);
	for (; longopts && longopts[n].name; n++)
		o->longopts[n] = longopts[n];
	o->longopts[n++] = (struct option){ "help", no_argument, NULL, OPT_LONG_HELP };
	o->longopts[n++] = (struct option){ "datadir", required_argument, NULL, 'd' };
	o->longopts[n++] = (struct option){ "max-value-size", required_argument, NULL,
					    OPT_MAX_VALUE };
	o->longopts[n] = (struct option){ NULL, 0, NULL, 0 };
	optind = 0;   /* glibc: start afresh (argv[0] is the command's name) */
	opterr = 0;
}

static int opts_next(struct opts *o)
{
	int ch = getopt_long(o->argc, o->argv, o->shortopts, o->longopts, NULL);

	switch (ch) {
	case 'h':
	case OPT_LONG_HELP:
		return OPT_HELP;
	case 'd':
		datadir = optarg;
		return opts_next(o);
	case OPT_MAX_VALUE:
		if (set_max_value_size(optarg) < 0) {
			usage(o->c, "--max-value-size %s: not a size from 1 to %uM (bytes, or "
			      "with K or M)", optarg, TBL_LIMIT_MAX_VALUE >> 20);
			return OPT_BAD;
		}
		return opts_next(o);
	case '?':
		/* optopt: 0 for an unknown long option, a long option's value if it
		 * was given one it does not take, else the unknown character */
		if (optopt == 0)
			usage(o->c, "unknown option %s", o->argv[optind - 1]);
		else if (optopt >= 256)
			usage(o->c, "option %s takes no value", o->argv[optind - 1]);
		else
			usage(o->c, "unknown option -%c", optopt);
		return OPT_BAD;
	case ':':
		usage(o->c, "option %s needs a value", o->argv[optind - 1]);
		return OPT_BAD;
	default:
		return ch;
	}
}

/* ------------------------------------------------------------ parsing values */

/* A decimal integer of digits only, at most max: 0, or -EINVAL / -ERANGE. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A count option (--limit, --versions): a number that fits max. */
static int opt_count(const struct cmd *c, const char *opt, const char *s, uint64_t max,
		     uint64_t *out)
{
	int r = parse_u64(s, max, out);

	if (r == -ERANGE)
		return usage(c, "%s %s: too large (at most %" PRIu64 ")", opt, s, max);
	if (r < 0)
		return usage(c, "%s %s: not a number", opt, s);
	return 0;
}

/*
 * Family settings from options.  Each given setting sets its bit in *given,
 * so alter-family changes only those.
 */
#define SET_TYPE 1u
#define SET_MAX_VERSIONS 2u
#define SET_TTL 4u
#define SET_GROUP 8u
#define SET_COMPRESSION 16u

enum {
	O_TYPE = 256, O_MAX_VERSIONS, O_TTL, O_GROUP, O_COMPRESSION, O_FORCE, O_FAMILY, O_COLUMN,
	O_VERSIONS, O_JSON, O_PREFIX, O_START, O_END, O_REVERSE, O_LIMIT, O_KEYS_ONLY, O_COUNT,
	O_TABLE, O_DRY_RUN, O_CREATE, O_ESCAPED, O_SCAN, O_SINCE, O_BEFORE, O_QPREFIX,
	O_TIMESTAMP, O_EXPECT, O_EXPECT_ABSENT,
};

static const struct option family_longopts[] = {
	{ "type", required_argument, NULL, O_TYPE },
	{ "max-versions", required_argument, NULL, O_MAX_VERSIONS },
	{ "ttl", required_argument, NULL, O_TTL },
	{ "locality-group", required_argument, NULL, O_GROUP },
	{ "compression", required_argument, NULL, O_COMPRESSION },
	{ NULL, 0, NULL, 0 },
};

/*
 * --max-value-size: bytes, or KiB or MiB with a K or M; from 1 byte to
 * TBL_LIMIT_MAX_VALUE.  0 or -EINVAL.
 */
static int set_max_value_size(const char *s)
{
	char digits[32];
	size_t n = strlen(s);
	uint64_t mult = 1, v;

	if (n == 0 || n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, n + 1);
	if (digits[n - 1] == 'K' || digits[n - 1] == 'k')
		mult = 1024;
	else if (digits[n - 1] == 'M' || digits[n - 1] == 'm')
		mult = 1024 * 1024;
	if (mult > 1)
		digits[--n] = '\0';
	if (parse_u64(digits, TBL_LIMIT_MAX_VALUE / mult, &v) < 0 || v == 0)
		return -EINVAL;
	max_value_size = (size_t)(v * mult);
	return 0;
}

/* SECONDS with an optional unit: s, m, h, d or w; or "forever" (0). */
static int parse_ttl(const char *s, uint64_t *out)
{
	static const struct { char unit; uint64_t secs; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 604800 },
	};
	char digits[32];
	size_t n = strlen(s);
	uint64_t mult = 1, v;
	int r;

	if (!strcmp(s, "forever")) {
		*out = 0;
		return 0;
	}
	if (n == 0 || n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, n + 1);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (digits[n - 1] == units[i].unit) {
			mult = units[i].secs;
			digits[--n] = '\0';
			break;
		}
	}
	r = parse_u64(digits, UINT64_MAX / mult, &v);
	if (r < 0)
		return r;
	*out = v * mult;
	return 0;
}

/* One family option into s; EXIT_USAGE (printed) if its value does not parse. */
static int family_option(const struct cmd *c, int ch, struct tbl_family_settings *s,
			 unsigned *given)
{
	uint64_t v;
	int r;

	switch (ch) {
	case O_TYPE:
		if (cell_type_parse(slice_str(optarg), &s->type) < 0)
			return usage(c, "--type %s: not a type (string, bytes, boolean, byte, i32, "
				     "i64, f32 or f64)", optarg);
		*given |= SET_TYPE;
		return 0;
	case O_MAX_VERSIONS:
		if (!strcmp(optarg, "unlimited"))
			v = 0;
		else if (opt_count(c, "--max-versions", optarg, UINT32_MAX, &v))
			return EXIT_USAGE;
		s->max_versions = (uint32_t)v;
		*given |= SET_MAX_VERSIONS;
		return 0;
	case O_TTL:
		r = parse_ttl(optarg, &v);
		if (r == -ERANGE)
			return usage(c, "--ttl %s: too large", optarg);
		if (r < 0)
			return usage(c, "--ttl %s: not a number of seconds (with an optional unit "
				     "s, m, h, d or w) or \"forever\"", optarg);
		s->ttl = v;
		*given |= SET_TTL;
		return 0;
	case O_GROUP:
		if (strlen(optarg) > TBL_MAX_FAMILY_NAME)
			return usage(c, "--locality-group %s: longer than %u bytes", optarg,
				     TBL_MAX_FAMILY_NAME);
		snprintf(s->locality_group, sizeof(s->locality_group), "%s", optarg);
		*given |= SET_GROUP;
		return 0;
	case O_COMPRESSION:
		if (!strcmp(optarg, "none"))
			v = 0;
		else if (parse_u64(optarg, 22, &v) < 0)
			return usage(c, "--compression %s: not a zstd level 1..22, 0 or \"none\"",
				     optarg);
		s->compression = (int)v;
		*given |= SET_COMPRESSION;
		return 0;
	}
	return usage(c, "internal: unexpected option %d", ch);
}

/*
 * Arguments given with --escaped: the escapes smolctl prints (\\ \n \t \r
 * \xHH) turned back into bytes, so a key copied from get or scan output
 * names the same row.  -EINVAL for any other backslash sequence.
 */
static int unescape_arg(const char *s, struct buf *out)
{
	tool_buf_clear(out);
	for (; *s; s++) {
		char c = *s;
		if (c != '\\') {
			tool_buf_append(out, &c, 1);
			continue;
		}
		c = *++s;
		if (c == '\\' || c == 'n' || c == 't' || c == 'r') {
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : '\\';
			tool_buf_append(out, &c, 1);
		} else if (c == 'x') {
			unsigned v = 0;
			for (int i = 1; i <= 2; i++) {
				char h = s[i];
				if (h >= '0' && h <= '9')
					v = v * 16 + (unsigned)(h - '0');
				else if (h >= 'a' && h <= 'f')
					v = v * 16 + (unsigned)(h - 'a' + 10);
				else if (h >= 'A' && h <= 'F')
					v = v * 16 + (unsigned)(h - 'A' + 10);
				else
					return -EINVAL;
			}
			c = (char)v;
			tool_buf_append(out, &c, 1);
			s += 2;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ text for people */

/*
 * Append p[0..n) escaped for a terminal: backslash as \\, newline, tab and
 * CR as \n \t \r, printable ASCII as itself, and every other byte as \xHH --
 * except that with keep_utf8 a valid UTF-8 sequence of a printable
 * character (U+00A0 and above) stays as it is.  unescape_arg reverses it.
 */
static void esc_append(struct buf *out, const void *p, size_t n, int keep_utf8)
{
	const unsigned char *s = p;
	char hex[5];

	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		int k;

		if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
			hex[0] = '\\';
			hex[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
			tool_buf_append(out, hex, 2);
			i++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f) {
			tool_buf_append(out, &s[i], 1);
			i++;
			continue;
		}
		/* C1 controls, U+0080..U+009F, are 0xC2 0x80..0x9F */
		if (keep_utf8 && c >= 0x80 && (k = cell_utf8_char((const char *)s + i, n - i)) > 0 &&
		    !(c == 0xC2 && s[i + 1] < 0xA0)) {
			tool_buf_append(out, &s[i], (size_t)k);
			i += (size_t)k;
			continue;
		}
		snprintf(hex, sizeof(hex), "\\x%02x", c);
		tool_buf_append(out, hex, 4);
		i++;
	}
}

/* Characters (not bytes) in valid UTF-8 text: the width a column needs. */
static size_t text_width(const char *p, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)p[i] & 0xC0) != 0x80)
			w++;
	return w;
}

/* A timestamp in microseconds as ISO 8601 UTC with microseconds. */
static void format_time(uint64_t ts, char *out, size_t size)
{
	time_t secs = (time_t)(ts / 1000000);
	struct tm tm;

	if (ts / 1000000 > (uint64_t)INT64_MAX / 2 || !gmtime_r(&secs, &tm)) {
		snprintf(out, size, "-");
		return;
	}
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ts % 1000000));
}

static const char *const cell_columns[] = {
	"family", "qualifier", "timestamp", "time (UTC)", "type", "value",
};
#define NCOLS 6

/*
 * One row for people: its key on a line of its own, then its cells as an
 * aligned table (a heading, then a line per version), indented.  Columns are
 * aligned within the row, so a scan needs no more memory than its largest
 * row.  The value is cell_render's text without its trailing newline,
 * escaped (bytes values show only ASCII).
 */
static int print_row(FILE *out, const struct tbl_row *row)
{
	struct buf text = BUF_INIT, tmp = BUF_INIT;
	size_t (*spans)[NCOLS][2];   /* per cell and column: offset in text, length */
	size_t width[NCOLS];
	int r = 0;

	tool_buf_clear(&tmp);
	esc_append(&tmp, row->key, row->key_len, 1);
	fprintf(out, "%.*s\n", (int)tmp.len, tmp.data);
	if (!row->ncells)
		goto out_tmp;
	spans = tool_calloc(row->ncells, sizeof(*spans));
	for (int k = 0; k < NCOLS; k++)
		width[k] = strlen(cell_columns[k]);
	for (size_t i = 0; i < row->ncells; i++) {
		const struct tbl_cell *cell = &row->cells[i];
		char num[32], iso[48];
		size_t start[NCOLS + 1];

		start[0] = text.len;
		tool_buf_append(&text, cell->family, strlen(cell->family));
		start[1] = text.len;
		esc_append(&text, cell->qualifier, cell->qualifier_len, 1);
		start[2] = text.len;
		snprintf(num, sizeof(num), "%" PRIu64, cell->ts);
		tool_buf_append(&text, num, strlen(num));
		start[3] = text.len;
		format_time(cell->ts, iso, sizeof(iso));
		tool_buf_append(&text, iso, strlen(iso));
		start[4] = text.len;
		tool_buf_append(&text, cell_type_name(cell->value.type),
			   strlen(cell_type_name(cell->value.type)));
		start[5] = text.len;
		tool_buf_clear(&tmp);
		r = cell_render(&tmp, &cell->value);
		if (r < 0) {
			tool_buf_clear(&tmp);
			esc_append(&tmp, row->key, row->key_len, 1);
			r = fail(r, "row %.*s: cannot show a value of family %s", (int)tmp.len,
				 tmp.data, cell->family);
			goto out;
		}
		if (cell->value.type != CELL_BYTES && tmp.len && tmp.data[tmp.len - 1] == '\n')
			tmp.len--;
		esc_append(&text, tmp.data, tmp.len, cell->value.type != CELL_BYTES);
		start[6] = text.len;
		for (int k = 0; k < NCOLS; k++) {
			size_t w;

			spans[i][k][0] = start[k];
			spans[i][k][1] = start[k + 1] - start[k];
			w = text_width(text.data + start[k], spans[i][k][1]);
			if (w > width[k])
				width[k] = w;
		}
	}
	for (size_t i = 0; i <= row->ncells; i++) {
		fputs("  ", out);
		for (int k = 0; k < NCOLS; k++) {
			const char *p = i ? text.data + spans[i - 1][k][0] : cell_columns[k];
			size_t len = i ? spans[i - 1][k][1] : strlen(p);
			size_t pad = width[k] - text_width(p, len);

			if (k == 2) {   /* the timestamp: numbers align right */
				fprintf(out, "%*s%.*s  ", (int)pad, "", (int)len, p);
			} else if (k == NCOLS - 1) {
				fprintf(out, "%.*s\n", (int)len, p);
			} else {
				fprintf(out, "%.*s%*s  ", (int)len, p, (int)pad, "");
			}
		}
	}
out:
	free(spans);
	tool_buf_free(&text);
out_tmp:
	tool_buf_free(&tmp);
	return r;
}

/* ------------------------------------------------------------ progress on a terminal */

/*
 * A progress line on stderr, redrawn at most ten times a second, only when
 * stderr is a terminal (and stdout is not the same screen when the
 * command's output goes there).  Nothing at all otherwise.  tio counts
 * bytes both ways: input bytes read, output bytes written.
 */
struct progress {
	int on;
	const char *what;          /* "import", "export" */
	uint64_t total;            /* bytes; 0: unknown */
	uint64_t t0, last;         /* monotonic microseconds */
	int drawn;
};

static int term_columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static void human_bytes(char *out, size_t size, double v)
{
	static const char *const sfx[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, size, i ? "%.1f %s" : "%.0f %s", v, sfx[i]);
}

static void human_duration(char *out, size_t size, double secs)
{
	uint64_t s = secs > 0 ? (uint64_t)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(out, size, "%" PRIu64 ":%02u:%02u", s / 3600, (unsigned)(s / 60 % 60),
			 (unsigned)(s % 60));
	else
		snprintf(out, size, "%u:%02u", (unsigned)(s / 60), (unsigned)(s % 60));
}

static void progress_init(struct progress *p, const char *what, uint64_t total,
			  int stdout_is_output)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(STDERR_FILENO) && !(stdout_is_output && isatty(STDOUT_FILENO));
	p->what = what;
	p->total = total;
	p->t0 = tool_now_micros();
}

/* tio's callback: total from tio if it knows one, else what the command knew. */
static void progress_update(void *arg, uint64_t done, uint64_t total)
{
	static const char hashes[] = "##################################################";
	struct progress *p = arg;
	uint64_t now = tool_now_micros();
	double secs = (double)(now - p->t0) / 1e6, rate;
	char line[512], tail[256], a[32], b[32], c[32], d[32];
	int cols = term_columns() - 1;

	if (total)
		p->total = total;
	/* at most ten times a second, but always the end (done == total) */
	if (!p->on || (p->drawn && now - p->last < 100000 && !(p->total && done == p->total)))
		return;
	p->last = now;
	p->drawn = 1;
	rate = secs > 0 ? (double)done / secs : 0;
	human_bytes(a, sizeof(a), (double)done);
	human_bytes(c, sizeof(c), rate);
	if (p->total && done <= p->total) {
		double frac = (double)done / (double)p->total;
		int n, bar;

		human_bytes(b, sizeof(b), (double)p->total);
		if (rate > 0 && secs >= 1)   /* a rate from less than a second says little */
			human_duration(d, sizeof(d), (double)(p->total - done) / rate);
		else
			snprintf(d, sizeof(d), "?");
		n = snprintf(tail, sizeof(tail), " %3d%%  %s of %s  %s/s  ETA %s",
			     (int)(frac * 100), a, b, c, d);
		/* the bar keeps one width while the tail's numbers grow (60: their widest) */
		bar = cols - (int)strlen(p->what) - (n > 60 ? n : 60) - 3;
		if (bar > (int)sizeof(hashes) - 1)
			bar = (int)sizeof(hashes) - 1;
		if (bar >= 10)
			snprintf(line, sizeof(line), "%s [%.*s%*s]%s", p->what, (int)(frac * bar),
				 hashes, bar - (int)(frac * bar), "", tail);
		else
			snprintf(line, sizeof(line), "%s%s", p->what, tail);
	} else {
		human_duration(d, sizeof(d), secs);
		snprintf(line, sizeof(line), "%s  %s  %s/s  %s", p->what, a, c, d);
	}
	fprintf(stderr, "\r%.*s\033[K", cols, line);
	fflush(stderr);
}

static void progress_end(struct progress *p)
{
	if (p->on && p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

/*
 * For work the engine reports no progress of (check, compact): a line with
 * what is being done and the time it has taken, redrawn by a thread twice a
 * second.  On a terminal only, as above.
 */
struct ticker {
	int on, stop;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	char status[256];
	uint64_t t0;
};

static void ticker_draw(struct ticker *t)
{
	char d[32];

	human_duration(d, sizeof(d), (double)(tool_now_micros() - t->t0) / 1e6);
	fprintf(stderr, "\r%.*s  %s\033[K", term_columns() - 8, t->status, d);
	fflush(stderr);
}

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	struct timespec ts;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		ticker_draw(t);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 500000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->cond, &t->mu, &ts);
	}
	fputs("\r\033[K", stderr);
	fflush(stderr);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

__attribute__((format(printf, 2, 3)))
static void ticker_set(struct ticker *t, const char *fmt, ...)
{
	va_list ap;

	if (!t->on)
		return;
	pthread_mutex_lock(&t->mu);
	va_start(ap, fmt);
	vsnprintf(t->status, sizeof(t->status), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&t->mu);
}

static void ticker_start(struct ticker *t, const char *status)
{
	memset(t, 0, sizeof(*t));
	t->on = isatty(STDERR_FILENO);
	if (!t->on)
		return;
	snprintf(t->status, sizeof(t->status), "%s", status);
	t->t0 = tool_now_micros();
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cond, NULL);
	if (pthread_create(&t->thread, NULL, ticker_main, t) != 0)
		t->on = 0;
}

static void ticker_stop(struct ticker *t)
{
	if (!t->on)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cond);
	t->on = 0;
}

/* ------------------------------------------------------------ opening the database */

enum open_mode {
	OPEN_EXISTING,      /* the database must be there */
	OPEN_CREATE,        /* create the directory and the database if missing */
	OPEN_READONLY,      /* the database must be there; nothing in it is changed */
};

/* The message for a database that could not be opened; EXIT_ERROR. */
static int open_failed(int r)
{
	struct stat st;

	if (r == -EBUSY) {
		say("%s is in use by another process (a mounted smolfs or another smolctl); "
		    "nothing was changed", datadir);
	} else if (r == -ENOENT && stat(datadir, &st) < 0) {
		say("%s: no such directory", datadir);
	} else if (r == -ENOENT) {
		say("%s holds no smolfs database (smolctl create-table makes one)", datadir);
	} else if (r == -EUCLEAN) {
		say("%s: the database is damaged: %s (smolctl check lists every problem)",
		    datadir, kv_strerror(r));
	} else {
		say("%s: cannot open the database: %s", datadir, kv_strerror(r));
	}
	return EXIT_ERROR;
}

static int need_datadir(const struct cmd *c)
{
	if (!datadir || !*datadir)
		return usage(c, "no database directory: give -d DATADIR or set SMOLFS_DATADIR");
	return 0;
}

/*
 * Does DATADIR look like a database (smolfs(5): CURRENT names the manifest,
 * LOCK is made by the first open)?  Checked before opening without create,
 * so that a mistyped -d leaves no LOCK file in a directory that is not a
 * database; a directory with either file goes to the engine, which tells
 * damage (a missing CURRENT beside tables) from absence.
 */
static int looks_like_database(void)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/CURRENT", datadir);
	if (stat(path, &st) == 0)
		return 1;
	snprintf(path, sizeof(path), "%s/LOCK", datadir);
	return stat(path, &st) == 0;
}

static int db_open(enum open_mode mode, struct tbl_db **db)
{
	struct tbl_options o;
	int r;

	if (mode != OPEN_CREATE && !looks_like_database())
		return open_failed(-ENOENT);
	tbl_options_init(&o);
	if (max_value_size)
		o.max_value_size = max_value_size;
	o.kv.create_if_missing = mode == OPEN_CREATE;
	o.kv.read_only = mode == OPEN_READONLY;
	o.kv.log = engine_log;
	o.kv.log_arg = (void *)datadir;
	r = tbl_open(datadir, &o, db);
	if (r < 0)
		return open_failed(r);
	return 0;
}

/* Close, reporting a background error; status is the command's so far. */
static int db_close(struct tbl_db *db, int status)
{
	int r = tbl_close(db);

	if (r < 0 && status == 0)
		status = fail(r, "closing the database");
	return status;
}

/* ------------------------------------------------------------ file sizes per tree */

#define MAX_LEVELS 16

struct tree_sizes {
	char name[72];
	uint64_t files[MAX_LEVELS], bytes[MAX_LEVELS], entries[MAX_LEVELS];
	uint64_t raw[MAX_LEVELS];        /* uncompressed key and value bytes */
	uint64_t raw_unknown[MAX_LEVELS];  /* files whose raw bytes the engine could not read */
	int used;                  /* a group or the property names it */
};

static struct tree_sizes *sizes_find(struct tree_sizes **t, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*t)[i].name, name))
			return &(*t)[i];
	*t = tool_realloc(*t, (*n + 1) * sizeof(**t));
	memset(&(*t)[*n], 0, sizeof(**t));
	snprintf((*t)[*n].name, sizeof((*t)[*n].name), "%s", name);
	return &(*t)[(*n)++];
}

/*
 * Files, bytes and entries per tree and level, from the engine's "sstables"
 * property: one line per live file, "[tree NAME ]level L NNNNNN.sst B bytes,
 * E entries, ..., raw R bytes" (R is "?" for a file the engine could not
 * open).  The default tree is always in the result.
 */
static void tree_sizes_read(struct tbl_db *db, struct tree_sizes **out, size_t *n)
{
	char *text = kv_property(tbl_kv(db), "sstables");
	char *line, *save = NULL;

	*out = NULL;
	*n = 0;
	sizes_find(out, n, "default");
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[72] = "default";
		const char *rest = line;
		uint64_t number, bytes, entries, raw = 0;
		struct tree_sizes *t;
		const char *rp;
		int level, has_raw;

		if (!strncmp(line, "tree ", 5)) {
			const char *sp = strchr(line + 5, ' ');
			if (!sp || (size_t)(sp - line - 5) >= sizeof(name))
				continue;
			memcpy(name, line + 5, (size_t)(sp - line - 5));
			name[sp - line - 5] = '\0';
			rest = sp + 1;
		}
		if (sscanf(rest, "level %d %" SCNu64 ".sst %" SCNu64 " bytes, %" SCNu64 " entries",
			   &level, &number, &bytes, &entries) != 4 || level < 0 ||
		    level >= MAX_LEVELS) {
			say("%s: warning: an sstables line smolctl does not understand: %s",
			    datadir, line);
			continue;
		}
		rp = strstr(rest, ", raw ");
		has_raw = rp && sscanf(rp, ", raw %" SCNu64 " bytes", &raw) == 1;
		t = sizes_find(out, n, name);
		t->files[level]++;
		t->bytes[level] += bytes;
		t->entries[level] += entries;
		t->raw[level] += raw;
		t->raw_unknown[level] += !has_raw;
	}
	free(text);
}

static uint64_t sizes_sum(const uint64_t *v)
{
	uint64_t s = 0;

	for (int l = 0; l < MAX_LEVELS; l++)
		s += v[l];
	return s;
}

/*
 * The levels of one tree that hold files, as lines of an aligned table:
 * the compression ratio is the raw key and value bytes over the file bytes
 * ("?" if the engine could not read some file's raw size).
 */
static void print_levels(const char *indent, const struct tree_sizes *t)
{
	int any = 0;

	for (int l = 0; l < MAX_LEVELS; l++) {
		char ratio[32] = "?";

		if (!t->files[l])
			continue;
		if (!t->raw_unknown[l] && t->bytes[l])
			snprintf(ratio, sizeof(ratio), "%.2f", (double)t->raw[l] / (double)t->bytes[l]);
		printf("%s%-8s  %5d  %6" PRIu64 "  %12" PRIu64 "  %10" PRIu64 "  %8.1f  %12" PRIu64
		       "  %6s\n", indent, t->name, l, t->files[l], t->bytes[l], t->entries[l],
		       t->entries[l] ? (double)t->bytes[l] / (double)t->entries[l] : 0.0, t->raw[l],
		       ratio);
		any = 1;
	}
	if (!any)
		printf("%s%-8s  %5s  %6d  %12d  %10d  %8s  %12d  %6s\n", indent, t->name, "-", 0, 0,
		       0, "-", 0, "-");
}

static void print_levels_heading(const char *indent)
{
	printf("%s%-8s  %5s  %6s  %12s  %10s  %8s  %12s  %6s\n", indent, "tree", "level", "files",
	       "bytes", "entries", "B/entry", "raw bytes", "ratio");
}

/* A table's live families, in byte order, and their settings. */
struct table_families {
	char **names;
	struct tbl_family_settings *set;
	size_t n;
};

static void table_families_free(struct table_families *tf)
{
	if (tf->names)
		tbl_free_names(tf->names, tf->n);
	free(tf->set);
	memset(tf, 0, sizeof(*tf));
}

/* 0, or an error from the table layer (its message names table and family). */
static int table_families_load(struct tbl_db *db, const char *table, struct table_families *tf)
{
	int r;

	memset(tf, 0, sizeof(*tf));
	r = tbl_list_families(db, table, &tf->names, &tf->n);
	if (r < 0)
		return r;
	tf->set = tool_calloc(tf->n ? tf->n : 1, sizeof(*tf->set));
	for (size_t i = 0; i < tf->n && r == 0; i++)
		r = tbl_get_family(db, table, tf->names[i], &tf->set[i]);
	if (r < 0)
		table_families_free(tf);
	return r;
}

/*
 * The live data of one locality group of a table: a scan of every visible
 * version of the group's families, counted (rows that hold cells of them,
 * cells, kv key and value bytes).  Reads only the group's tree.
 */
static int group_live(struct tbl_db *db, const char *table, const struct table_families *tf,
		      const char *group, struct tbl_scan_counts *c)
{
	const char **fams = tool_calloc(tf->n ? tf->n : 1, sizeof(*fams));
	struct tbl_read r;
	struct tbl_scan *s;
	const struct tbl_row *row;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	memset(&r, 0, sizeof(r));
	for (size_t i = 0; i < tf->n; i++)
		if (!strcmp(tf->set[i].locality_group, group))
			fams[r.nfamilies++] = tf->names[i];
	r.families = fams;
	if (r.nfamilies)   /* a group without families holds nothing visible */
		ret = tbl_scan_new(db, table, &r, &s);
	if (r.nfamilies && ret == 0) {
		while ((ret = tbl_scan_next(s, &row)) > 0)
			;
		tbl_scan_counts(s, c);
		tbl_scan_free(s);
	}
	free(fams);
	return ret;
}

/* ------------------------------------------------------------ create-table, drop-table, ... */

/* Positional arguments: exactly n of them after the options. */
static int want_args(const struct opts *o, int n, const char *const *names)
{
	int have = o->argc - optind;

	if (have < n)
		return usage(o->c, "missing %s", names[have]);
	if (have > n)
		return usage(o->c, "unexpected argument %s", o->argv[optind + n]);
	return 0;
}

static int run_create_table(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE" };
	struct tbl_db *db;
	struct opts o;
	int ch, r;

	opts_init(&o, c, argc, argv, "", NULL);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		return EXIT_USAGE;
	}
	if ((r = want_args(&o, 1, names)) || (r = need_datadir(c)))
		return r;
	if ((r = db_open(OPEN_CREATE, &db)))
		return r;
	r = tbl_create_table(db, argv[optind]);
	if (r < 0)
		r = fail(r, "create-table %s", argv[optind]);
	return db_close(db, r);
}

static int run_drop_table(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE" };
	static const struct option lo[] = {
		{ "force", no_argument, NULL, O_FORCE }, { NULL, 0, NULL, 0 },
	};
	struct tbl_db *db;
	struct opts o;
	int ch, r, force = 0;

	opts_init(&o, c, argc, argv, "f", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		if (ch == O_FORCE || ch == 'f')
			force = 1;
		else
			return EXIT_USAGE;
	}
	if ((r = want_args(&o, 1, names)) || (r = need_datadir(c)))
		return r;
	if ((r = db_open(OPEN_EXISTING, &db)))
		return r;
	r = tbl_drop_table(db, argv[optind], force);
	if (r == -ENOTEMPTY) {
		say("%s: table %s holds cells: nothing was dropped (--force drops it with them)",
		    datadir, argv[optind]);
		r = EXIT_ERROR;
	} else if (r < 0) {
		r = fail(r, "drop-table %s", argv[optind]);
	}
	return db_close(db, r);
}

static int run_list_tables(const struct cmd *c, int argc, char **argv)
{
	struct tbl_db *db;
	struct opts o;
	char **names;
	size_t n;
	int ch, r;

	opts_init(&o, c, argc, argv, "", NULL);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		return EXIT_USAGE;
	}
	if ((r = want_args(&o, 0, NULL)) || (r = need_datadir(c)))
		return r;
	if ((r = db_open(OPEN_READONLY, &db)))
		return r;
	r = tbl_list_tables(db, &names, &n);
	if (r < 0) {
		r = fail(r, "list-tables");
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", names[i]);
		tbl_free_names(names, n);
	}
	return db_close(db, r);
}

/* add-family and alter-family: the same options, a different call. */
static int family_command(const struct cmd *c, int argc, char **argv, int alter)
{
	static const char *const names[] = { "TABLE", "FAMILY" };
	struct tbl_family_settings s, cur;
	unsigned given = 0;
	struct tbl_db *db;
	struct opts o;
	const char *table, *family;
	int ch, r;

	tbl_family_settings_init(&s);
	opts_init(&o, c, argc, argv, "", family_longopts);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		if (ch >= OPT_HELP)
			return EXIT_USAGE;
		if ((r = family_option(c, ch, &s, &given)))
			return r;
	}
	if ((r = want_args(&o, 2, names)) || (r = need_datadir(c)))
		return r;
	if (alter && !given)
		return usage(c, "nothing to change: give at least one of --type, --max-versions, "
			     "--ttl, --locality-group, --compression");
	table = argv[optind];
	family = argv[optind + 1];
	if ((r = db_open(OPEN_EXISTING, &db)))
		return r;
	if (!alter) {
		r = tbl_add_family(db, table, family, &s);
		if (r < 0)
			r = fail(r, "add-family %s %s", table, family);
		return db_close(db, r);
	}
	/* alter: start from the stored settings, change only the given ones */
	r = tbl_get_family(db, table, family, &cur);
	if (r < 0)
		return db_close(db, fail(r, "alter-family %s %s", table, family));
	if (given & SET_TYPE)
		cur.type = s.type;
	if (given & SET_MAX_VERSIONS)
		cur.max_versions = s.max_versions;
	if (given & SET_TTL)
		cur.ttl = s.ttl;
	if (given & SET_GROUP)
		memcpy(cur.locality_group, s.locality_group, sizeof(cur.locality_group));
	if (given & SET_COMPRESSION)
		cur.compression = s.compression;
	r = tbl_alter_family(db, table, family, &cur);
	if (r == -ENOTEMPTY) {
		say("%s: table %s, family %s holds cells: it cannot move to locality group %s; "
		    "nothing was changed", datadir, table, family, cur.locality_group);
		r = EXIT_ERROR;
	} else if (r < 0) {
		r = fail(r, "alter-family %s %s", table, family);
	}
	return db_close(db, r);
}

static int run_add_family(const struct cmd *c, int argc, char **argv)
{
	return family_command(c, argc, argv, 0);
}

static int run_alter_family(const struct cmd *c, int argc, char **argv)
{
	return family_command(c, argc, argv, 1);
}

static int run_drop_family(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE", "FAMILY" };
	static const struct option lo[] = {
		{ "force", no_argument, NULL, O_FORCE }, { NULL, 0, NULL, 0 },
	};
	struct tbl_db *db;
	struct opts o;
	int ch, r, force = 0;

	opts_init(&o, c, argc, argv, "f", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		if (ch == O_FORCE || ch == 'f')
			force = 1;
		else
			return EXIT_USAGE;
	}
	if ((r = want_args(&o, 2, names)) || (r = need_datadir(c)))
		return r;
	if ((r = db_open(OPEN_EXISTING, &db)))
		return r;
	r = tbl_drop_family(db, argv[optind], argv[optind + 1], force);
	if (r == -ENOTEMPTY) {
		say("%s: table %s, family %s holds cells: nothing was dropped (--force drops it "
		    "with them)", datadir, argv[optind], argv[optind + 1]);
		r = EXIT_ERROR;
	} else if (r < 0) {
		r = fail(r, "drop-family %s %s", argv[optind], argv[optind + 1]);
	}
	return db_close(db, r);
}

/* ------------------------------------------------------------ describe */

static void setting_u64(char *out, size_t size, uint64_t v, const char *zero)
{
	if (v)
		snprintf(out, size, "%" PRIu64, v);
	else
		snprintf(out, size, "%s", zero);
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

/* The widths of describe's name columns. */
struct describe_widths {
	int family, group;
};

static void describe_families(const struct table_families *tf, struct describe_widths w)
{
	if (!tf->n) {
		printf("no families (smolctl add-family declares one)\n");
		return;
	}
	printf("%-*s  %-7s  %-12s  %-10s  %-*s  %s\n", w.family, "family", "type",
	       "max_versions", "ttl", w.group, "locality_group", "compression");
	for (size_t i = 0; i < tf->n; i++) {
		const struct tbl_family_settings *fs = &tf->set[i];
		char mv[24], ttl[24], comp[24];

		setting_u64(mv, sizeof(mv), fs->max_versions, "unlimited");
		setting_u64(ttl, sizeof(ttl), fs->ttl, "forever");
		setting_u64(comp, sizeof(comp), (uint64_t)fs->compression, "none");
		printf("%-*s  %-7s  %-12s  %-10s  %-*s  %s\n", w.family, tf->names[i],
		       cell_type_name(fs->type), mv, ttl, w.group, fs->locality_group, comp);
	}
}

/* The groups: "default" (in the kv default tree), then each of the table's own. */
static void describe_groups(const struct table_families *tf, const struct tbl_group_info *groups,
			    size_t ngroups, struct describe_widths w)
{
	printf("%-*s  %-8s  %s\n", w.group, "locality group", "tree", "families");
	for (size_t g = 0; g <= ngroups; g++) {
		const char *gname = g ? groups[g - 1].group : "default";
		int any = 0, level = 0;

		printf("%-*s  %-8s  ", w.group, gname, g ? groups[g - 1].tree : "default");
		for (size_t i = 0; i < tf->n; i++) {
			if (strcmp(tf->set[i].locality_group, gname))
				continue;
			printf("%s%s", any ? ", " : "", tf->names[i]);
			any = 1;
			if (tf->set[i].compression > level)
				level = tf->set[i].compression;
		}
		printf("%s\n", any ? "" : "(none)");
		if (g)
			printf("%-*s  compressed at level %d (the highest of its families%s)\n",
			       w.group + 10, "", level, any ? "" : "; 0 with none");
	}
	printf("(the default tree also holds the default group of every other table, and the\n"
	       "schema: its sizes below are not this table's alone, and it is compressed at the\n"
	       "level of whoever opens the database, 1 for smolctl)\n");
}

/* describe --scan: each group's live data, against its own tree's files. */
static int describe_live(struct tbl_db *db, const char *table, const struct table_families *tf,
			 const struct tbl_group_info *groups, size_t ngroups,
			 struct tree_sizes **sizes, size_t *nsizes, struct describe_widths w)
{
	printf("\nlive data (a scan of every visible version, per group)\n");
	printf("%-*s  %9s  %9s  %12s  %s\n", w.group, "locality group", "rows", "cells",
	       "key+value B", "against the files");
	for (size_t g = 0; g <= ngroups; g++) {
		const char *gname = g ? groups[g - 1].group : "default";
		struct tbl_scan_counts cnt;
		uint64_t fb = 0;
		int r = group_live(db, table, tf, gname, &cnt);

		if (r < 0)
			return fail(r, "describe %s: scanning locality group %s", table, gname);
		if (g)
			fb = sizes_sum(sizes_find(sizes, nsizes, groups[g - 1].tree)->bytes);
		printf("%-*s  %9" PRIu64 "  %9" PRIu64 "  %12" PRIu64, w.group, gname, cnt.rows,
		       cnt.cells, cnt.bytes);
		if (g && fb)
			printf("  %.2f of %" PRIu64 " B\n", (double)cnt.bytes / (double)fb, fb);
		else if (g)
			printf("  (no files yet)\n");
		else
			printf("  (shared tree)\n");
	}
	return 0;
}

static int run_describe(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE" };
	static const struct option lo[] = {
		{ "scan", no_argument, NULL, O_SCAN }, { NULL, 0, NULL, 0 },
	};
	struct describe_widths w = { 6, 14 };
	struct table_families tf = { NULL, NULL, 0 };
	struct tbl_group_info *groups = NULL;
	struct tree_sizes *sizes = NULL;
	size_t ngroups = 0, nsizes = 0;
	struct tbl_db *db;
	struct opts o;
	const char *table;
	int ch, r, scan = 0;

	opts_init(&o, c, argc, argv, "", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		if (ch == O_SCAN)
			scan = 1;
		else
			return EXIT_USAGE;
	}
	if ((r = want_args(&o, 1, names)) || (r = need_datadir(c)))
		return r;
	table = argv[optind];
	if ((r = db_open(OPEN_READONLY, &db)))
		return r;
	r = table_families_load(db, table, &tf);
	if (r < 0) {
		r = fail(r, "describe %s", table);
		goto out;
	}
	r = tbl_list_groups(db, table, &groups, &ngroups);
	if (r < 0) {
		r = fail(r, "describe %s: reading its locality groups", table);
		goto out;
	}
	for (size_t i = 0; i < tf.n; i++) {
		w.family = max_int(w.family, (int)strlen(tf.names[i]));
		w.group = max_int(w.group, (int)strlen(tf.set[i].locality_group));
	}
	for (size_t g = 0; g < ngroups; g++)
		w.group = max_int(w.group, (int)strlen(groups[g].group));
	tree_sizes_read(db, &sizes, &nsizes);

	printf("table %s in %s\n\n", table, datadir);
	describe_families(&tf, w);
	printf("\n");
	describe_groups(&tf, groups, ngroups, w);
	printf("\nfiles (live SSTables)\n");
	print_levels_heading("");
	print_levels("", &sizes[0]);
	for (size_t g = 0; g < ngroups; g++)
		print_levels("", sizes_find(&sizes, &nsizes, groups[g].tree));
	r = scan ? describe_live(db, table, &tf, groups, ngroups, &sizes, &nsizes, w) : 0;
out:
	free(sizes);
	tbl_free_groups(groups, ngroups);
	table_families_free(&tf);
	return db_close(db, r);
}

/* ------------------------------------------------------------ get and scan */

struct read_args {
	struct tbl_read r;
	const char **families;
	size_t nfamilies;
	struct buf column;          /* --column's qualifier */
	const char *column_family;
	const char *qprefix;        /* --qualifier-prefix as given */
	struct buf qprefix_bytes;   /* and as bytes (unescaped with --escaped) */
	int since, before;          /* --since, --before given */
	int json, escaped;
};

static void read_args_free(struct read_args *a)
{
	free(a->families);
	tool_buf_free(&a->column);
	tool_buf_free(&a->qprefix_bytes);
}

/* A timestamp argument: microseconds since the epoch, below TBL_TS_NOW. */
static int opt_timestamp(const struct cmd *c, const char *opt, const char *s, uint64_t *out)
{
	int r = parse_u64(s, TBL_TS_NOW - 1, out);

	if (r == -ERANGE)
		return usage(c, "%s %s: too large (at most %" PRIu64 ")", opt, s, TBL_TS_NOW - 1);
	if (r < 0)
		return usage(c, "%s %s: not a timestamp (microseconds since the epoch)", opt, s);
	return 0;
}

/* The options get and scan share; 0, EXIT_USAGE (printed), or 1 if ch is not one. */
static int read_option(const struct cmd *c, int ch, struct read_args *a)
{
	uint64_t v;

	switch (ch) {
	case O_FAMILY:
	case 'f':
		a->families = tool_realloc(a->families, (a->nfamilies + 1) * sizeof(*a->families));
		a->families[a->nfamilies++] = optarg;
		return 0;
	case O_VERSIONS:
	case 'n':
		if (opt_count(c, "--versions", optarg, UINT32_MAX, &v))
			return EXIT_USAGE;
		if (v == 0)
			return usage(c, "--versions 0: give 1 or more (without it, every version)");
		a->r.versions = (uint32_t)v;
		return 0;
	case O_JSON:
		a->json = 1;
		return 0;
	case O_SINCE:
		if (opt_timestamp(c, "--since", optarg, &v))
			return EXIT_USAGE;
		a->r.ts_min = v;
		a->since = 1;
		return 0;
	case O_BEFORE:
		if (opt_timestamp(c, "--before", optarg, &v))
			return EXIT_USAGE;
		if (v == 0)
			return usage(c, "--before 0: no version is older than 0");
		a->r.ts_max = v;
		a->before = 1;
		return 0;
	case O_QPREFIX:
		a->qprefix = optarg;
		return 0;
	case O_ESCAPED:
	case 'e':
		a->escaped = 1;
		return 0;
	}
	return 1;
}

static void read_args_finish(struct read_args *a)
{
	if (a->nfamilies) {
		a->r.families = a->families;
		a->r.nfamilies = a->nfamilies;
	}
}

/* An argument that names bytes (a row key, prefix, value ...), unescaped if escaped. */
static int bytes_arg(const struct cmd *c, int escaped, const char *what, const char *s,
		     struct buf *out)
{
	if (!escaped) {
		tool_buf_set(out, s, strlen(s));
		return 0;
	}
	if (unescape_arg(s, out) < 0)
		return usage(c, "%s %s: a bad escape (\\\\, \\n, \\t, \\r and \\xHH are known)",
			     what, s);
	return 0;
}

static int key_arg(const struct cmd *c, const struct read_args *a, const char *what,
		   const char *s, struct buf *out)
{
	return bytes_arg(c, a->escaped, what, s, out);
}

/*
 * The filters get and scan share, once every option is known (--escaped may
 * come last): the qualifier prefix as bytes, and a time range that is not
 * empty.  0 or EXIT_USAGE (printed).
 */
static int read_filters_finish(const struct cmd *c, struct read_args *a)
{
	int r;

	if (a->since && a->before && a->r.ts_min >= a->r.ts_max)
		return usage(c, "--since %" PRIu64 " --before %" PRIu64 ": an empty time range "
			     "(since <= timestamp < before)", a->r.ts_min, a->r.ts_max);
	if (a->qprefix) {
		if ((r = key_arg(c, a, "--qualifier-prefix", a->qprefix, &a->qprefix_bytes)))
			return r;
		a->r.qualifier = a->qprefix_bytes.data ? a->qprefix_bytes.data : "";
		a->r.qualifier_len = a->qprefix_bytes.len;
		a->r.qualifier_exact = 0;
	}
	return 0;
}

/* Do the read's options filter cells out (so that no row may just mean none matched)? */
static int read_filters_cells(const struct read_args *a)
{
	return a->since || a->before || a->qprefix;
}

static int print_json_row(const char *table, const struct tbl_row *row)
{
	struct buf key = BUF_INIT;
	int r = tio_write_row(stdout, table, row);

	if (r < 0) {
		esc_append(&key, row->key, row->key_len, 1);
		r = fail_tio(r, "table %s, row %.*s: writing it as JSON", table, (int)key.len,
			 key.data);
		tool_buf_free(&key);
	}
	return r;
}

static int run_get(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE", "ROW" };
	static const struct option lo[] = {
		{ "family", required_argument, NULL, O_FAMILY },
		{ "column", required_argument, NULL, O_COLUMN },
		{ "versions", required_argument, NULL, O_VERSIONS },
		{ "since", required_argument, NULL, O_SINCE },
		{ "before", required_argument, NULL, O_BEFORE },
		{ "qualifier-prefix", required_argument, NULL, O_QPREFIX },
		{ "json", no_argument, NULL, O_JSON },
		{ "escaped", no_argument, NULL, O_ESCAPED },
		{ NULL, 0, NULL, 0 },
	};
	struct read_args a;
	struct buf key = BUF_INIT;
	struct tbl_row *row = NULL;
	struct tbl_db *db;
	struct opts o;
	const char *table, *column = NULL;
	int ch, r, missing = 0;

	memset(&a, 0, sizeof(a));
	opts_init(&o, c, argc, argv, "f:n:e", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP) {
			read_args_free(&a);
			return cmd_help_text(c);
		}
		if (ch == O_COLUMN) {
			column = optarg;
			continue;
		}
		if (ch >= OPT_HELP || (r = read_option(c, ch, &a)) != 0) {
			read_args_free(&a);
			return ch >= OPT_HELP || r == 1 ? EXIT_USAGE : r;
		}
	}
	r = want_args(&o, 2, names);
	if (!r && column) {
		const char *colon = strchr(column, ':');

		if (!colon || colon == column)
			r = usage(c, "--column %s: give FAMILY:QUALIFIER", column);
		else if (a.nfamilies)
			r = usage(c, "--column and --family do not go together");
		else if (a.qprefix)
			r = usage(c, "--column and --qualifier-prefix do not go together");
		else if (!(r = key_arg(c, &a, "--column", colon + 1, &a.column))) {
			a.column_family = tool_memdup(column, (size_t)(colon - column));
			a.families = tool_realloc(a.families, sizeof(*a.families));
			a.families[a.nfamilies++] = a.column_family;
			a.r.qualifier = a.column.data ? a.column.data : "";
			a.r.qualifier_len = a.column.len;
			a.r.qualifier_exact = 1;
		}
	}
	if (!r)
		r = key_arg(c, &a, "ROW", argv[optind + 1], &key);
	if (!r)
		r = read_filters_finish(c, &a);
	if (!r)
		r = need_datadir(c);
	if (r)
		goto out_args;
	read_args_finish(&a);
	table = argv[optind];
	if ((r = db_open(OPEN_READONLY, &db)))
		goto out_args;
	r = tbl_get_row(db, table, key.data ? key.data : "", key.len, &a.r, &row);
	for (size_t i = 0; r == -ENOENT && i < a.nfamilies && !missing; i++) {
		struct tbl_family_settings fs;

		/* an unknown family is an error of its own, not an empty answer */
		if (tbl_get_family(db, table, a.families[i], &fs) < 0)
			missing = 1;
	}
	if (missing) {
		r = fail(-ENOENT, "get %s", table);
	} else if (r == -ENOENT && tbl_table_exists(db, table) == 0) {
		struct buf shown = BUF_INIT;

		esc_append(&shown, key.data, key.len, 1);
		say("%s: table %s: no row %.*s%s", datadir, table, (int)shown.len, shown.data,
		    read_filters_cells(&a) ? " with cells matching the options" :
		    a.r.families || a.r.versions ? " with cells of the families asked for" : "");
		tool_buf_free(&shown);
		r = EXIT_ERROR;
	} else if (r < 0) {
		r = fail(r, "get %s", table);
	} else if (a.json) {
		r = print_json_row(table, row);
	} else {
		r = print_row(stdout, row);
	}
	tbl_row_free(row);
	r = db_close(db, r);
out_args:
	free((char *)a.column_family);
	tool_buf_free(&key);
	read_args_free(&a);
	return r;
}

static int run_scan(const struct cmd *c, int argc, char **argv)
{
	static const char *const names[] = { "TABLE" };
	static const struct option lo[] = {
		{ "prefix", required_argument, NULL, O_PREFIX },
		{ "start", required_argument, NULL, O_START },
		{ "end", required_argument, NULL, O_END },
		{ "reverse", no_argument, NULL, O_REVERSE },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "family", required_argument, NULL, O_FAMILY },
		{ "versions", required_argument, NULL, O_VERSIONS },
		{ "since", required_argument, NULL, O_SINCE },
		{ "before", required_argument, NULL, O_BEFORE },
		{ "qualifier-prefix", required_argument, NULL, O_QPREFIX },
		{ "keys-only", no_argument, NULL, O_KEYS_ONLY },
		{ "json", no_argument, NULL, O_JSON },
		{ "count", no_argument, NULL, O_COUNT },
		{ "escaped", no_argument, NULL, O_ESCAPED },
		{ NULL, 0, NULL, 0 },
	};
	const char *prefix = NULL, *start = NULL, *end = NULL;
	struct buf bp = BUF_INIT, bs = BUF_INIT, be = BUF_INIT, shown = BUF_INIT;
	struct read_args a;
	struct tbl_scan *s = NULL;
	const struct tbl_row *row;
	struct tbl_scan_counts cnt;
	struct tbl_db *db;
	struct opts o;
	const char *table;
	int ch, r, count = 0, rows = 0;
	uint64_t v;

	memset(&a, 0, sizeof(a));
	opts_init(&o, c, argc, argv, "f:n:p:l:rke", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		r = 0;
		switch (ch) {
		case OPT_HELP:
			read_args_free(&a);
			return cmd_help_text(c);
		case O_PREFIX:
		case 'p':
			prefix = optarg;
			continue;
		case O_START:
			start = optarg;
			continue;
		case O_END:
			end = optarg;
			continue;
		case O_REVERSE:
		case 'r':
			a.r.reverse = 1;
			continue;
		case O_LIMIT:
		case 'l':
			if (opt_count(c, "--limit", optarg, UINT64_MAX, &v)) {
				read_args_free(&a);
				return EXIT_USAGE;
			}
			a.r.row_limit = v;
			continue;
		case O_KEYS_ONLY:
		case 'k':
			a.r.row_keys_only = 1;
			continue;
		case O_COUNT:
			count = 1;
			continue;
		}
		if (ch >= OPT_HELP || (r = read_option(c, ch, &a)) != 0) {
			read_args_free(&a);
			return ch >= OPT_HELP || r == 1 ? EXIT_USAGE : r;
		}
	}
	r = want_args(&o, 1, names);
	if (!r && prefix && !(r = key_arg(c, &a, "--prefix", prefix, &bp))) {
		a.r.prefix = bp.data ? bp.data : "";
		a.r.prefix_len = bp.len;
	}
	if (!r && start && !(r = key_arg(c, &a, "--start", start, &bs))) {
		a.r.start = bs.data ? bs.data : "";
		a.r.start_len = bs.len;
	}
	if (!r && end && !(r = key_arg(c, &a, "--end", end, &be))) {
		a.r.end = be.data ? be.data : "";
		a.r.end_len = be.len;
	}
	if (!r && a.r.row_keys_only && (a.nfamilies || a.r.versions || read_filters_cells(&a)))
		r = usage(c, "--keys-only reads no cells: --family, --versions, --since, --before "
			  "and --qualifier-prefix do not go with it");
	if (!r)
		r = read_filters_finish(c, &a);
	if (!r)
		r = need_datadir(c);
	if (r)
		goto out_args;
	read_args_finish(&a);
	table = argv[optind];
	if ((r = db_open(OPEN_READONLY, &db)))
		goto out_args;
	r = tbl_scan_new(db, table, &a.r, &s);
	if (r < 0) {
		r = fail(r, "scan %s", table);
		goto out;
	}
	while ((r = tbl_scan_next(s, &row)) > 0) {
		int w = 0;

		if (count)
			continue;
		if (a.json) {
			w = print_json_row(table, row);
		} else if (a.r.row_keys_only) {
			tool_buf_clear(&shown);
			esc_append(&shown, row->key, row->key_len, 1);
			printf("%.*s\n", (int)shown.len, shown.data);
		} else {
			if (rows++)
				putchar('\n');
			w = print_row(stdout, row);
		}
		if (w) {
			r = w;
			goto out;
		}
		if (ferror(stdout)) {
			say("%s: scan %s: writing to standard output: %s", datadir, table,
			    strerror(errno));
			r = EXIT_ERROR;
			goto out;
		}
	}
	if (r < 0) {
		r = fail(r, "scan %s", table);
		goto out;
	}
	if (count) {
		tbl_scan_counts(s, &cnt);
		if (a.json)
			printf("{\"rows\":%" PRIu64 ",\"cells\":%" PRIu64 ",\"bytes\":%" PRIu64 "}\n",
			       cnt.rows, cnt.cells, cnt.bytes);
		else
			printf("rows %" PRIu64 "\ncells %" PRIu64 "\nbytes %" PRIu64 "\n", cnt.rows,
			       cnt.cells, cnt.bytes);
	}
out:
	tbl_scan_free(s);
	r = db_close(db, r);
out_args:
	tool_buf_free(&bp);
	tool_buf_free(&bs);
	tool_buf_free(&be);
	tool_buf_free(&shown);
	read_args_free(&a);
	return r;
}

/* ------------------------------------------------------------ set, delete-*, increment, check-and-set */

/*
 * The commands that change one cell or one row name it as get shows it:
 * TABLE, ROW, and a column FAMILY:QUALIFIER (the qualifier is everything
 * after the first colon); with --escaped, ROW, QUALIFIER and the values are
 * read with the escapes of the output, so anything get printed can be
 * pasted back.  Each is one row mutation of the table API (tbl_mutate_row,
 * tbl_increment, tbl_check_and_mutate), synced before the command returns.
 * smolctl checks the limits, the table, the family, the value and (for the
 * deletes) that there is something to delete before writing, so that every
 * refusal names the table, row and column as the output shows them and
 * says that nothing was changed; the table layer validates a mutation
 * whole before writing any of it as well.
 */
enum write_kind {
	W_SET, W_DELETE_VERSION, W_DELETE_CELL, W_DELETE_FAMILY, W_DELETE_ROW, W_INCREMENT,
	W_CHECK_AND_SET,
};

#define EXIT_NOT_SET 3   /* check-and-set: the check failed, nothing was written */

struct write_args {
	enum write_kind kind;
	const char *table;
	struct buf row;
	char *family;               /* NULL: the command names no family */
	struct buf qual;
	int has_qual;               /* a column FAMILY:QUALIFIER was named */
	struct buf where;           /* "table T, row R[, column F:Q | , family F]" */
	enum cell_type type;        /* --type; CELL_INVALID: the cell's family's */
	uint64_t ts;                /* --timestamp, delete-version's TS; TBL_TS_NOW */
	int64_t delta;              /* increment */
	struct buf value;           /* set, check-and-set: the value's text */
	const char *expect;         /* check-and-set --expect, as given */
	struct buf expect_bytes;
	int expect_absent, escaped;
};

static void write_args_free(struct write_args *w)
{
	tool_buf_free(&w->row);
	free(w->family);
	tool_buf_free(&w->qual);
	tool_buf_free(&w->where);
	tool_buf_free(&w->value);
	tool_buf_free(&w->expect_bytes);
}

/*
 * Bytes for a message, escaped as the output escapes them; a key longer than
 * anyone would read (a row key over the limit) is cut, saying how long it is.
 */
static void esc_shown(struct buf *out, const void *p, size_t n)
{
	char more[64];

	if (n <= 256) {
		esc_append(out, p, n, 1);
		return;
	}
	esc_append(out, p, 64, 1);
	snprintf(more, sizeof(more), "... (%zu bytes)", n);
	tool_buf_append(out, more, strlen(more));
}

/* FAMILY:QUALIFIER into w->family and w->qual; 0 or EXIT_USAGE (printed). */
static int column_arg(const struct cmd *c, struct write_args *w, const char *s)
{
	const char *colon = strchr(s, ':');

	if (!colon || colon == s)
		return usage(c, "%s: give a column as FAMILY:QUALIFIER", s);
	w->family = tool_memdup(s, (size_t)(colon - s));
	w->has_qual = 1;
	return bytes_arg(c, w->escaped, "QUALIFIER", colon + 1, &w->qual);
}

/* A signed decimal integer (increment's DELTA): 0 or EXIT_USAGE (printed). */
static int delta_arg(const struct cmd *c, const char *s, int64_t *out)
{
	uint64_t v;
	int neg = *s == '-', r;

	r = parse_u64(s + (neg || *s == '+'), neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &v);
	if (r == -ERANGE)
		return usage(c, "DELTA %s: out of the range of i64", s);
	if (r < 0)
		return usage(c, "DELTA %s: not an integer", s);
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* "DATADIR: table T, row R, column F:Q: " and the rest; EXIT_ERROR. */
__attribute__((format(printf, 2, 3)))
static int write_refused(const struct write_args *w, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	say("%s: %.*s: %s", datadir, (int)w->where.len, w->where.data, why);
	return EXIT_ERROR;
}

/* The positional arguments of each command, and the reading of them. */
static int write_positionals(const struct cmd *c, struct opts *o, struct write_args *w)
{
	static const char *const names[][4] = {
		[W_SET] = { "TABLE", "ROW", "FAMILY:QUALIFIER", "VALUE" },
		[W_DELETE_VERSION] = { "TABLE", "ROW", "FAMILY:QUALIFIER", "TIMESTAMP" },
		[W_DELETE_CELL] = { "TABLE", "ROW", "FAMILY:QUALIFIER", NULL },
		[W_DELETE_FAMILY] = { "TABLE", "ROW", "FAMILY", NULL },
		[W_DELETE_ROW] = { "TABLE", "ROW", NULL, NULL },
		[W_INCREMENT] = { "TABLE", "ROW", "FAMILY:QUALIFIER", "DELTA" },
		[W_CHECK_AND_SET] = { "TABLE", "ROW", "FAMILY:QUALIFIER", "VALUE" },
	};
	char **argv = o->argv + optind;
	int n = 0, have = o->argc - optind, r;

	while (n < 4 && names[w->kind][n])
		n++;
	/* increment's DELTA is optional */
	if ((r = want_args(o, w->kind == W_INCREMENT && have == n - 1 ? n - 1 : n,
			   names[w->kind])))
		return r;
	w->table = argv[0];
	if ((r = bytes_arg(c, w->escaped, "ROW", argv[1], &w->row)))
		return r;
	if (w->kind == W_DELETE_FAMILY)
		w->family = tool_strdup(argv[2]);
	else if (w->kind != W_DELETE_ROW && (r = column_arg(c, w, argv[2])))
		return r;
	switch (w->kind) {
	case W_SET:
	case W_CHECK_AND_SET:
		if ((r = bytes_arg(c, w->escaped, "VALUE", argv[3], &w->value)))
			return r;
		break;
	case W_DELETE_VERSION:
		if (opt_timestamp(c, "TIMESTAMP", argv[3], &w->ts))
			return EXIT_USAGE;
		break;
	case W_INCREMENT:
		w->delta = 1;
		if (have == 4 && (r = delta_arg(c, argv[3], &w->delta)))
			return r;
		break;
	default:
		break;
	}
	if (w->kind == W_CHECK_AND_SET) {
		if (!w->expect && !w->expect_absent)
			return usage(c, "give --expect VALUE or --expect-absent");
		if (w->expect && w->expect_absent)
			return usage(c, "--expect and --expect-absent do not go together");
		if (w->expect && (r = bytes_arg(c, w->escaped, "--expect", w->expect,
						&w->expect_bytes)))
			return r;
	}
	/* for messages: the cell as the output shows it */
	tool_buf_append(&w->where, "table ", 6);
	tool_buf_append(&w->where, w->table, strlen(w->table));
	tool_buf_append(&w->where, ", row ", 6);
	esc_shown(&w->where, w->row.data, w->row.len);
	if (w->has_qual) {
		tool_buf_append(&w->where, ", column ", 9);
		tool_buf_append(&w->where, w->family, strlen(w->family));
		tool_buf_append(&w->where, ":", 1);
		esc_shown(&w->where, w->qual.data, w->qual.len);
	} else if (w->family) {
		tool_buf_append(&w->where, ", family ", 9);
		tool_buf_append(&w->where, w->family, strlen(w->family));
	}
	return 0;
}

/*
 * What can be refused before anything is written: the limits (before the
 * database is opened), the table, the family, and the value parsed by its
 * type.  0 or EXIT_ERROR (printed).
 */
static int write_check_names(const struct write_args *w)
{
	int r = tbl_check_row_key(w->row.data ? w->row.data : "", w->row.len);

	if (r == 0 && w->has_qual)
		r = tbl_check_qualifier(w->qual.data ? w->qual.data : "", w->qual.len);
	if (r < 0)
		return write_refused(w, "%s; nothing was changed", tbl_strerror(r));
	return 0;
}

/*
 * The table and the family must exist; a value (v != NULL) is parsed by
 * --type, else as a write to the cell's file on a mount is: by the type of
 * the cell's newest version, or for a new cell by its family's.
 */
static int write_check_schema(struct tbl_db *db, struct write_args *w, struct cell_value *v)
{
	struct tbl_family_settings fs;
	struct tbl_cell_stat st;
	struct buf shown = BUF_INIT;
	const char *whose = "the type given";
	int r = tbl_table_exists(db, w->table);

	if (r == -ENOENT)
		return write_refused(w, "no table %s; nothing was changed", w->table);
	if (r < 0)
		return write_refused(w, "%s", tbl_strerror(r));
	if (!w->family)
		return 0;
	r = tbl_get_family(db, w->table, w->family, &fs);
	if (r == -ENOENT)
		return write_refused(w, "table %s has no column family %s (add-family declares "
				     "one); nothing was changed", w->table, w->family);
	if (r < 0)
		return write_refused(w, "%s", tbl_strerror(r));
	if (!v)
		return 0;
	if (w->type == CELL_INVALID) {
		r = tbl_stat_cell(db, NULL, w->table, w->row.data ? w->row.data : "", w->row.len,
				  w->family, w->qual.data ? w->qual.data : "", w->qual.len,
				  TBL_TS_NEWEST, &st);
		if (r < 0 && r != -ENOENT)
			return write_refused(w, "%s", tbl_strerror(r));
		w->type = r == 0 ? st.type : fs.type;
		whose = r == 0 ? "the cell's type; --type names another"
			       : "the family's type; --type names another";
	}
	r = cell_parse(w->type, slice_make(w->value.data ? w->value.data : "", w->value.len), v);
	if (r < 0) {
		esc_shown(&shown, w->value.data, w->value.len);
		r = write_refused(w, "\"%.*s\" is not a valid %s (%s); nothing was changed",
				  (int)shown.len, shown.data, cell_type_name(w->type), whose);
		tool_buf_free(&shown);
	}
	return r;
}

/*
 * A delete must find what it deletes, as rm does: a mistyped qualifier or
 * timestamp is an error, not a silent success.  0 or EXIT_ERROR (printed).
 */
static int write_check_present(struct tbl_db *db, const struct write_args *w)
{
	const void *row = w->row.data ? w->row.data : "", *q = w->qual.data ? w->qual.data : "";
	struct tbl_cell_stat st;
	int r;

	switch (w->kind) {
	case W_DELETE_VERSION:
		r = tbl_stat_cell(db, NULL, w->table, row, w->row.len, w->family, q, w->qual.len,
				  w->ts, &st);
		if (r == -ENOENT)
			return write_refused(w, "no version with timestamp %" PRIu64 "; nothing was "
					     "deleted", w->ts);
		break;
	case W_DELETE_CELL:
		r = tbl_stat_cell(db, NULL, w->table, row, w->row.len, w->family, q, w->qual.len,
				  TBL_TS_NEWEST, &st);
		if (r == -ENOENT)
			return write_refused(w, "no such cell; nothing was deleted");
		break;
	case W_DELETE_FAMILY:
		r = tbl_row_has_family(db, w->table, row, w->row.len, w->family);
		if (r == -ENOENT)
			return write_refused(w, "the row holds no cell of the family; nothing was "
					     "deleted (drop-family removes a family from the "
					     "schema)");
		break;
	case W_DELETE_ROW:
		r = tbl_row_exists(db, w->table, row, w->row.len);
		if (r == -ENOENT)
			return write_refused(w, "no such row; nothing was deleted");
		break;
	default:
		return 0;
	}
	if (r < 0)
		return write_refused(w, "%s", tbl_strerror(r));
	return 0;
}

/* increment: only an i32 or i64 cell (absent: of the family's type, counting from 0). */
static int write_check_increment(struct tbl_db *db, const struct write_args *w)
{
	const void *row = w->row.data ? w->row.data : "", *q = w->qual.data ? w->qual.data : "";
	struct tbl_family_settings fs;
	struct tbl_cell_stat st;
	int r = tbl_stat_cell(db, NULL, w->table, row, w->row.len, w->family, q, w->qual.len,
			      TBL_TS_NEWEST, &st);

	if (r == -ENOENT) {
		if ((r = tbl_get_family(db, w->table, w->family, &fs)) < 0)
			return write_refused(w, "%s", tbl_strerror(r));
		if (fs.type != CELL_I32 && fs.type != CELL_I64)
			return write_refused(w, "the cell is absent and its family's type is %s: "
					     "only i32 and i64 cells can be incremented; nothing "
					     "was changed", cell_type_name(fs.type));
		return 0;
	}
	if (r < 0)
		return write_refused(w, "%s", tbl_strerror(r));
	if (st.type != CELL_I32 && st.type != CELL_I64)
		return write_refused(w, "the cell is of type %s: only i32 and i64 cells can be "
				     "incremented; nothing was changed", cell_type_name(st.type));
	return 0;
}

/* check-and-set did not set: say what the cell holds instead; EXIT_NOT_SET. */
static int write_not_set(struct tbl_db *db, const struct write_args *w)
{
	const void *row = w->row.data ? w->row.data : "", *q = w->qual.data ? w->qual.data : "";
	struct tbl_cell_stat st;
	struct buf shown = BUF_INIT;
	void *text = NULL;
	size_t len = 0;
	int r = tbl_get_cell(db, NULL, w->table, row, w->row.len, w->family, q, w->qual.len,
			     TBL_TS_NEWEST, &st, &text, &len);

	if (r == 0) {
		if (st.type != CELL_BYTES && len && ((char *)text)[len - 1] == '\n')
			len--;
		esc_append(&shown, text, len, st.type != CELL_BYTES);
		write_refused(w, "not set: the newest value is \"%.*s\" (%s)%s", (int)shown.len,
			      shown.data, cell_type_name(st.type),
			      w->expect_absent ? ", not absent" : "");
	} else if (r == -ENOENT) {
		write_refused(w, "not set: the cell is absent");
	} else {
		write_refused(w, "not set (and reading the cell: %s)", tbl_strerror(r));
	}
	free(text);
	tool_buf_free(&shown);
	return EXIT_NOT_SET;
}

/*
 * Negative numbers as arguments: getopt would take set's VALUE -21.9 or
 * increment's DELTA -5 for options.  The write commands have no option
 * named by a digit, a dot or those letters, so such an argument is hidden
 * from getopt (as "N-21.9", which is no option) and given back after the
 * options are read -- unless it is the value of the option before it, which
 * getopt takes as it is.  After "--" nothing is an option anyway.
 */
struct numeric_args {
	char **hidden;              /* what getopt saw ... */
	char **orig;                /* ... and the argument itself */
	size_t n;
};

static int negative_number(const char *s)
{
	return s[0] == '-' && (isdigit((unsigned char)s[1]) || s[1] == '.' ||
			       !strncasecmp(s + 1, "inf", 3) || !strncasecmp(s + 1, "nan", 3));
}

/* Is prev an option whose value is the argument after it? */
static int option_takes_next(const char *prev)
{
	static const char *const with_value[] = {
		"--type", "--timestamp", "--expect", "--datadir", "--max-value-size",
	};
	size_t n = strlen(prev);

	if (n >= 2 && prev[0] == '-' && prev[1] != '-')   /* -d, or -d last of a cluster */
		return prev[n - 1] == 'd' && strspn(prev + 1, "e") == n - 2;
	if (n < 3 || strncmp(prev, "--", 2) || strchr(prev, '='))
		return 0;
	for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (!strncmp(with_value[i], prev, n))   /* the name or an abbreviation */
			return 1;
	return 0;
}

static void numeric_args_hide(struct numeric_args *na, int argc, char **argv)
{
	memset(na, 0, sizeof(*na));
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		char *h;

		if (!negative_number(argv[i]) || option_takes_next(argv[i - 1]))
			continue;
		na->hidden = tool_realloc(na->hidden, (na->n + 1) * sizeof(*na->hidden));
		na->orig = tool_realloc(na->orig, (na->n + 1) * sizeof(*na->orig));
		h = tool_malloc(strlen(argv[i]) + 2);
		h[0] = 'N';
		strcpy(h + 1, argv[i]);
		na->hidden[na->n] = h;
		na->orig[na->n++] = argv[i];
		argv[i] = h;
	}
}

/* Give the hidden arguments back (wherever getopt moved them), and free. */
static void numeric_args_restore(struct numeric_args *na, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		for (size_t k = 0; k < na->n; k++)
			if (argv[i] == na->hidden[k])
				argv[i] = na->orig[k];
	for (size_t k = 0; k < na->n; k++)
		free(na->hidden[k]);
	free(na->hidden);
	free(na->orig);
}

/*
 * A version written with an old --timestamp may be one that reads never
 * show: older than the family's ttl, or behind max_versions newer ones.  It
 * is written (as a write on a mount would be), but a silent success would
 * leave the user looking for it: say so on stderr; the status stays 0.
 */
static void warn_if_hidden(struct tbl_db *db, const struct write_args *w)
{
	struct tbl_family_settings fs;
	struct tbl_cell_stat st;
	int r = tbl_stat_cell(db, NULL, w->table, w->row.data ? w->row.data : "", w->row.len,
			      w->family, w->qual.data ? w->qual.data : "", w->qual.len, w->ts,
			      &st);

	char why[160] = "", *p = why;

	if (r != -ENOENT || tbl_get_family(db, w->table, w->family, &fs) < 0)
		return;
	if (fs.max_versions)
		p += snprintf(p, sizeof(why), "the newest %" PRIu32 " version%s", fs.max_versions,
			      fs.max_versions == 1 ? "" : "s");
	if (fs.ttl)
		snprintf(p, sizeof(why) - (size_t)(p - why), "%sthe versions of the last %" PRIu64
			 " seconds", fs.max_versions ? " and " : "", fs.ttl);
	say("%s: %.*s: warning: the version with timestamp %" PRIu64 " is written, but reads "
	    "do not show it (family %s keeps %s)", datadir, (int)w->where.len, w->where.data,
	    w->ts, w->family, why);
}

static int write_command(const struct cmd *c, int argc, char **argv, enum write_kind kind)
{
	static const struct option lo[] = {
		{ "escaped", no_argument, NULL, O_ESCAPED },
		/* set and check-and-set only */
		{ "type", required_argument, NULL, O_TYPE },
		{ "timestamp", required_argument, NULL, O_TIMESTAMP },
		/* check-and-set only */
		{ "expect", required_argument, NULL, O_EXPECT },
		{ "expect-absent", no_argument, NULL, O_EXPECT_ABSENT },
		{ NULL, 0, NULL, 0 },
	};
	struct option mine[6];
	struct numeric_args na;
	size_t nlo = kind == W_CHECK_AND_SET ? 5 : kind == W_SET ? 3 : 1;
	const void *row;
	struct write_args w;
	struct tbl_mutation m;
	struct cell_value v;
	struct tbl_db *db;
	struct opts o;
	int64_t result = 0;
	int ch, r, matched = 0;

	memset(&w, 0, sizeof(w));
	memset(&v, 0, sizeof(v));
	w.kind = kind;
	w.ts = TBL_TS_NOW;
	memcpy(mine, lo, nlo * sizeof(*lo));
	mine[nlo] = lo[5];
	opts_init(&o, c, argc, argv, "e", mine);
	numeric_args_hide(&na, argc, argv);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		r = 0;
		switch (ch) {
		case OPT_HELP:
			r = cmd_help_text(c);
			break;
		case O_ESCAPED:
		case 'e':
			w.escaped = 1;
			continue;
		case O_TYPE:
			if (cell_type_parse(slice_str(optarg), &w.type) < 0)
				r = usage(c, "--type %s: not a type (string, bytes, boolean, byte, "
					  "i32, i64, f32 or f64)", optarg);
			if (r)
				break;
			continue;
		case O_TIMESTAMP:
			if ((r = opt_timestamp(c, "--timestamp", optarg, &w.ts)))
				break;
			continue;
		case O_EXPECT:
			w.expect = optarg;
			continue;
		case O_EXPECT_ABSENT:
			w.expect_absent = 1;
			continue;
		default:
			r = EXIT_USAGE;
		}
		numeric_args_restore(&na, argc, argv);
		return r;
	}
	numeric_args_restore(&na, argc, argv);
	if ((r = write_positionals(c, &o, &w)) || (r = need_datadir(c)) ||
	    (r = write_check_names(&w))) {
		write_args_free(&w);
		return r;
	}
	if ((r = db_open(OPEN_EXISTING, &db))) {
		write_args_free(&w);
		return r;
	}
	r = write_check_schema(db, &w, kind == W_SET || kind == W_CHECK_AND_SET ? &v : NULL);
	if (!r)
		r = write_check_present(db, &w);
	if (!r && kind == W_INCREMENT)
		r = write_check_increment(db, &w);
	if (r)
		goto out;
	row = w.row.data ? w.row.data : "";
	memset(&m, 0, sizeof(m));
	m.family = w.family;
	m.qualifier = w.qual.data ? w.qual.data : "";
	m.qualifier_len = w.qual.len;
	m.ts = w.ts;
	switch (kind) {
	case W_SET:
	case W_CHECK_AND_SET:
		m.op = TBL_SET;
		m.value = v;
		break;
	case W_DELETE_VERSION:
		m.op = TBL_DELETE_VERSION;
		break;
	case W_DELETE_CELL:
		m.op = TBL_DELETE_CELL;
		break;
	case W_DELETE_FAMILY:
		m.op = TBL_DELETE_FAMILY;
		break;
	case W_DELETE_ROW:
		m.op = TBL_DELETE_ROW;
		break;
	case W_INCREMENT:
		break;
	}
	if (kind == W_INCREMENT)
		r = tbl_increment(db, w.table, row, w.row.len, w.family, m.qualifier,
				  m.qualifier_len, w.delta, &result, TBL_SYNC);
	else if (kind == W_CHECK_AND_SET)
		r = tbl_check_and_mutate(db, w.table, row, w.row.len, w.family, m.qualifier,
					 m.qualifier_len,
					 w.expect_absent ? NULL
					 : w.expect_bytes.data ? w.expect_bytes.data : "",
					 w.expect_bytes.len, &m, 1, NULL, 0, &matched, TBL_SYNC);
	else
		r = tbl_mutate_row(db, w.table, row, w.row.len, &m, 1, TBL_SYNC, NULL);
	if (r == -ERANGE && kind == W_INCREMENT) {
		r = write_refused(&w, "adding %" PRId64 " overflows the cell's type; nothing was "
				  "changed", w.delta);
	} else if (r == -EFBIG && (kind == W_SET || kind == W_CHECK_AND_SET)) {
		size_t have = v.type == CELL_STRING || v.type == CELL_BYTES ? v.v.data.len
									    : w.value.len;
		size_t limit = max_value_size ? max_value_size : TBL_DEFAULT_MAX_VALUE;

		r = write_refused(&w, "a value of %zu bytes is larger than a cell may hold (%zu "
				  "bytes; --max-value-size sets it); nothing was changed", have, limit);
	} else if (r < 0) {
		r = write_refused(&w, "%s", tbl_strerror(r));
	} else if (kind == W_INCREMENT) {
		printf("%" PRId64 "\n", result);
	} else if (kind == W_CHECK_AND_SET && !matched) {
		r = write_not_set(db, &w);
	} else if ((kind == W_SET || kind == W_CHECK_AND_SET) && w.ts != TBL_TS_NOW) {
		warn_if_hidden(db, &w);
	}
out:
	write_args_free(&w);
	return db_close(db, r);
}

static int run_set(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_SET);
}

static int run_delete_version(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_DELETE_VERSION);
}

static int run_delete_cell(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_DELETE_CELL);
}

static int run_delete_family(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_DELETE_FAMILY);
}

static int run_delete_row(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_DELETE_ROW);
}

static int run_increment(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_INCREMENT);
}

static int run_check_and_set(const struct cmd *c, int argc, char **argv)
{
	return write_command(c, argc, argv, W_CHECK_AND_SET);
}

/* ------------------------------------------------------------ check */

struct check_ctx {
	uint64_t problems;
	struct ticker *ticker;
};

/*
 * One problem, a line on stdout.  The ticker's line (stderr, maybe the same
 * terminal) is erased first, under the ticker's lock so that it is not
 * redrawn halfway through.
 */
__attribute__((format(printf, 2, 3)))
static void check_problem(struct check_ctx *c, const char *fmt, ...)
{
	struct ticker *t = c->ticker;
	va_list ap;

	c->problems++;
	if (t && t->on) {
		pthread_mutex_lock(&t->mu);
		fputs("\r\033[K", stderr);
		snprintf(t->status, sizeof(t->status), "check %s: %" PRIu64 " problem%s so far",
			 datadir, c->problems, c->problems == 1 ? "" : "s");
	}
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (t && t->on)
		pthread_mutex_unlock(&t->mu);
}

/* kv_verify's report: "DATADIR/FILE at OFFSET: MESSAGE". */
static void check_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	if (file)
		check_problem(arg, "%s/%s at %" PRIu64 ": %s", datadir, file, off, msg);
	else
		check_problem(arg, "%s at %" PRIu64 ": %s", datadir, off, msg);
}

/*
 * The table layer's part of check: its schema must load, and every visible
 * cell of every table must decode.
 */
/*
 * The engine's warnings while check opens the database are findings: a
 * damaged tail of the last log that recovery dropped, above all.
 */
static void check_log(void *arg, enum kv_log_level level, const char *msg)
{
	if (level <= KV_LOG_WARN)
		check_problem(arg, "%s: %s", datadir, msg);
}

static void check_tables(struct check_ctx *c)
{
	struct tbl_options o;
	struct tbl_db *db;
	char **names = NULL;
	size_t n = 0;
	int r;

	tbl_options_init(&o);
	if (max_value_size)
		o.max_value_size = max_value_size;
	o.kv.create_if_missing = 0;
	o.kv.read_only = 1;
	o.kv.log = engine_log;
	o.kv.log_arg = (void *)datadir;
	r = tbl_open(datadir, &o, &db);
	if (r < 0) {
		check_problem(c, "%s: the table layer cannot open it: %s", datadir,
			      kv_strerror(r));
		return;
	}
	r = tbl_list_tables(db, &names, &n);
	if (r < 0)
		check_problem(c, "%s: the schema: %s", datadir, kv_strerror(r));
	for (size_t i = 0; i < n; i++) {
		struct tbl_scan *s;
		const struct tbl_row *row;

		ticker_set(c->ticker, "check %s: table %s", datadir, names[i]);
		r = tbl_scan_new(db, names[i], NULL, &s);
		if (r == 0) {
			while ((r = tbl_scan_next(s, &row)) > 0)
				;
			tbl_scan_free(s);
		}
		if (r < 0)
			check_problem(c, "%s: table %s: %s", datadir, names[i], kv_strerror(r));
	}
	if (names)
		tbl_free_names(names, n);
	r = tbl_close(db);
	if (r < 0)
		check_problem(c, "%s: closing: %s", datadir, kv_strerror(r));
}

static int run_check(const struct cmd *c, int argc, char **argv)
{
	struct kv_options ko;
	struct check_ctx ctx = { 0, NULL };
	struct ticker tk;
	struct kv_db *kv;
	struct opts o;
	char *sst, **strays = NULL;
	size_t files = 0, nstrays = 0;
	int ch, r;

	opts_init(&o, c, argc, argv, "", NULL);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		return EXIT_USAGE;
	}
	if ((r = want_args(&o, 0, NULL)) || (r = need_datadir(c)))
		return r;
	/* the kv layer first, directly: it must work when the table layer cannot */
	kv_options_init(&ko);
	ko.create_if_missing = 0;
	ko.read_only = 1;   /* check never changes what it checks */
	ko.log = check_log;
	ko.log_arg = &ctx;
	if (!looks_like_database())
		return open_failed(-ENOENT);
	r = kv_open(datadir, &ko, &kv);
	if (r == -EUCLEAN) {
		printf("%s: %s\n", datadir, kv_strerror(r));
		say("%s: damaged: the database cannot be opened", datadir);
		return EXIT_ERROR;
	}
	if (r < 0)
		return open_failed(r);
	ticker_start(&tk, "check: reading every block");
	ctx.ticker = &tk;
	sst = kv_property(kv, "sstables");
	for (const char *p = sst; p && *p; p++)
		files += *p == '\n';
	free(sst);
	r = kv_verify(kv, check_report, &ctx);
	if (r < 0 && r != -EUCLEAN) {
		ticker_stop(&tk);
		kv_close(kv);
		return fail(r, "check");
	}
	/* files the engine left and does not use: reported, never deleted here */
	r = kv_stray_files(kv, &strays, &nstrays);
	if (r < 0)
		check_problem(&ctx, "%s: listing the directory: %s", datadir, kv_strerror(r));
	for (size_t i = 0; i < nstrays; i++) {
		printf("%s/%s: stray file, not part of the database (the next open for writing "
		       "deletes it)\n", datadir, strays[i]);
		free(strays[i]);
	}
	free(strays);
	r = kv_close(kv);
	if (r < 0)
		check_problem(&ctx, "%s: closing: %s", datadir, kv_strerror(r));
	/* then the table layer, if the files are sound */
	if (!ctx.problems)
		check_tables(&ctx);
	ticker_stop(&tk);
	if (ctx.problems) {
		say("%s: damaged: %" PRIu64 " problem%s (listed on standard output)", datadir,
		    ctx.problems, ctx.problems == 1 ? "" : "s");
		return EXIT_ERROR;
	}
	printf("%s: no problems found (%zu SSTable%s, the manifest, the schema and every "
	       "table's cells)", datadir, files, files == 1 ? "" : "s");
	if (nstrays)
		printf("; %zu stray file%s left as %s", nstrays, nstrays == 1 ? "" : "s",
		       nstrays == 1 ? "it is" : "they are");
	printf("\n");
	return 0;
}

/* ------------------------------------------------------------ repair */

static void repair_report(void *arg, const char *msg)
{
	(void)arg;
	printf("%s: %s\n", datadir, msg);
	fflush(stdout);
}

static int run_repair(const struct cmd *c, int argc, char **argv)
{
	struct kv_options ko;
	struct tbl_options to;
	struct tbl_db *db;
	struct opts o;
	struct stat st;
	int ch, r;

	opts_init(&o, c, argc, argv, "", NULL);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		return EXIT_USAGE;
	}
	if ((r = want_args(&o, 0, NULL)) || (r = need_datadir(c)))
		return r;
	if (stat(datadir, &st) < 0 || !S_ISDIR(st.st_mode))
		return open_failed(-ENOENT);
	kv_options_init(&ko);
	ko.log = engine_log;
	ko.log_arg = (void *)datadir;
	r = kv_repair(datadir, &ko, repair_report, NULL);
	if (r == -EBUSY)
		return open_failed(r);
	if (r < 0)
		return fail(r, "repair");
	/* the table layer on top: its schema must load (a lost group tree is made anew) */
	tbl_options_init(&to);
	if (max_value_size)
		to.max_value_size = max_value_size;
	to.kv = ko;
	to.kv.create_if_missing = 0;
	r = tbl_open(datadir, &to, &db);
	if (r < 0)
		return fail(r, "repair: the table layer cannot open the repaired database");
	return db_close(db, 0);
}

/* ------------------------------------------------------------ compact */

static void print_compact_sizes(const char *when, const struct tree_sizes *t)
{
	uint64_t files = sizes_sum(t->files);

	printf("%s: %" PRIu64 " file%s, %" PRIu64 " bytes", when, files, files == 1 ? "" : "s",
	       sizes_sum(t->bytes));
	for (int l = 0; l < MAX_LEVELS; l++)
		if (t->files[l])
			printf("; level %d: %" PRIu64, l, t->files[l]);
	printf("\n");
}

static void compact_step(void *arg, const char *table, const char *group)
{
	struct ticker *tk = arg;

	if (table)
		ticker_set(tk, "compact: table %s, locality group %s", table, group);
	else
		ticker_set(tk, "compact: the default tree (every table's default group)");
}

/* One tree's sizes before and after, if it held anything either time. */
static void print_compact_tree(const char *label, struct tree_sizes **before, size_t *nbefore,
			       struct tree_sizes **after, size_t *nafter, const char *tree)
{
	const struct tree_sizes *b = sizes_find(before, nbefore, tree);
	const struct tree_sizes *a = sizes_find(after, nafter, tree);

	printf("%s\n", label);
	print_compact_sizes("  before", b);
	print_compact_sizes("  after ", a);
}

static int run_compact(const struct cmd *c, int argc, char **argv)
{
	struct tree_sizes *before = NULL, *after = NULL;
	struct tbl_group_info *groups = NULL;
	size_t nbefore = 0, nafter = 0, ngroups = 0;
	const char *table = NULL;
	struct tbl_db *db;
	struct ticker tk;
	struct opts o;
	char label[1024];
	int ch, r;

	opts_init(&o, c, argc, argv, "", NULL);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		return EXIT_USAGE;
	}
	if (argc - optind > 1)
		return usage(c, "unexpected argument %s", argv[optind + 1]);
	if ((r = need_datadir(c)))
		return r;
	if (argc - optind == 1)
		table = argv[optind];
	if ((r = db_open(OPEN_EXISTING, &db)))
		return r;
	r = tbl_list_groups(db, table, &groups, &ngroups);
	if (r < 0) {
		r = fail(r, "compact%s%s", table ? " " : "", table ? table : "");
		goto out;
	}
	tree_sizes_read(db, &before, &nbefore);
	ticker_start(&tk, "compact");
	r = tbl_compact(db, table, compact_step, &tk);
	ticker_stop(&tk);
	if (r < 0) {
		r = fail(r, "compact%s%s", table ? " " : "", table ? table : "");
		goto out;
	}
	tree_sizes_read(db, &after, &nafter);
	if (table)
		printf("compacted table %s of %s: its range of the default tree and %zu locality "
		       "group%s of its own\n", table, datadir, ngroups, ngroups == 1 ? "" : "s");
	else
		printf("compacted every tree of %s: the default tree and %zu locality group%s\n",
		       datadir, ngroups, ngroups == 1 ? "" : "s");
	print_compact_tree(table ? "tree default (shared by every table's default group)"
				 : "tree default",
			   &before, &nbefore, &after, &nafter, "default");
	for (size_t g = 0; g < ngroups; g++) {
		snprintf(label, sizeof(label), "tree %s (table %s, locality group %s)",
			 groups[g].tree, groups[g].table, groups[g].group);
		print_compact_tree(label, &before, &nbefore, &after, &nafter, groups[g].tree);
	}
	r = 0;
out:
	free(before);
	free(after);
	tbl_free_groups(groups, ngroups);
	return db_close(db, r);
}

/* ------------------------------------------------------------ stats */

/* The engine's text, indented, for the part of it that smolctl does not redo. */
static void print_indented(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		printf("  %.*s\n", (int)n, p);
		p += n + (nl != NULL);
	}
}

/*
 * stats --scan: every table's live data, per locality group, against the
 * files of the group's tree (the default tree: all tables' default groups).
 */
static int stats_live(struct tbl_db *db, char **tables, size_t ntables,
		      const struct tbl_group_info *groups, size_t ngroups,
		      struct tree_sizes **sizes, size_t *nsizes)
{
	uint64_t default_live = 0, fb;

	printf("\nlive data (a scan of every visible version; live key+value bytes against file\n"
	       "bytes folds compression and dead versions together)\n");
	printf("  %-16s  %-14s  %-8s  %9s  %9s  %12s\n", "table", "locality group", "tree",
	       "rows", "cells", "key+value B");
	for (size_t t = 0; t < ntables; t++) {
		struct table_families tf;
		int r = table_families_load(db, tables[t], &tf);

		for (size_t g = 0; r == 0 && g <= ngroups; g++) {
			const struct tbl_group_info *gi = g ? &groups[g - 1] : NULL;
			struct tbl_scan_counts cnt;

			if (gi && (!gi->table || strcmp(gi->table, tables[t])))
				continue;   /* another table's group */
			r = group_live(db, tables[t], &tf, gi ? gi->group : "default", &cnt);
			if (r < 0)
				break;
			printf("  %-16s  %-14s  %-8s  %9" PRIu64 "  %9" PRIu64 "  %12" PRIu64 "\n",
			       tables[t], gi ? gi->group : "default", gi ? gi->tree : "default",
			       cnt.rows, cnt.cells, cnt.bytes);
			if (!gi) {
				default_live += cnt.bytes;
				continue;
			}
			fb = sizes_sum(sizes_find(sizes, nsizes, gi->tree)->bytes);
			if (fb)
				printf("  %-16s  %-14s  %-8s  live/file bytes %.2f\n", "", "", "",
				       (double)cnt.bytes / (double)fb);
		}
		table_families_free(&tf);
		if (r < 0)
			return fail(r, "stats: scanning table %s", tables[t]);
	}
	fb = sizes_sum((*sizes)[0].bytes);
	if (fb)
		printf("  default tree: live/file bytes %.2f (the schema's few records not "
		       "counted)\n", (double)default_live / (double)fb);
	return 0;
}

static int run_stats(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scan", no_argument, NULL, O_SCAN }, { NULL, 0, NULL, 0 },
	};
	struct tbl_group_info *groups = NULL;
	struct tree_sizes *sizes = NULL;
	size_t ngroups = 0, nsizes = 0, ntables = 0;
	char **tables = NULL, *text, *engine;
	struct tbl_db *db;
	struct opts o;
	int ch, r, scan = 0;

	opts_init(&o, c, argc, argv, "", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		if (ch == OPT_HELP)
			return cmd_help_text(c);
		if (ch == O_SCAN)
			scan = 1;
		else
			return EXIT_USAGE;
	}
	if ((r = want_args(&o, 0, NULL)) || (r = need_datadir(c)))
		return r;
	if ((r = db_open(OPEN_READONLY, &db)))
		return r;
	r = tbl_list_tables(db, &tables, &ntables);
	if (r == 0)
		r = tbl_list_groups(db, NULL, &groups, &ngroups);
	if (r < 0) {
		r = fail(r, "stats: reading the schema");
		goto out;
	}
	tree_sizes_read(db, &sizes, &nsizes);

	printf("database %s: %zu table%s\n\n", datadir, ntables, ntables == 1 ? "" : "s");
	printf("trees\n");
	printf("  default   the default locality group of every table, and the schema\n");
	for (size_t g = 0; g < ngroups; g++) {
		printf("  %-8s  table %s, locality group %s\n", groups[g].tree,
		       groups[g].table ? groups[g].table : "? (no table record)", groups[g].group);
		sizes_find(&sizes, &nsizes, groups[g].tree)->used = 1;
	}
	sizes[0].used = 1;
	for (size_t i = 0; i < nsizes; i++)
		if (!sizes[i].used)
			printf("  %-8s  no locality group refers to it\n", sizes[i].name);

	printf("\nfiles per tree and level (live SSTables; B/entry: file bytes per kv entry; raw\n"
	       "bytes: the entries' keys and values uncompressed; ratio: raw bytes / file bytes)\n");
	print_levels_heading("  ");
	for (size_t i = 0; i < nsizes; i++)
		print_levels("  ", &sizes[i]);
	if (!scan)
		printf("  (stats --scan compares live bytes with file bytes per tree)\n");
	if (scan && (r = stats_live(db, tables, ntables, groups, ngroups, &sizes, &nsizes)))
		goto out;

	engine = kv_property(tbl_kv(db), "stats");
	/* "stats" repeats the levels, then the counters: show the counters only */
	text = engine ? strstr(engine, "last sequence") : NULL;
	printf("\nthe engine's counters, since this smolctl opened the database (the block "
	       "cache\nstarts empty, so its hit rate says little offline; a mounted smolfs "
	       "shows\nits own)\n");
	print_indented(text ? text : engine);
	free(engine);
	r = 0;
out:
	free(sizes);
	tbl_free_groups(groups, ngroups);
	if (tables)
		tbl_free_names(tables, ntables);
	return db_close(db, r);
}

/* ------------------------------------------------------------ export and import */

/*
 * Interrupts.  Export and import stop cleanly on SIGINT (Ctrl-C), SIGTERM or
 * SIGHUP instead of dying: the handler only records the signal, which tio
 * checks between lines, and the command then says how far it got and exits
 * with 128 + the signal's number.  The handler is installed without
 * SA_RESTART, so a read waiting on a terminal or pipe returns at once; the
 * signals are blocked while the database opens, so the engine's threads
 * (which inherit the mask) never take them.
 */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	interrupted = sig;
}

static const int interrupt_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* Install the handler, and block the signals (unblock_interrupts once the database is open). */
static void catch_interrupts(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(interrupt_signals) / sizeof(*interrupt_signals); i++) {
		sigaction(interrupt_signals[i], &sa, NULL);
		sigaddset(&set, interrupt_signals[i]);
	}
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Unblock them in this thread: one that came meanwhile is handled now. */
static void unblock_interrupts(void)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(interrupt_signals) / sizeof(*interrupt_signals); i++)
		sigaddset(&set, interrupt_signals[i]);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* The exit status of a command stopped by a signal, as a shell reports one. */
static int interrupted_status(void)
{
	return 128 + interrupted;
}

/*
 * A temporary file for writing path in place: in path's directory (so the
 * rename over path stays in one filesystem), named ".NAME.XXXXXX", with the
 * mode a new file gets (0666 less the umask).  Returns its descriptor and
 * the malloc'd name in *tmp, or -1 with errno.
 */
static int temp_beside(const char *path, char **tmp)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	mode_t mask = umask(0);
	int fd;

	umask(mask);
	*tmp = malloc(strlen(path) + 16);
	if (!*tmp)
		return -1;
	sprintf(*tmp, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
	fd = mkstemp(*tmp);
	if (fd < 0) {
		int e = errno;
		free(*tmp);
		*tmp = NULL;
		errno = e;
		return -1;
	}
	if (fchmod(fd, 0666 & ~mask) < 0) {
		int e = errno;
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
		errno = e;
		return -1;
	}
	return fd;
}

/* fsync the directory that holds path, so a rename into it is durable. */
static int sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd, r = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		r = -1;
	if (fd >= 0)
		close(fd);
	return r;
}

static int run_export(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "table", required_argument, NULL, O_TABLE },
		{ "prefix", required_argument, NULL, O_PREFIX },
		{ "output", required_argument, NULL, 'o' },
		{ "escaped", no_argument, NULL, O_ESCAPED },
		{ NULL, 0, NULL, 0 },
	};
	const char *table = NULL, *prefix = NULL, *path = NULL;
	struct buf bp = BUF_INIT;
	struct tio_progress tp;
	struct tio_stats st;
	struct progress pg;
	struct read_args a;
	struct tbl_db *db;
	struct opts o;
	FILE *out = stdout;
	char *tmp = NULL;
	int ch, r, fd;

	memset(&a, 0, sizeof(a));
	opts_init(&o, c, argc, argv, "t:p:o:e", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		switch (ch) {
		case OPT_HELP:
			return cmd_help_text(c);
		case O_TABLE:
		case 't':
			table = optarg;
			break;
		case O_PREFIX:
		case 'p':
			prefix = optarg;
			break;
		case 'o':
			path = optarg;
			break;
		case O_ESCAPED:
		case 'e':
			a.escaped = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if ((r = want_args(&o, 0, NULL)) || (r = need_datadir(c)))
		return r;
	if (prefix && (r = key_arg(c, &a, "--prefix", prefix, &bp)))
		return r;
	catch_interrupts();
	r = db_open(OPEN_READONLY, &db);
	unblock_interrupts();
	if (r)
		goto out_buf;
	if (table && (r = tbl_table_exists(db, table)) < 0) {
		r = fail(r, "export --table %s", table);
		goto out;
	}
	/*
	 * -o FILE: a temporary file beside it, renamed over it only once
	 * complete and on disk, so that a failed or interrupted export leaves
	 * the previous FILE (the last backup, perhaps) as it was.
	 */
	if (path && ((fd = temp_beside(path, &tmp)) < 0 || !(out = fdopen(fd, "w")))) {
		say("%s: cannot create a temporary file beside it: %s", path, strerror(errno));
		if (tmp) {
			close(fd);
			unlink(tmp);
			free(tmp);
		}
		r = EXIT_ERROR;
		goto out;
	}
	progress_init(&pg, "export", 0, !path);
	tp.fn = progress_update;
	tp.arg = &pg;
	tp.stop = &interrupted;
	memset(&st, 0, sizeof(st));
	r = tio_export(db, table, prefix ? (bp.data ? bp.data : "") : NULL, bp.len, out, &st, &tp);
	progress_end(&pg);
	if (interrupted) {
		r = interrupted_status();
	} else if (r < 0) {
		r = fail_tio(r, "export%s%s to %s", table ? " of table " : "", table ? table : "",
			 path ? path : "standard output");
	}
	/* a backup file is on disk (fsync) before export says it is done */
	if (r == 0 && (fflush(out) != 0 || ferror(out) || (path && fsync(fileno(out)) != 0))) {
		say("%s: writing: %s", path ? tmp : "standard output", strerror(errno));
		r = EXIT_ERROR;
	}
	if (path && fclose(out) != 0 && r == 0) {
		say("%s: writing: %s", tmp, strerror(errno));
		r = EXIT_ERROR;
	}
	if (path && r == 0 && rename(tmp, path) != 0) {
		say("%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
		r = EXIT_ERROR;
	}
	if (path && r == 0 && sync_parent(path) != 0) {
		say("%s: syncing its directory: %s", path, strerror(errno));
		r = EXIT_ERROR;
	}
	if (r && path)
		unlink(tmp);
	if (interrupted)
		say("export interrupted after %" PRIu64 " rows%s%s%s", st.rows,
		    path ? ": " : "", path ? path : "", path ? " was left as it was" : "");
	else if (r && path)
		say("%s: left as it was: the export did not finish", path);
	free(tmp);
	if (!r && pg.on)
		fprintf(stderr, "export: %" PRIu64 " rows, %" PRIu64 " cells, %" PRIu64 " bytes\n",
			st.rows, st.cells, st.bytes);
out:
	r = db_close(db, r);
out_buf:
	tool_buf_free(&bp);
	return r;
}

struct import_report {
	uint64_t shown;
	struct progress *pg;
};

/* A rejected line: "smolctl: SOURCE:LINE: MESSAGE" (the first 100, then a count). */
static void import_report(void *arg, const char *source, uint64_t line, const char *msg)
{
	struct import_report *ir = arg;

	if (ir->pg->drawn)
		fputs("\r\033[K", stderr);
	if (++ir->shown <= 100)
		say("%s:%" PRIu64 ": %s", source, line, msg);
	else if (ir->shown == 101)
		say("%s: more lines rejected; only the first 100 are shown", source);
}

static int run_import(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "table", required_argument, NULL, O_TABLE },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ "create", no_argument, NULL, O_CREATE },
		{ NULL, 0, NULL, 0 },
	};
	struct tio_import_options io;
	struct import_report ir;
	struct tio_progress tp;
	struct tio_stats st;
	struct progress pg;
	struct tbl_db *db;
	struct stat sb;
	struct opts o;
	const char *path = "-", *source;
	uint64_t total = 0;
	FILE *in = stdin;
	int ch, r;

	memset(&io, 0, sizeof(io));
	opts_init(&o, c, argc, argv, "t:nc", lo);
	while ((ch = opts_next(&o)) != OPT_DONE) {
		switch (ch) {
		case OPT_HELP:
			return cmd_help_text(c);
		case O_TABLE:
		case 't':
			io.table = optarg;
			break;
		case O_DRY_RUN:
		case 'n':
			io.dry_run = 1;
			break;
		case O_CREATE:
		case 'c':
			io.create = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1)
		return usage(c, "unexpected argument %s (one FILE, or - for standard input)",
			     argv[optind + 1]);
	if ((r = need_datadir(c)))
		return r;
	if (argc - optind == 1)
		path = argv[optind];
	source = strcmp(path, "-") ? path : "standard input";
	if (strcmp(path, "-") && !(in = fopen(path, "r"))) {
		say("%s: cannot open it: %s", path, strerror(errno));
		return EXIT_ERROR;
	}
	if (fstat(fileno(in), &sb) == 0 && S_ISREG(sb.st_mode))
		total = (uint64_t)sb.st_size;
	if (in == stdin && isatty(STDIN_FILENO) && isatty(STDERR_FILENO))
		say("reading JSON lines from the terminal (end with Ctrl-D)");
	catch_interrupts();
	r = db_open(io.dry_run ? OPEN_READONLY : io.create ? OPEN_CREATE : OPEN_EXISTING, &db);
	unblock_interrupts();
	if (r)
		goto out_in;
	progress_init(&pg, io.dry_run ? "import (dry run)" : "import", total, 0);
	tp.fn = progress_update;
	tp.arg = &pg;
	tp.stop = &interrupted;
	ir.shown = 0;
	ir.pg = &pg;
	io.flags = TBL_SYNC;
	io.max_value_size = max_value_size;
	memset(&st, 0, sizeof(st));
	r = tio_import(db, in, source, &io, import_report, &ir, &st, &tp);
	progress_end(&pg);
	if (r == -EINTR && interrupted) {
		/* every good row of lines 1..st.lines is written (and synced), nothing after */
		printf("%s %" PRIu64 " rows (%" PRIu64 " cells) from %s: %" PRIu64 " lines read, %"
		       PRIu64 " rejected; interrupted\n",
		       io.dry_run ? "dry run: checked" : "imported", st.rows, st.cells, source,
		       st.lines, st.bad_lines);
		if (io.dry_run)
			say("import (dry run) from %s interrupted after line %" PRIu64 "; nothing was "
			    "written", source, st.lines);
		else
			say("import from %s interrupted: lines 1 to %" PRIu64 " are imported (%" PRIu64
			    " rows, %" PRIu64 " cells, synced), nothing after line %" PRIu64, source,
			    st.lines, st.rows, st.cells, st.lines);
		r = db_close(db, interrupted_status());
		goto out_in;
	}
	if (ferror(in)) {
		say("%s: reading: %s", source, strerror(errno));
		r = r < 0 ? r : -EIO;
	}
	printf("%s %" PRIu64 " rows (%" PRIu64 " cells) from %s: %" PRIu64 " lines read, %"
	       PRIu64 " rejected%s\n", io.dry_run ? "dry run: would import" : "imported",
	       st.rows, st.cells, source, st.lines, st.bad_lines,
	       io.dry_run ? "; nothing was written" : "");
	if (r == -EINVAL) {
		say("%s: %" PRIu64 " line%s rejected (reported above)%s", source, st.bad_lines,
		    st.bad_lines == 1 ? "" : "s",
		    io.dry_run ? "" : "; the other rows were imported");
		r = EXIT_ERROR;
	} else if (r < 0) {
		r = fail_tio(r, "import from %s", source);
	}
	r = db_close(db, r);
out_in:
	if (in != stdin)
		fclose(in);
	return r;
}

/* ------------------------------------------------------------ help and main */

static int run_help(const struct cmd *c, int argc, char **argv);

static const struct cmd commands[] = {
	{ "create-table", run_create_table, "TABLE",
	  "Create a table (and the database, if DATADIR holds none).",
	  "Table names are 1 to 511 of A-Z a-z 0-9 - _ . # $.  A new table has no\n"
	  "families: declare them with add-family.\n\n" },
	{ "drop-table", run_drop_table, "[--force] TABLE",
	  "Drop a table, its families and its locality groups.",
	  "  -f, --force            drop it even if it holds cells (they go with it)\n" },
	{ "list-tables", run_list_tables, "",
	  "List the tables, one name a line, in byte order.", "" },
	{ "add-family", run_add_family,
	  "[--type TYPE] [--max-versions N] [--ttl SECONDS] [--locality-group G] "
	  "[--compression LEVEL] TABLE FAMILY",
	  "Declare a column family in a table.",
	  "Family names are 1 to 64 of A-Z a-z 0-9 - _ and dot.  Settings not given take\n"
	  "the defaults in brackets.\n\n"
	  "  --type TYPE            type of new cells: string, bytes, boolean, byte,\n"
	  "                         i32, i64, f32, f64 [string]\n"
	  "  --max-versions N       keep the newest N versions of each cell; 0 or\n"
	  "                         unlimited keeps all [unlimited]\n"
	  "  --ttl SECONDS          drop versions older than this; a unit s, m, h, d\n"
	  "                         or w may follow; 0 or forever keeps them [forever]\n"
	  "  --locality-group G     store the family in group G, which has a kv tree\n"
	  "                         of its own [default]\n"
	  "  --compression LEVEL    zstd level 1..22, or 0 or none; a group is\n"
	  "                         compressed at the highest level of its families,\n"
	  "                         but for the default group (the database's) [1]\n" },
	{ "alter-family", run_alter_family,
	  "[--type TYPE] [--max-versions N] [--ttl SECONDS] [--locality-group G] "
	  "[--compression LEVEL] TABLE FAMILY",
	  "Change a family's settings: only those given change.",
	  "The options are add-family's.  A new type applies to new cells only;\n"
	  "max-versions and ttl apply to reads at once; a family may move to another\n"
	  "locality group only while it holds no cells.\n\n"
	  "  --type TYPE            string, bytes, boolean, byte, i32, i64, f32 or f64\n"
	  "  --max-versions N       0 or unlimited: keep every version\n"
	  "  --ttl SECONDS          with an optional unit s, m, h, d or w; 0 or forever\n"
	  "  --locality-group G     the group\n"
	  "  --compression LEVEL    zstd level 1..22, or 0 or none\n" },
	{ "drop-family", run_drop_family, "[--force] TABLE FAMILY",
	  "Drop a column family.",
	  "  -f, --force            drop it even if cells hold it: they vanish at once\n"
	  "                         and compaction removes them\n" },
	{ "describe", run_describe, "[--scan] TABLE",
	  "Show a table's families, settings, locality groups and sizes.",
	  "Sizes are those of the live SSTables of each group's kv tree; the default\n"
	  "group lives in the default tree, which every table's default group shares.\n\n"
	  "  --scan                 also scan the table and count each group's live\n"
	  "                         rows, cells and key+value bytes\n" },
	{ "get", run_get,
	  "[--family F ...] [--column F:Q] [--qualifier-prefix Q] [--versions N] "
	  "[--since TS] [--before TS] [--json] [--escaped] TABLE ROW",
	  "Show one row: every visible version of its cells.",
	  "For people: the row key, then a table of family, qualifier, timestamp (in\n"
	  "microseconds, and in UTC), type and value.  Keys and values are escaped: \\\\,\n"
	  "\\n, \\t, \\r, and \\xHH for other bytes that are not printable (in bytes values,\n"
	  "for everything but printable ASCII).\n\n"
	  "  -f, --family F         only family F (may be repeated)\n"
	  "  --column F:Q           only the column with family F and qualifier Q\n"
	  "  --qualifier-prefix Q   only the columns whose qualifier begins with Q\n"
	  "  -n, --versions N       only the newest N versions of each column\n"
	  "  --since TS             only versions with timestamp >= TS (microseconds)\n"
	  "  --before TS            only versions with timestamp < TS\n"
	  "  --json                 the row as one line of the export format\n"
	  "  -e, --escaped          ROW and Q are written with those escapes\n" },
	{ "scan", run_scan,
	  "[--prefix P] [--start S] [--end E] [--reverse] [--limit N] [--family F ...] "
	  "[--qualifier-prefix Q] [--versions N] [--since TS] [--before TS] [--keys-only] "
	  "[--json] [--count] [--escaped] TABLE",
	  "Show rows in key order, as get does.",
	  "  -p, --prefix P         rows whose key begins with P\n"
	  "  --start S              rows with key >= S\n"
	  "  --end E                rows with key < E\n"
	  "  -r, --reverse          in descending key order\n"
	  "  -l, --limit N          at most N rows\n"
	  "  -f, --family F         only family F (may be repeated); rows without cells\n"
	  "                         of the families are skipped\n"
	  "  --qualifier-prefix Q   only the columns whose qualifier begins with Q;\n"
	  "                         rows without one are skipped\n"
	  "  -n, --versions N       only the newest N versions of each column\n"
	  "  --since TS             only versions with timestamp >= TS (microseconds)\n"
	  "  --before TS            only versions with timestamp < TS; rows left with\n"
	  "                         no version are skipped\n"
	  "  -k, --keys-only        the row keys only, one a line (reads no cells)\n"
	  "  --json                 rows as lines of the export format\n"
	  "  --count                print only the rows, cells and kv bytes the scan\n"
	  "                         went through (with --json as one JSON object)\n"
	  "  -e, --escaped          P, S, E and Q are written with get's escapes\n" },
	{ "set", run_set, "[--type TYPE] [--timestamp TS] [--escaped] TABLE ROW FAMILY:QUALIFIER VALUE",
	  "Write one version of a cell.",
	  "VALUE is text parsed as a write to the cell's file on a mount is: by the type\n"
	  "of the cell's newest version, or for a new cell by its family's type (or by\n"
	  "TYPE): 42 for an i64, true for a boolean, 0.5 for an f64.\n"
	  "A bad value, an unknown table or family, a row key over 4 KiB or a qualifier\n"
	  "over 16 KiB is an error (status 1), and nothing is written.\n\n"
	  "  --type TYPE            store the cell as TYPE: string, bytes, boolean, byte,\n"
	  "                         i32, i64, f32 or f64 [the cell's, else the family's]\n"
	  "  --timestamp TS         the version's timestamp in microseconds since the\n"
	  "                         epoch [now; a version with that timestamp is replaced;\n"
	  "                         one that max-versions or ttl hides gets a warning]\n"
	  "  -e, --escaped          ROW, QUALIFIER and VALUE are written with get's\n"
	  "                         escapes (\\\\, \\n, \\t, \\r, \\xHH)\n" },
	{ "delete-version", run_delete_version, "[--escaped] TABLE ROW FAMILY:QUALIFIER TIMESTAMP",
	  "Delete one version of a cell, given by its timestamp.",
	  "An error (status 1) if the cell has no visible version with that timestamp.\n\n"
	  "  -e, --escaped          ROW and QUALIFIER are written with get's escapes\n" },
	{ "delete-cell", run_delete_cell, "[--escaped] TABLE ROW FAMILY:QUALIFIER",
	  "Delete a cell: every version of it.",
	  "An error (status 1) if the cell has no visible version.\n\n"
	  "  -e, --escaped          ROW and QUALIFIER are written with get's escapes\n" },
	{ "delete-family", run_delete_family, "[--escaped] TABLE ROW FAMILY",
	  "Delete a family's cells in one row; the family stays declared.",
	  "drop-family removes a family from the table's schema; delete-family only\n"
	  "deletes its cells in ROW.  An error (status 1) if the row holds none.\n\n"
	  "  -e, --escaped          ROW is written with get's escapes\n" },
	{ "delete-row", run_delete_row, "[--escaped] TABLE ROW",
	  "Delete a row: every cell of every family in it.",
	  "One row tombstone per locality group, whatever the row holds.  An error\n"
	  "(status 1) if the row has no visible cell.\n\n"
	  "  -e, --escaped          ROW is written with get's escapes\n" },
	{ "increment", run_increment, "[--escaped] TABLE ROW FAMILY:QUALIFIER [DELTA]",
	  "Add DELTA (1 by default) to an integer cell, print the result.",
	  "DELTA is an integer (i64).  The newest version of the i32 or i64 cell (an\n"
	  "absent cell counts as 0, and takes its family's type) plus DELTA is written\n"
	  "as a new version, atomically.  An overflow or a cell of\n"
	  "another type is an error (status 1), and nothing is written.\n\n"
	  "  -e, --escaped          ROW and QUALIFIER are written with get's escapes\n" },
	{ "check-and-set", run_check_and_set,
	  "(--expect OLD | --expect-absent) [--type TYPE] [--timestamp TS] [--escaped] "
	  "TABLE ROW FAMILY:QUALIFIER VALUE",
	  "Set a cell only if its newest value is OLD (or it is absent).",
	  "Atomic: the check and the write happen under the row's lock.  OLD is compared\n"
	  "with the newest version's value as get shows it (its text, unescaped).\n"
	  "Exit status: 0 set; 3 not set, because the check failed (the message says\n"
	  "what the cell holds); 1 an error (nothing written); 2 a usage error.\n\n"
	  "  --expect OLD           set only if the newest value is OLD\n"
	  "  --expect-absent        set only if the cell has no visible version\n"
	  "  --type TYPE            as for set\n"
	  "  --timestamp TS         as for set [now]\n"
	  "  -e, --escaped          ROW, QUALIFIER, VALUE and OLD are written with get's\n"
	  "                         escapes\n" },
	{ "check", run_check, "",
	  "Verify every file of the database, the schema and every cell.",
	  "Reads every block of every SSTable (checksums, key order) and the manifest,\n"
	  "then loads the schema and reads every table's cells.  Each problem is printed\n"
	  "on standard output as FILE at OFFSET: MESSAGE.  The exit status is 1 if there\n"
	  "was any, 0 if none.  The kv layer is checked first, opened on its own, so\n"
	  "check works when the table layer cannot open the database.  check opens the\n"
	  "database read-only: it changes nothing, and lists stray files without\n"
	  "deleting them.\n\n" },
	{ "repair", run_repair, "",
	  "Salvage a damaged database into one that opens.",
	  "Keeps what can be read: tables that verify, the readable blocks of damaged\n"
	  "tables, log and manifest records before the first damaged one.  What cannot\n"
	  "be used is moved into DATADIR/lost/, never deleted.  Each file changed, moved\n"
	  "or dropped is listed on standard output, with what was lost.\n\n" },
	{ "compact", run_compact, "[TABLE]",
	  "Compact the whole database, or one table.",
	  "Moves every file of the table (without TABLE: of every table) to the last\n"
	  "level, in the default tree and in the tree of each locality group, dropping\n"
	  "deleted, overwritten and expired data and versions beyond max_versions, and\n"
	  "prints each tree's files and bytes before and after.\n\n" },
	{ "stats", run_stats, "[--scan]",
	  "Show the trees, their files per level, the engine's counters.",
	  "  --scan                 also scan every table and compare each tree's live\n"
	  "                         key+value bytes with its file bytes\n" },
	{ "export", run_export, "[--table T] [--prefix P] [-o FILE]",
	  "Write tables as JSON lines (smolctl(1) describes the format).",
	  "  -t, --table T          only table T (default: every table)\n"
	  "  -p, --prefix P         only rows whose key begins with P\n"
	  "  -o, --output FILE      write to FILE (removed if the export fails) instead\n"
	  "                         of standard output\n"
	  "  -e, --escaped          P is written with get's escapes\n" },
	{ "import", run_import, "[--table T] [--dry-run] [--create] [FILE|-]",
	  "Load JSON lines from FILE or standard input.",
	  "The input is the export format, or Smoltable's write payload (with --table).\n"
	  "Each row is applied atomically.  A line that is not good is reported with its\n"
	  "line number, nothing of its row is written, and the import goes on; the exit\n"
	  "status is then 1.\n\n"
	  "  -t, --table T          the table of Smoltable payloads\n"
	  "  -n, --dry-run          check every line, write nothing\n"
	  "  -c, --create           create the database, and the tables and families of\n"
	  "                         the input's schema lines, if missing\n" },
	{ "help", run_help, "[COMMAND]", "Show the commands, or one command's help.", "" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void main_help(FILE *f)
{
	fprintf(f, "usage: smolctl [-d DATADIR] [--max-value-size N] COMMAND [options] [arguments]\n\n"
		"Administer a smolfs database directory: tables and families, reads and writes\n"
		"of cells and rows, import and export, checks and compaction.  DATADIR may\n"
		"also come from $SMOLFS_DATADIR.\n"
		"--max-value-size N: the largest cell value written or imported (bytes, or\n"
		"with K or M; default 10M, at most 100M).\n\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *nl = strchr(commands[i].summary, '\n');
		int n = nl ? (int)(nl - commands[i].summary) : (int)strlen(commands[i].summary);

		fprintf(f, "  %-14s %.*s%s\n", commands[i].name, n, commands[i].summary,
			nl ? " ..." : "");
	}
	fprintf(f, "\n'smolctl COMMAND --help' shows a command's options; smolctl(1) has them all.\n"
		"Exit status: 0 success, 1 error, 2 usage error, 3 check-and-set did not set.\n");
}

static int run_help(const struct cmd *c, int argc, char **argv)
{
	const struct cmd *sub;

	if (argc > 2)
		return usage(c, "unexpected argument %s", argv[2]);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_help(stdout);
		return 0;
	}
	sub = find_command(argv[1]);
	if (!sub)
		return usage(c, "no command %s (smolctl help lists them)", argv[1]);
	return cmd_help_text(sub);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "datadir", required_argument, NULL, 'd' },
		{ "max-value-size", required_argument, NULL, OPT_MAX_VALUE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *c;
	int ch, status;

	datadir = getenv("SMOLFS_DATADIR");
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:d:hV", lo, NULL)) != -1) {
		switch (ch) {
		case 'd':
			datadir = optarg;
			break;
		case OPT_MAX_VALUE:
			if (set_max_value_size(optarg) < 0) {
				fprintf(stderr, "smolctl: --max-value-size %s: not a size from 1 to "
					"%uM (bytes, or with K or M)\n", optarg,
					TBL_LIMIT_MAX_VALUE >> 20);
				main_help(stderr);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			main_help(stdout);
			return 0;
		case 'V':
			printf("smolctl (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "smolctl: option %s needs a value\n", argv[optind - 1]);
			main_help(stderr);
			return EXIT_USAGE;
		default:
			fprintf(stderr, "smolctl: unknown option %s\n", argv[optind - 1]);
			main_help(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "smolctl: no command given\n");
		main_help(stderr);
		return EXIT_USAGE;
	}
	c = find_command(argv[optind]);
	if (!c) {
		fprintf(stderr, "smolctl: unknown command %s (smolctl help lists them)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	status = c->run(c, argc - optind, argv + optind);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		say("writing to standard output: %s", strerror(errno));
		if (status == 0)
			status = EXIT_ERROR;
	}
	return status;
}
