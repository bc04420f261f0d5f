/*
 * table_int.h -- what the table layer's modules share: the in-memory schema,
 * the database object, and helpers.  Private to engine/table*.c and
 * engine/t*.c; front-ends include table.h only.
 *
 *   table.c    open/close, the schema (tables, families, locality groups) and
 *              its persistence, names, timestamps, row locks, and the
 *              garbage-collection compaction filter
 *   tmutate.c  row mutations, increment, append, check-and-mutate
 *   tscan.c    row reads and scans, with the read-time GC rules
 *   tread.c    per-file reads: one cell, row and family existence, the
 *              families of a row, a family's columns (streamed)
 *
 * Names: tbl_ is for what table.h declares; the private helpers carry their
 * file's prefix (tsch_ for table.c's schema, clock and locks, tmut_ for
 * tmutate.c, tscan_ for tscan.c).
 *
 * Schema records live in the kv default tree under table id 0 (every key
 * begins with four zero bytes, which no table's cells do; table ids start at
 * 1).  After those four bytes:
 *     'T' table-name                  -> fixed32 table id
 *     'F' fixed32 table id, family    -> family record (see table.c)
 *     'G' fixed32 table id, group     -> fixed32 group id
 *     'N'                             -> fixed32 next table id, fixed32 next group id
 * Every schema change is one kv batch with KV_SYNC.
 *
 * Locking.  db->schema_lock (a rwlock) protects the schema structures: read
 * to resolve names, write to change them.  The compaction filter reads them
 * too, from the compaction thread.  Row mutations take the row's stripe of
 * db->row_locks (hashed by table id and row key) so read-modify-write is
 * atomic with respect to every other mutation of the row.  Lock order:
 * row lock, then schema lock.
 */
#ifndef SMOLFS_TABLE_INT_H
#define SMOLFS_TABLE_INT_H

#include <pthread.h>

#include "table.h"
#include "tkey.h"
#include "util.h"

#define TSCH_ROW_LOCKS 64
#define TSCH_DEFAULT_GROUP "default"

struct tsch_family {
	uint16_t id;                  /* unique in its table, never reused */
	char *name;
	struct tbl_family_settings s;
	struct tsch_group *group;
	int dropped;                  /* cells invisible; compaction removes them */
};

struct tsch_group {
	uint32_t id;                  /* 0: the default group (the kv default tree) */
	char *name;
	struct kv_tree *tree;
};

struct tsch_table {
	uint32_t id;
	char *name;
	struct tsch_family **families; /* dropped ones too (their ids stay taken) */
	size_t nfamilies;
	uint16_t next_family;
	struct tsch_group **groups;    /* groups[0] is "default" */
	size_t ngroups;
};

struct tbl_db {
	struct kv_db *kv;
	struct tbl_options opt;
	pthread_rwlock_t schema_lock;
	struct tsch_table **tables;    /* sorted by name */
	size_t ntables;
	uint32_t next_table, next_group;
	pthread_mutex_t row_locks[TSCH_ROW_LOCKS];
	uint64_t last_ts;             /* atomic: the last server timestamp given out */
	uint64_t ts_mark;             /* atomic: every server timestamp given out, in this open
					 and earlier ones, is below it; recorded before use */
	pthread_mutex_t ts_mu;        /* serialises raising ts_mark */
	uint64_t (*clock)(void);      /* tests: tsch_now's wall clock (NULL: the real one) */
	struct kv_compaction_filter gc;
};

/*
 * A table snapshot (table.h) is the kv snapshot underneath under its public
 * name: tbl_snapshot_new returns a kv snapshot so converted, and every read
 * converts it back here.  Nothing else is ever stored behind the pointer.
 */
static inline const struct kv_snapshot *tsch_kv_snap(const struct tbl_snapshot *s)
{
	return (const struct kv_snapshot *)s;
}

/* ---- table.c: schema lookups.  REQUIRE db->schema_lock held (read or write). */
struct tsch_table *tsch_find_table(struct tbl_db *db, const char *name);
struct tsch_table *tsch_table_by_id(struct tbl_db *db, uint32_t id);
/* Live (not dropped) family by name, or NULL. */
struct tsch_family *tsch_find_family(struct tsch_table *t, const char *name);
/* Family by id, dropped ones too (the caller checks ->dropped), or NULL. */
struct tsch_family *tsch_family_by_id(struct tsch_table *t, uint16_t id);
/* The kv tree of a group (NULL = the kv default tree for group 0). */
static inline struct kv_tree *tsch_group_tree(const struct tsch_group *g)
{
	return g->tree;
}

/*
 * Resolve a table name with the schema lock taken for reading: returns the
 * table (the lock stays held until tsch_unlock) or -ENOENT with a
 * message naming it (the lock is released then).
 */
int tsch_lock_table(struct tbl_db *db, const char *name, struct tsch_table **t);
void tsch_unlock(struct tbl_db *db);

/*
 * A server timestamp in *ts: the wall clock in microseconds, strictly
 * increasing, across reopens too.  0, or the error of recording a new mark
 * (the first call after an open, then about once a second).
 */
int tsch_now(struct tbl_db *db, uint64_t *ts);
/* The wall clock in microseconds, for TTL cut-offs. */
uint64_t tsch_wall(void);

/* The row's lock stripe. */
pthread_mutex_t *tsch_row_lock(struct tbl_db *db, uint32_t table, const void *row, size_t len);

/*
 * Validate a row key against the limit (-ENAMETOOLONG with a message); the
 * public tbl_check_row_key also refuses a NULL key with a length.
 */
int tbl_check_row(const void *row, size_t len);

/*
 * Is version ts of a cell in family f visible under the GC policy, given it
 * is the n-th visible version (0 = newest) of its column and now is the
 * wall clock?  Reads and the compaction filter use this one rule.
 */
static inline int tsch_gc_keeps(const struct tsch_family *f, uint64_t ts, uint32_t n, uint64_t now)
{
	if (f->dropped)
		return 0;
	if (f->s.max_versions && n >= f->s.max_versions)
		return 0;
	/* written without overflow: ts may be near UINT64_MAX (a future timestamp) */
	if (f->s.ttl && ts < now && now - ts > f->s.ttl * UINT64_C(1000000))
		return 0;
	return 1;
}

/* ---- tmutate.c */
/*
 * The newest visible version of one column (GC rules applied), read at snap
 * (NULL: now): 1 and *ts, value (decoded, its bytes copied into buf) if
 * there is one, 0 if not, < 0 on error.  REQUIRES schema lock held.
 */
int tmut_read_newest(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f,
		     struct slice row, struct slice qualifier, const struct kv_snapshot *snap,
		     uint64_t *ts, struct cell_value *value, struct buf *buf);

/* ---- tscan.c */
/* 1 if the row of table t has any visible cell of family f (any family if f is NULL). */
int tscan_row_has_cells(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f,
			struct slice row);
/* 1 if the table has any visible cell of family f (f NULL: any cell at all). */
int tscan_table_has_cells(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f);

#endif
