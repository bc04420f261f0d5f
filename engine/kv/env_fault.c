/*
 * env_fault.c -- an environment that fails on purpose, for tests.
 *
 * It forwards every call to a base environment and can (1) fail chosen calls
 * with a chosen errno and (2) simulate a power cut.  For the second it keeps
 * what a disk would keep: for each file written through it, how many bytes
 * were synced; and for each directory, the name changes (creations, renames,
 * unlinks) made since the directory was last synced.  After the cut,
 * env_fault_drop_unsynced() makes the files look as the disk would after the
 * machine came back: unsynced bytes gone, unsynced creations gone, unsynced
 * renames and unlinks undone.  To be able to undo an unlink or a rename over
 * an existing file, those are done as renames to hidden backup names, which a
 * directory sync then deletes for real.
 *
 * A failed fsync of a file is remembered: the bytes it was to make durable
 * stay at the power cut's mercy even if a later fsync of the file succeeds,
 * as on Linux, where a writeback error is reported once and the pages are
 * then marked clean (a retried fsync returns 0 without writing them).
 */
#include "env.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>

/* The unit of a power cut's damage, and what becomes of one unsynced page. */
#define CUT_PAGE 4096
enum { FATE_KEEP, FATE_DROP, FATE_ZERO };

struct fault_file {
	struct env_file base;
	struct env_file *inner;
	struct fault_env *fe;
	char *path;            /* NULL for files opened for reading */
};

/* What the disk knows about one file written through this environment. */
struct fstate {
	char *path;
	uint64_t size, synced;
	uint64_t lost_lo, lost_hi; /* bytes a failed fsync was to keep: never durable */
	int tracked;           /* opened for append through us */
	struct fstate *next;
};

/* One name change not yet made durable by a directory sync. */
enum pending_kind { P_CREATE, P_RENAME, P_UNLINK };
struct pending {
	enum pending_kind kind;
	char *path;            /* created / unlinked path, or rename source */
	char *to;              /* rename destination */
	char *backup;          /* where the previous file at `to` (or the unlinked one) was kept */
	struct pending *next;  /* newest first */
};

struct fault_env {
	struct kv_env env;
	struct kv_env *base;
	pthread_mutex_t mu;
	struct fstate *files;
	struct pending *pending;
	unsigned long backups;
	/* injection */
	unsigned mask;
	long after, count;
	int err;
	char *match;
	long injected;         /* calls failed by the injection */
	/* power cut */
	long cut_after;        /* < 0: none scheduled */
	int cut;
	long write_calls;
	enum env_cut_model model;
	uint64_t rng;          /* the fates of unsynced pages */
	long pages[3];         /* pages kept, dropped, zeroed by the cuts so far */
	/* a small disk */
	int64_t space;         /* bytes left, or < 0: no limit */
	uint64_t appended;     /* bytes of every append that succeeded */
	/* held calls (env_fault_hold): they wait on hold_cv until released */
	unsigned hold_mask;
	char *hold_match;
	char *hold_threads;    /* NULL: calls of any thread are held */
	long held;             /* calls waiting now */
	long held_total;       /* calls that have waited */
	pthread_cond_t hold_cv;
};

/* A file's bytes go back to a limited disk.  REQUIRES fe->mu held. */
static void give_back(struct fault_env *fe, const struct fstate *s, uint64_t keep)
{
	if (fe->space >= 0 && s && s->size > keep)
		fe->space += (int64_t)(s->size - keep);
}

static struct fault_env *FE(struct kv_env *e)
{
	return (struct fault_env *)e;
}

static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!s)
		return xstrdup(".");
	if (s == path)
		return xstrdup("/");
	return xmemdup(path, (size_t)(s - path));
}

static struct fstate *fstate_find(struct fault_env *fe, const char *path)
{
	for (struct fstate *s = fe->files; s; s = s->next)
		if (!strcmp(s->path, path))
			return s;
	return NULL;
}

static struct fstate *fstate_get(struct fault_env *fe, const char *path)
{
	struct fstate *s = fstate_find(fe, path);

	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->path = xstrdup(path);
		s->next = fe->files;
		fe->files = s;
	}
	return s;
}

static void fstate_drop(struct fault_env *fe, const char *path)
{
	for (struct fstate **pp = &fe->files; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->path, path)) {
			struct fstate *s = *pp;
			*pp = s->next;
			free(s->path);
			free(s);
			return;
		}
	}
}

/*
 * Decide the fate of one call of kind op on path: 0 to go ahead, or the errno
 * to fail with.  REQUIRES fe->mu held.
 */
static int fault_check(struct fault_env *fe, unsigned op, int writes, const char *path)
{
	if (fe->cut)
		return -EIO;
	if (writes) {
		fe->write_calls++;
		if (fe->cut_after >= 0 && fe->cut_after-- == 0) {
			fe->cut = 1;
			return -EIO;
		}
	}
	if ((op & fe->mask) && (!fe->match || (path && strstr(path, fe->match)))) {
		if (fe->after > 0) {
			fe->after--;
		} else if (fe->count != 0) {
			if (fe->count > 0)
				fe->count--;
			fe->injected++;
			return fe->err;
		}
	}
	return 0;
}

static int fault_err(int err, const char *what, const char *path)
{
	return ERR_SET(err, "%s %s: %s (injected)", what, path ? path : "?", strerror(-err));
}

/* Whether s contains (exact: is) one of the '|'-separated parts of list; never if s is NULL. */
static int list_has(const char *list, const char *s, int exact)
{
	const char *m = list;

	while (s) {
		const char *bar = strchr(m, '|');
		size_t n = bar ? (size_t)(bar - m) : strlen(m);
		if (exact && strlen(s) == n && !strncmp(s, m, n))
			return 1;
		for (const char *p = s; !exact && *p; p++)
			if (!strncmp(p, m, n))
				return 1;
		if (!bar)
			break;
		m = bar + 1;
	}
	return 0;
}

/*
 * Whether a call of kind op on path, made by the calling thread, is held:
 * path contains one of the parts of hold_match, and the thread's name is one
 * of the parts of hold_threads (see env_fault_hold_in).
 */
static int held(struct fault_env *fe, unsigned op, const char *path)
{
	char name[16];   /* a Linux thread name has at most 15 bytes */

	if (!(op & fe->hold_mask))
		return 0;
	if (fe->hold_match && !list_has(fe->hold_match, path, 0))
		return 0;
	if (!fe->hold_threads)
		return 1;
	return pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
	       list_has(fe->hold_threads, name, 1);
}

/*
 * A call of kind op; it counts towards a power cut when it changes the disk.
 * A held one (env_fault_hold) first waits for its release.
 */
static int check(struct fault_env *fe, unsigned op, const char *what, const char *path)
{
	int r;

	pthread_mutex_lock(&fe->mu);
	if (held(fe, op, path)) {
		fe->held++;
		fe->held_total++;
		while (held(fe, op, path))
			pthread_cond_wait(&fe->hold_cv, &fe->mu);
		fe->held--;
	}
	r = fault_check(fe, op, (op & ENV_OP_WRITES) && strcmp(what, "open"), path);
	pthread_mutex_unlock(&fe->mu);
	return r ? fault_err(r, what, path) : 0;
}

static struct fault_file *ff_new(struct fault_env *fe, struct env_file *inner, const char *path)
{
	struct fault_file *f = xcalloc(1, sizeof(*f));

	f->base.env = &fe->env;
	f->inner = inner;
	f->fe = fe;
	f->path = path ? xstrdup(path) : NULL;
	return f;
}

static int f_open_read(struct kv_env *e, const char *path, struct env_file **out)
{
	struct fault_env *fe = FE(e);
	struct env_file *inner;
	int r;

	*out = NULL;
	if ((r = check(fe, ENV_OP_OPEN, "open", path)) < 0)
		return r;
	r = env_open_read(fe->base, path, &inner);
	if (r < 0)
		return r;
	/* the path is kept so that faults matching it hit its reads too */
	*out = &ff_new(fe, inner, path)->base;
	return 0;
}

static void add_pending(struct fault_env *fe, enum pending_kind k, const char *path, const char *to,
			char *backup)
{
	struct pending *p = xcalloc(1, sizeof(*p));

	p->kind = k;
	p->path = xstrdup(path);
	p->to = to ? xstrdup(to) : NULL;
	p->backup = backup;
	p->next = fe->pending;
	fe->pending = p;
}

/* A fresh hidden name next to path for keeping a file that may need restoring. */
static char *backup_name(struct fault_env *fe, const char *path)
{
	char *dir = dir_of(path);
	char *b = xasprintf("%s/.fault-backup-%lu", dir, ++fe->backups);

	free(dir);
	return b;
}

static int open_tracked(struct kv_env *e, const char *path, int log, struct env_file **out)
{
	struct fault_env *fe = FE(e);
	struct env_file *inner;
	struct fstate *s;
	int existed, r;

	*out = NULL;
	if ((r = check(fe, ENV_OP_OPEN, "create", path)) < 0)
		return r;
	existed = env_exists(fe->base, path);
	r = log ? env_open_log(fe->base, path, &inner) : env_open_append(fe->base, path, &inner);
	if (r < 0)
		return r;
	pthread_mutex_lock(&fe->mu);
	give_back(fe, fstate_find(fe, path), 0);   /* truncated */
	s = fstate_get(fe, path);
	s->tracked = 1;
	s->size = s->synced = 0;
	s->lost_lo = s->lost_hi = 0;
	if (!existed)
		add_pending(fe, P_CREATE, path, NULL, NULL);
	pthread_mutex_unlock(&fe->mu);
	*out = &ff_new(fe, inner, path)->base;
	return 0;
}

static int f_open_append(struct kv_env *e, const char *path, struct env_file **out)
{
	return open_tracked(e, path, 0, out);
}

/* A log is tracked like any appended file: only its synced bytes survive a power cut. */
static int f_open_log(struct kv_env *e, const char *path, struct env_file **out)
{
	return open_tracked(e, path, 1, out);
}

static int f_pread(struct env_file *ef, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct fault_file *f = (struct fault_file *)ef;
	int r;

	*got = 0;
	if ((r = check(f->fe, ENV_OP_READ, "read", f->path)) < 0)
		return r;
	return env_pread(f->inner, buf, n, off, got);
}

static int f_append(struct env_file *ef, const void *buf, size_t n)
{
	struct fault_file *f = (struct fault_file *)ef;
	struct fstate *s;
	int r;

	if ((r = check(f->fe, ENV_OP_APPEND, "write", f->path)) < 0)
		return r;
	pthread_mutex_lock(&f->fe->mu);
	if (f->fe->space >= 0 && (uint64_t)f->fe->space < n) {
		pthread_mutex_unlock(&f->fe->mu);
		return fault_err(-ENOSPC, "write", f->path);
	}
	if (f->fe->space >= 0)
		f->fe->space -= (int64_t)n;
	pthread_mutex_unlock(&f->fe->mu);
	r = env_append(f->inner, buf, n);
	pthread_mutex_lock(&f->fe->mu);
	if (r < 0 && f->fe->space >= 0)
		f->fe->space += (int64_t)n;
	s = f->path ? fstate_find(f->fe, f->path) : NULL;
	if (r == 0 && s)
		s->size += n;
	if (r == 0)
		f->fe->appended += n;
	pthread_mutex_unlock(&f->fe->mu);
	return r;
}

static int f_sync(struct env_file *ef)
{
	struct fault_file *f = (struct fault_file *)ef;
	struct fstate *s;
	int r;

	r = check(f->fe, ENV_OP_SYNC, "fdatasync", f->path);
	if (r == 0)
		r = env_sync(f->inner);
	pthread_mutex_lock(&f->fe->mu);
	s = f->path ? fstate_find(f->fe, f->path) : NULL;
	if (r < 0 && s && s->size > s->synced) {
		/* what this fsync was to keep is lost to any later fsync of the file */
		if (s->lost_hi <= s->lost_lo || s->synced < s->lost_lo)
			s->lost_lo = s->synced;
		if (s->size > s->lost_hi)
			s->lost_hi = s->size;
	}
	pthread_mutex_unlock(&f->fe->mu);
	if (r < 0)
		return r;
	pthread_mutex_lock(&f->fe->mu);
	s = f->path ? fstate_find(f->fe, f->path) : NULL;
	if (s)
		s->synced = s->size;
	pthread_mutex_unlock(&f->fe->mu);
	return 0;
}

static int f_close(struct env_file *ef)
{
	struct fault_file *f = (struct fault_file *)ef;
	int r = env_close(f->inner);

	free(f->path);
	free(f);
	return r;
}

static int f_file_size(struct kv_env *e, const char *path, uint64_t *size)
{
	int r = check(FE(e), ENV_OP_READ, "stat", path);

	return r < 0 ? r : env_file_size(FE(e)->base, path, size);
}

static int f_exists(struct kv_env *e, const char *path)
{
	return env_exists(FE(e)->base, path);
}

static int f_rename(struct kv_env *e, const char *from, const char *to)
{
	struct fault_env *fe = FE(e);
	char *backup = NULL;
	int r;

	if ((r = check(fe, ENV_OP_RENAME, "rename", from)) < 0)
		return r;
	pthread_mutex_lock(&fe->mu);
	if (env_exists(fe->base, to)) {
		backup = backup_name(fe, to);
		r = env_rename(fe->base, to, backup);
		if (r < 0)
			goto out;
	}
	r = env_rename(fe->base, from, to);
	if (r < 0) {
		if (backup)
			env_rename(fe->base, backup, to);
		goto out;
	}
	add_pending(fe, P_RENAME, from, to, backup);
	backup = NULL;
	fstate_drop(fe, to);
	struct fstate *s = fstate_find(fe, from);
	if (s) {
		free(s->path);
		s->path = xstrdup(to);
	}
out:
	pthread_mutex_unlock(&fe->mu);
	free(backup);
	return r;
}

static int f_unlink(struct kv_env *e, const char *path)
{
	struct fault_env *fe = FE(e);
	char *backup;
	int r;

	if ((r = check(fe, ENV_OP_UNLINK, "unlink", path)) < 0)
		return r;
	pthread_mutex_lock(&fe->mu);
	backup = backup_name(fe, path);
	r = env_rename(fe->base, path, backup);
	if (r == 0) {
		add_pending(fe, P_UNLINK, path, NULL, backup);
		/* keep the synced size of what may come back */
		struct fstate *s = fstate_find(fe, path);
		give_back(fe, s, 0);
		if (s) {
			free(s->path);
			s->path = xstrdup(backup);
		}
	} else {
		free(backup);
	}
	pthread_mutex_unlock(&fe->mu);
	return r;
}

static int f_truncate(struct kv_env *e, const char *path, uint64_t size)
{
	struct fault_env *fe = FE(e);
	int r;

	if ((r = check(fe, ENV_OP_APPEND, "truncate", path)) < 0)
		return r;
	r = env_truncate(fe->base, path, size);
	if (r == 0) {
		pthread_mutex_lock(&fe->mu);
		struct fstate *s = fstate_find(fe, path);
		give_back(fe, s, size);
		if (s) {
			if (s->size > size)
				s->size = size;
			if (s->synced > size)
				s->synced = size;
		}
		pthread_mutex_unlock(&fe->mu);
	}
	return r;
}

static int f_mkdir(struct kv_env *e, const char *path)
{
	int r = check(FE(e), ENV_OP_OPEN, "mkdir", path);

	return r < 0 ? r : env_mkdir(FE(e)->base, path);
}

static int same_dir(const char *path, const char *dir)
{
	char *d = dir_of(path);
	int same = !strcmp(d, dir);

	free(d);
	return same;
}

/* The directory's name changes are durable now: forget how to undo them. */
static int f_sync_dir(struct kv_env *e, const char *dir)
{
	struct fault_env *fe = FE(e);
	int r;

	if ((r = check(fe, ENV_OP_SYNC | ENV_OP_SYNC_DIR, "fsync directory", dir)) < 0)
		return r;
	r = env_sync_dir(fe->base, dir);
	if (r < 0)
		return r;
	pthread_mutex_lock(&fe->mu);
	for (struct pending **pp = &fe->pending; *pp;) {
		struct pending *p = *pp;
		if (!same_dir(p->kind == P_RENAME ? p->to : p->path, dir)) {
			pp = &p->next;
			continue;
		}
		if (p->backup) {
			env_unlink(fe->base, p->backup);
			fstate_drop(fe, p->backup);
		}
		*pp = p->next;
		free(p->path);
		free(p->to);
		free(p->backup);
		free(p);
	}
	pthread_mutex_unlock(&fe->mu);
	return 0;
}

static int f_free_space(struct kv_env *e, const char *path, uint64_t *bytes)
{
	struct fault_env *fe = FE(e);
	int64_t left;

	(void)path;
	pthread_mutex_lock(&fe->mu);
	left = fe->space;
	pthread_mutex_unlock(&fe->mu);
	if (left < 0)
		return -EOPNOTSUPP;   /* the base's disk is shared with others: not ours to report */
	*bytes = (uint64_t)left;
	return 0;
}

static int f_list_dir(struct kv_env *e, const char *path, char ***names, size_t *n)
{
	int r = check(FE(e), ENV_OP_READ, "opendir", path);
	size_t i, j;

	if (r < 0)
		return r;
	r = env_list_dir(FE(e)->base, path, names, n);
	if (r < 0)
		return r;
	/* hide our backups */
	for (i = j = 0; i < *n; i++) {
		if (!strncmp((*names)[i], ".fault-backup-", 14))
			free((*names)[i]);
		else
			(*names)[j++] = (*names)[i];
	}
	*n = j;
	return 0;
}

static int f_lock(struct kv_env *e, const char *path, struct env_file **out)
{
	struct fault_env *fe = FE(e);
	struct env_file *inner;
	int r;

	*out = NULL;
	if ((r = check(fe, 0, "lock", path)) < 0)
		return r;
	r = env_lock(fe->base, path, &inner);
	if (r < 0)
		return r;
	*out = &ff_new(fe, inner, NULL)->base;
	return 0;
}

static int f_lock_shared(struct kv_env *e, const char *path, struct env_file **out)
{
	struct fault_env *fe = FE(e);
	struct env_file *inner;
	int r;

	*out = NULL;
	if ((r = check(fe, 0, "lock", path)) < 0)
		return r;
	r = env_lock_shared(fe->base, path, &inner);
	if (r < 0)
		return r;
	*out = &ff_new(fe, inner, NULL)->base;
	return 0;
}

static int f_unlock(struct env_file *ef)
{
	struct fault_file *f = (struct fault_file *)ef;
	int r = env_unlock(f->inner);

	free(f->path);
	free(f);
	return r;
}

static void f_destroy(struct kv_env *e)
{
	env_fault_free(e);
}

static const struct env_ops fault_ops = {
	.open_read = f_open_read,
	.open_append = f_open_append,
	.open_log = f_open_log,
	.pread = f_pread,
	.append = f_append,
	.sync = f_sync,
	.close = f_close,
	.file_size = f_file_size,
	.exists = f_exists,
	.rename = f_rename,
	.unlink = f_unlink,
	.truncate = f_truncate,
	.mkdir = f_mkdir,
	.sync_dir = f_sync_dir,
	.free_space = f_free_space,
	.list_dir = f_list_dir,
	.lock = f_lock,
	.lock_shared = f_lock_shared,
	.unlock = f_unlock,
	.destroy = f_destroy,
};

struct kv_env *env_fault_new(struct kv_env *base)
{
	struct fault_env *fe = xcalloc(1, sizeof(*fe));

	fe->env.ops = &fault_ops;
	fe->base = base;
	pthread_mutex_init(&fe->mu, NULL);
	pthread_cond_init(&fe->hold_cv, NULL);
	fe->cut_after = -1;
	fe->model = ENV_CUT_PAGES;
	fe->rng = 0x5eed5eedull;
	fe->space = -1;
	return &fe->env;
}

void env_fault_set_space(struct kv_env *e, int64_t bytes)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->space = bytes < 0 ? -1 : bytes;
	pthread_mutex_unlock(&fe->mu);
}

uint64_t env_fault_bytes_written(struct kv_env *e)
{
	struct fault_env *fe = FE(e);
	uint64_t n;

	pthread_mutex_lock(&fe->mu);
	n = fe->appended;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

void env_fault_cut_model(struct kv_env *e, enum env_cut_model model, uint64_t seed)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->model = model;
	fe->rng = seed ? seed : 0x5eed5eedull;
	pthread_mutex_unlock(&fe->mu);
}

void env_fault_cut_pages(struct kv_env *e, long *kept, long *dropped, long *zeroed)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	*kept = fe->pages[FATE_KEEP];
	*dropped = fe->pages[FATE_DROP];
	*zeroed = fe->pages[FATE_ZERO];
	pthread_mutex_unlock(&fe->mu);
}

static void forget_all(struct fault_env *fe)
{
	while (fe->files) {
		struct fstate *s = fe->files;
		fe->files = s->next;
		free(s->path);
		free(s);
	}
	while (fe->pending) {
		struct pending *p = fe->pending;
		fe->pending = p->next;
		if (p->backup)
			env_unlink(fe->base, p->backup);
		free(p->path);
		free(p->to);
		free(p->backup);
		free(p);
	}
}

void env_fault_free(struct kv_env *e)
{
	struct fault_env *fe = FE(e);

	if (!e)
		return;
	forget_all(fe);
	free(fe->match);
	free(fe->hold_match);
	free(fe->hold_threads);
	pthread_cond_destroy(&fe->hold_cv);
	pthread_mutex_destroy(&fe->mu);
	free(fe);
}

void env_fault_inject(struct kv_env *e, unsigned ops_mask, long after, long count, int err,
		      const char *match)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->mask = ops_mask;
	fe->after = after;
	fe->count = count;
	fe->err = err;
	free(fe->match);
	fe->match = match ? xstrdup(match) : NULL;
	pthread_mutex_unlock(&fe->mu);
}

long env_fault_injected(struct kv_env *e)
{
	struct fault_env *fe = FE(e);
	long n;

	pthread_mutex_lock(&fe->mu);
	n = fe->injected;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

void env_fault_clear(struct kv_env *e)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->mask = 0;
	fe->count = 0;
	fe->cut_after = -1;
	fe->cut = 0;
	free(fe->match);
	fe->match = NULL;
	pthread_mutex_unlock(&fe->mu);
}

void env_fault_hold_in(struct kv_env *e, unsigned ops_mask, const char *match,
		       const char *threads)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->hold_mask = ops_mask;
	free(fe->hold_match);
	fe->hold_match = match ? xstrdup(match) : NULL;
	free(fe->hold_threads);
	fe->hold_threads = threads ? xstrdup(threads) : NULL;
	pthread_cond_broadcast(&fe->hold_cv);
	pthread_mutex_unlock(&fe->mu);
}

void env_fault_hold(struct kv_env *e, unsigned ops_mask, const char *match)
{
	env_fault_hold_in(e, ops_mask, match, NULL);
}

void env_fault_release(struct kv_env *e)
{
	env_fault_hold(e, 0, NULL);
}

long env_fault_held(struct kv_env *e, long *total)
{
	struct fault_env *fe = FE(e);
	long n;

	pthread_mutex_lock(&fe->mu);
	n = fe->held;
	if (total)
		*total = fe->held_total;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

void env_fault_power_cut_after(struct kv_env *e, long after)
{
	struct fault_env *fe = FE(e);

	pthread_mutex_lock(&fe->mu);
	fe->cut_after = after;
	if (after == 0) {
		fe->cut = 1;
		fe->cut_after = -1;
	}
	pthread_mutex_unlock(&fe->mu);
}

int env_fault_is_cut(struct kv_env *e)
{
	struct fault_env *fe = FE(e);
	int cut;

	pthread_mutex_lock(&fe->mu);
	cut = fe->cut;
	pthread_mutex_unlock(&fe->mu);
	return cut;
}

long env_fault_write_calls(struct kv_env *e)
{
	struct fault_env *fe = FE(e);
	long n;

	pthread_mutex_lock(&fe->mu);
	n = fe->write_calls;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

static int page_fate(struct fault_env *fe)
{
	switch (fe->model) {
	case ENV_CUT_DROP:
		return FATE_DROP;
	case ENV_CUT_KEEP:
		return FATE_KEEP;
	case ENV_CUT_ZERO:
		return FATE_ZERO;
	case ENV_CUT_PAGES:
		break;
	}
	/* half the pages reach the disk; the other half are lost either way */
	uint64_t x = rand_next(&fe->rng) % 4;
	return x < 2 ? FATE_KEEP : x == 2 ? FATE_DROP : FATE_ZERO;
}

/*
 * What a power cut leaves of one tracked file: its first s->synced bytes as
 * they are, then each page (aligned to the file's offsets) of the rest kept,
 * zeroed, or dropped; the file ends after the last page not dropped, and a
 * dropped page before that reads as zeros.  The part of the page holding
 * the synced end that lies past it is that page's unsynced part.  Bytes a
 * failed fsync was to keep (lost_lo to lost_hi) that a later fsync covered
 * are kept or zeroed page by page (a dropped one reads as zeros: the file
 * goes on after it).  Rewrites the file through the base environment.
 * REQUIRES fe->mu held.
 */
static int cut_file(struct fault_env *fe, const struct fstate *s)
{
	struct kv_env *b = fe->base;
	struct env_file *f;
	uint64_t end, keep_to;
	char *data;
	size_t len;
	int r, rc;

	r = env_read_file(b, s->path, &data, &len);
	if (r < 0)
		return r;
	if (len <= s->synced && !(s->lost_lo < s->lost_hi && s->lost_lo < s->synced)) {
		free(data);
		return 0;
	}
	for (uint64_t off = s->lost_lo; off < s->lost_hi && off < s->synced && off < len; off = end) {
		int fate = page_fate(fe);

		end = (off / CUT_PAGE + 1) * CUT_PAGE;
		if (end > s->lost_hi)
			end = s->lost_hi;
		if (end > s->synced)
			end = s->synced;
		if (end > len)
			end = len;
		fe->pages[fate]++;
		if (fate != FATE_KEEP)
			memset(data + off, 0, (size_t)(end - off));
	}
	keep_to = s->synced < len ? s->synced : len;
	for (uint64_t off = s->synced; off < len; off = end) {
		int fate = page_fate(fe);

		end = (off / CUT_PAGE + 1) * CUT_PAGE;
		if (end > len)
			end = len;
		fe->pages[fate]++;
		if (fate != FATE_KEEP)
			memset(data + off, 0, (size_t)(end - off));
		if (fate != FATE_DROP)
			keep_to = end;
	}
	r = env_open_append(b, s->path, &f);
	if (r == 0) {
		r = env_append(f, data, (size_t)keep_to);
		rc = env_close(f);
		if (r == 0)
			r = rc;
	}
	free(data);
	return r;
}

/*
 * Undo, newest first, every name change not made durable, then leave of
 * every tracked file what the cut model says its disk would hold.
 */
int env_fault_drop_unsynced(struct kv_env *e)
{
	struct fault_env *fe = FE(e);
	struct kv_env *b = fe->base;
	int r = 0;

	pthread_mutex_lock(&fe->mu);
	while (fe->pending) {
		struct pending *p = fe->pending;
		fe->pending = p->next;
		switch (p->kind) {
		case P_CREATE:
			if (env_exists(b, p->path))
				env_unlink(b, p->path);
			fstate_drop(fe, p->path);
			break;
		case P_RENAME:
			if (env_exists(b, p->to)) {
				env_rename(b, p->to, p->path);
				struct fstate *s = fstate_find(fe, p->to);
				if (s) {
					free(s->path);
					s->path = xstrdup(p->path);
				}
			}
			if (p->backup) {
				env_rename(b, p->backup, p->to);
				struct fstate *s = fstate_find(fe, p->backup);
				if (s) {
					free(s->path);
					s->path = xstrdup(p->to);
				}
			}
			break;
		case P_UNLINK:
			env_rename(b, p->backup, p->path);
			struct fstate *s = fstate_find(fe, p->backup);
			if (s) {
				free(s->path);
				s->path = xstrdup(p->path);
			}
			break;
		}
		free(p->path);
		free(p->to);
		free(p->backup);
		free(p);
	}
	for (struct fstate *s = fe->files; s; s = s->next) {
		if (s->tracked && env_exists(b, s->path)) {
			int rr = cut_file(fe, s);
			if (rr < 0 && r == 0)
				r = rr;
		}
	}
	forget_all(fe);
	fe->cut = 0;
	fe->cut_after = -1;
	fe->mask = 0;
	fe->count = 0;
	pthread_mutex_unlock(&fe->mu);
	return r;
}
