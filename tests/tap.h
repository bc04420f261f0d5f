/*
 * tap.h -- a small Test Anything Protocol producer for smolfs's C tests.
 *
 * Each test program is a sequence of named assertions; automake's TAP driver
 * (build-aux/tap-driver.sh) reads what this prints.  Usage:
 *
 *     plan(3);                      or plan_lazy() and done_testing() at the end
 *     ok(x == 1, "x is one");
 *     is_int(got, 42, "answer");
 *     is_mem(p, n, q, m, "bytes equal");
 *     skip_all("no /dev/fuse");     the whole program is skipped, with a reason
 *     return exit_status();
 *
 * Header-only on purpose: every test is one translation unit and includes it once.
 */
#ifndef SMOLFS_TAP_H
#define SMOLFS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

static int tap_planned = -1;
static int tap_run;
static int tap_failed;

static void tap_vdiag(const char *fmt, va_list ap)
{
	char buf[4096];
	char *line, *save = NULL;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		printf("# %s\n", line);
	fflush(stdout);
}

/* Print a comment line; TAP consumers show it but do not count it. */
__attribute__((format(printf, 1, 2), unused))
static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vdiag(fmt, ap);
	va_end(ap);
}

__attribute__((unused))
static void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

/* The number of tests is printed by done_testing(). */
__attribute__((unused))
static void plan_lazy(void)
{
	tap_planned = -1;
}

__attribute__((unused, noreturn))
static void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

__attribute__((format(printf, 2, 3), unused))
static int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	char name[1024];

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_run, name);
	fflush(stdout);
	return cond;
}

#define is_int(got, want, ...) tap_is_int(__FILE__, __LINE__, (long long)(got), (long long)(want), __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str(__FILE__, __LINE__, (got), (want), __VA_ARGS__)
#define is_mem(g, gl, w, wl, ...) tap_is_mem(__FILE__, __LINE__, (g), (gl), (w), (wl), __VA_ARGS__)

__attribute__((format(printf, 5, 6), unused))
static int tap_is_int(const char *file, int line, long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	char name[1024];
	int r;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	r = ok(got == want, "%s", name);
	if (!r)
		diag("%s:%d: got %lld, want %lld", file, line, got, want);
	return r;
}

__attribute__((format(printf, 5, 6), unused))
static int tap_is_str(const char *file, int line, const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	char name[1024];
	int r;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	r = ok(got && want ? strcmp(got, want) == 0 : got == want, "%s", name);
	if (!r)
		diag("%s:%d: got \"%s\", want \"%s\"", file, line, got ? got : "(null)", want ? want : "(null)");
	return r;
}

__attribute__((format(printf, 7, 8), unused))
static int tap_is_mem(const char *file, int line, const void *got, size_t glen,
		      const void *want, size_t wlen, const char *fmt, ...)
{
	va_list ap;
	char name[1024];
	int r;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	r = ok(glen == wlen && (glen == 0 || memcmp(got, want, glen) == 0), "%s", name);
	if (!r)
		diag("%s:%d: got %zu bytes, want %zu bytes%s", file, line, glen, wlen,
		     glen == wlen ? " (contents differ)" : "");
	return r;
}

__attribute__((unused))
static void skip(int n, const char *why)
{
	while (n-- > 0) {
		tap_run++;
		printf("ok %d # SKIP %s\n", tap_run, why);
	}
	fflush(stdout);
}

__attribute__((unused))
static void done_testing(void)
{
	if (tap_planned < 0) {
		printf("1..%d\n", tap_run);
		tap_planned = tap_run;
	}
	fflush(stdout);
}

/* 0 when every planned test ran and passed; the TAP driver reads the lines, make reads this. */
__attribute__((unused))
static int exit_status(void)
{
	if (tap_planned >= 0 && tap_planned != tap_run) {
		diag("planned %d tests but ran %d", tap_planned, tap_run);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif
