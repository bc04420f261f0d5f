/*
 * wal.c -- fuzz target for reading the write-ahead log (engine/kv/wal.c).
 *
 * The input describes records and damage: an options byte (bit 7: the
 * rest of the input is the log itself; bit 0: read with
 * wal_reader_stop_at_damage, bit 1 its garbage_ends), a record count and
 * the records (length byte, bytes; a record of 250 bytes followed by an
 * odd byte becomes one of some kilobytes), then edits of 3 bytes (offset,
 * offset, xor), the last of which may instead cut the file or extend it
 * with zeros.  The records are written with the real writer into memory
 * and read back through an environment whose file reads that memory.
 * Invariants:
 *   - undamaged, every record comes back, in order, and then the end;
 *   - damaged, the reader ends (0) or reports -EUCLEAN; every record that
 *     lies wholly before the first damaged byte comes back, and every
 *     record that comes back is the one written at its place, unchanged
 *     (damage to a record or its length is caught by its checksums; edits
 *     that forge both checksums would be a false finding, and are not
 *     within the fuzzer's reach: it sets xor masks, not checksums); a torn
 *     tail begins inside the file;
 *   - after the end or an error, every later read says the same.
 */
#include "fuzz.h"
#include "wal.h"

#include <errno.h>
#include <string.h>

static int read_log(const struct buf *file, unsigned opt, const struct slice *recs,
		    const uint64_t *ends, size_t n, uint64_t first_damage)
{
	struct env_file *f = fuzz_file_new((const uint8_t *)file->data, file->len);
	struct wal_reader *rd = wal_reader_new(f, file->len, "fuzz.log");
	struct slice rec;
	size_t i = 0;
	int r;

	if (opt & 1)
		wal_reader_stop_at_damage(rd, (opt & 2) != 0);
	while ((r = wal_read(rd, &rec)) == 1) {
		FUZZ_CHECK(rec.len <= file->len, "a record longer than the log");
		/* checksums catch damage: every record read is the one written there */
		if (recs) {
			FUZZ_CHECK(i < n, "%zu records written, more read", n);
			FUZZ_CHECK(slice_eq(rec, recs[i]), "record %zu comes back changed", i);
		}
		i++;
	}
	FUZZ_CHECK(r == 0 || r == -EUCLEAN, "wal_read returned %d", r);
	FUZZ_CHECK(wal_read(rd, &rec) == r, "a second read after the end disagrees");
	for (size_t j = 0; j < n; j++)
		if (ends[j] <= first_damage)
			FUZZ_CHECK(j < i, "record %zu, before any damage, is not read (%d)", j, r);
	if (r == 0) {
		uint64_t torn;

		if (wal_reader_torn(rd, &torn)) {
			FUZZ_CHECK(torn <= file->len, "torn tail at %llu of %zu",
				   (unsigned long long)torn, file->len);
			wal_reader_torn_zeros(rd);
		}
		FUZZ_CHECK(wal_reader_offset(rd) <= file->len, "offset past the end");
	}
	wal_reader_free(rd);
	env_close(f);
	return (int)i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned opt = fuzz_byte(&in), nrec;
	struct buf file = { 0 }, big = { 0 };
	struct slice *recs;
	uint64_t *ends, first_damage;
	struct wal_writer *w;
	struct env_file *f;
	size_t n = 0;

	if (size > 1 << 16)
		return 0;
	if (opt & 128) {
		file.data = (char *)in.p;
		file.len = in.n;
		read_log(&file, opt, NULL, NULL, 0, 0);
		return 0;
	}
	nrec = fuzz_byte(&in);
	recs = xcalloc(nrec + 1, sizeof(*recs));
	ends = xcalloc(nrec + 1, sizeof(*ends));
	buf_reserve(&big, 8192);
	memset(big.data, 'v', 8192);
	f = fuzz_file_append(&file);
	w = wal_writer_new(f);
	for (unsigned i = 0; i < nrec; i++) {
		size_t len;
		const uint8_t *p = fuzz_bytes(&in, 250, &len);

		recs[n] = slice_make(p, len);
		if (len == 250 && (fuzz_byte(&in) & 1))
			recs[n] = slice_make(big.data, 4096 + len);
		FUZZ_CHECK(wal_add(w, recs[n]) == 0, "wal_add");
		ends[n] = wal_size(w);
		n++;
	}
	FUZZ_CHECK(wal_writer_free(w) == 0, "closing the log");

	FUZZ_CHECK(read_log(&file, opt, recs, ends, n, UINT64_MAX) == (int)n,
		   "an undamaged log does not read back whole");

	first_damage = UINT64_MAX;
	while (in.n >= 3 && file.len > 0) {
		unsigned off = fuzz_byte(&in);
		uint8_t x;

		off = (off << 8 | fuzz_byte(&in)) % file.len;
		x = (uint8_t)fuzz_byte(&in);
		if (in.n == 0 && (x & 0xc0) == 0xc0) {          /* cut the file at off */
			file.len = off;
		} else if (in.n == 0 && (x & 0xc0) == 0x80) {   /* zeros after the end */
			buf_reserve(&file, x);
			memset(file.data + file.len, 0, x);
			off = (unsigned)file.len;
			file.len += x;
		} else if (x) {
			file.data[off] ^= (char)x;
		} else {
			continue;
		}
		if (off < first_damage)
			first_damage = off;
	}
	if (first_damage != UINT64_MAX)
		read_log(&file, opt, recs, ends, n, first_damage);
	buf_free(&big);
	buf_free(&file);
	free(recs);
	free(ends);
	return 0;
}
