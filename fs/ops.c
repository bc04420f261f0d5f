/*
 * ops.c -- the filesystem operations: the tree of smolfs(1) mapped onto the
 * table API.  Every request resolves its inode to a node (fs.h) that says
 * what it stands for (a table, a row, a cell version...), does its work
 * with table.h calls, and replies once: a reply's own failure (the request
 * was interrupted) is logged and undoes what the reply would have handed to
 * the kernel.
 *
 * Files are cells and family settings.  An open handle holds the file's
 * text (what cat prints); writes change the handle's copy, and flush (the
 * close() of that descriptor) commits it as one row mutation, parsed by the
 * cell's type.  Reads of a handle see its own writes.  A commit invalidates
 * what the kernel caches of the cell under every name that shows it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cell.h"
#include "fs.h"
#include "name.h"

#define XATTR_TYPE "user.smolfs.type"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

extern const char *fs_datadir;

static struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const char *node_label(const struct fs_node *n)
{
	return n && n->name && n->name[0] ? n->name : "/";
}

/*
 * The one error reply.  Corruption becomes EIO with a log line; other
 * failures of the engine (I/O, space, memory) are logged with the engine's
 * sentence; expected answers (ENOENT, EEXIST...) are not.
 */
static void reply_err(fuse_req_t req, int rc, const char *op, const struct fs_node *n)
{
	int e = -rc, r;

	if (rc == -EUCLEAN) {
		fuse_log(FUSE_LOG_ERR, "smolfs: %s %s: damaged data, answered EIO: %s\n", op,
			 node_label(n), kv_strerror(rc));
		e = EIO;
	} else if (rc == -EIO || rc == -ENOSPC || rc == -ENOMEM || rc == -EMFILE ||
		   rc == -ENFILE || rc == -EDQUOT || rc == -E2BIG) {
		fuse_log(FUSE_LOG_ERR, "smolfs: %s %s: %s\n", op, node_label(n), kv_strerror(rc));
		if (rc == -E2BIG)
			e = EFBIG;
	} else if (e <= 0 || e >= 4096) {
		fuse_log(FUSE_LOG_ERR, "smolfs: %s %s: unexpected result %d\n", op, node_label(n),
			 rc);
		e = EIO;
	}
	r = fuse_reply_err(req, e);
	if (r < 0 && r != -ENOENT)
		fuse_log(FUSE_LOG_DEBUG, "smolfs: %s: reply failed: %s\n", op, strerror(-r));
}

static void reply_failed(const char *op, int r)
{
	if (r < 0)
		fuse_log(FUSE_LOG_DEBUG, "smolfs: %s: the reply did not reach the kernel: %s\n", op,
			 strerror(-r));
}

/* ------------------------------------------------------------ reading the database */

/* What a file of the tree shows: a cell version, or a family setting. */
struct cellinfo {
	uint64_t ts;
	enum cell_type type;
	size_t text_size;
};

/*
 * Read one version of a cell (ts 0: the newest visible one); text (may be
 * NULL) gets its rendered text.  -ENOENT if there is none.
 */
static int cell_get(struct fs *fs, const char *table, const void *row, size_t row_len,
		    const char *family, const void *q, size_t qlen, uint64_t ts,
		    struct cellinfo *ci, struct buf *text)
{
	struct tbl_cell_stat st;
	uint64_t want = ts ? ts : TBL_TS_NEWEST;
	void *data = NULL;
	size_t len = 0;
	int rc;

	if (text) {
		rc = tbl_get_cell(fs->db, NULL, table, row, row_len, family, q, qlen, want, &st,
				  &data, &len);
		if (rc == 0) {   /* hand over the malloc'd text (slice.h: ours to free) */
			free(text->data);
			text->data = data;
			text->len = text->cap = len;
		}
	} else {
		rc = tbl_stat_cell(fs->db, NULL, table, row, row_len, family, q, qlen, want, &st);
	}
	if (rc == -EINVAL)
		rc = -ENOENT;   /* a key the table layer refuses names no cell */
	if (rc < 0)
		return rc;
	ci->ts = st.ts;
	ci->type = st.type;
	ci->text_size = st.text_size;
	return 0;
}

/* 0 if the row has a visible cell (of family, if not NULL), -ENOENT if not. */
static int row_has(struct fs *fs, const char *table, const void *row, size_t row_len,
		   const char *family)
{
	int rc = family ? tbl_row_has_family(fs->db, table, row, row_len, family)
			: tbl_row_exists(fs->db, table, row, row_len);

	return rc == -EINVAL ? -ENOENT : rc;
}

/* 1 if the table has a visible row, 0 if not, or an error. */
static int table_has_rows(struct fs *fs, const char *table)
{
	struct tbl_read r;
	struct tbl_scan *s = NULL;
	const struct tbl_row *row;
	int rc;

	memset(&r, 0, sizeof(r));
	r.row_keys_only = 1;
	r.row_limit = 1;
	rc = tbl_scan_new(fs->db, table, &r, &s);
	if (rc < 0)
		return rc;
	rc = tbl_scan_next(s, &row);
	tbl_scan_free(s);
	return rc;
}

/* The text of a family setting, as cat shows it. */
static int famattr_text(struct fs *fs, const char *table, const char *family, int attr,
			char *out, size_t cap, size_t *len)
{
	struct tbl_family_settings s;
	int rc = tbl_get_family(fs->db, table, family, &s), n = 0;

	if (rc < 0)
		return rc;
	switch (attr) {
	case FS_ATTR_TYPE:
		n = snprintf(out, cap, "%s\n", cell_type_name(s.type));
		break;
	case FS_ATTR_MAX_VERSIONS:
		n = snprintf(out, cap, "%u\n", (unsigned)s.max_versions);
		break;
	case FS_ATTR_TTL:
		n = snprintf(out, cap, "%llu\n", (unsigned long long)s.ttl);
		break;
	case FS_ATTR_GROUP:
		n = snprintf(out, cap, "%s\n", s.locality_group);
		break;
	case FS_ATTR_COMPRESSION:
		n = s.compression ? snprintf(out, cap, "%d\n", s.compression)
				  : snprintf(out, cap, "none\n");
		break;
	default:
		return -EINVAL;
	}
	if (n < 0 || (size_t)n >= cap)
		return -EINVAL;
	*len = (size_t)n;
	return 0;
}

/* Strip surrounding whitespace of a setting's text into out (cap bytes). */
static int trimmed(const char *p, size_t n, char *out, size_t cap)
{
	while (n && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (n == 0 || n >= cap || memchr(p, '\0', n))
		return -EINVAL;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x > max)
		return -EINVAL;
	*v = x;
	return 0;
}

/* Change one family setting from the text written to its file: -EINVAL if it does not parse. */
static int famattr_set(struct fs *fs, const char *table, const char *family, int attr,
		       const char *text, size_t len)
{
	struct tbl_family_settings s;
	char v[TBL_MAX_FAMILY_NAME + 2];
	uint64_t x;
	int rc = trimmed(text, len, v, sizeof(v));

	if (rc < 0)
		return rc;
	rc = tbl_get_family(fs->db, table, family, &s);
	if (rc < 0)
		return rc;
	switch (attr) {
	case FS_ATTR_TYPE: {
		enum cell_type t;

		rc = cell_type_parse(slice_str(v), &t);
		if (rc < 0)
			return rc;
		s.type = t;
		break;
	}
	case FS_ATTR_MAX_VERSIONS:
		rc = parse_u64(v, UINT32_MAX, &x);
		if (rc < 0)
			return rc;
		s.max_versions = (uint32_t)x;
		break;
	case FS_ATTR_TTL:
		rc = parse_u64(v, UINT64_MAX / 1000000, &x);
		if (rc < 0)
			return rc;
		s.ttl = x;
		break;
	case FS_ATTR_GROUP:
		memcpy(s.locality_group, v, strlen(v) + 1);
		break;
	case FS_ATTR_COMPRESSION:
		if (!strcmp(v, "none")) {
			s.compression = 0;
		} else {
			rc = parse_u64(v, 22, &x);
			if (rc < 0)
				return rc;
			s.compression = (int)x;
		}
		break;
	default:
		return -EINVAL;
	}
	return tbl_alter_family(fs->db, table, family, &s);
}

/* ------------------------------------------------------------ files in .families/<fam>/ */

/*
 * Tools restoring a schema write a settings file through a temporary one
 * (rsync: ".type.XXXXXX", renamed over "type") or remove it first (tar:
 * unlink, then create).  So a settings directory holds, in the daemon's
 * memory, the temporary files made in it (until renamed over a setting or
 * removed), and the settings unlinked (hidden until created again; the
 * setting itself is unchanged).  A remount forgets both.
 */
struct fs_scratch {
	char *table, *family, *name;
	char *data;
	size_t len;
	int hidden;                 /* a setting's name: 1 unlinked, 2 hidden from pid only */
	pid_t pid;                  /* hidden == 2: the process that made the family */
	time_t until;               /* hidden == 2: for a few seconds */
	uint64_t stamp;             /* a temporary cell file: utimensat's time, or 0 */
	enum cell_type type;        /* and its user.smolfs.type, or CELL_INVALID */
	struct fs_scratch *next;
};

/*
 * The same store holds the temporary files of a row's family directory:
 * the names beginning with "." there (a qualifier's leading dot is always
 * escaped, %2E): rsync's ".q.XXXXXX", vim's ".q.swp", emacs' ".#q".  They
 * live in memory until renamed to a cell's name, which commits their text,
 * or removed.  Their key's "family" is "<family>/<row in hex>" ("/" is in
 * no family name).  Malloc'd; NULL on ENOMEM.
 */
static char *temp_family(const struct fs_node *n)
{
	static const char hex[] = "0123456789abcdef";
	size_t fl = strlen(n->family), i;
	char *k = malloc(fl + 2 + 2 * n->row_len);

	if (!k)
		return NULL;
	memcpy(k, n->family, fl);
	k[fl] = '/';
	for (i = 0; i < n->row_len; i++) {
		k[fl + 1 + 2 * i] = hex[((const unsigned char *)n->row)[i] >> 4];
		k[fl + 2 + 2 * i] = hex[((const unsigned char *)n->row)[i] & 15];
	}
	k[fl + 1 + 2 * n->row_len] = '\0';
	return k;
}

/* The process of the request this thread serves (lookup, create), for hidden == 2. */
static __thread pid_t request_pid;

/*
 * The daemon's memory for users' text.  Every open file holds its text in
 * the daemon (a writer's until the commit, a reader's from the open: see
 * "Readers and the kernel's cache"), and a temporary file lives in memory
 * until it is renamed or removed; each may be as large as the value limit.
 * Without a bound, a user who can write to the mount could make the daemon
 * hold one limit-sized value per descriptor or per temporary file, as many
 * as they like, until the machine runs out of memory.  So those bytes are
 * charged against cfg.buffer_limit (smolfs(1): buffer_limit) before they
 * are held, or, for a value read from the engine, once its size is known,
 * and given back when freed; a charge that would pass the limit is -ENOMEM
 * (write, truncate, an open for reading, a temporary file's close).  Other
 * memory (the memtables, the block cache, the kernel's requests) has
 * bounds of its own.
 */
static size_t buffer_limit(const struct fs *fs)
{
	size_t m = fs->cfg.max_value_size ? fs->cfg.max_value_size : TBL_DEFAULT_MAX_VALUE;

	if (fs->cfg.buffer_limit)
		return fs->cfg.buffer_limit;
	return 4 * (m + 1) > FS_BUFFER_LIMIT ? 4 * (m + 1) : FS_BUFFER_LIMIT;
}

static int mem_charge(struct fs *fs, size_t n)
{
	size_t now = __atomic_add_fetch(&fs->buffered, n, __ATOMIC_RELAXED);

	if (now > buffer_limit(fs) || now < n) {
		__atomic_sub_fetch(&fs->buffered, n, __ATOMIC_RELAXED);
		return -ENOMEM;
	}
	return 0;
}

static void mem_uncharge(struct fs *fs, size_t n)
{
	__atomic_sub_fetch(&fs->buffered, n, __ATOMIC_RELAXED);
}

static int hidden_from_caller(const struct fs_scratch *x)
{
	if (x->hidden == 1)
		return 1;
	return x->hidden == 2 && x->pid == request_pid && time(NULL) <= x->until;
}

static struct fs_scratch *scratch_find(struct fs *fs, const char *table, const char *family,
				       const char *name)
{
	struct fs_scratch *x;

	for (x = fs->scratch; x; x = x->next)
		if (!strcmp(x->table, table) && !strcmp(x->family, family) &&
		    !strcmp(x->name, name))
			return x;
	return NULL;
}

/* 1 if (table, family, name) is a temporary file (or, hidden != 0, a hidden setting). */
static int scratch_has(struct fs *fs, const char *table, const char *family, const char *name,
		       int hidden, size_t *len)
{
	struct fs_scratch *x;
	int has;

	pthread_mutex_lock(&fs->lock);
	x = scratch_find(fs, table, family, name);
	has = x && (hidden ? hidden_from_caller(x) : !x->hidden);
	if (has && len)
		*len = x->len;
	pthread_mutex_unlock(&fs->lock);
	return has;
}

/* Add or replace the entry; data may be NULL (empty). */
static int scratch_put(struct fs *fs, const char *table, const char *family, const char *name,
		       const char *data, size_t len, int hidden)
{
	struct fs_scratch *x;
	char *copy;

	if (mem_charge(fs, len) < 0)
		return -ENOMEM;
	copy = malloc(len ? len : 1);
	if (!copy) {
		mem_uncharge(fs, len);
		return -ENOMEM;
	}
	if (len)
		memcpy(copy, data, len);
	pthread_mutex_lock(&fs->lock);
	x = scratch_find(fs, table, family, name);
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (x && (!(x->table = strdup(table)) || !(x->family = strdup(family)) ||
			  !(x->name = strdup(name)))) {
			free(x->table);
			free(x->family);
			free(x->name);
			free(x);
			x = NULL;
		}
		if (!x) {
			pthread_mutex_unlock(&fs->lock);
			free(copy);
			mem_uncharge(fs, len);
			return -ENOMEM;
		}
		x->next = fs->scratch;
		fs->scratch = x;
	}
	mem_uncharge(fs, x->len);
	free(x->data);
	x->data = copy;
	x->len = len;
	x->hidden = hidden;
	x->pid = request_pid;
	x->until = time(NULL) + 10;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* Copy a temporary file's text out (malloc'd into *data). */
static int scratch_get(struct fs *fs, const char *table, const char *family, const char *name,
		       char **data, size_t *len)
{
	struct fs_scratch *x;
	int rc = -ENOENT;

	pthread_mutex_lock(&fs->lock);
	x = scratch_find(fs, table, family, name);
	if (x && !x->hidden) {
		*data = malloc(x->len ? x->len : 1);
		rc = *data ? 0 : -ENOMEM;
		if (rc == 0) {
			if (x->len)
				memcpy(*data, x->data, x->len);
			*len = x->len;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* A temporary cell file's size, time and type: 0 or -ENOENT. */
static int temp_stat(struct fs *fs, const struct fs_node *n, const char *name, size_t *len,
		     uint64_t *stamp, enum cell_type *type)
{
	struct fs_scratch *x;
	char *fam = temp_family(n);
	int rc = -ENOENT;

	if (!fam)
		return -ENOMEM;
	pthread_mutex_lock(&fs->lock);
	x = scratch_find(fs, n->table, fam, name);
	if (x && !x->hidden) {
		if (len)
			*len = x->len;
		if (stamp)
			*stamp = x->stamp;
		if (type)
			*type = x->type;
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	free(fam);
	return rc;
}

/* Set a temporary cell file's time (stamp != 0) or type (type != CELL_INVALID). */
static int temp_meta(struct fs *fs, const struct fs_node *n, const char *name, uint64_t stamp,
		     enum cell_type type)
{
	struct fs_scratch *x;
	char *fam = temp_family(n);
	int rc = -ENOENT;

	if (!fam)
		return -ENOMEM;
	pthread_mutex_lock(&fs->lock);
	x = scratch_find(fs, n->table, fam, name);
	if (x && !x->hidden) {
		if (stamp)
			x->stamp = stamp;
		if (type != CELL_INVALID)
			x->type = type;
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	free(fam);
	return rc;
}

/*
 * temp_meta for an open temporary file, by its node's name: a rename of it
 * meanwhile comes before or after (fs.move_lock), so the setting never goes
 * to the name the file has just left.
 */
static int temp_meta_node(struct fs *fs, const struct fs_node *n, uint64_t stamp,
			  enum cell_type type)
{
	int rc;

	pthread_rwlock_rdlock(&fs->move_lock);
	rc = temp_meta(fs, n, n->name, stamp, type);
	pthread_rwlock_unlock(&fs->move_lock);
	return rc;
}

static int temp_put(struct fs *fs, const struct fs_node *n, const char *name, const char *data,
		    size_t len)
{
	char *fam = temp_family(n);
	int rc = fam ? scratch_put(fs, n->table, fam, name, data, len, 0) : -ENOMEM;

	free(fam);
	return rc;
}

static int temp_get(struct fs *fs, const struct fs_node *n, const char *name, char **data,
		    size_t *len)
{
	char *fam = temp_family(n);
	int rc = fam ? scratch_get(fs, n->table, fam, name, data, len) : -ENOMEM;

	free(fam);
	return rc;
}

static void scratch_remove(struct fs *fs, const char *table, const char *family,
			   const char *name);

static void temp_remove(struct fs *fs, const struct fs_node *n, const char *name)
{
	char *fam = temp_family(n);

	if (fam)
		scratch_remove(fs, n->table, fam, name);
	free(fam);
}

/* Remove the entry (name NULL: every entry of the family; family NULL: of the table). */
static void scratch_remove(struct fs *fs, const char *table, const char *family,
			   const char *name)
{
	struct fs_scratch **p, *x;

	pthread_mutex_lock(&fs->lock);
	p = &fs->scratch;
	while ((x = *p)) {
		if (strcmp(x->table, table) || (family && strcmp(x->family, family)) ||
		    (name && strcmp(x->name, name))) {
			p = &x->next;
			continue;
		}
		*p = x->next;
		mem_uncharge(fs, x->len);
		free(x->table);
		free(x->family);
		free(x->name);
		free(x->data);
		free(x);
	}
	pthread_mutex_unlock(&fs->lock);
}

/*
 * A copy tool restoring a cell writes its files in the order the source
 * directory lists them: "q@ts" (an older version) may come before "q",
 * which then exists already, and an O_EXCL create of "q" (cp -a, tar)
 * would fail.  So for ten seconds the process that made a cell through a
 * version name does not see the cell's newest name "q", until it creates
 * it; every other process does.
 */
struct fs_recent {
	char *table, *family;
	void *key;                  /* row, then qualifier */
	size_t row_len, qlen;
	pid_t pid;
	time_t until;
	struct fs_recent *next;
};

static int recent_is(const struct fs_recent *r, const struct fs_node *n)
{
	return !strcmp(r->table, n->table) && !strcmp(r->family, n->family) &&
	       r->row_len == n->row_len && r->qlen == n->qual_len &&
	       !memcmp(r->key, n->row, n->row_len) &&
	       !memcmp((char *)r->key + n->row_len, n->qual, n->qual_len);
}

static void recent_free(struct fs_recent *r)
{
	free(r->table);
	free(r->family);
	free(r->key);
	free(r);
}

/* Drop the expired entries and those of cell n (n may be NULL); under fs.lock. */
static void recent_prune(struct fs *fs, const struct fs_node *n)
{
	struct fs_recent **p = &fs->recent, *r;
	time_t now = time(NULL);

	while ((r = *p)) {
		if (r->until < now || (n && recent_is(r, n))) {
			*p = r->next;
			recent_free(r);
		} else {
			p = &r->next;
		}
	}
}

static void recent_add(struct fs *fs, const struct fs_node *n)
{
	struct fs_recent *r = calloc(1, sizeof(*r));

	if (r) {
		r->table = strdup(n->table);
		r->family = strdup(n->family);
		r->key = malloc(n->row_len + n->qual_len + 1);
	}
	if (!r || !r->table || !r->family || !r->key) {
		if (r)
			recent_free(r);
		return;   /* only the O_EXCL restore of this cell is affected */
	}
	memcpy(r->key, n->row, n->row_len);
	memcpy((char *)r->key + n->row_len, n->qual, n->qual_len);
	r->row_len = n->row_len;
	r->qlen = n->qual_len;
	r->pid = request_pid;
	r->until = time(NULL) + 10;
	pthread_mutex_lock(&fs->lock);
	recent_prune(fs, n);
	r->next = fs->recent;
	fs->recent = r;
	pthread_mutex_unlock(&fs->lock);
}

/* Is the newest name of cell n hidden from the calling process? */
static int recent_hides(struct fs *fs, const struct fs_node *n)
{
	struct fs_recent *r;
	time_t now = time(NULL);
	int hides = 0;

	pthread_mutex_lock(&fs->lock);
	for (r = fs->recent; r && !hides; r = r->next)
		hides = r->pid == request_pid && r->until >= now && recent_is(r, n);
	pthread_mutex_unlock(&fs->lock);
	return hides;
}

static void recent_forget(struct fs *fs, const struct fs_node *n)
{
	pthread_mutex_lock(&fs->lock);
	recent_prune(fs, n);
	pthread_mutex_unlock(&fs->lock);
}

static void emptied_free(struct fs_empty *e);
static void emptied_settle(struct fs *fs);

void fs_scratch_free(struct fs *fs)
{
	emptied_free(fs->emptied);
	fs->emptied = NULL;
	while (fs->recent) {
		struct fs_recent *r = fs->recent;

		fs->recent = r->next;
		recent_free(r);
	}
	while (fs->scratch) {
		struct fs_scratch *x = fs->scratch;

		fs->scratch = x->next;
		mem_uncharge(fs, x->len);
		free(x->table);
		free(x->family);
		free(x->name);
		free(x->data);
		free(x);
	}
}

/* ------------------------------------------------------------ MOUNT/.smolfs/stats */

/* Requests served, counted for .smolfs/stats (fs->nreq). */
enum fs_req { FS_REQ_LOOKUP, FS_REQ_GETATTR, FS_REQ_OPEN, FS_REQ_READ,
	      FS_REQ_PAGED,     /* opens served from the page cache (keep_cache) */
	      FS_REQ_RETIRED };  /* sealed nodes retired */

static void req_counted(struct fs *fs, enum fs_req r)
{
	__atomic_add_fetch(&fs->nreq[r], 1, __ATOMIC_RELAXED);
}

static uint64_t req_count(struct fs *fs, enum fs_req r)
{
	return __atomic_load_n(&fs->nreq[r], __ATOMIC_RELAXED);
}

/*
 * The engine's statistics as text: kv_property "stats" (files and bytes per
 * level of every tree, log and flush bytes, compactions, cache hit rate,
 * stalls), then the counters it gives as rates.  *text is malloc'd.
 */
static int stats_text(struct fs *fs, char **text, size_t *len)
{
	char *engine = kv_property(tbl_kv(fs->db), "stats");
	struct kv_stats ks;
	char *out = NULL;
	int n;

	if (!engine)
		return -ENOMEM;
	kv_get_stats(tbl_kv(fs->db), &ks);
	n = asprintf(&out, "%sdisk bytes %llu\nblock cache hits %llu\nblock cache misses %llu\n"
		     "buffered bytes %zu\nbuffer limit %zu\n"
		     "requests lookup %llu getattr %llu open %llu read %llu\n"
		     "page cache opens %llu retired %llu\n",
		     engine, (unsigned long long)ks.disk_bytes,
		     (unsigned long long)ks.block_cache_hits,
		     (unsigned long long)ks.block_cache_misses,
		     __atomic_load_n(&fs->buffered, __ATOMIC_RELAXED), buffer_limit(fs),
		     (unsigned long long)req_count(fs, FS_REQ_LOOKUP),
		     (unsigned long long)req_count(fs, FS_REQ_GETATTR),
		     (unsigned long long)req_count(fs, FS_REQ_OPEN),
		     (unsigned long long)req_count(fs, FS_REQ_READ),
		     (unsigned long long)req_count(fs, FS_REQ_PAGED),
		     (unsigned long long)req_count(fs, FS_REQ_RETIRED));
	free(engine);
	if (n < 0)
		return -ENOMEM;
	*text = out;
	*len = (size_t)n;
	return 0;
}

/* ------------------------------------------------------------ attributes */

static void ts_to_timespec(uint64_t ts, struct timespec *t)
{
	t->tv_sec = (time_t)(ts / 1000000);
	t->tv_nsec = (long)(ts % 1000000) * 1000;
}

static uint64_t timespec_to_ts(const struct timespec *t)
{
	if (t->tv_sec < 0)
		return 1;
	return (uint64_t)t->tv_sec * 1000000 + (uint64_t)t->tv_nsec / 1000;
}

static uint64_t now_ts(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return timespec_to_ts(&t);
}

static void fill_dir(struct fs *fs, uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFDIR | 0755;
	st->st_nlink = 1;   /* subdirectories are not counted (as btrfs does) */
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = 0;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = fs->start;
}

static void fill_file(struct fs *fs, uint64_t ino, size_t size, uint64_t ts, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFREG | (fs->cfg.ro ? 0444 : 0644);
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	if (ts)
		ts_to_timespec(ts, &st->st_mtim);
	else
		st->st_mtim = fs->start;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/*
 * A setting's st_mtime is derived from its text (a time in 2001-2004), so
 * that two settings files differ in time when they differ in text: rsync's
 * quick check (size and time) then never skips a changed "3\n" over "0\n".
 */
static uint64_t setting_mtime(const char *text, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)text[i];
		h *= 1099511628211ull;
	}
	return (1000000000ull + h % 100000000ull) * 1000000;
}

/* If n was made by mknod and has no value yet, give it type (and say 1): under fs.lock. */
static int node_pending_type(struct fs *fs, struct fs_node *n, int type)
{
	int r;

	pthread_mutex_lock(&fs->lock);
	r = n->pending;
	if (r)
		n->pending_type = type;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

/*
 * Whether n is a cell created and not committed yet (a handle open for
 * writing, or mknod'ed), and the length of a writer's text so far (len may
 * be NULL): read under fs.lock, where opens, closes and commits change them.
 */
static int node_unborn(struct fs *fs, const struct fs_node *n, uint64_t *len)
{
	int r;

	pthread_mutex_lock(&fs->lock);
	r = n->dirty_open || n->pending;
	if (len)
		*len = n->dirty_len;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

/*
 * Does what n describes exist, and what are its attributes?  n may be a
 * template not yet in the table (a lookup) or a live node (getattr); ino is
 * the number to report.
 */
static int node_stat(struct fs *fs, const struct fs_node *n, uint64_t ino, struct stat *st)
{
	struct tbl_family_settings s;
	struct cellinfo ci;
	char text[128];
	uint64_t len64;
	size_t len;
	int rc;

	switch (n->kind) {
	case FS_SMOLFS:
		fill_dir(fs, ino, st);
		return 0;
	case FS_STATS: {
		char *stext;

		rc = stats_text(fs, &stext, &len);
		if (rc < 0)
			return rc;
		free(stext);
		fill_file(fs, ino, len, 0, st);
		st->st_mode = S_IFREG | 0444;
		return 0;
	}
	case FS_ROOT:
	case FS_PREFIXES:
	case FS_PREFIX:
		fill_dir(fs, ino, st);
		return n->kind == FS_ROOT ? 0 : tbl_table_exists(fs->db, n->table);
	case FS_TABLE:
	case FS_FAMILIES:
		rc = tbl_table_exists(fs->db, n->table);
		fill_dir(fs, ino, st);
		return rc;
	case FS_FAMDEF:
		rc = tbl_get_family(fs->db, n->table, n->family, &s);
		fill_dir(fs, ino, st);
		return rc;
	case FS_FAMATTR:
		if (n->attr == FS_ATTR_SCRATCH) {
			if (!scratch_has(fs, n->table, n->family, n->name, 0, &len))
				return -ENOENT;
			fill_file(fs, ino, len, 0, st);
			return 0;
		}
		if (scratch_has(fs, n->table, n->family, n->name, 1, NULL))
			return -ENOENT;   /* unlinked (tar), until created again */
		rc = famattr_text(fs, n->table, n->family, n->attr, text, sizeof(text), &len);
		if (rc < 0)
			return rc;
		fill_file(fs, ino, len, setting_mtime(text, len), st);
		return 0;
	/*
	 * A row or family directory exists while it holds a cell or is an
	 * empty one kept in memory; one the kernel already holds (ino != 0)
	 * stays readable, empty, when its cells went another way (its family
	 * dropped by rm -r of the table, the row removed through .prefix/), so
	 * a tool walking it sees an empty directory rather than one vanishing.
	 */
	/*
	 * So with ino != 0 nothing is read: the getattr the kernel sends for
	 * the directory after each unlink in it (rm -r) costs no seek.
	 */
	case FS_ROW:
		rc = ino ? 0 : row_has(fs, n->table, n->row, n->row_len, NULL);
		if (rc == -ENOENT) {
			emptied_settle(fs);
			if (fs_empty_has(fs, n->table, n->row, n->row_len, NULL))
				rc = 0;
		}
		fill_dir(fs, ino, st);
		return rc;
	case FS_ROWFAM:
		rc = ino ? 0 : row_has(fs, n->table, n->row, n->row_len, n->family);
		if (rc == -ENOENT) {
			emptied_settle(fs);
			if (fs_empty_has(fs, n->table, n->row, n->row_len, n->family))
				rc = 0;
		}
		fill_dir(fs, ino, st);
		return rc;
	case FS_TEMP: {
		uint64_t stamp = 0;

		rc = temp_stat(fs, n, n->name, &len, &stamp, NULL);
		if (rc == 0)
			fill_file(fs, ino, len, stamp, st);
		return rc;
	}
	case FS_CELL:
		rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len,
			      n->ts, &ci, NULL);
		if (rc == 0) {
			fill_file(fs, ino, ci.text_size, ci.ts, st);
		} else if (rc == -ENOENT && ino && node_unborn(fs, n, &len64)) {
			/* created and not committed yet: the writer's text so far */
			fill_file(fs, ino, (size_t)len64, 0, st);
			rc = 0;
		}
		return rc;
	}
	return -EIO;
}

/* ------------------------------------------------------------ sealed nodes */

/*
 * Readers and the page cache.  A reader of a cell reads it through the
 * kernel's page cache when its node is sealed: the text the kernel caches
 * for that inode (its pages and its size) is then one text for the life of
 * the node, described by seal_ts, seal_len and seal_hash.  "Readers and the
 * kernel's cache" (at fs_open) says why a cell whose text may change under
 * the kernel cannot use the page cache: one size per inode.  Sealing keeps
 * the text from changing instead:
 *
 *  - A node is sealed by a reader's open when nothing else has it open
 *    (no reader, no writer, no setattr running), no reply the kernel
 *    applies without checking its age can still come for it (touched: a
 *    setattr by name that is not an open's O_TRUNC, whose reply sets the
 *    size however late it lands; a writer's replies and a setattr's with a
 *    descriptor land before the release), no queued inode invalidation is
 *    still to reach the kernel, and no retry is awaited on the name (below).
 *    The open drops the inode's pages and attributes at once, before it
 *    replies, so the first read asks for the size (with the handle: the
 *    text it holds) and reads pages of that text.
 *  - Later readers whose text is the sealed one (time, length and a hash
 *    of the text) keep the pages (keep_cache): a warm cat is one request.
 *    Every attribute given for a sealed node is its text's.
 *  - Nothing may change the sealed text for the kernel while readers read
 *    its pages (paged).  A writer's open, a truncate, a commit through any
 *    name of the cell, or a reader, lookup or getattr that finds another
 *    text unseals the node when no reader has its pages open (the inode and
 *    its number stay; the next reader seals it again).  Else the node is
 *    retired: detached from its name, whose next lookup makes a new node
 *    (another inode number).  A writer's or reader's open and a truncate
 *    that met it answer ESTALE (a direct reader of a sealed inode could
 *    fill its pages with another text through a private mapping); the
 *    kernel looks the name up again and retries once, and no node of the
 *    name is sealed until that process comes back to it (fs_node_retire),
 *    so the retry cannot meet ESTALE again.  The readers go on reading the
 *    text they opened.
 *
 * -o ro keeps its own rule (no value changes: keep_cache while the pages
 * hold the version opened), and -s seals nothing (the open's invalidation
 * of pages would wait on a reader's page lock held for a read that only
 * the one thread could serve).
 */
static uint64_t text_hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	return h * 0xc4ceb9fe1a85ec53ull;
}

/* Does st (a cell's attributes now) show another text than n's sealed one?  Under fs.lock. */
static int seal_differs(const struct fs_node *n, const struct stat *st)
{
	return (uint64_t)st->st_size != n->seal_len || timespec_to_ts(&st->st_mtim) != n->seal_ts;
}

static void retire(struct fs *fs, struct fs_node *n, pid_t pid)
{
	if (!n->detached)
		req_counted(fs, FS_REQ_RETIRED);
	fs_node_retire(fs, n, pid);
}

/*
 * n's cell is to change, or was found changed, through something other than
 * its readers (under fs.lock): a sealed node with no reader of its pages
 * open is sealed no more (the next reader seals it again, dropping what the
 * kernel holds); one whose pages are being read is retired (pid: the
 * process that is to get ESTALE and retry, or 0).  1 if retired.
 */
static int unseal(struct fs *fs, struct fs_node *n, pid_t pid)
{
	if (!n->sealed)
		return 0;
	if (!n->paged) {
		n->sealed = 0;
		n->seal_ready = 0;
		return 0;
	}
	retire(fs, n, pid);
	return 1;
}

/*
 * The attributes to give for node n whose attributes now are st (rc: what
 * node_stat answered): a sealed node's are its sealed text's, whatever the
 * cell holds now; one whose cell shows another text (or none) is unsealed,
 * or retired while readers read its pages (the name is then looked up
 * again).  1 if n is still sealed (st is then filled), else 0.
 */
static int sealed_attrs(struct fs *fs, struct fs_node *n, uint64_t ino, int rc, struct stat *st)
{
	uint64_t len, ts;
	int sealed;

	pthread_mutex_lock(&fs->lock);
	sealed = n->sealed;
	if (sealed && !n->detached && (rc < 0 || seal_differs(n, st)))
		sealed = unseal(fs, n, 0);
	len = n->seal_len;
	ts = n->seal_ts;
	pthread_mutex_unlock(&fs->lock);
	if (sealed)
		fill_file(fs, ino, len, ts, st);
	return sealed;
}

/*
 * fs_node_ref for a lookup or a listing whose attributes for the name are
 * st: a sealed node whose text is no longer the one shown is unsealed, or
 * retired and a new node made while readers read its pages, so the kernel
 * never gets attributes for a sealed inode that are not its text's.
 */
static struct fs_node *node_ref_shown(struct fs *fs, struct fs_node *p, const char *name,
				      size_t len, const struct fs_node *t, const struct stat *st)
{
	struct fs_node *n = fs_node_ref(fs, p, name, len, t);
	int stale;

	if (!n || n->kind != FS_CELL)
		return n;
	pthread_mutex_lock(&fs->lock);
	stale = n->sealed && seal_differs(n, st) && unseal(fs, n, 0);
	pthread_mutex_unlock(&fs->lock);
	if (!stale)
		return n;
	fs_node_unref(fs, n, 1);
	return fs_node_ref(fs, p, name, len, t);
}

/*
 * A reply gives the kernel st as n's attributes: note which text they show
 * (fs_open's sealing open needs no invalidation while the kernel can hold
 * only the attributes of the text it seals, and no page).  Under fs.lock;
 * attr_timeout notes every reply that asks it for a timeout, attrs_shown
 * the others.
 */
static void note_shown(struct fs_node *n, const struct stat *st)
{
	uint64_t ts = timespec_to_ts(&st->st_mtim), len = (uint64_t)st->st_size;

	if (n->kind != FS_CELL)
		return;
	if (!n->shown_any) {
		n->shown_any = 1;
		n->shown_ts = ts;
		n->shown_len = len;
	} else if (n->shown_ts != ts || n->shown_len != len) {
		n->shown_mixed = 1;
	}
}

static void attrs_shown(struct fs *fs, struct fs_node *n, const struct stat *st)
{
	pthread_mutex_lock(&fs->lock);
	note_shown(n, st);
	pthread_mutex_unlock(&fs->lock);
}

/*
 * How long the kernel may keep the attributes st given for n (noted:
 * note_shown).  None while a descriptor is open on it: a writer's close
 * may change the committed size at any time, and a reader's
 * lseek(SEEK_END) must ask the daemon, which answers the length of the
 * text that reader holds (reader_stat), not the newest size a stat by name
 * left in the inode.
 */
static double attr_timeout(struct fs *fs, struct fs_node *n, const struct stat *st)
{
	int open;

	pthread_mutex_lock(&fs->lock);
	note_shown(n, st);   /* the reply these attributes go in */
	/* -o ro: no value changes; a sealed node's attributes are its text's */
	open = n->dirty_open || (n->readers && !fs->cfg.ro && !n->sealed);
	pthread_mutex_unlock(&fs->lock);
	return open ? 0 : fs->cfg.timeout;
}

/*
 * A timeout t for a cell's name or attributes (st), cut at the moment its
 * family's ttl hides the version: no invalidation comes then, since nothing
 * changes but the clock, and a kernel that kept the entry longer would
 * answer stat for a cell that reads as gone.  The name q shows the newest
 * version, and every older one is hidden before it.  A timestamp in the
 * future is never hidden.
 */
static double ttl_timeout(struct fs *fs, const struct fs_node *n, const struct stat *st,
			  double t)
{
	struct tbl_family_settings s;
	uint64_t ts, end, now;

	if (n->kind != FS_CELL || t <= 0 ||
	    tbl_get_family(fs->db, n->table, n->family, &s) < 0 || s.ttl == 0)
		return t;
	ts = timespec_to_ts(&st->st_mtim);
	now = now_ts();
	if (ts > now)
		return t;
	end = ts + s.ttl * 1000000;   /* s.ttl <= TBL_MAX_TTL: no overflow */
	if (end <= now)
		return 0;
	return (double)(end - now) / 1e6 < t ? (double)(end - now) / 1e6 : t;
}

/* What an entry's attributes and the lookup counts' timeouts are. */
static void fill_entry(struct fs *fs, struct fs_node *n, const struct stat *st,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	e->generation = n->generation;
	e->attr = *st;
	e->attr.st_ino = n->ino;
	e->attr_timeout = ttl_timeout(fs, n, st, attr_timeout(fs, n, st));
	e->entry_timeout = ttl_timeout(fs, n, st, fs->cfg.timeout);
}

/* ------------------------------------------------------------ names to nodes */

/*
 * Describe the child `name` of parent in t (pointers into scratch, which
 * holds FS_NAME_MAX bytes, or into parent).  -ENOENT if no such child can
 * exist at that place, -EINVAL for a malformed escape.
 */
/*
 * -ENAMETOOLONG if the key's own name (its escaped form, with "@ts" for an
 * older version) exceeds NAME_MAX, though the name it was reached by may be
 * shorter (bytes written plainly that a listing escapes: 86 bytes 0x01 are
 * a 258-byte name): what cannot be listed is not made either.
 */
static int listable(const void *key, size_t len, enum fs_name_kind kind, uint64_t ts)
{
	char out[FS_NAME_MAX + 1];
	size_t n;

	if (kind == FS_NAME_QUALIFIER)
		return fs_name_version(key, len, ts, out, &n);
	return fs_name_escape(key, len, kind, 0, out, &n);
}

static int child_template(const struct fs_node *parent, const char *name, size_t len,
			  struct fs_node *t, char *scratch)
{
	size_t klen, qn;
	uint64_t ts;
	int rc, i;

	memset(t, 0, sizeof(*t));
	t->table = parent->table;
	t->family = parent->family;
	t->row = parent->row;
	t->row_len = parent->row_len;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	switch (parent->kind) {
	case FS_SMOLFS:
		if (len != 5 || memcmp(name, "stats", 5))
			return -ENOENT;
		t->kind = FS_STATS;
		return 0;
	case FS_STATS:
		return -ENOTDIR;
	case FS_ROOT:
		if (len == 7 && !memcmp(name, ".smolfs", 7)) {   /* found by name, not listed */
			t->kind = FS_SMOLFS;
			t->table = NULL;
			t->row = NULL;
			return 0;
		}
		if (len > TBL_MAX_NAME || memchr(name, '\0', len))
			return -ENOENT;
		memcpy(scratch, name, len);
		scratch[len] = '\0';
		t->kind = FS_TABLE;
		t->table = scratch;
		t->row = NULL;
		return 0;
	case FS_TABLE:
		if (len == 9 && !memcmp(name, ".families", 9)) {
			t->kind = FS_FAMILIES;
			return 0;
		}
		if (len == 7 && !memcmp(name, ".prefix", 7)) {
			t->kind = FS_PREFIXES;
			return 0;
		}
		if (name[0] == '.')
			return -ENOENT;   /* reserved; row keys beginning with "." are %2E... */
		/* fall through */
	case FS_PREFIX:
		rc = fs_name_unescape(name, len, scratch, &klen);
		if (rc < 0)
			return rc;
		if (parent->kind == FS_PREFIX &&
		    (klen < parent->row_len || memcmp(scratch, parent->row, parent->row_len)))
			return -ENOENT;
		rc = listable(scratch, klen, FS_NAME_ROW, 0);
		if (rc < 0)
			return rc;
		t->kind = FS_ROW;
		t->row = scratch;
		t->row_len = klen;
		return 0;
	case FS_PREFIXES:
		rc = fs_name_unescape(name, len, scratch, &klen);
		if (rc < 0)
			return rc;
		t->kind = FS_PREFIX;
		t->row = scratch;
		t->row_len = klen;
		return 0;
	case FS_FAMILIES:
	case FS_ROW:
		if (len > TBL_MAX_FAMILY_NAME)
			return -ENOENT;
		memcpy(scratch, name, len);
		scratch[len] = '\0';
		t->kind = parent->kind == FS_FAMILIES ? FS_FAMDEF : FS_ROWFAM;
		t->family = scratch;
		if (t->kind == FS_FAMDEF)
			t->row = NULL, t->row_len = 0;
		return 0;
	case FS_FAMDEF:
		for (i = 0; i < FS_ATTR_COUNT; i++)
			if (strlen(fs_attr_names[i]) == len && !memcmp(fs_attr_names[i], name, len)) {
				t->kind = FS_FAMATTR;
				t->attr = i;
				t->name = (char *)fs_attr_names[i];
				t->name_len = len;
				return 0;
			}
		/* a temporary file, if one by that name was made (fs_scratch) */
		memcpy(scratch, name, len);
		scratch[len] = '\0';
		t->kind = FS_FAMATTR;
		t->attr = FS_ATTR_SCRATCH;
		t->name = scratch;
		t->name_len = len;
		return 0;
	case FS_ROWFAM:
		if (name[0] == '.') {   /* a temporary file (fs_scratch) */
			memcpy(scratch, name, len);
			scratch[len] = '\0';
			t->kind = FS_TEMP;
			t->name = scratch;
			t->name_len = len;
			return 0;
		}
		rc = fs_name_split_version(name, len, &qn, &ts);
		if (rc < 0)
			return rc;
		rc = fs_name_unescape(name, qn, scratch, &klen);
		if (rc == 0)
			rc = listable(scratch, klen, FS_NAME_QUALIFIER, ts);
		if (rc < 0)
			return rc;
		t->kind = FS_CELL;
		t->qual = scratch;
		t->qual_len = klen;
		t->ts = ts;
		return 0;
	case FS_FAMATTR:
	case FS_CELL:
	case FS_TEMP:
		return -ENOTDIR;
	}
	return -ENOENT;
}

static int is_dir_kind(enum fs_kind k)
{
	return k != FS_CELL && k != FS_FAMATTR && k != FS_TEMP && k != FS_STATS;
}

/* ------------------------------------------------------------ lookup, forget, getattr */

/*
 * Does n belong to a table or family that was dropped and created again
 * under its name?  Then it, and every file open on it, is of the old one:
 * requests answer ESTALE (a path walked again reaches the new one: the
 * kernel retries a lookup that met ESTALE, and the name gives a new node).
 * While the name is not taken again, n answers as a removed file or
 * directory does.  Cost: two lookups in the schema, in memory.
 */
static int node_stale(struct fs *fs, const struct fs_node *n)
{
	const char *family;
	uint64_t id, family_id;

	/*
	 * A rename to another family gives a cell node its new family name and
	 * id one after the other, under fs.lock: read the pair under it too, or
	 * a request between the two stores would see the new name with the old
	 * id and answer ESTALE (and a close would drop its text).  The old name
	 * stays allocated in n->graves, so the pointer outlives the lock.
	 */
	pthread_mutex_lock(&fs->lock);
	family = n->family;
	family_id = n->family_id;
	pthread_mutex_unlock(&fs->lock);
	if (n->table_id && tbl_table_id(fs->db, n->table, &id) == 0 && id != n->table_id)
		return 1;
	if (family_id && tbl_family_id(fs->db, n->table, family, &id) == 0 && id != family_id)
		return 1;
	return 0;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t, *n;
	char scratch[FS_NAME_MAX + 1];
	struct fuse_entry_param e;
	struct stat st;
	size_t len = strlen(name);
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "lookup", NULL);
	req_counted(fs, FS_REQ_LOOKUP);
	request_pid = fuse_req_ctx(req)->pid;
	rc = child_template(p, name, len, &t, scratch);
	if (rc == -EINVAL)
		rc = -ENOENT;   /* a name no key escapes to */
	if (rc == 0)
		rc = node_stat(fs, &t, 0, &st);
	if (rc == 0 && t.kind == FS_CELL && t.ts == 0 && fs->recent && recent_hides(fs, &t))
		rc = -ENOENT;
	if (rc < 0) {
		/* a created cell not committed yet exists while its handle is open */
		if (rc == -ENOENT && t.kind == FS_CELL &&
		    (n = fs_node_ref_unborn(fs, parent, name, len)) != NULL) {
			if (!node_stale(fs, n) && node_stat(fs, n, n->ino, &st) == 0) {
				fill_entry(fs, n, &st, &e);
				if (fuse_reply_entry(req, &e) < 0)
					fs_node_unref(fs, n, 1);
				return;
			}
			fs_node_unref(fs, n, 1);
		}
		return reply_err(req, rc, "lookup", p);
	}
	n = node_ref_shown(fs, p, name, len, &t, &st);
	if (!n)
		return reply_err(req, -ENOMEM, "lookup", p);
	if (node_unborn(fs, n, NULL))
		node_stat(fs, n, n->ino, &st);   /* a writer's text so far */
	fill_entry(fs, n, &st, &e);
	rc = fuse_reply_entry(req, &e);
	if (rc < 0) {
		reply_failed("lookup", rc);
		fs_node_unref(fs, n, 1);
	}
}

static void fs_forget_one(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_forget(req_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = req_fs(req);
	size_t i;

	for (i = 0; i < count; i++)
		fs_forget(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static int reader_stat(struct fs *fs, struct fs_node *n, uint64_t ino, struct fuse_file_info *fi,
		       struct stat *st);

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	struct stat st;
	int rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "getattr", NULL);
	request_pid = fuse_req_ctx(req)->pid;
	req_counted(fs, FS_REQ_GETATTR);
	/* may be stale: not kept, but for read-only mounts and sealed nodes */
	if (fi && (rc = reader_stat(fs, n, ino, fi, &st)) != 0) {
		attrs_shown(fs, n, &st);
		return reply_failed("getattr", fuse_reply_attr(req, &st, fs->cfg.ro || rc == 2 ?
						ttl_timeout(fs, n, &st, fs->cfg.timeout) : 0));
	}
	rc = node_stat(fs, n, ino, &st);
	if (n->kind == FS_CELL && sealed_attrs(fs, n, ino, rc, &st))
		rc = 0;   /* a retired node's, or one whose cell expired: its descriptors' */
	if (rc < 0)
		return reply_err(req, rc, "getattr", n);
	reply_failed("getattr", fuse_reply_attr(req, &st, ttl_timeout(fs, n, &st,
								       attr_timeout(fs, n, &st))));
}

/*
 * access(2), faccessat(2) and chdir, asked only on a mount without
 * default_permissions (no allow_other: main.c), where the kernel checks no
 * mode itself; a request each.  The answer is the one the kernel gives
 * from the modes the tree shows where it does check them: the owner's,
 * group's or others' bits, and for root (uid 0) every read and write and
 * an execute where some execute bit is set.  So `test -x` of a cell is
 * false (0644), and `test -w` of .smolfs/stats (0444) for all but root, as
 * with allow_other.
 */
static void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;
	mode_t bits;
	int rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "access", NULL);
	rc = node_stat(fs, n, ino, &st);
	if (rc < 0)
		return reply_err(req, rc, "access", n);
	if (ctx->uid == 0)
		bits = S_IROTH | S_IWOTH | ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ? S_IXOTH : 0);
	else if (ctx->uid == st.st_uid)
		bits = (st.st_mode >> 6) & 7;
	else if (ctx->gid == st.st_gid)
		bits = (st.st_mode >> 3) & 7;
	else
		bits = st.st_mode & 7;
	/* R_OK, W_OK and X_OK are the other-bits' values: 4, 2 and 1 */
	if ((unsigned)mask & 7 & ~(unsigned)bits)
		return reply_err(req, -EACCES, "access", n);
	reply_failed("access", fuse_reply_err(req, 0));
}

/* ------------------------------------------------------------ invalidation helpers */

/*
 * The inode a flush invalidates itself before it replies: the queue leaves it
 * out.  A queued invalidation that reaches the kernel after close() returned
 * makes it drop the size of a getattr or short read in flight for that inode
 * (its attribute version moved), and the old, longer size stays: a fresh read
 * after a shrinking commit then returned the old length, padded with zeros.
 */
static __thread fuse_ino_t inval_sync_ino;
static __thread int inval_sync_due;   /* inval_one left inval_sync_ino out */

/*
 * The attributes and pages go; a version's name stays in the kernel's cache
 * (its getattr and open answer ENOENT once it is gone, and its unlink
 * succeeds: rm -r removes q, then the q@ts it listed).
 */
static void inval_one(struct fs *fs, struct fs_node *n, void *arg)
{
	n->cached_ts = 0;
	unseal(fs, n, 0);   /* its text may be another now */
	if (n->ino && n->ino == inval_sync_ino)
		inval_sync_due = 1;
	else
		fs_notify_inode(fs, n->ino);
	(void)arg;
}

/*
 * The cell (table, row, family, q) changed: whatever the kernel holds of it,
 * under any name (q, q@ts, through .prefix/), is to be read again.
 */
static void inval_cell(struct fs *fs, const char *table, const void *row, size_t row_len,
		       const char *family, const void *q, size_t qlen)
{
	fs_each_node(fs, FS_CELL, table, family, row, row_len, q, qlen, inval_one, NULL);
}

/*
 * A commit, a conversion or a rename may hide older versions (max_versions),
 * or a change of max_versions or ttl: the names of the cell's versions
 * (q@ts) that the kernel holds go too, so that a stat of one that went
 * finds it absent by lookup, and writing it by name again creates it (a
 * stale positive entry would send an open that can only fail ENOENT).
 * Unlink does not drop them (inval_one says why).
 */
/*
 * Invalidate an inode's attributes and pages before the reply.  With -s it
 * is queued instead: the kernel would wait for a page lock held by a reader
 * whose read waits for the one thread that serves requests, stuck in the
 * invalidation (seen under tests/fs_recreate.sh).  Queued, it leaves to -s
 * the race that fs_flush's own invalidation closes (inval_sync_ino).
 */
static int inval_now(struct fs *fs, uint64_t ino)
{
	if (fs->cfg.singlethread) {
		fs_notify_inode(fs, ino);
		return 0;
	}
	return fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}

static void inval_version_one(struct fs *fs, struct fs_node *n, void *arg)
{
	/* the flushing name itself holds the version just written: inval_one */
	if (n->ts && !n->detached && !(n->ino && n->ino == inval_sync_ino))
		fs_notify_entry(fs, n->parent, n->name, n->name_len);
	inval_one(fs, n, arg);
}

static void inval_versions(struct fs *fs, const char *table, const void *row, size_t row_len,
			   const char *family, const void *q, size_t qlen)
{
	fs_each_node(fs, FS_CELL, table, family, row, row_len, q, qlen, inval_version_one, NULL);
}

static void inval_entry_one(struct fs *fs, struct fs_node *n, void *arg)
{
	fs_notify_entry(fs, n->parent, n->name, n->name_len);
	fs_notify_inode(fs, n->ino);
	(void)arg;
}

/*
 * A cell was removed from (row, family): if that was its last, the family's
 * directory (and so its row's) stays as an empty one in memory, as on any
 * filesystem (rm -r removes the cells, then rmdir's their directories).
 */
static void keep_dirs(struct fs *fs, const char *table, const void *row, size_t row_len,
		      const char *family)
{
	if (row_has(fs, table, row, row_len, family) == -ENOENT &&
	    fs_empty_add(fs, table, row, row_len, family) < 0)
		fuse_log(FUSE_LOG_ERR, "smolfs: table %s: out of memory keeping an emptied "
			 "directory\n", table);
}

/*
 * Whether an unlink emptied its family is settled later, once per family:
 * checking it at each unlink (keep_dirs) steps over every cell deleted
 * before, one tombstone each, so rm -r, unlinking a family's cells in key
 * order, paid for all the cells already gone at every unlink (a row of
 * 4,000 cells took 9 seconds, quadratic).  The family waits in fs->emptied
 * until an unlink elsewhere, or anything that shows or removes empty
 * directories (a lookup of a row or family the kernel does not hold, a
 * listing of a row or table, mkdir, rmdir), settles it: one check.
 */
static void emptied_free(struct fs_empty *e)
{
	if (e) {
		free(e->table);
		free(e->row);
		free(e->family);
		free(e);
	}
}

static void settle(struct fs *fs, struct fs_empty *e)
{
	if (e) {
		keep_dirs(fs, e->table, e->row, e->row_len, e->family);
		emptied_free(e);
	}
}

/* Settle the family an unlink left waiting, if any. */
static void emptied_settle(struct fs *fs)
{
	struct fs_empty *e;

	pthread_mutex_lock(&fs->lock);
	e = fs->emptied;
	fs->emptied = NULL;
	pthread_mutex_unlock(&fs->lock);
	settle(fs, e);
}

/* An unlink in (table, row, family): the family may be empty now. */
static void emptied_mark(struct fs *fs, const char *table, const void *row, size_t row_len,
			 const char *family)
{
	struct fs_empty *e, *old;

	pthread_mutex_lock(&fs->lock);
	e = fs->emptied;
	if (e && !strcmp(e->table, table) && e->row_len == row_len &&
	    !memcmp(e->row, row, row_len) && !strcmp(e->family, family)) {
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	pthread_mutex_unlock(&fs->lock);
	e = calloc(1, sizeof(*e));
	if (e) {
		e->table = strdup(table);
		e->row = malloc(row_len ? row_len : 1);
		e->row_len = row_len;
		e->family = strdup(family);
	}
	if (!e || !e->table || !e->row || !e->family) {
		emptied_free(e);
		keep_dirs(fs, table, row, row_len, family);   /* no memory: settle now */
		return;
	}
	memcpy(e->row, row, row_len);
	pthread_mutex_lock(&fs->lock);
	old = fs->emptied;
	fs->emptied = e;
	pthread_mutex_unlock(&fs->lock);
	settle(fs, old);
}

/* ------------------------------------------------------------ directories */

/* One directory entry, held by a handle until it reaches the kernel. */
struct dent {
	char *name;
	size_t len;
	struct fs_node t;           /* what it stands for (pointers owned: below) */
	char *table;
	void *row;
	void *qual;
	char *family;
	struct stat st;
	int plus;                   /* hand the kernel a lookup with it */
};

/* Where a family listing stands: 0 before ".", 1 after ".", 2 after "..", 3 after (q, ts). */
struct dpos {
	int phase;
	void *q;
	size_t q_len;
	uint64_t ts;
};

struct fs_dir {
	struct fs_open open;        /* first: fs.opens links it */
	pthread_mutex_t lock;
	struct fs_node *node;
	off_t next_off;             /* offset of the next entry to give */
	/* listed at once (small directories): ents[pos..n) */
	struct dent *ents;
	size_t n, pos;
	int loaded;
	/* streamed (rows of a table or prefix) */
	int phase;                  /* 0 ".", 1 "..", 2 ".families", 3 rows, 4 done */
	struct tbl_scan *scan;
	void *srow;                 /* the scan's current row, copied, or NULL */
	size_t srow_len;
	int sdone;
	void **erows;               /* empty rows in memory, sorted */
	size_t *elens;
	size_t ne, epos;
	struct dent cur;            /* an entry produced and not yet given */
	int have_cur;
	/*
	 * A family of a row: streamed from a column listing opened for each
	 * reply after the last entry given, so that cells created or removed
	 * meanwhile are neither skipped nor repeated.  at[i] is the position
	 * after the entry at offset at_base + i, for the offsets of the last
	 * reply only: the memory is that of one reply, whatever the family.
	 */
	struct tbl_columns *cols;
	int cdone;
	struct dpos *at;
	size_t nat, cat;
	off_t at_base;
	struct dpos cur_pos;        /* the position after cur (q its own copy) */
};


static void dent_free(struct dent *d)
{
	free(d->name);
	free(d->table);
	free(d->row);
	free(d->qual);
	free(d->family);
	memset(d, 0, sizeof(*d));
}

static void stream_pause(struct fs_dir *d);
static void rowfam_pause(struct fs_dir *d);

static void dir_reset(struct fs_dir *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		dent_free(&d->ents[i]);
	free(d->ents);
	d->ents = NULL;
	d->n = d->pos = 0;
	d->loaded = 0;
	stream_pause(d);   /* a table's scan, its rows, the entry not given */
	rowfam_pause(d);   /* a family's listing */
	d->phase = 0;
	d->next_off = 0;
	for (i = 0; i < d->nat; i++)
		free(d->at[i].q);
	free(d->at);
	d->at = NULL;
	d->nat = d->cat = 0;
	d->at_base = 0;
}

/* Fill an entry: name (copied), and what it stands for (keys copied). */
static int dent_set(struct dent *d, const char *name, size_t len, const struct fs_node *t)
{
	memset(d, 0, sizeof(*d));
	d->name = malloc(len + 1);
	if (!d->name)
		return -ENOMEM;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	d->len = len;
	d->t = *t;
	if (t->table) {
		d->table = strdup(t->table);
		if (!d->table)
			return -ENOMEM;
		d->t.table = d->table;
	}
	if (t->row) {
		d->row = malloc(t->row_len ? t->row_len : 1);
		if (!d->row)
			return -ENOMEM;
		memcpy(d->row, t->row, t->row_len);
		d->t.row = d->row;
	}
	if (t->qual) {
		d->qual = malloc(t->qual_len ? t->qual_len : 1);
		if (!d->qual)
			return -ENOMEM;
		memcpy(d->qual, t->qual, t->qual_len);
		d->t.qual = d->qual;
	}
	if (t->family) {
		d->family = strdup(t->family);
		if (!d->family)
			return -ENOMEM;
		d->t.family = d->family;
	}
	return 0;
}

static int push_dent(struct fs_dir *d, size_t *cap, const char *name, size_t len,
		     const struct fs_node *t, const struct stat *st, int plus)
{
	struct dent *e;
	int rc;

	if (d->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct dent *v = realloc(d->ents, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->ents = v;
		*cap = nc;
	}
	e = &d->ents[d->n];
	rc = dent_set(e, name, len, t);
	if (rc < 0) {
		dent_free(e);
		return rc;
	}
	if (st)
		e->st = *st;
	e->plus = plus;
	d->n++;
	return 0;
}

static int push_dots(struct fs *fs, struct fs_dir *d, size_t *cap)
{
	struct fs_node t;
	struct stat st;
	int rc;

	memset(&t, 0, sizeof(t));
	t.kind = d->node->kind;
	fill_dir(fs, d->node->ino, &st);
	rc = push_dent(d, cap, ".", 1, &t, &st, 0);
	if (rc == 0) {
		fill_dir(fs, d->node->parent ? d->node->parent : FUSE_ROOT_ID, &st);
		rc = push_dent(d, cap, "..", 2, &t, &st, 0);
	}
	return rc;
}

/* A child of the directory by template: its name's number and attributes. */
static int push_child(struct fs *fs, struct fs_dir *d, size_t *cap, const char *name, size_t len,
		      const struct fs_node *t, int stat_it)
{
	struct stat st;
	uint64_t ino = fs_child_ino(fs, d->node->ino, name, len);
	int rc;

	if (is_dir_kind(t->kind)) {
		fill_dir(fs, ino, &st);
	} else if (stat_it) {
		rc = node_stat(fs, t, ino, &st);
		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
	}
	return push_dent(d, cap, name, len, t, &st, 1);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The families of a row that hold cells, and its empty ones in memory. */
static int load_row(struct fs *fs, struct fs_dir *d, size_t *cap)
{
	const struct fs_node *n = d->node;
	char **fams = NULL, **empties = NULL, **all = NULL;
	size_t nf = 0, ne = 0, i, na = 0;
	int rc;

	rc = tbl_row_families(fs->db, n->table, n->row, n->row_len, &fams, &nf);
	if (rc == -EINVAL)
		rc = 0;
	if (rc < 0)
		return rc;
	emptied_settle(fs);
	rc = fs_empty_families(fs, n->table, n->row, n->row_len, &empties, &ne);
	if (rc < 0)
		goto out;
	all = calloc(nf + ne + 1, sizeof(*all));
	if (!all) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nf; i++)
		all[na++] = fams[i];
	for (i = 0; i < ne; i++) {
		size_t j;

		for (j = 0; j < na && strcmp(all[j], empties[i]); j++)
			;
		if (j == na)
			all[na++] = empties[i];
	}
	if (na)
		qsort(all, na, sizeof(*all), cmp_str);
	for (i = 0; i < na && rc == 0; i++) {
		struct fs_node t;

		memset(&t, 0, sizeof(t));
		t.kind = FS_ROWFAM;
		t.table = n->table;
		t.family = all[i];
		t.row = n->row;
		t.row_len = n->row_len;
		rc = push_child(fs, d, cap, all[i], strlen(all[i]), &t, 0);
	}
out:
	free(all);
	tbl_free_names(fams, nf);
	tbl_free_names(empties, ne);
	return rc;
}

/* Everything of a small directory, at offset 0. */
static int dir_load(struct fs *fs, struct fs_dir *d)
{
	const struct fs_node *n = d->node;
	size_t cap = 0, i, nn = 0;
	char **names = NULL;
	struct fs_node t;
	int rc;

	rc = push_dots(fs, d, &cap);
	if (rc < 0)
		return rc;
	memset(&t, 0, sizeof(t));
	t.table = n->table;
	t.family = n->family;
	t.row = n->row;
	t.row_len = n->row_len;
	switch (n->kind) {
	case FS_ROOT:
		rc = tbl_list_tables(fs->db, &names, &nn);
		t.kind = FS_TABLE;
		for (i = 0; i < nn && rc == 0; i++) {
			t.table = names[i];
			rc = push_child(fs, d, &cap, names[i], strlen(names[i]), &t, 0);
		}
		break;
	case FS_FAMILIES:
		rc = tbl_list_families(fs->db, n->table, &names, &nn);
		t.kind = FS_FAMDEF;
		for (i = 0; i < nn && rc == 0; i++) {
			t.family = names[i];
			rc = push_child(fs, d, &cap, names[i], strlen(names[i]), &t, 0);
		}
		break;
	case FS_FAMDEF:
		t.kind = FS_FAMATTR;
		for (i = 0; i < FS_ATTR_COUNT && rc == 0; i++) {
			if (scratch_has(fs, n->table, n->family, fs_attr_names[i], 1, NULL))
				continue;
			t.attr = (int)i;
			t.name = (char *)fs_attr_names[i];
			rc = push_child(fs, d, &cap, fs_attr_names[i], strlen(fs_attr_names[i]), &t,
					1);
		}
		break;
	case FS_PREFIXES:
		break;   /* lists nothing: find, du and rsync never walk a table twice */
	case FS_SMOLFS:
		t.kind = FS_STATS;
		rc = push_child(fs, d, &cap, "stats", 5, &t, 1);
		break;
	case FS_ROW:
		rc = load_row(fs, d, &cap);
		break;
	default:
		rc = -ENOTDIR;
	}
	tbl_free_names(names, nn);
	d->loaded = 1;
	return rc;
}

static int streamed(enum fs_kind k)
{
	return k == FS_TABLE || k == FS_PREFIX;
}

/* The next row of the scan, copied into d->srow (NULL at the end). */
static int scan_advance(struct fs *fs, struct fs_dir *d)
{
	const struct tbl_row *row;
	int rc;

	free(d->srow);
	d->srow = NULL;
	if (d->sdone)
		return 0;
	if (!d->scan) {
		struct tbl_read r;

		memset(&r, 0, sizeof(r));
		r.row_keys_only = 1;
		/* a listing streams: its blocks pass, the block cache keeps what is hot */
		r.no_fill_cache = 1;
		if (d->node->kind == FS_PREFIX) {
			r.prefix = d->node->row;
			r.prefix_len = d->node->row_len;
		}
		if (d->nat && d->at[d->nat - 1].q) {   /* resume after the last row given */
			r.start = d->at[d->nat - 1].q;
			r.start_len = d->at[d->nat - 1].q_len;
			r.start_exclusive = 1;
		}
		rc = tbl_scan_new(fs->db, d->node->table, &r, &d->scan);
		if (rc < 0)
			return rc;
	}
	rc = tbl_scan_next(d->scan, &row);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		d->sdone = 1;
		return 0;
	}
	d->srow = malloc(row->key_len ? row->key_len : 1);
	if (!d->srow)
		return -ENOMEM;
	memcpy(d->srow, row->key, row->key_len);
	d->srow_len = row->key_len;
	return 0;
}

static int key_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : (an > bn) - (an < bn);
}

/*
 * Produce the next entry of a streamed directory into d->cur: ".", "..",
 * ".families" (a table), then its rows in key order, the scan's merged with
 * the empty rows kept in memory.  0 at the end, 1 with an entry.
 */
static int at_room(struct fs_dir *d);

static int stream_next(struct fs *fs, struct fs_dir *d)
{
	const struct fs_node *n = d->node;
	struct fs_node t;
	struct stat st;
	int rc;

	rc = at_room(d);   /* room for the position of this entry once given */
	if (rc < 0)
		return rc;
	memset(&t, 0, sizeof(t));
	memset(&d->cur_pos, 0, sizeof(d->cur_pos));
	t.table = n->table;
	for (;;) {
		switch (d->phase) {
		case 0:
		case 1:
			fill_dir(fs, d->phase == 0 ? n->ino : n->parent, &st);
			t.kind = n->kind;
			rc = dent_set(&d->cur, d->phase == 0 ? "." : "..", (size_t)d->phase + 1, &t);
			d->cur.st = st;
			d->phase++;
			if (n->kind == FS_PREFIX && d->phase == 2)
				d->phase = 3;
			d->cur_pos.phase = d->phase;
			goto got;
		case 2:
			t.kind = FS_FAMILIES;
			fill_dir(fs, fs_child_ino(fs, n->ino, ".families", 9), &st);
			rc = dent_set(&d->cur, ".families", 9, &t);
			d->cur.st = st;
			d->phase = 3;
			d->cur_pos.phase = 3;
			goto got;
		case 3: {
			char name[FS_NAME_MAX + 1];
			size_t len, i;
			const void *key;
			size_t klen;
			int c;

			if (!d->scan && !d->sdone && !d->srow) {
				/* first row: load the empty rows too */
				emptied_settle(fs);
				rc = fs_empty_rows(fs, n->table, &d->erows, &d->elens, &d->ne);
				if (rc < 0)
					return rc;
				{   /* keep those under the prefix, after the resume point */
					const struct dpos *from = &d->at[d->nat - 1];
					size_t k = 0;

					for (i = 0; i < d->ne; i++) {
						if ((n->kind != FS_PREFIX ||
						     (d->elens[i] >= n->row_len &&
						      !memcmp(d->erows[i], n->row, n->row_len))) &&
						    (!from->q || key_cmp(d->erows[i], d->elens[i],
									 from->q, from->q_len) > 0)) {
							d->erows[k] = d->erows[i];
							d->elens[k++] = d->elens[i];
						} else {
							free(d->erows[i]);
						}
					}
					d->ne = k;
				}
				rc = scan_advance(fs, d);
				if (rc < 0)
					return rc;
			}
			if (!d->srow && d->epos == d->ne) {
				d->phase = 4;
				continue;
			}
			c = !d->srow ? 1 : d->epos == d->ne ? -1
				: key_cmp(d->srow, d->srow_len, d->erows[d->epos], d->elens[d->epos]);
			if (c <= 0) {
				key = d->srow;
				klen = d->srow_len;
			} else {
				key = d->erows[d->epos];
				klen = d->elens[d->epos];
			}
			rc = fs_name_escape(key, klen, FS_NAME_ROW, 0, name, &len);
			free(d->cur_pos.q);
			d->cur_pos.q = malloc(klen ? klen : 1);
			if (!d->cur_pos.q)
				return -ENOMEM;
			memcpy(d->cur_pos.q, key, klen);
			d->cur_pos.q_len = klen;
			d->cur_pos.phase = 3;
			if (rc == 0) {
				t.kind = FS_ROW;
				t.row = (void *)key;
				t.row_len = klen;
				fill_dir(fs, fs_child_ino(fs, n->ino, name, len), &st);
				rc = dent_set(&d->cur, name, len, &t);
				d->cur.st = st;
			} else if (rc == -ENAMETOOLONG) {
				fuse_log(FUSE_LOG_WARNING, "smolfs: table %s: a row key of %zu bytes "
					 "has no name within NAME_MAX; not listed\n", n->table, klen);
				rc = 0;
			}
			if (c >= 0 && d->epos < d->ne)
				d->epos++;
			if (c <= 0) {
				int rc2 = scan_advance(fs, d);

				if (rc2 < 0) {
					dent_free(&d->cur);
					return rc2;
				}
			}
			if (rc == 0 && !d->cur.name)
				continue;   /* skipped a row without a name */
			goto got;
		}
		default:
			return 0;
		}
	}
got:
	if (rc < 0) {
		dent_free(&d->cur);
		return rc;
	}
	d->cur.plus = 0;   /* rows, ".", "..": no lookup handed with them */
	d->have_cur = 1;
	return 1;
}

/* ------------------------------------------------- a family of a row, streamed */

/* Close the listing and drop the entry not given: nothing held between replies. */
static void rowfam_pause(struct fs_dir *d)
{
	if (d->cols)
		tbl_columns_free(d->cols);
	d->cols = NULL;
	d->cdone = 0;
	if (d->have_cur)
		dent_free(&d->cur);
	d->have_cur = 0;
	free(d->cur_pos.q);
	memset(&d->cur_pos, 0, sizeof(d->cur_pos));
}

/*
 * Resume at offset off, which at[] holds: the positions after it go (the
 * entries there are listed again, from the database as it is now); those
 * before it stay, for a seekdir back to them.
 */
static void at_keep(struct fs_dir *d, off_t off)
{
	size_t k = (size_t)(off - d->at_base), i;

	for (i = k + 1; i < d->nat; i++)
		free(d->at[i].q);
	d->nat = k + 1;
	d->next_off = off;
}

/*
 * Room in at[] for the position after the next entry.  At FS_DIR_WINDOW
 * positions the older half goes: a seekdir further back than that counts
 * from the start (smolfs(1)), and a handle's memory stays bounded whatever
 * the directory's size.
 */
#define FS_DIR_WINDOW 4096
static int at_room(struct fs_dir *d)
{
	size_t i, drop;

	if (d->nat >= FS_DIR_WINDOW) {
		drop = d->nat / 2;
		for (i = 0; i < drop; i++)
			free(d->at[i].q);
		memmove(d->at, d->at + drop, (d->nat - drop) * sizeof(*d->at));
		d->nat -= drop;
		d->at_base += (off_t)drop;
	}
	if (d->nat == d->cat) {
		size_t nc = d->cat ? d->cat * 2 : 16;
		struct dpos *v = realloc(d->at, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->at = v;
		d->cat = nc;
	}
	return 0;
}

/*
 * The next entry of a family of a row into d->cur, and the position after
 * it into d->cur_pos: ".", "..", then q for each newest version and q@ts for
 * the older ones, from a listing that reads no value, opened after the
 * position of the last entry given.  0 at the end, 1 with an entry.
 */
static int rowfam_next(struct fs *fs, struct fs_dir *d)
{
	const struct fs_node *n = d->node;
	const struct dpos *p;
	const struct tbl_column *c;
	struct fs_node t;
	struct stat st;
	int rc;

	rc = at_room(d);   /* room for the position of this entry once given */
	if (rc < 0)
		return rc;
	p = &d->at[d->nat - 1];
	memset(&t, 0, sizeof(t));
	memset(&d->cur_pos, 0, sizeof(d->cur_pos));
	if (p->phase < 2) {
		fill_dir(fs, p->phase == 0 ? n->ino : (n->parent ? n->parent : FUSE_ROOT_ID), &st);
		t.kind = n->kind;
		rc = dent_set(&d->cur, p->phase == 0 ? "." : "..", (size_t)p->phase + 1, &t);
		if (rc < 0) {
			dent_free(&d->cur);
			return rc;
		}
		d->cur.st = st;
		d->cur.plus = 0;
		d->cur_pos.phase = p->phase + 1;
		d->have_cur = 1;
		return 1;
	}
	if (d->cdone)
		return 0;
	if (!d->cols) {
		rc = tbl_columns_new(fs->db, NULL, n->table, n->row, n->row_len, n->family,
				     p->phase == 3 ? p->q : NULL, p->phase == 3 ? p->q_len : 0,
				     p->ts, TBL_COLUMNS_VERSIONS, &d->cols);
		if (rc == -ENOENT || rc == -EINVAL) {
			d->cdone = 1;   /* the family was dropped meanwhile: nothing to list */
			return 0;
		}
		if (rc < 0)
			return rc;
	}
	for (;;) {
		char name[FS_NAME_MAX + 1];
		size_t len;

		rc = tbl_columns_next(d->cols, &c);
		if (rc == 0) {
			tbl_columns_free(d->cols);
			d->cols = NULL;
			d->cdone = 1;
		}
		if (rc <= 0)
			return rc;
		rc = fs_name_version(c->qualifier, c->qualifier_len, c->newest ? 0 : c->ts, name,
				     &len);
		if (rc == -ENAMETOOLONG) {
			fuse_log(FUSE_LOG_WARNING, "smolfs: table %s: a qualifier of %zu bytes has "
				 "no name within NAME_MAX; not listed\n", n->table,
				 c->qualifier_len);
			continue;
		}
		if (rc < 0)
			return rc;
		t.kind = FS_CELL;
		t.table = n->table;
		t.family = n->family;
		t.row = n->row;
		t.row_len = n->row_len;
		t.qual = (void *)c->qualifier;
		t.qual_len = c->qualifier_len;
		t.ts = c->newest ? 0 : c->ts;
		fill_file(fs, fs_child_ino(fs, n->ino, name, len), c->text_size, c->ts, &st);
		d->cur_pos.q = malloc(c->qualifier_len ? c->qualifier_len : 1);
		if (!d->cur_pos.q)
			return -ENOMEM;
		memcpy(d->cur_pos.q, c->qualifier, c->qualifier_len);
		d->cur_pos.q_len = c->qualifier_len;
		d->cur_pos.ts = c->ts;
		d->cur_pos.phase = 3;
		rc = dent_set(&d->cur, name, len, &t);
		if (rc < 0) {
			dent_free(&d->cur);
			free(d->cur_pos.q);
			d->cur_pos.q = NULL;
			return rc;
		}
		d->cur.st = st;
		d->cur.plus = 1;
		d->have_cur = 1;
		return 1;
	}
}

static int dir_peek(struct fs *fs, struct fs_dir *d, struct dent **out);
static void dir_consume(struct fs_dir *d);

/* Close a table's scan and drop the entry not given (stream_pause's half). */
static void stream_pause(struct fs_dir *d)
{
	size_t i;

	if (d->scan)
		tbl_scan_free(d->scan);
	d->scan = NULL;
	free(d->srow);
	d->srow = NULL;
	d->sdone = 0;
	for (i = 0; i < d->ne; i++)
		free(d->erows[i]);
	free(d->erows);
	free(d->elens);
	d->erows = NULL;
	d->elens = NULL;
	d->ne = d->epos = 0;
	if (d->have_cur)
		dent_free(&d->cur);
	d->have_cur = 0;
	free(d->cur_pos.q);
	memset(&d->cur_pos, 0, sizeof(d->cur_pos));
}

/* Nothing held between replies: the next one resumes from at[]. */
static void dir_pause(struct fs_dir *d)
{
	if (d->node->kind == FS_ROWFAM)
		rowfam_pause(d);
	else
		stream_pause(d);
}

/*
 * Place a streamed listing (a family of a row, the rows of a table or
 * prefix) at offset off: after the entry given at that offset, by its key,
 * if at[] still holds it (the usual case, including a reply the kernel took
 * only in part, and a seekdir back to any of the last FS_DIR_WINDOW
 * entries), else from the start, counting.
 */
static int dir_seek(struct fs *fs, struct fs_dir *d, off_t off)
{
	struct dent *e;
	int rc;

	if (off > 0 && d->nat && off >= d->at_base && off < d->at_base + (off_t)d->nat) {
		dir_pause(d);
		at_keep(d, off);
		d->phase = d->at[d->nat - 1].phase;
		return 0;
	}
	dir_reset(d);
	d->at = calloc(16, sizeof(*d->at));
	if (!d->at)
		return -ENOMEM;
	d->cat = 16;
	d->nat = 1;   /* phase 0: before "." */
	while (d->next_off < off) {
		rc = dir_peek(fs, d, &e);
		if (rc <= 0)
			return rc;
		dir_consume(d);
	}
	return 0;
}

/* The next entry to give, in d->cur (streamed) or d->ents[d->pos]. */
static int dir_peek(struct fs *fs, struct fs_dir *d, struct dent **out)
{
	int rc;

	if (streamed(d->node->kind) || d->node->kind == FS_ROWFAM) {
		if (!d->have_cur) {
			rc = d->node->kind == FS_ROWFAM ? rowfam_next(fs, d) : stream_next(fs, d);
			if (rc <= 0)
				return rc;
		}
		*out = &d->cur;
		return 1;
	}
	if (!d->loaded) {
		rc = dir_load(fs, d);
		if (rc < 0)
			return rc;
	}
	if (d->pos == d->n)
		return 0;
	*out = &d->ents[d->pos];
	return 1;
}

static void dir_consume(struct fs_dir *d)
{
	if (d->node->kind == FS_ROWFAM || streamed(d->node->kind)) {
		/* rowfam_next or stream_next made room in at[] */
		d->at[d->nat++] = d->cur_pos;
		memset(&d->cur_pos, 0, sizeof(d->cur_pos));
		dent_free(&d->cur);
		d->have_cur = 0;
	} else {
		d->pos++;
	}
	d->next_off++;
}

/* ------------------------------------------------------------ open handles */

static void open_link(struct fs *fs, struct fs_open *o, int dir)
{
	o->dir = dir;
	pthread_mutex_lock(&fs->lock);
	o->prev = &fs->opens;
	o->next = fs->opens.next;
	o->next->prev = o;
	fs->opens.next = o;
	pthread_mutex_unlock(&fs->lock);
}

static void open_unlink(struct fs *fs, struct fs_open *o)
{
	pthread_mutex_lock(&fs->lock);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	pthread_mutex_unlock(&fs->lock);
}

static void dir_free(struct fs *fs, struct fs_dir *d)
{
	open_unlink(fs, &d->open);
	pthread_mutex_lock(&d->lock);   /* a readdir finishing after its reply */
	dir_reset(d);
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void handle_free(struct fs *fs, struct fs_handle *h);

void fs_handles_free(struct fs *fs)
{
	unsigned long files = 0, dirs = 0;

	if (!fs->opens.next)
		return;   /* fs_init never ran */
	for (;;) {
		struct fs_open *o;

		pthread_mutex_lock(&fs->lock);
		o = fs->opens.next;
		pthread_mutex_unlock(&fs->lock);
		if (o == &fs->opens)
			break;
		if (o->dir) {
			dir_free(fs, (struct fs_dir *)o);
			dirs++;
		} else {
			handle_free(fs, (struct fs_handle *)o);
			files++;
		}
	}
	if (files || dirs)
		fuse_log(FUSE_LOG_NOTICE, "smolfs: at exit, %lu files and %lu directories were "
			 "still open; writes not closed were not committed\n", files, dirs);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	struct fs_dir *d;
	struct stat st;
	int rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "opendir", NULL);
	if (!is_dir_kind(n->kind))
		return reply_err(req, -ENOTDIR, "opendir", n);
	rc = node_stat(fs, n, ino, &st);
	if (rc < 0)
		return reply_err(req, rc, "opendir", n);
	d = calloc(1, sizeof(*d));
	if (!d)
		return reply_err(req, -ENOMEM, "opendir", n);
	pthread_mutex_init(&d->lock, NULL);
	d->node = n;
	open_link(fs, &d->open, 1);
	fi->fh = (uint64_t)(uintptr_t)d;
	rc = fuse_reply_open(req, fi);
	if (rc < 0) {
		reply_failed("opendir", rc);
		dir_free(fs, d);
	}
}

/*
 * readdir and readdirplus.  Offsets count entries given so far; the handle
 * resumes after the last key it gave when the kernel asks for the offset
 * that follows (the usual case), so rows created or removed meanwhile are
 * neither skipped nor repeated.  Another offset (a seekdir) lists again from
 * the start and skips that many entries.
 */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct fs *fs = req_fs(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	struct fs_node **refs = NULL;
	size_t nrefs = 0, used = 0, i;
	char *buf;
	int rc = 0;

	request_pid = fuse_req_ctx(req)->pid;
	if (node_stale(fs, d->node))
		return reply_err(req, -ESTALE, "readdir", d->node);
	buf = malloc(size ? size : 1);
	if (!buf)
		return reply_err(req, -ENOMEM, "readdir", d->node);
	pthread_mutex_lock(&d->lock);
	if (d->node->kind == FS_ROWFAM || streamed(d->node->kind)) {
		rc = dir_seek(fs, d, off);
		if (rc < 0)
			goto out;
		rc = 0;
	} else if (off != d->next_off || off == 0) {
		dir_reset(d);
		while (d->next_off < off) {
			struct dent *e;

			rc = dir_peek(fs, d, &e);
			if (rc <= 0)
				break;
			dir_consume(d);
		}
		if (rc < 0)
			goto out;
		rc = 0;
	}
	refs = calloc(size / 24 + 1, sizeof(*refs));   /* an entry takes 24 bytes at least */
	if (!refs) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		struct dent *e;
		size_t need;

		rc = dir_peek(fs, d, &e);
		if (rc < 0) {
			if (used)   /* give what we have; the error comes with the next call */
				rc = 0;
			break;
		}
		if (rc == 0)
			break;
		if (plus) {
			struct fuse_entry_param ep;
			struct fs_node *n = NULL;

			memset(&ep, 0, sizeof(ep));
			ep.attr = e->st;
			if (e->plus) {
				n = node_ref_shown(fs, d->node, e->name, e->len, &e->t, &e->st);
				if (!n) {
					rc = used ? 0 : -ENOMEM;
					break;
				}
				fill_entry(fs, n, &e->st, &ep);
			}
			need = fuse_add_direntry_plus(req, buf + used, size - used, e->name, &ep,
						      d->next_off + 1);
			if (need > size - used) {
				if (n)   /* did not fit: the kernel never sees this lookup */
					fs_node_unref(fs, n, 1);
				break;
			}
			if (n)
				refs[nrefs++] = n;
		} else {
			need = fuse_add_direntry(req, buf + used, size - used, e->name, &e->st,
						 d->next_off + 1);
			if (need > size - used)
				break;
		}
		used += need;
		dir_consume(d);
	}
out:
	if (d->node->kind == FS_ROWFAM || streamed(d->node->kind))
		dir_pause(d);
	pthread_mutex_unlock(&d->lock);
	if (rc < 0) {
		reply_err(req, rc, "readdir", d->node);
	} else {
		rc = fuse_reply_buf(req, buf, used);
		if (rc < 0) {
			reply_failed("readdir", rc);
			for (i = 0; i < nrefs; i++)
				fs_node_unref(fs, refs[i], 1);
			/* the kernel did not get them: give them again */
			pthread_mutex_lock(&d->lock);
			d->next_off = -1;
			pthread_mutex_unlock(&d->lock);
		}
	}
	free(refs);
	free(buf);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 0);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 1);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dir_free(req_fs(req), (struct fs_dir *)(uintptr_t)fi->fh);
	reply_failed("releasedir", fuse_reply_err(req, 0));
}

/* ------------------------------------------------------------ mkdir, rmdir */

static void reply_new_entry(fuse_req_t req, struct fs_node *p, const char *name,
			    const struct fs_node *t, const char *op)
{
	struct fs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct fs_node *n;
	struct stat st;
	int rc;

	n = fs_node_ref(fs, p, name, strlen(name), t);
	if (!n)
		return reply_err(req, -ENOMEM, op, p);
	rc = node_stat(fs, n, n->ino, &st);
	if (rc < 0) {
		fs_node_unref(fs, n, 1);
		return reply_err(req, rc, op, p);
	}
	fill_entry(fs, n, &st, &e);
	rc = fuse_reply_entry(req, &e);
	if (rc < 0) {
		reply_failed(op, rc);
		fs_node_unref(fs, n, 1);
	}
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t;
	char scratch[FS_NAME_MAX + 1];
	struct tbl_family_settings s;
	struct stat st;
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "mkdir", NULL);
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "mkdir", p);
	rc = child_template(p, name, strlen(name), &t, scratch);
	if (rc == -ENOENT || (rc == 0 && !is_dir_kind(t.kind)) ||
	    (rc == 0 && (t.kind == FS_FAMILIES || t.kind == FS_PREFIXES || t.kind == FS_PREFIX)))
		rc = -EPERM;   /* no directory of that kind can be made there */
	if (rc < 0)
		return reply_err(req, rc, "mkdir", p);
	if (node_stat(fs, &t, 0, &st) == 0)
		return reply_err(req, -EEXIST, "mkdir", p);
	switch (t.kind) {
	case FS_TABLE:
		rc = tbl_create_table(fs->db, t.table);
		break;
	case FS_FAMDEF: {
		int i;

		tbl_family_settings_init(&s);
		rc = tbl_add_family(fs->db, t.table, t.family, &s);
		/*
		 * The process that made it does not see its settings files until
		 * it writes them (for ten seconds at most): cp -a and tar restore
		 * a schema by creating them with O_EXCL in the directory they just
		 * made.  Every other process sees them, with the defaults.
		 */
		request_pid = fuse_req_ctx(req)->pid;
		for (i = 0; rc == 0 && i < FS_ATTR_COUNT; i++)
			rc = scratch_put(fs, t.table, t.family, fs_attr_names[i], NULL, 0, 2);
		request_pid = 0;
		break;
	}
	case FS_ROW:
		if (t.row_len > TBL_MAX_ROW_KEY || t.row_len == 0) {
			rc = -ENAMETOOLONG;
			break;
		}
		rc = fs_empty_add(fs, t.table, t.row, t.row_len, NULL);
		break;
	case FS_ROWFAM:
		rc = tbl_get_family(fs->db, t.table, t.family, &s);
		if (rc == -ENOENT)
			rc = -EPERM;   /* families are declared in .families first */
		if (rc == 0)
			rc = fs_empty_add(fs, t.table, t.row, t.row_len, t.family);
		break;
	default:
		rc = -EPERM;
	}
	if (rc < 0)
		return reply_err(req, rc, "mkdir", p);
	reply_new_entry(req, p, name, &t, "mkdir");
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t;
	char scratch[FS_NAME_MAX + 1];
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "rmdir", NULL);
	request_pid = fuse_req_ctx(req)->pid;
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "rmdir", p);
	emptied_settle(fs);
	rc = child_template(p, name, strlen(name), &t, scratch);
	if (rc == -EINVAL)
		rc = -ENOENT;
	if (rc < 0)
		return reply_err(req, rc, "rmdir", p);
	switch (t.kind) {
	case FS_TABLE: {
		void **keys;
		size_t *lens, ne = 0, i;

		rc = table_has_rows(fs, t.table);
		if (rc == 0)
			rc = fs_empty_rows(fs, t.table, &keys, &lens, &ne);
		if (rc == 0) {
			for (i = 0; i < ne; i++)
				free(keys[i]);
			free(keys);
			free(lens);
			rc = ne ? 1 : 0;
		}
		if (rc > 0)
			rc = -ENOTEMPTY;
		if (rc == 0)   /* no rows: its families go with it */
			rc = tbl_drop_table(fs->db, t.table, 1);
		if (rc == 0) {
			fs_empty_drop(fs, t.table, NULL);
			scratch_remove(fs, t.table, NULL, NULL);
		}
		break;
	}
	case FS_FAMDEF: {
		/*
		 * Refused (ENOTEMPTY) while rows hold cells of the family, unless
		 * its five settings files were all unlinked first, as rm -r does:
		 * then the directory is empty and the family goes with its cells.
		 */
		int i, hidden = 0;

		for (i = 0; i < FS_ATTR_COUNT; i++)
			hidden += scratch_has(fs, t.table, t.family, fs_attr_names[i], 1, NULL);
		rc = tbl_drop_family(fs->db, t.table, t.family, hidden == FS_ATTR_COUNT);
		if (rc == 0) {
			fs_empty_drop(fs, t.table, t.family);
			scratch_remove(fs, t.table, t.family, NULL);
			fs_each_node(fs, FS_ROWFAM, t.table, t.family, NULL, 0, NULL, 0,
				     inval_entry_one, NULL);
		}
		break;
	}
	case FS_ROW:
		rc = row_has(fs, t.table, t.row, t.row_len, NULL);
		if (rc == 0) {
			rc = -ENOTEMPTY;
			break;
		}
		if (rc != -ENOENT)
			break;
		/*
		 * No cell is left (rm -r unlinked them): the directory goes, from
		 * memory if it was an empty one.  The kernel asks only for a name it
		 * holds, so a row emptied a moment ago is not ENOENT.
		 */
		fs_empty_remove(fs, t.table, t.row, t.row_len, NULL);
		rc = 0;
		break;
	case FS_ROWFAM:
		rc = row_has(fs, t.table, t.row, t.row_len, t.family);
		if (rc == 0) {
			rc = -ENOTEMPTY;
			break;
		}
		if (rc != -ENOENT)
			break;
		fs_empty_remove(fs, t.table, t.row, t.row_len, t.family);
		rc = 0;
		break;
	case FS_FAMILIES: {
		/* it stays (it is the schema); rm -rf of a table passes through it */
		char **names = NULL;
		size_t nn = 0;

		rc = tbl_list_families(fs->db, t.table, &names, &nn);
		if (rc == 0 && nn)
			rc = -ENOTEMPTY;
		tbl_free_names(names, nn);
		break;
	}
	case FS_PREFIXES:
	case FS_PREFIX:
	case FS_SMOLFS:
		rc = -EPERM;
		break;
	default:
		rc = -ENOTDIR;
	}
	if (rc < 0)
		return reply_err(req, rc, "rmdir", p);
	fs_name_removed(fs, parent, name, strlen(name));
	reply_failed("rmdir", fuse_reply_err(req, 0));
}

/* ------------------------------------------------------------ open files */

struct fs_handle {
	struct fs_open open;        /* first: fs.opens links it */
	pthread_mutex_t lock;
	struct fs_node *node;
	char *data;                 /* the file's text */
	size_t len, cap;
	int loaded;                 /* data holds the text (else read it at first use) */
	int dirty;                  /* changed since the last commit */
	int created;                /* an O_CREAT/O_TRUNC open: commit the empty value too */
	int failed;                 /* a write was refused: commit nothing */
	int writable;
	int paged;                  /* a reader through the page cache: counted in node.paged */
	int append;
	enum cell_type type;        /* the type the text is parsed as (CELL_INVALID: family's) */
	uint64_t stamp;             /* utimensat while dirty: the version's timestamp */
	uint64_t committed_ts;      /* the version this handle's last commit made */
	uint64_t shown_ts;          /* a cell's: the version of the text loaded (0: none) */
	int wrote;                  /* a write or ftruncate happened */
	size_t checked;             /* a string's text: data[0..checked) is whole UTF-8 */
	pid_t pid;                  /* the thread that opened it */
	int fresh;                  /* not used since the open (truncate_opened) */
	struct fs_handle *next_w;   /* the node's writable handles, under fs.lock */
};

static size_t max_text(struct fs *fs)
{
	size_t m = fs->cfg.max_value_size ? fs->cfg.max_value_size : TBL_DEFAULT_MAX_VALUE;

	return m + 1;   /* a string's text adds its newline */
}

/* The handle's buffer freed, and its charge given back. */
static void hbuf_free(struct fs *fs, struct fs_handle *h)
{
	mem_uncharge(fs, h->cap);
	free(h->data);
	h->data = NULL;
	h->len = h->cap = 0;
}

/* Room for need bytes of text in the handle's buffer, charged (mem_charge). */
static int hbuf_reserve(struct fs *fs, struct fs_handle *h, size_t need)
{
	char *p;
	size_t nc;

	if (need <= h->cap)
		return 0;
	nc = h->cap ? h->cap : 4096;
	while (nc < need)
		nc *= 2;
	if (nc > max_text(fs) && need <= max_text(fs))
		nc = max_text(fs);   /* no room beyond the largest text: it would be charged */
	if (mem_charge(fs, nc - h->cap) < 0)
		return -ENOMEM;
	p = realloc(h->data, nc);
	if (!p) {
		mem_uncharge(fs, nc - h->cap);
		return -ENOMEM;
	}
	h->data = p;
	h->cap = nc;
	return 0;
}

/*
 * Make data (malloc'd, cap bytes, len of them text) the handle's buffer, in
 * place of its own, charged; on -ENOMEM data is freed and the handle keeps
 * what it had.
 */
static int hbuf_adopt(struct fs *fs, struct fs_handle *h, char *data, size_t len, size_t cap)
{
	if (mem_charge(fs, cap) < 0) {
		free(data);
		return -ENOMEM;
	}
	hbuf_free(fs, h);
	h->data = data;
	h->len = len;
	h->cap = cap;
	return 0;
}

/* Read the file's current text into the handle. */
static int handle_load(struct fs *fs, struct fs_handle *h)
{
	struct fs_node *n = h->node;
	struct buf b = BUF_INIT;
	struct cellinfo ci;
	int rc;

	if (h->loaded)
		return 0;
	if ((n->kind == FS_FAMATTR && n->attr == FS_ATTR_SCRATCH) || n->kind == FS_TEMP) {
		char *data;
		size_t len;

		rc = n->kind == FS_TEMP ? temp_get(fs, n, n->name, &data, &len)
					: scratch_get(fs, n->table, n->family, n->name, &data, &len);
		if (rc < 0)
			return rc;
		rc = hbuf_adopt(fs, h, data, len, len);
		if (rc < 0)
			return rc;
		h->loaded = 1;
		return 0;
	}
	if (n->kind == FS_STATS) {
		char *data;
		size_t len;

		rc = stats_text(fs, &data, &len);
		if (rc < 0)
			return rc;
		rc = hbuf_adopt(fs, h, data, len, len);
		if (rc < 0)
			return rc;
		h->loaded = 1;
		return 0;
	}
	if (n->kind == FS_FAMATTR) {
		char text[128];
		size_t len;

		rc = famattr_text(fs, n->table, n->family, n->attr, text, sizeof(text), &len);
		if (rc < 0)
			return rc;
		rc = hbuf_reserve(fs, h, len);
		if (rc < 0)
			return rc;
		memcpy(h->data, text, len);
		h->len = len;
		h->loaded = 1;
		return 0;
	}
	rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len, n->ts,
		      &ci, &b);
	if (rc == -ENOENT && (h->created || node_unborn(fs, n, NULL))) {   /* not yet */
		h->len = 0;
		h->loaded = 1;
		return 0;
	}
	if (rc == 0) {
		/* the text read becomes the handle's buffer: a large value is not copied again */
		rc = hbuf_adopt(fs, h, b.data, b.len, b.cap);
		b.data = NULL;
		if (rc < 0)
			return rc;
		h->loaded = 1;
		h->shown_ts = ci.ts;
		if (h->type == CELL_INVALID)
			h->type = ci.type;
	}
	free(b.data);
	return rc;
}

/*
 * Under -o ro: which version a reader shows, without its text (a keys-only
 * look-up steps over a large value unread).  The kernel's pages of that
 * version may be kept (keep_cache), and then no read comes: the text is
 * loaded by the first read that does (handle_load), and no commit can come
 * between.
 */
static int handle_version(struct fs *fs, struct fs_handle *h)
{
	struct fs_node *n = h->node;
	struct cellinfo ci;
	int rc;

	rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len, n->ts,
		      &ci, NULL);
	if (rc < 0)
		return rc;
	h->shown_ts = ci.ts;
	if (h->type == CELL_INVALID)
		h->type = ci.type;
	return 0;
}

/* A writer's open that reserved n (open_handle) failed. */
static void node_opened(struct fs *fs, struct fs_node *n)
{
	pthread_mutex_lock(&fs->lock);
	n->opening--;
	pthread_mutex_unlock(&fs->lock);
}

/* Count a handle opened (add) or released on its node: writers listed, readers counted. */
static void node_track(struct fs *fs, struct fs_handle *h, int add)
{
	struct fs_node *n = h->node;

	struct fs_handle **p;

	pthread_mutex_lock(&fs->lock);
	if (!h->writable) {   /* a reader: counted for attr_timeout */
		if (add) {
			n->readers++;
		} else {
			n->readers--;
			if (h->paged)
				n->paged--;
		}
	} else if (add) {
		n->dirty_open++;
		if (n->kind == FS_CELL && n->opening)
			n->opening--;   /* open_handle's reservation, now in dirty_open */
		n->dirty_len = h->len;
		h->next_w = n->writers;
		n->writers = h;
	} else {
		n->dirty_open--;
		for (p = &n->writers; *p && *p != h; p = &(*p)->next_w)
			;
		if (*p)
			*p = h->next_w;
	}
	pthread_mutex_unlock(&fs->lock);
}

/* A handle's text changed: getattr reports its size until the commit. */
static void node_dirty(struct fs *fs, struct fs_handle *h)
{
	pthread_mutex_lock(&fs->lock);
	h->node->dirty_len = h->len;
	pthread_mutex_unlock(&fs->lock);
}


/*
 * Commit the handle's text as one row mutation: a new version of the cell
 * (or the version its name gives), parsed by its type.  Nothing if it is not
 * dirty; an empty text that the type cannot hold (a number) commits nothing.
 */
static int handle_commit_named(struct fs *fs, struct fs_handle *h, unsigned flags)
{
	struct fs_node *n = h->node;
	struct tbl_mutation m[2];
	enum cell_type t;
	uint64_t ts, used = 0;
	size_t nm = 0;
	int rc;

	memset(m, 0, sizeof(m));

	if (node_stale(fs, n)) {
		/* its table or family was dropped and made again: nothing goes to the new one */
		rc = h->dirty && !h->failed ? -ESTALE : 0;
		h->dirty = 0;
		return rc;
	}
	if (h->failed && h->committed_ts && n->kind == FS_CELL) {
		/*
		 * A write of this open was refused: the version its earlier commit
		 * made (the empty value of `>`'s first close) goes too, so the cell
		 * keeps the value it had before the open.
		 */
		memset(m, 0, sizeof(m));
		m[0].op = TBL_DELETE_VERSION;
		m[0].family = n->family;
		m[0].qualifier = n->qual;
		m[0].qualifier_len = n->qual_len;
		m[0].ts = h->committed_ts;
		rc = tbl_mutate_row(fs->db, n->table, n->row, n->row_len, m, 1,
				    flags | (fs->cfg.sync ? TBL_SYNC : 0), NULL);
		if (rc < 0)
			return rc;
		h->committed_ts = 0;
		inval_cell(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len);
	}
	/*
	 * And every close (and fsync) of that open answers the refusal again:
	 * the kernel hides it when one write(2) was split into requests and a
	 * later one was refused (the caller sees a short count), and a close
	 * that answered 0 would pass for a stored value.
	 */
	if (h->failed)
		return h->failed;
	if (!h->dirty)
		return 0;
	if (n->kind == FS_TEMP) {
		rc = temp_put(fs, n, n->name, h->data, h->len);
		if (rc == 0)
			h->dirty = 0;
		return rc;
	}
	if (n->kind == FS_FAMATTR && n->attr == FS_ATTR_SCRATCH) {
		rc = scratch_put(fs, n->table, n->family, n->name, h->data, h->len, 0);
		if (rc == 0)
			h->dirty = 0;
		return rc;
	}
	if (n->kind == FS_FAMATTR && h->len == 0)
		return 0;   /* an O_TRUNC open before its write: nothing to set yet */
	if (n->kind == FS_FAMATTR) {
		rc = famattr_set(fs, n->table, n->family, n->attr, h->data, h->len);
		if (rc == 0) {
			h->dirty = 0;
			h->loaded = 0;
			if (n->attr == FS_ATTR_MAX_VERSIONS || n->attr == FS_ATTR_TTL)
				fs_each_node(fs, FS_CELL, n->table, n->family, NULL, 0, NULL, 0,
					     inval_version_one, NULL);
			/*
			 * Never invalidated here, under the handle's lock: the kernel
			 * waits for the pages that a read of this handle holds, and
			 * that read waits for the lock (a read and a close of one
			 * open file at once hung both).  A flush does it after
			 * unlocking, before it replies; anything else queues it.
			 */
			if (n->ino == inval_sync_ino)
				inval_sync_due = 1;
			else
				fs_notify_inode(fs, n->ino);
		}
		return rc;
	}
	t = h->type;
	if (t == CELL_INVALID) {
		struct tbl_family_settings s;

		rc = tbl_get_family(fs->db, n->table, n->family, &s);
		if (rc < 0)
			return rc;
		t = s.type;
	}
	if (h->len == 0 && t != CELL_STRING && t != CELL_BYTES) {
		h->dirty = 0;   /* nothing a number can hold: the old value stays */
		return 0;
	}
	rc = cell_parse(t, slice_make(h->data, h->len), &m[nm].value);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	ts = n->ts ? n->ts : h->stamp ? h->stamp : TBL_TS_NOW;
	pthread_mutex_unlock(&fs->lock);
	/*
	 * A second commit of one open file (a descriptor dup'ed and closed
	 * twice, as the shell's `>` does) replaces the version its first commit
	 * made, so one open and its writes make one version.
	 */
	if (h->committed_ts && h->committed_ts != ts) {
		m[1] = m[0];
		m[0].op = TBL_DELETE_VERSION;
		m[0].ts = h->committed_ts;
		nm = 1;
	}
	m[nm].op = TBL_SET;
	m[nm].family = n->family;
	m[nm].qualifier = n->qual;
	m[nm].qualifier_len = n->qual_len;
	m[nm].ts = ts;
	m[0].family = n->family;
	m[0].qualifier = n->qual;
	m[0].qualifier_len = n->qual_len;
	rc = tbl_mutate_row(fs->db, n->table, n->row, n->row_len, m, nm + 1,
			    flags | (fs->cfg.sync ? TBL_SYNC : 0), &used);
	if (rc < 0)
		return rc;
	h->committed_ts = ts == TBL_TS_NOW ? used : ts;
	if (n->ts)
		recent_add(fs, n);
	pthread_mutex_lock(&fs->lock);
	n->pending = 0;
	pthread_mutex_unlock(&fs->lock);
	h->dirty = 0;
	h->created = 0;
	pthread_mutex_lock(&fs->lock);
	h->stamp = h->committed_ts;
	pthread_mutex_unlock(&fs->lock);
	fs_empty_remove(fs, n->table, n->row, n->row_len, n->family);
	fs_empty_remove(fs, n->table, n->row, n->row_len, NULL);
	/* what the kernel caches of this inode (text as written, size) is stale now */
	pthread_mutex_lock(&fs->lock);
	n->cached_ts = 0;
	pthread_mutex_unlock(&fs->lock);
	inval_versions(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len);
	return 0;
}

/*
 * The node's names stay those of its data throughout: a rename of the cell
 * meanwhile comes before or after (fs.move_lock).  Without it a commit
 * between a rename's row mutation and the node's new name wrote the text
 * under the name the cell had just left.
 */
static int handle_commit(struct fs *fs, struct fs_handle *h, unsigned flags)
{
	int rc;

	pthread_rwlock_rdlock(&fs->move_lock);
	rc = handle_commit_named(fs, h, flags);
	pthread_rwlock_unlock(&fs->move_lock);
	return rc;
}

/*
 * Hand a setting to the handles of n that are open for writing with unsaved
 * text, so that their commit uses it: a type (setxattr user.smolfs.type; the
 * commit parses by it) or a timestamp (utimensat; the commit takes it as the
 * version's), each when cp -a, tar or touch set it before close.  NULL
 * leaves that setting alone.  1 if a handle took it.
 */
static int writers_take(struct fs *fs, struct fs_node *n, const enum cell_type *type,
			const uint64_t *stamp)
{
	struct fs_handle *h;
	int took = 0;

	pthread_mutex_lock(&fs->lock);
	for (h = n->writers; h; h = h->next_w) {
		if (!h->dirty)
			continue;
		if (type)
			h->type = *type;
		if (stamp)
			h->stamp = *stamp;
		took = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	return took;
}

/*
 * An O_TRUNC or O_CREAT open: the handle's text starts empty and its flush
 * commits (the empty value too, where the type allows it).  Only the
 * handle changes: other readers keep the committed value until that commit.
 */
static void handle_truncate_open(struct fs_handle *h)
{
	h->loaded = 1;
	h->len = 0;
	h->checked = 0;
	h->dirty = 1;
	h->created = 1;
}

/* The handle served a request: a later setattr is not its open's O_TRUNC (truncate_opened). */
static void handle_used(struct fs_handle *h)
{
	if (__atomic_load_n(&h->fresh, __ATOMIC_RELAXED))
		__atomic_store_n(&h->fresh, 0, __ATOMIC_RELAXED);
}

static int open_handle(struct fs *fs, struct fs_node *n, int flags, int created,
		       struct fs_handle **out)
{
	struct fs_handle *h = calloc(1, sizeof(*h));
	int acc = flags & O_ACCMODE, rc, reserved = 0;

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->node = n;
	h->writable = acc != O_RDONLY;
	h->append = !!(flags & O_APPEND);
	h->created = created;
	pthread_mutex_lock(&fs->lock);
	h->type = (enum cell_type)n->pending_type;   /* mknod then setxattr (tar --xattrs) */
	if (n->opens < UINT_MAX)   /* 1 means this is the first */
		n->opens++;
	pthread_mutex_unlock(&fs->lock);
	h->pid = request_pid;
	h->fresh = 1;
	if (h->writable && n->kind == FS_CELL) {
		/* a writer never opens a sealed node ("Readers and the page cache") */
		pthread_mutex_lock(&fs->lock);
		fs_node_came(fs, n, request_pid);
		if (unseal(fs, n, request_pid)) {
			pthread_mutex_unlock(&fs->lock);
			rc = -ESTALE;
			goto fail;
		}
		n->opening++;   /* no reader seals it from now on */
		pthread_mutex_unlock(&fs->lock);
		reserved = 1;
	}
	if (h->writable && (flags & O_TRUNC || created)) {
		/* the type the text will be parsed as: the existing cell's */
		if (n->kind == FS_CELL) {
			struct cellinfo ci;

			rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual,
				      n->qual_len, n->ts, &ci, NULL);
			if (rc == 0) {
				h->type = ci.type;
			} else if (rc != -ENOENT) {
				goto fail;
			}
		}
		handle_truncate_open(h);
	} else if (h->writable) {
		rc = handle_load(fs, h);
		if (rc < 0)
			goto fail;
	}   /* a reader's text is loaded by fs_open, once it knows the node exists */
	node_track(fs, h, 1);
	open_link(fs, &h->open, 0);
	*out = h;
	return 0;
fail:
	if (reserved)
		node_opened(fs, n);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return rc;
}

static void handle_free(struct fs *fs, struct fs_handle *h)
{
	/*
	 * The kernel sends release once it has every reply for the handle, but
	 * a read replies while holding h->lock (the reply copies h->data): wait
	 * for it to let go.
	 */
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
	open_unlink(fs, &h->open);
	node_track(fs, h, 0);
	pthread_mutex_destroy(&h->lock);
	hbuf_free(fs, h);
	free(h);
}

enum { PAGED_NO, PAGED_SEALED, PAGED_KEPT };

/*
 * May a reader's open seal n?  Its handle is the only one open, nothing is
 * being written, no retry is awaited on the name, and no queued inode
 * invalidation is still to reach the kernel (one landing after the seal's
 * own would make the kernel drop the size the first read asks for).  Under
 * fs.lock.
 */
static int sealable(const struct fs *fs, const struct fs_node *n, const struct fs_handle *h)
{
	return !fs->cfg.singlethread && !n->detached && !n->touched && !n->pending &&
	       !n->opening && !n->dirty_open && !n->paged && n->readers == 1 && h->shown_ts &&
	       !__atomic_load_n(&fs->inode_notices, __ATOMIC_SEQ_CST) && !fs_node_due(fs, n);
}

/*
 * A reader's open of cell node n, its text loaded in h: through the page
 * cache (*paged: PAGED_SEALED when this open seals n, PAGED_KEPT when n is
 * sealed with this text) or directly (PAGED_NO).  A node sealed with
 * another text (or retired) is unsealed when no reader holds its pages;
 * while one does, the open answers -ESTALE and retires it, so that the
 * kernel looks the name up again: a direct reader of a sealed inode could
 * fill its pages with another text through a private mmap ("Readers and
 * the page cache").  One with the sealed text reads directly until the
 * sealing open's invalidation is done.
 */
static int paged_open(struct fs *fs, struct fs_node *n, struct fs_handle *h, int *paged)
{
	uint64_t hash;
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	hash = text_hash(h->data, h->len);
	pthread_mutex_unlock(&h->lock);
	*paged = PAGED_NO;
	pthread_mutex_lock(&fs->lock);
	fs_node_came(fs, n, request_pid);
	if (n->sealed && !n->detached && h->shown_ts == n->seal_ts && h->len == n->seal_len &&
	    hash == n->seal_hash) {
		if (n->seal_ready)
			*paged = PAGED_KEPT;
	} else if (n->sealed && unseal(fs, n, request_pid)) {
		rc = -ESTALE;
	} else if (sealable(fs, n, h)) {
		n->seal_ts = h->shown_ts;
		n->seal_len = h->len;
		n->seal_hash = hash;
		n->sealed = 1;
		n->seal_ready = 0;   /* until fs_open's invalidation is done */
		*paged = PAGED_SEALED;
	}
	if (*paged != PAGED_NO) {
		h->paged = 1;
		n->paged++;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* The sealing open's invalidation is done (ok), or failed: the seal is undone. */
static void seal_done(struct fs *fs, struct fs_node *n, struct fs_handle *h, int ok)
{
	pthread_mutex_lock(&fs->lock);
	if (ok) {
		n->seal_ready = 1;
	} else {
		n->sealed = 0;
		n->paged--;
		h->paged = 0;
	}
	pthread_mutex_unlock(&fs->lock);
}

/*
 * Readers and the kernel's cache.  The kernel keeps one size and one set of
 * pages per inode, and bounds every read through its page cache by that
 * size: a reply shorter than the size is padded with zeros up to it unless
 * the kernel can shrink the size, which it does not when the inode's
 * attributes changed while the read was in flight (a commit's
 * invalidation, a getattr's reply, a writer's write); a reply longer than
 * the size is cut at it.  And the size moves under a reader's feet: a
 * writer's write past it grows it (the kernel does so itself), a commit's
 * invalidation drops it, a stat by another process sets the newest.  A
 * reader whose read met any of these while the cell changed read the new
 * shorter value padded with zeros, the first bytes of a longer one, or one
 * value's pages up to another's length.
 *
 * So a reader holds the text of the version it opened, loaded at the open
 * (a change after it is not seen through that descriptor: a whole value,
 * as mv gives on any filesystem).  It reads it through the page cache when
 * the node is sealed with that text ("Readers and the page cache"), else
 * directly (direct_io): each read is cut from that text by the daemon, and
 * the kernel neither caches it nor bounds it by a size that another version
 * set.  The getattr the kernel sends with the handle (lseek to the end)
 * answers that text's length (a sealed node's: its text), valid for no
 * time, since it may not be the newest (reader_stat).  On a read-only
 * mount no value changes, and readers keep the page cache (keep_cache
 * while its pages hold the version opened); an
 * open there looks up the version only, and the text waits for the first
 * read that reaches the daemon, so a cat served from kept pages reads nothing.
 */
static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	struct fs_handle *h;
	uint64_t shown;
	int rc, paged;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "open", NULL);
	req_counted(fs, FS_REQ_OPEN);
	request_pid = fuse_req_ctx(req)->pid;
	if (is_dir_kind(n->kind))
		return reply_err(req, -EISDIR, "open", n);
	if (fs->cfg.ro && (fi->flags & O_ACCMODE) != O_RDONLY)
		return reply_err(req, -EROFS, "open", n);
	if (n->kind == FS_STATS && (fi->flags & O_ACCMODE) != O_RDONLY)
		return reply_err(req, -EACCES, "open", n);
	rc = open_handle(fs, n, fi->flags, 0, &h);
	if (rc == -ENOENT && node_unborn(fs, n, NULL))
		rc = open_handle(fs, n, fi->flags, 1, &h);   /* created, not committed yet */
	if (rc < 0)
		return reply_err(req, rc, "open", n);
	/*
	 * keep_cache when the kernel's pages hold the version this open shows;
	 * every change made through the mount invalidates them (cached_ts = 0).
	 */
	shown = 0;
	if (!h->writable) {   /* it must exist: its text, from now to its close */
		struct stat st;

		rc = n->kind == FS_CELL ? 0 : node_stat(fs, n, ino, &st);
		if (rc == 0 && fs->cfg.ro && n->kind == FS_CELL)
			rc = handle_version(fs, h);   /* no value changes: the text waits for a read */
		else if (rc == 0)
			rc = handle_load(fs, h);   /* a cell created, not committed: empty */
		if (rc < 0) {
			handle_free(fs, h);
			return reply_err(req, rc, "open", n);
		}
		shown = h->shown_ts;
	}
	paged = PAGED_NO;
	if (!h->writable && !fs->cfg.ro && n->kind == FS_CELL) {
		rc = paged_open(fs, n, h, &paged);
		if (rc < 0) {
			handle_free(fs, h);
			return reply_err(req, rc, "open", n);
		}
		if (paged == PAGED_SEALED) {
			int known;

			/*
			 * Whatever the kernel holds of the inode goes before
			 * the reply: pages of another text (a private
			 * mapping's), and a size that another text gave it.
			 * The first read asks for the size with this handle
			 * (auto_inval_data) and reads this text's pages.
			 * Unless the inode was never opened (no page) and
			 * every reply gave it this text's attributes (a cold
			 * cat: then its first read needs no getattr).
			 */
			pthread_mutex_lock(&fs->lock);
			known = n->opens == 1 && n->shown_any && !n->shown_mixed &&
				n->shown_ts == h->shown_ts && n->shown_len == h->len;
			pthread_mutex_unlock(&fs->lock);
			rc = known ? 0 : fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
			if (rc < 0 && rc != -ENOENT) {
				fuse_log(FUSE_LOG_ERR, "smolfs: invalidating inode %llu: %s; "
					 "read directly\n", (unsigned long long)ino, strerror(-rc));
				paged = PAGED_NO;
			}
			seal_done(fs, n, h, paged == PAGED_SEALED);
		}
	}
	pthread_mutex_lock(&fs->lock);
	if (!h->writable && !fs->cfg.ro) {
		/* "Readers and the kernel's cache" above, and "Readers and the page cache" */
		fi->direct_io = paged == PAGED_NO;
		fi->keep_cache = paged == PAGED_KEPT;
		shown = 0;
	} else {
		/* read-only: a value never changes, and its pages may be kept */
		fi->keep_cache = shown && n->cached_ts == shown;
	}
	n->cached_ts = shown;
	pthread_mutex_unlock(&fs->lock);
	if (fi->keep_cache && n->kind == FS_CELL)   /* PAGED_KEPT, or -o ro's rule */
		req_counted(fs, FS_REQ_PAGED);
	if (n->kind == FS_STATS)
		fi->direct_io = 1;   /* made at the open: its size may differ from stat's */
	if (!h->writable)
		fi->noflush = 1;   /* nothing to commit at close */
	else if (n->kind == FS_CELL)
		/*
		 * A writer reads and writes its own text, past the size the kernel
		 * knows, which stays the committed value's for every other reader
		 * (getattr answers it) until the commit.
		 */
		fi->direct_io = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	rc = fuse_reply_open(req, fi);
	if (rc < 0) {
		reply_failed("open", rc);
		handle_free(fs, h);
	}
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t, *n;
	char scratch[FS_NAME_MAX + 1];
	struct fuse_entry_param e;
	struct fs_handle *h;
	struct stat st;
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "create", NULL);
	request_pid = fuse_req_ctx(req)->pid;
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "create", p);
	if (!S_ISREG(mode))
		return reply_err(req, -EPERM, "create", p);
	if (p->kind != FS_ROWFAM && p->kind != FS_FAMDEF)
		return reply_err(req, -EPERM, "create", p);   /* cells live in row/family/ */
	rc = child_template(p, name, strlen(name), &t, scratch);
	if (rc < 0)
		return reply_err(req, rc, "create", p);
	if (t.kind == FS_FAMATTR) {
		struct tbl_family_settings s;

		rc = tbl_get_family(fs->db, t.table, t.family, &s);
		if (rc == 0 && t.attr == FS_ATTR_SCRATCH) {   /* a tool's temporary file */
			if ((fi->flags & O_EXCL) && node_stat(fs, &t, 0, &st) == 0)
				rc = -EEXIST;
			else
				rc = scratch_put(fs, t.table, t.family, t.name, NULL, 0, 0);
		} else if (rc == 0) {   /* a setting, written anew (unhidden if unlinked) */
			if ((fi->flags & O_EXCL) && node_stat(fs, &t, 0, &st) == 0)
				rc = -EEXIST;
			else
				scratch_remove(fs, t.table, t.family, t.name);
		}
		if (rc < 0)
			return reply_err(req, rc, "create", p);
	}
	if (t.kind == FS_TEMP) {
		rc = (fi->flags & O_EXCL) && temp_stat(fs, &t, t.name, NULL, NULL, NULL) == 0
			     ? -EEXIST : temp_put(fs, &t, t.name, NULL, 0);
		if (rc < 0)
			return reply_err(req, rc, "create", p);
	}
	if (t.kind == FS_CELL) {
		struct tbl_family_settings s;

		if (t.ts == 0 && fs->recent)
			recent_forget(fs, &t);
		rc = tbl_get_family(fs->db, t.table, t.family, &s);
		/* O_EXCL was the kernel's to check, on the lookup it made */
		if (rc == 0 && t.qual_len > TBL_MAX_QUALIFIER)
			rc = -ENAMETOOLONG;
		if (rc < 0)
			return reply_err(req, rc, "create", p);
	}
	n = fs_node_ref(fs, p, name, strlen(name), &t);
	if (!n)
		return reply_err(req, -ENOMEM, "create", p);
	rc = open_handle(fs, n, fi->flags | O_CREAT, 1, &h);
	if (rc < 0) {
		fs_node_unref(fs, n, 1);
		return reply_err(req, rc, "create", p);
	}
	rc = node_stat(fs, n, n->ino, &st);
	if (rc < 0) {
		handle_free(fs, h);
		fs_node_unref(fs, n, 1);
		return reply_err(req, rc, "create", p);
	}
	pthread_mutex_lock(&fs->lock);
	n->cached_ts = 0;
	pthread_mutex_unlock(&fs->lock);
	fill_entry(fs, n, &st, &e);
	fi->fh = (uint64_t)(uintptr_t)h;
	if (n->kind == FS_CELL)
		fi->direct_io = 1;   /* as fs_open says for writers */
	rc = fuse_reply_create(req, &e, fi);
	if (rc < 0) {
		reply_failed("create", rc);
		handle_free(fs, h);
		fs_node_unref(fs, n, 1);
	}
}

/*
 * A getattr sent with a reader's handle (FUSE_GETATTR_FH: lseek to the end,
 * or a read through the page cache past the size the kernel knows): the
 * length and time of the text that handle reads, so that the size agrees
 * with what it reads ("Readers and the kernel's cache").  0 if the handle
 * is not a reader of a cell of node n (node_stat answers), 2 if n is sealed
 * (the sealed text's, which is the same for every reader), else 1.
 */
static int reader_stat(struct fs *fs, struct fs_node *n, uint64_t ino, struct fuse_file_info *fi,
		       struct stat *st)
{
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	uint64_t ts;
	size_t len;
	int loaded, sealed;

	if (!h || h->node != n || n->kind != FS_CELL || h->writable)
		return 0;
	pthread_mutex_lock(&h->lock);
	len = h->len;   /* a reader's text is loaded at its open (-o ro: its first read) */
	loaded = h->loaded;
	pthread_mutex_unlock(&h->lock);
	if (!loaded)
		return 0;
	/* a sealed inode's size is its sealed text's, for every reader */
	ts = h->shown_ts;
	pthread_mutex_lock(&fs->lock);
	sealed = n->sealed;
	if (sealed) {   /* a sealed inode's size is its sealed text's, for every reader */
		len = n->seal_len;
		ts = n->seal_ts;
	}
	pthread_mutex_unlock(&fs->lock);
	fill_file(fs, ino, len, ts, st);
	return sealed ? 2 : 1;
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	int rc;

	handle_used(h);
	req_counted(fs, FS_REQ_READ);
	if (node_stale(fs, h->node))
		return reply_err(req, -ESTALE, "read", h->node);
	pthread_mutex_lock(&h->lock);
	rc = handle_load(fs, h);
	if (rc < 0) {
		pthread_mutex_unlock(&h->lock);
		return reply_err(req, rc, "read", h->node);
	}
	if (off < 0 || (size_t)off >= h->len)
		size = 0;
	else if (size > h->len - (size_t)off)
		size = h->len - (size_t)off;
	rc = fuse_reply_buf(req, size ? h->data + off : NULL, size);
	pthread_mutex_unlock(&h->lock);
	reply_failed("read", rc);
}

/*
 * Can text that begins with p[0..n) still become a valid value of type t?
 * Checked at each write that extends the text, so that `echo abc > i64cell`
 * fails in write(); what only the whole text can tell waits for close().
 */
static int prefix_may_parse(enum cell_type t, const char *p, size_t n)
{
	size_t i = 0;

	switch (t) {
	case CELL_BYTE:
	case CELL_I32:
	case CELL_I64:
		while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r')))
			i++;
		if (i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		while (i < n && p[i] >= '0' && p[i] <= '9')
			i++;
		while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r')))
			i++;
		return i == n;
	case CELL_STRING:
		while (i < n) {
			int c = cell_utf8_char(p + i, n - i);

			if (c > 0) {
				i += (size_t)c;
				continue;
			}
			/* a sequence cut at the end may be completed by the next write */
			return n - i < 4 && (unsigned char)p[i] >= 0xC2 &&
			       (unsigned char)p[i] <= 0xF4;
		}
		return 1;
	default:
		return 1;
	}
}

/* The same for a family setting's text. */
static int attr_may_parse(int attr, const char *p, size_t n)
{
	static const char *const words[] = { "string", "bytes", "boolean", "byte", "i32", "i64",
					     "f32", "f64", "none" };
	size_t i, b = 0, e;

	while (b < n && (p[b] == ' ' || p[b] == '\t' || p[b] == '\n'))
		b++;
	e = b;
	while (e < n && p[e] != ' ' && p[e] != '\t' && p[e] != '\n')
		e++;
	for (i = e; i < n; i++)   /* one word, then only whitespace */
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n')
			return 0;
	switch (attr) {
	case FS_ATTR_MAX_VERSIONS:
	case FS_ATTR_TTL:
	case FS_ATTR_COMPRESSION:
		for (i = b; i < e; i++)
			if (p[i] < '0' || p[i] > '9')
				break;
		if (i == e)
			return 1;
		if (attr != FS_ATTR_COMPRESSION)
			return 0;
		return e - b <= 4 && !memcmp(p + b, "none", e - b);
	case FS_ATTR_TYPE:
		for (i = 0; i < 8; i++)
			if (e - b <= strlen(words[i]) && !memcmp(p + b, words[i], e - b))
				return 1;
		return 0;
	default:
		return 1;
	}
}

static void fs_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	size_t end, old_len;
	enum cell_type t;
	int rc;

	handle_used(h);
	if (node_stale(fs, h->node))
		return reply_err(req, -ESTALE, "write", h->node);
	pthread_mutex_lock(&h->lock);
	rc = handle_load(fs, h);
	if (rc < 0)
		goto fail;
	if (h->append)
		off = (off_t)h->len;
	if (off < 0) {
		rc = -EINVAL;
		goto fail;
	}
	t = h->type;
	if (t == CELL_INVALID && h->node->kind == FS_CELL) {
		struct tbl_family_settings s;

		if (tbl_get_family(fs->db, h->node->table, h->node->family, &s) == 0)
			t = s.type;
	}
	end = (size_t)off + size;
	/* a bytes cell's text is its value; a string's adds a newline */
	if (end > max_text(fs) - (h->node->kind == FS_CELL && t == CELL_BYTES) || end < size) {
		rc = -EFBIG;
		h->failed = rc;   /* this open commits nothing: the old value stays */
		goto fail;
	}
	rc = hbuf_reserve(fs, h, end);
	if (rc < 0) {
		h->failed = rc;   /* a value cut short is never committed */
		goto fail;
	}
	old_len = h->len;
	if ((size_t)off > h->len)
		memset(h->data + h->len, 0, (size_t)off - h->len);
	memcpy(h->data + off, data, size);
	if (end > h->len)
		h->len = end;
	if ((size_t)off < h->checked)
		h->checked = (size_t)off;   /* earlier bytes changed: check again from there */
	if (end >= old_len && h->node->kind == FS_CELL && t == CELL_STRING) {
		/* UTF-8 from the first byte not known good: each byte is checked once */
		size_t i = h->checked;

		while (i < h->len) {
			int c = cell_utf8_char(h->data + i, h->len - i);

			if (c <= 0)
				break;
			i += (size_t)c;
		}
		h->checked = i;
	}
	if (end >= old_len &&
	    ((h->node->kind == FS_CELL && t == CELL_STRING &&
	      !prefix_may_parse(t, h->data + h->checked, h->len - h->checked)) ||
	     (h->node->kind == FS_CELL && t != CELL_STRING &&
	      (h->len > 128 ? t != CELL_BYTES : !prefix_may_parse(t, h->data, h->len))) ||
	     (h->node->kind == FS_FAMATTR && h->node->attr != FS_ATTR_SCRATCH &&
	      !attr_may_parse(h->node->attr, h->data, h->len)))) {
		/* never valid: refuse the write and keep the old value */
		h->len = old_len;
		if (h->checked > old_len)
			h->checked = old_len;
		h->failed = -EINVAL;
		rc = -EINVAL;
		goto fail;
	}
	h->dirty = 1;
	h->wrote = 1;
	node_dirty(fs, h);
	pthread_mutex_unlock(&h->lock);
	reply_failed("write", fuse_reply_write(req, size));
	return;
fail:
	pthread_mutex_unlock(&h->lock);
	reply_err(req, rc, "write", h->node);
}

/*
 * A cell created by an open whose commit failed (an I/O error, a full disk)
 * does not exist, but the kernel made a name for it at the create: it must
 * forget that name before close() returns, or the next open(O_CREAT) of it
 * finds the name, skips the create and gets ENOENT until the entry times
 * out.  If the cell does exist (an O_TRUNC open of a cell committed
 * before), the next lookup finds it again.
 */
static void forget_unborn(struct fs *fs, struct fs_node *n)
{
	uint64_t parent;
	char *name;
	size_t len;
	int rc;

	pthread_mutex_lock(&fs->lock);
	parent = n->parent;
	len = n->name_len;
	name = malloc(len + 1);
	if (name) {
		memcpy(name, n->name, len);
		name[len] = '\0';
	}
	pthread_mutex_unlock(&fs->lock);
	if (!name || fs->cfg.singlethread) {
		/* queued: the only thread that serves must not wait for the kernel */
		if (!name)
			fuse_log(FUSE_LOG_ERR, "smolfs: out of memory forgetting a failed create\n");
		else
			fs_notify_entry(fs, parent, name, len);
		free(name);
		return;
	}
	rc = fuse_lowlevel_notify_inval_entry(fs->se, parent, name, len);
	if (rc < 0 && rc != -ENOENT)
		fs_notify_entry(fs, parent, name, len);   /* late rather than never */
	free(name);
}

static void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	uint64_t committed;
	int rc, unborn;

	request_pid = fuse_req_ctx(req)->pid;
	handle_used(h);
	pthread_mutex_lock(&h->lock);
	committed = h->committed_ts;
	if (h->node->kind == FS_CELL || h->node->kind == FS_FAMATTR)
		inval_sync_ino = ino;
	inval_sync_due = 0;
	rc = handle_commit(fs, h, 0);
	inval_sync_ino = 0;
	unborn = rc < 0 && h->node->kind == FS_CELL && h->created && !h->committed_ts;
	committed = committed != h->committed_ts || inval_sync_due;
	pthread_mutex_unlock(&h->lock);
	if (rc < 0) {
		if (inval_sync_due)
			fs_notify_inode(fs, ino);
		if (unborn)
			forget_unborn(fs, h->node);
		return reply_err(req, rc, "flush", h->node);
	}
	/*
	 * What the closing process stats next must be the commit: its own
	 * inode is invalidated before close() returns (the kernel holds no
	 * lock of it during a flush); its other names follow from the queue,
	 * which leaves this one out (inval_sync_ino).
	 */
	if (committed && (h->node->kind == FS_CELL || h->node->kind == FS_FAMATTR)) {
		rc = inval_now(fs, ino);
		if (rc < 0 && rc != -ENOENT) {
			fuse_log(FUSE_LOG_WARNING, "smolfs: flush %s: invalidation: %s\n",
				 node_label(h->node), strerror(-rc));
			fs_notify_inode(fs, ino);   /* late rather than never */
		}
	}
	reply_failed("flush", fuse_reply_err(req, 0));
}

/* Make everything committed durable. */
static int sync_log(struct fs *fs)
{
	return tbl_sync(fs->db);
}

static void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	int rc;

	request_pid = fuse_req_ctx(req)->pid;
	handle_used(h);
	pthread_mutex_lock(&h->lock);
	rc = handle_commit(fs, h, TBL_SYNC);
	pthread_mutex_unlock(&h->lock);
	if (rc == 0)
		rc = sync_log(fs);
	if (rc < 0)
		return reply_err(req, rc, "fsync", h->node);
	reply_failed("fsync", fuse_reply_err(req, 0));
}

static void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_handle *h = (struct fs_handle *)(uintptr_t)fi->fh;
	int rc;

	(void)rc;
	handle_free(fs, h);   /* flush committed (a failed flush told close()) */
	reply_failed("release", fuse_reply_err(req, 0));
}

static void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int rc = sync_log(req_fs(req));

	if (rc < 0)
		return reply_err(req, rc, "fsyncdir", NULL);
	reply_failed("fsyncdir", fuse_reply_err(req, 0));
}

/* ------------------------------------------------------------ setattr */

/* A cell's newest version, moved to timestamp ts (utimensat): one row mutation. */
static int restamp(struct fs *fs, struct fs_node *n, uint64_t ts)
{
	struct buf text = BUF_INIT;
	struct tbl_mutation m[3];
	struct cellinfo ci;
	int rc;

	pthread_rwlock_rdlock(&fs->move_lock);   /* n keeps its data's names */
	rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len, 0, &ci,
		      &text);
	if (rc < 0 || ci.ts == ts)
		goto out;
	/*
	 * The version moves to ts and stays the newest: versions at ts or
	 * later go (else an older version, or one GC hid, would show).
	 */
	memset(m, 0, sizeof(m));
	m[0].op = TBL_DELETE_VERSION;
	m[0].family = n->family;
	m[0].qualifier = n->qual;
	m[0].qualifier_len = n->qual_len;
	m[0].ts = ci.ts;
	m[1] = m[0];
	m[1].op = TBL_DELETE_VERSIONS;
	m[1].ts = ts;
	m[1].ts_end = UINT64_MAX;
	m[2] = m[0];
	m[2].op = TBL_SET;
	m[2].ts = ts;
	rc = cell_parse(ci.type, slice_make(text.data, text.len), &m[2].value);
	if (rc < 0) {
		rc = -EUCLEAN;
		goto out;
	}
	rc = tbl_mutate_row(fs->db, n->table, n->row, n->row_len, m, 3,
			    fs->cfg.sync ? TBL_SYNC : 0, NULL);
	if (rc == 0)
		inval_versions(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len);
out:
	pthread_rwlock_unlock(&fs->move_lock);
	free(text.data);
	return rc;
}

/*
 * Truncate the text of the writable handle of n that the thread pid has
 * just opened and not used yet; 0 if there is none.  The daemon does not ask for atomic_o_trunc: with it the
 * kernel sets the inode's size to 0 at an O_TRUNC open, and every process
 * reading the inode through the page cache then sees an empty cell (or a
 * getattr's committed size overtaken by that zero) until the writer
 * commits.  Without it the kernel sends, right after the open and from the
 * same thread, a setattr of size 0 with no file handle (ftruncate sends its
 * handle).  truncate(2) by name looks the same, but a thread that opened
 * the cell for writing and truncates it by name before using the
 * descriptor ends, at close, with what a truncation of its handle gives.
 * So that setattr truncates this handle's text only and answers the
 * committed size: the inode's size stays what readers must see.
 *
 * fs.lock keeps the handle from being freed (its release takes it off
 * n->writers under that lock first); its own lock is only tried, since
 * handle.lock comes before fs.lock: a handle busy in a request is not fresh.
 */
static int truncate_opened(struct fs *fs, struct fs_node *n, pid_t pid)
{
	struct fs_handle *h;
	int done = 0;

	pthread_mutex_lock(&fs->lock);
	for (h = n->writers; h; h = h->next_w)   /* newest first */
		if (h->pid == pid)
			break;
	if (h && __atomic_load_n(&h->fresh, __ATOMIC_RELAXED) &&
	    pthread_mutex_trylock(&h->lock) == 0) {
		handle_used(h);
		h->failed = 0;
		handle_truncate_open(h);
		n->dirty_len = 0;
		pthread_mutex_unlock(&h->lock);
		done = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	return done;
}

/*
 * setattr's work, for fs_setattr, which replies: 0 and the attributes to
 * give in *st, or a negative errno.  *claimed: it was an open's O_TRUNC
 * (truncate_opened).
 */
static int setattr_apply(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			 struct fuse_file_info *fi, struct fs_node *n, struct stat *out,
			 int *claimed)
{
	struct fs *fs = req_fs(req);
	struct stat st;
	int rc = 0;

	*claimed = 0;
	if (fs->cfg.ro && (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME |
				     FUSE_SET_ATTR_MTIME_NOW)))
		return -EROFS;
	if (fi)
		handle_used((struct fs_handle *)(uintptr_t)fi->fh);
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size == 0 && !fi && !is_dir_kind(n->kind)) {
		if (truncate_opened(fs, n, request_pid)) {   /* an open's O_TRUNC */
			*claimed = 1;
			return node_stat(fs, n, ino, out);
		}
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		struct fs_handle *h = fi ? (struct fs_handle *)(uintptr_t)fi->fh : NULL;
		struct fs_handle tmp;
		size_t size = (size_t)attr->st_size;

		if (is_dir_kind(n->kind)) {
			rc = -EISDIR;
			goto out;
		}
		if (n->kind == FS_STATS) {
			rc = -EACCES;
			goto out;
		}
		if (attr->st_size < 0 || size > max_text(fs)) {
			rc = -EFBIG;
			goto out;
		}
		if (!h) {   /* truncate(2) by name: a new version at once */
			memset(&tmp, 0, sizeof(tmp));
			pthread_mutex_init(&tmp.lock, NULL);
			tmp.node = n;
			tmp.type = CELL_INVALID;
			h = &tmp;
		}
		pthread_mutex_lock(&h->lock);
		rc = handle_load(fs, h);
		if (rc == 0)
			rc = hbuf_reserve(fs, h, size);
		if (rc == 0) {
			if (size > h->len)
				memset(h->data + h->len, 0, size - h->len);
			h->len = size;
			if (h->checked > size)
				h->checked = size;
			h->dirty = 1;
			h->wrote = 1;
			h->failed = 0;
			if (h == &tmp)
				rc = handle_commit(fs, h, 0);
			else
				node_dirty(fs, h);
		}
		pthread_mutex_unlock(&h->lock);
		if (h == &tmp) {
			pthread_mutex_destroy(&tmp.lock);
			hbuf_free(fs, &tmp);
		}
		if (rc < 0)
			goto out;
	}
	if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) && n->kind == FS_CELL &&
	    n->ts == 0) {
		uint64_t ts = to_set & FUSE_SET_ATTR_MTIME_NOW ? now_ts()
							       : timespec_to_ts(&attr->st_mtim);
		if (ts == 0)
			ts = 1;
		if (!writers_take(fs, n, NULL, &ts)) {
			rc = restamp(fs, n, ts);
			if (rc < 0)
				goto out;
		}
	}
	if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) && n->kind == FS_TEMP) {
		uint64_t ts = to_set & FUSE_SET_ATTR_MTIME_NOW ? now_ts()
							       : timespec_to_ts(&attr->st_mtim);

		rc = temp_meta_node(fs, n, ts ? ts : 1, CELL_INVALID);
		if (rc < 0)
			goto out;
	}
	/* chmod, chown, atime: accepted and not kept (modes are fixed, smolfs(1)) */
	rc = node_stat(fs, n, ino, &st);
out:
	if (rc < 0)
		return rc;
	if (n->kind == FS_CELL) {
		/* the kernel sets the size from this reply: a sealed text's */
		pthread_mutex_lock(&fs->lock);
		if (n->sealed) {
			st.st_size = (off_t)n->seal_len;
			st.st_blocks = (blkcnt_t)((n->seal_len + 511) / 512);
		}
		pthread_mutex_unlock(&fs->lock);
	}
	if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) && n->kind == FS_CELL &&
	    node_unborn(fs, n, NULL) && st.st_mtim.tv_sec == fs->start.tv_sec) {
		if (to_set & FUSE_SET_ATTR_MTIME)
			st.st_mtim = attr->st_mtim;
	}
	*out = st;
	return 0;
}

/*
 * A setattr of a cell keeps readers from sealing it while it runs, and its
 * reply sets the kernel's size however late it lands: a setattr by name
 * (no descriptor, which would hold the file until the reply is applied)
 * that is not an open's O_TRUNC (whose opener holds a writer until its
 * close) leaves the node touched, never sealed again ("Readers and the
 * page cache").  A truncate of a sealed node whose pages readers hold
 * answers ESTALE and retires it.
 */
static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	struct stat st;
	int cell, claimed, rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "setattr", NULL);
	cell = n->kind == FS_CELL;
	request_pid = fuse_req_ctx(req)->pid;
	if (cell) {
		pthread_mutex_lock(&fs->lock);
		fs_node_came(fs, n, request_pid);
		if ((to_set & FUSE_SET_ATTR_SIZE) && unseal(fs, n, request_pid)) {
			pthread_mutex_unlock(&fs->lock);
			return reply_err(req, -ESTALE, "setattr", n);
		}
		n->opening++;
		pthread_mutex_unlock(&fs->lock);
	}
	rc = setattr_apply(req, ino, attr, to_set, fi, n, &st, &claimed);
	if (cell) {   /* before the reply: once it is sent, the kernel may forget n */
		pthread_mutex_lock(&fs->lock);
		if (!fi && !claimed)
			n->touched = 1;
		n->opening--;
		pthread_mutex_unlock(&fs->lock);
	}
	if (rc < 0)
		return reply_err(req, rc, "setattr", n);
	attrs_shown(fs, n, &st);   /* the kernel takes its size, cached or not */
	/* not cached: a writer's size is not what others see, and a commit follows */
	reply_failed("setattr", fuse_reply_attr(req, &st, claimed || !is_dir_kind(n->kind) ? 0
						: fs->cfg.timeout));
}

/* ------------------------------------------------------------ unlink, rename */

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t;
	char scratch[FS_NAME_MAX + 1];
	struct tbl_mutation m;
	struct stat st;
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "unlink", NULL);
	request_pid = fuse_req_ctx(req)->pid;
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "unlink", p);
	rc = child_template(p, name, strlen(name), &t, scratch);
	if (rc == -EINVAL)
		rc = -ENOENT;
	if (rc == 0 && t.kind == FS_FAMATTR) {
		/* a temporary file goes; a setting is hidden until created again (tar) */
		rc = node_stat(fs, &t, 0, &st);
		if (rc == 0 && t.attr == FS_ATTR_SCRATCH)
			scratch_remove(fs, t.table, t.family, t.name);
		else if (rc == 0)
			rc = scratch_put(fs, t.table, t.family, t.name, NULL, 0, 1);
		if (rc < 0)
			return reply_err(req, rc, "unlink", p);
		fs_name_removed(fs, parent, name, strlen(name));
		return reply_failed("unlink", fuse_reply_err(req, 0));
	}
	if (rc == 0 && t.kind == FS_TEMP) {
		rc = temp_stat(fs, &t, t.name, NULL, NULL, NULL);
		if (rc < 0)
			return reply_err(req, rc, "unlink", p);
		temp_remove(fs, &t, t.name);
		fs_name_removed(fs, parent, name, strlen(name));
		return reply_failed("unlink", fuse_reply_err(req, 0));
	}
	if (rc == 0 && t.kind != FS_CELL)
		rc = is_dir_kind(t.kind) ? -EISDIR : -EPERM;
	if (rc == 0)
		rc = node_stat(fs, &t, 0, &st);
	if (rc == -ENOENT && t.kind == FS_CELL && t.ts) {
		/* a version of a cell removed meanwhile (rm -r: q, then q@ts): done */
		struct fs_node q = t;

		q.ts = 0;
		rc = node_stat(fs, &q, 0, &st);
		if (rc == -ENOENT) {
			fs_name_removed(fs, parent, name, strlen(name));
			return reply_failed("unlink", fuse_reply_err(req, 0));
		}
		rc = -ENOENT;
	}
	if (rc < 0)
		return reply_err(req, rc, "unlink", p);
	memset(&m, 0, sizeof(m));
	m.op = t.ts ? TBL_DELETE_VERSION : TBL_DELETE_CELL;
	m.family = t.family;
	m.qualifier = t.qual;
	m.qualifier_len = t.qual_len;
	m.ts = t.ts;
	rc = tbl_mutate_row(fs->db, t.table, t.row, t.row_len, &m, 1, fs->cfg.sync ? TBL_SYNC : 0,
			    NULL);
	if (rc < 0)
		return reply_err(req, rc, "unlink", p);
	fs_name_removed(fs, parent, name, strlen(name));
	emptied_mark(fs, t.table, t.row, t.row_len, t.family);
	inval_cell(fs, t.table, t.row, t.row_len, t.family, t.qual, t.qual_len);
	reply_failed("unlink", fuse_reply_err(req, 0));
}

/*
 * Rename of a cell within its row, as one row mutation:
 *   q -> p       every version of q moves to p, replacing p (all its
 *                versions): tbl_rename_cell, one batch under the row lock;
 *   x -> p@T     x's value (its newest, or the version x names) becomes
 *                version T of p, and x goes;
 *   q@t -> p     that version becomes p (alone), and goes from q;
 * the last two are tbl_rename_version, one batch under the row lock too, so
 * a writer of either cell meanwhile is either before or after the rename.
 * RENAME_NOREPLACE: EEXIST if the target exists.  RENAME_EXCHANGE: the two
 * cells swap every version (newest names only).
 */
static int rename_cell(struct fs *fs, const struct fs_node *s, const struct fs_node *d,
		       unsigned flags)
{
	if (s->qual_len == d->qual_len && !memcmp(s->qual, d->qual, s->qual_len) &&
	    !strcmp(s->family, d->family))
		return s->ts == d->ts ? 0 : -EINVAL;   /* a cell's versions among themselves */
	if ((flags & RENAME_EXCHANGE) && (s->ts || d->ts))
		return -EINVAL;
	/* with a version on either side: that version alone moves (table.h) */
	return tbl_rename_version(fs->db, s->table, s->row, s->row_len, s->family, s->qual,
				  s->qual_len, s->ts, d->family, d->qual, d->qual_len, d->ts,
				  (flags & RENAME_NOREPLACE ? TBL_RENAME_NOREPLACE : 0) |
				  (flags & RENAME_EXCHANGE ? TBL_RENAME_EXCHANGE : 0),
				  fs->cfg.sync ? TBL_SYNC : 0);
}

/*
 * A temporary file renamed to a cell's name (rsync, editors): its text
 * becomes a version of the cell, parsed by its type (the one set on the
 * temporary file with user.smolfs.type, else the cell's, else the family's),
 * with the temporary file's time (utimensat) or the version the name gives,
 * or the current time; the cell's versions not older than that go, so the
 * name shows what was moved.  One row mutation.
 */
static int rename_temp(struct fs *fs, const struct fs_node *s, const struct fs_node *d,
		       unsigned flags)
{
	struct tbl_mutation m[2];
	struct cellinfo ci;
	char *data = NULL;
	size_t len = 0, nm = 0;
	uint64_t stamp = 0, ts;
	enum cell_type type = CELL_INVALID;
	int rc, exists;

	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	rc = temp_stat(fs, s, s->name, &len, &stamp, &type);
	if (rc == 0)
		rc = temp_get(fs, s, s->name, &data, &len);
	if (rc < 0)
		return rc;
	if (d->kind == FS_TEMP) {
		rc = (flags & RENAME_NOREPLACE) && temp_stat(fs, d, d->name, NULL, NULL, NULL) == 0
			     ? -EEXIST : temp_put(fs, d, d->name, data, len);
		if (rc == 0)
			rc = temp_meta(fs, d, d->name, stamp, type);
		goto out;
	}
	rc = cell_get(fs, d->table, d->row, d->row_len, d->family, d->qual, d->qual_len, d->ts,
		      &ci, NULL);
	exists = rc == 0;
	if (rc < 0 && rc != -ENOENT)
		goto out;
	rc = 0;
	if (exists && (flags & RENAME_NOREPLACE)) {
		rc = -EEXIST;
		goto out;
	}
	if (type == CELL_INVALID && exists)
		type = ci.type;
	if (type == CELL_INVALID) {
		struct tbl_family_settings fset;

		rc = tbl_get_family(fs->db, d->table, d->family, &fset);
		if (rc < 0)
			goto out;
		type = fset.type;
	}
	ts = d->ts ? d->ts : stamp ? stamp : TBL_TS_NOW;
	memset(m, 0, sizeof(m));
	if (!d->ts && ts != TBL_TS_NOW) {
		m[0].op = TBL_DELETE_VERSIONS;
		m[0].family = d->family;
		m[0].qualifier = d->qual;
		m[0].qualifier_len = d->qual_len;
		m[0].ts = ts;
		m[0].ts_end = UINT64_MAX;
		nm = 1;
	}
	m[nm].op = TBL_SET;
	m[nm].family = d->family;
	m[nm].qualifier = d->qual;
	m[nm].qualifier_len = d->qual_len;
	m[nm].ts = ts;
	rc = cell_parse(type, slice_make(data, len), &m[nm].value);
	if (rc == 0)
		rc = tbl_mutate_row(fs->db, d->table, d->row, d->row_len, m, nm + 1,
				    fs->cfg.sync ? TBL_SYNC : 0, NULL);
out:
	if (rc == 0)
		temp_remove(fs, s, s->name);
	free(data);
	return rc;
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), *np = fs_node_get(fs, newparent), s, d;
	char sscratch[FS_NAME_MAX + 1], dscratch[FS_NAME_MAX + 1];
	int rc;

	if (!p || !np || node_stale(fs, p) || node_stale(fs, np))
		return reply_err(req, -ESTALE, "rename", NULL);
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "rename", p);
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return reply_err(req, -EINVAL, "rename", p);
	rc = child_template(p, name, strlen(name), &s, sscratch);
	if (rc == 0)
		rc = child_template(np, newname, strlen(newname), &d, dscratch);
	if (rc == -EINVAL)
		rc = -ENOENT;
	if (rc < 0)
		return reply_err(req, rc, "rename", p);
	/*
	 * From the data's move to the nodes' new names, no commit names a node
	 * moved (fs.move_lock); the kernel's caches are told after.
	 */
	if (s.kind == FS_FAMATTR && d.kind == FS_FAMATTR && !strcmp(s.table, d.table) &&
	    !strcmp(s.family, d.family) && s.attr == FS_ATTR_SCRATCH) {
		/* rsync's temporary file over a setting: the setting takes its text */
		char *data = NULL;
		size_t len = 0;

		pthread_rwlock_wrlock(&fs->move_lock);
		rc = scratch_get(fs, s.table, s.family, s.name, &data, &len);
		if (rc == 0 && d.attr == FS_ATTR_SCRATCH)
			rc = scratch_put(fs, d.table, d.family, d.name, data, len, 0);
		else if (rc == 0)
			rc = famattr_set(fs, d.table, d.family, d.attr, data, len);
		free(data);
		if (rc < 0) {
			pthread_rwlock_unlock(&fs->move_lock);
			return reply_err(req, rc, "rename", p);
		}
		scratch_remove(fs, s.table, s.family, s.name);
		if (d.attr != FS_ATTR_SCRATCH)
			scratch_remove(fs, d.table, d.family, d.name);   /* unhidden */
		fs_node_renamed(fs, parent, name, newparent, newname, &s, &d, 0);
		pthread_rwlock_unlock(&fs->move_lock);
		fs_each_node(fs, FS_CELL, d.table, d.family, NULL, 0, NULL, 0, inval_version_one,
			     NULL);
		return reply_failed("rename", fuse_reply_err(req, 0));
	}
	if (s.kind == FS_TEMP && (d.kind == FS_CELL || d.kind == FS_TEMP) &&
	    !strcmp(s.table, d.table) && s.row_len == d.row_len &&
	    !memcmp(s.row, d.row, s.row_len)) {
		pthread_rwlock_wrlock(&fs->move_lock);
		rc = rename_temp(fs, &s, &d, flags);
		if (rc == 0)
			fs_node_renamed(fs, parent, name, newparent, newname, &s, &d, 0);
		pthread_rwlock_unlock(&fs->move_lock);
		if (rc < 0)
			return reply_err(req, rc, "rename", p);
		if (d.kind == FS_CELL) {
			fs_empty_remove(fs, d.table, d.row, d.row_len, d.family);
			inval_versions(fs, d.table, d.row, d.row_len, d.family, d.qual, d.qual_len);
		}
		return reply_failed("rename", fuse_reply_err(req, 0));
	}
	/* only cells move, and only within their row: elsewhere mv copies and deletes */
	if (s.kind != FS_CELL || d.kind != FS_CELL || strcmp(s.table, d.table) ||
	    s.row_len != d.row_len || memcmp(s.row, d.row, s.row_len))
		return reply_err(req, -EXDEV, "rename", p);
	pthread_rwlock_wrlock(&fs->move_lock);
	rc = rename_cell(fs, &s, &d, flags);
	if (rc == 0)
		fs_node_renamed(fs, parent, name, newparent, newname, &s, &d,
				!!(flags & RENAME_EXCHANGE));
	pthread_rwlock_unlock(&fs->move_lock);
	if (rc < 0)
		return reply_err(req, rc, "rename", p);
	fs_empty_remove(fs, d.table, d.row, d.row_len, d.family);
	keep_dirs(fs, s.table, s.row, s.row_len, s.family);
	inval_versions(fs, s.table, s.row, s.row_len, s.family, s.qual, s.qual_len);
	inval_versions(fs, d.table, d.row, d.row_len, d.family, d.qual, d.qual_len);
	reply_failed("rename", fuse_reply_err(req, 0));
}

/* What the tree cannot hold: EPERM, and nothing changes. */
/*
 * mknod of a regular file (tar --xattrs makes the file, sets its
 * attributes, then writes it): a cell with no value yet, held by its node
 * while the kernel holds the name; the first commit gives it a value.  A
 * temporary or settings file is made as create makes it.  Anything else
 * (devices, FIFOs, sockets) is EPERM.
 */
static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct fs *fs = req_fs(req);
	struct fs_node *p = fs_node_get(fs, parent), t, *n;
	char scratch[FS_NAME_MAX + 1];
	struct tbl_family_settings s;
	struct fuse_entry_param e;
	struct stat st;
	int rc;

	if (!p || node_stale(fs, p))
		return reply_err(req, -ESTALE, "mknod", NULL);
	if (!S_ISREG(mode) || (p->kind != FS_ROWFAM && p->kind != FS_FAMDEF))
		return reply_err(req, -EPERM, "mknod", p);
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "mknod", p);
	request_pid = fuse_req_ctx(req)->pid;
	rc = child_template(p, name, strlen(name), &t, scratch);
	if (rc < 0)
		return reply_err(req, rc, "mknod", p);
	if (node_stat(fs, &t, 0, &st) == 0)
		return reply_err(req, -EEXIST, "mknod", p);
	switch (t.kind) {
	case FS_TEMP:
		rc = temp_put(fs, &t, t.name, NULL, 0);
		break;
	case FS_FAMATTR:
		rc = tbl_get_family(fs->db, t.table, t.family, &s);
		if (rc == 0 && t.attr == FS_ATTR_SCRATCH)
			rc = scratch_put(fs, t.table, t.family, t.name, NULL, 0, 0);
		else if (rc == 0)
			scratch_remove(fs, t.table, t.family, t.name);   /* shown again */
		break;
	case FS_CELL:
		if (t.ts == 0 && fs->recent)
			recent_forget(fs, &t);
		rc = tbl_get_family(fs->db, t.table, t.family, &s);
		if (rc == 0 && t.qual_len > TBL_MAX_QUALIFIER)
			rc = -ENAMETOOLONG;
		break;
	default:
		rc = -EPERM;
	}
	if (rc < 0)
		return reply_err(req, rc, "mknod", p);
	n = fs_node_ref(fs, p, name, strlen(name), &t);
	if (!n)
		return reply_err(req, -ENOMEM, "mknod", p);
	if (n->kind == FS_CELL) {
		pthread_mutex_lock(&fs->lock);
		n->pending = 1;
		n->pending_type = CELL_INVALID;
		pthread_mutex_unlock(&fs->lock);
	}
	rc = node_stat(fs, n, n->ino, &st);
	if (rc < 0) {
		fs_node_unref(fs, n, 1);
		return reply_err(req, rc, "mknod", p);
	}
	fill_entry(fs, n, &st, &e);
	e.attr_timeout = 0;   /* its size comes with its first commit */
	rc = fuse_reply_entry(req, &e);
	if (rc < 0) {
		reply_failed("mknod", rc);
		fs_node_unref(fs, n, 1);
	}
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	reply_err(req, -EPERM, "symlink", NULL);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	reply_err(req, -EPERM, "link", NULL);
}

/* ------------------------------------------------------------ xattrs, statfs */

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	struct cellinfo ci;
	const char *tn;
	size_t len;
	int rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "getxattr", NULL);
	/*
	 * Only the user namespace exists here: security labels and ACLs are
	 * ENOTSUP, which ls -l, cp and libselinux take as "not on this
	 * filesystem" and stop asking for (ENODATA would be asked per file).
	 */
	if (strncmp(name, "user.", 5))
		return reply_err(req, -ENOTSUP, "getxattr", n);
	if ((n->kind != FS_CELL && n->kind != FS_TEMP) || strcmp(name, XATTR_TYPE))
		return reply_err(req, -ENODATA, "getxattr", n);
	if (n->kind == FS_TEMP) {
		ci.type = CELL_INVALID;
		rc = temp_stat(fs, n, n->name, NULL, NULL, &ci.type);
		if (rc == 0 && ci.type == CELL_INVALID) {
			struct tbl_family_settings s;

			rc = tbl_get_family(fs->db, n->table, n->family, &s);
			ci.type = s.type;
		}
	} else {
		rc = cell_get(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len, n->ts,
		      &ci, NULL);
	if (rc == -ENOENT && node_unborn(fs, n, NULL)) {
		struct tbl_family_settings s;

		rc = tbl_get_family(fs->db, n->table, n->family, &s);
		pthread_mutex_lock(&fs->lock);
		ci.type = n->pending_type ? (enum cell_type)n->pending_type : s.type;
		pthread_mutex_unlock(&fs->lock);
	}
	}
	if (rc < 0)
		return reply_err(req, rc, "getxattr", n);
	tn = cell_type_name(ci.type);
	len = strlen(tn);
	if (size == 0)
		return reply_failed("getxattr", fuse_reply_xattr(req, len));
	if (size < len)
		return reply_err(req, -ERANGE, "getxattr", n);
	reply_failed("getxattr", fuse_reply_buf(req, tn, len));
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	static const char list[] = XATTR_TYPE;   /* with its NUL */

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "listxattr", NULL);
	if (n->kind != FS_CELL && n->kind != FS_TEMP) {
		if (size == 0)
			return reply_failed("listxattr", fuse_reply_xattr(req, 0));
		return reply_failed("listxattr", fuse_reply_buf(req, NULL, 0));
	}
	if (size == 0)
		return reply_failed("listxattr", fuse_reply_xattr(req, sizeof(list)));
	if (size < sizeof(list))
		return reply_err(req, -ERANGE, "listxattr", n);
	reply_failed("listxattr", fuse_reply_buf(req, list, sizeof(list)));
}

/*
 * Change the type of a cell's newest version, or of the version named, in
 * place (tbl_convert_version, one batch under the row lock).
 */
static int convert(struct fs *fs, struct fs_node *n, enum cell_type to)
{
	int rc;

	pthread_rwlock_rdlock(&fs->move_lock);   /* n keeps its data's names */
	rc = tbl_convert_version(fs->db, n->table, n->row, n->row_len, n->family, n->qual,
				 n->qual_len, n->ts, to, fs->cfg.sync ? TBL_SYNC : 0);
	if (rc == 0)
		inval_cell(fs, n->table, n->row, n->row_len, n->family, n->qual, n->qual_len);
	pthread_rwlock_unlock(&fs->move_lock);
	return rc;
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);
	enum cell_type to;
	char v[16];
	int rc;

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "setxattr", NULL);
	if ((n->kind != FS_CELL && n->kind != FS_TEMP) || strcmp(name, XATTR_TYPE))
		return reply_err(req, -ENOTSUP, "setxattr", n);
	if (fs->cfg.ro)
		return reply_err(req, -EROFS, "setxattr", n);
	while (size && (value[size - 1] == '\n' || value[size - 1] == '\0'))
		size--;
	if (size == 0 || size >= sizeof(v))
		return reply_err(req, -EINVAL, "setxattr", n);
	memcpy(v, value, size);
	v[size] = '\0';
	rc = cell_type_parse(slice_str(v), &to);
	if (rc == 0 && n->kind == FS_TEMP)   /* a temporary file keeps it for its rename */
		rc = temp_meta_node(fs, n, 0, to);
	else if (rc == 0 && node_pending_type(fs, n, to)) {   /* mknod'ed, no value yet */
		writers_take(fs, n, &to, NULL);
	} else if (rc == 0 && !writers_take(fs, n, &to, NULL))   /* cp -a: before its close */
		rc = convert(fs, n, to);
	if (rc < 0)
		return reply_err(req, rc, "setxattr", n);
	reply_failed("setxattr", fuse_reply_err(req, 0));
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs *fs = req_fs(req);
	struct fs_node *n = fs_node_get(fs, ino);

	if (!n || node_stale(fs, n))
		return reply_err(req, -ESTALE, "removexattr", NULL);
	reply_err(req, strncmp(name, "user.", 5) ? -ENOTSUP
		  : n->kind == FS_CELL && !strcmp(name, XATTR_TYPE) ? -EPERM : -ENODATA,
		  "removexattr", n);
}

/*
 * Block size, total, free and available blocks are those of the filesystem
 * holding the data directory: what df must show for a write to know if it
 * fits (the engine's files are all there).  A cell takes no inode, so the
 * file counts are that filesystem's too (its inodes bound the engine's
 * files), at least 1 total where it reports none.  Names: 255 bytes.
 */
static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (statvfs(fs_datadir, &sv) < 0)
		return reply_err(req, -errno, "statfs", NULL);
	sv.f_namemax = FS_NAME_MAX;
	if (sv.f_files == 0)
		sv.f_files = 1;
	reply_failed("statfs", fuse_reply_statfs(req, &sv));
}

static void fs_init_conn(void *userdata, struct fuse_conn_info *conn)
{
	/* O_TRUNC arrives as a setattr after the open, not in it: opened_by() says why */
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;   /* writes reach flush in order */
	/* a sealed node's first read asks for the size ("Readers and the page cache") */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_init_conn,
	.lookup = fs_lookup,
	.forget = fs_forget_one,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.access = fs_access,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
	.create = fs_create,
};
