/*
 * fs_name.c -- tests of fs/name.c: the escaping of keys into file names is
 * reversible and unique, reserved names cannot be produced by a key, long
 * names give ENAMETOOLONG, and "q@ts" names split as the tree says.
 */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "../fs/name.h"

static void check_escape(const char *key, size_t len, enum fs_name_kind kind, const char *want,
			 const char *what)
{
	char out[FS_NAME_MAX + 1];
	unsigned char back[FS_NAME_MAX + 1];
	size_t n = 0, bn = 0;
	int rc = fs_name_escape(key, len, kind, 0, out, &n);

	if (!ok(rc == 0 && n == strlen(want) && !strcmp(out, want), "%s: escaped as %s", what,
		want) && rc == 0)
		diag("  got %s", out);
	rc = fs_name_unescape(out, n, back, &bn);
	ok(rc == 0 && bn == len && !memcmp(back, key, len), "%s: unescapes to the key", what);
}

/* Every escaped name round-trips and holds no "/" or NUL; distinct keys give distinct names. */
static void random_roundtrip(void)
{
	uint64_t seed = 12345;
	int bad = 0, i;

	for (i = 0; i < 20000; i++) {
		unsigned char key[80], back[FS_NAME_MAX + 1];
		char out[FS_NAME_MAX + 1];
		size_t len, n, bn, j;
		enum fs_name_kind kind = i & 1 ? FS_NAME_QUALIFIER : FS_NAME_ROW;
		int rc;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = (seed >> 33) % 80;
		for (j = 0; j < len; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* biased towards the interesting bytes */
			if ((seed >> 40) % 7 == 0)
				key[j] = (unsigned char)"%/@.\0\xc3\xa9"[(seed >> 20) % 7];
			else
				key[j] = (unsigned char)(seed >> 48);
		}
		rc = fs_name_escape(key, len, kind, 0, out, &n);
		if (rc == -ENAMETOOLONG)
			continue;
		if (rc || memchr(out, '/', n) || strlen(out) != n || !strcmp(out, ".") ||
		    !strcmp(out, "..") || out[0] == '.' ||
		    (kind == FS_NAME_QUALIFIER && memchr(out, '@', n))) {
			bad++;
			continue;
		}
		if (fs_name_unescape(out, n, back, &bn) || bn != len || memcmp(back, key, len))
			bad++;
	}
	ok(bad == 0, "20000 random keys escape to valid names that unescape to the key (%d bad)",
	   bad);
}

int main(void)
{
	char out[FS_NAME_MAX + 1], big[600];
	unsigned char back[FS_NAME_MAX + 1];
	size_t n, qn;
	uint64_t ts;

	plan(51);

	check_escape("plane#TF-FIR", 12, FS_NAME_ROW, "plane#TF-FIR", "a plain row key");
	check_escape("com.github/about", 16, FS_NAME_ROW, "com.github%2Fabout", "a slash");
	check_escape("100%", 4, FS_NAME_ROW, "100%25", "a percent sign");
	check_escape("a\0b", 3, FS_NAME_ROW, "a%00b", "a NUL byte");
	check_escape("tab\there\n", 9, FS_NAME_ROW, "tab%09here%0A", "control bytes");
	check_escape("caf\xc3\xa9", 5, FS_NAME_ROW, "caf\xc3\xa9", "valid UTF-8 is kept");
	check_escape("bad\xff\xc3", 5, FS_NAME_ROW, "bad%FF%C3", "invalid UTF-8 bytes");
	check_escape("\xed\xa0\x80", 3, FS_NAME_ROW, "%ED%A0%80", "a UTF-16 surrogate");
	check_escape(".families", 9, FS_NAME_ROW, "%2Efamilies", "a row key colliding with .families");
	check_escape(".", 1, FS_NAME_ROW, "%2E", "a row key \".\"");
	check_escape("..", 2, FS_NAME_QUALIFIER, "%2E.", "a qualifier \"..\"");
	check_escape(".hidden", 7, FS_NAME_QUALIFIER, "%2Ehidden",
		     "a qualifier's leading dot is escaped (dot names are temporary files)");
	check_escape("a@b", 3, FS_NAME_QUALIFIER, "a%40b", "@ in a qualifier");
	check_escape("a@b", 3, FS_NAME_ROW, "a@b", "@ in a row key stays");
	check_escape("", 0, FS_NAME_QUALIFIER, "%", "the empty qualifier");

	memset(big, 'x', 255);
	ok(fs_name_escape(big, 255, FS_NAME_ROW, 0, out, &n) == 0 && n == 255,
	   "a 255-byte key fits NAME_MAX");
	ok(fs_name_escape(big, 256, FS_NAME_ROW, 0, out, &n) == -ENAMETOOLONG,
	   "a 256-byte key is ENAMETOOLONG");
	memset(big, '/', 90);
	ok(fs_name_escape(big, 85, FS_NAME_ROW, 0, out, &n) == 0 && n == 255,
	   "85 escaped bytes make 255");
	ok(fs_name_escape(big, 86, FS_NAME_ROW, 0, out, &n) == -ENAMETOOLONG,
	   "86 escaped bytes are ENAMETOOLONG, never truncated");
	memset(big, 'q', 240);
	ok(fs_name_version(big, 238, 1700000000000000ull, out, &n) == 0 && n == 255,
	   "a version name of exactly NAME_MAX fits");
	ok(fs_name_version(big, 239, 1700000000000000ull, out, &n) == -ENAMETOOLONG,
	   "a version name past NAME_MAX is ENAMETOOLONG");
	ok(fs_name_version("miles", 5, 1700000000000000ull, out, &n) == 0 &&
	   !strcmp(out, "miles@1700000000000000") && n == 22, "a version name is q@ts");
	ok(fs_name_version("a@b", 3, 5, out, &n) == 0 && !strcmp(out, "a%40b@5"),
	   "a version of a qualifier holding @");
	ok(fs_name_version("miles", 5, 0, out, &n) == 0 && !strcmp(out, "miles"),
	   "the newest version is the qualifier alone");

	ok(fs_name_unescape("a%2fb", 5, back, &n) == 0 && n == 3 && !memcmp(back, "a/b", 3),
	   "lower-case hex unescapes");
	ok(fs_name_unescape("a%2", 3, back, &n) == -EINVAL, "a cut escape is EINVAL");
	ok(fs_name_unescape("a%zz", 4, back, &n) == -EINVAL, "a non-hex escape is EINVAL");
	ok(fs_name_unescape("%%", 2, back, &n) == -EINVAL, "\"%%%%\" is EINVAL");

	ok(fs_name_split_version("miles", 5, &qn, &ts) == 0 && qn == 5 && ts == 0,
	   "a plain name is the newest version");
	ok(fs_name_split_version("miles@1700000000000000", 22, &qn, &ts) == 0 && qn == 5 &&
	   ts == 1700000000000000ull, "q@ts splits");
	ok(fs_name_split_version(".miles@17.Ab12Cd", 16, &qn, &ts) == 0 && qn == 16 && ts == 0,
	   "a temporary name with a plain @ is one qualifier");
	ok(fs_name_split_version("m@", 2, &qn, &ts) == 0 && qn == 2 && ts == 0,
	   "a trailing @ is part of the qualifier");
	ok(fs_name_split_version("m@0", 3, &qn, &ts) == -EINVAL, "timestamp 0 is EINVAL");
	ok(fs_name_split_version("m@18446744073709551615", 22, &qn, &ts) == -EINVAL,
	   "the server's-time timestamp is EINVAL");
	ok(fs_name_split_version("m@99999999999999999999", 22, &qn, &ts) == -EINVAL,
	   "a timestamp past 64 bits is EINVAL");

	random_roundtrip();
	return exit_status();
}
