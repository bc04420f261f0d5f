/*
 * tread.c -- the reads a front-end makes per file, without building a row:
 * one cell version and its metadata (tbl_stat_cell, tbl_get_cell), whether
 * a row or a family in it has visible cells (tbl_row_exists,
 * tbl_row_has_family), the families a row holds (tbl_row_families), and the
 * streamed, resumable listing of one family in one row (tbl_columns_*).
 * tscan.c reads whole rows and ranges; this file reads a column, a family
 * or the first visible cell, each through one kv iterator bounded to it.
 *
 * Visibility.  Every call applies tsch_gc_keeps, the rule reads and the
 * compaction filter share.  The rule is monotone along a column's versions
 * (newest first: once a version is dropped, every older one is), so a column
 * is visible exactly when its first stored version is, and that version is
 * its newest visible one.  Existence checks therefore look at the first key
 * of each column only, and seek past the column when it is not visible.
 *
 * Schema.  The per-cell calls resolve the table and family under the schema
 * read lock and copy what they need (table id, the family's id, settings and
 * tree; kv tree handles stay valid until kv_close, even after a drop), then
 * read without the lock, so a long read never holds up a schema change.
 * The row checks hold the read lock for their few seeks, as tmutate.c holds
 * it across a write.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "table_int.h"

/* Steps tried before moving past a column turns into a seek (as in tscan.c). */
#define SKIP_STEPS 8

/* What a per-cell read needs of the schema, copied under the lock. */
struct famref {
	uint32_t table_id;
	struct tsch_family f;          /* f.name and f.group are not used after the copy */
	struct kv_tree *tree;
	char name[TBL_MAX_FAMILY_NAME + 1];
};

/* Bytes for a message: printable ASCII as is, others \xHH, cut at about 60 characters. */
static const char *show(char *out, size_t cap, const void *p, size_t n)
{
	const unsigned char *u = p;
	size_t o = 0, i;

	for (i = 0; i < n && o + 8 < cap && o < 60; i++) {
		if (u[i] >= 0x20 && u[i] < 0x7f && u[i] != '\\')
			out[o++] = (char)u[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", u[i]);
	}
	if (i < n)
		o += (size_t)snprintf(out + o, cap - o, "...");
	out[o] = 0;
	return out;
}

/* Check a row key (and a qualifier, if q_len != SIZE_MAX) as the validators do. */
static int check_keys(const char *table, const void *row, size_t row_len, const void *q,
		      size_t q_len)
{
	int r = tbl_check_row_key(row, row_len);

	if (r == 0 && q_len != SIZE_MAX)
		r = tbl_check_qualifier(q, q_len);
	if (r < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", kv_strerror(r));
		return ERR_SET(r, "table %.600s: %s", table, why);
	}
	return 0;
}

static int resolve(struct tbl_db *db, const char *table, const char *family,
		   struct famref *ref)
{
	struct tsch_table *t;
	struct tsch_family *f;
	int r;

	if (!family)
		return ERR_SET(-EINVAL, "table %.600s: no family named", table);
	r = tsch_lock_table(db, table, &t);
	if (r < 0)
		return r;
	f = tsch_find_family(t, family);
	if (!f) {
		tsch_unlock(db);
		return ERR_SET(-ENOENT, "table %s, family %.100s: no such family", table, family);
	}
	ref->table_id = t->id;
	ref->f = *f;
	ref->f.name = NULL;
	ref->f.group = NULL;
	ref->tree = tsch_group_tree(f->group);
	snprintf(ref->name, sizeof(ref->name), "%s", f->name);
	tsch_unlock(db);
	return 0;
}

/*
 * A kv iterator over [lower, successor of lower) in tree, at snap; with
 * keys_only, one that does not read values it can pass (kv.h): the reads
 * that need a value's type, length and text size only take its first
 * KV_VALUE_PREFIX bytes, which hold the tag and any fixed-size payload.
 */
static struct kv_iter *iter_over(struct tbl_db *db, struct kv_tree *tree,
				 const struct kv_snapshot *snap, struct slice lower,
				 struct buf *upper, int keys_only)
{
	struct kv_read_options ro;
	int has;

	buf_clear(upper);
	has = tkey_successor(upper, lower);
	assert(has);   /* every prefix here ends in a terminator 0x00 0x01 or a family id */
	(void)has;
	memset(&ro, 0, sizeof(ro));
	ro.tree = tree;
	ro.snapshot = snap;
	ro.lower = lower.data;
	ro.lower_len = lower.len;
	ro.upper = upper->data;
	ro.upper_len = upper->len;
	ro.keys_only = keys_only;
	return kv_iter_new(db->kv, &ro);
}

static struct slice iter_key(struct kv_iter *it)
{
	size_t n;
	const void *p = kv_iter_key(it, &n);

	return slice_make(p, n);
}

static struct slice iter_value(struct kv_iter *it)
{
	size_t n;
	const void *p = kv_iter_value(it, &n);

	return slice_make(p, n);
}

/*
 * A stored value's type, payload size and text size, without rendering a
 * string or bytes value (nor checking a string's UTF-8): the fixed-size
 * types are decoded and rendered into scratch.  v may be only the value's
 * first bytes (a keys-only iterator's, at least min(size, KV_VALUE_PREFIX)
 * of them) and size is its full length: a string's or bytes' text size
 * follows from the length, and a fixed-size value (9 bytes at most) is
 * whole in v.  -EUCLEAN if damaged.
 */
static int value_stat(struct slice v, size_t size, struct buf *scratch, enum cell_type *type,
		      size_t *value_size, size_t *text_size)
{
	struct cell_value cv;
	unsigned char tag;

	if (size == 0 || v.len == 0)
		return ERR_CORRUPT("a cell value without its type tag");
	tag = (unsigned char)v.data[0];
	if (tag == CELL_INVALID || tag > CELL_TYPE_MAX)
		return ERR_CORRUPT("a cell value with the invalid type tag %u", tag);
	*type = (enum cell_type)tag;
	*value_size = size - 1;
	if (tag == CELL_STRING) {
		*text_size = size;   /* the bytes and "\n" */
		return 0;
	}
	if (tag == CELL_BYTES) {
		*text_size = size - 1;
		return 0;
	}
	if (v.len != size)
		return ERR_CORRUPT("a stored %s value of %zu bytes", cell_type_name(*type), size);
	if (cell_decode(v, &cv) < 0)
		return -EUCLEAN;      /* cell_decode's message says what */
	buf_clear(scratch);
	if (cell_render(scratch, &cv) < 0)
		return ERR_CORRUPT("a stored %s value does not render", cell_type_name(*type));
	*text_size = scratch->len;
	return 0;
}

/* Seek it to the first key after every key that begins with prefix. */
static void seek_past(struct kv_iter *it, struct slice prefix, struct buf *target)
{
	int has;

	buf_clear(target);
	has = tkey_successor(target, prefix);
	assert(has);   /* a row, family or column prefix holds the row's terminator 0x00 0x01 */
	(void)has;
	kv_iter_seek(it, target->data, target->len);
}

/* Move it past every key that begins with prefix: a few steps, then a seek. */
static void skip_prefix(struct kv_iter *it, struct slice prefix, struct buf *target)
{
	for (int i = 0; i < SKIP_STEPS; i++) {
		struct slice k;

		kv_iter_next(it);
		if (!kv_iter_valid(it))
			return;
		k = iter_key(it);
		if (k.len < prefix.len || memcmp(k.data, prefix.data, prefix.len) != 0)
			return;
	}
	seek_past(it, prefix, target);
}

/* ------------------------------------------------------------ one cell */

/*
 * Place it on the version asked for: 1 (it stands on it), 0 (none visible),
 * < 0 error.  The newest: the column's first key, if visible.  By
 * timestamp without max_versions: one seek to its key.  With max_versions
 * = N: from the column's first key, counting, at most N versions.
 */
static int seek_version(struct kv_iter *it, const struct famref *ref, struct slice row,
			struct slice q, uint64_t ts, struct buf *col, struct buf *scratch)
{
	uint64_t now = tsch_wall();
	struct tkey k;
	uint32_t n = 0;

	if (ts != TBL_TS_NEWEST && ref->f.s.max_versions == 0) {
		buf_clear(scratch);
		tkey_encode(scratch, ref->table_id, row, ref->f.id, q, ts);
		kv_iter_seek(it, scratch->data, scratch->len);
	} else {
		kv_iter_seek(it, col->data, col->len);
	}
	for (; kv_iter_valid(it); kv_iter_next(it), n++) {
		if (tkey_decode(iter_key(it), &k, scratch) < 0)
			return -EUCLEAN;
		if (!tsch_gc_keeps(&ref->f, k.ts, ts == TBL_TS_NEWEST ? 0 : n, now))
			return 0;
		if (ts == TBL_TS_NEWEST || k.ts == ts)
			return 1;
		if (k.ts < ts || ref->f.s.max_versions == 0)
			return 0;     /* past it: the column holds no version ts */
	}
	return kv_iter_status(it);
}

static int read_cell(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		     const void *row, size_t row_len, const char *family, const void *qualifier,
		     size_t qualifier_len, uint64_t ts, struct tbl_cell_stat *st, void **data,
		     size_t *len)
{
	struct slice rk = slice_make(row, row_len), q = slice_make(qualifier, qualifier_len);
	struct buf col = BUF_INIT, upper = BUF_INIT, scratch = BUF_INIT;
	struct tbl_cell_stat s;
	struct kv_iter *it;
	struct famref ref;
	char rt[256], qt[256];
	int r;

	r = check_keys(table, row, row_len, qualifier, qualifier_len);
	if (r == 0)
		r = resolve(db, table, family, &ref);
	if (r < 0)
		return r;
	tkey_column_prefix(&col, ref.table_id, rk, ref.f.id, q);
	/* a stat needs the value's first bytes and length only: keys-only */
	it = iter_over(db, ref.tree, tsch_kv_snap(snap), buf_slice(&col), &upper, data == NULL);
	r = seek_version(it, &ref, rk, q, ts, &col, &scratch);
	if (r == 0) {
		if (ts == TBL_TS_NEWEST)
			r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no such cell",
				     table, show(rt, sizeof(rt), row, row_len), ref.name,
				     show(qt, sizeof(qt), qualifier, qualifier_len));
		else
			r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no version "
				     "%llu", table, show(rt, sizeof(rt), row, row_len), ref.name,
				     show(qt, sizeof(qt), qualifier, qualifier_len),
				     (unsigned long long)ts);
		goto out;
	}
	if (r < 0)
		goto fail;
	{
		struct slice v = iter_value(it);
		struct tkey k;

		if (tkey_decode(iter_key(it), &k, &scratch) < 0) {
			r = -EUCLEAN;
			goto fail;
		}
		s.ts = k.ts;
		r = value_stat(v, kv_iter_value_size(it), &scratch, &s.type, &s.value_size,
			       &s.text_size);
		if (r < 0)
			goto fail;
		if (data) {
			struct cell_value cv;
			struct buf text = BUF_INIT;

			if (cell_decode(v, &cv) < 0) {
				r = -EUCLEAN;
				goto fail;
			}
			buf_reserve(&text, s.text_size + 1);
			if (cell_render(&text, &cv) < 0 || text.len != s.text_size) {
				buf_free(&text);
				r = ERR_CORRUPT("a stored %s value renders as %zu bytes, not %zu",
					       cell_type_name(cv.type), text.len, s.text_size);
				goto fail;
			}
			*data = text.data;    /* reserved above, so never NULL */
			*len = text.len;
		}
	}
	if (st)
		*st = s;
	r = 0;
	goto out;
fail:
	if (r < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", kv_strerror(r));
		r = ERR_SET(r, "table %s, row \"%s\", column %s:%s: %s", table,
			     show(rt, sizeof(rt), row, row_len), ref.name,
			     show(qt, sizeof(qt), qualifier, qualifier_len), why);
	}
out:
	kv_iter_free(it);
	buf_free(&col);
	buf_free(&upper);
	buf_free(&scratch);
	return r;
}

int tbl_stat_cell(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		  const void *row, size_t row_len, const char *family,
		  const void *qualifier, size_t qualifier_len, uint64_t ts,
		  struct tbl_cell_stat *st)
{
	API_ENTRY();
	return read_cell(db, snap, table, row, row_len, family, qualifier, qualifier_len, ts, st,
			 NULL, NULL);
}

int tbl_get_cell(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		 const void *row, size_t row_len, const char *family,
		 const void *qualifier, size_t qualifier_len, uint64_t ts,
		 struct tbl_cell_stat *st, void **data, size_t *len)
{
	API_ENTRY();
	*data = NULL;
	*len = 0;
	return read_cell(db, snap, table, row, row_len, family, qualifier, qualifier_len, ts, st,
			 data, len);
}

/* ------------------------------------------------------------ rows */

/*
 * Whether it, from key `from` on and while keys begin with `within`, reaches
 * a visible cell (of family only, if not NULL): 1, 0 or < 0.  Lands on the
 * first key of each column, so that key is the column's newest version.
 * REQUIRES the schema lock (t's families are looked up).
 */
static int probe(struct kv_iter *it, struct tsch_table *t, const struct tsch_family *only,
		 struct slice from, struct slice within, uint64_t now, struct buf *scratch,
		 struct buf *target)
{
	kv_iter_seek(it, from.data, from.len);
	while (kv_iter_valid(it)) {
		struct slice key = iter_key(it);
		const struct tsch_family *f;
		struct tkey k;

		if (key.len < within.len || memcmp(key.data, within.data, within.len) != 0)
			return 0;
		if (tkey_decode(key, &k, scratch) < 0)
			return -EUCLEAN;
		f = tsch_family_by_id(t, k.family);
		if (!f || f->dropped || (only && f != only)) {
			/* another family's cells: past all of them (its prefix ends 2 bytes
			 * after the row's) */
			size_t span;

			if (tkey_row_span(key, &span) < 0)
				return -EUCLEAN;
			seek_past(it, slice_make(key.data, span + TKEY_FAMILY_LEN), target);
			continue;
		}
		if (tsch_gc_keeps(f, k.ts, 0, now))
			return 1;
		/* not visible: nor are its older versions; past the column */
		seek_past(it, slice_make(key.data, key.len - TKEY_TS_LEN), target);
	}
	return kv_iter_status(it);
}

/*
 * The row probes share this: an iterator per group tree bounded to the row,
 * created when first needed.  REQUIRES the schema read lock.
 */
struct rowprobe {
	struct tbl_db *db;
	struct tsch_table *t;
	struct buf lower, upper, from, scratch, target;
	struct kv_iter **its;         /* by index in t->groups */
	uint64_t now;
};

static void rowprobe_init(struct rowprobe *p, struct tbl_db *db, struct tsch_table *t,
			  struct slice row)
{
	memset(p, 0, sizeof(*p));
	p->db = db;
	p->t = t;
	p->now = tsch_wall();
	tkey_row_prefix(&p->lower, t->id, row);
	tkey_row_end(&p->upper, t->id, row);
	p->its = xcalloc(t->ngroups, sizeof(*p->its));
}

static void rowprobe_free(struct rowprobe *p)
{
	for (size_t i = 0; i < p->t->ngroups; i++)
		if (p->its[i])
			kv_iter_free(p->its[i]);
	free(p->its);
	buf_free(&p->lower);
	buf_free(&p->upper);
	buf_free(&p->from);
	buf_free(&p->scratch);
	buf_free(&p->target);
}

static struct kv_iter *rowprobe_iter(struct rowprobe *p, size_t gi)
{
	if (!p->its[gi]) {
		struct kv_read_options ro;

		memset(&ro, 0, sizeof(ro));
		ro.tree = tsch_group_tree(p->t->groups[gi]);
		ro.lower = p->lower.data;
		ro.lower_len = p->lower.len;
		ro.upper = p->upper.data;
		ro.upper_len = p->upper.len;
		ro.keys_only = 1;     /* the probes decode keys only */
		p->its[gi] = kv_iter_new(p->db->kv, &ro);
	}
	return p->its[gi];
}

static size_t group_index(const struct tsch_table *t, const struct tsch_group *g)
{
	for (size_t i = 0; i < t->ngroups; i++)
		if (t->groups[i] == g)
			return i;
	assert(0);
	return 0;
}

/* 1 if family f (NULL: any family) has a visible cell in the row, 0 if not, < 0. */
static int rowprobe_family(struct rowprobe *p, struct slice row, const struct tsch_family *f)
{
	if (f) {
		buf_clear(&p->from);
		tkey_family_prefix(&p->from, p->t->id, row, f->id);
		return probe(rowprobe_iter(p, group_index(p->t, f->group)), p->t, f,
			     buf_slice(&p->from), buf_slice(&p->from), p->now, &p->scratch,
			     &p->target);
	}
	for (size_t i = 0; i < p->t->ngroups; i++) {
		int r = probe(rowprobe_iter(p, i), p->t, NULL, buf_slice(&p->lower),
			      buf_slice(&p->lower), p->now, &p->scratch, &p->target);

		if (r != 0)
			return r;
	}
	return 0;
}

static int row_error(int r, const char *table, const void *row, size_t row_len)
{
	char rt[256], why[512];

	snprintf(why, sizeof(why), "%s", kv_strerror(r));
	return ERR_SET(r, "table %s, row \"%s\": %s", table, show(rt, sizeof(rt), row, row_len),
			why);
}

/* The row checks: family NULL for tbl_row_exists. */
static int row_check(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		     const char *family, int by_family)
{
	struct slice rk = slice_make(row, row_len);
	struct tsch_family *f = NULL;
	struct rowprobe p;
	struct tsch_table *t;
	char rt[256];
	int r;

	r = check_keys(table, row, row_len, NULL, SIZE_MAX);
	if (r < 0)
		return r;
	if (by_family && !family)
		return ERR_SET(-EINVAL, "table %.600s: no family named", table);
	r = tsch_lock_table(db, table, &t);
	if (r < 0)
		return r;
	if (by_family) {
		f = tsch_find_family(t, family);
		if (!f) {
			tsch_unlock(db);
			return ERR_SET(-ENOENT, "table %s, family %.100s: no such family", table,
					family);
		}
	}
	rowprobe_init(&p, db, t, rk);
	r = rowprobe_family(&p, rk, f);
	rowprobe_free(&p);
	tsch_unlock(db);
	if (r < 0)
		return row_error(r, table, row, row_len);
	if (r == 0)
		return ERR_SET(-ENOENT, "table %s: row \"%s\" has no cells%s%s", table,
				show(rt, sizeof(rt), row, row_len), f ? " in family " : "",
				f ? family : "");
	return 0;
}

int tbl_row_exists(struct tbl_db *db, const char *table, const void *row, size_t row_len)
{
	API_ENTRY();
	return row_check(db, table, row, row_len, NULL, 0);
}

int tbl_row_has_family(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		       const char *family)
{
	API_ENTRY();
	return row_check(db, table, row, row_len, family, 1);
}

static int cmp_family_name(const void *a, const void *b)
{
	return strcmp((*(struct tsch_family *const *)a)->name,
		      (*(struct tsch_family *const *)b)->name);
}

int tbl_row_families(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		     char ***names, size_t *n)
{
	API_ENTRY();
	struct slice rk = slice_make(row, row_len);
	struct tsch_family **live;
	struct rowprobe p;
	struct tsch_table *t;
	size_t nlive = 0;
	int r;

	*names = NULL;
	*n = 0;
	r = check_keys(table, row, row_len, NULL, SIZE_MAX);
	if (r < 0)
		return r;
	r = tsch_lock_table(db, table, &t);
	if (r < 0)
		return r;
	live = xmalloc((t->nfamilies + 1) * sizeof(*live));
	for (size_t i = 0; i < t->nfamilies; i++)
		if (!t->families[i]->dropped)
			live[nlive++] = t->families[i];
	qsort(live, nlive, sizeof(*live), cmp_family_name);
	*names = xmalloc((nlive + 1) * sizeof(**names));
	rowprobe_init(&p, db, t, rk);
	for (size_t i = 0; i < nlive && r >= 0; i++) {
		r = rowprobe_family(&p, rk, live[i]);
		if (r > 0)
			(*names)[(*n)++] = xstrdup(live[i]->name);
	}
	rowprobe_free(&p);
	tsch_unlock(db);
	free(live);
	if (r < 0) {
		tbl_free_names(*names, *n);
		*names = NULL;
		*n = 0;
		return row_error(r, table, row, row_len);
	}
	return 0;
}

/* ------------------------------------------------------------ a family's columns */

struct tbl_columns {
	struct kv_iter *it;
	struct famref ref;
	unsigned flags;
	uint64_t now;                 /* the wall clock at creation, for TTLs */
	struct buf row;
	struct buf famprefix, upper;  /* the iterator's bounds */
	/* resuming with versions: the versions of `after` down to after_ts are not listed */
	int resume;
	struct buf after;
	uint64_t after_ts;
	/* the column being read */
	int in_col;
	uint32_t n;                   /* versions of it met so far */
	struct buf col, colprefix;
	struct tbl_column cur;
	int failed;
	char *table;                  /* for messages */
	struct buf scratch, target;
};

void tbl_columns_free(struct tbl_columns *c)
{
	if (!c)
		return;
	if (c->it)
		kv_iter_free(c->it);
	buf_free(&c->row);
	buf_free(&c->famprefix);
	buf_free(&c->upper);
	buf_free(&c->after);
	buf_free(&c->col);
	buf_free(&c->colprefix);
	buf_free(&c->scratch);
	buf_free(&c->target);
	free(c->table);
	free(c);
}

int tbl_columns_new(struct tbl_db *db, const struct tbl_snapshot *snap, const char *table,
		    const void *row, size_t row_len, const char *family,
		    const void *after, size_t after_len, uint64_t after_ts, unsigned flags,
		    struct tbl_columns **out)
{
	API_ENTRY();
	struct slice rk = slice_make(row, row_len);
	struct tbl_columns *c;
	int r;

	*out = NULL;
	if (flags & ~TBL_COLUMNS_VERSIONS)
		return ERR_SET(-EINVAL, "table %.600s: unknown listing flags %#x", table,
				flags & ~TBL_COLUMNS_VERSIONS);
	r = check_keys(table, row, row_len, after, after ? after_len : SIZE_MAX);
	if (r < 0)
		return r;
	c = xcalloc(1, sizeof(*c));
	r = resolve(db, table, family, &c->ref);
	if (r < 0) {
		tbl_columns_free(c);
		return r;
	}
	c->table = xstrdup(table);
	c->flags = flags;
	c->now = tsch_wall();
	buf_set(&c->row, row_len ? row : "", row_len);
	tkey_family_prefix(&c->famprefix, c->ref.table_id, rk, c->ref.f.id);
	c->it = iter_over(db, c->ref.tree, tsch_kv_snap(snap), buf_slice(&c->famprefix),
			  &c->upper, 1);
	if (!after) {
		kv_iter_seek(c->it, c->famprefix.data, c->famprefix.len);
	} else {
		struct slice a = slice_make(after_len ? after : "", after_len);

		tkey_column_prefix(&c->target, c->ref.table_id, rk, c->ref.f.id, a);
		if (flags & TBL_COLUMNS_VERSIONS) {
			/* from the column's start, so that its versions are counted */
			c->resume = 1;
			buf_set(&c->after, a.data, a.len);
			c->after_ts = after_ts;
			kv_iter_seek(c->it, c->target.data, c->target.len);
		} else {
			buf_set(&c->scratch, c->target.data, c->target.len);
			buf_clear(&c->target);
			tkey_successor(&c->target, buf_slice(&c->scratch));
			kv_iter_seek(c->it, c->target.data, c->target.len);
		}
	}
	*out = c;
	return 0;
}

/* Past the current column (c->colprefix). */
static void columns_skip(struct tbl_columns *c)
{
	skip_prefix(c->it, buf_slice(&c->colprefix), &c->target);
	c->in_col = 0;
}

static int columns_next(struct tbl_columns *c, const struct tbl_column **col)
{
	while (kv_iter_valid(c->it)) {
		struct tkey k;
		int r;

		if (tkey_decode(iter_key(c->it), &k, &c->scratch) < 0)
			return -EUCLEAN;
		if (!c->in_col || !slice_eq(k.qualifier, buf_slice(&c->col))) {
			struct slice key = iter_key(c->it);

			buf_set(&c->col, k.qualifier.len ? k.qualifier.data : "", k.qualifier.len);
			/* the column's prefix: its key without the timestamp */
			buf_set(&c->colprefix, key.data, key.len - TKEY_TS_LEN);
			c->in_col = 1;
			c->n = 0;
		}
		if (!tsch_gc_keeps(&c->ref.f, k.ts, c->n, c->now)) {
			columns_skip(c);
			continue;
		}
		if (c->resume && slice_eq(buf_slice(&c->col), buf_slice(&c->after))) {
			if (k.ts >= c->after_ts) {
				/* listed before: count it, go on */
				c->n++;
				if (c->after_ts == 0) {
					columns_skip(c);
				} else if (c->ref.f.s.max_versions == 0 && k.ts > c->after_ts) {
					/* nothing to count: straight to the versions after it */
					buf_clear(&c->target);
					tkey_encode(&c->target, c->ref.table_id, buf_slice(&c->row),
						    c->ref.f.id, k.qualifier, c->after_ts - 1);
					kv_iter_seek(c->it, c->target.data, c->target.len);
				} else {
					kv_iter_next(c->it);
				}
				continue;
			}
			c->resume = 0;
		}
		c->cur.qualifier = c->col.data ? c->col.data : "";
		c->cur.qualifier_len = c->col.len;
		c->cur.ts = k.ts;
		c->cur.newest = c->n == 0;
		r = value_stat(iter_value(c->it), kv_iter_value_size(c->it), &c->scratch,
			       &c->cur.type, &c->cur.value_size, &c->cur.text_size);
		if (r < 0)
			return r;
		c->n++;
		if (c->flags & TBL_COLUMNS_VERSIONS)
			kv_iter_next(c->it);
		else
			columns_skip(c);
		*col = &c->cur;
		return 1;
	}
	return kv_iter_status(c->it);
}

int tbl_columns_next(struct tbl_columns *c, const struct tbl_column **col)
{
	API_ENTRY();
	int r;

	*col = NULL;
	if (c->failed)
		return c->failed;
	r = columns_next(c, col);
	if (r < 0) {
		char rt[256], why[512];

		snprintf(why, sizeof(why), "%s", kv_strerror(r));
		r = ERR_SET(r, "table %s, row \"%s\", family %s: listing: %s", c->table,
			     show(rt, sizeof(rt), c->row.data, c->row.len), c->ref.name, why);
		c->failed = r;
		*col = NULL;
	}
	return r;
}
