/*
 * version.c -- the version set: live table files per level, the manifest
 * that records their changes, the table cache that keeps them open, point
 * lookups across levels and the level iterator (see version.h).
 */
#include "version.h"
#include "filename.h"
#include "bloom.h"

#include <stdio.h>
#include <stdlib.h>

enum {
	TAG_LOG_NUMBER = 1,
	TAG_NEXT_FILE = 2,
	TAG_LAST_SEQ = 3,
	TAG_COMPACT_POINTER = 4,
	TAG_DELETED_FILE = 5,
	TAG_NEW_FILE = 6,
	TAG_FORMAT = 7,
	TAG_TREE = 8,
	TAG_DROP_TREE = 9,
	TAG_NEXT_TREE = 10,
	TAG_FAILED_LOG = 11,
	TAG_LOG_SEQ = 12,
};

/* The version of the manifest and of everything it describes (logs, tables). */
#define ENGINE_FORMAT_VERSION 1

/* ------------------------------------------------------------ file metadata */

static struct file_meta *fm_new(void)
{
	struct file_meta *f = xcalloc(1, sizeof(*f));

	f->refs = 1;
	return f;
}

static void fm_ref(struct file_meta *f)
{
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
}

static void fm_unref(struct file_meta *f)
{
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		buf_free(&f->smallest);
		buf_free(&f->largest);
		free(f);
	}
}

/* ------------------------------------------------------------ edits */

void edit_init(struct version_edit *e)
{
	memset(e, 0, sizeof(*e));
}

void edit_free(struct version_edit *e)
{
	for (size_t i = 0; i < e->nadds; i++)
		fm_unref(e->adds[i].f);
	free(e->adds);
	free(e->dels);
	for (int i = 0; i < e->ncp; i++)
		buf_free(&e->cp_key[i]);
	free(e->tree_name);
	free(e->failed);
	memset(e, 0, sizeof(*e));
}

void edit_add_file(struct version_edit *e, int level, uint64_t number, uint64_t size,
		   struct slice smallest, struct slice largest, uint64_t smallest_seq,
		   uint64_t largest_seq, uint64_t entries, uint64_t range_dels)
{
	struct file_meta *f = fm_new();

	f->number = number;
	f->size = size;
	buf_set(&f->smallest, smallest.data, smallest.len);
	buf_set(&f->largest, largest.data, largest.len);
	f->smallest_seq = smallest_seq;
	f->largest_seq = largest_seq;
	f->entries = entries;
	f->range_dels = range_dels;
	e->adds = xrealloc(e->adds, (e->nadds + 1) * sizeof(*e->adds));
	e->adds[e->nadds].level = level;
	e->adds[e->nadds].f = f;
	e->nadds++;
}

void edit_move_adds(struct version_edit *dst, struct version_edit *src)
{
	if (!src->nadds)
		return;
	dst->adds = xrealloc(dst->adds, (dst->nadds + src->nadds) * sizeof(*dst->adds));
	memcpy(dst->adds + dst->nadds, src->adds, src->nadds * sizeof(*src->adds));
	dst->nadds += src->nadds;
	free(src->adds);
	src->adds = NULL;
	src->nadds = 0;
}

void edit_del_file(struct version_edit *e, int level, uint64_t number)
{
	e->dels = xrealloc(e->dels, (e->ndels + 1) * sizeof(*e->dels));
	e->dels[e->ndels].level = level;
	e->dels[e->ndels].number = number;
	e->ndels++;
}

void edit_set_compact_pointer(struct version_edit *e, int level, struct slice key)
{
	if (e->ncp >= NUM_LEVELS)
		return;
	e->cp_level[e->ncp] = level;
	buf_set(&e->cp_key[e->ncp], key.data, key.len);
	e->ncp++;
}

void edit_set_log(struct version_edit *e, uint64_t number, uint64_t seq)
{
	e->has_log_number = 1;
	e->log_number = number;
	e->has_log_seq = seq != 0;
	e->log_seq = seq;
}

void edit_add_failed_log(struct version_edit *e, uint64_t number, uint64_t acked)
{
	e->failed = xrealloc(e->failed, (e->nfailed + 1) * sizeof(*e->failed));
	e->failed[e->nfailed].number = number;
	e->failed[e->nfailed].acked = acked;
	e->nfailed++;
}

void edit_encode(const struct version_edit *e, struct buf *out)
{
	if (e->has_format) {
		buf_put_varint32(out, TAG_FORMAT);
		buf_put_varint32(out, e->format);
	}
	if (e->tree_name) {
		buf_put_varint32(out, TAG_TREE);
		buf_put_varint32(out, e->tree);
		buf_put_lenprefixed(out, slice_str(e->tree_name));
	}
	if (e->drop_tree)
		buf_put_varint32(out, TAG_DROP_TREE);
	if (e->has_next_tree) {
		buf_put_varint32(out, TAG_NEXT_TREE);
		buf_put_varint32(out, e->next_tree);
	}
	if (e->has_log_number) {
		buf_put_varint32(out, TAG_LOG_NUMBER);
		buf_put_varint64(out, e->log_number);
	}
	if (e->has_log_seq) {
		buf_put_varint32(out, TAG_LOG_SEQ);
		buf_put_varint64(out, e->log_seq);
	}
	if (e->has_next_file) {
		buf_put_varint32(out, TAG_NEXT_FILE);
		buf_put_varint64(out, e->next_file);
	}
	if (e->has_last_seq) {
		buf_put_varint32(out, TAG_LAST_SEQ);
		buf_put_varint64(out, e->last_seq);
	}
	for (size_t i = 0; i < e->nfailed; i++) {
		buf_put_varint32(out, TAG_FAILED_LOG);
		buf_put_varint64(out, e->failed[i].number);
		buf_put_varint64(out, e->failed[i].acked);
	}
	for (int i = 0; i < e->ncp; i++) {
		buf_put_varint32(out, TAG_COMPACT_POINTER);
		buf_put_varint32(out, (uint32_t)e->cp_level[i]);
		buf_put_lenprefixed(out, buf_slice(&e->cp_key[i]));
	}
	for (size_t i = 0; i < e->ndels; i++) {
		buf_put_varint32(out, TAG_DELETED_FILE);
		buf_put_varint32(out, (uint32_t)e->dels[i].level);
		buf_put_varint64(out, e->dels[i].number);
	}
	for (size_t i = 0; i < e->nadds; i++) {
		const struct file_meta *f = e->adds[i].f;
		buf_put_varint32(out, TAG_NEW_FILE);
		buf_put_varint32(out, (uint32_t)e->adds[i].level);
		buf_put_varint64(out, f->number);
		buf_put_varint64(out, f->size);
		buf_put_lenprefixed(out, buf_slice(&f->smallest));
		buf_put_lenprefixed(out, buf_slice(&f->largest));
		buf_put_varint64(out, f->smallest_seq);
		buf_put_varint64(out, f->largest_seq);
		buf_put_varint64(out, f->entries);
		buf_put_varint64(out, f->range_dels);
	}
}

int edit_decode(struct version_edit *e, struct slice rec, const char *name)
{
	/* an empty record may come as (NULL, 0): no arithmetic on NULL */
	const char *p = rec.data, *limit = rec.len ? rec.data + rec.len : rec.data;
	uint32_t tag, level;
	uint64_t number, size, sseq, lseq, entries, rdels;
	struct slice a, b;

	edit_init(e);
	while (p < limit) {
		if (!(p = dec_varint32(p, limit, &tag)))
			goto bad;
		switch (tag) {
		case TAG_FORMAT:
			if (!(p = dec_varint32(p, limit, &e->format)))
				goto bad;
			e->has_format = 1;
			if (e->format != ENGINE_FORMAT_VERSION) {
				uint32_t f = e->format;
				edit_free(e);
				return ERR_SET(-EPROTONOSUPPORT, "%s: format version %u; this smolfs "
						"reads version %u", name, (unsigned)f,
						ENGINE_FORMAT_VERSION);
			}
			break;
		case TAG_TREE:
			if (e->tree_name || !(p = dec_varint32(p, limit, &e->tree)) ||
			    !(p = dec_lenprefixed(p, limit, &a)) || a.len == 0 || a.len > 64 ||
			    memchr(a.data, 0, a.len))
				goto bad;
			e->tree_name = xmemdup(a.data, a.len);
			break;
		case TAG_DROP_TREE:
			e->drop_tree = 1;
			break;
		case TAG_NEXT_TREE:
			if (!(p = dec_varint32(p, limit, &e->next_tree)))
				goto bad;
			e->has_next_tree = 1;
			break;
		case TAG_LOG_NUMBER:
			if (!(p = dec_varint64(p, limit, &e->log_number)))
				goto bad;
			e->has_log_number = 1;
			break;
		case TAG_LOG_SEQ:
			if (!(p = dec_varint64(p, limit, &e->log_seq)))
				goto bad;
			e->has_log_seq = 1;
			break;
		case TAG_NEXT_FILE:
			if (!(p = dec_varint64(p, limit, &e->next_file)))
				goto bad;
			e->has_next_file = 1;
			break;
		case TAG_LAST_SEQ:
			if (!(p = dec_varint64(p, limit, &e->last_seq)))
				goto bad;
			e->has_last_seq = 1;
			break;
		case TAG_FAILED_LOG:
			if (!(p = dec_varint64(p, limit, &number)) ||
			    !(p = dec_varint64(p, limit, &size)) || number == 0)
				goto bad;
			edit_add_failed_log(e, number, size);
			break;
		case TAG_COMPACT_POINTER:
			if (!(p = dec_varint32(p, limit, &level)) || level >= NUM_LEVELS ||
			    !(p = dec_lenprefixed(p, limit, &a)))
				goto bad;
			/* a table's largest key: pick_compaction compares it (ikey_cmp) */
			if (!ikey_valid(a))
				goto bad;
			edit_set_compact_pointer(e, (int)level, a);
			break;
		case TAG_DELETED_FILE:
			if (!(p = dec_varint32(p, limit, &level)) || level >= NUM_LEVELS ||
			    !(p = dec_varint64(p, limit, &number)))
				goto bad;
			edit_del_file(e, (int)level, number);
			break;
		case TAG_NEW_FILE:
			if (!(p = dec_varint32(p, limit, &level)) || level >= NUM_LEVELS ||
			    !(p = dec_varint64(p, limit, &number)) ||
			    !(p = dec_varint64(p, limit, &size)) ||
			    !(p = dec_lenprefixed(p, limit, &a)) ||
			    !(p = dec_lenprefixed(p, limit, &b)) ||
			    !(p = dec_varint64(p, limit, &sseq)) ||
			    !(p = dec_varint64(p, limit, &lseq)) ||
			    !(p = dec_varint64(p, limit, &entries)) ||
			    !(p = dec_varint64(p, limit, &rdels)))
				goto bad;
			if (!ikey_valid(a) || !ikey_valid(b) || ikey_cmp(a, b) > 0)
				goto bad;
			edit_add_file(e, (int)level, number, size, a, b, sseq, lseq, entries, rdels);
			break;
		default:
			goto bad;
		}
	}
	return 0;
bad:
	edit_free(e);
	return ERR_CORRUPT("%s: malformed version edit (tag %u)", name, (unsigned)tag);
}

/* ------------------------------------------------------------ table cache */

struct table_cache {
	struct kv_env *env;
	char *dir;
	struct cache *cache;         /* number -> struct sst *, charge 1 per table */
	struct cache *block_cache;
	uint64_t *bytes_read;
	int no_map;                  /* read tables with pread, not through a map */
};

static void tc_deleter(struct slice key, void *value)
{
	(void)key;
	sst_close(value);
}

struct table_cache *tcache_new(struct kv_env *env, const char *dir, int max_open,
			       struct cache *block_cache, uint64_t *bytes_read)
{
	struct table_cache *tc = xcalloc(1, sizeof(*tc));

	tc->env = env;
	tc->dir = xstrdup(dir);
	/* 16 shards: give each a whole number of tables */
	tc->cache = cache_new((size_t)(max_open < 64 ? 64 : max_open));
	tc->block_cache = block_cache;
	tc->bytes_read = bytes_read;
	return tc;
}

void tcache_set_no_map(struct table_cache *tc, int no_map)
{
	tc->no_map = no_map;
}

void tcache_free(struct table_cache *tc)
{
	if (!tc)
		return;
	cache_free(tc->cache);
	free(tc->dir);
	free(tc);
}

int tcache_get(struct table_cache *tc, const struct file_meta *f, struct sst **t,
	       struct cache_handle **h)
{
	char key[8], *path;
	struct env_file *file;
	struct sst *table;
	int r;

	enc_fixed64(key, f->number);
	*h = cache_lookup(tc->cache, slice_make(key, 8));
	if (*h) {
		*t = cache_value(*h);
		return 0;
	}
	path = fname_sst(tc->dir, f->number);
	r = env_open_read(tc->env, path, &file);
	if (r == -ENOENT)
		r = ERR_CORRUPT("%s: table file is missing", path);
	if (r < 0)
		goto out;
	r = sst_open(file, f->size, path, tc->block_cache, tc->bytes_read, !tc->no_map, &table);
	if (r < 0)
		goto out;
	*h = cache_insert(tc->cache, slice_make(key, 8), table, 1, tc_deleter);
	*t = table;
out:
	free(path);
	return r;
}

void tcache_release(struct table_cache *tc, struct cache_handle *h)
{
	cache_release(tc->cache, h);
}

void tcache_evict(struct table_cache *tc, uint64_t number)
{
	char key[8];

	enc_fixed64(key, number);
	cache_erase(tc->cache, slice_make(key, 8));
}

/* What an SST iterator made by tcache_iter releases when it is destroyed. */
struct tcache_pin {
	struct table_cache *tc;
	struct cache_handle *h;
};

static void tcache_pin_release(void *arg)
{
	struct tcache_pin *p = arg;

	tcache_release(p->tc, p->h);
	free(p);
}

/*
 * The table iterator itself, with the table cache's pin released when it is
 * destroyed; its max_seq is the largest sequence the table's properties
 * record (what the version's file entry was made from).
 */
struct iter *tcache_iter(struct table_cache *tc, const struct file_meta *f, unsigned sst_flags)
{
	struct cache_handle *h;
	struct tcache_pin *pin;
	struct sst *t;
	int r = tcache_get(tc, f, &t, &h);

	if (r < 0)
		return iter_empty(r);
	pin = xmalloc(sizeof(*pin));
	pin->tc = tc;
	pin->h = h;
	return sst_iter_new_released(t, sst_flags, tcache_pin_release, pin);
}

/* ------------------------------------------------------------ versions */

static struct version *version_new(struct version_set *vs, struct vtree *t)
{
	struct version *v = xcalloc(1, sizeof(*v));

	v->vs = vs;
	v->tree = t;
	v->refs = 1;
	/* link into the live list */
	v->next = &vs->live;
	v->prev = vs->live.prev;
	v->prev->next = v;
	vs->live.prev = v;
	return v;
}

void version_ref(struct version *v)
{
	__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
}

/* REQUIRES: db mutex (the live list changes). */
int version_unref(struct version *v)
{
	if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return 0;
	v->prev->next = v->next;
	v->next->prev = v->prev;
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++)
			fm_unref(v->files[l][i]);
		free(v->files[l]);
	}
	free(v);
	return 1;
}

uint64_t version_level_bytes(const struct version *v, int level)
{
	uint64_t n = 0;

	for (size_t i = 0; i < v->nfiles[level]; i++)
		n += v->files[level][i]->size;
	return n;
}

uint64_t max_bytes_for_level(const struct kv_options *opt, int level)
{
	uint64_t n = opt->max_bytes_level_base;

	for (int l = 1; l < level; l++)
		n *= 10;
	return n;
}

static void version_add(struct version *v, int level, struct file_meta *f)
{
	v->files[level] = xrealloc(v->files[level], (v->nfiles[level] + 1) * sizeof(f));
	v->files[level][v->nfiles[level]++] = f;
	fm_ref(f);
}

static int cmp_l0(const void *a, const void *b)
{
	const struct file_meta *x = *(struct file_meta *const *)a, *y = *(struct file_meta *const *)b;

	/* newest first */
	if (x->largest_seq != y->largest_seq)
		return x->largest_seq > y->largest_seq ? -1 : 1;
	return x->number > y->number ? -1 : x->number < y->number;
}

static int cmp_smallest(const void *a, const void *b)
{
	const struct file_meta *x = *(struct file_meta *const *)a, *y = *(struct file_meta *const *)b;

	return ikey_cmp(buf_slice(&x->smallest), buf_slice(&y->smallest));
}

static void version_score(struct version *v, const struct kv_options *opt)
{
	v->score = (double)v->nfiles[0] / opt->l0_compaction_trigger;
	v->score_level = 0;
	for (int l = 1; l < NUM_LEVELS - 1; l++) {
		double s = (double)version_level_bytes(v, l) / (double)max_bytes_for_level(opt, l);
		if (s > v->score) {
			v->score = s;
			v->score_level = l;
		}
	}
}

static int deleted_in(const struct version_edit *e, int level, uint64_t number)
{
	for (size_t i = 0; i < e->ndels; i++)
		if (e->dels[i].level == level && e->dels[i].number == number)
			return 1;
	return 0;
}

/*
 * base + edit -> a new version.  Checks the level invariant: files of a level
 * >= 1 must not overlap (in internal-key order); a violation is corruption.
 */
static int version_apply(struct version_set *vs, struct vtree *t, const struct version *base,
			 const struct version_edit *e, struct version **out)
{
	struct version *v = version_new(vs, t);

	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; base && i < base->nfiles[l]; i++) {
			struct file_meta *f = base->files[l][i];
			if (!deleted_in(e, l, f->number))
				version_add(v, l, f);
		}
	}
	for (size_t i = 0; i < e->nadds; i++)
		version_add(v, e->adds[i].level, e->adds[i].f);
	if (v->nfiles[0] > 1)
		qsort(v->files[0], v->nfiles[0], sizeof(struct file_meta *), cmp_l0);
	for (int l = 1; l < NUM_LEVELS; l++) {
		if (v->nfiles[l] > 1)
			qsort(v->files[l], v->nfiles[l], sizeof(struct file_meta *),
			      cmp_smallest);
		for (size_t i = 1; i < v->nfiles[l]; i++) {
			if (ikey_cmp(buf_slice(&v->files[l][i - 1]->largest),
				     buf_slice(&v->files[l][i]->smallest)) >= 0) {
				uint64_t a = v->files[l][i - 1]->number, b = v->files[l][i]->number;
				version_unref(v);
				return ERR_CORRUPT("%s: tables %06llu and %06llu overlap in level %d",
						  vs->dir, (unsigned long long)a, (unsigned long long)b, l);
			}
		}
	}
	version_score(v, vs->opt);
	*out = v;
	return 0;
}

/* ------------------------------------------------------------ version set */

static struct vtree *vtree_new(struct version_set *vs, uint32_t id, const char *name)
{
	struct vtree *t = xcalloc(1, sizeof(*t));
	struct version_edit e;

	t->id = id;
	t->name = xstrdup(name);
	edit_init(&e);
	version_apply(vs, t, NULL, &e, &t->current);
	edit_free(&e);
	vs->trees = xrealloc(vs->trees, (vs->ntrees + 1) * sizeof(*vs->trees));
	vs->trees[vs->ntrees++] = t;
	if (id >= vs->next_tree)
		vs->next_tree = id + 1;
	return t;
}

struct vtree *vs_tree(struct version_set *vs, uint32_t id)
{
	for (size_t i = 0; i < vs->ntrees; i++)
		if (vs->trees[i]->id == id)
			return vs->trees[i];
	return NULL;
}

struct vtree *vs_tree_by_name(struct version_set *vs, const char *name)
{
	for (size_t i = 0; i < vs->ntrees; i++)
		if (!vs->trees[i]->dropped && !strcmp(vs->trees[i]->name, name))
			return vs->trees[i];
	return NULL;
}

uint64_t vs_min_log_number(struct version_set *vs)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < vs->ntrees; i++)
		if (!vs->trees[i]->dropped && vs->trees[i]->log_number < m)
			m = vs->trees[i]->log_number;
	return m;
}

uint64_t vs_min_log_seq(struct version_set *vs)
{
	uint64_t m = vs_min_log_number(vs), seq = 0;

	for (size_t i = 0; i < vs->ntrees; i++)
		if (!vs->trees[i]->dropped && vs->trees[i]->log_number == m && !seq)
			seq = vs->trees[i]->log_seq;
	return seq;
}

const struct failed_log *vs_failed_log(const struct version_set *vs, uint64_t number)
{
	for (size_t i = 0; i < vs->nfailed; i++)
		if (vs->failed[i].number == number)
			return &vs->failed[i];
	return NULL;
}

void vs_add_failed_log(struct version_set *vs, const struct failed_log *fl)
{
	size_t i = vs->nfailed;

	for (size_t j = 0; j < vs->nfailed; j++) {
		if (vs->failed[j].number == fl->number) {
			vs->failed[j].acked = fl->acked;
			return;
		}
	}
	vs->failed = xrealloc(vs->failed, (vs->nfailed + 1) * sizeof(*vs->failed));
	/* kept sorted by number */
	while (i > 0 && vs->failed[i - 1].number > fl->number) {
		vs->failed[i] = vs->failed[i - 1];
		i--;
	}
	vs->failed[i] = *fl;
	vs->nfailed++;
}

struct version_set *vs_new(const char *dir, struct kv_env *env, const struct kv_options *opt,
			   struct table_cache *tc)
{
	struct version_set *vs = xcalloc(1, sizeof(*vs));

	vs->dir = xstrdup(dir);
	vs->env = env;
	vs->opt = opt;
	vs->tc = tc;
	vs->live.next = vs->live.prev = &vs->live;
	vs->next_file = 2;
	pthread_cond_init(&vs->manifest_cv, NULL);
	vtree_new(vs, 0, "default");
	return vs;
}

void vs_free(struct version_set *vs)
{
	if (!vs)
		return;
	for (size_t i = 0; i < vs->ntrees; i++) {
		struct vtree *t = vs->trees[i];
		if (t->current)
			version_unref(t->current);
		for (int l = 0; l < NUM_LEVELS; l++)
			buf_free(&t->compact_pointer[l]);
		free(t->name);
		free(t);
	}
	free(vs->trees);
	free(vs->failed);
	if (vs->manifest)
		wal_writer_free(vs->manifest);
	pthread_cond_destroy(&vs->manifest_cv);
	free(vs->dir);
	free(vs);
}

uint64_t vs_new_file_number(struct version_set *vs)
{
	return vs->next_file++;
}

void vs_init_empty(struct version_set *vs)
{
	(void)vs;  /* vs_new made the empty default tree */
}

/*
 * Apply one edit to the tree it names (creating or dropping it), without
 * logging.  On failure nothing changes.
 */
static int apply_edit(struct version_set *vs, struct version_edit *e, const char *name)
{
	struct vtree *t = vs_tree(vs, e->tree);
	struct version *v;
	int r;

	if (!t) {
		if (!e->tree_name)
			return ERR_CORRUPT("%s: an edit names tree %u, which does not exist", name,
					  (unsigned)e->tree);
		t = vtree_new(vs, e->tree, e->tree_name);
	}
	if (t->dropped)
		return ERR_CORRUPT("%s: an edit names dropped tree %u", name, (unsigned)e->tree);
	r = version_apply(vs, t, t->current, e, &v);
	if (r < 0)
		return r;
	for (int i = 0; i < e->ncp; i++)
		buf_set(&t->compact_pointer[e->cp_level[i]], e->cp_key[i].data, e->cp_key[i].len);
	/*
	 * Only forward: an edit made from a number read before a newer edit of
	 * the tree was applied (release_idle_trees, without the writers' lead)
	 * never makes it need logs it no longer needed, which may be gone.
	 */
	if (e->has_log_number && e->log_number > t->log_number) {
		t->log_number = e->log_number;
		t->log_seq = e->has_log_seq ? e->log_seq : 0;
	}
	if (e->has_last_seq)
		vs->last_seq = e->last_seq;
	if (e->has_next_file && e->next_file > vs->next_file)
		vs->next_file = e->next_file;
	if (e->has_next_tree && e->next_tree > vs->next_tree)
		vs->next_tree = e->next_tree;
	for (size_t i = 0; i < e->nfailed; i++)
		vs_add_failed_log(vs, &e->failed[i]);
	version_unref(t->current);
	t->current = v;
	if (e->drop_tree) {
		struct version_edit none;
		edit_init(&none);
		t->dropped = 1;
		version_unref(t->current);
		version_apply(vs, t, NULL, &none, &t->current);
		edit_free(&none);
	}
	return 0;
}

/*
 * The manifest is read more strictly than the write-ahead log: every record
 * was fsynced before anything relied on it, so a last record that is whole
 * (its header and payload are all there) but fails its checksum is damage,
 * not an unfinished write.  Only a record cut short, or zeros, may end it,
 * or the damage a power cut leaves in an edit whose fdatasync it
 * interrupted (pages never written: wal_reader_stop_at_damage).
 */
/*
 * Does the record at off (n bytes) hold what a power cut leaves of a page
 * written after the last sync: a run of zeros ending at a 512-byte boundary
 * that is at least 16 bytes long or starts at the record's first byte?
 * Read errors and records too large to check say no (the record is damage).
 */
static int lost_sector_in(struct env_file *f, uint64_t off, uint64_t n)
{
	const uint64_t sector = 512;
	uint64_t run = 0;
	char *p;
	int found = 0;

	if (n > (1u << 20))
		return 0;
	p = xmalloc((size_t)n);
	if (env_read_exact(f, p, (size_t)n, off) == 0) {
		for (uint64_t i = 0; i < n && !found; i++) {
			run = p[i] ? 0 : run + 1;
			if ((off + i + 1) % sector == 0 && run && (run >= 16 || run == i + 1))
				found = 1;
		}
	}
	free(p);
	return found;
}

static int manifest_tail_check(struct env_file *f, uint64_t size, struct wal_reader *rd,
			       const char *name)
{
	char hdr[WAL_HEADER];
	uint64_t off;
	uint32_t len;

	if (!wal_reader_torn(rd, &off))
		return 0;
	if (wal_reader_damage(rd))
		return 0;   /* what a power cut leaves of an edit whose sync never returned */
	if (size - off < WAL_HEADER || env_read_exact(f, hdr, WAL_HEADER, off) < 0)
		return 0;
	len = dec_fixed32(hdr + 4);
	if (dec_fixed32(hdr) == 0 && len == 0)
		return 0;   /* zero-filled */
	if (off + WAL_HEADER + len <= size && !lost_sector_in(f, off, WAL_HEADER + len))
		return ERR_CORRUPT("%s: damaged record at offset %llu", name,
				  (unsigned long long)off);
	return 0;
}

int vs_recover(struct version_set *vs)
{
	char *cur_path = fname_current(vs->dir), *current = NULL, *mpath = NULL;
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct version_edit e;
	int have_next = 0, have_log = 0, have_seq = 0, named;
	uint64_t msize, mnum;
	size_t len;
	struct slice rec;
	int r;

	if (!env_exists(vs->env, cur_path)) {
		r = -ENOENT;
		goto out;
	}
	r = env_read_file(vs->env, cur_path, &current, &len);
	if (r < 0)
		goto out;
	/* one line, "MANIFEST-NNNNNN\n" */
	named = len >= 2 && current[len - 1] == '\n' && !memchr(current, 0, len - 1);
	if (named) {
		current[len - 1] = 0;
		named = fname_parse(current, &mnum) == FNAME_MANIFEST;
	}
	if (!named) {
		r = ERR_CORRUPT("%s: does not name a manifest", cur_path);
		goto out;
	}
	/* the manifest in use until vs_new_manifest (a read-only open never calls it) */
	vs->manifest_number = mnum;
	mpath = xasprintf("%s/%s", vs->dir, current);
	if (!env_exists(vs->env, mpath)) {
		r = ERR_CORRUPT("%s names %s, which is missing", cur_path, mpath);
		goto out;
	}
	if ((r = env_file_size(vs->env, mpath, &msize)) < 0 ||
	    (r = env_open_read(vs->env, mpath, &f)) < 0)
		goto out;
	rd = wal_reader_new(f, msize, mpath);
	/* its last edit may be one whose fdatasync a power cut interrupted */
	wal_reader_stop_at_damage(rd, 0);
	for (int first = 1; (r = wal_read(rd, &rec)) > 0; first = 0) {
		r = edit_decode(&e, rec, mpath);
		if (r < 0)
			goto out;
		if (first && !e.has_format) {
			edit_free(&e);
			r = ERR_CORRUPT("%s: the first record carries no format version", mpath);
			goto out;
		}
		have_next |= e.has_next_file;
		have_log |= e.has_log_number;
		have_seq |= e.has_last_seq;
		r = apply_edit(vs, &e, mpath);
		edit_free(&e);
		if (r < 0)
			goto out;
	}
	if (r < 0)
		goto out;
	if ((r = manifest_tail_check(f, msize, rd, mpath)) < 0)
		goto out;
	if (!have_next || !have_log || !have_seq) {
		r = ERR_CORRUPT("%s: incomplete manifest (no %s)", mpath,
			       !have_next ? "next file number" : !have_log ? "log number" :
			       "last sequence");
		goto out;
	}
	/* every table must be there, with the size the manifest recorded */
	for (size_t ti = 0; ti < vs->ntrees && r == 0; ti++) {
		struct version *v = vs->trees[ti]->current;
		for (int l = 0; l < NUM_LEVELS && r == 0; l++) {
			for (size_t i = 0; i < v->nfiles[l]; i++) {
				const struct file_meta *fm = v->files[l][i];
				char *p = fname_sst(vs->dir, fm->number);
				uint64_t sz;
				if (env_file_size(vs->env, p, &sz) < 0)
					r = ERR_CORRUPT("%s: table file is missing (named in %s)", p,
						       mpath);
				else if (sz != fm->size)
					r = ERR_CORRUPT("%s: size %llu, but the manifest says %llu", p,
						       (unsigned long long)sz,
						       (unsigned long long)fm->size);
				free(p);
				if (r < 0)
					break;
			}
		}
	}
	if (r < 0)
		goto out;
	for (size_t ti = 0; ti < vs->ntrees; ti++)
		if (vs->next_file <= vs->trees[ti]->log_number)
			vs->next_file = vs->trees[ti]->log_number + 1;
	r = 0;
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(cur_path);
	free(current);
	free(mpath);
	return r;
}

int vs_manifest_is_initial(struct version_set *vs, const char *path)
{
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct version_edit e;
	struct slice rec;
	uint64_t size;
	int r = 0, initial = 0;

	if (env_file_size(vs->env, path, &size) < 0 || env_open_read(vs->env, path, &f) < 0)
		return 0;
	rd = wal_reader_new(f, size, path);
	initial = 1;
	while (initial && (r = wal_read(rd, &rec)) > 0) {
		if (edit_decode(&e, rec, path) < 0) {
			initial = 0;
			break;
		}
		initial = e.tree == 0 && e.nadds == 0 && e.ndels == 0 && !e.drop_tree;
		edit_free(&e);
	}
	if (initial && r < 0)
		initial = 0;   /* damage, not a write cut short */
	wal_reader_free(rd);
	env_close(f);
	return initial;
}

/* One tree's whole state as one edit; the first also carries the global fields. */
static void snapshot_edit(struct version_set *vs, struct vtree *t, int first,
			  struct version_edit *e)
{
	const struct version *v = t->current;

	edit_init(e);
	e->tree = t->id;
	if (t->id != 0)
		e->tree_name = xstrdup(t->name);
	for (int l = 0; l < NUM_LEVELS; l++) {
		if (t->compact_pointer[l].len)
			edit_set_compact_pointer(e, l, buf_slice(&t->compact_pointer[l]));
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			struct file_meta *f = v->files[l][i];
			e->adds = xrealloc(e->adds, (e->nadds + 1) * sizeof(*e->adds));
			e->adds[e->nadds].level = l;
			e->adds[e->nadds].f = f;
			fm_ref(f);
			e->nadds++;
		}
	}
	edit_set_log(e, t->log_number, t->log_seq);
	if (!first)
		return;
	e->has_format = 1;
	e->format = ENGINE_FORMAT_VERSION;
	e->has_next_file = 1;
	e->next_file = vs->next_file;
	e->has_last_seq = 1;
	e->last_seq = vs->last_seq;
	e->has_next_tree = 1;
	e->next_tree = vs->next_tree;
	for (size_t i = 0; i < vs->nfailed; i++)
		edit_add_failed_log(e, vs->failed[i].number, vs->failed[i].acked);
}

/* Forget the failed logs that no live tree needs any more. */
static void prune_failed_logs(struct version_set *vs)
{
	uint64_t min_log = vs_min_log_number(vs);
	size_t n = 0;

	for (size_t i = 0; i < vs->nfailed; i++)
		if (vs->failed[i].number >= min_log)
			vs->failed[n++] = vs->failed[i];
	vs->nfailed = n;
}

int vs_new_manifest(struct version_set *vs)
{
	uint64_t number = vs_new_file_number(vs);
	char *path = fname_manifest(vs->dir, number);
	char *tmp = fname_current_tmp(vs->dir);
	char *cur = fname_current(vs->dir);
	char *name = fname_manifest(NULL, number);
	char *line = xasprintf("%s\n", name);
	struct version_edit e;
	struct wal_writer *w = NULL;
	struct env_file *f;
	struct buf rec = BUF_INIT;
	int r;

	r = env_open_append(vs->env, path, &f);
	if (r < 0)
		goto out;
	w = wal_writer_new(f);
	prune_failed_logs(vs);
	/* the default tree first: its record carries the format and the global fields */
	for (size_t i = 0; i < vs->ntrees && r == 0; i++) {
		struct vtree *t = vs->trees[i];
		if (t->dropped)
			continue;
		snapshot_edit(vs, t, i == 0, &e);
		buf_clear(&rec);
		edit_encode(&e, &rec);
		edit_free(&e);
		r = wal_add(w, buf_slice(&rec));
	}
	if (r < 0 || (r = wal_sync(w)) < 0)
		goto out;
	/* CURRENT switches atomically: temporary file, fsync, rename, directory fsync */
	if ((r = env_write_file(vs->env, tmp, line, strlen(line), NULL)) < 0 ||
	    (r = env_rename(vs->env, tmp, cur)) < 0)
		goto out;
	/*
	 * From the rename on, CURRENT may name the new manifest, now or after a
	 * crash: it is the one to use and must never be removed, even when the
	 * directory fsync below fails (then the next edit switches again).
	 */
	if (vs->manifest)
		wal_writer_free(vs->manifest);
	vs->manifest = w;
	vs->manifest_number = number;
	w = NULL;
	r = env_sync_dir(vs->env, vs->dir);
	vs->manifest_stale = r < 0;
out:
	if (w) {
		wal_writer_free(w);
		env_unlink(vs->env, path);
	}
	buf_free(&rec);
	free(path);
	free(tmp);
	free(cur);
	free(name);
	free(line);
	return r;
}

void vs_wait_idle(struct version_set *vs)
{
	while (vs->manifest_writing)
		pthread_cond_wait(&vs->manifest_cv, vs->mu);
}

/*
 * The fdatasync of the edit runs with vs->mu released: writers and readers
 * take that lock for every call, and an fdatasync takes milliseconds.  What
 * the edit is checked against (the tree's current version) and what it
 * records (next file, last sequence) are taken after the previous edit is
 * done, and only an edit changes a version, so nothing it relies on moves
 * while the lock is released; file numbers handed out meanwhile are above
 * its next file, as a reopen finds them in the directory and raises it.
 */
int vs_log_and_apply(struct version_set *vs, struct version_edit *e)
{
	struct vtree *t;
	struct buf rec = BUF_INIT;
	int r;

	if (vs->mu)
		vs_wait_idle(vs);
	t = vs_tree(vs, e->tree);
	if (t && t->dropped)
		return ERR_SET(-ENOENT, "tree %s was dropped", t->name);
	if (t && !e->has_log_number)
		edit_set_log(e, t->log_number, t->log_seq);
	if (t && t->id != 0 && !e->tree_name)
		e->tree_name = xstrdup(t->name);
	e->has_next_file = 1;
	e->next_file = vs->next_file;
	e->has_next_tree = 1;
	e->next_tree = vs->next_tree > e->tree ? vs->next_tree : e->tree + 1;
	if (!e->has_last_seq) {
		e->has_last_seq = 1;
		e->last_seq = vs->last_seq;
	}
	if (t) {
		/* check the result before logging it: a broken level invariant is a bug */
		struct version *v;
		r = version_apply(vs, t, t->current, e, &v);
		if (r < 0)
			return r;
		version_unref(v);
	}
	/* a manifest whose tail is unknown is never appended to: start a new one */
	if (vs->manifest_stale && (r = vs_new_manifest(vs)) < 0)
		return r;
	edit_encode(e, &rec);
	vs->manifest_writing = 1;
	if (vs->mu)
		pthread_mutex_unlock(vs->mu);
	r = wal_add(vs->manifest, buf_slice(&rec));
	if (r == 0)
		r = wal_sync(vs->manifest);
	if (vs->mu)
		pthread_mutex_lock(vs->mu);
	vs->manifest_writing = 0;
	pthread_cond_broadcast(&vs->manifest_cv);
	buf_free(&rec);
	if (r < 0) {
		/*
		 * The edit may or may not be on disk.  It is not applied, and the
		 * next edit goes to a new manifest written from memory, so what a
		 * reopen finds never depends on how much of this one landed.
		 */
		vs->manifest_stale = 1;
		return r;
	}
	return apply_edit(vs, e, "manifest");
}

uint64_t *vs_live_files(struct version_set *vs, size_t *n)
{
	size_t cap = 64;
	uint64_t *out = xmalloc(cap * sizeof(*out));

	*n = 0;
	for (struct version *v = vs->live.next; v != &vs->live; v = v->next) {
		for (int l = 0; l < NUM_LEVELS; l++) {
			for (size_t i = 0; i < v->nfiles[l]; i++) {
				if (*n == cap) {
					cap *= 2;
					out = xrealloc(out, cap * sizeof(*out));
				}
				out[(*n)++] = v->files[l][i]->number;
			}
		}
	}
	return out;
}

/* ------------------------------------------------------------ lookups */

static int ukey_in_file(const struct file_meta *f, struct slice ukey)
{
	return slice_cmp(ukey, fm_smallest_user(f)) >= 0 && slice_cmp(ukey, fm_largest_user(f)) <= 0;
}

/* Index of the first file in a sorted level whose largest key >= ikey. */
static size_t find_file(struct file_meta *const *files, size_t n, struct slice ikey)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ikey_cmp(buf_slice(&files[mid]->largest), ikey) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Look in one table.  Returns 1 if the table decides the answer (a version
 * of ukey or a tombstone covering it, visible at snap), 0 if not, < 0 error.
 */
static int get_in_file(struct version_set *vs, const struct file_meta *f, struct slice ukey,
		       uint64_t hash, uint64_t snap, int *type, uint64_t *seq, struct buf *val,
		       uint64_t *bloom_useful)
{
	struct cache_handle *h;
	struct sst *t;
	uint64_t tomb;
	int r, skipped = 0;

	r = tcache_get(vs->tc, f, &t, &h);
	if (r < 0)
		return r;
	tomb = f->range_dels ? rdel_set_covering(sst_range_dels(t), ukey, snap) : 0;
	r = sst_get_hashed(t, ukey, hash, snap, type, seq, val, &skipped);
	tcache_release(vs->tc, h);
	if (skipped && bloom_useful)
		__atomic_add_fetch(bloom_useful, 1, __ATOMIC_RELAXED);
	if (r < 0)
		return r;
	if (r > 0 && *seq > tomb)
		return 1;
	if (tomb) {
		*type = KT_DELETE;
		*seq = tomb;
		return 1;
	}
	return 0;
}

int version_get(struct version *v, struct slice ukey, uint64_t hash, uint64_t snap, int *type,
		uint64_t *seq, struct buf *val, uint64_t *bloom_useful)
{
	struct buf lookup = BUF_INIT;
	char lmem[128];
	struct slice lk;
	int r = 0;

	for (size_t i = 0; i < v->nfiles[0]; i++) {
		const struct file_meta *f = v->files[0][i];
		if (!ukey_in_file(f, ukey) || f->smallest_seq > snap)
			continue;
		r = get_in_file(v->vs, f, ukey, hash, snap, type, seq, val, bloom_useful);
		if (r != 0)
			goto out;
	}
	/* the lookup key, on the stack when it fits */
	lk = ikey_seek_key(lmem, sizeof(lmem), &lookup, ukey, snap);
	for (int l = 1; l < NUM_LEVELS; l++) {
		size_t n = v->nfiles[l];
		size_t i = n ? find_file(v->files[l], n, lk) : 0;
		/* a file whose tombstone ends at ukey may share that boundary with the next */
		for (; i < n; i++) {
			const struct file_meta *f = v->files[l][i];
			if (slice_cmp(ukey, fm_smallest_user(f)) < 0)
				break;
			r = get_in_file(v->vs, f, ukey, hash, snap, type, seq, val, bloom_useful);
			if (r != 0)
				goto out;
		}
	}
out:
	buf_free(&lookup);
	return r;
}

struct file_meta **version_overlapping(const struct version *v, int level, const struct slice *lo,
				       const struct slice *hi, int expand, size_t *n)
{
	struct file_meta **out = xmalloc((v->nfiles[level] + 1) * sizeof(*out));
	struct buf blo = BUF_INIT, bhi = BUF_INIT;
	int have_lo = lo != NULL, have_hi = hi != NULL;
	size_t i;

	if (lo)
		buf_set(&blo, lo->data, lo->len);
	if (hi)
		buf_set(&bhi, hi->data, hi->len);
restart:
	*n = 0;
	for (i = 0; i < v->nfiles[level]; i++) {
		struct file_meta *f = v->files[level][i];
		struct slice fs = fm_smallest_user(f), fl = fm_largest_user(f);
		if (have_hi && slice_cmp(fs, buf_slice(&bhi)) > 0)
			continue;
		if (have_lo && slice_cmp(fl, buf_slice(&blo)) < 0)
			continue;
		out[(*n)++] = f;
		if (level == 0 && expand) {
			/* widen the range to this file and look again */
			if (have_lo && slice_cmp(fs, buf_slice(&blo)) < 0) {
				buf_set(&blo, fs.data, fs.len);
				goto restart;
			}
			if (have_hi && slice_cmp(fl, buf_slice(&bhi)) > 0) {
				buf_set(&bhi, fl.data, fl.len);
				goto restart;
			}
		}
	}
	buf_free(&blo);
	buf_free(&bhi);
	return out;
}

/*
 * The tombstone cursor reads each table's own fragmented set (built once,
 * when the table is opened) where it lies, instead of merging every table's
 * tombstones into one set per version: that merge cost O(T log T) for T
 * tombstone sequences, again for every version an iterator was made on, and
 * with tombstones piling up under old snapshots it grew into most of the
 * time of a long run.  Now making a cursor costs one pass over the file
 * lists, and a lookup one cursor step per source: each level-0 table with
 * tombstones is a source, and so is each deeper level with any (its tables
 * are disjoint and sorted, so their sets follow one another).
 */
struct vtomb_src {
	struct file_meta **files;      /* with tombstones, in key order; owned array */
	size_t n;
	size_t idx;                    /* the file the cursor is in */
	struct cache_handle *h;        /* pins files[pinned]'s table, or NULL */
	size_t pinned;
	struct rdel_cursor cur;        /* over files[pinned]'s set */
};

struct vtomb_cursor {
	struct version *v;             /* not owned: the caller holds a reference */
	struct vtomb_src *src;
	size_t nsrc;
	int status;                    /* the first table that could not be opened */
};

static void vtomb_add(struct vtomb_cursor *c, struct file_meta **files, size_t n)
{
	struct vtomb_src *s;

	c->src = xrealloc(c->src, (c->nsrc + 1) * sizeof(*c->src));
	s = &c->src[c->nsrc++];
	memset(s, 0, sizeof(*s));
	s->files = files;
	s->n = n;
}

struct vtomb_cursor *vtomb_cursor_new(struct version *v)
{
	struct vtomb_cursor *c = xcalloc(1, sizeof(*c));

	c->v = v;
	for (int l = 0; l < NUM_LEVELS; l++) {
		struct file_meta **fs = NULL;
		size_t n = 0;

		for (size_t i = 0; i < v->nfiles[l]; i++) {
			struct file_meta *f = v->files[l][i];
			if (!f->range_dels)
				continue;
			if (l == 0) {
				/* level-0 tables overlap: each is a source of its own */
				struct file_meta **one = xmalloc(sizeof(*one));
				one[0] = f;
				vtomb_add(c, one, 1);
				continue;
			}
			fs = xrealloc(fs, (n + 1) * sizeof(*fs));
			fs[n++] = f;
		}
		if (n)
			vtomb_add(c, fs, n);
	}
	return c;
}

int vtomb_cursor_empty(const struct vtomb_cursor *c)
{
	return c->nsrc == 0;
}

int vtomb_cursor_status(const struct vtomb_cursor *c)
{
	return c->status;
}

void vtomb_cursor_free(struct vtomb_cursor *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nsrc; i++) {
		if (c->src[i].h)
			tcache_release(c->v->vs->tc, c->src[i].h);
		free(c->src[i].files);
	}
	free(c->src);
	free(c);
}

/*
 * Put s on the file whose tombstones may cover ukey, if any: a few steps
 * from where it was for keys met in order, a binary search after a jump.
 * A table's tombstones cover only keys in [smallest user key, largest user
 * key): its largest key is at least the (exclusive) end of each of them.
 * Those ranges are disjoint along a level even where one table ends at the
 * user key where the next begins.  Returns 0 if no file of s may cover ukey.
 */
static int vtomb_locate(struct vtomb_src *s, struct slice ukey)
{
	size_t i = s->idx;
	int steps = 0;

	while (i + 1 < s->n && slice_cmp(ukey, fm_largest_user(s->files[i])) >= 0 && steps < 4) {
		i++;
		steps++;
	}
	while (i > 0 && slice_cmp(ukey, fm_smallest_user(s->files[i])) < 0 && steps < 4) {
		i--;
		steps++;
	}
	if ((i + 1 < s->n && slice_cmp(ukey, fm_largest_user(s->files[i])) >= 0) ||
	    (i > 0 && slice_cmp(ukey, fm_smallest_user(s->files[i])) < 0)) {
		size_t lo = 0, hi = s->n;   /* the first file whose largest key > ukey */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (slice_cmp(fm_largest_user(s->files[mid]), ukey) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		i = lo < s->n ? lo : s->n - 1;
	}
	s->idx = i;
	return slice_cmp(ukey, fm_smallest_user(s->files[i])) >= 0 &&
	       slice_cmp(ukey, fm_largest_user(s->files[i])) < 0;
}

uint64_t vtomb_cursor_covering(struct vtomb_cursor *c, struct slice ukey, uint64_t snap,
			       const struct rdel_frag **fr)
{
	uint64_t best = 0;

	*fr = NULL;
	for (size_t i = 0; i < c->nsrc; i++) {
		struct vtomb_src *s = &c->src[i];
		uint64_t seq;

		if (!vtomb_locate(s, ukey))
			continue;
		if (!s->h || s->pinned != s->idx) {
			struct sst *t;
			if (s->h)
				tcache_release(c->v->vs->tc, s->h);
			s->h = NULL;
			int r = tcache_get(c->v->vs->tc, s->files[s->idx], &t, &s->h);
			if (r < 0) {
				/*
				 * Its tombstones are unknown, so nothing may be called
				 * live: the file's own iterator may have read it before
				 * (and the table cache closed it since), so it cannot
				 * be left to report the error.
				 */
				s->h = NULL;
				if (!c->status)
					c->status = r;
				continue;
			}
			s->pinned = s->idx;
			rdel_cursor_init(&s->cur, sst_range_dels(t));
		}
		seq = rdel_cursor_covering(&s->cur, ukey, snap);
		if (seq > best) {
			best = seq;
			*fr = rdel_cursor_frag(&s->cur);
		}
	}
	return best;
}

/* ------------------------------------------------------------ level iterator */

/*
 * Walks the files of one sorted level as one stream, opening a file only
 * when the walk reaches it, so a short scan touches one or two files.
 */
struct level_iter {
	struct iter base;
	struct version *v;
	int level;
	unsigned sst_flags;      /* for each file's iterator (sst.h) */
	size_t idx;              /* current file; nfiles when past the end */
	struct iter *cur;
	int status;
	uint64_t level_max_seq;
};

#define LI(it) ((struct level_iter *)(it))

static struct file_meta **li_files(struct level_iter *li, size_t *n)
{
	*n = li->v->nfiles[li->level];
	return li->v->files[li->level];
}

static void li_open(struct level_iter *li, size_t idx)
{
	size_t n;
	struct file_meta **files = li_files(li, &n);

	if (li->cur && li->idx == idx)
		return;
	if (li->cur) {
		int st = iter_status(li->cur);
		if (st && !li->status)
			li->status = st;
		iter_destroy(li->cur);
		li->cur = NULL;
	}
	li->idx = idx;
	if (idx < n)
		li->cur = tcache_iter(li->v->vs->tc, files[idx], li->sst_flags);
}

static int li_valid(struct iter *it)
{
	struct level_iter *li = LI(it);

	return li->cur && iter_valid(li->cur);
}

/* Move forward over empty files; stop at an error. */
static void li_skip_forward(struct level_iter *li)
{
	size_t n;

	li_files(li, &n);
	while (li->cur && !iter_valid(li->cur) && !iter_status(li->cur)) {
		if (li->idx + 1 >= n) {
			li_open(li, n);
			return;
		}
		li_open(li, li->idx + 1);
		iter_seek_first(li->cur);
	}
}

static void li_skip_backward(struct level_iter *li)
{
	size_t n;

	li_files(li, &n);
	while (li->cur && !iter_valid(li->cur) && !iter_status(li->cur)) {
		if (li->idx == 0) {
			li_open(li, n);
			return;
		}
		li_open(li, li->idx - 1);
		iter_seek_last(li->cur);
	}
}

static void li_seek_first(struct iter *it)
{
	struct level_iter *li = LI(it);

	li_open(li, 0);
	if (li->cur)
		iter_seek_first(li->cur);
	li_skip_forward(li);
}

static void li_seek_last(struct iter *it)
{
	struct level_iter *li = LI(it);
	size_t n;

	li_files(li, &n);
	if (n == 0) {
		li_open(li, 0);
		return;
	}
	li_open(li, n - 1);
	iter_seek_last(li->cur);
	li_skip_backward(li);
}

static void li_seek(struct iter *it, struct slice target)
{
	struct level_iter *li = LI(it);
	size_t n;
	struct file_meta **files = li_files(li, &n);

	li_open(li, find_file(files, n, target));
	if (li->cur)
		iter_seek(li->cur, target);
	li_skip_forward(li);
}

static void li_next(struct iter *it)
{
	struct level_iter *li = LI(it);

	iter_next(li->cur);
	li_skip_forward(li);
}

static void li_prev(struct iter *it)
{
	struct level_iter *li = LI(it);

	iter_prev(li->cur);
	li_skip_backward(li);
}

static struct slice li_key(struct iter *it) { return iter_key(LI(it)->cur); }
static struct slice li_value(struct iter *it) { return iter_value(LI(it)->cur); }
static uint64_t li_value_size(struct iter *it) { return iter_value_size(LI(it)->cur); }

static int li_status(struct iter *it)
{
	struct level_iter *li = LI(it);

	if (li->status)
		return li->status;
	return li->cur ? iter_status(li->cur) : 0;
}

/*
 * The largest sequence in the whole level, not just the current file: a
 * caller that skips a deleted range seeks this iterator past it, which may
 * cross into later files.
 */
static uint64_t li_max_seq(struct iter *it)
{
	return LI(it)->level_max_seq;
}

static void li_destroy(struct iter *it)
{
	struct level_iter *li = LI(it);

	iter_destroy(li->cur);
	/* the version reference is dropped by the owner (db iterator), under the db mutex */
	free(li);
}

static const struct iter_ops level_ops = {
	.valid = li_valid, .seek_first = li_seek_first, .seek_last = li_seek_last,
	.seek = li_seek, .next = li_next, .prev = li_prev, .key = li_key, .value = li_value,
	.status = li_status, .destroy = li_destroy, .max_seq = li_max_seq,
	.value_size = li_value_size,
};

struct iter *level_iter_new(struct version *v, int level, unsigned sst_flags)
{
	struct level_iter *li = xcalloc(1, sizeof(*li));

	li->base.ops = &level_ops;
	li->v = v;
	li->level = level;
	li->sst_flags = sst_flags;
	li->idx = (size_t)-1;
	for (size_t i = 0; i < v->nfiles[level]; i++)
		if (v->files[level][i]->largest_seq > li->level_max_seq)
			li->level_max_seq = v->files[level][i]->largest_seq;
	return &li->base;
}

int vs_apply_only(struct version_set *vs, struct version_edit *e)
{
	return apply_edit(vs, e, "recovery");
}
int vs_check_manifest(struct version_set *vs,
		      void (*report)(void *arg, const char *file, uint64_t off, const char *msg),
		      void *arg)
{
	char *name = fname_manifest(NULL, vs->manifest_number);
	char *path = xasprintf("%s/%s", vs->dir, name);
	struct wal_reader *rd = NULL;
	struct env_file *f = NULL;
	struct version_edit e;
	struct slice rec;
	uint64_t size, off = 0;
	int r, problems = 0;

	if ((r = env_file_size(vs->env, path, &size)) < 0 ||
	    (r = env_open_read(vs->env, path, &f)) < 0) {
		report(arg, name, 0, kv_strerror(r));
		problems++;
		goto out;
	}
	rd = wal_reader_new(f, size, path);
	while ((r = wal_read(rd, &rec)) > 0) {
		if (edit_decode(&e, rec, path) < 0) {
			report(arg, name, off, kv_strerror(-EUCLEAN));
			problems++;
		} else {
			edit_free(&e);
		}
		off = wal_reader_offset(rd);
	}
	if (r < 0) {
		report(arg, name, wal_reader_offset(rd), kv_strerror(r));
		problems++;
	} else if ((r = manifest_tail_check(f, size, rd, path)) < 0) {
		report(arg, name, wal_reader_offset(rd), kv_strerror(r));
		problems++;
	}
out:
	if (rd)
		wal_reader_free(rd);
	if (f)
		env_close(f);
	free(name);
	free(path);
	return problems ? -EUCLEAN : 0;
}
