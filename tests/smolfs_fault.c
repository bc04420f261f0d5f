/*
 * smolfs_fault.c -- the test build of the daemon: smolfs (the files of fs/ compiled
 * again with -DSMOLFS_FAULT_HOOK) on the engine's fault-injecting
 * environment, steered at run time by the test script that mounted it.
 * Built by `make check` as tests/smolfs_fault, never installed.
 *
 * Before the database opens, main() calls smolfs_test_env() here, which
 * puts a fault environment (around the POSIX one) in the engine's options
 * and starts a thread that reads commands, one a line, from the FIFO named
 * by SMOLFS_FAULT_CTL:
 *
 *   fail OPS MATCH ERRNO [COUNT]   fail the calls of the kinds in OPS (a comma
 *                                  list of open, read, append, sync, rename,
 *                                  unlink, writes, all) on paths holding MATCH
 *                                  (`*`: any path) with ERRNO (EIO, ENOSPC,
 *                                  EDQUOT, ENOMEM), COUNT of them (default:
 *                                  all from now on)
 *   clear                          inject nothing any more
 *   cut N                          the power goes at the N-th write-kind call
 *                                  (open for writing, append, sync, rename,
 *                                  unlink, truncate, mkdir, directory sync)
 *                                  from now; N = 0: now
 *
 * Each command, once applied, is answered by a line appended to the file
 * SMOLFS_FAULT_CTL.ack: "ok N" (N counts the commands so far) or "bad N: why",
 * so the script knows the fault is in place before it writes.
 * SMOLFS_FAULT_WRITE_BUFFER (bytes), if set, is the engine's memtable size,
 * so that a test's few writes fill one and a flush (table writes and a
 * manifest edit) follows.
 *
 * A power cut (tests/fs_powercut.sh) ends the process: the files are left
 * as env_fault_drop_unsynced() says a disk would hold them after the cut
 * (synced bytes kept, each unsynced 4 KiB page kept, dropped or zeroed,
 * name changes not made durable by a directory sync undone), and the daemon
 * exits at once with status 0 (3 if the files could not be rewritten),
 * leaving its mount dead, as a machine that lost power would.
 * SMOLFS_FAULT_CUT_AFTER=N schedules the cut at start-up (so it may fall in
 * the recovery of the database's open), SMOLFS_FAULT_SEED seeds the fates
 * of the unsynced pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv.h"
#include "kv/env.h"

int smolfs_test_env(struct kv_options *opt);

/* The daemon's fault environment: kept for the whole life of the process. */
static struct kv_env *fault_env;
static char *ack_path;
static long ncommands;

static const struct { const char *name; unsigned mask; } op_names[] = {
	{ "open", ENV_OP_OPEN }, { "read", ENV_OP_READ }, { "append", ENV_OP_APPEND },
	{ "sync", ENV_OP_SYNC }, { "rename", ENV_OP_RENAME }, { "unlink", ENV_OP_UNLINK },
	{ "writes", ENV_OP_WRITES }, { "all", ENV_OP_ALL },
};

static const struct { const char *name; int err; } err_names[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "ENOMEM", ENOMEM },
};

/* ------------------------------------------------------------ the power cut */

/*
 * A power cut must leave on disk exactly what the fault environment says a
 * disk would keep at one instant: no call may be half done when its
 * env_fault_drop_unsynced() rewrites the files, and none may run after it
 * (the daemon's later writes would land on the disk that the cut left).  So
 * the fault environment is wrapped in a gate: every call passes it holding
 * a read lock; the cut takes the write lock (the calls in flight finish,
 * new ones wait for good), drops what was not synced, and ends the process
 * with _exit, as the power would.  A call that returned before the cut is
 * one the disk saw; an fsync the daemon acknowledged is one that returned.
 * The lock prefers the writer, so a stream of reads cannot hold the cut off.
 */
struct gate_file {
	struct env_file base;
	struct env_file *inner;
};

static struct kv_env gate_env;
static pthread_rwlock_t gate_lock;
static long cut_left = -1;    /* write-kind calls before the cut; < 0: none scheduled */
static pthread_mutex_t cut_mu = PTHREAD_MUTEX_INITIALIZER;

/* The power goes now: never returns.  REQUIRES the gate not held by the caller. */
static void power_cut(const char *why)
{
	long kept, dropped, zeroed;
	int r;

	pthread_rwlock_wrlock(&gate_lock);
	r = env_fault_drop_unsynced(fault_env);
	env_fault_cut_pages(fault_env, &kept, &dropped, &zeroed);
	fprintf(stderr, "smolfs_fault: power cut (%s): unsynced pages kept %ld, dropped %ld, "
		"zeroed %ld%s%s\n", why, kept, dropped, zeroed, r < 0 ? "; the drop failed: " : "",
		r < 0 ? strerror(-r) : "");
	_exit(r < 0 ? 3 : 0);
}

/* Pass the gate for a call; a write-kind call may be the one the power goes at. */
static void gate_enter(int writes)
{
	int now = 0;

	if (writes) {
		pthread_mutex_lock(&cut_mu);
		if (cut_left > 0 && --cut_left == 0)
			now = 1;
		pthread_mutex_unlock(&cut_mu);
	}
	if (now)
		power_cut("at a write call");
	pthread_rwlock_rdlock(&gate_lock);
}

static void gate_leave(void)
{
	pthread_rwlock_unlock(&gate_lock);
}

static struct env_file *gate_wrap(struct env_file *inner)
{
	struct gate_file *g;

	if (!inner)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->base.env = &gate_env;
	g->inner = inner;
	return &g->base;
}

static struct env_file *INNER(struct env_file *f)
{
	return ((struct gate_file *)f)->inner;
}

/* An open of any kind through the gate; the file wrapped (or closed on no memory). */
static int gate_open(int writes, int (*open)(struct kv_env *, const char *, struct env_file **),
		     const char *path, struct env_file **out)
{
	struct env_file *inner;
	int r;

	*out = NULL;
	gate_enter(writes);
	r = open(fault_env, path, &inner);
	gate_leave();
	if (r < 0)
		return r;
	*out = gate_wrap(inner);
	if (!*out) {
		env_close(inner);
		return -ENOMEM;
	}
	return 0;
}

static int g_open_read(struct kv_env *e, const char *p, struct env_file **f)
{
	(void)e;
	return gate_open(0, env_open_read, p, f);
}

static int g_open_append(struct kv_env *e, const char *p, struct env_file **f)
{
	(void)e;
	return gate_open(1, env_open_append, p, f);
}

static int g_open_log(struct kv_env *e, const char *p, struct env_file **f)
{
	(void)e;
	return gate_open(1, env_open_log, p, f);
}

static int g_lock(struct kv_env *e, const char *p, struct env_file **f)
{
	(void)e;
	return gate_open(0, env_lock, p, f);
}

static int g_lock_shared(struct kv_env *e, const char *p, struct env_file **f)
{
	(void)e;
	return gate_open(0, env_lock_shared, p, f);
}

static int g_pread(struct env_file *f, void *b, size_t n, uint64_t off, size_t *got)
{
	int r;

	gate_enter(0);
	r = env_pread(INNER(f), b, n, off, got);
	gate_leave();
	return r;
}

static int g_append(struct env_file *f, const void *b, size_t n)
{
	int r;

	gate_enter(1);
	r = env_append(INNER(f), b, n);
	gate_leave();
	return r;
}

static int g_sync(struct env_file *f)
{
	int r;

	gate_enter(1);
	r = env_sync(INNER(f));
	gate_leave();
	return r;
}

/* close and unlock: the wrapper goes whatever the inner call says */
static int gate_release(struct env_file *f, int (*release)(struct env_file *))
{
	int r;

	gate_enter(0);
	r = release(INNER(f));
	gate_leave();
	free(f);
	return r;
}

static int g_close(struct env_file *f)
{
	return gate_release(f, env_close);
}

static int g_unlock(struct env_file *f)
{
	return gate_release(f, env_unlock);
}

/* The calls on a path: the same shape, one macro, so each says only what it forwards. */
#define GATE_PATH_CALL(name, writes, call)			\
	static int name					\
	{							\
		int r;						\
		(void)e;					\
		gate_enter(writes);				\
		r = call;					\
		gate_leave();					\
		return r;					\
	}
GATE_PATH_CALL(g_file_size(struct kv_env *e, const char *p, uint64_t *s), 0,
	       env_file_size(fault_env, p, s))
GATE_PATH_CALL(g_exists(struct kv_env *e, const char *p), 0, env_exists(fault_env, p))
GATE_PATH_CALL(g_rename(struct kv_env *e, const char *a, const char *b), 1,
	       env_rename(fault_env, a, b))
GATE_PATH_CALL(g_unlink(struct kv_env *e, const char *p), 1, env_unlink(fault_env, p))
GATE_PATH_CALL(g_truncate(struct kv_env *e, const char *p, uint64_t s), 1,
	       env_truncate(fault_env, p, s))
GATE_PATH_CALL(g_mkdir(struct kv_env *e, const char *p), 1, env_mkdir(fault_env, p))
GATE_PATH_CALL(g_sync_dir(struct kv_env *e, const char *p), 1, env_sync_dir(fault_env, p))
GATE_PATH_CALL(g_free_space(struct kv_env *e, const char *p, uint64_t *b), 0,
	       env_free_space(fault_env, p, b))
GATE_PATH_CALL(g_list_dir(struct kv_env *e, const char *p, char ***n, size_t *c), 0,
	       env_list_dir(fault_env, p, n, c))

static void g_destroy(struct kv_env *e)
{
	(void)e;   /* the fault environment lives as long as the process */
}

static const struct env_ops gate_ops = {
	.open_read = g_open_read,
	.open_append = g_open_append,
	.open_log = g_open_log,
	.pread = g_pread,
	.append = g_append,
	.sync = g_sync,
	.close = g_close,
	.file_size = g_file_size,
	.exists = g_exists,
	.rename = g_rename,
	.unlink = g_unlink,
	.truncate = g_truncate,
	.mkdir = g_mkdir,
	.sync_dir = g_sync_dir,
	.free_space = g_free_space,
	.list_dir = g_list_dir,
	.lock = g_lock,
	.lock_shared = g_lock_shared,
	.unlock = g_unlock,
	.destroy = g_destroy,
};

/* Schedule the cut at the n-th write-kind call from now; n = 0: now (never returns). */
static void cut_schedule(long n)
{
	if (n == 0)
		power_cut("on command");
	pthread_mutex_lock(&cut_mu);
	cut_left = n;
	pthread_mutex_unlock(&cut_mu);
}

/* "append,sync": the mask; 0 for a name not known. */
static unsigned parse_ops(char *s)
{
	unsigned mask = 0;
	char *save = NULL;

	for (char *w = strtok_r(s, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
			if (!strcmp(w, op_names[i].name))
				break;
		if (i == sizeof(op_names) / sizeof(op_names[0]))
			return 0;
		mask |= op_names[i].mask;
	}
	return mask;
}

static int parse_err(const char *s)
{
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (!strcmp(s, err_names[i].name))
			return err_names[i].err;
	return 0;
}

/* Apply one command line; NULL, or why it was refused. */
static const char *apply(char *line)
{
	char *save = NULL, *verb, *ops, *match, *err, *count, *end;
	unsigned mask;
	long n = -1;
	int e;

	verb = strtok_r(line, " \t\n", &save);
	if (!verb)
		return "an empty command";
	if (!strcmp(verb, "clear")) {
		env_fault_clear(fault_env);
		return NULL;
	}
	if (!strcmp(verb, "cut")) {
		count = strtok_r(NULL, " \t\n", &save);
		errno = 0;
		n = count ? strtol(count, &end, 10) : -1;
		if (!count || errno || *end || n < 0)
			return "cut N: a number of write calls, 0 or more";
		cut_schedule(n);
		return NULL;
	}
	if (strcmp(verb, "fail"))
		return "not a command (fail, clear, cut)";
	ops = strtok_r(NULL, " \t\n", &save);
	match = strtok_r(NULL, " \t\n", &save);
	err = strtok_r(NULL, " \t\n", &save);
	count = strtok_r(NULL, " \t\n", &save);
	if (!ops || !match || !err)
		return "fail OPS MATCH ERRNO [COUNT]";
	mask = parse_ops(ops);
	if (!mask)
		return "OPS: a comma list of open, read, append, sync, rename, unlink, writes, all";
	e = parse_err(err);
	if (!e)
		return "ERRNO: EIO, ENOSPC, EDQUOT or ENOMEM";
	if (count) {
		errno = 0;
		n = strtol(count, &end, 10);
		if (errno || *end || n <= 0)
			return "COUNT: a number of calls, 1 or more";
	}
	env_fault_inject(fault_env, mask, 0, n, -e, strcmp(match, "*") ? match : NULL);
	return NULL;
}

static void acknowledge(const char *why)
{
	FILE *f = fopen(ack_path, "a");

	if (!f) {
		fprintf(stderr, "smolfs_fault: %s: %s\n", ack_path, strerror(errno));
		return;
	}
	if (why)
		fprintf(f, "bad %ld: %s\n", ncommands, why);
	else
		fprintf(f, "ok %ld\n", ncommands);
	fclose(f);
}

/*
 * The FIFO is opened for reading and writing, so that the open never waits
 * for a writer and the reads never see an end of file between two writers.
 * The thread lives as long as the process.
 */
static void *control(void *arg)
{
	FILE *f = arg;
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		const char *why;

		ncommands++;
		why = apply(line);
		fprintf(stderr, "smolfs_fault: command %ld: %s%s\n", ncommands,
			why ? "refused: " : "applied", why ? why : "");
		acknowledge(why);
	}
	return NULL;
}

int smolfs_test_env(struct kv_options *opt)
{
	const char *ctl = getenv("SMOLFS_FAULT_CTL");
	const char *wb = getenv("SMOLFS_FAULT_WRITE_BUFFER");
	const char *cut = getenv("SMOLFS_FAULT_CUT_AFTER");
	const char *seed = getenv("SMOLFS_FAULT_SEED");
	pthread_rwlockattr_t lattr;
	pthread_attr_t attr;
	pthread_t t;
	FILE *f;
	int fd, r;

	if (!ctl)
		return -EINVAL;
	fault_env = env_fault_new(env_posix());
	if (seed)
		env_fault_cut_model(fault_env, ENV_CUT_PAGES, strtoull(seed, NULL, 10));
	gate_env.ops = &gate_ops;
	r = pthread_rwlockattr_init(&lattr);
	if (r == 0)
		r = pthread_rwlockattr_setkind_np(&lattr,
						  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	if (r == 0)
		r = pthread_rwlock_init(&gate_lock, &lattr);
	if (r != 0)
		return -r;
	pthread_rwlockattr_destroy(&lattr);
	opt->env = &gate_env;
	if (wb)
		opt->write_buffer_size = strtoul(wb, NULL, 10);
	if (cut)
		cut_left = strtol(cut, NULL, 10) > 0 ? strtol(cut, NULL, 10) : -1;
	if (asprintf(&ack_path, "%s.ack", ctl) < 0)
		return -ENOMEM;
	fd = open(ctl, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		return r;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, control, f);
	pthread_attr_destroy(&attr);
	if (r < 0)
		fclose(f);
	return r;
}
