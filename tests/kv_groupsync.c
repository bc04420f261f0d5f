/*
 * kv_groupsync.c -- a write made with KV_SYNC is durable when kv_write
 * returns, even when other threads are writing without KV_SYNC at the same
 * moment and the group commit gathers writers of both kinds.
 *
 * Each trial opens a database on the fault environment (a power cut keeps
 * only synced bytes), starts writers that never ask for a sync, and makes
 * one synced write among them; the moment it returns, the power goes.  After
 * the cut the synced write must be there.  A synced writer that joined a
 * group led by an unsynced one and was acknowledged without the fsync loses
 * its write here in most trials.  The memtable is large, so nothing else
 * (a flush, a log switch) syncs the log behind the test's back.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <pthread.h>
#include <string.h>

#define WRITERS 3

struct bg {
	struct kv_db *db;
	int id;
	int stop;
	long n;
};

static void *bg_writer(void *arg)
{
	struct bg *b = arg;
	char k[32];

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		int kl = snprintf(k, sizeof(k), "bg%d-%08ld", b->id, b->n++);

		if (kv_put(b->db, k, (size_t)kl, "unsynced", 8, 0) < 0)
			break;   /* the power is gone */
	}
	return NULL;
}

/* One trial: 1 if the synced write survived, 0 if lost, < 0 on a setup error. */
static int trial(int t, long *bg_writes)
{
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/t%03d", tmpdir, t);
	struct bg b[WRITERS];
	pthread_t th[WRITERS];
	struct kv_options o;
	struct kv_db *db = NULL;
	char key[32], *v = NULL;
	size_t vl;
	int kl, r;

	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	kv_options_init(&o);
	o.env = fe;
	o.write_buffer_size = 64u << 20;
	if ((r = kv_open(dir, &o, &db)) < 0)
		goto out;
	for (int i = 0; i < WRITERS; i++) {
		b[i] = (struct bg){ .db = db, .id = i };
		pthread_create(&th[i], NULL, bg_writer, &b[i]);
	}
	/* let the unsynced writers fill the queue, so the synced one meets a group */
	while (__atomic_load_n(&b[0].n, __ATOMIC_RELAXED) < 200)
		sched_yield();
	kl = snprintf(key, sizeof(key), "synced-%03d", t);
	r = kv_put(db, key, (size_t)kl, "durable", 7, KV_SYNC);
	env_fault_power_cut_after(fe, 0);
	for (int i = 0; i < WRITERS; i++) {
		__atomic_store_n(&b[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(th[i], NULL);
		*bg_writes += b[i].n;
	}
	kv_close(db);   /* fails after the cut; what counts is what is on disk */
	db = NULL;
	if (r < 0)
		goto out;
	if ((r = env_fault_drop_unsynced(fe)) < 0)
		goto out;
	kv_options_init(&o);
	o.create_if_missing = 0;
	if ((r = kv_open(dir, &o, &db)) < 0)
		goto out;
	r = kv_get(db, NULL, key, (size_t)kl, &v, &vl);
	r = r == 0 && vl == 7 && memcmp(v, "durable", 7) == 0 ? 1 : r == -ENOENT ? 0 : r;
	free(v);
out:
	if (r < 0)
		diag("trial %d: %s", t, kv_strerror(r));
	if (db)
		kv_close(db);
	env_fault_free(fe);
	rm_rf(dir);
	free(dir);
	return r;
}

int main(void)
{
	int trials = (int)scaled(40, 10), kept = 0, lost = 0, errors = 0;
	long bg_writes = 0;

	plan(2);
	make_tmpdir("kv_groupsync");
	for (int t = 0; t < trials; t++) {
		int r = trial(t, &bg_writes);

		if (r > 0)
			kept++;
		else if (r == 0)
			lost++;
		else
			errors++;
	}
	is_int(errors, 0, "every trial opened, wrote, cut the power and reopened");
	ok(lost == 0 && kept == trials, "each of %d synced writes made among unsynced writers "
	   "survived the power cut at its return (%d lost; %ld unsynced writes around them)",
	   trials, lost, bg_writes);
	if (exit_status() == 0)
		rm_rf(tmpdir);
	return exit_status();
}
