/*
 * kv_enospc.c -- a real full disk: a small tmpfs mounted by the test.
 *
 * Each round fills the file system through kv_put (small memtables, so
 * flushes and compactions run into the full disk too) until the engine
 * reports an error, which must be ENOSPC: never a success that is then
 * lost.  Then a filler file placed beforehand is removed; writes must
 * resume without a reopen, a flush must succeed, and after closing and
 * reopening every acknowledged write must be there with its value.  One
 * round closes the database on the full disk and opens it again with only
 * 256 KiB free, not enough to write the recovered writes to a table: the
 * open must succeed and every acknowledged write read back.  First, a log
 * alone is appended to until the disk is full (test_log_full), and on a
 * 16 MiB ext4 in a loop device a log's window that cannot be reserved
 * must keep none of the space (test_window_fails).
 *
 * When a step fails, the test lists the database's files and the free
 * space.  With KV_ENOSPC_LOG set, the engine's log lines go to stderr,
 * each with the microseconds of the clock, to tell what ran when.
 *
 * Mounting needs root (CI runs as root): as another user the test is
 * skipped.  Where there is no mkfs.ext4 or no loop device, the ext4 part
 * is skipped and says why.  The test runs in a child process and the parent unmounts the
 * file system whatever happens to the child.
 */
#include "kv.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define FS_SIZE   (8u << 20)
#define FILLER    (2u << 20)
#define MAX_PUTS  200000

static char mnt[512];
/* the ext4 file system of test_window_fails, in the file img4, or why there is none */
static char mnt4[512], img4[512];
static const char *ext4_skip;

static void quiet(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level;
	if (getenv("KV_ENOSPC_LOG"))
		fprintf(stderr, "# %llu %s\n", (unsigned long long)now_micros(), msg);
}

/* What was on the disk when a step failed: each file's size, and the free space. */
static void show_disk(const char *dir)
{
	struct statvfs sv;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) != NULL) {
		struct stat st;
		char *p = xasprintf("%s/%s", dir, e->d_name);

		if (e->d_name[0] != '.' && stat(p, &st) == 0)
			diag("%s: %lld bytes, %lld KiB allocated", e->d_name, (long long)st.st_size,
			     (long long)st.st_blocks / 2);
		free(p);
	}
	if (d)
		closedir(d);
	if (statvfs(dir, &sv) == 0)
		diag("free: %llu KiB", (unsigned long long)sv.f_bavail * sv.f_frsize / 1024);
}

/* The value of key i: incompressible bytes, the same every time. */
static size_t value_of(char *v, size_t len, int i)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);

	for (size_t j = 0; j < len; j++)
		v[j] = (char)(rand_next(&s) >> 24);
	return len;
}

static int key_of(char *k, int i)
{
	return snprintf(k, 32, "key%08d", i);
}

static int put_one(struct kv_db *db, int i, size_t vlen, unsigned flags)
{
	char k[32], v[4096];
	int kl = key_of(k, i);

	value_of(v, vlen, i);
	return kv_put(db, k, (size_t)kl, v, vlen, flags);
}

/*
 * Put key i until it succeeds, for at most 5 s, as a writer that retries
 * after ENOSPC would (any other error ends it); returns the last error, or
 * 0.  Adds the number of failed tries to *retries.
 */
static int put_retry(struct kv_db *db, int i, size_t vlen, unsigned flags, int *retries)
{
	int r = -1;

	for (int t = 0; t < 1000; t++) {
		if ((r = put_one(db, i, vlen, flags)) != -ENOSPC)
			break;
		++*retries;
		usleep(5000);
	}
	return r;
}

/* Keys [0, n) with ack[i] set must read back; returns how many do not. */
static int missing(struct kv_db *db, const unsigned char *ack, int n, size_t vlen)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		char k[32], v[4096], *got = NULL;
		size_t gl;
		int kl, r;

		if (!ack[i])
			continue;
		kl = key_of(k, i);
		value_of(v, vlen, i);
		r = kv_get(db, NULL, k, (size_t)kl, &got, &gl);
		if (r != 0 || gl != vlen || memcmp(got, v, vlen)) {
			if (!bad)
				diag("key%08d: %s", i, r ? kv_strerror(r) : "wrong value");
			bad++;
		}
		free(got);
	}
	return bad;
}

static int make_filler(const char *path)
{
	FILE *f = fopen(path, "w");
	char buf[65536];
	int ok = f != NULL;

	memset(buf, 'f', sizeof(buf));
	for (size_t n = 0; ok && n < FILLER; n += sizeof(buf))
		ok = fwrite(buf, 1, sizeof(buf), f) == sizeof(buf);
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

struct round {
	const char *name;
	size_t write_buffer, vlen;
	unsigned flags;
	int reopen_full;   /* close and reopen while the disk is (almost) full */
};

static long total_acked, total_lost;

static void run_round(const struct round *rd)
{
	char *dir = xasprintf("%s/db", mnt), *filler = xasprintf("%s/filler", mnt);
	unsigned char *ack = xcalloc(MAX_PUTS, 1);
	struct kv_options o;
	struct kv_db *db = NULL;
	int r = 0, i, n, first_err = 0, acked = 0, lost;
	const char *step;
	int retries = 0;

	kv_destroy(dir, NULL);
	rmdir(dir);
	if (make_filler(filler) < 0) {
		ok(0, "%s: a filler file of %u bytes", rd->name, FILLER);
		goto out;
	}
	kv_options_init(&o);
	o.write_buffer_size = rd->write_buffer;
	o.target_file_size = 256u << 10;
	o.max_bytes_level_base = 1u << 20;
	o.log = quiet;
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "%s: open on an %u MiB tmpfs", rd->name, FS_SIZE >> 20))
		goto out;
	/* fill it: every put either returns 0 (and must survive) or an error */
	for (i = 0; i < MAX_PUTS; i++) {
		r = put_one(db, i, rd->vlen, rd->flags);
		if (r == 0 && i % 500 == 499)
			r = kv_flush(db);
		if (r != 0)
			break;
		ack[i] = 1;
		acked++;
	}
	first_err = r;
	is_int(first_err, -ENOSPC, "%s: the full disk surfaces as ENOSPC after %d writes (%s)",
	       rd->name, acked, r ? kv_strerror(r) : "never");
	n = i + 1;
	/* while it is full, no put may pretend; those that succeed count as acknowledged */
	for (int j = 0; j < 20; j++, n++) {
		r = put_one(db, n, rd->vlen, rd->flags);
		if (r == 0) {
			ack[n] = 1;
			acked++;
		} else if (r != -ENOSPC) {
			break;
		}
	}
	ok(r == 0 || r == -ENOSPC, "%s: while the disk is full, writes fail with ENOSPC or succeed "
	   "(%s)", rd->name, r ? kv_strerror(r) : "ok");
	if (rd->reopen_full) {
		kv_close(db);   /* its error is the full disk's, asserted above */
		db = NULL;
		if (truncate(filler, FILLER - (256u << 10)) != 0)
			diag("truncate %s: %s", filler, strerror(errno));
		r = kv_open(dir, &o, &db);
		if (!is_int(r, 0, "%s: opens again with 256 KiB free (%s)", rd->name,
			    r ? kv_strerror(r) : "ok"))
			goto out;
		lost = missing(db, ack, n, rd->vlen);
		is_int(lost, 0, "%s: and every acknowledged write reads back", rd->name);
	}
	/* free space: writes must resume without a reopen */
	unlink(filler);
	r = put_retry(db, n, rd->vlen, rd->flags, &retries);
	if (is_int(r, 0, "%s: with space freed, writes resume without a reopen (%s)", rd->name,
		   r ? kv_strerror(r) : "ok")) {
		ack[n++] = 1;
		acked++;
	}
	/*
	 * A flush or compaction that began on the full disk can fail after the
	 * space came back; writes then fail with its error until its retry time
	 * (smolfs(5), ERRORS), at most a second later.  So each write here gets
	 * the same retries as the first one.
	 */
	step = "100 more writes";
	for (int j = 0; j < 100 && r == 0; j++, n++) {
		r = put_retry(db, n, rd->vlen, rd->flags, &retries);
		if (r == 0) {
			ack[n] = 1;
			acked++;
		}
	}
	diag("%s: %d tries failed with ENOSPC after the space was freed", rd->name, retries);
	if (r == 0) {
		step = "a flush";
		r = kv_flush(db);
	}
	if (!is_int(r, 0, "%s: and so do 100 more writes and a flush (%s: %s)", rd->name, step,
		    r ? kv_strerror(r) : "ok"))
		show_disk(dir);
	lost = missing(db, ack, n, rd->vlen);
	is_int(lost, 0, "%s: every acknowledged write reads back before the reopen", rd->name);
	r = kv_close(db);
	db = NULL;
	if (!is_int(r, 0, "%s: close (%s)", rd->name, r ? kv_strerror(r) : "ok"))
		show_disk(dir);
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "%s: reopen (%s)", rd->name, r ? kv_strerror(r) : "ok"))
		goto out;
	lost = missing(db, ack, n, rd->vlen);
	is_int(lost, 0, "%s: after the reopen all %d acknowledged writes are there", rd->name, acked);
	total_acked += acked;
	total_lost += lost;
	is_int(kv_close(db), 0, "%s: close again", rd->name);
	db = NULL;
out:
	if (db)
		kv_close(db);
	kv_destroy(dir, NULL);
	rmdir(dir);
	unlink(filler);
	free(ack);
	free(dir);
	free(filler);
}

/* The byte at offset off of test_log_full's log: never 0, and not the same at every offset. */
static char log_byte(uint64_t off)
{
	return (char)(((off * 2654435761u) >> 13) | 1);
}

/* The process's address space now (VmSize), in bytes, or 0. */
static uint64_t vm_size(void)
{
	FILE *fp = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kib = 0;

	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "VmSize: %llu kB", &kib) == 1)
			break;
	fclose(fp);
	return (uint64_t)kib << 10;
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

/*
 * A log on the full disk, through the env alone: appends of `each` bytes
 * (under 1 KiB through the log's map, 1 KiB and more through pwrite) until
 * one fails.  It must fail with ENOSPC and leave nothing of itself (a
 * record cut short would be a torn record before the records of the next
 * log): the file holds every byte appended before it, then only zeros, and
 * closing cuts it to those bytes.  With no_map, the address space is
 * limited (RLIMIT_AS) so that the log's first window cannot be mapped: all
 * its appends go through pwrite, and must reserve their space all the same.
 */
static void test_log_full(size_t each, int no_map)
{
	const char *how = no_map ? ", the log unmappable" : "";
	struct rlimit old_as, as;
	struct kv_env *env = env_posix();
	struct env_file *f = NULL;
	char *path = xasprintf("%s/full.log", mnt), buf[4096];
	uint64_t size = 0, bad = UINT64_MAX;
	struct stat st;
	int r, fd;

	if (env_open_log(env, path, &f) != 0) {
		ok(0, "%zu-byte log appends%s: open a log", each, how);
		ok(0, "%zu-byte log appends%s: the log holds them", each, how);
		ok(0, "%zu-byte log appends%s: close", each, how);
		free(path);
		return;
	}
	if (no_map) {
		/* room for less than the first window (64 KiB) */
		getrlimit(RLIMIT_AS, &old_as);
		as = old_as;
		as.rlim_cur = (rlim_t)(vm_size() + (32u << 10));
		if (setrlimit(RLIMIT_AS, &as) != 0)
			diag("setrlimit(RLIMIT_AS): %s", strerror(errno));
	}
	do {
		for (size_t j = 0; j < each; j++)
			buf[j] = log_byte(size + j);
		if ((r = env_append(f, buf, each)) == 0)
			size += each;
	} while (r == 0);
	if (no_map) {
		setrlimit(RLIMIT_AS, &old_as);
		is_int(maps_of(path), 0, "%zu-byte log appends%s: the log was never mapped", each,
		       how);
	}
	is_int(r, -ENOSPC, "%zu-byte log appends%s on an %u MiB tmpfs: one fails with ENOSPC "
	       "after %llu bytes (%s)", each, how, FS_SIZE >> 20, (unsigned long long)size,
	       r < 0 ? kv_strerror(r) : "none");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (uint64_t off = 0; fd >= 0 && bad == UINT64_MAX; off += sizeof(buf)) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

		if (n <= 0)
			break;
		for (ssize_t j = 0; j < n && bad == UINT64_MAX; j++)
			if (buf[j] != (off + (uint64_t)j < size ? log_byte(off + (uint64_t)j) : 0))
				bad = off + (uint64_t)j;
	}
	if (fd >= 0)
		close(fd);
	if (!ok(fd >= 0 && bad == UINT64_MAX, "%zu-byte log appends%s: the log holds the %llu "
		"bytes appended, then only zeros: nothing of the failed append", each, how,
		(unsigned long long)size))
		diag("first wrong byte at offset %llu", (unsigned long long)bad);
	r = env_close(f);
	if (stat(path, &st) != 0)
		st.st_size = -1;
	ok(r == 0 && (uint64_t)st.st_size == size,
	   "%zu-byte log appends%s: closed, the log is cut to the bytes appended (%s, %lld bytes)",
	   each, how, r < 0 ? kv_strerror(r) : "ok", (long long)st.st_size);
	unlink(path);
	free(path);
}

/* Free bytes of the file system at dir (for root), or 0. */
static uint64_t free_bytes(const char *dir)
{
	struct statvfs sv;

	return statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bfree * sv.f_frsize : 0;
}

/*
 * On ext4 a failed fallocate keeps the blocks it got, and the file the
 * length it reached.  A log whose window ahead cannot be reserved must not
 * keep them from the flush or compaction that would give space back.  With
 * 40 KiB left to allocate, less than a first window (64 KiB): an append of 4000
 * bytes (pwrite, its window reserved ahead) and one of 100 bytes (through
 * the map, whose window is reserved when it is mapped) each succeed, and
 * the disk keeps the free space that the append did not use.
 */
static void test_window_fails(void)
{
	static const size_t sizes[] = { 4000, 100 };
	struct kv_env *env = env_posix();
	char *filler, buf[4000];
	uint64_t before, end;
	int fd, full = 0;

	if (ext4_skip) {
		skip(5, ext4_skip);
		return;
	}
	memset(buf, 'w', sizeof(buf));
	/*
	 * The filler takes every block fallocate gives (ext4 keeps the blocks
	 * of the fallocate that fails), then gives 40 KiB back.
	 */
	filler = xasprintf("%s/filler", mnt4);
	fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	end = 0;
	if (fd >= 0) {
		struct stat st;

		(void)fallocate(fd, 0, 0, 16 << 20);
		end = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
		end -= end % 4096;
		for (int i = 0; i < 4096 && fallocate(fd, 0, (off_t)end, 4096) == 0; i++)
			end += 4096;
		full = fallocate(fd, 0, (off_t)end, 4096) != 0 && errno == ENOSPC;
		if (!full || end < (40u << 10) || ftruncate(fd, (off_t)(end - (40u << 10))) != 0)
			full = 0;
		close(fd);
	}
	ok(full, "ext4 in a loop device: a file takes all its space (%llu bytes), then gives "
	   "40 KiB back", (unsigned long long)end);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *path = xasprintf("%s/w%zu.log", mnt4, i);
		struct env_file *f = NULL;
		uint64_t after;
		int r;

		before = free_bytes(mnt4);
		r = env_open_log(env, path, &f);
		if (r == 0)
			r = env_append(f, buf, sizes[i]);
		after = free_bytes(mnt4);
		is_int(r, 0, "ext4, %llu bytes free: a %zu-byte log append succeeds (%s)",
		       (unsigned long long)before, sizes[i], r < 0 ? kv_strerror(r) : "ok");
		/* the append's block, and one of the file's own if need be */
		ok(after + (8u << 10) >= before, "and the log keeps none of the free space its "
		   "window could not reserve: %llu bytes free after it", (unsigned long long)after);
		if (f)
			env_close(f);
		unlink(path);
		free(path);
	}
	unlink(filler);
	free(filler);
}

static const struct round rounds[] = {
	{ "256 KiB memtables, 1000-byte values", 256u << 10, 1000, 0, 0 },
	{ "64 KiB memtables, synced writes", 64u << 10, 1000, KV_SYNC, 0 },
	{ "1 MiB memtables, 100-byte values", 1u << 20, 100, 0, 0 },
	{ "1 MiB memtables, closed and reopened on the full disk", 1u << 20, 1000, 0, 1 },
};

static int child(void)
{
	plan((int)(sizeof(rounds) / sizeof(rounds[0])) * 10 + 2 + 10 + 5);
	test_log_full(100, 0);
	test_log_full(4000, 0);
#ifdef SANITIZED
	/* the sanitizer's allocator maps memory at any time: no room to limit */
	skip(4, "an unmappable log: RLIMIT_AS cannot bound a sanitized process's maps");
#else
	test_log_full(300, 1);
#endif
	test_window_fails();
	for (size_t i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++)
		run_round(&rounds[i]);
	printf("# writes acknowledged: %ld, lost: %ld\n", total_acked, total_lost);
	fflush(stdout);   /* the parent's _exit(child()) would drop it */
	return exit_status();
}

/*
 * A 16 MiB ext4 file system in a file, mounted through a loop device, for
 * test_window_fails; where this machine cannot, ext4_skip says why.
 */
static void ext4_setup(const char *base)
{
	char cmd[1200];
	int fd;

	snprintf(img4, sizeof(img4), "%s/smolfs-enospc-ext4-XXXXXX", base);
	snprintf(mnt4, sizeof(mnt4), "%s/smolfs-enospc-mnt-XXXXXX", base);
	fd = mkstemp(img4);
	if (fd < 0 || ftruncate(fd, 16 << 20) != 0 || !mkdtemp(mnt4)) {
		ext4_skip = "no room for a 16 MiB ext4 image";
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F -m 0 '%s' >/dev/null 2>&1", img4);
	if (system(cmd) != 0) {
		ext4_skip = "no mkfs.ext4 here (e2fsprogs)";
		return;
	}
	snprintf(cmd, sizeof(cmd), "mount -o loop,nosuid,nodev '%s' '%s' >/dev/null 2>&1", img4,
		 mnt4);
	if (system(cmd) != 0)
		ext4_skip = "no loop device here: mount -o loop failed";
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	char opts[64];
	pid_t pid;
	int st = 0;

	snprintf(mnt, sizeof(mnt), "%s/smolfs-enospc-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(mnt)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(opts, sizeof(opts), "size=%u,mode=0700", FS_SIZE);
	if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
		int e = errno;
		rmdir(mnt);
		if (geteuid() != 0)
			skip_all("mounting a tmpfs needs root");
		printf("1..1\nnot ok 1 - mount a %u MiB tmpfs as root: %s\n", FS_SIZE >> 20,
		       strerror(e));
		return 1;
	}
	ext4_setup(base && *base ? base : "/tmp");
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child());
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		st = -1;
	if (umount2(mnt, MNT_DETACH) != 0)
		fprintf(stderr, "umount %s: %s\n", mnt, strerror(errno));
	rmdir(mnt);
	if (!ext4_skip && umount2(mnt4, MNT_DETACH) != 0)
		fprintf(stderr, "umount %s: %s\n", mnt4, strerror(errno));
	rmdir(mnt4);
	unlink(img4);
	if (st == -1 || !WIFEXITED(st)) {
		printf("# the test process %s\n", st == -1 ? "could not run" : "was killed");
		return 1;
	}
	return WEXITSTATUS(st);
}
