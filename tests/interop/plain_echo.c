/* SPDX-License-Identifier: MIT */
/*
 * plain-echo: an echo server and its client written against plain sockets
 * only (no esock header, no DDPMODE call), so that the interop runs it as an
 * unmodified program under the interposer (LD_PRELOAD=libesock.so,
 * ESOCK_DDPMODE=all) on either backend.
 *
 *   plain-echo -s ADDR PORT [-e|-E] [-n CONNS] [-d MS]
 *                                 serve CONNS connections (default 1) one after
 *                                 another, echoing until EOF; non-blocking, waits in
 *                                 poll (-e: epoll; -E: epoll, each connection in the set
 *                                 once, edge-triggered for input and room to send);
 *                                 -d: sleeps MS before each read (a slow reader: the
 *                                 writer runs ahead of it)
 *   plain-echo -c ADDR PORT [-e] [-w OCTETS] [-d MS] [SIZE ...]
 *                                 for each SIZE (default 1 4093 65536 1048576),
 *                                 writes SIZE patterned octets and reads them back,
 *                                 checking each one; non-blocking, waits in poll
 *                                 (-e: epoll, the socket added to the set before
 *                                 its connect); -d: as the server's
 * The client keeps at most WINDOW octets unechoed (-w: OCTETS, 0 no bound: then
 * only the connection's own flow control keeps the writer from overrunning a
 * reader that cannot stop reading, docs/libesock.md "Flow control").
 * Exit 0 when every octet came back right; prints one line per size.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define WINDOW (256 * 1024)
#define PIECE 16384
#define TIMEOUT_MS 60000

static size_t window = WINDOW; /* -w */
static int read_delay_ms;      /* -d */
static bool edge;              /* -E */
static int edge_fd = -1;       /* the connection in the set edge-triggered (-E) */

static uint8_t pattern(size_t i, size_t size)
{
	return (uint8_t)(i * 131 + size * 7 + (i >> 8));
}

static int addr_of(const char *a, const char *p, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(p));
	return inet_pton(AF_INET, a, &sa->sin_addr) == 1 ? 0 : -1;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Waits for |events| on |fd| with poll or through |ep| (epoll); 0, or -1 on timeout/error. */
static int wait_for(int fd, short events, int ep)
{
	if (ep >= 0 && fd == edge_fd) { /* (after EAGAIN only: wait for the next edge) */
		struct epoll_event got;

		return epoll_wait(ep, &got, 1, TIMEOUT_MS) == 1 ? 0 : -1;
	}
	if (ep >= 0) {
		struct epoll_event ev = { .events = (events & POLLIN ? EPOLLIN : 0) |
						    (events & POLLOUT ? EPOLLOUT : 0),
					  .data.fd = fd };
		struct epoll_event got;

		if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) < 0)
			return -1;
		return epoll_wait(ep, &got, 1, TIMEOUT_MS) == 1 ? 0 : -1;
	}
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -1;
}

/* One connection: echoes until EOF.  0, or -1. */
static int echo(int fd, int ep)
{
	static uint8_t buf[65536];
	size_t total = 0;

	if (nonblock(fd) < 0)
		return -1;
	if (ep >= 0) {
		struct epoll_event ev = { .events = edge ? EPOLLIN | EPOLLOUT | EPOLLET : EPOLLIN,
					  .data.fd = fd };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -1;
		edge_fd = edge ? fd : -1;
	}
	for (;;) {
		ssize_t n, off = 0;

		if (read_delay_ms)
			usleep((useconds_t)read_delay_ms * 1000);
		n = read(fd, buf, sizeof(buf));

		if (n == 0)
			break;
		if (n < 0 && errno == EAGAIN) {
			if (wait_for(fd, POLLIN, ep) < 0) {
				fprintf(stderr, "server: no input for %d ms\n", TIMEOUT_MS);
				return -1;
			}
			continue;
		}
		if (n < 0) {
			perror("server: read");
			return -1;
		}
		total += (size_t)n;
		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EAGAIN) {
				if (wait_for(fd, POLLOUT, ep) < 0) {
					fprintf(stderr, "server: no room to send for %d ms\n", TIMEOUT_MS);
					return -1;
				}
				continue;
			}
			if (w < 0) {
				perror("server: write");
				return -1;
			}
			off += w;
		}
	}
	if (ep >= 0)
		epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	edge_fd = -1;
	printf("server: echoed %zu octets\n", total);
	return 0;
}

static int serve(const struct sockaddr_in *sa, bool use_epoll, int conns)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1, ep = -1, rc = 0;

	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(ls, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(ls, 8) < 0 || nonblock(ls) < 0) {
		perror("server: listen");
		return 1;
	}
	if (use_epoll) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = ls };

		if ((ep = epoll_create1(0)) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev) < 0) {
			perror("server: epoll");
			return 1;
		}
	}
	{
		struct sockaddr_in b;
		socklen_t bl = sizeof(b);

		if (getsockname(ls, (struct sockaddr *)&b, &bl) < 0) {
			perror("server: getsockname");
			return 1;
		}
		printf("server: listening on port %u (%s)\n", ntohs(b.sin_port),
		       edge ? "epoll, edge-triggered" : use_epoll ? "epoll" : "poll");
	}
	for (int i = 0; i < conns && rc == 0; i++) {
		int fd;

		while ((fd = accept(ls, NULL, NULL)) < 0 && errno == EAGAIN)
			if (wait_for(ls, POLLIN, ep) < 0) {
				fprintf(stderr, "server: no connection for %d ms\n", TIMEOUT_MS);
				return 1;
			}
		if (fd < 0) {
			perror("server: accept");
			return 1;
		}
		rc = echo(fd, ep);
		close(fd);
	}
	close(ls);
	if (ep >= 0)
		close(ep);
	return rc ? 1 : 0;
}

/* Writes |size| octets and reads them back, at most |window| unechoed.  0, or -1. */
static int round_trip(int fd, size_t size, int ep)
{
	static uint8_t out[PIECE], in[65536];
	size_t sent = 0, got = 0;

	while (got < size) {
		short events = POLLIN;

		if (sent < size && (!window || sent - got < window)) {
			size_t n = size - sent < PIECE ? size - sent : PIECE;
			ssize_t w;

			for (size_t i = 0; i < n; i++)
				out[i] = pattern(sent + i, size);
			if ((w = write(fd, out, n)) > 0) {
				sent += (size_t)w;
				continue;
			}
			if (w < 0 && errno != EAGAIN) {
				perror("client: write");
				return -1;
			}
			events |= POLLOUT;
		}
		if (read_delay_ms)
			usleep((useconds_t)read_delay_ms * 1000);
		ssize_t r = read(fd, in, sizeof(in));

		if (r == 0) {
			fprintf(stderr, "client: EOF after %zu of %zu octets\n", got, size);
			return -1;
		}
		if (r < 0 && errno != EAGAIN) {
			perror("client: read");
			return -1;
		}
		if (r > 0) {
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern(got + (size_t)i, size)) {
					fprintf(stderr, "client: octet %zu of %zu wrong\n", got + (size_t)i, size);
					return -1;
				}
			got += (size_t)r;
			continue;
		}
		if (wait_for(fd, events, ep) < 0) {
			fprintf(stderr, "client: stalled at %zu of %zu octets\n", got, size);
			return -1;
		}
	}
	return 0;
}

static int client(const struct sockaddr_in *sa, bool use_epoll, char **sizes, int nsizes)
{
	static char *def[] = { "1", "4093", "65536", "1048576" };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ep = -1;

	if (fd >= 0 && use_epoll) { /* (in the set before it connects: the set must follow it) */
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		if ((ep = epoll_create1(0)) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			perror("client: epoll");
			return 1;
		}
	}
	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || nonblock(fd) < 0) {
		perror("client: connect");
		return 1;
	}
	if (nsizes == 0) {
		sizes = def;
		nsizes = 4;
	}
	for (int i = 0; i < nsizes; i++) {
		size_t size = strtoul(sizes[i], NULL, 10);

		if (round_trip(fd, size, ep) < 0)
			return 1;
		printf("client: %zu octets echoed and checked\n", size);
	}
	close(fd);
	if (ep >= 0)
		close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	bool use_epoll = false;
	int conns = 1, opt;
	char mode = 0;

	while ((opt = getopt(argc, argv, "sceEn:d:w:")) != -1) {
		switch (opt) {
		case 's':
		case 'c':
			mode = (char)opt;
			break;
		case 'E':
			edge = true;
			/* fall through */
		case 'e':
			use_epoll = true;
			break;
		case 'n':
			conns = atoi(optarg);
			break;
		case 'd':
			read_delay_ms = atoi(optarg);
			break;
		case 'w':
			window = strtoul(optarg, NULL, 10);
			break;
		default:
			mode = 0;
			optind = argc;
		}
	}
	if (!mode || argc - optind < 2 || addr_of(argv[optind], argv[optind + 1], &sa) < 0) {
		fprintf(stderr, "usage: plain-echo -s ADDR PORT [-e|-E] [-n CONNS] [-d MS] | "
				"-c ADDR PORT [-e] [-w OCTETS] [-d MS] [SIZE ...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mode == 's')
		return serve(&sa, use_epoll, conns);
	return client(&sa, use_epoll, argv + optind + 2, argc - optind - 2);
}
