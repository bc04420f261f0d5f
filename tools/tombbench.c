/*
 * tombbench.c -- does a read cost the same whatever was deleted elsewhere?
 *
 * A small benchmark of engine/table.h: one table, "other", holds a row;
 * another, "big", receives row deletes (each one range tombstone), in
 * stages up to the counts given (default 0, 10000, 50000).  At each stage it
 * times, through the public calls only:
 *   - tbl_get_row of the row of "other" (a table no delete touched), and
 *   - a cycle of tbl_put of a cell of "other", a read of it, its
 *     TBL_DELETE_CELL and a read finding it gone, as `echo x > f; stat f;
 *     rm f; stat f` in a loop asks.  Each stage cycles on a row of its own,
 *     so that stages differ only by the deletes in "big": the cycles' own
 *     dead versions pile up in their row within a stage (-n x -r cycles),
 *     the same at every stage.
 * Everything stays in the memtable (the write buffer is made large enough),
 * where the tombstones were gathered per read before the memtable's range
 * index.  It prints microseconds per call, the median of --repeat batches.
 *
 *   tombbench [-d DIR] [-n CALLS] [-r REPEAT] [COUNT...]
 *
 * It is a benchmark, not a test: it checks every call, and judges nothing.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "table.h"

static void fail(const char *what, int err)
{
	fprintf(stderr, "tombbench: %s: %s\n", what, tbl_strerror(err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Microseconds per tbl_get_row of the untouched row: the median of repeat batches. */
static double time_get_row(struct tbl_db *db, int calls, int repeat)
{
	double us[64];

	for (int r = 0; r < repeat; r++) {
		double t0 = now();
		for (int i = 0; i < calls; i++) {
			struct tbl_row *row;
			int err = tbl_get_row(db, "other", "row", 3, NULL, &row);
			if (err)
				fail("tbl_get_row other/row", err);
			tbl_row_free(row);
		}
		us[r] = (now() - t0) * 1e6 / calls;
	}
	return median(us, repeat);
}

/* The cell other/<row>/f:tmp is visible (1) or not (0), read as a lookup would. */
static int tmp_visible(struct tbl_db *db, const char *rk)
{
	struct tbl_read rd = { .qualifier = "tmp", .qualifier_len = 3, .qualifier_exact = 1 };
	struct tbl_row *row;
	int err = tbl_get_row(db, "other", rk, strlen(rk), &rd, &row);

	if (err == -ENOENT)
		return 0;
	if (err)
		fail("tbl_get_row other/row/f:tmp", err);
	tbl_row_free(row);
	return 1;
}

/*
 * Microseconds per cycle of a cell set, a read of it, its DELETE_CELL and a
 * read that finds it gone (what `echo x > f; stat f; rm f; stat f` asks).
 */
static double time_set_delete(struct tbl_db *db, const char *rk, int calls, int repeat)
{
	size_t rl = strlen(rk);
	struct tbl_mutation del = { .op = TBL_DELETE_CELL, .family = "f", .qualifier = "tmp",
				    .qualifier_len = 3 };
	struct cell_value v = { .type = CELL_STRING, .v.data = { "x", 1 } };
	double us[64];

	for (int r = 0; r < repeat; r++) {
		double t0 = now();
		for (int i = 0; i < calls; i++) {
			int err = tbl_put(db, "other", rk, rl, "f", "tmp", 3, TBL_TS_NOW, &v, 0);
			if (err)
				fail("tbl_put other/row/f:tmp", err);
			if (!tmp_visible(db, rk))
				fail("other/row/f:tmp after its set", -ENOENT);
			err = tbl_mutate_row(db, "other", rk, rl, &del, 1, 0, NULL);
			if (err)
				fail("delete other/row/f:tmp", err);
			if (tmp_visible(db, rk))
				fail("other/row/f:tmp after its delete", -EEXIST);
		}
		us[r] = (now() - t0) * 1e6 / calls;
	}
	return median(us, repeat);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void delete_rows(struct tbl_db *db, long from, long to)
{
	struct tbl_mutation del = { .op = TBL_DELETE_ROW };
	char key[32];

	for (long i = from; i < to; i++) {
		int n = snprintf(key, sizeof(key), "row%08ld", i);
		int err = tbl_mutate_row(db, "big", key, (size_t)n, &del, 1, 0, NULL);
		if (err)
			fail("delete a row of big", err);
	}
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	char tmp[] = "/tmp/tombbench.XXXXXX";
	int calls = 200, repeat = 5, c, err;
	long counts[32] = { 0, 10000, 50000 }, done = 0;
	int ncounts = 3;
	struct tbl_options o;
	struct tbl_family_settings fs;
	struct cell_value v = { .type = CELL_STRING, .v.data = { "hello", 5 } };
	struct tbl_db *db;

	while ((c = getopt(argc, argv, "d:n:r:")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'n': calls = atoi(optarg); break;
		case 'r': repeat = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: tombbench [-d DIR] [-n CALLS] [-r REPEAT] [COUNT...]\n");
			return 2;
		}
	}
	if (calls < 1 || repeat < 1 || repeat > 64) {
		fprintf(stderr, "tombbench: -n must be >= 1 and -r in 1..64\n");
		return 2;
	}
	if (optind < argc) {
		ncounts = 0;
		for (; optind < argc && ncounts < 32; optind++)
			counts[ncounts++] = atol(argv[optind]);
	}
	if (!dir) {
		if (!mkdtemp(tmp)) {
			perror("tombbench: mkdtemp");
			return 1;
		}
		dir = tmp;
	}
	tbl_options_init(&o);
	o.kv.write_buffer_size = 512u << 20;   /* every tombstone stays in the memtable */
	if ((err = tbl_open(dir, &o, &db)))
		fail(dir, err);
	tbl_family_settings_init(&fs);
	if ((err = tbl_create_table(db, "other")) || (err = tbl_add_family(db, "other", "f", &fs)) ||
	    (err = tbl_create_table(db, "big")) || (err = tbl_add_family(db, "big", "f", &fs)))
		fail("schema", err);
	if ((err = tbl_put(db, "other", "row", 3, "f", "q", 1, TBL_TS_NOW, &v, 0)))
		fail("tbl_put other/row", err);

	printf("%12s %16s %20s\n", "row deletes", "get_row us", "set/get/del/get us");
	for (int i = 0; i < ncounts; i++) {
		if (counts[i] > done) {
			delete_rows(db, done, counts[i]);
			done = counts[i];
		}
		double g = time_get_row(db, calls, repeat);
		char rk[32];
		snprintf(rk, sizeof(rk), "cycle%d", i);
		double s = time_set_delete(db, rk, calls, repeat);
		printf("%12ld %16.2f %20.2f\n", done, g, s);
		fflush(stdout);
	}
	if ((err = tbl_close(db)))
		fail("tbl_close", err);
	if (dir == tmp && nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "tombbench: could not remove %s: %s\n", tmp, strerror(errno));
	return 0;
}
