/*
 * kv_powercut.c -- power cuts as a disk sees them, over and over.
 *
 * Each trial runs one database through several rounds.  A round opens it on
 * the fault environment (sometimes with the power going during the open, in
 * the middle of recovery), then two writer threads apply numbered batches,
 * some with KV_SYNC, while a third asks for flushes and compactions and tiny
 * memtables make more run underneath.  After a random number of write calls
 * the power goes.  The database is closed and env_fault_drop_unsynced()
 * leaves what a disk would hold: the synced bytes, and each unsynced 4 KiB
 * page kept, dropped or zeroed by a seeded PRNG (env.h's ENV_CUT_PAGES).
 * The next open must succeed every time, and what it holds must be:
 *   - every batch whole or absent, every value as written, no other key;
 *   - every batch acknowledged with KV_SYNC, and every batch acknowledged
 *     before a synced one began, present (what fsync promises);
 *   - for each writer, the batches written since the last check present as
 *     a prefix of its sequence (recovery is point-in-time: the log is cut at
 *     its first damaged record, never read around it);
 *   - what an earlier check saw present still present, and what it saw
 *     absent still absent.
 * At the end it prints the power cuts simulated, the synced writes checked
 * and how many of them were lost (which must be 0).
 *
 * Seeds: a fixed one, and a second one from SMOLFS_TEST_SEED (or the clock
 * if unset), printed so that a failure can be replayed.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WRITERS   2
#define MAXB      6000      /* batches per writer over a whole trial */
#define MAXK      4         /* keys per batch */
#define ROUNDS    3

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

/* What is known of one batch. */
enum bstate {
	B_NONE,        /* not written */
	B_PENDING,     /* written (acknowledged or not) since the last check */
	B_PRESENT,     /* a check saw it */
	B_ABSENT,      /* a check did not see it: gone for good */
};

struct batch_info {
	unsigned char state, nkeys, synced, acked;
	uint64_t start, ack;   /* stamps: before kv_write began, and when it returned 0 */
};

struct writer {
	struct trial *tr;
	int id;
	int n;                 /* batches attempted */
	int failed;            /* the writer stopped on an error */
	uint64_t rs;
	struct batch_info b[MAXB];
};

struct trial {
	struct kv_db *db;
	struct writer w[WRITERS];
	uint64_t stamp;        /* atomic: acknowledgements so far */
	int stop;              /* atomic */
	int damaged_tails;     /* atomic: recoveries that logged a dropped damaged tail */
};

static int make_key(char *b, int w, int i, int j)
{
	return snprintf(b, 32, "w%d-%07d-%d", w, i, j);
}

/* Half printable random-looking bytes, half repeated, as db_bench's values. */
static int make_value(char *b, int w, int i, int j)
{
	uint64_t h = (uint64_t)(w * 1000003 + i) * 0x9e3779b97f4a7c15ull + (uint64_t)j;
	int n = 16 + (int)(h % 1200), k;

	k = snprintf(b, 40, "%d/%d/%d:", w, i, j);
	for (; k < n / 2; k++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		b[k] = (char)(' ' + (h >> 33) % 95);
	}
	for (; k < n; k++)
		b[k] = 'x';
	return n;
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct trial *tr = wr->tr;
	struct kv_batch *b = kv_batch_new();
	char k[32], v[1300];

	while (wr->n < MAXB && !__atomic_load_n(&tr->stop, __ATOMIC_RELAXED)) {
		struct batch_info *bi = &wr->b[wr->n];
		int nk = 1 + (int)(rand_next(&wr->rs) % MAXK);
		int sync = rand_next(&wr->rs) % 8 == 0;
		int r;

		kv_batch_clear(b);
		for (int j = 0; j < nk; j++) {
			int kl = make_key(k, wr->id, wr->n, j), vl = make_value(v, wr->id, wr->n, j);
			kv_batch_put(b, k, (size_t)kl, v, (size_t)vl);
		}
		bi->state = B_PENDING;
		bi->nkeys = (unsigned char)nk;
		bi->synced = (unsigned char)sync;
		bi->start = __atomic_load_n(&tr->stamp, __ATOMIC_SEQ_CST);
		wr->n++;
		r = kv_write(tr->db, b, sync ? KV_SYNC : 0);
		if (r != 0) {
			wr->failed = 1;
			break;
		}
		bi->acked = 1;
		bi->ack = __atomic_add_fetch(&tr->stamp, 1, __ATOMIC_SEQ_CST);
	}
	kv_batch_free(b);
	return NULL;
}

/* Flushes and compactions until the power goes or the writers are done. */
static void *maint_main(void *arg)
{
	struct trial *tr = arg;
	int i = 0;

	while (!__atomic_load_n(&tr->stop, __ATOMIC_RELAXED)) {
		int r = i++ % 3 == 2 ? kv_compact_range(tr->db, NULL, 0, NULL, 0) : kv_flush(tr->db);
		if (r != 0)
			break;
		usleep(15000);
	}
	return NULL;
}

static void log_sink(void *arg, enum kv_log_level level, const char *msg)
{
	struct trial *tr = arg;

	if (level <= KV_LOG_WARN && strstr(msg, "damaged record"))
		__atomic_add_fetch(&tr->damaged_tails, 1, __ATOMIC_RELAXED);
	/* the errors of the power cut itself are expected; anything else is news */
	if (level <= KV_LOG_ERROR && !strstr(msg, "(injected)"))
		diag("engine: %s", msg);
}

static void pc_options(struct kv_options *o, struct kv_env *env, struct trial *tr)
{
	kv_options_init(o);
	o->env = env;
	o->write_buffer_size = 24 * 1024;
	o->target_file_size = 32 * 1024;
	o->max_bytes_level_base = 128 * 1024;
	o->block_cache_size = 256 * 1024;
	o->log = log_sink;
	o->log_arg = tr;
}

struct counts {
	long cuts, opens, synced_checked, synced_lost, acked_kept, acked_lost;
	long damaged_tails, pages[3];
};

/*
 * Compare the database with what the writers did; on success mark every
 * pending batch present or absent.  Returns 1 if it all holds, else 0 with
 * the reason in why.
 */
static int check_db(struct trial *tr, struct counts *c, char *why, size_t wl)
{
	static unsigned char seen[WRITERS][MAXB];
	struct kv_iter *it = kv_iter_new(tr->db, NULL);
	uint64_t need_before = 0;   /* every batch acknowledged before this stamp is durable */
	char v[1300];
	int good = 0;

	memset(seen, 0, sizeof(seen));
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl), *val = kv_iter_value(it, &vl);
		char kb[32];
		int w, i, j, n = 0;

		if (kl >= sizeof(kb) || (memcpy(kb, k, kl), kb[kl] = 0,
		    sscanf(kb, "w%1d-%7d-%1d%n", &w, &i, &j, &n) != 3) || (size_t)n != kl ||
		    w < 0 || w >= WRITERS || i < 0 || i >= tr->w[w].n || j < 0 ||
		    j >= tr->w[w].b[i].nkeys) {
			snprintf(why, wl, "a key that was never written: \"%.*s\"",
				 (int)(kl < 30 ? kl : 30), k);
			goto out;
		}
		if (vl != (size_t)make_value(v, w, i, j) || memcmp(v, val, vl)) {
			snprintf(why, wl, "%s has a wrong value (%zu bytes)", kb, vl);
			goto out;
		}
		seen[w][i] |= (unsigned char)(1u << j);
	}
	if (kv_iter_status(it) != 0) {
		snprintf(why, wl, "the iterator failed: %s", kv_strerror(kv_iter_status(it)));
		goto out;
	}
	for (int w = 0; w < WRITERS; w++)
		for (int i = 0; i < tr->w[w].n; i++) {
			const struct batch_info *bi = &tr->w[w].b[i];
			if (bi->state == B_PENDING && bi->synced && bi->acked &&
			    bi->start > need_before)
				need_before = bi->start;
		}
	for (int w = 0; w < WRITERS; w++) {
		int gap = -1;   /* the first pending batch found absent */

		for (int i = 0; i < tr->w[w].n; i++) {
			const struct batch_info *bi = &tr->w[w].b[i];
			unsigned full = (1u << bi->nkeys) - 1;
			int here = seen[w][i] != 0;

			if (here && seen[w][i] != full) {
				snprintf(why, wl, "writer %d's batch %d is half there (keys %#x of %#x)",
					 w, i, seen[w][i], full);
				goto out;
			}
			if (bi->state == B_PRESENT && !here) {
				snprintf(why, wl, "writer %d's batch %d, there at an earlier check, is "
					 "gone", w, i);
				goto out;
			}
			if (bi->state == B_ABSENT && here) {
				snprintf(why, wl, "writer %d's batch %d, absent at an earlier check, is "
					 "back", w, i);
				goto out;
			}
			if (bi->state != B_PENDING)
				continue;
			if (bi->acked && bi->synced) {
				c->synced_checked++;
				if (!here) {
					c->synced_lost++;
					snprintf(why, wl, "writer %d's batch %d, acknowledged with "
						 "KV_SYNC, is lost", w, i);
					goto out;
				}
			}
			if (bi->acked && bi->ack < need_before && !here) {
				snprintf(why, wl, "writer %d's batch %d, acknowledged before a synced "
					 "batch began, is lost", w, i);
				goto out;
			}
			if (!here && gap < 0)
				gap = i;
			if (here && gap >= 0) {
				snprintf(why, wl, "writer %d's batch %d is there but its batch %d is "
					 "not: not a point in time", w, i, gap);
				goto out;
			}
		}
	}
	for (int w = 0; w < WRITERS; w++)
		for (int i = 0; i < tr->w[w].n; i++) {
			struct batch_info *bi = &tr->w[w].b[i];
			if (bi->state != B_PENDING)
				continue;
			if (bi->acked)
				seen[w][i] ? c->acked_kept++ : c->acked_lost++;
			bi->state = seen[w][i] ? B_PRESENT : B_ABSENT;
		}
	good = 1;
out:
	kv_iter_free(it);
	return good;
}

static void run_round(struct trial *tr, struct kv_env *fe, uint64_t *rs)
{
	pthread_t th[WRITERS + 1];
	long cut_at = 300 + (long)(rand_next(rs) % 4000);

	__atomic_store_n(&tr->stop, 0, __ATOMIC_RELAXED);
	for (int w = 0; w < WRITERS; w++) {
		tr->w[w].failed = 0;
		tr->w[w].rs = rand_next(rs);
	}
	env_fault_power_cut_after(fe, cut_at);
	for (int w = 0; w < WRITERS; w++)
		pthread_create(&th[w], NULL, writer_main, &tr->w[w]);
	pthread_create(&th[WRITERS], NULL, maint_main, tr);
	for (int w = 0; w < WRITERS; w++)
		pthread_join(th[w], NULL);
	/* the writers ran out of batches before the cut: cut now */
	if (!env_fault_is_cut(fe))
		env_fault_power_cut_after(fe, 0);
	__atomic_store_n(&tr->stop, 1, __ATOMIC_RELAXED);
	pthread_join(th[WRITERS], NULL);
}

/* One trial: returns 0 if every check held. */
static int trial(int t, uint64_t seed, struct counts *c)
{
	struct trial *tr = xcalloc(1, sizeof(*tr));
	struct kv_env *fe = env_fault_new(env_posix());
	char *dir = xasprintf("%s/t%03d", tmpdir, t);
	uint64_t rs = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(t + 1));
	struct kv_options o;
	char why[300];
	int r, failed = 0;

	for (int w = 0; w < WRITERS; w++) {
		tr->w[w].tr = tr;
		tr->w[w].id = w;
	}
	env_fault_cut_model(fe, ENV_CUT_PAGES, rand_next(&rs));
	pc_options(&o, fe, tr);
	for (int round = 0; round <= ROUNDS && !failed; round++) {
		int early = round > 0 && round < ROUNDS && rand_next(&rs) % 4 == 0;
		long cut_at = early ? (long)(rand_next(&rs) % 40) : -1;

		/* the last round opens with no cut, and checks */
		if (early)
			env_fault_power_cut_after(fe, cut_at);
		r = kv_open(dir, &o, &tr->db);
		c->opens++;
		if (r != 0 && early && env_fault_is_cut(fe)) {
			/* the power went during recovery: what it did so far stays on disk */
			env_fault_drop_unsynced(fe);
			c->cuts++;
			continue;
		}
		if (r != 0) {
			diag("trial %d round %d: the database does not open after a power cut: %s",
			     t, round, kv_strerror(r));
			failed = 1;
			break;
		}
		if (early) {
			/* the open finished before the cut: cut during the writes instead */
			env_fault_clear(fe);
		}
		if (!check_db(tr, c, why, sizeof(why))) {
			diag("trial %d round %d: the database does not hold what was written: %s",
			     t, round, why);
			failed = 1;
			break;
		}
		if (round == ROUNDS)
			break;
		run_round(tr, fe, &rs);
		kv_close(tr->db);   /* after a power cut its error does not matter */
		tr->db = NULL;
		r = env_fault_drop_unsynced(fe);
		c->cuts++;
		if (r != 0) {
			diag("trial %d: env_fault_drop_unsynced: %s", t, kv_strerror(r));
			failed = 1;
		}
	}
	if (tr->db) {
		if (!failed) {
			r = kv_put(tr->db, "zz", 2, "after", 5, KV_SYNC);
			if (r != 0) {
				diag("trial %d: the recovered database refuses a write: %s", t,
				     kv_strerror(r));
				failed = 1;
			}
		}
		kv_close(tr->db);
	}
	c->damaged_tails += tr->damaged_tails;
	{
		long kept, dropped, zeroed;
		env_fault_cut_pages(fe, &kept, &dropped, &zeroed);
		c->pages[0] += kept;
		c->pages[1] += dropped;
		c->pages[2] += zeroed;
	}
	env_fault_free(fe);
	if (!failed) {
		kv_destroy(dir, NULL);
		rm_rf(dir);
	} else {
		diag("trial %d: the database is kept in %s", t, dir);
	}
	free(dir);
	free(tr);
	return failed ? -1 : 0;
}

/* ------------------------------------------------- the rule, case by case */

static char last_warning[1024];

static void warn_sink(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg;
	if (level <= KV_LOG_WARN)
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

#define RULE_KEYS 300

/*
 * A closed database whose one log holds RULE_KEYS puts (keys kc00000..) of
 * 150-byte values; *log its path.
 */
static int make_logged_db(const char *dir, char **log, char kc)
{
	struct kv_options o;
	struct kv_db *db;
	char k[32], v[150];
	char **names;
	size_t n;
	int r;

	kv_options_init(&o);
	*log = NULL;
	if ((r = kv_open(dir, &o, &db)) < 0)
		return r;
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < RULE_KEYS && r == 0; i++)
		r = kv_put(db, k, (size_t)snprintf(k, sizeof(k), "%c%05d", kc, i), v, sizeof(v), 0);
	if (r == 0)
		r = kv_close(db);
	else
		kv_close(db);
	if (r < 0 || (r = env_list_dir(env_posix(), dir, &names, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		uint64_t size;
		char *path = xasprintf("%s/%s", dir, names[i]);
		if (strstr(names[i], ".log") && env_file_size(env_posix(), path, &size) == 0 &&
		    size > 0 && !*log)
			*log = path;
		else
			free(path);
	}
	env_free_list(names, n);
	return *log ? 0 : -ENOENT;
}

static int overwrite(const char *path, uint64_t off, int byte, size_t n)
{
	char *b = xmalloc(n);
	FILE *f = fopen(path, "r+b");
	int r = -EIO;

	memset(b, byte, n);
	if (f && fseek(f, (long)off, SEEK_SET) == 0 && fwrite(b, 1, n, f) == n)
		r = 0;
	if (f && fclose(f) != 0)
		r = -EIO;
	free(b);
	return r;
}

/* Open dir; count the keys k00000.. present in a row from the first, *all those present. */
/* The keys of the other database's log ("m...") that open_and_count found. */
static int rule_other;

static int open_and_count(const char *dir, int *prefix, int *all)
{
	struct kv_options o;
	struct kv_db *db;
	char k[32], *v;
	size_t vl;
	int r;

	kv_options_init(&o);
	o.create_if_missing = 0;
	o.log = warn_sink;
	last_warning[0] = 0;
	*prefix = *all = 0;
	if ((r = kv_open(dir, &o, &db)) < 0)
		return r;
	rule_other = 0;
	for (int i = 0; i < RULE_KEYS; i++) {
		int g = kv_get(db, NULL, k, (size_t)snprintf(k, sizeof(k), "k%05d", i), &v, &vl);
		if (g == 0) {
			free(v);
			if (*prefix == i)
				(*prefix)++;
			(*all)++;
		}
		if (kv_get(db, NULL, k, (size_t)snprintf(k, sizeof(k), "m%05d", i), &v, &vl) == 0) {
			free(v);
			rule_other++;
		}
	}
	return kv_close(db);
}

static void test_rule(void)
{
	char *dir, *log = NULL, *newer, *other, *olog = NULL;
	int r, prefix, all;
	uint64_t size;

	/* a zeroed page in the middle of the last log's tail */
	dir = xasprintf("%s/rule-zero", tmpdir);
	r = make_logged_db(dir, &log, 'k');
	is_int(r, 0, "rule: a database whose log holds %d records", RULE_KEYS);
	if (r < 0)
		goto out;
	env_file_size(env_posix(), log, &size);
	overwrite(log, 16384, 0, 4096);
	r = open_and_count(dir, &prefix, &all);
	is_int(r, 0, "rule: a page of zeros in the middle of the last log: the database opens");
	ok(prefix > 50 && prefix < RULE_KEYS - 50 && all == prefix,
	   "rule: it holds the records before the page and none after (%d in a row, %d in all)",
	   prefix, all);
	ok(strstr(last_warning, log) && strstr(last_warning, "offset 16") &&
	   strstr(last_warning, "dropping"),
	   "rule: a warning names the log, the offset and the bytes dropped: %s", last_warning);
	free(log);
	kv_destroy(dir, NULL);
	free(dir);

	/* garbage after the last record */
	dir = xasprintf("%s/rule-garbage", tmpdir);
	make_logged_db(dir, &log, 'k');
	env_file_size(env_posix(), log, &size);
	{
		FILE *f = fopen(log, "ab");
		for (int i = 0; f && i < 3000; i++)
			fputc(0x20 + i % 90, f);
		if (f)
			fclose(f);
	}
	r = open_and_count(dir, &prefix, &all);
	is_int(r, 0, "rule: garbage after the last record of the last log: the database opens");
	is_int(prefix, RULE_KEYS, "rule: and holds every record");
	ok(strstr(last_warning, "dropping 3000 bytes") != NULL,
	   "rule: the warning says 3000 bytes were dropped: %s", last_warning);
	free(log);
	kv_destroy(dir, NULL);
	free(dir);

	/* a flipped byte with intact records after it is corruption, last log or not */
	dir = xasprintf("%s/rule-flip", tmpdir);
	make_logged_db(dir, &log, 'k');
	overwrite(log, 16384, 0x5a, 1);
	r = open_and_count(dir, &prefix, &all);
	is_int(r, -EUCLEAN, "rule: a flipped byte in the middle of the last log is corruption");
	ok(r == -EUCLEAN && strstr(kv_strerror(r), log), "rule: the message names the log: %s",
	   kv_strerror(r));
	free(log);
	kv_destroy(dir, NULL);
	free(dir);

	/*
	 * A zeroed page in a log that is not the last.  A retired log is
	 * synced only when a synced write needs it, so any log may end in what
	 * a power cut leaves of an unsynced tail: recovery stops there and
	 * drops the newer log, which could then hold unsynced writes only (a
	 * synced write waits until every older log is synced); keeping it
	 * would leave a hole.  A flipped byte with intact records after it is still
	 * corruption there, as in the last log.
	 */
	dir = xasprintf("%s/rule-older", tmpdir);
	other = xasprintf("%s/rule-other", tmpdir);
	make_logged_db(dir, &log, 'k');
	make_logged_db(other, &olog, 'm');
	{
		/* the other database's log, with other keys, as a newer log of this one */
		size_t n;
		char *data = NULL;
		int num = atoi(strrchr(log, '/') + 1);
		newer = xasprintf("%s/%06d.log", dir, num + 1);
		env_read_file(env_posix(), olog, &data, &n);
		FILE *f = fopen(newer, "wb");
		if (f && data) {
			fwrite(data, 1, n, f);
			fclose(f);
		}
		free(data);
	}
	overwrite(log, 16384, 0x5a, 1);
	r = open_and_count(dir, &prefix, &all);
	is_int(r, -EUCLEAN, "rule: a flipped byte in a log older than the last is corruption");
	ok(r == -EUCLEAN && strstr(kv_strerror(r), log), "rule: the message names that log: %s",
	   kv_strerror(r));
	overwrite(log, 16384, 0, 4096);
	r = open_and_count(dir, &prefix, &all);
	is_int(r, 0, "rule: a page of zeros in a log older than the last ends the history "
	       "there: the database opens");
	ok(prefix > 50 && prefix < RULE_KEYS - 50 && all == prefix && rule_other == 0,
	   "rule: it holds the older log's records before the page and nothing of the newer "
	   "log (%d in a row, %d in all, %d of the newer log)", prefix, all, rule_other);
	ok(strstr(last_warning, "drops the 1 later logs") != NULL,
	   "rule: a warning says the newer log was dropped: %s", last_warning);
	ok(!env_exists(env_posix(), newer), "rule: and the newer log is gone");
	free(newer);
	free(log);
	free(olog);
	kv_destroy(dir, NULL);
	kv_destroy(other, NULL);
	free(other);
out:
	free(dir);
}

int main(void)
{
	const char *seed_env = getenv("SMOLFS_TEST_SEED");
	uint64_t seeds[2] = { 0x9c0ffee5ull, 0 };
	int trials = (int)(6 * test_scale() + 0.5);
	struct counts c;
	uint64_t t0 = now_micros();
	int failed = 0;

	memset(&c, 0, sizeof(c));
	seeds[1] = seed_env ? strtoull(seed_env, NULL, 0)
			    : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (trials < 1)
		trials = 1;
	plan(4 + 15);
	make_tmpdir("kv_powercut");
	test_rule();
	diag("seeds %#llx and %#llx (set SMOLFS_TEST_SEED=%#llx to repeat the second), "
	     "%d trials of %d rounds each, in %s", (unsigned long long)seeds[0],
	     (unsigned long long)seeds[1], (unsigned long long)seeds[1], trials, ROUNDS, tmpdir);
	for (int s = 0; s < 2; s++)
		for (int t = 0; t < trials; t++)
			if (trial(s * trials + t, seeds[s], &c) < 0)
				failed++;
	diag("power cuts simulated: %ld, synced writes checked: %ld, lost: %ld",
	     c.cuts, c.synced_checked, c.synced_lost);
	diag("acknowledged unsynced writes kept: %ld, lost: %ld; recoveries that dropped a "
	     "damaged tail: %ld; unsynced pages kept %ld, dropped %ld, zeroed %ld; %.1f s",
	     c.acked_kept, c.acked_lost, c.damaged_tails, c.pages[0], c.pages[1], c.pages[2],
	     (now_micros() - t0) / 1e6);
	is_int(failed, 0, "in %d trials the database opened after every power cut and held "
	       "what was written", 2 * trials);
	is_int(c.synced_lost, 0, "no synced write was lost (%ld checked)", c.synced_checked);
	ok(c.synced_checked >= 100 * trials, "the trials checked many synced writes (%ld)",
	   c.synced_checked);
	if (trials >= 6)
		ok(c.damaged_tails > 0, "some recoveries met a damaged unsynced tail and kept what "
		   "came before it (%ld)", c.damaged_tails);
	else
		skip(1, "too few trials to be sure to meet a damaged unsynced tail");
	if (exit_status() == 0)
		rm_rf(tmpdir);
	return exit_status();
}
