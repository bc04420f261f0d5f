/*
 * kv_faults.c -- the engine under a full disk, I/O errors and a shortage of
 * descriptors: each case a failure once seen, each assertion what must hold.
 *
 *   - a level-0 table that cannot be written fails the flush (never an empty
 *     table committed and the logs released), and the database reopens with
 *     every write;
 *   - a failed directory fsync right after CURRENT is switched leaves the
 *     manifest CURRENT names in place;
 *   - a disk that stays full sees no writes: a failed flush is retried
 *     once space came back;
 *   - a first open that dies at any write leaves a directory that opens;
 *   - after a transient error in a flush, a compaction, the log or the
 *     manifest, writes resume without a reopen once the cause is gone, and
 *     the error's message names the file;
 *   - a compaction that fails just before kv_flush does not fail the flush:
 *     it waits for the retry;
 *   - a flush that began on a full disk and fails after space came back is
 *     retried: the retry waits for more space than the flush had when it
 *     began, not for more than is free after the space came back;
 *   - data files are 0600, the directory 0700;
 *   - the table cache keeps within the descriptor limit, which kv_open raises
 *     from soft to hard.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"
#include "dbtest.h"

#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>




static char *dbpath(const char *name)
{
	char *p = xasprintf("%s/%s", tmpdir, name);

	rm_rf(p);
	return p;
}

static void quiet(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level; (void)msg;
}

static void small_options(struct kv_options *o, struct kv_env *env)
{
	kv_options_init(o);
	o->env = env;
	o->write_buffer_size = 16u << 10;
	o->target_file_size = 8u << 10;
	o->max_bytes_level_base = 32u << 10;
	o->l0_compaction_trigger = 2;
	o->log = quiet;
}

/* 0 if keys [from, to) are all there with their values, else the first missing key. */
static int check_keys(struct kv_db *db, int from, int to)
{
	for (int i = from; i < to; i++) {
		int r = test_write_check(db, i);

		if (r != 0) {
			diag("key%06d: %s", i, r < 0 ? kv_strerror(r) : "wrong value");
			return i ? i : -1;
		}
	}
	return 0;
}

/* Retry a put (up to ~5 s) until it succeeds; returns the last result. */
static int put_until_ok(struct kv_db *db, int i, unsigned flags)
{
	int r = -1;

	for (int t = 0; t < 1000 && (r = test_write_put(db, i, flags)) != 0; t++)
		usleep(5000);
	return r;
}

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	size_t sl = strlen(suffix);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		n += l > sl && !strcmp(e->d_name + l - sl, suffix);
	}
	closedir(d);
	return n;
}

/* ---------------------------------------------------------------- item: failed flush */

static void test_failed_flush(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("flush");
	int r, N = 300;

	small_options(&o, fe);
	o.write_buffer_size = 1u << 20;   /* only kv_flush flushes */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "failed flush: open");
	if (r < 0)
		goto out;
	for (int i = 0; i < N && r == 0; i++)
		r = test_write_put(db, i, KV_SYNC);
	is_int(r, 0, "failed flush: %d synced puts", N);
	env_fault_inject(fe, ENV_OP_APPEND, 0, -1, -ENOSPC, ".sst");
	r = kv_flush(db);
	is_int(r, -ENOSPC, "a flush whose table cannot be written fails with ENOSPC");
	ok(strstr(kv_strerror(r), ".sst") != NULL, "its message names the table (%s)",
	   kv_strerror(r));
	r = test_write_put(db, N, 0);
	is_int(r, -ENOSPC, "while the flush keeps failing, writes fail with its error");
	ok(strstr(kv_strerror(r), ".sst") != NULL,
	   "and the writer's message names the file (%s)", kv_strerror(r));
	ok(count_files(dir, ".log") >= 1, "the log holding the writes is kept");
	kv_close(db);
	db = NULL;
	/*
	 * The disk is still full: the open keeps the recovered writes in memory
	 * and their logs on disk, and a synced write, which must first make them
	 * durable in tables, fails while it cannot.
	 */
	o.log = quiet;
	for (int round = 0; round < 2; round++) {
		r = kv_open(dir, &o, &db);
		is_int(r, 0, "open %d on the still-full disk succeeds (the recovered writes stay "
		       "in memory)", round + 1);
		if (r < 0)
			goto out;
		is_int(check_keys(db, 0, N + round), 0, "open %d: every acknowledged write reads "
		       "back", round + 1);
		is_int(test_write_put(db, N + round, 0), 0, "open %d: an unsynced write goes on",
		       round + 1);
		is_int(test_write_put(db, N + 10, KV_SYNC), -ENOSPC, "open %d: a synced write "
		       "fails with ENOSPC: the recovered writes cannot be flushed", round + 1);
		kv_close(db);
		db = NULL;
	}
	N += 2;
	env_fault_clear(fe);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "with space again the database opens");
	if (r < 0)
		goto out;
	is_int(check_keys(db, 0, N), 0, "every acknowledged write is there after the failed flush");
	is_int(kv_close(db), 0, "failed flush: close");
	db = NULL;
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: CURRENT switch */

static void test_current_dir_sync(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("current"), *cur;
	int r, N = 100;

	small_options(&o, fe);
	o.write_buffer_size = 1u << 20;
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < N && r == 0; i++)
		r = test_write_put(db, i, 0);
	if (r == 0)
		r = kv_flush(db);   /* the log left at close is empty: the next open flushes nothing */
	if (r == 0)
		r = kv_close(db);
	db = NULL;
	is_int(r, 0, "CURRENT switch: a database with %d keys in a table", N);
	/* the open's first directory fsync is the one right after CURRENT's rename */
	env_fault_inject(fe, ENV_OP_SYNC_DIR, 0, 1, -EIO, NULL);
	r = kv_open(dir, &o, &db);
	is_int(r, -EIO, "an open whose directory fsync after the CURRENT switch fails, fails");
	if (r == 0) {
		kv_close(db);
		db = NULL;
	}
	env_fault_clear(fe);
	{
		char *name = NULL, *mpath;
		size_t len;
		cur = xasprintf("%s/CURRENT", dir);
		r = env_read_file(env_posix(), cur, &name, &len);
		if (r == 0 && len > 0)
			name[len - 1] = 0;
		mpath = xasprintf("%s/%s", dir, r == 0 ? name : "?");
		is_int(env_exists(env_posix(), mpath), 1, "the manifest CURRENT names is there (%s)",
		       r == 0 ? name : "no CURRENT");
		free(mpath);
		free(name);
		free(cur);
	}
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "the database opens again (%s)", r ? kv_strerror(r) : "ok");
	if (r == 0) {
		is_int(check_keys(db, 0, N), 0, "with every key");
		kv_close(db);
	}
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: a disk that stays full */

/*
 * A flush on a disk with too little room fails with ENOSPC after writing
 * what fit, and gives it back.  Retrying while the disk stays full would
 * write the same bytes and fail at the same point, again and again: the
 * engine retries once space came back, and until then writers get ENOSPC
 * and the disk sees no writes at all.
 */
static void test_full_disk(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("full");
	int r, N = 40000, attempts = 0, refused = 0;
	uint64_t written, t0;

	small_options(&o, fe);
	o.write_buffer_size = 4u << 20;   /* only kv_flush flushes */
	o.l0_compaction_trigger = 100;
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < N && r == 0; i++)
		r = test_write_put(db, i, 0);
	is_int(r, 0, "full disk: %d writes", N);
	if (r < 0)
		goto out;
	env_fault_set_space(fe, 160u << 10);   /* more than the table's 64 KiB writes, less than it */
	r = kv_flush(db);
	is_int(r, -ENOSPC, "full disk: the flush fails with ENOSPC (%s)", kv_strerror(r));
	written = env_fault_bytes_written(fe);
	/* long enough for several retries at the backoff's 10 ms, 20 ms, ... 1 s */
	for (t0 = now_micros(); now_micros() - t0 < 1500000; attempts++) {
		r = test_write_put(db, N + attempts, 0);
		refused += r == -ENOSPC;
		usleep(5000);
	}
	written = env_fault_bytes_written(fe) - written;
	ok(written == 0, "while the disk stays full (1.5 s), nothing is written: %llu bytes "
	   "(a retried flush writes what fits again)", (unsigned long long)written);
	is_int(refused, attempts, "and each of the %d writes meanwhile fails with ENOSPC", attempts);
	env_fault_set_space(fe, 64u << 20);
	r = put_until_ok(db, N, 0);
	is_int(r, 0, "once space is back, writes resume without a reopen (%s)",
	       r ? kv_strerror(r) : "ok");
	r = kv_flush(db);
	is_int(r, 0, "and the flush goes through (%s)", r ? kv_strerror(r) : "ok");
	is_int(check_keys(db, 0, N + 1), 0, "with every acknowledged write");
	is_int(kv_close(db), 0, "full disk: close");
	db = NULL;
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: flush after a failed compaction */

static int compaction_failed, flush_failed;

static void note_compaction_failure(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg;
	if (level == KV_LOG_ERROR && strstr(msg, "compaction failed"))
		__atomic_store_n(&compaction_failed, 1, __ATOMIC_RELEASE);
	if (level == KV_LOG_ERROR && strstr(msg, "flush failed"))
		__atomic_store_n(&flush_failed, 1, __ATOMIC_RELEASE);
}

/* Until an operation held by the fault env waits, for at most 5 s; returns how many do. */
static long wait_held(struct kv_env *fe)
{
	long held = 0;

	for (uint64_t t0 = now_micros(); !(held = env_fault_held(fe, NULL)) &&
	     now_micros() - t0 < 5000000;)
		usleep(1000);
	return held;
}

/*
 * Open dir with the thread's first table write held (o->env is fe), and put
 * keys 0, 1, ... until it waits (or 5 s after the puts ran out).  Returns
 * the open's or the puts' error or 0; *i is the number of puts, *held
 * whether the write is held.
 */
static int open_until_held(const char *dir, const struct kv_options *o, struct kv_db **db,
			   const char *thread, int *i, long *held)
{
	struct kv_env *fe = o->env;
	int r;

	env_fault_hold_in(fe, ENV_OP_APPEND, ".sst", thread);
	*i = 0;
	*held = 0;
	if ((r = kv_open(dir, o, db)) < 0)
		return r;
	for (; r == 0 && *i < 20000 && !(*held = env_fault_held(fe, NULL)); (*i)++)
		r = test_write_put(*db, *i, 0);
	if (r == 0 && !*held)
		*held = wait_held(fe);
	return r;
}

/* Until *flag is set, for at most 5 s; returns it. */
static int wait_flag(int *flag)
{
	for (uint64_t t0 = now_micros(); !__atomic_load_n(flag, __ATOMIC_ACQUIRE) &&
	     now_micros() - t0 < 5000000;)
		usleep(200);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/*
 * A compaction whose table write failed (EIO, transient) just before
 * kv_flush is called: the flush waits for the retry and goes through.  It
 * used to return the compaction's error at once, which kv_enospc met under
 * ASan when a compaction that began on a full disk failed after space had
 * come back.
 */
static void test_flush_after_failed_compaction(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("flushretry");
	int r, i, n;
	long held = 0;

	small_options(&o, fe);
	o.log = note_compaction_failure;
	compaction_failed = 0;
	/* the compaction thread's first table write waits where the test says */
	r = open_until_held(dir, &o, &db, DB_THREAD_COMPACT, &i, &held);
	if (!ok(r == 0 && held, "flush after a failed compaction: a compaction is writing "
		"its table after %d puts (%s)", i, r ? kv_strerror(r) : "ok"))
		goto out;
	/* the memtables out, then a few writes that fill none */
	r = kv_flush(db);
	for (n = i + 20; r == 0 && i < n; i++)
		r = test_write_put(db, i, 0);
	is_int(r, 0, "writes while the compaction waits (%s)", r ? kv_strerror(r) : "ok");
	env_fault_inject(fe, ENV_OP_APPEND, 0, 1, -EIO, ".sst");
	env_fault_release(fe);
	ok(wait_flag(&compaction_failed) && env_fault_injected(fe) == 1,
	   "the compaction fails with EIO (%ld injected)", env_fault_injected(fe));
	r = kv_flush(db);
	is_int(r, 0, "a flush right after it waits for the retry and goes through (%s)",
	       r ? kv_strerror(r) : "ok");
	is_int(check_keys(db, 0, i), 0, "every write is there");
	is_int(kv_close(db), 0, "flush after a failed compaction: close");
	db = NULL;
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: space back during a flush */

/*
 * A flush begins with 256 KiB free and writes its table while space comes
 * back (64 MiB free), then fails with ENOSPC, as one that hit the full disk
 * just before a file was removed.  The retry must not wait for more than
 * the 64 MiB that are now free (the free space measured once the failed
 * flush was undone), which would never come: kv_flush and kv_close used to
 * fail with ENOSPC for up to 30 s (kv_enospc met it on a loaded machine).
 */
struct flush_call {
	struct kv_db *db;
	int r;
};

static void *call_flush(void *arg)
{
	struct flush_call *fc = arg;

	fc->r = kv_flush(fc->db);
	return NULL;
}

static void test_space_back_during_flush(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("spaceback");
	struct flush_call fc = { NULL, -1 };
	pthread_t th;
	int r, i;

	small_options(&o, fe);
	o.write_buffer_size = 1u << 20;   /* only kv_flush flushes: no put waits for the held one */
	o.log = note_compaction_failure;
	flush_failed = 0;
	env_fault_set_space(fe, 256u << 10);
	r = kv_open(dir, &o, &db);
	for (i = 0; r == 0 && i < 200; i++)
		r = test_write_put(db, i, 0);
	if (!is_int(r, 0, "space back during a flush: 200 puts with 256 KiB free (%s)",
		    r ? kv_strerror(r) : "ok"))
		goto out;
	/* the flush thread's table write waits where the test says */
	env_fault_hold_in(fe, ENV_OP_APPEND, ".sst", DB_THREAD_FLUSH);
	fc.db = db;
	if (pthread_create(&th, NULL, call_flush, &fc) != 0) {
		ok(0, "a thread for kv_flush");
		goto out;
	}
	ok(wait_held(fe), "a flush is writing its table");
	env_fault_set_space(fe, 64u << 20);
	env_fault_inject(fe, ENV_OP_APPEND, 0, 1, -ENOSPC, ".sst");
	env_fault_release(fe);
	ok(wait_flag(&flush_failed) && env_fault_injected(fe) == 1,
	   "the flush fails with ENOSPC (%ld injected)", env_fault_injected(fe));
	pthread_join(th, NULL);
	is_int(fc.r, 0, "the kv_flush waiting for it retries and goes through (%s)",
	       fc.r ? kv_strerror(fc.r) : "ok");
	r = put_until_ok(db, i, 0);
	is_int(r, 0, "writes go on (%s)", r ? kv_strerror(r) : "ok");
	is_int(check_keys(db, 0, i + 1), 0, "every write is there");
	r = kv_close(db);
	db = NULL;
	is_int(r, 0, "space back during a flush: close (%s)", r ? kv_strerror(r) : "ok");
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: first open */

/*
 * A first open that dies at its Nth write call: every call from then on
 * fails, as for a process killed there (nothing it would clean up goes).
 */
static void test_first_open_dies(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	int bad = 0, n, completed = 0;

	small_options(&o, fe);
	for (n = 0; n < 100 && !completed; n++) {
		char *dir = dbpath("first");
		struct kv_db *db = NULL;
		int r;

		env_fault_inject(fe, ENV_OP_WRITES, n, -1, -EIO, NULL);
		r = kv_open(dir, &o, &db);
		if (r == 0) {
			completed = 1;   /* the open needs fewer than n write calls */
			kv_close(db);
			db = NULL;
		}
		env_fault_clear(fe);
		r = kv_open(dir, &o, &db);
		if (r == 0)
			r = test_write_put(db, 1, KV_SYNC);
		if (r == 0)
			r = kv_close(db);
		else if (db)
			kv_close(db);
		if (r != 0 && !bad++)
			diag("first open cut at write call %d: reopen: %s", n, kv_strerror(r));
		rm_rf(dir);
		free(dir);
	}
	ok(completed, "a first open finishes within %d write calls", n);
	is_int(bad, 0, "a first open cut at any of its %d write calls leaves a directory that opens",
	       n - 1);
	env_fault_free(fe);

	/* what is refused still is: a manifest naming tables, without CURRENT */
	{
		char *dir = dbpath("nocurrent"), *cur;
		struct kv_db *db = NULL;
		int r;

		small_options(&o, NULL);
		r = kv_open(dir, &o, &db);
		for (int i = 0; i < 50 && r == 0; i++)
			r = test_write_put(db, i, 0);
		if (r == 0)
			r = kv_flush(db);
		kv_close(db);
		db = NULL;
		cur = xasprintf("%s/CURRENT", dir);
		unlink(cur);
		free(cur);
		r = kv_open(dir, &o, &db);
		is_int(r, -EUCLEAN, "a directory with tables and no CURRENT is still refused");
		if (r == 0)
			kv_close(db);
		rm_rf(dir);
		free(dir);
	}
}

/* ---------------------------------------------------------------- item: sticky errors */

/*
 * One transient fault (kind ops on files matching match, failing every call
 * while it lasts) hit by a load with small memtables; then the fault goes and
 * writes must resume without a reopen.
 */
static void resume_case(const char *what, unsigned ops, const char *match, int err)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("resume");
	int r = 0, i, acked = 0, failed = 0;

	small_options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (r < 0) {
		is_int(r, 0, "%s: open", what);
		goto out;
	}
	for (i = 0; i < 200 && r == 0; i++)
		r = test_write_put(db, i, KV_SYNC);
	acked = i;
	env_fault_inject(fe, ops, 0, -1, err, match);
	/* keep writing (and flushing) until the fault surfaces */
	for (; i < 5000; i++) {
		r = test_write_put(db, i, KV_SYNC);
		if (r == 0 && i % 50 == 49)
			r = kv_flush(db);
		if (r != 0)
			break;
		acked = i + 1;
	}
	is_int(r, err, "%s: the error surfaces to the writer", what);
	failed = r != 0;
	if (failed)
		ok(strstr(kv_strerror(r), match ? match : dir) != NULL,
		   "%s: the message names the file (%s)", what, kv_strerror(r));
	env_fault_clear(fe);
	if (failed) {
		r = put_until_ok(db, i, KV_SYNC);
		is_int(r, 0, "%s: once the cause is gone, writes resume without a reopen", what);
		if (r == 0)
			acked = i + 1;
		for (int j = i + 1; j < i + 300 && r == 0; j++) {
			r = test_write_put(db, j, KV_SYNC);
			if (r == 0)
				acked = j + 1;
		}
		is_int(r == 0 ? kv_flush(db) : r, 0, "%s: and so do flushes", what);
		is_int(check_keys(db, 0, acked), 0, "%s: every acknowledged write reads back", what);
	}
	kv_close(db);
	db = NULL;
	/* what was acknowledged was synced: it survives a power cut too */
	env_fault_drop_unsynced(fe);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "%s: reopens after a power cut (%s)", what, r ? kv_strerror(r) : "ok");
	if (r == 0)
		is_int(check_keys(db, 0, acked), 0, "%s: with all %d acknowledged writes", what,
		       acked);
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
}

static void test_resume(void)
{
	resume_case("table writes ENOSPC", ENV_OP_APPEND, ".sst", -ENOSPC);
	resume_case("table creation EMFILE", ENV_OP_OPEN, ".sst", -EMFILE);
	resume_case("table reads EIO (compaction)", ENV_OP_READ, ".sst", -EIO);
	resume_case("log appends ENOSPC", ENV_OP_APPEND, ".log", -ENOSPC);
	resume_case("log fsync EIO", ENV_OP_SYNC, ".log", -EIO);
	resume_case("log creation EMFILE", ENV_OP_OPEN, ".log", -EMFILE);
	resume_case("manifest fsync EIO", ENV_OP_SYNC, "MANIFEST", -EIO);
	resume_case("manifest appends ENOSPC", ENV_OP_APPEND, "MANIFEST", -ENOSPC);
	resume_case("directory fsync EIO", ENV_OP_SYNC_DIR, NULL, -EIO);
}

/* ---------------------------------------------------------------- item: modes */

static void test_modes(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("modes");
	struct stat st;
	DIR *d;
	struct dirent *e;
	int r, bad = 0, n = 0;
	mode_t old = umask(022);

	small_options(&o, NULL);
	r = kv_open(dir, &o, &db);
	for (int i = 0; i < 100 && r == 0; i++)
		r = test_write_put(db, i, 0);
	if (r == 0)
		r = kv_flush(db);
	is_int(r, 0, "modes: a database with a table");
	is_int(stat(dir, &st) == 0 ? (int)(st.st_mode & 07777) : -1, 0700,
	       "the data directory is created 0700");
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char *p;
		if (e->d_name[0] == '.')
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			n++;
			if ((st.st_mode & 07777) != 0600 && !bad++)
				diag("%s is %04o", e->d_name, (unsigned)(st.st_mode & 07777));
		}
		free(p);
	}
	if (d)
		closedir(d);
	ok(n >= 4 && bad == 0, "every file in it is 0600 (%d files, %d not)", n, bad);
	if (db)
		kv_close(db);
	umask(old);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- item: descriptors */

/*
 * Many tables under a low descriptor limit: the table cache must leave
 * descriptors for logs and new tables.  Lowers the process's hard limit, so
 * it runs last.
 */
static void test_descriptors(void)
{
	struct rlimit rl = { 96, 256 }, now;
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = dbpath("fds");
	int r, N = 20000, files;

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		skip(5, "cannot set RLIMIT_NOFILE");
		free(dir);
		return;
	}
	small_options(&o, NULL);
	o.write_buffer_size = 64u << 10;
	o.target_file_size = 4096;
	o.max_bytes_level_base = 1u << 30;   /* level 1 holds it all: many small tables */
	o.block_cache_size = 0;
	o.compression_level = 0;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "descriptors: open under a limit of 96 (hard 256)");
	if (r < 0)
		goto out;
	ok(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 256,
	   "kv_open raised the soft descriptor limit to the hard one (%ld)", (long)now.rlim_cur);
	for (int i = 0; i < N && r == 0; i++)
		r = test_write_put(db, i, 0);
	if (r == 0)
		r = kv_compact_range(db, NULL, 0, NULL, 0);
	files = count_files(dir, ".sst");
	is_int(r, 0, "%d keys written and compacted into %d tables (%s)", N, files,
	       r ? kv_strerror(r) : "ok");
	/* read every table (each is opened and kept), then write and flush again */
	if (r == 0)
		r = check_keys(db, 0, N);
	for (int i = N; i < N + 2000 && r == 0; i++)
		r = test_write_put(db, i, 0);
	if (r == 0)
		r = kv_flush(db);
	if (r == 0)
		r = check_keys(db, 0, N + 2000);
	ok(files > 256 && r == 0,
	   "with more tables (%d) than descriptors, reads, writes and flushes work (%s)", files,
	   r ? kv_strerror(r) : "ok");
	is_int(kv_close(db), 0, "descriptors: close");
out:
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	plan(118);
	make_tmpdir("faults");
	test_failed_flush();
	test_current_dir_sync();
	test_full_disk();
	test_flush_after_failed_compaction();
	test_space_back_during_flush();
	test_first_open_dies();
	test_resume();
	test_modes();
	test_descriptors();
	rm_rf(tmpdir);
	return exit_status();
}
