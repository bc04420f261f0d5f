/*
 * benchfloor -- what FUSE itself costs, for tools/bench-fs.sh.
 *
 *   FLOOR_PER=N [FLOOR_FULL=1] benchfloor MOUNTPOINT [fuse options]
 *
 * A daemon that answers every request at once, from memory, on the tree the
 * benchmark's small-cell loops walk (b/rNNNNN/f/qNNNNN, N cells a row), with
 * the loop smolfs runs (ten workers on one device descriptor), its timeouts
 * and its open flags (keep_cache and no flush for readers).  Its times are the
 * floor, on this machine, under any daemon that needs the same requests: a
 * lookup per new name, an open per open(2), a create, a write and a flush per
 * cell written.  FLOOR_FULL=1 mounts
 * with every cell present (its text "value C\n", C its number, as the
 * benchmark writes it); otherwise the tree starts empty, and mkdir and create
 * add names (written bytes are answered, not kept).  Not installed.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAXROWS 100000L
#define T 3600.0
enum { ROOT = 1, B = 2 };
#define ROWINO(r) (3 + 2 * (fuse_ino_t)(r))
#define FAMINO(r) (4 + 2 * (fuse_ino_t)(r))
#define CELLINO(c) (3 + 2 * (fuse_ino_t)MAXROWS + (fuse_ino_t)(c))

static long per = 1;
static int full;
static unsigned char *rowmade, *fammade, *cellmade;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int num(const char *s, char c, long max, long *out)
{
	char *end;

	if (s[0] != c || s[1] < '0' || s[1] > '9')
		return 0;
	*out = strtol(s + 1, &end, 10);
	return *end == 0 && *out < max;
}

static size_t text(long c, char *buf)
{
	return (size_t)snprintf(buf, 32, "value %ld\n", c);
}

static int attr(fuse_ino_t ino, struct stat *st)
{
	char buf[32];
	long c;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino < CELLINO(0)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	c = (long)(ino - CELLINO(0));
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_size = full ? (off_t)text(c, buf) : 0;
	return 0;
}

/* the node of parent/name, and whether it exists; 0 if it cannot */
static fuse_ino_t child(fuse_ino_t parent, const char *name, int *exists)
{
	long r, q;
	fuse_ino_t ino = 0;

	pthread_mutex_lock(&mu);
	if (parent == ROOT && strcmp(name, "b") == 0) {
		ino = B;
		*exists = 1;
	} else if (parent == B && num(name, 'r', MAXROWS, &r)) {
		ino = ROWINO(r);
		*exists = full || rowmade[r];
	} else if (parent >= ROWINO(0) && parent < CELLINO(0) && parent % 2 == 1 &&
		   strcmp(name, "f") == 0) {
		r = (long)(parent - 3) / 2;
		ino = FAMINO(r);
		*exists = full || fammade[r];
	} else if (parent >= FAMINO(0) && parent < CELLINO(0) && parent % 2 == 0 &&
		   num(name, 'q', per, &q)) {
		r = (long)(parent - 4) / 2;
		ino = CELLINO(r * per + q);
		*exists = full || cellmade[r * per + q];
	}
	pthread_mutex_unlock(&mu);
	return ino;
}

static void entry(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr_timeout = T;
	e.entry_timeout = T;
	attr(ino, &e.attr);
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void f_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int exists = 0;
	fuse_ino_t ino = child(parent, name, &exists);

	if (!ino || !exists) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	entry(req, ino, NULL);
}

static void f_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	attr(ino, &st);
	fuse_reply_attr(req, &st, T);
}

static void f_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	int exists = 0;
	fuse_ino_t ino = child(parent, name, &exists);

	(void)mode;
	if (!ino || ino >= CELLINO(0)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (exists) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	pthread_mutex_lock(&mu);
	if (ino % 2)
		rowmade[(ino - 3) / 2] = 1;
	else
		fammade[(ino - 4) / 2] = 1;
	pthread_mutex_unlock(&mu);
	entry(req, ino, NULL);
}

static void f_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     struct fuse_file_info *fi)
{
	int exists = 0;
	fuse_ino_t ino = child(parent, name, &exists);

	(void)mode;
	if (!ino || ino < CELLINO(0)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&mu);
	cellmade[ino - CELLINO(0)] = 1;
	pthread_mutex_unlock(&mu);
	entry(req, ino, fi);
}

static void f_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if ((fi->flags & O_ACCMODE) == O_RDONLY) {
		fi->keep_cache = 1;
		fi->noflush = 1;
	}
	fuse_reply_open(req, fi);
}

static void f_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	char buf[32];
	size_t n = full ? text((long)(ino - CELLINO(0)), buf) : 0;

	(void)fi;
	if ((size_t)off >= n) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, buf + off, size < n - (size_t)off ? size : n - (size_t)off);
}

static void f_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	(void)ino; (void)buf; (void)off; (void)fi;
	fuse_reply_write(req, size);
}

static void f_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = f_lookup, .getattr = f_getattr, .mkdir = f_mkdir, .create = f_create,
	.open = f_open, .read = f_read, .write = f_write, .flush = f_ok,
	.release = f_ok,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts o;
	struct fuse_loop_config *lc;
	struct fuse_session *se;
	int rc = 1;

	per = getenv("FLOOR_PER") ? atol(getenv("FLOOR_PER")) : 1;
	full = getenv("FLOOR_FULL") && strcmp(getenv("FLOOR_FULL"), "1") == 0;
	rowmade = calloc(MAXROWS, 1);
	fammade = calloc(MAXROWS, 1);
	cellmade = calloc((size_t)(MAXROWS * per), 1);
	if (per < 1 || !rowmade || !fammade || !cellmade ||
	    fuse_parse_cmdline(&args, &o) != 0 || !o.mountpoint)
		return 1;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, o.mountpoint) != 0)
		return 1;
	fuse_daemonize(o.foreground);
	lc = fuse_loop_cfg_create();
	if (lc) {
		/* smolfs's loop: ten workers, one device descriptor */
		fuse_loop_cfg_set_clone_fd(lc, 0);
		fuse_loop_cfg_set_max_threads(lc, 10);
		rc = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc != 0;
}
