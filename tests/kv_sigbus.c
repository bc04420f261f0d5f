/*
 * kv_sigbus.c -- files cut short under an open database give errors, never
 * a signal.
 *
 * Tables are read through a map and the log is written through one; a page
 * of a map past the file's end raises SIGBUS.  Each case runs in a child
 * process, so that a SIGBUS that reaches the process is a failed assertion
 * here rather than the end of the test: a table truncated after the
 * database opened it must make reads fail with EIO (or EUCLEAN) and a
 * message naming the table, through the map and with
 * read_tables_with_pread; the active log truncated must make the next put
 * fail with an error; and a SIGBUS outside the engine's guarded accesses
 * must still kill the process, as if the engine's handler were not there.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS 3000

static char tmpdir[512];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* What a child found, in memory it shares with the parent. */
struct result {
	int get_err, iter_err, put_err, put2_err, close_done, checked;
	char get_msg[512], iter_msg[512], put_msg[512];
};

static struct result *res;

static void options(struct kv_options *o, int pread_tables)
{
	kv_options_init(o);
	o->block_cache_size = 0;       /* every read goes to the file */
	o->read_tables_with_pread = pread_tables;
	o->compression_level = 0;      /* blocks are read in place from the map */
}

/* The newest file of dir with suffix, as a malloc'd path. */
static char *newest(const char *dir, const char *suffix)
{
	char **names, *best = NULL;
	size_t n;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		if (l > strlen(suffix) && !strcmp(names[i] + l - strlen(suffix), suffix) &&
		    (!best || strcmp(names[i], best) > 0)) {
			free(best);
			best = xstrdup(names[i]);
		}
	}
	env_free_list(names, n);
	if (!best)
		return NULL;
	char *p = xasprintf("%s/%s", dir, best);
	free(best);
	return p;
}

static int key_of(char *b, int i)
{
	return snprintf(b, 32, "key%06d", i);
}

/* A database with one table of NKEYS keys of 200-byte values, closed. */
static int make_db(const char *dir)
{
	struct kv_options o;
	struct kv_db *db;
	char k[32], v[200];
	int r;

	options(&o, 0);
	if ((r = kv_open(dir, &o, &db)) < 0)
		return r;
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < NKEYS && r == 0; i++)
		r = kv_put(db, k, (size_t)key_of(k, i), v, sizeof(v), 0);
	if (r == 0)
		r = kv_flush(db);
	int rc = kv_close(db);
	return r ? r : rc;
}

/* Child: open, read one key (the table is opened and mapped), cut the table, read on. */
static void child_table(const char *dir, int pread_tables)
{
	struct kv_options o;
	struct kv_db *db;
	struct kv_iter *it;
	char k[32], *v = NULL, *sst = newest(dir, ".sst");
	size_t vl;
	int r;

	options(&o, pread_tables);
	if (!sst || kv_open(dir, &o, &db) < 0)
		_exit(2);
	if (kv_get(db, NULL, "key000000", 9, &v, &vl) != 0)
		_exit(3);
	free(v);
	if (truncate(sst, 4096) < 0)
		_exit(4);
	res->get_err = 0;
	for (int i = NKEYS - 1; i >= 0 && res->get_err == 0; i -= 97) {
		v = NULL;
		r = kv_get(db, NULL, k, (size_t)key_of(k, i), &v, &vl);
		free(v);
		if (r != 0) {
			res->get_err = r;
			snprintf(res->get_msg, sizeof(res->get_msg), "%s", kv_strerror(r));
		}
	}
	it = kv_iter_new(db, NULL);
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it))
		;
	res->iter_err = kv_iter_status(it);
	snprintf(res->iter_msg, sizeof(res->iter_msg), "%s",
		 res->iter_err ? kv_strerror(res->iter_err) : "");
	kv_iter_free(it);
	kv_close(db);
	res->close_done = 1;
	_exit(0);
}

/* Child: open, put, cut the active log to nothing, put again. */
static void child_log(const char *dir)
{
	struct kv_options o;
	struct kv_db *db;
	char *log;

	options(&o, 0);
	if (kv_open(dir, &o, &db) < 0)
		_exit(2);
	if (kv_put(db, "a", 1, "1", 1, 0) != 0)
		_exit(3);
	log = newest(dir, ".log");
	if (!log || truncate(log, 0) < 0)
		_exit(4);
	res->put_err = kv_put(db, "b", 1, "2", 1, 0);
	snprintf(res->put_msg, sizeof(res->put_msg), "%s",
		 res->put_err ? kv_strerror(res->put_err) : "");
	res->put2_err = kv_put(db, "c", 1, "3", 1, 0);
	kv_close(db);
	res->close_done = 1;
	_exit(0);
}

/* Child: the engine's handler is installed (a database was opened); fault outside any guard. */
static void child_unguarded(const char *dir)
{
	struct kv_options o;
	struct kv_db *db;
	char *path = xasprintf("%s.plain", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	volatile char *p;

	options(&o, 0);
	if (make_db(dir) < 0 || kv_open(dir, &o, &db) < 0 || fd < 0 ||
	    ftruncate(fd, 8192) < 0)
		_exit(2);
	char *v = NULL;
	size_t vl;
	kv_get(db, NULL, "key000000", 9, &v, &vl);   /* a table is mapped: the handler is in */
	free(v);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
		_exit(3);
	res->checked = p[4096];   /* SIGBUS, not the engine's to catch */
	_exit(0);
}

/* Run fn in a child; returns its wait status. */
static int run(void (*fn)(const char *, int), const char *dir, int arg)
{
	pid_t pid;
	int st = 0;

	memset(res, 0, sizeof(*res));
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		fn(dir, arg);
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return st;
}

static void table_fn(const char *dir, int arg) { child_table(dir, arg); }
static void log_fn(const char *dir, int arg) { (void)arg; child_log(dir); }
static void unguarded_fn(const char *dir, int arg) { (void)arg; child_unguarded(dir); }

static void describe(int st, const char *what)
{
	if (WIFSIGNALED(st))
		diag("%s: the process was killed by signal %d (%s)", what, WTERMSIG(st),
		     strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st) >= 2)
		diag("%s: the child could not set up (exit %d)", what, WEXITSTATUS(st));
}

static void test_table(int pread_tables)
{
	const char *how = pread_tables ? "pread" : "map";
	char *dir = xasprintf("%s/table-%s", tmpdir, how);
	int st;

	is_int(make_db(dir), 0, "%s: a database with a table", how);
	st = run(table_fn, dir, pread_tables);
	describe(st, how);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "%s: reads of a table truncated under the open database raise no signal", how);
	ok(res->get_err == -EIO || res->get_err == -EUCLEAN,
	   "%s: a point read fails with EIO or EUCLEAN (%d)", how, res->get_err);
	ok(strstr(res->get_msg, ".sst") != NULL, "%s: its message names the table: %s", how,
	   res->get_msg);
	ok(res->iter_err == -EIO || res->iter_err == -EUCLEAN,
	   "%s: a scan stops with EIO or EUCLEAN (%d): %s", how, res->iter_err, res->iter_msg);
	ok(res->close_done, "%s: the database closes afterwards", how);
	kv_destroy(dir, NULL);
	rm_rf(dir);
	free(dir);
}

static void test_log(void)
{
	char *dir = xasprintf("%s/log", tmpdir);
	int st;

	env_mkdir(env_posix(), dir);
	st = run(log_fn, dir, 0);
	describe(st, "log");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "log: a put after the active log was truncated raises no signal");
	ok(res->put_err < 0, "log: that put fails (%d): %s", res->put_err, res->put_msg);
	ok(strstr(res->put_msg, ".log") != NULL, "log: its message names the log");
	ok(res->put2_err == 0, "log: the next starts a new log and succeeds (%d)", res->put2_err);
	ok(res->close_done, "log: the database closes afterwards");
	kv_destroy(dir, NULL);
	rm_rf(dir);
	free(dir);
}

static void test_unguarded(void)
{
	char *dir = xasprintf("%s/unguarded", tmpdir);
	int st;

	st = run(unguarded_fn, dir, 0);
	describe(st, "unguarded");
	/* under AddressSanitizer, its handler (the one before ours) reports it and exits 1 */
	ok(WIFSIGNALED(st) ? WTERMSIG(st) == SIGBUS : WIFEXITED(st) && WEXITSTATUS(st) == 1,
	   "a SIGBUS outside the engine's guarded reads still ends the process, by the handler "
	   "that was there before (status %#x)", st);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	plan(18);
	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-kv_sigbus-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	test_table(0);
	test_table(1);
	test_log();
	test_unguarded();
	if (exit_status() == 0)
		rm_rf(tmpdir);
	return exit_status();
}
