/*
 * name.h -- file names of the tree and the keys they stand for.
 *
 * Row keys and qualifiers are arbitrary bytes; a file name cannot hold "/"
 * or NUL and is at most NAME_MAX bytes.  A key becomes a name by
 * percent-encoding, reversible and unique (smolfs(1), "Names"):
 *   - "%", "/", NUL, control bytes (0x00-0x1f, 0x7f) and every byte that is
 *     not part of a valid UTF-8 sequence are written %XX (upper-case hex);
 *   - in qualifiers "@" is written %40 too, so that "q@ts" (an older version)
 *     is never ambiguous;
 *   - a key whose name would begin with "." is written with its first byte
 *     as %2E: the names beginning with "." are reserved in a table directory
 *     (.families, .prefix) and are tools' temporary files in a family
 *     directory (smolfs(1));
 *   - the empty key is written "%" alone (no other name is a lone "%").
 * Unescaping accepts %xx in either case and any byte written plainly that
 * need not be escaped; it refuses a "%" not followed by two hex digits.
 * Pure functions, no state: safe from any thread.
 */
#ifndef SMOLFS_FS_NAME_H
#define SMOLFS_FS_NAME_H

#include <stddef.h>
#include <stdint.h>

#define FS_NAME_MAX 255             /* NAME_MAX on Linux */

enum fs_name_kind {
	FS_NAME_ROW = 0,            /* row keys and row-key prefixes */
	FS_NAME_QUALIFIER = 1,      /* qualifiers: "@" escaped as well */
};

/*
 * Escape key[0..len) into out (room for FS_NAME_MAX + 1 bytes), NUL-terminated;
 * *out_len gets its length.  -ENAMETOOLONG (out unspecified) if the name
 * would exceed FS_NAME_MAX - reserve bytes (reserve: room the caller keeps
 * for a suffix such as "@<ts>").
 */
int fs_name_escape(const void *key, size_t len, enum fs_name_kind kind, size_t reserve,
		   char *out, size_t *out_len);

/*
 * Unescape name[0..n) into out (room for n bytes; the result is never
 * longer); *out_len gets the key's length.  -EINVAL for a malformed escape.
 */
int fs_name_unescape(const char *name, size_t n, void *out, size_t *out_len);

/*
 * Split a name in a family directory: "q" (the newest version) or
 * "q@<ts>" (ts in decimal microseconds, 1..20 digits, below UINT64_MAX).
 * *qname_len gets the length of the escaped qualifier part; *ts the
 * timestamp, or 0 for the newest version.  A name whose part after "@" is
 * not a timestamp is taken whole as a qualifier written with a plain "@"
 * (tools' temporary files, such as rsync's ".q@17.XXXXXX", must be
 * creatable); "q@0" and a timestamp out of range are -EINVAL.
 */
int fs_name_split_version(const char *name, size_t n, size_t *qname_len, uint64_t *ts);

/*
 * The name of a version: escaped qualifier, "@", decimal ts, into out
 * (FS_NAME_MAX + 1 bytes).  ts == 0: the qualifier's name alone.
 */
int fs_name_version(const void *q, size_t qlen, uint64_t ts, char *out, size_t *out_len);

#endif
