/*
 * kv_env.c -- tests of the engine's I/O environments (engine/env.h).
 *
 * The POSIX environment must behave as the engine expects of a filesystem:
 * appends land in order, positional reads return exactly what is there,
 * renames replace, listings hold every name and nothing else, and the
 * database lock excludes both other processes and a second holder inside
 * this process (which plain fcntl locks do not).
 *
 * Its log files (open_log) are written through a memory map over space
 * reserved ahead, with big appends through pwrite: whatever the sizes of the
 * appends, the file must hold exactly their bytes in order, followed (only
 * until it is closed) by nothing but zeros.  Its read maps (map) must show a
 * file's bytes and refuse to map past its end.
 *
 * The fault environment must fail exactly the calls it is told to, cut the
 * power after a counted number of write calls, and afterwards leave on disk
 * what a real disk would hold: only synced bytes, only names whose directory
 * was synced.  The crash tests (kv_crash.c) trust all of this, so it is
 * checked here first, call by call.
 */
#include "env.h"
#include "kv.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A path inside the test's directory, in a rotating static buffer. */
static const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *tpath(const char *fmt, ...)
{
	static char bufs[8][1024];
	static int next;
	char name[256];
	va_list ap;
	char *b = bufs[next++ % 8];

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

/* Create path through env with data; sync it if do_sync; close. */
static int put_file(struct kv_env *env, const char *path, const char *data, size_t len, int do_sync)
{
	struct env_file *f;
	int r = env_open_append(env, path, &f);

	if (r < 0)
		return r;
	r = env_append(f, data, len);
	if (r == 0 && do_sync)
		r = env_sync(f);
	env_close(f);
	return r;
}

/* The bytes of path as the real filesystem holds them (NULL if unreadable). */
static char *slurp(const char *path, size_t *len)
{
	char *data;

	if (env_read_file(env_posix(), path, &data, len) < 0)
		return NULL;
	return data;
}

static int file_is(const char *path, const char *want)
{
	size_t len;
	char *got = slurp(path, &len);
	int r = got && len == strlen(want) && memcmp(got, want, len) == 0;

	if (!r)
		diag("%s holds %s%.*s%s, want \"%s\"", path, got ? "\"" : "", got ? (int)len : 6,
		     got ? got : "(none)", got ? "\"" : "", want);
	free(got);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------------ POSIX */

static void test_posix_files(void)
{
	struct kv_env *env = env_posix();
	struct env_file *f;
	char buf[64];
	size_t got;
	uint64_t size;
	int r;

	ok(env != NULL, "env_posix returns an environment");
	is_int(env_mkdir(env, tpath("d")), 0, "mkdir creates a directory");
	is_int(env_mkdir(env, tpath("d")), 0, "mkdir of an existing directory is not an error");
	is_int(env_sync_dir(env, tmpdir), 0, "sync_dir of the parent succeeds");

	is_int(env_open_append(env, tpath("d/a"), &f), 0, "open_append creates a file");
	is_int(env_append(f, "hello", 5), 0, "append 5 bytes");
	is_int(env_append(f, " world", 6), 0, "append 6 more bytes");
	is_int(env_sync(f), 0, "sync an appended file");
	is_int(env_close(f), 0, "close an appended file");
	is_int(env_exists(env, tpath("d/a")), 1, "exists says 1 for a file that exists");
	is_int(env_exists(env, tpath("d/nothing")), 0, "exists says 0 for a missing file");
	size = 0;
	is_int(env_file_size(env, tpath("d/a"), &size), 0, "file_size succeeds");
	is_int(size, 11, "file_size counts both appends");

	is_int(env_open_read(env, tpath("d/a"), &f), 0, "open_read an existing file");
	got = 99;
	r = env_pread(f, buf, 5, 0, &got);
	ok(r == 0 && got == 5 && memcmp(buf, "hello", 5) == 0,
	   "pread at offset 0 reads the first append");
	r = env_pread(f, buf, sizeof(buf), 6, &got);
	ok(r == 0 && got == 5 && memcmp(buf, "world", 5) == 0,
	   "pread past the end returns only the bytes that exist");
	r = env_pread(f, buf, 4, 11, &got);
	ok(r == 0 && got == 0, "pread exactly at the end reads 0 bytes without error");
	r = env_pread(f, buf, 4, 1000, &got);
	ok(r == 0 && got == 0, "pread beyond the end reads 0 bytes without error");
	is_int(env_read_exact(f, buf, 11, 0), 0, "read_exact of the whole file succeeds");
	is_int(env_read_exact(f, buf, 12, 0), -EIO, "read_exact of more than the file gives -EIO");
	is_int(env_close(f), 0, "close a file opened for reading");

	r = env_open_read(env, tpath("d/nothing"), &f);
	is_int(r, -ENOENT, "open_read of a missing file gives -ENOENT");
	ok(strstr(kv_strerror(r), "d/nothing") != NULL, "the error message names the missing path");
	is_int(env_file_size(env, tpath("d/nothing"), &size), -ENOENT,
	       "file_size of a missing file gives -ENOENT");

	/* open_append truncates an existing file */
	is_int(env_open_append(env, tpath("d/a"), &f), 0, "open_append on an existing file");
	env_close(f);
	is_int(env_file_size(env, tpath("d/a"), &size), 0, "file_size after reopening for append");
	is_int(size, 0, "open_append truncates an existing file");

	/* a large append arrives whole */
	{
		size_t n = 3 * 1024 * 1024 + 17, i;
		char *big = xmalloc(n), *back;
		uint64_t st = 12345;

		for (i = 0; i < n; i++)
			big[i] = (char)rand_next(&st);
		is_int(put_file(env, tpath("d/big"), big, n, 1), 0, "write a 3 MiB file");
		is_int(env_read_file(env, tpath("d/big"), &back, &got), 0, "read_file of 3 MiB");
		is_mem(back, got, big, n, "a 3 MiB file reads back byte for byte");
		free(back);
		free(big);
	}

	/* rename */
	is_int(put_file(env, tpath("d/r1"), "first", 5, 1), 0, "create r1");
	is_int(env_rename(env, tpath("d/r1"), tpath("d/r2")), 0, "rename r1 to r2");
	is_int(env_exists(env, tpath("d/r1")), 0, "after rename the old name is gone");
	ok(file_is(tpath("d/r2"), "first"), "after rename the new name holds the data");
	is_int(put_file(env, tpath("d/r3"), "second", 6, 1), 0, "create r3");
	is_int(env_rename(env, tpath("d/r3"), tpath("d/r2")), 0, "rename r3 over existing r2");
	ok(file_is(tpath("d/r2"), "second"), "rename replaces an existing target");
	is_int(env_rename(env, tpath("d/nothing"), tpath("d/r9")), -ENOENT,
	       "rename of a missing file gives -ENOENT");

	/* unlink */
	is_int(env_unlink(env, tpath("d/r2")), 0, "unlink a file");
	is_int(env_exists(env, tpath("d/r2")), 0, "an unlinked file is gone");
	is_int(env_unlink(env, tpath("d/r2")), -ENOENT, "unlink of a missing file gives -ENOENT");

	/* truncate */
	{
		char data[100];

		for (int i = 0; i < 100; i++)
			data[i] = (char)('a' + i % 26);
		put_file(env, tpath("d/t"), data, 100, 1);
		is_int(env_truncate(env, tpath("d/t"), 40), 0, "truncate to 40 bytes");
		env_file_size(env, tpath("d/t"), &size);
		is_int(size, 40, "file_size after truncate");
		char *back = slurp(tpath("d/t"), &got);
		is_mem(back, got, data, 40, "truncate keeps the first 40 bytes");
		free(back);
	}

	/* read_file / write_file */
	is_int(env_write_file(env, tpath("d/w"), "whole\n", 6, tpath("d")), 0,
	       "write_file with a directory to sync");
	ok(file_is(tpath("d/w"), "whole\n"), "write_file then read_file round-trips");
	is_int(env_write_file(env, tpath("d/e"), "", 0, NULL), 0, "write_file of an empty file");
	ok(file_is(tpath("d/e"), ""), "an empty file reads back empty");
}

static void test_posix_list_dir(void)
{
	struct kv_env *env = env_posix();
	const char *want[] = { "000001.log", "CURRENT", "LOCK", "MANIFEST-000002", "x" };
	char **names = NULL;
	size_t n = 0, i;
	int same = 1;

	env_mkdir(env, tpath("ls"));
	for (i = 0; i < 5; i++)
		put_file(env, tpath("ls/%s", want[i]), "z", 1, 0);
	is_int(env_list_dir(env, tpath("ls"), &names, &n), 0, "list_dir succeeds");
	is_int(n, 5, "list_dir lists every file and neither . nor ..");
	if (n == 5) {
		qsort(names, n, sizeof(*names), cmp_names);
		for (i = 0; i < 5; i++)
			same &= strcmp(names[i], want[i]) == 0;
	} else {
		same = 0;
	}
	ok(same, "list_dir gives exactly the names created");
	env_free_list(names, n);

	env_mkdir(env, tpath("empty"));
	names = NULL;
	n = 99;
	is_int(env_list_dir(env, tpath("empty"), &names, &n), 0, "list_dir of an empty directory");
	is_int(n, 0, "an empty directory lists no names");
	env_free_list(names, n);
	is_int(env_list_dir(env, tpath("no-such-dir"), &names, &n), -ENOENT,
	       "list_dir of a missing directory gives -ENOENT");
}

/*
 * Ask a child process whether someone else holds a write lock on path, with
 * fcntl directly (the child inherits our in-memory lock table, so going
 * through env_lock would not show what the kernel thinks).  1 = held.
 */
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

static void test_posix_lock(void)
{
	struct kv_env *env = env_posix();
	struct env_file *l1 = NULL, *l2 = NULL;
	const char *path;
	int r;

	env_mkdir(env, tpath("lk"));
	path = tpath("lk/LOCK");
	is_int(env_lock(env, path, &l1), 0, "lock a new lock file");
	ok(l1 != NULL, "lock returns a handle");
	is_int(held_by_other_process(path), 1, "the lock is visible to another process");

	r = env_lock(env, path, &l2);
	is_int(r, -EBUSY, "a second lock of the same file in the same process gives -EBUSY");
	ok(strstr(kv_strerror(r), "LOCK") != NULL, "the -EBUSY message names the lock file");
	is_int(held_by_other_process(path), 1,
	       "a refused second lock in this process does not release the first (fcntl pitfall)");
	r = env_lock(env, tpath("lk/../lk/./LOCK"), &l2);
	is_int(r, -EBUSY, "locking the same file through another path spelling gives -EBUSY");
	is_int(held_by_other_process(path), 1, "the lock is still held after two refused attempts");

	/* another file is independent */
	is_int(env_lock(env, tpath("lk/OTHER"), &l2), 0, "a different lock file can be locked");
	is_int(env_unlock(l2), 0, "unlock the other lock");
	is_int(held_by_other_process(path), 1, "unlocking another file keeps the first lock");

	is_int(env_unlock(l1), 0, "unlock");
	is_int(held_by_other_process(path), 0, "after unlock another process can lock");
	is_int(env_lock(env, path, &l1), 0, "after unlock the same process can lock again");
	is_int(env_unlock(l1), 0, "unlock again");

	/* a lock held by another process */
	{
		int up[2], down[2];
		char c = 0;
		pid_t pid;

		if (pipe(up) < 0 || pipe(down) < 0) {
			ok(0, "pipe");
			return;
		}
		pid = fork();
		if (pid == 0) {
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			int fd = open(path, O_RDWR);
			char k = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 'L' : 'E';

			if (write(up[1], &k, 1) != 1 || read(down[0], &k, 1) < 0)
				_exit(1);
			_exit(0);
		}
		if (read(up[0], &c, 1) != 1)
			c = 0;
		is_int(c, 'L', "a child process takes the lock");
		l2 = NULL;
		is_int(env_lock(env, path, &l2), -EBUSY,
		       "a lock held by another process gives -EBUSY");
		if (l2)
			env_unlock(l2);
		if (write(down[1], &c, 1) != 1)
			diag("could not signal the child");
		waitpid(pid, NULL, 0);
		close(up[0]); close(up[1]); close(down[0]); close(down[1]);
		is_int(env_lock(env, path, &l1), 0,
		       "once the other process exits the lock is free");
		env_unlock(l1);
	}
}

/* ------------------------------------------------------------------ POSIX logs */

/*
 * 1 if path holds want[0..n) and after it nothing but zeros (space reserved
 * ahead for a log); *len gets the file's length.  Read through a handle of
 * its own (stat, open, pread), not the writer's.
 */
static int holds_then_zeros(const char *path, const char *want, size_t n, size_t *len)
{
	char *got = slurp(path, len);
	int r = 1;

	if (!got) {
		diag("%s cannot be read", path);
		return 0;
	}
	if (*len < n) {
		diag("%s is %zu bytes, shorter than the %zu appended", path, *len, n);
		r = 0;
	}
	for (size_t i = 0; r && i < n; i++) {
		if (got[i] != want[i]) {
			diag("%s: byte %zu is %#x, the append put %#x there", path, i,
			     (unsigned char)got[i], (unsigned char)want[i]);
			r = 0;
		}
	}
	for (size_t i = n; r && i < *len; i++) {
		if (got[i]) {
			diag("%s: byte %zu, past the %zu appended, is %#x and not zero", path, i, n,
			     (unsigned char)got[i]);
			r = 0;
		}
	}
	free(got);
	return r;
}

/* A log being written in the test: every append takes the next bytes of data. */
struct tlog {
	struct env_file *f;
	const char *data;
	size_t size, cap;     /* bytes appended; bytes of data */
	long appends, failed; /* calls, and those that did not return 0 */
};

static void tlog_append(struct tlog *t, size_t n)
{
	if (t->size + n > t->cap)
		abort();   /* the test's own mistake: data is too short */
	if (env_append(t->f, t->data + t->size, n) != 0)
		t->failed++;
	t->size += n;
	t->appends++;
}

/* After close: the file holds exactly the bytes appended, no more. */
static void log_is_exact(const char *path, const struct tlog *t, const char *what)
{
	uint64_t size = 0;
	size_t got;
	char *back;

	is_int(env_file_size(env_posix(), path, &size), 0, "file_size of %s after close", what);
	is_int(size, t->size, "after close %s is exactly the %zu bytes appended", what, t->size);
	back = slurp(path, &got);
	is_mem(back, got, t->data, t->size,
	       "after close %s holds the concatenation of its %ld appends", what, t->appends);
	free(back);
}


/* Wait up to 10 s for maps_at(path, off) to be want; returns what it last was. */
static int wait_maps_at(const char *path, int64_t off, int want)
{
	int n = maps_at(path, off);

	for (int i = 0; i < 1000 && n != want; i++) {
		usleep(10000);
		n = maps_at(path, off);
	}
	return n;
}

/*
 * A log's next window is mapped by the helper thread once the appends are
 * half way through the current one, and the appends that reach it use
 * that map; a window the appends have left is unmapped; a close with a
 * next window prepared leaves no map behind.  The first window is 64 KiB,
 * the second 64 KiB from offset 64 KiB.
 */
static void test_log_next_window(void)
{
	struct kv_env *env = env_posix();
	const size_t cap = 1u << 20;
	char *data = xmalloc(cap);
	struct tlog t = { .data = data, .cap = cap };
	const char *path = tpath("log/next");
	uint64_t rs = 77;
	size_t len;

	for (size_t i = 0; i < cap; i++)
		data[i] = (char)(rand_next(&rs) | 1);
	env_mkdir(env, tpath("log"));
	is_int(env_open_log(env, path, &t.f), 0, "open a log for the next-window test");
	while (t.size < (30u << 10))
		tlog_append(&t, 1000);
	is_int(maps_at(path, 64u << 10), 0, "below half of the first window no next one is mapped");
	for (int i = 0; i < 3; i++)
		tlog_append(&t, 1000);   /* through the map: under LOG_DIRECT_MIN */
	is_int(wait_maps_at(path, 64u << 10, 1), 1,
	       "past half of the first window the next one (offset 64 KiB) is mapped ahead");
	is_int(maps_at(path, 0), 1, "the first window is still mapped");
	while (t.size < (70u << 10))
		tlog_append(&t, 1000);
	is_int(t.failed, 0, "appends across the window's end succeed");
	is_int(wait_maps_at(path, 0, 0), 0, "the window the appends left is unmapped");
	is_int(maps_at(path, 64u << 10), 1, "the appends go on in the window mapped ahead");
	ok(holds_then_zeros(path, data, t.size, &len),
	   "the log holds the appends in order across the prepared window, then only zeros");
	while (t.size < (100u << 10))
		tlog_append(&t, 1000);
	is_int(wait_maps_at(path, 128u << 10, 1), 1, "and the window after it is mapped ahead too");
	is_int(env_close(t.f), 0, "close the log with a next window mapped");
	is_int(maps_of(path), 0, "a closed log leaves neither its window nor the next one mapped");
	log_is_exact(path, &t, "a log written across prepared windows");

	/*
	 * After an append big enough to go through pwrite, a window is as long
	 * as the file and ends mid-page: the next one still begins on a page
	 * (1000 + 300000 bytes: a window of 301000 bytes from offset 299008,
	 * ending at 600008, so the next from 598016).
	 */
	t.size = 0;
	t.appends = 0;
	is_int(env_open_log(env, path, &t.f), 0, "open the log again");
	tlog_append(&t, 1000);
	tlog_append(&t, 300000);
	while (t.size < 460000)
		tlog_append(&t, 1000);
	is_int(wait_maps_at(path, 598016, 1), 1, "a window that ends mid-page has its next one "
	       "mapped ahead from the page it ends in");
	while (t.size < 700000)
		tlog_append(&t, 1000);
	is_int(t.failed, 0, "appends across it succeed");
	is_int(env_close(t.f), 0, "close it");
	log_is_exact(path, &t, "a log with a window ending mid-page");
	free(data);
}

static void test_posix_log(void)
{
	struct kv_env *env = env_posix();
	/*
	 * The POSIX log's map window starts at 64 KiB and doubles with the file
	 * up to 4 MiB, so it is remapped at each of these offsets when the
	 * appends are small (appends of 1 KiB or more go through pwrite, and
	 * one past the window's end moves the windows).
	 */
	static const size_t marks[] = { 64u << 10, 128u << 10, 256u << 10, 512u << 10, 1u << 20,
					 2u << 20, 4u << 20, 8u << 20, 12u << 20 };
	/* around the 1 KiB at which appends go through pwrite, and beyond a window */
	static const size_t bigs[] = { 1024, 1023, 1025, (300u << 10) + 7,
				       (1u << 20) + 3, (4u << 20) + 1, 256u << 10 };
	const size_t cap = 24u << 20;
	char *data = xmalloc(cap);
	struct tlog t = { .data = data, .cap = cap };
	const char *path = tpath("log/a");
	uint64_t rs = 2024, fsize = 0;
	size_t len;
	int good;

	for (size_t i = 0; i < cap; i += 8) {
		uint64_t v = rand_next(&rs);
		memcpy(data + i, &v, 8);
	}
	env_mkdir(env, tpath("log"));

	is_int(env_open_log(env, path, &t.f), 0, "open_log creates a file");
	ok(holds_then_zeros(path, data, 0, &len), "a new log holds nothing but zeros");
	tlog_append(&t, 1);
	good = holds_then_zeros(path, data, 1, &len);
	ok(good, "after a 1-byte append the log holds that byte, then only zeros (%zu bytes)", len);
	tlog_append(&t, 0);
	tlog_append(&t, 7);
	ok(holds_then_zeros(path, data, 8, &len), "an empty append adds nothing");

	/*
	 * small appends (through the map: under 1 KiB) up to each mark, then
	 * one that ends on it or straddles it
	 */
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
		size_t mark = marks[m];

		while (t.size + 800 < mark) {
			size_t n = 1 + (size_t)(rand_next(&rs) % 1000);
			if (t.size + n > mark - 800)
				n = mark - 800 - t.size;
			tlog_append(&t, n);
		}
		if (m % 2 == 0) {
			tlog_append(&t, mark - t.size);   /* ends exactly on the mark */
			tlog_append(&t, 1);
		} else {
			tlog_append(&t, 1000);            /* 800 bytes before it, 200 after */
		}
		if (m == 0)
			ok(holds_then_zeros(path, data, t.size, &len),
			   "after an append that ends at 64 KiB and one past it, the log holds "
			   "both, then only zeros");
		if (m == 1)
			ok(holds_then_zeros(path, data, t.size, &len),
			   "after an append that straddles 128 KiB, the log holds it whole");
		if (m == 4)
			is_int(env_sync(t.f), 0, "sync a log at 1 MiB, in the middle of a window");
	}
	is_int(t.failed, 0, "%ld appends of 0 to 1000 bytes, across every window up to 12 MiB, "
	       "succeed", t.appends);
	is_int(env_file_size(env, path, &fsize), 0, "file_size of a log being written");
	ok(fsize >= t.size, "a log being written is at least as long as what was appended "
	   "(%llu >= %zu)", (unsigned long long)fsize, t.size);
	good = holds_then_zeros(path, data, t.size, &len);
	ok(good, "before close the log holds the %zu bytes appended, then only zeros (%zu bytes in "
	   "all)", t.size, len);

	/* appends of 1 KiB and more (pwrite) among small ones (through the map) */
	for (size_t i = 0; i < sizeof(bigs) / sizeof(bigs[0]); i++) {
		tlog_append(&t, bigs[i]);
		for (int j = 0; j < 20; j++)
			tlog_append(&t, 1 + (size_t)(rand_next(&rs) % 2000));
	}
	is_int(t.failed, 0, "appends of 1 KiB - 1 to 4 MiB + 1 among small ones succeed");
	tlog_append(&t, (size_t)300 << 10);
	is_int(env_append(t.f, "", 0), 0, "an empty append right after a pwrite-sized one succeeds");
	ok(holds_then_zeros(path, data, t.size, &len),
	   "big and small appends mixed: the log holds them all in order, then only zeros");
	is_int(env_sync(t.f), 0, "sync a log after big appends");
	ok(holds_then_zeros(path, data, t.size, &len), "sync changes none of the log's bytes");
	tlog_append(&t, 5);
	is_int(t.failed, 0, "an append after sync succeeds");
	ok(maps_of(path) >= 1, "a log being appended to is mapped (%d maps)", maps_of(path));
	is_int(env_close(t.f), 0, "close a log");
	/* its windows are unmapped by a helper thread; close waits for it */
	is_int(maps_of(path), 0, "a closed log leaves no map of it behind");
	log_is_exact(path, &t, "a log of small and big appends");

	/* open_log of an existing file starts it afresh */
	is_int(env_open_log(env, path, &t.f), 0, "open_log of an existing file");
	good = holds_then_zeros(path, data, 0, &len);
	ok(good, "open_log drops the old contents at once (%zu bytes left, all zeros)", len);
	is_int(env_append(t.f, "new", 3), 0, "append to the reopened log");
	is_int(env_close(t.f), 0, "close the reopened log");
	ok(file_is(path, "new"), "a log made over an existing file holds only its new appends");

	/* a log whose first append is a big one, and a log of big appends only */
	t = (struct tlog){ .data = data + 1, .cap = cap - 1 };
	path = tpath("log/b");
	is_int(env_open_log(env, path, &t.f), 0, "open_log of a second log");
	tlog_append(&t, (300u << 10) + 1);
	for (int j = 0; j < 100; j++)
		tlog_append(&t, 1 + (size_t)(rand_next(&rs) % 1000));
	ok(t.failed == 0 && holds_then_zeros(path, t.data, t.size, &len),
	   "a big first append, then small ones: the log holds them, then only zeros");
	is_int(env_close(t.f), 0, "close it");
	log_is_exact(path, &t, "a log that began with a big append");

	t = (struct tlog){ .data = data + 2, .cap = cap - 2 };
	path = tpath("log/c");
	is_int(env_open_log(env, path, &t.f), 0, "open_log of a third log");
	tlog_append(&t, 256u << 10);
	tlog_append(&t, (512u << 10) + 9);
	is_int(t.failed, 0, "two big appends succeed");
	is_int(env_close(t.f), 0, "close it");
	log_is_exact(path, &t, "a log of big appends only");

	path = tpath("log/empty");
	is_int(env_open_log(env, path, &t.f), 0, "open_log of a log that will stay empty");
	is_int(env_close(t.f), 0, "close it with no append");
	ok(file_is(path, ""), "a log closed without an append is empty");
	free(data);
}

static void test_posix_map(void)
{
	struct kv_env *env = env_posix();
	const size_t n = 100000;   /* not a whole number of pages */
	char *data = xmalloc(n), buf[16];
	const char *p = NULL, *path = tpath("map/t");
	struct env_file *f, *g;
	uint64_t rs = 99;
	size_t got = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		data[i] = (char)(rand_next(&rs) >> 56);
	env_mkdir(env, tpath("map"));
	put_file(env, path, data, n, 1);

	is_int(env_open_read(env, path, &f), 0, "open_read a file to map");
	is_int(env_map(f, n, &p), 0, "map the whole file");
	ok(p && memcmp(p, data, n) == 0, "the map holds the file's bytes");
	ok(env_pread(f, buf, 16, n - 16, &got) == 0 && got == 16 &&
	   memcmp(buf, data + n - 16, 16) == 0, "pread of a mapped file still works");
	is_int(env_close(f), 0, "close a mapped file");

	is_int(env_open_read(env, path, &f), 0, "open_read it again");
	is_int(env_map(f, 4096 + 5, &p), 0, "map the first 4101 bytes");
	ok(p && memcmp(p, data, 4096 + 5) == 0, "a map of a prefix holds the prefix");
	is_int(env_close(f), 0, "close it");

	is_int(env_open_read(env, path, &g), 0, "open_read it once more");
	r = env_map(g, n + 1, &p);
	ok(r < 0, "a map of one byte more than the file fails (%d)", r);
	ok(strstr(kv_strerror(r), "map/t") != NULL, "the error message names the file: %s",
	   kv_strerror(r));
	ok(env_pread(g, buf, 10, 500, &got) == 0 && got == 10 && memcmp(buf, data + 500, 10) == 0,
	   "after a refused map, pread of the same handle still works");
	ok(env_map(g, 1u << 20, &p) < 0, "a map of far more than the file fails");
	ok(env_map(g, 0, &p) < 0, "a map of 0 bytes fails");
	is_int(env_map(g, n, &p), 0, "after refused maps, a map of the whole file succeeds");
	ok(p && memcmp(p, data, n) == 0, "and holds the file's bytes");
	is_int(env_close(g), 0, "close it");

	put_file(env, tpath("map/empty"), "", 0, 1);
	is_int(env_open_read(env, tpath("map/empty"), &f), 0, "open_read an empty file");
	ok(env_map(f, 1, &p) < 0, "a map of an empty file fails");
	env_close(f);
	free(data);
}

/* ------------------------------------------------------------------ fault */

static void test_fault_passthrough(struct kv_env *fe)
{
	struct env_file *f;
	char buf[16];
	size_t got = 0;
	uint64_t size = 0;

	ok(fe != NULL, "env_fault_new returns an environment");
	is_int(env_fault_is_cut(fe), 0, "a new fault environment has not cut the power");
	is_int(put_file(fe, tpath("f/p"), "abcdef", 6, 1), 0, "write a file through the fault env");
	ok(file_is(tpath("f/p"), "abcdef"), "the bytes reach the base environment");
	is_int(env_open_read(fe, tpath("f/p"), &f), 0, "open_read through the fault env");
	ok(env_pread(f, buf, sizeof(buf), 2, &got) == 0 && got == 4 && memcmp(buf, "cdef", 4) == 0,
	   "pread through the fault env");
	env_close(f);
	is_int(env_file_size(fe, tpath("f/p"), &size), 0, "file_size through the fault env");
	is_int(size, 6, "file_size through the fault env is right");
	is_int(env_exists(fe, tpath("f/p")), 1, "exists through the fault env");
}

static void test_fault_inject(struct kv_env *fe)
{
	struct env_file *f, *g;
	char buf[8];
	size_t got;
	int r;

	/* the n-th append fails, once */
	env_fault_inject(fe, ENV_OP_APPEND, 2, 1, -EIO, NULL);
	env_open_append(fe, tpath("f/inj"), &f);
	is_int(env_append(f, "1", 1), 0, "inject after 2: the first append succeeds");
	is_int(env_append(f, "2", 1), 0, "inject after 2: the second append succeeds");
	is_int(env_append(f, "3", 1), -EIO,
	       "inject after 2: the third append fails with the error");
	is_int(env_append(f, "4", 1), 0, "count 1: the fourth append succeeds again");
	is_int(env_sync(f), 0, "an append fault does not touch sync");
	env_close(f);
	env_fault_clear(fe);
	ok(file_is(tpath("f/inj"), "124"), "a failed append writes nothing");

	/* count < 0: every call from then on */
	env_fault_inject(fe, ENV_OP_APPEND, 1, -1, -ENOSPC, NULL);
	env_open_append(fe, tpath("f/inj2"), &f);
	is_int(env_append(f, "a", 1), 0, "count -1: the first append succeeds");
	is_int(env_append(f, "b", 1), -ENOSPC, "count -1: the second fails with -ENOSPC");
	is_int(env_append(f, "c", 1), -ENOSPC, "count -1: the third fails too");
	is_int(env_append(f, "d", 1), -ENOSPC, "count -1: and the fourth");
	env_fault_clear(fe);
	is_int(env_append(f, "e", 1), 0, "after env_fault_clear appends succeed");
	env_close(f);
	ok(file_is(tpath("f/inj2"), "ae"), "only the successful appends are in the file");

	/* sync faults cover sync and sync_dir, and nothing else */
	env_fault_inject(fe, ENV_OP_SYNC, 0, -1, -EIO, NULL);
	env_open_append(fe, tpath("f/s"), &f);
	is_int(env_append(f, "x", 1), 0, "a sync fault does not touch append");
	is_int(env_sync(f), -EIO, "a sync fault fails sync");
	is_int(env_sync_dir(fe, tpath("f")), -EIO, "a sync fault fails sync_dir");
	env_close(f);
	env_fault_clear(fe);
	is_int(env_sync_dir(fe, tpath("f")), 0, "after clear sync_dir succeeds");

	/* path matching: only matching calls count and fail */
	env_open_append(fe, tpath("f/000001.log"), &f);
	env_open_append(fe, tpath("f/000002.sst"), &g);
	env_fault_inject(fe, ENV_OP_SYNC, 1, 1, -ENOSPC, ".log");
	is_int(env_sync(g), 0, "match .log: syncing an .sst does not fail");
	is_int(env_sync(g), 0, "match .log: syncing an .sst again does not count either");
	is_int(env_sync(f), 0, "match .log: the first .log sync is let through (after 1)");
	is_int(env_sync(g), 0, "match .log: an .sst sync in between still succeeds");
	is_int(env_sync(f), -ENOSPC, "match .log: the second .log sync fails");
	is_int(env_sync(f), 0, "match .log: count 1, so the third .log sync succeeds");
	env_close(f);
	env_close(g);
	env_fault_clear(fe);

	/* opens */
	env_fault_inject(fe, ENV_OP_OPEN, 0, 2, -EIO, NULL);
	f = NULL;
	r = env_open_read(fe, tpath("f/p"), &f);
	is_int(r, -EIO, "an open fault fails open_read");
	if (r == 0)
		env_close(f);
	f = NULL;
	r = env_open_append(fe, tpath("f/o"), &f);
	is_int(r, -EIO, "an open fault fails open_append");
	if (r == 0)
		env_close(f);
	is_int(env_exists(fe, tpath("f/o")), 0, "a failed open_append creates nothing");
	is_int(env_open_read(fe, tpath("f/p"), &f), 0, "after count opens, open succeeds");
	env_fault_clear(fe);

	/* reads */
	env_fault_inject(fe, ENV_OP_READ, 0, 1, -EIO, NULL);
	is_int(env_pread(f, buf, 4, 0, &got), -EIO, "a read fault fails pread");
	is_int(env_pread(f, buf, 4, 0, &got), 0, "the next pread succeeds");
	env_close(f);
	env_fault_clear(fe);

	/* rename and unlink */
	put_file(fe, tpath("f/rn"), "rn", 2, 1);
	env_fault_inject(fe, ENV_OP_RENAME, 0, 1, -EIO, NULL);
	is_int(env_rename(fe, tpath("f/rn"), tpath("f/rn2")), -EIO, "a rename fault fails rename");
	ok(env_exists(fe, tpath("f/rn")) == 1 && env_exists(fe, tpath("f/rn2")) == 0,
	   "a failed rename leaves both names as they were");
	env_fault_clear(fe);
	env_fault_inject(fe, ENV_OP_UNLINK, 0, 1, -EIO, NULL);
	is_int(env_unlink(fe, tpath("f/rn")), -EIO, "an unlink fault fails unlink");
	is_int(env_exists(fe, tpath("f/rn")), 1, "a failed unlink leaves the file");
	is_int(env_unlink(fe, tpath("f/rn")), 0, "the next unlink succeeds");
	env_fault_clear(fe);
}

static void test_fault_counts(struct kv_env *fe)
{
	struct env_file *f;
	char buf[4];
	size_t got;
	long c0, c;

	c0 = env_fault_write_calls(fe);
	env_open_append(fe, tpath("f/cnt"), &f);
	is_int(env_fault_write_calls(fe) - c0, 1, "open_append counts as one write call");
	env_append(f, "ab", 2);
	env_append(f, "cd", 2);
	is_int(env_fault_write_calls(fe) - c0, 3, "each append counts as one write call");
	env_sync(f);
	is_int(env_fault_write_calls(fe) - c0, 4, "sync counts as one write call");
	env_close(f);
	c = env_fault_write_calls(fe);
	env_open_read(fe, tpath("f/cnt"), &f);
	env_pread(f, buf, 4, 0, &got);
	env_close(f);
	env_exists(fe, tpath("f/cnt"));
	is_int(env_fault_write_calls(fe), c, "open_read, pread and exists are not write calls");
	env_rename(fe, tpath("f/cnt"), tpath("f/cnt2"));
	is_int(env_fault_write_calls(fe) - c, 1, "rename counts as one write call");
	env_unlink(fe, tpath("f/cnt2"));
	is_int(env_fault_write_calls(fe) - c, 2, "unlink counts as one write call");
}

static void test_power_cut(struct kv_env *fe)
{
	struct env_file *f, *g;
	char buf[8];
	size_t got;
	int r;

	env_mkdir(env_posix(), tpath("pc"));
	env_sync_dir(env_posix(), tmpdir);
	put_file(env_posix(), tpath("pc/old"), "old", 3, 1);

	env_fault_power_cut_after(fe, 5);
	ok(env_open_append(fe, tpath("pc/a"), &f) == 0,
	   "power cut after 5: call 1 (open_append) succeeds");
	ok(env_sync_dir(fe, tpath("pc")) == 0, "call 2 (sync_dir) succeeds");
	ok(env_append(f, "AAAA", 4) == 0, "call 3 (append) succeeds");
	ok(env_sync(f) == 0, "call 4 (sync) succeeds");
	ok(env_append(f, "BBBB", 4) == 0, "call 5 (append) succeeds");
	is_int(env_fault_is_cut(fe), 0, "no power cut before the sixth write call");
	is_int(env_sync(f), -EIO, "the sixth write call fails with -EIO");
	is_int(env_fault_is_cut(fe), 1, "env_fault_is_cut reports the cut");
	is_int(env_append(f, "C", 1), -EIO, "after the cut appends fail with -EIO");
	is_int(env_open_read(fe, tpath("pc/old"), &g), -EIO,
	       "after the cut open_read fails with -EIO");
	is_int(env_open_append(fe, tpath("pc/b"), &g), -EIO,
	       "after the cut open_append fails with -EIO");
	is_int(env_rename(fe, tpath("pc/old"), tpath("pc/new")), -EIO,
	       "after the cut rename fails");
	is_int(env_unlink(fe, tpath("pc/old")), -EIO, "after the cut unlink fails");
	is_int(env_sync_dir(fe, tpath("pc")), -EIO, "after the cut sync_dir fails");
	env_close(f);

	r = env_fault_drop_unsynced(fe);
	is_int(r, 0, "drop_unsynced after a power cut succeeds");
	is_int(env_fault_is_cut(fe), 0, "after drop_unsynced the power is back");
	ok(file_is(tpath("pc/a"), "AAAA"), "the file keeps exactly its synced bytes");
	ok(file_is(tpath("pc/old"), "old"), "a file the fault env never touched is unchanged");
	is_int(env_exists(env_posix(), tpath("pc/b")), 0,
	       "a create refused by the cut left nothing");
	is_int(put_file(fe, tpath("pc/c"), "c", 1, 1), 0, "the environment works again after drop");

	/* a cut at 0 */
	env_fault_power_cut_after(fe, 0);
	is_int(env_open_append(fe, tpath("pc/d"), &f), -EIO,
	       "power cut after 0: the next write call fails");
	is_int(env_fault_is_cut(fe), 1, "power cut after 0 is reported");
	r = env_fault_drop_unsynced(fe);
	is_int(r, 0, "drop_unsynced");
	env_open_read(fe, tpath("pc/a"), &f);
	ok(f && env_pread(f, buf, 4, 0, &got) == 0 && got == 4, "reads work after the second drop");
	if (f)
		env_close(f);
}

static void test_drop_unsynced(struct kv_env *fe)
{
	struct kv_env *pe = env_posix();
	struct env_file *f;
	char data[150];
	uint64_t size = 999;

	for (int i = 0; i < 150; i++)
		data[i] = (char)(i * 7);

	/* files in one directory: made durable or not by the directory sync */
	pe->ops->mkdir(pe, tpath("du"));
	env_sync_dir(pe, tmpdir);
	put_file(pe, tpath("du/pre"), "pre", 3, 1);
	env_sync_dir(pe, tpath("du"));

	env_open_append(fe, tpath("du/durable"), &f);
	env_append(f, data, 100);
	env_sync(f);
	env_append(f, data + 100, 50);
	env_close(f);
	env_open_append(fe, tpath("du/nodatasync"), &f);
	env_append(f, data, 30);
	env_close(f);
	env_open_append(fe, tpath("du/twice"), &f);
	env_append(f, data, 10);
	env_sync(f);
	env_append(f, data + 10, 20);
	env_sync(f);
	env_append(f, data + 30, 5);
	env_close(f);
	env_sync_dir(fe, tpath("du"));
	put_file(fe, tpath("du/nodirsync"), "lost", 4, 1);

	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced succeeds");
	env_file_size(pe, tpath("du/durable"), &size);
	is_int(size, 100, "a file is truncated to its synced size");
	{
		size_t n;
		char *b = slurp(tpath("du/durable"), &n);
		is_mem(b, n, data, 100, "the synced bytes are intact");
		free(b);
		b = slurp(tpath("du/twice"), &n);
		is_mem(b, n, data, 30, "a file synced twice keeps what the last sync covered");
		free(b);
	}
	ok(env_exists(pe, tpath("du/nodatasync")) == 1,
	   "a created file whose directory was synced remains");
	size = 999;
	env_file_size(pe, tpath("du/nodatasync"), &size);
	is_int(size, 0, "a file never synced is empty");
	is_int(env_exists(pe, tpath("du/nodirsync")), 0,
	       "a file created after the last directory sync is removed, synced data or not");
	ok(file_is(tpath("du/pre"), "pre"), "a file that existed before is untouched");

	/* an unsynced rename is undone */
	env_mkdir(pe, tpath("rn"));
	env_sync_dir(pe, tmpdir);
	put_file(fe, tpath("rn/old"), "payload", 7, 1);
	env_sync_dir(fe, tpath("rn"));
	env_rename(fe, tpath("rn/old"), tpath("rn/new"));
	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced after a rename");
	ok(file_is(tpath("rn/old"), "payload"),
	   "a rename without directory sync is undone: old name back");
	is_int(env_exists(pe, tpath("rn/new")), 0,
	       "a rename without directory sync is undone: new name gone");

	/* the manifest switch: rename over an existing file without dir sync */
	env_mkdir(pe, tpath("cur"));
	env_sync_dir(pe, tmpdir);
	put_file(fe, tpath("cur/CURRENT"), "MANIFEST-000001\n", 16, 1);
	env_sync_dir(fe, tpath("cur"));
	put_file(fe, tpath("cur/CURRENT.tmp"), "MANIFEST-000007\n", 16, 1);
	env_sync_dir(fe, tpath("cur"));
	env_rename(fe, tpath("cur/CURRENT.tmp"), tpath("cur/CURRENT"));
	ok(file_is(tpath("cur/CURRENT"), "MANIFEST-000007\n"),
	   "before the drop the rename is visible");
	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced after a rename over a file");
	ok(file_is(tpath("cur/CURRENT"), "MANIFEST-000001\n"),
	   "an unsynced rename over a file is undone: the old contents are back");

	/* the same with a directory sync is kept */
	put_file(fe, tpath("cur/CURRENT.tmp"), "MANIFEST-000009\n", 16, 1);
	env_sync_dir(fe, tpath("cur"));
	env_rename(fe, tpath("cur/CURRENT.tmp"), tpath("cur/CURRENT"));
	env_sync_dir(fe, tpath("cur"));
	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced after a synced rename");
	ok(file_is(tpath("cur/CURRENT"), "MANIFEST-000009\n"),
	   "a rename followed by a directory sync stays");
	is_int(env_exists(pe, tpath("cur/CURRENT.tmp")), 0, "and its old name stays gone");

	/* unlinks */
	env_mkdir(pe, tpath("ul"));
	env_sync_dir(pe, tmpdir);
	put_file(fe, tpath("ul/a"), "aaa", 3, 1);
	put_file(fe, tpath("ul/b"), "bbb", 3, 1);
	env_sync_dir(fe, tpath("ul"));
	env_unlink(fe, tpath("ul/a"));
	env_sync_dir(fe, tpath("ul"));
	env_unlink(fe, tpath("ul/b"));
	is_int(env_exists(pe, tpath("ul/b")), 0, "before the drop an unlinked file is gone");
	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced after unlinks");
	is_int(env_exists(pe, tpath("ul/a")), 0, "an unlink followed by a directory sync stays");
	ok(file_is(tpath("ul/b"), "bbb"),
	   "an unlink without directory sync is undone, with its data");
}

static void test_fault_log(struct kv_env *fe)
{
	struct kv_env *pe = env_posix();
	struct env_file *f = NULL;
	const char *p;
	long c0;
	int r;

	env_mkdir(pe, tpath("fl"));
	env_sync_dir(pe, tmpdir);
	c0 = env_fault_write_calls(fe);
	is_int(env_open_log(fe, tpath("fl/000001.log"), &f), 0, "open_log through the fault env");
	is_int(env_fault_write_calls(fe) - c0, 1, "open_log counts as one write call");
	env_sync_dir(fe, tpath("fl"));
	is_int(env_append(f, "synced|", 7), 0, "append to a log through the fault env");
	is_int(env_sync(f), 0, "sync a log through the fault env");
	is_int(env_append(f, "unsynced", 8), 0, "append more without sync");
	is_int(env_map(f, 1, &p), -EOPNOTSUPP, "the fault env offers no map (-EOPNOTSUPP)");
	is_int(env_close(f), 0, "close the log");
	ok(file_is(tpath("fl/000001.log"), "synced|unsynced"),
	   "after close the log holds exactly what was appended");
	is_int(env_fault_drop_unsynced(fe), 0, "drop_unsynced with a log");
	ok(file_is(tpath("fl/000001.log"), "synced|"), "a log keeps exactly its synced bytes");

	env_fault_inject(fe, ENV_OP_OPEN, 0, 1, -EIO, NULL);
	f = NULL;
	r = env_open_log(fe, tpath("fl/000002.log"), &f);
	is_int(r, -EIO, "an open fault fails open_log");
	if (r == 0)
		env_close(f);
	is_int(env_exists(pe, tpath("fl/000002.log")), 0, "a failed open_log creates nothing");
	env_fault_clear(fe);
}

/*
 * A file of 2 synced KiB and 5 more pages' worth unsynced (the last page
 * partly), cut under model; returns what is left, *len its length.
 */
#define CP_SYNCED 2048
#define CP_TOTAL (CP_SYNCED + 4 * 4096 + 1000)

static char *cut_one(enum env_cut_model model, uint64_t seed, const char *name,
		     const char *data, size_t *len)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct env_file *f = NULL;
	const char *path = tpath("cp/%s", name);
	char *b;

	env_fault_cut_model(fe, model, seed);
	env_open_append(fe, path, &f);
	env_sync_dir(fe, tpath("cp"));
	env_append(f, data, CP_SYNCED);
	env_sync(f);
	env_append(f, data + CP_SYNCED, CP_TOTAL - CP_SYNCED);
	env_close(f);
	env_fault_power_cut_after(fe, 0);
	env_fault_drop_unsynced(fe);
	env_fault_free(fe);
	b = slurp(path, len);
	return b;
}

/* 1 if every byte of [off, end) is zero. */
static int all_zero(const char *p, size_t off, size_t end)
{
	for (; off < end; off++)
		if (p[off])
			return 0;
	return 1;
}

static void test_cut_pages(void)
{
	static char data[CP_TOTAL];
	int seen[3] = { 0, 0, 0 }, bad = 0, synced_ok = 1;
	size_t len;
	char *b;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(1 + i % 251);
	env_mkdir(env_posix(), tpath("cp"));
	env_sync_dir(env_posix(), tmpdir);

	b = cut_one(ENV_CUT_DROP, 1, "drop", data, &len);
	is_mem(b, len, data, CP_SYNCED, "ENV_CUT_DROP: only the synced bytes remain");
	free(b);
	b = cut_one(ENV_CUT_KEEP, 1, "keep", data, &len);
	is_mem(b, len, data, CP_TOTAL, "ENV_CUT_KEEP: every byte remains");
	free(b);
	b = cut_one(ENV_CUT_ZERO, 1, "zero", data, &len);
	ok(b && len == CP_TOTAL && !memcmp(b, data, CP_SYNCED) && all_zero(b, CP_SYNCED, len),
	   "ENV_CUT_ZERO: the synced bytes, then zeros to the file's length");
	free(b);

	/* each page kept whole or zeroed whole; the file ends at a page end or at its end */
	for (uint64_t seed = 1; seed <= 40; seed++) {
		char name[32];

		snprintf(name, sizeof(name), "pages-%llu", (unsigned long long)seed);
		b = cut_one(ENV_CUT_PAGES, seed, name, data, &len);
		if (!b || len < CP_SYNCED || memcmp(b, data, CP_SYNCED)) {
			synced_ok = 0;
			free(b);
			continue;
		}
		if (len != CP_TOTAL && len % 4096)
			bad++;
		for (size_t off = CP_SYNCED; off < CP_TOTAL; off = (off / 4096 + 1) * 4096) {
			size_t end = (off / 4096 + 1) * 4096;
			if (end > CP_TOTAL)
				end = CP_TOTAL;
			if (off >= len)
				seen[1]++;       /* dropped at the end */
			else if (end > len)
				bad++;           /* a page cut in the middle */
			else if (!memcmp(b + off, data + off, end - off))
				seen[0]++;
			else if (all_zero(b, off, end))
				seen[2]++;       /* zeroed, or dropped before a kept page */
			else
				bad++;
		}
		free(b);
	}
	ok(synced_ok, "ENV_CUT_PAGES: the synced bytes are always there, intact");
	is_int(bad, 0, "ENV_CUT_PAGES: every unsynced page is kept whole, zeroed whole, or gone");
	ok(seen[0] && seen[1] && seen[2], "ENV_CUT_PAGES: over 40 seeds pages were kept (%d), "
	   "dropped at the end (%d) and zeroed (%d)", seen[0], seen[1], seen[2]);
}

int main(void)
{
	struct kv_env *fe;

	plan(267);
	make_tmpdir("kv_env");
	diag("directory %s", tmpdir);

	test_posix_files();
	test_posix_list_dir();
	test_posix_lock();
	test_posix_log();
	test_log_next_window();
	test_posix_map();

	env_mkdir(env_posix(), tpath("f"));
	env_sync_dir(env_posix(), tmpdir);
	fe = env_fault_new(env_posix());
	/* these tests want every unsynced byte gone; test_cut_pages tries the other models */
	env_fault_cut_model(fe, ENV_CUT_DROP, 0);
	test_fault_passthrough(fe);
	test_fault_inject(fe);
	test_fault_counts(fe);
	test_power_cut(fe);
	test_drop_unsynced(fe);
	test_fault_log(fe);
	env_fault_free(fe);
	test_cut_pages();

	rm_rf(tmpdir);
	return exit_status();
}
