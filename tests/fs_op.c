/*
 * fs_op.c -- one system call (or one open/write/close sequence) on a path,
 * reported by name, for the filesystem's shell tests (tests/fs_*.sh).
 *
 * A shell says "Operation not permitted" or only exits 1; the contract names
 * errnos and the step where they must appear (EINVAL at write() for a number
 * that can never parse, at close() for one that might have).  fs_op prints
 * exactly one line: "ok" (or the value read, for getxattr/ino), or
 * "STEP ERRNO" such as "write EINVAL" or "close EINVAL", and exits 0 for ok,
 * 1 otherwise.  It is a test helper built by `make check`, not a test.
 *
 *   fs_op write PATH TEXT           open(O_WRONLY|O_CREAT|O_TRUNC), write, close
 *   fs_op append PATH TEXT          open(O_WRONLY|O_APPEND), write, close
 *   fs_op pwrite PATH OFFSET TEXT   open(O_WRONLY), pwrite at OFFSET, close
 *   fs_op fsync PATH TEXT           like write, with fsync before close
 *   fs_op create PATH               open(O_WRONLY|O_CREAT|O_EXCL), close
 *   fs_op onewrite PATH SIZE        O_TRUNC open, SIZE bytes in one write(2) (a short
 *                                   count printed, not retried), close
 *   fs_op truncate PATH LENGTH      truncate(2)
 *   fs_op hold PATH TEXT            open(O_WRONLY|O_CREAT|O_TRUNC), print "opened",
 *                                   wait for a line on stdin, write TEXT, print
 *                                   "written", wait for a line, close: a test looks
 *                                   at the cell from outside between the steps
 *   fs_op mkdir PATH | rmdir PATH | unlink PATH | mkfifo PATH | mknod PATH
 *   fs_op symlink TARGET PATH | link OLD NEW
 *   fs_op rename OLD NEW [noreplace|exchange]     renameat2(2)
 *   fs_op setxattr PATH NAME VALUE | getxattr PATH NAME | removexattr PATH NAME
 *   fs_op chmod PATH OCTAL | chown PATH (to the caller's own uid and gid)
 *   fs_op utimens PATH SECONDS      atime and mtime to SECONDS
 *   fs_op ino PATH                  st_ino
 *   fs_op seekend FD                lseek(2) the inherited descriptor FD to its end:
 *                                   prints the offset, and puts the offset back
 *   fs_op dirino DIR NAME           d_ino of NAME in readdir(DIR)
 *   fs_op openmany DIR N            open DIR/q0..q<N-1> (O_CREAT) all at once, write
 *                                   each its number, close them all, read each back
 *   fs_op twowrite PATH A B         two O_TRUNC descriptors on PATH: A written to the
 *                                   first, B to the second, the second closed first
 *   fs_op ftruncate PATH LENGTH     open(O_WRONLY), ftruncate to LENGTH, close
 *   fs_op shrink DIR N              N rounds over DIR/s0..s2: write a long value and
 *                                   close, then shrink it through one descriptor
 *                                   (ftruncate, or O_TRUNC then write) and close;
 *                                   after each close stat's size and a fresh read
 *                                   must give the new length and bytes
 *   fs_op flip PATH READERS ROUNDS  ROUNDS values, long and short in turn, each
 *                                   written with one open(O_TRUNC), write and close,
 *                                   while READERS processes open, read whole and close
 *                                   PATH in a loop: every read must be one whole value
 *                                   written (each value says its own length)
 *   fs_op readflush PATH ROUNDS     open(O_RDWR); ROUNDS times write a number at 0 and
 *                                   close a dup of the descriptor (a flush that
 *                                   commits), while a child process reads the same
 *                                   open file in a loop: the read and the flush of one
 *                                   handle at the same time
 *   fs_op holdmany DIR N SIZE [read]
 *                                   N descriptors at once, each making the daemon
 *                                   hold SIZE bytes: DIR/h0..h<N-1> created and
 *                                   written SIZE bytes each while all are open, then
 *                                   all closed; with "read", the cell DIR opened N
 *                                   times for reading (a byte read from each) and
 *                                   closed.  Prints the first failure (a refused
 *                                   write's close is not counted: it fails as the
 *                                   write did), and on stderr "held K": the
 *                                   descriptors that got their bytes
 *   fs_op mapmix PATH               a reader holds PATH (8 KiB of 'A') and has read
 *                                   4 KiB; PATH is rewritten with 8 KiB of 'B'; then
 *                                   PATH is opened again through /proc/self/fd of
 *                                   the holder's descriptor and mapped privately
 *                                   (if that open succeeds); the holder then reads
 *                                   all 8 KiB: prints "whole" if they are its 'A's,
 *                                   else how many 'B's it got
 *   fs_op renamerace PATH OTHER ROUNDS
 *                                   open(O_RDWR) PATH; a child renames it to OTHER
 *                                   and back ROUNDS times while the parent writes a
 *                                   counter at 0, reads its type attribute and fsyncs,
 *                                   in a loop: every step must succeed, and after the
 *                                   close PATH holds the last counter written and
 *                                   OTHER does not exist
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static const struct { int e; const char *name; } errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" }, { EBADF, "EBADF" },
	{ EACCES, "EACCES" }, { EEXIST, "EEXIST" }, { EXDEV, "EXDEV" },
	{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" }, { EINVAL, "EINVAL" },
	{ EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" }, { EROFS, "EROFS" }, { EMLINK, "EMLINK" },
	{ ERANGE, "ERANGE" }, { ENAMETOOLONG, "ENAMETOOLONG" }, { ENOSYS, "ENOSYS" },
	{ ENOTEMPTY, "ENOTEMPTY" }, { ENODATA, "ENODATA" }, { ENOTSUP, "ENOTSUP" },
	{ ENOTCONN, "ENOTCONN" }, { EBUSY, "EBUSY" }, { EMFILE, "EMFILE" },
	{ E2BIG, "E2BIG" }, { ENXIO, "ENXIO" }, { ESTALE, "ESTALE" }, { EPIPE, "EPIPE" },
	{ ENOMEM, "ENOMEM" },
};

static int fail(const char *step)
{
	int e = errno;
	size_t i;

	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++) {
		if (errnames[i].e == e) {
			printf("%s %s\n", step, errnames[i].name);
			return 1;
		}
	}
	printf("%s errno%d\n", step, e);
	return 1;
}

/* STEP failed on the open descriptor fd: report errno as STEP left it, and close fd */
static int fail_close(int fd, const char *step)
{
	int e = errno;

	close(fd);
	errno = e;
	return fail(step);
}

static int done(void)
{
	printf("ok\n");
	return 0;
}

static int write_all(int fd, const char *p, size_t n, off_t off, int at)
{
	while (n > 0) {
		ssize_t w = at ? pwrite(fd, p, n, off) : write(fd, p, n);

		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* open PATH with FLAGS, write TEXT (at OFFSET if AT), optionally fsync, close */
static int op_write(const char *path, int flags, const char *text, off_t off, int at, int sync)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		return fail("open");
	if (write_all(fd, text, strlen(text), off, at) < 0)
		return fail_close(fd, "write");
	if (sync && fsync(fd) < 0)
		return fail_close(fd, "fsync");
	if (close(fd) < 0)
		return fail("close");
	return done();
}

/*
 * `fs_op onewrite`: SIZE bytes in one write(2), which the kernel splits
 * into requests; prints "wrote N" (a short count is not retried), then
 * what close answers.
 */
static int op_onewrite(const char *path, size_t size)
{
	char *buf = malloc(size ? size : 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t w;

	if (!buf || fd < 0) {
		free(buf);
		return fd < 0 ? fail("open") : fail_close(fd, "malloc");
	}
	memset(buf, 'x', size);
	w = write(fd, buf, size);
	free(buf);
	if (w < 0)
		return fail_close(fd, "write");
	printf("wrote %zd\n", w);
	return close(fd) ? fail("close") : done();
}

/* The steps of `fs_op hold`, each one released by a line on stdin. */
static int op_hold(const char *path, const char *text)
{
	char line[64];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return fail("open");
	printf("opened\n");
	errno = EPIPE;   /* what a closed stdin reports */
	if (!fgets(line, sizeof(line), stdin))
		return fail_close(fd, "stdin");
	if (write_all(fd, text, strlen(text), 0, 0) < 0)
		return fail_close(fd, "write");
	printf("written\n");
	errno = EPIPE;
	if (!fgets(line, sizeof(line), stdin))
		return fail_close(fd, "stdin");
	if (close(fd) < 0)
		return fail("close");
	return done();
}

static int op_dirino(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return fail("opendir");
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, name) == 0) {
			printf("%llu\n", (unsigned long long)de->d_ino);
			closedir(d);
			return 0;
		}
	}
	if (errno)
		return fail("readdir");
	closedir(d);
	errno = ENOENT;
	return fail("readdir");
}

/* fs_op mapmix PATH: see the top of this file. */
static int op_mapmix(const char *path)
{
	enum { SIZE = 8192 };
	char buf[SIZE], proc[64];
	int held, w, again, i, nb = 0;
	ssize_t r;

	memset(buf, 'A', SIZE);
	w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (w < 0 || write(w, buf, SIZE) != SIZE || close(w) != 0)
		return fail("write A");
	held = open(path, O_RDONLY);
	if (held < 0 || read(held, buf, 4096) != 4096)
		return fail("hold");
	memset(buf, 'B', SIZE);
	w = open(path, O_WRONLY | O_TRUNC);
	if (w < 0 || write(w, buf, SIZE) != SIZE || close(w) != 0)
		return fail("write B");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", held);
	again = open(proc, O_RDONLY);   /* may answer ESTALE: no name to look up again */
	if (again >= 0) {
		volatile char *p = mmap(NULL, SIZE, PROT_READ, MAP_PRIVATE, again, 0);

		if (p != MAP_FAILED) {
			(void)p[0];
			(void)p[4096];
			munmap((void *)p, SIZE);
		}
		close(again);
	}
	memset(buf, 0, SIZE);
	r = pread(held, buf, SIZE, 0);
	if (r != SIZE)
		return fail("pread");
	for (i = 0; i < SIZE; i++)
		nb += buf[i] != 'A';
	close(held);
	if (nb)
		printf("%d bytes not the held text\n", nb);
	else
		printf("whole\n");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fs_op OPERATION ARGS... (see tests/fs_op.c)\n");
	return 2;
}

/* the first failure of holdmany, kept while the other descriptors go on */
static int first_fail(int *failed, const char *step)
{
	if (!*failed)
		*failed = fail(step);
	return -1;
}

/* fs_op holdmany (above) */
static int op_holdmany(const char *dir, int n, size_t size, int reading)
{
	char path[4096], *buf = malloc(65536);
	int *fds = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	int failed = 0, held = 0, i;

	if (!fds || !buf || n <= 0)
		return usage();
	memset(buf, 'x', 65536);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/h%d", dir, i);
		fds[i] = reading ? open(dir, O_RDONLY) : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fds[i] < 0)
			first_fail(&failed, "open");
	}
	for (i = 0; i < n; i++) {
		size_t left = size;

		if (fds[i] < 0)
			continue;
		if (reading && read(fds[i], buf, 1) < 0) {
			first_fail(&failed, "read");
			continue;
		}
		while (!reading && left > 0) {
			size_t k = left < 65536 ? left : 65536;

			if (write_all(fds[i], buf, k, 0, 0) < 0)
				break;
			left -= k;
		}
		if (left > 0) {
			first_fail(&failed, "write");
			fds[i] = -1 - fds[i];   /* refused: its close fails too */
			continue;
		}
		held++;
	}
	for (i = 0; i < n; i++) {
		if (fds[i] < -1)
			close(-1 - fds[i]);
		else if (fds[i] >= 0 && close(fds[i]) < 0)
			first_fail(&failed, "close");
	}
	fprintf(stderr, "held %d\n", held);
	free(fds);
	free(buf);
	return failed ? 1 : done();
}

/*
 * n files of one family open at once: each created and written while all
 * are open, then closed, then read back ("N" in file qN).  The step that
 * fails is named with its file's number on stderr.
 */
static int op_openmany(const char *dir, int n)
{
	char path[4096], want[32], got[32];
	int *fds = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	int i, k;

	if (!fds || n <= 0)
		return usage();
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/q%d", dir, i);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fds[i] < 0) {
			fprintf(stderr, "fs_op: open of file %d of %d\n", i, n);
			return fail("open");
		}
	}
	for (i = 0; i < n; i++) {
		k = snprintf(want, sizeof(want), "%d", i);
		if (write_all(fds[i], want, (size_t)k, 0, 0) < 0) {
			fprintf(stderr, "fs_op: write of file %d\n", i);
			return fail("write");
		}
	}
	for (i = 0; i < n; i++)
		if (close(fds[i]) < 0) {
			fprintf(stderr, "fs_op: close of file %d\n", i);
			return fail("close");
		}
	free(fds);
	for (i = 0; i < n; i++) {
		int fd;
		ssize_t r;

		snprintf(path, sizeof(path), "%s/q%d", dir, i);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return fail("open");
		r = read(fd, got, sizeof(got) - 1);
		close(fd);
		if (r < 0)
			return fail("read");
		got[r] = '\0';
		k = snprintf(want, sizeof(want), "%d\n", i);
		if ((size_t)r != (size_t)k || memcmp(got, want, (size_t)k)) {
			fprintf(stderr, "fs_op: file %d reads back '%s'\n", i, got);
			printf("read mismatch\n");
			return 1;
		}
	}
	return done();
}

/* stat and a fresh whole read of path give len bytes, each c; else say what they gave */
static int shrink_check(const char *path, char *buf, size_t cap, size_t len, int c, long round)
{
	struct stat st;
	size_t got = 0, i;
	ssize_t r;
	int fd;

	if (stat(path, &st) != 0)
		return fail("stat");
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return fail("open");
	while ((r = pread(fd, buf + got, cap - got, (off_t)got)) > 0)
		got += (size_t)r;
	close(fd);
	if (r < 0)
		return fail("read");
	for (i = 0; i < got && buf[i] == c; i++)
		;
	if ((size_t)st.st_size != len || got != len || i != got) {
		fprintf(stderr, "fs_op: round %ld: %s: stat %lld, read %zu bytes (byte %zu is "
			"0x%02x), expected %zu bytes 0x%02x\n", round, path, (long long)st.st_size,
			got, i, i < got ? (unsigned char)buf[i] : 0, len, c);
		printf("read mismatch\n");
		return 1;
	}
	return 0;
}

/*
 * A value made shorter through an open descriptor: after its close, stat and
 * a new descriptor see the new length, never the old one (nor the new bytes
 * padded with zeros up to it).  Three cells in turn, so that the daemon's
 * invalidations of one cell's commit meet the next cell's reads.
 */
static int op_shrink(const char *dir, long rounds)
{
	static char buf[16384];
	char path[3][4096];
	long k;
	int c;

	if (rounds <= 0)
		return usage();
	for (c = 0; c < 3; c++)
		snprintf(path[c], sizeof(path[c]), "%s/s%d", dir, c);
	for (k = 0; k < rounds; k++) {
		size_t big = 6000 + (size_t)(k * 37 % 3000), small = 1100 + (size_t)(k * 53 % 3000);
		int trunc = k / 3 % 2, fd;

		c = (int)(k % 3);
		memset(buf, 'a' + (int)(k % 26), big);
		fd = open(path[c], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail("open");
		if (write_all(fd, buf, big, 0, 0) < 0)
			return fail_close(fd, "write");
		if (close(fd) != 0)
			return fail("close");
		if (shrink_check(path[c], buf, sizeof(buf), big, 'a' + (int)(k % 26), k))
			return 1;
		memset(buf, 'A' + (int)(k % 26), small);
		fd = open(path[c], O_WRONLY | (trunc ? O_TRUNC : 0));
		if (fd < 0)
			return fail("open");
		if (ftruncate(fd, trunc ? 1024 : (off_t)small) != 0)
			return fail_close(fd, "ftruncate");
		if (trunc && write_all(fd, buf, small, 0, 1) < 0)
			return fail_close(fd, "write");
		if (close(fd) != 0)
			return fail("close");
		if (shrink_check(path[c], buf, sizeof(buf), small,
				 trunc ? 'A' + (int)(k % 26) : 'a' + (int)(k % 26), k))
			return 1;
	}
	return done();
}

/*
 * The k-th value of `fs_op flip`: its length in seven digits and a space,
 * then one letter up to its newline.  Long (two to three pages) and short
 * (under 40 bytes) in turn, so that a read mixing one value's text with
 * another's length (or with zeros up to it) is never a value.
 */
static size_t flip_value(char *buf, long k)
{
	size_t len = k % 2 ? 9000 + (size_t)(k * 37 % 3000) : 10 + (size_t)(k * 7 % 30);

	snprintf(buf, 9, "%07zu ", len);
	memset(buf + 8, 'a' + (int)(k % 26), len - 9);
	buf[len - 1] = '\n';
	return len;
}

/* Is p[0..n) a value flip_value makes?  Else, if say, tell on stderr what it is. */
static int flip_whole(const char *p, size_t n, long reads, int say)
{
	size_t len = 0, i;

	for (i = 0; i < 7 && i < n && p[i] >= '0' && p[i] <= '9'; i++)
		len = len * 10 + (size_t)(p[i] - '0');
	if (i == 7 && n > 9 && len == n && p[7] == ' ' && p[n - 1] == '\n' &&
	    p[8] >= 'a' && p[8] <= 'z') {
		for (i = 8; i < n - 1 && p[i] == p[8]; i++)
			;
		if (i == n - 1)
			return 1;
	}
	for (i = 0; i < n && (i < 8 || p[i] == p[8]); i++)
		;
	if (say)
		fprintf(stderr, "fs_op: read %ld: %zu bytes, beginning '%.8s', byte %zu is 0x%02x\n",
			reads, n, p, i, i < n ? (unsigned char)p[i] : 0);
	return 0;
}

/* One reader of `fs_op flip`: whole reads of path until *stop; the count of bad ones. */
static long flip_reader(const char *path, volatile int *stop, long *reads)
{
	static char buf[65536];
	long bad = 0;

	*reads = 0;
	while (!*stop) {
		size_t got = 0;
		ssize_t r;
		int fd = open(path, O_RDONLY);

		if (fd < 0) {
			fprintf(stderr, "fs_op: open %s: %s\n", path, strerror(errno));
			return bad + 1;
		}
		while ((r = read(fd, buf + got, sizeof(buf) - got)) > 0)
			got += (size_t)r;
		close(fd);
		(*reads)++;
		if (r < 0) {
			fprintf(stderr, "fs_op: read %s: %s\n", path, strerror(errno));
			bad++;
		} else if (!flip_whole(buf, got, *reads, bad < 3)) {   /* the first three */
			bad++;
		}
	}
	return bad;
}

static int op_flip(const char *path, int readers, long rounds)
{
	static char buf[16384];
	volatile int *stop;
	long k, bad = 0;
	int i, status, rc = 0;
	pid_t *pids;

	if (readers <= 0 || rounds <= 0)
		return usage();
	stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	pids = calloc((size_t)readers, sizeof(*pids));
	if (stop == MAP_FAILED || !pids)
		return fail("mmap");
	*stop = 0;
	k = (long)flip_value(buf, 0);
	i = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (i < 0)
		return fail("open");
	if (write_all(i, buf, (size_t)k, 0, 0) < 0)
		return fail_close(i, "write");
	if (close(i) != 0)
		return fail("close");
	for (i = 0; i < readers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return fail("fork");
		if (pids[i] == 0) {
			long n, b = flip_reader(path, stop, &n);

			fprintf(stderr, "fs_op: reader %d: %ld reads, %ld not a value written\n",
				i, n, b);
			_exit(b ? 1 : 0);
		}
	}
	for (k = 1; k <= rounds && rc == 0; k++) {
		size_t len = flip_value(buf, k);
		int fd = open(path, O_WRONLY | O_TRUNC);

		if (fd < 0) {
			rc = fail("open");
		} else if (write_all(fd, buf, len, 0, 0) < 0) {
			rc = fail_close(fd, "write");
		} else if (close(fd) != 0) {
			rc = fail("close");
		}
	}
	*stop = 1;
	for (i = 0; i < readers; i++) {
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bad++;
	}
	free(pids);
	if (rc)
		return rc;
	if (bad) {
		printf("read mismatch\n");
		return 1;
	}
	return done();
}

/*
 * The setup of a descriptor shared with a child: a stop flag in memory both
 * see (*stop, 0), path opened read-write (*fd), and the fork.  Returns the
 * child's pid (0 in the child), or -1 once the failure is reported.
 */
static pid_t open_and_fork(const char *path, volatile int **stop, int *fd)
{
	pid_t pid;

	*stop = mmap(NULL, sizeof(**stop), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (*stop == MAP_FAILED) {
		fail("mmap");
		return -1;
	}
	**stop = 0;
	*fd = open(path, O_RDWR);
	if (*fd < 0) {
		fail("open");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fail_close(*fd, "fork");
		return -1;
	}
	return pid;
}

/*
 * A flush and a read of one open file at the same time: the parent commits
 * (close of a dup) while its child, sharing the open file, reads it.  A
 * daemon that invalidated the file's pages while holding the handle that
 * the read waits for never answered either: this hangs, and the test that
 * runs it bounds it.
 */
static int op_readflush(const char *path, long rounds)
{
	char text[32], got[64];
	volatile int *stop;
	long k;
	int fd, status;
	pid_t pid;

	if (rounds <= 0)
		return usage();
	if ((pid = open_and_fork(path, &stop, &fd)) < 0)
		return 1;
	if (pid == 0) {
		while (!*stop) {
			ssize_t r = pread(fd, got, sizeof(got) - 1, 0);

			if (r < 0) {
				fprintf(stderr, "fs_op: read: %s\n", strerror(errno));
				_exit(1);
			}
		}
		_exit(0);
	}
	for (k = 1; k <= rounds; k++) {
		int d;

		snprintf(text, sizeof(text), "%ld\n", 1000 + k);
		if (write_all(fd, text, strlen(text), 0, 1) < 0)
			break;
		d = dup(fd);
		if (d < 0 || close(d) != 0) {
			fprintf(stderr, "fs_op: round %ld: close of a dup: %s\n", k, strerror(errno));
			break;
		}
	}
	*stop = 1;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail_close(fd, "read");
	if (k <= rounds)
		return fail_close(fd, "close");
	return close(fd) ? fail("close") : done();
}

/*
 * An open cell renamed to another family and back while its descriptor is
 * used: each step names the node, whose family name and id the rename
 * changes.  A check that saw the two half-changed answered ESTALE, and an
 * fsync or close meeting it dropped the text written.  A commit between a
 * rename's row mutation and the node's new name wrote under the name the
 * cell had left: after the last rename, OTHER must not exist and PATH must
 * hold the last text written.
 */
static int op_renamerace(const char *path, const char *other, long rounds)
{
	char text[32], got[64];
	volatile int *stop;
	long k = 0;
	int fd, d, e, status, rc = 0;
	ssize_t r;
	pid_t pid;

	if (rounds <= 0)
		return usage();
	if ((pid = open_and_fork(path, &stop, &fd)) < 0)
		return 1;
	if (pid == 0) {
		long i;

		for (i = 0; i < rounds && !*stop; i++) {
			if (rename(path, other) != 0 || rename(other, path) != 0) {
				fprintf(stderr, "fs_op: round %ld: rename: %s\n", i, strerror(errno));
				_exit(1);
			}
		}
		_exit(0);
	}
	while (!*stop && rc == 0) {
		snprintf(text, sizeof(text), "%08ld\n", ++k);
		if (write_all(fd, text, strlen(text), 0, 1) < 0)
			rc = fail("write");
		else if (pread(fd, got, sizeof(got), 0) < 0)
			rc = fail("read");
		else if (fgetxattr(fd, "user.smolfs.type", got, sizeof(got)) < 0)
			rc = fail("getxattr");
		else if ((d = dup(fd)) < 0 || close(d) != 0)
			rc = fail("close");   /* a flush: commits */
		else if (k % 16 == 0 && fsync(fd) != 0)
			rc = fail("fsync");
		else if (waitpid(pid, &status, WNOHANG) == pid)
			break;   /* the renames are over */
		else
			continue;
		*stop = 1;
		waitpid(pid, &status, 0);
	}
	if (rc) {
		close(fd);
		return rc;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errno = EIO;
		return fail_close(fd, "rename");
	}
	if (close(fd) != 0)
		return fail("close");
	fprintf(stderr, "fs_op: %ld writes while the cell was renamed %ld times\n", k, 2 * rounds);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return fail("open");
	r = read(fd, got, sizeof(got) - 1);
	if (r < 0)
		return fail_close(fd, "read");
	close(fd);
	got[r] = '\0';
	if (strcmp(got, text) != 0) {
		printf("read %.*s, not the last written %s", (int)strcspn(got, "\n"), got, text);
		return 1;
	}
	e = access(other, F_OK) == 0 ? 0 : errno;
	if (e != ENOENT) {
		printf("%s: %s after the renames, not ENOENT\n", other, e ? strerror(e) : "exists");
		return 1;
	}
	return done();
}

int main(int argc, char **argv)
{
	const char *op;

	if (argc < 3)
		return usage();
	op = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (strcmp(op, "write") == 0 && argc == 4)
		return op_write(argv[2], O_WRONLY | O_CREAT | O_TRUNC, argv[3], 0, 0, 0);
	if (strcmp(op, "fsync") == 0 && argc == 4)
		return op_write(argv[2], O_WRONLY | O_CREAT | O_TRUNC, argv[3], 0, 0, 1);
	if (strcmp(op, "append") == 0 && argc == 4)
		return op_write(argv[2], O_WRONLY | O_APPEND, argv[3], 0, 0, 0);
	if (strcmp(op, "pwrite") == 0 && argc == 5)
		return op_write(argv[2], O_WRONLY, argv[4], (off_t)strtoll(argv[3], NULL, 10), 1, 0);
	if (strcmp(op, "create") == 0 && argc == 3)
		return op_write(argv[2], O_WRONLY | O_CREAT | O_EXCL, "", 0, 0, 0);
	if (strcmp(op, "truncate") == 0 && argc == 4)
		return truncate(argv[2], (off_t)strtoll(argv[3], NULL, 10)) ? fail("truncate") : done();
	if (strcmp(op, "ftruncate") == 0 && argc == 4) {
		int fd = open(argv[2], O_WRONLY);

		if (fd < 0)
			return fail("open");
		if (ftruncate(fd, (off_t)strtoll(argv[3], NULL, 10)) != 0)
			return fail_close(fd, "ftruncate");
		return close(fd) ? fail("close") : done();
	}
	if (strcmp(op, "onewrite") == 0 && argc == 4)
		return op_onewrite(argv[2], (size_t)strtoull(argv[3], NULL, 10));
	if (strcmp(op, "shrink") == 0 && argc == 4)
		return op_shrink(argv[2], strtol(argv[3], NULL, 10));
	if (strcmp(op, "flip") == 0 && argc == 5)
		return op_flip(argv[2], atoi(argv[3]), strtol(argv[4], NULL, 10));
	if (strcmp(op, "renamerace") == 0 && argc == 5)
		return op_renamerace(argv[2], argv[3], strtol(argv[4], NULL, 10));
	if (strcmp(op, "readflush") == 0 && argc == 4)
		return op_readflush(argv[2], strtol(argv[3], NULL, 10));
	if (strcmp(op, "mkdir") == 0 && argc == 3)
		return mkdir(argv[2], 0755) ? fail("mkdir") : done();
	if (strcmp(op, "rmdir") == 0 && argc == 3)
		return rmdir(argv[2]) ? fail("rmdir") : done();
	if (strcmp(op, "unlink") == 0 && argc == 3)
		return unlink(argv[2]) ? fail("unlink") : done();
	if (strcmp(op, "mkfifo") == 0 && argc == 3)
		return mkfifo(argv[2], 0644) ? fail("mkfifo") : done();
	if (strcmp(op, "mknod") == 0 && argc == 3)
		return mknod(argv[2], S_IFCHR | 0644, makedev(1, 3)) ? fail("mknod") : done();
	if (strcmp(op, "symlink") == 0 && argc == 4)
		return symlink(argv[2], argv[3]) ? fail("symlink") : done();
	if (strcmp(op, "link") == 0 && argc == 4)
		return link(argv[2], argv[3]) ? fail("link") : done();
	if (strcmp(op, "rename") == 0 && (argc == 4 || argc == 5)) {
		unsigned flags = 0;

		if (argc == 5 && strcmp(argv[4], "noreplace") == 0)
			flags = RENAME_NOREPLACE;
		else if (argc == 5 && strcmp(argv[4], "exchange") == 0)
			flags = RENAME_EXCHANGE;
		else if (argc == 5)
			return usage();
		if (syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], flags) != 0)
			return fail("rename");
		return done();
	}
	if (strcmp(op, "setxattr") == 0 && argc == 5)
		return setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0) ? fail("setxattr") : done();
	if (strcmp(op, "removexattr") == 0 && argc == 4)
		return removexattr(argv[2], argv[3]) ? fail("removexattr") : done();
	if (strcmp(op, "getxattr") == 0 && argc == 4) {
		char buf[256];
		ssize_t n = getxattr(argv[2], argv[3], buf, sizeof(buf) - 1);

		if (n < 0)
			return fail("getxattr");
		buf[n] = '\0';
		printf("%s\n", buf);
		return 0;
	}
	if (strcmp(op, "chmod") == 0 && argc == 4)
		return chmod(argv[2], (mode_t)strtol(argv[3], NULL, 8)) ? fail("chmod") : done();
	if (strcmp(op, "chown") == 0 && argc == 3)
		return chown(argv[2], getuid(), getgid()) ? fail("chown") : done();
	if (strcmp(op, "utimens") == 0 && argc == 4) {
		struct timespec ts[2];

		ts[0].tv_sec = ts[1].tv_sec = (time_t)strtoll(argv[3], NULL, 10);
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		return utimensat(AT_FDCWD, argv[2], ts, 0) ? fail("utimens") : done();
	}
	if (strcmp(op, "seekend") == 0 && argc == 3) {
		int fd = (int)strtol(argv[2], NULL, 10);
		off_t at = lseek(fd, 0, SEEK_CUR), end;

		if (at < 0)
			return fail("lseek");
		end = lseek(fd, 0, SEEK_END);
		if (end < 0)
			return fail("lseek");
		if (lseek(fd, at, SEEK_SET) < 0)
			return fail("lseek");
		printf("%lld\n", (long long)end);
		return 0;
	}
	if (strcmp(op, "mapmix") == 0 && argc == 3)
		return op_mapmix(argv[2]);
	if (strcmp(op, "ino") == 0 && argc == 3) {
		struct stat st;

		if (stat(argv[2], &st) != 0)
			return fail("stat");
		printf("%llu\n", (unsigned long long)st.st_ino);
		return 0;
	}
	if (strcmp(op, "hold") == 0 && argc == 4)
		return op_hold(argv[2], argv[3]);
	if (strcmp(op, "dirino") == 0 && argc == 4)
		return op_dirino(argv[2], argv[3]);
	if (strcmp(op, "holdmany") == 0 && (argc == 5 || (argc == 6 && !strcmp(argv[5], "read"))))
		return op_holdmany(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 10), argc == 6);
	if (strcmp(op, "openmany") == 0 && argc == 4)
		return op_openmany(argv[2], atoi(argv[3]));
	if (strcmp(op, "twowrite") == 0 && argc == 5) {
		int a = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int b = a < 0 ? -1 : open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (a < 0 || b < 0)
			return fail("open");
		if (write_all(a, argv[3], strlen(argv[3]), 0, 0) < 0 ||
		    write_all(b, argv[4], strlen(argv[4]), 0, 0) < 0)
			return fail("write");
		if (close(b) < 0 || close(a) < 0)
			return fail("close");
		return done();
	}
	return usage();
}
