/*
 * tutil.c -- allocation and buffers for the tools (tutil.h).
 */
#include "tutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void out_of_memory(size_t n)
{
	fprintf(stderr, "%s: out of memory (%zu bytes)\n", program_invocation_short_name, n);
	exit(1);
}

void *tool_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory(n);
	return p;
}

void *tool_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory(n * size);
	return p;
}

void *tool_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory(n);
	return q;
}

char *tool_strdup(const char *s)
{
	return tool_memdup(s, strlen(s) + 1);
}

void *tool_memdup(const void *p, size_t n)
{
	char *q = tool_malloc(n + 1);

	if (n)
		memcpy(q, p, n);
	q[n] = 0;   /* callers treat a copied name as a string */
	return q;
}

void tool_buf_reserve(struct buf *b, size_t extra)
{
	size_t cap = b->cap ? b->cap : 64;

	if (extra <= b->cap - b->len)
		return;
	if (extra > SIZE_MAX - b->len)
		out_of_memory(SIZE_MAX);
	while (cap < b->len + extra)
		cap = cap > SIZE_MAX / 2 ? b->len + extra : cap * 2;
	b->data = tool_realloc(b->data, cap);
	b->cap = cap;
}

void tool_buf_append(struct buf *b, const void *p, size_t n)
{
	tool_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void tool_buf_set(struct buf *b, const void *p, size_t n)
{
	b->len = 0;
	tool_buf_append(b, p, n);
}

void tool_buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

uint64_t tool_now_micros(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
