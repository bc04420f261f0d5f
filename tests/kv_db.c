/*
 * kv_db.c -- the contract of the public key-value API (engine/kv.h), one
 * promise at a time: opening and locking, point writes and reads, empty keys
 * and values, batches, range deletes and their boundaries, snapshots,
 * iterators and prefix iterators, reopen, flush and compaction, statistics,
 * verification and destruction.
 *
 * The randomized model test (kv_model.c) covers the combinations; this file
 * pins down each rule with a small example a reader can follow.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dbpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

/* Small buffers so that a few thousand keys make several tables. */
static void small_options(struct kv_options *o)
{
	kv_options_init(o);
	o->write_buffer_size = 64 * 1024;
	o->target_file_size = 64 * 1024;
	o->max_bytes_level_base = 256 * 1024;
	o->block_cache_size = 256 * 1024;
}

/* Keys shown to people: printable bytes as they are, others as \xHH. */
static const char *show(const void *p, size_t n)
{
	static char bufs[4][600];
	static int next;
	char *b = bufs[next++ % 4];
	const unsigned char *u = p;
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < sizeof(bufs[0]); i++) {
		if (u[i] >= 0x21 && u[i] < 0x7f && u[i] != '\\' && u[i] != '|')
			b[o++] = (char)u[i];
		else
			o += (size_t)snprintf(b + o, 5, "\\x%02x", u[i]);
	}
	b[o] = 0;
	return b;
}

/* kv_get and compare: want == NULL means the key must be absent. */
static int get_is(struct kv_db *db, const struct kv_snapshot *snap, const void *k, size_t kl,
		  const void *want, size_t wl, const char *name)
{
	char *v = NULL;
	size_t vl = 0;
	int r = kv_get(db, snap, k, kl, &v, &vl);
	int good;

	if (!want) {
		good = ok(r == -ENOENT, "%s", name);
		if (!good)
			diag("kv_get(%s) returned %d (%s) with %zu bytes, want -ENOENT",
			     show(k, kl), r,
			     r < 0 ? kv_strerror(r) : "found", vl);
	} else {
		good = ok(r == 0 && vl == wl && (wl == 0 || memcmp(v, want, wl) == 0), "%s", name);
		if (!good)
			diag("kv_get(%s) returned %d, value \"%s\", want \"%s\"", show(k, kl), r,
			     r == 0 ? show(v, vl) : "", show(want, wl));
	}
	free(v);
	return good;
}

/* get_is for C strings. */
static int get_str_is(struct kv_db *db, const struct kv_snapshot *snap, const char *k,
		      const char *want, const char *name)
{
	return get_is(db, snap, k, strlen(k), want, want ? strlen(want) : 0, name);
}

static int put(struct kv_db *db, const char *k, const char *v)
{
	return kv_put(db, k, strlen(k), v, strlen(v), 0);
}

/*
 * Walk an iterator from its current position (forward if dir > 0, else
 * backward), rendering "key=value|key=value|..." into a malloc'd string.
 * A non-zero status is appended as "!<errno>".
 */
static char *walk(struct kv_iter *it, int dir, int with_values)
{
	struct buf b = BUF_INIT;
	int first = 1, steps = 0;

	while (kv_iter_valid(it) && steps++ < 100000) {
		size_t kl, vl;
		const void *k = kv_iter_key(it, &kl);
		const void *v = kv_iter_value(it, &vl);
		const char *s;

		if (!first)
			buf_append(&b, "|", 1);
		first = 0;
		s = show(k, kl);
		buf_append(&b, s, strlen(s));
		if (with_values) {
			buf_append(&b, "=", 1);
			s = show(v, vl);
			buf_append(&b, s, strlen(s));
		}
		if (dir > 0)
			kv_iter_next(it);
		else
			kv_iter_prev(it);
	}
	if (kv_iter_status(it)) {
		char e[16];
		snprintf(e, sizeof(e), "!%d", kv_iter_status(it));
		buf_append(&b, e, strlen(e));
	}
	buf_append(&b, "", 1);
	return b.data;
}

static char *scan_all(struct kv_db *db, const struct kv_snapshot *snap, int dir, int with_values)
{
	struct kv_read_options ro = { .snapshot = snap };
	struct kv_iter *it = kv_iter_new(db, &ro);
	char *s;

	if (dir > 0)
		kv_iter_seek_first(it);
	else
		kv_iter_seek_last(it);
	s = walk(it, dir, with_values);
	kv_iter_free(it);
	return s;
}

/* Forward scan with values over [lower, upper) at snap. */
static char *scan_range(struct kv_db *db, const struct kv_snapshot *snap, const char *lower,
			const char *upper)
{
	struct kv_read_options ro = { .snapshot = snap, .lower = lower, .lower_len = strlen(lower),
				      .upper = upper, .upper_len = strlen(upper) };
	struct kv_iter *it = kv_iter_new(db, &ro);
	char *s;

	kv_iter_seek_first(it);
	s = walk(it, 1, 1);
	kv_iter_free(it);
	return s;
}

static char *scan_prefix(struct kv_db *db, const void *p, size_t pl, int dir)
{
	struct kv_iter *it = kv_iter_new_prefix(db, NULL, p, pl);
	char *s;

	if (dir > 0)
		kv_iter_seek_first(it);
	else
		kv_iter_seek_last(it);
	s = walk(it, dir, 0);
	kv_iter_free(it);
	return s;
}

static int scan_is(char *got, const char *want, const char *name)
{
	int r = is_str(got, want, "%s", name);

	free(got);
	return r;
}

static int count_files(const char *dir, const char *suffix)
{
	char **names;
	size_t n, i;
	int c = 0;

	if (env_list_dir(env_posix(), dir, &names, &n) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]), sl = strlen(suffix);
		if (l >= sl && strcmp(names[i] + l - sl, suffix) == 0)
			c++;
	}
	env_free_list(names, n);
	return c;
}

/* ------------------------------------------------------------------ tests */

static void test_options(void)
{
	struct kv_options o;

	memset(&o, 0x5a, sizeof(o));
	kv_options_init(&o);
	ok(o.env == NULL, "default env is NULL (POSIX)");
	is_int(o.create_if_missing, 1, "default create_if_missing is 1");
	is_int(o.error_if_exists, 0, "default error_if_exists is 0");
	is_int(o.write_buffer_size, 64u << 20, "default write_buffer_size is 64 MiB");
	is_int(o.block_size, 4096, "default block_size is 4 KiB");
	is_int(o.block_restart_interval, 16, "default block_restart_interval is 16");
	is_int(o.compression_level, 1, "default compression_level is 1");
	is_int(o.block_cache_size, 64u << 20, "default block_cache_size is 64 MiB");
	is_int(o.bloom_bits_per_key, 10, "default bloom_bits_per_key is 10");
	is_int(o.max_open_files, 0, "default max_open_files is 0 (follows the descriptor limit)");
	is_int(o.target_file_size, 4u << 20, "default target_file_size is 4 MiB");
	is_int(o.max_bytes_level_base, 64u << 20, "default max_bytes_level_base is 64 MiB");
	is_int(o.l0_compaction_trigger, 4, "default l0_compaction_trigger is 4");
	is_int(o.l0_slowdown_trigger, 8, "default l0_slowdown_trigger is 8");
	ok(o.slowdown_rate == 16u << 20, "default slowdown_rate is 16 MiB/s");
	is_int(o.l0_stop_trigger, 12, "default l0_stop_trigger is 12");
	is_int(o.sync_wal, 0, "default sync_wal is 0");
	ok(o.compaction_filter == NULL, "default compaction_filter is NULL");
	ok(o.log == NULL, "default log is NULL");
}

/* Is the lock on path held by some other process, as the kernel sees it? */
static int held_by_other_process(const char *path)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR);

		if (fd < 0)
			_exit(2);
		if (fcntl(fd, F_SETLK, &fl) < 0)
			_exit(errno == EAGAIN || errno == EACCES ? 1 : 3);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 1 ? 1 : WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void test_open(void)
{
	struct kv_options o;
	struct kv_db *db = (struct kv_db *)1, *db2 = (struct kv_db *)1;
	char *dir = dbpath("open"), *lock = xasprintf("%s/LOCK", dir);
	char *cur, *mpath;
	size_t cl;
	int r;

	kv_options_init(&o);
	o.create_if_missing = 0;
	r = kv_open(dir, &o, &db);
	is_int(r, -ENOENT, "open of a missing database without create_if_missing gives -ENOENT");
	ok(db == NULL, "a failed open stores NULL");
	ok(kv_strerror(r)[0] != 0, "a failed open leaves a message");

	mkdir(dir, 0755);
	db = (struct kv_db *)1;
	is_int(kv_open(dir, &o, &db), -ENOENT,
	       "open of an empty directory without create_if_missing gives -ENOENT");
	ok(db == NULL, "and stores NULL");

	o.create_if_missing = 1;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "open with create_if_missing creates the database");
	if (r < 0) {
		diag("kv_open: %s", kv_strerror(r));
		return;
	}
	ok(db != NULL, "a successful open stores a handle");
	is_int(put(db, "k", "v"), 0, "put into a new database");

	/* CURRENT names a manifest that exists */
	cur = NULL;
	{
		char *cp = xasprintf("%s/CURRENT", dir);
		r = env_read_file(env_posix(), cp, &cur, &cl);
		free(cp);
	}
	ok(r == 0 && cl > 9 && strncmp(cur, "MANIFEST-", 9) == 0 && cur[cl - 1] == '\n',
	   "CURRENT holds a manifest name and a newline");
	if (r == 0 && cl > 0) {
		cur[cl - 1] = 0;
		mpath = xasprintf("%s/%s", dir, cur);
		is_int(env_exists(env_posix(), mpath), 1, "the manifest CURRENT names exists");
		free(mpath);
	}
	free(cur);

	r = kv_open(dir, &o, &db2);
	is_int(r, -EBUSY, "a second kv_open of an open directory in the same process gives -EBUSY");
	ok(db2 == NULL, "the refused open stores NULL");
	ok(strlen(kv_strerror(r)) > 0, "the refusal has a message: %s", kv_strerror(r));
	is_int(held_by_other_process(lock), 1,
	       "after the refused open the directory is still locked");
	get_str_is(db, NULL, "k", "v", "the first handle still works after a refused second open");
	is_int(kv_close(db), 0, "close");
	is_int(held_by_other_process(lock), 0, "after close the lock is released");

	o.error_if_exists = 1;
	db = (struct kv_db *)1;
	is_int(kv_open(dir, &o, &db), -EEXIST,
	       "error_if_exists on an existing database gives -EEXIST");
	ok(db == NULL, "and stores NULL");
	o.error_if_exists = 0;
	o.create_if_missing = 0;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "an existing database opens without create_if_missing");
	if (r == 0) {
		get_str_is(db, NULL, "k", "v", "data written before close is there after reopen");
		kv_close(db);
	}
	o.error_if_exists = 1;
	o.create_if_missing = 1;
	{
		char *d2 = dbpath("open-new");
		r = kv_open(d2, &o, &db);
		is_int(r, 0, "error_if_exists with a new directory creates it");
		if (r == 0)
			kv_close(db);
		free(d2);
	}
	free(lock);
	free(dir);
}

static void test_point_ops(struct kv_db *db)
{
	const char bin1[] = { 0, 0, 1 }, bin2[] = { (char)0xff, 0, (char)0xff };
	const char bval[] = { 0, 1, 2, 0, (char)0xff };
	char *big;

	get_str_is(db, NULL, "missing", NULL, "get of a key never written gives -ENOENT");
	is_int(put(db, "alpha", "1"), 0, "put alpha");
	get_str_is(db, NULL, "alpha", "1", "get returns the value put");
	is_int(put(db, "alpha", "22"), 0, "overwrite alpha");
	get_str_is(db, NULL, "alpha", "22", "get returns the newest value");
	is_int(kv_delete(db, "alpha", 5, 0), 0, "delete alpha");
	get_str_is(db, NULL, "alpha", NULL, "a deleted key is absent");
	is_int(kv_delete(db, "never", 5, 0), 0, "deleting an absent key is not an error");
	is_int(put(db, "alpha", "333"), 0, "put alpha after delete");
	get_str_is(db, NULL, "alpha", "333", "a key written after its delete is back");
	get_str_is(db, NULL, "alph", NULL, "a prefix of an existing key is a different key");
	get_str_is(db, NULL, "alphab", NULL, "an extension of an existing key is a different key");

	is_int(kv_put(db, "", 0, "empty-key", 9, 0), 0, "put with an empty key");
	get_is(db, NULL, "", 0, "empty-key", 9, "get of the empty key");
	is_int(kv_put(db, "ev", 2, "", 0, 0), 0, "put with an empty value");
	get_is(db, NULL, "ev", 2, "", 0, "an empty value is found, with length 0");
	is_int(kv_put(db, bin1, 3, bval, 5, 0), 0, "put a key with zero bytes");
	is_int(kv_put(db, bin2, 3, "ff", 2, KV_SYNC), 0, "put a key with 0xff bytes, with KV_SYNC");
	get_is(db, NULL, bin1, 3, bval, 5, "binary key and value with zero bytes round-trip");
	get_is(db, NULL, bin2, 3, "ff", 2, "a key with 0xff bytes round-trips");
	get_is(db, NULL, bin1, 2, NULL, 0, "a key cut before its zero byte is absent");

	big = xcalloc(1, KV_MAX_KEY_SIZE + 1);
	memset(big, 'K', KV_MAX_KEY_SIZE + 1);
	is_int(kv_put(db, big, KV_MAX_KEY_SIZE, "max", 3, 0), 0,
	       "a key of KV_MAX_KEY_SIZE is accepted");
	get_is(db, NULL, big, KV_MAX_KEY_SIZE, "max", 3, "and can be read back");
	is_int(kv_put(db, big, KV_MAX_KEY_SIZE + 1, "x", 1, 0), -E2BIG,
	       "a key of KV_MAX_KEY_SIZE + 1 gives -E2BIG");
	{
		char *v = NULL;
		size_t vl;
		int r = kv_get(db, NULL, big, KV_MAX_KEY_SIZE + 1, &v, &vl);
		ok(r == -ENOENT || r == -E2BIG,
		   "and is not stored (kv_get gives -ENOENT or -E2BIG: %d)", r);
		free(v);
	}
	is_int(kv_delete(db, big, KV_MAX_KEY_SIZE, 0), 0, "delete the largest key");
	free(big);
}

static void test_batch(struct kv_db *db)
{
	struct kv_batch *b = kv_batch_new();
	const struct kv_snapshot *before;
	size_t bytes;

	ok(b != NULL, "kv_batch_new");
	is_int(kv_batch_count(b), 0, "a new batch is empty");
	put(db, "bt-c", "old");
	put(db, "bt-r2", "old");
	kv_batch_put(b, "bt-a", 4, "A", 1);
	kv_batch_put(b, "bt-b", 4, "B", 1);
	kv_batch_delete(b, "bt-c", 4);
	kv_batch_put(b, "bt-x", 4, "1", 1);
	kv_batch_delete(b, "bt-x", 4);
	kv_batch_put(b, "bt-x", 4, "2", 1);
	kv_batch_put(b, "bt-y", 4, "1", 1);
	kv_batch_delete(b, "bt-y", 4);
	kv_batch_put(b, "bt-r1", 5, "1", 1);
	kv_batch_delete_range(b, "bt-r", 4, "bt-s", 4);
	kv_batch_put(b, "bt-r3", 5, "3", 1);
	is_int(kv_batch_count(b), 11, "kv_batch_count counts every mutation");
	bytes = kv_batch_bytes(b);
	ok(bytes >= 11 * 5, "kv_batch_bytes covers at least the keys (%zu)", bytes);

	before = kv_snapshot_new(db);
	is_int(kv_write(db, b, 0), 0, "kv_write of a batch");
	get_str_is(db, NULL, "bt-a", "A", "batch: first put applied");
	get_str_is(db, NULL, "bt-b", "B", "batch: second put applied");
	get_str_is(db, NULL, "bt-c", NULL, "batch: delete applied");
	get_str_is(db, NULL, "bt-x", "2", "batch: put, delete, put of one key leaves the last put");
	get_str_is(db, NULL, "bt-y", NULL, "batch: put then delete of one key leaves it absent");
	get_str_is(db, NULL, "bt-r1", NULL,
		   "batch: a range delete removes a put made before it in the batch");
	get_str_is(db, NULL, "bt-r2", NULL, "batch: a range delete removes an older key");
	get_str_is(db, NULL, "bt-r3", "3",
		   "batch: a put after a range delete in the batch survives");
	get_str_is(db, before, "bt-a", NULL, "a snapshot from before the batch sees none of it");
	get_str_is(db, before, "bt-c", "old",
		   "a snapshot from before the batch sees the old value");
	kv_snapshot_release(db, before);

	kv_batch_clear(b);
	is_int(kv_batch_count(b), 0, "kv_batch_clear empties the batch");
	is_int(kv_write(db, b, 0), 0, "writing an empty batch succeeds");
	is_int(kv_batch_put(b, "k", KV_MAX_KEY_SIZE + 1, "v", 1), -E2BIG,
	       "kv_batch_put of an oversized key gives -E2BIG");
	kv_batch_clear(b);
	/* the same batch written twice applies twice */
	kv_batch_put(b, "bt-twice", 8, "t", 1);
	kv_write(db, b, KV_SYNC);
	kv_delete(db, "bt-twice", 8, 0);
	kv_write(db, b, 0);
	get_str_is(db, NULL, "bt-twice", "t", "a batch can be written again");
	kv_batch_free(b);
}

static void test_delete_range(struct kv_db *db)
{
	const char *keys[] = { "dr", "dr-a", "dr-b", "dr-b\x01", "dr-ba", "dr-c", "dr-c\x01",
			       "dr-d" };
	size_t i;
	const char zero[1] = { 0 };
	char kb0[5] = { 'd', 'r', '-', 'b', 0 };

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(db, keys[i], "v");
	kv_put(db, kb0, 5, "v", 1, 0);
	is_int(kv_delete_range(db, "dr-b", 4, "dr-c", 4, 0), 0, "delete_range [dr-b, dr-c)");
	get_str_is(db, NULL, "dr-a", "v", "a key before the range stays");
	get_str_is(db, NULL, "dr-b", NULL, "the start key is deleted (start included)");
	get_is(db, NULL, kb0, 5, NULL, 0, "the start key followed by a zero byte is deleted");
	get_str_is(db, NULL, "dr-b\x01", NULL, "a key just after the start is deleted");
	get_str_is(db, NULL, "dr-ba", NULL, "a key inside the range is deleted");
	get_str_is(db, NULL, "dr-c", "v", "the end key stays (end excluded)");
	get_str_is(db, NULL, "dr-c\x01", "v", "a key after the end stays");
	get_str_is(db, NULL, "dr", "v", "a prefix of the start key stays");

	is_int(kv_delete_range(db, "dr-x", 4, "dr-x", 4, 0), -EINVAL,
	       "delete_range with start == end gives -EINVAL");
	is_int(kv_delete_range(db, "dr-z", 4, "dr-a", 4, 0), -EINVAL,
	       "delete_range with start > end gives -EINVAL");
	is_int(kv_delete_range(db, "dr-a", 4, "dr", 2, 0), -EINVAL,
	       "delete_range with end a proper prefix of start gives -EINVAL");
	get_str_is(db, NULL, "dr-a", "v", "a refused delete_range deletes nothing");

	put(db, "dr-bb", "new");
	get_str_is(db, NULL, "dr-bb", "new",
		   "a put after a range delete, inside the range, is visible");

	/* the empty key is the smallest key */
	kv_put(db, "", 0, "e", 1, 0);
	is_int(kv_delete_range(db, "", 0, zero, 1, 0), 0, "delete_range [\"\", \"\\0\")");
	get_is(db, NULL, "", 0, NULL, 0, "a range starting at the empty key deletes the empty key");
	kv_put(db, "", 0, "e2", 2, 0);
	get_is(db, NULL, "", 0, "e2", 2, "the empty key can be written again");
}

static void test_snapshots(struct kv_db *db)
{
	const struct kv_snapshot *s1, *s2;

	put(db, "sn-a", "1");
	put(db, "sn-b", "1");
	s1 = kv_snapshot_new(db);
	ok(s1 != NULL, "kv_snapshot_new");
	put(db, "sn-a", "2");
	kv_delete(db, "sn-b", 4, 0);
	put(db, "sn-c", "2");
	s2 = kv_snapshot_new(db);
	kv_delete_range(db, "sn-", 3, "sn-z", 4, 0);
	get_str_is(db, s1, "sn-a", "1",
		   "a snapshot sees the value from its time, not a later overwrite");
	get_str_is(db, s1, "sn-b", "1", "a snapshot sees a key deleted later");
	get_str_is(db, s1, "sn-c", NULL, "a snapshot does not see a key written later");
	get_str_is(db, s2, "sn-a", "2", "a second snapshot sees the overwrite");
	get_str_is(db, s2, "sn-b", NULL, "a second snapshot sees the delete");
	get_str_is(db, s2, "sn-c", "2", "a second snapshot sees the later key");
	get_str_is(db, NULL, "sn-a", NULL, "the latest state sees the range delete");
	is_int(kv_flush(db), 0, "flush with snapshots held");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "compact everything with snapshots held");
	get_str_is(db, s1, "sn-a", "1",
		   "after flush and compaction the snapshot still sees its value");
	get_str_is(db, s1, "sn-b", "1",
		   "after compaction a snapshot still sees a key deleted later");
	get_str_is(db, s2, "sn-c", "2",
		   "after compaction the range delete does not hide from an older snapshot");
	scan_is(scan_range(db, s1, "sn-", "sn-z"), "sn-a=1|sn-b=1", "a scan at the first snapshot");
	scan_is(scan_range(db, s2, "sn-", "sn-z"), "sn-a=2|sn-c=2",
		"a scan at the second snapshot");
	scan_is(scan_range(db, NULL, "sn-", "sn-z"), "", "a scan of the latest state");
	kv_snapshot_release(db, s1);
	kv_snapshot_release(db, s2);
	get_str_is(db, NULL, "sn-c", NULL, "after release the latest state is unchanged");
}

static void test_iter(struct kv_db *db)
{
	struct kv_read_options ro = { 0 };
	struct kv_iter *it;
	size_t kl, vl;
	const char *k;

	kv_delete_range(db, "", 0, "\xff\xff\xff\xff", 4, 0);
	scan_is(scan_all(db, NULL, 1, 0), "", "after deleting everything a scan is empty");
	put(db, "i-b", "2");
	put(db, "i-d", "4");
	put(db, "i-a", "1");
	put(db, "i-c", "3");
	put(db, "i-e", "5");
	kv_put(db, "i-c\0", 4, "3z", 2, 0);
	kv_delete(db, "i-e", 3, 0);

	scan_is(scan_all(db, NULL, 1, 1), "i-a=1|i-b=2|i-c=3|i-c\\x00=3z|i-d=4",
		"a forward scan gives every live key in order with its value");
	scan_is(scan_all(db, NULL, -1, 1), "i-d=4|i-c\\x00=3z|i-c=3|i-b=2|i-a=1",
		"a backward scan gives the same keys in reverse");

	it = kv_iter_new(db, &ro);
	ok(it != NULL, "kv_iter_new");
	is_int(kv_iter_valid(it), 0, "a new iterator is not positioned");
	put(db, "i-bb", "later");
	kv_iter_seek(it, "i-b", 3);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-b", 3), "seek to an existing key lands on it");
	kv_iter_next(it);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-c", 3),
	   "an iterator does not see a key written after it was created");
	kv_iter_seek(it, "i-bz", 4);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-c", 3), "seek between keys lands on the next key");
	kv_iter_prev(it);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-b", 3), "prev after seek moves back one key");
	kv_iter_next(it);
	kv_iter_next(it);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 4 && !memcmp(k, "i-c\0", 4), "next after prev moves forward again");
	{
		const char *v = kv_iter_value(it, &vl);
		ok(vl == 2 && !memcmp(v, "3z", 2),
		   "kv_iter_value gives the value of the current key");
	}
	kv_iter_seek_for_prev(it, "i-c", 3);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-c", 3), "seek_for_prev to an existing key lands on it");
	kv_iter_seek_for_prev(it, "i-ca", 4);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 4 && !memcmp(k, "i-c\0", 4),
	   "seek_for_prev between keys lands on the previous key");
	kv_iter_seek_for_prev(it, "i-", 2);
	is_int(kv_iter_valid(it), 0, "seek_for_prev before the first key is not valid");
	kv_iter_seek(it, "i-e", 3);
	is_int(kv_iter_valid(it), 0, "seek past the last key is not valid");
	kv_iter_seek_last(it);
	kv_iter_next(it);
	is_int(kv_iter_valid(it), 0, "next from the last key is not valid");
	kv_iter_seek_first(it);
	kv_iter_prev(it);
	is_int(kv_iter_valid(it), 0, "prev from the first key is not valid");
	is_int(kv_iter_status(it), 0, "a healthy iterator has status 0");
	kv_iter_free(it);

	/* bounds */
	ro.lower = "i-b";
	ro.lower_len = 3;
	ro.upper = "i-d";
	ro.upper_len = 3;
	it = kv_iter_new(db, &ro);
	kv_iter_seek_first(it);
	scan_is(walk(it, 1, 0), "i-b|i-bb|i-c|i-c\\x00", "bounds: lower included, upper excluded");
	kv_iter_seek_last(it);
	scan_is(walk(it, -1, 0), "i-c\\x00|i-c|i-bb|i-b", "bounds backward from seek_last");
	kv_iter_seek(it, "i-a", 3);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 3 && !memcmp(k, "i-b", 3),
	   "seek below the lower bound lands on the first key in bounds");
	kv_iter_seek(it, "i-d", 3);
	is_int(kv_iter_valid(it), 0, "seek to the upper bound is not valid");
	kv_iter_seek_for_prev(it, "i-z", 3);
	k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
	ok(k && kl == 4 && !memcmp(k, "i-c\0", 4),
	   "seek_for_prev above the upper bound lands on the last key in bounds");
	kv_iter_free(it);
}

static void test_prefix(struct kv_db *db)
{
	const char *keys[] = { "p", "pa", "pa\xff", "pa\xff\xff", "pa\xff\xff\x01", "pb", "pb\x01",
			       "\xff", "\xff\xff", "\xff\xff\xff", "\xff\xfe\xff" };
	size_t i;

	kv_delete_range(db, "", 0, "\xff\xff\xff\xff\xff", 5, 0);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(db, keys[i], "v");
	scan_is(scan_prefix(db, "pa", 2, 1), "pa|pa\\xff|pa\\xff\\xff|pa\\xff\\xff\\x01",
		"prefix pa: every key that starts with pa and no other");
	scan_is(scan_prefix(db, "pa", 2, -1), "pa\\xff\\xff\\x01|pa\\xff\\xff|pa\\xff|pa",
		"prefix pa backward from seek_last");
	scan_is(scan_prefix(db, "pa\xff", 3, 1), "pa\\xff|pa\\xff\\xff|pa\\xff\\xff\\x01",
		"a prefix ending in 0xff stops before pb");
	scan_is(scan_prefix(db, "pa\xff", 3, -1), "pa\\xff\\xff\\x01|pa\\xff\\xff|pa\\xff",
		"a prefix ending in 0xff, backward");
	scan_is(scan_prefix(db, "\xff\xff", 2, 1), "\\xff\\xff|\\xff\\xff\\xff",
		"a prefix of only 0xff bytes reaches the end of the key space");
	scan_is(scan_prefix(db, "\xff\xff", 2, -1), "\\xff\\xff\\xff|\\xff\\xff",
		"a prefix of only 0xff bytes, backward");
	scan_is(scan_prefix(db, "\xff", 1, 1), "\\xff|\\xff\\xfe\\xff|\\xff\\xff|\\xff\\xff\\xff",
		"prefix 0xff");
	scan_is(scan_prefix(db, "pc", 2, 1), "", "a prefix no key has gives nothing");
	scan_is(scan_prefix(db, "", 0, 1),
		"p|pa|pa\\xff|pa\\xff\\xff|pa\\xff\\xff\\x01|pb|pb\\x01|"
		"\\xff|\\xff\\xfe\\xff|\\xff\\xff|\\xff\\xff\\xff",
		"the empty prefix gives every key");
	{
		struct kv_iter *it = kv_iter_new_prefix(db, NULL, "pa", 2);
		size_t kl;
		const char *k;

		kv_iter_seek(it, "pa\xff\x05", 4);
		k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		ok(k && kl == 4 && !memcmp(k, "pa\xff\xff", 4), "seek inside a prefix iterator");
		kv_iter_seek(it, "pb", 2);
		is_int(kv_iter_valid(it), 0, "seek past the prefix is not valid");
		kv_iter_seek_for_prev(it, "pz", 2);
		k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		ok(k && kl == 5 && !memcmp(k, "pa\xff\xff\x01", 5),
		   "seek_for_prev past the prefix lands on the last key of the prefix");
		kv_iter_free(it);
	}
}

static char *everything;

static void test_persistence(struct kv_db **dbp, const char *dir, const struct kv_options *o)
{
	char *now;
	int r;

	everything = scan_all(*dbp, NULL, 1, 1);
	is_int(kv_close(*dbp), 0, "close");
	*dbp = NULL;
	r = kv_open(dir, o, dbp);
	is_int(r, 0, "reopen");
	if (r < 0)
		return;
	now = scan_all(*dbp, NULL, 1, 1);
	is_str(now, everything, "reopen keeps every key and value (from the log)");
	free(now);
	get_is(*dbp, NULL, "", 0, NULL, 0, "reopen keeps range deletes");

	is_int(kv_flush(*dbp), 0, "kv_flush");
	ok(count_files(dir, ".sst") >= 1, "after a flush the directory holds an .sst");
	now = scan_all(*dbp, NULL, 1, 1);
	is_str(now, everything, "flush keeps every key and value");
	free(now);
	is_int(kv_compact_range(*dbp, "p", 1, "pb", 2), 0, "kv_compact_range over a part");
	is_int(kv_compact_range(*dbp, NULL, 0, NULL, 0), 0, "kv_compact_range over everything");
	now = scan_all(*dbp, NULL, 1, 1);
	is_str(now, everything, "compaction keeps every key and value");
	free(now);
	kv_close(*dbp);
	*dbp = NULL;
	r = kv_open(dir, o, dbp);
	is_int(r, 0, "reopen after compaction");
	if (r < 0)
		return;
	now = scan_all(*dbp, NULL, 1, 1);
	is_str(now, everything, "reopen after flush and compaction keeps everything");
	free(now);
	get_str_is(*dbp, NULL, "pa", "v", "after reopen, kv_get finds a key in a table");
	get_str_is(*dbp, NULL, "i-a", NULL, "and does not find a deleted one");
	put(*dbp, "pa", "v2");
	get_str_is(*dbp, NULL, "pa", "v2", "an overwrite after such a reopen is visible");
	is_int(kv_flush(*dbp), 0, "flush the overwrite");
	is_int(kv_compact_range(*dbp, NULL, 0, NULL, 0), 0, "compact it with the older value");
	get_str_is(*dbp, NULL, "pa", "v2", "after compaction the overwrite still wins");
	put(*dbp, "pa-new", "n");
	is_int(kv_flush(*dbp), 0, "flush a new key");
	kv_close(*dbp);
	*dbp = NULL;
	r = kv_open(dir, o, dbp);
	is_int(r, 0, "reopen with everything in tables and an empty log");
	if (r < 0)
		return;
	get_str_is(*dbp, NULL, "pa", "v2", "kv_get finds the overwrite in a table after reopen");
	get_str_is(*dbp, NULL, "pa-new", "n", "kv_get finds the newest key in a table, too");
	kv_delete(*dbp, "pa-new", 6, 0);
	put(*dbp, "pa", "v");
	get_str_is(*dbp, NULL, "pa-new", NULL, "a delete after that reopen hides the key");
	get_str_is(*dbp, NULL, "pa", "v", "an overwrite after that reopen wins");
	kv_flush(*dbp);
	kv_compact_range(*dbp, NULL, 0, NULL, 0);
	get_str_is(*dbp, NULL, "pa-new", NULL, "and still hides it after compaction");
	get_str_is(*dbp, NULL, "pa", "v", "and still wins after compaction");
}

static void test_many(struct kv_db *db, const char *dir)
{
	int n = (int)(20000 * test_scale()), i, bad = 0;

	if (n < 10)
		n = 10;
	char k[32], v[64];
	struct kv_stats st0, st1;
	int reported = 0;
	char *p;

	kv_get_stats(db, &st0);
	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "m%08d", i * 7919 % n);
		snprintf(v, sizeof(v), "value-%d-%0*d", i * 7919 % n, 20, i);
		if (kv_put(db, k, strlen(k), v, strlen(v), 0) < 0)
			bad++;
	}
	is_int(bad, 0, "%d puts succeed", n);
	for (i = 0; i < n; i += 3) {
		snprintf(k, sizeof(k), "m%08d", i);
		kv_delete(db, k, strlen(k), 0);
	}
	kv_flush(db);
	kv_compact_range(db, NULL, 0, NULL, 0);
	for (i = 0; i < n; i += 2) {
		snprintf(k, sizeof(k), "m%08d", i);
		snprintf(v, sizeof(v), "again-%d", i);
		kv_put(db, k, strlen(k), v, strlen(v), 0);
	}
	kv_flush(db);
	kv_compact_range(db, NULL, 0, NULL, 0);
	for (i = 0, bad = 0; i < n; i++) {
		char *got = NULL;
		size_t gl = 0;
		int r;

		snprintf(k, sizeof(k), "m%08d", i);
		if (i % 2 == 0)
			snprintf(v, sizeof(v), "again-%d", i);
		else if (i % 3 == 0)
			v[0] = 0;
		else
			snprintf(v, sizeof(v), "value-%d-",
				 i);  /* prefix; the tail is checked below */
		r = kv_get(db, NULL, k, strlen(k), &got, &gl);
		if (i % 2 != 0 && i % 3 == 0) {
			if (r != -ENOENT)
				bad++;
		} else if (r != 0 || gl < strlen(v) || memcmp(got, v, strlen(v)) ||
			   (i % 2 == 0 && gl != strlen(v))) {
			bad++;
		}
		if (bad == 1 && !reported) {
			diag("first bad key %s: r=%d, value %s", k, r,
			     r == 0 ? show(got, gl) : "-");
			reported = 1;
		}
		free(got);
	}
	is_int(bad, 0, "after deletes, overwrites, flushes and compactions every key reads right");
	kv_get_stats(db, &st1);
	ok(st1.bytes_written_wal > st0.bytes_written_wal, "stats: bytes_written_wal moves");
	ok(st1.flushes > st0.flushes, "stats: flushes moves");
	ok(st1.bytes_flushed > st0.bytes_flushed, "stats: bytes_flushed moves");
	ok(st1.compactions > st0.compactions, "stats: compactions moves");
	ok(st1.bytes_compacted_written > st0.bytes_compacted_written,
	   "stats: bytes_compacted_written moves");
	ok(st1.disk_bytes > 0, "stats: disk_bytes is positive");
	{
		int files = 0;
		for (i = 0; i < 8; i++)
			files += st1.files_per_level[i];
		is_int(files, count_files(dir, ".sst"),
		       "stats: files_per_level adds up to the .sst files");
	}
	p = kv_property(db, "stats");
	ok(p != NULL && strlen(p) > 0, "kv_property(stats) gives text");
	free(p);
	p = kv_property(db, "levels");
	ok(p != NULL, "kv_property(levels) gives text");
	free(p);
	p = kv_property(db, "sstables");
	ok(p != NULL, "kv_property(sstables) gives text");
	free(p);
	p = kv_property(db, "no-such-property");
	ok(p == NULL, "kv_property of an unknown name gives NULL");
	free(p);
}

static int reports;

static void count_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	(void)arg;
	reports++;
	diag("verify: %s at %llu: %s", file, (unsigned long long)off, msg);
}

struct writer {
	struct kv_db *db;
	int id, n, failures;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char k[32], v[32];

	for (int i = 0; i < w->n; i++) {
		snprintf(k, sizeof(k), "t%d-%06d", w->id, i);
		snprintf(v, sizeof(v), "%d:%d", w->id, i);
		if (kv_put(w->db, k, strlen(k), v, strlen(v), i % 50 == 0 ? KV_SYNC : 0) < 0)
			w->failures++;
		if (i % 7 == 0) {
			char *got = NULL;
			size_t gl;
			if (kv_get(w->db, NULL, k, strlen(k), &got, &gl) != 0 || gl != strlen(v) ||
			    memcmp(got, v, gl))
				w->failures++;
			free(got);
		}
	}
	return NULL;
}

static void test_threads(struct kv_db *db)
{
	enum { NT = 4 };
	struct writer w[NT];
	pthread_t th[NT];
	int n = (int)(5000 * test_scale()), fails = 0, missing = 0;

	for (int t = 0; t < NT; t++) {
		w[t] = (struct writer){ db, t, n, 0 };
		pthread_create(&th[t], NULL, writer_main, &w[t]);
	}
	for (int t = 0; t < NT; t++) {
		pthread_join(th[t], NULL);
		fails += w[t].failures;
	}
	is_int(fails, 0, "%d threads writing and reading at once see no failure", NT);
	for (int t = 0; t < NT; t++) {
		for (int i = 0; i < n; i++) {
			char k[32], v[32], *got = NULL;
			size_t gl;

			snprintf(k, sizeof(k), "t%d-%06d", t, i);
			snprintf(v, sizeof(v), "%d:%d", t, i);
			if (kv_get(db, NULL, k, strlen(k), &got, &gl) != 0 || gl != strlen(v) ||
			    memcmp(got, v, gl))
				missing++;
			free(got);
		}
	}
	is_int(missing, 0, "every key written by every thread is there");
}

/* A compaction filter that drops values starting with "drop". */
static int filter_starts, filter_finishes;

static void *cf_start(void *arg)
{
	filter_starts++;
	return arg;
}

static int cf_filter(void *state, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)state; (void)key; (void)klen;
	return vlen >= 4 && memcmp(val, "drop", 4) == 0;
}

static void cf_finish(void *state)
{
	(void)state;
	filter_finishes++;
}

static void test_compaction_filter(void)
{
	struct kv_compaction_filter cf = { cf_start, cf_filter, cf_finish, NULL };
	struct kv_options o;
	struct kv_db *db;
	char *dir = dbpath("filter");
	int r;

	kv_options_init(&o);
	o.compaction_filter = &cf;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "open with a compaction filter");
	if (r < 0)
		return;
	put(db, "f1", "keep");
	put(db, "f2", "drop me");
	put(db, "f3", "keep");
	kv_flush(db);
	put(db, "f3", "drop too");
	put(db, "f4", "keep");
	kv_flush(db);
	get_str_is(db, NULL, "f2", "drop me",
		   "before compaction the filter has not hidden anything");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "compact with the filter");
	ok(filter_starts >= 1, "the filter's start was called");
	is_int(filter_finishes, filter_starts, "finish is called once per start");
	scan_is(scan_all(db, NULL, 1, 1), "f1=keep|f4=keep",
		"the filter dropped exactly the entries it chose");
	get_str_is(db, NULL, "f3", NULL,
		   "a key whose newest value was filtered is absent, not its older value");
	kv_close(db);
	free(dir);
}

int main(void)
{
	struct kv_options o;
	struct kv_db *db = NULL;
	char *dir;
	int r;

	plan(210);
	make_tmpdir("kv_db");
	diag("directory %s, scale %.3g", tmpdir, test_scale());
	test_options();
	test_open();

	dir = dbpath("main");
	small_options(&o);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "open the main test database");
	if (r < 0) {
		diag("kv_open: %s", kv_strerror(r));
		goto out;
	}
	test_point_ops(db);
	test_batch(db);
	test_delete_range(db);
	test_snapshots(db);
	test_iter(db);
	test_prefix(db);
	test_persistence(&db, dir, &o);
	if (!db)
		goto out;
	test_many(db, dir);
	reports = 0;
	is_int(kv_verify(db, count_report, NULL), 0, "kv_verify of a healthy database returns 0");
	is_int(reports, 0, "kv_verify of a healthy database reports nothing");
	test_threads(db);
	is_int(kv_close(db), 0, "close after all that");
	test_compaction_filter();

	is_int(kv_destroy(dir, NULL), 0, "kv_destroy");
	{
		char **names;
		size_t n = 0;
		r = env_list_dir(env_posix(), dir, &names, &n);
		ok(r == -ENOENT || (r == 0 && n == 0), "kv_destroy leaves no file behind");
		if (r == 0)
			env_free_list(names, n);
	}
	o.create_if_missing = 0;
	is_int(kv_open(dir, &o, &db), -ENOENT,
	       "a destroyed database cannot be opened without create");
out:
	free(dir);
	free(everything);
	rm_rf(tmpdir);
	return exit_status();
}
