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
#include "util/log.h"

struct off_proc off_proc = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_parse(void)
{
	const char *p = getenv("ESOCK_TCPSERVER"), *o = getenv("ESOCK_TCPSERVER_OPT");

	if (!p || !*p)
		return;
	off_proc.path = strdup(p);
	for (const char *w = o; w && *w;) {
		size_t n = strcspn(w, ",");

#define OPT(name, flag) if (n == sizeof(name) - 1 && !strncmp(w, name, n)) off_proc.want |= (flag)
		OPT("async", ESOCK_TSP_F_ASYNC_SEND);
		OPT("eagerrx", ESOCK_TSP_F_EAGER_RECV);
		OPT("eageraccept", ESOCK_TSP_F_EAGER_ACCEPT);
		OPT("setup", ESOCK_TSP_F_SETUP_ACCEPT);
		OPT("all", ESOCK_TSP_F_ASYNC_SEND | ESOCK_TSP_F_EAGER_RECV | ESOCK_TSP_F_EAGER_ACCEPT |
			       ESOCK_TSP_F_SETUP_ACCEPT);
#undef OPT
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

static void fork_child(void)
{
	/*
	 * The channel is the parent's: forgotten here without a word to
	 * tcpserverd.  Inherited offloaded sockets fail from now on
	 * (docs/tcpserver.md: sharing them across fork is the next step).
	 */
	pthread_mutex_init(&off_proc.lock, NULL);
	orphan_all();
	if (off_proc.h) {
		tsp_host_forget(off_proc.h);
		off_proc.h = NULL;
	}
	off_proc.forked = true;
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
	if ((rc = tsp_host_open(off_proc.path, off_proc.want, &off_proc.h, &off_proc.flags)) < 0) {
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
	pthread_atfork(NULL, NULL, fork_child);
}

int off_call(struct esock_tsp_msg *req, struct esock_tsp_msg *resp)
{
	int rc;

	if (!off_proc.h)
		return -EPIPE;
	req->h.type = ESOCK_TSP_REQ;
	rc = tsp_host_call(off_proc.h, req, resp);
	if (rc == -EPIPE && resp->h.type != ESOCK_TSP_RESP) {
		if (!off_proc.broken)
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

void sock_off_sleep_end(void)
{
	if (off_proc.h)
		tsp_host_sleep_end(off_proc.h);
}
