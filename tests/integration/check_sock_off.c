/* SPDX-License-Identifier: MIT */
/*
 * The offload mode in a program linked against libesock.so (so that the
 * sanitizers and valgrind see the library's side of it): with
 * ESOCK_TCPSERVER set, every TCP socket of the process is tcpserverd's.
 * Each test runs in its own process with its own tcpserverd: blocking echo
 * both ways at once, non-blocking with epoll (edge-triggered) and poll, an
 * epoll set watched from outside it, the switches all on, a listener inherited by fork, options kept by the
 * library, and tcpserverd going away.  tests/tcpserver/offload-test.sh
 * does the same with unmodified programs.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/esock.h>

#define BIG (1 << 20)

static pid_t dpid = -1;
static char path[128];

/* A tcpserverd of this test's own; ESOCK_TCPSERVER names it (before any socket). */
static void start_d(const char *opts)
{
	const char *b = getenv("top_builddir");
	char bin[512];

	snprintf(path, sizeof(path), "/tmp/check_sock_off.%d.sock", (int)getpid());
	snprintf(bin, sizeof(bin), "%s/tcpserver/tcpserverd", b ? b : ".");
	unlink(path);
	dpid = fork();
	ck_assert_int_ge(dpid, 0);
	if (dpid == 0) {
		execl(bin, "tcpserverd", "-s", path, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			break;
		usleep(10000);
	}
	setenv("ESOCK_TCPSERVER", path, 1);
	setenv("ESOCK_TCPSERVER_OPT", opts, 1);
}

static void stop_d(void)
{
	if (dpid > 0) {
		kill(dpid, SIGTERM);
		waitpid(dpid, NULL, 0);
		dpid = -1;
	}
	unlink(path);
}

/* A listener on 127.0.0.1 (port in *sa). */
static int listen_here(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_msg(fd >= 0, "socket: %s", strerror(errno));
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	ck_assert_int_ne(sa->sin_port, 0);
	return fd;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed + i / 251);
}

struct side {
	int fd;
	uint8_t *out, *in;
	size_t n;
};

/* Sends |n| octets and then its write end, in a thread of its own. */
static void *sender(void *arg)
{
	struct side *s = arg;

	for (size_t off = 0; off < s->n;) {
		ssize_t k = send(s->fd, s->out + off, s->n - off < 70000 ? s->n - off : 70000, MSG_NOSIGNAL);

		if (k <= 0)
			return (void *)1;
		off += (size_t)k;
	}
	return shutdown(s->fd, SHUT_WR) == 0 ? NULL : (void *)1;
}

/* Reads to the end: the count. */
static size_t drain(int fd, uint8_t *in, size_t cap)
{
	size_t got = 0;

	for (;;) {
		ssize_t k = recv(fd, in + got, cap - got, 0);

		if (k <= 0)
			return got;
		got += (size_t)k;
	}
}

/* An echo of |fd| to its end, in a thread. */
static void *echoer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t buf[16384];

	for (;;) {
		ssize_t k = recv(fd, buf, sizeof(buf), 0);

		if (k <= 0)
			break;
		for (ssize_t off = 0; off < k;) {
			ssize_t w = send(fd, buf + off, (size_t)(k - off), MSG_NOSIGNAL);

			if (w <= 0)
				return NULL;
			off += w;
		}
	}
	shutdown(fd, SHUT_WR);
	return NULL;
}

/* A connection to |sa|, a megabyte echoed through |srv|'s accepted side both ways at once. */
static void echo_through(int ls, const struct sockaddr_in *sa)
{
	struct sockaddr_in peer, mine;
	socklen_t pl = sizeof(peer), ml = sizeof(mine);
	struct side c = { .n = BIG };
	pthread_t te, ts;
	void *rv;
	int a;

	c.out = malloc(BIG);
	c.in = malloc(BIG + 1);
	fill(c.out, BIG, 7);
	c.fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c.fd, (const struct sockaddr *)sa, sizeof(*sa)), 0);
	a = accept(ls, (struct sockaddr *)&peer, &pl);
	ck_assert_msg(a >= 0, "accept: %s", strerror(errno));
	/* The accepted side's peer is the client's own address. */
	ck_assert_int_eq(getsockname(c.fd, (struct sockaddr *)&mine, &ml), 0);
	ck_assert_int_eq(peer.sin_port, mine.sin_port);
	ck_assert_int_eq(pthread_create(&te, NULL, echoer, (void *)(intptr_t)a), 0);
	ck_assert_int_eq(pthread_create(&ts, NULL, sender, &c), 0);
	ck_assert_uint_eq(drain(c.fd, c.in, BIG + 1), BIG);
	ck_assert_int_eq(memcmp(c.in, c.out, BIG), 0);
	pthread_join(ts, &rv);
	ck_assert_ptr_null(rv);
	pthread_join(te, NULL);
	close(a);
	close(c.fd);
	free(c.out);
	free(c.in);
}

START_TEST(blocking_echo)
{
	struct sockaddr_in sa;
	int ls;

	start_d(_i ? "all" : "");
	ls = listen_here(&sa);
	echo_through(ls, &sa);
	echo_through(ls, &sa); /* (a second connection on the same listener) */
	close(ls);
	stop_d();
}
END_TEST

/* Non-blocking: an epoll server (edge-triggered) and a poll client with a non-blocking connect. */
START_TEST(nonblocking_epoll_and_poll)
{
	struct sockaddr_in sa;
	int ls, c, a = -1, ep;
	uint8_t *out = malloc(BIG), *back = malloc(BIG), buf[8192];
	size_t sent = 0, got = 0, held = 0, srv_out = 0;
	uint8_t *srv_buf = malloc(BIG);
	struct epoll_event ev = { .events = EPOLLIN };

	start_d(_i ? "all" : "");
	fill(out, BIG, 3);
	ls = listen_here(&sa);
	ck_assert_int_eq(fcntl(ls, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(fcntl(ls, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	ck_assert_int_eq(accept(ls, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ep = epoll_create1(0);
	ev.data.fd = ls;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), -1);
	ck_assert(errno == EINPROGRESS || errno == EAGAIN);
	for (int64_t rounds = 0; got < BIG && rounds < 200000; rounds++) {
		struct epoll_event evs[4];
		struct pollfd p = { .fd = c, .events = (short)(POLLIN | (sent < BIG ? POLLOUT : 0)) };
		int n = epoll_wait(ep, evs, 4, 0);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == ls) {
				a = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
				ck_assert_msg(a >= 0, "accept4: %s", strerror(errno));
				ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
				ev.data.fd = a;
				ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev), 0);
			}
		}
		if (a >= 0) { /* the server: what came goes back (held while it cannot) */
			ssize_t k;

			while (held < BIG && (k = recv(a, srv_buf + held, BIG - held, 0)) > 0)
				held += (size_t)k;
			while (srv_out < held && (k = send(a, srv_buf + srv_out, held - srv_out, 0)) > 0)
				srv_out += (size_t)k;
		}
		if (poll(&p, 1, 10) > 0) {
			ssize_t k;

			if ((p.revents & POLLOUT) && sent < BIG && (k = send(c, out + sent, BIG - sent, 0)) > 0)
				sent += (size_t)k;
			while ((k = recv(c, buf, sizeof(buf), 0)) > 0) {
				memcpy(back + got, buf, (size_t)k);
				got += (size_t)k;
			}
		}
	}
	ck_assert_uint_eq(got, BIG);
	ck_assert_int_eq(memcmp(out, back, BIG), 0);
	/* Drained: a read says EAGAIN, and poll says nothing to read. */
	ck_assert_int_eq(recv(c, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	{
		struct pollfd p = { .fd = c, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 50), 0);
	}
	close(a);
	close(c);
	close(ep);
	close(ls);
	free(out);
	free(back);
	free(srv_buf);
	stop_d();
}
END_TEST

/*
 * A socket's news taken outside a wait (here by FIONREAD, which reads the
 * channel) rings the set's bell only for whom it concerns: _i 0, the set is
 * polled; 1, it is inside another set; 2, put there after the news came;
 * 3, nobody watches from outside: no bell at all (the kernel's own wait on
 * the set, asked directly, has nothing), and the set's next wait still
 * reports the socket.
 */
START_TEST(epoll_set_watched_from_outside)
{
	struct sockaddr_in sa;
	struct epoll_event ev = { .events = EPOLLIN }, evs[4];
	int ls, c, a, ep, outer = -1, n = 0;

	start_d("all");
	ls = listen_here(&sa);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	a = accept(ls, NULL, NULL);
	ck_assert_msg(a >= 0, "accept: %s", strerror(errno));
	ep = epoll_create1(0);
	ev.data.fd = a;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev), 0);
	ck_assert_int_eq(epoll_wait(ep, evs, 4, 0), 0);
	if (_i == 1 || _i == 2) {
		outer = epoll_create1(0);
		ck_assert_int_ge(outer, 0);
	}
	if (_i == 1) {
		ev.data.fd = ep;
		ck_assert_int_eq(epoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev), 0);
	}
	ck_assert_int_eq(send(c, "x", 1, 0), 1);
	for (int i = 0; i < 400 && n == 0; i++) { /* the news, taken by this call */
		ck_assert_int_eq(ioctl(a, FIONREAD, &n), 0);
		if (n == 0)
			usleep(5000);
	}
	ck_assert_int_eq(n, 1);
	switch (_i) {
	case 0: {
		struct pollfd p = { .fd = ep, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		ck_assert(p.revents & POLLIN);
		break;
	}
	case 2:
		ev.data.fd = ep;
		ck_assert_int_eq(epoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev), 0);
		/* fall through */
	case 1:
		ck_assert_int_eq(epoll_wait(outer, evs, 4, 5000), 1);
		ck_assert_int_eq(evs[0].data.fd, ep);
		break;
	default:
		ck_assert_int_eq((int)syscall(SYS_epoll_pwait, ep, evs, 4, 0, NULL, 8), 0);
		break;
	}
	ck_assert_int_eq(epoll_wait(ep, evs, 4, 1000), 1);
	ck_assert_int_eq(evs[0].data.fd, a);
	ck_assert(evs[0].events & EPOLLIN);
	if (outer >= 0)
		close(outer);
	close(ep);
	close(a);
	close(c);
	close(ls);
	stop_d();
}
END_TEST

#define SHARED 40

/*
 * share=50: a listener's connections split between tcpserverd and the
 * host's own kernel TCP.  Every one is accepted and echoes, through a
 * blocking accept (_i 0), an edge-triggered epoll loop (1) or poll (2);
 * both sides got some.  An offloaded connection's descriptor is a copy of
 * one kernel socket per family (the same inode for all), a connection the
 * host's kernel took is a socket of its own.
 */
START_TEST(listener_shared_with_the_host)
{
	struct sockaddr_in sa;
	int ls, c[SHARED], a[SHARED], na = 0, ep = -1, offl = 0;
	ino_t ino[SHARED];
	struct stat st;

	start_d("all,share=50");
	ls = listen_here(&sa);
	if (_i) {
		ck_assert_int_eq(fcntl(ls, F_SETFL, O_NONBLOCK), 0);
	}
	if (_i == 1) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.fd = ls };

		ep = epoll_create1(0);
		ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev), 0);
	}
	/* In batches of 8 (within the backlogs), each accepted before the next batch. */
	for (int i = 0; i < SHARED; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_eq(connect(c[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		if (i % 8 != 7)
			continue;
		for (int rounds = 0; na <= i && rounds < 100; rounds++) {
			if (_i == 0) {
				a[na] = accept(ls, NULL, NULL);
				ck_assert_msg(a[na] >= 0, "accept: %s", strerror(errno));
				na++;
				continue;
			}
			if (_i == 1) {
				struct epoll_event evs[4];

				if (epoll_wait(ep, evs, 4, 2000) <= 0)
					continue;
			} else {
				struct pollfd p = { .fd = ls, .events = POLLIN };

				if (poll(&p, 1, 2000) <= 0)
					continue;
			}
			for (int fd; na <= i && (fd = accept4(ls, NULL, NULL, 0)) >= 0;)
				a[na++] = fd;
			if (na <= i)
				ck_assert_int_eq(errno, EAGAIN);
		}
	}
	ck_assert_int_eq(na, SHARED);
	/* (accepted in another order than connected: each client says who it is, and hears it back) */
	for (int i = 0; i < SHARED; i++) {
		uint8_t b = (uint8_t)i;

		ck_assert_int_eq(send(c[i], &b, 1, 0), 1);
	}
	for (int k = 0; k < SHARED; k++) {
		uint8_t b;

		ck_assert_int_eq(fstat(a[k], &st), 0);
		ino[k] = st.st_ino;
		ck_assert_int_eq(recv(a[k], &b, 1, 0), 1);
		ck_assert_int_eq(send(a[k], &b, 1, 0), 1);
	}
	for (int i = 0; i < SHARED; i++) {
		uint8_t b = 0xff;

		ck_assert_int_eq(recv(c[i], &b, 1, 0), 1);
		ck_assert_int_eq(b, i);
	}
	/* The offloaded ones: the inode most of them share. */
	for (int i = 0; i < SHARED; i++) {
		int same = 0;

		for (int k = 0; k < SHARED; k++)
			same += ino[k] == ino[i];
		offl = same > offl ? same : offl;
	}
	ck_assert_msg(offl >= 2 && offl < SHARED, "%d of %d connections offloaded", offl, SHARED);
	for (int i = 0; i < SHARED; i++) { /* (the server first: its ends stay in TIME_WAIT) */
		close(a[i]);
		usleep(1000);
		close(c[i]);
	}
	if (ep >= 0)
		close(ep);
	close(ls);
	/*
	 * Restarted at once, the program binds its port again (SO_REUSEADDR, as
	 * with libc), offloaded or not: a plain kernel socket here (the raw
	 * system call: the library never sees it), which unlike an offloaded
	 * one asks for no SO_REUSEPORT that would let it past the host's
	 * connections in TIME_WAIT anyway.  (tcpserverd closes its listener
	 * when it takes the posted CLOSE: up to 2 s for that; the connections
	 * in TIME_WAIT stay a minute.)
	 */
	{
		int one = 1, rc = -1, again = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);

		ck_assert_int_eq(setsockopt(again, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
		for (int t = 0; t < 200 && (rc = bind(again, (struct sockaddr *)&sa, sizeof(sa))) < 0 &&
				errno == EADDRINUSE; t++)
			usleep(10000);
		ck_assert_msg(rc == 0, "bind again: %s", strerror(errno));
		close(again);
	}
	stop_d();
}
END_TEST

/* A pre-fork server: the child accepts on the listener it inherited and echoes. */
START_TEST(fork_inherits_listener)
{
	struct sockaddr_in sa;
	int ls, c, st;
	char buf[64];
	pid_t kid;

	start_d(_i ? "all" : "");
	ls = listen_here(&sa);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		int a = accept(ls, NULL, NULL);
		ssize_t k = a >= 0 ? recv(a, buf, sizeof(buf), 0) : -1;

		_exit(k == 5 && send(a, buf, 5, 0) == 5 ? 0 : 1);
	}
	close(ls); /* (the child's copy stays open) */
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(c, "hello", 5, 0), 5);
	ck_assert_int_eq(recv(c, buf, sizeof(buf), MSG_WAITALL), 5);
	ck_assert_int_eq(memcmp(buf, "hello", 5), 0);
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(c);
	stop_d();
}
END_TEST

/* What the library keeps itself: the mode, timeouts, the listening flag; what it refuses. */
START_TEST(options_kept_here)
{
	struct sockaddr_in sa;
	struct timeval tv = { 0, 100000 }, back;
	socklen_t len = sizeof(int);
	int ls, c, a, v = 0, on = 1;
	char buf[8];
	int64_t t0;

	start_d("");
	ls = listen_here(&sa);
	ck_assert_int_eq(getsockopt(ls, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
	ck_assert_int_eq(v, 1);
	len = sizeof(v);
	ck_assert_int_eq(getsockopt(ls, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	ck_assert_int_eq(v, SOCK_STREAM);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	a = accept(ls, NULL, NULL);
	ck_assert_int_ge(a, 0);
	/* SO_RCVTIMEO: a blocking read with nothing to read says EAGAIN after it. */
	ck_assert_int_eq(setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	len = sizeof(back);
	ck_assert_int_eq(getsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &back, &len), 0);
	ck_assert_int_eq(back.tv_usec, 100000);
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		ck_assert_int_eq(recv(a, buf, sizeof(buf), 0), -1);
		ck_assert_int_eq(errno, EAGAIN);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ck_assert_int_ge(ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0, 90);
	}
	/* FIONBIO is the socket's: a read says EAGAIN at once. */
	ck_assert_int_eq(ioctl(a, FIONBIO, &on), 0);
	ck_assert_int_eq(recv(a, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* Options travel to tcpserverd and back. */
	ck_assert_int_eq(setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), 0);
	len = sizeof(v);
	ck_assert_int_eq(getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	ck_assert_int_eq(v, 1);
	/* Urgent data is refused, not sent in-band. */
	ck_assert_int_eq(send(c, "x", 1, MSG_OOB), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* DDPMODE cannot be asked of an offloaded socket. */
	ck_assert_int_eq(setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &on, sizeof(on)), -1);
	close(a);
	close(c);
	close(ls);
	stop_d();
}
END_TEST

/* tcpserverd gone: the sockets it held fail (EPIPE), new ones cannot be made; no hang. */
START_TEST(tcpserverd_gone)
{
	struct sockaddr_in sa;
	int ls, c, a;
	char buf[8];

	start_d("");
	ls = listen_here(&sa);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	a = accept(ls, NULL, NULL);
	ck_assert_int_ge(a, 0);
	stop_d();
	ck_assert_int_eq(recv(a, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(errno, ECONNREFUSED);
	/* Other sockets are the kernel's as ever. */
	{
		int u = socket(AF_UNIX, SOCK_STREAM, 0);

		ck_assert_int_ge(u, 0);
		close(u);
	}
	close(a);
	close(c);
	close(ls);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock_off");
	TCase *tc = tcase_create("offload");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, blocking_echo, 0, 2);
	tcase_add_loop_test(tc, nonblocking_epoll_and_poll, 0, 2);
	tcase_add_loop_test(tc, epoll_set_watched_from_outside, 0, 4);
	tcase_add_loop_test(tc, listener_shared_with_the_host, 0, 3);
	tcase_add_loop_test(tc, fork_inherits_listener, 0, 2);
	tcase_add_test(tc, options_kept_here);
	tcase_add_test(tc, tcpserverd_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_set_fork_status(sr, CK_FORK); /* each test in its own process and tcpserverd */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
