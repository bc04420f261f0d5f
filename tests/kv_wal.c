/*
 * kv_wal.c -- tests of the write-ahead log (engine/wal.c): round trips of
 * records of every size, group commit as one append, the sticky write
 * error, and the rules of wal.h that tell a torn tail (cut at any byte, zero
 * filled, damaged last record) from corruption in the middle of the log, and
 * a tail of nothing but zeros (space reserved ahead for a log, env.h's
 * open_log) from part of a record.
 */
#include "wal.h"
#include "kv.h"
#include "tap.h"

#include <stdlib.h>
#include <unistd.h>

static char tmpdir[64];
static struct kv_env *env;

static char *path_of(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

/* Records of a test log; data points into a pattern generated from the seed. */
struct recs {
	size_t n;
	struct slice *r;
	char **mem;
};

static void recs_add(struct recs *rs, size_t len, uint64_t seed)
{
	char *p = xmalloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		p[i] = (char)(rand_next(&seed) >> 56);
	rs->r = xrealloc(rs->r, (rs->n + 1) * sizeof(*rs->r));
	rs->mem = xrealloc(rs->mem, (rs->n + 1) * sizeof(*rs->mem));
	rs->mem[rs->n] = p;
	rs->r[rs->n] = slice_make(p, len);
	rs->n++;
}

static void recs_free(struct recs *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->mem[i]);
	free(rs->r);
	free(rs->mem);
	memset(rs, 0, sizeof(*rs));
}

/* Offset of record i in a log of rs (the sum of the records before it). */
static uint64_t rec_off(const struct recs *rs, size_t i)
{
	uint64_t off = 0;

	for (size_t j = 0; j < i; j++)
		off += WAL_HEADER + rs->r[j].len;
	return off;
}

static int write_log(const char *path, const struct recs *rs)
{
	struct env_file *f;
	int r = env_open_append(env, path, &f);

	if (r)
		return r;
	struct wal_writer *w = wal_writer_new(f);
	for (size_t i = 0; i < rs->n && !r; i++)
		r = wal_add(w, rs->r[i]);
	if (!r)
		r = wal_sync(w);
	int c = wal_writer_free(w);
	return r ? r : c;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *fp = fopen(path, "wb");

	if (!fp || (n && fwrite(p, 1, n, fp) != n) || fclose(fp) != 0)
		abort();
}

static char *slurp(const char *path, size_t *n)
{
	char *data;

	if (env_read_file(env, path, &data, n))
		abort();
	return data;
}

/* The result of reading a whole log. */
struct readout {
	int status;        /* the final wal_read result: 0 or an error */
	size_t nread;      /* records returned */
	size_t nmatch;     /* of those, how many equal the expected record at their index */
	int torn;
	uint64_t torn_off;
	int torn_zeros;    /* wal_reader_torn_zeros at the end */
	uint64_t off;      /* wal_reader_offset at the end */
	int again;         /* what one more wal_read returned */
	char msg[256];
};

static struct readout read_log_size(const char *path, const struct recs *want, uint64_t size)
{
	struct readout o;
	struct env_file *f;
	struct slice rec;
	int r;

	memset(&o, 0, sizeof(o));
	if ((r = env_open_read(env, path, &f)) != 0) {
		o.status = r;
		return o;
	}
	struct wal_reader *rd = wal_reader_new(f, size, path);
	while ((r = wal_read(rd, &rec)) == 1) {
		if (want && o.nread < want->n && slice_eq(rec, want->r[o.nread]))
			o.nmatch++;
		o.nread++;
	}
	o.status = r;
	if (r < 0)
		snprintf(o.msg, sizeof(o.msg), "%s", kv_strerror(r));
	o.torn = wal_reader_torn(rd, &o.torn_off);
	o.torn_zeros = wal_reader_torn_zeros(rd);
	o.off = wal_reader_offset(rd);
	o.again = wal_read(rd, &rec);
	wal_reader_free(rd);
	env_close(f);
	return o;
}

static struct readout read_log(const char *path, const struct recs *want)
{
	uint64_t size = 0;

	if (env_file_size(env, path, &size))
		abort();
	return read_log_size(path, want, size);
}

/* ---------------------------------------------------------------- round trips */

static void test_round_trip(void)
{
	struct recs rs = { 0 };
	char *path = path_of("round.log");
	uint64_t rng = 1, size = 0;

	recs_add(&rs, 0, 1);
	for (int i = 0; i < 2000; i++)
		recs_add(&rs, rand_next(&rng) % 1500, rng);
	recs_add(&rs, 0, 2);
	recs_add(&rs, 5u << 20, 3);          /* larger than any read-ahead window */
	recs_add(&rs, 256 * 1024, 4);        /* exactly one window */
	recs_add(&rs, 256 * 1024 - WAL_HEADER, 5);    /* header and payload fill one window */
	for (int i = 0; i < 50; i++)
		recs_add(&rs, rand_next(&rng) % 100000, rng);
	recs_add(&rs, 0, 6);

	is_int(write_log(path, &rs), 0, "writing %zu records succeeds", rs.n);
	env_file_size(env, path, &size);
	is_int(size, rec_off(&rs, rs.n), "the log is the records plus a header each");
	struct readout o = read_log(path, &rs);
	is_int(o.status, 0, "reading the log ends without error");
	is_int(o.nread, rs.n, "every record is read back");
	is_int(o.nmatch, rs.n, "every record reads back byte for byte, empty and 5 MiB ones too");
	is_int(o.torn, 0, "a complete log has no torn tail");
	is_int(o.torn_zeros, 0, "so wal_reader_torn_zeros says 0");
	is_int(o.off, size, "the reader's offset ends at the end of the file");
	is_int(o.again, 0, "reading past the end keeps returning 0");

	o = read_log_size(path, &rs, rec_off(&rs, 3));
	ok(o.status == 0 && o.nread == 3 && o.nmatch == 3 && !o.torn,
	   "a reader given a shorter size reads only the records within it");

	recs_free(&rs);
	free(path);
}

static void test_empty_file(void)
{
	char *path = path_of("empty.log");

	write_bytes(path, "", 0);
	struct readout o = read_log(path, NULL);
	ok(o.status == 0 && o.nread == 0 && !o.torn && o.off == 0,
	   "an empty file is an empty log, not a torn one");
	free(path);
}

static void test_addv_and_errors(void)
{
	struct kv_env *fe = env_fault_new(env_posix());
	struct recs rs = { 0 };
	char *path = path_of("addv.log");
	struct env_file *f;
	int r;

	recs_add(&rs, 10, 1);
	recs_add(&rs, 0, 2);
	recs_add(&rs, 70000, 3);
	recs_add(&rs, 3, 4);
	recs_add(&rs, 1, 5);

	is_int(env_open_append(fe, path, &f), 0, "open a log through the fault env");
	struct wal_writer *w = wal_writer_new(f);
	long calls = env_fault_write_calls(fe);
	is_int(wal_addv(w, rs.r, 4), 0, "wal_addv of 4 records succeeds");
	is_int(env_fault_write_calls(fe) - calls, 1, "wal_addv of 4 records is one append");
	is_int(wal_size(w), rec_off(&rs, 4), "wal_size counts the 4 records and their headers");
	calls = env_fault_write_calls(fe);
	is_int(wal_addv(w, rs.r, 0), 0, "wal_addv of no records succeeds");
	is_int(env_fault_write_calls(fe) - calls, 0, "wal_addv of no records writes nothing");
	calls = env_fault_write_calls(fe);
	is_int(wal_add(w, rs.r[4]), 0, "wal_add of one record succeeds");
	is_int(env_fault_write_calls(fe) - calls, 1, "wal_add is one append");

	r = wal_add(w, slice_make(rs.r[0].data, (size_t)WAL_MAX_RECORD + 1));
	is_int(r, -E2BIG, "a record over WAL_MAX_RECORD is refused with -E2BIG");
	struct slice two[2] = { rs.r[0], slice_make(rs.r[0].data, (size_t)WAL_MAX_RECORD + 1) };
	calls = env_fault_write_calls(fe);
	is_int(wal_addv(w, two, 2), -E2BIG, "wal_addv with one record too big is refused");
	is_int(env_fault_write_calls(fe) - calls, 0, "a refused wal_addv writes nothing");
	is_int(wal_size(w), rec_off(&rs, 5), "refused records do not count in wal_size");

	/* After a failed append the file may end in a partial record: refuse more. */
	env_fault_inject(fe, ENV_OP_APPEND, 0, 1, -EIO, NULL);
	is_int(wal_add(w, rs.r[0]), -EIO, "a failed append is reported");
	env_fault_clear(fe);
	is_int(wal_add(w, rs.r[0]), -EIO,
	       "after a failed append, further appends fail the same way");
	is_int(wal_sync(w), -EIO, "after a failed append, sync fails the same way");
	is_int(wal_size(w), rec_off(&rs, 5), "a failed append does not count in wal_size");
	is_int(wal_writer_free(w), 0, "closing the writer succeeds");

	struct readout o = read_log(path, &rs);
	ok(o.status == 0 && o.nread == 5 && o.nmatch == 5 && !o.torn,
	   "the records of wal_addv and wal_add read back in order");

	is_int(env_open_append(fe, path, &f), 0, "reopen a log through the fault env");
	w = wal_writer_new(f);
	env_fault_inject(fe, ENV_OP_SYNC, 0, 1, -EIO, NULL);
	is_int(wal_sync(w), -EIO, "a failed sync is reported");
	env_fault_clear(fe);
	is_int(wal_add(w, rs.r[0]), -EIO, "after a failed sync, appends fail the same way");
	wal_writer_free(w);

	env_fault_free(fe);
	recs_free(&rs);
	free(path);
}

/* ---------------------------------------------------------------- torn tails */

static void test_truncation(void)
{
	struct recs rs = { 0 };
	char *full = path_of("trunc-full.log"), *cut = path_of("trunc-cut.log");
	size_t n;

	for (int i = 0; i < 6; i++)
		recs_add(&rs, 100 + (size_t)i * 37, (uint64_t)i + 10);
	recs_add(&rs, 700, 99);
	write_log(full, &rs);
	char *bytes = slurp(full, &n);
	uint64_t last = rec_off(&rs, rs.n - 1);

	/* Cutting the file anywhere inside the last record leaves a torn tail. */
	size_t bad = 0, bad_zeros = 0;
	for (size_t len = last + 1; len < n; len++) {
		write_bytes(cut, bytes, len);
		struct readout o = read_log(cut, &rs);
		if (o.status != 0 || o.nread != rs.n - 1 || o.nmatch != rs.n - 1 || !o.torn ||
		    o.torn_off != last || o.off != last || o.again != 0) {
			if (bad++ < 3)
				diag("cut at %zu: status %d, read %zu, torn %d at %llu", len,
				     o.status, o.nread, o.torn, (unsigned long long)o.torn_off);
		}
		bad_zeros += o.torn_zeros != 0;
	}
	is_int(bad, 0, "a cut at each of the %llu bytes inside the last record reads every "
	       "earlier record, no error, and reports the torn tail at its start",
	       (unsigned long long)(n - last - 1));
	is_int(bad_zeros, 0, "wal_reader_torn_zeros says 0 after each of those cuts: the tail is "
	       "part of a record, not reserved space");

	write_bytes(cut, bytes, last);
	struct readout o = read_log(cut, &rs);
	ok(o.status == 0 && o.nread == rs.n - 1 && !o.torn,
	   "a cut exactly between records is a clean end, not a torn tail");

	/* A big last record, cut in its header, early, mid-window and one byte short. */
	struct recs big = { 0 };
	recs_add(&big, 50, 1);
	recs_add(&big, 1u << 20, 2);
	write_log(full, &big);
	free(bytes);
	bytes = slurp(full, &n);
	const size_t first = WAL_HEADER + 50;  /* where the big record starts */
	const size_t cuts[] = { first + 1, first + 7, first + 11, first + 100, first + 300000, 0 };
	bad = 0;
	bad_zeros = 0;
	for (int i = 0; i < 6; i++) {
		size_t len = cuts[i] ? cuts[i] : n - 1;
		write_bytes(cut, bytes, len);
		o = read_log(cut, &big);
		bad += o.status != 0 || o.nread != 1 || o.nmatch != 1 || !o.torn ||
		       o.torn_off != first;
		bad_zeros += o.torn_zeros != 0;
	}
	is_int(bad, 0, "a 1 MiB last record cut in its header or payload is a torn tail");
	is_int(bad_zeros, 0, "and not a tail of zeros");

	free(bytes);
	recs_free(&rs);
	recs_free(&big);
	free(full);
	free(cut);
}

static void test_zero_tail(void)
{
	struct recs rs = { 0 };
	char *full = path_of("zero-full.log"), *z = path_of("zero.log");
	size_t n;

	for (int i = 0; i < 5; i++)
		recs_add(&rs, 200, (uint64_t)i + 1);
	write_log(full, &rs);
	char *bytes = slurp(full, &n);
	static const size_t tails[] = { 1, 7, 8, 9, 11, 12, 13, 4096, 300000, 600001 };
	const int ntails = (int)(sizeof(tails) / sizeof(tails[0]));
	size_t bad = 0, bad_zeros = 0;

	for (int i = 0; i < ntails; i++) {
		char *p = xcalloc(1, n + tails[i]);
		memcpy(p, bytes, n);
		write_bytes(z, p, n + tails[i]);
		free(p);
		struct readout o = read_log(z, &rs);
		bad += o.status != 0 || o.nread != 5 || o.nmatch != 5 || !o.torn || o.torn_off != n;
		if (o.torn_zeros != 1 && bad_zeros++ == 0)
			diag("%zu zeros: wal_reader_torn_zeros says %d", tails[i], o.torn_zeros);
	}
	is_int(bad, 0, "zero bytes after the last record (1 to 600001 of them) are a torn tail");
	is_int(bad_zeros, 0, "wal_reader_torn_zeros says 1 for each: the tail is only zeros "
	       "(space reserved for the log), however long");

	/* A log that is nothing but reserved space: no record was ever written. */
	{
		char *p = xcalloc(1, 70000);
		write_bytes(z, p, 70000);
		free(p);
		struct readout o = read_log(z, &rs);
		ok(o.status == 0 && o.nread == 0 && o.torn && o.torn_off == 0 && o.torn_zeros == 1,
		   "a log of 70000 zeros holds no record and ends in a tail of zeros at offset 0");
	}

	/*
	 * Zeros but for one byte.  Within the first header's worth it is a
	 * garbled or short header: a torn tail, but not of zeros alone.  Further
	 * on it follows a damaged record: corruption, which is no tail at all.
	 */
	{
		static const struct { size_t at, tail; int torn; } one[] = {
			{ 0, 11, 1 }, { 5, 11, 1 }, { 10, 11, 1 }, { 0, 300000, 1 },
			{ 11, 300000, 1 }, { 12, 300000, 0 }, { 299999, 300000, 0 },
		};
		size_t bad_one = 0;

		for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
			char *p = xcalloc(1, n + one[i].tail);
			memcpy(p, bytes, n);
			p[n + one[i].at] = 0x40;
			write_bytes(z, p, n + one[i].tail);
			free(p);
			struct readout o = read_log(z, &rs);
			if (o.nread != 5 || o.torn != one[i].torn || o.torn_zeros != 0 ||
			    o.status != (one[i].torn ? 0 : -EUCLEAN)) {
				if (bad_one++ == 0)
					diag("byte at %zu of %zu: status %d, torn %d, zeros %d",
					     one[i].at, one[i].tail, o.status, o.torn,
					     o.torn_zeros);
			}
		}
		is_int(bad_one, 0, "a tail of zeros but for one byte in its first 12 is torn but "
		       "not zeros alone; one byte further on is -EUCLEAN, and not zeros either");
	}

	/* A record whose payload is zero from some point on, and zeros after it. */
	char *p = xcalloc(1, n + 5000);
	uint64_t last = rec_off(&rs, 4);
	memcpy(p, bytes, last + WAL_HEADER + 50);
	write_bytes(z, p, n + 5000);
	struct readout o = read_log(z, &rs);
	ok(o.status == 0 && o.nread == 4 && o.nmatch == 4 && o.torn && o.torn_off == last,
	   "a last record zeroed part way, followed by zeros, is a torn tail");
	is_int(o.torn_zeros, 0, "and holds part of a record, so it is not a tail of zeros");

	/* Only the header of the last record was written; the rest is zeros. */
	memset(p, 0, n + 5000);
	memcpy(p, bytes, last + WAL_HEADER);
	write_bytes(z, p, n);
	o = read_log(z, &rs);
	ok(o.status == 0 && o.nread == 4 && o.torn && o.torn_off == last,
	   "a last record with only its header written is a torn tail");
	is_int(o.torn_zeros, 0, "of a record's header, not of zeros");
	free(p);
	free(bytes);
	recs_free(&rs);
	free(full);
	free(z);
}

/*
 * A power cut's zeroed page inside a record of a log's unsynced tail, read
 * as recovery reads the last log (wal_reader_stop_at_damage), ends the log
 * at that record wherever it begins within its 512-byte sector: the search
 * for the zeros must look at every byte between the record and the next
 * intact one (a search that stepped 512 bytes from the record's start saw
 * one byte of each sector when the record began at a sector's last byte,
 * and took the page for corruption: a database that did not open).
 */
static void test_zeroed_page_any_offset(void)
{
	char *path = path_of("zpage.log");
	size_t bad = 0;

	for (unsigned a = 0; a < 512; a++) {
		struct recs rs = { 0 };
		struct env_file *f;
		struct wal_reader *rd;
		struct slice rec;
		uint64_t torn_at = 0;
		size_t n, nread = 0;
		char *bytes;
		int r;

		recs_add(&rs, 4096 + a - WAL_HEADER, a + 1);   /* the next begins at 4096 + a */
		recs_add(&rs, 10000, a + 1000);                /* holds the page at 8192 */
		recs_add(&rs, 100, a + 2000);                  /* intact after the page */
		write_log(path, &rs);
		bytes = slurp(path, &n);
		memset(bytes + 8192, 0, 4096);
		write_bytes(path, bytes, n);
		free(bytes);
		if (env_open_read(env, path, &f) != 0)
			abort();
		rd = wal_reader_new(f, n, path);
		wal_reader_stop_at_damage(rd, 1);
		while ((r = wal_read(rd, &rec)) == 1)
			nread++;
		if (r != 0 || nread != 1 || !wal_reader_torn(rd, &torn_at) || torn_at != 4096 + a ||
		    !wal_reader_damage(rd)) {
			if (bad++ == 0)
				diag("damaged record at %u: read %zu records, status %s, torn at %llu",
				     4096 + a, nread, r ? kv_strerror(r) : "0",
				     (unsigned long long)torn_at);
		}
		wal_reader_free(rd);
		env_close(f);
		recs_free(&rs);
	}
	is_int(bad, 0, "a zeroed page in a record of the unsynced tail ends the log there, for "
	       "each of the 512 offsets in its sector that the record may begin at");
	free(path);
}

/*
 * A log written through env_open_log and read while still open, as recovery
 * reads the log of a killed process: its records, then space reserved ahead
 * (zeros) that the reader must take for a tail of zeros, not a torn write.
 */
static void test_open_log_tail(void)
{
	struct recs rs = { 0 };
	char *path = path_of("open.log");
	struct env_file *f;
	uint64_t rng = 5, size = 0;
	int r = 0;

	for (int i = 0; i < 300; i++)
		recs_add(&rs, rand_next(&rng) % 700, rng);
	recs_add(&rs, 300000, 7);            /* an append big enough to bypass the map */
	for (int i = 0; i < 30; i++)
		recs_add(&rs, rand_next(&rng) % 700, rng);

	is_int(env_open_log(env, path, &f), 0, "open a log with env_open_log");
	struct wal_writer *w = wal_writer_new(f);
	for (size_t i = 0; i < rs.n && r == 0; i++)
		r = wal_add(w, rs.r[i]);
	is_int(r, 0, "%zu records go into it", rs.n);
	is_int(wal_sync(w), 0, "sync it");
	env_file_size(env, path, &size);
	if (size > wal_size(w)) {
		struct readout o = read_log(path, &rs);
		ok(o.status == 0 && o.nread == rs.n && o.nmatch == rs.n,
		   "read while open (%llu bytes, %llu of them records), it gives every record",
		   (unsigned long long)size, (unsigned long long)wal_size(w));
		ok(o.torn && o.torn_off == wal_size(w),
		   "and a torn tail where the records end (at %llu)",
		   (unsigned long long)o.torn_off);
		is_int(o.torn_zeros, 1, "which wal_reader_torn_zeros says is only zeros");
	} else {
		skip(3, "no space reserved ahead of this log (no fallocate here?)");
	}
	is_int(wal_writer_free(w), 0, "close the log");
	env_file_size(env, path, &size);
	is_int(size, rec_off(&rs, rs.n), "after close the log is exactly its records");
	struct readout o = read_log(path, &rs);
	ok(o.status == 0 && o.nread == rs.n && o.nmatch == rs.n && !o.torn && !o.torn_zeros,
	   "read after close, it gives every record and no torn tail");
	recs_free(&rs);
	free(path);
}

/* ---------------------------------------------------------------- corruption */

static void test_flips(void)
{
	struct recs rs = { 0 };
	char *full = path_of("flip-full.log"), *fl = path_of("flip.log");
	size_t n;

	for (int i = 0; i < 8; i++)
		recs_add(&rs, 300, (uint64_t)i + 1);
	write_log(full, &rs);
	char *bytes = slurp(full, &n);
	uint64_t mid = rec_off(&rs, 3), last = rec_off(&rs, 7);
	char want_off[32];

	snprintf(want_off, sizeof(want_off), "offset %llu", (unsigned long long)mid);

	/*
	 * Any byte of a middle record: the checksums, the length (the header's
	 * own checksum catches a length that would point past the end), and
	 * every payload byte.
	 */
	size_t bad = 0, bad_msg = 0, positions = 0;
	for (size_t i = 0; i < WAL_HEADER + 300; i++) {
		bytes[mid + i] ^= 0x20;
		write_bytes(fl, bytes, n);
		bytes[mid + i] ^= 0x20;
		struct readout o = read_log(fl, &rs);
		positions++;
		if (o.status != -EUCLEAN || o.nread != 3 || o.nmatch != 3 || o.torn ||
		    o.off != mid || o.again != -EUCLEAN)
			bad++;
		else if (!strstr(o.msg, fl) || !strstr(o.msg, want_off))
			bad_msg++;
	}
	is_int(bad, 0, "a byte flipped at each of %zu places of a middle record is -EUCLEAN, "
	       "after the records before it", positions);
	is_int(bad_msg, 0, "each message names the file and the damaged record's offset");
	{
		bytes[mid + 100] ^= 1;
		write_bytes(fl, bytes, n);
		bytes[mid + 100] ^= 1;
		struct readout o = read_log(fl, &rs);
		diag("message: %s", o.msg);
	}

	/*
	 * Damage in the last record's payload: indistinguishable from an
	 * unfinished write.  Damage in its header: the header checksum fails while
	 * payload bytes follow, which no unfinished write leaves behind.
	 */
	bad = 0;
	for (size_t i = WAL_HEADER; i < WAL_HEADER + 300; i++) {
		bytes[last + i] ^= 0x01;
		write_bytes(fl, bytes, n);
		bytes[last + i] ^= 0x01;
		struct readout o = read_log(fl, &rs);
		bad += o.status != 0 || o.nread != 7 || o.nmatch != 7 || !o.torn ||
		       o.torn_off != last;
	}
	is_int(bad, 0, "a byte flipped in the last record's payload is a torn tail");
	bad = 0;
	for (size_t i = 0; i < WAL_HEADER; i++) {
		bytes[last + i] ^= 0x01;
		write_bytes(fl, bytes, n);
		bytes[last + i] ^= 0x01;
		struct readout o = read_log(fl, &rs);
		bad += o.status != -EUCLEAN || o.nread != 7;
	}
	is_int(bad, 0, "a byte flipped in the last record's header is -EUCLEAN");

	/* 300 = 0x12c: the length's bytes are 2c 01 00 00. */
	bytes[last + 4] ^= 0x01;
	write_bytes(fl, bytes, n);
	bytes[last + 4] ^= 0x01;
	struct readout o = read_log(fl, &rs);
	ok(o.status == -EUCLEAN && o.nread == 7 && !o.torn,
	   "a last record whose length grew past the end of the file is -EUCLEAN, not torn");
	bytes[last + 5] ^= 0x01;
	write_bytes(fl, bytes, n);
	bytes[last + 5] ^= 0x01;
	o = read_log(fl, &rs);
	ok(o.status == -EUCLEAN && o.nread == 7,
	   "a last record whose length shrank, leaving payload bytes after it, is -EUCLEAN");

	/* An impossible length: corruption in the middle, torn at the very end. */
	char save[4];
	memcpy(save, bytes + mid + 4, 4);
	enc_fixed32(bytes + mid + 4, WAL_MAX_RECORD + 1);
	write_bytes(fl, bytes, n);
	o = read_log(fl, &rs);
	ok(o.status == -EUCLEAN && o.nread == 3 && strstr(o.msg, want_off),
	   "an impossible length in a middle record is -EUCLEAN at its offset");
	memcpy(bytes + mid + 4, save, 4);

	char *p = xcalloc(1, n + 1000);
	memcpy(p, bytes, n);
	enc_fixed32(p + n, 0x12345678);
	enc_fixed32(p + n + 4, 0xffffffffu);
	write_bytes(fl, p, n + 1000);
	o = read_log(fl, &rs);
	ok(o.status == 0 && o.nread == 8 && o.torn && o.torn_off == n,
	   "a garbled last header followed only by zeros is a torn tail");
	is_int(o.torn_zeros, 0, "whose garbled header makes it more than zeros");
	p[n + 500] = 1;
	write_bytes(fl, p, n + 1000);
	o = read_log(fl, &rs);
	ok(o.status == -EUCLEAN && o.nread == 8,
	   "a garbled header followed by non-zero bytes is -EUCLEAN");

	/* A damaged last record, zeros, and then one more byte. */
	memcpy(p, bytes, n);
	memset(p + n, 0, 1000);
	p[last + 20] ^= 4;
	p[n + 999] = 'x';
	write_bytes(fl, p, n + 1000);
	o = read_log(fl, &rs);
	ok(o.status == -EUCLEAN && o.nread == 7,
	   "a damaged last record followed by zeros and then data is -EUCLEAN");
	free(p);

	free(bytes);
	recs_free(&rs);
	free(full);
	free(fl);
}

static void rm_rf_tmpdir(void)
{
	char **names;
	size_t n;

	if (env_list_dir(env, tmpdir, &names, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			char *p = path_of(names[i]);
			unlink(p);
			free(p);
		}
		env_free_list(names, n);
	}
	rmdir(tmpdir);
}

int main(void)
{
	plan(66);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kv_wal.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	env = env_posix();
	test_round_trip();
	test_empty_file();
	test_addv_and_errors();
	test_truncation();
	test_zero_tail();
	test_open_log_tail();
	test_zeroed_page_any_offset();
	test_flips();
	rm_rf_tmpdir();
	return exit_status();
}
