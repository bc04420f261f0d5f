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
 * tbl_strerror(err) has a sentence naming the table, family, row or key.
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
struct tbl_snapshot;

/* Limits (Bigtable's). */
#define TBL_MAX_ROW_KEY     4096u
#define TBL_MAX_QUALIFIER   16384u
#define TBL_MAX_NAME        511u               /* table names */
#define TBL_MAX_FAMILY_NAME 64u                /* family and locality group names */
#define TBL_DEFAULT_MAX_VALUE (10u << 20)
#define TBL_LIMIT_MAX_VALUE   (100u << 20)
/* The largest ttl (seconds, about 292,000 years): ttl in microseconds stays below 2^63. */
#define TBL_MAX_TTL (UINT64_MAX / 2 / 1000000u)

/*
 * A timestamp chosen by the server: the current time, strictly increasing,
 * across reopens too (above every server timestamp given out before, even
 * with the clock stepped back; after a crash, the first may be up to a
 * second ahead of the clock).
 */
#define TBL_TS_NOW UINT64_MAX
/* For reads of one version: the newest visible one (same value, another meaning). */
#define TBL_TS_NEWEST UINT64_MAX

/*
 * Validators of names and limits, for front-ends that answer before any I/O:
 * pure functions, no lock, no I/O.  0, -EINVAL (a character not allowed, an
 * empty name, "." or "..", a NULL pointer with a length) or -ENAMETOOLONG
 * (longer than its limit above), with a tbl_strerror message.  The calls
 * that create or take these names apply exactly these rules.
 */
int tbl_check_table_name(const char *name);
int tbl_check_family_name(const char *name);   /* also locality group names */
int tbl_check_row_key(const void *row, size_t len);
int tbl_check_qualifier(const void *q, size_t len);

/*
 * The sentence explaining err, if the calling thread's last call of this API
 * (or of kv.h or cell.h) failed with err and recorded one; otherwise
 * strerror(-err).  Never a message of an earlier call or of another error.
 * Valid until the thread's next call.  (The same store as kv_strerror.)
 */
const char *tbl_strerror(int err);

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

/*
 * Make every write committed so far durable against power loss: fsync of
 * the write-ahead log (and first of the older logs still needed and unsynced),
 * also when nothing new was written since a write without TBL_SYNC.  For a
 * front-end's fsync() of something written earlier.  Cost: one fsync, with
 * the log's write lead held (writers queue behind it meanwhile).  On a
 * read-only database: 0, nothing to do.
 */
int tbl_sync(struct tbl_db *db);

/*
 * Table-level snapshots: a consistent point in time for reads (struct
 * tbl_read.snapshot, tbl_stat_cell, tbl_get_cell, tbl_columns_new).  A
 * snapshot freezes cells, not the schema: a family dropped after it is
 * invisible through it.  Release every snapshot before tbl_close.  Cost: a
 * kv snapshot (no I/O); while held, compaction keeps what it can see.
 */
const struct tbl_snapshot *tbl_snapshot_new(struct tbl_db *db);
void tbl_snapshot_release(struct tbl_db *db, const struct tbl_snapshot *snap);

/*
 * Change counters for caches.  The schema generation changes at every
 * schema change of any table (create, drop, add, alter or drop a family);
 * it starts anew at each open, so compare it within one open only.  No
 * lock, no I/O.
 */
uint64_t tbl_schema_generation(struct tbl_db *db);
/*
 * A table's id: never reused in this database, also across reopens, so a
 * table dropped and created again under the same name has another id (a
 * front-end answers ESTALE to handles of the old one).  A family's id is
 * likewise never reused in the database: not by another family of the
 * table, not by a family of the same name declared after a drop, not by a
 * family of another table.  -ENOENT if there is no such table or (live)
 * family.  Cost: the schema read lock and a lookup in memory, no I/O.
 */
int tbl_table_id(struct tbl_db *db, const char *table, uint64_t *id);
int tbl_family_id(struct tbl_db *db, const char *table, const char *family, uint64_t *id);

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
	uint64_t ttl;                 /* seconds, 0 = forever (default); at most
					 TBL_MAX_TTL (-EINVAL above).  A version is
					 hidden once now - ts > ttl; a version with a
					 timestamp in the future never is */
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
	uint64_t ts_end;              /* TBL_DELETE_VERSIONS: exclusive end; 0: no end
					 (every version >= ts), as ts_max = 0 on reads */
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

/*
 * Move a cell -- every visible version, with its timestamp, type and value
 * -- to another qualifier of the same row, in the same family or another
 * (of any locality group), replacing the target cell (all its versions)
 * unless rename_flags say otherwise:
 *   TBL_RENAME_NOREPLACE  -EEXIST if the target has a visible version
 *   TBL_RENAME_EXCHANGE   swap the two cells; -ENOENT if the target has none
 * Atomic: one kv batch under the row lock, so no reader sees the cell in
 * both places or in neither.  -ENOENT if the source has no visible version;
 * a cell renamed onto itself is left alone (0; -EEXIST with no-replace).
 * The versions moved keep their timestamps, so the target family's GC
 * policy (max_versions, ttl) applies to them as to any of its versions;
 * versions GC already hides are not moved, and go with the source.  flags:
 * TBL_SYNC.  -EINVAL for unknown rename flags or both of them.  Cost: one
 * seek and a step per version in each of the two columns; each version's
 * value is copied once (into the batch, then the log).
 */
#define TBL_RENAME_NOREPLACE 1u
#define TBL_RENAME_EXCHANGE  2u
int tbl_rename_cell(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		    const char *from_family, const void *from_q, size_t from_len,
		    const char *to_family, const void *to_q, size_t to_len,
		    unsigned rename_flags, unsigned flags);

/*
 * Change the type of a cell's newest visible version (with
 * TBL_CONVERT_ALL_VERSIONS, of every visible version), in place: each is
 * converted by cell_convert's rules and written again with its own
 * timestamp; a version already of that type is left as it is.  -EINVAL,
 * and nothing changed, if any of them does not convert (the message names
 * the version and its value) or `to` is not a type; -ENOENT if the cell has
 * no visible version; -EFBIG if a result exceeds the value limit.  Older
 * versions not converted keep their types.  Atomic: one batch under the row
 * lock.  flags: TBL_SYNC.  Cost: one seek and a step per visible version,
 * each value copied and converted once.
 */
#define TBL_CONVERT_ALL_VERSIONS 1u
int tbl_convert_cell(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		     const char *family, const void *qualifier, size_t qualifier_len,
		     enum cell_type to, unsigned convert_flags, unsigned flags);

/*
 * tbl_convert_cell of the one visible version at timestamp ts (0 or
 * TBL_TS_NEWEST: the newest), in place, under the row lock.  -ENOENT if no
 * visible version has that timestamp.
 */
int tbl_convert_version(struct tbl_db *db, const char *table, const void *row, size_t row_len,
			const char *family, const void *qualifier, size_t qualifier_len,
			uint64_t ts, enum cell_type to, unsigned flags);

/*
 * Move one version between the columns of a row, atomically (one batch
 * under the row lock, as tbl_rename_cell).  The source is the visible
 * version at from_ts, which alone goes; or, from_ts 0 (or TBL_TS_NEWEST),
 * the cell's newest visible version, and then every version of the source
 * goes.  The target is version to_ts of the target column, which takes the
 * value (type and bytes) and keeps its other versions; or, to_ts 0, the
 * whole target column, all of whose versions are replaced by the source
 * version at its own timestamp.  With both 0 it is tbl_rename_cell.
 * rename_flags: TBL_RENAME_NOREPLACE (-EEXIST if the target version, or for
 * to_ts 0 the target cell, is visible); an exchange of versions is -EINVAL.
 * -ENOENT if the source version is not visible or a family is not declared.
 * Source and target may be one column (a version moved to another
 * timestamp).  flags: TBL_SYNC.
 */
int tbl_rename_version(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		       const char *from_family, const void *from_q, size_t from_len,
		       uint64_t from_ts, const char *to_family, const void *to_q, size_t to_len,
		       uint64_t to_ts, unsigned rename_flags, unsigned flags);

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
	const struct tbl_snapshot *snapshot;  /* NULL: now (tbl_snapshot_new) */
	const char *const *families;  /* NULL: all; else nfamilies names */
	size_t nfamilies;
	const void *qualifier;        /* with qualifier_exact: one column; else a prefix filter */
	size_t qualifier_len;
	int qualifier_exact;
	uint64_t ts_min, ts_max;      /* versions with ts_min <= ts < ts_max (0, 0: all) */
	uint32_t versions;            /* newest versions per column (0: all visible) */
	uint32_t cells_per_row;       /* 0: unlimited */
	/*
	 * Cells carry no value, only their type and value_size.  Values are
	 * not copied, and a large one (as large as the engine's block_size,
	 * 4 KiB by default, or more) is not even read: the engine's
	 * keys-only iteration (kv.h) gives its length from the table index.
	 */
	int keys_only;
	/* scans only */
	const void *prefix;           /* rows whose key starts with prefix */
	size_t prefix_len;
	const void *start;            /* rows >= start (NULL: from the first) */
	size_t start_len;
	int start_exclusive;          /* rows > start instead: resume exactly after a row */
	const void *end;              /* rows < end (NULL: to the last) */
	size_t end_len;
	int reverse;                  /* rows in descending key order */
	uint64_t row_limit;           /* 0: unlimited */
	int row_keys_only;            /* rows carry no cells at all: after a row's first
					 visible cell (read keys-only), one seek to the
					 next row, whatever the row's width */
	int no_fill_cache;            /* the blocks read are not kept in the block cache (a bulk
					 listing neither grows memory nor evicts what is hot) */
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
	uint64_t bytes;               /* kv key and value bytes handed over by the engine
					 (keys_only, row_keys_only: at most KV_VALUE_PREFIX
					 bytes of each value) */
};
void tbl_scan_counts(const struct tbl_scan *s, struct tbl_scan_counts *c);
void tbl_scan_free(struct tbl_scan *s);

/* ------------------------------------------------------------ one cell, one row, one family */

/*
 * What a front-end asks per file: one cell, whether a row (or a family in
 * it) exists, which families a row holds, a family's qualifiers.  None of
 * these builds a row or copies the schema; each says what it costs.  "A
 * seek" is one kv iterator positioning (a memtable lookup and, per level
 * that may hold the key, a bloom-filtered block read, cached or not);
 * "visible" is as for every read: a version that GC (max_versions, ttl, a
 * dropped family) would remove is never seen, compacted or not.
 * Measured on a compacted table of 20,000 rows x 4 families (one in its own
 * locality group) x 5 qualifiers x 5 versions of 1000 bytes, blocks read
 * per call: tbl_stat_cell and tbl_get_cell 1 (newest or by timestamp),
 * tbl_row_exists 1, tbl_row_has_family 1, tbl_row_families 4, a family's
 * 5 qualifiers listed 2.25 -- against 4.75 for tbl_get_row of one column.
 */

/* A cell version's metadata. */
struct tbl_cell_stat {
	uint64_t ts;                  /* the version's timestamp (microseconds) */
	enum cell_type type;          /* the stored version's type */
	size_t value_size;            /* stored payload bytes */
	size_t text_size;             /* exact length of cell_render's output: what `cat` prints */
};

/*
 * One version of one cell: the newest visible one (ts == TBL_TS_NEWEST) or
 * the one with exactly timestamp ts, if visible.  snap may be NULL (now).
 * -ENOENT: no such table, family, cell or version (or hidden by GC);
 * -ENAMETOOLONG / -EINVAL: a row key or qualifier the validators refuse.
 * text_size is computed without rendering big values: a string's is its
 * length + 1, bytes' its length, the fixed-size types are rendered (a few
 * bytes).  A string's UTF-8 is not re-checked here (tbl_get_cell does).
 * Cost: one seek in the family's group tree (keys-only: a large value is
 * neither read nor copied, its length comes from the table index).  A version by
 * timestamp costs one seek too, but in a family with max_versions = N it
 * steps over at most N newer versions to count them (GC counts versions).
 */
int tbl_stat_cell(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		  const void *row, size_t row_len, const char *family,
		  const void *qualifier, size_t qualifier_len, uint64_t ts,
		  struct tbl_cell_stat *st);
/*
 * The same (st may be NULL), plus the version's value AS TEXT: *data (malloc'd,
 * the caller frees it; never NULL on success, even for 0 bytes) holds exactly
 * what `cat` prints, cell_render's output -- a string's bytes and "\n",
 * bytes exactly, numbers in decimal and "\n" -- and *len == st->text_size.
 * A string's UTF-8 is checked (-EUCLEAN if damaged).  Cost: as tbl_stat_cell,
 * plus one copy of the value (into *data).
 */
int tbl_get_cell(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		 const void *row, size_t row_len, const char *family,
		 const void *qualifier, size_t qualifier_len, uint64_t ts,
		 struct tbl_cell_stat *st, void **data, size_t *len);

/*
 * Existence: 0 if the row has a visible cell (of family), -ENOENT if not (or
 * no such table or family).  Cost: tbl_row_exists, one seek per locality
 * group of the table; tbl_row_has_family, one seek in the family's group
 * tree.  Each cell key met is decoded, no value copied (nor a large one
 * read: the probes iterate keys-only); a column whose
 * versions are all past the ttl costs one more seek.
 */
int tbl_row_exists(struct tbl_db *db, const char *table, const void *row, size_t row_len);
int tbl_row_has_family(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		       const char *family);
/*
 * The (live) families holding visible cells in the row, in byte order of
 * their names: *names is malloc'd, free with tbl_free_names (*n may be 0).
 * Cost: one seek per declared family (in one iterator per group), no value
 * read; as above, a column past its ttl costs one more.
 */
int tbl_row_families(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		     char ***names, size_t *n);

/*
 * Streaming listing of one family of one row, without values, resumable:
 * the qualifiers (with TBL_COLUMNS_VERSIONS, every visible version of each)
 * in qualifier byte order, versions newest first.  Memory does not grow
 * with the family: one qualifier at a time.
 */
struct tbl_columns;
struct tbl_column {
	const void *qualifier;
	size_t qualifier_len;
	uint64_t ts;                  /* this version's timestamp */
	int newest;                   /* 1 for the newest visible version of its qualifier */
	enum cell_type type;
	size_t value_size;            /* stored payload bytes */
	size_t text_size;             /* as in tbl_cell_stat */
};
#define TBL_COLUMNS_VERSIONS 1u  /* list every visible version, not only the newest */
/*
 * after == NULL: from the first qualifier.  Otherwise strictly after
 * (after, after_ts): without TBL_COLUMNS_VERSIONS after the qualifier
 * `after` (after_ts is ignored); with it, after that qualifier's version
 * after_ts (versions come newest first, so the older ones of `after` come
 * next, then the next qualifier).  `after` need not exist any more.
 * snap may be NULL: the listing then reads the state at this call.
 * -ENOENT no such table or family; -EINVAL unknown flags; the row key and
 * `after` are checked as the validators do.  The row need not exist (the
 * listing is empty).  Free with tbl_columns_free.  The listing holds a kv
 * iterator (so a snapshot's worth of memtables and files) until freed.
 * Cost: one seek to start (with versions and after, a seek to the
 * qualifier and one to the version, or with max_versions = N up to N
 * steps); then each entry is one step.  Without versions, moving past a
 * qualifier's older versions takes up to 8 steps, then a seek.  Values are
 * not copied, and a large one is not read (a keys-only kv iterator: the
 * table index gives its length); the fixed-size types are decoded for
 * text_size.  Measured: a family of 20 cells of 1 MiB lists reading 130
 * bytes of blocks, not 21 MB.
 */
int tbl_columns_new(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		    const void *row, size_t row_len, const char *family,
		    const void *after, size_t after_len, uint64_t after_ts, unsigned flags,
		    struct tbl_columns **out);
/* 1 and *col (valid until the next call) for the next; 0 at the end; < 0 error (sticky). */
int tbl_columns_next(struct tbl_columns *c, const struct tbl_column **col);
void tbl_columns_free(struct tbl_columns *c);

#endif
