/*
 * tutil.h -- the tools' own small helpers: allocation that never returns
 * NULL (a command-line tool has nothing better to do on exhaustion than to
 * say so and exit) and growing the public struct buf (slice.h).  The tools
 * see the engine only through its public headers; these are not the
 * engine's helpers, and the engine does not use them.
 */
#ifndef SMOLFS_TUTIL_H
#define SMOLFS_TUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "slice.h"

/* On exhaustion these print "PROGRAM: out of memory" and exit with status 1. */
void *tool_malloc(size_t n);
void *tool_calloc(size_t n, size_t size);
void *tool_realloc(void *p, size_t n);
char *tool_strdup(const char *s);
/* n bytes of p, and a NUL after them (so a copied name is a string) */
void *tool_memdup(const void *p, size_t n);

/* Room for b->len + extra bytes. */
void tool_buf_reserve(struct buf *b, size_t extra);
void tool_buf_append(struct buf *b, const void *p, size_t n);
/* Replace the contents. */
void tool_buf_set(struct buf *b, const void *p, size_t n);
static inline void tool_buf_clear(struct buf *b)
{
	b->len = 0;
}
/* Release the bytes; b is empty (BUF_INIT) after. */
void tool_buf_free(struct buf *b);

/* Microseconds of CLOCK_MONOTONIC, for durations and progress. */
uint64_t tool_now_micros(void);

#endif
