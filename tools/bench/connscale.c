/* SPDX-License-Identifier: MIT */
/*
 * esock-connscale: what many connections cost.  A plain TCP program (run it
 * plain, then under esock-run --ddp, as tools/connscale.sh does): a server
 * process accepts with a non-blocking epoll loop and echoes; the client opens
 * connections in steps, each confirmed by a one-octet round trip, and prints
 * after every step the step's setup rate and both processes' resident memory
 * and descriptor counts.  Then, optionally, A connections exchange
 * |bytes|-octet messages (all written, then all read back) for |seconds|.
 *
 *   esock-connscale MAX STEP [ACTIVE BYTES SECONDS]
 *   CONNSCALE_CPUS=split|same   client on CPU 0, server on CPU 1 (split) or
 *                               both on CPU 0 (same); default: the scheduler's
 *   CONNSCALE_INFLIGHT=K        up to K connections being set up at once
 *                               (non-blocking connects; default 1: one after
 *                               another, so the step's rate is one connection's
 *                               latency; with K > 1 it is what the two
 *                               processes' CPUs can do, a server's accept rate
 *                               under many clients)
 *
 * Output: CSV lines "conns,step_ms,conn_per_s,srv_rss_kb,srv_fds,cli_rss_kb,cli_fds,
 * connect_us,rtt_us,cli_cpu_us,srv_cpu_us" (the step's medians of connect's
 * time and of the first round trip after it; each process's CPU time per
 * connection of the step, all its threads: steadier than a rate on a shared
 * machine), "throughput,active,bytes,MB_per_s" and
 * "busy,active,srv_rss_kb" (the server's memory after the traffic).
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Calls |each| (when not NULL) for every entry of /proc/PID/SUB but . and ..;
 * returns how many there were, or -1 if the directory cannot be read.
 */
static long proc_entries(pid_t pid, const char *sub, void (*each)(pid_t, const char *, void *),
			 void *arg)
{
	char path[64];
	struct dirent *d;
	long n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, sub);
	if (!(dir = opendir(path)))
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			n++;
			if (each)
				each(pid, d->d_name, arg);
		}
	closedir(dir);
	return n;
}

static long nfds(pid_t pid)
{
	return proc_entries(pid, "fd", NULL, NULL);
}

static void add_task_ns(pid_t pid, const char *tid, void *arg)
{
	char p[320];
	unsigned long long run = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, tid);
	if ((f = fopen(p, "r"))) {
		if (fscanf(f, "%llu", &run) == 1)
			*(double *)arg += (double)run;
		fclose(f);
	}
}

/*
 * CPU time of all of |pid|'s threads so far (ns), from each one's schedstat:
 * nanoseconds, where /proc/PID/stat counts 10 ms ticks.  The process's
 * threads that already ended are not in it (none of ours end while it runs).
 */
static double cpu_ns(pid_t pid)
{
	double ns = 0;

	proc_entries(pid, "task", add_task_ns, &ns);
	return ns;
}

/* The server: accept everything, echo everything, until the client goes. */
static void serve(int lfd, int ready_fd)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd }, out[256];
	static char buf[1 << 16];

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("server epoll");
	if (write(ready_fd, "r", 1) != 1)
		die("server ready");
	close(ready_fd);
	for (;;) {
		int n = epoll_wait(ep, out, 256, -1);

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = out[i].data.fd;

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct epoll_event ce = { .events = EPOLLIN, .data.fd = c };

					if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce) < 0)
						die("epoll_ctl conn");
				}
				continue;
			}
			for (;;) {
				ssize_t r = read(fd, buf, sizeof(buf)), w = 0;

				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					close(fd);
					break;
				}
				if (r < 0)
					break;
				while (w < r) {
					ssize_t k = write(fd, buf + w, (size_t)(r - w));

					if (k > 0) {
						w += k;
					} else if (k < 0 && errno == EAGAIN) {
						struct pollfd p = { .fd = fd, .events = POLLOUT };

						poll(&p, 1, 1000);
					} else {
						break;
					}
				}
			}
		}
	}
}

/* One connection, confirmed by a one-octet round trip; how long each took (µs). */
static int open_one(const struct sockaddr_in *sa, double *connect_us, double *rtt_us)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char c = 'x';
	double t0 = now_s(), t1;

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		die("connect");
	t1 = now_s();
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
		die("first round trip");
	*connect_us = (t1 - t0) * 1e6;
	*rtt_us = (now_s() - t1) * 1e6;
	return fd;
}

/*
 * |k| connections into |fds|, up to |inflight| of them being set up at once: a
 * non-blocking connect, then (once writable) the one-octet round trip; each
 * is made blocking again when done.  Per connection its connect and round
 * trip times (µs) as open_one gives them.
 */
static void open_many(const struct sockaddr_in *sa, int *fds, int k, int inflight, double *cus, double *rus)
{
	enum { CONNECTING, WRITING, READING };
	int ep = epoll_create1(0), started = 0, done = 0, busy = 0;
	double *t0 = calloc((size_t)k, sizeof(double)), *t1 = calloc((size_t)k, sizeof(double));
	char *st = calloc((size_t)k, 1);

	if (ep < 0 || !t0 || !t1 || !st)
		die("open_many");
	while (done < k) {
		struct epoll_event ev[64];
		int n;

		for (; busy < inflight && started < k; started++, busy++) {
			int i = started, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
			struct epoll_event e = { .events = EPOLLOUT, .data.u32 = (uint32_t)i };

			t0[i] = now_s();
			if (fd < 0 || (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS))
				die("connect");
			fds[i] = fd;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0)
				die("epoll_ctl (setup)");
		}
		if ((n = epoll_wait(ep, ev, 64, 10000)) <= 0)
			die("epoll_wait (setup)");
		for (int j = 0; j < n; j++) {
			int i = (int)ev[j].data.u32, fd = fds[i], one = 1, err = 0;
			socklen_t el = sizeof(err);
			char c = 'x';
			struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

			if (st[i] == CONNECTING) {
				if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
					errno = err ? err : errno;
					die("connect (non-blocking)");
				}
				t1[i] = now_s();
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				st[i] = WRITING;
			}
			if (st[i] == WRITING) {
				ssize_t w = write(fd, &c, 1);

				if (w < 0 && errno == EAGAIN)
					continue; /* (writable again later: still in for EPOLLOUT) */
				if (w != 1 || epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e) < 0)
					die("first write");
				st[i] = READING;
				continue;
			}
			ssize_t r = read(fd, &c, 1);

			if (r < 0 && errno == EAGAIN)
				continue;
			if (r != 1 || epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL) < 0 ||
			    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
				die("first round trip");
			cus[i] = (t1[i] - t0[i]) * 1e6;
			rus[i] = (now_s() - t1[i]) * 1e6;
			busy--;
			done++;
		}
	}
	close(ep);
	free(t0);
	free(t1);
	free(st);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* CONNSCALE_CPUS: this process on CPU |client_side| ? 0 : (split ? 1 : 0). */
static void place(bool client_side)
{
	const char *e = getenv("CONNSCALE_CPUS");
	cpu_set_t set;

	if (!e || (strcmp(e, "split") != 0 && strcmp(e, "same") != 0))
		return;
	CPU_ZERO(&set);
	CPU_SET(!client_side && strcmp(e, "split") == 0 ? 1 : 0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		die("CONNSCALE_CPUS");
}

/*
 * All |a| connections write |bytes| octets, then all read them back; MB/s
 * over |secs|, and the messages moved (*msgs).
 */
static double throughput(const int *fds, int a, size_t bytes, double secs, double *msgs)
{
	char *buf = malloc(bytes), *in = malloc(bytes);
	double t0 = now_s(), t;
	size_t moved = 0;

	if (!buf || !in)
		die("malloc");
	memset(buf, 'd', bytes);
	do {
		for (int i = 0; i < a; i++)
			if (write(fds[i], buf, bytes) != (ssize_t)bytes)
				die("write");
		for (int i = 0; i < a; i++) {
			size_t got = 0;

			while (got < bytes) {
				ssize_t r = read(fds[i], in + got, bytes - got);

				if (r <= 0)
					die("read");
				got += (size_t)r;
			}
		}
		moved += (size_t)a * bytes;
	} while ((t = now_s() - t0) < secs);
	free(buf);
	free(in);
	*msgs = (double)moved / (double)bytes;
	return (double)moved / t / 1e6;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int max, step, active = 0, lfd, pipefd[2], *fds, inflight;
	double *cus, *rus;
	double secs = 0;
	size_t bytes = 0;
	char c;
	pid_t srv;

	if (argc != 3 && argc != 6) {
		fprintf(stderr, "usage: esock-connscale MAX STEP [ACTIVE BYTES SECONDS]\n");
		return 2;
	}
	max = atoi(argv[1]);
	step = atoi(argv[2]);
	if (argc == 6) {
		active = atoi(argv[3]);
		bytes = (size_t)atol(argv[4]);
		secs = atof(argv[5]);
	}
	inflight = getenv("CONNSCALE_INFLIGHT") ? atoi(getenv("CONNSCALE_INFLIGHT")) : 1;
	if (max <= 0 || step <= 0 || active < 0 || active > max || inflight < 1)
		return 2;
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) < 0 || listen(lfd, 4096) < 0)
		die("listen");
	if (pipe(pipefd) < 0)
		die("pipe");
	if ((srv = fork()) == 0) {
		/* The client may die (EMFILE at the descriptor limit): the server goes with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() == 1)
			_exit(0);
		close(pipefd[0]);
		place(false);
		serve(lfd, pipefd[1]);
		_exit(0);
	}
	close(lfd);
	close(pipefd[1]);
	place(true);
	if (read(pipefd[0], &c, 1) != 1)
		die("server start");
	close(pipefd[0]);
	if (!(fds = calloc((size_t)max, sizeof(*fds))) || !(cus = calloc((size_t)step, sizeof(*cus))) ||
	    !(rus = calloc((size_t)step, sizeof(*rus))))
		die("calloc");
	printf("conns,step_ms,conn_per_s,srv_rss_kb,srv_fds,cli_rss_kb,cli_fds,connect_us,rtt_us,"
	       "cli_cpu_us,srv_cpu_us\n");
	printf("0,0,0,%ld,%ld,%ld,%ld,0,0,0,0\n", rss_kb(srv), nfds(srv), rss_kb(getpid()), nfds(getpid()));
	for (int n = 0; n < max;) {
		int k = n + step > max ? max - n : step;
		double c0 = cpu_ns(getpid()), s0 = cpu_ns(srv), t0 = now_s(), dt, c1, s1;

		if (inflight > 1)
			open_many(&sa, fds + n, k, inflight, cus, rus);
		else
			for (int i = 0; i < k; i++)
				fds[n + i] = open_one(&sa, &cus[i], &rus[i]);
		dt = now_s() - t0;
		c1 = cpu_ns(getpid());
		s1 = cpu_ns(srv);
		n += k;
		printf("%d,%.1f,%.0f,%ld,%ld,%ld,%ld,%.1f,%.1f,%.1f,%.1f\n", n, dt * 1e3, k / dt, rss_kb(srv),
		       nfds(srv), rss_kb(getpid()), nfds(getpid()), median(cus, k), median(rus, k),
		       (c1 - c0) / 1e3 / k, (s1 - s0) / 1e3 / k);
		fflush(stdout);
	}
	if (active) {
		/*
		 * And the CPU time per message of each process (all its threads):
		 * on a shared machine its ratio to plain TCP's is steadier than
		 * the throughput's, which CPU time taken by others moves too.
		 */
		double c0 = cpu_ns(getpid()), s0 = cpu_ns(srv), msgs, mbs;

		mbs = throughput(fds, active, bytes, secs, &msgs);
		printf("throughput,%d,%zu,%.1f,%.2f,%.2f\n", active, bytes, mbs,
		       (cpu_ns(getpid()) - c0) / 1e3 / msgs, (cpu_ns(srv) - s0) / 1e3 / msgs);
		/* What the traffic left in the server's memory (receive buffers it touched). */
		printf("busy,%d,%ld\n", active, rss_kb(srv));
	}
	for (int i = 0; i < max; i++)
		close(fds[i]);
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	free(fds);
	free(cus);
	free(rus);
	return 0;
}
