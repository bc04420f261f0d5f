/*
 * name.c -- percent-escaping of row keys and qualifiers into file names and
 * back, and the "q@ts" version names (the rules are in name.h and smolfs(1)).
 * The filesystem calls these for every lookup and directory entry; they are
 * pure, allocate nothing and are tested on their own (tests/fs_name.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "name.h"

static const char hexdigits[] = "0123456789ABCDEF";

/*
 * Length (2..4) of the valid UTF-8 multi-byte sequence at p[0..n), or 0.
 * RFC 3629: shortest forms only, no surrogates, nothing above U+10FFFF.
 */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len, i;
	unsigned cp;

	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

int fs_name_escape(const void *key, size_t len, enum fs_name_kind kind, size_t reserve,
		   char *out, size_t *out_len)
{
	const unsigned char *p = key;
	size_t limit = reserve < FS_NAME_MAX ? FS_NAME_MAX - reserve : 0;
	size_t o = 0, i = 0;

	if (len == 0) {
		if (limit < 1)
			return -ENAMETOOLONG;
		out[0] = '%';
		out[1] = '\0';
		*out_len = 1;
		return 0;
	}
	while (i < len) {
		unsigned c = p[i];
		size_t seq = 1;
		int esc;

		if (c >= 0x80) {
			seq = utf8_seq(p + i, len - i);
			esc = seq == 0;
			if (esc)
				seq = 1;
		} else {
			esc = c < 0x20 || c == 0x7F || c == '%' || c == '/' ||
			      (c == '@' && kind == FS_NAME_QUALIFIER);
			if (c == '.' && i == 0)
				esc = 1;   /* names beginning with "." are reserved or temporary */
		}
		if (esc) {
			if (o + 3 > limit)
				return -ENAMETOOLONG;
			out[o++] = '%';
			out[o++] = hexdigits[c >> 4];
			out[o++] = hexdigits[c & 15];
		} else {
			if (o + seq > limit)
				return -ENAMETOOLONG;
			memcpy(out + o, p + i, seq);
			o += seq;
		}
		i += seq;
	}
	out[o] = '\0';
	*out_len = o;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fs_name_unescape(const char *name, size_t n, void *out, size_t *out_len)
{
	unsigned char *o = out;
	size_t i = 0, k = 0;

	if (n == 1 && name[0] == '%') {
		*out_len = 0;
		return 0;
	}
	while (i < n) {
		if (name[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -EINVAL;
			hi = hexval(name[i + 1]);
			lo = hexval(name[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			o[k++] = (unsigned char)(hi << 4 | lo);
			i += 3;
		} else if (name[i] == '/' || name[i] == '\0') {
			return -EINVAL;
		} else {
			o[k++] = (unsigned char)name[i++];
		}
	}
	*out_len = k;
	return 0;
}

int fs_name_split_version(const char *name, size_t n, size_t *qname_len, uint64_t *ts)
{
	const char *at = memchr(name, '@', n);
	size_t i, digits;
	uint64_t v = 0;

	*qname_len = n;
	*ts = 0;
	if (!at)
		return 0;
	digits = n - (size_t)(at - name) - 1;
	if (digits == 0 || digits > 20)
		return 0;
	for (i = 0; i < digits; i++) {
		unsigned d = (unsigned char)at[1 + i] - '0';

		if (d > 9)
			return 0;   /* not a timestamp: a qualifier with a plain "@" */
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v == 0 || v == UINT64_MAX)
		return -EINVAL;
	*qname_len = (size_t)(at - name);
	*ts = v;
	return 0;
}

int fs_name_version(const void *q, size_t qlen, uint64_t ts, char *out, size_t *out_len)
{
	char suffix[24];
	int sl = 0, rc;

	if (ts)
		sl = snprintf(suffix, sizeof(suffix), "@%llu", (unsigned long long)ts);
	rc = fs_name_escape(q, qlen, FS_NAME_QUALIFIER, (size_t)sl, out, out_len);
	if (rc < 0)
		return rc;
	if (ts) {
		memcpy(out + *out_len, suffix, (size_t)sl + 1);
		*out_len += (size_t)sl;
	}
	return 0;
}
