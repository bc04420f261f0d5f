/*
 * kv_faultloop.c -- every file operation of a workload fails once, in turn.
 *
 * In the manner of SQLite's I/O-error tests: a fixed workload (synced puts
 * and deletes with memtables of a few KiB, so that flushes and compactions
 * run all along, a range delete, kv_flush, kv_compact_range, a close and a
 * reopen, which writes a new manifest and switches CURRENT) runs on the
 * fault-injecting environment while it fails the Nth operation on one kind
 * of file -- logs, tables, manifests, CURRENT (and CURRENT.tmp), or a
 * directory fsync -- for N = 0, 1, 2, ... until the workload no longer
 * reaches an Nth operation; for ENOSPC (the operations that write), EIO
 * (every operation) and EMFILE (the opens).  The fault is transient: one
 * call fails.  Whatever step meets it must report it, never succeed
 * silently, and the workload retries that step until it succeeds (a write
 * that failed must succeed again within seconds, without a reopen; an open
 * that failed must succeed when repeated).  At the end the database is
 * closed, everything not fsynced is dropped as by a power cut
 * (env_fault_drop_unsynced), and the database reopened must hold exactly the
 * model: every acknowledged write (all are KV_SYNC) and nothing else.
 *
 * The loop runs in /dev/shm when it can (the fault environment, not the
 * disk, decides what a power cut keeps, so real fsyncs would only cost
 * time).  SMOLFS_TEST_SCALE below 1 runs every 1/scale-th fault point.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 240





static void quiet(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level; (void)msg;
}

/* ---------------------------------------------------------------- the model */

/* ver[i] = 0: key i absent; else the version of its value. */
struct model {
	int ver[NKEYS];
};

static int key_of(char *b, int i)
{
	return snprintf(b, 32, "k%05d", i);
}

static int value_of(char *b, int i, int ver)
{
	int n = snprintf(b, 200, "value %d version %d:", i, ver);

	for (int k = 0; k < 60 + (i * 7 + ver) % 50; k++)
		b[n++] = (char)('a' + (i + k + ver) % 26);
	b[n] = 0;
	return n;
}

/* ---------------------------------------------------------------- one run */

struct run {
	struct kv_env *fe;
	struct kv_options o;
	char *dir;
	struct kv_db *db;
	struct model m;
	int failures;          /* operations that reported an error */
	int stuck;             /* a step that never succeeded again */
	char stuck_why[300];
	long acked;            /* writes acknowledged */
};

/* Retry f until it returns 0, for up to ~4 s; records an error that never goes. */
#define RETRY(run, what, expr)                                                           \
	do {                                                                             \
		int r_, tries_ = 0;                                                      \
		while ((r_ = (expr)) != 0) {                                             \
			(run)->failures++;                                               \
			if (++tries_ > 800) {                                            \
				if (!(run)->stuck++)                                     \
					snprintf((run)->stuck_why, sizeof((run)->stuck_why), \
						 "%s: %s", what, kv_strerror(r_));       \
				break;                                                   \
			}                                                                \
			usleep(5000);                                                    \
		}                                                                        \
	} while (0)

static int do_open(struct run *u)
{
	return kv_open(u->dir, &u->o, &u->db);
}

static void open_db(struct run *u)
{
	RETRY(u, "open", do_open(u));
}

static void close_db(struct run *u)
{
	if (u->db)
		kv_close(u->db);   /* its error (a background one) was seen by a step already */
	u->db = NULL;
}

static void put(struct run *u, int i, int ver)
{
	char k[32], v[200];
	int kl = key_of(k, i), vl = value_of(v, i, ver);

	if (u->stuck || !u->db)
		return;
	RETRY(u, "put", kv_put(u->db, k, (size_t)kl, v, (size_t)vl, KV_SYNC));
	if (!u->stuck) {
		u->m.ver[i] = ver;
		u->acked++;
	}
}

static void del(struct run *u, int i)
{
	char k[32];
	int kl = key_of(k, i);

	if (u->stuck || !u->db)
		return;
	RETRY(u, "delete", kv_delete(u->db, k, (size_t)kl, KV_SYNC));
	if (!u->stuck) {
		u->m.ver[i] = 0;
		u->acked++;
	}
}

static void del_range(struct run *u, int a, int b)
{
	char ka[32], kb[32];
	int la = key_of(ka, a), lb = key_of(kb, b);

	if (u->stuck || !u->db)
		return;
	RETRY(u, "range delete", kv_delete_range(u->db, ka, (size_t)la, kb, (size_t)lb, KV_SYNC));
	if (!u->stuck) {
		for (int i = a; i < b; i++)
			u->m.ver[i] = 0;
		u->acked++;
	}
}

static void workload(struct run *u)
{
	open_db(u);
	for (int i = 0; i < 120; i++)
		put(u, i, 1);
	if (!u->stuck && u->db)
		RETRY(u, "flush", kv_flush(u->db));
	for (int i = 0; i < 120; i += 4)
		del(u, i);
	for (int i = 100; i < 180; i++)
		put(u, i, 2);
	del_range(u, 40, 70);
	if (!u->stuck && u->db)
		RETRY(u, "compact", kv_compact_range(u->db, NULL, 0, NULL, 0));
	close_db(u);
	if (u->stuck)
		return;
	open_db(u);
	for (int i = 170; i < NKEYS; i++)
		put(u, i, 3);
	for (int i = 0; i < 20; i++)
		put(u, i, 4);
	if (!u->stuck && u->db)
		RETRY(u, "flush", kv_flush(u->db));
}

/*
 * After the power cut: the database must hold exactly the model.  Returns
 * the number of keys that differ (missing, wrong, or never written), with
 * the first one described in why; -1 if it does not open.
 */
static int verify(struct run *u, char *why, size_t wl)
{
	struct kv_read_options ro = { 0 };
	struct kv_iter *it;
	int bad = 0, seen[NKEYS] = { 0 }, r;

	why[0] = 0;
	r = kv_open(u->dir, &u->o, &u->db);
	if (r != 0) {
		snprintf(why, wl, "open: %s", kv_strerror(r));
		return -1;
	}
	it = kv_iter_new(u->db, &ro);
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl), *v = kv_iter_value(it, &vl);
		char kb[32], want[200];
		int i = -1, n = 0;

		if (kl < sizeof(kb)) {
			memcpy(kb, k, kl);
			kb[kl] = 0;
			if (sscanf(kb, "k%5d%n", &i, &n) != 1 || (size_t)n != kl || i < 0 ||
			    i >= NKEYS)
				i = -1;
		}
		if (i < 0 || u->m.ver[i] == 0) {
			if (!bad++)
				snprintf(why, wl, "a key that should not be there: %.*s", (int)kl, k);
			continue;
		}
		seen[i] = 1;
		n = value_of(want, i, u->m.ver[i]);
		if (vl != (size_t)n || memcmp(v, want, vl)) {
			if (!bad++)
				snprintf(why, wl, "%s: a wrong value (%.*s)", kb, (int)(vl < 30 ? vl : 30),
					 v);
		}
	}
	if ((r = kv_iter_status(it)) != 0 && !bad++)
		snprintf(why, wl, "scan: %s", kv_strerror(r));
	kv_iter_free(it);
	for (int i = 0; i < NKEYS; i++) {
		if (u->m.ver[i] && !seen[i] && !bad++)
			snprintf(why, wl, "k%05d (version %d) is missing", i, u->m.ver[i]);
	}
	r = kv_close(u->db);
	u->db = NULL;
	if (r != 0 && !bad++)
		snprintf(why, wl, "close: %s", kv_strerror(r));
	return bad;
}

/* ---------------------------------------------------------------- the loop */

struct kind {
	const char *name;
	const char *match;     /* NULL: any path */
	unsigned dir_sync;     /* the directory fsyncs alone */
};

static const struct kind kinds[] = {
	{ "log", ".log", 0 },
	{ "table", ".sst", 0 },
	{ "manifest", "MANIFEST-", 0 },
	{ "CURRENT", "CURRENT", 0 },
	{ "directory fsync", NULL, 1 },
};

struct errkind {
	const char *name;
	int err;
	unsigned ops;          /* the operations it can come from */
};

static const struct errkind errs[] = {
	{ "ENOSPC", -ENOSPC, ENV_OP_OPEN | ENV_OP_APPEND | ENV_OP_SYNC | ENV_OP_RENAME },
	{ "EIO", -EIO, ENV_OP_ALL },
	{ "EMFILE", -EMFILE, ENV_OP_OPEN },
};

static long points_run, total_acked, total_failures, total_lost;

static void loop_one(const struct kind *k, const struct errkind *e, int stride)
{
	long n, fired = 0;
	int bad_runs = 0, stuck_runs = 0;
	char first_bad[400] = "";

	for (n = 0;; n += stride) {
		struct run u;
		char why[300];
		int bad;

		memset(&u, 0, sizeof(u));
		u.fe = env_fault_new(env_posix());
		u.dir = xasprintf("%s/db", tmpdir);
		rm_rf(u.dir);
		kv_options_init(&u.o);
		u.o.env = u.fe;
		u.o.write_buffer_size = 4096;
		u.o.target_file_size = 4096;
		u.o.max_bytes_level_base = 8192;
		u.o.l0_compaction_trigger = 2;
		u.o.block_size = 1024;
		u.o.log = quiet;
		if (k->dir_sync)
			env_fault_inject(u.fe, ENV_OP_SYNC_DIR, n, 1, e->err, NULL);
		else
			env_fault_inject(u.fe, e->ops, n, 1, e->err, k->match);
		workload(&u);
		close_db(&u);
		fired = env_fault_injected(u.fe);
		env_fault_clear(u.fe);
		if (fired == 0 && !u.stuck) {
			/* the workload has no Nth such operation: this kind is done */
			env_fault_free(u.fe);
			rm_rf(u.dir);
			free(u.dir);
			break;
		}
		points_run++;
		total_acked += u.acked;
		total_failures += u.failures;
		if (u.stuck) {
			if (!stuck_runs++)
				snprintf(first_bad, sizeof(first_bad),
					 "fault at operation %ld: a step never succeeded again: %s", n,
					 u.stuck_why);
		}
		/* the power cut: only what was fsynced (and made durable) stays */
		if (env_fault_drop_unsynced(u.fe) != 0 && !bad_runs++)
			snprintf(first_bad, sizeof(first_bad), "fault at operation %ld: "
				 "env_fault_drop_unsynced failed", n);
		bad = verify(&u, why, sizeof(why));
		if (bad > 0)
			total_lost += bad;
		if (bad != 0 && !u.stuck) {
			if (!bad_runs++)
				snprintf(first_bad, sizeof(first_bad),
					 "fault at operation %ld: %d keys differ: %s", n,
					 bad < 0 ? 0 : bad, why);
		}
		env_fault_free(u.fe);
		rm_rf(u.dir);
		free(u.dir);
	}
	if (!ok(bad_runs == 0 && stuck_runs == 0,
		"%s %s: %ld fault points, each resumed and every acknowledged write kept "
		"(%d runs lost or changed data, %d never resumed)", k->name, e->name, n / stride,
		bad_runs, stuck_runs))
		diag("%s", first_bad);
}

/* kv_faultloop [KIND [ERROR]]: only that kind of file (and error), to replay one loop. */
int main(int argc, char **argv)
{
	double scale = test_scale();
	int stride = scale >= 1 ? 1 : (int)(1 / scale + 0.5);
	time_t t0 = time(NULL);

	int nloops = 0;

	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			plan(nloops);
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			for (size_t j = 0; j < sizeof(errs) / sizeof(errs[0]); j++) {
				if ((argc > 1 && strcmp(argv[1], kinds[i].name)) ||
				    (argc > 2 && strcmp(argv[2], errs[j].name)))
					continue;
				if (pass == 0)
					nloops++;
				else
					loop_one(&kinds[i], &errs[j], stride);
			}
		}
		if (pass == 0) {
			/* real fsyncs would only cost time: the fault environment decides what stays */
			if (access("/dev/shm", W_OK) == 0)
				setenv("TMPDIR", "/dev/shm", 1);
			make_tmpdir("faultloop");
		}
	}
	printf("# fault points run: %ld\n", points_run);
	printf("# writes acknowledged: %ld, keys lost or changed: %ld; failed calls retried: %ld; "
	       "%ld s\n", total_acked, total_lost, total_failures, (long)(time(NULL) - t0));
	rm_rf(tmpdir);
	return exit_status();
}
