/* SPDX-License-Identifier: MIT */
/*
 * A DDPMODE connection carried across exec (issue 13), as inetd-style
 * servers (git daemon, sshd, xinetd) use one: a forked child puts the
 * accepted connection on 0 and 1 and execs a program (here this one again,
 * with --echo) that echoes what a DDPMODE client sends, with read and
 * write on 0 and 1.  Carried fresh (exec right after accept), after the
 * child used it (part of the first message read and answered, the rest
 * unread), twice in a row (git daemon's --serve, then upload-pack), and
 * written with stdio there (upload-pack's ref advertisement).
 * Into an image that does not preload the library, the connection is not
 * carried: the new image has no descriptor (EBADF), never raw MPA octets.
 * A handoff variable that names no handoff (stale, made up, not a number)
 * is dropped without touching the descriptor it names: a program's stdin
 * keeps its offset and every octet.
 * Linked against libesock.so; the new image preloads it.
 */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/esock.h>
#include <esock/iwarp.h>

#include "tests/integration/sock_util.h"
#include "tests/unit/testutil.h"

#define TOTAL (256u * 1024)

/* ---- the image after exec ---- */

/* This program, for exec (not /proc/self/exe: under valgrind that is the tool). */
static char self[4096];

/*
 * --echo [N]: echoes 0 to 1 until EOF (N > 0: first execs itself again with
 * --echo 0; N = -1: writes with stdio, fwrite and fflush on stdout, as git's
 * upload-pack does; N = -2: polls 0 before each read, for at most 10 s).
 */
static int echo_main(int again)
{
	static char buf[65536];

	if (again > 0) {
		char *argv[] = { self, "--echo", "0", NULL };

		execv(self, argv);
		return 20;
	}
	for (;;) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		ssize_t n, w = 0;

		if (again == -2 && poll(&p, 1, 10000) != 1) {
			fprintf(stderr, "echo image: poll saw no input\n");
			return 24;
		}
		n = read(0, buf, sizeof(buf));

		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "echo image: read: %s\n", strerror(errno));
			return 21;
		}
		if (again == -1) {
			if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n || fflush(stdout) != 0) {
				fprintf(stderr, "echo image: stdout: %s\n", strerror(errno));
				return 23;
			}
			continue;
		}
		while (w < n) {
			ssize_t k = write(1, buf + w, (size_t)(n - w));

			if (k <= 0) {
				fprintf(stderr, "echo image: write: %s\n", k ? strerror(errno) : "0");
				return 22;
			}
			w += k;
		}
	}
}

/* --no-conn: the descriptors 0 and 1 must be gone (EBADF), not a raw stream. */
static int no_conn_main(void)
{
	errno = 0;
	if (write(1, "raw", 3) != -1 || errno != EBADF)
		return 30;
	return 0;
}

/* What stdin holds in stale_handoff_variable_touches_nothing, and how much of it is read first. */
#define STDIN_LEN 4096
#define STDIN_SKIP 3
static uint8_t stdin_octet(size_t i)
{
	static const char line[] = "not a handoff record\n";
	const size_t n = sizeof(line) - 1;

	return (uint8_t)(line[i % n] ^ (i / n));
}

/* --stdin-rest: stdin must be where the parent left it, and the rest all there. */
static int stdin_rest_main(void)
{
	static uint8_t buf[STDIN_LEN];
	size_t got = 0;
	ssize_t n;

	if (getenv("ESOCK_HANDOFF"))
		return 50; /* (the library takes it out of the environment) */
	if (lseek(0, 0, SEEK_CUR) != STDIN_SKIP)
		return 51;
	while ((n = read(0, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	if (n < 0 || got != STDIN_LEN - STDIN_SKIP)
		return 52;
	for (size_t i = 0; i < got; i++)
		if (buf[i] != stdin_octet(i + STDIN_SKIP))
			return 53;
	return 0;
}

/* ---- the test ---- */

/* LD_PRELOAD for the new image: this library (found by one of its symbols). */
static void set_preload(void)
{
	Dl_info di;
	char opts[512];
	const char *a = getenv("ASAN_OPTIONS");

	ck_assert(dladdr((void *)esock_qp_state, &di) && di.dli_fname);
	setenv("LD_PRELOAD", di.dli_fname, 1);
	/* (Under ASan the library comes before the sanitizer's runtime: allowed here.) */
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", a ? a : "", a ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
}

/*
 * _i: 0 exec at once; 1 the child reads and answers part of the first
 * message first; 2 two execs in a row; 3 into an image without the library
 * preloaded; 4 the new image writes with stdio; 5 as 0, from a vfork (whose
 * child would share the parent's memory: the library's state with it); 6 a
 * short stream (five messages of 1000 octets), the first read and answered
 * here before the fork, which leaves the other four whole in the QP's stage
 * (EP_NOW_STAY): the new image, which polls before it reads, carries them
 * and echoes every one (the QP's stage crosses the exec with them in it).
 */
START_TEST(connection_crosses_exec)
{
	struct echo_client cl = { .total = _i == 6 ? 5000 : TOTAL, .piece = _i == 6 ? 1000 : 7777 };
	int lfd, c, status = -1;
	pid_t pid;

	alarm(60);
	lfd = listener(0, 0, &cl.sa);
	echo_client_start(&cl);
	c = accept(lfd, NULL, NULL);
	ck_assert_int_ge(c, 0);
	if (_i == 6) {
		char first[1000];
		struct pollfd p = { .fd = c, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		usleep(50000); /* (all five in) */
		ck_assert_int_eq(read(c, first, sizeof(first)), 1000);
		ck_assert_int_eq(write(c, first, sizeof(first)), 1000);
	}
	pid = _i == 5 ? vfork() : fork(); /* (vfork: the library makes it a fork) */
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *echo[] = { self, "--echo", _i == 2 ? "1" : _i == 4 ? "-1" : _i == 6 ? "-2" : "0",
				 NULL };
		char *none[] = { self, "--no-conn", NULL };

		close(lfd);
		if (_i == 1) {
			/* Part of the first message read and answered here; the rest stays unread. */
			char part[3];
			struct pollfd p = { .fd = c, .events = POLLIN };

			if (poll(&p, 1, 5000) != 1 || read(c, part, sizeof(part)) != 3 ||
			    write(c, part, sizeof(part)) != 3)
				_exit(40);
		}
		if (dup2(c, 0) < 0 || dup2(c, 1) < 0)
			_exit(41);
		close(c);
		if (_i == 3)
			unsetenv("LD_PRELOAD");
		else
			set_preload();
		execv(self, _i == 3 ? none : echo);
		_exit(42);
	}
	close(c); /* as an inetd-style listener does: the new image carries it alone */
	echo_client_join(&cl);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the new image ended with %#x",
		      (unsigned)status);
	if (_i != 3)
		ck_assert_msg(cl.ok, "%zu of %u octets echoed", cl.echoed, TOTAL);
	close(lfd);
	alarm(0);
}
END_TEST

/*
 * An image started with ESOCK_HANDOFF naming no handoff of ours (_i: 0 "0", a
 * regular file there; 1 not a number; 2 out of range; 3 a descriptor that is
 * not open): the library ignores it, and the file on 0 keeps its offset and
 * every octet (a handoff is read with pread; a value once became 0 and the
 * file was rewound and its first octets eaten).
 */
START_TEST(stale_handoff_variable_touches_nothing)
{
	static const char *const val[] = { "0", "zero", "99999999999", "1000" };
	uint8_t content[STDIN_LEN];
	FILE *f = tmpfile();
	int fd = f ? fileno(f) : -1, status = -1;
	pid_t pid;

	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < sizeof(content); i++)
		content[i] = stdin_octet(i);
	ck_assert_int_eq(write(fd, content, sizeof(content)), (ssize_t)sizeof(content));
	ck_assert_int_eq(lseek(fd, STDIN_SKIP, SEEK_SET), STDIN_SKIP);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { self, "--stdin-rest", NULL };

		if (dup2(fd, 0) < 0)
			_exit(41);
		set_preload();
		setenv("ESOCK_HANDOFF", val[_i], 1);
		execv(self, argv);
		_exit(42);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "ESOCK_HANDOFF=%s: the new image ended with %#x", val[_i], (unsigned)status);
	fclose(f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock exec");
	TCase *tc = tcase_create("handoff");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, connection_crosses_exec, 0, 7);
	tcase_add_loop_test(tc, stale_handoff_variable_touches_nothing, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (!realpath(argv[0], self))
		snprintf(self, sizeof(self), "%s", argv[0]);
	if (argc >= 2 && strcmp(argv[1], "--echo") == 0)
		return echo_main(argc >= 3 ? atoi(argv[2]) : 0);
	if (argc >= 2 && strcmp(argv[1], "--no-conn") == 0)
		return no_conn_main();
	if (argc >= 2 && strcmp(argv[1], "--stdin-rest") == 0)
		return stdin_rest_main();
	return tu_run_forked(suite()); /* an exec is for good: a process per test */
}
