/*
 * table.c -- the table layer's schema and housekeeping: opening and closing
 * the database, tables, column families and locality groups with their
 * durable records, name rules, server timestamps, row-lock stripes, and the
 * garbage-collection compaction filter that removes what reads already hide.
 * Row mutations are in tmutate.c, reads and scans in tscan.c; what the three
 * share is in table_int.h.
 *
 * Schema records.  They live in the kv default tree under table id 0, so
 * every key begins with four zero bytes; then a one-byte kind.  Integers are
 * little-endian (util.h) except where tkey.h says otherwise.
 *
 *   'N'                          -> fixed32 next table id, fixed32 next group id
 *   'M'                          -> fixed64 timestamp mark: every server
 *                                   timestamp (TBL_TS_NOW) given out is below it
 *   'T' table-name               -> fixed32 table id
 *   'G' fixed32 table id, group  -> fixed32 group id
 *   'F' fixed32 table id, family -> the family record:
 *         fixed16  family id
 *         byte     default cell type (enum cell_type, 1..8)
 *         varint32 max_versions (0: unlimited)
 *         varint64 ttl in seconds (0: forever)
 *         byte     compression level (0..22, 0: none)
 *         byte     dropped (0 or 1)
 *         varint32 length and bytes of the locality group's name
 *       A dropped family keeps its record (its id stays taken, and the GC
 *       filter needs it to know that its cells are garbage), but under the
 *       key 'F' fixed32 table id, family, 0x00, fixed16 family id: a family
 *       name never holds a 0x00 byte, so the name is free to be declared
 *       again and every dropped generation of it keeps a record of its own.
 *   Nothing may follow the last field of a value; anything else that does
 *   not parse is -EUCLEAN.
 *
 * Ids.  Table ids start at 1 (0 is the schema's) and come from the 'N'
 * counter; 0xFFFFFFFF is never handed out, so a table's key range always has
 * an upper bound.  Group ids come from the same record and are global, so
 * the tree "lg-<id>" of a dropped table's group is never confused with a new
 * one.  Family ids are per table: the next one is one more than the largest
 * recorded (records of dropped families stay, so ids are never reused);
 * 0xFFFF is never handed out.  The "default" group of every table is group 0,
 * the kv default tree, and has no 'G' record; its compression is the
 * database's (kv_options.compression_level).  Another group's tree is
 * compressed at the highest level among the group's live families (0 if it
 * has none).  A group stays until its table is dropped, even with no family.
 *
 * Order of a schema change.  The schema write lock is held throughout (but
 * for dropping a dropped table's trees, which nothing can reach any more), so
 * nothing reads a half-made change.  A new group's tree is created first,
 * then one KV_SYNC batch records the change, then the in-memory structures
 * follow.  A crash between the two leaves an unreferenced "lg-<id>" tree;
 * dropping a table drops its trees after its batch, and a crash there does
 * the same.  tbl_open drops such orphans.
 */
#include "table_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define SCHEMA_N 'N'
#define SCHEMA_T 'T'
#define SCHEMA_G 'G'
#define SCHEMA_F 'F'
#define SCHEMA_M 'M'


/*
 * The compaction filter's context (db->gc.arg).  generation changes, under
 * the schema write lock, with every schema change, so a filter may keep a
 * table pointer between two read-locked calls while it stays the same.
 */
struct gc_ctx {
	struct tbl_db *db;
	uint64_t generation;
};

static void schema_changed(struct tbl_db *db)
{
	/* atomic: tbl_schema_generation reads it without the lock */
	__atomic_add_fetch(&((struct gc_ctx *)db->gc.arg)->generation, 1, __ATOMIC_RELEASE);
}

/*
 * Return error r (from a kv call, whose message kv_strerror has) with a
 * message saying what was being done, then why.
 */
__attribute__((format(printf, 2, 3)))
static int error_context(int r, const char *fmt, ...)
{
	char cause[512], what[512];
	va_list ap;

	snprintf(cause, sizeof(cause), "%s", kv_strerror(r));
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ERR_SET(r, "%s: %s", what, cause);
}

/* ------------------------------------------------------------ names */

static int table_char_ok(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '#' || c == '$';
}

static int family_char_ok(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

/* [A-Za-z0-9-_.#$]{1,511}, not "." or "..". */
static int table_name_ok(const char *s)
{
	size_t n = strnlen(s, TBL_MAX_NAME + 1);

	if (n == 0 || n > TBL_MAX_NAME || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!table_char_ok(s[i]))
			return 0;
	return 1;
}

/*
 * [-_.a-zA-Z0-9]{1,64}, not "." or "..": family and locality group names.
 * "." and ".." are refused as for tables, since a family is a directory
 * of the filesystem (.families/<family>, <row>/<family>).
 */
static int family_name_ok(const char *s)
{
	size_t n = strnlen(s, TBL_MAX_FAMILY_NAME + 1);

	if (n == 0 || n > TBL_MAX_FAMILY_NAME || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!family_char_ok(s[i]))
			return 0;
	return 1;
}

int tbl_check_table_name(const char *name)
{
	API_ENTRY();
	if (!name)
		return ERR_SET(-EINVAL, "no table name");
	if (strnlen(name, TBL_MAX_NAME + 1) > TBL_MAX_NAME)
		return ERR_SET(-ENAMETOOLONG, "table name \"%.60s...\": longer than the limit "
				"of %u characters", name, TBL_MAX_NAME);
	if (!table_name_ok(name))
		return ERR_SET(-EINVAL, "table name \"%.600s\": a table name is 1 to %u of "
				"A-Z a-z 0-9 - _ . # $, and not \".\" or \"..\"", name,
				TBL_MAX_NAME);
	return 0;
}

int tbl_check_family_name(const char *name)
{
	API_ENTRY();
	if (!name)
		return ERR_SET(-EINVAL, "no family name");
	if (strnlen(name, TBL_MAX_FAMILY_NAME + 1) > TBL_MAX_FAMILY_NAME)
		return ERR_SET(-ENAMETOOLONG, "family name \"%.60s...\": longer than the limit "
				"of %u characters", name, TBL_MAX_FAMILY_NAME);
	if (!family_name_ok(name))
		return ERR_SET(-EINVAL, "family name \"%.100s\": a family name is 1 to %u of "
				"A-Z a-z 0-9 - _ ., and not \".\" or \"..\"", name,
				TBL_MAX_FAMILY_NAME);
	return 0;
}

static int check_table_name(const char *table)
{
	return tbl_check_table_name(table);
}

static int check_family_name(const char *table, const char *family)
{
	int r = tbl_check_family_name(family);

	if (r < 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", kv_strerror(r));
		return ERR_SET(r, "table %s: %s", table, why);
	}
	return 0;
}

static int check_settings(const char *table, const char *family,
			  const struct tbl_family_settings *s)
{
	const char *g = s->locality_group;

	if (s->type < CELL_STRING || s->type > CELL_TYPE_MAX)
		return ERR_SET(-EINVAL, "table %s, family %s: cell type %d is not one of 1..%d",
				table, family, (int)s->type, CELL_TYPE_MAX);
	if (s->compression < 0 || s->compression > 22)
		return ERR_SET(-EINVAL, "table %s, family %s: compression %d is not 0 (none) "
				"or a zstd level 1..22", table, family, s->compression);
	if (s->ttl > TBL_MAX_TTL)
		return ERR_SET(-EINVAL, "table %s, family %s: ttl %llu s is above the limit of "
				"%llu s", table, family, (unsigned long long)s->ttl,
				(unsigned long long)TBL_MAX_TTL);
	if (!family_name_ok(g))
		return ERR_SET(-EINVAL, "table %s, family %s: locality group name \"%.*s\": a "
				"group name is 1 to %u of A-Z a-z 0-9 - _ ., not . or ..", table,
				family, (int)TBL_MAX_FAMILY_NAME, g, TBL_MAX_FAMILY_NAME);
	return 0;
}

int tbl_check_row(const void *row, size_t len)
{
	(void)row;
	if (len > TBL_MAX_ROW_KEY)
		return ERR_SET(-ENAMETOOLONG, "row key of %zu bytes is longer than the limit of "
				"%u bytes", len, TBL_MAX_ROW_KEY);
	return 0;
}

int tbl_check_row_key(const void *row, size_t len)
{
	API_ENTRY();
	if (len && !row)
		return ERR_SET(-EINVAL, "a NULL row key of %zu bytes", len);
	return tbl_check_row(row, len);
}

int tbl_check_qualifier(const void *q, size_t len)
{
	API_ENTRY();
	if (len && !q)
		return ERR_SET(-EINVAL, "a NULL qualifier of %zu bytes", len);
	if (len > TBL_MAX_QUALIFIER)
		return ERR_SET(-ENAMETOOLONG, "qualifier of %zu bytes is longer than the limit of "
				"%u bytes", len, TBL_MAX_QUALIFIER);
	return 0;
}

/* ------------------------------------------------------------ options */

const char *tbl_strerror(int err)
{
	return kv_strerror(err);
}

void tbl_options_init(struct tbl_options *o)
{
	memset(o, 0, sizeof(*o));
	kv_options_init(&o->kv);
	o->max_value_size = TBL_DEFAULT_MAX_VALUE;
}

void tbl_family_settings_init(struct tbl_family_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->type = CELL_STRING;
	s->max_versions = 0;
	s->ttl = 0;
	snprintf(s->locality_group, sizeof(s->locality_group), "%s", TSCH_DEFAULT_GROUP);
	s->compression = 1;
}

/* ------------------------------------------------------------ in-memory schema */

static struct tsch_group *group_new(uint32_t id, const char *name, struct kv_tree *tree)
{
	struct tsch_group *g = xcalloc(1, sizeof(*g));

	g->id = id;
	g->name = xstrdup(name);
	g->tree = tree;
	return g;
}

static void group_free(struct tsch_group *g)
{
	if (!g)
		return;
	free(g->name);
	free(g);
}

static struct tsch_table *table_new(uint32_t id, const char *name)
{
	struct tsch_table *t = xcalloc(1, sizeof(*t));

	t->id = id;
	t->name = xstrdup(name);
	t->groups = xmalloc(sizeof(*t->groups));
	t->groups[0] = group_new(0, TSCH_DEFAULT_GROUP, NULL);
	t->ngroups = 1;
	return t;
}

static void table_free(struct tsch_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nfamilies; i++) {
		free(t->families[i]->name);
		free(t->families[i]);
	}
	free(t->families);
	for (size_t i = 0; i < t->ngroups; i++)
		group_free(t->groups[i]);
	free(t->groups);
	free(t->name);
	free(t);
}

static void schema_free(struct tbl_db *db)
{
	for (size_t i = 0; i < db->ntables; i++)
		table_free(db->tables[i]);
	free(db->tables);
	db->tables = NULL;
	db->ntables = 0;
}

/* The index of table name in db->tables, or where it would go (*found = 0). */
static size_t table_index(struct tbl_db *db, const char *name, int *found)
{
	size_t lo = 0, hi = db->ntables;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(db->tables[mid]->name, name);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void table_insert(struct tbl_db *db, struct tsch_table *t)
{
	int found;
	size_t i = table_index(db, t->name, &found);

	assert(!found);
	db->tables = xrealloc(db->tables, (db->ntables + 1) * sizeof(*db->tables));
	memmove(db->tables + i + 1, db->tables + i, (db->ntables - i) * sizeof(*db->tables));
	db->tables[i] = t;
	db->ntables++;
}

static void table_remove(struct tbl_db *db, struct tsch_table *t)
{
	int found;
	size_t i = table_index(db, t->name, &found);

	assert(found && db->tables[i] == t);
	memmove(db->tables + i, db->tables + i + 1, (db->ntables - i - 1) * sizeof(*db->tables));
	db->ntables--;
}

struct tsch_table *tsch_find_table(struct tbl_db *db, const char *name)
{
	int found;
	size_t i = table_index(db, name, &found);

	return found ? db->tables[i] : NULL;
}

struct tsch_table *tsch_table_by_id(struct tbl_db *db, uint32_t id)
{
	for (size_t i = 0; i < db->ntables; i++)
		if (db->tables[i]->id == id)
			return db->tables[i];
	return NULL;
}

struct tsch_family *tsch_find_family(struct tsch_table *t, const char *name)
{
	for (size_t i = 0; i < t->nfamilies; i++)
		if (!t->families[i]->dropped && !strcmp(t->families[i]->name, name))
			return t->families[i];
	return NULL;
}

/* t->families is kept in id order (ids are handed out increasing). */
struct tsch_family *tsch_family_by_id(struct tsch_table *t, uint16_t id)
{
	size_t lo = 0, hi = t->nfamilies;

	if (id < t->nfamilies && t->families[id]->id == id)
		return t->families[id];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->families[mid]->id == id)
			return t->families[mid];
		if (t->families[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct tsch_group *group_find(struct tsch_table *t, const char *name)
{
	for (size_t i = 0; i < t->ngroups; i++)
		if (!strcmp(t->groups[i]->name, name))
			return t->groups[i];
	return NULL;
}

static void group_attach(struct tsch_table *t, struct tsch_group *g)
{
	t->groups = xrealloc(t->groups, (t->ngroups + 1) * sizeof(*t->groups));
	t->groups[t->ngroups++] = g;
}

static void family_attach(struct tsch_table *t, struct tsch_family *f)
{
	assert(t->nfamilies == 0 || t->families[t->nfamilies - 1]->id < f->id);
	t->families = xrealloc(t->families, (t->nfamilies + 1) * sizeof(*t->families));
	t->families[t->nfamilies++] = f;
}

/* The compression level of group g's tree: the highest of its live families. */
static int group_compression(const struct tsch_table *t, const struct tsch_group *g)
{
	int level = 0;

	for (size_t i = 0; i < t->nfamilies; i++) {
		const struct tsch_family *f = t->families[i];

		if (f->group == g && !f->dropped && f->s.compression > level)
			level = f->s.compression;
	}
	return level;
}

static char *group_tree_name(uint32_t id)
{
	return xasprintf("lg-%u", id);
}

/* Open (or create) group id's tree with that compression and the GC filter. */
static int group_tree_open(struct tbl_db *db, uint32_t id, int compression, struct kv_tree **tree)
{
	struct kv_tree_options o;
	char *name = group_tree_name(id);
	int r;

	kv_tree_options_init(&o);
	o.compression_level = compression;
	o.compaction_filter = &db->gc;
	r = kv_tree_open(db->kv, name, &o, tree);
	free(name);
	return r;
}

/* Re-open g's tree if its compression level is no longer before. */
static int group_refresh(struct tbl_db *db, struct tsch_table *t, struct tsch_group *g, int before)
{
	struct kv_tree *tree;
	int level, r;

	if (!g || g->id == 0)
		return 0;
	level = group_compression(t, g);
	if (level == before)
		return 0;
	r = group_tree_open(db, g->id, level, &tree);
	if (r < 0)
		return error_context(r, "table %s: locality group %s: applying compression %d "
				     "(the schema change is durable)", t->name, g->name, level);
	return 0;
}

/* ------------------------------------------------------------ schema records */

static void key_kind(struct buf *b, char kind)
{
	static const char zero[TKEY_TABLE_LEN];

	buf_clear(b);
	buf_append(b, zero, sizeof(zero));
	buf_append(b, &kind, 1);
}

static void key_table_record(struct buf *b, const char *table)
{
	key_kind(b, SCHEMA_T);
	buf_append(b, table, strlen(table));
}

/* The prefix of table id's 'G' or 'F' records. */
static void key_per_table(struct buf *b, char kind, uint32_t id)
{
	key_kind(b, kind);
	buf_put_fixed32(b, id);
}

static void key_group_record(struct buf *b, uint32_t table, const char *group)
{
	key_per_table(b, SCHEMA_G, table);
	buf_append(b, group, strlen(group));
}

/* A live family's record is keyed by its name; a dropped one's by name, 0x00, id. */
static void key_family_record(struct buf *b, uint32_t table, const char *name, uint16_t id,
			      int dropped)
{
	key_per_table(b, SCHEMA_F, table);
	buf_append(b, name, strlen(name));
	if (dropped) {
		char tail[3] = { 0, (char)id, (char)(id >> 8) };

		buf_append(b, tail, sizeof(tail));
	}
}

static void val_family_record(struct buf *b, const struct tsch_family *f)
{
	char id[2] = { (char)f->id, (char)(f->id >> 8) };
	char type = (char)f->s.type, compression = (char)f->s.compression;
	char dropped = (char)(f->dropped != 0);

	buf_clear(b);
	buf_append(b, id, sizeof(id));
	buf_append(b, &type, 1);
	buf_put_varint32(b, f->s.max_versions);
	buf_put_varint64(b, f->s.ttl);
	buf_append(b, &compression, 1);
	buf_append(b, &dropped, 1);
	buf_put_lenprefixed(b, slice_str(f->s.locality_group));
}

static void val_counters(struct buf *b, uint32_t next_table, uint32_t next_group)
{
	buf_clear(b);
	buf_put_fixed32(b, next_table);
	buf_put_fixed32(b, next_group);
}

/* Add the 'N' record with these counters to batch. */
static void batch_counters(struct kv_batch *batch, uint32_t next_table, uint32_t next_group)
{
	struct buf k = BUF_INIT, v = BUF_INIT;

	key_kind(&k, SCHEMA_N);
	val_counters(&v, next_table, next_group);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	buf_free(&k);
	buf_free(&v);
}

static void batch_family(struct kv_batch *batch, uint32_t table, const struct tsch_family *f)
{
	struct buf k = BUF_INIT, v = BUF_INIT;

	key_family_record(&k, table, f->name, f->id, f->dropped);
	val_family_record(&v, f);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	buf_free(&k);
	buf_free(&v);
}

static void batch_group(struct kv_batch *batch, uint32_t table, const struct tsch_group *g)
{
	struct buf k = BUF_INIT, v = BUF_INIT;

	key_group_record(&k, table, g->name);
	buf_put_fixed32(&v, g->id);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	buf_free(&k);
	buf_free(&v);
}

/* Write a schema batch durably; the message names what it was for. */
static int schema_write(struct tbl_db *db, struct kv_batch *batch, const char *what,
			const char *table)
{
	int r = kv_write(db->kv, batch, KV_SYNC);

	if (r < 0)
		return error_context(r, "table %s: %s: writing the schema failed", table, what);
	return r;
}

/* ------------------------------------------------------------ loading */

/*
 * What loading keeps besides the schema: the tables by id and the group ids
 * seen, so each record is checked against the others in O(log n).
 */
struct load {
	struct tbl_db *db;
	struct tsch_table **by_id;     /* sorted by id once the 'T' records are in */
	uint32_t *group_ids;
	size_t ngroup_ids;
};

/*
 * Iterate over the schema records of one kind: calls fn for each with the
 * key after its kind byte and the value; stops at the first error.
 */
static int schema_scan(struct load *ld, char kind,
		       int (*fn)(struct load *ld, struct slice key, struct slice val))
{
	struct buf prefix = BUF_INIT;
	struct kv_iter *it;
	int r = 0;

	key_kind(&prefix, kind);
	it = kv_iter_new_prefix(ld->db->kv, NULL, prefix.data, prefix.len);
	for (kv_iter_seek(it, prefix.data, prefix.len); r == 0 && kv_iter_valid(it);
	     kv_iter_next(it)) {
		size_t klen, vlen;
		const char *k = kv_iter_key(it, &klen);
		const char *v = kv_iter_value(it, &vlen);

		r = fn(ld, slice_make(k + prefix.len, klen - prefix.len), slice_make(v, vlen));
	}
	if (r == 0)
		r = kv_iter_status(it);
	kv_iter_free(it);
	buf_free(&prefix);
	return r;
}

static int load_counters(struct load *ld, struct slice key, struct slice val)
{
	struct tbl_db *db = ld->db;

	if (key.len != 0 || val.len != 8)
		return ERR_CORRUPT("schema: the id counter record has %zu key and %zu value bytes",
				  key.len + 5, val.len);
	db->next_table = dec_fixed32(val.data);
	db->next_group = dec_fixed32(val.data + 4);
	if (db->next_table == 0 || db->next_group == 0)
		return ERR_CORRUPT("schema: the id counters (%u, %u) are not above 0",
				  db->next_table, db->next_group);
	return 0;
}

static int load_ts_mark(struct load *ld, struct slice key, struct slice val)
{
	struct tbl_db *db = ld->db;

	if (key.len != 0 || val.len != 8)
		return ERR_CORRUPT("schema: the timestamp mark record has %zu key and %zu value "
				  "bytes", key.len + 5, val.len);
	db->ts_mark = dec_fixed64(val.data);
	/* every timestamp given out before is below the mark: the next one is not */
	db->last_ts = db->ts_mark ? db->ts_mark - 1 : 0;
	return 0;
}

static int load_table(struct load *ld, struct slice key, struct slice val)
{
	struct tbl_db *db = ld->db;
	char *name = xmemdup(key.data, key.len);
	uint32_t id;
	int r = 0;

	if (strlen(name) != key.len || !table_name_ok(name) || val.len != 4) {
		r = ERR_CORRUPT("schema: a table record (%zu name bytes) is malformed", key.len);
		goto out;
	}
	id = dec_fixed32(val.data);
	if (id == 0 || id >= db->next_table || id == UINT32_MAX) {
		r = ERR_CORRUPT("schema: table %s has id %u: not in 1 up to the next id %u", name,
			       id, db->next_table);
		goto out;
	}
	/* 'T' records arrive in name order, which is the order of db->tables */
	table_insert(db, table_new(id, name));
out:
	free(name);
	return r;
}

static int cmp_table_id(const void *a, const void *b)
{
	uint32_t x = (*(struct tsch_table *const *)a)->id, y = (*(struct tsch_table *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* Index the loaded tables by id; two with one id are corruption. */
static int index_tables(struct load *ld)
{
	struct tbl_db *db = ld->db;

	ld->by_id = xmalloc((db->ntables + 1) * sizeof(*ld->by_id));
	if (db->ntables == 0)
		return 0;
	memcpy(ld->by_id, db->tables, db->ntables * sizeof(*ld->by_id));
	qsort(ld->by_id, db->ntables, sizeof(*ld->by_id), cmp_table_id);
	for (size_t i = 1; i < db->ntables; i++)
		if (ld->by_id[i]->id == ld->by_id[i - 1]->id)
			return ERR_CORRUPT("schema: tables %s and %s have the same id %u",
					  ld->by_id[i - 1]->name, ld->by_id[i]->name,
					  ld->by_id[i]->id);
	return 0;
}

/* The table a 'G' or 'F' record key belongs to, and the rest of the key. */
static int record_table(struct load *ld, struct slice key, const char *what,
			struct tsch_table **t, struct slice *rest)
{
	size_t lo = 0, hi = ld->db->ntables;
	uint32_t id;

	if (key.len < 4)
		return ERR_CORRUPT("schema: a %s record key is too short", what);
	id = dec_fixed32(key.data);
	*t = NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ld->by_id[mid]->id == id) {
			*t = ld->by_id[mid];
			break;
		}
		if (ld->by_id[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!*t)
		return ERR_CORRUPT("schema: a %s record belongs to table id %u, which does not "
				  "exist", what, id);
	*rest = slice_make(key.data + 4, key.len - 4);
	return 0;
}

static int load_group(struct load *ld, struct slice key, struct slice val)
{
	struct tsch_table *t;
	struct slice rest;
	char *name;
	uint32_t id;
	int r;

	r = record_table(ld, key, "locality group", &t, &rest);
	if (r < 0)
		return r;
	name = xmemdup(rest.data, rest.len);
	if (strlen(name) != rest.len || !family_name_ok(name) || val.len != 4 ||
	    !strcmp(name, TSCH_DEFAULT_GROUP)) {
		r = ERR_CORRUPT("schema: table %s: a locality group record is malformed", t->name);
		goto out;
	}
	id = dec_fixed32(val.data);
	if (id == 0 || id >= ld->db->next_group) {
		r = ERR_CORRUPT("schema: table %s: locality group %s has id %u: not in 1 up to "
			       "the next id %u", t->name, name, id, ld->db->next_group);
		goto out;
	}
	ld->group_ids = xrealloc(ld->group_ids, (ld->ngroup_ids + 1) * sizeof(*ld->group_ids));
	ld->group_ids[ld->ngroup_ids++] = id;
	group_attach(t, group_new(id, name, NULL));
out:
	free(name);
	return r;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Two groups with one id (they would share a tree) are corruption. */
static int check_group_ids(struct load *ld)
{
	if (ld->ngroup_ids == 0)
		return 0;
	qsort(ld->group_ids, ld->ngroup_ids, sizeof(*ld->group_ids), cmp_u32);
	for (size_t i = 1; i < ld->ngroup_ids; i++)
		if (ld->group_ids[i] == ld->group_ids[i - 1])
			return ERR_CORRUPT("schema: two locality groups have the id %u",
					  ld->group_ids[i]);
	return 0;
}

/* Decode a family record's value into f (name and group not set). */
static int decode_family(struct slice val, struct tsch_family *f, struct slice *group)
{
	const char *p = val.data, *end = val.data + val.len;
	uint64_t ttl;
	uint32_t maxv;

	if (end - p < 3)
		return -1;
	f->id = (uint16_t)((unsigned char)p[0] | (unsigned char)p[1] << 8);
	f->s.type = (enum cell_type)(unsigned char)p[2];
	p += 3;
	p = dec_varint32(p, end, &maxv);
	if (p)
		p = dec_varint64(p, end, &ttl);
	if (!p || end - p < 2)
		return -1;
	f->s.max_versions = maxv;
	f->s.ttl = ttl;
	f->s.compression = (unsigned char)p[0];
	f->dropped = (unsigned char)p[1];
	p = dec_lenprefixed(p + 2, end, group);
	if (!p || p != end || f->dropped > 1 || group->len > TBL_MAX_FAMILY_NAME)
		return -1;
	memcpy(f->s.locality_group, group->data, group->len);
	f->s.locality_group[group->len] = 0;
	return 0;
}

/*
 * Family records arrive in name order; each is inserted into its table's
 * families by id (usually at the end, as ids follow creation order).
 */
static int load_family(struct load *ld, struct slice key, struct slice val)
{
	struct tsch_family *f = xcalloc(1, sizeof(*f));
	struct tsch_table *t;
	struct slice rest, group;
	size_t namelen, i;
	int r;

	r = record_table(ld, key, "family", &t, &rest);
	if (r < 0)
		goto fail;
	namelen = strnlen(rest.data, rest.len);
	f->name = xmemdup(rest.data, namelen);
	if (decode_family(val, f, &group) < 0 || !family_name_ok(f->name) ||
	    check_settings(t->name, f->name, &f->s) < 0) {
		r = ERR_CORRUPT("schema: table %s: the record of family %s is malformed", t->name,
			       f->name);
		goto fail;
	}
	/* a live family is keyed by its name, a dropped one by name, 0x00, id */
	if (f->dropped ? rest.len != namelen + 3 ||
			 (uint16_t)((unsigned char)rest.data[namelen + 1] |
				    (unsigned char)rest.data[namelen + 2] << 8) != f->id
		       : rest.len != namelen) {
		r = ERR_CORRUPT("schema: table %s: the key of family %s does not match its record",
			       t->name, f->name);
		goto fail;
	}
	if (f->id == UINT16_MAX || tsch_family_by_id(t, f->id)) {
		r = ERR_CORRUPT("schema: table %s: family %s has id %u, which is reserved or "
			       "taken", t->name, f->name, f->id);
		goto fail;
	}
	if (!f->dropped && tsch_find_family(t, f->name)) {
		r = ERR_CORRUPT("schema: table %s: family %s is recorded twice", t->name, f->name);
		goto fail;
	}
	f->group = group_find(t, f->s.locality_group);
	if (!f->group) {
		r = ERR_CORRUPT("schema: table %s: family %s is in locality group %s, which has no "
			       "record", t->name, f->name, f->s.locality_group);
		goto fail;
	}
	t->families = xrealloc(t->families, (t->nfamilies + 1) * sizeof(*t->families));
	for (i = t->nfamilies; i > 0 && t->families[i - 1]->id > f->id; i--)
		t->families[i] = t->families[i - 1];
	t->families[i] = f;
	t->nfamilies++;
	if (f->id >= t->next_family)
		t->next_family = (uint16_t)(f->id + 1);
	return 0;
fail:
	free(f->name);
	free(f);
	return r;
}

/* Load every schema record into db's structures (trees are opened after). */
static int schema_load(struct tbl_db *db)
{
	struct load ld = { .db = db };
	int r;

	db->next_table = 1;
	db->next_group = 1;
	r = schema_scan(&ld, SCHEMA_N, load_counters);
	if (r == 0)
		r = schema_scan(&ld, SCHEMA_M, load_ts_mark);
	if (r == 0)
		r = schema_scan(&ld, SCHEMA_T, load_table);
	if (r == 0)
		r = index_tables(&ld);
	if (r == 0)
		r = schema_scan(&ld, SCHEMA_G, load_group);
	if (r == 0)
		r = check_group_ids(&ld);
	if (r == 0)
		r = schema_scan(&ld, SCHEMA_F, load_family);
	free(ld.by_id);
	free(ld.group_ids);
	return r;
}

/* Open every table's group trees, compressed as their families ask. */
static int open_group_trees(struct tbl_db *db)
{
	for (size_t i = 0; i < db->ntables; i++) {
		struct tsch_table *t = db->tables[i];

		for (size_t j = 1; j < t->ngroups; j++) {
			struct tsch_group *g = t->groups[j];
			int r = group_tree_open(db, g->id, group_compression(t, g), &g->tree);

			if (r < 0)
				return error_context(r, "table %s: opening the tree of "
						     "locality group %s", t->name, g->name);
		}
	}
	return 0;
}

static int group_id_used(struct tbl_db *db, uint32_t id)
{
	for (size_t i = 0; i < db->ntables; i++)
		for (size_t j = 1; j < db->tables[i]->ngroups; j++)
			if (db->tables[i]->groups[j]->id == id)
				return 1;
	return 0;
}

/*
 * Drop the "lg-<id>" trees no group refers to: left by a crash between a
 * table's drop and its trees', or between a new group's tree and its record.
 */
static int drop_orphan_trees(struct tbl_db *db)
{
	char **names;
	size_t n;
	int r = kv_tree_list(db->kv, &names, &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char *end;
		unsigned long id;
		struct kv_tree *tree;

		if (strncmp(names[i], "lg-", 3) || names[i][3] < '1' || names[i][3] > '9')
			continue;
		errno = 0;
		id = strtoul(names[i] + 3, &end, 10);
		if (*end || errno || id > UINT32_MAX || group_id_used(db, (uint32_t)id))
			continue;
		r = kv_tree_open(db->kv, names[i], NULL, &tree);
		if (r == 0)
			r = kv_tree_drop(db->kv, tree);
		if (r < 0)
			r = error_context(r, "dropping the orphaned locality group tree %s",
					  names[i]);
	}
	tbl_free_names(names, n);
	return r;
}

/* ------------------------------------------------------------ the GC filter */

/*
 * The garbage-collection compaction filter.  The kv engine calls it with the
 * keys of one compaction in key order, so the versions of one column (one
 * kv key without its 8 timestamp bytes) arrive together, newest first.  For
 * each it decides with tsch_gc_keeps, the rule reads use: a version of a
 * dropped family, of a table that no longer exists, or older than the ttl
 * is garbage whatever else is true; a version beyond max_versions is garbage
 * when max_versions newer versions of its column are visible.
 *
 * The version count is the subtle part.  The filter sees only the versions
 * in this compaction's input files that no snapshot can see in an older
 * form (seq <= the oldest snapshot): not the versions in other files, nor
 * the ones written since the oldest snapshot.  Missing those can only make
 * it undercount, which keeps versions that reads hide anyway.  But it can
 * also count versions that are no longer visible: the tombstone that
 * deletes one (a delete of that version, of the cell, of the row) may be in
 * a newer file outside this compaction, or newer than the oldest snapshot
 * (the engine then still offers the version it covers).  Counting those
 * would drop an older version that reads show, so a version is dropped for
 * max_versions only after a check: at least max_versions of the versions
 * this compaction saw newer in the column, and kept, are visible now (one
 * kv iterator per compaction, made on first need).  Those versions were
 * written before the oldest snapshot and are still live, so every snapshot
 * and every read sees them, and none of them would show the dropped one.
 * Once a column passes the check, its older versions are beyond the limit
 * too and need none.  "Now" is when the iterator was made: a newer version
 * deleted after that no longer brings an older one back once compaction
 * has removed it (until then reads show it again).  Collected garbage stays
 * collected, as in Bigtable.
 *
 * The schema is read under the schema lock, taken with trylock: a schema
 * change holds the write lock across kv calls that may wait for this
 * compaction (kv_write stalls, kv_tree_drop), so waiting here could
 * deadlock.  While the write lock is held the filter keeps everything;
 * garbage it keeps so goes at a later compaction.
 */
struct gc_state {
	struct gc_ctx *ctx;
	struct buf column;            /* the current column: the kv key without its timestamp */
	uint64_t *kept;               /* its versions kept so far, newest first */
	size_t nkept, capkept;
	int beyond;                   /* its remaining versions are past max_versions */
	struct buf scratch, scratch2;
	/* the table of the last key, valid while generation is unchanged */
	struct tsch_table *table;
	uint32_t table_id;
	uint64_t generation;
	/* the state of the tree now, for the max_versions check */
	struct kv_iter *it;
	struct kv_tree *it_tree;
};

static void *gc_start(void *arg)
{
	struct gc_state *st = xcalloc(1, sizeof(*st));

	st->ctx = arg;
	return st;
}

static void gc_finish(void *state)
{
	struct gc_state *st = state;

	kv_iter_free(st->it);
	buf_free(&st->column);
	buf_free(&st->scratch);
	buf_free(&st->scratch2);
	free(st->kept);
	free(st);
}

static void gc_keep_version(struct gc_state *st, uint64_t ts)
{
	if (st->nkept == st->capkept) {
		st->capkept = st->capkept ? 2 * st->capkept : 8;
		st->kept = xrealloc(st->kept, st->capkept * sizeof(*st->kept));
	}
	st->kept[st->nkept++] = ts;
}

enum gc_verdict { GC_KEEP, GC_DROP, GC_POLICY };

/*
 * The policy of the key's family, copied into *f with its tree: GC_POLICY;
 * GC_DROP if the table no longer exists; GC_KEEP if the schema is busy or
 * the family is unknown (nothing is dropped on doubt).
 */
static enum gc_verdict gc_policy(struct gc_state *st, const struct tkey *k, struct tsch_family *f,
				 struct kv_tree **tree)
{
	struct tbl_db *db = st->ctx->db;
	struct tsch_family *live;
	enum gc_verdict v = GC_POLICY;

	if (pthread_rwlock_tryrdlock(&db->schema_lock) != 0)
		return GC_KEEP;
	if (!st->table || st->table_id != k->table || st->generation != st->ctx->generation) {
		st->table = tsch_table_by_id(db, k->table);
		st->table_id = k->table;
		st->generation = st->ctx->generation;
	}
	if (!st->table) {
		v = GC_DROP;
	} else if (!(live = tsch_family_by_id(st->table, k->family))) {
		v = GC_KEEP;
	} else {
		*f = *live;
		f->name = NULL;
		*tree = tsch_group_tree(live->group);
	}
	pthread_rwlock_unlock(&db->schema_lock);
	return v;
}

/*
 * 1 if at least max of the current column's kept versions are visible now
 * in tree (those newer than the version with kv key `key`); 0 if not or on
 * any error (keeping is always safe).
 */
static int gc_newer_visible(struct gc_state *st, struct kv_tree *tree, struct slice key,
			    uint32_t max)
{
	struct kv_iter *it;
	size_t i = 0;
	uint32_t count = 0;

	if (!st->it || st->it_tree != tree) {
		struct kv_read_options ro = { .tree = tree };

		kv_iter_free(st->it);
		st->it = kv_iter_new(st->ctx->db->kv, &ro);
		st->it_tree = tree;
	}
	it = st->it;
	/* every key in [column, key) is a newer version of this column */
	for (kv_iter_seek(it, st->column.data, st->column.len); kv_iter_valid(it);
	     kv_iter_next(it)) {
		size_t klen;
		const char *k = kv_iter_key(it, &klen);
		struct tkey v;

		if (slice_cmp(slice_make(k, klen), key) >= 0)
			break;
		if (tkey_decode(slice_make(k, klen), &v, &st->scratch2) < 0)
			continue;
		while (i < st->nkept && st->kept[i] > v.ts)
			i++;
		if (i < st->nkept && st->kept[i] == v.ts && ++count >= max)
			return 1;
	}
	if (kv_iter_status(it) != 0) {
		kv_iter_free(st->it);
		st->it = NULL;
	}
	return 0;
}

static int gc_filter(void *state, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct gc_state *st = state;
	struct slice kk = slice_make(key, klen), column;
	struct tsch_family f;
	struct kv_tree *tree = NULL;
	struct tkey k;
	uint64_t now;

	(void)val;
	(void)vlen;
	/* the schema (table id 0) and anything that is not a cell key stay */
	if (klen < TKEY_TABLE_LEN || !memcmp(key, "\0\0\0\0", TKEY_TABLE_LEN))
		return 0;
	if (tkey_decode(kk, &k, &st->scratch) < 0)
		return 0;
	column = slice_make(key, klen - TKEY_TS_LEN);
	if (!slice_eq(column, buf_slice(&st->column))) {
		buf_set(&st->column, column.data, column.len);
		st->nkept = 0;
		st->beyond = 0;
	}
	switch (gc_policy(st, &k, &f, &tree)) {
	case GC_DROP:
		return 1;
	case GC_KEEP:
		gc_keep_version(st, k.ts);
		return 0;
	case GC_POLICY:
		break;
	}
	now = tsch_wall();
	/* dropped family, or older than the ttl (then so is every older version) */
	if (!tsch_gc_keeps(&f, k.ts, 0, now))
		return 1;
	if (tsch_gc_keeps(&f, k.ts, (uint32_t)(st->nkept < UINT32_MAX ? st->nkept : UINT32_MAX),
			  now)) {
		gc_keep_version(st, k.ts);
		return 0;
	}
	if (st->beyond || gc_newer_visible(st, tree, kk, f.s.max_versions)) {
		st->beyond = 1;
		return 1;
	}
	gc_keep_version(st, k.ts);
	return 0;
}

/* ------------------------------------------------------------ open and close */

static void db_free(struct tbl_db *db)
{
	schema_free(db);
	pthread_rwlock_destroy(&db->schema_lock);
	pthread_mutex_destroy(&db->ts_mu);
	for (int i = 0; i < TSCH_ROW_LOCKS; i++)
		pthread_mutex_destroy(&db->row_locks[i]);
	free(db->gc.arg);
	free(db);
}

int tbl_open(const char *dir, const struct tbl_options *o, struct tbl_db **out)
{
	API_ENTRY();
	struct tbl_db *db;
	struct gc_ctx *ctx;
	int r;

	*out = NULL;
	if (o->max_value_size == 0 || o->max_value_size > TBL_LIMIT_MAX_VALUE)
		return ERR_SET(-EINVAL, "%s: the largest value size %zu is not in 1..%u", dir,
				o->max_value_size, TBL_LIMIT_MAX_VALUE);
	db = xcalloc(1, sizeof(*db));
	db->opt = *o;
	pthread_rwlock_init(&db->schema_lock, NULL);
	pthread_mutex_init(&db->ts_mu, NULL);
	for (int i = 0; i < TSCH_ROW_LOCKS; i++)
		pthread_mutex_init(&db->row_locks[i], NULL);
	ctx = xcalloc(1, sizeof(*ctx));
	ctx->db = db;
	db->gc.start = gc_start;
	db->gc.filter = gc_filter;
	db->gc.finish = gc_finish;
	db->gc.arg = ctx;
	/* the default tree's filter is the GC filter: a caller's own is replaced */
	db->opt.kv.compaction_filter = &db->gc;

	/*
	 * Hold the schema write lock until the schema is loaded: a compaction
	 * may start as soon as kv_open returns, and its filter must not take
	 * a table it has not seen yet for a dropped one (it keeps everything
	 * while the lock is held).
	 */
	pthread_rwlock_wrlock(&db->schema_lock);
	r = kv_open(dir, &db->opt.kv, &db->kv);
	if (r < 0) {
		pthread_rwlock_unlock(&db->schema_lock);
		db_free(db);
		return r;
	}
	r = schema_load(db);
	if (r == 0)
		r = open_group_trees(db);
	if (r == 0 && !o->kv.read_only)   /* read-only: orphans stay (nothing reads them) */
		r = drop_orphan_trees(db);
	if (r < 0) {
		/* still locked: kv_close lets running compactions finish, keeping all */
		kv_close(db->kv);
		pthread_rwlock_unlock(&db->schema_lock);
		db_free(db);
		return r;
	}
	pthread_rwlock_unlock(&db->schema_lock);
	*out = db;
	return 0;
}

static int close_ts_mark(struct tbl_db *db);

int tbl_close(struct tbl_db *db)
{
	API_ENTRY();
	int r, m;

	if (!db)
		return 0;
	m = close_ts_mark(db);
	/* first the engine: its compactions use the schema until they stop */
	r = kv_close(db->kv);
	db_free(db);
	return r < 0 ? r : m;
}

struct kv_db *tbl_kv(struct tbl_db *db)
{
	return db->kv;
}

/*
 * An empty batch with KV_SYNC: kv_write syncs the log without writing to
 * it.  A read-only database has nothing unsynced: 0, as fsync(2) of a file
 * on a read-only filesystem.
 */
int tbl_sync(struct tbl_db *db)
{
	API_ENTRY();
	struct kv_batch *b;
	int r;

	if (db->opt.kv.read_only)
		return 0;
	b = kv_batch_new();
	r = kv_write(db->kv, b, KV_SYNC);

	kv_batch_free(b);
	if (r < 0)
		return error_context(r, "syncing the write-ahead log");
	return 0;
}

const struct tbl_snapshot *tbl_snapshot_new(struct tbl_db *db)
{
	return (const struct tbl_snapshot *)kv_snapshot_new(db->kv);
}

void tbl_snapshot_release(struct tbl_db *db, const struct tbl_snapshot *snap)
{
	if (snap)
		kv_snapshot_release(db->kv, tsch_kv_snap(snap));
}

uint64_t tbl_schema_generation(struct tbl_db *db)
{
	return __atomic_load_n(&((struct gc_ctx *)db->gc.arg)->generation, __ATOMIC_ACQUIRE);
}

/*
 * Table ids come from the durable 'N' counter and are never handed out
 * twice (a drop leaves the counter alone), so they identify a table's
 * incarnation.  Family ids are unique only within their table: the public
 * id puts the table's id above them.
 */
int tbl_table_id(struct tbl_db *db, const char *table, uint64_t *id)
{
	API_ENTRY();
	struct tsch_table *t;
	int r = tsch_lock_table(db, table, &t);

	if (r < 0)
		return r;
	*id = t->id;
	tsch_unlock(db);
	return 0;
}

int tbl_family_id(struct tbl_db *db, const char *table, const char *family, uint64_t *id)
{
	API_ENTRY();
	struct tsch_table *t;
	struct tsch_family *f;
	int r = tsch_lock_table(db, table, &t);

	if (r < 0)
		return r;
	f = family ? tsch_find_family(t, family) : NULL;
	if (f)
		*id = (uint64_t)t->id << 16 | f->id;
	else
		r = ERR_SET(-ENOENT, "table %s, family %.100s: no such family", table,
			     family ? family : "(null)");
	tsch_unlock(db);
	return r;
}

/* ------------------------------------------------------------ tables */

int tsch_lock_table(struct tbl_db *db, const char *name, struct tsch_table **t)
{
	pthread_rwlock_rdlock(&db->schema_lock);
	*t = tsch_find_table(db, name);
	if (!*t) {
		pthread_rwlock_unlock(&db->schema_lock);
		return ERR_SET(-ENOENT, "table %.600s: no such table", name);
	}
	return 0;
}

void tsch_unlock(struct tbl_db *db)
{
	pthread_rwlock_unlock(&db->schema_lock);
}

int tbl_create_table(struct tbl_db *db, const char *table)
{
	API_ENTRY();
	struct kv_batch *batch;
	struct buf k = BUF_INIT, v = BUF_INIT;
	uint32_t id;
	int r;

	r = check_table_name(table);
	if (r < 0)
		return r;
	pthread_rwlock_wrlock(&db->schema_lock);
	if (tsch_find_table(db, table)) {
		r = ERR_SET(-EEXIST, "table %s: exists already", table);
		goto out;
	}
	id = db->next_table;
	if (id == UINT32_MAX) {
		r = ERR_SET(-ENOSPC, "table %s: every table id has been used", table);
		goto out;
	}
	batch = kv_batch_new();
	key_table_record(&k, table);
	buf_put_fixed32(&v, id);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	batch_counters(batch, id + 1, db->next_group);
	r = schema_write(db, batch, "creating it", table);
	kv_batch_free(batch);
	if (r == 0) {
		table_insert(db, table_new(id, table));
		db->next_table = id + 1;
		schema_changed(db);
	}
out:
	pthread_rwlock_unlock(&db->schema_lock);
	buf_free(&k);
	buf_free(&v);
	return r;
}

/* Add a range delete of every key that begins with prefix to batch. */
static void batch_delete_prefix(struct kv_batch *batch, struct slice prefix)
{
	struct buf end = BUF_INIT;
	int bounded = tkey_successor(&end, prefix);

	/* every prefix here begins with a table id below 0xFFFFFFFF */
	assert(bounded);
	(void)bounded;
	kv_batch_delete_range(batch, prefix.data, prefix.len, end.data, end.len);
	buf_free(&end);
}

int tbl_drop_table(struct tbl_db *db, const char *table, int force)
{
	API_ENTRY();
	struct kv_batch *batch;
	struct buf k = BUF_INIT;
	struct tsch_table *t;
	int r;

	pthread_rwlock_wrlock(&db->schema_lock);
	t = tsch_find_table(db, table);
	if (!t) {
		r = ERR_SET(-ENOENT, "table %.600s: no such table", table);
		goto out;
	}
	if (!force) {
		r = tscan_table_has_cells(db, t, NULL);
		if (r > 0)
			r = ERR_SET(-ENOTEMPTY, "table %s: holds cells; drop it with force",
				     table);
		if (r < 0)
			goto out;
	}
	/*
	 * One batch: a range tombstone over the table's cells in the default
	 * tree and the removal of its schema records.  Its group trees go
	 * after it, whole (tbl_open drops them if a crash comes between).
	 */
	batch = kv_batch_new();
	tkey_table_prefix(&k, t->id);
	batch_delete_prefix(batch, buf_slice(&k));
	key_table_record(&k, table);
	kv_batch_delete(batch, k.data, k.len);
	key_per_table(&k, SCHEMA_F, t->id);
	batch_delete_prefix(batch, buf_slice(&k));
	key_per_table(&k, SCHEMA_G, t->id);
	batch_delete_prefix(batch, buf_slice(&k));
	r = schema_write(db, batch, "dropping it", table);
	kv_batch_free(batch);
	if (r < 0)
		goto out;
	table_remove(db, t);
	schema_changed(db);
	/*
	 * Nothing can reach t any more, so its trees are dropped without the
	 * lock: kv_tree_drop waits for running compactions, and other schema
	 * changes need not wait with it.
	 */
	pthread_rwlock_unlock(&db->schema_lock);
	for (size_t i = 1; i < t->ngroups; i++) {
		int e = kv_tree_drop(db->kv, t->groups[i]->tree);

		if (e < 0 && r == 0)
			r = error_context(e, "table %s: dropped, but dropping the tree of "
					  "locality group %s failed (the next open retries)",
					  table, t->groups[i]->name);
	}
	table_free(t);
	buf_free(&k);
	return r;
out:
	pthread_rwlock_unlock(&db->schema_lock);
	buf_free(&k);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tbl_list_tables(struct tbl_db *db, char ***names, size_t *n)
{
	API_ENTRY();
	pthread_rwlock_rdlock(&db->schema_lock);
	*names = xmalloc((db->ntables + 1) * sizeof(**names));
	for (size_t i = 0; i < db->ntables; i++)
		(*names)[i] = xstrdup(db->tables[i]->name);
	*n = db->ntables;
	pthread_rwlock_unlock(&db->schema_lock);
	return 0;
}

int tbl_table_exists(struct tbl_db *db, const char *table)
{
	API_ENTRY();
	struct tsch_table *t;
	int r = tsch_lock_table(db, table, &t);

	if (r == 0)
		tsch_unlock(db);
	return r;
}

void tbl_free_names(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int group_info_cmp(const void *a, const void *b)
{
	const struct tbl_group_info *x = a, *y = b;
	int c = strcmp(x->table, y->table);

	return c ? c : strcmp(x->group, y->group);
}

int tbl_list_groups(struct tbl_db *db, const char *table, struct tbl_group_info **groups,
		    size_t *n)
{
	API_ENTRY();
	struct tbl_group_info *g = NULL;
	size_t cap = 0;
	int r = 0;

	*groups = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&db->schema_lock);
	if (table && !tsch_find_table(db, table)) {
		r = ERR_SET(-ENOENT, "table %.600s: no such table", table);
		goto out;
	}
	for (size_t i = 0; i < db->ntables; i++) {
		const struct tsch_table *t = db->tables[i];

		if (table && strcmp(t->name, table))
			continue;
		for (size_t j = 1; j < t->ngroups; j++) {   /* groups[0] is "default" */
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				g = xrealloc(g, cap * sizeof(*g));
			}
			g[*n].table = xstrdup(t->name);
			g[*n].group = xstrdup(t->groups[j]->name);
			g[*n].tree = xstrdup(kv_tree_name(t->groups[j]->tree));
			(*n)++;
		}
	}
	if (*n)
		qsort(g, *n, sizeof(*g), group_info_cmp);
	*groups = g;
out:
	pthread_rwlock_unlock(&db->schema_lock);
	return r;
}

void tbl_free_groups(struct tbl_group_info *groups, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(groups[i].table);
		free(groups[i].group);
		free(groups[i].tree);
	}
	free(groups);
}

/*
 * The trees are compacted without the schema lock (a compaction can take
 * minutes, and schema changes should not wait for it): a kv tree handle
 * stays valid after its tree is dropped (kv_tree_drop only marks it), and
 * the compaction of a dropped tree stops at once.
 */
int tbl_compact(struct tbl_db *db, const char *table,
		void (*step)(void *arg, const char *table, const char *group), void *arg)
{
	API_ENTRY();
	struct tbl_group_info *g = NULL;
	struct kv_tree **trees = NULL;
	struct buf lo = BUF_INIT, hi = BUF_INIT;
	size_t n = 0;
	int r, has_hi = 0;

	pthread_rwlock_rdlock(&db->schema_lock);
	if (table) {
		struct tsch_table *t = tsch_find_table(db, table);

		if (!t) {
			pthread_rwlock_unlock(&db->schema_lock);
			return ERR_SET(-ENOENT, "table %.600s: no such table", table);
		}
		tkey_table_prefix(&lo, t->id);
		has_hi = tkey_successor(&hi, buf_slice(&lo));
	}
	/* the trees, in the order tbl_list_groups gives their groups */
	pthread_rwlock_unlock(&db->schema_lock);
	r = tbl_list_groups(db, table, &g, &n);
	if (r < 0)
		goto out;
	trees = xcalloc(n ? n : 1, sizeof(*trees));
	pthread_rwlock_rdlock(&db->schema_lock);
	for (size_t i = 0; i < n; i++) {
		struct tsch_table *t = tsch_find_table(db, g[i].table);

		for (size_t j = 1; t && j < t->ngroups; j++)
			if (!strcmp(t->groups[j]->name, g[i].group))
				trees[i] = t->groups[j]->tree;
	}
	pthread_rwlock_unlock(&db->schema_lock);

	if (step)
		step(arg, table, TSCH_DEFAULT_GROUP);
	r = kv_compact_range(db->kv, table ? lo.data : NULL, lo.len, has_hi ? hi.data : NULL,
			     hi.len);
	if (r < 0) {
		r = error_context(r, "compacting %s%.600s in the default tree",
				  table ? "table " : "the database", table ? table : "");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!trees[i])
			continue;   /* its table or group went while we worked */
		if (step)
			step(arg, g[i].table, g[i].group);
		/* a group's tree holds one table's cells: all of it */
		r = kv_compact_range_tree(db->kv, trees[i], NULL, 0, NULL, 0);
		if (r < 0) {
			r = error_context(r, "table %.600s: compacting locality group %s",
					  g[i].table, g[i].group);
			goto out;
		}
	}
out:
	free(trees);
	tbl_free_groups(g, n);
	buf_free(&lo);
	buf_free(&hi);
	return r;
}

/* ------------------------------------------------------------ families */

/* Resolve table and live family under the write lock (held by the caller). */
static int find_family_locked(struct tbl_db *db, const char *table, const char *family,
			      struct tsch_table **t, struct tsch_family **f)
{
	*t = tsch_find_table(db, table);
	if (!*t)
		return ERR_SET(-ENOENT, "table %.600s: no such table", table);
	*f = tsch_find_family(*t, family);
	if (!*f)
		return ERR_SET(-ENOENT, "table %s, family %.100s: no such family", table, family);
	return 0;
}

/*
 * A new locality group of table t named name, not attached yet: its id is
 * db->next_group (the caller advances the counter once the batch holding its
 * record is written) and its tree exists already, compressed at compression.
 */
static int group_create(struct tbl_db *db, struct tsch_table *t, const char *name,
			int compression, struct tsch_group **out)
{
	struct kv_tree *tree;
	uint32_t id = db->next_group;
	int r;

	*out = NULL;
	if (id == UINT32_MAX)
		return ERR_SET(-ENOSPC, "table %s: every locality group id has been used",
				t->name);
	r = group_tree_open(db, id, compression, &tree);
	if (r < 0)
		return error_context(r, "table %s: creating the tree of locality group %s",
				     t->name, name);
	*out = group_new(id, name, tree);
	return 0;
}

/* Undo group_create after its batch failed: the tree is empty, drop it. */
static void group_abandon(struct tbl_db *db, struct tsch_group *g)
{
	if (!g)
		return;
	kv_tree_drop(db->kv, g->tree);
	group_free(g);
}

int tbl_add_family(struct tbl_db *db, const char *table, const char *family,
		   const struct tbl_family_settings *s)
{
	API_ENTRY();
	struct tsch_family *f = NULL;
	struct tsch_group *g, *newg = NULL;
	struct kv_batch *batch;
	struct tsch_table *t;
	int r, before = 0;

	r = check_family_name(table, family);
	if (r == 0)
		r = check_settings(table, family, s);
	if (r < 0)
		return r;
	pthread_rwlock_wrlock(&db->schema_lock);
	t = tsch_find_table(db, table);
	if (!t) {
		r = ERR_SET(-ENOENT, "table %.600s: no such table", table);
		goto out;
	}
	if (tsch_find_family(t, family)) {
		r = ERR_SET(-EEXIST, "table %s, family %s: exists already", table, family);
		goto out;
	}
	if (t->next_family == UINT16_MAX) {
		r = ERR_SET(-ENOSPC, "table %s, family %s: every family id of the table has been "
			     "used", table, family);
		goto out;
	}
	g = group_find(t, s->locality_group);
	if (g) {
		before = group_compression(t, g);
	} else {
		r = group_create(db, t, s->locality_group, s->compression, &newg);
		if (r < 0)
			goto out;
		g = newg;
	}
	f = xcalloc(1, sizeof(*f));
	f->id = t->next_family;
	f->name = xstrdup(family);
	f->s = *s;
	f->group = g;

	batch = kv_batch_new();
	batch_family(batch, t->id, f);
	if (newg) {
		batch_group(batch, t->id, newg);
		batch_counters(batch, db->next_table, newg->id + 1);
	}
	r = schema_write(db, batch, "adding a family", table);
	kv_batch_free(batch);
	if (r < 0) {
		group_abandon(db, newg);
		free(f->name);
		free(f);
		goto out;
	}
	if (newg) {
		group_attach(t, newg);
		db->next_group = newg->id + 1;
	}
	family_attach(t, f);
	t->next_family++;
	schema_changed(db);
	/* durable now: if applying the compression fails, the next open applies it */
	if (!newg)
		r = group_refresh(db, t, g, before);
out:
	pthread_rwlock_unlock(&db->schema_lock);
	return r;
}

int tbl_alter_family(struct tbl_db *db, const char *table, const char *family,
		     const struct tbl_family_settings *s)
{
	API_ENTRY();
	struct tbl_family_settings old_s;
	struct tsch_group *old_g, *g, *newg = NULL;
	struct kv_batch *batch;
	struct tsch_table *t;
	struct tsch_family *f;
	int r, before_old = 0, before_new = 0;

	r = check_family_name(table, family);
	if (r == 0)
		r = check_settings(table, family, s);
	if (r < 0)
		return r;
	pthread_rwlock_wrlock(&db->schema_lock);
	r = find_family_locked(db, table, family, &t, &f);
	if (r < 0)
		goto out;
	old_s = f->s;
	old_g = f->group;
	g = old_g;
	if (strcmp(s->locality_group, old_g->name)) {
		/* a family's cells are keyed in its group's tree: move only an empty one */
		r = tscan_table_has_cells(db, t, f);
		if (r > 0)
			r = ERR_SET(-ENOTEMPTY, "table %s, family %s: holds cells, so it cannot "
				     "move to locality group %s", table, family,
				     s->locality_group);
		if (r < 0)
			goto out;
		g = group_find(t, s->locality_group);
		if (!g) {
			r = group_create(db, t, s->locality_group, s->compression, &newg);
			if (r < 0)
				goto out;
			g = newg;
		}
	}
	before_old = group_compression(t, old_g);
	before_new = newg ? s->compression : group_compression(t, g);
	f->s = *s;
	f->group = g;

	batch = kv_batch_new();
	batch_family(batch, t->id, f);
	if (newg) {
		batch_group(batch, t->id, newg);
		batch_counters(batch, db->next_table, newg->id + 1);
	}
	r = schema_write(db, batch, "changing a family", table);
	kv_batch_free(batch);
	if (r < 0) {
		f->s = old_s;
		f->group = old_g;
		group_abandon(db, newg);
		goto out;
	}
	if (newg) {
		group_attach(t, newg);
		db->next_group = newg->id + 1;
	}
	schema_changed(db);
	/* durable now: if applying the compression fails, the next open applies it */
	r = group_refresh(db, t, old_g, before_old);
	if (r == 0 && g != old_g)
		r = group_refresh(db, t, g, before_new);
out:
	pthread_rwlock_unlock(&db->schema_lock);
	return r;
}

int tbl_drop_family(struct tbl_db *db, const char *table, const char *family, int force)
{
	API_ENTRY();
	struct kv_batch *batch;
	struct buf k = BUF_INIT;
	struct tsch_table *t;
	struct tsch_family *f;
	int r, before;

	pthread_rwlock_wrlock(&db->schema_lock);
	r = find_family_locked(db, table, family, &t, &f);
	if (r < 0)
		goto out;
	if (!force) {
		r = tscan_table_has_cells(db, t, f);
		if (r > 0)
			r = ERR_SET(-ENOTEMPTY, "table %s, family %s: holds cells; drop it with "
				     "force", table, family);
		if (r < 0)
			goto out;
	}
	before = group_compression(t, f->group);
	/* the record moves to its dropped key, freeing the name */
	batch = kv_batch_new();
	key_family_record(&k, t->id, f->name, f->id, 0);
	kv_batch_delete(batch, k.data, k.len);
	f->dropped = 1;
	batch_family(batch, t->id, f);
	r = schema_write(db, batch, "dropping a family", table);
	kv_batch_free(batch);
	if (r < 0) {
		f->dropped = 0;
		goto out;
	}
	schema_changed(db);
	r = group_refresh(db, t, f->group, before);
out:
	pthread_rwlock_unlock(&db->schema_lock);
	buf_free(&k);
	return r;
}

int tbl_get_family(struct tbl_db *db, const char *table, const char *family,
		   struct tbl_family_settings *s)
{
	API_ENTRY();
	struct tsch_table *t;
	struct tsch_family *f;
	int r = tsch_lock_table(db, table, &t);

	if (r < 0)
		return r;
	f = tsch_find_family(t, family);
	if (f)
		*s = f->s;
	else
		r = ERR_SET(-ENOENT, "table %s, family %.100s: no such family", table, family);
	tsch_unlock(db);
	return r;
}

int tbl_list_families(struct tbl_db *db, const char *table, char ***names, size_t *n)
{
	API_ENTRY();
	struct tsch_table *t;
	int r = tsch_lock_table(db, table, &t);

	if (r < 0)
		return r;
	*names = xmalloc((t->nfamilies + 1) * sizeof(**names));
	*n = 0;
	for (size_t i = 0; i < t->nfamilies; i++)
		if (!t->families[i]->dropped)
			(*names)[(*n)++] = xstrdup(t->families[i]->name);
	tsch_unlock(db);
	qsort(*names, *n, sizeof(**names), cmp_names);
	return 0;
}

/* ------------------------------------------------------------ time and rows */

uint64_t tsch_wall(void)
{
	return wall_micros();
}

/*
 * How far beyond the timestamp that needs it the recorded mark is raised:
 * one small record per second of server time at most.  A crash loses the
 * unused part; the next open starts above it (at most this far ahead of a
 * clock that was right).
 */
#define TS_MARK_WINDOW UINT64_C(1000000)

/*
 * Record a mark above need, unless another thread has already.  The record
 * goes into the log before the mark is used, so a write with a timestamp
 * below it never survives a crash that loses the mark: the log is replayed
 * in order, and a synced write syncs what precedes it.
 */
static int raise_ts_mark(struct tbl_db *db, uint64_t need)
{
	struct kv_batch *batch;
	struct buf k = BUF_INIT, v = BUF_INIT;
	uint64_t mark = need > UINT64_MAX - 1 - TS_MARK_WINDOW ? UINT64_MAX - 1
							       : need + TS_MARK_WINDOW;
	int r = 0;

	pthread_mutex_lock(&db->ts_mu);
	if (need < __atomic_load_n(&db->ts_mark, __ATOMIC_ACQUIRE))
		goto out;
	batch = kv_batch_new();
	key_kind(&k, SCHEMA_M);
	buf_put_fixed64(&v, mark);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	r = kv_write(db->kv, batch, 0);
	kv_batch_free(batch);
	if (r < 0)
		r = error_context(r, "recording the server timestamp mark %llu failed",
				  (unsigned long long)mark);
	else
		__atomic_store_n(&db->ts_mark, mark, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&db->ts_mu);
	buf_free(&k);
	buf_free(&v);
	return r;
}

/*
 * At a clean close, bring the mark down to just above the last timestamp
 * given out, so that the next open does not start up to TS_MARK_WINDOW ahead
 * of the clock.  Lowering it is safe: nothing is given out any more.  If the
 * record cannot be written, the higher mark stays, which is safe too.
 */
static int close_ts_mark(struct tbl_db *db)
{
	struct kv_batch *batch;
	struct buf k = BUF_INIT, v = BUF_INIT;
	int r;

	if (db->opt.kv.read_only || db->last_ts + 1 >= db->ts_mark)
		return 0;
	batch = kv_batch_new();
	key_kind(&k, SCHEMA_M);
	buf_put_fixed64(&v, db->last_ts + 1);
	kv_batch_put(batch, k.data, k.len, v.data, v.len);
	r = kv_write(db->kv, batch, 0);
	kv_batch_free(batch);
	buf_free(&k);
	buf_free(&v);
	return r < 0 ? error_context(r, "recording the server timestamp mark at close failed")
		     : 0;
}

/*
 * The wall clock, or one more than the last timestamp given out if the clock
 * has not moved past it (same microsecond, or stepped back): so every call,
 * from any thread, gets a distinct timestamp greater than every earlier one.
 * Earlier opens count too: the mark loaded at open is above all they gave
 * out, and no timestamp is given out before a mark above it is recorded.
 */
int tsch_now(struct tbl_db *db, uint64_t *ts)
{
	uint64_t last = __atomic_load_n(&db->last_ts, __ATOMIC_ACQUIRE), next;
	int r;

	for (;;) {
		uint64_t wall = db->clock ? db->clock() : wall_micros();

		next = wall > last ? wall : last + 1;
		if (next >= __atomic_load_n(&db->ts_mark, __ATOMIC_ACQUIRE)) {
			if ((r = raise_ts_mark(db, next)) < 0)
				return r;
			last = __atomic_load_n(&db->last_ts, __ATOMIC_ACQUIRE);
			continue;
		}
		if (__atomic_compare_exchange_n(&db->last_ts, &last, next, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	*ts = next;
	return 0;
}

pthread_mutex_t *tsch_row_lock(struct tbl_db *db, uint32_t table, const void *row, size_t len)
{
	return &db->row_locks[hash64(row, len, table) % TSCH_ROW_LOCKS];
}
