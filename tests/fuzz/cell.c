/*
 * cell.c -- fuzz target for typed cell values (engine/table/cell.c).
 *   - The input as a stored value: cell_decode refuses it with -EUCLEAN or
 *     gives a value whose cell_encode is the input again, byte for byte;
 *     and for every type, parse(render(v)) == v (floats bit for bit, NaN
 *     as some NaN: its sign and payload are documented as not kept).
 *   - The input as text (the first byte picks the type): cell_parse
 *     refuses it with -EINVAL or gives a value that is valid (encodes),
 *     renders, and parses back to itself from its rendering.
 */
#include "fuzz.h"
#include "cell.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static int same_value(const struct cell_value *a, const struct cell_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case CELL_STRING:
	case CELL_BYTES:
		return a->v.data.len == b->v.data.len &&
		       (a->v.data.len == 0 || memcmp(a->v.data.data, b->v.data.data, a->v.data.len) == 0);
	case CELL_BOOLEAN:
		return a->v.boolean == b->v.boolean;
	case CELL_BYTE:
		return a->v.byte == b->v.byte;
	case CELL_I32:
		return a->v.i32 == b->v.i32;
	case CELL_I64:
		return a->v.i64 == b->v.i64;
	case CELL_F32:
		return (isnan(a->v.f32) && isnan(b->v.f32)) || memcmp(&a->v.f32, &b->v.f32, 4) == 0;
	case CELL_F64:
		return (isnan(a->v.f64) && isnan(b->v.f64)) || memcmp(&a->v.f64, &b->v.f64, 8) == 0;
	default:
		return 0;
	}
}

/* v renders, and its rendering parses back to v. */
static void render_round_trip(const struct cell_value *v)
{
	struct buf text = { 0 };
	struct cell_value back;
	int r = cell_render(&text, v);

	FUZZ_CHECK(r == 0, "render of a %s returned %d", cell_type_name(v->type), r);
	r = cell_parse(v->type, buf_slice(&text), &back);
	FUZZ_CHECK(r == 0, "the %s rendered as \"%.*s\" does not parse (%d)",
		   cell_type_name(v->type), (int)text.len, text.data, r);
	FUZZ_CHECK(same_value(v, &back), "the %s rendered as \"%.*s\" parses to another value",
		   cell_type_name(v->type), (int)text.len, text.data);
	buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slice in = slice_make((const char *)data, size);
	struct cell_value v;
	struct buf enc = { 0 };
	int r;

	/* as a stored value */
	r = cell_decode(in, &v);
	if (r == 0) {
		FUZZ_CHECK(v.type >= 1 && v.type <= CELL_TYPE_MAX, "decoded type %d", (int)v.type);
		r = cell_encode(&enc, &v);
		FUZZ_CHECK(r == 0, "a decoded %s does not encode (%d)", cell_type_name(v.type), r);
		FUZZ_CHECK(enc.len == size && memcmp(enc.data, data, size) == 0,
			   "encode(decode(x)) != x for a %s", cell_type_name(v.type));
		render_round_trip(&v);
	} else {
		FUZZ_CHECK(r == -EUCLEAN, "decode returned %d", r);
	}

	/* as text of the type the first byte picks */
	if (size > 0) {
		enum cell_type t = (enum cell_type)(data[0] % (CELL_TYPE_MAX + 1));

		r = cell_parse(t, slice_make((const char *)data + 1, size - 1), &v);
		if (t == CELL_INVALID) {
			FUZZ_CHECK(r < 0, "text parsed as the invalid type");
		} else if (r == 0) {
			FUZZ_CHECK(v.type == t, "parsed as type %d, not %d", (int)v.type, (int)t);
			buf_clear(&enc);
			FUZZ_CHECK(cell_encode(&enc, &v) == 0, "a parsed %s does not encode",
				   cell_type_name(t));
			render_round_trip(&v);
		} else {
			FUZZ_CHECK(r == -EINVAL, "parse returned %d", r);
		}
	}
	buf_free(&enc);
	return 0;
}
