/*
 * slice.h -- the two byte types of the public API (cell.h): a borrowed view
 * of bytes, and a growable buffer that the engine appends to.  Types and
 * pure inline helpers only; this header has no allocator and records no
 * errors, so a front-end including it takes on nothing of the engine's.
 */
#ifndef SMOLFS_SLICE_H
#define SMOLFS_SLICE_H

#include <stddef.h>
#include <string.h>

/* A borrowed view of bytes; never owns memory.  data may be NULL when len is 0. */
struct slice {
	const char *data;
	size_t len;
};

static inline struct slice slice_make(const void *p, size_t n)
{
	struct slice s = { (const char *)p, n };
	return s;
}

/* A NUL-terminated string, without its NUL. */
static inline struct slice slice_str(const char *s)
{
	return slice_make(s, strlen(s));
}

static inline int slice_eq(struct slice a, struct slice b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

/*
 * A growable byte buffer: len bytes used of cap allocated at data.  A
 * zero-initialised one (BUF_INIT) is empty.  Functions of the public API that
 * take a struct buf append to it (or clear it first, as each one says),
 * growing data with realloc(); so data is always NULL or from malloc, and the
 * owner releases it with free(b->data).  A caller may grow the same buffer
 * with its own realloc() between such calls.
 */
struct buf {
	char *data;
	size_t len, cap;
};
#define BUF_INIT { NULL, 0, 0 }

#endif
