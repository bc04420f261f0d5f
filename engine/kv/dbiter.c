/*
 * dbiter.c -- the public iterator: one consistent snapshot of the database
 * as a sorted stream of live user keys.
 *
 * Beneath it a merging iterator walks every source's internal keys (active
 * and immutable memtables, each level-0 table, each deeper level), newest
 * version first for each user key.  This layer hides what the snapshot
 * cannot see (sequences above it), what is deleted (a deletion marker as the
 * newest visible version, or a range tombstone newer than the version), and
 * the older versions of each key.
 *
 * Range tombstones of the memtables that overlap the iterator's bounds are
 * gathered once, at creation, from each memtable's range index into one
 * fragmented set holding for each fragment the newest sequence visible at
 * the snapshot; the tables' are read from each table's own fragmented set
 * (version.h's tombstone cursor).  Cursors then answer "is this key
 * deleted" in amortised constant time per source.  When a key is covered,
 * every source whose newest entry is older than the tombstone is sought
 * straight past the fragment, so a deleted row or table is skipped, not
 * walked.
 *
 * Forward, the merging iterator stands on the entry being returned.
 * Backward, it stands just before all entries of the returned key, and the
 * key and value are copied aside (the versions of a key are met oldest first
 * going backward, so the answer is only known after passing them all).
 *
 * Keys-only (kv_read_options.keys_only): the tables' iterators are made
 * with SST_ITER_KEYS_ONLY, so a value alone in its data block is passed
 * without reading the block; every value is cut to its first
 * KV_VALUE_PREFIX bytes here (a table or memtable may hand over more), and
 * only those are copied aside going backward.
 */
#include "db.h"
#include "merge.h"
#include "sst.h"

_Static_assert(KV_VALUE_PREFIX <= SST_VALUE_PREFIX,
	       "a table's single-entry record keeps the bytes a keys-only iterator gives");

#include <stdlib.h>

struct kv_iter {
	struct kv_db *db;
	struct iter *merged;
	struct memtable *mem, *imm;
	struct version *v;
	uint64_t seq;
	struct rdel_set *tombs;              /* the memtables' tombstones at the snapshot */
	struct rdel_cursor cursor;
	struct vtomb_cursor *vcursor;        /* over the tables' tombstones */
	int has_tombs;                       /* the memtables or some table hold tombstones */
	struct buf lower, upper;
	int has_lower, has_upper;
	int reverse;
	int keys_only;
	int valid;
	int status;
	struct buf saved_key, saved_value;   /* reverse: the current entry; forward: scratch */
	size_t saved_value_size;             /* reverse: the current value's full length */
	struct buf seek_key;
};

/*
 * Append m's tombstones visible at the snapshot that overlap the iterator's
 * bounds: the memtable's index hands over only those, so the cost follows
 * the iterator's span, not what was deleted elsewhere in the tree.  The keys
 * point into the returned view (NULL if none), which the caller releases
 * once it has built its set (rdel_set_build copies them).
 */
static struct rdel_view *collect_mem(struct kv_iter *it, struct memtable *m, struct rtomb **t,
				     size_t *n, size_t *cap)
{
	struct slice lo = buf_slice(&it->lower), hi = buf_slice(&it->upper);
	struct rdel_view *v;

	if (!m || !(v = mem_range_view(m)))
		return NULL;
	rdel_view_collect(v, it->has_lower ? &lo : NULL, it->has_upper ? &hi : NULL, it->seq, t, n,
			  cap);
	return v;
}

struct kv_iter *kv_iter_new(struct kv_db *db, const struct kv_read_options *ro)
{
	struct kv_iter *it = xcalloc(1, sizeof(*it));
	struct kv_read_options none = { 0 };
	struct iter **children;
	size_t n = 0;
	struct rtomb *t = NULL;
	size_t nt = 0, cap = 0;
	struct rdel_view *vm, *vi;
	unsigned sst_flags;

	if (!ro)
		ro = &none;
	sst_flags = (ro->no_fill_cache ? 0 : SST_ITER_FILL_CACHE) |
		    (ro->keys_only ? SST_ITER_KEYS_ONLY : 0);
	it->keys_only = ro->keys_only != 0;
	it->db = db;
	if (ro->lower) {
		buf_set(&it->lower, ro->lower, ro->lower_len);
		it->has_lower = 1;
	}
	if (ro->upper) {
		buf_set(&it->upper, ro->upper, ro->upper_len);
		it->has_upper = 1;
	}

	pthread_mutex_lock(&db->mu);
	struct kv_tree *tree = db_tree(db, ro->tree);
	it->seq = ro->snapshot ? ((const struct snapshot_node *)ro->snapshot)->seq : db_last_seq(db);
	it->mem = tree->mem;
	mem_ref(it->mem);
	it->imm = tree->imm;
	if (it->imm)
		mem_ref(it->imm);
	it->v = tree->vt->current;
	version_ref(it->v);
	pthread_mutex_unlock(&db->mu);

	children = xmalloc((3 + it->v->nfiles[0] + NUM_LEVELS) * sizeof(*children));
	children[n++] = mem_iter_new(it->mem);
	if (it->imm)
		children[n++] = mem_iter_new(it->imm);
	for (size_t i = 0; i < it->v->nfiles[0]; i++)
		children[n++] = tcache_iter(db->tc, it->v->files[0][i], sst_flags);
	for (int l = 1; l < NUM_LEVELS; l++)
		if (it->v->nfiles[l])
			children[n++] = level_iter_new(it->v, l, sst_flags);
	it->merged = merge_iter_new(children, n, ikey_cmp_fn);
	free(children);

	/*
	 * The memtables' tombstones within the bounds are gathered here; the
	 * tables' come fragmented once per version.
	 */
	vm = collect_mem(it, it->mem, &t, &nt, &cap);
	vi = collect_mem(it, it->imm, &t, &nt, &cap);
	it->tombs = rdel_set_build(t, nt, it->seq, 1);
	rdel_view_release(vm);
	rdel_view_release(vi);
	free(t);
	rdel_cursor_init(&it->cursor, it->tombs);
	it->vcursor = vtomb_cursor_new(it->v);
	it->has_tombs = rdel_set_count(it->tombs) > 0 || !vtomb_cursor_empty(it->vcursor);
	return it;
}

struct kv_iter *kv_iter_new_prefix(struct kv_db *db, const struct kv_snapshot *snap,
				   const void *prefix, size_t plen)
{
	struct kv_read_options ro = { .snapshot = snap, .lower = prefix ? prefix : "",
				      .lower_len = plen };
	struct buf up = BUF_INIT;
	struct kv_iter *it;
	size_t n = plen;

	/* the smallest key above every key with this prefix: drop trailing 0xff, add one */
	buf_set(&up, prefix, plen);
	while (n > 0 && (unsigned char)up.data[n - 1] == 0xff)
		n--;
	if (n > 0) {
		up.data[n - 1]++;
		ro.upper = up.data;
		ro.upper_len = n;
	}
	it = kv_iter_new(db, &ro);
	buf_free(&up);
	return it;
}

void kv_iter_free(struct kv_iter *it)
{
	struct kv_db *db;

	if (!it)
		return;
	db = it->db;
	iter_destroy(it->merged);
	vtomb_cursor_free(it->vcursor);
	rdel_set_free(it->tombs);
	mem_unref(it->mem);
	if (it->imm)
		mem_unref(it->imm);
	pthread_mutex_lock(&db->mu);
	/* the last reader of a replaced version releases the tables only it used */
	if (version_unref(it->v))
		db_delete_obsolete_files(db);
	pthread_mutex_unlock(&db->mu);
	buf_free(&it->lower);
	buf_free(&it->upper);
	buf_free(&it->saved_key);
	buf_free(&it->saved_value);
	buf_free(&it->seek_key);
	free(it);
}

/*
 * The newest tombstone visible at the snapshot covering uk, from the
 * memtables or the tables, and its fragment (for skipping); 0 if none.  A
 * table whose tombstones could not be read sets it->status: the callers
 * stop there, since they cannot tell whether uk is deleted.
 */
static uint64_t covering(struct kv_iter *it, struct slice uk, const struct rdel_frag **fr)
{
	const struct rdel_frag *vfr;
	uint64_t a, b;

	if (!it->has_tombs) {
		/* the common case: nothing to look up for each entry */
		*fr = NULL;
		return 0;
	}
	a = rdel_cursor_covering(&it->cursor, uk, it->seq);
	b = vtomb_cursor_covering(it->vcursor, uk, it->seq, &vfr);
	if (vtomb_cursor_status(it->vcursor))
		it->status = vtomb_cursor_status(it->vcursor);

	*fr = a >= b ? rdel_cursor_frag(&it->cursor) : vfr;
	return a >= b ? a : b;
}

static int above_upper(struct kv_iter *it, struct slice uk)
{
	return it->has_upper && slice_cmp(uk, buf_slice(&it->upper)) >= 0;
}

static int below_lower(struct kv_iter *it, struct slice uk)
{
	return it->has_lower && slice_cmp(uk, buf_slice(&it->lower)) < 0;
}

/*
 * uk@seq is covered by a visible tombstone: move every source that holds
 * nothing newer than that tombstone out of the fragment, forward to its end
 * or backward to just before its start.  Returns 1 if some source moved
 * (the merge is re-heaped and its top may have changed).
 */
static int skip_fragment(struct kv_iter *it, const struct rdel_frag *fr, uint64_t tomb,
			 int backward)
{
	struct iter **ch;
	size_t n = merge_iter_children(it->merged, &ch);
	int moved = 0;

	buf_clear(&it->seek_key);
	ikey_append(&it->seek_key, backward ? fr->start : fr->end, SEQ_MAX, KT_SEEK);
	for (size_t i = 0; i < n; i++) {
		struct iter *c = ch[i];
		if (!c->ops->max_seq || !iter_valid(c) || c->ops->max_seq(c) >= tomb)
			continue;
		struct slice uk = ikey_user(iter_key(c));
		if (backward ? slice_cmp(uk, fr->start) < 0 : slice_cmp(uk, fr->end) >= 0)
			continue;
		iter_seek(c, buf_slice(&it->seek_key));
		if (backward) {
			if (iter_valid(c))
				iter_prev(c);
			else if (!iter_status(c))
				iter_seek_last(c);
			/* a memtable may have gained entries in between (merge.c) */
			while (iter_valid(c) && slice_cmp(ikey_user(iter_key(c)), fr->start) >= 0)
				iter_prev(c);
		}
		moved = 1;
	}
	if (moved)
		merge_iter_reheap(it->merged);
	return moved;
}

/*
 * Forward: stop at the first visible, live entry at or after the merge's
 * position.  With skipping, entries of user key `skip` (saved_key) are
 * passed over first.
 */
static void find_next(struct kv_iter *it, int skipping)
{
	struct iter *m = it->merged;

	it->valid = 0;
	while (iter_valid(m)) {
		struct slice ik = iter_key(m), uk;
		uint64_t seq, tomb;

		if (!ikey_valid(ik)) {
			it->status = ERR_CORRUPT("%s: invalid internal key", it->db->dir);
			return;
		}
		seq = ikey_seq(ik);
		if (seq > it->seq) {
			iter_next(m);
			continue;
		}
		uk = ikey_user(ik);
		if (skipping && slice_cmp(uk, buf_slice(&it->saved_key)) <= 0) {
			iter_next(m);
			continue;
		}
		if (above_upper(it, uk))
			return;
		const struct rdel_frag *fr = NULL;
		tomb = it->has_tombs ? covering(it, uk, &fr) : 0;
		if (it->status)
			return;
		if (tomb > seq) {
			buf_set(&it->saved_key, uk.data, uk.len);
			skipping = 1;
			if (fr && skip_fragment(it, fr, tomb, 0))
				continue;
		} else if (ikey_type(ik) == KT_DELETE) {
			buf_set(&it->saved_key, uk.data, uk.len);
			skipping = 1;
		} else {
			it->valid = 1;
			return;
		}
		iter_next(m);
	}
	it->status = iter_status(m);
}

/*
 * Backward: the merge stands on the last entry not yet considered.  Walk
 * back, remembering the newest visible version of the current user key; when
 * the user key changes and that version is a live value, it is the answer.
 */
static void find_prev(struct kv_iter *it)
{
	struct iter *m = it->merged;
	int have = 0;   /* saved_key/value hold a live candidate */

	it->valid = 0;
	while (iter_valid(m)) {
		struct slice ik = iter_key(m), uk;
		uint64_t seq;

		if (!ikey_valid(ik)) {
			it->status = ERR_CORRUPT("%s: invalid internal key", it->db->dir);
			return;
		}
		seq = ikey_seq(ik);
		uk = ikey_user(ik);
		if (seq <= it->seq) {
			if (have && slice_cmp(uk, buf_slice(&it->saved_key)) < 0)
				break;   /* all versions of the candidate are behind us */
			if (below_lower(it, uk)) {
				have = 0;
				break;
			}
			const struct rdel_frag *fr;
			uint64_t tomb = covering(it, uk, &fr);
			if (it->status)
				return;
			if (tomb > seq) {
				have = 0;
				if (fr && skip_fragment(it, fr, tomb, 1))
					continue;
			} else if (ikey_type(ik) == KT_DELETE) {
				have = 0;
			} else if (!above_upper(it, uk)) {
				struct slice v = iter_value(m);
				buf_set(&it->saved_key, uk.data, uk.len);
				it->saved_value_size = it->keys_only ? iter_value_size(m) : v.len;
				if (it->keys_only && v.len > KV_VALUE_PREFIX)
					v.len = KV_VALUE_PREFIX;
				buf_set(&it->saved_value, v.data, v.len);
				have = 1;
			}
		}
		iter_prev(m);
	}
	if (!iter_valid(m) && iter_status(m)) {
		it->status = iter_status(m);
		return;
	}
	it->valid = have;
}

void kv_iter_seek(struct kv_iter *it, const void *key, size_t klen)
{
	struct slice k = slice_make(key, klen);

	if (it->status)
		return;
	if (below_lower(it, k))
		k = buf_slice(&it->lower);
	it->reverse = 0;
	buf_clear(&it->seek_key);
	ikey_append(&it->seek_key, k, it->seq, KT_SEEK);
	iter_seek(it->merged, buf_slice(&it->seek_key));
	find_next(it, 0);
}

void kv_iter_seek_first(struct kv_iter *it)
{
	if (it->status)
		return;
	if (it->has_lower) {
		struct buf lo = BUF_INIT;
		buf_set(&lo, it->lower.data, it->lower.len);
		kv_iter_seek(it, lo.data, lo.len);
		buf_free(&lo);
		return;
	}
	it->reverse = 0;
	iter_seek_first(it->merged);
	find_next(it, 0);
}

/* Put the merge on the last entry whose user key is < bound (or the very last). */
static void position_before(struct kv_iter *it, const struct slice *bound)
{
	if (bound) {
		buf_clear(&it->seek_key);
		ikey_append(&it->seek_key, *bound, SEQ_MAX, KT_SEEK);
		iter_seek(it->merged, buf_slice(&it->seek_key));
		if (iter_valid(it->merged))
			iter_prev(it->merged);
		else if (!iter_status(it->merged))
			iter_seek_last(it->merged);
	} else {
		iter_seek_last(it->merged);
	}
}

void kv_iter_seek_last(struct kv_iter *it)
{
	struct slice up = buf_slice(&it->upper);

	if (it->status)
		return;
	it->reverse = 1;
	position_before(it, it->has_upper ? &up : NULL);
	find_prev(it);
}

void kv_iter_seek_for_prev(struct kv_iter *it, const void *key, size_t klen)
{
	struct buf succ = BUF_INIT;
	struct slice b;

	if (it->status)
		return;
	/* the last key <= key is the last key < key + "\0" */
	buf_set(&succ, key, klen);
	buf_append(&succ, "", 1);
	b = buf_slice(&succ);
	if (it->has_upper && slice_cmp(b, buf_slice(&it->upper)) > 0)
		b = buf_slice(&it->upper);
	it->reverse = 1;
	position_before(it, &b);
	find_prev(it);
	buf_free(&succ);
}

int kv_iter_valid(const struct kv_iter *it)
{
	return it->valid && !it->status;
}

void kv_iter_next(struct kv_iter *it)
{
	if (!kv_iter_valid(it))
		return;
	if (it->reverse) {
		/* the merge stands before the current key: step onto it, then past it */
		it->reverse = 0;
		if (iter_valid(it->merged))
			iter_next(it->merged);
		else if (!iter_status(it->merged))
			iter_seek_first(it->merged);
	} else {
		struct slice uk = ikey_user(iter_key(it->merged));
		buf_set(&it->saved_key, uk.data, uk.len);
		iter_next(it->merged);
	}
	find_next(it, 1);
}

void kv_iter_prev(struct kv_iter *it)
{
	if (!kv_iter_valid(it))
		return;
	if (!it->reverse) {
		/* step back over every version of the current key */
		struct slice uk = ikey_user(iter_key(it->merged));
		buf_set(&it->saved_key, uk.data, uk.len);
		it->reverse = 1;
		for (;;) {
			iter_prev(it->merged);
			if (!iter_valid(it->merged))
				break;
			if (slice_cmp(ikey_user(iter_key(it->merged)), buf_slice(&it->saved_key)) < 0)
				break;
		}
		if (!iter_valid(it->merged) && iter_status(it->merged)) {
			it->status = iter_status(it->merged);
			it->valid = 0;
			return;
		}
	}
	find_prev(it);
}

const void *kv_iter_key(const struct kv_iter *it, size_t *klen)
{
	struct slice k;

	if (it->reverse) {
		*klen = it->saved_key.len;
		return it->saved_key.data ? it->saved_key.data : "";
	}
	k = ikey_user(iter_key(it->merged));
	*klen = k.len;
	return k.data;
}

const void *kv_iter_value(const struct kv_iter *it, size_t *vlen)
{
	struct slice v;

	if (it->reverse) {
		*vlen = it->saved_value.len;
		return it->saved_value.data ? it->saved_value.data : "";
	}
	v = iter_value(it->merged);
	if (it->keys_only && v.len > KV_VALUE_PREFIX)
		v.len = KV_VALUE_PREFIX;
	*vlen = v.len;
	return v.data ? v.data : "";
}

size_t kv_iter_value_size(const struct kv_iter *it)
{
	if (it->reverse)
		return it->saved_value_size;
	return (size_t)iter_value_size(it->merged);
}

int kv_iter_status(const struct kv_iter *it)
{
	return it->status;
}
