/*
 * json.h -- a small, strict JSON (RFC 8259) parser and the writing helpers
 * that smolctl's import and export need.  Ours rather than a library's, so
 * that its strictness and its limits are exactly what our formats document.
 *
 * Parsing.  json_parse() reads one complete JSON text (one value, with
 * optional whitespace around it) from a (pointer, length) pair that need
 * not be NUL-terminated, and builds a tree of struct json_value.  It is
 * strict: no comments, no trailing commas, no single quotes, no NaN or
 * Infinity, no leading zeros or '+' in numbers, no control characters
 * (below U+0020) inside strings, input strings must be valid UTF-8 (RFC 3629:
 * shortest forms, no surrogates, nothing above U+10FFFF), a \u escape of a
 * surrogate must be a high surrogate followed by a \u low surrogate, and an
 * object may not hold the same key twice.  Whitespace is space, tab, CR and
 * LF only.  Objects and arrays may nest at most max_depth deep.  Every
 * refusal is -EINVAL with a message and the byte offset where it was found.
 *
 * Numbers are kept as their text, exactly as written (validated against the
 * JSON grammar), so a huge integer or a long fraction loses nothing;
 * json_get_i64() and json_get_u64() read exact integers from that text and
 * never go through a double.
 *
 * Ownership.  The tree lives in the parser's memory: it stays valid until
 * the next json_parse() or json_parser_free() on that parser.  Strings
 * without escapes point into the input text itself (no copy, which matters
 * for a 100 MiB base64 value), so the text must outlive the tree too.
 * Decoded strings may contain U+0000; their length is what counts.
 *
 * Writing.  json_put_string() and json_put_base64() append quoted strings
 * to a struct buf (engine/slice.h); the escapes they choose are fixed, so the
 * same bytes always give the same output.
 */
#ifndef SMOLFS_JSON_H
#define SMOLFS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "slice.h"

/* The nesting limit json_parser_init uses for max_depth 0. */
#define JSON_DEFAULT_MAX_DEPTH 64u
/* The largest max_depth accepted (the parser recurses once per level). */
#define JSON_MAX_DEPTH_LIMIT 1000u

enum json_type {
	JSON_NULL = 1,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,    /* text, len: the number exactly as written */
	JSON_STRING,    /* text, len: the decoded bytes (valid UTF-8, may hold NUL) */
	JSON_ARRAY,     /* items[0..len) */
	JSON_OBJECT,    /* members[0..len), in input order, keys distinct */
};

struct json_member;

struct json_value {
	enum json_type type;
	size_t len;
	union {
		const char *text;
		struct json_value *items;
		struct json_member *members;
	} u;
	size_t offset;              /* where the value starts in the input */
};

struct json_member {
	const char *key;            /* decoded bytes, key_len long (not NUL-terminated) */
	size_t key_len;
	struct json_value value;
};

struct json_error {
	size_t offset;              /* byte offset in the input where parsing stopped */
	char msg[120];
};

/* Memory for the trees of successive parses; reused from one parse to the next. */
struct json_chunk;
struct json_parser {
	unsigned max_depth;
	struct json_chunk *chunks;  /* the arena: node arrays and decoded strings */
	struct json_member *stack;  /* children of the containers being parsed */
	size_t nstack, capstack;
	/* the parse in progress */
	const char *p, *end, *start;
	struct json_error *err;
};

/* max_depth 0: JSON_DEFAULT_MAX_DEPTH; values above JSON_MAX_DEPTH_LIMIT are clamped to it. */
void json_parser_init(struct json_parser *ps, unsigned max_depth);
void json_parser_free(struct json_parser *ps);

/*
 * Parse text[0..len) as one JSON text.  0 and *root on success (valid as
 * said above); -EINVAL with *err filled (err may be NULL) if it is not
 * strict JSON.  The previous tree of ps is freed either way.
 */
int json_parse(struct json_parser *ps, const char *text, size_t len,
	       const struct json_value **root, struct json_error *err);

/* The value of key in an object (NULL if absent or obj is not an object). */
const struct json_value *json_get(const struct json_value *obj, const char *key);
/* Does v's key equal the NUL-terminated key? */
int json_key_is(const struct json_member *m, const char *key);

/*
 * Exact integers from a number's text.  -EINVAL if v is not a number or not
 * an integer literal (a fraction or exponent: "1.0" and "1e3" are refused),
 * -ERANGE if it does not fit.  "-0" is 0.
 */
int json_get_i64(const struct json_value *v, int64_t *out);
int json_get_u64(const struct json_value *v, uint64_t *out);
/*
 * The same for integers that may exceed 64 bits (Smoltable's nanosecond
 * times are u128): the value divided by divisor (rounded toward zero), which
 * must fit a uint64_t.  -EINVAL for a negative number.
 */
int json_get_u64_div(const struct json_value *v, uint64_t divisor, uint64_t *out);

/* A name for a type in messages: "null", "a number", "an object"... */
const char *json_type_name(enum json_type t);

/* UTF-8 as RFC 3629 defines it (the rule json_parse applies to strings). */
int json_utf8_valid(const char *p, size_t n);

/*
 * Append s[0..n) as a quoted JSON string: '"' and '\' escaped, the control
 * characters U+0000..U+001F as \b \t \n \f \r or \u00XX (lower-case hex),
 * everything else, U+007F and non-ASCII included, as its own bytes.
 * -EINVAL, with nothing appended, if s is not valid UTF-8.
 */
int json_put_string(struct buf *b, const void *s, size_t n);

/* Append "<standard base64 of p[0..n), with = padding>" (quotes included). */
void json_put_base64(struct buf *b, const void *p, size_t n);

/*
 * Decode standard base64 (RFC 4648 section 4: A-Z a-z 0-9 + /, '=' padding
 * to a multiple of 4, no whitespace, and the unused bits of the last
 * character zero, so that every byte string has exactly one encoding) into
 * out, which has room for json_base64_max(n) bytes.  0 and *outlen, or
 * -EINVAL with *bad_at (may be NULL) the offset of the first bad character.
 */
size_t json_base64_max(size_t n);
int json_base64_decode(const char *in, size_t n, void *out, size_t *outlen, size_t *bad_at);

#endif
