/*
 * tbl_schema.c -- tests for engine/table.c, the table layer's schema: table
 * and family names (valid, invalid, at and past their limits), creating,
 * listing, altering and dropping tables and families with every setting,
 * the -EEXIST / -ENOENT / -EINVAL / -ENOTEMPTY rules and their messages,
 * persistence across tbl_close and tbl_open (settings, locality groups,
 * dropped families staying dropped, ids never reused), damaged schema
 * records refused, locality groups as kv trees (created, compressed as their
 * families ask, dropped with their table, orphans removed at open), a table
 * drop that costs one small batch whatever the table's size, the
 * garbage-collection compaction filter (max_versions, ttl, dropped families,
 * dropped tables, a version hidden by a newer delete not counted), the
 * row-key and qualifier limits, and tsch_now strictly increasing across
 * threads.
 *
 * GC checks are white-box: after a compaction the kv keys are read straight
 * from the trees and decoded with tkey_decode, so a test sees what is
 * physically stored, not what reads choose to show.
 *
 * SMOLFS_TEST_SCALE scales the sizes (default 1.0: a 3,000-row table for the
 * drop, 4 x 20,000 timestamps).
 */
#include "tap.h"
#include "testutil.h"
#include "table_int.h"

#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh database directory for one test. */
static char *fresh_dir(const char *name)
{
	char *dir = xasprintf("%s/%s", tmpdir, name);

	rm_rf(dir);
	return dir;
}

static void quiet_log(void *arg, enum kv_log_level level, const char *msg)
{
	(void)arg; (void)level; (void)msg;
}

static struct tbl_db *open_db(const char *dir)
{
	struct tbl_options o;
	struct tbl_db *db = NULL;
	int r;

	tbl_options_init(&o);
	o.kv.log = quiet_log;
	r = tbl_open(dir, &o, &db);
	if (r < 0) {
		diag("tbl_open %s: %s", dir, kv_strerror(r));
		exit(1);
	}
	return db;
}

static void close_db(struct tbl_db *db)
{
	int r = tbl_close(db);

	if (r < 0)
		diag("tbl_close: %s", kv_strerror(r));
}

/* Does the last error message mention s? */
static int msg_has(const char *s)
{
	return strstr(err_last(), s) != NULL;
}

static struct tbl_family_settings settings(enum cell_type type, uint32_t maxv, uint64_t ttl,
					   const char *group, int compression)
{
	struct tbl_family_settings s;

	tbl_family_settings_init(&s);
	s.type = type;
	s.max_versions = maxv;
	s.ttl = ttl;
	snprintf(s.locality_group, sizeof(s.locality_group), "%s", group);
	s.compression = compression;
	return s;
}

static int settings_eq(const struct tbl_family_settings *a, const struct tbl_family_settings *b)
{
	return a->type == b->type && a->max_versions == b->max_versions && a->ttl == b->ttl &&
	       !strcmp(a->locality_group, b->locality_group) && a->compression == b->compression;
}

/* The names joined with commas, for comparing lists. */
static char *joined(char **names, size_t n)
{
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_append(&b, ",", 1);
		buf_append(&b, names[i], strlen(names[i]));
	}
	buf_append(&b, "", 1);
	return b.data;
}

static char *table_list(struct tbl_db *db)
{
	char **names, *s;
	size_t n;

	if (tbl_list_tables(db, &names, &n) < 0)
		return xstrdup("(error)");
	s = joined(names, n);
	tbl_free_names(names, n);
	return s;
}

static char *family_list(struct tbl_db *db, const char *table)
{
	char **names, *s;
	size_t n;
	int r = tbl_list_families(db, table, &names, &n);

	if (r < 0)
		return xasprintf("(error %d)", r);
	s = joined(names, n);
	tbl_free_names(names, n);
	return s;
}

/* Is there a live kv tree of that name? */
static int tree_exists(struct tbl_db *db, const char *name)
{
	char **names;
	size_t n;
	int found = 0;

	if (kv_tree_list(tbl_kv(db), &names, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(names[i], name);
	tbl_free_names(names, n);
	return found;
}

/* Ids and trees, read from the in-memory schema. */
static uint32_t table_id(struct tbl_db *db, const char *table)
{
	struct tsch_table *t;
	uint32_t id;

	if (tsch_lock_table(db, table, &t) < 0)
		return 0;
	id = t->id;
	tsch_unlock(db);
	return id;
}

/* A family's id (-1 if none) and its group's id and tree. */
static int family_info(struct tbl_db *db, const char *table, const char *family,
		       uint32_t *group, struct kv_tree **tree)
{
	struct tsch_table *t;
	struct tsch_family *f;
	int id = -1;

	if (tsch_lock_table(db, table, &t) < 0)
		return -1;
	f = tsch_find_family(t, family);
	if (f) {
		id = f->id;
		if (group)
			*group = f->group->id;
		if (tree)
			*tree = f->group->tree;
	}
	tsch_unlock(db);
	return id;
}

static char *lg_name(uint32_t id)
{
	return xasprintf("lg-%u", id);
}

static int put_str(struct tbl_db *db, const char *table, const char *row, const char *family,
		   const char *q, uint64_t ts, const char *val)
{
	struct cell_value v;

	v.type = CELL_STRING;
	v.v.data = slice_str(val);
	return tbl_put(db, table, row, strlen(row), family, q, strlen(q), ts, &v, 0);
}

/* ------------------------------------------------------------ tables */

static void test_table_names(void)
{
	char *dir = fresh_dir("names");
	struct tbl_db *db = open_db(dir);
	char name[TBL_MAX_NAME + 2];
	static const char *const good[] = {
		"a", "plane", "A-Z_a.z#0$9", "...", ".a", "-", "#$", "webtable",
	};
	static const char *const bad[] = {
		"", ".", "..", "a/b", "a b", "caf\xc3\xa9", "a@b", "a%b", "a\tb", "a:b", "a*",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		is_int(tbl_create_table(db, good[i]), 0, "table name \"%s\" is accepted", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		is_int(tbl_create_table(db, bad[i]), -EINVAL, "table name \"%s\" is refused with "
		       "-EINVAL", bad[i]);
		is_int(tbl_table_exists(db, bad[i]), -ENOENT, "and \"%s\" does not exist", bad[i]);
	}
	memset(name, 'n', TBL_MAX_NAME);
	name[TBL_MAX_NAME] = 0;
	is_int(tbl_create_table(db, name), 0, "a table name of 511 characters is accepted");
	is_int(tbl_table_exists(db, name), 0, "and the table exists");
	name[TBL_MAX_NAME] = 'n';
	name[TBL_MAX_NAME + 1] = 0;
	is_int(tbl_create_table(db, name), -ENAMETOOLONG, "a table name of 512 characters is "
	       "refused with -ENAMETOOLONG");
	ok(msg_has("table name"), "and the message says it is about a table name");

	is_int(tbl_create_table(db, "plane"), -EEXIST, "creating an existing table is -EEXIST");
	ok(msg_has("plane"), "and the message names the table");
	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a missing table does not exist");
	ok(msg_has("nosuch"), "and the message names it");
	is_int(tbl_drop_table(db, "nosuch", 0), -ENOENT, "dropping a missing table is -ENOENT");
	is_int(tbl_drop_table(db, "nosuch", 1), -ENOENT, "also with force");
	close_db(db);
	free(dir);
}

static void test_table_list_and_drop(void)
{
	char *dir = fresh_dir("list");
	struct tbl_db *db = open_db(dir);
	char *s;

	s = table_list(db);
	is_str(s, "", "a new database has no tables");
	free(s);
	tbl_create_table(db, "webtable");
	tbl_create_table(db, "STC");
	tbl_create_table(db, "aircraft");
	tbl_create_table(db, "a");
	tbl_create_table(db, "b.c");
	s = table_list(db);
	is_str(s, "STC,a,aircraft,b.c,webtable", "tables are listed in byte order");
	free(s);
	is_int(tbl_drop_table(db, "aircraft", 0), 0, "an empty table drops without force");
	is_int(tbl_table_exists(db, "aircraft"), -ENOENT, "and no longer exists");
	s = table_list(db);
	is_str(s, "STC,a,b.c,webtable", "and is no longer listed");
	free(s);
	is_int(tbl_create_table(db, "aircraft"), 0, "a dropped table's name can be used again");
	is_int(tbl_drop_table(db, "aircraft", 1), 0, "an empty table drops with force too");
	close_db(db);
	free(dir);
}

/* ------------------------------------------------------------ families */

static void test_family_names_and_settings(void)
{
	char *dir = fresh_dir("families");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s, got, def;
	char name[TBL_MAX_FAMILY_NAME + 2];
	static const char *const bad[] = {
		"", ".", "..", "a/b", "a b", "a#b", "a$b", "\xc3\xa9", "a:b",
	};
	struct tsch_table *t;
	int old_id = -1;
	char *list;

	tbl_create_table(db, "t");
	tbl_family_settings_init(&def);
	ok(def.type == CELL_STRING && def.max_versions == 0 && def.ttl == 0 &&
	   !strcmp(def.locality_group, "default") && def.compression == 1,
	   "default settings: string, unlimited versions, forever, group default, level 1");

	is_int(tbl_add_family(db, "t", "meta", &def), 0, "a family with default settings is added");
	is_int(tbl_get_family(db, "t", "meta", &got), 0, "and can be read back");
	ok(settings_eq(&got, &def), "with the settings given");
	is_int(tbl_add_family(db, "t", "meta", &def), -EEXIST, "adding it again is -EEXIST");
	ok(msg_has("meta") && msg_has("t"), "and the message names the table and family");
	is_int(tbl_add_family(db, "nosuch", "meta", &def), -ENOENT,
	       "adding a family to a missing table is -ENOENT");
	ok(msg_has("nosuch"), "and the message names the table");

	s = settings(CELL_I64, 3, 86400, "lg.stats-1", 7);
	is_int(tbl_add_family(db, "t", "Flight_2.x-y", &s), 0, "a family with every setting is "
	       "added");
	is_int(tbl_get_family(db, "t", "Flight_2.x-y", &got), 0, "and read back");
	ok(settings_eq(&got, &s), "type, max_versions, ttl, group and compression round-trip");

	memset(name, 'f', TBL_MAX_FAMILY_NAME);
	name[TBL_MAX_FAMILY_NAME] = 0;
	is_int(tbl_add_family(db, "t", name, &def), 0, "a family name of 64 characters is "
	       "accepted");
	name[TBL_MAX_FAMILY_NAME] = 'f';
	name[TBL_MAX_FAMILY_NAME + 1] = 0;
	is_int(tbl_add_family(db, "t", name, &def), -ENAMETOOLONG, "one of 65 characters is "
	       "refused with -ENAMETOOLONG");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(tbl_add_family(db, "t", bad[i], &def), -EINVAL,
		       "family name \"%s\" is refused with -EINVAL", bad[i]);

	s = def;
	s.type = CELL_INVALID;
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "type 0 is refused");
	s.type = (enum cell_type)(CELL_TYPE_MAX + 1);
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "type 9 is refused");
	ok(msg_has("x") && msg_has("type"), "and the message names the family and the type");
	s = def;
	s.compression = -1;
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "compression -1 is refused");
	s.compression = 23;
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "compression 23 is refused");
	s = def;
	s.ttl = UINT64_MAX / 1000000u;
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "a ttl whose microseconds overflow is "
	       "refused");
	s = def;
	s.locality_group[0] = 0;
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "an empty locality group is refused");
	snprintf(s.locality_group, sizeof(s.locality_group), "a/b");
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "locality group \"a/b\" is refused");
	memset(s.locality_group, 'g', sizeof(s.locality_group));
	is_int(tbl_add_family(db, "t", "x", &s), -EINVAL, "an unterminated locality group is "
	       "refused");
	is_int(tbl_get_family(db, "t", "x", &got), -ENOENT, "no refused family was added");

	for (int type = CELL_STRING; type <= CELL_TYPE_MAX; type++) {
		char fam[32];

		snprintf(fam, sizeof(fam), "type%d", type);
		s = settings((enum cell_type)type, 0, 0, "default", type % 2 ? 0 : 22);
		tbl_add_family(db, "t", fam, &s);
		ok(tbl_get_family(db, "t", fam, &got) == 0 && (int)got.type == type &&
		   got.compression == s.compression, "a family of type %s keeps its type",
		   cell_type_name((enum cell_type)type));
	}

	list = family_list(db, "t");
	is_str(list, "Flight_2.x-y,"
	       "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff,"
	       "meta,type1,type2,type3,type4,type5,type6,type7,type8",
	       "families are listed in byte order");
	free(list);
	is_int(tbl_list_families(db, "nosuch", NULL, NULL), -ENOENT,
	       "listing the families of a missing table is -ENOENT");

	/* alter */
	s = settings(CELL_F64, 5, 3600, "lg.stats-1", 3);
	is_int(tbl_alter_family(db, "t", "Flight_2.x-y", &s), 0, "an empty family is altered");
	tbl_get_family(db, "t", "Flight_2.x-y", &got);
	ok(settings_eq(&got, &s), "and its new settings are read back");
	s = settings(CELL_BYTES, 0, 0, "other", 0);
	is_int(tbl_alter_family(db, "t", "Flight_2.x-y", &s), 0, "an empty family moves to a new "
	       "locality group");
	tbl_get_family(db, "t", "Flight_2.x-y", &got);
	ok(settings_eq(&got, &s), "and is in it");
	s.type = CELL_INVALID;
	is_int(tbl_alter_family(db, "t", "Flight_2.x-y", &s), -EINVAL, "altering to type 0 is "
	       "refused");
	tbl_get_family(db, "t", "Flight_2.x-y", &got);
	is_int(got.type, CELL_BYTES, "and changes nothing");
	is_int(tbl_alter_family(db, "t", "nosuch", &def), -ENOENT, "altering a missing family is "
	       "-ENOENT");
	ok(msg_has("nosuch"), "and the message names it");

	/* drop */
	is_int(tbl_drop_family(db, "t", "meta", 0), 0, "an empty family drops without force");
	is_int(tbl_get_family(db, "t", "meta", &got), -ENOENT, "and is gone");
	list = family_list(db, "t");
	ok(!strstr(list, "meta"), "and is no longer listed");
	free(list);
	is_int(tbl_drop_family(db, "t", "meta", 0), -ENOENT, "dropping it again is -ENOENT");
	is_int(tbl_alter_family(db, "t", "meta", &def), -ENOENT, "altering it is -ENOENT");
	tsch_lock_table(db, "t", &t);
	for (size_t i = 0; i < t->nfamilies; i++)
		if (!strcmp(t->families[i]->name, "meta"))
			old_id = t->families[i]->id;
	tsch_unlock(db);
	is_int(tbl_add_family(db, "t", "meta", &def), 0, "a dropped family's name can be added "
	       "again");
	ok(old_id >= 0 && family_info(db, "t", "meta", NULL, NULL) > old_id,
	   "and gets a new id (%d, the dropped one had %d)",
	   family_info(db, "t", "meta", NULL, NULL), old_id);
	close_db(db);
	free(dir);
}

/* ------------------------------------------------------------ persistence */

static void test_persistence(void)
{
	char *dir = fresh_dir("persist");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s[4], got;
	const char *names[4] = { "anchor", "contents", "language", "meta" };
	uint32_t dropped_table_id, web_id, group_before, group_after;
	int dropped_family_id, new_family_id;
	char *list;

	s[0] = settings(CELL_STRING, 0, 0, "default", 1);
	s[1] = settings(CELL_BYTES, 3, 0, "contents", 19);
	s[2] = settings(CELL_BOOLEAN, UINT32_MAX, 10ull * 365 * 86400, "default", 0);
	s[3] = settings(CELL_F32, 1, 60, "small.group", 22);
	tbl_create_table(db, "gone");
	dropped_table_id = table_id(db, "gone");
	tbl_create_table(db, "com.github");
	for (int i = 0; i < 4; i++)
		tbl_add_family(db, "com.github", names[i], &s[i]);
	tbl_add_family(db, "com.github", "old", &s[0]);
	dropped_family_id = family_info(db, "com.github", "old", NULL, NULL);
	tbl_drop_family(db, "com.github", "old", 0);
	tbl_add_family(db, "gone", "x", &s[1]);
	family_info(db, "gone", "x", &group_before, NULL);
	tbl_drop_table(db, "gone", 0);
	web_id = table_id(db, "com.github");
	close_db(db);

	db = open_db(dir);
	list = table_list(db);
	is_str(list, "com.github", "after a reopen the tables are there, the dropped one is not");
	free(list);
	is_int(table_id(db, "com.github"), web_id, "the table keeps its id");
	list = family_list(db, "com.github");
	is_str(list, "anchor,contents,language,meta", "the families are there, the dropped one "
	       "is not");
	free(list);
	for (int i = 0; i < 4; i++) {
		ok(tbl_get_family(db, "com.github", names[i], &got) == 0 &&
		   settings_eq(&got, &s[i]), "family %s keeps every setting", names[i]);
	}
	is_int(tbl_get_family(db, "com.github", "old", &got), -ENOENT,
	       "the dropped family stays dropped");
	is_int(tbl_add_family(db, "com.github", "old", &s[0]), 0, "its name is free");
	new_family_id = family_info(db, "com.github", "old", NULL, NULL);
	ok(new_family_id > dropped_family_id, "a new family's id (%d) is above the dropped "
	   "family's (%d)", new_family_id, dropped_family_id);
	tbl_create_table(db, "new");
	ok(table_id(db, "new") > dropped_table_id && table_id(db, "new") > web_id,
	   "a new table's id (%u) is above every earlier one, dropped ones included",
	   table_id(db, "new"));
	tbl_add_family(db, "new", "x", &s[1]);
	family_info(db, "new", "x", &group_after, NULL);
	ok(group_after > group_before, "a new locality group's id (%u) is above a dropped "
	   "table's group's (%u)", group_after, group_before);
	close_db(db);

	/* and once more: what was created after a reopen persists too */
	db = open_db(dir);
	list = family_list(db, "com.github");
	is_str(list, "anchor,contents,language,meta,old", "a family re-added after a reopen "
	       "persists");
	free(list);
	is_int(family_info(db, "com.github", "old", NULL, NULL), new_family_id,
	       "with its new id");
	is_int(tbl_table_exists(db, "new"), 0, "so does a table created after a reopen");
	close_db(db);
	free(dir);
}

/* Damaged schema records make tbl_open fail with -EUCLEAN, never crash. */
static void test_damaged_schema(void)
{
	static const struct {
		const char *what;
		const char *key;
		size_t klen;
		const char *val;
		size_t vlen;
	} cases[] = {
		{ "a table record with a short value", "\0\0\0\0Tt", 6, "\1\0\0", 3 },
		{ "a table record with id 0", "\0\0\0\0Tt", 6, "\0\0\0\0", 4 },
		{ "a table record with an id not below the counter", "\0\0\0\0Tt", 6,
		  "\x09\0\0\0", 4 },
		{ "a table record with an invalid name", "\0\0\0\0Ta/b", 8, "\1\0\0\0", 4 },
		{ "a family record of a missing table", "\0\0\0\0F\x07\0\0\0f", 10,
		  "\0\0\1\0\0\1\0\7default", 15 },
		{ "a family record with a bad type", "\0\0\0\0F\1\0\0\0f", 10,
		  "\0\0\x09\0\0\1\0\7default", 15 },
		{ "a family record in a group without a record", "\0\0\0\0F\1\0\0\0f", 10,
		  "\0\0\1\0\0\1\0\4none", 12 },
		{ "a family record with bytes left over", "\0\0\0\0F\1\0\0\0f", 10,
		  "\0\0\1\0\0\1\0\7defaultX", 16 },
		{ "a truncated family record", "\0\0\0\0F\1\0\0\0f", 10, "\0\0\1\x80", 4 },
		{ "a counter record of the wrong size", "\0\0\0\0N", 5, "\2\0\0\0", 4 },
		{ "two table records with one id", "\0\0\0\0Tu", 6, "\1\0\0\0", 4 },
		{ "a group record with an id not below the counter", "\0\0\0\0G\1\0\0\0g", 10,
		  "\1\0\0\0", 4 },
		{ "a group record named default", "\0\0\0\0G\1\0\0\0default", 16,
		  "\0\0\0\0", 4 },
		{ "a dropped family's record under a live key", "\0\0\0\0F\1\0\0\0f", 10,
		  "\0\0\1\0\0\1\1\7default", 15 },
		{ "a family record with the reserved id 0xFFFF", "\0\0\0\0F\1\0\0\0f", 10,
		  "\xff\xff\1\0\0\1\0\7default", 15 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = fresh_dir("damaged");
		struct tbl_db *db = open_db(dir);
		struct tbl_options o;
		struct kv_db *kv;
		int r;

		/* one valid table "t" with id 1, counters 2 / 1 */
		tbl_create_table(db, "t");
		close_db(db);
		kv_options_init(&o.kv);
		o.kv.log = quiet_log;
		r = kv_open(dir, &o.kv, &kv);
		if (r == 0) {
			kv_put(kv, cases[i].key, cases[i].klen, cases[i].val, cases[i].vlen, 0);
			kv_close(kv);
		}
		tbl_options_init(&o);
		o.kv.log = quiet_log;
		db = NULL;
		r = tbl_open(dir, &o, &db);
		is_int(r, -EUCLEAN, "%s: tbl_open is -EUCLEAN", cases[i].what);
		ok(db == NULL && msg_has("schema"), "and says the schema is damaged (%s)",
		   kv_strerror(r));
		if (db)
			tbl_close(db);
		free(dir);
	}
}

/* ------------------------------------------------------------ locality groups */

static void test_locality_groups(void)
{
	char *dir = fresh_dir("groups");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s;
	struct kv_stats st;
	uint32_t g1, g2, gdef;
	char *n1, *n2, *orphan;
	struct kv_db *kv;
	struct kv_tree *tree;
	struct tbl_options o;
	uint64_t plain, packed;
	char val[1024];
	int r;

	tbl_create_table(db, "web");
	is_int(tbl_add_family(db, "web", "language", &(struct tbl_family_settings){ 0 }), -EINVAL,
	       "all-zero settings (type 0, no group) are refused");
	s = settings(CELL_STRING, 0, 0, "default", 1);
	tbl_add_family(db, "web", "language", &s);
	family_info(db, "web", "language", &gdef, NULL);
	is_int(gdef, 0, "a family of group \"default\" is in group 0, the kv default tree");
	s = settings(CELL_BYTES, 0, 0, "contents", 0);
	tbl_add_family(db, "web", "contents", &s);
	tbl_add_family(db, "web", "contents2", &s);
	s = settings(CELL_STRING, 0, 0, "anchors", 1);
	tbl_add_family(db, "web", "anchor", &s);
	family_info(db, "web", "contents", &g1, NULL);
	family_info(db, "web", "anchor", &g2, NULL);
	ok(g1 != 0 && g2 != 0 && g1 != g2, "two new groups get two new ids (%u, %u)", g1, g2);
	is_int(family_info(db, "web", "contents2", &gdef, NULL) >= 0 && gdef == g1, 1,
	       "a second family of a group shares its id");
	n1 = lg_name(g1);
	n2 = lg_name(g2);
	is_int(tree_exists(db, n1), 1, "kv_tree_list shows %s", n1);
	is_int(tree_exists(db, n2), 1, "kv_tree_list shows %s", n2);
	close_db(db);
	db = open_db(dir);
	is_int(tree_exists(db, n1), 1, "the group trees are there after a reopen");
	is_int(family_info(db, "web", "contents", &gdef, &tree) >= 0 && gdef == g1 && tree, 1,
	       "and the family is in its group, with a tree handle");

	/* compression: the highest level of the group's families, applied when altered */
	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (char)('a' + i % 3);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < 400; i++) {
		char row[32];

		snprintf(row, sizeof(row), "r%04d", i);
		put_str(db, "web", row, "contents", "html", 1000, val);
	}
	kv_compact_range_tree(tbl_kv(db), tree, NULL, 0, NULL, 0);
	kv_get_stats(tbl_kv(db), &st);
	plain = st.disk_bytes;
	s = settings(CELL_BYTES, 0, 0, "contents", 0);
	s.compression = 9;
	tbl_alter_family(db, "web", "contents2", &s);
	kv_compact_range_tree(tbl_kv(db), tree, NULL, 0, NULL, 0);
	kv_get_stats(tbl_kv(db), &st);
	packed = st.disk_bytes;
	diag("400 compressible 1 KiB values: %llu disk bytes at level 0, %llu after another "
	     "family of the group asks for 9", (unsigned long long)plain,
	     (unsigned long long)packed);
	ok(plain > 400 * 1000 && packed < plain / 4, "raising one family's compression "
	   "recompresses the whole group's tree at the next compaction");

	is_int(tbl_drop_table(db, "web", 1), 0, "the table drops with force");
	is_int(tree_exists(db, n1), 0, "and %s is gone from kv_tree_list", n1);
	is_int(tree_exists(db, n2), 0, "and so is %s", n2);
	close_db(db);

	/* orphans: a lg tree no group refers to is dropped at open, the others stay */
	db = open_db(dir);
	tbl_create_table(db, "keep");
	s = settings(CELL_STRING, 0, 0, "kept", 1);
	tbl_add_family(db, "keep", "f", &s);
	family_info(db, "keep", "f", &g1, NULL);
	free(n1);
	n1 = lg_name(g1);
	close_db(db);
	kv_options_init(&o.kv);
	o.kv.log = quiet_log;
	orphan = lg_name(g1 + 1000);
	r = kv_open(dir, &o.kv, &kv);
	if (r == 0) {
		r = kv_tree_open(kv, orphan, NULL, &tree);
		if (r == 0) {
			struct kv_batch *b = kv_batch_new();

			kv_batch_put_tree(b, tree, "k", 1, "v", 1);
			r = kv_write(kv, b, 0);
			kv_batch_free(b);
		}
		kv_close(kv);
	}
	is_int(r, 0, "a stray tree %s is made behind the table layer's back", orphan);
	db = open_db(dir);
	is_int(tree_exists(db, orphan), 0, "tbl_open drops the orphaned tree %s", orphan);
	is_int(tree_exists(db, n1), 1, "and keeps the referenced tree %s", n1);
	close_db(db);
	free(orphan);
	free(n1);
	free(n2);
	free(dir);
}

/* ------------------------------------------------------------ dropping tables with data */

/* Count the kv keys in [prefix, successor(prefix)) of tree. */
static long count_keys(struct tbl_db *db, struct kv_tree *tree, struct slice prefix)
{
	struct buf end = BUF_INIT;
	struct kv_read_options ro = { .tree = tree };
	struct kv_iter *it;
	long n = 0;

	tkey_successor(&end, prefix);
	ro.lower = prefix.data;
	ro.lower_len = prefix.len;
	ro.upper = end.data;
	ro.upper_len = end.len;
	it = kv_iter_new(tbl_kv(db), &ro);
	for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it))
		n++;
	if (kv_iter_status(it))
		n = -1;
	kv_iter_free(it);
	buf_free(&end);
	return n;
}

static int scan_rows(struct tbl_db *db, const char *table)
{
	struct tbl_scan *s;
	const struct tbl_row *row;
	int n = 0, r;

	r = tbl_scan_new(db, table, NULL, &s);
	if (r < 0)
		return r;
	while ((r = tbl_scan_next(s, &row)) == 1)
		n++;
	tbl_scan_free(s);
	return r < 0 ? r : n;
}

/* Fill table t (families small in default, big in group "big") with rows; the WAL bytes it took. */
static uint64_t fill(struct tbl_db *db, const char *table, long rows)
{
	struct kv_stats a, b;
	char val[200];

	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	kv_get_stats(tbl_kv(db), &a);
	for (long i = 0; i < rows; i++) {
		char row[32];

		snprintf(row, sizeof(row), "row%08ld", i);
		put_str(db, table, row, "small", "q", TBL_TS_NOW, "x");
		put_str(db, table, row, "big", "q", TBL_TS_NOW, val);
	}
	kv_get_stats(tbl_kv(db), &b);
	return b.bytes_written_wal - a.bytes_written_wal;
}

/* The WAL bytes of dropping table with force. */
static uint64_t drop_cost(struct tbl_db *db, const char *table, int *r)
{
	struct kv_stats a, b;

	kv_get_stats(tbl_kv(db), &a);
	*r = tbl_drop_table(db, table, 1);
	kv_get_stats(tbl_kv(db), &b);
	return b.bytes_written_wal - a.bytes_written_wal;
}

static void test_drop_with_data(void)
{
	char *dir = fresh_dir("drop");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings small = settings(CELL_STRING, 0, 0, "default", 1);
	struct tbl_family_settings big = settings(CELL_STRING, 0, 0, "big", 1);
	long rows = scaled(3000, 100);
	uint64_t filled, cost_big, cost_small;
	struct buf prefix = BUF_INIT;
	struct kv_tree *tree;
	uint32_t id, gid;
	char *gname;
	int r;

	tbl_create_table(db, "tiny");
	tbl_add_family(db, "tiny", "small", &small);
	tbl_add_family(db, "tiny", "big", &big);
	fill(db, "tiny", 1);
	tbl_create_table(db, "huge");
	tbl_add_family(db, "huge", "small", &small);
	tbl_add_family(db, "huge", "big", &big);
	filled = fill(db, "huge", rows);
	is_int(scan_rows(db, "huge"), rows, "the table holds %ld rows", rows);
	id = table_id(db, "huge");
	family_info(db, "huge", "big", &gid, &tree);
	gname = lg_name(gid);
	tkey_table_prefix(&prefix, id);
	/* some of it in SSTables, some in the memtable */
	kv_flush(tbl_kv(db));
	fill(db, "huge", rows / 10);

	is_int(tbl_drop_table(db, "huge", 0), -ENOTEMPTY, "a table with cells does not drop "
	       "without force");
	ok(msg_has("huge"), "and the message names it");
	cost_small = drop_cost(db, "tiny", &r);
	is_int(r, 0, "a one-row table drops with force");
	cost_big = drop_cost(db, "huge", &r);
	is_int(r, 0, "a %ld-row table drops with force", rows);
	diag("filling wrote %llu WAL bytes; dropping wrote %llu (1 row) and %llu (%ld rows)",
	     (unsigned long long)filled, (unsigned long long)cost_small,
	     (unsigned long long)cost_big, rows);
	ok(cost_big < 512 && cost_big == cost_small, "the drop is one small batch whatever the "
	   "table's size");
	is_int(count_keys(db, NULL, buf_slice(&prefix)), 0, "no kv key of the table is left "
	       "visible in the default tree");
	is_int(tree_exists(db, gname), 0, "its locality group's tree is dropped");

	tbl_create_table(db, "huge");
	tbl_add_family(db, "huge", "small", &small);
	tbl_add_family(db, "huge", "big", &big);
	is_int(scan_rows(db, "huge"), 0, "created again with the same name, the table is empty");
	ok(table_id(db, "huge") != id, "and has a new id");
	close_db(db);
	db = open_db(dir);
	is_int(scan_rows(db, "huge"), 0, "also after a reopen");
	close_db(db);
	buf_free(&prefix);
	free(gname);
	free(dir);
}

/* ------------------------------------------------------------ -ENOTEMPTY */

static void test_not_empty(void)
{
	char *dir = fresh_dir("notempty");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s = settings(CELL_STRING, 0, 0, "default", 1), got;
	struct tbl_mutation del = { .op = TBL_DELETE_CELL, .family = "meta",
				    .qualifier = "model", .qualifier_len = 5 };
	struct tbl_row *row;
	char *list;

	tbl_create_table(db, "plane");
	tbl_add_family(db, "plane", "meta", &s);
	tbl_add_family(db, "plane", "flight", &s);
	is_int(put_str(db, "plane", "plane#TF-FIR", "meta", "model", TBL_TS_NOW, "A321"), 0,
	       "a cell is written");
	is_int(tbl_drop_family(db, "plane", "meta", 0), -ENOTEMPTY, "a family with a cell does "
	       "not drop without force");
	ok(msg_has("meta"), "and the message names the family");
	is_int(tbl_drop_family(db, "plane", "flight", 0), 0, "an empty family of the same table "
	       "drops");
	s = settings(CELL_STRING, 0, 0, "elsewhere", 1);
	is_int(tbl_alter_family(db, "plane", "meta", &s), -ENOTEMPTY, "a family with a cell does "
	       "not move to another locality group");
	tbl_get_family(db, "plane", "meta", &got);
	is_str(got.locality_group, "default", "and stays in its group");
	s = settings(CELL_I64, 4, 100, "default", 5);
	is_int(tbl_alter_family(db, "plane", "meta", &s), 0, "its other settings change");

	is_int(tbl_mutate_row(db, "plane", "plane#TF-FIR", 12, &del, 1, 0, NULL), 0,
	       "the cell is deleted");
	is_int(tbl_drop_family(db, "plane", "meta", 0), 0, "then the family drops without force");
	tbl_add_family(db, "plane", "meta", &s);
	put_str(db, "plane", "plane#TF-FIR", "meta", "model", TBL_TS_NOW, "A321");
	tbl_add_family(db, "plane", "other", &s);
	put_str(db, "plane", "plane#TF-FIR", "other", "x", TBL_TS_NOW, "1");
	is_int(tbl_drop_family(db, "plane", "meta", 1), 0, "a family with cells drops with force");
	is_int(tbl_get_row(db, "plane", "plane#TF-FIR", 12,
			   &(struct tbl_read){ .families = (const char *const[]){ "other" },
					       .nfamilies = 1 }, &row), 0,
	       "the row's other family is still read");
	if (row) {
		ok(row->ncells == 1 && !strcmp(row->cells[0].family, "other"),
		   "and the dropped family's cell is invisible at once");
		tbl_row_free(row);
	}
	tbl_add_family(db, "plane", "meta", &s);
	is_int(tbl_get_row(db, "plane", "plane#TF-FIR", 12,
			   &(struct tbl_read){ .families = (const char *const[]){ "meta" },
					       .nfamilies = 1 }, &row), -ENOENT,
	       "a new family of the same name does not see the dropped one's cells");
	list = family_list(db, "plane");
	is_str(list, "meta,other", "the families listed are the live ones");
	free(list);
	close_db(db);
	free(dir);
}

/* ------------------------------------------------------------ the GC filter */

struct version {
	char row[32];
	uint16_t family;
	char qual[32];
	uint64_t ts;
};

/* Every kv key of table id in tree, decoded; returns the number (or -1). */
static long raw_versions(struct tbl_db *db, struct kv_tree *tree, uint32_t id,
			 struct version *out, long max)
{
	struct buf prefix = BUF_INIT, end = BUF_INIT, scratch = BUF_INIT;
	struct kv_read_options ro = { .tree = tree };
	struct kv_iter *it;
	long n = 0;

	tkey_table_prefix(&prefix, id);
	tkey_successor(&end, buf_slice(&prefix));
	ro.lower = prefix.data;
	ro.lower_len = prefix.len;
	ro.upper = end.data;
	ro.upper_len = end.len;
	it = kv_iter_new(tbl_kv(db), &ro);
	for (kv_iter_seek_first(it); kv_iter_valid(it) && n >= 0; kv_iter_next(it)) {
		size_t klen;
		const char *k = kv_iter_key(it, &klen);
		struct tkey tk;

		if (tkey_decode(slice_make(k, klen), &tk, &scratch) < 0 || n >= max ||
		    tk.row.len >= 32 || tk.qualifier.len >= 32) {
			n = -1;
			break;
		}
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(out[n].row, tk.row.data, tk.row.len);
		out[n].family = tk.family;
		memcpy(out[n].qual, tk.qualifier.data, tk.qualifier.len);
		out[n].ts = tk.ts;
		n++;
	}
	if (kv_iter_status(it))
		n = -1;
	kv_iter_free(it);
	buf_free(&prefix);
	buf_free(&end);
	buf_free(&scratch);
	return n;
}

/* The timestamps stored for one column, newest first, as "ts,ts,..." */
static char *column_versions(const struct version *v, long n, const char *row, uint16_t family,
			     const char *qual)
{
	struct buf b = BUF_INIT;

	for (long i = 0; i < n; i++) {
		char num[32];

		if (strcmp(v[i].row, row) || v[i].family != family || strcmp(v[i].qual, qual))
			continue;
		snprintf(num, sizeof(num), "%s%llu", b.len ? "," : "", (unsigned long long)v[i].ts);
		buf_append(&b, num, strlen(num));
	}
	buf_append(&b, "", 1);
	return b.data;
}

static long count_family(const struct version *v, long n, uint16_t family)
{
	long c = 0;

	for (long i = 0; i < n; i++)
		c += v[i].family == family;
	return c;
}

#define MAXRAW 4096

/* max_versions and ttl in one group tree (tree NULL: the default one). */
static void gc_policies_in(const char *group)
{
	char *dir = fresh_dir("gc");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings two = settings(CELL_STRING, 2, 0, group, 1);
	struct tbl_family_settings hour = settings(CELL_STRING, 0, 3600, group, 1);
	struct tbl_family_settings all = settings(CELL_STRING, 0, 0, group, 1);
	struct version *v = xcalloc(MAXRAW, sizeof(*v));
	uint64_t now = tsch_wall(), old = now - 2 * 3600 * UINT64_C(1000000);
	int fam2, famh, fama;
	struct kv_tree *tree;
	uint32_t id;
	long n;
	char *s;

	tbl_create_table(db, "sensor");
	tbl_add_family(db, "sensor", "two", &two);
	tbl_add_family(db, "sensor", "hour", &hour);
	tbl_add_family(db, "sensor", "all", &all);
	fam2 = family_info(db, "sensor", "two", NULL, &tree);
	famh = family_info(db, "sensor", "hour", NULL, NULL);
	fama = family_info(db, "sensor", "all", NULL, NULL);
	id = table_id(db, "sensor");
	for (int r = 0; r < 3; r++) {
		char row[32];

		snprintf(row, sizeof(row), "s%d", r);
		for (uint64_t ts = 1000; ts <= 5000; ts += 1000) {
			put_str(db, "sensor", row, "two", "t", ts, "20.5");
			put_str(db, "sensor", row, "two", "u", ts + 1, "20.5");
			put_str(db, "sensor", row, "all", "t", ts, "1");
		}
		put_str(db, "sensor", row, "hour", "t", old, "old");
		put_str(db, "sensor", row, "hour", "t", old + 1, "old");
		put_str(db, "sensor", row, "hour", "t", now, "new");
	}
	n = raw_versions(db, tree, id, v, MAXRAW);
	is_int(n, 3 * (10 + 5 + 3), "[%s] before compaction every version is stored", group);

	kv_compact_range_tree(tbl_kv(db), tree, NULL, 0, NULL, 0);
	n = raw_versions(db, tree, id, v, MAXRAW);
	is_int(n, 3 * (4 + 5 + 1), "[%s] after compaction the garbage is gone", group);
	s = column_versions(v, n, "s1", (uint16_t)fam2, "t");
	is_str(s, "5000,4000", "[%s] max_versions 2: the two newest versions stay", group);
	free(s);
	s = column_versions(v, n, "s2", (uint16_t)fam2, "u");
	is_str(s, "5001,4001", "[%s] per column", group);
	free(s);
	s = column_versions(v, n, "s0", (uint16_t)fama, "t");
	is_str(s, "5000,4000,3000,2000,1000", "[%s] max_versions 0 keeps every version", group);
	free(s);
	s = column_versions(v, n, "s0", (uint16_t)famh, "t");
	{
		char want[32];

		snprintf(want, sizeof(want), "%llu", (unsigned long long)now);
		is_str(s, want, "[%s] ttl: versions older than the ttl are gone, a new one stays",
		       group);
	}
	free(s);

	/* a dropped family's cells go at the next compaction, the others' stay */
	tbl_drop_family(db, "sensor", "all", 1);
	kv_compact_range_tree(tbl_kv(db), tree, NULL, 0, NULL, 0);
	n = raw_versions(db, tree, id, v, MAXRAW);
	is_int(count_family(v, n, (uint16_t)fama), 0, "[%s] a dropped family's cells are "
	       "physically gone after compaction", group);
	is_int(count_family(v, n, (uint16_t)fam2), 3 * 4, "[%s] and the other families' stay",
	       group);

	/* GC survives a reopen: the filter is registered again on every tree */
	put_str(db, "sensor", "s0", "two", "t", 6000, "x");
	close_db(db);
	db = open_db(dir);
	family_info(db, "sensor", "two", NULL, &tree);
	kv_compact_range_tree(tbl_kv(db), tree, NULL, 0, NULL, 0);
	n = raw_versions(db, tree, id, v, MAXRAW);
	s = column_versions(v, n, "s0", (uint16_t)fam2, "t");
	is_str(s, "6000,5000", "[%s] after a reopen the filter still applies max_versions", group);
	free(s);
	close_db(db);
	free(v);
	free(dir);
}

/*
 * A version deleted by a tombstone the filter does not see as such (newer
 * than a snapshot) must not count toward max_versions: the older version it
 * uncovers is visible and stays.
 */
static void test_gc_hidden_version(void)
{
	char *dir = fresh_dir("gchidden");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings two = settings(CELL_STRING, 2, 0, "default", 1);
	struct version *v = xcalloc(MAXRAW, sizeof(*v));
	struct tbl_mutation del = { .op = TBL_DELETE_VERSION, .family = "f", .qualifier = "q",
				    .qualifier_len = 1, .ts = 3000 };
	const struct kv_snapshot *snap;
	struct tbl_row *row = NULL;
	int fam;
	uint32_t id;
	long n;
	char *s;

	tbl_create_table(db, "t");
	tbl_add_family(db, "t", "f", &two);
	fam = family_info(db, "t", "f", NULL, NULL);
	id = table_id(db, "t");
	put_str(db, "t", "r", "f", "q", 1000, "v1");
	put_str(db, "t", "r", "f", "q", 2000, "v2");
	put_str(db, "t", "r", "f", "q", 3000, "v3");
	kv_flush(tbl_kv(db));
	snap = kv_snapshot_new(tbl_kv(db));
	tbl_mutate_row(db, "t", "r", 1, &del, 1, 0, NULL);
	kv_compact_range(tbl_kv(db), NULL, 0, NULL, 0);
	kv_snapshot_release(tbl_kv(db), snap);
	n = raw_versions(db, NULL, id, v, MAXRAW);
	s = column_versions(v, n, "r", (uint16_t)fam, "q");
	is_str(s, "2000,1000", "with the newest version deleted after a snapshot, compaction "
	       "keeps the two versions still visible");
	free(s);
	if (tbl_get_row(db, "t", "r", 1, NULL, &row) == 0) {
		ok(row->ncells == 2 && row->cells[0].ts == 2000 && row->cells[1].ts == 1000,
		   "and reads show them both");
		tbl_row_free(row);
	} else {
		ok(0, "and reads show them both");
	}
	close_db(db);
	free(v);
	free(dir);
}

/* Cells of a table id the schema does not know (never created, or dropped) are garbage. */
static void test_gc_unknown_table(void)
{
	char *dir = fresh_dir("gctable");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s = settings(CELL_STRING, 0, 0, "default", 1);
	struct version *v = xcalloc(MAXRAW, sizeof(*v));
	struct buf k = BUF_INIT, val = BUF_INIT;
	struct cell_value cv = { .type = CELL_STRING };
	uint32_t id, stray = 0x7ffffff0;
	char *got = NULL;
	size_t gotlen;
	long n;

	tbl_create_table(db, "t");
	tbl_add_family(db, "t", "f", &s);
	id = table_id(db, "t");
	put_str(db, "t", "r", "f", "q", 1000, "v");
	/* a well-formed cell key of a table that was never created, behind the layer's back */
	tkey_encode(&k, stray, slice_str("r"), 0, slice_str("q"), 1000);
	cv.v.data = slice_str("v");
	cell_encode(&val, &cv);
	kv_put(tbl_kv(db), k.data, k.len, val.data, val.len, 0);
	/* and a key that is no cell key at all */
	kv_put(tbl_kv(db), "\x7f\xff\xff\xf0junk", 8, "x", 1, 0);
	is_int(count_keys(db, NULL, slice_make("\x7f\xff\xff\xf0", 4)), 2,
	       "a stray cell and a key that is no cell key are stored under an unknown table id");
	kv_compact_range(tbl_kv(db), NULL, 0, NULL, 0);
	is_int(count_keys(db, NULL, slice_make("\x7f\xff\xff\xf0", 4)), 1,
	       "after compaction one of them is left");
	is_int(kv_get(tbl_kv(db), NULL, k.data, k.len, &got, &gotlen), -ENOENT,
	       "the stray cell is gone");
	is_int(kv_get(tbl_kv(db), NULL, "\x7f\xff\xff\xf0junk", 8, &got, &gotlen), 0,
	       "the key that does not decode as a cell key is kept");
	free(got);
	n = raw_versions(db, NULL, id, v, MAXRAW);
	is_int(n, 1, "the known table's cell stays");
	is_int(tbl_table_exists(db, "t"), 0, "and the schema records stay");
	close_db(db);
	db = open_db(dir);
	is_int(tbl_table_exists(db, "t"), 0, "also after a reopen");
	close_db(db);
	buf_free(&k);
	buf_free(&val);
	free(v);
	free(dir);
}

/* ------------------------------------------------------------ limits, time, row locks */

static void test_limits(void)
{
	char *big = xcalloc(1, TBL_MAX_QUALIFIER + 1);
	struct tbl_options o;
	struct tbl_db *db = NULL;
	char *dir = fresh_dir("limits");
	int spread = 0;

	is_int(tbl_check_row(big, 0), 0, "an empty row key is within the limits");
	is_int(tbl_check_row(big, TBL_MAX_ROW_KEY), 0, "a 4096-byte row key is accepted");
	is_int(tbl_check_row(big, TBL_MAX_ROW_KEY + 1), -ENAMETOOLONG, "a 4097-byte row key is "
	       "-ENAMETOOLONG");
	ok(msg_has("4097"), "and the message gives its length");
	is_int(tbl_check_qualifier(big, 0), 0, "an empty qualifier is accepted");
	is_int(tbl_check_qualifier(big, TBL_MAX_QUALIFIER), 0, "a 16384-byte qualifier is "
	       "accepted");
	is_int(tbl_check_qualifier(big, TBL_MAX_QUALIFIER + 1), -ENAMETOOLONG, "a 16385-byte "
	       "qualifier is -ENAMETOOLONG");

	tbl_options_init(&o);
	is_int(o.max_value_size, TBL_DEFAULT_MAX_VALUE, "the default largest value is 10 MiB");
	o.kv.log = quiet_log;
	o.max_value_size = TBL_LIMIT_MAX_VALUE + 1;
	is_int(tbl_open(dir, &o, &db), -EINVAL, "a largest value above 100 MiB is refused");
	ok(db == NULL, "and nothing is opened");
	o.max_value_size = TBL_LIMIT_MAX_VALUE;
	is_int(tbl_open(dir, &o, &db), 0, "100 MiB is accepted");
	if (db) {
		ok(tsch_row_lock(db, 1, "abc", 3) == tsch_row_lock(db, 1, "abc", 3),
		   "a row always maps to the same lock stripe");
		for (int i = 0; i < 256; i++) {
			char row[8];

			snprintf(row, sizeof(row), "r%d", i);
			spread |= tsch_row_lock(db, 1, row, strlen(row)) !=
				  tsch_row_lock(db, 1, "r0", 2);
		}
		ok(spread, "and different rows use different stripes");
		tbl_close(db);
	}
	free(big);
	free(dir);
}

#define NOW_THREADS 4

struct now_arg {
	struct tbl_db *db;
	long n;
	uint64_t *ts;
};

static void *now_thread(void *p)
{
	struct now_arg *a = p;

	for (long i = 0; i < a->n; i++)
		if (tsch_now(a->db, &a->ts[i]) < 0)
			a->ts[i] = 0;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_now(void)
{
	char *dir = fresh_dir("now");
	struct tbl_db *db = open_db(dir);
	long n = scaled(20000, 1000), bad_order = 0, dups = 0;
	struct now_arg a[NOW_THREADS];
	pthread_t th[NOW_THREADS];
	uint64_t *all = xmalloc(NOW_THREADS * (size_t)n * sizeof(*all));
	uint64_t start = tsch_wall(), end;

	for (int i = 0; i < NOW_THREADS; i++) {
		a[i] = (struct now_arg){ db, n, all + (size_t)i * n };
		pthread_create(&th[i], NULL, now_thread, &a[i]);
	}
	for (int i = 0; i < NOW_THREADS; i++)
		pthread_join(th[i], NULL);
	end = tsch_wall();
	for (int i = 0; i < NOW_THREADS; i++)
		for (long j = 1; j < n; j++)
			bad_order += a[i].ts[j] <= a[i].ts[j - 1];
	is_int(bad_order, 0, "tsch_now is strictly increasing in each of %d threads (%ld calls "
	       "each)", NOW_THREADS, n);
	qsort(all, NOW_THREADS * (size_t)n, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < NOW_THREADS * (size_t)n; i++)
		dups += all[i] == all[i - 1];
	is_int(dups, 0, "and no two calls in any threads get the same timestamp");
	ok(all[0] >= start, "the timestamps are wall-clock microseconds (not before the start)");
	ok(all[NOW_THREADS * (size_t)n - 1] <= end + (uint64_t)NOW_THREADS * n,
	   "and run ahead of the clock by at most one microsecond per call");
	uint64_t later = 0;
	is_int(tsch_now(db, &later), 0, "tsch_now succeeds");
	ok(later > all[NOW_THREADS * (size_t)n - 1], "a later call is later still");
	free(all);
	close_db(db);
	free(dir);
}

/* tsch_now's clock in test_now_reopen: set by the test. */
static uint64_t test_clock_us;

static uint64_t test_clock(void)
{
	return test_clock_us;
}

/* Set t/row/f:q to text at TBL_TS_NOW; the timestamp it got, 0 on failure. */
static uint64_t set_now(struct tbl_db *db, const char *text)
{
	struct tbl_mutation m = { .op = TBL_SET, .family = "f", .qualifier = "q",
				  .qualifier_len = 1, .ts = TBL_TS_NOW };
	uint64_t ts = 0;

	m.value.type = CELL_STRING;
	m.value.v.data = slice_str(text);
	if (tbl_mutate_row(db, "t", "row", 3, &m, 1, 0, &ts) < 0)
		return 0;
	return ts;
}

/* The newest visible value of t/row/f:q is text, at ts. */
static int newest_is(struct tbl_db *db, const char *text, uint64_t ts)
{
	struct tbl_row *row;
	int good;

	if (tbl_get_row(db, "t", "row", 3, NULL, &row) < 0)
		return 0;
	good = row->ncells == 1 && row->cells[0].ts == ts &&
	       slice_eq(row->cells[0].value.v.data, slice_str(text));
	tbl_row_free(row);
	return good;
}

/*
 * TBL_TS_NOW is strictly increasing across reopens: with the clock stepped
 * back, or standing still, a write after a reopen still gets a timestamp
 * above every one given out before, and becomes the newest version (with
 * max_versions 1, the only one).
 */
static void test_now_reopen(void)
{
	char *dir = fresh_dir("now-reopen");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s = settings(CELL_STRING, 1, 0, "default", 1);
	uint64_t t1, t2, t3, mark = 0;
	char key[5] = { 0, 0, 0, 0, 'M' }, *val = NULL;
	size_t vlen = 0;

	is_int(tbl_create_table(db, "t"), 0, "table t is created");
	is_int(tbl_add_family(db, "t", "f", &s), 0, "with a family keeping one version");
	db->clock = test_clock;
	test_clock_us = tsch_wall();
	t1 = set_now(db, "first");
	is_int(t1, test_clock_us, "a TBL_TS_NOW set gets the clock's time");
	close_db(db);

	db = open_db(dir);
	db->clock = test_clock;
	test_clock_us -= UINT64_C(3600000000);
	t2 = set_now(db, "second");
	ok(t2 > t1, "reopened with the clock an hour back, a set gets a later timestamp "
	   "(%llu > %llu)", (unsigned long long)t2, (unsigned long long)t1);
	ok(newest_is(db, "second", t2), "and it is the newest version, the one kept");
	close_db(db);

	db = open_db(dir);
	db->clock = test_clock;
	test_clock_us = t1;
	t3 = set_now(db, "third");
	ok(t3 > t2, "reopened with the clock at the first set's time, a set gets a later "
	   "timestamp still");
	ok(newest_is(db, "third", t3), "and it does not replace an older version in place");
	if (kv_get(tbl_kv(db), NULL, key, sizeof(key), &val, &vlen) == 0 && vlen == 8)
		mark = dec_fixed64(val);
	free(val);
	ok(mark > t3, "the recorded mark is above every timestamp given out (%llu)",
	   (unsigned long long)mark);
	close_db(db);
	free(dir);
}

/* ------------------------------------------------------------ error text */

/*
 * A sentence belongs to its error and to the call that made it: asked about
 * another error, or after another call, tbl_strerror gives strerror's text,
 * never a stale sentence.
 */
static void test_error_text(void)
{
	char *dir = fresh_dir("errtext");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s = settings(CELL_I64, 0, 0, "default", 1);
	struct cell_value v;
	struct tbl_row *row;
	struct tbl_read rd;
	struct kv_db *kv = tbl_kv(db);
	char *val;
	size_t vlen;

	is_int(tbl_create_table(db, "t"), 0, "table t is created");
	is_int(tbl_add_family(db, "t", "n", &s), 0, "with an i64 family");
	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a lookup of a missing table fails");
	ok(strstr(tbl_strerror(-ENOENT), "nosuch") != NULL,
	   "and its sentence names the table: %s", tbl_strerror(-ENOENT));
	ok(strcmp(tbl_strerror(-EINVAL), strerror(EINVAL)) == 0,
	   "asked about another error, tbl_strerror gives that error's text: %s",
	   tbl_strerror(-EINVAL));
	is_int(cell_parse(CELL_I64, slice_str("abc"), &v), -EINVAL,
	   "then parsing \"abc\" as an i64 fails with -EINVAL");
	ok(strstr(tbl_strerror(-EINVAL), "no such table") == NULL,
	   "and its message is not the missing table's: %s", tbl_strerror(-EINVAL));

	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a missing table again");
	is_int(tbl_put_text(db, "t", "r", 1, "n", "q", 1, TBL_TS_NOW, CELL_INVALID, "abc", 3, 0),
	       -EINVAL, "then a put of \"abc\" into an i64 cell fails with -EINVAL");
	ok(strstr(tbl_strerror(-EINVAL), "abc") != NULL &&
	   strstr(tbl_strerror(-EINVAL), "no such table") == NULL,
	   "and its message is its own: %s", tbl_strerror(-EINVAL));

	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a missing table again");
	memset(&rd, 0, sizeof(rd));
	is_int(tbl_get_row(db, "t", "absent", 6, &rd, &row), -ENOENT,
	       "then a read of a missing row fails with the same code, -ENOENT");
	ok(strstr(tbl_strerror(-ENOENT), "nosuch") == NULL,
	   "but the earlier call's sentence does not explain it: %s", tbl_strerror(-ENOENT));

	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a missing table again");
	is_int(tbl_create_table(db, "u"), 0, "then a call that succeeds");
	ok(strcmp(tbl_strerror(-ENOENT), strerror(ENOENT)) == 0,
	   "and the sentence is gone: %s", tbl_strerror(-ENOENT));

	is_int(tbl_table_exists(db, "nosuch"), -ENOENT, "a missing table again");
	is_int(kv_get(kv, NULL, "zz", 2, &val, &vlen), -ENOENT,
	       "then a kv_get of a missing key fails with -ENOENT");
	ok(strstr(kv_strerror(-ENOENT), "nosuch") == NULL,
	   "and kv_strerror does not give the table's sentence either: %s",
	   kv_strerror(-ENOENT));
	close_db(db);
	free(dir);
}

/* ------------------------------------------------------------ schema changes meet compaction */

struct churn_arg {
	struct tbl_db *db;
	long rounds;
	int failures;
};

static void *churn_schema(void *p)
{
	struct churn_arg *a = p;
	struct tbl_family_settings s = settings(CELL_STRING, 1, 0, "churn", 3);

	for (long i = 0; i < a->rounds; i++) {
		char fam[32];

		snprintf(fam, sizeof(fam), "c%ld", i % 4);
		if (tbl_add_family(a->db, "busy", fam, &s) < 0)
			a->failures++;
		if (tbl_drop_family(a->db, "busy", fam, 1) < 0)
			a->failures++;
	}
	return NULL;
}

/*
 * Schema changes hold the write lock across kv writes that may wait for a
 * compaction, while compactions run the filter, which reads the schema: this
 * must never deadlock, and the filter must not drop what it should keep.
 */
static void test_schema_vs_compaction(void)
{
	char *dir = fresh_dir("churn");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings s = settings(CELL_STRING, 1, 0, "default", 1);
	struct churn_arg a = { db, scaled(60, 10), 0 };
	long rows = scaled(300, 50), visible = 0;
	pthread_t th;

	tbl_create_table(db, "busy");
	tbl_add_family(db, "busy", "keep", &s);
	pthread_create(&th, NULL, churn_schema, &a);
	for (long i = 0; i < rows; i++) {
		char row[32];

		snprintf(row, sizeof(row), "r%05ld", i);
		put_str(db, "busy", row, "keep", "q", TBL_TS_NOW, "v1");
		put_str(db, "busy", row, "keep", "q", TBL_TS_NOW, "v2");
		if (i % 50 == 0)
			kv_compact_range(tbl_kv(db), NULL, 0, NULL, 0);
	}
	pthread_join(th, NULL);
	is_int(a.failures, 0, "families are added and dropped while compactions run");
	kv_compact_range(tbl_kv(db), NULL, 0, NULL, 0);
	visible = scan_rows(db, "busy");
	is_int(visible, rows, "every row keeps its newest version through the compactions");
	{
		struct version *v = xcalloc(MAXRAW, sizeof(*v));
		struct kv_tree *tree;
		int fam = family_info(db, "busy", "keep", NULL, &tree);
		long n = raw_versions(db, tree, table_id(db, "busy"), v, MAXRAW);

		is_int(count_family(v, n, (uint16_t)fam), rows, "and after a last compaction only "
		       "the newest (max_versions 1)");
		free(v);
	}
	close_db(db);
	free(dir);
}

/* tbl_compact's step callback: the trees in the order they were compacted */
static void record_step(void *arg, const char *table, const char *group)
{
	struct buf *b = arg;
	char line[256];
	int n = snprintf(line, sizeof(line), "%s%s/%s", b->len ? " " : "", table ? table : "*",
			 group);

	buf_append(b, line, (size_t)n);
}

/*
 * tbl_list_groups names each locality group's tree; tbl_compact compacts
 * the default tree and every group's tree (of one table, or of all), so
 * what GC hides is physically gone from each, and another table's groups
 * are left alone by a compaction of one table.
 */
static void test_compact(void)
{
	char *dir = fresh_dir("compact");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings one = settings(CELL_STRING, 1, 0, "blobs", 1);
	struct tbl_family_settings meta = settings(CELL_STRING, 1, 0, "default", 1);
	struct version *v = xcalloc(MAXRAW, sizeof(*v));
	struct tbl_group_info *g = NULL;
	struct kv_tree *ta, *tb;
	struct buf steps = BUF_INIT;
	uint32_t ga, gb, ida, idb;
	size_t n = 99;
	char *na, *nb;
	long raw;

	tbl_create_table(db, "b");
	tbl_create_table(db, "a");
	tbl_add_family(db, "a", "blob", &one);
	tbl_add_family(db, "a", "meta", &meta);
	tbl_add_family(db, "b", "blob", &one);
	tbl_add_family(db, "b", "zz", &(struct tbl_family_settings){ .type = CELL_STRING,
		.locality_group = "another", .compression = 1 });
	family_info(db, "a", "blob", &ga, &ta);
	family_info(db, "b", "blob", &gb, &tb);
	ida = table_id(db, "a");
	idb = table_id(db, "b");
	na = lg_name(ga);
	nb = lg_name(gb);

	is_int(tbl_list_groups(db, "nosuch", &g, &n), -ENOENT,
	       "tbl_list_groups of a missing table: -ENOENT");
	ok(g == NULL && n == 0, "and an empty result");
	is_int(tbl_list_groups(db, NULL, &g, &n), 0, "tbl_list_groups of every table");
	is_int(n, 3, "three groups besides the default ones");
	ok(n == 3 && !strcmp(g[0].table, "a") && !strcmp(g[0].group, "blobs") &&
	   !strcmp(g[0].tree, na) && !strcmp(g[1].table, "b") && !strcmp(g[1].group, "another") &&
	   !strcmp(g[2].table, "b") && !strcmp(g[2].group, "blobs") && !strcmp(g[2].tree, nb),
	   "by table, then group, each with its tree (%s, %s)", na, nb);
	tbl_free_groups(g, n);
	is_int(tbl_list_groups(db, "a", &g, &n), 0, "tbl_list_groups of one table");
	ok(n == 1 && !strcmp(g[0].group, "blobs"), "only that table's groups");
	tbl_free_groups(g, n);

	for (uint64_t ts = 1; ts <= 4; ts++) {
		put_str(db, "a", "r", "blob", "q", ts, "x");
		put_str(db, "a", "r", "meta", "q", ts, "x");
		put_str(db, "b", "r", "blob", "q", ts, "x");
	}
	is_int(tbl_compact(db, "nosuch", record_step, &steps), -ENOENT,
	       "tbl_compact of a missing table: -ENOENT");
	is_int((int)steps.len, 0, "and nothing was compacted");
	is_int(tbl_compact(db, "a", record_step, &steps), 0, "tbl_compact of one table");
	buf_append(&steps, "", 1);
	is_str(steps.data, "a/default a/blobs", "it compacts the default tree, then its group");
	raw = raw_versions(db, ta, ida, v, MAXRAW);
	is_int(raw, 1, "max_versions 1: one version left in the table's group tree");
	raw = raw_versions(db, NULL, ida, v, MAXRAW);
	is_int(raw, 1, "and in its range of the default tree");
	raw = raw_versions(db, tb, idb, v, MAXRAW);
	is_int(raw, 4, "another table's group is not compacted");
	buf_clear(&steps);
	is_int(tbl_compact(db, NULL, record_step, &steps), 0, "tbl_compact of the database");
	buf_append(&steps, "", 1);
	is_str(steps.data, "*/default a/blobs b/another b/blobs",
	       "the default tree, then every group of every table");
	raw = raw_versions(db, tb, idb, v, MAXRAW);
	is_int(raw, 1, "now the other table's group keeps one version too");
	is_int(tbl_compact(db, NULL, NULL, NULL), 0, "no step callback is needed");

	buf_free(&steps);
	free(v);
	free(na);
	free(nb);
	close_db(db);
	free(dir);
}

/*
 * The ttl's boundary, to the microsecond: a version exactly ttl old is
 * kept, one a microsecond older is not (the one rule reads and the
 * compaction filter share); and through reads, a version a fraction of a
 * second past its ttl is already gone while one well inside it is there.
 */
static void test_ttl_boundary(void)
{
	struct tsch_family f = { .id = 1 };
	uint64_t now = UINT64_C(1700000000000000), wall;
	char *dir = fresh_dir("ttl-boundary");
	struct tbl_db *db = open_db(dir);
	struct tbl_family_settings minute = settings(CELL_STRING, 0, 60, "default", 1);
	struct tbl_cell_stat st;

	f.s.ttl = 10;
	ok(tsch_gc_keeps(&f, now - 10 * UINT64_C(1000000), 0, now),
	   "ttl rule: a version exactly ttl old is kept");
	ok(!tsch_gc_keeps(&f, now - 10 * UINT64_C(1000000) - 1, 0, now),
	   "ttl rule: a version one microsecond older than the ttl is not");
	ok(tsch_gc_keeps(&f, now + 1000, 0, now), "ttl rule: a version in the future is kept");

	tbl_create_table(db, "s");
	tbl_add_family(db, "s", "m", &minute);
	wall = tsch_wall();
	put_str(db, "s", "r", "m", "late", wall - 60 * UINT64_C(1000000) - 300000, "x");
	put_str(db, "s", "r", "m", "fresh", wall - 30 * UINT64_C(1000000), "y");
	is_int(tbl_stat_cell(db, NULL, "s", "r", 1, "m", "late", 4, TBL_TS_NEWEST, &st), -ENOENT,
	       "a version 0.3 s past its ttl of 60 s is not read");
	is_int(tbl_stat_cell(db, NULL, "s", "r", 1, "m", "fresh", 5, TBL_TS_NEWEST, &st), 0,
	       "a version 30 s old is read");
	close_db(db);
	free(dir);
}

int main(void)
{
	plan(288);
	make_tmpdir("tbl_schema");
	test_table_names();
	test_error_text();
	test_now_reopen();
	test_table_list_and_drop();
	test_family_names_and_settings();
	test_persistence();
	test_damaged_schema();
	test_locality_groups();
	test_drop_with_data();
	test_not_empty();
	gc_policies_in("default");
	gc_policies_in("lg");
	test_gc_hidden_version();
	test_gc_unknown_table();
	test_limits();
	test_now();
	test_schema_vs_compaction();
	test_compact();
	test_ttl_boundary();
	rm_rf(tmpdir);
	return exit_status();
}
