/* SPDX-License-Identifier: MIT */
/*
 * Test helpers for the endpoint: a connected pair of QPs on loopback (client
 * "a" connects, server "b" accepts in a helper thread), each side with its
 * own PD and send/receive CQs, and small wrappers that register, post and
 * wait with a deadline so that a broken endpoint fails a test instead of
 * hanging it.
 */
#ifndef ESOCK_TESTS_EP_PAIR_H
#define ESOCK_TESTS_EP_PAIR_H

#include <esock/iwarp.h>

struct ep_side {
	struct esock_pd *pd;
	struct esock_cq *scq, *rcq;
	struct esock_qp *qp;
};

struct ep_pair {
	struct ep_side a, b;
	struct esock_listener *l;
	int accept_rc;
};

/* Creates PD, CQs and an idle QP. */
void ep_side_init(struct ep_side *s);
void ep_side_fini(struct ep_side *s);

/* A listener on 127.0.0.1, any port; returns the port. */
int ep_listen_any(struct esock_listener **l);

/* Connects a to b; |ca| / |cb| may be NULL.  Returns the client's code
 * (the server's is in accept_rc). */
int ep_pair_open(struct ep_pair *p, const struct esock_conn_param *ca,
		 const struct esock_conn_param *cb);
/* The same with sides the caller made with ep_side_init (to register memory first). */
int ep_pair_open_sides(struct ep_pair *p, const struct esock_conn_param *ca,
		       const struct esock_conn_param *cb);
void ep_pair_close(struct ep_pair *p);

/* Registers |len| octets at |buf| with |access| (ck_assert on failure). */
struct esock_mr *ep_reg(struct ep_side *s, void *buf, size_t len, unsigned access);

/* Waits up to 5 s for one completion on |cq|; returns 1, or 0 on timeout. */
int ep_wait1(struct esock_cq *cq, struct esock_wc *wc);

/* Posts one receive / send of a single SGE (ck_assert on failure). */
void ep_post_recv1(struct ep_side *s, uint64_t id, void *buf, uint32_t len, uint32_t lkey);
int ep_post_send1(struct ep_side *s, uint64_t id, enum esock_wr_opcode op, void *buf,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey);

/* Segments the TCP socket |fd| has sent so far (TCP_INFO), -1 if the kernel does not say. */
long tcp_segs_out(int fd);
/* The MSS TCP sends with on |fd| now (TCP_INFO), -1 on error. */
long tcp_snd_mss(int fd);
/* Octets queued on |fd| that TCP has not sent yet (SIOCOUTQNSD), -1 on error. */
long tcp_unsent(int fd);

#endif
