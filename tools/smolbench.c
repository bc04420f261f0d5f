/*
 * smolbench.c -- measure smolfs's key-value engine side by side with its peers.
 *
 * smolbench runs a fixed set of workloads (sequential and random fills,
 * overwrites, point reads, a full scan, seeks with short scans, and point reads
 * after a full compaction) on 16-byte keys, first against smolfs's own engine
 * through engine/kv.h and, when built with --with-peers, against LevelDB and
 * RocksDB through their C APIs, all configured alike as far as each allows.
 * It is a benchmark, not a test: it checks every call so that a failure is
 * never mistaken for speed, but it judges nothing.
 *
 * Each (engine, value size, repetition) runs in its own forked child in a
 * fresh directory, so one engine's caches, threads and heap never weigh on the
 * next, and the peak RSS that wait4() reports belongs to that engine alone.
 * The child sends one fixed-size record per workload back through a pipe; the
 * parent keeps them, prints progress, and at the end prints medians and the
 * smolfs/peer ratios.  Keys, values and the random sequences come from fixed
 * seeds, so every engine sees exactly the same operations in the same order.
 *
 * The workload code talks to a small table of function pointers (struct
 * engine_ops), one per engine; the cost of that indirection is the same for
 * every engine.  The man page is man/smolbench.1.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kv.h"

#ifdef HAVE_PEERS
#include <leveldb/c.h>
#include <rocksdb/c.h>
#endif

/* ------------------------------------------------------------------ settings */

/*
 * The settings every engine gets, where it has the knob.  They are the
 * smolfs defaults (engine/kv.h), written out here so that a change of default
 * in the engine does not silently change what the benchmark compares.
 */
#define KEY_SIZE          16
#define WRITE_BUFFER_SIZE (64u << 20)
#define BLOCK_CACHE_SIZE  (64u << 20)
#define BLOOM_BITS        10
#define BLOCK_SIZE        4096
#define MAX_OPEN_FILES    1000
#define ZSTD_LEVEL        1

#define MAX_VALUE_SIZES   8
#define DEFAULT_NUM       1000000
#define DEFAULT_VALUE     100
#define DEFAULT_SEEK_READ 100

/* Bytes in a megabyte for MB/s: SI, as disk and network speeds are quoted. */
#define MB 1e6
#define MIB (1024.0 * 1024.0)

enum workload {
	W_FILLSEQ,
	W_FILLRANDOM,
	W_OVERWRITE,
	W_READRANDOM,
	W_READSEQ,
	W_SEEKRANDOM,
	W_READRANDOM_COMPACTED,
	NWORKLOADS
};

static const char *const workload_names[NWORKLOADS] = {
	"fillseq", "fillrandom", "overwrite", "readrandom", "readseq", "seekrandom",
	"readrandom-compacted",
};

enum engine_id { E_SMOLFS, E_LEVELDB, E_ROCKSDB, NENGINES };

static const char *const engine_names[NENGINES] = { "smolfs", "leveldb", "rocksdb" };

struct config {
	uint64_t num;                  /* entries written by the fills, and the key space */
	uint64_t reads;                /* operations of the read workloads */
	size_t value_sizes[MAX_VALUE_SIZES];
	int nvalue_sizes;
	int batch;                     /* entries per write */
	int sync;                      /* fsync every write */
	int repeat;                    /* runs of everything, for medians */
	int seek_reads;                /* entries read after each seek */
	int workloads[NWORKLOADS];     /* in the order they run */
	int nworkloads;
	int engines[NENGINES];
	int nengines;
	uint64_t seed;
	char *db_base;                 /* every child directory is made in here */
	int db_base_is_temp;           /* made by us with mkdtemp: removed at exit */
	const char *json_path;         /* NULL: no JSON */
	int quiet;                     /* no progress lines on stderr */
};

/* ------------------------------------------------------------------ the pipe protocol */

/*
 * What a child tells its parent: REC_START when a workload begins (so that a
 * crash can be pinned on a workload), REC_DONE with its measurements when it
 * ends, REC_NOTE for a remark about the engine's settings.  A record is far
 * smaller than PIPE_BUF, so each write() arrives whole.
 */
enum { REC_START = 1, REC_DONE = 2, REC_NOTE = 3 };

/* A REC_NOTE: RocksDB was built without zstd, so snappy was used instead. */
#define NOTE_ROCKSDB_SNAPPY 1

struct record {
	uint32_t kind;
	uint32_t workload;
	double secs;               /* the timed part of the workload */
	double compact_secs;       /* readrandom-compacted: time of the compaction */
	uint64_t ops;
	uint64_t bytes;            /* key + value bytes written or read */
	uint64_t found;            /* reads that found their key; seeks that found an entry */
	uint64_t disk_bytes;       /* sum of the db directory's file sizes after the workload */
	uint64_t rss_kb;           /* the child's peak RSS so far */
	uint32_t note;
};

/* Exit status of a child whose engine could not open its database. */
#define EXIT_OPEN_FAILED 3

/* ------------------------------------------------------------------ small helpers */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("smolbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* splitmix64: small, fast, and good enough to pick keys and value bytes. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A number in [0, n); the modulo bias is below 1e-9 for any n we accept. */
static uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return rng_next(state) % n;
}

/* The key of entry n: its decimal number, zero-padded to KEY_SIZE characters. */
static void make_key(char *key, uint64_t n)
{
	for (int i = KEY_SIZE - 1; i >= 0; i--) {
		key[i] = '0' + n % 10;
		n /= 10;
	}
}

static long peak_rss_kb(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ru.ru_maxrss;       /* kilobytes on Linux */
}

/* Sum of the sizes of the regular files under dir (the database's footprint). */
static uint64_t dir_bytes(int dirfd_in)
{
	uint64_t sum = 0;
	struct dirent *de;
	DIR *d;

	d = fdopendir(dirfd_in);
	if (!d) {
		close(dirfd_in);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;      /* removed by a compaction while we looked */
		if (S_ISREG(st.st_mode)) {
			sum += st.st_size;
		} else if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY);

			if (fd >= 0)
				sum += dir_bytes(fd);
		}
	}
	closedir(d);
	return sum;
}

static uint64_t disk_usage(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	return fd < 0 ? 0 : dir_bytes(fd);
}

/* Remove what is inside the directory dirfd_in refers to; closes dirfd_in. */
static int empty_dir(int dirfd_in)
{
	struct dirent *de;
	int err = 0;
	DIR *d;

	d = fdopendir(dirfd_in);
	if (!d) {
		err = -errno;
		close(dirfd_in);
		return err;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (fd >= 0)
				empty_dir(fd);
			if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) != 0 && !err)
				err = -errno;
		} else if (unlinkat(dirfd(d), de->d_name, 0) != 0 && !err) {
			err = -errno;
		}
	}
	closedir(d);
	return err;
}

/* rm -r path; a path that does not exist is not an error. */
static int remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	int err;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = empty_dir(fd);
	if (rmdir(path) != 0 && !err)
		err = -errno;
	return err;
}

/* ------------------------------------------------------------------ the engines */

/* One entry to write: the key and a slice of the value pool. */
struct pair {
	const char *key;
	const char *val;
	size_t vlen;
};

/*
 * One open database of any engine.  Only the fields of its engine are used;
 * err holds the message of the last failure, for the report.
 */
struct bench_db {
	const struct engine_ops *ops;
	int sync;
	char err[512];

	struct kv_db *kv;
	struct kv_batch *kv_batch;
	struct kv_iter *kv_it;
#ifdef HAVE_PEERS
	leveldb_t *ldb;
	leveldb_options_t *lopt;
	leveldb_cache_t *lcache;
	leveldb_filterpolicy_t *lfilter;
	leveldb_readoptions_t *lro;
	leveldb_writeoptions_t *lwo;
	leveldb_writebatch_t *lbatch;
	leveldb_iterator_t *lit;

	rocksdb_t *rdb;
	rocksdb_options_t *ropt;
	rocksdb_readoptions_t *rro;
	rocksdb_writeoptions_t *rwo;
	rocksdb_writebatch_t *rbatch;
	rocksdb_iterator_t *rit;
	int rocks_snappy;          /* zstd was not available: we fell back to snappy */
#endif
};

/*
 * What the workloads need of an engine.  Every call that can fail returns 0
 * or a negative errno (-EIO for a peer's error string) and leaves a message in
 * b->err; get() returns 1 if the key was found and 0 if not.  One iterator at a
 * time per database.
 */
struct engine_ops {
	const char *name;
	int (*open)(struct bench_db *b, const char *dir);
	void (*close)(struct bench_db *b);
	int (*write)(struct bench_db *b, const struct pair *p, size_t n);
	int (*get)(struct bench_db *b, const char *key, size_t klen, size_t *vlen);
	int (*iter_new)(struct bench_db *b);
	int (*iter_free)(struct bench_db *b);       /* returns the iterator's status */
	void (*seek_first)(struct bench_db *b);
	void (*seek)(struct bench_db *b, const char *key, size_t klen);
	int (*valid)(struct bench_db *b);
	void (*next)(struct bench_db *b);
	size_t (*entry)(struct bench_db *b);        /* key + value length of the current entry */
	int (*compact)(struct bench_db *b);
};

/* ---- smolfs */

static int smol_fail(struct bench_db *b, const char *call, int err)
{
	snprintf(b->err, sizeof(b->err), "%s: %s", call, kv_strerror(err));
	return err;
}

static int smol_open(struct bench_db *b, const char *dir)
{
	struct kv_options opt;
	int err;

	kv_options_init(&opt);
	opt.create_if_missing = 1;
	opt.write_buffer_size = WRITE_BUFFER_SIZE;
	opt.block_cache_size = BLOCK_CACHE_SIZE;
	opt.bloom_bits_per_key = BLOOM_BITS;
	opt.block_size = BLOCK_SIZE;
	opt.max_open_files = MAX_OPEN_FILES;
	opt.compression_level = ZSTD_LEVEL;
	opt.sync_wal = 0;              /* --sync is passed per write instead */
	err = kv_open(dir, &opt, &b->kv);
	if (err)
		return smol_fail(b, "kv_open", err);
	b->kv_batch = kv_batch_new();
	if (!b->kv_batch)
		return smol_fail(b, "kv_batch_new", -ENOMEM);
	return 0;
}

static void smol_close(struct bench_db *b)
{
	int err;

	if (b->kv_batch)
		kv_batch_free(b->kv_batch);
	b->kv_batch = NULL;
	if (!b->kv)
		return;
	err = kv_close(b->kv);
	b->kv = NULL;
	/* A background error surfacing at close would falsify the numbers. */
	if (err)
		die("smolfs: kv_close: %s", kv_strerror(err));
}

static int smol_write(struct bench_db *b, const struct pair *p, size_t n)
{
	unsigned flags = b->sync ? KV_SYNC : 0;
	int err;

	if (n == 1) {
		err = kv_put(b->kv, p->key, KEY_SIZE, p->val, p->vlen, flags);
		return err ? smol_fail(b, "kv_put", err) : 0;
	}
	kv_batch_clear(b->kv_batch);
	for (size_t i = 0; i < n; i++) {
		err = kv_batch_put(b->kv_batch, p[i].key, KEY_SIZE, p[i].val, p[i].vlen);
		if (err)
			return smol_fail(b, "kv_batch_put", err);
	}
	err = kv_write(b->kv, b->kv_batch, flags);
	return err ? smol_fail(b, "kv_write", err) : 0;
}

static int smol_get(struct bench_db *b, const char *key, size_t klen, size_t *vlen)
{
	char *val;
	int err;

	err = kv_get(b->kv, NULL, key, klen, &val, vlen);
	if (err == -ENOENT)
		return 0;
	if (err)
		return smol_fail(b, "kv_get", err);
	free(val);
	return 1;
}

static int smol_iter_new(struct bench_db *b)
{
	struct kv_read_options ro;

	memset(&ro, 0, sizeof(ro));
	b->kv_it = kv_iter_new(b->kv, &ro);
	return b->kv_it ? 0 : smol_fail(b, "kv_iter_new", -ENOMEM);
}

static int smol_iter_free(struct bench_db *b)
{
	int err = kv_iter_status(b->kv_it);

	kv_iter_free(b->kv_it);
	b->kv_it = NULL;
	return err ? smol_fail(b, "kv_iter", err) : 0;
}

static void smol_seek_first(struct bench_db *b)
{
	kv_iter_seek_first(b->kv_it);
}

static void smol_seek(struct bench_db *b, const char *key, size_t klen)
{
	kv_iter_seek(b->kv_it, key, klen);
}

static int smol_valid(struct bench_db *b)
{
	return kv_iter_valid(b->kv_it);
}

static void smol_next(struct bench_db *b)
{
	kv_iter_next(b->kv_it);
}

static size_t smol_entry(struct bench_db *b)
{
	size_t klen, vlen;

	kv_iter_key(b->kv_it, &klen);
	kv_iter_value(b->kv_it, &vlen);
	return klen + vlen;
}

static int smol_compact(struct bench_db *b)
{
	int err = kv_compact_range(b->kv, NULL, 0, NULL, 0);

	return err ? smol_fail(b, "kv_compact_range", err) : 0;
}

static const struct engine_ops smol_ops = {
	.name = "smolfs",
	.open = smol_open,
	.close = smol_close,
	.write = smol_write,
	.get = smol_get,
	.iter_new = smol_iter_new,
	.iter_free = smol_iter_free,
	.seek_first = smol_seek_first,
	.seek = smol_seek,
	.valid = smol_valid,
	.next = smol_next,
	.entry = smol_entry,
	.compact = smol_compact,
};

#ifdef HAVE_PEERS
/*
 * A peer's error arrives as a malloc'd string in *errp; keep a copy in
 * b->err, free the original, and report -EIO.  Returns 0 if there was none.
 */
static int peer_fail(struct bench_db *b, const char *call, char **errp, void (*freefn)(void *))
{
	if (!*errp)
		return 0;
	snprintf(b->err, sizeof(b->err), "%s: %s", call, *errp);
	freefn(*errp);
	*errp = NULL;
	return -EIO;
}

/* ---- LevelDB */

static int ldb_open(struct bench_db *b, const char *dir)
{
	char *err = NULL;

	b->lopt = leveldb_options_create();
	b->lcache = leveldb_cache_create_lru(BLOCK_CACHE_SIZE);
	b->lfilter = leveldb_filterpolicy_create_bloom(BLOOM_BITS);
	leveldb_options_set_create_if_missing(b->lopt, 1);
	leveldb_options_set_write_buffer_size(b->lopt, WRITE_BUFFER_SIZE);
	leveldb_options_set_cache(b->lopt, b->lcache);
	leveldb_options_set_filter_policy(b->lopt, b->lfilter);
	leveldb_options_set_block_size(b->lopt, BLOCK_SIZE);
	leveldb_options_set_max_open_files(b->lopt, MAX_OPEN_FILES);
	/* Snappy is the only compressor LevelDB has. */
	leveldb_options_set_compression(b->lopt, leveldb_snappy_compression);

	b->lro = leveldb_readoptions_create();
	/* smolfs verifies every block it reads; so must the peers. */
	leveldb_readoptions_set_verify_checksums(b->lro, 1);
	b->lwo = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(b->lwo, b->sync);
	b->lbatch = leveldb_writebatch_create();

	b->ldb = leveldb_open(b->lopt, dir, &err);
	return peer_fail(b, "leveldb_open", &err, leveldb_free);
}

static void ldb_close(struct bench_db *b)
{
	/* The options, cache and filter must outlive the database. */
	if (b->ldb)
		leveldb_close(b->ldb);
	if (b->lbatch)
		leveldb_writebatch_destroy(b->lbatch);
	if (b->lwo)
		leveldb_writeoptions_destroy(b->lwo);
	if (b->lro)
		leveldb_readoptions_destroy(b->lro);
	if (b->lopt)
		leveldb_options_destroy(b->lopt);
	if (b->lfilter)
		leveldb_filterpolicy_destroy(b->lfilter);
	if (b->lcache)
		leveldb_cache_destroy(b->lcache);
	b->ldb = NULL;
	b->lbatch = NULL;
	b->lwo = NULL;
	b->lro = NULL;
	b->lopt = NULL;
	b->lfilter = NULL;
	b->lcache = NULL;
}

static int ldb_write(struct bench_db *b, const struct pair *p, size_t n)
{
	char *err = NULL;

	if (n == 1) {
		leveldb_put(b->ldb, b->lwo, p->key, KEY_SIZE, p->val, p->vlen, &err);
		return peer_fail(b, "leveldb_put", &err, leveldb_free);
	}
	leveldb_writebatch_clear(b->lbatch);
	for (size_t i = 0; i < n; i++)
		leveldb_writebatch_put(b->lbatch, p[i].key, KEY_SIZE, p[i].val, p[i].vlen);
	leveldb_write(b->ldb, b->lwo, b->lbatch, &err);
	return peer_fail(b, "leveldb_write", &err, leveldb_free);
}

static int ldb_get(struct bench_db *b, const char *key, size_t klen, size_t *vlen)
{
	char *err = NULL;
	char *val;

	val = leveldb_get(b->ldb, b->lro, key, klen, vlen, &err);
	if (err)
		return peer_fail(b, "leveldb_get", &err, leveldb_free);
	if (!val)
		return 0;
	leveldb_free(val);
	return 1;
}

static int ldb_iter_new(struct bench_db *b)
{
	b->lit = leveldb_create_iterator(b->ldb, b->lro);
	return 0;
}

static int ldb_iter_free(struct bench_db *b)
{
	char *err = NULL;

	leveldb_iter_get_error(b->lit, &err);
	leveldb_iter_destroy(b->lit);
	b->lit = NULL;
	return peer_fail(b, "leveldb iterator", &err, leveldb_free);
}

static void ldb_seek_first(struct bench_db *b)
{
	leveldb_iter_seek_to_first(b->lit);
}

static void ldb_seek(struct bench_db *b, const char *key, size_t klen)
{
	leveldb_iter_seek(b->lit, key, klen);
}

static int ldb_valid(struct bench_db *b)
{
	return leveldb_iter_valid(b->lit);
}

static void ldb_next(struct bench_db *b)
{
	leveldb_iter_next(b->lit);
}

static size_t ldb_entry(struct bench_db *b)
{
	size_t klen, vlen;

	leveldb_iter_key(b->lit, &klen);
	leveldb_iter_value(b->lit, &vlen);
	return klen + vlen;
}

static int ldb_compact(struct bench_db *b)
{
	/* LevelDB's C API reports no error from a manual compaction. */
	leveldb_compact_range(b->ldb, NULL, 0, NULL, 0);
	return 0;
}

static const struct engine_ops ldb_ops = {
	.name = "leveldb",
	.open = ldb_open,
	.close = ldb_close,
	.write = ldb_write,
	.get = ldb_get,
	.iter_new = ldb_iter_new,
	.iter_free = ldb_iter_free,
	.seek_first = ldb_seek_first,
	.seek = ldb_seek,
	.valid = ldb_valid,
	.next = ldb_next,
	.entry = ldb_entry,
	.compact = ldb_compact,
};

/* ---- RocksDB */

static rocksdb_options_t *rdb_options(int compression)
{
	rocksdb_block_based_table_options_t *bbto = rocksdb_block_based_options_create();
	rocksdb_filterpolicy_t *bloom = rocksdb_filterpolicy_create_bloom(BLOOM_BITS);
	rocksdb_cache_t *cache = rocksdb_cache_create_lru(BLOCK_CACHE_SIZE);
	rocksdb_options_t *opt = rocksdb_options_create();

	/*
	 * The table options take ownership of the filter policy and share the
	 * cache; the options copy the table options.  So only our handles of the
	 * cache and the table options are ours to free.
	 */
	rocksdb_block_based_options_set_block_size(bbto, BLOCK_SIZE);
	rocksdb_block_based_options_set_block_cache(bbto, cache);
	rocksdb_block_based_options_set_filter_policy(bbto, bloom);
	rocksdb_options_set_block_based_table_factory(opt, bbto);
	rocksdb_block_based_options_destroy(bbto);
	rocksdb_cache_destroy(cache);

	rocksdb_options_set_create_if_missing(opt, 1);
	rocksdb_options_set_write_buffer_size(opt, WRITE_BUFFER_SIZE);
	rocksdb_options_set_max_open_files(opt, MAX_OPEN_FILES);
	rocksdb_options_set_compression(opt, compression);
	/* window bits, level, strategy, dictionary bytes: only the level changes. */
	if (compression == rocksdb_zstd_compression)
		rocksdb_options_set_compression_options(opt, -14, ZSTD_LEVEL, 0, 0);
	return opt;
}

static int rdb_open(struct bench_db *b, const char *dir)
{
	char *err = NULL;

	b->ropt = rdb_options(rocksdb_zstd_compression);
	b->rdb = rocksdb_open(b->ropt, dir, &err);
	if (err && strstr(err, "not linked")) {
		/* This RocksDB was built without zstd: use snappy, and say so. */
		rocksdb_free(err);
		err = NULL;
		rocksdb_options_destroy(b->ropt);
		b->ropt = rdb_options(rocksdb_snappy_compression);
		b->rocks_snappy = 1;
		b->rdb = rocksdb_open(b->ropt, dir, &err);
	}
	b->rro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_verify_checksums(b->rro, 1);
	b->rwo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(b->rwo, b->sync);
	b->rbatch = rocksdb_writebatch_create();
	return peer_fail(b, "rocksdb_open", &err, rocksdb_free);
}

static void rdb_close(struct bench_db *b)
{
	if (b->rdb)
		rocksdb_close(b->rdb);
	if (b->rbatch)
		rocksdb_writebatch_destroy(b->rbatch);
	if (b->rwo)
		rocksdb_writeoptions_destroy(b->rwo);
	if (b->rro)
		rocksdb_readoptions_destroy(b->rro);
	if (b->ropt)
		rocksdb_options_destroy(b->ropt);
	b->rdb = NULL;
	b->rbatch = NULL;
	b->rwo = NULL;
	b->rro = NULL;
	b->ropt = NULL;
}

static int rdb_write(struct bench_db *b, const struct pair *p, size_t n)
{
	char *err = NULL;

	if (n == 1) {
		rocksdb_put(b->rdb, b->rwo, p->key, KEY_SIZE, p->val, p->vlen, &err);
		return peer_fail(b, "rocksdb_put", &err, rocksdb_free);
	}
	rocksdb_writebatch_clear(b->rbatch);
	for (size_t i = 0; i < n; i++)
		rocksdb_writebatch_put(b->rbatch, p[i].key, KEY_SIZE, p[i].val, p[i].vlen);
	rocksdb_write(b->rdb, b->rwo, b->rbatch, &err);
	return peer_fail(b, "rocksdb_write", &err, rocksdb_free);
}

static int rdb_get(struct bench_db *b, const char *key, size_t klen, size_t *vlen)
{
	char *err = NULL;
	char *val;

	val = rocksdb_get(b->rdb, b->rro, key, klen, vlen, &err);
	if (err)
		return peer_fail(b, "rocksdb_get", &err, rocksdb_free);
	if (!val)
		return 0;
	rocksdb_free(val);
	return 1;
}

static int rdb_iter_new(struct bench_db *b)
{
	b->rit = rocksdb_create_iterator(b->rdb, b->rro);
	return 0;
}

static int rdb_iter_free(struct bench_db *b)
{
	char *err = NULL;

	rocksdb_iter_get_error(b->rit, &err);
	rocksdb_iter_destroy(b->rit);
	b->rit = NULL;
	return peer_fail(b, "rocksdb iterator", &err, rocksdb_free);
}

static void rdb_seek_first(struct bench_db *b)
{
	rocksdb_iter_seek_to_first(b->rit);
}

static void rdb_seek(struct bench_db *b, const char *key, size_t klen)
{
	rocksdb_iter_seek(b->rit, key, klen);
}

static int rdb_valid(struct bench_db *b)
{
	return rocksdb_iter_valid(b->rit);
}

static void rdb_next(struct bench_db *b)
{
	rocksdb_iter_next(b->rit);
}

static size_t rdb_entry(struct bench_db *b)
{
	size_t klen, vlen;

	rocksdb_iter_key(b->rit, &klen);
	rocksdb_iter_value(b->rit, &vlen);
	return klen + vlen;
}

static int rdb_compact(struct bench_db *b)
{
	/* Like LevelDB's, RocksDB's C API reports no error from a manual compaction. */
	rocksdb_compact_range(b->rdb, NULL, 0, NULL, 0);
	return 0;
}

static const struct engine_ops rdb_ops = {
	.name = "rocksdb",
	.open = rdb_open,
	.close = rdb_close,
	.write = rdb_write,
	.get = rdb_get,
	.iter_new = rdb_iter_new,
	.iter_free = rdb_iter_free,
	.seek_first = rdb_seek_first,
	.seek = rdb_seek,
	.valid = rdb_valid,
	.next = rdb_next,
	.entry = rdb_entry,
	.compact = rdb_compact,
};
#endif /* HAVE_PEERS */

static const struct engine_ops *engine_ops_of(int engine)
{
	switch (engine) {
	case E_SMOLFS:
		return &smol_ops;
#ifdef HAVE_PEERS
	case E_LEVELDB:
		return &ldb_ops;
	case E_ROCKSDB:
		return &rdb_ops;
#endif
	default:
		return NULL;
	}
}

/* How each engine compresses, for the settings header. */
static const char *engine_compression(int engine)
{
	switch (engine) {
	case E_SMOLFS:
		return "zstd level 1";
	case E_LEVELDB:
		return "snappy (LevelDB's only compressor; it has no zstd)";
	case E_ROCKSDB:
		return "zstd level 1 (snappy if this RocksDB lacks zstd; noted below if so)";
	default:
		return "?";
	}
}

/* ------------------------------------------------------------------ the workloads (child) */

/* Everything one child needs while it runs its workloads. */
struct child {
	const struct config *cfg;
	int engine;
	size_t value_size;
	const char *dir;
	int out;                   /* write end of the pipe to the parent */
	struct bench_db db;
	int open;                  /* db is open */

	char *pool;                /* value bytes; see make_pool() */
	size_t pool_len;
	size_t pool_pos;
	uint32_t *perm;            /* fillrandom's order of the keys */
	struct pair *pairs;        /* one write's entries */
	char *keys;                /* their keys, KEY_SIZE bytes each */
	int workload;              /* the one running, for error reports */
};

static void child_fail(struct child *c, const char *msg) __attribute__((noreturn));

static void child_fail(struct child *c, const char *msg)
{
	fprintf(stderr, "smolbench: %s, value size %zu, %s: %s\n", engine_names[c->engine],
		c->value_size, c->workload >= 0 ? workload_names[c->workload] : "setup", msg);
	_exit(1);
}

static void send_record(struct child *c, const struct record *r)
{
	ssize_t n = write(c->out, r, sizeof(*r));

	if (n != (ssize_t)sizeof(*r))
		child_fail(c, "cannot write to the parent's pipe");
}

/*
 * The value pool: value bytes that compress to about half their size, the
 * same for every engine.  Each 100-byte run is 50 random bytes written twice,
 * so a compressor finds a 50-byte match in every run but nothing else to
 * exploit.  Values are consecutive slices of the pool; at 1 MiB it is far
 * larger than a block, so no block sees the same bytes twice by wrapping.
 */
static void make_pool(struct child *c)
{
	uint64_t rng = c->cfg->seed ^ 0x706f6f6cull;     /* "pool" */
	size_t len = 1u << 20;

	if (len < 2 * c->value_size)
		len = 2 * c->value_size;
	c->pool_len = len;
	c->pool = xmalloc(len + 100);
	for (size_t run = 0; run < len; run += 100) {
		char *p = c->pool + run;

		for (int i = 0; i < 50; i++)
			p[i] = (char)rng_next(&rng);
		memcpy(p + 50, p, 50);
	}
	c->pool_pos = 0;
}

static const char *next_value(struct child *c)
{
	const char *v;

	if (c->pool_pos + c->value_size > c->pool_len)
		c->pool_pos = 0;
	v = c->pool + c->pool_pos;
	c->pool_pos += c->value_size;
	return v;
}

static void db_close(struct child *c)
{
	if (c->open) {
		c->db.ops->close(&c->db);
		c->open = 0;
	}
}

/*
 * Open the database, fresh (empty directory) if asked.  An engine that cannot
 * open is reported and the child ends with EXIT_OPEN_FAILED, which the parent
 * treats as "this engine is not available", not as the end of the run.
 */
static void db_open(struct child *c, int fresh)
{
	struct record note;
	int err;

	if (c->open && !fresh)
		return;
	db_close(c);
	if (fresh) {
		err = remove_tree(c->dir);
		if (err)
			child_fail(c, strerror(-err));
	}
	if (mkdir(c->dir, 0755) != 0 && errno != EEXIST)
		child_fail(c, strerror(errno));

	memset(&c->db, 0, sizeof(c->db));
	c->db.ops = engine_ops_of(c->engine);
	c->db.sync = c->cfg->sync;
	err = c->db.ops->open(&c->db, c->dir);
	if (err) {
		fprintf(stderr, "smolbench: %s, value size %zu, %s: %s\n", engine_names[c->engine],
			c->value_size, workload_names[c->workload], c->db.err);
		c->db.ops->close(&c->db);
		_exit(EXIT_OPEN_FAILED);
	}
	c->open = 1;
#ifdef HAVE_PEERS
	if (c->db.rocks_snappy) {
		memset(&note, 0, sizeof(note));
		note.kind = REC_NOTE;
		note.note = NOTE_ROCKSDB_SNAPPY;
		send_record(c, &note);
	}
#else
	(void)note;
#endif
}

/* Write the keys in order (fillseq) or in c->perm's order, or at random (overwrite). */
static void run_writes(struct child *c, int w, struct record *r)
{
	const struct config *cfg = c->cfg;
	uint64_t rng = cfg->seed ^ 0x6f766572ull;        /* "over" */
	uint64_t i = 0;
	double t0;

	t0 = now();
	while (i < cfg->num) {
		size_t n = 0;

		for (; n < (size_t)cfg->batch && i < cfg->num; n++, i++) {
			uint64_t k;
			char *key = c->keys + n * KEY_SIZE;

			if (w == W_FILLSEQ)
				k = i;
			else if (w == W_FILLRANDOM)
				k = c->perm[i];
			else
				k = rng_below(&rng, cfg->num);
			make_key(key, k);
			c->pairs[n].key = key;
			c->pairs[n].val = next_value(c);
			c->pairs[n].vlen = c->value_size;
		}
		if (c->db.ops->write(&c->db, c->pairs, n) != 0)
			child_fail(c, c->db.err);
		r->bytes += n * (KEY_SIZE + c->value_size);
	}
	r->secs = now() - t0;
	r->ops = cfg->num;
}

static void run_readrandom(struct child *c, struct record *r)
{
	const struct config *cfg = c->cfg;
	uint64_t rng = cfg->seed ^ 0x72656164ull;        /* "read" */
	char key[KEY_SIZE];
	double t0;

	t0 = now();
	for (uint64_t i = 0; i < cfg->reads; i++) {
		size_t vlen = 0;
		int found;

		make_key(key, rng_below(&rng, cfg->num));
		found = c->db.ops->get(&c->db, key, KEY_SIZE, &vlen);
		if (found < 0)
			child_fail(c, c->db.err);
		if (found) {
			r->found++;
			r->bytes += KEY_SIZE + vlen;
		}
	}
	r->secs = now() - t0;
	r->ops = cfg->reads;
}

/* Read from the first key on, until the end or --reads entries. */
static void run_readseq(struct child *c, struct record *r)
{
	const struct engine_ops *ops = c->db.ops;
	double t0;

	t0 = now();
	if (ops->iter_new(&c->db) != 0)
		child_fail(c, c->db.err);
	ops->seek_first(&c->db);
	while (r->ops < c->cfg->reads && ops->valid(&c->db)) {
		r->bytes += ops->entry(&c->db);
		r->ops++;
		ops->next(&c->db);
	}
	if (ops->iter_free(&c->db) != 0)
		child_fail(c, c->db.err);
	r->secs = now() - t0;
	r->found = r->ops;
}

/*
 * Seek to a random key and read up to --seek-reads entries from there (the
 * one found and those next() steps to).  Each seek uses a fresh iterator, as
 * each directory listing in smolfs will.
 */
static void run_seekrandom(struct child *c, struct record *r)
{
	const struct config *cfg = c->cfg;
	const struct engine_ops *ops = c->db.ops;
	uint64_t rng = cfg->seed ^ 0x7365656bull;        /* "seek" */
	char key[KEY_SIZE];
	double t0;

	t0 = now();
	for (uint64_t i = 0; i < cfg->reads; i++) {
		make_key(key, rng_below(&rng, cfg->num));
		if (ops->iter_new(&c->db) != 0)
			child_fail(c, c->db.err);
		ops->seek(&c->db, key, KEY_SIZE);
		if (ops->valid(&c->db))
			r->found++;
		for (int n = 0; n < cfg->seek_reads && ops->valid(&c->db); n++) {
			r->bytes += ops->entry(&c->db);
			ops->next(&c->db);
		}
		if (ops->iter_free(&c->db) != 0)
			child_fail(c, c->db.err);
	}
	r->secs = now() - t0;
	r->ops = cfg->reads;
}

static void run_workload(struct child *c, int w)
{
	struct record r;
	double t0;

	c->workload = w;
	memset(&r, 0, sizeof(r));
	r.kind = REC_START;
	r.workload = w;
	send_record(c, &r);

	db_open(c, w == W_FILLSEQ || w == W_FILLRANDOM);
	switch (w) {
	case W_FILLSEQ:
	case W_FILLRANDOM:
	case W_OVERWRITE:
		run_writes(c, w, &r);
		break;
	case W_READRANDOM:
		run_readrandom(c, &r);
		break;
	case W_READSEQ:
		run_readseq(c, &r);
		break;
	case W_SEEKRANDOM:
		run_seekrandom(c, &r);
		break;
	case W_READRANDOM_COMPACTED:
		t0 = now();
		if (c->db.ops->compact(&c->db) != 0)
			child_fail(c, c->db.err);
		r.compact_secs = now() - t0;
		run_readrandom(c, &r);
		break;
	}
	r.kind = REC_DONE;
	r.disk_bytes = disk_usage(c->dir);
	r.rss_kb = peak_rss_kb();
	send_record(c, &r);
}

/* The body of a child process; never returns. */
static void child_main(const struct config *cfg, int engine, size_t value_size, const char *dir,
		       int out)
{
	struct child c;

	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.engine = engine;
	c.value_size = value_size;
	c.dir = dir;
	c.out = out;
	c.workload = -1;

	make_pool(&c);
	c.pairs = xmalloc(cfg->batch * sizeof(*c.pairs));
	c.keys = xmalloc((size_t)cfg->batch * KEY_SIZE);
	/* fillrandom writes every key once, in the order of a shuffled permutation. */
	c.perm = xmalloc(cfg->num * sizeof(*c.perm));
	for (uint64_t i = 0; i < cfg->num; i++)
		c.perm[i] = (uint32_t)i;
	{
		uint64_t rng = cfg->seed ^ 0x7065726dull;        /* "perm" */

		for (uint64_t i = cfg->num; i > 1; i--) {
			uint64_t j = rng_below(&rng, i);
			uint32_t t = c.perm[i - 1];

			c.perm[i - 1] = c.perm[j];
			c.perm[j] = t;
		}
	}

	for (int i = 0; i < cfg->nworkloads; i++)
		run_workload(&c, cfg->workloads[i]);
	c.workload = -1;
	db_close(&c);
	close(out);
	/*
	 * _exit, not exit: the libraries' static destructors would run here and
	 * add a few MiB to the peak RSS that the parent reports, and the
	 * parent's atexit work is not ours to do.
	 */
	_exit(0);
}

/* ------------------------------------------------------------------ results (parent) */

/* What happened to one child. */
enum outcome { RUN_NONE, RUN_OK, RUN_FAILED, RUN_OPEN_FAILED, RUN_SIGNALED };

struct child_result {
	enum outcome outcome;
	int status;                /* exit status or signal number */
	int last_workload;         /* the last one started, -1 if none */
	long maxrss_kb;            /* from wait4 */
	struct record rec[NWORKLOADS];
	int have[NWORKLOADS];
};

struct results {
	int nruns, nvs;
	struct child_result *r;    /* [run][value size][engine] */
	int rocksdb_snappy;        /* some RocksDB run fell back to snappy */
	int failures;
};

static struct child_result *result_at(struct results *res, int run, int vs, int engine)
{
	return &res->r[((size_t)run * res->nvs + vs) * NENGINES + engine];
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got == 0 ? 0 : -1;
		got += n;
	}
	return 1;
}

static void progress(const struct config *cfg, int run, size_t vsize, int engine,
		     const struct record *r)
{
	if (cfg->quiet)
		return;
	if (cfg->repeat > 1)
		fprintf(stderr, "[run %d/%d] ", run + 1, cfg->repeat);
	fprintf(stderr, "%-7s %6zu B  %-20s %10.0f ops/s  %7.1f MB/s\n", engine_names[engine],
		vsize, workload_names[r->workload], r->secs > 0 ? r->ops / r->secs : 0.0,
		r->secs > 0 ? r->bytes / MB / r->secs : 0.0);
}

/* Run one engine on one value size in a child and collect what it reports. */
static void run_child(const struct config *cfg, struct results *res, int run, int vs, int engine)
{
	struct child_result *cr = result_at(res, run, vs, engine);
	size_t vsize = cfg->value_sizes[vs];
	char dir[PATH_MAX];
	struct record rec;
	struct rusage ru;
	int fds[2], status, n;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s-%zu-run%d", cfg->db_base, engine_names[engine], vsize,
		 run + 1);
	if (pipe(fds) != 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		child_main(cfg, engine, vsize, dir, fds[1]);
	}
	close(fds[1]);

	cr->last_workload = -1;
	while ((n = read_full(fds[0], &rec, sizeof(rec))) > 0) {
		if (rec.workload >= NWORKLOADS)
			continue;
		if (rec.kind == REC_START) {
			cr->last_workload = rec.workload;
		} else if (rec.kind == REC_DONE) {
			cr->rec[rec.workload] = rec;
			cr->have[rec.workload] = 1;
			progress(cfg, run, vsize, engine, &rec);
		} else if (rec.kind == REC_NOTE && rec.note == NOTE_ROCKSDB_SNAPPY) {
			res->rocksdb_snappy = 1;
		}
	}
	close(fds[0]);
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	}
	cr->maxrss_kb = ru.ru_maxrss;
	if (WIFSIGNALED(status)) {
		cr->outcome = RUN_SIGNALED;
		cr->status = WTERMSIG(status);
		fprintf(stderr, "smolbench: %s, value size %zu: killed by signal %d (%s) "
			"during %s\n", engine_names[engine], vsize, cr->status,
			strsignal(cr->status),
			cr->last_workload >= 0 ? workload_names[cr->last_workload] : "setup");
	} else if (WEXITSTATUS(status) == 0) {
		cr->outcome = RUN_OK;
	} else {
		cr->status = WEXITSTATUS(status);
		cr->outcome = cr->status == EXIT_OPEN_FAILED ? RUN_OPEN_FAILED : RUN_FAILED;
	}
	if (cr->outcome != RUN_OK)
		res->failures++;
	/* The child removes nothing on failure; whatever it left goes now. */
	n = remove_tree(dir);
	if (n)
		fprintf(stderr, "smolbench: cannot remove %s: %s\n", dir, strerror(-n));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n), n > 0; v is sorted in place. */
static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The medians over the runs of one (value size, engine, workload). */
struct summary {
	int n;                     /* runs that have this workload */
	double ops_per_sec, mb_per_sec, us_per_op;
	double disk_bytes, rss_kb, found, ops, compact_secs;
};

enum metric { M_OPS, M_MB, M_US, M_DISK, M_RSS, M_FOUND, M_N, M_COMPACT };

static double metric(const struct record *r, enum metric m)
{
	switch (m) {
	case M_OPS:
		return r->secs > 0 ? r->ops / r->secs : 0;
	case M_MB:
		return r->secs > 0 ? r->bytes / MB / r->secs : 0;
	case M_US:
		return r->ops ? r->secs * 1e6 / r->ops : 0;
	case M_DISK:
		return r->disk_bytes;
	case M_RSS:
		return r->rss_kb;
	case M_FOUND:
		return r->found;
	case M_N:
		return r->ops;
	case M_COMPACT:
		return r->compact_secs;
	}
	return 0;
}

static double median_of(struct results *res, int vs, int engine, int w, enum metric m, int *n)
{
	double v[res->nruns];

	*n = 0;
	for (int run = 0; run < res->nruns; run++) {
		struct child_result *cr = result_at(res, run, vs, engine);

		if (cr->have[w])
			v[(*n)++] = metric(&cr->rec[w], m);
	}
	return *n ? median(v, *n) : 0;
}

static void summarize(struct results *res, int vs, int engine, int w, struct summary *s)
{
	s->ops_per_sec = median_of(res, vs, engine, w, M_OPS, &s->n);
	s->mb_per_sec = median_of(res, vs, engine, w, M_MB, &s->n);
	s->us_per_op = median_of(res, vs, engine, w, M_US, &s->n);
	s->disk_bytes = median_of(res, vs, engine, w, M_DISK, &s->n);
	s->rss_kb = median_of(res, vs, engine, w, M_RSS, &s->n);
	s->found = median_of(res, vs, engine, w, M_FOUND, &s->n);
	s->ops = median_of(res, vs, engine, w, M_N, &s->n);
	s->compact_secs = median_of(res, vs, engine, w, M_COMPACT, &s->n);
}

/* The median over the complete runs of the whole child's peak RSS, in KiB; 0 if none. */
static double median_child_rss(struct results *res, int vs, int engine)
{
	double v[res->nruns];
	int n = 0;

	for (int run = 0; run < res->nruns; run++) {
		struct child_result *cr = result_at(res, run, vs, engine);

		if (cr->outcome == RUN_OK)
			v[n++] = cr->maxrss_kb;
	}
	return n ? median(v, n) : 0;
}

static int engine_selected(const struct config *cfg, int engine)
{
	for (int i = 0; i < cfg->nengines; i++)
		if (cfg->engines[i] == engine)
			return 1;
	return 0;
}

static void print_header(const struct config *cfg)
{
	printf("smolbench: %" PRIu64 " entries, %d-byte keys, value size%s", cfg->num, KEY_SIZE,
	       cfg->nvalue_sizes > 1 ? "s" : "");
	for (int i = 0; i < cfg->nvalue_sizes; i++)
		printf("%s %zu", i ? "," : "", cfg->value_sizes[i]);
	printf(" B (about 50%% compressible)\n");
	printf("  reads %" PRIu64 ", batch %d (entries per write), %s, seek reads %d, "
	       "%d run%s%s\n", cfg->reads, cfg->batch, cfg->sync ? "each write synced" : "no sync",
	       cfg->seek_reads, cfg->repeat, cfg->repeat > 1 ? "s" : "",
	       cfg->repeat > 1 ? " (medians shown)" : "");
	printf("  every engine: write buffer %u MiB, block cache %u MiB, "
	       "bloom filter %d bits/key,\n"
	       "                %d-byte blocks, max open files %d, checksums verified on reads\n",
	       WRITE_BUFFER_SIZE >> 20, BLOCK_CACHE_SIZE >> 20, BLOOM_BITS, BLOCK_SIZE,
	       MAX_OPEN_FILES);
	for (int i = 0; i < cfg->nengines; i++)
		printf("  %-7s compression: %s\n", engine_names[cfg->engines[i]],
		       engine_compression(cfg->engines[i]));
#ifdef HAVE_PEERS
	/* RocksDB's C API does not tell its version; LevelDB's does. */
	if (engine_selected(cfg, E_LEVELDB))
		printf("  leveldb version %d.%d\n", leveldb_major_version(),
		       leveldb_minor_version());
#endif
	printf("  workloads:");
	for (int i = 0; i < cfg->nworkloads; i++)
		printf("%s %s", i ? "," : "", workload_names[cfg->workloads[i]]);
	printf("\n  databases in %s%s\n", cfg->db_base,
	       cfg->db_base_is_temp ? " (removed at the end)" : "");
	fflush(stdout);
}

/* One line of a value size's table: the medians of one engine on one workload. */
static void print_row(struct results *res, int vs, int engine, int w)
{
	struct summary s;
	char notes[128] = "";
	size_t len;

	summarize(res, vs, engine, w, &s);
	if (!s.n) {
		printf("%-21s %-8s %11s\n", workload_names[w], engine_names[engine], "-");
		return;
	}
	if (w == W_READRANDOM || w == W_READRANDOM_COMPACTED)
		snprintf(notes, sizeof(notes), "found %.0f of %.0f", s.found, s.ops);
	else if (w == W_SEEKRANDOM)
		snprintf(notes, sizeof(notes), "%.0f of %.0f seeks found an entry", s.found, s.ops);
	else if (w == W_READSEQ)
		snprintf(notes, sizeof(notes), "%.0f entries", s.ops);
	len = strlen(notes);
	if (w == W_READRANDOM_COMPACTED)
		snprintf(notes + len, sizeof(notes) - len, "; compaction %.2f s", s.compact_secs);
	printf("%-21s %-8s %11.0f %9.1f %9.2f %10.1f %9.1f%s%s\n", workload_names[w],
	       engine_names[engine], s.ops_per_sec, s.mb_per_sec, s.us_per_op, s.disk_bytes / MIB,
	       s.rss_kb / 1024, *notes ? "  " : "", notes);
}

/* The table of ops/s ratios smolfs/peer, one line per workload. */
static void print_ratios(const struct config *cfg, struct results *res, int vs)
{
	printf("\nops/s ratio, value size %zu B (> 1.00: smolfs is faster)\n",
	       cfg->value_sizes[vs]);
	printf("%-21s", "workload");
	for (int e = 0; e < cfg->nengines; e++) {
		char head[32];

		if (cfg->engines[e] == E_SMOLFS)
			continue;
		snprintf(head, sizeof(head), "smolfs/%s", engine_names[cfg->engines[e]]);
		printf(" %15s", head);
	}
	printf("\n");
	for (int i = 0; i < cfg->nworkloads; i++) {
		int w = cfg->workloads[i], n;
		double smol = median_of(res, vs, E_SMOLFS, w, M_OPS, &n);

		printf("%-21s", workload_names[w]);
		for (int e = 0; e < cfg->nengines; e++) {
			int engine = cfg->engines[e], m;
			double peer;

			if (engine == E_SMOLFS)
				continue;
			peer = median_of(res, vs, engine, w, M_OPS, &m);
			if (n && m && smol > 0 && peer > 0)
				printf(" %15.2f", smol / peer);
			else
				printf(" %15s", "-");
		}
		printf("\n");
	}
}

static void print_value_size(const struct config *cfg, struct results *res, int vs)
{
	size_t vsize = cfg->value_sizes[vs];

	printf("\nvalue size %zu B: %" PRIu64 " entries, %.1f MB of keys and values%s\n", vsize,
	       cfg->num, cfg->num * (double)(KEY_SIZE + vsize) / MB,
	       cfg->repeat > 1 ? " (medians)" : "");
	printf("%-21s %-8s %11s %9s %9s %10s %9s  %s\n", "workload", "engine", "ops/s", "MB/s",
	       "us/op", "disk MiB", "RSS MiB", "notes");
	for (int i = 0; i < cfg->nworkloads; i++)
		for (int e = 0; e < cfg->nengines; e++)
			print_row(res, vs, cfg->engines[e], cfg->workloads[i]);
	printf("(disk: the database directory's files after the workload; RSS: the engine's\n"
	       " process's peak resident set up to the end of the workload)\n");

	printf("peak RSS of the whole run (wait4):");
	for (int e = 0; e < cfg->nengines; e++) {
		double kb = median_child_rss(res, vs, cfg->engines[e]);

		if (kb > 0)
			printf("  %s %.1f MiB", engine_names[cfg->engines[e]], kb / 1024);
		else
			printf("  %s -", engine_names[cfg->engines[e]]);
	}
	printf("\n");
	if (engine_selected(cfg, E_SMOLFS) && cfg->nengines > 1)
		print_ratios(cfg, res, vs);
}

static void print_failures(const struct config *cfg, struct results *res)
{
	static const char *const what[] = {
		[RUN_FAILED] = "failed", [RUN_OPEN_FAILED] = "could not open its database",
		[RUN_SIGNALED] = "was killed by a signal",
	};

	if (!res->failures)
		return;
	printf("\nfailures (details on stderr):\n");
	for (int run = 0; run < res->nruns; run++)
		for (int vs = 0; vs < res->nvs; vs++)
			for (int e = 0; e < cfg->nengines; e++) {
				int engine = cfg->engines[e];
				struct child_result *cr = result_at(res, run, vs, engine);

				if (cr->outcome == RUN_OK || cr->outcome == RUN_NONE)
					continue;
				printf("  %s, value size %zu, run %d: %s during %s\n",
				       engine_names[engine], cfg->value_sizes[vs], run + 1,
				       what[cr->outcome],
				       cr->last_workload >= 0 ? workload_names[cr->last_workload]
							      : "setup");
			}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* One element of the JSON "results" array; *first says whether a comma is due. */
static void json_result(FILE *f, struct results *res, size_t vsize, int vs, int engine, int w,
			int *first)
{
	struct summary s;
	int n = 0;

	summarize(res, vs, engine, w, &s);
	if (!s.n)
		return;
	fprintf(f, "%s\n    {\"value_size\": %zu, \"engine\": ", *first ? "" : ",", vsize);
	*first = 0;
	json_string(f, engine_names[engine]);
	fprintf(f, ", \"workload\": ");
	json_string(f, workload_names[w]);
	fprintf(f, ", \"runs\": %d, \"ops_per_sec\": %.1f, \"mb_per_sec\": %.3f, ", s.n,
		s.ops_per_sec, s.mb_per_sec);
	fprintf(f, "\"micros_per_op\": %.3f, \"ops\": %.0f, \"found\": %.0f, ", s.us_per_op,
		s.ops, s.found);
	fprintf(f, "\"disk_bytes\": %.0f, \"peak_rss_kb\": %.0f", s.disk_bytes, s.rss_kb);
	if (w == W_READRANDOM_COMPACTED)
		fprintf(f, ", \"compact_secs\": %.3f", s.compact_secs);
	fprintf(f, ", \"ops_per_sec_each_run\": [");
	for (int run = 0; run < res->nruns; run++) {
		struct child_result *cr = result_at(res, run, vs, engine);

		if (cr->have[w])
			fprintf(f, "%s%.1f", n++ ? ", " : "", metric(&cr->rec[w], M_OPS));
	}
	fprintf(f, "]}");
}

/*
 * The JSON file: the settings, then one object per (value size, engine,
 * workload) with the medians and every run's ops/s, then each child's peak
 * RSS.  Written by hand: the format is small and fixed, and smolfs depends on
 * no JSON library.
 */
static int write_json(const struct config *cfg, struct results *res)
{
	FILE *f = fopen(cfg->json_path, "w");
	int first = 1;

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"settings\": {\"num\": %" PRIu64 ", \"reads\": %" PRIu64 ", ",
		cfg->num, cfg->reads);
	fprintf(f, "\"key_size\": %d, \"batch\": %d, \"sync\": %s, \"repeat\": %d, ",
		KEY_SIZE, cfg->batch, cfg->sync ? "true" : "false", cfg->repeat);
	fprintf(f, "\"seek_reads\": %d, \"seed\": %" PRIu64 ",\n", cfg->seek_reads, cfg->seed);
	fprintf(f, "    \"write_buffer_size\": %u, \"block_cache_size\": %u, ",
		WRITE_BUFFER_SIZE, BLOCK_CACHE_SIZE);
	fprintf(f, "\"bloom_bits_per_key\": %d, \"block_size\": %d, \"max_open_files\": %d,\n",
		BLOOM_BITS, BLOCK_SIZE, MAX_OPEN_FILES);
	fprintf(f, "    \"compression\": {");
	for (int e = 0; e < cfg->nengines; e++) {
		int engine = cfg->engines[e];
		const char *c = engine == E_LEVELDB ? "snappy" : "zstd-1";

		if (engine == E_ROCKSDB && res->rocksdb_snappy)
			c = "snappy";
		fprintf(f, "%s\"%s\": \"%s\"", e ? ", " : "", engine_names[engine], c);
	}
	fprintf(f, "}},\n  \"results\": [");
	for (int vs = 0; vs < res->nvs; vs++)
		for (int e = 0; e < cfg->nengines; e++)
			for (int i = 0; i < cfg->nworkloads; i++)
				json_result(f, res, cfg->value_sizes[vs], vs, cfg->engines[e],
					    cfg->workloads[i], &first);
	fprintf(f, "\n  ],\n  \"peak_rss_kb\": [");
	first = 1;
	for (int vs = 0; vs < res->nvs; vs++)
		for (int e = 0; e < cfg->nengines; e++) {
			int engine = cfg->engines[e];
			double kb = median_child_rss(res, vs, engine);

			if (kb <= 0)
				continue;
			fprintf(f, "%s\n    {\"value_size\": %zu, \"engine\": \"%s\", "
				"\"kb\": %.0f}",
				first ? "" : ",", cfg->value_sizes[vs], engine_names[engine], kb);
			first = 0;
		}
	fprintf(f, "\n  ],\n  \"failures\": %d\n}\n", res->failures);
	if (ferror(f)) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -errno;
}

/* ------------------------------------------------------------------ options */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smolbench [OPTION]...\n"
		"Run LSM key-value workloads on smolfs's engine"
#ifdef HAVE_PEERS
		", LevelDB and RocksDB"
#endif
		" and measure them.\n"
		"\n"
		"  --benchmarks LIST   workloads to run, in order (default: all, in this order):\n"
		"                      fillseq,fillrandom,overwrite,readrandom,readseq,"
		"seekrandom,\n"
		"                      readrandom-compacted\n"
		"  --engines LIST      engines to run (default: all built in):"
		" smolfs"
#ifdef HAVE_PEERS
		",leveldb,rocksdb"
#endif
		"\n"
		"  --num N             entries written by the fills; keys are 0..N-1 (default %d)\n"
		"  --reads N           operations of each read workload (default: --num)\n"
		"  --value-size N      value bytes (default %d)\n"
		"  --value-sizes LIST  run each of these value sizes, e.g. 100,1024\n"
		"  --batch N           entries per write (default 1)\n"
		"  --sync              fsync the log on every write (default: no sync)\n"
		"  --seek-reads N      entries read after each seek in seekrandom (default %d)\n"
		"  --repeat N          run everything N times and report medians (default 1)\n"
		"  --db DIR            make the databases under DIR (default: a new directory in\n"
		"                      $TMPDIR or /tmp, removed at the end)\n"
		"  --json FILE         also write the results to FILE as JSON\n"
		"  --seed N            seed for keys, orders and values (default 301)\n"
		"  --quiet             no progress lines on stderr\n"
		"  --help              show this help and exit\n"
		"\n"
		"See smolbench(1).\n", DEFAULT_NUM, DEFAULT_VALUE, DEFAULT_SEEK_READ);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		die("%s: '%s' is not a number from %" PRIu64 " to %" PRIu64, opt, s, min, max);
	return v;
}

/* Look name up in names[0..n); -1 if absent. */
static int lookup(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

/*
 * Split a comma list into out[] as indexes into names[], refusing unknown
 * names and duplicates.  Returns how many there were.
 */
static int parse_list(const char *opt, const char *list, const char *const *names, int nnames,
		      int *out)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int id = lookup(names, nnames, tok);

		if (id < 0)
			die("%s: unknown name '%s' (see --help)", opt, tok);
		for (int i = 0; i < n; i++)
			if (out[i] == id)
				die("%s: '%s' is listed twice", opt, tok);
		out[n++] = id;
	}
	free(copy);
	if (!n)
		die("%s: the list is empty", opt);
	return n;
}

static void parse_value_sizes(struct config *cfg, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;

	if (!copy)
		die("out of memory");
	cfg->nvalue_sizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (cfg->nvalue_sizes == MAX_VALUE_SIZES)
			die("--value-sizes: at most %d sizes", MAX_VALUE_SIZES);
		cfg->value_sizes[cfg->nvalue_sizes++] =
			parse_u64("--value-sizes", tok, 0, KV_MAX_VALUE_SIZE);
	}
	free(copy);
	if (!cfg->nvalue_sizes)
		die("--value-sizes: the list is empty");
}

static void parse_options(struct config *cfg, int argc, char **argv)
{
	enum {
		OPT_BENCHMARKS = 256, OPT_ENGINES, OPT_NUM, OPT_READS, OPT_VALUE_SIZE,
		OPT_VALUE_SIZES, OPT_BATCH, OPT_SYNC, OPT_SEEK_READS, OPT_REPEAT, OPT_DB,
		OPT_JSON, OPT_SEED,
		OPT_QUIET, OPT_HELP,
	};
	static const struct option longopts[] = {
		{ "benchmarks", required_argument, NULL, OPT_BENCHMARKS },
		{ "engines", required_argument, NULL, OPT_ENGINES },
		{ "num", required_argument, NULL, OPT_NUM },
		{ "reads", required_argument, NULL, OPT_READS },
		{ "value-size", required_argument, NULL, OPT_VALUE_SIZE },
		{ "value-sizes", required_argument, NULL, OPT_VALUE_SIZES },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "sync", no_argument, NULL, OPT_SYNC },
		{ "seek-reads", required_argument, NULL, OPT_SEEK_READS },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "db", required_argument, NULL, OPT_DB },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int reads_set = 0, engines_set = 0, opt;

	memset(cfg, 0, sizeof(*cfg));
	cfg->num = DEFAULT_NUM;
	cfg->value_sizes[0] = DEFAULT_VALUE;
	cfg->nvalue_sizes = 1;
	cfg->batch = 1;
	cfg->repeat = 1;
	cfg->seek_reads = DEFAULT_SEEK_READ;
	cfg->seed = 301;
	for (int w = 0; w < NWORKLOADS; w++)
		cfg->workloads[cfg->nworkloads++] = w;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_BENCHMARKS:
			cfg->nworkloads = parse_list("--benchmarks", optarg, workload_names,
						     NWORKLOADS, cfg->workloads);
			break;
		case OPT_ENGINES:
			cfg->nengines = parse_list("--engines", optarg, engine_names, NENGINES,
						   cfg->engines);
			engines_set = 1;
			break;
		case OPT_NUM:
			/* fillrandom's permutation holds 32-bit key numbers. */
			cfg->num = parse_u64("--num", optarg, 1, UINT32_MAX);
			break;
		case OPT_READS:
			cfg->reads = parse_u64("--reads", optarg, 0, UINT64_MAX);
			reads_set = 1;
			break;
		case OPT_VALUE_SIZE:
			cfg->value_sizes[0] = parse_u64("--value-size", optarg, 0,
							KV_MAX_VALUE_SIZE);
			cfg->nvalue_sizes = 1;
			break;
		case OPT_VALUE_SIZES:
			parse_value_sizes(cfg, optarg);
			break;
		case OPT_BATCH:
			cfg->batch = parse_u64("--batch", optarg, 1, 1000000);
			break;
		case OPT_SYNC:
			cfg->sync = 1;
			break;
		case OPT_SEEK_READS:
			cfg->seek_reads = parse_u64("--seek-reads", optarg, 0, INT_MAX);
			break;
		case OPT_REPEAT:
			cfg->repeat = parse_u64("--repeat", optarg, 1, 1000);
			break;
		case OPT_DB:
			free(cfg->db_base);
			cfg->db_base = strdup(optarg);
			if (!cfg->db_base)
				die("out of memory");
			break;
		case OPT_JSON:
			cfg->json_path = optarg;
			break;
		case OPT_SEED:
			cfg->seed = parse_u64("--seed", optarg, 0, UINT64_MAX);
			break;
		case OPT_QUIET:
			cfg->quiet = 1;
			break;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!reads_set)
		cfg->reads = cfg->num;
	if (!engines_set) {
		cfg->engines[cfg->nengines++] = E_SMOLFS;
#ifdef HAVE_PEERS
		cfg->engines[cfg->nengines++] = E_LEVELDB;
		cfg->engines[cfg->nengines++] = E_ROCKSDB;
#endif
	}
#ifndef HAVE_PEERS
	for (int e = 0; e < cfg->nengines; e++)
		if (cfg->engines[e] != E_SMOLFS)
			die("--engines: %s: this smolbench was built without --with-peers",
			    engine_names[cfg->engines[e]]);
#endif
}

/* Make cfg->db_base: a new temporary directory unless --db named one. */
static void make_db_base(struct config *cfg)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];

	if (cfg->db_base) {
		if (mkdir(cfg->db_base, 0755) != 0 && errno != EEXIST)
			die("--db %s: %s", cfg->db_base, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/smolbench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(path))
		die("mkdtemp %s: %s", path, strerror(errno));
	cfg->db_base = strdup(path);
	if (!cfg->db_base)
		die("out of memory");
	cfg->db_base_is_temp = 1;
}

int main(int argc, char **argv)
{
	struct results res;
	struct config cfg;
	int err;

	parse_options(&cfg, argc, argv);
	make_db_base(&cfg);
	print_header(&cfg);

	memset(&res, 0, sizeof(res));
	res.nruns = cfg.repeat;
	res.nvs = cfg.nvalue_sizes;
	res.r = calloc((size_t)res.nruns * res.nvs * NENGINES, sizeof(*res.r));
	if (!res.r)
		die("out of memory");

	/*
	 * Repetitions are the outer loop, so that a disturbance on the machine
	 * (another job, a page cache flush) tends to hit one run of every engine
	 * rather than every run of one.
	 */
	for (int run = 0; run < cfg.repeat; run++)
		for (int vs = 0; vs < cfg.nvalue_sizes; vs++)
			for (int e = 0; e < cfg.nengines; e++)
				run_child(&cfg, &res, run, vs, cfg.engines[e]);

	for (int vs = 0; vs < cfg.nvalue_sizes; vs++)
		print_value_size(&cfg, &res, vs);
	if (res.rocksdb_snappy)
		printf("\nnote: this RocksDB has no zstd; it used snappy.\n");
	print_failures(&cfg, &res);

	if (cfg.json_path) {
		err = write_json(&cfg, &res);
		if (err) {
			fprintf(stderr, "smolbench: %s: %s\n", cfg.json_path, strerror(-err));
			res.failures++;
		}
	}
	if (cfg.db_base_is_temp) {
		err = remove_tree(cfg.db_base);
		if (err)
			fprintf(stderr, "smolbench: cannot remove %s: %s\n", cfg.db_base,
				strerror(-err));
	}
	free(cfg.db_base);
	free(res.r);
	return res.failures ? 1 : 0;
}
