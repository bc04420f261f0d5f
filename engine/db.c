/*
 * db.c -- the database: opening and recovery, the write path with group
 * commit, point reads, snapshots, and the administrative calls of kv.h.
 *
 * A write goes: queue -> (leader) log record(s), one append for the whole
 * group, fsync if any writer asked -> memtable -> publish the sequence.
 * Recovery reads the manifest (version.c) and replays every log not yet
 * flushed, then flushes what it replayed, starts a fresh log and manifest,
 * and deletes what is obsolete.
 */
#include "db.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void kv_options_init(struct kv_options *o)
{
	memset(o, 0, sizeof(*o));
	o->create_if_missing = 1;
	o->write_buffer_size = 64u << 20;
	o->block_size = 4096;
	o->block_restart_interval = 16;
	o->compression_level = 1;
	o->block_cache_size = 64u << 20;
	o->bloom_bits_per_key = 10;
	o->max_open_files = 1000;
	o->target_file_size = 4u << 20;
	o->max_bytes_level_base = 64u << 20;
	o->l0_compaction_trigger = 4;
	o->l0_slowdown_trigger = 8;
	o->l0_stop_trigger = 12;
}

void db_log(struct kv_db *db, enum kv_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (db->opt.log)
		db->opt.log(db->opt.log_arg, level, msg);
	else if (level <= KV_LOG_WARN)
		fprintf(stderr, "smolfs: %s: %s\n", db->dir, msg);
}

static void sanitize(struct kv_options *o)
{
	if (!o->env)
		o->env = env_posix();
	if (o->write_buffer_size < 4096)
		o->write_buffer_size = 4096;
	if (o->block_size < 256)
		o->block_size = 256;
	if (o->block_restart_interval < 1)
		o->block_restart_interval = 16;
	if (o->compression_level < 0 || o->compression_level > 22)
		o->compression_level = 1;
	if (o->max_open_files < 16)
		o->max_open_files = 16;
	if (o->target_file_size < 4096)
		o->target_file_size = 4096;
	if (o->max_bytes_level_base < 4096)
		o->max_bytes_level_base = 4096;
	if (o->l0_compaction_trigger < 1)
		o->l0_compaction_trigger = 1;
	if (o->l0_slowdown_trigger < o->l0_compaction_trigger)
		o->l0_slowdown_trigger = o->l0_compaction_trigger;
	if (o->l0_stop_trigger < o->l0_slowdown_trigger)
		o->l0_stop_trigger = o->l0_slowdown_trigger;
}

static char *log_path(struct kv_db *db, uint64_t number)
{
	return xasprintf("%s/%06llu.log", db->dir, (unsigned long long)number);
}

/* Parse "NNNNNN.log" / "NNNNNN.sst"; returns the number or 0. */
static uint64_t parse_numbered(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	uint64_t v = 0;

	if (n <= s || strcmp(name + n - s, suffix))
		return 0;
	for (size_t i = 0; i < n - s; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	return v;
}

/* ------------------------------------------------------------ recovery */

static int replay_apply(void *arg, uint64_t seq, int type, struct slice key, struct slice value)
{
	mem_add(arg, seq, type, key, value);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Replay one log into db->mem, flushing to level 0 (recorded in edit) when
 * the memtable fills.  REQUIRES mu held; nothing else runs yet.
 */
static int replay_log(struct kv_db *db, uint64_t number, struct version_edit *edit,
		      uint64_t *max_seq)
{
	char *path = log_path(db, number);
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct slice rec;
	uint64_t size, torn_at;
	uint32_t count;
	int r;

	if ((r = env_file_size(db->env, path, &size)) < 0 ||
	    (r = env_open_read(db->env, path, &f)) < 0)
		goto out;
	rd = wal_reader_new(f, size, path);
	while ((r = wal_read(rd, &rec)) > 0) {
		if (rec.len < BATCH_HEADER || (r = batch_check(rec, &count)) < 0) {
			r = KV_CORRUPT("%s: damaged batch in a record before offset %llu", path,
				       (unsigned long long)wal_reader_offset(rd));
			goto out;
		}
		uint64_t first = dec_fixed64(rec.data);
		batch_iterate(rec, replay_apply, db->mem);
		if (count && first + count - 1 > *max_seq)
			*max_seq = first + count - 1;
		if (mem_bytes(db->mem) > db->opt.write_buffer_size) {
			r = db_write_level0(db, db->mem, edit);
			if (r < 0)
				goto out;
			mem_unref(db->mem);
			db->mem = mem_new();
		}
	}
	if (r == 0 && wal_reader_torn(rd, &torn_at))
		db_log(db, KV_LOG_WARN, "%s: torn tail at offset %llu (an unfinished write) ignored",
		       path, (unsigned long long)torn_at);
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(path);
	return r;
}

/* 1 if dir holds any table or manifest (the remains of a database). */
static int has_database_files(struct kv_db *db)
{
	char **names;
	size_t n;
	int found = 0;

	if (env_list_dir(db->env, db->dir, &names, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !found; i++)
		found = parse_numbered(names[i], ".sst") || !strncmp(names[i], "MANIFEST-", 9);
	env_free_list(names, n);
	return found;
}

static int recover(struct kv_db *db)
{
	struct version_edit edit;
	uint64_t *logs = NULL, max_seq;
	char **names = NULL;
	size_t nnames = 0, nlogs = 0;
	int r;

	r = vs_recover(db->vs);
	if (r == -ENOENT && has_database_files(db)) {
		/* starting afresh here would delete every table as obsolete */
		return KV_CORRUPT("%s/CURRENT is missing, but the directory holds tables or a "
				  "manifest: refusing to start an empty database over them", db->dir);
	}
	if (r == -ENOENT) {
		if (!db->opt.create_if_missing)
			return KV_ERROR(-ENOENT, "%s: no database here (and create_if_missing is off)",
					db->dir);
		vs_init_empty(db->vs);
		db_log(db, KV_LOG_INFO, "creating a new database");
	} else if (r < 0) {
		return r;
	} else if (db->opt.error_if_exists) {
		return KV_ERROR(-EEXIST, "%s: a database exists already", db->dir);
	}

	edit_init(&edit);
	/* the manifest records the last sequence at its last edit; tables never exceed it,
	 * but take their word too, so a stale record cannot hide data */
	max_seq = db->vs->last_seq;
	for (int l = 0; l < NUM_LEVELS; l++)
		for (size_t i = 0; i < db->vs->current->nfiles[l]; i++)
			if (db->vs->current->files[l][i]->largest_seq > max_seq)
				max_seq = db->vs->current->files[l][i]->largest_seq;
	r = env_list_dir(db->env, db->dir, &names, &nnames);
	if (r < 0)
		goto out;
	logs = xmalloc((nnames + 1) * sizeof(*logs));
	for (size_t i = 0; i < nnames; i++) {
		uint64_t n = parse_numbered(names[i], ".log");
		if (n && n >= db->vs->log_number)
			logs[nlogs++] = n;
		if (n >= db->vs->next_file)
			db->vs->next_file = n + 1;
		n = parse_numbered(names[i], ".sst");
		if (n >= db->vs->next_file)
			db->vs->next_file = n + 1;
	}
	qsort(logs, nlogs, sizeof(*logs), cmp_u64);
	for (size_t i = 0; i < nlogs; i++) {
		r = replay_log(db, logs[i], &edit, &max_seq);
		if (r < 0)
			goto out;
	}
	if (mem_entries(db->mem) + mem_range_dels(db->mem) > 0) {
		r = db_write_level0(db, db->mem, &edit);
		if (r < 0)
			goto out;
		mem_unref(db->mem);
		db->mem = mem_new();
	}
	db->last_seq = max_seq;

	/* a fresh log for new writes, then a manifest that no longer needs the old ones */
	struct env_file *f;
	char *path;
	db->wal_number = vs_new_file_number(db->vs);
	path = log_path(db, db->wal_number);
	r = env_open_append(db->env, path, &f);
	free(path);
	if (r < 0)
		goto out;
	db->wal = wal_writer_new(f);
	db->vs->log_number = db->wal_number;
	db->vs->last_seq = max_seq;
	/* apply the flushed tables, then write the whole state into a new manifest */
	if (edit.nadds) {
		struct version *v = db->vs->current;
		struct version_edit copy = edit;
		(void)v;
		r = 0;
		/* vs_log_and_apply needs an open manifest; build the version directly */
		copy.has_log_number = 1;
		copy.log_number = db->wal_number;
		copy.has_last_seq = 1;
		copy.last_seq = max_seq;
		r = vs_apply_only(db->vs, &copy);
		if (r < 0)
			goto out;
	}
	r = vs_new_manifest(db->vs);
	if (r < 0)
		goto out;
	r = env_sync_dir(db->env, db->dir);
out:
	edit_free(&edit);
	env_free_list(names, nnames);
	free(logs);
	return r;
}

/* ------------------------------------------------------------ open / close */

int kv_open(const char *dir, const struct kv_options *opt, struct kv_db **dbp)
{
	struct kv_db *db = xcalloc(1, sizeof(*db));
	char *lock_path = NULL;
	int r;

	*dbp = NULL;
	if (opt)
		db->opt = *opt;
	else
		kv_options_init(&db->opt);
	sanitize(&db->opt);
	db->env = db->opt.env;
	db->dir = xstrdup(dir);
	pthread_mutex_init(&db->mu, NULL);
	pthread_cond_init(&db->bg_cv, NULL);
	pthread_cond_init(&db->work_cv, NULL);
	db->snapshots.next = db->snapshots.prev = &db->snapshots;
	db->group = kv_batch_new();

	if (db->opt.create_if_missing) {
		r = env_mkdir(db->env, dir);
		if (r < 0)
			goto fail;
	} else if (!env_exists(db->env, dir)) {
		r = KV_ERROR(-ENOENT, "%s: no such directory", dir);
		goto fail;
	}
	lock_path = xasprintf("%s/LOCK", dir);
	r = env_lock(db->env, lock_path, &db->lock);
	if (r < 0)
		goto fail;
	db->block_cache = cache_new(db->opt.block_cache_size);
	db->tc = tcache_new(db->env, dir, db->opt.max_open_files, db->block_cache,
			    &db->stats.bytes_read_sst);
	db->vs = vs_new(dir, db->env, &db->opt, db->tc);
	db->mem = mem_new();

	pthread_mutex_lock(&db->mu);
	r = recover(db);
	if (r == 0)
		db_delete_obsolete_files(db);
	pthread_mutex_unlock(&db->mu);
	if (r < 0)
		goto fail;

	if (pthread_create(&db->flush_thread, NULL, db_flush_main, db) != 0 ||
	    pthread_create(&db->compact_thread, NULL, db_compact_main, db) != 0) {
		r = KV_ERROR(-EAGAIN, "%s: cannot start background threads", dir);
		goto fail;  /* kv_close below joins what started */
	}
	db->threads_started = 1;
	free(lock_path);
	*dbp = db;
	pthread_mutex_lock(&db->mu);
	pthread_cond_broadcast(&db->work_cv);   /* a compaction may be due already */
	pthread_mutex_unlock(&db->mu);
	return 0;
fail:
	free(lock_path);
	{
		/* keep the message of the failure, not of the cleanup */
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", kv_error_last());
		kv_close(db);
		KV_ERROR(r, "%s", msg);
	}
	return r;
}

int kv_close(struct kv_db *db)
{
	int r;

	if (!db)
		return 0;
	pthread_mutex_lock(&db->mu);
	db->shutting_down = 1;
	pthread_cond_broadcast(&db->work_cv);
	pthread_mutex_unlock(&db->mu);
	if (db->threads_started) {
		pthread_join(db->flush_thread, NULL);
		pthread_join(db->compact_thread, NULL);
	}
	r = db->bg_error;
	if (db->wal) {
		int rw = wal_writer_free(db->wal);
		if (r == 0)
			r = rw;
	}
	if (db->mem)
		mem_unref(db->mem);
	if (db->imm)
		mem_unref(db->imm);
	pthread_mutex_lock(&db->mu);
	vs_free(db->vs);
	pthread_mutex_unlock(&db->mu);
	tcache_free(db->tc);
	if (db->block_cache)
		cache_free(db->block_cache);
	if (db->lock)
		env_unlock(db->lock);
	kv_batch_free(db->group);
	free(db->pending_outputs);
	pthread_cond_destroy(&db->bg_cv);
	pthread_cond_destroy(&db->work_cv);
	pthread_mutex_destroy(&db->mu);
	free(db->dir);
	free(db);
	return r;
}

/* ------------------------------------------------------------ writes */

/*
 * Make sure the active memtable has room, switching to a new memtable and log
 * when it is full.  Slows each write by 1 ms when level 0 is crowded, and
 * waits when the previous memtable is still being flushed or level 0 is full,
 * so memory and level 0 stay bounded.  REQUIRES mu held; the caller leads.
 */
static int make_room(struct kv_db *db, int force)
{
	int delayed = 0;
	uint64_t t0;

	for (;;) {
		struct version *v = db->vs->current;
		if (db->bg_error)
			return db->bg_error;
		if (!delayed && !force && (int)v->nfiles[0] >= db->opt.l0_slowdown_trigger) {
			pthread_mutex_unlock(&db->mu);
			usleep(1000);
			db_count(&db->stats.stall_micros, 1000);
			pthread_mutex_lock(&db->mu);
			delayed = 1;
			continue;
		}
		if (!force && mem_bytes(db->mem) < db->opt.write_buffer_size)
			return 0;
		if (force && mem_entries(db->mem) + mem_range_dels(db->mem) == 0)
			return 0;
		if (db->imm || (int)v->nfiles[0] >= db->opt.l0_stop_trigger) {
			t0 = now_micros();
			pthread_cond_broadcast(&db->work_cv);
			pthread_cond_wait(&db->bg_cv, &db->mu);
			db_count(&db->stats.stall_micros, now_micros() - t0);
			continue;
		}
		/* switch: the old log is synced first, so a later synced write never
		 * survives a power cut that an earlier write in the old log did not */
		uint64_t number = vs_new_file_number(db->vs);
		char *path = log_path(db, number);
		struct env_file *f;
		int r = wal_sync(db->wal);
		if (r == 0)
			r = env_open_append(db->env, path, &f);
		if (r == 0) {
			r = env_sync_dir(db->env, db->dir);
			if (r < 0)
				env_close(f);
		}
		free(path);
		if (r < 0) {
			db->bg_error = r;
			return r;
		}
		wal_writer_free(db->wal);
		db->wal = wal_writer_new(f);
		db->imm_log_number = db->wal_number;
		db->wal_number = number;
		db->imm = db->mem;
		db->mem = mem_new();
		force = 0;
		pthread_cond_broadcast(&db->work_cv);
	}
}

static int apply_to_mem(void *arg, uint64_t seq, int type, struct slice key, struct slice value)
{
	mem_add(arg, seq, type, key, value);
	return 0;
}

int kv_write(struct kv_db *db, const struct kv_batch *b, unsigned flags)
{
	struct writer w = { .batch = b, .sync = (flags & KV_SYNC) || db->opt.sync_wal };
	struct slice recs[64];
	struct writer *last, *x;
	size_t nrecs = 0, bytes = 0, max_bytes;
	uint64_t seq;
	int r, sync;

	if (kv_batch_count(b) == 0)
		return 0;
	pthread_cond_init(&w.cv, NULL);
	pthread_mutex_lock(&db->mu);
	if (db->writers_tail)
		db->writers_tail->next = &w;
	else
		db->writers_head = &w;
	db->writers_tail = &w;
	while (!w.done && db->writers_head != &w)
		pthread_cond_wait(&w.cv, &db->mu);
	if (w.done) {
		pthread_mutex_unlock(&db->mu);
		pthread_cond_destroy(&w.cv);
		return w.status;
	}

	/* the leader: room, then gather followers into one log append */
	r = make_room(db, 0);
	seq = db_last_seq(db);
	last = &w;
	sync = w.sync;
	max_bytes = b->rep.len <= (128u << 10) ? b->rep.len + (128u << 10) : (1u << 20);
	if (r == 0) {
		for (x = &w; x && nrecs < 64; x = x->next) {
			if (x != &w && bytes + x->batch->rep.len > max_bytes)
				break;
			if (x->sync && !sync && x != &w)
				break;  /* do not make a fast write wait for someone's fsync */
			batch_set_seq((struct kv_batch *)x->batch, seq + 1);
			seq += kv_batch_count(x->batch);
			recs[nrecs++] = buf_slice(&x->batch->rep);
			bytes += x->batch->rep.len;
			last = x;
		}
		pthread_mutex_unlock(&db->mu);
		r = wal_addv(db->wal, recs, nrecs);
		if (r == 0 && sync)
			r = wal_sync(db->wal);
		if (r == 0) {
			for (size_t i = 0; i < nrecs; i++)
				batch_iterate(recs[i], apply_to_mem, db->mem);
			db_count(&db->stats.bytes_written_wal, bytes + nrecs * WAL_HEADER);
		}
		pthread_mutex_lock(&db->mu);
		if (r == 0)
			__atomic_store_n(&db->last_seq, seq, __ATOMIC_RELEASE);
		else if (!db->bg_error)
			db->bg_error = r;   /* the log may hold part of this group: stop writing */
	}

	/* hand results to the group, and the lead to the next writer */
	for (;;) {
		x = db->writers_head;
		db->writers_head = x->next;
		if (!db->writers_head)
			db->writers_tail = NULL;
		if (x != &w) {
			x->status = r;
			x->done = 1;
			pthread_cond_signal(&x->cv);
		}
		if (x == last)
			break;
	}
	if (db->writers_head)
		pthread_cond_signal(&db->writers_head->cv);
	pthread_mutex_unlock(&db->mu);
	pthread_cond_destroy(&w.cv);
	return r;
}

int kv_put(struct kv_db *db, const void *key, size_t klen, const void *val, size_t vlen,
	   unsigned flags)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_put(b, key, klen, val, vlen);

	if (r == 0)
		r = kv_write(db, b, flags);
	kv_batch_free(b);
	return r;
}

int kv_delete(struct kv_db *db, const void *key, size_t klen, unsigned flags)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_delete(b, key, klen);

	if (r == 0)
		r = kv_write(db, b, flags);
	kv_batch_free(b);
	return r;
}

int kv_delete_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen,
		    unsigned flags)
{
	struct kv_batch *b = kv_batch_new();
	int r = kv_batch_delete_range(b, start, slen, end, elen);

	if (r == 0)
		r = kv_write(db, b, flags);
	kv_batch_free(b);
	return r;
}

/* ------------------------------------------------------------ reads */

const struct kv_snapshot *kv_snapshot_new(struct kv_db *db)
{
	struct snapshot_node *s = xmalloc(sizeof(*s));

	pthread_mutex_lock(&db->mu);
	s->seq = db_last_seq(db);
	s->next = &db->snapshots;
	s->prev = db->snapshots.prev;
	s->prev->next = s;
	db->snapshots.prev = s;
	pthread_mutex_unlock(&db->mu);
	return (const struct kv_snapshot *)s;
}

void kv_snapshot_release(struct kv_db *db, const struct kv_snapshot *snap)
{
	struct snapshot_node *s = (struct snapshot_node *)snap;

	if (!s)
		return;
	pthread_mutex_lock(&db->mu);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	pthread_mutex_unlock(&db->mu);
	free(s);
}

uint64_t db_oldest_snapshot(struct kv_db *db)
{
	if (db->snapshots.next != &db->snapshots)
		return ((struct snapshot_node *)db->snapshots.next)->seq;
	return db_last_seq(db);
}

/*
 * The largest sequence <= snap of a memtable tombstone covering ukey.  The
 * tombstones sit in start order; every one starting at or before ukey is a
 * candidate, so this is linear in those (few, in a memtable).
 */
static uint64_t mem_covering(struct memtable *m, struct slice ukey, uint64_t snap)
{
	struct iter *it;
	uint64_t best = 0;

	if (mem_range_dels(m) == 0)
		return 0;
	it = mem_range_iter_new(m);
	for (iter_seek_first(it); iter_valid(it); iter_next(it)) {
		struct slice k = iter_key(it);
		if (slice_cmp(ikey_user(k), ukey) > 0)
			break;
		uint64_t s = ikey_seq(k);
		if (s <= snap && s > best && slice_cmp(ukey, iter_value(it)) < 0)
			best = s;
	}
	iter_destroy(it);
	return best;
}

/* 1: the memtable decides (found or deleted), 0: look further. */
static int mem_lookup(struct memtable *m, struct slice ukey, uint64_t snap, int *type,
		      struct buf *val)
{
	uint64_t seq, tomb = mem_covering(m, ukey, snap);
	struct slice v;

	if (mem_get(m, ukey, snap, type, &seq, &v) && seq > tomb) {
		if (*type == KT_PUT)
			buf_set(val, v.data, v.len);
		return 1;
	}
	if (tomb) {
		*type = KT_DELETE;
		return 1;
	}
	return 0;
}

int kv_get(struct kv_db *db, const struct kv_snapshot *snap, const void *key, size_t klen,
	   char **val, size_t *vlen)
{
	struct slice ukey = slice_make(key, klen);
	struct memtable *mem, *imm;
	struct version *v;
	struct buf out = BUF_INIT;
	uint64_t seq, s;
	int type = KT_DELETE, r;

	*val = NULL;
	*vlen = 0;
	pthread_mutex_lock(&db->mu);
	s = snap ? ((const struct snapshot_node *)snap)->seq : db_last_seq(db);
	mem = db->mem;
	mem_ref(mem);
	imm = db->imm;
	if (imm)
		mem_ref(imm);
	v = db->vs->current;
	version_ref(v);
	pthread_mutex_unlock(&db->mu);

	if ((r = mem_lookup(mem, ukey, s, &type, &out)) == 0 &&
	    (!imm || (r = mem_lookup(imm, ukey, s, &type, &out)) == 0))
		r = version_get(v, ukey, s, &type, &seq, &out, &db->stats.bloom_useful);

	pthread_mutex_lock(&db->mu);
	version_unref(v);
	pthread_mutex_unlock(&db->mu);
	mem_unref(mem);
	if (imm)
		mem_unref(imm);
	if (r < 0) {
		buf_free(&out);
		return r;
	}
	if (r == 0 || type != KT_PUT) {
		buf_free(&out);
		return -ENOENT;
	}
	*vlen = out.len;
	*val = out.data ? out.data : xmalloc(1);
	return 0;
}

/* ------------------------------------------------------------ maintenance */

int kv_flush(struct kv_db *db)
{
	int r;

	pthread_mutex_lock(&db->mu);
	/* become a writer so no one inserts while the memtable switches */
	r = make_room(db, 1);
	while (r == 0 && db->imm && !db->bg_error) {
		pthread_cond_broadcast(&db->work_cv);
		pthread_cond_wait(&db->bg_cv, &db->mu);
	}
	if (r == 0)
		r = db->bg_error;
	pthread_mutex_unlock(&db->mu);
	return r;
}

int kv_compact_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen)
{
	struct manual_compaction m;
	int r = kv_flush(db), top = 0;

	if (r < 0)
		return r;
	memset(&m, 0, sizeof(m));
	if (start) {
		buf_set(&m.lo, start, slen);
		m.has_lo = 1;
	}
	if (end) {
		buf_set(&m.hi, end, elen);
		m.has_hi = 1;
	}
	pthread_mutex_lock(&db->mu);
	for (int l = 0; l < NUM_LEVELS; l++)
		if (db->vs->current->nfiles[l])
			top = l;
	/* everything ends in the deepest level holding data (level 1 at least) */
	if (top == 0)
		top = 1;
	for (int l = 0; l < top && r == 0; l++) {
		while (db->manual)
			pthread_cond_wait(&db->bg_cv, &db->mu);
		m.level = l;
		m.done = 0;
		m.status = 0;
		db->manual = &m;
		pthread_cond_broadcast(&db->work_cv);
		while (!m.done && !db->bg_error)
			pthread_cond_wait(&db->bg_cv, &db->mu);
		if (db->manual == &m)
			db->manual = NULL;
		r = m.done ? m.status : db->bg_error;
	}
	pthread_mutex_unlock(&db->mu);
	buf_free(&m.lo);
	buf_free(&m.hi);
	return r;
}

void kv_get_stats(struct kv_db *db, struct kv_stats *st)
{
	uint64_t hits, misses;

	pthread_mutex_lock(&db->mu);
	*st = db->stats;
	cache_counters(db->block_cache, &hits, &misses);
	st->block_cache_hits = hits;
	st->block_cache_misses = misses;
	st->disk_bytes = wal_size(db->wal);
	for (int l = 0; l < NUM_LEVELS && l < 8; l++) {
		st->files_per_level[l] = (int)db->vs->current->nfiles[l];
		st->disk_bytes += version_level_bytes(db->vs->current, l);
	}
	pthread_mutex_unlock(&db->mu);
}

char *kv_property(struct kv_db *db, const char *name)
{
	struct buf out = BUF_INIT;
	struct kv_stats st;
	char line[512];
	int n;

	if (strcmp(name, "stats") && strcmp(name, "levels") && strcmp(name, "sstables"))
		return NULL;
	kv_get_stats(db, &st);
	pthread_mutex_lock(&db->mu);
	struct version *v = db->vs->current;
	if (!strcmp(name, "stats") || !strcmp(name, "levels")) {
		n = snprintf(line, sizeof(line), "level  files      bytes\n");
		buf_append(&out, line, (size_t)n);
		for (int l = 0; l < NUM_LEVELS; l++) {
			n = snprintf(line, sizeof(line), "%5d %6zu %10llu\n", l, v->nfiles[l],
				     (unsigned long long)version_level_bytes(v, l));
			buf_append(&out, line, (size_t)n);
		}
	}
	if (!strcmp(name, "stats")) {
		uint64_t lookups = st.block_cache_hits + st.block_cache_misses;
		n = snprintf(line, sizeof(line),
			     "last sequence %llu\nwal bytes %llu\nflushes %llu (%llu bytes)\n"
			     "compactions %llu (read %llu, wrote %llu bytes)\n"
			     "sst bytes read %llu\nblock cache hit rate %.1f%% of %llu\n"
			     "bloom filter skips %llu\nwrite stalls %llu us\n",
			     (unsigned long long)db_last_seq(db),
			     (unsigned long long)st.bytes_written_wal,
			     (unsigned long long)st.flushes, (unsigned long long)st.bytes_flushed,
			     (unsigned long long)st.compactions,
			     (unsigned long long)st.bytes_compacted_read,
			     (unsigned long long)st.bytes_compacted_written,
			     (unsigned long long)st.bytes_read_sst,
			     lookups ? 100.0 * (double)st.block_cache_hits / (double)lookups : 0.0,
			     (unsigned long long)lookups, (unsigned long long)st.bloom_useful,
			     (unsigned long long)st.stall_micros);
		buf_append(&out, line, (size_t)n);
	}
	if (!strcmp(name, "sstables")) {
		for (int l = 0; l < NUM_LEVELS; l++) {
			for (size_t i = 0; i < v->nfiles[l]; i++) {
				const struct file_meta *f = v->files[l][i];
				n = snprintf(line, sizeof(line),
					     "level %d %06llu.sst %llu bytes, %llu entries, %llu range "
					     "tombstones, seq %llu..%llu\n",
					     l, (unsigned long long)f->number,
					     (unsigned long long)f->size,
					     (unsigned long long)f->entries,
					     (unsigned long long)f->range_dels,
					     (unsigned long long)f->smallest_seq,
					     (unsigned long long)f->largest_seq);
				buf_append(&out, line, (size_t)n);
			}
		}
	}
	pthread_mutex_unlock(&db->mu);
	buf_append(&out, "", 1);
	return out.data;
}

struct verify_ctx {
	void (*report)(void *arg, const char *file, uint64_t off, const char *msg);
	void *arg;
	const char *file;
	int problems;
};

static void verify_report(void *arg, uint64_t off, const char *msg)
{
	struct verify_ctx *c = arg;

	c->problems++;
	if (c->report)
		c->report(c->arg, c->file, off, msg);
}

static void report_manifest(void *arg, const char *file, uint64_t off, const char *msg)
{
	struct verify_ctx *c = arg;

	c->problems++;
	if (c->report)
		c->report(c->arg, file, off, msg);
}

int kv_verify(struct kv_db *db, void (*report)(void *arg, const char *file, uint64_t off,
					       const char *msg), void *arg)
{
	struct verify_ctx c = { report, arg, NULL, 0 };
	struct version *v;
	int r = 0;

	pthread_mutex_lock(&db->mu);
	v = db->vs->current;
	version_ref(v);
	pthread_mutex_unlock(&db->mu);
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			const struct file_meta *f = v->files[l][i];
			char *name = xasprintf("%06llu.sst", (unsigned long long)f->number);
			struct cache_handle *h;
			struct sst *t;
			c.file = name;
			int rr = tcache_get(db->tc, f, &t, &h);
			if (rr < 0) {
				verify_report(&c, 0, kv_strerror(rr));
			} else {
				rr = sst_verify(t, verify_report, &c);
				if (rr < 0 && rr != -EUCLEAN)
					verify_report(&c, 0, kv_strerror(rr));
				tcache_release(db->tc, h);
			}
			free(name);
		}
	}
	pthread_mutex_lock(&db->mu);
	version_unref(v);
	/* the manifest is appended to under the mutex: read it while no edit can land */
	c.file = NULL;
	if (vs_check_manifest(db->vs, report_manifest, &c) < 0 && c.problems == 0)
		c.problems++;
	pthread_mutex_unlock(&db->mu);
	if (c.problems)
		r = -EUCLEAN;
	return r;
}

int kv_destroy(const char *dir, struct kv_env *env)
{
	char **names = NULL, *lock_path;
	struct env_file *lock;
	size_t n = 0;
	int r;

	if (!env)
		env = env_posix();
	lock_path = xasprintf("%s/LOCK", dir);
	r = env_lock(env, lock_path, &lock);
	if (r < 0) {
		free(lock_path);
		return r;
	}
	r = env_list_dir(env, dir, &names, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (!strcmp(names[i], "LOCK"))
			continue;
		if (parse_numbered(names[i], ".log") || parse_numbered(names[i], ".sst") ||
		    !strncmp(names[i], "MANIFEST-", 9) || !strcmp(names[i], "CURRENT") ||
		    !strcmp(names[i], "CURRENT.tmp")) {
			char *p = xasprintf("%s/%s", dir, names[i]);
			r = env_unlink(env, p);
			free(p);
		}
	}
	env_free_list(names, n);
	env_unlock(lock);
	if (r == 0)
		env_unlink(env, lock_path);
	free(lock_path);
	return r;
}
