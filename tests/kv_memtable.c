/*
 * kv_memtable.c -- tests of the memtable (engine/memtable.c): versions and
 * snapshots, deletes, iteration in every direction against a sorted
 * reference, range tombstones, reference counts, and one writer racing two
 * lock-free readers.
 */
#include "bloom.h"
#include "memtable.h"
#include "tap.h"
#include "util.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mem_get with the hash its callers compute */
static int mget(struct memtable *m, struct slice k, uint64_t snap, int *type, uint64_t *seq,
		struct slice *v)
{
	return mem_get(m, k, bloom_hash(k), snap, type, seq, v);
}

static struct slice S(const char *s)
{
	return slice_str(s);
}

/* ---------------------------------------------------------------- basics */

static void test_empty(void)
{
	struct memtable *m = mem_new();
	struct iter *it = mem_iter_new(m);
	struct slice v;
	uint64_t seq;
	int type;
	struct buf t = BUF_INIT;

	ok(!mget(m, S("a"), SEQ_MAX, &type, &seq, &v), "an empty memtable finds nothing");
	iter_seek_first(it);
	ok(!iter_valid(it), "seek_first on an empty memtable is not valid");
	iter_seek_last(it);
	ok(!iter_valid(it), "seek_last on an empty memtable is not valid");
	ikey_append(&t, S(""), SEQ_MAX, KT_SEEK);
	iter_seek(it, buf_slice(&t));
	ok(!iter_valid(it), "seek on an empty memtable is not valid");
	is_int(iter_status(it), 0, "an empty memtable's iterator has status 0");
	is_int(mem_entries(m), 0, "an empty memtable counts no entries");
	is_int(mem_max_seq(m), 0, "an empty memtable's max_seq is 0");
	iter_destroy(it);
	mem_unref(m);
	buf_free(&t);
}

static void test_versions(void)
{
	struct memtable *m = mem_new();
	struct slice v;
	uint64_t seq;
	int type, bad = 0;

	/* Neighbours that share a prefix must not leak into the answers for "k". */
	mem_add(m, 1, KT_PUT, S("j"), S("j1"));
	mem_add(m, 2, KT_PUT, S("kk"), S("kk2"));
	mem_add(m, 3, KT_PUT, S("k"), S("v3"));
	mem_add(m, 7, KT_PUT, S("k"), S("v7"));
	mem_add(m, 10, KT_DELETE, S("k"), S(""));
	mem_add(m, 15, KT_PUT, S("k"), S("v15"));
	mem_add(m, 16, KT_PUT, S("k\xff"), S("kff"));

	for (uint64_t snap = 0; snap <= 20; snap++) {
		int found = mget(m, S("k"), snap, &type, &seq, &v);
		if (snap < 3) {
			bad += found != 0;
			continue;
		}
		uint64_t want = snap >= 15 ? 15 : snap >= 10 ? 10 : snap >= 7 ? 7 : 3;
		bad += found != 1 || seq != want;
		if (found && want == 10)
			bad += type != KT_DELETE || v.len != 0;
		else if (found)
			bad += type != KT_PUT || v.len != (want == 15 ? 3 : 2) ||
			       v.data[1] != (want == 15 ? '1' : (char)('0' + want));
	}
	is_int(bad, 0, "get at every snapshot 0..20 returns the newest version at or below it");
	ok(mget(m, S("k"), UINT64_MAX, &type, &seq, &v) && seq == 15,
	   "a snapshot above SEQ_MAX means the newest version");
	ok(!mget(m, S("ka"), SEQ_MAX, &type, &seq, &v),
	   "a key absent between present ones is not found");
	ok(!mget(m, S(""), SEQ_MAX, &type, &seq, &v), "the empty key is not found when absent");
	ok(!mget(m, S("kk"), 1, &type, &seq, &v), "a key newer than the snapshot is invisible");
	ok(mget(m, S("kk"), 2, &type, &seq, &v) && type == KT_PUT &&
	   slice_eq(v, S("kk2")), "a key is visible at its own sequence");
	is_int(mem_entries(m), 7, "entries counts every point version, deletes included");
	is_int(mem_range_dels(m), 0, "no range tombstones were added");
	is_int(mem_max_seq(m), 16, "max_seq is the largest sequence added");
	mem_unref(m);
}

static void test_big_value(void)
{
	struct memtable *m = mem_new();
	size_t n = 3u << 20, before;
	char *big = malloc(n);
	struct slice v;
	uint64_t seq;
	int type;

	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7 + 3);
	mem_add(m, 1, KT_PUT, S("small"), S("x"));
	before = mem_bytes(m);
	mem_add(m, 2, KT_PUT, S("big"), slice_make(big, n));
	mem_add(m, 3, KT_PUT, S("small2"), S("y"));
	ok(mem_bytes(m) >= before + n, "mem_bytes grows by at least a big value's size");
	ok(mem_bytes(m) < before + n + 64 * 1024, "a big value costs little more than its size");
	ok(mget(m, S("big"), 5, &type, &seq, &v) && v.len == n && memcmp(v.data, big, n) == 0,
	   "a 3 MiB value reads back intact");
	ok(mget(m, S("small2"), 5, &type, &seq, &v) && slice_eq(v, S("y")),
	   "small entries after a big one read back");
	free(big);
	mem_unref(m);
}

static void test_bytes_small(void)
{
	struct memtable *m = mem_new();
	size_t first = mem_bytes(m);
	int grew = 1;

	/* A small write buffer must see the memtable grow with its data, not jump by chunks. */
	for (int i = 0; i < 1000; i++) {
		char k[16];
		size_t before = mem_bytes(m);
		snprintf(k, sizeof(k), "key%04d", i);
		mem_add(m, (uint64_t)i + 1, KT_PUT, S(k), S("0123456789"));
		if (mem_bytes(m) < before + strlen(k) + 8 + 10)
			grew = 0;
	}
	ok(grew, "every insert raises mem_bytes by at least its key and value");
	ok(mem_bytes(m) < first + 1000 * (7 + 8 + 10 + 2 + 12 * 8) + 2 * 1024 * 1024,
	   "mem_bytes stays within the entries' size plus chunk slack");
	ok(first < 4096, "a fresh memtable reports only a few bytes");
	ok(mem_bytes(m) < first + 1000 * (7 + 8 + 10 + 2 + 12 * 8) + 64 * 1024,
	   "a memtable of 1000 small entries takes less than 64 KiB beyond them (key filter included)");
	mem_unref(m);
}

/* ---------------------------------------------------------------- key filter */

static void test_filter(void)
{
	struct memtable *m = mem_new();
	int missed = 0, wrong = 0;
	size_t passed = 0, first, after_ranges;
	struct slice v;
	uint64_t seq;
	int type;
	char k[32];

	first = mem_bytes(m);
	ok(!mem_may_contain(m, bloom_hash(S("a"))), "an empty memtable's filter passes no key");
	mem_add(m, 1, KT_RANGE_DEL, S("a"), S("z"));
	after_ranges = mem_bytes(m);
	ok(!mem_may_contain(m, bloom_hash(S("b"))),
	   "range tombstones alone put nothing in the filter of point keys");

	/* 100000 keys spread over the filter's first six segments, and a deletion */
	for (int i = 0; i < 100000; i++) {
		snprintf(k, sizeof(k), "user%08d", 2 * i);
		mem_add(m, (uint64_t)i + 2, i == 777 ? KT_DELETE : KT_PUT, S(k), S("v"));
	}
	for (int i = 0; i < 100000; i++) {
		snprintf(k, sizeof(k), "user%08d", 2 * i);
		if (!mem_may_contain(m, bloom_hash(S(k))))
			missed++;
		if (mget(m, S(k), SEQ_MAX, &type, &seq, &v) != 1 || seq != (uint64_t)i + 2 ||
		    type != (i == 777 ? KT_DELETE : KT_PUT))
			wrong++;
		snprintf(k, sizeof(k), "user%08d", 2 * i + 1);
		passed += (size_t)mem_may_contain(m, bloom_hash(S(k)));
	}
	ok(missed == 0, "the filter passes every key put or deleted (%d of 100000 refused)", missed);
	ok(wrong == 0, "every key is found with its sequence and type (%d wrong)", wrong);
	/* 16 bits per key, six probes in one 512-bit line: a few tenths of a percent per segment */
	ok(passed < 2000, "the filter refuses nearly every absent key: %zu of 100000 pass", passed);
	diag("absent keys passing the filter: %zu of 100000", passed);
	ok(mget(m, S("user00000001"), SEQ_MAX, &type, &seq, &v) == 0, "an absent key is not found");
	/*
	 * The segments for 100000 keys: 0.25 + 1 + 4 + 16 + 64 + 256 KiB.  A
	 * small memtable pays only the first ones (test_bytes_small).
	 */
	ok(after_ranges - first < 1024, "range tombstones alone make no filter (%zu bytes)",
	   after_ranges - first);
	ok(mem_bytes(m) < 100000 * 64 + (400u << 10) + (2u << 20),
	   "the filter of 100000 keys costs about 340 KiB (%zu bytes in all)", mem_bytes(m));
	mem_unref(m);

	/* a memtable of a write buffer under 1 MiB has none; one of 1 MiB has one */
	for (int big = 0; big <= 1; big++) {
		struct mem_pool *p = mem_pool_new(big ? 1u << 20 : 512u << 10);

		m = mem_new_pooled(p);
		mem_add(m, 1, KT_PUT, S("present"), S("v"));
		passed = 0;
		for (int i = 0; i < 100; i++) {
			snprintf(k, sizeof(k), "absent%d", i);
			passed += (size_t)mem_may_contain(m, bloom_hash(S(k)));
		}
		ok(mem_may_contain(m, bloom_hash(S("present"))) &&
		   mget(m, S("present"), SEQ_MAX, &type, &seq, &v) == 1 &&
		   mget(m, S("absent0"), SEQ_MAX, &type, &seq, &v) == 0 &&
		   passed == (big ? 0 : 100),
		   "a write buffer of %s: %s (%zu of 100 absent keys pass)", big ? "1 MiB" : "512 KiB",
		   big ? "a key filter" : "no key filter, gets search the skiplist", passed);
		mem_unref(m);
		mem_pool_free(p);
	}
}

/* ---------------------------------------------------------------- random reference */

struct ref {
	struct buf ikey;
	char valbuf[40];
	size_t vlen;
	struct slice value;   /* into valbuf, set once the array stops moving */
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	return ikey_cmp(buf_slice(&x->ikey), buf_slice(&y->ikey));
}

/* Index of the first reference entry >= target (n if none). */
static size_t lower_bound(struct ref *r, size_t n, struct slice target)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ikey_cmp(buf_slice(&r[mid].ikey), target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Short keys over a three-letter alphabet: many versions per key and many shared prefixes. */
static size_t random_ukey(uint64_t *rng, char *k)
{
	size_t len = rand_next(rng) % 7;

	for (size_t i = 0; i < len; i++)
		k[i] = (char)('a' + rand_next(rng) % 3);
	return len;
}

static int entry_is(struct iter *it, const struct ref *r)
{
	return iter_valid(it) && slice_eq(iter_key(it), buf_slice(&r->ikey)) &&
	       slice_eq(iter_value(it), r->value);
}

static void test_random_reference(void)
{
	enum { N = 50000, SEEKS = 3000, GETS = 5000 };
	struct memtable *m = mem_new();
	struct ref *ref = calloc(N, sizeof(*ref));
	uint64_t rng = 42;
	size_t i, bad;
	char k[8];

	for (i = 0; i < N; i++) {
		size_t klen = random_ukey(&rng, k);
		uint64_t seq = i + 1;
		int type = rand_next(&rng) % 5 == 0 ? KT_DELETE : KT_PUT;
		size_t vlen = type == KT_PUT ? rand_next(&rng) % sizeof(ref[i].valbuf) : 0;

		for (size_t j = 0; j < vlen; j++)
			ref[i].valbuf[j] = (char)rand_next(&rng);
		ikey_append(&ref[i].ikey, slice_make(k, klen), seq, type);
		ref[i].vlen = vlen;
		mem_add(m, seq, type, slice_make(k, klen), slice_make(ref[i].valbuf, vlen));
	}
	qsort(ref, N, sizeof(*ref), ref_cmp);
	for (i = 0; i < N; i++)
		ref[i].value = slice_make(ref[i].valbuf, ref[i].vlen);

	struct iter *it = mem_iter_new(m);

	bad = 0;
	for (i = 0; i < N; i++) {
		struct slice ik = buf_slice(&ref[i].ikey), v;
		uint64_t seq;
		int type;

		if (!mget(m, ikey_user(ik), ikey_seq(ik), &type, &seq, &v) ||
		    seq != ikey_seq(ik) || type != ikey_type(ik) || !slice_eq(v, ref[i].value))
			bad++;
	}
	is_int(bad, 0, "get at each version's own sequence returns that version and its value");

	size_t n = 0;
	bad = 0;
	for (iter_seek_first(it); iter_valid(it); iter_next(it), n++)
		bad += n >= N || !entry_is(it, &ref[n]);
	is_int(n, N, "a forward walk visits all 50000 entries");
	is_int(bad, 0, "a forward walk matches the sorted reference entry by entry");

	n = 0;
	bad = 0;
	for (iter_seek_last(it); iter_valid(it); iter_prev(it), n++)
		bad += n >= N || !entry_is(it, &ref[N - 1 - n]);
	is_int(n, N, "a backward walk from seek_last visits all 50000 entries");
	is_int(bad, 0, "a backward walk matches the reference in reverse");

	/* Seeks to random internal keys, then one step each way. */
	size_t bad_seek = 0, bad_next = 0, bad_prev = 0;
	struct buf t = BUF_INIT;
	for (int s = 0; s < SEEKS; s++) {
		size_t klen = random_ukey(&rng, k);
		buf_clear(&t);
		ikey_append(&t, slice_make(k, klen), rand_next(&rng) % (N + 2),
			    (int)(rand_next(&rng) % 3));
		size_t want = lower_bound(ref, N, buf_slice(&t));

		iter_seek(it, buf_slice(&t));
		if (want == N ? iter_valid(it) : !entry_is(it, &ref[want])) {
			bad_seek++;
			continue;
		}
		if (want == N)
			continue;
		iter_next(it);
		if (want + 1 == N ? iter_valid(it) : !entry_is(it, &ref[want + 1]))
			bad_next++;
		iter_seek(it, buf_slice(&t));
		iter_prev(it);
		if (want == 0 ? iter_valid(it) : !entry_is(it, &ref[want - 1]))
			bad_prev++;
	}
	is_int(bad_seek, 0, "seek lands on the first reference entry >= the target");
	is_int(bad_next, 0, "next after a seek gives the following reference entry");
	is_int(bad_prev, 0, "prev after a seek gives the preceding reference entry");

	buf_clear(&t);
	ikey_append(&t, S("d"), SEQ_MAX, KT_SEEK);
	iter_seek(it, buf_slice(&t));
	ok(!iter_valid(it), "seek past the last key is not valid");
	buf_clear(&t);
	ikey_append(&t, S(""), SEQ_MAX, KT_SEEK);
	iter_seek(it, buf_slice(&t));
	ok(entry_is(it, &ref[0]), "seek to the smallest possible key lands on the first entry");
	iter_prev(it);
	ok(!iter_valid(it), "prev from the first entry is not valid");
	iter_seek_last(it);
	iter_next(it);
	ok(!iter_valid(it), "next from the last entry is not valid");

	/* mem_get against the reference: newest version of ukey at or below snap. */
	bad = 0;
	for (int g = 0; g < GETS; g++) {
		size_t klen = random_ukey(&rng, k);
		uint64_t snap = rand_next(&rng) % (N + 2), seq;
		struct slice v;
		int type;

		buf_clear(&t);
		ikey_append(&t, slice_make(k, klen), snap, KT_SEEK);
		size_t want = lower_bound(ref, N, buf_slice(&t));
		int expect = want < N &&
			     slice_eq(ikey_user(buf_slice(&ref[want].ikey)), slice_make(k, klen));
		int found = mget(m, slice_make(k, klen), snap, &type, &seq, &v);

		if (found != expect)
			bad++;
		else if (found && (seq != ikey_seq(buf_slice(&ref[want].ikey)) ||
				   type != ikey_type(buf_slice(&ref[want].ikey)) ||
				   !slice_eq(v, ref[want].value)))
			bad++;
	}
	is_int(bad, 0, "get(ukey, snap) agrees with the reference for 5000 random lookups");
	is_int(mem_entries(m), N, "entries counts the 50000 inserts");
	is_int(mem_max_seq(m), N, "max_seq is the last sequence inserted");
	ok(iter_valid(it) == 0 && it->ops->max_seq != NULL, "memtable iterators offer max_seq");
	iter_seek_first(it);
	is_int(it->ops->max_seq(it), N, "the iterator's max_seq bounds every entry's sequence");

	iter_destroy(it);
	buf_free(&t);
	for (i = 0; i < N; i++)
		buf_free(&ref[i].ikey);
	free(ref);
	mem_unref(m);
}

/* ---------------------------------------------------------------- range tombstones */

static void test_range_tombstones(void)
{
	struct memtable *m = mem_new();
	struct slice v;
	uint64_t seq;
	int type;

	mem_add(m, 4, KT_PUT, S("b"), S("vb"));
	mem_add(m, 3, KT_RANGE_DEL, S("b"), S("z"));
	mem_add(m, 5, KT_RANGE_DEL, S("b"), S("d"));
	mem_add(m, 8, KT_RANGE_DEL, S("a"), S("c"));
	is_int(mem_range_dels(m), 3, "range_dels counts the range tombstones");
	is_int(mem_entries(m), 1, "range tombstones are not point entries");
	is_int(mem_max_seq(m), 8, "max_seq includes range tombstones");
	ok(mget(m, S("b"), SEQ_MAX, &type, &seq, &v) && seq == 4 && type == KT_PUT,
	   "get ignores range tombstones");

	struct iter *pi = mem_iter_new(m);
	size_t n = 0;
	for (iter_seek_first(pi); iter_valid(pi); iter_next(pi))
		n++;
	is_int(n, 1, "the point iterator shows no range tombstones");
	iter_destroy(pi);

	struct iter *it = mem_range_iter_new(m);
	static const struct { const char *start, *end; uint64_t seq; } want[] = {
		{ "a", "c", 8 }, { "b", "d", 5 }, { "b", "z", 3 },
	};
	int bad = 0;
	n = 0;
	for (iter_seek_first(it); iter_valid(it); iter_next(it), n++) {
		struct slice k = iter_key(it);
		if (n >= 3 || !slice_eq(ikey_user(k), S(want[n].start)) ||
		    ikey_seq(k) != want[n].seq || ikey_type(k) != KT_RANGE_DEL ||
		    !slice_eq(iter_value(it), S(want[n].end)))
			bad++;
	}
	is_int(n, 3, "the range iterator shows every tombstone");
	is_int(bad, 0, "tombstones come by start, newest first, with their end keys as values");

	struct buf t = BUF_INIT;
	ikey_append(&t, S("b"), 4, KT_SEEK);
	iter_seek(it, buf_slice(&t));
	ok(iter_valid(it) && ikey_seq(iter_key(it)) == 3, "range iterator seeks by internal key");
	iter_prev(it);
	ok(iter_valid(it) && ikey_seq(iter_key(it)) == 5, "range iterator steps back");
	iter_seek_last(it);
	ok(iter_valid(it) && slice_eq(iter_value(it), S("z")), "range iterator seek_last");
	buf_free(&t);
	iter_destroy(it);
	mem_unref(m);
}

/*
 * The range index a memtable keeps for readers holds a copy of every
 * tombstone's keys and its fragments: mem_bytes counts it, so that a mass
 * delete (a row tombstone per row) switches the memtable when its memory,
 * not only its arena, reaches the write buffer's size.  Against a memtable
 * of point entries with the same keys and values, whose arena is the same
 * size, it must count at least the index's copies of the keys.
 */
static void test_range_index_bytes(void)
{
	enum { N = 2000 };
	struct memtable *r = mem_new(), *p = mem_new();
	char k[32], e[32];
	size_t rb, pb;

	for (int i = 0; i < N; i++) {
		snprintf(k, sizeof(k), "row%012d/a", i);
		snprintf(e, sizeof(e), "row%012d/b", i);
		mem_add(r, (uint64_t)i + 1, KT_RANGE_DEL, S(k), S(e));
		mem_add(p, (uint64_t)i + 1, KT_PUT, S(k), S(e));
	}
	rb = mem_bytes(r);
	pb = mem_bytes(p);
	ok(rb >= pb + (size_t)N * 2 * strlen(k),
	   "mem_bytes counts the range index: %zu bytes for %d tombstones, %zu for as many puts",
	   rb, N, pb);
	ok(rb < pb + (size_t)N * 512, "and no more than a few hundred bytes a tombstone over the arena");
	mem_unref(r);
	mem_unref(p);
}

/* ---------------------------------------------------------------- reference counts */

static void test_refs(void)
{
	struct memtable *m = mem_new();
	struct iter *it;
	size_t n = 0;
	int good = 1;

	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof(k), "%03d", i);
		mem_add(m, (uint64_t)i + 1, KT_PUT, S(k), S(k));
	}
	it = mem_iter_new(m);
	mem_ref(m);
	mem_unref(m);
	mem_unref(m);   /* the creator's reference: only the iterator's is left */
	for (iter_seek_first(it); iter_valid(it); iter_next(it), n++) {
		char k[32];
		snprintf(k, sizeof(k), "%03zu", n);
		good &= slice_eq(ikey_user(iter_key(it)), S(k)) && slice_eq(iter_value(it), S(k));
	}
	ok(n == 100 && good, "an iterator keeps its memtable alive after the owner lets go");
	iter_destroy(it);   /* frees the memtable: the sanitizer build would see a leak otherwise */
	mem_unref(NULL);
	ok(1, "mem_unref(NULL) is a no-op");
}

/* ---------------------------------------------------------------- concurrency */

enum { CW_N = 60000 };

struct race {
	struct memtable *m;
	uint32_t *order;      /* keys in insertion order */
	size_t published;     /* inserts done; release/acquire */
	int done;
	/* per reader results */
	long scans[2];        /* read by the writer: atomic */
	long partial[2];      /* scans that met a memtable neither empty nor full */
	long bad_order[2], bad_value[2], bad_count[2], bad_get[2], gets[2];
};

static size_t race_value(uint32_t key, char *out)
{
	size_t len = key % 61;

	for (size_t i = 0; i < len; i++)
		out[i] = (char)(key * 31 + i);
	return len;
}

static void race_key(uint32_t key, char *out)
{
	snprintf(out, 16, "key%08x", key);
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	char k[16], v[64];

	for (size_t i = 0; i < CW_N; i++) {
		/*
		 * Now and then wait for each reader to finish a scan begun after this
		 * point, so the readers surely meet a half-filled memtable however
		 * the threads are scheduled; between these points they race freely.
		 */
		if (i % (CW_N / 8) == CW_N / 16) {
			long s0 = __atomic_load_n(&r->scans[0], __ATOMIC_ACQUIRE);
			long s1 = __atomic_load_n(&r->scans[1], __ATOMIC_ACQUIRE);
			while (__atomic_load_n(&r->scans[0], __ATOMIC_ACQUIRE) < s0 + 2 ||
			       __atomic_load_n(&r->scans[1], __ATOMIC_ACQUIRE) < s1 + 2)
				sched_yield();
		}
		race_key(r->order[i], k);
		size_t vlen = race_value(r->order[i], v);
		mem_add(r->m, i + 1, KT_PUT, S(k), slice_make(v, vlen));
		__atomic_store_n(&r->published, i + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Check one entry is whole: its value is the one its key implies. */
static int entry_whole(struct slice ik, struct slice v)
{
	char want[64];
	unsigned key;
	struct slice u = ikey_user(ik);

	if (u.len != 11 || memcmp(u.data, "key", 3) != 0 || ikey_type(ik) != KT_PUT)
		return 0;
	char hex[9];
	memcpy(hex, u.data + 3, 8);
	hex[8] = 0;
	key = (unsigned)strtoul(hex, NULL, 16);
	size_t len = race_value(key, want);
	return v.len == len && memcmp(v.data, want, len) == 0;
}

struct reader_arg {
	struct race *r;
	int id;
};

static void *race_reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct race *r = ra->r;
	int id = ra->id;
	uint64_t rng = 7 + (uint64_t)id;
	struct iter *it = mem_iter_new(r->m);
	struct buf last = BUF_INIT;
	int final_pass = 0;

	for (;;) {
		int was_done = __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
		size_t before = __atomic_load_n(&r->published, __ATOMIC_ACQUIRE), n = 0;
		int backward = r->scans[id] % 3 == 2;

		/* A scan, either way, sees ordered, whole entries: at least those published. */
		buf_clear(&last);
		if (backward)
			iter_seek_last(it);
		else
			iter_seek_first(it);
		for (; iter_valid(it); backward ? iter_prev(it) : iter_next(it), n++) {
			struct slice k = iter_key(it);
			if (last.len) {
				int c = ikey_cmp(buf_slice(&last), k);
				if (backward ? c <= 0 : c >= 0)
					r->bad_order[id]++;
			}
			if (!entry_whole(k, iter_value(it)))
				r->bad_value[id]++;
			buf_set(&last, k.data, k.len);
		}
		if (n < before || n > CW_N)
			r->bad_count[id]++;
		if (n > 0 && n < CW_N)
			r->partial[id]++;
		__atomic_store_n(&r->scans[id], r->scans[id] + 1, __ATOMIC_RELEASE);

		/* Gets of published keys always succeed. */
		for (int g = 0; g < 200; g++) {
			size_t pub = __atomic_load_n(&r->published, __ATOMIC_ACQUIRE);
			if (pub == 0)
				break;
			char k[16];
			struct slice v;
			uint64_t seq;
			int type;
			size_t idx = rand_next(&rng) % pub;
			race_key(r->order[idx], k);
			struct buf ik = BUF_INIT;
			ikey_append(&ik, S(k), idx + 1, KT_PUT);
			int good = mget(r->m, S(k), SEQ_MAX, &type, &seq, &v) &&
				   seq == idx + 1 && entry_whole(buf_slice(&ik), v);
			buf_free(&ik);
			r->bad_get[id] += !good;
			r->gets[id]++;
		}
		if (final_pass)
			break;
		final_pass = was_done;
	}
	buf_free(&last);
	iter_destroy(it);
	return NULL;
}

static void test_concurrency(void)
{
	struct race r;
	pthread_t w, rd[2];
	struct reader_arg ra[2];
	uint64_t rng = 99;

	memset(&r, 0, sizeof(r));
	r.m = mem_new();
	r.order = malloc(CW_N * sizeof(*r.order));
	for (uint32_t i = 0; i < CW_N; i++)
		r.order[i] = i * 2654435761u;   /* distinct keys in a scattered order */
	for (size_t i = CW_N - 1; i > 0; i--) {
		size_t j = rand_next(&rng) % (i + 1);
		uint32_t tmp = r.order[i];
		r.order[i] = r.order[j];
		r.order[j] = tmp;
	}

	for (int i = 0; i < 2; i++) {
		ra[i].r = &r;
		ra[i].id = i;
		pthread_create(&rd[i], NULL, race_reader, &ra[i]);
	}
	pthread_create(&w, NULL, race_writer, &r);
	pthread_join(w, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);

	diag("readers: %ld and %ld scans (%ld and %ld of a half-filled memtable), "
	     "%ld and %ld gets during %d inserts", r.scans[0], r.scans[1], r.partial[0],
	     r.partial[1], r.gets[0], r.gets[1], CW_N);
	for (int i = 0; i < 2; i++) {
		ok(r.partial[i] >= 8, "reader %d scanned while the memtable was being filled", i);
		is_int(r.bad_order[i], 0, "reader %d only saw keys in strictly sorted order", i);
		is_int(r.bad_value[i], 0, "reader %d only saw whole entries (value matches key)",
		       i);
		is_int(r.bad_count[i], 0, "reader %d's scans saw every entry published before them",
		       i);
		is_int(r.bad_get[i], 0, "reader %d's gets found every published key", i);
	}
	is_int(mem_entries(r.m), CW_N, "the writer's inserts are all counted");
	free(r.order);
	mem_unref(r.m);
}

/* Fill m with n entries of 1000-byte values; the number of them read back right. */
static long pool_fill_check(struct memtable *m, long n, char tag)
{
	char k[32], v[1000];
	long good = 0;

	for (long i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "key%08ld", i);
		memset(v, tag + (char)(i % 7), sizeof(v));
		mem_add(m, (uint64_t)i + 1, KT_PUT, S(k), slice_make(v, sizeof(v)));
	}
	for (long i = 0; i < n; i++) {
		struct slice got;
		uint64_t seq;
		int type;

		snprintf(k, sizeof(k), "key%08ld", i);
		memset(v, tag + (char)(i % 7), sizeof(v));
		good += mget(m, S(k), UINT64_MAX >> 8, &type, &seq, &got) == 1 &&
			type == KT_PUT && got.len == sizeof(v) && !memcmp(got.data, v, sizeof(v));
	}
	return good;
}

/*
 * A pool keeps the huge chunks of a freed memtable, up to its limit (less
 * those other memtables hold), and the next memtable takes them again;
 * what it then holds reads back right (reused memory is not assumed
 * zeroed).  Kept a second without use, they are unmapped.
 */
static void test_pool(void)
{
	struct mem_pool *p = mem_pool_new((size_t)8 << 20);   /* four 2 MiB chunks */
	struct memtable *m = mem_new_pooled(p);
	long n = 12000;                                       /* about 12 MiB */

	is_int(mem_pool_chunks(p), 0, "pool: a new pool keeps nothing");
	is_int(pool_fill_check(m, n, 'a'), n, "pool: a pooled memtable reads back");
	for (int t = 0; t < 1000 && !mem_pool_spare(p); t++)
		usleep(5000);
	is_int(mem_pool_spare(p), 1, "pool: with no kept chunk left, a fresh spare is made ready "
	       "ahead of need");
	mem_unref(m);
	is_int(mem_pool_chunks(p), 4, "pool: freeing it keeps four chunks, the pool's limit");
	m = mem_new_pooled(p);
	is_int(pool_fill_check(m, n, 'k'), n,
	       "pool: the next memtable, on the reused chunks, reads back its own values");
	is_int(mem_pool_chunks(p), 0, "pool: it took every kept chunk");
	mem_unref(m);
	is_int(mem_pool_chunks(p), 4, "pool: and gave them back");
	{
		uint64_t t0 = now_micros();
		double idle;

		for (int t = 0; t < 1000 && mem_pool_chunks(p) > 0; t++)
			usleep(10000);
		idle = (double)(now_micros() - t0) / 1e6;
		is_int(mem_pool_chunks(p), 0, "pool: idle, it gives the kept chunks back to the "
		       "system");
		ok(idle >= 0.9, "pool: but not before a second without use (%.2f s)", idle);
	}
	m = mem_new_pooled(p);
	is_int(pool_fill_check(m, n, 'u'), n, "pool: a memtable after the trim reads back");
	{
		/*
		 * Freed while another memtable holds chunks (a flush ending while
		 * the next memtable fills): the chunks kept and those still in
		 * memtables stay within the limit, and the rest are unmapped.
		 */
		struct memtable *m2 = mem_new_pooled(p);
		size_t held;

		is_int(pool_fill_check(m2, 4000, 'w'), 4000, "pool: a second memtable reads back");
		mem_unref(m);
		held = mem_pool_out(p);
		ok(held >= 1 && held < 4, "pool: the second memtable holds some chunks (%zu)", held);
		is_int(mem_pool_chunks(p), 4 - held, "pool: freeing the first keeps only what the "
		       "second leaves of the limit (%zu kept)", mem_pool_chunks(p));
		mem_unref(m2);
		is_int(mem_pool_out(p), 0, "pool: with both freed none is out");
		is_int(mem_pool_chunks(p), 4, "pool: and the pool keeps its limit");
	}
	mem_pool_free(p);
	p = mem_pool_new((size_t)1 << 20);   /* less than a chunk: keeps none */
	m = mem_new_pooled(p);
	is_int(pool_fill_check(m, 3000, 'q'), 3000, "pool: a pool that keeps nothing works");
	is_int(mem_pool_spare(p), 0, "pool: and makes no spare");
	mem_unref(m);
	mem_pool_free(p);
	m = mem_new_pooled(NULL);
	is_int(pool_fill_check(m, 100, 'z'), 100, "pool: no pool works too");
	mem_unref(m);
}

int main(void)
{
	plan(94);
	test_empty();
	test_versions();
	test_big_value();
	test_bytes_small();
	test_filter();
	test_random_reference();
	test_range_tombstones();
	test_range_index_bytes();
	test_refs();
	test_concurrency();
	test_pool();
	return exit_status();
}
