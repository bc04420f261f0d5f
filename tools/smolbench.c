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
 * every engine.
 *
 * What makes the comparison fair, each point stated in the man page too:
 *   - values like db_bench's (half random printable bytes, half repeated, so
 *     they compress to about half) unless --values=random asks for
 *     incompressible ones;
 *   - before every workload that does not start from an empty directory, each
 *     engine is left to finish its background flushes and compactions
 *     (settle()), so no engine starts a workload still digesting the last;
 *   - the same write buffer, block cache, block size, bloom bits and open
 *     files for all; zstd at the same levels for smolfs and RocksDB;
 *   - the latency of every single operation goes into a log-linear histogram
 *     (struct hist), so a stall shows as a p99.9 or a max, not as a small
 *     dent in ops/s;
 *   - three runs by default, interleaved (every engine's run 1, then every
 *     engine's run 2, ...), medians reported with their spread.
 *
 * Two more workloads, lg-scan and prefix-scan, measure the table layer on
 * top of the engine (engine/table.h): what a scan of one locality group
 * reads, and whether a prefix scan's cost depends on the table's size.  The
 * peers have no table layer, so these run on smolfs alone and have no
 * ratios; each runs in a child of its own, as an engine does, and reports
 * through the same kind of pipe.  The man page is man/smolbench.1.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

#include <zstd.h>

#include "kv.h"
#include "table.h"

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
#define DEFAULT_CACHE_MIB 64       /* --cache-mib: the block cache of every engine */
#define BLOOM_BITS        10
#define BLOCK_SIZE        4096
#define MAX_OPEN_FILES    1000
#define ZSTD_LEVEL        1
/*
 * smolfs compresses the tables of its deepest level with ZSTD_LEVEL and all
 * others (level 0 and the levels in between) with zstd's fast level -1
 * (engine/kv/compaction.c); RocksDB is set up the same way through its
 * bottommost-level compression options.
 */
#define ZSTD_UPPER_LEVEL  (-1)
#define L0_TRIGGER        4        /* level-0 files that start a compaction, in all three */

#define MAX_VALUE_SIZES   8
#define DEFAULT_NUM       1000000
#define DEFAULT_VALUE     100
#define DEFAULT_SEEK_READ 100
#define DEFAULT_SCANS     10000
#define DEFAULT_RUNS      3
#define DEFAULT_SETTLE    300      /* --settle-timeout: seconds */
#define READSEQ_GROUP     100      /* readseq's latency: per this many next() calls */

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
	W_COMPACT,
	W_READRANDOM_COMPACTED,
	W_SEEKRANDOM_COMPACTED,
	W_READSEQ_COMPACTED,
	/* the table workloads: smolfs only, run when named (see is_table_workload) */
	W_LG_SCAN,
	W_PREFIX_SCAN,
	NWORKLOADS
};

static const char *const workload_names[NWORKLOADS] = {
	"fillseq", "fillrandom", "overwrite", "readrandom", "readseq", "seekrandom",
	"compact", "readrandom-compacted", "seekrandom-compacted", "readseq-compacted",
	"lg-scan", "prefix-scan",
};

/* The workloads that read a fully compacted database (they compact first if need be). */
static int is_compacted_workload(int w)
{
	return w == W_READRANDOM_COMPACTED || w == W_SEEKRANDOM_COMPACTED ||
	       w == W_READSEQ_COMPACTED;
}

/* The workloads that start from an empty directory (every other one settles first). */
static int is_fill(int w)
{
	return w == W_FILLSEQ || w == W_FILLRANDOM;
}

#define NTABLE_WORKLOADS (NWORKLOADS - W_LG_SCAN)

/*
 * The table workloads measure engine/table.h, which only smolfs has.  They
 * are not part of the default list: at the default --num, lg-scan alone
 * writes a gigabyte.
 */
static int is_table_workload(int w)
{
	return w >= W_LG_SCAN;
}

enum engine_id { E_SMOLFS, E_LEVELDB, E_ROCKSDB, NENGINES };

static const char *const engine_names[NENGINES] = { "smolfs", "leveldb", "rocksdb" };

struct config {
	uint64_t num;                  /* entries written by the fills, and the key space */
	uint64_t reads;                /* operations of the read workloads */
	size_t value_sizes[MAX_VALUE_SIZES];
	int nvalue_sizes;
	int batch;                     /* entries per write */
	int sync;                      /* fsync every write */
	int repeat;                    /* runs of everything, for medians (--runs) */
	int random_values;             /* --values=random: incompressible values */
	double settle_timeout;         /* seconds settle() waits at most */
	int seek_reads;                /* entries read after each seek */
	int workloads[NWORKLOADS];     /* the kv workloads, in the order they run */
	int nworkloads;
	int table_workloads[NTABLE_WORKLOADS];  /* lg-scan, prefix-scan: in the order named */
	int ntable_workloads;
	uint64_t scans;                /* prefix-scan: scans per table size */
	int engines[NENGINES];
	int nengines;
	uint64_t seed;
	char *db_base;                 /* every child directory is made in here */
	int db_base_is_temp;           /* made by us with mkdtemp: removed at exit */
	int keep_db;                   /* --keep-db: leave the kv databases in db_base */
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

/* Latency figures of one workload, from its histogram (see struct hist). */
struct latency {
	uint64_t n;                /* operations timed; 0: none (compact) */
	double p50, p99, p999;     /* microseconds */
	double max;                /* microseconds, exact */
	uint64_t over_1ms, over_10ms;
};

struct record {
	uint32_t kind;
	uint32_t workload;
	double secs;               /* the timed part of the workload */
	double compact_secs;       /* *-compacted: a compaction it had to run first */
	double settle_secs;        /* waiting for background work before the workload */
	uint32_t settle_timed_out; /* the wait ended at --settle-timeout, not in idleness */
	uint64_t ops;
	uint64_t bytes;            /* key + value bytes written or read */
	uint64_t found;            /* reads that found their key; seeks that found an entry */
	uint64_t disk_bytes;       /* sum of the db directory's file sizes after the workload */
	uint64_t rss_kb;           /* the child's peak RSS so far */
	uint64_t anon_kb, file_kb; /* peak RssAnon, RssFile during the workload */
	uint64_t paced;            /* writes the engine paced during the workload (smolfs) */
	uint64_t delayed;          /* writes it delayed for a crowded level 0 (smolfs) */
	uint64_t stall_us;         /* time writers waited inside the engine (smolfs) */
	uint64_t pauses;           /* machine pauses over PAUSE_NS during the workload */
	uint64_t pause_max_ns;     /* the longest of them (any length) */
	uint32_t pause_rt;         /* 1: the meter ran at real-time priority */
	struct latency lat;
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

static void *bench_malloc(size_t n)
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

/*
 * The CPU time of the calling thread, in seconds: unlike now(), it does not
 * count the time the thread waits for a CPU, which on a busy machine puts
 * whole scheduler ticks into a short operation's wall-clock time.
 */
static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

/* CLOCK_MONOTONIC in nanoseconds: the clock of the latency histograms. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The resident memory of the calling process, from /proc/self/status:
 * RssAnon (heap, stacks, anonymous maps: the engine's own memory) and
 * RssFile (pages of mapped files: tables read through a map, the libraries).
 * Both 0 where /proc is missing.
 */
static void rss_split_kb(uint64_t *anon, uint64_t *file)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	*anon = *file = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "RssAnon: %llu", &kb) == 1)
			*anon = kb;
		else if (sscanf(line, "RssFile: %llu", &kb) == 1)
			*file = kb;
	}
	fclose(f);
}

/*
 * What shows that a process's background threads are at work: the CPU time
 * of all its threads (getrusage) and the bytes all of them have passed to
 * write(2) and its kin (wchar of /proc/self/io; 0 if unreadable).
 */
static void process_activity(double *cpu, uint64_t *wchar)
{
	struct rusage ru;
	char line[128];
	FILE *f;

	*cpu = 0;
	*wchar = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		*cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6;
	f = fopen("/proc/self/io", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "wchar: %llu", &v) == 1)
			*wchar = v;
	}
	fclose(f);
}

/* ------------------------------------------------------------------ latency histograms */

/*
 * A log-linear histogram of nanoseconds, as HdrHistogram keeps one: values
 * below 2^HIST_SUB_BITS have a bucket each; above, every power of two is cut
 * into 2^HIST_SUB_BITS equal buckets, so a bucket is never wider than 1/32
 * (about 3%) of the values in it.  Recording is a count leading zeros and an
 * increment; the 15 KiB of counters stay in the cache.  The maximum and the
 * counts above 1 ms and 10 ms are kept exactly.
 */
#define HIST_SUB_BITS 5
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t n, max, over_1ms, over_10ms;
	uint64_t b[HIST_BUCKETS];
};

static unsigned hist_bucket(uint64_t v)
{
	unsigned msb, shift;

	if (v < HIST_SUB)
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return ((shift + 1) << HIST_SUB_BITS) + (unsigned)((v >> shift) & (HIST_SUB - 1));
}

/* The largest value that falls into bucket i. */
static uint64_t hist_bucket_top(unsigned i)
{
	unsigned shift;

	if (i < HIST_SUB)
		return i;
	shift = (i >> HIST_SUB_BITS) - 1;
	return (((uint64_t)HIST_SUB + (i & (HIST_SUB - 1))) << shift) + ((uint64_t)1 << shift) - 1;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->b[hist_bucket(ns)]++;
	h->n++;
	if (ns > h->max)
		h->max = ns;
	if (ns > 1000000)
		h->over_1ms++;
	if (ns > 10000000)
		h->over_10ms++;
}

/* The p-quantile (0 < p <= 1) by nearest rank: the top of its bucket, at most the max. */
static uint64_t hist_quantile(const struct hist *h, double p)
{
	uint64_t rank = (uint64_t)(p * h->n + 0.999999), seen = 0;

	if (!rank)
		rank = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t top = hist_bucket_top(i);

			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

static void hist_summary(const struct hist *h, struct latency *l)
{
	memset(l, 0, sizeof(*l));
	l->n = h->n;
	if (!h->n)
		return;
	l->p50 = hist_quantile(h, 0.50) / 1e3;
	l->p99 = hist_quantile(h, 0.99) / 1e3;
	l->p999 = hist_quantile(h, 0.999) / 1e3;
	l->max = h->max / 1e3;
	l->over_1ms = h->over_1ms;
	l->over_10ms = h->over_10ms;
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
	/*
	 * 1 if the engine itself says background work is due or running (what it
	 * tells of it: see each one), 0 if it says nothing is; settle() also
	 * watches the process's CPU time and writes, which every engine shows.
	 */
	int (*busy)(struct bench_db *b);
	/*
	 * What the engine counts of its own write waits so far: writes it paced
	 * to a flush, writes it delayed for a crowded level 0, and the time
	 * writers waited in all; NULL for an engine that does not
	 * count them.  The difference over a write workload tells how many of its
	 * slow puts were the engine waiting on purpose.
	 */
	void (*stalls)(struct bench_db *b, uint64_t *paced, uint64_t *delayed, uint64_t *stall_us);
};

/* ---- smolfs */

static int smol_fail(struct bench_db *b, const char *call, int err)
{
	snprintf(b->err, sizeof(b->err), "%s: %s", call, kv_strerror(err));
	return err;
}

/* --pread-tables: smolfs reads table blocks with pread(2), not through a map. */
static int pread_tables;

/* --cache-mib: the block cache of every engine, in bytes. */
static size_t block_cache_bytes = (size_t)DEFAULT_CACHE_MIB << 20;

/* The engine settings every workload uses, with a block cache of cache bytes. */
static void bench_kv_options(struct kv_options *o, size_t cache)
{
	kv_options_init(o);
	o->create_if_missing = 1;
	o->write_buffer_size = WRITE_BUFFER_SIZE;
	o->block_cache_size = cache;
	o->bloom_bits_per_key = BLOOM_BITS;
	o->block_size = BLOCK_SIZE;
	o->max_open_files = MAX_OPEN_FILES;
	o->compression_level = ZSTD_LEVEL;
	o->sync_wal = 0;              /* --sync is passed per write instead */
	o->read_tables_with_pread = pread_tables;
}

static int smol_open(struct bench_db *b, const char *dir)
{
	struct kv_options opt;
	int err;

	bench_kv_options(&opt, block_cache_bytes);
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

/*
 * smolfs has no call that tells whether a flush or compaction is running;
 * what kv_get_stats shows is the level-0 file count, and at
 * l0_compaction_trigger (default 4) files a compaction is due.
 */
static int smol_busy(struct bench_db *b)
{
	struct kv_stats st;

	kv_get_stats(b->kv, &st);
	return st.files_per_level[0] >= L0_TRIGGER;
}

static void smol_stalls(struct bench_db *b, uint64_t *paced, uint64_t *delayed,
			uint64_t *stall_us)
{
	struct kv_stats st;

	kv_get_stats(b->kv, &st);
	*paced = st.paced_writes;
	*delayed = st.delayed_writes;
	*stall_us = st.stall_micros;
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
	.busy = smol_busy,
	.stalls = smol_stalls,
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
	b->lcache = leveldb_cache_create_lru(block_cache_bytes);
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

/*
 * LevelDB's C API has no "compaction pending" as RocksDB's has; what it
 * tells is the files per level, and with 4 (kL0_CompactionTrigger) in
 * level 0 a compaction is due.
 */
static int ldb_busy(struct bench_db *b)
{
	char *v = leveldb_property_value(b->ldb, "leveldb.num-files-at-level0");
	int busy = v && atoi(v) >= L0_TRIGGER;

	leveldb_free(v);
	return busy;
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
	.busy = ldb_busy,
};

/* ---- RocksDB */

static rocksdb_options_t *rdb_options(int compression)
{
	rocksdb_block_based_table_options_t *bbto = rocksdb_block_based_options_create();
	rocksdb_filterpolicy_t *bloom = rocksdb_filterpolicy_create_bloom(BLOOM_BITS);
	rocksdb_cache_t *cache = rocksdb_cache_create_lru(block_cache_bytes);
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
	/*
	 * As smolfs: zstd's fast level above the deepest level, ZSTD_LEVEL in
	 * it.  Window bits, level, strategy, dictionary bytes: only the level
	 * changes (the last argument of the bottommost call enables it).
	 */
	if (compression == rocksdb_zstd_compression) {
		rocksdb_options_set_compression_options(opt, -14, ZSTD_UPPER_LEVEL, 0, 0);
		rocksdb_options_set_bottommost_compression(opt, rocksdb_zstd_compression);
		rocksdb_options_set_bottommost_compression_options(opt, -14, ZSTD_LEVEL, 0, 0, 1);
	}
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

/* RocksDB says exactly whether a flush or compaction is running or due. */
static int rdb_busy(struct bench_db *b)
{
	static const char *const props[] = {
		"rocksdb.num-running-compactions", "rocksdb.num-running-flushes",
		"rocksdb.compaction-pending", "rocksdb.mem-table-flush-pending",
	};

	for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
		uint64_t v = 0;

		if (rocksdb_property_int(b->rdb, props[i], &v) == 0 && v)
			return 1;
	}
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
	.busy = rdb_busy,
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
		return "zstd level 1 in the deepest level, zstd level -1 above it";
	case E_LEVELDB:
		return "snappy everywhere (LevelDB 1.23's C API offers no other compressor)";
	case E_ROCKSDB:
		return "as smolfs: zstd level 1 bottommost, -1 above (snappy if this RocksDB\n"
		       "          lacks zstd; noted below if so)";
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
	int compacted;             /* compacted fully, and nothing written since */

	/* The running workload's measurements, see op_begin() and op_done(). */
	struct hist hist;
	uint64_t last_ns;          /* when the last operation ended */
	uint64_t mem_ns;           /* when memory was last sampled */
	uint64_t anon_kb, file_kb; /* peaks so far */
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
 * The value pool, the same for every engine; values are consecutive slices
 * of it.  At 1 MiB (or twice the value size) it is far larger than a block,
 * so no block sees the same bytes twice by wrapping.
 *
 * Compressible (the default), as db_bench makes its values: the pool is a
 * run of 100-byte pieces, each 50 random printable characters (' ' to '~')
 * followed by the same 50 again.  A compressor finds the 50-byte match in
 * every piece, and an entropy coder (zstd's, not snappy's) also gains on
 * the 95-symbol alphabet, so zstd stores a block in about 40-50% of its
 * bytes -- reads then pay for decompression, as they do on real data.
 * Random (--values=random): every byte random, which no compressor
 * shrinks; zstd stores such blocks raw.
 */
static char *pool_new(uint64_t seed, size_t value_size, int random_values, size_t *lenp)
{
	uint64_t rng = seed ^ 0x706f6f6cull;     /* "pool" */
	size_t len = 1u << 20;
	char *pool;

	if (len < 2 * value_size)
		len = 2 * value_size;
	pool = bench_malloc(len + 100);
	for (size_t piece = 0; piece < len; piece += 100) {
		char *p = pool + piece;

		if (random_values) {
			for (int i = 0; i < 100; i++)
				p[i] = (char)rng_next(&rng);
			continue;
		}
		for (int i = 0; i < 50; i++)
			p[i] = (char)(' ' + rng_below(&rng, 95));
		memcpy(p + 50, p, 50);
	}
	*lenp = len;
	return pool;
}

static void make_pool(struct child *c)
{
	c->pool = pool_new(c->cfg->seed, c->value_size, c->cfg->random_values, &c->pool_len);
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

/*
 * Measuring a workload.  op_begin() starts the clock; op_done() ends one
 * operation (one write call, one get, one seek with its next() calls, one
 * group of READSEQ_GROUP next() calls) and adds its time to the histogram:
 * the time since the previous operation ended, so each operation costs one
 * clock_gettime and the loop's own few instructions land in the operation
 * that follows them, the same for every engine.  Memory is sampled at most
 * every MEM_SAMPLE_NS between operations (the sample's own time is left out
 * of the histogram), once after op_begin and once at the end, and the
 * workload reports the peaks.
 */
#define MEM_SAMPLE_NS 50000000u

/*
 * The machine's own pauses.  While a workload's timed part runs, a thread
 * of the child's sleeps PAUSE_TICK_NS at a time, at real-time priority
 * where it may (root, or CAP_SYS_NICE), and counts the wakeups that come
 * more than PAUSE_NS late: then the CPU was not to be had even for a
 * real-time thread (a virtual machine's CPUs stopped by its host,
 * interrupts held off, or long kernel work that is not preempted).  Without
 * real-time priority the count also takes in waits for a CPU behind the
 * engine's own threads, and the legend says so.  Outside the timed parts
 * the thread only checks every PAUSE_IDLE_NS whether one has begun, so that
 * settle() sees the engine's threads' CPU time, not its own.  It costs
 * about 1.5% of a CPU during a workload, the same for every engine.
 */
#define PAUSE_TICK_NS 2000000L
#define PAUSE_IDLE_NS 50000000L
#define PAUSE_NS 10000000u

static struct {
	/* atomics: the workload's thread writes active and gen, the meter the rest */
	int active;                /* a workload's timed part is running */
	uint64_t gen;              /* bumped when one begins or ends */
	uint64_t count, max_ns;    /* the pauses of the running one */
	int realtime;              /* 1 if the thread got SCHED_FIFO */
} pause_meter;

static void *pause_main(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	const struct timespec tick = { 0, PAUSE_TICK_NS }, idle = { 0, PAUSE_IDLE_NS };

	(void)arg;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		__atomic_store_n(&pause_meter.realtime, 1, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t gen = __atomic_load_n(&pause_meter.gen, __ATOMIC_ACQUIRE), t0, t1, late;

		if (!__atomic_load_n(&pause_meter.active, __ATOMIC_ACQUIRE)) {
			nanosleep(&idle, NULL);
			continue;
		}
		t0 = now_ns();
		if (nanosleep(&tick, NULL) != 0)
			continue;   /* woken early: nothing measured */
		t1 = now_ns();
		/* a sleep that overlaps the start or end of the timed part does not count */
		if (__atomic_load_n(&pause_meter.gen, __ATOMIC_ACQUIRE) != gen)
			continue;
		late = t1 - t0 > (uint64_t)PAUSE_TICK_NS ? t1 - t0 - (uint64_t)PAUSE_TICK_NS : 0;
		if (late > __atomic_load_n(&pause_meter.max_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&pause_meter.max_ns, late, __ATOMIC_RELAXED);
		if (late > PAUSE_NS)
			__atomic_add_fetch(&pause_meter.count, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The meter's thread, with every signal blocked (the benchmark's are not its own). */
static int pause_meter_start(void)
{
	sigset_t all, old;
	pthread_t t;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, NULL, pause_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		pthread_detach(t);
	return r;
}

/* Start counting for a workload's timed part. */
static void pause_begin(void)
{
	__atomic_store_n(&pause_meter.count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&pause_meter.max_ns, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&pause_meter.gen, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&pause_meter.active, 1, __ATOMIC_RELEASE);
}

/* Stop counting; r gets the pauses of the timed part that ended. */
static void pause_end(struct record *r)
{
	__atomic_store_n(&pause_meter.active, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&pause_meter.gen, 1, __ATOMIC_RELEASE);
	r->pauses = __atomic_load_n(&pause_meter.count, __ATOMIC_RELAXED);
	r->pause_max_ns = __atomic_load_n(&pause_meter.max_ns, __ATOMIC_RELAXED);
	r->pause_rt = (uint32_t)__atomic_load_n(&pause_meter.realtime, __ATOMIC_RELAXED);
}

static void mem_sample(struct child *c)
{
	uint64_t anon, file;

	rss_split_kb(&anon, &file);
	if (anon > c->anon_kb)
		c->anon_kb = anon;
	if (file > c->file_kb)
		c->file_kb = file;
}

static void op_begin(struct child *c)
{
	memset(&c->hist, 0, sizeof(c->hist));
	c->anon_kb = c->file_kb = 0;
	mem_sample(c);
	pause_begin();
	c->last_ns = c->mem_ns = now_ns();
}

static void op_done(struct child *c)
{
	uint64_t t = now_ns();

	hist_add(&c->hist, t - c->last_ns);
	c->last_ns = t;
	if (t - c->mem_ns >= MEM_SAMPLE_NS) {
		mem_sample(c);
		c->last_ns = c->mem_ns = now_ns();
	}
}

/*
 * Wait until the engine has no background work left: its own sign (busy())
 * says none is due or running, and the whole process -- every thread of the
 * engine -- used less than SETTLE_CPU seconds of CPU and wrote no byte in
 * each of SETTLE_QUIET consecutive polls SETTLE_POLL_NS apart.  A flush or
 * compaction burns CPU and writes its output without pause, and the next one
 * is picked as the last ends, so half a second of neither means none is
 * running.  Bounded by --settle-timeout; the record says how long it took
 * and whether the bound ended it.
 */
#define SETTLE_POLL_NS 100000000L
#define SETTLE_QUIET   5
#define SETTLE_CPU     0.005

static void settle(struct child *c, struct record *r)
{
	const struct timespec poll = { 0, SETTLE_POLL_NS };
	double t0 = now(), cpu0, cpu;
	uint64_t w0, w;
	int quiet = 0;

	process_activity(&cpu0, &w0);
	while (quiet < SETTLE_QUIET) {
		int busy;

		if (now() - t0 >= c->cfg->settle_timeout) {
			r->settle_timed_out = 1;
			break;
		}
		nanosleep(&poll, NULL);
		process_activity(&cpu, &w);
		busy = c->db.ops->busy(&c->db);
		quiet = !busy && cpu - cpu0 < SETTLE_CPU && w == w0 ? quiet + 1 : 0;
		cpu0 = cpu;
		w0 = w;
	}
	r->settle_secs = now() - t0;
}

/* Write the keys in order (fillseq) or in c->perm's order, or at random (overwrite). */
static void run_writes(struct child *c, int w, struct record *r)
{
	const struct config *cfg = c->cfg;
	uint64_t rng = cfg->seed ^ 0x6f766572ull;        /* "over" */
	uint64_t i = 0;
	double t0;

	c->compacted = 0;
	t0 = now();
	op_begin(c);
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
		op_done(c);
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
	op_begin(c);
	for (uint64_t i = 0; i < cfg->reads; i++) {
		size_t vlen = 0;
		int found;

		make_key(key, rng_below(&rng, cfg->num));
		found = c->db.ops->get(&c->db, key, KEY_SIZE, &vlen);
		if (found < 0)
			child_fail(c, c->db.err);
		op_done(c);
		if (found) {
			r->found++;
			r->bytes += KEY_SIZE + vlen;
		}
	}
	r->secs = now() - t0;
	r->ops = cfg->reads;
}

/*
 * Read from the first key on, until the end or --reads entries.  Latency is
 * taken per READSEQ_GROUP entries: a single next() is too short to time
 * without the clock weighing on it.
 */
static void run_readseq(struct child *c, struct record *r)
{
	const struct engine_ops *ops = c->db.ops;
	int in_group = 0;
	double t0;

	t0 = now();
	op_begin(c);
	if (ops->iter_new(&c->db) != 0)
		child_fail(c, c->db.err);
	ops->seek_first(&c->db);
	while (r->ops < c->cfg->reads && ops->valid(&c->db)) {
		r->bytes += ops->entry(&c->db);
		r->ops++;
		ops->next(&c->db);
		if (++in_group == READSEQ_GROUP) {
			op_done(c);
			in_group = 0;
		}
	}
	if (ops->iter_free(&c->db) != 0)
		child_fail(c, c->db.err);
	if (in_group || !r->ops)
		op_done(c);
	r->secs = now() - t0;
	r->found = r->ops;
}

/*
 * Seek to a random key and read up to --seek-reads entries from there (the
 * one found and those next() steps to).  Each seek uses a fresh iterator, as
 * each directory listing in smolfs will; an operation is the whole group.
 */
static void run_seekrandom(struct child *c, struct record *r)
{
	const struct config *cfg = c->cfg;
	const struct engine_ops *ops = c->db.ops;
	uint64_t rng = cfg->seed ^ 0x7365656bull;        /* "seek" */
	char key[KEY_SIZE];
	double t0;

	t0 = now();
	op_begin(c);
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
		op_done(c);
	}
	r->secs = now() - t0;
	r->ops = cfg->reads;
}

/* Compact everything; returns the seconds it took. */
static double compact_all(struct child *c)
{
	double t0 = now();

	if (c->db.ops->compact(&c->db) != 0)
		child_fail(c, c->db.err);
	c->compacted = 1;
	return now() - t0;
}

/*
 * One workload.  The fills start from an empty directory; every other
 * workload first lets the engine finish its background work (settle), so
 * that each engine starts it from the same quiet state.  A *-compacted
 * workload on a database not compacted since its last write compacts it
 * first (reported as its compact_secs), then settles.
 */
static void run_workload(struct child *c, int w)
{
	struct record r;

	c->workload = w;
	memset(&r, 0, sizeof(r));
	r.kind = REC_START;
	r.workload = w;
	send_record(c, &r);

	db_open(c, is_fill(w));
	if (is_compacted_workload(w) && !c->compacted)
		r.compact_secs = compact_all(c);
	if (!is_fill(w))
		settle(c, &r);
	switch (w) {
	case W_FILLSEQ:
	case W_FILLRANDOM:
	case W_OVERWRITE: {
		uint64_t paced0 = 0, delayed0 = 0, stall0 = 0;

		if (c->db.ops->stalls)
			c->db.ops->stalls(&c->db, &paced0, &delayed0, &stall0);
		run_writes(c, w, &r);
		if (c->db.ops->stalls) {
			c->db.ops->stalls(&c->db, &r.paced, &r.delayed, &r.stall_us);
			r.paced -= paced0;
			r.delayed -= delayed0;
			r.stall_us -= stall0;
		}
		break;
	}
	case W_READRANDOM:
	case W_READRANDOM_COMPACTED:
		run_readrandom(c, &r);
		break;
	case W_READSEQ:
	case W_READSEQ_COMPACTED:
		run_readseq(c, &r);
		break;
	case W_SEEKRANDOM:
	case W_SEEKRANDOM_COMPACTED:
		run_seekrandom(c, &r);
		break;
	case W_COMPACT:
		/*
		 * One operation, so no latency figures; ops/s counts the
		 * entries written, so the ratio of two engines' rates is the
		 * inverse ratio of their compaction times.
		 */
		op_begin(c);
		r.secs = compact_all(c);
		r.ops = c->cfg->num;
		r.bytes = c->cfg->num * (KEY_SIZE + c->value_size);
		memset(&c->hist, 0, sizeof(c->hist));
		break;
	}
	pause_end(&r);
	mem_sample(c);
	hist_summary(&c->hist, &r.lat);
	r.anon_kb = c->anon_kb;
	r.file_kb = c->file_kb;
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
	if (pause_meter_start() != 0)
		child_fail(&c, "cannot start the pause meter's thread");
	c.pairs = bench_malloc(cfg->batch * sizeof(*c.pairs));
	c.keys = bench_malloc((size_t)cfg->batch * KEY_SIZE);
	/* fillrandom writes every key once, in the order of a shuffled permutation. */
	c.perm = bench_malloc(cfg->num * sizeof(*c.perm));
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

/* ------------------------------------------------------------------ the table workloads (child) */

/*
 * lg-scan: a table whose family "meta" (three small cells a row) is in the
 * default locality group and whose family "blob" (one 1 KiB cell a row) is in
 * the group "blobs", which is a kv tree of its own.  After loading, flushing
 * and compacting, it scans "meta" alone and then both families, each time on
 * a freshly opened database (an empty block cache), and reports the SSTable
 * bytes each scan read next to the size of each group's tree: a scan of
 * "meta" should read about the default tree's bytes and none of the blobs'.
 *
 * prefix-scan: tables of 10,000 and --num rows keyed like the seeds'
 * aircraft table, "flight#TF-FIR#2024-01-25#FI318", where every aircraft has
 * 100 flights in January 2024, so the prefix "flight#TF-FIR#2024-01-" matches
 * exactly 100 rows.  After a full compaction it times --scans prefix scans
 * at random aircraft in each table and reports the median and 99th
 * percentile of the time and of the SSTable bytes per scan.  The block cache
 * is off for the scans, so every block a scan needs is read from its file
 * each time (through the OS page cache): otherwise the small table would sit
 * in the cache and the large one would not, and the comparison would measure
 * the cache rather than the scan.
 *
 * Neither uses --value-size, --batch or --sync: rows are written one
 * tbl_mutate_row each (all of a row's cells in one atomic mutation), without
 * sync, and lg-scan's blobs are always LG_BLOB_SIZE bytes.
 */
#define LG_TABLE          "lgscan"
#define LG_BLOB_SIZE      1024
#define LG_GROUP          "blobs"
#define PX_TABLE          "aircraft"
#define PX_ROWS           100       /* the rows one prefix matches */
#define PX_SMALL_TABLE    10000     /* rows of the small table */
#define PX_WARMUP         1000      /* untimed scans that open every SSTable first */
#define TS_BASE           UINT64_C(1704067200000000)  /* 2024-01-01T00:00:00Z in us */

/* What a table workload's lines are (struct trecord.line). */
enum { LG_LOAD, LG_SCAN_META, LG_SCAN_ALL, LG_NLINES };
enum { PX_SMALL, PX_LARGE, PX_NLINES };
#define MAX_TLINES 3

static const char *tline_name(int w, int line)
{
	static const char *const lg[LG_NLINES] = { "load", "scan meta", "scan meta,blob" };
	static const char *const px[PX_NLINES] = { "small table", "large table" };

	if (line < 0)
		return "setup";
	return w == W_LG_SCAN ? lg[line] : px[line];
}

/*
 * What a table child tells its parent: REC_START when a line begins, REC_DONE
 * with its figures.  Fields a line does not measure are 0.  Smaller than
 * PIPE_BUF, so each write() arrives whole.
 */
struct trecord {
	uint32_t kind;
	uint32_t workload;
	uint32_t line;
	uint64_t table_rows;       /* rows in the table */
	double load_secs;          /* writing the rows */
	double compact_secs;       /* flushing and compacting them */
	uint64_t tree_bytes[2];    /* SSTable bytes: [0] the default tree, [1] the other trees */
	uint64_t tree_files[2];
	char group_tree[32];       /* lg-scan: the kv tree of the group "blobs" */
	double secs;               /* the timed scans */
	uint64_t rows, cells;      /* what they returned */
	uint64_t kv_bytes;         /* key and value bytes they read through the engine */
	uint64_t sst_bytes;        /* block bytes read from SSTable files meanwhile */
	uint64_t scans;            /* prefix-scan: timed scans */
	double us_median, us_p99;  /* prefix-scan: microseconds per scan (wall clock) */
	double cpu_median, cpu_p99;/* prefix-scan: CPU microseconds of the scanning thread */
	double sst_median, sst_p99;/* prefix-scan: SSTable bytes read per scan */
	uint64_t disk_bytes;       /* the database directory's files at the end of the line */
	uint64_t rss_kb;           /* the child's peak RSS so far */
};

/* Everything a table child needs. */
struct tchild {
	const struct config *cfg;
	int workload;
	int line;                  /* the line running, for error reports */
	const char *dir;           /* the child's directory; databases go inside */
	int out;
	char *pool;                /* lg-scan's blob bytes, as make_pool makes them */
	size_t pool_len, pool_pos;
};

static void tchild_fail(struct tchild *c, const char *what, const char *msg)
	__attribute__((noreturn));

/* Report what failed and why (kv_strerror for the engine's errors) and end the child. */
static void tchild_fail(struct tchild *c, const char *what, const char *msg)
{
	fprintf(stderr, "smolbench: smolfs, %s, %s: %s: %s\n", workload_names[c->workload],
		tline_name(c->workload, c->line), what, msg);
	_exit(1);
}

/* dir = the child's directory / name. */
static void tchild_path(struct tchild *c, char dir[PATH_MAX], const char *name)
{
	if (snprintf(dir, PATH_MAX, "%s/%s", c->dir, name) >= PATH_MAX)
		tchild_fail(c, name, "the path is too long");
}

static void tsend(struct tchild *c, struct trecord *r, uint32_t kind)
{
	ssize_t n;

	r->kind = kind;
	r->workload = c->workload;
	r->line = c->line;
	n = write(c->out, r, sizeof(*r));
	if (n != (ssize_t)sizeof(*r))
		tchild_fail(c, "write", "cannot write to the parent's pipe");
}

static void tstart(struct tchild *c, int line, struct trecord *r)
{
	c->line = line;
	memset(r, 0, sizeof(*r));
	tsend(c, r, REC_START);
}

static struct tbl_db *tbench_open(struct tchild *c, const char *dir, size_t cache)
{
	struct tbl_options o;
	struct tbl_db *db;
	int err;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		tchild_fail(c, dir, strerror(errno));
	tbl_options_init(&o);
	bench_kv_options(&o.kv, cache);
	err = tbl_open(dir, &o, &db);
	if (err)
		tchild_fail(c, "tbl_open", kv_strerror(err));
	return db;
}

static void tbench_close(struct tchild *c, struct tbl_db *db)
{
	int err = tbl_close(db);

	if (err)
		tchild_fail(c, "tbl_close", kv_strerror(err));
}

static void tbench_family(struct tchild *c, struct tbl_db *db, const char *table,
			  const char *family, enum cell_type type, const char *group)
{
	struct tbl_family_settings s;
	int err;

	tbl_family_settings_init(&s);
	s.type = type;
	s.compression = ZSTD_LEVEL;
	snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	err = tbl_add_family(db, table, family, &s);
	if (err)
		tchild_fail(c, "tbl_add_family", kv_strerror(err));
}

/*
 * The SSTable files and bytes of the default tree ([0]) and of all other
 * trees ([1]), from the engine's "sstables" property: one line per live
 * file, "level L NNNNNN.sst B bytes, ...", prefixed by "tree NAME " outside
 * the default tree.
 */
static void tree_sizes(struct tchild *c, struct kv_db *kv, struct trecord *r)
{
	char *text = kv_property(kv, "sstables"), *line, *save = NULL;

	if (!text)
		tchild_fail(c, "kv_property", "no \"sstables\" property");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long bytes;
		const char *p = line;
		int which = 0, level;

		if (!strncmp(p, "tree ", 5)) {
			p = strchr(p + 5, ' ');
			if (!p)
				continue;
			p++;
			which = 1;
		}
		if (sscanf(p, "level %d %*[0-9].sst %llu bytes", &level, &bytes) != 2)
			continue;
		r->tree_bytes[which] += bytes;
		r->tree_files[which]++;
	}
	free(text);
}

static uint64_t sst_bytes_read(struct kv_db *kv)
{
	struct kv_stats st;

	kv_get_stats(kv, &st);
	return st.bytes_read_sst;
}

/*
 * Compact every tree of lg-scan's database in dir (flushed already) down to
 * its last level, and note the name of the one tree besides the default
 * one: the group's.  The table layer hands out no tree handles, and
 * kv_tree_open on a tree it has open would replace the settings it gave the
 * tree (its compaction filter), so this is done with the table closed,
 * through the engine alone: every tree named by kv_tree_list is opened with
 * the compression its families ask for and compacted.
 */
static void compact_all_trees(struct tchild *c, const char *dir, struct trecord *r)
{
	struct kv_tree_options to;
	struct kv_options o;
	struct kv_db *kv;
	char **names;
	size_t n;
	int err;

	bench_kv_options(&o, block_cache_bytes);
	o.create_if_missing = 0;
	err = kv_open(dir, &o, &kv);
	if (err)
		tchild_fail(c, "kv_open", kv_strerror(err));
	err = kv_tree_list(kv, &names, &n);
	if (err)
		tchild_fail(c, "kv_tree_list", kv_strerror(err));
	for (size_t i = 0; i < n; i++) {
		struct kv_tree *t = NULL;

		if (strcmp(names[i], "default")) {
			kv_tree_options_init(&to);
			to.compression_level = ZSTD_LEVEL;
			err = kv_tree_open(kv, names[i], &to, &t);
			if (err)
				tchild_fail(c, "kv_tree_open", kv_strerror(err));
			/* One group, so one tree besides the default one: the group's. */
			snprintf(r->group_tree, sizeof(r->group_tree), "%s", names[i]);
		}
		err = kv_compact_range_tree(kv, t, NULL, 0, NULL, 0);
		if (err)
			tchild_fail(c, "kv_compact_range_tree", kv_strerror(err));
		free(names[i]);
	}
	free(names);
	if (n != 2)
		tchild_fail(c, "kv_tree_list", "not two trees (default and the group "
			    LG_GROUP "'s)");
	err = kv_close(kv);
	if (err)
		tchild_fail(c, "kv_close", kv_strerror(err));
}

/* Write lg-scan's rows, one row mutation each: three meta cells and a blob. */
static void lg_load(struct tchild *c, struct tbl_db *db, uint64_t nrows)
{
	struct tbl_mutation m[4];
	char row[32], name[40];

	memset(m, 0, sizeof(m));
	for (int i = 0; i < 4; i++) {
		m[i].op = TBL_SET;
		m[i].family = i < 3 ? "meta" : "blob";
	}
	m[0].qualifier = "name";
	m[0].value.type = CELL_STRING;
	m[1].qualifier = "size";
	m[1].value.type = CELL_I64;
	m[1].value.v.i64 = LG_BLOB_SIZE;
	m[2].qualifier = "mtime";
	m[2].value.type = CELL_I64;
	m[3].qualifier = "data";
	m[3].value.type = CELL_BYTES;
	for (int i = 0; i < 4; i++)
		m[i].qualifier_len = strlen(m[i].qualifier);

	for (uint64_t i = 0; i < nrows; i++) {
		int rlen = snprintf(row, sizeof(row), "row#%010" PRIu64, i);
		int nlen = snprintf(name, sizeof(name), "file-%" PRIu64 ".dat", i);
		int err;

		if (c->pool_pos + LG_BLOB_SIZE > c->pool_len)
			c->pool_pos = 0;
		for (int k = 0; k < 4; k++)
			m[k].ts = TS_BASE + i;
		m[0].value.v.data = slice_make(name, nlen);
		m[2].value.v.i64 = (int64_t)(TS_BASE + i);
		m[3].value.v.data = slice_make(c->pool + c->pool_pos, LG_BLOB_SIZE);
		c->pool_pos += LG_BLOB_SIZE;
		err = tbl_mutate_row(db, LG_TABLE, row, rlen, m, 4, 0, NULL);
		if (err)
			tchild_fail(c, "tbl_mutate_row", kv_strerror(err));
	}
}

/*
 * One scan of lg-scan's whole table, of family meta alone or of all
 * families, on a database opened for it (so its block cache is empty).
 */
static void lg_scan(struct tchild *c, const char *dir, int line, const struct trecord *built,
		    struct trecord *r)
{
	static const char *const meta_only[] = { "meta" };
	struct tbl_scan_counts counts;
	const struct tbl_row *row;
	struct tbl_scan *s;
	struct tbl_read rd;
	struct tbl_db *db;
	uint64_t before;
	double t0;
	int err;

	tstart(c, line, r);
	db = tbench_open(c, dir, block_cache_bytes);
	r->table_rows = built->table_rows;
	tree_sizes(c, tbl_kv(db), r);
	memcpy(r->group_tree, built->group_tree, sizeof(r->group_tree));
	memset(&rd, 0, sizeof(rd));
	if (line == LG_SCAN_META) {
		rd.families = meta_only;
		rd.nfamilies = 1;
	}

	before = sst_bytes_read(tbl_kv(db));
	t0 = now();
	err = tbl_scan_new(db, LG_TABLE, &rd, &s);
	if (err)
		tchild_fail(c, "tbl_scan_new", kv_strerror(err));
	while ((err = tbl_scan_next(s, &row)) == 1) {
		r->rows++;
		r->cells += row->ncells;
	}
	if (err < 0)
		tchild_fail(c, "tbl_scan_next", kv_strerror(err));
	tbl_scan_counts(s, &counts);
	tbl_scan_free(s);
	r->secs = now() - t0;
	r->sst_bytes = sst_bytes_read(tbl_kv(db)) - before;
	r->kv_bytes = counts.bytes;
	if (r->rows != r->table_rows || r->cells != r->rows * (line == LG_SCAN_META ? 3 : 4)) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%" PRIu64 " rows and %" PRIu64 " cells, not %"
			 PRIu64 " rows of %d cells", r->rows, r->cells, r->table_rows,
			 line == LG_SCAN_META ? 3 : 4);
		tchild_fail(c, "the scan returned", msg);
	}
	tbench_close(c, db);
	r->disk_bytes = disk_usage(dir);
	r->rss_kb = peak_rss_kb();
	tsend(c, r, REC_DONE);
}

static void run_lg_scan(struct tchild *c)
{
	const struct config *cfg = c->cfg;
	struct trecord load, r;
	struct tbl_db *db;
	char dir[PATH_MAX];
	double t0;
	int err;

	tchild_path(c, dir, "db");
	c->pool = pool_new(cfg->seed, LG_BLOB_SIZE, cfg->random_values, &c->pool_len);
	c->pool_pos = 0;

	tstart(c, LG_LOAD, &load);
	load.table_rows = cfg->num;
	db = tbench_open(c, dir, block_cache_bytes);
	err = tbl_create_table(db, LG_TABLE);
	if (err)
		tchild_fail(c, "tbl_create_table", kv_strerror(err));
	tbench_family(c, db, LG_TABLE, "meta", CELL_STRING, "default");
	tbench_family(c, db, LG_TABLE, "blob", CELL_BYTES, LG_GROUP);
	t0 = now();
	lg_load(c, db, cfg->num);
	load.load_secs = now() - t0;

	t0 = now();
	err = kv_flush(tbl_kv(db));
	if (err)
		tchild_fail(c, "kv_flush", kv_strerror(err));
	tbench_close(c, db);
	compact_all_trees(c, dir, &load);
	load.compact_secs = now() - t0;

	db = tbench_open(c, dir, block_cache_bytes);
	tree_sizes(c, tbl_kv(db), &load);
	tbench_close(c, db);
	load.disk_bytes = disk_usage(dir);
	load.rss_kb = peak_rss_kb();
	tsend(c, &load, REC_DONE);

	lg_scan(c, dir, LG_SCAN_META, &load, &r);
	lg_scan(c, dir, LG_SCAN_ALL, &load, &r);
	free(c->pool);
}

/* Letters of aircraft number a: a registration "TF-" + width letters. */
static void px_registration(char *reg, uint64_t a, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		reg[i] = 'A' + a % 26;
		a /= 26;
	}
	reg[width] = '\0';
}

/* The fewest letters (at least 3, as Iceland's registrations have) for n aircraft. */
static int px_width(uint64_t n)
{
	uint64_t cap = 26 * 26 * 26;
	int width = 3;

	while (cap < n) {
		cap *= 26;
		width++;
	}
	return width;
}

/*
 * Write nrows / PX_ROWS aircraft's January flights, in the order they fly:
 * day by day, four departures a day, every aircraft each time.  Flight j of
 * aircraft a (j < 100) is on day 1 + j / 4 with number 100 + (37 j + a) mod
 * 900, which differs for every j of one aircraft, so no two rows collide.
 */
static void px_load(struct tchild *c, struct tbl_db *db, uint64_t nrows)
{
	static const char *const routes[] = { "KEF-CPH", "KEF-OSL", "OSL-KEF", "KEF-LHR",
					      "LHR-KEF", "CPH-KEF", "KEF-JFK", "JFK-KEF" };
	uint64_t naircraft = nrows / PX_ROWS;
	int width = px_width(naircraft);
	struct tbl_mutation m[3];
	char row[64], reg[16];

	memset(m, 0, sizeof(m));
	for (int i = 0; i < 3; i++) {
		m[i].op = TBL_SET;
		m[i].family = "flight";
	}
	m[0].qualifier = "route";
	m[0].value.type = CELL_STRING;
	m[1].qualifier = "dep";
	m[1].value.type = CELL_I64;
	m[2].qualifier = "pax";
	m[2].value.type = CELL_I64;
	for (int i = 0; i < 3; i++)
		m[i].qualifier_len = strlen(m[i].qualifier);

	for (uint64_t j = 0; j < PX_ROWS; j++) {
		uint64_t day = 1 + j / 4;
		uint64_t dep = TS_BASE + (day - 1) * UINT64_C(86400000000) +
			       (j % 4) * UINT64_C(21600000000);

		for (uint64_t a = 0; a < naircraft; a++) {
			int rlen, err;

			px_registration(reg, a, width);
			rlen = snprintf(row, sizeof(row), "flight#TF-%s#2024-01-%02" PRIu64 "#FI%03"
					PRIu64, reg, day, 100 + (37 * j + a) % 900);
			for (int k = 0; k < 3; k++)
				m[k].ts = dep;
			m[0].value.v.data = slice_make(routes[(a + j) % 8], 7);
			m[1].value.v.i64 = (int64_t)dep;
			m[2].value.v.i64 = (int64_t)(50 + (7 * a + 13 * j) % 150);
			err = tbl_mutate_row(db, PX_TABLE, row, rlen, m, 3, 0, NULL);
			if (err)
				tchild_fail(c, "tbl_mutate_row", kv_strerror(err));
		}
	}
}

static int cmp_double(const void *a, const void *b);

/* The p-th percentile (0 < p <= 1) of sorted v[0..n), n > 0: the nearest rank. */
static double percentile(const double *v, uint64_t n, double p)
{
	uint64_t rank = (uint64_t)(p * n + 0.999999);

	return v[rank ? rank - 1 : 0];
}

/* One prefix scan of aircraft a: the rows and cells it returned. */
static void px_scan(struct tchild *c, struct tbl_db *db, uint64_t a, int width,
		    uint64_t *rows, uint64_t *cells)
{
	const struct tbl_row *row;
	struct tbl_scan *s;
	struct tbl_read rd;
	char prefix[64], reg[16];
	int err;

	px_registration(reg, a, width);
	memset(&rd, 0, sizeof(rd));
	rd.prefix = prefix;
	rd.prefix_len = snprintf(prefix, sizeof(prefix), "flight#TF-%s#2024-01-", reg);
	*rows = *cells = 0;
	err = tbl_scan_new(db, PX_TABLE, &rd, &s);
	if (err)
		tchild_fail(c, "tbl_scan_new", kv_strerror(err));
	while ((err = tbl_scan_next(s, &row)) == 1) {
		(*rows)++;
		*cells += row->ncells;
	}
	if (err < 0)
		tchild_fail(c, "tbl_scan_next", kv_strerror(err));
	tbl_scan_free(s);
	if (*rows != PX_ROWS) {
		char msg[160];

		snprintf(msg, sizeof(msg), "prefix %s matched %" PRIu64 " rows, not %d", prefix,
			 *rows, PX_ROWS);
		tchild_fail(c, "the scan returned", msg);
	}
}

/* Build, compact and time one table of prefix-scan. */
static void px_table(struct tchild *c, int line, uint64_t nrows)
{
	const struct config *cfg = c->cfg;
	uint64_t naircraft = nrows / PX_ROWS, nwarm, rng;
	int width = px_width(naircraft);
	double *us, *cpu, *bytes, t0;
	char dir[PATH_MAX], name[32];
	struct trecord r;
	struct tbl_db *db;
	int err;

	tstart(c, line, &r);
	r.table_rows = nrows;
	snprintf(name, sizeof(name), "db-%" PRIu64, nrows);
	tchild_path(c, dir, name);
	db = tbench_open(c, dir, block_cache_bytes);
	err = tbl_create_table(db, PX_TABLE);
	if (err)
		tchild_fail(c, "tbl_create_table", kv_strerror(err));
	tbench_family(c, db, PX_TABLE, "flight", CELL_STRING, "default");
	t0 = now();
	px_load(c, db, nrows);
	r.load_secs = now() - t0;
	t0 = now();
	err = kv_flush(tbl_kv(db));
	if (!err)
		err = kv_compact_range(tbl_kv(db), NULL, 0, NULL, 0);
	if (err)
		tchild_fail(c, "kv_flush, kv_compact_range", kv_strerror(err));
	r.compact_secs = now() - t0;
	tbench_close(c, db);

	/* No block cache from here on: see the comment at the top of this section. */
	db = tbench_open(c, dir, 0);
	tree_sizes(c, tbl_kv(db), &r);
	/* Open every SSTable (index and filter) before timing: a one-time cost. */
	nwarm = naircraft < PX_WARMUP ? naircraft : PX_WARMUP;
	for (uint64_t i = 0; i < nwarm; i++) {
		uint64_t rows, cells;

		px_scan(c, db, i * naircraft / nwarm, width, &rows, &cells);
	}

	us = bench_malloc(cfg->scans * sizeof(*us));
	cpu = bench_malloc(cfg->scans * sizeof(*cpu));
	bytes = bench_malloc(cfg->scans * sizeof(*bytes));
	rng = cfg->seed ^ 0x70726566ull;        /* "pref" */
	for (uint64_t i = 0; i < cfg->scans; i++) {
		uint64_t a = rng_below(&rng, naircraft), before, rows, cells;
		double t1, c1;

		before = sst_bytes_read(tbl_kv(db));
		c1 = thread_cpu();
		t1 = now();
		px_scan(c, db, a, width, &rows, &cells);
		us[i] = (now() - t1) * 1e6;
		cpu[i] = (thread_cpu() - c1) * 1e6;
		bytes[i] = sst_bytes_read(tbl_kv(db)) - before;
		r.secs += us[i] / 1e6;
		r.sst_bytes += bytes[i];
		r.rows += rows;
		r.cells += cells;
	}
	r.scans = cfg->scans;
	qsort(us, cfg->scans, sizeof(*us), cmp_double);
	qsort(cpu, cfg->scans, sizeof(*cpu), cmp_double);
	qsort(bytes, cfg->scans, sizeof(*bytes), cmp_double);
	r.us_median = percentile(us, cfg->scans, 0.5);
	r.us_p99 = percentile(us, cfg->scans, 0.99);
	r.cpu_median = percentile(cpu, cfg->scans, 0.5);
	r.cpu_p99 = percentile(cpu, cfg->scans, 0.99);
	r.sst_median = percentile(bytes, cfg->scans, 0.5);
	r.sst_p99 = percentile(bytes, cfg->scans, 0.99);
	free(us);
	free(cpu);
	free(bytes);
	tbench_close(c, db);
	r.disk_bytes = disk_usage(dir);
	r.rss_kb = peak_rss_kb();
	tsend(c, &r, REC_DONE);
	err = remove_tree(dir);
	if (err)
		tchild_fail(c, dir, strerror(-err));
}

/* The table sizes of prefix-scan: 10,000 and --num rows, whole aircraft each. */
static void px_sizes(const struct config *cfg, uint64_t *small, uint64_t *large)
{
	*large = cfg->num - cfg->num % PX_ROWS;
	*small = *large < PX_SMALL_TABLE ? *large : PX_SMALL_TABLE;
}

static void run_prefix_scan(struct tchild *c)
{
	uint64_t small, large;

	px_sizes(c->cfg, &small, &large);
	if (small < large)
		px_table(c, PX_SMALL, small);
	px_table(c, PX_LARGE, large);
}

/* The body of a table workload's child process; never returns. */
static void table_child_main(const struct config *cfg, int w, const char *dir, int out)
{
	struct tchild c;

	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.workload = w;
	c.line = -1;
	c.dir = dir;
	c.out = out;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		tchild_fail(&c, dir, strerror(errno));
	if (w == W_LG_SCAN)
		run_lg_scan(&c);
	else
		run_prefix_scan(&c);
	close(out);
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

/* What happened to the child of one table workload in one run. */
struct table_result {
	enum outcome outcome;
	int status;
	int last_line;             /* the last line started, -1 if none */
	long maxrss_kb;
	struct trecord rec[MAX_TLINES];
	int have[MAX_TLINES];
};

struct results {
	int nruns, nvs;
	struct child_result *r;    /* [run][value size][engine] */
	struct table_result *t;    /* [run][table workload - W_LG_SCAN] */
	int rocksdb_snappy;        /* some RocksDB run fell back to snappy */
	int failures;
};

static struct table_result *table_result_at(struct results *res, int run, int w)
{
	return &res->t[(size_t)run * NTABLE_WORKLOADS + (w - W_LG_SCAN)];
}

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
	fprintf(stderr, "%-7s %6zu B  %-20s %10.0f ops/s  %7.1f MB/s", engine_names[engine],
		vsize, workload_names[r->workload], r->secs > 0 ? r->ops / r->secs : 0.0,
		r->secs > 0 ? r->bytes / MB / r->secs : 0.0);
	if (r->lat.n)
		fprintf(stderr, "  p99 %.1f us, max %.2f ms", r->lat.p99, r->lat.max / 1e3);
	if (r->settle_secs > 0)
		fprintf(stderr, "  (settled %.1f s%s)", r->settle_secs,
			r->settle_timed_out ? ", TIMED OUT" : "");
	fprintf(stderr, "\n");
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
	if (cfg->keep_db)
		return;
	n = remove_tree(dir);
	if (n)
		fprintf(stderr, "smolbench: cannot remove %s: %s\n", dir, strerror(-n));
}

static void tprogress(const struct config *cfg, int run, const struct trecord *r)
{
	if (cfg->quiet)
		return;
	if (cfg->repeat > 1)
		fprintf(stderr, "[run %d/%d] ", run + 1, cfg->repeat);
	fprintf(stderr, "smolfs  %-11s ", workload_names[r->workload]);
	if (r->workload == W_LG_SCAN && r->line == LG_LOAD)
		fprintf(stderr, "load %" PRIu64 " rows %.1f s, flush and compaction %.1f s\n",
			r->table_rows, r->load_secs, r->compact_secs);
	else if (r->workload == W_LG_SCAN)
		fprintf(stderr, "%-14s %10.0f rows/s  %8.1f MiB read from SSTables\n",
			tline_name(r->workload, r->line), r->secs > 0 ? r->rows / r->secs : 0.0,
			r->sst_bytes / MIB);
	else
		fprintf(stderr, "%" PRIu64 " rows: %" PRIu64 " scans, median %.1f us, "
			"p99 %.1f us (CPU %.1f, %.1f)\n", r->table_rows, r->scans, r->us_median,
			r->us_p99, r->cpu_median, r->cpu_p99);
}

/* Run table workload w in a child and collect what it reports. */
static void run_table_child(const struct config *cfg, struct results *res, int run, int w)
{
	struct table_result *tr = table_result_at(res, run, w);
	char dir[PATH_MAX];
	struct trecord rec;
	struct rusage ru;
	int fds[2], status, n;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/smolfs-%s-run%d", cfg->db_base, workload_names[w], run + 1);
	if (pipe(fds) != 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		table_child_main(cfg, w, dir, fds[1]);
	}
	close(fds[1]);

	tr->last_line = -1;
	while ((n = read_full(fds[0], &rec, sizeof(rec))) > 0) {
		if (rec.workload != (uint32_t)w || rec.line >= MAX_TLINES)
			continue;
		if (rec.kind == REC_START) {
			tr->last_line = rec.line;
		} else if (rec.kind == REC_DONE) {
			tr->rec[rec.line] = rec;
			tr->have[rec.line] = 1;
			tprogress(cfg, run, &rec);
		}
	}
	close(fds[0]);
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	}
	tr->maxrss_kb = ru.ru_maxrss;
	if (WIFSIGNALED(status)) {
		tr->outcome = RUN_SIGNALED;
		tr->status = WTERMSIG(status);
		fprintf(stderr, "smolbench: smolfs, %s: killed by signal %d (%s) during %s\n",
			workload_names[w], tr->status, strsignal(tr->status),
			tline_name(w, tr->last_line));
	} else if (WEXITSTATUS(status) == 0) {
		tr->outcome = RUN_OK;
	} else {
		tr->status = WEXITSTATUS(status);
		tr->outcome = RUN_FAILED;
	}
	if (tr->outcome != RUN_OK)
		res->failures++;
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
	double spread;             /* ops/s: (max - min) / median over the runs, in percent */
	double p50, p99, p999;     /* microseconds, medians of the runs' */
	double max;                /* microseconds, the largest of any run */
	double over_1ms, over_10ms;
	double anon_kb, file_kb, settle_secs;
	double paced, delayed, stall_us;  /* medians; 0 for engines that do not count them */
	double pauses;             /* median of the runs' machine pauses over PAUSE_NS */
	double pause_max_ns;       /* the longest pause of any run */
	int settle_timeouts;       /* runs whose settle() ended at the timeout */
};

enum metric {
	M_OPS, M_MB, M_US, M_DISK, M_RSS, M_FOUND, M_N, M_COMPACT, M_LAT_N, M_P50, M_P99, M_P999,
	M_MAX, M_OVER_1MS, M_OVER_10MS, M_ANON, M_FILE, M_SETTLE, M_SETTLE_TIMEOUT,
	M_PACED, M_DELAYED, M_STALL, M_PAUSES, M_PAUSE_MAX, M_PAUSE_RT,
};

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
	case M_LAT_N:
		return r->lat.n;
	case M_P50:
		return r->lat.p50;
	case M_P99:
		return r->lat.p99;
	case M_P999:
		return r->lat.p999;
	case M_MAX:
		return r->lat.max;
	case M_OVER_1MS:
		return r->lat.over_1ms;
	case M_OVER_10MS:
		return r->lat.over_10ms;
	case M_ANON:
		return r->anon_kb;
	case M_FILE:
		return r->file_kb;
	case M_SETTLE:
		return r->settle_secs;
	case M_SETTLE_TIMEOUT:
		return r->settle_timed_out;
	case M_PACED:
		return r->paced;
	case M_DELAYED:
		return r->delayed;
	case M_STALL:
		return r->stall_us;
	case M_PAUSES:
		return r->pauses;
	case M_PAUSE_MAX:
		return r->pause_max_ns;
	case M_PAUSE_RT:
		return r->pause_rt;
	}
	return 0;
}

/* Metric m of every run that has workload w, into v[]; returns how many. */
static int runs_of(struct results *res, int vs, int engine, int w, enum metric m, double *v)
{
	int n = 0;

	for (int run = 0; run < res->nruns; run++) {
		struct child_result *cr = result_at(res, run, vs, engine);

		if (cr->have[w])
			v[n++] = metric(&cr->rec[w], m);
	}
	return n;
}

static double median_of(struct results *res, int vs, int engine, int w, enum metric m, int *n)
{
	double v[res->nruns];

	*n = runs_of(res, vs, engine, w, m, v);
	return *n ? median(v, *n) : 0;
}

/* The largest value of metric m over the runs (m >= 0 always). */
static double max_of(struct results *res, int vs, int engine, int w, enum metric m)
{
	double v[res->nruns], top = 0;
	int n = runs_of(res, vs, engine, w, m, v);

	for (int i = 0; i < n; i++)
		if (v[i] > top)
			top = v[i];
	return top;
}

/* The spread of metric m over the runs: (max - min) / median, in percent; 0 for one run. */
static double spread_of(struct results *res, int vs, int engine, int w, enum metric m)
{
	double v[res->nruns], med;
	int n = runs_of(res, vs, engine, w, m, v);

	if (n < 2)
		return 0;
	med = median(v, n);    /* sorts v */
	return med > 0 ? 100 * (v[n - 1] - v[0]) / med : 0;
}

static void summarize(struct results *res, int vs, int engine, int w, struct summary *s)
{
	int n;

	s->ops_per_sec = median_of(res, vs, engine, w, M_OPS, &s->n);
	s->mb_per_sec = median_of(res, vs, engine, w, M_MB, &n);
	s->us_per_op = median_of(res, vs, engine, w, M_US, &n);
	s->disk_bytes = median_of(res, vs, engine, w, M_DISK, &n);
	s->rss_kb = median_of(res, vs, engine, w, M_RSS, &n);
	s->found = median_of(res, vs, engine, w, M_FOUND, &n);
	s->ops = median_of(res, vs, engine, w, M_N, &n);
	s->compact_secs = median_of(res, vs, engine, w, M_COMPACT, &n);
	s->spread = spread_of(res, vs, engine, w, M_OPS);
	s->p50 = median_of(res, vs, engine, w, M_P50, &n);
	s->p99 = median_of(res, vs, engine, w, M_P99, &n);
	s->p999 = median_of(res, vs, engine, w, M_P999, &n);
	s->max = max_of(res, vs, engine, w, M_MAX);
	s->over_1ms = median_of(res, vs, engine, w, M_OVER_1MS, &n);
	s->over_10ms = median_of(res, vs, engine, w, M_OVER_10MS, &n);
	s->anon_kb = median_of(res, vs, engine, w, M_ANON, &n);
	s->file_kb = median_of(res, vs, engine, w, M_FILE, &n);
	s->settle_secs = median_of(res, vs, engine, w, M_SETTLE, &n);
	s->paced = median_of(res, vs, engine, w, M_PACED, &n);
	s->delayed = median_of(res, vs, engine, w, M_DELAYED, &n);
	s->stall_us = median_of(res, vs, engine, w, M_STALL, &n);
	s->pauses = median_of(res, vs, engine, w, M_PAUSES, &n);
	s->pause_max_ns = max_of(res, vs, engine, w, M_PAUSE_MAX);
	{
		double v[res->nruns];

		n = runs_of(res, vs, engine, w, M_SETTLE_TIMEOUT, v);
		s->settle_timeouts = 0;
		for (int i = 0; i < n; i++)
			s->settle_timeouts += v[i] > 0;
	}
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

static void print_kv_header(const struct config *cfg);
static void print_table_header(const struct config *cfg);

static void print_header(const struct config *cfg)
{
	printf("smolbench:");
	if (cfg->nworkloads)
		print_kv_header(cfg);
	if (cfg->ntable_workloads)
		print_table_header(cfg);
	printf("  databases in %s%s\n", cfg->db_base,
	       cfg->db_base_is_temp ? " (removed at the end)" :
	       cfg->keep_db ? " (kept after each run: --keep-db)" : "");
	fflush(stdout);
}

/* The settings of the table workloads, for the header. */
static void print_table_header(const struct config *cfg)
{
	uint64_t small, large;

	printf("%s table workloads on smolfs alone:", cfg->nworkloads ? "\n " : "");
	for (int i = 0; i < cfg->ntable_workloads; i++)
		printf("%s %s", i ? "," : "", workload_names[cfg->table_workloads[i]]);
	printf("\n");
	for (int i = 0; i < cfg->ntable_workloads; i++) {
		if (cfg->table_workloads[i] == W_LG_SCAN) {
			printf("  lg-scan: %" PRIu64 " rows of 3 small meta cells and a %d-byte "
			       "blob in locality group \"" LG_GROUP "\"\n", cfg->num, LG_BLOB_SIZE);
			continue;
		}
		px_sizes(cfg, &small, &large);
		printf("  prefix-scan: %" PRIu64 " scans of %d rows in tables of ", cfg->scans,
		       PX_ROWS);
		if (small < large)
			printf("%" PRIu64 " and ", small);
		printf("%" PRIu64 " rows\n", large);
	}
	printf("  write buffer %u MiB, block cache %zu MiB (none in prefix-scan's scans), "
	       "bloom filter %d bits/key,\n  %d-byte blocks, zstd level %d, one tbl_mutate_row "
	       "a row, no sync\n", WRITE_BUFFER_SIZE >> 20, block_cache_bytes >> 20, BLOOM_BITS,
	       BLOCK_SIZE, ZSTD_LEVEL);
}

/* What the values are, for the header and each table's title. */
static const char *values_label(const struct config *cfg)
{
	return cfg->random_values ? "random values (incompressible)"
				  : "compressible values (db_bench-style, about 50%)";
}

/*
 * How well zstd and LevelDB's snappy could shrink this run's values: the
 * compressed size of 4 KiB blocks of consecutive values from the pool
 * (keys left out), at smolfs's two zstd levels.  Printed so that a reader
 * sees what the reads had to decompress.
 */
static void print_compressibility(const struct config *cfg, size_t vsize)
{
	size_t len, pos = 0, in = 0, out[2] = { 0, 0 };
	const int levels[2] = { ZSTD_LEVEL, ZSTD_UPPER_LEVEL };
	char *pool = pool_new(cfg->seed, vsize, cfg->random_values, &len);
	char block[BLOCK_SIZE + 1024], *dst;
	size_t cap = ZSTD_compressBound(sizeof(block));

	if (!vsize) {
		free(pool);
		return;
	}
	dst = bench_malloc(cap);
	for (int b = 0; b < 64; b++) {
		size_t fill = 0;

		while (fill < BLOCK_SIZE && fill + vsize <= sizeof(block)) {
			if (pos + vsize > len)
				pos = 0;
			memcpy(block + fill, pool + pos, vsize);
			pos += vsize;
			fill += vsize;
		}
		if (!fill)
			break;
		in += fill;
		for (int l = 0; l < 2; l++) {
			size_t n = ZSTD_compress(dst, cap, block, fill, levels[l]);

			out[l] += ZSTD_isError(n) || n > fill ? fill : n;
		}
	}
	if (in)
		printf("  %zu-byte values in %d-byte blocks: zstd level %d keeps %.0f%%, level %d "
		       "keeps %.0f%% of their bytes\n", vsize, BLOCK_SIZE, levels[0],
		       100.0 * out[0] / in, levels[1], 100.0 * out[1] / in);
	free(dst);
	free(pool);
}

/* The settings of the kv workloads, for the header. */
static void print_kv_header(const struct config *cfg)
{
	printf(" %" PRIu64 " entries, %d-byte keys, value size%s", cfg->num, KEY_SIZE,
	       cfg->nvalue_sizes > 1 ? "s" : "");
	for (int i = 0; i < cfg->nvalue_sizes; i++)
		printf("%s %zu", i ? "," : "", cfg->value_sizes[i]);
	printf(" B, %s\n", values_label(cfg));
	for (int i = 0; i < cfg->nvalue_sizes; i++)
		print_compressibility(cfg, cfg->value_sizes[i]);
	printf("  reads %" PRIu64 ", batch %d (entries per write), %s, seek reads %d, "
	       "%d run%s%s\n", cfg->reads, cfg->batch, cfg->sync ? "each write synced" : "no sync",
	       cfg->seek_reads, cfg->repeat, cfg->repeat > 1 ? "s" : "",
	       cfg->repeat > 1 ? " interleaved (every engine's run 1, then run 2, ...; "
				 "medians shown)" : "");
	printf("  every engine: write buffer %u MiB, block cache %zu MiB, "
	       "bloom filter %d bits/key,\n"
	       "                %d-byte blocks, max open files %d, checksums verified on reads\n",
	       WRITE_BUFFER_SIZE >> 20, block_cache_bytes >> 20, BLOOM_BITS, BLOCK_SIZE,
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
	printf("\n  before each workload but the fills, every engine finishes its background\n"
	       "  work (flushes, compactions; waited for up to %.0f s)\n", cfg->settle_timeout);
}

/* A latency in microseconds in a column of width characters; "-" without one. */
static void print_us(int width, double us, int have)
{
	if (!have)
		printf(" %*s", width, "-");
	else if (us < 1000)
		printf(" %*.1f", width, us);
	else
		printf(" %*.0f", width, us);
}

/* One line of a value size's table: the medians of one engine on one workload. */
static void print_row(struct results *res, int vs, int engine, int w)
{
	struct summary s;
	char notes[160] = "";
	size_t len;
	int lat, n;

	summarize(res, vs, engine, w, &s);
	if (!s.n) {
		printf("%-21s %-8s %10s\n", workload_names[w], engine_names[engine], "-");
		return;
	}
	if (w == W_READRANDOM || w == W_READRANDOM_COMPACTED)
		snprintf(notes, sizeof(notes), "found %.0f of %.0f", s.found, s.ops);
	else if (w == W_SEEKRANDOM || w == W_SEEKRANDOM_COMPACTED)
		snprintf(notes, sizeof(notes), "%.0f of %.0f seeks found an entry", s.found, s.ops);
	else if (w == W_READSEQ || w == W_READSEQ_COMPACTED)
		snprintf(notes, sizeof(notes), "%.0f entries", s.ops);
	else if (w == W_COMPACT)
		snprintf(notes, sizeof(notes), "compaction %.2f s", s.ops / s.ops_per_sec);
	len = strlen(notes);
	if (s.compact_secs > 0)
		snprintf(notes + len, sizeof(notes) - len, "; compacted first in %.2f s",
			 s.compact_secs);
	len = strlen(notes);
	if (s.paced > 0 || s.delayed > 0 || s.stall_us > 0)
		snprintf(notes + len, sizeof(notes) - len,
			 "%sstalled %.1f ms, %.0f writes paced, %.0f delayed",
			 len ? "; " : "", s.stall_us / 1e3, s.paced, s.delayed);
	len = strlen(notes);
	if (s.pauses > 0)
		snprintf(notes + len, sizeof(notes) - len, "%smachine paused %g times over "
			 "10 ms, up to %.1f ms", len ? "; " : "", s.pauses, s.pause_max_ns / 1e6);
	len = strlen(notes);
	if (s.settle_secs >= 1 || s.settle_timeouts)
		snprintf(notes + len, sizeof(notes) - len, "%ssettled %.1f s%s", len ? "; " : "",
			 s.settle_secs, s.settle_timeouts ? " (TIMED OUT)" : "");
	lat = median_of(res, vs, engine, w, M_LAT_N, &n) > 0;
	printf("%-21s %-8s %10.0f %6.1f %7.1f", workload_names[w], engine_names[engine],
	       s.ops_per_sec, s.spread, s.mb_per_sec);
	print_us(8, s.p50, lat);
	print_us(8, s.p99, lat);
	print_us(8, s.p999, lat);
	if (lat)
		printf(" %8.2f %7.0f %6.0f", s.max / 1e3, s.over_1ms, s.over_10ms);
	else
		printf(" %8s %7s %6s", "-", "-", "-");
	printf(" %6.0f %6.0f %6.0f %8.1f%s%s\n", s.anon_kb / 1024, s.file_kb / 1024,
	       s.rss_kb / 1024, s.disk_bytes / MIB, *notes ? "  " : "", notes);
}

/*
 * The table of ops/s ratios smolfs/peer, one line per workload, each with
 * its noise: the larger of the two engines' spreads over the runs.
 */
static void print_ratios(const struct config *cfg, struct results *res, int vs)
{
	printf("\nops/s ratio smolfs/peer, value size %zu B, %s\n(ratios of medians; > 1.00: "
	       "smolfs is faster; for compact, the inverse ratio of the times;\n noise: the "
	       "larger of the two engines' spreads over the runs)\n", cfg->value_sizes[vs],
	       values_label(cfg));
	printf("%-21s", "workload");
	for (int e = 0; e < cfg->nengines; e++) {
		char head[32];

		if (cfg->engines[e] == E_SMOLFS)
			continue;
		snprintf(head, sizeof(head), "smolfs/%s", engine_names[cfg->engines[e]]);
		printf(" %15s %6s", head, "noise");
	}
	printf("\n");
	for (int i = 0; i < cfg->nworkloads; i++) {
		int w = cfg->workloads[i], n;
		double smol = median_of(res, vs, E_SMOLFS, w, M_OPS, &n);
		double smol_spread = spread_of(res, vs, E_SMOLFS, w, M_OPS);

		printf("%-21s", workload_names[w]);
		for (int e = 0; e < cfg->nengines; e++) {
			int engine = cfg->engines[e], m;
			double peer, noise;

			if (engine == E_SMOLFS)
				continue;
			peer = median_of(res, vs, engine, w, M_OPS, &m);
			noise = spread_of(res, vs, engine, w, M_OPS);
			if (noise < smol_spread)
				noise = smol_spread;
			if (n && m && smol > 0 && peer > 0)
				printf(" %15.2f %5.0f%%", smol / peer, noise);
			else
				printf(" %15s %6s", "-", "");
		}
		printf("\n");
	}
}

/* 1 if the pause meter ran at real-time priority in every run of value size vs (and some ran). */
static int pause_meter_was_realtime(const struct config *cfg, struct results *res, int vs)
{
	int seen = 0;

	for (int e = 0; e < cfg->nengines; e++) {
		for (int i = 0; i < cfg->nworkloads; i++) {
			double v[res->nruns];
			int n = runs_of(res, vs, cfg->engines[e], cfg->workloads[i], M_PAUSE_RT, v);

			for (int k = 0; k < n; k++)
				if (v[k] == 0)
					return 0;
			seen += n;
		}
	}
	return seen > 0;
}

static void print_value_size(const struct config *cfg, struct results *res, int vs)
{
	size_t vsize = cfg->value_sizes[vs];

	printf("\nvalue size %zu B, %s: %" PRIu64 " entries, %.1f MB of keys and values%s\n",
	       vsize, values_label(cfg), cfg->num, cfg->num * (double)(KEY_SIZE + vsize) / MB,
	       cfg->repeat > 1 ? " (medians)" : "");
	printf("%-21s %-8s %10s %6s %7s  %-25s %8s %7s %6s %6s %6s %6s %8s\n", "", "", "",
	       "spread", "", "------- latency us ------", "max", "ops", "ops", "anon", "file",
	       "RSS", "disk");
	printf("%-21s %-8s %10s %6s %7s %8s %8s %8s %8s %7s %6s %6s %6s %6s %8s  %s\n",
	       "workload", "engine", "ops/s", "%", "MB/s", "p50", "p99", "p99.9", "ms",
	       ">1ms", ">10ms", "MiB", "MiB", "MiB", "MiB", "notes");
	for (int i = 0; i < cfg->nworkloads; i++)
		for (int e = 0; e < cfg->nengines; e++)
			print_row(res, vs, cfg->engines[e], cfg->workloads[i]);
	printf("(spread: (max - min) / median of ops/s over the runs; latency: of single\n"
	       " operations -- one write call, one get, one seek with its next() calls, %d next()\n"
	       " calls of readseq -- medians over the runs of each run's percentile; max: the\n"
	       " slowest operation of any run; >1ms, >10ms: operations slower than that, median\n"
	       " count; anon, file: peak RssAnon and RssFile during the workload (sampled every\n"
	       " 50 ms and at its end); RSS: the process's peak resident set up to the end of\n"
	       " the workload; disk: the database directory's files after the workload;\n"
	       " stalled, paced, delayed: smolfs's own count of the time writers waited in the\n"
	       " engine, of the writes it paced to a flush and of those it delayed for a\n"
	       " crowded level 0, medians over the runs;\n"
	       " settled: median wait for background work before the workload, shown from 1 s;\n"
	       " machine paused: wakeups of a thread of the process, sleeping 2 ms at a time,\n"
	       " that came over 10 ms late, median count over the runs, and the latest of any\n"
	       " run; %s)\n",
	       READSEQ_GROUP, pause_meter_was_realtime(cfg, res, vs) ?
	       "the thread ran at real-time priority, so these are pauses of the whole\n"
	       " machine (its host, interrupts), not of the engine" :
	       "the thread could not get real-time priority (not root), so waits\n"
	       " for a CPU behind the engine's own threads count too");

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

/* The figures of a table workload's line, for medians over the runs. */
enum tfield {
	TF_TABLE_ROWS, TF_LOAD, TF_LOAD_RATE, TF_COMPACT, TF_BYTES0, TF_BYTES1, TF_FILES0,
	TF_FILES1, TF_SECS, TF_ROWS, TF_ROW_RATE, TF_CELLS, TF_KV, TF_SST, TF_SCANS,
	TF_US_MEDIAN, TF_US_P99, TF_CPU_MEDIAN, TF_CPU_P99, TF_SST_MEDIAN, TF_SST_P99, TF_DISK,
	TF_RSS, TF_BUILD,
};

static double tfield(const struct trecord *r, enum tfield f)
{
	switch (f) {
	case TF_TABLE_ROWS: return r->table_rows;
	case TF_LOAD: return r->load_secs;
	case TF_LOAD_RATE: return r->load_secs > 0 ? r->table_rows / r->load_secs : 0;
	case TF_COMPACT: return r->compact_secs;
	case TF_BYTES0: return r->tree_bytes[0];
	case TF_BYTES1: return r->tree_bytes[1];
	case TF_FILES0: return r->tree_files[0];
	case TF_FILES1: return r->tree_files[1];
	case TF_SECS: return r->secs;
	case TF_ROWS: return r->rows;
	case TF_ROW_RATE: return r->secs > 0 ? r->rows / r->secs : 0;
	case TF_CELLS: return r->cells;
	case TF_KV: return r->kv_bytes;
	case TF_SST: return r->sst_bytes;
	case TF_SCANS: return r->scans;
	case TF_US_MEDIAN: return r->us_median;
	case TF_US_P99: return r->us_p99;
	case TF_CPU_MEDIAN: return r->cpu_median;
	case TF_CPU_P99: return r->cpu_p99;
	case TF_BUILD: return r->load_secs + r->compact_secs;
	case TF_SST_MEDIAN: return r->sst_median;
	case TF_SST_P99: return r->sst_p99;
	case TF_DISK: return r->disk_bytes;
	case TF_RSS: return r->rss_kb;
	}
	return 0;
}

/* The median over the runs of field f of line `line` of table workload w; *n runs had it. */
static double tmedian(struct results *res, int w, int line, enum tfield f, int *n)
{
	double v[res->nruns];

	*n = 0;
	for (int run = 0; run < res->nruns; run++) {
		struct table_result *tr = table_result_at(res, run, w);

		if (tr->have[line])
			v[(*n)++] = tfield(&tr->rec[line], f);
	}
	return *n ? median(v, *n) : 0;
}

static double tmed(struct results *res, int w, int line, enum tfield f)
{
	int n;

	return tmedian(res, w, line, f, &n);
}

/* A line's record from the first run that has it, for what does not vary (names); or NULL. */
static const struct trecord *tfirst(struct results *res, int w, int line)
{
	for (int run = 0; run < res->nruns; run++) {
		struct table_result *tr = table_result_at(res, run, w);

		if (tr->have[line])
			return &tr->rec[line];
	}
	return NULL;
}

/* a / b, or 0 when b is 0 (printed as "-" by the callers). */
static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* " " and r in a column of width characters ("-" for 0), then end. */
static void print_ratio(int width, double r, const char *end)
{
	char cell[32];

	snprintf(cell, sizeof(cell), "%.2f", r);
	printf(" %*s%s", width, r > 0 ? cell : "-", end);
}

static void print_lg_scan(struct results *res)
{
	const int w = W_LG_SCAN;
	const struct trecord *load = tfirst(res, w, LG_LOAD);
	double bytes0, bytes1;

	printf("\nlg-scan: ");
	if (!load) {
		printf("-\n");
		return;
	}
	printf("%.0f rows; family meta (a string and two i64 cells a row) in locality group\n"
	       "  \"default\", family blob (one %d-byte bytes cell a row) in locality group "
	       "\"" LG_GROUP "\"\n", tmed(res, w, LG_LOAD, TF_TABLE_ROWS), LG_BLOB_SIZE);
	printf("  load %.1f s (%.0f rows/s, one tbl_mutate_row a row, no sync); "
	       "flush and full compaction %.1f s\n", tmed(res, w, LG_LOAD, TF_LOAD),
	       tmed(res, w, LG_LOAD, TF_LOAD_RATE), tmed(res, w, LG_LOAD, TF_COMPACT));
	bytes0 = tmed(res, w, LG_LOAD, TF_BYTES0);
	bytes1 = tmed(res, w, LG_LOAD, TF_BYTES1);
	printf("  %-24s %-9s %9s %10s\n", "locality group", "kv tree", "SST files", "SST MiB");
	printf("  %-24s %-9s %9.0f %10.1f\n", "default (family meta)", "default",
	       tmed(res, w, LG_LOAD, TF_FILES0), bytes0 / MIB);
	printf("  %-24s %-9s %9.0f %10.1f\n", LG_GROUP " (family blob)", load->group_tree,
	       tmed(res, w, LG_LOAD, TF_FILES1), bytes1 / MIB);
	printf("  %-15s %10s %8s %9s %9s %9s %13s %10s %10s\n", "scan of", "rows/s", "secs",
	       "rows", "cells", "kv MiB", "SST MiB read", "/ default", "/ all");
	for (int line = LG_SCAN_META; line <= LG_SCAN_ALL; line++) {
		double sst = tmed(res, w, line, TF_SST);

		if (!tfirst(res, w, line)) {
			printf("  %-15s %10s\n", line == LG_SCAN_META ? "meta" : "meta, blob", "-");
			continue;
		}
		printf("  %-15s %10.0f %8.2f %9.0f %9.0f %9.1f %13.1f",
		       line == LG_SCAN_META ? "meta" : "meta, blob", tmed(res, w, line, TF_ROW_RATE),
		       tmed(res, w, line, TF_SECS), tmed(res, w, line, TF_ROWS),
		       tmed(res, w, line, TF_CELLS), tmed(res, w, line, TF_KV) / MIB, sst / MIB);
		print_ratio(10, ratio(sst, bytes0), "");
		print_ratio(10, ratio(sst, bytes0 + bytes1), "\n");
	}
	printf("  (each scan on a freshly opened database: an empty block cache, though the files\n"
	       "   may be in the OS page cache; kv MiB: key and value bytes the scan went through\n"
	       "   in the engine, uncompressed; SST MiB read: block bytes read from SSTable files\n"
	       "   during the scan, all trees together; / default, / all: that divided by the\n"
	       "   SSTable bytes of the default tree, of both trees.  Opening the database reads\n"
	       "   the schema from the default tree's first SSTable, whose index and bloom filter\n"
	       "   are then not read again by the scan, so / default stays below 1.00)\n");
}

/* Field f of prefix-scan's large table divided by the small table's. */
static double px_ratio(struct results *res, enum tfield f)
{
	return ratio(tmed(res, W_PREFIX_SCAN, PX_LARGE, f), tmed(res, W_PREFIX_SCAN, PX_SMALL, f));
}

static void print_prefix_scan(const struct config *cfg, struct results *res)
{
	const int w = W_PREFIX_SCAN;

	printf("\nprefix-scan: %" PRIu64 " scans of %d rows per table, each at a random aircraft's "
	       "prefix\n  \"flight#TF-XXX#2024-01-\" (rows of 3 small cells in one family); tables "
	       "fully compacted;\n  block cache off, so every block a scan needs is read from its "
	       "SSTable file\n", cfg->scans, PX_ROWS);
	printf("  %-34s %-21s %-21s %s\n", "", "wall us per scan", "CPU us per scan",
	       "SST bytes per scan");
	printf("  %10s %6s %8s %7s %10s %10s %10s %10s %10s %10s\n", "table rows", "files",
	       "SST MiB", "build s", "median", "p99", "median", "p99", "median", "p99");
	for (int line = PX_SMALL; line <= PX_LARGE; line++) {
		if (!tfirst(res, w, line))
			continue;
		printf("  %10.0f %6.0f %8.1f %7.1f %10.1f %10.1f %10.1f %10.1f %10.0f %10.0f\n",
		       tmed(res, w, line, TF_TABLE_ROWS), tmed(res, w, line, TF_FILES0),
		       tmed(res, w, line, TF_BYTES0) / MIB, tmed(res, w, line, TF_BUILD),
		       tmed(res, w, line, TF_US_MEDIAN), tmed(res, w, line, TF_US_P99),
		       tmed(res, w, line, TF_CPU_MEDIAN), tmed(res, w, line, TF_CPU_P99),
		       tmed(res, w, line, TF_SST_MEDIAN), tmed(res, w, line, TF_SST_P99));
	}
	if (!tfirst(res, w, PX_SMALL) || !tfirst(res, w, PX_LARGE)) {
		if (!tfirst(res, w, PX_LARGE))
			printf("  -\n");
		return;
	}
	printf("  %-34s", "ratio, large table / small table");
	print_ratio(10, px_ratio(res, TF_US_MEDIAN), "");
	print_ratio(10, px_ratio(res, TF_US_P99), "");
	print_ratio(10, px_ratio(res, TF_CPU_MEDIAN), "");
	print_ratio(10, px_ratio(res, TF_CPU_P99), "");
	print_ratio(10, px_ratio(res, TF_SST_MEDIAN), "");
	print_ratio(10, px_ratio(res, TF_SST_P99), "\n");
	printf("  (build s: load, flush and compaction; wall us: elapsed microseconds per scan,\n"
	       "   which on a busy machine include waits for a CPU; CPU us: the scanning thread's\n"
	       "   CPU time; SST bytes: block bytes read from SSTable files during the scan;\n"
	       "   a ratio near 1.00: a prefix scan costs the same whatever the table's size)\n");
}

static void print_table_workloads(const struct config *cfg, struct results *res)
{
	printf("\ntable workloads on smolfs alone (LevelDB and RocksDB have no table layer, "
	       "so no ratios)%s\n", cfg->repeat > 1 ? "; medians" : "");
	for (int i = 0; i < cfg->ntable_workloads; i++) {
		if (cfg->table_workloads[i] == W_LG_SCAN)
			print_lg_scan(res);
		else
			print_prefix_scan(cfg, res);
	}
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
	for (int run = 0; run < res->nruns; run++)
		for (int i = 0; i < cfg->ntable_workloads; i++) {
			int w = cfg->table_workloads[i];
			struct table_result *tr = table_result_at(res, run, w);

			if (tr->outcome == RUN_OK || tr->outcome == RUN_NONE)
				continue;
			printf("  smolfs, %s, run %d: %s during %s\n", workload_names[w], run + 1,
			       what[tr->outcome], tline_name(w, tr->last_line));
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
	fprintf(f, "\"disk_bytes\": %.0f, \"peak_rss_kb\": %.0f, ", s.disk_bytes, s.rss_kb);
	fprintf(f, "\"peak_rss_anon_kb\": %.0f, \"peak_rss_file_kb\": %.0f, ", s.anon_kb,
		s.file_kb);
	fprintf(f, "\"ops_per_sec_spread_pct\": %.1f, \"settle_secs\": %.3f, "
		"\"settle_timeouts\": %d", s.spread, s.settle_secs, s.settle_timeouts);
	if (median_of(res, vs, engine, w, M_LAT_N, &n) > 0)
		fprintf(f, ", \"latency_us\": {\"p50\": %.2f, \"p99\": %.2f, \"p99.9\": %.2f, "
			"\"max\": %.2f, \"over_1ms\": %.0f, \"over_10ms\": %.0f}", s.p50, s.p99,
			s.p999, s.max, s.over_1ms, s.over_10ms);
	if ((is_fill(w) || w == W_OVERWRITE) && engine == E_SMOLFS)
		fprintf(f, ", \"paced_writes\": %.0f, \"delayed_writes\": %.0f, \"stall_micros\": %.0f",
			s.paced, s.delayed, s.stall_us);
	{
		double rt[res->nruns];
		int nrt = runs_of(res, vs, engine, w, M_PAUSE_RT, rt), all_rt = nrt > 0;

		for (int k = 0; k < nrt; k++)
			all_rt &= rt[k] > 0;
		fprintf(f, ", \"machine_pauses_over_10ms\": %g, \"machine_pause_max_ms\": %.3f, "
			"\"machine_pause_meter_realtime\": %s", s.pauses, s.pause_max_ns / 1e6,
			all_rt ? "true" : "false");
	}
	n = 0;
	if (s.compact_secs > 0 || w == W_COMPACT)
		fprintf(f, ", \"compact_secs\": %.3f",
			w == W_COMPACT ? s.ops / s.ops_per_sec : s.compact_secs);
	fprintf(f, ", \"ops_per_sec_each_run\": [");
	for (int run = 0; run < res->nruns; run++) {
		struct child_result *cr = result_at(res, run, vs, engine);

		if (cr->have[w])
			fprintf(f, "%s%.1f", n++ ? ", " : "", metric(&cr->rec[w], M_OPS));
	}
	fprintf(f, "]}");
}

/* One pair "name": median of field f; for json_table_result. */
static void json_tfield(FILE *f, struct results *res, int w, int line, const char *name,
			enum tfield tf)
{
	fprintf(f, ", \"%s\": %.*f", name,
		tf == TF_LOAD || tf == TF_COMPACT || tf == TF_SECS || tf == TF_US_MEDIAN ||
		tf == TF_US_P99 || tf == TF_CPU_MEDIAN || tf == TF_CPU_P99 ? 3 : 0,
		tmed(res, w, line, tf));
}

/* One element of the JSON "table_results" array: the medians of one line. */
static void json_table_result(FILE *f, struct results *res, int w, int line, int *first)
{
	const struct trecord *r;
	int n;

	if ((w == W_LG_SCAN && line >= LG_NLINES) || (w == W_PREFIX_SCAN && line >= PX_NLINES))
		return;
	r = tfirst(res, w, line);
	if (!r)
		return;
	fprintf(f, "%s\n    {\"workload\": ", *first ? "" : ",");
	*first = 0;
	json_string(f, workload_names[w]);
	fprintf(f, ", \"line\": ");
	json_string(f, tline_name(w, line));
	tmedian(res, w, line, TF_TABLE_ROWS, &n);
	fprintf(f, ", \"runs\": %d", n);
	json_tfield(f, res, w, line, "table_rows", TF_TABLE_ROWS);
	json_tfield(f, res, w, line, "sst_bytes_default_tree", TF_BYTES0);
	json_tfield(f, res, w, line, "sst_files_default_tree", TF_FILES0);
	if (w == W_LG_SCAN) {
		fprintf(f, ", \"group_tree\": ");
		json_string(f, r->group_tree);
		json_tfield(f, res, w, line, "sst_bytes_group_tree", TF_BYTES1);
		json_tfield(f, res, w, line, "sst_files_group_tree", TF_FILES1);
	}
	if (w == W_PREFIX_SCAN || line == LG_LOAD) {
		json_tfield(f, res, w, line, "load_secs", TF_LOAD);
		json_tfield(f, res, w, line, "compact_secs", TF_COMPACT);
	}
	if (w == W_PREFIX_SCAN || line != LG_LOAD) {
		json_tfield(f, res, w, line, "scan_secs", TF_SECS);
		json_tfield(f, res, w, line, "rows_read", TF_ROWS);
		json_tfield(f, res, w, line, "cells_read", TF_CELLS);
		json_tfield(f, res, w, line, "sst_bytes_read", TF_SST);
	}
	if (w == W_LG_SCAN && line != LG_LOAD) {
		json_tfield(f, res, w, line, "rows_per_sec", TF_ROW_RATE);
		json_tfield(f, res, w, line, "kv_bytes_read", TF_KV);
	}
	if (w == W_PREFIX_SCAN) {
		json_tfield(f, res, w, line, "scans", TF_SCANS);
		json_tfield(f, res, w, line, "micros_per_scan_median", TF_US_MEDIAN);
		json_tfield(f, res, w, line, "micros_per_scan_p99", TF_US_P99);
		json_tfield(f, res, w, line, "cpu_micros_per_scan_median", TF_CPU_MEDIAN);
		json_tfield(f, res, w, line, "cpu_micros_per_scan_p99", TF_CPU_P99);
		json_tfield(f, res, w, line, "sst_bytes_per_scan_median", TF_SST_MEDIAN);
		json_tfield(f, res, w, line, "sst_bytes_per_scan_p99", TF_SST_P99);
	}
	json_tfield(f, res, w, line, "disk_bytes", TF_DISK);
	json_tfield(f, res, w, line, "peak_rss_kb", TF_RSS);
	fprintf(f, "}");
}

/*
 * The JSON file: the settings, then one object per (value size, engine,
 * workload) with the medians and every run's ops/s, then each child's peak
 * RSS, then one object per line of each table workload.  Written by hand: the format is small and fixed, and smolfs depends on
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
	fprintf(f, "\"seek_reads\": %d, \"scans\": %" PRIu64 ", \"seed\": %" PRIu64 ",\n",
		cfg->seek_reads, cfg->scans, cfg->seed);
	fprintf(f, "    \"values\": \"%s\", \"settle_timeout\": %.0f, ",
		cfg->random_values ? "random" : "compressible", cfg->settle_timeout);
	fprintf(f, "\"write_buffer_size\": %u, \"block_cache_size\": %zu, ",
		WRITE_BUFFER_SIZE, block_cache_bytes);
	fprintf(f, "\"bloom_bits_per_key\": %d, \"block_size\": %d, \"max_open_files\": %d,\n",
		BLOOM_BITS, BLOCK_SIZE, MAX_OPEN_FILES);
	fprintf(f, "    \"compression\": {");
	for (int e = 0; e < cfg->nengines; e++) {
		int engine = cfg->engines[e];
		const char *c = engine == E_LEVELDB ? "snappy" : "zstd level 1 bottommost, level -1 above";

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
	fprintf(f, "\n  ],\n  \"table_results\": [");
	first = 1;
	for (int i = 0; i < cfg->ntable_workloads; i++)
		for (int line = 0; line < MAX_TLINES; line++)
			json_table_result(f, res, cfg->table_workloads[i], line, &first);
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
		" and measure them;\n"
		"and, on smolfs alone, workloads of its table layer, which the peers lack (so\n"
		"there are no ratios for those).\n"
		"\n"
		"  --benchmarks LIST   workloads to run, in order (default: the kv workloads,\n"
		"                      in this order): fillseq,fillrandom,overwrite,readrandom,\n"
		"                      readseq,seekrandom,compact,readrandom-compacted,\n"
		"                      seekrandom-compacted,readseq-compacted; and the table\n"
		"                      workloads, smolfs only, run when named: lg-scan (a scan\n"
		"                      of one locality group), prefix-scan (100-row prefix scans\n"
		"                      in a 10000-row and a --num-row table)\n"
		"  --engines LIST      engines to run (default: all built in):"
		" smolfs"
#ifdef HAVE_PEERS
		",leveldb,rocksdb"
#endif
		"\n"
		"  --num N             entries written by the fills; keys are 0..N-1; rows of the\n"
		"                      table workloads (default %d)\n"
		"  --reads N           operations of each read workload (default: --num)\n"
		"  --value-size N      value bytes (default %d)\n"
		"  --value-sizes LIST  run each of these value sizes, e.g. 100,1024\n"
		"  --batch N           entries per write (default 1)\n"
		"  --sync              fsync the log on every write (default: no sync)\n"
		"  --seek-reads N      entries read after each seek in seekrandom (default %d)\n"
		"  --scans N           prefix scans per table size in prefix-scan (default %d)\n"
		"  --runs N            run everything N times, interleaved, and report medians\n"
		"                      and spreads (default %d); --repeat N is the same\n"
		"  --values KIND       compressible (default: like db_bench's, about 50%%) or\n"
		"                      random (incompressible)\n"
		"  --cache-mib N       block cache of every engine, MiB (default %d)\n"
		"  --settle-timeout S  wait at most S seconds for an engine's background work\n"
		"                      before a workload (default %d)\n"
		"  --db DIR            make the databases under DIR (default: a new directory in\n"
		"                      $TMPDIR or /tmp, removed at the end)\n"
		"  --keep-db           leave the databases under --db DIR, one per engine, value\n"
		"                      size and run; a later run whose first workload is not a\n"
		"                      fill reads the database it finds there\n"
		"  --json FILE         also write the results to FILE as JSON\n"
		"  --seed N            seed for keys, orders and values (default 301)\n"
		"  --pread-tables      smolfs reads tables with pread(2), not through a map\n"
		"  --quiet             no progress lines on stderr\n"
		"  --help              show this help and exit\n"
		"\n"
		"See smolbench(1).\n", DEFAULT_NUM, DEFAULT_VALUE, DEFAULT_SEEK_READ, DEFAULT_SCANS,
		DEFAULT_RUNS, DEFAULT_CACHE_MIB, DEFAULT_SETTLE);
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
		OPT_VALUE_SIZES, OPT_BATCH, OPT_SYNC, OPT_SEEK_READS, OPT_SCANS, OPT_REPEAT, OPT_DB,
		OPT_JSON, OPT_SEED,
		OPT_QUIET, OPT_HELP, OPT_PREAD_TABLES, OPT_KEEP_DB, OPT_VALUES, OPT_CACHE_MIB, OPT_SETTLE,
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
		{ "scans", required_argument, NULL, OPT_SCANS },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "runs", required_argument, NULL, OPT_REPEAT },
		{ "values", required_argument, NULL, OPT_VALUES },
		{ "cache-mib", required_argument, NULL, OPT_CACHE_MIB },
		{ "settle-timeout", required_argument, NULL, OPT_SETTLE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "pread-tables", no_argument, NULL, OPT_PREAD_TABLES },
		{ "keep-db", no_argument, NULL, OPT_KEEP_DB },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int reads_set = 0, engines_set = 0, opt, listed[NWORKLOADS], nlisted = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->num = DEFAULT_NUM;
	cfg->value_sizes[0] = DEFAULT_VALUE;
	cfg->nvalue_sizes = 1;
	cfg->batch = 1;
	cfg->repeat = DEFAULT_RUNS;
	cfg->settle_timeout = DEFAULT_SETTLE;
	cfg->seek_reads = DEFAULT_SEEK_READ;
	cfg->scans = DEFAULT_SCANS;
	cfg->seed = 301;
	for (int w = 0; w < NWORKLOADS; w++)
		if (!is_table_workload(w))
			listed[nlisted++] = w;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_BENCHMARKS:
			nlisted = parse_list("--benchmarks", optarg, workload_names, NWORKLOADS,
					     listed);
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
		case OPT_SCANS:
			cfg->scans = parse_u64("--scans", optarg, 1, 100000000);
			break;
		case OPT_REPEAT:
			cfg->repeat = parse_u64("--runs", optarg, 1, 1000);
			break;
		case OPT_VALUES:
			if (!strcmp(optarg, "random"))
				cfg->random_values = 1;
			else if (!strcmp(optarg, "compressible"))
				cfg->random_values = 0;
			else
				die("--values: '%s' is neither compressible nor random", optarg);
			break;
		case OPT_CACHE_MIB:
			block_cache_bytes = (size_t)parse_u64("--cache-mib", optarg, 0, 1u << 20) << 20;
			break;
		case OPT_SETTLE:
			cfg->settle_timeout = parse_u64("--settle-timeout", optarg, 0, 86400);
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
		case OPT_PREAD_TABLES:
			pread_tables = 1;
			break;
		case OPT_KEEP_DB:
			cfg->keep_db = 1;
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
	if (cfg->keep_db && !cfg->db_base)
		die("--keep-db: name the directory to keep them in with --db DIR");
	/* The kv workloads run in every engine's child; each table workload in its own. */
	for (int i = 0; i < nlisted; i++) {
		if (is_table_workload(listed[i]))
			cfg->table_workloads[cfg->ntable_workloads++] = listed[i];
		else
			cfg->workloads[cfg->nworkloads++] = listed[i];
	}
	if (!engines_set) {
		cfg->engines[cfg->nengines++] = E_SMOLFS;
#ifdef HAVE_PEERS
		cfg->engines[cfg->nengines++] = E_LEVELDB;
		cfg->engines[cfg->nengines++] = E_ROCKSDB;
#endif
	}
	if (cfg->ntable_workloads && !engine_selected(cfg, E_SMOLFS))
		die("--benchmarks: %s runs on smolfs alone, which --engines leaves out",
		    workload_names[cfg->table_workloads[0]]);
	for (int i = 0; i < cfg->ntable_workloads; i++)
		if (cfg->table_workloads[i] == W_PREFIX_SCAN && cfg->num < PX_ROWS)
			die("--num: prefix-scan needs at least %d rows", PX_ROWS);
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
	res.t = calloc((size_t)res.nruns * NTABLE_WORKLOADS, sizeof(*res.t));
	if (!res.r || !res.t)
		die("out of memory");

	/*
	 * Repetitions are the outer loop, so that a disturbance on the machine
	 * (another job, a page cache flush) tends to hit one run of every engine
	 * rather than every run of one.
	 */
	for (int run = 0; run < cfg.repeat; run++) {
		for (int vs = 0; vs < cfg.nvalue_sizes && cfg.nworkloads; vs++)
			for (int e = 0; e < cfg.nengines; e++)
				run_child(&cfg, &res, run, vs, cfg.engines[e]);
		for (int i = 0; i < cfg.ntable_workloads; i++)
			run_table_child(&cfg, &res, run, cfg.table_workloads[i]);
	}

	for (int vs = 0; vs < cfg.nvalue_sizes && cfg.nworkloads; vs++)
		print_value_size(&cfg, &res, vs);
	if (res.rocksdb_snappy)
		printf("\nnote: this RocksDB has no zstd; it used snappy.\n");
	if (cfg.ntable_workloads)
		print_table_workloads(&cfg, &res);
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
	free(res.t);
	return res.failures ? 1 : 0;
}
