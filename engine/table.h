/*
 * table.h -- the public interface of smolfs's wide-column database: the
 * Bigtable data model on the kv engine.  The filesystem and smolctl are
 * front-ends over this header; it knows nothing of either.
 *
 * A table is a sparse, persistent, sorted map
 *     (row key, family, qualifier, timestamp) -> typed value
 * Rows sort byte-wise by row key.  Families are declared per table before
 * use, each with a default cell type, a garbage-collection policy
 * (max_versions, ttl), a locality group and a compression level.  Every cell
 * may hold several versions, newest first; timestamps are microseconds since
 * the epoch.  Mutations of one row are atomic; nothing is atomic across rows.
 *
 * Storage: each locality group other than "default" is its own kv tree, so a
 * scan of one group never reads another's bytes; the "default" group of
 * every table lives in the kv default tree.  A cell's kv key is the
 * order-preserving encoding of tkey.h, its kv value the typed encoding of
 * cell.h.  The schema (tables, families, groups) is kept in the default
 * tree under table id 0, which no table uses.
 *
 * Conventions: functions return 0 or a negative errno; after a failure
 * kv_strerror() (kv.h) has a sentence naming the table, family, row or key.
 * Names are NUL-terminated strings; row keys, qualifiers and values are
 * (pointer, length) pairs of arbitrary bytes.  A struct tbl_db may be used
 * by many threads at once; a struct tbl_scan by one at a time.
 *
 * Errors used throughout:
 *   -ENOENT        no such table / family / row / cell
 *   -EEXIST        table or family exists already
 *   -EINVAL        a bad name, setting, type, or a value that does not parse
 *   -ENAMETOOLONG  row key > 4 KiB, qualifier > 16 KiB
 *   -EFBIG         value larger than the configured maximum
 *   -ENOTEMPTY     dropping a family or table that still holds cells
 *                  without force, or moving a non-empty family to another
 *                  locality group
 *   -ERANGE        an increment overflows
 *   -EUCLEAN       stored data is damaged
 */
#ifndef SMOLFS_TABLE_H
#define SMOLFS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "cell.h"
#include "kv.h"

struct tbl_db;
struct tbl_scan;

/* Limits (Bigtable's). */
#define TBL_MAX_ROW_KEY     4096u
#define TBL_MAX_QUALIFIER   16384u
#define TBL_MAX_NAME        511u               /* table names */
#define TBL_MAX_FAMILY_NAME 64u                /* family and locality group names */
#define TBL_DEFAULT_MAX_VALUE (10u << 20)
#define TBL_LIMIT_MAX_VALUE   (100u << 20)

/* A timestamp chosen by the server (the current time, strictly increasing). */
#define TBL_TS_NOW UINT64_MAX

struct tbl_options {
	struct kv_options kv;       /* the engine's settings (kv_options_init) */
	size_t max_value_size;      /* default TBL_DEFAULT_MAX_VALUE, at most TBL_LIMIT_MAX_VALUE */
};
void tbl_options_init(struct tbl_options *o);

/*
 * Open (creating if allowed by o->kv.create_if_missing) the database in dir.
 * With o->kv.read_only the directory is never changed (kv.h): every call
 * that would write (tables, families, cells, compaction) returns -EROFS.
 */
int tbl_open(const char *dir, const struct tbl_options *o, struct tbl_db **db);
int tbl_close(struct tbl_db *db);
/* The engine underneath, for statistics, flush and compaction. */
struct kv_db *tbl_kv(struct tbl_db *db);

/* ------------------------------------------------------------ tables */

/* Names: [A-Za-z0-9-_.#$]{1,511}, not "." or "..". */
int tbl_create_table(struct tbl_db *db, const char *table);
/*
 * Drop a table and all its cells: one range tombstone over the table in the
 * default tree and a drop of each of its locality-group trees; cost does not
 * depend on the table's size.  -ENOTEMPTY if it holds cells and !force.
 */
int tbl_drop_table(struct tbl_db *db, const char *table, int force);
/* Table names in byte order: a malloc'd array of malloc'd strings. */
int tbl_list_tables(struct tbl_db *db, char ***names, size_t *n);
/* 0 if the table exists, -ENOENT if not. */
int tbl_table_exists(struct tbl_db *db, const char *table);
void tbl_free_names(char **names, size_t n);

/*
 * A locality group other than "default" and the kv tree that holds it,
 * named as the engine's statistics ("sstables", kv_property) name it; the
 * default group of every table lives in the engine's default tree.
 */
struct tbl_group_info {
	char *table;
	char *group;
	char *tree;
};
/*
 * The groups other than "default" of table (NULL: of every table), by
 * table then group name.  *groups is malloc'd: free with tbl_free_groups.
 * -ENOENT if the table does not exist.
 */
int tbl_list_groups(struct tbl_db *db, const char *table, struct tbl_group_info **groups,
		    size_t *n);
void tbl_free_groups(struct tbl_group_info *groups, size_t n);

/*
 * Compact table's cells (table NULL: the whole database) down to the
 * engine's bottom level, in the default tree and in the tree of each of
 * its locality groups: what deletes, GC (max_versions, ttl, dropped
 * families) and released snapshots left behind is removed, and reads touch
 * one file per level at most.  Before each tree, step (if not NULL) is
 * called with the table and group about to be compacted (table NULL and
 * group "default" for the whole default tree), so a caller can show
 * progress.  Writes and reads go on meanwhile; a table dropped meanwhile
 * is skipped.  0 or the first error (the trees after it are not compacted).
 */
int tbl_compact(struct tbl_db *db, const char *table,
		void (*step)(void *arg, const char *table, const char *group), void *arg);

/* ------------------------------------------------------------ families */

struct tbl_family_settings {
	enum cell_type type;          /* default type of new cells; default CELL_STRING */
	uint32_t max_versions;        /* 0 = unlimited (default) */
	uint64_t ttl;                 /* seconds, 0 = forever (default) */
	char locality_group[TBL_MAX_FAMILY_NAME + 1];  /* default "default" */
	int compression;              /* zstd level 1..22, 0 = none; default 1 */
};
void tbl_family_settings_init(struct tbl_family_settings *s);

/* Family names: [-_.a-zA-Z0-9]{1,64}.  Settings are stored durably. */
int tbl_add_family(struct tbl_db *db, const char *table, const char *family,
		   const struct tbl_family_settings *s);
/*
 * Change a family's settings.  Changing type affects new cells only (stored
 * cells keep their own type); max_versions and ttl apply to reads at once
 * and to compactions; the locality group may change only while the family
 * holds no cells (-ENOTEMPTY).  Compression is per locality group: groups
 * take the highest level of their families.
 */
int tbl_alter_family(struct tbl_db *db, const char *table, const char *family,
		     const struct tbl_family_settings *s);
/*
 * Drop a family.  -ENOTEMPTY if any row holds a cell of it and !force; with
 * force its cells become invisible at once and compaction removes them.
 */
int tbl_drop_family(struct tbl_db *db, const char *table, const char *family, int force);
int tbl_get_family(struct tbl_db *db, const char *table, const char *family,
		   struct tbl_family_settings *s);
/* Family names of a table in byte order. */
int tbl_list_families(struct tbl_db *db, const char *table, char ***names, size_t *n);

/* ------------------------------------------------------------ mutations */

enum tbl_op {
	TBL_SET = 1,          /* family, qualifier, ts (or TBL_TS_NOW), type, value */
	TBL_DELETE_VERSION,   /* family, qualifier, ts: one version */
	TBL_DELETE_VERSIONS,  /* family, qualifier, [ts, ts_end): versions in a time range */
	TBL_DELETE_CELL,      /* family, qualifier: every version */
	TBL_DELETE_FAMILY,    /* family: every cell of the family in this row */
	TBL_DELETE_ROW,       /* the whole row (one range tombstone per locality group) */
};

struct tbl_mutation {
	enum tbl_op op;
	const char *family;
	const void *qualifier;
	size_t qualifier_len;
	uint64_t ts;                  /* TBL_SET: TBL_TS_NOW for the server's time */
	uint64_t ts_end;              /* TBL_DELETE_VERSIONS: exclusive end */
	struct cell_value value;      /* TBL_SET: the typed value (its bytes are borrowed) */
};

/* Flags for mutations. */
#define TBL_SYNC 1u   /* durable against power loss before returning (kv's KV_SYNC) */

/*
 * Apply mutations to one row atomically, in order.  All are validated first
 * (families exist, limits, types); on any error nothing is written.
 * ts_out (may be NULL) receives the timestamp used for TBL_TS_NOW sets.
 */
int tbl_mutate_row(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		   const struct tbl_mutation *m, size_t n, unsigned flags, uint64_t *ts_out);

/* One cell set from a typed value (a convenience over tbl_mutate_row). */
int tbl_put(struct tbl_db *db, const char *table, const void *row, size_t row_len,
	    const char *family, const void *qualifier, size_t qualifier_len, uint64_t ts,
	    const struct cell_value *v, unsigned flags);
/* One cell set from text, parsed by the given type (CELL_INVALID: the family's). */
int tbl_put_text(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		 const char *family, const void *qualifier, size_t qualifier_len, uint64_t ts,
		 enum cell_type type, const void *text, size_t text_len, unsigned flags);

/*
 * Read-modify-write, atomic with respect to every other mutation of the row:
 * add delta to the newest version of an i64 or i32 cell (absent: 0) and
 * write the sum as a new version (-ERANGE on overflow, -EINVAL on another
 * type); *result (may be NULL) gets it.
 */
int tbl_increment(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		  const char *family, const void *qualifier, size_t qualifier_len, int64_t delta,
		  int64_t *result, unsigned flags);
/* Append bytes to the newest version of a string or bytes cell (absent: empty). */
int tbl_append(struct tbl_db *db, const char *table, const void *row, size_t row_len,
	       const char *family, const void *qualifier, size_t qualifier_len, const void *data,
	       size_t len, unsigned flags);
/*
 * Check-and-mutate: if the newest visible version of the cell equals
 * expected (its rendered text, as cell_render gives it, without the trailing
 * newline for non-bytes types; expected == NULL: the cell must be absent),
 * apply m; otherwise apply otherwise (may be n_otherwise = 0).  *matched
 * says which.  Atomic with respect to the row.
 */
int tbl_check_and_mutate(struct tbl_db *db, const char *table, const void *row, size_t row_len,
			 const char *family, const void *qualifier, size_t qualifier_len,
			 const void *expected, size_t expected_len,
			 const struct tbl_mutation *m, size_t n,
			 const struct tbl_mutation *otherwise, size_t n_otherwise,
			 int *matched, unsigned flags);

/* One row's mutations, for tbl_write_rows. */
struct tbl_row_mutations {
	const void *row;
	size_t row_len;
	const struct tbl_mutation *m;
	size_t n;
};

/*
 * Apply the mutations of many rows of one table as ONE kv batch, for bulk
 * loading: each row's list is validated as tbl_mutate_row validates it, and
 * if any row is invalid nothing at all is written, the error is returned
 * and *bad (may be NULL) gets the index of the first invalid row.  So each
 * row is atomic, and the rows are even atomic together.  The lock stripes
 * of all the rows are taken for the whole call, in stripe order (so that
 * concurrent calls cannot deadlock): a read-modify-write of any of them
 * waits for it.  A row may appear more than once; its lists apply in order.
 * TBL_TS_NOW sets get one server timestamp per element of rows.
 * -E2BIG (with *bad) if the rows up to *bad do not fit one kv batch together
 * (about 200 MiB) though row *bad alone might: write fewer rows per call;
 * -EFBIG is a single row too large, as for tbl_mutate_row.
 */
int tbl_write_rows(struct tbl_db *db, const char *table, const struct tbl_row_mutations *rows,
		   size_t n, unsigned flags, size_t *bad);

/* ------------------------------------------------------------ reads */

/* What a read returns and which cells it considers. */
struct tbl_read {
	const struct kv_snapshot *snapshot;  /* NULL: now */
	const char *const *families;  /* NULL: all; else nfamilies names */
	size_t nfamilies;
	const void *qualifier;        /* with qualifier_exact: one column; else a prefix filter */
	size_t qualifier_len;
	int qualifier_exact;
	uint64_t ts_min, ts_max;      /* versions with ts_min <= ts < ts_max (0, 0: all) */
	uint32_t versions;            /* newest versions per column (0: all visible) */
	uint32_t cells_per_row;       /* 0: unlimited */
	int keys_only;                /* cells carry no value (values are not read or copied) */
	/* scans only */
	const void *prefix;           /* rows whose key starts with prefix */
	size_t prefix_len;
	const void *start;            /* rows >= start (NULL: from the first) */
	size_t start_len;
	const void *end;              /* rows < end (NULL: to the last) */
	size_t end_len;
	int reverse;                  /* rows in descending key order */
	uint64_t row_limit;           /* 0: unlimited */
	int row_keys_only;            /* rows carry no cells at all: skips over each row's cells */
};

struct tbl_cell {
	const char *family;           /* the family's name */
	const void *qualifier;
	size_t qualifier_len;
	uint64_t ts;
	struct cell_value value;      /* type set even with keys_only; data empty then */
	size_t value_size;            /* stored payload bytes (also with keys_only) */
};

struct tbl_row {
	const void *key;
	size_t key_len;
	struct tbl_cell *cells;       /* by family name, then qualifier, newest version first */
	size_t ncells;
};

/*
 * Read one row.  -ENOENT if it has no visible cell (after the filters).
 * *out is malloc'd; free it with tbl_row_free.
 */
int tbl_get_row(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		const struct tbl_read *r, struct tbl_row **out);
void tbl_row_free(struct tbl_row *row);

/*
 * Scan rows in key order (r may be NULL: every row, every visible version of
 * every cell).  Memory does not grow with the table: rows are produced one
 * at a time, and a row's cells are read through one iterator per locality
 * group the read needs (a read of families in one group never touches
 * another group's tree).
 */
int tbl_scan_new(struct tbl_db *db, const char *table, const struct tbl_read *r,
		 struct tbl_scan **out);
/* 1 and *row (valid until the next call) for the next row; 0 at the end; < 0 error. */
int tbl_scan_next(struct tbl_scan *s, const struct tbl_row **row);
/* What the scan has gone through so far. */
struct tbl_scan_counts {
	uint64_t rows, cells;
	uint64_t bytes;               /* kv key and value bytes read */
};
void tbl_scan_counts(const struct tbl_scan *s, struct tbl_scan_counts *c);
void tbl_scan_free(struct tbl_scan *s);

#endif
