/* SPDX-License-Identifier: MIT */
/*
 * tcpserverd: the TCP Server.  Carries out the socket calls of host
 * processes that reach it through shared-memory channels (chan.h) or, from
 * other nodes, over esock QPs (rchan.h), speaking TSP (proto/tsp.h), on
 * sockets it owns.  One thread, one event loop: the
 * hosts' queues are looked at in turn (spinning for a while when there is
 * work, so that a busy host makes no system call), and when all is quiet
 * it sleeps in epoll on the hosts' bells, their Unix sockets and the
 * network sockets that calls wait on.  A call that would block (accept,
 * recv, a blocking connect or send) is parked on its socket and answered
 * when the socket is ready; nothing else waits for it.
 *
 *   tcpserverd -s PATH [-l ADDR:PORT] [-H MAX_HOSTS] [-S MAX_SOCKETS] [-c CPU] [-p SPIN_US | -P MAX_SPIN_US] [-v]
 *
 * SIGUSR1 prints the counters; SIGTERM and SIGINT end it cleanly (every
 * host's sockets closed, the Unix socket removed).  docs/tcpserver.md.
 *
 * This file: the options, the event loop and the end.  tsd.h says which
 * file holds what.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "endpoint/ep_spin.h"
#include "tcpserver/daemon/tsd.h"

struct tsd d = { .max_hosts = 64, .max_socks = 4096, .spin_us = -1, .spin_cap_us = EP_SPIN_CAP_US, .lfd = -1, .epfd = -1 };

static void print_counters(void)
{
	fprintf(stderr, "tcpserverd: hosts refused %llu, dropped %llu; spin window %d us (%s)\n",
		(unsigned long long)d.refused_hosts, (unsigned long long)d.dropped_hosts, spin_window(),
		d.spin_us >= 0 ? "fixed" : "learnt");
	for (int i = 0; i < d.max_hosts; i++) {
		struct host *h = &d.hosts[i];
		int open = h->nsocks; /* (a host whose channel has not come has no table yet) */

		if (!h->used)
			continue;
		fprintf(stderr,
			"tcpserverd: host %d pid %u: sockets %d, calls %llu (failed %llu, waited %llu), "
			"accepted %llu, octets in %llu out %llu, registered in %llu out %llu, sends held %llu (joined %llu)\n",
			i, h->pid, open, (unsigned long long)h->calls, (unsigned long long)h->failed,
			(unsigned long long)h->parked, (unsigned long long)h->accepted,
			(unsigned long long)h->bytes_in, (unsigned long long)h->bytes_out,
			(unsigned long long)h->reg_in, (unsigned long long)h->reg_out,
			(unsigned long long)h->holds, (unsigned long long)h->hold_hits);
		for (int k = 0; d.verbose && h->socks && k < d.max_socks; k++) { /* (-v: each connection) */
			struct tsock *s = &h->socks[k];
			struct sockaddr_storage a, b;
			socklen_t al = sizeof(a), bl = sizeof(b);
			struct esock_tsp_addr la = { 0 }, ra = { 0 };

			if (s->fd < 0)
				continue;
			if (getsockname(s->fd, (struct sockaddr *)&a, &al) == 0)
				from_sockaddr(&a, &la);
			if (getpeername(s->fd, (struct sockaddr *)&b, &bl) == 0)
				from_sockaddr(&b, &ra);
			fprintf(stderr, "tcpserverd:   socket %d: port %u <-> %u, calls %llu, octets in %llu out %llu%s%s\n",
				k + 1, la.port, ra.port, (unsigned long long)s->calls, (unsigned long long)s->in,
				(unsigned long long)s->out, s->olen ? ", sending queued" : "",
				s->parked ? ", a call waits" : "");
		}
	}
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		d.dump = 1;
	else
		d.quit = 1;
}

/*
 * SIGTERM, SIGINT and SIGUSR1 are blocked except inside the loop's
 * epoll_pwait, which unblocks them atomically (|wait_mask|): one that comes
 * while the loop works waits for the next epoll_pwait and ends it with EINTR.
 * Caught at any time instead, a SIGTERM between the loop's look at d.quit and
 * an idle epoll_wait(-1) was lost, and tcpserverd served on.
 */
static sigset_t wait_mask;

static void signals_catch(void)
{
	static const int caught[] = { SIGTERM, SIGINT, SIGUSR1 };
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t mine;

	sigemptyset(&mine);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaddset(&mine, caught[i]);
	sigprocmask(SIG_BLOCK, &mine, &wait_mask);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++) {
		sigdelset(&wait_mask, caught[i]);
		sigaction(caught[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
}

/*
 * The socket appears at |path| only once it listens (made under another
 * name, then renamed): a host that finds the path finds it answering.
 */
static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d", path, (int)getpid());

	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -1;
	unlink(sa.sun_path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    chmod(sa.sun_path, 0600) < 0 || /* (the hosts of this user: a channel is a host's whole power here) */
	    rename(sa.sun_path, path) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		unlink(sa.sun_path);
		errno = e;
		return -1;
	}
	return fd;
}

static void loop(void)
{
	int64_t busy_until = 0, last_work = now_us();

	cpu_watch_open();
	while (!d.quit) {
		struct epoll_event ev[64];
		int work = 0, n, tmo = 0, cpu = sched_getcpu();
		int64_t now;
		bool blocked = false, shared, slept = false;

		d.more_follows = true; /* (the hosts' queues: their answers ring once, below) */
		for (int i = 0; i < d.max_hosts; i++)
			if (d.hosts[i].used && d.hosts[i].ready) {
				esock_shmq_set_cpu(d.hosts[i].req, cpu); /* (a host on this CPU does not spin) */
				work += host_serve(i);
				if (d.hosts[i].used && d.hosts[i].rx_blocked)
					retry_rx(i);
				blocked |= d.hosts[i].used && d.hosts[i].rx_blocked;
			}
		hold_expire(); /* (held sends whose window passed go) */
		now = now_us();
		shared = cpu_shared(now);
		if (work) {
			last_work = now;
			busy_until = now + (shared ? 0 : spin_window());
		}
		if (!work && now >= busy_until) {
			/* Quiet for a while: sleep, the hosts ringing the bell for what they queue. */
			bool ready = false;

			for (int i = 0; i < d.max_hosts; i++)
				if (d.hosts[i].used && d.hosts[i].ready && !d.hosts[i].asleep) {
					d.hosts[i].asleep = true; /* (the queue counts sleepers: one each) */
					if (esock_shmq_sleep_begin(d.hosts[i].req))
						ready = true;
				}
			tmo = ready ? 0 : host_deadlines();
			if (d.nforks) {
				int f = forks_expire();

				tmo = f >= 0 && (tmo < 0 || f < tmo) ? f : tmo;
			}
			if (blocked && (tmo < 0 || tmo > 1))
				tmo = 1; /* (eager receive waits for a host to read its queue: look again soon) */
			if (d.ndrains) { /* (closed sockets' queues: looked at once a second at least) */
				drain_step(-1);
				tmo = tmo < 0 || tmo > 1000 ? 1000 : tmo;
			}
			if (d.nheld)
				tmo = 0; /* (a held send's window is microseconds: look again at once) */
			slept = tmo != 0;
		}
		d.more_follows = false;
		answer_rings(); /* (the hosts' answers of this look, before any wait) */
		if (!work && !tmo && !shared)
			cpu_spin_yield();
		n = epoll_pwait(d.epfd, ev, 64, tmo, &wait_mask);
		if (slept && d.spin_us < 0) { /* (learnt) what woke it, how long after the last work: the lesson */
			int64_t waited = now_us() - last_work;
			bool bell = false;

			for (int i = 0; i < n; i++)
				bell |= key_kind(ev[i].data.u64) == EV_HOST_BELL;
			spin_learn(waited, bell);
		}
		for (int i = 0; i < d.max_hosts; i++)
			if (d.hosts[i].used && d.hosts[i].asleep) {
				esock_shmq_sleep_end(d.hosts[i].req);
				d.hosts[i].asleep = false;
			}
		if (d.dump) {
			d.dump = 0;
			print_counters();
		}
		for (int i = 0; i < n; i++) {
			int kind = key_kind(ev[i].data.u64), hi = (int)((ev[i].data.u64 >> 8) & 0xffffff);
			uint32_t handle = (uint32_t)(ev[i].data.u64 >> 32);

			d.more_follows = i < n - 1;

			if (kind == EV_LISTEN) {
				host_new();
			} else if (kind == EV_HOST_SOCK) {
				host_sock(hi);
			} else if (kind == EV_DRAIN) {
				drain_step((int)handle);
			} else if (kind == EV_HOST_BELL) {
				host_bell(hi);
			} else if (kind == EV_RLISTEN) {
				host_new_net();
			} else {
				resume(hi, handle, ev[i].events);
			}
		}
		d.more_follows = false;
		answer_rings(); /* (what the network's events gave them) */
	}
}

/* -l: the esock listener for hosts of other nodes.  0, or -1 (said why). */
static int listen_net(const char *where)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc = tsp_rchan_addr(where, &ss, &len);

	if (rc <= 0) {
		fprintf(stderr, "tcpserverd: -l %s: not ADDR:PORT (a numeric IPv4 address, or [IPv6])\n", where);
		return -1;
	}
	if ((rc = esock_listen((struct sockaddr *)&ss, len, 64, &d.rl)) < 0) {
		fprintf(stderr, "tcpserverd: -l %s: %s\n", where, strerror(-rc));
		return -1;
	}
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, esock_listener_poll_fd(d.rl),
		  &(struct epoll_event){ .events = EPOLLIN, .data.u64 = key(EV_RLISTEN, 0, 0) });
	return 0;
}

/* |s| as a whole decimal number within [lo, hi] into *out; false (and *out unchanged) if not. */
static bool num_arg(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

int main(int argc, char **argv)
{
	int opt, cpu = -1;
	bool ok = true;

	while ((opt = getopt(argc, argv, "s:l:H:S:c:p:P:Rmvh")) != -1) {
		switch (opt) {
		case 's': d.path = optarg; break;
		case 'l': d.net = optarg; break;
		case 'H': ok &= num_arg(optarg, 1, 1 << 16, &d.max_hosts); break;
		case 'S': ok &= num_arg(optarg, 1, 1 << 20, &d.max_socks); break;
		case 'c': ok &= num_arg(optarg, 0, CPU_SETSIZE - 1, &cpu); break;
		case 'p': ok &= num_arg(optarg, 0, 100000, &d.spin_us); break;
		case 'P': ok &= num_arg(optarg, 0, 100000, &d.spin_cap_us); d.spin_us = -1; break;
		case 'R': d.ring_each = true; break;
		case 'm': d.no_hold = true; break;
		case 'v': d.verbose = 1; break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: tcpserverd -s PATH [-l ADDR:PORT] [-H MAX_HOSTS] [-S MAX_SOCKETS] [-c CPU] [-p SPIN_US | -P MAX_SPIN_US] [-R] [-m] [-v]\n"
				"Carries out the socket calls of host processes reaching it at the Unix socket PATH\n"
				"and, with -l, of hosts of other nodes connecting over iWARP (esock) to ADDR:PORT.\n"
				"After work it spins for a window learnt from when the hosts' calls come, at most\n"
				"MAX_SPIN_US (default %d; 0: never), or with -p for a fixed SPIN_US (0: never).\n"
				"A sleeping host is woken once per round of work, at its end; -R: at each answer.\n"
				"A send that may have a follower (a header, then its body) waits for it a few\n"
				"microseconds, so that both go in one segment; -m: each send goes at once.\n", EP_SPIN_CAP_US);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!ok || !d.path || optind < argc) {
		fprintf(stderr, "tcpserverd: -s PATH is needed; -H 1..65536, -S 1..1048576, -c CPU, "
				"-p and -P 0..100000\n");
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			perror("tcpserverd: -c");
	}
	signals_catch();
	if (!(d.hosts = calloc((size_t)d.max_hosts, sizeof(*d.hosts))) || (d.epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (d.lfd = listen_unix(d.path)) < 0) {
		fprintf(stderr, "tcpserverd: %s: %s\n", d.path, strerror(errno));
		return 1;
	}
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, d.lfd, &(struct epoll_event){ .events = EPOLLIN, .data.u64 = key(EV_LISTEN, 0, 0) });
	if (d.net && listen_net(d.net) < 0) {
		close(d.lfd);
		unlink(d.path);
		return 1;
	}
	logv("serving at %s%s%s (hosts %d, sockets per host %d)\n", d.path, d.net ? " and " : "",
	     d.net ? d.net : "", d.max_hosts, d.max_socks);
	loop();
	for (int i = 0; i < d.max_hosts; i++) {
		if (d.hosts[i].used)
			hold_end(i, false); /* (what a host sent is sent, as before its end) */
		host_drop(i, "tcpserverd ends");
	}
	while (d.ndrains)
		drain_end(0);
	free(d.drains);
	print_counters();
	if (d.rl)
		esock_listener_close(d.rl);
	close(d.lfd);
	unlink(d.path);
	free(d.hosts);
	return 0;
}
