/*
 * repair.c -- kv_repair: salvage what can be read of a damaged database
 * into one that opens, in the spirit of LevelDB's RepairDB.
 *
 * Nothing is ever deleted: what cannot be used is moved into the folder
 * lost/ inside the directory, and every loss is reported (report(), a line
 * each) with what is known of it: the file, the offset, the number of
 * entries or records, the key range.  The steps, with the directory locked
 * as for a writer:
 *
 *   1. The manifest.  CURRENT names it; without a usable CURRENT, the
 *      highest-numbered MANIFEST-* is taken.  Its records are applied in
 *      order until the first that does not read or apply: the state they
 *      describe (the trees, each table's tree and level, the log numbers)
 *      is kept.  A damaged manifest goes to lost/.
 *   2. The tables.  Each NNNNNN.sst is opened and verified.  A table that
 *      verifies stays where it is.  A table that is short by at most the
 *      footer's 8-byte magic number has it restored (the rest of the footer
 *      is checked by its checksum).  A table that opens but has damaged data
 *      blocks is rewritten with the entries of every block that reads back
 *      whole, under a new number, at the same level; the damaged blocks'
 *      key ranges are reported.  A table that cannot be opened goes to
 *      lost/.  Tables the manifest names that are missing are reported and
 *      dropped from it.  A table the manifest does not name is a leftover of
 *      an unfinished flush or compaction when the manifest was read whole
 *      (it goes to lost/), and otherwise is taken into level 0 of the
 *      default tree (when the manifest knew of no other tree; else its tree
 *      is unknown and it goes to lost/).
 *   3. The logs.  Each log the manifest still needs is read up to its first
 *      damaged record (a torn tail is not damage); a damaged log is moved
 *      to lost/ and rewritten with the records before the damage.
 *   4. A new manifest describing the result, and CURRENT naming it.
 *   5. A normal open, which replays the logs, then (if tables were taken in
 *      from outside the manifest, whose level-0 order is then only a guess)
 *      a compaction of every tree, which orders versions by sequence number
 *      whatever their file; then kv_verify.
 */
#include "db.h"
#include "filename.h"
#include "crc32c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct repair {
	char *dir;
	struct kv_env *env;
	struct kv_options opt;
	void (*report)(void *arg, const char *msg);
	void *arg;
	struct version_set *vs;
	struct table_cache *tc;
	int manifest_whole;        /* every record of the manifest was read and applied */
	int manifest_found;        /* some manifest was read */
	uint64_t max_number;       /* the largest file number seen */
	uint64_t max_seq;          /* the largest sequence in a kept table */
	int took_orphans;          /* tables added at level 0 from outside the manifest */
	int unknown_trees;         /* the logs write to trees the manifest does not name */
	uint64_t unknown_mutations;  /* in the log being scanned */
	int lost_made;
	unsigned dropped;          /* things reported as dropped */
};

__attribute__((format(printf, 2, 3)))
static void say(struct repair *rp, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rp->report)
		rp->report(rp->arg, msg);
}

/* A key for people: printable ASCII as is, other bytes as \xNN; at most 48 bytes shown. */
static void show_key(struct slice k, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < k.len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)k.data[i];
		if (i == 48) {
			o += (size_t)snprintf(out + o, size - o, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	out[o] = 0;
}

/* "keys \"a\" to \"b\"" for a range of internal keys (either may be empty: open-ended). */
static void show_range(struct slice lo, struct slice hi, char *out, size_t size)
{
	char a[256], b[256];

	if (lo.len >= 8)
		show_key(ikey_user(lo), a, sizeof(a));
	if (hi.len >= 8)
		show_key(ikey_user(hi), b, sizeof(b));
	snprintf(out, size, "keys %s%s%s to %s%s%s", lo.len >= 8 ? "\"" : "(the first)",
		 lo.len >= 8 ? a : "", lo.len >= 8 ? "\"" : "", hi.len >= 8 ? "\"" : "",
		 hi.len >= 8 ? b : "(the last)", hi.len >= 8 ? "\"" : "");
}

/* Move dir/name into dir/lost/ (as name, or name.N if taken). */
static int move_to_lost(struct repair *rp, const char *name)
{
	char *lost = xasprintf("%s/lost", rp->dir), *from = xasprintf("%s/%s", rp->dir, name);
	char *to = xasprintf("%s/%s", lost, name);
	int r = env_mkdir(rp->env, lost);

	for (int i = 1; r == 0 && env_exists(rp->env, to); i++) {
		free(to);
		to = xasprintf("%s/%s.%d", lost, name, i);
	}
	if (r == 0)
		r = env_rename(rp->env, from, to);
	if (r == 0)
		rp->lost_made = 1;
	free(lost);
	free(from);
	free(to);
	return r;
}

/* ------------------------------------------------------------ 1. the manifest */

/* The manifest to start from: CURRENT's if it names one that exists, else the highest. */
static uint64_t pick_manifest(struct repair *rp, char **names, size_t n)
{
	char *cur = fname_current(rp->dir), *data = NULL;
	uint64_t best = 0, num;
	size_t len;

	if (env_exists(rp->env, cur) && env_read_file(rp->env, cur, &data, &len) == 0) {
		if (len >= 2 && data[len - 1] == '\n' && !memchr(data, 0, len - 1)) {
			data[len - 1] = 0;
			if (fname_parse(data, &num) == FNAME_MANIFEST) {
				char *m = fname_manifest(rp->dir, num);
				if (env_exists(rp->env, m))
					best = num;
				else
					say(rp, "CURRENT names %s, which is missing: using the newest "
					    "manifest there is", data);
				free(m);
			}
		}
		if (!best)
			say(rp, "CURRENT is damaged: it is moved to lost/");
		if (!best && move_to_lost(rp, "CURRENT") < 0)
			say(rp, "CURRENT: cannot move it to lost/: %s", kv_strerror(-EIO));
	} else {
		say(rp, "CURRENT is missing: using the newest manifest there is");
	}
	free(data);
	free(cur);
	if (best)
		return best;
	for (size_t i = 0; i < n; i++)
		if (fname_parse(names[i], &num) == FNAME_MANIFEST && num > best)
			best = num;
	return best;
}

static int read_manifest(struct repair *rp, uint64_t number)
{
	char *path = fname_manifest(rp->dir, number), *name = fname_manifest(NULL, number);
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct version_edit e;
	struct slice rec;
	uint64_t size, nrec = 0, off = 0;
	int r;

	if ((r = env_file_size(rp->env, path, &size)) < 0 ||
	    (r = env_open_read(rp->env, path, &f)) < 0) {
		say(rp, "%s cannot be read (%s): the database is rebuilt from its tables and logs "
		    "alone", name, kv_strerror(r));
		goto out;
	}
	rp->manifest_found = 1;
	rd = wal_reader_new(f, size, path);
	while ((r = wal_read(rd, &rec)) > 0) {
		r = edit_decode(&e, rec, path);
		if (r == 0) {
			r = vs_apply_only(rp->vs, &e);
			edit_free(&e);
		}
		if (r < 0)
			break;
		nrec++;
		off = wal_reader_offset(rd);
	}
	if (r == 0 && nrec == 0)
		r = ERR_CORRUPT("%s: no record of it reads back whole", path);
	if (r == 0) {
		rp->manifest_whole = 1;
	} else if (nrec == 0) {
		say(rp, "%s is damaged (%s): nothing of it is usable, the database is rebuilt from "
		    "its tables and logs; the manifest is moved to lost/", name, kv_strerror(r));
	} else {
		say(rp, "%s is damaged at offset %llu (%s): the state of its first %llu records is "
		    "kept, and the tables and logs found complete it; the manifest is moved to "
		    "lost/", name, (unsigned long long)off, kv_strerror(r), (unsigned long long)nrec);
	}
	if (r < 0) {
		rp->dropped++;
		wal_reader_free(rd);
		rd = NULL;
		env_close(f);
		f = NULL;
		if (move_to_lost(rp, name) < 0)
			say(rp, "%s: cannot move it to lost/", name);
	}
	r = 0;
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(path);
	free(name);
	return r;
}

/* ------------------------------------------------------------ 2. the tables */

/* Where the manifest puts table number: its tree and level; NULL if nowhere. */
static struct file_meta *find_table(struct repair *rp, uint64_t number, struct vtree **tree,
				    int *level)
{
	for (size_t ti = 0; ti < rp->vs->ntrees; ti++) {
		struct vtree *t = rp->vs->trees[ti];
		struct version *v = t->current;
		if (t->dropped)
			continue;
		for (int l = 0; l < NUM_LEVELS; l++)
			for (size_t i = 0; i < v->nfiles[l]; i++)
				if (v->files[l][i]->number == number) {
					*tree = t;
					*level = l;
					return v->files[l][i];
				}
	}
	return NULL;
}

static int open_table(struct repair *rp, const char *path, struct sst **t)
{
	struct env_file *f;
	uint64_t size;
	int r;

	*t = NULL;
	if ((r = env_file_size(rp->env, path, &size)) < 0 ||
	    (r = env_open_read(rp->env, path, &f)) < 0)
		return r;
	return sst_open(f, size, path, NULL, NULL, 0, t);   /* pread: these files may be damaged */
}

static void note_problem(void *arg, uint64_t off, const char *msg)
{
	(void)off; (void)msg;
	(*(int *)arg)++;
}

/* 0 if the table at path opens and every block verifies; else the error. */
static int table_sound(struct repair *rp, const char *path)
{
	struct sst *t;
	int problems = 0, r = open_table(rp, path, &t);

	if (r < 0)
		return r;
	r = sst_verify(t, note_problem, &problems);
	sst_close(t);
	return r < 0 ? r : problems ? -EUCLEAN : 0;
}

/*
 * A table cut short inside its footer's magic number (the last 8 bytes):
 * write path.repair with the missing bytes restored, and keep it if it then
 * opens and verifies.  1 if it did (the caller renames it into place).
 */
static int restore_magic(struct repair *rp, const char *path, char **fixed, uint64_t *missing)
{
	char *data = NULL, magic[8];
	size_t len;
	int r;

	*fixed = NULL;
	if (env_read_file(rp->env, path, &data, &len) < 0 || len < SST_FOOTER_SIZE - 8) {
		free(data);
		return 0;
	}
	enc_fixed64(magic, SST_MAGIC);
	for (size_t k = 1; k <= 8; k++) {
		char *buf = xmalloc(len + k), *tmp = xasprintf("%s.repair", path);
		memcpy(buf, data, len);
		memcpy(buf + len, magic + 8 - k, k);
		r = env_write_file(rp->env, tmp, buf, len + k, NULL);
		free(buf);
		if (r == 0 && table_sound(rp, tmp) == 0) {
			*fixed = tmp;
			*missing = k;
			free(data);
			return 1;
		}
		env_unlink(rp->env, tmp);
		free(tmp);
	}
	free(data);
	return 0;
}

struct salvage {
	struct repair *rp;
	struct sst_builder *b;
	const char *name;
	uint64_t kept, bad_blocks;
};

static int salvage_add(void *arg, struct slice ikey, struct slice value)
{
	struct salvage *s = arg;

	s->kept++;
	return sst_builder_add(s->b, ikey, value);
}

static void salvage_bad(void *arg, uint64_t off, struct slice lo, struct slice hi)
{
	struct salvage *s = arg;
	char range[600];

	s->bad_blocks++;
	show_range(lo, hi, range, sizeof(range));
	say(s->rp, "%s: the data block at offset %llu is damaged: its entries (%s) are dropped",
	    s->name, (unsigned long long)off, range);
	s->rp->dropped++;
}

/*
 * Copy what reads back of table t (named name) into a new table; fills
 * *number and *props (caller frees) on success.  *kept: the entries copied.
 */
static int salvage_table(struct repair *rp, struct sst *t, const char *name, uint64_t *number,
			 struct sst_props *props, uint64_t *kept)
{
	struct sst_options so = { rp->opt.block_size, rp->opt.block_restart_interval,
				  rp->opt.compression_level, rp->opt.bloom_bits_per_key };
	const struct rdel_set *rd = sst_range_dels(t);
	struct salvage s = { rp, NULL, name, 0, 0 };
	struct env_file *f;
	char *path;
	int r;

	memset(props, 0, sizeof(*props));
	*number = ++rp->max_number;
	path = fname_sst(rp->dir, *number);
	r = env_open_append(rp->env, path, &f);
	if (r < 0) {
		free(path);
		return r;
	}
	s.b = sst_builder_new(f, &so, path);
	for (size_t i = 0; i < rdel_set_count(rd) && r == 0; i++) {
		const struct rdel_frag *fr = rdel_set_frag(rd, i);
		for (size_t j = 0; j < fr->nseqs && r == 0; j++)
			r = sst_builder_add_range_del(s.b, fr->start, fr->end, fr->seqs[j]);
	}
	if (r == 0)
		r = sst_salvage(t, salvage_add, salvage_bad, &s);
	if (r == 0)
		r = sst_builder_finish(s.b, props);
	sst_builder_free(s.b);
	if (r == 0)
		r = env_sync(f);
	{
		int rc = env_close(f);
		if (r == 0)
			r = rc;
	}
	if (r < 0) {
		sst_props_free(props);
		env_unlink(rp->env, path);
	}
	*kept = s.kept;
	free(path);
	return r;
}

/* Add (or replace at level) a table in tree t of the version set, from its properties. */
static int put_table(struct repair *rp, struct vtree *t, int level, uint64_t old_number,
		     int had_old, uint64_t number, const struct sst_props *p)
{
	struct version_edit e;
	int r;

	edit_init(&e);
	e.tree = t->id;
	if (had_old)
		edit_del_file(&e, level, old_number);
	/* a table holding nothing has no bounds to name (a version compares them): it is left out */
	if (p->num_entries + p->num_range_dels)
		edit_add_file(&e, level, number, p->file_size, buf_slice(&p->smallest),
			      buf_slice(&p->largest), p->smallest_seq, p->largest_seq,
			      p->num_entries, p->num_range_dels);
	r = vs_apply_only(rp->vs, &e);
	edit_free(&e);
	if (r == 0 && p->largest_seq > rp->max_seq)
		rp->max_seq = p->largest_seq;
	return r;
}

static int drop_table(struct repair *rp, struct vtree *t, int level, uint64_t number)
{
	struct version_edit e;
	int r;

	edit_init(&e);
	e.tree = t->id;
	edit_del_file(&e, level, number);
	r = vs_apply_only(rp->vs, &e);
	edit_free(&e);
	return r;
}

/* The properties of a sound table at path. */
static int table_props(struct repair *rp, const char *path, struct sst_props *p)
{
	struct sst *t;
	int r = open_table(rp, path, &t);

	memset(p, 0, sizeof(*p));
	if (r < 0)
		return r;
	{
		const struct sst_props *q = sst_get_props(t);
		*p = *q;
		p->smallest = (struct buf)BUF_INIT;
		p->largest = (struct buf)BUF_INIT;
		buf_set(&p->smallest, q->smallest.data, q->smallest.len);
		buf_set(&p->largest, q->largest.data, q->largest.len);
	}
	sst_close(t);
	return 0;
}

/* What is known of table fm, for a report: "N entries, keys ... (level L of tree T)". */
static void describe_table(const struct file_meta *fm, const struct vtree *t, int level, char *out,
			   size_t size)
{
	char range[600];

	if (!fm) {
		snprintf(out, size, "its entries and keys are unknown (no manifest names it)");
		return;
	}
	show_range(buf_slice(&fm->smallest), buf_slice(&fm->largest), range, sizeof(range));
	snprintf(out, size, "%llu entries and %llu range tombstones, %s (level %d of tree %s)",
		 (unsigned long long)fm->entries, (unsigned long long)fm->range_dels, range, level,
		 t->name);
}

static int live_trees(struct repair *rp)
{
	int n = 0;

	for (size_t i = 0; i < rp->vs->ntrees; i++)
		n += !rp->vs->trees[i]->dropped;
	return n;
}

/* Take the sound table number (at path) into tree at level, replacing what was there. */
static int keep_table(struct repair *rp, const char *path, struct vtree *tree, int level,
		      int in_manifest, uint64_t old_number, uint64_t number)
{
	struct sst_props p;
	int r = table_props(rp, path, &p);

	if (r == 0)
		r = put_table(rp, tree, level, old_number, in_manifest, number, &p);
	sst_props_free(&p);
	return r;
}

static int repair_table(struct repair *rp, uint64_t number)
{
	char *path = fname_sst(rp->dir, number), *name = fname_sst(NULL, number), *fixed = NULL;
	char what[1024], why[600];
	struct vtree *tree = NULL;
	struct sst *t = NULL;
	struct file_meta *fm;
	uint64_t size = 0, missing, newnum, kept;
	int level = 0, in_manifest, r;

	fm = find_table(rp, number, &tree, &level);
	in_manifest = fm != NULL;
	describe_table(fm, tree, level, what, sizeof(what));
	if (!in_manifest && rp->manifest_whole) {
		say(rp, "%s: no manifest record names it (left by a flush or compaction that did "
		    "not finish; its data is in other tables or the logs): moved to lost/", name);
		r = move_to_lost(rp, name);
		goto out;
	}
	if (!in_manifest && (live_trees(rp) > 1 || rp->unknown_trees)) {
		say(rp, "%s: the readable part of the manifest does not name it, and the database "
		    "has several trees, so its tree is unknown: moved to lost/, not used (its "
		    "properties: %s)", name, what);
		rp->dropped++;
		r = move_to_lost(rp, name);
		goto out;
	}
	if (!in_manifest) {
		tree = vs_tree(rp->vs, 0);
		level = 0;
	}
	env_file_size(rp->env, path, &size);
	r = table_sound(rp, path);
	if (r == 0) {
		if (in_manifest && size == fm->size) {
			r = 0;   /* as the manifest says */
			goto out;
		}
		if (!in_manifest) {
			say(rp, "%s: not named by the readable part of the manifest: taken into level "
			    "0 of tree %s", name, tree->name);
			rp->took_orphans = 1;
		}
		r = keep_table(rp, path, tree, level, in_manifest, number, number);
		goto out;
	}
	snprintf(why, sizeof(why), "%s", kv_strerror(r));
	if (restore_magic(rp, path, &fixed, &missing)) {
		r = move_to_lost(rp, name);
		if (r == 0)
			r = env_rename(rp->env, fixed, path);
		if (r < 0)
			goto out;
		say(rp, "%s: %llu byte%s short, inside the footer's magic number: restored (nothing "
		    "dropped); the short file is in lost/", name, (unsigned long long)missing,
		    missing == 1 ? "" : "s");
		if (!in_manifest)
			rp->took_orphans = 1;
		r = keep_table(rp, path, tree, level, in_manifest, number, number);
		goto out;
	}
	r = open_table(rp, path, &t);
	if (r == 0) {
		struct sst_props p;
		uint64_t total = sst_get_props(t)->num_entries;

		r = salvage_table(rp, t, name, &newnum, &p, &kept);
		sst_close(t);
		if (r == 0 && p.num_entries + p.num_range_dels == 0) {
			char *np = fname_sst(rp->dir, newnum);
			env_unlink(rp->env, np);
			free(np);
			sst_props_free(&p);
			r = -EUCLEAN;   /* nothing readable: dropped whole below */
		} else if (r == 0) {
			char *nn = fname_sst(NULL, newnum);
			say(rp, "%s: damaged (%s): %llu of its %llu entries salvaged into %s, at its "
			    "level; the damaged file is in lost/", name, why, (unsigned long long)kept,
			    (unsigned long long)total, nn);
			free(nn);
			r = move_to_lost(rp, name);
			if (r == 0)
				r = put_table(rp, tree, level, number, in_manifest, newnum, &p);
			if (!in_manifest)
				rp->took_orphans = 1;
			sst_props_free(&p);
			goto out;
		}
	}
	say(rp, "%s: cannot be read (%s): moved to lost/; dropped: %s", name, why, what);
	rp->dropped++;
	r = move_to_lost(rp, name);
	if (r == 0 && in_manifest)
		r = drop_table(rp, tree, level, number);
out:
	if (r < 0)
		say(rp, "%s: %s", name, kv_strerror(r));
	free(fixed);
	free(path);
	free(name);
	return r;
}

/* Tables the manifest names that are not in the directory: reported and dropped. */
static int drop_missing_tables(struct repair *rp)
{
	int r = 0;

	for (size_t ti = 0; ti < rp->vs->ntrees && r == 0; ti++) {
		struct vtree *t = rp->vs->trees[ti];
		for (int l = 0; l < NUM_LEVELS && r == 0; l++) {
			for (size_t i = 0; i < t->current->nfiles[l] && r == 0;) {
				struct file_meta *fm = t->current->files[l][i];
				char *p = fname_sst(rp->dir, fm->number), what[1024];

				if (t->dropped || env_exists(rp->env, p)) {
					free(p);
					i++;
					continue;
				}
				free(p);
				describe_table(fm, t, l, what, sizeof(what));
				say(rp, "%06llu.sst: missing: dropped from the manifest; lost: %s",
				    (unsigned long long)fm->number, what);
				rp->dropped++;
				r = drop_table(rp, t, l, fm->number);   /* the list shrinks: same i */
			}
		}
	}
	return r;
}

/* ------------------------------------------------------------ 3. the logs */

/*
 * Read log number up to its end, a torn tail, or the first damaged record;
 * with copy (a writer), copy the good records into it.  *records, *damage_off
 * (where the damage begins) and *damage (0 if none) are filled.
 */
static int scan_log(struct repair *rp, const char *path, struct wal_writer *copy,
		    uint64_t *records, uint64_t *damage_off, int *damage, uint64_t *first_seq,
		    uint64_t *last_seq)
{
	struct wal_reader *rd;
	struct env_file *f;
	struct slice rec;
	uint64_t size;
	uint32_t count;
	int r;

	*records = 0;
	*damage = 0;
	*first_seq = *last_seq = 0;
	if ((r = env_file_size(rp->env, path, &size)) < 0 ||
	    (r = env_open_read(rp->env, path, &f)) < 0)
		return r;
	rd = wal_reader_new(f, size, path);
	while ((r = wal_read(rd, &rec)) > 0) {
		if (batch_check(rec, &count) < 0) {
			r = -EUCLEAN;
			break;
		}
		if (copy && (r = wal_add(copy, rec)) < 0)
			break;
		if (count) {
			uint64_t first = dec_fixed64(rec.data);
			if (!*first_seq)
				*first_seq = first;
			*last_seq = first + count - 1;
		}
		(*records)++;
	}
	*damage_off = wal_reader_offset(rd);
	if (r == -EUCLEAN) {
		*damage = r;
		r = 0;
	}
	wal_reader_free(rd);
	env_close(f);
	return r;
}

static int note_tree(void *arg, uint64_t seq, uint32_t tree, int type, struct slice key,
		     struct slice value)
{
	struct repair *rp = arg;

	(void)seq; (void)type; (void)key; (void)value;
	if (!vs_tree(rp->vs, tree)) {
		rp->unknown_trees = 1;
		rp->unknown_mutations++;
	}
	return 0;
}

/*
 * Do the logs write to trees the manifest does not name?  Then the database
 * had more trees than the readable manifest tells, and a table it does not
 * name cannot be given a tree.
 */
static void find_unknown_trees(struct repair *rp, char **names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct wal_reader *rd;
		struct env_file *f;
		struct slice rec;
		uint64_t num, size;
		uint32_t count;
		char *path;

		if (fname_parse(names[i], &num) != FNAME_LOG)
			continue;
		path = fname_log(rp->dir, num);
		if (env_file_size(rp->env, path, &size) == 0 && env_open_read(rp->env, path, &f) == 0) {
			rd = wal_reader_new(f, size, path);
			rp->unknown_mutations = 0;
			while (wal_read(rd, &rec) > 0 && batch_check(rec, &count) == 0)
				batch_apply(rec, count, note_tree, rp);
			wal_reader_free(rd);
			env_close(f);
			if (rp->unknown_mutations) {
				say(rp, "%s: %llu of its mutations are for trees the readable manifest "
				    "does not name: they cannot be replayed, and are dropped",
				    names[i], (unsigned long long)rp->unknown_mutations);
				rp->dropped++;
			}
		}
		free(path);
	}
}

static int repair_log(struct repair *rp, uint64_t number)
{
	char *path = fname_log(rp->dir, number), *name = fname_log(NULL, number);
	char *tmp = xasprintf("%s.repair", path);
	uint64_t records, off, size = 0, first, last, records2, off2;
	struct wal_writer *w = NULL;
	struct env_file *f;
	int damage, damage2, r;

	r = scan_log(rp, path, NULL, &records, &off, &damage, &first, &last);
	if (r < 0 || !damage)
		goto out;
	env_file_size(rp->env, path, &size);
	if (records == 0) {
		say(rp, "%s: damaged from its first record (%llu bytes of it, no record readable): "
		    "moved to lost/", name, (unsigned long long)size);
		rp->dropped++;
		r = move_to_lost(rp, name);
		goto out;
	}
	/* the good records into a new log of the same number, then the damaged one away */
	if ((r = env_open_append(rp->env, tmp, &f)) < 0)
		goto out;
	w = wal_writer_new(f);
	r = scan_log(rp, path, w, &records2, &off2, &damage2, &first, &last);
	if (r == 0)
		r = wal_sync(w);
	{
		int rc = wal_writer_free(w);
		if (r == 0)
			r = rc;
	}
	if (r == 0)
		r = move_to_lost(rp, name);
	if (r == 0)
		r = env_rename(rp->env, tmp, path);
	if (r < 0) {
		env_unlink(rp->env, tmp);
		goto out;
	}
	say(rp, "%s: damaged at offset %llu: its first %llu records (sequences %llu to %llu) are "
	    "kept; the %llu bytes from the damage on are dropped; the damaged log is in lost/",
	    name, (unsigned long long)off, (unsigned long long)records,
	    (unsigned long long)first, (unsigned long long)last,
	    (unsigned long long)(size - off));
	rp->dropped++;
out:
	if (r < 0)
		say(rp, "%s: %s", name, kv_strerror(r));
	free(tmp);
	free(path);
	free(name);
	return r;
}

/* ------------------------------------------------------------ the whole */

static void verify_report(void *arg, const char *file, uint64_t off, const char *msg)
{
	struct repair *rp = arg;

	say(rp, "after repair: %s at %llu: %s", file ? file : "?", (unsigned long long)off, msg);
}

/* Open the result, settle tables taken in from outside the manifest, verify. */
static int settle(struct repair *rp)
{
	struct kv_options o = rp->opt;
	struct kv_db *db;
	char **names = NULL;
	size_t n = 0;
	int r;

	o.create_if_missing = 0;
	o.read_only = 0;
	r = kv_open(rp->dir, &o, &db);
	if (r < 0) {
		say(rp, "the repaired database does not open: %s", kv_strerror(r));
		return r;
	}
	if (rp->took_orphans) {
		r = kv_tree_list(db, &names, &n);
		for (size_t i = 0; i < n; i++) {
			struct kv_tree *t;
			if (r == 0)
				r = kv_tree_open(db, names[i], NULL, &t);
			if (r == 0)
				r = kv_compact_range_tree(db, t, NULL, 0, NULL, 0);
			free(names[i]);
		}
		free(names);
		if (r < 0)
			say(rp, "compacting the tables taken in: %s", kv_strerror(r));
	}
	if (r == 0 && (r = kv_verify(db, verify_report, rp)) < 0)
		say(rp, "the repaired database still has problems (above)");
	{
		int rc = kv_close(db);
		if (r == 0)
			r = rc;
	}
	return r;
}

int kv_repair(const char *dir, const struct kv_options *opt,
	      void (*report)(void *arg, const char *msg), void *arg)
{
	struct repair rp;
	struct env_file *lock = NULL;
	char **names = NULL, *lock_path;
	size_t n = 0;
	uint64_t num, manifest;
	int r;

	memset(&rp, 0, sizeof(rp));
	if (opt)
		rp.opt = *opt;
	else
		kv_options_init(&rp.opt);
	if (!rp.opt.env)
		rp.opt.env = env_posix();
	rp.opt.read_only = 0;
	rp.env = rp.opt.env;
	rp.dir = xstrdup(dir);
	rp.report = report;
	rp.arg = arg;
	lock_path = fname_lock(dir);
	if (!env_exists(rp.env, dir)) {
		r = ERR_SET(-ENOENT, "%s: no such directory", dir);
		goto out;
	}
	if ((r = env_lock(rp.env, lock_path, &lock)) < 0 ||
	    (r = env_list_dir(rp.env, dir, &names, &n)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		enum fname_kind k = fname_parse(names[i], &num);
		if ((k == FNAME_LOG || k == FNAME_SST || k == FNAME_MANIFEST) && num > rp.max_number)
			rp.max_number = num;
	}
	rp.tc = tcache_new(rp.env, dir, 64, NULL, NULL);
	rp.vs = vs_new(dir, rp.env, &rp.opt, rp.tc);

	manifest = pick_manifest(&rp, names, n);
	if (manifest)
		r = read_manifest(&rp, manifest);
	else
		say(&rp, "no manifest: the database is rebuilt from its tables and logs");
	if (!rp.manifest_found)
		vs_init_empty(rp.vs);
	if (r == 0 && !rp.manifest_whole)
		find_unknown_trees(&rp, names, n);
	if (r == 0)
		r = drop_missing_tables(&rp);
	for (size_t i = 0; r == 0 && i < n; i++)
		if (fname_parse(names[i], &num) == FNAME_SST)
			r = repair_table(&rp, num);
	{
		uint64_t min_log = rp.manifest_found ? vs_min_log_number(rp.vs) : 0;
		for (size_t i = 0; r == 0 && i < n; i++)
			if (fname_parse(names[i], &num) == FNAME_LOG && num >= min_log)
				r = repair_log(&rp, num);
	}
	if (r == 0) {
		if (rp.vs->next_file <= rp.max_number)
			rp.vs->next_file = rp.max_number + 1;
		if (rp.vs->last_seq < rp.max_seq)
			rp.vs->last_seq = rp.max_seq;
		r = vs_new_manifest(rp.vs);
	}
	if (r == 0)
		r = env_sync_dir(rp.env, dir);
	if (r == 0 && rp.lost_made) {
		char *lost = xasprintf("%s/lost", dir);
		r = env_sync_dir(rp.env, lost);
		free(lost);
	}
	vs_free(rp.vs);
	tcache_free(rp.tc);
	rp.vs = NULL;
	env_unlock(lock);
	lock = NULL;
	if (r < 0) {
		say(&rp, "repair stopped: %s", kv_strerror(r));
		goto out;
	}
	r = settle(&rp);
	if (r == 0)
		say(&rp, rp.dropped ? "repaired: the database opens; what was dropped is listed above"
				    : "repaired: the database opens; nothing was dropped");
out:
	if (lock)
		env_unlock(lock);
	env_free_list(names, n);
	free(lock_path);
	free(rp.dir);
	return r;
}
