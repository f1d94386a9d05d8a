/* SPDX-License-Identifier: MIT */
/*
 * The raw kernel TCP baseline: blocking sockets with TCP_NODELAY (as the
 * endpoint sets it), one write per message and reads until the message is
 * complete, over the same buffers the endpoint uses.  For each endpoint test
 * the same octets move the same way:
 *
 *   latency  send, write: size octets each way; read: a 28-octet request
 *            (the size of an RDMA Read Request) answered by size octets;
 *   bandwidth send, write: count messages client -> server, then a one-octet
 *            answer; read: a one-octet request, count messages back.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/bench/bench.h"

#define READ_REQ_LEN 28

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_listen_any(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &l) < 0)
		bench_die("TCP listen: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

int tcp_accept1(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		bench_die("TCP accept: %s", strerror(errno));
	nodelay(fd);
	return fd;
}

int tcp_connect_lo(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		bench_die("TCP connect: %s", strerror(errno));
	nodelay(fd);
	return fd;
}

static void put(int fd, const uint8_t *p, size_t len)
{
	bench_put(fd, p, len, "TCP");
}

static void get(int fd, uint8_t *p, size_t len)
{
	bench_get(fd, p, len, "TCP");
}

void tcp_lat_client(int fd, struct bench_mem *m, const struct bench_job *j, double *rtt_us)
{
	uint8_t *rbuf = m->base, *sbuf = m->base + m->half;
	size_t out = j->op == OP_READ ? READ_REQ_LEN : j->size;

	for (uint64_t i = 0; i < j->count; i++) {
		double t0 = bench_now();

		put(fd, sbuf, out);
		get(fd, rbuf, j->size);
		rtt_us[i] = (bench_now() - t0) * 1e6;
	}
}

void tcp_lat_server(int fd, struct bench_mem *m, const struct bench_job *j)
{
	uint8_t *rbuf = m->base, *sbuf = m->base + m->half;
	size_t in = j->op == OP_READ ? READ_REQ_LEN : j->size;

	for (uint64_t i = 0; i < j->count; i++) {
		get(fd, rbuf, in);
		if (j->op != OP_READ) /* (an RDMA Read's responder is the library, not the program) */
			bench_think(j->think_us);
		put(fd, sbuf, j->size);
	}
}

/* Returns MB/s (10^6 octets per second) of message payload, end to end. */
double tcp_bw_client(int fd, struct bench_mem *m, const struct bench_job *j)
{
	uint8_t *rbuf = m->base, *sbuf = m->base + m->half, b = 1;
	double t0 = bench_now();

	if (j->op == OP_READ) {
		put(fd, &b, 1);
		for (uint64_t i = 0; i < j->count; i++)
			get(fd, rbuf, j->size);
	} else {
		for (uint64_t i = 0; i < j->count; i++)
			put(fd, sbuf, j->size);
		get(fd, &b, 1);
	}
	return (double)j->count * (double)j->size / (bench_now() - t0) / 1e6;
}

void tcp_bw_server(int fd, struct bench_mem *m, const struct bench_job *j)
{
	uint8_t *rbuf = m->base, *sbuf = m->base + m->half, b = 1;

	if (j->op == OP_READ) {
		get(fd, &b, 1);
		for (uint64_t i = 0; i < j->count; i++)
			put(fd, sbuf, j->size);
	} else {
		for (uint64_t i = 0; i < j->count; i++)
			get(fd, rbuf, j->size);
		put(fd, &b, 1);
	}
}
