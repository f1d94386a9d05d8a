/* SPDX-License-Identifier: MIT */
/*
 * SEND and RECV (and their registered-buffer forms, SEND_REG once calls.c
 * fetched its octets, RECV_REG): synchronous, or with asynchronous send (the
 * octets queued, credits back) and eager receive (RECV only gives credit).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "tcpserver/daemon/req.h"

/* The host's next record, already queued, is a SEND on the same socket (a hint: hold.c). */
static bool next_sends_on(struct host *h, uint32_t sock)
{
	uint8_t hb[ESOCK_TSP_HDR_LEN];
	struct esock_tsp_hdr nh;
	uint32_t len;
	const uint8_t *n = esock_shmq_peek(h->req, &len, NULL);

	if (!n || len < sizeof(hb))
		return false;
	memcpy(hb, n, sizeof(hb)); /* (the host may change it meanwhile) */
	return esock_tsp_hdr_decode(hb, sizeof(hb), &nh) == ESOCK_TSP_HDR_LEN && nh.type == ESOCK_TSP_REQ &&
	       nh.op == ESOCK_TSP_SEND && nh.sock == sock;
}

/* Asynchronous send: taken at once (queued what TCP does not take now); CREDIT gives the room back. */
static int send_async(struct req *r, uint32_t off)
{
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;
	struct tsock *s = r->s;
	bool joins, held = false;

	if (s->oerr) {
		int err = s->oerr;

		s->oerr = 0;
		return done(r, -err);
	}
	if ((uint64_t)s->olen + s->unreported + q->data_len > ESOCK_TSP_CREDIT_WINDOW)
		return done(r, -ENOBUFS); /* (beyond its credit: the host's mistake) */
	if (!s->obuf && !(s->obuf = malloc(ESOCK_TSP_CREDIT_WINDOW)))
		return done(r, -ENOMEM);
	/*
	 * A held send's follower joins it in the queue, and both go (unless
	 * more surely follows); a first piece may itself wait (hold.c).
	 */
	joins = h->held == q->h.sock;
	if (joins && ((q->u.send.flags & ESOCK_TSP_MSG_MORE) || next_sends_on(h, q->h.sock)))
		joins = false; /* (still held: the next joins too, as the program's MSG_MORE asks) */
	else if (!s->olen && !joins && !(q->u.send.flags & ESOCK_TSP_MSG_MORE))
		held = hold_send(h, q->h.sock, s, q->data_len, next_sends_on(h, q->h.sock));
	if (!s->olen && !held) {
		bool more = q->u.send.flags & ESOCK_TSP_MSG_MORE;
		ssize_t n = send(s->fd, q->data, q->data_len, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return done(r, -errno);
		off = n > 0 ? (uint32_t)n : 0;
		d.sent |= n > 0;
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
	 * (a send the host posted and does not wait for: its answer need not
	 * wake it, a wake-up that would cost it more than the send itself)
	 */
	r->m.result = (int)q->data_len;
	if (!answer_ex(h, &r->m, q->h.op == ESOCK_TSP_SEND && (q->u.send.flags & ESOCK_TSP_MSG_POSTED)))
		return -1;
	if (joins) {
		hold_end(r->hi, true); /* (flushes, watches, credits) */
		return h->used ? 1 : -1;
	}
	if (!interest(r->hi, q->h.sock, s))
		return -1;
	return credit(h, q->h.sock, s) ? 1 : -1;
}

int call_send(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct tsock *s = r->s;
	uint32_t off = r->rec == s->parked ? s->sent : 0;
	ssize_t n;

	if (r->h->flags & ESOCK_TSP_F_ASYNC_SEND)
		return send_async(r, off);
	n = send(s->fd, q->data + off, q->data_len - off,
		 MSG_NOSIGNAL | MSG_DONTWAIT | (q->u.send.flags & ESOCK_TSP_MSG_MORE ? MSG_MORE : 0));
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		return done(r, off ? (int)off : -errno);
	off += n > 0 ? (uint32_t)n : 0;
	d.sent |= n > 0;
	r->h->bytes_out += n > 0 ? (uint64_t)n : 0;
	s->out += n > 0 ? (uint64_t)n : 0;
	if (off < q->data_len)
		s->told &= ~(uint32_t)POLLOUT; /* (full: room again is news) */
	if (off < q->data_len && !s->nonblock && !(q->u.send.flags & ESOCK_TSP_MSG_DONTWAIT)) {
		/* a blocking send returns with all of it taken */
		s->sent = off;
		return park(r, EPOLLOUT);
	}
	return done(r, off ? (int)off : q->data_len ? -EAGAIN : 0);
}

/* Eager receive: the socket's octets come as DATA; a RECV only gives credit back. */
static int recv_credit(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct tsock *s = r->s;

	/* (without CREDIT, after the last DATA: how the stream ended, 0 for a FIN) */
	if (!(q->u.recv.flags & ESOCK_TSP_MSG_CREDIT))
		return done(r, s->rx_end ? -s->rx_err : -EINVAL);
	s->rx_out -= q->u.recv.max < s->rx_out ? q->u.recv.max : s->rx_out;
	r->m.result = 0;
	if (!answer(r->h, &r->m) || !interest(r->hi, q->h.sock, s))
		return -1;
	return push_data(r->h, q->h.sock, s, false) ? 1 : -1;
}

int call_recv(struct req *r)
{
	static uint8_t buf[ESOCK_TSP_BODY_MAX];
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;
	struct tsock *s = r->s;
	bool reg = q->h.op == ESOCK_TSP_RECV_REG;
	uint32_t want = reg ? q->u.xfer.len : q->u.recv.max, qfl = reg ? q->u.xfer.flags : q->u.recv.flags;
	uint32_t max = want < sizeof(buf) ? want : (uint32_t)sizeof(buf);
	int rc = 0, fl = MSG_DONTWAIT | (qfl & ESOCK_TSP_MSG_PEEK ? MSG_PEEK : 0);
	uint8_t *into;
	ssize_t n;

	if (reg && (s->eager_rx || (rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, max,
							    ESOCK_TSP_REG_WRITE)) < 0))
		return done(r, rc < 0 ? rc : -EINVAL); /* (a socket that receives eagerly has its octets in DATA) */
	if (s->eager_rx)
		return recv_credit(r);
	/* (across the network a RECV_REG's octets go from the stage, where an RDMA Write takes them) */
	into = reg && h->rc ? tsp_rchan_stage(h->rc) : buf;
	n = into ? recv(s->fd, into, max, fl) : (errno = ENOMEM, -1);
	if (n < 0) {
		rc = -errno;
		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			s->told &= ~(uint32_t)POLLIN; /* (drained: the next octets are news) */
		if ((rc == -EAGAIN || rc == -EWOULDBLOCK) && !s->nonblock && max && !(qfl & ESOCK_TSP_MSG_DONTWAIT))
			return park(r, EPOLLIN | EPOLLRDHUP);
		return done(r, rc);
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
	if (reg) {
		/* (a host that unmapped what it registered loses these octets: its error) */
		rc = h->rc ? tsp_rchan_place(h->rc, (uint32_t)n, tsp_region_key(&h->regions, q->u.xfer.region),
					     q->u.xfer.addr)
			   : tsp_mem_write(h->cred_pid, q->u.xfer.addr, buf, (uint32_t)n);
		if (rc == 0)
			rc = (int)n;
		h->reg_in += rc > 0 ? (uint64_t)rc : 0;
		return done(r, rc);
	}
	r->m.data = buf;
	r->m.data_len = (uint32_t)n;
	return done(r, (int)n);
}
