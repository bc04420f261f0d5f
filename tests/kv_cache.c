/*
 * kv_cache.c -- tests for engine/cache.c: lookups and counters, CLOCK order
 * inside a shard, entries that carry their value and the reuse of their memory, pinning, erase and replace of held entries, entries too
 * big to keep, exactly-once deleters, table growth, removals in the middle
 * of a probe run (against a model), and a multithreaded
 * stress run (meant for the ASan build, which catches a value deleted while
 * held).
 *
 * The cache splits its capacity over CACHE_SHARDS shards, so tests of
 * eviction order pick keys that cache_shard_of() puts in one shard.
 */
#include "tap.h"
#include "cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- values that count their deletions */

struct val {
	char key[32];
	int deleted;
	int key_matched;           /* the deleter was given this value's key */
};

static int total_deleted;

static void val_deleter(struct slice key, void *value)
{
	struct val *v = value;

	v->deleted++;
	v->key_matched = slice_eq(key, slice_str(v->key));
	total_deleted++;
}

static struct val vals[400];

/* Keys "s<i>", taken only from those in shard 0, so one shard's clock decides. */
static char shard_keys[400][32];

static void find_shard_keys(void)
{
	int n = 0;

	for (int i = 0; n < 400; i++) {
		char b[32];
		snprintf(b, sizeof(b), "s%d", i);
		if (cache_shard_of(slice_str(b)) == 0)
			memcpy(shard_keys[n++], b, sizeof(b));
	}
}

static struct val *val_for(int i)
{
	struct val *v = &vals[i];

	snprintf(v->key, sizeof(v->key), "%s", shard_keys[i]);
	v->deleted = 0;
	v->key_matched = 0;
	return v;
}

static struct cache_handle *put(struct cache *c, int i, size_t charge)
{
	return cache_insert(c, slice_str(shard_keys[i]), val_for(i), charge, val_deleter);
}

static void put_release(struct cache *c, int i, size_t charge)
{
	cache_release(c, put(c, i, charge));
}

/* Is key i in the cache?  (A lookup also marks it referenced.) */
static int present(struct cache *c, int i)
{
	struct cache_handle *h = cache_lookup(c, slice_str(shard_keys[i]));

	if (!h)
		return 0;
	int r = cache_value(h) == &vals[i];
	cache_release(c, h);
	return r ? 1 : -1;
}

/* ---- single-threaded behaviour */

static void test_basics(void)
{
	struct cache *c = cache_new(1600);
	struct cache_handle *h;
	uint64_t hits, misses;

	is_int(cache_capacity(c), 1600, "cache_capacity is what cache_new was given");
	h = put(c, 0, 7);
	ok(h && cache_value(h) == &vals[0], "cache_insert returns a held handle to the value");
	is_int(cache_usage(c), 7, "usage is the charge of the one entry");
	cache_release(c, h);
	h = cache_lookup(c, slice_str(shard_keys[0]));
	ok(h && cache_value(h) == &vals[0], "cache_lookup finds an inserted entry");
	cache_release(c, h);
	ok(cache_lookup(c, slice_str("nothing here")) == NULL,
	   "cache_lookup of an absent key is NULL");
	ok(cache_lookup(c, slice_make(shard_keys[0], strlen(shard_keys[0]) - 1)) == NULL,
	   "a prefix of a cached key is a different key");
	cache_counters(c, &hits, &misses);
	ok(hits == 1 && misses == 2, "counters count 1 hit and 2 misses");
	is_int(vals[0].deleted, 0, "nothing is deleted while cached");

	{
		uint64_t a = cache_new_id(c), b = cache_new_id(c);
		ok(a != 0 && b > a, "cache_new_id gives fresh increasing ids");
	}
	total_deleted = 0;
	cache_free(c);
	ok(vals[0].deleted == 1 && vals[0].key_matched,
	   "cache_free runs the deleter once, with the entry's key");
}

static void test_clock_order(void)
{
	/* 16 shards of 100: shard 0 holds ten entries of charge 10. */
	struct cache *c = cache_new(1600);
	int ok_present = 1, kept = 1, n = 0;

	for (int i = 0; i < 10; i++)
		put_release(c, i, 10);
	is_int(cache_usage(c), 100, "ten entries of charge 10 fill the shard exactly");
	ok(present(c, 0) == 1, "an entry is still there when the shard is exactly full");
	/* Nine are found again; key 9 is the only one not used since it went in. */
	for (int i = 0; i < 9; i++)
		ok_present &= present(c, i) == 1;
	put_release(c, 10, 10);
	ok(ok_present && vals[9].deleted == 1,
	   "inserting into a full shard evicts the one entry not found since it went in");
	ok_present = 1;
	for (int i = 0; i < 9; i++)
		ok_present &= vals[i].deleted == 0;
	ok(ok_present, "the entries found again all get their second chance");
	/*
	 * Key 0, found again before every insert, outlives 100 inserts that
	 * push out the rest (each insert makes the hand move on, and the keys'
	 * hashes spread them over the slots: 100 inserts take the hand round
	 * many times).
	 */
	for (int i = 11; i < 111; i++) {
		kept &= present(c, 0) == 1;
		put_release(c, i, 10);
	}
	ok(kept && vals[0].deleted == 0, "an entry found between every two inserts is never evicted");
	for (int i = 1; i <= 9; i++)
		n += vals[i].deleted;
	is_int(n, 9, "100 inserts evicted all the other old entries, not found since");
	is_int(cache_usage(c), 100, "usage stays at capacity");
	n = 0;
	for (int i = 0; i < 111; i++)
		n += present(c, i) == 1;
	is_int(n, 10, "the shard holds ten entries");

	/* A big entry evicts as many as it needs, and no more. */
	put_release(c, 111, 35);
	ok(present(c, 111) == 1 && cache_usage(c) <= 100 && cache_usage(c) >= 90,
	   "an entry of charge 35 evicts four of charge 10 (usage %zu)", cache_usage(c));
	cache_free(c);
	{
		int once = 1;
		for (int i = 0; i <= 111; i++)
			once &= vals[i].deleted == 1 && vals[i].key_matched;
		ok(once, "every entry's deleter ran exactly once, with its key, by the end");
	}
}

static void test_pinned(void)
{
	struct cache *c = cache_new(1600);
	struct cache_handle *h0 = put(c, 0, 10), *h;
	int gone_by = -1;

	for (int i = 1; i < 30; i++)
		put_release(c, i, 10);
	ok(vals[0].deleted == 0 && vals[1].deleted == 1,
	   "a held entry is skipped by eviction, unheld ones go");
	h = cache_lookup(c, slice_str(shard_keys[0]));
	ok(h == h0, "the held entry is still found by lookup");
	cache_release(c, h);
	is_int(cache_usage(c), 100, "the held entry still counts in usage");

	/* 30 more inserts while it is held: the hand goes by it, and clears its bit, many times */
	for (int i = 30; i < 60; i++)
		put_release(c, i, 10);
	cache_release(c, h0);
	ok(vals[0].deleted == 0, "releasing the last handle of a cached entry does not delete it");
	/* Unheld now and never found again: the hand takes it within a few turns. */
	for (int i = 60; i < 128 && gone_by < 0; i++) {
		put_release(c, i, 10);
		if (vals[0].deleted)
			gone_by = i - 59;
	}
	ok(gone_by > 0 && vals[0].deleted == 1,
	   "once released it is evicted like any other (after %d inserts)", gone_by);
	cache_free(c);

	/*
	 * A shard of two entries of charge 50: key 200 is held while 20 others
	 * come and go, so the hand passes it while it is in use.  Released, it
	 * and the last one put are the only candidates, and the next insert
	 * must take the last one put, wherever the hand is: the held entry has
	 * its second chance.
	 */
	c = cache_new(1600);
	{
		struct cache_handle *a = put(c, 200, 50);

		for (int i = 201; i < 221; i++)
			put_release(c, i, 50);
		cache_release(c, a);
		put_release(c, 221, 50);
		ok(vals[200].deleted == 0 && vals[220].deleted == 1,
		   "an entry in use when the hand passed outlives one never used");
	}
	cache_free(c);

	/* Pinned entries may push usage over capacity; releasing them brings it back. */
	c = cache_new(1600);
	{
		struct cache_handle *held[12];
		for (int i = 40; i < 52; i++)
			held[i - 40] = put(c, i, 10);
		is_int(cache_usage(c), 120,
		       "twelve held entries overshoot the shard (nothing may be evicted)");
		for (int i = 0; i < 12; i++)
			cache_release(c, held[i]);
		is_int(cache_usage(c), 100, "releasing them evicts down to capacity");
		ok(vals[40].deleted == 1 && vals[41].deleted == 1 && vals[42].deleted == 0,
		   "the two released first, the only ones unheld then, are the ones evicted");
	}
	cache_free(c);
}

/* Entries that carry their value (cache_entry_new), and the reuse of their memory. */
static void test_entries(void)
{
	struct cache *c = cache_new(16 << 20);
	struct cache_handle *e, *f, *f2, *g, *many[CACHE_STASH + 1];
	uint64_t made0, reused0, made, reused;
	char *v;
	int all = 1, found = 0;

	e = cache_entry_new(slice_str("block-a"), 5000);
	v = cache_value(e);
	ok(v && ((uintptr_t)v & 15) == 0, "an entry's value is 16-byte aligned");
	memset(v, 'a', 5000);
	cache_entry_insert(c, e);
	ok(cache_usage(c) >= 5000 && cache_usage(c) <= 5000 + 256 + 256,
	   "it is charged its allocation, at least the value's size (%zu)", cache_usage(c));
	f = cache_lookup(c, slice_str("block-a"));
	ok(f == e && memcmp(cache_value(f), v, 5000) == 0 && ((char *)cache_value(f))[4999] == 'a',
	   "lookup finds it with the bytes written into it");
	cache_release(c, f);
	cache_release(c, e);
	cache_erase(c, slice_str("block-a"));
	is_int(cache_usage(c), 0, "erased, it is charged no more");

	/* a dropped entry's memory goes to the next entry of about its size */
	e = cache_entry_new(slice_str("k1"), 4100);
	cache_entry_drop(e);
	cache_entry_counts(&made0, &reused0);
	g = cache_entry_new(slice_str("k2"), 4200);
	cache_entry_counts(&made, &reused);
	ok(made == made0 && reused == reused0 + 1 && (void *)g == (void *)e,
	   "an entry dropped is reused by the next of about its size");
	cache_entry_insert(c, g);
	f = cache_lookup(c, slice_str("k2"));
	ok(f == g && cache_lookup(c, slice_str("k1")) == NULL,
	   "a reused entry is found under its new key only");
	cache_release(c, f);
	cache_release(c, g);
	cache_erase(c, slice_str("k2"));   /* dies: its memory is stashed again */
	cache_entry_counts(&made0, &reused0);
	f = cache_entry_new(slice_str("k3"), 40000);
	cache_entry_counts(&made, &reused);
	ok(made == made0 + 1 && reused == reused0,
	   "an entry much bigger than the stashed memory gets its own");
	f2 = cache_entry_new(slice_str("k4"), 100);
	cache_entry_counts(&made0, &reused0);
	ok(made0 == made + 1 && reused0 == reused,
	   "so does one much smaller (no memory held at 40 times the need)");
	cache_entry_drop(f2);
	cache_entry_drop(f);
	g = cache_entry_new(slice_str("k5"), 4000);   /* empties the stash of 4 KiB memory */

	/* the stash keeps at most CACHE_STASH: more dropped free the oldest */
	for (int i = 0; i <= CACHE_STASH; i++)
		many[i] = cache_entry_new(slice_str("m"), 20000);
	for (int i = 0; i <= CACHE_STASH; i++)
		cache_entry_drop(many[i]);
	cache_entry_counts(&made0, &reused0);
	for (int i = 0; i <= CACHE_STASH; i++) {
		many[i] = cache_entry_new(slice_str("m"), 20000);
		memset(cache_value(many[i]), 'm', 20000);
	}
	cache_entry_counts(&made, &reused);
	/* the oldest, the 40000- and 100-byte entries dropped above, and one of these went */
	ok(reused - reused0 == CACHE_STASH && made - made0 == 1,
	   "at most %d dropped entries are kept for reuse (%d of %d reused)", CACHE_STASH,
	   (int)(reused - reused0), CACHE_STASH + 1);
	for (int i = 0; i <= CACHE_STASH; i++)
		cache_entry_drop(many[i]);
	cache_entry_drop(g);

	/* entries evicted from a full cache feed the next ones */
	cache_free(c);
	c = cache_new(CACHE_SHARDS * 10000);
	cache_entry_counts(&made0, &reused0);
	for (int i = 0; i < 2000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "e%d", i);
		e = cache_entry_new(slice_str(k), 4000);
		memset(cache_value(e), i & 0xff, 4000);
		cache_entry_insert(c, e);
		cache_release(c, e);
	}
	for (int i = 1990; i < 2000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "e%d", i);
		e = cache_lookup(c, slice_str(k));
		if (e) {
			v = cache_value(e);
			all &= v[0] == (char)(i & 0xff) && v[3999] == (char)(i & 0xff);
			found++;
			cache_release(c, e);
		}
	}
	cache_entry_counts(&made, &reused);
	ok(all && found > 0 && cache_usage(c) <= cache_capacity(c),
	   "2000 entries through a small cache: within capacity, the %d of the last 10 still "
	   "cached intact", found);
	ok(reused - reused0 > 1500, "and most of them (%d) reused the memory of evicted ones",
	   (int)(reused - reused0));
	cache_free(c);
}

static void test_erase_replace(void)
{
	struct cache *c = cache_new(1600);
	struct cache_handle *h, *h2;

	h = put(c, 0, 10);
	cache_erase(c, slice_str(shard_keys[0]));
	ok(cache_lookup(c, slice_str(shard_keys[0])) == NULL, "an erased entry misses");
	is_int(cache_usage(c), 0, "an erased entry no longer counts in usage");
	ok(vals[0].deleted == 0 && cache_value(h) == &vals[0],
	   "an erased entry lives on while a handle holds it");
	cache_release(c, h);
	is_int(vals[0].deleted, 1, "its deleter runs when the last handle is released");
	cache_erase(c, slice_str(shard_keys[0]));
	is_int(vals[0].deleted, 1, "erasing an absent key does nothing");

	put_release(c, 1, 10);
	cache_erase(c, slice_str(shard_keys[1]));
	is_int(vals[1].deleted, 1, "erasing an unheld entry deletes it at once");

	/* Replace a held entry: the new value is found, the old one lives until released. */
	h = put(c, 2, 10);
	h2 = cache_lookup(c, slice_str(shard_keys[2]));
	snprintf(val_for(3)->key, sizeof(vals[3].key), "%s", shard_keys[2]);
	cache_release(c, cache_insert(c, slice_str(shard_keys[2]), &vals[3], 20, val_deleter));
	{
		struct cache_handle *now = cache_lookup(c, slice_str(shard_keys[2]));
		ok(now && cache_value(now) == &vals[3],
		   "after a replace, lookup finds the new value");
		if (now)
			cache_release(c, now);
	}
	is_int(cache_usage(c), 20, "usage counts only the new value's charge");
	is_int(vals[2].deleted, 0, "the replaced value lives while handles hold it");
	cache_release(c, h2);
	is_int(vals[2].deleted, 0, "... while any handle holds it");
	cache_release(c, h);
	ok(vals[2].deleted == 1 && vals[2].key_matched,
	   "the replaced value is deleted when its last handle goes");

	/* Replacing an unheld entry deletes the old value at once. */
	snprintf(val_for(4)->key, sizeof(vals[4].key), "%s", shard_keys[2]);
	cache_release(c, cache_insert(c, slice_str(shard_keys[2]), &vals[4], 5, val_deleter));
	ok(vals[3].deleted == 1 && vals[4].deleted == 0,
	   "replacing an unheld entry deletes the old value at once");
	cache_free(c);
	ok(vals[4].deleted == 1 && vals[4].key_matched, "cache_free deletes the replacement");
}

static void test_oversize(void)
{
	struct cache *c = cache_new(1600);
	struct cache_handle *h;

	h = put(c, 0, 101);
	ok(h && cache_value(h) == &vals[0],
	   "an entry bigger than a shard still returns a usable handle");
	ok(cache_lookup(c, slice_str(shard_keys[0])) == NULL, "but it is not kept: lookup misses");
	is_int(cache_usage(c), 0, "and it is not charged");
	cache_release(c, h);
	is_int(vals[0].deleted, 1, "releasing its only handle deletes it");

	put_release(c, 1, 100);
	ok(present(c, 1) == 1, "an entry of exactly a shard's capacity is kept");
	{
		snprintf(val_for(2)->key, sizeof(vals[2].key), "%s", shard_keys[1]);
		cache_release(c, cache_insert(c, slice_str(shard_keys[1]), &vals[2], 1000,
					      val_deleter));
	}
	ok(vals[1].deleted == 1 && present(c, 1) == 0,
	   "an oversize insert still drops the older entry under its key (it is stale)");
	is_int(vals[2].deleted, 1, "and the oversize value is deleted when released");
	cache_free(c);
}

static void test_growth(void)
{
	enum { N = 20000 };
	struct cache *c = cache_new((size_t)N * 16);
	int found = 0, deleted_early;
	char b[32];

	total_deleted = 0;
	for (int i = 0; i < N; i++) {
		snprintf(b, sizeof(b), "grow%d", i);
		cache_release(c, cache_insert(c, slice_str(b), (void *)(intptr_t)(i + 1), 1, NULL));
	}
	for (int i = 0; i < N; i++) {
		snprintf(b, sizeof(b), "grow%d", i);
		struct cache_handle *h = cache_lookup(c, slice_str(b));
		if (h && cache_value(h) == (void *)(intptr_t)(i + 1))
			found++;
		if (h)
			cache_release(c, h);
	}
	deleted_early = total_deleted;
	is_int(found, N,
	       "20000 entries in a roomy cache are all found with their values (tables grew)");
	is_int(cache_usage(c), N, "usage is the sum of their charges");
	is_int(deleted_early, 0, "a NULL deleter is allowed");
	cache_free(c);
}

/*
 * Random inserts, erases and lookups of 400 keys in one shard, against a
 * model of which are cached.  Removing an entry from the middle of a probe
 * run must leave every later entry of the run findable (and never make an
 * erased one reappear), whatever the table's size at the time; a roomy
 * capacity means only erase and replace remove entries.
 */
static void test_removal_model(void)
{
	enum { K = 400, OPS = 40000 };
	static char keys[K][32];
	static int present[K];
	struct cache *c = cache_new((size_t)CACHE_SHARDS * K * 4);
	uint64_t seed = 77;
	int wrong = 0, n = 0;

	for (int i = 0; n < K; i++) {
		char b[32];
		snprintf(b, sizeof(b), "m%d", i);
		if (cache_shard_of(slice_str(b)) == 3)
			memcpy(keys[n++], b, sizeof(b));
	}
	memset(present, 0, sizeof(present));
	for (int op = 0; op < OPS; op++) {
		uint64_t r = rand_next(&seed);
		int k = (int)(r % K);
		struct cache_handle *h;

		switch ((r >> 32) % 3) {
		case 0:
			cache_release(c, cache_insert(c, slice_str(keys[k]), (void *)(intptr_t)(k + 1),
						      1, NULL));
			present[k] = 1;
			break;
		case 1:
			cache_erase(c, slice_str(keys[k]));
			present[k] = 0;
			break;
		default:
			break;
		}
		/* now and then check every key, not just the one touched */
		if (op % 97 != 0)
			continue;
		for (int j = 0; j < K; j++) {
			h = cache_lookup(c, slice_str(keys[j]));
			if (!h != !present[j] || (h && cache_value(h) != (void *)(intptr_t)(j + 1)))
				wrong++;
			if (h)
				cache_release(c, h);
		}
	}
	is_int(wrong, 0, "inserts and erases in one shard: every cached key is found, every "
	       "erased one misses");
	n = 0;
	for (int j = 0; j < K; j++)
		n += present[j];
	is_int(cache_usage(c), n, "usage counts exactly the cached keys");
	cache_free(c);
}

/* ---- multithreaded stress */

#define STRESS_KEYS 500
#define STRESS_MAGIC 0x5ca1ab1eu

struct sval {
	uint32_t magic;
	int key;
};

static int stress_inserted, stress_deleted;   /* atomic */

static void sval_deleter(struct slice key, void *value)
{
	struct sval *v = value;
	char b[32];

	snprintf(b, sizeof(b), "t%d", v->key);
	if (v->magic != STRESS_MAGIC || !slice_eq(key, slice_str(b)))
		abort();   /* a deleter for the wrong entry, or twice: fail loudly */
	v->magic = 0;
	free(v);
	__atomic_fetch_add(&stress_deleted, 1, __ATOMIC_RELAXED);
}

struct worker {
	struct cache *c;
	uint64_t seed;
	int bad;                   /* values that did not match their key */
	long lookups;
	uint64_t ids[1000];
};

static void *stress_thread(void *arg)
{
	struct worker *w = arg;
	struct cache_handle *held[8] = { 0 };
	int held_key[8];

	for (int i = 0; i < 1000; i++)
		w->ids[i] = cache_new_id(w->c);
	for (int op = 0; op < 60000; op++) {
		uint64_t r = rand_next(&w->seed);
		int k = (int)(r % STRESS_KEYS), slot = (int)((r >> 20) % 8);
		char b[32];
		struct cache_handle *h = NULL;

		snprintf(b, sizeof(b), "t%d", k);
		switch ((r >> 32) % 8) {
		case 0: {
			struct sval *v = xmalloc(sizeof(*v));
			v->magic = STRESS_MAGIC;
			v->key = k;
			__atomic_fetch_add(&stress_inserted, 1, __ATOMIC_RELAXED);
			h = cache_insert(w->c, slice_str(b), v, 10 * (1 + (r >> 40) % 20), sval_deleter);
			break;
		}
		case 1: {
			/* an entry carrying its value: it may die in another thread, and be reused there */
			struct sval *v;

			h = cache_entry_new(slice_str(b), sizeof(*v) + (r >> 44) % 300);
			v = cache_value(h);
			v->magic = STRESS_MAGIC;
			v->key = k;
			cache_entry_insert(w->c, h);
			break;
		}
		case 2:
			cache_erase(w->c, slice_str(b));
			break;
		default:
			h = cache_lookup(w->c, slice_str(b));
			w->lookups++;
			break;
		}
		if (!h)
			continue;
		/* Keep some handles a while, so entries are held while others evict and erase. */
		if (held[slot]) {
			struct sval *v = cache_value(held[slot]);
			if (v->magic != STRESS_MAGIC || v->key != held_key[slot])
				w->bad++;
			cache_release(w->c, held[slot]);
		}
		held[slot] = h;
		held_key[slot] = k;
	}
	for (int s = 0; s < 8; s++) {
		if (held[s]) {
			struct sval *v = cache_value(held[s]);
			if (v->magic != STRESS_MAGIC || v->key != held_key[s])
				w->bad++;
			cache_release(w->c, held[s]);
		}
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_stress(void)
{
	enum { NT = 4 };
	/* About 30 entries' worth per shard: constant eviction. */
	struct cache *c = cache_new(16 * 3000);
	struct worker w[NT];
	pthread_t t[NT];
	int bad = 0, dup_ids = 0;
	long lookups = 0;
	uint64_t hits, misses, *ids = malloc(sizeof(uint64_t) * 1000 * NT);

	for (int i = 0; i < NT; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].c = c;
		w[i].seed = 0x1000 + (uint64_t)i * 7919;
		pthread_create(&t[i], NULL, stress_thread, &w[i]);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(t[i], NULL);
		bad += w[i].bad;
		lookups += w[i].lookups;
		memcpy(ids + i * 1000, w[i].ids, sizeof(w[i].ids));
	}
	is_int(bad, 0, "4 threads, entries of both kinds: every held value is intact and belongs to its key");
	ok(cache_usage(c) <= cache_capacity(c), "with no handle held, usage is within capacity");
	cache_counters(c, &hits, &misses);
	is_int((long)(hits + misses), lookups,
	       "hits + misses equals the lookups made by all threads");
	diag("stress: %ld lookups, %" PRIu64 " hits", lookups, hits);
	qsort(ids, 1000 * NT, sizeof(*ids), cmp_u64);
	for (int i = 1; i < 1000 * NT; i++)
		dup_ids += ids[i] == ids[i - 1];
	is_int(dup_ids, 0, "cache_new_id never gives two threads the same id");
	cache_free(c);
	is_int(stress_deleted, stress_inserted,
	       "after cache_free every inserted value was deleted exactly once");
	free(ids);
}

int main(void)
{
	plan(70);
	find_shard_keys();
	test_basics();
	test_clock_order();
	test_pinned();
	test_entries();
	test_erase_replace();
	test_oversize();
	test_growth();
	test_removal_model();
	test_stress();
	return exit_status();
}
