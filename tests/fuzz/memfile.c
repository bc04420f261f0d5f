/*
 * memfile.c -- files in memory for the fuzz targets that open fuzzed bytes
 * as a table or a log through the environment layer, and write the real
 * encoders' output there first (fuzz.h).
 */
#include "fuzz.h"

#include <string.h>

#include "util.h"

struct fuzz_file {
	struct env_file base;
	const uint8_t *data;     /* borrowed */
	size_t len;
};

static int fuzz_pread(struct env_file *f, void *buf, size_t n, uint64_t off, size_t *got)
{
	const struct fuzz_file *m = (const struct fuzz_file *)f;
	size_t k = 0;

	if (off < m->len) {
		k = m->len - (size_t)off;
		if (k > n)
			k = n;
		memcpy(buf, m->data + off, k);
	}
	*got = k;
	return 0;
}

static int fuzz_close(struct env_file *f)
{
	free(f);
	return 0;
}

/* Only what a reader of one open file calls; no map, so blocks are read with pread. */
static const struct env_ops fuzz_file_ops = {
	.pread = fuzz_pread,
	.close = fuzz_close,
};
static struct kv_env fuzz_env = { &fuzz_file_ops };

struct env_file *fuzz_file_new(const uint8_t *data, size_t len)
{
	struct fuzz_file *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	m->base.env = &fuzz_env;
	m->data = data;
	m->len = len;
	return &m->base;
}

/* ------------------------------------------------------------ a file being written */

struct fuzz_out {
	struct env_file base;
	struct buf *out;         /* borrowed */
};

static int fuzz_append(struct env_file *f, const void *buf, size_t n)
{
	buf_append(((struct fuzz_out *)f)->out, buf, n);
	return 0;
}

static int fuzz_sync(struct env_file *f)
{
	return 0;
}

static const struct env_ops fuzz_out_ops = {
	.append = fuzz_append,
	.sync = fuzz_sync,
	.close = fuzz_close,
};
static struct kv_env fuzz_out_env = { &fuzz_out_ops };

struct env_file *fuzz_file_append(struct buf *out)
{
	struct fuzz_out *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	m->base.env = &fuzz_out_env;
	m->out = out;
	return &m->base;
}
