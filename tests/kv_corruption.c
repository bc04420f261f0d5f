/*
 * kv_corruption.c -- damaged files are reported, never believed.
 *
 * Every block of an SSTable, every record of the log and of the manifest
 * carries a checksum, so a flipped byte anywhere must come back as -EUCLEAN
 * (from kv_open, kv_get, an iterator or kv_verify) with a message naming the
 * file, and never as wrong data or a crash.  A log that merely ends in the
 * middle of a record (a write torn by a crash) is not corruption: the records
 * before it are recovered.
 *
 * The last part flips random bytes in random files of a small database,
 * hundreds of times; each time the outcome must be the right data or
 * -EUCLEAN.  Run it under AddressSanitizer too (--enable-sanitizers).
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

static int has_suffix(const char *s, const char *suffix)
{
	size_t l = strlen(s), sl = strlen(suffix);

	return l >= sl && strcmp(s + l - sl, suffix) == 0;
}

/*
 * The name (malloc'd) of the largest file in dir whose name ends in suffix
 * or, with suffix starting "MANIFEST", begins with it; NULL if none.
 */
static char *find_file(const char *dir, const char *suffix)
{
	char **names, *best = NULL;
	size_t n, i;
	uint64_t best_size = 0;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0)
		return NULL;
	for (i = 0; i < n; i++) {
		int match = strncmp(suffix, "MANIFEST", 8) == 0 ? strncmp(names[i], "MANIFEST-",
									  9) == 0 :
			    has_suffix(names[i], suffix);
		char *path;
		uint64_t size = 0;

		if (!match)
			continue;
		path = xasprintf("%s/%s", dir, names[i]);
		env_file_size(env_posix(), path, &size);
		free(path);
		if (!best || size > best_size) {
			free(best);
			best = xstrdup(names[i]);
			best_size = size;
		}
	}
	env_free_list(names, n);
	return best;
}

static uint64_t size_of(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	uint64_t size = 0;

	env_file_size(env_posix(), path, &size);
	free(path);
	return size;
}

/* XOR the byte at off of dir/name with x (non-zero). */
static int flip_byte(const char *dir, const char *name, uint64_t off, unsigned char x)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "r+b");
	int c, r = -1;

	free(path);
	if (!f)
		return -1;
	if (fseeko(f, (off_t)off, SEEK_SET) == 0 && (c = fgetc(f)) != EOF &&
	    fseeko(f, (off_t)off, SEEK_SET) == 0 && fputc(c ^ x, f) != EOF)
		r = 0;
	if (fclose(f) != 0)
		r = -1;
	return r;
}

static int truncate_file(const char *dir, const char *name, uint64_t size)
{
	char *path = xasprintf("%s/%s", dir, name);
	int r = env_truncate(env_posix(), path, size);

	free(path);
	return r;
}

/* Copy every file of from into a new directory to. */
static int copy_dir(const char *from, const char *to)
{
	char **names;
	size_t n, i;
	int r;

	env_mkdir(env_posix(), to);
	r = env_list_dir(env_posix(), from, &names, &n);
	if (r < 0)
		return r;
	for (i = 0; i < n && r == 0; i++) {
		char *a = xasprintf("%s/%s", from, names[i]), *b = xasprintf("%s/%s", to, names[i]);
		char *data;
		size_t len;
		struct env_file *f;

		r = env_read_file(env_posix(), a, &data, &len);
		if (r == 0) {
			r = env_open_append(env_posix(), b, &f);
			if (r == 0) {
				r = env_append(f, data, len);
				env_close(f);
			}
			free(data);
		}
		free(a);
		free(b);
	}
	env_free_list(names, n);
	return r;
}

/* ------------------------------------------------------------ the data */

static int key_of(char *b, int i)
{
	return snprintf(b, 32, "key%06d", i);
}

/* 100 bytes that differ from key to key and do not compress to nothing. */
static size_t value_of(char *b, int i, int version)
{
	uint64_t st = (uint64_t)i * 1000003u + (uint64_t)version + 1;
	size_t n = (size_t)snprintf(b, 32, "v%d.%d:", i, version);

	while (n < 100) {
		uint64_t x = rand_next(&st);
		b[n++] = (char)('A' + x % 50);
	}
	return n;
}

static void small_options(struct kv_options *o)
{
	kv_options_init(o);
	o->write_buffer_size = 64 * 1024;
	o->target_file_size = 64 * 1024;
	o->max_bytes_level_base = 256 * 1024;
}

static int put_keys(struct kv_db *db, int from, int to, int version)
{
	char k[32], v[128];
	int r = 0;

	for (int i = from; i < to && r == 0; i++)
		r = kv_put(db, k, (size_t)key_of(k, i), v, value_of(v, i, version), 0);
	return r;
}

/* Counts from reading keys [0, n) that hold version version. */
struct tally {
	int right, eclean, wrong, other;
	char first_wrong[200];
};

static void read_keys(struct kv_db *db, int n, int version, struct tally *t)
{
	char k[32], v[128];

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < n; i++) {
		char *got = NULL;
		size_t gl = 0, kl = (size_t)key_of(k, i), vl = value_of(v, i, version);
		int r = kv_get(db, NULL, k, kl, &got, &gl);

		if (r == 0 && gl == vl && memcmp(got, v, vl) == 0) {
			t->right++;
		} else if (r == -EUCLEAN) {
			t->eclean++;
		} else if (r == 0 || r == -ENOENT) {
			if (!t->wrong++)
				snprintf(t->first_wrong, sizeof(t->first_wrong), "%s: %s", k,
					 r == 0 ? "a wrong value" : "-ENOENT for a written key");
		} else {
			if (!t->other++ && !t->wrong)
				snprintf(t->first_wrong, sizeof(t->first_wrong), "%s: error %d", k,
					 r);
		}
		free(got);
	}
}

struct reports {
	int n;
	char file[256];
};

static void collect_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	struct reports *rp = arg;

	if (!rp->n++)
		snprintf(rp->file, sizeof(rp->file), "%s", file ? file : "");
	diag("kv_verify: %s at %llu: %s", file ? file : "(null)", (unsigned long long)off, msg);
}

/* ---------------------------------------------------------- (a) SSTable */

static void test_sst_flip(int compression)
{
	struct kv_options o;
	struct kv_db *db;
	char *dir = xasprintf("%s/sst-%d", tmpdir, compression);
	char *sst;
	int n = 3000, r;
	uint64_t size;
	struct tally t;

	small_options(&o);
	o.write_buffer_size = 64u << 20;   /* one table from the flush below */
	o.compression_level = compression;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "sst (compression %d): create", compression))
		goto out;
	put_keys(db, 0, n, 0);
	is_int(kv_flush(db), 0, "sst: flush %d keys", n);
	kv_close(db);
	sst = find_file(dir, ".sst");
	ok(sst != NULL, "sst: the flush made a table");
	if (!sst)
		goto out;
	size = size_of(dir, sst);
	diag("flipping a byte at offset %llu of %s (%llu bytes)", (unsigned long long)(size / 4),
	     sst,
	     (unsigned long long)size);
	flip_byte(dir, sst, size / 4, 0x40);

	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "sst: a database with a damaged data block still opens")) {
		diag("%s", kv_strerror(r));
		free(sst);
		goto out;
	}
	read_keys(db, n, 0, &t);
	is_int(t.wrong, 0, "sst: kv_get never returns a wrong value or a false -ENOENT%s%s",
	       t.wrong ? ": " : "", t.first_wrong);
	is_int(t.other, 0, "sst: every failing kv_get fails with -EUCLEAN");
	ok(t.eclean > 0, "sst: the keys in the damaged block give -EUCLEAN (%d of %d)", t.eclean,
	   n);
	ok(t.right > 0, "sst: keys in other blocks read right (%d)", t.right);
	{
		char k[32];
		char *got = NULL;
		size_t gl, i;
		int bad = -1;

		/* the message names the file */
		for (i = 0; i < (size_t)n && bad < 0; i++) {
			r = kv_get(db, NULL, k, (size_t)key_of(k, (int)i), &got, &gl);
			free(got);
			got = NULL;
			if (r == -EUCLEAN)
				bad = (int)i;
		}
		if (bad >= 0)
			ok(strstr(kv_strerror(r), sst) != NULL,
			   "sst: the -EUCLEAN message names %s: %s", sst,
			   kv_strerror(r));
	}
	{
		struct tally t2;
		read_keys(db, n, 0, &t2);
		ok(t2.eclean == t.eclean && t2.wrong == 0,
		   "sst: reading again gives the same answers (no bad block cached)");
	}
	{
		struct kv_read_options ro = { 0 };
		struct kv_iter *it = kv_iter_new(db, &ro);
		int i = 0, wrong = 0;
		char k[32], v[128];

		for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it), i++) {
			size_t kl, vl, wkl = (size_t)key_of(k, i), wvl = value_of(v, i, 0);
			const void *kk = kv_iter_key(it, &kl), *vv = kv_iter_value(it, &vl);
			if (kl != wkl || memcmp(kk, k, kl) || vl != wvl || memcmp(vv, v, vl))
				wrong++;
		}
		is_int(wrong, 0, "sst: the iterator yields only right keys and values, in order");
		is_int(kv_iter_status(it), -EUCLEAN,
		       "sst: the iterator stops with -EUCLEAN at the damaged block");
		ok(i < n, "sst: the iterator stops before the end (%d of %d keys)", i, n);
		kv_iter_free(it);

		it = kv_iter_new(db, &ro);
		for (kv_iter_seek_last(it), i = n - 1; kv_iter_valid(it); kv_iter_prev(it), i--) {
			size_t kl, vl, wkl = (size_t)key_of(k, i), wvl = value_of(v, i, 0);
			const void *kk = kv_iter_key(it, &kl), *vv = kv_iter_value(it, &vl);
			if (kl != wkl || memcmp(kk, k, kl) || vl != wvl || memcmp(vv, v, vl))
				wrong++;
		}
		is_int(wrong, 0, "sst: backward iteration yields only right keys and values");
		is_int(kv_iter_status(it), -EUCLEAN,
		       "sst: backward iteration stops with -EUCLEAN too");
		kv_iter_free(it);
	}
	{
		struct reports rp = { 0 };
		r = kv_verify(db, collect_report, &rp);
		is_int(r, -EUCLEAN, "sst: kv_verify returns -EUCLEAN");
		ok(rp.n > 0 && strstr(rp.file, sst) != NULL,
		   "sst: kv_verify reports the damaged file %s (%s)",
		   sst, rp.file);
	}
	kv_close(db);
	free(sst);
out:
	free(dir);
}

/* ------------------------------------------------------------- (b) log */

static void test_log(void)
{
	struct kv_options o;
	struct kv_db *db;
	char *dir = xasprintf("%s/log", tmpdir), *copy = xasprintf("%s/log-torn", tmpdir);
	char *log;
	int n = 2000, r;
	uint64_t size;
	struct tally t;

	kv_options_init(&o);   /* a 64 MiB memtable: nothing is flushed */
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "log: create"))
		goto out;
	put_keys(db, 0, n, 0);
	is_int(kv_close(db), 0, "log: close without flushing");
	log = find_file(dir, ".log");
	ok(log != NULL, "log: the database directory holds a .log");
	if (!log)
		goto out;
	size = size_of(dir, log);
	ok(size >= (uint64_t)n * 100, "log: the .log holds the unflushed writes (%llu bytes)",
	   (unsigned long long)size);
	{
		char *sst = find_file(dir, ".sst");
		ok(sst == NULL, "log: no table was written (%s)", sst ? sst : "none");
		free(sst);
	}
	copy_dir(dir, copy);

	/* a torn tail: the last record cut in its middle */
	is_int(truncate_file(copy, log, size - 30), 0, "log: cut 30 bytes off the end of the log");
	r = kv_open(copy, &o, &db);
	if (is_int(r, 0, "log: a log ending in a torn record opens")) {
		read_keys(db, n - 1, 0, &t);
		is_int(t.right, n - 1, "log: every record before the torn one is recovered");
		{
			char k[32], *got = NULL;
			size_t gl;
			r = kv_get(db, NULL, k, (size_t)key_of(k, n - 1), &got, &gl);
			is_int(r, -ENOENT, "log: the torn last record is not applied");
			free(got);
		}
		is_int(kv_put(db, "new", 3, "after torn tail", 15, KV_SYNC), 0,
		       "log: writes after recovery work");
		kv_close(db);
		r = kv_open(copy, &o, &db);
		if (is_int(r, 0, "log: reopen after writing past a torn tail")) {
			char *got = NULL;
			size_t gl = 0;
			r = kv_get(db, NULL, "new", 3, &got, &gl);
			ok(r == 0 && gl == 15,
			   "log: the write made after recovering a torn tail is kept");
			free(got);
			read_keys(db, n - 1, 0, &t);
			is_int(t.right, n - 1, "log: and the recovered records too");
			kv_close(db);
		}
	} else {
		diag("%s", kv_strerror(r));
	}

	/* a flipped byte in the middle */
	flip_byte(dir, log, size / 2, 0x01);
	db = NULL;
	r = kv_open(dir, &o, &db);
	is_int(r, -EUCLEAN, "log: a flipped byte in the middle of the log makes kv_open fail with "
	       "-EUCLEAN");
	ok(db == NULL, "log: and no handle is returned");
	ok(r == -EUCLEAN && strstr(kv_strerror(r), log) != NULL, "log: the message names %s: %s",
	   log,
	   kv_strerror(r));
	if (db)
		kv_close(db);
	free(log);
out:
	free(copy);
	free(dir);
}

/* -------------------------------------------------------- (c) manifest */

static void test_manifest(void)
{
	struct kv_options o;
	struct kv_db *db;
	char *dir = xasprintf("%s/manifest", tmpdir);
	char *man, *cur;
	int r;
	uint64_t size;

	small_options(&o);
	o.write_buffer_size = 64u << 20;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "manifest: create"))
		goto out;
	for (int f = 0; f < 6; f++) {
		put_keys(db, f * 200, f * 200 + 200, 0);
		kv_flush(db);
	}
	kv_close(db);
	man = find_file(dir, "MANIFEST");
	ok(man != NULL, "manifest: the directory holds a MANIFEST");
	if (!man)
		goto out;
	size = size_of(dir, man);
	flip_byte(dir, man, size / 3, 0x10);
	db = NULL;
	r = kv_open(dir, &o, &db);
	is_int(r, -EUCLEAN, "manifest: a flipped byte in the MANIFEST makes kv_open fail with "
	       "-EUCLEAN");
	ok(r == -EUCLEAN && strstr(kv_strerror(r), "MANIFEST") != NULL,
	   "manifest: the message names it: %s",
	   kv_strerror(r));
	if (db)
		kv_close(db);
	flip_byte(dir, man, size / 3, 0x10);   /* undo */
	r = kv_open(dir, &o, &db);
	if (is_int(r, 0, "manifest: with the byte restored the database opens")) {
		struct tally t;
		read_keys(db, 1200, 0, &t);
		is_int(t.right, 1200, "manifest: and every key is there");
		kv_close(db);
	}

	/* (d) CURRENT naming a manifest that does not exist; opening wrote a new manifest */
	free(man);
	man = find_file(dir, "MANIFEST");
	cur = xasprintf("%s/CURRENT", dir);
	env_write_file(env_posix(), cur, "MANIFEST-999999\n", 16, NULL);
	db = NULL;
	r = kv_open(dir, &o, &db);
	ok(r == -EUCLEAN || r == -ENOENT,
	   "current: CURRENT naming a missing manifest gives -EUCLEAN or -ENOENT (%d)",
	   r);
	ok(r < 0 && strstr(kv_strerror(r), "MANIFEST-999999") != NULL,
	   "current: the message names the missing manifest: %s",
	   kv_strerror(r));
	if (db)
		kv_close(db);
	env_write_file(env_posix(), cur, "garbage", 7, NULL);
	db = NULL;
	r = kv_open(dir, &o, &db);
	is_int(r, -EUCLEAN, "current: a CURRENT that is not a manifest name gives -EUCLEAN");
	if (db)
		kv_close(db);
	{
		char *line = xasprintf("%s\n", man);
		env_write_file(env_posix(), cur, line, strlen(line), NULL);
		free(line);
	}
	r = kv_open(dir, &o, &db);
	if (is_int(r, 0, "current: with CURRENT repaired the database opens"))
		kv_close(db);
	free(cur);
	free(man);
out:
	free(dir);
}

/* ------------------------------------------------------------- (e) fuzz */

#define FUZZ_KEYS 600
#define FUZZ_DELETED_FROM 100   /* keys [100, 160) are range-deleted */
#define FUZZ_DELETED_TO 160
#define FUZZ_SENTINEL "zz-last"

/* Which version key i holds in the pristine database: 0 = absent. */
static int fuzz_version(int i)
{
	if (i >= FUZZ_DELETED_FROM && i < FUZZ_DELETED_TO)
		return 0;
	if (i >= 500)
		return 3;    /* in the log only */
	if (i % 4 == 0)
		return 2;    /* overwritten, in a later table */
	return 1;
}

static int make_fuzz_db(const char *dir)
{
	struct kv_options o;
	struct kv_db *db;
	char k[32];
	int r;

	small_options(&o);
	o.write_buffer_size = 16 * 1024;
	o.block_size = 1024;
	r = kv_open(dir, &o, &db);
	if (r < 0)
		return r;
	put_keys(db, 0, 500, 1);
	kv_flush(db);
	for (int i = 0; i < 500; i += 4)
		kv_put(db, k, (size_t)key_of(k, i), "x", 1, 0);   /* overwritten below */
	kv_flush(db);
	{
		char v[128];
		for (int i = 0; i < 500; i += 4)
			kv_put(db, k, (size_t)key_of(k, i), v, value_of(v, i, 2), 0);
	}
	{
		char a[32], b[32];
		key_of(a, FUZZ_DELETED_FROM);
		key_of(b, FUZZ_DELETED_TO);
		kv_delete_range(db, a, strlen(a), b, strlen(b), 0);
	}
	kv_flush(db);
	kv_compact_range(db, NULL, 0, "key000300", 9);
	/* the log: keys 500.. written after the last flush, then the sentinel */
	o.write_buffer_size = 64u << 20;
	kv_close(db);
	r = kv_open(dir, &o, &db);
	if (r < 0)
		return r;
	put_keys(db, 500, FUZZ_KEYS, 3);
	kv_put(db, FUZZ_SENTINEL, strlen(FUZZ_SENTINEL), "end", 3, 0);
	return kv_close(db);
}

/*
 * Read everything; return 0 if all is right, 1 if some read gave -EUCLEAN
 * (and nothing was wrong), -1 with why filled if anything was wrong.
 */
static int fuzz_check(struct kv_db *db, char *why, size_t wl, int *sentinel_lost)
{
	char k[32], v[128];
	int saw_eclean = 0, i;
	struct kv_read_options ro = { 0 };
	struct kv_iter *it;
	char *got = NULL;
	size_t gl;
	int r;

	*sentinel_lost = 0;
	for (i = 0; i < FUZZ_KEYS; i++) {
		size_t kl = (size_t)key_of(k, i);
		int ver = fuzz_version(i);
		size_t vl = ver ? value_of(v, i, ver) : 0;

		got = NULL;
		r = kv_get(db, NULL, k, kl, &got, &gl);
		if (r == -EUCLEAN) {
			saw_eclean = 1;
		} else if (ver == 0 ? r != -ENOENT : (r != 0 || gl != vl || memcmp(got, v, vl))) {
			snprintf(why, wl, "kv_get(%s) gave %d%s", k, r,
				 r == 0 ? " with a wrong value" : ver ? " for a live key" : "");
			free(got);
			return -1;
		}
		free(got);
	}
	got = NULL;
	r = kv_get(db, NULL, FUZZ_SENTINEL, strlen(FUZZ_SENTINEL), &got, &gl);
	if (r == -EUCLEAN)
		saw_eclean = 1;
	else if (r == -ENOENT)
		*sentinel_lost = 1;   /* the last log record, dropped as a torn tail */
	else if (r != 0 || gl != 3 || memcmp(got, "end", 3)) {
		snprintf(why, wl, "kv_get(%s) gave %d", FUZZ_SENTINEL, r);
		free(got);
		return -1;
	}
	free(got);

	/* an iterator yields the live keys in order, or stops with -EUCLEAN */
	it = kv_iter_new(db, &ro);
	i = 0;
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
		size_t kl2, vl2, wkl, wvl;
		const void *kk = kv_iter_key(it, &kl2), *vv = kv_iter_value(it, &vl2);

		while (i < FUZZ_KEYS && fuzz_version(i) == 0)
			i++;
		if (i == FUZZ_KEYS) {
			if (kl2 != strlen(FUZZ_SENTINEL) || memcmp(kk, FUZZ_SENTINEL, kl2) ||
			    vl2 != 3 || memcmp(vv, "end", 3)) {
				snprintf(why, wl,
					 "the iterator yielded an unknown key after the last one");
				kv_iter_free(it);
				return -1;
			}
			i++;
			continue;
		}
		if (i > FUZZ_KEYS) {
			snprintf(why, wl, "the iterator yielded a key after the sentinel");
			kv_iter_free(it);
			return -1;
		}
		wkl = (size_t)key_of(k, i);
		wvl = value_of(v, i, fuzz_version(i));
		if (kl2 != wkl || memcmp(kk, k, wkl) || vl2 != wvl || memcmp(vv, v, wvl)) {
			snprintf(why, wl, "the iterator yielded a wrong key or value where %s "
				 "belongs", k);
			kv_iter_free(it);
			return -1;
		}
		i++;
	}
	r = kv_iter_status(it);
	kv_iter_free(it);
	if (r == -EUCLEAN) {
		saw_eclean = 1;
	} else if (r != 0) {
		snprintf(why, wl, "the iterator stopped with %d", r);
		return -1;
	} else {
		while (i < FUZZ_KEYS && fuzz_version(i) == 0)
			i++;
		if (i < FUZZ_KEYS) {
			snprintf(why, wl, "the iterator ended early, without an error, before key "
				 "%d", i);
			return -1;
		}
		if (i == FUZZ_KEYS && !*sentinel_lost) {
			snprintf(why, wl, "the iterator missed the last key");
			return -1;
		}
	}
	return saw_eclean;
}

static void noop_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	(void)arg; (void)file; (void)off; (void)msg;
}

/*
 * The fuzz trials: with each seed (the fixed one, then a quarter as many
 * with the one drawn for this run), one small database damaged in random
 * bytes of random files, picked in proportion to their sizes.
 */
static void test_fuzz(const uint64_t *seeds, int nseeds)
{
	char *pristine = xasprintf("%s/fuzz-pristine", tmpdir);
	int trials = (int)(200 * test_scale() + 0.5), r, s = 0, end = trials;
	/* read right, read -EUCLEAN, open -EUCLEAN, open -ENOENT, last log record lost */
	int outcome[5] = { 0 };
	char **names = NULL;
	size_t nnames = 0;
	uint64_t rs = seeds[0], total = 0;

	r = make_fuzz_db(pristine);
	if (!is_int(r, 0, "fuzz: build a small database")) {
		diag("%s", kv_strerror(r));
		goto out;
	}
	{
		struct kv_options o;
		struct kv_db *db;
		char why[200];
		int lost;

		/* on a copy: opening may rewrite the log into a table */
		char *check = xasprintf("%s/fuzz-undamaged", tmpdir);

		copy_dir(pristine, check);
		kv_options_init(&o);
		o.create_if_missing = 0;
		r = kv_open(check, &o, &db);
		free(check);
		if (!is_int(r, 0, "fuzz: the undamaged database opens"))
			goto out;
		is_int(fuzz_check(db, why, sizeof(why), &lost), 0,
		       "fuzz: the undamaged database reads right");
		is_int(lost, 0, "fuzz: the undamaged database has its last log record");
		kv_close(db);
	}
	env_list_dir(env_posix(), pristine, &names, &nnames);
	{
		size_t j = 0;
		for (size_t i = 0; i < nnames; i++) {
			if (strcmp(names[i], "LOCK") == 0 || size_of(pristine, names[i]) == 0) {
				free(names[i]);
				continue;
			}
			names[j++] = names[i];
		}
		nnames = j;
	}
	ok(nnames >= 4, "fuzz: the database has tables, a log, a manifest and CURRENT (%zu files)",
	   nnames);
	for (size_t i = 0; i < nnames; i++)
		diag("fuzz file %s: %llu bytes", names[i],
		     (unsigned long long)size_of(pristine, names[i]));

	for (size_t i = 0; i < nnames; i++)
		total += size_of(pristine, names[i]);
	for (int t = 0; ; t++) {
		if (t == end) {
			/* the next seed's trials, numbered on */
			if (++s == nseeds)
				break;
			rs = seeds[s];
			end += (trials + 3) / 4;
		}
		char *dir = xasprintf("%s/fuzz-%d", tmpdir, t);
		/*
		 * A file is picked with a chance in proportion to its size, so the
		 * tables, which hold nearly all the bytes, are damaged nearly every
		 * time; the tiny CURRENT and MANIFEST have tests of their own.
		 */
		uint64_t at = rand_next(&rs) % total;
		size_t pick = 0;
		while (at >= size_of(pristine, names[pick]))
			at -= size_of(pristine, names[pick++]);
		const char *name = names[pick];
		uint64_t size = size_of(pristine, name);
		struct tap_part part = part_begin(2);
		int flips = 1 + (int)(rand_next(&rs) % 3);
		char desc[200], why[200];
		size_t dl;
		struct kv_options o;
		struct kv_db *db = NULL;
		int lost = 0;

		copy_dir(pristine, dir);
		dl = (size_t)snprintf(desc, sizeof(desc), "%s", name);
		for (int f = 0; f < flips; f++) {
			uint64_t off = rand_next(&rs) % size;
			unsigned char x = (unsigned char)(1 + rand_next(&rs) % 255);
			flip_byte(dir, name, off, x);
			if (dl < sizeof(desc) - 30)
				dl += (size_t)snprintf(desc + dl, sizeof(desc) - dl, " @%llu^%02x",
						       (unsigned long long)off, x);
		}
		kv_options_init(&o);
		o.create_if_missing = 0;
		r = kv_open(dir, &o, &db);
		if (r == -EUCLEAN) {
			outcome[2]++;
			ok(1, "fuzz %d (%s): kv_open reports -EUCLEAN", t, desc);
			skip(1, "kv_open refused the damaged database");
		} else if (r == -ENOENT && strcmp(name, "CURRENT") == 0) {
			outcome[3]++;
			ok(1, "fuzz %d (%s): a damaged CURRENT names a missing manifest: -ENOENT",
			   t, desc);
			skip(1, "kv_open refused the damaged database");
		} else if (r != 0) {
			ok(0, "fuzz %d (%s): kv_open gives %d, neither success nor -EUCLEAN: %s", t,
			   desc, r,
			   kv_strerror(r));
		} else {
			int c = fuzz_check(db, why, sizeof(why), &lost);
			if (c >= 0 && !lost) {
				outcome[c]++;
			} else if (c >= 0) {
				outcome[4]++;
			}
			if (!ok(c >= 0 && (!lost || has_suffix(name, ".log")),
				"fuzz %d (%s): reads give the right data or -EUCLEAN, and only a "
				"damaged log may lose its last record", t, desc))
				diag("fuzz %d: %s%s", t, why, lost ? " (the last record is lost)" : "");
			if (c == 1)
				is_int(kv_verify(db, noop_report, NULL), -EUCLEAN,
				       "fuzz %d: kv_verify also reports the damage reads met", t);
			else
				skip(1, "reads met no damage");
			kv_close(db);
		}
		part_end(part);
		rm_rf(dir);
		free(dir);
	}
	diag("fuzz outcomes: %d read right, %d reads gave -EUCLEAN, %d opens gave -EUCLEAN, "
	     "%d opens -ENOENT (CURRENT), %d lost the last log record", outcome[0], outcome[1],
	     outcome[2], outcome[3], outcome[4]);
out:
	env_free_list(names, nnames);
	free(pristine);
}

int main(void)
{
	uint64_t seeds[2] = { 0, 0 };
	int nseeds = test_seeds(0xc0ffee11ull, seeds);
	uint64_t t0 = now_micros();

	plan_lazy();
	/* every assertion outside the randomized trials; each trial plans its own */
	expect(65);
	make_tmpdir("kv_corruption");
	diag("directory %s", tmpdir);
	test_sst_flip(1);
	test_sst_flip(0);
	test_log();
	test_manifest();
	test_fuzz(seeds, nseeds);
	diag("%.1f s", (now_micros() - t0) / 1e6);
	done_testing();
	if (exit_status() == 0)
		rm_rf(tmpdir);
	else
		diag("files kept in %s", tmpdir);
	return exit_status();
}
