/*
 * mapguard.c -- turning a SIGBUS from a file's map into an error (mapguard.h).
 *
 * One process-wide SIGBUS handler, installed once, and a per-thread stack of
 * armed guards.  The handler runs on the faulting thread (SIGBUS from a
 * memory access is synchronous), so the thread's innermost guard says
 * whether the fault is one the engine expects: if the faulting address is
 * in its range, the handler pops it and siglongjmps to it.  The handler is
 * installed with SA_NODEFER, so SIGBUS is not left blocked after the jump
 * (the guard's sigsetjmp saves no signal mask, which would cost a system
 * call per guarded read).  Any other SIGBUS is passed to the handler that
 * was there before ours, or, if that was the default action, the default
 * action is put back and the faulting instruction runs again, so the
 * process dies of it exactly as it would have without the engine.
 */
#include "mapguard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

static __thread struct mapguard *guard_top;
static struct sigaction old_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_err;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct mapguard *g = guard_top;
	const char *a = si ? (const char *)si->si_addr : NULL;

	if (g && a >= g->lo && a < g->hi) {
		guard_top = g->prev;
		g->fault = a;
		siglongjmp(g->jb, 1);
	}
	if ((old_action.sa_flags & SA_SIGINFO) && old_action.sa_sigaction) {
		old_action.sa_sigaction(sig, si, uc);
		return;
	}
	if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
		old_action.sa_handler(sig);
		return;
	}
	/* not ours: let the access fault again under the old disposition */
	sigaction(SIGBUS, &old_action, NULL);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old_action) < 0)
		install_err = -errno;
}

int mapguard_install(void)
{
	pthread_once(&install_once, install);
	return install_err;
}

void mapguard_arm(struct mapguard *g, const void *p, size_t n)
{
	g->lo = p;
	g->hi = (const char *)p + n;
	g->fault = NULL;
	g->prev = guard_top;
	guard_top = g;
}

void mapguard_leave(struct mapguard *g)
{
	guard_top = g->prev;
}
