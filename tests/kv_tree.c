/*
 * kv_tree.c -- the contract of trees (kv.h, "Trees"): several LSM trees in
 * one database that share the write-ahead log, the manifest and the
 * sequence numbers.
 *
 * One promise per section: names and kv_tree_list; trees opened from many
 * threads while others write and flush; isolation (the same key in two
 * trees, gets, iterators, bounds, deletes, range deletes and a compaction of
 * one tree); snapshots that cover every tree, also under concurrent writers;
 * trees, their data and their per-tree log numbers across flushes, reopens
 * and a power cut (a tree whose data sits only in an old log keeps that log
 * alive while other trees flush, and a tree with nothing unflushed keeps
 * none); dropping a tree; the manifest's tree records as man/smolfs.5
 * describes them; a scan of one tree reads no bytes of another's tables;
 * per-tree compression and compaction filters; and last, batches over three
 * trees under power cuts at random points, which must come back all or
 * nothing in every tree, as a prefix of what was written that holds every
 * batch acknowledged with KV_SYNC.
 *
 * Tables per tree are read from kv_property("sstables"), whose lines for a
 * tree other than the default one begin "tree NAME ".
 */
#include "kv.h"
#include "batch.h"
#include "db.h"
#include "env.h"
#include "util.h"
#include "version.h"
#include "wal.h"
#include "tap.h"
#include "testutil.h"
#include "dbtest.h"

#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dbpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void small_options(struct kv_options *o)
{
	kv_options_init(o);
	o->write_buffer_size = 64 * 1024;
	o->target_file_size = 64 * 1024;
	o->max_bytes_level_base = 256 * 1024;
	o->block_cache_size = 256 * 1024;
}

/* ------------------------------------------------------------ helpers */

/* One put, delete or range delete in tree t, as its own batch. */
static int tput(struct kv_db *db, struct kv_tree *t, const char *k, const char *v, unsigned flags)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_put_tree(b, t, k, strlen(k), v, strlen(v));

	if (r == 0)
		r = kv_write(db, b, flags);
	kv_batch_free(b);
	return r;
}

static int tdel(struct kv_db *db, struct kv_tree *t, const char *k)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_delete_tree(b, t, k, strlen(k));

	if (r == 0)
		r = kv_write(db, b, 0);
	kv_batch_free(b);
	return r;
}

static int tdel_range(struct kv_db *db, struct kv_tree *t, const char *s, const char *e)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_delete_range_tree(b, t, s, strlen(s), e, strlen(e));

	if (r == 0)
		r = kv_write(db, b, 0);
	kv_batch_free(b);
	return r;
}

/* kv_get_tree and compare: want == NULL means absent. */
static int tget_is(struct kv_db *db, struct kv_tree *t, const struct kv_snapshot *snap,
		   const char *k, const char *want, const char *name)
{
	char *v = NULL;
	size_t vl = 0;
	int r = kv_get_tree(db, t, snap, k, strlen(k), &v, &vl);
	int good;

	if (!want) {
		good = ok(r == -ENOENT, "%s", name);
		if (!good)
			diag("kv_get_tree(%s, %s) returned %d with \"%.*s\", want -ENOENT",
			     t ? kv_tree_name(t) : "NULL", k, r, r == 0 ? (int)vl : 0, r == 0 ? v : "");
	} else {
		good = ok(r == 0 && vl == strlen(want) && memcmp(v, want, vl) == 0, "%s", name);
		if (!good)
			diag("kv_get_tree(%s, %s) returned %d, \"%.*s\", want \"%s\"",
			     t ? kv_tree_name(t) : "NULL", k, r, r == 0 ? (int)vl : 0, r == 0 ? v : "",
			     want);
	}
	free(v);
	return good;
}

/* Walk from the current position, rendering "key=value|..."; "!<errno>" on error. */
static char *walk(struct kv_iter *it, int dir)
{
	struct buf b = BUF_INIT;
	int first = 1;

	while (kv_iter_valid(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl);
		const char *v = kv_iter_value(it, &vl);

		if (!first)
			buf_append(&b, "|", 1);
		first = 0;
		buf_append(&b, k, kl);
		buf_append(&b, "=", 1);
		buf_append(&b, v, vl);
		if (dir > 0)
			kv_iter_next(it);
		else
			kv_iter_prev(it);
	}
	if (kv_iter_status(it)) {
		char e[16];
		snprintf(e, sizeof(e), "!%d", kv_iter_status(it));
		buf_append(&b, e, strlen(e));
	}
	buf_append(&b, "", 1);
	return b.data;
}

/* A whole scan of tree t at snap, in [lower, upper) if given. */
static char *scan(struct kv_db *db, struct kv_tree *t, const struct kv_snapshot *snap,
		  const char *lower, const char *upper, int dir)
{
	struct kv_read_options ro = { .tree = t, .snapshot = snap };
	struct kv_iter *it;
	char *s;

	if (lower) {
		ro.lower = lower;
		ro.lower_len = strlen(lower);
	}
	if (upper) {
		ro.upper = upper;
		ro.upper_len = strlen(upper);
	}
	it = kv_iter_new(db, &ro);
	if (dir > 0)
		kv_iter_seek_first(it);
	else
		kv_iter_seek_last(it);
	s = walk(it, dir);
	kv_iter_free(it);
	return s;
}

static int scan_is(char *got, const char *want, const char *name)
{
	int r = is_str(got, want, "%s", name);

	free(got);
	return r;
}

/* Keys and status of a full forward scan: count, or -errno. */
static long count_keys(struct kv_db *db, struct kv_tree *t, int no_fill_cache)
{
	struct kv_read_options ro = { .tree = t, .no_fill_cache = no_fill_cache };
	struct kv_iter *it = kv_iter_new(db, &ro);
	long n = 0;

	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it))
		n++;
	if (kv_iter_status(it))
		n = kv_iter_status(it);
	kv_iter_free(it);
	return n;
}

static int count_files(const char *dir, const char *suffix)
{
	char **names;
	size_t n;
	int c = 0;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]), sl = strlen(suffix);
		if (l >= sl && strcmp(names[i] + l - sl, suffix) == 0)
			c++;
	}
	env_free_list(names, n);
	return c;
}

/* The numbers of the .log files in dir, ascending; returns how many (at most max). */
static int log_numbers(const char *dir, uint64_t *nums, int max)
{
	char **names;
	size_t n;
	int c = 0;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned long long v;
		int used = 0;
		if (sscanf(names[i], "%llu.log%n", &v, &used) == 1 && (size_t)used == strlen(names[i]) &&
		    c < max)
			nums[c++] = v;
	}
	env_free_list(names, n);
	for (int i = 1; i < c; i++)
		for (int j = i; j > 0 && nums[j - 1] > nums[j]; j--) {
			uint64_t x = nums[j];
			nums[j] = nums[j - 1];
			nums[j - 1] = x;
		}
	return c;
}

/* How many descriptors this process holds open on logs in dir. */
static int open_logs(const char *dir)
{
	char **names, link[64], target[4096], real[4096];
	size_t n, dl;
	int c = 0;

	if (!realpath(dir, real) || env_list_dir(env_posix(), "/proc/self/fd", &names, &n) < 0)
		return -1;
	dir = real;
	dl = strlen(dir);
	for (size_t i = 0; i < n; i++) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", names[i]);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		c += (size_t)len > dl + 5 && !strncmp(target, dir, dl) && target[dl] == '/' &&
		     !strcmp(target + len - 4, ".log");
	}
	env_free_list(names, n);
	return c;
}

static int file_exists(const char *dir, uint64_t number, const char *suffix)
{
	char *p = xasprintf("%s/%06llu%s", dir, (unsigned long long)number, suffix);
	int r = env_exists(env_posix(), p);

	free(p);
	return r;
}

/* The tables of one tree (name NULL: the default tree), from kv_property("sstables"). */
struct tables {
	int n;
	uint64_t num[512];
	int level[512];
	uint64_t bytes;
	int in_level0;
};

static void tree_tables(struct kv_db *db, const char *name, struct tables *ts)
{
	char *p = kv_property(db, "sstables"), *line, *save = NULL;
	char prefix[96];

	memset(ts, 0, sizeof(*ts));
	if (name)
		snprintf(prefix, sizeof(prefix), "tree %s level ", name);
	else
		snprintf(prefix, sizeof(prefix), "level ");
	for (line = p ? strtok_r(p, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long num, bytes;
		int level;

		if (strncmp(line, prefix, strlen(prefix)))
			continue;
		if (sscanf(line + strlen(prefix), "%d %llu.sst %llu bytes", &level, &num, &bytes) != 3)
			continue;
		if (ts->n < 512) {
			ts->num[ts->n] = num;
			ts->level[ts->n] = level;
			ts->n++;
		}
		ts->bytes += bytes;
		ts->in_level0 += level == 0;
	}
	free(p);
}

static int tables_same(const struct tables *a, const struct tables *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->num[i] != b->num[i] || a->level[i] != b->level[i])
			return 0;
	return 1;
}

/* The live trees' names, sorted and joined with ','. */
static char *tree_names(struct kv_db *db)
{
	char **names = NULL;
	size_t n = 0;
	struct buf b = BUF_INIT;

	if (kv_tree_list(db, &names, &n) != 0)
		return xstrdup("(kv_tree_list failed)");
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *x = names[j];
			names[j] = names[j - 1];
			names[j - 1] = x;
		}
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_append(&b, ",", 1);
		buf_append(&b, names[i], strlen(names[i]));
		free(names[i]);
	}
	free(names);
	buf_append(&b, "", 1);
	return b.data;
}

static int open_tree(struct kv_db *db, const char *name, int level, struct kv_tree **t)
{
	struct kv_tree_options o;

	kv_tree_options_init(&o);
	o.compression_level = level;
	return kv_tree_open(db, name, &o, t);
}

static int reopen(struct kv_db **db, const char *dir, const struct kv_options *o)
{
	int r;

	kv_close(*db);
	*db = NULL;
	r = kv_open(dir, o, db);
	if (r < 0)
		diag("kv_open(%s): %s", dir, kv_strerror(r));
	return r;
}

/* ------------------------------------------------------------ names */

static void test_names(void)
{
	static const char *bad[] = { "", "a b", "a/b", "tree\n", "caf\xc3\xa9", "x:y", "a*",
				     "..\\x", "semi;colon" };
	char long_ok[65], long_bad[66];
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *a = NULL, *a2 = NULL, *b = NULL, *d = NULL, *t;
	char *dir = dbpath("names"), *s;
	int r;

	small_options(&o);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "names: open"))
		goto out;
	s = tree_names(db);
	is_str(s, "default", "a new database lists only the tree \"default\"");
	free(s);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = (struct kv_tree *)1;
		r = kv_tree_open(db, bad[i], NULL, &t);
		is_int(r, -EINVAL, "tree name \"%s\" is refused with -EINVAL",
		       i == 3 ? "tree\\n" : bad[i]);
		ok(t == NULL, "and the refused open stores NULL");
	}
	memset(long_ok, 'n', 64);
	long_ok[64] = 0;
	memset(long_bad, 'n', 65);
	long_bad[65] = 0;
	t = (struct kv_tree *)1;
	is_int(kv_tree_open(db, long_bad, NULL, &t), -EINVAL, "a 65-byte name is refused");
	ok(t == NULL, "and stores NULL");
	s = tree_names(db);
	is_str(s, "default", "refused names create no tree");
	free(s);

	is_int(kv_tree_open(db, long_ok, NULL, &t), 0, "a 64-byte name is accepted");
	is_int(kv_tree_open(db, "Az09_.-", NULL, &b), 0,
	       "a name of letters, digits, '_', '.' and '-' is accepted");
	r = kv_tree_open(db, "alpha", NULL, &a);
	if (!is_int(r, 0, "open (create) tree alpha"))
		goto out;
	ok(a != NULL, "kv_tree_open stores a handle");
	is_str(kv_tree_name(a), "alpha", "kv_tree_name gives the name");
	is_int(kv_tree_open(db, "alpha", NULL, &a2), 0, "open alpha again");
	ok(a2 == a, "opening an existing name again gives the same tree");
	is_int(tput(db, a, "k", "via-first", 0), 0, "write through the first handle");
	tget_is(db, a2, NULL, "k", "via-first", "and read it through the second");
	tget_is(db, NULL, NULL, "k", NULL, "the default tree does not have it");
	is_int(kv_tree_open(db, "Alpha", NULL, &t), 0, "open Alpha");
	ok(t != a, "names are case-sensitive: Alpha is another tree");
	tget_is(db, t, NULL, "k", NULL, "and holds nothing of alpha's");

	is_int(kv_tree_open(db, "default", NULL, &d), 0, "\"default\" opens by name");
	is_int(tput(db, NULL, "dk", "dv", 0), 0, "write to the NULL tree");
	tget_is(db, d, NULL, "dk", "dv", "the tree named default is the NULL tree");
	is_str(kv_tree_name(d), "default", "and is named default");

	s = tree_names(db);
	{
		char *want = xasprintf("Alpha,Az09_.-,alpha,default,%s", long_ok);
		is_str(s, want, "kv_tree_list lists every tree once");
		free(want);
	}
	free(s);

	if (!is_int(reopen(&db, dir, &o), 0, "names: reopen"))
		goto out;
	s = tree_names(db);
	{
		char *want = xasprintf("Alpha,Az09_.-,alpha,default,%s", long_ok);
		is_str(s, want, "the names survive a reopen (creation is durable)");
		free(want);
	}
	free(s);
	is_int(kv_tree_open(db, "alpha", NULL, &a), 0, "open alpha after reopen");
	tget_is(db, a, NULL, "k", "via-first", "its data came back with it");
	/* the same once more, now from the tables of a flushed tree */
	is_int(kv_flush(db), 0, "flush");
	if (!is_int(reopen(&db, dir, &o), 0, "names: reopen after a flush"))
		goto out;
	is_int(kv_tree_open(db, "alpha", NULL, &a), 0, "open alpha after flush and reopen");
	tget_is(db, a, NULL, "k", "via-first", "its data is read from its table");
	tget_is(db, NULL, NULL, "dk", "dv", "and the default tree's from its own");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/*
 * Threads opening trees, and one flushing, while others write: one tree per
 * name whoever wins, and nothing lost.  It runs in a child process, so that
 * a crash is reported as a failure here instead of ending the whole test;
 * the parent then reopens the database and checks what it holds.
 */
#define CO_OPENERS 4
#define CO_TREES   12     /* own trees per opener */
#define CO_WRITES  400    /* puts per writer */

struct co_thread {
	struct kv_db *db;
	int id, failures;
	struct kv_tree *shared;
};

static void *co_opener(void *arg)
{
	struct co_thread *op = arg;
	char name[32];

	for (int j = 0; j < CO_TREES; j++) {
		struct kv_tree *own, *sh;
		snprintf(name, sizeof(name), "own-%d-%02d", op->id, j);
		op->failures += kv_tree_open(op->db, "shared", NULL, &sh) != 0;
		if (j == 0)
			op->shared = sh;
		op->failures += sh != op->shared;
		if (kv_tree_open(op->db, name, NULL, &own) != 0) {
			op->failures++;
			continue;
		}
		op->failures += tput(op->db, own, "mine", name, 0) != 0;
		op->failures += tput(op->db, sh, name, "x", 0) != 0;
	}
	return NULL;
}

static void *co_writer(void *arg)
{
	struct co_thread *w = arg;
	char k[32];

	for (int i = 0; i < CO_WRITES; i++) {
		snprintf(k, sizeof(k), "w%d-%04d", w->id, i);
		w->failures += tput(w->db, NULL, k, "v", 0) != 0;
	}
	return NULL;
}

static void *co_flusher(void *arg)
{
	struct co_thread *f = arg;

	for (int i = 0; i < 20; i++)
		f->failures += kv_flush(f->db) != 0;
	return NULL;
}

/* The child's part: 0 if every call succeeded and every opener got one "shared". */
static int co_child(const char *dir)
{
	struct co_thread op[CO_OPENERS], wr[2], fl;
	pthread_t th[CO_OPENERS + 3];
	struct kv_options o;
	struct kv_db *db;
	int fails = 0;

	small_options(&o);
	if (kv_open(dir, &o, &db) != 0)
		return 2;
	for (int i = 0; i < CO_OPENERS; i++) {
		op[i] = (struct co_thread){ db, i, 0, NULL };
		pthread_create(&th[i], NULL, co_opener, &op[i]);
	}
	for (int i = 0; i < 2; i++) {
		wr[i] = (struct co_thread){ db, i, 0, NULL };
		pthread_create(&th[CO_OPENERS + i], NULL, co_writer, &wr[i]);
	}
	fl = (struct co_thread){ db, 0, 0, NULL };
	pthread_create(&th[CO_OPENERS + 2], NULL, co_flusher, &fl);
	for (int i = 0; i < CO_OPENERS + 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < CO_OPENERS; i++)
		fails += op[i].failures + (op[i].shared != op[0].shared);
	fails += wr[0].failures + wr[1].failures + fl.failures;
	if (kv_close(db) != 0)
		fails++;
	return fails ? 1 : 0;
}

static void test_concurrent_open(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *t;
	struct buf want = BUF_INIT, shared = BUF_INIT;
	char *dir = dbpath("concurrent-open"), *s;
	int status = 0, bad = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(co_child(dir));
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		ok(0, "concurrent open: fork and wait");
		goto out;
	}
	if (!ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"%d threads opening trees and writing to them, one flushing and two writing "
		"elsewhere: no crash, no failure (%s %d)", CO_OPENERS,
		WIFSIGNALED(status) ? "killed by signal" : "exit status",
		WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status))) {
		skip(4, "the concurrent part did not finish");
		goto out;
	}
	small_options(&o);
	if (!is_int(kv_open(dir, &o, &db), 0, "concurrent open: reopen"))
		goto out;
	buf_append(&want, "default", 7);
	for (int i = 0; i < CO_OPENERS; i++) {
		for (int j = 0; j < CO_TREES; j++) {
			char name[32];
			int n = snprintf(name, sizeof(name), ",own-%d-%02d", i, j);
			buf_append(&want, name, (size_t)n);
			if (shared.len)
				buf_append(&shared, "|", 1);
			buf_append(&shared, name + 1, (size_t)n - 1);
			buf_append(&shared, "=x", 2);
		}
	}
	buf_append(&want, ",shared", 8);
	buf_append(&shared, "", 1);
	s = tree_names(db);
	is_str(s, want.data, "one tree per name, every one listed");
	free(s);
	kv_tree_open(db, "shared", NULL, &t);
	scan_is(scan(db, t, NULL, NULL, NULL, 1), shared.data,
		"the shared tree holds every thread's write");
	for (int i = 0; i < CO_OPENERS; i++) {
		for (int j = 0; j < CO_TREES; j++) {
			char name[32];
			snprintf(name, sizeof(name), "own-%d-%02d", i, j);
			kv_tree_open(db, name, NULL, &t);
			bad += count_keys(db, t, 0) != 1;
		}
	}
	is_int(bad, 0, "each thread's own trees hold its write and nothing else");
	is_int(count_keys(db, NULL, 0), 2 * CO_WRITES, "the default tree holds the writers' keys");
out:
	if (db)
		kv_close(db);
	buf_free(&want);
	buf_free(&shared);
	free(dir);
}

/* ------------------------------------------------------------ isolation */

static void put3(struct kv_db *db, struct kv_tree *a, struct kv_tree *b, const char *k)
{
	struct kv_batch *bt = kv_batch_new();
	char v[64];

	snprintf(v, sizeof(v), "D:%s", k);
	kv_batch_put_tree(bt, NULL, k, strlen(k), v, strlen(v));
	snprintf(v, sizeof(v), "A:%s", k);
	kv_batch_put_tree(bt, a, k, strlen(k), v, strlen(v));
	snprintf(v, sizeof(v), "B:%s", k);
	kv_batch_put_tree(bt, b, k, strlen(k), v, strlen(v));
	kv_write(db, bt, 0);
	kv_batch_free(bt);
}

static const char *iso_d = "k1=D:k1|k2=D:k2|k3=D:k3|k4=D:k4|k5=D:k5";
static const char *iso_a = "k2=A:k2|k3=A:k3|k4=A:k4|k5=A:k5|onlyA=a|p-1=A:p-1|p-2=A:p-2|p-3=A:p-3";
static const char *iso_b = "k1=B:k1|k4=B:k4|k5=B:k5|p-1=B:p-1|p-2=B:p-2|p-3=B:p-3";

/* Every read of the three trees after the isolation writes; `when` names the stage. */
static void check_isolation(struct kv_db *db, struct kv_tree *a, struct kv_tree *b,
			    const char *when)
{
	char name[160];

	snprintf(name, sizeof(name), "%s: the default tree holds its own values only", when);
	scan_is(scan(db, NULL, NULL, NULL, NULL, 1), iso_d, name);
	snprintf(name, sizeof(name), "%s: tree A holds its own values only", when);
	scan_is(scan(db, a, NULL, NULL, NULL, 1), iso_a, name);
	snprintf(name, sizeof(name), "%s: tree B holds its own values only", when);
	scan_is(scan(db, b, NULL, NULL, NULL, 1), iso_b, name);
	snprintf(name, sizeof(name), "%s: tree B scanned backward", when);
	scan_is(scan(db, b, NULL, NULL, NULL, -1),
		"p-3=B:p-3|p-2=B:p-2|p-1=B:p-1|k5=B:k5|k4=B:k4|k1=B:k1", name);
	snprintf(name, sizeof(name), "%s: the same key holds each tree's value", when);
	tget_is(db, a, NULL, "k4", "A:k4", name);
	tget_is(db, b, NULL, "k4", "B:k4", name);
	tget_is(db, NULL, NULL, "k4", "D:k4", name);
	snprintf(name, sizeof(name), "%s: a delete in A leaves B's and the default's key", when);
	tget_is(db, a, NULL, "k1", NULL, name);
	tget_is(db, b, NULL, "k1", "B:k1", name);
	tget_is(db, NULL, NULL, "k1", "D:k1", name);
	snprintf(name, sizeof(name), "%s: a range delete in B leaves A's and the default's keys",
		 when);
	tget_is(db, b, NULL, "k2", NULL, name);
	tget_is(db, a, NULL, "k2", "A:k2", name);
	tget_is(db, NULL, NULL, "k3", "D:k3", name);
	snprintf(name, sizeof(name), "%s: a key only A has is absent elsewhere", when);
	tget_is(db, b, NULL, "onlyA", NULL, name);
	tget_is(db, NULL, NULL, "onlyA", NULL, name);
	snprintf(name, sizeof(name), "%s: bounds [p-, p.) in A give A's prefix keys", when);
	scan_is(scan(db, a, NULL, "p-", "p.", 1), "p-1=A:p-1|p-2=A:p-2|p-3=A:p-3", name);
	snprintf(name, sizeof(name), "%s: bounds [p-, p.) in B, backward", when);
	scan_is(scan(db, b, NULL, "p-", "p.", -1), "p-3=B:p-3|p-2=B:p-2|p-1=B:p-1", name);
	{
		/* kv_iter_new_prefix has no tree: it reads the default tree */
		struct kv_iter *it = kv_iter_new_prefix(db, NULL, "k", 1);
		char *s;
		kv_iter_seek_first(it);
		s = walk(it, 1);
		kv_iter_free(it);
		snprintf(name, sizeof(name), "%s: kv_iter_new_prefix reads the default tree only",
			 when);
		scan_is(s, iso_d, name);
		it = kv_iter_new_prefix(db, NULL, "p-", 2);
		kv_iter_seek_first(it);
		s = walk(it, 1);
		kv_iter_free(it);
		snprintf(name, sizeof(name), "%s: a prefix only other trees have is empty in the "
			 "default tree", when);
		scan_is(s, "", name);
	}
	{
		struct kv_read_options ro = { .tree = a };
		struct kv_iter *it = kv_iter_new(db, &ro);
		size_t kl;
		const char *k;

		kv_iter_seek(it, "k1", 2);
		k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		snprintf(name, sizeof(name), "%s: seek in A skips A's deleted key (lands on k2)",
			 when);
		ok(k && kl == 2 && !memcmp(k, "k2", 2), "%s", name);
		kv_iter_seek_for_prev(it, "onlyB", 5);
		k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		snprintf(name, sizeof(name), "%s: seek_for_prev in A lands on A's onlyA", when);
		ok(k && kl == 5 && !memcmp(k, "onlyA", 5), "%s", name);
		kv_iter_free(it);
	}
}

static void test_isolation(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *a, *b;
	struct tables ta0, tb0, td0, ta1, tb1, td1;
	char *dir = dbpath("isolation");
	const char *keys[] = { "k1", "k2", "k3", "k4", "k5", "p-1", "p-2", "p-3" };
	int r;

	small_options(&o);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "isolation: open"))
		goto out;
	if (!is_int(kv_tree_open(db, "A", NULL, &a), 0, "open tree A") ||
	    !is_int(kv_tree_open(db, "B", NULL, &b), 0, "open tree B"))
		goto out;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put3(db, a, b, keys[i]);
	tput(db, a, "onlyA", "a", 0);
	is_int(tdel(db, a, "k1"), 0, "delete k1 in A");
	is_int(tdel_range(db, b, "k2", "k4"), 0, "delete [k2, k4) in B");
	is_int(kv_delete_range(db, "p", 1, "q", 1, 0), 0, "kv_delete_range [p, q) in the default tree");
	check_isolation(db, a, b, "memtables");

	is_int(kv_flush(db), 0, "flush every tree");
	tree_tables(db, "A", &ta0);
	tree_tables(db, "B", &tb0);
	tree_tables(db, NULL, &td0);
	ok(ta0.n >= 1 && tb0.n >= 1 && td0.n >= 1, "each tree has its own table (%d, %d, %d)",
	   ta0.n, tb0.n, td0.n);
	check_isolation(db, a, b, "tables");

	is_int(kv_compact_range_tree(db, a, NULL, 0, NULL, 0), 0, "kv_compact_range_tree of A");
	tree_tables(db, "A", &ta1);
	tree_tables(db, "B", &tb1);
	tree_tables(db, NULL, &td1);
	is_int(ta1.in_level0, 0, "A's tables left level 0");
	ok(ta1.n >= 1 && !tables_same(&ta0, &ta1), "A's tables were rewritten or moved");
	ok(tables_same(&tb0, &tb1), "B's tables are untouched by A's compaction");
	ok(tables_same(&td0, &td1), "the default tree's tables are untouched by A's compaction");
	check_isolation(db, a, b, "after compacting A");

	if (reopen(&db, dir, &o) < 0)
		goto out;
	kv_tree_open(db, "A", NULL, &a);
	kv_tree_open(db, "B", NULL, &b);
	check_isolation(db, a, b, "after reopen");
	/* a compaction of the default tree: its range tombstone must not reach A or B */
	is_int(kv_compact_range_tree(db, NULL, NULL, 0, NULL, 0), 0,
	       "kv_compact_range_tree of the default tree");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "kv_compact_range (the default tree)");
	check_isolation(db, a, b, "after compacting the default tree");
	is_int(kv_verify(db, NULL, NULL), 0, "kv_verify finds nothing wrong");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/* ------------------------------------------------------------ snapshots */

struct snap_writer {
	struct kv_db *db;
	struct kv_tree *t[3];
	int id, n, failures;
};

/* Batches setting ctr-<id> to the same number in all three trees, with filler. */
static void *snap_writer_main(void *arg)
{
	struct snap_writer *w = arg;
	struct kv_batch *b = kv_batch_new();
	char k[32], v[32], fk[32], fill[200];

	memset(fill, 'f', sizeof(fill));
	snprintf(k, sizeof(k), "ctr-%d", w->id);
	for (int i = 1; i <= w->n; i++) {
		kv_batch_clear(b);
		snprintf(v, sizeof(v), "%d", i);
		snprintf(fk, sizeof(fk), "fill-%d-%06d", w->id, i);
		for (int t = 0; t < 3; t++) {
			kv_batch_put_tree(b, w->t[t], k, strlen(k), v, strlen(v));
			/* unequal filler, so the trees flush at different times */
			kv_batch_put_tree(b, w->t[t], fk, strlen(fk), fill, (size_t)(t * 90 + 10));
		}
		if (kv_write(w->db, b, 0) != 0)
			w->failures++;
	}
	kv_batch_free(b);
	return NULL;
}

static int read_ctr(struct kv_db *db, struct kv_tree *t, const struct kv_snapshot *s,
		    const char *k)
{
	char *v = NULL;
	size_t vl;
	int r = kv_get_tree(db, t, s, k, strlen(k), &v, &vl), n = -1;

	if (r == 0) {
		char tmp[32];
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(vl < 31 ? vl : 31), v);
		n = atoi(tmp);
	} else if (r != -ENOENT) {
		n = -2;
	}
	free(v);
	return n;
}

static void test_snapshots(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *a, *b, *c;
	const struct kv_snapshot *s1, *s2;
	struct kv_batch *bt;
	char *dir = dbpath("snapshots");
	int r;

	small_options(&o);
	o.write_buffer_size = 16 * 1024;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "snapshots: open"))
		goto out;
	kv_tree_open(db, "A", NULL, &a);
	kv_tree_open(db, "B", NULL, &b);
	kv_tree_open(db, "C", NULL, &c);

	bt = kv_batch_new();
	kv_batch_put_tree(bt, a, "x", 1, "a1", 2);
	kv_batch_put_tree(bt, b, "x", 1, "b1", 2);
	kv_write(db, bt, 0);
	s1 = kv_snapshot_new(db);
	tput(db, a, "x", "a2", 0);
	s2 = kv_snapshot_new(db);
	kv_batch_clear(bt);
	kv_batch_put_tree(bt, b, "x", 1, "b2", 2);
	kv_batch_delete_tree(bt, a, "x", 1);
	kv_batch_put_tree(bt, a, "y", 1, "a3", 2);
	kv_write(db, bt, 0);
	kv_batch_free(bt);

	for (int round = 0; round < 2; round++) {
		const char *when = round ? "after flushing and compacting both trees" : "memtables";
		char name[200];
		snprintf(name, sizeof(name), "%s: the first snapshot sees A and B as they were", when);
		tget_is(db, a, s1, "x", "a1", name);
		tget_is(db, b, s1, "x", "b1", name);
		snprintf(name, sizeof(name), "%s: the second sees A's later write, not B's", when);
		tget_is(db, a, s2, "x", "a2", name);
		tget_is(db, b, s2, "x", "b1", name);
		snprintf(name, sizeof(name), "%s: the latest state has both later writes", when);
		tget_is(db, a, NULL, "x", NULL, name);
		tget_is(db, b, NULL, "x", "b2", name);
		snprintf(name, sizeof(name), "%s: an iterator at the second snapshot over A", when);
		scan_is(scan(db, a, s2, NULL, NULL, 1), "x=a2", name);
		snprintf(name, sizeof(name), "%s: an iterator at the first snapshot over B", when);
		scan_is(scan(db, b, s1, NULL, NULL, -1), "x=b1", name);
		snprintf(name, sizeof(name), "%s: a tree created before the snapshots is empty in "
			 "them", when);
		scan_is(scan(db, c, s1, NULL, NULL, 1), "", name);
		if (!round) {
			is_int(kv_compact_range_tree(db, a, NULL, 0, NULL, 0), 0, "compact A");
			is_int(kv_compact_range_tree(db, b, NULL, 0, NULL, 0), 0, "compact B");
		}
	}
	kv_snapshot_release(db, s1);
	kv_snapshot_release(db, s2);

	/* concurrent writers of cross-tree batches; every snapshot sees equal counters */
	{
		enum { NW = 2 };
		struct snap_writer w[NW];
		pthread_t th[NW];
		struct kv_tree *ts[3] = { NULL, a, c };
		int n = scaled(1500, 500), reads = 0, bad = 0, fails = 0, done;
		struct kv_stats st0, st1;

		kv_get_stats(db, &st0);
		for (int i = 0; i < NW; i++) {
			w[i] = (struct snap_writer){ db, { ts[0], ts[1], ts[2] }, i, n, 0 };
			pthread_create(&th[i], NULL, snap_writer_main, &w[i]);
		}
		do {
			const struct kv_snapshot *s = kv_snapshot_new(db);
			done = 1;
			for (int i = 0; i < NW; i++) {
				char k[32];
				int v0, v1, v2;
				snprintf(k, sizeof(k), "ctr-%d", i);
				v0 = read_ctr(db, ts[0], s, k);
				v1 = read_ctr(db, ts[1], s, k);
				v2 = read_ctr(db, ts[2], s, k);
				if ((v0 != v1 || v1 != v2 || v0 < -1) && bad++ < 3)
					diag("snapshot sees ctr-%d = %d, %d, %d in the three trees", i,
					     v0, v1, v2);
				done &= v0 == n;
				reads++;
			}
			kv_snapshot_release(db, s);
		} while (!done);
		for (int i = 0; i < NW; i++) {
			pthread_join(th[i], NULL);
			fails += w[i].failures;
		}
		kv_get_stats(db, &st1);
		is_int(fails, 0, "%d writers of batches over three trees see no failure", NW);
		is_int(bad, 0, "every one of %d snapshot reads saw the same counter in all three "
		       "trees", reads);
		ok(st1.flushes > st0.flushes, "memtables were flushed meanwhile (%llu flushes)",
		   (unsigned long long)(st1.flushes - st0.flushes));
	}
out:
	if (db)
		kv_close(db);
	free(dir);
}

/* ------------------------------------------------------------ per-tree flushes and logs */

static int write_big(struct kv_db *db, struct kv_tree *t, int from, int n)
{
	char k[32], v[256];
	int fails = 0;

	for (int i = from; i < from + n; i++) {
		snprintf(k, sizeof(k), "big%07d", i);
		snprintf(v, sizeof(v), "%07d-%0200d", i, i);
		fails += tput(db, t, k, v, 0) != 0;
	}
	return fails;
}

static int check_big(struct kv_db *db, struct kv_tree *t, int n)
{
	char k[32], v[256];
	int bad = 0;

	for (int i = 0; i < n; i++) {
		char *got = NULL;
		size_t gl;
		snprintf(k, sizeof(k), "big%07d", i);
		snprintf(v, sizeof(v), "%07d-%0200d", i, i);
		if (kv_get_tree(db, t, NULL, k, strlen(k), &got, &gl) != 0 || gl != strlen(v) ||
		    memcmp(got, v, gl))
			bad++;
		free(got);
	}
	return bad;
}

static int check_small(struct kv_db *db, struct kv_tree *t, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		char k[32], v[32], *got = NULL;
		size_t gl;
		snprintf(k, sizeof(k), "s%04d", i);
		snprintf(v, sizeof(v), "small-%d", i);
		if (kv_get_tree(db, t, NULL, k, strlen(k), &got, &gl) != 0 || gl != strlen(v) ||
		    memcmp(got, v, gl))
			bad++;
		free(got);
	}
	return bad;
}

static void test_logs(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *big, *small;
	struct kv_stats st0, st1;
	struct kv_env *fe = NULL;
	struct tables ts;
	struct kv_batch *bt;
	uint64_t logs[4096], small_log;
	char *dir = dbpath("logs");
	int nbig = scaled(1500, 1000), nsmall = 20, nl, r, total_big;

	small_options(&o);
	o.write_buffer_size = 16 * 1024;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "logs: open"))
		goto out;
	kv_tree_open(db, "big", NULL, &big);
	kv_tree_open(db, "small", NULL, &small);

	/* 1: only big is written; the empty default and small trees pin no log */
	kv_get_stats(db, &st0);
	is_int(write_big(db, big, 0, nbig), 0, "write %d keys to tree big", nbig);
	kv_get_stats(db, &st1);
	ok(st1.flushes - st0.flushes >= 5, "big was flushed many times (%llu)",
	   (unsigned long long)(st1.flushes - st0.flushes));
	/* the log thread closes retired logs and deletions run in the background */
	wait_idle(db);
	nl = log_numbers(dir, logs, 4096);
	ok(nl >= 1 && nl <= 3, "with only big written, old logs are deleted as it flushes "
	   "(%d logs left; empty trees keep none)", nl);

	/* 2: small gets a few keys, in the active log; then big flushes many more times */
	bt = kv_batch_new();
	for (int i = 0; i < nsmall; i++) {
		char k[32], v[32];
		snprintf(k, sizeof(k), "s%04d", i);
		snprintf(v, sizeof(v), "small-%d", i);
		kv_batch_put_tree(bt, small, k, strlen(k), v, strlen(v));
	}
	is_int(kv_write(db, bt, KV_SYNC), 0, "write %d keys to tree small", nsmall);
	kv_batch_free(bt);
	nl = log_numbers(dir, logs, 4096);
	small_log = nl > 0 ? logs[nl - 1] : 0;
	kv_get_stats(db, &st0);
	is_int(write_big(db, big, nbig, nbig), 0, "write %d more keys to big", nbig);
	total_big = 2 * nbig;
	kv_get_stats(db, &st1);
	ok(st1.flushes - st0.flushes >= 5, "big was flushed many times again (%llu)",
	   (unsigned long long)(st1.flushes - st0.flushes));
	tree_tables(db, "small", &ts);
	is_int(ts.n, 0, "small has no table: its data is only in its memtable and the log");
	ok(small_log && file_exists(dir, small_log, ".log"),
	   "the log holding small's data (%06llu.log) is kept across big's flushes",
	   (unsigned long long)small_log);
	nl = log_numbers(dir, logs, 4096);
	ok(nl > 3, "the logs after it are kept too (%d logs)", nl);
	wait_idle(db);
	r = open_logs(dir);
	ok(nl > DB_RETIRED_OPEN_MAX + 1 && r >= 1 && r <= DB_RETIRED_OPEN_MAX + 1,
	   "but at most %d of them are held open, unsynced (%d of %d)", DB_RETIRED_OPEN_MAX + 1,
	   r, nl);
	/*
	 * Logs older than small's that were still there when it wrote (the one of
	 * a memtable being flushed) may be kept too: small's log number dates from
	 * its creation and says only that nothing of it is in logs before that.
	 * Not a promise either way; shown for people.
	 */
	{
		int older = 0;
		for (int i = 0; i < nl; i++)
			older += logs[i] < small_log;
		diag("small's log is %06llu.log; %d older logs are kept, %d logs in all",
		     (unsigned long long)small_log, older, nl);
	}

	/* 3: a clean reopen: small's data comes back from the old log, big's from tables */
	if (reopen(&db, dir, &o) < 0)
		goto out;
	kv_tree_open(db, "big", NULL, &big);
	kv_tree_open(db, "small", NULL, &small);
	is_int(check_small(db, small, nsmall), 0, "after reopen small's keys are there");
	is_int(check_big(db, big, total_big), 0, "and every one of big's %d keys", total_big);
	is_int(count_files(dir, ".log"), 1, "after reopen only the new log remains");
	is_int(count_keys(db, NULL, 0), 0, "the default tree is still empty");

	/* 4: the same across a power cut: small's synced keys in an old log survive it */
	kv_close(db);
	db = NULL;
	fe = env_fault_new(env_posix());
	o.env = fe;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "logs: open on the fault environment"))
		goto out;
	kv_tree_open(db, "big", NULL, &big);
	kv_tree_open(db, "small", NULL, &small);
	is_int(tdel(db, small, "s0000"), 0, "delete one of small's keys (not synced yet)");
	kv_get_stats(db, &st0);
	is_int(write_big(db, big, total_big, nbig), 0, "write %d more keys to big", nbig);
	total_big += nbig;
	is_int(tput(db, big, "synced", "yes", KV_SYNC), 0, "one synced write to big");
	kv_get_stats(db, &st1);
	ok(st1.flushes - st0.flushes >= 5, "big was flushed many times (%llu)",
	   (unsigned long long)(st1.flushes - st0.flushes));
	env_fault_power_cut_after(fe, 0);
	ok(tput(db, small, "late", "x", 0) != 0, "after the power cut writes fail");
	kv_close(db);
	db = NULL;
	is_int(env_fault_drop_unsynced(fe), 0, "keep only what was synced");
	o.env = NULL;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "the database opens after the power cut")) {
		diag("kv_open: %s", kv_strerror(r));
		goto out;
	}
	kv_tree_open(db, "big", NULL, &big);
	kv_tree_open(db, "small", NULL, &small);
	tget_is(db, small, NULL, "s0000", NULL,
		"small's delete, in a log older than big's synced write, survived");
	is_int(check_small(db, small, nsmall) , 1, "the rest of small's keys are there");
	is_int(check_big(db, big, total_big), 0, "every one of big's keys is there");
	tget_is(db, big, NULL, "synced", "yes", "big's synced write is there");
	tget_is(db, small, NULL, "late", NULL, "the write refused after the cut is not");
	is_int(kv_verify(db, NULL, NULL), 0, "kv_verify finds nothing wrong");

	/* 5: flushing small frees its log */
	tput(db, small, "s0000", "small-0", 0);
	write_big(db, big, 0, 200);
	is_int(kv_flush(db), 0, "kv_flush");
	tree_tables(db, "small", &ts);
	ok(ts.n >= 1, "small has a table now");
	wait_idle(db);
	is_int(count_files(dir, ".log"), 1, "once every tree is flushed only the active log remains");
	is_int(check_small(db, small, nsmall), 0, "small's keys read from its table");

	/* 6: a tree pinning old logs is dropped: nothing needs them any more */
	{
		struct kv_tree *pin;
		kv_tree_open(db, "pin", NULL, &pin);
		tput(db, pin, "p", "1", 0);
		write_big(db, big, 0, nbig);
		nl = log_numbers(dir, logs, 4096);
		ok(nl > 3, "a tree with data in an old log keeps logs (%d)", nl);
		is_int(kv_tree_drop(db, pin), 0, "drop it");
		write_big(db, big, 0, 200);   /* a flush or two, for their deletions */
		wait_idle(db);
		nl = log_numbers(dir, logs, 4096);
		ok(nl >= 1 && nl <= 3, "then its logs are deleted (%d left)", nl);
	}
out:
	if (db)
		kv_close(db);
	if (fe)
		env_fault_free(fe);
	free(dir);
}

/* ------------------------------------------------------------ drop */

static void fill_tree(struct kv_db *db, struct kv_tree *t, const char *tag, int n)
{
	struct kv_batch *b = kv_batch_new();

	for (int i = 0; i < n; i++) {
		char k[32], v[128];
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "%s-%06d-%080d", tag, i, i);
		kv_batch_put_tree(b, t, k, strlen(k), v, strlen(v));
		if (kv_batch_count(b) == 50 || i == n - 1) {
			kv_write(db, b, 0);
			kv_batch_clear(b);
		}
	}
	kv_batch_free(b);
}

/*
 * How many keys of fill_tree(tag, n) tree t holds, in order and with their
 * values; -1 if any other key in their range is there.
 */
static int filled(struct kv_db *db, struct kv_tree *t, const char *tag, int n)
{
	struct kv_read_options ro = { .tree = t, .lower = "key", .lower_len = 3, .upper = "kez",
				      .upper_len = 3 };
	struct kv_iter *it = kv_iter_new(db, &ro);
	int good = 0, i = 0;

	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it), i++) {
		char k[32], v[128];
		size_t kl, vl;
		const char *gk = kv_iter_key(it, &kl), *gv = kv_iter_value(it, &vl);
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "%s-%06d-%080d", tag, i, i);
		if (i >= n || kl != strlen(k) || memcmp(gk, k, kl) || vl != strlen(v) ||
		    memcmp(gv, v, vl)) {
			good = -1;
			break;
		}
		good++;
	}
	if (kv_iter_status(it))
		good = -1;
	kv_iter_free(it);
	return good;
}

static void test_drop(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *gone, *keep, *gone2, *fresh;
	struct kv_iter *pinned;
	struct kv_read_options ro = { 0 };
	struct tables tg, tk0, tk1;
	struct kv_batch *bt;
	char *dir = dbpath("drop");
	int n = scaled(3000, 1500), r, missing;
	long c;

	small_options(&o);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "drop: open"))
		goto out;
	kv_tree_open(db, "gone", NULL, &gone);
	kv_tree_open(db, "keep", NULL, &keep);
	fill_tree(db, gone, "G", n);
	fill_tree(db, keep, "K", n);
	fill_tree(db, NULL, "D", n / 10);
	kv_flush(db);
	/* more for gone and keep, left in their memtables */
	tput(db, gone, "mem-only", "g", 0);
	tput(db, keep, "mem-only", "k", 0);
	/*
	 * The trees' tables are listed here and looked for after the drop: let
	 * the background compactions the fills started finish first, so that
	 * none changes them in between on a slow machine.
	 */
	ok(wait_idle(db), "drop: background flushes and compactions settle");
	tree_tables(db, "gone", &tg);
	tree_tables(db, "keep", &tk0);
	ok(tg.n >= 2, "gone has tables (%d) and a memtable", tg.n);

	ro.tree = gone;
	pinned = kv_iter_new(db, &ro);
	r = kv_tree_drop(db, gone);
	is_int(r, 0, "kv_tree_drop");
	is_int(test_tree_listed(db, "gone"), 0, "a dropped tree is not listed");
	is_int(test_tree_listed(db, "keep"), 1, "the other tree still is");
	c = 0;
	for (kv_iter_seek_first(pinned); kv_iter_valid(pinned); kv_iter_next(pinned))
		c++;
	is_int(c, n + 1, "an iterator made before the drop still reads what it saw");
	is_int(kv_iter_status(pinned), 0, "with no error");
	missing = 0;
	for (int i = 0; i < tg.n; i++)
		missing += !file_exists(dir, tg.num[i], ".sst");
	is_int(missing, 0, "the dropped tree's tables stay while a reader holds them");
	kv_iter_free(pinned);
	missing = 0;
	for (int i = 0; i < tg.n; i++)
		missing += !file_exists(dir, tg.num[i], ".sst");
	is_int(missing, tg.n, "once no reader holds them, the dropped tree's %d tables are deleted",
	       tg.n);

	is_int(tput(db, gone, "k", "v", 0), -ENOENT, "a write to a dropped tree gives -ENOENT");
	bt = kv_batch_new();
	kv_batch_put_tree(bt, keep, "both", 4, "k", 1);
	kv_batch_put_tree(bt, gone, "both", 4, "g", 1);
	is_int(kv_write(db, bt, 0), -ENOENT,
	       "a batch over a live and a dropped tree gives -ENOENT");
	kv_batch_free(bt);
	tget_is(db, keep, NULL, "both", NULL, "and none of it is applied to the live tree");
	tget_is(db, gone, NULL, "key000001", NULL,
		"a read through the dropped handle finds none of its table data");
	tget_is(db, gone, NULL, "mem-only", NULL,
		"nor the data it had only in its memtable");
	c = count_keys(db, gone, 0);
	is_int(c, 0, "an iterator over the dropped tree finds nothing");
	is_int(filled(db, keep, "K", n), n, "the other tree keeps all its keys");
	tget_is(db, keep, NULL, "mem-only", "k", "and its memtable");
	is_int(filled(db, NULL, "D", n / 10), n / 10, "and so does the default tree");
	tree_tables(db, "keep", &tk1);
	ok(tables_same(&tk0, &tk1), "the other tree's tables are untouched");
	is_int(kv_tree_drop(db, NULL), -EINVAL, "the default tree cannot be dropped (NULL)");
	{
		struct kv_tree *d;
		kv_tree_open(db, "default", NULL, &d);
		is_int(kv_tree_drop(db, d), -EINVAL, "nor by its handle");
	}

	r = kv_tree_open(db, "gone", NULL, &fresh);
	is_int(r, 0, "a new tree may take the dropped one's name");
	ok(fresh != gone, "it is a new tree, not the dropped handle");
	is_int(count_keys(db, fresh, 0), 0, "and it is empty");
	tget_is(db, fresh, NULL, "mem-only", NULL, "with nothing of the dropped memtable");
	is_int(tput(db, fresh, "new", "1", 0), 0, "it takes writes");
	is_int(tput(db, gone, "k", "v", 0), -ENOENT, "the dropped handle still refuses them");

	/* a second tree dropped with data in tables and in the log only, then reopen */
	kv_tree_open(db, "gone2", NULL, &gone2);
	fill_tree(db, gone2, "G2", n / 3);
	kv_flush(db);
	tree_tables(db, "gone2", &tg);
	tput(db, gone2, "log-only", "x", 0);
	is_int(kv_tree_drop(db, gone2), 0, "drop gone2, which has data in tables and the log");

	if (reopen(&db, dir, &o) < 0)
		goto out;
	is_int(test_tree_listed(db, "gone2"), 0, "the drop survives a reopen");
	is_int(test_tree_listed(db, "gone"), 1, "the new tree of the same name does too");
	missing = 0;
	for (int i = 0; i < tg.n; i++)
		missing += !file_exists(dir, tg.num[i], ".sst");
	is_int(missing, tg.n, "gone2's tables are gone from the directory");
	{
		struct kv_stats st;
		int files = 0;
		kv_get_stats(db, &st);
		for (int l = 0; l < 8; l++)
			files += st.files_per_level[l];
		is_int(count_files(dir, ".sst"), files, "no table is left behind: the directory "
		       "holds exactly the live ones");
	}
	kv_tree_open(db, "gone", NULL, &fresh);
	scan_is(scan(db, fresh, NULL, NULL, NULL, 1), "new=1",
		"after reopen the new tree holds its own write only (the dropped tree's log "
		"records do not come back)");
	kv_tree_open(db, "gone2", NULL, &gone2);
	is_int(count_keys(db, gone2, 0), 0, "a tree re-created after a dropped one is empty");
	tget_is(db, gone2, NULL, "log-only", NULL, "even of what the old one had in the log");
	kv_tree_open(db, "keep", NULL, &keep);
	is_int(filled(db, keep, "K", n), n, "the other tree is intact after reopen");
	is_int(kv_verify(db, NULL, NULL), 0, "kv_verify finds nothing wrong");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/*
 * A drop after a background error: the flush of the tree's full memtable
 * failed, so the memtable will never be flushed.  The drop must fail with
 * the database's error (it refuses every change until reopened) and not wait
 * for that flush.  The child does it under an alarm, so a hang is reported;
 * it sends how many batches were acknowledged and what the calls returned.
 */
struct drop_err_result {
	int acked, write_err, drop_r, open_r;
};

static void drop_err_child(const char *dir, int fd)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct drop_err_result res = { 0, 0, 1, 1 };
	struct kv_options o;
	struct kv_db *db;
	struct kv_tree *t, *u;
	char v[200];

	small_options(&o);
	o.env = fe;
	o.write_buffer_size = 16 * 1024;
	if (kv_open(dir, &o, &db) != 0 || kv_tree_open(db, "t", NULL, &t) != 0)
		_exit(3);
	env_fault_inject(fe, ENV_OP_OPEN, 0, -1, -EIO, ".sst");   /* every flush fails */
	memset(v, 'v', sizeof(v));
	v[sizeof(v) - 1] = 0;
	for (int i = 0; i < 2000 && !res.write_err; i++) {
		char k[32];
		snprintf(k, sizeof(k), "k%06d", i);
		res.write_err = tput(db, t, k, v, 0);
		if (!res.write_err)
			res.acked++;
	}
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	alarm(3);
	res.drop_r = kv_tree_drop(db, t);
	res.open_r = kv_tree_open(db, "u", NULL, &u);
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	kv_close(db);
	env_fault_free(fe);
	_exit(0);
}

static void test_drop_after_error(void)
{
	struct drop_err_result res[2];
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *t;
	char *dir = dbpath("drop-after-error");
	int fds[2], status = 0, got = 0;
	ssize_t n;
	pid_t pid;

	memset(res, 0, sizeof(res));
	if (pipe(fds) != 0) {
		ok(0, "drop after an error: pipe");
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		drop_err_child(dir, fds[1]);
	}
	close(fds[1]);
	while (got < 2 && (n = read(fds[0], &res[got], sizeof(res[0]))) == (ssize_t)sizeof(res[0]))
		got++;
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || got < 1) {
		ok(0, "drop after an error: the child ran (status %#x)", status);
		goto out;
	}
	is_int(res[0].write_err, -EIO, "a failed flush makes writes fail with its error (after "
	       "%d batches)", res[0].acked);
	if (!ok(got == 2, "kv_tree_drop returns after a background error (%s)",
		WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "it hung: killed after 3 s" :
		"it returned")) {
		skip(2, "kv_tree_drop did not return");
	} else {
		is_int(res[1].drop_r, -EIO, "and fails with the database's error");
		is_int(res[1].open_r, -EIO, "as does creating a tree");
	}
	small_options(&o);
	if (!is_int(kv_open(dir, &o, &db), 0, "drop after an error: reopen"))
		goto out;
	is_int(test_tree_listed(db, "t"), 1, "the tree whose drop failed is still there");
	kv_tree_open(db, "t", NULL, &t);
	is_int(count_keys(db, t, 0), res[0].acked, "with every acknowledged batch");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/* ------------------------------------------------------------ the manifest's tree records */

/* The edits of the manifest CURRENT names, decoded; returns how many, or -errno. */
static int read_manifest(const char *dir, struct version_edit *edits, int max)
{
	char *cp = xasprintf("%s/CURRENT", dir), *cur = NULL, *mp = NULL;
	struct env_file *f = NULL;
	struct wal_reader *rd = NULL;
	struct slice rec;
	uint64_t size;
	size_t cl;
	int r, n = 0;

	if ((r = env_read_file(env_posix(), cp, &cur, &cl)) < 0 || cl < 2)
		goto out;
	cur[cl - 1] = 0;
	mp = xasprintf("%s/%s", dir, cur);
	if ((r = env_file_size(env_posix(), mp, &size)) < 0 ||
	    (r = env_open_read(env_posix(), mp, &f)) < 0)
		goto out;
	rd = wal_reader_new(f, size, mp);
	while (n < max && (r = wal_read(rd, &rec)) > 0) {
		if ((r = edit_decode(&edits[n], rec, mp)) < 0)
			goto out;
		n++;
	}
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(cp);
	free(cur);
	free(mp);
	return r < 0 ? r : n;
}

static void free_edits(struct version_edit *edits, int n)
{
	for (int i = 0; i < n; i++)
		edit_free(&edits[i]);
}

/*
 * What man/smolfs.5 says of the manifest and trees: a tree's edits carry
 * tag 8 (id and name), a drop is tag 9, ids are never reused (tag 10), and a
 * new manifest is one record per live tree, the first (the default tree's)
 * with the format and the global fields.
 */
static void test_manifest(void)
{
	enum { MAXE = 256 };
	struct version_edit *ed = xcalloc(MAXE, sizeof(*ed));
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *a, *b, *c, *d, *e;
	struct tables ta;
	char *dir = dbpath("manifest");
	uint32_t ia, ib, ic, id, ie = 0;
	int n, r, created_b = 0, dropped_b = 0, named = 1, logged = 1;

	small_options(&o);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "manifest: open"))
		goto out;
	kv_tree_open(db, "A", NULL, &a);
	kv_tree_open(db, "B", NULL, &b);
	kv_tree_open(db, "C", NULL, &c);
	ia = db_tree_id(a);
	ib = db_tree_id(b);
	ic = db_tree_id(c);
	ok(ia && ib && ic && ia != ib && ib != ic && ia != ic, "trees get distinct ids > 0 "
	   "(%u, %u, %u)", ia, ib, ic);
	tput(db, a, "a", "1", 0);
	tput(db, b, "b", "1", 0);
	kv_flush(db);
	kv_tree_drop(db, b);
	kv_tree_open(db, "D", NULL, &d);
	id = db_tree_id(d);
	ok(id > ib && id > ic, "a tree created after a drop does not reuse its id (%u)", id);
	tree_tables(db, "A", &ta);
	kv_close(db);
	db = NULL;

	n = read_manifest(dir, ed, MAXE);
	ok(n >= 6, "the manifest of that session holds its edits (%d)", n);
	for (int i = 0; i < n; i++) {
		if (ed[i].tree == ib && ed[i].tree_name && !strcmp(ed[i].tree_name, "B") &&
		    ed[i].has_log_number && !ed[i].drop_tree)
			created_b++;
		if (ed[i].tree == ib && ed[i].drop_tree)
			dropped_b++;
		if (ed[i].tree != 0 && !ed[i].tree_name)
			named = 0;
		if (!ed[i].has_log_number)
			logged = 0;
	}
	ok(created_b >= 1, "B's creation is an edit with tag 8 (id %u, \"B\") and a log number", ib);
	is_int(dropped_b, 1, "its drop is one edit with tag 9 for its id");
	ok(named, "every edit of a tree other than the default names it (tag 8)");
	ok(logged, "every edit carries its tree's log number (tag 1)");
	free_edits(ed, n > 0 ? n : 0);

	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "manifest: reopen"))
		goto out;
	kv_tree_open(db, "E", NULL, &e);
	ie = db_tree_id(e);
	ok(ie > id, "after reopen, ids are still not reused (%u > %u)", ie, id);
	kv_tree_drop(db, e);
	kv_close(db);
	db = NULL;
	r = kv_open(dir, &o, &db);   /* a new manifest: its snapshot only */
	if (!is_int(r, 0, "manifest: reopen again"))
		goto out;
	kv_close(db);
	db = NULL;
	n = read_manifest(dir, ed, MAXE);
	is_int(n, 4, "a new manifest is one record per live tree (default, A, C, D)");
	if (n >= 1) {
		ok(ed[0].tree == 0 && !ed[0].tree_name && ed[0].has_format && ed[0].format == 1 &&
		   ed[0].has_next_file && ed[0].has_last_seq && ed[0].has_next_tree,
		   "the first is the default tree's, with the format and the global fields");
		ok(ed[0].next_tree > ie, "its next tree id is above every id ever used, "
		   "dropped ones too (%u)", ed[0].next_tree);
	}
	for (int i = 1; i < n; i++) {
		const char *want = ed[i].tree == ia ? "A" : ed[i].tree == ic ? "C" :
				   ed[i].tree == id ? "D" : "?";
		ok(ed[i].tree_name && !strcmp(ed[i].tree_name, want) && !ed[i].has_format &&
		   !ed[i].drop_tree && ed[i].has_log_number && ed[i].log_number == ed[0].log_number,
		   "record %d: tree %u \"%s\" with tag 8 and the same log number as the first", i,
		   ed[i].tree, ed[i].tree_name ? ed[i].tree_name : "(none)");
		if (ed[i].tree == ia)
			is_int(ed[i].nadds, ta.n, "A's record lists its %d tables", ta.n);
	}
	free_edits(ed, n > 0 ? n : 0);
out:
	if (db)
		kv_close(db);
	free(ed);
	free(dir);
}

/* ------------------------------------------------------------ reads stay in their tree */

static void test_scan_bytes(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *a, *b;
	struct kv_batch *bt;
	struct kv_stats st0, st1;
	struct tables ta, tb;
	char *dir = dbpath("scanbytes"), *big = xmalloc(1024);
	uint64_t rs = 0x5ca9b17e5ull, dB, dA;
	int n = scaled(3000, 500), r;
	long c;

	kv_options_init(&o);
	o.write_buffer_size = 1 << 20;
	o.target_file_size = 1 << 20;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "scan bytes: open"))
		goto out;
	kv_tree_open(db, "A", NULL, &a);
	kv_tree_open(db, "B", NULL, &b);
	bt = kv_batch_new();
	for (int i = 0; i < n; i++) {
		char k[32], v[32];
		snprintf(k, sizeof(k), "row%07d", i);
		for (int j = 0; j < 1024; j += 8) {
			uint64_t x = rand_next(&rs);
			memcpy(big + j, &x, 8);
		}
		snprintf(v, sizeof(v), "b%d", i);
		kv_batch_put_tree(bt, a, k, strlen(k), big, 1024);
		kv_batch_put_tree(bt, b, k, strlen(k), v, strlen(v));
		if (kv_batch_count(bt) >= 64 || i == n - 1) {
			kv_write(db, bt, 0);
			kv_batch_clear(bt);
		}
	}
	kv_batch_free(bt);
	is_int(kv_compact_range_tree(db, a, NULL, 0, NULL, 0), 0, "compact A");
	is_int(kv_compact_range_tree(db, b, NULL, 0, NULL, 0), 0, "compact B");
	/* a cold block cache */
	if (reopen(&db, dir, &o) < 0)
		goto out;
	kv_tree_open(db, "A", NULL, &a);
	kv_tree_open(db, "B", NULL, &b);
	tree_tables(db, "A", &ta);
	tree_tables(db, "B", &tb);
	ok(ta.n >= 1 && tb.n >= 1, "both trees are in tables (A %d files, %llu bytes; B %d, %llu)",
	   ta.n, (unsigned long long)ta.bytes, tb.n, (unsigned long long)tb.bytes);

	kv_get_stats(db, &st0);
	c = count_keys(db, b, 1);
	kv_get_stats(db, &st1);
	dB = st1.bytes_read_sst - st0.bytes_read_sst;
	is_int(c, n, "a scan of B sees its %d keys", n);
	diag("scan of B read %llu bytes; B's tables hold %llu bytes, A's %llu",
	     (unsigned long long)dB, (unsigned long long)tb.bytes, (unsigned long long)ta.bytes);
	ok(dB < tb.bytes * 2 + 64 * 1024,
	   "the scan of B read about B's bytes only (%llu < 2 x %llu + 64 KiB)",
	   (unsigned long long)dB, (unsigned long long)tb.bytes);
	ok(dB * 10 < ta.bytes, "and far less than A's tables (%llu x 10 < %llu)",
	   (unsigned long long)dB, (unsigned long long)ta.bytes);
	ok(dB >= tb.bytes / 2, "the counter does see B's reads (%llu >= %llu / 2)",
	   (unsigned long long)dB, (unsigned long long)tb.bytes);

	/* the control: a scan of A does show up as A's bytes */
	kv_get_stats(db, &st0);
	c = count_keys(db, a, 1);
	kv_get_stats(db, &st1);
	dA = st1.bytes_read_sst - st0.bytes_read_sst;
	diag("scan of A read %llu bytes", (unsigned long long)dA);
	is_int(c, n, "a scan of A sees its %d keys", n);
	ok(dA >= ta.bytes / 2, "and reads about A's bytes (%llu >= %llu / 2)",
	   (unsigned long long)dA, (unsigned long long)ta.bytes);
	/* point reads of B do not touch A either */
	kv_get_stats(db, &st0);
	for (int i = 0; i < n; i += 7) {
		char k[32], *v = NULL;
		size_t vl;
		snprintf(k, sizeof(k), "row%07d", i);
		kv_get_tree(db, b, NULL, k, strlen(k), &v, &vl);
		free(v);
	}
	kv_get_stats(db, &st1);
	dB = st1.bytes_read_sst - st0.bytes_read_sst;
	ok(dB < tb.bytes * 2 + 64 * 1024, "point reads of B read at most B's bytes (%llu)",
	   (unsigned long long)dB);
out:
	if (db)
		kv_close(db);
	free(big);
	free(dir);
}

/* ------------------------------------------------------------ compression */

static void test_compression(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *raw, *z3, *dflt;
	struct kv_batch *bt;
	struct tables tr, tz, td;
	char *dir = dbpath("compression");
	int n = scaled(2000, 300), r, bad = 0;
	const size_t vlen = 400;
	uint64_t payload = 0;

	small_options(&o);
	o.write_buffer_size = 256 * 1024;
	o.compression_level = 1;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "compression: open"))
		goto out;
	open_tree(db, "raw", 0, &raw);
	open_tree(db, "z3", 3, &z3);
	open_tree(db, "dflt", -1, &dflt);
	bt = kv_batch_new();
	for (int i = 0; i < n; i++) {
		char k[32], v[512];
		size_t p = 0;
		snprintf(k, sizeof(k), "c%06d", i);
		while (p < vlen) {
			int m = snprintf(v + p, sizeof(v) - p, "the row %d says hello again; ", i % 50);
			p += (size_t)m;
		}
		kv_batch_put_tree(bt, raw, k, strlen(k), v, vlen);
		kv_batch_put_tree(bt, z3, k, strlen(k), v, vlen);
		kv_batch_put_tree(bt, dflt, k, strlen(k), v, vlen);
		payload += strlen(k) + vlen;
		if (kv_batch_count(bt) >= 60 || i == n - 1) {
			kv_write(db, bt, 0);
			kv_batch_clear(bt);
		}
	}
	kv_batch_free(bt);
	kv_compact_range_tree(db, raw, NULL, 0, NULL, 0);
	kv_compact_range_tree(db, z3, NULL, 0, NULL, 0);
	kv_compact_range_tree(db, dflt, NULL, 0, NULL, 0);
	tree_tables(db, "raw", &tr);
	tree_tables(db, "z3", &tz);
	tree_tables(db, "dflt", &td);
	diag("%d keys, %llu bytes of keys and values: level 0 %llu bytes on disk, level 3 %llu, "
	     "the database's level 1 %llu", n, (unsigned long long)payload,
	     (unsigned long long)tr.bytes, (unsigned long long)tz.bytes,
	     (unsigned long long)td.bytes);
	ok(tr.bytes >= payload, "level 0 stores the data uncompressed (%llu >= %llu)",
	   (unsigned long long)tr.bytes, (unsigned long long)payload);
	ok(tz.bytes > 0 && tz.bytes * 3 < tr.bytes,
	   "level 3 compresses the same data to less than a third (%llu)",
	   (unsigned long long)tz.bytes);
	ok(td.bytes > 0 && td.bytes * 3 < tr.bytes,
	   "a tree without a level uses the database's (%llu)", (unsigned long long)td.bytes);
	for (int i = 0; i < n; i += 97) {
		char k[32], *v1 = NULL, *v2 = NULL;
		size_t l1 = 0, l2 = 0;
		snprintf(k, sizeof(k), "c%06d", i);
		if (kv_get_tree(db, raw, NULL, k, strlen(k), &v1, &l1) != 0 ||
		    kv_get_tree(db, z3, NULL, k, strlen(k), &v2, &l2) != 0 || l1 != vlen ||
		    l1 != l2 || memcmp(v1, v2, l1))
			bad++;
		free(v1);
		free(v2);
	}
	is_int(bad, 0, "both trees read back the same values");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/* ------------------------------------------------------------ compaction filters */

struct filter_arg {
	char tag;          /* the last byte of every value of the tree it serves */
	const char *drop;  /* values starting with this are dropped */
	int starts, finishes, calls, foreign;
};

static void *tf_start(void *arg)
{
	((struct filter_arg *)arg)->starts++;
	return arg;
}

static int tf_filter(void *state, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct filter_arg *fa = state;
	size_t dl = strlen(fa->drop);

	(void)key; (void)klen;
	fa->calls++;
	if (vlen == 0 || ((const char *)val)[vlen - 1] != fa->tag)
		fa->foreign++;
	return vlen >= dl && memcmp(val, fa->drop, dl) == 0;
}

static void tf_finish(void *state)
{
	((struct filter_arg *)state)->finishes++;
}

static void test_filters(void)
{
	struct filter_arg fd = { 'D', "dropD", 0, 0, 0, 0 }, ff = { 'F', "drop", 0, 0, 0, 0 };
	struct kv_compaction_filter cfd = { tf_start, tf_filter, tf_finish, &fd };
	struct kv_compaction_filter cff = { tf_start, tf_filter, tf_finish, &ff };
	struct kv_tree_options to;
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *f, *nf;
	char *dir = dbpath("filters");
	const char *vals[] = { "keep|", "drop|", "dropD|" };
	int r;

	small_options(&o);
	o.compaction_filter = &cfd;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "filters: open with a filter for the default tree"))
		goto out;
	kv_tree_options_init(&to);
	to.compaction_filter = &cff;
	kv_tree_open(db, "F", &to, &f);
	kv_tree_open(db, "N", NULL, &nf);
	for (int i = 0; i < 3; i++) {
		char k[8], v[16];
		snprintf(k, sizeof(k), "f%d", i + 1);
		snprintf(v, sizeof(v), "%sD", vals[i]);
		tput(db, NULL, k, v, 0);
		snprintf(v, sizeof(v), "%sF", vals[i]);
		tput(db, f, k, v, 0);
		snprintf(v, sizeof(v), "%sN", vals[i]);
		tput(db, nf, k, v, 0);
	}
	kv_flush(db);
	is_int(kv_compact_range_tree(db, f, NULL, 0, NULL, 0), 0, "compact tree F");
	ok(ff.starts >= 1 && ff.calls >= 3, "F's filter ran (%d calls)", ff.calls);
	is_int(ff.finishes, ff.starts, "finish once per start");
	is_int(fd.calls, 0, "the default tree's filter did not run for F's compaction");
	scan_is(scan(db, f, NULL, NULL, NULL, 1), "f1=keep|F",
		"F's filter dropped what it chose in F");
	scan_is(scan(db, NULL, NULL, NULL, NULL, 1), "f1=keep|D|f2=drop|D|f3=dropD|D",
		"the default tree, not compacted yet, has all its values");
	is_int(kv_compact_range_tree(db, nf, NULL, 0, NULL, 0), 0, "compact tree N");
	scan_is(scan(db, nf, NULL, NULL, NULL, 1), "f1=keep|N|f2=drop|N|f3=dropD|N",
		"a tree without a filter keeps everything");
	is_int(kv_compact_range_tree(db, NULL, NULL, 0, NULL, 0), 0, "compact the default tree");
	ok(fd.calls >= 3, "the default tree's filter (from kv_options) ran (%d calls)", fd.calls);
	scan_is(scan(db, NULL, NULL, NULL, NULL, 1), "f1=keep|D|f2=drop|D",
		"the default tree's filter dropped what it chose");
	is_int(ff.foreign + fd.foreign, 0, "each filter saw only its own tree's values");
	scan_is(scan(db, f, NULL, NULL, NULL, 1), "f1=keep|F", "F is unchanged by the others");
out:
	if (db)
		kv_close(db);
	free(dir);
}

/* ------------------------------------------------------------ power cuts */

#define CR_TREES   3
#define CR_MAX     3000
#define CR_MAXKEYS 3

static const char *cr_tree_names[CR_TREES] = { "default", "t1", "t2" };

/* What the writer did, batch by batch. */
struct cplan {
	unsigned char nkeys[CR_MAX][CR_TREES];   /* keys j = 0..nkeys-1 in each tree */
	int deletes[CR_MAX];      /* the batch whose keys this one range-deletes (in all trees) */
	unsigned char synced[CR_MAX];
	int nbatches, acked, last_synced, failed_with;
	int tree_acked[CR_TREES]; /* kv_tree_open returned 0 */
};

static int cr_key(char *b, int i, int j)
{
	return snprintf(b, 32, "b%06d-%02d", i, j);
}

/* Tree 1's values are large and tree 2's tiny, so the trees flush at different times. */
static int cr_value(char *b, int t, int i, int j)
{
	int n = snprintf(b, 64, "tree %d batch %d key %d:", t, i, j);
	int pad = t == 0 ? (i * 37 + j * 11) % 200 : t == 1 ? 300 + (i * 13 + j) % 300 : j;

	for (int k = 0; k < pad; k++)
		b[n + k] = (char)('a' + (i + j + k + t) % 26);
	b[n + pad] = 0;
	return n + pad;
}

static void cr_build(struct kv_batch *b, struct kv_tree **tr, const struct cplan *p, int i)
{
	char k[32], v[700], e[32];

	kv_batch_clear(b);
	for (int t = 0; t < CR_TREES; t++) {
		for (int j = 0; j < p->nkeys[i][t]; j++) {
			int kl = cr_key(k, i, j), vl = cr_value(v, t, i, j);
			kv_batch_put_tree(b, tr[t], k, (size_t)kl, v, (size_t)vl);
		}
		if (p->deletes[i] >= 0) {
			snprintf(k, sizeof(k), "b%06d-", p->deletes[i]);
			snprintf(e, sizeof(e), "b%06d.", p->deletes[i]);
			kv_batch_delete_range_tree(b, tr[t], k, strlen(k), e, strlen(e));
		}
	}
}

static void cr_writer(struct kv_db *db, struct kv_tree **tr, struct cplan *p, uint64_t *rs)
{
	struct kv_batch *b = kv_batch_new();

	for (int i = 0; i < CR_MAX; i++) {
		int r;

		for (int t = 0; t < CR_TREES; t++)
			p->nkeys[i][t] = (unsigned char)(1 + rand_next(rs) % CR_MAXKEYS);
		p->deletes[i] = i > 0 && rand_next(rs) % 10 == 0 ? (int)(rand_next(rs) % (uint64_t)i)
								 : -1;
		p->synced[i] = rand_next(rs) % 5 == 0;
		cr_build(b, tr, p, i);
		p->nbatches = i + 1;
		r = kv_write(db, b, p->synced[i] ? KV_SYNC : 0);
		if (r != 0) {
			p->failed_with = r;
			break;
		}
		p->acked = i + 1;
		if (p->synced[i])
			p->last_synced = i;
		if (i % 250 == 249 && rand_next(rs) % 2)
			kv_flush(db);   /* may fail after the cut; the next write then fails */
	}
	kv_batch_free(b);
}

/*
 * Decide whether the reopened trees hold exactly batches 0..P, each batch in
 * every tree or in none, for some P in [min_p, max_p].  Returns P (>= -1) or
 * -2 with a reason in why.
 */
static int cr_prefix(struct kv_db *db, struct kv_tree **tr, const struct cplan *p, int min_p,
		     int max_p, char *why, size_t wl)
{
	int nb = p->nbatches;
	unsigned char *obs = xcalloc((size_t)nb + 1, CR_TREES), *present, *exp;
	long mism = 0, best_mism = -1;
	int found = -2, best = -1;
	char v[700];

	present = xcalloc((size_t)nb + 1, 1);
	exp = xcalloc((size_t)nb + 1, 1);
	why[0] = 0;
	for (int t = 0; t < CR_TREES; t++) {
		struct kv_read_options ro = { .tree = tr[t] };
		struct kv_iter *it = kv_iter_new(db, &ro);
		int bad = 0;

		for (kv_iter_seek_first(it); kv_iter_valid(it) && !bad; kv_iter_next(it)) {
			size_t kl, vl;
			const char *k = kv_iter_key(it, &kl), *val = kv_iter_value(it, &vl);
			char kb[40];
			int i, j, used = 0, wantl;

			if (kl >= sizeof(kb) || (memcpy(kb, k, kl), kb[kl] = 0,
			    sscanf(kb, "b%6d-%2d%n", &i, &j, &used) != 2) || (size_t)used != kl ||
			    i < 0 || i >= nb || j < 0 || j >= p->nkeys[i][t]) {
				snprintf(why, wl, "tree %s: a key that was never written: \"%.*s\"",
					 cr_tree_names[t], (int)(kl < 40 ? kl : 40), k);
				bad = 1;
				break;
			}
			wantl = cr_value(v, t, i, j);
			if (vl != (size_t)wantl || memcmp(val, v, vl)) {
				snprintf(why, wl, "tree %s: key %s has a wrong value (\"%.*s\")",
					 cr_tree_names[t], kb, (int)(vl < 40 ? vl : 40), val);
				bad = 1;
				break;
			}
			obs[(size_t)i * CR_TREES + (size_t)t] |= (unsigned char)(1u << j);
		}
		if (!bad && kv_iter_status(it)) {
			snprintf(why, wl, "tree %s: iterator error %d: %s", cr_tree_names[t],
				 kv_iter_status(it), kv_strerror(kv_iter_status(it)));
			bad = 1;
		}
		kv_iter_free(it);
		if (bad)
			goto out;
	}
	for (int i = 0; i < nb; i++) {
		for (int t = 0; t < CR_TREES; t++) {
			unsigned full = (1u << p->nkeys[i][t]) - 1, got = obs[(size_t)i * CR_TREES + t];
			if (got && got != full) {
				snprintf(why, wl, "batch %d is half applied in tree %s: keys %#x of %#x",
					 i, cr_tree_names[t], got, full);
				goto out;
			}
			if (t > 0 && !got != !obs[(size_t)i * CR_TREES]) {
				snprintf(why, wl, "batch %d is in tree %s but not in tree %s", i,
					 got ? cr_tree_names[t] : "default",
					 got ? "default" : cr_tree_names[t]);
				goto out;
			}
		}
		present[i] = obs[(size_t)i * CR_TREES] != 0;
		mism += present[i];
	}
	/* apply batches one by one; P fits when the expected presence equals what is there */
	for (int q = -1; q <= max_p && q < nb; q++) {
		if (q >= 0) {
			int d = p->deletes[q];
			mism -= exp[q] != present[q];
			exp[q] = 1;
			mism += exp[q] != present[q];
			if (d >= 0) {
				mism -= exp[d] != present[d];
				exp[d] = 0;
				mism += exp[d] != present[d];
			}
		}
		if (best_mism < 0 || mism < best_mism) {
			best_mism = mism;
			best = q;
		}
		if (q >= min_p && mism == 0) {
			found = q;
			break;
		}
	}
	if (found == -2)
		snprintf(why, wl, "no prefix 0..P with %d <= P <= %d matches; closest P = %d with %ld "
			 "batches off", min_p, max_p, best, best_mism);
out:
	free(obs);
	free(present);
	free(exp);
	return found;
}

static void cr_options(struct kv_options *o, struct kv_env *env)
{
	kv_options_init(o);
	o->env = env;
	o->write_buffer_size = 32 * 1024;
	o->target_file_size = 32 * 1024;
	o->max_bytes_level_base = 128 * 1024;
	o->block_cache_size = 256 * 1024;
}

/* Open the crash trial's trees (t1, t2); how many opened. */
static int cr_open_trees(struct kv_db *db, struct kv_tree **tr, struct cplan *p)
{
	tr[0] = NULL;
	p->tree_acked[0] = 1;
	for (int t = 1; t < CR_TREES; t++) {
		if (kv_tree_open(db, cr_tree_names[t], NULL, &tr[t]) != 0)
			return t;
		p->tree_acked[t] = 1;
	}
	return CR_TREES;
}

static void cr_trial(int n, uint64_t seed, struct cplan *p, int *stats)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *tr[CR_TREES] = { NULL };
	char *dir = xasprintf("%s/cut-%03d", tmpdir, n);
	uint64_t rs = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(n + 1));
	int early = rand_next(&rs) % 6 == 0, r, P, listed_ok = 1;
	long cut_at;
	char why[300];
	struct tap_part part = part_begin(9);

	memset(p, 0, sizeof(*p));
	p->last_synced = -1;
	cr_options(&o, fe);
	if (early) {
		/* the power goes while the database and its trees are being created */
		cut_at = (long)(rand_next(&rs) % 40);
		env_fault_power_cut_after(fe, cut_at);
		r = kv_open(dir, &o, &db);
		if (r == 0 && cr_open_trees(db, tr, p) == CR_TREES)
			cr_writer(db, tr, p, &rs);
	} else {
		r = kv_open(dir, &o, &db);
		if (r != 0 || cr_open_trees(db, tr, p) != CR_TREES) {
			ok(0, "cut trial %d: open the database and its trees", n);
			goto out;
		}
		cut_at = (long)(rand_next(&rs) % 6000);
		env_fault_power_cut_after(fe, cut_at);
		cr_writer(db, tr, p, &rs);
	}
	if (db) {
		if (!env_fault_is_cut(fe))
			env_fault_power_cut_after(fe, 0);
		r = tput(db, tr[1], "zprobe", "x", 0);
		ok(r != 0, "cut trial %d: after the power cut a write fails (%d)", n, r);
		kv_close(db);
		db = NULL;
	} else {
		skip(1, "the power was cut before the database was open");
	}
	r = env_fault_drop_unsynced(fe);
	if (!is_int(r, 0, "cut trial %d: env_fault_drop_unsynced", n))
		goto out;
	cr_options(&o, NULL);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "cut trial %d (cut after %ld write calls%s): the database opens", n,
		    cut_at, early ? ", during creation" : "")) {
		diag("kv_open: %s", kv_strerror(r));
		goto out;
	}
	for (int t = 1; t < CR_TREES; t++)
		if (p->tree_acked[t] && test_tree_listed(db, cr_tree_names[t]) != 1)
			listed_ok = 0;
	ok(listed_ok, "cut trial %d: every tree whose creation returned is there", n);
	if (cr_open_trees(db, tr, p) != CR_TREES) {
		ok(0, "cut trial %d: open the trees after recovery", n);
		goto out;
	}
	P = cr_prefix(db, tr, p, p->last_synced, p->nbatches - 1, why, sizeof(why));
	if (!ok(P >= -1, "cut trial %d: each tree holds exactly batches 0..P, the same P in all, "
		"P >= %d, the last synced (P = %d; %d acknowledged)", n, p->last_synced, P,
		p->acked))
		diag("cut trial %d: %s", n, why);
	else
		stats[P >= p->acked - 1 ? 0 : 1]++;
	stats[2] += p->acked;
	snprintf(why, sizeof(why), "cut trial %d: a refused write is not there", n);
	tget_is(db, tr[1], NULL, "zprobe", NULL, why);
	is_int(kv_verify(db, NULL, NULL), 0, "cut trial %d: kv_verify finds nothing wrong", n);
	r = tput(db, tr[2], "after", "crash", KV_SYNC);
	is_int(r, 0, "cut trial %d: the recovered database takes writes to its trees", n);
	is_int(kv_close(db), 0, "cut trial %d: close", n);
	db = NULL;
out:
	part_end(part);
	if (db)
		kv_close(db);
	env_fault_free(fe);
	kv_destroy(dir, NULL);
	rm_rf(dir);
	free(dir);
}

/* trials power-cut trials with seed, numbered from first (each its own directory). */
static void test_power_cuts(uint64_t seed, int trials, int first)
{
	struct cplan *p = xcalloc(1, sizeof(*p));
	int stats[3] = { 0, 0, 0 };
	uint64_t t0 = now_micros();

	for (int t = first; t < first + trials; t++)
		cr_trial(t, seed, p, stats);
	diag("power cuts: %d trials kept every acknowledged batch, %d lost unsynced ones; %d "
	     "batches acknowledged in all; %.1f s", stats[0], stats[1], stats[2],
	     (double)(now_micros() - t0) / 1e6);
	free(p);
}

int main(void)
{
	uint64_t seeds[2] = { 0, 0 };
	int nseeds = test_seeds(0x7ee57ee5ull, seeds);
	uint64_t t0 = now_micros(), t1;

	plan_lazy();
	/* every assertion outside the randomized trials; each trial plans its own */
	expect(330);
	make_tmpdir("kv_tree");
	diag("directory %s, scale %.3g", tmpdir, test_scale());
#define TIMED(call) do { t1 = now_micros(); call; \
	diag("%s: %.2f s", #call, (double)(now_micros() - t1) / 1e6); } while (0)
	TIMED(test_names());
	TIMED(test_concurrent_open());
	TIMED(test_isolation());
	TIMED(test_snapshots());
	TIMED(test_logs());
	TIMED(test_drop());
	TIMED(test_drop_after_error());
	TIMED(test_manifest());
	TIMED(test_scan_bytes());
	TIMED(test_compression());
	TIMED(test_filters());
	/* the fixed seed's trials, then a quarter as many with the seed drawn for this run */
	TIMED(test_power_cuts(seeds[0], scaled(30, 2), 0));
	if (nseeds > 1)
		TIMED(test_power_cuts(seeds[1], scaled(8, 1), 1000));
	diag("total %.1f s", (double)(now_micros() - t0) / 1e6);
	done_testing();
	if (exit_status() == 0)
		rm_rf(tmpdir);
	return exit_status();
}
