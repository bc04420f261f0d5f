/*
 * version.h -- which SSTables make up the database, and how that changes.
 *
 * A version is an immutable list of live table files per level.  Level 0
 * holds flushed memtables, newest first, whose key ranges may overlap; in
 * every deeper level the files are sorted and their ranges disjoint, and a
 * key's versions in a shallower level are always newer than those deeper.
 * Level L >= 1 aims at 10^(L-1) x max_bytes_level_base bytes.
 *
 * Every change (a flush adds a file, a compaction replaces some) is a
 * version edit, appended to the MANIFEST log and fsynced before the new
 * version is used, so the live set after a crash is exactly the last edit
 * that reached the disk.  At open the manifest is replayed; then a new
 * manifest starting with a snapshot of the whole state is written and
 * CURRENT is switched to it (written to a temporary file, fsynced, renamed,
 * directory fsynced).  Manifest records use the WAL's record format, read
 * strictly: only a truncated or zero-filled last record counts as torn.
 *
 * Edit encoding: a sequence of (varint32 tag, fields):
 *     1 log number       varint64
 *     2 next file number varint64
 *     3 last sequence    varint64
 *     4 compact pointer  varint32 level, lenprefixed internal key
 *     5 deleted file     varint32 level, varint64 number
 *     6 new file         varint32 level, varint64 number, varint64 size,
 *                        lenprefixed smallest, lenprefixed largest,
 *                        varint64 smallest seq, varint64 largest seq,
 *                        varint64 entries, varint64 range tombstones
 *     7 format version   varint32 (1); the first record of every manifest has
 *                        it, and a version this code does not know is refused
 *                        (-EPROTONOSUPPORT) rather than misread
 *     8 tree             varint32 id, lenprefixed name: the tree that tags 1,
 *                        4, 5 and 6 of this record concern (created if new);
 *                        without it, tree 0 ("default")
 *     9 drop tree        (no fields) the record's tree is dropped
 *    10 next tree id     varint32
 *    11 failed log       varint64 log number, varint64 acknowledged length:
 *                        a log whose append or fsync failed (or a last log
 *                        kept with its unsynced tail by an open that could
 *                        not flush it), recorded before any later log was
 *                        started; its tail past what was synced may be
 *                        damaged by a power cut (see db.c, recover)
 * Tags 1 (log number), 4, 5, 6 are per tree; 2, 3, 10 and 11 are global.
 *
 * Versions are reference counted; readers and iterators hold the version
 * they started with, so its files are not deleted under them.
 * REQUIRES: the db mutex for every function that changes the version set.
 */
#ifndef SMOLFS_VERSION_H
#define SMOLFS_VERSION_H

#include <pthread.h>

#include "cache.h"
#include "dbformat.h"
#include "env.h"
#include "iter.h"
#include "kv.h"
#include "rangedel.h"
#include "sst.h"
#include "wal.h"

#define NUM_LEVELS 7

struct file_meta {
	int refs;                 /* versions holding it (db mutex) */
	uint64_t number, size;
	struct buf smallest, largest;   /* internal keys, tombstone ends included */
	uint64_t smallest_seq, largest_seq;
	uint64_t entries, range_dels;
	int being_compacted;      /* db mutex */
};

static inline struct slice fm_smallest_user(const struct file_meta *f)
{
	return ikey_user(buf_slice(&f->smallest));
}
static inline struct slice fm_largest_user(const struct file_meta *f)
{
	return ikey_user(buf_slice(&f->largest));
}

struct version_set;
struct vtree;

struct version {
	struct version_set *vs;
	struct vtree *tree;       /* the tree whose files these are */
	int refs;                 /* atomic */
	struct file_meta **files[NUM_LEVELS];
	size_t nfiles[NUM_LEVELS];
	/* the level most in need of compaction, and how much (>= 1: needed) */
	double score;
	int score_level;
	struct version *prev, *next;   /* live versions list (db mutex) */
};

struct file_add {
	int level;
	struct file_meta *f;      /* the edit takes a reference */
};
struct file_del {
	int level;
	uint64_t number;
};

/*
 * A log whose tail may be damaged although later logs exist (tag 11): its
 * records up to acked bytes were acknowledged to writers.
 */
struct failed_log {
	uint64_t number, acked;
};

struct version_edit {
	uint32_t tree;                /* the tree the per-tree fields concern (0: default) */
	char *tree_name;              /* with tag 8: the tree's name (created if unknown) */
	int drop_tree;
	int has_format, has_log_number, has_next_file, has_last_seq, has_next_tree;
	int has_log_seq;
	uint32_t format, next_tree;
	uint64_t log_number, next_file, last_seq;
	uint64_t log_seq;             /* tag 12: the sequence before log_number's first record */
	struct file_add *adds;
	size_t nadds;
	struct file_del *dels;
	size_t ndels;
	int cp_level[NUM_LEVELS];     /* compact pointer updates */
	struct buf cp_key[NUM_LEVELS];
	int ncp;
	struct failed_log *failed;    /* tag 11 records */
	size_t nfailed;
};

void edit_init(struct version_edit *e);
void edit_free(struct version_edit *e);
/* Adds a file (copies the keys into a new file_meta). */
void edit_add_file(struct version_edit *e, int level, uint64_t number, uint64_t size,
		   struct slice smallest, struct slice largest, uint64_t smallest_seq,
		   uint64_t largest_seq, uint64_t entries, uint64_t range_dels);
/* Moves src's added files (and their references) to the end of dst's. */
void edit_move_adds(struct version_edit *dst, struct version_edit *src);
void edit_del_file(struct version_edit *e, int level, uint64_t number);
void edit_set_compact_pointer(struct version_edit *e, int level, struct slice key);
void edit_add_failed_log(struct version_edit *e, uint64_t number, uint64_t acked);
/* Sets the tree's log number (tag 1) and the sequence before that log (tag 12; 0: none). */
void edit_set_log(struct version_edit *e, uint64_t number, uint64_t seq);
void edit_encode(const struct version_edit *e, struct buf *out);
int edit_decode(struct version_edit *e, struct slice rec, const char *name);

/* Open SSTables, shared by all versions: file number -> struct sst. */
struct table_cache;
struct table_cache *tcache_new(struct kv_env *env, const char *dir, int max_open,
			       struct cache *block_cache, uint64_t *bytes_read);
/* Read the tables opened from now on with pread (1) or through a map (0, the default). */
void tcache_set_no_map(struct table_cache *tc, int no_map);
void tcache_free(struct table_cache *tc);
/* A pinned table; release with tcache_release. */
int tcache_get(struct table_cache *tc, const struct file_meta *f, struct sst **t,
	       struct cache_handle **h);
void tcache_release(struct table_cache *tc, struct cache_handle *h);
void tcache_evict(struct table_cache *tc, uint64_t number);
/* An iterator over one table that keeps it pinned; sst_flags as for sst_iter_new. */
struct iter *tcache_iter(struct table_cache *tc, const struct file_meta *f, unsigned sst_flags);

/*
 * One LSM tree of the database.  Every tree has its own levels, memtables
 * and compactions; all share the log, the manifest, the sequence numbers and
 * the file numbers, so a batch touching several trees commits atomically.
 * Tree 0, "default", always exists.  Trees are never freed before the
 * version set: a dropped tree keeps its struct (with no files) so handles to
 * it stay safe.
 */
struct vtree {
	uint32_t id;
	char *name;
	int dropped;
	struct version *current;
	struct buf compact_pointer[NUM_LEVELS];
	uint64_t log_number;          /* this tree's writes in older logs are all in tables */
	uint64_t log_seq;             /* the sequence before that log's first record; 0: unknown */
};

struct version_set {
	char *dir;
	struct kv_env *env;
	const struct kv_options *opt;
	struct table_cache *tc;
	uint64_t next_file;
	uint64_t last_seq;            /* as recorded in the manifest */
	uint64_t manifest_number;
	uint32_t next_tree;           /* ids are never reused: old logs may name dropped ones */
	struct wal_writer *manifest;
	/*
	 * The manifest failed an append or fsync (its tail is unknown), or the
	 * directory fsync after CURRENT named it failed: the next edit first
	 * writes a whole new manifest and switches CURRENT again.
	 */
	int manifest_stale;
	/*
	 * The lock that guards the version set (the database's mutex), which
	 * vs_log_and_apply releases while its edit goes to the disk, or NULL
	 * (nothing to release: recovery, repair).  manifest_writing is set
	 * meanwhile; the next edit waits on manifest_cv until it is clear, so
	 * edits reach the manifest, and apply, one at a time and in order.
	 */
	pthread_mutex_t *mu;
	int manifest_writing;
	pthread_cond_t manifest_cv;
	struct vtree **trees;         /* index = position, not id */
	size_t ntrees;
	/*
	 * The failed logs recorded (tag 11), oldest first; a new manifest keeps
	 * those a live tree may still need (number >= vs_min_log_number).
	 */
	struct failed_log *failed;
	size_t nfailed;
	struct version live;          /* list head of live versions */
};

/* The tree with this id (dropped ones too), or NULL. */
struct vtree *vs_tree(struct version_set *vs, uint32_t id);
struct vtree *vs_tree_by_name(struct version_set *vs, const char *name);
/* The smallest log number any live tree still needs. */
uint64_t vs_min_log_number(struct version_set *vs);
/*
 * The sequence number before the first record of the log vs_min_log_number
 * names, so that recovery sees that log's loss whole (0: not recorded).
 */
uint64_t vs_min_log_seq(struct version_set *vs);
/* The failed log with this number (tag 11), or NULL. */
const struct failed_log *vs_failed_log(const struct version_set *vs, uint64_t number);
/*
 * Record a failed log in memory; a later record of the same log replaces
 * the earlier one.  Only the next new manifest carries it: to log it now,
 * put it in an edit (edit_add_failed_log) for vs_log_and_apply.
 */
void vs_add_failed_log(struct version_set *vs, const struct failed_log *fl);

struct version_set *vs_new(const char *dir, struct kv_env *env, const struct kv_options *opt,
			   struct table_cache *tc);
void vs_free(struct version_set *vs);
/*
 * Read CURRENT and the manifest it names into vs.  -ENOENT if there is no
 * CURRENT, -EUCLEAN if the manifest is damaged or a table it names is missing.
 */
int vs_recover(struct version_set *vs);
/* Start a database: only the empty default tree (no I/O; vs_new_manifest follows). */
void vs_init_empty(struct version_set *vs);
/*
 * Apply edit to the current version, append it to the manifest and fsync; on
 * success the result becomes current.  On failure nothing changes.
 * REQUIRES: a manifest is open (vs_new_manifest ran; kv_open does that).
 */
int vs_log_and_apply(struct version_set *vs, struct version_edit *e);
/* Until no edit is on its way to the manifest (see mu above).  REQUIRES vs->mu held. */
void vs_wait_idle(struct version_set *vs);
/* Apply edit to the current version without logging it (recovery, before a new manifest). */
int vs_apply_only(struct version_set *vs, struct version_edit *e);
/*
 * Write a new manifest holding the whole state and point CURRENT at it.  If
 * only the directory fsync after the rename fails, CURRENT may already name
 * the new manifest: it is kept and used (never unlinked), the error is
 * returned and manifest_stale set, so the next edit switches once more.
 */
int vs_new_manifest(struct version_set *vs);
/*
 * 1 if the manifest at path is what a first open that never finished leaves
 * behind: empty, cut short, or the default tree alone with no table; 0 if it
 * holds anything else (or cannot be read).
 */
int vs_manifest_is_initial(struct version_set *vs, const char *path);
uint64_t vs_new_file_number(struct version_set *vs);

void version_ref(struct version *v);
/* 1 if that was the last reference (its files may have become obsolete). */
int version_unref(struct version *v);
/* Bytes in a level. */
uint64_t version_level_bytes(const struct version *v, int level);
uint64_t max_bytes_for_level(const struct kv_options *opt, int level);

/*
 * Point lookup in the tables of v, newest first (see db.c for the rule that
 * combines point entries and range tombstones); hash is bloom_hash(ukey).
 * Returns 1 found (*type, *seq, val filled; a covering range tombstone
 * gives KT_DELETE and its sequence), 0 absent, negative on error.
 */
int version_get(struct version *v, struct slice ukey, uint64_t hash, uint64_t snap, int *type,
		uint64_t *seq, struct buf *val, uint64_t *bloom_useful);

/*
 * Files of level overlapping user keys [lo, hi] (NULL: unbounded), inclusive.
 * For level 0 with expand, the set is closed under overlap (files overlapping
 * the chosen ones are added until none is).  Returns a malloc'd array.
 */
struct file_meta **version_overlapping(const struct version *v, int level, const struct slice *lo,
				       const struct slice *hi, int expand, size_t *n);

/*
 * A concatenating iterator over a level >= 1 (opens each file as it is
 * reached, with sst_flags as for sst_iter_new).
 */
struct iter *level_iter_new(struct version *v, int level, unsigned sst_flags);

/*
 * A cursor over the range tombstones of every table in v, for keys visited
 * in order (either direction; a jump costs a binary search).  It reads each
 * table's own fragmented set (sst_range_dels), pinning one table per level
 * at a time, so making one costs a pass over v's file lists, not a merge of
 * every tombstone.  covering() gives the largest sequence <= snap of a
 * tombstone covering ukey (0 if none) and in *fr its fragment, valid until
 * the next call.  A table that cannot be opened contributes nothing, and
 * its error stays in vtomb_cursor_status (0 while there is none): a caller
 * must not take an answer given after an error as the truth.  REQUIRES: a
 * reference to v while the cursor lives; one thread at a time.
 */
struct vtomb_cursor;
struct vtomb_cursor *vtomb_cursor_new(struct version *v);
int vtomb_cursor_empty(const struct vtomb_cursor *c);    /* no table has tombstones */
int vtomb_cursor_status(const struct vtomb_cursor *c);
uint64_t vtomb_cursor_covering(struct vtomb_cursor *c, struct slice ukey, uint64_t snap,
			       const struct rdel_frag **fr);
void vtomb_cursor_free(struct vtomb_cursor *c);

/* Re-read the current manifest and report each damaged record; 0 or -EUCLEAN. */
int vs_check_manifest(struct version_set *vs,
		      void (*report)(void *arg, const char *file, uint64_t off, const char *msg),
		      void *arg);

/* The set of live file numbers over every live version (malloc'd, unsorted). */
uint64_t *vs_live_files(struct version_set *vs, size_t *n);

#endif
