/*
 * fs_fsx.c -- random file I/O on bytes cells, checked against a model (after
 * the idea of fsx, the file system exerciser).
 *
 *   fs_fsx DIR NOPS MODELDIR
 *
 * DIR is a family directory of type bytes on a smolfs mount.  fs_fsx keeps
 * NFILES cells open there (DIR/fsx0, DIR/fsx1, ...) and, for NOPS steps,
 * picks a cell and one operation: read at a random offset (through its open
 * handle, which must see the handle's own uncommitted writes), write at an
 * offset (past the end too: the hole reads as zeros), append (O_APPEND),
 * ftruncate (shorter or longer), close and reopen (the commit: after it
 * stat's size and a fresh read of the whole cell must equal the model),
 * reopen with O_TRUNC, and a whole-cell read through a second descriptor
 * after a commit.  Every result is compared with an in-memory copy of what
 * each cell must hold.  At the end it closes every cell, checks them once
 * more, and writes each model to MODELDIR/fsxN so that a script can compare
 * them with the cells after a remount.
 *
 * The seed comes from SMOLFS_TEST_SEED (any value reproduces a run exactly)
 * or from the clock, and is printed first.  Output is TAP comments; the
 * exit status is 0 when nothing differed.  On a mismatch it prints the last
 * operations and the first differing byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NFILES 3
#define MAXLEN (96 * 1024)          /* the largest a cell grows */
#define MAXIO (8 * 1024)            /* the largest single read or write */
#define NLOG 24                     /* operations shown on a failure */

struct cell {
	char path[4096];
	int fd;
	unsigned char *model;       /* what the cell must hold: model[0..len) */
	size_t len;
};

static struct cell cells[NFILES];
static uint64_t rng_state;
static char oplog[NLOG][160];
static long opno;

static uint64_t rnd(void)
{
	/* xorshift64*: small, fast, and the same sequence for the same seed everywhere */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

__attribute__((format(printf, 2, 3)))
static void logop(int c, const char *fmt, ...)
{
	char *slot = oplog[opno % NLOG];
	size_t used;
	va_list ap;

	snprintf(slot, sizeof(oplog[0]), "%ld: fsx%d ", opno, c);
	used = strlen(slot);
	va_start(ap, fmt);
	vsnprintf(slot + used, sizeof(oplog[0]) - used, fmt, ap);
	va_end(ap);
}

static void dump_log(void)
{
	long i, from = opno >= NLOG ? opno - NLOG + 1 : 0;

	printf("# the last operations:\n");
	for (i = from; i <= opno; i++)
		printf("#   %s\n", oplog[i % NLOG]);
}

static int failf(const char *what, int c)
{
	printf("# FAIL at operation %ld on %s: %s (errno %d, %s)\n", opno, cells[c].path, what,
	       errno, strerror(errno));
	dump_log();
	return -1;
}

static int compare(int c, const unsigned char *got, size_t off, size_t n, const char *how)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (got[i] != cells[c].model[off + i]) {
			printf("# MISMATCH at operation %ld on %s (%s): byte %zu is 0x%02x, "
			       "expected 0x%02x (read of %zu bytes at %zu, model length %zu)\n",
			       opno, cells[c].path, how, off + i, got[i], cells[c].model[off + i],
			       n, off, cells[c].len);
			dump_log();
			return -1;
		}
	}
	return 0;
}

static int full_read(int fd, unsigned char *buf, size_t n, off_t off, size_t *got)
{
	*got = 0;
	while (*got < n) {
		ssize_t r = pread(fd, buf + *got, n - *got, off + (off_t)*got);

		if (r < 0)
			return -1;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

static int full_write(int fd, const unsigned char *buf, size_t n, off_t off, int append)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = append ? write(fd, buf + done, n - done)
				   : pwrite(fd, buf + done, n - done, off + (off_t)done);

		if (w < 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* A whole-cell read through a new descriptor, and stat's size: both equal the model. */
static int check_committed(int c, const char *how)
{
	static unsigned char buf[MAXLEN + 1];
	struct stat st;
	size_t got;
	int fd;

	if (stat(cells[c].path, &st) != 0)
		return failf("stat", c);
	if ((size_t)st.st_size != cells[c].len) {
		printf("# MISMATCH at operation %ld on %s (%s): st_size %lld, expected %zu\n", opno,
		       cells[c].path, how, (long long)st.st_size, cells[c].len);
		dump_log();
		return -1;
	}
	fd = open(cells[c].path, O_RDONLY);
	if (fd < 0)
		return failf("open for reading", c);
	if (full_read(fd, buf, sizeof(buf), 0, &got) < 0) {
		close(fd);
		return failf("read", c);
	}
	close(fd);
	if (got != cells[c].len) {
		printf("# MISMATCH at operation %ld on %s (%s): read %zu bytes, expected %zu\n", opno,
		       cells[c].path, how, got, cells[c].len);
		dump_log();
		return -1;
	}
	return compare(c, buf, 0, got, how);
}

static int reopen(int c, int trunc)
{
	if (cells[c].fd >= 0 && close(cells[c].fd) != 0) {
		cells[c].fd = -1;
		return failf("close", c);
	}
	cells[c].fd = -1;
	if (check_committed(c, "after close") < 0)
		return -1;
	cells[c].fd = open(cells[c].path, O_RDWR | (trunc ? O_TRUNC : 0));
	if (cells[c].fd < 0)
		return failf("reopen", c);
	if (trunc)
		cells[c].len = 0;
	return 0;
}

static void fill(unsigned char *p, size_t n)
{
	size_t i;

	/* half printable text, half runs: some of it compresses, some does not */
	if (rnd() & 1) {
		for (i = 0; i < n; i++)
			p[i] = (unsigned char)(rnd() & 0xff);
	} else {
		unsigned char b = (unsigned char)rnd();

		memset(p, b, n);
	}
}

static int step(void)
{
	static unsigned char buf[MAXIO];
	int c = (int)below(NFILES);
	struct cell *cl = &cells[c];
	unsigned op = (unsigned)below(100);
	size_t off, n, got;

	if (op < 35) {                                  /* read through the open handle */
		off = below(cl->len + 64);
		n = 1 + below(MAXIO);
		logop(c, "read %zu+%zu", off, n);
		if (full_read(cl->fd, buf, n, (off_t)off, &got) < 0)
			return failf("pread", c);
		if (off >= cl->len ? got != 0 : got != (cl->len - off < n ? cl->len - off : n)) {
			printf("# MISMATCH at operation %ld on %s: read %zu bytes at %zu, model length %zu\n",
			       opno, cl->path, got, off, cl->len);
			dump_log();
			return -1;
		}
		return compare(c, buf, off, got, "pread on the open handle");
	}
	if (op < 60) {                                  /* write at an offset */
		off = below(cl->len + 1024);
		n = 1 + below(MAXIO);
		if (off + n > MAXLEN)
			return 0;
		logop(c, "write %zu+%zu", off, n);
		fill(buf, n);
		if (full_write(cl->fd, buf, n, (off_t)off, 0) < 0)
			return failf("pwrite", c);
		if (off > cl->len)
			memset(cl->model + cl->len, 0, off - cl->len);
		memcpy(cl->model + off, buf, n);
		if (off + n > cl->len)
			cl->len = off + n;
		return 0;
	}
	if (op < 70) {                                  /* append */
		int fd;

		n = 1 + below(MAXIO / 4);
		if (cl->len + n > MAXLEN)
			return 0;
		logop(c, "append %zu (at %zu)", n, cl->len);
		/* an append descriptor of its own: commit the handle's writes first */
		if (reopen(c, 0) < 0)
			return -1;
		fd = open(cl->path, O_WRONLY | O_APPEND);
		if (fd < 0)
			return failf("open O_APPEND", c);
		fill(buf, n);
		if (full_write(fd, buf, n, 0, 1) < 0) {
			close(fd);
			return failf("write O_APPEND", c);
		}
		if (close(fd) != 0)
			return failf("close after append", c);
		memcpy(cl->model + cl->len, buf, n);
		cl->len += n;
		return reopen(c, 0);
	}
	if (op < 80) {                                  /* ftruncate */
		n = below(cl->len + 2048);
		if (n > MAXLEN)
			n = MAXLEN;
		logop(c, "truncate to %zu (from %zu)", n, cl->len);
		if (ftruncate(cl->fd, (off_t)n) != 0)
			return failf("ftruncate", c);
		if (n > cl->len)
			memset(cl->model + cl->len, 0, n - cl->len);
		cl->len = n;
		return 0;
	}
	if (op < 95) {                                  /* close (commit) and reopen */
		logop(c, "close and reopen");
		return reopen(c, 0);
	}
	logop(c, "reopen with O_TRUNC");        /* open O_TRUNC */
	return reopen(c, 1);
}

int main(int argc, char **argv)
{
	const char *seed_env = getenv("SMOLFS_TEST_SEED");
	uint64_t seed;
	long nops, i;
	int c;

	if (argc != 4) {
		fprintf(stderr, "usage: fs_fsx DIR NOPS MODELDIR\n");
		return 2;
	}
	nops = strtol(argv[2], NULL, 10);
	seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 10)
				     : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	printf("# fs_fsx: seed %" PRIu64 " (SMOLFS_TEST_SEED=%" PRIu64 " repeats this run), "
	       "%ld operations on %d cells\n", seed, seed, nops, NFILES);
	fflush(stdout);
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	if (rng_state == 0)
		rng_state = 1;

	for (c = 0; c < NFILES; c++) {
		snprintf(cells[c].path, sizeof(cells[c].path), "%s/fsx%d", argv[1], c);
		cells[c].model = calloc(MAXLEN + 1, 1);
		if (!cells[c].model)
			return 1;
		cells[c].fd = open(cells[c].path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (cells[c].fd < 0) {
			failf("create", c);
			return 1;
		}
	}
	for (i = 0; i < nops; i++) {
		opno = i;
		if (step() < 0)
			return 1;
	}
	opno = nops;
	for (c = 0; c < NFILES; c++) {
		char path[4096];
		FILE *f;

		if (close(cells[c].fd) != 0) {
			failf("final close", c);
			return 1;
		}
		cells[c].fd = -1;
		if (check_committed(c, "at the end") < 0)
			return 1;
		snprintf(path, sizeof(path), "%s/fsx%d", argv[3], c);
		f = fopen(path, "wb");
		if (!f || fwrite(cells[c].model, 1, cells[c].len, f) != cells[c].len || fclose(f)) {
			printf("# cannot write the model %s: %s\n", path, strerror(errno));
			return 1;
		}
		printf("# fsx%d ends with %zu bytes\n", c, cells[c].len);
	}
	printf("# %ld operations, no mismatch\n", nops);
	return 0;
}
