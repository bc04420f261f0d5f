/*
 * path.c -- fuzz target for the parsing of names in a family directory
 * (fs/name.c: fs_name_split_version and fs_name_version), the daemon's
 * path parsing below the family.  For any name:
 *   - split_version either refuses it with -EINVAL (only for "q@<digits>"
 *     whose digits are 0 or out of range) or gives a qualifier part that is
 *     a prefix of the name and a timestamp; a timestamp is 0 exactly when
 *     the name is taken whole, and otherwise the name is that prefix, "@",
 *     and the timestamp's digits (leading zeros allowed);
 *   - when the qualifier part unescapes, fs_name_version of that qualifier
 *     and timestamp gives a name that splits back to the same two.
 */
#include "fuzz.h"
#include "name.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* "@" followed by 1..20 decimal digits and nothing else? Their value in *v, *over if > UINT64_MAX. */
static int ts_suffix(const uint8_t *p, size_t n, unsigned __int128 *v)
{
	*v = 0;
	if (n < 2 || n > 21 || p[0] != '@')
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		*v = *v * 10 + (p[i] - '0');
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *name = (const char *)data;
	const uint8_t *at = memchr(data, '@', size);
	size_t qlen = 12345, klen, vlen;
	uint64_t ts = 12345;
	unsigned __int128 want = 0;
	int suffix = at && ts_suffix(at, size - (size_t)(at - data), &want);
	uint8_t *key;
	char vname[FS_NAME_MAX + 1];
	int r;

	if (size > 4 * FS_NAME_MAX)
		return 0;
	r = fs_name_split_version(name, size, &qlen, &ts);
	if (suffix && (want == 0 || want >= UINT64_MAX)) {
		FUZZ_CHECK(r == -EINVAL, "timestamp 0 or out of range accepted (%d)", r);
		return 0;
	}
	FUZZ_CHECK(r == 0, "split_version returned %d", r);
	if (!suffix) {
		FUZZ_CHECK(qlen == size && ts == 0, "a name without a timestamp split as %zu, %" PRIu64,
			   qlen, ts);
		return 0;
	}
	FUZZ_CHECK(qlen == (size_t)(at - data) && ts == (uint64_t)want,
		   "split at %zu with ts %" PRIu64, qlen, ts);

	/* the qualifier part, unescaped, renamed with its timestamp */
	key = malloc(qlen + 1);
	if (!key)
		abort();
	if (fs_name_unescape(name, qlen, key, &klen) == 0 &&
	    fs_name_version(key, klen, ts, vname, &vlen) == 0) {
		size_t q2, k2;
		uint64_t ts2;
		uint8_t back[FS_NAME_MAX + 1];

		FUZZ_CHECK(vlen == strlen(vname) && vlen <= FS_NAME_MAX, "version name of %zu bytes",
			   vlen);
		r = fs_name_split_version(vname, vlen, &q2, &ts2);
		FUZZ_CHECK(r == 0 && ts2 == ts, "version name %s splits to ts %" PRIu64 " (%d)",
			   vname, ts2, r);
		FUZZ_CHECK(fs_name_unescape(vname, q2, back, &k2) == 0 && k2 == klen &&
			   memcmp(back, key, klen) == 0,
			   "the qualifier of %s does not unescape to the key", vname);
	}
	free(key);
	return 0;
}
