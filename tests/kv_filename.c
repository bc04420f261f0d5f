/*
 * kv_filename.c -- tests for engine/kv/filename.c: the engine's file names
 * are spelled as the on-disk format says, and parsing accepts exactly those
 * names (a stray file in the directory is never mistaken for a log, table or
 * manifest, which the engine would replay or delete).
 */
#include "tap.h"
#include "filename.h"

#include <stdlib.h>

static void is_name(char *got, const char *want, const char *what)
{
	is_str(got, want, "%s", what);
	free(got);
}

static void test_build(void)
{
	is_name(fname_log("/d", 7), "/d/000007.log", "a log is dir/NNNNNN.log");
	is_name(fname_sst("/d", 1234567), "/d/1234567.sst", "numbers past six digits are not cut");
	is_name(fname_manifest("/d", 12), "/d/MANIFEST-000012", "a manifest is MANIFEST-NNNNNN");
	is_name(fname_manifest(NULL, 12), "MANIFEST-000012", "without a directory, the bare name");
	is_name(fname_sst(NULL, 3), "000003.sst", "a bare table name");
	is_name(fname_current("/d"), "/d/CURRENT", "CURRENT");
	is_name(fname_current_tmp("/d"), "/d/CURRENT.tmp", "CURRENT.tmp");
	is_name(fname_lock("/d"), "/d/LOCK", "LOCK");
}

static void parses(const char *name, enum fname_kind kind, uint64_t number)
{
	uint64_t n = 99;
	enum fname_kind k = fname_parse(name, &n);

	ok(k == kind && n == number, "\"%s\" parses as kind %d number %llu (got %d, %llu)", name,
	   (int)kind, (unsigned long long)number, (int)k, (unsigned long long)n);
}

static void test_parse(void)
{
	parses("000007.log", FNAME_LOG, 7);
	parses("7.log", FNAME_LOG, 7);
	parses("1234567.sst", FNAME_SST, 1234567);
	parses("MANIFEST-000012", FNAME_MANIFEST, 12);
	parses("18446744073709551615.sst", FNAME_SST, UINT64_MAX);
	parses("CURRENT", FNAME_CURRENT, 0);
	parses("CURRENT.tmp", FNAME_CURRENT_TMP, 0);
	parses("LOCK", FNAME_LOCK, 0);
	/* not the engine's: never replayed, never deleted */
	parses("18446744073709551616.sst", FNAME_OTHER, 0);
	parses(".log", FNAME_OTHER, 0);
	parses("x12.log", FNAME_OTHER, 0);
	parses("12.log~", FNAME_OTHER, 0);
	parses("-12.log", FNAME_OTHER, 0);
	parses("+12.sst", FNAME_OTHER, 0);
	parses("12 .sst", FNAME_OTHER, 0);
	parses("12.ldb", FNAME_OTHER, 0);
	parses("MANIFEST-", FNAME_OTHER, 0);
	parses("MANIFEST-12x", FNAME_OTHER, 0);
	parses("MANIFEST-000012.bak", FNAME_OTHER, 0);
	parses("CURRENT.bak", FNAME_OTHER, 0);
	parses("current", FNAME_OTHER, 0);
	parses("LOCK2", FNAME_OTHER, 0);
	parses("", FNAME_OTHER, 0);
}

/* What is built parses back to itself, for numbers of every width. */
static void test_round_trip(void)
{
	int bad = 0;

	for (uint64_t n = 0, step = 1; n < UINT64_MAX / 3; n += step, step = step * 3 + 1) {
		char *names[3] = { fname_log(NULL, n), fname_sst(NULL, n), fname_manifest(NULL, n) };
		enum fname_kind kinds[3] = { FNAME_LOG, FNAME_SST, FNAME_MANIFEST };
		for (int i = 0; i < 3; i++) {
			uint64_t got;
			if (fname_parse(names[i], &got) != kinds[i] || got != n)
				bad++;
			free(names[i]);
		}
	}
	is_int(bad, 0, "every built name parses back to its kind and number");
}

int main(void)
{
	plan(32);
	test_build();
	test_parse();
	test_round_trip();
	return exit_status();
}
