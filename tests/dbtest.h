/*
 * dbtest.h -- white-box helpers for the C tests that include the engine's
 * private headers (engine/kv/db.h): waits on the background threads' state,
 * read under db->mu.  A test that uses only the public API has no business
 * here; it finds its helpers in testutil.h.  Header-only, like tap.h.
 *
 * Deletions of obsolete files and the closing of retired logs run with
 * db->mu released, so a flush or compaction being done is not the end of its
 * work: "idle" below waits for them too.
 */
#ifndef SMOLFS_DBTEST_H
#define SMOLFS_DBTEST_H

#include "db.h"
#include "tap.h"

#include <pthread.h>
#include <unistd.h>

/*
 * No memtable being flushed, no retired log being or due to be closed, no
 * deletion pass.  REQUIRES db->mu held.
 */
__attribute__((unused))
static int db_settled_but_compaction(struct kv_db *db)
{
	int busy = db->deleting || db->delete_wanted || db->log_busy || db_log_work(db);

	for (size_t t = 0; t < db->ntrees; t++)
		busy |= db->trees[t]->imm != NULL;
	return !busy;
}

/* Nothing running or due in any tree, compactions included.  REQUIRES db->mu held. */
__attribute__((unused))
static int db_idle(struct kv_db *db)
{
	return db_settled_but_compaction(db) && !db->compacting && !db->manual &&
	       !db_needs_compaction(db);
}

/*
 * Wait (up to 20 s, however loaded the machine) until done(db) holds;
 * 1 if it does, 0 after that bound or at once after a background error (the
 * work would never be done), with a diagnostic.
 */
__attribute__((unused))
static int db_wait(struct kv_db *db, int (*done)(struct kv_db *))
{
	for (int i = 0; i < 10000; i++) {
		int ok, err;

		pthread_mutex_lock(&db->mu);
		ok = done(db);
		err = db->bg_error;
		pthread_mutex_unlock(&db->mu);
		if (err) {
			diag("background error %d: %s", err, kv_strerror(err));
			return 0;
		}
		if (ok)
			return 1;
		usleep(2000);
	}
	diag("background work did not settle");
	return 0;
}

/* Wait until no flush, compaction or deletion runs or is due (db_wait). */
__attribute__((unused))
static int wait_idle(struct kv_db *db)
{
	return db_wait(db, db_idle);
}

#endif
