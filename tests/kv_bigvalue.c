/*
 * kv_bigvalue.c -- values of 1 MiB, 10 MiB and KV_MAX_VALUE_SIZE (100 MiB + 64 bytes).
 *
 * Each must come back byte for byte from the memtable, from a flushed table,
 * after compaction, after reopening (from the log and from tables) and
 * through an iterator; one byte more than the limit is refused with -E2BIG
 * and leaves no trace, as does a key one byte over KV_MAX_KEY_SIZE.
 *
 * Values are never kept twice by the test: a value is a pure function of
 * its seed and is checked by regenerating it piece by piece.
 */
#include "kv.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

/*
 * Byte i of the value with this seed.  Runs of repeated and of random bytes,
 * so that compression has something to do and cannot hide a misplaced chunk.
 */
static void fill_chunk(char *p, uint64_t seed, uint64_t off, size_t n)
{
	uint64_t block = UINT64_MAX, st = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t pos = off + i;

		if (pos >> 12 != block) {
			block = pos >> 12;
			st = hash64(&block, sizeof(block), seed);
		}
		if (block % 3 == 0) {
			p[i] = (char)(st ^ (pos >> 8));     /* slowly changing: compressible */
		} else {
			uint64_t x = st ^ ((pos >> 3) * 0x9e3779b97f4a7c15ull);
			x ^= x >> 31;
			p[i] = (char)(x >> (8 * (pos & 7)));
		}
	}
}

static char *make_value(uint64_t seed, size_t n)
{
	char *v = xmalloc(n ? n : 1);

	for (size_t off = 0; off < n; off += 65536)
		fill_chunk(v + off, seed, off, n - off < 65536 ? n - off : 65536);
	return v;
}

/* Does p[0..n) equal the value with this seed and length want? Reports the first difference. */
static int value_matches(const char *p, size_t n, uint64_t seed, size_t want)
{
	char chunk[65536];

	if (n != want) {
		diag("length %zu, want %zu", n, want);
		return 0;
	}
	for (size_t off = 0; off < n; off += sizeof(chunk)) {
		size_t len = n - off < sizeof(chunk) ? n - off : sizeof(chunk);

		fill_chunk(chunk, seed, off, len);
		if (memcmp(p + off, chunk, len)) {
			for (size_t i = 0; i < len; i++) {
				if (p[off + i] != chunk[i]) {
					diag("first difference at byte %zu", off + i);
					break;
				}
			}
			return 0;
		}
	}
	return 1;
}

struct big {
	const char *key;
	size_t size;
	uint64_t seed;
};

static struct big bigs[] = {
	{ "big-01M", 1u << 20, 101 },
	{ "big-10M", 10u << 20, 102 },
	{ "big-max", KV_MAX_VALUE_SIZE, 103 },
};
#define NBIG (sizeof(bigs) / sizeof(bigs[0]))

static void check_all(struct kv_db *db, const char *when)
{
	for (size_t i = 0; i < NBIG; i++) {
		char *v = NULL;
		size_t vl = 0;
		int r = kv_get(db, NULL, bigs[i].key, strlen(bigs[i].key), &v, &vl);

		if (r != 0) {
			is_int(r, 0, "%s: kv_get(%s)", when, bigs[i].key);
			diag("%s", kv_strerror(r));
			continue;
		}
		ok(value_matches(v, vl, bigs[i].seed, bigs[i].size),
		   "%s: %s comes back byte for byte (%zu bytes)",
		   when, bigs[i].key, bigs[i].size);
		free(v);
	}
	{
		char *v = NULL;
		size_t vl = 0;
		int r = kv_get(db, NULL, "small", 5, &v, &vl);
		ok(r == 0 && vl == 5 && memcmp(v, "tiny!", 5) == 0,
		   "%s: a small value next to them is intact",
		   when);
		free(v);
	}
}

static void check_iter(struct kv_db *db, const char *when)
{
	struct kv_read_options ro = { 0 };
	struct kv_iter *it = kv_iter_new(db, &ro);
	size_t i = 0;
	int good = 1;

	for (kv_iter_seek_first(it); kv_iter_valid(it) && i < NBIG; kv_iter_next(it), i++) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl);
		const char *v = kv_iter_value(it, &vl);

		if (kl != strlen(bigs[i].key) || memcmp(k, bigs[i].key, kl) ||
		    !value_matches(v, vl, bigs[i].seed, bigs[i].size)) {
			diag("iterator entry %zu is wrong", i);
			good = 0;
		}
	}
	ok(good && i == NBIG, "%s: an iterator yields the big values in key order, intact", when);
	ok(kv_iter_valid(it) && kv_iter_value(it, &i) && i == 5, "%s: and then the small one",
	   when);
	kv_iter_seek_last(it);
	kv_iter_prev(it);
	{
		size_t kl, vl;
		const char *k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		const char *v = k ? kv_iter_value(it, &vl) : NULL;
		ok(k && kl == 7 && !memcmp(k, "big-max", 7) && value_matches(v, vl, bigs[2].seed,
									     bigs[2].size),
		   "%s: backward iteration reaches the largest value intact", when);
	}
	is_int(kv_iter_status(it), 0, "%s: iterator status 0", when);
	kv_iter_free(it);
}

int main(void)
{
	struct kv_options o;
	struct kv_db *db;
	char *dir;
	int r;
	uint64_t t0 = now_micros();

	plan(56);
	make_tmpdir("kv_bigvalue");
	dir = xasprintf("%s/db", tmpdir);
	kv_options_init(&o);
	o.write_buffer_size = 16u << 20;   /* smaller than the largest value */
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "open")) {
		diag("%s", kv_strerror(r));
		goto out;
	}
	for (size_t i = 0; i < NBIG; i++) {
		char *v = make_value(bigs[i].seed, bigs[i].size);
		r = kv_put(db, bigs[i].key, strlen(bigs[i].key), v, bigs[i].size, 0);
		is_int(r, 0, "put a %zu-byte value", bigs[i].size);
		free(v);
	}
	kv_put(db, "small", 5, "tiny!", 5, 0);
	check_all(db, "after put");
	check_iter(db, "after put");
	diag("puts and reads: %.1f s", (now_micros() - t0) / 1e6);

	/* the limits */
	{
		struct kv_stats before, after;
		char *v = xcalloc(1, (size_t)KV_MAX_VALUE_SIZE + 1);
		char *k = xcalloc(1, KV_MAX_KEY_SIZE + 1);
		struct kv_batch *b = kv_batch_new();
		char *got = NULL;
		size_t gl;

		kv_get_stats(db, &before);
		r = kv_put(db, "too-big", 7, v, (size_t)KV_MAX_VALUE_SIZE + 1, 0);
		is_int(r, -E2BIG, "a value of KV_MAX_VALUE_SIZE + 1 bytes gives -E2BIG");
		is_int(kv_get(db, NULL, "too-big", 7, &got, &gl), -ENOENT,
		       "and nothing is stored under its key");
		free(got);
		memset(k, 'k', KV_MAX_KEY_SIZE + 1);
		is_int(kv_put(db, k, KV_MAX_KEY_SIZE + 1, "v", 1, 0), -E2BIG,
		       "a key of KV_MAX_KEY_SIZE + 1 bytes gives -E2BIG");
		is_int(kv_delete(db, k, KV_MAX_KEY_SIZE + 1, 0), -E2BIG,
		       "deleting an oversized key gives -E2BIG");
		is_int(kv_batch_put(b, "too-big", 7, v, (size_t)KV_MAX_VALUE_SIZE + 1), -E2BIG,
		       "kv_batch_put of an oversized value gives -E2BIG");
		kv_get_stats(db, &after);
		is_int(after.bytes_written_wal, before.bytes_written_wal,
		       "refused writes write nothing to the log");
		kv_batch_free(b);
		free(k);
		free(v);
	}

	is_int(kv_flush(db), 0, "flush");
	check_all(db, "after flush");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "compact everything");
	check_all(db, "after compaction");
	check_iter(db, "after compaction");
	is_int(kv_close(db), 0, "close");
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "reopen"))
		goto out;
	check_all(db, "after reopen");

	/* the log path: rewrite them without flushing, reopen, read from the log */
	for (size_t i = 0; i < NBIG; i++) {
		char *v;
		bigs[i].seed += 1000;
		v = make_value(bigs[i].seed, bigs[i].size);
		r = kv_put(db, bigs[i].key, strlen(bigs[i].key), v, bigs[i].size,
			   i == NBIG - 1 ? KV_SYNC : 0);
		is_int(r, 0, "overwrite the %zu-byte value with another", bigs[i].size);
		free(v);
	}
	check_all(db, "after overwrite");
	is_int(kv_close(db), 0, "close with the new values unflushed");
	r = kv_open(dir, &o, &db);
	if (!is_int(r, 0, "reopen and replay the log"))
		goto out;
	check_all(db, "after replaying the log");
	check_iter(db, "after replaying the log");

	/* space comes back */
	for (size_t i = 0; i < NBIG; i++)
		kv_delete(db, bigs[i].key, strlen(bigs[i].key), 0);
	kv_flush(db);
	kv_compact_range(db, NULL, 0, NULL, 0);
	{
		struct kv_stats st;
		kv_get_stats(db, &st);
		ok(st.disk_bytes < 8u << 20,
		   "after deleting them and compacting, the files shrink (%llu bytes)",
		   (unsigned long long)st.disk_bytes);
	}
	kv_close(db);
	diag("%.1f s", (now_micros() - t0) / 1e6);
out:
	free(dir);
	rm_rf(tmpdir);
	return exit_status();
}
