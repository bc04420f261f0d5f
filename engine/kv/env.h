/*
 * env.h -- the engine's only door to the operating system's files.
 *
 * Every open, read, append, fsync, rename, unlink and directory listing the
 * engine does goes through a struct kv_env, so tests can replace it.  Two
 * environments exist: the POSIX one (env.c) and a fault-injecting wrapper
 * around any other (env_fault.c) that can fail chosen calls with an errno and
 * simulate a power cut by keeping, dropping or zeroing each page not yet
 * fsynced.
 *
 * All functions return 0 or a negative errno, and on failure record a message
 * naming the path (kv_strerror).
 */
#ifndef SMOLFS_ENV_H
#define SMOLFS_ENV_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct kv_env;
struct env_file;   /* an open file: readable at any offset, or appendable */

struct env_ops {
	/* Open an existing file for positional reads. */
	int (*open_read)(struct kv_env *env, const char *path, struct env_file **f);
	/* Create (or truncate) a file for appending. */
	int (*open_append)(struct kv_env *env, const char *path, struct env_file **f);
	/*
	 * Optional (NULL: open_append does): create (or truncate) a file for a
	 * log, many small appends each of which must reach the operating system
	 * (survive the process being killed) as cheaply as possible.  Until it
	 * is closed such a file may be longer than what was appended, by a tail
	 * of zeros; after a crash that tail stays (a log reader sees the torn
	 * tail of an unfinished write).
	 */
	int (*open_log)(struct kv_env *env, const char *path, struct env_file **f);
	/* Read up to n bytes at off; *got < n only at end of file. */
	int (*pread)(struct env_file *f, void *buf, size_t n, uint64_t off, size_t *got);
	int (*append)(struct env_file *f, const void *buf, size_t n);
	/*
	 * Optional (NULL: not offered): a read-only view of the first size bytes
	 * of a file opened for reading, valid until the file is closed, so a
	 * reader of many small pieces of an immutable file (a table's blocks)
	 * needs no system call and no copy per piece.  Fails (and the caller
	 * reads with pread) if the file is shorter than size.  A read of the
	 * view past the file's end (it was made shorter while open) or of a
	 * page the disk cannot read raises SIGBUS: do it under a guard
	 * (mapguard.h), which the map's maker installed.
	 */
	int (*map)(struct env_file *f, uint64_t size, const char **p);
	int (*sync)(struct env_file *f);          /* data and size reach stable storage */
	int (*close)(struct env_file *f);         /* always frees f, even on error */
	int (*file_size)(struct kv_env *env, const char *path, uint64_t *size);
	int (*exists)(struct kv_env *env, const char *path);  /* 1, 0 */
	int (*rename)(struct kv_env *env, const char *from, const char *to);
	int (*unlink)(struct kv_env *env, const char *path);
	int (*truncate)(struct kv_env *env, const char *path, uint64_t size);
	int (*mkdir)(struct kv_env *env, const char *path);   /* 0 if it exists already */
	int (*sync_dir)(struct kv_env *env, const char *path); /* names in it reach stable storage */
	/*
	 * Optional (NULL: not known): the bytes an unprivileged writer may still
	 * write on the file system that holds path; -EOPNOTSUPP if not known.
	 */
	int (*free_space)(struct kv_env *env, const char *path, uint64_t *bytes);
	/* A malloc'd array of malloc'd names (no "." or ".."); free with env_free_list. */
	int (*list_dir)(struct kv_env *env, const char *path, char ***names, size_t *n);
	/* An exclusive lock held while *lock stays open; -EBUSY if someone holds it. */
	int (*lock)(struct kv_env *env, const char *path, struct env_file **lock);
	/*
	 * Optional (NULL: not offered): a shared lock for a read-only open, held
	 * while *lock stays open.  Never creates the file: -ENOENT if it does not
	 * exist.  -EBUSY while anyone holds the exclusive lock; the exclusive
	 * lock is -EBUSY while anyone holds a shared one.  Released with unlock.
	 */
	int (*lock_shared)(struct kv_env *env, const char *path, struct env_file **lock);
	int (*unlock)(struct env_file *lock);
	void (*destroy)(struct kv_env *env);
};

struct kv_env {
	const struct env_ops *ops;
};

/* The process-wide POSIX environment; never freed. */
struct kv_env *env_posix(void);

void env_free_list(char **names, size_t n);

/* Convenience wrappers, so callers read env_append(f, ...) and not ops tables. */
struct env_file {
	struct kv_env *env;   /* the environment that opened it */
};

static inline int env_open_read(struct kv_env *e, const char *p, struct env_file **f) { return e->ops->open_read(e, p, f); }
static inline int env_open_append(struct kv_env *e, const char *p, struct env_file **f) { return e->ops->open_append(e, p, f); }
static inline int env_open_log(struct kv_env *e, const char *p, struct env_file **f) { return e->ops->open_log ? e->ops->open_log(e, p, f) : e->ops->open_append(e, p, f); }
static inline int env_pread(struct env_file *f, void *b, size_t n, uint64_t off, size_t *got) { return f->env->ops->pread(f, b, n, off, got); }
static inline int env_append(struct env_file *f, const void *b, size_t n) { return f->env->ops->append(f, b, n); }
static inline int env_map(struct env_file *f, uint64_t size, const char **p) { return f->env->ops->map ? f->env->ops->map(f, size, p) : -EOPNOTSUPP; }
static inline int env_sync(struct env_file *f) { return f->env->ops->sync(f); }
static inline int env_close(struct env_file *f) { return f->env->ops->close(f); }
static inline int env_file_size(struct kv_env *e, const char *p, uint64_t *s) { return e->ops->file_size(e, p, s); }
static inline int env_exists(struct kv_env *e, const char *p) { return e->ops->exists(e, p); }
static inline int env_rename(struct kv_env *e, const char *a, const char *b) { return e->ops->rename(e, a, b); }
static inline int env_unlink(struct kv_env *e, const char *p) { return e->ops->unlink(e, p); }
static inline int env_truncate(struct kv_env *e, const char *p, uint64_t s) { return e->ops->truncate(e, p, s); }
static inline int env_mkdir(struct kv_env *e, const char *p) { return e->ops->mkdir(e, p); }
static inline int env_sync_dir(struct kv_env *e, const char *p) { return e->ops->sync_dir(e, p); }
static inline int env_free_space(struct kv_env *e, const char *p, uint64_t *b) { return e->ops->free_space ? e->ops->free_space(e, p, b) : -EOPNOTSUPP; }
static inline int env_list_dir(struct kv_env *e, const char *p, char ***n, size_t *c) { return e->ops->list_dir(e, p, n, c); }
static inline int env_lock(struct kv_env *e, const char *p, struct env_file **l) { return e->ops->lock(e, p, l); }
static inline int env_lock_shared(struct kv_env *e, const char *p, struct env_file **l) { return e->ops->lock_shared ? e->ops->lock_shared(e, p, l) : -EOPNOTSUPP; }
static inline int env_unlock(struct env_file *l) { return l->env->ops->unlock(l); }

/* Read exactly n bytes at off; -EUCLEAN-free: a short file gives -EIO via got. */
int env_read_exact(struct env_file *f, void *buf, size_t n, uint64_t off);
/* Read a whole (small) file into a malloc'd buffer. */
int env_read_file(struct kv_env *e, const char *path, char **data, size_t *len);
/* Write a whole file, fsync it, and (if dir != NULL) fsync the directory. */
int env_write_file(struct kv_env *e, const char *path, const void *data, size_t len, const char *dir);

/* ------------------------------------------------------------ fault injection */

/* Operations a fault can target (bit mask). */
enum env_fault_op {
	ENV_OP_OPEN   = 1 << 0,   /* open_read, open_append, mkdir (only the last two are writes) */
	ENV_OP_READ   = 1 << 1,   /* pread, file_size, list_dir */
	ENV_OP_APPEND = 1 << 2,   /* append, truncate */
	ENV_OP_SYNC   = 1 << 3,   /* sync and sync_dir */
	ENV_OP_RENAME = 1 << 4,
	ENV_OP_UNLINK = 1 << 5,
	ENV_OP_SYNC_DIR = 1 << 6, /* sync_dir alone (ENV_OP_SYNC covers it too) */
	ENV_OP_WRITES = ENV_OP_OPEN | ENV_OP_APPEND | ENV_OP_SYNC | ENV_OP_RENAME | ENV_OP_UNLINK |
			ENV_OP_SYNC_DIR,
	ENV_OP_ALL    = 0xff,
};

/*
 * A fault-injecting wrapper around base (which it does not own).  It keeps,
 * for every file opened for appending through it, how many bytes were synced,
 * and remembers which names were created, renamed or removed since their
 * directory was last synced.
 */
struct kv_env *env_fault_new(struct kv_env *base);
void env_fault_free(struct kv_env *env);

/*
 * Fail the next calls of the kinds in ops_mask with err: the first `after`
 * matching calls succeed, then `count` fail (count < 0: all from then on).
 * Only calls whose path contains `match` count (NULL: every path).
 */
void env_fault_inject(struct kv_env *env, unsigned ops_mask, long after, long count, int err,
		      const char *match);
/* How many calls the injection has failed so far (power cuts not counted). */
long env_fault_injected(struct kv_env *env);
/* Stop injecting (the counters of a power cut are reset too). */
void env_fault_clear(struct kv_env *env);

/*
 * Hold the calls of the kinds in ops_mask whose path contains match, or one
 * of its parts separated by '|' (NULL: every path): each waits, before it
 * does anything, until the hold is changed so that it no longer matches, or
 * released.  For tests that show who waits for an fsync or an unlink.
 * ENV_OP_SYNC holds file and directory syncs, ENV_OP_SYNC_DIR directory
 * syncs alone.
 */
void env_fault_hold(struct kv_env *env, unsigned ops_mask, const char *match);
/*
 * The same, holding only the calls made by the threads whose name (as set
 * by pthread_setname_np) is threads or one of its '|'-separated parts (NULL:
 * any thread).  The engine names its background threads kv-flush,
 * kv-compact and kv-log (DB_THREAD_* in db.h), so a test can stop one of them where it
 * chooses while the others, which do the same kinds of calls on the same
 * kinds of files, go on.
 */
void env_fault_hold_in(struct kv_env *env, unsigned ops_mask, const char *match,
		       const char *threads);
void env_fault_release(struct kv_env *env);
/* How many calls are held now; *total (if not NULL): how many have been held in all. */
long env_fault_held(struct kv_env *env, long *total);
/*
 * Power cut after `after` more write-kind calls (append, sync, rename, unlink,
 * open for append): from then on every call fails with -EIO, as on a machine
 * that has lost power.  after = 0 cuts at once.
 */
void env_fault_power_cut_after(struct kv_env *env, long after);
/* 1 once the power cut has happened. */
int env_fault_is_cut(struct kv_env *env);
/*
 * What becomes of the bytes of a file written after its last sync, when the
 * power goes, 4 KiB page by page: all dropped (the file ends at its synced
 * size), all kept, all zeroed, or (the default) each page independently
 * kept, dropped or zeroed, chosen by a PRNG seeded with seed (0: a fixed
 * seed).  A dropped page followed by one not dropped reads as zeros.
 */
enum env_cut_model { ENV_CUT_PAGES, ENV_CUT_DROP, ENV_CUT_KEEP, ENV_CUT_ZERO };
void env_fault_cut_model(struct kv_env *env, enum env_cut_model model, uint64_t seed);
/*
 * What the disk holds after the power cut: every file's synced bytes, and
 * its unsynced pages as the cut model chooses; files whose creation was
 * never made durable by a directory sync removed, and renames and unlinks
 * not followed by a directory sync undone.  Then the environment works
 * again.  Call it with no file still open through it (close the database
 * first).
 */
int env_fault_drop_unsynced(struct kv_env *env);
/* How many unsynced pages the cuts so far kept, dropped and zeroed. */
void env_fault_cut_pages(struct kv_env *env, long *kept, long *dropped, long *zeroed);
/* Counts of calls seen, for tests that choose cut points (write-kind calls). */
long env_fault_write_calls(struct kv_env *env);
/*
 * A disk with bytes left (< 0: no limit, the default): an append that does
 * not fit fails with ENOSPC and writes nothing; unlinking or truncating a
 * file written through this environment gives its bytes back; free_space
 * reports what is left (without a limit it is not known: -EOPNOTSUPP).
 */
void env_fault_set_space(struct kv_env *env, int64_t bytes);
/* The bytes of every append that succeeded so far. */
uint64_t env_fault_bytes_written(struct kv_env *env);

#endif
