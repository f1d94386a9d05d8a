/* SPDX-License-Identifier: MIT */
/*
 * epoll for DDPMODE sockets.  The kernel's readiness of the TCP socket is
 * not the application's (the engine reads the socket; a message may be
 * buffered while the socket looks empty), so a DDPMODE socket is watched
 * through its CQ: the set has one doorbell (an eventfd in the application's
 * epoll instance) and a list of kicked descriptors, and each socket's CQ
 * has the set as a watcher (ep_cq_watch), which notes the socket and rings
 * the bell once until the next look.  So a connection costs no descriptor
 * for this, and a thousand completions between two epoll_wait calls wake
 * the application once.  A listener is watched through its poll descriptor
 * (ep_listen.c), in the kernel's set.  Both are registered with a marker
 * value (a per-process random high half whose top bit is set, never a
 * user-space pointer; the low half is the application's fd, or all ones
 * for the doorbell), and epoll_wait turns marker events back into the
 * application's events and data after asking the socket layer (sock_ready).
 * Marker values never reach the application.  A connected socket whose
 * input the engine leaves to its callers (a lazy QP, ep.h) is in the
 * kernel's set itself, edge-triggered, under its marker: epoll_wait reads
 * it in the calling thread, as the kernel's TCP would have, before it looks.
 *
 * Cost is per ready entry, not per entry: an entry is looked at only when
 * its marker event fired, when it was just added or modified, when it is
 * level-triggered and was ready at the last look (it must be reported again
 * while it stays so), or while it connects.  Entries are found by the
 * application's fd in O(1).  After a look the CQ is armed again, so that the
 * engine's next completion kicks the eventfd.
 *
 * Edge-triggered entries report a change: new messages, EOF or error since
 * the last report, or room to send again.  EPOLLONESHOT disables the entry
 * until EPOLL_CTL_MOD.  Sockets that connect (TCP, then the MPA exchange) are
 * driven by sock_ready without waiting, and the sleep is cut into 10 ms
 * slices while one does; a verbs socket that waits for room to send and
 * lacks only credits cuts it into its credit slices (sock_vb_out_slice).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libesock/fdtab.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "util/tls.h"

struct ep_entry {
	int fd;                  /* the application's descriptor */
	/* (Offloaded, wfd and lst_kick serve its own kernel listener, share=P: sock_off_kfd.) */
	int wfd;                 /* what the kernel's set watches for it (a listener), or -1 */
	struct esock_cq *wcq;    /* the CQ that rings the set's doorbell for it, or NULL */
	int sfd;                 /* its socket in the kernel's set (socket_watch), or -1 */
	uint32_t sev;            /* ... for these events */
	bool rx_kick;            /* that socket had news: read it at the next look */
	bool rx_end;             /* ... a FIN, reset or error among it: read to the end */
	bool rx_in;              /* ... the kernel said input waits (EPOLLIN), not only room */
	bool lst_kick;           /* a listener's poll descriptor had news: look at its backlog */
	bool off;                /* an offloaded socket (sock_off.h): the pump kicks it */
	struct esock_sock *s;
	struct epoll_event ev;   /* what the application registered */
	bool disabled;           /* EPOLLONESHOT fired */
	bool parked;             /* deleted by the application, kept for its next add (unpark) */
	bool queued;             /* in the set's look-at list */
	uint64_t seen_rx;        /* ET: the socket's rx generation at the last report */
	uint64_t seen_out;       /* ET: the socket's out_full count at the last EPOLLOUT report */
};

struct epset {
	pthread_mutex_t lock;
	struct ep_entry **byfd;  /* by the application's descriptor */
	int capfd, n;
	struct ep_entry **q;     /* entries to look at before the next sleep */
	int nq, capq;
	int bell;                /* the doorbell eventfd, or -1; in the kernel's set when in_kernel */
	bool bell_in_kernel;
	int noff;                /* entries of offloaded sockets */
	bool off_in_kernel;      /* the offload channel's bell is in the kernel's set */
	bool off_edge;           /* ... edge-triggered (sock_off_bell_edge) */
	pthread_mutex_t kick_lock; /* (a leaf lock: taken under CQ locks) the list below */
	int *kicked, nkicked, capkicked;
	bool kick_lost;          /* the list could not grow: look at every entry */
	bool rung;               /* the bell rang since the last look at the list */
	int sleepers;            /* threads that may sleep in the kernel's wait on the set */
	bool outside;            /* the set is watched from outside (poll, another set) */
};

#define BELL_KEY 0xffffffffu /* the low half of the doorbell's marker */
#define OFF_KEY 0xfffffffeu  /* ... and of the offload channel's bell */

/* The set whose epoll_wait pumps the offload channel in this thread: its kicks need no ring. */
static ESOCK_TLS struct epset *pumping;

atomic_int sock_epoll_regs; /* DDPMODE entries in all sets: 0 lets epoll_wait pass */
atomic_bool sock_epoll_used; /* a marker was ever registered (pass-through filters them) */
static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct epset **sets;
static unsigned nsets;
static atomic_uint sets_hi; /* above the highest epfd that has a set: a quick miss */
static uint64_t marker_hi;

static void init_marker(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	marker_hi = ((uint64_t)(0x80000000u | ((uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 12)))
		    << 32;
}

static uint64_t mark_of(int fd)
{
	return marker_hi | (uint32_t)fd;
}

static bool is_mark(const struct epoll_event *ev)
{
	return (ev->data.u64 & 0xffffffff00000000ull) == marker_hi;
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
			pthread_mutex_init(&st->kick_lock, NULL);
			st->bell = -1;
			sets[epfd] = st;
			if (atomic_load(&sets_hi) <= (unsigned)epfd)
				atomic_store(&sets_hi, (unsigned)epfd + 1);
		}
	}
	pthread_mutex_unlock(&sets_lock);
	return st;
}

static struct ep_entry *find(struct epset *st, int fd)
{
	return fd >= 0 && fd < st->capfd ? st->byfd[fd] : NULL;
}

static void enqueue(struct epset *st, struct ep_entry *e)
{
	if (e->queued || e->parked) /* (a parked one is looked at when it is added again) */
		return;
	if (st->nq == st->capq) {
		int nc = st->capq ? st->capq * 2 : 16;
		struct ep_entry **nq = realloc(st->q, (size_t)nc * sizeof(*nq));

		if (!nq)
			return; /* looked at when its marker fires again */
		st->q = nq;
		st->capq = nc;
	}
	st->q[st->nq++] = e;
	e->queued = true;
}

static void dequeue(struct epset *st, struct ep_entry *e)
{
	if (!e->queued)
		return;
	for (int i = 0; i < st->nq; i++)
		if (st->q[i] == e) {
			st->q[i] = st->q[--st->nq];
			break;
		}
	e->queued = false;
}

/*
 * A CQ watcher (under that CQ's lock): the socket of |fd| has news.  Notes
 * it and rings the bell, once until the next look at the list.
 */
static void set_kick(void *arg, int fd)
{
	struct epset *st = arg;
	bool ring;

	pthread_mutex_lock(&st->kick_lock);
	if (st->nkicked == st->capkicked) {
		int nc = st->capkicked ? st->capkicked * 2 : 64;
		int *k = realloc(st->kicked, (size_t)nc * sizeof(*k));

		if (k) {
			st->kicked = k;
			st->capkicked = nc;
		}
	}
	if (st->nkicked < st->capkicked)
		st->kicked[st->nkicked++] = fd;
	else
		st->kick_lost = true;
	/*
	 * Rung only for a thread that may sleep on the set, or a watcher outside
	 * it: a kick by the application's own calls between two waits (an
	 * offloaded send that takes the channel's events) is found by the next
	 * wait's look at the list, with no write and no read of the bell.  The
	 * thread that pumps in epoll_wait takes the list itself (take_kicks).
	 */
	ring = !st->rung && st != pumping && (st->sleepers || st->outside);
	st->rung |= ring;
	pthread_mutex_unlock(&st->kick_lock);
	if (ring) {
		uint64_t one = 1;

		(void)!REAL(write)(st->bell, &one, sizeof(one));
	}
}

static void enqueue(struct epset *st, struct ep_entry *e);

/* The kicked entries are looked at next (st->lock held); |quiet|: the bell rang, quiet it. */
static void take_kicks(struct epset *st, bool quiet)
{
	uint64_t v;
	bool lost;

	if (quiet)
		(void)!REAL(read)(st->bell, &v, sizeof(v));
	pthread_mutex_lock(&st->kick_lock);
	for (int i = 0; i < st->nkicked; i++) {
		int fd = st->kicked[i];

		if (fd >= 0 && fd < st->capfd && st->byfd[fd])
			enqueue(st, st->byfd[fd]);
	}
	st->nkicked = 0;
	lost = st->kick_lost;
	st->kick_lost = false;
	st->rung = false;
	pthread_mutex_unlock(&st->kick_lock);
	if (lost)
		for (int fd = 0; fd < st->capfd; fd++)
			if (st->byfd[fd])
				enqueue(st, st->byfd[fd]);
}

static void bell_rang(struct epset *st)
{
	take_kicks(st, true);
}

/* Kicks noted since the last look (st->lock held): taken into the list, true if any. */
static bool take_new_kicks(struct epset *st)
{
	pthread_mutex_lock(&st->kick_lock);
	bool rung = st->rung, any = st->nkicked || st->kick_lost;

	pthread_mutex_unlock(&st->kick_lock);
	if (any || rung)
		take_kicks(st, rung);
	return any;
}

/*
 * A thread about to wait on |st| for |left| ms: counted as a sleeper unless
 * kicks wait (then it must not sleep: returns false).  A kick after this
 * rings the bell, so the wait cannot miss it.
 */
static bool sleeper_begin(struct epset *st, int left)
{
	bool idle;

	pthread_mutex_lock(&st->kick_lock);
	idle = !st->nkicked && !st->kick_lost;
	st->sleepers += idle && left;
	pthread_mutex_unlock(&st->kick_lock);
	return idle;
}

static void sleeper_end(struct epset *st)
{
	pthread_mutex_lock(&st->kick_lock);
	st->sleepers--;
	pthread_mutex_unlock(&st->kick_lock);
}

void sock_epoll_outside(int fd)
{
	struct epset *st;

	if ((unsigned)fd >= atomic_load_explicit(&sets_hi, memory_order_relaxed) ||
	    !(st = set_of(fd, false)) || st->outside) /* (marked for good: no lock again) */
		return;
	pthread_mutex_lock(&st->kick_lock);
	bool ring = !st->outside && !st->rung && st->bell >= 0 && (st->nkicked || st->kick_lost);

	st->outside = true; /* (for good: who watches the set from outside is not told) */
	st->rung |= ring;
	pthread_mutex_unlock(&st->kick_lock);
	if (ring) {
		uint64_t one = 1;

		(void)!REAL(write)(st->bell, &one, sizeof(one));
	}
}

void sock_epoll_kick(struct esock_sock *s)
{
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->nepregs; i++) {
		struct epset *st = set_of(s->epregs[i].epfd, false);

		if (st && st->bell >= 0)
			set_kick(st, s->epregs[i].fd);
	}
	pthread_mutex_unlock(&s->lock);
}

/*
 * The offload channel's events, taken by the thread that waits on |st|
 * (st->lock not held): what they kicked is queued for the look.
 */
static void off_pump_events(struct epset *st)
{
	pumping = st;
	sock_off_pump();
	pumping = NULL;
}

/* ... and the kicks they made taken into the list at once (after a wait). */
static void off_pump(struct epset *st)
{
	off_pump_events(st);
	pthread_mutex_lock(&st->lock);
	if (st->bell >= 0)
		take_new_kicks(st);
	pthread_mutex_unlock(&st->lock);
}

static int bell_ready(struct epset *st, int epfd);

/* An offloaded socket's entry: the set's doorbell and the channel's bell in the kernel's set. */
static int off_watch(struct epset *st, int epfd)
{
	struct epoll_event mark = { .events = EPOLLIN, .data.u64 = marker_hi | OFF_KEY };
	int rc = bell_ready(st, epfd), bell = sock_off_bell();

	if (rc < 0)
		return rc;
	if (!st->off_in_kernel && bell >= 0) {
		/* (edge-triggered where it can be: no read of the bell after each wake-up) */
		if (sock_off_bell_edge())
			mark.events |= EPOLLET;
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, bell, &mark) < 0 && errno != EEXIST)
			return -errno;
		st->off_in_kernel = true;
		st->off_edge = mark.events & EPOLLET;
	}
	return 0;
}

/* The set's doorbell, in the kernel's set |epfd| (st->lock held).  0 or -errno. */
static int bell_ready(struct epset *st, int epfd)
{
	struct epoll_event mark = { .events = EPOLLIN, .data.u64 = marker_hi | BELL_KEY };

	if (st->bell < 0) {
		if ((st->bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
			return -errno;
		esock_fd_own(st->bell);
	}
	if (!st->bell_in_kernel) {
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, st->bell, &mark) < 0)
			return -errno;
		st->bell_in_kernel = true;
	}
	return 0;
}

/* |e| parked or not, counted in its socket (sock_recv.c: a set that reports it). */
static void set_parked(struct ep_entry *e, bool on)
{
	pthread_mutex_lock(&e->s->lock);
	e->s->epparked += on ? 1 : -1;
	pthread_mutex_unlock(&e->s->lock);
	e->parked = on;
}

/* Forgets entry |e| of |st| (lock held); |kernel|: also out of the kernel's set |epfd|. */
static void remove_entry(struct epset *st, int epfd, struct ep_entry *e, bool kernel)
{
	if (e->parked)
		set_parked(e, false);
	if (e->wcq)
		ep_cq_unwatch(e->wcq, st, e->fd);
	st->noff -= e->off;
	if (kernel && e->wfd >= 0)
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, e->wfd, NULL);
	if (kernel && e->sfd >= 0)
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, e->sfd, NULL);
	dequeue(st, e);
	st->byfd[e->fd] = NULL;
	st->n--;
	atomic_fetch_sub(&sock_epoll_regs, 1);
	free(e);
}

/* A new epoll instance got the number |epfd|: forget an older one's set. */
void sock_epoll_fresh(int epfd)
{
	struct epset *st = set_of(epfd, false);

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	for (int fd = 0; fd < st->capfd && st->n; fd++)
		if (st->byfd[fd])
			remove_entry(st, epfd, st->byfd[fd], false);
	/* No CQ rings the old bell any more (unwatched): it goes, the new set gets its own. */
	if (st->bell >= 0)
		esock_fd_close(st->bell);
	st->bell = -1;
	st->bell_in_kernel = false;
	st->off_in_kernel = false;
	pthread_mutex_lock(&st->kick_lock);
	st->nkicked = 0;
	st->rung = st->kick_lost = false;
	pthread_mutex_unlock(&st->kick_lock);
	pthread_mutex_unlock(&st->lock);
}

/*
 * Remembers in |s| that (epfd, fd) names it, so that its close finds it at
 * once (and its CQ is unwatched before it goes).  0 or -ENOMEM.
 */
static int reg_add(struct esock_sock *s, int epfd, int fd)
{
	pthread_mutex_lock(&s->lock);
	if (s->nepregs == s->capepregs) {
		int nc = s->capepregs ? s->capepregs * 2 : 2;
		struct sock_epreg *n = realloc(s->epregs, (size_t)nc * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		s->epregs = n;
		s->capepregs = nc;
	}
	s->epregs[s->nepregs++] = (struct sock_epreg){ .epfd = epfd, .fd = fd };
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void reg_del(struct esock_sock *s, int epfd, int fd)
{
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->nepregs; i++)
		if (s->epregs[i].epfd == epfd && s->epregs[i].fd == fd) {
			s->epregs[i] = s->epregs[--s->nepregs];
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

/*
 * The socket behind |fd| is going away: out of every set that holds it, the
 * kernel's included (its watched descriptor may outlive it: no marker may
 * ever reach the application).
 */
void sock_epoll_forget(struct esock_sock *s)
{
	struct sock_epreg *r;
	int n;

	pthread_mutex_lock(&s->lock);
	r = s->epregs;
	n = s->nepregs;
	s->epregs = NULL;
	s->nepregs = s->capepregs = 0;
	pthread_mutex_unlock(&s->lock);
	for (int i = 0; i < n; i++) {
		struct epset *st = set_of(r[i].epfd, false);
		struct ep_entry *e;

		if (!st)
			continue;
		pthread_mutex_lock(&st->lock);
		if ((e = find(st, r[i].fd)) && e->s == s)
			remove_entry(st, r[i].epfd, e, true);
		pthread_mutex_unlock(&st->lock);
	}
	free(r);
}

/* The rx generation: changes with every message, EOF or error (a listener: every Request in). */
static uint64_t rx_gen(struct esock_sock *s)
{
	if (s->off)
		return sock_off_rx_gen(s);
	if (s->verbs && s->st == SOCK_LISTENING)
		return sock_vb_requests(s);
	if (s->st == SOCK_LISTENING && s->lst)
		return ep_listener_completed(s->lst);
	return s->stats->rx_msgs + s->rx_hints + (s->eof ? 1u << 30 : 0) + (s->err ? 1u << 31 : 0);
}

/*
 * A listener's poll descriptor (in the kernel's set), or -1: its CQ rings the
 * bell.  A socket on the verbs backend: its completion channel (sock_vb.h).
 */
static int watched_fd(struct esock_sock *s)
{
	if (s->off)
		return sock_off_kfd(s); /* (a listener's own share of connections, or -1) */
	if (s->verbs)
		return sock_vb_fd(s);
	return s->st == SOCK_LISTENING && s->lst ? esock_listener_poll_fd(s->lst) : -1;
}

/* The QP whose input epoll_wait reads for |e| (lazy, connected), or NULL. */
static struct esock_qp *lazy_qp(const struct ep_entry *e)
{
	struct esock_qp *qp = e->s->qp;

	return e->s->st == SOCK_CONNECTED && qp && ep_qp_lazy(qp) && ep_qp_fd(qp) >= 0 && !e->s->suspended
		       ? qp : NULL;
}

/*
 * The socket |e| watches in the kernel's set, and for what (*events): a lazy
 * QP's, for its input; a connecting one's, for TCP's completion and then
 * the MPA Reply, which drive the exchange (sock_ready).  Unwatched, a
 * connect went on only at the 10 ms look at pending entries: a
 * non-blocking connect waited for in epoll_wait took 10.5 ms, 0.2 plain.
 * -1: none.
 */
static int socket_watch(const struct ep_entry *e, uint32_t *events)
{
	struct esock_qp *qp = lazy_qp(e);
	struct esock_sock *s = e->s;

	*events = EPOLLIN | EPOLLRDHUP | EPOLLET;
	if (qp)
		return ep_qp_fd(qp);
	if ((s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING) && !s->off && s->fd >= 0) {
		*events |= EPOLLOUT;
		return s->fd;
	}
	*events = 0;
	return -1;
}

/*
 * |e|'s socket into the kernel's set as socket_watch says (or out of it,
 * once there is nothing to watch; or moved, when the QP moved to another
 * descriptor).
 */
static int watch_socket(int epfd, struct ep_entry *e)
{
	uint32_t events;
	int want = socket_watch(e, &events);

	if (want == e->sfd && events == e->sev)
		return 0;
	if (want >= 0 && want == e->sfd) { /* connected on the descriptor it connected on */
		struct epoll_event ev = { .events = events, .data.u64 = mark_of(e->fd) };

		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_MOD, want, &ev) < 0)
			return -errno;
		e->sev = events;
		return 0;
	}
	if (e->sfd >= 0) /* (fails harmlessly when that descriptor is closed already) */
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, e->sfd, NULL);
	e->sfd = -1;
	e->sev = 0;
	if (want >= 0) {
		struct epoll_event ev = { .events = events, .data.u64 = mark_of(e->fd) };

		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, want, &ev) < 0)
			return -errno;
		/*
		 * No read here: the kernel looks at the socket as it adds it and
		 * queues an edge for whatever (octets, FIN, error) waits already.
		 * Reading to EAGAIN here cost two empty recvs per message for
		 * programs that add and delete their sockets around each request.
		 */
		e->sfd = want;
		e->sev = events;
	}
	return 0;
}

/*
 * Watches |e|'s socket the way its state asks (st->lock held): a listener's
 * poll descriptor in the kernel's set, else its CQ through the bell.
 * 0 or -errno.
 */
static int watch(struct epset *st, int epfd, struct ep_entry *e)
{
	struct esock_sock *s = e->s;
	int wfd = watched_fd(s), rc;

	if (s->off && ((rc = off_watch(st, epfd)) < 0 || wfd < 0))
		return rc;
	if (wfd >= 0) {
		/*
		 * (an offloaded listener's own kernel socket edge-triggered: each new
		 * connection one kick, not one per wait until it is taken)
		 */
		struct epoll_event mark = { .events = EPOLLIN | (s->off ? EPOLLET : 0u),
					    .data.u64 = mark_of(e->fd) };

		if (wfd == e->wfd)
			return 0;
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, wfd, &mark) < 0)
			return -errno;
		if (e->wfd >= 0)
			REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, e->wfd, NULL);
		e->wfd = wfd;
		e->lst_kick = true; /* (the first look: what came before the watch) */
		if (e->wcq) { /* it began to listen */
			ep_cq_unwatch(e->wcq, st, e->fd);
			e->wcq = NULL;
		}
		return 0;
	}
	if (!e->wcq && s->cq) {
		if ((rc = bell_ready(st, epfd)) < 0 || (rc = ep_cq_watch(s->cq, set_kick, st, e->fd)) < 0)
			return rc;
		e->wcq = s->cq;
	}
	return watch_socket(epfd, e);
}

/*
 * Event loops that delete a socket from their set and add it again around
 * every request (hiredis, so redis-benchmark: two DEL and two ADD per
 * request) would cost the kernel's set a DEL and an ADD of the watched
 * socket each time.  A connected socket watched in the kernel's set is
 * parked instead: its registration stays (edges that come meanwhile are
 * noted, not reported), its CQ is no longer watched, and the application
 * sees it gone (ENOENT for MOD and DEL, no events); the next ADD takes it
 * up again without a system call.  Its close removes it (sock_epoll_forget).
 */
static bool parkable(const struct ep_entry *e)
{
	return e->sfd >= 0 && e->wfd < 0 && !e->off && e->s->st == SOCK_CONNECTED;
}

static void park(struct epset *st, struct ep_entry *e)
{
	if (e->wcq)
		ep_cq_unwatch(e->wcq, st, e->fd);
	e->wcq = NULL;
	dequeue(st, e);
	set_parked(e, true);
}

static int unpark(struct epset *st, int epfd, struct ep_entry *e, const struct epoll_event *ev)
{
	int rc;

	set_parked(e, false);
	e->ev = *ev;
	e->disabled = false;
	e->seen_rx = e->seen_out = ~0ull;
	if ((rc = watch(st, epfd, e)) < 0) {
		reg_del(e->s, epfd, e->fd);
		remove_entry(st, epfd, e, true);
		return rc;
	}
	enqueue(st, e); /* a first look: what came meanwhile (its kick was kept) */
	return 0;
}

int sock_epoll_ctl(struct esock_sock *s, int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epset *st = set_of(epfd, true);
	struct ep_entry *e;
	int rc = 0;

	if (!st)
		return -ENOMEM;
	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	/* An offloaded socket: READY for what it is watched for (a call, the first time). */
	if (s->off && op != EPOLL_CTL_DEL && (rc = sock_off_watch(s, ev->events)) < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	if (!s->off && !s->verbs && !(s->st == SOCK_LISTENING && s->lst) && !s->cq && !sock_vb_wanted() &&
	    (rc = ep_sock_cq_create(sock_cq_depth(s->o.rdepth), &s->cq)) < 0) {
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&st->lock);
	e = find(st, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (e && e->parked && e->s == s) {
			rc = unpark(st, epfd, e, ev);
			break;
		}
		if (e && e->parked) { /* (another socket's: forget ran, cannot be; to be safe) */
			reg_del(e->s, epfd, fd);
			remove_entry(st, epfd, e, true);
			e = NULL;
		}
		if (e) {
			rc = -EEXIST;
			break;
		}
		if (fd >= st->capfd) {
			int nc = fd + 256;
			struct ep_entry **nb = realloc(st->byfd, (size_t)nc * sizeof(*nb));

			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			memset(nb + st->capfd, 0, (size_t)(nc - st->capfd) * sizeof(*nb));
			st->byfd = nb;
			st->capfd = nc;
		}
		if (!(e = calloc(1, sizeof(*e)))) {
			rc = -ENOMEM;
			break;
		}
		e->fd = fd;
		e->s = s;
		e->ev = *ev;
		e->seen_rx = e->seen_out = ~0ull;
		e->wfd = e->sfd = -1;
		e->off = s->off != NULL;
		/* The kernel checks epfd and gives its errors (EBADF, EINVAL, ELOOP). */
		if ((rc = reg_add(s, epfd, fd)) < 0) {
			free(e);
			break;
		}
		if ((rc = watch(st, epfd, e)) < 0) {
			reg_del(s, epfd, fd);
			free(e);
			break;
		}
		atomic_store(&sock_epoll_used, true);
		st->byfd[fd] = e;
		st->n++;
		st->noff += e->off;
		atomic_fetch_add(&sock_epoll_regs, 1);
		enqueue(st, e); /* a first look at the next wait */
		break;
	case EPOLL_CTL_MOD:
		if (!e || e->parked) {
			rc = -ENOENT;
			break;
		}
		e->ev = *ev;
		e->disabled = false;
		e->seen_rx = e->seen_out = ~0ull;
		enqueue(st, e);
		break;
	case EPOLL_CTL_DEL:
		if (!e || e->parked) {
			rc = -ENOENT;
			break;
		}
		if (parkable(e)) {
			park(st, e);
			break;
		}
		remove_entry(st, epfd, e, true);
		reg_del(s, epfd, fd);
		break;
	default:
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

#define PENDING_SLICE_MS 10 /* the look at entries that connect */

/* |*slice| (ms, -1: none) at most |ms|. */
static void slice_at_most(int *slice, int ms)
{
	if (*slice < 0 || ms < *slice)
		*slice = ms;
}

/*
 * What entry |e| has to report now (0: nothing), updating its edge state.
 * |*again|: look at it before the next sleep too (connecting, level-triggered
 * and ready, or waiting for credits); then |*pending| (ms, -1: none) bounds
 * the sleep when the entry's descriptor may not ring.
 */
static uint32_t entry_events(struct epset *st, int epfd, struct ep_entry *e, bool *again,
			     int *pending)
{
	struct esock_sock *s = e->s;
	uint32_t want = e->ev.events, r = 0, asked = want & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI);
	bool et = want & EPOLLET, have_r = false;

	*again = false;
	if (e->disabled)
		return 0;
	if (s->st == SOCK_MARKED) {
		*again = true; /* a connect may start: look again in a slice */
		slice_at_most(pending, PENDING_SLICE_MS);
		return 0;
	}
	/* Connecting (TCP or MPA): sock_ready drives the exchange; its events do not kick the CQ. */
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING) {
		*again = true;
		slice_at_most(pending, PENDING_SLICE_MS);
	}
	/* It began to listen, connected, or changed its QP's ways since: watch it as it is now. */
	{
		uint32_t sev;
		int sfd = socket_watch(e, &sev);

		if (watched_fd(s) != e->wfd || sfd != e->sfd || sev != e->sev)
			(void)watch(st, epfd, e);
	}
	if (e->rx_kick) {
		struct esock_qp *qp = lazy_qp(e);

		e->rx_kick = false;
		/*
		 * Input left in the socket for the read (sock_rx_defer), or read now
		 * (a FIN or error among it: to the end).
		 */
		if (qp && (e->rx_end || !e->rx_in || !(want & EPOLLIN) ||
			   !(have_r = sock_rx_defer(s, false, asked, &r)))) {
			/* Our own completions need no bell: disarmed until the look is over (rearm). */
			if (s->cq)
				ep_cq_disarm(s->cq);
			ep_qp_progress(qp, EP_WANT_RX | (e->rx_end ? EP_WANT_DRAIN : 0));
		}
		e->rx_end = e->rx_in = false;
	}
	if (s->off && e->lst_kick) { /* its own kernel listener rang: news for edge-triggered */
		sock_off_kernel_news(s);
		e->lst_kick = false;
	}
	if (s->st == SOCK_LISTENING && s->lst) {
		/*
		 * Its backlog only when its poll descriptor (level-triggered in
		 * the kernel's set) rang: a level-triggered listener is looked at
		 * before every wait, and an accept4 that finds nothing each time
		 * is a system call per connection for nothing.
		 */
		r = sock_listen_ready(s, want & EPOLLIN, e->lst_kick);
		e->lst_kick = false;
	} else if (!have_r) {
		r = sock_ready(s, asked);
	}
	if (s->verbs && (asked & EPOLLOUT) && !(r & EPOLLOUT)) {
		int t = sock_vb_out_slice(s, POLLOUT);

		if (t >= 0) { /* room that credits bring may ring nothing: look again in a slice */
			*again = true;
			slice_at_most(pending, t);
		}
	}
	if (et) {
		uint64_t g = rx_gen(s);

		if (!(r & (EPOLLIN | EPOLLRDHUP)) || g == e->seen_rx)
			r &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
		else
			e->seen_rx = g;
		/*
		 * Room to send is an edge the first time, then again only after a
		 * write found none (counted by the socket: no look at the entry
		 * needs to happen while it is full).
		 */
		if (r & EPOLLOUT) {
			if (e->seen_out == s->out_full)
				r &= ~(uint32_t)EPOLLOUT;
			else
				e->seen_out = s->out_full;
		}
		if (!(r & ~(uint32_t)(EPOLLERR | EPOLLHUP)) && (r & (EPOLLERR | EPOLLHUP)) &&
		    e->seen_rx == g)
			r = 0; /* an error is one edge, reported with the EPOLLIN above */
	} else if (r && !(want & EPOLLONESHOT)) {
		*again = true; /* level-triggered: reported again while it stays ready */
	}
	if (r && (want & EPOLLONESHOT))
		e->disabled = true;
	return r;
}

/* Arms |e|'s CQ for the next completion; true when completions came meanwhile. */
static bool rearm(struct ep_entry *e)
{
	struct esock_cq *cq = e->s->st == SOCK_LISTENING ? NULL : e->s->cq;

	if (!cq || ep_cq_armed(cq))
		return false; /* still armed: nothing came since */
	return ep_cq_arm(cq, false);
}

/*
 * Looks at the queued entries; fills |out| with what they report (lock held).
 * |*hot|: an entry's completions came between its look and its re-arm (no
 * kick will tell): look again before any sleep.
 */
#define PREFETCH_MAX 64

static int collect(struct epset *st, int epfd, struct epoll_event *out, int max, int *pending,
		   bool *hot)
{
	int n = 0;

	/*
	 * What the looks below and the application's reads after them visit,
	 * asked for first, a level at a time (the sockets, then their counters,
	 * CQs and QPs): over many connections the misses then overlap instead
	 * of following one another.  At most PREFETCH_MAX sockets' worth (about
	 * 60 KB), well inside any L2 cache.
	 */
	int k = !sock_prefetch_pays() ? 0 : st->nq < max ? st->nq : max;

	if (k > PREFETCH_MAX)
		k = PREFETCH_MAX;
	for (int i = 0; i < k; i++)
		__builtin_prefetch(st->q[i]->s);
	for (int i = 0; i < k; i++) /* (only a live socket's pointers are read: see below) */
		if (st->q[i]->s && esock_fdtab_get(st->q[i]->fd) == st->q[i]->s)
			sock_prefetch(st->q[i]->s);
	for (int i = 0; i < st->nq && n < max;) {
		struct ep_entry *e = st->q[i];
		bool again;
		uint32_t r;

		if (esock_fdtab_get(e->fd) != e->s) { /* closed meanwhile: forget drops it */
			st->q[i] = st->q[--st->nq];
			e->queued = false;
			continue;
		}
		r = entry_events(st, epfd, e, &again, pending);
		if (r) {
			out[n].events = r;
			out[n++].data = e->ev.data;
		}
		if (rearm(e))
			again = *hot = true;
		if (again) {
			i++;
		} else {
			st->q[i] = st->q[--st->nq];
			e->queued = false;
		}
	}
	return n;
}

/* Kernel events into |out| from |from| on: marker events queue their entry, the rest stay. */
static int sort_kernel(struct epset *st, struct epoll_event *out, int from, int kn, bool *marks,
		       bool *off_rang)
{
	int n = from;

	pthread_mutex_lock(&st->lock);
	for (int i = from; i < from + kn; i++) {
		if (!is_mark(&out[i])) {
			out[n++] = out[i];
			continue;
		}
		if ((uint32_t)out[i].data.u64 == BELL_KEY) {
			if (st->bell >= 0)
				bell_rang(st);
			*marks = true;
			continue;
		}
		if ((uint32_t)out[i].data.u64 == OFF_KEY) {
			*off_rang = *marks = true; /* (the channel: pumped after this) */
			continue;
		}
		struct ep_entry *e = find(st, (int)(uint32_t)out[i].data.u64);

		if (e) {
			e->rx_kick = e->sfd >= 0; /* (a listener's poll descriptor needs no reading) */
			e->lst_kick = e->wfd >= 0;
			/*
			 * Edge-triggered, a short read is enough (later octets make a
			 * new edge), unless the FIN came along: then up to it, or it
			 * would go unnoticed.  One recv per message less.
			 */
			e->rx_end |= e->rx_kick && (out[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
			/*
			 * The kernel's epoll reports what is true as it returns: EPOLLIN
			 * means octets wait in the socket now (a kick for room to send,
			 * or one during the MPA exchange, says nothing of input).
			 */
			e->rx_in |= e->rx_kick && (out[i].events & EPOLLIN);
			if (!e->parked) { /* (a parked one keeps the kick for its first look) */
				enqueue(st, e);
				*marks = true;
			}
		}
	}
	pthread_mutex_unlock(&st->lock);
	return n;
}

/*
 * epoll_wait on a set without DDPMODE entries: still, no marker may get out
 * (one could only be a registration whose socket is going away right now).
 */
int sock_epoll_pass(int epfd, struct epoll_event *out, int max, int timeout_ms,
		    const sigset_t *mask)
{
	int64_t end = timeout_ms > 0 ? ep_now_ms() + timeout_ms : 0;

	if (timeout_ms)
		ep_uncork_all(); /* (a corked RTR may be what the wait needs: ep.h) */
	for (int left = timeout_ms;;) {
		struct timespec ms = { 0, 1000000 };
		int kn = mask ? REAL(epoll_pwait)(epfd, out, max, left, mask)
			      : REAL(epoll_wait)(epfd, out, max, left);
		int n = 0;

		if (kn <= 0 || !atomic_load_explicit(&sock_epoll_used, memory_order_relaxed))
			return kn;
		for (int i = 0; i < kn; i++)
			if (!is_mark(&out[i]))
				out[n++] = out[i];
		if (n || timeout_ms == 0)
			return n;
		if (timeout_ms > 0 && (left = (int)(end - ep_now_ms())) <= 0)
			return 0;
		nanosleep(&ms, NULL); /* only markers: a registration going away; no spin */
	}
}

static int emulate(struct epset *st, int epfd, struct epoll_event *out, int max, int timeout_ms,
		   const sigset_t *mask, struct sock_sleeps *w);

int sock_epoll_wait(int epfd, struct epoll_event *out, int max, int timeout_ms,
		    const sigset_t *mask)
{
	struct epset *st = set_of(epfd, false);
	struct sock_sleeps w;
	int rc;

	if (!st || !st->n || max <= 0)
		return sock_epoll_pass(epfd, out, max, timeout_ms, mask);
	/*
	 * A handler that runs between two of the emulation's sleeps ends the
	 * call with EINTR: asleep again, its flag would go unseen (nginx did
	 * not end on a SIGTERM that came with its last connection's end).
	 */
	sock_sleeps_begin(&w);
	rc = emulate(st, epfd, out, max, timeout_ms, mask, &w);
	sock_sleeps_end(&w);
	return rc;
}

static int emulate(struct epset *st, int epfd, struct epoll_event *out, int max, int timeout_ms,
		   const sigset_t *mask, struct sock_sleeps *w)
{
	int64_t end = timeout_ms > 0 ? ep_now_ms() + timeout_ms : 0;

	for (;;) {
		bool marks = false, hot = false, off_rang = false, off_sleep;
		int got, left = timeout_ms, kn, pending = -1;

		if (st->noff)
			off_pump_events(st); /* (a look at shared memory when nothing came) */
		pthread_mutex_lock(&st->lock);
		if (st->bell >= 0)
			take_new_kicks(st); /* (kicks between two waits ring no bell; the pump's too) */
		got = collect(st, epfd, out, max, &pending, &hot);
		pthread_mutex_unlock(&st->lock);
		if (got || hot)
			left = 0;
		else if (timeout_ms > 0 && (left = (int)(end - ep_now_ms())) < 0)
			left = 0;
		if (pending >= 0 && (left < 0 || left > pending))
			left = pending;
		if (left)
			ep_uncork_all(); /* what we wait for may need a corked RTR out first (ep.h) */
		if ((off_sleep = st->noff && left) && sock_off_sleep_begin())
			left = 0; /* (the channel has events already) */
		if (!sleeper_begin(st, left))
			left = 0; /* (kicked since the look: look again) */
		bool slept = left != 0;
		const sigset_t *use;

		if (sock_sleeps_next(w, left != 0, mask, &use)) {
			kn = REAL(epoll_pwait)(epfd, out + got, max - got, left, use);
		} else {
			kn = -1; /* a handler ran: the application must see its flag (got is 0) */
			errno = EINTR;
		}
		if (slept)
			sleeper_end(st);
		if (off_sleep && st->off_edge)
			sock_off_sleep_end_edge();
		else if (off_sleep)
			sock_off_sleep_end();
		if (kn < 0)
			return got ? got : -1;
		got = sort_kernel(st, out, got, kn, &marks, &off_rang);
		if (off_rang || (off_sleep && !left)) {
			off_pump(st);
			marks = true;
		} else if (st->bell >= 0) {
			pthread_mutex_lock(&st->lock);
			marks |= take_new_kicks(st);
			pthread_mutex_unlock(&st->lock);
		}
		if (got == 0 && marks) { /* a kick: look at those sockets now */
			pthread_mutex_lock(&st->lock);
			got = collect(st, epfd, out, max, &pending, &hot);
			pthread_mutex_unlock(&st->lock);
		}
		if (got || timeout_ms == 0 || (timeout_ms > 0 && ep_now_ms() >= end))
			return got;
	}
}
