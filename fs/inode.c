/*
 * inode.c -- the table of inodes the kernel holds, the empty directories
 * kept in memory, and the thread that sends the kernel invalidations.
 *
 * A node exists from the first reply that hands its ino to the kernel
 * (lookup, create, mkdir, readdirplus) until the kernel forgets it; its
 * number is a hash of (parent ino, name), so it is the same every time the
 * name is looked up (fs.h).  Everything here is under fs.lock, which is never
 * held across a database call or a reply to the kernel.
 *
 * Invalidations (fuse_lowlevel_notify_inval_entry/inode) are queued and sent
 * by a thread of their own: an operation may not send one itself while the
 * kernel holds the locks that the invalidation needs (an unlink holds its
 * directory's lock, which invalidating an entry of that directory takes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"

const char *const fs_attr_names[FS_ATTR_COUNT] = {
	"type", "max_versions", "ttl", "locality_group", "compression",
};

struct fs_notice {
	uint64_t ino;               /* the inode, or the parent of name */
	char *name;                 /* NULL: invalidate the inode */
	size_t len;
	struct fs_notice *next;
};

static uint64_t hash_name(uint64_t parent, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ (parent * 0x9E3779B97F4A7C15ull);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 1099511628211ull;
	}
	/* a final mix, so that near names do not give near numbers */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h ^ (n * 0x9E3779B97F4A7C15ull);
}

static uint64_t hash_cell(const char *table, const void *row, size_t row_len,
			  const char *family, const void *q, size_t qlen)
{
	uint64_t h = 1469598103934665603ull;

	h = hash_bytes(h, table, strlen(table));
	h = hash_bytes(h, row, row_len);
	h = hash_bytes(h, family, strlen(family));
	return hash_bytes(h, q, qlen);
}

static size_t cell_bucket(const struct fs *fs, const struct fs_node *n)
{
	return hash_cell(n->table, n->row, n->row_len, n->family, n->qual, n->qual_len) %
	       fs->nbuckets;
}

static void link_cell(struct fs *fs, struct fs_node *n)
{
	size_t b;

	if (n->kind != FS_CELL)
		return;
	b = cell_bucket(fs, n);
	n->next_cell = fs->by_cell[b];
	fs->by_cell[b] = n;
}

static void unlink_cell(struct fs *fs, struct fs_node *n)
{
	struct fs_node **p;

	if (n->kind != FS_CELL)
		return;
	for (p = &fs->by_cell[cell_bucket(fs, n)]; *p && *p != n; p = &(*p)->next_cell)
		;
	if (*p)
		*p = n->next_cell;
}

static uint64_t ino_of_hash(uint64_t h)
{
	return h < 2 ? h + 2 : h;   /* 0 is no inode, 1 the root */
}

static struct fs_node *find_name(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	struct fs_node *n = fs->by_name[hash_name(parent, name, len) % fs->nbuckets];

	for (; n; n = n->next_name)
		if (n->parent == parent && n->name_len == len && !memcmp(n->name, name, len))
			return n;
	return NULL;
}

static struct fs_node *find_ino(struct fs *fs, uint64_t ino)
{
	struct fs_node *n = fs->by_ino[ino % fs->nbuckets];

	for (; n; n = n->next_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

/*
 * The number for a new name: its hash, or the next free one after it.  A
 * number held by a detached node of the same name (removed, the kernel
 * still holds it) is expected; another name's is a collision, logged.
 */
static uint64_t pick_ino(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	uint64_t ino = ino_of_hash(hash_name(parent, name, len));
	struct fs_node *o;

	while (ino == FUSE_ROOT_ID || (o = find_ino(fs, ino))) {
		if (ino != FUSE_ROOT_ID && !(o->detached && o->parent == parent &&
					    o->name_len == len && !memcmp(o->name, name, len)))
			fuse_log(FUSE_LOG_WARNING, "smolfs: inode number collision for %.*s\n",
				 (int)len, name);
		ino = ino_of_hash(ino + 1);
	}
	return ino;
}

static void grow(struct fs *fs)
{
	size_t nb = fs->nbuckets * 4, i, ob = fs->nbuckets;
	struct fs_node **bn = calloc(nb, sizeof(*bn)), **bi = calloc(nb, sizeof(*bi));
	struct fs_node **bc = calloc(nb, sizeof(*bc));

	if (!bn || !bi || !bc) {   /* keep the old table: slower chains, still correct */
		free(bn);
		free(bi);
		free(bc);
		return;
	}
	for (i = 0; i < fs->nbuckets; i++) {
		struct fs_node *n, *next;

		for (n = fs->by_ino[i]; n; n = next) {
			size_t b;

			next = n->next_ino;
			b = n->ino % nb;
			n->next_ino = bi[b];
			bi[b] = n;
			if (n->kind == FS_CELL) {
				fs->nbuckets = nb;   /* cell_bucket() of the new size */
				b = cell_bucket(fs, n);
				fs->nbuckets = ob;
				n->next_cell = bc[b];
				bc[b] = n;
			}
			if (n->detached)
				continue;
			b = hash_name(n->parent, n->name, n->name_len) % nb;
			n->next_name = bn[b];
			bn[b] = n;
		}
	}
	free(fs->by_name);
	free(fs->by_ino);
	free(fs->by_cell);
	fs->by_name = bn;
	fs->by_ino = bi;
	fs->by_cell = bc;
	fs->nbuckets = nb;
}

int fs_init(struct fs *fs)
{
	pthread_rwlockattr_t ra;

	fs->opens.prev = fs->opens.next = &fs->opens;
	pthread_mutex_init(&fs->lock, NULL);
	/* a stream of commits must not hold a rename off for ever */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->move_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&fs->nlock, NULL);
	pthread_cond_init(&fs->ncond, NULL);
	fs->nbuckets = 1024;
	fs->by_name = calloc(fs->nbuckets, sizeof(*fs->by_name));
	fs->by_ino = calloc(fs->nbuckets, sizeof(*fs->by_ino));
	fs->by_cell = calloc(fs->nbuckets, sizeof(*fs->by_cell));
	if (!fs->by_name || !fs->by_ino || !fs->by_cell)
		return -ENOMEM;
	fs->root.ino = FUSE_ROOT_ID;
	fs->root.kind = FS_ROOT;
	fs->root.name = (char *)"";
	fs->root.nlookup = 2;
	fs->notices_tail = &fs->notices;
	return 0;
}

static void node_free(struct fs_node *n)
{
	size_t i;

	for (i = 0; i < n->ngraves; i++)
		free(n->graves[i]);
	free(n->graves);
	free(n->name);
	free(n->table);
	free(n->family);
	free(n->row);
	free(n->qual);
	free(n);
}

static void unlink_name(struct fs *fs, struct fs_node *n)
{
	struct fs_node **p;

	for (p = &fs->by_name[hash_name(n->parent, n->name, n->name_len) % fs->nbuckets]; *p != n;
	     p = &(*p)->next_name)
		;
	*p = n->next_name;
}

static void link_name(struct fs *fs, struct fs_node *n)
{
	size_t b = hash_name(n->parent, n->name, n->name_len) % fs->nbuckets;

	n->next_name = fs->by_name[b];
	fs->by_name[b] = n;
}

static void unlink_node(struct fs *fs, struct fs_node *n)
{
	struct fs_node **p;

	for (p = &fs->by_ino[n->ino % fs->nbuckets]; *p != n; p = &(*p)->next_ino)
		;
	*p = n->next_ino;
	if (!n->detached)
		unlink_name(fs, n);
	unlink_cell(fs, n);
	fs->nnodes--;
}

void fs_destroy(struct fs *fs)
{
	size_t i;

	for (i = 0; fs->by_ino && i < fs->nbuckets; i++) {
		struct fs_node *n, *next;

		for (n = fs->by_ino[i]; n; n = next) {
			next = n->next_ino;
			node_free(n);
		}
	}
	free(fs->by_ino);
	free(fs->by_name);
	free(fs->by_cell);
	while (fs->empties) {
		struct fs_empty *e = fs->empties;

		fs->empties = e->next;
		free(e->table);
		free(e->row);
		free(e->family);
		free(e);
	}
	pthread_rwlock_destroy(&fs->move_lock);
}

uint64_t fs_child_ino(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	struct fs_node *n;
	uint64_t ino;

	pthread_mutex_lock(&fs->lock);
	n = find_name(fs, parent, name, len);
	ino = n ? n->ino : pick_ino(fs, parent, name, len);
	pthread_mutex_unlock(&fs->lock);
	return ino;
}

struct fs_node *fs_node_get(struct fs *fs, uint64_t ino)
{
	struct fs_node *n;

	if (ino == FUSE_ROOT_ID)
		return &fs->root;
	pthread_mutex_lock(&fs->lock);
	n = find_ino(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static void *dup_bytes(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

static uint64_t generation_counter;

/* The name goes; the node stays for the kernel, which may hold it, until forgotten. */
static void detach(struct fs *fs, struct fs_node *n)
{
	unlink_name(fs, n);
	n->detached = 1;
	n->cached_ts = 0;
}

/*
 * Names whose sealed node was retired under a process's open or truncate
 * (ops.c): the kernel looks the name up again and retries once, and that
 * retry must not meet a sealed node with another text, or it would answer
 * ESTALE to the process.  Until the process comes back to the name (or
 * FS_DUE_SECONDS pass), no node of the name is sealed: the kernel may
 * forget the old node first, and make and drop a node in between (its
 * revalidation of the old inode).  The oldest of FS_WRITERS_DUE gives way.
 * Under fs.lock.
 */
#define FS_DUE_SECONDS 10

static uint64_t now_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec;
}

static int due_live(const struct fs *fs, int i, uint64_t parent, uint64_t h, uint64_t now)
{
	return fs->due[i].parent == parent && fs->due[i].hash == h && parent &&
	       now - fs->due[i].since < FS_DUE_SECONDS;
}

void fs_node_retire(struct fs *fs, struct fs_node *n, pid_t pid)
{
	uint64_t h = hash_name(n->parent, n->name, n->name_len);

	if (!n->detached) {
		detach(fs, n);
		fs_notify_entry(fs, n->parent, n->name, n->name_len);
	}
	if (pid) {
		fs->due[fs->due_next].parent = n->parent;
		fs->due[fs->due_next].hash = h;
		fs->due[fs->due_next].pid = pid;
		fs->due[fs->due_next].since = now_seconds();
		fs->due_next = (fs->due_next + 1) % FS_WRITERS_DUE;
	}
}

int fs_node_due(const struct fs *fs, const struct fs_node *n)
{
	uint64_t h = hash_name(n->parent, n->name, n->name_len), now = now_seconds();
	int i;

	for (i = 0; i < FS_WRITERS_DUE; i++)
		if (due_live(fs, i, n->parent, h, now))
			return 1;
	return 0;
}

void fs_node_came(struct fs *fs, const struct fs_node *n, pid_t pid)
{
	uint64_t h = hash_name(n->parent, n->name, n->name_len), now = now_seconds();
	int i;

	for (i = 0; i < FS_WRITERS_DUE; i++)
		if (due_live(fs, i, n->parent, h, now) && fs->due[i].pid == pid)
			fs->due[i].parent = 0;
}

/*
 * The id of the family a node described by t belongs to: a family's
 * schema directory and a cell stand for one incarnation of the family, so
 * theirs is looked up (0 when there is none: never found stale); a
 * setting's is its schema directory's.  A row's family directory is a name
 * only: what a new family of that name holds shows in it.
 */
static uint64_t family_id_of(struct fs *fs, const struct fs_node *parent,
			     const struct fs_node *t)
{
	uint64_t id;

	switch (t->kind) {
	case FS_FAMDEF:
	case FS_CELL:
	case FS_TEMP:
		return tbl_family_id(fs->db, t->table, t->family, &id) == 0 ? id : 0;
	case FS_FAMATTR:
		return parent ? parent->family_id : 0;
	default:
		return 0;
	}
}

/*
 * The ids of what a child described by t stands for: a table's is looked
 * up, the rest have their parent's, so that everything under a dropped
 * table is stale with it.
 */
static void child_ids(struct fs *fs, const struct fs_node *parent, const struct fs_node *t,
		      uint64_t *table_id, uint64_t *family_id)
{
	*table_id = parent->table_id;
	if (t->kind == FS_TABLE && tbl_table_id(fs->db, t->table, table_id) < 0)
		*table_id = 0;
	*family_id = family_id_of(fs, parent, t);
}

struct fs_node *fs_node_ref_unborn(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->lock);
	n = find_name(fs, parent, name, len);
	if (n && n->kind == FS_CELL && (n->dirty_open || n->pending))
		n->nlookup++;
	else
		n = NULL;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

struct fs_node *fs_node_ref(struct fs *fs, struct fs_node *parent, const char *name, size_t len,
			    const struct fs_node *t)
{
	uint64_t table_id = 0, family_id = 0;
	struct fs_node *n;
	size_t b;

	if (t->table)
		child_ids(fs, parent, t, &table_id, &family_id);
	pthread_mutex_lock(&fs->lock);
	n = find_name(fs, parent->ino, name, len);
	if (n && (n->table_id != table_id || n->family_id != family_id) &&
	    (table_id > n->table_id || (table_id == n->table_id && family_id > n->family_id))) {
		detach(fs, n);   /* its table or family was dropped and made again */
		n = NULL;
	}
	/*
	 * Ids only grow (a table's, and a family's within it): older ones than
	 * n's were read before a drop and re-creation that n was made after,
	 * and n is the name's node; this lookup gets it rather than pushing it
	 * out (its users would get ESTALE).
	 */
	if (n) {
		n->nlookup++;
		pthread_mutex_unlock(&fs->lock);
		return n;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		goto nomem;
	n->kind = t->kind;
	n->parent = parent->ino;
	n->name_len = len;
	n->name = malloc(len + 1);
	n->table = t->table ? strdup(t->table) : NULL;
	n->family = t->family ? strdup(t->family) : NULL;
	n->row = t->row ? dup_bytes(t->row, t->row_len) : NULL;
	n->row_len = t->row_len;
	n->qual = t->qual ? dup_bytes(t->qual, t->qual_len) : NULL;
	n->qual_len = t->qual_len;
	n->ts = t->ts;
	n->attr = t->attr;
	n->table_id = table_id;
	n->family_id = family_id;
	if (!n->name || (t->table && !n->table) || (t->family && !n->family) ||
	    (t->row && !n->row) || (t->qual && !n->qual)) {
		node_free(n);
		goto nomem;
	}
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->ino = pick_ino(fs, parent->ino, name, len);
	n->generation = ++generation_counter;
	n->nlookup = 1;
	b = n->ino % fs->nbuckets;
	n->next_ino = fs->by_ino[b];
	fs->by_ino[b] = n;
	b = hash_name(n->parent, name, len) % fs->nbuckets;
	n->next_name = fs->by_name[b];
	fs->by_name[b] = n;
	link_cell(fs, n);
	if (++fs->nnodes > fs->nbuckets * 2)
		grow(fs);
	pthread_mutex_unlock(&fs->lock);
	return n;
nomem:
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

static void forget_locked(struct fs *fs, struct fs_node *n, uint64_t count)
{
	if (n == &fs->root)
		return;
	if (count > n->nlookup) {
		fuse_log(FUSE_LOG_ERR, "smolfs: the kernel forgot %llu references of %s, it held %llu\n",
			 (unsigned long long)count, n->name, (unsigned long long)n->nlookup);
		count = n->nlookup;
	}
	n->nlookup -= count;
	if (n->nlookup == 0) {
		unlink_node(fs, n);
		node_free(n);
	}
}

void fs_node_unref(struct fs *fs, struct fs_node *n, uint64_t count)
{
	pthread_mutex_lock(&fs->lock);
	forget_locked(fs, n, count);
	pthread_mutex_unlock(&fs->lock);
}

void fs_forget(struct fs *fs, uint64_t ino, uint64_t count)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->lock);
	n = find_ino(fs, ino);
	if (n)
		forget_locked(fs, n, count);
	else
		fuse_log(FUSE_LOG_ERR, "smolfs: forget of unknown inode %llu\n",
			 (unsigned long long)ino);
	pthread_mutex_unlock(&fs->lock);
}

/*
 * Give n a new name, cell key and (a cell) family id; the old strings stay
 * readable until n is freed.  Under fs.lock, which node_stale (ops.c) takes
 * to read the family name and id as one pair.
 */
static int rekey(struct fs *fs, struct fs_node *n, uint64_t family_id, uint64_t parent,
		 const char *name, const struct fs_node *t)
{
	void **g = realloc(n->graves, (n->ngraves + 3) * sizeof(*g));
	char *nm = strdup(name), *fam = t->family ? strdup(t->family) : NULL;
	void *q = t->qual ? dup_bytes(t->qual, t->qual_len) : NULL;

	if (g)
		n->graves = g;
	if (!g || !nm || (t->family && !fam) || (t->qual && !q)) {
		free(nm);
		free(fam);
		free(q);
		return -ENOMEM;
	}
	unlink_cell(fs, n);
	g[n->ngraves++] = n->name;
	g[n->ngraves++] = n->family;
	g[n->ngraves++] = n->qual;
	n->parent = parent;
	n->name = nm;
	n->name_len = strlen(nm);
	n->family = fam;
	n->qual = q;
	n->qual_len = t->qual_len;
	n->ts = t->ts;
	n->attr = t->attr;
	n->kind = t->kind;   /* a temporary file becomes a cell */
	n->cached_ts = 0;
	/*
	 * What the kernel holds of it was given under the old name, and for a
	 * temporary file not noted at all (ops.c, attrs_shown): its sealing
	 * open must drop it.
	 */
	n->shown_mixed = 1;
	if (t->kind == FS_CELL || t->kind == FS_TEMP)   /* a setting stays in its family */
		n->family_id = family_id;
	link_cell(fs, n);
	return 0;
}

void fs_node_renamed(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
		     const char *newname, const struct fs_node *src, const struct fs_node *dst,
		     int exchange)
{
	struct fs_node *s, *d;
	uint64_t sfam, dfam;
	int rc = 0;

	/* a cell moved to another family is of that family's incarnation */
	sfam = family_id_of(fs, NULL, src);
	dfam = family_id_of(fs, NULL, dst);
	pthread_mutex_lock(&fs->lock);
	s = find_name(fs, parent, name, strlen(name));
	d = find_name(fs, newparent, newname, strlen(newname));
	if (s)
		unlink_name(fs, s);
	if (d) {
		unlink_name(fs, d);
		d->cached_ts = 0;
		if (exchange) {
			rc = rekey(fs, d, sfam, parent, name, src);
			if (rc == 0)
				link_name(fs, d);
			else
				d->detached = 1;
		} else {
			d->detached = 1;
		}
	}
	if (s) {
		rc = rekey(fs, s, dfam, newparent, newname, dst);
		if (rc == 0)
			link_name(fs, s);
		else
			s->detached = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)   /* the kernel's inode answers ENOENT then, not another cell */
		fuse_log(FUSE_LOG_ERR, "smolfs: out of memory renaming %s to %s\n", name, newname);
}

void fs_name_removed(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	struct fs_node *n;

	pthread_mutex_lock(&fs->lock);
	n = find_name(fs, parent, name, len);
	if (n)
		detach(fs, n);
	pthread_mutex_unlock(&fs->lock);
}

static int node_matches(const struct fs_node *n, enum fs_kind kind, const char *table,
			const char *family, const void *row, size_t row_len, const void *q,
			size_t qlen)
{
	if (n->kind != kind || !n->table || strcmp(n->table, table))
		return 0;
	if (family && (!n->family || strcmp(n->family, family)))
		return 0;
	if (row && (!n->row || n->row_len != row_len || memcmp(n->row, row, row_len)))
		return 0;
	if (q && (!n->qual || n->qual_len != qlen || memcmp(n->qual, q, qlen)))
		return 0;
	return 1;
}

void fs_each_node(struct fs *fs, enum fs_kind kind, const char *table, const char *family,
		  const void *row, size_t row_len, const void *q, size_t qlen,
		  void (*fn)(struct fs *fs, struct fs_node *n, void *arg), void *arg)
{
	size_t i;

	pthread_mutex_lock(&fs->lock);
	if (kind == FS_CELL && family && row && q) {   /* one cell's names: its chain */
		struct fs_node *n, *next;

		for (n = fs->by_cell[hash_cell(table, row, row_len, family, q, qlen) %
				     fs->nbuckets]; n; n = next) {
			next = n->next_cell;
			if (node_matches(n, kind, table, family, row, row_len, q, qlen))
				fn(fs, n, arg);
		}
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	for (i = 0; i < fs->nbuckets; i++) {
		struct fs_node *n;

		for (n = fs->by_ino[i]; n; n = n->next_ino)
			if (node_matches(n, kind, table, family, row, row_len, q, qlen))
				fn(fs, n, arg);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* ------------------------------------------------------------ empty directories */

static int empty_is(const struct fs_empty *e, const char *table, const void *row, size_t row_len,
		    const char *family)
{
	if (strcmp(e->table, table) || e->row_len != row_len || memcmp(e->row, row, row_len))
		return 0;
	if (!family)
		return e->family == NULL;
	return e->family && !strcmp(e->family, family);
}

int fs_empty_add(struct fs *fs, const char *table, const void *row, size_t row_len,
		 const char *family)
{
	struct fs_empty *e;

	pthread_mutex_lock(&fs->lock);
	for (e = fs->empties; e; e = e->next)
		if (empty_is(e, table, row, row_len, family)) {
			pthread_mutex_unlock(&fs->lock);
			return 0;
		}
	e = calloc(1, sizeof(*e));
	if (e) {
		e->table = strdup(table);
		e->row = dup_bytes(row, row_len);
		e->row_len = row_len;
		e->family = family ? strdup(family) : NULL;
	}
	if (!e || !e->table || !e->row || (family && !e->family)) {
		if (e) {
			free(e->table);
			free(e->row);
			free(e->family);
			free(e);
		}
		pthread_mutex_unlock(&fs->lock);
		return -ENOMEM;
	}
	e->next = fs->empties;
	fs->empties = e;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int fs_empty_has(struct fs *fs, const char *table, const void *row, size_t row_len,
		 const char *family)
{
	struct fs_empty *e;
	int found = 0;

	pthread_mutex_lock(&fs->lock);
	for (e = fs->empties; e && !found; e = e->next)
		if (family ? empty_is(e, table, row, row_len, family)
			   : !strcmp(e->table, table) && e->row_len == row_len &&
				     !memcmp(e->row, row, row_len))
			found = 1;
	pthread_mutex_unlock(&fs->lock);
	return found;
}

static void remove_where(struct fs *fs, int (*match)(const struct fs_empty *, const void *),
			 const void *arg, int *removed)
{
	struct fs_empty **p = &fs->empties;

	while (*p) {
		struct fs_empty *e = *p;

		if (match(e, arg)) {
			*p = e->next;
			free(e->table);
			free(e->row);
			free(e->family);
			free(e);
			(*removed)++;
		} else {
			p = &e->next;
		}
	}
}

struct empty_key {
	const char *table;
	const void *row;
	size_t row_len;
	const char *family;
};

static int match_row_or_family(const struct fs_empty *e, const void *arg)
{
	const struct empty_key *k = arg;

	if (strcmp(e->table, k->table) || e->row_len != k->row_len ||
	    memcmp(e->row, k->row, k->row_len))
		return 0;
	return !k->family || (e->family && !strcmp(e->family, k->family));
}

int fs_empty_remove(struct fs *fs, const char *table, const void *row, size_t row_len,
		    const char *family)
{
	struct empty_key k = { table, row, row_len, family };
	int removed = 0;

	pthread_mutex_lock(&fs->lock);
	remove_where(fs, match_row_or_family, &k, &removed);
	pthread_mutex_unlock(&fs->lock);
	return removed > 0;
}

static int match_drop(const struct fs_empty *e, const void *arg)
{
	const struct empty_key *k = arg;

	if (strcmp(e->table, k->table))
		return 0;
	return !k->family || (e->family && !strcmp(e->family, k->family));
}

void fs_empty_drop(struct fs *fs, const char *table, const char *family)
{
	struct empty_key k = { table, NULL, 0, family };
	int removed = 0;

	pthread_mutex_lock(&fs->lock);
	remove_where(fs, match_drop, &k, &removed);
	pthread_mutex_unlock(&fs->lock);
}

struct keyref {
	const void *p;
	size_t n;
};

static int cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = n ? memcmp(x->p, y->p, n) : 0;

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

int fs_empty_rows(struct fs *fs, const char *table, void ***keys, size_t **lens, size_t *n)
{
	struct fs_empty *e;
	struct keyref *refs = NULL;
	size_t count = 0, cap = 0, i, out = 0;
	int rc = 0;

	*keys = NULL;
	*lens = NULL;
	*n = 0;
	pthread_mutex_lock(&fs->lock);
	for (e = fs->empties; e; e = e->next) {
		if (strcmp(e->table, table))
			continue;
		if (count == cap) {
			struct keyref *r = realloc(refs, (cap = cap ? cap * 2 : 8) * sizeof(*r));

			if (!r) {
				rc = -ENOMEM;
				goto out;
			}
			refs = r;
		}
		refs[count].p = dup_bytes(e->row, e->row_len);
		refs[count].n = e->row_len;
		if (!refs[count].p) {
			rc = -ENOMEM;
			goto out;
		}
		count++;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0 && count) {
		*keys = malloc(count * sizeof(**keys));
		*lens = malloc(count * sizeof(**lens));
		if (!*keys || !*lens)
			rc = -ENOMEM;
	}
	if (rc < 0) {
		for (i = 0; i < count; i++)
			free((void *)refs[i].p);
		free(refs);
		free(*keys);
		free(*lens);
		*keys = NULL;
		*lens = NULL;
		return rc;
	}
	if (count)
		qsort(refs, count, sizeof(*refs), cmp_keyref);
	for (i = 0; i < count; i++) {
		if (out && cmp_keyref(&refs[i], &refs[out - 1]) == 0) {   /* a row and its family */
			free((void *)refs[i].p);
			continue;
		}
		refs[out++] = refs[i];
	}
	for (i = 0; i < out; i++) {
		(*keys)[i] = (void *)refs[i].p;
		(*lens)[i] = refs[i].n;
	}
	*n = out;
	free(refs);
	return 0;
}

int fs_empty_families(struct fs *fs, const char *table, const void *row, size_t row_len,
		      char ***names, size_t *n)
{
	struct fs_empty *e;
	size_t count = 0;
	char **v = NULL;

	pthread_mutex_lock(&fs->lock);
	for (e = fs->empties; e; e = e->next) {
		char **nv;

		if (!e->family || strcmp(e->table, table) || e->row_len != row_len ||
		    memcmp(e->row, row, row_len))
			continue;
		nv = realloc(v, (count + 1) * sizeof(*v));
		if (!nv || !(nv[count] = strdup(e->family))) {
			v = nv ? nv : v;
			pthread_mutex_unlock(&fs->lock);
			tbl_free_names(v, count);
			return -ENOMEM;
		}
		v = nv;
		count++;
	}
	pthread_mutex_unlock(&fs->lock);
	*names = v;
	*n = count;
	return 0;
}

/* ------------------------------------------------------------ invalidations */

static void enqueue(struct fs *fs, uint64_t ino, const char *name, size_t len)
{
	struct fs_notice *x = calloc(1, sizeof(*x));

	/* libfuse sends the name with its NUL */
	if (x && name && (x->name = malloc(len + 1))) {
		memcpy(x->name, name, len);
		x->name[len] = '\0';
	}
	if (!x || (name && !x->name)) {
		/* the kernel keeps a stale entry until its timeout: say so */
		fuse_log(FUSE_LOG_ERR, "smolfs: out of memory queueing an invalidation\n");
		free(x);
		return;
	}
	x->ino = ino;
	x->len = len;
	if (!name)
		__atomic_add_fetch(&fs->inode_notices, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fs->nlock);
	*fs->notices_tail = x;
	fs->notices_tail = &x->next;
	pthread_cond_signal(&fs->ncond);
	pthread_mutex_unlock(&fs->nlock);
}

void fs_notify_entry(struct fs *fs, uint64_t parent, const char *name, size_t len)
{
	enqueue(fs, parent, name, len);
}

void fs_notify_inode(struct fs *fs, uint64_t ino)
{
	enqueue(fs, ino, NULL, 0);
}

static void *notifier(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->nlock);
	for (;;) {
		struct fs_notice *x;
		int rc;

		while (!fs->notices && !fs->nstop)
			pthread_cond_wait(&fs->ncond, &fs->nlock);
		if (!fs->notices)
			break;
		x = fs->notices;
		fs->notices = x->next;
		if (!fs->notices)
			fs->notices_tail = &fs->notices;
		pthread_mutex_unlock(&fs->nlock);
		if (x->name)
			rc = fuse_lowlevel_notify_inval_entry(fs->se, x->ino, x->name, x->len);
		else
			rc = fuse_lowlevel_notify_inval_inode(fs->se, x->ino, 0, 0);
		/* ENOENT: the kernel does not hold it, nothing to do */
		if (rc < 0 && rc != -ENOENT && !fs->nstop)
			fuse_log(FUSE_LOG_WARNING, "smolfs: invalidation of inode %llu%s%.*s: %s\n",
				 (unsigned long long)x->ino, x->name ? " entry " : "",
				 x->name ? (int)x->len : 0, x->name ? x->name : "", strerror(-rc));
		if (!x->name)   /* sent: its attribute version is the kernel's now */
			__atomic_sub_fetch(&fs->inode_notices, 1, __ATOMIC_SEQ_CST);
		free(x->name);
		free(x);
		pthread_mutex_lock(&fs->nlock);
	}
	pthread_mutex_unlock(&fs->nlock);
	return NULL;
}

int fs_notify_start(struct fs *fs)
{
	int rc = pthread_create(&fs->nthread, NULL, notifier, fs);

	if (rc)
		return -rc;
	fs->nthread_started = 1;
	return 0;
}

void fs_notify_stop(struct fs *fs)
{
	if (!fs->nthread_started)
		return;
	pthread_mutex_lock(&fs->nlock);
	fs->nstop = 1;
	pthread_cond_signal(&fs->ncond);
	pthread_mutex_unlock(&fs->nlock);
	pthread_join(fs->nthread, NULL);
	fs->nthread_started = 0;
	/* what is still queued would go to an unmounted session */
	while (fs->notices) {
		struct fs_notice *x = fs->notices;

		fs->notices = x->next;
		free(x->name);
		free(x);
	}
	fs->notices_tail = &fs->notices;
}
