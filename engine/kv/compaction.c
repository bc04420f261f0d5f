/*
 * compaction.c -- the background work: flushing memtables to level 0 and
 * merging tables down the levels.
 *
 * Two threads: one flushes (so a long compaction never holds up the switch
 * of a full memtable), one compacts.  Both hold db->mu only to choose their
 * work and to install the result; the I/O runs without it.
 *
 * What a compaction drops.  Let S be the oldest sequence any reader can
 * still ask for (the oldest snapshot, or the last sequence).  For each user
 * key, versions come newest first.  A version is dropped when
 *   - a newer version of the same key has sequence <= S (every reader sees
 *     that one instead);
 *   - a range tombstone with sequence t, seq < t <= S, covers it;
 *   - it is a deletion marker with sequence <= S and no deeper level holds
 *     the key (nothing left for it to hide);
 *   - the compaction filter asks for it (only versions <= S that survived
 *     the rules above; in a level above others holding the key it becomes a
 *     deletion marker instead, so older versions below do not reappear).
 * Range tombstones are cut at the output files' boundaries; within a
 * fragment only sequences > S and the newest one <= S are kept, and that one
 * too is dropped when no deeper level overlaps the fragment.
 */
#include "db.h"
#include "filename.h"
#include "merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void db_pending_add(struct kv_db *db, uint64_t number)
{
	if (db->npending == db->pending_cap) {
		db->pending_cap = db->pending_cap ? db->pending_cap * 2 : 8;
		db->pending_outputs = xrealloc(db->pending_outputs,
					       db->pending_cap * sizeof(uint64_t));
	}
	db->pending_outputs[db->npending++] = number;
}

void db_pending_remove(struct kv_db *db, uint64_t number)
{
	for (size_t i = 0; i < db->npending; i++) {
		if (db->pending_outputs[i] == number) {
			db->pending_outputs[i] = db->pending_outputs[--db->npending];
			return;
		}
	}
}

static char *sst_path(struct kv_db *db, uint64_t number)
{
	return fname_sst(db->dir, number);
}

/*
 * What may be deleted, taken under mu: the live tables, the tables being
 * written, the oldest log any tree needs, the current manifest, the retired
 * logs the log thread still holds open, and the next file number.  A file
 * numbered from next_file on did not exist when this was taken (numbers are
 * never reused), so a file created while the directory is listed without
 * the lock is always kept.
 */
struct keep_set {
	uint64_t *live;
	size_t nlive;
	uint64_t min_log, wal_number, manifest_number, next_file;
};

uint64_t db_min_log(struct kv_db *db)
{
	uint64_t min = db->wal_number;

	/*
	 * A log is needed while some tree has writes in it that are not in a
	 * table: from that tree's log number on, unless its memtables are empty
	 * (then it has nothing in any log before the active one).
	 */
	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		if (t->dropped || !tree_in_memory(t))
			continue;
		if (t->vt->log_number < min)
			min = t->vt->log_number;
	}
	return min;
}

/* REQUIRES mu held. */
static void keep_set_take(struct kv_db *db, struct keep_set *k)
{
	size_t n;

	k->live = vs_live_files(db->vs, &k->nlive);
	n = k->nlive + db->npending + db->nretired;
	k->live = xrealloc(k->live, (n ? n : 1) * sizeof(*k->live));
	for (size_t j = 0; j < db->npending; j++)
		k->live[k->nlive++] = db->pending_outputs[j];
	/* a retired log goes once the log thread has closed it (it asks for a pass) */
	for (size_t j = 0; j < db->nretired; j++)
		k->live[k->nlive++] = db->retired[j].number;
	k->wal_number = db->wal_number;
	k->min_log = db_min_log(db);
	k->manifest_number = db->vs->manifest_number;
	k->next_file = db->vs->next_file;
}

static int keep_file(const struct keep_set *k, enum fname_kind kind, uint64_t num)
{
	if (kind != FNAME_LOG && kind != FNAME_SST && kind != FNAME_MANIFEST)
		return 1;
	if (num >= k->next_file)
		return 1;
	for (size_t j = 0; j < k->nlive; j++)
		if (k->live[j] == num)
			return 1;
	if (kind == FNAME_LOG)
		return num >= k->min_log || num == k->wal_number;
	if (kind == FNAME_MANIFEST)
		return num >= k->manifest_number;
	return 0;   /* a table no version names */
}

/* One pass, with mu released for the I/O.  REQUIRES mu held. */
static void delete_pass(struct kv_db *db)
{
	struct keep_set k;
	char **names;
	size_t n;

	keep_set_take(db, &k);
	pthread_mutex_unlock(&db->mu);
	if (env_list_dir(db->env, db->dir, &names, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			uint64_t num;
			enum fname_kind kind = fname_parse(names[i], &num);

			if (keep_file(&k, kind, num))
				continue;
			char *p = xasprintf("%s/%s", db->dir, names[i]);
			if (kind == FNAME_SST)
				tcache_evict(db->tc, num);   /* the cache has its own lock */
			if (env_unlink(db->env, p) == 0)
				db_log(db, KV_LOG_DEBUG, "deleted %s", names[i]);
			free(p);
		}
		env_free_list(names, n);
	}
	free(k.live);
	pthread_mutex_lock(&db->mu);
}

void db_delete_obsolete_files(struct kv_db *db)
{
	/* what made files obsolete may have done so to retired logs too */
	if (db->nretired)
		pthread_cond_signal(&db->log_cv);
	if (db->opt.read_only || db->bg_error)
		return;   /* a read-only open deletes nothing */
	if (db->deleting) {
		db->delete_again = 1;
		return;
	}
	db->deleting = 1;
	do {
		db->delete_again = 0;
		delete_pass(db);
	} while (db->delete_again && !db->bg_error);
	db->deleting = 0;
	pthread_cond_broadcast(&db->bg_cv);
}

/* Sync and close a finished output; on any failure remove it. */
static int finish_file(struct kv_db *db, struct env_file *f, const char *path, int ok)
{
	int r = ok ? env_sync(f) : 0, rc = env_close(f);

	if (r == 0)
		r = rc;
	if (!ok || r < 0)
		env_unlink(db->env, path);
	return r;
}

int db_output_compression(const struct kv_tree *t, const struct version *v, int out_level)
{
	int deepest = 0;

	if (t->compression_level <= 0)
		return 0;
	for (int l = NUM_LEVELS - 1; l > 0 && !deepest; l--)
		if (v->nfiles[l])
			deepest = l;
	return out_level > 0 && out_level >= deepest ? t->compression_level : DB_UPPER_ZSTD_LEVEL;
}

int db_write_level0(struct kv_db *db, struct kv_tree *t, struct memtable *m,
		    struct version_edit *edit, uint64_t *free_before)
{
	struct sst_options so = {
		db->opt.block_size, db->opt.block_restart_interval,
		db_output_compression(t, t->vt->current, 0), db->opt.bloom_bits_per_key,
	};
	uint64_t number = vs_new_file_number(db->vs);
	char *path = sst_path(db, number);
	struct sst_props props;
	struct sst_builder *b = NULL;
	struct env_file *f = NULL;
	struct iter *it;
	uint64_t done = 0;
	int r;

	memset(&props, 0, sizeof(props));
	db_pending_add(db, number);
	pthread_mutex_unlock(&db->mu);

	if (free_before)
		*free_before = db_free_space(db);
	r = env_open_append(db->env, path, &f);
	if (r < 0)
		goto out;
	b = sst_builder_new(f, &so, path);
	it = mem_iter_new(m);
	/* the progress the writers pace themselves by (pace_writes in db.c), from 0 on a retry */
	__atomic_store_n(&t->imm_done, 0, __ATOMIC_RELAXED);
	for (iter_seek_first(it); r == 0 && iter_valid(it); iter_next(it)) {
		r = sst_builder_add(b, iter_key(it), iter_value(it));
		if (++done % 32 == 0)
			__atomic_store_n(&t->imm_done, done, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&t->imm_done, done, __ATOMIC_RELAXED);
	iter_destroy(it);
	it = mem_range_iter_new(m);
	for (iter_seek_first(it); r == 0 && iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it);
		r = sst_builder_add_range_del(b, ikey_user(k), iter_value(it), ikey_seq(k));
	}
	iter_destroy(it);
	if (r == 0)
		r = sst_builder_finish(b, &props);
	sst_builder_free(b);
	/* the builder's error comes first: a finish that succeeds cannot undo it */
	{
		int rf = finish_file(db, f, path, r == 0);
		if (r == 0)
			r = rf;
	}
	if (r == 0)
		r = env_sync_dir(db->env, db->dir);
out:
	pthread_mutex_lock(&db->mu);
	if (r == 0) {
		edit_add_file(edit, 0, number, props.file_size, buf_slice(&props.smallest),
			      buf_slice(&props.largest), props.smallest_seq, props.largest_seq,
			      props.num_entries, props.num_range_dels);
		db_count(&db->stats.flushes, 1);
		db_count(&db->stats.bytes_flushed, props.file_size);
		db_log(db, KV_LOG_DEBUG, "flushed %llu entries to %06llu.sst (%llu bytes)",
		       (unsigned long long)props.num_entries, (unsigned long long)number,
		       (unsigned long long)props.file_size);
	}
	sst_props_free(&props);
	free(path);
	return r;
}

/* A tree with a memtable waiting to be flushed, or NULL.  REQUIRES mu held. */
static struct kv_tree *flush_candidate(struct kv_db *db)
{
	for (size_t i = 0; i < db->ntrees; i++)
		if (db->trees[i]->imm && !db->trees[i]->dropped)
			return db->trees[i];
	return NULL;
}

void *db_flush_main(void *arg)
{
	struct kv_db *db = arg;

	pthread_setname_np(pthread_self(), DB_THREAD_FLUSH);   /* a name only: a failure is harmless */
	pthread_mutex_lock(&db->mu);
	while (!db->shutting_down) {
		struct kv_tree *t;
		struct version_edit edit;
		uint64_t number, free_before = UINT64_MAX;
		int r;

		if (db->bg_error) {
			db_bg_wait(db);   /* until a transient error's retry */
			continue;
		}
		if (db->delete_wanted) {
			/* for the log thread, which must not wait in an unlink (db_log_main) */
			db->delete_wanted = 0;
			db_delete_obsolete_files(db);
			continue;
		}
		t = flush_candidate(db);
		if (!t) {
			pthread_cond_wait(&db->work_cv, &db->mu);
			continue;
		}
		edit_init(&edit);
		edit.tree = t->id;
		r = db_write_level0(db, t, t->imm, &edit, &free_before);
		number = edit.nadds ? edit.adds[0].f->number : 0;
		if (r == 0)
			db_sync_logs_before(db, t, t->imm_log_boundary);
		if (r == 0) {
			/* this tree's writes in logs before the switch are now in a table */
			edit_set_log(&edit, t->imm_log_boundary, t->imm_log_seq);
			edit.has_last_seq = 1;
			edit.last_seq = db_last_seq(db);
			r = vs_log_and_apply(db->vs, &edit);
		}
		if (number)
			db_pending_remove(db, number);
		edit_free(&edit);
		if (r == 0) {
			mem_unref(t->imm);
			t->imm = NULL;
			db->bg_backoff = 0;
			db_delete_obsolete_files(db);
		} else {
			/* imm stays, and so do the logs holding it: the retry writes it again */
			db_set_bg_error(db, r, "flush", free_before);
		}
		pthread_cond_broadcast(&db->bg_cv);
		pthread_cond_broadcast(&db->work_cv);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

/* ------------------------------------------------------------ compaction */

struct compaction {
	struct kv_tree *tree;
	int level;                       /* inputs from level and (unless in place) level + 1 */
	int out_level;                   /* level + 1, or level for an in-place rewrite */
	struct file_meta **in[2];
	size_t nin[2];
	struct version *v;               /* the version the inputs belong to */
	int manual;
	uint64_t free_before;            /* db_free_space when it began (trivial moves too) */
};

static void compaction_free(struct kv_db *db, struct compaction *c)
{
	free(c->in[0]);
	free(c->in[1]);
	if (c->v)
		version_unref(c->v);
	(void)db;
	free(c);
}

/* The user-key range of a set of files. */
static void range_of(struct file_meta **fs, size_t n, struct buf *lo, struct buf *hi)
{
	for (size_t i = 0; i < n; i++) {
		struct slice s = fm_smallest_user(fs[i]), l = fm_largest_user(fs[i]);
		if (i == 0 || slice_cmp(s, buf_slice(lo)) < 0)
			buf_set(lo, s.data, s.len);
		if (i == 0 || slice_cmp(l, buf_slice(hi)) > 0)
			buf_set(hi, l.data, l.len);
	}
}

/* Inputs at level + 1 for the chosen level inputs. */
static void add_next_level(struct compaction *c)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	struct slice slo, shi;

	range_of(c->in[0], c->nin[0], &lo, &hi);
	slo = buf_slice(&lo);
	shi = buf_slice(&hi);
	c->in[1] = version_overlapping(c->v, c->level + 1, &slo, &shi, 0, &c->nin[1]);
	buf_free(&lo);
	buf_free(&hi);
}

/*
 * A manual compaction's merge into the bottom level takes every bottom
 * file in its range, not only those the inputs above overlap: so each of
 * them is rewritten once, here, and none is left for the rewrite in place
 * that follows (kv_compact_range_tree), which would write the whole level
 * a second time.  Merging them here also lets a compaction filter see all
 * of a key's neighbours in the range at once, as the rewrite in place did.
 */
static void add_bottom_range(struct compaction *c, const struct manual_compaction *m)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	struct slice slo, shi;

	range_of(c->in[0], c->nin[0], &lo, &hi);
	slo = buf_slice(&lo);
	shi = buf_slice(&hi);
	if (m->has_lo && slice_cmp(buf_slice(&m->lo), slo) < 0)
		slo = buf_slice(&m->lo);
	if (m->has_hi && slice_cmp(buf_slice(&m->hi), shi) > 0)
		shi = buf_slice(&m->hi);
	free(c->in[1]);
	c->in[1] = version_overlapping(c->v, c->level + 1, m->has_lo ? &slo : NULL,
				       m->has_hi ? &shi : NULL, 0, &c->nin[1]);
	buf_free(&lo);
	buf_free(&hi);
}

/*
 * Level-0 inputs that overlap nothing in level 1 would make level-1 tables
 * no bigger than themselves: a load in key order with small memtables would
 * leave thousands of small tables.  When the level-1 table just before the
 * inputs' range (the one a load in key order wrote last) is smaller than
 * half the target size, it joins the compaction, so the outputs grow to the
 * target size.  Nothing lies between it and the range, so level 1 stays
 * disjoint.
 */
static void add_small_neighbour(struct kv_db *db, struct compaction *c)
{
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	struct file_meta *prev = NULL;
	size_t n = c->v->nfiles[1];

	range_of(c->in[0], c->nin[0], &lo, &hi);
	for (size_t i = 0; i < n; i++) {
		struct file_meta *f = c->v->files[1][i];
		if (slice_cmp(fm_smallest_user(f), buf_slice(&lo)) >= 0)
			break;
		prev = f;
	}
	if (prev && prev->size < db->opt.target_file_size / 2 &&
	    slice_cmp(fm_largest_user(prev), buf_slice(&lo)) < 0) {
		c->in[1] = xrealloc(c->in[1], sizeof(*c->in[1]));
		c->in[1][0] = prev;
		c->nin[1] = 1;
	}
	buf_free(&lo);
	buf_free(&hi);
}

/* The live tree most in need of compaction (score >= 1), or NULL.  REQUIRES mu held. */
static struct kv_tree *neediest_tree(struct kv_db *db)
{
	struct kv_tree *best = NULL;

	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		if (!t->dropped && !t->dropping && t->vt->current->score >= 1 &&
		    (!best || t->vt->current->score > best->vt->current->score))
			best = t;
	}
	return best;
}

/* REQUIRES mu held. */
static struct compaction *pick_compaction(struct kv_db *db)
{
	struct manual_compaction *m = db->manual;
	struct kv_tree *t = m ? m->tree : neediest_tree(db);
	struct compaction *c;
	struct version *v;

	if (!t || t->dropped || t->dropping)
		return NULL;
	v = t->vt->current;
	c = xcalloc(1, sizeof(*c));
	c->tree = t;
	c->v = v;
	c->free_before = UINT64_MAX;   /* until it begins to write */
	version_ref(v);
	if (m) {
		struct slice lo = buf_slice(&m->lo), hi = buf_slice(&m->hi);
		c->manual = 1;
		c->level = m->level;
		c->in[0] = version_overlapping(v, m->level, m->has_lo ? &lo : NULL,
					       m->has_hi ? &hi : NULL, 1, &c->nin[0]);
		if (m->in_place) {
			/*
			 * The bottom level rewritten into itself: nothing below to
			 * merge with.  Not the files written there since this
			 * manual compaction began (merging the level above with all
			 * of the bottom's files in the range, add_bottom_range, or
			 * automatic compactions meanwhile): they were written with
			 * everything droppable dropped.  What is rewritten stays one
			 * run of neighbours, from the first older file to the last,
			 * newer ones between them included, so its outputs cannot
			 * overlap a file left out.
			 */
			size_t first = c->nin[0], last = 0;

			for (size_t i = 0; i < c->nin[0]; i++)
				if (c->in[0][i]->number < m->first_new) {
					if (first == c->nin[0])
						first = i;
					last = i;
				}
			if (first == c->nin[0]) {
				c->nin[0] = 0;
			} else {
				memmove(c->in[0], c->in[0] + first,
					(last - first + 1) * sizeof(c->in[0][0]));
				c->nin[0] = last - first + 1;
			}
			c->out_level = c->level;
			if (c->nin[0] == 0) {
				compaction_free(db, c);
				return NULL;
			}
			return c;
		}
	} else if (v->score_level == 0) {
		c->level = 0;
		c->in[0] = version_overlapping(v, 0, NULL, NULL, 1, &c->nin[0]);
	} else {
		int l = c->level = v->score_level;
		struct buf *cp = &t->vt->compact_pointer[l];
		size_t i = 0;

		if (cp->len)
			while (i < v->nfiles[l] &&
			       ikey_cmp(buf_slice(&v->files[l][i]->largest), buf_slice(cp)) <= 0)
				i++;
		if (i == v->nfiles[l])
			i = 0;
		c->in[0] = xmalloc(sizeof(struct file_meta *));
		c->in[0][0] = v->files[l][i];
		c->nin[0] = 1;
	}
	if (c->nin[0] == 0) {
		compaction_free(db, c);
		return NULL;
	}
	c->out_level = c->level + 1;
	add_next_level(c);
	if (m && m->into_bottom)
		add_bottom_range(c, m);
	if (c->level == 0 && !c->manual && c->nin[1] == 0)
		add_small_neighbour(db, c);
	return c;
}

static int by_smallest_user(const void *a, const void *b)
{
	return slice_cmp(fm_smallest_user(*(struct file_meta *const *)a),
			 fm_smallest_user(*(struct file_meta *const *)b));
}

/*
 * Can the inputs move down a level as they are, without being rewritten?
 * When nothing in the next level overlaps them and their own user-key
 * ranges are disjoint: the next level then stays sorted and disjoint.  A
 * level-0 compaction takes every level-0 table, and those may overlap; but
 * a load in key order writes ones that do not, and moving them saves
 * reading, decompressing, compressing and writing all of it once more.
 * Nothing is dropped on the way, so a tree with a compaction filter keeps
 * rewriting its level-0 tables: their first compaction is where the filter
 * first sees what was written (the table layer's garbage collection).
 */
static int moves_trivially(struct kv_db *db, const struct compaction *c)
{
	struct file_meta **s;
	int ok = 1;

	if (c->manual || c->nin[1] != 0 || c->nin[0] == 0)
		return 0;
	if (c->level == 0 && c->tree->filter)
		return 0;
	/*
	 * Small level-0 tables (small memtables) are merged instead, else a
	 * load in key order leaves one tiny table per flush in every level.
	 */
	for (size_t i = 0; c->level == 0 && i < c->nin[0]; i++)
		if (c->in[0][i]->size < db->opt.target_file_size / 2)
			return 0;
	if (c->nin[0] == 1)
		return 1;
	s = xmalloc(c->nin[0] * sizeof(*s));
	memcpy(s, c->in[0], c->nin[0] * sizeof(*s));
	qsort(s, c->nin[0], sizeof(*s), by_smallest_user);
	for (size_t i = 1; i < c->nin[0] && ok; i++)
		ok = slice_cmp(fm_largest_user(s[i - 1]), fm_smallest_user(s[i])) < 0;
	free(s);
	return ok;
}

/* Tells, for user keys in increasing order, whether a level below the output holds them. */
struct base_check {
	struct version *v;
	int from_level;
	size_t pos[NUM_LEVELS];
};

static int deeper_has(struct base_check *bc, struct slice lo, struct slice hi)
{
	for (int l = bc->from_level; l < NUM_LEVELS; l++) {
		struct file_meta **fs = bc->v->files[l];
		size_t n = bc->v->nfiles[l];
		while (bc->pos[l] < n && slice_cmp(fm_largest_user(fs[bc->pos[l]]), lo) < 0)
			bc->pos[l]++;
		if (bc->pos[l] < n && slice_cmp(fm_smallest_user(fs[bc->pos[l]]), hi) <= 0)
			return 1;
	}
	return 0;
}

/* For tombstone fragments (not in key order with point keys): a fresh scan. */
static int deeper_overlaps(struct version *v, int from_level, struct slice lo, struct slice hi)
{
	for (int l = from_level; l < NUM_LEVELS; l++)
		for (size_t i = 0; i < v->nfiles[l]; i++)
			if (slice_cmp(fm_largest_user(v->files[l][i]), lo) >= 0 &&
			    slice_cmp(fm_smallest_user(v->files[l][i]), hi) < 0)
				return 1;
	return 0;
}

struct output {
	uint64_t number;
	char *path;
	struct env_file *f;
	struct sst_builder *b;
	struct buf lo;         /* tombstones from here (empty with has_lo = 0: unbounded) */
	int has_lo;
};

struct compact_state {
	struct kv_db *db;
	struct compaction *c;
	struct sst_options so;
	uint64_t oldest;
	struct rdel_set *tombs;
	struct output cur;
	int open;
	struct version_edit edit;
	uint64_t *outputs;
	size_t noutputs;
	uint64_t bytes_written;
};

static int open_output(struct compact_state *cs, struct slice lo, int has_lo)
{
	struct kv_db *db = cs->db;
	int r;

	pthread_mutex_lock(&db->mu);
	cs->cur.number = vs_new_file_number(db->vs);
	db_pending_add(db, cs->cur.number);
	pthread_mutex_unlock(&db->mu);
	cs->outputs = xrealloc(cs->outputs, (cs->noutputs + 1) * sizeof(uint64_t));
	cs->outputs[cs->noutputs++] = cs->cur.number;
	cs->cur.path = sst_path(db, cs->cur.number);
	r = env_open_append(db->env, cs->cur.path, &cs->cur.f);
	if (r < 0) {
		free(cs->cur.path);
		return r;
	}
	cs->cur.b = sst_builder_new(cs->cur.f, &cs->so, cs->cur.path);
	buf_set(&cs->cur.lo, lo.data, lo.len);
	cs->cur.has_lo = has_lo;
	cs->open = 1;
	return 0;
}

/* Add the tombstone pieces inside [cur.lo, hi) (hi NULL: unbounded) to the open output. */
static int add_tombstones(struct compact_state *cs, const struct slice *hi)
{
	const struct rdel_set *s = cs->tombs;
	struct slice lo = buf_slice(&cs->cur.lo);
	size_t i = cs->cur.has_lo ? rdel_set_find(s, lo) : 0;
	int r = 0;

	for (; i < rdel_set_count(s) && r == 0; i++) {
		const struct rdel_frag *fr = rdel_set_frag(s, i);
		struct slice a = fr->start, b = fr->end;
		if (hi && slice_cmp(a, *hi) >= 0)
			break;
		if (cs->cur.has_lo && slice_cmp(a, lo) < 0)
			a = lo;
		if (hi && slice_cmp(b, *hi) > 0)
			b = *hi;
		if (slice_cmp(a, b) >= 0)
			continue;
		int kept_old = 0;
		for (size_t k = 0; k < fr->nseqs && r == 0; k++) {
			uint64_t seq = fr->seqs[k];
			if (seq <= cs->oldest) {
				if (kept_old)
					break;   /* older ones are shadowed for every reader */
				kept_old = 1;
				if (!deeper_overlaps(cs->c->v, cs->c->out_level + 1, a, b))
					break;   /* nothing below for it to delete */
			}
			r = sst_builder_add_range_del(cs->cur.b, a, b, seq);
		}
	}
	return r;
}

static int close_output(struct compact_state *cs, const struct slice *hi, int ok)
{
	struct sst_props props;
	int r = ok ? add_tombstones(cs, hi) : 0;

	memset(&props, 0, sizeof(props));
	if (ok && r == 0)
		r = sst_builder_finish(cs->cur.b, &props);
	sst_builder_free(cs->cur.b);
	r = finish_file(cs->db, cs->cur.f, cs->cur.path, ok && r == 0) ?: r;
	if (ok && r == 0) {
		if (props.num_entries + props.num_range_dels == 0) {
			env_unlink(cs->db->env, cs->cur.path);
		} else {
			edit_add_file(&cs->edit, cs->c->out_level, cs->cur.number, props.file_size,
				      buf_slice(&props.smallest), buf_slice(&props.largest),
				      props.smallest_seq, props.largest_seq, props.num_entries,
				      props.num_range_dels);
			cs->bytes_written += props.file_size;
		}
	}
	sst_props_free(&props);
	free(cs->cur.path);
	cs->open = 0;
	return r;
}

/*
 * Gather every input's tombstones (all sequences) into one fragmented set,
 * in *out; or the error of an input that could not be opened (a compaction
 * without its tombstones would bring back what they deleted).
 */
static int input_tombstones(struct kv_db *db, struct compaction *c, struct rdel_set **out)
{
	struct cache_handle **pins = NULL;
	size_t npins = 0, n = 0, cap = 0;
	struct rtomb *t = NULL;
	int r = 0;

	*out = NULL;
	for (int w = 0; w < 2 && r == 0; w++) {
		for (size_t i = 0; i < c->nin[w] && r == 0; i++) {
			struct file_meta *f = c->in[w][i];
			struct cache_handle *h;
			struct sst *tb;
			if (!f->range_dels)
				continue;
			if ((r = tcache_get(db->tc, f, &tb, &h)) < 0)
				break;
			pins = xrealloc(pins, (npins + 1) * sizeof(*pins));
			pins[npins++] = h;
			const struct rdel_set *fs = sst_range_dels(tb);
			for (size_t j = 0; j < rdel_set_count(fs); j++) {
				const struct rdel_frag *fr = rdel_set_frag(fs, j);
				for (size_t k = 0; k < fr->nseqs; k++) {
					if (n == cap) {
						cap = cap ? cap * 2 : 16;
						t = xrealloc(t, cap * sizeof(*t));
					}
					t[n].start = fr->start;
					t[n].end = fr->end;
					t[n].seq = fr->seqs[k];
					n++;
				}
			}
		}
	}
	/* the set copies the keys; the tables may close after this */
	if (r == 0)
		*out = rdel_set_build(t, n, SEQ_MAX, 0);
	for (size_t i = 0; i < npins; i++)
		tcache_release(db->tc, pins[i]);
	free(pins);
	free(t);
	return r;
}

/*
 * Subcompactions.  A large compaction is cut into key ranges, each merged
 * by its own thread into its own output tables, and the outputs are
 * recorded in one manifest edit: on a machine of several cores a merge,
 * which is decompression, comparisons and compression, goes that many
 * times faster.  The cuts are at the first keys of the tables of the
 * sorted level among the inputs (the output level's, or the input level's
 * when it is not 0), chosen so that each range holds about as many of
 * their bytes; level-0 inputs overlap one another and give no cuts, so a
 * compaction from level 0 is not cut unless two tables of level 1 or more
 * are among its inputs.  A range is
 * like the cut between two output files: a key's versions never straddle
 * it, and range tombstones are cut at it.  Each range starts its own
 * state of the compaction filter, which then sees the keys of its range
 * alone, in order.
 */
#define SUBCOMPACT_MIN_FILES 8     /* inputs of fewer times target_file_size are not cut */
#define SUBCOMPACT_DEFAULT_MAX 4

struct subcompaction {
	struct compact_state cs;       /* its outputs, recorded in its own edit */
	struct buf lo, hi;             /* its user keys: [lo, hi); unbounded without has_ */
	int has_lo, has_hi;
	int r;
	char *msg;                     /* a thread's error message (messages are per thread) */
	pthread_t thread;
	int started;
};

/*
 * How many ranges compaction c is cut into, the first keys of all but the
 * first written to cuts (user keys, increasing).  1: not cut.
 */
static size_t plan_cuts(struct kv_db *db, const struct compaction *c, struct buf *cuts,
			size_t max)
{
	int w = c->nin[1] >= 2 ? 1 : c->level > 0 ? 0 : -1;
	struct file_meta **fs;
	uint64_t total = 0, in_bytes = 0, sum = 0;
	size_t n, k = 1;

	if (w < 0 || max < 2)
		return 1;
	fs = c->in[w];
	n = c->nin[w];
	for (int x = 0; x < 2; x++)
		for (size_t i = 0; i < c->nin[x]; i++)
			in_bytes += c->in[x][i]->size;
	if (n < 2 || in_bytes < (uint64_t)SUBCOMPACT_MIN_FILES * db->opt.target_file_size)
		return 1;
	for (size_t i = 0; i < n; i++)
		total += fs[i]->size;
	if (max > n)
		max = n;
	for (size_t i = 0; i + 1 < n && k < max; i++) {
		sum += fs[i]->size;
		if (sum * max >= total * k) {
			struct slice key = fm_smallest_user(fs[i + 1]);
			if (k > 1 && slice_cmp(key, buf_slice(&cuts[k - 2])) <= 0)
				continue;
			buf_set(&cuts[k - 1], key.data, key.len);
			k++;
		}
	}
	return k;
}

/* Merge the inputs of s's range into its outputs.  Runs without db->mu. */
static int merge_range(struct subcompaction *s)
{
	struct compact_state *cs = &s->cs;
	struct kv_db *db = cs->db;
	struct compaction *c = cs->c;
	struct kv_compaction_filter *filter = c->tree->filter;
	struct slice lo = buf_slice(&s->lo), hi = buf_slice(&s->hi);
	struct iter **children, *merged;
	size_t nchildren = 0;
	struct base_check bc;
	struct buf cur_key = BUF_INIT, last_added = BUF_INIT, seek = BUF_INIT;
	int have_key = 0, r = 0;
	uint64_t last_seq_for_key = SEQ_MAX;
	void *filter_state = NULL;

	memset(&bc, 0, sizeof(bc));
	bc.v = c->v;
	bc.from_level = c->out_level + 1;
	children = xmalloc((c->nin[0] + c->nin[1] + 1) * sizeof(*children));
	for (int w = 0; w < 2; w++) {
		for (size_t i = 0; i < c->nin[w]; i++) {
			struct file_meta *f = c->in[w][i];
			if ((s->has_lo && slice_cmp(fm_largest_user(f), lo) < 0) ||
			    (s->has_hi && slice_cmp(fm_smallest_user(f), hi) >= 0))
				continue;   /* none of its keys in the range */
			children[nchildren++] = tcache_iter(db->tc, f, 0);
		}
	}
	merged = merge_iter_new(children, nchildren, ikey_cmp_fn);
	free(children);
	if (filter && filter->start)
		filter_state = filter->start(filter->arg);

	if (s->has_lo) {
		ikey_append(&seek, lo, SEQ_MAX, KT_SEEK);
		iter_seek(merged, buf_slice(&seek));
	} else {
		iter_seek_first(merged);
	}
	for (; iter_valid(merged); iter_next(merged)) {
		struct slice ik = iter_key(merged), uk;
		uint64_t seq;
		int type, drop = 0;

		if (__atomic_load_n(&db->shutting_down, __ATOMIC_RELAXED)) {
			r = -ECANCELED;
			break;
		}
		if (!ikey_valid(ik)) {
			r = ERR_CORRUPT("%s: invalid internal key in a compaction input", db->dir);
			break;
		}
		uk = ikey_user(ik);
		if (s->has_hi && slice_cmp(uk, hi) >= 0)
			break;
		seq = ikey_seq(ik);
		type = ikey_type(ik);
		if (!have_key || !slice_eq(uk, buf_slice(&cur_key))) {
			buf_set(&cur_key, uk.data, uk.len);
			have_key = 1;
			last_seq_for_key = SEQ_MAX;
		}
		if (last_seq_for_key <= cs->oldest)
			drop = 1;
		else if (rdel_set_covering(cs->tombs, uk, cs->oldest) > seq)
			drop = 1;
		else if (type == KT_DELETE && seq <= cs->oldest && !deeper_has(&bc, uk, uk))
			drop = 1;
		last_seq_for_key = seq;

		struct slice value = iter_value(merged);
		struct buf del = BUF_INIT;
		if (!drop && type == KT_PUT && filter && seq <= cs->oldest &&
		    filter->filter(filter_state, uk.data, uk.len, value.data, value.len)) {
			if (!deeper_has(&bc, uk, uk)) {
				drop = 1;
			} else {
				ikey_append(&del, uk, seq, KT_DELETE);
				ik = buf_slice(&del);
				value = slice_make(NULL, 0);
			}
		}
		if (!drop) {
			if (cs->open && sst_builder_file_size(cs->cur.b) >= db->opt.target_file_size) {
				/* cut between user keys only: a key's versions stay in one file */
				if (!slice_eq(uk, buf_slice(&last_added)))
					r = close_output(cs, &uk, 1);
			}
			/* the range's first file takes its tombstones from the range's start */
			if (r == 0 && !cs->open)
				r = cs->noutputs ? open_output(cs, uk, 1) : open_output(cs, lo, s->has_lo);
			if (r == 0)
				r = sst_builder_add(cs->cur.b, ik, value);
			buf_set(&last_added, uk.data, uk.len);
		}
		buf_free(&del);
		if (r < 0)
			break;
	}
	if (r == 0)
		r = iter_status(merged);
	if (r == 0 && !cs->open && rdel_set_count(cs->tombs) > 0)
		r = open_output(cs, lo, s->has_lo);   /* an output empty of tombstones is removed */
	if (cs->open)
		r = close_output(cs, s->has_hi ? &hi : NULL, r == 0) ?: r;
	iter_destroy(merged);
	if (filter && filter->finish)
		filter->finish(filter_state);
	buf_free(&cur_key);
	buf_free(&last_added);
	buf_free(&seek);
	return r;
}

static void *subcompaction_main(void *arg)
{
	struct subcompaction *s = arg;

	/* the compaction thread's name: env_fault_hold_in holds both alike */
	pthread_setname_np(pthread_self(), DB_THREAD_COMPACT);
	s->r = merge_range(s);
	if (s->r < 0)
		s->msg = xstrdup(kv_strerror(s->r));
	return NULL;
}

/* How many ranges a compaction may be cut into: the option, else the cores, at most 4. */
static size_t max_subcompactions(struct kv_db *db)
{
	long n = db->opt.max_subcompactions;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n > SUBCOMPACT_DEFAULT_MAX)
			n = SUBCOMPACT_DEFAULT_MAX;
	}
	return n < 1 ? 1 : (size_t)n;
}

/*
 * Run compaction c.  REQUIRES mu held; releases it during the merge.
 */
static int run_compaction(struct kv_db *db, struct compaction *c)
{
	struct compact_state cs;
	struct subcompaction *subs;
	struct buf *cuts;
	struct rdel_set *tombs;
	size_t nsubs, max, noutputs = 0;
	int r = 0;
	uint64_t bytes_read = 0;

	/* a message left from an earlier failure would name the wrong file */
	err_clear();
	/* what a failure's retry compares with (db_set_bg_error); a system call, so without mu */
	pthread_mutex_unlock(&db->mu);
	c->free_before = db_free_space(db);
	pthread_mutex_lock(&db->mu);
	memset(&cs, 0, sizeof(cs));
	cs.db = db;
	cs.c = c;
	cs.so = (struct sst_options){ db->opt.block_size, db->opt.block_restart_interval,
				      db_output_compression(c->tree, c->v, c->out_level),
				      db->opt.bloom_bits_per_key };
	edit_init(&cs.edit);
	cs.edit.tree = c->tree->id;
	cs.oldest = db_oldest_snapshot(db);

	if (moves_trivially(db, c)) {
		for (size_t i = 0; i < c->nin[0]; i++) {
			struct file_meta *f = c->in[0][i];
			edit_del_file(&cs.edit, c->level, f->number);
			edit_add_file(&cs.edit, c->level + 1, f->number, f->size,
				      buf_slice(&f->smallest), buf_slice(&f->largest),
				      f->smallest_seq, f->largest_seq, f->entries, f->range_dels);
		}
		cs.edit.has_last_seq = 1;
		cs.edit.last_seq = db_last_seq(db);
		r = vs_log_and_apply(db->vs, &cs.edit);
		edit_free(&cs.edit);
		return r;
	}
	max = max_subcompactions(db);
	pthread_mutex_unlock(&db->mu);

	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < c->nin[w]; i++)
			bytes_read += c->in[w][i]->size;
	cuts = xcalloc(max, sizeof(*cuts));
	r = input_tombstones(db, c, &tombs);
	nsubs = r == 0 ? plan_cuts(db, c, cuts, max) : 0;
	subs = xcalloc(nsubs, sizeof(*subs));
	for (size_t i = 0; i < nsubs; i++) {
		struct subcompaction *s = &subs[i];
		s->cs = cs;
		edit_init(&s->cs.edit);
		s->cs.tombs = tombs;
		if (i > 0) {
			buf_set(&s->lo, cuts[i - 1].data, cuts[i - 1].len);
			s->has_lo = 1;
		}
		if (i + 1 < nsubs) {
			buf_set(&s->hi, cuts[i].data, cuts[i].len);
			s->has_hi = 1;
		}
	}
	/* the first range in this thread, the others in threads of their own */
	for (size_t i = 1; i < nsubs; i++)
		subs[i].started = pthread_create(&subs[i].thread, NULL, subcompaction_main,
						 &subs[i]) == 0;
	if (nsubs)
		subs[0].r = merge_range(&subs[0]);
	for (size_t i = 1; i < nsubs; i++) {
		if (subs[i].started)
			pthread_join(subs[i].thread, NULL);
		else
			subs[i].r = merge_range(&subs[i]);   /* no thread to be had: here, after */
	}
	for (size_t i = 0; i < nsubs; i++) {
		struct subcompaction *s = &subs[i];
		if (r == 0 && s->r < 0)
			r = s->msg ? ERR_SET(s->r, "%s", s->msg) : s->r;
		edit_move_adds(&cs.edit, &s->cs.edit);
		noutputs += s->cs.noutputs;
		cs.bytes_written += s->cs.bytes_written;
	}
	for (size_t i = 0; i < max; i++)
		buf_free(&cuts[i]);
	free(cuts);
	rdel_set_free(tombs);
	if (r == 0 && noutputs)
		r = env_sync_dir(db->env, db->dir);  /* the outputs' names are durable first */

	pthread_mutex_lock(&db->mu);
	if (r == 0) {
		for (int w = 0; w < 2; w++)
			for (size_t i = 0; i < c->nin[w]; i++)
				edit_del_file(&cs.edit, c->level + w, c->in[w][i]->number);
		if (!c->manual && c->level > 0) {
			struct slice last = buf_slice(&c->in[0][c->nin[0] - 1]->largest);
			edit_set_compact_pointer(&cs.edit, c->level, last);
		}
		cs.edit.has_last_seq = 1;
		cs.edit.last_seq = db_last_seq(db);
		r = vs_log_and_apply(db->vs, &cs.edit);
	}
	for (size_t i = 0; i < nsubs; i++)
		for (size_t j = 0; j < subs[i].cs.noutputs; j++)
			db_pending_remove(db, subs[i].cs.outputs[j]);
	if (r == 0) {
		if (nsubs > 1)
			db_count(&db->stats.subcompactions, nsubs);
		db_count(&db->stats.compactions, 1);
		db_count(&db->stats.bytes_compacted_read, bytes_read);
		db_count(&db->stats.bytes_compacted_written, cs.bytes_written);
	}
	for (size_t i = 0; i < nsubs; i++) {
		struct subcompaction *s = &subs[i];
		free(s->msg);
		edit_free(&s->cs.edit);
		free(s->cs.outputs);
		buf_free(&s->cs.cur.lo);
		buf_free(&s->lo);
		buf_free(&s->hi);
	}
	free(subs);
	edit_free(&cs.edit);
	return r;
}

int db_needs_compaction(struct kv_db *db)
{
	return db->manual || neediest_tree(db) != NULL;
}

void *db_compact_main(void *arg)
{
	struct kv_db *db = arg;

	pthread_setname_np(pthread_self(), DB_THREAD_COMPACT);   /* a name only: a failure is harmless */
	pthread_mutex_lock(&db->mu);
	while (!db->shutting_down) {
		struct compaction *c;
		uint64_t free_before;
		int r;

		if (db->bg_error) {
			db_bg_wait(db);   /* until a transient error's retry */
			continue;
		}
		if (!db_needs_compaction(db) || !(c = pick_compaction(db))) {
			if (db->manual && !db->bg_error) {
				/* nothing to do at this level */
				db->manual->done = 1;
				db->manual->status = 0;
				db->manual = NULL;
				pthread_cond_broadcast(&db->bg_cv);
				continue;
			}
			pthread_cond_wait(&db->work_cv, &db->mu);
			continue;
		}
		db->compacting = 1;
		r = run_compaction(db, c);
		db->compacting = 0;
		if (c->manual && db->manual) {
			db->manual->done = 1;
			db->manual->status = r;
			db->manual = NULL;
		}
		free_before = c->free_before;
		compaction_free(db, c);
		if (r == 0) {
			db->bg_backoff = 0;
			db_delete_obsolete_files(db);
		} else if (r != -ECANCELED) {
			db_set_bg_error(db, r, "compaction", free_before);
		}
		pthread_cond_broadcast(&db->bg_cv);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}
