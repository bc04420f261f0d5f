/*
 * kv_sst.c -- tests of SSTables (engine/sst.c): 100k entries written and read
 * back with and without compression (point gets at many snapshots, absent
 * keys and the bloom filter, iteration both ways, seeks), range tombstones
 * and the properties they extend, the block cache (including one smaller
 * than a block), a 20 MiB value, and damage: a flipped data byte must give
 * -EUCLEAN from sst_get, the iterator and sst_verify (with its offset), and
 * a damaged footer, magic or metadata block must make sst_open fail; keys-only
 * iteration over the index's single-entry records, and format version 1;
 * the form each block is stored in: plain when compression gains little,
 * zstd with raw literals when entropy coding them gains less than another
 * eighth, entropy-coded literals when that pays.
 *
 * Tables are written through the POSIX environment into a temporary
 * directory that is removed at the end.
 */
#include "crc32c.h"
#include "sst.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_frameHeaderSize */
#include <zstd.h>

static char dir[] = "/tmp/kv_sst.XXXXXX";
static uint64_t rng = 1234;

/* ------------------------------------------------------------ the model */

struct ent {
	size_t koff, klen, voff, vlen;   /* into model.arena: the internal key, the value */
};

struct model {
	struct buf arena;
	struct ent *e;
	size_t n, cap;
	uint64_t min_seq, max_seq, deletes, raw_keys, raw_vals;
};

static struct slice mkey(const struct model *m, size_t i)
{
	return slice_make(m->arena.data + m->e[i].koff, m->e[i].klen);
}

static struct slice mval(const struct model *m, size_t i)
{
	return slice_make(m->arena.data + m->e[i].voff, m->e[i].vlen);
}

static void model_add(struct model *m, struct slice ukey, uint64_t seq, int type, struct slice v)
{
	struct ent *e;

	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 1024;
		m->e = xrealloc(m->e, m->cap * sizeof(*m->e));
	}
	e = &m->e[m->n++];
	e->koff = m->arena.len;
	ikey_append(&m->arena, ukey, seq, type);
	e->klen = m->arena.len - e->koff;
	e->voff = m->arena.len;
	buf_append(&m->arena, v.data, v.len);
	e->vlen = v.len;
	if (m->n == 1 || seq < m->min_seq)
		m->min_seq = seq;
	if (m->n == 1 || seq > m->max_seq)
		m->max_seq = seq;
	m->deletes += type == KT_DELETE;
	m->raw_keys += e->klen;
	m->raw_vals += v.len;
}

static void model_free(struct model *m)
{
	buf_free(&m->arena);
	free(m->e);
}

static void ukey_of(char *out, size_t i)
{
	snprintf(out, 32, "user/%09zu", 2 * i);   /* odd numbers are never present */
}

/*
 * About n entries: user keys with 1 to 4 versions each (newest first, as
 * internal-key order wants), a tenth of them deletes, values that compress
 * (a repeated phrase with a few random bytes).
 */
static void model_make(struct model *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; m->n < n; i++) {
		char uk[32], v[200];
		uint64_t seq = 1000000 + rand_next(&rng) % 1000000;
		int versions = 1 + (int)(rand_next(&rng) % 4);

		ukey_of(uk, i);
		for (int j = 0; j < versions && m->n < n; j++) {
			int type = rand_next(&rng) % 10 == 0 ? KT_DELETE : KT_PUT;
			size_t vl = 0;
			if (type == KT_PUT) {
				int len = snprintf(v, sizeof(v), "value of %s at %llu; ", uk,
						   (unsigned long long)seq);
				vl = (size_t)len + rand_next(&rng) % 120;
				for (size_t k = (size_t)len; k < vl; k++)
					v[k] = k % 16 == 0 ? (char)rand_next(&rng) : 'v';
			}
			model_add(m, slice_str(uk), seq, type, slice_make(v, vl));
			seq -= 1 + rand_next(&rng) % 1000;
		}
	}
}

/* Index of the first entry >= target in internal-key order (n if none). */
static size_t model_lower_bound(const struct model *m, struct slice target)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ikey_cmp(mkey(m, mid), target) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ------------------------------------------------------------ files */

static char *path_of(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

struct tomb {
	const char *start, *end;
	uint64_t seq;
};

/* The last write_table's blocks, and those also compressed with coded literals. */
static uint64_t last_blocks, last_coded;

static int write_table(const char *name, const struct sst_options *o, const struct model *m,
		       const struct tomb *t, size_t nt, struct sst_props *props)
{
	char *path = path_of(name);
	struct env_file *f;
	struct sst_builder *b;
	int r = env_open_append(env_posix(), path, &f);

	free(path);
	if (r < 0)
		return r;
	b = sst_builder_new(f, o, name);
	for (size_t i = 0; m && i < m->n && r == 0; i++)
		r = sst_builder_add(b, mkey(m, i), mval(m, i));
	for (size_t i = 0; i < nt && r == 0; i++)
		r = sst_builder_add_range_del(b, slice_str(t[i].start), slice_str(t[i].end),
					      t[i].seq);
	if (r == 0)
		r = sst_builder_finish(b, props);
	sst_builder_forms(b, &last_blocks, &last_coded);
	sst_builder_free(b);
	if (r == 0)
		r = env_sync(f);
	env_close(f);
	return r;
}

static int open_table(const char *name, struct cache *c, uint64_t *bytes_read, struct sst **t)
{
	char *path = path_of(name);
	struct env_file *f;
	uint64_t size;
	int r = env_file_size(env_posix(), path, &size);

	if (r == 0)
		r = env_open_read(env_posix(), path, &f);
	free(path);
	if (r < 0)
		return r;
	return sst_open(f, size, name, c, bytes_read, 1, t);
}

/* Copy table `from` to `to` with the byte at off (from the end if negative) xor'ed with x. */
static void damaged_copy(const char *from, const char *to, long long off, unsigned char x)
{
	char *pf = path_of(from), *pt = path_of(to), *data;
	size_t len;

	if (env_read_file(env_posix(), pf, &data, &len) < 0)
		abort();
	if (off < 0)
		off += (long long)len;
	data[off] ^= (char)x;
	if (env_write_file(env_posix(), pt, data, len, NULL) < 0)
		abort();
	free(data);
	free(pf);
	free(pt);
}

static uint64_t file_size_of(const char *name)
{
	char *p = path_of(name);
	uint64_t size = 0;

	env_file_size(env_posix(), p, &size);
	free(p);
	return size;
}

/* ------------------------------------------------------------ checks */

static int iter_at(struct iter *it, const struct model *m, size_t i)
{
	return iter_valid(it) && i < m->n && slice_eq(iter_key(it), mkey(m, i)) &&
	       slice_eq(iter_value(it), mval(m, i));
}

static void check_iteration(struct sst *t, const struct model *m, const char *what)
{
	struct iter *it = sst_iter_new(t, 1);
	struct buf target = BUF_INIT;
	size_t i, bad;

	for (iter_seek_first(it), i = 0, bad = 0; iter_valid(it); iter_next(it), i++)
		bad += !iter_at(it, m, i);
	ok(bad == 0 && i == m->n && iter_status(it) == 0,
	   "%s: forward iteration returns all %zu entries in order", what, m->n);

	for (iter_seek_last(it), i = m->n, bad = 0; iter_valid(it); iter_prev(it), i--)
		bad += i == 0 || !iter_at(it, m, i - 1);
	ok(bad == 0 && i == 0 && iter_status(it) == 0,
	   "%s: backward iteration returns them in reverse", what);

	/* Seeks to random (user key, snapshot) targets, present or absent, and a step each way. */
	for (int k = 0, b2 = 0; k < 3000; k++, bad += b2, b2 = 0) {
		char uk[32];
		size_t want;

		snprintf(uk, sizeof(uk), "user/%09llu",
			 (unsigned long long)(rand_next(&rng) % (2 * m->n / 2 + 10)));
		buf_clear(&target);
		ikey_append(&target, slice_str(uk), rand_next(&rng) % 2100000, KT_SEEK);
		want = model_lower_bound(m, buf_slice(&target));
		iter_seek(it, buf_slice(&target));
		if (want == m->n) {
			b2 = iter_valid(it);
			continue;
		}
		b2 = !iter_at(it, m, want);
		iter_next(it);
		b2 |= want + 1 < m->n ? !iter_at(it, m, want + 1) : iter_valid(it);
		iter_seek(it, buf_slice(&target));
		iter_prev(it);
		b2 |= want > 0 ? !iter_at(it, m, want - 1) : iter_valid(it);
	}
	ok(bad == 0, "%s: seek lands on the first entry >= target; next and prev from there "
	   "are its neighbours", what);
	iter_seek(it, slice_str("zzzzzzzzzz"));
	ok(!iter_valid(it) && iter_status(it) == 0, "%s: seek past the end is invalid, status 0",
	   what);
	iter_seek_first(it);
	ok(it->ops->max_seq && it->ops->max_seq(it) == sst_get_props(t)->largest_seq,
	   "%s: the iterator's max_seq is the table's largest sequence", what);
	iter_destroy(it);
	buf_free(&target);
}

/* Every stride-th user key at the newest snapshot and at random older ones; absent keys. */
static void check_gets(struct sst *t, const struct model *m, const char *what, int with_bloom,
		       size_t stride)
{
	struct buf v = BUF_INIT;
	size_t bad = 0, checked = 0, skipped = 0, absent = 0, absent_bad = 0, nkey = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct slice uk = ikey_user(mkey(m, i));
		uint64_t snaps[2], seq;
		int type, skip, r;

		if (i > 0 && slice_eq(uk, ikey_user(mkey(m, i - 1))))
			continue;
		if (nkey++ % stride)
			continue;
		snaps[0] = SEQ_MAX;
		snaps[1] = ikey_seq(mkey(m, i)) - rand_next(&rng) % 3000;
		for (int s = 0; s < 2; s++) {
			struct buf target = BUF_INIT;
			size_t want;

			ikey_append(&target, uk, snaps[s], KT_SEEK);
			want = model_lower_bound(m, buf_slice(&target));
			buf_free(&target);
			r = sst_get(t, uk, snaps[s], &type, &seq, &v, &skip);
			checked++;
			if (want < m->n && slice_eq(ikey_user(mkey(m, want)), uk))
				bad += r != 1 || type != ikey_type(mkey(m, want)) ||
				       seq != ikey_seq(mkey(m, want)) ||
				       !slice_eq(buf_slice(&v), mval(m, want));
			else
				bad += r != 0;
		}
		/* The odd neighbour of every key is absent. */
		char ab[40];
		snprintf(ab, sizeof(ab), "%.*s1", (int)uk.len, uk.data);
		r = sst_get(t, slice_str(ab), SEQ_MAX, &type, &seq, &v, &skip);
		absent++;
		absent_bad += r != 0;
		skipped += skip == 1;
	}
	ok(bad == 0, "%s: sst_get finds the newest visible version at %zu (key, snapshot) pairs, "
	   "or nothing when every version is newer", what, checked);
	ok(absent_bad == 0, "%s: sst_get reports %zu absent keys as absent", what, absent);
	if (with_bloom)
		ok(skipped * 100 > absent * 95, "%s: the bloom filter answers most absent lookups "
		   "(%zu of %zu)", what, skipped, absent);
	else
		is_int(skipped, 0, "%s: without a filter no lookup is skipped", what);
	buf_free(&v);
}

static void check_props(const struct sst_props *p, const struct model *m, const char *what)
{
	ok(p->num_entries == m->n && p->num_deletes == m->deletes && p->num_range_dels == 0,
	   "%s: properties count %zu entries and %llu deletes", what, m->n,
	   (unsigned long long)m->deletes);
	ok(p->smallest_seq == m->min_seq && p->largest_seq == m->max_seq,
	   "%s: properties hold the smallest and largest sequence", what);
	ok(p->raw_key_bytes == m->raw_keys && p->raw_value_bytes == m->raw_vals,
	   "%s: properties hold the raw key and value bytes", what);
	ok(slice_eq(buf_slice(&p->smallest), mkey(m, 0)) &&
	   slice_eq(buf_slice(&p->largest), mkey(m, m->n - 1)),
	   "%s: smallest and largest are the first and last keys", what);
}

static void test_round_trip(const struct model *m, int level)
{
	struct sst_options o = { 4096, 16, level, 10 };
	struct sst_props props;
	struct sst *t;
	uint64_t bytes_read = 0;
	char name[32], what[64];
	int r;

	snprintf(name, sizeof(name), "big-%d.sst", level);
	snprintf(what, sizeof(what), "100k entries, zstd level %d", level);
	r = write_table(name, &o, m, NULL, 0, &props);
	is_int(r, 0, "%s: the table is written", what);
	is_int(props.file_size, file_size_of(name), "%s: the builder's file size is the file's",
	       what);
	check_props(&props, m, what);
	if (level)
		ok(props.data_bytes < (m->raw_keys + m->raw_vals) * 3 / 4,
		   "%s: compression shrinks the data (%llu of %llu bytes)", what,
		   (unsigned long long)props.data_bytes,
		   (unsigned long long)(m->raw_keys + m->raw_vals));
	else
		ok(props.data_bytes > m->raw_vals, "%s: uncompressed data is at least as large as "
		   "the values", what);
	sst_props_free(&props);

	r = open_table(name, NULL, &bytes_read, &t);
	is_int(r, 0, "%s: the table opens", what);
	if (r < 0)
		return;
	check_props(sst_get_props(t), m, what);
	is_int(sst_get_props(t)->file_size, file_size_of(name), "%s: the file size is reported",
	       what);
	ok(bytes_read > 0, "%s: opening counts the metadata bytes read", what);
	is_int(rdel_set_count(sst_range_dels(t)), 0, "%s: no range tombstones", what);
	check_iteration(t, m, what);
	check_gets(t, m, what, 1, 1);
	is_int(sst_verify(t, NULL, NULL), 0, "%s: sst_verify finds nothing wrong", what);
	sst_close(t);
}

static void test_no_filter(const struct model *m)
{
	struct sst_options o = { 4096, 16, 1, 0 };
	struct sst_props props;
	struct sst *t;

	is_int(write_table("nofilter.sst", &o, m, NULL, 0, &props), 0,
	       "a table without a bloom filter is written");
	sst_props_free(&props);
	is_int(open_table("nofilter.sst", NULL, NULL, &t), 0, "and opens");
	check_gets(t, m, "no filter", 0, 4);
	sst_close(t);
}

static void test_empty(void)
{
	struct sst_options o = { 4096, 16, 1, 10 };
	struct sst_props props;
	struct sst *t;
	struct iter *it;
	struct buf v = BUF_INIT;
	uint64_t seq;
	int type;

	is_int(write_table("empty.sst", &o, NULL, NULL, 0, &props), 0, "an empty table is written");
	ok(props.num_entries == 0 && props.smallest.len == 0 && props.largest.len == 0,
	   "an empty table has no entries and no bounds");
	sst_props_free(&props);
	is_int(open_table("empty.sst", NULL, NULL, &t), 0, "an empty table opens");
	it = sst_iter_new(t, 1);
	iter_seek_first(it);
	ok(!iter_valid(it) && iter_status(it) == 0, "an empty table's iterator has no entries");
	iter_seek_last(it);
	ok(!iter_valid(it), "not from the end either");
	iter_destroy(it);
	is_int(sst_get(t, slice_str("a"), SEQ_MAX, &type, &seq, &v, NULL), 0,
	       "a lookup in an empty table finds nothing");
	sst_close(t);
	buf_free(&v);
}

static int frags_equal(const struct rdel_set *a, const struct rdel_set *b)
{
	if (rdel_set_count(a) != rdel_set_count(b))
		return 0;
	for (size_t i = 0; i < rdel_set_count(a); i++) {
		const struct rdel_frag *x = rdel_set_frag(a, i), *y = rdel_set_frag(b, i);
		if (!slice_eq(x->start, y->start) || !slice_eq(x->end, y->end) ||
		    x->nseqs != y->nseqs || memcmp(x->seqs, y->seqs, x->nseqs * 8) != 0)
			return 0;
	}
	return 1;
}

static void test_range_dels(void)
{
	static const struct tomb tombs[] = {
		{ "user/5", "user/7", 70 }, { "a", "c", 100 }, { "x", "zz", 50 },
		{ "c", "m", 10 }, { "e", "f", 2000000000 }, { "user/5", "user/7", 70 },
	};
	size_t nt = sizeof(tombs) / sizeof(tombs[0]);
	struct sst_options o = { 1024, 4, 1, 10 };
	struct rtomb rt[sizeof(tombs) / sizeof(tombs[0])];
	struct model m;
	struct sst_props props;
	struct buf want = BUF_INIT;
	struct rdel_set *ref;
	struct sst *t;

	model_make(&m, 500);
	is_int(write_table("rdel.sst", &o, &m, tombs, nt, &props), 0,
	       "a table with range tombstones is written");
	is_int(props.num_range_dels, 5, "a tombstone given twice is stored once");
	ikey_append(&want, slice_str("a"), 100, KT_RANGE_DEL);
	ok(slice_eq(buf_slice(&props.smallest), buf_slice(&want)),
	   "the smallest key is a tombstone's start when it precedes every entry");
	buf_clear(&want);
	ikey_append(&want, slice_str("zz"), SEQ_MAX, KT_RANGE_DEL);
	ok(slice_eq(buf_slice(&props.largest), buf_slice(&want)),
	   "the largest key is (end, SEQ_MAX) of a tombstone reaching past every entry");
	ok(props.largest_seq == 2000000000 && props.smallest_seq == 10,
	   "tombstone sequences count in the smallest and largest sequence");
	sst_props_free(&props);

	is_int(open_table("rdel.sst", NULL, NULL, &t), 0, "the table opens");
	for (size_t i = 0; i < nt; i++)
		rt[i] = (struct rtomb){ slice_str(tombs[i].start), slice_str(tombs[i].end),
					tombs[i].seq };
	ref = rdel_set_build(rt, nt, SEQ_MAX, 0);
	ok(frags_equal(sst_range_dels(t), ref), "the tombstones read back fragment exactly as "
	   "the ones written (%zu fragments)", rdel_set_count(ref));
	is_int(rdel_set_covering(sst_range_dels(t), slice_str("user/6"), SEQ_MAX), 70,
	       "a key inside a stored tombstone is covered at its sequence");
	ok(slice_eq(buf_slice(&sst_get_props(t)->largest), buf_slice(&want)) &&
	   sst_get_props(t)->num_range_dels == 5 && sst_get_props(t)->largest_seq == 2000000000,
	   "the properties read back hold the tombstones' count, bounds and sequences");
	check_iteration(t, &m, "with tombstones");
	is_int(sst_verify(t, NULL, NULL), 0, "sst_verify accepts the table");
	sst_close(t);
	rdel_set_free(ref);

	/* Tombstones only. */
	is_int(write_table("rdel-only.sst", &o, NULL, tombs, 2, &props), 0,
	       "a table of tombstones alone is written");
	buf_clear(&want);
	ikey_append(&want, slice_str("a"), 100, KT_RANGE_DEL);
	ok(slice_eq(buf_slice(&props.smallest), buf_slice(&want)) && props.num_entries == 0,
	   "its smallest key comes from a tombstone");
	sst_props_free(&props);
	is_int(open_table("rdel-only.sst", NULL, NULL, &t), 0, "and opens");
	is_int(rdel_set_count(sst_range_dels(t)), 2, "with its two tombstones");
	sst_close(t);

	buf_free(&want);
	model_free(&m);
}

static void test_cache(const struct model *m)
{
	struct sst_options o = { 16384, 16, 1, 10 };
	struct sst_props props;
	struct cache *tiny = cache_new(1024), *big = cache_new(64u << 20);
	struct sst *t;
	uint64_t bytes_read = 0, after_first, hits, misses;
	struct iter *it;
	size_t n, bad, usage;

	is_int(write_table("cache.sst", &o, m, NULL, 0, &props), 0, "a table of 16 KiB blocks is "
	       "written");
	sst_props_free(&props);

	is_int(open_table("cache.sst", tiny, NULL, &t), 0, "it opens with a 1 KiB block cache");
	check_iteration(t, m, "cache smaller than a block");
	check_gets(t, m, "cache smaller than a block", 1, 20);
	ok(cache_usage(tiny) <= cache_capacity(tiny), "the tiny cache stays within its capacity");
	sst_close(t);

	is_int(open_table("cache.sst", big, &bytes_read, &t), 0, "it opens with a 64 MiB cache");
	it = sst_iter_new(t, 0);
	for (iter_seek_first(it), n = 0; iter_valid(it); iter_next(it))
		n++;
	iter_destroy(it);
	is_int(cache_usage(big), 0, "an iterator with fill_cache = 0 leaves the cache empty");
	it = sst_iter_new(t, 1);
	for (iter_seek_first(it), n = 0; iter_valid(it); iter_next(it))
		n++;
	iter_destroy(it);
	after_first = bytes_read;
	usage = cache_usage(big);
	ok(usage > 0, "a filling iterator leaves its blocks in the cache");
	cache_counters(big, &hits, &misses);
	it = sst_iter_new(t, 1);
	for (iter_seek_first(it), n = 0, bad = 0; iter_valid(it); iter_next(it), n++)
		bad += !iter_at(it, m, n);
	iter_destroy(it);
	ok(bad == 0 && n == m->n, "a second pass reads the same entries");
	{
		uint64_t h2, m2;

		cache_counters(big, &h2, &m2);
		is_int(h2 - hits, SST_SCAN_FILL_BLOCKS, "a long scan kept its first %d blocks in the "
		       "cache: the second pass finds them there", SST_SCAN_FILL_BLOCKS);
		ok(m2 - misses > 0 && bytes_read > after_first, "and reads the %llu blocks after "
		   "them from the file again", (unsigned long long)(m2 - misses));
		is_int(cache_usage(big), usage, "a second long scan adds nothing to the cache");
	}
	/* short scans (a seek and a few entries) fill the cache wherever they go */
	for (int round = 0; round < 2; round++) {
		after_first = bytes_read;
		it = sst_iter_new(t, 1);
		bad = 0;
		for (size_t i = 0; i < m->n; i += 97) {
			iter_seek(it, mkey(m, i));
			for (size_t j = 0; j < 3 && i + j < m->n; j++, iter_next(it))
				bad += !iter_at(it, m, i + j);
		}
		iter_destroy(it);
		if (round == 0)
			is_int(bad, 0, "short scans all over the table read the right entries");
	}
	is_int(bytes_read, after_first, "a second round of the same short scans reads no bytes "
	       "from the file");
	sst_close(t);
	is_int(cache_usage(big), 0, "closing the table drops its blocks from the cache");
	cache_free(tiny);
	cache_free(big);
}

static void test_big_value(void)
{
	size_t vl = 20u << 20;
	struct sst_options o = { 4096, 16, 3, 10 };
	struct cache *c = cache_new(1u << 20);
	struct model m;
	struct sst_props props;
	struct buf v = BUF_INIT, big = BUF_INIT;
	struct sst *t;
	struct iter *it;
	uint64_t seq;
	int type;

	memset(&m, 0, sizeof(m));
	buf_reserve(&big, vl);
	for (size_t i = 0; i < vl; i += 8) {
		/* Half random, half runs: neither all-compressible nor incompressible. */
		uint64_t x = (i / 8) % 2 ? rand_next(&rng) : 0x4141414141414141ull;
		enc_fixed64(big.data + i, x);
	}
	big.len = vl;
	model_add(&m, slice_str("a"), 5, KT_PUT, slice_str("small before"));
	model_add(&m, slice_str("big"), 6, KT_PUT, buf_slice(&big));
	model_add(&m, slice_str("c"), 7, KT_PUT, slice_str("small after"));
	is_int(write_table("bigvalue.sst", &o, &m, NULL, 0, &props), 0,
	       "a table with a 20 MiB value is written");
	sst_props_free(&props);
	is_int(open_table("bigvalue.sst", c, NULL, &t), 0, "and opens with a 1 MiB cache");
	is_int(sst_get(t, slice_str("big"), SEQ_MAX, &type, &seq, &v, NULL), 1,
	       "the 20 MiB value is found");
	ok(v.len == vl && memcmp(v.data, big.data, vl) == 0 && type == KT_PUT && seq == 6,
	   "and reads back intact");
	is_int(sst_get(t, slice_str("c"), SEQ_MAX, &type, &seq, &v, NULL), 1,
	       "the key after it is found");
	ok(slice_eq(buf_slice(&v), slice_str("small after")), "with its own value");
	it = sst_iter_new(t, 1);
	iter_seek_last(it);
	iter_prev(it);
	ok(iter_valid(it) && slice_eq(iter_value(it), buf_slice(&big)),
	   "iterating backward reaches the big value");
	iter_prev(it);
	ok(iter_valid(it) && slice_eq(iter_value(it), slice_str("small before")),
	   "and the entry before it");
	iter_destroy(it);
	is_int(sst_verify(t, NULL, NULL), 0, "sst_verify accepts it");
	sst_close(t);
	cache_free(c);
	buf_free(&v);
	buf_free(&big);
	model_free(&m);
}

struct reports {
	int n;
	uint64_t off[8];
	char msg[512];
};

static void record(void *arg, uint64_t off, const char *msg)
{
	struct reports *r = arg;

	if (r->n < 8)
		r->off[r->n] = off;
	if (r->n == 0)
		snprintf(r->msg, sizeof(r->msg), "%s", msg);
	r->n++;
}

static void test_damage(int level)
{
	struct sst_options o = { 2048, 16, level, 10 };
	struct model m;
	struct sst_props props;
	struct sst *t;
	struct buf v = BUF_INIT;
	struct reports rep = { 0 };
	struct iter *it;
	uint64_t seq, flip;
	size_t i;
	int type, r;
	char good[32], bad[32], offstr[48];

	snprintf(good, sizeof(good), "dmg-%d.sst", level);
	snprintf(bad, sizeof(bad), "dmg-%d-data.sst", level);
	model_make(&m, 2000);
	is_int(write_table(good, &o, &m, NULL, 0, &props), 0, "level %d: a table is written",
	       level);
	sst_props_free(&props);

	/*
	 * A flipped byte in the middle of the data area, so in some block after
	 * the first.  The entries before that block still read back; the block
	 * itself gives -EUCLEAN everywhere, and sst_verify names its offset.
	 */
	{
		char *p = path_of(good), *data;
		size_t len;
		env_read_file(env_posix(), p, &data, &len);
		flip = dec_fixed64(data + len - 80) / 2;   /* half the filter's offset */
		free(data);
		free(p);
	}
	damaged_copy(good, bad, (long long)flip, 0x10);
	is_int(open_table(bad, NULL, NULL, &t), 0,
	       "level %d: a table with a damaged data block still opens", level);
	is_int(sst_verify(t, record, &rep), -EUCLEAN, "level %d: sst_verify reports the damage",
	       level);
	ok(rep.n == 1 && rep.off[0] > 0 && rep.off[0] <= flip && flip - rep.off[0] < 2048 + 200,
	   "level %d: exactly one problem, at the offset of the block holding byte %llu "
	   "(%d: %s)", level, (unsigned long long)flip, rep.n, rep.msg);
	snprintf(offstr, sizeof(offstr), "offset %llu:", (unsigned long long)rep.off[0]);
	it = sst_iter_new(t, 1);
	for (iter_seek_first(it), i = 0; iter_valid(it) && iter_at(it, &m, i); iter_next(it))
		i++;
	ok(!iter_valid(it) && iter_status(it) == -EUCLEAN && i > 0 && i < m.n,
	   "level %d: iteration returns the %zu entries before the damaged block, then -EUCLEAN",
	   level, i);
	ok(strstr(err_last(), bad) && strstr(err_last(), offstr),
	   "level %d: the iterator's message names the file and the block offset (%s)", level,
	   err_last());
	iter_destroy(it);
	/* At its own sequence: newer versions of its user key may sit in the block before. */
	r = sst_get(t, ikey_user(mkey(&m, i)), ikey_seq(mkey(&m, i)), &type, &seq, &v, NULL);
	is_int(r, -EUCLEAN, "level %d: sst_get of the first entry of the damaged block is -EUCLEAN",
	       level);
	ok(strstr(err_last(), bad) && strstr(err_last(), offstr),
	   "level %d: its message names the file and the block offset (%s)", level,
	   err_last());
	r = sst_get(t, ikey_user(mkey(&m, 0)), SEQ_MAX, &type, &seq, &v, NULL);
	is_int(r, 1, "level %d: keys in undamaged blocks before it are still found", level);
	r = sst_get(t, ikey_user(mkey(&m, m.n - 1)), SEQ_MAX, &type, &seq, &v, NULL);
	is_int(r, 1, "level %d: and after it", level);
	it = sst_iter_new(t, 1);
	iter_seek_last(it);
	while (iter_valid(it))
		iter_prev(it);
	is_int(iter_status(it), -EUCLEAN, "level %d: iterating backward into it reports -EUCLEAN",
	       level);
	iter_destroy(it);
	sst_close(t);

	/* The footer: its handles, its version, its magic, a file too short for it. */
	damaged_copy(good, bad, -80 + 3, 0x01);
	is_int(open_table(bad, NULL, NULL, &t), -EUCLEAN,
	       "level %d: a damaged footer handle fails the footer checksum", level);
	ok(strstr(err_last(), "checksum") != NULL, "level %d: the message says checksum (%s)",
	   level, err_last());
	damaged_copy(good, bad, -1, 0x20);
	is_int(open_table(bad, NULL, NULL, &t), -EUCLEAN,
	       "level %d: a bad magic number is -EUCLEAN", level);
	ok(strstr(err_last(), "magic") && strstr(err_last(), bad),
	   "level %d: the message names the file and says magic (%s)", level, err_last());
	{
		char *p = path_of(good), *q = path_of(bad), *data;
		size_t len;
		env_read_file(env_posix(), p, &data, &len);
		enc_fixed32(data + len - 16, SST_FORMAT_VERSION + 1);
		enc_fixed32(data + len - 12, crc32c_mask(crc32c(data + len - 80, 68)));
		env_write_file(env_posix(), q, data, len, NULL);
		is_int(open_table(bad, NULL, NULL, &t), -EUCLEAN,
		       "level %d: an unknown format version is refused", level);
		env_write_file(env_posix(), q, data, 50, NULL);
		is_int(open_table(bad, NULL, NULL, &t), -EUCLEAN,
		       "level %d: a file shorter than a footer is -EUCLEAN", level);
		free(data);
		free(p);
		free(q);
	}

	/* Each metadata block, damaged, makes the open fail. */
	{
		char *p = path_of(good), *data;
		size_t len;
		const char *names[4] = { "filter", "range-del", "properties", "index" };
		env_read_file(env_posix(), p, &data, &len);
		for (int j = 0; j < 4; j++) {
			uint64_t off = dec_fixed64(data + len - 80 + 16 * j);
			uint64_t sz = dec_fixed64(data + len - 80 + 16 * j + 8);
			damaged_copy(good, bad, (long long)(off + sz / 2), 0x04);
			r = open_table(bad, NULL, NULL, &t);
			ok(r == -EUCLEAN && strstr(err_last(), names[j]),
			   "level %d: a damaged %s block makes sst_open fail with -EUCLEAN (%s)",
			   level, names[j], err_last());
			if (r == 0)
				sst_close(t);
		}
		free(data);
		free(p);
	}
	buf_free(&v);
	model_free(&m);
}

/*
 * Keys-only iteration and the single-entry records of the index (format
 * version 2): entries of block_size bytes or more, each in a block of its
 * own, among small ones -- a put with a 0-byte value under a big key, a
 * deletion with a big key, values shorter and longer than SST_VALUE_PREFIX.
 * A keys-only iterator must give every entry's key and full value size, and
 * value bytes that begin the value, both ways and after seeks, while
 * reading no block of a big entry; a version 1 table (no records) is read
 * as before, and a record in one is refused; a record that does not match
 * its block is what sst_verify reports.
 */
static void test_keys_only(void)
{
	struct sst_options o = { 4096, 16, 0, 10 };   /* uncompressed: blocks as big as their entries */
	struct model m, m2;
	struct sst_props props;
	struct sst *t;
	struct iter *it;
	struct buf big = BUF_INIT, target = BUF_INIT;
	uint64_t bytes = 0, big_bytes = 0, before;
	size_t i, bad, n;
	int records_read = 0;

	memset(&m, 0, sizeof(m));
	buf_reserve(&big, 40000);
	for (i = 0; i < 40000; i++)
		big.data[i] = (char)rand_next(&rng);
	big.len = 40000;
	for (i = 0; i < 40; i++) {
		char uk[32], kbig[5000];
		size_t vl = 4096 + i * 800;

		snprintf(uk, sizeof(uk), "k%03zu", i);
		model_add(&m, slice_str(uk), 100 + i, KT_PUT, slice_str("a small value"));
		snprintf(uk, sizeof(uk), "k%03zu+big", i);
		if (i % 10 == 3) {
			/* a big key: a deletion, or a put of an empty or short value */
			memset(kbig, 'K', sizeof(kbig));
			memcpy(kbig, uk, strlen(uk));
			model_add(&m, slice_make(kbig, sizeof(kbig)), 100 + i, i % 20 == 3 ? KT_DELETE : KT_PUT,
				  slice_make(big.data, i % 20 == 3 ? 0 : i % 40 == 13 ? 0 : 5));
			continue;
		}
		model_add(&m, slice_str(uk), 100 + i, KT_PUT, slice_make(big.data + i, vl));
		big_bytes += vl;
	}
	is_int(write_table("keysonly.sst", &o, &m, NULL, 0, &props), 0,
	       "keys-only: a table of big entries among small ones is written");
	sst_props_free(&props);
	is_int(open_table("keysonly.sst", NULL, &bytes, &t), 0, "keys-only: it opens");
	is_int((int)sst_format_version(t), SST_FORMAT_VERSION, "keys-only: in format version %d",
	       SST_FORMAT_VERSION);

	/* forward, then backward: every key, its full value size and its first bytes */
	before = bytes;
	it = sst_iter_new(t, SST_ITER_KEYS_ONLY);
	for (iter_seek_first(it), i = 0, bad = 0; iter_valid(it); iter_next(it), i++) {
		struct slice v = iter_value(it), want = i < m.n ? mval(&m, i) : slice_make("", 0);
		size_t head = want.len < SST_VALUE_PREFIX ? want.len : SST_VALUE_PREFIX;

		bad += i >= m.n || !slice_eq(iter_key(it), mkey(&m, i)) ||
		       iter_value_size(it) != want.len || v.len < head || v.len > want.len ||
		       memcmp(v.data, want.data, v.len) != 0;
		records_read += v.len < want.len;
	}
	ok(bad == 0 && i == m.n && iter_status(it) == 0,
	   "keys-only: a forward walk gives all %zu keys, each value's full size and first bytes",
	   m.n);
	ok(records_read >= 30, "keys-only: %d of the values were given cut short (from the index)",
	   records_read);
	for (iter_seek_last(it), n = m.n, bad = 0; iter_valid(it); iter_prev(it), n--)
		bad += n == 0 || !slice_eq(iter_key(it), mkey(&m, n - 1)) ||
		       iter_value_size(it) != mval(&m, n - 1).len;
	ok(bad == 0 && n == 0 && iter_status(it) == 0, "keys-only: and a backward walk, in reverse");
	ok(bytes - before < big_bytes / 20,
	   "keys-only: both walks read %llu bytes of blocks, far fewer than the %llu of the big "
	   "values", (unsigned long long)(bytes - before), (unsigned long long)big_bytes);
	/* seeks to every entry's key and between keys, with a step each way */
	for (i = 0, bad = 0; i < m.n; i++) {
		struct slice uk = ikey_user(mkey(&m, i));

		for (int between = 0; between < 2; between++) {
			size_t want;

			buf_clear(&target);
			if (between) {
				struct buf u = BUF_INIT;
				buf_set(&u, uk.data, uk.len);
				buf_append(&u, "", 1);
				ikey_append(&target, buf_slice(&u), SEQ_MAX, KT_SEEK);
				buf_free(&u);
			} else {
				ikey_append(&target, uk, SEQ_MAX, KT_SEEK);
			}
			want = model_lower_bound(&m, buf_slice(&target));
			iter_seek(it, buf_slice(&target));
			bad += want < m.n ? !iter_valid(it) || !slice_eq(iter_key(it), mkey(&m, want))
					  : iter_valid(it);
			if (want < m.n && want > 0) {
				iter_prev(it);
				bad += !iter_valid(it) || !slice_eq(iter_key(it), mkey(&m, want - 1));
				iter_next(it);
				bad += !iter_valid(it) || !slice_eq(iter_key(it), mkey(&m, want));
			}
		}
	}
	ok(bad == 0, "keys-only: seeks land on the first entry >= target, and steps go from there");
	iter_destroy(it);

	/* the same table read in full: the big values whole */
	it = sst_iter_new(t, 0);
	for (iter_seek_first(it), i = 0, bad = 0; iter_valid(it); iter_next(it), i++)
		bad += !iter_at(it, &m, i) || iter_value_size(it) != mval(&m, i).len;
	ok(bad == 0 && i == m.n, "keys-only: without the flag every value is read whole");
	iter_destroy(it);
	is_int(sst_verify(t, NULL, NULL), 0, "keys-only: sst_verify accepts the records");
	sst_close(t);

	/*
	 * A record that lies: the same table with another big value's bytes (same
	 * sizes, so every offset stays) under the first table's index.
	 */
	memset(&m2, 0, sizeof(m2));
	for (i = 0; i < m.n; i++) {
		struct slice v = mval(&m, i);
		struct buf w = BUF_INIT;

		buf_set(&w, v.data, v.len);
		if (v.len > 1000)
			w.data[0] ^= 0x55;
		model_add(&m2, ikey_user(mkey(&m, i)), ikey_seq(mkey(&m, i)), ikey_type(mkey(&m, i)),
			  buf_slice(&w));
		buf_free(&w);
	}
	is_int(write_table("keysonly2.sst", &o, &m2, NULL, 0, &props), 0,
	       "keys-only: a twin table whose big values differ in their first byte");
	{
		char *p1 = path_of("keysonly.sst"), *p2 = path_of("keysonly2.sst");
		char *q = path_of("keysonly-lie.sst"), *d1, *d2;
		size_t l1, l2;

		env_read_file(env_posix(), p1, &d1, &l1);
		env_read_file(env_posix(), p2, &d2, &l2);
		ok(l1 == l2, "keys-only: of the same size");
		memcpy(d1, d2, props.data_bytes);   /* the twin's data, the first table's index */
		env_write_file(env_posix(), q, d1, l1, NULL);
		free(d1);
		free(d2);
		free(p1);
		free(p2);
		free(q);
	}
	sst_props_free(&props);
	is_int(open_table("keysonly-lie.sst", NULL, NULL, &t), 0,
	       "keys-only: the table with lying records opens (each block checks out alone)");
	{
		struct reports rep = { 0 };
		is_int(sst_verify(t, record, &rep), -EUCLEAN,
		       "keys-only: sst_verify finds the records that do not match their blocks");
		ok(rep.n >= 30 && strstr(rep.msg, "single-entry record"),
		   "keys-only: one report per such block (%d), saying so (%s)", rep.n, rep.msg);
	}
	sst_close(t);

	/*
	 * Version 1: a table with no single-entry block (every entry in one big
	 * block), its footer's version set to 1, reads as before; the table above
	 * with version 1 is refused, since version 1 has no records.
	 */
	{
		struct sst_options o1 = { 1u << 20, 16, 0, 10 };
		char *p, *q, *d;
		size_t len;

		model_free(&m2);
		memset(&m2, 0, sizeof(m2));
		for (i = 0; i < 200; i++) {
			char uk[32];
			snprintf(uk, sizeof(uk), "v1-%03zu", i);
			model_add(&m2, slice_str(uk), 5, KT_PUT, slice_str("version one"));
		}
		is_int(write_table("v1.sst", &o1, &m2, NULL, 0, &props), 0,
		       "version 1: a table of one block");
		sst_props_free(&props);
		for (int which = 0; which < 2; which++) {
			p = path_of(which ? "keysonly.sst" : "v1.sst");
			q = path_of(which ? "v1-records.sst" : "v1-plain.sst");
			env_read_file(env_posix(), p, &d, &len);
			enc_fixed32(d + len - 16, 1);
			enc_fixed32(d + len - 12, crc32c_mask(crc32c(d + len - 80, 68)));
			env_write_file(env_posix(), q, d, len, NULL);
			free(d);
			free(p);
			free(q);
		}
		is_int(open_table("v1-plain.sst", NULL, NULL, &t), 0,
		       "version 1: a table written as version 1 opens");
		if (t) {
			is_int((int)sst_format_version(t), 1, "version 1: and says so");
			it = sst_iter_new(t, SST_ITER_KEYS_ONLY);
			for (iter_seek_first(it), i = 0, bad = 0; iter_valid(it); iter_next(it), i++)
				bad += !iter_at(it, &m2, i);
			ok(bad == 0 && i == m2.n, "version 1: a keys-only walk reads its blocks");
			iter_destroy(it);
			is_int(sst_verify(t, NULL, NULL), 0, "version 1: sst_verify accepts it");
			sst_close(t);
		}
		is_int(open_table("v1-records.sst", NULL, NULL, &t), -EUCLEAN,
		       "version 1: a version 1 table with single-entry records is refused");
		ok(strstr(err_last(), "version 1") != NULL, "version 1: saying why (%s)", err_last());
	}
	model_free(&m);
	model_free(&m2);
	buf_free(&big);
	buf_free(&target);
}

/*
 * The stored form of a one-block table: its compression byte, and for a
 * zstd block the type of its frame's literals section (RFC 8878: the low two
 * bits of the section's first byte; 0 raw, 2 Huffman-coded), else -1.
 * Returns 0, or -1 if the bytes are not what the format says.
 */
static int block_form(const char *name, int *comp, int *literals)
{
	char *p = path_of(name), *data;
	const char *frame;
	size_t len, fhs;
	uint64_t data_end;
	uint32_t ulen;
	int r = -1;

	*comp = *literals = -1;
	if (env_read_file(env_posix(), p, &data, &len) < 0)
		abort();
	free(p);
	/* the filter block, the first after the data, is the footer's first handle */
	data_end = dec_fixed64(data + len - SST_FOOTER_SIZE);
	if (data_end < SST_TRAILER || data_end > len)
		goto out;
	*comp = data[data_end - SST_TRAILER];
	if (*comp != 1) {
		r = 0;
		goto out;
	}
	frame = dec_varint32(data, data + data_end - SST_TRAILER, &ulen);
	if (!frame)
		goto out;
	fhs = ZSTD_frameHeaderSize(frame, (size_t)(data + data_end - SST_TRAILER - frame));
	if (ZSTD_isError(fhs) || frame + fhs + 4 > data + data_end - SST_TRAILER)
		goto out;
	/* a 3-byte block header, then the literals section */
	*literals = frame[fhs + 3] & 3;
	r = 0;
out:
	free(data);
	return r;
}

/*
 * One block of values made by fill(i, buf, len), written at level; check the
 * form it is stored in and that every entry reads back.
 */
static void check_form(const char *what, int level, void (*fill)(size_t i, char *v, size_t n),
		       int want_comp, int want_literals)
{
	struct sst_options o = { 4096, 16, level, 10 };
	struct sst_props props;
	struct model m;
	struct sst *t;
	char uk[32], v[300], name[64];
	int comp, literals;

	memset(&m, 0, sizeof(m));
	for (size_t i = 0; i < 12; i++) {
		ukey_of(uk, i);
		fill(i, v, sizeof(v));
		model_add(&m, slice_str(uk), 100 + i, KT_PUT, slice_make(v, sizeof(v)));
	}
	snprintf(name, sizeof(name), "form-%s.sst", what);
	for (char *c = name; *c; c++)
		if (*c == ' ')
			*c = '-';
	is_int(write_table(name, &o, &m, NULL, 0, &props), 0, "%s: the table is written", what);
	sst_props_free(&props);
	is_int(block_form(name, &comp, &literals), 0, "%s: the block's form can be read", what);
	ok(comp == want_comp && literals == want_literals,
	   "%s: stored with compression byte %d and literals of type %d (got %d, %d)", what,
	   want_comp, want_literals, comp, literals);
	is_int(open_table(name, NULL, NULL, &t), 0, "%s: the table opens", what);
	if (t) {
		check_iteration(t, &m, what);
		check_gets(t, &m, what, 1, 1);
		is_int(sst_verify(t, NULL, NULL), 0, "%s: sst_verify finds nothing wrong", what);
		sst_close(t);
	}
	model_free(&m);
}

/* Random bytes: nothing to gain. */
static void fill_random(size_t i, char *v, size_t n)
{
	(void)i;
	for (size_t k = 0; k < n; k++)
		v[k] = (char)rand_next(&rng);
}

/*
 * As db_bench makes them: 50 random printable bytes, then the same again.
 * Matches halve the block; Huffman-coding the literals (95 symbols, about
 * 6.6 bits each) would save a further tenth or so of it: not an eighth.
 */
static void fill_half_random(size_t i, char *v, size_t n)
{
	(void)i;
	for (size_t k = 0; k < n; k += 100)
		for (size_t j = 0; j < 50 && k + j < n; j++) {
			v[k + j] = (char)(' ' + rand_next(&rng) % 95);
			if (k + j + 50 < n)
				v[k + j + 50] = v[k + j];
		}
}

/* Random letters of a 16-letter alphabet: few matches, but 4 bits a byte. */
static void fill_small_alphabet(size_t i, char *v, size_t n)
{
	(void)i;
	for (size_t k = 0; k < n; k++)
		v[k] = (char)('a' + rand_next(&rng) % 16);
}

static void test_forms(void)
{
	check_form("random values", 1, fill_random, 0, -1);
	check_form("half-random values", 1, fill_half_random, 1, 0);
	check_form("half-random values at the fast level", -1, fill_half_random, 1, 0);
	check_form("small-alphabet values", 1, fill_small_alphabet, 1, 2);
	check_form("small-alphabet values uncompressed", 0, fill_small_alphabet, 0, -1);
}

/*
 * The second compression of a block (entropy-coded literals) is skipped
 * where the first form's literals cannot save an eighth (sst.c,
 * literal_savings): a table built so is byte for byte the one built with
 * both forms always tried, at greedy and lazy levels, and on db_bench-style
 * values the skip spares every block its second compression.
 */
static void test_literal_skip(void)
{
	static const struct {
		const char *what;
		void (*fill)(size_t i, char *v, size_t n);
	} kinds[] = {
		{ "random", fill_random },
		{ "half-random", fill_half_random },
		{ "small-alphabet", fill_small_alphabet },
	};
	static const int levels[] = { 1, 3, 5, 9 };

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct model m;
		char uk[32], v[300];

		memset(&m, 0, sizeof(m));
		for (size_t i = 0; i < 2000; i++) {
			ukey_of(uk, i);
			kinds[k].fill(i, v, sizeof(v));
			model_add(&m, slice_str(uk), 100 + i, KT_PUT, slice_make(v, sizeof(v)));
		}
		for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
			struct sst_options o = { 4096, 16, levels[l], 10 };
			struct sst_props props;
			char *pa = path_of("skip-a.sst"), *pb = path_of("skip-b.sst"), *a = NULL, *b = NULL;
			size_t alen = 0, blen = 0;
			uint64_t blocks, coded;
			int r;

			sst_set_always_two_forms(1);
			r = write_table("skip-a.sst", &o, &m, NULL, 0, &props);
			sst_props_free(&props);
			sst_set_always_two_forms(0);
			if (r == 0)
				r = write_table("skip-b.sst", &o, &m, NULL, 0, &props);
			sst_props_free(&props);
			blocks = last_blocks;
			coded = last_coded;
			if (r == 0 && env_read_file(env_posix(), pa, &a, &alen) == 0)
				r = env_read_file(env_posix(), pb, &b, &blen);
			ok(r == 0 && a && b && alen == blen && memcmp(a, b, alen) == 0,
			   "%s values, level %d: the table is the same with the skip (%zu bytes; "
			   "%llu of %llu blocks compressed twice)", kinds[k].what, levels[l], blen,
			   (unsigned long long)coded, (unsigned long long)blocks);
			/* the counts take in the index and properties blocks, of other text */
			if (levels[l] == 1 && k == 1)
				ok(blocks > 100 && coded <= 2, "half-random values, level 1: no data "
				   "block is compressed twice (%llu of %llu blocks, index and "
				   "properties among them)", (unsigned long long)coded,
				   (unsigned long long)blocks);
			if (levels[l] == 1 && k == 2)
				ok(blocks > 100 && coded + 2 >= blocks, "small-alphabet values, level 1: "
				   "every data block is also tried with coded literals (%llu of %llu "
				   "blocks)", (unsigned long long)coded, (unsigned long long)blocks);
			free(a);
			free(b);
			free(pa);
			free(pb);
		}
		model_free(&m);
	}
}

static void remove_dir(void)
{
	char **names;
	size_t n;

	if (env_list_dir(env_posix(), dir, &names, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			char *p = path_of(names[i]);
			env_unlink(env_posix(), p);
			free(p);
		}
		env_free_list(names, n);
	}
	rmdir(dir);
}

int main(void)
{
	struct model m;

	plan(251);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	model_make(&m, 100000);
	test_round_trip(&m, 0);
	test_round_trip(&m, 1);
	test_no_filter(&m);
	test_empty();
	test_range_dels();
	test_cache(&m);
	test_big_value();
	test_damage(0);
	test_damage(1);
	test_keys_only();
	test_forms();
	test_literal_skip();
	model_free(&m);
	remove_dir();
	return exit_status();
}
