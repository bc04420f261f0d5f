/*
 * tio_json.c -- tests for tools/json.c, smolctl's strict JSON parser and
 * writing helpers: every kind of value, every escape (surrogate pairs and
 * U+0000 included), UTF-8 checks, refusals with the byte offset where each
 * is found, the nesting limit, duplicate keys, numbers kept as their text
 * and read exactly as integers (128-bit times included), the string and
 * base64 writers with their exact output, strict base64 decoding, round
 * trips of random strings, and random damage to valid documents (which must
 * be refused cleanly or parsed, never read out of bounds: run under ASan).
 */
#include "tap.h"
#include "json.h"
#include "util.h"   /* the engine's helpers, for the test's own buffers */

#include <stdlib.h>

static struct json_parser ps;

/* Parse a NUL-terminated text (its NUL not included). */
static int parse(const char *text, const struct json_value **v, struct json_error *e)
{
	return json_parse(&ps, text, strlen(text), v, e);
}

/* The text must be refused at byte offset `at`, with a message containing `msg`. */
static void refused(const char *text, size_t len, size_t at, const char *msg, const char *name)
{
	const struct json_value *v = NULL;
	struct json_error e;
	int r = json_parse(&ps, text, len, &v, &e);

	if (!ok(r == -EINVAL, "%s: refused", name))
		return;
	if (!is_int(e.offset, at, "%s: at offset %zu", name, at))
		diag("message: %s", e.msg);
	if (msg && !ok(strstr(e.msg, msg) != NULL, "%s: the message says \"%s\"", name, msg))
		diag("message: %s", e.msg);
}

static void refused_str(const char *text, size_t at, const char *msg, const char *name)
{
	refused(text, strlen(text), at, msg, name);
}

static int str_is(const struct json_value *v, const char *want, size_t n)
{
	return v && v->type == JSON_STRING && v->len == n && memcmp(v->u.text, want, n) == 0;
}

static int num_is(const struct json_value *v, const char *want)
{
	return v && v->type == JSON_NUMBER && v->len == strlen(want) &&
	       memcmp(v->u.text, want, v->len) == 0;
}

/* ------------------------------------------------------------ values */

static void test_scalars(void)
{
	const struct json_value *v;
	struct json_error e;

	is_int(parse("null", &v, &e), 0, "null parses");
	is_int(v->type, JSON_NULL, "null is JSON_NULL");
	is_int(parse(" true ", &v, &e), 0, "true with spaces around parses");
	is_int(v->type, JSON_TRUE, "true is JSON_TRUE");
	is_int(parse("\t\r\nfalse\n", &v, &e), 0, "false with tab, CR, LF around parses");
	is_int(v->type, JSON_FALSE, "false is JSON_FALSE");
	is_int(v->offset, 3, "a value's offset is where it starts, after the whitespace");

	is_int(parse("0", &v, &e), 0, "0 parses");
	ok(num_is(v, "0"), "0 is kept as \"0\"");
	is_int(parse("-12.5e+3", &v, &e), 0, "-12.5e+3 parses");
	ok(num_is(v, "-12.5e+3"), "a number keeps its text exactly");
	is_int(parse("1E-05", &v, &e), 0, "1E-05 (capital E, exponent with a leading zero) parses");
	ok(num_is(v, "1E-05"), "1E-05 kept as written");
	is_int(parse("-0", &v, &e), 0, "-0 parses");
	ok(num_is(v, "-0"), "-0 kept as written");

	is_int(parse("\"\"", &v, &e), 0, "the empty string parses");
	ok(str_is(v, "", 0), "the empty string has length 0");
	is_int(parse("\"plain text\"", &v, &e), 0, "a plain string parses");
	ok(str_is(v, "plain text", 10), "its bytes");
}

static void test_containers(void)
{
	const char *text = "{\"a\":[1,\"two\",true,null,{}],\"b\":{\"c\":[]},\"\":-1}";
	const struct json_value *v, *a, *b;
	struct json_error e;

	is_int(parse(text, &v, &e), 0, "nested objects and arrays parse");
	is_int(v->type, JSON_OBJECT, "the root is an object");
	is_int(v->len, 3, "with three members");
	ok(v->u.members[0].key_len == 1 && v->u.members[0].key[0] == 'a' &&
	   v->u.members[1].key[0] == 'b' && v->u.members[2].key_len == 0,
	   "members keep the input order (a, b, and the empty key)");
	a = json_get(v, "a");
	ok(a && a->type == JSON_ARRAY && a->len == 5, "a is an array of five items");
	if (a && a->len == 5) {
		ok(num_is(&a->u.items[0], "1"), "a[0] is 1");
		ok(str_is(&a->u.items[1], "two", 3), "a[1] is \"two\"");
		is_int(a->u.items[2].type, JSON_TRUE, "a[2] is true");
		is_int(a->u.items[3].type, JSON_NULL, "a[3] is null");
		ok(a->u.items[4].type == JSON_OBJECT && a->u.items[4].len == 0, "a[4] is {}");
		is_int(a->u.items[1].offset, 8, "a[1] starts at offset 8");
	}
	b = json_get(v, "b");
	ok(b && json_get(b, "c") && json_get(b, "c")->type == JSON_ARRAY &&
	   json_get(b, "c")->len == 0, "b.c is []");
	ok(num_is(json_get(v, ""), "-1"), "the empty key holds -1");
	ok(json_get(v, "z") == NULL, "json_get of an absent key is NULL");
	ok(json_get(a, "x") == NULL, "json_get on an array is NULL");

	is_int(parse("[ ]", &v, &e), 0, "[ ] parses");
	ok(v->type == JSON_ARRAY && v->len == 0, "as an empty array");
	is_int(parse("{ \"k\" : 1 , \"l\" : [ 2 , 3 ] }", &v, &e), 0,
	       "whitespace around every token is allowed");
}

static void test_escapes(void)
{
	const struct json_value *v;
	struct json_error e;
	const char *in;

	is_int(parse("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", &v, &e), 0, "the short escapes parse");
	ok(str_is(v, "\" \\ / \b \f \n \r \t", 15), "and decode to their characters");
	is_int(parse("\"\\u0041\\u00e9\\u20AC\"", &v, &e), 0, "\\u escapes (either case of hex)");
	ok(str_is(v, "A\xc3\xa9\xe2\x82\xac", 6), "decode to UTF-8 of 1, 2 and 3 bytes");
	is_int(parse("\"\\ud83d\\ude00\"", &v, &e), 0, "a surrogate pair parses");
	ok(str_is(v, "\xf0\x9f\x98\x80", 4), "and decodes to one 4-byte character (U+1F600)");
	is_int(parse("\"\\uDBFF\\uDFFF\"", &v, &e), 0, "the highest surrogate pair parses");
	ok(str_is(v, "\xf4\x8f\xbf\xbf", 4), "as U+10FFFF");
	is_int(parse("\"a\\u0000b\"", &v, &e), 0, "\\u0000 parses");
	ok(str_is(v, "a\0b", 3), "to a NUL byte inside the string (length 3)");
	is_int(parse("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"", &v, &e), 0,
	       "raw UTF-8 and DEL in a string parse");
	ok(str_is(v, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f", 10), "unchanged");

	in = "\"no escapes\"";
	is_int(parse(in, &v, &e), 0, "a string without escapes");
	ok(v->u.text == in + 1, "points into the input (no copy)");
	in = "\"one\\nescape\"";
	is_int(parse(in, &v, &e), 0, "a string with an escape");
	ok(v->u.text < in || v->u.text > in + strlen(in), "is decoded into the parser's memory");

	refused_str("\"\\ud800\"", 1, "high surrogate", "a lone high surrogate");
	refused_str("\"\\ud800\\u0041\"", 1, "high surrogate", "a high surrogate before \\u0041");
	refused_str("\"\\ud800\\ud800\"", 1, "high surrogate", "two high surrogates");
	refused_str("\"x\\udc00\"", 2, "low surrogate", "a lone low surrogate");
	refused_str("\"\\u12\"", 1, "four hex digits", "\\u with two hex digits");
	refused_str("\"\\u12g4\"", 1, "four hex digits", "\\u with a non-hex digit");
	refused_str("\"ab\\x41\"", 3, "unknown escape", "\\x is not an escape");
	refused_str("\"\\'\"", 1, "unknown escape", "\\' is not an escape");
	refused_str("\"ab\\", 0, "not terminated", "a backslash at the end of the input");
}

static void test_utf8(void)
{
	refused_str("\"ab\xc0\x80\"", 3, "UTF-8", "an overlong NUL (C0 80)");
	refused_str("\"\xed\xa0\x80\"", 1, "UTF-8", "an encoded surrogate (ED A0 80)");
	refused_str("\"\xf4\x90\x80\x80\"", 1, "UTF-8", "above U+10FFFF (F4 90 80 80)");
	refused_str("\"\xf5\x80\x80\x80\"", 1, "UTF-8", "byte F5");
	refused_str("\"a\xff\"", 2, "UTF-8", "byte FF");
	refused_str("\"\xe2\x82\"", 1, "UTF-8", "a truncated 3-byte sequence");
	refused_str("\"\x80\"", 1, "UTF-8", "a lone continuation byte");
	refused_str("\"\xe0\x80\xaf\"", 1, "UTF-8", "an overlong 3-byte form");
	refused_str("\"\xf0\x80\x80\xaf\"", 1, "UTF-8", "an overlong 4-byte form");
	ok(json_utf8_valid("", 0), "json_utf8_valid: empty");
	ok(json_utf8_valid("a\0b", 3), "json_utf8_valid: NUL is valid UTF-8");
	ok(json_utf8_valid("\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7), "json_utf8_valid: U+FFFF, U+10FFFF");
	ok(!json_utf8_valid("\xed\xbf\xbf", 3), "json_utf8_valid: U+DFFF (a surrogate) is not");
	ok(!json_utf8_valid("abc\xc2", 4), "json_utf8_valid: a truncated tail is not");
}

/* ------------------------------------------------------------ refusals */

static void test_malformed(void)
{
	static const char bom[] = "\xef\xbb\xbf{}";

	refused_str("", 0, "expected a value", "empty input");
	refused_str("   \n", 4, "expected a value", "only whitespace");
	refused_str("[1,]", 3, "expected a value", "a trailing comma in an array");
	refused_str("{\"a\":1,}", 7, "expected a string key", "a trailing comma in an object");
	refused_str("{\"a\" 1}", 5, "expected ':'", "a missing colon");
	refused_str("{'a':1}", 1, "expected a string key", "single quotes");
	refused_str("{a:1}", 1, "expected a string key", "an unquoted key");
	refused_str("[1 2]", 3, "expected ',' or ']'", "a missing comma in an array");
	refused_str("{\"a\":1 \"b\":2}", 7, "expected ',' or '}'", "a missing comma in an object");
	refused_str("[1,2", 4, "expected ',' or ']'", "an unclosed array");
	refused_str("{\"a\":1", 6, "expected ',' or '}'", "an unclosed object");
	refused_str("{\"a\":1]", 6, "expected ',' or '}'", "a mismatched bracket");
	refused_str("01", 0, "leading zero", "a leading zero");
	refused_str("-01", 0, "leading zero", "a negative number with a leading zero");
	refused_str("+1", 0, "expected a value", "a leading +");
	refused_str(".5", 0, "expected a value", "no digit before the point");
	refused_str("1.", 2, "after the decimal point", "no digit after the point");
	refused_str("1.e5", 2, "after the decimal point", "1.e5");
	refused_str("1e", 2, "exponent", "an exponent without digits");
	refused_str("1e+", 3, "exponent", "an exponent sign without digits");
	refused_str("-", 1, "expected a digit", "a lone minus");
	refused_str("- 1", 1, "expected a digit", "a minus before a space");
	refused_str("NaN", 0, "expected a value", "NaN");
	refused_str("Infinity", 0, "expected a value", "Infinity");
	refused_str("-Infinity", 1, "expected a digit", "-Infinity");
	refused_str("0x10", 1, "after the value", "hex numbers");
	refused_str("tru", 0, "expected true", "a truncated true");
	refused_str("nulll", 4, "after the value", "null with an extra letter");
	refused_str("True", 0, "expected a value", "capitalised True");
	refused_str("\"abc", 0, "not terminated", "an unterminated string");
	refused_str("[\"a\nb\"]", 3, "control character", "a raw newline in a string");
	refused_str("\"tab\there\"", 4, "control character", "a raw tab in a string");
	refused_str("/* c */ 1", 0, "expected a value", "a comment");
	refused_str("1 2", 2, "after the value", "two values");
	refused_str("{} {}", 3, "after the value", "two objects");
	refused_str("[1] x", 4, "after the value", "garbage after the value");
	refused_str("\v1", 0, "expected a value", "a vertical tab is not JSON whitespace");
	refused(bom, sizeof(bom) - 1, 0, "expected a value", "a byte-order mark");
	refused("[1,\0 2]", 7, 3, "expected a value", "a NUL byte between tokens");
	refused("\"a\0b\"", 5, 2, "control character", "a raw NUL byte in a string");
	refused("[1,2]", 3, 3, "expected a value", "input cut after a comma (length bounds the parse)");
	refused("{\"key\":\"val", 9, 7, "not terminated", "input cut inside a string");
}

static void test_duplicates(void)
{
	const struct json_value *v;
	struct json_error e;
	struct buf b = BUF_INIT;
	char key[32];

	refused_str("{\"a\":1,\"b\":2,\"a\":3}", 13, "duplicate key \"a\"", "a duplicate key");
	refused_str("{\"a\":{\"x\":1,\"x\":2}}", 12, "duplicate key \"x\"",
		    "a duplicate key in a nested object");
	is_int(parse("{\"a\":{\"a\":1},\"b\":{\"a\":2}}", &v, &e), 0,
	       "the same key in different objects is fine");
	is_int(parse("{\"a\":1,\"a\\u0000\":2,\"A\":3}", &v, &e), 0,
	       "keys that differ only after a NUL or in case are distinct");
	/* a large object: checked by sorting when it closes */
	buf_append(&b, "{", 1);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "%s\"k%d\":%d", i ? "," : "", i, i);
		buf_append(&b, key, strlen(key));
	}
	buf_append(&b, "}", 1);
	is_int(json_parse(&ps, b.data, b.len, &v, &e), 0, "an object of 100 distinct keys parses");
	is_int(v->len, 100, "with 100 members");
	ok(num_is(json_get(v, "k77"), "77"), "k77 is 77");
	b.len--;
	buf_append(&b, ",\"k42\":0}", 9);
	refused(b.data, b.len, 0, "duplicate key \"k42\"",
		"a duplicate among 101 keys (found by sorting; reported at the object)");
	buf_free(&b);
}

static void test_depth(void)
{
	struct json_parser small;
	const struct json_value *v;
	struct json_error e;
	struct buf b = BUF_INIT;
	int r;

	for (int i = 0; i < 64; i++)
		buf_append(&b, "[", 1);
	for (int i = 0; i < 64; i++)
		buf_append(&b, "]", 1);
	is_int(json_parse(&ps, b.data, b.len, &v, &e), 0, "64 nested arrays parse (the default limit)");
	buf_clear(&b);
	for (int i = 0; i < 65; i++)
		buf_append(&b, i % 2 ? "{\"k\":" : "[", i % 2 ? 5 : 1);
	refused(b.data, b.len, 64 / 2 * 6, "nested more than 64", "65 nested containers are refused");

	json_parser_init(&small, 3);
	is_int(json_parse(&small, "[[[1]]]", 7, &v, &e), 0, "max_depth 3: three levels parse");
	r = json_parse(&small, "[[[[1]]]]", 9, &v, &e);
	ok(r == -EINVAL && e.offset == 3, "max_depth 3: the fourth level is refused at offset 3");
	json_parser_free(&small);

	/* far deeper than any limit: refused at the limit, without recursing further */
	buf_clear(&b);
	for (int i = 0; i < 1000000; i++)
		buf_append(&b, "[", 1);
	refused(b.data, b.len, 64, "nested", "a million '[' are refused at depth 64");
	json_parser_init(&small, 100000);
	is_int(small.max_depth, JSON_MAX_DEPTH_LIMIT, "max_depth is clamped to JSON_MAX_DEPTH_LIMIT");
	r = json_parse(&small, b.data, b.len, &v, &e);
	ok(r == -EINVAL && e.offset == JSON_MAX_DEPTH_LIMIT,
	   "with the largest limit, a million '[' are refused at depth %u", JSON_MAX_DEPTH_LIMIT);
	json_parser_free(&small);
	buf_free(&b);
}

/* ------------------------------------------------------------ numbers */

static void test_numbers(void)
{
	const struct json_value *v;
	struct json_error e;
	int64_t i;
	uint64_t u;

	is_int(parse("123456789012345678901234567890123456789012345678901234567890", &v, &e), 0,
	       "a 60-digit integer parses");
	ok(num_is(v, "123456789012345678901234567890123456789012345678901234567890"),
	   "and is kept as its text, every digit");
	is_int(json_get_i64(v, &i), -ERANGE, "json_get_i64 of it is -ERANGE");
	is_int(json_get_u64(v, &u), -ERANGE, "json_get_u64 of it is -ERANGE");
	is_int(parse("1e400", &v, &e), 0, "1e400 (beyond any double) parses");
	ok(num_is(v, "1e400"), "and is kept as \"1e400\"");
	is_int(parse("0.10000000000000000000000000000000000000001", &v, &e), 0,
	       "a long fraction parses");
	ok(num_is(v, "0.10000000000000000000000000000000000000001"), "and keeps every digit");

	parse("9223372036854775807", &v, &e);
	ok(json_get_i64(v, &i) == 0 && i == INT64_MAX, "json_get_i64: INT64_MAX exactly");
	parse("-9223372036854775808", &v, &e);
	ok(json_get_i64(v, &i) == 0 && i == INT64_MIN, "json_get_i64: INT64_MIN exactly");
	parse("9223372036854775808", &v, &e);
	is_int(json_get_i64(v, &i), -ERANGE, "json_get_i64: INT64_MAX + 1 is -ERANGE");
	parse("-9223372036854775809", &v, &e);
	is_int(json_get_i64(v, &i), -ERANGE, "json_get_i64: INT64_MIN - 1 is -ERANGE");
	parse("9007199254740993", &v, &e);
	ok(json_get_i64(v, &i) == 0 && i == 9007199254740993LL,
	   "json_get_i64: 2^53 + 1 is exact (no double on the way)");
	parse("-0", &v, &e);
	ok(json_get_i64(v, &i) == 0 && i == 0, "json_get_i64: -0 is 0");
	parse("1.0", &v, &e);
	is_int(json_get_i64(v, &i), -EINVAL, "json_get_i64: 1.0 is not an integer literal");
	parse("1e3", &v, &e);
	is_int(json_get_i64(v, &i), -EINVAL, "json_get_i64: 1e3 is not an integer literal");
	parse("\"1\"", &v, &e);
	is_int(json_get_i64(v, &i), -EINVAL, "json_get_i64: a string is not a number");

	parse("18446744073709551615", &v, &e);
	ok(json_get_u64(v, &u) == 0 && u == UINT64_MAX, "json_get_u64: UINT64_MAX exactly");
	parse("18446744073709551616", &v, &e);
	is_int(json_get_u64(v, &u), -ERANGE, "json_get_u64: UINT64_MAX + 1 is -ERANGE");
	parse("-1", &v, &e);
	is_int(json_get_u64(v, &u), -EINVAL, "json_get_u64: -1 is refused");
	parse("-0", &v, &e);
	ok(json_get_u64(v, &u) == 0 && u == 0, "json_get_u64: -0 is 0");

	parse("1706140800123456789", &v, &e);
	ok(json_get_u64_div(v, 1000, &u) == 0 && u == 1706140800123456ULL,
	   "json_get_u64_div: nanoseconds to microseconds, rounded down");
	parse("999", &v, &e);
	ok(json_get_u64_div(v, 1000, &u) == 0 && u == 0, "json_get_u64_div: 999 / 1000 is 0");
	parse("18446744073709551615999", &v, &e);
	ok(json_get_u64_div(v, 1000, &u) == 0 && u == UINT64_MAX,
	   "json_get_u64_div: a value above 2^64 whose quotient fits");
	parse("18446744073709551616000", &v, &e);
	is_int(json_get_u64_div(v, 1000, &u), -ERANGE,
	       "json_get_u64_div: a quotient of 2^64 is -ERANGE");
	parse("340282366920938463463374607431768211455", &v, &e);
	is_int(json_get_u64_div(v, 1000, &u), -ERANGE,
	       "json_get_u64_div: 2^128 - 1 (Smoltable's largest time) / 1000 is -ERANGE");
	parse("340282366920938463463374607431768211456", &v, &e);
	is_int(json_get_u64_div(v, 1000, &u), -ERANGE, "json_get_u64_div: 2^128 overflows");
	is_int(json_get_u64_div(v, 0, &u), -EINVAL, "json_get_u64_div: divisor 0 is refused");
}

/* ------------------------------------------------------------ writing */

static void test_put_string(void)
{
	struct buf b = BUF_INIT;
	static const char want[] = "\"a\\\"b\\\\c/\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\x7f\xc3\xa9\"";

	is_int(json_put_string(&b, "a\"b\\c/\b\f\n\r\t\0\x01\x1f\x7f\xc3\xa9", 17), 0,
	       "json_put_string of quotes, backslash, controls, DEL, UTF-8");
	is_mem(b.data, b.len, want, sizeof(want) - 1,
	       "escapes are the fixed set: \\\" \\\\ \\b \\f \\n \\r \\t \\u00XX; / DEL and UTF-8 as is");
	buf_clear(&b);
	buf_append(&b, "keep", 4);
	is_int(json_put_string(&b, "ok\xff", 3), -EINVAL, "json_put_string refuses invalid UTF-8");
	is_mem(b.data, b.len, "keep", 4, "and appends nothing");
	is_int(json_put_string(&b, "\xed\xa0\x80", 3), -EINVAL,
	       "json_put_string refuses an encoded surrogate");
	buf_clear(&b);
	is_int(json_put_string(&b, "", 0), 0, "json_put_string of nothing");
	is_mem(b.data, b.len, "\"\"", 2, "is \"\"");
	buf_free(&b);
}

static void test_base64(void)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "\"\"", "\"Zg==\"", "\"Zm8=\"", "\"Zm9v\"",
					     "\"Zm9vYg==\"", "\"Zm9vYmE=\"", "\"Zm9vYmFy\"" };
	struct buf b = BUF_INIT;
	char out[16];
	size_t n, at;

	for (int i = 0; i < 7; i++) {
		buf_clear(&b);
		json_put_base64(&b, plain[i], strlen(plain[i]));
		is_mem(b.data, b.len, coded[i], strlen(coded[i]), "base64 of \"%s\" (RFC 4648)",
		       plain[i]);
		ok(json_base64_decode(coded[i] + 1, strlen(coded[i]) - 2, out, &n, &at) == 0 &&
		   n == strlen(plain[i]) && memcmp(out, plain[i], n) == 0,
		   "decoding %s gives \"%s\"", coded[i], plain[i]);
	}
	ok(json_base64_decode("Zg=", 3, out, &n, &at) == -EINVAL, "a length not a multiple of 4");
	ok(json_base64_decode("Zh==", 4, out, &n, &at) == -EINVAL && at == 1,
	   "non-zero unused bits (Zh==) are refused at character 1");
	ok(json_base64_decode("Zm9=", 4, out, &n, &at) == -EINVAL && at == 2,
	   "non-zero unused bits (Zm9=) are refused at character 2");
	ok(json_base64_decode("Zm9v Zg=", 8, out, &n, &at) == -EINVAL && at == 4,
	   "a space is refused where it is");
	ok(json_base64_decode("Zm9vZg==\n", 9, out, &n, &at) == -EINVAL, "a newline is refused");
	ok(json_base64_decode("Zg==Zg==", 8, out, &n, &at) == -EINVAL && at == 2,
	   "padding in the middle is refused");
	ok(json_base64_decode("Z===", 4, out, &n, &at) == -EINVAL, "three padding characters");
	ok(json_base64_decode("====", 4, out, &n, &at) == -EINVAL, "only padding");
	ok(json_base64_decode("Zm9-", 4, out, &n, &at) == -EINVAL && at == 3,
	   "the URL alphabet's '-' is refused");
	ok(json_base64_decode("Zm9_", 4, out, &n, &at) == -EINVAL && at == 3,
	   "the URL alphabet's '_' is refused");
	ok(json_base64_decode("+/+/", 4, out, &n, &at) == 0 && n == 3 &&
	   memcmp(out, "\xfb\xff\xbf", 3) == 0, "+ and / decode to 62 and 63");
	buf_free(&b);
}

/* ------------------------------------------------------------ round trips and damage */

/* A random valid UTF-8 string of up to max characters into b. */
static void random_utf8(struct buf *b, uint64_t *seed, int max)
{
	int n = (int)(rand_next(seed) % (uint64_t)(max + 1));

	buf_clear(b);
	for (int i = 0; i < n; i++) {
		uint32_t cp;
		char u[4];
		size_t len;

		switch (rand_next(seed) % 4) {
		case 0: cp = (uint32_t)(rand_next(seed) % 0x80); break;     /* controls included */
		case 1: cp = 0x80 + (uint32_t)(rand_next(seed) % 0x780); break;
		case 2:
			cp = 0x800 + (uint32_t)(rand_next(seed) % 0xf800);
			if (cp >= 0xd800 && cp <= 0xdfff)
				cp = 0xfffd;
			break;
		default: cp = 0x10000 + (uint32_t)(rand_next(seed) % 0x100000); break;
		}
		if (cp < 0x80) {
			u[0] = (char)cp;
			len = 1;
		} else if (cp < 0x800) {
			u[0] = (char)(0xc0 | cp >> 6);
			u[1] = (char)(0x80 | (cp & 0x3f));
			len = 2;
		} else if (cp < 0x10000) {
			u[0] = (char)(0xe0 | cp >> 12);
			u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			u[2] = (char)(0x80 | (cp & 0x3f));
			len = 3;
		} else {
			u[0] = (char)(0xf0 | cp >> 18);
			u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			u[3] = (char)(0x80 | (cp & 0x3f));
			len = 4;
		}
		buf_append(b, u, len);
	}
}

static void test_round_trips(void)
{
	struct buf s = BUF_INIT, out = BUF_INIT, dec = BUF_INIT;
	const struct json_value *v;
	struct json_error e;
	uint64_t seed = 42;
	int bad_str = 0, bad_b64 = 0;

	for (int i = 0; i < 2000; i++) {
		random_utf8(&s, &seed, 40);
		buf_clear(&out);
		if (json_put_string(&out, s.data, s.len) != 0 ||
		    json_parse(&ps, out.data, out.len, &v, &e) != 0 ||
		    !str_is(v, s.data ? s.data : "", s.len))
			bad_str++;
	}
	is_int(bad_str, 0, "2000 random UTF-8 strings (controls, all planes) round-trip through "
	       "json_put_string and json_parse");
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(rand_next(&seed) % 64), got = 0, at;

		buf_clear(&s);
		for (size_t k = 0; k < n; k++) {
			char c = (char)rand_next(&seed);

			buf_append(&s, &c, 1);
		}
		buf_clear(&out);
		json_put_base64(&out, s.data, s.len);
		buf_clear(&dec);
		buf_reserve(&dec, json_base64_max(out.len));
		if (json_base64_decode(out.data + 1, out.len - 2, dec.data, &got, &at) != 0 ||
		    got != n || (n && memcmp(dec.data, s.data, n) != 0))
			bad_b64++;
	}
	is_int(bad_b64, 0, "2000 random byte strings round-trip through base64");
	buf_free(&s);
	buf_free(&out);
	buf_free(&dec);
}

/*
 * Random damage to a valid document: each result is parsed whole or refused
 * with an offset inside the input; ASan checks that nothing is read outside
 * it (each damaged copy is a malloc'd buffer of exactly its length).
 */
static void test_damage(void)
{
	static const char doc[] = "{\"table\":\"t\",\"row\":\"r\\u00e9\",\"cells\":[{\"family\":"
				  "\"f\",\"qualifier\":\"q\",\"ts\":17,\"type\":\"f64\",\"value\":-1.5e3},"
				  "{\"x\":[true,false,null,\"\\ud83d\\ude00\"]}]}";
	static const char noise[] = "{}[]\",:\\u0eE-+.9 \nabtfnx\xff\xc3";
	const struct json_value *v;
	struct json_error e;
	uint64_t seed = 7;
	int parsed = 0, refused_ok = 0, wrong = 0;

	is_int(json_parse(&ps, doc, sizeof(doc) - 1, &v, &e), 0, "the undamaged document parses");
	for (int i = 0; i < 20000; i++) {
		size_t n = sizeof(doc) - 1;
		char *d = xmalloc(n);
		int edits = 1 + (int)(rand_next(&seed) % 3);

		memcpy(d, doc, n);
		for (int k = 0; k < edits; k++) {
			size_t at = (size_t)(rand_next(&seed) % n);

			switch (rand_next(&seed) % 3) {
			case 0:   /* replace a byte */
				d[at] = noise[rand_next(&seed) % (sizeof(noise) - 1)];
				break;
			case 1:   /* cut the document short */
				n = at;
				break;
			default:  /* delete a byte */
				memmove(d + at, d + at + 1, n - at - 1);
				n--;
				break;
			}
			if (n == 0)
				break;
		}
		if (json_parse(&ps, d, n, &v, &e) == 0)
			parsed++;
		else if (e.offset <= n && e.msg[0])
			refused_ok++;
		else
			wrong++;
		free(d);
	}
	is_int(wrong, 0, "20000 damaged documents: each parses or is refused with an offset "
	       "inside it and a message");
	diag("damaged documents: %d parsed, %d refused", parsed, refused_ok);
	ok(refused_ok > 15000, "most damaged documents are refused (%d)", refused_ok);
}

int main(void)
{
	plan(328);
	json_parser_init(&ps, 0);
	test_scalars();
	test_containers();
	test_escapes();
	test_utf8();
	test_malformed();
	test_duplicates();
	test_depth();
	test_numbers();
	test_put_string();
	test_base64();
	test_round_trips();
	test_damage();
	json_parser_free(&ps);
	return exit_status();
}
