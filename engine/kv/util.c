/*
 * util.c -- allocation, buffers, encodings, error recording and hashing shared
 * by the engine's modules (see util.h).
 */
#include "util.h"
#include "kv.h"

#include <assert.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void oom(size_t n)
{
	fprintf(stderr, "smolfs: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

char *xstrdup(const char *s)
{
	return xmemdup(s, strlen(s) + 1);
}

char *xmemdup(const void *p, size_t n)
{
	char *q = xmalloc(n + 1);
	if (n)
		memcpy(q, p, n);
	q[n] = 0;
	return q;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	return s;
}

void buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra;

	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap * 2 > cap ? cap * 2 : need;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_append_slow(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void buf_set_slow(struct buf *b, const void *p, size_t n)
{
	b->len = 0;
	buf_append_slow(b, p, n);
}

void buf_put_fixed32(struct buf *b, uint32_t v)
{
	buf_reserve(b, 4);
	enc_fixed32(b->data + b->len, v);
	b->len += 4;
}

void buf_put_fixed64(struct buf *b, uint64_t v)
{
	buf_reserve(b, 8);
	enc_fixed64(b->data + b->len, v);
	b->len += 8;
}

void buf_put_varint32(struct buf *b, uint32_t v)
{
	buf_reserve(b, 5);
	b->len = (size_t)(enc_varint32(b->data + b->len, v) - b->data);
}

void buf_put_varint64(struct buf *b, uint64_t v)
{
	buf_reserve(b, 10);
	b->len = (size_t)(enc_varint64(b->data + b->len, v) - b->data);
}

void buf_put_lenprefixed(struct buf *b, struct slice s)
{
	buf_put_varint32(b, (uint32_t)s.len);
	buf_append(b, s.data, s.len);
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *enc_varint32(char *p, uint32_t v)
{
	return enc_varint64(p, v);
}

char *enc_varint64(char *p, uint64_t v)
{
	unsigned char *u = (unsigned char *)p;

	while (v >= 0x80) {
		*u++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*u++ = (unsigned char)v;
	return (char *)u;
}

int varint_length(uint64_t v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

const char *dec_varint64(const char *p, const char *limit, uint64_t *v)
{
	uint64_t r = 0;
	int shift;

	for (shift = 0; shift <= 63 && p < limit; shift += 7) {
		uint64_t byte = *(const unsigned char *)p++;
		if (shift == 63 && byte > 1)
			return NULL;
		r |= (byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = r;
			return p;
		}
	}
	return NULL;
}

const char *dec_varint32_slow(const char *p, const char *limit, uint32_t *v)
{
	uint32_t r = 0;

	/* at most 5 bytes, and the fifth may carry only the top 4 bits */
	for (int shift = 0; shift <= 28 && p < limit; shift += 7) {
		uint32_t byte = *(const unsigned char *)p++;
		if (shift == 28 && byte > 0x0f)
			return NULL;
		r |= (byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = r;
			return p;
		}
	}
	return NULL;
}

const char *dec_lenprefixed(const char *p, const char *limit, struct slice *out)
{
	uint32_t n;

	p = dec_varint32(p, limit, &n);
	if (!p || (size_t)(limit - p) < n)
		return NULL;
	*out = slice_make(p, n);
	return p + n;
}

static _Thread_local char last_error[1024];
static _Thread_local int last_error_code;   /* the (negative) error last_error explains */
static _Thread_local int api_depth;         /* public calls in progress on this thread */

int err_set(int err, const char *srcfile, int srcline, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	last_error_code = err > 0 ? -err : err;
	if (n >= 0 && (size_t)n < sizeof(last_error) && err == -EUCLEAN &&
	    !strstr(last_error, " [detected at ")) {
		const char *base = strrchr(srcfile, '/');
		snprintf(last_error + n, sizeof(last_error) - (size_t)n, " [detected at %s:%d]",
			 base ? base + 1 : srcfile, srcline);
	}
	return err;
}

const char *err_last(void)
{
	return last_error;
}

void err_clear(void)
{
	last_error[0] = 0;
	last_error_code = 0;
}

int err_api_enter(void)
{
	if (api_depth++ == 0)
		err_clear();
	return 0;
}

void err_api_leave(int *guard)
{
	(void)guard;
	assert(api_depth > 0);
	api_depth--;
}

const char *kv_strerror(int err)
{
	int code = err > 0 ? -err : err;

	if (code != 0 && last_error[0] && last_error_code == code)
		return last_error;
	return strerror(-code);
}

uint64_t now_micros(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t wall_micros(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * hash64: eight bytes at a time, each folded in with a multiply and a rotate,
 * then a final avalanche (the 64-bit finaliser of the "fmix" kind).  Good
 * enough dispersion for bloom filters and shard choice; not cryptographic.
 */
static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

uint64_t hash64(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *u = p;
	uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (n + 1));
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t k = dec_fixed64((const char *)u + i);
		k *= 0x87c37b91114253d5ull;
		k = rotl64(k, 31);
		k *= 0x4cf5ad432745937full;
		h ^= k;
		h = rotl64(h, 27) * 5 + 0x52dce729;
	}
	if (i < n) {
		uint64_t k = 0;
		for (size_t j = n; j > i; j--)
			k = k << 8 | u[j - 1];
		k *= 0x87c37b91114253d5ull;
		k = rotl64(k, 31);
		k *= 0x4cf5ad432745937full;
		h ^= k;
	}
	return fmix64(h ^ n);
}

int helper_thread_create(pthread_t *t, int detached, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	sigset_t all, old;
	int r;

	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_attr_init(&a);
	if (detached)
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(t, &a, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return r;
}
