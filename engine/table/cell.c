/*
 * cell.c -- typed cell values (cell.h): the stored encoding, the text form,
 * conversions, increment and append, and a UTF-8 validator.
 *
 * Floats are rendered with the fewest significant digits that read back to
 * the same bits.  The search is the plain one: for p = 1, 2, ... format the
 * value with p significant digits ("%.*e", which rounds correctly in glibc)
 * and stop at the first p whose text strtod (strtof for f32) maps back to the
 * identical value.  p = 17 always works for a double and p = 9 for a float,
 * so the loop is bounded; it costs up to 17 format/parse pairs, which is
 * nothing next to a FUSE request.  The digits are then laid out by hand
 * (fixed or scientific, as cell.h says), which never changes the decimal
 * value, so what strtod reads back is the value the search checked.
 *
 * Numbers are read and written in the C locale whatever the process locale:
 * parsing goes through strtod_l with a "C" locale object made once, and the
 * digits are taken out of printf's output without relying on its decimal
 * point character.
 */
#include "cell.h"
#include "util.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const type_names[] = {
	[CELL_STRING] = "string", [CELL_BYTES] = "bytes", [CELL_BOOLEAN] = "boolean",
	[CELL_BYTE] = "byte", [CELL_I32] = "i32", [CELL_I64] = "i64",
	[CELL_F32] = "f32", [CELL_F64] = "f64",
};

static int type_valid(enum cell_type t)
{
	return t >= CELL_STRING && t <= CELL_TYPE_MAX;
}

const char *cell_type_name(enum cell_type t)
{
	return type_valid(t) ? type_names[t] : NULL;
}

int cell_type_parse(struct slice name, enum cell_type *t)
{
	API_ENTRY();
	for (int i = CELL_STRING; i <= CELL_TYPE_MAX; i++)
		if (slice_eq(name, slice_str(type_names[i]))) {
			*t = (enum cell_type)i;
			return 0;
		}
	return -EINVAL;
}

/* ---------------------------------------------------------------- UTF-8 */

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/*
 * The well-formed sequences (RFC 3629, section 4): the lead byte fixes the
 * length, and the allowed range of the second byte shuts out overlong forms
 * (E0 needs A0.., F0 needs 90..), surrogates (ED stops at 9F) and code points
 * past U+10FFFF (F4 stops at 8F).
 */
int cell_utf8_char(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	unsigned char lo = 0x80, hi = 0xbf;

	if (n == 0)
		return 0;
	if (u[0] < 0x80)
		return 1;
	if (u[0] < 0xc2)
		return 0;
	if (u[0] < 0xe0)
		return n >= 2 && is_cont(u[1]) ? 2 : 0;
	if (u[0] < 0xf0) {
		if (u[0] == 0xe0)
			lo = 0xa0;
		else if (u[0] == 0xed)
			hi = 0x9f;
		return n >= 3 && u[1] >= lo && u[1] <= hi && is_cont(u[2]) ? 3 : 0;
	}
	if (u[0] < 0xf5) {
		if (u[0] == 0xf0)
			lo = 0x90;
		else if (u[0] == 0xf4)
			hi = 0x8f;
		return n >= 4 && u[1] >= lo && u[1] <= hi && is_cont(u[2]) && is_cont(u[3]) ? 4 : 0;
	}
	return 0;
}

int cell_utf8_valid(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		int len;

		if ((unsigned char)p[i] < 0x80) {
			i++;
			continue;
		}
		len = cell_utf8_char(p + i, n - i);
		if (len == 0)
			return 0;
		i += (size_t)len;
	}
	return 1;
}

/* ---------------------------------------------------------------- C-locale numbers */

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void make_c_locale(void)
{
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static double c_strtod(const char *s, char **end)
{
	pthread_once(&c_locale_once, make_c_locale);
	return c_locale ? strtod_l(s, end, c_locale) : strtod(s, end);
}

static float c_strtof(const char *s, char **end)
{
	pthread_once(&c_locale_once, make_c_locale);
	return c_locale ? strtof_l(s, end, c_locale) : strtof(s, end);
}

/*
 * A finite nonzero number as significant digits and a decimal exponent:
 * value = 0.d1d2...dn * 10^(exp + 1), i.e. d1.d2...dn * 10^exp.
 */
struct decimal {
	int neg;
	int ndigits;
	int exp;
	char digits[24];
};

/* x (finite, nonzero) correctly rounded to p significant digits, from printf's "%.*e". */
static void to_decimal(double x, int p, struct decimal *d)
{
	char tmp[64];
	const char *s = tmp;

	snprintf(tmp, sizeof(tmp), "%.*e", p - 1, x);
	d->neg = *s == '-';
	d->ndigits = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && d->ndigits < (int)sizeof(d->digits))
			d->digits[d->ndigits++] = *s;
	d->exp = *s == 'e' ? atoi(s + 1) : 0;
	while (d->ndigits > 1 && d->digits[d->ndigits - 1] == '0')
		d->ndigits--;
}

/* d as C text "[-]d.ddde<exp>" (NUL-terminated), for strtod. */
static void decimal_text(const struct decimal *d, char *out, size_t size)
{
	snprintf(out, size, "%s%c.%.*se%d", d->neg ? "-" : "", d->digits[0], d->ndigits - 1,
		 d->digits + 1, d->exp);
}

/*
 * The shortest decimal that reads back as x: as a double (is_f32 = 0), or as
 * a float (is_f32 = 1, x holding a float's value exactly).
 */
static void shortest_decimal(double x, int is_f32, struct decimal *d)
{
	int maxp = is_f32 ? 9 : 17;
	char text[64];

	for (int p = 1; p <= maxp; p++) {
		to_decimal(x, p, d);
		decimal_text(d, text, sizeof(text));
		if (is_f32) {
			float want = (float)x, got = c_strtof(text, NULL);

			if (memcmp(&want, &got, sizeof(want)) == 0)
				return;
		} else {
			double got = c_strtod(text, NULL);

			if (memcmp(&x, &got, sizeof(x)) == 0)
				return;
		}
	}
	/* Unreachable with correctly rounded printf/strtod: maxp digits always suffice. */
}

static void put_zeros(struct buf *out, int n)
{
	while (n-- > 0)
		buf_append(out, "0", 1);
}

/* Lay d out as cell.h says: fixed for exponents in [-4, 16), scientific otherwise. */
static void put_decimal(struct buf *out, const struct decimal *d)
{
	char ebuf[16];
	int n = d->ndigits, e = d->exp;

	if (d->neg)
		buf_append(out, "-", 1);
	if (e >= 16 || e < -4) {
		buf_append(out, d->digits, 1);
		if (n > 1) {
			buf_append(out, ".", 1);
			buf_append(out, d->digits + 1, (size_t)n - 1);
		}
		snprintf(ebuf, sizeof(ebuf), "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
		buf_append(out, ebuf, strlen(ebuf));
	} else if (e >= 0) {
		int ints = e + 1;

		buf_append(out, d->digits, (size_t)(n < ints ? n : ints));
		put_zeros(out, ints - n);
		if (n > ints) {
			buf_append(out, ".", 1);
			buf_append(out, d->digits + ints, (size_t)(n - ints));
		}
	} else {
		buf_append(out, "0.", 2);
		put_zeros(out, -e - 1);
		buf_append(out, d->digits, (size_t)n);
	}
}

static void put_float(struct buf *out, double x, int is_f32)
{
	struct decimal d;

	if (isnan(x)) {
		buf_append(out, "nan", 3);
	} else if (isinf(x)) {
		buf_append(out, x < 0 ? "-inf" : "inf", x < 0 ? 4 : 3);
	} else if (x == 0) {
		buf_append(out, signbit(x) ? "-0" : "0", signbit(x) ? 2 : 1);
	} else {
		shortest_decimal(x, is_f32, &d);
		put_decimal(out, &d);
	}
}

/* ---------------------------------------------------------------- text form */

static void put_int(struct buf *out, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);

	buf_append(out, tmp, (size_t)n);
}

/* The text form without the trailing newline; the value's type is valid. */
static int render_bare(struct buf *out, const struct cell_value *v)
{
	switch (v->type) {
	case CELL_STRING:
	case CELL_BYTES:
		buf_append(out, v->v.data.data, v->v.data.len);
		return 0;
	case CELL_BOOLEAN:
		if (v->v.boolean != 0 && v->v.boolean != 1)
			return -EINVAL;
		buf_append(out, v->v.boolean ? "true" : "false", v->v.boolean ? 4 : 5);
		return 0;
	case CELL_BYTE:
		put_int(out, v->v.byte);
		return 0;
	case CELL_I32:
		put_int(out, v->v.i32);
		return 0;
	case CELL_I64:
		put_int(out, v->v.i64);
		return 0;
	case CELL_F32:
		put_float(out, v->v.f32, 1);
		return 0;
	case CELL_F64:
		put_float(out, v->v.f64, 0);
		return 0;
	default:
		return -EINVAL;
	}
}

int cell_render(struct buf *out, const struct cell_value *v)
{
	API_ENTRY();
	size_t mark = out->len;
	int r = render_bare(out, v);

	if (r < 0) {
		out->len = mark;
		return r;
	}
	if (v->type != CELL_BYTES)
		buf_append(out, "\n", 1);
	return 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static struct slice trim(struct slice s)
{
	while (s.len && is_space(s.data[0])) {
		s.data++;
		s.len--;
	}
	while (s.len && is_space(s.data[s.len - 1]))
		s.len--;
	return s;
}

/* A decimal integer in [min, max], surrounding whitespace allowed. */
static int parse_int(struct slice text, int64_t min, int64_t max, int64_t *out)
{
	struct slice s = trim(text);
	uint64_t mag = 0, limit;
	size_t i = 0;
	int neg = 0;

	if (s.len && (s.data[0] == '+' || s.data[0] == '-')) {
		neg = s.data[0] == '-';
		i++;
	}
	if (i == s.len)
		return -EINVAL;
	/* The largest magnitude allowed: -min computed without overflowing. */
	if (neg)
		limit = min < 0 ? (uint64_t)(-(min + 1)) + 1 : 0;
	else
		limit = (uint64_t)max;
	for (; i < s.len; i++) {
		unsigned d = (unsigned char)s.data[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (d > limit || mag > (limit - d) / 10)
			return -EINVAL;
		mag = mag * 10 + d;
	}
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

/*
 * A float as strtod/strtof reads it (C locale), surrounding whitespace allowed,
 * nothing else after it; a finite literal that overflows is refused.
 */
static int parse_float(struct slice text, int is_f32, double *out)
{
	struct slice s = trim(text);
	char small[64], *z = s.len < sizeof(small) ? small : xmalloc(s.len + 1), *end;
	int r = -EINVAL;

	if (s.len == 0 || memchr(s.data, 0, s.len))
		goto out;
	memcpy(z, s.data, s.len);
	z[s.len] = 0;
	errno = 0;
	if (is_f32) {
		float f = c_strtof(z, &end);

		*out = f;
	} else {
		*out = c_strtod(z, &end);
	}
	if (end != z + s.len)
		goto out;
	if (errno == ERANGE && isinf(*out))
		goto out;
	r = 0;
out:
	if (z != small)
		free(z);
	return r;
}

int cell_parse(enum cell_type t, struct slice text, struct cell_value *out)
{
	API_ENTRY();
	struct cell_value v;
	struct slice s;
	int64_t i;
	double f;
	int r;

	v.type = t;
	switch (t) {
	case CELL_STRING:
		s = text;
		if (s.len && s.data[s.len - 1] == '\n')
			s.len--;
		if (!cell_utf8_valid(s.data, s.len))
			return -EINVAL;
		v.v.data = s;
		break;
	case CELL_BYTES:
		v.v.data = text;
		break;
	case CELL_BOOLEAN:
		s = trim(text);
		if (slice_eq(s, slice_str("true")) || slice_eq(s, slice_str("1")))
			v.v.boolean = 1;
		else if (slice_eq(s, slice_str("false")) || slice_eq(s, slice_str("0")))
			v.v.boolean = 0;
		else
			return -EINVAL;
		break;
	case CELL_BYTE:
		if ((r = parse_int(text, 0, UINT8_MAX, &i)) < 0)
			return r;
		v.v.byte = (uint8_t)i;
		break;
	case CELL_I32:
		if ((r = parse_int(text, INT32_MIN, INT32_MAX, &i)) < 0)
			return r;
		v.v.i32 = (int32_t)i;
		break;
	case CELL_I64:
		if ((r = parse_int(text, INT64_MIN, INT64_MAX, &i)) < 0)
			return r;
		v.v.i64 = i;
		break;
	case CELL_F32:
		if ((r = parse_float(text, 1, &f)) < 0)
			return r;
		v.v.f32 = (float)f;
		break;
	case CELL_F64:
		if ((r = parse_float(text, 0, &f)) < 0)
			return r;
		v.v.f64 = f;
		break;
	default:
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* ---------------------------------------------------------------- stored encoding */

static const size_t fixed_len[] = {
	[CELL_BOOLEAN] = 1, [CELL_BYTE] = 1, [CELL_I32] = 4, [CELL_I64] = 8,
	[CELL_F32] = 4, [CELL_F64] = 8,
};

int cell_encode(struct buf *out, const struct cell_value *v)
{
	API_ENTRY();
	char tag = (char)v->type, p[8];
	uint32_t u32;
	uint64_t u64;

	switch (v->type) {
	case CELL_STRING:
		if (!cell_utf8_valid(v->v.data.data, v->v.data.len))
			return -EINVAL;
		/* fall through */
	case CELL_BYTES:
		buf_reserve(out, 1 + v->v.data.len);
		buf_append(out, &tag, 1);
		buf_append(out, v->v.data.data, v->v.data.len);
		return 0;
	case CELL_BOOLEAN:
		if (v->v.boolean != 0 && v->v.boolean != 1)
			return -EINVAL;
		p[0] = (char)v->v.boolean;
		break;
	case CELL_BYTE:
		p[0] = (char)v->v.byte;
		break;
	case CELL_I32:
		enc_fixed32(p, (uint32_t)v->v.i32);
		break;
	case CELL_I64:
		enc_fixed64(p, (uint64_t)v->v.i64);
		break;
	case CELL_F32:
		memcpy(&u32, &v->v.f32, 4);
		enc_fixed32(p, u32);
		break;
	case CELL_F64:
		memcpy(&u64, &v->v.f64, 8);
		enc_fixed64(p, u64);
		break;
	default:
		return -EINVAL;
	}
	buf_append(out, &tag, 1);
	buf_append(out, p, fixed_len[v->type]);
	return 0;
}

int cell_decode(struct slice stored, struct cell_value *out)
{
	API_ENTRY();
	struct cell_value v;
	struct slice p;
	uint32_t u32;
	uint64_t u64;

	if (stored.len == 0)
		return ERR_CORRUPT("cell value: empty, no type tag");
	v.type = (enum cell_type)(unsigned char)stored.data[0];
	if (!type_valid(v.type))
		return ERR_CORRUPT("cell value: invalid type tag %u", (unsigned char)stored.data[0]);
	p = slice_make(stored.data + 1, stored.len - 1);
	if (v.type == CELL_STRING || v.type == CELL_BYTES) {
		if (v.type == CELL_STRING && !cell_utf8_valid(p.data, p.len))
			return ERR_CORRUPT("cell value: string of %zu bytes is not valid UTF-8",
					  p.len);
		v.v.data = p;
		*out = v;
		return 0;
	}
	if (p.len != fixed_len[v.type])
		return ERR_CORRUPT("cell value: %s payload of %zu bytes, want %zu",
				  type_names[v.type], p.len, fixed_len[v.type]);
	switch (v.type) {
	case CELL_BOOLEAN:
		if ((unsigned char)p.data[0] > 1)
			return ERR_CORRUPT("cell value: boolean byte %u",
					  (unsigned char)p.data[0]);
		v.v.boolean = p.data[0];
		break;
	case CELL_BYTE:
		v.v.byte = (uint8_t)p.data[0];
		break;
	case CELL_I32:
		v.v.i32 = (int32_t)dec_fixed32(p.data);
		break;
	case CELL_I64:
		v.v.i64 = (int64_t)dec_fixed64(p.data);
		break;
	case CELL_F32:
		u32 = dec_fixed32(p.data);
		memcpy(&v.v.f32, &u32, 4);
		break;
	default:
		u64 = dec_fixed64(p.data);
		memcpy(&v.v.f64, &u64, 8);
		break;
	}
	*out = v;
	return 0;
}

/* ---------------------------------------------------------------- conversion */

static int is_text(enum cell_type t)
{
	return t == CELL_STRING || t == CELL_BYTES;
}

static int is_float(enum cell_type t)
{
	return t == CELL_F32 || t == CELL_F64;
}

/* An integer-like value (boolean, byte, i32, i64) as an int64. */
static int64_t int_of(const struct cell_value *v)
{
	switch (v->type) {
	case CELL_BOOLEAN:
		return v->v.boolean;
	case CELL_BYTE:
		return v->v.byte;
	case CELL_I32:
		return v->v.i32;
	default:
		return v->v.i64;
	}
}

/* Store integer i as an integer-like type, if it fits. */
static int int_to(int64_t i, enum cell_type to, struct cell_value *out)
{
	out->type = to;
	switch (to) {
	case CELL_BOOLEAN:
		if (i != 0 && i != 1)
			return -EINVAL;
		out->v.boolean = (int)i;
		return 0;
	case CELL_BYTE:
		if (i < 0 || i > UINT8_MAX)
			return -EINVAL;
		out->v.byte = (uint8_t)i;
		return 0;
	case CELL_I32:
		if (i < INT32_MIN || i > INT32_MAX)
			return -EINVAL;
		out->v.i32 = (int32_t)i;
		return 0;
	default:
		out->v.i64 = i;
		return 0;
	}
}

/* A float to an integer-like type: only integral values in range. */
static int float_to_int(double x, enum cell_type to, struct cell_value *out)
{
	/* 2^63 is exactly representable; every double in (-2^63 - 1, 2^63) converts safely. */
	if (!isfinite(x) || x != trunc(x) || x < -9223372036854775808.0 ||
	    x >= 9223372036854775808.0)
		return -EINVAL;
	return int_to((int64_t)x, to, out);
}

/* f32 <-> f64 through the shortest text of the source, so the digits shown stay the same. */
static int float_to_float(const struct cell_value *in, enum cell_type to, struct cell_value *out)
{
	double x = in->type == CELL_F32 ? in->v.f32 : in->v.f64;
	struct decimal d;
	char text[64];

	out->type = to;
	if (isnan(x) || isinf(x) || x == 0) {
		if (to == CELL_F32)
			out->v.f32 = (float)x;
		else
			out->v.f64 = x;
		return 0;
	}
	shortest_decimal(x, in->type == CELL_F32, &d);
	decimal_text(&d, text, sizeof(text));
	if (to == CELL_F32) {
		out->v.f32 = c_strtof(text, NULL);
		if (isinf(out->v.f32))
			return -EINVAL;
	} else {
		out->v.f64 = c_strtod(text, NULL);
	}
	return 0;
}

int cell_convert(const struct cell_value *in, enum cell_type to, struct cell_value *out,
		 struct buf *scratch)
{
	API_ENTRY();
	struct cell_value v;
	int r;

	if (!type_valid(in->type) || !type_valid(to))
		return -EINVAL;
	if (in->type == to) {
		*out = *in;
		return 0;
	}
	if (is_text(to)) {
		v.type = to;
		if (is_text(in->type)) {
			v.v.data = in->v.data;
		} else {
			buf_clear(scratch);
			if ((r = render_bare(scratch, in)) < 0)
				return r;
			v.v.data = buf_slice(scratch);
		}
		if (to == CELL_STRING && !cell_utf8_valid(v.v.data.data, v.v.data.len))
			return -EINVAL;
		*out = v;
		return 0;
	}
	if (is_text(in->type))
		return cell_parse(to, in->v.data, out);
	if (in->type == CELL_BOOLEAN && in->v.boolean != 0 && in->v.boolean != 1)
		return -EINVAL;

	if (is_float(in->type) && is_float(to))
		r = float_to_float(in, to, &v);
	else if (is_float(in->type))
		r = float_to_int(in->type == CELL_F32 ? in->v.f32 : in->v.f64, to, &v);
	else if (is_float(to)) {
		v.type = to;
		if (to == CELL_F32)
			v.v.f32 = (float)int_of(in);
		else
			v.v.f64 = (double)int_of(in);
		r = 0;
	} else {
		r = int_to(int_of(in), to, &v);
	}
	if (r == 0)
		*out = v;
	return r;
}

/* ---------------------------------------------------------------- read-modify-write */

int cell_increment(struct cell_value *v, int64_t delta)
{
	API_ENTRY();
	int32_t r32;
	int64_t r64;

	switch (v->type) {
	case CELL_I32:
		if (__builtin_add_overflow((int64_t)v->v.i32, delta, &r32))
			return -ERANGE;
		v->v.i32 = r32;
		return 0;
	case CELL_I64:
		if (__builtin_add_overflow(v->v.i64, delta, &r64))
			return -ERANGE;
		v->v.i64 = r64;
		return 0;
	default:
		return -EINVAL;
	}
}

int cell_append(const struct cell_value *in, struct slice tail, struct cell_value *out,
		struct buf *scratch)
{
	API_ENTRY();
	if (!is_text(in->type))
		return -EINVAL;
	if (in->type == CELL_STRING && !cell_utf8_valid(tail.data, tail.len))
		return -EINVAL;
	buf_clear(scratch);
	buf_reserve(scratch, in->v.data.len + tail.len);
	buf_append(scratch, in->v.data.data, in->v.data.len);
	buf_append(scratch, tail.data, tail.len);
	out->type = in->type;
	out->v.data = buf_slice(scratch);
	return 0;
}
