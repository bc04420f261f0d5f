/*
 * json.c -- the strict JSON parser and writing helpers of json.h.
 *
 * The parser is recursive descent over a bounded buffer: every read of
 * ps->p is preceded by a check against ps->end, and recursion is bounded by
 * max_depth (each level of nesting costs one parse_value frame).  Children
 * of the containers being parsed are pushed on one growable stack; when a
 * container closes, its children are popped and copied into the arena as
 * one array, so a tree costs two allocations per container at most and
 * none per scalar.  The arena is a list of chunks; a new parse frees all
 * but one ordinary chunk, so parsing line after line reuses the same memory.
 *
 * Strings are scanned once: if the closing quote comes before any
 * backslash, the value points into the input (no copy); otherwise the raw
 * length bounds the decoded one, and a second pass decodes into the arena.
 * Duplicate keys are found as members are added while an object has at
 * most DUP_LINEAR members (pairwise, with the exact offset of the second
 * key), and by sorting the keys when it closes beyond that.
 */
#include "json.h"
#include "tutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK_SIZE (64u * 1024)
#define DUP_LINEAR 16u

struct json_chunk {
	struct json_chunk *next;
	size_t used, cap;
	char *data;
};

/* ------------------------------------------------------------ arena */

static void *arena_alloc(struct json_parser *ps, size_t n)
{
	struct json_chunk *c = ps->chunks;
	size_t need = (n + 15) & ~(size_t)15;   /* n is bounded by the input's length */

	if (!c || c->cap - c->used < need) {
		size_t cap = need > CHUNK_SIZE ? need : CHUNK_SIZE;

		c = tool_malloc(sizeof(*c));
		c->data = tool_malloc(cap ? cap : 1);
		c->cap = cap;
		c->used = 0;
		c->next = ps->chunks;
		ps->chunks = c;
	}
	c->used += need;
	return c->data + c->used - need;
}

/* Free every chunk but one ordinary one, which is kept (empty) for the next parse. */
static void arena_reset(struct json_parser *ps)
{
	struct json_chunk *c = ps->chunks, *keep = NULL;

	while (c) {
		struct json_chunk *next = c->next;

		if (!keep && c->cap == CHUNK_SIZE) {
			keep = c;
			keep->used = 0;
			keep->next = NULL;
		} else {
			free(c->data);
			free(c);
		}
		c = next;
	}
	ps->chunks = keep;
}

void json_parser_init(struct json_parser *ps, unsigned max_depth)
{
	memset(ps, 0, sizeof(*ps));
	if (max_depth == 0)
		max_depth = JSON_DEFAULT_MAX_DEPTH;
	if (max_depth > JSON_MAX_DEPTH_LIMIT)
		max_depth = JSON_MAX_DEPTH_LIMIT;
	ps->max_depth = max_depth;
}

void json_parser_free(struct json_parser *ps)
{
	arena_reset(ps);
	if (ps->chunks) {
		free(ps->chunks->data);
		free(ps->chunks);
	}
	free(ps->stack);
	memset(ps, 0, sizeof(*ps));
}

/* ------------------------------------------------------------ UTF-8 */

/* The length (1..4) of the valid UTF-8 sequence at p[0..n), or 0 if there is none. */
static size_t utf8_char(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	unsigned lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;            /* no overlong 3-byte forms */
	else if (c == 0xed)
		hi = 0x9f;            /* no surrogates */
	else if (c == 0xf0)
		lo = 0x90;            /* no overlong 4-byte forms */
	else if (c == 0xf4)
		hi = 0x8f;            /* nothing above U+10FFFF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

int json_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_char(p + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* ------------------------------------------------------------ parsing */

__attribute__((format(printf, 3, 4)))
static int fail(struct json_parser *ps, const char *at, const char *fmt, ...)
{
	va_list ap;

	if (ps->err) {
		ps->err->offset = (size_t)(at - ps->start);
		va_start(ap, fmt);
		vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* What stands at p, for messages: "end of input", "'x'" or "byte 0xNN". */
static const char *what_at(struct json_parser *ps, const char *p, char *out, size_t n)
{
	unsigned char c;

	if (p >= ps->end)
		return "the end of the input";
	c = (unsigned char)*p;
	if (c >= 0x21 && c < 0x7f)
		snprintf(out, n, "'%c'", c);
	else
		snprintf(out, n, "byte 0x%02x", c);
	return out;
}

static void skip_ws(struct json_parser *ps)
{
	const char *p = ps->p;

	while (p < ps->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	ps->p = p;
}

static void push(struct json_parser *ps, const struct json_member *m)
{
	if (ps->nstack == ps->capstack) {
		ps->capstack = ps->capstack ? ps->capstack * 2 : 64;
		ps->stack = tool_realloc(ps->stack, ps->capstack * sizeof(*ps->stack));
	}
	ps->stack[ps->nstack++] = *m;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* A \uXXXX escape at p (the backslash): the code point, pairing surrogates. */
static int unicode_escape(struct json_parser *ps, const char *p, unsigned *cp, const char **next)
{
	unsigned hi, lo;

	if (ps->end - p < 6 || hex4(p + 2, &hi))
		return fail(ps, p, "\\u must be followed by four hex digits");
	p += 6;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return fail(ps, p - 6, "\\u%04x is a low surrogate without a high one before it",
			    hi);
	if (hi >= 0xd800 && hi <= 0xdbff) {
		if (ps->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) ||
		    lo < 0xdc00 || lo > 0xdfff)
			return fail(ps, p - 6, "\\u%04x is a high surrogate not followed by a "
				    "\\u low surrogate", hi);
		hi = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
		p += 6;
	}
	*cp = hi;
	*next = p;
	return 0;
}

/*
 * The string at ps->p (its opening quote).  Checks every byte: no control
 * characters, valid UTF-8, known escapes.  On success ps->p is past the
 * closing quote.
 */
static int parse_string(struct json_parser *ps, const char **s, size_t *len)
{
	const unsigned char *q = (const unsigned char *)ps->p + 1;
	const unsigned char *end = (const unsigned char *)ps->end;
	const char *open = ps->p;
	int escapes = 0;
	char *o, *out;
	const char *p;

	/* pass 1: find the closing quote, checking UTF-8 and control characters */
	for (;;) {
		if (q >= end)
			return fail(ps, open, "string not terminated");
		if (*q == '"')
			break;
		if (*q < 0x20)
			return fail(ps, (const char *)q, "control character U+%04X in a string "
				    "(write it as an escape)", *q);
		if (*q == '\\') {
			char w[16];

			escapes = 1;
			if (q + 1 < end && !strchr("\"\\/bfnrtu", q[1] ? q[1] : 'x'))
				return fail(ps, (const char *)q, "unknown escape \\%s in a string",
					    what_at(ps, (const char *)q + 1, w, sizeof(w)));
			q += 2;    /* a quote after the backslash is escaped; \\u is read in pass 2 */
			continue;
		}
		if (*q >= 0x80) {
			size_t k = utf8_char(q, (size_t)(end - q));

			if (!k)
				return fail(ps, (const char *)q, "invalid UTF-8 in a string");
			q += k;
			continue;
		}
		q++;
	}
	if (!escapes) {
		*s = open + 1;
		*len = (size_t)((const char *)q - open - 1);
		ps->p = (const char *)q + 1;
		return 0;
	}

	/* pass 2: decode; the decoded form is never longer than the raw one */
	out = o = arena_alloc(ps, (size_t)((const char *)q - open));
	p = open + 1;
	while (p < (const char *)q) {
		const char *bs = memchr(p, '\\', (size_t)((const char *)q - p));
		unsigned cp = 0;
		int r;

		if (!bs) {
			memcpy(o, p, (size_t)((const char *)q - p));
			o += (const char *)q - p;
			break;
		}
		memcpy(o, p, (size_t)(bs - p));
		o += bs - p;
		p = bs;
		if (p + 1 >= ps->end)
			return fail(ps, p, "string not terminated");
		switch (p[1]) {
		case '"':  *o++ = '"';  p += 2; break;
		case '\\': *o++ = '\\'; p += 2; break;
		case '/':  *o++ = '/';  p += 2; break;
		case 'b':  *o++ = '\b'; p += 2; break;
		case 'f':  *o++ = '\f'; p += 2; break;
		case 'n':  *o++ = '\n'; p += 2; break;
		case 'r':  *o++ = '\r'; p += 2; break;
		case 't':  *o++ = '\t'; p += 2; break;
		case 'u':
			r = unicode_escape(ps, p, &cp, &p);
			if (r)
				return r;
			/* may run past the quote pass 1 found, if that quote was in the escape */
			if (p > (const char *)q)
				return fail(ps, open, "string not terminated");
			o = put_utf8(o, cp);
			break;
		default: {
			char w[16];

			return fail(ps, p, "unknown escape \\%s in a string",
				    what_at(ps, p + 1, w, sizeof(w)));
		}
		}
	}
	*s = out;
	*len = (size_t)(o - out);
	ps->p = (const char *)q + 1;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A number at ps->p, by the JSON grammar; kept as text. */
static int parse_number(struct json_parser *ps, struct json_value *v)
{
	const char *p = ps->p, *start = p, *end = ps->end;
	char w[16];

	if (p < end && *p == '-')
		p++;
	if (p >= end || !is_digit(*p))
		return fail(ps, p, "expected a digit, found %s", what_at(ps, p, w, sizeof(w)));
	if (*p == '0') {
		p++;
		if (p < end && is_digit(*p))
			return fail(ps, start, "a number may not have a leading zero");
	} else {
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && *p == '.') {
		p++;
		if (p >= end || !is_digit(*p))
			return fail(ps, p, "expected a digit after the decimal point, found %s",
				    what_at(ps, p, w, sizeof(w)));
		while (p < end && is_digit(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return fail(ps, p, "expected a digit in the exponent, found %s",
				    what_at(ps, p, w, sizeof(w)));
		while (p < end && is_digit(*p))
			p++;
	}
	v->type = JSON_NUMBER;
	v->u.text = start;
	v->len = (size_t)(p - start);
	ps->p = p;
	return 0;
}

static int literal(struct json_parser *ps, const char *word, enum json_type t,
		   struct json_value *v)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, ps->p, "unknown literal (expected %s)", word);
	ps->p += n;
	v->type = t;
	return 0;
}

static int member_cmp(const void *a, const void *b)
{
	const struct json_member *x = *(const struct json_member *const *)a;
	const struct json_member *y = *(const struct json_member *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int r = n ? memcmp(x->key, y->key, n) : 0;

	if (r)
		return r;
	return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

/* Keys of a large object, sorted to find a duplicate.  0 or the error. */
static int check_duplicates(struct json_parser *ps, const struct json_value *obj)
{
	const struct json_member **sorted = tool_malloc(obj->len * sizeof(*sorted));
	int r = 0;

	for (size_t i = 0; i < obj->len; i++)
		sorted[i] = &obj->u.members[i];
	qsort(sorted, obj->len, sizeof(*sorted), member_cmp);
	for (size_t i = 1; i < obj->len; i++) {
		if (member_cmp(&sorted[i - 1], &sorted[i]) == 0) {
			r = fail(ps, ps->start + obj->offset, "duplicate key \"%.*s\" in the object",
				 (int)(sorted[i]->key_len > 40 ? 40 : sorted[i]->key_len),
				 sorted[i]->key);
			break;
		}
	}
	free(sorted);
	return r;
}

static int parse_value(struct json_parser *ps, struct json_value *v, unsigned depth);

static int parse_object(struct json_parser *ps, struct json_value *v, unsigned depth)
{
	size_t base = ps->nstack, n;
	char w[16];
	int r;

	ps->p++;   /* '{' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		goto close;
	}
	for (;;) {
		struct json_member m;
		const char *key_at;

		skip_ws(ps);
		key_at = ps->p;
		if (ps->p >= ps->end || *ps->p != '"')
			return fail(ps, ps->p, "expected a string key, found %s",
				    what_at(ps, ps->p, w, sizeof(w)));
		r = parse_string(ps, &m.key, &m.key_len);
		if (r)
			return r;
		if (ps->nstack - base < DUP_LINEAR) {
			for (size_t i = base; i < ps->nstack; i++)
				if (ps->stack[i].key_len == m.key_len &&
				    memcmp(ps->stack[i].key, m.key, m.key_len) == 0)
					return fail(ps, key_at, "duplicate key \"%.*s\" in the object",
						    (int)(m.key_len > 40 ? 40 : m.key_len), m.key);
		}
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return fail(ps, ps->p, "expected ':' after the key, found %s",
				    what_at(ps, ps->p, w, sizeof(w)));
		ps->p++;
		r = parse_value(ps, &m.value, depth + 1);
		if (r)
			return r;
		push(ps, &m);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		return fail(ps, ps->p, "expected ',' or '}' in an object, found %s",
			    what_at(ps, ps->p, w, sizeof(w)));
	}
close:
	n = ps->nstack - base;
	v->type = JSON_OBJECT;
	v->len = n;
	v->u.members = n ? arena_alloc(ps, n * sizeof(struct json_member)) : NULL;
	if (n)
		memcpy(v->u.members, ps->stack + base, n * sizeof(struct json_member));
	ps->nstack = base;
	if (n > DUP_LINEAR)
		return check_duplicates(ps, v);
	return 0;
}

static int parse_array(struct json_parser *ps, struct json_value *v, unsigned depth)
{
	size_t base = ps->nstack, n;
	char w[16];
	int r;

	ps->p++;   /* '[' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		goto close;
	}
	for (;;) {
		struct json_member m;

		m.key = NULL;
		m.key_len = 0;
		r = parse_value(ps, &m.value, depth + 1);
		if (r)
			return r;
		push(ps, &m);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		return fail(ps, ps->p, "expected ',' or ']' in an array, found %s",
			    what_at(ps, ps->p, w, sizeof(w)));
	}
close:
	n = ps->nstack - base;
	v->type = JSON_ARRAY;
	v->len = n;
	v->u.items = n ? arena_alloc(ps, n * sizeof(struct json_value)) : NULL;
	for (size_t i = 0; i < n; i++)
		v->u.items[i] = ps->stack[base + i].value;
	ps->nstack = base;
	return 0;
}

static int parse_value(struct json_parser *ps, struct json_value *v, unsigned depth)
{
	char w[16];

	skip_ws(ps);
	memset(v, 0, sizeof(*v));
	v->offset = (size_t)(ps->p - ps->start);
	if (ps->p >= ps->end)
		return fail(ps, ps->p, "expected a value, found the end of the input");
	switch (*ps->p) {
	case '{':
	case '[':
		if (depth >= ps->max_depth)
			return fail(ps, ps->p, "arrays and objects nested more than %u deep",
				    ps->max_depth);
		return *ps->p == '{' ? parse_object(ps, v, depth) : parse_array(ps, v, depth);
	case '"':
		v->type = JSON_STRING;
		return parse_string(ps, &v->u.text, &v->len);
	case 't':
		return literal(ps, "true", JSON_TRUE, v);
	case 'f':
		return literal(ps, "false", JSON_FALSE, v);
	case 'n':
		return literal(ps, "null", JSON_NULL, v);
	default:
		if (*ps->p == '-' || is_digit(*ps->p))
			return parse_number(ps, v);
		return fail(ps, ps->p, "expected a value, found %s",
			    what_at(ps, ps->p, w, sizeof(w)));
	}
}

int json_parse(struct json_parser *ps, const char *text, size_t len,
	       const struct json_value **root, struct json_error *err)
{
	struct json_value *v;
	char w[16];
	int r;

	arena_reset(ps);
	ps->nstack = 0;
	ps->start = ps->p = text;
	ps->end = text + len;
	ps->err = err;
	if (err) {
		err->offset = 0;
		err->msg[0] = 0;
	}
	if (len && !text)
		return fail(ps, text, "NULL text of %zu bytes", len);
	v = arena_alloc(ps, sizeof(*v));
	r = parse_value(ps, v, 0);
	if (r)
		return r;
	skip_ws(ps);
	if (ps->p != ps->end)
		return fail(ps, ps->p, "unexpected %s after the value",
			    what_at(ps, ps->p, w, sizeof(w)));
	*root = v;
	return 0;
}

/* ------------------------------------------------------------ access */

int json_key_is(const struct json_member *m, const char *key)
{
	size_t n = strlen(key);

	return m->key_len == n && memcmp(m->key, key, n) == 0;
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->len; i++)
		if (json_key_is(&obj->u.members[i], key))
			return &obj->u.members[i].value;
	return NULL;
}

/*
 * The digits of an integer literal: 0 with *neg, *digits, *n set; -EINVAL
 * if v is not a number or has a fraction or exponent.
 */
static int integer_digits(const struct json_value *v, int *neg, const char **digits, size_t *n)
{
	const char *p;
	size_t len;

	if (!v || v->type != JSON_NUMBER)
		return -EINVAL;
	p = v->u.text;
	len = v->len;
	*neg = len && *p == '-';
	if (*neg) {
		p++;
		len--;
	}
	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!is_digit(p[i]))
			return -EINVAL;
	*digits = p;
	*n = len;
	return 0;
}

int json_get_u64_div(const struct json_value *v, uint64_t divisor, uint64_t *out)
{
	unsigned __int128 x = 0, max = ~(unsigned __int128)0;
	const char *d;
	size_t n;
	int neg, r = integer_digits(v, &neg, &d, &n);

	if (r)
		return r;
	if (divisor == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned)(d[i] - '0');

		if (x > (max - c) / 10)
			return -ERANGE;
		x = x * 10 + c;
	}
	if (neg && x)
		return -EINVAL;
	x /= divisor;
	if (x > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)x;
	return 0;
}

int json_get_u64(const struct json_value *v, uint64_t *out)
{
	return json_get_u64_div(v, 1, out);
}

int json_get_i64(const struct json_value *v, int64_t *out)
{
	uint64_t x = 0, limit;
	const char *d;
	size_t n;
	int neg, r = integer_digits(v, &neg, &d, &n);

	if (r)
		return r;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned)(d[i] - '0');

		if (x > (limit - c) / 10)
			return -ERANGE;
		x = x * 10 + c;
	}
	if (neg)
		*out = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
	else
		*out = (int64_t)x;
	return 0;
}

const char *json_type_name(enum json_type t)
{
	switch (t) {
	case JSON_NULL:   return "null";
	case JSON_FALSE:  return "false";
	case JSON_TRUE:   return "true";
	case JSON_NUMBER: return "a number";
	case JSON_STRING: return "a string";
	case JSON_ARRAY:  return "an array";
	case JSON_OBJECT: return "an object";
	}
	return "an unknown value";
}

/* ------------------------------------------------------------ writing */

int json_put_string(struct buf *b, const void *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = s, *run;
	size_t saved = b->len, i = 0;

	tool_buf_reserve(b, n + 2);
	tool_buf_append(b, "\"", 1);
	run = p;
	while (i < n) {
		unsigned c = p[i];
		char esc[6];
		size_t elen = 2;

		if (c >= 0x20 && c != '"' && c != '\\') {
			if (c < 0x80) {
				i++;
			} else {
				size_t k = utf8_char(p + i, n - i);

				if (!k) {
					b->len = saved;
					return -EINVAL;
				}
				i += k;
			}
			continue;
		}
		tool_buf_append(b, run, (size_t)(p + i - run));
		esc[0] = '\\';
		switch (c) {
		case '"':  esc[1] = '"';  break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b';  break;
		case '\t': esc[1] = 't';  break;
		case '\n': esc[1] = 'n';  break;
		case '\f': esc[1] = 'f';  break;
		case '\r': esc[1] = 'r';  break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		}
		tool_buf_append(b, esc, elen);
		i++;
		run = p + i;
	}
	tool_buf_append(b, run, (size_t)(p + n - run));
	tool_buf_append(b, "\"", 1);
	return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void json_put_base64(struct buf *b, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t i, full = n / 3 * 3;
	char *o;

	tool_buf_reserve(b, (n + 2) / 3 * 4 + 2);
	o = b->data + b->len;
	*o++ = '"';
	for (i = 0; i < full; i += 3) {
		uint32_t x = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		o[0] = b64[x >> 18];
		o[1] = b64[(x >> 12) & 63];
		o[2] = b64[(x >> 6) & 63];
		o[3] = b64[x & 63];
		o += 4;
	}
	if (n - full == 1) {
		uint32_t x = (uint32_t)p[i] << 16;

		o[0] = b64[x >> 18];
		o[1] = b64[(x >> 12) & 63];
		o[2] = '=';
		o[3] = '=';
		o += 4;
	} else if (n - full == 2) {
		uint32_t x = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		o[0] = b64[x >> 18];
		o[1] = b64[(x >> 12) & 63];
		o[2] = b64[(x >> 6) & 63];
		o[3] = '=';
		o += 4;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
}

size_t json_base64_max(size_t n)
{
	return n / 4 * 3 + 3;
}

/* The 6-bit value of a base64 character, or -1. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int json_base64_decode(const char *in, size_t n, void *out, size_t *outlen, size_t *bad_at)
{
	static signed char table[256];
	static int ready;
	const unsigned char *p = (const unsigned char *)in;
	unsigned char *o = out;
	size_t i, pad = 0, body;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		for (int c = 0; c < 256; c++)
			table[c] = (signed char)b64_value((unsigned char)c);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	if (bad_at)
		*bad_at = n;
	if (n % 4) {
		if (bad_at)
			*bad_at = n;
		return -EINVAL;
	}
	if (n && p[n - 1] == '=')
		pad = n >= 2 && p[n - 2] == '=' ? 2 : 1;
	body = n - pad;
	/* whole groups of four, the last one (if padded) apart */
	for (i = 0; i + 4 <= body; i += 4) {
		int a = table[p[i]], b = table[p[i + 1]], c = table[p[i + 2]], d = table[p[i + 3]];

		if ((a | b | c | d) < 0) {
			size_t k = i;

			while (table[p[k]] >= 0)
				k++;
			if (bad_at)
				*bad_at = k;
			return -EINVAL;
		}
		o[0] = (unsigned char)(a << 2 | b >> 4);
		o[1] = (unsigned char)(b << 4 | c >> 2);
		o[2] = (unsigned char)(c << 6 | d);
		o += 3;
	}
	if (pad) {
		int a = table[p[i]], b = table[p[i + 1]], c = pad == 1 ? table[p[i + 2]] : 0;

		if (a < 0 || b < 0 || c < 0) {
			if (bad_at)
				*bad_at = a < 0 ? i : b < 0 ? i + 1 : i + 2;
			return -EINVAL;
		}
		/* the bits past the data must be zero: one encoding per byte string */
		if (pad == 2 ? (b & 15) : (c & 3)) {
			if (bad_at)
				*bad_at = pad == 2 ? i + 1 : i + 2;
			return -EINVAL;
		}
		*o++ = (unsigned char)(a << 2 | b >> 4);
		if (pad == 1)
			*o++ = (unsigned char)(b << 4 | c >> 2);
	}
	*outlen = (size_t)(o - (unsigned char *)out);
	return 0;
}
