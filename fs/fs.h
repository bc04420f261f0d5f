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
 * A name that is removed (unlink, rmdir, a rename over it) leaves its node
 * detached: the kernel may still hold that inode (an open file, a working
 * directory), and it lives until the kernel forgets it.  The name made
 * again is a new node with another number (the next free one after the
 * hash) -- never the old number with a new generation, which makes the
 * kernel mark the inode it holds as bad and answer EIO to everyone using
 * it.  Likewise a node remembers the id of its table and family
 * (tbl_table_id, tbl_family_id: never reused): a table or family dropped and
 * created again under the same name gets new nodes, and the old ones answer
 * ESTALE (ops.c).
 *
 * Locks, in the order they are taken:
 *   handle.lock one open file's buffer
 *   fs.lock     the inode table, every node's nlookup/generation/cached_ts,
 *               a node's key fields as a rename changes them (family and
 *               family_id together), the empty-directory set and the ring
 *               of open handles; held only for table operations, never
 *               across a database call (the ids of a table or family are
 *               looked up before it is taken) or a reply; one holding it
 *               only tries a handle's lock
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

/*
 * What every open file and directory handle (ops.c) begins with: its link
 * in fs.opens, so that handles the kernel never released (SIGTERM while
 * files are open, an unmount racing the last release) are freed at exit,
 * before the database closes.
 */
struct fs_open {
	struct fs_open *prev, *next;
	int dir;                    /* a struct fs_dir, else a struct fs_handle */
};

struct fs_node {
	uint64_t ino;
	uint64_t parent;            /* the parent's ino (0 for the root) */
	char *name;                 /* the name in the parent (NUL-terminated) */
	size_t name_len;
	uint64_t nlookup;           /* the kernel's references (lookup, create, readdirplus) */
	uint64_t generation;        /* of this number: numbers of forgotten nodes come back */
	uint64_t table_id;          /* tbl_table_id of its table when made (0: none) */
	uint64_t family_id;         /* tbl_family_id of its family when made (0: none) */
	uint64_t cached_ts;         /* version whose text the kernel may cache (keep_cache) */
	uint64_t dirty_len;         /* size of an open handle's unsaved text, if dirty_open */
	unsigned dirty_open;        /* handles open for writing */
	unsigned readers;           /* handles open for reading, each holding its own text */
	int pending;                /* made by mknod, no value yet (ops.c) */
	/*
	 * The page cache (ops.c, "Readers and the page cache"): a sealed node's
	 * text never changes for the kernel; these describe it, for life.
	 */
	int sealed;
	int touched;                /* a reply the kernel applies unchecked may be late */
	unsigned opening;           /* writers' opens under way (not yet in dirty_open) */
	unsigned paged;             /* readers' handles reading its pages (sealed) */
	int seal_ready;             /* the sealing open's invalidation is done */
	uint64_t seal_ts, seal_len, seal_hash;
	/*
	 * What the kernel may hold of the inode before any open (ops.c,
	 * attrs_shown): the text (time, length) every attribute reply for the
	 * node showed, or shown_mixed once two replies differed; and the
	 * handles ever opened on it.
	 */
	uint64_t shown_ts, shown_len;
	int shown_any, shown_mixed;
	unsigned opens;
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
	int detached;               /* its name was removed or belongs to another node */
	void **graves;              /* key fields replaced by a rename, freed with the node
				       (a request in flight may still read them) */
	size_t ngraves;
	struct fs_node *next_name;  /* hash chains, under fs.lock */
	struct fs_node *next_ino;
	struct fs_node *next_cell;  /* CELL nodes by (table, row, family, qualifier) */
};

/*
 * The default bound on the text the daemon holds for open files and
 * temporary files (cfg.buffer_limit): this, or four largest values if that
 * is more.
 */
#define FS_BUFFER_LIMIT ((size_t)256 << 20)

/* Names whose opener's retry is awaited (fs_node_retire), at most. */
#define FS_WRITERS_DUE 64

struct fs_config {
	size_t cache_size;          /* 0: the engine's default */
	size_t max_value_size;      /* 0: the table layer's default */
	size_t buffer_limit;        /* bytes of text held for users (ops.c's mem_charge); 0: default */
	int sync;                   /* every commit synced */
	int ro;
	int singlethread;           /* -s: one thread serves every request */
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
	/*
	 * Renames against writes that name a cell by its node: a rename holds
	 * it exclusively from moving the data to giving the node its new name,
	 * and a commit, a conversion or a restamp holds it shared from reading
	 * the node's name to the end of its row mutation, so none writes under
	 * a name the data has just left (ops.c).  Taken after a handle's lock,
	 * before fs.lock; never twice by one thread (writers are preferred).
	 */
	pthread_rwlock_t move_lock;
	struct fs_node **by_name;   /* (parent, name) -> node */
	struct fs_node **by_ino;
	struct fs_node **by_cell;   /* the names of one cell: q, q@ts, through .prefix/ */
	size_t nbuckets;
	size_t nnodes;
	struct fs_node root;
	struct fs_empty *empties;   /* empty row and family directories, under lock */
	struct fs_open opens;       /* head of the ring of open handles, under lock */
	struct fs_scratch *scratch; /* files in .families/<fam>/ (ops.c), under lock */
	struct fs_recent *recent;   /* cells a process made through q@ts (ops.c), under lock */
	struct fs_empty *emptied;   /* a family an unlink may have emptied (ops.c), under lock */
	size_t buffered;            /* bytes charged against cfg.buffer_limit, atomic (ops.c) */
	uint64_t nreq[6];           /* requests served, by enum fs_req (ops.c), atomic */
	struct { uint64_t parent, hash, since; pid_t pid; } due[FS_WRITERS_DUE];   /* under lock */
	int due_next;
	uint64_t inode_notices;     /* inode invalidations queued, not yet sent (atomic) */
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
 * are copied), and count one kernel reference.  NULL on ENOMEM.  The node
 * takes the ids of its table and family: looked up for a table or family
 * directory, else the parent's.  A node found under the name with other
 * ids stands for a dropped table or family: it is detached, and a new node
 * made.  Call without fs.lock (the ids are a database call).
 */
struct fs_node *fs_node_ref(struct fs *fs, struct fs_node *parent, const char *name, size_t len,
			    const struct fs_node *tmpl);
/*
 * The node named (parent, name), with one more kernel reference, if it is a
 * cell created and not committed yet (a handle open for writing on it, or
 * made by mknod): such a cell exists though the database has no value for
 * it.  Else NULL.
 */
struct fs_node *fs_node_ref_unborn(struct fs *fs, uint64_t parent, const char *name, size_t len);
/*
 * Retire a sealed node (under fs.lock): detached from its name, whose next
 * lookup makes a new node, and the kernel told to look the name up again.
 * pid: the process whose open or truncate answers ESTALE for it (0: none),
 * whose retry no sealed node of the name may meet.
 */
void fs_node_retire(struct fs *fs, struct fs_node *n, pid_t pid);
/* Is a retry awaited on n's name (fs_node_retire)?  Under fs.lock. */
int fs_node_due(const struct fs *fs, const struct fs_node *n);
/* Process pid came to n (an open, a setattr): its retry, if one was awaited. */
void fs_node_came(struct fs *fs, const struct fs_node *n, pid_t pid);
/* Undo one fs_node_ref (an entry that did not reach the kernel). */
void fs_node_unref(struct fs *fs, struct fs_node *n, uint64_t count);
/* The kernel forgot count references. */
void fs_forget(struct fs *fs, uint64_t ino, uint64_t count);
/* The name (parent, name) was removed: its node is detached, a re-created one is another. */
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
/*
 * Free the handles the kernel never released, with no commit: a write
 * whose file was not closed is not committed.  At exit, once no request is
 * served any more, before tbl_close (a directory handle may hold a scan).
 */
void fs_handles_free(struct fs *fs);

#endif
