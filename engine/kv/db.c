/*
 * db.c -- the database: opening and recovery, the write path with group
 * commit, point reads, snapshots, and the administrative calls of kv.h.
 *
 * A write goes: queue -> (leader) log record(s), one append for the whole
 * group, fsync if any writer asked -> memtable -> publish the sequence.
 * Recovery reads the manifest (version.c) and replays every log not yet
 * flushed, then flushes what it replayed, starts a fresh log and manifest,
 * and deletes what is obsolete.  A read-only open (kv_options.read_only)
 * stops after the replay: the logs stay in memory, nothing is written, no
 * background thread starts, and every mutation is -EROFS.
 */
#include "db.h"
#include "bloom.h"
#include "filename.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
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
	o->max_open_files = 0;
	o->target_file_size = 4u << 20;
	o->max_bytes_level_base = 64u << 20;
	o->l0_compaction_trigger = 4;
	o->l0_slowdown_trigger = 8;
	o->l0_stop_trigger = 12;
	o->slowdown_rate = DELAY_DEFAULT_RATE;
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
	if (o->max_open_files < 0)
		o->max_open_files = 0;
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
	if (o->slowdown_rate == 0)
		o->slowdown_rate = DELAY_DEFAULT_RATE;
	else if (o->slowdown_rate < DELAY_MIN_RATE)
		o->slowdown_rate = DELAY_MIN_RATE;
}

/*
 * How many tables may be kept open.  The soft descriptor limit is raised to
 * the hard one first (a database of thousands of tables needs them, and the
 * soft limit is often 1024).  A quarter of the limit, at least 64, stays
 * free for the logs, the manifest, the directory, compaction outputs and
 * the front-end's own files.  want = 0 takes all the rest (up to 65536); a
 * larger request than the rest is cut down to it, never below 16.
 */
static int table_budget(int want)
{
	struct rlimit rl;
	uint64_t soft, spare, budget;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return want > 0 ? want : 1000;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = { rl.rlim_max, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	soft = rl.rlim_cur == RLIM_INFINITY ? (1u << 20) : (uint64_t)rl.rlim_cur;
	spare = soft / 4 < 64 ? 64 : soft / 4;
	budget = soft > spare + 16 ? soft - spare : 16;
	if (budget > 65536)
		budget = 65536;
	if (want <= 0 || (uint64_t)want > budget)
		return (int)budget;
	return want;
}

/* ------------------------------------------------------------ background errors */

int db_error_transient(int err)
{
	switch (-err) {
	case ENOSPC:
	case EDQUOT:
	case EIO:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EAGAIN:
	case EINTR:
		return 1;
	default:
		return 0;
	}
}

/* 1 for the errors of a disk without room: what was written before is intact. */
static int is_space_error(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

#define BG_BACKOFF_MIN 10000u     /* 10 ms */
#define BG_BACKOFF_MAX 1000000u   /* 1 s */
#define BG_FULL_RETRY  30000000u  /* 30 s: a full disk's retry even if no space came back */

uint64_t db_free_space(struct kv_db *db)
{
	uint64_t b;

	return env_free_space(db->env, db->dir, &b) == 0 ? b : UINT64_MAX;
}

void db_set_bg_error(struct kv_db *db, int err, const char *what, uint64_t free_before)
{
	db_log(db, KV_LOG_ERROR, "%s failed: %s%s", what, kv_strerror(err),
	       db_error_transient(err) ? " (will retry)" : "");
	if (db->bg_error)
		return;
	db->bg_error = err;
	snprintf(db->bg_error_msg, sizeof(db->bg_error_msg), "%s failed: %s", what,
		 kv_strerror(err));
	db->bg_backoff = db->bg_backoff ? db->bg_backoff * 2 : BG_BACKOFF_MIN;
	if (db->bg_backoff > BG_BACKOFF_MAX)
		db->bg_backoff = BG_BACKOFF_MAX;
	db->bg_retry_at = now_micros() + db->bg_backoff;
	/* the failed work's output is gone by now: what is free is what it had */
	db->bg_full = err == -ENOSPC && env_free_space(db->env, db->dir, &db->bg_full_free) == 0;
	if (free_before < db->bg_full_free)
		db->bg_full_free = free_before;
	db->bg_full_at = now_micros();
}

/*
 * 1 while the disk that failed with ENOSPC has no more free space than when
 * it failed (and BG_FULL_RETRY has not passed): a retry would write the same
 * bytes and fail at the same point.  The next check is a backoff later.
 * REQUIRES mu held.
 */
static int still_full(struct kv_db *db, uint64_t now)
{
	uint64_t free_now;

	if (!db->bg_full || db->bg_error != -ENOSPC || now - db->bg_full_at >= BG_FULL_RETRY)
		return 0;
	if (env_free_space(db->env, db->dir, &free_now) < 0 || free_now > db->bg_full_free)
		return 0;
	db->bg_backoff = db->bg_backoff * 2 > BG_BACKOFF_MAX ? BG_BACKOFF_MAX : db->bg_backoff * 2;
	db->bg_retry_at = now + db->bg_backoff;
	return 1;
}

int db_bg_check(struct kv_db *db)
{
	uint64_t now;

	if (!db->bg_error)
		return 0;
	now = now_micros();
	if (db_error_transient(db->bg_error) && now >= db->bg_retry_at && !still_full(db, now)) {
		db_log(db, KV_LOG_INFO, "retrying after: %s", db->bg_error_msg);
		db->bg_error = 0;
		pthread_cond_broadcast(&db->work_cv);
		return 0;
	}
	return ERR_SET(db->bg_error, "%s", db->bg_error_msg);
}

/* The CLOCK_REALTIME time (pthread_cond_timedwait's) micros from now. */
static void deadline_in(uint64_t micros, struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(micros / 1000000u);
	ts->tv_nsec += (long)(micros % 1000000u) * 1000;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void db_bg_wait(struct kv_db *db)
{
	struct timespec ts;
	uint64_t now = now_micros(), wait;

	if (!db_error_transient(db->bg_error)) {
		pthread_cond_wait(&db->work_cv, &db->mu);
		return;
	}
	if (now >= db->bg_retry_at) {
		db_bg_check(db);
		return;
	}
	wait = db->bg_retry_at - now;
	deadline_in(wait, &ts);
	pthread_cond_timedwait(&db->work_cv, &db->mu, &ts);
}

static char *log_path(struct kv_db *db, uint64_t number)
{
	return fname_log(db->dir, number);
}

/* The error of every mutation of a database opened read-only. */
static int db_read_only(struct kv_db *db)
{
	return ERR_SET(-EROFS, "%s: the database is open read-only", db->dir);
}

/* ------------------------------------------------------------ trees */

uint32_t db_tree_id(const struct kv_tree *t)
{
	return t ? t->id : 0;
}

struct kv_tree *db_tree(struct kv_db *db, const struct kv_tree *t)
{
	return t ? (struct kv_tree *)t : db->trees[0];
}

struct kv_tree *db_tree_by_id(struct kv_db *db, uint32_t id)
{
	for (size_t i = 0; i < db->ntrees; i++)
		if (db->trees[i]->id == id)
			return db->trees[i];
	return NULL;
}

/* The in-memory half of version-set tree vt.  REQUIRES mu held. */
static struct kv_tree *tree_attach(struct kv_db *db, struct vtree *vt)
{
	struct kv_tree *t = xcalloc(1, sizeof(*t));

	t->id = vt->id;
	t->vt = vt;
	t->mem = mem_new_pooled(db->mem_pool);
	t->compression_level = db->opt.compression_level;
	t->dropped = vt->dropped;
	if (vt->id == 0)
		t->filter = db->opt.compaction_filter;
	db->trees = xrealloc(db->trees, (db->ntrees + 1) * sizeof(*db->trees));
	db->trees[db->ntrees++] = t;
	return t;
}

static void tree_free(struct kv_tree *t)
{
	if (t->mem)
		mem_unref(t->mem);
	if (t->imm)
		mem_unref(t->imm);
	free(t);
}

/* ------------------------------------------------------------ recovery */

struct replay {
	struct kv_db *db;
	uint64_t log;
};

static int replay_apply(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
			struct slice value)
{
	struct replay *rp = arg;
	struct kv_tree *t = db_tree_by_id(rp->db, tree);

	/* a dropped tree's writes, and writes a tree has in its tables already, are skipped */
	if (t && !t->dropped && rp->log >= t->vt->log_number)
		mem_add(t->mem, seq, type, key, value);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Flush every tree's non-empty memtable to level 0 (only_full: those over
 * the write buffer size), one edit per tree.  On a disk without room the
 * writes stay in memory instead: recovery_full is set, no later flush of
 * this recovery is tried, and recover() keeps the logs that hold them.
 * REQUIRES mu held.
 */
static int flush_recovered(struct kv_db *db, int only_full)
{
	if (db->recovery_full)
		return 0;
	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		struct version_edit edit;
		int r;

		if (mem_entries(t->mem) + mem_range_dels(t->mem) == 0)
			continue;
		if (only_full && mem_bytes(t->mem) <= db->opt.write_buffer_size)
			continue;
		edit_init(&edit);
		edit.tree = t->id;
		r = db_write_level0(db, t, t->mem, &edit, NULL);
		if (r == 0)
			r = vs_apply_only(db->vs, &edit);
		if (edit.nadds)
			db_pending_remove(db, edit.adds[0].f->number);
		edit_free(&edit);
		if (is_space_error(r)) {
			db_log(db, KV_LOG_WARN, "recovery cannot write its tables (%s): the "
			       "recovered writes stay in memory and in their logs until a flush "
			       "succeeds", kv_strerror(r));
			db->recovery_full = 1;
			return 0;
		}
		if (r < 0)
			return r;
		mem_unref(t->mem);
		t->mem = mem_new_pooled(db->mem_pool);
	}
	return 0;
}

/* How the replay of one log ended (replay_log). */
struct log_replay {
	uint64_t end;          /* offset just past its last good record */
	uint64_t last_seq;     /* of its last record replayed; 0 if none was */
	int gap;               /* its first record does not follow the log before: not replayed */
	int lost;              /* it ends in power-cut damage or a record cut short */
};

/*
 * Replay one log into the trees' memtables, flushing to level 0 when one
 * fills; *lr tells how it ended.
 *
 * Any log may end in bytes never synced, which a power cut leaves as the
 * page cache's writeback did or did not write them (whole pages of zeros or
 * of stale data between records that reached the disk): the last log, a
 * failed log, and since a retired log is synced only when a synced write
 * needs it (switch_log), every other log too.  So every log is read with
 * the stop-at-damage rule (wal.h): the first record damaged as a power cut
 * damages ends the log there, what follows is dropped and logged, and
 * lr->lost is set.  Damage with an intact record right after it (a flipped
 * byte) is still corruption: a power cut does not leave that.
 *
 * expect (0: anything) is the sequence the log's first record must carry:
 * one past the last record of the log before.  A log cut at a record
 * boundary (its unsynced pages dropped or zeroed) looks whole on its own;
 * the next log's first record then starts later than expected, and that
 * log is not replayed (lr->gap).  REQUIRES mu held; nothing else runs yet.
 */
static int replay_log(struct kv_db *db, uint64_t number, uint64_t expect, int last,
		      const struct failed_log *fl, uint64_t *max_seq, struct log_replay *lr)
{
	char *path = log_path(db, number);
	struct replay rp = { db, number };
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct slice rec;
	uint64_t size, torn_at;
	uint32_t count;
	int r;

	memset(lr, 0, sizeof(*lr));
	if ((r = env_file_size(db->env, path, &size)) < 0 ||
	    (r = env_open_read(db->env, path, &f)) < 0)
		goto out;
	rd = wal_reader_new(f, size, path);
	wal_reader_stop_at_damage(rd, 1);
	while ((r = wal_read(rd, &rec)) > 0) {
		if ((r = batch_check(rec, &count)) < 0) {
			r = ERR_CORRUPT("%s: damaged batch in the record before offset %llu: %s", path,
				       (unsigned long long)wal_reader_offset(rd), err_last());
			goto out;
		}
		uint64_t first = dec_fixed64(rec.data);
		if (expect && !lr->last_seq && first != expect) {
			lr->gap = 1;
			db_log(db, KV_LOG_WARN, "%s: its first record has sequence %llu where %llu "
			       "was expected: the log before lost its unsynced tail", path,
			       (unsigned long long)first, (unsigned long long)expect);
			r = 0;
			goto out;
		}
		batch_apply(rec, count, replay_apply, &rp);
		if (count)
			lr->last_seq = first + count - 1;
		if (count && first + count - 1 > *max_seq)
			*max_seq = first + count - 1;
		/* read-only: everything stays in memory, however large */
		if (!db->opt.read_only && (r = flush_recovered(db, 1)) < 0)
			goto out;
	}
	lr->end = wal_reader_offset(rd);
	if (r == 0 && wal_reader_torn(rd, &torn_at) && wal_reader_damage(rd)) {
		lr->lost = 1;
		db_log(db, KV_LOG_WARN, "%s: damaged record at offset %llu (%s) in the unsynced "
		       "tail of %s log: recovery stops there, dropping %llu bytes",
		       path, (unsigned long long)torn_at, wal_reader_damage(rd),
		       last ? "the last" : fl ? "a failed" : "a",
		       (unsigned long long)(size - torn_at));
	} else if (r == 0 && wal_reader_torn(rd, &torn_at)) {
		/* zeros alone are space reserved ahead for the log, not a write cut short */
		int zeros = wal_reader_torn_zeros(rd);
		lr->lost = !zeros;
		db_log(db, zeros ? KV_LOG_DEBUG : KV_LOG_WARN,
		       zeros ? "%s: ends in reserved space (zeros) at offset %llu"
			     : "%s: torn tail at offset %llu (an unfinished write) ignored",
		       path, (unsigned long long)torn_at);
	}
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(path);
	return r;
}

/*
 * 1 if log number holds nothing but zeros (or nothing): a log started by
 * an open or a memtable switch that crashed before its first write.
 */
static int log_is_blank(struct kv_db *db, uint64_t number)
{
	char *path = log_path(db, number);
	struct wal_reader *rd;
	struct env_file *f;
	uint64_t size;
	int r;

	if ((r = env_file_size(db->env, path, &size)) < 0 ||
	    (r = env_open_read(db->env, path, &f)) < 0) {
		free(path);
		return r;
	}
	rd = wal_reader_new(f, size, path);
	r = wal_reader_blank(rd);
	wal_reader_free(rd);
	env_close(f);
	free(path);
	return r;
}

/*
 * 1 if dir holds any table, or a manifest that records more than an empty
 * default tree: the remains of a database.  A directory holding only what a
 * first open leaves before CURRENT exists (a log, an initial manifest,
 * CURRENT.tmp) is still a new database: nothing in it was acknowledged.
 */
static int has_database_files(struct kv_db *db)
{
	char **names;
	size_t n;
	int found = 0;

	if (env_list_dir(db->env, db->dir, &names, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !found; i++) {
		uint64_t num;
		enum fname_kind k = fname_parse(names[i], &num);
		if (k == FNAME_SST) {
			found = 1;
		} else if (k == FNAME_MANIFEST) {
			/* a first open killed before CURRENT was written leaves an initial one */
			char *p = xasprintf("%s/%s", db->dir, names[i]);
			found = !vs_manifest_is_initial(db->vs, p);
			free(p);
		}
	}
	env_free_list(names, n);
	return found;
}

static int recover(struct kv_db *db)
{
	uint64_t *logs = NULL, max_seq, min_log;
	char **names = NULL;
	size_t nnames = 0, nlogs = 0;
	struct env_file *f;
	char *path;
	int r;

	r = vs_recover(db->vs);
	if (r == -ENOENT && has_database_files(db)) {
		/* starting afresh here would delete every table as obsolete */
		return ERR_CORRUPT("%s/CURRENT is missing, but the directory holds tables or a "
				  "manifest: refusing to start an empty database over them", db->dir);
	}
	if (r == -ENOENT) {
		if (db->opt.read_only)
			return ERR_SET(-ENOENT, "%s: no database here (opened read-only, so none "
					"is created)", db->dir);
		if (!db->opt.create_if_missing)
			return ERR_SET(-ENOENT, "%s: no database here (and create_if_missing is off)",
					db->dir);
		vs_init_empty(db->vs);
		db_log(db, KV_LOG_INFO, "creating a new database");
	} else if (r < 0) {
		return r;
	} else if (db->opt.error_if_exists) {
		return ERR_SET(-EEXIST, "%s: a database exists already", db->dir);
	}
	for (size_t i = 0; i < db->vs->ntrees; i++)
		tree_attach(db, db->vs->trees[i]);

	/*
	 * The manifest records the last sequence at its last edit; tables never
	 * exceed it, but take their word too, so a stale record cannot hide data.
	 */
	max_seq = db->vs->last_seq;
	for (size_t ti = 0; ti < db->vs->ntrees; ti++) {
		struct version *v = db->vs->trees[ti]->current;
		for (int l = 0; l < NUM_LEVELS; l++)
			for (size_t i = 0; i < v->nfiles[l]; i++)
				if (v->files[l][i]->largest_seq > max_seq)
					max_seq = v->files[l][i]->largest_seq;
	}
	r = env_list_dir(db->env, db->dir, &names, &nnames);
	if (r < 0)
		goto out;
	min_log = vs_min_log_number(db->vs);
	logs = xmalloc((nnames + 1) * sizeof(*logs));
	for (size_t i = 0; i < nnames; i++) {
		uint64_t n;
		enum fname_kind k = fname_parse(names[i], &n);
		if (k == FNAME_LOG && n && n >= min_log)
			logs[nlogs++] = n;
		if ((k == FNAME_LOG || k == FNAME_SST) && n >= db->vs->next_file)
			db->vs->next_file = n + 1;
	}
	qsort(logs, nlogs, sizeof(*logs), cmp_u64);
	/* the last log is the newest that holds anything (see replay_log) */
	size_t last = nlogs;
	while (last > 1) {
		r = log_is_blank(db, logs[last - 1]);
		if (r < 0)
			goto out;
		if (!r)
			break;
		last--;
	}
	size_t nreplayed = nlogs;
	uint64_t end = 0, last_end = 0, expect = 0, min_seq = vs_min_log_seq(db->vs);
	/*
	 * The manifest knows where the oldest log needed begins: a power cut
	 * that took all of it (a retired log is closed unsynced, and may be
	 * needed until its flush is recorded) shows as a gap in the next one.
	 */
	if (nlogs && logs[0] == min_log && min_seq)
		expect = min_seq + 1;
	for (size_t i = 0; i < nlogs; i++) {
		const struct failed_log *fl = vs_failed_log(db->vs, logs[i]);
		struct log_replay lr;
		r = replay_log(db, logs[i], expect, i + 1 == last, fl, &max_seq, &lr);
		if (r < 0)
			goto out;
		if (lr.gap) {
			/* the log before lost writes: this one and the later ones go (below) */
			nreplayed = i;
			break;
		}
		end = lr.end;
		if (i + 1 == last)
			last_end = end;
		if (lr.last_seq)
			expect = lr.last_seq + 1;
		if (fl) {
			/*
			 * A failed log's sequences after its last record were used
			 * up by the group that failed: the next log starts later.
			 */
			expect = 0;
		}
		/*
		 * A log that lost bytes to a power cut ends the history there:
		 * the later logs can hold only unsynced writes (a synced write
		 * waits until every older log is synced, sync_prepare; after a
		 * log failure, until that log's writes are in tables,
		 * flush_failed_log, and then no tree needs the log), and keeping
		 * them would leave a hole in it.  What remains is the state at a
		 * point in time.  A failed log lost bytes if it ends before the
		 * bytes acknowledged in it; what follows them (the failed
		 * group's records) may be torn without loss.  After the last
		 * log that holds anything, only blank logs can follow: a cut
		 * there drops nothing, except that a failed log cut short is
		 * recorded as cut (below), as it always was.
		 */
		int lost = fl ? end < fl->acked : lr.lost;
		if (lost && (fl || i + 1 < last)) {
			nreplayed = i + 1;
			db_log(db, KV_LOG_WARN, "log %06llu lost its unsynced tail to a power cut "
			       "at offset %llu%s: recovery stops there and drops the %zu later "
			       "logs (unsynced writes only)", (unsigned long long)logs[i],
			       (unsigned long long)end,
			       fl ? " (before the bytes acknowledged in it)" : "",
			       nlogs - nreplayed);
			break;
		}
	}
	if (db->opt.read_only) {
		/* no flush, no new log or manifest: the directory stays as it is */
		db->last_seq = max_seq;
		r = 0;
		goto out;
	}
	if (nreplayed < nlogs) {
		/*
		 * The logs recovery dropped go before anything records the cut
		 * log as whole (below): a crash in between finds it still short.
		 */
		struct failed_log cut = { logs[nreplayed - 1], end };
		for (size_t i = nreplayed; i < nlogs; i++) {
			path = log_path(db, logs[i]);
			r = env_unlink(db->env, path);
			free(path);
			if (r < 0 && r != -ENOENT)
				goto out;
		}
		if ((r = env_sync_dir(db->env, db->dir)) < 0)
			goto out;
		vs_add_failed_log(db->vs, &cut);
		last = nreplayed;
		last_end = end;
	}
	if ((r = flush_recovered(db, 0)) < 0)
		goto out;
	db->last_seq = max_seq;

	/* a fresh log for new writes, then a manifest that no longer needs the old ones */
	db->wal_number = vs_new_file_number(db->vs);
	path = log_path(db, db->wal_number);
	r = env_open_log(db->env, path, &f);
	free(path);
	if (r < 0)
		goto out;
	db->wal = wal_writer_new(f);
	db->wal_seq = max_seq;
	for (size_t i = 0; i < db->vs->ntrees; i++) {
		struct vtree *vt = db->vs->trees[i];
		struct kv_tree *t = db_tree_by_id(db, vt->id);
		/* a tree whose recovered writes stayed in memory still needs their logs */
		if (!t || mem_entries(t->mem) + mem_range_dels(t->mem) == 0) {
			vt->log_number = db->wal_number;
			vt->log_seq = max_seq;
		}
	}
	if (db->recovery_full && last > 0) {
		/*
		 * The last log is one no more: record how far it was read, so a
		 * later recovery reads its unsynced tail as that of a failed log.
		 * And the first synced write flushes the writes kept in memory
		 * before it goes on (flush_failed_log): until then, the old logs'
		 * unsynced bytes are all that hold them.
		 */
		struct failed_log kept = { logs[last - 1], last_end };
		if (!vs_failed_log(db->vs, kept.number))
			vs_add_failed_log(db->vs, &kept);
		db->failed_log = logs[last - 1];
	}
	db->vs->last_seq = max_seq;
	r = vs_new_manifest(db->vs);
	if (r < 0)
		goto out;
	r = env_sync_dir(db->env, db->dir);
out:
	env_free_list(names, nnames);
	free(logs);
	return r;
}

/* ------------------------------------------------------------ open / close */

int kv_open(const char *dir, const struct kv_options *opt, struct kv_db **dbp)
{
	API_ENTRY();
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
	pthread_cond_init(&db->log_cv, NULL);
	db->snapshots.next = db->snapshots.prev = &db->snapshots;
	db->group = kv_batch_new();

	if (db->opt.create_if_missing && !db->opt.read_only) {
		r = env_mkdir(db->env, dir);
		if (r < 0)
			goto fail;
	} else if (!env_exists(db->env, dir)) {
		r = ERR_SET(-ENOENT, "%s: no such directory", dir);
		goto fail;
	}
	lock_path = fname_lock(dir);
	if (db->opt.read_only) {
		r = env_lock_shared(db->env, lock_path, &db->lock);
		if (r < 0 && r != -EBUSY) {
			/* no LOCK file, or none we may open: creating one would be a write */
			db_log(db, KV_LOG_INFO, "read-only open without a lock: %s", kv_strerror(r));
			db->lock = NULL;
			r = 0;
		}
	} else {
		r = env_lock(db->env, lock_path, &db->lock);
	}
	if (r < 0)
		goto fail;
	/* one memtable's worth: what the last one flushed leaves for the next */
	db->mem_pool = mem_pool_new(db->opt.write_buffer_size);
	db->block_cache = cache_new(db->opt.block_cache_size);
	db->opt.max_open_files = table_budget(db->opt.max_open_files);
	db->tc = tcache_new(db->env, dir, db->opt.max_open_files, db->block_cache,
			    &db->stats.bytes_read_sst);
	tcache_set_no_map(db->tc, db->opt.read_tables_with_pread);
	db->vs = vs_new(dir, db->env, &db->opt, db->tc);
	db->vs->mu = &db->mu;   /* released while an edit is synced (vs_log_and_apply) */

	pthread_mutex_lock(&db->mu);
	r = recover(db);
	if (r == 0 && !db->opt.read_only)
		db_delete_obsolete_files(db);
	pthread_mutex_unlock(&db->mu);
	if (r < 0)
		goto fail;
	if (db->opt.read_only) {
		/* nothing to flush or compact: no background threads */
		free(lock_path);
		*dbp = db;
		return 0;
	}

	if (pthread_create(&db->flush_thread, NULL, db_flush_main, db) != 0 ||
	    pthread_create(&db->compact_thread, NULL, db_compact_main, db) != 0 ||
	    pthread_create(&db->log_thread, NULL, db_log_main, db) != 0) {
		r = ERR_SET(-EAGAIN, "%s: cannot start background threads", dir);
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
		snprintf(msg, sizeof(msg), "%s", err_last());
		kv_close(db);
		ERR_SET(r, "%s", msg);
	}
	return r;
}

static int close_failed_log(struct kv_db *db);

/*
 * 1 if the background error is a full disk's (a flush or compaction that
 * failed for want of space) and the disk has more room now than when it
 * failed: the work was not retried before the close, but nothing was lost
 * by it (a memtable that was not flushed is still in its log, a
 * compaction's inputs are still there), and the next open redoes it.
 */
static int full_disk_cleared(struct kv_db *db)
{
	uint64_t free_now;

	return db->bg_error == -ENOSPC && db->bg_full &&
	       env_free_space(db->env, db->dir, &free_now) == 0 && free_now > db->bg_full_free;
}

int kv_close(struct kv_db *db)
{
	API_ENTRY();
	int r, rf = 0;

	if (!db)
		return 0;
	if (db->threads_started)
		rf = close_failed_log(db);
	pthread_mutex_lock(&db->mu);
	__atomic_store_n(&db->shutting_down, 1, __ATOMIC_RELAXED);  /* read unlocked by compactions */
	pthread_cond_broadcast(&db->work_cv);
	pthread_cond_broadcast(&db->log_cv);
	pthread_mutex_unlock(&db->mu);
	if (db->threads_started) {
		pthread_join(db->flush_thread, NULL);
		pthread_join(db->compact_thread, NULL);
		/* a last flush may have needed it (db_sync_logs_before) */
		pthread_mutex_lock(&db->mu);
		db->log_stop = 1;
		pthread_cond_broadcast(&db->log_cv);
		pthread_mutex_unlock(&db->mu);
		pthread_join(db->log_thread, NULL);
	}
	r = db->bg_error && !full_disk_cleared(db) ? db->bg_error : rf;
	for (size_t i = 0; i < db->nretired; i++) {   /* unsynced, as the current log is */
		int rc = wal_writer_free(db->retired[i].w);
		if (r == 0)
			r = rc;
	}
	free(db->retired);
	if (db->wal) {
		int rw = wal_writer_free(db->wal);
		if (r == 0)
			r = rw;
	}
	for (size_t i = 0; i < db->ntrees; i++)
		tree_free(db->trees[i]);
	free(db->trees);
	mem_pool_free(db->mem_pool);   /* every memtable is gone (iterators are freed first) */
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
	pthread_cond_destroy(&db->log_cv);
	pthread_mutex_destroy(&db->mu);
	free(db->dir);
	free(db);
	return r;
}

/* ------------------------------------------------------------ writes */

/*
 * Record in the manifest, before any later log exists, that the current log
 * failed and how many of its bytes were acknowledged: its unsynced tail may
 * then be damaged by a power cut although it is not the last log, and
 * recovery must read it as it reads the last one (replay_log), and stop
 * there if it lost acknowledged bytes (recover).  REQUIRES mu held.
 */
static int record_failed_log(struct kv_db *db)
{
	struct version_edit edit;
	int r;

	if (vs_failed_log(db->vs, db->wal_number))
		return 0;
	edit_init(&edit);
	edit_add_failed_log(&edit, db->wal_number, wal_size(db->wal));
	r = vs_log_and_apply(db->vs, &edit);
	edit_free(&edit);
	if (r < 0)
		db_log(db, KV_LOG_WARN, "log %06llu failed, and recording that in the manifest "
		       "failed too: %s", (unsigned long long)db->wal_number, kv_strerror(r));
	return r;
}

/*
 * Start a new log and make it the one written.  The old one is handed to
 * the log thread (db_log_main), open and unsynced: once no tree needs it,
 * the thread closes it and it is deleted, and its pages are dropped
 * without ever being written (a log of
 * a 64 MiB memtable took tens of milliseconds to sync, and on this machine
 * the host stopped the whole VM for 10-30 ms of it).  The caller of an
 * unsynced write did not ask for a sync, so nothing waits for one.  What
 * keeps the history whole is the rule of sync_prepare: a synced write first
 * has every retired log synced (or waits for it to go), and the new log's
 * name made durable, so it never survives a power cut that an older write
 * did not; and recovery stops at the first log that lost bytes to a power
 * cut, or whose name was lost (a gap in the sequence numbers), dropping the
 * later ones, which can then only hold unsynced writes (recover).  A broken
 * log (a failed append or fsync) is never synced again: its records stay
 * for replay, the manifest records it as failed (record_failed_log) before
 * the new log exists, and a record cut short at its end reads as a torn
 * tail.  The new log is opened with mu released (the caller leads the
 * writers, so nobody else switches or appends).  On failure nothing changes
 * and the next write tries again.  REQUIRES mu held; the caller leads the
 * writers.
 */
static int switch_log(struct kv_db *db)
{
	struct retired_log *rl;
	uint64_t number;
	struct env_file *f;
	char *path;
	int r;

	if (db->wal_broken) {
		db->failed_log = db->wal_number;   /* see flush_failed_log */
		pthread_cond_signal(&db->log_cv);   /* the retired logs are synced now */
		if ((r = record_failed_log(db)) < 0)
			return r;
	}
	number = vs_new_file_number(db->vs);
	path = log_path(db, number);
	pthread_mutex_unlock(&db->mu);
	r = env_open_log(db->env, path, &f);
	pthread_mutex_lock(&db->mu);
	free(path);
	if (r < 0)
		return r;
	if (db->nretired == db->retired_cap) {
		db->retired_cap = db->retired_cap ? db->retired_cap * 2 : 4;
		db->retired = xrealloc(db->retired, db->retired_cap * sizeof(*db->retired));
	}
	rl = &db->retired[db->nretired++];
	rl->number = db->wal_number;
	rl->w = db->wal;
	rl->broken = db->wal_broken;
	rl->released = 0;
	if (db->wal_broken)
		db_log(db, KV_LOG_INFO, "writes go on in log %06llu after log %06llu failed",
		       (unsigned long long)number, (unsigned long long)db->wal_number);
	db->wal = wal_writer_new(f);
	db->wal_number = number;
	db->wal_seq = db_last_seq(db);   /* the leader's: nothing is appended meanwhile */
	db->wal_broken = 0;
	db->log_dir_gen++;   /* its name is not durable yet */
	pthread_cond_signal(&db->log_cv);   /* the old one may need nothing already */
	return 0;
}

/*
 * Sync and close one retired log, for a synced write (sync_prepare).  Called
 * without mu.  Returns the sync's error.
 */
static int retire_log(struct kv_db *db, const struct retired_log *rl)
{
	int r = rl->broken ? 0 : wal_sync(rl->w), rc;

	if (r < 0)
		db_log(db, KV_LOG_WARN, "syncing retired log %06llu failed: %s; its writes are "
		       "flushed to tables before the synced write goes on",
		       (unsigned long long)rl->number, kv_strerror(r));
	/* synced: a failed close can only leave its reserved tail of zeros,
	 * which replay takes for the end of the log */
	if ((rc = wal_writer_free(rl->w)) < 0 && r == 0 && !rl->broken)
		db_log(db, KV_LOG_WARN, "closing log %06llu: %s", (unsigned long long)rl->number,
		       kv_strerror(rc));
	return r;
}

static int release_idle_trees(struct kv_db *db, uint64_t upto);

/* What the log thread does next with retired[0].  REQUIRES mu held. */
enum log_step { LOG_WAIT, LOG_CLOSE, LOG_RELEASE, LOG_SYNC };

static enum log_step log_next(struct kv_db *db)
{
	const struct retired_log *rl = db->retired;

	if (!db->nretired)
		return LOG_WAIT;
	/* recovery reads the logs from the manifest's oldest on: never this one */
	if (rl->number < vs_min_log_number(db->vs))
		return LOG_CLOSE;
	/* only trees with nothing in memory keep it there: move them on first */
	if (!rl->released && rl->number < db_min_log(db))
		return LOG_RELEASE;
	/*
	 * After a failed log, recovery cannot tell where the next log begins
	 * (the failed group used up sequence numbers): the logs after it are
	 * synced as they retire, until its writes are in tables.
	 */
	if (db->log_sync_wanted || db->nretired > DB_RETIRED_OPEN_MAX || db->failed_log)
		return LOG_SYNC;
	return LOG_WAIT;
}

int db_log_work(struct kv_db *db)
{
	return log_next(db) != LOG_WAIT;
}

/*
 * Have the log thread sync (or close, once obsolete) every retired log
 * numbered below upto, and wait until none is left.  REQUIRES mu held
 * (released while waiting).
 */
static void sync_retired_before(struct kv_db *db, uint64_t upto)
{
	if (!db->nretired || db->retired[0].number >= upto)
		return;
	db->log_sync_wanted++;
	pthread_cond_signal(&db->log_cv);
	while (db->nretired && db->retired[0].number < upto)
		pthread_cond_wait(&db->bg_cv, &db->mu);
	db->log_sync_wanted--;
}

/*
 * A power cut after the flush's manifest edit keeps t's writes up to the
 * boundary whatever became of the logs; another tree's earlier writes in an
 * unsynced log could be lost then, and a row mutation across locality
 * groups come back half applied.  So those logs are synced first, by the log
 * thread, as for a synced write; with one tree written (or the others idle)
 * there is nothing to wait for.  A failed sync makes its log a failed log
 * (db_log_main), as the old background sync did.
 */
void db_sync_logs_before(struct kv_db *db, struct kv_tree *t, uint64_t boundary)
{
	int needed = 0;

	for (size_t i = 0; i < db->ntrees && !needed; i++) {
		struct kv_tree *u = db->trees[i];
		needed = u != t && !u->dropped && u->vt->log_number < boundary &&
			 tree_in_memory(u);
	}
	if (needed)
		sync_retired_before(db, boundary);
}

/*
 * The log thread, for the logs that memtable switches retire, oldest first
 * (log_next says what it does): one that the manifest says no tree needs is
 * closed unsynced, and the kernel drops its dirty pages when it is deleted;
 * one that only trees with nothing in memory keep in the manifest has them
 * moved on first (release_idle_trees, once per log); one that something
 * needs durable (a synced write, a flush other trees depend on, more than
 * DB_RETIRED_OPEN_MAX open, a pending failed log) is synced and closed.  A
 * failed sync makes the log a failed log, as a failed append does
 * (db->failed_log, log_lost): its unsynced writes may never reach the disk,
 * so the next synced write first flushes them to tables (flush_failed_log),
 * and the close does too.  It leaves when kv_close says (log_stop), after
 * the flush and compaction threads; the logs still open then are closed
 * unsynced by kv_close: their writes are in the page cache, as the current
 * log's are.
 */
void *db_log_main(void *arg)
{
	struct kv_db *db = arg;

	pthread_setname_np(pthread_self(), DB_THREAD_LOG);   /* a name only: a failure is harmless */
	pthread_mutex_lock(&db->mu);
	for (;;) {
		enum log_step step = log_next(db);
		struct retired_log rl;
		int r = 0;

		if (step == LOG_WAIT) {
			if (db->log_stop)
				break;
			pthread_cond_wait(&db->log_cv, &db->mu);
			continue;
		}
		rl = db->retired[0];   /* stays listed (and waited for) until done */
		db->log_busy = 1;
		if (step == LOG_RELEASE) {
			db->retired[0].released = 1;   /* once: a failure leaves it to LOG_SYNC */
			r = release_idle_trees(db, rl.number + 1);
			db->log_busy = 0;
			if (r < 0)
				db_log(db, KV_LOG_WARN, "moving idle trees past log %06llu failed: "
				       "%s; it is synced before it is closed",
				       (unsigned long long)rl.number, kv_strerror(r));
			pthread_cond_broadcast(&db->bg_cv);
			continue;
		}
		pthread_mutex_unlock(&db->mu);
		if (step == LOG_CLOSE)
			wal_writer_free(rl.w);   /* a failed close loses nothing needed */
		else
			r = retire_log(db, &rl);
		pthread_mutex_lock(&db->mu);
		memmove(db->retired, db->retired + 1, (db->nretired - 1) * sizeof(*db->retired));
		db->nretired--;
		db->log_busy = 0;
		if (r < 0) {
			if (rl.number > db->failed_log)
				db->failed_log = rl.number;
			db->log_lost = 1;
		}
		pthread_cond_broadcast(&db->bg_cv);
		/*
		 * Its file goes in a deletion pass of the flush thread's: this
		 * thread must be free for the next synced write, and an unlink
		 * of a big file can take tens of milliseconds.
		 */
		db->delete_wanted = 1;
		pthread_cond_broadcast(&db->work_cv);
	}
	pthread_mutex_unlock(&db->mu);
	return NULL;
}

/*
 * Pacing the writers to the flush.  A memtable that fills while the one
 * before it is still being flushed would make the writer that fills it
 * wait for the whole rest of that flush (127 ms with 64 MiB memtables of
 * 1 KiB values, where the flush with its table sync takes longer than the
 * writers take to fill the next memtable).  Instead, once a memtable holds
 * PACE_FROM of the write buffer while the one before it is in flush, the
 * rest of the buffer is let out only as fast as the flush goes: each
 * writer waits, PACE_STEP_US at a time and PACE_MAX_US at most, until the
 * flush has written as large a share of its entries as the memtable holds
 * of that rest (counted up to PACE_DONE_CAP, so the table's sync and the
 * manifest edit after its last entry keep some of the buffer in reserve).
 * A writer never waits longer than PACE_MAX_US here: where the flush makes
 * no progress at all (a stopped disk), writes go on slowly and the memtable
 * fills, as without pacing.
 */
#define PACE_FROM_NUM 3
#define PACE_FROM_DEN 4
#define PACE_DONE_CAP 0.9
#define PACE_STEP_US 100
#define PACE_MAX_US 2000

/* 1 if some tree's memtable is ahead of its flush's progress.  REQUIRES mu held. */
static int flush_behind(struct kv_db *db)
{
	size_t buf = db->opt.write_buffer_size, from = buf / PACE_FROM_DEN * PACE_FROM_NUM;

	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		size_t used, total;
		double done;

		if (t->dropped || !t->imm || (used = mem_bytes(t->mem)) <= from)
			continue;
		total = mem_entries(t->imm) + 1;
		done = (double)__atomic_load_n(&t->imm_done, __ATOMIC_RELAXED) / (double)total;
		if (done > PACE_DONE_CAP)
			done = PACE_DONE_CAP;
		if ((double)(used - from) > done * (double)(buf - from))
			return 1;
	}
	return 0;
}

/* Wait while the flush is behind, at most PACE_MAX_US.  REQUIRES mu held (released inside). */
static void pace_writes(struct kv_db *db)
{
	uint64_t t0 = now_micros(), waited = 0;

	while (waited < PACE_MAX_US && flush_behind(db)) {
		pthread_mutex_unlock(&db->mu);
		usleep(PACE_STEP_US);
		pthread_mutex_lock(&db->mu);
		waited = now_micros() - t0;
	}
	if (waited) {
		db_count(&db->stats.stall_micros, waited);
		db_count(&db->stats.paced_writes, 1);
	}
}

uint64_t db_delay_step(struct write_delay *d, uint64_t base_rate, int l0, int trigger,
		       uint64_t now)
{
	uint64_t rate = base_rate, wait;

	if (l0 < trigger) {
		d->rate = 0;
		return 0;
	}
	for (int i = trigger; i < l0 && rate > DELAY_MIN_RATE; i++)
		rate = rate / 4 * 3;
	if (rate < DELAY_MIN_RATE)
		rate = DELAY_MIN_RATE;
	if (!d->rate || d->until < now)
		d->until = now;    /* no credit for the time nobody wrote */
	else if (d->until - now > DELAY_HORIZON_US)
		d->until = now + DELAY_HORIZON_US;
	d->rate = rate;
	wait = d->until - now;
	if (wait < DELAY_QUANTUM_US)
		return 0;
	return wait < DELAY_MAX_US ? wait : DELAY_MAX_US;
}

void db_delay_charge(struct write_delay *d, uint64_t bytes, uint64_t now)
{
	if (!d->rate)
		return;
	if (d->until < now)
		d->until = now;
	d->until += bytes * 1000000u / d->rate;
}

/*
 * Make sure every tree's active memtable has room, switching full ones (or,
 * with force, every non-empty one) to immutable behind a new log.  Paces
 * writes to a flush that is behind, delays them while a level 0 is crowded
 * (struct write_delay in db.h), and waits while a full tree's previous
 * memtable is still being flushed or its level 0 is full, so memory and
 * level 0 stay bounded.  REQUIRES mu held; the caller leads the writers.
 */
static int make_room(struct kv_db *db, int force)
{
	int delayed = 0, paced = 0;
	uint64_t t0;

	for (;;) {
		int l0 = 0, waiting = 0, switching = 0, r;
		if ((r = db_bg_check(db)) < 0)
			return r;
		if (db->wal_broken && (r = switch_log(db)) < 0)
			return r;
		for (size_t i = 0; i < db->ntrees; i++) {
			struct kv_tree *t = db->trees[i];
			int n0 = (int)t->vt->current->nfiles[0];
			int full = force ? mem_entries(t->mem) + mem_range_dels(t->mem) > 0
					 : mem_bytes(t->mem) >= db->opt.write_buffer_size;
			if (t->dropped)
				continue;
			if (n0 > l0)
				l0 = n0;
			if (full && (t->imm || n0 >= db->opt.l0_stop_trigger))
				waiting = 1;
			else if (full)
				switching = 1;
		}
		if (!paced && !force && !waiting && !switching) {
			pace_writes(db);
			paced = 1;
			continue;
		}
		/* a step at a time, level 0 looked at again after each */
		if (!force && (l0 >= db->opt.l0_slowdown_trigger || db->delay.rate)) {
			uint64_t wait = db_delay_step(&db->delay, db->opt.slowdown_rate, l0,
						      db->opt.l0_slowdown_trigger, now_micros());
			if (wait) {
				t0 = now_micros();
				pthread_mutex_unlock(&db->mu);
				usleep((useconds_t)wait);
				pthread_mutex_lock(&db->mu);
				db_count(&db->stats.stall_micros, now_micros() - t0);
				if (!delayed)
					db_count(&db->stats.delayed_writes, 1);
				delayed = 1;
				continue;
			}
		}
		if (waiting) {
			t0 = now_micros();
			pthread_cond_broadcast(&db->work_cv);
			pthread_cond_wait(&db->bg_cv, &db->mu);
			db_count(&db->stats.stall_micros, now_micros() - t0);
			continue;
		}
		if (!switching)
			return 0;
		if ((r = switch_log(db)) < 0)
			return r;
		for (size_t i = 0; i < db->ntrees; i++) {
			struct kv_tree *t = db->trees[i];
			int full = force ? mem_entries(t->mem) + mem_range_dels(t->mem) > 0
					 : mem_bytes(t->mem) >= db->opt.write_buffer_size;
			if (t->dropped || !full || t->imm)
				continue;
			t->imm = t->mem;
			t->imm_log_boundary = db->wal_number;
			t->imm_log_seq = db->wal_seq;
			__atomic_store_n(&t->imm_done, 0, __ATOMIC_RELAXED);
			t->mem = mem_new_pooled(db->mem_pool);
		}
		force = 0;
		pthread_cond_broadcast(&db->work_cv);
	}
}

/*
 * 1 while some tree may hold writes of db->failed_log in its memtables only,
 * or still names it as a log it needs (an empty tree whose log number was
 * never moved past it: recovery would read the failed log for it).
 * REQUIRES mu held.
 */
static int failed_log_pending(struct kv_db *db)
{
	if (!db->failed_log)
		return 0;
	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		if (!t->dropped && t->vt->log_number <= db->failed_log)
			return 1;
	}
	db->failed_log = 0;
	db->log_lost = 0;
	return 0;
}

/*
 * Move the log number of every tree that holds nothing in memory and whose
 * log number is below upto to the current log: it needs no older log.  One
 * manifest edit per tree.  A caller without the writers' lead may see such a
 * tree written meanwhile: into the current log or a later one, which the new
 * number does not pass, and an edit applied after a newer one of the tree
 * never moves its number back (version.c).  REQUIRES mu held (released for
 * each edit).
 */
static int release_idle_trees(struct kv_db *db, uint64_t upto)
{
	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		struct version_edit edit;
		int r;

		if (t->dropped || tree_in_memory(t) || t->vt->log_number >= upto)
			continue;
		edit_init(&edit);
		edit.tree = t->id;
		edit_set_log(&edit, db->wal_number, db->wal_seq);
		r = vs_log_and_apply(db->vs, &edit);
		edit_free(&edit);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The same, past the failed log.  REQUIRES mu held; the caller leads the writers. */
static int release_failed_log(struct kv_db *db)
{
	return release_idle_trees(db, db->failed_log + 1);
}

/*
 * Before a synced write is acknowledged after a log failed.  The writes
 * acknowledged without KV_SYNC in the failed log may never reach its disk:
 * the failed fsync or append may have lost them, and on Linux a retried
 * fsync of that log returns 0 without writing the pages whose writeback
 * failed.  So they are made durable another way: the memtables that hold
 * them are switched out and flushed to tables, synced and named in a synced
 * manifest edit, and only then may the synced write go on.  Otherwise a
 * power cut could keep that write and lose older acknowledged ones, a hole
 * in the history where recovery promises a point in time.  Waits for the
 * flush; if it fails, returns its error and the synced write fails with it
 * (the next one tries again).  REQUIRES mu held; the caller leads the
 * writers.
 */
static int flush_failed_log(struct kv_db *db)
{
	int r;

	if (!failed_log_pending(db))
		return 0;
	db_log(db, KV_LOG_INFO, "log %06llu failed: flushing the writes it held before a synced "
	       "write", (unsigned long long)db->failed_log);
	if ((r = make_room(db, 1)) < 0)
		return r;
	while (failed_log_pending(db)) {
		if (db->bg_error)
			return ERR_SET(db->bg_error, "%s", db->bg_error_msg);
		if ((r = release_failed_log(db)) < 0)
			return r;
		if (!failed_log_pending(db))
			break;
		pthread_cond_broadcast(&db->work_cv);
		pthread_cond_wait(&db->bg_cv, &db->mu);
	}
	return 0;
}

/*
 * Before a synced write (or kv_sync) goes on: every older log must be as
 * durable as the synced write will be, or a power cut could keep it and
 * lose an older acknowledged write, a hole where recovery promises a point
 * in time (recover drops every log after one that lost bytes, and with them
 * this write).  So: the writes of a failed log are flushed to tables
 * (flush_failed_log); then the retired logs are waited for, which the log
 * thread syncs now (log_sync_wanted) unless a flush makes them obsolete
 * first; a sync that failed there makes its log a failed log, and the loop
 * flushes it in turn.  The flush switches logs, so it retires logs too;
 * only this leader switches, so the wait ends.  Last, the directory is
 * synced if a log was started since it last was: the current log's name
 * must be durable before a write in it is.  REQUIRES mu held; the caller
 * leads the writers.
 */
static int sync_prepare(struct kv_db *db)
{
	uint64_t gen;
	int r;

	for (;;) {
		if ((r = flush_failed_log(db)) < 0)
			return r;
		sync_retired_before(db, UINT64_MAX);
		if (!failed_log_pending(db))
			break;
	}
	if (db->log_dir_synced != db->log_dir_gen) {
		gen = db->log_dir_gen;
		pthread_mutex_unlock(&db->mu);
		r = env_sync_dir(db->env, db->dir);
		pthread_mutex_lock(&db->mu);
		if (r < 0)
			return r;
		db->log_dir_synced = gen;
	}
	return 0;
}

static int apply_to_mem(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
			struct slice value)
{
	struct kv_tree *t = db_tree_by_id(arg, tree);

	/* a batch naming a dropped or unknown tree was refused before the log */
	mem_add(t->mem, seq, type, key, value);
	return 0;
}

/* Every tree a batch names must exist and not be dropped.  REQUIRES mu held. */
static int check_trees(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
		       struct slice value)
{
	struct kv_tree *t = db_tree_by_id(arg, tree);

	(void)seq; (void)type; (void)key; (void)value;
	if (!t || t->dropped)
		return ERR_SET(-ENOENT, "write to tree %u, which was dropped", (unsigned)tree);
	return 0;
}

/*
 * Take the lead of the write queue without a batch, for work that changes
 * what writers use (memtable switches, the tree list).  REQUIRES mu held.
 */
static void lead_enter(struct kv_db *db, struct writer *w)
{
	memset(w, 0, sizeof(*w));
	pthread_cond_init(&w->cv, NULL);
	if (db->writers_tail)
		db->writers_tail->next = w;
	else
		db->writers_head = w;
	db->writers_tail = w;
	while (db->writers_head != w)
		pthread_cond_wait(&w->cv, &db->mu);
}

static void lead_leave(struct kv_db *db, struct writer *w)
{
	db->writers_head = w->next;
	if (!db->writers_head)
		db->writers_tail = NULL;
	else
		pthread_cond_signal(&db->writers_head->cv);
	pthread_cond_destroy(&w->cv);
}

/*
 * An empty batch with KV_SYNC: make every write committed so far durable.
 * Holding the write lead, no group is being appended and the log cannot be
 * switched, so syncing the current log covers everything committed once the
 * retired logs are synced and a failed one's writes flushed (sync_prepare).
 * Called without mu.
 */
static int sync_committed(struct kv_db *db)
{
	struct writer w;
	int r, failed = 0;

	pthread_mutex_lock(&db->mu);
	lead_enter(db, &w);
	r = db_bg_check(db);
	/* a broken log is never synced again: a new one, and its writes flushed */
	if (r == 0 && (db->wal_broken || db->failed_log))
		r = make_room(db, 0);
	if (r == 0)
		r = sync_prepare(db);
	pthread_mutex_unlock(&db->mu);
	if (r == 0 && (r = wal_sync(db->wal)) < 0)
		failed = 1;
	pthread_mutex_lock(&db->mu);
	if (failed)
		db->wal_broken = db->log_lost = 1;   /* a failed fsync may have lost what it was to keep */
	lead_leave(db, &w);
	pthread_mutex_unlock(&db->mu);
	return r;
}

/*
 * At close, after a log failure that may have cost the page cache its copy
 * of acknowledged writes (db->log_lost): the next open would read them back
 * from that log, and find them missing or damaged.  So they are flushed to
 * tables first, as a synced write would (flush_failed_log).  A failure is
 * returned (and logged); what the log still holds stays for the next open.
 * Called without mu, before the background threads stop.
 */
static int close_failed_log(struct kv_db *db)
{
	struct writer w;
	int r = 0;

	pthread_mutex_lock(&db->mu);
	/* a retired log whose sync fails becomes a failed log: know it first */
	while (db->log_busy || db_log_work(db)) {
		pthread_cond_signal(&db->log_cv);   /* a failed log may have made work unseen */
		pthread_cond_wait(&db->bg_cv, &db->mu);
	}
	if (db->log_lost && (db->failed_log || db->wal_broken)) {
		lead_enter(db, &w);
		r = make_room(db, 0);
		if (r == 0)
			r = flush_failed_log(db);
		lead_leave(db, &w);
		if (r < 0)
			db_log(db, KV_LOG_WARN, "closing after log %06llu failed: its writes could "
			       "not be flushed: %s", (unsigned long long)db->failed_log,
			       kv_strerror(r));
	}
	pthread_mutex_unlock(&db->mu);
	return r;
}

int kv_write(struct kv_db *db, const struct kv_batch *b, unsigned flags)
{
	API_ENTRY();
	struct writer w = { .batch = b, .sync = (flags & KV_SYNC) || db->opt.sync_wal };
	struct slice recs[64];
	struct writer *last, *x;
	size_t nrecs = 0, bytes = 0, max_bytes;
	uint64_t seq;
	int r, sync, lost = 0;

	if (db->opt.read_only)
		return db_read_only(db);
	if (kv_batch_count(b) == 0)
		return (flags & KV_SYNC) ? sync_committed(db) : 0;
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
	if (r == 0 && w.sync)
		r = sync_prepare(db);
	seq = db_last_seq(db);
	last = &w;
	sync = w.sync;
	max_bytes = b->rep.len <= (128u << 10) ? b->rep.len + (128u << 10) : (1u << 20);
	if (r == 0) {
		for (x = &w; x && nrecs < 64; x = x->next) {
			if (x != &w && !x->batch)
				break;   /* a flush or tree change waiting for the lead */
			if (x != &w && bytes + x->batch->rep.len > max_bytes)
				break;
			if (x->sync && !sync && x != &w)
				break;  /* do not make a fast write wait for someone's fsync */
			if (x->batch->count && batch_has_trees(x->batch)) {
				int rt = batch_apply(buf_slice(&x->batch->rep),
						     (uint32_t)x->batch->count, check_trees, db);
				if (rt < 0) {
					if (x == &w) {
						r = rt;
						break;
					}
					break;   /* it leads next and fails alone */
				}
			}
			batch_set_seq((struct kv_batch *)x->batch, seq + 1);
			seq += kv_batch_count(x->batch);
			recs[nrecs++] = buf_slice(&x->batch->rep);
			bytes += x->batch->rep.len;
			last = x;
		}
		pthread_mutex_unlock(&db->mu);
		if (r == 0)
			r = wal_addv(db->wal, recs, nrecs);
		if (r == 0 && sync && (r = wal_sync(db->wal)) < 0)
			lost = 1;
		else if (r < 0 && !is_space_error(r))
			lost = 1;   /* an I/O error may have cost the page cache its copy */
		if (r == 0) {
			for (x = &w; ; x = x->next) {
				batch_apply(buf_slice(&x->batch->rep), (uint32_t)x->batch->count,
					    apply_to_mem, db);
				if (x == last)
					break;
			}
			db_count(&db->stats.bytes_written_wal, bytes + nrecs * WAL_HEADER);
		}
		pthread_mutex_lock(&db->mu);
		if (r == 0) {
			__atomic_store_n(&db->last_seq, seq, __ATOMIC_RELEASE);
			if (db->delay.rate)
				db_delay_charge(&db->delay, bytes, now_micros());
		} else if (nrecs) {
			/*
			 * The log may hold part or all of this group: the next write
			 * starts a new log, and the group's sequence numbers are used
			 * up, so that a record of it that a reopen replays never shares
			 * a sequence number with a later, acknowledged write.
			 */
			db->wal_broken = 1;
			db->log_lost |= lost;
			__atomic_store_n(&db->last_seq, seq, __ATOMIC_RELEASE);
		}
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

/*
 * A batch of one mutation of n key and value bytes: on the stack when it
 * fits (no allocation on the common small write), else on the heap.
 */
#define ONE_WRITE_STACK 512

static struct kv_batch *one_write_batch(struct kv_batch *sb, char *mem, size_t n)
{
	if (n <= ONE_WRITE_STACK - BATCH_HEADER - BATCH_MUTATION_OVERHEAD) {
		batch_init_fixed(sb, mem, ONE_WRITE_STACK);
		return sb;
	}
	return kv_batch_new();
}

static void one_write_done(struct kv_batch *sb, struct kv_batch *b)
{
	if (b != sb)
		kv_batch_free(b);
}

int kv_put(struct kv_db *db, const void *key, size_t klen, const void *val, size_t vlen,
	   unsigned flags)
{
	API_ENTRY();
	char mem[ONE_WRITE_STACK];
	struct kv_batch sb, *b = one_write_batch(&sb, mem, klen + vlen);
	int r = kv_batch_put(b, key, klen, val, vlen);

	if (r == 0)
		r = kv_write(db, b, flags);
	one_write_done(&sb, b);
	return r;
}

int kv_delete(struct kv_db *db, const void *key, size_t klen, unsigned flags)
{
	API_ENTRY();
	char mem[ONE_WRITE_STACK];
	struct kv_batch sb, *b = one_write_batch(&sb, mem, klen);
	int r = kv_batch_delete(b, key, klen);

	if (r == 0)
		r = kv_write(db, b, flags);
	one_write_done(&sb, b);
	return r;
}

int kv_delete_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen,
		    unsigned flags)
{
	API_ENTRY();
	char mem[ONE_WRITE_STACK];
	struct kv_batch sb, *b = one_write_batch(&sb, mem, slen + elen);
	int r = kv_batch_delete_range(b, start, slen, end, elen);

	if (r == 0)
		r = kv_write(db, b, flags);
	one_write_done(&sb, b);
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
 * The largest sequence <= snap of a memtable tombstone covering ukey: a
 * binary search in each of the few sets of the memtable's range index.
 */
static uint64_t mem_covering(struct memtable *m, struct slice ukey, uint64_t snap)
{
	struct rdel_view *v = mem_range_view(m);
	uint64_t best = rdel_view_covering(v, ukey, snap);

	rdel_view_release(v);
	return best;
}

/* 1: the memtable decides (found or deleted), 0: look further. */
static int mem_lookup(struct memtable *m, struct slice ukey, uint64_t hash, uint64_t snap,
		      int *type, struct buf *val)
{
	uint64_t seq, tomb = mem_covering(m, ukey, snap);
	struct slice v;

	if (mem_get(m, ukey, hash, snap, type, &seq, &v) && seq > tomb) {
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
	API_ENTRY();
	return kv_get_tree(db, NULL, snap, key, klen, val, vlen);
}

int kv_get_tree(struct kv_db *db, struct kv_tree *tree, const struct kv_snapshot *snap,
		const void *key, size_t klen, char **val, size_t *vlen)
{
	API_ENTRY();
	struct kv_tree *t = db_tree(db, tree);
	struct slice ukey = slice_make(key, klen);
	uint64_t hash = bloom_hash(ukey);   /* once, for every memtable's and table's filter */
	struct memtable *mem, *imm;
	struct version *v;
	struct buf out = BUF_INIT;
	uint64_t seq, s;
	int type = KT_DELETE, r;

	*val = NULL;
	*vlen = 0;
	pthread_mutex_lock(&db->mu);
	s = snap ? ((const struct snapshot_node *)snap)->seq : db_last_seq(db);
	mem = t->mem;
	mem_ref(mem);
	imm = t->imm;
	if (imm)
		mem_ref(imm);
	v = t->vt->current;
	version_ref(v);
	pthread_mutex_unlock(&db->mu);

	if ((r = mem_lookup(mem, ukey, hash, s, &type, &out)) == 0 &&
	    (!imm || (r = mem_lookup(imm, ukey, hash, s, &type, &out)) == 0))
		r = version_get(v, ukey, hash, s, &type, &seq, &out, &db->stats.bloom_useful);

	pthread_mutex_lock(&db->mu);
	/* a version replaced while we read it may have been the last to hold some tables */
	if (version_unref(v))
		db_delete_obsolete_files(db);
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

static int any_imm(struct kv_db *db)
{
	for (size_t i = 0; i < db->ntrees; i++)
		if (db->trees[i]->imm)
			return 1;
	return 0;
}

/*
 * Until no deletion pass runs: the files a flush or compaction made obsolete
 * are gone when kv_flush and kv_compact_range return.  REQUIRES mu held.
 */
static void wait_deletions(struct kv_db *db)
{
	while (db->deleting)
		pthread_cond_wait(&db->bg_cv, &db->mu);
}

/* 1 if no tree has a memtable in flush or writes in its active one.  REQUIRES mu held. */
static int nothing_to_flush(struct kv_db *db)
{
	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];

		if (!t->dropped && tree_in_memory(t))
			return 0;
	}
	return 1;
}

/*
 * Until a transient background error's retry time (db_bg_check then clears
 * it, unless the disk is as full as when the work failed).  REQUIRES mu held.
 */
static void wait_retry(struct kv_db *db)
{
	struct timespec ts;
	uint64_t now;

	while (db->bg_error && db_error_transient(db->bg_error) &&
	       (now = now_micros()) < db->bg_retry_at) {
		deadline_in(db->bg_retry_at - now, &ts);
		pthread_cond_timedwait(&db->bg_cv, &db->mu, &ts);
	}
}

/*
 * A flush that meets a transient background error (a flush or compaction
 * that failed for a full disk while this one waited) waits for the retry
 * and tries again, this many times: space freed meanwhile lets it succeed,
 * a disk that stays full fails it within two backoffs (at most a second each).
 */
#define FLUSH_RETRIES 2

int kv_flush(struct kv_db *db)
{
	API_ENTRY();
	struct writer w;
	int r;

	if (db->opt.read_only)
		return db_read_only(db);
	pthread_mutex_lock(&db->mu);
	for (int tries = 0;; tries++) {
		/* lead the writers, so no one inserts while the memtables switch */
		lead_enter(db, &w);
		r = make_room(db, 1);
		lead_leave(db, &w);
		while (r == 0 && any_imm(db) && !db->bg_error) {
			pthread_cond_broadcast(&db->work_cv);
			pthread_cond_wait(&db->bg_cv, &db->mu);
		}
		if (r == 0 && any_imm(db))
			r = ERR_SET(db->bg_error, "%s", db->bg_error_msg);
		/* a compaction's error once the memtables are out is not this call's */
		if (r < 0 && nothing_to_flush(db))
			r = 0;
		if (r == 0 || !db_error_transient(r) || tries == FLUSH_RETRIES)
			break;
		wait_retry(db);
	}
	wait_deletions(db);
	pthread_mutex_unlock(&db->mu);
	return r;
}

int kv_compact_range(struct kv_db *db, const void *start, size_t slen, const void *end, size_t elen)
{
	API_ENTRY();
	return kv_compact_range_tree(db, NULL, start, slen, end, elen);
}

int kv_compact_range_tree(struct kv_db *db, struct kv_tree *tree, const void *start, size_t slen,
			  const void *end, size_t elen)
{
	API_ENTRY();
	struct kv_tree *t = db_tree(db, tree);
	struct manual_compaction m;
	int r = kv_flush(db), top = 0;

	if (r < 0)
		return r;
	memset(&m, 0, sizeof(m));
	m.tree = t;
	if (start) {
		buf_set(&m.lo, start, slen);
		m.has_lo = 1;
	}
	if (end) {
		buf_set(&m.hi, end, elen);
		m.has_hi = 1;
	}
	pthread_mutex_lock(&db->mu);
	m.first_new = db->vs->next_file;
	for (int l = 0; l < NUM_LEVELS; l++)
		if (t->vt->current->nfiles[l])
			top = l;
	/*
	 * Everything moves down to the deepest level holding data (level 1 at
	 * least); then that level's files in the range that this did not write
	 * (those the level above did not overlap) are rewritten into it, so
	 * what only a released snapshot needed, and tombstones with nothing
	 * left below them, are dropped there too.
	 */
	if (top == 0)
		top = 1;
	{
		struct slice lo = buf_slice(&m.lo), hi = buf_slice(&m.hi);
		size_t n;
		free(version_overlapping(t->vt->current, top, m.has_lo ? &lo : NULL,
					 m.has_hi ? &hi : NULL, 0, &n));
		m.in_place = 0;
		for (int l = 0; l <= top && r == 0 && !t->dropped; l++) {
			if (l == top && n == 0)
				break;
			while (db->manual)
				pthread_cond_wait(&db->bg_cv, &db->mu);
			m.level = l;
			m.in_place = l == top;
			m.into_bottom = l == top - 1 && n > 0;
			m.done = 0;
			m.status = 0;
			db->manual = &m;
			pthread_cond_broadcast(&db->work_cv);
			while (!m.done && !db->bg_error)
				pthread_cond_wait(&db->bg_cv, &db->mu);
			if (db->manual == &m)
				db->manual = NULL;
			r = m.done ? m.status : ERR_SET(db->bg_error, "%s", db->bg_error_msg);
		}
	}
	wait_deletions(db);
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
	st->disk_bytes = db->wal ? wal_size(db->wal) : 0;   /* no log when read-only */
	for (size_t i = 0; i < db->ntrees; i++) {
		struct version *v = db->trees[i]->vt->current;
		for (int l = 0; l < NUM_LEVELS && l < 8; l++) {
			st->files_per_level[l] += (int)v->nfiles[l];
			st->disk_bytes += version_level_bytes(v, l);
		}
	}
	pthread_mutex_unlock(&db->mu);
}

/*
 * The "sstables" property: a line per live file of every tree.  The raw
 * (uncompressed) key and value bytes come from each table's properties
 * block, through the table cache: that is I/O, done without the mutex on a
 * pinned version of each tree.  A table that cannot be opened shows
 * "raw ?" (kv_verify reports why).
 */
static void list_sstables(struct kv_db *db, struct buf *out)
{
	char line[512];
	int n;

	for (size_t ti = 0;; ti++) {
		struct version *v;
		char *tn;

		pthread_mutex_lock(&db->mu);
		while (ti < db->ntrees && db->trees[ti]->dropped)
			ti++;
		if (ti >= db->ntrees) {
			pthread_mutex_unlock(&db->mu);
			break;
		}
		v = db->trees[ti]->vt->current;
		version_ref(v);
		tn = ti ? xstrdup(db->trees[ti]->vt->name) : NULL;
		pthread_mutex_unlock(&db->mu);
		for (int l = 0; l < NUM_LEVELS; l++) {
			for (size_t i = 0; i < v->nfiles[l]; i++) {
				const struct file_meta *f = v->files[l][i];
				struct cache_handle *h;
				struct sst *t;
				char raw[32] = "?";

				if (tcache_get(db->tc, f, &t, &h) == 0) {
					const struct sst_props *p = sst_get_props(t);
					snprintf(raw, sizeof(raw), "%llu",
						 (unsigned long long)(p->raw_key_bytes +
								      p->raw_value_bytes));
					tcache_release(db->tc, h);
				}
				n = snprintf(line, sizeof(line),
					     "%s%s%slevel %d %06llu.sst %llu bytes, %llu entries, %llu range "
					     "tombstones, seq %llu..%llu, raw %s bytes\n",
					     tn ? "tree " : "", tn ? tn : "", tn ? " " : "",
					     l, (unsigned long long)f->number,
					     (unsigned long long)f->size,
					     (unsigned long long)f->entries,
					     (unsigned long long)f->range_dels,
					     (unsigned long long)f->smallest_seq,
					     (unsigned long long)f->largest_seq, raw);
				buf_append(out, line, (size_t)n);
			}
		}
		free(tn);
		pthread_mutex_lock(&db->mu);
		if (version_unref(v))
			db_delete_obsolete_files(db);
		pthread_mutex_unlock(&db->mu);
	}
}

/*
 * The memory of every tree's memtables, the active ones and those being
 * flushed apart, and what they hold.  REQUIRES mu held.
 */
static int memtables_line(struct kv_db *db, char *line, size_t cap)
{
	uint64_t active = 0, flushing = 0, entries = 0, rdels = 0;
	size_t nflushing = 0;

	for (size_t i = 0; i < db->ntrees; i++) {
		struct kv_tree *t = db->trees[i];
		active += mem_bytes(t->mem);
		entries += mem_entries(t->mem);
		rdels += mem_range_dels(t->mem);
		if (t->imm) {
			flushing += mem_bytes(t->imm);
			entries += mem_entries(t->imm);
			rdels += mem_range_dels(t->imm);
			nflushing++;
		}
	}
	return snprintf(line, cap, "memtables %llu bytes active, %llu bytes in %zu being flushed "
			"(%llu entries, %llu range deletions)\n", (unsigned long long)active,
			(unsigned long long)flushing, nflushing, (unsigned long long)entries,
			(unsigned long long)rdels);
}

char *kv_property(struct kv_db *db, const char *name)
{
	struct buf out = BUF_INIT;
	struct kv_stats st;
	char line[1024];
	int n;

	if (strcmp(name, "stats") && strcmp(name, "levels") && strcmp(name, "sstables"))
		return NULL;
	kv_get_stats(db, &st);
	pthread_mutex_lock(&db->mu);
	for (size_t ti = 0; ti < db->ntrees && strcmp(name, "sstables"); ti++) {
		struct version *v = db->trees[ti]->vt->current;
		if (db->trees[ti]->dropped)
			continue;
		n = snprintf(line, sizeof(line), "%s%s%slevel  files      bytes\n",
			     ti ? "tree " : "", ti ? db->trees[ti]->vt->name : "", ti ? "\n" : "");
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
			     "compactions %llu (read %llu, wrote %llu bytes; %llu ranges in parallel)\n"
			     "sst bytes read %llu\nblock cache hit rate %.1f%% of %llu\n"
			     "bloom filter skips %llu\nwrite stalls %llu us (%llu writes paced, "
			     "%llu delayed)\n",
			     (unsigned long long)db_last_seq(db),
			     (unsigned long long)st.bytes_written_wal,
			     (unsigned long long)st.flushes, (unsigned long long)st.bytes_flushed,
			     (unsigned long long)st.compactions,
			     (unsigned long long)st.bytes_compacted_read,
			     (unsigned long long)st.bytes_compacted_written,
			     (unsigned long long)st.subcompactions,
			     (unsigned long long)st.bytes_read_sst,
			     lookups ? 100.0 * (double)st.block_cache_hits / (double)lookups : 0.0,
			     (unsigned long long)lookups, (unsigned long long)st.bloom_useful,
			     (unsigned long long)st.stall_micros,
			     (unsigned long long)st.paced_writes,
			     (unsigned long long)st.delayed_writes);
		buf_append(&out, line, (size_t)n);
		n = memtables_line(db, line, sizeof(line));
		buf_append(&out, line, (size_t)n);
	}
	pthread_mutex_unlock(&db->mu);
	if (!strcmp(name, "sstables"))
		list_sstables(db, &out);
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

/* Verify the tables of one version. */
static void verify_version(struct kv_db *db, struct version *v, struct verify_ctx *c)
{
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			const struct file_meta *f = v->files[l][i];
			char *name = fname_sst(NULL, f->number);
			struct cache_handle *h;
			struct sst *t;
			int r;

			c->file = name;
			r = tcache_get(db->tc, f, &t, &h);
			if (r < 0) {
				verify_report(c, 0, kv_strerror(r));
			} else {
				r = sst_verify(t, verify_report, c);
				if (r < 0 && r != -EUCLEAN)
					verify_report(c, 0, kv_strerror(r));
				tcache_release(db->tc, h);
			}
			free(name);
		}
	}
}

int kv_verify(struct kv_db *db, void (*report)(void *arg, const char *file, uint64_t off,
					       const char *msg), void *arg)
{
	API_ENTRY();
	struct verify_ctx c = { report, arg, NULL, 0 };

	for (size_t ti = 0;; ti++) {
		struct version *v;

		pthread_mutex_lock(&db->mu);
		if (ti >= db->ntrees) {
			pthread_mutex_unlock(&db->mu);
			break;
		}
		v = db->trees[ti]->vt->current;
		version_ref(v);
		pthread_mutex_unlock(&db->mu);
		verify_version(db, v, &c);
		pthread_mutex_lock(&db->mu);
		if (version_unref(v))
			db_delete_obsolete_files(db);
		pthread_mutex_unlock(&db->mu);
	}
	pthread_mutex_lock(&db->mu);
	/* read the manifest while no edit can land: none on its way, and none starts */
	vs_wait_idle(db->vs);
	c.file = NULL;
	if (vs_check_manifest(db->vs, report_manifest, &c) < 0 && c.problems == 0)
		c.problems++;
	pthread_mutex_unlock(&db->mu);
	return c.problems ? -EUCLEAN : 0;
}

/* ------------------------------------------------------------ trees: the API */

void kv_tree_options_init(struct kv_tree_options *o)
{
	memset(o, 0, sizeof(*o));
	o->compression_level = -1;
}

static int tree_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

int kv_tree_open(struct kv_db *db, const char *name, const struct kv_tree_options *o,
		 struct kv_tree **out)
{
	API_ENTRY();
	struct kv_tree_options def;
	struct kv_tree *t = NULL;
	struct vtree *vt;
	struct writer w;
	int r = 0;

	*out = NULL;
	if (!tree_name_ok(name))
		return ERR_SET(-EINVAL, "tree name \"%s\": names are 1 to 64 of A-Z a-z 0-9 _ . -",
				name);
	if (!o) {
		kv_tree_options_init(&def);
		o = &def;
	}
	pthread_mutex_lock(&db->mu);
	/* lead the writers: the tree list changes, and the leader reads it without the mutex */
	lead_enter(db, &w);
	if ((r = db_bg_check(db)) < 0)
		goto out;
	vt = vs_tree_by_name(db->vs, name);
	if (vt) {
		t = db_tree_by_id(db, vt->id);
	} else if (db->opt.read_only) {
		r = ERR_SET(-EROFS, "%s: opened read-only: tree %s does not exist and cannot "
			     "be created", db->dir, name);
		goto out;
	} else {
		struct version_edit e;
		edit_init(&e);
		e.tree = db->vs->next_tree;
		e.tree_name = xstrdup(name);
		edit_set_log(&e, db->wal_number, db->wal_seq);   /* nothing of it is in older logs */
		r = vs_log_and_apply(db->vs, &e);
		edit_free(&e);
		if (r < 0)
			goto out;
		t = tree_attach(db, vs_tree_by_name(db->vs, name));
	}
	t->compression_level = o->compression_level >= 0 ? o->compression_level
							  : db->opt.compression_level;
	if (t->compression_level > 22)
		t->compression_level = 22;
	/* the default tree keeps kv_options' filter unless the caller gives another */
	if (o->compaction_filter || t->id != 0)
		t->filter = o->compaction_filter;
	*out = t;
out:
	lead_leave(db, &w);
	pthread_mutex_unlock(&db->mu);
	return r;
}

int kv_tree_drop(struct kv_db *db, struct kv_tree *t)
{
	API_ENTRY();
	struct version_edit e;
	struct writer w;
	int r;

	if (!t || t->id == 0)
		return ERR_SET(-EINVAL, "the default tree cannot be dropped");
	if (db->opt.read_only)
		return db_read_only(db);
	pthread_mutex_lock(&db->mu);
	lead_enter(db, &w);
	/* a flush or compaction of it may be running: let it finish first */
	while ((t->imm || (db->manual && db->manual->tree == t) || db->compacting) &&
	       !db->bg_error)
		pthread_cond_wait(&db->bg_cv, &db->mu);
	if (db->bg_error) {
		r = ERR_SET(db->bg_error, "%s", db->bg_error_msg);
		goto out;
	}
	if (t->dropped) {
		r = 0;
		goto out;
	}
	edit_init(&e);
	e.tree = t->id;
	e.drop_tree = 1;
	t->dropping = 1;
	r = vs_log_and_apply(db->vs, &e);
	t->dropping = 0;
	if (r < 0)
		pthread_cond_broadcast(&db->work_cv);   /* it may need the compaction it was spared */
	edit_free(&e);
	if (r == 0) {
		/* its unflushed writes go too (we lead the writers: no one inserts now) */
		t->dropped = 1;
		mem_unref(t->mem);
		t->mem = mem_new_pooled(db->mem_pool);
		db_delete_obsolete_files(db);
	}
out:
	lead_leave(db, &w);
	pthread_mutex_unlock(&db->mu);
	return r;
}

int kv_tree_list(struct kv_db *db, char ***names, size_t *n)
{
	API_ENTRY();
	pthread_mutex_lock(&db->mu);
	*names = xmalloc((db->ntrees + 1) * sizeof(char *));
	*n = 0;
	for (size_t i = 0; i < db->ntrees; i++)
		if (!db->trees[i]->dropped)
			(*names)[(*n)++] = xstrdup(db->trees[i]->vt->name);
	pthread_mutex_unlock(&db->mu);
	return 0;
}

const char *kv_tree_name(const struct kv_tree *t)
{
	return t->vt->name;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int kv_stray_files(struct kv_db *db, char ***out, size_t *nout)
{
	API_ENTRY();
	char **names = NULL;
	size_t n = 0, nlive, k = 0;
	uint64_t *live, min_log;
	int r;

	*out = NULL;
	*nout = 0;
	r = env_list_dir(db->env, db->dir, &names, &n);
	if (r < 0)
		return r;
	pthread_mutex_lock(&db->mu);
	live = vs_live_files(db->vs, &nlive);
	/*
	 * The rule of db_delete_obsolete_files: a log is needed from the oldest
	 * log number of a tree with unflushed writes on, and the active log
	 * always.  Read-only, every log from the oldest tree's log number on was
	 * replayed and is held in memory only, so all of those are needed.
	 */
	min_log = db->opt.read_only ? vs_min_log_number(db->vs) : db_min_log(db);
	for (size_t i = 0; i < n; i++) {
		uint64_t num;
		enum fname_kind kind = fname_parse(names[i], &num);
		int stray = 0;

		if (kind == FNAME_LOG) {
			stray = num < min_log && num != db->wal_number;
		} else if (kind == FNAME_SST) {
			stray = 1;
			for (size_t j = 0; j < nlive && stray; j++)
				stray = live[j] != num;
			for (size_t j = 0; j < db->npending && stray; j++)
				stray = db->pending_outputs[j] != num;
		} else if (kind == FNAME_MANIFEST) {
			stray = num != db->vs->manifest_number;
		} else {
			stray = kind == FNAME_CURRENT_TMP;
		}
		if (stray)
			names[k++] = names[i];
		else
			free(names[i]);
	}
	pthread_mutex_unlock(&db->mu);
	free(live);
	qsort(names, k, sizeof(*names), cmp_str);
	*out = names;
	*nout = k;
	return 0;
}

int kv_destroy(const char *dir, struct kv_env *env)
{
	API_ENTRY();
	char **names = NULL, *lock_path;
	struct env_file *lock;
	size_t n = 0;
	int r;

	if (!env)
		env = env_posix();
	lock_path = fname_lock(dir);
	r = env_lock(env, lock_path, &lock);
	if (r < 0) {
		free(lock_path);
		return r;
	}
	r = env_list_dir(env, dir, &names, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		uint64_t num;
		enum fname_kind k = fname_parse(names[i], &num);
		if (k != FNAME_OTHER && k != FNAME_LOCK) {
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
