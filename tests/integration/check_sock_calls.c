/* SPDX-License-Identifier: MIT */
/*
 * Legal socket calls on DDPMODE sockets behave as with libc, or fail with a
 * documented errno; none may write raw octets into the MPA stream or miss
 * data (linked against libesock.so, the ordinary calls): SO_RCVTIMEO and
 * SO_SNDTIMEO, sendmmsg and recvmmsg, splice both ways, MSG_OOB, select
 * beyond FD_SETSIZE, a descriptor dup2'd onto stdout before exec, closefrom
 * and close_range around the library's own descriptors, poll under an
 * RLIMIT_NOFILE of 1, a connect that completes before the server accepts,
 * a poll for room woken when room comes, accept on the lowest free number.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/esock.h>

#include "tests/integration/sock_util.h"

/* Reads exactly |len| octets (blocking), as a check. */
static void read_exact(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		ck_assert_msg(n > 0, "read %zd (%s) after %zu of %zu", n, strerror(errno), got, len);
		got += (size_t)n;
	}
}

/* The pair still carries data both ways, intact (nothing corrupted the stream). */
static void still_works(int a, int b)
{
	char buf[8];

	ck_assert_int_eq(write(a, "ping", 4), 4);
	read_exact(b, buf, 4);
	ck_assert_int_eq(memcmp(buf, "ping", 4), 0);
	ck_assert_int_eq(write(b, "pong", 4), 4);
	read_exact(a, buf, 4);
	ck_assert_int_eq(memcmp(buf, "pong", 4), 0);
}

/* A blocking read with SO_RCVTIMEO and nothing to read: EAGAIN after the timeout. */
START_TEST(rcvtimeo)
{
	struct timeval tv = { 0, 300000 };
	int cli, srv;
	int64_t t0, dt;
	char c;

	alarm(20);
	pairs(1, &cli, &srv);
	ck_assert_int_eq(setsockopt(srv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	t0 = now_ms();
	ck_assert_int_eq(read(srv, &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 250 && dt < 2000, "read gave up after %ld ms", (long)dt);
	still_works(cli, srv);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/*
 * A blocking write with SO_SNDTIMEO towards a peer that reads nothing: the
 * writes stop with EAGAIN (or a short count) instead of blocking for good,
 * and every octet written is delivered once the peer reads.
 */
START_TEST(sndtimeo)
{
	struct timeval tv = { 0, 300000 };
	char *buf = calloc(1, 65536), *in = malloc(65536);
	size_t sent = 0, got = 0;
	int cli, srv;
	ssize_t n = 0;
	int64_t t0 = 0;

	alarm(80);
	/* A small receive pool and socket buffers: the peer is full after a few MiB. */
	setenv("ESOCK_RCVDEPTH", "4", 1);
	pairs(1, &cli, &srv);
	unsetenv("ESOCK_RCVDEPTH"); /* the tests after this one run in the same process */
	{
		int small = 65536;

		setsockopt(cli, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		setsockopt(srv, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	}
	ck_assert_int_eq(setsockopt(srv, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	while (sent < (512u << 20)) {
		for (int i = 0; i < 65536; i++)
			buf[i] = (char)(sent + (size_t)i);
		t0 = now_ms();
		if ((n = write(srv, buf, 65536)) < 65536)
			break;
		sent += (size_t)n;
	}
	ck_assert_msg(n < 65536, "512 MiB written to a peer that reads nothing");
	if (n > 0)
		sent += (size_t)n;
	else
		ck_assert_int_eq(errno, EAGAIN);
	ck_assert_msg(now_ms() - t0 >= 200, "the last write gave up after %ld ms", (long)(now_ms() - t0));
	while (got < sent) {
		ssize_t k = read(cli, in, 65536);

		ck_assert_int_gt(k, 0);
		for (ssize_t i = 0; i < k; i++)
			ck_assert_int_eq(in[i], (char)(got + (size_t)i));
		got += (size_t)k;
	}
	ck_assert_uint_eq(got, sent);
	{ /* and nothing more than was reported written */
		struct pollfd p = { .fd = cli, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 200), 0);
	}
	close(cli);
	close(srv);
	free(buf);
	free(in);
	alarm(0);
}
END_TEST

/* sendmmsg and recvmmsg carry the messages in order through the MPA stream. */
START_TEST(mmsg)
{
	char a[] = "aaa", b[] = "bbbb", c[] = "cc", r1[4], r2[16];
	struct iovec v[3] = { { a, 3 }, { b, 4 }, { c, 2 } }, rv[2] = { { r1, 4 }, { r2, 16 } };
	struct mmsghdr m[3], rm[2];
	char all[9];
	int cli, srv, n;

	alarm(20);
	pairs(1, &cli, &srv);
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 3; i++) {
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	ck_assert_int_eq(sendmmsg(cli, m, 3, 0), 3);
	ck_assert_uint_eq(m[0].msg_len, 3);
	ck_assert_uint_eq(m[1].msg_len, 4);
	ck_assert_uint_eq(m[2].msg_len, 2);
	read_exact(srv, all, 9);
	ck_assert_int_eq(memcmp(all, "aaabbbbcc", 9), 0);
	ck_assert_int_eq(write(srv, "0123456789", 10), 10);
	memset(rm, 0, sizeof(rm));
	rm[0].msg_hdr.msg_iov = &rv[0];
	rm[0].msg_hdr.msg_iovlen = 1;
	rm[1].msg_hdr.msg_iov = &rv[1];
	rm[1].msg_hdr.msg_iovlen = 1;
	n = recvmmsg(cli, rm, 2, MSG_WAITFORONE, NULL);
	ck_assert_int_ge(n, 1);
	ck_assert_uint_eq(rm[0].msg_len, 4);
	ck_assert_int_eq(memcmp(r1, "0123", 4), 0);
	if (n == 2) {
		ck_assert_uint_eq(rm[1].msg_len, 6);
		ck_assert_int_eq(memcmp(r2, "456789", 6), 0);
	} else {
		read_exact(cli, r2, 6);
		ck_assert_int_eq(memcmp(r2, "456789", 6), 0);
	}
	still_works(cli, srv);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/* splice from a pipe into a DDPMODE socket and from one into a pipe: the data, nothing raw. */
START_TEST(splice_both_ways)
{
	int cli, srv, p[2], q[2];
	char buf[16];

	alarm(20);
	pairs(1, &cli, &srv);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pipe(q), 0);
	ck_assert_int_eq(write(p[1], "spliced!", 8), 8);
	ck_assert_int_eq(splice(p[0], NULL, cli, NULL, 8, 0), 8);
	read_exact(srv, buf, 8);
	ck_assert_int_eq(memcmp(buf, "spliced!", 8), 0);
	ck_assert_int_eq(write(srv, "back", 4), 4);
	ck_assert_int_eq(splice(cli, NULL, q[1], NULL, 4, 0), 4);
	ck_assert_int_eq(read(q[0], buf, sizeof(buf)), 4);
	ck_assert_int_eq(memcmp(buf, "back", 4), 0);
	/* Nothing waiting: a non-blocking splice says so. */
	ck_assert_int_eq(splice(cli, NULL, q[1], NULL, 4, SPLICE_F_NONBLOCK), -1);
	ck_assert_int_eq(errno, EAGAIN);
	still_works(cli, srv);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/* Urgent data has no RDMA counterpart: MSG_OOB fails with EOPNOTSUPP, the stream is intact. */
START_TEST(msg_oob)
{
	int cli, srv;
	char c = 'u';

	alarm(20);
	pairs(1, &cli, &srv);
	ck_assert_int_eq(send(cli, &c, 1, MSG_OOB), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(recv(srv, &c, 1, MSG_OOB | MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	still_works(cli, srv);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/* select with a DDPMODE descriptor above FD_SETSIZE (a larger set, as glibc allows). */
START_TEST(select_beyond_fd_setsize)
{
	enum { BIG = 1500 };
	struct rlimit rl;
	unsigned long *set = calloc(BIG / (8 * sizeof(long)) + 1, sizeof(long));
	struct timeval tv = { 5, 0 };
	int cli, srv, big;
	char buf[4];

	alarm(20);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < BIG + 1) {
		free(set);
		return; /* this machine cannot open such a descriptor */
	}
	if (rl.rlim_cur < BIG + 1) {
		rl.rlim_cur = BIG + 1;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	pairs(1, &cli, &srv);
	ck_assert_int_eq(big = dup2(srv, BIG - 1), BIG - 1);
	ck_assert_int_eq(write(cli, "sel!", 4), 4);
	set[big / (8 * sizeof(long))] |= 1ul << (big % (8 * sizeof(long)));
	ck_assert_int_eq(select(big + 1, (fd_set *)(void *)set, NULL, NULL, &tv), 1);
	ck_assert(set[big / (8 * sizeof(long))] & (1ul << (big % (8 * sizeof(long)))));
	read_exact(big, buf, 4);
	ck_assert_int_eq(memcmp(buf, "sel!", 4), 0);
	close(big);
	close(cli);
	close(srv);
	free(set);
	alarm(0);
}
END_TEST

/*
 * inetd style: a child dup2's the DDPMODE socket onto stdout and execs a
 * program that writes there.  The connection cannot follow the exec: the
 * descriptor is close-on-exec, the program's write fails, and the peer
 * never sees raw octets in its MPA stream.
 */
START_TEST(dup2_onto_stdout_then_exec)
{
	int cli, srv, st;
	char buf[4];
	pid_t pid;

	alarm(20);
	pairs(1, &cli, &srv);
	if ((pid = fork()) == 0) {
		dup2(srv, 1);
		execl("/bin/sh", "sh", "-c", "exec 2>/dev/null; echo raw-octets-into-the-stream; exit 0", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	/* The peer received nothing, and the connection still works. */
	{
		struct pollfd p = { .fd = cli, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 300), 0);
	}
	ck_assert_int_eq(write(srv, "ok!!", 4), 4);
	read_exact(cli, buf, 4);
	ck_assert_int_eq(memcmp(buf, "ok!!", 4), 0);
	still_works(cli, srv);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/*
 * stdio on a connection (git's upload-pack writes its ref advertisement with
 * it): a stream from fdopen, fprintf and fgets, and dprintf, go through the
 * connection.  Before, the C library's own writes put raw octets into the
 * MPA stream and the peer Terminated.
 */
START_TEST(stdio_on_connection)
{
	int cli, srv;
	char buf[64];
	FILE *w, *r;

	alarm(20);
	pairs(1, &cli, &srv);
	ck_assert_ptr_nonnull(w = fdopen(dup(srv), "w"));
	ck_assert_int_eq(fprintf(w, "hello %d\n", 42), 9);
	ck_assert_int_eq(fflush(w), 0);
	read_exact(cli, buf, 9);
	ck_assert_int_eq(memcmp(buf, "hello 42\n", 9), 0);
	ck_assert_int_eq(dprintf(srv, "n=%s;", "x"), 4);
	read_exact(cli, buf, 4);
	ck_assert_int_eq(memcmp(buf, "n=x;", 4), 0);
	ck_assert_ptr_nonnull(r = fdopen(dup(cli), "r"));
	ck_assert_int_eq(write(srv, "line one\nline two\n", 18), 18);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), r));
	ck_assert_str_eq(buf, "line one\n");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), r));
	ck_assert_str_eq(buf, "line two\n");
	ck_assert_int_eq(fclose(w), 0);
	ck_assert_int_eq(fclose(r), 0);
	still_works(cli, srv);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/* The descriptor the SIGALRM handler closes, and whether its close returned. */
static volatile sig_atomic_t victim = -1, closed_in_handler;

static void close_victim(int sig)
{
	(void)sig;
	close(victim);
	closed_in_handler = 1;
}

/*
 * A signal handler closes the DDPMODE socket that the call it interrupted is
 * using, as postgres's postmaster does when it leaves from its handler while
 * in select: the close returns (it waited for that call to leave: forever),
 * the interrupted call returns, and the socket is gone.  For a listener in
 * poll and for a connection in a blocking read.
 */
START_TEST(close_from_signal_handler)
{
	struct sigaction sa = { .sa_handler = close_victim };
	struct sockaddr_in addr;
	int64_t t0;

	alarm(0);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	for (int k = 0; k < 2; k++) {
		struct itimerval it = { .it_value = { 0, 200000 } };
		int cli = -1, srv = -1, rc;
		char c;

		closed_in_handler = 0;
		if (k == 0) {
			struct pollfd p;

			victim = listener(0, 0, &addr);
			p = (struct pollfd){ .fd = victim, .events = POLLIN };
			ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
			t0 = now_ms();
			rc = poll(&p, 1, 3000);
			ck_assert_msg(rc == -1 || rc == 1 || rc == 0, "poll: %d", rc);
		} else {
			pairs(1, &cli, &srv);
			victim = srv;
			ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
			t0 = now_ms();
			rc = (int)read(srv, &c, 1);
			ck_assert_int_eq(rc, -1);
		}
		ck_assert_msg(closed_in_handler, "the handler's close did not return");
		ck_assert_msg(now_ms() - t0 < 2500, "the interrupted call returned after %ld ms",
			      (long)(now_ms() - t0));
		/* The descriptor is closed: its number is free again. */
		ck_assert_int_eq(fcntl(victim, F_GETFD), -1);
		ck_assert_int_eq(errno, EBADF);
		if (cli >= 0) {
			/* The peer sees the end. */
			struct pollfd p = { .fd = cli, .events = POLLIN };

			ck_assert_int_eq(poll(&p, 1, 5000), 1);
			close(cli);
		}
	}
	signal(SIGALRM, SIG_DFL);
}
END_TEST

/*
 * Daemons close what they did not open (sshd: closefrom(6) at start, others
 * a loop of close): the library's own descriptors (its engine's epoll set
 * and doorbell, event fds, the listener's timers) must survive, the
 * connections the application holds keep working, and everything else in
 * the range is closed.  Before, sshd's closefrom took the engine's
 * descriptors and the connection died.  In a child of the test's process
 * (Check's own descriptors are among the ones closed).
 */
START_TEST(closefrom_keeps_the_library)
{
	pid_t pid = fork();
	int status = -1;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		static char big[1 << 20], got[1 << 20];
		int cli, srv, lo, hi, probe, rc = 0;

		pairs(1, &cli, &srv);
		still_works(cli, srv); /* (the engine and its descriptors are up) */
		lo = cli < srv ? cli : srv;
		hi = cli < srv ? srv : cli;
		probe = open("/dev/null", O_RDONLY); /* the application's: must go */
		closefrom(hi + 1);
		if (hi - lo > 1)
			close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
		for (int fd = 3; fd < lo && fd < 64; fd++) /* a loop of close, as old daemons do */
			if (fd != cli && fd != srv)
				close(fd);
		if (fcntl(probe, F_GETFD) != -1 || errno != EBADF)
			_exit(2);
		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (char)(i * 13 + 1);
		/* A blocking megabyte each way: the waits use the library's descriptors. */
		for (int dir = 0; dir < 2 && !rc; dir++) {
			int a = dir ? srv : cli, b = dir ? cli : srv;
			size_t put = 0, have = 0;

			while (have < sizeof(big)) {
				struct pollfd p[2] = { { .fd = a, .events = put < sizeof(big) ? POLLOUT : 0 },
						       { .fd = b, .events = POLLIN } };
				ssize_t n;

				if (poll(p, 2, 10000) <= 0) {
					rc = 3;
					break;
				}
				if ((p[0].revents & POLLOUT) &&
				    (n = send(a, big + put, sizeof(big) - put, MSG_DONTWAIT)) > 0)
					put += (size_t)n;
				if ((p[1].revents & POLLIN) &&
				    (n = recv(b, got + have, sizeof(got) - have, MSG_DONTWAIT)) > 0)
					have += (size_t)n;
			}
			if (!rc && memcmp(big, got, sizeof(big)) != 0)
				rc = 4;
		}
		_exit(rc);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %#x",
		      (unsigned)status);
}
END_TEST

/*
 * poll refuses more entries than RLIMIT_NOFILE (EINVAL); sshd's pre-auth
 * child sets the limit to 1 and polls its one connection.  The library's
 * poll on a DDPMODE descriptor must stay within what the caller passed.
 */
START_TEST(poll_within_nofile_limit)
{
	struct rlimit one, old;
	int cli, srv, rc;
	char c;

	pairs(1, &cli, &srv);
	still_works(cli, srv);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	one = (struct rlimit){ 1, old.rlim_max }; /* (the soft limit is what poll checks) */
	ck_assert_int_eq(write(cli, "x", 1), 1);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &one), 0);
	{
		struct pollfd p = { .fd = srv, .events = POLLIN };

		rc = poll(&p, 1, 5000);
		ck_assert_msg(rc == 1 && (p.revents & POLLIN), "poll: %d (%s), revents %#x", rc,
			      rc < 0 ? strerror(errno) : "-", (unsigned)p.revents);
		p.revents = 0;
		ck_assert_int_eq(read(srv, &c, 1), 1);
		rc = poll(&p, 1, 100); /* nothing: a timeout, not EINVAL */
		ck_assert_msg(rc == 0, "poll with nothing to read: %d (%s)", rc,
			      rc < 0 ? strerror(errno) : "-");
	}
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	close(cli);
	close(srv);
}
END_TEST

/*
 * connect completes without the server calling accept, as TCP's does (the
 * kernel's listen backlog): one thread connects three clients to its own
 * listener, then accepts them, then each pair talks.  Before, a blocking
 * connect waited for the MPA Reply, which only the server's accept sends:
 * for the whole MPA timeout, then failed.
 */
START_TEST(connect_before_accept)
{
	struct sockaddr_in sa;
	int lfd = listener(0, 0, &sa), cli[3], srv[3], v = 0;
	socklen_t vl = sizeof(v);

	for (int i = 0; i < 3; i++) {
		int64_t t0 = now_ms();

		cli[i] = ddp_socket(0);
		ck_assert_int_eq(connect(cli[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_msg(now_ms() - t0 < 2000, "connect %d took %ld ms", i, (long)(now_ms() - t0));
	}
	for (int i = 0; i < 3; i++) {
		srv[i] = accept(lfd, NULL, NULL);
		ck_assert_int_ge(srv[i], 0);
	}
	for (int i = 0; i < 3; i++) {
		still_works(cli[i], srv[i]);
		close(srv[i]);
	}
	/* What was negotiated, once the Reply came (not the wishes). */
	ck_assert_int_eq(getsockopt(cli[0], SOL_ESOCK, ESOCK_MPA_REV, &v, &vl), 0);
	ck_assert_int_eq(v, 2);
	for (int i = 0; i < 3; i++)
		close(cli[i]);
	close(lfd);
}
END_TEST

/*
 * accept gives the lowest free descriptor, as libc's does (inetd-style
 * servers close 0 and accept onto it).  The listener takes connections from
 * the backlog ahead of accept (a poll on it reads their Requests): one
 * taken then is handed out on the lowest number free at accept, one taken
 * within accept itself keeps the number the kernel gave it just then.
 */
START_TEST(accept_gives_lowest_fd)
{
	struct sockaddr_in sa;
	int lfd = listener(0, 0, &sa), gap = open("/dev/null", O_RDONLY), cli[2], srv[2], probe;
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	ck_assert_int_ge(gap, 0);
	/* Taken ahead (by the poll), handed out after a lower number came free. */
	cli[0] = ddp_socket(0);
	ck_assert_int_eq(connect(cli[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	close(gap);
	srv[0] = accept(lfd, NULL, NULL);
	ck_assert_int_eq(srv[0], gap);
	/* Taken within accept: the number a new descriptor would get now. */
	cli[1] = ddp_socket(0);
	ck_assert_int_eq(connect(cli[1], (struct sockaddr *)&sa, sizeof(sa)), 0);
	probe = dup(0);
	ck_assert_int_ge(probe, 0);
	close(probe);
	srv[1] = accept(lfd, NULL, NULL);
	ck_assert_int_eq(srv[1], probe);
	for (int i = 0; i < 2; i++) {
		still_works(cli[i], srv[i]);
		close(srv[i]);
		close(cli[i]);
	}
	close(lfd);
}
END_TEST

/*
 * A writer that waits in poll for room is woken when room comes.  The
 * socket layer's sends complete quietly (no wake-up for a completion nobody
 * waits for); a poller asking for POLLOUT while every send slot was taken,
 * after a write that went through whole, slept until its timeout: iperf3's
 * client (select for writable, then write) ran at 0.02-0.1x of plain TCP,
 * its waits ending by timeout.  Here the reader never stops, so no wait for
 * room may come near the 10 s timeout.
 */
struct drain {
	int fd;
	size_t want, got;
	pthread_t th;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	static char buf[1 << 16];

	while (d->got < d->want) {
		ssize_t n = read(d->fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		d->got += (size_t)n;
	}
	return NULL;
}

START_TEST(poll_out_wakes_for_room)
{
	static char block[1 << 16];
	struct drain d = { .want = 48u << 20 };
	size_t put = 0;
	int cli, srv;
	int64_t worst = 0;

	pairs(1, &cli, &srv);
	d.fd = srv;
	ck_assert_int_eq(fcntl(cli, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(pthread_create(&d.th, NULL, drain_main, &d), 0);
	while (put < d.want) {
		struct pollfd p = { .fd = cli, .events = POLLOUT };
		int64_t t0 = now_ms();
		size_t k = d.want - put < sizeof(block) ? d.want - put : sizeof(block);
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
		n = write(cli, block, k);
		ck_assert_msg(n > 0 || errno == EAGAIN, "write: %s", strerror(errno));
		if (n > 0)
			put += (size_t)n;
	}
	pthread_join(d.th, NULL);
	ck_assert_uint_eq(d.got, d.want);
	ck_assert_msg(worst < 3000, "a wait for room took %ld ms while the reader read", (long)worst);
	close(cli);
	close(srv);
}
END_TEST

/*
 * shutdown(SHUT_WR) right after a write that TCP did not take whole (a
 * small send buffer; the rest of the message waits in the library for
 * room, with no send work request): that rest still goes before the FIN.
 * Before, the FIN went at once and the reader saw the stream end a message
 * early (or inside one), though the write had succeeded (5 % loss in the
 * fault stage: 8 MiB less 8192 octets, both ends content).  shutdown does
 * not wait for the peer to read, as TCP's does not: the reader starts only
 * after it returned.  1 to 24 writes, so that the last one ends on such a
 * rest whatever the kernel takes.
 */
struct reader {
	int fd;
	size_t got;
	int err;
	pthread_t th;
};

static void *reader_main(void *arg)
{
	static char buf[1 << 16];
	struct reader *r = arg;
	ssize_t n;

	while ((n = read(r->fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->err = errno;
			break;
		}
		r->got += (size_t)n;
	}
	return NULL;
}

/* Nonblocking writes of |block| on |fd| until EAGAIN or |k| of them: octets written. */
static size_t write_until_full(int fd, int k)
{
	static char block[8192];
	size_t put = 0;

	for (int i = 0; i < k; i++) {
		ssize_t n = write(fd, block, sizeof(block));

		ck_assert_msg(n > 0 || errno == EAGAIN, "write: %s", strerror(errno));
		if (n < 0)
			break;
		put += (size_t)n;
	}
	return put;
}

static void shrink_buffers(int sender, int receiver)
{
	int small = 4096;

	ck_assert_int_eq(setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(setsockopt(receiver, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(fcntl(sender, F_SETFL, O_NONBLOCK), 0);
}

START_TEST(shutdown_after_a_partly_taken_write)
{
	for (int k = 1; k <= 24; k++) {
		struct reader r = { .got = 0 };
		int cli, srv;
		size_t put;

		pairs(1, &cli, &srv);
		shrink_buffers(cli, srv);
		put = write_until_full(cli, k);
		ck_assert_int_eq(shutdown(cli, SHUT_WR), 0);
		r.fd = srv;
		ck_assert_int_eq(pthread_create(&r.th, NULL, reader_main, &r), 0);
		pthread_join(r.th, NULL);
		ck_assert_msg(r.err == 0, "%d writes: the reader: %s", k, strerror(r.err));
		ck_assert_msg(r.got == put, "%d writes: %zu octets written, %zu read before EOF", k, put,
			      r.got);
		close(cli);
		close(srv);
	}
}
END_TEST

/*
 * A child that connects to a DDPMODE listener of ours (a 4 KiB receive
 * buffer, inherited by the accepted socket: the window is small from the
 * start), writes |k| blocks or until EAGAIN, tells how much through a pipe,
 * and exits without close or shutdown (with ESOCK_LINGER_MS |linger|, if
 * given).  Its connection's accepted end in *srv, the count in *put.
 */
static pid_t exiting_writer(int k, const char *linger, int *lfd, int *srv, size_t *put)
{
	struct sockaddr_in sa;
	int p[2], small = 4096;
	pid_t pid;

	*lfd = listener(0, 0, &sa);
	ck_assert_int_eq(setsockopt(*lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = ddp_socket(0);

		close(*lfd);
		close(p[0]);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(3);
		shrink_buffers(fd, fd); /* (its own receive buffer: unused) */
		*put = write_until_full(fd, k);
		if (write(p[1], put, sizeof(*put)) != sizeof(*put))
			_exit(5);
		if (linger)
			setenv("ESOCK_LINGER_MS", linger, 1);
		exit(0); /* no close, no shutdown: the library's exit handler's turn */
	}
	close(p[1]);
	*srv = accept(*lfd, NULL, NULL);
	ck_assert_int_ge(*srv, 0);
	ck_assert_int_eq(read(p[0], put, sizeof(*put)), (ssize_t)sizeof(*put));
	close(p[0]);
	return pid;
}

static void exited_well(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer: status %#x", st);
}

/*
 * A process that writes and exits without close or shutdown (exit, or
 * main returns): as with TCP, whose kernel still sends what it holds, the
 * peer reads every octet written, then EOF.  Before, what the library held
 * for room was lost with the process, and the kernel's FIN made the stream
 * look whole (or cut an FPDU: ECONNRESET after a prefix).  The parent reads
 * only once the child wrote all it could.
 */
START_TEST(exit_without_close_sends_what_is_queued)
{
	for (int k = 1; k <= 12; k++) {
		struct reader r = { .got = 0 };
		int lfd, srv;
		size_t put;
		pid_t pid = exiting_writer(k, NULL, &lfd, &srv, &put);

		r.fd = srv;
		reader_main(&r);
		exited_well(pid);
		ck_assert_msg(r.err == 0, "%d writes: the reader: %s", k, strerror(r.err));
		ck_assert_msg(r.got == put, "%d writes: %zu octets written, %zu read before EOF", k, put,
			      r.got);
		close(srv);
		close(lfd);
	}
}
END_TEST

/*
 * The same, with a peer that reads nothing until the writer is gone: the
 * exit waits one linger time (short here), then resets the connection.  The
 * reader then sees an error after what came, never a clean EOF after less
 * than was written.
 */
START_TEST(exit_with_a_stalled_peer_resets)
{
	struct reader r = { .got = 0 };
	int lfd, srv;
	size_t put;
	pid_t pid = exiting_writer(64, "200", &lfd, &srv, &put);

	exited_well(pid); /* (the peer reads nothing meanwhile) */
	r.fd = srv;
	reader_main(&r);
	ck_assert_msg(r.err != 0 || r.got == put, "%zu octets written, a clean EOF after %zu", put,
		      r.got);
	close(srv);
	close(lfd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock calls");
	TCase *tc = tcase_create("calls");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, rcvtimeo);
	tcase_add_test(tc, sndtimeo);
	tcase_add_test(tc, mmsg);
	tcase_add_test(tc, splice_both_ways);
	tcase_add_test(tc, msg_oob);
	tcase_add_test(tc, stdio_on_connection);
	tcase_add_test(tc, select_beyond_fd_setsize);
	tcase_add_test(tc, dup2_onto_stdout_then_exec);
	tcase_add_test(tc, close_from_signal_handler);
	tcase_add_test(tc, closefrom_keeps_the_library);
	tcase_add_test(tc, poll_within_nofile_limit);
	tcase_add_test(tc, connect_before_accept);
	tcase_add_test(tc, accept_gives_lowest_fd);
	tcase_add_test(tc, poll_out_wakes_for_room);
	tcase_add_test(tc, shutdown_after_a_partly_taken_write);
	tcase_add_test(tc, exit_without_close_sends_what_is_queued);
	tcase_add_test(tc, exit_with_a_stalled_peer_resets);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK); /* each test in its own process */
	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
