/*
 * db.h -- the database object shared by db.c (open, recovery, the write
 * path, point reads), dbiter.c (iterators) and compaction.c (flushes and
 * compactions).  Private to the kv layer.
 *
 * Locking: db->mu protects every field not marked otherwise.  The write
 * path's leader inserts into db->mem without the mutex (it is the only
 * writer; readers are lock-free, see memtable.h) and publishes the new last
 * sequence with a release store, so a reader that loads it with acquire sees
 * every entry up to it.
 *
 * Every writer and reader takes db->mu briefly, so no file I/O that takes
 * milliseconds is done with it held on a path a writer waits on: the leader
 * opens a new log with it released (switch_log), the log thread closes
 * (or syncs and closes) retired logs (db_log_main), deletions list and unlink without it
 * (db_delete_obsolete_files), and a manifest edit is fdatasynced without it
 * (vs_log_and_apply).  Work that holds the writer lead may release mu: the
 * lead, not the mutex, is what keeps other writers out.
 */
#ifndef SMOLFS_DB_H
#define SMOLFS_DB_H

#include <pthread.h>

#include "batch.h"
#include "cache.h"
#include "kv.h"
#include "memtable.h"
#include "rangedel.h"
#include "version.h"
#include "wal.h"

struct writer {
	const struct kv_batch *batch;
	int sync;
	int done;
	int status;
	pthread_cond_t cv;
	struct writer *next;
};

/*
 * A log a memtable switch retired, still open.  Once the manifest says no
 * tree needs it, the log thread closes it unsynced and it is deleted; a
 * synced write that comes first has the log thread sync it (unless it failed
 * already: broken) and close it (db_log_main).
 */
#define DB_RETIRED_OPEN_MAX 8   /* retired logs held open unsynced, at most */

struct retired_log {
	uint64_t number;
	struct wal_writer *w;
	int broken;
	int released;   /* the idle trees' log numbers were moved past it (or that failed) */
};

struct snapshot_node {
	uint64_t seq;
	struct snapshot_node *prev, *next;
};

/*
 * A tree's in-memory half: its memtables and run-time settings.  Its files
 * are in vt (version.h).  mem is replaced only by the write leader under mu.
 */
struct kv_tree {
	uint32_t id;
	struct vtree *vt;
	struct memtable *mem;          /* active */
	struct memtable *imm;          /* being flushed, or NULL */
	uint64_t imm_log_boundary;     /* the log that began when imm was switched out */
	uint64_t imm_log_seq;          /* the sequence before that log's first record */
	uint64_t imm_done;             /* imm's entries the flush has written so far (atomic) */
	int compression_level;
	struct kv_compaction_filter *filter;
	int dropped;
	/*
	 * Its drop is on its way to the manifest (kv_tree_drop, which releases
	 * mu meanwhile): no compaction of it starts, since its result could not
	 * be recorded once the drop is applied.
	 */
	int dropping;
};

/* A request from kv_compact_range, served by the compaction thread. */
struct manual_compaction {
	struct kv_tree *tree;
	int level;
	int in_place;                  /* rewrite the level into itself (the bottom one) ... */
	uint64_t first_new;            /* ... but only its files numbered below this */
	int into_bottom;               /* merging into the bottom level: all its files in range */
	struct buf lo, hi;
	int has_lo, has_hi;
	int done;
	int status;
};

/*
 * The level-0 slowdown.  While a tree's level 0 holds l0_slowdown_trigger
 * tables or more, writes are let in at kv_options.slowdown_rate bytes a
 * second, 3/4 of that for each table more, until compaction brings level 0
 * back under the trigger.  Each write group is charged its bytes after its
 * append (db_delay_charge).  The next group's leader sleeps only once the
 * charges have run DELAY_QUANTUM_US or more ahead of the clock, and then
 * until they are less than that ahead, DELAY_MAX_US at a time, looking at
 * level 0 again after each step (db_delay_step, make_room).  So with small
 * writes the delay is spread over them in sleeps of about half a
 * millisecond, where a fixed 1 ms sleep per group made every write a slow
 * one while it lasted (and let a single writer of 1 KiB values in at under
 * 1 MB/s).  A large group waits for its own bytes: 64 KiB owes 4 ms at
 * 16 MiB/s.  Debt beyond DELAY_HORIZON_US is forgiven (a batch of 4 MiB
 * would owe 250 ms).
 */
#define DELAY_QUANTUM_US 500
#define DELAY_MAX_US 1000
#define DELAY_HORIZON_US 100000
#define DELAY_DEFAULT_RATE (16u << 20)  /* kv_options.slowdown_rate */
#define DELAY_MIN_RATE 1024     /* bytes a second: the rate never falls below this */

struct write_delay {
	uint64_t rate;                 /* bytes a second let in now; 0: writes are not delayed */
	uint64_t until;                /* now_micros() time when the charges so far are paid */
};

/*
 * At time now, with level 0 holding l0 tables: the micros the leading
 * writer is to sleep before its group (0: none).  Sets d->rate (0 below the
 * trigger, which ends the slowdown).
 */
uint64_t db_delay_step(struct write_delay *d, uint64_t base_rate, int l0, int trigger,
		       uint64_t now);
/* Charge a group of bytes appended at time now (nothing while d->rate is 0). */
void db_delay_charge(struct write_delay *d, uint64_t bytes, uint64_t now);

struct kv_db {
	char *dir;
	struct kv_options opt;
	struct kv_env *env;
	struct env_file *lock;

	pthread_mutex_t mu;
	pthread_cond_t bg_cv;          /* signalled when a flush or compaction finishes */
	pthread_cond_t work_cv;        /* wakes the background threads */

	struct kv_tree **trees;        /* every tree ever opened, dropped ones too */
	size_t ntrees;
	struct wal_writer *wal;
	uint64_t wal_number;
	uint64_t wal_seq;              /* the sequence before the current log's first record */
	uint64_t last_seq;             /* atomic: loads with acquire */

	struct version_set *vs;
	struct table_cache *tc;
	struct mem_pool *mem_pool;     /* the memtables' arena chunks, reused */
	struct cache *block_cache;

	struct writer *writers_head, *writers_tail;
	struct kv_batch *group;        /* scratch for group commit (leader only) */
	struct snapshot_node snapshots; /* list head; oldest first */

	/*
	 * Logs retired by memtable switches and still open, oldest first: each
	 * goes when its writes are in tables (closed unsynced, then deleted) or
	 * when a synced write has it synced (log_sync_wanted).  A synced write
	 * waits until this is empty (sync_prepare), so it never outlives an
	 * older unsynced write.  bg_cv is signalled as each one goes; log_cv
	 * wakes the log thread.
	 */
	struct retired_log *retired;
	size_t nretired, retired_cap;
	pthread_cond_t log_cv;
	int log_sync_wanted;           /* synced writes waiting for the retired logs */
	int log_busy;                  /* the log thread is closing or syncing retired[0] */
	int log_stop;                  /* the log thread leaves (kv_close, after the others) */
	uint64_t log_dir_gen;          /* logs started, and how many of their names */
	uint64_t log_dir_synced;       /* a directory sync made durable (sync_prepare) */
	int deleting;                  /* a db_delete_obsolete_files pass is running */
	int delete_again;              /* and another was asked for meanwhile */
	int delete_wanted;             /* a pass the flush thread is to run (db_log_main) */

	pthread_t flush_thread, compact_thread, log_thread;
	int threads_started;
	int shutting_down;
	/*
	 * The first error of a flush or compaction; writes fail with it.  A
	 * transient one (db_error_transient) is retried: the background thread
	 * and the next writer clear it once bg_retry_at has passed, with a
	 * backoff doubling from 10 ms to 1 s while the retries keep failing.
	 */
	int bg_error;
	char bg_error_msg[512];        /* its sentence, naming the file */
	uint64_t bg_retry_at;          /* now_micros() time of the next retry */
	uint64_t bg_backoff;           /* microseconds; 0 after a success */
	/*
	 * After ENOSPC: the file system's free bytes when the failed work
	 * began or when its failure was recorded (its output removed, mostly:
	 * a compaction's finished tables and a flush's table whose manifest
	 * edit failed stay until a deletion pass), whichever was less, and
	 * when it failed.  A retry waits for more free space than that (work
	 * that had no more room would fail again at the same point), or for
	 * BG_FULL_RETRY to pass, so a disk that stays full costs no rewrites.
	 * Not the recorded figure alone: space freed while the work ran (a
	 * file the user removed, files the engine deleted) is already in it,
	 * and a retry would wait for more space than the work had.  Such a
	 * retry may fail again if that space is taken by then.
	 */
	int bg_full;                   /* the values below hold */
	uint64_t bg_full_free, bg_full_at;
	int wal_broken;                /* the log failed an append or fsync: the next write starts a new one */
	uint64_t failed_log;           /* the newest log that failed while its writes may be in
					  memtables only (flush_failed_log), or 0 */
	int log_lost;                  /* that failure may have lost acknowledged bytes from the
					  page cache (a failed fsync, or an append failed other than
					  for space): kv_close flushes them */
	int recovery_full;             /* recovery could not flush for lack of space: the
					  replayed writes stay in memory (recover) */
	int compacting;                /* the compaction thread is working */
	struct write_delay delay;      /* the level-0 slowdown (make_room) */
	int flush_requested;
	struct manual_compaction *manual;
	uint64_t *pending_outputs;     /* file numbers being written (not yet live) */
	size_t npending, pending_cap;

	struct kv_stats stats;         /* counters updated with atomics */
};

/* compaction.c */
/*
 * zstd's fast level, for tables written above the level where a tree's data
 * comes to rest: they are rewritten again soon, and compressing them at the
 * configured level would cost most of the CPU of a write-heavy load.
 */
#define DB_UPPER_ZSTD_LEVEL (-1)
/*
 * The zstd level (0: none) for a table of tree t written to out_level, v
 * being the tree's version it goes into: the tree's own level where its
 * data comes to rest (the deepest level holding data, or deeper), the fast
 * level above that.  REQUIRES mu held.
 */
int db_output_compression(const struct kv_tree *t, const struct version *v, int out_level);
/*
 * The background threads' names (pthread_setname_np, set by each thread as
 * it starts): what top -H, gdb and perf show, and how a test's fault
 * environment holds one thread's calls alone (env_fault_hold_in).
 */
#define DB_THREAD_FLUSH "kv-flush"
#define DB_THREAD_COMPACT "kv-compact"
#define DB_THREAD_LOG "kv-log"
void *db_flush_main(void *arg);
void *db_compact_main(void *arg);
/*
 * Write a memtable to a new level-0 table of t; adds it to edit.  If
 * free_before is not NULL, it is set to the file system's free bytes when
 * the writing began (db_free_space).  REQUIRES mu held (released inside).
 */
int db_write_level0(struct kv_db *db, struct kv_tree *t, struct memtable *m,
		    struct version_edit *edit, uint64_t *free_before);
/*
 * Delete the tables no live version names, the logs no tree needs and the
 * old manifests.  REQUIRES mu held; releases it for the file I/O (listing
 * the directory, unlinking), so no writer waits for a deletion.  A call
 * while another thread's pass runs makes that pass go round once more
 * instead.  bg_cv is signalled when a pass ends.
 */
void db_delete_obsolete_files(struct kv_db *db);
/*
 * The oldest log some tree still needs: every write in an older log is in a
 * table.  REQUIRES mu held.
 */
uint64_t db_min_log(struct kv_db *db);
uint64_t db_oldest_snapshot(struct kv_db *db);
void db_pending_add(struct kv_db *db, uint64_t number);
void db_pending_remove(struct kv_db *db, uint64_t number);
int db_needs_compaction(struct kv_db *db);

/* db.c */
/* The log thread: closes, or syncs and closes, retired logs (switch_log in db.c). */
void *db_log_main(void *arg);
/* 1 if the log thread has a retired log to close or sync now.  REQUIRES mu held. */
int db_log_work(struct kv_db *db);
/*
 * Before a flush of t is recorded, which makes its writes durable up to the
 * log boundary: have the retired logs before it synced if another tree
 * still needs them for writes it holds in memory.  REQUIRES mu held
 * (released while waiting).
 */
void db_sync_logs_before(struct kv_db *db, struct kv_tree *t, uint64_t boundary);
/* 1 for errors that may go away on their own: a full disk, an I/O error, no descriptors. */
int db_error_transient(int err);
/*
 * The file system's free bytes, or UINT64_MAX where the environment cannot
 * tell.  A system call: work that is about to begin calls it without mu
 * (the error paths that compare with it hold mu, as they are rare).
 */
uint64_t db_free_space(struct kv_db *db);
/*
 * Record a failed flush or compaction (what) and schedule its retry;
 * free_before is db_free_space when the work began.  REQUIRES mu held.
 */
void db_set_bg_error(struct kv_db *db, int err, const char *what, uint64_t free_before);
/*
 * 0 if writes may go on (a transient background error whose retry time has
 * come is cleared, and the background threads woken to retry), else the
 * background error, with its sentence recorded for kv_strerror in the
 * calling thread.  REQUIRES mu held.
 */
int db_bg_check(struct kv_db *db);
/* A background thread's wait while bg_error is set: until its retry time, if it has one.  REQUIRES mu held. */
void db_bg_wait(struct kv_db *db);
struct kv_tree *db_tree(struct kv_db *db, const struct kv_tree *t);  /* NULL -> default */
struct kv_tree *db_tree_by_id(struct kv_db *db, uint32_t id);
void db_log(struct kv_db *db, enum kv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 1 if t holds writes in memory (a memtable in flush, or its active one). */
static inline int tree_in_memory(const struct kv_tree *t)
{
	return t->imm || mem_entries(t->mem) + mem_range_dels(t->mem) > 0;
}

static inline uint64_t db_last_seq(struct kv_db *db)
{
	return __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
}
static inline void db_count(uint64_t *counter, uint64_t n)
{
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

#endif
