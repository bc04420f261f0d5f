/*
 * wal.c -- the write-ahead log: appending checksummed records, and reading
 * them back at recovery, telling a torn tail from corruption (the format
 * and the rules are in wal.h).
 *
 * The writer keeps nothing between calls: each wal_add or wal_addv builds its
 * records in a scratch buffer and hands them to the file in one append, so a
 * crash can only cut the log inside the last append, and a group commit is one
 * write.  The reader never needs the whole file in memory: it reads ahead in
 * windows of WAL_READ_CHUNK bytes, serves small records from the window, and
 * reads a record larger than that straight into a scratch buffer of its size.
 */
#include "wal.h"
#include "crc32c.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>

/* Read-ahead for the reader, and the size above which scratch buffers are not kept. */
#define WAL_READ_CHUNK (256u * 1024)

static uint32_t record_crc(const char *len_bytes, struct slice payload)
{
	uint32_t crc = crc32c(len_bytes, 4);

	return crc32c_mask(crc32c_extend(crc, payload.data, payload.len));
}

/* ---------------------------------------------------------------- writer */

struct wal_writer {
	struct env_file *f;   /* owned */
	uint64_t size;        /* bytes appended successfully */
	int err;              /* first append or sync error; sticky (see wal.h) */
	struct buf scratch;   /* the records of one call */
};

struct wal_writer *wal_writer_new(struct env_file *f)
{
	struct wal_writer *w = xcalloc(1, sizeof(*w));

	w->f = f;
	return w;
}

/* The header's own checksum, over the record checksum and the length. */
static uint32_t header_crc(const char *h)
{
	return crc32c_mask(crc32c(h, 8));
}

static void encode_record(struct buf *b, struct slice rec)
{
	char *h;

	buf_reserve(b, WAL_HEADER + rec.len);
	h = b->data + b->len;
	enc_fixed32(h + 4, (uint32_t)rec.len);
	enc_fixed32(h, record_crc(h + 4, rec));
	enc_fixed32(h + 8, header_crc(h));
	b->len += WAL_HEADER;
	buf_append(b, rec.data, rec.len);
}

static int check_size(struct slice rec)
{
	if (rec.len > WAL_MAX_RECORD)
		return ERR_SET(-E2BIG, "log record of %zu bytes exceeds the limit of %u bytes",
				rec.len, WAL_MAX_RECORD);
	return 0;
}

int wal_addv(struct wal_writer *w, const struct slice *recs, size_t n)
{
	size_t total = 0, i;
	int r;

	if (w->err)
		return w->err;
	for (i = 0; i < n; i++) {
		r = check_size(recs[i]);
		if (r)
			return r;
		total += WAL_HEADER + recs[i].len;
	}
	if (n == 0)
		return 0;

	buf_clear(&w->scratch);
	buf_reserve(&w->scratch, total);
	for (i = 0; i < n; i++)
		encode_record(&w->scratch, recs[i]);
	assert(w->scratch.len == total);

	r = env_append(w->f, w->scratch.data, w->scratch.len);
	if (r)
		w->err = r;
	else
		w->size += total;
	/* A big value's copy should not stay allocated for the life of the log. */
	if (w->scratch.cap > WAL_READ_CHUNK)
		buf_free(&w->scratch);
	else
		buf_clear(&w->scratch);
	return r;
}

int wal_add(struct wal_writer *w, struct slice rec)
{
	return wal_addv(w, &rec, 1);
}

int wal_sync(struct wal_writer *w)
{
	int r;

	if (w->err)
		return w->err;
	r = env_sync(w->f);
	if (r)
		w->err = r;
	return r;
}

uint64_t wal_size(const struct wal_writer *w)
{
	return w->size;
}

int wal_writer_free(struct wal_writer *w)
{
	int r;

	if (!w)
		return 0;
	r = env_close(w->f);
	buf_free(&w->scratch);
	free(w);
	return r;
}

/* ---------------------------------------------------------------- reader */

struct wal_reader {
	struct env_file *f;     /* not owned */
	uint64_t size;          /* of the log, as the caller said */
	char *name;             /* owned; for messages */
	uint64_t off;           /* start of the next record = just past the last good one */
	int state;              /* 0 reading, 1 ended, < 0 the error it stopped with */
	int torn;
	uint64_t torn_off;
	int stop_at_damage;     /* wal_reader_stop_at_damage was called */
	int garbage_ends;       /* and may end the log at garbage after its last record */
	const char *damage;     /* what ended the log there (static string), or NULL */
	struct buf win;         /* read-ahead: file bytes [win_off, win_off + win.len) */
	uint64_t win_off;
	struct buf big;         /* payloads larger than a window */
};

struct wal_reader *wal_reader_new(struct env_file *f, uint64_t file_size, const char *name)
{
	struct wal_reader *r = xcalloc(1, sizeof(*r));

	r->f = f;
	r->size = file_size;
	r->name = xstrdup(name);
	return r;
}

void wal_reader_free(struct wal_reader *r)
{
	if (!r)
		return;
	buf_free(&r->win);
	buf_free(&r->big);
	free(r->name);
	free(r);
}

int wal_reader_torn(const struct wal_reader *r, uint64_t *offset)
{
	if (r->torn && offset)
		*offset = r->torn_off;
	return r->torn;
}

static int zeros_to_end(struct wal_reader *r, uint64_t off);

int wal_reader_torn_zeros(struct wal_reader *r)
{
	return r->torn && r->torn_off < r->size && zeros_to_end(r, r->torn_off) == 1;
}

void wal_reader_stop_at_damage(struct wal_reader *r, int garbage_ends)
{
	r->stop_at_damage = 1;
	r->garbage_ends = garbage_ends;
}

const char *wal_reader_damage(const struct wal_reader *r)
{
	return r->damage;
}

int wal_reader_blank(struct wal_reader *r)
{
	return zeros_to_end(r, 0);
}

uint64_t wal_reader_offset(const struct wal_reader *r)
{
	return r->off;
}

/* Read exactly n bytes at off into p; the caller knows they lie within size. */
static int read_at(struct wal_reader *r, char *p, size_t n, uint64_t off)
{
	size_t got = 0;
	int err = env_pread(r->f, p, n, off, &got);

	if (err)
		return err;
	if (got != n)
		return ERR_SET(-EIO, "%s: log shorter than its %" PRIu64 " bytes: read %zu of "
				"%zu bytes at offset %" PRIu64, r->name, r->size, got, n, off);
	return 0;
}

/*
 * Make the n bytes at off available and point *p at them (valid until the
 * next fetch).  REQUIRES off + n <= size.
 */
static int fetch(struct wal_reader *r, uint64_t off, size_t n, const char **p)
{
	int err;

	assert(off + n <= r->size);
	if (off >= r->win_off && off + n <= r->win_off + r->win.len) {
		*p = r->win.data + (off - r->win_off);
		return 0;
	}
	if (n > WAL_READ_CHUNK) {
		buf_clear(&r->big);
		buf_reserve(&r->big, n);
		err = read_at(r, r->big.data, n, off);
		if (err)
			return err;
		r->big.len = n;
		*p = r->big.data;
		return 0;
	}
	size_t want = WAL_READ_CHUNK;
	if (want > r->size - off)
		want = (size_t)(r->size - off);
	r->win.len = 0;
	buf_reserve(&r->win, WAL_READ_CHUNK);
	r->win_off = off;
	err = read_at(r, r->win.data, want, off);
	if (err)
		return err;
	r->win.len = want;
	*p = r->win.data;
	return 0;
}

/* 1 if every byte of [off, size) is zero (or there is none), 0 if not, or an error. */
static int zeros_to_end(struct wal_reader *r, uint64_t off)
{
	while (off < r->size) {
		size_t n = WAL_READ_CHUNK;
		const char *p;
		int err;

		if (n > r->size - off)
			n = (size_t)(r->size - off);
		err = fetch(r, off, n, &p);
		if (err)
			return err;
		for (size_t i = 0; i < n; i++)
			if (p[i])
				return 0;
		off += n;
	}
	return 1;
}

static int end_torn(struct wal_reader *r)
{
	r->torn = 1;
	r->torn_off = r->off;
	r->state = 1;
	return 0;
}

/* 1 if the record at off is whole and intact, 0 if not, or a read error. */
static int intact_at(struct wal_reader *r, uint64_t off)
{
	const char *h, *p;
	char len_bytes[4];
	uint32_t crc, len;
	int err;

	if (r->size - off < WAL_HEADER)
		return 0;
	if ((err = fetch(r, off, WAL_HEADER, &h)) < 0)
		return err;
	if (header_crc(h) != dec_fixed32(h + 8))
		return 0;
	crc = dec_fixed32(h);
	len = dec_fixed32(h + 4);
	if (len > WAL_MAX_RECORD || r->size - off - WAL_HEADER < len)
		return 0;
	memcpy(len_bytes, h + 4, 4);
	if ((err = fetch(r, off + WAL_HEADER, len, &p)) < 0)
		return err;
	return record_crc(len_bytes, slice_make(p, len)) == crc;
}

/* The shortest run of zeros ending at a sector boundary taken for unwritten space. */
#define ZERO_RUN_MIN 16

/*
 * Whether the damaged record at r->off looks like what a power cut leaves
 * in unsynced bytes: 1 if a run of at least ZERO_RUN_MIN zeros ending at a
 * 512-byte boundary of the file lies between it and the next intact record
 * or the end (a page the disk never wrote, which is what let a later page
 * be there without it, or the part of one past the last sync), or (with
 * garbage_ends) if no intact record follows it and it is not the log's
 * first (a torn or garbled end after the last record); 0 if not (a flipped or overwritten
 * byte with intact records after it, or a log that is garbage from its
 * start: damage), *next then the offset of the next intact record or the
 * file's size; or a read error.  Scans the rest of the file.
 */
static int power_cut_damage(struct wal_reader *r, uint64_t *next)
{
	const uint64_t sector = 512;
	uint64_t off;
	int ok;

	for (off = r->off + 1; off + WAL_HEADER <= r->size; off++) {
		ok = intact_at(r, off);
		if (ok < 0)
			return ok;
		if (ok)
			break;
	}
	if (off + WAL_HEADER > r->size)
		off = r->size;
	*next = off;
	/* a run of zeros up to a sector boundary: an unwritten page, or its part past the last sync */
	uint64_t run = 0;
	for (uint64_t s = r->off, end; s < off; s = end) {
		end = (s / sector + 1) * sector;   /* sector by sector, every byte */
		const char *p;
		int err;

		if (end > off)
			end = off;
		if ((err = fetch(r, s, (size_t)(end - s), &p)) < 0)
			return err;
		for (size_t i = 0; i < end - s; i++)
			run = p[i] ? 0 : run + 1;
		/*
		 * A long enough run, or zeros from the damaged record's first
		 * byte to the boundary: the last sync fell a few bytes before a
		 * page's end, that unsynced end of the page was lost (zeros) and
		 * the next page reached the disk.
		 */
		if (end % sector == 0 && (run >= ZERO_RUN_MIN || run == end - r->off))
			return 1;
	}
	return r->garbage_ends && off == r->size && r->off > 0;
}

/*
 * A record at r->off is damaged (what says how); its data would end at
 * data_end.  Torn tail if only zeros follow, or if the log's unsynced tail
 * may hold damage (wal_reader_stop_at_damage); corruption otherwise.
 */
static int damaged(struct wal_reader *r, uint64_t data_end, const char *what, uint32_t len)
{
	int z = zeros_to_end(r, data_end);

	if (z < 0)
		return r->state = z;
	if (z)
		return end_torn(r);
	if (r->stop_at_damage) {
		uint64_t next;
		int pc = power_cut_damage(r, &next);

		if (pc < 0)
			return r->state = pc;
		if (pc) {
			r->damage = what;
			return end_torn(r);
		}
		if (next == r->size)
			r->state = ERR_CORRUPT("%s: log record at offset %" PRIu64 " (length %"
					      PRIu32 "): %s, and no intact record follows it",
					      r->name, r->off, len, what);
		else
			r->state = ERR_CORRUPT("%s: log record at offset %" PRIu64 " (length %"
					      PRIu32 "): %s, and an intact record follows at "
					      "offset %" PRIu64 " with no unwritten sector between",
					      r->name, r->off, len, what, next);
		return r->state;
	}
	r->state = ERR_CORRUPT("%s: log record at offset %" PRIu64 " (length %" PRIu32 "): %s, "
			      "and more data follows it", r->name, r->off, len, what);
	return r->state;
}

int wal_read(struct wal_reader *r, struct slice *rec)
{
	const char *h, *p;
	uint32_t crc, len;
	int err;

	if (r->state)
		return r->state < 0 ? r->state : 0;
	/* The last record may have been a big one; its slice is no longer promised. */
	if (r->big.cap)
		buf_free(&r->big);
	if (r->off == r->size) {
		r->state = 1;
		return 0;
	}
	if (r->size - r->off < WAL_HEADER)
		return end_torn(r);

	err = fetch(r, r->off, WAL_HEADER, &h);
	if (err)
		return r->state = err;
	crc = dec_fixed32(h);
	len = dec_fixed32(h + 4);
	/* a damaged length must not pass for a write cut short: check it first */
	if (header_crc(h) != dec_fixed32(h + 8))
		return damaged(r, r->off + WAL_HEADER, "header checksum mismatch", len);
	if (len > WAL_MAX_RECORD)
		return damaged(r, r->off + WAL_HEADER, "impossible length", len);
	if (r->size - r->off - WAL_HEADER < len)
		return end_torn(r);

	char len_bytes[4];
	memcpy(len_bytes, h + 4, 4);   /* h may be overwritten by the next fetch */
	err = fetch(r, r->off + WAL_HEADER, len, &p);
	if (err)
		return r->state = err;
	if (record_crc(len_bytes, slice_make(p, len)) != crc)
		return damaged(r, r->off + WAL_HEADER + len, "checksum mismatch", len);

	r->off += WAL_HEADER + len;
	*rec = slice_make(p, len);
	return 1;
}
