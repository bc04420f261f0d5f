/*
 * tscan.c -- reads of the wide-column model: one row (tbl_get_row), scans
 * over row ranges and row-key prefixes (tbl_scan_*), and the existence
 * checks the schema code makes before a drop (tscan_row_has_cells,
 * tscan_table_has_cells).  Every read applies the garbage-collection rule of
 * table_int.h (tsch_gc_keeps), so nothing that compaction would remove is
 * ever returned, compacted or not.
 *
 * The schema a read sees.  A scan copies, under the schema read lock and
 * once, what it needs of the schema: the table's id and name, every family's
 * id, name, settings and dropped flag, and the kv trees of the locality
 * groups it reads.  It never takes the lock again, so tbl_scan_next runs
 * without it and schema changes made while a scan is open do not affect it:
 * a scan reads the schema as of its creation just as it reads the data as of
 * its snapshot.  The family names in the cells it returns point into that
 * copy (valid until tbl_scan_free); tbl_get_row copies them into the row it
 * returns.  The TTL cut-off is the wall clock at creation, likewise fixed.
 *
 * How a scan walks the engine.  One kv iterator per locality group the read
 * needs (the groups of the requested families, all groups for all families),
 * all at one snapshot (the caller's, or one the scan takes and releases), all
 * bounded to the row range: the table, intersected with [row prefix of start,
 * row prefix of end) and with [tkey_row_scan_prefix(prefix), its successor).
 * Each iterator stands at the next row it holds; a row is the smallest row
 * key among them (the largest in reverse), gathered from every iterator that
 * holds it.  Rows are compared by their escaped row prefix, which sorts as
 * the row keys do, so nothing is unescaped to compare.  Memory holds one row:
 * its visible cells are gathered (with cells_per_row, at most that many per
 * family), put in order and returned; the buffers are reused for the next.
 *
 * Within a row, cells are always read forward, so the GC rule (which counts
 * a column's versions newest first) and the limits work the same in both
 * directions.  A reverse scan walks rows backward (kv_iter_seek_last, then
 * kv_iter_seek_for_prev of the row it just read, which lands on the last key
 * of the row before) and reads each row forward after one seek to its
 * prefix: two seeks per row and tree, instead of stepping back over every
 * cell (the engine copies each value it steps back over).
 *
 * Skipping.  Where the filters make a stretch of keys useless -- a family
 * not asked for, a dropped or unknown family, a column past its versions
 * limit or the GC limit, qualifiers outside the qualifier filter, a family
 * that has given cells_per_row cells -- the iterator moves to the first key
 * that may matter (the next wanted family's prefix in the row, the row's end,
 * the column's end, the filter's first column) by a few steps and then a
 * seek, so a short stretch costs steps and a long one a seek.  A row_keys_only
 * scan seeks to tkey_row_end straight after the first visible cell of a row,
 * so its cost per row does not depend on the row's cells.
 *
 * Order of the filters for one stored version, as documented for callers:
 * family (unknown and dropped families are invisible; families outside
 * r->families are not read), qualifier filter, GC (max_versions counts the
 * column's stored versions newest first, whatever the read's filters; ttl
 * against the creation clock), time range [ts_min, ts_max), then versions
 * (the newest r->versions of those left, per column), then cells_per_row (the
 * first ones in the row's output order: family name, qualifier, newest
 * first).  A row with no cell left is not returned.
 *
 * Conventions of struct tbl_read settled here: qualifier == NULL means no
 * qualifier filter (an empty qualifier with qualifier_exact asks for the
 * column whose qualifier is empty; an empty prefix matches all); ts_max == 0
 * means no upper bound; ts_min > ts_max (ts_max != 0) is -EINVAL; a family
 * name in r->families that the table does not have (or has dropped) is
 * -ENOENT; families != NULL with nfamilies == 0 asks for no family, so
 * nothing is returned.  tbl_get_row ignores the scan-only fields (prefix,
 * start, end, reverse, row_limit, row_keys_only).
 *
 * keys_only and row_keys_only scans read through keys-only kv iterators
 * (kv.h): the engine hands over each value's length and first
 * KV_VALUE_PREFIX bytes only (the type tag is the first), and a value with
 * a table block of its own -- any large one -- is not read at all.
 *
 * Counts: rows and cells returned, and bytes: the key and value lengths of
 * every kv entry a scan's iterators stopped on, as the engine handed them
 * over (with keys_only or row_keys_only, at most KV_VALUE_PREFIX bytes of
 * each value; entries jumped over by a seek are not read).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "table_int.h"

/* Steps tried before a skip turns into a seek: a seek costs about this many steps. */
#define SKIP_STEPS 8

/* A family as a scan sees it: a copy of the schema's, taken at creation. */
struct sfam {
	struct tsch_family f;          /* name: the scan's own copy; group: not used after setup */
	uint32_t rank;                /* position by name among the table's families */
	int wanted;                   /* read by this scan (live and asked for) */
};

/* One locality group's iterator and the row it stands at. */
struct stree {
	struct kv_tree *tree;         /* NULL: the kv default tree */
	struct kv_iter *it;
	uint16_t *wanted;             /* ids of the wanted families in this group, ascending */
	size_t nwanted;
	int at_row;                   /* the iterator stands in a row, whose prefix is rowpfx */
	struct buf rowpfx;            /* table id, escaped row, terminator */
};

/* A cell gathered for the current row, before the row is put in order. */
struct pcell {
	uint32_t rank;                /* of its family */
	size_t seq;                   /* gathering order: qualifier, then newest first */
	const char *family;
	size_t qoff, qlen;            /* the qualifier, in s->arena */
	uint64_t ts;
	struct cell_value value;      /* string, bytes: data filled in from voff at the end */
	size_t voff;
	size_t value_size;
};

struct tbl_scan {
	struct tbl_db *db;
	char *table;                  /* the table's name, for messages */
	uint32_t table_id;
	const struct kv_snapshot *snap;
	int own_snap;                 /* snap was taken by the scan: release it at free */
	uint64_t now;                 /* the wall clock at creation, for TTLs */

	/* the read's settings (copied; the caller's pointers are not kept) */
	int has_qual, qual_exact;
	struct buf qual;
	uint64_t ts_min, ts_max;
	uint32_t versions, cells_per_row;
	int keys_only, reverse, row_keys_only, no_fill_cache;
	uint64_t row_limit;

	struct sfam *fams;            /* every family of the table, by id */
	size_t nfams;
	struct sfam *last_fam;        /* the last one looked up (cells of a family come together) */
	struct stree *trees;
	size_t ntrees;
	struct buf lower, upper;      /* the kv bounds */
	int has_upper;
	int positioned;               /* the iterators were placed at their first rows */
	int empty;                    /* the bounds hold no key: nothing to read */
	int failed;                   /* the error tbl_scan_next returned; it returns it again */

	struct tbl_scan_counts counts;

	/* the current row */
	struct buf cur;               /* its row prefix */
	struct buf rowkey;            /* its row key */
	int row_visible;              /* row_keys_only: a visible cell was found */
	struct pcell *pc;
	size_t npc, cap_pc;
	struct buf arena;             /* qualifiers and values of the gathered cells */
	struct tbl_cell *cells;
	size_t cap_cells;
	struct tbl_row row;

	/* scratch */
	struct buf col;               /* the qualifier of the column being read */
	struct buf scratch, tmp, target;
};

/* ------------------------------------------------------------ messages */

/* Bytes for people: printable ASCII as is, others as \xHH, cut at about 80 characters. */
static const char *show(char *out, size_t cap, const void *p, size_t n)
{
	const unsigned char *u = p;
	size_t o = 0, i;

	for (i = 0; i < n && o + 8 < cap && o < 80; i++) {
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

/* Corruption found below (tkey, cell): the same message, prefixed with the table and row. */
static int corrupt(struct tbl_scan *s, const char *what)
{
	char why[512], row[128];

	snprintf(why, sizeof(why), "%s", err_last());
	return ERR_CORRUPT("table %s, row \"%s\": %s: %s", s->table,
			  show(row, sizeof(row), s->rowkey.data, s->rowkey.len), what, why);
}

static int iter_failed(struct tbl_scan *s, struct stree *t)
{
	int r = kv_iter_status(t->it);

	if (r < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", kv_strerror(r));
		return ERR_SET(r, "table %s: scan: %s", s->table, why);
	}
	return 0;
}

/* ------------------------------------------------------------ families */

static int cmp_fam_id(const void *a, const void *b)
{
	const struct sfam *x = a, *y = b;

	return (x->f.id > y->f.id) - (x->f.id < y->f.id);
}

static int cmp_fam_name_ptr(const void *a, const void *b)
{
	const struct sfam *const *x = a, *const *y = b;

	return strcmp((*x)->f.name, (*y)->f.name);
}

/* The scan's copy of family id, or NULL if the table never had it. */
static struct sfam *find_fam(struct tbl_scan *s, uint16_t id)
{
	size_t lo = 0, hi = s->nfams;

	if (s->last_fam && s->last_fam->f.id == id)
		return s->last_fam;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->fams[mid].f.id < id) {
			lo = mid + 1;
		} else if (s->fams[mid].f.id > id) {
			hi = mid;
		} else {
			s->last_fam = &s->fams[mid];
			return s->last_fam;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ setup */

static void buf_set_slice(struct buf *b, struct slice s)
{
	buf_set(b, s.data, s.len);
}

/*
 * Copy the families of t, mark the wanted ones (only, or r->families, or all
 * live ones) and make one tree entry per locality group they use.
 * REQUIRES the schema lock (read or write).
 */
static int setup_families(struct tbl_scan *s, struct tsch_table *t, const struct tbl_read *r,
			  const struct tsch_family *only)
{
	const struct tsch_group **groups;
	struct sfam **by_name;
	size_t i, j;

	s->nfams = t->nfamilies;
	s->fams = xcalloc(t->nfamilies ? t->nfamilies : 1, sizeof(*s->fams));
	for (i = 0; i < t->nfamilies; i++) {
		s->fams[i].f = *t->families[i];
		s->fams[i].f.name = xstrdup(t->families[i]->name);
	}

	/* Which families the read wants. */
	if (r->nfamilies && !r->families)
		return ERR_SET(-EINVAL, "table %s: %zu families but no names", s->table,
				r->nfamilies);
	for (i = 0; i < s->nfams; i++) {
		const struct tsch_family *orig = t->families[i];

		if (orig->dropped)
			continue;
		if (only)
			s->fams[i].wanted = orig == only;
		else if (!r->families)
			s->fams[i].wanted = 1;
	}
	if (!only && r->families) {
		for (j = 0; j < r->nfamilies; j++) {
			const struct tsch_family *f = r->families[j] ?
				tsch_find_family(t, r->families[j]) : NULL;

			if (!f)
				return ERR_SET(-ENOENT, "table %s: no family %s", s->table,
						r->families[j] ? r->families[j] : "(null)");
			for (i = 0; i < s->nfams; i++)
				if (t->families[i] == f)
					s->fams[i].wanted = 1;
		}
	}

	/* One tree per group of a wanted family; the wanted ids of each. */
	groups = xcalloc(s->nfams ? s->nfams : 1, sizeof(*groups));
	s->trees = xcalloc(s->nfams ? s->nfams : 1, sizeof(*s->trees));
	for (i = 0; i < s->nfams; i++) {
		const struct tsch_group *g = t->families[i]->group;
		struct stree *tr;

		if (!s->fams[i].wanted)
			continue;
		assert(g);
		for (j = 0; j < s->ntrees && groups[j] != g; j++)
			;
		tr = &s->trees[j];
		if (j == s->ntrees) {
			groups[j] = g;
			s->ntrees++;
			tr->wanted = xcalloc(s->nfams, sizeof(*tr->wanted));
		}
		tr->wanted[tr->nwanted++] = s->fams[i].f.id;
	}
	for (i = 0; i < s->nfams; i++)
		s->fams[i].f.group = NULL;

	/* Ranks by name, then the copies in id order for lookups. */
	by_name = xcalloc(s->nfams ? s->nfams : 1, sizeof(*by_name));
	for (i = 0; i < s->nfams; i++)
		by_name[i] = &s->fams[i];
	qsort(by_name, s->nfams, sizeof(*by_name), cmp_fam_name_ptr);
	for (i = 0; i < s->nfams; i++)
		by_name[i]->rank = (uint32_t)i;
	free(by_name);
	qsort(s->fams, s->nfams, sizeof(*s->fams), cmp_fam_id);
	for (j = 0; j < s->ntrees; j++) {
		struct stree *tr = &s->trees[j];

		/* ids were added in the table's order; put them in key order */
		for (i = 1; i < tr->nwanted; i++) {
			uint16_t v = tr->wanted[i];
			size_t k = i;

			for (; k > 0 && tr->wanted[k - 1] > v; k--)
				tr->wanted[k] = tr->wanted[k - 1];
			tr->wanted[k] = v;
		}
	}

	for (j = 0; j < s->ntrees; j++)
		s->trees[j].tree = tsch_group_tree(groups[j]);
	free(groups);
	return 0;
}

/* The larger of two lower bounds, the smaller of two upper bounds, into dst. */
static void raise_lower(struct buf *dst, struct slice b)
{
	if (slice_cmp(b, buf_slice(dst)) > 0)
		buf_set_slice(dst, b);
}

/* Set the kv bounds for rows [start, end) within prefix, or for one row. */
static void setup_bounds(struct tbl_scan *s, const struct tbl_read *r, const struct slice *row)
{
	struct buf b = BUF_INIT;

	buf_clear(&s->lower);
	buf_clear(&s->upper);
	if (row) {
		tkey_row_prefix(&s->lower, s->table_id, *row);
		tkey_row_end(&s->upper, s->table_id, *row);
		s->has_upper = 1;
		return;
	}
	tkey_table_prefix(&s->lower, s->table_id);
	s->has_upper = tkey_successor(&s->upper, buf_slice(&s->lower));
	if (r->prefix) {
		struct buf p = BUF_INIT;

		tkey_row_scan_prefix(&p, s->table_id, slice_make(r->prefix, r->prefix_len));
		raise_lower(&s->lower, buf_slice(&p));
		buf_clear(&b);
		if (tkey_successor(&b, buf_slice(&p)) &&
		    (!s->has_upper || slice_cmp(buf_slice(&b), buf_slice(&s->upper)) < 0)) {
			buf_set_slice(&s->upper, buf_slice(&b));
			s->has_upper = 1;
		}
		buf_free(&p);
	}
	if (r->start) {
		buf_clear(&b);
		/* start_exclusive: from the first key after start's row */
		if (r->start_exclusive)
			tkey_row_end(&b, s->table_id, slice_make(r->start, r->start_len));
		else
			tkey_row_prefix(&b, s->table_id, slice_make(r->start, r->start_len));
		raise_lower(&s->lower, buf_slice(&b));
	}
	if (r->end) {
		buf_clear(&b);
		tkey_row_prefix(&b, s->table_id, slice_make(r->end, r->end_len));
		if (!s->has_upper || slice_cmp(buf_slice(&b), buf_slice(&s->upper)) < 0) {
			buf_set_slice(&s->upper, buf_slice(&b));
			s->has_upper = 1;
		}
	}
	buf_free(&b);
	if (s->has_upper && slice_cmp(buf_slice(&s->lower), buf_slice(&s->upper)) >= 0)
		s->empty = 1;
}

static void open_iterators(struct tbl_scan *s)
{
	size_t j;

	for (j = 0; j < s->ntrees; j++) {
		struct kv_read_options ro = {
			.tree = s->trees[j].tree,
			.snapshot = s->snap,
			.lower = s->lower.data, .lower_len = s->lower.len,
			.upper = s->has_upper ? s->upper.data : NULL,
			.upper_len = s->has_upper ? s->upper.len : 0,
			.keys_only = s->keys_only || s->row_keys_only,
			.no_fill_cache = s->no_fill_cache,
		};

		s->trees[j].it = kv_iter_new(s->db->kv, &ro);
	}
}

void tbl_scan_free(struct tbl_scan *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->ntrees; i++) {
		if (s->trees[i].it)
			kv_iter_free(s->trees[i].it);
		free(s->trees[i].wanted);
		buf_free(&s->trees[i].rowpfx);
	}
	free(s->trees);
	for (i = 0; i < s->nfams; i++)
		free(s->fams[i].f.name);
	free(s->fams);
	if (s->own_snap)
		kv_snapshot_release(s->db->kv, s->snap);
	free(s->table);
	buf_free(&s->qual);
	buf_free(&s->lower);
	buf_free(&s->upper);
	buf_free(&s->cur);
	buf_free(&s->rowkey);
	free(s->pc);
	buf_free(&s->arena);
	free(s->cells);
	buf_free(&s->col);
	buf_free(&s->scratch);
	buf_free(&s->tmp);
	buf_free(&s->target);
	free(s);
}

/*
 * Make a scan of table t: of the rows r asks for, or of the one row *row
 * (then r's prefix, start, end, reverse and row_limit are ignored); of family
 * only (if not NULL, overriding r->families) or r's families.  On success
 * *out is the scan, for tbl_scan_free.  REQUIRES the schema lock (read or
 * write); the scan does not need it afterwards.
 */
static int scan_create(struct tbl_db *db, struct tsch_table *t, const struct tbl_read *r,
		       const struct tsch_family *only, const struct slice *row,
		       struct tbl_scan **out)
{
	static const struct tbl_read all;
	struct tbl_scan *s = xcalloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!r)
		r = &all;
	s->db = db;
	s->table = xstrdup(t->name);
	s->table_id = t->id;
	if (r->qualifier_len && !r->qualifier) {
		err = ERR_SET(-EINVAL, "table %s: a qualifier length without a qualifier",
			       s->table);
		goto fail;
	}
	if (r->ts_max && r->ts_min > r->ts_max) {
		err = ERR_SET(-EINVAL, "table %s: time range [%llu, %llu) is reversed", s->table,
			       (unsigned long long)r->ts_min, (unsigned long long)r->ts_max);
		goto fail;
	}
	s->has_qual = r->qualifier != NULL;
	s->qual_exact = r->qualifier_exact;
	if (s->has_qual)
		buf_set(&s->qual, r->qualifier, r->qualifier_len);
	s->ts_min = r->ts_min;
	s->ts_max = r->ts_max;
	s->versions = r->versions;
	s->cells_per_row = r->cells_per_row;
	s->keys_only = r->keys_only;
	s->row_keys_only = r->row_keys_only;
	s->no_fill_cache = r->no_fill_cache;
	if (!row) {
		s->reverse = r->reverse;
		s->row_limit = r->row_limit;
	} else {
		s->row_limit = 1;
	}
	err = setup_families(s, t, r, only);
	if (err < 0)
		goto fail;
	setup_bounds(s, r, row);
	s->now = tsch_wall();
	if (r->snapshot) {
		s->snap = tsch_kv_snap(r->snapshot);
	} else {
		s->snap = kv_snapshot_new(db->kv);
		s->own_snap = 1;
	}
	open_iterators(s);
	*out = s;
	return 0;
fail:
	tbl_scan_free(s);
	return err;
}

/* ------------------------------------------------------------ moving */

static void count_entry(struct tbl_scan *s, struct stree *t)
{
	size_t kl, vl;

	kv_iter_key(t->it, &kl);
	kv_iter_value(t->it, &vl);
	s->counts.bytes += kl + vl;
}

static struct slice iter_key(struct stree *t)
{
	size_t kl;
	const void *k = kv_iter_key(t->it, &kl);

	return slice_make(k, kl);
}

/*
 * Move t to the first key >= target: SKIP_STEPS steps, then a seek.  The
 * keys stepped over are counted as read; the one landed on is left for the
 * caller to read (and count).
 */
static void skip_to(struct tbl_scan *s, struct stree *t, struct slice target)
{
	int i;

	for (i = 0; i < SKIP_STEPS; i++) {
		kv_iter_next(t->it);
		if (!kv_iter_valid(t->it))
			return;
		if (slice_cmp(iter_key(t), target) >= 0)
			return;
		count_entry(s, t);
	}
	kv_iter_seek(t->it, target.data, target.len);
}

/* Past family id in the current row: to the next wanted family of t, or the row's end. */
static void skip_family(struct tbl_scan *s, struct stree *t, uint16_t id)
{
	struct slice row = buf_slice(&s->rowkey);
	size_t i;

	buf_clear(&s->target);
	for (i = 0; i < t->nwanted && t->wanted[i] <= id; i++)
		;
	if (i < t->nwanted)
		tkey_family_prefix(&s->target, s->table_id, row, t->wanted[i]);
	else
		tkey_row_end(&s->target, s->table_id, row);
	skip_to(s, t, buf_slice(&s->target));
}

/* Past every version of column (id, q) in the current row. */
static void skip_column(struct tbl_scan *s, struct stree *t, uint16_t id, struct slice q)
{
	buf_clear(&s->tmp);
	tkey_column_prefix(&s->tmp, s->table_id, buf_slice(&s->rowkey), id, q);
	buf_clear(&s->target);
	/* a column prefix ends in the terminator 0x00 0x01, so it always has a successor */
	tkey_successor(&s->target, buf_slice(&s->tmp));
	skip_to(s, t, buf_slice(&s->target));
}

/*
 * Place t at the row it stands in after a move: record the row's prefix, or
 * note that t has no more rows.  In reverse, t stands on the LAST key of that
 * row, which is read (and counted) here.
 */
static int locate(struct tbl_scan *s, struct stree *t)
{
	struct slice k;
	size_t span;

	t->at_row = 0;
	if (!kv_iter_valid(t->it))
		return iter_failed(s, t);
	k = iter_key(t);
	if (s->reverse)
		count_entry(s, t);
	if (tkey_row_span(k, &span) < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", err_last());
		return ERR_CORRUPT("table %s: %s", s->table, why);
	}
	buf_set(&t->rowpfx, k.data, span);
	t->at_row = 1;
	return 0;
}

/* Move t past the current row (whose prefix is s->cur) without reading it. */
static int pass_row(struct tbl_scan *s, struct stree *t)
{
	if (s->reverse) {
		kv_iter_seek_for_prev(t->it, s->cur.data, s->cur.len);
	} else {
		buf_clear(&s->target);
		tkey_row_end(&s->target, s->table_id, buf_slice(&s->rowkey));
		kv_iter_seek(t->it, s->target.data, s->target.len);
	}
	return locate(s, t);
}

/* ------------------------------------------------------------ gathering */

/* Where q lies against the qualifier filter: -1 before the columns it takes, 0 in, 1 after. */
static int qual_position(const struct tbl_scan *s, struct slice q)
{
	struct slice want = buf_slice(&s->qual);
	int c;

	if (!s->qual_exact && q.len >= want.len && (want.len == 0 ||
						     memcmp(q.data, want.data, want.len) == 0))
		return 0;
	c = slice_cmp(q, want);
	if (s->qual_exact && c == 0)
		return 0;
	return c < 0 ? -1 : 1;
}

static struct pcell *add_pcell(struct tbl_scan *s)
{
	struct pcell *p;

	if (s->npc == s->cap_pc) {
		s->cap_pc = s->cap_pc ? 2 * s->cap_pc : 16;
		s->pc = xrealloc(s->pc, s->cap_pc * sizeof(*s->pc));
	}
	p = &s->pc[s->npc];
	memset(p, 0, sizeof(*p));
	p->seq = s->npc++;
	return p;
}

/*
 * Record a visible version: its qualifier, and its value unless keys_only
 * (v is then the value's first bytes, size its full length).
 */
static int emit(struct tbl_scan *s, const struct sfam *f, const struct tkey *k, struct slice v,
		size_t size)
{
	struct pcell *p;
	struct cell_value cv;
	int err;

	memset(&cv, 0, sizeof(cv));
	if (s->keys_only) {
		/* the tag byte says the type; the payload is neither decoded nor copied */
		if (v.len == 0 || (unsigned char)v.data[0] == CELL_INVALID ||
		    (unsigned char)v.data[0] > CELL_TYPE_MAX) {
			char row[128];

			return ERR_CORRUPT("table %s, row \"%s\", family %s: a cell value with %s",
					  s->table,
					  show(row, sizeof(row), s->rowkey.data, s->rowkey.len),
					  f->f.name, v.len ? "an invalid type tag" : "no type tag");
		}
		cv.type = (enum cell_type)(unsigned char)v.data[0];
	} else {
		err = cell_decode(v, &cv);
		if (err < 0)
			return corrupt(s, f->f.name);
	}
	p = add_pcell(s);
	p->rank = f->rank;
	p->family = f->f.name;
	p->qoff = s->arena.len;
	p->qlen = k->qualifier.len;
	buf_append(&s->arena, k->qualifier.data, k->qualifier.len);
	p->ts = k->ts;
	p->value = cv;
	p->value_size = size - 1;
	if (!s->keys_only && (cv.type == CELL_STRING || cv.type == CELL_BYTES)) {
		p->voff = s->arena.len;
		buf_append(&s->arena, cv.v.data.data, cv.v.data.len);
		p->value.v.data.data = NULL;
	}
	return 0;
}

/*
 * Read the current row's cells (prefix s->cur) from t, which stands on the
 * row's first key, applying every filter (see the file's opening comment);
 * leave t on the first key after the row.  With row_keys_only, stop at the
 * first visible cell, set s->row_visible and seek to the row's end.
 */
static int gather(struct tbl_scan *s, struct stree *t)
{
	struct slice cur = buf_slice(&s->cur);
	struct sfam *f = NULL;
	int in_fam = 0, in_col = 0;
	uint16_t fam_id = 0;
	uint32_t n = 0, nv = 0, fam_cells = 0;
	int err;

	while (kv_iter_valid(t->it)) {
		struct slice key = iter_key(t), v;
		struct tkey k;
		size_t vl;
		const void *vp;

		if (key.len <= cur.len || memcmp(key.data, cur.data, cur.len) != 0)
			break;          /* the next row */
		vp = kv_iter_value(t->it, &vl);
		v = slice_make(vp, vl);
		s->counts.bytes += key.len + vl;
		if (tkey_decode(key, &k, &s->scratch) < 0)
			return corrupt(s, "cell key");

		if (!in_fam || k.family != fam_id) {
			fam_id = k.family;
			in_fam = 1;
			in_col = 0;
			fam_cells = 0;
			f = find_fam(s, fam_id);
		}
		if (!f || !f->wanted) {
			/* not asked for, dropped, or unknown: invisible */
			skip_family(s, t, fam_id);
			in_fam = 0;
			continue;
		}
		if (!in_col || !slice_eq(k.qualifier, buf_slice(&s->col))) {
			if (s->has_qual) {
				int pos = qual_position(s, k.qualifier);

				if (pos > 0) {
					skip_family(s, t, fam_id);
					in_fam = 0;
					continue;
				}
				if (pos < 0) {
					buf_clear(&s->target);
					tkey_column_prefix(&s->target, s->table_id,
							   buf_slice(&s->rowkey), fam_id,
							   buf_slice(&s->qual));
					skip_to(s, t, buf_slice(&s->target));
					in_col = 0;
					continue;
				}
			}
			buf_set_slice(&s->col, k.qualifier);
			in_col = 1;
			n = 0;
			nv = 0;
		}

		/* GC: once a version is not kept, no older version of the column is */
		if (!tsch_gc_keeps(&f->f, k.ts, n, s->now)) {
			skip_column(s, t, fam_id, k.qualifier);
			in_col = 0;
			continue;
		}
		if (n < UINT32_MAX)
			n++;
		if (s->ts_max && k.ts >= s->ts_max) {
			if (f->f.s.max_versions == 0) {
				/* no version count to keep: jump to the newest version < ts_max */
				buf_clear(&s->target);
				tkey_encode(&s->target, s->table_id, buf_slice(&s->rowkey), fam_id,
					    k.qualifier, s->ts_max - 1);
				skip_to(s, t, buf_slice(&s->target));
			} else {
				kv_iter_next(t->it);
			}
			continue;
		}
		if (k.ts < s->ts_min) {
			skip_column(s, t, fam_id, k.qualifier);
			in_col = 0;
			continue;
		}

		if (s->row_keys_only) {
			s->row_visible = 1;
			buf_clear(&s->target);
			tkey_row_end(&s->target, s->table_id, buf_slice(&s->rowkey));
			kv_iter_seek(t->it, s->target.data, s->target.len);
			break;
		}
		err = emit(s, f, &k, v, s->keys_only ? kv_iter_value_size(t->it) : v.len);
		if (err < 0)
			return err;
		nv++;
		fam_cells++;
		if (s->versions && nv >= s->versions) {
			skip_column(s, t, fam_id, k.qualifier);
			in_col = 0;
		} else if (s->cells_per_row && fam_cells >= s->cells_per_row) {
			skip_family(s, t, fam_id);
			in_fam = 0;
		} else {
			kv_iter_next(t->it);
		}
	}
	return iter_failed(s, t);
}

static int cmp_pcell(const void *a, const void *b)
{
	const struct pcell *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Put the gathered cells in the documented order, apply cells_per_row, fill s->row. */
static void finish_row(struct tbl_scan *s)
{
	size_t i, n = s->npc;

	if (s->npc > 1)
		qsort(s->pc, s->npc, sizeof(*s->pc), cmp_pcell);
	if (s->cells_per_row && n > s->cells_per_row)
		n = s->cells_per_row;
	if (n > s->cap_cells) {
		s->cap_cells = n;
		s->cells = xrealloc(s->cells, n * sizeof(*s->cells));
	}
	for (i = 0; i < n; i++) {
		const struct pcell *p = &s->pc[i];
		struct tbl_cell *c = &s->cells[i];
		const char *base = s->arena.data ? s->arena.data : "";

		c->family = p->family;
		c->qualifier = base + p->qoff;
		c->qualifier_len = p->qlen;
		c->ts = p->ts;
		c->value = p->value;
		if (!s->keys_only && (p->value.type == CELL_STRING || p->value.type == CELL_BYTES))
			c->value.v.data.data = base + p->voff;
		c->value_size = p->value_size;
	}
	s->row.key = s->rowkey.data ? s->rowkey.data : "";
	s->row.key_len = s->rowkey.len;
	s->row.cells = n ? s->cells : NULL;
	s->row.ncells = n;
}

/* Place every iterator at its first row. */
static int position(struct tbl_scan *s)
{
	size_t i;
	int err;

	s->positioned = 1;
	for (i = 0; i < s->ntrees; i++) {
		struct stree *t = &s->trees[i];

		if (s->reverse)
			kv_iter_seek_last(t->it);
		else
			kv_iter_seek_first(t->it);
		err = locate(s, t);
		if (err < 0)
			return err;
	}
	return 0;
}

/*
 * The next row, merged from the trees' iterators (see the file's opening
 * comment).  An error is sticky: the scan stands somewhere inside a row then,
 * so every later call returns the same error.
 */
static int next_row(struct tbl_scan *s, const struct tbl_row **row)
{
	uint32_t table;
	struct slice rk;
	size_t i;
	int err;

	if (!s->positioned) {
		err = position(s);
		if (err < 0)
			return err;
	}
	for (;;) {
		struct stree *best = NULL;

		if (s->row_limit && s->counts.rows >= s->row_limit)
			return 0;
		for (i = 0; i < s->ntrees; i++) {
			struct stree *t = &s->trees[i];
			int c;

			if (!t->at_row)
				continue;
			if (!best) {
				best = t;
				continue;
			}
			c = slice_cmp(buf_slice(&t->rowpfx), buf_slice(&best->rowpfx));
			if (s->reverse ? c > 0 : c < 0)
				best = t;
		}
		if (!best)
			return 0;

		buf_set_slice(&s->cur, buf_slice(&best->rowpfx));
		if (tkey_decode_row(buf_slice(&s->cur), &table, &rk, &s->scratch) < 0) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err_last());
			return ERR_CORRUPT("table %s: %s", s->table, why);
		}
		buf_set_slice(&s->rowkey, rk);
		s->npc = 0;
		buf_clear(&s->arena);
		s->row_visible = 0;

		for (i = 0; i < s->ntrees; i++) {
			struct stree *t = &s->trees[i];

			if (!t->at_row || !slice_eq(buf_slice(&t->rowpfx), buf_slice(&s->cur)))
				continue;
			if (s->row_visible) {
				err = pass_row(s, t);
			} else {
				if (s->reverse)
					kv_iter_seek(t->it, s->cur.data, s->cur.len);
				err = gather(s, t);
				if (err < 0)
					return err;
				if (s->reverse)
					kv_iter_seek_for_prev(t->it, s->cur.data, s->cur.len);
				err = locate(s, t);
			}
			if (err < 0)
				return err;
		}

		if (s->row_keys_only ? !s->row_visible : s->npc == 0)
			continue;       /* nothing visible: not a row of this read */
		finish_row(s);
		s->counts.rows++;
		s->counts.cells += s->row.ncells;
		*row = &s->row;
		return 1;
	}
}

int tbl_scan_next(struct tbl_scan *s, const struct tbl_row **row)
{
	API_ENTRY();
	int r;

	*row = NULL;
	if (s->failed)
		return s->failed;
	if (s->empty)
		return 0;
	r = next_row(s, row);
	if (r < 0) {
		s->failed = r;
		*row = NULL;
	}
	return r;
}

void tbl_scan_counts(const struct tbl_scan *s, struct tbl_scan_counts *c)
{
	*c = s->counts;
}

int tbl_scan_new(struct tbl_db *db, const char *table, const struct tbl_read *r,
		 struct tbl_scan **out)
{
	API_ENTRY();
	struct tsch_table *t;
	int err;

	*out = NULL;
	err = tsch_lock_table(db, table, &t);
	if (err < 0)
		return err;
	err = scan_create(db, t, r, NULL, NULL, out);
	tsch_unlock(db);
	return err;
}

/* ------------------------------------------------------------ one row */

/*
 * A copy of row in one allocation (the row, its cells, the key, qualifiers,
 * values and family names), so that tbl_row_free is one free().
 */
static struct tbl_row *copy_row(const struct tbl_row *row)
{
	size_t size = sizeof(struct tbl_row) + row->ncells * sizeof(struct tbl_cell) + row->key_len;
	struct tbl_row *out;
	char *p;
	size_t i;

	for (i = 0; i < row->ncells; i++) {
		const struct tbl_cell *c = &row->cells[i];

		size += c->qualifier_len;
		if (c->value.type == CELL_STRING || c->value.type == CELL_BYTES)
			size += c->value.v.data.len;
		if (i == 0 || strcmp(c->family, row->cells[i - 1].family) != 0)
			size += strlen(c->family) + 1;
	}
	out = xmalloc(size);
	out->cells = (struct tbl_cell *)(out + 1);
	out->ncells = row->ncells;
	p = (char *)(out->cells + row->ncells);
	memcpy(p, row->key, row->key_len);
	out->key = p;
	out->key_len = row->key_len;
	p += row->key_len;
	for (i = 0; i < row->ncells; i++) {
		const struct tbl_cell *c = &row->cells[i];
		struct tbl_cell *d = &out->cells[i];

		*d = *c;
		if (i == 0 || strcmp(c->family, row->cells[i - 1].family) != 0) {
			size_t n = strlen(c->family) + 1;

			memcpy(p, c->family, n);
			d->family = p;
			p += n;
		} else {
			d->family = out->cells[i - 1].family;
		}
		if (c->qualifier_len)
			memcpy(p, c->qualifier, c->qualifier_len);
		d->qualifier = p;
		p += c->qualifier_len;
		if (c->value.type == CELL_STRING || c->value.type == CELL_BYTES) {
			/* keys_only: no data (a NULL pointer with length 0) */
			if (c->value.v.data.len)
				memcpy(p, c->value.v.data.data, c->value.v.data.len);
			d->value.v.data.data = p;
			p += c->value.v.data.len;
		}
	}
	assert((size_t)(p - (char *)out) == size);
	if (!out->ncells)
		out->cells = NULL;
	return out;
}

int tbl_get_row(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		const struct tbl_read *r, struct tbl_row **out)
{
	API_ENTRY();
	struct slice rk = slice_make(row, row_len);
	const struct tbl_row *got;
	struct tbl_read rr;
	struct tsch_table *t;
	struct tbl_scan *s;
	int err;

	*out = NULL;
	err = tbl_check_row(row, row_len);
	if (err < 0)
		return err;
	memset(&rr, 0, sizeof(rr));
	if (r)
		rr = *r;
	rr.row_keys_only = 0;   /* a scan-only field */
	err = tsch_lock_table(db, table, &t);
	if (err < 0)
		return err;
	err = scan_create(db, t, &rr, NULL, &rk, &s);
	tsch_unlock(db);
	if (err < 0)
		return err;
	err = tbl_scan_next(s, &got);
	if (err == 1) {
		*out = copy_row(got);
		err = 0;
	} else if (err == 0) {
		char show_row[128];

		err = ERR_SET(-ENOENT, "table %s: no row \"%s\"%s", table,
			       show(show_row, sizeof(show_row), row, row_len),
			       rr.families || rr.qualifier || rr.ts_max || rr.ts_min ?
			       " with cells matching the read" : "");
	}
	tbl_scan_free(s);
	return err;
}

void tbl_row_free(struct tbl_row *row)
{
	free(row);
}

/* ------------------------------------------------------------ existence */

/*
 * Both checks are row_keys_only reads stopping at the first row, so they cost
 * at most one seek per tree and row they pass over.
 *
 * tscan_row_has_cells: one row; with f, only f's group tree, starting with a
 * seek to f's prefix in the row (a few seeks at most).
 *
 * tscan_table_has_cells: without f, the first visible cell of the table in any
 * group tree, normally found at once.  With f, f's group tree is walked row
 * by row: the family's cells are interleaved with its group's other families
 * in every row, so each row costs a seek to tkey_family_prefix(row, f) and,
 * if f has nothing visible there, a seek to the next row: the cost grows with
 * the number of rows of f's group (in which f has no visible cell), not with
 * their cells.
 */
static int has_cells(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f,
		     const struct slice *row)
{
	struct tbl_read r;
	const struct tbl_row *got;
	struct tbl_scan *s;
	int err;

	if (f && f->dropped)
		return 0;
	memset(&r, 0, sizeof(r));
	r.row_keys_only = 1;
	r.row_limit = 1;
	err = scan_create(db, t, &r, f, row, &s);
	if (err < 0)
		return err;
	err = tbl_scan_next(s, &got);
	tbl_scan_free(s);
	return err;
}

int tscan_row_has_cells(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f,
			struct slice row)
{
	return has_cells(db, t, f, &row);
}

int tscan_table_has_cells(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f)
{
	return has_cells(db, t, f, NULL);
}
