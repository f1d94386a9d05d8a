/* SPDX-License-Identifier: MIT */
/*
 * Which of the application's signal handlers ran in this thread, counted
 * without a system call, so that an emulated wait needs none either.
 *
 * poll, select and epoll_wait over DDPMODE sockets are emulated: a kernel
 * sleep may end for the library's own reasons (a kick, half an FPDU) with
 * nothing to report, and the emulation sleeps again.  A handler that ran as
 * the first sleep ended would then find the application asleep, its flag
 * unseen, where the application's own call would have returned (nginx did
 * not end on a SIGTERM that came with its last connection's end).  Blocking
 * every signal around every emulated wait prevented that, at two system
 * calls a wait (pgbench's client and PostgreSQL's backends made them for
 * each query).  Now the application's handlers run behind a trampoline that
 * counts them per thread; a wait blocks signals only before a second sleep
 * (rare), and ends with EINTR when a handler ran since it began.
 *
 * Handlers installed past sigaction, signal and sysv_signal (a raw
 * rt_sigaction system call, the obsolete bsd_signal and sigset) or before
 * the library was loaded are not counted: for them a second sleep is
 * blocked as before, but a handler that ran as the first ended is not seen.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "libc/real.h"
#include "libesock/sock.h"
#include "util/tls.h"

static ESOCK_TLS unsigned sock_sig_runs; /* handlers run in this thread */
static ESOCK_TLS unsigned sock_sig_stops; /* of them, installed without SA_RESTART */

typedef void (*handler3)(int, siginfo_t *, void *);

/* The application's disposition of each signal whose handler is the trampoline. */
static struct sigaction app[NSIG];
static _Atomic(handler3) fns[NSIG]; /* its function, for the trampoline (never cleared) */
static atomic_int restarts[NSIG];   /* its SA_RESTART, for the trampoline */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * sigaction and signal are async-signal-safe: a handler may call them (a
 * crash handler resets itself, then raises).  So no signal comes to this
 * thread while it holds the lock (it would wait for itself).
 */
static void lock_table(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	pthread_mutex_lock(&lock);
}

static void unlock_table(const sigset_t *old)
{
	pthread_mutex_unlock(&lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/*
 * Every handler is called with three arguments: the kernel passes them to
 * a one-argument handler too (x86-64 and aarch64 alike), which ignores two.
 */
static void trampoline(int sig, siginfo_t *si, void *uc)
{
	handler3 fn = sig > 0 && sig < NSIG ? atomic_load_explicit(&fns[sig], memory_order_acquire)
					    : NULL;

	sock_sig_runs++;
	if (sig > 0 && sig < NSIG && !atomic_load_explicit(&restarts[sig], memory_order_relaxed))
		sock_sig_stops++;
	if (fn)
		fn(sig, si, uc);
}

/* (SIG_DFL and SIG_IGN mean the same with SA_SIGINFO: the union's one pointer.) */
static bool catches(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

static bool is_ours(const struct sigaction *k)
{
	return (k->sa_flags & SA_SIGINFO) && k->sa_sigaction == trampoline;
}

/* The kernel gets |a| with the trampoline in its place (lock held).  0 or -1 + errno. */
static int install(int sig, const struct sigaction *a, struct sigaction *kold)
{
	struct sigaction k = *a;

	if (!catches(a))
		return REAL(sigaction)(sig, a, kold);
	atomic_store_explicit(&restarts[sig], (a->sa_flags & SA_RESTART) != 0, memory_order_relaxed);
	atomic_store_explicit(&fns[sig],
			      (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction : (handler3)(void *)a->sa_handler,
			      memory_order_release);
	k.sa_sigaction = trampoline;
	k.sa_flags |= SA_SIGINFO;
	if (REAL(sigaction)(sig, &k, kold) < 0)
		return -1;
	app[sig] = *a;
	return 0;
}

int sock_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction kold, had;
	sigset_t mask;
	int rc, e;

	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
		return REAL(sigaction)(sig, act, old); /* (the kernel says what it says) */
	lock_table(&mask);
	had = app[sig];
	rc = act ? install(sig, act, &kold) : REAL(sigaction)(sig, NULL, &kold);
	e = errno;
	if (rc == 0 && old)
		*old = is_ours(&kold) ? had : kold; /* (reset by SA_RESETHAND: the kernel's) */
	unlock_table(&mask);
	errno = e;
	return rc;
}

/*
 * After libc's signal() or sysv_signal() set |sig| (with flags of
 * their own): its handler goes behind the trampoline, and |prev|, what the
 * kernel had, is returned as the application set it.
 */
__sighandler_t sock_signal_adopt(int sig, __sighandler_t prev)
{
	struct sigaction k;
	sigset_t mask;

	if (sig <= 0 || sig >= NSIG || prev == SIG_ERR)
		return prev;
	lock_table(&mask);
	if (prev == (__sighandler_t)(void *)trampoline)
		prev = (app[sig].sa_flags & SA_SIGINFO) ? (__sighandler_t)(void *)app[sig].sa_sigaction
							 : app[sig].sa_handler;
	if (REAL(sigaction)(sig, NULL, &k) == 0 && catches(&k) && !is_ours(&k))
		(void)install(sig, &k, NULL);
	unlock_table(&mask);
	return prev;
}

void sock_sleeps_begin(struct sock_sleeps *w)
{
	w->runs = sock_sig_runs;
	w->called = w->blocked = false;
}

bool sock_sleeps_next(struct sock_sleeps *w, bool sleeping, const sigset_t *mask,
		      const sigset_t **use)
{
	if (w->called && sleeping && !w->blocked) {
		sigset_t all;

		/* From here to the kernel's sleep, which lets in what the caller's mask does. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &w->old);
		w->blocked = true;
	}
	w->called = true;
	*use = mask ? mask : w->blocked ? &w->old : NULL;
	return !sleeping || sock_sig_runs == w->runs;
}

void sock_sleeps_end(struct sock_sleeps *w)
{
	int e = errno;

	if (w->blocked)
		pthread_sigmask(SIG_SETMASK, &w->old, NULL);
	w->blocked = false;
	errno = e;
}

void sock_sig_seen_begin(struct sock_sig_seen *w)
{
	w->runs = sock_sig_runs;
	w->stops = sock_sig_stops;
}

bool sock_sig_restarts(struct sock_sig_seen *w)
{
	bool yes = sock_sig_runs != w->runs && sock_sig_stops == w->stops;

	sock_sig_seen_begin(w);
	return yes;
}
