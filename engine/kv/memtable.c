/*
 * memtable.c -- the memtable: an arena and two skiplists of internal keys
 * (see memtable.h).
 *
 * Writes land here after the log; reads and flushes walk it while the next
 * writes arrive.  Everything a reader touches is either immutable once
 * published (a node's key, value and height) or a single pointer or counter
 * read and written atomically, so readers take no lock and never wait for the
 * writer.  Nodes are never unlinked or freed before the whole memtable is,
 * which is what makes that safe: a reader holding a node pointer holds valid
 * memory for as long as it holds a reference to the memtable.
 *
 * The one writer (mem_add; the db serialises them) fills a new node
 * completely, including its forward links, and only then publishes it with a
 * release store into its predecessors' links, lowest level first.  A reader
 * loads links with acquire, so whichever node it reaches, it sees that node
 * whole.  A reader may see a node at level 0 before the writer has linked it
 * at the higher levels; it then just takes the slower path to it.
 */
#include "memtable.h"
#include "bloom.h"
#include "rangedel.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---------------------------------------------------------------- arena */

/*
 * A bump allocator over chunks that live exactly as long as the memtable.
 * Chunks start small (many memtables of tests and small databases hold a few
 * entries) and double up to ARENA_CHUNK_MAX.  An item larger than a quarter of
 * the next chunk gets a chunk of its own, leaving the current chunk's free
 * space for the small items that follow; so at most a quarter of any chunk is
 * abandoned when a new one starts.  Only the writer allocates.
 */
#define ARENA_CHUNK_MIN (8u * 1024)
#define ARENA_ALIGN sizeof(void *)   /* nodes begin with pointers */
/*
 * Chunks grow to one huge page (2 MiB on x86-64), mapped on its own aligned
 * 2 MiB and offered to the kernel for transparent huge pages.  A skiplist
 * of random keys is a random walk over the whole arena: with 4 KiB pages
 * nearly every step is a TLB miss as well as a cache miss (and in a virtual
 * machine a TLB miss walks two page tables).  Measured on 1M random 16-byte
 * keys with 100-byte values: inserts about 20% faster, a full scan about 7%.
 */
#define ARENA_HUGE ((size_t)2 << 20)
#define ARENA_CHUNK_MAX (ARENA_HUGE - sizeof(struct arena_chunk))

struct arena_chunk {
	struct arena_chunk *next;
	size_t mapped;               /* bytes mmap'd at this header, 0 if malloc'd */
	/* the chunk's bytes follow; sizeof(*this) keeps them ARENA_ALIGN-aligned */
};

/*
 * A pool also keeps one spare chunk, mapped and touched by a thread of its
 * own ahead of need, for when no freed chunk is there (the first memtables
 * of a database, and each one while the one before it is in flush): the
 * first touch of fresh memory is slow where pages come from the host on
 * demand (a 2 MiB chunk cost a put 5 ms on this project's test VMs, every
 * 2 MiB of 1 KiB values), and the spare moves that off the writer.
 */
/*
 * A freed memtable's chunk is kept only while the chunks kept and those in
 * memtables not yet freed (out) stay within the pool's limit, the write
 * buffer: once a flush is over, the memtable being written and the chunks
 * kept for it hold one write buffer between them (and the spare one more
 * chunk), as a memtable alone would, and the rest goes back to the system
 * at once.  The cost: the memtable after the one being written starts on
 * fresh chunks, where it used to find those the flush left over.  Chunks
 * kept while no memtable takes one or gives one back for this long are
 * unmapped by the spare's thread (pool_trim): a database that stops
 * writing gives the memory kept for its next memtable back to the system
 * too.
 */
#define POOL_IDLE_MICROS 1000000u

struct mem_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* wakes the spare's thread (CLOCK_MONOTONIC) */
	struct arena_chunk *free;    /* unused huge chunks (mu) */
	size_t n, max;               /* chunks in free; the most kept and out together */
	size_t buffer;               /* the write buffer: max_bytes */
	size_t out;                  /* chunks taken for memtables and not given back (mu) */
	uint64_t last_use;           /* now_micros() of the last take or put (mu) */
	struct arena_chunk *spare;   /* a fresh chunk already touched, or NULL (mu) */
	int want_spare, stopping, started;   /* started: 1 running, -1 could not start */
	pthread_t thread;
};

struct arena {
	struct mem_pool *pool;       /* NULL: chunks are mapped and unmapped each time */
	char *ptr;                   /* free space of the current chunk, ARENA_ALIGN-aligned */
	size_t left;
	size_t next_size;            /* size of the next shared chunk */
	struct arena_chunk *chunks;  /* every chunk, newest first; owned */
	/*
	 * Bytes consumed: handed out, abandoned chunk tails and chunk headers,
	 * but not the free space left in the current chunk.  So it grows with the
	 * data and a small write buffer flushes when it should.  Written by the
	 * writer, read by anyone (atomic).
	 */
	size_t used;
};

static void arena_add_used(struct arena *a, size_t n)
{
	/* One writer: a relaxed load-add-store is enough; readers just need whole values. */
	__atomic_store_n(&a->used, __atomic_load_n(&a->used, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

/* One huge-page-aligned mapping of ARENA_HUGE bytes, or NULL if there is none to be had. */
static void *huge_map(void)
{
	char *p = mmap(NULL, 2 * ARENA_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	size_t head;

	if (p == MAP_FAILED)
		return NULL;
	/* keep the aligned 2 MiB inside the 4 MiB mapped, give back the rest */
	head = (ARENA_HUGE - (uintptr_t)p % ARENA_HUGE) % ARENA_HUGE;
	if (head)
		munmap(p, head);
	munmap(p + head + ARENA_HUGE, ARENA_HUGE - head);
	p += head;
#ifdef MADV_HUGEPAGE
	madvise(p, ARENA_HUGE, MADV_HUGEPAGE);   /* advice only: failure changes nothing */
#endif
	return p;
}

/* Fault every page of a fresh chunk in, as the writer's stores would. */
static void chunk_touch(struct arena_chunk *c)
{
	for (size_t off = 0; off < ARENA_HUGE; off += 4096)
		((volatile char *)c)[off] = 0;
}

/*
 * Unmap the kept chunks if the pool has been idle POOL_IDLE_MICROS: 1 if it
 * did (mu was dropped meanwhile), 0 if there were none, or *wait_until
 * set to when they will be due.  REQUIRES: mu.
 */
static int pool_trim(struct mem_pool *p, uint64_t *wait_until)
{
	struct arena_chunk *c;
	uint64_t due = p->last_use + POOL_IDLE_MICROS;

	if (!p->free)
		return 0;
	if (now_micros() < due) {
		*wait_until = due;
		return 0;
	}
	c = p->free;
	p->free = NULL;
	p->n = 0;
	pthread_mutex_unlock(&p->mu);
	while (c) {
		struct arena_chunk *next = c->next;

		munmap(c, c->mapped);
		c = next;
	}
	pthread_mutex_lock(&p->mu);
	return 1;
}

static void *spare_main(void *arg)
{
	struct mem_pool *p = arg;

	pthread_setname_np(pthread_self(), "kv-memspare");
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		struct arena_chunk *c;
		uint64_t wait_until = 0;

		if (pool_trim(p, &wait_until))
			continue;
		if (!p->want_spare || p->spare) {
			if (wait_until) {
				struct timespec ts = { (time_t)(wait_until / 1000000u),
						       (long)(wait_until % 1000000u) * 1000 };

				pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			} else {
				pthread_cond_wait(&p->cv, &p->mu);
			}
			continue;
		}
		p->want_spare = 0;
		pthread_mutex_unlock(&p->mu);
		if ((c = huge_map()))
			chunk_touch(c);
		pthread_mutex_lock(&p->mu);
		if (c && !p->spare && !p->stopping)
			p->spare = c;
		else if (c)
			munmap(c, ARENA_HUGE);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct mem_pool *mem_pool_new(size_t max_bytes)
{
	struct mem_pool *p = xcalloc(1, sizeof(*p));
	pthread_condattr_t ca;

	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* now_micros's clock */
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->max = max_bytes / ARENA_HUGE;
	p->buffer = max_bytes;
	return p;
}

void mem_pool_free(struct mem_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started > 0)
		pthread_join(p->thread, NULL);
	if (p->spare)
		munmap(p->spare, ARENA_HUGE);
	while (p->free) {
		struct arena_chunk *c = p->free;
		p->free = c->next;
		munmap(c, c->mapped);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* A count of p's, read under its lock. */
static size_t pool_count(struct mem_pool *p, const size_t *count)
{
	size_t n;

	pthread_mutex_lock(&p->mu);
	n = *count;
	pthread_mutex_unlock(&p->mu);
	return n;
}

size_t mem_pool_chunks(struct mem_pool *p)
{
	return pool_count(p, &p->n);
}

size_t mem_pool_out(struct mem_pool *p)
{
	return pool_count(p, &p->out);
}

int mem_pool_spare(struct mem_pool *p)
{
	int n;

	pthread_mutex_lock(&p->mu);
	n = p->spare != NULL;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/*
 * A kept chunk, else the spare, else NULL (the caller maps one).  Once
 * neither a kept chunk nor the spare is left, the spare's thread (started
 * at the first need) prepares the next spare.
 */
static struct arena_chunk *pool_take(struct mem_pool *p)
{
	struct arena_chunk *c = NULL;

	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->last_use = now_micros();
	if (p->free) {
		c = p->free;
		p->free = c->next;
		p->n--;
	} else if (p->spare) {
		c = p->spare;
		p->spare = NULL;
	}
	if (c)
		p->out++;
	if (!p->free && !p->spare && p->max > 0 && p->started >= 0) {
		p->want_spare = 1;
		if (!p->started)
			p->started = helper_thread_create(&p->thread, 0, spare_main, p) == 0 ? 1 : -1;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return c;
}

/* A chunk the caller mapped itself for a memtable of p is out too. */
static void pool_count_out(struct mem_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->out++;
	pthread_mutex_unlock(&p->mu);
}

/*
 * Huge chunk c of a freed memtable: kept for the next memtable (1), or 0 if
 * the chunks kept and those still out would pass the pool's limit.
 */
static int pool_put(struct mem_pool *p, struct arena_chunk *c)
{
	int kept = 0;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	p->last_use = now_micros();
	assert(p->out > 0);   /* every huge chunk of a pooled memtable was counted out */
	if (p->out > 0)
		p->out--;
	if (p->n + p->out < p->max) {
		c->next = p->free;
		p->free = c;
		p->n++;
		kept = 1;
		pthread_cond_signal(&p->cv);   /* the spare's thread times the trim */
	}
	pthread_mutex_unlock(&p->mu);
	return kept;
}

static char *arena_chunk_new(struct arena *a, size_t n)
{
	struct arena_chunk *c = NULL;

	if (sizeof(*c) + n == ARENA_HUGE && !(c = pool_take(a->pool)) && (c = huge_map()))
		pool_count_out(a->pool);
	if (c) {
		c->mapped = ARENA_HUGE;
	} else {
		c = xmalloc(sizeof(*c) + n);
		c->mapped = 0;
	}
	c->next = a->chunks;
	a->chunks = c;
	arena_add_used(a, sizeof(*c));
	return (char *)(c + 1);
}

/* n bytes aligned to ARENA_ALIGN, valid until arena_free. */
static void *arena_alloc(struct arena *a, size_t n)
{
	char *p;

	n = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (n > a->left) {
		if (n > a->next_size / 4) {
			p = arena_chunk_new(a, n);
			arena_add_used(a, n);
			return p;
		}
		arena_add_used(a, a->left);   /* the old chunk's tail is lost */
		a->ptr = arena_chunk_new(a, a->next_size);
		a->left = a->next_size;
		if (a->next_size < ARENA_CHUNK_MAX)
			a->next_size = a->next_size * 2 < ARENA_CHUNK_MAX ? a->next_size * 2
									  : ARENA_CHUNK_MAX;
	}
	p = a->ptr;
	a->ptr += n;
	a->left -= n;
	arena_add_used(a, n);
	assert(((uintptr_t)p & (ARENA_ALIGN - 1)) == 0);
	return p;
}

static void arena_free(struct arena *a)
{
	struct arena_chunk *c = a->chunks, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->mapped == ARENA_HUGE && pool_put(a->pool, c))
			continue;
		if (c->mapped)
			munmap(c, c->mapped);
		else
			free(c);
	}
	a->chunks = NULL;
}

/* ---------------------------------------------------------------- skiplist */

#define SKIP_MAX_HEIGHT 12
#define SKIP_BRANCH_BITS 2    /* a node reaches the next level with probability 1/4 */

/*
 * A node is one arena allocation laid out as
 *
 *     link[height - 1] ... link[1] link[0] | varint32 klen | ikey | varint32 vlen | value
 *
 * and a node pointer points just past the links, at the key's length.  So the
 * key is found without knowing the height (which nobody needs after the
 * insert), and link[i] sits i + 1 pointers below the node pointer.  The type
 * is never defined: a node is an address in the arena.
 */
struct mnode;

static inline struct mnode **node_link(struct mnode *n, int level)
{
	return (struct mnode **)n - 1 - level;
}

static inline struct mnode *node_next(struct mnode *n, int level)
{
	return __atomic_load_n(node_link(n, level), __ATOMIC_ACQUIRE);
}

/* Decode a varint32 we wrote ourselves: trusted, so no limit to check. */
static inline const char *node_varint(const char *p, uint32_t *v)
{
	const unsigned char *u = (const unsigned char *)p;
	uint32_t r = 0;
	int shift = 0;

	while (*u & 0x80) {
		r |= (uint32_t)(*u++ & 0x7f) << shift;
		shift += 7;
	}
	*v = r | (uint32_t)*u << shift;
	return (const char *)(u + 1);
}

static inline struct slice node_key(const struct mnode *n)
{
	uint32_t klen;
	const char *p = node_varint((const char *)n, &klen);

	return slice_make(p, klen);
}

static inline struct slice node_value(const struct mnode *n)
{
	struct slice k = node_key(n);
	uint32_t vlen;
	const char *p = node_varint(k.data + k.len, &vlen);

	return slice_make(p, vlen);
}

/* A search key split in two, so lookups need not build an internal key. */
struct skey {
	struct slice user;
	uint64_t trailer;
};

static inline struct skey skey_from_ikey(struct slice ikey)
{
	struct skey t = { ikey_user(ikey), ikey_trailer(ikey) };
	return t;
}

/* ikey_cmp(node's key, t). */
static inline int node_cmp(const struct mnode *n, const struct skey *t)
{
	struct slice k = node_key(n);
	int r = slice_cmp(ikey_user(k), t->user);

	if (r == 0) {
		uint64_t tr = ikey_trailer(k);
		r = tr > t->trailer ? -1 : tr < t->trailer;
	}
	return r;
}

struct skiplist {
	struct mnode *head;   /* a node of full height with no key; never returned */
	int height;           /* levels in use; written by the writer, read by anyone (atomic) */
	uint64_t rng;         /* writer only */
	/*
	 * Writer only: the node inserted last, and at each level the last node
	 * whose key is <= its key (the head where there is none).  When the
	 * last node is also the list's last and the next key is larger, as in
	 * every sequential fill, these are exactly the predecessors the insert
	 * needs, and the search from the top is skipped.
	 */
	struct mnode *last;
	struct mnode *splice[SKIP_MAX_HEIGHT];
};

static struct mnode *node_alloc(struct arena *a, int height, size_t payload)
{
	char *p = arena_alloc(a, sizeof(struct mnode *) * (size_t)height + payload);

	return (struct mnode *)(p + sizeof(struct mnode *) * (size_t)height);
}

static void skip_init(struct skiplist *l, struct arena *a, uint64_t seed)
{
	l->head = node_alloc(a, SKIP_MAX_HEIGHT, 0);
	for (int i = 0; i < SKIP_MAX_HEIGHT; i++)
		*node_link(l->head, i) = NULL;
	l->height = 1;
	l->rng = seed;
	l->last = NULL;
	for (int i = 0; i < SKIP_MAX_HEIGHT; i++)
		l->splice[i] = l->head;
}

static int skip_height(const struct skiplist *l)
{
	/* Relaxed: a stale height only means starting the search lower. */
	return __atomic_load_n(&l->height, __ATOMIC_RELAXED);
}

static int random_height(struct skiplist *l)
{
	uint64_t r = rand_next(&l->rng);
	int h = 1;

	while (h < SKIP_MAX_HEIGHT && (r & ((1u << SKIP_BRANCH_BITS) - 1)) == 0) {
		h++;
		r >>= SKIP_BRANCH_BITS;
	}
	return h;
}

/*
 * The first node >= t, or NULL.  If prev is not NULL, prev[i] is set to the
 * last node < t at each level i below the current height (the head if none).
 * Descending a level often leads to the node just found to be >= t again;
 * remembering it saves comparing with it once more.
 */
static struct mnode *skip_find_ge(const struct skiplist *l, const struct skey *t,
				  struct mnode **prev)
{
	struct mnode *x = l->head, *ge = NULL;
	int level = skip_height(l) - 1;

	for (;;) {
		struct mnode *next = node_next(x, level);

		if (next && next != ge && node_cmp(next, t) < 0) {
			x = next;
			continue;
		}
		ge = next;
		if (prev)
			prev[level] = x;
		if (level == 0)
			return next;
		level--;
	}
}

/* The last node < t, or the head if there is none. */
static struct mnode *skip_find_lt(const struct skiplist *l, const struct skey *t)
{
	struct mnode *x = l->head, *ge = NULL;
	int level = skip_height(l) - 1;

	for (;;) {
		struct mnode *next = node_next(x, level);

		if (next && next != ge && node_cmp(next, t) < 0) {
			x = next;
			continue;
		}
		ge = next;
		if (level == 0)
			return x;
		level--;
	}
}

/* The last node, or the head if the list is empty. */
static struct mnode *skip_find_last(const struct skiplist *l)
{
	struct mnode *x = l->head;
	int level = skip_height(l) - 1;

	for (;;) {
		struct mnode *next = node_next(x, level);

		if (next) {
			x = next;
			continue;
		}
		if (level == 0)
			return x;
		level--;
	}
}

/*
 * Insert (ukey, trailer) -> value.  The new node is filled in, links
 * included, before the release stores that make it reachable.
 * REQUIRES: the only writer; no equal key present.
 */
static void skip_insert(struct skiplist *l, struct arena *a, struct slice ukey, uint64_t trailer,
			struct slice value)
{
	struct skey t = { ukey, trailer };
	struct mnode *prev[SKIP_MAX_HEIGHT];
	int height = random_height(l), cur = skip_height(l);
	size_t klen = ukey.len + IKEY_TRAILER;

	if (l->last && node_next(l->last, 0) == NULL && node_cmp(l->last, &t) < 0) {
		/*
		 * Appending after the last node: every splice node is the last of
		 * its level (nothing follows the largest key), and all are < t.
		 */
		memcpy(prev, l->splice, sizeof(prev));
	} else {
		struct mnode *x = skip_find_ge(l, &t, prev);

		assert(x == NULL || node_cmp(x, &t) != 0);
		(void)x;
	}
	assert(klen <= UINT32_MAX && value.len <= UINT32_MAX);

	struct mnode *n = node_alloc(a, height, (size_t)varint_length(klen) + klen +
				     (size_t)varint_length(value.len) + value.len);
	char *p = enc_varint32((char *)n, (uint32_t)klen);
	if (ukey.len)
		memcpy(p, ukey.data, ukey.len);
	enc_fixed64(p + ukey.len, trailer);
	p = enc_varint32(p + klen, (uint32_t)value.len);
	if (value.len)
		memcpy(p, value.data, value.len);

	if (height > cur) {
		for (int i = cur; i < height; i++)
			prev[i] = l->head;
		/*
		 * A reader that sees the new height before the node is linked finds
		 * NULL at the head's upper levels and simply descends.
		 */
		__atomic_store_n(&l->height, height, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < height; i++) {
		/* n is not reachable yet, so this store needs no ordering of its own. */
		__atomic_store_n(node_link(n, i),
				 __atomic_load_n(node_link(prev[i], i), __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		__atomic_store_n(node_link(prev[i], i), n, __ATOMIC_RELEASE);
	}
	/* above the height in use the splice stays the head */
	for (int i = 0; i < height; i++)
		l->splice[i] = n;
	for (int i = height; i < cur; i++)
		l->splice[i] = prev[i];
	l->last = n;
}

/* ---------------------------------------------------------------- key filter */

/*
 * A filter of the user keys of the point entries, so that a get of a key
 * the memtable does not hold -- nearly every get, once the data outgrows
 * one write buffer -- skips the skiplist search.  In a full 64 MiB
 * memtable that search is a chain of some twenty dependent cache misses:
 * a fifth of the time of a 1 KiB-value readrandom in the benchmark's flow.
 *
 * A blocked bloom filter: a key's hash picks one 64-byte line of a segment
 * and sets MF_PROBES bits in it, so probing a segment costs at most one
 * cache miss.  The memtable does not know how many keys it will get, so
 * the filter grows in segments: the first of MF_SEG_MIN bytes, each next
 * one four times the last, up to MF_SEG_MAX; each takes MF_BITS_PER_KEY
 * bits per key before the next is made.  Inserts go to the newest segment,
 * a lookup probes them all (the small ones stay in the CPU's caches).  A
 * memtable of a few entries so pays a few hundred bytes (a small write
 * buffer stays nearly all for the entries), a full 64 MiB one of 100 B
 * values about 1.1 MiB in nine segments, and one with only range
 * tombstones nothing.
 * Segments are carved from the arena, whose chunks a pool recycles, and
 * counted in mem_bytes like the nodes.
 *
 * The one writer sets bits with plain atomic stores; readers load words
 * relaxed.  A reader must see the bits of every entry its snapshot covers:
 * the db publishes a sequence (release) only after its entries and their
 * bits are in, and a reader acquires it before reading.  A segment is zeroed
 * before nseg counts it (release, acquire).
 */
#define MF_LINE_WORDS 8               /* 512 bits: one cache line */
#define MF_PROBES 6
#define MF_BITS_PER_KEY 16            /* about 0.2% of absent keys pass a full segment */
#define MF_SEG_MIN ((size_t)256)
/* with its alignment slack, under a quarter of an arena chunk: carved from one */
#define MF_SEG_MAX ((size_t)256 << 10)
/*
 * Past 24 segments (about 2.5 million keys, 4.9 MiB) the newest one just
 * fills up and lets more absent keys through: a memtable holds that many
 * keys only with a write buffer far beyond the default.
 */
#define MF_SEGS 24
/*
 * Memtables of a smaller write buffer have no filter: they fit in the CPU's
 * caches, where the search costs little, and the filter's few KiB would
 * take a noticeable share of them (up to a tenth of a 64 KiB buffer).
 */
#define MF_MIN_BUFFER ((size_t)1 << 20)

struct mfilter_seg {
	uint64_t *words;
	uint64_t mask;                /* lines - 1; lines is a power of 2 */
};

struct mfilter {
	struct mfilter_seg seg[MF_SEGS];
	int off;                      /* 1: no filter, every key may be there (fixed at creation) */
	int nseg;                     /* segments in use (release / acquire) */
	size_t keys, cap;             /* keys in the newest segment, and its share (writer only) */
};

/*
 * The probes of hash h within a line: MF_PROBES fields of 9 bits, from bit
 * 63 down, of a remix of h.  The line is picked by h's low bits, and the
 * low k bits of a product depend only on the low k bits of its factor: so
 * the halves of h are swapped first, or the lowest probe of a big segment
 * would be tied to its line (in a simulation of full 256 and 512 KiB
 * segments, 0.16% and 0.19% of absent keys passed; 0.12% with the swap).
 */
static inline uint64_t mf_bits(uint64_t h)
{
	return (h >> 32 | h << 32) * 0x9e3779b97f4a7c15ull;
}

static void mf_grow(struct mfilter *f, struct arena *a);

static void mf_add(struct mfilter *f, struct arena *a, uint64_t h)
{
	if (f->off)
		return;
	if (f->keys >= f->cap && f->nseg < MF_SEGS)
		mf_grow(f, a);
	f->keys++;

	const struct mfilter_seg *s = &f->seg[f->nseg - 1];
	uint64_t *line = s->words + (h & s->mask) * MF_LINE_WORDS, g = mf_bits(h);

	for (int i = 0; i < MF_PROBES; i++, g <<= 9) {
		unsigned b = (unsigned)(g >> 55);
		uint64_t *w = &line[b >> 6];

		__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | (1ull << (b & 63)),
				 __ATOMIC_RELAXED);
	}
}

/* 0: no point entry of the memtable has hash h; 1: one may have. */
static int mf_may_contain(const struct mfilter *f, uint64_t h)
{
	const uint64_t *lines[MF_SEGS];
	uint64_t g;
	int n;

	if (f->off)
		return 1;
	n = __atomic_load_n(&f->nseg, __ATOMIC_ACQUIRE);
	g = mf_bits(h);
	/* start every segment's miss at once */
	for (int i = 0; i < n; i++) {
		lines[i] = f->seg[i].words + (h & f->seg[i].mask) * MF_LINE_WORDS;
		__builtin_prefetch(lines[i]);
	}
	for (int i = 0; i < n; i++) {
		uint64_t gi = g;
		int j;

		for (j = 0; j < MF_PROBES; j++, gi <<= 9) {
			unsigned b = (unsigned)(gi >> 55);

			if (!(__atomic_load_n(&lines[i][b >> 6], __ATOMIC_RELAXED) &
			      (1ull << (b & 63))))
				break;
		}
		if (j == MF_PROBES)
			return 1;
	}
	return 0;
}

static void mf_grow(struct mfilter *f, struct arena *a)
{
	size_t bytes = f->nseg ? (size_t)(f->seg[f->nseg - 1].mask + 1) * MF_LINE_WORDS * 8 * 4
			       : MF_SEG_MIN;
	char *p;

	if (bytes > MF_SEG_MAX)
		bytes = MF_SEG_MAX;
	/* arena memory is ARENA_ALIGN-aligned; lines are aligned to 64 */
	p = arena_alloc(a, bytes + 64 - ARENA_ALIGN);
	p += (64 - (uintptr_t)p % 64) % 64;
	memset(p, 0, bytes);
	f->seg[f->nseg].words = (uint64_t *)p;
	f->seg[f->nseg].mask = bytes / (MF_LINE_WORDS * 8) - 1;
	__atomic_store_n(&f->nseg, f->nseg + 1, __ATOMIC_RELEASE);
	f->keys = 0;
	f->cap = bytes * 8 / MF_BITS_PER_KEY;
}

/* ---------------------------------------------------------------- memtable */

struct memtable {
	struct arena arena;
	struct skiplist points;     /* KT_PUT and KT_DELETE entries */
	struct skiplist ranges;     /* KT_RANGE_DEL: key = ikey(start), value = end */
	struct rdel_index *rindex;  /* the same tombstones, indexed by range for readers */
	struct mfilter filter;      /* of points' user keys */
	int refs;                   /* atomic */
	/* Written by the writer, read by anyone (atomics). */
	uint64_t entries;
	uint64_t range_dels;
	uint64_t max_seq;
};

static struct memtable *mem_make(struct mem_pool *p, int filter)
{
	struct memtable *m = xcalloc(1, sizeof(*m));

	m->filter.off = !filter;
	m->arena.pool = p;
	m->arena.next_size = ARENA_CHUNK_MIN;
	/* Fixed seeds: the shape of a skiplist is then reproducible from its inserts. */
	skip_init(&m->points, &m->arena, 0x5eed0001);
	skip_init(&m->ranges, &m->arena, 0x5eed0002);
	m->rindex = rdel_index_new();
	m->refs = 1;
	return m;
}

struct memtable *mem_new(void)
{
	return mem_make(NULL, 1);
}

struct memtable *mem_new_pooled(struct mem_pool *p)
{
	return mem_make(p, !p || p->buffer >= MF_MIN_BUFFER);
}

void mem_ref(struct memtable *m)
{
	int old = __atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED);

	assert(old > 0);
	(void)old;
}

void mem_unref(struct memtable *m)
{
	if (!m)
		return;
	/* acq_rel: the thread that frees must see every other holder's last use. */
	int old = __atomic_fetch_sub(&m->refs, 1, __ATOMIC_ACQ_REL);

	assert(old > 0);
	if (old != 1)
		return;
	rdel_index_free(m->rindex);
	arena_free(&m->arena);
	free(m);
}

static void counter_inc(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

void mem_add(struct memtable *m, uint64_t seq, int type, struct slice key, struct slice value)
{
	assert(seq <= SEQ_MAX);
	assert(type == KT_PUT || type == KT_DELETE || type == KT_RANGE_DEL);
	assert(type != KT_RANGE_DEL || slice_cmp(key, value) < 0);

	/*
	 * Raise max_seq before the node is published: a reader that finds the
	 * node (through an acquire load) then also sees a max_seq covering it,
	 * so iter max_seq() is an upper bound for whatever the iterator shows.
	 */
	if (seq > __atomic_load_n(&m->max_seq, __ATOMIC_RELAXED))
		__atomic_store_n(&m->max_seq, seq, __ATOMIC_RELAXED);

	if (type == KT_RANGE_DEL) {
		skip_insert(&m->ranges, &m->arena, key, ikey_pack(seq, type), value);
		rdel_index_add(m->rindex, key, value, seq);
		counter_inc(&m->range_dels);
	} else {
		if (type == KT_DELETE)
			value = slice_make(NULL, 0);
		/* the bits go in before the node: a get that finds the node must pass the filter */
		mf_add(&m->filter, &m->arena, bloom_hash(key));
		skip_insert(&m->points, &m->arena, key, ikey_pack(seq, type), value);
		counter_inc(&m->entries);
	}
}

int mem_may_contain(const struct memtable *m, uint64_t hash)
{
	return mf_may_contain(&m->filter, hash);
}

int mem_get(struct memtable *m, struct slice ukey, uint64_t hash, uint64_t snap_seq, int *type,
	    uint64_t *seq, struct slice *value)
{
	if (!mf_may_contain(&m->filter, hash))
		return 0;
	if (snap_seq > SEQ_MAX)
		snap_seq = SEQ_MAX;   /* "everything": callers may pass UINT64_MAX */

	struct skey t = { ukey, ikey_pack(snap_seq, KT_SEEK) };
	struct mnode *n = skip_find_ge(&m->points, &t, NULL);

	if (!n)
		return 0;
	struct slice k = node_key(n);
	if (!slice_eq(ikey_user(k), ukey))
		return 0;
	*type = ikey_type(k);
	*seq = ikey_seq(k);
	*value = node_value(n);
	assert(*type == KT_PUT || *type == KT_DELETE);
	assert(*seq <= snap_seq);
	return 1;
}

size_t mem_bytes(const struct memtable *m)
{
	return __atomic_load_n(&m->arena.used, __ATOMIC_RELAXED) + rdel_index_bytes(m->rindex);
}

uint64_t mem_entries(const struct memtable *m)
{
	return __atomic_load_n(&m->entries, __ATOMIC_RELAXED);
}

uint64_t mem_range_dels(const struct memtable *m)
{
	return __atomic_load_n(&m->range_dels, __ATOMIC_RELAXED);
}

struct rdel_view *mem_range_view(struct memtable *m)
{
	return mem_range_dels(m) ? rdel_index_view(m->rindex) : NULL;
}

uint64_t mem_max_seq(const struct memtable *m)
{
	return __atomic_load_n(&m->max_seq, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- iterators */

/*
 * An iterator is a node pointer and a reference.  The list has no back links,
 * so prev() searches from the top for the last node before the current key:
 * O(log n) per step instead of O(1), the usual price of a lock-free list.
 */
struct mem_iter {
	struct iter base;
	struct memtable *m;         /* one reference, dropped by destroy */
	const struct skiplist *list;
	struct mnode *node;         /* NULL: not valid */
};

static int mi_valid(struct iter *it)
{
	return ((struct mem_iter *)it)->node != NULL;
}

static void mi_seek_first(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	mi->node = node_next(mi->list->head, 0);
}

static void mi_seek_last(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;
	struct mnode *x = skip_find_last(mi->list);

	mi->node = x == mi->list->head ? NULL : x;
}

static void mi_seek(struct iter *it, struct slice target)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	assert(target.len >= IKEY_TRAILER);
	struct skey t = skey_from_ikey(target);
	mi->node = skip_find_ge(mi->list, &t, NULL);
}

static void mi_next(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	assert(mi->node);
	mi->node = node_next(mi->node, 0);
}

static void mi_prev(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	assert(mi->node);
	struct skey t = skey_from_ikey(node_key(mi->node));
	struct mnode *x = skip_find_lt(mi->list, &t);
	mi->node = x == mi->list->head ? NULL : x;
}

static struct slice mi_key(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	assert(mi->node);
	return node_key(mi->node);
}

static struct slice mi_value(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	assert(mi->node);
	return node_value(mi->node);
}

static int mi_status(struct iter *it)
{
	(void)it;
	return 0;   /* memory cannot be corrupt in a way we could detect */
}

static void mi_destroy(struct iter *it)
{
	struct mem_iter *mi = (struct mem_iter *)it;

	mem_unref(mi->m);
	free(mi);
}

static uint64_t mi_max_seq(struct iter *it)
{
	return mem_max_seq(((struct mem_iter *)it)->m);
}

static const struct iter_ops mem_iter_ops = {
	.valid = mi_valid,
	.seek_first = mi_seek_first,
	.seek_last = mi_seek_last,
	.seek = mi_seek,
	.next = mi_next,
	.prev = mi_prev,
	.key = mi_key,
	.value = mi_value,
	.status = mi_status,
	.destroy = mi_destroy,
	.max_seq = mi_max_seq,
};

static struct iter *iter_over(struct memtable *m, const struct skiplist *list)
{
	struct mem_iter *mi = xcalloc(1, sizeof(*mi));

	mi->base.ops = &mem_iter_ops;
	mem_ref(m);
	mi->m = m;
	mi->list = list;
	mi->node = NULL;
	return &mi->base;
}

struct iter *mem_iter_new(struct memtable *m)
{
	return iter_over(m, &m->points);
}

struct iter *mem_range_iter_new(struct memtable *m)
{
	return iter_over(m, &m->ranges);
}
