/*
 * cell.h -- typed cell values: their stored encoding, their text form (what
 * `cat` shows and what a write parses), conversion between types, and the
 * read-modify-write helpers (increment, append).  Pure functions: no I/O, no
 * global state, safe from any thread.
 *
 * Stored encoding (the kv value of a cell version): one tag byte, the
 * enum cell_type value, followed by the payload:
 *     string   the UTF-8 bytes (valid UTF-8, checked on encode and decode)
 *     bytes    the raw bytes
 *     boolean  1 byte, 0 or 1
 *     byte     1 byte
 *     i32 i64  4 / 8 bytes, two's complement, little-endian
 *     f32 f64  4 / 8 bytes, the IEEE 754 bits, little-endian
 * Tag 0 and tags above 8 are invalid (a newer format or damage).
 *
 * Text form, rendered (cell_render):
 *     string   its bytes and "\n"
 *     bytes    its bytes exactly, nothing added
 *     boolean  "true\n" or "false\n"
 *     byte i32 i64   decimal, "-" for negatives, and "\n"
 *     f32 f64  the fewest significant digits that read back (strtof/strtod) to
 *              exactly the same value, laid out as Python's repr does (but
 *              without its ".0"): fixed notation when the decimal exponent is
 *              in [-4, 16) ("100", "0.0001", "123456.789"), else scientific
 *              with at least two exponent digits ("1e+16", "1e-05", "5e-324");
 *              "nan" for every NaN (sign and payload are not kept), "inf",
 *              "-inf", "-0"; and "\n"
 *
 * Text form, parsed (cell_parse):
 *     numbers  surrounding whitespace (" \t\n\v\f\r") is allowed, and so a
 *              trailing newline; integers are decimal with an optional + or
 *              - sign and leading zeros allowed ("0x10", "1e3", "1.0" are
 *              refused); out of range is refused; byte takes 0..255 ("-0" is
 *              0); floats take what strtod/strtof take in the C locale
 *              ("1.5", "1e-3", "0x1p-2", "nan", "inf", "infinity") but a
 *              finite literal too large for the type is refused rather than
 *              turned into infinity (write "inf" for that); one too small is
 *              rounded as strtod does (to a subnormal or zero)
 *     boolean  "true", "false", "1" or "0", with surrounding whitespace allowed
 *              (case matters: "TRUE" is refused)
 *     string   one trailing "\n" is removed; what is left must be valid UTF-8
 *              (U+0000 included); other whitespace is kept
 *     bytes    taken unchanged: no newline is removed, since any byte may belong
 *              to the value (cat shows bytes with nothing added, so a copied file
 *              round-trips)
 *     Anything refused is -EINVAL.  Empty input is refused for every type but
 *     string and bytes.
 *
 * Values borrow: a cell_value of type string or bytes points at bytes it does
 * not own (in the stored value, the text parsed, or a caller's scratch buffer,
 * as each function says).
 */
#ifndef SMOLFS_CELL_H
#define SMOLFS_CELL_H

#include <stddef.h>
#include <stdint.h>

#include "slice.h"

enum cell_type {
	CELL_INVALID = 0,   /* reserved: never stored */
	CELL_STRING = 1,
	CELL_BYTES = 2,
	CELL_BOOLEAN = 3,
	CELL_BYTE = 4,
	CELL_I32 = 5,
	CELL_I64 = 6,
	CELL_F32 = 7,
	CELL_F64 = 8,
};
#define CELL_TYPE_MAX CELL_F64

struct cell_value {
	enum cell_type type;
	union {
		struct slice data;   /* string, bytes: borrowed */
		int boolean;         /* 0 or 1 */
		uint8_t byte;
		int32_t i32;
		int64_t i64;
		float f32;
		double f64;
	} v;
};

/* "string", "bytes", "boolean", "byte", "i32", "i64", "f32", "f64"; NULL for anything else. */
const char *cell_type_name(enum cell_type t);
/* The type with that exact name (no whitespace or newline allowed): 0, or -EINVAL. */
int cell_type_parse(struct slice name, enum cell_type *t);

/*
 * Append the stored encoding of v to out.  -EINVAL (and nothing appended) if
 * v is not a valid value: an invalid type, a boolean other than 0/1, a string
 * that is not valid UTF-8.
 */
int cell_encode(struct buf *out, const struct cell_value *v);

/*
 * Decode a stored value.  -EUCLEAN if the tag is invalid, the payload has the
 * wrong length for its type, a boolean is not 0/1, or a string is not valid
 * UTF-8.  out->v.data (string, bytes) points into stored.
 */
int cell_decode(struct slice stored, struct cell_value *out);

/*
 * Append the text form of v (see above) to out: exactly what `cat` prints, so
 * its length is the file's st_size.  -EINVAL for an invalid value, as for
 * cell_encode (except that strings are not rechecked: they were on decode).
 */
int cell_render(struct buf *out, const struct cell_value *v);

/*
 * Parse text as a value of type t (rules above): 0 or -EINVAL.  For string
 * and bytes, out->v.data points into text.
 */
int cell_parse(enum cell_type t, struct slice text, struct cell_value *out);

/*
 * Convert a value to type `to`, for changing a cell's type.  The rules:
 *   - to the same type: unchanged;
 *   - to string or bytes: the text form without its trailing "\n" (bytes to
 *     string and string to bytes keep the bytes; bytes to string only when
 *     they are valid UTF-8);
 *   - from string or bytes: cell_parse of the bytes as text (so "42\n" -> 42);
 *   - boolean to a number: 1 or 0; a number to boolean: 1 -> true, 0 (or -0)
 *     -> false, anything else refused;
 *   - integer to integer: the same value, refused if out of range;
 *   - integer to float: rounded to nearest, as parsing its digits would;
 *   - float to integer: only an integral value in range (NaN, inf, 2.5 refused);
 *   - float to float: through the shortest text, so f32 0.1 becomes f64 0.1
 *     (not 0.10000000149011612); a finite f64 beyond f32's range is refused,
 *     one too small for f32 rounds (to a subnormal or zero) as strtof does.
 * Every refusal is -EINVAL: the value keeps its type (smolfs(5): changing the
 * type converts the value or fails with EINVAL).  For string and bytes results
 * out->v.data points into in's data or into scratch (cleared first).
 * REQUIRES: in's data does not point into scratch.
 */
int cell_convert(const struct cell_value *in, enum cell_type to, struct cell_value *out,
		 struct buf *scratch);

/*
 * v += delta for an i32 or i64 cell.  -ERANGE if the result does not fit the
 * type, -EINVAL for other types; v is unchanged on error.
 */
int cell_increment(struct cell_value *v, int64_t delta);

/*
 * out = in with tail appended, for string and bytes cells: the joined bytes
 * are written to scratch (cleared first) and out->v.data points there.  For a
 * string, tail must be valid UTF-8 (joining two valid strings is valid).
 * -EINVAL for other types or a bad tail.  REQUIRES: in's data and tail do not
 * point into scratch.
 */
int cell_append(const struct cell_value *in, struct slice tail, struct cell_value *out,
		struct buf *scratch);

/*
 * UTF-8 as RFC 3629 defines it: shortest forms only, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, so bytes 0xC0, 0xC1, 0xF5..0xFF
 * never appear.  cell_utf8_char returns the length (1..4) of the valid
 * sequence at the start of p[0..n), or 0 if there is none there (invalid or
 * truncated); cell_utf8_valid says whether all of p[0..n) is valid.
 */
int cell_utf8_char(const char *p, size_t n);
int cell_utf8_valid(const char *p, size_t n);

#endif
