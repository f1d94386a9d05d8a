/* SPDX-License-Identifier: MIT */
/*
 * SOL_ESOCK options, switching a socket to DDPMODE, and the environment that
 * does it without source changes (ESOCK_DDPMODE=all|PORT[,LO-HI...], set by
 * esock-run --ddp).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "util/log.h"

/* ---- ESOCK_DDPMODE from the environment ---- */

static struct {
	bool any, all;
	uint64_t ports[65536 / 64];
} env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void port_set(unsigned lo, unsigned hi)
{
	for (unsigned p = lo; p <= hi && p < 65536; p++)
		env.ports[p / 64] |= 1ull << (p % 64);
}

static void env_parse(void)
{
	const char *e = getenv("ESOCK_DDPMODE");
	char *copy, *tok, *save = NULL;

	if (!e || !*e || strcmp(e, "0") == 0)
		return;
	env.any = true;
	if (strcmp(e, "all") == 0 || strcmp(e, "1") == 0) {
		env.all = true;
		log_info("DDPMODE for every TCP socket (ESOCK_DDPMODE=%s)", e);
		return;
	}
	if (!(copy = strdup(e)))
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long lo = strtoul(tok, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		if (*end || lo == 0 || hi < lo || hi > 65535) {
			log_error("ESOCK_DDPMODE: '%s' is not a port or range; ignored", tok);
			continue;
		}
		port_set((unsigned)lo, (unsigned)hi);
	}
	free(copy);
	log_info("DDPMODE for TCP sockets on ports %s (ESOCK_DDPMODE)", e);
}

static unsigned port_of(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

/*
 * True when the environment asks for DDPMODE on |fd| about to connect to
 * |addr| (or, |listening|, bound to it).  Only TCP over IPv4/IPv6.
 */
bool sock_auto_ddp(int fd, const struct sockaddr *addr, bool listening)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	unsigned port;

	pthread_once(&env_once, env_parse);
	if (!env.any)
		return false;
	if (listening) {
		if (REAL(getsockname)(fd, (struct sockaddr *)&ss, &len) < 0)
			return false;
		addr = (const struct sockaddr *)&ss;
	}
	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return false;
	port = port_of(addr);
	if (!env.all && !(env.ports[port / 64] & (1ull << (port % 64))))
		return false;
	return sock_enable(fd, 1) == 0;
}

/*
 * Every TCP socket will be switched at its connect or listen: switched at
 * birth instead, it needs no questions to the kernel (type, protocol, state,
 * flags, timeouts and linger are socket()'s arguments and the defaults).
 */
int sock_born(int fd, int domain, int type, int protocol)
{
	pthread_once(&env_once, env_parse);
	if ((type & 0xf) != SOCK_STREAM || (protocol != 0 && protocol != IPPROTO_TCP))
		return 0; /* (Linux has TCP only as SOCK_STREAM: the protocol says it all) */
	if (sock_off_enabled())
		return sock_off_born(fd, domain, type);
	if (env.all && sock_new_born(fd, type))
		log_debug("fd %d: DDPMODE from socket()", fd);
	return 0;
}

/* ---- switching ---- */

/* (Linux has TCP only as SOCK_STREAM: the protocol says it all.) */
static int is_tcp(int fd)
{
	int proto = 0;
	socklen_t len = sizeof(proto);

	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0)
		return -errno;
	return proto == IPPROTO_TCP ? 0 : -EOPNOTSUPP;
}

int sock_enable(int fd, int on)
{
	uint8_t state = 0; /* tcpi_state, the first octet of struct tcp_info */
	socklen_t len = sizeof(state);
	int rc;

	if (!on)
		return 0; /* not in DDPMODE: nothing to undo */
	if ((rc = is_tcp(fd)) < 0)
		return rc;
	/* Not yet connected nor listening: closed, or a connect under way (getpeername's ENOTCONN). */
	if (REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &state, &len) == 0 && len >= 1 &&
	    state != TCP_CLOSE && state != TCP_SYN_SENT)
		return -EISCONN;
	if (!sock_new(fd))
		return -ENOMEM;
	log_debug("fd %d: DDPMODE", fd);
	return 0;
}

/* ---- options ---- */

static int get_int(const void *val, socklen_t len, int *out)
{
	if (!val || len < (socklen_t)sizeof(int))
		return -EINVAL;
	memcpy(out, val, sizeof(int));
	return 0;
}

static int put(void *val, socklen_t *len, const void *src, size_t n)
{
	if (!val || !len)
		return -EFAULT;
	if (*len < (socklen_t)n && n == sizeof(int))
		return -EINVAL;
	if ((size_t)*len > n)
		*len = (socklen_t)n;
	memcpy(val, src, *len);
	return 0;
}

static bool before_connect(const struct esock_sock *s)
{
	return s->st == SOCK_MARKED;
}

int sock_setopt(struct esock_sock *s, int level, int name, const void *val, socklen_t len)
{
	int v = 0, rc = 0;

	(void)level;
	if (name == ESOCK_PRIVDATA || name == ESOCK_PEER) {
		if (!before_connect(s) && s->st != SOCK_LISTENING)
			return -EISCONN;
		if (len && !val)
			return -EFAULT;
		pthread_mutex_lock(&s->lock);
		if (name == ESOCK_PRIVDATA) {
			if (len > 200) { /* room for our announcement, under siw's 256 - 4 */
				rc = -EMSGSIZE;
			} else {
				memcpy(s->o.privdata, val, len);
				s->o.privdata_len = (uint16_t)len;
			}
		} else if (len >= sizeof(s->o.peer)) {
			rc = -EINVAL;
		} else {
			memcpy(s->o.peer, val, len);
			s->o.peer[len] = 0;
		}
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	if ((rc = get_int(val, len, &v)) < 0)
		return rc;
	if (name == ESOCK_DDPMODE)
		return v ? 0 : (before_connect(s) ? 0 : -EISCONN);
	if (name == ESOCK_MSGMODE) {
		s->o.msgmode = v != 0;
		return 0;
	}
	if (!before_connect(s) && s->st != SOCK_LISTENING)
		return -EISCONN;
	pthread_mutex_lock(&s->lock);
	switch (name) {
	case ESOCK_MPA_REV:
		if (v != 1 && v != 2)
			rc = -EINVAL;
		else
			s->o.mpa_rev = v;
		break;
	case ESOCK_CRC:
		s->o.crc = v != 0;
		break;
	case ESOCK_MARKERS:
		s->o.markers = v != 0;
		break;
	case ESOCK_IRD:
	case ESOCK_ORD:
		if (v < 0 || v > 128)
			rc = -EINVAL;
		else if (name == ESOCK_IRD)
			s->o.ird = v;
		else
			s->o.ord = v;
		break;
	case ESOCK_RCVDEPTH:
		if (v < 0 || v > 4096)
			rc = -EINVAL;
		else if (s->cq && (uint32_t)sock_cq_depth(v) > ep_cq_size(s->cq))
			rc = -EBUSY; /* its CQ exists already (epoll_ctl), sized for the old depth */
		else
			s->o.rdepth = v;
		break;
	case ESOCK_RCVSIZE:
		if (v < 64 || v > (16 << 20))
			rc = -EINVAL;
		else
			s->o.rsize = v;
		break;
	case ESOCK_MPA_TIMEOUT:
		s->o.timeout_ms = v < 0 ? -1 : v;
		break;
	default:
		rc = -ENOPROTOOPT;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int sock_getopt(struct esock_sock *s, int level, int name, void *val, socklen_t *len)
{
	struct esock_conn_info info;
	bool have;
	int v;

	(void)level;
	/*
	 * A blocking connect returns before the server's Reply (sock_connect):
	 * what was negotiated is known once it came.
	 */
	if (s->st == SOCK_MPA_CONNECTING && name != ESOCK_DDPMODE &&
	    !(REAL(fcntl)(s->fd, F_GETFL) & O_NONBLOCK)) {
		pthread_mutex_lock(&s->lock);
		(void)sock_connect_progress(s, -1);
		pthread_mutex_unlock(&s->lock);
	}
	have = s->qp && esock_qp_conn_info(s->qp, &info) == 0;
	switch (name) {
	case ESOCK_DDPMODE:
		v = s->st != SOCK_PLAIN;
		return put(val, len, &v, sizeof(v));
	case ESOCK_MPA_REV:
		v = have ? info.mpa_rev : s->o.mpa_rev;
		return put(val, len, &v, sizeof(v));
	case ESOCK_CRC:
		v = have ? info.crc : s->o.crc;
		return put(val, len, &v, sizeof(v));
	case ESOCK_MARKERS:
		v = have ? info.markers_rx : s->o.markers;
		return put(val, len, &v, sizeof(v));
	case ESOCK_IRD:
		v = have ? info.ird : s->o.ird ? s->o.ird : 8;
		return put(val, len, &v, sizeof(v));
	case ESOCK_ORD:
		v = have ? info.ord : s->o.ord ? s->o.ord : 8;
		return put(val, len, &v, sizeof(v));
	case ESOCK_MSGMODE:
		return put(val, len, &s->o.msgmode, sizeof(int));
	case ESOCK_RCVDEPTH:
		return put(val, len, &s->o.rdepth, sizeof(int));
	case ESOCK_RCVSIZE:
		return put(val, len, &s->o.rsize, sizeof(int));
	case ESOCK_MPA_TIMEOUT:
		return put(val, len, &s->o.timeout_ms, sizeof(int));
	case ESOCK_PRIVDATA:
		return put(val, len, s->o.privdata, s->o.privdata_len);
	case ESOCK_PEER_PRIVDATA: {
		uint16_t n;

		if (!have)
			return -ENOTCONN;
		n = info.private_data_len;
		if (s->peer_esock && n >= s->peer_ann_len)
			n -= s->peer_ann_len; /* the announcement is ours, not the peer's */
		return put(val, len, info.private_data, n);
	}
	case ESOCK_PEER:
		return put(val, len, have && info.peer ? info.peer : s->o.peer[0] ? s->o.peer : "generic",
			   strlen(have && info.peer ? info.peer : s->o.peer[0] ? s->o.peer : "generic") + 1);
	case ESOCK_LAST_ERROR:
		return put(val, len, &s->last_error, sizeof(s->last_error));
	case ESOCK_STATS:
		s->stats->peer_msg_max = s->peer_msg_max;
		s->stats->peer_is_esock = s->peer_esock;
		return put(val, len, s->stats, sizeof(*s->stats));
	case ESOCK_QP:
		return put(val, len, &s->qp, sizeof(s->qp));
	default:
		return -ENOPROTOOPT;
	}
}

/*
 * setsockopt(TCP_NODELAY) on a DDPMODE socket.  A connection has it on from
 * the library (ep_tune_socket): setting it again would only push a corked
 * RTR out alone (ep.h, rtr_cork), so that is not passed on; turning it off
 * is, and noted.
 */
int sock_set_nodelay(struct esock_sock *s, const void *val, socklen_t len)
{
	int on;

	if (s->off)
		return sock_off_setopt(s, IPPROTO_TCP, TCP_NODELAY, val, len);
	if (!val || len < (socklen_t)sizeof(int))
		return REAL(setsockopt)(s->fd, IPPROTO_TCP, TCP_NODELAY, val, len) < 0 ? -errno : 0;
	memcpy(&on, val, sizeof(on));
	if (on && !s->nagle && s->qp && (s->st == SOCK_CONNECTED || s->st == SOCK_MPA_CONNECTING))
		return 0;
	if (REAL(setsockopt)(s->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) < 0)
		return -errno;
	s->nagle = !on;
	return 0;
}
