/*
 * cache.h -- a bounded, sharded LRU cache with pinned handles.
 *
 * Used for uncompressed SSTable blocks (keyed by file number and offset) and
 * for open SSTable readers (keyed by file number).  The key space is split
 * into 16 shards by hash, each with its own mutex, hash table and LRU list,
 * so concurrent readers rarely contend.  An entry is charged a size; when a
 * shard exceeds its share of the capacity, the least recently used entries
 * that no one holds are evicted.  An entry stays alive while any handle to it
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
