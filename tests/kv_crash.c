/*
 * kv_crash.c -- power cuts and I/O errors in the middle of writing.
 *
 * Each trial opens a database on the fault-injecting environment, has one
 * writer apply numbered batches (batch i puts keys "b<i>-<j>" whose values
 * name i and j, now and then deletes an earlier batch's keys with a range
 * delete, and sometimes asks for KV_SYNC) while tiny memtables make flushes
 * and compactions run underneath.  At a random write call the power goes:
 * every call fails from then on.  The test closes the database, keeps only
 * what was fsynced (env_fault_drop_unsynced), reopens it on the plain POSIX
 * environment and requires:
 *   - the database opens (a crash is never corruption);
 *   - the batches it holds are exactly batches 0..P for some P: recovery
 *     replays a prefix of the log, each batch all or nothing, and range
 *     deletes take effect exactly when their batch is in that prefix;
 *   - P is at least the last batch acknowledged with KV_SYNC, and no value
 *     is ever different from what was written.
 * A second set of trials fails one log append or fsync with -EIO or -ENOSPC
 * and checks that the write reports it, that later writes are refused, and
 * that after reopening every acknowledged batch is there.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAX_BATCHES 3000
#define MAX_KEYS    8

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

static void make_tmpdir(const char *name)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-%s-XXXXXX", base && *base ? base : "/tmp",
		 name);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
}

static double test_scale(void)
{
	const char *s = getenv("SMOLFS_TEST_SCALE");
	double v = s ? atof(s) : 1.0;

	return v > 0 ? v : 1.0;
}

/* What the writer did, batch by batch. */
struct plan {
	int nkeys[MAX_BATCHES];      /* keys j = 0..nkeys-1 */
	int deletes[MAX_BATCHES];    /* the batch whose keys this one range-deletes, or -1 */
	int synced[MAX_BATCHES];     /* written with KV_SYNC */
	int nbatches;                /* batches attempted (the last may have failed) */
	int acked;                   /* batches 0..acked-1 returned 0 */
	int last_synced;             /* the last acknowledged batch written with KV_SYNC, or -1 */
	int failed_with;             /* the error of the first failed write, 0 if none */
};

static int make_key(char *b, int i, int j)
{
	return snprintf(b, 32, "b%06d-%02d", i, j);
}

/* The value of key j of batch i: names both, with a length that varies. */
static int make_value(char *b, int i, int j)
{
	int n = snprintf(b, 64, "batch %d key %d:", i, j);
	int pad = (i * 37 + j * 11) % 300;

	for (int k = 0; k < pad; k++)
		b[n + k] = (char)('a' + (i + j + k) % 26);
	b[n + pad] = 0;
	return n + pad;
}

static void build_batch(struct kv_batch *b, const struct plan *p, int i)
{
	char k[32], v[400], e[32];
	int kl, vl;

	kv_batch_clear(b);
	for (int j = 0; j < p->nkeys[i]; j++) {
		kl = make_key(k, i, j);
		vl = make_value(v, i, j);
		kv_batch_put(b, k, (size_t)kl, v, (size_t)vl);
	}
	if (p->deletes[i] >= 0) {
		snprintf(k, sizeof(k), "b%06d-", p->deletes[i]);
		snprintf(e, sizeof(e), "b%06d.", p->deletes[i]);
		kv_batch_delete_range(b, k, strlen(k), e, strlen(e));
	}
}

/* Choose batch i's shape. */
static void plan_batch(struct plan *p, int i, uint64_t *rs)
{
	p->nkeys[i] = 1 + (int)(rand_next(rs) % MAX_KEYS);
	p->deletes[i] = i > 0 && rand_next(rs) % 10 == 0 ? (int)(rand_next(rs) % (uint64_t)i) : -1;
	p->synced[i] = rand_next(rs) % 5 == 0;
}

/*
 * Write batches until a write fails or max batches have been written.
 * Returns the number of batches attempted.
 */
static void run_writer(struct kv_db *db, struct plan *p, int max, uint64_t *rs)
{
	struct kv_batch *b = kv_batch_new();

	p->acked = 0;
	p->last_synced = -1;
	p->failed_with = 0;
	for (int i = 0; i < max; i++) {
		int r;

		plan_batch(p, i, rs);
		build_batch(b, p, i);
		p->nbatches = i + 1;
		r = kv_write(db, b, p->synced[i] ? KV_SYNC : 0);
		if (r != 0) {
			p->failed_with = r;
			break;
		}
		p->acked = i + 1;
		if (p->synced[i])
			p->last_synced = i;
		if (i % 300 == 299 && rand_next(rs) % 2 && kv_flush(db) != 0) {
			/* a failed flush: writes may be refused now; go on until they are */
		}
	}
	kv_batch_free(b);
}

/* Write one more batch after a failure: it must be refused. */
static int probe_write(struct kv_db *db)
{
	return kv_put(db, "zprobe", 6, "x", 1, 0);
}

static int popcount8(unsigned x)
{
	int n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

/*
 * Read the reopened database and decide whether it holds exactly batches
 * 0..P for some P in [min_p, max_p].  Returns P (>= -1) or -2 with a reason.
 */
static int find_prefix(struct kv_db *db, const struct plan *p, int min_p, int max_p, char *why,
		       size_t wl)
{
	unsigned char *obs = xcalloc((size_t)p->nbatches + 1, 1);
	unsigned char *exp = xcalloc((size_t)p->nbatches + 1, 1);
	struct kv_read_options ro = { 0 };
	struct kv_iter *it = kv_iter_new(db, &ro);
	long mism = 0;
	int found = -2, best = -1;
	long best_mism = -1;
	char v[400];

	why[0] = 0;
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl);
		const char *val = kv_iter_value(it, &vl);
		char kb[40];
		int i, j, n = 0, wantl;

		if (kl >= sizeof(kb) || (memcpy(kb, k, kl), kb[kl] = 0,
		    sscanf(kb, "b%6d-%2d%n", &i, &j, &n) != 2) || (size_t)n != kl ||
		    i < 0 || i >= p->nbatches || j < 0 || j >= p->nkeys[i]) {
			snprintf(why, wl, "a key that was never written: \"%.*s\"",
				 (int)(kl < 40 ? kl : 40), k);
			goto out;
		}
		wantl = make_value(v, i, j);
		if (vl != (size_t)wantl || memcmp(val, v, vl)) {
			snprintf(why, wl, "key %s has a wrong value (%zu bytes: \"%.*s\")", kb, vl,
				 (int)(vl < 40 ? vl : 40), val);
			goto out;
		}
		obs[i] |= (unsigned char)(1u << j);
	}
	if (kv_iter_status(it) != 0) {
		snprintf(why, wl, "iterator error %d: %s", kv_iter_status(it),
			 kv_strerror(kv_iter_status(it)));
		goto out;
	}
	for (int i = 0; i < p->nbatches; i++) {
		unsigned full = (1u << p->nkeys[i]) - 1;
		if (obs[i] && obs[i] != full) {
			snprintf(why, wl, "batch %d is half applied: keys mask %#x of %#x", i,
				 obs[i], full);
			goto out;
		}
		mism += popcount8(obs[i]);
	}
	/* Apply batches one by one; P is a prefix when the expected state equals what is there. */
	for (int q = -1; q <= max_p && q < p->nbatches; q++) {
		if (q >= 0) {
			int d = p->deletes[q];
			mism -= popcount8(exp[q] ^ obs[q]);
			exp[q] = (unsigned char)((1u << p->nkeys[q]) - 1);
			mism += popcount8(exp[q] ^ obs[q]);
			if (d >= 0) {
				mism -= popcount8(exp[d] ^ obs[d]);
				exp[d] = 0;
				mism += popcount8(exp[d] ^ obs[d]);
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
		snprintf(why, wl, "no prefix 0..P with %d <= P <= %d matches; closest P = %d with "
			 "%ld keys off",
			 min_p, max_p, best, best_mism);
out:
	kv_iter_free(it);
	free(obs);
	free(exp);
	return found;
}

static void crash_options(struct kv_options *o, struct kv_env *env)
{
	kv_options_init(o);
	o->env = env;
	o->write_buffer_size = 32 * 1024;
	o->target_file_size = 32 * 1024;
	o->max_bytes_level_base = 128 * 1024;
	o->block_cache_size = 256 * 1024;
}

static int reopen_plain(const char *dir, struct kv_db **db)
{
	struct kv_options o;

	crash_options(&o, NULL);
	return kv_open(dir, &o, db);
}

static void verify_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	(void)arg;
	diag("kv_verify: %s at %llu: %s", file, (unsigned long long)off, msg);
}

/* One power-cut trial. */
static void power_cut_trial(int t, uint64_t seed, struct plan *p, int *prefix_stats)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = xasprintf("%s/cut-%03d", tmpdir, t);
	uint64_t rs = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(t + 1));
	int early = rand_next(&rs) % 8 == 0;
	long cut_at;
	int r, P;
	char why[300];

	crash_options(&o, fe);
	p->nbatches = 0;
	p->acked = 0;
	p->last_synced = -1;
	if (early) {
		/* the power goes while the database is being created */
		cut_at = (long)(rand_next(&rs) % 30);
		env_fault_power_cut_after(fe, cut_at);
		r = kv_open(dir, &o, &db);
		if (r == 0)
			run_writer(db, p, MAX_BATCHES, &rs);
	} else {
		r = kv_open(dir, &o, &db);
		if (r != 0) {
			is_int(r, 0, "trial %d: open on the fault environment", t);
			goto out;
		}
		cut_at = (long)(rand_next(&rs) % 6000);
		env_fault_power_cut_after(fe, cut_at);
		run_writer(db, p, MAX_BATCHES, &rs);
	}
	if (db && p->failed_with == 0) {
		/* the writer finished before the cut: cut now */
		env_fault_power_cut_after(fe, 0);
		p->failed_with = probe_write(db);
		ok(p->failed_with != 0, "trial %d: a write after the power cut fails", t);
	}
	if (db) {
		r = probe_write(db);
		ok(r != 0, "trial %d: after a failed write (%d) further writes are refused (%d)", t,
		   p->failed_with, r);
		kv_close(db);   /* must return; its error does not matter after a power cut */
		db = NULL;
	}
	r = env_fault_drop_unsynced(fe);
	if (r != 0) {
		is_int(r, 0, "trial %d: env_fault_drop_unsynced", t);
		goto out;
	}
	r = reopen_plain(dir, &db);
	if (!is_int(r, 0, "trial %d (cut after %ld write calls%s): the database opens after the "
		    "power cut",
		    t, cut_at, early ? ", during creation" : "")) {
		diag("kv_open: %s", kv_strerror(r));
		goto out;
	}
	P = find_prefix(db, p, p->last_synced, p->nbatches - 1, why, sizeof(why));
	if (!ok(P >= -1, "trial %d: holds exactly batches 0..P with P >= %d, the last synced one "
		"(P = %d; %d acknowledged)", t, p->last_synced, P, p->acked))
		diag("trial %d: %s", t, why);
	{
		char *v = NULL;
		size_t vl;
		r = kv_get(db, NULL, "zprobe", 6, &v, &vl);
		is_int(r, -ENOENT, "trial %d: a refused write is not there after reopen", t);
		free(v);
	}
	if (P >= -1) {
		if (P >= p->acked - 1)
			prefix_stats[0]++;
		else
			prefix_stats[1]++;
	}
	r = kv_verify(db, verify_report, NULL);
	is_int(r, 0, "trial %d: kv_verify finds nothing wrong after recovery", t);
	r = kv_put(db, "after", 5, "crash", 5, KV_SYNC);
	is_int(r, 0, "trial %d: the recovered database takes writes", t);
	is_int(kv_close(db), 0, "trial %d: close after recovery", t);
	db = NULL;
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	kv_destroy(dir, NULL);
	rm_rf(dir);
	free(dir);
}

/* One trial with a single failed log append or fsync. */
static void io_error_trial(int t, uint64_t seed, struct plan *p)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir = xasprintf("%s/ioerr-%03d", tmpdir, t);
	uint64_t rs = seed ^ (0xc2b2ae3d27d4eb4full * (uint64_t)(t + 1));
	unsigned op = rand_next(&rs) % 2 ? ENV_OP_APPEND : ENV_OP_SYNC;
	int err = rand_next(&rs) % 2 ? -EIO : -ENOSPC;
	long after = (long)(rand_next(&rs) % (op == ENV_OP_APPEND ? 1500 : 200));
	int r, P;
	char why[300];
	const char *what = op == ENV_OP_APPEND ? "append" : "fsync";

	crash_options(&o, fe);
	r = kv_open(dir, &o, &db);
	if (r != 0) {
		is_int(r, 0, "io trial %d: open", t);
		goto out;
	}
	env_fault_inject(fe, op, after, 1, err, ".log");
	run_writer(db, p, MAX_BATCHES, &rs);
	if (p->failed_with == 0) {
		/* the fault never came (too few log calls): nothing to check but the data */
		diag("io trial %d: the %s fault after %ld calls never triggered", t, what, after);
	} else {
		is_int(p->failed_with, err,
		       "io trial %d: a failed log %s makes kv_write return its error", t,
		       what);
		r = probe_write(db);
		ok(r != 0, "io trial %d: later writes are refused (%d)", t, r);
	}
	kv_close(db);
	db = NULL;
	env_fault_clear(fe);
	r = reopen_plain(dir, &db);
	if (!is_int(r, 0, "io trial %d: the database opens after the failed %s", t, what)) {
		diag("kv_open: %s", kv_strerror(r));
		goto out;
	}
	/* every acknowledged batch is there; the failed one may be, whole */
	P = find_prefix(db, p, p->acked - 1, p->nbatches - 1, why, sizeof(why));
	if (!ok(P >= p->acked - 1,
		"io trial %d: every acknowledged batch (0..%d) is there (found 0..%d)", t,
		p->acked - 1, P))
		diag("io trial %d: %s", t, why);
	{
		char *v = NULL;
		size_t vl;
		is_int(kv_get(db, NULL, "zprobe", 6, &v, &vl), -ENOENT,
		       "io trial %d: the refused write is not there", t);
		free(v);
	}
	is_int(kv_close(db), 0, "io trial %d: close", t);
	db = NULL;
out:
	if (db)
		kv_close(db);
	env_fault_free(fe);
	kv_destroy(dir, NULL);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const char *seed_env = getenv("SMOLFS_TEST_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0xc4a5c4a5ull;
	int trials = (int)(40 * test_scale() + 0.5), io_trials = (int)(20 * test_scale() + 0.5);
	struct plan *p = xcalloc(1, sizeof(*p));
	int prefix_stats[2] = { 0, 0 };
	uint64_t t0 = now_micros();

	plan_lazy();
	if (trials < 1)
		trials = 1;
	if (io_trials < 1)
		io_trials = 1;
	make_tmpdir("kv_crash");
	diag("seed %#llx (set SMOLFS_TEST_SEED to repeat), %d power-cut trials, %d I/O-error "
	     "trials, in %s",
	     (unsigned long long)seed, trials, io_trials, tmpdir);
	for (int t = 0; t < trials; t++)
		power_cut_trial(t, seed, p, prefix_stats);
	diag("power cuts: %d trials kept every acknowledged batch, %d lost unsynced ones; %.1f s",
	     prefix_stats[0], prefix_stats[1], (now_micros() - t0) / 1e6);
	for (int t = 0; t < io_trials; t++)
		io_error_trial(t, seed, p);
	diag("total %.1f s", (now_micros() - t0) / 1e6);
	free(p);
	if (exit_status() == 0)
		rm_rf(tmpdir);
	done_testing();
	return exit_status();
}
