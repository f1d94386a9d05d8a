/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the socket-level tests (programs linked against libesock.so,
 * using the ordinary calls): DDPMODE sockets, a listener on loopback,
 * connected pairs, and a clock.  Failures are Check assertions.
 */
#ifndef ESOCK_TESTS_SOCK_UTIL_H
#define ESOCK_TESTS_SOCK_UTIL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t now_ms(void);

/* A TCP socket (|type|: SOCK_NONBLOCK, ...) switched to DDPMODE. */
int ddp_socket(int type);

/* A DDPMODE listener on 127.0.0.1, any port (in |sa|); |mpa_ms| > 0 sets its MPA timeout. */
int listener(int type, int mpa_ms, struct sockaddr_in *sa);

/* A thread accepting |n| connections of |lfd| into |srv| (for clients that connect blocking). */
struct acceptor {
	int lfd, n, *srv;
	pthread_t th;
};
void *acceptor_main(void *arg);

/* |n| DDPMODE connections: client ends in |cli|, server ends in |srv| (accepted in order). */
void pairs(int n, int *cli, int *srv);

/*
 * A DDPMODE client in its own thread that writes |total| octets of a
 * pattern (at most 1 MiB) in pieces of |piece| and reads the echo back as
 * it comes: ok once all came back equal.  Its buffers are static, not
 * malloc'd: a child forked meanwhile copies the heap but not the thread's
 * stack, and valgrind would call such blocks lost there.
 */
struct echo_client {
	struct sockaddr_in sa;
	size_t total, piece;
	pthread_t th;
	size_t echoed;
	bool ok;
};
void echo_client_start(struct echo_client *ec);
void echo_client_join(struct echo_client *ec);

#endif
