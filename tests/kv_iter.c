/*
 * kv_iter.c -- the contract of the public iterator (engine/dbiter.c).
 *
 * An iterator shows one snapshot of the database as a sorted list of live
 * keys, whatever mix of sources holds their versions: the active memtable,
 * the immutable memtable being flushed, level-0 tables and deeper levels,
 * each holding puts, deletion markers and range tombstones.  The tests build
 * such mixes on purpose -- kv_flush, kv_compact_range and automatic
 * compactions place each write, and an environment that holds the flush
 * thread at the door keeps a memtable immutable for as long as needed -- and
 * keep a reference model of what the latest state and every snapshot must
 * show.  The iterator is compared with the model for every way of moving:
 * scans in both directions, seek and seek_for_prev to every key and between
 * keys, direction switches at every position, bounds and prefixes.
 *
 * Then: a large deleted range is skipped, not read (the SST bytes read while
 * walking past it are counted); iterators keep their snapshot, and the
 * tables they read, while writes, flushes and compactions go on.
 *
 * White-box where it helps: db.h to see that a memtable is being flushed.
 */
#include "db.h"
#include "env.h"
#include "util.h"
#include "tap.h"
#include "testutil.h"

#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dbpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

/* Keys shown to people: printable bytes as they are, others as \xHH. */
static const char *show(const void *p, size_t n)
{
	static char bufs[4][300];
	static int next;
	char *b = bufs[next++ % 4];
	const unsigned char *u = p;
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < sizeof(bufs[0]); i++) {
		if (u[i] >= 0x21 && u[i] < 0x7f && u[i] != '\\')
			b[o++] = (char)u[i];
		else
			o += (size_t)snprintf(b + o, 5, "\\x%02x", u[i]);
	}
	b[o] = 0;
	return b;
}

static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	return slice_cmp(slice_make(a, al), slice_make(b, bl));
}

/* Wait (up to 20 s) until the levels hold l0, l1 and l2 files; 1 if they do. */
static int wait_levels(struct kv_db *db, int l0, int l1, int l2)
{
	struct kv_stats st;

	for (int i = 0; i < 10000; i++) {
		kv_get_stats(db, &st);
		if (st.files_per_level[0] == l0 && st.files_per_level[1] == l1 &&
		    st.files_per_level[2] == l2)
			return 1;
		usleep(2000);
	}
	diag("levels hold %d/%d/%d files, want %d/%d/%d", st.files_per_level[0],
	     st.files_per_level[1], st.files_per_level[2], l0, l1, l2);
	return 0;
}

/* ------------------------------------------------------------------ model */

/*
 * The reference: every key ever written, sorted, with its value if live.  A
 * range delete applies to the keys the model knows, which are all the keys
 * that were ever written -- every other key is absent anyway.
 */
struct mentry {
	struct buf key, val;
	int live;
};

struct model {
	struct mentry *e;
	size_t n, cap;
};

/* Index of the first entry whose key is >= k. */
static size_t model_lower_bound(const struct model *m, const void *k, size_t kl)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key_cmp(m->e[mid].key.data, m->e[mid].key.len, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of k, added (not live) if the model has not seen k yet. */
static struct mentry *model_slot(struct model *m, const void *k, size_t kl)
{
	size_t i = model_lower_bound(m, k, kl);

	if (i < m->n && key_cmp(m->e[i].key.data, m->e[i].key.len, k, kl) == 0)
		return &m->e[i];
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->e = xrealloc(m->e, m->cap * sizeof(*m->e));
	}
	memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(*m->e));
	memset(&m->e[i], 0, sizeof(*m->e));
	buf_set(&m->e[i].key, k, kl);
	m->n++;
	return &m->e[i];
}

static void model_put(struct model *m, const void *k, size_t kl, const void *v, size_t vl)
{
	struct mentry *e = model_slot(m, k, kl);

	e->live = 1;
	buf_set(&e->val, v, vl);
}

static void model_del(struct model *m, const void *k, size_t kl)
{
	model_slot(m, k, kl)->live = 0;
}

static void model_del_range(struct model *m, const void *s, size_t sl, const void *e, size_t el)
{
	for (size_t i = model_lower_bound(m, s, sl);
	     i < m->n && key_cmp(m->e[i].key.data, m->e[i].key.len, e, el) < 0; i++)
		m->e[i].live = 0;
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		buf_free(&m->e[i].key);
		buf_free(&m->e[i].val);
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static void model_copy(struct model *dst, const struct model *src)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++) {
		struct mentry *e = model_slot(dst, src->e[i].key.data, src->e[i].key.len);
		e->live = src->e[i].live;
		buf_set(&e->val, src->e[i].val.data, src->e[i].val.len);
	}
}

/* Writes applied to the database and the model alike; failures are counted. */
static int write_errors;

static void do_put(struct kv_db *db, struct model *m, const void *k, size_t kl, const void *v,
		   size_t vl)
{
	if (kv_put(db, k, kl, v, vl, 0) != 0)
		write_errors++;
	model_put(m, k, kl, v, vl);
}

static void do_del(struct kv_db *db, struct model *m, const void *k, size_t kl)
{
	if (kv_delete(db, k, kl, 0) != 0)
		write_errors++;
	model_del(m, k, kl);
}

static void do_del_range(struct kv_db *db, struct model *m, const void *s, size_t sl,
			 const void *e, size_t el)
{
	if (kv_delete_range(db, s, sl, e, el, 0) != 0)
		write_errors++;
	model_del_range(m, s, sl, e, el);
}

/* Bytes of '.' sput appends to every value while it is set: values that get a table block each. */
static size_t sput_pad;

static void sput(struct kv_db *db, struct model *m, const char *k, const char *v)
{
	char padded[2048];
	size_t n = strlen(v);

	if (sput_pad && n + sput_pad <= sizeof(padded)) {
		memcpy(padded, v, n);
		memset(padded + n, '.', sput_pad);
		do_put(db, m, k, strlen(k), padded, n + sput_pad);
		return;
	}
	do_put(db, m, k, strlen(k), v, n);
}

/* ------------------------------------------------------------------ checker */

/* What one iterator must show: a state of the model, seen through bounds or a prefix. */
struct view {
	const char *name;
	const struct kv_snapshot *snap;
	const struct model *m;
	const char *lower, *upper;      /* NULL: no such bound */
	size_t lower_len, upper_len;
	const char *prefix;             /* non-NULL: a kv_iter_new_prefix iterator */
	size_t prefix_len;
	int keys_only;                  /* a keys-only iterator: values cut to KV_VALUE_PREFIX */
};

struct check {
	const struct model *m;
	int keys_only;
	size_t *vis, nvis;    /* the model entries the iterator must show, in order */
	int bad;
	char first[600];      /* the first difference, for diag */
};

static int in_view(const struct view *v, const struct buf *k)
{
	if (v->prefix)
		return k->len >= v->prefix_len && !memcmp(k->data, v->prefix, v->prefix_len);
	if (v->lower && key_cmp(k->data, k->len, v->lower, v->lower_len) < 0)
		return 0;
	if (v->upper && key_cmp(k->data, k->len, v->upper, v->upper_len) >= 0)
		return 0;
	return 1;
}

static void check_init(struct check *c, const struct view *v)
{
	memset(c, 0, sizeof(*c));
	c->m = v->m;
	c->keys_only = v->keys_only;
	c->vis = xmalloc((v->m->n + 1) * sizeof(*c->vis));
	for (size_t i = 0; i < v->m->n; i++)
		if (v->m->e[i].live && in_view(v, &v->m->e[i].key))
			c->vis[c->nvis++] = i;
}

__attribute__((format(printf, 2, 3)))
static void check_fail(struct check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(c->first, sizeof(c->first), fmt, ap);
	va_end(ap);
}

/* Report the result of one family of checks as one assertion, then reset. */
static int check_report(struct check *c, const char *stage, const char *view, const char *what)
{
	int r = ok(c->bad == 0, "%s, %s: %s", stage, view, what);

	if (!r)
		diag("%d differences; the first: %s", c->bad, c->first);
	c->bad = 0;
	c->first[0] = 0;
	return r;
}

/*
 * The iterator must stand on the pos-th visible entry (key and value), or be
 * invalid when pos is -1 or nvis.  `what` describes the move, for the message.
 * Keys-only, the value must be exactly the first KV_VALUE_PREFIX bytes of
 * the model's (all of a shorter one); either way kv_iter_value_size must be
 * the model value's full length.
 */
static void expect_at(struct check *c, struct kv_iter *it, long pos, const char *what,
		      const void *arg, size_t alen)
{
	int want = pos >= 0 && (size_t)pos < c->nvis;
	size_t kl, vl;
	const char *k, *v;

	if (!kv_iter_valid(it)) {
		if (want) {
			const struct buf *wk = &c->m->e[c->vis[pos]].key;
			check_fail(c, "%s %s: not valid (status %d), want %s", what,
				   show(arg, alen), kv_iter_status(it), show(wk->data, wk->len));
		}
		return;
	}
	k = kv_iter_key(it, &kl);
	v = kv_iter_value(it, &vl);
	if (!want) {
		check_fail(c, "%s %s: stands on %s, want not valid", what, show(arg, alen),
			   show(k, kl));
		return;
	}
	const struct mentry *e = &c->m->e[c->vis[pos]];
	if (key_cmp(k, kl, e->key.data, e->key.len) != 0)
		check_fail(c, "%s %s: stands on %s, want %s", what, show(arg, alen), show(k, kl),
			   show(e->key.data, e->key.len));
	else if (key_cmp(v, vl, e->val.data, c->keys_only && e->val.len > KV_VALUE_PREFIX ?
			 KV_VALUE_PREFIX : e->val.len) != 0)
		check_fail(c, "%s %s: key %s has value %s, want %s%s", what, show(arg, alen),
			   show(k, kl), show(v, vl), show(e->val.data, e->val.len),
			   c->keys_only ? " (its first bytes)" : "");
	else if (kv_iter_value_size(it) != e->val.len)
		check_fail(c, "%s %s: key %s has value size %zu, want %zu", what, show(arg, alen),
			   show(k, kl), kv_iter_value_size(it), e->val.len);
}

/* Index in vis of the first visible key >= p (nvis if none). */
static long vis_seek(const struct check *c, const void *p, size_t pl)
{
	size_t lo = 0, hi = c->nvis;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct buf *k = &c->m->e[c->vis[mid]].key;
		if (key_cmp(k->data, k->len, p, pl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo;
}

/* Index in vis of the last visible key <= p (-1 if none). */
static long vis_seek_for_prev(const struct check *c, const void *p, size_t pl)
{
	size_t lo = 0, hi = c->nvis;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct buf *k = &c->m->e[c->vis[mid]].key;
		if (key_cmp(k->data, k->len, p, pl) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* One probe: seek and seek_for_prev to p, then a step against the seek's direction. */
static void probe(struct check *c, struct kv_iter *it, const void *p, size_t pl)
{
	long j = vis_seek(c, p, pl), q = vis_seek_for_prev(c, p, pl);

	kv_iter_seek(it, p, pl);
	expect_at(c, it, j, "seek", p, pl);
	if (j < (long)c->nvis) {
		kv_iter_prev(it);
		expect_at(c, it, j - 1, "seek then prev from", p, pl);
	}
	kv_iter_seek_for_prev(it, p, pl);
	expect_at(c, it, q, "seek_for_prev", p, pl);
	if (q >= 0) {
		kv_iter_next(it);
		expect_at(c, it, q + 1, "seek_for_prev then next from", p, pl);
	}
}

/*
 * Every check of the iterator `it` against the view; `probes` is the model
 * whose keys (and their neighbours) are used as seek targets -- the latest
 * one, a superset of every older state's keys.
 */
static void check_iter(struct kv_iter *it, const struct view *v, const struct model *probes,
		       const char *stage)
{
	struct check c;
	long n, i;

	check_init(&c, v);
	n = (long)c.nvis;

	kv_iter_seek_first(it);
	for (i = 0; i < n && kv_iter_valid(it); i++) {
		expect_at(&c, it, i, "forward scan at", "", 0);
		kv_iter_next(it);
	}
	expect_at(&c, it, i < n ? i : n, "forward scan at the end", "", 0);
	check_report(&c, stage, v->name,
		     "a forward scan from seek_first gives exactly the live keys and values");

	kv_iter_seek_last(it);
	for (i = n - 1; i >= 0 && kv_iter_valid(it); i--) {
		expect_at(&c, it, i, "backward scan at", "", 0);
		kv_iter_prev(it);
	}
	expect_at(&c, it, i >= 0 ? i : -1, "backward scan at the start", "", 0);
	check_report(&c, stage, v->name,
		     "a backward scan from seek_last gives the same entries in reverse");

	/* at every position: seek there, and switch direction on both sides */
	for (i = 0; i < n; i++) {
		const struct buf *k = &c.m->e[c.vis[i]].key;

		kv_iter_seek(it, k->data, k->len);
		expect_at(&c, it, i, "seek", k->data, k->len);
		kv_iter_next(it);
		expect_at(&c, it, i + 1, "seek + next from", k->data, k->len);
		if (i + 1 < n) {
			kv_iter_prev(it);
			expect_at(&c, it, i, "seek + next + prev from", k->data, k->len);
		} else {
			kv_iter_seek(it, k->data, k->len);
		}
		kv_iter_prev(it);
		expect_at(&c, it, i - 1, "seek + prev from", k->data, k->len);
		if (i > 0) {
			kv_iter_next(it);
			expect_at(&c, it, i, "seek + prev + next from", k->data, k->len);
			kv_iter_next(it);
			expect_at(&c, it, i + 1, "seek + prev + next + next from", k->data, k->len);
		}
	}
	check_report(&c, stage, v->name,
		     "seek to every key lands on it; next and prev switch direction right there");

	for (i = 0; i < n; i++) {
		const struct buf *k = &c.m->e[c.vis[i]].key;

		kv_iter_seek_for_prev(it, k->data, k->len);
		expect_at(&c, it, i, "seek_for_prev", k->data, k->len);
		kv_iter_prev(it);
		expect_at(&c, it, i - 1, "seek_for_prev + prev from", k->data, k->len);
		if (i > 0) {
			kv_iter_next(it);
			expect_at(&c, it, i, "seek_for_prev + prev + next from", k->data, k->len);
		} else {
			kv_iter_seek_for_prev(it, k->data, k->len);
		}
		kv_iter_next(it);
		expect_at(&c, it, i + 1, "seek_for_prev + next from", k->data, k->len);
		if (i + 1 < n) {
			kv_iter_prev(it);
			expect_at(&c, it, i, "seek_for_prev + next + prev from", k->data, k->len);
		}
	}
	check_report(&c, stage, v->name,
		     "seek_for_prev to every key lands on it; prev and next switch direction");

	/* between keys, on deleted keys and on tombstone boundaries */
	for (size_t u = 0; u < probes->n; u++) {
		const struct buf *k = &probes->e[u].key;
		struct buf p = BUF_INIT;

		probe(&c, it, k->data, k->len);
		buf_set(&p, k->data, k->len);
		buf_append(&p, "\0", 1);
		probe(&c, it, p.data, p.len);
		buf_set(&p, k->data, k->len);
		buf_append(&p, "\xff", 1);
		probe(&c, it, p.data, p.len);
		if (k->len > 0)
			probe(&c, it, k->data, k->len - 1);
		buf_free(&p);
	}
	probe(&c, it, "", 0);
	probe(&c, it, "\xff\xff\xff\xff\xff\xff", 6);
	check_report(&c, stage, v->name,
		     "seek and seek_for_prev to every written key, deleted or not, and between "
		     "keys land on the nearest live key");

	if (kv_iter_status(it) != 0)
		check_fail(&c, "status %d (%s)", kv_iter_status(it),
			   kv_strerror(kv_iter_status(it)));
	check_report(&c, stage, v->name, "kv_iter_status stays 0 through all of that");
	free(c.vis);
}

static struct kv_iter *view_iter(struct kv_db *db, const struct view *v)
{
	struct kv_read_options ro = { .snapshot = v->snap, .lower = v->lower,
				      .lower_len = v->lower_len, .upper = v->upper,
				      .upper_len = v->upper_len, .keys_only = v->keys_only };
	char up[16];

	if (v->prefix && !v->keys_only)
		return kv_iter_new_prefix(db, v->snap, v->prefix, v->prefix_len);
	if (v->prefix) {
		/* keys-only has no prefix call: the prefix's bounds, as kv_iter_new_prefix makes them */
		size_t n = v->prefix_len;

		memcpy(up, v->prefix, n);
		while (n > 0 && (unsigned char)up[n - 1] == 0xff)
			n--;
		ro.lower = v->prefix_len ? v->prefix : "";
		ro.lower_len = v->prefix_len;
		if (n > 0) {
			up[n - 1]++;
			ro.upper = up;
			ro.upper_len = n;
		}
	}
	return kv_iter_new(db, &ro);
}

/* kv_get of every key the model knows must agree with it (bounds do not apply). */
static void check_gets(struct kv_db *db, const struct view *v, const char *stage)
{
	struct check c;

	memset(&c, 0, sizeof(c));
	for (size_t i = 0; i < v->m->n; i++) {
		const struct mentry *e = &v->m->e[i];
		char *val = NULL;
		size_t vl = 0;
		int r = kv_get(db, v->snap, e->key.data, e->key.len, &val, &vl);

		if (!e->live && r != -ENOENT)
			check_fail(&c, "kv_get(%s) gave %d, want -ENOENT",
				   show(e->key.data, e->key.len), r);
		else if (e->live && (r != 0 || key_cmp(val, vl, e->val.data, e->val.len)))
			check_fail(&c, "kv_get(%s) gave %d \"%s\", want \"%s\"",
				   show(e->key.data, e->key.len), r, r == 0 ? show(val, vl) : "",
				   show(e->val.data, e->val.len));
		free(val);
	}
	check_report(&c, stage, v->name, "kv_get of every written key agrees with the iterator");
}

/* The view through a full iterator, then through a keys-only one. */
static void check_view(struct kv_db *db, const struct view *v, const struct model *probes,
		       const char *stage)
{
	struct kv_iter *it = view_iter(db, v);
	struct view ko = *v;
	char name[200];

	check_iter(it, v, probes, stage);
	kv_iter_free(it);
	if (!v->lower && !v->upper && !v->prefix)
		check_gets(db, v, stage);
	snprintf(name, sizeof(name), "%s, keys-only", v->name);
	ko.name = name;
	ko.keys_only = 1;
	it = view_iter(db, &ko);
	check_iter(it, &ko, probes, stage);
	kv_iter_free(it);
}

/* ------------------------------------------------- an environment with a gate */

/*
 * The POSIX environment, except that creating a table waits while the gate
 * is closed: the flush thread then stops before its first byte, and the
 * memtable it flushes stays the immutable one for as long as the test wants.
 */
struct gate_env {
	struct kv_env base;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int closed, waiting;
};

static struct env_ops gate_ops;
static struct gate_env gate = { { &gate_ops }, PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, 0, 0 };

static int gate_open_append(struct kv_env *e, const char *path, struct env_file **f)
{
	size_t n = strlen(path);

	if (n > 4 && !strcmp(path + n - 4, ".sst")) {
		pthread_mutex_lock(&gate.mu);
		gate.waiting++;
		pthread_cond_broadcast(&gate.cv);
		while (gate.closed)
			pthread_cond_wait(&gate.cv, &gate.mu);
		gate.waiting--;
		pthread_mutex_unlock(&gate.mu);
	}
	(void)e;
	return env_open_append(env_posix(), path, f);
}

static int gate_open_read(struct kv_env *e, const char *path, struct env_file **f)
{
	(void)e;
	return env_open_read(env_posix(), path, f);
}

static int gate_lock(struct kv_env *e, const char *path, struct env_file **f)
{
	(void)e;
	return env_lock(env_posix(), path, f);
}

static struct kv_env *gate_env_get(void)
{
	gate_ops = *env_posix()->ops;
	gate_ops.open_append = gate_open_append;
	gate_ops.open_read = gate_open_read;
	gate_ops.lock = gate_lock;
	return &gate.base;
}

static void gate_set(int closed)
{
	pthread_mutex_lock(&gate.mu);
	gate.closed = closed;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

/* Wait (up to 20 s) until someone waits at the gate. */
static int gate_wait_for_waiter(void)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&gate.mu);
	while (!gate.waiting && r == 0)
		r = pthread_cond_timedwait(&gate.cv, &gate.mu, &ts);
	r = gate.waiting > 0;
	pthread_mutex_unlock(&gate.mu);
	return r;
}

static int has_imm(struct kv_db *db)
{
	int r;

	pthread_mutex_lock(&db->mu);
	r = db->trees[0]->imm != NULL;
	pthread_mutex_unlock(&db->mu);
	return r;
}

/* ------------------------------------------------- versions in every source */

enum { SRC_L2, SRC_L1, SRC_L0, SRC_IMM, SRC_MEM, NSRC };
static const char *const src_name[NSRC] = {
	"level 2", "level 1", "level 0", "the immutable memtable", "the memtable",
};

/* Keys with 0x00 and 0xff bytes, the empty key among them, for prefixes and bounds. */
static const struct {
	const char *k;
	size_t n;
} odd_keys[] = {
	{ "", 0 }, { "p", 1 }, { "p\0", 2 }, { "p\x01", 2 }, { "p\xff", 2 }, { "p\xff\0", 3 },
	{ "p\xff\xff", 3 }, { "p\xff\xff\x01", 4 }, { "q", 1 }, { "\xfe\xff", 2 }, { "\xff", 1 },
	{ "\xff\0", 2 }, { "\xff\xfe", 2 }, { "\xff\xff", 2 }, { "\xff\xff\xff", 3 },
};
#define NODD (sizeof(odd_keys) / sizeof(odd_keys[0]))

/*
 * The writes that go to source s (applied to the database and the model).
 * Sources are written oldest first, so source s's writes are newer than
 * those of every source before it.
 */
static void source_writes(struct kv_db *db, struct model *m, int s)
{
	char k[32], v[800];
	/*
	 * level 2 is reached by a size-triggered move: its table must outgrow
	 * level 1.  Its values are padded beyond the block size test_sources
	 * sets, so each gets a data block of its own: an entry a keys-only
	 * iterator passes without reading it.
	 */
	int pad = s == SRC_L2 ? 700 : 0;

	sput_pad = (size_t)pad;

	/* k<i>: key i is written in every source whose bit is set in i; some writes delete */
	for (int i = 0; i < 32; i++) {
		if (!(i >> s & 1))
			continue;
		snprintf(k, sizeof(k), "k%02d", i);
		if ((i + s) % 3 == 0) {
			do_del(db, m, k, strlen(k));
		} else {
			int n = snprintf(v, sizeof(v), "k%02d@%d", i, s);
			memset(v + n, '.', (size_t)pad);
			do_put(db, m, k, strlen(k), v, (size_t)n + (size_t)pad);
		}
	}
	/*
	 * o<j><s>: data for every j from each source; then the source's tombstone
	 * [o<s>, o<s+2>) deletes j = s, s+1 from it and every older source.  The
	 * tombstones of neighbouring sources overlap.  o<j> sits on the boundaries:
	 * a start is deleted, an end is not.  o<s><s>a, written after the
	 * tombstone in the same source, stays visible.
	 */
	for (int j = 0; j < NSRC + 2; j++) {
		snprintf(k, sizeof(k), "o%d%d", j, s);
		snprintf(v, sizeof(v), "o%d%d@%d", j, s, s);
		sput(db, m, k, v);
	}
	snprintf(k, sizeof(k), "o%d", s);
	snprintf(v, sizeof(v), "o%d@%d", s, s);
	sput(db, m, k, v);
	snprintf(k, sizeof(k), "o%d", s + 2);
	snprintf(v, sizeof(v), "o%d@%d", s + 2, s);
	sput(db, m, k, v);
	{
		char a[8], b[8];
		snprintf(a, sizeof(a), "o%d", s);
		snprintf(b, sizeof(b), "o%d", s + 2);
		do_del_range(db, m, a, strlen(a), b, strlen(b));
	}
	snprintf(k, sizeof(k), "o%d%da", s, s);
	sput(db, m, k, "after");

	/* r<t>-<s>: data of this source under the tombstone [r<t>-, r<t>.) of source t */
	for (int t = 0; t < NSRC; t++) {
		snprintf(k, sizeof(k), "r%d-%d", t, s);
		snprintf(v, sizeof(v), "r%d-%d@%d", t, s, s);
		sput(db, m, k, v);
	}
	{
		char a[8], b[8];
		snprintf(a, sizeof(a), "r%d-", s);
		snprintf(b, sizeof(b), "r%d.", s);
		do_del_range(db, m, a, strlen(a), b, strlen(b));
	}

	/* odd keys: put in some sources, deleted in others */
	for (size_t i = 0; i < NODD; i++) {
		if ((i + (size_t)s) % 4 == 0) {
			do_del(db, m, odd_keys[i].k, odd_keys[i].n);
		} else if ((i * 3 + (size_t)s) % 5 < 3) {
			snprintf(v, sizeof(v), "odd%zu@%d", i, s);
			do_put(db, m, odd_keys[i].k, odd_keys[i].n, v, strlen(v));
		}
	}
	/* a point delete over data and a tombstone from older sources */
	if (s > 0) {
		snprintf(k, sizeof(k), "o%d%d", s - 1, s - 1);
		do_del(db, m, k, strlen(k));
	}
	sput_pad = 0;
}

/* Views of the latest state through bounds and prefixes. */
static const struct {
	const char *lo, *hi;
	size_t lol, hil;
	int has_lo, has_hi;
} bound_cases[] = {
	{ "o2", "o4", 2, 2, 1, 1 },          /* exactly the tombstone of level 0 */
	{ "o1", "o15", 2, 3, 1, 1 },
	{ "", "k", 0, 1, 1, 1 },
	{ "k10", NULL, 3, 0, 1, 0 },
	{ NULL, "o3", 0, 2, 0, 1 },
	{ "r2-", "r2.", 3, 3, 1, 1 },        /* a range entirely deleted */
	{ "o5", "o5", 2, 2, 1, 1 },          /* an empty range */
	{ "p\xff", "\xff\xff", 2, 2, 1, 1 },
};

static const struct {
	const char *p;
	size_t n;
} prefix_cases[] = {
	{ "p", 1 }, { "p\xff", 2 }, { "p\xff\xff", 3 }, { "\xff", 1 }, { "\xff\xff", 2 },
	{ "", 0 }, { "o3", 2 }, { "zz", 2 },
};

static void check_all_views(struct kv_db *db, const struct model *latest,
			    const struct kv_snapshot **snaps, const struct model *states,
			    int nsnaps, int with_bounds, const char *stage)
{
	struct view v;
	char name[160];

	memset(&v, 0, sizeof(v));
	v.name = "latest state";
	v.m = latest;
	check_view(db, &v, latest, stage);
	for (int s = 0; s < nsnaps; s++) {
		memset(&v, 0, sizeof(v));
		if (s == 0)
			snprintf(name, sizeof(name), "snapshot before any write");
		else
			snprintf(name, sizeof(name), "snapshot after the writes to %s",
				 src_name[s - 1]);
		v.name = name;
		v.snap = snaps[s];
		v.m = &states[s];
		check_view(db, &v, latest, stage);
	}
	if (!with_bounds)
		return;
	for (size_t i = 0; i < sizeof(bound_cases) / sizeof(bound_cases[0]); i++) {
		memset(&v, 0, sizeof(v));
		snprintf(name, sizeof(name), "latest, bounds [%s, %s)",
			 bound_cases[i].has_lo ? show(bound_cases[i].lo, bound_cases[i].lol) : "-",
			 bound_cases[i].has_hi ? show(bound_cases[i].hi, bound_cases[i].hil) : "-");
		v.name = name;
		v.m = latest;
		if (bound_cases[i].has_lo) {
			v.lower = bound_cases[i].lo;
			v.lower_len = bound_cases[i].lol;
		}
		if (bound_cases[i].has_hi) {
			v.upper = bound_cases[i].hi;
			v.upper_len = bound_cases[i].hil;
		}
		check_view(db, &v, latest, stage);
	}
	for (size_t i = 0; i < sizeof(prefix_cases) / sizeof(prefix_cases[0]); i++) {
		memset(&v, 0, sizeof(v));
		snprintf(name, sizeof(name), "latest, prefix \"%s\"",
			 show(prefix_cases[i].p, prefix_cases[i].n));
		v.name = name;
		v.m = latest;
		v.prefix = prefix_cases[i].p;
		v.prefix_len = prefix_cases[i].n;
		check_view(db, &v, latest, stage);
	}
	if (nsnaps > 3) {
		memset(&v, 0, sizeof(v));
		v.name = "snapshot after level 1, bounds [o1, o4)";
		v.snap = snaps[2];
		v.m = &states[2];
		v.lower = "o1";
		v.lower_len = 2;
		v.upper = "o4";
		v.upper_len = 2;
		check_view(db, &v, latest, stage);
		memset(&v, 0, sizeof(v));
		v.name = "snapshot after level 0, prefix \"p\\xff\"";
		v.snap = snaps[3];
		v.m = &states[3];
		v.prefix = "p\xff";
		v.prefix_len = 2;
		check_view(db, &v, latest, stage);
	}
}

static void test_sources(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct model m = { 0 }, states[NSRC + 1];
	const struct kv_snapshot *snaps[NSRC + 1];
	struct kv_stats st;
	char *dir = dbpath("sources"), *fill;
	int r;

	kv_options_init(&o);
	o.env = gate_env_get();
	o.write_buffer_size = 64 * 1024;
	o.compression_level = 0;         /* table sizes follow the values' sizes */
	o.block_size = 512;              /* level 2's padded values get a block each */
	o.max_bytes_level_base = 4096;   /* a level-1 table of more moves to level 2 */
	o.l0_compaction_trigger = 2;     /* one flush stays in level 0; two are compacted */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "sources: open");
	if (r < 0)
		goto out;
	write_errors = 0;
	snaps[0] = kv_snapshot_new(db);
	model_copy(&states[0], &m);

	/* level 2: flush, compact into level 1, and let the size trigger move it down */
	source_writes(db, &m, SRC_L2);
	snaps[1] = kv_snapshot_new(db);
	model_copy(&states[1], &m);
	kv_compact_range(db, NULL, 0, NULL, 0);
	ok(wait_levels(db, 0, 0, 1), "sources: the first writes reach level 2");

	/* level 1: two flushes make level 0 reach its trigger; it is compacted into level 1 */
	source_writes(db, &m, SRC_L1);
	kv_flush(db);
	sput(db, &m, "~mark1", "second level-0 table");
	snaps[2] = kv_snapshot_new(db);
	model_copy(&states[2], &m);
	kv_flush(db);
	ok(wait_levels(db, 0, 1, 1), "sources: the second writes reach level 1");

	/* level 0: one flush */
	source_writes(db, &m, SRC_L0);
	snaps[3] = kv_snapshot_new(db);
	model_copy(&states[3], &m);
	kv_flush(db);

	/* immutable memtable: fill it, then the next write switches while the flush waits */
	gate_set(1);
	source_writes(db, &m, SRC_IMM);
	fill = xmalloc(o.write_buffer_size);
	memset(fill, 'f', o.write_buffer_size);
	do_put(db, &m, "~fill", 5, fill, o.write_buffer_size);
	free(fill);
	snaps[4] = kv_snapshot_new(db);
	model_copy(&states[4], &m);

	/* the memtable */
	source_writes(db, &m, SRC_MEM);
	snaps[5] = kv_snapshot_new(db);
	model_copy(&states[5], &m);

	ok(gate_wait_for_waiter(), "sources: the flush of the full memtable is held at the gate");
	ok(has_imm(db), "sources: so the memtable being flushed is the immutable one");
	kv_get_stats(db, &st);
	ok(st.files_per_level[0] == 1 && st.files_per_level[1] == 1 &&
	   st.files_per_level[2] == 1,
	   "sources: versions sit in levels 0, 1 and 2 (%d/%d/%d files), the immutable "
	   "memtable and the memtable", st.files_per_level[0], st.files_per_level[1],
	   st.files_per_level[2]);
	is_int(write_errors, 0, "sources: every write succeeded");
	check_all_views(db, &m, snaps, states, NSRC + 1, 1, "while the flush is held");

	gate_set(0);
	is_int(kv_flush(db), 0, "sources: the held flush completes, and a flush of the memtable");
	ok(!has_imm(db), "sources: no immutable memtable is left");
	check_all_views(db, &m, snaps, states, NSRC + 1, 0, "after the flushes");

	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "sources: compact everything while every snapshot lives");
	check_all_views(db, &m, snaps, states, NSRC + 1, 1, "after compaction with snapshots");

	for (int s = 0; s <= NSRC; s++)
		kv_snapshot_release(db, snaps[s]);
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "sources: compact everything once no snapshot is left");
	check_all_views(db, &m, NULL, NULL, 0, 1, "after compaction without snapshots");

	is_int(kv_close(db), 0, "sources: close");
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "sources: reopen");
	if (r == 0) {
		check_all_views(db, &m, NULL, NULL, 0, 0, "after reopen");
		kv_close(db);
	}
	for (int s = 0; s <= NSRC; s++)
		model_free(&states[s]);
out:
	model_free(&m);
	free(dir);
}

/* ------------------------------------------------- point and range deletes mixed */

/*
 * Range tombstones over point deletes over range tombstones, each flushed to
 * its own table, with keys written back inside deleted ranges: a small
 * sequence where every boundary matters, checked after every step.
 */
static void test_tombstone_layers(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct model m = { 0 };
	char *dir = dbpath("layers");
	char k[16], stage[64];
	int r;

	kv_options_init(&o);
	o.l0_compaction_trigger = 100;
	o.l0_slowdown_trigger = 100;
	o.l0_stop_trigger = 100;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "layers: open");
	if (r < 0)
		goto out;
	write_errors = 0;
	for (int i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "t%02d", i);
		sput(db, &m, k, "base");
	}
	kv_compact_range(db, NULL, 0, NULL, 0);
	for (int step = 0; step < 8; step++) {
		struct view v = { .name = "latest state", .m = &m };
		char a[16], b[16];

		/* a tombstone over 5 keys, moving right and widening; a key written back in it */
		snprintf(a, sizeof(a), "t%02d", step * 4);
		snprintf(b, sizeof(b), "t%02d", step * 4 + 5 + step % 3);
		do_del_range(db, &m, a, strlen(a), b, strlen(b));
		snprintf(k, sizeof(k), "t%02d", step * 4 + 1);
		snprintf(a, sizeof(a), "back%d", step);
		sput(db, &m, k, a);
		/* point deletes next to the tombstone's ends */
		snprintf(k, sizeof(k), "t%02d", step * 4 + 5 + step % 3);
		do_del(db, &m, k, strlen(k));
		if (step % 2)
			kv_flush(db);
		snprintf(stage, sizeof(stage), "layers step %d", step);
		check_view(db, &v, &m, stage);
	}
	is_int(write_errors, 0, "layers: every write succeeded");
	kv_close(db);
out:
	model_free(&m);
	free(dir);
}

/* ------------------------------------------------- a large deleted range */

static void big_key(char *k, size_t n, long i)
{
	snprintf(k, n, "big%08ld", i);
}

/*
 * Walk forward from 5 keys before the deleted range [lo, hi) to 5 keys after
 * it (or backward the other way); returns the SST bytes read, and counts in
 * *wrong the steps that did not land where they should.
 */
static uint64_t walk_across(struct kv_db *db, long lo, long hi, int forward, int *wrong)
{
	struct kv_read_options ro = { .no_fill_cache = 1 };
	struct kv_stats a, b;
	struct kv_iter *it;
	char want[32];
	size_t kl;
	const char *k;

	kv_get_stats(db, &a);
	it = kv_iter_new(db, &ro);
	big_key(want, sizeof(want), forward ? lo - 5 : hi + 4);
	if (forward)
		kv_iter_seek(it, want, strlen(want));
	else
		kv_iter_seek_for_prev(it, want, strlen(want));
	for (int step = 0; step < 10; step++) {
		long i = forward ? (step < 5 ? lo - 5 + step : hi + step - 5)
				 : (step < 5 ? hi + 4 - step : lo - 1 - (step - 5));
		big_key(want, sizeof(want), i);
		k = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		if (!k || kl != strlen(want) || memcmp(k, want, kl)) {
			if (!*wrong)
				diag("step %d: at %s, want %s", step, k ? show(k, kl) : "(invalid)",
				     want);
			(*wrong)++;
		}
		if (forward)
			kv_iter_next(it);
		else
			kv_iter_prev(it);
	}
	if (kv_iter_status(it))
		(*wrong)++;
	kv_iter_free(it);
	kv_get_stats(db, &b);
	return b.bytes_read_sst - a.bytes_read_sst;
}

static void test_deleted_range_skipped(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct kv_stats st;
	struct kv_batch *b;
	char *dir = dbpath("bigrange"), k[32], v[64];
	long n = (long)(100000 * test_scale()), lo, hi, live = 0;
	uint64_t seed = 42, table_bytes, deleted, fwd, back;
	int r, wrong = 0;

	if (n < 20000)
		n = 20000;   /* fewer keys leave too few tables for the comparison to mean much */
	lo = n / 10;
	hi = n - n / 10;
	kv_options_init(&o);
	o.target_file_size = 256 * 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "big range: open");
	if (r < 0)
		goto out;
	write_errors = 0;
	b = kv_batch_new();
	for (long i = 0; i < n; i++) {
		big_key(k, sizeof(k), i);
		for (size_t j = 0; j < sizeof(v); j += 8) {
			uint64_t x = rand_next(&seed);
			memcpy(v + j, &x, 8);   /* random bytes: the tables hold what was written */
		}
		kv_batch_put(b, k, strlen(k), v, sizeof(v));
		if (kv_batch_count(b) == 1000 || i == n - 1) {
			if (kv_write(db, b, 0) != 0)
				write_errors++;
			kv_batch_clear(b);
		}
	}
	kv_batch_free(b);
	is_int(write_errors, 0, "big range: every write succeeded");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0,
	       "big range: %ld keys flushed and compacted into level 1", n);
	kv_get_stats(db, &st);
	table_bytes = st.disk_bytes;
	deleted = table_bytes / (uint64_t)n * (uint64_t)(hi - lo);
	diag("%ld keys in %d tables, %llu bytes; [%ld, %ld) holds about %llu", n,
	     st.files_per_level[1], (unsigned long long)table_bytes, lo, hi,
	     (unsigned long long)deleted);
	big_key(k, sizeof(k), lo);
	big_key(v, sizeof(v), hi);
	is_int(kv_delete_range(db, k, strlen(k), v, strlen(v), 0), 0,
	       "big range: one kv_delete_range deletes %ld of them", hi - lo);

	/*
	 * Skipping costs the blocks around the two edges of the range, plus the
	 * index of each table opened: a few tens of KiB.  Reading the deleted
	 * entries costs all of their bytes.  1/20 of them is far from both.
	 */
	fwd = walk_across(db, lo, hi, 1, &wrong);
	is_int(wrong, 0, "big range, tombstone in the memtable: next steps from the last key "
	       "before the range to the first after it");
	ok(fwd * 20 < deleted, "big range, tombstone in the memtable: walking past it reads %llu "
	   "SST bytes, far fewer than the %llu it deletes", (unsigned long long)fwd,
	   (unsigned long long)deleted);
	wrong = 0;
	back = walk_across(db, lo, hi, 0, &wrong);
	is_int(wrong, 0, "big range, tombstone in the memtable: prev steps back across it");
	ok(back * 20 < deleted, "big range, tombstone in the memtable: walking back past it reads "
	   "%llu SST bytes, far fewer than the %llu it deletes", (unsigned long long)back,
	   (unsigned long long)deleted);

	/* reopen: the log is replayed into a level-0 table; nothing is cached */
	kv_close(db);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "big range: reopen");
	if (r < 0)
		goto out;
	kv_get_stats(db, &st);
	{
		int deeper = 0;
		for (int l = 1; l < 8; l++)
			deeper += st.files_per_level[l];
		ok(st.files_per_level[0] == 1 && deeper > 1, "big range: the tombstone is in level "
		   "0 (%d tables), the data in deeper levels (%d)", st.files_per_level[0], deeper);
	}
	wrong = 0;
	fwd = walk_across(db, lo, hi, 1, &wrong);
	is_int(wrong, 0, "big range, tombstone in level 0: next steps across the range");
	ok(fwd * 20 < deleted, "big range, tombstone in level 0: walking past it reads %llu SST "
	   "bytes, far fewer than the %llu it deletes", (unsigned long long)fwd,
	   (unsigned long long)deleted);
	wrong = 0;
	back = walk_across(db, lo, hi, 0, &wrong);
	is_int(wrong, 0, "big range, tombstone in level 0: prev steps back across it");
	ok(back * 20 < deleted, "big range, tombstone in level 0: walking back past it reads %llu "
	   "SST bytes, far fewer than the %llu it deletes", (unsigned long long)back,
	   (unsigned long long)deleted);

	/* the answer as a whole */
	{
		struct kv_iter *it = kv_iter_new(db, NULL);
		long expect = 0;
		int order = 0;

		for (kv_iter_seek_first(it); kv_iter_valid(it); kv_iter_next(it)) {
			size_t kl;
			const char *key = kv_iter_key(it, &kl);
			if (expect == lo)
				expect = hi;
			big_key(k, sizeof(k), expect);
			if (kl != strlen(k) || memcmp(key, k, kl))
				order++;
			expect++;
			live++;
		}
		is_int(live, n - (hi - lo),
		       "big range: a full scan finds exactly the keys outside it");
		is_int(order, 0, "big range: in order, none missing");
		is_int(kv_iter_status(it), 0, "big range: with status 0");
		kv_iter_free(it);
	}
	kv_close(db);
out:
	free(dir);
}

/* ------------------------------------------------- keys-only over large values */

#define KO_BIG (64u * 1024)

/* One scan's answer: "key=size;" for each entry, and the SST bytes it read. */
static uint64_t ko_scan(struct kv_db *db, const struct kv_snapshot *snap, int keys_only,
			int backward, struct buf *out, int *bad_prefix, const struct model *m)
{
	struct kv_read_options ro = { .snapshot = snap, .no_fill_cache = 1,
				      .keys_only = keys_only };
	struct kv_stats a, b;
	struct kv_iter *it;
	char line[64];

	buf_clear(out);
	kv_get_stats(db, &a);
	it = kv_iter_new(db, &ro);
	for (backward ? kv_iter_seek_last(it) : kv_iter_seek_first(it); kv_iter_valid(it);
	     backward ? kv_iter_prev(it) : kv_iter_next(it)) {
		size_t kl, vl, want;
		const char *k = kv_iter_key(it, &kl), *v = kv_iter_value(it, &vl);
		size_t i = model_lower_bound(m, k, kl);

		buf_append(out, k, kl);
		snprintf(line, sizeof(line), "=%zu;", kv_iter_value_size(it));
		buf_append(out, line, strlen(line));
		/* the value's first bytes are the model's (m: the latest state, or NULL) */
		if (m && i < m->n && m->e[i].live) {
			want = keys_only && m->e[i].val.len > KV_VALUE_PREFIX ? KV_VALUE_PREFIX
									    : m->e[i].val.len;
			if (vl != want || memcmp(v, m->e[i].val.data, vl) != 0)
				(*bad_prefix)++;
		}
	}
	if (kv_iter_status(it))
		buf_append(out, "<error>", 7);
	kv_iter_free(it);
	kv_get_stats(db, &b);
	return b.bytes_read_sst - a.bytes_read_sst;
}

static void ko_put_big(struct kv_db *db, struct model *m, const char *k, size_t n, uint64_t *seed)
{
	char *v = xmalloc(n);

	for (size_t j = 0; j < n; j++)
		v[j] = (char)rand_next(seed);   /* random: stored as it is, not compressed */
	do_put(db, m, k, strlen(k), v, n);
	free(v);
}

/*
 * Compare a keys-only scan with a full one, both ways, at snap (m: the
 * state it must show, for the values' first bytes); the keys-only scans must
 * read less than one large value's bytes: no large value's block.
 */
static void ko_compare(struct kv_db *db, const struct kv_snapshot *snap, const struct model *m,
		       const char *stage, uint64_t big_live)
{
	struct buf full = BUF_INIT, ko = BUF_INIT, back = BUF_INIT;
	uint64_t full_bytes, ko_bytes, back_bytes;
	int bad = 0;

	/* keys-only first: after a reopen it also opens the tables (their index is read) */
	ko_bytes = ko_scan(db, snap, 1, 0, &ko, &bad, m);
	full_bytes = ko_scan(db, snap, 0, 0, &full, &bad, m);
	ok(full.len > 0 && slice_eq(buf_slice(&full), buf_slice(&ko)),
	   "keys-only, %s: a keys-only scan gives exactly the keys and value sizes of a full "
	   "scan", stage);
	back_bytes = ko_scan(db, snap, 1, 1, &back, &bad, m);
	ok(back.len == ko.len, "keys-only, %s: and so does one backward (%zu bytes of listing)",
	   stage, back.len);
	is_int(bad, 0, "keys-only, %s: every value's first bytes are the value's", stage);
	ok(ko_bytes < KO_BIG && back_bytes < KO_BIG,
	   "keys-only, %s: the keys-only scans read %llu and %llu SST bytes, less than one "
	   "large value (%u): no large value's block", stage, (unsigned long long)ko_bytes,
	   (unsigned long long)back_bytes, KO_BIG);
	ok(full_bytes >= big_live,
	   "keys-only, %s: the full scan read %llu, at least the %llu bytes of the large values "
	   "it shows", stage, (unsigned long long)full_bytes, (unsigned long long)big_live);
	buf_free(&full);
	buf_free(&ko);
	buf_free(&back);
}

/*
 * Keys-only iteration over large values: 24 values of 64 KiB, each in a
 * table block of its own, between small entries, compacted; over them a
 * level-0 table holding a delete and a range delete of some, and a memtable
 * with an overwrite, a delete and a new large value; a snapshot from before
 * those changes.  At the snapshot and now, and after a reopen, a keys-only
 * scan must list exactly what a full scan lists -- deleted keys hidden, the
 * snapshot's keys kept -- with each value's full size, while reading only
 * the tables' index and the small entries' blocks (counted: bytes_read_sst).
 */
static void test_keys_only_big_values(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct model m = { 0 }, before;
	const struct kv_snapshot *snap;
	char *dir = dbpath("keysonly"), k[32];
	uint64_t seed = 7;
	int r;

	kv_options_init(&o);
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "keys-only: open");
	if (r < 0)
		goto out;
	write_errors = 0;
	for (int i = 0; i < 24; i++) {
		snprintf(k, sizeof(k), "a%02d", i);
		sput(db, &m, k, "small");
		snprintf(k, sizeof(k), "b%02d", i);
		ko_put_big(db, &m, k, KO_BIG, &seed);
	}
	sput(db, &m, "c", "the last small one");
	is_int(kv_compact_range(db, NULL, 0, NULL, 0), 0, "keys-only: compacted to one level");
	snap = kv_snapshot_new(db);
	model_copy(&before, &m);

	do_del(db, &m, "b03", 3);
	do_del_range(db, &m, "b10", 3, "b14", 3);
	is_int(kv_flush(db), 0, "keys-only: a delete and a range delete flushed to level 0");
	ko_put_big(db, &m, "b05", KO_BIG + 4464, &seed);
	do_del(db, &m, "b07", 3);
	ko_put_big(db, &m, "b99", KO_BIG, &seed);
	is_int(write_errors, 0, "keys-only: every write succeeded");

	ko_compare(db, NULL, &m, "latest state", 17u * KO_BIG);
	ko_compare(db, snap, &before, "snapshot before the deletes", 24u * KO_BIG);
	kv_snapshot_release(db, snap);
	is_int(kv_close(db), 0, "keys-only: close");
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "keys-only: reopen (the tables are opened again, the cache is empty)");
	if (r == 0) {
		ko_compare(db, NULL, &m, "after reopen", 17u * KO_BIG);
		kv_close(db);
	}
	model_free(&before);
out:
	model_free(&m);
	free(dir);
}

/* ------------------------------------------------- iterators outlive changes */

/* The .sst files in dir (a malloc'd list). */
static char **list_tables(const char *dir, size_t *n)
{
	char **names, **out;
	size_t nn;

	*n = 0;
	if (env_list_dir(env_posix(), dir, &names, &nn) < 0)
		return NULL;
	out = xcalloc(nn + 1, sizeof(*out));
	for (size_t i = 0; i < nn; i++) {
		size_t l = strlen(names[i]);
		if (l > 4 && !strcmp(names[i] + l - 4, ".sst"))
			out[(*n)++] = xstrdup(names[i]);
	}
	env_free_list(names, nn);
	return out;
}

static void test_iter_outlives_compaction(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct model m = { 0 }, old;
	struct view v = { .name = "an iterator created before", .m = &old };
	struct kv_iter *it;
	char *dir = dbpath("outlive"), k[32], val[32], **tables;
	size_t ntables, present = 0;
	int r;

	kv_options_init(&o);
	o.write_buffer_size = 16 * 1024;
	o.target_file_size = 8 * 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "outlive: open");
	if (r < 0)
		goto out;
	write_errors = 0;
	for (int i = 0; i < 600; i++) {
		snprintf(k, sizeof(k), "w%04d", i);
		snprintf(val, sizeof(val), "first-%d", i);
		sput(db, &m, k, val);
	}
	kv_compact_range(db, NULL, 0, NULL, 0);
	do_del_range(db, &m, "w0100", 5, "w0200", 5);
	kv_flush(db);
	for (int i = 0; i < 600; i += 7) {
		snprintf(k, sizeof(k), "w%04d", i);
		sput(db, &m, k, "second");
	}
	model_copy(&old, &m);
	tables = list_tables(dir, &ntables);
	it = kv_iter_new(db, NULL);
	kv_iter_seek(it, "w0300", 5);

	/* everything changes under it: overwrites, deletes, flushes, compactions */
	for (int round = 0; round < 3; round++) {
		for (int i = round; i < 600; i += 3) {
			snprintf(k, sizeof(k), "w%04d", i);
			snprintf(val, sizeof(val), "round%d-%d", round, i);
			sput(db, &m, k, val);
		}
		do_del_range(db, &m, "w0", 2, "w04", 3);
		kv_flush(db);
		kv_compact_range(db, NULL, 0, NULL, 0);
	}
	do_del(db, &m, "w0599", 5);
	is_int(write_errors, 0, "outlive: every write succeeded");
	for (size_t i = 0; i < ntables; i++) {
		char *p = xasprintf("%s/%s", dir, tables[i]);
		present += env_exists(env_posix(), p) == 1;
		free(p);
		free(tables[i]);
	}
	free(tables);
	ok(ntables > 1 && present == ntables,
	   "outlive: the %zu tables that existed when the iterator was created are still on disk "
	   "(%zu are) after compactions replaced them", ntables, present);
	{
		size_t kl;
		const char *key = kv_iter_valid(it) ? kv_iter_key(it, &kl) : NULL;
		ok(key && kl == 5 && !memcmp(key, "w0300", 5),
		   "outlive: an iterator positioned before the changes stays on its key");
	}
	check_iter(it, &v, &m, "outlive, after writes, flushes and compactions");
	kv_iter_free(it);
	{
		struct view now = { .name = "a new iterator", .m = &m };
		check_view(db, &now, &m, "outlive, after writes, flushes and compactions");
	}
	model_free(&old);
	kv_close(db);
out:
	model_free(&m);
	free(dir);
}

/*
 * Concurrent: a writer replaces all keys in one batch per generation (some
 * batches also range-delete them all first), flushing and compacting as it
 * goes; readers must always see one whole generation.
 */
struct churn {
	struct kv_db *db;
	int nkeys;
	int stop;              /* atomic */
	uint64_t gen;          /* atomic: the last generation written */
	int errors;
	int compactions;
};

static void churn_value(char *v, size_t n, uint64_t gen, int i)
{
	snprintf(v, n, "g%08llu-%05d-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", (unsigned long long)gen, i);
}

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	struct kv_batch *b = kv_batch_new();
	char k[16], v[64];

	for (uint64_t g = 1; !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE); g++) {
		kv_batch_clear(b);
		if (g % 4 == 0)
			kv_batch_delete_range(b, "c", 1, "d", 1);
		for (int i = 0; i < c->nkeys; i++) {
			snprintf(k, sizeof(k), "c%05d", i);
			churn_value(v, sizeof(v), g, i);
			kv_batch_put(b, k, strlen(k), v, strlen(v));
		}
		if (kv_write(c->db, b, 0) != 0)
			c->errors++;
		__atomic_store_n(&c->gen, g, __ATOMIC_RELEASE);
		if (g % 16 == 0) {
			if (kv_compact_range(c->db, NULL, 0, NULL, 0) != 0)
				c->errors++;
			c->compactions++;
		}
	}
	kv_batch_free(b);
	return NULL;
}

/* Wait until the writer has written generation g (or 10 s passed). */
static void churn_wait(struct churn *c, uint64_t g)
{
	for (int i = 0; i < 10000 && __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE) < g; i++)
		usleep(1000);
}

/*
 * The generation the iterator shows, if it shows exactly nkeys keys, all of
 * one generation, in order (walking from where it stands); 0 otherwise.
 */
static uint64_t one_generation(struct kv_iter *it, int nkeys, int forward)
{
	uint64_t gen = 0;
	int seen = 0;

	for (; kv_iter_valid(it); forward ? kv_iter_next(it) : kv_iter_prev(it)) {
		size_t kl, vl;
		const char *k = kv_iter_key(it, &kl), *v = kv_iter_value(it, &vl);
		char want_k[16], want_v[64];
		unsigned long long g;
		int i = forward ? seen : nkeys - 1 - seen;

		char num[24];

		if (seen >= nkeys || vl < 9)
			return 0;
		memcpy(num, v + 1, 8);
		num[8] = 0;
		g = strtoull(num, NULL, 10);
		if (!gen)
			gen = g;
		snprintf(want_k, sizeof(want_k), "c%05d", i);
		churn_value(want_v, sizeof(want_v), gen, i);
		if (kl != strlen(want_k) || memcmp(k, want_k, kl) || vl != strlen(want_v) ||
		    memcmp(v, want_v, vl))
			return 0;
		seen++;
	}
	return seen == nkeys && kv_iter_status(it) == 0 ? gen : 0;
}

static void test_iter_during_churn(void)
{
	struct kv_options o;
	struct kv_db *db;
	struct churn c;
	pthread_t th;
	struct kv_iter *held;
	char *dir = dbpath("churn");
	uint64_t g0, gen_end;
	int r, bad_scans = 0, scans = 0, steps = 0, held_bad = 0;
	struct kv_stats st0, st1;

	kv_options_init(&o);
	o.write_buffer_size = 32 * 1024;
	o.target_file_size = 16 * 1024;
	o.max_bytes_level_base = 64 * 1024;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "churn: open");
	if (r < 0)
		goto out;
	memset(&c, 0, sizeof(c));
	c.db = db;
	c.nkeys = 400;
	pthread_create(&th, NULL, churn_main, &c);
	churn_wait(&c, 2);
	kv_get_stats(db, &st0);

	/* one iterator walked slowly, one step per generation the writer adds */
	held = kv_iter_new(db, NULL);
	g0 = 0;
	kv_iter_seek_first(held);
	for (int i = 0; i < c.nkeys && kv_iter_valid(held); i++, steps++) {
		size_t kl, vl;
		const char *k = kv_iter_key(held, &kl), *v = kv_iter_value(held, &vl);
		char want_k[16], want_v[64];
		unsigned long long g;

		char num[24];

		memcpy(num, vl >= 9 ? v + 1 : "00000000", 8);
		num[8] = 0;
		g = strtoull(num, NULL, 10);
		if (i == 0)
			g0 = g;
		snprintf(want_k, sizeof(want_k), "c%05d", i);
		churn_value(want_v, sizeof(want_v), g0, i);
		if (kl != strlen(want_k) || memcmp(k, want_k, kl) || vl != strlen(want_v) ||
		    memcmp(v, want_v, vl)) {
			if (!held_bad)
				diag("held iterator at step %d: %s = %s", i, show(k, kl),
				     show(v, vl));
			held_bad++;
		}
		if (i % 8 == 0) {
			/* let the writer move on, and check a fresh iterator each time */
			struct kv_iter *fresh;
			int fwd = i % 16 == 0;

			churn_wait(&c, __atomic_load_n(&c.gen, __ATOMIC_ACQUIRE) + 1);
			fresh = kv_iter_new(db, NULL);
			if (fwd)
				kv_iter_seek_first(fresh);
			else
				kv_iter_seek_last(fresh);
			if (!one_generation(fresh, c.nkeys, fwd))
				bad_scans++;
			scans++;
			kv_iter_free(fresh);
		}
		kv_iter_next(held);
	}
	is_int(steps, c.nkeys, "churn: the held iterator walks all %d keys", c.nkeys);
	is_int(held_bad, 0, "churn: it shows the generation it was created at (%llu), every key",
	       (unsigned long long)g0);
	is_int(kv_iter_status(held), 0, "churn: its status stays 0");
	kv_iter_seek_last(held);
	ok(one_generation(held, c.nkeys, 0) == g0,
	   "churn: walked backward afterwards, it still shows that generation");
	kv_iter_free(held);
	is_int(bad_scans, 0, "churn: %d fresh iterators each show one whole generation", scans);

	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	gen_end = __atomic_load_n(&c.gen, __ATOMIC_ACQUIRE);
	kv_get_stats(db, &st1);
	is_int(c.errors, 0, "churn: the writer saw no error");
	ok(gen_end > g0 + (uint64_t)c.nkeys / 8 && st1.flushes > st0.flushes &&
	   st1.compactions > st0.compactions,
	   "churn: meanwhile the writer went from generation %llu to %llu, with %llu flushes and "
	   "%llu compactions", (unsigned long long)g0, (unsigned long long)gen_end,
	   (unsigned long long)(st1.flushes - st0.flushes),
	   (unsigned long long)(st1.compactions - st0.compactions));
	{
		struct kv_iter *it = kv_iter_new(db, NULL);
		kv_iter_seek_first(it);
		ok(one_generation(it, c.nkeys, 1) == gen_end,
		   "churn: after the writer stopped, an iterator shows its last generation");
		kv_iter_free(it);
	}
	kv_close(db);
out:
	free(dir);
}

/*
 * The tombstone cursor cannot open a table that holds range tombstones: it
 * cannot tell which keys are deleted, so it must say so (status) rather
 * than call them live.  A scan cannot lean on the table's own iterator to
 * report the error: that one may have read the table earlier, and the
 * table cache closed it since.
 */
static void test_tombstone_table_unreadable(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	const struct rdel_frag *fr;
	struct vtomb_cursor *c;
	struct kv_options o;
	struct version *v;
	struct kv_db *db;
	char *dir = dbpath("vtomb-open"), *p, *line, *save = NULL, k[16], match[32] = "";
	int r;

	kv_options_init(&o);
	o.env = fe;
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "unreadable tombstones: open");
	if (r < 0)
		goto out;
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		kv_put(db, k, 4, "v", 1, 0);
	}
	kv_compact_range(db, NULL, 0, NULL, 0);
	kv_delete_range(db, "k010", 4, "k090", 4, 0);
	kv_flush(db);
	p = kv_property(db, "sstables");
	for (line = p ? strtok_r(p, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long num, rd;
		if (sscanf(line, "level %*d %llu.sst %*u bytes, %*u entries, %llu range", &num,
			   &rd) == 2 && rd > 0)
			snprintf(match, sizeof(match), "%06llu.sst", num);
	}
	free(p);
	ok(match[0], "the range tombstone is in a table of its own (%s)", match);
	kv_close(db);
	/* reopened: the table cache is empty, so the cursor has to open the table */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "unreadable tombstones: reopen");
	if (r < 0)
		goto out;
	pthread_mutex_lock(&db->mu);
	v = db->trees[0]->vt->current;
	version_ref(v);
	pthread_mutex_unlock(&db->mu);

	c = vtomb_cursor_new(v);
	env_fault_inject(fe, ENV_OP_OPEN, 0, 1, -EMFILE, match);
	vtomb_cursor_covering(c, slice_str("k050"), SEQ_MAX, &fr);
	is_int(vtomb_cursor_status(c), -EMFILE,
	       "a table with tombstones that cannot be opened: the cursor's status is the error");
	vtomb_cursor_free(c);
	env_fault_clear(fe);
	c = vtomb_cursor_new(v);
	ok(vtomb_cursor_covering(c, slice_str("k050"), SEQ_MAX, &fr) > 0 &&
	   vtomb_cursor_status(c) == 0, "once it opens, the key is covered and the status is 0");
	vtomb_cursor_free(c);
	pthread_mutex_lock(&db->mu);
	version_unref(v);
	pthread_mutex_unlock(&db->mu);
	is_int(kv_close(db), 0, "unreadable tombstones: close");

	/* through the public API, with the table cache empty again */
	r = kv_open(dir, &o, &db);
	is_int(r, 0, "unreadable tombstones: reopen for a scan");
	if (r < 0)
		goto out;
	env_fault_inject(fe, ENV_OP_OPEN, 0, -1, -EMFILE, match);
	{
		struct kv_iter *it = kv_iter_new(db, NULL);
		kv_iter_seek(it, "k050", 4);
		ok(!kv_iter_valid(it) && kv_iter_status(it) == -EMFILE,
		   "a scan into the range fails with the error, returning no key (status %d)",
		   kv_iter_status(it));
		kv_iter_free(it);
	}
	env_fault_clear(fe);
	is_int(kv_close(db), 0, "unreadable tombstones: close again");
out:
	env_fault_free(fe);
	free(dir);
}

int main(void)
{
	double t0 = (double)now_micros();

	plan(1121);
	make_tmpdir("kv_iter");
	diag("directory %s, scale %.3g", tmpdir, test_scale());
	test_sources();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_tombstone_layers();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_deleted_range_skipped();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_keys_only_big_values();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_iter_outlives_compaction();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_iter_during_churn();
	diag("%.1f s", ((double)now_micros() - t0) / 1e6);
	test_tombstone_table_unreadable();
	rm_rf(tmpdir);
	return exit_status();
}
