/* SPDX-License-Identifier: MIT */
/*
 * Slow and silent peers against a DDPMODE server (linked against libesock.so,
 * the ordinary calls): TCP connections that never send their MPA Request, or
 * half of it, must delay no other client, whether the server accepts
 * blocking, non-blocking with epoll, or with poll; they go at the MPA
 * timeout while the server waits.  And a non-blocking connect stays
 * non-blocking through the MPA exchange towards a slow or silent server.
 * MPA revision 1 works on either side; a peer announcing absurdly small
 * receives is refused.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <esock/esock.h>
#include <esock/mpa.h>
#include <esock/rdmap.h>

#include "tests/integration/sock_util.h"
#include "tests/unit/testutil.h"

#define ESOCK_ANNOUNCE_OCTETS 12 /* esock's announcement (libesock/sock_conn.c) */

/* A plain TCP client that says nothing (|half|: the first 10 octets of a Request). */
static int idle_client(const struct sockaddr_in *sa, bool half)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa, sizeof(*sa)), 0);
	if (half)
		ck_assert_int_eq(send(fd, "MPA ID Req", 10, MSG_NOSIGNAL), 10);
	return fd;
}

/* The idle client was reset by the server (it gave up on the Request). */
static void assert_reset(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	ck_assert_int_eq(poll(&p, 1, wait_ms), 1);
	errno = 0;
	ck_assert_int_eq(recv(fd, &c, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, ECONNRESET);
}

/* A DDPMODE client in its own thread: connect (MPA), send "ping", expect "pong". */
struct client {
	struct sockaddr_in sa;
	pthread_t th;
	int rc;            /* 0: the round trip completed */
	int64_t t_done;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	int fd = ddp_socket(0);
	char buf[4];

	c->rc = -1;
	if (connect(fd, (struct sockaddr *)&c->sa, sizeof(c->sa)) == 0 && write(fd, "ping", 4) == 4 &&
	    recv(fd, buf, 4, MSG_WAITALL) == 4 && memcmp(buf, "pong", 4) == 0)
		c->rc = 0;
	c->t_done = now_ms();
	close(fd);
	return NULL;
}

static void client_start(struct client *c, const struct sockaddr_in *sa)
{
	memset(c, 0, sizeof(*c));
	c->sa = *sa;
	ck_assert_int_eq(pthread_create(&c->th, NULL, client_main, c), 0);
}

/* The server's side of the round trip on an accepted descriptor. */
static void serve_one(int fd)
{
	char buf[4];
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), 0);
	ck_assert_int_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
	ck_assert_int_eq(memcmp(buf, "ping", 4), 0);
	ck_assert_int_eq(write(fd, "pong", 4), 4);
}

/* A blocking accept returns the real client at once, though two silent ones came first. */
START_TEST(blocking_accept_skips_idle)
{
	struct sockaddr_in sa;
	struct client c;
	int lfd = listener(0, 0, &sa), idle[2], fd;
	int64_t t0;

	alarm(20);
	idle[0] = idle_client(&sa, false);
	idle[1] = idle_client(&sa, true);
	t0 = now_ms();
	client_start(&c, &sa);
	fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	serve_one(fd);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_msg(c.t_done - t0 < 1000, "round trip took %ld ms behind idle connections",
		      (long)(c.t_done - t0));
	close(fd);
	close(idle[0]);
	close(idle[1]);
	close(lfd);
	alarm(0);
}
END_TEST

/*
 * A non-blocking epoll server: silent connections neither make the listener
 * readable nor block accept4; the real client is served at once; the silent
 * ones are reset at the MPA timeout while the server sleeps in epoll_wait.
 */
START_TEST(epoll_server_skips_idle)
{
	struct sockaddr_in sa;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x1234 }, out[4];
	struct client c;
	int lfd = listener(SOCK_NONBLOCK, 1000, &sa), ep = epoll_create1(0), idle[2], fd;
	int64_t t0;

	alarm(20);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev), 0);
	idle[0] = idle_client(&sa, false);
	idle[1] = idle_client(&sa, true);
	/* Not readable for connections whose Request is not in. */
	ck_assert_int_eq(epoll_wait(ep, out, 4, 200), 0);
	t0 = now_ms();
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_msg(now_ms() - t0 < 100, "non-blocking accept4 took %ld ms", (long)(now_ms() - t0));
	client_start(&c, &sa);
	ck_assert_int_eq(epoll_wait(ep, out, 4, 5000), 1);
	ck_assert_uint_eq(out[0].data.u64, 0x1234);
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	serve_one(fd);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_msg(c.t_done - t0 < 1000, "round trip took %ld ms", (long)(c.t_done - t0));
	/*
	 * The silent ones go at the MPA timeout (1 s), nothing else wakes the
	 * server; the one that said nothing at all waits in the kernel first
	 * (TCP_DEFER_ACCEPT: about 1 s), so it goes about 1 s later.
	 */
	ck_assert_int_eq(epoll_wait(ep, out, 4, 1500), 0);
	assert_reset(idle[1], 0);
	ck_assert_int_eq(epoll_wait(ep, out, 4, 1000), 0);
	assert_reset(idle[0], 3000);
	close(fd);
	close(idle[0]);
	close(idle[1]);
	close(ep);
	close(lfd);
	alarm(0);
}
END_TEST

/* poll on the listener: the same, and the listener's flags are the application's. */
START_TEST(poll_server_skips_idle)
{
	struct sockaddr_in sa;
	struct client c;
	int lfd = listener(0, 0, &sa), idle, fd;
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int64_t t0;

	alarm(20);
	ck_assert_int_eq(fcntl(lfd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_eq(fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK), 0);
	ck_assert_int_ne(fcntl(lfd, F_GETFL) & O_NONBLOCK, 0);
	idle = idle_client(&sa, true);
	ck_assert_int_eq(poll(&p, 1, 200), 0);
	t0 = now_ms();
	client_start(&c, &sa);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert(p.revents & POLLIN);
	fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	/* accept (not accept4 with SOCK_NONBLOCK): a blocking socket, as libc gives. */
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	serve_one(fd);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_msg(c.t_done - t0 < 1000, "round trip took %ld ms", (long)(c.t_done - t0));
	/* Non-blocking again, and nothing else waits. */
	ck_assert_int_eq(accept(lfd, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(fd);
	close(idle);
	close(lfd);
	alarm(0);
}
END_TEST

/* accept's address is the peer's, as libc fills it (truncated to the caller's length). */
START_TEST(accept_address)
{
	struct sockaddr_in sa, peer;
	socklen_t len = sizeof(peer), small = 4;
	struct client c;
	int lfd = listener(0, 0, &sa), fd;
	uint8_t tiny[4];

	alarm(20);
	client_start(&c, &sa);
	fd = accept(lfd, (struct sockaddr *)&peer, &len);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(len, sizeof(peer));
	ck_assert_uint_eq(peer.sin_family, AF_INET);
	ck_assert_uint_eq(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	ck_assert_uint_ne(peer.sin_port, 0);
	serve_one(fd);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	close(fd);
	client_start(&c, &sa);
	fd = accept(lfd, (struct sockaddr *)tiny, &small);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(small, sizeof(peer)); /* the real size, as accept reports it */
	serve_one(fd);
	pthread_join(c.th, NULL);
	close(fd);
	close(lfd);
	alarm(0);
}
END_TEST

/* A blocking accept with SO_RCVTIMEO gives EAGAIN after the timeout, as on TCP. */
START_TEST(accept_rcvtimeo)
{
	struct sockaddr_in sa;
	struct timeval tv = { 0, 300000 };
	int lfd = listener(0, 0, &sa), idle;
	int64_t t0, dt;

	alarm(20);
	ck_assert_int_eq(setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	idle = idle_client(&sa, false);
	t0 = now_ms();
	ck_assert_int_eq(accept(lfd, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 250 && dt < 2000, "accept returned after %ld ms", (long)dt);
	close(idle);
	close(lfd);
	alarm(0);
}
END_TEST

/* A plain TCP listener that accepts nothing and answers nothing (the kernel completes TCP). */
static int mute_listener(struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t len = sizeof(*sa);

	ck_assert_int_ge(fd, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

/* A non-blocking DDPMODE connect to |sa| with MPA timeout |mpa_ms|: EINPROGRESS. */
static int nb_connect(const struct sockaddr_in *sa, int mpa_ms)
{
	int fd = ddp_socket(SOCK_NONBLOCK);

	ck_assert_int_eq(setsockopt(fd, SOL_ESOCK, ESOCK_MPA_TIMEOUT, &mpa_ms, sizeof(mpa_ms)), 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa, sizeof(*sa)), -1);
	ck_assert_int_eq(errno, EINPROGRESS);
	return fd;
}

/*
 * A non-blocking connect stays non-blocking through the MPA exchange: a
 * server that never answers makes poll wait only as long as asked, and the
 * connect fails with ETIMEDOUT at its MPA timeout, seen through poll.
 */
START_TEST(nonblocking_connect_poll_silent_server)
{
	struct sockaddr_in sa;
	int lfd = mute_listener(&sa), fd, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;
	int64_t t0, dt;
	char c;

	alarm(20);
	fd = nb_connect(&sa, 700);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	t0 = now_ms();
	ck_assert_int_eq(poll(&p, 1, 100), 0);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 500, "poll(100 ms) took %ld ms", (long)dt);
	/* read and write say "not yet", as on a connecting TCP socket */
	ck_assert_int_eq(read(fd, &c, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 500 && dt < 3000, "the MPA timeout came after %ld ms", (long)dt);
	ck_assert(p.revents & POLLERR);
	ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el), 0);
	ck_assert_int_eq(err, ETIMEDOUT);
	close(fd);
	close(lfd);
	alarm(0);
}
END_TEST

/* The same through epoll: no wait beyond the caller's timeout. */
START_TEST(nonblocking_connect_epoll_silent_server)
{
	struct sockaddr_in sa;
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 7 }, out[2];
	int lfd = mute_listener(&sa), fd, ep = epoll_create1(0);
	int64_t t0, dt;

	alarm(20);
	fd = nb_connect(&sa, 700);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	t0 = now_ms();
	ck_assert_int_eq(epoll_wait(ep, out, 2, 100), 0);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 500, "epoll_wait(100 ms) took %ld ms", (long)dt);
	ck_assert_int_eq(epoll_wait(ep, out, 2, 5000), 1);
	ck_assert_uint_eq(out[0].data.u64, 7);
	ck_assert(out[0].events & EPOLLERR);
	close(fd);
	close(ep);
	close(lfd);
	alarm(0);
}
END_TEST

struct late_server {
	int lfd;
	int delay_ms;
	atomic_bool accepting; /* its accept was called (the Reply can come from then on) */
	pthread_t th;
};

/* Accepts after a delay (the Reply comes only then), echoes 4 octets. */
static void *late_main(void *arg)
{
	struct late_server *ls = arg;
	struct timespec ts = { ls->delay_ms / 1000, (ls->delay_ms % 1000) * 1000000L };
	char buf[4];
	int c;

	nanosleep(&ts, NULL);
	atomic_store(&ls->accepting, true);
	c = accept(ls->lfd, NULL, NULL);
	if (c >= 0 && recv(c, buf, 4, MSG_WAITALL) == 4)
		(void)!write(c, buf, 4);
	if (c >= 0)
		close(c);
	return NULL;
}

/* A slow server: the client polls in short slices, then connects and talks. */
START_TEST(nonblocking_connect_slow_server)
{
	struct sockaddr_in sa;
	struct late_server ls = { .delay_ms = 400 };
	int fd, err = -1, slices = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;
	char buf[4];

	alarm(20);
	ls.lfd = listener(0, 0, &sa);
	ck_assert_int_eq(pthread_create(&ls.th, NULL, late_main, &ls), 0);
	fd = nb_connect(&sa, 5000);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	for (;;) {
		int64_t t0 = now_ms();
		int n = poll(&p, 1, 50);

		ck_assert_msg(now_ms() - t0 < 400, "poll(50 ms) took %ld ms", (long)(now_ms() - t0));
		if (n == 1)
			break;
		ck_assert_int_lt(++slices, 200);
	}
	/* It waited for the server, in slices (how many: as slow as the machine is). */
	ck_assert(atomic_load(&ls.accepting));
	ck_assert_int_ge(slices, 1);
	ck_assert(p.revents & POLLOUT);
	ck_assert(!(p.revents & POLLERR));
	ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el), 0);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(write(fd, "abcd", 4), 4);
	p.events = POLLIN;
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert_int_eq(read(fd, buf, 4), 4);
	ck_assert_int_eq(memcmp(buf, "abcd", 4), 0);
	pthread_join(ls.th, NULL);
	close(fd);
	close(ls.lfd);
	alarm(0);
}
END_TEST

/* ---- MPA revision 1 and the peer's announcement ---- */

/* An echo server for |n| connections on a DDPMODE listener (MPA revision |rev|). */
struct rev_server {
	int lfd, n;
	pthread_t th;
	bool speak_first; /* writes "hi!!" before reading, as SSH or SMTP do */
};

static void *rev_main(void *arg)
{
	struct rev_server *r = arg;

	for (int i = 0; i < r->n; i++) {
		int c = accept(r->lfd, NULL, NULL);
		char buf[4];

		if (c < 0)
			return NULL;
		if (r->speak_first)
			(void)!write(c, "hi!!", 4);
		if (recv(c, buf, 4, MSG_WAITALL) == 4)
			(void)!write(c, buf, 4);
		close(c);
	}
	return NULL;
}

/* ESOCK_MPA_REV 1 on either side or both: connections work, a server may speak first. */
START_TEST(mpa_revision_1)
{
	static const int revs[][2] = { { 1, 2 }, { 2, 1 }, { 1, 1 } };
	struct sockaddr_in sa;

	alarm(30);
	for (int k = 0; k < 3; k++) {
		struct rev_server rs = { .n = 1, .speak_first = k == 2 };
		int fd = ddp_socket(0), crev = revs[k][0], srev = revs[k][1], got = 0;
		socklen_t gl = sizeof(got);
		char buf[4];

		rs.lfd = ddp_socket(0);
		ck_assert_int_eq(setsockopt(rs.lfd, SOL_ESOCK, ESOCK_MPA_REV, &srev, sizeof(srev)), 0);
		{
			socklen_t len = sizeof(sa);

			memset(&sa, 0, sizeof(sa));
			sa.sin_family = AF_INET;
			sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			ck_assert_int_eq(bind(rs.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
			ck_assert_int_eq(getsockname(rs.lfd, (struct sockaddr *)&sa, &len), 0);
			ck_assert_int_eq(listen(rs.lfd, 4), 0);
		}
		ck_assert_int_eq(pthread_create(&rs.th, NULL, rev_main, &rs), 0);
		ck_assert_int_eq(setsockopt(fd, SOL_ESOCK, ESOCK_MPA_REV, &crev, sizeof(crev)), 0);
		ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
			      "client rev %d -> server rev %d: connect: %s", crev, srev, strerror(errno));
		ck_assert_int_eq(getsockopt(fd, SOL_ESOCK, ESOCK_MPA_REV, &got, &gl), 0);
		ck_assert_int_eq(got, 1);
		if (rs.speak_first) {
			ck_assert_int_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
			ck_assert_int_eq(memcmp(buf, "hi!!", 4), 0);
		}
		ck_assert_int_eq(write(fd, "rev1", 4), 4);
		ck_assert_int_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
		ck_assert_int_eq(memcmp(buf, "rev1", 4), 0);
		close(fd);
		pthread_join(rs.th, NULL);
		close(rs.lfd);
	}
	alarm(0);
}
END_TEST

/* esock's announcement at the end of the private data, with receive size |rsize|. */
static void announcement(uint8_t *p, uint32_t rsize)
{
	memcpy(p, "eSoK", 4);
	p[4] = 1;
	p[5] = 1;
	p[6] = 0;
	p[7] = 64;
	p[8] = (uint8_t)(rsize >> 24);
	p[9] = (uint8_t)(rsize >> 16);
	p[10] = (uint8_t)(rsize >> 8);
	p[11] = (uint8_t)rsize;
}

/* Reads one start frame from |fd| (a Request or a Reply); its length. */
static size_t read_start_frame(int fd, uint8_t *buf)
{
	size_t have = 0, need = ESOCK_MPA_HDR_LEN;

	while (have < need) {
		ssize_t n = recv(fd, buf + have, need - have, 0);

		ck_assert_int_gt(n, 0);
		have += (size_t)n;
		need = esock_mpa_frame_need(buf, have);
		ck_assert_uint_le(need, ESOCK_MPA_FRAME_MAX);
	}
	return have;
}

/* A client announcing 1-octet receives is refused by the server with a reject Reply. */
START_TEST(tiny_receive_size_client)
{
	struct sockaddr_in sa;
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .ird = 8, .ord = 8 };
	struct esock_mpa_frame req, rep;
	struct esock_term t;
	uint8_t pd[ESOCK_ANNOUNCE_OCTETS], out[ESOCK_MPA_FRAME_MAX], in[ESOCK_MPA_FRAME_MAX];
	int lfd = listener(SOCK_NONBLOCK, 0, &sa), fd;
	ssize_t n;
	size_t len;

	alarm(20);
	announcement(pd, 1);
	pol.pd = pd;
	pol.pd_len = sizeof(pd);
	ck_assert_int_eq(esock_mpa_request_build(&pol, &req), 0);
	n = esock_mpa_frame_encode(&req, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	fd = idle_client(&sa, false);
	ck_assert_int_eq(send(fd, out, (size_t)n, MSG_NOSIGNAL), n);
	/* The server's accept refuses it (and has nothing to hand out). */
	{
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		(void)poll(&p, 1, 500);
		ck_assert_int_eq(accept(lfd, NULL, NULL), -1);
		ck_assert_int_eq(errno, EAGAIN);
	}
	len = read_start_frame(fd, in);
	ck_assert_int_gt(esock_mpa_frame_decode(&rep, true, in, len, 0, &t), 0);
	ck_assert(rep.reject);
	close(fd);
	close(lfd);
	alarm(0);
}
END_TEST

struct tiny_server {
	int lfd;
	pthread_t th;
};

/* Reads the Request on |c| and answers it with a Reply by |pol|; true when it went out. */
static bool answer_request(int c, const struct esock_mpa_policy *pol)
{
	struct esock_mpa_frame req, rep;
	struct esock_mpa_params mp;
	struct esock_term t;
	uint8_t in[ESOCK_MPA_FRAME_MAX], out[ESOCK_MPA_FRAME_MAX];
	size_t len = read_start_frame(c, in);
	ssize_t n;

	return esock_mpa_frame_decode(&req, false, in, len, 0, &t) > 0 &&
	       esock_mpa_reply_build(pol, &req, &rep, &mp, &t) == 0 &&
	       (n = esock_mpa_frame_encode(&rep, out, sizeof(out))) > 0 &&
	       send(c, out, (size_t)n, MSG_NOSIGNAL) == n;
}

/* Answers the Request with a Reply that announces 1-octet receives, then waits for the end. */
static void *tiny_main(void *arg)
{
	struct tiny_server *ts = arg;
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .markers_tx = true, .p2p = true,
					.rtr = 0x7, .ird = 8, .ord = 8 };
	uint8_t pd[ESOCK_ANNOUNCE_OCTETS];
	int c = accept(ts->lfd, NULL, NULL);
	char ch;

	if (c < 0)
		return NULL;
	announcement(pd, 1);
	pol.pd = pd;
	pol.pd_len = sizeof(pd);
	(void)answer_request(c, &pol);
	while (recv(c, &ch, 1, 0) > 0)
		;
	close(c);
	return NULL;
}

/* A server announcing 1-octet receives: the client's connect fails with EPROTO. */
START_TEST(tiny_receive_size_server)
{
	struct sockaddr_in sa;
	struct tiny_server ts;
	int fd = ddp_socket(0);

	alarm(20);
	ts.lfd = socket(AF_INET, SOCK_STREAM, 0);
	{
		socklen_t len = sizeof(sa);

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ck_assert_int_eq(bind(ts.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(getsockname(ts.lfd, (struct sockaddr *)&sa, &len), 0);
		ck_assert_int_eq(listen(ts.lfd, 4), 0);
	}
	ck_assert_int_eq(pthread_create(&ts.th, NULL, tiny_main, &ts), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), -1);
	ck_assert_int_eq(errno, EPROTO);
	close(fd);
	pthread_join(ts.th, NULL);
	close(ts.lfd);
	alarm(0);
}
END_TEST

struct siw_like {
	int lfd;
	pthread_t th;
	int64_t reply_at, first_at; /* ms: our Reply sent, the client's first octet in */
};

/* Answers like siw 6.1 as responder (RTR mode, a zero-length Write, no private data). */
static void *siw_like_main(void *arg)
{
	struct siw_like *sl = arg;
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .p2p = true,
					.rtr = ESOCK_MPA_RTR_WRITE, .ird = 8, .ord = 8 };
	int c = accept(sl->lfd, NULL, NULL);
	char ch;

	if (c < 0)
		return NULL;
	if (answer_request(c, &pol)) {
		sl->reply_at = now_ms();
		if (recv(c, &ch, 1, 0) == 1)
			sl->first_at = now_ms();
		while (recv(c, &ch, 1, 0) > 0)
			;
	}
	close(c);
	return NULL;
}

/*
 * The siw profile's pause between the Reply and our first FPDU (the RTR):
 * siw 6.1 can crash its host (iw_cm BUG) when the RTR comes right after its
 * Reply.  Kept by a blocking connect and by a non-blocking one, which must
 * not block for it.
 */
START_TEST(siw_profile_pauses_first_fpdu)
{
	alarm(30);
	for (int nb = 0; nb < 2; nb++) {
		struct sockaddr_in sa;
		struct siw_like sl = { 0 };
		int fd = ddp_socket(nb ? SOCK_NONBLOCK : 0);
		socklen_t len = sizeof(sa);

		sl.lfd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ck_assert_int_eq(bind(sl.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(getsockname(sl.lfd, (struct sockaddr *)&sa, &len), 0);
		ck_assert_int_eq(listen(sl.lfd, 4), 0);
		ck_assert_int_eq(pthread_create(&sl.th, NULL, siw_like_main, &sl), 0);
		ck_assert_int_eq(setsockopt(fd, SOL_ESOCK, ESOCK_PEER, "siw", 4), 0);
		if (nb) {
			int64_t t0 = now_ms();
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			socklen_t el = sizeof(int);
			int err = -1;

			ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), -1);
			ck_assert_int_eq(errno, EINPROGRESS);
			while (poll(&p, 1, 5000) == 1 && !(p.revents & (POLLOUT | POLLERR | POLLHUP))) {
				/* each call returns at once: the pause never blocks it */
				ck_assert_int_lt(now_ms() - t0, 5000);
			}
			ck_assert(p.revents & POLLOUT);
			ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el), 0);
			ck_assert_int_eq(err, 0);
		} else {
			ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		}
		ck_assert_int_eq(write(fd, "siw!", 4), 4);
		close(fd);
		pthread_join(sl.th, NULL);
		close(sl.lfd);
		ck_assert_msg(sl.reply_at > 0 && sl.first_at > 0, "no Reply or no first FPDU");
		ck_assert_msg(sl.first_at - sl.reply_at >= 150,
			      "%s connect: first FPDU %lld ms after the Reply (siw profile: 200)",
			      nb ? "non-blocking" : "blocking", (long long)(sl.first_at - sl.reply_at));
	}
	alarm(0);
}
END_TEST

struct rtr_watch {
	int lfd;
	pthread_t th;
	int64_t reply_at, first_at; /* ms: our Reply sent, the client's first octets in */
	ssize_t first_len;          /* octets in the segment that brought them */
	bool hang_up;               /* close once they came (the client waits for us) */
};

/* A responder (generic, RTR allowed) that notes when and how the client's first octets come. */
static void *rtr_watch_main(void *arg)
{
	struct rtr_watch *w = arg;
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .p2p = true, .rtr = 0x7,
					.ird = 8, .ord = 8 };
	int c = accept(w->lfd, NULL, NULL);
	uint8_t buf[512];

	if (c < 0)
		return NULL;
	if (answer_request(c, &pol)) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		struct timespec five = { 5, 0 };

		w->reply_at = now_ms();
		/*
		 * The system call itself: this thread stands in for a peer in
		 * another process, and the library's poll, about to sleep, would
		 * push this process's corked RTRs (ours too, when the client got
		 * the Reply before this thread got here: seen under valgrind).
		 */
		if (syscall(SYS_ppoll, &p, 1UL, &five, NULL, (size_t)8) == 1) {
			w->first_at = now_ms();
			w->first_len = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
		}
		while (!w->hang_up && recv(c, buf, sizeof(buf), 0) > 0)
			;
	}
	close(c);
	return NULL;
}

static void rtr_watch_start(struct rtr_watch *w, struct sockaddr_in *sa, bool hang_up)
{
	socklen_t len = sizeof(*sa);

	memset(w, 0, sizeof(*w));
	w->hang_up = hang_up;
	w->lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(w->lfd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(getsockname(w->lfd, (struct sockaddr *)sa, &len), 0);
	ck_assert_int_eq(listen(w->lfd, 4), 0);
	ck_assert_int_eq(pthread_create(&w->th, NULL, rtr_watch_main, w), 0);
}

static void pause_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

/*
 * The initiator's RTR leaves with its first message, in one segment (one
 * segment and one server wake-up less per connection): the responder sees
 * nothing while the client, connected, does something else, then both at
 * once.  _i == 1: an application that sets TCP_NODELAY (on already) keeps
 * it so.
 */
START_TEST(rtr_goes_with_first_message)
{
	struct sockaddr_in sa;
	struct rtr_watch w;
	int fd = ddp_socket(0), one = 1;
	int64_t wrote_at;

	alarm(20);
	rtr_watch_start(&w, &sa, false);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (_i == 1)
		ck_assert_int_eq(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	/*
	 * (Well below TCP's persist timer, 200 ms at least, which pushes a held
	 * RTR by itself: with 120 ms, a loaded machine that ran the write 80 ms
	 * late saw the RTR alone.)
	 */
	pause_ms(40);
	wrote_at = now_ms();
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	close(fd);
	pthread_join(w.th, NULL);
	close(w.lfd);
	ck_assert_msg(w.first_at >= wrote_at, "the RTR came %lld ms before the first message",
		      (long long)(wrote_at - w.first_at));
	ck_assert_msg(w.first_len > 24, "the first segment held %zd octets (an RTR alone: 20-24)",
		      w.first_len);
}
END_TEST

/* A client that waits for the server to speak first lets its RTR out at once. */
START_TEST(rtr_goes_when_client_waits)
{
	struct sockaddr_in sa;
	struct rtr_watch w;
	int fd = ddp_socket(0);
	char c;

	alarm(20);
	rtr_watch_start(&w, &sa, true);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (_i == 0) {
		ck_assert_int_le(read(fd, &c, 1), 0); /* blocks until the server closes */
	} else {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 5000), 1);
	}
	pthread_join(w.th, NULL);
	close(fd);
	close(w.lfd);
	/*
	 * (TCP's persist timer would push it after 200 ms or more; under
	 * valgrind on a loaded 2-CPU VM the push by the wait took 179 ms once.)
	 */
	ck_assert_msg(w.first_at > 0 && w.first_at - w.reply_at < (tu_under_valgrind() ? 190 : 100),
		      "the RTR came %lld ms after the Reply", (long long)(w.first_at - w.reply_at));
}
END_TEST

/*
 * ESOCK_ACCEPT=both: a plain client that waits for the server's greeting is
 * handed out after the sniff time, and an MPA client that came after it is
 * served first, without waiting for that time.
 */
START_TEST(accept_both_silent_plain_client)
{
	struct sockaddr_in sa;
	struct client c;
	int lfd, plain, fd1, fd2;
	int64_t t0;
	char buf[8];

	alarm(20);
	setenv("ESOCK_ACCEPT", "both", 1);
	setenv("ESOCK_SNIFF_MS", "3000", 1); /* far above the MPA client's time, even under valgrind */
	lfd = listener(0, 0, &sa);
	unsetenv("ESOCK_ACCEPT"); /* the tests after this one may run in the same process */
	unsetenv("ESOCK_SNIFF_MS");
	plain = idle_client(&sa, false);
	t0 = now_ms();
	client_start(&c, &sa);
	fd1 = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd1, 0);
	ck_assert_msg(now_ms() - t0 < 2000, "the MPA client waited %ld ms (sniff time 3000)",
		      (long)(now_ms() - t0));
	serve_one(fd1);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	fd2 = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd2, 0);
	ck_assert_int_eq(write(fd2, "220 hi\r\n", 8), 8); /* the greeting, in plain TCP */
	ck_assert_int_eq(recv(plain, buf, 8, MSG_WAITALL), 8);
	ck_assert_int_eq(memcmp(buf, "220 hi\r\n", 8), 0);
	close(fd1);
	close(fd2);
	close(plain);
	close(lfd);
	alarm(0);
}
END_TEST

/* ---- epoll with many DDPMODE entries ---- */

/*
 * 64 level-triggered DDPMODE entries, one active at a time: each wait
 * reports exactly the active one with the application's data, again while
 * it stays readable, and nothing once it is drained.
 */
START_TEST(epoll_many_entries)
{
	enum { N = 64 };
	int cli[N], srv[N], ep = epoll_create1(0);
	struct epoll_event out[N];
	char c;

	alarm(30);
	pairs(N, cli, srv);
	for (int i = 0; i < N; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 + (uint64_t)i };

		ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, srv[i], &ev), 0);
	}
	ck_assert_int_eq(epoll_wait(ep, out, N, 50), 0);
	for (int k = 0; k < 2 * N; k++) {
		int i = (k * 37) % N;

		ck_assert_int_eq(write(cli[i], "x", 1), 1);
		ck_assert_int_eq(epoll_wait(ep, out, N, 5000), 1);
		ck_assert_uint_eq(out[0].data.u64, 1000 + (uint64_t)i);
		ck_assert(out[0].events & EPOLLIN);
		/* level-triggered: still there until read */
		ck_assert_int_eq(epoll_wait(ep, out, N, 0), 1);
		ck_assert_uint_eq(out[0].data.u64, 1000 + (uint64_t)i);
		ck_assert_int_eq(read(srv[i], &c, 1), 1);
		ck_assert_int_eq(epoll_wait(ep, out, N, 0), 0);
	}
	for (int i = 0; i < N; i++) {
		close(cli[i]);
		close(srv[i]);
	}
	close(ep);
	alarm(0);
}
END_TEST

/* Closing a registered DDPMODE socket (no EPOLL_CTL_DEL) never lets a marker value out. */
START_TEST(epoll_close_registered)
{
	int cli[2], srv[2], ep = epoll_create1(0), pfd[2];
	struct epoll_event ev = { .events = EPOLLIN }, out[4];

	alarm(30);
	pairs(2, cli, srv);
	ck_assert_int_eq(pipe(pfd), 0);
	ev.data.u64 = 1;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, srv[0], &ev), 0);
	ev.data.u64 = 2;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, srv[1], &ev), 0);
	ev.data.u64 = 3;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
	ck_assert_int_eq(write(cli[0], "a", 1), 1);
	ck_assert_int_eq(write(cli[1], "b", 1), 1);
	close(srv[0]);
	close(srv[1]);
	ck_assert_int_eq(write(pfd[1], "p", 1), 1);
	for (int k = 0; k < 3; k++) {
		int n = epoll_wait(ep, out, 4, 200);

		ck_assert_int_le(n, 1);
		for (int i = 0; i < n; i++)
			ck_assert_uint_eq(out[i].data.u64, 3);
	}
	close(cli[0]);
	close(cli[1]);
	close(pfd[0]);
	close(pfd[1]);
	close(ep);
	alarm(0);
}
END_TEST

/* ---- flow control ---- */

struct bulk {
	int fd;
	size_t len;
	pthread_t th;
	ssize_t sent;
};

/* Writes |len| octets of a known pattern in 64 KiB writes. */
static void *bulk_main(void *arg)
{
	struct bulk *b = arg;
	uint8_t *buf = malloc(65536);

	b->sent = 0;
	while (buf && (size_t)b->sent < b->len) {
		size_t n = b->len - (size_t)b->sent < 65536 ? b->len - (size_t)b->sent : 65536;
		ssize_t k;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)((size_t)b->sent + i) * 31 + 7;
		if ((k = write(b->fd, buf, n)) <= 0)
			break;
		b->sent += k;
	}
	free(buf);
	return NULL;
}

/*
 * A receiver that asked for markers and reads slower than the sender
 * writes: TCP pushes back as without markers (the full pool stops reading);
 * no Terminate, every octet arrives in order.
 */
START_TEST(markers_slow_reader)
{
	struct sockaddr_in sa;
	struct acceptor a;
	/*
	 * 4 pool buffers hold 256 KiB: 4 times that (twice under valgrind, where
	 * 1 MiB with markers and CRC took 55 s of a 60 s alarm on a 2-CPU VM).
	 */
	struct bulk b = { .len = tu_under_valgrind() ? 1u << 19 : 1u << 20 };
	int srv, markers = 1, got_markers = 0, depth = 4;
	socklen_t ml = sizeof(got_markers);
	uint8_t *buf = malloc(65536);
	size_t got = 0;

	alarm(80);
	a.lfd = listener(0, 0, &sa);
	ck_assert_int_eq(setsockopt(a.lfd, SOL_ESOCK, ESOCK_MARKERS, &markers, sizeof(markers)), 0);
	/* A small pool: it is full after four messages, long before the data ends. */
	ck_assert_int_eq(setsockopt(a.lfd, SOL_ESOCK, ESOCK_RCVDEPTH, &depth, sizeof(depth)), 0);
	a.n = 1;
	a.srv = &srv;
	ck_assert_int_eq(pthread_create(&a.th, NULL, acceptor_main, &a), 0);
	b.fd = ddp_socket(0);
	ck_assert_int_eq(connect(b.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pthread_join(a.th, NULL);
	ck_assert_int_ge(srv, 0);
	ck_assert_int_eq(getsockopt(srv, SOL_ESOCK, ESOCK_MARKERS, &got_markers, &ml), 0);
	ck_assert_int_eq(got_markers, 1);
	ck_assert_int_eq(pthread_create(&b.th, NULL, bulk_main, &b), 0);
	while (got < b.len) {
		ssize_t n = read(srv, buf, got < (256u << 10) ? 16384 : 65536);

		ck_assert_msg(n > 0, "read %zd (%s) after %zu of %zu octets", n, strerror(errno), got,
			      b.len);
		for (ssize_t i = 0; i < n; i++)
			ck_assert_uint_eq(buf[i], (uint8_t)((got + (size_t)i) * 31 + 7));
		got += (size_t)n;
		if (got < (256u << 10)) { /* slow at first: the sender runs far ahead */
			struct timespec ts = { 0, 5000000 };

			nanosleep(&ts, NULL);
		}
	}
	pthread_join(b.th, NULL);
	ck_assert_int_eq(b.sent, (ssize_t)b.len);
	free(buf);
	close(b.fd);
	close(srv);
	close(a.lfd);
	alarm(0);
}
END_TEST

/* ---- the end of a connection: orderly close, truncation, abort ---- */

/* A hand-made MPA client (esock's announcement, so the server treats it as esock). */
struct raw_mpa {
	int fd;
	struct esock_mpa_tx tx;
	uint32_t msn;
};

static void raw_mpa_connect(struct raw_mpa *r, const struct sockaddr_in *sa)
{
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .markers_tx = true, .ird = 8, .ord = 8 };
	struct esock_mpa_frame req, rep;
	struct esock_mpa_params mp;
	struct esock_term t;
	uint8_t pd[ESOCK_ANNOUNCE_OCTETS], out[ESOCK_MPA_FRAME_MAX], in[ESOCK_MPA_FRAME_MAX];
	ssize_t n;
	size_t len;

	announcement(pd, 65536);
	pol.pd = pd;
	pol.pd_len = sizeof(pd);
	ck_assert_int_eq(esock_mpa_request_build(&pol, &req), 0);
	n = esock_mpa_frame_encode(&req, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	r->fd = idle_client(sa, false);
	ck_assert_int_eq(send(r->fd, out, (size_t)n, MSG_NOSIGNAL), n);
	len = read_start_frame(r->fd, in);
	ck_assert_int_gt(esock_mpa_frame_decode(&rep, true, in, len, 0, &t), 0);
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &mp, &t), 0);
	esock_mpa_tx_init(&r->tx, mp.crc, mp.markers_tx, 0);
	r->msn = 1;
}

/* One Send of |len| octets framed into |out|; returns the FPDU's length. */
static size_t raw_send_fpdu(struct raw_mpa *r, const void *data, size_t len, uint8_t *out, size_t cap)
{
	struct esock_rdmap_msg m;
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
	struct iovec iov[2];
	ssize_t hl, n;

	ck_assert_int_eq(esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND), 0);
	m.ddp.msn = r->msn++;
	hl = esock_rdmap_hdr_encode(&m, hdr, sizeof(hdr));
	ck_assert_int_gt(hl, 0);
	iov[0] = (struct iovec){ hdr, (size_t)hl };
	iov[1] = (struct iovec){ (void *)(uintptr_t)data, len };
	n = esock_mpa_tx_build(&r->tx, iov, 2);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(esock_mpa_tx_flatten(&r->tx, out, cap), n);
	esock_mpa_tx_advance(&r->tx, (size_t)n);
	return (size_t)n;
}

/* The server's descriptor for a hand-made client of |lfd|. */
static int accept_raw(int lfd, struct raw_mpa *r, const struct sockaddr_in *sa)
{
	struct acceptor a = { .lfd = lfd, .n = 1 };
	int srv = -1;

	a.srv = &srv;
	ck_assert_int_eq(pthread_create(&a.th, NULL, acceptor_main, &a), 0);
	raw_mpa_connect(r, sa);
	pthread_join(a.th, NULL);
	ck_assert_int_ge(srv, 0);
	return srv;
}

/* Reads until the end; returns the last read's result, errno in *err. */
static ssize_t read_to_end(int fd, size_t *total, int *err)
{
	char buf[4096];
	ssize_t n;

	*total = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		*total += (size_t)n;
	*err = n < 0 ? errno : 0;
	return n;
}

/*
 * _i 0: a whole Send, then FIN: the data, then EOF (the orderly close).
 * _i 1: half a Send, then FIN: ECONNRESET, never a clean EOF.
 * _i 2: half a Send, then a reset: ECONNRESET.
 */
START_TEST(peer_ends_mid_fpdu)
{
	static const char *what[] = { "FIN after a whole FPDU", "FIN inside an FPDU", "reset inside an FPDU" };
	struct sockaddr_in sa;
	struct raw_mpa r;
	uint8_t data[3000], fpdu[4096];
	int lfd = listener(0, 0, &sa), srv, err;
	size_t n, total;
	ssize_t last;

	alarm(20);
	memset(data, 'q', sizeof(data));
	srv = accept_raw(lfd, &r, &sa);
	n = raw_send_fpdu(&r, data, sizeof(data), fpdu, sizeof(fpdu));
	if (_i == 0) {
		ck_assert_int_eq(send(r.fd, fpdu, n, MSG_NOSIGNAL), (ssize_t)n);
		shutdown(r.fd, SHUT_WR);
	} else {
		ck_assert_int_eq(send(r.fd, fpdu, n / 2, MSG_NOSIGNAL), (ssize_t)(n / 2));
		if (_i == 1) {
			shutdown(r.fd, SHUT_WR);
		} else {
			struct linger l = { 1, 0 };

			ck_assert_int_eq(setsockopt(r.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
			close(r.fd);
			r.fd = -1;
		}
	}
	last = read_to_end(srv, &total, &err);
	if (_i == 0) {
		ck_assert_msg(last == 0 && total == sizeof(data), "%s: read %zd after %zu octets (%s)",
			      what[_i], last, total, strerror(err));
	} else {
		ck_assert_msg(last == -1 && err == ECONNRESET, "%s: read %zd after %zu octets (%s)",
			      what[_i], last, total, strerror(err));
		ck_assert_uint_eq(total, 0);
	}
	if (r.fd >= 0)
		close(r.fd);
	close(srv);
	close(lfd);
	alarm(0);
}
END_TEST

/* SO_LINGER {1, 0} on a DDPMODE socket: close resets, the peer reads ECONNRESET, not EOF. */
START_TEST(linger_zero_aborts)
{
	int cli[1], srv[1], err;
	struct linger l = { 1, 0 };
	size_t total;
	ssize_t last;

	alarm(20);
	pairs(1, cli, srv);
	ck_assert_int_eq(write(srv[0], "bye", 3), 3);
	ck_assert_int_eq(setsockopt(srv[0], SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(srv[0]);
	last = read_to_end(cli[0], &total, &err);
	ck_assert_msg(last == -1 && err == ECONNRESET, "read %zd after %zu octets (%s)", last, total,
		      strerror(err));
	close(cli[0]);
	alarm(0);
}
END_TEST

/* ---- a client that completes MPA and never sends (the responder's first-FPDU hold) ---- */

struct writer {
	int fd;
	pthread_t th;
	ssize_t rc;
	int err;
	int64_t t_done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char buf[100] = "hello";

	w->rc = write(w->fd, buf, sizeof(buf));
	w->err = errno;
	w->t_done = now_ms();
	return NULL;
}

/* A blocking write held for the client's first FPDU ends with EPIPE once the client closes. */
START_TEST(hold_blocking_write_peer_closes)
{
	struct sockaddr_in sa;
	struct raw_mpa r;
	struct writer w = { 0 };
	int lfd = listener(0, 0, &sa);
	int64_t t0;

	alarm(20);
	w.fd = accept_raw(lfd, &r, &sa);
	ck_assert_int_eq(pthread_create(&w.th, NULL, writer_main, &w), 0);
	usleep(300000);
	t0 = now_ms();
	close(r.fd);
	pthread_join(w.th, NULL);
	ck_assert_msg(w.rc == -1 && w.err == EPIPE, "write returned %zd (%s)", w.rc, strerror(w.err));
	ck_assert_msg(w.t_done - t0 < 2000, "write returned %ld ms after the client closed",
		      (long)(w.t_done - t0));
	close(w.fd);
	close(lfd);
	alarm(0);
}
END_TEST

/*
 * A server that speaks first and then waits for nothing (its greeting is a
 * non-blocking write, then it does other work): nobody in the server calls
 * the library, yet the client's RTR must be read (the server may not send
 * before it) and the greeting go out.  The engine reads a held QP that has
 * sends waiting, even though it leaves a socket's input to its callers.
 */
START_TEST(greeting_then_silence)
{
	struct timeval tv = { 5, 0 };
	char buf[8];
	int cli, srv;

	alarm(30);
	pairs(1, &cli, &srv);
	ck_assert_int_eq(setsockopt(cli, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	ck_assert_int_eq(send(srv, "220 hi\r\n", 8, MSG_DONTWAIT), 8);
	/* the server side makes no call from here on: only the client reads */
	ck_assert_int_eq(recv(cli, buf, 8, MSG_WAITALL), 8);
	ck_assert_int_eq(memcmp(buf, "220 hi\r\n", 8), 0);
	close(cli);
	close(srv);
	alarm(0);
}
END_TEST

/*
 * A non-blocking server writes to a client that never sends: the write does
 * not block, close() returns at once (nothing held can ever leave), and the
 * next client is served at once.
 */
START_TEST(hold_nonblocking_close_prompt)
{
	struct sockaddr_in sa;
	struct raw_mpa r;
	struct client c;
	int lfd = listener(0, 0, &sa), fd, fd2;
	int64_t t0;
	ssize_t n;

	alarm(20);
	fd = accept_raw(lfd, &r, &sa);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	t0 = now_ms();
	n = write(fd, "hello", 5);
	ck_assert_msg(n == 5 || (n == -1 && errno == EAGAIN), "write: %zd (%s)", n, strerror(errno));
	ck_assert_msg(now_ms() - t0 < 500, "a non-blocking write took %ld ms", (long)(now_ms() - t0));
	t0 = now_ms();
	close(fd);
	ck_assert_msg(now_ms() - t0 < 1000, "close took %ld ms", (long)(now_ms() - t0));
	t0 = now_ms();
	client_start(&c, &sa);
	fd2 = accept(lfd, NULL, NULL);
	ck_assert_int_ge(fd2, 0);
	serve_one(fd2);
	pthread_join(c.th, NULL);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_msg(c.t_done - t0 < 1000, "the next client took %ld ms", (long)(c.t_done - t0));
	close(fd2);
	close(r.fd);
	close(lfd);
	alarm(0);
}
END_TEST

struct drainer {
	int fd;
	pthread_t th;
	size_t got;
};

/* Waits, then reads until EOF. */
static void *drainer_main(void *arg)
{
	struct drainer *d = arg;
	char *buf = malloc(1 << 16);
	ssize_t n;

	usleep(200000);
	while (buf && (n = read(d->fd, buf, 1 << 16)) > 0)
		d->got += (size_t)n;
	free(buf);
	return NULL;
}

/*
 * Edge-triggered EPOLLOUT: reported once, then, after non-blocking writes
 * filled everything (EAGAIN), reported again when the peer makes room, with
 * no epoll_wait in between (nginx's pattern; a lost edge hung its transfers).
 */
START_TEST(epoll_edge_out_after_eagain)
{
	int cli[1], srv[1], ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.u64 = 9 }, out[2];
	struct drainer d = { 0 };
	char *buf = calloc(1, 1 << 16);
	size_t sent = 0;
	ssize_t n;

	alarm(60);
	pairs(1, cli, srv);
	ck_assert_int_eq(fcntl(srv[0], F_SETFL, fcntl(srv[0], F_GETFL) | O_NONBLOCK), 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, srv[0], &ev), 0);
	ck_assert_int_eq(epoll_wait(ep, out, 2, 1000), 1);
	ck_assert(out[0].events & EPOLLOUT);
	while ((n = write(srv[0], buf, 1 << 16)) > 0 && sent < (256u << 20))
		sent += (size_t)n;
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(errno, EAGAIN);
	d.fd = cli[0];
	ck_assert_int_eq(pthread_create(&d.th, NULL, drainer_main, &d), 0);
	ck_assert_int_eq(epoll_wait(ep, out, 2, 10000), 1);
	ck_assert_uint_eq(out[0].data.u64, 9);
	ck_assert(out[0].events & EPOLLOUT);
	close(srv[0]);
	pthread_join(d.th, NULL);
	ck_assert_uint_eq(d.got, sent);
	close(cli[0]);
	close(ep);
	free(buf);
	alarm(0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock peers");
	TCase *tc = tcase_create("idle");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, blocking_accept_skips_idle);
	tcase_add_test(tc, epoll_server_skips_idle);
	tcase_add_test(tc, poll_server_skips_idle);
	tcase_add_test(tc, accept_address);
	tcase_add_test(tc, accept_rcvtimeo);
	tcase_add_test(tc, accept_both_silent_plain_client);
	suite_add_tcase(s, tc);
	tc = tcase_create("connect");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, nonblocking_connect_poll_silent_server);
	tcase_add_test(tc, nonblocking_connect_epoll_silent_server);
	tcase_add_test(tc, nonblocking_connect_slow_server);
	suite_add_tcase(s, tc);
	tc = tcase_create("mpa");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mpa_revision_1);
	tcase_add_test(tc, tiny_receive_size_client);
	tcase_add_test(tc, tiny_receive_size_server);
	tcase_add_test(tc, siw_profile_pauses_first_fpdu);
	tcase_add_loop_test(tc, rtr_goes_with_first_message, 0, 2);
	tcase_add_loop_test(tc, rtr_goes_when_client_waits, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("epoll");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, epoll_many_entries);
	tcase_add_test(tc, epoll_close_registered);
	tcase_add_test(tc, epoll_edge_out_after_eagain);
	suite_add_tcase(s, tc);
	tc = tcase_create("flow");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, markers_slow_reader);
	suite_add_tcase(s, tc);
	tc = tcase_create("end");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, peer_ends_mid_fpdu, 0, 3);
	tcase_add_test(tc, linger_zero_aborts);
	suite_add_tcase(s, tc);
	tc = tcase_create("hold");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, hold_blocking_write_peer_closes);
	tcase_add_test(tc, hold_nonblocking_close_prompt);
	tcase_add_test(tc, greeting_then_silence);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK); /* each test in its own process (settings read once) */
	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
