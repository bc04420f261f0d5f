/*
 * cache.h -- a bounded, sharded cache with pinned handles.
 *
 * Used for uncompressed SSTable blocks (keyed by file number and offset) and
 * for open SSTable readers (keyed by file number).  The key space is split
 * into 16 shards by hash, each with its own mutex, hash table and clock hand,
 * so concurrent readers rarely contend.  An entry is charged a size; when a
 * shard exceeds its share of the capacity, entries that no one holds are
 * evicted in CLOCK order: one found by a lookup since the hand last passed
 * it is passed over once (an approximation of least recently used).  An entry stays alive while any handle to it
 * is held, even after eviction or erase; the deleter runs when the last
 * handle is released.  An entry whose charge exceeds a shard's capacity is
 * not cached: the returned handle is the only reference.
 */
#ifndef SMOLFS_CACHE_H
#define SMOLFS_CACHE_H

#include "util.h"

struct cache;
struct cache_handle;

/*
 * The number of shards; each gets capacity / CACHE_SHARDS (rounded up), and
 * cache_shard_of() says which one holds a key, so that tests can fill one
 * shard on purpose.
 */
#define CACHE_SHARDS 16
unsigned cache_shard_of(struct slice key);

typedef void (*cache_deleter)(struct slice key, void *value);

struct cache *cache_new(size_t capacity);
/* REQUIRES: no handle still held. Runs the deleter of every entry. */
void cache_free(struct cache *c);

/*
 * Insert (replacing any entry with the same key) and return a held handle.
 * The cache copies the key; value and its deletion belong to the cache.
 * An entry too big to keep still drops an older entry under its key.  The
 * deleter may be NULL; it runs without any cache lock held, in the thread
 * that drops the last reference (release, erase, insert or cache_free).
 */
struct cache_handle *cache_insert(struct cache *c, struct slice key, void *value, size_t charge,
				  cache_deleter deleter);
/*
 * Entries that carry their value in their own allocation, for values the
 * cache's user builds in place (decoded blocks): one allocation per entry
 * instead of two, and when such an entry dies its memory is kept for the
 * next one the same thread makes, up to CACHE_STASH entries of at most
 * CACHE_STASH_MAX bytes per thread, the oldest freed first (all freed when
 * the thread ends).  Loading a
 * block into a full cache then costs no malloc and no free: with blocks of
 * a few KiB, glibc's free and malloc walked cold chunk headers and bins, a
 * tenth of a 1 KiB-value seekrandom's time.
 *
 * cache_entry_new returns a held entry outside any cache, with size bytes
 * at cache_value(h), aligned for any type, for the caller to fill; key is
 * copied.  Then either cache_entry_insert puts it in c (as cache_insert
 * would, charged its allocated size; the caller's handle stays held, for
 * cache_release), or cache_entry_drop ends it without a cache.
 */
#define CACHE_STASH 8
#define CACHE_STASH_MAX ((size_t)64 << 10)
struct cache_handle *cache_entry_new(struct slice key, size_t size);
void cache_entry_insert(struct cache *c, struct cache_handle *h);
/* REQUIRES: h from cache_entry_new, never inserted, held only by the caller. */
void cache_entry_drop(struct cache_handle *h);
/* The calling thread's cache_entry_new calls so far: *made allocated, *reused from its stash. */
void cache_entry_counts(uint64_t *made, uint64_t *reused);

/* A held handle, or NULL on a miss. */
struct cache_handle *cache_lookup(struct cache *c, struct slice key);
void cache_release(struct cache *c, struct cache_handle *h);
void *cache_value(struct cache_handle *h);
/* Drop the entry (it lives on while handles are held). */
void cache_erase(struct cache *c, struct slice key);
/* A fresh number for building keys unique to one user of a shared cache. */
uint64_t cache_new_id(struct cache *c);
size_t cache_usage(struct cache *c);
size_t cache_capacity(struct cache *c);
void cache_counters(struct cache *c, uint64_t *hits, uint64_t *misses);

#endif
