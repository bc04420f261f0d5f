/*
 * kv.h -- the public interface of smolfs's key-value storage engine.
 *
 * A persistent sorted map from byte-string keys to byte-string values, kept in a
 * log-structured merge tree: writes go to a write-ahead log and an in-memory
 * skiplist (the memtable); full memtables are flushed to sorted, checksummed,
 * zstd-compressed tables (SSTables) that a background thread merges level by
 * level.  Keys sort by memcmp order; a shorter key that is a prefix of a longer
 * one sorts first.
 *
 * Conventions, everywhere in this header:
 *   - Every function that can fail returns 0 or a negative errno.  Corruption of
 *     anything on disk is -EUCLEAN ("structure needs cleaning", as the kernel's
 *     filesystems report it); a record that was never completely written
 *     (the torn tail of a log after a crash) is not corruption.
 *   - After a failure, kv_strerror(err) gives a sentence for people that names
 *     the file and offset where it applies.  It is kept per thread, with the
 *     error it explains, until the thread's next call of this API.
 *   - Keys and values are (pointer, length) pairs; lengths may be 0; pointers
 *     are never NULL unless the length is 0.
 *   - Objects are opaque; whoever creates one frees it with the matching call.
 *   - A struct kv_db may be used by many threads at once without locking.  A
 *     struct kv_iter or struct kv_batch belongs to one thread at a time.
 */
#ifndef SMOLFS_KV_H
#define SMOLFS_KV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kv_db;
struct kv_batch;
struct kv_iter;
struct kv_snapshot;
struct kv_tree;         /* one LSM tree of the database (see "Trees" below) */
struct kv_env;          /* file I/O; see engine/env.h, which tests replace */

/*
 * Largest key and value the engine accepts (-E2BIG beyond).  Values may be
 * 100 MiB plus 64 bytes, so a layer above can store a 100 MiB payload with a
 * small header of its own (the table layer's type tag).
 */
#define KV_MAX_KEY_SIZE   (64u * 1024)
#define KV_MAX_VALUE_SIZE (100u * 1024 * 1024 + 64)

/* Log levels passed to kv_options.log. */
enum kv_log_level { KV_LOG_ERROR = 0, KV_LOG_WARN = 1, KV_LOG_INFO = 2, KV_LOG_DEBUG = 3 };

/*
 * Compaction filter: called during compaction for the newest live version of
 * each key that no snapshot can still see in an older form.  Return 1 to
 * drop the entry (it disappears as if deleted), 0 to keep it.  start() is
 * called once per compaction, or once per key range of a compaction cut
 * into ranges (kv_options.max_subcompactions), and its result is passed to
 * filter() and finish(), so a filter may keep state across consecutive keys
 * (which arrive in key order).  A state sees the keys of one range alone
 * and is never used by two threads at once; but the ranges of a compaction
 * are merged at the same time by threads of their own, so start(),
 * filter() and finish() must be safe to call from several threads at once
 * (with the same arg, and different states).
 */
struct kv_compaction_filter {
	void *(*start)(void *arg);
	int (*filter)(void *state, const void *key, size_t klen, const void *val, size_t vlen);
	void (*finish)(void *state);
	void *arg;
};

struct kv_options {
	struct kv_env *env;            /* NULL: the POSIX environment */
	int create_if_missing;         /* default 1 */
	int error_if_exists;           /* default 0 */
	/*
	 * 1: open read-only (default 0).  Nothing in the directory is created,
	 * written, renamed, truncated or deleted: the logs are replayed into
	 * memory only (no flush to a table, no new log or manifest, no removal
	 * of obsolete files), no background work runs, and every call that
	 * would change the database (writes, flush, compaction, creating or
	 * dropping a tree) returns -EROFS.  The database must exist
	 * (create_if_missing is ignored).  Lock: the existing LOCK file is
	 * opened read-only and locked shared, so read-only opens share the
	 * directory with each other but not with a writer (-EBUSY either way);
	 * without a LOCK file (a database never opened for writing here, or a
	 * copy) or one that cannot be opened, no lock is taken.
	 */
	int read_only;
	size_t write_buffer_size;      /* memtable bytes before it is flushed; default 64 MiB */
	size_t block_size;             /* target uncompressed data block size; default 4 KiB */
	int block_restart_interval;    /* keys between restart points; default 16 */
	int compression_level;         /* zstd level 1..22 for the tables where data rests (upper
					  levels use zstd's fast level -1), or 0 for no
					  compression; default 1 */
	size_t block_cache_size;       /* bytes of uncompressed blocks cached; default 64 MiB */
	int bloom_bits_per_key;        /* default 10 (about 1% false positives); 0 = no filter */
	int max_open_files;            /* SSTables kept open; default 0: as many as the descriptor
					  limit allows (kv_open raises the soft limit to the hard
					  one and leaves a quarter, at least 64, for everything
					  else); a larger number is cut down to that */
	int read_tables_with_pread;    /* 1: read table blocks with pread(2) and a copy; 0 (the
					  default): through a read-only map of each table, under a
					  SIGBUS guard (a page that is gone is EIO, see smolfs(5)) */
	size_t target_file_size;       /* SSTable size in levels >= 1; default 4 MiB */
	uint64_t max_bytes_level_base; /* size of level 1; each further level is 10x; default 64 MiB */
	int l0_compaction_trigger;     /* level-0 files that start a compaction; default 4 */
	int l0_slowdown_trigger;       /* level-0 files from which writes are let in at
					  slowdown_rate; default 8 */
	int l0_stop_trigger;           /* level-0 files at which writes wait for compaction; default 12 */
	int max_subcompactions;        /* key ranges a large compaction is cut into, each merged
					  by a thread of its own (smolfs(5), "compaction");
					  default 0: the number of cores, at most 4; 1: none */
	uint64_t slowdown_rate;        /* bytes a second of writes let in while level 0 holds
					  l0_slowdown_trigger files, 3/4 of it for each file more
					  (smolfs(5), "write pacing"); default 16 MiB, also for 0;
					  at least 1 KiB */
	int sync_wal;                  /* fsync the log on every write, as if KV_SYNC was given */
	struct kv_compaction_filter *compaction_filter; /* NULL: none */
	/* Where log lines go; NULL: stderr for KV_LOG_WARN and worse. */
	void (*log)(void *arg, enum kv_log_level level, const char *msg);
	void *log_arg;
};

/* Fill *opt with the defaults above. */
void kv_options_init(struct kv_options *opt);

/* Flags for kv_write() and friends. */
#define KV_SYNC 1u  /* fsync the write-ahead log before returning: survives power loss */

/*
 * Open (and, with create_if_missing, create) the database in directory dir.
 * Replays the write-ahead log.  Fails with -EBUSY if another process or
 * another kv_open in this one holds the directory, -ENOENT if it does not
 * exist and create_if_missing is 0, -EEXIST with error_if_exists, -EUCLEAN
 * on corruption.  On success stores the handle in *dbp; on failure *dbp = NULL.
 */
int kv_open(const char *dir, const struct kv_options *opt, struct kv_db **dbp);

/*
 * Wait for background work to stop, release the directory and free the
 * handle.  Everything written before remains in the log.  Returns the
 * background error that still stands, if any (one that a retry cleared is
 * gone), but not a full disk's that has cleared since (the disk has more
 * room than when the flush or compaction failed: nothing was lost, the next
 * open redoes the work); or the error of a failed log.  Iterators and
 * snapshots must be released first.
 */
int kv_close(struct kv_db *db);

/* Single-key writes; each is its own atomic batch. */
int kv_put(struct kv_db *db, const void *key, size_t klen, const void *val, size_t vlen, unsigned flags);
int kv_delete(struct kv_db *db, const void *key, size_t klen, unsigned flags);
/* Delete every key k with start <= k < end.  -EINVAL unless start < end. */
int kv_delete_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen,
		    unsigned flags);

/* Batches: mutations applied all together or not at all, in the order added. */
struct kv_batch *kv_batch_new(void);
void kv_batch_free(struct kv_batch *b);
void kv_batch_clear(struct kv_batch *b);
int kv_batch_put(struct kv_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
int kv_batch_delete(struct kv_batch *b, const void *key, size_t klen);
int kv_batch_delete_range(struct kv_batch *b, const void *start, size_t slen, const void *end, size_t elen);
/* The same for a tree other than the default one (NULL: the default tree). */
int kv_batch_put_tree(struct kv_batch *b, const struct kv_tree *t, const void *key, size_t klen,
		      const void *val, size_t vlen);
int kv_batch_delete_tree(struct kv_batch *b, const struct kv_tree *t, const void *key,
			 size_t klen);
int kv_batch_delete_range_tree(struct kv_batch *b, const struct kv_tree *t, const void *start,
			       size_t slen, const void *end, size_t elen);
size_t kv_batch_count(const struct kv_batch *b);   /* mutations in the batch */
size_t kv_batch_bytes(const struct kv_batch *b);   /* its encoded size */

/*
 * Apply a batch.  When this returns 0 the batch is in the log (it survives the
 * process being killed); with KV_SYNC it has also been fsynced (it survives
 * power loss).  Concurrent writers are committed together (group commit).
 * After a log write or fsync fails the database refuses further writes with
 * that error until it is reopened; nothing half-written is ever applied.
 * An empty batch writes nothing; with KV_SYNC it still fsyncs the log, so
 * every write committed before it survives power loss.
 */
int kv_write(struct kv_db *db, const struct kv_batch *b, unsigned flags);

/* A consistent point in time for reads.  Release every snapshot before kv_close. */
const struct kv_snapshot *kv_snapshot_new(struct kv_db *db);
void kv_snapshot_release(struct kv_db *db, const struct kv_snapshot *snap);

/*
 * Point lookup at snap (NULL: latest).  On success *val is a malloc'd copy
 * the caller frees, *vlen its length.  -ENOENT when the key is absent.
 */
int kv_get(struct kv_db *db, const struct kv_snapshot *snap, const void *key, size_t klen,
	   char **val, size_t *vlen);
/* The same in tree t (NULL: the default tree). */
int kv_get_tree(struct kv_db *db, struct kv_tree *t, const struct kv_snapshot *snap,
		const void *key, size_t klen, char **val, size_t *vlen);

struct kv_read_options {
	struct kv_tree *tree;                /* NULL: the default tree */
	const struct kv_snapshot *snapshot;  /* NULL: the state when the iterator is created */
	const void *lower; size_t lower_len; /* if lower != NULL: keys >= lower only */
	const void *upper; size_t upper_len; /* if upper != NULL: keys < upper only */
	int no_fill_cache;                   /* 1: do not keep the blocks this read loads */
	/*
	 * 1: keys-only.  The iterator hands out each value's length
	 * (kv_iter_value_size) and only its first bytes: kv_iter_value gives
	 * exactly the first min(length, KV_VALUE_PREFIX) bytes.  Keys,
	 * deletions, range deletions and snapshots are as without it.  What it
	 * saves: a value that has an SSTable data block of its own (every value
	 * of block_size bytes or more) is not read at all -- the table's index
	 * records its key, length and first bytes (smolfs(5)) -- so listing
	 * large values reads index bytes only; smaller values share blocks with
	 * their neighbours, which are read as usual (nothing is copied).
	 */
	int keys_only;
};

/* The value bytes a keys-only iterator gives (see kv_read_options.keys_only). */
#define KV_VALUE_PREFIX 16u

/*
 * Iterators see one consistent snapshot.  A new iterator is not positioned:
 * call a seek first.  Key and value pointers are valid until the next move.
 * An iterator with bounds never reads past them (prefix iteration stops early).
 */
struct kv_iter *kv_iter_new(struct kv_db *db, const struct kv_read_options *ro);
/* An iterator over the keys that start with prefix (bounds set for you). */
struct kv_iter *kv_iter_new_prefix(struct kv_db *db, const struct kv_snapshot *snap,
				   const void *prefix, size_t plen);
void kv_iter_free(struct kv_iter *it);
void kv_iter_seek_first(struct kv_iter *it);
void kv_iter_seek_last(struct kv_iter *it);
void kv_iter_seek(struct kv_iter *it, const void *key, size_t klen);          /* first key >= key */
void kv_iter_seek_for_prev(struct kv_iter *it, const void *key, size_t klen); /* last key <= key */
int kv_iter_valid(const struct kv_iter *it);
void kv_iter_next(struct kv_iter *it);
void kv_iter_prev(struct kv_iter *it);
const void *kv_iter_key(const struct kv_iter *it, size_t *klen);
const void *kv_iter_value(const struct kv_iter *it, size_t *vlen);
/*
 * The full length of the current value, also keys-only (when kv_iter_value
 * gives only its first bytes).  REQUIRES valid.  No I/O.
 */
size_t kv_iter_value_size(const struct kv_iter *it);
/* 0, or the error that stopped the iterator (it is then not valid). */
int kv_iter_status(const struct kv_iter *it);

/*
 * Trees.  A database holds one or more LSM trees, each with its own
 * memtable, levels, compactions and settings; they share the write-ahead
 * log, the manifest and the sequence numbers, so one batch may write to
 * several trees and still commits atomically, and a snapshot covers all of
 * them.  A scan of one tree never reads another tree's files.  Tree
 * "default" always exists (NULL stands for it everywhere).  Names are
 * [A-Za-z0-9_.-]{1,64}.  Handles stay valid until kv_close, even after a drop.
 */
struct kv_tree_options {
	int compression_level;         /* zstd level 1..22 or 0; -1: the database's */
	struct kv_compaction_filter *compaction_filter;  /* NULL: none */
};
void kv_tree_options_init(struct kv_tree_options *o);
/*
 * Open tree name, creating it (durably, before returning) if it does not
 * exist.  Settings are not stored: each open gives them (the default tree's
 * come from kv_options).  -EINVAL for a bad name.
 */
int kv_tree_open(struct kv_db *db, const char *name, const struct kv_tree_options *o,
		 struct kv_tree **t);
/* Drop a tree and all its data (one manifest record; its files are deleted). */
int kv_tree_drop(struct kv_db *db, struct kv_tree *t);
/* The names of the live trees: a malloc'd array of malloc'd strings. */
int kv_tree_list(struct kv_db *db, char ***names, size_t *n);
const char *kv_tree_name(const struct kv_tree *t);

/*
 * Flush every tree's memtable to SSTables and wait for it.  A transient
 * background error met meanwhile is waited out and retried twice (a full disk
 * that stays full fails the call within two seconds); a compaction's error
 * once the memtables are out is not returned (the next write meets it).
 */
int kv_flush(struct kv_db *db);
/*
 * Compact every file that overlaps [start, end) down to the last level and
 * wait.  NULL start/end: unbounded.  Drops deleted and overwritten data.
 */
int kv_compact_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen);
/* The same in tree t (NULL: the default tree). */
int kv_compact_range_tree(struct kv_db *db, struct kv_tree *t, const void *start, size_t slen,
			  const void *end, size_t elen);

/*
 * Statistics and state for people, as text.  Names: "stats" (levels, files,
 * bytes, compactions, cache hit rate), "levels" (files per level),
 * "sstables" (every live file of every tree, a line each: level, number,
 * bytes, entries, range tombstones, sequence range and raw, uncompressed
 * key and value bytes, read from the file's properties).  Returns a malloc'd string the caller frees,
 * or NULL for an unknown name.
 */
char *kv_property(struct kv_db *db, const char *name);

/* Counters for benchmarks and tests; all monotonic since open. */
struct kv_stats {
	uint64_t bytes_written_wal;
	uint64_t bytes_flushed;
	uint64_t bytes_compacted_read;
	uint64_t bytes_compacted_written;
	uint64_t bytes_read_sst;        /* block bytes read from SSTable files (cache misses) */
	uint64_t block_cache_hits;
	uint64_t block_cache_misses;
	uint64_t bloom_useful;          /* lookups a bloom filter answered "absent" */
	uint64_t flushes;
	uint64_t compactions;
	uint64_t stall_micros;          /* time writers waited for flush or compaction */
	uint64_t paced_writes;          /* writes that waited for a flush to catch up (at most
					   2 ms each: see smolfs(5), "write pacing") */
	uint64_t subcompactions;        /* key ranges merged by compactions that were cut */
	uint64_t delayed_writes;        /* writes that slept for the level-0 slowdown (a group
					   committed together counts once: the same section) */
	uint64_t disk_bytes;            /* live SSTables + log, now */
	int files_per_level[8];         /* over all trees */
};
void kv_get_stats(struct kv_db *db, struct kv_stats *st);

/*
 * Read every block of every live table, verify checksums and key order, and
 * re-read the manifest's records.  (The write-ahead log is checked when it is
 * replayed at open.)  Each problem is passed to report (file name, offset,
 * message; report may be NULL); returns 0 if there was none, -EUCLEAN if
 * there was any.
 */
int kv_verify(struct kv_db *db, void (*report)(void *arg, const char *file, uint64_t off, const char *msg),
	      void *arg);

/*
 * The names of the files in the database's directory that belong to the
 * engine but that it does not use: tables no live version names (left by a
 * crash during a flush or compaction), logs whose writes are all in tables,
 * manifests older than the current one, a CURRENT.tmp.  An open for writing
 * deletes them; a read-only open leaves them (smolctl check reports them).
 * Files the engine does not name are not listed.  *names is a malloc'd
 * array of malloc'd strings, sorted; the caller frees each and the array.
 */
int kv_stray_files(struct kv_db *db, char ***names, size_t *n);

/*
 * Salvage a damaged database in dir (which must not be open: it is locked
 * as for writing) into one that opens, keeping everything that can be read:
 * tables whose blocks verify, the blocks that verify of damaged tables
 * (rewritten into new tables), log records up to the first damaged one, the
 * manifest's records up to the first damaged one (or, without a manifest,
 * the tables and logs found).  Nothing is deleted: what cannot be used is
 * moved into dir/lost/.  Every file changed, moved or dropped is reported
 * through report (may be NULL), one sentence each, with what was lost (the
 * number of entries or records and the key range, where known).  Returns 0
 * if the database then opens and kv_verify finds nothing, else the error.
 * opt (may be NULL) gives the environment and the settings of new tables.
 */
int kv_repair(const char *dir, const struct kv_options *opt,
	      void (*report)(void *arg, const char *msg), void *arg);

/* Remove every file of the database in dir (which must not be open). */
int kv_destroy(const char *dir, struct kv_env *env);

/*
 * A sentence describing err: the one recorded for it if err is what the
 * calling thread's last call of this API (or of table.h) failed with, else
 * strerror(-err).  Never a message left over from an earlier call or another
 * error.  The string is valid until the thread's next call.
 */
const char *kv_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
