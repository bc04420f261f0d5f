/*
 * cache.c -- the sharded CLOCK cache of cache.h.
 *
 * The cache is CACHE_SHARDS independent shards; a key's shard is picked by the
 * top bits of its hash64, and the low bits pick its slot inside the shard,
 * so the two choices do not correlate.  Each shard holds, under its mutex:
 *
 *   - an open-addressing hash table of the entries it caches ("in the
 *     table"): linear probing over slots that hold each entry's hash next
 *     to its pointer, at most half full (it doubles beyond).  A lookup
 *     reads one run of slots and touches an entry only when the full
 *     64-bit hash matches: the blocks cached are megabytes apart, so every
 *     entry touched is a likely cache miss, and a chained table paid one
 *     per link on every miss and insert (a sixth of a compacted scan's
 *     time).  Removal shifts the run back (no tombstones);
 *   - a clock hand over those slots, and in each slot a referenced bit,
 *     set by a lookup that finds the entry and cleared when the hand
 *     passes.  To make room, the hand sweeps the slots and evicts the
 *     first entry that no handle holds and that was not found since the
 *     hand last passed it: an entry in use gets a second chance, one read
 *     once does not.  That is an approximation of least-recently-used
 *     order that reads and writes only the slots, which are packed, until
 *     it has found its victim: the LRU list it replaces touched the oldest
 *     entry and its neighbour on every eviction and a hit's two neighbours
 *     on every hit, each a likely cache miss (a quarter of a 1 KiB-value
 *     seekrandom's time went to the cache);
 *   - usage, the sum of the charges of the entries in the table.
 *
 * An entry's refs counts the handles held by callers, plus one while it is in
 * the table.  It is deleted exactly when refs drops to 0: after it left
 * the table (evicted, erased or replaced) and its last handle was released.
 * Deleters run after the shard mutex is dropped, because a deleter may do
 * real work (closing an SSTable) and must not stall other readers of the
 * shard or call back into the cache under the lock.
 *
 * Eviction happens whenever usage exceeds the shard's capacity, on insert
 * and on release (an insert may overshoot while the entries it would evict
 * are held).
 */
#include "cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/*
 * Stashed memory is dead to ASan until reused, as freed memory would be,
 * and so is an entry's slack past its value.  Unlike freed memory, it is
 * reused at once, without ASan's quarantine: a handle used after its
 * release is caught only while the memory is still stashed.
 */
#define STASH_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define STASH_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define STASH_POISON(p, n) ((void)(p), (void)(n))
#define STASH_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CACHE_SEED 0x2f1c7a9b3d5e6081ull
#define SHARD_SHIFT 60          /* 64 - log2(CACHE_SHARDS) */
/*
 * A slot's referenced bit: bit 63 of its hash, which is the same for every
 * hash in one shard (it picked the shard), so it is free to hold the bit.
 */
#define REF_BIT (1ull << 63)
#define INITIAL_SLOTS 16

_Static_assert(CACHE_SHARDS == 1 << (64 - SHARD_SHIFT), "shard bits match the shard count");

struct cache_handle {
	void *value;
	cache_deleter deleter;
	size_t charge;
	uint64_t hash;
	struct cache_handle *dnext;        /* after death, the list of the dead */
	uint32_t refs;                     /* held handles + 1 while in the table */
	int in_table;
	int chance;                        /* held when the clock hand passed (evict) */
	size_t cap;                        /* cache_entry_new: the allocation's size; else 0 */
	size_t klen;
	char key[];
};

/*
 * A table slot: empty when e is NULL; else hash is e->hash, kept here to be
 * compared cold, with REF_BIT in place of its top bit.
 */
struct slot {
	uint64_t hash;
	struct cache_handle *e;
};

struct shard {
	pthread_mutex_t mu;                /* protects everything below but the counters */
	size_t capacity;
	size_t usage;
	struct slot *slots;
	size_t nslots;                     /* a power of two, at least twice count */
	size_t count;                      /* entries in the table */
	size_t hand;                       /* the clock hand: the next slot to look at */
	int all_held;                      /* evict found nothing it may evict (evict) */
	uint64_t hits, misses;             /* atomic: read without the lock */
};

struct cache {
	size_t capacity;
	uint64_t last_id;                  /* atomic */
	struct shard shards[CACHE_SHARDS];
};

static inline uint64_t key_hash(struct slice key)
{
	return hash64(key.data, key.len, CACHE_SEED);
}

static inline struct shard *shard_for(struct cache *c, uint64_t hash)
{
	return &c->shards[hash >> SHARD_SHIFT];
}

unsigned cache_shard_of(struct slice key)
{
	return (unsigned)(key_hash(key) >> SHARD_SHIFT);
}

static inline struct slice entry_key(const struct cache_handle *e)
{
	return slice_make(e->key, e->klen);
}

struct cache *cache_new(size_t capacity)
{
	struct cache *c = xcalloc(1, sizeof(*c));

	c->capacity = capacity;
	for (int i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &c->shards[i];
		pthread_mutex_init(&s->mu, NULL);
		s->capacity = capacity / CACHE_SHARDS + (capacity % CACHE_SHARDS != 0);
		s->nslots = INITIAL_SLOTS;
		s->slots = xcalloc(s->nslots, sizeof(*s->slots));
	}
	return c;
}

/*
 * The calling thread's stash of dead cache_entry_new entries (cache.h), and
 * their sizes, kept here so that a search touches no entry.  Drained by the
 * key's destructor when the thread ends.
 */
struct stash {
	int n;
	size_t cap[CACHE_STASH];
	struct cache_handle *e[CACHE_STASH];
};

static __thread struct stash stash;
static __thread int stash_registered;
static __thread uint64_t entries_made, entries_reused;
static pthread_key_t stash_key;
static pthread_once_t stash_once = PTHREAD_ONCE_INIT;

static void stash_drain(void *arg)
{
	struct stash *st = arg;

	while (st->n > 0) {
		st->n--;
		STASH_UNPOISON(st->e[st->n], st->cap[st->n]);
		free(st->e[st->n]);
	}
	stash_registered = 0;   /* an entry dropped later registers again, to be drained again */
}

static void stash_key_init(void)
{
	if (pthread_key_create(&stash_key, stash_drain) != 0)
		abort();
}

/*
 * Keep e's memory.  A full stash frees its oldest memory to make room: a
 * few entries of an odd size (a block of one big value) must not keep the
 * common sizes out for the rest of the thread's life.
 */
static void stash_put(struct cache_handle *e)
{
	STASH_UNPOISON(e, e->cap);   /* the slack cache_entry_new poisoned */
	if (e->cap > CACHE_STASH_MAX) {
		free(e);
		return;
	}
	if (stash.n == CACHE_STASH) {
		STASH_UNPOISON(stash.e[0], stash.cap[0]);
		free(stash.e[0]);
		stash.n--;
		memmove(stash.e, stash.e + 1, stash.n * sizeof(stash.e[0]));
		memmove(stash.cap, stash.cap + 1, stash.n * sizeof(stash.cap[0]));
	}
	if (!stash_registered) {
		pthread_once(&stash_once, stash_key_init);
		if (pthread_setspecific(stash_key, &stash) != 0) {
			free(e);
			return;
		}
		stash_registered = 1;
	}
	stash.cap[stash.n] = e->cap;
	stash.e[stash.n++] = e;
	STASH_POISON(e, e->cap);
}

/* A stashed allocation of at least need bytes and at most an eighth more, or NULL. */
static struct cache_handle *stash_take(size_t need)
{
	for (int i = stash.n - 1; i >= 0; i--) {
		struct cache_handle *e = stash.e[i];

		if (stash.cap[i] < need || stash.cap[i] - need > need / 8)
			continue;
		STASH_UNPOISON(e, stash.cap[i]);
		stash.n--;
		memmove(stash.e + i, stash.e + i + 1, (stash.n - i) * sizeof(stash.e[0]));
		memmove(stash.cap + i, stash.cap + i + 1, (stash.n - i) * sizeof(stash.cap[0]));
		return e;
	}
	return NULL;
}

static void run_deleter(struct cache_handle *e)
{
	if (e->deleter)
		e->deleter(entry_key(e), e->value);
	if (e->cap)
		stash_put(e);
	else
		free(e);
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &c->shards[i];
		for (size_t b = 0; b < s->nslots; b++) {
			struct cache_handle *e = s->slots[b].e;
			if (!e)
				continue;
			assert(e->in_table && e->refs == 1);  /* no handle may be held */
			run_deleter(e);
		}
		free(s->slots);
		pthread_mutex_destroy(&s->mu);
	}
	free(c);
}

/* ---- hash table and references; all REQUIRE the shard lock. */

/*
 * The slot holding key's entry, or the empty slot that ends its run (where
 * it would go).  Entries are touched only on a full hash match.
 */
static size_t table_find(const struct shard *s, struct slice key, uint64_t hash)
{
	size_t mask = s->nslots - 1, i = hash & mask;

	for (;; i = (i + 1) & mask) {
		const struct slot *sl = &s->slots[i];
		if (!sl->e || (((sl->hash ^ hash) & ~REF_BIT) == 0 &&
				slice_eq(entry_key(sl->e), key)))
			return i;
	}
}

/* Keep runs short: double the slots once the table is more than half full. */
static void table_maybe_grow(struct shard *s)
{
	size_t n = s->nslots * 2, mask = n - 1;
	struct slot *ns;

	if (2 * s->count <= s->nslots)
		return;
	ns = xcalloc(n, sizeof(*ns));
	for (size_t b = 0; b < s->nslots; b++) {
		size_t i;
		if (!s->slots[b].e)
			continue;
		for (i = s->slots[b].hash & mask; ns[i].e; i = (i + 1) & mask)
			;
		ns[i] = s->slots[b];
	}
	free(s->slots);
	s->slots = ns;
	s->nslots = n;
	s->hand = 0;
}

/*
 * Empty slot i and close the gap: each later entry of the run that may move
 * back (its home slot is not cyclically in (i, j]) moves into the hole,
 * which then moves to where it was.  So every entry stays reachable from its
 * home slot without crossing an empty one.
 */
static void slot_clear(struct shard *s, size_t i)
{
	size_t mask = s->nslots - 1, j = i;

	for (;;) {
		size_t home;
		j = (j + 1) & mask;
		if (!s->slots[j].e)
			break;
		home = s->slots[j].hash & mask;
		/* stays if home lies in (i, j], cyclically */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i].e = NULL;
	s->slots[i].hash = 0;
}

/*
 * Drop one reference.  An entry that dies is pushed on *dead, to be deleted
 * by the caller once the lock is released.
 */
static void unref(struct shard *s, struct cache_handle *e, struct cache_handle **dead)
{
	assert(e->refs > 0);
	if (--e->refs == 0) {
		assert(!e->in_table);
		e->dnext = *dead;
		*dead = e;
	} else if (e->refs == 1 && e->in_table) {
		s->all_held = 0;   /* the table's alone now: evictable */
	}
}

/* Take the entry in slot i out of the table and drop the table's reference. */
static void table_remove(struct shard *s, size_t i, struct cache_handle **dead)
{
	struct cache_handle *e = s->slots[i].e;

	assert(e->in_table && s->count > 0 && s->usage >= e->charge);
	slot_clear(s, i);
	s->count--;
	s->usage -= e->charge;
	e->in_table = 0;
	unref(s, e, dead);
}

/*
 * Sweep the hand until usage is within capacity.  At each slot: a
 * referenced entry loses its bit and is passed over; an unreferenced one is
 * evicted unless a handle holds it, or it has a second chance coming
 * because it was held when the hand last came by (an entry in use is not
 * the first to go once released: its bit may have been cleared while it was
 * held; the hold of the insert that brings an entry in does not count).  Only unreferenced entries are touched, the likely victims.  A
 * removal leaves the hand where it is: the run shifted back, so the slot
 * holds an entry the hand has not seen yet, or nothing.
 *
 * Two full turns without an eviction mean every entry is held: the shard
 * stays over capacity, and further calls return at once (all_held) until a
 * release leaves an entry in the table unheld, rather than sweep every slot
 * under the lock on each insert and release.
 */
static void evict(struct shard *s, struct cache_handle **dead)
{
	size_t mask = s->nslots - 1, turns = 0;

	if (s->all_held)
		return;
	while (s->usage > s->capacity) {
		size_t i = s->hand & mask;
		struct slot *sl = &s->slots[i];
		struct cache_handle *e = sl->e;

		if (turns > 2 * s->nslots) {
			s->all_held = 1;
			return;
		}
		if (e && (sl->hash & REF_BIT)) {
			sl->hash &= ~REF_BIT;
		} else if (e && e->refs > 1) {
			e->chance = 1;
		} else if (e && e->chance) {
			e->chance = 0;
		} else if (e) {
			table_remove(s, i, dead);
			continue;
		}
		s->hand = i + 1;
		turns++;
	}
}

/*
 * A lookup missed in a full shard: an insert will likely follow and evict.
 * Ask the CPU now for the entry the hand would take, as far as the slots
 * tell (unreferenced; whether it is held is in the entry), so that the
 * cache miss on it overlaps with the caller's work until the insert (a
 * block's read and decompression), instead of stalling the eviction: that
 * one miss was most of a 1 KiB-value seekrandom's time in the cache.
 */
static void prefetch_victim(const struct shard *s)
{
	size_t mask = s->nslots - 1;

	for (size_t k = 0, i = s->hand; k < 8; k++, i++) {
		const struct slot *sl = &s->slots[i & mask];

		if (sl->e && !(sl->hash & REF_BIT)) {
			__builtin_prefetch(sl->e);
			return;
		}
	}
}

/* Run the deleters of the entries that died while the lock was held. */
static void bury(struct cache_handle *dead)
{
	struct cache_handle *next;

	for (; dead; dead = next) {
		next = dead->dnext;
		run_deleter(dead);
	}
}

/* ---- the interface */

/* Fill in a new entry held by the caller alone. */
static void entry_init(struct cache_handle *e, struct slice key, void *value, size_t charge,
		       cache_deleter deleter)
{
	e->value = value;
	e->deleter = deleter;
	e->charge = charge;
	e->hash = key_hash(key);
	e->dnext = NULL;
	e->refs = 1;                       /* the caller's handle */
	e->in_table = 0;
	e->chance = 0;
	e->klen = key.len;
	if (key.len)
		memcpy(e->key, key.data, key.len);
}

/* Put new entry e in the table, in place of any entry under its key. */
static void entry_insert(struct cache *c, struct cache_handle *e)
{
	struct shard *s = shard_for(c, e->hash);
	struct slice key = entry_key(e);
	struct cache_handle *dead = NULL;
	size_t i;

	assert(e->refs == 1 && !e->in_table);
	pthread_mutex_lock(&s->mu);
	i = table_find(s, key, e->hash);
	/* The old value is stale even if the new one is too big to keep. */
	if (s->slots[i].e) {
		table_remove(s, i, &dead);
		i = table_find(s, key, e->hash);   /* the run may have shifted */
	}
	if (e->charge <= s->capacity) {
		e->refs++;
		e->in_table = 1;
		s->slots[i].hash = e->hash & ~REF_BIT;   /* not referenced yet */
		s->slots[i].e = e;
		s->count++;
		s->usage += e->charge;
		table_maybe_grow(s);
		evict(s, &dead);
		e->chance = 0;   /* held by its inserter only: no second chance for that */
	}
	pthread_mutex_unlock(&s->mu);
	bury(dead);
}

struct cache_handle *cache_insert(struct cache *c, struct slice key, void *value, size_t charge,
				  cache_deleter deleter)
{
	struct cache_handle *e = xmalloc(sizeof(*e) + key.len);

	entry_init(e, key, value, charge, deleter);
	e->cap = 0;
	entry_insert(c, e);
	return e;
}

/* Where an entry of cache_entry_new keeps its value: after its key, aligned. */
#define VALUE_ALIGN 16

struct cache_handle *cache_entry_new(struct slice key, size_t size)
{
	size_t off = (sizeof(struct cache_handle) + key.len + VALUE_ALIGN - 1) &
		     ~(size_t)(VALUE_ALIGN - 1);
	size_t need = off + size;
	struct cache_handle *e;

	/*
	 * Sizes rounded so that blocks a little apart in size reuse each
	 * other's memory, and reuse allowed up to an eighth more than the
	 * need.  Not coarser: the charge is what the memory takes, and with a
	 * 1 KiB step and a quarter more, 4 KiB blocks were charged about a
	 * fifth more than their bytes; the cache held that many fewer, and a
	 * 100-byte-value readrandom's median get was 1 us slower.
	 */
	need = (need + 255) & ~(size_t)255;
	e = stash_take(need);
	if (e) {
		entries_reused++;
	} else {
		e = xmalloc(need);
		e->cap = need;
		entries_made++;
	}
	entry_init(e, key, (char *)e + off, 0, NULL);
	/* under ASan, a value overrun into the rounding's slack is caught as in a malloc'd buffer */
	STASH_POISON((char *)e + off + size, e->cap - off - size);
	return e;
}

void cache_entry_insert(struct cache *c, struct cache_handle *h)
{
	assert(h->cap);
	h->charge = h->cap;
	entry_insert(c, h);
}

void cache_entry_counts(uint64_t *made, uint64_t *reused)
{
	*made = entries_made;
	*reused = entries_reused;
}

void cache_entry_drop(struct cache_handle *h)
{
	assert(h->cap && h->refs == 1 && !h->in_table);
	h->refs = 0;
	run_deleter(h);
}

struct cache_handle *cache_lookup(struct cache *c, struct slice key)
{
	uint64_t hash = key_hash(key);
	struct shard *s = shard_for(c, hash);
	struct cache_handle *e;
	size_t i;

	pthread_mutex_lock(&s->mu);
	i = table_find(s, key, hash);
	e = s->slots[i].e;
	if (e) {
		s->slots[i].hash |= REF_BIT;
		e->refs++;
		__atomic_fetch_add(&s->hits, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&s->misses, 1, __ATOMIC_RELAXED);
		if (s->usage > s->capacity / 8 * 7)
			prefetch_victim(s);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

void cache_release(struct cache *c, struct cache_handle *h)
{
	struct shard *s = shard_for(c, h->hash);
	struct cache_handle *dead = NULL;

	pthread_mutex_lock(&s->mu);
	unref(s, h, &dead);
	evict(s, &dead);
	pthread_mutex_unlock(&s->mu);
	bury(dead);
}

void *cache_value(struct cache_handle *h)
{
	return h->value;
}

void cache_erase(struct cache *c, struct slice key)
{
	uint64_t hash = key_hash(key);
	struct shard *s = shard_for(c, hash);
	struct cache_handle *dead = NULL;
	size_t i;

	pthread_mutex_lock(&s->mu);
	i = table_find(s, key, hash);
	if (s->slots[i].e)
		table_remove(s, i, &dead);
	pthread_mutex_unlock(&s->mu);
	bury(dead);
}

uint64_t cache_new_id(struct cache *c)
{
	return __atomic_add_fetch(&c->last_id, 1, __ATOMIC_RELAXED);
}

size_t cache_usage(struct cache *c)
{
	size_t total = 0;

	for (int i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &c->shards[i];
		pthread_mutex_lock(&s->mu);
		total += s->usage;
		pthread_mutex_unlock(&s->mu);
	}
	return total;
}

size_t cache_capacity(struct cache *c)
{
	return c->capacity;
}

void cache_counters(struct cache *c, uint64_t *hits, uint64_t *misses)
{
	uint64_t h = 0, m = 0;

	for (int i = 0; i < CACHE_SHARDS; i++) {
		h += __atomic_load_n(&c->shards[i].hits, __ATOMIC_RELAXED);
		m += __atomic_load_n(&c->shards[i].misses, __ATOMIC_RELAXED);
	}
	if (hits)
		*hits = h;
	if (misses)
		*misses = m;
}
