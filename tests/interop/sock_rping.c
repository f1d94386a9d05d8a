/* SPDX-License-Identifier: MIT */
/*
 * sock-rping: an rping client written against the extended sockets, for the
 * interop proof that a DDPMODE socket talks to a verbs peer (rping -s on
 * kernel siw).  Ordinary calls carry the Sends (write of a 16-octet buffer
 * descriptor, read of the server's "go ahead"); the extended-call table
 * registers the two buffers the server reads and writes by RDMA.  Same
 * options as iwping's client, so tests/interop/iwping-vs-rping.sh runs it:
 *   sock-rping -c -a ADDR [-p PORT] [-S SIZE] [-C COUNT] [-V] [-v] [--crc|--no-crc]
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <esock/esock.h>

static void put_desc(uint8_t *d, const void *buf, uint32_t stag, uint32_t size)
{
	uint64_t a = (uintptr_t)buf;

	for (int i = 0; i < 8; i++)
		d[i] = (uint8_t)(a >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		d[8 + i] = (uint8_t)(stag >> (24 - 8 * i));
		d[12 + i] = (uint8_t)(size >> (24 - 8 * i));
	}
}

static int full(int fd, void *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (char *)buf + done, len - done)
				: read(fd, (char *)buf + done, len - done);

		if (n <= 0) {
			fprintf(stderr, "sock-rping: %s: %s\n", out ? "write" : "read",
				n ? strerror(errno) : "the server closed the connection");
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* rping's ping data: "rdma-ping-N: ", then 'A'..'z' rising from |first|, NUL-terminated. */
static void fill_ping(char *buf, int size, int ping, int first)
{
	int i = snprintf(buf, (size_t)size, "rdma-ping-%d: ", ping), ch = first;

	for (; i < size; i++) {
		buf[i] = (char)ch;
		ch = ch == 'z' ? 'A' : ch + 1;
	}
	buf[size - 1] = '\0';
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7174";
	int size = 64, count = 10, validate = 0, verbose = 0, crc = -1, client = 0;
	const struct esock_api *api;
	socklen_t len = sizeof(api);
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	uint32_t sstag, rstag;
	char *start, *rdma;
	uint8_t desc[16], ack[16];
	int fd, on = 1, first = 'A';

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-c"))
			client = 1;
		else if (!strcmp(a, "-V"))
			validate = 1;
		else if (!strcmp(a, "-v"))
			verbose = 1;
		else if (!strcmp(a, "--crc"))
			crc = 1;
		else if (!strcmp(a, "--no-crc"))
			crc = 0;
		else if (v && !strcmp(a, "-a"))
			addr = argv[++i];
		else if (v && !strcmp(a, "-p"))
			port = argv[++i];
		else if (v && !strcmp(a, "-S"))
			size = atoi(argv[++i]);
		else if (v && !strcmp(a, "-C"))
			count = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: sock-rping -c -a ADDR [-p PORT] [-S SIZE] [-C COUNT] [-V] [-v] "
					"[--crc|--no-crc]\n");
			return 2;
		}
	}
	if (!client || !addr || size < 16 || count < 1) {
		fprintf(stderr, "sock-rping: only the client role (-c -a ADDR), size >= 16, count >= 1\n");
		return 2;
	}
	if (getsockopt(-1, SOL_ESOCK, ESOCK_GET_API, &api, &len) < 0) {
		fprintf(stderr, "sock-rping: libesock is not there (%s)\n", strerror(errno));
		return 1;
	}
	if (getaddrinfo(addr, port, &hints, &res) != 0) {
		fprintf(stderr, "sock-rping: cannot resolve %s\n", addr);
		return 1;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	start = calloc(1, (size_t)size);
	rdma = calloc(1, (size_t)size);
	if (fd < 0 || !start || !rdma || setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, sizeof(on)) < 0 ||
	    (crc >= 0 && setsockopt(fd, SOL_ESOCK, ESOCK_CRC, &crc, sizeof(crc)) < 0)) {
		perror("sock-rping: DDPMODE socket");
		return 1;
	}
	/* The server RDMA-Reads the start buffer and RDMA-Writes the RDMA buffer. */
	if (api->reg(fd, start, (size_t)size, ESOCK_REG_REMOTE_READ, &sstag) < 0 ||
	    api->reg(fd, rdma, (size_t)size, ESOCK_REG_LOCAL_WRITE | ESOCK_REG_REMOTE_WRITE, &rstag) < 0) {
		fprintf(stderr, "sock-rping: cannot register the buffers\n");
		return 1;
	}
	if (connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		perror("sock-rping: connect");
		return 1;
	}
	freeaddrinfo(res);
	for (int ping = 0; ping < count; ping++) {
		fill_ping(start, size, ping, first);
		put_desc(desc, start, sstag, (uint32_t)size);
		if (full(fd, desc, sizeof(desc), 1) || full(fd, ack, sizeof(ack), 0))
			return 1;
		put_desc(desc, rdma, rstag, (uint32_t)size);
		if (full(fd, desc, sizeof(desc), 1) || full(fd, ack, sizeof(ack), 0))
			return 1;
		if (validate && memcmp(start, rdma, (size_t)size) != 0) {
			fprintf(stderr, "sock-rping: ping %d: data mismatch\n", ping);
			return 1;
		}
		if (verbose)
			printf("ping data: %.*s\n", size, rdma);
		first = first == 'z' ? 'A' : first + 1;
	}
	close(fd);
	free(start);
	free(rdma);
	return 0;
}
