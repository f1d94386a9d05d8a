/* SPDX-License-Identifier: MIT */
/* A host's channel to tcpserverd across the network (rchan.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "tcpserver/rchan.h"
#include "tcpserver/sys.h"
#include "util/byteorder.h"
#include "util/log.h"

#define HELLO_MAGIC 0x65545350u /* "eTSP" */
#define HELLO_VERSION 2u /* 2: one ring per sleep (shmq.c sleep_gen) */
#define HELLO_LEN 24u           /* magic, version, cap, STag (4 each), address (8) */
#define SQ_DEPTH 256u           /* Writes, Reads and rings in flight */
#define RINGS 64u               /* receives kept posted for the peer's rings */
#define PULL_MS 5000            /* a Read that takes longer: the link is gone */
#define POST_MS 10000           /* a send queue full that long: the peer stopped reading */
#define HDR_LEN 256u            /* a queue's header lines (shmq.c's DATA_OFF): words, not records */
#define SNAP 8u                 /* octets of a header word's snapshot slot */
#define SNAPS (2u * SQ_DEPTH)   /* slots, used in turn (see snap_next) */
#define PEND_MAX 8u             /* work requests waiting for a call's flush, at most */
#define EXTRA_LEN (((SNAPS + 1u) * SNAP + 63u) & ~63u) /* the snapshots and a Read's slot */

enum { WR_RING_RECV = 1, WR_WRITE, WR_READ, WR_RING, WR_XFER };

/* One queue's copies: its offset in both sides' regions. */
struct link {
	struct tsp_rchan *c;
	size_t base;
};

struct tsp_rchan {
	/*
	 * A host's threads come here at once (one calls and pushes, another
	 * sleeps in poll and drains the bell): the work requests, snapshots
	 * and counts below are taken under it.
	 */
	pthread_mutex_t lock;
	struct esock_pd *pd;
	struct esock_cq *scq;  /* our Writes, Reads and rings: reaped, never slept on */
	struct esock_cq *cq;   /* the peer's rings: the bell */
	struct esock_qp *qp;
	struct esock_mr *mr;
	uint8_t *mem;          /* our copies: requests at 0, responses at qlen; the snapshots; a Read's slot */
	size_t qlen;
	/*
	 * A header word (an end, a position, a count) changes again before an
	 * earlier Write of it goes out (a Write's octets are read when it is
	 * sent): each Write of one goes from a snapshot of its own, 2 x SQ_DEPTH
	 * slots in turn.  A slot is written again only after more than
	 * SQ_DEPTH later work requests were posted, so its last Write had
	 * completed (the send queue holds no more).  A record's octets stay as
	 * they are until the consumer released them: written from the ring.
	 */
	unsigned snap_next;
	uint32_t cap;
	uint32_t peer_stag;
	uint64_t peer_addr;
	struct esock_shmq *req, *resp;
	struct link lreq, lresp;
	/* Work requests added by a call's pushes, posted as one list by its flush (or a pull, a ring). */
	struct esock_send_wr pend[PEND_MAX];
	struct esock_sge pend_sge[PEND_MAX];
	unsigned npend;
	unsigned reads;        /* Reads completed (a pull waits for the next) */
	unsigned xfers;        /* registered-buffer Reads and Writes completed (tsp_rchan_fetch, _place) */
	/* Registered buffers, tcpserverd's side: where the host's octets are read to and written from. */
	uint8_t *stage;
	struct esock_mr *stage_mr;
	bool owned;            /* its socket marked as the library's (TSP_OWN) */
	int err;               /* the link's error, once it broke */
};

/*
 * The user-level backend's QP (a TCP socket of this process, which the
 * library's own internals know); a verbs QP (kernel siw, an RNIC: with
 * ESOCK_BACKEND=verbs, or auto on a host with an iWARP device) has none.
 */
static bool user_qp(const struct esock_qp *qp)
{
	const char *b = esock_qp_backend(qp);

	return b && !strcmp(b, "user");
}

static void hello(const struct tsp_rchan *c, uint8_t *p)
{
	esock_put_be32(p, HELLO_MAGIC);
	esock_put_be32(p + 4, HELLO_VERSION);
	esock_put_be32(p + 8, c->cap);
	esock_put_be32(p + 12, esock_mr_stag(c->mr));
	esock_put_be64(p + 16, (uintptr_t)c->mem);
}

/* The peer's hello (at the end of its private data): its copies' key and address.  0 or -EPROTO. */
static int heard(struct tsp_rchan *c, const struct esock_conn_info *ci, uint32_t *cap)
{
	const uint8_t *p;

	if (ci->private_data_len < HELLO_LEN)
		return -EPROTO;
	p = ci->private_data + ci->private_data_len - HELLO_LEN;
	if (esock_get_be32(p) != HELLO_MAGIC || esock_get_be32(p + 4) != HELLO_VERSION)
		return -EPROTO;
	*cap = esock_get_be32(p + 8);
	c->peer_stag = esock_get_be32(p + 12);
	c->peer_addr = esock_get_be64(p + 16);
	return esock_shmq_size(*cap) ? 0 : -EPROTO;
}

/*
 * The link broke (|err|; the first cause is kept): said in the log at
 * |level|, since what a host sees next is only EPIPE from some call.
 */
static void vbroke(struct tsp_rchan *c, int level, int err, const char *fmt, va_list ap)
{
	char why[128];

	if (c->err)
		return;
	c->err = err;
	vsnprintf(why, sizeof(why), fmt, ap);
	ESOCK_LOG_AT(level, "tcpserver channel: link %s: %s (%d)", level == ESOCK_LOG_WARN ? "broken" : "ended",
		     why, err);
}

static void __attribute__((format(printf, 3, 4))) broke(struct tsp_rchan *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbroke(c, ESOCK_LOG_WARN, err, fmt, ap);
	va_end(ap);
}

/* The peer's end (work flushed, the QP no longer connected): how every link ends, so info. */
static void __attribute__((format(printf, 3, 4))) ended(struct tsp_rchan *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbroke(c, ESOCK_LOG_INFO, err, fmt, ap);
	va_end(ap);
}

/* Takes every completion of |cq| there is; a failed one breaks the link. */
static void reap_cq(struct tsp_rchan *c, struct esock_cq *cq)
{
	struct esock_wc wc[32];
	int n;

	while ((n = esock_cq_poll(cq, 32, wc)) != 0) {
		if (n < 0) { /* (-EOVERFLOW: completions were lost, a Read's perhaps: the link is broken) */
			broke(c, n, "completions lost");
			return;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status == ESOCK_WC_WR_FLUSH_ERR) {
				ended(c, -ECONNRESET, "work request %llu flushed", (unsigned long long)wc[i].wr_id);
				continue;
			}
			if (wc[i].status != ESOCK_WC_SUCCESS) {
				broke(c, -ECONNRESET, "work request %llu failed, status %d", (unsigned long long)wc[i].wr_id,
				      (int)wc[i].status);
				continue;
			}
			if (wc[i].wr_id == WR_RING_RECV) { /* a ring: its receive again */
				struct esock_recv_wr r = { .wr_id = WR_RING_RECV };

				if (esock_post_recv(c->qp, &r, NULL) < 0)
					broke(c, -ECONNRESET, "a ring's receive not posted again");
			} else if (wc[i].wr_id == WR_READ) {
				c->reads++;
			} else if (wc[i].wr_id == WR_XFER) {
				c->xfers++;
			}
		}
	}
}

static void reap(struct tsp_rchan *c)
{
	reap_cq(c, c->scq);
	reap_cq(c, c->cq);
}

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* Posts the list |wr|, waiting for room in the send queue.  0 or the link's error. */
static int post(struct tsp_rchan *c, struct esock_send_wr *wr)
{
	struct esock_send_wr *bad = NULL;
	int rc = 0;

	for (long waited = 0; !c->err && (rc = esock_post_send(c->qp, wr, &bad)) == -ENOMEM; waited += 20) {
		if (waited >= POST_MS * 1000L) {
			broke(c, -ETIMEDOUT, "send queue full for %d ms", POST_MS);
			break;
		}
		wr = bad ? bad : wr; /* (those before it were posted) */
		reap(c);
		pause_us(20);
	}
	if (rc == -ENOTCONN)
		ended(c, rc, "not connected");
	else if (rc < 0)
		broke(c, rc, "post failed");
	return c->err;
}

/* Posts what waits (lock held): one list, so that it leaves in one write.  0 or the link's error. */
static int flush_locked(struct tsp_rchan *c)
{
	int rc;

	if (!c->npend)
		return c->err;
	/*
	 * The send queue's slots come free as its work completes, whether or
	 * not anybody polls: a side that never sleeps would fill its send CQ
	 * (and lose completions, a Read's among them).  Polled before each
	 * post, it holds at most SQ_DEPTH + PEND_MAX.
	 */
	reap_cq(c, c->scq);
	for (unsigned i = 0; i + 1 < c->npend; i++)
		c->pend[i].next = &c->pend[i + 1];
	c->pend[c->npend - 1].next = NULL;
	rc = post(c, &c->pend[0]);
	c->npend = 0;
	return rc;
}

/* Adds |wr| (its one |sge|) to what waits, posting first when that is full (lock held). */
static int add(struct tsp_rchan *c, const struct esock_send_wr *wr, const struct esock_sge *sge)
{
	if (c->npend == PEND_MAX && flush_locked(c) < 0)
		return c->err;
	c->pend_sge[c->npend] = *sge;
	c->pend[c->npend] = *wr;
	c->pend[c->npend].sg_list = sge->length ? &c->pend_sge[c->npend] : NULL;
	c->pend[c->npend].num_sge = sge->length ? 1 : 0;
	c->npend++;
	return c->err;
}

/*
 * Adds an RDMA Write or Read between our copy of |l|'s queue and the peer's,
 * octets [off, off + len) on both sides; |from|: the local octets (a
 * snapshot, a Read's slot), or NULL for our copy itself.
 */
static int rdma(const struct link *l, enum esock_wr_opcode op, uint64_t id, uint32_t off, uint32_t len,
		const uint8_t *from)
{
	struct tsp_rchan *c = l->c;
	struct esock_sge sge = { .addr = (uintptr_t)(from ? from : c->mem + l->base + off), .length = len,
				 .lkey = esock_mr_stag(c->mr) };
	struct esock_send_wr wr = { .wr_id = id, .opcode = op,
				    .remote_addr = c->peer_addr + l->base + off, .rkey = c->peer_stag };

	return add(c, &wr, &sge);
}

/* shmq's push: our copy's octets [off, off + len) of this queue to the peer's copy. */
static int push(void *arg, uint32_t off, uint32_t len)
{
	struct link *l = arg;
	struct tsp_rchan *c = l->c;
	uint8_t *s = NULL;
	int rc;

	pthread_mutex_lock(&c->lock);
	if (off < HDR_LEN) { /* a header word: from a snapshot (see snap_next) */
		s = c->mem + 2 * c->qlen + (size_t)(c->snap_next++ % SNAPS) * SNAP;
		if (len > SNAP) {
			broke(c, -EINVAL, "a header word of %u octets", (unsigned)len);
			pthread_mutex_unlock(&c->lock);
			return c->err;
		}
		memcpy(s, c->mem + l->base + off, len);
	}
	rc = rdma(l, ESOCK_WR_RDMA_WRITE, WR_WRITE, off, len, s);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/*
 * Waits (lock held, let go between looks) until |*done| reaches |want|:
 * the completion of a Read or transfer just posted.  0 or the link's error
 * (-ETIMEDOUT after PULL_MS: the link is gone).
 */
static int wait_done(struct tsp_rchan *c, const unsigned *done, unsigned want)
{
	for (int waited = 0; !c->err && (int)(*done - want) < 0; waited += 20) {
		if (waited >= PULL_MS * 1000) {
			broke(c, -ETIMEDOUT, "a Read unanswered for %d ms", PULL_MS);
			break;
		}
		reap(c);
		if ((int)(*done - want) < 0) {
			pthread_mutex_unlock(&c->lock);
			pause_us(20);
			pthread_mutex_lock(&c->lock);
		}
	}
	return c->err;
}

/*
 * shmq's pull: the peer's copy of those octets into |into|, waited for (an
 * RDMA Read into the scratch slot after the snapshots; one at a time, under
 * the lock).
 */
static int pull(void *arg, uint32_t off, uint32_t len, void *into)
{
	struct link *l = arg;
	struct tsp_rchan *c = l->c;
	uint8_t *scratch = c->mem + 2 * c->qlen + SNAPS * SNAP;
	unsigned want;
	int rc;

	if (len > SNAP)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	want = c->reads + 1;
	if ((rc = rdma(l, ESOCK_WR_RDMA_READ, WR_READ, off, len, scratch)) < 0 || (rc = flush_locked(c)) < 0) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	if (!(rc = wait_done(c, &c->reads, want)))
		memcpy(into, scratch, len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* shmq's ring: an empty Send, whose arrival makes the peer's bell readable (behind what waits). */
static void ring(void *arg)
{
	struct link *l = arg;
	struct esock_send_wr wr = { .wr_id = WR_RING, .opcode = ESOCK_WR_SEND };
	struct esock_sge none = { 0 };

	pthread_mutex_lock(&l->c->lock);
	if (add(l->c, &wr, &none) == 0)
		(void)flush_locked(l->c);
	pthread_mutex_unlock(&l->c->lock);
}

/* shmq's flush: what the call pushed, as one list. */
static int flush(void *arg)
{
	struct tsp_rchan *c = ((struct link *)arg)->c;
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The objects and both queues' copies for queues of |cap| octets; the rings' receives posted. */
static int setup(struct tsp_rchan **out, uint32_t cap)
{
	struct tsp_rchan *c = calloc(1, sizeof(*c));
	struct esock_qp_attr qa = { 0 };
	struct esock_shmq_remote rreq = { push, pull, ring, NULL, flush }, rresp = rreq;
	int rc;

	if (!c)
		return -ENOMEM;
	*out = c;
	pthread_mutex_init(&c->lock, NULL);
	c->cap = cap;
	if (!(c->qlen = esock_shmq_size(cap)))
		return -EINVAL;
	if (!(c->mem = aligned_alloc(64, 2 * c->qlen + EXTRA_LEN)))
		return -ENOMEM;
	memset(c->mem, 0, 2 * c->qlen + EXTRA_LEN);
	if ((rc = esock_pd_alloc(&c->pd)) < 0 || (rc = esock_cq_create(SQ_DEPTH + PEND_MAX + 16, &c->scq)) < 0 ||
	    (rc = esock_cq_create(RINGS + 16, &c->cq)) < 0)
		return rc;
	qa.pd = c->pd;
	qa.send_cq = c->scq;
	qa.recv_cq = c->cq;
	qa.sq_depth = SQ_DEPTH;
	qa.rq_depth = RINGS;
	qa.max_sge = 1;
	qa.max_recv_sge = 1;
	qa.sq_sig_all = true;
	if ((rc = esock_qp_create(&qa, &c->qp)) < 0 ||
	    (rc = esock_mr_reg(c->pd, c->mem, 2 * c->qlen + EXTRA_LEN,
			       ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE | ESOCK_ACCESS_REMOTE_READ, 0,
			       &c->mr)) < 0)
		return rc;
	for (unsigned i = 0; i < RINGS; i++) {
		struct esock_recv_wr r = { .wr_id = WR_RING_RECV };

		if ((rc = esock_post_recv(c->qp, &r, NULL)) < 0)
			return rc;
	}
	c->req = esock_shmq_init(c->mem, cap);
	c->resp = esock_shmq_init(c->mem + c->qlen, cap);
	if (!c->req || !c->resp)
		return -ENOMEM;
	c->lreq = (struct link){ c, 0 };
	c->lresp = (struct link){ c, c->qlen };
	rreq.arg = &c->lreq;
	rresp.arg = &c->lresp;
	esock_shmq_set_remote(c->req, &rreq);
	esock_shmq_set_remote(c->resp, &rresp);
	return 0;
}

static void param(struct esock_conn_param *p, const uint8_t *pd)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pd;
	p->private_data_len = HELLO_LEN;
	p->p2p = 1;              /* (our first FPDU at once: tcpserverd may answer before we push) */
	p->pack = true;          /* (a commit's Writes and ring in one segment: both ends are esock) */
	p->wait_for_recv = true; /* (a ring beyond the receives posted waits, never Terminates) */
}

int tsp_rchan_connect(struct tsp_rchan **out, const struct sockaddr *addr, socklen_t len, uint32_t cap)
{
	struct esock_conn_param p;
	struct esock_conn_info ci;
	uint8_t pd[HELLO_LEN];
	uint32_t peer_cap;
	int rc;

	if ((rc = setup(out, cap)) < 0)
		goto failed;
	hello(*out, pd);
	param(&p, pd);
	if ((rc = esock_qp_connect((*out)->qp, addr, len, &p)) < 0 ||
	    (rc = esock_qp_conn_info((*out)->qp, &ci)) < 0 || (rc = heard(*out, &ci, &peer_cap)) < 0)
		goto failed;
	if (peer_cap != cap) {
		rc = -EPROTO;
		goto failed;
	}
	/* (inside libesock: a daemon's close-everything must pass the channel's socket by) */
	if (user_qp((*out)->qp)) {
		TSP_OWN(ep_qp_fd((*out)->qp));
		(*out)->owned = true;
	}
	return 0;
failed:
	tsp_rchan_close(*out);
	*out = NULL;
	return rc;
}

int tsp_rchan_accept(struct tsp_rchan **out, struct esock_conn_req *r)
{
	struct esock_conn_param p;
	struct esock_conn_info ci;
	struct tsp_rchan probe = { 0 };
	uint8_t pd[HELLO_LEN];
	uint32_t cap;
	int rc;

	*out = NULL;
	if ((rc = esock_conn_req_info(r, &ci)) < 0 || (rc = heard(&probe, &ci, &cap)) < 0) {
		esock_reject(r, NULL, 0);
		return rc;
	}
	if ((rc = setup(out, cap)) < 0) {
		esock_reject(r, NULL, 0);
		goto failed;
	}
	(*out)->peer_stag = probe.peer_stag;
	(*out)->peer_addr = probe.peer_addr;
	hello(*out, pd);
	param(&p, pd);
	if ((rc = esock_accept(r, (*out)->qp, &p)) < 0) /* (it takes |r|, failing too) */
		goto failed;
	return 0;
failed:
	tsp_rchan_close(*out);
	*out = NULL;
	return rc;
}

/* ---- Registered buffers (tcpserverd's SEND_REG and RECV_REG across the network) ---- */

int tsp_rchan_mem_reg(struct tsp_rchan *c, void *addr, size_t len, uint32_t *stag, struct esock_mr **mr)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = esock_mr_reg(c->pd, addr, len,
			  ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE, 0, mr);
	if (rc == 0)
		*stag = esock_mr_stag(*mr);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void tsp_rchan_mem_dereg(struct tsp_rchan *c, struct esock_mr *mr)
{
	pthread_mutex_lock(&c->lock);
	esock_mr_dereg(mr);
	pthread_mutex_unlock(&c->lock);
}

uint8_t *tsp_rchan_stage(struct tsp_rchan *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->stage && (c->stage = aligned_alloc(64, TSP_RCHAN_STAGE)) &&
	    esock_mr_reg(c->pd, c->stage, TSP_RCHAN_STAGE, ESOCK_ACCESS_LOCAL_WRITE, 0, &c->stage_mr) < 0) {
		free(c->stage);
		c->stage = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	return c->stage;
}

/* One RDMA Read or Write between the stage and the peer's registered memory, waited for (lock held). */
static int xfer_locked(struct tsp_rchan *c, enum esock_wr_opcode op, uint32_t stag, uint64_t addr, uint32_t len)
{
	struct esock_sge sge = { .addr = (uintptr_t)c->stage, .length = len, .lkey = esock_mr_stag(c->stage_mr) };
	struct esock_send_wr wr = { .wr_id = WR_XFER, .opcode = op, .remote_addr = addr, .rkey = stag };
	unsigned want = c->xfers + 1;
	int rc;

	if ((rc = add(c, &wr, &sge)) < 0 || (rc = flush_locked(c)) < 0)
		return rc;
	return wait_done(c, &c->xfers, want);
}

static int xfer(struct tsp_rchan *c, enum esock_wr_opcode op, uint32_t stag, uint64_t addr, uint32_t len)
{
	int rc;

	if (!len)
		return 0;
	if (len > TSP_RCHAN_STAGE || !tsp_rchan_stage(c))
		return len > TSP_RCHAN_STAGE ? -EMSGSIZE : -ENOMEM;
	pthread_mutex_lock(&c->lock);
	rc = xfer_locked(c, op, stag, addr, len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int tsp_rchan_fetch(struct tsp_rchan *c, uint32_t stag, uint64_t addr, uint32_t len)
{
	return xfer(c, ESOCK_WR_RDMA_READ, stag, addr, len);
}

int tsp_rchan_place(struct tsp_rchan *c, uint32_t len, uint32_t stag, uint64_t addr)
{
	return xfer(c, ESOCK_WR_RDMA_WRITE, stag, addr, len);
}

struct esock_shmq *tsp_rchan_req(const struct tsp_rchan *c)
{
	return c->req;
}

struct esock_shmq *tsp_rchan_resp(const struct tsp_rchan *c)
{
	return c->resp;
}

int tsp_rchan_bell(const struct tsp_rchan *c)
{
	return esock_cq_fd(c->cq);
}

int tsp_rchan_drain(struct tsp_rchan *c)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	do
		reap(c);
	while (!c->err && esock_cq_arm(c->cq, false) > 0); /* (only the rings' CQ wakes) */
	if (!c->err && esock_qp_state(c->qp) == ESOCK_QPS_ERROR)
		broke(c, -ECONNRESET, "the QP is in error");
	rc = c->err;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The QP forgets its socket, closed here (so that it is not shut down, and its mark goes). */
static void let_go(struct esock_qp *qp)
{
	int fd = ep_qp_fd(qp);

	ep_engine_del(qp); /* (a forked child's engine never had it) */
	if (fd >= 0 && !ep_qp_fd_borrowed(qp))
		TSP_CLOSE(fd);
	ep_qp_set_fd(qp, -1, ep_qp_fd_borrowed(qp));
}

void tsp_rchan_close(struct tsp_rchan *c)
{
	if (!c)
		return;
#ifdef ESOCK_TSP_IN_LIBESOCK
	/* (its socket is the library's, marked so: the mark must go with it) */
	if (c->qp && c->owned)
		let_go(c->qp);
#endif
	if (c->qp)
		esock_qp_destroy(c->qp);
	if (c->mr)
		esock_mr_dereg(c->mr);
	if (c->stage_mr)
		esock_mr_dereg(c->stage_mr);
	free(c->stage);
	if (c->cq)
		esock_cq_destroy(c->cq);
	if (c->scq)
		esock_cq_destroy(c->scq);
	if (c->pd)
		esock_pd_free(c->pd);
	esock_shmq_detach(c->req);
	esock_shmq_detach(c->resp);
	pthread_mutex_destroy(&c->lock);
	free(c->mem);
	free(c);
}

void tsp_rchan_forget(struct tsp_rchan *c)
{
	if (!c)
		return;
	/*
	 * A verbs QP's objects are the kernel's, shared with the parent through
	 * the device's file: destroying them here would destroy the parent's.
	 * Left as they are (the child's copy of this memory, nothing more).
	 */
	if (c->qp && !user_qp(c->qp))
		return;
	pthread_mutex_init(&c->lock, NULL); /* (a parent's thread may have held it) */
	if (c->qp)
		let_go(c->qp);
	tsp_rchan_close(c);
}

int tsp_rchan_addr(const char *where, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *colon = strrchr(where, ':');
	char a[INET6_ADDRSTRLEN + 1], *end;
	size_t n;
	unsigned long port;

	if (where[0] == '/' || where[0] == '.' || !colon)
		return 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end || colon[1] == '\0' || port == 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (where[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		n = (size_t)(colon - where);
		if (n < 3 || where[n - 1] != ']' || n - 2 >= sizeof(a))
			return -EINVAL;
		memcpy(a, where + 1, n - 2);
		a[n - 2] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return inet_pton(AF_INET6, a, &s6->sin6_addr) == 1 ? 1 : -EINVAL;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	if ((n = (size_t)(colon - where)) >= sizeof(a))
		return -EINVAL;
	memcpy(a, where, n);
	a[n] = '\0';
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*len = sizeof(*s4);
	return inet_pton(AF_INET, a, &s4->sin_addr) == 1 ? 1 : -EINVAL;
}
