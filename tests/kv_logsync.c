/*
 * kv_logsync.c -- a memtable switch never makes a writer wait for the old
 * log's fsync or for the deletion of a log, unsynced writes never fsync a
 * log at all, and a synced write still outlives nothing older than itself;
 * and the writers' waits for a flush or a compaction that is behind.
 *
 * The fault environment holds chosen calls until the test releases them
 * (env_fault_hold), which shows who waits for them without measuring time
 * (but for the least time of the level-0 slowdown, which sleeps on purpose):
 *   - every fsync of a log held: unsynced puts go on across several memtable
 *     switches, no log is fsynced (none is held), and each retired log is
 *     deleted, unsynced, once its memtable is flushed; with the flush of a
 *     retired log's memtable held too (its table's fsync), a synced put has
 *     that log fsynced and does not return while the fsync is held, and
 *     returns once it is released; a power cut that then drops every
 *     unsynced byte keeps the synced put and every write before it;
 *   - every unlink of a log held: once a thread waits in the unlink of an
 *     obsolete log, puts go on (the deletion runs without db->mu);
 *   - the manifest append of a flush held (its edit on its way, db->mu
 *     released), and every manifest append failing: a tree created meanwhile
 *     waits for that edit, then its own edit fails and the creation fails
 *     with EIO, leaving no tree (an edit is never counted as written because
 *     another one was on its way, nor applied when its append failed); once
 *     the fault is gone the tree is created and survives a reopen;
 *   - the manifest fsync of a tree's drop held (the drop on its way, db->mu
 *     released, the tree not dropped yet), while the tree needs a compaction
 *     and the compaction thread comes free: no compaction of the tree starts
 *     (its result could not be recorded once the drop is applied, and that
 *     error would stop the database); the drop succeeds and the database
 *     goes on.  The holds there are of the compaction thread's calls alone
 *     (env_fault_hold_in), and the test reads db->mu's state (dbtest.h);
 *     test_drop_compaction says why;
 *   - the flush of a memtable held in the creation of its table (no
 *     progress at all): the next memtable fills to three quarters unpaced, and every
 *     write past that is paced (waits a bounded time for the flush to catch
 *     up) and goes through, where without pacing the write that found the
 *     memtable full would have waited for the whole flush;
 *   - the level-0 slowdown's arithmetic (db_delay_step, db_delay_charge) on
 *     a clock of its own; and with compaction held in its first table, so
 *     that level 0 only grows: no put is delayed until level 0 reaches the
 *     trigger, then the puts take at least the time slowdown_rate gives
 *     their bytes, few of them sleep (each for the debt of several), and
 *     once compaction empties level 0 none does;
 *   - power cuts while the retired logs are unsynced (their fsyncs held),
 *     each unsynced page of every file kept, dropped or zeroed at
 *     random (seeded, as in kv_powercut): the database opens, holds every
 *     synced write, and is at a point in time (the writes present are a
 *     prefix of the writes made: never a later one without an earlier one).
 * Where the engine waited, the puts would not finish; the test gives them a
 * generous bound and fails instead of hanging.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"
#include "dbtest.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

/* A bound for what must happen, however loaded the machine: a hang fails after it. */
#ifndef PATIENCE_MS
#define PATIENCE_MS 20000
#endif

struct putter {
	struct kv_db *db;
	long from, n;
	unsigned flags;
	int r;
	long acked;            /* puts that returned 0 so far */
	int done;
	pthread_t thread;
};

static void *put_main(void *arg)
{
	struct putter *p = arg;
	int r = 0;

	for (long i = p->from; i < p->from + p->n && r == 0; i++)
		if ((r = test_write_put(p->db, i, p->flags)) == 0)
			__atomic_add_fetch(&p->acked, 1, __ATOMIC_RELEASE);
	p->r = r;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void put_start(struct putter *p, struct kv_db *db, long from, long n, unsigned flags)
{
	memset(p, 0, sizeof(*p));
	p->db = db;
	p->from = from;
	p->n = n;
	p->flags = flags;
	if (pthread_create(&p->thread, NULL, put_main, p) != 0) {
		perror("pthread_create");
		exit(1);
	}
}

/* Wait up to ms for the putter to finish: 1 if it did. */
static int put_wait(struct putter *p, long ms)
{
	for (long t = 0; t < ms && !__atomic_load_n(&p->done, __ATOMIC_ACQUIRE); t += 5)
		usleep(5000);
	return __atomic_load_n(&p->done, __ATOMIC_ACQUIRE);
}

/* Wait up to ms until at least want calls are held: 1 if they are. */
static int held_wait(struct kv_env *fe, long want, long ms)
{
	for (long t = 0; t < ms && env_fault_held(fe, NULL) < want; t += 5)
		usleep(5000);
	return env_fault_held(fe, NULL) >= want;
}

/* How many logs dir holds; *oldest gets the lowest log number. */
static int count_logs(const char *dir, unsigned long *oldest)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	*oldest = 0;
	while (d && (e = readdir(d))) {
		if (!strstr(e->d_name, ".log"))
			continue;
		unsigned long num = strtoul(e->d_name, NULL, 10);
		if (!n++ || num < *oldest)
			*oldest = num;
	}
	if (d)
		closedir(d);
	return n;
}

/* The end of a test: nothing held any more, its environment and database gone. */
static void env_done(struct kv_env *fe, char *dir)
{
	env_fault_release(fe);
	env_fault_free(fe);
	kv_destroy(dir, NULL);
	free(dir);
}

/* How many of the writes from..to-1 db lacks; the first few are named. */
static long missing_writes(struct kv_db *db, long from, long to)
{
	long lost = 0;

	for (long i = from; i < to; i++)
		if (test_write_check(db, i) != 0 && lost++ < 3)
			diag("write %ld is missing", i);
	return lost;
}

static void log_sink(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level;
	if (getenv("LOGSYNC_LOG"))
		diag("log: %s", msg);
}

/* Small memtables, and no level-0 slowdown to mix into what the test shows. */
static void options(struct kv_options *o, struct kv_env *fe)
{
	kv_options_init(o);
	o->log = log_sink;
	o->env = fe;
	o->write_buffer_size = 8u << 10;
	o->l0_compaction_trigger = 1000;
	o->l0_slowdown_trigger = 1000;
	o->l0_stop_trigger = 1000;
}

#define SWITCH_PUTS 800   /* about 100 puts fill a memtable */

/*
 * After a power cut that kept only synced bytes, and the close: the
 * database opens and holds writes 0..n, n being the synced one.  Two
 * assertions.
 */
static void reopen_check(struct kv_env *fe, const char *dir, const struct kv_options *o,
			 const char *what, long n)
{
	struct kv_db *db;
	int r = env_fault_drop_unsynced(fe);

	env_fault_clear(fe);
	if (r == 0)
		r = kv_open(dir, o, &db);
	if (!is_int(r, 0, "%s: after a power cut dropping every unsynced byte, the database "
		    "opens", what)) {
		skip(1, "no database");
		return;
	}
	is_int((int)missing_writes(db, 0, n + 1), 0, "%s: it holds the synced put and the %ld "
	       "writes before it", what, n);
	kv_close(db);
}

static void test_sync_held(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/sync", tmpdir);
	struct putter p, s;
	struct kv_options o;
	struct kv_db *db;
	long before, total = 0;
	unsigned long oldest;
	char hold[64];
	int r, done, logs, early;

	options(&o, fe);
	env_fault_hold(fe, ENV_OP_SYNC, ".log");
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "sync held: open"))
		goto out;
	put_start(&p, db, 0, SWITCH_PUTS, 0);
	done = put_wait(&p, PATIENCE_MS);
	pthread_join(p.thread, NULL);
	ok(done && p.r == 0, "sync held: %d unsynced puts finish while every log fsync is held "
	   "(%s)", SWITCH_PUTS, done ? kv_strerror(p.r) : "still waiting");
	for (long t = 0; t < PATIENCE_MS && (logs = count_logs(dir, &oldest)) > 1; t += 5)
		usleep(5000);
	env_fault_held(fe, &total);
	ok(total == 0 && logs == 1, "sync held: through their memtable switches no log was "
	   "fsynced, and each retired log went unsynced once its memtable was flushed (%ld "
	   "fsyncs held, %d logs left)", total, logs);

	/*
	 * A synced put must have the older logs synced, so it cannot return
	 * while the fsync of a retired log is held.  The flush of its memtable
	 * is held in the fsync of its table, so the retired log stays needed;
	 * the synced put's own log is free to sync.
	 */
	r = kv_flush(db);   /* an empty memtable: the puts below switch it once */
	for (long t = 0; t < PATIENCE_MS && (logs = count_logs(dir, &oldest)) > 1; t += 5)
		usleep(5000);
	env_fault_hold(fe, ENV_OP_SYNC, ".log|.sst");
	put_start(&p, db, SWITCH_PUTS, SWITCH_PUTS / 6, 0);
	done = put_wait(&p, PATIENCE_MS);
	pthread_join(p.thread, NULL);
	logs = count_logs(dir, &oldest);
	ok(r == 0 && done && p.r == 0 && logs == 2 && held_wait(fe, 1, PATIENCE_MS),
	   "sync held: %d more puts switch memtables once, and the flush waits in its table's "
	   "fsync (%s, %d logs)", SWITCH_PUTS / 6, done ? kv_strerror(p.r) : "still waiting",
	   logs);
	snprintf(hold, sizeof(hold), ".sst|/%06lu.log", oldest);
	env_fault_hold(fe, ENV_OP_SYNC, hold);
	before = SWITCH_PUTS + SWITCH_PUTS / 6;
	put_start(&s, db, before, 1, KV_SYNC);
	early = put_wait(&s, 300);
	ok(!early && held_wait(fe, 2, PATIENCE_MS), "sync held: a synced put has the retired "
	   "log fsynced (%s), and does not return while that is held", hold + 5);
	if (!early) {
		env_fault_release(fe);
		done = put_wait(&s, PATIENCE_MS);
	} else {
		done = 1;
	}
	ok(done && s.r == 0, "sync held: it returns once the fsync is released (%s)",
	   done ? kv_strerror(s.r) : "still waiting");

	/*
	 * The power goes now (before the release, if the synced put did not
	 * wait for it): nothing unsynced survives.
	 */
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	env_fault_power_cut_after(fe, 0);
	env_fault_release(fe);
	pthread_join(s.thread, NULL);
	kv_close(db);
	reopen_check(fe, dir, &o, "sync held", before);
out:
	env_done(fe, dir);
}

/*
 * The fsync a synced put asks of a retired log fails: the log becomes a
 * failed log, and the put is acknowledged only once that log's writes are
 * in tables (its flush is held meanwhile, so the put must still be
 * waiting); a power cut then that drops every unsynced byte loses none.
 */
static void test_retired_sync_fails(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/retfail", tmpdir);
	struct putter p, s;
	struct kv_options o;
	struct kv_db *db;
	unsigned long oldest;
	char name[32];
	long n = SWITCH_PUTS / 6;
	int r, done, early;

	options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "retired sync fails: open"))
		goto out;
	count_logs(dir, &oldest);
	snprintf(name, sizeof(name), "/%06lu.log", oldest);
	env_fault_hold(fe, ENV_OP_SYNC, ".sst");
	env_fault_inject(fe, ENV_OP_SYNC, 0, 1, -EIO, name);
	put_start(&p, db, 0, n, 0);
	done = put_wait(&p, PATIENCE_MS);
	pthread_join(p.thread, NULL);
	ok(done && p.r == 0 && count_logs(dir, &oldest) == 2 && held_wait(fe, 1, PATIENCE_MS),
	   "retired sync fails: %ld unsynced puts retire log %s, whose flush waits in its "
	   "table's fsync", n, name + 1);
	put_start(&s, db, n, 1, KV_SYNC);
	early = put_wait(&s, 300);
	for (long t = 0; t < PATIENCE_MS && !early && env_fault_injected(fe) < 1; t += 5)
		usleep(5000);
	ok(!early && env_fault_injected(fe) == 1 && !__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), "retired sync fails: a synced put meets the "
	   "failed fsync of %s, and waits for the flush of its writes (%ld failed)", name + 1,
	   env_fault_injected(fe));
	env_fault_release(fe);
	done = put_wait(&s, PATIENCE_MS);
	pthread_join(s.thread, NULL);
	ok(done && s.r == 0, "retired sync fails: the synced put returns once the flush is "
	   "released (%s)", done ? kv_strerror(s.r) : "still waiting");
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	env_fault_power_cut_after(fe, 0);
	kv_close(db);
	reopen_check(fe, dir, &o, "retired sync fails", n);
out:
	env_done(fe, dir);
}

/* Write number i (test_write_make) into tree t, or check it there. */
static int tree_put(struct kv_db *db, struct kv_tree *t, long i, unsigned flags)
{
	struct kv_batch *b = kv_batch_new();
	struct test_write w;
	int r;

	test_write_make(i, &w);
	kv_batch_put_tree(b, t, w.key, w.klen, w.value, w.vlen);
	r = kv_write(db, b, flags);
	kv_batch_free(b);
	return r;
}

static int tree_check(struct kv_db *db, struct kv_tree *t, long i)
{
	struct test_write w;
	char *got = NULL;
	size_t gl;
	int r;

	test_write_make(i, &w);
	r = kv_get_tree(db, t, NULL, w.key, w.klen, &got, &gl);
	if (r == 0 && (gl != w.vlen || memcmp(got, w.value, gl)))
		r = 1;
	free(got);
	return r;
}

/*
 * Two trees, and a power cut that keeps only synced bytes and undoes every
 * name change not synced:
 *   - idle: the default tree is never written, so the manifest names an old
 *     log for it.  A retired log closed unsynced must be one recovery never
 *     reads: with the deletion of the flushed memtable's log held (undone by
 *     the cut), a synced put to tree d survives, and so do the synced puts
 *     before it;
 *   - two written: x gets one unsynced put, then d fills and flushes
 *     memtables (x keeps its memtable, and needs the old log).  Once d's
 *     flush is recorded, its later writes survive any power cut in its
 *     tables, so x's earlier write must too (the log holding it is synced
 *     before the flush is recorded): never a later write without an earlier
 *     one, across trees.
 */
static void test_two_trees(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/trees", tmpdir);
	struct kv_tree *d = NULL, *x = NULL;
	struct kv_options o;
	struct kv_db *db;
	struct kv_stats st;
	long miss = 0, n = SWITCH_PUTS / 4;
	int r;

	options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (r == 0)
		r = kv_tree_open(db, "d", NULL, &d);
	if (!is_int(r, 0, "idle tree: open, tree d"))
		goto out;
	for (long i = 0; i < 10 && r == 0; i++)
		r = tree_put(db, d, i, KV_SYNC);
	env_fault_hold(fe, ENV_OP_UNLINK, ".log");
	for (long i = 10; i < n && r == 0; i++)
		r = tree_put(db, d, i, 0);
	ok(r == 0 && held_wait(fe, 1, PATIENCE_MS), "idle tree: %ld puts to d, and the deletion of "
	   "a flushed memtable's log is held (%s)", n, kv_strerror(r));
	r = tree_put(db, d, n, KV_SYNC);
	is_int(r, 0, "idle tree: a synced put to d meanwhile");
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	env_fault_power_cut_after(fe, 0);
	env_fault_release(fe);
	kv_close(db);
	r = env_fault_drop_unsynced(fe);
	env_fault_clear(fe);
	if (r == 0)
		r = kv_open(dir, &o, &db);
	if (r == 0)
		r = kv_tree_open(db, "d", NULL, &d);
	if (!is_int(r, 0, "idle tree: after a power cut that undid the deletion, it opens")) {
		skip(1, "no database");
		goto out;
	}
	for (long i = 0; i < 10; i++)
		miss += tree_check(db, d, i) != 0;
	miss += tree_check(db, d, n) != 0;
	is_int(miss, 0, "idle tree: every synced put is there");

	/* the second part, on the same database: x and d written */
	r = kv_tree_open(db, "x", NULL, &x);
	if (r == 0)
		r = kv_flush(db);
	if (r == 0)
		r = tree_put(db, x, 100000, 0);
	kv_get_stats(db, &st);
	/* a few flushes: fewer than DB_RETIRED_OPEN_MAX logs, which x all keeps */
	for (long i = 0; i < SWITCH_PUTS / 2 && r == 0; i++)
		r = tree_put(db, d, 200000 + i, 0);
	if (r == 0)
		r = wait_idle(db) ? 0 : -1;
	{
		struct kv_stats st2;
		kv_get_stats(db, &st2);
		ok(r == 0 && st2.flushes - st.flushes >= 2 && tree_check(db, x, 100000) == 0,
		   "two written: an unsynced put to x, then %d to d, which flushes %llu times "
		   "meanwhile", SWITCH_PUTS / 2, (unsigned long long)(st2.flushes - st.flushes));
	}
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	env_fault_power_cut_after(fe, 0);
	kv_close(db);
	r = env_fault_drop_unsynced(fe);
	env_fault_clear(fe);
	if (r == 0)
		r = kv_open(dir, &o, &db);
	if (r == 0)
		r = kv_tree_open(db, "d", NULL, &d);
	if (r == 0)
		r = kv_tree_open(db, "x", NULL, &x);
	if (!is_int(r, 0, "two written: after a power cut that kept only synced bytes, it opens")) {
		skip(1, "no database");
		goto out;
	}
	ok(tree_check(db, d, 200000) != 0 || tree_check(db, x, 100000) == 0,
	   "two written: d's writes kept in its tables (the first: %s), so x's earlier write "
	   "is too (%s)", tree_check(db, d, 200000) ? "gone" : "there",
	   tree_check(db, x, 100000) ? "gone" : "there");
	kv_close(db);
out:
	env_done(fe, dir);
}

/*
 * The oldest log recovery reads is a retired log, unsynced, while its flush
 * waits in its manifest edit (held).  A power cut then keeps, drops or
 * zeroes each unsynced page at random: when it takes all of that log and
 * keeps pages of the next one, recovery must see the loss (the manifest
 * records where that log begins) and not replay the later writes around the
 * hole.  Many seeds; the database must hold a prefix of the writes each
 * time, with the synced ones.
 */
static int one_first_log(const char *dir, uint64_t seed)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db;
	unsigned long oldest;
	long i, first_missing = -1, holes = 0;
	int r;

	kv_destroy(dir, NULL);
	options(&o, fe);
	env_fault_cut_model(fe, ENV_CUT_PAGES, seed);
	r = kv_open(dir, &o, &db);
	for (i = 0; i < 10 && r == 0; i++)
		r = test_write_put(db, i, KV_SYNC);
	for (; i < SWITCH_PUTS * 3 / 16 && r == 0; i++)   /* one switch, its flush recorded */
		r = test_write_put(db, i, 0);
	for (long t = 0; t < PATIENCE_MS && r == 0 && count_logs(dir, &oldest) > 1; t += 5)
		usleep(5000);
	env_fault_hold(fe, ENV_OP_SYNC, "MANIFEST");
	for (long n0 = i; i < n0 + SWITCH_PUTS * 3 / 20 && r == 0; i++)   /* one more switch */
		r = test_write_put(db, i, 0);
	if (r == 0 && !held_wait(fe, 1, PATIENCE_MS))
		r = -ETIMEDOUT;
	env_fault_power_cut_after(fe, 0);
	env_fault_release(fe);
	kv_close(db);
	if (r == 0)
		r = env_fault_drop_unsynced(fe);
	env_fault_clear(fe);
	if (r == 0)
		r = kv_open(dir, &o, &db);
	if (r < 0) {
		diag("first log, seed %llu: %s", (unsigned long long)seed, kv_strerror(r));
		env_fault_free(fe);
		return -1;
	}
	for (long j = 0; j < i; j++) {
		if (test_write_check(db, j) != 0) {
			if (first_missing < 0)
				first_missing = j;
		} else if (first_missing >= 0 && holes++ == 0) {
			diag("first log, seed %llu: write %ld is there, %ld is not",
			     (unsigned long long)seed, j, first_missing);
		}
	}
	kv_close(db);
	env_fault_free(fe);
	return holes || (first_missing >= 0 && first_missing < 10) ? -1 : 0;
}

static void test_first_log_lost(void)
{
	char *dir = xasprintf("%s/first", tmpdir);
	long seeds = scaled(60, 20), bad = 0;

	for (long s = 1; s <= seeds; s++)
		bad += one_first_log(dir, (uint64_t)s) < 0;
	is_int(bad, 0, "first log lost: of %ld power cuts while the oldest log needed was "
	       "unsynced, each left a prefix of the writes with every synced one", seeds);
	kv_destroy(dir, NULL);
	free(dir);
}

static void test_unlink_held(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/unlink", tmpdir);
	struct putter p;
	struct kv_options o;
	struct kv_db *db;
	long total = 0;
	int r, done;

	options(&o, fe);
	env_fault_hold(fe, ENV_OP_UNLINK, ".log");
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "unlink held: open"))
		goto out;
	/* one memtable and a half: a switch, a flush, and the first log obsolete */
	put_start(&p, db, 0, 150, 0);
	done = put_wait(&p, PATIENCE_MS);
	pthread_join(p.thread, NULL);
	ok(done && p.r == 0, "unlink held: 150 puts, one memtable switch");
	ok(held_wait(fe, 1, PATIENCE_MS), "unlink held: a background thread waits in the "
	   "unlink of the flushed memtable's log");
	put_start(&p, db, 150, 50, 0);
	done = put_wait(&p, PATIENCE_MS);
	env_fault_held(fe, &total);
	ok(done && p.r == 0, "unlink held: 50 more puts finish while it waits (%s)",
	   done ? kv_strerror(p.r) : "still waiting");
	env_fault_release(fe);
	put_wait(&p, PATIENCE_MS);
	pthread_join(p.thread, NULL);
	is_int(kv_close(db), 0, "unlink held: close once released");
out:
	env_done(fe, dir);
}

struct opener {
	struct kv_db *db;
	const char *name;
	int r;
	int done;
	pthread_t thread;
};

static void *open_main(void *arg)
{
	struct opener *op = arg;
	struct kv_tree *t;

	op->r = kv_tree_open(op->db, op->name, NULL, &t);
	__atomic_store_n(&op->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait up to ms for the opener to finish: 1 if it did. */
static int open_wait(struct opener *op, long ms)
{
	for (long t = 0; t < ms && !__atomic_load_n(&op->done, __ATOMIC_ACQUIRE); t += 5)
		usleep(5000);
	return __atomic_load_n(&op->done, __ATOMIC_ACQUIRE);
}

static void test_manifest_held(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/manifest", tmpdir);
	struct opener op = { 0 };
	struct kv_options o;
	struct kv_tree *t;
	struct kv_db *db;
	int r, done, early;

	options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "manifest held: open"))
		goto out;
	/* the flush's append waits for the release, then fails, as every later one does */
	env_fault_hold(fe, ENV_OP_APPEND, "MANIFEST");
	env_fault_inject(fe, ENV_OP_APPEND, 0, -1, -EIO, "MANIFEST");
	for (long i = 0; i < 150 && r == 0; i++)
		r = test_write_put(db, i, 0);
	ok(r == 0 && held_wait(fe, 1, PATIENCE_MS), "manifest held: 150 puts (%s), and the "
	   "flush of the first memtable waits in its manifest append", kv_strerror(r));

	op.db = db;
	op.name = "t1";
	if (pthread_create(&op.thread, NULL, open_main, &op) != 0) {
		perror("pthread_create");
		exit(1);
	}
	early = open_wait(&op, 300);
	ok(!early, "manifest held: creating a tree does not return while the flush's edit is "
	   "on its way (%s)", early ? kv_strerror(op.r) : "waiting");
	env_fault_release(fe);
	done = open_wait(&op, PATIENCE_MS);
	ok(done && op.r == -EIO, "manifest held: once released the flush's append fails, and "
	   "so does the creation, with EIO (%s)", done ? kv_strerror(op.r) : "still waiting");
	if (!done)
		goto out_db;   /* a hang: the thread is left, the test has failed */
	pthread_join(op.thread, NULL);
	is_int(test_tree_listed(db, "t1"), 0, "manifest held: and there is no tree t1");

	/* the flush may still be backing off: its error, EIO, until the retry */
	env_fault_clear(fe);
	r = -EIO;
	for (long ms = 0; r == -EIO && ms < PATIENCE_MS; ms += 5) {
		if ((r = kv_tree_open(db, "t1", NULL, &t)) == -EIO)
			usleep(5000);
	}
	is_int(r, 0, "manifest held: the fault gone, the tree is created");
out_db:
	is_int(kv_close(db), 0, "manifest held: close");
	if (!done)
		goto out;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "manifest held: reopen"))
		goto out;
	is_int(test_tree_listed(db, "t1"), 1, "manifest held: after a reopen the tree is there");
	is_int((int)missing_writes(db, 0, 150), 0, "manifest held: and so is every put");
	kv_close(db);
out:
	env_done(fe, dir);
}

struct dropper {
	struct kv_db *db;
	struct kv_tree *t;
	const char *name;      /* the thread's name, for env_fault_hold_in */
	int r;
	int done;
	pthread_t thread;
};

static void *drop_main(void *arg)
{
	struct dropper *d = arg;

	if (d->name)
		pthread_setname_np(pthread_self(), d->name);
	d->r = kv_tree_drop(d->db, d->t);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Put n keys into tree t: 0 or the first error. */
static int put_tree(struct kv_db *db, struct kv_tree *t, long from, long n)
{
	struct kv_batch *b = kv_batch_new();
	int r = 0;

	for (long i = from; i < from + n && r == 0; i++) {
		struct test_write w;
		test_write_make(i, &w);
		kv_batch_clear(b);
		kv_batch_put_tree(b, t, w.key, w.klen, w.value, w.vlen);
		r = kv_write(db, b, 0);
	}
	kv_batch_free(b);
	return r;
}

/* Tree name's level-0 files (kv_property "levels"), -1 if it is not listed. */
static int l0_files(struct kv_db *db, const char *name)
{
	char *text = kv_property(db, "levels"), *p, head[80];
	int n = -1;

	snprintf(head, sizeof(head), "tree %s\n", name);
	if (text && (p = strstr(text, head)) && (p = strchr(p + strlen(head), '\n')))
		sscanf(p + 1, " 0 %d", &n);
	free(text);
	return n;
}

/* Wait up to ms until tree name has at least want level-0 files: 1 if it has. */
static int l0_wait(struct kv_db *db, const char *name, int want, long ms)
{
	for (long t = 0; t < ms && l0_files(db, name) < want; t += 5)
		usleep(5000);
	return l0_files(db, name) >= want;
}

/* Wait up to ms until no memtable is being flushed: 1 once none is. */
static int flushed_wait(struct kv_db *db, long ms)
{
	int idle = 0;

	for (long t = 0; t <= ms && !idle; t += 5) {
		char *text = kv_property(db, "stats");
		idle = text && strstr(text, " in 0 being flushed") != NULL;
		free(text);
		if (!idle)
			usleep(5000);
	}
	return idle;
}

/* Wait up to ms until more than total calls have been held, one held now: 1 if so. */
static int held_more_wait(struct kv_env *fe, long total, long ms)
{
	long now = 0;

	for (long t = 0; t <= ms; t += 5) {
		long n = env_fault_held(fe, &now);
		if (n >= 1 && now > total)
			return 1;
		usleep(5000);
	}
	return 0;
}

/* No deletion pass runs.  REQUIRES db->mu held. */
static int no_deletion(struct kv_db *db)
{
	return !db->deleting;
}

/*
 * The compaction thread is made to wait in the deletion pass that follows
 * its compaction of e (white-box: db->mu, db->deleting, db->compacting, and
 * the engine's thread names), and the test must know that the pass is its
 * own.  Deletion passes are run by whichever thread asks first (the flush
 * thread after a flush, the log thread after retiring a log, a reader that
 * drops the last reference to a version), the others only asking that pass
 * to go round once more.  So holding every thread's unlinks of tables is not
 * enough: if the flush thread came first it would wait in the unlink
 * instead, the flushes of d would stop, and its puts would wait forever
 * behind a full memtable; and which thread comes first depends on timing.
 * Hence: every hold here is of the compaction thread's calls (and the drop
 * thread's) alone, and the compaction of e is held before its edit, in the
 * fsync of its output, until every flush, retired log and deletion has
 * ended; nothing then runs that could start a pass but the compaction
 * thread itself, which is held again in the first unlink of its pass.
 */
#define DROP_THREAD "test-drop"

static void test_drop_compaction(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/drop", tmpdir);
	struct dropper d = { 0 };
	struct kv_tree *td, *te;
	struct kv_options o;
	struct kv_db *db;
	long total = 0;
	int r, done, compacting = 1;

	options(&o, fe);
	o.l0_compaction_trigger = 2;
	r = kv_open(dir, &o, &db);
	if (r == 0)
		r = kv_tree_open(db, "d", NULL, &td);
	if (r == 0)
		r = kv_tree_open(db, "e", NULL, &te);
	if (!is_int(r, 0, "drop: open, trees d and e"))
		goto out;
	/*
	 * e gets two level-0 files (one flush each), so the compaction thread
	 * compacts them, and waits in the fsync of its output; the flush thread,
	 * which syncs tables too, is not held.
	 */
	env_fault_hold_in(fe, ENV_OP_SYNC, ".sst", DB_THREAD_COMPACT);
	for (int i = 0; i < 2 && r == 0; i++)
		if ((r = put_tree(db, te, i * 50, 50)) == 0)
			r = kv_flush(db);
	ok(r == 0 && held_wait(fe, 1, PATIENCE_MS) && db_wait(db, db_settled_but_compaction),
	   "drop: e's compaction waits in the fsync of its output, and every flush, retired log "
	   "and deletion has ended (%s)", kv_strerror(r));
	/* its edit recorded, the compaction thread deletes e's old tables, and waits there */
	env_fault_held(fe, &total);
	env_fault_hold_in(fe, ENV_OP_UNLINK, ".sst", DB_THREAD_COMPACT);
	ok(held_more_wait(fe, total, PATIENCE_MS), "drop: e compacted, and the compaction "
	   "thread waits in the unlink of its old tables");
	/* d's flushes go on: the pass on its way only goes round once more for them */
	r = put_tree(db, td, 0, 300);
	ok(r == 0 && l0_wait(db, "d", 2, PATIENCE_MS) && flushed_wait(db, PATIENCE_MS),
	   "drop: d has level-0 files enough for a compaction, and no flush runs (%s)",
	   kv_strerror(r));

	/* the drop of d waits in its manifest fsync; the unlink stays held */
	env_fault_hold_in(fe, ENV_OP_UNLINK | ENV_OP_SYNC, ".sst|MANIFEST",
			  DB_THREAD_COMPACT "|" DROP_THREAD);
	d.db = db;
	d.t = td;
	d.name = DROP_THREAD;
	if (pthread_create(&d.thread, NULL, drop_main, &d) != 0) {
		perror("pthread_create");
		exit(1);
	}
	ok(held_wait(fe, 2, PATIENCE_MS), "drop: the drop of d waits in its manifest fsync");
	/*
	 * The unlink goes on and the compaction thread comes free.  It ends its
	 * pass (db->deleting cleared) and goes on to choose its next work
	 * without releasing db->mu, so once no pass runs it has chosen: a
	 * compaction of d would be running (and waiting in its table's fsync).
	 */
	env_fault_hold_in(fe, ENV_OP_SYNC, ".sst|MANIFEST", DB_THREAD_COMPACT "|" DROP_THREAD);
	if (db_wait(db, no_deletion)) {
		pthread_mutex_lock(&db->mu);
		compacting = db->compacting;
		pthread_mutex_unlock(&db->mu);
	}
	ok(!compacting, "drop: no compaction of d starts while its drop is on its way (%ld calls "
	   "held)", env_fault_held(fe, NULL));
	env_fault_release(fe);
	done = 0;
	for (long t = 0; t < PATIENCE_MS && !done; t += 5) {
		done = __atomic_load_n(&d.done, __ATOMIC_ACQUIRE);
		if (!done)
			usleep(5000);
	}
	ok(done && d.r == 0, "drop: once released the drop succeeds (%s)",
	   done ? kv_strerror(d.r) : "still waiting");
	if (!done)
		goto out;   /* a hang: the thread is left, the test has failed */
	pthread_join(d.thread, NULL);
	/* the compaction's result is obsolete: no error of it may stop the database */
	r = kv_flush(db);
	if (r == 0)
		r = put_tree(db, te, 300, 1);
	is_int(r, 0, "drop: the database goes on: a flush and a put succeed after it");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "drop: and so does a compaction of "
	       "everything");
	is_int(test_tree_listed(db, "d"), 0, "drop: d is dropped");
	is_int(kv_close(db), 0, "drop: close");
out:
	env_done(fe, dir);
}

/*
 * One power cut.  Writes 0..synced-1 are made with every tenth (and the
 * last) synced; then every fsync of a log is held (first: only the fsyncs
 * of the first log and of the manifest), and writes synced..total-1 go on
 * without a sync, across memtable switches whose old logs are never synced.
 * The power goes with the fsyncs still held.  Returns 0 if the database opened at a point in time with every
 * synced write, else -1 (with a diagnostic); *kept gets how many writes it
 * holds.
 */
#define CUT_SYNCED 200
static int one_cut(const char *dir, uint64_t seed, int first, long total, long *kept)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db;
	struct putter p;
	long first_missing = -1, holes = 0;
	int r = 0;

	kv_destroy(dir, NULL);
	options(&o, fe);
	o.write_buffer_size = 64u << 10;
	env_fault_cut_model(fe, ENV_CUT_PAGES, seed);
	if ((r = kv_open(dir, &o, &db)) < 0) {
		diag("cut %#llx: open: %s", (unsigned long long)seed, kv_strerror(r));
		goto out;
	}
	for (long i = 0; i < CUT_SYNCED && r == 0; i++)
		r = test_write_put(db, i, i % 10 == 9 || i == CUT_SYNCED - 1 ? KV_SYNC : 0);
	if (r < 0) {
		diag("cut %#llx: synced puts: %s", (unsigned long long)seed, kv_strerror(r));
		kv_close(db);
		goto out;
	}
	if (first) {
		/*
		 * The flush of the first memtable syncs its table and the
		 * directory (so the second log's name survives the cut) and
		 * then waits in its manifest edit: the first log stays needed,
		 * unsynced, while the second one is there to be read after it.
		 */
		char hold[64];
		unsigned long oldest;
		count_logs(dir, &oldest);
		snprintf(hold, sizeof(hold), "/%06lu.log|MANIFEST", oldest);
		env_fault_hold(fe, ENV_OP_SYNC, hold);
	} else {
		env_fault_hold(fe, ENV_OP_SYNC, ".log");
	}
	put_start(&p, db, CUT_SYNCED, total - CUT_SYNCED, 0);
	if (!put_wait(&p, PATIENCE_MS) || p.r < 0) {
		diag("cut %#llx: unsynced puts: %s", (unsigned long long)seed,
		     p.done ? kv_strerror(p.r) : "still waiting");
		r = -1;
	}
	env_fault_power_cut_after(fe, 0);
	env_fault_release(fe);
	pthread_join(p.thread, NULL);
	kv_close(db);
	if (r < 0)
		goto out;
	if ((r = env_fault_drop_unsynced(fe)) < 0)
		goto out;
	env_fault_clear(fe);
	if ((r = kv_open(dir, &o, &db)) < 0) {
		diag("cut %#llx: after the power cut: %s", (unsigned long long)seed,
		     kv_strerror(r));
		goto out;
	}
	*kept = 0;
	for (long i = 0; i < total; i++) {
		int c = test_write_check(db, i);
		if (c == 0) {
			(*kept)++;
			if (first_missing >= 0 && holes++ < 3)
				diag("cut %#llx: write %ld is there but write %ld is not",
				     (unsigned long long)seed, i, first_missing);
		} else if (first_missing < 0) {
			first_missing = i;
		}
	}
	kv_close(db);
	if (first_missing >= 0 && first_missing < CUT_SYNCED) {
		diag("cut %#llx: write %ld, made before the last synced write, is missing",
		     (unsigned long long)seed, first_missing);
		r = -1;
	}
	if (holes)
		r = -1;
out:
	env_fault_free(fe);
	return r;
}

static void test_power_cuts(void)
{
	char *dir = xasprintf("%s/cut", tmpdir);
	uint64_t seeds[2];
	int nseeds = test_seeds(0x5eedc0deull, seeds);
	long trials = scaled(6, 2);

	/*
	 * first: the flush waits in its manifest edit, so the first log is
	 * still needed (one switch, 1500 writes of about 1.9 memtables); logs
	 * only: the flushes go on, several switches (4000 writes).
	 */
	for (int first = 1; first >= 0; first--) {
		long total = first ? 1500 : 4000, kept_all = 0, failed = 0, runs = 0;
		for (int s = 0; s < nseeds; s++) {
			for (long t = 0; t < trials; t++) {
				long kept = 0;
				uint64_t seed = seeds[s] + (uint64_t)t * 0x9e3779b97f4a7c15ull;
				if (one_cut(dir, seed, first, total, &kept) < 0)
					failed++;
				kept_all += kept;
				runs++;
			}
		}
		is_int((int)failed, 0, "power cuts with %s held: every one of %ld opens with "
		       "every synced write, at a point in time (%ld of %ld writes kept in all)",
		       first ? "the first log's and the manifest's fsyncs" :
		       "the retired logs' fsyncs", runs, kept_all,
		       runs * total);
	}
	kv_destroy(dir, NULL);
	free(dir);
}

/* mem_bytes of the default tree's active memtable, and whether a flush is on. */
static size_t active_bytes(struct kv_db *db, int *flushing)
{
	size_t n;

	pthread_mutex_lock(&db->mu);
	n = mem_bytes(db->trees[0]->mem);
	*flushing = db->trees[0]->imm != NULL;
	pthread_mutex_unlock(&db->mu);
	return n;
}

static void test_pacing(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/pacing", tmpdir);
	struct kv_options o;
	struct kv_stats st;
	struct kv_db *db;
	size_t from, used;
	long i = 0, before = 0, past = 0, expect = 0;
	int r, flushing = 0;

	options(&o, fe);
	o.write_buffer_size = 64u << 10;
	from = o.write_buffer_size / 4 * 3;
	/* the flush thread's creation of its table: before it has written any entry */
	env_fault_hold_in(fe, ENV_OP_OPEN, ".sst", DB_THREAD_FLUSH);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "pacing: open"))
		goto out;
	/* the first memtable fills and its flush stops before its first entry */
	for (; i < 5000 && r == 0 && (active_bytes(db, &flushing), !flushing); i++)
		r = test_write_put(db, i, 0);
	ok(r == 0 && held_wait(fe, 1, PATIENCE_MS), "pacing: %ld puts, and the flush of the "
	   "first memtable waits in the creation of its table", i);
	/* the next one up to three quarters: no pacing */
	while (r == 0 && active_bytes(db, &flushing) + 400 < from) {
		r = test_write_put(db, i++, 0);
		before++;
	}
	kv_get_stats(db, &st);
	ok(r == 0 && flushing && st.paced_writes == 0, "pacing: %ld puts fill the next memtable "
	   "to three quarters, none paced (%llu)", before, (unsigned long long)st.paced_writes);
	/* past it, with the flush making no progress: each put is paced, and returns */
	while (r == 0 && (used = active_bytes(db, &flushing)) + 400 < o.write_buffer_size) {
		expect += used > from;
		r = test_write_put(db, i++, 0);
		past++;
	}
	kv_get_stats(db, &st);
	ok(r == 0 && past > 10 && st.paced_writes == (uint64_t)expect && env_fault_held(fe, NULL),
	   "pacing: %ld puts up to the full memtable while the flush is held, every one past "
	   "three quarters paced (%llu of %ld) and through", past,
	   (unsigned long long)st.paced_writes, expect);
	env_fault_release(fe);
	r = kv_flush(db);
	is_int(r, 0, "pacing: once released, the flushes go through (%s)", r ? kv_strerror(r) : "ok");
	for (long j = 0; j < i && r == 0; j++)
		r = test_write_check(db, j);
	is_int(r, 0, "pacing: all %ld puts read back", i);
	kv_close(db);
out:
	kv_destroy(dir, NULL);
	env_fault_free(fe);
	free(dir);
}

/* db_delay_step and db_delay_charge alone, on a clock of their own. */
static void test_delay_steps(void)
{
	struct write_delay d = { 0, 0 };
	const uint64_t base = 1u << 20;
	uint64_t w, w2, rate_at_2, rate_at_4;

	w = db_delay_step(&d, base, 1, 2, 1000);
	ok(w == 0 && d.rate == 0, "slowdown steps: below the trigger no delay and no rate");
	db_delay_charge(&d, 1u << 20, 1000);
	ok(d.until == 0, "slowdown steps: and nothing charged");
	w = db_delay_step(&d, base, 2, 2, 1000);
	rate_at_2 = d.rate;
	ok(w == 0 && rate_at_2 == base && d.until == 1000,
	   "slowdown steps: at the trigger the base rate, and nothing owed yet (%llu B/s)",
	   (unsigned long long)rate_at_2);
	db_delay_charge(&d, base / 2500, 1000);           /* 0.4 ms of bytes */
	w = db_delay_step(&d, base, 2, 2, 1000);
	db_delay_charge(&d, base / 5000, 1000);           /* 0.2 ms more */
	w2 = db_delay_step(&d, base, 2, 2, 1000);
	ok(w == 0 && w2 >= DELAY_QUANTUM_US && w2 < DELAY_MAX_US,
	   "slowdown steps: 0.4 ms owed is let through, 0.6 ms is slept (%llu us)",
	   (unsigned long long)w2);
	w = db_delay_step(&d, base, 2, 2, 1000 + w2);
	ok(w == 0 && d.until == 1000 + w2, "slowdown steps: once slept, nothing owed");
	db_delay_charge(&d, base / 5000, 1000 + w2);    /* 0.2 ms, then 1 ms without a write */
	w = db_delay_step(&d, base, 4, 2, 2000 + w2);
	rate_at_4 = d.rate;
	ok(w == 0 && rate_at_4 == base / 4 * 3 / 4 * 3 && d.until == 2000 + w2,
	   "slowdown steps: two tables more, 9/16 of the rate (%llu B/s); no credit for the "
	   "time nobody wrote",
	   (unsigned long long)rate_at_4);
	db_delay_charge(&d, base, 2000);
	w = db_delay_step(&d, base, 4, 2, 2000);
	ok(w == DELAY_MAX_US && d.until == 2000 + DELAY_HORIZON_US,
	   "slowdown steps: a mebibyte owed (%.2f s at that rate) is slept %d us at a time, "
	   "and what is owed past %d ms forgiven", (double)base / (double)rate_at_4,
	   DELAY_MAX_US, DELAY_HORIZON_US / 1000);
	w = db_delay_step(&d, base, 200, 2, 2000);
	ok(d.rate == DELAY_MIN_RATE, "slowdown steps: the rate never falls below %d B/s",
	   DELAY_MIN_RATE);
	w = db_delay_step(&d, base, 1, 2, 3000);
	db_delay_charge(&d, 1u << 20, 3000);
	ok(w == 0 && d.rate == 0 && d.until == 2000 + DELAY_HORIZON_US,
	   "slowdown steps: below the trigger again the slowdown ends, and nothing is charged");
	w = db_delay_step(&d, base, 2, 2, 4000);
	ok(w == 0 && d.until == 4000, "slowdown steps: a new slowdown starts owing nothing");
}

static int level0_files(struct kv_db *db)
{
	struct kv_stats st;

	kv_get_stats(db, &st);
	return st.files_per_level[0];
}

static void test_slowdown(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/slowdown", tmpdir);
	struct kv_options o;
	struct kv_stats st0, st;
	struct kv_db *db;
	uint64_t t0, elapsed, bytes, least;
	long i = 0, n = 0, delayed;
	int r, l0 = 0;

	options(&o, fe);
	/*
	 * One flush makes the slowdown; the next memtable has room for many
	 * times the 400 puts that follow, so level 0 stays at one table and
	 * the rate at slowdown_rate: a put of about 75 bytes owes about 0.14 ms,
	 * a sleep every 4 puts (if the puts are quicker than that).
	 */
	o.write_buffer_size = 1u << 20;
	o.l0_compaction_trigger = 1;
	o.l0_slowdown_trigger = 1;
	o.l0_stop_trigger = 1000;
	o.slowdown_rate = 512u << 10;
	/* compaction stops in its first table (open or creation): level 0 only grows */
	env_fault_hold_in(fe, ENV_OP_OPEN, ".sst", DB_THREAD_COMPACT);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "slowdown: open"))
		goto out;
	for (; i < 100000 && r == 0 && (l0 = level0_files(db)) < o.l0_slowdown_trigger; i++)
		r = test_write_put(db, i, 0);
	kv_get_stats(db, &st0);
	ok(r == 0 && l0 >= o.l0_slowdown_trigger && held_wait(fe, 1, PATIENCE_MS) &&
	   st0.delayed_writes == 0,
	   "slowdown: %ld puts flush %d table into level 0 with its compaction held, "
	   "none of them delayed", i, l0);
	t0 = now_micros();
	for (; n < 400 && r == 0; n++)
		r = test_write_put(db, i++, 0);
	elapsed = now_micros() - t0;
	kv_get_stats(db, &st);
	is_int(st.files_per_level[0], 1, "slowdown: level 0 still holds one table");
	bytes = st.bytes_written_wal - st0.bytes_written_wal - (uint64_t)n * WAL_HEADER;
	delayed = (long)(st.delayed_writes - st0.delayed_writes);
	/*
	 * What may still be owed when the last put returns: under a quantum,
	 * and that put's own bytes; and each charge rounds down a microsecond.
	 */
	least = bytes * 1000000u / o.slowdown_rate - DELAY_QUANTUM_US - DELAY_MAX_US - (uint64_t)n;
	ok(r == 0 && elapsed >= least, "slowdown: %ld puts of %llu bytes take %llu us, at least "
	   "what %llu B/s allows less what may still be owed (%llu us)", n, (unsigned long long)bytes,
	   (unsigned long long)elapsed, (unsigned long long)o.slowdown_rate,
	   (unsigned long long)least);
	/* a machine so slow that each put takes longer than it owes needs no sleep */
	ok(delayed <= n / 3 && (delayed > 0 || elapsed / (uint64_t)n >= 140),
	   "slowdown: the delay is spread: %ld of the %ld puts slept, each for the debt of several "
	   "(%llu us a put)", delayed, n, (unsigned long long)(elapsed / (uint64_t)n));
	env_fault_release(fe);
	ok(wait_idle(db), "slowdown: released, compaction empties level 0");
	for (long j = 0; j < 200 && r == 0; j++)
		r = test_write_put(db, i++, 0);
	kv_get_stats(db, &st0);
	pthread_mutex_lock(&db->mu);
	ok(r == 0 && st0.delayed_writes == st.delayed_writes && db->delay.rate == 0,
	   "slowdown: below the trigger again, 200 puts and none delayed");
	pthread_mutex_unlock(&db->mu);
	for (long j = 0; j < i && r == 0; j++)
		r = test_write_check(db, j);
	is_int(r, 0, "slowdown: all %ld puts read back", i);
	kv_close(db);
out:
	kv_destroy(dir, NULL);
	env_fault_free(fe);
	free(dir);
}

int main(void)
{
	plan(75);
	make_tmpdir("kv_logsync");
	test_sync_held();
	test_retired_sync_fails();
	test_two_trees();
	test_first_log_lost();
	test_unlink_held();
	test_manifest_held();
	test_drop_compaction();
	test_pacing();
	test_delay_steps();
	test_slowdown();
	test_power_cuts();
	rm_rf(tmpdir);
	return exit_status();
}
