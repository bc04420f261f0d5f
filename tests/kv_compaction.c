/*
 * kv_compaction.c -- the contract of compaction (engine/compaction.c).
 *
 * Compaction may drop what no reader can see any more, and nothing else:
 * overwritten versions go unless a snapshot still reads them; deletion
 * markers and range tombstones go once they reach the bottom with nothing
 * older below them for them to hide, but stay while a snapshot older than
 * them lives or a deeper level still holds data they cover; the compaction
 * filter drops what it selects without letting an older version reappear.
 * Meanwhile automatic compactions keep level 0 bounded and deeper levels
 * sorted and disjoint, a range tombstone cut across many output tables
 * still deletes exactly its range, everything survives a reopen, and files
 * no version needs are removed from the directory.
 *
 * Sizes are read from kv_get_stats and kv_property("sstables"); white-box,
 * db.h gives the live version (to check level invariants while compactions
 * run) and tells when background work has settled.
 */
#include "db.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"
#include "dbtest.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dbpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

/* ------------------------------------------------------------ keys and values */

static void key_of(char *k, size_t n, char space, long i)
{
	snprintf(k, n, "%c%07ld", space, i);
}

/*
 * The value of version `ver` of key i: a readable head, then bytes that do
 * not compress, so a table's size follows what it holds.  Versions are > 0.
 */
static size_t value_of(char *v, size_t n, long i, long ver)
{
	uint64_t s = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ (uint64_t)ver * 0xc2b2ae3d27d4eb4full;
	uint64_t x = 0;
	int h = snprintf(v, n, "%ld:%ld:", i, ver);

	for (size_t j = (size_t)h; j < n; j++) {
		if ((j - (size_t)h) % 8 == 0)
			x = rand_next(&s);
		v[j] = (char)(x >> (8 * ((j - (size_t)h) % 8)));
	}
	return n;
}

/*
 * Read keys [0, n) of `space` at snap and compare with want[i] (a version,
 * or 0: absent); values are vlen bytes.  Returns the number of mismatches
 * and describes the first.
 */
static long bad_gets(struct kv_db *db, const struct kv_snapshot *snap, char space, long n,
		     const long *want, size_t vlen)
{
	char k[32], *v = xmalloc(vlen);
	long bad = 0;

	for (long i = 0; i < n; i++) {
		char *got = NULL;
		size_t gl = 0;
		int r;

		key_of(k, sizeof(k), space, i);
		r = kv_get(db, snap, k, strlen(k), &got, &gl);
		if (want[i] == 0) {
			if (r != -ENOENT && !bad++)
				diag("%s: kv_get gave %d, want -ENOENT", k, r);
		} else {
			value_of(v, vlen, i, want[i]);
			if ((r != 0 || gl != vlen || memcmp(got, v, vlen)) && !bad++)
				diag("%s: kv_get gave %d (%.20s), want version %ld", k, r,
				     r == 0 ? got : "", want[i]);
		}
		free(got);
	}
	free(v);
	return bad;
}

/* The same through the iterator it, walked forward from its first key. */
static long bad_walk(struct kv_iter *it, char space, long n, const long *want, size_t vlen)
{
	char k[32], *v = xmalloc(vlen);
	long bad = 0, i = 0;

	kv_iter_seek_first(it);
	for (;; i++) {
		while (i < n && want[i] == 0)
			i++;
		if (i == n || !kv_iter_valid(it))
			break;
		size_t kl, vl;
		const char *gk = kv_iter_key(it, &kl), *gv = kv_iter_value(it, &vl);
		key_of(k, sizeof(k), space, i);
		value_of(v, vlen, i, want[i]);
		if ((kl != strlen(k) || memcmp(gk, k, kl) || vl != vlen || memcmp(gv, v, vl)) &&
		    !bad++)
			diag("scan: at %.*s, want %s version %ld", (int)kl, gk, k, want[i]);
		kv_iter_next(it);
	}
	if ((i < n || kv_iter_valid(it)) && !bad++)
		diag("scan: %s while the model %s", kv_iter_valid(it) ? "more keys" : "it ended",
		     i < n ? "has more" : "has ended");
	if (kv_iter_status(it) && !bad++)
		diag("scan: status %d", kv_iter_status(it));
	free(v);
	return bad;
}

/* The same through a new iterator at snap over `space`. */
static long bad_scan(struct kv_db *db, const struct kv_snapshot *snap, char space, long n,
		     const long *want, size_t vlen)
{
	struct kv_iter *it = kv_iter_new_prefix(db, snap, &space, 1);
	long bad = bad_walk(it, space, n, want, vlen);

	kv_iter_free(it);
	return bad;
}

/*
 * Write version vers[i] (or, where it is 0, a delete) of the keys i = from,
 * from + step, ... below to, of space.
 */
static int write_keys(struct kv_db *db, char space, long from, long to, long step,
		      const long *vers, size_t vlen)
{
	struct kv_batch *b = kv_batch_new();
	char k[32], *v = xmalloc(vlen);
	int errors = 0;

	for (long i = from; i < to; i += step) {
		key_of(k, sizeof(k), space, i);
		if (vers[i]) {
			value_of(v, vlen, i, vers[i]);
			kv_batch_put(b, k, strlen(k), v, vlen);
		} else {
			kv_batch_delete(b, k, strlen(k));
		}
		if (kv_batch_count(b) == 500 || i + step >= to) {
			errors += kv_write(db, b, 0) != 0;
			kv_batch_clear(b);
		}
	}
	kv_batch_free(b);
	free(v);
	return errors;
}

static int delete_range(struct kv_db *db, char space, long from, long to)
{
	char a[32], b[32];

	key_of(a, sizeof(a), space, from);
	key_of(b, sizeof(b), space, to);
	return kv_delete_range(db, a, strlen(a), b, strlen(b), 0);
}

/*
 * Close db, open dir again with o, and check that a scan of `space` reads
 * want: two assertions named after what (its reopen, then its scan).
 */
static void reopen_scan(struct kv_db *db, const char *dir, const struct kv_options *o, char space,
			long n, const long *want, size_t vlen, const char *what)
{
	int r;

	kv_close(db);
	r = kv_open(dir, o, &db);
	is_int(r, 0, "%s: reopen", what);
	if (r == 0) {
		is_int(bad_scan(db, NULL, space, n, want, vlen), 0,
		       "%s: after reopen a scan reads right", what);
		kv_close(db);
	}
}

/* ------------------------------------------------------------ white-box views */

/*
 * The live version of the database.  REQUIRES db->mu.  The one place here
 * that knows where the version set keeps it.
 */
static struct version *live_version(struct kv_db *db)
{
	return db->trees[0]->vt->current;
}

/*
 * Check the level invariant of the live version: in every level >= 1 the
 * tables are disjoint.  Neighbours may share a user key only when the first
 * one ends with a tombstone's (exclusive) end; a key's versions never span
 * two tables.  Returns the number of violations (described in why), and the
 * level-0 table count in *l0.
 */
static int level_violations(struct kv_db *db, int *l0, char *why, size_t whylen)
{
	int bad = 0;

	pthread_mutex_lock(&db->mu);
	struct version *v = live_version(db);
	*l0 = (int)v->nfiles[0];
	for (int l = 1; l < NUM_LEVELS; l++) {
		for (size_t i = 1; i < v->nfiles[l]; i++) {
			const struct file_meta *a = v->files[l][i - 1], *b = v->files[l][i];
			struct slice al = buf_slice(&a->largest), bs = buf_slice(&b->smallest);
			int c = slice_cmp(ikey_user(al), ikey_user(bs));
			int tomb_end = ikey_type(al) == KT_RANGE_DEL && ikey_seq(al) == SEQ_MAX;

			if (ikey_cmp(al, bs) < 0 && (c < 0 || (c == 0 && tomb_end)))
				continue;
			if (!bad++)
				snprintf(why, whylen, "level %d: %06llu ends at %.*s, %06llu "
					 "starts at %.*s", l, (unsigned long long)a->number,
					 (int)ikey_user(al).len, ikey_user(al).data,
					 (unsigned long long)b->number, (int)ikey_user(bs).len,
					 ikey_user(bs).data);
		}
	}
	pthread_mutex_unlock(&db->mu);
	return bad;
}

/* One line of kv_property("sstables"). */
struct table_info {
	int level;
	unsigned long long number, bytes, entries, range_dels;
};

static struct table_info *tables(struct kv_db *db, size_t *n)
{
	char *p = kv_property(db, "sstables"), *line, *save = NULL;
	struct table_info *t = NULL;

	*n = 0;
	if (!p)
		return NULL;
	for (line = strtok_r(p, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct table_info x;
		if (sscanf(line, "level %d %llu.sst %llu bytes, %llu entries, %llu range "
			   "tombstones", &x.level, &x.number, &x.bytes, &x.entries,
			   &x.range_dels) != 5)
			continue;
		t = xrealloc(t, (*n + 1) * sizeof(*t));
		t[(*n)++] = x;
	}
	free(p);
	return t;
}

static unsigned long long total_range_dels(struct kv_db *db, size_t *files_with)
{
	size_t n;
	struct table_info *t = tables(db, &n);
	unsigned long long sum = 0;

	*files_with = 0;
	for (size_t i = 0; i < n; i++) {
		sum += t[i].range_dels;
		*files_with += t[i].range_dels > 0;
	}
	free(t);
	return sum;
}

static int total_files(struct kv_db *db)
{
	struct kv_stats st;
	int n = 0;

	kv_get_stats(db, &st);
	for (int l = 0; l < 8; l++)
		n += st.files_per_level[l];
	return n;
}

static uint64_t disk_bytes(struct kv_db *db)
{
	struct kv_stats st;

	kv_get_stats(db, &st);
	return st.disk_bytes;
}

/*
 * Put data below level 1 through the size trigger: compact it into level 1,
 * whose limit (max_bytes_level_base) it exceeds, so it moves further down.
 */
static int settle_below_level1(struct kv_db *db)
{
	struct kv_stats st;
	int below = 0;

	if (kv_compact_range(db, NULL, 0, NULL, 0) != 0 || !wait_idle(db))
		return 0;
	kv_get_stats(db, &st);
	for (int l = 2; l < 8; l++)
		below += st.files_per_level[l];
	if (st.files_per_level[0] == 0 && st.files_per_level[1] == 0 && below > 0)
		return 1;
	diag("tables per level: %d %d %d %d", st.files_per_level[0], st.files_per_level[1],
	     st.files_per_level[2], st.files_per_level[3]);
	return 0;
}

/* Tables in levels 1 and below 1. */
static void level1_and_below(struct kv_db *db, int *l1, int *below)
{
	struct kv_stats st;

	kv_get_stats(db, &st);
	*l1 = st.files_per_level[1];
	*below = 0;
	for (int l = 2; l < 8; l++)
		*below += st.files_per_level[l];
}

/* ------------------------------------------------------------ overwrites */

static void test_overwrites(void)
{
	enum { VLEN = 200 };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("overwrite");
	long n = scaled(4000, 500), *want = xcalloc((size_t)n, sizeof(long));
	long *at_s1 = xcalloc((size_t)n, sizeof(long)), *at_s2 = xcalloc((size_t)n, sizeof(long));
	uint64_t one, now;
	const struct kv_snapshot *s1, *s2 = NULL;
	int r, errors = 0;

	kv_options_init(&o);
	o.write_buffer_size = 256 * 1024;
	o.target_file_size = 256 * 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "overwrite: open");
	if (r < 0)
		goto out;

	/* one version of every key, alone, gives the size of one version */
	for (long i = 0; i < n; i++)
		want[i] = 1;
	errors += write_keys(db, 'o', 0, n, 1, want, VLEN);
	kv_compact_range(db, NULL, 0, NULL, 0);
	one = disk_bytes(db);
	diag("one version of %ld keys of %d bytes: %llu bytes", n, VLEN, (unsigned long long)one);

	for (long ver = 2; ver <= 5; ver++) {
		for (long i = 0; i < n; i++)
			want[i] = ver;
		errors += write_keys(db, 'o', 0, n, 1, want, VLEN);
		kv_flush(db);
	}
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "overwrite: compact 5 versions of %ld "
	       "keys", n);
	now = disk_bytes(db);
	/*
	 * The same keys with values of the same size that do not compress: one
	 * version makes tables of the same size, give or take where blocks and
	 * files are cut.  10% more would mean a tenth of the keys kept an old
	 * version; keeping all five would be 5 times as much.
	 */
	ok(now * 10 <= one * 11, "overwrite: with no snapshot, only the newest version stays "
	   "(%llu bytes, one version is %llu)", (unsigned long long)now, (unsigned long long)one);
	is_int(bad_gets(db, NULL, 'o', n, want, VLEN), 0, "overwrite: every key reads version 5");

	/* snapshots keep what they read */
	s1 = kv_snapshot_new(db);
	memcpy(at_s1, want, (size_t)n * sizeof(long));
	for (long ver = 6; ver <= 8; ver++) {
		for (long i = 0; i < n; i++)
			want[i] = ver;
		errors += write_keys(db, 'o', 0, n, 1, want, VLEN);
		if (ver == 7) {
			s2 = kv_snapshot_new(db);
			memcpy(at_s2, want, (size_t)n * sizeof(long));
		}
		kv_flush(db);
	}
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "overwrite: compact versions 5..8 while snapshots at 5 and 7 live");
	now = disk_bytes(db);
	/* version 5 for s1, 7 for s2, 8 for the latest: at least 3 versions' worth */
	ok(now * 10 >= one * 27, "overwrite: the versions snapshots read stay (%llu bytes, at "
	   "least 3 versions' worth of %llu)", (unsigned long long)now, (unsigned long long)one);
	is_int(bad_gets(db, s1, 'o', n, at_s1, VLEN), 0,
	       "overwrite: the older snapshot reads version 5 of every key");
	is_int(bad_scan(db, s1, 'o', n, at_s1, VLEN), 0,
	       "overwrite: and an iterator at it scans version 5");
	is_int(bad_gets(db, s2, 'o', n, at_s2, VLEN), 0,
	       "overwrite: the newer snapshot reads version 7 of every key");
	is_int(bad_gets(db, NULL, 'o', n, want, VLEN), 0,
	       "overwrite: the latest state reads version 8");

	kv_snapshot_release(db, s1);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "overwrite: compact after the older snapshot is released");
	now = disk_bytes(db);
	/*
	 * s2 reads 7 and the latest 8: two versions' worth, with the allowance
	 * above.  5 (read only by the released snapshot) and 6 (read by no one)
	 * must be gone.
	 */
	ok(now * 10 <= one * 22, "overwrite: versions no remaining reader needs are dropped "
	   "(%llu bytes, at most 2 versions' worth of %llu)", (unsigned long long)now,
	   (unsigned long long)one);
	is_int(bad_gets(db, s2, 'o', n, at_s2, VLEN), 0,
	       "overwrite: the remaining snapshot still reads version 7");
	kv_snapshot_release(db, s2);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "overwrite: compact after every snapshot is released");
	now = disk_bytes(db);
	ok(now * 10 <= one * 11, "overwrite: back to the newest version only (%llu bytes, one "
	   "version is %llu)", (unsigned long long)now, (unsigned long long)one);
	is_int(bad_scan(db, NULL, 'o', n, want, VLEN), 0, "overwrite: a scan reads version 8");
	is_int(errors, 0, "overwrite: every write succeeded");
	kv_close(db);
out:
	free(want);
	free(at_s1);
	free(at_s2);
	free(dir);
}

/* ------------------------------------------------------------ deletes */

/* Delete keys [0, n/2) one by one and [n/2, n) with one range delete. */
static int delete_all(struct kv_db *db, char space, long n, long *want)
{
	int errors;

	for (long i = 0; i < n; i++)
		want[i] = 0;
	errors = write_keys(db, space, 0, n / 2, 1, want, 0);
	errors += delete_range(db, space, n / 2, n) != 0;
	return errors;
}

static void test_deletes_at_bottom(void)
{
	enum { VLEN = 100 };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("deletes");
	long n = scaled(5000, 500);
	long *want = xcalloc((size_t)n, sizeof(long)), *before = xcalloc((size_t)n, sizeof(long));
	const struct kv_snapshot *s;
	size_t with;
	int r, errors = 0;

	kv_options_init(&o);
	o.write_buffer_size = 128 * 1024;
	o.target_file_size = 16 * 1024;   /* several tables, even at small scales */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "deletes: open");
	if (r < 0)
		goto out;

	for (long i = 0; i < n; i++)
		want[i] = 1;
	errors += write_keys(db, 'd', 0, n, 1, want, VLEN);
	kv_compact_range(db, NULL, 0, NULL, 0);
	ok(total_files(db) > 1, "deletes: %ld keys in %d tables", n, total_files(db));
	errors += delete_all(db, 'd', n, want);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "deletes: compact after point-deleting half the keys and range-deleting the rest");
	is_int(total_files(db), 0, "deletes: at the bottom nothing is left: no table at all");
	/* the log is new and empty after kv_compact_range's flush; the tables are gone */
	ok(disk_bytes(db) < 1024, "deletes: disk_bytes is near zero (%llu)",
	   (unsigned long long)disk_bytes(db));
	is_int(total_range_dels(db, &with), 0, "deletes: no range tombstone is left");
	is_int(bad_scan(db, NULL, 'd', n, want, VLEN), 0, "deletes: a scan finds nothing");

	/* a snapshot older than the deletes keeps them, and what they delete */
	for (long i = 0; i < n; i++)
		want[i] = 2;
	errors += write_keys(db, 'd', 0, n, 1, want, VLEN);
	kv_compact_range(db, NULL, 0, NULL, 0);
	s = kv_snapshot_new(db);
	memcpy(before, want, (size_t)n * sizeof(long));
	errors += delete_all(db, 'd', n, want);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "deletes: compact the same deletes while an older snapshot lives");
	{
		unsigned long long rd = total_range_dels(db, &with);
		ok(rd > 0, "deletes: the range tombstone stays (%llu pieces in %zu tables)", rd,
		   with);
	}
	ok(total_files(db) > 0, "deletes: tables stay (%d)", total_files(db));
	is_int(bad_gets(db, s, 'd', n, before, VLEN), 0, "deletes: the snapshot reads every key");
	is_int(bad_scan(db, s, 'd', n, before, VLEN), 0, "deletes: and scans every key");
	is_int(bad_gets(db, NULL, 'd', n, want, VLEN), 0, "deletes: the latest state reads none");
	is_int(bad_scan(db, NULL, 'd', n, want, VLEN), 0, "deletes: nor scans any");
	kv_snapshot_release(db, s);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "deletes: compact again once the snapshot is released");
	is_int(total_files(db), 0, "deletes: then no table is left");
	is_int(total_range_dels(db, &with), 0, "deletes: nor any range tombstone");
	is_int(errors, 0, "deletes: every write succeeded");
	kv_close(db);

	/*
	 * Deletes that reach level 1 while level 2 holds what they delete must
	 * stay there, or the data below would come back.
	 */
	rm_rf(dir);
	kv_options_init(&o);
	o.write_buffer_size = (size_t)n * 400;  /* the data stays in one memtable until compacted */
	o.compression_level = 0;
	/*
	 * An entry of the data takes about 120 bytes, a point delete about 20:
	 * the data outgrows level 1 (n x 30 bytes) and moves down; the deletes
	 * (n / 2 of them) fit in it and stay.
	 */
	o.max_bytes_level_base = (uint64_t)n * 30;
	o.l0_compaction_trigger = 1;          /* each flush is compacted into level 1 */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "deletes over level 2: open");
	if (r < 0)
		goto out;
	errors = 0;
	for (long i = 0; i < n; i++)
		want[i] = 3;
	errors += write_keys(db, 'd', 0, n, 1, want, VLEN);
	ok(settle_below_level1(db), "deletes over level 2: the data is below level 1");
	{
		struct kv_stats st0, st1;

		kv_get_stats(db, &st0);
		errors += delete_all(db, 'd', n, want);
		kv_flush(db);
		ok(wait_idle(db), "deletes over level 2: the deletes are flushed and compacted");
		kv_get_stats(db, &st1);
		/*
		 * A table moved down whole is not what this tests: the deletes must
		 * go through a compaction that rewrites them while the data is below.
		 */
		ok(st1.compactions > st0.compactions, "deletes over level 2: a compaction "
		   "rewrote them (%llu compactions), they were not only moved down",
		   (unsigned long long)(st1.compactions - st0.compactions));
	}
	{
		int l1, below;
		level1_and_below(db, &l1, &below);
		ok(l1 > 0 && below > 0, "deletes over level 2: they sit in level 1 (%d tables) "
		   "above the data (%d)", l1, below);
	}
	ok(total_range_dels(db, &with) > 0,
	   "deletes over level 2: the range tombstone stays while level 2 holds what it covers");
	is_int(bad_gets(db, NULL, 'd', n, want, VLEN), 0,
	       "deletes over level 2: no deleted key comes back (point deletes stay too)");
	is_int(bad_scan(db, NULL, 'd', n, want, VLEN), 0, "deletes over level 2: a scan is empty");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "deletes over level 2: compact it all");
	is_int(total_files(db), 0, "deletes over level 2: at the bottom, no table is left");
	is_int(errors, 0, "deletes over level 2: every write succeeded");
	kv_close(db);
out:
	free(want);
	free(before);
	free(dir);
}

/* ------------------------------------------------------------ automatic */

struct monitor {
	struct kv_db *db;
	int stop;           /* atomic */
	int max_l0, violations, samples;
	char why[300];
};

static void *monitor_main(void *arg)
{
	struct monitor *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		int l0;
		char why[300];
		int bad = level_violations(m->db, &l0, why, sizeof(why));

		if (bad && !m->violations)
			memcpy(m->why, why, sizeof(why));
		m->violations += bad;
		if (l0 > m->max_l0)
			m->max_l0 = l0;
		m->samples++;
		usleep(500);
	}
	return NULL;
}

/* The names of the .sst files in dir (malloc'd). */
static char **sst_files(const char *dir, size_t *n)
{
	char **names, **out;
	size_t nn;

	*n = 0;
	if (env_list_dir(env_posix(), dir, &names, &nn) < 0)
		return NULL;
	out = xcalloc(nn + 1, sizeof(*out));
	for (size_t i = 0; i < nn; i++) {
		size_t l = strlen(names[i]);
		if (l > 4 && !strcmp(names[i] + l - 4, ".sst"))
			out[(*n)++] = xstrdup(names[i]);
	}
	env_free_list(names, nn);
	return out;
}

static int file_exists(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	int r = env_exists(env_posix(), p) == 1;

	free(p);
	return r;
}

/* Is the table named name (NNNNNN.sst) in the current version? */
static int is_live(struct kv_db *db, const char *name)
{
	size_t n;
	struct table_info *t = tables(db, &n);
	unsigned long long num = strtoull(name, NULL, 10);
	int live = 0;

	for (size_t i = 0; i < n; i++)
		live |= t[i].number == num;
	free(t);
	return live;
}

/*
 * The .sst, .log and MANIFEST files and anything else (but the fault
 * environment's own), counted against the live tables.
 */
static int directory_is_clean(struct kv_db *db, const char *dir)
{
	char **names;
	size_t n, nt;
	struct table_info *t = tables(db, &nt);
	int logs = 0, manifests = 0, current = 0, lock = 0, ssts = 0, stray = 0;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0) {
		free(t);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const char *s = names[i];
		size_t l = strlen(s);
		unsigned long long num;
		int live = 0;

		if (!strncmp(s, ".fault-backup-", 14)) {
			continue;   /* the fault environment's copy of an unlinked file, for its power cuts */
		} else if (!strcmp(s, "CURRENT")) {
			current++;
		} else if (!strcmp(s, "LOCK")) {
			lock++;
		} else if (!strncmp(s, "MANIFEST-", 9)) {
			manifests++;
		} else if (l > 4 && !strcmp(s + l - 4, ".log")) {
			logs++;
		} else if (l > 4 && !strcmp(s + l - 4, ".sst") && sscanf(s, "%llu", &num) == 1) {
			for (size_t j = 0; j < nt; j++)
				live |= t[j].number == num;
			if (live) {
				ssts++;
			} else {
				diag("%s is not a live table", s);
				stray++;
			}
		} else {
			diag("stray file %s", s);
			stray++;
		}
	}
	env_free_list(names, n);
	free(t);
	if (logs != 1 || manifests != 1 || current != 1 || lock != 1 || (size_t)ssts != nt)
		diag("%d logs, %d manifests, %d CURRENT, %d LOCK, %d of %zu live tables", logs,
		     manifests, current, lock, ssts, nt);
	return logs == 1 && manifests == 1 && current == 1 && lock == 1 && (size_t)ssts == nt &&
	       !stray;
}

static void test_automatic(void)
{
	enum { VLEN = 100 };
	struct kv_options o;
	struct kv_db *db;
	struct monitor mon;
	pthread_t th;
	struct kv_stats st;
	char *dir = dbpath("auto");
	/* enough live data (at least ~3 x max_bytes_level_base) to need level 2 */
	long nkeys = scaled(20000, 10000), ver = 0, writes = 0;
	long *want = xcalloc((size_t)nkeys, sizeof(long));
	uint64_t seed = 7, written = 0, goal;
	int r, errors = 0, l0, deepest = 0;
	char why[300];

	kv_options_init(&o);
	o.write_buffer_size = 64 * 1024;
	o.target_file_size = 64 * 1024;
	o.max_bytes_level_base = 256 * 1024;
	o.max_subcompactions = 3;      /* cut into ranges on any machine */
	o.l0_compaction_trigger = 2;
	o.l0_slowdown_trigger = 4;
	o.l0_stop_trigger = 6;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "automatic: open");
	if (r < 0)
		goto out;
	memset(&mon, 0, sizeof(mon));
	mon.db = db;
	pthread_create(&th, NULL, monitor_main, &mon);

	/* random puts, some deletes and small range deletes: many times write_buffer_size */
	goal = (uint64_t)(40.0 * (double)o.write_buffer_size * (test_scale() < 0.5 ? 0.5 :
							       test_scale()));
	while (written < goal) {
		long i = (long)(rand_next(&seed) % (uint64_t)nkeys);
		unsigned what = (unsigned)(rand_next(&seed) % 100);

		if (what < 4) {
			long len = 1 + (long)(rand_next(&seed) % 50);
			long end = i + len < nkeys ? i + len : nkeys;
			errors += delete_range(db, 'a', i, end) != 0;
			for (long j = i; j < end; j++)
				want[j] = 0;
		} else {
			want[i] = what < 10 ? 0 : ++ver;
			errors += write_keys(db, 'a', i, i + 1, 1, want, VLEN);
			written += VLEN + 8;
		}
		writes++;
	}
	ok(wait_idle(db), "automatic: background work settles after %ld writes", writes);
	__atomic_store_n(&mon.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	kv_get_stats(db, &st);
	for (int l = 1; l < 8; l++)
		if (st.files_per_level[l])
			deepest = l;
	diag("%llu flushes, %llu compactions (%llu ranges of cut ones), %llu us of stalls; "
	     "files per level %d %d %d %d; %d samples, level 0 reached %d files",
	     (unsigned long long)st.flushes, (unsigned long long)st.compactions,
	     (unsigned long long)st.subcompactions,
	     (unsigned long long)st.stall_micros, st.files_per_level[0], st.files_per_level[1],
	     st.files_per_level[2], st.files_per_level[3], mon.samples, mon.max_l0);
	ok(st.compactions > 0 && deepest >= 2,
	   "automatic: compactions ran (%llu) and pushed data down to level %d",
	   (unsigned long long)st.compactions, deepest);
	/*
	 * Writes wait once level 0 holds l0_stop_trigger tables (kv.h: "level-0
	 * files at which writes wait"); the flush that was already under way
	 * may make it that many, never more.
	 */
	ok(mon.max_l0 <= o.l0_stop_trigger, "automatic: level 0 never holds more than "
	   "l0_stop_trigger (%d) tables (at most %d seen in %d samples)", o.l0_stop_trigger,
	   mon.max_l0, mon.samples);
	is_int(mon.violations, 0, "automatic: levels >= 1 are sorted and disjoint in every sample");
	if (mon.violations)
		diag("%s", mon.why);
	is_int(level_violations(db, &l0, why, sizeof(why)), 0,
	       "automatic: and once settled");
	ok(l0 < o.l0_compaction_trigger,
	   "automatic: once settled level 0 is below its trigger (%d)", l0);
	is_int(bad_gets(db, NULL, 'a', nkeys, want, VLEN), 0, "automatic: every key reads right");
	is_int(bad_scan(db, NULL, 'a', nkeys, want, VLEN), 0, "automatic: a scan reads right");
	is_int(errors, 0, "automatic: every write succeeded");
	ok(directory_is_clean(db, dir), "automatic: the directory holds the live tables, one log, "
	   "one MANIFEST, CURRENT and LOCK, nothing else");

	/* an iterator keeps its tables; once it is gone, they are deleted */
	{
		struct kv_iter *it = kv_iter_new_prefix(db, NULL, "a", 1);
		long *now = xcalloc((size_t)nkeys, sizeof(long));
		size_t nheld, kept = 0, replaced = 0, left = 0;
		char **held = sst_files(dir, &nheld);

		for (long i = 0; i < nkeys; i++)
			now[i] = i % 3 ? ++ver : 0;
		errors = write_keys(db, 'a', 0, nkeys, 1, now, VLEN);
		kv_compact_range(db, NULL, 0, NULL, 0);
		wait_idle(db);
		for (size_t i = 0; i < nheld; i++) {
			int on_disk = file_exists(dir, held[i]), live = is_live(db, held[i]);
			kept += on_disk;
			replaced += !live;
		}
		ok(replaced > 0 && kept == nheld, "automatic: while an iterator lives, the %zu "
		   "tables it reads stay on disk (%zu do), though compaction replaced %zu", nheld,
		   kept, replaced);
		kv_iter_seek_first(it);
		is_int(bad_walk(it, 'a', nkeys, want, VLEN), 0,
		       "automatic: and the iterator reads them: its state, not the rewrite");
		kv_iter_free(it);
		memcpy(want, now, (size_t)nkeys * sizeof(long));
		free(now);
		is_int(bad_scan(db, NULL, 'a', nkeys, want, VLEN), 0,
		       "automatic: a new iterator reads the rewrite");
		/* nothing else happens: the database is idle, the files are obsolete */
		for (int tries = 0; tries < 1000; tries++) {
			left = 0;
			for (size_t i = 0; i < nheld; i++)
				left += file_exists(dir, held[i]) && !is_live(db, held[i]);
			if (!left)
				break;
			usleep(2000);
		}
		is_int(left, 0, "automatic: once it is freed, the replaced tables are deleted "
		       "(without waiting for some later flush or compaction)");
		if (left) {
			kv_put(db, "zz", 2, "flush me", 8, 0);
			kv_flush(db);
			wait_idle(db);
			left = 0;
			for (size_t i = 0; i < nheld; i++)
				left += file_exists(dir, held[i]) && !is_live(db, held[i]);
			diag("after a later flush, %zu of them are left", left);
			kv_delete(db, "zz", 2, 0);
		}
		for (size_t i = 0; i < nheld; i++)
			free(held[i]);
		free(held);
		is_int(errors, 0, "automatic: the rewrite succeeded");
	}

	/*
	 * A table in level 0 and a write in the log: the open replays the log into
	 * a second level-0 table, which reaches l0_compaction_trigger (2).
	 */
	kv_compact_range(db, NULL, 0, NULL, 0);
	kv_put(db, "zz", 2, "in a table", 10, 0);
	kv_flush(db);
	ok(wait_idle(db), "automatic: settles before close");
	kv_get_stats(db, &st);
	is_int(st.files_per_level[0], 1, "automatic: with one table in level 0");
	kv_delete(db, "zz", 2, 0);
	is_int(kv_close(db), 0, "automatic: close");
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "automatic: reopen");
	if (r < 0)
		goto out;
	/* settle before reading: a reader holding a version keeps its files (see above) */
	ok(wait_idle(db), "automatic: after reopen background work settles");
	ok(directory_is_clean(db, dir), "automatic: after reopen, and the compaction of the "
	   "tables written by the replay of the log, only live files remain");
	is_int(bad_gets(db, NULL, 'a', nkeys, want, VLEN), 0,
	       "automatic: after reopen every key reads right");
	is_int(bad_scan(db, NULL, 'a', nkeys, want, VLEN), 0,
	       "automatic: after reopen a scan reads right");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "automatic: compact everything");
	ok(wait_idle(db), "automatic: settles");
	ok(directory_is_clean(db, dir),
	   "automatic: after a full compaction only live files remain");
	is_int(bad_scan(db, NULL, 'a', nkeys, want, VLEN), 0,
	       "automatic: after a full compaction a scan reads right");

	kv_close(db);
out:
	free(want);
	free(dir);
}

/* ------------------------------------------------------------ a tombstone across tables */

static void test_tombstone_across_tables(void)
{
	enum { VLEN = 40 };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("across");
	long n = scaled(8000, 2000), lo = n / 8, hi = n - n / 4;
	long *want = xcalloc((size_t)n, sizeof(long)), *at_s = xcalloc((size_t)n, sizeof(long));
	const struct kv_snapshot *s;
	size_t with;
	int r, errors = 0;

	kv_options_init(&o);
	o.write_buffer_size = 1024 * 1024;
	o.target_file_size = 4096;     /* the smallest: many output tables */
	o.max_subcompactions = 3;      /* cut into ranges on any machine: tombstone pieces at cuts */
	o.block_size = 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "across: open");
	if (r < 0)
		goto out;
	for (long i = 0; i < n; i++)
		want[i] = 1;
	errors += write_keys(db, 't', 0, n, 1, want, VLEN);
	kv_compact_range(db, NULL, 0, NULL, 0);
	s = kv_snapshot_new(db);
	memcpy(at_s, want, (size_t)n * sizeof(long));

	/* delete [lo, hi); then write some keys back inside it, at its edges too */
	errors += delete_range(db, 't', lo, hi) != 0;
	for (long i = lo; i < hi; i++)
		want[i] = 0;
	for (long i = lo; i < hi; i += 97)
		want[i] = 2;
	want[lo] = want[hi - 1] = 2;
	for (long i = lo; i < hi; i++)
		if (want[i])
			errors += write_keys(db, 't', i, i + 1, 1, want, VLEN);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "across: compact a tombstone over %ld keys while a snapshot older than it lives",
	       hi - lo);
	total_range_dels(db, &with);
	ok(with > 10, "across: the tombstone is cut across %zu output tables of %d", with,
	   total_files(db));
	is_int(bad_gets(db, NULL, 't', n, want, VLEN), 0,
	       "across: it deletes exactly [lo, hi), not the keys written back in it");
	is_int(bad_scan(db, NULL, 't', n, want, VLEN), 0, "across: a scan agrees");
	is_int(bad_gets(db, s, 't', n, at_s, VLEN), 0,
	       "across: the snapshot older than it still reads every key");
	is_int(bad_scan(db, s, 't', n, at_s, VLEN), 0, "across: and scans every key");

	/* a compaction of only some of those tables re-cuts their pieces */
	{
		long a = lo + (hi - lo) / 3, b = a + (hi - lo) / 6;
		char ka[32], kb[32];

		for (long i = a; i < b; i += 5)
			want[i] = 3;
		errors += write_keys(db, 't', a, b, 5, want, VLEN);
		kv_flush(db);
		key_of(ka, sizeof(ka), 't', a);
		key_of(kb, sizeof(kb), 't', b);
		is_int(kv_compact_range(db, ka, strlen(ka), kb, strlen(kb)), 0,
		       "across: compact a part of the deleted range after writing into it");
		is_int(bad_gets(db, NULL, 't', n, want, VLEN), 0,
		       "across: the pieces still delete exactly what they did");
		is_int(bad_gets(db, s, 't', n, at_s, VLEN), 0,
		       "across: and the snapshot still reads every key");
	}
	kv_snapshot_release(db, s);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "across: compact without the snapshot");
	is_int(total_range_dels(db, &with), 0, "across: no piece of the tombstone is left");
	is_int(bad_gets(db, NULL, 't', n, want, VLEN), 0, "across: every key still reads right");
	reopen_scan(db, dir, &o, 't', n, want, VLEN, "across");
	is_int(errors, 0, "across: every write succeeded");
out:
	free(want);
	free(at_s);
	free(dir);
}

/* ------------------------------------------------------------ the compaction filter */

#define SESSION_MAGIC 0x5e55u

struct session {
	unsigned magic;
	struct buf last;
	int have_last;
};

static struct {
	pthread_mutex_t mu;
	int starts, finishes, open, max_open, calls;
	int out_of_order, bad_state, not_newest;
	const long *want;     /* the newest version of each key, for checking */
	size_t vlen;
} fs = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0 };

static void *f_start(void *arg)
{
	struct session *s = xcalloc(1, sizeof(*s));

	(void)arg;
	s->magic = SESSION_MAGIC;
	pthread_mutex_lock(&fs.mu);
	fs.starts++;
	if (++fs.open > fs.max_open)
		fs.max_open = fs.open;
	pthread_mutex_unlock(&fs.mu);
	return s;
}

/* Drops values whose version is odd: the version follows the key's number in the value. */
static int f_filter(void *state, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct session *s = state;
	char head[48];
	long i, ver;
	int drop;

	pthread_mutex_lock(&fs.mu);
	fs.calls++;
	if (!s || s->magic != SESSION_MAGIC)
		fs.bad_state++;
	else {
		if (s->have_last && slice_cmp(buf_slice(&s->last), slice_make(key, klen)) >= 0)
			fs.out_of_order++;
		buf_set(&s->last, key, klen);
		s->have_last = 1;
	}
	memcpy(head, val, vlen < sizeof(head) - 1 ? vlen : sizeof(head) - 1);
	head[vlen < sizeof(head) - 1 ? vlen : sizeof(head) - 1] = 0;
	if (sscanf(head, "%ld:%ld:", &i, &ver) != 2) {
		i = -1;
		ver = 0;
	}
	if (fs.want && (i < 0 || fs.want[i] != ver))
		fs.not_newest++;
	drop = ver % 2 == 1;
	pthread_mutex_unlock(&fs.mu);
	return drop;
}

static void f_finish(void *state)
{
	struct session *s = state;

	pthread_mutex_lock(&fs.mu);
	if (!s || s->magic != SESSION_MAGIC)
		fs.bad_state++;
	fs.finishes++;
	fs.open--;
	pthread_mutex_unlock(&fs.mu);
	if (s) {
		s->magic = 0;
		buf_free(&s->last);
		free(s);
	}
}

/* After a filtered compaction: the expected state drops odd versions. */
static void filter_expect(long *want, long n)
{
	for (long i = 0; i < n; i++)
		if (want[i] % 2 == 1)
			want[i] = 0;
}

static void test_filter(void)
{
	enum { VLEN = 150 };
	struct kv_compaction_filter cf = { f_start, f_filter, f_finish, NULL };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("filter");
	long n = scaled(2000, 400);
	long *want = xcalloc((size_t)n, sizeof(long)), *at_s = xcalloc((size_t)n, sizeof(long));
	const struct kv_snapshot *s;
	int r, errors = 0, calls;

	kv_options_init(&o);
	o.compaction_filter = &cf;
	o.max_subcompactions = 1;             /* one session per compaction (see test_subcompactions) */
	o.write_buffer_size = (size_t)n * 400;  /* the data stays in one memtable until compacted */
	o.compression_level = 0;
	/*
	 * An entry takes about 170 bytes: the first versions of all keys outgrow
	 * level 1 (n x 120 bytes) and move down; newer versions of half the keys
	 * fit in it and stay.
	 */
	o.max_bytes_level_base = (uint64_t)n * 120;
	o.l0_compaction_trigger = 1;          /* each flush is compacted into level 1 */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "filter: open");
	if (r < 0)
		goto out;

	/* version 2 (kept by the filter) of every key goes to level 2 */
	for (long i = 0; i < n; i++)
		want[i] = 2;
	fs.want = want;
	fs.vlen = VLEN;
	errors += write_keys(db, 'f', 0, n, 1, want, VLEN);
	ok(settle_below_level1(db), "filter: the first versions are below level 1");

	/* newer versions of half the keys, odd (dropped) or even, compacted into level 1 */
	for (long i = 0; i < n; i += 2)
		want[i] = i % 4 == 0 ? 3 : 4;
	errors += write_keys(db, 'f', 0, n, 2, want, VLEN);
	calls = fs.calls;
	kv_flush(db);
	ok(wait_idle(db), "filter: the newer versions are flushed and compacted into level 1");
	{
		int l1, below;
		level1_and_below(db, &l1, &below);
		ok(l1 > 0 && below > 0, "filter: they sit in level 1 (%d tables) above the older "
		   "ones (%d)", l1, below);
	}
	ok(fs.calls - calls >= n / 2, "filter: the filter saw the %ld new values (%d calls)",
	   n / 2, fs.calls - calls);
	filter_expect(want, n);
	is_int(bad_gets(db, NULL, 'f', n, want, VLEN), 0,
	       "filter: a filtered newest value does not bring back the older one below");
	is_int(bad_scan(db, NULL, 'f', n, want, VLEN), 0, "filter: a scan agrees");

	/*
	 * What a snapshot reads in an older form is not given to the filter: the
	 * filter sees, of each key, the version the oldest snapshot reads.
	 */
	s = kv_snapshot_new(db);
	memcpy(at_s, want, (size_t)n * sizeof(long));
	fs.want = at_s;
	for (long i = 1; i < n; i += 2)
		want[i] = 5;
	errors += write_keys(db, 'f', 1, n, 2, want, VLEN);
	calls = fs.calls;
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "filter: compact with a snapshot");
	is_int(bad_gets(db, NULL, 'f', n, want, VLEN), 0,
	       "filter: values newer than the snapshot are not filtered");
	is_int(bad_gets(db, s, 'f', n, at_s, VLEN), 0, "filter: and the snapshot reads its state");
	kv_snapshot_release(db, s);
	fs.want = want;
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "filter: compact at the bottom once it is released");
	filter_expect(want, n);
	is_int(bad_gets(db, NULL, 'f', n, want, VLEN), 0,
	       "filter: then they are filtered, and nothing older comes back");
	is_int(bad_scan(db, NULL, 'f', n, want, VLEN), 0, "filter: a scan agrees");
	{
		long live = 0;
		size_t nt;
		struct table_info *t = tables(db, &nt);
		unsigned long long entries = 0;

		for (long i = 0; i < n; i++)
			live += want[i] != 0;
		for (size_t i = 0; i < nt; i++)
			entries += t[i].entries;
		free(t);
		is_int(entries, live, "filter: the tables hold exactly the %ld kept entries", live);
	}

	ok(wait_idle(db), "filter: background work settles");
	ok(fs.starts > 0, "filter: start was called (%d times)", fs.starts);
	is_int(fs.finishes, fs.starts, "filter: finish is called once for every start");
	is_int(fs.max_open, 1, "filter: sessions never overlap when compactions are not cut");
	is_int(fs.bad_state, 0, "filter: filter and finish get the state start returned");
	is_int(fs.out_of_order, 0, "filter: within a session keys arrive in increasing order");
	is_int(fs.not_newest, 0,
	       "filter: it only sees the newest version of a key the oldest reader reads");
	is_int(errors, 0, "filter: every write succeeded");
	reopen_scan(db, dir, &o, 'f', n, want, VLEN, "filter");
	fs.want = NULL;
out:
	free(want);
	free(at_s);
	free(dir);
}


/* Small tables and up to 3 ranges: a compaction of a few thousand keys is cut. */
static void sub_options(struct kv_options *o)
{
	kv_options_init(o);
	o->compression_level = 0;
	o->write_buffer_size = 256u << 10;
	o->target_file_size = 16u << 10;
	o->max_bytes_level_base = 256u << 10;
	o->max_subcompactions = 3;
}

/*
 * Compactions cut into key ranges merged at the same time (subcompactions):
 * versions, deletion markers, range tombstones across the cuts and the
 * filter all come out as from one merge; levels stay disjoint; each range
 * has its own filter session, in key order.
 */
static void test_subcompactions(void)
{
	enum { VLEN = 200 };
	struct kv_compaction_filter cf = { f_start, f_filter, f_finish, NULL };
	struct kv_options o;
	struct kv_stats st;
	struct kv_db *db;
	char *dir = dbpath("subcompactions"), why[300] = "";
	long n = scaled(6000, 2000);
	long *want = xcalloc((size_t)n, sizeof(long));
	int r, errors = 0, l0 = 0, starts0, finishes0;

	sub_options(&o);
	o.compaction_filter = &cf;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "subcompactions: open");
	if (r < 0)
		goto out;
	pthread_mutex_lock(&fs.mu);
	starts0 = fs.starts;
	finishes0 = fs.finishes;
	fs.max_open = 0;
	fs.out_of_order = fs.bad_state = fs.not_newest = 0;
	fs.want = want;
	fs.vlen = VLEN;
	pthread_mutex_unlock(&fs.mu);

	/* version 2 of every key, compacted down */
	for (long i = 0; i < n; i++)
		want[i] = 2;
	errors += write_keys(db, 's', 0, n, 1, want, VLEN);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "subcompactions: compact %ld keys", n);

	/*
	 * Newer versions, point deletes, a wide range tombstone, odd versions
	 * the filter drops.  Here the filter may see older versions: a
	 * compaction of deeper levels does not have the newer ones above it
	 * (test_filter keeps everything in one compaction to check that).
	 */
	pthread_mutex_lock(&fs.mu);
	fs.want = NULL;
	pthread_mutex_unlock(&fs.mu);
	for (long i = 0; i < n; i += 3)
		want[i] = 4;
	errors += write_keys(db, 's', 0, n, 3, want, VLEN);
	for (long i = 0; i < n; i += 5)
		want[i] = 0;
	errors += write_keys(db, 's', 0, n, 5, want, VLEN);
	errors += delete_range(db, 's', n / 4, n / 2) != 0;
	for (long i = n / 4; i < n / 2; i++)
		want[i] = 0;
	for (long i = 1; i < n; i += 7)
		want[i] = i % 2 ? 3 : 6;
	errors += write_keys(db, 's', 1, n, 7, want, VLEN);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "subcompactions: compact again");
	ok(wait_idle(db), "subcompactions: background work settles");
	kv_get_stats(db, &st);
	ok(st.subcompactions >= 2, "subcompactions: compactions were cut (%llu ranges merged "
	   "in %llu compactions)", (unsigned long long)st.subcompactions,
	   (unsigned long long)st.compactions);
	filter_expect(want, n);
	is_int(bad_gets(db, NULL, 's', n, want, VLEN), 0,
	       "subcompactions: every key reads its newest version, or nothing");
	is_int(bad_scan(db, NULL, 's', n, want, VLEN), 0, "subcompactions: a scan agrees");
	is_int(level_violations(db, &l0, why, sizeof(why)), 0,
	       "subcompactions: levels >= 1 are sorted and disjoint");
	if (why[0])
		diag("%s", why);
	pthread_mutex_lock(&fs.mu);
	diag("%d filter sessions, at most %d at once", fs.starts - starts0, fs.max_open);
	ok(fs.max_open <= o.max_subcompactions && fs.starts - starts0 == fs.finishes - finishes0,
	   "subcompactions: filter sessions: at most %d at once, each finished",
	   o.max_subcompactions);
	is_int(fs.bad_state + fs.out_of_order, 0,
	       "subcompactions: each session has its own state, and its keys in order");
	fs.want = NULL;
	pthread_mutex_unlock(&fs.mu);
	is_int(errors, 0, "subcompactions: every write succeeded");
	reopen_scan(db, dir, &o, 's', n, want, VLEN, "subcompactions");
out:
	free(want);
	free(dir);
}


/* The log lines of failed compactions, and how many name the table that failed. */
static struct {
	pthread_mutex_t mu;
	int failed, named;
	char first[300];
} sublog = { PTHREAD_MUTEX_INITIALIZER, 0, 0, "" };

static void sublog_line(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg;
	(void)level;
	if (!strstr(msg, "compaction failed"))
		return;
	pthread_mutex_lock(&sublog.mu);
	if (!sublog.failed++)
		snprintf(sublog.first, sizeof(sublog.first), "%s", msg);
	sublog.named += strstr(msg, ".sst") && strstr(msg, "(injected)");
	pthread_mutex_unlock(&sublog.mu);
}

/*
 * A compaction cut into ranges, one table append failing in whichever
 * range reaches it (each round a later one): the compaction fails, its log
 * line names the table (a range thread's message reaches it), the retry
 * succeeds, nothing is lost, and no output of the failed attempt is left.
 */
static void test_subcompaction_fault(void)
{
	enum { VLEN = 200, ROUNDS = 6 };
	struct kv_env *fe = env_fault_new(env_posix());
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("subfault"), why[300] = "";
	long n = scaled(6000, 2000);
	long *want = xcalloc((size_t)n, sizeof(long));
	int r, errors = 0, l0 = 0, fired = 0, failed = 0, retried = 0;

	sub_options(&o);
	o.env = fe;
	o.log = sublog_line;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "subcompaction fault: open");
	if (r < 0)
		goto out;
	for (long i = 0; i < n; i++)
		want[i] = 2;
	errors += write_keys(db, 'u', 0, n, 1, want, VLEN);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "subcompaction fault: compact %ld keys", n);
	for (int t = 0; t < ROUNDS; t++) {
		for (long i = t % 2; i < n; i += 2)
			want[i] = 10 + t;
		errors += write_keys(db, 'u', t % 2, n, 2, want, VLEN);
		errors += kv_flush(db) != 0;
		ok(wait_idle(db), "subcompaction fault: round %d settles", t);
		env_fault_inject(fe, ENV_OP_APPEND, 2 + 9 * t, 1, -EIO, ".sst");
		r = kv_compact_range(db, NULL, 0, NULL, 0);
		if (env_fault_injected(fe)) {
			fired++;
			failed += r < 0;
		}
		env_fault_clear(fe);
		for (int k = 0; k < 100 && r < 0; k++) {   /* past the retry's backoff */
			usleep(20000);
			r = kv_compact_range(db, NULL, 0, NULL, 0);
		}
		retried += r == 0;
	}
	ok(fired == ROUNDS && failed == fired && retried == ROUNDS,
	   "subcompaction fault: in each of %d rounds the injected failure failed the compaction "
	   "(%d of %d), and a retry succeeded (%d)", ROUNDS, failed, fired, retried);
	pthread_mutex_lock(&sublog.mu);
	ok(sublog.failed > 0 && sublog.named == sublog.failed,
	   "subcompaction fault: each of the %d failures was logged naming its table (%d): %s",
	   sublog.failed, sublog.named, sublog.first);
	pthread_mutex_unlock(&sublog.mu);
	is_int(bad_gets(db, NULL, 'u', n, want, VLEN), 0, "subcompaction fault: every key reads right");
	is_int(level_violations(db, &l0, why, sizeof(why)), 0,
	       "subcompaction fault: levels >= 1 are sorted and disjoint");
	ok(wait_idle(db) && directory_is_clean(db, dir),
	   "subcompaction fault: no output of a failed attempt is left");
	is_int(errors, 0, "subcompaction fault: every write succeeded");
	kv_close(db);
out:
	env_fault_free(fe);
	free(want);
	free(dir);
}

/*
 * kv_property("sstables") gives each file's raw (uncompressed) key and
 * value bytes, from the table's properties: internal keys (user key and an
 * 8-byte trailer) and values as written, in every tree.
 */
static void test_raw_bytes_property(void)
{
	enum { N = 1000, VLEN = 300 };
	struct kv_tree_options to;
	struct kv_options o;
	struct kv_tree *t = NULL;
	struct kv_db *db;
	char *dir = dbpath("raw"), *p, *line, *save = NULL, k[32], v[VLEN];
	unsigned long long raw, sum_default = 0, sum_tree = 0, bytes, klen = 0;
	int r, lines = 0, unparsed = 0;

	kv_options_init(&o);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "raw bytes: open");
	if (r < 0)
		goto out;
	kv_tree_options_init(&to);
	r = kv_tree_open(db, "second", &to, &t);
	is_int(r, 0, "raw bytes: open a second tree");
	memset(v, 'v', sizeof(v));   /* compresses well */
	for (int i = 0; i < N && r == 0; i++) {
		struct kv_batch *b = kv_batch_new();
		int kl = snprintf(k, sizeof(k), "key%06d", i);

		klen += (unsigned long long)kl;
		kv_batch_put(b, k, (size_t)kl, v, sizeof(v));
		kv_batch_put_tree(b, t, k, (size_t)kl, v, 10);
		r = kv_write(db, b, 0);
		kv_batch_free(b);
	}
	is_int(r, 0, "raw bytes: write %d keys to each tree", N);
	is_int(kv_flush(db), 0, "raw bytes: flush");
	p = kv_property(db, "sstables");
	for (line = p ? strtok_r(p, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		const char *rp = strstr(line, ", raw ");

		lines++;
		if (!rp || sscanf(rp, ", raw %llu bytes", &raw) != 1 ||
		    sscanf(strstr(line, ".sst ") ? strstr(line, ".sst ") : "", ".sst %llu bytes",
			   &bytes) != 1) {
			unparsed++;
			continue;
		}
		if (!strncmp(line, "tree second ", 12))
			sum_tree += raw;
		else
			sum_default += raw;
		diag("%s", line);
	}
	free(p);
	ok(lines >= 2 && unparsed == 0, "every sstables line ends with its raw bytes (%d lines)",
	   lines);
	is_int((long long)sum_default, (long long)(klen + 8ull * N + (unsigned long long)N * VLEN),
	       "the default tree's raw bytes: keys, their trailers and the values");
	is_int((long long)sum_tree, (long long)(klen + 8ull * N + 10ull * N),
	       "the second tree's raw bytes, counted apart");
	is_int(kv_close(db), 0, "raw bytes: close");
out:
	free(dir);
}

/*
 * Level-0 tables whose key ranges are disjoint (a load in key order) move
 * down to level 1 as they are, not rewritten; overlapping ones are merged.
 */
static void test_trivial_moves(void)
{
	struct kv_options o;
	struct kv_stats st0, st1;
	struct kv_db *db;
	struct table_info *t;
	char *dir = dbpath("trivial"), k[32], v[200];
	unsigned long long l0[4];
	size_t n;
	int r, moved = 0, nl0 = 0, nl1 = 0;

	kv_options_init(&o);
	o.l0_compaction_trigger = 4;
	/* tables of at least half the target size move; smaller ones are merged (below) */
	o.target_file_size = 4096;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "trivial moves: open");
	if (r < 0)
		goto out;
	memset(v, 'v', sizeof(v));
	/* four flushes of disjoint key ranges, in key order */
	for (int f = 0; f < 4; f++) {
		for (int i = 0; i < 500; i++) {
			snprintf(k, sizeof(k), "key%06d", f * 500 + i);
			kv_put(db, k, strlen(k), v, sizeof(v), 0);
		}
		if (f == 3)
			kv_get_stats(db, &st0);
		kv_flush(db);
		if (f == 2) {
			/* the first three, still in level 0 (the fourth starts the compaction) */
			t = tables(db, &n);
			for (size_t i = 0; i < n; i++)
				if (t[i].level == 0 && nl0 < 4)
					l0[nl0++] = t[i].number;
			free(t);
		}
	}
	ok(wait_idle(db), "trivial moves: compaction settles");
	t = tables(db, &n);
	for (size_t i = 0; i < n; i++) {
		nl1 += t[i].level == 1;
		for (int j = 0; j < nl0; j++)
			moved += t[i].level == 1 && t[i].number == l0[j];
	}
	free(t);
	kv_get_stats(db, &st1);
	is_int(nl1, 4, "four disjoint level-0 tables end up as four level-1 tables");
	ok(nl0 == 3 && moved == 3, "the same files (%d of the first %d, numbers kept): moved, not "
	   "rewritten", moved, nl0);
	is_int((long long)(st1.bytes_compacted_written - st0.bytes_compacted_written), 0,
	       "the compaction wrote no bytes");
	for (int i = 0; i < 2000; i += 111) {
		char *got = NULL;
		size_t gl;
		snprintf(k, sizeof(k), "key%06d", i);
		r = kv_get(db, NULL, k, strlen(k), &got, &gl);
		free(got);
		if (r != 0 || gl != sizeof(v))
			break;
	}
	is_int(r, 0, "every key reads back after the move");

	/* now four flushes that overlap each other: merged, not moved */
	for (int f = 0; f < 4; f++) {
		for (int i = 0; i < 500; i += 1 + f) {
			snprintf(k, sizeof(k), "key%06d", 5000 + i);
			kv_put(db, k, strlen(k), v, sizeof(v), 0);
		}
		kv_flush(db);
	}
	ok(wait_idle(db), "trivial moves: the second compaction settles");
	kv_get_stats(db, &st0);
	ok(st0.bytes_compacted_written > st1.bytes_compacted_written,
	   "overlapping level-0 tables are merged: the compaction wrote bytes");
	is_int(kv_close(db), 0, "trivial moves: close");
out:
	free(dir);
}

/*
 * A load in key order with small memtables: each flush writes a small
 * level-0 table whose range overlaps nothing below.  Moving those down as
 * they are would leave one small table per flush; they are merged (with the
 * last small level-1 table) into tables of about the target size.
 */
static void test_small_tables_merge(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct table_info *t;
	char *dir = dbpath("smallmerge"), k[32], v[1000];
	uint64_t rs = 42;
	size_t n, deep = 0;
	int r, small = 0, N = 3000;
	unsigned long long bytes = 0;

	kv_options_init(&o);
	o.write_buffer_size = 32u << 10;
	o.target_file_size = 512u << 10;
	o.compression_level = 0;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "small tables: open");
	if (r < 0)
		goto out;
	for (int i = 0; i < N && r == 0; i++) {
		for (size_t j = 0; j < sizeof(v); j++)
			v[j] = (char)('a' + (rand_next(&rs) % 26));
		snprintf(k, sizeof(k), "key%06d", i);
		r = kv_put(db, k, strlen(k), v, sizeof(v), 0);
	}
	is_int(r, 0, "small tables: %d puts in key order", N);
	is_int(kv_flush(db), 0, "small tables: flush");
	ok(wait_idle(db), "small tables: compaction settles");
	t = tables(db, &n);
	for (size_t i = 0; i < n; i++) {
		if (t[i].level == 0)
			continue;   /* the last flushes, not yet compacted */
		deep++;
		bytes += t[i].bytes;
		small += t[i].bytes < o.target_file_size / 4;
	}
	free(t);
	/*
	 * ~3 MB in 32 KiB memtables: ~90 flushes.  A level-1 table at least half
	 * the target size takes no more merging, so the tables are between half
	 * the target (512 KiB) and all of it: at most about 12.
	 */
	ok(deep <= 2 * bytes / o.target_file_size + 2,
	   "a load in key order leaves tables of about the target size below level 0 (%zu "
	   "tables, %llu bytes)", deep, bytes);
	ok(small <= 1, "at most one small table below level 0 (%d)", small);
	for (int i = 0; i < N; i += 97) {
		char *got = NULL;
		size_t gl;
		snprintf(k, sizeof(k), "key%06d", i);
		r = kv_get(db, NULL, k, strlen(k), &got, &gl);
		free(got);
		if (r != 0 || gl != sizeof(v))
			break;
	}
	is_int(r, 0, "small tables: every key reads back");
	is_int(kv_close(db), 0, "small tables: close");
out:
	free(dir);
}

static uint64_t compacted_written(struct kv_db *db)
{
	struct kv_stats st;

	kv_get_stats(db, &st);
	return st.bytes_compacted_written;
}

/*
 * kv_compact_range merges each level into the next down to the deepest
 * one, then rewrites the deepest level's tables it did not write itself:
 * so a new version of every key over a compacted level 1 is written once,
 * not merged into level 1 and then rewritten in place a second time.  A
 * second compaction, with everything already at the bottom, does rewrite
 * it in place (to drop what released snapshots held).
 */
static void test_compact_range_writes_once(void)
{
	enum { VLEN = 200 };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("once");
	long n = scaled(4000, 500), *want = xcalloc((size_t)n, sizeof(long));
	uint64_t before, written, bottom;
	int r, errors = 0;

	kv_options_init(&o);
	o.write_buffer_size = 256 * 1024;
	o.target_file_size = 256 * 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "once: open");
	if (r < 0)
		goto out;
	for (long i = 0; i < n; i++)
		want[i] = 1;
	errors += write_keys(db, 'w', 0, n, 1, want, VLEN);
	kv_compact_range(db, NULL, 0, NULL, 0);
	for (long i = 0; i < n; i++)
		want[i] = 2;
	errors += write_keys(db, 'w', 0, n, 1, want, VLEN);
	kv_flush(db);
	before = compacted_written(db);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "once: compact a new version of every key over level 1");
	written = compacted_written(db) - before;
	bottom = disk_bytes(db);
	ok(written <= bottom * 13 / 10, "once: the bottom level is written once (%llu bytes "
	   "written for a bottom level of %llu)", (unsigned long long)written,
	   (unsigned long long)bottom);
	before = compacted_written(db);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "once: compact again");
	written = compacted_written(db) - before;
	ok(written * 10 >= bottom * 9, "once: with all of it at the bottom already, it is "
	   "rewritten in place (%llu bytes of %llu)", (unsigned long long)written,
	   (unsigned long long)bottom);
	is_int(errors, 0, "once: every write succeeded");
	is_int(kv_close(db), 0, "once: close");
out:
	free(want);
	free(dir);
}

/*
 * The compression of a table depends on where it is written: the tree's
 * own zstd level where its data comes to rest (the deepest level holding
 * data, or deeper), zstd's fast level above, nothing if the tree has none.
 */
static void test_output_compression(void)
{
	struct kv_tree t;
	struct version v;

	memset(&t, 0, sizeof(t));
	memset(&v, 0, sizeof(v));
	t.compression_level = 3;
	is_int(db_output_compression(&t, &v, 0), DB_UPPER_ZSTD_LEVEL,
	       "a flush (level 0) is compressed at the fast level");
	is_int(db_output_compression(&t, &v, 1), 3,
	       "an empty tree: level 1 is where the data rests, at the tree's level");
	v.nfiles[0] = 4;
	is_int(db_output_compression(&t, &v, 1), 3, "level-0 tables alone: level 1 still is");
	v.nfiles[3] = 1;
	is_int(db_output_compression(&t, &v, 1), DB_UPPER_ZSTD_LEVEL,
	       "data in level 3: level 1 gets the fast level");
	is_int(db_output_compression(&t, &v, 2), DB_UPPER_ZSTD_LEVEL, "and so does level 2");
	is_int(db_output_compression(&t, &v, 3), 3, "level 3 gets the tree's level");
	is_int(db_output_compression(&t, &v, 4), 3, "and so would a deeper one");
	t.compression_level = 0;
	is_int(db_output_compression(&t, &v, 0) | db_output_compression(&t, &v, 1) |
	       db_output_compression(&t, &v, 3), 0, "a tree without compression: none anywhere");
}

int main(void)
{
	uint64_t t0 = now_micros();

	plan(181);
	make_tmpdir("kv_compaction");
	diag("directory %s, scale %.3g", tmpdir, test_scale());
	test_overwrites();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_deletes_at_bottom();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_automatic();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_tombstone_across_tables();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_filter();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_subcompactions();
	test_subcompaction_fault();
	diag("%.1f s", (double)(now_micros() - t0) / 1e6);
	test_raw_bytes_property();
	test_trivial_moves();
	test_small_tables_merge();
	test_output_compression();
	test_compact_range_writes_once();
	rm_rf(tmpdir);
	return exit_status();
}
