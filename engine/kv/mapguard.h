/*
 * mapguard.h -- memory-map accesses that fail with an error instead of a
 * signal.
 *
 * A load from (or store into) a page of a file's shared map raises SIGBUS
 * when the page lies past the file's end (someone truncated the file), or
 * when the kernel cannot read the page (a bad sector), or cannot allocate a
 * block for it.  Uncaught, that kills the whole process, for every user of
 * a daemon.  A guard arms a per-thread jump target over a range of
 * addresses around a bounded piece of code that touches the map; the
 * engine's SIGBUS handler, on a fault inside the armed range of the
 * faulting thread, jumps back to the guard, which then reports the fault
 * as an error.  A fault anywhere else goes to whatever handled SIGBUS
 * before (by default, the process dies as it would have).
 *
 * Usage (the jump returns into the frame that called sigsetjmp, which must
 * still be live, so the caller calls it):
 *
 *     struct mapguard g;
 *     mapguard_arm(&g, map, map_len);
 *     if (sigsetjmp(g.jb, 0)) {
 *             ... the access faulted: g.fault is the address; the guard is
 *             already disarmed; return an -EIO naming the file ...
 *     }
 *     ... loads or stores in [map, map + map_len) ...
 *     mapguard_leave(&g);
 *
 * REQUIRES: the guarded code holds no lock and owns no resource that a
 * jump out of it would leak (allocate before entering, or keep the pointer
 * in a variable the fault path frees, declared volatile); guards nest
 * (innermost first) and are left in reverse order of entry.  Costs one
 * sigsetjmp without a signal mask (no system call) and two thread-local
 * stores.  mapguard_install must have run (env.c runs it before the first
 * map is made).
 */
#ifndef SMOLFS_MAPGUARD_H
#define SMOLFS_MAPGUARD_H

#include <setjmp.h>
#include <stddef.h>

struct mapguard {
	sigjmp_buf jb;
	const char *lo, *hi;       /* the armed range */
	struct mapguard *prev;     /* the guard this one nests in */
	const void *volatile fault;  /* the faulting address, after a jump */
};

/* Install the SIGBUS handler once per process (later calls do nothing); 0 or -errno. */
int mapguard_install(void);
/* Arm g over [p, p + n) for this thread; sigsetjmp(g->jb, 0) must follow at once. */
void mapguard_arm(struct mapguard *g, const void *p, size_t n);
/* Disarm g (not needed after a fault: the jump disarmed it). */
void mapguard_leave(struct mapguard *g);

#endif
