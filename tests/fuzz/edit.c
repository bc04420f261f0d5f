/*
 * edit.c -- fuzz target for decoding manifest records, the version edits
 * (engine/kv/version.c: edit_decode).  An input is refused with -EUCLEAN
 * (or -EPROTONOSUPPORT for another format version), or decodes to an edit
 * whose every field is in range (levels below NUM_LEVELS, file key ranges
 * of valid internal keys with smallest <= largest, compact pointers of
 * valid internal keys, tree names of 1..64
 * bytes without NUL) and whose encoding decodes again to the same edit,
 * field by field, and to the same encoding: decode(encode(decode(x))) ==
 * decode(x).
 */
#include "fuzz.h"
#include "version.h"

#include <errno.h>
#include <string.h>

static void check_fields(const struct version_edit *e)
{
	for (size_t i = 0; i < e->nadds; i++) {
		const struct file_meta *f = e->adds[i].f;

		FUZZ_CHECK(e->adds[i].level >= 0 && e->adds[i].level < NUM_LEVELS, "level %d",
			   e->adds[i].level);
		FUZZ_CHECK(ikey_valid(buf_slice(&f->smallest)) && ikey_valid(buf_slice(&f->largest)),
			   "file %zu: a key shorter than an internal key", i);
		FUZZ_CHECK(ikey_cmp(buf_slice(&f->smallest), buf_slice(&f->largest)) <= 0,
			   "file %zu: smallest > largest", i);
	}
	for (size_t i = 0; i < e->ndels; i++)
		FUZZ_CHECK(e->dels[i].level >= 0 && e->dels[i].level < NUM_LEVELS, "level %d",
			   e->dels[i].level);
	for (int i = 0; i < e->ncp; i++) {
		FUZZ_CHECK(e->cp_level[i] >= 0 && e->cp_level[i] < NUM_LEVELS, "level %d",
			   e->cp_level[i]);
		FUZZ_CHECK(ikey_valid(buf_slice(&e->cp_key[i])), "compact pointer %d: not a valid "
			   "internal key (%zu bytes)", i, e->cp_key[i].len);
	}
	for (size_t i = 0; i < e->nfailed; i++)
		FUZZ_CHECK(e->failed[i].number != 0, "failed log %zu: log number 0", i);
	if (e->tree_name) {
		size_t n = strlen(e->tree_name);
		FUZZ_CHECK(n >= 1 && n <= 64, "a tree name of %zu bytes", n);
	}
}

/* The same edit, field by field (an encoder that dropped a field would still be a fixed point). */
static int same_edit(const struct version_edit *a, const struct version_edit *b)
{
	if (a->tree != b->tree || !a->tree_name != !b->tree_name ||
	    (a->tree_name && strcmp(a->tree_name, b->tree_name) != 0) ||
	    a->drop_tree != b->drop_tree || a->has_format != b->has_format ||
	    a->has_log_number != b->has_log_number || a->has_next_file != b->has_next_file ||
	    a->has_last_seq != b->has_last_seq || a->has_next_tree != b->has_next_tree ||
	    (a->has_format && a->format != b->format) ||
	    (a->has_next_tree && a->next_tree != b->next_tree) ||
	    (a->has_log_number && a->log_number != b->log_number) ||
	    (a->has_next_file && a->next_file != b->next_file) ||
	    (a->has_last_seq && a->last_seq != b->last_seq) ||
	    a->nadds != b->nadds || a->ndels != b->ndels || a->ncp != b->ncp ||
	    a->nfailed != b->nfailed)
		return 0;
	for (size_t i = 0; i < a->nfailed; i++)
		if (a->failed[i].number != b->failed[i].number ||
		    a->failed[i].acked != b->failed[i].acked)
			return 0;
	for (size_t i = 0; i < a->nadds; i++) {
		const struct file_meta *x = a->adds[i].f, *y = b->adds[i].f;

		if (a->adds[i].level != b->adds[i].level || x->number != y->number ||
		    x->size != y->size || !slice_eq(buf_slice(&x->smallest), buf_slice(&y->smallest)) ||
		    !slice_eq(buf_slice(&x->largest), buf_slice(&y->largest)) ||
		    x->smallest_seq != y->smallest_seq || x->largest_seq != y->largest_seq ||
		    x->entries != y->entries || x->range_dels != y->range_dels)
			return 0;
	}
	for (size_t i = 0; i < a->ndels; i++)
		if (a->dels[i].level != b->dels[i].level || a->dels[i].number != b->dels[i].number)
			return 0;
	for (int i = 0; i < a->ncp; i++)
		if (a->cp_level[i] != b->cp_level[i] ||
		    !slice_eq(buf_slice(&a->cp_key[i]), buf_slice(&b->cp_key[i])))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct version_edit e, e2;
	struct buf enc = { 0 }, enc2 = { 0 };
	int r;

	if (size > 1 << 16)
		return 0;
	r = edit_decode(&e, slice_make(data, size), "fuzz");
	if (r < 0) {
		FUZZ_CHECK(r == -EUCLEAN || r == -EPROTONOSUPPORT, "edit_decode returned %d", r);
		return 0;
	}
	check_fields(&e);
	edit_encode(&e, &enc);
	r = edit_decode(&e2, buf_slice(&enc), "fuzz");
	FUZZ_CHECK(r == 0, "an encoded edit does not decode (%d)", r);
	check_fields(&e2);
	FUZZ_CHECK(same_edit(&e, &e2), "decode(encode(e)) is another edit");
	edit_encode(&e2, &enc2);
	FUZZ_CHECK(enc.len == enc2.len && (enc.len == 0 || memcmp(enc.data, enc2.data, enc.len) == 0),
		   "encode(decode(encode(e))) != encode(e)");
	edit_free(&e);
	edit_free(&e2);
	buf_free(&enc);
	buf_free(&enc2);
	return 0;
}
