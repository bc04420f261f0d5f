/*
 * keysbench.c -- what a listing costs in bytes read, not in time.
 *
 * A small benchmark of engine/table.h that counts the SSTable bytes each
 * read makes the engine read (kv_stats.bytes_read_sst: block bytes read
 * from table files, cache misses only) and the blocks it touches (block
 * cache misses and hits), never its time, so its figures are the same on
 * a loaded machine.  Two tables, written and compacted to the bottom level:
 *
 *   big    one row whose family "f" holds -n cells of -s bytes each
 *          (default 20 cells of 1 MiB: a family directory of large files)
 *   wide   -r rows of -c cells of 100 bytes each (default 200 x 100: the
 *          rows of `ls TABLE`)
 *
 * Each read runs on a database just reopened (an empty block cache):
 *
 *   big  columns      tbl_columns of the family (what readdir of a family lists)
 *   big  keys_only    tbl_scan of the row with keys_only
 *   big  stat_cells   tbl_stat_cell of every cell (what getattr asks per file)
 *   big  full_scan    tbl_scan of the row with values, for comparison
 *   wide row_keys     tbl_scan with row_keys_only over every row (`ls TABLE`)
 *   wide keys_only    tbl_scan with keys_only over every row
 *
 * Values are db_bench's: half random printable bytes, half repeated (about
 * 50% compressible); -i makes them incompressible (random bytes).
 *
 *   keysbench [-d DIR] [-n CELLS] [-s BYTES] [-r ROWS] [-c CELLS] [-i]
 *
 * It is a benchmark, not a test: it checks every call, and judges nothing.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "table.h"

static const char *dir;
static struct tbl_options opts;

static void fail(const char *what, int err)
{
	fprintf(stderr, "keysbench: %s: %s\n", what, tbl_strerror(err));
	exit(1);
}

static uint64_t rnd_state = 301;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* n bytes of a value: half random printable, half repeated, or all random with incompressible. */
static void fill_value(char *p, size_t n, int incompressible)
{
	size_t half = incompressible ? n : n / 2;

	for (size_t i = 0; i < half; i++)
		p[i] = incompressible ? (char)rnd() : (char)(' ' + rnd() % 95);
	for (size_t i = half; i < n; i++)
		p[i] = p[i % (half ? half : 1)];
}

static struct tbl_db *open_db(void)
{
	struct tbl_db *db;
	int err = tbl_open(dir, &opts, &db);

	if (err)
		fail(dir, err);
	return db;
}

/* What one read cost: engine counters before and after. */
struct cost {
	struct kv_stats a, b;
	uint64_t items, scan_bytes;
};

static void cost_start(struct tbl_db *db, struct cost *c)
{
	memset(c, 0, sizeof(*c));
	kv_get_stats(tbl_kv(db), &c->a);
}

static void cost_report(struct tbl_db *db, struct cost *c, const char *table, const char *what)
{
	kv_get_stats(tbl_kv(db), &c->b);
	printf("%-5s %-11s %8llu %14llu %12llu %10llu %16llu\n", table, what,
	       (unsigned long long)c->items,
	       (unsigned long long)(c->b.bytes_read_sst - c->a.bytes_read_sst),
	       (unsigned long long)(c->b.block_cache_misses - c->a.block_cache_misses),
	       (unsigned long long)(c->b.block_cache_hits - c->a.block_cache_hits),
	       (unsigned long long)c->scan_bytes);
}

static void scan(const char *table, const struct tbl_read *r, const char *what, uint64_t *sizes,
		 size_t nsizes)
{
	struct tbl_db *db = open_db();
	const struct tbl_row *row;
	struct tbl_scan_counts sc;
	struct tbl_scan *s;
	struct cost c;
	int err;

	cost_start(db, &c);
	if ((err = tbl_scan_new(db, table, r, &s)))
		fail("tbl_scan_new", err);
	while ((err = tbl_scan_next(s, &row)) == 1) {
		c.items++;
		for (size_t i = 0; i < row->ncells; i++)
			if (i < nsizes && row->cells[i].value_size != sizes[i])
				fail("a cell's value_size", -EPROTO);
	}
	if (err < 0)
		fail("tbl_scan_next", err);
	tbl_scan_counts(s, &sc);
	c.scan_bytes = sc.bytes;
	tbl_scan_free(s);
	cost_report(db, &c, table, what);
	if ((err = tbl_close(db)))
		fail("tbl_close", err);
}

static void columns(size_t ncells, size_t size)
{
	struct tbl_db *db = open_db();
	const struct tbl_column *col;
	struct tbl_columns *cl;
	struct cost c;
	int err;

	cost_start(db, &c);
	if ((err = tbl_columns_new(db, NULL, "big", "row", 3, "f", NULL, 0, 0, 0, &cl)))
		fail("tbl_columns_new", err);
	while ((err = tbl_columns_next(cl, &col)) == 1) {
		c.items++;
		if (col->value_size != size || col->text_size != size)
			fail("a column's sizes", -EPROTO);
	}
	if (err < 0)
		fail("tbl_columns_next", err);
	tbl_columns_free(cl);
	if (c.items != ncells)
		fail("the number of columns listed", -EPROTO);
	cost_report(db, &c, "big", "columns");
	if ((err = tbl_close(db)))
		fail("tbl_close", err);
}

static void stat_cells(size_t ncells, size_t size)
{
	struct tbl_db *db = open_db();
	struct tbl_cell_stat st;
	struct cost c;
	char q[32];
	int err;

	cost_start(db, &c);
	for (size_t i = 0; i < ncells; i++) {
		int n = snprintf(q, sizeof(q), "q%06zu", i);

		if ((err = tbl_stat_cell(db, NULL, "big", "row", 3, "f", q, (size_t)n,
					 TBL_TS_NEWEST, &st)))
			fail("tbl_stat_cell", err);
		if (st.value_size != size)
			fail("a cell's value_size", -EPROTO);
		c.items++;
	}
	cost_report(db, &c, "big", "stat_cells");
	if ((err = tbl_close(db)))
		fail("tbl_close", err);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/keysbench.XXXXXX";
	size_t ncells = 20, size = 1u << 20, rows = 200, wide_cells = 100;
	int incompressible = 0, own_dir = 0, c, err;
	struct tbl_family_settings fs;
	struct tbl_db *db;
	uint64_t *sizes;
	char *val;

	while ((c = getopt(argc, argv, "d:n:s:r:c:i")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'n': ncells = strtoul(optarg, NULL, 0); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'r': rows = strtoul(optarg, NULL, 0); break;
		case 'c': wide_cells = strtoul(optarg, NULL, 0); break;
		case 'i': incompressible = 1; break;
		default:
			fprintf(stderr, "usage: keysbench [-d DIR] [-n CELLS] [-s BYTES] [-r ROWS] "
				"[-c CELLS] [-i]\n");
			return 2;
		}
	}
	if (ncells < 1 || size < 1 || size > TBL_DEFAULT_MAX_VALUE) {
		fprintf(stderr, "keysbench: -n must be >= 1 and -s in 1..%u\n",
			TBL_DEFAULT_MAX_VALUE);
		return 2;
	}
	if (!dir) {
		if (!mkdtemp(tmp)) {
			perror("keysbench: mkdtemp");
			return 1;
		}
		dir = tmp;
		own_dir = 1;
	}
	tbl_options_init(&opts);
	db = open_db();
	tbl_family_settings_init(&fs);
	fs.type = CELL_BYTES;
	if ((err = tbl_create_table(db, "big")) || (err = tbl_add_family(db, "big", "f", &fs)) ||
	    (err = tbl_create_table(db, "wide")) || (err = tbl_add_family(db, "wide", "f", &fs)))
		fail("schema", err);
	val = malloc(size > 100 ? size : 100);
	sizes = calloc(ncells, sizeof(*sizes));
	if (!val || !sizes)
		fail("malloc", -ENOMEM);
	for (size_t i = 0; i < ncells; i++) {
		char q[32];
		int n = snprintf(q, sizeof(q), "q%06zu", i);
		struct cell_value v = { .type = CELL_BYTES, .v.data = { val, size } };

		fill_value(val, size, incompressible);
		sizes[i] = size;
		if ((err = tbl_put(db, "big", "row", 3, "f", q, (size_t)n, TBL_TS_NOW, &v, 0)))
			fail("tbl_put big", err);
	}
	for (size_t r = 0; r < rows; r++) {
		char rk[32];
		int rl = snprintf(rk, sizeof(rk), "row%08zu", r);

		for (size_t i = 0; i < wide_cells; i++) {
			char q[32];
			int n = snprintf(q, sizeof(q), "q%06zu", i);
			struct cell_value v = { .type = CELL_BYTES, .v.data = { val, 100 } };

			fill_value(val, 100, incompressible);
			if ((err = tbl_put(db, "wide", rk, (size_t)rl, "f", q, (size_t)n, TBL_TS_NOW,
					   &v, 0)))
				fail("tbl_put wide", err);
		}
	}
	if ((err = tbl_compact(db, NULL, NULL, NULL)))
		fail("tbl_compact", err);
	if ((err = tbl_close(db)))
		fail("tbl_close", err);

	printf("# big: 1 row x %zu cells x %zu bytes; wide: %zu rows x %zu cells x 100 bytes; "
	       "values %s\n", ncells, size, rows, wide_cells,
	       incompressible ? "incompressible" : "about 50% compressible");
	printf("# each read on a database just reopened; sst_bytes = kv_stats.bytes_read_sst\n");
	printf("%-5s %-11s %8s %14s %12s %10s %16s\n", "table", "read", "items", "sst_bytes",
	       "blocks_read", "cache_hits", "scan_count_bytes");
	columns(ncells, size);
	{
		struct tbl_read r = { .keys_only = 1 };
		scan("big", &r, "keys_only", sizes, ncells);
	}
	stat_cells(ncells, size);
	{
		struct tbl_read r = { 0 };
		scan("big", &r, "full_scan", sizes, ncells);
	}
	{
		struct tbl_read r = { .row_keys_only = 1 };
		scan("wide", &r, "row_keys", NULL, 0);
	}
	{
		struct tbl_read r = { .keys_only = 1 };
		scan("wide", &r, "keys_only", NULL, 0);
	}
	free(val);
	free(sizes);
	if (own_dir)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
