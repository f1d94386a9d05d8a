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
 *   tcpserverd -s PATH [-l ADDR:PORT] [-H MAX_HOSTS] [-S MAX_SOCKETS] [-c CPU] [-p SPIN_US] [-v]
 *
 * SIGUSR1 prints the counters; SIGTERM and SIGINT end it cleanly (every
 * host's sockets closed, the Unix socket removed).  docs/tcpserver.md.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/chan.h"
#include "tcpserver/hostmem.h"
#include "tcpserver/proto/tsp.h"
#include "tcpserver/rchan.h"

#define MSG_MAX (ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX)

/* What an epoll event is about: tag in the low bits, host index above. */
enum { EV_LISTEN, EV_HOST_SOCK, EV_HOST_BELL, EV_NET, EV_DRAIN, EV_RLISTEN };

struct tsock {
	int fd;          /* -1: free */
	bool nonblock;   /* as the host asked: its calls never wait */
	uint32_t reg;    /* events it is in the epoll set for (edge-triggered), 0: not in it */
	uint32_t park_ev; /* what a parked call waits for */
	uint32_t want;   /* WATCH: events the host wants to hear of (READY) */
	uint32_t told;   /* the events last told in READY */
	/* A parked call: the request kept whole (decoded again when the socket is ready). */
	uint8_t *parked;
	uint32_t parked_len;
	uint32_t sent;   /* a parked blocking SEND: octets already handed to TCP */
	/* Asynchronous send: octets taken from the host, not yet handed to TCP (a ring). */
	uint8_t *obuf;   /* ESOCK_TSP_CREDIT_WINDOW octets, while used */
	uint32_t ohead, olen;
	uint32_t unreported; /* handed to TCP (or lost to an error), not yet in a CREDIT */
	int oerr;        /* what TCP said of queued octets: the next SEND's answer */
	int shut_how;    /* a SHUTDOWN waiting for the queue to drain (-1: none) */
	bool listener;   /* LISTEN succeeded on it */
	/* A listener bound to one address: its connections' local address, without a getsockname each. */
	bool local_fixed;
	struct esock_tsp_addr local;
	bool eager;      /* a listener that accepts ahead (eager accept): ACCEPTED events */
	/* Eager receive: octets pushed in DATA events, not yet given back by the host. */
	uint64_t calls, in, out; /* per connection: the host's calls on it, octets each way */
	bool eager_rx, rx_end;
	bool rx_blocked; /* its queue to the host had no room: pushed again each round */
	uint32_t rx_out;
	int rx_err;      /* what ended the stream, for the socket's next call */
};

/*
 * A host's sockets copied at its FORK, for its child to take with its
 * HELLO (ESOCK_TSP_F_INHERIT), under the same handles.  Copies nobody took
 * go after FORK_US (the child may never come: it exec'd something else).
 */
struct forked {
	uint32_t token;  /* 0: free */
	int64_t until_us;
	int n;
	struct { uint32_t handle; int fd; bool nonblock, listener; } *v;
};
#define FORK_US 10000000
#define MAX_FORKS 64

/* A closed socket whose queued octets still go out (asynchronous send), for a while. */
struct drain {
	int fd;
	uint8_t *obuf;
	uint32_t ohead, olen;
	int64_t until_us;
};
#define DRAIN_US 10000000 /* after that, what is still queued is dropped */

struct host {
	bool used;
	bool ready;           /* its channel came (until then only its Unix socket is watched) */
	int64_t since_us;     /* when it connected (a host without a channel goes after a second) */
	int usock;            /* shared memory: the host's Unix socket (its end is the host's end); else -1 */
	struct tsp_chan ch;   /* shared memory: the channel it sent */
	struct tsp_rchan *rc; /* across the network: the channel over its QP (it breaks: the host's end) */
	struct esock_shmq *req, *resp;
	int bell;             /* what the host rings: ch.bell, or rc's bell */
	uint32_t pid, flags;
	pid_t cred_pid;       /* shared memory: the host's pid as the kernel says (SO_PEERCRED); else 0 */
	struct tsp_regions regions; /* registered buffers (REG) */
	bool hello;
	bool asleep;          /* said it sleeps on its request queue (esock_shmq_sleep_begin) */
	struct tsock *socks;  /* by handle - 1 */
	int nsocks;           /* handles in use */
	int low_free;         /* no free handle below this index (new_handle looks from it) */
	bool held_back;       /* eager accept stopped at the socket limit: a CLOSE lets it on */
	int neager;           /* its listeners that accept ahead */
	bool rx_blocked;      /* eager receive waits for room in its queue (looked at each round) */
	/*
	 * Its sockets' files may be open elsewhere too (FORK copied them, or it
	 * took a parent's copies): a close must take them out of the epoll set
	 * itself, else a close does (no EPOLL_CTL_DEL per connection).
	 */
	bool fds_shared;
	/* counters */
	uint64_t calls, failed, parked, bytes_in, bytes_out, accepted;
	uint64_t reg_in, reg_out; /* octets placed into / taken from its registered buffers */
};

static struct {
	const char *path, *net;
	int max_hosts, max_socks, spin_us, verbose;
	int lfd, epfd;
	struct esock_listener *rl; /* -l: hosts of other nodes */
	struct host *hosts;
	struct drain *drains;
	int ndrains, capdrains;
	struct forked forks[MAX_FORKS];
	int nforks;
	volatile sig_atomic_t quit, dump;
	uint64_t refused_hosts, dropped_hosts;
	uint8_t out[MSG_MAX];
} d = { .max_hosts = 64, .max_socks = 4096, .spin_us = 50, .lfd = -1, .epfd = -1 };

#define logv(...) do { if (d.verbose) fprintf(stderr, "tcpserverd: " __VA_ARGS__); } while (0)

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t key(int kind, int host, int sock)
{
	return (uint64_t)kind | (uint64_t)(uint32_t)host << 8 | (uint64_t)(uint32_t)sock << 32;
}

/* ---- answers ---- */

/*
 * Puts |m| (a response or event) into the host's queue; |quiet|: without
 * waking the host (esock_shmq_commit_quiet), while the queue is three
 * quarters free.  False: the host does not read it.
 */
static bool answer_ex(struct host *h, struct esock_tsp_msg *m, bool quiet)
{
	int n = esock_tsp_encode(m, d.out, sizeof(d.out)), rc;
	uint8_t *rec;

	if (n < 0)
		return false;
	quiet = quiet && esock_shmq_free(h->resp) > esock_shmq_cap(h->resp) / 4 * 3;
	if (!(rec = esock_shmq_reserve(h->resp, (uint32_t)n, &rc)))
		return false; /* (a full queue: a synchronous host never lets that happen) */
	memcpy(rec, d.out, (size_t)n);
	if (quiet)
		esock_shmq_commit_quiet(h->resp, (uint32_t)n);
	else
		esock_shmq_commit(h->resp, (uint32_t)n);
	if (m->result < 0)
		h->failed++;
	return true;
}

static bool answer(struct host *h, struct esock_tsp_msg *m)
{
	return answer_ex(h, m, false);
}

static bool reply(struct host *h, const struct esock_tsp_hdr *q, int result)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_RESP, .op = q->op, .id = q->id, .sock = q->sock },
				   .result = result };

	return answer(h, &m);
}

/* ---- sockets ---- */

static struct tsock *sock_of(struct host *h, uint32_t handle)
{
	if (handle == 0 || handle > (uint32_t)d.max_socks || h->socks[handle - 1].fd < 0)
		return NULL;
	return &h->socks[handle - 1];
}

static int new_handle(struct host *h, int fd, bool nonblock)
{
	for (int i = h->low_free; i < d.max_socks; i++)
		if (h->socks[i].fd < 0) {
			h->low_free = i + 1;
			memset(&h->socks[i], 0, sizeof(h->socks[i]));
			h->socks[i].fd = fd;
			h->socks[i].nonblock = nonblock;
			h->socks[i].shut_how = -1;
			h->nsocks++;
			return i + 1;
		}
	return -EMFILE;
}

/*
 * The socket's place in the epoll set follows what waits on it: a parked
 * call and a WATCH.  Edge-triggered: an event is a change, and each is
 * answered by looking at the socket (the call again, its state for READY).
 */
static bool interest(int hi, uint32_t handle, struct tsock *s)
{
	uint32_t ev = s->park_ev | (s->want ? s->want | EPOLLRDHUP : 0) | (s->olen ? EPOLLOUT : 0) |
		      (s->eager ? EPOLLIN : 0) |
		      (s->eager_rx && !s->rx_end && s->rx_out < ESOCK_TSP_CREDIT_WINDOW ? EPOLLIN | EPOLLRDHUP : 0);
	struct epoll_event e = { .events = ev | EPOLLET, .data.u64 = key(EV_NET, hi, (int)handle) };

	if (ev == s->reg)
		return true;
	if (!ev) {
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	} else if (epoll_ctl(d.epfd, s->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &e) < 0) {
		return false;
	}
	s->reg = ev;
	return true;
}

static void unwatch(struct tsock *s)
{
	if (s->reg)
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	s->reg = s->park_ev = s->want = 0;
}

/* ---- asynchronous send ---- */

/* Hands queued octets to TCP from |obuf| (a ring); returns the octets taken, or -errno. */
static long ring_send(int fd, uint8_t *obuf, uint32_t *ohead, uint32_t *olen)
{
	long total = 0;

	while (*olen) {
		uint32_t run = ESOCK_TSP_CREDIT_WINDOW - *ohead < *olen ? ESOCK_TSP_CREDIT_WINDOW - *ohead : *olen;
		ssize_t n = send(fd, obuf + *ohead, run, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? total : -errno;
		*ohead = (*ohead + (uint32_t)n) % ESOCK_TSP_CREDIT_WINDOW;
		*olen -= (uint32_t)n;
		total += n;
	}
	return total;
}

/*
 * Credits back to the host: a CREDIT once a quarter of the window went to
 * TCP, or once all did and the host has half of it or more outstanding (it
 * may be about to wait for them).  Small sends cost no event each.
 */
static bool credit(struct host *h, uint32_t handle, struct tsock *s)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_CREDIT, .sock = handle } };

	if (!s->unreported || (s->unreported < ESOCK_TSP_CREDIT_WINDOW / 4 &&
				(s->olen || s->unreported < ESOCK_TSP_CREDIT_WINDOW / 2)))
		return true;
	m.u.credit.octets = s->unreported;
	s->unreported = 0;
	return answer(h, &m);
}

/* The queue goes to TCP as far as it takes it; a SHUTDOWN waiting for it follows. */
static void flush_out(struct host *h, struct tsock *s)
{
	long n = ring_send(s->fd, s->obuf, &s->ohead, &s->olen);

	if (n < 0) { /* the rest is lost: the next SEND says why, the credits come back */
		s->oerr = (int)-n;
		s->unreported += s->olen;
		s->olen = 0;
	} else {
		s->unreported += (uint32_t)n;
		h->bytes_out += (uint64_t)n;
		s->out += (uint64_t)n;
	}
	if (!s->olen && s->shut_how >= 0) {
		shutdown(s->fd, s->shut_how);
		s->shut_how = -1;
	}
}

/* A socket closed with octets still queued: they go on out, bounded in time. */
static void drain_add(struct tsock *s)
{
	struct drain *dr;

	if (d.ndrains == d.capdrains) {
		int cap = d.capdrains ? 2 * d.capdrains : 16;
		struct drain *nd = realloc(d.drains, (size_t)cap * sizeof(*nd));

		if (!nd)
			return; /* (then they are dropped: the socket closes now) */
		d.drains = nd;
		d.capdrains = cap;
	}
	dr = &d.drains[d.ndrains];
	*dr = (struct drain){ s->fd, s->obuf, s->ohead, s->olen, now_us() + DRAIN_US };
	if (epoll_ctl(d.epfd, s->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd,
		      &(struct epoll_event){ .events = EPOLLOUT | EPOLLET,
					     .data.u64 = key(EV_DRAIN, 0, s->fd) }) < 0)
		return;
	d.ndrains++;
	s->fd = -1;
	s->obuf = NULL;
	s->reg = 0;
}

static void drain_end(int i)
{
	epoll_ctl(d.epfd, EPOLL_CTL_DEL, d.drains[i].fd, NULL);
	close(d.drains[i].fd);
	free(d.drains[i].obuf);
	d.drains[i] = d.drains[--d.ndrains];
}

/* A draining socket has room (fd |fd|), or time passed (-1): what is done goes. */
static void drain_step(int fd)
{
	int64_t now = now_us();

	for (int i = 0; i < d.ndrains;) {
		struct drain *dr = &d.drains[i];

		if (dr->fd == fd && ring_send(dr->fd, dr->obuf, &dr->ohead, &dr->olen) < 0)
			dr->olen = 0;
		if (!dr->olen || now >= dr->until_us)
			drain_end(i);
		else
			i++;
	}
}

static void drain_add(struct tsock *s);
static void from_sockaddr(const struct sockaddr_storage *ss, struct esock_tsp_addr *a);

/*
 * Eager receive: what comes is read at once and pushed in DATA events, as
 * far as the host's window allows (it gives octets back as it consumes
 * them).  An empty DATA ends the stream.  False: the host does not read.
 */
/*
 * DATA leaves this much of the host's queue free, so that any answer to a
 * call (up to ESOCK_TSP_BODY_MAX, with a skip mark before it) still fits:
 * pushed octets never crowd out a response.
 */
#define RX_RESERVE (2 * (ESOCK_TSP_BODY_MAX + 64))

/*
 * |edge_open|: the edge being served said input and no end (no EPOLLRDHUP):
 * a short read drained the socket, and whatever comes after it makes a new
 * edge, so no recv to hear EAGAIN.  (With the end already there no edge
 * would come for it: then, as for any other caller, reading goes on until
 * recv says so.)
 */
static bool push_data(struct host *h, uint32_t handle, struct tsock *s, bool edge_open)
{
	static uint8_t buf[ESOCK_TSP_BODY_MAX];

	s->rx_blocked = false;
	while (s->eager_rx && !s->rx_end && s->rx_out < ESOCK_TSP_CREDIT_WINDOW) {
		struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_DATA, .sock = handle } };
		uint32_t room = ESOCK_TSP_CREDIT_WINDOW - s->rx_out, qfree = esock_shmq_free(h->resp);
		size_t ask;
		ssize_t n;

		if (qfree < RX_RESERVE + ESOCK_TSP_HDR_LEN + 64 + 4096) { /* the host is behind: later */
			s->rx_blocked = h->rx_blocked = true; /* (the next look reads until EAGAIN) */
			return true;
		}
		qfree -= RX_RESERVE + ESOCK_TSP_HDR_LEN + 64;
		if (room > qfree)
			room = qfree;
		ask = room < sizeof(buf) ? room : sizeof(buf);
		n = recv(s->fd, buf, ask, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			s->rx_end = true;
			s->rx_err = n < 0 ? errno : 0;
		} else {
			m.data = buf;
			m.data_len = (uint32_t)n;
			s->rx_out += (uint32_t)n;
			h->bytes_in += (uint64_t)n;
			s->in += (uint64_t)n;
		}
		if (!answer(h, &m))
			return false;
		if (n > 0 && (size_t)n < ask && edge_open)
			break;
	}
	return true;
}

/*
 * A connected socket of a host that asked for eager receive: from now on.
 * Octets already there are found by the epoll set (adding or changing a
 * registration reports what is ready), not by a recv now, which right
 * after an accept mostly says EAGAIN; only a socket already registered for
 * input (WATCH) is looked at now, its edge perhaps gone by.
 */
static bool rx_start(struct host *h, int hi, uint32_t handle, struct tsock *s)
{
	bool had_in = s->reg & EPOLLIN;

	if (!(h->flags & ESOCK_TSP_F_EAGER_RECV))
		return true;
	s->eager_rx = true;
	return interest(hi, handle, s) && (!had_in || push_data(h, handle, s, false));
}

/*
 * Eager accept: a listening socket's connections taken as they come and
 * told in ACCEPTED events (with both addresses), so that the host's accept
 * finds one already there.  Within the host's socket limit: beyond it they
 * wait in the kernel's backlog.  False: the host does not read its events.
 */
static bool accept_ahead(struct host *h, uint32_t handle, struct tsock *s)
{
	for (;;) {
		struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_ACCEPTED, .sock = handle } };
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd, nh;

		if (h->nsocks >= d.max_socks) {
			h->held_back = true;
			return true; /* (no room: they wait in the backlog) */
		}
		if ((fd = accept4(s->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
			return true;
		if ((nh = new_handle(h, fd, false)) < 0) {
			close(fd);
			return true;
		}
		h->accepted++;
		m.u.accepted.sock = (uint32_t)nh;
		from_sockaddr(&ss, &m.u.accepted.peer);
		sl = sizeof(ss);
		if (s->local_fixed)
			m.u.accepted.local = s->local;
		else if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			from_sockaddr(&ss, &m.u.accepted.local);
		if (!answer(h, &m) || !rx_start(h, (int)(h - d.hosts), (uint32_t)nh, &h->socks[nh - 1]))
			return false;
	}
}

/* |keep_queued|: octets of an asynchronous send still go out (a host's CLOSE), else dropped. */
static void sock_close(struct host *h, uint32_t handle, bool keep_queued)
{
	struct tsock *s = sock_of(h, handle);

	if (!s)
		return;
	free(s->parked);
	s->parked = NULL;
	if (s->eager)
		h->neager--;
	s->eager = false;
	if (keep_queued && s->olen)
		drain_add(s); /* (takes the descriptor and the queue, when it can) */
	if (s->fd >= 0) {
		if (h->fds_shared)
			unwatch(s);
		else
			s->reg = s->park_ev = s->want = 0; /* (the close takes it out of the set) */
		close(s->fd);
	}
	free(s->obuf);
	s->obuf = NULL;
	s->fd = -1;
	h->nsocks--;
	if ((int)handle - 1 < h->low_free)
		h->low_free = (int)handle - 1;
}

static int to_sockaddr(const struct esock_tsp_addr *a, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(a->port);
		memcpy(&s->sin_addr, a->addr, 4);
		*len = sizeof(*s);
		return 0;
	}
	if (a->family == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(a->port);
		s->sin6_scope_id = a->scope_id;
		memcpy(&s->sin6_addr, a->addr, 16);
		*len = sizeof(*s);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void from_sockaddr(const struct sockaddr_storage *ss, struct esock_tsp_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		a->family = 4;
		a->port = ntohs(s->sin_port);
		memcpy(a->addr, &s->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		a->family = 6;
		a->port = ntohs(s->sin6_port);
		a->scope_id = s->sin6_scope_id;
		memcpy(a->addr, &s->sin6_addr, 16);
	}
}

/* Options a host may set or read: the portable ones, nothing that reaches beyond its socket. */
static bool option_ok(int level, int name)
{
	if (level == SOL_SOCKET)
		return name == SO_REUSEADDR || name == SO_REUSEPORT || name == SO_KEEPALIVE ||
		       name == SO_RCVBUF || name == SO_SNDBUF || name == SO_LINGER || name == SO_ERROR ||
		       name == SO_TYPE || name == SO_RCVLOWAT || name == SO_OOBINLINE;
	if (level == IPPROTO_TCP)
		return name == TCP_NODELAY || name == TCP_KEEPIDLE || name == TCP_KEEPINTVL ||
		       name == TCP_KEEPCNT || name == TCP_MAXSEG || name == TCP_CORK ||
		       name == TCP_DEFER_ACCEPT || name == TCP_NOTSENT_LOWAT || name == TCP_QUICKACK;
	return level == IPPROTO_IPV6 && name == IPV6_V6ONLY;
}

/* ---- calls ---- */

/*
 * Eager accept starts on a listener once its host shows it wants its
 * connections (a WATCH for POLLIN, or an ACCEPT): a pre-fork server's parent
 * that listens and forks never takes connections its children should.
 */
static bool eager_arm(struct host *h, int hi, uint32_t handle, struct tsock *s)
{
	if (s->eager || !s->listener || !(h->flags & ESOCK_TSP_F_EAGER_ACCEPT))
		return true;
	s->eager = true;
	h->neager++;
	return interest(hi, handle, s) && accept_ahead(h, handle, s);
}

/* ---- fork ---- */

static void fork_free(struct forked *f, bool close_fds)
{
	for (int i = 0; close_fds && i < f->n; i++)
		close(f->v[i].fd);
	free(f->v);
	memset(f, 0, sizeof(*f));
	d.nforks--;
}

/* FORK: every socket of |h| copied for its child.  The token (> 0), or -errno. */
static int fork_copy(struct host *h)
{
	struct forked *f = NULL;
	uint32_t tok = 0;

	h->fds_shared = true; /* (the parent's and the child's descriptors: one file each) */
	for (int i = 0; i < MAX_FORKS && !f; i++)
		if (!d.forks[i].token)
			f = &d.forks[i];
	if (!f)
		return -EAGAIN; /* (that many forks in the last FORK_US, none taken) */
	if (!(f->v = calloc((size_t)(h->nsocks ? h->nsocks : 1), sizeof(*f->v))))
		return -ENOMEM;
	d.nforks++;
	for (int i = 0; i < d.max_socks && f->n < h->nsocks; i++) {
		struct tsock *s = &h->socks[i];
		int fd;

		if (s->fd < 0)
			continue;
		if ((fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			int rc = -errno;

			fork_free(f, true);
			return rc;
		}
		f->v[f->n].handle = (uint32_t)i + 1;
		f->v[f->n].fd = fd;
		f->v[f->n].nonblock = s->nonblock;
		f->v[f->n++].listener = s->listener;
	}
	/* A token nobody can guess (a host takes only what its parent's FORK named). */
	while (!tok)
		if (getrandom(&tok, sizeof(tok), 0) != sizeof(tok) || !(tok &= 0x7fffffffu))
			tok = (uint32_t)now_us() & 0x7fffffffu;
	f->token = tok;
	f->until_us = now_us() + FORK_US;
	return (int)tok;
}

/* HELLO with ESOCK_TSP_F_INHERIT: the copies of |token| become |h|'s.  0 or -EPERM. */
static int fork_take(struct host *h, uint32_t token)
{
	for (int i = 0; token && i < MAX_FORKS; i++) {
		struct forked *f = &d.forks[i];

		if (f->token != token)
			continue;
		for (int k = 0; k < f->n; k++) {
			struct tsock *s = &h->socks[f->v[k].handle - 1];

			memset(s, 0, sizeof(*s));
			s->fd = f->v[k].fd;
			s->nonblock = f->v[k].nonblock;
			s->listener = f->v[k].listener;
			s->shut_how = -1;
			h->nsocks++;
		}
		h->fds_shared = true;
		fork_free(f, false);
		return 0;
	}
	return -EPERM;
}

/* Copies nobody took in time go; the time until the next does, in ms (-1: none). */
static int forks_expire(void)
{
	int64_t now = now_us(), next = -1;

	for (int i = 0; d.nforks && i < MAX_FORKS; i++) {
		struct forked *f = &d.forks[i];

		if (!f->token)
			continue;
		if (now >= f->until_us) {
			logv("the sockets of a fork nobody took (%d) closed\n", f->n);
			fork_free(f, true);
		} else if (next < 0 || f->until_us - now < next) {
			next = f->until_us - now;
		}
	}
	return next < 0 ? -1 : (int)(next / 1000) + 1;
}

/* Parks the call in |rec| on |s| until it is ready for |events|.  False: out of memory. */
static bool park(struct host *h, struct tsock *s, int hi, uint32_t handle, const uint8_t *rec,
		 uint32_t len, uint32_t events)
{
	if (!s->parked && !(s->parked = malloc(MSG_MAX)))
		return false;
	if (s->parked != rec)
		memcpy(s->parked, rec, len);
	s->parked_len = len;
	s->park_ev = events;
	if (!interest(hi, handle, s))
		return false;
	h->parked++;
	return true;
}

/* READY when the watched events of the socket changed since it was last told. */
static bool tell_ready(struct host *h, uint32_t handle, struct tsock *s)
{
	struct pollfd p = { .fd = s->fd, .events = (short)s->want };
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_READY, .sock = handle } };
	uint32_t now;

	if (!s->want)
		return true;
	now = poll(&p, 1, 0) == 1 ? (uint32_t)p.revents & (s->want | POLLERR | POLLHUP) : 0;
	if (now == s->told)
		return true;
	s->told = now;
	m.u.watch.events = now;
	return answer(h, &m);
}

/*
 * Carries out one decoded request.  Returns 1 answered, 0 parked (|rec|
 * kept), -1 the host must go (it broke the protocol or does not read).
 */
static int call(struct host *h, int hi, const struct esock_tsp_msg *q, const uint8_t *rec, uint32_t len)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_RESP, .op = q->h.op, .id = q->h.id, .sock = q->h.sock } };
	struct tsock *s = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	static uint8_t buf[ESOCK_TSP_BODY_MAX], xbuf[ESOCK_TSP_BODY_MAX];
	struct esock_tsp_msg xq;
	int rc = 0, fd;

	if (q->h.type != ESOCK_TSP_REQ || (!h->hello && q->h.op != ESOCK_TSP_HELLO))
		return -1;
	switch (q->h.op) {
	case ESOCK_TSP_HELLO:
	case ESOCK_TSP_BYE:
	case ESOCK_TSP_SOCKET:
	case ESOCK_TSP_FORK:
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
		break;
	default:
		if (!(s = sock_of(h, q->h.sock)))
			return reply(h, &q->h, -EBADF) ? 1 : -1;
		if (s->parked && rec != s->parked)
			return reply(h, &q->h, -EBUSY) ? 1 : -1; /* (one call at a time per socket) */
		if (rec != s->parked)
			s->calls++;
	}
	switch (q->h.op) {
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
	case ESOCK_TSP_SEND_REG:
	case ESOCK_TSP_RECV_REG:
		if (!(h->flags & ESOCK_TSP_F_REG_BUFFERS))
			return reply(h, &q->h, -EOPNOTSUPP) ? 1 : -1;
		break;
	}
	if (q->h.op == ESOCK_TSP_SEND_REG) {
		/* The octets from the host's region, then a SEND of them (answered as SEND is). */
		if (q->u.xfer.len > sizeof(xbuf))
			return reply(h, &q->h, -EMSGSIZE) ? 1 : -1;
		if ((rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, q->u.xfer.len,
					   ESOCK_TSP_REG_READ)) < 0 ||
		    (rc = h->rc ? tsp_rchan_fetch(h->rc, tsp_region_key(&h->regions, q->u.xfer.region), q->u.xfer.addr,
						  q->u.xfer.len)
				: tsp_mem_read(h->cred_pid, q->u.xfer.addr, xbuf, q->u.xfer.len)) < 0)
			return reply(h, &q->h, rc) ? 1 : -1;
		if (rec != s->parked)
			h->reg_out += q->u.xfer.len; /* (a parked call read again is counted once) */
		xq = *q;
		xq.u.send.flags = q->u.xfer.flags;
		xq.data = h->rc && q->u.xfer.len ? tsp_rchan_stage(h->rc) : xbuf; /* (the stage: fetch made it) */
		xq.data_len = q->u.xfer.len;
		q = &xq;
	}
	switch (q->h.op) {
	case ESOCK_TSP_HELLO:
		if (q->u.hello.vmin > ESOCK_TSP_VERSION || q->u.hello.vmax < ESOCK_TSP_VERSION)
			return reply(h, &q->h, -EPROTONOSUPPORT) ? 1 : -1;
		if ((q->u.hello.flags & ESOCK_TSP_F_INHERIT) && fork_take(h, q->h.sock) < 0)
			return reply(h, &q->h, -EPERM) ? 1 : -1; /* (no such fork: it may try again) */
		h->hello = true;
		h->pid = q->u.hello.pid;
		/*
		 * Granted: all it asks for; registered buffers over shared memory
		 * only where the kernel told the host's pid (across the network
		 * they are RDMA Reads and Writes of the host's registered memory).
		 */
		h->flags = q->u.hello.flags & (ESOCK_TSP_F_SETUP_ACCEPT | ESOCK_TSP_F_ASYNC_SEND |
					       ESOCK_TSP_F_EAGER_ACCEPT | ESOCK_TSP_F_EAGER_RECV |
					       ESOCK_TSP_F_INHERIT |
					       (h->cred_pid > 0 || h->rc ? ESOCK_TSP_F_REG_BUFFERS : 0));
		m.u.hello_ok.version = ESOCK_TSP_VERSION;
		m.u.hello_ok.flags = h->flags;
		m.u.hello_ok.max_socks = (uint32_t)d.max_socks;
		m.u.hello_ok.max_data = ESOCK_TSP_BODY_MAX;
		logv("host %d: pid %u said hello\n", hi, h->pid);
		break;
	case ESOCK_TSP_BYE:
		for (int i = 0; i < d.max_socks; i++)
			sock_close(h, (uint32_t)i + 1, true);
		break;
	case ESOCK_TSP_SOCKET:
		if (q->u.socket.family != 4 && q->u.socket.family != 6)
			rc = -EAFNOSUPPORT;
		else if ((fd = socket(q->u.socket.family == 4 ? AF_INET : AF_INET6,
				      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
			rc = -errno;
		else if ((rc = new_handle(h, fd, q->u.socket.flags & ESOCK_TSP_NONBLOCK)) < 0)
			close(fd);
		m.result = rc;
		return answer(h, &m) ? 1 : -1;
	case ESOCK_TSP_BIND:
	case ESOCK_TSP_CONNECT:
		if ((rc = to_sockaddr(&q->u.addr, &ss, &sl)) < 0)
			break;
		if (q->h.op == ESOCK_TSP_BIND) {
			rc = bind(s->fd, (struct sockaddr *)&ss, sl) < 0 ? -errno : 0;
		} else if (rec == s->parked) { /* ready: how did it end? */
			int err = 0;
			socklen_t el = sizeof(err);

			rc = getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ? -errno : -err;
		} else if (connect(s->fd, (struct sockaddr *)&ss, sl) < 0) {
			rc = -errno;
			if (rc == -EINPROGRESS && !s->nonblock)
				return park(h, s, hi, q->h.sock, rec, len, EPOLLOUT) ? 0 : -1;
		}
		break;
	case ESOCK_TSP_LISTEN:
		rc = listen(s->fd, q->u.listen.backlog) < 0 ? -errno : 0;
		s->listener |= rc == 0;
		if (rc == 0 && getsockname(s->fd, (struct sockaddr *)&ss, &sl) == 0) {
			static const uint8_t any[16];

			from_sockaddr(&ss, &s->local);
			s->local_fixed = memcmp(s->local.addr, any, s->local.family == 4 ? 4 : 16) != 0;
		}
		break;
	case ESOCK_TSP_ACCEPT:
		if (s->eager || (s->listener && (h->flags & ESOCK_TSP_F_EAGER_ACCEPT))) {
			/* Its connections come as ACCEPTED events (from now on: eager_arm). */
			m.result = -EINVAL;
			if (!answer(h, &m))
				return -1;
			return eager_arm(h, hi, q->h.sock, s) ? 1 : -1;
		}
		fd = accept4(s->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			if (rc == -EAGAIN || rc == -EWOULDBLOCK)
				s->told &= ~(uint32_t)POLLIN; /* (the host knows: the next connection is news) */
			if ((rc == -EAGAIN || rc == -EWOULDBLOCK) && !s->nonblock &&
			    !(q->u.accept.flags & ESOCK_TSP_MSG_DONTWAIT))
				return park(h, s, hi, q->h.sock, rec, len, EPOLLIN) ? 0 : -1;
			break;
		}
		if ((rc = new_handle(h, fd, q->u.accept.flags & ESOCK_TSP_NONBLOCK)) < 0) {
			close(fd);
			break;
		}
		h->accepted++;
		from_sockaddr(&ss, &m.u.accepted.peer); /* (as accept4 gives it) */
		sl = sizeof(ss);
		/* Setup with accept: the local address too, no GETSOCKNAME round trip after. */
		if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && s->local_fixed)
			m.u.accepted.local = s->local;
		else if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			from_sockaddr(&ss, &m.u.accepted.local);
		break;
	case ESOCK_TSP_REG:
		m.result = tsp_region_add(&h->regions, h->rc ? 0 : h->cred_pid, q->u.reg.addr, q->u.reg.len,
					  q->u.reg.access, q->u.reg.key);
		return answer(h, &m) ? 1 : -1;
	case ESOCK_TSP_DEREG:
		rc = tsp_region_del(&h->regions, q->u.dereg.region);
		break;
	case ESOCK_TSP_SEND:
	case ESOCK_TSP_SEND_REG: {
		uint32_t off = rec == s->parked ? s->sent : 0;

		if (h->flags & ESOCK_TSP_F_ASYNC_SEND) {
			/* Taken at once (queued what TCP does not take now); CREDIT gives the room back. */
			if (s->oerr) {
				rc = -s->oerr;
				s->oerr = 0;
				break;
			}
			if ((uint64_t)s->olen + s->unreported + q->data_len > ESOCK_TSP_CREDIT_WINDOW) {
				rc = -ENOBUFS; /* (beyond its credit: the host's mistake) */
				break;
			}
			if (!s->obuf && !(s->obuf = malloc(ESOCK_TSP_CREDIT_WINDOW))) {
				rc = -ENOMEM;
				break;
			}
			if (!s->olen) {
				ssize_t n = send(s->fd, q->data, q->data_len, MSG_NOSIGNAL | MSG_DONTWAIT);

				if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
					rc = -errno;
					break;
				}
				off = n > 0 ? (uint32_t)n : 0;
				s->unreported += off;
				h->bytes_out += off;
				s->out += off;
			}
			for (uint32_t i = off; i < q->data_len;) {
				uint32_t at = (s->ohead + s->olen) % ESOCK_TSP_CREDIT_WINDOW;
				uint32_t run = ESOCK_TSP_CREDIT_WINDOW - at < q->data_len - i ? ESOCK_TSP_CREDIT_WINDOW - at
											 : q->data_len - i;

				memcpy(s->obuf + at, q->data + i, run);
				s->olen += run;
				i += run;
			}
			/*
			 * (a send the host posted and does not wait for: its answer
			 * need not wake it, a wake-up that would cost it more than the
			 * send itself)
			 */
			m.result = (int)q->data_len;
			if (!answer_ex(h, &m, q->h.op == ESOCK_TSP_SEND && (q->u.send.flags & ESOCK_TSP_MSG_POSTED)) ||
			    !interest(hi, q->h.sock, s))
				return -1;
			return credit(h, q->h.sock, s) ? 1 : -1;
		}
		{
		ssize_t n = send(s->fd, q->data + off, q->data_len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT | (q->u.send.flags & ESOCK_TSP_MSG_MORE ? MSG_MORE : 0));

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = off ? (int)off : -errno;
			break;
		}
		off += n > 0 ? (uint32_t)n : 0;
		h->bytes_out += n > 0 ? (uint64_t)n : 0;
		s->out += n > 0 ? (uint64_t)n : 0;
		if (off < q->data_len)
			s->told &= ~(uint32_t)POLLOUT; /* (full: room again is news) */
		if (off < q->data_len && !s->nonblock && !(q->u.send.flags & ESOCK_TSP_MSG_DONTWAIT)) {
			/* a blocking send returns with all of it taken */
			s->sent = off;
			return park(h, s, hi, q->h.sock, rec, len, EPOLLOUT) ? 0 : -1;
		}
		rc = off ? (int)off : q->data_len ? -EAGAIN : 0;
		break;
		}
	}
	case ESOCK_TSP_RECV:
	case ESOCK_TSP_RECV_REG: {
		bool reg = q->h.op == ESOCK_TSP_RECV_REG;
		uint32_t want = reg ? q->u.xfer.len : q->u.recv.max, qfl = reg ? q->u.xfer.flags : q->u.recv.flags;
		uint32_t max = want < sizeof(buf) ? want : (uint32_t)sizeof(buf);

		if (reg && (s->eager_rx || (rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, max,
								    ESOCK_TSP_REG_WRITE)) < 0)) {
			rc = rc < 0 ? rc : -EINVAL; /* (a socket that receives eagerly has its octets in DATA) */
			break;
		}
		if (s->eager_rx) { /* its octets come as DATA: a RECV only gives credit back */
			if (!(q->u.recv.flags & ESOCK_TSP_MSG_CREDIT)) {
				/* (after the last DATA: how the stream ended, 0 for a FIN) */
				rc = s->rx_end ? -s->rx_err : -EINVAL;
				break;
			}
			s->rx_out -= q->u.recv.max < s->rx_out ? q->u.recv.max : s->rx_out;
			m.result = 0;
			if (!answer(h, &m) || !interest(hi, q->h.sock, s))
				return -1;
			return push_data(h, q->h.sock, s, false) ? 1 : -1;
		}
		int fl = MSG_DONTWAIT | (qfl & ESOCK_TSP_MSG_PEEK ? MSG_PEEK : 0);
		/* (across the network a RECV_REG's octets go from the stage, where an RDMA Write takes them) */
		uint8_t *into = reg && h->rc ? tsp_rchan_stage(h->rc) : buf;
		ssize_t n = into ? recv(s->fd, into, max, fl) : (errno = ENOMEM, -1);

		if (n < 0) {
			rc = -errno;
			if (rc == -EAGAIN || rc == -EWOULDBLOCK)
				s->told &= ~(uint32_t)POLLIN; /* (drained: the next octets are news) */
			if ((rc == -EAGAIN || rc == -EWOULDBLOCK) && !s->nonblock && max &&
			    !(qfl & ESOCK_TSP_MSG_DONTWAIT))
				return park(h, s, hi, q->h.sock, rec, len, EPOLLIN | EPOLLRDHUP) ? 0 : -1;
			break;
		}
		h->bytes_in += (uint64_t)n;
		s->in += (uint64_t)n;
		/*
		 * Fewer octets than asked for: the socket is drained, as an EAGAIN
		 * would say, so the next octets are news (an edge-triggered program
		 * such as nginx reads no further after a short read).
		 */
		if (n > 0 && (uint32_t)n < max && !(fl & MSG_PEEK))
			s->told &= ~(uint32_t)POLLIN;
		rc = (int)n;
		if (reg) {
			/* (a host that unmapped what it registered loses these octets: its error) */
			rc = h->rc ? tsp_rchan_place(h->rc, (uint32_t)n, tsp_region_key(&h->regions, q->u.xfer.region),
						     q->u.xfer.addr)
				   : tsp_mem_write(h->cred_pid, q->u.xfer.addr, buf, (uint32_t)n);
			if (rc == 0)
				rc = (int)n;
			h->reg_in += rc > 0 ? (uint64_t)rc : 0;
			break;
		}
		m.data = buf;
		m.data_len = (uint32_t)n;
		break;
	}
	case ESOCK_TSP_CLOSE:
		sock_close(h, q->h.sock, true);
		m.result = 0;
		if (!answer(h, &m))
			return -1;
		/* A handle is free again: eager listeners held back by the limit take more. */
		if (!h->held_back)
			return 1;
		h->held_back = false;
		for (int i = 0; h->neager && i < d.max_socks; i++)
			if (h->socks[i].fd >= 0 && h->socks[i].eager &&
			    !accept_ahead(h, (uint32_t)i + 1, &h->socks[i]))
				return -1;
		return 1;
	case ESOCK_TSP_SHUTDOWN:
		if (s->olen && (q->u.shutdown.how == SHUT_WR || q->u.shutdown.how == SHUT_RDWR) &&
		    q->u.shutdown.how >= 0) {
			s->shut_how = q->u.shutdown.how; /* after the queued octets (flush_out) */
			break;
		}
		rc = shutdown(s->fd, q->u.shutdown.how) < 0 ? -errno : 0;
		break;
	case ESOCK_TSP_SETSOCKOPT: {
		struct linger lg = { 0 };

		if (q->u.opt.level == SOL_SOCKET && q->u.opt.name == SO_LINGER && q->data_len >= sizeof(lg))
			memcpy(&lg, q->data, sizeof(lg));
		if (q->u.opt.level == ESOCK_TSP_SOL) { /* (ours: the socket's mode) */
			int32_t v = 0;

			if (q->u.opt.name != ESOCK_TSP_SO_NONBLOCK)
				rc = -ENOPROTOOPT;
			else if (q->data_len != sizeof(v))
				rc = -EINVAL;
			else {
				memcpy(&v, q->data, sizeof(v));
				s->nonblock = v != 0;
			}
		} else if (!option_ok(q->u.opt.level, q->u.opt.name) || q->u.opt.name == SO_ERROR || q->u.opt.name == SO_TYPE)
			rc = -ENOPROTOOPT;
		else if (lg.l_onoff && lg.l_linger > 0)
			rc = -EOPNOTSUPP; /* (close would block tcpserverd that long; {1, 0} resets, as it should) */
		else
			rc = setsockopt(s->fd, q->u.opt.level, q->u.opt.name, q->data, q->data_len) < 0 ? -errno : 0;
		break;
	}
	case ESOCK_TSP_GETSOCKOPT: {
		socklen_t ol = q->u.getopt.len < ESOCK_TSP_OPT_MAX ? q->u.getopt.len : ESOCK_TSP_OPT_MAX;

		if (q->u.getopt.level == ESOCK_TSP_SOL && q->u.getopt.name == ESOCK_TSP_SO_NONBLOCK &&
		    ol >= sizeof(int32_t)) {
			int32_t v = s->nonblock;

			memcpy(buf, &v, sizeof(v));
			m.data = buf;
			m.data_len = sizeof(v);
		} else if (!option_ok(q->u.getopt.level, q->u.getopt.name)) {
			rc = -ENOPROTOOPT;
		} else if (getsockopt(s->fd, q->u.getopt.level, q->u.getopt.name, buf, &ol) < 0) {
			rc = -errno;
		} else {
			m.data = buf;
			m.data_len = ol;
		}
		break;
	}
	case ESOCK_TSP_GETSOCKNAME:
	case ESOCK_TSP_GETPEERNAME:
		if ((q->h.op == ESOCK_TSP_GETSOCKNAME ? getsockname : getpeername)(s->fd, (struct sockaddr *)&ss, &sl) < 0)
			rc = -errno;
		else
			from_sockaddr(&ss, &m.u.addr);
		break;
	case ESOCK_TSP_FORK:
		/* Two processes hold them now: nothing is pushed ahead to one of them any more. */
		for (int i = 0; i < d.max_socks; i++)
			if (h->socks[i].fd >= 0 && h->socks[i].eager_rx) {
				h->socks[i].eager_rx = false;
				if (!interest(hi, (uint32_t)i + 1, &h->socks[i]))
					return -1;
			}
		rc = fork_copy(h);
		logv("host %d (pid %u): fork, %d sockets copied\n", hi, h->pid, rc > 0 ? h->nsocks : 0);
		break;
	case ESOCK_TSP_WATCH:
		/* From now on READY tells each change of these (0: no more); the first comes now. */
		s->want = q->u.watch.events & (POLLIN | POLLOUT | POLLPRI | POLLRDHUP);
		s->told = 0;
		if (!interest(hi, q->h.sock, s))
			rc = -ENOMEM;
		m.result = rc;
		if (!answer(h, &m) || ((s->want & POLLIN) && !eager_arm(h, hi, q->h.sock, s)))
			return -1;
		if (s->eager) {
			/*
			 * Its connections come as ACCEPTED, which is what the host's
			 * readiness of it says: no READY (and no poll here) for each.
			 */
			s->want &= ~(uint32_t)(POLLIN | POLLRDHUP);
			if (!interest(hi, q->h.sock, s))
				return -1;
		}
		return tell_ready(h, q->h.sock, s) ? 1 : -1;
	default:
		rc = -EOPNOTSUPP;
	}
	m.result = rc;
	if (rc < 0) {
		m.data = NULL;
		m.data_len = 0;
	}
	if (!answer(h, &m))
		return -1;
	/* A connection made: eager receive starts (after the answer that names it). */
	/*
	 * A connection taken: the listener's readiness told again when that was
	 * its last (a level-triggered watcher must not see it ready for nothing).
	 */
	if (rc > 0 && q->h.op == ESOCK_TSP_ACCEPT)
		return tell_ready(h, q->h.sock, s) && rx_start(h, hi, (uint32_t)rc, &h->socks[rc - 1]) ? 1 : -1;
	if (rc == 0 && q->h.op == ESOCK_TSP_CONNECT)
		return rx_start(h, hi, q->h.sock, s) ? 1 : -1;
	return 1;
}

/* ---- hosts ---- */

/*
 * |graceful|: the host ended (exit, or killed): what it had sent is still
 * sent, as the kernel sends what a process wrote before it ended.  Else (it
 * broke the protocol) what it queued goes with it.
 */
static void host_drop_ex(int hi, const char *why, bool graceful)
{
	struct host *h = &d.hosts[hi];

	if (!h->used)
		return;
	for (int i = 0; h->socks && i < d.max_socks; i++)
		sock_close(h, (uint32_t)i + 1, graceful);
	logv("host %d (pid %u): %s; its sockets closed\n", hi, h->pid, why);
	if (h->usock >= 0) {
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, h->usock, NULL);
		close(h->usock);
	}
	if (h->bell >= 0)
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, h->bell, NULL);
	tsp_chan_close(&h->ch);
	tsp_rchan_close(h->rc);
	free(h->socks);
	memset(h, 0, sizeof(*h));
}

static void host_drop(int hi, const char *why)
{
	host_drop_ex(hi, why, false);
}

static int host_serve(int hi);

/* A free host slot, or -1 (admission: no more hosts). */
static int host_slot(void)
{
	for (int i = 0; i < d.max_hosts; i++)
		if (!d.hosts[i].used) {
			struct host *h = &d.hosts[i];

			memset(h, 0, sizeof(*h));
			h->ch.memfd = h->ch.bell = h->ch.hbell = -1;
			h->usock = h->bell = -1;
			return i;
		}
	d.refused_hosts++;
	logv("a host refused: %d hosts already\n", d.max_hosts);
	return -1;
}

/* Host |hi| has its channel: its socket table, its bell watched. */
static bool host_ready(int hi)
{
	struct host *h = &d.hosts[hi];

	if (!(h->socks = malloc(sizeof(*h->socks) * (size_t)d.max_socks)))
		return false;
	for (int i = 0; i < d.max_socks; i++)
		h->socks[i].fd = -1;
	h->ready = true;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, h->bell, &(struct epoll_event){ .events = EPOLLIN,
									 .data.u64 = key(EV_HOST_BELL, hi, 0) });
	return true;
}

/*
 * Hosts of other nodes (-l): each connection request with a channel's
 * hello becomes a host at once (its channel comes with it); beyond the
 * host limit, or without a valid hello, the request is rejected.
 */
static void host_new_net(void)
{
	struct esock_conn_req *r;

	(void)esock_listener_ready(d.rl);
	while (esock_get_request(d.rl, &r, 0) == 0) {
		int hi = host_slot(), rc;
		struct host *h;

		if (hi < 0) {
			esock_reject(r, NULL, 0);
			continue;
		}
		h = &d.hosts[hi];
		if ((rc = tsp_rchan_accept(&h->rc, r)) < 0) {
			d.dropped_hosts++;
			logv("a host of the network refused: %s\n", strerror(-rc));
			continue;
		}
		h->used = true;
		h->since_us = now_us();
		h->req = tsp_rchan_req(h->rc);
		h->resp = tsp_rchan_resp(h->rc);
		h->bell = tsp_rchan_bell(h->rc);
		if (!host_ready(hi) || tsp_rchan_drain(h->rc) < 0) {
			d.dropped_hosts++;
			host_drop(hi, "its channel broke at once");
		}
	}
}

static void host_new(void)
{
	int fd = accept4(d.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), hi;
	struct host *h;

	if (fd < 0)
		return;
	if ((hi = host_slot()) < 0) { /* (it sees its HELLO refused: the socket ends) */
		close(fd);
		return;
	}
	h = &d.hosts[hi];
	h->usock = fd;
	h->used = true;
	h->since_us = now_us();
	{
		struct ucred uc;
		socklen_t ul = sizeof(uc);

		h->cred_pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0 ? uc.pid : 0;
	}
	/* Its channel comes behind the connect: watched, never waited for (nobody waits on a host). */
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP,
								     .data.u64 = key(EV_HOST_SOCK, hi, 0) });
}

/* The host's Unix socket has news: its channel, or (after it) its end. */
static void host_sock(int hi)
{
	struct host *h = &d.hosts[hi];

	if (!h->used)
		return;
	if (h->ready) {
		/* (nothing else ever comes there) What it queued before it ended is carried out first. */
		host_serve(hi);
		host_drop_ex(hi, "its socket ended", true);
		return;
	}
	if (tsp_chan_recv(&h->ch, h->usock) < 0) {
		d.dropped_hosts++;
		host_drop(hi, "no valid channel");
		return;
	}
	h->req = h->ch.req;
	h->resp = h->ch.resp;
	h->bell = h->ch.bell;
	if (!host_ready(hi)) {
		d.dropped_hosts++;
		host_drop(hi, "no memory for its sockets");
	}
}

/* Host |hi| rang.  Across the network its bell also tells that the link broke: the host's end. */
static void host_bell(int hi)
{
	struct host *h = &d.hosts[hi];
	uint64_t v;

	if (!h->used)
		return;
	if (!h->rc) {
		(void)!read(h->bell, &v, sizeof(v));
		return;
	}
	if (tsp_rchan_drain(h->rc) < 0) {
		host_serve(hi); /* (what it queued before it ended is carried out first) */
		host_drop_ex(hi, "its link ended", true);
	}
}

/* Hosts that connected and sent no channel within a second go; the time to look again, in ms. */
static int host_deadlines(void)
{
	int64_t now = now_us(), next = -1;

	for (int i = 0; i < d.max_hosts; i++) {
		struct host *h = &d.hosts[i];

		if (!h->used || h->ready)
			continue;
		if (now - h->since_us >= 1000000) {
			d.dropped_hosts++;
			host_drop(i, "no channel within a second");
		} else if (next < 0 || h->since_us + 1000000 - now < next) {
			next = h->since_us + 1000000 - now;
		}
	}
	return next < 0 ? -1 : (int)(next / 1000) + 1;
}

/* Eager receive that waited for room in a host's queue: again (the host reads as it can). */
static void retry_rx(int hi)
{
	struct host *h = &d.hosts[hi];

	h->rx_blocked = false;
	for (int i = 0; h->used && i < d.max_socks; i++) {
		struct tsock *s = &h->socks[i];

		if (s->fd >= 0 && s->rx_blocked &&
		    (!push_data(h, (uint32_t)i + 1, s, false) || !interest(hi, (uint32_t)i + 1, s))) {
			host_drop(hi, "it does not read its events");
			return;
		}
	}
}

/*
 * Host |hi| is dropped for |why|, unless its link broke (across the network:
 * the host ended, as a shared-memory host's Unix socket ends), which is no
 * fault of its own: then what it sent before is still sent.
 */
static void host_fail(int hi, const char *why)
{
	struct host *h = &d.hosts[hi];

	if (h->rc && tsp_rchan_drain(h->rc) < 0)
		host_drop_ex(hi, "its link ended", true);
	else
		host_drop(hi, why);
}

/* Serves what host |hi| has queued.  Returns the number of requests taken. */
static int host_serve(int hi)
{
	struct host *h = &d.hosts[hi];
	int n = 0;

	while (h->used && h->ready) {
		struct esock_tsp_msg q;
		uint32_t len;
		int rc;
		const uint8_t *r = esock_shmq_peek(h->req, &len, &rc);
		static uint8_t in[MSG_MAX];

		if (!r) {
			if (rc != -EAGAIN)
				host_fail(hi, "its queue is broken");
			return n;
		}
		/* Copied out before it is read: the host may change the shared octets meanwhile. */
		if (len > sizeof(in) || (memcpy(in, r, len), esock_tsp_decode(in, len, &q)) != (int)len) {
			host_drop(hi, "a request that is not TSP");
			return n;
		}
		esock_shmq_release(h->req);
		n++;
		h->calls++;
		rc = call(h, hi, &q, in, len);
		if (rc < 0) {
			host_fail(hi, "it broke the protocol or does not read its answers");
			return n;
		}
		if (q.h.op == ESOCK_TSP_BYE) {
			host_drop(hi, "said bye");
			return n;
		}
	}
	return n;
}

/* A parked call's socket is ready (|events|): the call again, from its kept request. */
static void resume(int hi, uint32_t handle, uint32_t events)
{
	struct host *h = &d.hosts[hi];
	struct tsock *s;
	struct esock_tsp_msg q;

	if (!h->used || !(s = sock_of(h, handle)))
		return;
	if ((s->eager && !accept_ahead(h, handle, s)) ||
	    !push_data(h, handle, s, (events & EPOLLIN) && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) ||
	    !interest(hi, handle, s)) {
		host_drop(hi, "it does not read its events");
		return;
	}
	if (s->olen) { /* room, maybe: the queued octets first */
		flush_out(h, s);
		if (!interest(hi, handle, s) || !credit(h, handle, s)) {
			host_drop(hi, "it does not read its events");
			return;
		}
	}
	if (s->parked) {
		if (esock_tsp_decode(s->parked, s->parked_len, &q) != (int)s->parked_len)
			return;
		switch (call(h, hi, &q, s->parked, s->parked_len)) {
		case 1: /* answered: the call waits no more (a WATCH may go on) */
			free(s->parked);
			s->parked = NULL;
			s->sent = 0;
			s->park_ev = 0;
			if (!interest(hi, handle, s)) {
				host_drop(hi, "out of memory");
				return;
			}
			break;
		case -1:
			host_drop(hi, "it does not read its answers");
			return;
		}
	}
	if (!tell_ready(h, handle, s))
		host_drop(hi, "it does not read its events");
}

static void print_counters(void)
{
	fprintf(stderr, "tcpserverd: hosts refused %llu, dropped %llu\n",
		(unsigned long long)d.refused_hosts, (unsigned long long)d.dropped_hosts);
	for (int i = 0; i < d.max_hosts; i++) {
		struct host *h = &d.hosts[i];
		int open = h->nsocks; /* (a host whose channel has not come has no table yet) */

		if (!h->used)
			continue;
		fprintf(stderr,
			"tcpserverd: host %d pid %u: sockets %d, calls %llu (failed %llu, waited %llu), "
			"accepted %llu, octets in %llu out %llu, registered in %llu out %llu\n",
			i, h->pid, open, (unsigned long long)h->calls, (unsigned long long)h->failed,
			(unsigned long long)h->parked, (unsigned long long)h->accepted,
			(unsigned long long)h->bytes_in, (unsigned long long)h->bytes_out,
			(unsigned long long)h->reg_in, (unsigned long long)h->reg_out);
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

/*
 * Is tcpserverd's CPU shared with another busy thread?  Spinning there takes
 * the CPU from it until the scheduler preempts tcpserverd, which then waits
 * a whole slice (milliseconds) with the hosts' calls in its queues; a yield
 * gives the CPU away for a slice as well.  Sleeping in epoll as soon as there
 * is no work costs the hosts a bell per call instead, and a wake-up preempts
 * the busy thread.  The scheduler's own count says which: the time this
 * thread waited on the run queue while runnable (/proc/thread-self/schedstat),
 * looked at every CPU_WINDOW_US while spinning.  Waits of CPU_WAIT_US per
 * slice on average, CPU_WAIT_SHARE of the window in all, two windows in a
 * row, mean somebody else holds the CPU for long stretches (a thread that
 * runs briefly, a host or a load generator, makes waits of 10-20 us): then
 * no spinning for CPU_HOLD_US, doubled (to CPU_HOLD_MAX_US) each time the
 * window of spinning after the hold finds it shared again.  Without the file
 * (no schedstat) a yield's time tells (a yield that gave the CPU away).
 */
#define CPU_WINDOW_US 10000
#define CPU_WAIT_US 100
#define CPU_WAIT_SHARE 50 /* 1/50 of the window */
#define CPU_HOLD_US 100000
#define CPU_HOLD_MAX_US 2000000

static struct {
	int fd;                /* /proc/thread-self/schedstat, -1: none */
	int64_t at_us, until_us, hold_us;
	uint64_t waited_ns, slices;
	unsigned hits;         /* windows in a row that found it shared */
	bool shared, retry, yield_shared;
} cpuq = { .fd = -1, .hold_us = CPU_HOLD_US };

static bool schedstat(uint64_t *waited_ns, uint64_t *slices)
{
	char buf[128];
	unsigned long long run, wait, n;
	ssize_t len = pread(cpuq.fd, buf, sizeof(buf) - 1, 0);

	if (len <= 0)
		return false;
	buf[len] = 0;
	if (sscanf(buf, "%llu %llu %llu", &run, &wait, &n) != 3)
		return false;
	*waited_ns = wait;
	*slices = n;
	return true;
}

static void cpu_watch_open(void)
{
	if ((cpuq.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) >= 0 &&
	    !schedstat(&cpuq.waited_ns, &cpuq.slices)) {
		close(cpuq.fd);
		cpuq.fd = -1;
	}
	cpuq.at_us = now_us();
}

/* True while tcpserverd should not spin (its CPU is shared). */
static bool cpu_shared(int64_t now)
{
	uint64_t w, n;
	bool busy;

	if (cpuq.fd < 0)
		return false; /* (yields only, in loop) */
	if (cpuq.shared) {
		if (now < cpuq.until_us)
			return true;
		cpuq.shared = false; /* a window of spinning, to see */
		cpuq.retry = true;
		(void)schedstat(&cpuq.waited_ns, &cpuq.slices);
		cpuq.at_us = now;
		return false;
	}
	if (now - cpuq.at_us < CPU_WINDOW_US || !schedstat(&w, &n))
		return false;
	busy = n > cpuq.slices && w - cpuq.waited_ns > (uint64_t)CPU_WAIT_US * 1000 * (n - cpuq.slices) &&
	       w - cpuq.waited_ns > (uint64_t)(now - cpuq.at_us) * 1000 / CPU_WAIT_SHARE;
	/* (two windows in a row, or the one after a hold: a process starting beside it is not a hog) */
	cpuq.hits = busy ? cpuq.hits + 1 : 0;
	if (busy && (cpuq.hits >= 2 || cpuq.retry)) {
		if (!cpuq.retry)
			cpuq.hold_us = CPU_HOLD_US;
		logv("CPU shared (waited %llu us in %d slices of %lld us): no spinning for %lld ms\n",
		     (unsigned long long)(w - cpuq.waited_ns) / 1000, (int)(n - cpuq.slices),
		     (long long)(now - cpuq.at_us), (long long)cpuq.hold_us / 1000);
		cpuq.shared = true;
		cpuq.until_us = now + cpuq.hold_us;
		cpuq.hold_us = cpuq.hold_us * 2 > CPU_HOLD_MAX_US ? CPU_HOLD_MAX_US : cpuq.hold_us * 2;
		cpuq.hits = 0;
	}
	cpuq.retry = false;
	cpuq.waited_ns = w;
	cpuq.slices = n;
	cpuq.at_us = now;
	return cpuq.shared;
}

static void loop(void)
{
	int64_t busy_until = 0;
	unsigned idle_rounds = 0;

	cpu_watch_open();
	while (!d.quit) {
		struct epoll_event ev[64];
		int work = 0, n, tmo = 0, cpu = sched_getcpu();
		int64_t now;
		bool blocked = false, shared;

		for (int i = 0; i < d.max_hosts; i++)
			if (d.hosts[i].used && d.hosts[i].ready) {
				esock_shmq_set_cpu(d.hosts[i].req, cpu); /* (a host on this CPU does not spin) */
				work += host_serve(i);
				if (d.hosts[i].used && d.hosts[i].rx_blocked)
					retry_rx(i);
				blocked |= d.hosts[i].used && d.hosts[i].rx_blocked;
			}
		now = now_us();
		shared = cpu_shared(now);
		if (work)
			busy_until = now + (shared ? 0 : d.spin_us);
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
		}
		if (!work && !tmo && !shared && (cpuq.yield_shared || (++idle_rounds & 15) == 0)) {
			/*
			 * Spinning: a host on this CPU (or a thread that runs a
			 * little now and then) gets it to make its next call.  A yield
			 * that gave the CPU away says so: then every round yields,
			 * else one in sixteen (a yield between looks delays the look
			 * on a core of its own).  Not beside a busy thread (shared):
			 * there a yield gives away a whole slice.
			 */
			int64_t t0 = now_us();

			sched_yield();
			cpuq.yield_shared = now_us() - t0 > 5;
		}
		n = epoll_wait(d.epfd, ev, 64, tmo);
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
			int kind = (int)(ev[i].data.u64 & 0xff), hi = (int)((ev[i].data.u64 >> 8) & 0xffffff);
			uint32_t handle = (uint32_t)(ev[i].data.u64 >> 32);

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

int main(int argc, char **argv)
{
	const char *cpu = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "s:l:H:S:c:p:vh")) != -1) {
		switch (opt) {
		case 's': d.path = optarg; break;
		case 'l': d.net = optarg; break;
		case 'H': d.max_hosts = atoi(optarg); break;
		case 'S': d.max_socks = atoi(optarg); break;
		case 'c': cpu = optarg; break;
		case 'p': d.spin_us = atoi(optarg); break;
		case 'v': d.verbose = 1; break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: tcpserverd -s PATH [-l ADDR:PORT] [-H MAX_HOSTS] [-S MAX_SOCKETS] [-c CPU] [-p SPIN_US] [-v]\n"
				"Carries out the socket calls of host processes reaching it at the Unix socket PATH\n"
				"and, with -l, of hosts of other nodes connecting over iWARP (esock) to ADDR:PORT.\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!d.path || d.max_hosts < 1 || d.max_hosts > 1 << 16 || d.max_socks < 1 ||
	    d.max_socks > 1 << 20 || d.spin_us < 0) {
		fprintf(stderr, "tcpserverd: -s PATH is needed; -H 1..65536, -S 1..1048576, -p >= 0\n");
		return 2;
	}
	if (cpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(atoi(cpu), &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			perror("tcpserverd: -c");
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);
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
	for (int i = 0; i < d.max_hosts; i++)
		host_drop(i, "tcpserverd ends");
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
