/* SPDX-License-Identifier: MIT */
/*
 * Two processes on loopback.  The child is a passive target: it accepts,
 * registers a region for remote read and write, tells the parent where it
 * is, and then sleeps, so every RDMA Write and Read the parent makes is
 * served by the child's progress engine alone.  Then the child is killed
 * with SIGKILL in the middle of transfers: every outstanding work request
 * of the parent must complete (an error status for what was cut off), the
 * QP must be in error, and nothing may hang.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

#define REGION (16u << 20)

struct target_info {
	int port;
	uint64_t addr;
	uint32_t stag;
};

/*
 * Echo mode: every Send received goes back as a Send of the same octets.  Two
 * receive buffers take turns, so one is always posted when the parent's next
 * Send arrives (RDMA rule: a Send without a posted receive is an error).
 */
static struct esock_mr *echo_prepare(struct ep_side *s, uint8_t *mem)
{
	struct esock_mr *mr = ep_reg(s, mem, 2 * (size_t)REGION, ESOCK_ACCESS_LOCAL_WRITE);

	/* Posted before accept: the parent's first Send may follow the Reply at once. */
	ep_post_recv1(s, 0, mem, REGION, esock_mr_stag(mr));
	ep_post_recv1(s, 1, mem + REGION, REGION, esock_mr_stag(mr));
	return mr;
}

static void child_echo(struct ep_side *s, uint8_t *mem, struct esock_mr *mr)
{
	struct esock_wc wc;

	for (;;) {
		uint8_t *buf;

		if (esock_cq_wait(s->rcq, 1, &wc, 30000) != 1 || wc.status != ESOCK_WC_SUCCESS)
			_exit(0);
		buf = mem + wc.wr_id * REGION;
		if (ep_post_send1(s, 2, ESOCK_WR_SEND, buf, wc.byte_len, esock_mr_stag(mr), 0, 0) < 0 ||
		    esock_cq_wait(s->scq, 1, &wc, 30000) != 1)
			_exit(4);
		ep_post_recv1(s, (uint64_t)(buf - mem) / REGION, buf, REGION, esock_mr_stag(mr));
	}
}

static bool echo_mode;

static void child_target(int wfd)
{
	struct esock_listener *l;
	struct esock_conn_req *req;
	struct target_info ti;
	struct ep_side s;
	struct esock_mr *mr;
	uint8_t *mem = malloc(REGION * (echo_mode ? 3 : 1));

	memset(&ti, 0, sizeof(ti));
	for (size_t i = 0; i < REGION; i++)
		mem[i] = (uint8_t)(i * 31 + 7);
	ep_side_init(&s);
	ti.port = ep_listen_any(&l);
	mr = ep_reg(&s, mem, REGION, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE |
					    ESOCK_ACCESS_REMOTE_READ);
	ti.addr = (uint64_t)(uintptr_t)mem;
	ti.stag = esock_mr_stag(mr);
	if (write(wfd, &ti, sizeof(ti)) != sizeof(ti))
		_exit(2);
	struct esock_mr *emr = echo_mode ? echo_prepare(&s, mem + REGION) : NULL;

	if (esock_get_request(l, &req, 10000) < 0 || esock_accept(req, s.qp, NULL) < 0)
		_exit(3);
	if (echo_mode)
		child_echo(&s, mem + REGION, emr); /* never returns */
	/* The application does nothing from now on. */
	for (int i = 0; i < 60; i++)
		sleep(1);
	_exit(0);
}

static pid_t start_target(struct target_info *ti)
{
	int pfd[2];
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		child_target(pfd[1]);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], ti, sizeof(*ti)), sizeof(*ti));
	close(pfd[0]);
	return pid;
}

static void connect_to(struct ep_side *s, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	ep_side_init(s);
	ck_assert_int_eq(esock_qp_connect(s->qp, (struct sockaddr *)&sin, sizeof(sin), NULL), 0);
}

static void stop(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
}

START_TEST(target_sleeps)
{
	struct target_info ti;
	pid_t pid = start_target(&ti);
	struct ep_side s;
	uint8_t *src = malloc(REGION), *back = calloc(1, REGION);
	struct esock_mr *ms, *mb;
	struct esock_wc wc;

	connect_to(&s, ti.port);
	ms = ep_reg(&s, src, REGION, 0);
	mb = ep_reg(&s, back, REGION, ESOCK_ACCESS_LOCAL_WRITE);
	/* First read the child's pattern, then overwrite half and read it all back. */
	ck_assert_int_eq(ep_post_send1(&s, 1, ESOCK_WR_RDMA_READ, back, REGION, esock_mr_stag(mb),
				       ti.addr, ti.stag), 0);
	ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	for (size_t i = 0; i < REGION; i += 4093)
		ck_assert_uint_eq(back[i], (uint8_t)(i * 31 + 7));
	for (size_t i = 0; i < REGION; i++)
		src[i] = (uint8_t)(i ^ (i >> 9));
	ck_assert_int_eq(ep_post_send1(&s, 2, ESOCK_WR_RDMA_WRITE, src, REGION / 2, esock_mr_stag(ms),
				       ti.addr + REGION / 4, ti.stag), 0);
	ck_assert_int_eq(ep_post_send1(&s, 3, ESOCK_WR_RDMA_READ, back, REGION, esock_mr_stag(mb),
				       ti.addr, ti.stag), 0);
	ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(memcmp(back + REGION / 4, src, REGION / 2), 0);
	ck_assert_uint_eq(back[0], 7);
	ck_assert_uint_eq(back[REGION - 1], (uint8_t)((REGION - 1) * 31 + 7));
	stop(pid);
	esock_mr_dereg(ms);
	esock_mr_dereg(mb);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
	free(src);
	free(back);
}
END_TEST

static const size_t sizes[] = { 0, 1, 17, 64, 1448, 4096, 65536, 1 << 20, REGION };

/* Every operation and size between two processes, each result verified. */
START_TEST(every_size)
{
	struct target_info ti;
	pid_t pid;
	struct ep_side s;
	uint8_t *src = malloc(REGION), *dst = malloc(REGION);
	struct esock_mr *ms, *md;
	struct esock_wc wc;

	echo_mode = true;
	pid = start_target(&ti);
	echo_mode = false;
	connect_to(&s, ti.port);
	ms = ep_reg(&s, src, REGION, 0);
	md = ep_reg(&s, dst, REGION, ESOCK_ACCESS_LOCAL_WRITE);
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = (uint32_t)sizes[k];

		for (uint32_t i = 0; i < n; i++)
			src[i] = (uint8_t)(i * 3 + k);
		memset(dst, 0xee, REGION);
		/* Send, echoed back by the child's application. */
		ep_post_recv1(&s, 50, dst, REGION, esock_mr_stag(md));
		ck_assert_int_eq(ep_post_send1(&s, 51, ESOCK_WR_SEND, src, n, esock_mr_stag(ms), 0, 0), 0);
		ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_int_eq(ep_wait1(s.rcq, &wc), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_uint_eq(wc.byte_len, n);
		ck_assert_int_eq(memcmp(src, dst, n), 0);
		/* RDMA Write into the child's region, RDMA Read back. */
		memset(dst, 0xee, REGION);
		ck_assert_int_eq(ep_post_send1(&s, 52, ESOCK_WR_RDMA_WRITE, src, n, esock_mr_stag(ms),
					       ti.addr, ti.stag), 0);
		ck_assert_int_eq(ep_post_send1(&s, 53, ESOCK_WR_RDMA_READ, dst, n, esock_mr_stag(md),
					       ti.addr, ti.stag), 0);
		ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
		ck_assert_uint_eq(wc.wr_id, 52);
		ck_assert_int_eq(ep_wait1(s.scq, &wc), 1);
		ck_assert_uint_eq(wc.wr_id, 53);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_int_eq(memcmp(src, dst, n), 0);
		if (n < REGION)
			ck_assert_uint_eq(dst[n], 0xee);
	}
	stop(pid);
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
	free(src);
	free(dst);
}
END_TEST

/* _i = 0: the peer dies during Writes; 1: during Reads. */
START_TEST(peer_killed)
{
	struct target_info ti;
	pid_t pid = start_target(&ti);
	struct ep_side s;
	uint8_t *buf = calloc(1, REGION), rb[16];
	struct esock_mr *mb, *mr;
	struct esock_wc wc;
	int n = 32, ok = 0, bad = 0;

	connect_to(&s, ti.port);
	mb = ep_reg(&s, buf, REGION, ESOCK_ACCESS_LOCAL_WRITE);
	mr = ep_reg(&s, rb, sizeof(rb), ESOCK_ACCESS_LOCAL_WRITE);
	ep_post_recv1(&s, 100, rb, sizeof(rb), esock_mr_stag(mr));
	/* Stopped, the peer reads nothing: the transfers stall part way. */
	kill(pid, SIGSTOP);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(ep_post_send1(&s, (uint64_t)i, _i ? ESOCK_WR_RDMA_READ : ESOCK_WR_RDMA_WRITE,
					       buf, REGION, esock_mr_stag(mb), ti.addr, ti.stag), 0);
	/* At most a Write or two fit in the socket buffers; check what came. */
	while (esock_cq_wait(s.scq, 1, &wc, 200) == 1) {
		ck_assert_uint_eq(wc.wr_id, (uint64_t)ok);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_int_lt(++ok, 4);
	}
	stop(pid);
	while (ok + bad < n) {
		ck_assert_int_eq(esock_cq_wait(s.scq, 1, &wc, 10000), 1);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)(ok + bad));
		if (wc.status == ESOCK_WC_SUCCESS)
			ok++;
		else
			bad++;
	}
	ck_assert_int_gt(bad, 0);
	ck_assert_int_eq(esock_cq_wait(s.rcq, 1, &wc, 10000), 1);
	ck_assert_uint_eq(wc.wr_id, 100);
	ck_assert_int_eq(wc.status, ESOCK_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(esock_qp_state(s.qp), ESOCK_QPS_ERROR);
	esock_mr_dereg(mb);
	esock_mr_dereg(mr);
	ep_side_fini(&s);
	esock_pd_free(s.pd);
	free(buf);
}
END_TEST

/*
 * fork() while another thread of the parent (its engine, a waiter) holds a
 * QP's eng_lock and a CQ's lock: the child inherits them locked, with no
 * thread left to release them.  The endpoint's fork handler must reset them,
 * so that the child can drive the copied QPs itself (as a pre-fork server's
 * child does); it hung in the first epoll registration before.
 */
struct holder {
	struct ep_pair *p;
	sem_t held;
};

static void *hold_locks(void *arg)
{
	struct holder *h = arg;

	pthread_mutex_lock(&h->p->a.qp->eng_lock);
	pthread_mutex_lock(&h->p->b.rcq->lock);
	sem_post(&h->held);
	usleep(300 * 1000); /* the parent forks meanwhile */
	pthread_mutex_unlock(&h->p->b.rcq->lock);
	pthread_mutex_unlock(&h->p->a.qp->eng_lock);
	return NULL;
}

static void child_uses_copies(struct ep_pair *p)
{
	static char out[] = "made in the child", in[sizeof(out)];
	struct esock_mr *mo, *mi;
	struct esock_wc wc;

	/* A hang ends the child (not Check's own SIGALRM handler, inherited); the parent reports it. */
	signal(SIGALRM, SIG_DFL);
	alarm(20);
	if (ep_engine_add(p->a.qp) < 0 || ep_engine_add(p->b.qp) < 0)
		_exit(2);
	if (esock_mr_reg(p->a.pd, out, sizeof(out), ESOCK_ACCESS_LOCAL_WRITE, 0, &mo) < 0 ||
	    esock_mr_reg(p->b.pd, in, sizeof(in), ESOCK_ACCESS_LOCAL_WRITE, 0, &mi) < 0)
		_exit(3);
	ep_post_recv1(&p->b, 7, in, sizeof(in), esock_mr_stag(mi));
	if (ep_post_send1(&p->a, 8, ESOCK_WR_SEND, out, sizeof(out), esock_mr_stag(mo), 0, 0) < 0)
		_exit(4);
	if (esock_cq_wait(p->b.rcq, 1, &wc, 10000) != 1 || wc.status != ESOCK_WC_SUCCESS ||
	    wc.wr_id != 7 || memcmp(in, out, sizeof(out)) != 0)
		_exit(5);
	_exit(0);
}

START_TEST(fork_with_locks_held)
{
	struct ep_pair p;
	struct holder h = { .p = &p };
	pthread_t th;
	pid_t pid;
	int st;

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	ck_assert_int_eq(p.accept_rc, 0);
	/* The parent's engine lets go of both sockets: the child alone reads them. */
	ep_engine_del(p.a.qp);
	ep_engine_del(p.b.qp);
	ck_assert_int_eq(sem_init(&h.held, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, hold_locks, &h), 0);
	ck_assert_int_eq(sem_wait(&h.held), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_uses_copies(&p);
	pthread_join(th, NULL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child: %s %d (SIGALRM: it hung on a lock copied from the parent)",
		      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	ep_pair_close(&p);
	sem_destroy(&h.held);
}
END_TEST

/*
 * The rules fork relies on, on one QP whose socket has a Send waiting: an
 * event the engine took before it let go of the QP is not served (in a
 * pre-fork server those octets are the child's), and while the progress
 * token is held across a fork nobody else reads; the owner's own wish is
 * served afterwards.
 */
START_TEST(engine_let_go_not_served)
{
	static char out[] = "for whoever owns the socket", in[sizeof(out)];
	struct ep_pair p;
	struct esock_mr *mo, *mi;
	struct esock_wc wc;
	struct pollfd pf;

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	ck_assert_int_eq(p.accept_rc, 0);
	mo = ep_reg(&p.a, out, sizeof(out), ESOCK_ACCESS_LOCAL_WRITE);
	mi = ep_reg(&p.b, in, sizeof(in), ESOCK_ACCESS_LOCAL_WRITE);
	ep_engine_del(p.b.qp);
	ep_post_recv1(&p.b, 1, in, sizeof(in), esock_mr_stag(mi));
	ck_assert_int_eq(ep_post_send1(&p.a, 2, ESOCK_WR_SEND, out, sizeof(out), esock_mr_stag(mo), 0, 0), 0);
	pf = (struct pollfd){ .fd = p.b.qp->fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 5000), 1);

	ep_qp_progress(p.b.qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_ENGINE);
	ck_assert_int_eq(esock_cq_poll(p.b.rcq, 1, &wc), 0);
	ep_qp_quiesce(p.b.qp);
	ep_qp_progress(p.b.qp, EP_WANT_RX | EP_WANT_DRAIN); /* token held: the wish waits */
	ck_assert_int_eq(esock_cq_poll(p.b.rcq, 1, &wc), 0);
	ck_assert_int_eq(poll(&pf, 1, 0), 1); /* the octets are still in the socket */
	ep_qp_unquiesce(p.b.qp);

	ep_qp_progress(p.b.qp, EP_WANT_RX | EP_WANT_DRAIN);
	ck_assert_int_eq(esock_cq_poll(p.b.rcq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.wr_id, 1);
	ck_assert_mem_eq(in, out, sizeof(out));
	esock_mr_dereg(mo);
	esock_mr_dereg(mi);
	ep_pair_close(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("endpoint, two processes");
	TCase *tc = tcase_create("processes");

	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, target_sleeps);
	tcase_add_test(tc, every_size);
	tcase_add_loop_test(tc, peer_killed, 0, 2);
	tcase_add_test(tc, fork_with_locks_held);
	tcase_add_test(tc, engine_let_go_not_served);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
