/* SPDX-License-Identifier: MIT */
/*
 * reg-echo: a program that registers its buffer through the extended API
 * and then uses the plain socket calls (for offload-test.sh, under
 * esock-run --tcpserver=...:reg).  Listens on 127.0.0.1, prints the port,
 * registers one 1 MiB buffer on the listener (printing "reg: ok" or the
 * error), echoes one connection through that buffer with recv and send, and
 * prints "echoed N".  Then it waits for a line on its standard input (the
 * script looks at tcpserverd's counters meanwhile), deregisters and ends.
 * Links nothing of esock's: the extended API is found with getsockopt.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "esock/esock.h"

static char buf[1 << 20];

static int die(const char *what)
{
	fprintf(stderr, "reg-echo: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa), al;
	const struct esock_api *api = NULL;
	unsigned long long total = 0;
	uint32_t stag = 0;
	int ls, cs, rc = -ENOSYS;
	char line[8];

	if ((ls = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(ls, 4) < 0 || getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		return die("listener");
	printf("%u\n", ntohs(sa.sin_port));
	al = sizeof(api);
	if (getsockopt(-1, SOL_ESOCK, ESOCK_GET_API, &api, &al) == 0 && api)
		rc = api->reg(ls, buf, sizeof(buf), ESOCK_REG_LOCAL_WRITE, &stag);
	printf("reg: %s\n", rc == 0 ? "ok" : strerror(-rc));
	fflush(stdout);
	if ((cs = accept(ls, NULL, NULL)) < 0)
		return die("accept");
	for (;;) {
		ssize_t n = recv(cs, buf, sizeof(buf), 0), at = 0;

		if (n < 0)
			return die("recv");
		if (n == 0)
			break;
		while (at < n) {
			ssize_t k = send(cs, buf + at, (size_t)(n - at), MSG_NOSIGNAL);

			if (k < 0)
				return die("send");
			at += k;
		}
		total += (unsigned long long)n;
	}
	close(cs);
	printf("echoed %llu\n", total);
	fflush(stdout);
	(void)!fgets(line, sizeof(line), stdin);
	if (rc == 0 && (rc = api->dereg(ls, stag)) != 0) {
		fprintf(stderr, "reg-echo: dereg: %s\n", strerror(-rc));
		return 1;
	}
	close(ls);
	return 0;
}
