/* SPDX-License-Identifier: MIT */
/*
 * The host's requests carried out, one decoded request at a time (call); a
 * call that would block parked on its socket (hosts.c calls it again when the
 * socket is ready: resume).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "tcpserver/daemon/tsd.h"

/* Parks the call in |rec| on |s| until it is ready for |events|.  False: out of memory. */
static bool park(struct host *h, struct tsock *s, int hi, uint32_t handle, const uint8_t *rec,
		 uint32_t len, uint32_t events)
{
	if (!s->parked && !(s->parked = malloc(MSG_MAX)))
		return false;
	if (s->parked != rec)
		memcpy(s->parked, rec, len);
	s->parked_len = len;
	s->park_ev = events;
	if (!interest(hi, handle, s))
		return false;
	h->parked++;
	return true;
}

/* READY when the watched events of the socket changed since it was last told. */
bool tell_ready(struct host *h, uint32_t handle, struct tsock *s)
{
	struct pollfd p = { .fd = s->fd, .events = (short)s->want };
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_READY, .sock = handle } };
	uint32_t now;

	if (!s->want)
		return true;
	now = poll(&p, 1, 0) == 1 ? (uint32_t)p.revents & (s->want | POLLERR | POLLHUP) : 0;
	if (now == s->told)
		return true;
	s->told = now;
	m.u.watch.events = now;
	return answer(h, &m);
}

/*
 * Carries out one decoded request.  Returns 1 answered, 0 parked (|rec|
 * kept), -1 the host must go (it broke the protocol or does not read).
 */
int call(struct host *h, int hi, const struct esock_tsp_msg *q, const uint8_t *rec, uint32_t len)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_RESP, .op = q->h.op, .id = q->h.id, .sock = q->h.sock } };
	struct tsock *s = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	static uint8_t buf[ESOCK_TSP_BODY_MAX], xbuf[ESOCK_TSP_BODY_MAX];
	struct esock_tsp_msg xq;
	int rc = 0, fd;

	if (q->h.type != ESOCK_TSP_REQ || (!h->hello && q->h.op != ESOCK_TSP_HELLO))
		return -1;
	switch (q->h.op) {
	case ESOCK_TSP_HELLO:
	case ESOCK_TSP_BYE:
	case ESOCK_TSP_SOCKET:
	case ESOCK_TSP_FORK:
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
		break;
	default:
		if (!(s = sock_of(h, q->h.sock)))
			return reply(h, &q->h, -EBADF) ? 1 : -1;
		if (s->parked && rec != s->parked)
			return reply(h, &q->h, -EBUSY) ? 1 : -1; /* (one call at a time per socket) */
		if (rec != s->parked)
			s->calls++;
	}
	switch (q->h.op) {
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
	case ESOCK_TSP_SEND_REG:
	case ESOCK_TSP_RECV_REG:
		if (!(h->flags & ESOCK_TSP_F_REG_BUFFERS))
			return reply(h, &q->h, -EOPNOTSUPP) ? 1 : -1;
		break;
	}
	if (q->h.op == ESOCK_TSP_SEND_REG) {
		/* The octets from the host's region, then a SEND of them (answered as SEND is). */
		if (q->u.xfer.len > sizeof(xbuf))
			return reply(h, &q->h, -EMSGSIZE) ? 1 : -1;
		if ((rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, q->u.xfer.len,
					   ESOCK_TSP_REG_READ)) < 0 ||
		    (rc = h->rc ? tsp_rchan_fetch(h->rc, tsp_region_key(&h->regions, q->u.xfer.region), q->u.xfer.addr,
						  q->u.xfer.len)
				: tsp_mem_read(h->cred_pid, q->u.xfer.addr, xbuf, q->u.xfer.len)) < 0)
			return reply(h, &q->h, rc) ? 1 : -1;
		if (rec != s->parked)
			h->reg_out += q->u.xfer.len; /* (a parked call read again is counted once) */
		xq = *q;
		xq.u.send.flags = q->u.xfer.flags;
		xq.data = h->rc && q->u.xfer.len ? tsp_rchan_stage(h->rc) : xbuf; /* (the stage: fetch made it) */
		xq.data_len = q->u.xfer.len;
		q = &xq;
	}
	switch (q->h.op) {
	case ESOCK_TSP_HELLO:
		if (q->u.hello.vmin > ESOCK_TSP_VERSION || q->u.hello.vmax < ESOCK_TSP_VERSION)
			return reply(h, &q->h, -EPROTONOSUPPORT) ? 1 : -1;
		if ((q->u.hello.flags & ESOCK_TSP_F_INHERIT) && fork_take(h, q->h.sock) < 0)
			return reply(h, &q->h, -EPERM) ? 1 : -1; /* (no such fork: it may try again) */
		h->hello = true;
		h->pid = q->u.hello.pid;
		/*
		 * Granted: all it asks for; registered buffers over shared memory
		 * only where the kernel told the host's pid (across the network
		 * they are RDMA Reads and Writes of the host's registered memory).
		 */
		h->flags = q->u.hello.flags & (ESOCK_TSP_F_SETUP_ACCEPT | ESOCK_TSP_F_ASYNC_SEND |
					       ESOCK_TSP_F_EAGER_ACCEPT | ESOCK_TSP_F_EAGER_RECV |
					       ESOCK_TSP_F_INHERIT |
					       (h->cred_pid > 0 || h->rc ? ESOCK_TSP_F_REG_BUFFERS : 0));
		m.u.hello_ok.version = ESOCK_TSP_VERSION;
		m.u.hello_ok.flags = h->flags;
		m.u.hello_ok.max_socks = (uint32_t)d.max_socks;
		m.u.hello_ok.max_data = ESOCK_TSP_BODY_MAX;
		logv("host %d: pid %u said hello\n", hi, h->pid);
		break;
	case ESOCK_TSP_BYE:
		for (int i = 0; i < d.max_socks; i++)
			sock_close(h, (uint32_t)i + 1, true);
		break;
	case ESOCK_TSP_SOCKET:
		if (q->u.socket.family != 4 && q->u.socket.family != 6)
			rc = -EAFNOSUPPORT;
		else if ((fd = socket(q->u.socket.family == 4 ? AF_INET : AF_INET6,
				      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
			rc = -errno;
		else if ((rc = new_handle(h, fd, q->u.socket.flags & ESOCK_TSP_NONBLOCK)) < 0)
			close(fd);
		m.result = rc;
		return answer(h, &m) ? 1 : -1;
	case ESOCK_TSP_BIND:
	case ESOCK_TSP_CONNECT:
		if ((rc = to_sockaddr(&q->u.addr, &ss, &sl)) < 0)
			break;
		if (q->h.op == ESOCK_TSP_BIND) {
			rc = bind(s->fd, (struct sockaddr *)&ss, sl) < 0 ? -errno : 0;
		} else if (rec == s->parked) { /* ready: how did it end? */
			int err = 0;
			socklen_t el = sizeof(err);

			rc = getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ? -errno : -err;
		} else if (connect(s->fd, (struct sockaddr *)&ss, sl) < 0) {
			rc = -errno;
			if (rc == -EINPROGRESS && !s->nonblock)
				return park(h, s, hi, q->h.sock, rec, len, EPOLLOUT) ? 0 : -1;
		}
		break;
	case ESOCK_TSP_LISTEN:
		rc = listen(s->fd, q->u.listen.backlog) < 0 ? -errno : 0;
		s->listener |= rc == 0;
		if (rc == 0 && getsockname(s->fd, (struct sockaddr *)&ss, &sl) == 0) {
			static const uint8_t any[16];

			from_sockaddr(&ss, &s->local);
			s->local_fixed = memcmp(s->local.addr, any, s->local.family == 4 ? 4 : 16) != 0;
		}
		break;
	case ESOCK_TSP_ACCEPT:
		if (s->eager || (s->listener && (h->flags & ESOCK_TSP_F_EAGER_ACCEPT))) {
			/* Its connections come as ACCEPTED events (from now on: eager_arm). */
			m.result = -EINVAL;
			if (!answer(h, &m))
				return -1;
			return eager_arm(h, hi, q->h.sock, s) ? 1 : -1;
		}
		fd = accept4(s->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			if (rc == -EAGAIN || rc == -EWOULDBLOCK)
				s->told &= ~(uint32_t)POLLIN; /* (the host knows: the next connection is news) */
			if ((rc == -EAGAIN || rc == -EWOULDBLOCK) && !s->nonblock &&
			    !(q->u.accept.flags & ESOCK_TSP_MSG_DONTWAIT))
				return park(h, s, hi, q->h.sock, rec, len, EPOLLIN) ? 0 : -1;
			break;
		}
		if ((rc = new_handle(h, fd, q->u.accept.flags & ESOCK_TSP_NONBLOCK)) < 0) {
			close(fd);
			break;
		}
		h->accepted++;
		from_sockaddr(&ss, &m.u.accepted.peer); /* (as accept4 gives it) */
		sl = sizeof(ss);
		/* Setup with accept: the local address too, no GETSOCKNAME round trip after. */
		if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && s->local_fixed)
			m.u.accepted.local = s->local;
		else if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			from_sockaddr(&ss, &m.u.accepted.local);
		break;
	case ESOCK_TSP_REG:
		m.result = tsp_region_add(&h->regions, h->rc ? 0 : h->cred_pid, q->u.reg.addr, q->u.reg.len,
					  q->u.reg.access, q->u.reg.key);
		return answer(h, &m) ? 1 : -1;
	case ESOCK_TSP_DEREG:
		rc = tsp_region_del(&h->regions, q->u.dereg.region);
		break;
	case ESOCK_TSP_SEND:
	case ESOCK_TSP_SEND_REG: {
		uint32_t off = rec == s->parked ? s->sent : 0;

		if (h->flags & ESOCK_TSP_F_ASYNC_SEND) {
			/* Taken at once (queued what TCP does not take now); CREDIT gives the room back. */
			if (s->oerr) {
				rc = -s->oerr;
				s->oerr = 0;
				break;
			}
			if ((uint64_t)s->olen + s->unreported + q->data_len > ESOCK_TSP_CREDIT_WINDOW) {
				rc = -ENOBUFS; /* (beyond its credit: the host's mistake) */
				break;
			}
			if (!s->obuf && !(s->obuf = malloc(ESOCK_TSP_CREDIT_WINDOW))) {
				rc = -ENOMEM;
				break;
			}
			if (!s->olen) {
				ssize_t n = send(s->fd, q->data, q->data_len, MSG_NOSIGNAL | MSG_DONTWAIT);

				if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
					rc = -errno;
					break;
				}
				off = n > 0 ? (uint32_t)n : 0;
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
			 * (a send the host posted and does not wait for: its answer
			 * need not wake it, a wake-up that would cost it more than the
			 * send itself)
			 */
			m.result = (int)q->data_len;
			if (!answer_ex(h, &m, q->h.op == ESOCK_TSP_SEND && (q->u.send.flags & ESOCK_TSP_MSG_POSTED)) ||
			    !interest(hi, q->h.sock, s))
				return -1;
			return credit(h, q->h.sock, s) ? 1 : -1;
		}
		{
		ssize_t n = send(s->fd, q->data + off, q->data_len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT | (q->u.send.flags & ESOCK_TSP_MSG_MORE ? MSG_MORE : 0));

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = off ? (int)off : -errno;
			break;
		}
		off += n > 0 ? (uint32_t)n : 0;
		h->bytes_out += n > 0 ? (uint64_t)n : 0;
		s->out += n > 0 ? (uint64_t)n : 0;
		if (off < q->data_len)
			s->told &= ~(uint32_t)POLLOUT; /* (full: room again is news) */
		if (off < q->data_len && !s->nonblock && !(q->u.send.flags & ESOCK_TSP_MSG_DONTWAIT)) {
			/* a blocking send returns with all of it taken */
			s->sent = off;
			return park(h, s, hi, q->h.sock, rec, len, EPOLLOUT) ? 0 : -1;
		}
		rc = off ? (int)off : q->data_len ? -EAGAIN : 0;
		break;
		}
	}
	case ESOCK_TSP_RECV:
	case ESOCK_TSP_RECV_REG: {
		bool reg = q->h.op == ESOCK_TSP_RECV_REG;
		uint32_t want = reg ? q->u.xfer.len : q->u.recv.max, qfl = reg ? q->u.xfer.flags : q->u.recv.flags;
		uint32_t max = want < sizeof(buf) ? want : (uint32_t)sizeof(buf);

		if (reg && (s->eager_rx || (rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, max,
								    ESOCK_TSP_REG_WRITE)) < 0)) {
			rc = rc < 0 ? rc : -EINVAL; /* (a socket that receives eagerly has its octets in DATA) */
			break;
		}
		if (s->eager_rx) { /* its octets come as DATA: a RECV only gives credit back */
			if (!(q->u.recv.flags & ESOCK_TSP_MSG_CREDIT)) {
				/* (after the last DATA: how the stream ended, 0 for a FIN) */
				rc = s->rx_end ? -s->rx_err : -EINVAL;
				break;
			}
			s->rx_out -= q->u.recv.max < s->rx_out ? q->u.recv.max : s->rx_out;
			m.result = 0;
			if (!answer(h, &m) || !interest(hi, q->h.sock, s))
				return -1;
			return push_data(h, q->h.sock, s, false) ? 1 : -1;
		}
		int fl = MSG_DONTWAIT | (qfl & ESOCK_TSP_MSG_PEEK ? MSG_PEEK : 0);
		/* (across the network a RECV_REG's octets go from the stage, where an RDMA Write takes them) */
		uint8_t *into = reg && h->rc ? tsp_rchan_stage(h->rc) : buf;
		ssize_t n = into ? recv(s->fd, into, max, fl) : (errno = ENOMEM, -1);

		if (n < 0) {
			rc = -errno;
			if (rc == -EAGAIN || rc == -EWOULDBLOCK)
				s->told &= ~(uint32_t)POLLIN; /* (drained: the next octets are news) */
			if ((rc == -EAGAIN || rc == -EWOULDBLOCK) && !s->nonblock && max &&
			    !(qfl & ESOCK_TSP_MSG_DONTWAIT))
				return park(h, s, hi, q->h.sock, rec, len, EPOLLIN | EPOLLRDHUP) ? 0 : -1;
			break;
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
		rc = (int)n;
		if (reg) {
			/* (a host that unmapped what it registered loses these octets: its error) */
			rc = h->rc ? tsp_rchan_place(h->rc, (uint32_t)n, tsp_region_key(&h->regions, q->u.xfer.region),
						     q->u.xfer.addr)
				   : tsp_mem_write(h->cred_pid, q->u.xfer.addr, buf, (uint32_t)n);
			if (rc == 0)
				rc = (int)n;
			h->reg_in += rc > 0 ? (uint64_t)rc : 0;
			break;
		}
		m.data = buf;
		m.data_len = (uint32_t)n;
		break;
	}
	case ESOCK_TSP_CLOSE:
		sock_close(h, q->h.sock, true);
		m.result = 0;
		if (!answer(h, &m))
			return -1;
		/* A handle is free again: eager listeners held back by the limit take more. */
		if (!h->held_back)
			return 1;
		h->held_back = false;
		for (int i = 0; h->neager && i < d.max_socks; i++)
			if (h->socks[i].fd >= 0 && h->socks[i].eager &&
			    !accept_ahead(h, (uint32_t)i + 1, &h->socks[i]))
				return -1;
		return 1;
	case ESOCK_TSP_SHUTDOWN:
		if (s->olen && (q->u.shutdown.how == SHUT_WR || q->u.shutdown.how == SHUT_RDWR) &&
		    q->u.shutdown.how >= 0) {
			s->shut_how = q->u.shutdown.how; /* after the queued octets (flush_out) */
			break;
		}
		rc = shutdown(s->fd, q->u.shutdown.how) < 0 ? -errno : 0;
		break;
	case ESOCK_TSP_SETSOCKOPT: {
		struct linger lg = { 0 };

		if (q->u.opt.level == SOL_SOCKET && q->u.opt.name == SO_LINGER && q->data_len >= sizeof(lg))
			memcpy(&lg, q->data, sizeof(lg));
		if (q->u.opt.level == ESOCK_TSP_SOL) { /* (ours: the socket's mode) */
			int32_t v = 0;

			if (q->u.opt.name != ESOCK_TSP_SO_NONBLOCK)
				rc = -ENOPROTOOPT;
			else if (q->data_len != sizeof(v))
				rc = -EINVAL;
			else {
				memcpy(&v, q->data, sizeof(v));
				s->nonblock = v != 0;
			}
		} else if (!option_ok(q->u.opt.level, q->u.opt.name) || q->u.opt.name == SO_ERROR || q->u.opt.name == SO_TYPE)
			rc = -ENOPROTOOPT;
		else if (lg.l_onoff && lg.l_linger > 0)
			rc = -EOPNOTSUPP; /* (close would block tcpserverd that long; {1, 0} resets, as it should) */
		else
			rc = setsockopt(s->fd, q->u.opt.level, q->u.opt.name, q->data, q->data_len) < 0 ? -errno : 0;
		break;
	}
	case ESOCK_TSP_GETSOCKOPT: {
		socklen_t ol = q->u.getopt.len < ESOCK_TSP_OPT_MAX ? q->u.getopt.len : ESOCK_TSP_OPT_MAX;

		if (q->u.getopt.level == ESOCK_TSP_SOL && q->u.getopt.name == ESOCK_TSP_SO_NONBLOCK &&
		    ol >= sizeof(int32_t)) {
			int32_t v = s->nonblock;

			memcpy(buf, &v, sizeof(v));
			m.data = buf;
			m.data_len = sizeof(v);
		} else if (!option_ok(q->u.getopt.level, q->u.getopt.name)) {
			rc = -ENOPROTOOPT;
		} else if (getsockopt(s->fd, q->u.getopt.level, q->u.getopt.name, buf, &ol) < 0) {
			rc = -errno;
		} else {
			m.data = buf;
			m.data_len = ol;
		}
		break;
	}
	case ESOCK_TSP_GETSOCKNAME:
	case ESOCK_TSP_GETPEERNAME:
		if ((q->h.op == ESOCK_TSP_GETSOCKNAME ? getsockname : getpeername)(s->fd, (struct sockaddr *)&ss, &sl) < 0)
			rc = -errno;
		else
			from_sockaddr(&ss, &m.u.addr);
		break;
	case ESOCK_TSP_FORK:
		/* Two processes hold them now: nothing is pushed ahead to one of them any more. */
		for (int i = 0; i < d.max_socks; i++)
			if (h->socks[i].fd >= 0 && h->socks[i].eager_rx) {
				h->socks[i].eager_rx = false;
				if (!interest(hi, (uint32_t)i + 1, &h->socks[i]))
					return -1;
			}
		rc = fork_copy(h);
		logv("host %d (pid %u): fork, %d sockets copied\n", hi, h->pid, rc > 0 ? h->nsocks : 0);
		break;
	case ESOCK_TSP_WATCH:
		/* From now on READY tells each change of these (0: no more); the first comes now. */
		s->want = q->u.watch.events & (POLLIN | POLLOUT | POLLPRI | POLLRDHUP);
		s->told = 0;
		if (!interest(hi, q->h.sock, s))
			rc = -ENOMEM;
		m.result = rc;
		if (!answer(h, &m) || ((s->want & POLLIN) && !eager_arm(h, hi, q->h.sock, s)))
			return -1;
		if (s->eager) {
			/*
			 * Its connections come as ACCEPTED, which is what the host's
			 * readiness of it says: no READY (and no poll here) for each.
			 */
			s->want &= ~(uint32_t)(POLLIN | POLLRDHUP);
			if (!interest(hi, q->h.sock, s))
				return -1;
		}
		return tell_ready(h, q->h.sock, s) ? 1 : -1;
	default:
		rc = -EOPNOTSUPP;
	}
	m.result = rc;
	if (rc < 0) {
		m.data = NULL;
		m.data_len = 0;
	}
	if (!answer(h, &m))
		return -1;
	/* A connection made: eager receive starts (after the answer that names it). */
	/*
	 * A connection taken: the listener's readiness told again when that was
	 * its last (a level-triggered watcher must not see it ready for nothing).
	 */
	if (rc > 0 && q->h.op == ESOCK_TSP_ACCEPT)
		return tell_ready(h, q->h.sock, s) && rx_start(h, hi, (uint32_t)rc, &h->socks[rc - 1]) ? 1 : -1;
	if (rc == 0 && q->h.op == ESOCK_TSP_CONNECT)
		return rx_start(h, hi, q->h.sock, s) ? 1 : -1;
	return 1;
}
