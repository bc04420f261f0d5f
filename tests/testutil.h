/*
 * testutil.h -- what smolfs's C tests share besides TAP (tap.h): a scratch
 * directory per test program, its recursive removal, the test scale, the
 * seeds of the randomized tests, and the process's maps of a file.
 *
 * SMOLFS_TEST_SCALE (default 1) multiplies the sizes and rounds of the long
 * randomized tests.  SMOLFS_TEST_SEED replays one seed; without it a
 * randomized test runs with its fixed seed and then with a second one drawn
 * at random for this run, and prints both, so every run explores new ground
 * and a failure can be replayed.  Header-only, like tap.h.
 */
#ifndef SMOLFS_TESTUTIL_H
#define SMOLFS_TESTUTIL_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The program's scratch directory, made by make_tmpdir(). */
static char tmpdir[512];

static int testutil_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

/* Remove path and everything under it; errors are ignored (a test's cleanup). */
__attribute__((unused))
static void rm_rf(const char *path)
{
	nftw(path, testutil_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Make tmpdir: $TMPDIR (or /tmp)/smolfs-NAME-XXXXXX.  Exits if it cannot. */
__attribute__((unused))
static void make_tmpdir(const char *name)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/smolfs-%s-XXXXXX", base && *base ? base : "/tmp",
		 name);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
}

/* SMOLFS_TEST_SCALE, or 1. */
__attribute__((unused))
static double test_scale(void)
{
	const char *s = getenv("SMOLFS_TEST_SCALE");
	double v = s ? atof(s) : 1.0;

	return v > 0 ? v : 1.0;
}

/* n times the scale, at least min. */
__attribute__((unused))
static long scaled(long n, long min)
{
	n = (long)((double)n * test_scale());
	return n < min ? min : n;
}

/*
 * Write number i of the engine's fault tests: the key "key%06d" and a value
 * that names it, padded to about 50 bytes, so a check finds a write that is
 * missing and a value that belongs to another key.
 */
struct test_write {
	char key[32], value[96];
	size_t klen, vlen;
};

__attribute__((unused))
static void test_write_make(long i, struct test_write *w)
{
	w->klen = (size_t)snprintf(w->key, sizeof(w->key), "key%06ld", i);
	w->vlen = (size_t)snprintf(w->value, sizeof(w->value),
				   "value of key %ld, padded out to be a little longer", i);
}

#ifdef SMOLFS_KV_H
/* Put write number i (test_write_make) into db with flags. */
__attribute__((unused))
static int test_write_put(struct kv_db *db, long i, unsigned flags)
{
	struct test_write w;

	test_write_make(i, &w);
	return kv_put(db, w.key, w.klen, w.value, w.vlen, flags);
}

/*
 * Whether db holds write number i with its value: 0 if it does, else the
 * read's error, or 1 for a key that holds another value.
 */
__attribute__((unused))
static int test_write_check(struct kv_db *db, long i)
{
	struct test_write w;
	char *got = NULL;
	size_t gl;
	int r;

	test_write_make(i, &w);
	r = kv_get(db, NULL, w.key, w.klen, &got, &gl);
	if (r == 0 && (gl != w.vlen || memcmp(got, w.value, gl)))
		r = 1;
	free(got);
	return r;
}

/* Is name among db's live trees?  1, 0, or -1 if kv_tree_list failed. */
__attribute__((unused))
static int test_tree_listed(struct kv_db *db, const char *name)
{
	char **names = NULL;
	size_t n = 0;
	int found = 0;

	if (kv_tree_list(db, &names, &n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		found |= strcmp(names[i], name) == 0;
		free(names[i]);
	}
	free(names);
	return found;
}
#endif

/*
 * The seeds to run a randomized test with: *seeds gets SMOLFS_TEST_SEED
 * alone if it is set, else fixed and then a seed drawn for this run.
 * Returns how many (1 or 2) and prints them, with how to replay each.
 */
__attribute__((unused))
static int test_seeds(uint64_t fixed, uint64_t seeds[2])
{
	const char *s = getenv("SMOLFS_TEST_SEED");
	struct timespec ts;
	uint64_t x;

	if (s && *s) {
		seeds[0] = strtoull(s, NULL, 0);
		printf("# seed %#llx (from SMOLFS_TEST_SEED)\n", (unsigned long long)seeds[0]);
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	seeds[0] = fixed;
	seeds[1] = x;
	printf("# seeds: %#llx (fixed), then %#llx (drawn for this run); replay one with "
	       "SMOLFS_TEST_SEED=<seed>\n", (unsigned long long)fixed, (unsigned long long)x);
	fflush(stdout);
	return 2;
}

/*
 * How many of this process's maps of path begin at file offset off (any
 * offset if off is -1), or -1 (/proc/self/maps).
 */
__attribute__((unused))
static int maps_at(const char *path, int64_t off)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096];
	size_t pl = strlen(path);
	int n = 0;

	if (!m)
		return -1;
	while (fgets(line, sizeof(line), m)) {
		size_t l = strlen(line);
		unsigned long long o;

		if (l && line[l - 1] == '\n')
			line[--l] = 0;
		if (l >= pl && !strcmp(line + l - pl, path) &&
		    sscanf(line, "%*x-%*x %*s %llx", &o) == 1 && (off < 0 || o == (unsigned long long)off))
			n++;
	}
	fclose(m);
	return n;
}

__attribute__((unused))
static int maps_of(const char *path)
{
	return maps_at(path, -1);
}

#endif
