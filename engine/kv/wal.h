/*
 * wal.h -- the write-ahead log: a file of checksummed records.
 *
 * Each record is
 *
 *     fixed32 masked crc32c(length bytes + payload) | fixed32 length |
 *     fixed32 masked crc32c(the first 8 header bytes) | payload
 *
 * The record checksum covers the length too, and the header has a checksum
 * of its own, so a damaged length is caught before it is believed (a length
 * pointing past the end of the file would otherwise pass for a write cut
 * short, and silently end the log early).  Records are appended whole, each
 * wal_add or wal_addv with one append call; a record is durable once the
 * file is synced.  A record holds at most WAL_MAX_RECORD bytes (a batch with
 * a 100 MiB value and room to spare).
 *
 * Reading stops at the end of the log.  A crash during an append leaves the
 * torn tail of an unfinished write: a prefix of the appended bytes, perhaps
 * followed by zeros where the file system extended the file but never wrote
 * its blocks.  The torn tail ends the log without error, and
 * wal_reader_torn() tells where it began.  The record at offset off is the
 * torn tail when
 *   - its header runs past the end of the file, or its header is intact and
 *     the payload it announces runs past the end of the file, or
 *   - its header checksum fails and every byte after the header is zero, or
 *   - its record checksum fails and every byte after it, to the end of the
 *     file, is zero (there may be none: it ends exactly at the end).
 * Any other damage (a bad header checksum, an impossible length or a bad
 * record checksum followed by any non-zero byte) is corruption: wal_read
 * returns -EUCLEAN with the file name and the record's offset.
 */
#ifndef SMOLFS_WAL_H
#define SMOLFS_WAL_H

#include "env.h"
#include "util.h"

#define WAL_HEADER 12
#define WAL_MAX_RECORD (200u * 1024 * 1024)

struct wal_writer;
struct wal_reader;

/* Takes ownership of f (closed by wal_writer_free). */
struct wal_writer *wal_writer_new(struct env_file *f);
/*
 * Append one record (not synced).  -E2BIG if it exceeds WAL_MAX_RECORD.
 * After an append or sync fails, every later wal_add, wal_addv and wal_sync
 * returns that error: the file may end in part of a record, and a record
 * written after it would turn a torn tail into corruption.
 */
int wal_add(struct wal_writer *w, struct slice rec);
/* Append several records with one append call (group commit); n = 0 writes nothing. */
int wal_addv(struct wal_writer *w, const struct slice *recs, size_t n);
int wal_sync(struct wal_writer *w);
uint64_t wal_size(const struct wal_writer *w);
/* Closes the file; returns the close error, if any. */
int wal_writer_free(struct wal_writer *w);

/* Read a log of file_size bytes from f (not owned); name is used in messages. */
struct wal_reader *wal_reader_new(struct env_file *f, uint64_t file_size, const char *name);
/*
 * Next record: returns 1 and sets *rec (valid until the next call; may point
 * into scratch), 0 at the end of the log (including a torn tail), -EUCLEAN,
 * or the error of a failed read.  After 0 or an error, every later call
 * returns the same.
 */
int wal_read(struct wal_reader *r, struct slice *rec);
/* After wal_read returned 0: 1 if the log ended in a torn tail, and where. */
int wal_reader_torn(const struct wal_reader *r, uint64_t *offset);
/*
 * After wal_read returned 0 with a torn tail: 1 if that tail is nothing but
 * zeros (space reserved for the log and never written, see env.h's
 * open_log), 0 if it holds part of a record.
 */
int wal_reader_torn_zeros(struct wal_reader *r);
/*
 * Read a log whose tail may hold unsynced bytes damaged by a power cut
 * (pages of zeros between records that reached the disk, garbage at the
 * end): a damaged record ends the log, as a torn tail does, if a run of at
 * least 16 zeros ending at a 512-byte boundary of the file lies between it
 * and the next intact record (or the end), or (garbage_ends) if it is not
 * the first record and no intact record follows it.  Damage with an intact record right after it (a flipped byte), or a
 * log that is garbage from its first byte, is still corruption.  Call
 * before the first wal_read.
 */
void wal_reader_stop_at_damage(struct wal_reader *r, int garbage_ends);
/*
 * After wal_read returned 0: how the record that ended the log under
 * wal_reader_stop_at_damage was damaged ("checksum mismatch", ...), or NULL
 * if the log ended in a plain torn tail or at its end.
 */
const char *wal_reader_damage(const struct wal_reader *r);
/* 1 if the log holds nothing but zeros (or nothing), 0 if not, or a read error. */
int wal_reader_blank(struct wal_reader *r);
/* Offset just past the last good record (where a torn or damaged one begins). */
uint64_t wal_reader_offset(const struct wal_reader *r);
/* Frees the reader; does not close f. */
void wal_reader_free(struct wal_reader *r);

#endif
