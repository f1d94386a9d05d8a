/* SPDX-License-Identifier: MIT */
/*
 * The application's signal handlers behind the library's trampoline
 * (libesock/sock_signal.c): sigaction and signal give back what the
 * application set, never the trampoline; every handler still runs with its
 * arguments; and an emulated wait's sleeps block signals only before a
 * second sleep, ending with EINTR when a handler ran since the wait began.
 * Linked with the socket layer itself: this program's own sigaction and
 * signal calls are the wrappers', as a preloaded program's are.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "libesock/sock.h"
#include "tests/unit/testutil.h"

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* (set by libc itself: not the application's) */
#endif

static volatile sig_atomic_t runs, last_sig, info_signo;
static void *volatile info_uc;

static void on_sig(int sig)
{
	runs++;
	last_sig = sig;
}

static void on_sig2(int sig)
{
	runs += 100;
	last_sig = sig;
}

static void on_info(int sig, siginfo_t *si, void *uc)
{
	runs++;
	last_sig = sig;
	info_signo = si ? si->si_signo : -1;
	info_uc = uc;
}

/* Sets |h| for |sig| with |flags| and an empty mask, through sigaction. */
static void set_handler(int sig, void (*h)(int), int flags)
{
	struct sigaction act = { .sa_handler = h, .sa_flags = flags };

	sigemptyset(&act.sa_mask);
	ck_assert_int_eq(sigaction(sig, &act, NULL), 0);
}

START_TEST(sigaction_gives_back_what_was_set)
{
	struct sigaction act = { .sa_handler = on_sig, .sa_flags = SA_RESTART | SA_NODEFER }, old;

	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGUSR2);
	ck_assert_int_eq(sigaction(SIGUSR1, &act, NULL), 0);
	memset(&old, 0, sizeof(old));
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)on_sig);
	ck_assert_int_eq(old.sa_flags & ~SA_RESTORER, SA_RESTART | SA_NODEFER);
	ck_assert(sigismember(&old.sa_mask, SIGUSR2));
	ck_assert(!sigismember(&old.sa_mask, SIGTERM));
	runs = 0;
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 1);
	ck_assert_int_eq(last_sig, SIGUSR1);
	/* Replaced: the old one comes back as set, the new one runs. */
	act.sa_handler = on_sig2;
	ck_assert_int_eq(sigaction(SIGUSR1, &act, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)on_sig);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 101);
	/* Ignored: passed to the kernel as it is. */
	act.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGUSR1, &act, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)on_sig2);
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 101);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)SIG_IGN);
	/* What the kernel refuses, it refuses. */
	ck_assert_int_eq(sigaction(SIGKILL, &act, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(siginfo_handler_gets_its_arguments)
{
	struct sigaction act = { .sa_sigaction = on_info, .sa_flags = SA_SIGINFO }, old;

	sigemptyset(&act.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &act, NULL), 0);
	runs = 0;
	info_signo = 0;
	info_uc = NULL;
	ck_assert_int_eq(raise(SIGUSR2), 0);
	ck_assert_int_eq(runs, 1);
	ck_assert_int_eq(info_signo, SIGUSR2);
	ck_assert_ptr_nonnull(info_uc);
	ck_assert_int_eq(sigaction(SIGUSR2, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_sigaction, (void *)on_info);
	ck_assert(old.sa_flags & SA_SIGINFO);
}
END_TEST


START_TEST(signal_gives_back_the_previous_handler)
{
	struct sigaction old;

	ck_assert_ptr_eq((void *)signal(SIGUSR1, on_sig), (void *)SIG_DFL);
	ck_assert_ptr_eq((void *)signal(SIGUSR1, on_sig2), (void *)on_sig);
	ck_assert_ptr_eq((void *)sysv_signal(SIGUSR1, on_sig), (void *)on_sig2);
	ck_assert_ptr_eq((void *)signal(SIGUSR1, on_sig2), (void *)on_sig);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)on_sig2);
	ck_assert(old.sa_flags & SA_RESTART); /* (signal's BSD meaning, as libc set it) */
	runs = 0;
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 100);
	ck_assert_ptr_eq((void *)signal(SIGUSR1, SIG_DFL), (void *)on_sig2);
}
END_TEST

static void resets_itself(int sig)
{
	runs++;
	signal(sig, SIG_DFL); /* (a crash handler's way; async-signal-safe, through the wrapper) */
}

/*
 * A handler that runs once, then leaves the default: by SA_RESETHAND (_i 0:
 * the kernel resets it, the next query says so) or by its own signal()
 * call (_i 1: a crash handler's way; async-signal-safe, through the wrapper).
 */
START_TEST(handler_runs_once_then_default)
{
	struct sigaction old;

	set_handler(SIGUSR1, _i ? resets_itself : on_sig, _i ? 0 : SA_RESETHAND);
	runs = 0;
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 1);
	ck_assert_int_eq(sigaction(SIGUSR1, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_handler, (void *)SIG_DFL);
}
END_TEST

/* Whether |sig| is blocked in this thread now. */
static bool blocked_now(int sig)
{
	sigset_t cur;

	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	return sigismember(&cur, sig);
}

/*
 * The first sleep runs with the caller's mask as it is, no system call;
 * a second is preceded by blocking everything, and sleeps with the mask
 * the thread had (or the caller's own); the end restores the mask.
 */
START_TEST(sleeps_block_only_before_a_second)
{
	struct sock_sleeps w;
	const sigset_t *use = (const sigset_t *)&w;
	sigset_t caller;

	ck_assert_ptr_eq((void *)signal(SIGUSR1, on_sig), (void *)SIG_DFL);
	sock_sleeps_begin(&w);
	ck_assert(sock_sleeps_next(&w, false, NULL, &use)); /* a look, no sleep */
	ck_assert_ptr_null(use);
	ck_assert(!blocked_now(SIGUSR1));
	ck_assert(sock_sleeps_next(&w, true, NULL, &use));
	ck_assert(blocked_now(SIGUSR1) && blocked_now(SIGTERM));
	ck_assert_ptr_eq(use, &w.old);
	ck_assert(!sigismember(use, SIGUSR1));
	sock_sleeps_end(&w);
	ck_assert(!blocked_now(SIGUSR1) && !blocked_now(SIGTERM));
	/* With the caller's own mask (ppoll, epoll_pwait): that one, every time. */
	sigemptyset(&caller);
	sigaddset(&caller, SIGUSR2);
	sock_sleeps_begin(&w);
	ck_assert(sock_sleeps_next(&w, true, &caller, &use));
	ck_assert_ptr_eq(use, &caller);
	ck_assert(!blocked_now(SIGUSR1));
	ck_assert(sock_sleeps_next(&w, true, &caller, &use));
	ck_assert_ptr_eq(use, &caller);
	sock_sleeps_end(&w);
	ck_assert(!blocked_now(SIGUSR1));
}
END_TEST

/*
 * A handler that ran after the wait began (here: raised between its two
 * sleeps, as one that lands when the first sleep ends) stops the second:
 * the wait says EINTR and the application sees its flag.  Looks that do
 * not sleep go on (what they collect is returned).
 */
START_TEST(sleeps_end_after_a_handler)
{
	struct sock_sleeps w;
	const sigset_t *use;

	set_handler(SIGUSR1, on_sig, 0);
	sock_sleeps_begin(&w);
	ck_assert(sock_sleeps_next(&w, true, NULL, &use));
	runs = 0;
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(runs, 1);
	ck_assert(sock_sleeps_next(&w, false, NULL, &use));
	ck_assert(!sock_sleeps_next(&w, true, NULL, &use));
	sock_sleeps_end(&w);
	ck_assert(!blocked_now(SIGUSR1));
	/* A handler that ran before the wait began is none of its business. */
	ck_assert_int_eq(raise(SIGUSR1), 0);
	sock_sleeps_begin(&w);
	ck_assert(sock_sleeps_next(&w, true, NULL, &use));
	ck_assert(sock_sleeps_next(&w, true, NULL, &use));
	sock_sleeps_end(&w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock_signal");
	TCase *tc = tcase_create("signal");

	tcase_add_test(tc, sigaction_gives_back_what_was_set);
	tcase_add_test(tc, siginfo_handler_gets_its_arguments);
	tcase_add_loop_test(tc, handler_runs_once_then_default, 0, 2);
	tcase_add_test(tc, signal_gives_back_the_previous_handler);
	tcase_add_test(tc, sleeps_block_only_before_a_second);
	tcase_add_test(tc, sleeps_end_after_a_handler);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK); /* each test with the dispositions it sets */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
