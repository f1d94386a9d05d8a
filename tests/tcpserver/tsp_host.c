/* SPDX-License-Identifier: MIT */
/*
 * A host process for tcpserverd's tests (tcpserverd-test.sh):
 *   tsp-host echo PATH          listens on 127.0.0.1 through tcpserverd, prints the port,
 *                               accepts one connection and echoes it to its end
 *   tsp-host plain PORT OCTETS  a plain TCP client: sends OCTETS, reads them back, compares
 *   tsp-host garbage PATH       hands tcpserverd a channel, then a record that is not TSP:
 *                               exit 0 when tcpserverd ends that channel (and only that)
 *   tsp-host hold PATH SECONDS  a host that stays attached for a while
 *   tsp-host refused PATH       exit 0 when tcpserverd refuses this host (admission)
 *   tsp-host watch PATH         the echo server again, non-blocking, driven by READY events
 *   tsp-host async PATH OCTETS  asynchronous send: accepts one connection, sends OCTETS in
 *                               64 KiB SENDs within its credit (CREDIT events), then closes
 *                               at once (what is still queued goes out after the CLOSE)
 *   tsp-host sink PORT OCTETS   a plain TCP client that reads OCTETS of the pattern to the end
 *   tsp-host eager PATH N       eager accept: N connections come as ACCEPTED events (no
 *                               ACCEPT call), each echoed to its end
 *   tsp-host eagerrx PATH OCTETS  eager receive: a connection's octets come as DATA events
 *                               (credit given back as they are used) to its end; compares
 *   tsp-host source PORT OCTETS a plain TCP client that sends OCTETS of the pattern, then closes
 *   tsp-host loop PATH          calls until tcpserverd goes away: prints what the call said
 *   tsp-host parked PATH        a blocking ACCEPT parked in tcpserverd, for ever (to be killed)
 *   tsp-host silent PATH        connects and says nothing for 2 s
 *   tsp-host chaos PATH N       N requests that decode but make little sense (any op on
 *                               any handle, odd sizes and flags, calls that park): every one
 *                               answered, or the channel ended; never a hang
 *   tsp-host calls PATH N       N getsockname calls through tcpserverd and N made
 *                               directly, in turns: their median times (the channel's cost)
 *   tsp-host regecho PATH       registered buffers: bad REG/SEND_REG/RECV_REG/DEREG requests
 *                               refused with their codes (and REG refused to a host that did
 *                               not ask for it), then the echo server with octets that never
 *                               travel in the queues (RECV_REG into, SEND_REG from, one region)
 *   tsp-host reglie ADDR:PORT   across the network: REG of memory outside the MR whose key it
 *                               names; the SEND_REG from it must cut the channel (the
 *                               endpoint refuses the Read), never read that memory: exit 0
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/chan.h"
#include "tcpserver/host.h"

static int die(const char *what, int rc)
{
	fprintf(stderr, "tsp-host: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static struct esock_tsp_msg req(unsigned op, uint32_t sock)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_REQ, .op = (uint16_t)op, .sock = sock } };

	return m;
}

/*
 * A listener on 127.0.0.1 (an ephemeral port) through tcpserverd; |flags|: SOCKET's
 * (ESOCK_TSP_NONBLOCK).  Prints the port for the script.  Returns its handle.
 */
static int listen_here(struct tsp_host *h, uint32_t flags)
{
	struct esock_tsp_msg q = req(ESOCK_TSP_SOCKET, 0), r;
	int ls, rc;

	q.u.socket.family = 4;
	q.u.socket.flags = flags;
	if ((ls = tsp_host_call(h, &q, &r)) < 0)
		die("socket", ls);
	q = req(ESOCK_TSP_BIND, (uint32_t)ls);
	q.u.addr.family = 4;
	memcpy(q.u.addr.addr, (uint8_t[]){ 127, 0, 0, 1 }, 4);
	if ((rc = tsp_host_call(h, &q, &r)) < 0)
		die("bind", rc);
	q = req(ESOCK_TSP_LISTEN, (uint32_t)ls);
	q.u.listen.backlog = 8;
	if ((rc = tsp_host_call(h, &q, &r)) < 0)
		die("listen", rc);
	q = req(ESOCK_TSP_GETSOCKNAME, (uint32_t)ls);
	if ((rc = tsp_host_call(h, &q, &r)) < 0)
		die("getsockname", rc);
	printf("%u\n", r.u.addr.port);
	fflush(stdout);
	return ls;
}

/* Echoes connection |cs| with blocking calls until its peer's end; returns the octets. */
static uint64_t echo_conn(struct tsp_host *h, uint32_t cs)
{
	static uint8_t buf[ESOCK_TSP_BODY_MAX];
	struct esock_tsp_msg q, r;
	uint64_t total = 0;
	int n, rc;

	for (;;) {
		q = req(ESOCK_TSP_RECV, cs);
		q.u.recv.max = sizeof(buf);
		if ((n = tsp_host_call(h, &q, &r)) < 0)
			die("recv", n);
		if (n == 0)
			return total;
		memcpy(buf, r.data, (size_t)n); /* (the response's data is the host's until the next call) */
		total += (uint64_t)n;
		q = req(ESOCK_TSP_SEND, cs);
		q.data = buf;
		q.data_len = (uint32_t)n;
		if ((rc = tsp_host_call(h, &q, &r)) != n)
			die("send", rc < 0 ? rc : EIO);
	}
}

/* GETSOCKOPT of an int option is |want| (and the call's id never says posted), else dies. */
static void int_opt_is(struct tsp_host *h, uint32_t sock, int level, int name, int want, const char *what)
{
	struct esock_tsp_msg q = req(ESOCK_TSP_GETSOCKOPT, sock), r;
	int rc;

	q.u.getopt.level = level;
	q.u.getopt.name = name;
	q.u.getopt.len = sizeof(int);
	if ((rc = tsp_host_call(h, &q, &r)) != 0 || r.data_len != sizeof(int) || memcmp(r.data, &want, sizeof(want)))
		die(what, rc ? rc : EIO);
	if (q.h.id & ESOCK_TSP_ID_POSTED)
		die("a call's id says posted", EPROTO);
}

static int echo(const char *path)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r;
	uint64_t total = 0;
	int rc, ls, cs;

	uint32_t granted = 0;

	if ((rc = tsp_host_open(path, ESOCK_TSP_F_SETUP_ACCEPT, 0, &h, &granted)) < 0)
		die("open", rc);
	if (granted != ESOCK_TSP_F_SETUP_ACCEPT) /* (only what was asked for) */
		die("HELLO's flags", EPROTO);
	ls = listen_here(h, 0);
	{
		struct linger lg = { 1, 5 };
		int one = 1;

		q = req(ESOCK_TSP_SETSOCKOPT, (uint32_t)ls); /* a lingering close would block tcpserverd */
		q.u.opt.level = SOL_SOCKET;
		q.u.opt.name = SO_LINGER;
		q.data = (const uint8_t *)&lg;
		q.data_len = sizeof(lg);
		if ((rc = tsp_host_call(h, &q, &r)) != -EOPNOTSUPP)
			die("SO_LINGER {1, 5}", rc);
		q.u.opt.name = SO_BINDTODEVICE; /* not one a host may set */
		if ((rc = tsp_host_call(h, &q, &r)) != -ENOPROTOOPT)
			die("SO_BINDTODEVICE", rc);
		q.u.opt.name = SO_KEEPALIVE;
		q.data = (const uint8_t *)&one;
		q.data_len = sizeof(one);
		if ((rc = tsp_host_call(h, &q, &r)) != 0)
			die("SO_KEEPALIVE", rc);
		int_opt_is(h, (uint32_t)ls, SOL_SOCKET, SO_KEEPALIVE, one, "SO_KEEPALIVE read back");
		/* (TCP_CORK and TCP_KEEPIDLE have the numbers of SO_TYPE and SO_ERROR, which are only read) */
		q = req(ESOCK_TSP_SETSOCKOPT, (uint32_t)ls);
		q.u.opt.level = IPPROTO_TCP;
		q.u.opt.name = TCP_CORK;
		q.data = (const uint8_t *)&one;
		q.data_len = sizeof(one);
		if ((rc = tsp_host_call(h, &q, &r)) != 0)
			die("TCP_CORK", rc);
		q.u.opt.name = TCP_KEEPIDLE;
		if ((rc = tsp_host_call(h, &q, &r)) != 0)
			die("TCP_KEEPIDLE", rc);
		q.u.opt.level = SOL_SOCKET;
		q.u.opt.name = SO_TYPE;
		if ((rc = tsp_host_call(h, &q, &r)) != -ENOPROTOOPT)
			die("SO_TYPE set", rc);
		int_opt_is(h, (uint32_t)ls, IPPROTO_TCP, TCP_CORK, one, "TCP_CORK read back");
	}
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls); /* blocking: tcpserverd parks it until a client comes */
	if ((cs = tsp_host_call(h, &q, &r)) < 0)
		die("accept", cs);
	if (r.u.accepted.peer.family != 4 || r.u.accepted.peer.addr[0] != 127)
		die("accept: the peer's address", EPROTO);
	if (r.u.accepted.local.family != 4 || r.u.accepted.local.addr[0] != 127) /* (setup with accept) */
		die("accept: the local address", EPROTO);
	total = echo_conn(h, (uint32_t)cs);
	q = req(ESOCK_TSP_CLOSE, (uint32_t)cs);
	tsp_host_call(h, &q, &r);
	q = req(ESOCK_TSP_SEND, (uint32_t)cs); /* a closed handle */
	if ((rc = tsp_host_call(h, &q, &r)) != -EBADF)
		die("send on a closed handle", rc);
	tsp_host_close(h);
	printf("echoed %llu\n", (unsigned long long)total);
	return 0;
}

static uint32_t reg_key; /* REG's key: the STag of the memory, across the network */

/* One registered-buffer request's result (REG, DEREG, SEND_REG, RECV_REG). */
static int reg_call(struct tsp_host *h, unsigned op, uint32_t sock, uint32_t region, uint64_t addr, uint64_t len,
		    uint32_t access)
{
	struct esock_tsp_msg q = req(op, sock), r;

	if (op == ESOCK_TSP_REG) {
		q.u.reg.addr = addr;
		q.u.reg.len = len;
		q.u.reg.access = access;
		q.u.reg.key = reg_key;
	} else if (op == ESOCK_TSP_DEREG) {
		q.u.dereg.region = region;
	} else {
		q.u.xfer.region = region;
		q.u.xfer.addr = addr;
		q.u.xfer.len = (uint32_t)len;
		q.u.xfer.flags = ESOCK_TSP_MSG_DONTWAIT;
	}
	return tsp_host_call(h, &q, &r);
}

static void expect(const char *what, int got, int want)
{
	if (got != want) {
		fprintf(stderr, "tsp-host: %s: %d, expected %d\n", what, got, want);
		exit(1);
	}
}

static int regecho(const char *path)
{
	static uint8_t buf[ESOCK_TSP_BODY_MAX], ro[4096];
	const uint64_t a = (uintptr_t)buf;
	struct tsp_host *h;
	struct esock_tsp_msg q, r;
	uint32_t granted = 0;
	uint64_t total = 0;
	int rc, ls, cs, rw, rd;

	/* A host that did not ask: no registration. */
	if ((rc = tsp_host_open(path, 0, 0, &h, &granted)) < 0)
		die("open", rc);
	expect("REG, not granted", reg_call(h, ESOCK_TSP_REG, 0, 0, a, sizeof(buf), ESOCK_TSP_REG_READ), -EOPNOTSUPP);
	tsp_host_close(h);
	if ((rc = tsp_host_open(path, ESOCK_TSP_F_REG_BUFFERS, 0, &h, &granted)) < 0)
		die("open", rc);
	if (granted != ESOCK_TSP_F_REG_BUFFERS)
		die("HELLO's flags: registered buffers not granted", EPROTO);
	{
		struct esock_mr *mr; /* (the process's end: never deregistered) */

		if ((rc = tsp_host_mem_reg(h, buf, sizeof(buf), &reg_key, &mr)) < 0)
			die("letting tcpserverd in", rc);
	}
	ls = listen_here(h, 0);
	/* Bad registrations. */
	expect("REG of 0 octets", reg_call(h, ESOCK_TSP_REG, 0, 0, a, 0, ESOCK_TSP_REG_READ), -EINVAL);
	expect("REG without access", reg_call(h, ESOCK_TSP_REG, 0, 0, a, 16, 0), -EINVAL);
	expect("REG that wraps", reg_call(h, ESOCK_TSP_REG, 0, 0, UINT64_MAX - 3, 16, ESOCK_TSP_REG_READ), -EINVAL);
	expect("REG of page 0", reg_call(h, ESOCK_TSP_REG, 0, 0, 0, 4096, ESOCK_TSP_REG_READ), -EFAULT);
	rw = reg_call(h, ESOCK_TSP_REG, 0, 0, a, sizeof(buf), ESOCK_TSP_REG_READ | ESOCK_TSP_REG_WRITE);
	rd = reg_call(h, ESOCK_TSP_REG, 0, 0, (uintptr_t)ro, sizeof(ro), ESOCK_TSP_REG_READ);
	if (rw < 1 || rd < 1 || rw == rd)
		die("REG", rw < 0 ? rw : rd < 0 ? rd : EPROTO);
	/* Transfers outside what was registered: refused before any socket work. */
	expect("SEND_REG, no such region", reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, 63, a, 16, 0), -ENOENT);
	expect("SEND_REG past the region", reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, (uint32_t)rw, a + 8,
						   sizeof(buf), 0), -EFAULT);
	expect("SEND_REG before it", reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, (uint32_t)rw, a - 1, 2, 0), -EFAULT);
	expect("SEND_REG larger than a message", reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, (uint32_t)rw, a,
							  (uint64_t)ESOCK_TSP_BODY_MAX + 1, 0), -EMSGSIZE);
	expect("RECV_REG into a read-only region", reg_call(h, ESOCK_TSP_RECV_REG, (uint32_t)ls, (uint32_t)rd,
							     (uintptr_t)ro, 16, 0), -EACCES);
	expect("DEREG, no such region", reg_call(h, ESOCK_TSP_DEREG, 0, 62, 0, 0, 0), -ENOENT);
	expect("DEREG", reg_call(h, ESOCK_TSP_DEREG, 0, (uint32_t)rd, 0, 0, 0), 0);
	expect("SEND_REG from a region gone", reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, (uint32_t)rd,
						       (uintptr_t)ro, 16, 0), -ENOENT);
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls);
	if ((cs = tsp_host_call(h, &q, &r)) < 0)
		die("accept", cs);
	/* The echo: octets into and out of |buf| by tcpserverd, none in a record. */
	for (;;) {
		int n = reg_call(h, ESOCK_TSP_RECV_REG, (uint32_t)cs, (uint32_t)rw, a, sizeof(buf), 0);

		if (n == -EAGAIN) { /* (DONTWAIT: waited for here) */
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (n < 0)
			die("RECV_REG", n);
		if (n == 0)
			break;
		total += (uint64_t)n;
		for (int at = 0; at < n;) {
			rc = reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)cs, (uint32_t)rw, a + (uint64_t)at,
				      (uint64_t)(n - at), 0);
			if (rc == -EAGAIN) {
				struct timespec ts = { 0, 200000 };

				nanosleep(&ts, NULL);
				continue;
			}
			if (rc <= 0)
				die("SEND_REG", rc < 0 ? rc : EIO);
			at += rc;
		}
	}
	q = req(ESOCK_TSP_CLOSE, (uint32_t)cs);
	tsp_host_call(h, &q, &r);
	tsp_host_close(h);
	printf("echoed %llu\n", (unsigned long long)total);
	return 0;
}

static int reglie(const char *where)
{
	static uint8_t mine[4096], other[4096];
	struct tsp_host *h;
	struct esock_mr *mr;
	uint32_t granted = 0;
	int rc, ls, region;

	if ((rc = tsp_host_open(where, ESOCK_TSP_F_REG_BUFFERS, 0, &h, &granted)) < 0)
		die("open", rc);
	if (granted != ESOCK_TSP_F_REG_BUFFERS)
		die("HELLO's flags: registered buffers not granted", EPROTO);
	if ((rc = tsp_host_mem_reg(h, mine, sizeof(mine), &reg_key, &mr)) < 0)
		die("registering", rc);
	if (!mr)
		die("reglie is for a channel across the network", EINVAL);
	ls = listen_here(h, 0);
	if ((region = reg_call(h, ESOCK_TSP_REG, 0, 0, (uintptr_t)other, sizeof(other), ESOCK_TSP_REG_READ)) < 1)
		die("REG (the lie)", region < 0 ? region : EPROTO);
	rc = reg_call(h, ESOCK_TSP_SEND_REG, (uint32_t)ls, (uint32_t)region, (uintptr_t)other, 16, 0);
	if (rc != -EPIPE && rc != -ECONNRESET) {
		fprintf(stderr, "tsp-host: SEND_REG from memory outside the MR: %d, expected the channel cut\n", rc);
		return 1;
	}
	printf("refused: %s\n", strerror(-rc));
	return 0;
}

static int plain(int port, long octets)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	long sent = 0, got = 0;
	static uint8_t out[65536], in[65536];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("plain connect", errno);
	while (got < octets) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < octets ? POLLOUT : 0) };

		if (poll(&p, 1, 10000) <= 0)
			die("plain: no progress for 10 s", ETIMEDOUT);
		if ((p.revents & POLLOUT) && sent < octets) {
			long k = octets - sent < (long)sizeof(out) ? octets - sent : (long)sizeof(out);
			ssize_t n;

			for (long i = 0; i < k; i++)
				out[i] = (uint8_t)((sent + i) * 7 + 3);
			if ((n = send(fd, out, (size_t)k, MSG_DONTWAIT)) > 0)
				sent += n;
			if (sent == octets)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t n = recv(fd, in, sizeof(in), MSG_DONTWAIT);

			if (n == 0)
				break;
			for (ssize_t i = 0; i < n; i++)
				if (in[i] != (uint8_t)((got + i) * 7 + 3))
					die("plain: the echo differs", EIO);
			if (n > 0)
				got += n;
		}
	}
	printf("plain: %ld octets echoed\n", got);
	return got == octets ? 0 : 1;
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", errno);
	return fd;
}

static int garbage(const char *path)
{
	struct tsp_chan ch;
	int fd = unix_connect(path), rc;
	uint8_t *rec;
	char c;

	if ((rc = tsp_chan_create(&ch, TSP_CHAN_CAP)) < 0 || (rc = tsp_chan_send(&ch, fd)) < 0)
		die("channel", rc);
	if (!(rec = esock_shmq_reserve(ch.req, 16, &rc)))
		die("reserve", rc);
	memcpy(rec, "GET / HTTP/1.0\r\n", 16); /* not TSP */
	esock_shmq_commit(ch.req, 16);
	/* tcpserverd ends this host's channel: its socket reads the end. */
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1 || recv(fd, &c, 1, 0) != 0)
		die("tcpserverd kept a host that sent garbage", EPROTO);
	tsp_chan_close(&ch);
	printf("garbage: channel ended\n");
	return 0;
}

/* A non-blocking listener and its one connection, served as READY events say. */
static int watch(const char *path)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r, ev;
	uint64_t total = 0;
	int rc, ls, cs = 0, events = 0;
	static uint8_t buf[ESOCK_TSP_BODY_MAX];

	if ((rc = tsp_host_open(path, 0, 0, &h, NULL)) < 0)
		die("open", rc);
	ls = listen_here(h, ESOCK_TSP_NONBLOCK);
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls); /* non-blocking: nobody yet */
	if ((rc = tsp_host_call(h, &q, &r)) != -EAGAIN)
		die("a non-blocking accept with nobody there", rc);
	q = req(ESOCK_TSP_WATCH, (uint32_t)ls);
	q.u.watch.events = POLLIN;
	if ((rc = tsp_host_call(h, &q, &r)) < 0)
		die("watch", rc);
	for (;;) {
		if ((rc = tsp_host_event(h, &ev, 10000)) != 1)
			die("no event in 10 s", rc ? rc : ETIMEDOUT);
		events++;
		if (ev.h.op != ESOCK_TSP_READY)
			die("an event that was not asked for", EPROTO);
		if (ev.h.sock == (uint32_t)ls && (ev.u.watch.events & POLLIN) && !cs) {
			q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls);
			q.u.accept.flags = ESOCK_TSP_NONBLOCK;
			if ((cs = tsp_host_call(h, &q, &r)) < 0)
				die("accept after READY", cs);
			q = req(ESOCK_TSP_WATCH, (uint32_t)cs);
			q.u.watch.events = POLLIN | POLLRDHUP;
			if ((rc = tsp_host_call(h, &q, &r)) < 0)
				die("watch the connection", rc);
			continue;
		}
		if (ev.h.sock != (uint32_t)cs || !cs)
			continue;
		for (;;) { /* read to EAGAIN (then the next octets are a READY again) or to the end */
			int n;

			q = req(ESOCK_TSP_RECV, (uint32_t)cs);
			q.u.recv.max = sizeof(buf);
			if ((n = tsp_host_call(h, &q, &r)) == -EAGAIN)
				break;
			if (n < 0)
				die("recv", n);
			if (n == 0) {
				q = req(ESOCK_TSP_CLOSE, (uint32_t)cs);
				tsp_host_call(h, &q, &r);
				tsp_host_close(h);
				printf("watch-echoed %llu in %d events\n", (unsigned long long)total, events);
				return 0;
			}
			memcpy(buf, r.data, (size_t)n);
			total += (uint64_t)n;
			for (int off = 0; off < n;) {
				q = req(ESOCK_TSP_SEND, (uint32_t)cs);
				q.data = buf + off;
				q.data_len = (uint32_t)(n - off);
				if ((rc = tsp_host_call(h, &q, &r)) == -EAGAIN) {
					usleep(200); /* (the client reads as it sends: room comes) */
					continue;
				}
				if (rc < 0)
					die("send", rc);
				off += rc;
			}
		}
	}
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 13 + (i >> 9));
}

static int async_send(const char *path, long octets)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r, ev;
	uint32_t granted = 0;
	uint64_t outstanding = 0, credits = 0, events = 0;
	int rc, ls, cs;
	static uint8_t buf[65536];

	if ((rc = tsp_host_open(path, ESOCK_TSP_F_ASYNC_SEND, 0, &h, &granted)) < 0)
		die("open", rc);
	if (!(granted & ESOCK_TSP_F_ASYNC_SEND))
		die("asynchronous send not granted", EPROTO);
	ls = listen_here(h, 0);
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls);
	if ((cs = tsp_host_call(h, &q, &r)) < 0)
		die("accept", cs);
	/*
	 * A posted send's success does not wake a host that sleeps (it does
	 * not wait for it): the bell stays quiet, the answer is queued all the
	 * same.  (The sends below are calls: theirs must come at once.)
	 */
	if (tsp_host_sleep_begin(h) != 0)
		die("something queued before the posted send", EPROTO);
	for (uint32_t i = 0; i < 100; i++)
		buf[i] = pattern(i);
	q = req(ESOCK_TSP_SEND, (uint32_t)cs);
	q.data = buf;
	q.data_len = 100;
	if ((rc = tsp_host_post(h, &q)) < 0)
		die("post", rc);
	if (!(q.h.id & ESOCK_TSP_ID_POSTED))
		die("a posted request's id does not say so", EPROTO);
	{
		/* Any posted request's answer, not only a send's, stays quiet (ESOCK_TSP_ID_POSTED). */
		int on = 1;
		struct esock_tsp_msg o = req(ESOCK_TSP_SETSOCKOPT, (uint32_t)cs);
		struct pollfd p = { .fd = tsp_host_bell(h), .events = POLLIN };

		o.u.opt.level = IPPROTO_TCP;
		o.u.opt.name = TCP_NODELAY;
		o.data = (const uint8_t *)&on;
		o.data_len = sizeof(on);
		if ((rc = tsp_host_post(h, &o)) < 0)
			die("post an option", rc);
		if (poll(&p, 1, 300) != 0)
			die("a posted request's answer rang the bell", EPROTO);
	}
	tsp_host_sleep_end(h);
	if ((rc = tsp_host_event(h, &ev, 1000)) != 1 || ev.h.type != ESOCK_TSP_RESP || ev.result != 100)
		die("the posted send's answer", rc < 0 ? rc : EPROTO);
	if ((rc = tsp_host_event(h, &ev, 1000)) != 1 || ev.h.type != ESOCK_TSP_RESP ||
	    ev.h.op != ESOCK_TSP_SETSOCKOPT || ev.result != 0)
		die("the posted option's answer", rc < 0 ? rc : EPROTO);
	outstanding = 100;
	for (long sent = 100; sent < octets;) {
		uint32_t n = octets - sent < (long)sizeof(buf) ? (uint32_t)(octets - sent) : (uint32_t)sizeof(buf);

		while (outstanding + n > ESOCK_TSP_CREDIT_WINDOW) { /* out of credit: wait for some */
			if ((rc = tsp_host_event(h, &ev, 10000)) != 1)
				die("no CREDIT in 10 s", rc ? rc : ETIMEDOUT);
			if (ev.h.op == ESOCK_TSP_CREDIT && ev.h.sock == (uint32_t)cs) {
				outstanding -= ev.u.credit.octets;
				credits += ev.u.credit.octets;
				events++;
			}
		}
		for (uint32_t i = 0; i < n; i++)
			buf[i] = pattern((uint64_t)sent + i);
		q = req(ESOCK_TSP_SEND, (uint32_t)cs);
		q.data = buf;
		q.data_len = n;
		if ((rc = tsp_host_call(h, &q, &r)) != (int)n) /* taken whole, at once */
			die("send", rc < 0 ? rc : EIO);
		outstanding += n;
		sent += n;
	}
	q = req(ESOCK_TSP_CLOSE, (uint32_t)cs); /* with octets still queued, maybe: they go on */
	if ((rc = tsp_host_call(h, &q, &r)) < 0)
		die("close", rc);
	tsp_host_close(h);
	printf("async-sent %ld with %llu octets of credit back in %llu events\n", octets,
	       (unsigned long long)credits, (unsigned long long)events);
	return 0;
}

static int sink(int port, long octets)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	static uint8_t in[65536];
	long got = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("sink connect", errno);
	for (;;) {
		ssize_t n = recv(fd, in, sizeof(in), 0);

		if (n < 0)
			die("sink recv", errno);
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (in[i] != pattern((uint64_t)got + (uint64_t)i))
				die("sink: the octets differ", EIO);
		got += n;
		if (got % (1 << 20) < n)
			usleep(20000); /* a slow reader now and then: the queue and the credits are used */
	}
	printf("sink: %ld octets\n", got);
	return got == octets ? 0 : 1;
}

static int eager(const char *path, int n)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r, ev;
	uint32_t granted = 0;
	int rc, ls, served = 0;

	if ((rc = tsp_host_open(path, ESOCK_TSP_F_EAGER_ACCEPT, 0, &h, &granted)) < 0)
		die("open", rc);
	if (!(granted & ESOCK_TSP_F_EAGER_ACCEPT))
		die("eager accept not granted", EPROTO);
	ls = listen_here(h, 0);
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls);
	if ((rc = tsp_host_call(h, &q, &r)) != -EINVAL) /* its connections come as events */
		die("ACCEPT on an eager listener", rc);
	while (served < n) {
		uint32_t cs;

		if ((rc = tsp_host_event(h, &ev, 10000)) != 1)
			die("no ACCEPTED in 10 s", rc ? rc : ETIMEDOUT);
		if (ev.h.op != ESOCK_TSP_ACCEPTED || ev.h.sock != (uint32_t)ls)
			continue;
		if (ev.u.accepted.peer.family != 4 || ev.u.accepted.local.family != 4)
			die("ACCEPTED's addresses", EPROTO);
		cs = ev.u.accepted.sock;
		echo_conn(h, cs);
		q = req(ESOCK_TSP_CLOSE, cs);
		tsp_host_call(h, &q, &r);
		served++;
	}
	tsp_host_close(h);
	printf("eager-served %d\n", served);
	return 0;
}

static int eager_rx(const char *path, long octets)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r, ev;
	uint32_t granted = 0, unreturned = 0;
	uint64_t got = 0, events = 0;
	int rc, ls, cs;

	if ((rc = tsp_host_open(path, ESOCK_TSP_F_EAGER_RECV, 0, &h, &granted)) < 0)
		die("open", rc);
	if (!(granted & ESOCK_TSP_F_EAGER_RECV))
		die("eager receive not granted", EPROTO);
	ls = listen_here(h, 0);
	q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls);
	if ((cs = tsp_host_call(h, &q, &r)) < 0)
		die("accept", cs);
	/* Its octets come as DATA: a plain RECV is refused (or says 0: a quick peer's end already came). */
	q = req(ESOCK_TSP_RECV, (uint32_t)cs);
	q.u.recv.max = 100;
	if ((rc = tsp_host_call(h, &q, &r)) != -EINVAL && rc != 0)
		die("RECV on an eager socket", rc);
	for (;;) {
		if ((rc = tsp_host_event(h, &ev, 10000)) != 1)
			die("no DATA in 10 s", rc ? rc : ETIMEDOUT);
		if (ev.h.op != ESOCK_TSP_DATA || ev.h.sock != (uint32_t)cs)
			continue;
		events++;
		if (!ev.data_len)
			break; /* the end */
		for (uint32_t i = 0; i < ev.data_len; i++)
			if (ev.data[i] != pattern(got + i))
				die("DATA's octets differ", EIO);
		got += ev.data_len;
		unreturned += ev.data_len;
		if (unreturned >= ESOCK_TSP_CREDIT_WINDOW / 4) { /* used: the room goes back */
			q = req(ESOCK_TSP_RECV, (uint32_t)cs);
			q.u.recv.flags = ESOCK_TSP_MSG_CREDIT;
			q.u.recv.max = unreturned;
			if ((rc = tsp_host_call(h, &q, &r)) != 0)
				die("credit", rc);
			unreturned = 0;
		}
	}
	q = req(ESOCK_TSP_CLOSE, (uint32_t)cs);
	tsp_host_call(h, &q, &r);
	tsp_host_close(h);
	printf("eagerrx-got %llu in %llu events\n", (unsigned long long)got, (unsigned long long)events);
	return got == (uint64_t)octets ? 0 : 1;
}

static int source(int port, long octets)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	static uint8_t out[65536];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("source connect", errno);
	for (long sent = 0; sent < octets;) {
		long k = octets - sent < (long)sizeof(out) ? octets - sent : (long)sizeof(out);
		ssize_t n;

		for (long i = 0; i < k; i++)
			out[i] = pattern((uint64_t)(sent + i));
		if ((n = send(fd, out, (size_t)k, 0)) <= 0)
			die("source send", errno);
		sent += n;
	}
	close(fd);
	return 0;
}

/*
 * Requests that decode but make little sense.  Blocking calls on fresh
 * sockets would park for ever, so sockets are made non-blocking (a few
 * blocking ones get only calls that cannot wait).  Returns 0 when every
 * request was answered (or the channel ended cleanly, -EPIPE).
 */
static int chaos(const char *path, int n)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r;
	unsigned seed = 12345;
	static uint8_t junk[ESOCK_TSP_BODY_MAX];
	int rc, answered = 0;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 31);
	if ((rc = tsp_host_open(path, ESOCK_TSP_F_ALL, 0, &h, NULL)) < 0)
		die("open", rc);
	for (int i = 0; i < n; i++) {
		unsigned op = ESOCK_TSP_SOCKET + (unsigned)rand_r(&seed) % (ESOCK_TSP_WATCH - ESOCK_TSP_SOCKET + 1);

		q = req(op, (uint32_t)rand_r(&seed) % 12);
		switch (op) {
		case ESOCK_TSP_SOCKET:
			q.u.socket.family = (uint32_t)rand_r(&seed) % 8;
			q.u.socket.flags = ESOCK_TSP_NONBLOCK;
			break;
		case ESOCK_TSP_BIND:
		case ESOCK_TSP_CONNECT:
			q.u.addr.family = rand_r(&seed) % 2 ? 4 : 6;
			q.u.addr.port = (uint16_t)rand_r(&seed);
			q.u.addr.addr[0] = 127;
			q.u.addr.addr[3] = 1;
			if (q.u.addr.family == 6)
				memset(q.u.addr.addr, 0, 16), q.u.addr.addr[15] = 1;
			break;
		case ESOCK_TSP_LISTEN:
			q.u.listen.backlog = rand_r(&seed) % 3 - 1;
			break;
		case ESOCK_TSP_SEND:
			q.data = junk;
			q.data_len = (uint32_t)rand_r(&seed) % sizeof(junk);
			q.u.send.flags = (uint32_t)rand_r(&seed);
			break;
		case ESOCK_TSP_RECV:
			q.u.recv.max = (uint32_t)rand_r(&seed);
			q.u.recv.flags = (uint32_t)rand_r(&seed);
			break;
		case ESOCK_TSP_SHUTDOWN:
			q.u.shutdown.how = rand_r(&seed) % 5 - 1;
			break;
		case ESOCK_TSP_SETSOCKOPT:
		case ESOCK_TSP_GETSOCKOPT:
			q.u.opt.level = rand_r(&seed) % 2 ? 1 /* SOL_SOCKET */ : 6 /* IPPROTO_TCP */;
			q.u.opt.name = rand_r(&seed) % 70;
			if (op == ESOCK_TSP_SETSOCKOPT) {
				q.data = junk;
				q.data_len = (uint32_t)rand_r(&seed) % (ESOCK_TSP_OPT_MAX + 1);
			} else {
				q.u.getopt.len = (uint32_t)rand_r(&seed) % 300;
			}
			break;
		case ESOCK_TSP_WATCH:
			q.u.watch.events = (uint32_t)rand_r(&seed);
			break;
		default:
			break;
		}
		rc = tsp_host_call(h, &q, &r);
		if (rc == -EPIPE && (r.h.type != ESOCK_TSP_RESP || r.h.op != op))
			break; /* the channel ended (tcpserverd may drop a host that makes no sense) */
		answered++;
		while (tsp_host_event(h, &r, 0) == 1) /* (events of watched sockets: taken and dropped) */
			;
	}
	tsp_host_close(h);
	printf("chaos: %d of %d answered\n", answered, n);
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int calls(const char *path, int n)
{
	struct tsp_host *h;
	struct esock_tsp_msg q, r;
	struct sockaddr_in sa;
	socklen_t sl;
	double *via = calloc((size_t)n, sizeof(double)), *direct = calloc((size_t)n, sizeof(double));
	int rc = -ENOMEM, ts, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (!via || !direct || fd < 0 || (rc = tsp_host_open(path, 0, 0, &h, NULL)) < 0)
		die("open", rc);
	q = req(ESOCK_TSP_SOCKET, 0);
	q.u.socket.family = 4;
	if ((ts = tsp_host_call(h, &q, &r)) < 0)
		die("socket", ts);
	for (int i = 0; i < n; i++) {
		double t0 = now_us();

		q = req(ESOCK_TSP_GETSOCKNAME, (uint32_t)ts);
		if ((rc = tsp_host_call(h, &q, &r)) < 0)
			die("getsockname", rc);
		via[i] = now_us() - t0;
		t0 = now_us();
		sl = sizeof(sa);
		getsockname(fd, (struct sockaddr *)&sa, &sl);
		direct[i] = now_us() - t0;
	}
	qsort(via, (size_t)n, sizeof(double), cmp);
	qsort(direct, (size_t)n, sizeof(double), cmp);
	printf("calls: %d getsockname through tcpserverd p50 %.2f us p99 %.2f us; directly p50 %.2f us\n", n,
	       via[n / 2], via[n * 99 / 100], direct[n / 2]);
	tsp_host_close(h);
	close(fd);
	free(via);
	free(direct);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && (!strcmp(argv[1], "loop") || !strcmp(argv[1], "parked"))) {
		struct tsp_host *h;
		struct esock_tsp_msg q, r;
		int rc = tsp_host_open(argv[2], 0, 0, &h, NULL), ls;

		if (rc < 0)
			die("open", rc);
		ls = listen_here(h, 0);
		if (!strcmp(argv[1], "parked")) {
			q = req(ESOCK_TSP_ACCEPT, (uint32_t)ls); /* nobody comes */
			rc = tsp_host_call(h, &q, &r);
			printf("parked: %s\n", strerror(-rc));
			return 1;
		}
		do {
			q = req(ESOCK_TSP_GETSOCKNAME, (uint32_t)ls);
			rc = tsp_host_call(h, &q, &r);
			usleep(1000);
		} while (rc >= 0);
		printf("loop: %s\n", strerror(-rc));
		fflush(stdout);
		rc = rc == -EPIPE ? 0 : 1;
		q = req(ESOCK_TSP_GETSOCKNAME, (uint32_t)ls); /* and from then on, at once */
		if (tsp_host_call(h, &q, &r) != -EPIPE)
			rc = 1;
		tsp_host_close(h);
		return rc;
	}
	if (argc == 3 && !strcmp(argv[1], "silent")) { /* connects, hands over nothing, stays a while */
		int fd = unix_connect(argv[2]);

		sleep(2);
		close(fd);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "chaos"))
		return chaos(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "eagerrx"))
		return eager_rx(argv[2], atol(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "source"))
		return source(atoi(argv[2]), atol(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "eager"))
		return eager(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "async"))
		return async_send(argv[2], atol(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "sink"))
		return sink(atoi(argv[2]), atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "watch"))
		return watch(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "calls"))
		return calls(argv[2], atoi(argv[3]) > 0 ? atoi(argv[3]) : 1);
	if (argc == 3 && !strcmp(argv[1], "reglie"))
		return reglie(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "regecho"))
		return regecho(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "echo"))
		return echo(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "plain"))
		return plain(atoi(argv[2]), atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "garbage"))
		return garbage(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "hold")) {
		struct tsp_host *h;
		int rc = tsp_host_open(argv[2], 0, 0, &h, NULL);

		if (rc < 0)
			die("open", rc);
		printf("holding\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[3]));
		tsp_host_close(h);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "refused")) {
		struct tsp_host *h;
		int rc = tsp_host_open(argv[2], 0, 0, &h, NULL);

		if (rc == 0) {
			tsp_host_close(h);
			die("admitted beyond the limit", EPROTO);
		}
		printf("refused: %s\n", strerror(-rc));
		return rc == -ECONNREFUSED ? 0 : 1;
	}
	fprintf(stderr, "usage: tsp-host echo|watch|garbage|refused|loop|parked|silent PATH | hold|calls|async|eager|eagerrx|chaos PATH N | plain|sink|source PORT OCTETS\n");
	return 2;
}
