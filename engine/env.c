/*
 * env.c -- the POSIX environment: files through open/pread/write/fdatasync,
 * names through rename/unlink/fsync of the directory, and the database's
 * lock through fcntl.
 *
 * fcntl locks belong to a process, so a second lock of the same file from
 * the same process would silently succeed; a process-wide table of locked
 * (device, inode) pairs catches that case too, and both give -EBUSY.
 */
#include "env.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct posix_file {
	struct env_file base;
	int fd;
	dev_t dev;      /* lock files only */
	ino_t ino;
	char *path;
};

static int err_path(int err, const char *what, const char *path)
{
	return KV_ERROR(-err, "%s %s: %s", what, path, strerror(err));
}

static struct posix_file *pf_new(struct kv_env *env, int fd, const char *path)
{
	struct posix_file *f = xcalloc(1, sizeof(*f));

	f->base.env = env;
	f->fd = fd;
	f->path = xstrdup(path);
	return f;
}

static int posix_open_read(struct kv_env *env, const char *path, struct env_file **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return err_path(errno, "open", path);
	*out = &pf_new(env, fd, path)->base;
	return 0;
}

static int posix_open_append(struct kv_env *env, const char *path, struct env_file **out)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	*out = NULL;
	if (fd < 0)
		return err_path(errno, "create", path);
	*out = &pf_new(env, fd, path)->base;
	return 0;
}

static int posix_pread(struct env_file *ef, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct posix_file *f = (struct posix_file *)ef;
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			*got = done;
			return err_path(errno, "read", f->path);
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

static int posix_append(struct env_file *ef, const void *buf, size_t n)
{
	struct posix_file *f = (struct posix_file *)ef;
	const char *p = buf;

	while (n > 0) {
		ssize_t r = write(f->fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_path(errno, "write", f->path);
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int posix_sync(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;

	if (fdatasync(f->fd) < 0)
		return err_path(errno, "fdatasync", f->path);
	return 0;
}

static int posix_close(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;
	int r = 0;

	if (close(f->fd) < 0 && errno != EINTR)
		r = err_path(errno, "close", f->path);
	free(f->path);
	free(f);
	return r;
}

static int posix_file_size(struct kv_env *env, const char *path, uint64_t *size)
{
	struct stat st;

	(void)env;
	if (stat(path, &st) < 0)
		return err_path(errno, "stat", path);
	*size = (uint64_t)st.st_size;
	return 0;
}

static int posix_exists(struct kv_env *env, const char *path)
{
	(void)env;
	return access(path, F_OK) == 0;
}

static int posix_rename(struct kv_env *env, const char *from, const char *to)
{
	(void)env;
	if (rename(from, to) < 0)
		return KV_ERROR(-errno, "rename %s to %s: %s", from, to, strerror(errno));
	return 0;
}

static int posix_unlink(struct kv_env *env, const char *path)
{
	(void)env;
	if (unlink(path) < 0)
		return err_path(errno, "unlink", path);
	return 0;
}

static int posix_truncate(struct kv_env *env, const char *path, uint64_t size)
{
	(void)env;
	if (truncate(path, (off_t)size) < 0)
		return err_path(errno, "truncate", path);
	return 0;
}

static int posix_mkdir(struct kv_env *env, const char *path)
{
	(void)env;
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_path(errno, "mkdir", path);
	return 0;
}

static int posix_sync_dir(struct kv_env *env, const char *path)
{
	int fd, r = 0;

	(void)env;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_path(errno, "open directory", path);
	if (fsync(fd) < 0)
		r = err_path(errno, "fsync directory", path);
	close(fd);
	return r;
}

static int posix_list_dir(struct kv_env *env, const char *path, char ***names, size_t *n)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t cap = 16;

	(void)env;
	*names = NULL;
	*n = 0;
	if (!d)
		return err_path(errno, "opendir", path);
	*names = xmalloc(cap * sizeof(char *));
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap *= 2;
			*names = xrealloc(*names, cap * sizeof(char *));
		}
		(*names)[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	return 0;
}

/* The (device, inode) pairs this process holds locks on. */
static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct posix_file **locks;
static size_t nlocks;

static int posix_lock(struct kv_env *env, const char *path, struct env_file **out)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct posix_file *f;
	struct stat st;
	int fd = -1, r = 0;

	*out = NULL;
	pthread_mutex_lock(&locks_mu);
	/*
	 * Look in our own table before opening anything: closing any descriptor
	 * of a file drops every fcntl lock this process holds on it, so even a
	 * refused second open must not open and close the lock file.
	 */
	if (stat(path, &st) == 0) {
		for (size_t i = 0; i < nlocks; i++) {
			if (locks[i]->dev == st.st_dev && locks[i]->ino == st.st_ino) {
				r = KV_ERROR(-EBUSY, "%s is locked: the database is already open "
					     "in this process", path);
				goto out;
			}
		}
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = err_path(errno, "open lock file", path);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		r = err_path(errno, "stat lock file", path);
		goto out;
	}
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		if (errno == EACCES || errno == EAGAIN)
			r = KV_ERROR(-EBUSY, "%s is locked: another process has the database open", path);
		else
			r = err_path(errno, "lock", path);
		goto out;
	}
	f = pf_new(env, fd, path);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	locks = xrealloc(locks, (nlocks + 1) * sizeof(*locks));
	locks[nlocks++] = f;
	*out = &f->base;
out:
	pthread_mutex_unlock(&locks_mu);
	if (r < 0 && fd >= 0)
		close(fd);
	return r;
}

static int posix_unlock(struct env_file *ef)
{
	struct posix_file *f = (struct posix_file *)ef;

	pthread_mutex_lock(&locks_mu);
	for (size_t i = 0; i < nlocks; i++) {
		if (locks[i] == f) {
			locks[i] = locks[--nlocks];
			break;
		}
	}
	pthread_mutex_unlock(&locks_mu);
	return posix_close(ef);   /* closing the descriptor drops the fcntl lock */
}

static void posix_destroy(struct kv_env *env)
{
	(void)env;  /* the POSIX environment is static */
}

static const struct kv_env_ops posix_ops = {
	.open_read = posix_open_read,
	.open_append = posix_open_append,
	.pread = posix_pread,
	.append = posix_append,
	.sync = posix_sync,
	.close = posix_close,
	.file_size = posix_file_size,
	.exists = posix_exists,
	.rename = posix_rename,
	.unlink = posix_unlink,
	.truncate = posix_truncate,
	.mkdir = posix_mkdir,
	.sync_dir = posix_sync_dir,
	.list_dir = posix_list_dir,
	.lock = posix_lock,
	.unlock = posix_unlock,
	.destroy = posix_destroy,
};

static struct kv_env posix_env = { &posix_ops };

struct kv_env *env_posix(void)
{
	return &posix_env;
}

void env_free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int env_read_exact(struct env_file *f, void *buf, size_t n, uint64_t off)
{
	size_t got;
	int r = env_pread(f, buf, n, off, &got);

	if (r < 0)
		return r;
	if (got != n)
		return KV_ERROR(-EIO, "short read: %zu of %zu bytes at offset %llu", got, n,
				(unsigned long long)off);
	return 0;
}

int env_read_file(struct kv_env *e, const char *path, char **data, size_t *len)
{
	struct env_file *f;
	uint64_t size;
	size_t got;
	int r;

	*data = NULL;
	*len = 0;
	r = env_file_size(e, path, &size);
	if (r < 0)
		return r;
	r = env_open_read(e, path, &f);
	if (r < 0)
		return r;
	*data = xmalloc((size_t)size + 1);
	r = env_pread(f, *data, (size_t)size, 0, &got);
	env_close(f);
	if (r < 0) {
		free(*data);
		*data = NULL;
		return r;
	}
	(*data)[got] = 0;
	*len = got;
	return 0;
}

int env_write_file(struct kv_env *e, const char *path, const void *data, size_t len, const char *dir)
{
	struct env_file *f;
	int r, rc;

	r = env_open_append(e, path, &f);
	if (r < 0)
		return r;
	r = env_append(f, data, len);
	if (r == 0)
		r = env_sync(f);
	rc = env_close(f);
	if (r == 0)
		r = rc;
	if (r == 0 && dir)
		r = env_sync_dir(e, dir);
	return r;
}
