/* SPDX-License-Identifier: MIT */
/*
 * A quiet DDPMODE connection's state as octets, for another process to go on
 * with it: the new image after exec (sock_handoff.c) and, after fork, the
 * process that uses the connection next (sock_share.c).  The record holds
 * what the socket layer knows (options, the peer's announcement, end and
 * shutdown flags) and the QP's snapshot (MSNs: ep_qp_snapshot), then the
 * octets read from TCP and not yet handled (qp.stage_len of them), then the
 * messages that arrived but were not read yet, each a uint32_t length and
 * its octets.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "endpoint/ep_sock.h"
#include "libesock/sock.h"
#include "util/log.h"

#define CARRY_MAGIC 0x79727261636b6f73ull /* "sokcarry" */

struct carry_rec {
	uint64_t magic;
	uint32_t nmsgs, len; /* len: the whole record, messages included */
	struct sock_opts o;
	uint32_t peer_msg_max;
	uint8_t peer_esock, eof, shut_rd, shut_wr, nagle;
	struct ep_qp_snap qp;
};

size_t sock_carry_cap(const struct esock_sock *s)
{
	return sizeof(struct carry_rec) + EP_STAGE_LEN +
	       (size_t)s->o.rdepth * ((size_t)s->o.rsize + sizeof(uint32_t));
}

/*
 * Sends queued on |s| leave first (bounded): a quiet QP is one with nothing
 * in flight, nor the rest of a message sent in a call waiting for room.
 */
static void drain_sends(struct esock_sock *s)
{
	int64_t end = ep_now_ms() + 2000;

	while ((s->inflight || (s->qp && ep_qp_send_pending(s->qp))) && ep_now_ms() < end) {
		struct esock_wc wc[16];
		int n;

		pthread_mutex_unlock(&s->lock);
		n = esock_cq_wait(s->cq, 16, wc, 50);
		pthread_mutex_lock(&s->lock);
		for (int i = 0; i < n; i++)
			sock_handle_wc(s, &wc[i]);
	}
}

ssize_t sock_carry_write(struct esock_sock *s, uint8_t *buf, size_t cap, bool drain)
{
	struct carry_rec *r = (struct carry_rec *)buf;
	size_t at = sizeof(*r);
	int rc;

	if (cap < sizeof(*r))
		return -ENOSPC;
	if (drain)
		drain_sends(s);
	sock_drain(s); /* messages the QP completed go to the pool: they travel as unread */
	if (s->st != SOCK_CONNECTED || !s->qp || s->async_api || s->err || s->inflight)
		return s->async_api ? -EOPNOTSUPP : -EBUSY;
	memset(r, 0, sizeof(*r));
	if ((rc = ep_qp_snapshot(s->qp, &r->qp, true, buf + at, cap - at)) < 0)
		return rc;
	at += r->qp.stage_len;
	sock_drain(s); /* (quiesced now: nothing completes behind this) */
	r->magic = CARRY_MAGIC;
	r->o = s->o;
	r->peer_msg_max = s->peer_msg_max;
	r->peer_esock = s->peer_esock;
	r->eof = s->eof;
	r->shut_rd = s->shut_rd;
	r->shut_wr = s->shut_wr;
	r->nagle = s->nagle;
	r->nmsgs = s->rcount;
	for (uint32_t k = 0; k < s->rcount; k++) {
		uint32_t idx = s->rdone[(s->rhead + k) % (uint32_t)s->o.rdepth];
		uint32_t off = k ? 0 : s->roff, len = s->rlen[idx] - off;

		if (cap - at < sizeof(len) + len) {
			ep_qp_unquiesce(s->qp);
			return -ENOSPC;
		}
		memcpy(buf + at, &len, sizeof(len));
		memcpy(buf + at + sizeof(len), s->rbufs[idx] + off, len);
		at += sizeof(len) + len;
	}
	r->len = (uint32_t)at;
	return (ssize_t)at;
}

ssize_t sock_carry_len(const uint8_t *buf, size_t len)
{
	const struct carry_rec *r = (const struct carry_rec *)buf;

	if (len < sizeof(*r) || r->magic != CARRY_MAGIC || r->len < sizeof(*r))
		return -EINVAL;
	return r->len;
}

int sock_carry_read(struct esock_sock *s, const uint8_t *buf, size_t len)
{
	const struct carry_rec *r = (const struct carry_rec *)buf;
	size_t at = sizeof(*r);
	int rc;

	if (sock_carry_len(buf, len) < 0 || r->len > len)
		return -EINVAL;
	if (s->qp) { /* a stale copy (fork): its options stay, they are the same connection's */
		s->peer_msg_max = r->peer_msg_max;
	} else {
		s->o = r->o;
		s->peer_msg_max = r->peer_msg_max;
		s->peer_esock = r->peer_esock;
	}
	s->eof = r->eof;
	s->shut_rd = r->shut_rd;
	s->shut_wr = r->shut_wr;
	s->nagle = r->nagle;
	if (r->len - at < r->qp.stage_len)
		return -EINVAL;
	if ((rc = sock_conn_resume(s, &r->qp, buf + at)) < 0)
		return rc;
	at += r->qp.stage_len;
	for (uint32_t k = 0; k < r->nmsgs; k++) {
		uint32_t n;

		if (r->len - at < sizeof(n))
			return -EINVAL;
		memcpy(&n, buf + at, sizeof(n));
		at += sizeof(n);
		if (r->len - at < n || (rc = sock_pool_inject(s, buf + at, n)) < 0)
			return rc < 0 ? rc : -EINVAL;
		at += n;
	}
	return 0;
}
