/* SPDX-License-Identifier: MIT */
/* Helpers for the socket-level tests (sock_util.h). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <esock/esock.h>

#include "tests/integration/sock_util.h"

static const int one = 1;

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ddp_socket(int type)
{
	int fd = socket(AF_INET, SOCK_STREAM | type, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	return fd;
}

/* A DDPMODE listener on 127.0.0.1 (any port); |mpa_ms| > 0 sets its MPA timeout. */
int listener(int type, int mpa_ms, struct sockaddr_in *sa)
{
	int fd = ddp_socket(type);
	socklen_t len = sizeof(*sa);

	if (mpa_ms > 0)
		ck_assert_int_eq(setsockopt(fd, SOL_ESOCK, ESOCK_MPA_TIMEOUT, &mpa_ms, sizeof(mpa_ms)), 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	return fd;
}

void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;

	for (int i = 0; i < a->n; i++)
		a->srv[i] = accept(a->lfd, NULL, NULL);
	return NULL;
}

/* |n| DDPMODE connections: client ends in |cli|, server ends in |srv| (accepted in order). */
void pairs(int n, int *cli, int *srv)
{
	struct sockaddr_in sa;
	struct acceptor a = { .lfd = listener(0, 0, &sa), .n = n, .srv = srv };

	ck_assert_int_eq(pthread_create(&a.th, NULL, acceptor_main, &a), 0);
	for (int i = 0; i < n; i++) {
		cli[i] = ddp_socket(0);
		ck_assert_int_eq(connect(cli[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	pthread_join(a.th, NULL);
	for (int i = 0; i < n; i++)
		ck_assert_int_ge(srv[i], 0);
	close(a.lfd);
}

#define ECHO_MAX (1u << 20)
static uint8_t echo_out[ECHO_MAX], echo_in[ECHO_MAX];

static void *echo_client_main(void *arg)
{
	struct echo_client *ec = arg;
	int fd = ddp_socket(0);
	size_t sent = 0, total = ec->total;

	if (connect(fd, (struct sockaddr *)&ec->sa, sizeof(ec->sa)) < 0) {
		close(fd);
		return NULL;
	}
	for (size_t i = 0; i < total; i++)
		echo_out[i] = (uint8_t)(i * 7 + i / 4093);
	while (ec->echoed < total) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < total ? POLLOUT : 0) };

		if (poll(&p, 1, 10000) != 1)
			break;
		if ((p.revents & POLLOUT) && sent < total) {
			size_t k = total - sent > ec->piece ? ec->piece : total - sent;
			ssize_t n = send(fd, echo_out + sent, k, MSG_DONTWAIT);

			if (n > 0)
				sent += (size_t)n;
			/*
			 * Done sending: say so.  (A close alone sends no FIN while a
			 * process forked from this one holds a copy of the socket, as
			 * with TCP; the tests' servers fork.)
			 */
			if (sent == total)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & POLLIN) {
			ssize_t n = recv(fd, echo_in + ec->echoed, total - ec->echoed, MSG_DONTWAIT);

			if (n <= 0 && !(n < 0 && errno == EAGAIN))
				break;
			if (n > 0)
				ec->echoed += (size_t)n;
		}
	}
	ec->ok = ec->echoed == total && memcmp(echo_in, echo_out, total) == 0;
	close(fd);
	return NULL;
}

void echo_client_start(struct echo_client *ec)
{
	ck_assert_uint_le(ec->total, ECHO_MAX);
	ck_assert_uint_gt(ec->piece, 0);
	ec->echoed = 0;
	ec->ok = false;
	ck_assert_int_eq(pthread_create(&ec->th, NULL, echo_client_main, ec), 0);
}

void echo_client_join(struct echo_client *ec)
{
	pthread_join(ec->th, NULL);
}
