/* SPDX-License-Identifier: MIT */
/*
 * Peer profiles, seen from the wire: for each profile a raw TCP peer reads
 * the MPA Request that esock_qp_connect sends and checks what the profile
 * promises (revision, enhanced word, CRC, markers, peer-to-peer and the RTR
 * types offered), answers with a Reply, and checks the first FPDU (the RTR
 * when one was agreed: a zero-length Write with STag 1 or a zero-length
 * Read Request, as siw sends them).  Also: the private-data limits of the
 * profiles, an unknown profile name, and the ESOCK_PEER variable.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <esock/mpa.h>
#include <esock/rdmap.h>

#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

struct expect {
	const char *peer;
	uint8_t rev;
	bool crc, p2p;
	uint8_t rtr_offer;  /* offered in the Request */
	uint8_t rtr_pick;   /* what our raw responder picks */
	uint8_t first_op;   /* opcode of the first FPDU, 0xff: a Send from the test */
};

static const struct expect cases[] = {
	{ "generic", 2, true, false, 0, 0, ESOCK_RDMAP_SEND },
	{ "siw", 2, true, false, 0, 0, ESOCK_RDMAP_SEND },
	{ "cxgb4", 2, true, true, ESOCK_MPA_RTR_READ, ESOCK_MPA_RTR_READ, ESOCK_RDMAP_READ_REQ },
	{ "irdma", 2, true, true, ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, ESOCK_MPA_RTR_WRITE,
	  ESOCK_RDMAP_WRITE },
	{ "irdma", 2, true, true, ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, ESOCK_MPA_RTR_READ,
	  ESOCK_RDMAP_READ_REQ },
	{ "mpa1", 1, true, false, 0, 0, ESOCK_RDMAP_SEND },
};

static int raw_listener(int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &l), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

static size_t read_n(int fd, uint8_t *buf, size_t n)
{
	size_t have = 0;
	struct timeval tv = { 5, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (have < n) {
		ssize_t k = recv(fd, buf + have, n - have, 0);

		if (k <= 0)
			break;
		have += (size_t)k;
	}
	return have;
}

struct conn_args {
	struct ep_side *s;
	int port;
	const char *peer;
	int rc;
};

static void *do_connect(void *arg)
{
	struct conn_args *a = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)a->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct esock_conn_param cp = { .peer = a->peer, .timeout_ms = 5000 };

	a->rc = esock_qp_connect(a->s->qp, (struct sockaddr *)&sin, sizeof(sin), &cp);
	return NULL;
}

/* Reads the Request and checks it against |e|; answers with a Reply. */
static void answer(int fd, const struct expect *e, bool *crc)
{
	uint8_t in[ESOCK_MPA_FRAME_MAX], out[ESOCK_MPA_FRAME_MAX];
	struct esock_mpa_frame req, rep = { .reply = true };
	struct esock_term t = { 0 };

	ck_assert_uint_eq(read_n(fd, in, ESOCK_MPA_HDR_LEN), ESOCK_MPA_HDR_LEN);
	size_t need = esock_mpa_frame_need(in, ESOCK_MPA_HDR_LEN);

	ck_assert_uint_eq(read_n(fd, in + ESOCK_MPA_HDR_LEN, need - ESOCK_MPA_HDR_LEN),
			  need - ESOCK_MPA_HDR_LEN);
	ck_assert_int_eq(esock_mpa_frame_decode(&req, false, in, need, 0, &t), (ssize_t)need);
	ck_assert_uint_eq(req.rev, e->rev);
	ck_assert_int_eq(req.crc, e->crc);
	ck_assert(!req.markers);
	ck_assert_int_eq(req.enhanced, e->rev == 2);
	ck_assert_int_eq(req.p2p, e->p2p);
	ck_assert_uint_eq(req.rtr, e->rtr_offer);
	rep.rev = req.rev;
	rep.crc = req.crc;
	rep.enhanced = req.enhanced;
	rep.ird = rep.ord = 4;
	rep.p2p = req.p2p;
	rep.rtr = e->rtr_pick;
	ssize_t n = esock_mpa_frame_encode(&rep, out, sizeof(out));

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(send(fd, out, (size_t)n, 0), n);
	*crc = req.crc;
}

START_TEST(profile_on_wire)
{
	const struct expect *e = &cases[_i];
	struct ep_side s;
	struct conn_args a = { &s, 0, e->peer, -1 };
	int lfd = raw_listener(&a.port), fd;
	uint8_t fpdu[64], msg[4] = "ping";
	pthread_t th;
	bool crc;

	ep_side_init(&s);
	ck_assert_int_eq(pthread_create(&th, NULL, do_connect, &a), 0);
	ck_assert_int_ge(fd = accept(lfd, NULL, NULL), 0);
	answer(fd, e, &crc);
	pthread_join(th, NULL);
	ck_assert_int_eq(a.rc, 0);
	if (!e->rtr_pick) {
		struct esock_mr *m = ep_reg(&s, msg, sizeof(msg), 0);

		ck_assert_int_eq(ep_post_send1(&s, 1, ESOCK_WR_SEND, msg, 4, esock_mr_stag(m), 0, 0), 0);
		esock_mr_dereg(m);
	}
	/* The first FPDU: ULPDU_Length, then DDP/RDMAP control octets. */
	ck_assert_uint_ge(read_n(fd, fpdu, 4), 4);
	ck_assert_uint_eq(fpdu[3] & ESOCK_RDMAP_CTRL_OPCODE, e->first_op);
	if (e->first_op == ESOCK_RDMAP_WRITE) {
		ck_assert_uint_eq((unsigned)(fpdu[0] << 8 | fpdu[1]), ESOCK_DDP_TAGGED_HLEN);
		ck_assert_uint_eq(read_n(fd, fpdu + 4, 12), 12);
		ck_assert_uint_eq(fpdu[2], 0xc1); /* T, L, version 1 */
		ck_assert_uint_eq(((uint32_t)fpdu[4] << 24 | fpdu[5] << 16 | fpdu[6] << 8 | fpdu[7]), 1);
	} else if (e->first_op == ESOCK_RDMAP_READ_REQ) {
		ck_assert_uint_eq((unsigned)(fpdu[0] << 8 | fpdu[1]), ESOCK_DDP_UNTAGGED_HLEN + ESOCK_RDMAP_READ_REQ_HLEN);
	} else {
		ck_assert_uint_eq((unsigned)(fpdu[0] << 8 | fpdu[1]), ESOCK_DDP_UNTAGGED_HLEN + 4);
	}
	(void)crc;
	close(fd);
	close(lfd);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
}
END_TEST

START_TEST(private_data_limits)
{
	static const uint8_t pd[600];
	struct ep_side s;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct esock_conn_param cp = { .private_data = pd, .timeout_ms = 100 };

	ep_side_init(&s);
	/* generic: 512 octets in all, the RFC 6581 word included. */
	cp.private_data_len = 509;
	ck_assert_int_eq(esock_qp_connect(s.qp, (struct sockaddr *)&sin, sizeof(sin), &cp), -EINVAL);
	/* siw takes at most 256. */
	cp.peer = "siw";
	cp.private_data_len = 253;
	ck_assert_int_eq(esock_qp_connect(s.qp, (struct sockaddr *)&sin, sizeof(sin), &cp), -EINVAL);
	cp.peer = "no-such-peer";
	cp.private_data_len = 0;
	ck_assert_int_eq(esock_qp_connect(s.qp, (struct sockaddr *)&sin, sizeof(sin), &cp), -EINVAL);
	ck_assert_int_eq(esock_qp_state(s.qp), ESOCK_QPS_IDLE);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
}
END_TEST

/* ESOCK_PEER picks the profile when the parameters do not. */
START_TEST(peer_from_environment)
{
	struct ep_side s;
	struct conn_args a = { &s, 0, NULL, -1 };
	int lfd = raw_listener(&a.port), fd;
	pthread_t th;
	bool crc;
	struct esock_conn_info ci;

	setenv("ESOCK_PEER", "irdma", 1);
	ep_side_init(&s);
	ck_assert_int_eq(pthread_create(&th, NULL, do_connect, &a), 0);
	ck_assert_int_ge(fd = accept(lfd, NULL, NULL), 0);
	answer(fd, &cases[3], &crc);
	pthread_join(th, NULL);
	unsetenv("ESOCK_PEER");
	ck_assert_int_eq(a.rc, 0);
	ck_assert_int_eq(esock_qp_conn_info(s.qp, &ci), 0);
	ck_assert_str_eq(ci.peer, "irdma");
	close(fd);
	close(lfd);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
}
END_TEST

struct acc_args {
	struct esock_listener *l;
	struct ep_side *s;
	int rc;
};

static void *do_accept(void *arg)
{
	struct acc_args *a = arg;
	struct esock_conn_req *req;

	a->rc = esock_get_request(a->l, &req, 5000);
	if (a->rc == 0)
		a->rc = esock_accept(req, a->s->qp, NULL);
	return NULL;
}

/* Sends one FPDU carrying |ulpdu| (CRC on). */
static void send_fpdu(int fd, const uint8_t *ulpdu, size_t len)
{
	struct esock_mpa_tx tx;
	struct iovec iov = { (void *)ulpdu, len };
	uint8_t out[256];
	ssize_t n;

	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_gt(esock_mpa_tx_build(&tx, &iov, 1), 0);
	ck_assert_int_gt(n = esock_mpa_tx_flatten(&tx, out, sizeof(out)), 0);
	ck_assert_int_eq(send(fd, out, (size_t)n, 0), n);
}

/*
 * RFC 5044: the responder sends nothing before the initiator's first FPDU,
 * even when its application posts a Send at once; a zero-length Write (the
 * RTR shape) releases it.
 */
START_TEST(responder_waits_for_first_fpdu)
{
	struct ep_side s;
	struct acc_args a = { NULL, &s, -1 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct esock_mpa_policy pol = { .rev = 2, .crc = true, .ird = 1, .ord = 1 };
	struct esock_mpa_frame req, rep;
	struct esock_rdmap_msg m;
	struct esock_term t = { 0 };
	uint8_t buf[ESOCK_MPA_FRAME_MAX], msg[8] = "early", hdr[64];
	pthread_t th;
	int fd;

	ep_side_init(&s);
	sin.sin_port = htons((uint16_t)ep_listen_any(&a.l));
	ck_assert_int_eq(pthread_create(&th, NULL, do_accept, &a), 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(esock_mpa_request_build(&pol, &req), 0);
	ssize_t n = esock_mpa_frame_encode(&req, buf, sizeof(buf));

	ck_assert_int_eq(send(fd, buf, (size_t)n, 0), n);
	pthread_join(th, NULL);
	ck_assert_int_eq(a.rc, 0);
	ck_assert_uint_eq(read_n(fd, buf, ESOCK_MPA_HDR_LEN + 4), ESOCK_MPA_HDR_LEN + 4);
	ck_assert_int_gt(esock_mpa_frame_decode(&rep, true, buf, ESOCK_MPA_HDR_LEN + 4, 0, &t), 0);
	struct esock_mr *mr = ep_reg(&s, msg, sizeof(msg), 0);

	ck_assert_int_eq(ep_post_send1(&s, 1, ESOCK_WR_SEND, msg, 5, esock_mr_stag(mr), 0, 0), 0);
	struct timeval tv = { 0, 200000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_lt(recv(fd, buf, sizeof(buf), 0), 0); /* nothing yet */
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
	m.ddp.stag = 1;
	n = esock_rdmap_hdr_encode(&m, hdr, sizeof(hdr));
	send_fpdu(fd, hdr, (size_t)n);
	/* Now the Send: 2 + 18 + 5 octets, PAD, CRC. */
	ck_assert_uint_eq(read_n(fd, buf, 32), 32);
	ck_assert_uint_eq((unsigned)(buf[0] << 8 | buf[1]), ESOCK_DDP_UNTAGGED_HLEN + 5);
	ck_assert_int_eq(memcmp(buf + 2 + ESOCK_DDP_UNTAGGED_HLEN, "early", 5), 0);
	esock_mr_dereg(mr);
	close(fd);
	esock_listener_close(a.l);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("peer profiles");
	TCase *tc = tcase_create("profiles");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, profile_on_wire, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, private_data_limits);
	tcase_add_test(tc, peer_from_environment);
	tcase_add_test(tc, responder_waits_for_first_fpdu);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
