/*
 * tap.h -- a small Test Anything Protocol producer for smolfs's C tests.
 *
 * Each test program is a sequence of named assertions; automake's TAP driver
 * (build-aux/tap-driver.sh) reads what this prints.  Usage:
 *
 *     plan(3);                      the number of assertions, known up front
 *   or, where a count depends on a random run:
 *     plan_lazy();                  then expect(n) before each part that makes n
 *     ...                           assertions, and done_testing() at the end
 *     ok(x == 1, "x is one");
 *     is_int(got, 42, "answer");
 *     is_mem(p, n, q, m, "bytes equal");
 *     skip_all("no /dev/fuse");     the whole program is skipped, with a reason
 *     return exit_status();
 *
 * A test that stops early must fail, never pass with fewer assertions: plan(n)
 * prints "1..n" first, so the TAP driver reports missing ones; with a lazy plan
 * done_testing() prints the sum of the expect() calls, not what ran, and
 * exit_status() fails on any difference.  An assertion whose condition does
 * not apply still counts: call skip(1, why) in its place.
 *
 * Names are escaped ('#' as "\#", backslashes doubled, newlines as spaces),
 * so a name can never turn a failure into a TODO or a SKIP.
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
static int tap_lazy;          /* plan_lazy() was called */
static int tap_expected;      /* lazy plans: the sum of expect() */
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

/* The plan is the sum of the expect() calls, printed by done_testing(). */
__attribute__((unused))
static void plan_lazy(void)
{
	tap_planned = -1;
	tap_lazy = 1;
}

/* With a lazy plan: the part that follows makes n more assertions. */
__attribute__((unused))
static void expect(int n)
{
	tap_expected += n;
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

	char esc[2 * sizeof(name)];
	size_t i, j = 0;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	for (i = 0; name[i]; i++) {
		if (name[i] == '#' || name[i] == '\\')
			esc[j++] = '\\';
		esc[j++] = name[i] == '\n' || name[i] == '\r' ? ' ' : name[i];
	}
	esc[j] = 0;
	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_run, esc);
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

/*
 * A part of a lazily planned test (one randomized trial, say) that makes n
 * assertions: part_begin() adds n to the plan; part_end() checks that they
 * ran.  A part that stopped early after one of its assertions failed has the
 * rest marked skipped (the failure is already counted); one that stopped
 * early without a failure leaves the plan short, and the test fails.
 */
struct tap_part {
	int base, n, failed;
};

__attribute__((unused))
static struct tap_part part_begin(int n)
{
	struct tap_part p = { tap_run, n, tap_failed };

	expect(n);
	return p;
}

__attribute__((unused))
static void part_end(struct tap_part p)
{
	int ran = tap_run - p.base;

	if (ran < p.n && tap_failed > p.failed)
		skip(p.n - ran, "not reached after a failure above");
}

__attribute__((unused))
static void done_testing(void)
{
	if (tap_planned < 0) {
		if (!tap_lazy)
			diag("done_testing() without plan_lazy(): nothing was planned");
		printf("1..%d\n", tap_expected);
		tap_planned = tap_expected;
	}
	fflush(stdout);
}

/* 0 when every planned test ran and passed; the TAP driver reads the lines, make reads this. */
__attribute__((unused))
static int exit_status(void)
{
	if (tap_planned < 0) {
		diag("no plan was printed (plan(n), or plan_lazy() ... done_testing())");
		return 1;
	}
	if (tap_planned != tap_run) {
		diag("planned %d assertions but ran %d: a part stopped early, or the plan "
		     "(plan(n) or expect(n)) no longer matches the test", tap_planned, tap_run);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif
