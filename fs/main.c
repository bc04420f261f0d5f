/*
 * main.c -- the smolfs daemon: `smolfs [options] DATADIR MOUNTPOINT`.
 *
 * Parses the options (libfuse's and smolfs's own), creates DATADIR (0700)
 * if it is missing, opens the database in it (which takes its lock: a
 * second daemon or a smolctl is refused), mounts, and serves requests with
 * libfuse's multithreaded loop until the filesystem is unmounted
 * (fusermount3 -u, umount) or the daemon gets SIGTERM, SIGINT or SIGHUP;
 * then it unmounts, closes the database (every acknowledged write is in
 * its log) and releases the lock.
 *
 * Without -f it becomes a daemon, but only once the database is open and the
 * mount is up: the command that started it exits 0 then, or 1 with the
 * reason on its standard error, so scripts and mount(8) see failures.  The
 * database is opened in the process that serves, since a fork keeps no
 * threads (the engine has background ones).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fs.h"

const char *fs_datadir;

#ifdef SMOLFS_FAULT_HOOK
/*
 * Only in the test build of the daemon (tests/smolfs_fault.c, compiled with
 * -DSMOLFS_FAULT_HOOK and never installed): it gets the engine's options
 * before the database is opened, to put its fault-injecting environment in
 * them.  A negative errno stops the daemon.  The installed smolfs has no
 * such call.
 */
int smolfs_test_env(struct kv_options *opt);
#endif

struct options {
	char *datadir;
	char *cache_size;
	char *max_value_size;
	char *buffer_limit;
	double timeout;
	int sync;
	int ro;
	int allow_other;
	int nonopts;
};

enum { KEY_RO = 1, KEY_ALLOW_OTHER, KEY_NONOPT_EXTRA };

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt smolfs_opts[] = {
	OPT("cache_size=%s", cache_size),
	OPT("max_value_size=%s", max_value_size),
	OPT("buffer_limit=%s", buffer_limit),
	OPT("timeout=%lf", timeout),
	OPT("sync", sync),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("allow_root", KEY_ALLOW_OTHER),   /* root too: mode checks as well */
	FUSE_OPT_END,
};

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;

	if (key == KEY_RO) {
		o->ro = 1;
		return 1;   /* the kernel mounts read-only too */
	}
	if (key == KEY_ALLOW_OTHER) {
		o->allow_other = 1;
		return 1;   /* for the kernel too */
	}
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (!o->datadir) {
			o->datadir = strdup(arg);
			return o->datadir ? 0 : -1;
		}
		return 1;   /* the mount point, for fuse_parse_cmdline */
	}
	return 1;
}

/* "64M", "1G", "4096": bytes; -EINVAL for anything else. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s [options] DATADIR MOUNTPOINT\n\n"
	       "Mounts the smolfs database in DATADIR (created, mode 0700, if missing) at\n"
	       "MOUNTPOINT: tables, rows, column families and cells as directories and files.\n"
	       "See smolfs(1).\n\n"
	       "smolfs options:\n"
	       "    -o cache_size=SIZE      block cache of the engine (bytes, K, M or G; default 64M)\n"
	       "    -o max_value_size=SIZE  largest cell value (default 10M, at most 100M)\n"
	       "    -o buffer_limit=SIZE    text held for open and temporary files (default\n"
	       "                            256M, or room for 4 largest values if more)\n"
	       "    -o sync                 every commit is synced to disk before close() returns\n"
	       "    -o ro                   read-only: every change fails with EROFS\n"
	       "    -o timeout=SECONDS      how long the kernel caches names and attributes\n"
	       "                            (default 3600; the daemon invalidates what it changes)\n\n",
	       prog);
}

static int log_to_syslog;
static int debug;

static void log_func(enum fuse_log_level level, const char *fmt, va_list ap)
{
	if (log_to_syslog)
		vsyslog((int)level, fmt, ap);
	else
		vfprintf(stderr, fmt, ap);
}

static void engine_log(void *arg, enum kv_log_level level, const char *msg)
{
	static const enum fuse_log_level map[] = { FUSE_LOG_ERR, FUSE_LOG_WARNING, FUSE_LOG_INFO,
						   FUSE_LOG_DEBUG };

	if (level > KV_LOG_WARN && !debug)
		return;
	fuse_log(map[level <= KV_LOG_DEBUG ? level : KV_LOG_DEBUG], "smolfs: engine: %s\n", msg);
	(void)arg;
}

/*
 * Fork: the parent waits on a pipe for the child's word that the mount is up
 * (exit 0) or failed (exit 1; the child has printed why).  Returns the
 * pipe's write end in the child, -1 on error.
 */
static int daemon_start(void)
{
	int p[2];
	pid_t pid;
	char c = 1;

	if (pipe(p) < 0) {
		perror("smolfs: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("smolfs: fork");
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1;
		_exit(c ? 1 : 0);
	}
	close(p[0]);
	if (setsid() < 0)
		perror("smolfs: setsid");
	return p[1];
}

/* The mount is up: detach from the terminal and let the parent go. */
static void daemon_ready(int fd)
{
	int null = open("/dev/null", O_RDWR);
	char c = 0;

	if (chdir("/") < 0)
		perror("smolfs: chdir /");
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	log_to_syslog = 1;
	if (write(fd, &c, 1) != 1)
		syslog(LOG_ERR, "smolfs: could not tell the starting command the mount is up");
	close(fd);
}

static void daemon_failed(int fd)
{
	char c = 1;

	if (fd >= 0) {
		if (write(fd, &c, 1) != 1)
			perror("smolfs: write");
		close(fd);
	}
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct options o;
	struct tbl_options to;
	struct fuse_loop_config *lc = NULL;
	static struct fs fs;
	char *mopts = NULL, *datadir = NULL;
	int ret = 1, rc, dfd = -1, mounted = 0, handlers = 0, i;

	memset(&o, 0, sizeof(o));
	memset(&co, 0, sizeof(co));
	umask(077);   /* DATADIR 0700 and its files 0600, whatever the caller's umask */
	o.timeout = 3600;
	fuse_set_log_func(log_func);
	if (fuse_opt_parse(&args, &o, smolfs_opts, opt_proc) < 0)
		goto out;
	if (fuse_parse_cmdline(&args, &co) != 0)
		goto out;
	if (co.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out;
	}
	if (co.show_version) {
		printf("smolfs %s\n", PACKAGE_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!o.datadir || !co.mountpoint) {
		fprintf(stderr, "usage: %s [options] DATADIR MOUNTPOINT\n       %s --help\n",
			argv[0], argv[0]);
		goto out;
	}

	debug = co.debug;
	fs.cfg.sync = o.sync;
	fs.cfg.ro = o.ro;
	fs.cfg.timeout = o.timeout;
	if (o.timeout < 0) {
		fprintf(stderr, "smolfs: timeout=%g: must be 0 or more seconds\n", o.timeout);
		goto out;
	}
	if (o.cache_size && parse_size(o.cache_size, &fs.cfg.cache_size) < 0) {
		fprintf(stderr, "smolfs: cache_size=%s: not a size (bytes, or with K, M, G)\n",
			o.cache_size);
		goto out;
	}
	if (o.max_value_size && (parse_size(o.max_value_size, &fs.cfg.max_value_size) < 0 ||
				 fs.cfg.max_value_size == 0 ||
				 fs.cfg.max_value_size > TBL_LIMIT_MAX_VALUE)) {
		fprintf(stderr, "smolfs: max_value_size=%s: not a size from 1 to 100M\n",
			o.max_value_size);
		goto out;
	}
	/*
	 * Below two largest texts it would refuse values the value limit
	 * allows (a temporary file's commit holds its text twice for a moment).
	 */
	if (o.buffer_limit &&
	    (parse_size(o.buffer_limit, &fs.cfg.buffer_limit) < 0 ||
	     fs.cfg.buffer_limit < 2 * ((fs.cfg.max_value_size ? fs.cfg.max_value_size
							     : TBL_DEFAULT_MAX_VALUE) + 1))) {
		fprintf(stderr, "smolfs: buffer_limit=%s: must be a size of at least "
			"2 x (max_value_size + 1)\n", o.buffer_limit);
		goto out;
	}
	if (mkdir(o.datadir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "smolfs: cannot create %s: %s\n", o.datadir, strerror(errno));
		goto out;
	}
	datadir = realpath(o.datadir, NULL);
	if (!datadir) {
		fprintf(stderr, "smolfs: %s: %s\n", o.datadir, strerror(errno));
		goto out;
	}
	fs_datadir = datadir;
	/*
	 * default_permissions only where other users reach the mount (allow_other
	 * or allow_root).  Without them the kernel refuses everyone but the owner before any
	 * mode is looked at, and the owner holds every mode bit the tree shows
	 * but a cell's execute bit (which the kernel checks without the option)
	 * and the write bit of .smolfs/stats (which the daemon refuses itself):
	 * the option would then only cost requests, a GETATTR of the directory
	 * after every create, mkdir, unlink or rename in it (the kernel drops a
	 * changed directory's attributes and needs its mode for the next path
	 * walk) and one of each new cell at its open.  fs_access answers
	 * access(2) from the same modes.
	 */
	if (fuse_opt_add_opt(&mopts, "subtype=smolfs") < 0 ||
	    (o.allow_other && fuse_opt_add_opt(&mopts, "default_permissions") < 0) ||
	    fuse_opt_add_opt_escaped(&mopts, "fsname=") < 0) {
		fprintf(stderr, "smolfs: out of memory\n");
		goto out;
	}
	{
		/* fsname=DATADIR, its commas and backslashes escaped */
		char *esc = NULL, *full;

		if (fuse_opt_add_opt_escaped(&esc, datadir) < 0 ||
		    !(full = malloc(strlen(mopts) + strlen(esc) + 1))) {
			fprintf(stderr, "smolfs: out of memory\n");
			free(esc);
			goto out;
		}
		sprintf(full, "%s%s", mopts, esc);
		free(mopts);
		free(esc);
		mopts = full;
	}
	if (fuse_opt_add_arg(&args, "-o") < 0 || fuse_opt_add_arg(&args, mopts) < 0) {
		fprintf(stderr, "smolfs: out of memory\n");
		goto out;
	}

	if (!co.foreground) {
		dfd = daemon_start();
		if (dfd < 0)
			goto out;
	}
	fs.uid = getuid();
	fs.gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs.start);
	if (fs_init(&fs) < 0) {
		fprintf(stderr, "smolfs: out of memory\n");
		goto fail;
	}
	tbl_options_init(&to);
	if (fs.cfg.cache_size)
		to.kv.block_cache_size = fs.cfg.cache_size;
	if (fs.cfg.max_value_size)
		to.max_value_size = fs.cfg.max_value_size;
	to.kv.sync_wal = fs.cfg.sync;
	to.kv.read_only = fs.cfg.ro;   /* -o ro never changes DATADIR */
	to.kv.log = engine_log;
#ifdef SMOLFS_FAULT_HOOK
	rc = smolfs_test_env(&to.kv);
	if (rc < 0) {
		fprintf(stderr, "smolfs: the test environment: %s\n", strerror(-rc));
		goto fail;
	}
#endif
	/*
	 * fusermount3 -u returns once the kernel lets go, while the daemon
	 * that served the mount may still be closing the database: a mount
	 * right after an unmount waits a moment for the lock.
	 */
	for (i = 0;; i++) {
		rc = tbl_open(datadir, &to, &fs.db);
		if (rc != -EBUSY || i == 30)
			break;
		usleep(100 * 1000);
	}
	if (rc == -EBUSY) {
		fprintf(stderr, "smolfs: %s is in use: another smolfs or a smolctl holds its "
			"lock; unmount it or wait for the command to finish\n", datadir);
		goto fail;
	}
	if (rc < 0) {
		fprintf(stderr, "smolfs: cannot open the database in %s: %s\n", datadir,
			kv_strerror(rc));
		goto fail;
	}
	fs.se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), &fs);
	if (!fs.se)
		goto fail;
	if (fuse_set_signal_handlers(fs.se) != 0)
		goto fail;
	handlers = 1;
	if (fuse_session_mount(fs.se, co.mountpoint) != 0)
		goto fail;
	mounted = 1;
	rc = fs_notify_start(&fs);
	if (rc < 0) {
		fprintf(stderr, "smolfs: cannot start a thread: %s\n", strerror(-rc));
		goto fail;
	}
	if (dfd >= 0) {
		daemon_ready(dfd);
		dfd = -1;
	}
	fs.cfg.singlethread = co.singlethread;
	if (co.singlethread) {
		rc = fuse_session_loop(fs.se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc) {
			fuse_log(FUSE_LOG_ERR, "smolfs: out of memory\n");
			goto fail;
		}
		fuse_loop_cfg_set_clone_fd(lc, (unsigned)co.clone_fd);
		if (co.max_idle_threads <= 100000)
			fuse_loop_cfg_set_idle_threads(lc, co.max_idle_threads);
		/* libfuse's cmdline leaves -1 when -o max_threads= is not given */
		fuse_loop_cfg_set_max_threads(lc, co.max_threads > 0 && co.max_threads <= 100000
						  ? co.max_threads : 10);
		rc = fuse_session_loop_mt(fs.se, lc);
	}
	/* a signal's number (SIGTERM, SIGINT, SIGHUP) is a clean end, as an unmount is */
	ret = rc == 0 || rc == SIGTERM || rc == SIGINT || rc == SIGHUP ? 0 : 1;
	if (ret)
		fuse_log(FUSE_LOG_ERR, "smolfs: the session loop ended with %d\n", rc);
	goto close;
fail:
	daemon_failed(dfd);
	ret = 1;
close:
	fs_notify_stop(&fs);
	if (mounted)
		fuse_session_unmount(fs.se);
	if (handlers)
		fuse_remove_signal_handlers(fs.se);
	if (fs.se)
		fuse_session_destroy(fs.se);
	if (lc)
		fuse_loop_cfg_destroy(lc);
	/* no request is served any more: what the kernel never released goes first */
	fs_handles_free(&fs);
	if (fs.db) {
		rc = tbl_close(fs.db);
		if (rc < 0) {
			fuse_log(FUSE_LOG_ERR, "smolfs: closing the database in %s: %s\n", datadir,
				 kv_strerror(rc));
			ret = 1;
		}
	}
	fs_scratch_free(&fs);
	fs_destroy(&fs);
out:
	free(mopts);
	free(datadir);
	free(o.datadir);
	free(o.cache_size);
	free(o.max_value_size);
	free(o.buffer_limit);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
