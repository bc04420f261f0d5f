/*
 * batch.h -- the encoding of a write batch, which is also the payload of a
 * write-ahead-log record:
 *
 *     fixed64 first sequence | fixed32 count | mutations...
 *
 * each mutation being one type byte (KT_PUT, KT_DELETE, KT_RANGE_DEL) then a
 * varint32-length-prefixed key and, for KT_PUT, a length-prefixed value, and
 * for KT_RANGE_DEL a length-prefixed end key.  The i-th mutation takes
 * sequence first + i.
 *
 * A batch never grows past WAL_MAX_RECORD bytes (wal.h), so that it always
 * fits one log record: kv_batch_put and friends return -E2BIG instead.
 */
#ifndef SMOLFS_BATCH_H
#define SMOLFS_BATCH_H

#include "kv.h"
#include "dbformat.h"

#define BATCH_HEADER 12

struct kv_batch {
	struct buf rep;   /* header + mutations; rep.len >= BATCH_HEADER always */
	size_t count;
};

uint64_t batch_seq(const struct kv_batch *b);
void batch_set_seq(struct kv_batch *b, uint64_t seq);
/*
 * Append every mutation of src to dst (group commit merges batches).
 * REQUIRES: the sum fits one log record (check kv_batch_bytes first).
 */
void batch_append(struct kv_batch *dst, const struct kv_batch *src);

/*
 * Walk an encoded batch (from a batch or a WAL record), calling fn for each
 * mutation with its sequence.  value is the value (KT_PUT), the end key
 * (KT_RANGE_DEL) or empty (KT_DELETE).  Stops at the first nonzero return of
 * fn and returns it; -EUCLEAN if the encoding is damaged, in which case fn was
 * never called (the whole batch is checked with batch_check first).
 */
typedef int (*batch_fn)(void *arg, uint64_t seq, int type, struct slice key, struct slice value);
int batch_iterate(struct slice rep, batch_fn fn, void *arg);
/*
 * Validate an encoded batch: known types, every length within the bytes,
 * range tombstones with start < end, sequences within SEQ_MAX, and exactly
 * the mutations the header counts.  Sets *count; -EUCLEAN if damaged.
 */
int batch_check(struct slice rep, uint32_t *count);

#endif
