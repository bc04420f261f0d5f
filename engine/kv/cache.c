/*
 * cache.c -- the sharded LRU cache of cache.h.
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
 *     time).  Removal shifts the run back (no tombstones), and eviction
 *     finds its entry's slot by pointer, without touching other entries;
 *   - an LRU list of the entries in the table that no handle holds, oldest
 *     at the head: only these may be evicted;
 *   - usage, the sum of the charges of the entries in the table.
 *
 * An entry's refs counts the handles held by callers, plus one while it is in
 * the table.  So an entry is on the LRU list exactly when it is in the table
 * and refs == 1, and it is deleted exactly when refs drops to 0: after it left
 * the table (evicted, erased or replaced) and its last handle was released.
 * Deleters run after the shard mutex is dropped, because a deleter may do
 * real work (closing an SSTable) and must not stall other readers of the
 * shard or call back into the cache under the lock.
 *
 * Recency is the time of the last release: a held entry is off the list, and
 * rejoins it at the newest end when its last handle goes.  Eviction happens
 * whenever usage exceeds the shard's capacity, on insert and on release (an
 * insert may overshoot while the entries it would evict are held).
 */
#include "cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#define CACHE_SEED 0x2f1c7a9b3d5e6081ull
#define SHARD_SHIFT 60          /* 64 - log2(CACHE_SHARDS) */
#define INITIAL_SLOTS 16

_Static_assert(CACHE_SHARDS == 1 << (64 - SHARD_SHIFT), "shard bits match the shard count");

struct cache_handle {
	void *value;
	cache_deleter deleter;
	size_t charge;
	uint64_t hash;
	struct cache_handle *dnext;        /* after death, the list of the dead */
	struct cache_handle *prev, *next;  /* LRU list links, while on it */
	uint32_t refs;                     /* held handles + 1 while in the table */
	int in_table;
	size_t klen;
	char key[];
};

/* A table slot: empty when e is NULL; else hash is e->hash, kept here to be compared cold. */
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
	struct cache_handle *lru_head;     /* oldest unheld entry */
	struct cache_handle *lru_tail;     /* newest unheld entry */
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

static void run_deleter(struct cache_handle *e)
{
	if (e->deleter)
		e->deleter(entry_key(e), e->value);
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

/* ---- LRU list; all REQUIRE the shard lock. */

static void lru_remove(struct shard *s, struct cache_handle *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_append(struct shard *s, struct cache_handle *e)
{
	e->next = NULL;
	e->prev = s->lru_tail;
	if (s->lru_tail)
		s->lru_tail->next = e;
	else
		s->lru_head = e;
	s->lru_tail = e;
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
		if (!sl->e || (sl->hash == hash && slice_eq(entry_key(sl->e), key)))
			return i;
	}
}

/* The slot holding entry e, found by pointer.  REQUIRES e in the table. */
static size_t table_find_entry(const struct shard *s, const struct cache_handle *e)
{
	size_t mask = s->nslots - 1, i = e->hash & mask;

	while (s->slots[i].e != e) {
		assert(s->slots[i].e);
		i = (i + 1) & mask;
	}
	return i;
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
 * by the caller once the lock is released; one that only the table still
 * holds becomes the newest evictable entry.
 */
static void unref(struct shard *s, struct cache_handle *e, struct cache_handle **dead)
{
	assert(e->refs > 0);
	if (--e->refs == 0) {
		assert(!e->in_table);
		e->dnext = *dead;
		*dead = e;
	} else if (e->in_table && e->refs == 1) {
		lru_append(s, e);
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
	if (e->refs == 1)
		lru_remove(s, e);
	unref(s, e, dead);
}

static void evict(struct shard *s, struct cache_handle **dead)
{
	while (s->usage > s->capacity && s->lru_head)
		table_remove(s, table_find_entry(s, s->lru_head), dead);
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

struct cache_handle *cache_insert(struct cache *c, struct slice key, void *value, size_t charge,
				  cache_deleter deleter)
{
	uint64_t hash = key_hash(key);
	struct shard *s = shard_for(c, hash);
	struct cache_handle *e = xmalloc(sizeof(*e) + key.len);
	struct cache_handle *dead = NULL;
	size_t i;

	e->value = value;
	e->deleter = deleter;
	e->charge = charge;
	e->hash = hash;
	e->dnext = e->prev = e->next = NULL;
	e->refs = 1;                       /* the caller's handle */
	e->in_table = 0;
	e->klen = key.len;
	if (key.len)
		memcpy(e->key, key.data, key.len);

	pthread_mutex_lock(&s->mu);
	i = table_find(s, key, hash);
	/* The old value is stale even if the new one is too big to keep. */
	if (s->slots[i].e) {
		table_remove(s, i, &dead);
		i = table_find(s, key, hash);   /* the run may have shifted */
	}
	if (charge <= s->capacity) {
		e->refs++;
		e->in_table = 1;
		s->slots[i].hash = hash;
		s->slots[i].e = e;
		s->count++;
		s->usage += charge;
		table_maybe_grow(s);
		evict(s, &dead);
	}
	pthread_mutex_unlock(&s->mu);
	bury(dead);
	return e;
}

struct cache_handle *cache_lookup(struct cache *c, struct slice key)
{
	uint64_t hash = key_hash(key);
	struct shard *s = shard_for(c, hash);
	struct cache_handle *e;

	pthread_mutex_lock(&s->mu);
	e = s->slots[table_find(s, key, hash)].e;
	if (e) {
		if (e->refs == 1)
			lru_remove(s, e);
		e->refs++;
		__atomic_fetch_add(&s->hits, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&s->misses, 1, __ATOMIC_RELAXED);
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
