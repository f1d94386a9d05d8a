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
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/chan.h"
#include "tcpserver/host.h"
#include "tcpserver/rchan.h"
#include "tcpserver/sys.h"
#include "util/log.h"

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
	int usock;             /* shared memory: the Unix socket (tcpserverd's end tells it went) */
	struct tsp_chan ch;    /* shared memory: the queues and the eventfds */
	struct tsp_rchan *rc;  /* across the network: the queues over an esock QP */
	int wake;              /* rchan: an eventfd for this process's own threads (wake_sleepers) */
	int bell;              /* what the host sleeps on: ch.hbell, or an epoll set of rc's bell and wake */
	struct esock_shmq *req, *resp;
	pthread_mutex_t lock;
	uint32_t next_id;
	/*
	 * |broken| and |ev_n| are written under |lock| and read without it by
	 * a thread about to sleep (tsp_host_sleep_begin): atomic stores and
	 * loads (set_broken, ev_count), plain reads under the lock.
	 */
	bool broken;
	bool bell_cut;         /* rchan, broken: its QP's bell left the sleep set */
	bool closing;          /* BYE sent: tcpserverd may end the channel before it answers */
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

/* Shared memory: connects to the Unix socket |path| and hands tcpserverd a channel. */
static int open_shm(struct tsp_host *h, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if ((h->usock = TSP_SYS(socket)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    (TSP_OWN(h->usock), 0) || TSP_SYS(connect)(h->usock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno == ENOENT ? -ECONNREFUSED : -errno;
	if ((rc = tsp_chan_create(&h->ch, TSP_CHAN_CAP)) < 0)
		return rc;
	if ((rc = tsp_chan_send(&h->ch, h->usock)) < 0) /* (tcpserverd closed at once: it admits no more hosts) */
		return rc == -EPIPE || rc == -ECONNRESET ? -ECONNREFUSED : rc;
	h->req = h->ch.req;
	h->resp = h->ch.resp;
	h->bell = h->ch.hbell;
	return 0;
}

/*
 * Across the network: the channel over an esock QP.  The host sleeps on
 * one descriptor, as with shared memory: an epoll set of the QP's bell (the
 * peer's rings) and an eventfd for this process's own threads.
 */
static int open_net(struct tsp_host *h, const struct sockaddr *sa, socklen_t len)
{
	int rc;

	if ((rc = tsp_rchan_connect(&h->rc, sa, len, TSP_CHAN_CAP)) < 0)
		return rc == -ETIMEDOUT || rc == -ECONNRESET ? -ECONNREFUSED : rc;
	if ((h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || (TSP_OWN(h->wake), 0) ||
	    (h->bell = TSP_SYS(epoll_create1)(EPOLL_CLOEXEC)) < 0 || (TSP_OWN(h->bell), 0) ||
	    TSP_SYS(epoll_ctl)(h->bell, EPOLL_CTL_ADD, tsp_rchan_bell(h->rc),
			       &(struct epoll_event){ .events = EPOLLIN }) < 0 ||
	    TSP_SYS(epoll_ctl)(h->bell, EPOLL_CTL_ADD, h->wake, &(struct epoll_event){ .events = EPOLLIN }) < 0)
		return -errno;
	h->req = tsp_rchan_req(h->rc);
	h->resp = tsp_rchan_resp(h->rc);
	return tsp_rchan_drain(h->rc); /* (arms the bell) */
}

/* The channel's own parts (|forget|: a forked child's copy, left to the parent). */
static void chan_free(struct tsp_host *h, bool forget)
{
	if (h->usock >= 0)
		TSP_CLOSE(h->usock);
	tsp_chan_close(&h->ch);
	if (h->rc) {
		if (h->bell >= 0)
			TSP_CLOSE(h->bell);
		if (h->wake >= 0)
			TSP_CLOSE(h->wake);
		(forget ? tsp_rchan_forget : tsp_rchan_close)(h->rc);
	}
	h->usock = h->wake = h->bell = -1;
	h->rc = NULL;
}

int tsp_host_open(const char *where, uint32_t flags, uint32_t token, struct tsp_host **out,
		  uint32_t *granted)
{
	struct esock_tsp_msg req = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_HELLO } }, resp;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	struct tsp_host *h;
	int rc, net = tsp_rchan_addr(where, &ss, &sl);

	if (net < 0)
		return net;
	if (!(h = calloc(1, sizeof(*h))) ||
	    !(h->in = malloc(ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX))) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->ch.memfd = h->ch.bell = h->ch.hbell = -1;
	h->usock = h->wake = h->bell = -1;
	h->spin_ns = SPIN_MAX_NS;
	if ((rc = net ? open_net(h, (struct sockaddr *)&ss, sl) : open_shm(h, where)) < 0)
		goto fail;
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
	chan_free(h, false);
	free(h->in);
	free(h);
	return rc;
}

static void set_broken(struct tsp_host *h)
{
	__atomic_store_n(&h->broken, true, __ATOMIC_RELEASE);
}

static void ev_count(struct tsp_host *h, unsigned n)
{
	__atomic_store_n(&h->ev_n, n, __ATOMIC_RELAXED);
}

static void host_free(struct tsp_host *h, bool forget)
{
	chan_free(h, forget);
	pthread_mutex_destroy(&h->lock);
	while (h->ev_n) {
		free((void *)h->evq[h->ev_head].data);
		h->ev_head = (h->ev_head + 1) % h->ev_cap;
		ev_count(h, h->ev_n - 1);
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
	h->closing = true;
	(void)tsp_host_call(h, &req, &resp);
	host_free(h, false);
}

void tsp_host_forget(struct tsp_host *h)
{
	if (h) {
		pthread_mutex_init(&h->lock, NULL); /* (another thread of the parent may have held it) */
		host_free(h, true);
	}
}

int tsp_host_bell(const struct tsp_host *h)
{
	return h->bell;
}

static void bell_quiet(struct tsp_host *h)
{
	uint64_t v;

	if (h->rc) {
		(void)!TSP_SYS(read)(h->wake, &v, sizeof(v));
		(void)tsp_rchan_drain(h->rc); /* (a broken link: server_gone says so) */
	} else {
		(void)!TSP_SYS(read)(h->ch.hbell, &v, sizeof(v));
	}
}

int tsp_host_sleep_begin(struct tsp_host *h)
{
	int there = esock_shmq_sleep_begin(h->resp); /* (counted in any case: sleep_end uncounts) */

	if (__atomic_load_n(&h->broken, __ATOMIC_ACQUIRE)) {
		/*
		 * Nothing more comes (the calls say so): sleep as long as the caller
		 * likes.  A broken QP's bell would stay readable, a wake-up each
		 * look: it leaves the set (the process's own wakes stay).
		 */
		if (h->rc && !__atomic_exchange_n(&h->bell_cut, true, __ATOMIC_ACQ_REL))
			(void)TSP_SYS(epoll_ctl)(h->bell, EPOLL_CTL_DEL, tsp_rchan_bell(h->rc), NULL);
		return __atomic_load_n(&h->ev_n, __ATOMIC_RELAXED) != 0;
	}
	return there || __atomic_load_n(&h->ev_n, __ATOMIC_RELAXED);
}

/* |quiet|: the bell is read (it is level-triggered where the caller slept). */
static void sleep_end(struct tsp_host *h, bool quiet)
{
	int e = errno; /* (the caller's wait may have said EINTR) */

	esock_shmq_sleep_end(h->resp);
	if (quiet)
		bell_quiet(h);
	errno = e;
}

void tsp_host_sleep_end(struct tsp_host *h)
{
	sleep_end(h, true);
}

bool tsp_host_bell_edge(const struct tsp_host *h)
{
	return !h->rc; /* (across the network the completion channel must be read to be armed again) */
}

void tsp_host_sleep_end_edge(struct tsp_host *h)
{
	sleep_end(h, !tsp_host_bell_edge(h));
}

/* Sleeps on the bell until tcpserverd rings or |ms| passed.  -ETIMEDOUT or 0. */
static int bell_wait(struct tsp_host *h, int ms)
{
	struct pollfd p = { .fd = h->bell, .events = POLLIN };
	int rc = 0;

	if (!esock_shmq_sleep_begin(h->resp) && TSP_SYS(poll)(&p, 1, ms) == 0)
		rc = -ETIMEDOUT;
	esock_shmq_sleep_end(h->resp);
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
	if (h->ev_n && esock_shmq_sleepers(h->resp))
		(void)!TSP_SYS(write)(h->rc ? h->wake : h->ch.hbell, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* tcpserverd still there?  (Its end of the Unix socket closes when it goes; a QP breaks.) */
static bool server_gone(struct tsp_host *h)
{
	char c;
	ssize_t n;

	if (h->rc)
		return tsp_rchan_drain(h->rc) < 0;
	n = TSP_SYS(recv)(h->usock, &c, 1, MSG_DONTWAIT | MSG_PEEK);

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
	ev_count(h, h->ev_n + 1);
	return true;
}

/* tcpserverd runs on this thread's CPU (looking would only keep it from answering). */
static bool server_here(struct tsp_host *h)
{
	int cpu = esock_shmq_consumer_cpu(h->req);

	return !h->rc && cpu >= 0 && cpu == sched_getcpu(); /* (another node's CPU numbers: never) */
}

/* A call's channel broke for |why| (|detail|): said in the log (after BYE, as info); -EPIPE. */
static int broken_by(const struct tsp_host *h, const char *why, int detail)
{
	ESOCK_LOG_AT(h->closing ? ESOCK_LOG_INFO : ESOCK_LOG_WARN, "tcpserver host: channel %s%s: %s (%d)",
		     h->closing ? "ended at bye" : "broken", h->rc ? " (network)" : "", why, detail);
	return -EPIPE;
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
		const uint8_t *r = esock_shmq_peek(h->resp, &len, &rc);

		if (r) {
			/* Copied out, then decoded: the other side may change the shared octets. */
			memcpy(h->in, r, len);
			esock_shmq_release(h->resp);
			if (esock_tsp_decode(h->in, len, resp) != (int)len)
				return broken_by(h, "a response that is not TSP", (int)len);
			if (resp->h.type == ESOCK_TSP_EVENT ||
			    (resp->h.type == ESOCK_TSP_RESP && resp->h.id != id && take_posted(h, resp->h.id))) {
				if (!keep_event(h, resp))
					return broken_by(h, "no memory to keep an event", 0); /* (one lost would be worse) */
				continue;
			}
			if (resp->h.type != ESOCK_TSP_RESP || resp->h.id != id)
				return broken_by(h, "an answer to another call, id", (int)resp->h.id);
			if (!here) {
				uint64_t now = now_ns(), rung = esock_shmq_rung_ns(h->resp);

				/* (a ring from before this call, or from the future: not this answer's) */
				spin_learn(h, slept && rung >= t0 && rung <= now ? rung - t0 : now - t0, slept);
			}
			return 0;
		}
		if (rc != -EAGAIN)
			return broken_by(h, "the response queue broke", rc);
		if (!here && ((++spins & 63) || now_ns() - t0 < h->spin_ns)) {
			cpu_relax();
			continue;
		}
		slept = true;
		if (bell_wait(h, 200) == -ETIMEDOUT && server_gone(h))
			return broken_by(h, "tcpserverd gone", 0);
	}
}

/* |req| into the queue under a new id, |posted| or not (lock held).  0, or -errno (-EPIPE: the channel broke). */
static int put_request(struct tsp_host *h, struct esock_tsp_msg *req, bool posted)
{
	uint8_t *rec;
	int n, rc;

	if (h->broken)
		return -EPIPE;
	h->next_id = (h->next_id + 1) & ~ESOCK_TSP_ID_POSTED;
	req->h.id = (h->next_id ? h->next_id : (h->next_id = 1)) | (posted ? ESOCK_TSP_ID_POSTED : 0);
	if ((n = esock_tsp_encoded_len(req)) < 0)
		return n;
	while (!(rec = esock_shmq_reserve(h->req, (uint32_t)n, &rc))) {
		if (rc != -EAGAIN || server_gone(h)) {
			set_broken(h);
			return -EPIPE;
		}
		sched_yield(); /* full: tcpserverd is behind */
	}
	(void)esock_tsp_encode(req, rec, (size_t)n); /* (in place: the data copied once) */
	esock_shmq_commit(h->req, (uint32_t)n);
	return 0;
}

int tsp_host_call(struct tsp_host *h, struct esock_tsp_msg *req, struct esock_tsp_msg *resp)
{
	int rc;

	pthread_mutex_lock(&h->lock);
	if ((rc = put_request(h, req, false)) == 0) {
		if ((rc = wait_response(h, req->h.id, resp)) < 0)
			set_broken(h); /* (the channel: tcpserverd gone, or a message that makes no sense) */
		else
			rc = resp->result;
	}
	wake_sleepers(h);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int tsp_host_post(struct tsp_host *h, struct esock_tsp_msg *req)
{
	struct esock_tsp_msg m = *req; /* (the caller's request as it gave it; m carries the flag) */
	int rc;

	if (m.h.op == ESOCK_TSP_SEND)
		m.u.send.flags |= ESOCK_TSP_MSG_POSTED; /* (its answer need not wake this process) */
	pthread_mutex_lock(&h->lock);
	if (h->post_n == POSTED_MAX) {
		rc = -EAGAIN; /* (the caller calls instead, and waits for the answer) */
	} else if ((rc = put_request(h, &m, true)) == 0) {
		h->posted[(h->post_head + h->post_n++) % POSTED_MAX] = m.h.id;
		req->h.id = m.h.id; /* (its answer's) */
	}
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
	ev_count(h, h->ev_n - 1);
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
		if ((r = esock_shmq_peek(h->resp, &len, &rc))) {
			memcpy(h->in, r, len);
			esock_shmq_release(h->resp);
			/* (no call waits: whatever comes is an event, or the answer to a post) */
			if (esock_tsp_decode(h->in, len, ev) != (int)len ||
			    (ev->h.type != ESOCK_TSP_EVENT &&
			     !(ev->h.type == ESOCK_TSP_RESP && take_posted(h, ev->h.id)))) {
				set_broken(h);
				break;
			}
			rc = 1; /* its octets stay in h->in until the next call */
			break;
		}
		if (rc != -EAGAIN) {
			set_broken(h);
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
				set_broken(h);
		}
	}
	if (h->broken && rc != 1)
		rc = -EPIPE;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int tsp_host_mem_reg(struct tsp_host *h, void *addr, size_t len, uint32_t *key, struct esock_mr **mr)
{
	struct ucred uc;
	socklen_t ul = sizeof(uc);

	*key = 0;
	*mr = NULL;
	if (h->rc)
		return tsp_rchan_mem_reg(h->rc, addr, len, key, mr);
	if (h->usock < 0)
		return -EOPNOTSUPP;
	if (TSP_SYS(getsockopt)(h->usock, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0)
		return -errno;
	if (prctl(PR_SET_PTRACER, (unsigned long)uc.pid, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno; /* (EINVAL: no Yama, tcpserverd needs no leave) */
	return 0;
}

void tsp_host_mem_dereg(struct tsp_host *h, struct esock_mr *mr)
{
	if (h->rc && mr)
		tsp_rchan_mem_dereg(h->rc, mr);
}
