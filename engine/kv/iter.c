/*
 * iter.c -- the empty iterator, returned where there is nothing to walk or
 * where opening the thing to walk failed (it then carries the error).
 */
#include "iter.h"

#include <stdlib.h>

struct empty_iter {
	struct iter base;
	int status;
};

static int e_valid(struct iter *it) { (void)it; return 0; }
static void e_nop(struct iter *it) { (void)it; }
static void e_seek(struct iter *it, struct slice t) { (void)it; (void)t; }
static struct slice e_none(struct iter *it) { (void)it; return slice_make(NULL, 0); }
static int e_status(struct iter *it) { return ((struct empty_iter *)it)->status; }
static void e_destroy(struct iter *it) { free(it); }

static const struct iter_ops empty_ops = {
	.valid = e_valid, .seek_first = e_nop, .seek_last = e_nop, .seek = e_seek,
	.next = e_nop, .prev = e_nop, .key = e_none, .value = e_none,
	.status = e_status, .destroy = e_destroy,
};

struct iter *iter_empty(int status)
{
	struct empty_iter *e = xmalloc(sizeof(*e));

	e->base.ops = &empty_ops;
	e->status = status;
	return &e->base;
}
