/* SPDX-License-Identifier: MIT */
/*
 * Many QPs through the endpoint API (issue 12): $ESOCK_TEST_QP_PAIRS pairs
 * (default 500: 1000 QPs; 5000 pairs are the 10 000 QPs of the issue, run by
 * hand), both ends in this process, one listener, one PD and one CQ per
 * side.  Every pair moves one Send, checked octet by octet, and a QP costs
 * one descriptor, its socket: no eventfd per CQ, no private copy.  And the
 * descriptor table is grown before the engine's thread exists (growing a
 * table shared by threads waits for an RCU grace period in the kernel).
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

struct side {
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp **qp;
};

struct acceptor {
	struct esock_listener *l;
	struct side *s;
	int n, rc;
};

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void side_init(struct side *s, int n)
{
	struct esock_qp_attr a = { .sq_depth = 4, .rq_depth = 4, .max_sge = 1 };

	ck_assert_int_eq(esock_pd_alloc(&s->pd), 0);
	ck_assert_int_eq(esock_cq_create(2 * n + 16, &s->cq), 0);
	ck_assert_ptr_nonnull(s->qp = calloc((size_t)n, sizeof(*s->qp)));
	a.pd = s->pd;
	a.send_cq = a.recv_cq = s->cq;
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(esock_qp_create(&a, &s->qp[i]), 0);
}

static void side_fini(struct side *s, int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(esock_qp_destroy(s->qp[i]), 0);
	ck_assert_int_eq(esock_cq_destroy(s->cq), 0);
	ck_assert_int_eq(esock_pd_free(s->pd), 0);
	free(s->qp);
}

static void *accept_all(void *arg)
{
	struct acceptor *a = arg;

	for (int i = 0; i < a->n && a->rc == 0; i++) {
		struct esock_conn_req *req;

		if ((a->rc = esock_get_request(a->l, &req, 10000)) == 0)
			a->rc = esock_accept(req, a->s->qp[i], NULL);
	}
	return NULL;
}

/* The kernel's descriptor table size for this process (FDSize in its status). */
static long fd_table_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long n = -1;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * In a child (the first engine of its process): soft limit 5000, one pair of
 * QPs connected with ESOCK_FD_RESERVE set to |reserve| (NULL: unset), then
 * the table's size must be within [lo, hi).  Exit status 0: as expected;
 * 2: the table is not; 3: a descriptor was left at the top; 4: setup failed;
 * 5: nothing to show here.
 */
static int table_after_engine(const char *reserve, long lo, long hi)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl;
		struct ep_pair p;
		long before, after;

		if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(4);
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 5000 ? 5000 : rl.rlim_max;
		if (rl.rlim_cur < 5000 || setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(5); /* (a hard limit below 5000: nothing to show either) */
		if (reserve)
			setenv("ESOCK_FD_RESERVE", reserve, 1);
		else
			unsetenv("ESOCK_FD_RESERVE");
		if ((before = fd_table_size()) >= 4096)
			_exit(5); /* (grown already: valgrind keeps its descriptors near the limit) */
		if (before < 0 || ep_pair_open(&p, NULL, NULL) != 0 || p.accept_rc != 0)
			_exit(4);
		after = fd_table_size();
		ep_pair_close(&p);
		if (after < lo || after >= hi)
			_exit(2);
		if (fcntl(4999, F_GETFD) >= 0)
			_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(fd_table_grown_before_engine)
{
	int rc = table_after_engine(NULL, 5000, 1 << 20);

	if (rc == 5) {
		fprintf(stderr, "fd_table_grown_before_engine: hard descriptor limit below 5000 or the "
			"table grown before the test: skipped\n");
		return;
	}
	ck_assert_msg(rc == 0, "descriptor table after the engine started: status %d", rc);
	ck_assert_int_eq(table_after_engine("0", 0, 2000), 0); /* off: as the kernel grows it */
	ck_assert_int_eq(table_after_engine("3000", 3000, 4097), 0); /* that many, not the limit */
}
END_TEST

START_TEST(many_qps)
{
	const char *e = getenv("ESOCK_TEST_QP_PAIRS");
	int n = e ? atoi(e) : 500, before, after, got = 0;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct side a, b;
	struct acceptor acc;
	struct rlimit rl;
	pthread_t th;
	uint64_t *out, *in;
	struct esock_mr *mo, *mi;
	uint8_t *seen;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (n < 1 || rl.rlim_cur < (rlim_t)(2 * n + 256)) {
		fprintf(stderr, "many_qps: %d pairs need %d descriptors (limit %lu): fewer\n", n,
			2 * n + 256, (unsigned long)rl.rlim_cur);
		n = ((int)rl.rlim_cur - 256) / 2;
	}
	side_init(&a, n);
	side_init(&b, n);
	out = calloc((size_t)n, sizeof(*out));
	in = calloc((size_t)n, sizeof(*in));
	seen = calloc((size_t)n, 1);
	ck_assert(out && in && seen);
	for (int i = 0; i < n; i++)
		out[i] = 0x5eed000000000000ull | (uint64_t)i;
	ck_assert_int_eq(esock_mr_reg(a.pd, out, (size_t)n * 8, 0, 0, &mo), 0);
	ck_assert_int_eq(esock_mr_reg(b.pd, in, (size_t)n * 8, ESOCK_ACCESS_LOCAL_WRITE, 0, &mi), 0);
	sin.sin_port = htons((uint16_t)ep_listen_any(&acc.l));
	acc.s = &b;
	acc.n = n;
	acc.rc = 0;
	before = open_fds();
	ck_assert_int_eq(pthread_create(&th, NULL, accept_all, &acc), 0);
	for (int i = 0; i < n; i++)
		ck_assert_msg(esock_qp_connect(a.qp[i], (struct sockaddr *)&sin, sizeof(sin), NULL) == 0,
			      "connect %d of %d", i, n);
	pthread_join(th, NULL);
	ck_assert_int_eq(acc.rc, 0);
	after = open_fds();
	/* One socket per QP; the engine's own few come with the first connection. */
	ck_assert_msg(after - before <= 2 * n + 8, "%d QPs took %d descriptors", 2 * n, after - before);
	for (int i = 0; i < n; i++) {
		struct esock_sge rs = { (uintptr_t)&in[i], 8, esock_mr_stag(mi) };
		struct esock_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1 };
		struct esock_sge ss = { (uintptr_t)&out[i], 8, esock_mr_stag(mo) };
		struct esock_send_wr sw = { .wr_id = (uint64_t)i, .sg_list = &ss, .num_sge = 1,
					    .opcode = ESOCK_WR_SEND, .send_flags = ESOCK_SEND_SIGNALED };

		ck_assert_int_eq(esock_post_recv(b.qp[i], &rw, NULL), 0);
		ck_assert_int_eq(esock_post_send(a.qp[i], &sw, NULL), 0);
	}
	while (got < n) {
		struct esock_wc wc[64];
		int k = esock_cq_wait(b.cq, 64, wc, 10000);

		ck_assert_msg(k > 0, "%d of %d Sends arrived (%d)", got, n, k);
		for (int j = 0; j < k; j++) {
			int i = (int)wc[j].wr_id;

			ck_assert_int_eq(wc[j].status, ESOCK_WC_SUCCESS);
			ck_assert_int_eq(wc[j].byte_len, 8);
			ck_assert(i >= 0 && i < n && !seen[i]);
			ck_assert_uint_eq(in[i], out[i]);
			seen[i] = 1;
		}
		got += k;
	}
	ck_assert_int_eq(esock_mr_dereg(mo), 0);
	ck_assert_int_eq(esock_mr_dereg(mi), 0);
	side_fini(&a, n);
	side_fini(&b, n);
	esock_listener_close(acc.l);
	free(out);
	free(in);
	free(seen);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("many QPs through the endpoint API");
	TCase *tc = tcase_create("scale");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, fd_table_grown_before_engine); /* (first: its engine is the process's first) */
	tcase_add_test(tc, many_qps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
