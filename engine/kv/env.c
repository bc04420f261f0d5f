/*
 * env.c -- the POSIX environment: files through open/pread/write/fdatasync,
 * names through rename/unlink/fsync of the directory, and the database's
 * lock through fcntl.
 *
 * Tables are read through a read-only map of the whole file (map), so a
 * block read is a pointer, not a pread(2) and a copy.  Whoever reads or
 * writes a map does it under a guard (mapguard.h), so a page the kernel
 * cannot provide, because the file was cut short under the database or a
 * sector is unreadable, is an -EIO and not a SIGBUS.
 *
 * Log files (open_log) are written through a shared memory map instead of
 * write(2) when the appends are small (under LOG_DIRECT_MIN): an append is
 * a memcpy into the page cache, which is all a write(2) without fsync
 * achieves too (the bytes survive the process being killed, not a power
 * cut), without a system call per record.  Larger appends go through
 * pwrite(2) (log_append says why).  Either way the space ahead is reserved
 * with fallocate(2), so a full disk is an -ENOSPC from the append that
 * needs the space (which then writes nothing), never a SIGBUS from a store
 * into a page with no block behind it nor part of a record written.  The
 * file is cut back to the bytes appended when it is closed; a process
 * killed before that leaves the reserved tail as zeros, which a log reader
 * takes for the torn tail of an unfinished write (wal.h).  Where fallocate
 * is not supported every append goes through pwrite(2).  A helper thread
 * faults the window's pages in ahead of the appends, maps the next window
 * before the appends reach it and unmaps full windows, so none of these
 * costs falls on the writer (log_populate, log_prepare).
 *
 * fcntl locks belong to a process, so a second lock of the same file from
 * the same process would silently succeed; a process-wide table of locked
 * (device, inode) pairs catches that case too, and both give -EBUSY.  A
 * read-only open takes a shared (read) lock: any number of them at once,
 * in this process or others, but none beside a writer's exclusive one.
 */
#include "env.h"
#include "mapguard.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* The window of a log file's map grows with the file between these sizes. */
#define LOG_WINDOW_MIN ((size_t)64 << 10)
#define LOG_WINDOW_MAX ((size_t)4 << 20)
/* The helper unmaps a window this much at a time, between its other jobs. */
#define LOG_UNMAP_STEP ((size_t)512 << 10)
/* The pages of a log's window are faulted in this far ahead of the appends (log_populate). */
#define LOG_POPULATE_STEP ((size_t)512 << 10)
/*
 * Appends at least this large go through pwrite(2) (log_append says why).
 * A put of a 1000-byte value makes a record of about 1,040 bytes.
 */
#define LOG_DIRECT_MIN ((size_t)1 << 10)

struct posix_file {
	struct env_file base;
	int fd;
	struct lock_entry *lock;   /* lock handles only (fd is -1) */
	char *path;
	/* log files (opened with open_log) */
	int is_log;
	int no_map;         /* no map to be had: pwrite at size instead */
	int no_reserve;     /* no fallocate here: pwrite at size, nothing reserved */
	uint64_t ahead_retry;  /* a window ahead failed: try again once size is here */
	int reserved;       /* space was reserved past size: cut it at close */
	uint64_t reserved_end;  /* blocks are reserved for [0, reserved_end) */
	char *map;          /* a log's window (NULL before the first append), or a read map */
	size_t map_len;
	uint64_t map_off;   /* file offset of the window; page aligned */
	uint64_t populated_end;  /* the window's pages are faulted in (or asked to be) up to here */
	/*
	 * The next window, mapped by the helper before the appends reach the
	 * end of this one (log_prepare).  The writer sets next_asked and the
	 * three below it before giving the job; next_done and next_map are
	 * the helper's (helper.mu).
	 */
	int next_asked;
	uint64_t next_off;       /* page aligned: where the window before it ends, rounded down */
	size_t next_len;
	size_t next_populate;    /* bytes at its start to fault in once mapped */
	uint64_t next_tried;     /* a window ending here asked for its next (or could not) */
	int next_done;
	char *next_map;          /* once next_done: the window, or NULL if it could not be mapped */
	int synced;              /* a log was synced (log_populate) ... */
	uint64_t synced_at;      /* ... last at this size */
	int jobs;           /* the log helper's jobs for this file not yet done (helper.mu) */
	uint64_t size;      /* bytes appended: the file's length once closed */
};

static int err_path(int err, const char *what, const char *path)
{
	return ERR_SET(-err, "%s %s: %s", what, path, strerror(err));
}

static struct posix_file *pf_new(struct kv_env *env, int fd, const char *path)
{
	struct posix_file *f = xcalloc(1, sizeof(*f));

	f->base.env = env;
	f->fd = fd;
	f->path = xstrdup(path);
	return f;
}

static int posix_open_read(struct kv_env *env, const char *path, struct env_file **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return err_path(errno, "open", path);
	*out = &pf_new(env, fd, path)->base;
	return 0;
}

static int posix_open_append(struct kv_env *env, const char *path, struct env_file **out)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	*out = NULL;
	if (fd < 0)
		return err_path(errno, "create", path);
	*out = &pf_new(env, fd, path)->base;
	return 0;
}

static int posix_pread(struct env_file *ef, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct posix_file *f = (struct posix_file *)ef;
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			*got = done;
			return err_path(errno, "read", f->path);
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

static int log_append(struct posix_file *f, const char *p, size_t n);

static int posix_append(struct env_file *ef, const void *buf, size_t n)
{
	struct posix_file *f = (struct posix_file *)ef;
	const char *p = buf;

	if (f->is_log)
		return log_append(f, p, n);

	while (n > 0) {
		ssize_t r = write(f->fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_path(errno, "write", f->path);
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int posix_sync(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;

	/* a shared map's dirty pages are the file's page cache: fdatasync covers them */
	if (fdatasync(f->fd) < 0)
		return err_path(errno, "fdatasync", f->path);
	if (f->is_log) {
		f->synced = 1;
		f->synced_at = f->size;
	}
	return 0;
}

static int posix_open_log(struct kv_env *env, const char *path, struct env_file **out)
{
	/* read and write: a shared writable map needs both */
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	struct posix_file *f;

	*out = NULL;
	if (fd < 0)
		return err_path(errno, "create", path);
	f = pf_new(env, fd, path);
	f->is_log = 1;
	*out = &f->base;
	return 0;
}

/*
 * The log helper: one thread per process that does, for the threads
 * appending to logs, the two slow things about a map window, off their
 * path: faulting in the pages ahead of the appends (log_populate) and
 * unmapping a window that is full (an munmap of 4 MiB of written pages took
 * 3.4 ms on average and 22 ms at worst on this project's test VMs, in the
 * middle of a put).  Jobs a writer may soon wait for (populating, mapping
 * the next window) come first, in the order given; unmaps only when none
 * of those is queued, and LOG_UNMAP_STEP at a time, so a writer that finds
 * its next window not mapped yet waits for at most one such step.  A
 * window's populate is given before its unmap, so it is always done
 * first.  A log's close waits for its file's jobs, so no map of a closed
 * log is left behind.
 */
enum helper_kind { JOB_POPULATE, JOB_UNMAP, JOB_PREPARE };

struct helper_job {
	struct helper_job *next;
	enum helper_kind kind;
	struct posix_file *f;
	char *addr;
	size_t len;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	struct helper_job *head, *tail;   /* populates and next windows, in order */
	struct helper_job *lazy, *lazy_tail;   /* unmaps, once the queue above is empty */
	struct helper_job *running;   /* the job being done, out of the queues */
	int started;                  /* 1: the thread runs; -1: it could not start */
} helper = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
	     NULL, NULL, NULL, NULL, NULL, 0 };

/* 0 once the kernel said it does not know MADV_POPULATE_WRITE (before 5.14). */
static int populate_known = 1;

static char *prepare_window(struct posix_file *f);
static void populate(char *addr, size_t len);

/* Do job j; a prepared window's map goes in j->addr (NULL if there is none). */
static void helper_run(struct helper_job *j)
{
	if (j->kind == JOB_UNMAP)
		munmap(j->addr, j->len);
	else if (j->kind == JOB_PREPARE)
		j->addr = prepare_window(j->f);
	else
		populate(j->addr, j->len);
}

/* Account for job j, done or dropped, and free it.  REQUIRES: helper.mu. */
static void helper_done(struct helper_job *j)
{
	if (j->kind == JOB_PREPARE) {
		j->f->next_map = j->addr;
		j->f->next_done = 1;
	}
	if (j->f)
		j->f->jobs--;
	free(j);
}

/*
 * Map f's next window (JOB_PREPARE) and fault in its first pages, so that
 * the append that leaves the current window finds the next one ready: the
 * writer's own mmap could wait ~1 ms for the helper's populate of the old
 * window (both need the process's map lock), and its first stores into
 * fresh pages faulted while the helper unmapped the old window (a put took
 * 1.1-1.7 ms at every 4 MiB window of 1 KiB appends on this project's test
 * VMs, when appends of that size still went through the map).  The
 * window's space was reserved by the writer before it asked.
 */
static char *prepare_window(struct posix_file *f)
{
	void *p = mmap(NULL, f->next_len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
		       (off_t)f->next_off);

	if (p == MAP_FAILED)
		return NULL;
	if (f->next_populate)
		populate(p, f->next_populate);
	return p;
}

/* Fault in [addr, addr + len) of a log's map and touch each page; see below. */
static void populate(char *addr, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	struct mapguard g;
	long page = sysconf(_SC_PAGESIZE);

	/*
	 * Populating fails (it never raises a signal) for pages past the end
	 * of a file cut short under the database or that the file system
	 * cannot back: the appends' stores then fault there themselves, under
	 * their guard, and report it.
	 */
	if (madvise(addr, len, MADV_POPULATE_WRITE) < 0) {
		if (errno == EINVAL)
			__atomic_store_n(&populate_known, 0, __ATOMIC_RELAXED);
		return;
	}
	/*
	 * Then a load from each page.  Under a hypervisor that shadows the
	 * guest's page tables (this project's test VMs), the first access from
	 * user space to a page costs a trap to the hypervisor even after the
	 * kernel has mapped it: 1 KiB stores into pages populated but never
	 * touched took 2 us each, into touched ones 0.2-0.5 us.  A load, and
	 * from any thread of the process, is enough.  Guarded: the file may
	 * have been cut short since.
	 */
	mapguard_arm(&g, addr, len);
	if (sigsetjmp(g.jb, 0))
		return;
	for (size_t off = 0; off < len; off += (size_t)page)
		(void)*(volatile const char *)(addr + off);
	mapguard_leave(&g);
#else
	(void)addr;
	(void)len;
#endif
}

/* The next job to do, out of its queue, or NULL if none.  REQUIRES: helper.mu. */
static struct helper_job *helper_next(void)
{
	struct helper_job *j;

	if ((j = helper.head)) {
		helper.head = j->next;
		if (!helper.head)
			helper.tail = NULL;
	} else if ((j = helper.lazy)) {
		helper.lazy = j->next;
		if (!helper.lazy)
			helper.lazy_tail = NULL;
	}
	if (j)
		j->next = NULL;
	return j;
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kv-logmap");
	pthread_mutex_lock(&helper.mu);
	for (;;) {
		struct helper_job *j = helper_next();

		if (!j) {
			pthread_cond_wait(&helper.work_cv, &helper.mu);
			continue;
		}
		helper.running = j;
		pthread_mutex_unlock(&helper.mu);
		if (j->kind == JOB_UNMAP && j->len > LOG_UNMAP_STEP) {
			/* one step; the rest goes back to the front of the unmaps */
			munmap(j->addr, LOG_UNMAP_STEP);
			pthread_mutex_lock(&helper.mu);
			helper.running = NULL;
			j->addr += LOG_UNMAP_STEP;
			j->len -= LOG_UNMAP_STEP;
			j->next = helper.lazy;
			helper.lazy = j;
			if (!helper.lazy_tail)
				helper.lazy_tail = j;
			continue;
		}
		helper_run(j);
		pthread_mutex_lock(&helper.mu);
		helper.running = NULL;
		helper_done(j);
		pthread_cond_broadcast(&helper.done_cv);
	}
	return NULL;
}

/*
 * A fork copies the queues but not the thread.  The child does the jobs it
 * was left itself (the maps are its own copies; a populate cut short in
 * the parent is only a populate) and starts its own thread when it needs
 * one, so a child that goes on writing a log never waits for a thread
 * that is not there.
 */
static void helper_prepare(void)
{
	pthread_mutex_lock(&helper.mu);
}

static void helper_parent(void)
{
	pthread_mutex_unlock(&helper.mu);
}

static void helper_child(void)
{
	struct helper_job *j = helper.running;

	/* the parent's helper may have been waiting on them: in the child no one is */
	pthread_cond_init(&helper.work_cv, NULL);
	pthread_cond_init(&helper.done_cv, NULL);
	helper.running = NULL;
	helper.started = 0;
	/*
	 * The job the helper was doing is not done again: an unmap may have
	 * been done already and its addresses given to another map since.
	 * At worst the child keeps a window mapped, or a populate undone, or
	 * has no next window prepared (it maps one itself when it needs it).
	 */
	if (j) {
		if (j->kind == JOB_PREPARE)
			j->addr = NULL;
		helper_done(j);
	}
	while ((j = helper_next())) {
		helper_run(j);
		helper_done(j);
	}
	pthread_mutex_unlock(&helper.mu);
}

static pthread_once_t helper_atfork_once = PTHREAD_ONCE_INIT;

static void helper_atfork(void)
{
	pthread_atfork(helper_prepare, helper_parent, helper_child);
}

/*
 * Give the helper a job (f: the file whose close waits for it, or NULL).
 * Where no thread can be started, the job is done here and now.
 */
static void helper_give(enum helper_kind kind, struct posix_file *f, char *addr, size_t len)
{
	struct helper_job *j = xcalloc(1, sizeof(*j));

	j->kind = kind;
	j->f = f;
	j->addr = addr;
	j->len = len;
	/* registered before the lock is taken: a fork meanwhile must not find it held */
	pthread_once(&helper_atfork_once, helper_atfork);
	pthread_mutex_lock(&helper.mu);
	if (!helper.started) {
		pthread_t t;

		helper.started = helper_thread_create(&t, 1, helper_main, NULL) == 0 ? 1 : -1;
	}
	if (f)
		f->jobs++;
	if (helper.started < 0) {
		pthread_mutex_unlock(&helper.mu);
		helper_run(j);
		pthread_mutex_lock(&helper.mu);
		helper_done(j);
		pthread_mutex_unlock(&helper.mu);
		return;
	}
	if (kind == JOB_UNMAP) {
		if (helper.lazy_tail)
			helper.lazy_tail->next = j;
		else
			helper.lazy = j;
		helper.lazy_tail = j;
	} else {
		if (helper.tail)
			helper.tail->next = j;
		else
			helper.head = j;
		helper.tail = j;
	}
	pthread_cond_signal(&helper.work_cv);
	pthread_mutex_unlock(&helper.mu);
}

/* Until the helper has done every job given for f. */
static void helper_wait(struct posix_file *f)
{
	pthread_mutex_lock(&helper.mu);
	while (f->jobs)
		pthread_cond_wait(&helper.done_cv, &helper.mu);
	pthread_mutex_unlock(&helper.mu);
}

/*
 * The next window f asked the helper for, once the helper has mapped it
 * (NULL if it could not); none is asked for any more.
 */
static char *log_take_next(struct posix_file *f)
{
	char *p;

	if (!f->next_asked)
		return NULL;
	pthread_mutex_lock(&helper.mu);
	while (!f->next_done)
		pthread_cond_wait(&helper.done_cv, &helper.mu);
	p = f->next_map;
	f->next_map = NULL;
	f->next_done = 0;
	f->next_asked = 0;
	pthread_mutex_unlock(&helper.mu);
	return p;
}

/*
 * The map goes: a log's windows (the next one too, if one was prepared)
 * through the helper, after any populate of them still queued; a table's
 * read map at once.
 */
static void log_unmap(struct posix_file *f)
{
	char *next = log_take_next(f);

	if (next)
		helper_give(JOB_UNMAP, f, next, f->next_len);
	if (f->map && f->is_log)
		helper_give(JOB_UNMAP, f, f->map, f->map_len);
	else if (f->map)
		munmap(f->map, f->map_len);
	f->map = NULL;
	f->map_len = 0;
}

/*
 * Reserve blocks for [from, end) of a log (from <= f->size), extending the
 * file to end; 0 or -1 with errno.  A failed fallocate may leave behind
 * the blocks and the length it got (ext4 does): the file is cut back to
 * what it held, so that a log never keeps free space it failed to reserve
 * from the flush or compaction that would give space back, and close cuts
 * it to its records in any case.
 */
static int log_fallocate(struct posix_file *f, uint64_t from, uint64_t end)
{
	int e;

	if (fallocate(f->fd, 0, (off_t)from, (off_t)(end - from)) == 0) {
		f->reserved = 1;
		if (end > f->reserved_end)
			f->reserved_end = end;
		return 0;
	}
	e = errno;
	if (e != EOPNOTSUPP && e != ENOSYS) {
		uint64_t keep = f->size > f->reserved_end ? f->size : f->reserved_end;

		if (ftruncate(f->fd, (off_t)keep) == 0)
			f->reserved = 1;
	}
	errno = e;
	return -1;
}

/*
 * Make sure the file has blocks for [f->size, end), so stores through the
 * map below end cannot fault for want of space.  Returns 0, a negative
 * errno (-ENOSPC: nothing was written, the append fails whole), or 1 if
 * this file system cannot reserve space (the caller then writes without a
 * map).
 */
static int log_reserve(struct posix_file *f, uint64_t end)
{
	if (end <= f->reserved_end)
		return 0;
	if (log_fallocate(f, f->size, end) < 0) {
		if (errno == EOPNOTSUPP || errno == ENOSYS)
			return 1;
		return err_path(errno, "fallocate", f->path);
	}
	return 0;
}

/* The length of a window that begins at offset off: it grows with the file. */
static size_t log_window_len(uint64_t off)
{
	return off < LOG_WINDOW_MIN ? LOG_WINDOW_MIN
	       : off > LOG_WINDOW_MAX ? LOG_WINDOW_MAX : (size_t)off;
}

/*
 * Map a fresh window over the space from f->size on, reserving all of it
 * if the disk allows (else only what log_reserve reserved is ever stored
 * into).
 */
static int log_remap(struct posix_file *f)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off = f->size - f->size % (uint64_t)page;
	size_t len = log_window_len(f->size);
	char *next = log_take_next(f);
	void *p;

	log_unmap(f);
	if (next && f->next_off == off) {
		/* prepared: its space was reserved before it was asked for */
		f->map = next;
		f->map_len = f->next_len;
		f->map_off = off;
		f->populated_end = off + f->next_populate;
		return 0;
	}
	if (next)
		helper_give(JOB_UNMAP, f, next, f->next_len);
	/* a store that faults must be an error, not the end of the process */
	if (mapguard_install() < 0)
		return ERR_SET(-EOPNOTSUPP, "%s: no SIGBUS handler, so no map", f->path);
	if (off + len > f->reserved_end)
		(void)log_fallocate(f, off, off + len);   /* else: what log_reserve reserved */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, (off_t)off);
	if (p == MAP_FAILED)
		return err_path(errno, "mmap", f->path);
	f->map = p;
	f->map_len = len;
	f->map_off = off;
	f->populated_end = off;
	return 0;
}

/*
 * Keep the window's pages faulted in at least LOG_POPULATE_STEP past the
 * appends: when fewer are left, the helper faults in the next pages with
 * one madvise(MADV_POPULATE_WRITE) and touches each (helper_run).  On this
 * project's test VMs, 1 KiB appends through the map took 3.4-4.3 us each
 * where the storing thread took the faults, 0.2-0.5 us into pages
 * populated and touched beforehand (tools' loops of 64 MiB of appends); a
 * 1 KiB put with its log append and memtable insert went from 9-15 us to
 * 6-7 us (appends of 1 KiB have gone through pwrite since: log_append).
 * The pages hold zeros until appended to, like the reserved blocks
 * behind them.  A populate that fails or comes late just leaves the faults
 * to the stores (which are guarded): it is an optimization, never an error.
 */
static int recently_synced(const struct posix_file *f)
{
	return f->synced && f->size - f->synced_at < 2 * LOG_POPULATE_STEP;
}

static void log_populate(struct posix_file *f)
{
#ifdef MADV_POPULATE_WRITE
	uint64_t end = f->map_off + f->map_len, from, to;
	long page;

	/* called after every append: the common case returns before any call */
	if (!__atomic_load_n(&populate_known, __ATOMIC_RELAXED) ||
	    f->populated_end >= end || f->populated_end >= f->size + LOG_POPULATE_STEP)
		return;
	/*
	 * Not for a log synced within the last two steps of appends: populated
	 * pages are dirty, so each fdatasync would write zeros ahead of the
	 * records and write-protect them again before the appends reach them.
	 */
	if (recently_synced(f))
		return;
	page = sysconf(_SC_PAGESIZE);
	from = f->size - f->size % (uint64_t)page;
	if (from < f->populated_end)
		from = f->populated_end;
	to = f->size + 2 * LOG_POPULATE_STEP;
	to -= to % (uint64_t)page;
	if (to > end)
		to = end;
	if (to > f->reserved_end)
		to = f->reserved_end - f->reserved_end % (uint64_t)page;
	if (to <= from)
		return;
	helper_give(JOB_POPULATE, f, f->map + (from - f->map_off), (size_t)(to - from));
	f->populated_end = to;
#else
	(void)f;
#endif
}

/*
 * Once the appends are half way through the window, reserve the space of
 * the next one and ask the helper to map it and fault in its first pages
 * (prepare_window).  Where the space cannot be reserved now, nothing is
 * asked: the appends reserve what they need themselves and fail if they
 * cannot.
 */
static void log_prepare(struct posix_file *f)
{
	uint64_t end = f->map_off + f->map_len, off;
	size_t len;

	if (!f->map || f->next_asked || f->next_tried == end || f->size < end - f->map_len / 2)
		return;
	f->next_tried = end;
	/* what log_remap maps when the appends reach end (a window may end mid-page) */
	off = end - end % (uint64_t)sysconf(_SC_PAGESIZE);
	len = log_window_len(end);
	if (off + len > f->reserved_end) {
		/* from the appends on, as log_reserve: reserved_end covers all below it */
		if (log_fallocate(f, f->size, off + len) < 0)
			return;
	}
	f->next_off = off;
	f->next_len = len;
	f->next_populate = 0;
	if (__atomic_load_n(&populate_known, __ATOMIC_RELAXED) && !recently_synced(f))
		f->next_populate = 2 * LOG_POPULATE_STEP < len ? 2 * LOG_POPULATE_STEP : len;
	f->next_asked = 1;
	helper_give(JOB_PREPARE, f, NULL, 0);
}

static int pwrite_all(struct posix_file *f, const char *p, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t r = pwrite(f->fd, p, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_path(errno, "write", f->path);
		}
		p += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Copy n bytes into a log's map in ascending address order.  A store into
 * the map can fault (a page touched for the first time, or one that
 * writeback write-protected again), and a SIGKILL pending then lands
 * there: what reaches the file must be a prefix of the append, as write(2)
 * leaves, so that a reader finds a torn tail, never a record whose first
 * bytes are missing while later ones are there.  memcpy promises no order
 * (glibc's stores the first bytes of a large copy last: a kill -9 test
 * caught it), so this copies with volatile stores, which the compiler may
 * neither reorder nor turn back into a memcpy call.
 */
static void copy_ascending(char *dst, const char *src, size_t n)
{
	volatile char *d = dst;

	for (; n > 0 && ((uintptr_t)d & 7); n--)
		*d++ = *src++;
	for (; n >= 8; n -= 8, d += 8, src += 8) {
		uint64_t w;

		memcpy(&w, src, 8);
		*(volatile uint64_t *)d = w;
	}
	for (; n > 0; n--)
		*d++ = *src++;
}

/*
 * Store k bytes at f->size through the map, under a guard: a store into a
 * page past the file's end (someone cut the log short under the database)
 * or one the file system cannot back is an -EIO, not a SIGBUS.
 */
static int log_store(struct posix_file *f, const char *p, size_t k)
{
	struct mapguard g;

	mapguard_arm(&g, f->map, f->map_len);
	if (sigsetjmp(g.jb, 0))
		return ERR_SET(-EIO, "write %s: storing into the log's map faulted at offset %llu "
				"(the file was cut short under the database, or the file system "
				"could not back the page)", f->path,
				(unsigned long long)(f->map_off +
						     (uint64_t)((const char *)g.fault - f->map)));
	copy_ascending(f->map + (f->size - f->map_off), p, k);
	mapguard_leave(&g);
	return 0;
}

/*
 * Reserve the space of an append of n bytes at f->size, with a window's
 * worth ahead when the disk has it, so that a full disk fails the append
 * whole (ENOSPC) and one fallocate serves many appends.  Where the window
 * could not be had, the appends reserve their own bytes only until they
 * have written a window's length.  Returns as log_reserve.
 */
static int log_reserve_ahead(struct posix_file *f, size_t n)
{
	uint64_t end = f->size + n, ahead = f->size + log_window_len(f->size);

	if (end <= f->reserved_end)
		return 0;
	if (ahead > end && f->size >= f->ahead_retry) {
		if (log_fallocate(f, f->size, ahead) == 0)
			return 0;
		if (errno == EOPNOTSUPP || errno == ENOSYS)
			return 1;
		f->ahead_retry = ahead;
	}
	return log_reserve(f, end);
}

/*
 * Small appends are stored through the map: no system call.  Appends of
 * LOG_DIRECT_MIN bytes or more go through pwrite(2) into space reserved
 * ahead, like the map's.  The system call costs the writer more than a
 * store into the map, but it saves the map's work around the stores: in a
 * profile of 1 KiB fillseq and overwrite through the map, the helper's
 * page population alone was a tenth of all samples, on a machine of 2
 * cores shared by the writer, the flush and the compaction.  Measured with
 * smolbench (1,000,000 puts of 1 KiB db_bench-style values, smolfs alone,
 * 6 runs alternating with a build that stored them through the map, on
 * this project's test VMs), medians: fillseq 209 K/s against 190,
 * overwrite 99 against 92, fillrandom 127 against 131 (slower); puts over
 * 1 ms 354 against 766 (fillseq), 2,896 against 3,823 (overwrite), 580
 * against 1,630 (fillrandom); over 10 ms 4 against 19, 12 against 26, 14
 * against 28.  A put's median went from 0.6-2.5 us to 2.7-5.5 us (the
 * system call).  With 400-byte values the map was 1.3-1.8 times faster,
 * with 100-byte values 2-3.5 times, so smaller appends stay with it.  The
 * map and pwrite share the page cache, so the two mix freely in one log.
 */
static int log_append(struct posix_file *f, const char *p, size_t n)
{
	int r;

	if (n == 0)
		return 0;
	r = f->no_reserve ? 0 : n >= LOG_DIRECT_MIN || f->no_map ? log_reserve_ahead(f, n)
			 : log_reserve(f, f->size + n);
	if (r == 1)   /* no reserving here: plain writes at f->size from now on */
		f->no_reserve = f->no_map = 1;
	else if (r < 0)
		return r;
	if (n >= LOG_DIRECT_MIN || f->no_map) {
		r = pwrite_all(f, p, n, f->size);
		if (r == 0)
			f->size += n;
		return r;
	}
	while (n > 0) {
		uint64_t end = f->map_off + f->map_len;
		size_t room, k;

		if (!f->map || f->size >= end) {
			r = log_remap(f);
			if (r < 0) {
				/*
				 * No map to be had (a file system that cannot map
				 * files, or no address space left): the rest of this
				 * log is written with pwrite, which shares the page
				 * cache with what the map stored before.
				 */
				f->no_map = 1;
				r = pwrite_all(f, p, n, f->size);
				if (r == 0)
					f->size += n;
				return r;
			}
			continue;
		}
		room = (size_t)(end - f->size);
		k = n < room ? n : room;
		if ((r = log_store(f, p, k)) < 0)
			return r;
		f->size += k;
		p += k;
		n -= k;
	}
	log_populate(f);
	log_prepare(f);
	return 0;
}

static int posix_map(struct env_file *ef, uint64_t size, const char **out)
{
	struct posix_file *f = (struct posix_file *)ef;
	struct stat st;
	void *p;

	*out = NULL;
	/* a 32-bit address space could not hold the maps of a thousand tables */
	if (sizeof(void *) < 8 || size > SIZE_MAX)
		return -EOPNOTSUPP;
	if (size == 0)
		return ERR_SET(-EINVAL, "%s: a map of 0 bytes", f->path);
	if (f->is_log)
		return ERR_SET(-EINVAL, "%s: a log is written through a map, not read through one",
				f->path);
	if (f->map) {
		if (size > f->map_len)
			return -EINVAL;
		*out = f->map;
		return 0;
	}
	/* a read of a page that is gone must be an error, not the end of the process */
	if (mapguard_install() < 0)
		return -EOPNOTSUPP;
	if (fstat(f->fd, &st) < 0)
		return err_path(errno, "stat", f->path);
	if ((uint64_t)st.st_size < size)
		return ERR_SET(-EINVAL, "%s is %llu bytes, shorter than the %llu to map", f->path,
				(unsigned long long)st.st_size, (unsigned long long)size);
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (p == MAP_FAILED)
		return err_path(errno, "mmap", f->path);
	f->map = p;
	f->map_len = (size_t)size;
	*out = p;
	return 0;
}

static int posix_close(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;
	int r = 0;

	log_unmap(f);
	helper_wait(f);
	if (f->reserved) {
		/* give back the space reserved past the last append */
		if (ftruncate(f->fd, (off_t)f->size) < 0)
			r = err_path(errno, "truncate", f->path);
	}
	if (close(f->fd) < 0 && errno != EINTR && r == 0)
		r = err_path(errno, "close", f->path);
	free(f->path);
	free(f);
	return r;
}

static int posix_file_size(struct kv_env *env, const char *path, uint64_t *size)
{
	struct stat st;

	(void)env;
	if (stat(path, &st) < 0)
		return err_path(errno, "stat", path);
	*size = (uint64_t)st.st_size;
	return 0;
}

static int posix_exists(struct kv_env *env, const char *path)
{
	(void)env;
	return access(path, F_OK) == 0;
}

static int posix_rename(struct kv_env *env, const char *from, const char *to)
{
	(void)env;
	if (rename(from, to) < 0)
		return ERR_SET(-errno, "rename %s to %s: %s", from, to, strerror(errno));
	return 0;
}

static int posix_unlink(struct kv_env *env, const char *path)
{
	(void)env;
	if (unlink(path) < 0)
		return err_path(errno, "unlink", path);
	return 0;
}

static int posix_truncate(struct kv_env *env, const char *path, uint64_t size)
{
	(void)env;
	if (truncate(path, (off_t)size) < 0)
		return err_path(errno, "truncate", path);
	return 0;
}

static int posix_mkdir(struct kv_env *env, const char *path)
{
	(void)env;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_path(errno, "mkdir", path);
	return 0;
}

static int posix_sync_dir(struct kv_env *env, const char *path)
{
	int fd, r = 0;

	(void)env;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_path(errno, "open directory", path);
	if (fsync(fd) < 0)
		r = err_path(errno, "fsync directory", path);
	close(fd);
	return r;
}

static int posix_free_space(struct kv_env *env, const char *path, uint64_t *bytes)
{
	struct statvfs st;

	(void)env;
	if (statvfs(path, &st) < 0)
		return err_path(errno, "statvfs", path);
	*bytes = (uint64_t)st.f_bavail * (uint64_t)st.f_frsize;
	return 0;
}

static int posix_list_dir(struct kv_env *env, const char *path, char ***names, size_t *n)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t cap = 16;

	(void)env;
	*names = NULL;
	*n = 0;
	if (!d)
		return err_path(errno, "opendir", path);
	*names = xmalloc(cap * sizeof(char *));
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap *= 2;
			*names = xrealloc(*names, cap * sizeof(char *));
		}
		(*names)[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	return 0;
}

/*
 * The locks this process holds, one entry per lock file (device, inode).
 * An exclusive entry has one handle; a shared entry counts its handles and
 * keeps one descriptor for all of them, because closing any descriptor of
 * the file would drop the process's fcntl lock for every other handle too.
 */
struct lock_entry {
	dev_t dev;
	ino_t ino;
	int fd;
	int shared;
	int refs;            /* handles (shared entries may have several) */
};

static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lock_entry **locks;
static size_t nlocks;

/* A handle on entry e: a posix_file without a descriptor of its own. */
static struct env_file *lock_handle(struct kv_env *env, struct lock_entry *e, const char *path)
{
	struct posix_file *f = pf_new(env, -1, path);

	f->lock = e;
	e->refs++;
	return &f->base;
}

/*
 * Take the lock file at path, exclusively (shared = 0: for a writer; the
 * file is created if missing) or shared (for a read-only open: the file is
 * opened read-only and must exist, -ENOENT if it does not).
 */
static int lock_file(struct kv_env *env, const char *path, int shared, struct env_file **out)
{
	struct flock fl = { .l_type = shared ? F_RDLCK : F_WRLCK, .l_whence = SEEK_SET };
	struct lock_entry *e;
	struct stat st;
	int fd = -1, r = 0;

	*out = NULL;
	pthread_mutex_lock(&locks_mu);
	/*
	 * Look in our own table before opening anything: closing any descriptor
	 * of a file drops every fcntl lock this process holds on it, so even a
	 * refused second open must not open and close the lock file.
	 */
	if (stat(path, &st) == 0) {
		for (size_t i = 0; i < nlocks; i++) {
			e = locks[i];
			if (e->dev != st.st_dev || e->ino != st.st_ino)
				continue;
			if (shared && e->shared) {
				*out = lock_handle(env, e, path);
				goto out;
			}
			r = ERR_SET(-EBUSY, "%s is locked: the database is already open%s in this "
				     "process", path, e->shared ? " read-only" : "");
			goto out;
		}
	}
	fd = shared ? open(path, O_RDONLY | O_CLOEXEC)
		    : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = err_path(errno, "open lock file", path);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		r = err_path(errno, "stat lock file", path);
		goto out;
	}
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		if (errno == EACCES || errno == EAGAIN)
			r = ERR_SET(-EBUSY, "%s is locked: another process has the database open%s",
				     path, shared ? " for writing" : "");
		else
			r = err_path(errno, "lock", path);
		goto out;
	}
	e = xcalloc(1, sizeof(*e));
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->fd = fd;
	e->shared = shared;
	locks = xrealloc(locks, (nlocks + 1) * sizeof(*locks));
	locks[nlocks++] = e;
	*out = lock_handle(env, e, path);
out:
	pthread_mutex_unlock(&locks_mu);
	if (r < 0 && fd >= 0)
		close(fd);
	return r;
}

static int posix_lock(struct kv_env *env, const char *path, struct env_file **out)
{
	return lock_file(env, path, 0, out);
}

static int posix_lock_shared(struct kv_env *env, const char *path, struct env_file **out)
{
	return lock_file(env, path, 1, out);
}

static int posix_unlock(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;
	struct lock_entry *e = f->lock;
	int r = 0;

	pthread_mutex_lock(&locks_mu);
	if (--e->refs == 0) {
		for (size_t i = 0; i < nlocks; i++) {
			if (locks[i] == e) {
				locks[i] = locks[--nlocks];
				break;
			}
		}
		/* closing the descriptor drops the fcntl lock */
		if (close(e->fd) < 0 && errno != EINTR)
			r = err_path(errno, "close", f->path);
		free(e);
	}
	pthread_mutex_unlock(&locks_mu);
	free(f->path);
	free(f);
	return r;
}

static void posix_destroy(struct kv_env *env)
{
	(void)env;  /* the POSIX environment is static */
}

static const struct env_ops posix_ops = {
	.open_read = posix_open_read,
	.open_append = posix_open_append,
	.open_log = posix_open_log,
	.pread = posix_pread,
	.append = posix_append,
	.map = posix_map,
	.sync = posix_sync,
	.close = posix_close,
	.file_size = posix_file_size,
	.exists = posix_exists,
	.rename = posix_rename,
	.unlink = posix_unlink,
	.truncate = posix_truncate,
	.mkdir = posix_mkdir,
	.sync_dir = posix_sync_dir,
	.free_space = posix_free_space,
	.list_dir = posix_list_dir,
	.lock = posix_lock,
	.lock_shared = posix_lock_shared,
	.unlock = posix_unlock,
	.destroy = posix_destroy,
};

static struct kv_env posix_env = { &posix_ops };

struct kv_env *env_posix(void)
{
	return &posix_env;
}

void env_free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int env_read_exact(struct env_file *f, void *buf, size_t n, uint64_t off)
{
	size_t got;
	int r = env_pread(f, buf, n, off, &got);

	if (r < 0)
		return r;
	if (got != n)
		return ERR_SET(-EIO, "short read: %zu of %zu bytes at offset %llu", got, n,
				(unsigned long long)off);
	return 0;
}

int env_read_file(struct kv_env *e, const char *path, char **data, size_t *len)
{
	struct env_file *f;
	uint64_t size;
	size_t got;
	int r;

	*data = NULL;
	*len = 0;
	r = env_file_size(e, path, &size);
	if (r < 0)
		return r;
	r = env_open_read(e, path, &f);
	if (r < 0)
		return r;
	*data = xmalloc((size_t)size + 1);
	r = env_pread(f, *data, (size_t)size, 0, &got);
	env_close(f);
	if (r < 0) {
		free(*data);
		*data = NULL;
		return r;
	}
	(*data)[got] = 0;
	*len = got;
	return 0;
}

int env_write_file(struct kv_env *e, const char *path, const void *data, size_t len, const char *dir)
{
	struct env_file *f;
	int r, rc;

	r = env_open_append(e, path, &f);
	if (r < 0)
		return r;
	r = env_append(f, data, len);
	if (r == 0)
		r = env_sync(f);
	rc = env_close(f);
	if (r == 0)
		r = rc;
	if (r == 0 && dir)
		r = env_sync_dir(e, dir);
	return r;
}
