/* SPDX-License-Identifier: MIT */
/*
 * sock-api-ops: the extended calls (esock/esock.h) on a DDPMODE socket, for
 * the interop proof that they work on either backend (the user-level
 * endpoint, or the kernel's iWARP through rdma-core) against either.
 *
 *   sock-api-ops -s ADDR PORT   registers a region of SIZE octets for remote
 *                               read and write, filled with pattern A, and
 *                               sends its descriptor (address, STag: 16
 *                               octets, big-endian); after the client's
 *                               "done" (an extended-API Send), checks that
 *                               the first half holds pattern B and the
 *                               second still A, and answers Y or N
 *   sock-api-ops -c ADDR PORT   RDMA-Reads the whole region (checks A),
 *                               RDMA-Writes pattern B over its first half,
 *                               then Sends "done"; every operation through
 *                               the extended calls, completions from an
 *                               event queue; exit 0 once the server said Y
 * Operation buffers are registered regions: the verbs backend needs them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <esock/esock.h>

#define SIZE (1u << 20)

static uint8_t pattern(size_t i, int which)
{
	return (uint8_t)(which == 'A' ? i * 7 + (i >> 9) : i * 13 + 5 + (i >> 10));
}

static const struct esock_api *api;

static int ddp_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;

	if (fd < 0 || setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, sizeof(on)) < 0) {
		perror("DDPMODE");
		exit(1);
	}
	return fd;
}

static int full(int fd, void *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (char *)buf + done, len - done)
				: read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Waits for the event of |tag| on |eq|: its status (0 or -errno), or -ETIMEDOUT. */
static int event_of(int eq, uint64_t tag)
{
	struct esock_event ev;
	int n = api->eq_poll(eq, &ev, 1, 30000);

	if (n != 1)
		return n < 0 ? n : -ETIMEDOUT;
	if (ev.tag != tag) {
		fprintf(stderr, "event for tag %llu, not %llu\n", (unsigned long long)ev.tag,
			(unsigned long long)tag);
		return -EPROTO;
	}
	return ev.status;
}

static int server(const struct sockaddr_in *sa)
{
	int ls = ddp_socket(), one = 1, c, bad = 0;
	uint8_t *region = malloc(SIZE), desc[16], done[4], verdict;
	uint32_t stag;

	if (setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(ls, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(ls, 4) < 0) {
		perror("server: listen");
		return 1;
	}
	{
		struct sockaddr_in b;
		socklen_t bl = sizeof(b);

		if (getsockname(ls, (struct sockaddr *)&b, &bl) < 0)
			return 1;
		printf("server: listening on port %u\n", ntohs(b.sin_port));
	}
	if ((c = accept(ls, NULL, NULL)) < 0) {
		perror("server: accept");
		return 1;
	}
	for (size_t i = 0; i < SIZE; i++)
		region[i] = pattern(i, 'A');
	if (api->reg(c, region, SIZE,
		     ESOCK_REG_LOCAL_WRITE | ESOCK_REG_REMOTE_WRITE | ESOCK_REG_REMOTE_READ, &stag) < 0) {
		fprintf(stderr, "server: reg failed\n");
		return 1;
	}
	put64(desc, (uintptr_t)region);
	put64(desc + 8, stag);
	if (full(c, desc, sizeof(desc), 1) < 0 || full(c, done, sizeof(done), 0) < 0 ||
	    memcmp(done, "done", 4) != 0) {
		fprintf(stderr, "server: no \"done\" from the client\n");
		return 1;
	}
	for (size_t i = 0; i < SIZE; i++)
		bad += region[i] != pattern(i, i < SIZE / 2 ? 'B' : 'A');
	verdict = bad ? 'N' : 'Y';
	printf("server: region checked after the client's RDMA Write: %d octets wrong\n", bad);
	if (full(c, &verdict, 1, 1) < 0)
		return 1;
	close(c);
	close(ls);
	free(region);
	return bad ? 1 : 0;
}

static int client(const struct sockaddr_in *sa)
{
	int fd = ddp_socket(), eq, rc, bad = 0;
	uint8_t desc[16], verdict = 0;
	uint8_t *local = malloc(SIZE + 4);
	uint64_t raddr;
	uint32_t rkey, lkey;

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    full(fd, desc, sizeof(desc), 0) < 0) {
		perror("client: connect");
		return 1;
	}
	raddr = get64(desc);
	rkey = (uint32_t)get64(desc + 8);
	if ((eq = api->eq_create(16)) < 0 ||
	    api->bind_eq(fd, ESOCK_OP_BIT(ESOCK_OP_SEND) | ESOCK_OP_BIT(ESOCK_OP_WRITE) |
				     ESOCK_OP_BIT(ESOCK_OP_READ), eq) < 0 ||
	    (rc = api->reg(fd, local, SIZE + 4, ESOCK_REG_LOCAL_WRITE, &lkey)) < 0) {
		fprintf(stderr, "client: event queue or registration failed\n");
		return 1;
	}
	/* An unregistered buffer: the verbs backend refuses it, the user-level one takes any. */
	{
		static uint8_t loose[8];

		for (size_t i = 0; i < sizeof(loose); i++) /* (what is there: the checks stand) */
			loose[i] = pattern(i, 'A');
		rc = api->write(fd, loose, sizeof(loose), raddr, rkey, 9);
		printf("client: an RDMA Write from unregistered memory: %s\n",
		       rc == 0 ? "taken" : strerror(-rc));
		if (rc == 0 && event_of(eq, 9) != 0)
			return 1;
	}
	if ((rc = api->read(fd, local, SIZE, raddr, rkey, 1)) < 0 || (rc = event_of(eq, 1)) < 0) {
		fprintf(stderr, "client: RDMA Read: %s\n", strerror(-rc));
		return 1;
	}
	for (size_t i = 0; i < SIZE; i++)
		bad += local[i] != pattern(i, 'A');
	printf("client: RDMA Read of %u octets: %d wrong\n", SIZE, bad);
	for (size_t i = 0; i < SIZE / 2; i++)
		local[i] = pattern(i, 'B');
	if ((rc = api->write(fd, local, SIZE / 2, raddr, rkey, 2)) < 0 || (rc = event_of(eq, 2)) < 0) {
		fprintf(stderr, "client: RDMA Write: %s\n", strerror(-rc));
		return 1;
	}
	printf("client: RDMA Write of %u octets done\n", SIZE / 2);
	memcpy(local + SIZE, "done", 4);
	if ((rc = api->send(fd, local + SIZE, 4, 3)) < 0 || (rc = event_of(eq, 3)) < 0) {
		fprintf(stderr, "client: Send: %s\n", strerror(-rc));
		return 1;
	}
	if (full(fd, &verdict, 1, 0) < 0 || verdict != 'Y') {
		fprintf(stderr, "client: the server found its region wrong (%c)\n", verdict ? verdict : '-');
		return 1;
	}
	printf("client: the server checked the Write: ok\n");
	api->eq_destroy(eq);
	close(fd);
	free(local);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(api);

	if (argc != 4 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c")) ||
	    inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: sock-api-ops -s|-c ADDR PORT\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (getsockopt(-1, SOL_ESOCK, ESOCK_GET_API, &api, &len) < 0) {
		fprintf(stderr, "sock-api-ops: not under libesock\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return argv[1][1] == 's' ? server(&sa) : client(&sa);
}
