/* SPDX-License-Identifier: MIT */
/* The host side of the TCP Server (host.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/chan.h"
#include "tcpserver/host.h"
#include "tcpserver/sys.h"

/*
 * How long a call looks at the queue before it sleeps on the bell: learnt
 * from how long answers take (twice the last, between these bounds).  An
 * answer found while looking says so itself; one that woke a sleep is
 * dated by when tcpserverd rang (esock_shmq_rung_ns), not by when this
 * thread woke: on a CPU shared with a busy process the wake-up can wait a
 * scheduler tick, and taking that for the answer's time would stop the
 * looking that avoids the sleep (every call then costs a tick).  Answers
 * later than SPIN_MAX_NS halve it.  With tcpserverd on this very CPU
 * looking is useless (it runs only when this thread stops): no looking.
 */
#define SPIN_MIN_NS 1000
#define SPIN_MAX_NS 50000
/* Calls posted without waiting whose answers are still to come, at most. */
#define POSTED_MAX 4096

struct tsp_host {
	int usock;
	struct tsp_chan ch;
	pthread_mutex_t lock;
	uint32_t next_id;
	bool broken;
	uint8_t *in; /* the last response, copied out of the queue */
	/* Events that came while a call waited for its answer, in order, their octets copied. */
	struct esock_tsp_msg *evq;
	unsigned ev_head, ev_n, ev_cap;
	uint8_t *ev_data;   /* the octets of the event tsp_host_event returned last */
	uint32_t spin_ns;   /* how long a call looks before it sleeps (SPIN_*) */
	/* Ids of posted calls (tsp_host_post) whose answers are still to come, oldest first. */
	uint32_t posted[POSTED_MAX];
	unsigned post_head, post_n;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The answer |id| is one a post left behind: it is taken off the list (kept as an event). */
static bool take_posted(struct tsp_host *h, uint32_t id)
{
	for (unsigned i = 0; i < h->post_n; i++) {
		unsigned at = (h->post_head + i) % POSTED_MAX;

		if (h->posted[at] != id)
			continue;
		/* (in order as a rule: the oldest; else the gap closes up) */
		for (unsigned k = i; k > 0; k--)
			h->posted[(h->post_head + k) % POSTED_MAX] = h->posted[(h->post_head + k - 1) % POSTED_MAX];
		h->post_head = (h->post_head + 1) % POSTED_MAX;
		h->post_n--;
		return true;
	}
	return false;
}

int tsp_host_open(const char *path, uint32_t flags, uint32_t token, struct tsp_host **out,
		  uint32_t *granted)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct esock_tsp_msg req = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_HELLO } }, resp;
	struct tsp_host *h;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if (!(h = calloc(1, sizeof(*h))) ||
	    !(h->in = malloc(ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX))) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->ch.memfd = h->ch.bell = -1;
	h->spin_ns = SPIN_MAX_NS;
	if ((h->usock = TSP_SYS(socket)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    (TSP_OWN(h->usock), 0) || TSP_SYS(connect)(h->usock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = errno == ENOENT ? -ECONNREFUSED : -errno;
		goto fail;
	}
	if ((rc = tsp_chan_create(&h->ch, TSP_CHAN_CAP)) < 0)
		goto fail;
	if ((rc = tsp_chan_send(&h->ch, h->usock)) < 0) {
		/* (tcpserverd closed at once: it admits no more hosts) */
		rc = rc == -EPIPE || rc == -ECONNRESET ? -ECONNREFUSED : rc;
		goto fail;
	}
	req.u.hello.vmin = req.u.hello.vmax = ESOCK_TSP_VERSION;
	req.u.hello.flags = flags | (token ? ESOCK_TSP_F_INHERIT : 0);
	req.h.sock = token;
	req.u.hello.pid = (uint32_t)getpid();
	if ((rc = tsp_host_call(h, &req, &resp)) < 0) {
		rc = rc == -EPIPE ? -ECONNREFUSED : rc;
		goto fail;
	}
	if (granted)
		*granted = resp.u.hello_ok.flags;
	*out = h;
	return 0;
fail:
	if (h->usock >= 0)
		TSP_CLOSE(h->usock);
	tsp_chan_close(&h->ch);
	free(h->in);
	free(h);
	return rc;
}

static void host_free(struct tsp_host *h)
{
	TSP_CLOSE(h->usock);
	tsp_chan_close(&h->ch);
	pthread_mutex_destroy(&h->lock);
	while (h->ev_n) {
		free((void *)h->evq[h->ev_head].data);
		h->ev_head = (h->ev_head + 1) % h->ev_cap;
		h->ev_n--;
	}
	free(h->evq);
	free(h->ev_data);
	free(h->in);
	free(h);
}

void tsp_host_close(struct tsp_host *h)
{
	struct esock_tsp_msg req = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_BYE } }, resp;

	if (!h)
		return;
	(void)tsp_host_call(h, &req, &resp);
	host_free(h);
}

void tsp_host_forget(struct tsp_host *h)
{
	if (h) {
		pthread_mutex_init(&h->lock, NULL); /* (another thread of the parent may have held it) */
		host_free(h);
	}
}

int tsp_host_bell(const struct tsp_host *h)
{
	return h->ch.hbell;
}

static void bell_quiet(struct tsp_host *h)
{
	uint64_t v;

	(void)!TSP_SYS(read)(h->ch.hbell, &v, sizeof(v));
}

int tsp_host_sleep_begin(struct tsp_host *h)
{
	return esock_shmq_sleep_begin(h->ch.resp) || __atomic_load_n(&h->ev_n, __ATOMIC_RELAXED);
}

void tsp_host_sleep_end(struct tsp_host *h)
{
	int e = errno; /* (the caller's wait may have said EINTR) */

	esock_shmq_sleep_end(h->ch.resp);
	bell_quiet(h);
	errno = e;
}

/* Sleeps on the bell until tcpserverd rings or |ms| passed.  -ETIMEDOUT or 0. */
static int bell_wait(struct tsp_host *h, int ms)
{
	struct pollfd p = { .fd = h->ch.hbell, .events = POLLIN };
	int rc = 0;

	if (!esock_shmq_sleep_begin(h->ch.resp) && TSP_SYS(poll)(&p, 1, ms) == 0)
		rc = -ETIMEDOUT;
	esock_shmq_sleep_end(h->ch.resp);
	if (!rc)
		bell_quiet(h);
	return rc;
}

/*
 * Events a call kept while another thread sleeps on the bell (poll or
 * epoll of the offload mode): that thread must hear of them, and this
 * thread quieted the bell.
 */
static void wake_sleepers(struct tsp_host *h)
{
	if (h->ev_n && esock_shmq_sleepers(h->ch.resp))
		(void)!TSP_SYS(write)(h->ch.hbell, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* tcpserverd still there?  (Its end of the Unix socket closes when it goes.) */
static bool server_gone(struct tsp_host *h)
{
	char c;
	ssize_t n = TSP_SYS(recv)(h->usock, &c, 1, MSG_DONTWAIT | MSG_PEEK);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Keeps |ev| for tsp_host_event (its octets copied: DATA must not be lost).  False: no memory. */
static bool keep_event(struct tsp_host *h, const struct esock_tsp_msg *ev)
{
	struct esock_tsp_msg *e;

	if (h->ev_n == h->ev_cap) { /* grow, keeping the order */
		unsigned cap = h->ev_cap ? 2 * h->ev_cap : 16;
		struct esock_tsp_msg *q = malloc(cap * sizeof(*q));

		if (!q)
			return false;
		for (unsigned i = 0; i < h->ev_n; i++)
			q[i] = h->evq[(h->ev_head + i) % h->ev_cap];
		free(h->evq);
		h->evq = q;
		h->ev_head = 0;
		h->ev_cap = cap;
	}
	e = &h->evq[(h->ev_head + h->ev_n) % h->ev_cap];
	*e = *ev;
	if (ev->data_len) {
		uint8_t *copy = malloc(ev->data_len);

		if (!copy)
			return false;
		memcpy(copy, ev->data, ev->data_len);
		e->data = copy;
	}
	h->ev_n++;
	return true;
}

/* tcpserverd runs on this thread's CPU (looking would only keep it from answering). */
static bool server_here(struct tsp_host *h)
{
	int cpu = esock_shmq_consumer_cpu(h->ch.req);

	return cpu >= 0 && cpu == sched_getcpu();
}

/* Learns from an answer that came |dt| ns after the call (|slept|: it woke a sleep). */
static void spin_learn(struct tsp_host *h, uint64_t dt, bool slept)
{
	if (slept && dt > SPIN_MAX_NS / 2) {
		h->spin_ns = h->spin_ns / 2 > SPIN_MIN_NS ? h->spin_ns / 2 : SPIN_MIN_NS;
		return;
	}
	dt *= 2;
	h->spin_ns = dt > SPIN_MAX_NS ? SPIN_MAX_NS : dt > h->spin_ns ? (uint32_t)dt : h->spin_ns;
}

static int wait_response(struct tsp_host *h, uint32_t id, struct esock_tsp_msg *resp)
{
	uint64_t t0 = now_ns();
	bool slept = false, here = server_here(h);

	for (unsigned spins = 0;;) {
		uint32_t len;
		int rc;
		const uint8_t *r = esock_shmq_peek(h->ch.resp, &len, &rc);

		if (r) {
			/* Copied out, then decoded: the other side may change the shared octets. */
			memcpy(h->in, r, len);
			esock_shmq_release(h->ch.resp);
			if (esock_tsp_decode(h->in, len, resp) != (int)len)
				return -EPIPE;
			if (resp->h.type == ESOCK_TSP_EVENT ||
			    (resp->h.type == ESOCK_TSP_RESP && resp->h.id != id && take_posted(h, resp->h.id))) {
				if (!keep_event(h, resp))
					return -EPIPE; /* (out of memory: an event lost would be worse) */
				continue;
			}
			if (resp->h.type != ESOCK_TSP_RESP || resp->h.id != id)
				return -EPIPE;
			if (!here) {
				uint64_t now = now_ns(), rung = esock_shmq_rung_ns(h->ch.resp);

				/* (a ring from before this call, or from the future: not this answer's) */
				spin_learn(h, slept && rung >= t0 && rung <= now ? rung - t0 : now - t0, slept);
			}
			return 0;
		}
		if (rc != -EAGAIN)
			return -EPIPE;
		if (!here && ((++spins & 63) || now_ns() - t0 < h->spin_ns)) {
			cpu_relax();
			continue;
		}
		slept = true;
		if (bell_wait(h, 200) == -ETIMEDOUT && server_gone(h))
			return -EPIPE;
	}
}

/* |req| into the queue under a new id (lock held).  0, or -errno (-EPIPE: the channel broke). */
static int put_request(struct tsp_host *h, struct esock_tsp_msg *req)
{
	uint8_t *rec;
	int n, rc;

	if (h->broken)
		return -EPIPE;
	req->h.id = ++h->next_id;
	if ((n = esock_tsp_encoded_len(req)) < 0)
		return n;
	while (!(rec = esock_shmq_reserve(h->ch.req, (uint32_t)n, &rc))) {
		if (rc != -EAGAIN || server_gone(h)) {
			h->broken = true;
			return -EPIPE;
		}
		sched_yield(); /* full: tcpserverd is behind */
	}
	(void)esock_tsp_encode(req, rec, (size_t)n); /* (in place: the data copied once) */
	esock_shmq_commit(h->ch.req, (uint32_t)n);
	return 0;
}

int tsp_host_call(struct tsp_host *h, struct esock_tsp_msg *req, struct esock_tsp_msg *resp)
{
	int rc;

	pthread_mutex_lock(&h->lock);
	if ((rc = put_request(h, req)) == 0) {
		if ((rc = wait_response(h, req->h.id, resp)) < 0)
			h->broken = true; /* (the channel: tcpserverd gone, or a message that makes no sense) */
		else
			rc = resp->result;
	}
	wake_sleepers(h);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int tsp_host_post(struct tsp_host *h, struct esock_tsp_msg *req)
{
	int rc;

	pthread_mutex_lock(&h->lock);
	if (h->post_n == POSTED_MAX)
		rc = -EAGAIN;
	else if ((rc = put_request(h, req)) == 0)
		h->posted[(h->post_head + h->post_n++) % POSTED_MAX] = req->h.id;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* The oldest kept event into |ev| (its octets the host's until the next event): 1, or 0 none. */
static int take_kept(struct tsp_host *h, struct esock_tsp_msg *ev)
{
	if (!h->ev_n)
		return 0;
	*ev = h->evq[h->ev_head];
	h->ev_data = (uint8_t *)ev->data; /* (a copy of ours: freed at the next call) */
	h->ev_head = (h->ev_head + 1) % h->ev_cap;
	h->ev_n--;
	return 1;
}

int tsp_host_event_kept(struct tsp_host *h, struct esock_tsp_msg *ev)
{
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	free(h->ev_data); /* (the octets of the event returned before) */
	h->ev_data = NULL;
	rc = take_kept(h, ev);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int tsp_host_event(struct tsp_host *h, struct esock_tsp_msg *ev, int timeout_ms)
{
	int64_t waited = 0;
	int rc = 0;

	pthread_mutex_lock(&h->lock);
	free(h->ev_data); /* (the octets of the event returned before) */
	h->ev_data = NULL;
	while (!h->broken) {
		uint32_t len;
		const uint8_t *r;

		if ((rc = take_kept(h, ev)))
			break;
		if ((r = esock_shmq_peek(h->ch.resp, &len, &rc))) {
			memcpy(h->in, r, len);
			esock_shmq_release(h->ch.resp);
			/* (no call waits: whatever comes is an event, or the answer to a post) */
			if (esock_tsp_decode(h->in, len, ev) != (int)len ||
			    (ev->h.type != ESOCK_TSP_EVENT &&
			     !(ev->h.type == ESOCK_TSP_RESP && take_posted(h, ev->h.id)))) {
				h->broken = true;
				break;
			}
			rc = 1; /* its octets stay in h->in until the next call */
			break;
		}
		if (rc != -EAGAIN) {
			h->broken = true;
			break;
		}
		rc = 0;
		if (timeout_ms >= 0 && waited >= timeout_ms)
			break;
		/* (in slices: a tcpserverd that went away is noticed) */
		if (bell_wait(h, timeout_ms < 0 || timeout_ms - waited > 200 ? 200 : (int)(timeout_ms - waited)) ==
		    -ETIMEDOUT) {
			waited += 200;
			if (server_gone(h))
				h->broken = true;
		}
	}
	if (h->broken && rc != 1)
		rc = -EPIPE;
	pthread_mutex_unlock(&h->lock);
	return rc;
}
