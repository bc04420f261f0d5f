/*
 * kv_syncerr.c -- a failed fsync is never reported as success, and never
 * leaves a hole: each case what a user sees after the fault and after a
 * power cut that follows it.
 *
 *   - every fsync of a workload (logs, tables, MANIFEST, CURRENT and the
 *     directory; opens, synced writes, flushes, compactions, closes) is failed
 *     in turn: the call that met it returns the error (or a background retry
 *     succeeds, or it was the log thread's sync of a retired log for a
 *     synced write, which makes the log a failed log whose writes that
 *     write first flushes to tables), and after a power cut right then the
 *     database opens with every acknowledged write;
 *   - a manifest switch (the next edit after a failed MANIFEST write starts a
 *     new manifest): a failed fsync of the new MANIFEST, of CURRENT's
 *     temporary file or of the directory after CURRENT is renamed fails the
 *     edit, and a power cut then loses nothing acknowledged;
 *   - after a log failed (an fsync or an append), a later synced write is
 *     acknowledged only once the writes acknowledged without a sync in the
 *     failed log are durable: a power cut right after it keeps all of them.
 *     The fault environment forgets what a failed fsync was to keep even if
 *     a later fsync of the same file succeeds (Linux does), so a retried
 *     fsync of the failed log does not pass here;
 *   - the same when the flush that synced write waits for fails too: the
 *     write fails with the flush's error (it neither waits for ever nor is
 *     acknowledged), and the next one, once the fault is gone, goes on;
 *   - a log fails and the database is closed: the close makes the failed
 *     log's writes durable in tables, and a power cut right after it loses
 *     none of them;
 *   - a log fails, later writes go to the next log, and the power goes
 *     before any synced write: the failed log's unsynced tail is cut short,
 *     has a page of zeros, or loses pages at random, while the next log's
 *     reached the disk.  The database must open at a point in time: every
 *     synced write, and of the others a prefix in write order, never a later
 *     write without an earlier one.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Background retries of a failed flush or compaction, counted from the engine's log. */
static long retries;
/*
 * Failed fsyncs of a log retired by a memtable switch, which the log thread
 * makes for a synced write: the log becomes a failed log, whose writes that
 * write makes durable in tables before it goes on, so it is not failed.
 */
static long retired_failures;

static void quiet(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level;
	if (strstr(msg, "retrying after: "))
		__atomic_add_fetch(&retries, 1, __ATOMIC_RELAXED);
	if (strstr(msg, "syncing retired log "))
		__atomic_add_fetch(&retired_failures, 1, __ATOMIC_RELAXED);
	if (getenv("SYNCERR_LOG"))
		diag("log: %s", msg);
}

/* Only the test's own calls flush or compact: every fsync happens inside one of them. */
static void options(struct kv_options *o, struct kv_env *env)
{
	kv_options_init(o);
	o->env = env;
	o->write_buffer_size = 4u << 20;
	o->target_file_size = 8u << 10;
	o->l0_compaction_trigger = 1000;
	o->l0_slowdown_trigger = 1000;
	o->l0_stop_trigger = 1000;
	o->log = quiet;
}

/* How many of the keys i < n with acked[i] set are missing or wrong. */
static int count_lost(struct kv_db *db, const char *acked, int n, const char *what)
{
	int lost = 0;

	for (int i = 0; i < n; i++) {
		int r = acked[i] ? test_write_check(db, i) : 0;

		if (r != 0 && lost++ < 3)
			diag("%s: acknowledged key%06d %s", what, i,
			     r < 0 ? kv_strerror(r) : "has a wrong value");
	}
	return lost;
}

/*
 * The power goes now: every call fails from here, the database is closed as
 * a dying process would leave it, and the disk keeps what was synced.  Then
 * the database must open; returns how many acknowledged writes it lost, or
 * -1 if it does not open.
 */
static int cut_and_check(struct kv_env *fe, struct kv_db **db, const char *dir, const char *acked,
			 int n, const char *what)
{
	struct kv_options o;
	int r, lost;

	env_fault_power_cut_after(fe, 0);
	if (*db)
		kv_close(*db);
	*db = NULL;
	r = env_fault_drop_unsynced(fe);
	if (r < 0) {
		diag("%s: env_fault_drop_unsynced: %s", what, kv_strerror(r));
		return -1;
	}
	env_fault_clear(fe);
	options(&o, fe);
	r = kv_open(dir, &o, db);
	if (r < 0) {
		diag("%s: after the power cut the database does not open: %s", what, kv_strerror(r));
		*db = NULL;
		return -1;
	}
	lost = count_lost(*db, acked, n, what);
	r = kv_close(*db);
	*db = NULL;
	if (r < 0) {
		diag("%s: close after the power cut: %s", what, kv_strerror(r));
		return -1;
	}
	return lost;
}

/* ---------------------------------------------------------------- every fsync in turn */

#define PUTS 24
#define STEPS 13
#define MAXKEYS (PUTS * 4)

struct run {
	struct kv_env *fe;
	struct kv_db *db;
	const char *dir;
	char acked[MAXKEYS];
	int next_key;
};

/* Step s of the workload; 0 or the error of the call that failed. */
static int step(struct run *w, int s)
{
	struct kv_options o;
	int r = 0;

	switch (s) {
	case 0: case 8:
		options(&o, w->fe);
		return kv_open(w->dir, &o, &w->db);
	case 1: case 3: case 6: case 9:
		for (int i = 0; i < PUTS && r == 0; i++) {
			r = test_write_put(w->db, w->next_key, KV_SYNC);
			if (r == 0)
				w->acked[w->next_key] = 1;
			w->next_key++;
		}
		return r;
	case 2: case 4: case 10:
		return kv_flush(w->db);
	case 5: case 11:
		return kv_compact_range(w->db, NULL, 0, NULL, 0);
	case 7: case 12:
		r = kv_close(w->db);
		w->db = NULL;
		return r;
	}
	return 0;
}

/*
 * Fail the nth fsync (file or directory) of the workload with EIO.  Returns
 * 0 if the workload had no nth fsync, 1 if the fault was met; then *step_r
 * is what the call that met it returned, *retried whether the engine retried
 * a failed flush or compaction in the background during that call (which
 * then may succeed and the call with it), *background whether the fault
 * met the log thread's sync of a retired log, which the call got past by
 * flushing that log's writes to tables, and *lost what a power cut right after it
 * lost (-1: the database did not open).
 */
static int one_fault_point(long n, int *step_r, int *retried, int *background, int *lost,
			   int *acked_n, const char **where)
{
	long retired0 = __atomic_load_n(&retired_failures, __ATOMIC_RELAXED);
	static const char *names[STEPS] = {
		"open", "synced puts", "flush", "synced puts", "flush", "compaction",
		"synced puts", "close", "reopen", "synced puts", "flush", "compaction", "close",
	};
	struct run w = { .fe = env_fault_new(env_posix()) };
	char *dir = xasprintf("%s/p%04ld", tmpdir, n);
	int met = 0;

	rm_rf(dir);
	w.dir = dir;
	env_fault_cut_model(w.fe, ENV_CUT_PAGES, (uint64_t)n + 1);
	env_fault_inject(w.fe, ENV_OP_SYNC, n, 1, -EIO, NULL);
	for (int s = 0; s < STEPS; s++) {
		long retries0 = __atomic_load_n(&retries, __ATOMIC_RELAXED);
		int r = step(&w, s);

		if (env_fault_injected(w.fe) > 0) {
			met = 1;
			*step_r = r;
			*retried = __atomic_load_n(&retries, __ATOMIC_RELAXED) > retries0;
			*where = names[s];
			break;
		}
		if (r < 0) {
			diag("fault point %ld: %s failed before the fault: %s", n, names[s],
			     kv_strerror(r));
			*step_r = r;
			*where = names[s];
			met = -1;
			break;
		}
	}
	/* the log thread logs a failure before the synced write that waits for it goes on */
	*background = __atomic_load_n(&retired_failures, __ATOMIC_RELAXED) > retired0;
	if (met) {
		*acked_n = 0;
		for (int i = 0; i < w.next_key; i++)
			*acked_n += w.acked[i];
		*lost = cut_and_check(w.fe, &w.db, dir, w.acked, w.next_key, *where);
	} else if (w.db) {
		kv_close(w.db);
	}
	env_fault_free(w.fe);
	rm_rf(dir);
	free(dir);
	return met;
}

static void test_every_fsync(void)
{
	long points = 0, silent = 0, errors = 0, retried_ok = 0, background_ok = 0;
	long lost_runs = 0, unopened = 0, acked = 0, lost = 0;
	int met;

	for (long n = 0; n < 1000; n++) {
		int r = 0, l = 0, a = 0, retried = 0, background = 0;
		const char *where = "?";

		met = one_fault_point(n, &r, &retried, &background, &l, &a, &where);
		if (met == 0)
			break;
		points++;
		if (met > 0 && r < 0)
			errors++;
		else if (met > 0 && retried)
			retried_ok++;   /* the background retry succeeded before the call returned */
		else if (met > 0 && background)
			background_ok++;   /* a retired log's sync: it became a failed log */
		else {
			silent++;
			diag("fault point %ld: the fsync failed in %s, which returned %s", n, where,
			     r == 0 ? "success" : kv_strerror(r));
		}
		acked += a;
		if (l < 0)
			unopened++;
		else if (l > 0)
			lost_runs++, lost += l;
	}
	ok(points >= 40, "every fsync of the workload failed in turn: %ld fault points", points);
	is_int(silent, 0, "each failed fsync reached the caller as an error (%ld), was retried "
	       "in the background before the call returned (%ld), or was a retired log's sync "
	       "that made it a failed log (%ld); %ld returned success otherwise",
	       errors, retried_ok, background_ok, silent);
	is_int(unopened, 0, "after each, a power cut leaves a database that opens (%ld power cuts)",
	       points);
	ok(lost == 0 && lost_runs == 0,
	   "and no acknowledged write is lost (%ld acknowledged, %ld lost in %ld runs)", acked, lost,
	   lost_runs);
}

/* ---------------------------------------------------------------- a manifest switch */

/*
 * A compaction whose MANIFEST append fails leaves the manifest's tail
 * unknown, so the next edit starts a new manifest.  Fail one fsync of that
 * switch (the new MANIFEST's, CURRENT's temporary file's, or the
 * directory's after CURRENT is renamed, which comes after the compaction's
 * own directory fsync for its outputs): the compaction that needs the
 * switch must fail, and a power cut then loses nothing acknowledged.
 */
static void manifest_switch_case(const char *what, unsigned ops, long after, const char *match)
{
	static int cases;
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/switch%d", tmpdir, cases++);
	char acked[MAXKEYS] = { 0 };
	struct kv_options o;
	struct kv_db *db = NULL;
	int r, k = 0, tries;
	long base;

	rm_rf(dir);
	options(&o, fe);
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	r = kv_open(dir, &o, &db);
	for (int round = 0; round < 2 && r == 0; round++) {
		for (int i = 0; i < PUTS && r == 0; i++, k++)
			if ((r = test_write_put(db, k, KV_SYNC)) == 0)
				acked[k] = 1;
		if (r == 0)
			r = kv_flush(db);
	}
	is_int(r, 0, "%s: a database with two level-0 tables", what);
	if (r < 0)
		goto out;
	env_fault_inject(fe, ENV_OP_SYNC, 0, 1, -EIO, "MANIFEST");
	r = kv_compact_range(db, NULL, 0, NULL, 0);
	ok(r < 0 && env_fault_injected(fe) == 1,
	   "%s: a compaction whose MANIFEST fsync fails, fails (%s)", what,
	   r ? kv_strerror(r) : "it returned 0");
	env_fault_clear(fe);
	/* the retried compaction (nothing to flush first) switches manifests and meets the fault */
	base = env_fault_injected(fe);
	env_fault_inject(fe, ops, after, -1, -EIO, match);
	r = 0;
	for (tries = 0; tries < 1000 && env_fault_injected(fe) == base; tries++) {
		r = kv_compact_range(db, NULL, 0, NULL, 0);
		if (env_fault_injected(fe) == base)
			usleep(5000);   /* the back-off of the first failure still holds */
	}
	ok(env_fault_injected(fe) > base && r < 0,
	   "%s: the compaction that switches manifests fails with the fsync (%s)", what,
	   env_fault_injected(fe) == base ? "the fault was never met" :
	   r ? kv_strerror(r) : "it returned 0");
	r = cut_and_check(fe, &db, dir, acked, k, what);
	is_int(r, 0, "%s: after a power cut the database opens with all %d acknowledged writes",
	       what, k);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

static void test_manifest_switch(void)
{
	manifest_switch_case("new MANIFEST fsync", ENV_OP_SYNC, 0, "MANIFEST");
	manifest_switch_case("CURRENT fsync", ENV_OP_SYNC, 0, "CURRENT");
	/* the first directory fsync is the compaction's for its outputs */
	manifest_switch_case("directory fsync after CURRENT's rename", ENV_OP_SYNC_DIR, 1, NULL);
}

/* ---------------------------------------------------------------- no hole after a failed log */

enum log_fault { LOG_FSYNC, LOG_APPEND, LOG_EMPTY_SYNC };

/*
 * Make the log fail (how: its fsync under a synced write, an append, or the
 * fsync of an empty synced batch) with the next write, key *k (counted even
 * though it fails); returns that write's result.  The caller clears the
 * fault.
 */
static int fail_log(struct kv_env *fe, struct kv_db *db, int *k, enum log_fault how)
{
	struct kv_batch *b;
	int r;

	env_fault_inject(fe, how == LOG_APPEND ? ENV_OP_APPEND : ENV_OP_SYNC, 0, 1, -EIO, ".log");
	if (how != LOG_EMPTY_SYNC)
		return test_write_put(db, (*k)++, how == LOG_FSYNC ? KV_SYNC : 0);
	b = kv_batch_new();
	r = kv_write(db, b, KV_SYNC);
	kv_batch_free(b);
	return r;
}

/*
 * Writes acknowledged without KV_SYNC, then the log fails (how); then a
 * synced write is acknowledged and the power goes at once.  Every write
 * acknowledged before the synced one must be there.
 */
static void hole_case(const char *what, enum log_fault how)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/hole%d", tmpdir, (int)how);
	char acked[MAXKEYS] = { 0 };
	struct kv_options o;
	struct kv_db *db = NULL;
	int r, k = 0, unsynced = 0;

	rm_rf(dir);
	options(&o, fe);
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < 10 && r == 0; i++, k++)
		if ((r = test_write_put(db, k, KV_SYNC)) == 0)
			acked[k] = 1;
	for (int i = 0; i < 40 && r == 0; i++, k++, unsynced++)
		if ((r = test_write_put(db, k, 0)) == 0)
			acked[k] = 1;
	is_int(r, 0, "%s: 10 synced writes, then %d not synced", what, unsynced);
	if (r < 0)
		goto out;
	r = fail_log(fe, db, &k, how);
	ok(r < 0 && env_fault_injected(fe) == 1, "%s: the write that meets the fault fails (%s)",
	   what, r ? kv_strerror(r) : "it returned 0");
	env_fault_clear(fe);
	/* more unsynced writes, in the new log */
	for (int i = 0; i < 5; i++, k++)
		if (test_write_put(db, k, 0) == 0)
			acked[k] = 1;
	r = test_write_put(db, k, KV_SYNC);
	is_int(r, 0, "%s: the next synced write is acknowledged (%s)", what,
	       r ? kv_strerror(r) : "ok");
	if (r == 0)
		acked[k] = 1;
	k++;
	r = cut_and_check(fe, &db, dir, acked, k, what);
	is_int(r, 0, "%s: a power cut right after it keeps every write acknowledged before it "
	       "(the %d unsynced ones of the failed log too)", what, unsynced);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

static void test_no_hole(void)
{
	hole_case("failed log fsync", LOG_FSYNC);
	hole_case("failed log append", LOG_APPEND);
	hole_case("failed fsync of an empty synced batch", LOG_EMPTY_SYNC);
}

/*
 * The same, but the flush that the synced write waits for fails too (ops on
 * files matching match fail until cleared): the synced write must return
 * that error rather than wait for ever (the alarm bounds the wait) or be
 * acknowledged; once the fault is gone a synced write goes on, and a power
 * cut right after it keeps everything acknowledged before it.
 */
static void flush_fails_case(const char *what, unsigned ops, const char *match)
{
	static int cases;
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/flushfail%d", tmpdir, cases++);
	char acked[MAXKEYS] = { 0 };
	struct kv_options o;
	struct kv_db *db = NULL;
	int r, k = 0, tries;

	rm_rf(dir);
	options(&o, fe);
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < 50 && r == 0; i++, k++)
		if ((r = test_write_put(db, k, i < 10 ? KV_SYNC : 0)) == 0)
			acked[k] = 1;
	env_fault_inject(fe, ENV_OP_SYNC, 0, 1, -EIO, ".log");
	if (r == 0)
		r = test_write_put(db, k++, KV_SYNC) < 0 ? 0 : -EPROTO;
	is_int(r, 0, "%s: 50 writes, 40 not synced, then a synced write whose log fsync fails",
	       what);
	if (r < 0)
		goto out;
	env_fault_clear(fe);
	env_fault_inject(fe, ops, 0, -1, -ENOSPC, match);
	alarm(300);
	r = test_write_put(db, k, KV_SYNC);
	ok(r < 0 && env_fault_injected(fe) > 0,
	   "%s: the next synced write, whose flush of the failed log's writes fails, fails (%s)",
	   what, r ? kv_strerror(r) : "it returned 0");
	if (r == 0)
		acked[k] = 1;
	k++;
	env_fault_clear(fe);
	/* the flush's back-off still holds for a while: a later synced write goes on */
	for (tries = 0; tries < 2000 && (r = test_write_put(db, k, KV_SYNC)) < 0; tries++)
		usleep(5000);
	alarm(0);
	is_int(r, 0, "%s: once the fault is gone, a synced write is acknowledged (%s)", what,
	       r ? kv_strerror(r) : "ok");
	if (r == 0)
		acked[k] = 1;
	k++;
	r = cut_and_check(fe, &db, dir, acked, k, what);
	is_int(r, 0, "%s: a power cut right after it keeps every write acknowledged before it",
	       what);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

static void test_flush_fails(void)
{
	flush_fails_case("table writes fail", ENV_OP_APPEND, ".sst");
	flush_fails_case("MANIFEST fsyncs fail", ENV_OP_SYNC, "MANIFEST");
}

/*
 * Writes acknowledged without KV_SYNC, the log fails (how), and the database
 * is closed: a failed fsync or I/O error may have cost the page cache its
 * copy of them, so the next open must not depend on that log.  Modelled by
 * a power cut right after the close (the fault environment forgets what a
 * failed fsync was to keep): every acknowledged write must be there.
 */
static void close_case(const char *what, enum log_fault how)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/close%d", tmpdir, (int)how);
	char acked[MAXKEYS] = { 0 };
	struct kv_options o;
	struct kv_db *db = NULL;
	int r, k = 0;

	rm_rf(dir);
	options(&o, fe);
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < 50 && r == 0; i++, k++)
		if ((r = test_write_put(db, k, i < 10 ? KV_SYNC : 0)) == 0)
			acked[k] = 1;
	if (r == 0) {
		r = fail_log(fe, db, &k, how) < 0 && env_fault_injected(fe) == 1 ? 0 : -1;
		env_fault_clear(fe);
	}
	if (r < 0) {
		ok(0, "%s: setup", what);
		goto out;
	}
	r = kv_close(db);
	db = NULL;
	is_int(r, 0, "%s: close flushes the failed log's writes (%s)", what,
	       r ? kv_strerror(r) : "ok");
	r = cut_and_check(fe, &db, dir, acked, k, what);
	is_int(r, 0, "%s: a power cut after the close loses none of the 40 unsynced writes", what);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

static void test_close_after_failure(void)
{
	close_case("close after a failed log fsync", LOG_FSYNC);
	close_case("close after a failed log append", LOG_APPEND);
}

/* ---------------------------------------------------------------- a failed log's tail */

#define TAIL_SYNCED 10
#define TAIL_BEFORE 300   /* unsynced writes in the log that fails: several pages */
#define TAIL_AFTER 100    /* unsynced writes in the next log */
#define TAIL_KEYS (TAIL_SYNCED + TAIL_BEFORE + TAIL_AFTER + 40)

enum tail_damage { TAIL_MODEL, TAIL_FIRST_PAGE, TAIL_ZERO_PAGE };

/* The number of the only .log file in dir, or 0 if there is not exactly one. */
static unsigned long only_log(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned long n = 0, found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".log")) {
			found++;
			n = strtoul(e->d_name, NULL, 10);
		}
	}
	closedir(d);
	return found == 1 ? n : 0;
}

/*
 * What a power cut can leave of a log whose pages the page cache wrote back
 * out of order: only its first page (cut there), or its second page zeroed.
 * Returns 0, or -1 (with a diagnostic) if the file cannot be changed.
 */
static int damage_log(const char *dir, unsigned long number, enum tail_damage how)
{
	char *path = xasprintf("%s/%06lu.log", dir, number);
	char zeros[4096] = { 0 };
	int fd = open(path, O_WRONLY), r = 0;

	if (fd < 0)
		r = -1;
	else if (how == TAIL_FIRST_PAGE)
		r = ftruncate(fd, 4096);
	else if (how == TAIL_ZERO_PAGE)
		r = pwrite(fd, zeros, sizeof(zeros), 4096) == (ssize_t)sizeof(zeros) ? 0 : -1;
	if (r < 0)
		diag("damaging %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

/*
 * How many acknowledged writes of 0..n-1 break the point in time: a synced
 * one (below synced) missing, a wrong value, or one present after an earlier
 * one that is missing.  *kept counts those present.
 */
static int holes_in(struct kv_db *db, const char *acked, int n, int synced, const char *what,
		    int *kept)
{
	int first_missing = -1, holes = 0;

	*kept = 0;
	for (int i = 0; i < n; i++) {
		int r;
		if (!acked[i])
			continue;
		r = test_write_check(db, i);
		if (r == 0 && first_missing < 0) {
			(*kept)++;
			continue;
		}
		if (r == 0 || r > 0 || i < synced) {
			if (holes++ < 3)
				diag("%s: key%06d %s (first missing: key%06d)", what, i,
				     r == 0 ? "is there although an earlier write is not" :
				     r > 0 ? "has a wrong value" : "was synced and is lost",
				     first_missing);
			(*kept) += r == 0;
		} else if (first_missing < 0) {
			first_missing = i;
		}
	}
	return holes;
}

/*
 * TAIL_SYNCED synced writes, TAIL_BEFORE unsynced ones, the log fails (how),
 * TAIL_AFTER unsynced writes in the next log, power cut (the cut model, or
 * everything kept and then the failed log damaged by hand).  With a second,
 * empty tree (two_trees), a synced write comes after the failure and the
 * cut: the failed log is then needed by no tree, and its damage must cost
 * nothing.  Returns the holes found, or -1 if the database does not open;
 * *kept is how many acknowledged writes survived.
 */
static int tail_case(const char *what, enum log_fault how, enum tail_damage damage,
		     enum env_cut_model model, uint64_t seed, int two_trees, int *kept)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/tail", tmpdir);
	char acked[TAIL_KEYS] = { 0 };
	struct kv_options o;
	struct kv_db *db = NULL;
	struct kv_tree *other = NULL;
	unsigned long failed_log;
	int r, k = 0, holes = -1, synced = TAIL_SYNCED;

	*kept = 0;
	rm_rf(dir);
	options(&o, fe);
	env_fault_cut_model(fe, damage == TAIL_MODEL ? model : ENV_CUT_KEEP, seed);
	r = kv_open(dir, &o, &db);
	if (r == 0 && two_trees)
		r = kv_tree_open(db, "other", NULL, &other);
	for (int i = 0; i < TAIL_SYNCED && r == 0; i++, k++)
		if ((r = test_write_put(db, k, KV_SYNC)) == 0)
			acked[k] = 1;
	for (int i = 0; i < TAIL_BEFORE && r == 0; i++, k++)
		if ((r = test_write_put(db, k, 0)) == 0)
			acked[k] = 1;
	failed_log = only_log(dir);
	if (r < 0 || !failed_log) {
		diag("%s: setup: %s", what, r < 0 ? kv_strerror(r) : "not exactly one log");
		goto out;
	}
	r = fail_log(fe, db, &k, how);
	if (r == 0 || env_fault_injected(fe) != 1) {
		diag("%s: the write meeting the fault returned %d", what, r);
		goto out;
	}
	env_fault_clear(fe);
	for (int i = 0; i < TAIL_AFTER; i++, k++) {
		if (two_trees && i == TAIL_AFTER / 2) {
			/* a synced write: the failed log's writes go to tables first */
			if ((r = test_write_put(db, k, KV_SYNC)) == 0)
				acked[k] = 1;
			synced = k + 1;
			continue;
		}
		if (test_write_put(db, k, 0) == 0)
			acked[k] = 1;
	}
	env_fault_power_cut_after(fe, 0);
	kv_close(db);
	db = NULL;
	if ((r = env_fault_drop_unsynced(fe)) < 0) {
		diag("%s: env_fault_drop_unsynced: %s", what, kv_strerror(r));
		goto out;
	}
	env_fault_clear(fe);
	if (damage != TAIL_MODEL) {
		/* the failed log may be gone: no tree needed it any more */
		char *p = xasprintf("%s/%06lu.log", dir, failed_log);
		int there = access(p, F_OK) == 0;
		free(p);
		if (there && damage_log(dir, failed_log, damage) < 0)
			goto out;
	}
	options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (r < 0) {
		diag("%s: after the power cut the database does not open: %s", what, kv_strerror(r));
		db = NULL;
		goto out;
	}
	holes = holes_in(db, acked, k, synced, what, kept);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
	return holes;
}

#define TAIL_SEEDS 8

static void test_failed_log_tail(void)
{
	static const struct {
		const char *what;
		enum log_fault how;
		enum tail_damage damage;
		int two_trees;
	} cases[] = {
		{ "failed append, the log cut after its first page", LOG_APPEND, TAIL_FIRST_PAGE, 0 },
		{ "failed append, a page of the log zeroed", LOG_APPEND, TAIL_ZERO_PAGE, 0 },
		{ "failed fsync, the log cut after its first page", LOG_FSYNC, TAIL_FIRST_PAGE, 0 },
		{ "failed fsync, a page of the log zeroed", LOG_FSYNC, TAIL_ZERO_PAGE, 0 },
		{ "failed append, an empty second tree, a synced write, the log cut", LOG_APPEND,
		  TAIL_FIRST_PAGE, 1 },
	};
	int kept, h, bad = 0, total_kept = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h = tail_case(cases[i].what, cases[i].how, cases[i].damage, ENV_CUT_KEEP, 0,
			      cases[i].two_trees, &kept);
		ok(h == 0, "%s: the database opens at a point in time (%s; %d writes kept)",
		   cases[i].what, h < 0 ? "it does not open" : h ? "holes" : "no hole", kept);
	}
	for (uint64_t seed = 1; seed <= TAIL_SEEDS; seed++) {
		h = tail_case("failed append, pages cut at random", LOG_APPEND, TAIL_MODEL,
			      ENV_CUT_PAGES, seed, 0, &kept);
		bad += h != 0;
		total_kept += kept;
	}
	is_int(bad, 0, "failed append, then %d power cuts keeping, dropping and zeroing pages at "
	       "random: every one opens at a point in time (%d writes kept in all)", TAIL_SEEDS,
	       total_kept);
}

int main(void)
{
	plan(4 + 3 * 4 + 3 * 4 + 2 * 4 + 2 * 2 + 5 + 1);
	make_tmpdir("syncerr");
	test_every_fsync();
	test_manifest_switch();
	test_no_hole();
	test_flush_fails();
	test_close_after_failure();
	test_failed_log_tail();
	rm_rf(tmpdir);
	return exit_status();
}
