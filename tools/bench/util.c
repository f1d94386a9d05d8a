/* SPDX-License-Identifier: MIT */
/*
 * esock-bench helpers: the clock, fatal errors (which also stop the server
 * child, so that a failed run never leaves a process behind), CPU pinning,
 * size lists, the exact-length control channel and percentiles.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/bench.h"

static pid_t child_pid;

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_think(int us)
{
	double end;

	if (us <= 0)
		return;
	end = bench_now() + us * 1e-6;
	while (bench_now() < end)
		;
}

void bench_set_child(pid_t pid)
{
	child_pid = pid;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "esock-bench[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (child_pid > 0) { /* by PID: the server of this run, nothing else */
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
	}
	exit(1);
}

/* Pins the calling thread; threads it creates later (the engine) inherit it. */
void bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		bench_die("cannot pin to CPU %d: %s", cpu, strerror(errno));
}

static int parse_one(const char *s, char **end, size_t *out)
{
	unsigned long long v = strtoull(s, end, 10);

	if (*end == s)
		return -1;
	if (**end == 'K' || **end == 'k')
		v <<= 10, (*end)++;
	else if (**end == 'M' || **end == 'm')
		v <<= 20, (*end)++;
	if (v == 0 || v > BENCH_MAX_SIZE)
		return -1;
	*out = (size_t)v;
	return 0;
}

/*
 * "64,4K,1M" lists sizes; "1..16M" is every power of two in the range.
 * Returns how many, or -1 on a malformed list.
 */
int bench_parse_sizes(const char *s, size_t *out, int max)
{
	int n = 0;
	char *end;

	while (*s) {
		size_t a, b;

		if (parse_one(s, &end, &a) < 0)
			return -1;
		b = a;
		if (strncmp(end, "..", 2) == 0 && parse_one(end + 2, &end, &b) < 0)
			return -1;
		for (size_t v = a; v <= b && n < max; v = v * 2)
			out[n++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n;
}

/* Writes all of |p| to a blocking descriptor; |what| names it in the fatal error. */
void bench_put(int fd, const void *p, size_t len, const char *what)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			bench_die("%s write: %s", what, n < 0 ? strerror(errno) : "closed");
		b += n;
		len -= (size_t)n;
	}
}

/* Reads exactly |len| octets; end of file is fatal too (the peer is gone). */
void bench_get(int fd, void *p, size_t len, const char *what)
{
	uint8_t *b = p;

	while (len) {
		ssize_t n = read(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			bench_die("%s read: %s", what, n < 0 ? strerror(errno) : "peer gone");
		b += n;
		len -= (size_t)n;
	}
}

void ctl_put(int fd, const void *p, size_t len)
{
	bench_put(fd, p, len, "control channel");
}

void ctl_get(int fd, void *p, size_t len)
{
	bench_get(fd, p, len, "control channel");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

/* Nearest-rank percentile of a sorted sample. */
double bench_pct(const double *sorted, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)n + 0.5);

	if (n == 0)
		return 0;
	i = i ? i - 1 : 0;
	return sorted[i < n ? i : n - 1];
}

const char *bench_op_name(int op)
{
	static const char *const names[] = { "send", "write", "read" };

	return op >= 0 && op < OP_COUNT ? names[op] : "?";
}

const char *bench_cpus_name(enum bench_cpus c)
{
	return c == CPUS_SAME ? "same" : c == CPUS_SPLIT ? "split" : "none";
}

void bench_machine(char *buf, size_t len)
{
	char model[128] = "unknown CPU", line[256];
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "?");
	gmtime_r(&now, &tm);
	snprintf(buf, len, "%s, %ld cores, kernel %s, %04d-%02d-%02d", model,
		 sysconf(_SC_NPROCESSORS_ONLN), u.release, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}
