/*
 * kv_readonly.c -- the read-only open (kv_options.read_only, and tbl_open
 * with it): it reads everything a writable open would, and changes nothing
 * in the directory.
 *
 * Permissions cannot prove that: the tests may run as root, for whom a
 * `chmod -R a-w` stops no write.  So the directory is made read-only the
 * way a user would, and then compared, before and after, name by name:
 * size, modification time (to the nanosecond), mode and every byte.  The
 * database is built to tempt every write a writable open does: a log with
 * writes not yet in a table (a writable open flushes it), stray files (it
 * deletes them), a second tree, and a table layer on top.
 */
#include "kv.h"
#include "table.h"
#include "util.h"
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

static int chmod_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag; (void)ftw;
	chmod(path, st->st_mode & ~(mode_t)0222);
	return 0;
}

static int unchmod_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag; (void)ftw;
	chmod(path, st->st_mode | 0200);
	return 0;
}

/*
 * A listing of a directory tree: one line per name with its type, size,
 * mode, mtime in nanoseconds and, for files, every byte (hex would be long:
 * the bytes go in as they are, length-prefixed by the size).
 */
static struct buf listing;

static int list_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char line[1024];
	int n;

	(void)ftw;
	n = snprintf(line, sizeof(line), "%s type %d size %lld mode %o mtime %lld.%09ld\n", path,
		     flag, (long long)st->st_size, (unsigned)st->st_mode,
		     (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	buf_append(&listing, line, (size_t)n);
	if (flag == FTW_F) {
		FILE *f = fopen(path, "rb");
		char chunk[65536];
		size_t got;

		if (!f) {
			buf_append(&listing, "unreadable\n", 11);
			return 0;
		}
		while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
			buf_append(&listing, chunk, got);
		fclose(f);
	}
	return 0;
}

/* The directory's full listing (caller frees with buf_free). */
static struct buf take_listing(const char *dir)
{
	struct buf out;

	listing = (struct buf)BUF_INIT;
	nftw(dir, list_one, 16, FTW_PHYS);
	out = listing;
	listing = (struct buf)BUF_INIT;
	return out;
}

static int same_listing(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static int file_exists(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	int r = stat(p, &st) == 0;

	free(p);
	return r;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "wb");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(p);
		exit(1);
	}
	free(p);
}

static void copy_file(const char *dir, const char *from, const char *to)
{
	char *p = xasprintf("%s/%s", dir, from);
	char *data = NULL;
	size_t len = 0, got;
	FILE *f = fopen(p, "rb");
	char chunk[65536];

	if (!f) {
		perror(p);
		exit(1);
	}
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		data = xrealloc(data, len + got);
		memcpy(data + len, chunk, got);
		len += got;
	}
	fclose(f);
	write_file(dir, to, data, len);
	free(data);
	free(p);
}

/* The first NNNNNN.sst in dir, or "" */
static void first_table(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	*out = 0;
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".sst") && (!*out || strcmp(e->d_name, out) < 0))
			snprintf(out, size, "%s", e->d_name);
	}
	if (d)
		closedir(d);
}

#define NKEYS 3000

static void key_of(int i, char *k) { snprintf(k, 32, "key%06d", i); }
static void val_of(int i, char *v) { snprintf(v, 64, "value %d of the read-only test", i); }

/*
 * The database: keys 0..NKEYS-1 in the default tree, half of them flushed
 * to tables and half only in the log; keys [100, 200) deleted by a range
 * tombstone in the log; tree "second" with NKEYS/10 keys; then stray files
 * of each kind a writable open would delete.
 */
static void build(const char *dir)
{
	struct kv_options o;
	struct kv_db *db;
	struct kv_tree *t;
	char k[32], v[64], stray[64];
	int r;

	kv_options_init(&o);
	o.write_buffer_size = 64 << 10;
	r = kv_open(dir, &o, &db);
	if (r < 0) {
		fprintf(stderr, "build: %s\n", kv_strerror(r));
		exit(1);
	}
	kv_tree_open(db, "second", NULL, &t);
	for (int i = 0; i < NKEYS; i++) {
		key_of(i, k);
		val_of(i, v);
		kv_put(db, k, strlen(k), v, strlen(v), 0);
		if (i % 10 == 0) {
			struct kv_batch *b = kv_batch_new();
			kv_batch_put_tree(b, t, k, strlen(k), v, strlen(v));
			kv_write(db, b, 0);
			kv_batch_free(b);
		}
		if (i == NKEYS / 2)
			kv_flush(db);
	}
	key_of(100, k);
	key_of(200, v);
	kv_delete_range(db, k, strlen(k), v, strlen(v), KV_SYNC);
	r = kv_close(db);
	if (r < 0) {
		fprintf(stderr, "build close: %s\n", kv_strerror(r));
		exit(1);
	}
	/* strays: a table no manifest names, an old manifest, a CURRENT.tmp */
	first_table(dir, stray, sizeof(stray));
	if (*stray)
		copy_file(dir, stray, "999990.sst");
	write_file(dir, "MANIFEST-000001", "old", 3);
	write_file(dir, "CURRENT.tmp", "MANIFEST-000001\n", 16);
}

/* Every key of both trees reads back as built, by kv_get and by iterators. */
static void check_contents(struct kv_db *db, const char *label)
{
	struct kv_tree *t;
	struct kv_iter *it;
	char k[32], v[64], *got;
	size_t glen;
	int bad = 0, missing = 0, count = 0, r;

	for (int i = 0; i < NKEYS; i++) {
		key_of(i, k);
		val_of(i, v);
		r = kv_get(db, NULL, k, strlen(k), &got, &glen);
		if (i >= 100 && i < 200) {
			bad += r != -ENOENT;
		} else if (r < 0) {
			missing++;
		} else {
			bad += glen != strlen(v) || memcmp(got, v, glen);
			free(got);
		}
	}
	is_int(missing, 0, "%s: every live key of the default tree is found", label);
	is_int(bad, 0, "%s: every value is right, and the range-deleted keys are gone", label);
	it = kv_iter_new(db, NULL);
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it))
		count++;
	is_int(kv_iter_status(it), 0, "%s: a full scan ends without error", label);
	is_int(count, NKEYS - 100, "%s: a full scan sees every live key", label);
	kv_iter_free(it);
	r = kv_tree_open(db, "second", NULL, &t);
	is_int(r, 0, "%s: tree second opens", label);
	if (r == 0) {
		struct kv_read_options ro = { .tree = t };
		count = 0;
		it = kv_iter_new(db, &ro);
		for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it))
			count++;
		is_int(count, NKEYS / 10, "%s: tree second holds its keys", label);
		kv_iter_free(it);
	} else {
		ok(0, "%s: tree second holds its keys", label);
	}
}

/* Open read-only in a child, report "ready" on a pipe and hold it until told to stop. */
static pid_t hold_in_child(const char *dir, int read_only, int *ready_fd, int *stop_fd)
{
	int p1[2], p2[2];
	pid_t pid;

	if (pipe(p1) < 0 || pipe(p2) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		struct kv_options o;
		struct kv_db *db;
		char c = 0;
		int r;

		close(p1[0]);
		close(p2[1]);
		kv_options_init(&o);
		o.read_only = read_only;
		r = kv_open(dir, &o, &db);
		c = r == 0 ? 'y' : 'n';
		if (write(p1[1], &c, 1) != 1)
			_exit(1);
		if (read(p2[0], &c, 1) < 0)
			_exit(1);
		if (r == 0)
			kv_close(db);
		_exit(0);
	}
	close(p1[1]);
	close(p2[0]);
	*ready_fd = p1[0];
	*stop_fd = p2[1];
	return pid;
}

static void release_child(pid_t pid, int ready_fd, int stop_fd)
{
	int st;

	close(stop_fd);
	close(ready_fd);
	waitpid(pid, &st, 0);
}

static void test_read_only_open(void)
{
	char *dir = xasprintf("%s/db", tmpdir);
	struct buf before, after;
	struct kv_options o;
	struct kv_db *db, *db2, *w;
	struct kv_batch *b;
	struct kv_tree *t;
	char **names, *p;
	size_t n;
	int r;

	build(dir);
	nftw(dir, chmod_one, 16, FTW_PHYS);
	before = take_listing(dir);

	kv_options_init(&o);
	o.read_only = 1;
	o.create_if_missing = 1;   /* ignored when read-only */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "a chmod -R a-w database opens read-only");
	if (r < 0) {
		diag("%s", kv_strerror(r));
		exit(exit_status());
	}
	check_contents(db, "read-only");

	is_int(kv_put(db, "x", 1, "y", 1, 0), -EROFS, "kv_put is -EROFS");
	is_int(kv_delete(db, "key000001", 9, 0), -EROFS, "kv_delete is -EROFS");
	is_int(kv_delete_range(db, "a", 1, "z", 1, 0), -EROFS, "kv_delete_range is -EROFS");
	b = kv_batch_new();
	kv_batch_put(b, "x", 1, "y", 1);
	is_int(kv_write(db, b, KV_SYNC), -EROFS, "kv_write is -EROFS");
	kv_batch_free(b);
	is_int(kv_flush(db), -EROFS, "kv_flush is -EROFS");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), -EROFS, "kv_compact_range is -EROFS");
	is_int(kv_tree_open(db, "new-tree", NULL, &t), -EROFS, "creating a tree is -EROFS");
	r = kv_tree_open(db, "second", NULL, &t);
	is_int(r == 0 ? kv_tree_drop(db, t) : r, -EROFS, "dropping a tree is -EROFS");
	is_int(kv_verify(db, NULL, NULL), 0, "kv_verify finds nothing wrong");
	p = kv_property(db, "stats");
	ok(p != NULL, "the stats property is there");
	free(p);
	p = kv_property(db, "sstables");
	ok(p && strstr(p, ".sst"), "the sstables property lists the tables");
	free(p);

	r = kv_stray_files(db, &names, &n);
	is_int(r, 0, "kv_stray_files works read-only");
	{
		struct buf all = BUF_INIT;
		for (size_t i = 0; i < n; i++) {
			buf_append(&all, names[i], strlen(names[i]));
			buf_append(&all, " ", 1);
			free(names[i]);
		}
		free(names);
		buf_append(&all, "", 1);
		is_str(all.data, "999990.sst CURRENT.tmp MANIFEST-000001 ",
		       "the strays are listed, sorted, and nothing else");
		buf_free(&all);
	}

	/* read-only opens share the directory; a writer cannot join them */
	r = kv_open(dir, &o, &db2);
	is_int(r, 0, "a second read-only open in the same process works");
	if (r == 0) {
		check_contents(db2, "second read-only handle");
		kv_close(db2);
	}
	/* the first handle's lock survived the second's close */
	{
		int ready, stop;
		char c = 0;
		pid_t pid = hold_in_child(dir, 0, &ready, &stop);
		is_int(read(ready, &c, 1), 1, "the child tried a writable open");
		is_int(c, 'n', "a writable open in another process is refused while a read-only "
		       "one holds the directory (after a second read-only handle closed)");
		release_child(pid, ready, stop);
	}
	{
		struct kv_options wo;
		kv_options_init(&wo);
		is_int(kv_open(dir, &wo, &w), -EBUSY,
		       "a writable open in the same process is -EBUSY beside a read-only one");
	}
	is_int(kv_close(db), 0, "the read-only close returns 0");

	after = take_listing(dir);
	ok(same_listing(&before, &after), "nothing in the directory changed: names, sizes, "
	   "modes, mtimes and bytes are as before");
	ok(file_exists(dir, "999990.sst") && file_exists(dir, "CURRENT.tmp") &&
	   file_exists(dir, "MANIFEST-000001"), "the stray files are still there");
	buf_free(&before);
	buf_free(&after);

	/* a writer in another process keeps read-only opens out */
	nftw(dir, unchmod_one, 16, FTW_PHYS);
	{
		int ready, stop;
		char c = 0;
		pid_t pid = hold_in_child(dir, 0, &ready, &stop);
		is_int(read(ready, &c, 1), 1, "the child opened for writing");
		is_int(c, 'y', "the writable open in the child worked");
		is_int(kv_open(dir, &o, &db), -EBUSY, "a read-only open is -EBUSY while a writer "
		       "holds the directory");
		release_child(pid, ready, stop);
	}
	/* the same data through a writable open: what the read-only open saw was all of it */
	{
		struct kv_options wo;
		kv_options_init(&wo);
		wo.create_if_missing = 0;
		r = kv_open(dir, &wo, &w);
		is_int(r, 0, "the database opens for writing afterwards");
		if (r == 0) {
			check_contents(w, "writable, afterwards");
			kv_close(w);
		}
		ok(!file_exists(dir, "999990.sst") && !file_exists(dir, "CURRENT.tmp"),
		   "a writable open deletes the strays (that is what read-only must not do)");
	}
	free(dir);
}

/* Without a LOCK file: no lock, and none is created. */
static void test_no_lock_file(void)
{
	char *dir = xasprintf("%s/nolock", tmpdir), *lock = xasprintf("%s/LOCK", dir);
	struct buf before, after;
	struct kv_options o;
	struct kv_db *db;
	int r;

	build(dir);
	unlink(lock);
	before = take_listing(dir);
	kv_options_init(&o);
	o.read_only = 1;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "a database without a LOCK file opens read-only");
	if (r == 0) {
		check_contents(db, "no LOCK");
		kv_close(db);
	}
	ok(!file_exists(dir, "LOCK"), "no LOCK file was created");
	after = take_listing(dir);
	ok(same_listing(&before, &after), "nothing changed without a LOCK file either");
	buf_free(&before);
	buf_free(&after);
	free(lock);
	free(dir);
}

/* Nothing to open: nothing is created. */
static void test_nothing_there(void)
{
	char *dir = xasprintf("%s/empty", tmpdir), *none = xasprintf("%s/none", tmpdir);
	struct kv_options o;
	struct kv_db *db;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	mkdir(dir, 0700);
	kv_options_init(&o);
	o.read_only = 1;
	o.create_if_missing = 1;
	is_int(kv_open(none, &o, &db), -ENOENT, "a missing directory is -ENOENT");
	ok(!file_exists(tmpdir, "none"), "and it is not created");
	is_int(kv_open(dir, &o, &db), -ENOENT, "an empty directory is -ENOENT");
	d = opendir(dir);
	while (d && (e = readdir(d)))
		entries += e->d_name[0] != '.';
	if (d)
		closedir(d);
	is_int(entries, 0, "and it stays empty (no LOCK, no CURRENT)");
	free(dir);
	free(none);
}

/* The table layer on a read-only open: reads work, writes are -EROFS. */
static void test_table_layer(void)
{
	char *dir = xasprintf("%s/tbl", tmpdir);
	struct tbl_options o;
	struct tbl_db *db;
	struct tbl_family_settings fs;
	struct tbl_scan *s;
	const struct tbl_row *row;
	struct buf before, after;
	int r, rows = 0;

	tbl_options_init(&o);
	r = tbl_open(dir, &o, &db);
	if (r < 0) {
		diag("tbl_open: %s", kv_strerror(r));
		exit(1);
	}
	tbl_family_settings_init(&fs);
	tbl_create_table(db, "t");
	tbl_add_family(db, "t", "f", &fs);
	snprintf(fs.locality_group, sizeof(fs.locality_group), "other");
	tbl_add_family(db, "t", "g", &fs);
	for (int i = 0; i < 50; i++) {
		char rk[16];
		snprintf(rk, sizeof(rk), "row%03d", i);
		tbl_put_text(db, "t", rk, strlen(rk), "f", "q", 1, TBL_TS_NOW, CELL_INVALID,
			     "hello", 5, 0);
		tbl_put_text(db, "t", rk, strlen(rk), "g", "q", 1, TBL_TS_NOW, CELL_INVALID,
			     "there", 5, 0);
	}
	tbl_close(db);
	nftw(dir, chmod_one, 16, FTW_PHYS);
	before = take_listing(dir);

	tbl_options_init(&o);
	o.kv.read_only = 1;
	r = tbl_open(dir, &o, &db);
	is_int(r, 0, "tbl_open read-only works");
	if (r == 0) {
		r = tbl_scan_new(db, "t", NULL, &s);
		if (r == 0) {
			while ((r = tbl_scan_next(s, &row)) > 0)
				rows++;
			tbl_scan_free(s);
		}
		is_int(r, 0, "a scan of the table ends without error");
		is_int(rows, 50, "the scan sees every row");
		is_int(tbl_create_table(db, "u"), -EROFS, "tbl_create_table is -EROFS");
		is_int(tbl_put_text(db, "t", "row000", 6, "f", "q", 1, TBL_TS_NOW, CELL_INVALID,
				    "x", 1, 0), -EROFS, "a put is -EROFS");
		tbl_family_settings_init(&fs);
		snprintf(fs.locality_group, sizeof(fs.locality_group), "third");
		is_int(tbl_add_family(db, "t", "h", &fs), -EROFS,
		       "a family in a new locality group is -EROFS");
		is_int(tbl_drop_table(db, "t", 1), -EROFS, "tbl_drop_table is -EROFS");
		is_int(tbl_close(db), 0, "the read-only tbl_close returns 0");
	}
	after = take_listing(dir);
	ok(same_listing(&before, &after), "the table layer changed nothing in the directory");
	buf_free(&before);
	buf_free(&after);
	nftw(dir, unchmod_one, 16, FTW_PHYS);
	free(dir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-readonly-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	plan(66);
	test_read_only_open();
	test_no_lock_file();
	test_nothing_there();
	test_table_layer();
	nftw(tmpdir, unchmod_one, 16, FTW_PHYS);
	rm_rf(tmpdir);
	return exit_status();
}
