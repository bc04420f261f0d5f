/*
 * name.c -- fuzz target for the escaping of keys into file names
 * (fs/name.c).  The input is both a key and a name:
 *   - as a key (row and qualifier kinds, with a reserve taken from the
 *     input): escaping succeeds unless the name would be too long, and the
 *     name is a valid file name (no "/" or NUL, at most FS_NAME_MAX -
 *     reserve bytes, not beginning with "."; no "@" in a qualifier) that
 *     unescapes to the key again;
 *   - as a name: unescaping accepts it exactly when every "%" begins a
 *     "%XX" with two hex digits (or the name is the lone "%" of the empty
 *     key) and it holds no "/" or NUL; an accepted name's key escapes to a
 *     canonical name that unescapes to the same key.
 */
#include "fuzz.h"
#include "name.h"

#include <errno.h>
#include <string.h>

static int is_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The rule for names, written apart from fs_name_unescape: 1 if it must accept. */
static int name_valid(const uint8_t *p, size_t n)
{
	if (n == 1 && p[0] == '%')
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '/' || p[i] == 0)
			return 0;
		if (p[i] == '%') {
			if (i + 2 >= n || !is_hex(p[i + 1]) || !is_hex(p[i + 2]))
				return 0;
			i += 2;
		}
	}
	return 1;
}

static void key_round_trip(const uint8_t *key, size_t len, enum fs_name_kind kind, size_t reserve)
{
	char name[FS_NAME_MAX + 1];
	uint8_t back[FS_NAME_MAX + 1];
	size_t nlen = 0, blen = 0, limit = reserve < FS_NAME_MAX ? FS_NAME_MAX - reserve : 0;
	int r = fs_name_escape(key, len, kind, reserve, name, &nlen);

	if (r == -ENAMETOOLONG) {
		/* every byte takes at least one byte of name: a key that fits plainly must fit */
		FUZZ_CHECK(len > 0 ? len > limit / 3 : limit < 1,
			   "a key of %zu bytes refused with room for %zu", len, limit);
		return;
	}
	FUZZ_CHECK(r == 0, "escape returned %d", r);
	FUZZ_CHECK(nlen >= 1 && nlen <= limit, "name of %zu bytes (limit %zu)", nlen, limit);
	FUZZ_CHECK(strlen(name) == nlen, "the name holds a NUL or is not terminated");
	FUZZ_CHECK(!memchr(name, '/', nlen), "the name holds a /");
	FUZZ_CHECK(name[0] != '.', "the name begins with a dot");
	FUZZ_CHECK(kind != FS_NAME_QUALIFIER || !memchr(name, '@', nlen), "a qualifier's name holds @");
	FUZZ_CHECK(name_valid((const uint8_t *)name, nlen), "escape wrote a malformed name");
	FUZZ_CHECK(len != 0 || (nlen == 1 && name[0] == '%'), "the empty key is not \"%%\"");
	FUZZ_CHECK(len == 0 || strcmp(name, "%") != 0, "a non-empty key written \"%%\"");
	r = fs_name_unescape(name, nlen, back, &blen);
	FUZZ_CHECK(r == 0, "unescape refused escape's name: %d", r);
	FUZZ_CHECK(blen == len && memcmp(back, key, len) == 0, "unescape(escape(key)) != key");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *key;
	size_t klen = 0;
	int r;

	if (size > 4 * FS_NAME_MAX)
		return 0;
	/* as a key: the first byte picks the reserve, the rest is the key */
	if (size > 0) {
		size_t reserve = data[0] % 32;
		size_t len = size - 1 > FS_NAME_MAX ? FS_NAME_MAX : size - 1;

		key_round_trip(data + 1, len, FS_NAME_ROW, reserve);
		key_round_trip(data + 1, len, FS_NAME_QUALIFIER, reserve);
	}
	key_round_trip(data, size > FS_NAME_MAX ? FS_NAME_MAX : size, FS_NAME_ROW, 0);

	/* as a name */
	key = malloc(size + 1);
	if (!key)
		abort();
	r = fs_name_unescape((const char *)data, size, key, &klen);
	FUZZ_CHECK((r == 0) == name_valid(data, size), "unescape returned %d for a name that is %s",
		   r, name_valid(data, size) ? "valid" : "malformed");
	if (r == 0) {
		FUZZ_CHECK(klen <= size, "the key is longer than its name");
		if (klen <= FS_NAME_MAX)
			key_round_trip(key, klen, FS_NAME_QUALIFIER, 0);
	} else {
		FUZZ_CHECK(r == -EINVAL, "unescape returned %d", r);
	}
	free(key);
	return 0;
}
