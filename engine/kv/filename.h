/*
 * filename.h -- the names of a database directory's files, built and parsed
 * in one place:
 *
 *     NNNNNN.log        a write-ahead log (the number from the version set)
 *     NNNNNN.sst        a table
 *     MANIFEST-NNNNNN   a manifest (the version set's log of edits)
 *     CURRENT           one line naming the live manifest
 *     CURRENT.tmp       CURRENT being replaced (written, fsynced, renamed)
 *     LOCK              held by the process that has the database open
 *
 * Numbers are printed with at least six digits and parsed with any number of
 * them; one counter hands out log, table and manifest numbers, so a number
 * names one file.  Anything else in the directory is not the engine's and is
 * never deleted by it.
 */
#ifndef SMOLFS_FILENAME_H
#define SMOLFS_FILENAME_H

#include <stdint.h>

enum fname_kind {
	FNAME_OTHER = 0,    /* not one of the engine's files */
	FNAME_LOG,
	FNAME_SST,
	FNAME_MANIFEST,
	FNAME_CURRENT,
	FNAME_CURRENT_TMP,
	FNAME_LOCK,
};

/*
 * "dir/NNNNNN.log" and the like, malloc'd (the caller frees).  dir NULL gives
 * the bare name, as CURRENT and messages spell it.
 */
char *fname_log(const char *dir, uint64_t number);
char *fname_sst(const char *dir, uint64_t number);
char *fname_manifest(const char *dir, uint64_t number);
char *fname_current(const char *dir);
char *fname_current_tmp(const char *dir);
char *fname_lock(const char *dir);

/*
 * What a bare file name (no directory) is; *number gets the number of a log,
 * table or manifest (0 for the others).  Digits only, at least one, no sign,
 * no overflow: "12.log" is a log, "x12.log", "12.log~" and "MANIFEST-" are
 * FNAME_OTHER.
 */
enum fname_kind fname_parse(const char *name, uint64_t *number);

#endif
