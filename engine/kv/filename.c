/*
 * filename.c -- building and parsing the names of the engine's files (see
 * filename.h for the list).  The database (db.c), compaction's clean-up and
 * the version set all go through here, so a name is spelled once.
 */
#include "filename.h"
#include "util.h"

#include <string.h>

static char *numbered(const char *dir, const char *prefix, uint64_t number, const char *suffix)
{
	if (!dir)
		return xasprintf("%s%06llu%s", prefix, (unsigned long long)number, suffix);
	return xasprintf("%s/%s%06llu%s", dir, prefix, (unsigned long long)number, suffix);
}

static char *fixed(const char *dir, const char *name)
{
	return dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

char *fname_log(const char *dir, uint64_t number)
{
	return numbered(dir, "", number, ".log");
}

char *fname_sst(const char *dir, uint64_t number)
{
	return numbered(dir, "", number, ".sst");
}

char *fname_manifest(const char *dir, uint64_t number)
{
	return numbered(dir, "MANIFEST-", number, "");
}

char *fname_current(const char *dir)
{
	return fixed(dir, "CURRENT");
}

char *fname_current_tmp(const char *dir)
{
	return fixed(dir, "CURRENT.tmp");
}

char *fname_lock(const char *dir)
{
	return fixed(dir, "LOCK");
}

/* Digits [p, end): 1 and *v, or 0 if empty, not all digits, or over 64 bits. */
static int parse_digits(const char *p, const char *end, uint64_t *v)
{
	uint64_t n = 0;

	if (p == end)
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return 0;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*v = n;
	return 1;
}

enum fname_kind fname_parse(const char *name, uint64_t *number)
{
	size_t len = strlen(name);
	const char *end = name + len;

	*number = 0;
	if (!strcmp(name, "CURRENT"))
		return FNAME_CURRENT;
	if (!strcmp(name, "CURRENT.tmp"))
		return FNAME_CURRENT_TMP;
	if (!strcmp(name, "LOCK"))
		return FNAME_LOCK;
	if (!strncmp(name, "MANIFEST-", 9))
		return parse_digits(name + 9, end, number) ? FNAME_MANIFEST : FNAME_OTHER;
	if (len > 4 && !strcmp(end - 4, ".log"))
		return parse_digits(name, end - 4, number) ? FNAME_LOG : FNAME_OTHER;
	if (len > 4 && !strcmp(end - 4, ".sst"))
		return parse_digits(name, end - 4, number) ? FNAME_SST : FNAME_OTHER;
	return FNAME_OTHER;
}
