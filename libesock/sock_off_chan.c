/* SPDX-License-Identifier: MIT */
/*
 * The offload mode's channel (sock_off.h): one per process, opened by the
 * first offloaded socket, and the pump that applies tcpserverd's events
 * (READY, DATA, ACCEPTED, CREDIT) to the socks they name.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_off_int.h"
#include "util/atfork.h"
#include "util/log.h"

struct off_proc off_proc = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* share=P's P: 0-100 in decimal, nothing else; -1 otherwise. */
static int share_arg(const char *v, size_t n)
{
	int p = 0;

	if (n == 0 || n > 3)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		p = p * 10 + (v[i] - '0');
	}
	return p <= 100 ? p : -1;
}

/*
 * A word of ESOCK_TCPSERVER_OPT that means nothing (a misspelt switch,
 * share=abc) makes the offload refuse to start (socket fails EINVAL), as a
 * missing tcpserverd does: a comparison run with a switch silently off
 * would measure something else than it says.
 */
static void env_parse(void)
{
	const char *p = getenv("ESOCK_TCPSERVER"), *o = getenv("ESOCK_TCPSERVER_OPT");

	if (!p || !*p)
		return;
	off_proc.path = strdup(p);
	for (const char *w = o; w && *w;) {
		size_t n = strcspn(w, ",");
		uint32_t f = 0;

#define OPT(name, flag) if (n == sizeof(name) - 1 && !strncmp(w, name, n)) f = (flag)
		OPT("async", ESOCK_TSP_F_ASYNC_SEND);
		OPT("eagerrx", ESOCK_TSP_F_EAGER_RECV);
		OPT("eageraccept", ESOCK_TSP_F_EAGER_ACCEPT);
		OPT("setup", ESOCK_TSP_F_SETUP_ACCEPT);
		OPT("reg", ESOCK_TSP_F_REG_BUFFERS);
		OPT("all", ESOCK_TSP_F_ASYNC_SEND | ESOCK_TSP_F_EAGER_RECV | ESOCK_TSP_F_EAGER_ACCEPT |
			       ESOCK_TSP_F_SETUP_ACCEPT);
#undef OPT
		if (f || (n == 4 && !strncmp(w, "none", 4))) {
			off_proc.want |= f;
		} else if (n > 6 && !strncmp(w, "share=", 6) && share_arg(w + 6, n - 6) >= 0) {
			off_proc.share = share_arg(w + 6, n - 6);
		} else if (n > 0) {
			off_proc.bad_opt = true;
			log_error("ESOCK_TCPSERVER_OPT: '%.*s' is none of none, async, eagerrx, eageraccept, "
				  "setup, reg, all, share=0..100: no socket is offloaded", (int)n, w);
		}
		w += n + (w[n] == ',');
	}
}

bool sock_off_enabled(void)
{
	pthread_once(&env_once, env_parse);
	return off_proc.path != NULL;
}

/* Every socket of the channel fails from now on (its handles mean nothing any more). */
static void orphan_all(void)
{
	for (uint32_t i = 0; i < off_proc.cap; i++)
		if (off_proc.byh[i])
			off_proc.byh[i]->orphan = true;
	if (off_proc.byh)
		memset(off_proc.byh, 0, off_proc.cap * sizeof(*off_proc.byh));
}

/*
 * fork: tcpserverd copies the process's sockets (FORK) before the child
 * exists, so that whatever the parent closes after the fork stays open for
 * the child; the child takes the copies at once with a channel of its own
 * (its HELLO names FORK's token), under the same handles, as a forked
 * process's descriptors name the same sockets.
 */
static void fork_prepare(void)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_FORK } }, resp;
	bool any = false;
	int rc;

	pthread_mutex_lock(&off_proc.lock);
	off_proc.fork_token = 0;
	for (uint32_t i = 0; i < off_proc.cap && !any; i++)
		any = off_proc.byh[i] != NULL;
	if (!any || !off_proc.h || off_proc.broken)
		return;
	if ((rc = off_call(&req, &resp)) > 0) {
		off_proc.fork_token = (uint32_t)rc;
		/*
		 * tcpserverd pushes no more octets ahead on these sockets (two
		 * processes hold them now): what came before FORK's answer is in
		 * both, the rest is read with RECV by whichever asks.
		 */
		for (uint32_t i = 0; i < off_proc.cap; i++)
			if (off_proc.byh[i] && off_proc.byh[i]->s)
				off_proc.byh[i]->eager_rx = false;
	} else
		log_error("fork: tcpserverd copies no sockets (%s): the child's fail", strerror(-rc));
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&off_proc.lock);
}

/*
 * The child's copies start as the kernel's would (the octets the parent
 * had taken in stay readable here too); what tcpserverd does ahead for a
 * host (eager receive and accept, queued sends, READY) starts anew.  Only
 * this thread exists: no sock lock is taken (they are the parent's copies).
 */
static void inherit_reset(void)
{
	struct esock_tsp_msg resp;

	for (uint32_t i = 0; i < off_proc.cap; i++) {
		struct sock_off *o = off_proc.byh[i];

		if (!o)
			continue;
		if (!o->s) { /* a connection the parent's eager accept took: the parent's */
			struct esock_tsp_msg cl = { .h = { .op = ESOCK_TSP_CLOSE, .sock = o->handle } };

			off_proc.byh[i] = NULL;
			(void)off_call(&cl, &resp);
			off_free(o);
			continue;
		}
		o->acq_n = o->acq_head = 0;
		o->eager_rx = false;
		o->rx_owed = 0;
		o->tx_out = 0;
		o->watched = 0;
	}
}

static void fork_child(void)
{
	uint32_t token = off_proc.fork_token;
	int rc;

	pthread_mutex_init(&off_proc.lock, NULL);
	for (uint32_t i = 0; i < off_proc.cap; i++) /* (a parent's thread may have held one) */
		if (off_proc.byh[i] && off_proc.byh[i]->s)
			pthread_mutex_init(&off_proc.byh[i]->s->lock, NULL);
	/* Events that came before FORK's answer (octets pushed ahead among them) are the child's too. */
	off_pump_kept_locked();
	if (off_proc.h) { /* the parent's channel: forgotten without a word to tcpserverd */
		tsp_host_forget(off_proc.h);
		off_proc.h = NULL;
	}
	off_proc.broken = false;
	off_proc.fork_token = 0;
	off_reg_forget(); /* (registered with the parent's host, not the child's) */
	if (token) {
		if ((rc = tsp_host_open(off_proc.path, off_proc.want, token, &off_proc.h,
					&off_proc.flags)) == 0) {
			inherit_reset();
			return;
		}
		off_proc.h = NULL;
		log_error("fork: the child cannot take its sockets from tcpserverd: %s", strerror(-rc));
	}
	orphan_all();
}

struct tsp_host *off_host(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int rc;

	if (off_proc.h && !off_proc.broken)
		return off_proc.h;
	pthread_once(&once, off_atfork);
	if (off_proc.h) {
		/*
		 * tcpserverd went away: the sockets it held are gone with it (their
		 * calls fail), new ones are made by whoever listens at the path now.
		 */
		orphan_all();
		tsp_host_forget(off_proc.h);
		off_proc.h = NULL;
		off_proc.broken = false;
	}
	if ((rc = tsp_host_open(off_proc.path, off_proc.want, 0, &off_proc.h, &off_proc.flags)) < 0) {
		log_error("tcpserverd at %s: %s", off_proc.path, strerror(-rc));
		off_proc.h = NULL;
		return NULL;
	}
	log_info("offload: tcpserverd at %s, flags %#x granted of %#x", off_proc.path, off_proc.flags,
		 off_proc.want);
	return off_proc.h;
}

void off_atfork(void)
{
	esock_atfork(ESOCK_FORK_TABLES, fork_prepare, fork_parent, fork_child);
}

int off_call(struct esock_tsp_msg *req, struct esock_tsp_msg *resp)
{
	int rc;

	if (!off_proc.h)
		return -EPIPE;
	req->h.type = ESOCK_TSP_REQ;
	resp->h.type = 0; /* (no answer at all, or tcpserverd's own -EPIPE for the socket) */
	rc = tsp_host_call(off_proc.h, req, resp);
	if (rc == -EPIPE && resp->h.type != ESOCK_TSP_RESP) {
		if (!off_proc.broken)
			log_error("tcpserverd went away: offloaded sockets fail from now on");
		off_proc.broken = true;
	}
	return rc;
}

int off_post(struct esock_tsp_msg *req)
{
	int rc;

	if (!off_proc.h)
		return -EPIPE;
	req->h.type = ESOCK_TSP_REQ;
	if ((rc = tsp_host_post(off_proc.h, req)) == -EPIPE && !off_proc.broken) {
		log_error("tcpserverd went away: offloaded sockets fail from now on");
		off_proc.broken = true;
	}
	return rc;
}

int off_register(struct sock_off *o)
{
	uint32_t handle = o->handle;

	if (handle >= off_proc.cap) {
		uint32_t nc = handle + 1024;
		struct sock_off **n = realloc(off_proc.byh, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + off_proc.cap, 0, (nc - off_proc.cap) * sizeof(*n));
		off_proc.byh = n;
		off_proc.cap = nc;
	}
	off_proc.byh[handle] = o;
	return 0;
}

void off_unregister(uint32_t handle)
{
	if (handle < off_proc.cap)
		off_proc.byh[handle] = NULL;
}

/* A connection taken ahead for a listener that is gone: tcpserverd closes it. */
static void close_orphan(uint32_t handle)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_CLOSE, .sock = handle } }, resp;

	(void)off_call(&req, &resp);
}

/*
 * An event for its socket (with the channel's lock; a connection taken ahead
 * but not accepted yet has no sock, and only this lock guards it).
 */
static void apply(const struct esock_tsp_msg *ev)
{
	struct sock_off *o = ev->h.sock < off_proc.cap ? off_proc.byh[ev->h.sock] : NULL;
	struct esock_sock *s;

	if (!o) {
		if (ev->h.op == ESOCK_TSP_ACCEPTED)
			close_orphan(ev->u.accepted.sock);
		return; /* (a socket closed meanwhile) */
	}
	if ((s = o->s))
		pthread_mutex_lock(&s->lock);
	if (ev->h.type == ESOCK_TSP_RESP) { /* a posted call's answer: a failure is the socket's */
		if (ev->result < 0 && ev->h.op == ESOCK_TSP_SEND && !o->err)
			o->err = -ev->result;
		else if (ev->result < 0 && ev->h.op != ESOCK_TSP_SEND) /* (a posted option: never, as a rule) */
			log_warn("offload: socket %u: a posted %s failed: %s", ev->h.sock,
				 esock_tsp_op_name(ev->h.op), strerror(-ev->result));
		if (s)
			pthread_mutex_unlock(&s->lock);
		return;
	}
	switch (ev->h.op) {
	case ESOCK_TSP_READY:
		if ((ev->u.watch.events & ~o->kready) & (POLLIN | POLLRDHUP | POLLERR | POLLHUP))
			o->rx_gen++;
		o->kready = ev->u.watch.events;
		break;
	case ESOCK_TSP_DATA:
		if (!ev->data_len) {
			o->rx_end = true;
		} else if (off_rx_append(o, ev->data, ev->data_len) < 0) {
			o->rx_end = true; /* (out of memory: the stream cannot go on whole) */
			o->err = ENOMEM;
		}
		o->rx_gen++;
		break;
	case ESOCK_TSP_ACCEPTED:
		if (off_acq_push(o, ev) < 0) {
			if (s)
				pthread_mutex_unlock(&s->lock);
			close_orphan(ev->u.accepted.sock);
			return;
		}
		o->rx_gen++;
		break;
	case ESOCK_TSP_CREDIT:
		o->tx_out -= ev->u.credit.octets < o->tx_out ? ev->u.credit.octets : o->tx_out;
		break;
	default:
		break;
	}
	if (s) {
		pthread_mutex_unlock(&s->lock);
		if (s->epregs)
			sock_epoll_kick(s);
	}
}

void off_pump_locked(void)
{
	struct esock_tsp_msg ev;

	while (off_proc.h && tsp_host_event(off_proc.h, &ev, 0) == 1)
		apply(&ev);
}

void off_pump_kept_locked(void)
{
	struct esock_tsp_msg ev;

	while (off_proc.h && tsp_host_event_kept(off_proc.h, &ev) == 1)
		apply(&ev);
}

void sock_off_pump(void)
{
	if (!off_proc.h)
		return;
	pthread_mutex_lock(&off_proc.lock);
	off_pump_locked();
	pthread_mutex_unlock(&off_proc.lock);
}

int sock_off_bell(void)
{
	return off_proc.h ? tsp_host_bell(off_proc.h) : -1;
}

int sock_off_sleep_begin(void)
{
	return off_proc.h ? tsp_host_sleep_begin(off_proc.h) : 0;
}

bool sock_off_bell_edge(void)
{
	return off_proc.h && tsp_host_bell_edge(off_proc.h);
}

void sock_off_sleep_end_edge(void)
{
	if (off_proc.h)
		tsp_host_sleep_end_edge(off_proc.h);
}

void sock_off_sleep_end(void)
{
	if (off_proc.h)
		tsp_host_sleep_end(off_proc.h);
}
