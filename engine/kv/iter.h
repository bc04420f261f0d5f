/*
 * iter.h -- the engine's internal iterator: one interface for blocks,
 * SSTables, memtables, levels and their merge.
 *
 * An internal iterator walks (key, value) pairs in its comparator's order;
 * keys are internal keys (dbformat.h) except where a module says otherwise.
 * Key and value slices stay valid until the iterator moves or is destroyed.
 * An iterator that meets an error (corruption, I/O) becomes invalid and
 * reports it through status(); it never returns damaged data as entries.
 */
#ifndef SMOLFS_ITER_H
#define SMOLFS_ITER_H

#include "util.h"

struct iter;

struct iter_ops {
	int (*valid)(struct iter *it);
	void (*seek_first)(struct iter *it);
	void (*seek_last)(struct iter *it);
	void (*seek)(struct iter *it, struct slice target);  /* first entry >= target */
	void (*next)(struct iter *it);                        /* REQUIRES valid */
	void (*prev)(struct iter *it);                        /* REQUIRES valid */
	struct slice (*key)(struct iter *it);                 /* REQUIRES valid */
	struct slice (*value)(struct iter *it);               /* REQUIRES valid */
	int (*status)(struct iter *it);                       /* 0 or negative errno */
	void (*destroy)(struct iter *it);
	/*
	 * Optional (NULL: unknown): an upper bound on the sequence numbers of the
	 * entries in the file the iterator is positioned in, used to skip whole
	 * deleted ranges.  REQUIRES valid.
	 */
	uint64_t (*max_seq)(struct iter *it);
	/*
	 * Optional (NULL: value().len): the full length of the current value.
	 * An iterator that may hand out only a prefix of a value (an SSTable
	 * iterator in keys-only mode, sst.h) provides it, and so does every
	 * iterator that wraps others.  REQUIRES valid.
	 */
	uint64_t (*value_size)(struct iter *it);
};

/* Embed as the first member of each concrete iterator. */
struct iter {
	const struct iter_ops *ops;
};

static inline int iter_valid(struct iter *it) { return it->ops->valid(it); }
static inline void iter_seek_first(struct iter *it) { it->ops->seek_first(it); }
static inline void iter_seek_last(struct iter *it) { it->ops->seek_last(it); }
static inline void iter_seek(struct iter *it, struct slice t) { it->ops->seek(it, t); }
static inline void iter_next(struct iter *it) { it->ops->next(it); }
static inline void iter_prev(struct iter *it) { it->ops->prev(it); }
static inline struct slice iter_key(struct iter *it) { return it->ops->key(it); }
static inline struct slice iter_value(struct iter *it) { return it->ops->value(it); }
static inline int iter_status(struct iter *it) { return it->ops->status(it); }
static inline uint64_t iter_value_size(struct iter *it)
{
	return it->ops->value_size ? it->ops->value_size(it) : it->ops->value(it).len;
}
static inline void iter_destroy(struct iter *it) { if (it) it->ops->destroy(it); }

/* An iterator with no entries and the given status (0 or an error). */
struct iter *iter_empty(int status);

#endif
