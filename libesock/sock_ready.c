/* SPDX-License-Identifier: MIT */
/*
 * Readiness of DDPMODE sockets for poll and select.  The kernel's view of
 * the TCP socket is not the application's: octets the engine has already
 * read are in the receive pool (the socket looks empty), and a partial FPDU
 * makes it look readable.  So a connected DDPMODE entry is answered from the
 * socket layer (sock_ready); to sleep, the call waits on the socket's CQ
 * eventfd (armed: the engine's next completion kicks it) and on the TCP
 * socket itself, which it then reads in this thread, as esock_cq_wait does.
 * Other entries go to the kernel unchanged, in the same poll call.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"

#define SMALL 32

static int64_t left_ms(int64_t end)
{
	int64_t l = end - ep_now_ms();

	return l < 0 ? 0 : l > 0x7fffffff ? 0x7fffffff : l;
}

/*
 * A listener's backlog is looked at (a system call) only when its poll
 * descriptor said something came (|looked|); before the wait, only the
 * connections it has ready to hand out count.  A select loop on a listener
 * and a busy connection (iperf3's server) made an accept4 per call.
 */
static unsigned ready_now(struct esock_sock *s, unsigned events, bool looked)
{
	if (s->st == SOCK_LISTENING && s->lst)
		return sock_listen_ready(s, events, looked);
	return sock_ready(s, events);
}

static int emulate(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask,
		   struct sock_sleeps *w);

/*
 * A handler that runs between two of the emulation's sleeps ends the call
 * with EINTR, never finds it asleep again with its flag unseen (sock.h,
 * sock_sleeps).
 */
int sock_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct sock_sleeps w;
	int rc;

	sock_sleeps_begin(&w);
	rc = emulate(fds, n, timeout_ms, mask, &w);
	sock_sleeps_end(&w);
	return rc;
}

static int emulate(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask,
		   struct sock_sleeps *w)
{
	struct esock_sock *small_s[SMALL], **ss = small_s;
	struct pollfd small_k[2 * SMALL], *k = small_k, small_c[2 * SMALL], *c = small_c;
	uint32_t small_m[2 * SMALL], *m = small_m;
	/* Per entry: counted as a poller of its CQ (ep_cq_poll_begin), its descriptor fired. */
	enum { POLLER = 1, FIRED = 2 };
	uint8_t small_b[SMALL], *b = small_b;
	int64_t end = timeout_ms > 0 ? ep_now_ms() + timeout_ms : 0;
	nfds_t nddp = 0, noff = 0;
	int rc = 0;

	if (n > SMALL) {
		ss = calloc(n, sizeof(*ss));
		k = calloc(2 * n, sizeof(*k));
		c = calloc(2 * n, sizeof(*c));
		m = calloc(2 * n, sizeof(*m));
		b = calloc(n, sizeof(*b));
		if (!ss || !k || !c || !m || !b) {
			free(ss);
			free(k);
			free(c);
			free(m);
			free(b);
			errno = ENOMEM;
			return -1;
		}
	}
	for (nfds_t i = 0; i < n; i++) {
		struct esock_sock *s = fds[i].fd >= 0 ? sock_get(fds[i].fd) : NULL;

		if (s && !s->verbs && (s->st == SOCK_MARKED || s->st == SOCK_PLAIN ||
				    (s->st == SOCK_LISTENING && !s->lst))) {
			sock_put(s); /* not connected or connecting: the kernel knows */
			s = NULL;
		}
		if (!s && fds[i].fd >= 0 && atomic_load_explicit(&sock_epoll_used, memory_order_relaxed))
			sock_epoll_outside(fds[i].fd); /* (an epoll set polled) */
		ss[i] = s;
		b[i] = 0;
		k[i] = fds[i];
		k[n + i].fd = -1;
		k[n + i].events = POLLIN;
		if (s) {
			nddp++;
			/*
			 * A listener sleeps on its own poll descriptor: Requests are
			 * read here; an offloaded socket on the channel's bell.
			 */
			k[i].fd = s->off ? sock_off_bell() : s->verbs ? sock_vb_fd(s)
				  : s->st == SOCK_LISTENING ? esock_listener_poll_fd(s->lst)
				  : s->cq ? esock_cq_fd(s->cq) : -1;
			noff += s->off != NULL;
			k[i].events = POLLIN;
		}
	}
	for (;;) {
		int ready = 0, wait;

		for (nfds_t i = 0; i < n; i++)
			if (ss[i] && (fds[i].revents = (short)ready_now(ss[i], (unsigned)fds[i].events, false)))
				ready++;
		bool pulled = false;

		wait = ready ? 0 : timeout_ms < 0 ? -1 : timeout_ms == 0 ? 0 : (int)left_ms(end);
		for (nfds_t i = 0; i < n; i++) {
			struct esock_qp *qp = ss[i] ? ss[i]->qp : NULL;

			k[n + i].fd = -1;
			k[n + i].events = POLLIN;
			if (ss[i] && ss[i]->off) { /* (its events ring the channel's bell) */
				k[n + i].fd = sock_off_kfd(ss[i]); /* (and a listener's own share) */
				continue;
			}
			if (ss[i] && ss[i]->verbs) { /* its completion channel (a listener's: its events) */
				int t = ready ? -1 : sock_vb_out_slice(ss[i], (unsigned)fds[i].events);

				k[i] = (struct pollfd){ .fd = sock_vb_fd(ss[i]), .events = POLLIN };
				if (t >= 0 && (wait < 0 || t < wait))
					wait = t; /* (room that credits bring may ring nothing) */
				continue;
			}
			if (ss[i] && (ss[i]->st == SOCK_TCP_CONNECTING || ss[i]->st == SOCK_MPA_CONNECTING)) {
				/* A non-blocking connect: TCP up, or the MPA Reply's octets, or its timeout. */
				int t = sock_connect_watch(ss[i], &k[i].fd, &k[i].events);

				if (!ready && t >= 0 && (wait < 0 || t < wait))
					wait = t;
				continue;
			}
			if (ss[i] && ss[i]->st == SOCK_PLAIN) /* fell back while connecting */
				k[i] = fds[i];
			else if (ss[i] && ss[i]->st != SOCK_LISTENING && !ready) /* its CQ, to sleep on */
				k[i] = (struct pollfd){ .fd = ss[i]->cq ? esock_cq_fd(ss[i]->cq) : -1,
							.events = POLLIN };
			/*
			 * Restricted: one descriptor per connection, its socket (a CQ
			 * descriptor made before would be a second; the limit on them
			 * may be as low as the caller's count).
			 */
			if (ss[i] && ss[i]->st != SOCK_LISTENING && atomic_load(&ep_restricted))
				k[i].fd = -1;
			if (ss[i] && k[i].fd < 0 && atomic_load(&ep_restricted) && (wait < 0 || wait > 100))
				wait = 100; /* (restricted: no CQ descriptor to wake us: look again) */
			if (!qp)
				continue;
			/* Kicked by the completions that come while we sleep (its CQ's descriptor). */
			if (!ready) {
				if (ep_cq_poll_begin(ss[i]->cq, b[i] & FIRED))
					wait = 0; /* completions came meanwhile: look again */
				else if (ep_qp_rx_staged(qp))
					wait = 0; /* another thread's read left messages in its stage */
				b[i] = POLLER;
			}
			/*
			 * Its socket too, even when something else is ready: a lazy
			 * QP's input is read by its callers only (this poll included).
			 */
			if (!ss[i]->suspended && ep_qp_fd(qp) >= 0 && esock_qp_state(qp) == ESOCK_QPS_RTS &&
			    !ep_qp_rx_paused(qp) && !ep_qp_rx_eof(qp) &&
			    (!ready || (ep_qp_lazy(qp) && (fds[i].events & POLLIN))))
				k[n + i].fd = ep_qp_fd(qp);
			/* No engine in a restricted process: sends waiting for room are ours to push. */
			if (atomic_load(&ep_restricted) && ep_qp_fd(qp) >= 0 && ep_qp_pollout(qp)) {
				k[n + i].fd = ep_qp_fd(qp);
				k[n + i].events = POLLIN | POLLOUT;
			}
		}
		if (wait)
			ep_uncork_all(); /* what we wait for may need a corked RTR out first (ep.h) */
		/*
		 * Only the descriptors to watch go to the kernel: poll refuses more
		 * entries than RLIMIT_NOFILE (EINVAL), which a sandbox sets as low as
		 * 1 (sshd's pre-auth child).
		 */
		nfds_t nc = 0;

		for (nfds_t j = 0; j < 2 * n; j++) {
			k[j].revents = 0;
			if (k[j].fd >= 0) {
				c[nc] = k[j];
				m[nc++] = (uint32_t)j;
			}
		}
		bool off_sleep = noff && wait != 0;

		if (off_sleep && sock_off_sleep_begin())
			wait = 0; /* (events came meanwhile) */
		struct timespec ts = { wait / 1000, (long)(wait % 1000) * 1000000L };
		const sigset_t *use;

		if (sock_sleeps_next(w, wait != 0, mask, &use)) {
			rc = REAL(ppoll)(c, nc, wait < 0 ? NULL : &ts, use);
		} else {
			rc = -1; /* a handler ran: the application must see its flag */
			errno = EINTR;
		}
		if (off_sleep)
			sock_off_sleep_end();
		for (nfds_t j = 0; rc > 0 && j < nc; j++)
			k[m[j]].revents = c[j].revents;
		for (nfds_t i = 0; i < n; i++)
			if (b[i] & POLLER) { /* awake: what this thread now reads kicks nobody */
				ep_cq_poll_end(ss[i]->cq);
				b[i] = k[i].revents ? FIRED : 0;
			}
		if (rc < 0)
			break;
		rc = ready;
		for (nfds_t i = 0; i < n; i++) {
			if (!ss[i]) {
				fds[i].revents = k[i].revents;
				rc += k[i].revents != 0;
			} else if (k[n + i].fd >= 0 && k[n + i].revents && ss[i]->off) {
				sock_off_kernel_news(ss[i]); /* an offloaded listener's own share */
				pulled = true;
			} else if (k[n + i].fd >= 0 && k[n + i].revents) {
				/*
				 * A blocking socket's new input is left in the socket for
				 * the read, which takes its messages straight into its
				 * buffer (read here, it went to the receive pool and was
				 * copied out again).  sock_rx_defer says why only blocking
				 * ones.
				 */
				if (k[n + i].revents == POLLIN && (fds[i].events & POLLIN) &&
				    sock_rx_defer(ss[i], true, 0, NULL)) {
					pulled = true;
					continue;
				}
				/* read it here, not via the engine (restricted: its sends too) */
				ep_qp_progress(ss[i]->qp, EP_WANT_RX |
						(k[n + i].revents & POLLOUT ? EP_WANT_TX : 0));
				pulled = true;
			}
		}
		if ((!ready || pulled) && nddp) {
			rc -= ready;
			for (nfds_t i = 0; i < n; i++)
				if (ss[i] && (fds[i].revents = (short)ready_now(ss[i], (unsigned)fds[i].events,
										  k[i].revents != 0)))
					rc++;
		}
		if (rc > 0 || timeout_ms == 0 || (timeout_ms > 0 && left_ms(end) == 0))
			break;
	}
	for (nfds_t i = 0; i < n; i++)
		if (ss[i])
			sock_put(ss[i]);
	if (ss != small_s)
		free(ss);
	if (k != small_k) {
		free(k);
		free(c);
		free(m);
		free(b);
	}
	return rc;
}

/*
 * A server's epoll look used to read every ready connection and place its
 * messages in the receive pool, from which the read copied them again: at
 * a thousand connections that is a pool buffer, a receive and a completion
 * per message, each a cold cache line.  Left in the socket, the read takes
 * them straight into its own buffer (ep_qp_recv_now).  Only when the
 * kernel said the socket is readable in this look (sock_epoll.c: a kick
 * for room to send, or one left from the MPA exchange, promises no input).
 *
 * What the socket holds may be less than a whole message (a large one still
 * on its way, or a real network's segments), and the read then has nothing
 * to return yet.  epoll's readiness is an edge: a non-blocking reader
 * expects a spurious one (the read takes the part into the QP, says EAGAIN,
 * and the next edge finishes it in the look).  poll's and select's are a
 * level, and a non-blocking reader may take an EAGAIN after POLLIN for a
 * fatal error (OpenSSH's ssh does), so there only a blocking socket's input
 * is left: its read waits for the rest of the message, which is on its way
 * as surely as it would have been for the poll (the sender's library
 * finishes a message it began; a TCP read would return the part at once).
 * A blocking socket with SO_RCVTIMEO keeps the old way (its read could time
 * out on a part).  The read waits out a token holder at work instead of
 * saying EAGAIN.
 */
/* sock_ready's answer for a connected (or failed) socket, its lock held. */
static unsigned ready_locked(struct esock_sock *s, unsigned events)
{
	unsigned r = 0;

	if (s->st == SOCK_CONNECTED && s->suspended && sock_resume(s) < 0) {
		r = POLLERR | POLLHUP; /* (sock_share.c said why) */
	} else if (s->st == SOCK_CONNECTED) {
		if (s->qp) {
			ep_qp_serve(s->qp);
			if (ep_qp_rx_staged(s->qp))
				sock_pull(s); /* (messages a read left in its stage: to the pool) */
		}
		sock_drain(s);
		if (!s->rcount)
			sock_pool_open(s); /* about to sleep: the pool must be open */
		if (s->rcount || s->rx_hint || s->eof || s->err || s->shut_rd)
			r |= POLLIN | POLLRDNORM;
		if (s->eof)
			r |= POLLRDHUP;
		if (s->err)
			r |= POLLERR | POLLHUP;
		else if (s->eof && (s->shut_wr || s->tx_failed || !s->qp ||
				    esock_qp_state(s->qp) != ESOCK_QPS_RTS))
			r |= POLLHUP;
		if (!s->err && !s->tx_failed && !s->shut_wr && s->qp &&
		    esock_qp_state(s->qp) == ESOCK_QPS_RTS && s->nslots < SOCK_SLOTS_MAX)
			r |= POLLOUT | POLLWRNORM;
		else if ((events & (POLLOUT | POLLWRNORM)) && !s->err && !s->tx_failed && !s->shut_wr)
			sock_room_wanted(s, true); /* a caller waits for room: our sends' completions are news */
	} else if (s->st == SOCK_FAILED) {
		r = POLLERR | POLLHUP | POLLOUT;
	}
	return r & (events | POLLERR | POLLHUP);
}

bool sock_rx_defer(struct esock_sock *s, bool blocking, unsigned events, unsigned *ready)
{
	bool yes = false;

	/*
	 * The other kind of socket is told without the lock: a poll wake-up of
	 * a non-blocking socket (the commoner kind) reads its input at once.
	 * (Looked at again under the lock: an fcntl may have come between.)
	 */
	if (__atomic_load_n(&s->nonblock, __ATOMIC_RELAXED) == blocking)
		return false;
	pthread_mutex_lock(&s->lock);
	if (s->st == SOCK_CONNECTED && s->nonblock == !blocking &&
	    (!blocking || s->rcvtimeo_ms <= 0) && !s->suspended && s->qp && ep_qp_lazy(s->qp) &&
	    !s->eof && !s->err && !s->shut_rd) {
		sock_drain(s);
		if (!s->rcount && ep_qp_rx_untouched(s->qp)) {
			s->rx_hint = true;
			s->rx_hints++;
			yes = true;
			if (ready) /* (the caller's next question, under the same lock) */
				*ready = ready_locked(s, events);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return yes;
}

unsigned sock_ready(struct esock_sock *s, unsigned events)
{
	unsigned r;

	if (s->off)
		return sock_off_ready(s, events);
	if (s->verbs)
		return sock_vb_ready(s, events);
	if (s->st == SOCK_LISTENING)
		return sock_listen_ready(s, events, true);
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		return sock_connect_ready(s, events);
	pthread_mutex_lock(&s->lock);
	r = ready_locked(s, events);
	pthread_mutex_unlock(&s->lock);
	return r;
}
