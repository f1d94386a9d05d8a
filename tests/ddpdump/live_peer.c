/* SPDX-License-Identifier: MIT */
/*
 * live_peer PORT: a minimal MPA exchange over 127.0.0.1:PORT for ddpdump's
 * live-capture test.  A forked server accepts; the client sends an MPA v2
 * Request (CRC on), the server replies, the client sends three Sends and an
 * RDMA Write, the server one Send; both close.  Frames come from the
 * project's encoders.  Exits 0 when the exchange completed.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/wire.h>

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = read(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Sends one single-segment message through |tx|. */
static int send_msg(int fd, struct esock_mpa_tx *tx, struct esock_rdmap_msg *m, const void *pl, size_t len)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], wire[4096];
	ssize_t hl = esock_rdmap_hdr_encode(m, hdr, sizeof(hdr)), n;
	struct iovec v[2] = { { hdr, (size_t)hl }, { (void *)(uintptr_t)pl, len } };

	if (hl < 0 || (n = esock_mpa_tx_build(tx, v, 2)) < 0 || esock_mpa_tx_flatten(tx, wire, sizeof(wire)) != n)
		return -1;
	esock_mpa_tx_advance(tx, (size_t)n);
	return write_all(fd, wire, (size_t)n);
}

static int frame_io(int fd, const struct esock_mpa_frame *out, bool reply_expected)
{
	uint8_t buf[ESOCK_MPA_FRAME_MAX];
	ssize_t n = esock_mpa_frame_encode(out, buf, sizeof(buf));
	struct esock_mpa_frame in;

	if (n < 0 || write_all(fd, buf, (size_t)n) < 0)
		return -1;
	if (read_all(fd, buf, ESOCK_MPA_HDR_LEN) < 0 ||
	    read_all(fd, buf + ESOCK_MPA_HDR_LEN, esock_mpa_frame_need(buf, ESOCK_MPA_HDR_LEN) - ESOCK_MPA_HDR_LEN) < 0)
		return -1;
	return esock_mpa_frame_decode(&in, reply_expected, buf, esock_mpa_frame_need(buf, ESOCK_MPA_HDR_LEN), 0,
				      NULL) < 0 ? -1 : 0;
}

static int server(int lfd)
{
	int fd = accept(lfd, NULL, NULL), one = 1;
	uint8_t buf[ESOCK_MPA_FRAME_MAX], rest[8192];
	struct esock_mpa_frame rep = { .reply = true, .crc = true, .enhanced = true, .rev = 2, .ird = 4, .ord = 4 };
	struct esock_mpa_tx tx;
	struct esock_rdmap_msg m;

	if (fd < 0)
		return 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (read_all(fd, buf, ESOCK_MPA_HDR_LEN) < 0 ||
	    read_all(fd, buf + ESOCK_MPA_HDR_LEN, esock_mpa_frame_need(buf, ESOCK_MPA_HDR_LEN) - ESOCK_MPA_HDR_LEN) < 0)
		return 1;
	if (write_all(fd, rest, (size_t)esock_mpa_frame_encode(&rep, rest, sizeof(rest))) < 0)
		return 1;
	esock_mpa_tx_init(&tx, true, false, 0);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	m.ddp.msn = 1;
	if (send_msg(fd, &tx, &m, "pong", 4) < 0)
		return 1;
	while (read(fd, rest, sizeof(rest)) > 0) /* drain the client's FPDUs */
		;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct esock_mpa_frame req = { .crc = true, .enhanced = true, .rev = 2, .ird = 4, .ord = 4 };
	struct esock_mpa_tx tx;
	struct esock_rdmap_msg m;
	static uint8_t data[1000];
	int lfd, fd, one = 1, status;
	pid_t pid;

	if (argc < 2)
		return 2;
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
		perror("live_peer: listen");
		return 1;
	}
	pid = fork();
	if (pid == 0)
		_exit(server(lfd));
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || frame_io(fd, &req, true) < 0) {
		perror("live_peer: connect");
		kill(pid, 9);
		return 1;
	}
	esock_mpa_tx_init(&tx, true, false, 0);
	for (uint32_t i = 1; i <= 3; i++) {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		m.ddp.msn = i;
		if (send_msg(fd, &tx, &m, "ping", 4) < 0)
			return 1;
	}
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
	m.ddp.stag = 0x1234;
	m.ddp.to = 0x8000;
	if (send_msg(fd, &tx, &m, data, sizeof(data)) < 0)
		return 1;
	usleep(100000);
	close(fd);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
