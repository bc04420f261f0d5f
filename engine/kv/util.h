/*
 * util.h -- the small pieces every module of the engine uses: byte slices
 * and growable buffers (their types are public, in slice.h), fixed-width and
 * varint encodings, allocation that cannot fail, and the error macros that
 * record where an error began.
 *
 * Encodings are little-endian.  A varint stores 7 bits per byte, low bits
 * first, with the high bit set on every byte but the last (at most 5 bytes for
 * 32 bits, 10 for 64).
 */
#ifndef SMOLFS_UTIL_H
#define SMOLFS_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "slice.h"   /* struct slice, struct buf: the public API's byte types */

/*
 * The first n bytes of a and b in memcmp order, for the short keys that
 * dominate every lookup and merge: eight bytes at a time as big-endian
 * words, without the call into libc that memcmp costs; long common
 * prefixes still go to memcmp, which is faster there.
 */
static inline int bytes_cmp(const char *a, const char *b, size_t n)
{
	while (n >= 8) {
		uint64_t x, y;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			x = __builtin_bswap64(x);
			y = __builtin_bswap64(y);
#endif
			return x < y ? -1 : 1;
		}
		a += 8;
		b += 8;
		n -= 8;
		if (n > 32)
			return memcmp(a, b, n);
	}
	for (; n; a++, b++, n--)
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
	return 0;
}

/* memcmp order; a proper prefix sorts first. */
static inline int slice_cmp(struct slice a, struct slice b)
{
	size_t n = a.len < b.len ? a.len : b.len;
	int r = bytes_cmp(a.data, b.data, n);

	if (r == 0)
		r = a.len < b.len ? -1 : a.len > b.len;
	return r;
}

/* Allocation: on exhaustion these print and abort, so callers never check. */
/*
 * Start a helper thread (detached if asked) with every signal blocked but
 * the synchronous faults (SIGBUS, SIGSEGV, SIGFPE, SIGILL): signals are
 * for the application's threads (a FUSE loop's SIGTERM must reach a thread
 * that reads the device), and a blocked fault would kill the process
 * instead of reaching a guard.  0 or a positive errno, as pthread_create.
 */
int helper_thread_create(pthread_t *t, int detached, void *(*fn)(void *), void *arg);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xmemdup(const void *p, size_t n);
/* printf into a new malloc'd string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growing a struct buf (slice.h); these abort on exhaustion as xmalloc does. */
void buf_reserve(struct buf *b, size_t extra);  /* room for len + extra */
void buf_append_slow(struct buf *b, const void *p, size_t n);
/* Append n bytes (inline while they fit: block iterators rebuild a key per entry). */
static inline void buf_append(struct buf *b, const void *p, size_t n)
{
	if (n <= b->cap - b->len) {
		if (n)
			memcpy(b->data + b->len, p, n);
		b->len += n;
		return;
	}
	buf_append_slow(b, p, n);
}
void buf_set_slow(struct buf *b, const void *p, size_t n);
/* Replace the contents (inline while they fit: iterators save a key per step). */
static inline void buf_set(struct buf *b, const void *p, size_t n)
{
	if (n <= b->cap) {
		if (n)
			memcpy(b->data, p, n);
		b->len = n;
		return;
	}
	buf_set_slow(b, p, n);
}
void buf_put_fixed32(struct buf *b, uint32_t v);
void buf_put_fixed64(struct buf *b, uint64_t v);
void buf_put_varint32(struct buf *b, uint32_t v);
void buf_put_varint64(struct buf *b, uint64_t v);
void buf_put_lenprefixed(struct buf *b, struct slice s);  /* varint32 length + bytes */
static inline void buf_clear(struct buf *b) { b->len = 0; }
void buf_free(struct buf *b);
static inline struct slice buf_slice(const struct buf *b) { return slice_make(b->data, b->len); }

static inline void enc_fixed32(char *p, uint32_t v)
{
	p[0] = (char)v; p[1] = (char)(v >> 8); p[2] = (char)(v >> 16); p[3] = (char)(v >> 24);
}

static inline void enc_fixed64(char *p, uint64_t v)
{
	enc_fixed32(p, (uint32_t)v);
	enc_fixed32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t dec_fixed32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static inline uint64_t dec_fixed64(const char *p)
{
	return (uint64_t)dec_fixed32(p) | (uint64_t)dec_fixed32(p + 4) << 32;
}

/* Write a varint at p (room for 5 / 10 bytes); return the byte after it. */
char *enc_varint32(char *p, uint32_t v);
char *enc_varint64(char *p, uint64_t v);
int varint_length(uint64_t v);
/*
 * Read a varint from [p, limit); return the byte after it, or NULL if it is
 * truncated or too long (the caller reports corruption).
 */
const char *dec_varint32_slow(const char *p, const char *limit, uint32_t *v);
const char *dec_varint64(const char *p, const char *limit, uint64_t *v);
/* Most varints in blocks and batches are lengths below 128: one byte, decoded inline. */
static inline const char *dec_varint32(const char *p, const char *limit, uint32_t *v)
{
	if (p < limit && !(*(const unsigned char *)p & 0x80)) {
		*v = *(const unsigned char *)p;
		return p + 1;
	}
	return dec_varint32_slow(p, limit, v);
}
/* Read a varint32 length and that many bytes; NULL if they do not fit. */
const char *dec_lenprefixed(const char *p, const char *limit, struct slice *out);

/*
 * Errors.  err_set() records a sentence for kv_strerror() (per thread),
 * together with the code it explains, and returns err.  ERR_CORRUPT() builds
 * a corruption error that says which source line detected it, as in
 *     return ERR_CORRUPT("%s: bad block checksum at offset %llu", name, off);
 *
 * A sentence belongs to one error of one call: kv_strerror(err) and
 * tbl_strerror(err) give it only if it was recorded with err during the
 * calling thread's last public call, else strerror.  So every public call
 * (kv_ and tbl_ functions that can fail) starts with API_ENTRY(), which
 * clears the message at the outermost call only: a public function called
 * by another (tbl_open's kv_close on its error path) keeps the outer
 * call's message.  The guard leaves with the function (GCC's cleanup
 * attribute), whichever return it takes.
 */
int err_set(int err, const char *srcfile, int srcline, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define ERR_SET(err, ...) err_set((err), __FILE__, __LINE__, __VA_ARGS__)
#define ERR_CORRUPT(...) err_set(-EUCLEAN, __FILE__, __LINE__, __VA_ARGS__)
/* The last message recorded on this thread ("" if none), whatever its code. */
const char *err_last(void);
/* Forget the thread's message (it explained an error that has been dealt with). */
void err_clear(void);
int err_api_enter(void);
void err_api_leave(int *guard);
#define API_ENTRY() \
	int api_entry_guard_ __attribute__((cleanup(err_api_leave), unused)) = err_api_enter()

/* Microseconds of CLOCK_MONOTONIC and of the wall clock. */
uint64_t now_micros(void);
uint64_t wall_micros(void);

/* A small fast PRNG for tests, sampling and skiplist heights (xorshift64*). */
static inline uint64_t rand_next(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* 64-bit hash of bytes, for bloom filters and cache sharding. */
uint64_t hash64(const void *p, size_t n, uint64_t seed);

#endif
