/*
 * fs_readdir.c -- listings resumed while the directory changes, for
 * tests/fs_readdir.sh on a real mount.
 *
 *   fs_readdir family DIR N    DIR is a family directory of a row
 *   fs_readdir table DIR N     DIR is a table with a declared family "f"
 *
 * It makes N stable entries (cells c00000, c00002, ... or rows r00000,
 * r00002, ... each holding f/q), then, while a child process creates and
 * removes the odd-numbered entries between them over and over, lists DIR
 * in several ways, each several times:
 *   getdents64  with buffers of 80, 200 and 4096 bytes, to the end;
 *   seekdir     telldir at the middle, read to the end, seekdir back to the
 *               middle and read to the end again, then seekdir back to an
 *               offset of the first reply and read to the end once more;
 *   rewinddir   a second whole pass on the same stream.
 * Each pass must give every stable entry after its starting point exactly
 * once, no name twice, and no name that was never made; the passes resumed
 * at the middle give the same stable entries as the first pass gave after
 * it.  Prints "ok" and exits 0, or says what went wrong on stderr and
 * exits 1.  A test helper, not a test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 8

static int table_mode;
static const char *dir;
static int n;
static int failures;
static long churn_seen;   /* entries of the child's seen in listings */

static void complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fs_readdir: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	failures++;
}

static int make_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* Make entry i (a cell, or a row holding f/q). */
static int make_entry(int i)
{
	char p[4096];

	if (!table_mode) {
		snprintf(p, sizeof(p), "%s/c%05d", dir, i);
		return make_file(p, "x");
	}
	snprintf(p, sizeof(p), "%s/r%05d", dir, i);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(p, sizeof(p), "%s/r%05d/f", dir, i);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(p, sizeof(p), "%s/r%05d/f/q", dir, i);
	return make_file(p, "x");
}

static void remove_entry(int i)
{
	char p[4096];

	if (!table_mode) {
		snprintf(p, sizeof(p), "%s/c%05d", dir, i);
		unlink(p);
		return;
	}
	snprintf(p, sizeof(p), "%s/r%05d/f/q", dir, i);
	unlink(p);
	snprintf(p, sizeof(p), "%s/r%05d/f", dir, i);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/r%05d", dir, i);
	rmdir(p);
}

/*
 * The child: odd entries come and go until stop reads end of file (the
 * parent closed its end, or died); a byte on ready once it began.  Not
 * killed: a signal while it waits on the mount makes the kernel send
 * FUSE_INTERRUPT, and libfuse 3.14 keeps one that comes after its request
 * was answered on a list it never frees, a leak LeakSanitizer reports at
 * the daemon's exit (it failed the unmount assertion once under ASan).
 */
static void churn(int ready, int stop)
{
	unsigned k = 0;
	char c;

	make_entry(1);
	if (write(ready, "x", 1) != 1)
		_exit(1);
	close(ready);
	while (read(stop, &c, 1) < 0 && errno == EAGAIN) {
		int i = 1 + 2 * (int)((k * 7919u) % (unsigned)n);

		if (k % 2 == 0)
			make_entry(i);
		else
			remove_entry(1 + 2 * (int)(((k - 1) * 7919u) % (unsigned)n));
		k++;
	}
}

/*
 * The number of a name (c00012 -> 12); -1 for ".", "..", ".families" and a
 * version c00013@<ts> of a cell the other process wrote twice; -2 for a
 * name never made.
 */
static int entry_number(const char *name)
{
	char *end;
	long v;

	if (!strcmp(name, ".") || !strcmp(name, "..") || (table_mode && !strcmp(name, ".families")))
		return -1;
	if (name[0] != (table_mode ? 'r' : 'c') || strlen(name) < 6)
		return -2;
	v = strtol(name + 1, &end, 10);
	if (end != name + 6 || v < 0 || v >= 2 * n)
		return -2;
	if (*end) {   /* an older version of a cell the other process wrote twice */
		if (table_mode || v % 2 == 0 || end[0] != '@' || !end[1] ||
		    strspn(end + 1, "0123456789") != strlen(end + 1))
			return -2;
		return -1;
	}
	return (int)v;
}

/* What one pass saw: counts[i] for entry i. */
struct pass {
	int *counts;
	int names;
};

static void pass_init(struct pass *p)
{
	p->counts = calloc((size_t)(2 * n), sizeof(int));
	if (!p->counts) {
		perror("fs_readdir");
		exit(1);
	}
	p->names = 0;
}

static void pass_see(struct pass *p, const char *name, const char *how)
{
	int i = entry_number(name);

	if (i == -2) {
		complain("%s: an entry never made: '%s'", how, name);
		return;
	}
	if (i < 0)
		return;
	if (i % 2)
		churn_seen++;
	if (++p->counts[i] == 2)
		complain("%s: %s listed twice", how, name);
	p->names++;
}

/* Every stable entry >= from was seen once (and none below from, if strict). */
static void pass_check(struct pass *p, int from, const char *how)
{
	int i;

	for (i = 0; i < 2 * n; i += 2)
		if (i >= from && p->counts[i] != 1)
			complain("%s: stable entry %d listed %d times", how, i, p->counts[i]);
	free(p->counts);
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void list_getdents(size_t bufsize)
{
	char how[64];
	char *buf = malloc(bufsize);
	struct pass p;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	long got;

	snprintf(how, sizeof(how), "getdents64 of %zu bytes", bufsize);
	if (fd < 0 || !buf) {
		complain("%s: open %s: %s", how, dir, strerror(errno));
		free(buf);
		return;
	}
	pass_init(&p);
	while ((got = syscall(SYS_getdents64, fd, buf, bufsize)) > 0) {
		long off = 0;

		while (off < got) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);

			pass_see(&p, d->d_name, how);
			off += d->d_reclen;
		}
	}
	if (got < 0)
		complain("%s: getdents64: %s", how, strerror(errno));
	pass_check(&p, 0, how);
	close(fd);
	free(buf);
}

/* Read to the end from where the stream is. */
static void read_rest(DIR *d, struct pass *p, const char *how)
{
	struct dirent *e;

	errno = 0;
	while ((e = readdir(d)))
		pass_see(p, e->d_name, how);
	if (errno)
		complain("%s: readdir: %s", how, strerror(errno));
}

static void list_seek(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct pass p;
	long mid = -1, early = -1;
	int seen = 0, mid_entry = -1, early_entry = -1;
	int *tail1;

	if (!d) {
		complain("seekdir: opendir %s: %s", dir, strerror(errno));
		return;
	}
	pass_init(&p);
	while ((e = readdir(d))) {
		int i = entry_number(e->d_name);

		pass_see(&p, e->d_name, "first pass");
		if (i >= 0 && i % 2 == 0)
			seen++;
		if (early < 0 && seen == 3) {
			early = telldir(d);
			early_entry = i;
		}
		if (seen == n / 2) {
			mid = telldir(d);
			mid_entry = i;
			break;
		}
	}
	if (mid < 0 || early < 0) {
		complain("seekdir: %s lists fewer than half its stable entries (%d)", dir, seen);
		closedir(d);
		free(p.counts);
		return;
	}
	read_rest(d, &p, "first pass");
	tail1 = p.counts;
	{
		struct pass again;
		int i;

		pass_init(&again);
		seekdir(d, mid);
		read_rest(d, &again, "after seekdir to the middle");
		for (i = 0; i < 2 * n; i += 2)
			if (i > mid_entry && again.counts[i] != 1)
				complain("seekdir to the middle: stable entry %d listed %d times",
					 i, again.counts[i]);
			else if (i <= mid_entry && again.counts[i])
				complain("seekdir to the middle: entry %d, before it, listed", i);
		for (i = 0; i < 2 * n; i += 2)
			if (i > mid_entry && tail1[i] != 1)
				complain("first pass: stable entry %d listed %d times", i, tail1[i]);
		free(again.counts);

		pass_init(&again);
		seekdir(d, early);
		read_rest(d, &again, "after seekdir to an early offset");
		for (i = 0; i < 2 * n; i += 2)
			if ((i > early_entry) != (again.counts[i] == 1) || again.counts[i] > 1)
				complain("seekdir to an early offset (after %d): stable entry %d "
					 "listed %d times", early_entry, i, again.counts[i]);
		free(again.counts);

		pass_init(&again);
		rewinddir(d);
		read_rest(d, &again, "after rewinddir");
		pass_check(&again, 0, "after rewinddir");
	}
	free(tail1);
	closedir(d);
}

int main(int argc, char **argv)
{
	pid_t child;
	int i, r, pipefd[2], stopfd[2];
	char c;

	if (argc != 4 || (strcmp(argv[1], "family") && strcmp(argv[1], "table"))) {
		fprintf(stderr, "usage: fs_readdir family|table DIR N\n");
		return 2;
	}
	table_mode = !strcmp(argv[1], "table");
	dir = argv[2];
	n = atoi(argv[3]);
	if (n < 8) {
		fprintf(stderr, "fs_readdir: N must be 8 or more\n");
		return 2;
	}
	for (i = 0; i < 2 * n; i += 2)
		if (make_entry(i) < 0) {
			fprintf(stderr, "fs_readdir: making entry %d in %s: %s\n", i, dir,
				strerror(errno));
			return 1;
		}
	if (pipe(pipefd) < 0 || pipe2(stopfd, O_NONBLOCK) < 0) {
		perror("fs_readdir: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("fs_readdir: fork");
		return 1;
	}
	if (child == 0) {
		close(pipefd[0]);
		close(stopfd[1]);
		churn(pipefd[1], stopfd[0]);
		_exit(0);
	}
	close(pipefd[1]);
	close(stopfd[0]);
	if (read(pipefd[0], &c, 1) != 1) {   /* the listings start once entries come and go */
		fprintf(stderr, "fs_readdir: the child making entries did not start\n");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	close(pipefd[0]);
	for (r = 0; r < ROUNDS && failures < 20; r++) {
		list_getdents(80);
		list_getdents(200);
		list_getdents(4096);
		list_seek();
	}
	close(stopfd[1]);   /* the child ends after its current entry */
	waitpid(child, NULL, 0);
	fprintf(stderr, "fs_readdir: %ld entries of the other process's were listed\n",
		churn_seen);
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
