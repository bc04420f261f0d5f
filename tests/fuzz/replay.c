/*
 * replay.c -- the main() that turns a fuzz target into a regression test:
 * every file of the target's committed corpus (tests/fuzz/corpus/<target>/,
 * or the files and directories named on the command line) is fed once to
 * LLVMFuzzerTestOneInput, one TAP assertion per file.  A broken invariant
 * aborts (FUZZ_CHECK), which the TAP driver reports as an error with the
 * file last named; so `make check` replays the corpora, findings included,
 * with any compiler and without libFuzzer.  FUZZ_TARGET (the target's name)
 * is defined by the Makefile.
 */
#include "tap.h"
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

struct list {
	char **paths;
	size_t n, cap;
};

static void add(struct list *l, const char *path)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->paths = realloc(l->paths, l->cap * sizeof(*l->paths));
		if (!l->paths)
			abort();
	}
	l->paths[l->n++] = strdup(path);
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory gives its regular files, sorted (so runs are repeatable); a file itself. */
static int collect(struct list *l, const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	size_t first = l->n;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		add(l, path);
		return 0;
	}
	if (!(d = opendir(path)))
		return -errno;
	while ((de = readdir(d))) {
		char p[4096];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			add(l, p);
	}
	closedir(d);
	qsort(l->paths + first, l->n - first, sizeof(*l->paths), cmp_path);
	return 0;
}

static int read_all(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0, k;
	uint8_t *b;

	if (!f)
		return -errno;
	b = malloc(cap);
	while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	if (!b)
		abort();
	*data = b;
	*len = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct list l = { 0 };
	const char *src = getenv("SMOLFS_SRCDIR");
	char dir[4096];
	int r;

	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if ((r = collect(&l, argv[i])) < 0) {
				fprintf(stderr, "%s: %s\n", argv[i], strerror(-r));
				return 2;
			}
	} else {
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src ? src : ".", FUZZ_TARGET);
		if ((r = collect(&l, dir)) < 0) {
			printf("Bail out! corpus %s: %s\n", dir, strerror(-r));
			return 1;
		}
	}
	/* an empty corpus would make a test that cannot fail */
	plan((int)l.n + 1);
	ok(l.n > 0, "%s: the corpus has inputs", FUZZ_TARGET);
	for (size_t i = 0; i < l.n; i++) {
		uint8_t *data = NULL;
		size_t len = 0;

		if ((r = read_all(l.paths[i], &data, &len)) < 0) {
			ok(0, "%s: read: %s", l.paths[i], strerror(-r));
			continue;
		}
		fflush(stdout);
		LLVMFuzzerTestOneInput(data, len);
		free(data);
		ok(1, "%s (%zu bytes): every invariant holds", strrchr(l.paths[i], '/') ?
		   strrchr(l.paths[i], '/') + 1 : l.paths[i], len);
		free(l.paths[i]);
	}
	free(l.paths);
	return exit_status();
}
