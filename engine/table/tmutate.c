/*
 * tmutate.c -- row mutations of the wide-column table layer: sets and the five
 * kinds of delete, applied to one row as ONE kv batch (so atomically, across
 * locality groups too, since the trees share the log), and the
 * read-modify-write operations built on them: increment, append and
 * check-and-mutate.  Also tmut_read_newest, the one-column read they share,
 * and tbl_write_rows, the bulk loader's many rows in one batch (its locking
 * is explained above it).
 *
 * Locking.  Every entry point takes the row's lock stripe, then the schema
 * read lock (the order table_int.h fixes), then validates, reads if it must,
 * builds the batch, writes it and releases both.  Holding the row lock from
 * the read to the write is what makes read-modify-write atomic against every
 * other mutation of the row (tbl_mutate_row takes the same stripe), and since
 * pthread mutexes are not recursive, the public functions share the locked
 * core mutate_locked() rather than calling each other.  The schema lock is held
 * across kv_write so that no family or table can be dropped between the
 * validation and the write: a drop takes the write lock, so it sees the cells
 * we wrote or none of them, and never leaves our cells behind in a dropped
 * table or tree.  The row stripe is hashed by table id, which only the schema
 * knows: lock_row() resolves the name, takes the stripe, resolves the name
 * again under the schema lock and starts over if the table was dropped and
 * created anew in between (ids are never reused, so equal ids mean the same
 * table).
 *
 * Key ranges (tkey.h; keys of a column sort NEWEST first, the timestamp
 * being stored inverted):
 *   DELETE_VERSION   the one key tkey_encode(..., ts)
 *   DELETE_VERSIONS  versions ts <= v < ts_end are the keys from
 *                    key(ts_end - 1) (the newest of them, so the smallest key;
 *                    for ts_end = 0, no end, the column prefix)
 *                    up to and including key(ts); the exclusive bound after
 *                    key(ts) is key(ts - 1) -- nothing lies between the two,
 *                    since a valid cell key is never a prefix of another -- or,
 *                    for ts = 0, the end of the column
 *   DELETE_CELL      [column prefix, its successor)
 *   DELETE_FAMILY    [family prefix, its successor) in the family's group tree
 *   DELETE_ROW       [row prefix, row end) in the tree of every locality group
 *                    of the table (the default tree included): one range
 *                    tombstone per group, all in the same batch
 * Every mutation of the batch gets its own sequence number in call order, so
 * a delete removes the sets before it in the same call and not those after.
 *
 * Timestamps.  TBL_TS_NOW sets of one call all get the same server
 * timestamp, taken (once, and only if some set asks for it) under the row
 * lock, so the order of server timestamps within a row is the order in which
 * the mutations commit.  Read-modify-write writes its result as a new version
 * at the server time too -- or, if the newest version carries a later
 * explicit timestamp, one microsecond after it, so that the result always
 * becomes the newest version (otherwise the write would be hidden behind the
 * future version and a read right after it would not see it).
 *
 * Choices table.h leaves open: *ts_out is 0 when no set used the server
 * time; flags other than TBL_SYNC are -EINVAL; the value limit counts the
 * payload (a string's or bytes' length, the fixed width of the other types),
 * not the stored type tag; a row mutation too large for one kv batch is
 * -EFBIG; check-and-mutate validates both of its lists whichever it applies;
 * the outputs (*ts_out, *result, *matched) are only written on success.
 */
#include "table_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Room for a row key, qualifier or text shown in an error message. */
#define SHOW_MAX 48
#define SHOW_BUF (SHOW_MAX * 4 + 8)

/*
 * Render bytes for a message: printable ASCII as is, anything else as \xNN,
 * cut after SHOW_MAX bytes with "...".  Returns out.
 */
static const char *show(char *out, struct slice s)
{
	size_t i, o = 0;

	for (i = 0; i < s.len && i < SHOW_MAX; i++) {
		unsigned char c = (unsigned char)s.data[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, SHOW_BUF - o, "\\x%02x", c);
	}
	if (i < s.len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
	return out;
}

/*
 * Return error r, whose message (kv_strerror) says what is wrong, with a
 * message that first says where: the table, row or column.
 */
__attribute__((format(printf, 2, 3)))
static int in_context(int r, const char *fmt, ...)
{
	char why[512], where[512];
	va_list ap;

	snprintf(why, sizeof(why), "%s", kv_strerror(r));
	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	return ERR_SET(r, "%s: %s", where, why);
}

/* What one call is mutating: the row of a resolved table, and scratch space. */
struct mut {
	struct tbl_db *db;
	struct tsch_table *t;
	struct slice row;
	char row_text[SHOW_BUF];      /* the row key as error messages show it */
	uint64_t now;                 /* the call's server timestamp; 0 until one is needed */
	int batch_full;               /* an add failed because the kv batch was full */
	struct buf key, end, val;
};

static void mut_init(struct mut *c, struct tbl_db *db, struct tsch_table *t, struct slice row)
{
	memset(c, 0, sizeof(*c));
	c->db = db;
	c->t = t;
	c->row = row;
	show(c->row_text, row);
}

static void mut_free(struct mut *c)
{
	buf_free(&c->key);
	buf_free(&c->end);
	buf_free(&c->val);
}

/*
 * Resolve table and take the row's lock stripe, then the schema read lock.
 * On success both are held (release with unlock_row) and *t is the table;
 * on error (-ENOENT for no such table) neither is.
 */
static int lock_row(struct tbl_db *db, const char *table, struct slice row,
		    struct tsch_table **t, pthread_mutex_t **mu)
{
	for (;;) {
		int r = tsch_lock_table(db, table, t);
		uint32_t id;

		if (r)
			return r;
		id = (*t)->id;
		tsch_unlock(db);
		*mu = tsch_row_lock(db, id, row.data, row.len);
		pthread_mutex_lock(*mu);
		r = tsch_lock_table(db, table, t);
		if (r) {
			pthread_mutex_unlock(*mu);
			return r;
		}
		if ((*t)->id == id)
			return 0;
		/* dropped and created again meanwhile: its rows hash elsewhere */
		tsch_unlock(db);
		pthread_mutex_unlock(*mu);
	}
}

static void unlock_row(struct tbl_db *db, pthread_mutex_t *mu)
{
	tsch_unlock(db);
	pthread_mutex_unlock(mu);
}

/* The live family named name, or -ENOENT (-EINVAL for NULL) with a message. */
static int find_family(struct mut *c, const char *name, struct tsch_family **f)
{
	if (!name)
		return ERR_SET(-EINVAL, "table %s, row \"%s\": a mutation names no family",
				c->t->name, c->row_text);
	*f = tsch_find_family(c->t, name);
	if (!*f)
		return ERR_SET(-ENOENT, "table %s, row \"%s\": no column family %s",
				c->t->name, c->row_text, name);
	return 0;
}

/* The payload bytes of a value (what the size limit applies to). */
static size_t payload_size(const struct cell_value *v)
{
	switch (v->type) {
	case CELL_STRING:
	case CELL_BYTES:
		return v->v.data.len;
	case CELL_BOOLEAN:
	case CELL_BYTE:
		return 1;
	case CELL_I32:
	case CELL_F32:
		return 4;
	default:
		return 8;
	}
}

/*
 * Encode v into c->val for a cell of family f, qualifier q: -EFBIG beyond
 * the database's maximum value size, -EINVAL for an invalid value (a bad
 * type, a boolean other than 0/1, a string that is not UTF-8).
 */
static int encode_value(struct mut *c, const struct tsch_family *f, struct slice q,
			const struct cell_value *v)
{
	char qt[SHOW_BUF];
	size_t size = payload_size(v);

	if (v->type <= CELL_INVALID || v->type > CELL_TYPE_MAX)
		return ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: invalid cell type %d",
				c->t->name, c->row_text, f->name, show(qt, q), (int)v->type);
	if (size > c->db->opt.max_value_size)
		return ERR_SET(-EFBIG, "table %s, row \"%s\", column %s:%s: a value of %zu bytes "
				"exceeds the maximum of %zu", c->t->name, c->row_text, f->name,
				show(qt, q), size, c->db->opt.max_value_size);
	buf_clear(&c->val);
	if (cell_encode(&c->val, v) < 0)
		return ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: not a valid %s "
				"value%s", c->t->name, c->row_text, f->name, show(qt, q),
				cell_type_name(v->type),
				v->type == CELL_STRING ? " (strings must be UTF-8)" : "");
	return 0;
}

/*
 * The result of adding to a kv batch: -E2BIG (the batch would no longer fit
 * one log record, so could not be atomic) becomes -EFBIG, the table API's
 * error for "too big"; anything else passes unchanged.
 */
static int batch_err(struct mut *c, int r)
{
	char why[256];

	if (r != -E2BIG)
		return r;
	c->batch_full = 1;
	snprintf(why, sizeof(why), "%s", kv_strerror(r));   /* ERR_SET overwrites it */
	return ERR_SET(-EFBIG, "table %s, row \"%s\": the row mutation is too large for one "
			"atomic write (%s)", c->t->name, c->row_text, why);
}

static int add_put(struct mut *c, struct kv_batch *b, struct tsch_family *f)
{
	return batch_err(c, kv_batch_put_tree(b, tsch_group_tree(f->group), c->key.data,
					      c->key.len, c->val.data, c->val.len));
}

static int add_delete(struct mut *c, struct kv_batch *b, struct kv_tree *tree)
{
	return batch_err(c, kv_batch_delete_tree(b, tree, c->key.data, c->key.len));
}

/* Delete [c->key, c->end) in tree. */
static int add_range(struct mut *c, struct kv_batch *b, struct kv_tree *tree)
{
	return batch_err(c, kv_batch_delete_range_tree(b, tree, c->key.data, c->key.len,
							c->end.data, c->end.len));
}

/* c->end = the successor of c->key, which a row, family or column prefix always has. */
static void end_after_prefix(struct mut *c)
{
	int has;

	buf_clear(&c->end);
	has = tkey_successor(&c->end, buf_slice(&c->key));
	assert(has);   /* the prefix holds the row's terminator 0x00 0x01, not all 0xFF */
	(void)has;
}

/*
 * Validate mutation m and, if b is not NULL, add it to b.  With b == NULL
 * only validates (and takes no server timestamp).  Nothing else is changed.
 */
static int add_mutation(struct mut *c, struct kv_batch *b, const struct tbl_mutation *m)
{
	struct slice q = slice_make(m->qualifier, m->qualifier_len);
	struct tsch_family *f = NULL;
	struct kv_tree *tree;
	char qt[SHOW_BUF];
	uint64_t ts;
	size_t i;
	int r;

	if (m->op == TBL_DELETE_ROW) {
		if (!b)
			return 0;
		tkey_row_prefix(&c->key, c->t->id, c->row);
		buf_clear(&c->end);
		tkey_row_end(&c->end, c->t->id, c->row);
		for (i = 0; i < c->t->ngroups; i++) {
			r = add_range(c, b, tsch_group_tree(c->t->groups[i]));
			if (r)
				return r;
		}
		return 0;
	}
	if (m->op < TBL_SET || m->op > TBL_DELETE_FAMILY)
		return ERR_SET(-EINVAL, "table %s, row \"%s\": unknown mutation %d",
				c->t->name, c->row_text, (int)m->op);
	r = find_family(c, m->family, &f);
	if (r)
		return r;
	tree = tsch_group_tree(f->group);
	if (m->op == TBL_DELETE_FAMILY) {
		if (!b)
			return 0;
		tkey_family_prefix(&c->key, c->t->id, c->row, f->id);
		end_after_prefix(c);
		return add_range(c, b, tree);
	}
	if (q.len && !q.data)
		return ERR_SET(-EINVAL, "table %s, row \"%s\", family %s: NULL qualifier of "
				"%zu bytes", c->t->name, c->row_text, f->name, q.len);
	r = tbl_check_qualifier(q.data, q.len);
	if (r)
		return in_context(r, "table %s, row \"%s\", family %s", c->t->name, c->row_text,
				  f->name);

	switch (m->op) {
	case TBL_SET:
		r = encode_value(c, f, q, &m->value);
		if (r || !b)
			return r;
		ts = m->ts;
		if (ts == TBL_TS_NOW) {
			if (!c->now && (r = tsch_now(c->db, &c->now)) < 0)
				return r;
			ts = c->now;
		}
		tkey_encode(&c->key, c->t->id, c->row, f->id, q, ts);
		return add_put(c, b, f);
	case TBL_DELETE_VERSION:
		if (m->ts == UINT64_MAX)
			return ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: deleting a "
					"version needs its timestamp, not TBL_TS_NOW",
					c->t->name, c->row_text, f->name, show(qt, q));
		if (!b)
			return 0;
		tkey_encode(&c->key, c->t->id, c->row, f->id, q, m->ts);
		return add_delete(c, b, tree);
	case TBL_DELETE_VERSIONS:
		if (m->ts_end != 0 && m->ts >= m->ts_end)
			return ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: empty time "
					"range [%llu, %llu)", c->t->name, c->row_text, f->name,
					show(qt, q), (unsigned long long)m->ts,
					(unsigned long long)m->ts_end);
		if (!b)
			return 0;
		/* ts_end 0: no end, as ts_max 0 on reads; the newest version is first */
		if (m->ts_end == 0)
			tkey_column_prefix(&c->key, c->t->id, c->row, f->id, q);
		else
			tkey_encode(&c->key, c->t->id, c->row, f->id, q, m->ts_end - 1);
		buf_clear(&c->end);
		if (m->ts > 0) {
			tkey_encode(&c->end, c->t->id, c->row, f->id, q, m->ts - 1);
		} else {
			struct buf col = BUF_INIT;
			int has;

			tkey_column_prefix(&col, c->t->id, c->row, f->id, q);
			has = tkey_successor(&c->end, buf_slice(&col));
			assert(has);
			(void)has;
			buf_free(&col);
		}
		return add_range(c, b, tree);
	default:   /* TBL_DELETE_CELL */
		if (!b)
			return 0;
		tkey_column_prefix(&c->key, c->t->id, c->row, f->id, q);
		end_after_prefix(c);
		return add_range(c, b, tree);
	}
}

/*
 * Validate (b NULL) or validate and add (b not NULL) m[0..n) in order,
 * stopping at the first error.  The key encoders append, so the key buffer
 * is cleared before each mutation.
 */
static int add_mutations(struct mut *c, struct kv_batch *b, const struct tbl_mutation *m,
			 size_t n)
{
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		buf_clear(&c->key);
		r = add_mutation(c, b, &m[i]);
		if (r)
			return r;
	}
	return 0;
}

static int check_flags(struct mut *c, unsigned flags)
{
	if (flags & ~TBL_SYNC)
		return ERR_SET(-EINVAL, "table %s, row \"%s\": unknown mutation flags %#x",
				c->t->name, c->row_text, flags & ~TBL_SYNC);
	return 0;
}

/*
 * Validate m[0..n) and write them as one batch.  REQUIRES the row lock and
 * the schema read lock held, and the row key checked.  *ts_out (may be NULL)
 * gets the server timestamp the TBL_TS_NOW sets used, 0 if there were none.
 */
static int mutate_locked(struct mut *c, const struct tbl_mutation *m, size_t n,
			 unsigned flags, uint64_t *ts_out)
{
	struct kv_batch *b = kv_batch_new();
	int r = add_mutations(c, b, m, n);

	if (r == 0 && kv_batch_count(b)) {
		r = kv_write(c->db->kv, b, (flags & TBL_SYNC) ? KV_SYNC : 0);
		if (r)
			r = in_context(r, "table %s, row \"%s\": writing the row mutation",
				       c->t->name, c->row_text);
	}
	if (r == 0 && ts_out)
		*ts_out = c->now;
	kv_batch_free(b);
	return r;
}

/* Everything an entry point does before its own work: row check, locks, flags. */
static int begin(struct mut *c, struct tbl_db *db, const char *table, struct slice row,
		 unsigned flags, pthread_mutex_t **mu)
{
	struct tsch_table *t;
	int r;

	if (row.len && !row.data)
		return ERR_SET(-EINVAL, "table %s: NULL row key of %zu bytes", table, row.len);
	r = tbl_check_row(row.data, row.len);
	if (r)
		return in_context(r, "table %s", table);
	r = lock_row(db, table, row, &t, mu);
	if (r)
		return r;
	mut_init(c, db, t, row);
	r = check_flags(c, flags);
	if (r) {
		unlock_row(db, *mu);
		mut_free(c);
	}
	return r;
}

static void end(struct mut *c, pthread_mutex_t *mu)
{
	unlock_row(c->db, mu);
	mut_free(c);
}

int tbl_mutate_row(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		   const struct tbl_mutation *m, size_t n, unsigned flags, uint64_t *ts_out)
{
	API_ENTRY();
	pthread_mutex_t *mu;
	struct mut c;
	int r;

	if (n && !m)
		return ERR_SET(-EINVAL, "table %s: NULL list of %zu mutations", table, n);
	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	r = mutate_locked(&c, m, n, flags, ts_out);
	end(&c, mu);
	return r;
}

/*
 * The stripes of rows[0..n) of table id, taken in index order: every caller
 * that holds several stripes took them in this one order, and a caller
 * that holds one takes no other, so no cycle can form.
 */
static void lock_stripes(struct tbl_db *db, uint32_t id, const struct tbl_row_mutations *rows,
			 size_t n, unsigned char held[TSCH_ROW_LOCKS])
{
	memset(held, 0, TSCH_ROW_LOCKS);
	for (size_t i = 0; i < n; i++)
		held[tsch_row_lock(db, id, rows[i].row, rows[i].row_len) - db->row_locks] = 1;
	for (size_t s = 0; s < TSCH_ROW_LOCKS; s++)
		if (held[s])
			pthread_mutex_lock(&db->row_locks[s]);
}

static void unlock_stripes(struct tbl_db *db, const unsigned char held[TSCH_ROW_LOCKS])
{
	for (size_t s = TSCH_ROW_LOCKS; s-- > 0;)
		if (held[s])
			pthread_mutex_unlock(&db->row_locks[s]);
}

/*
 * Many rows in one batch.  The arguments and row keys are checked before any
 * lock is taken; then, as lock_row does for one row, the table is resolved,
 * the stripes taken and the table resolved again under the schema lock
 * (starting over if it was dropped and created anew meanwhile).  One struct
 * mut serves every row, its buffers reused; only the row, its text for
 * messages and its server timestamp change from one row to the next.
 */
int tbl_write_rows(struct tbl_db *db, const char *table, const struct tbl_row_mutations *rows,
		   size_t n, unsigned flags, size_t *bad)
{
	API_ENTRY();
	unsigned char held[TSCH_ROW_LOCKS];
	struct kv_batch *b = NULL;
	struct tsch_table *t;
	struct mut c;
	size_t i;
	int r;

	if (n && !rows)
		return ERR_SET(-EINVAL, "table %s: NULL list of %zu rows", table, n);
	for (i = 0; i < n; i++) {
		if ((rows[i].row_len && !rows[i].row) || (rows[i].n && !rows[i].m))
			r = ERR_SET(-EINVAL, "table %s: row %zu of the list has a NULL key or "
				     "mutation list", table, i);
		else
			r = tbl_check_row(rows[i].row, rows[i].row_len);
		if (r) {
			if (bad)
				*bad = i;
			return r == -EINVAL ? r : in_context(r, "table %s", table);
		}
	}
	for (;;) {
		uint32_t id;

		r = tsch_lock_table(db, table, &t);
		if (r)
			return r;
		id = t->id;
		tsch_unlock(db);
		lock_stripes(db, id, rows, n, held);
		r = tsch_lock_table(db, table, &t);
		if (r == 0 && t->id == id)
			break;
		if (r == 0)
			tsch_unlock(db);
		unlock_stripes(db, held);
		if (r)
			return r;
	}
	mut_init(&c, db, t, slice_make("", 0));
	r = check_flags(&c, flags);
	if (r)
		goto out;
	b = kv_batch_new();
	for (i = 0; i < n; i++) {
		c.row = slice_make(rows[i].row, rows[i].row_len);
		show(c.row_text, c.row);
		c.now = 0;
		c.batch_full = 0;
		r = add_mutations(&c, b, rows[i].m, rows[i].n);
		if (r) {
			if (r == -EFBIG && c.batch_full && i > 0)
				r = ERR_SET(-E2BIG, "table %s: rows 0..%zu of the list do not fit one "
					     "atomic write together; write fewer at a time", t->name, i);
			if (bad)
				*bad = i;
			goto out;
		}
	}
	if (kv_batch_count(b)) {
		r = kv_write(db->kv, b, (flags & TBL_SYNC) ? KV_SYNC : 0);
		if (r)
			r = in_context(r, "table %s: writing %zu rows", t->name, n);
	}
out:
	kv_batch_free(b);
	mut_free(&c);
	tsch_unlock(db);
	unlock_stripes(db, held);
	return r;
}

int tbl_put(struct tbl_db *db, const char *table, const void *row, size_t row_len,
	    const char *family, const void *qualifier, size_t qualifier_len, uint64_t ts,
	    const struct cell_value *v, unsigned flags)
{
	API_ENTRY();
	struct tbl_mutation m;

	memset(&m, 0, sizeof(m));
	m.op = TBL_SET;
	m.family = family;
	m.qualifier = qualifier;
	m.qualifier_len = qualifier_len;
	m.ts = ts;
	m.value = *v;
	return tbl_mutate_row(db, table, row, row_len, &m, 1, flags, NULL);
}

int tbl_put_text(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		 const char *family, const void *qualifier, size_t qualifier_len, uint64_t ts,
		 enum cell_type type, const void *text, size_t text_len, unsigned flags)
{
	API_ENTRY();
	struct slice q = slice_make(qualifier, qualifier_len);
	struct tsch_family *f;
	struct tbl_mutation m;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF], vt[SHOW_BUF];
	struct mut c;
	int r;

	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	r = find_family(&c, family, &f);
	if (r)
		goto out;
	if (type == CELL_INVALID)
		type = f->s.type;
	if (text_len && !text) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: NULL text of %zu bytes",
			     c.t->name, c.row_text, f->name, show(qt, q), text_len);
		goto out;
	}
	memset(&m, 0, sizeof(m));
	m.op = TBL_SET;
	m.family = family;
	m.qualifier = qualifier;
	m.qualifier_len = qualifier_len;
	m.ts = ts;
	if (!cell_type_name(type)) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: invalid cell type %d",
			     c.t->name, c.row_text, f->name, show(qt, q), (int)type);
		goto out;
	}
	if (cell_parse(type, slice_make(text, text_len), &m.value) < 0) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: \"%s\" is not a "
			     "valid %s", c.t->name, c.row_text, f->name, show(qt, q),
			     show(vt, slice_make(text, text_len)), cell_type_name(type));
		goto out;
	}
	r = mutate_locked(&c, &m, 1, flags, NULL);
out:
	end(&c, mu);
	return r;
}

/*
 * tsch_gc_keeps is monotone along a column's versions: they come newest first,
 * so n grows and ts shrinks, and once a version is dropped (family dropped,
 * n >= max_versions, or older than the TTL) every later one is too.  So the
 * newest visible version, if any, is the first one stored, and one seek
 * decides.
 */
int tmut_read_newest(struct tbl_db *db, struct tsch_table *t, struct tsch_family *f,
		     struct slice row, struct slice qualifier, const struct kv_snapshot *snap,
		     uint64_t *ts, struct cell_value *value, struct buf *buf)
{
	struct buf lower = BUF_INIT, upper = BUF_INIT, scratch = BUF_INIT;
	struct kv_read_options ro;
	struct kv_iter *it;
	struct tkey k;
	const void *key, *val;
	size_t klen, vlen;
	int r, has;

	if (f->dropped)
		return 0;
	tkey_column_prefix(&lower, t->id, row, f->id, qualifier);
	has = tkey_successor(&upper, buf_slice(&lower));
	assert(has);
	(void)has;
	memset(&ro, 0, sizeof(ro));
	ro.tree = tsch_group_tree(f->group);
	ro.snapshot = snap;
	ro.lower = lower.data;
	ro.lower_len = lower.len;
	ro.upper = upper.data;
	ro.upper_len = upper.len;
	it = kv_iter_new(db->kv, &ro);
	kv_iter_seek(it, lower.data, lower.len);
	if (!kv_iter_valid(it)) {
		r = kv_iter_status(it);
		goto out;
	}
	key = kv_iter_key(it, &klen);
	r = tkey_decode(slice_make(key, klen), &k, &scratch);
	if (r)
		goto out;
	if (!tsch_gc_keeps(f, k.ts, 0, tsch_wall())) {
		r = 0;
		goto out;
	}
	val = kv_iter_value(it, &vlen);
	buf_set(buf, val, vlen);
	r = cell_decode(buf_slice(buf), value);
	if (r)
		goto out;
	*ts = k.ts;
	r = 1;
out:
	if (r < 0) {
		char rt[SHOW_BUF], qt[SHOW_BUF];

		r = in_context(r, "table %s, row \"%s\", column %s:%s: reading the newest version",
			       t->name, show(rt, row), f->name, show(qt, qualifier));
	}
	kv_iter_free(it);
	buf_free(&lower);
	buf_free(&upper);
	buf_free(&scratch);
	return r;
}

/*
 * The timestamp of a read-modify-write result: the server time, unless the
 * newest version (if present, at newest_ts) is that late or later, in which
 * case the one right after it.  -ERANGE if there is no valid timestamp
 * after it (it is at UINT64_MAX - 1).
 */
static int rmw_ts(struct mut *c, const struct tsch_family *f, struct slice q, int present,
		  uint64_t newest_ts, uint64_t *ts)
{
	char qt[SHOW_BUF];

	int r = tsch_now(c->db, ts);

	if (r < 0)
		return r;
	if (!present || newest_ts < *ts)
		return 0;
	if (newest_ts >= UINT64_MAX - 1)
		return ERR_SET(-ERANGE, "table %s, row \"%s\", column %s:%s: no timestamp after "
				"the newest version's %llu", c->t->name, c->row_text, f->name,
				show(qt, q), (unsigned long long)newest_ts);
	*ts = newest_ts + 1;
	return 0;
}

/* Write v as a new version of column f:q at ts.  REQUIRES the locks of mutate_locked. */
static int write_version(struct mut *c, const char *family, struct slice q, uint64_t ts,
			 const struct cell_value *v, unsigned flags)
{
	struct tbl_mutation m;

	memset(&m, 0, sizeof(m));
	m.op = TBL_SET;
	m.family = family;
	m.qualifier = q.data;
	m.qualifier_len = q.len;
	m.ts = ts;
	m.value = *v;
	return mutate_locked(c, &m, 1, flags, NULL);
}

/* Resolve the family and check the qualifier of a read-modify-write. */
static int rmw_column(struct mut *c, const char *family, struct slice q, struct tsch_family **f)
{
	int r = find_family(c, family, f);

	if (r)
		return r;
	if (q.len && !q.data)
		return ERR_SET(-EINVAL, "table %s, row \"%s\", family %s: NULL qualifier of "
				"%zu bytes", c->t->name, c->row_text, family, q.len);
	r = tbl_check_qualifier(q.data, q.len);
	if (r)
		return in_context(r, "table %s, row \"%s\", family %s", c->t->name, c->row_text,
				  family);
	return 0;
}

int tbl_increment(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		  const char *family, const void *qualifier, size_t qualifier_len, int64_t delta,
		  int64_t *result, unsigned flags)
{
	API_ENTRY();
	struct slice q = slice_make(qualifier, qualifier_len);
	struct buf old = BUF_INIT;
	struct cell_value v;
	struct tsch_family *f;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF];
	uint64_t ts = 0;
	struct mut c;
	int r, present;

	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	r = rmw_column(&c, family, q, &f);
	if (r)
		goto out;
	present = r = tmut_read_newest(db, c.t, f, c.row, q, NULL, &ts, &v, &old);
	if (r < 0)
		goto out;
	if (!present) {
		memset(&v, 0, sizeof(v));
		v.type = f->s.type;
	}
	if (v.type != CELL_I32 && v.type != CELL_I64) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: cannot increment %s %s "
			     "(only i32 and i64)", c.t->name, c.row_text, f->name, show(qt, q),
			     present ? "a cell of type" : "an absent cell of the family's type",
			     cell_type_name(v.type));
		goto out;
	}
	if (cell_increment(&v, delta) < 0) {
		r = ERR_SET(-ERANGE, "table %s, row \"%s\", column %s:%s: adding %lld "
			     "overflows %s", c.t->name, c.row_text, f->name, show(qt, q),
			     (long long)delta, cell_type_name(v.type));
		goto out;
	}
	r = rmw_ts(&c, f, q, present, ts, &ts);
	if (r)
		goto out;
	r = write_version(&c, family, q, ts, &v, flags);
	if (r == 0 && result)
		*result = v.type == CELL_I32 ? v.v.i32 : v.v.i64;
out:
	end(&c, mu);
	buf_free(&old);
	return r;
}

int tbl_append(struct tbl_db *db, const char *table, const void *row, size_t row_len,
	       const char *family, const void *qualifier, size_t qualifier_len, const void *data,
	       size_t len, unsigned flags)
{
	API_ENTRY();
	struct slice q = slice_make(qualifier, qualifier_len);
	struct buf old = BUF_INIT, joined = BUF_INIT;
	struct cell_value v, out;
	struct tsch_family *f;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF];
	uint64_t ts = 0;
	struct mut c;
	int r, present;

	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	r = rmw_column(&c, family, q, &f);
	if (r)
		goto out;
	if (len && !data) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: NULL data of %zu bytes",
			     c.t->name, c.row_text, f->name, show(qt, q), len);
		goto out;
	}
	present = r = tmut_read_newest(db, c.t, f, c.row, q, NULL, &ts, &v, &old);
	if (r < 0)
		goto out;
	if (!present) {
		memset(&v, 0, sizeof(v));
		v.type = f->s.type;
		v.v.data = slice_make("", 0);
	}
	if (v.type != CELL_STRING && v.type != CELL_BYTES) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: cannot append to %s %s "
			     "(only string and bytes)", c.t->name, c.row_text, f->name,
			     show(qt, q),
			     present ? "a cell of type" : "an absent cell of the family's type",
			     cell_type_name(v.type));
		goto out;
	}
	/* checked before joining, so an oversized append never allocates */
	if (len > db->opt.max_value_size || v.v.data.len > db->opt.max_value_size - len) {
		r = ERR_SET(-EFBIG, "table %s, row \"%s\", column %s:%s: appending %zu bytes to "
			     "%zu exceeds the maximum value size of %zu", c.t->name, c.row_text,
			     f->name, show(qt, q), len, v.v.data.len, db->opt.max_value_size);
		goto out;
	}
	if (cell_append(&v, slice_make(data, len), &out, &joined) < 0) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: the %zu bytes appended "
			     "to a string are not valid UTF-8", c.t->name, c.row_text, f->name,
			     show(qt, q), len);
		goto out;
	}
	r = rmw_ts(&c, f, q, present, ts, &ts);
	if (r)
		goto out;
	r = write_version(&c, family, q, ts, &out, flags);
out:
	end(&c, mu);
	buf_free(&old);
	buf_free(&joined);
	return r;
}

/*
 * Both lists are validated whichever is applied, so a mistake in either is
 * reported on every call, not only when the check goes its way.
 */
int tbl_check_and_mutate(struct tbl_db *db, const char *table, const void *row, size_t row_len,
			 const char *family, const void *qualifier, size_t qualifier_len,
			 const void *expected, size_t expected_len,
			 const struct tbl_mutation *m, size_t n,
			 const struct tbl_mutation *otherwise, size_t n_otherwise,
			 int *matched, unsigned flags)
{
	API_ENTRY();
	struct slice q = slice_make(qualifier, qualifier_len);
	struct buf old = BUF_INIT, text = BUF_INIT;
	struct cell_value v;
	struct tsch_family *f;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF];
	uint64_t ts;
	struct mut c;
	int r, present, match;

	if ((n && !m) || (n_otherwise && !otherwise) || (expected_len && !expected))
		return ERR_SET(-EINVAL, "table %s: check-and-mutate with a NULL list or value",
				table);
	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	r = rmw_column(&c, family, q, &f);
	if (r)
		goto out;
	r = add_mutations(&c, NULL, m, n);
	if (r == 0)
		r = add_mutations(&c, NULL, otherwise, n_otherwise);
	if (r)
		goto out;
	present = r = tmut_read_newest(db, c.t, f, c.row, q, NULL, &ts, &v, &old);
	if (r < 0)
		goto out;
	if (!present) {
		match = expected == NULL;
	} else if (!expected) {
		match = 0;
	} else {
		if (cell_render(&text, &v) < 0) {
			r = ERR_CORRUPT("table %s, row \"%s\", column %s:%s: the newest version "
				       "does not render", c.t->name, c.row_text, f->name,
				       show(qt, q));
			goto out;
		}
		if (v.type != CELL_BYTES && text.len && text.data[text.len - 1] == '\n')
			text.len--;
		match = slice_eq(buf_slice(&text), slice_make(expected, expected_len));
	}
	r = match ? mutate_locked(&c, m, n, flags, NULL)
		  : mutate_locked(&c, otherwise, n_otherwise, flags, NULL);
	if (r == 0 && matched)
		*matched = match;
out:
	end(&c, mu);
	buf_free(&old);
	buf_free(&text);
	return r;
}

/* ------------------------------------------------------------ rename and convert */

/*
 * Versions of one column, newest first, read under the row lock (so nothing
 * changes them before the batch that replaces them is written): the
 * timestamps of the stored ones (up to STORED_MAX of them; more sets
 * `many`), and the stored values (tag byte and payload, copied) of the
 * first n, the visible ones.
 */
#define STORED_MAX 16

struct colvers {
	uint64_t *ts;
	size_t *off, *len;            /* of each visible value in vals */
	struct buf vals;
	size_t n, nstored, cap;
	int many;                     /* more than STORED_MAX stored versions */
};

static void colvers_free(struct colvers *v)
{
	free(v->ts);
	free(v->off);
	free(v->len);
	buf_free(&v->vals);
	memset(v, 0, sizeof(*v));
}

static struct slice colvers_value(const struct colvers *v, size_t i)
{
	return slice_make(v->vals.data + v->off[i], v->len[i]);
}

/* Read the versions of column f:q of the row into *v (emptied first). */
static int read_versions(struct mut *c, struct tsch_family *f, struct slice q,
			 struct colvers *v)
{
	struct buf lower = BUF_INIT, upper = BUF_INIT, scratch = BUF_INIT;
	struct kv_read_options ro;
	struct kv_iter *it;
	uint64_t now = tsch_wall();
	int r = 0, has, hidden = 0;

	memset(v, 0, sizeof(*v));
	tkey_column_prefix(&lower, c->t->id, c->row, f->id, q);
	has = tkey_successor(&upper, buf_slice(&lower));
	assert(has);
	(void)has;
	memset(&ro, 0, sizeof(ro));
	ro.tree = tsch_group_tree(f->group);
	ro.lower = lower.data;
	ro.lower_len = lower.len;
	ro.upper = upper.data;
	ro.upper_len = upper.len;
	it = kv_iter_new(c->db->kv, &ro);
	for (kv_iter_seek(it, lower.data, lower.len); kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const void *key = kv_iter_key(it, &klen), *val;
		struct tkey k;

		r = tkey_decode(slice_make(key, klen), &k, &scratch);
		if (r)
			break;
		/* once one is not visible, no older one is */
		if (!hidden && !tsch_gc_keeps(f, k.ts, (uint32_t)v->n, now))
			hidden = 1;
		if (hidden && v->nstored == STORED_MAX) {
			v->many = 1;   /* the rest are only ever deleted by range */
			break;
		}
		if (v->nstored == v->cap) {
			v->cap = v->cap ? 2 * v->cap : 8;
			v->ts = xrealloc(v->ts, v->cap * sizeof(*v->ts));
			v->off = xrealloc(v->off, v->cap * sizeof(*v->off));
			v->len = xrealloc(v->len, v->cap * sizeof(*v->len));
		}
		v->ts[v->nstored++] = k.ts;
		if (hidden)
			continue;
		val = kv_iter_value(it, &vlen);
		v->off[v->n] = v->vals.len;
		v->len[v->n] = vlen;
		buf_append(&v->vals, val, vlen);
		v->n++;
		if (v->nstored > STORED_MAX)
			v->many = 1;
	}
	if (r == 0)
		r = kv_iter_status(it);
	if (r < 0) {
		char qt[SHOW_BUF];

		r = in_context(r, "table %s, row \"%s\", column %s:%s: reading its versions",
			       c->t->name, c->row_text, f->name, show(qt, q));
		colvers_free(v);
	}
	kv_iter_free(it);
	buf_free(&lower);
	buf_free(&upper);
	buf_free(&scratch);
	return r;
}

/*
 * Add to b the deletion of every stored version of column f:q, whose
 * versions v holds: a point delete per version when there are few (a range
 * tombstone costs every later read of the tree something until compaction
 * removes it), else one range delete of the column.  Nothing if the column
 * stores nothing.
 */
static int add_delete_column(struct mut *c, struct kv_batch *b, struct tsch_family *f,
			     struct slice q, const struct colvers *v)
{
	int r = 0;

	if (v->many) {
		buf_clear(&c->key);
		tkey_column_prefix(&c->key, c->t->id, c->row, f->id, q);
		end_after_prefix(c);
		return add_range(c, b, tsch_group_tree(f->group));
	}
	for (size_t i = 0; i < v->nstored && r == 0; i++) {
		buf_clear(&c->key);
		tkey_encode(&c->key, c->t->id, c->row, f->id, q, v->ts[i]);
		r = add_delete(c, b, tsch_group_tree(f->group));
	}
	return r;
}

/* Add puts of the visible versions of v, with their timestamps and stored values, as f:q. */
static int add_versions(struct mut *c, struct kv_batch *b, struct tsch_family *f,
			struct slice q, const struct colvers *v)
{
	for (size_t i = 0; i < v->n; i++) {
		struct slice val = colvers_value(v, i);
		int r;

		buf_clear(&c->key);
		tkey_encode(&c->key, c->t->id, c->row, f->id, q, v->ts[i]);
		r = batch_err(c, kv_batch_put_tree(b, tsch_group_tree(f->group), c->key.data,
						   c->key.len, val.data, val.len));
		if (r)
			return r;
	}
	return 0;
}

/*
 * One batch, under the row lock: the deletion of every stored version of
 * the target column and of the source column (hidden ones too, so that GC
 * never shows them again), then the source's visible versions put under
 * the target's key and, for an exchange, the target's under the source's.
 * Every mutation of a batch has its own sequence number in this order, so
 * the puts are newer than the deletes before them, and the deletes cover
 * only their own column (source and target differ here).  Stored values
 * are copied as they are: their type tags travel with them.
 */
int tbl_rename_cell(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		    const char *from_family, const void *from_q, size_t from_len,
		    const char *to_family, const void *to_q, size_t to_len,
		    unsigned rename_flags, unsigned flags)
{
	struct slice fq = slice_make(from_q, from_len), tq = slice_make(to_q, to_len);
	struct colvers src = { 0 }, dst = { 0 };
	struct tsch_family *ff, *tf;
	struct kv_batch *b = NULL;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF], qt2[SHOW_BUF];
	int exchange = (rename_flags & TBL_RENAME_EXCHANGE) != 0;
	struct mut c;
	int r;

	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	if ((rename_flags & ~(TBL_RENAME_NOREPLACE | TBL_RENAME_EXCHANGE)) ||
	    rename_flags == (TBL_RENAME_NOREPLACE | TBL_RENAME_EXCHANGE)) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\": rename flags %#x: unknown, or both "
			     "no-replace and exchange", c.t->name, c.row_text, rename_flags);
		goto out;
	}
	r = rmw_column(&c, from_family, fq, &ff);
	if (r == 0)
		r = rmw_column(&c, to_family, tq, &tf);
	if (r)
		goto out;
	r = read_versions(&c, ff, fq, &src);
	if (r)
		goto out;
	if (src.n == 0) {
		r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no such cell to rename",
			     c.t->name, c.row_text, ff->name, show(qt, fq));
		goto out;
	}
	if (ff == tf && slice_eq(fq, tq)) {
		/* rename(2) of a file onto itself: nothing to do (it exists, so no-replace fails) */
		if (rename_flags & TBL_RENAME_NOREPLACE)
			r = ERR_SET(-EEXIST, "table %s, row \"%s\", column %s:%s: renaming a cell "
				     "onto itself without replacing", c.t->name, c.row_text,
				     ff->name, show(qt, fq));
		goto out;
	}
	r = read_versions(&c, tf, tq, &dst);
	if (r)
		goto out;
	if ((rename_flags & TBL_RENAME_NOREPLACE) && dst.n) {
		r = ERR_SET(-EEXIST, "table %s, row \"%s\", column %s:%s: exists (renaming %s:%s "
			     "without replacing)", c.t->name, c.row_text, tf->name, show(qt, tq),
			     ff->name, show(qt2, fq));
		goto out;
	}
	if (exchange && !dst.n) {
		r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no such cell to "
			     "exchange with %s:%s", c.t->name, c.row_text, tf->name, show(qt, tq),
			     ff->name, show(qt2, fq));
		goto out;
	}
	b = kv_batch_new();
	r = add_delete_column(&c, b, tf, tq, &dst);
	if (r == 0)
		r = add_delete_column(&c, b, ff, fq, &src);
	if (r == 0)
		r = add_versions(&c, b, tf, tq, &src);
	if (r == 0 && exchange)
		r = add_versions(&c, b, ff, fq, &dst);
	if (r == 0) {
		r = kv_write(db->kv, b, (flags & TBL_SYNC) ? KV_SYNC : 0);
		if (r)
			r = in_context(r, "table %s, row \"%s\": renaming %s:%s to %s:%s", c.t->name,
				       c.row_text, ff->name, show(qt, fq), tf->name, show(qt2, tq));
	}
out:
	kv_batch_free(b);
	colvers_free(&src);
	colvers_free(&dst);
	end(&c, mu);
	return r;
}

/*
 * One version moved (tbl_rename_version): one batch, under the row lock,
 * read and written as tbl_rename_cell's.  The deletes come first (the
 * target's column or nothing, then the source's column or version), the put
 * last, so that it is the newest mutation of its key even when source and
 * target are one column.
 */
int tbl_rename_version(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		       const char *from_family, const void *from_q, size_t from_len,
		       uint64_t from_ts, const char *to_family, const void *to_q, size_t to_len,
		       uint64_t to_ts, unsigned rename_flags, unsigned flags)
{
	struct slice fq = slice_make(from_q, from_len), tq = slice_make(to_q, to_len);
	struct colvers src = { 0 }, dst = { 0 };
	struct tsch_family *ff, *tf;
	struct kv_batch *b = NULL;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF], qt2[SHOW_BUF];
	size_t si = 0, di;
	struct mut c;
	int r;

	if (from_ts == TBL_TS_NEWEST)
		from_ts = 0;
	if (!from_ts && !to_ts)
		return tbl_rename_cell(db, table, row, row_len, from_family, from_q, from_len,
				       to_family, to_q, to_len, rename_flags, flags);
	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	if (rename_flags & ~TBL_RENAME_NOREPLACE) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\": rename flags %#x: unknown, or an "
			     "exchange of versions", c.t->name, c.row_text, rename_flags);
		goto out;
	}
	if (to_ts == TBL_TS_NOW) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\": renaming to a version needs its "
			     "timestamp", c.t->name, c.row_text);
		goto out;
	}
	r = rmw_column(&c, from_family, fq, &ff);
	if (r == 0)
		r = rmw_column(&c, to_family, tq, &tf);
	if (r == 0)
		r = read_versions(&c, ff, fq, &src);
	if (r == 0)
		r = read_versions(&c, tf, tq, &dst);
	if (r)
		goto out;
	while (from_ts && si < src.n && src.ts[si] != from_ts)
		si++;
	if (si == src.n) {
		r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no such %s to rename",
			     c.t->name, c.row_text, ff->name, show(qt, fq),
			     from_ts ? "visible version" : "cell");
		goto out;
	}
	for (di = 0; to_ts && di < dst.n && dst.ts[di] != to_ts; di++)
		;
	if ((rename_flags & TBL_RENAME_NOREPLACE) && (to_ts ? di < dst.n : dst.n > 0)) {
		r = ERR_SET(-EEXIST, "table %s, row \"%s\", column %s:%s: exists (renaming %s:%s "
			     "without replacing)", c.t->name, c.row_text, tf->name, show(qt, tq),
			     ff->name, show(qt2, fq));
		goto out;
	}
	b = kv_batch_new();
	if (!to_ts)
		r = add_delete_column(&c, b, tf, tq, &dst);
	if (r == 0 && !from_ts) {
		r = add_delete_column(&c, b, ff, fq, &src);
	} else if (r == 0) {
		buf_clear(&c.key);
		tkey_encode(&c.key, c.t->id, c.row, ff->id, fq, from_ts);
		r = add_delete(&c, b, tsch_group_tree(ff->group));
	}
	if (r == 0) {
		struct slice val = colvers_value(&src, si);

		buf_clear(&c.key);
		tkey_encode(&c.key, c.t->id, c.row, tf->id, tq, to_ts ? to_ts : src.ts[si]);
		r = batch_err(&c, kv_batch_put_tree(b, tsch_group_tree(tf->group), c.key.data,
						    c.key.len, val.data, val.len));
	}
	if (r == 0) {
		r = kv_write(db->kv, b, (flags & TBL_SYNC) ? KV_SYNC : 0);
		if (r)
			r = in_context(r, "table %s, row \"%s\": renaming a version of %s:%s to "
				       "%s:%s", c.t->name, c.row_text, ff->name, show(qt, fq),
				       tf->name, show(qt2, tq));
	}
out:
	kv_batch_free(b);
	colvers_free(&src);
	colvers_free(&dst);
	end(&c, mu);
	return r;
}

/*
 * Each version converted is written again under its own key (same
 * timestamp), which replaces it: one batch, under the row lock.  All are
 * converted before anything is added, so a refusal leaves the cell as it
 * was.  A version already of type `to` is not rewritten.
 */
static int convert_column(struct tbl_db *db, const char *table, const void *row,
			  size_t row_len, const char *family, const void *qualifier,
			  size_t qualifier_len, uint64_t ts, enum cell_type to,
			  unsigned convert_flags, unsigned flags)
{
	struct slice q = slice_make(qualifier, qualifier_len);
	struct buf scratch = BUF_INIT, enc = BUF_INIT, text = BUF_INIT;
	struct colvers v = { 0 };
	struct kv_batch *b = NULL;
	struct tsch_family *f;
	pthread_mutex_t *mu;
	char qt[SHOW_BUF], vt[SHOW_BUF];
	size_t n, first = 0, *eoff = NULL, *elen = NULL;
	struct mut c;
	int r;

	r = begin(&c, db, table, slice_make(row, row_len), flags, &mu);
	if (r)
		return r;
	if (convert_flags & ~TBL_CONVERT_ALL_VERSIONS) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\": unknown conversion flags %#x",
			     c.t->name, c.row_text, convert_flags & ~TBL_CONVERT_ALL_VERSIONS);
		goto out;
	}
	r = rmw_column(&c, family, q, &f);
	if (r)
		goto out;
	if (!cell_type_name(to)) {
		r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: invalid cell type %d",
			     c.t->name, c.row_text, f->name, show(qt, q), (int)to);
		goto out;
	}
	r = read_versions(&c, f, q, &v);
	if (r)
		goto out;
	if (v.n == 0) {
		r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no such cell to convert",
			     c.t->name, c.row_text, f->name, show(qt, q));
		goto out;
	}
	n = (convert_flags & TBL_CONVERT_ALL_VERSIONS) ? v.n : 1;
	if (ts) {   /* one version, by its timestamp */
		while (first < v.n && v.ts[first] != ts)
			first++;
		if (first == v.n) {
			r = ERR_SET(-ENOENT, "table %s, row \"%s\", column %s:%s: no visible "
				     "version %llu to convert", c.t->name, c.row_text, f->name,
				     show(qt, q), (unsigned long long)ts);
			goto out;
		}
		n = first + 1;
	}
	eoff = xcalloc(n, sizeof(*eoff));
	elen = xcalloc(n, sizeof(*elen));
	/* first convert every version: nothing is added unless all convert */
	for (size_t i = first; i < n; i++) {
		struct cell_value in, out;

		if (cell_decode(colvers_value(&v, i), &in) < 0) {
			r = in_context(-EUCLEAN, "table %s, row \"%s\", column %s:%s, version %llu",
				       c.t->name, c.row_text, f->name, show(qt, q),
				       (unsigned long long)v.ts[i]);
			goto out;
		}
		if (in.type == to) {
			elen[i] = SIZE_MAX;   /* unchanged: not rewritten */
			continue;
		}
		if (cell_convert(&in, to, &out, &scratch) < 0) {
			buf_clear(&text);
			cell_render(&text, &in);
			if (in.type != CELL_BYTES && text.len)
				text.len--;
			r = ERR_SET(-EINVAL, "table %s, row \"%s\", column %s:%s: version %llu, %s "
				     "\"%s\", does not convert to %s; nothing changed", c.t->name,
				     c.row_text, f->name, show(qt, q), (unsigned long long)v.ts[i],
				     cell_type_name(in.type), show(vt, buf_slice(&text)),
				     cell_type_name(to));
			goto out;
		}
		r = encode_value(&c, f, q, &out);
		if (r)
			goto out;
		eoff[i] = enc.len;
		elen[i] = c.val.len;
		buf_append(&enc, c.val.data, c.val.len);
	}
	b = kv_batch_new();
	for (size_t i = first; i < n && r == 0; i++) {
		if (elen[i] == SIZE_MAX)
			continue;
		buf_clear(&c.key);
		tkey_encode(&c.key, c.t->id, c.row, f->id, q, v.ts[i]);
		r = batch_err(&c, kv_batch_put_tree(b, tsch_group_tree(f->group), c.key.data,
						    c.key.len, enc.data + eoff[i], elen[i]));
	}
	if (r == 0 && kv_batch_count(b)) {
		r = kv_write(db->kv, b, (flags & TBL_SYNC) ? KV_SYNC : 0);
		if (r)
			r = in_context(r, "table %s, row \"%s\", column %s:%s: writing the converted "
				       "value", c.t->name, c.row_text, f->name, show(qt, q));
	}
out:
	kv_batch_free(b);
	colvers_free(&v);
	free(eoff);
	free(elen);
	buf_free(&scratch);
	buf_free(&enc);
	buf_free(&text);
	end(&c, mu);
	return r;
}

int tbl_convert_cell(struct tbl_db *db, const char *table, const void *row, size_t row_len,
		     const char *family, const void *qualifier, size_t qualifier_len,
		     enum cell_type to, unsigned convert_flags, unsigned flags)
{
	return convert_column(db, table, row, row_len, family, qualifier, qualifier_len, 0, to,
			      convert_flags, flags);
}

int tbl_convert_version(struct tbl_db *db, const char *table, const void *row, size_t row_len,
			const char *family, const void *qualifier, size_t qualifier_len,
			uint64_t ts, enum cell_type to, unsigned flags)
{
	if (ts == 0 || ts == TBL_TS_NEWEST)
		return convert_column(db, table, row, row_len, family, qualifier, qualifier_len,
				      0, to, 0, flags);
	return convert_column(db, table, row, row_len, family, qualifier, qualifier_len, ts, to,
			      0, flags);
}
