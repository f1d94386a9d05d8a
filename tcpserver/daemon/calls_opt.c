/* SPDX-License-Identifier: MIT */
/*
 * SETSOCKOPT and GETSOCKOPT (the portable options, sockets.c's option_ok,
 * and TSP's own: the socket's mode), GETSOCKNAME and GETPEERNAME.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tcpserver/daemon/req.h"

int call_setsockopt(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct tsock *s = r->s;
	struct linger lg = { 0 };

	if (q->u.opt.level == SOL_SOCKET && q->u.opt.name == SO_LINGER && q->data_len >= sizeof(lg))
		memcpy(&lg, q->data, sizeof(lg));
	if (q->u.opt.level == ESOCK_TSP_SOL) { /* (ours: the socket's mode) */
		int32_t v = 0;

		if (q->u.opt.name != ESOCK_TSP_SO_NONBLOCK)
			return done(r, -ENOPROTOOPT);
		if (q->data_len != sizeof(v))
			return done(r, -EINVAL);
		memcpy(&v, q->data, sizeof(v));
		s->nonblock = v != 0;
		return done(r, 0);
	}
	/* (SO_ERROR and SO_TYPE only read; TCP_CORK and TCP_KEEPIDLE share their numbers) */
	if (!option_ok(q->u.opt.level, q->u.opt.name) ||
	    (q->u.opt.level == SOL_SOCKET && (q->u.opt.name == SO_ERROR || q->u.opt.name == SO_TYPE)))
		return done(r, -ENOPROTOOPT);
	if (lg.l_onoff && lg.l_linger > 0)
		return done(r, -EOPNOTSUPP); /* (close would block tcpserverd that long; {1, 0} resets, as it should) */
	if (setsockopt(s->fd, q->u.opt.level, q->u.opt.name, q->data, q->data_len) < 0)
		return done(r, -errno);
	if (q->u.opt.level == IPPROTO_TCP && q->u.opt.name == TCP_CORK && q->data_len >= sizeof(int)) {
		int v;

		memcpy(&v, q->data, sizeof(v));
		s->corked = v != 0; /* (its octets wait anyway: none is held) */
	}
	return done(r, 0);
}

int call_getsockopt(struct req *r)
{
	static uint8_t buf[ESOCK_TSP_OPT_MAX];
	const struct esock_tsp_msg *q = r->q;
	struct tsock *s = r->s;
	socklen_t ol = q->u.getopt.len < ESOCK_TSP_OPT_MAX ? q->u.getopt.len : ESOCK_TSP_OPT_MAX;

	if (q->u.getopt.level == ESOCK_TSP_SOL && q->u.getopt.name == ESOCK_TSP_SO_NONBLOCK &&
	    ol >= sizeof(int32_t)) {
		int32_t v = s->nonblock;

		memcpy(buf, &v, sizeof(v));
		ol = sizeof(v);
	} else if (!option_ok(q->u.getopt.level, q->u.getopt.name)) {
		return done(r, -ENOPROTOOPT);
	} else if (getsockopt(s->fd, q->u.getopt.level, q->u.getopt.name, buf, &ol) < 0) {
		return done(r, -errno);
	}
	r->m.data = buf;
	r->m.data_len = ol;
	return done(r, 0);
}

int call_names(struct req *r)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if ((r->q->h.op == ESOCK_TSP_GETSOCKNAME ? getsockname : getpeername)(r->s->fd, (struct sockaddr *)&ss, &sl) < 0)
		return done(r, -errno);
	from_sockaddr(&ss, &r->m.u.addr);
	return done(r, 0);
}
