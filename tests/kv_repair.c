/*
 * kv_repair.c -- kv_repair on damage the smolctl tests (ctl_repair.sh) do
 * not reach through one tree: a log damaged in the middle keeps exactly its
 * records before the damage; a table of a second tree is restored into that
 * tree; without any manifest, tables whose tree cannot be known are set
 * aside, never put in the wrong tree; a table whose index records do not
 * match its blocks is rewritten from the blocks; and a database in use is
 * refused.
 */
#include "kv.h"
#include "env.h"
#include "sst.h"
#include "util.h"
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[512];
static struct buf said;   /* everything repair reported */

static void on_report(void *arg, const char *msg)
{
	(void)arg;
	buf_append(&said, msg, strlen(msg));
	buf_append(&said, "\n", 1);
}

static int said_has(const char *s)
{
	buf_append(&said, "", 1);
	said.len--;
	return strstr(said.data ? said.data : "", s) != NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

/* The first file in dir whose name ends with suffix (into out), 1 if found. */
static int find_file(const char *dir, const char *suffix, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name), s = strlen(suffix);
		if (n > s && !strcmp(e->d_name + n - s, suffix) &&
		    (!found || strcmp(e->d_name, out) < 0)) {
			snprintf(out, size, "%s", e->d_name);
			found = 1;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static int exists(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	int r = stat(p, &st) == 0;

	free(p);
	return r;
}

static void key_of(int i, char *k) { snprintf(k, 32, "key%06d", i); }

static struct kv_db *open_db(const char *dir, int create)
{
	struct kv_options o;
	struct kv_db *db;
	int r;

	kv_options_init(&o);
	o.create_if_missing = create;
	r = kv_open(dir, &o, &db);
	if (r < 0) {
		diag("open %s: %s", dir, kv_strerror(r));
		return NULL;
	}
	return db;
}

/* A log damaged in its middle: the records before the damage, and only those. */
static void test_log_damaged_in_the_middle(void)
{
	char *dir = xasprintf("%s/log", tmpdir), name[64], *path;
	struct kv_db *db = open_db(dir, 1);
	struct stat st;
	int fd, r, prefix = 0, after = 0, i;

	if (!db)
		exit(1);
	for (i = 0; i < 1000; i++) {
		char k[32];
		key_of(i, k);
		kv_put(db, k, strlen(k), "a value of some length to fill the log", 38, 0);
	}
	kv_close(db);
	ok(find_file(dir, ".log", name, sizeof(name)), "the writes are in a log (%s)", name);
	path = xasprintf("%s/%s", dir, name);
	stat(path, &st);
	fd = open(path, O_WRONLY);
	pwrite(fd, "\xff\xff\xff\xff", 4, st.st_size / 2);
	close(fd);
	db = open_db(dir, 0);
	ok(db == NULL, "the damaged log keeps the database from opening");
	if (db)
		kv_close(db);

	said.len = 0;
	r = kv_repair(dir, NULL, on_report, NULL);
	is_int(r, 0, "kv_repair succeeds");
	ok(said_has("damaged at offset"), "it reports where the log is damaged");
	{
		char *lost = xasprintf("%s/lost", dir);
		ok(exists(dir, "lost") && find_file(lost, ".log", name, sizeof(name)),
		   "the damaged log is in lost/");
		free(lost);
	}
	db = open_db(dir, 0);
	ok(db != NULL, "the database opens");
	if (!db)
		return;
	for (i = 0; i < 1000; i++) {
		char k[32], *v;
		size_t vl;
		key_of(i, k);
		r = kv_get(db, NULL, k, strlen(k), &v, &vl);
		if (r == 0) {
			free(v);
			if (after)
				break;
			prefix++;
		} else {
			after++;
		}
	}
	ok(prefix > 100 && prefix < 1000, "a prefix of the writes is kept (%d of 1000)", prefix);
	is_int(prefix + after, 1000, "and nothing after the first one lost (no hole filled later)");
	is_int(kv_verify(db, NULL, NULL), 0, "kv_verify finds nothing wrong");
	kv_close(db);
	free(path);
	free(dir);
}

/* Two trees; write n keys to each and flush them into tables. */
static void two_trees(const char *dir)
{
	struct kv_db *db = open_db(dir, 1);
	struct kv_tree *t;
	struct kv_batch *b = kv_batch_new();

	if (!db)
		exit(1);
	kv_tree_open(db, "second", NULL, &t);
	for (int i = 0; i < 500; i++) {
		char k[32];
		key_of(i, k);
		kv_put(db, k, strlen(k), "default", 7, 0);
		kv_batch_clear(b);
		kv_batch_put_tree(b, t, k, strlen(k), "second", 6);
		kv_write(db, b, 0);
	}
	kv_flush(db);
	/* and a little more in the log, in tree second */
	kv_batch_clear(b);
	kv_batch_put_tree(b, t, "zz", 2, "in the log", 10);
	kv_write(db, b, KV_SYNC);
	kv_batch_free(b);
	kv_close(db);
}

static int tree_count(struct kv_db *db, const char *tree, const char *want)
{
	struct kv_tree *t;
	struct kv_read_options ro;
	struct kv_iter *it;
	int n = 0;

	if (kv_tree_open(db, tree, NULL, &t) < 0)
		return -1;
	memset(&ro, 0, sizeof(ro));
	ro.tree = t;
	it = kv_iter_new(db, &ro);
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
		size_t vl;
		const char *v = kv_iter_value(it, &vl);
		if (vl == strlen(want) && !memcmp(v, want, vl))
			n++;
	}
	kv_iter_free(it);
	return n;
}

/* A table of tree "second", a byte short: restored into that tree. */
static void test_short_table_of_a_tree(void)
{
	char *dir = xasprintf("%s/trees", tmpdir);
	struct kv_db *db;
	char *path, *sst = NULL;
	int r;

	two_trees(dir);
	/* the tables: find the one of tree second through the sstables property */
	db = open_db(dir, 0);
	if (db) {
		char *p = kv_property(db, "sstables"), *line = p ? strstr(p, "tree second") : NULL;
		if (line && (line = strstr(line, ".sst")))
			sst = xasprintf("%.6s.sst", line - 6);
		free(p);
		kv_close(db);
	}
	ok(sst != NULL, "tree second has a table (%s)", sst ? sst : "none");
	if (!sst)
		return;
	path = xasprintf("%s/%s", dir, sst);
	{
		struct stat st;
		stat(path, &st);
		truncate(path, st.st_size - 1);
	}
	said.len = 0;
	r = kv_repair(dir, NULL, on_report, NULL);
	is_int(r, 0, "kv_repair succeeds");
	ok(said_has("1 byte short"), "it restores the short table");
	db = open_db(dir, 0);
	ok(db != NULL, "the database opens");
	if (db) {
		is_int(tree_count(db, "second", "second"), 500, "tree second has its 500 keys back");
		is_int(tree_count(db, "second", "in the log"), 1, "and its write from the log");
		is_int(tree_count(db, "default", "default"), 500, "the default tree has its own");
		is_int(tree_count(db, "default", "second"), 0, "and none of tree second's");
		kv_close(db);
	}
	free(path);
	free(sst);
	free(dir);
}

/* No manifest at all, and a log that writes to tree 1: no table is put in a guessed tree. */
static void test_no_manifest_several_trees(void)
{
	char *dir = xasprintf("%s/nomanifest", tmpdir);
	struct kv_db *db;
	int r;

	two_trees(dir);
	{
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (!strncmp(e->d_name, "MANIFEST-", 9) || !strcmp(e->d_name, "CURRENT")) {
				char *p = xasprintf("%s/%s", dir, e->d_name);
				unlink(p);
				free(p);
			}
		}
		if (d)
			closedir(d);
	}
	said.len = 0;
	r = kv_repair(dir, NULL, on_report, NULL);
	is_int(r, 0, "kv_repair of a database without a manifest succeeds");
	ok(said_has("its tree is unknown: moved to lost/"),
	   "tables whose tree cannot be known are set aside, and said to be");
	ok(said_has("1 of its mutations are for trees the readable manifest does not name"),
	   "the log's write to tree second is reported as dropped");
	db = open_db(dir, 0);
	ok(db != NULL, "the database opens");
	if (db) {
		is_int(tree_count(db, "default", "second"), 0,
		       "no key of tree second ends up in the default tree");
		kv_close(db);
	}
	free(dir);
}

/*
 * A table the manifest names replaced by a sound table holding nothing (an
 * SSTable with no entry: its bounds are empty, not internal keys): repair
 * takes the table's properties for the manifest, and a version compares
 * file bounds without checking their length, so the empty table is left
 * out rather than named with empty bounds.  The database then opens and
 * reads, without the replaced table's keys.
 */
static void test_empty_table(void)
{
	char *dir = xasprintf("%s/empty", tmpdir);
	struct sst_options so = { 4096, 16, 0, 10 };
	struct sst_props props;
	struct sst_builder *b;
	struct env_file *f;
	struct kv_db *db = open_db(dir, 1);
	char name[256], path[1024], k[32];
	char *v = NULL;
	size_t vl;
	int r;

	if (!db)
		exit(1);
	for (int i = 0; i < 10; i++) {
		key_of(i, k);
		kv_put(db, k, strlen(k), "v", 1, 0);
	}
	r = kv_flush(db);
	kv_close(db);
	if (!ok(r == 0 && find_file(dir, ".sst", name, sizeof(name)),
		"empty table: a database with one table (%s)", kv_strerror(r)))
		goto out;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	r = env_open_append(env_posix(), path, &f);
	if (r == 0) {
		b = sst_builder_new(f, &so, path);
		r = sst_builder_finish(b, &props);
		sst_builder_free(b);
		if (r == 0) {
			r = env_sync(f);
			sst_props_free(&props);
		}
		env_close(f);
	}
	is_int(r, 0, "empty table: the table replaced by one without entries");
	said.len = 0;
	is_int(kv_repair(dir, NULL, on_report, NULL), 0, "empty table: kv_repair succeeds");
	db = open_db(dir, 0);
	ok(db != NULL, "empty table: the database opens");
	if (db) {
		key_of(3, k);
		r = kv_get(db, NULL, k, strlen(k), &v, &vl);
		is_int(r, -ENOENT, "empty table: a read finds nothing of the replaced table");
		free(v);
		r = kv_put(db, k, strlen(k), "w", 1, 0);
		if (r == 0)
			r = kv_flush(db);
		if (r == 0)
			r = kv_compact_range(db, NULL, 0, NULL, 0);
		is_int(r, 0, "empty table: writes, a flush and a compaction go on");
		kv_close(db);
	}
out:
	free(dir);
}

/* A database in use is not repaired. */
/*
 * A table whose index records lie: copy of a table (8 values of 8 KiB, each
 * in a block of its own, so each with a single-entry record in the index)
 * whose data blocks were taken from a twin whose values differ in their
 * first byte.  Each block checks out alone, so reads of values work; a
 * keys-only read trusts the records.  kv_verify must find every such
 * record, and repair must rewrite the table from its blocks, after which a
 * keys-only read gives what the blocks hold.
 */
static void lying_twin(const char *dir, char first)
{
	struct kv_options o;
	struct kv_db *db;
	char v[8192];

	kv_options_init(&o);
	o.compression_level = 0;   /* the twins' files have the same size and layout */
	if (kv_open(dir, &o, &db) < 0)
		exit(1);
	for (int i = 0; i < 8; i++) {
		char k[32];
		key_of(i, k);
		memset(v, 'a' + i, sizeof(v));
		v[0] = first;
		kv_put(db, k, strlen(k), v, sizeof(v), 0);
	}
	kv_flush(db);
	kv_close(db);
}

/* The first byte of every value, read keys-only ("" on error). */
static void first_bytes(struct kv_db *db, char *out)
{
	struct kv_read_options ro = { .keys_only = 1 };
	struct kv_iter *it = kv_iter_new(db, &ro);
	size_t n = 0;

	for (kv_iter_seek_first(it); kv_iter_valid(it) && n < 15; kv_iter_next(it)) {
		size_t vl;
		const char *v = kv_iter_value(it, &vl);
		out[n++] = vl ? v[0] : '?';
	}
	out[kv_iter_status(it) ? 0 : n] = 0;
	kv_iter_free(it);
}

static void test_lying_records(void)
{
	char *a = xasprintf("%s/lieA", tmpdir), *b = xasprintf("%s/lieB", tmpdir);
	char name[64], name_b[64], got[16], *pa, *pb, *db_ = NULL;
	size_t la = 0, lb = 0;
	struct kv_db *db;

	lying_twin(a, 'A');
	lying_twin(b, 'B');
	ok(find_file(a, ".sst", name, sizeof(name)) && find_file(b, ".sst", name_b, sizeof(name_b))
	   && !strcmp(name, name_b), "lying records: twin tables (%s)", name);
	pa = xasprintf("%s/%s", a, name);
	pb = xasprintf("%s/%s", b, name);
	{
		int fa = open(pa, O_RDWR), fb = open(pb, O_RDONLY);
		struct stat sa, sb;
		uint64_t data_end = 0;
		char footer[8];

		fstat(fa, &sa);
		fstat(fb, &sb);
		la = (size_t)sa.st_size;
		lb = (size_t)sb.st_size;
		/* the data blocks end where the filter starts: the footer's first field */
		if (pread(fa, footer, 8, sa.st_size - 80) == 8)
			data_end = dec_fixed64(footer);
		db_ = xmalloc(lb);
		if (la == lb && data_end > 0 && data_end < la &&
		    pread(fb, db_, lb, 0) == (ssize_t)lb)
			pwrite(fa, db_, data_end, 0);   /* B's blocks under A's index */
		ok(la == lb && data_end > 8 * 8192, "lying records: B's %llu bytes of blocks copied "
		   "under A's index", (unsigned long long)data_end);
		close(fa);
		close(fb);
	}
	db = open_db(a, 0);
	ok(db != NULL, "lying records: the database opens");
	if (!db)
		goto out;
	first_bytes(db, got);
	is_str(got, "AAAAAAAA", "lying records: a keys-only read gives the records' first bytes");
	is_int(kv_verify(db, NULL, NULL), -EUCLEAN, "lying records: kv_verify finds them");
	kv_close(db);
	said.len = 0;
	is_int(kv_repair(a, NULL, on_report, NULL), 0, "lying records: kv_repair succeeds");
	db = open_db(a, 0);
	ok(db != NULL, "lying records: the database opens");
	if (!db)
		goto out;
	is_int(kv_verify(db, NULL, NULL), 0,
	       "lying records: kv_verify finds nothing wrong after the repair");
	first_bytes(db, got);
	is_str(got, "BBBBBBBB", "lying records: a keys-only read gives what the blocks hold");
	kv_close(db);
out:
	free(db_);
	free(pa);
	free(pb);
	free(a);
	free(b);
}

static void test_busy(void)
{
	char *dir = xasprintf("%s/busy", tmpdir);
	struct kv_db *db = open_db(dir, 1);

	if (!db)
		exit(1);
	is_int(kv_repair(dir, NULL, NULL, NULL), -EBUSY, "kv_repair of an open database is -EBUSY");
	kv_close(db);
	free(dir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-repair-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	plan(38);
	test_log_damaged_in_the_middle();
	test_short_table_of_a_tree();
	test_no_manifest_several_trees();
	test_lying_records();
	test_empty_table();
	test_busy();
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	buf_free(&said);
	return exit_status();
}
