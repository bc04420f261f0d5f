/*
 * tio.h -- table import and export as JSON lines: the bulk-loading and backup
 * format of smolctl, kept apart from the command line so that the mounted
 * filesystem can offer the same thing later.
 *
 * The format (specified at the top of tio.c, and for users in smolctl(1))
 * is one JSON object per line: a schema line per table, then one line per
 * row with all its cells (every visible version), in row-key order.  Row
 * keys and qualifiers that are not valid UTF-8, and every bytes value, are
 * written in base64 under a "_b64" name, so export -> import -> export gives
 * identical bytes.  Import also accepts Smoltable's write payload
 * ({"items":[{"row_key":..,"cells":[{"column_key":"fam:qual","type":..,
 * "value":..,"time":..}]}]}, time in nanoseconds) for one given table.
 *
 * Every function returns 0 or a negative errno; problems with the input are
 * reported through report() with the line number, and the row they are in is
 * not written.  tio_strerror() gives the sentence for a returned error.
 */
#ifndef SMOLFS_TIO_H
#define SMOLFS_TIO_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "table.h"

struct tio_stats {
	uint64_t lines;        /* input lines read / output lines written */
	uint64_t rows, cells;  /* rows and cells written (or that would be, with dry_run) */
	uint64_t bad_lines;    /* lines rejected */
	uint64_t bytes;        /* input bytes read / output bytes written */
};

/* Called now and then during long work; total is 0 when unknown. */
struct tio_progress {
	void (*fn)(void *arg, uint64_t done, uint64_t total);   /* may be NULL */
	void *arg;
	/*
	 * NULL, or a flag (set by a signal handler) that stops the work soon
	 * after it becomes non-zero, with -EINTR: an export after a whole line,
	 * an import after a whole line (or Smoltable item) and after writing
	 * every good row read so far (synced, with TBL_SYNC), so its tio_stats
	 * say exactly how far it got: lines 1 to st.lines are done.  A read of
	 * the input that the signal interrupts stops there too.
	 */
	const volatile sig_atomic_t *stop;
};

/* Where problems in the input are told: source name, line number, message. */
typedef void (*tio_report_fn)(void *arg, const char *source, uint64_t line, const char *msg);

/*
 * The sentence explaining err, returned by the calling thread's last tio call:
 * tio's own (naming the table, row and what failed) or the engine's.
 */
const char *tio_strerror(int err);

/*
 * Write one row as a row line of the format (what export writes for it, the
 * "\n" included): for smolctl get --json.  0, -EIO if out fails, -EINVAL if
 * a cell holds an invalid value.
 */
int tio_write_row(FILE *out, const char *table, const struct tbl_row *row);

/*
 * Export table (NULL: every table), rows with key prefix (NULL: all), at one
 * snapshot, to out.  Streams: memory does not grow with the table.
 */
int tio_export(struct tbl_db *db, const char *table, const void *prefix, size_t prefix_len,
	       FILE *out, struct tio_stats *st, const struct tio_progress *p);

/* The longest input line (or Smoltable item) import takes; longer ones are reported. */
#define TIO_MAX_LINE (300u << 20)
/* Rows are written in batches of about this many bytes of keys and values by default. */
#define TIO_DEFAULT_BATCH_BYTES (4u << 20)

struct tio_import_options {
	int dry_run;                 /* validate only: nothing is written */
	const char *table;           /* the table for Smoltable payloads (required for them) */
	int create;                  /* create missing tables and families from schema lines */
	size_t batch_bytes;          /* rows are written in batches of about this size
				        (0: TIO_DEFAULT_BATCH_BYTES; at most 64 MiB) */
	unsigned flags;              /* TBL_SYNC: the import is durable when it returns (the
				        last batch is written with TBL_SYNC, and the engine
				        syncs a log before it switches to the next; if the
				        last write could not be that one, the memtables are
				        flushed) */
	size_t max_value_size;       /* the database's, as given to tbl_open, so that
				        oversized values are reported in a dry run too
				        (0: TBL_DEFAULT_MAX_VALUE) */
	size_t max_line;             /* longest line or item taken (0: TIO_MAX_LINE,
				        which is also the most) */
};

/*
 * Import from in (source names it in reports).  Each row is applied
 * atomically; rows are grouped into large batches for speed.  Returns 0 if
 * every line was good, -EINVAL if some were rejected (and reported; the rest
 * were imported), or another error that stopped the import.
 */
int tio_import(struct tbl_db *db, FILE *in, const char *source,
	       const struct tio_import_options *o, tio_report_fn report, void *report_arg,
	       struct tio_stats *st, const struct tio_progress *p);

#endif
