/*
 * memtable.h -- the in-memory write buffer: a skiplist of internal keys.
 *
 * One writer inserts at a time (the caller serialises writers; the db's write
 * path does); any number of readers and iterators run concurrently with it
 * without locks: nodes are allocated from an arena, linked with release
 * stores and read with acquire loads, and never freed until the memtable is.
 * Range tombstones go to a second skiplist of the same kind, keyed by
 * (start, seq, KT_RANGE_DEL) with the end key as value.
 *
 * Memtables are reference counted: the db holds one reference, and every
 * iterator or reader that must outlive a flush takes its own.
 */
#ifndef SMOLFS_MEMTABLE_H
#define SMOLFS_MEMTABLE_H

#include "dbformat.h"
#include "iter.h"

struct memtable;

/*
 * A pool of the arena's 2 MiB chunks, so that a database's next memtable
 * reuses the memory of the last one flushed instead of mapping fresh pages
 * that the kernel must zero first (15% of the CPU of a 1 KiB-value load in
 * key order).  The chunks it keeps and those in memtables not yet freed
 * stay within max_bytes (plus the one spare chunk below): a freed
 * memtable's chunks beyond that are unmapped.
 * Thread-safe: memtables are freed by whichever thread drops the last
 * reference.  REQUIRES: every memtable made from a pool is freed before it.
 */
struct mem_pool;
struct mem_pool *mem_pool_new(size_t max_bytes);
void mem_pool_free(struct mem_pool *p);
size_t mem_pool_chunks(struct mem_pool *p);   /* chunks kept for reuse now */
size_t mem_pool_out(struct mem_pool *p);      /* chunks in memtables not yet freed */
int mem_pool_spare(struct mem_pool *p);        /* 1 while a fresh chunk is ready ahead of need */

/*
 * A memtable, with one reference.  It keeps a filter of its point keys
 * (mem_may_contain), except one of a pool whose write buffer is under
 * 1 MiB, which the CPU's caches hold whole.
 */
struct memtable *mem_new(void);            /* no pool */
struct memtable *mem_new_pooled(struct mem_pool *p);   /* p may be NULL */
void mem_ref(struct memtable *m);
void mem_unref(struct memtable *m);        /* frees at zero */

/*
 * Insert one entry.  type is KT_PUT or KT_DELETE (key = user key, value) or
 * KT_RANGE_DEL (key = start, value = end).  Copies key and value.
 * REQUIRES: external synchronisation with other mem_add calls; seq larger
 * than that of any entry with the same user key already present.
 */
void mem_add(struct memtable *m, uint64_t seq, int type, struct slice key, struct slice value);

/*
 * Find the newest entry for ukey with sequence <= snap_seq.  hash is
 * bloom_hash(ukey) (bloom.h), which a caller that looks in several memtables
 * and tables computes once.  Returns 1 and sets *type (KT_PUT or KT_DELETE),
 * *seq, and *value (pointing into the memtable, valid while the caller
 * holds a reference) if there is one; 0 if not.  Ignores range tombstones
 * (the caller consults mem_range_iter).
 */
int mem_get(struct memtable *m, struct slice ukey, uint64_t hash, uint64_t snap_seq, int *type,
	    uint64_t *seq, struct slice *value);
/*
 * 0 if no point entry of m has a user key whose bloom_hash is hash; 1 if
 * one may have, and always 1 without a filter.  A few cache misses at most.
 */
int mem_may_contain(const struct memtable *m, uint64_t hash);

/* Iterator over point entries (internal keys).  Holds a reference to m. */
struct iter *mem_iter_new(struct memtable *m);
/* Iterator over range tombstones: key = ikey(start, seq, KT_RANGE_DEL), value = end. */
struct iter *mem_range_iter_new(struct memtable *m);
/*
 * The range tombstones indexed by range (rangedel.h), for readers that want
 * only those overlapping their keys: NULL when there are none.  The caller
 * releases it (rdel_view_release) and holds a reference to m meanwhile.
 */
struct rdel_view *mem_range_view(struct memtable *m);

size_t mem_bytes(const struct memtable *m);      /* arena bytes in use, and the range index's */
uint64_t mem_entries(const struct memtable *m);  /* point entries */
uint64_t mem_range_dels(const struct memtable *m);
uint64_t mem_max_seq(const struct memtable *m);  /* 0 when empty */

#endif
