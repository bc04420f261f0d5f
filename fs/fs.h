/*
 * fs.h -- the smolfs daemon's shared state: the mounted database, the
 * table of inodes the kernel holds, open handles, and the empty directories
 * kept in memory.  Private to fs/.
 *
 * Inode numbers are not stored anywhere: a node's number is a hash of its
 * parent's number and its name (the root is 1), so the same name gives the
 * same st_ino for the life of the mount, a directory listing can give d_ino
 * for entries the kernel never looked up, and the daemon keeps a node only
 * while the kernel holds it (nlookup > 0): memory follows the kernel's
 * cache, not the database.  Two names hashing to one number (not seen in
 * practice: 64 bits) are told apart by probing, logged.
 *
 * Locks, in the order they are taken:
 *   fs.lock     the inode table, every node's nlookup/generation/cached_ts,
 *               and the empty-directory set; held only for table operations,
 *               never across a database call or a reply
 *   handle.lock one open file's buffer
 */
#ifndef SMOLFS_FS_FS_H
#define SMOLFS_FS_FS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "table.h"

enum fs_kind {
	FS_ROOT = 1,        /* MOUNT/ */
	FS_TABLE,           /* MOUNT/t/ */
	FS_FAMILIES,        /* t/.families/ */
	FS_FAMDEF,          /* t/.families/<fam>/ */
	FS_FAMATTR,         /* t/.families/<fam>/<setting> */
	FS_PREFIXES,        /* t/.prefix/ (lists nothing) */
	FS_PREFIX,          /* t/.prefix/<p>/ */
	FS_ROW,             /* t/<row>/ or t/.prefix/<p>/<row>/ */
	FS_ROWFAM,          /* <row>/<fam>/ */
	FS_CELL,            /* <row>/<fam>/<q> or <q>@<ts> */
	FS_TEMP,            /* <row>/<fam>/.<name>: a tool's temporary file, in memory */
	FS_SMOLFS,          /* MOUNT/.smolfs/ (not listed in the root) */
	FS_STATS,           /* MOUNT/.smolfs/stats: the engine's statistics, read-only */
};

/* The settings files of a family, in listing order. */
enum fs_attr { FS_ATTR_TYPE, FS_ATTR_MAX_VERSIONS, FS_ATTR_TTL, FS_ATTR_GROUP,
	       FS_ATTR_COMPRESSION, FS_ATTR_COUNT,
	       FS_ATTR_SCRATCH = FS_ATTR_COUNT /* a tool's temporary file (ops.c) */ };
extern const char *const fs_attr_names[FS_ATTR_COUNT];

struct fs_handle;

struct fs_node {
	uint64_t ino;
	uint64_t parent;            /* the parent's ino (0 for the root) */
	char *name;                 /* the name in the parent (NUL-terminated) */
	size_t name_len;
	uint64_t nlookup;           /* the kernel's references (lookup, create, readdirplus) */
	uint64_t generation;        /* bumped when the name is removed, so a re-created
				       directory is a new inode for the kernel */
	uint64_t cached_ts;         /* version whose text the kernel may cache (keep_cache) */
	uint64_t dirty_len;         /* size of an open handle's unsaved text, if dirty_open */
	unsigned dirty_open;        /* handles open for writing */
	int pending;                /* made by mknod, no value yet (ops.c) */
	int pending_type;           /* its user.smolfs.type (enum cell_type), or 0 */
	struct fs_handle *writers;  /* those handles (ops.c), under fs.lock */
	enum fs_kind kind;
	/* what the node stands for; set at creation, never changed */
	char *table;                /* all but the root */
	char *family;               /* FAMDEF, FAMATTR, ROWFAM, CELL */
	void *row;                  /* ROW, ROWFAM, CELL; the prefix of a PREFIX */
	size_t row_len;
	void *qual;                 /* CELL */
	size_t qual_len;
	uint64_t ts;                /* CELL: 0 = the newest version, else that version */
	int attr;                   /* FAMATTR: enum fs_attr */
	int detached;               /* its name now belongs to another node (rename) */
	void **graves;              /* key fields replaced by a rename, freed with the node
				       (a request in flight may still read them) */
	size_t ngraves;
	struct fs_node *next_name;  /* hash chains, under fs.lock */
	struct fs_node *next_ino;
	struct fs_node *next_cell;  /* CELL nodes by (table, row, family, qualifier) */
};

struct fs_config {
	size_t cache_size;          /* 0: the engine's default */
	size_t max_value_size;      /* 0: the table layer's default */
	int sync;                   /* every commit synced */
	int ro;
	double timeout;             /* entry and attribute timeout, seconds */
};

struct fs {
	struct tbl_db *db;
	struct fuse_session *se;
	struct fs_config cfg;
	uid_t uid;
	gid_t gid;
	struct timespec start;      /* directories' times */
	pthread_mutex_t lock;
	struct fs_node **by_name;   /* (parent, name) -> node */
	struct fs_node **by_ino;
	struct fs_node **by_cell;   /* the names of one cell: q, q@ts, through .prefix/ */
	size_t nbuckets;
	size_t nnodes;
	struct fs_node root;
	struct fs_empty *empties;   /* empty row and family directories, under lock */
	struct fs_scratch *scratch; /* files in .families/<fam>/ (ops.c), under lock */
	struct fs_recent *recent;   /* cells a process made through q@ts (ops.c), under lock */
	struct fs_empty *emptied;   /* a family an unlink may have emptied (ops.c), under lock */
	/* invalidations waiting for the notifier thread */
	pthread_mutex_t nlock;
	pthread_cond_t ncond;
	struct fs_notice *notices, **notices_tail;
	int nstop;
	pthread_t nthread;
	int nthread_started;
};

/* An empty directory kept in memory until a cell lands in it or it is removed. */
struct fs_empty {
	char *table;
	void *row;
	size_t row_len;
	char *family;               /* NULL: an empty row */
	struct fs_empty *next;
};

/* ---- inode table (inode.c) ---- */
int fs_init(struct fs *fs);
void fs_destroy(struct fs *fs);
/* The ino a child name has or would have (no node created). */
uint64_t fs_child_ino(struct fs *fs, uint64_t parent, const char *name, size_t len);
/* The node with that ino, or NULL (an ino the kernel no longer holds). */
struct fs_node *fs_node_get(struct fs *fs, uint64_t ino);
/*
 * Find or add the child node described by tmpl (kind and key fields, which
 * are copied), and count one kernel reference.  NULL on ENOMEM.
 */
struct fs_node *fs_node_ref(struct fs *fs, struct fs_node *parent, const char *name, size_t len,
			    const struct fs_node *tmpl);
/* Undo one fs_node_ref (an entry that did not reach the kernel). */
void fs_node_unref(struct fs *fs, struct fs_node *n, uint64_t count);
/* The kernel forgot count references. */
void fs_forget(struct fs *fs, uint64_t ino, uint64_t count);
/* The name (parent, name) was removed: a re-created one is a new inode to the kernel. */
void fs_name_removed(struct fs *fs, uint64_t parent, const char *name, size_t len);
/*
 * A cell was renamed from (parent, name) to (newparent, newname), whose key
 * fields t describes: the kernel keeps the source's inode under the new
 * name, so its node takes the new name and key; a node the new name had is
 * detached (it lives until forgotten, under no name).  exchange: the two
 * nodes swap names and keys.
 */
void fs_node_renamed(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
		     const char *newname, const struct fs_node *src, const struct fs_node *dst,
		     int exchange);
/* Call fn on every node matching (kind, table[, family[, row[, qualifier]]]), under the lock. */
void fs_each_node(struct fs *fs, enum fs_kind kind, const char *table, const char *family,
		  const void *row, size_t row_len, const void *q, size_t qlen,
		  void (*fn)(struct fs *fs, struct fs_node *n, void *arg), void *arg);

/* Empty directories. */
int fs_empty_add(struct fs *fs, const char *table, const void *row, size_t row_len,
		 const char *family);
int fs_empty_has(struct fs *fs, const char *table, const void *row, size_t row_len,
		 const char *family);
/* Remove the entry (family NULL: the row and all its families); 1 if one was there. */
int fs_empty_remove(struct fs *fs, const char *table, const void *row, size_t row_len,
		    const char *family);
/* Remove everything of a table (family NULL) or of a family in every row. */
void fs_empty_drop(struct fs *fs, const char *table, const char *family);
/* The empty rows of a table in key order, strictly after (after, after_len) if after != NULL:
 * a malloc'd array of malloc'd keys. */
int fs_empty_rows(struct fs *fs, const char *table, void ***keys, size_t **lens, size_t *n);
int fs_empty_families(struct fs *fs, const char *table, const void *row, size_t row_len,
		      char ***names, size_t *n);

/* ---- invalidation (inode.c) ---- */
/* Queue an invalidation of a directory entry, or of an inode's attributes and pages. */
void fs_notify_entry(struct fs *fs, uint64_t parent, const char *name, size_t len);
void fs_notify_inode(struct fs *fs, uint64_t ino);
int fs_notify_start(struct fs *fs);
void fs_notify_stop(struct fs *fs);

/* ---- operations (ops.c) ---- */
extern const struct fuse_lowlevel_ops fs_ops;
/* Free the temporary files kept in .families/<fam>/ and the like (at exit). */
void fs_scratch_free(struct fs *fs);

#endif
