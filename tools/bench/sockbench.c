/* SPDX-License-Identifier: MIT */
/*
 * esock-sockbench: a plain TCP program (no esock code in it) that measures
 * a ping-pong round trip and a one-way stream over loopback.  Run it as it
 * is, under the preload (pass-through cost) and under the preload with
 * ESOCK_DDPMODE=all (DDPMODE sockets): tools/sockbench.sh does all three in
 * one run and prints the ratios.
 *
 *   esock-sockbench lat SIZE ITERS [same|split]   -> "lat SIZE p50_us"
 *   esock-sockbench bw SIZE TOTAL_MB [same|split] -> "bw SIZE MB/s"
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int full(int fd, char *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int lfd, fd, status, split;
	size_t size, count;
	char *buf;
	pid_t pid;

	if (argc < 4 || (strcmp(argv[1], "lat") && strcmp(argv[1], "bw"))) {
		fprintf(stderr, "usage: %s lat SIZE ITERS [same|split] | bw SIZE TOTAL_MB [same|split]\n",
			argv[0]);
		return 2;
	}
	size = strtoull(argv[2], NULL, 0);
	count = strtoull(argv[3], NULL, 0);
	split = argc > 4 && strcmp(argv[4], "split") == 0;
	if (!size || !count || !(buf = calloc(1, size)))
		return 2;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0 || listen(lfd, 1) < 0) {
		perror("listen");
		return 1;
	}
	if ((pid = fork()) == 0) {
		int c;

		pin(split ? 1 : 0);
		if ((c = accept(lfd, NULL, NULL)) < 0)
			_exit(1);
		if (argv[1][0] == 'l') {
			for (size_t i = 0; i < count; i++)
				if (full(c, buf, size, 0) || full(c, buf, size, 1))
					_exit(1);
		} else {
			for (size_t got = 0; got < count << 20;) {
				ssize_t n = read(c, buf, size);

				if (n <= 0)
					_exit(1);
				got += (size_t)n;
			}
			if (write(c, buf, 1) != 1)
				_exit(1);
		}
		close(c);
		_exit(0);
	}
	pin(0);
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		return 1;
	}
	if (argv[1][0] == 'l') {
		double *t = calloc(count, sizeof(double));
		size_t warm = count / 10;

		for (size_t i = 0; i < count; i++) {
			double t0 = now_us();

			if (full(fd, buf, size, 1) || full(fd, buf, size, 0)) {
				fprintf(stderr, "ping-pong failed\n");
				return 1;
			}
			t[i] = now_us() - t0;
		}
		qsort(t + warm, count - warm, sizeof(double), cmp_d);
		printf("lat %zu %.2f\n", size, t[warm + (count - warm) / 2]);
		free(t);
	} else {
		size_t total = count << 20, sent = 0;
		double t0 = now_us();

		while (sent < total) {
			size_t n = total - sent < size ? total - sent : size;

			if (full(fd, buf, n, 1)) {
				fprintf(stderr, "stream failed\n");
				return 1;
			}
			sent += n;
		}
		if (full(fd, buf, 1, 0)) {
			fprintf(stderr, "no answer\n");
			return 1;
		}
		printf("bw %zu %.1f\n", size, (double)total / (now_us() - t0));
	}
	close(fd);
	waitpid(pid, &status, 0);
	free(buf);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
