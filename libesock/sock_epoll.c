/* SPDX-License-Identifier: MIT */
/*
 * epoll for DDPMODE sockets.  The kernel's readiness of the TCP socket is
 * not the application's (the engine reads the socket; a message may be
 * buffered while the socket looks empty), so a DDPMODE socket is watched
 * through its CQ's eventfd instead: epoll_ctl registers that eventfd in the
 * application's epoll instance with a marker value (a per-process random
 * high half whose top bit is set, never a user-space pointer, and the fd in
 * the low half), and epoll_wait turns marker events back into the
 * application's events and data after asking the socket layer (sock_ready).
 *
 * Level-triggered entries are checked before every sleep (a partly read
 * message stays readable).  Edge-triggered ones report a change: new
 * messages, EOF or error since the last report, or room to send again.
 * EPOLLONESHOT disables the entry until EPOLL_CTL_MOD.  The CQ is armed
 * before each sleep so that the engine's next completion kicks the eventfd.
 * Sockets not yet connected (a non-blocking connect: TCP, then the MPA
 * exchange) are driven by sock_ready without waiting, and the sleep is cut
 * into 10 ms slices while one is pending.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "libesock/ep.h"
#include "libesock/fdtab.h"
#include "libesock/real.h"
#include "libesock/sock.h"

struct ep_entry {
	int fd;
	struct esock_sock *s;
	struct epoll_event ev;   /* what the application registered */
	bool disabled;           /* EPOLLONESHOT fired */
	uint64_t seen_rx;        /* ET: the socket's rx generation at the last report */
	bool seen_out;           /* ET: writable at the last report */
};

struct epset {
	pthread_mutex_t lock;
	struct ep_entry *e;
	int n, cap;
};

atomic_int sock_epoll_regs; /* DDPMODE entries in all sets: 0 lets epoll_wait pass */
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct epset **sets;
static unsigned nsets;
static uint64_t marker_hi;

static void init_marker(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	marker_hi = ((uint64_t)(0x80000000u | ((uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 12)))
		    << 32;
}

static struct epset *set_of(int epfd, bool create)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct epset *st = NULL;

	pthread_once(&once, init_marker);
	if (epfd < 0)
		return NULL;
	pthread_mutex_lock(&sets_lock);
	if ((unsigned)epfd >= nsets && create) {
		unsigned nn = (unsigned)epfd + 64;
		struct epset **ns = realloc(sets, nn * sizeof(*ns));

		if (ns) {
			memset(ns + nsets, 0, (nn - nsets) * sizeof(*ns));
			sets = ns;
			nsets = nn;
		}
	}
	if ((unsigned)epfd < nsets) {
		st = sets[epfd];
		if (!st && create && (st = calloc(1, sizeof(*st)))) {
			pthread_mutex_init(&st->lock, NULL);
			sets[epfd] = st;
		}
	}
	pthread_mutex_unlock(&sets_lock);
	return st;
}

/* A new epoll instance got the number |epfd|: forget an older one's set. */
void sock_epoll_fresh(int epfd)
{
	struct epset *st = set_of(epfd, false);

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	atomic_fetch_sub(&sock_epoll_regs, st->n);
	st->n = 0;
	pthread_mutex_unlock(&st->lock);
}

/* The socket behind |fd| is going away: drop it from every set. */
void sock_epoll_forget(struct esock_sock *s)
{
	pthread_mutex_lock(&sets_lock);
	for (unsigned i = 0; i < nsets; i++) {
		struct epset *st = sets[i];

		if (!st)
			continue;
		pthread_mutex_lock(&st->lock);
		for (int k = 0; k < st->n; k++)
			if (st->e[k].s == s) {
				st->e[k--] = st->e[--st->n];
				atomic_fetch_sub(&sock_epoll_regs, 1);
			}
		pthread_mutex_unlock(&st->lock);
	}
	pthread_mutex_unlock(&sets_lock);
}

static struct ep_entry *find(struct epset *st, int fd)
{
	for (int k = 0; k < st->n; k++)
		if (st->e[k].fd == fd)
			return &st->e[k];
	return NULL;
}

/* The rx generation: changes with every message, EOF or error (a listener: every Request in). */
static uint64_t rx_gen(struct esock_sock *s)
{
	if (s->st == SOCK_LISTENING && s->lst)
		return ep_listener_completed(s->lst);
	return s->stats->rx_msgs + (s->eof ? 1u << 30 : 0) + (s->err ? 1u << 31 : 0);
}

/* What the application's epoll instance watches for |s|: its CQ's eventfd, or a listener's poll fd. */
static int watched_fd(struct esock_sock *s)
{
	return s->st == SOCK_LISTENING && s->lst ? esock_listener_poll_fd(s->lst) : esock_cq_fd(s->cq);
}

int sock_epoll_ctl(struct esock_sock *s, int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epset *st = set_of(epfd, true);
	struct epoll_event mark = { .events = EPOLLIN, .data.u64 = marker_hi | (uint32_t)fd };
	struct ep_entry *e;
	int rc = 0;

	if (!st)
		return -ENOMEM;
	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	pthread_mutex_lock(&s->lock);
	if (!(s->st == SOCK_LISTENING && s->lst) && !s->cq &&
	    (rc = esock_cq_create(s->o.rdepth + 1024, &s->cq)) < 0) {
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&st->lock);
	e = find(st, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (e) {
			rc = -EEXIST;
			break;
		}
		/* The kernel checks epfd and gives its errors (EBADF, EINVAL, ELOOP). */
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, watched_fd(s), &mark) < 0) {
			rc = -errno;
			break;
		}
		if (st->n == st->cap) {
			int nc = st->cap ? st->cap * 2 : 8;
			struct ep_entry *ne = realloc(st->e, (size_t)nc * sizeof(*ne));

			if (!ne) {
				REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, watched_fd(s), NULL);
				rc = -ENOMEM;
				break;
			}
			st->e = ne;
			st->cap = nc;
		}
		st->e[st->n++] = (struct ep_entry){ .fd = fd, .s = s, .ev = *ev, .seen_rx = ~0ull };
		atomic_fetch_add(&sock_epoll_regs, 1);
		if (s->cq)
			esock_cq_arm(s->cq, false);
		break;
	case EPOLL_CTL_MOD:
		if (!e) {
			rc = -ENOENT;
			break;
		}
		e->ev = *ev;
		e->disabled = false;
		e->seen_rx = ~0ull;
		e->seen_out = false;
		break;
	case EPOLL_CTL_DEL:
		if (!e) {
			rc = -ENOENT;
			break;
		}
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, watched_fd(s), NULL);
		*e = st->e[--st->n];
		atomic_fetch_sub(&sock_epoll_regs, 1);
		break;
	default:
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/*
 * What entry |e| has to report now (0: nothing), updating its edge state.
 * Not-yet-connected sockets ask the kernel (and finish their MPA exchange).
 */
static uint32_t entry_events(struct ep_entry *e, bool *pending)
{
	struct esock_sock *s = e->s;
	uint32_t want = e->ev.events, r;
	bool et = want & EPOLLET;

	if (e->disabled)
		return 0;
	if (s->st == SOCK_MARKED) {
		*pending = true; /* a connect may start: look again in a slice */
		return 0;
	}
	/* Connecting (TCP or MPA): sock_ready drives the exchange; its events do not kick the CQ. */
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		*pending = true;
	r = sock_ready(s, want & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI));
	if (et) {
		uint64_t g = rx_gen(s);

		if (!(r & (EPOLLIN | EPOLLRDHUP)) || g == e->seen_rx)
			r &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
		else
			e->seen_rx = g;
		if (r & EPOLLOUT) {
			if (e->seen_out)
				r &= ~(uint32_t)EPOLLOUT;
			else
				e->seen_out = true;
		} else {
			e->seen_out = false; /* the next room is a new edge */
		}
		if (!(r & ~(uint32_t)(EPOLLERR | EPOLLHUP)) && (r & (EPOLLERR | EPOLLHUP)) &&
		    e->seen_rx == g)
			r = 0; /* an error is one edge, reported with the EPOLLIN above */
	}
	if (r && (want & EPOLLONESHOT))
		e->disabled = true;
	return r;
}

/* Fills |out| from the set's entries that are ready (|only_fd| >= 0: that one). */
static int collect(struct epset *st, struct epoll_event *out, int max, int only_fd,
		   bool *pending)
{
	int n = 0;

	pthread_mutex_lock(&st->lock);
	for (int k = 0; k < st->n && n < max; k++) {
		struct ep_entry *e = &st->e[k];
		uint32_t r;

		if (only_fd >= 0 && e->fd != only_fd)
			continue;
		if (esock_fdtab_get(e->fd) != e->s)
			continue; /* closed meanwhile */
		if ((r = entry_events(e, pending))) {
			out[n].events = r;
			out[n++].data = e->ev.data;
		}
	}
	pthread_mutex_unlock(&st->lock);
	return n;
}

static void arm_all(struct epset *st)
{
	pthread_mutex_lock(&st->lock);
	for (int k = 0; k < st->n; k++)
		if (st->e[k].s->cq && esock_fdtab_get(st->e[k].fd) == st->e[k].s)
			esock_cq_arm(st->e[k].s->cq, false);
	pthread_mutex_unlock(&st->lock);
}

static bool is_mark(const struct epoll_event *ev)
{
	return (ev->data.u64 & 0xffffffff00000000ull) == marker_hi;
}

int sock_epoll_wait(int epfd, struct epoll_event *out, int max, int timeout_ms,
		    const sigset_t *mask)
{
	struct epset *st = set_of(epfd, false);
	int64_t end = timeout_ms > 0 ? ep_now_ms() + timeout_ms : 0;

	if (!st || !st->n || max <= 0)
		return mask ? REAL(epoll_pwait)(epfd, out, max, timeout_ms, mask)
			    : REAL(epoll_wait)(epfd, out, max, timeout_ms);
	for (;;) {
		bool pending = false;
		int got, left = timeout_ms, kn, n = 0;

		arm_all(st);
		got = collect(st, out, max, -1, &pending);
		if (got)
			left = 0;
		else if (timeout_ms > 0 && (left = (int)(end - ep_now_ms())) < 0)
			left = 0;
		if (pending && (left < 0 || left > 10))
			left = 10;
		kn = mask ? REAL(epoll_pwait)(epfd, out + got, max - got, left, mask)
			  : REAL(epoll_wait)(epfd, out + got, max - got, left);
		if (kn < 0)
			return got ? got : -1;
		/* Keep the kernel's own events; marker events were answered by collect. */
		for (int i = got; i < got + kn; i++)
			if (!is_mark(&out[i]))
				out[got + n++] = out[i];
		got += n;
		if (got == 0 && kn > 0) /* a kick: look at the sockets now */
			got = collect(st, out, max, -1, &pending);
		if (got || timeout_ms == 0 || (timeout_ms > 0 && ep_now_ms() >= end))
			return got;
	}
}
