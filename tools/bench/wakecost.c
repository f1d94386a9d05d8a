/* SPDX-License-Identifier: MIT */
/*
 * esock-wakecost: what a wake-up across CPUs costs on this machine.  A
 * thread on CPU A sleeps in epoll_wait on an eventfd; a thread on CPU B
 * writes the eventfd every GAP microseconds (spinning between, so that it
 * never sleeps itself).  Printed: the sleeper's CPU time per wake-up (its
 * epoll_wait, the switch to idle and back), the time the waker's write takes
 * when the other sleeps (the wake-up: on a virtual machine an IPI to a
 * halted virtual CPU), and the same write with nobody asleep (the system
 * call alone).  The TCP Server's figures at few clients are counts of these
 * (docs/tcpserver.md).
 *
 *   esock-wakecost [-n WAKES] [-g GAP_US] [-a CPU_A] [-b CPU_B]
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int efd, epfd;
static long wakes_asked, wakes_seen;
static int gap_us = 100, cpu_a = 0, cpu_b = 1;
static atomic_bool finished;
static double write_ns_sleeping;

static double ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *waker(void *arg)
{
	uint64_t one = 1;
	double sum = 0;

	(void)arg;
	if (pin(cpu_b) < 0)
		perror("esock-wakecost: CPU B");
	for (long i = 0; i < wakes_asked; i++) {
		double t = ns(CLOCK_MONOTONIC), t0;

		while (ns(CLOCK_MONOTONIC) - t < gap_us * 1e3)
			; /* (the sleeper goes back to sleep meanwhile) */
		t0 = ns(CLOCK_MONOTONIC);
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			perror("esock-wakecost: write");
		sum += ns(CLOCK_MONOTONIC) - t0;
	}
	write_ns_sleeping = sum / (double)wakes_asked;
	atomic_store(&finished, true);
	if (write(efd, &one, sizeof(one)) != sizeof(one))
		perror("esock-wakecost: write");
	return NULL;
}

/* A write of an eventfd nobody waits on: the system call alone. */
static double write_alone(long n)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t one = 1, v;
	double t0, t;

	if (fd < 0)
		return -1;
	t0 = ns(CLOCK_MONOTONIC);
	for (long i = 0; i < n; i++)
		if (write(fd, &one, sizeof(one)) != sizeof(one) || ((i & 1023) == 1023 && read(fd, &v, sizeof(v)) < 0))
			break;
	t = ns(CLOCK_MONOTONIC) - t0;
	close(fd);
	return t / (double)n;
}

int main(int argc, char **argv)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLET };
	pthread_t th;
	double c0, cpu;
	int opt;

	wakes_asked = 20000;
	while ((opt = getopt(argc, argv, "n:g:a:b:h")) != -1) {
		switch (opt) {
		case 'n': wakes_asked = atol(optarg); break;
		case 'g': gap_us = atoi(optarg); break;
		case 'a': cpu_a = atoi(optarg); break;
		case 'b': cpu_b = atoi(optarg); break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: esock-wakecost [-n WAKES] [-g GAP_US] [-a CPU_A] [-b CPU_B]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (wakes_asked < 1 || gap_us < 1) {
		fprintf(stderr, "esock-wakecost: -n and -g must be positive\n");
		return 2;
	}
	if (pin(cpu_a) < 0) {
		perror("esock-wakecost: CPU A");
		return 1;
	}
	if ((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 || (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &e) < 0) {
		perror("esock-wakecost");
		return 1;
	}
	c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	if ((errno = pthread_create(&th, NULL, waker, NULL)) != 0) {
		perror("esock-wakecost: thread");
		return 1;
	}
	while (!atomic_load(&finished)) {
		struct epoll_event out;

		if (epoll_wait(epfd, &out, 1, -1) == 1)
			wakes_seen++;
	}
	cpu = ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_join(th, NULL);
	printf("esock-wakecost: CPU %d sleeps, CPU %d wakes it every %d us: %ld wake-ups; "
	       "sleeper %.1f us of CPU per wake-up; waker's write %.1f us (nobody asleep: %.1f us)\n",
	       cpu_a, cpu_b, gap_us, wakes_seen, cpu / 1e3 / (double)(wakes_seen ? wakes_seen : 1),
	       write_ns_sleeping / 1e3, write_alone(wakes_asked) / 1e3);
	return 0;
}
