/* SPDX-License-Identifier: MIT */
/*
 * The seam between esock/iwarp.h and its backends (iwarp/backend.h): every
 * object knows its backend, calls go to it, objects of two backends are not
 * mixed, a missing operation is -EOPNOTSUPP, NULL objects get -EINVAL (or
 * the type's "none"), and $ESOCK_BACKEND picks the backend of new objects
 * (one unknown or not built in: -ENODEV).  Each test runs in a process of
 * its own: the choice is made once per process.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include <esock/iwarp.h>

#include "iwarp/backend.h"
#include "tests/unit/testutil.h"

/* A backend of the test's own: a CQ that counts its polls, and nothing else. */
static int fake_polls;

static int fake_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc)
{
	(void)cq;
	(void)wc;
	fake_polls++;
	return n > 0 ? 0 : -EINVAL;
}

static const struct esock_backend fake = { .name = "fake", .cq_poll = fake_cq_poll };
static struct esock_obj fake_cq = { .be = &fake };

START_TEST(user_by_default)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_listener *l;

	unsetenv("ESOCK_BACKEND");
	ck_assert_int_eq(esock_pd_alloc(&pd), 0);
	ck_assert_int_eq(esock_cq_create(16, &cq), 0);
	ck_assert_int_eq(esock_qp_create(&(struct esock_qp_attr){ .pd = pd, .send_cq = cq,
								  .recv_cq = cq }, &qp), 0);
	ck_assert_str_eq(esock_qp_backend(qp), "user");
	ck_assert_int_eq(esock_listen((struct sockaddr *)&sin, sizeof(sin), 4, &l), 0);
	ck_assert_str_eq(esock_listener_backend(l), "user");
	ck_assert_int_eq(esock_listener_close(l), 0);
	ck_assert_int_eq(esock_qp_destroy(qp), 0);
	ck_assert_int_eq(esock_cq_destroy(cq), 0);
	ck_assert_int_eq(esock_pd_free(pd), 0);
}
END_TEST

START_TEST(chosen_by_name)
{
	struct esock_pd *pd;

	setenv("ESOCK_BACKEND", "user", 1);
	ck_assert_int_eq(esock_pd_alloc(&pd), 0);
	ck_assert_int_eq(esock_pd_free(pd), 0);
}
END_TEST

START_TEST(auto_is_user_here)
{
	struct esock_cq *cq;

	setenv("ESOCK_BACKEND", "auto", 1);
	ck_assert_int_eq(esock_cq_create(4, &cq), 0);
	ck_assert_int_eq(esock_cq_destroy(cq), 0);
}
END_TEST

START_TEST(unknown_or_absent)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct esock_pd *pd = NULL;
	struct esock_cq *cq = NULL;
	struct esock_listener *l = NULL;

	/*
	 * An unknown name, or verbs where it is not built in or the host has no
	 * RDMA device: what was asked for is not replaced by another backend.
	 */
	setenv("ESOCK_BACKEND", _i ? "verbs" : "rdma", 1);
	if (_i && access("/sys/class/infiniband", F_OK) == 0)
		return; /* (a device: the verbs backend works here) */
	ck_assert_int_eq(esock_pd_alloc(&pd), -ENODEV);
	ck_assert_int_eq(esock_cq_create(4, &cq), -ENODEV);
	ck_assert_int_eq(esock_listen((struct sockaddr *)&sin, sizeof(sin), 4, &l), -ENODEV);
#ifdef ESOCK_HAVE_VERBS
	/* (the verbs backend makes nothing from a TCP descriptor) */
	ck_assert_int_eq(esock_listener_from_fd(0, &l), _i ? -EOPNOTSUPP : -ENODEV);
#else
	ck_assert_int_eq(esock_listener_from_fd(0, &l), -ENODEV);
#endif
	ck_assert_ptr_null(pd);
	ck_assert_ptr_null(cq);
	ck_assert_ptr_null(l);
}
END_TEST

START_TEST(no_mixing)
{
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp = NULL;
	struct esock_wc wc;

	unsetenv("ESOCK_BACKEND");
	ck_assert_int_eq(esock_pd_alloc(&pd), 0);
	ck_assert_int_eq(esock_cq_create(16, &cq), 0);
	/* a user PD with another backend's CQ, either side */
	ck_assert_int_eq(esock_qp_create(&(struct esock_qp_attr){ .pd = pd, .send_cq = cq,
		.recv_cq = (struct esock_cq *)&fake_cq }, &qp), -EINVAL);
	ck_assert_int_eq(esock_qp_create(&(struct esock_qp_attr){ .pd = pd,
		.send_cq = (struct esock_cq *)&fake_cq, .recv_cq = cq }, &qp), -EINVAL);
	ck_assert_ptr_null(qp);
	/* the other backend's object goes to the other backend */
	ck_assert_int_eq(esock_cq_poll((struct esock_cq *)&fake_cq, 1, &wc), 0);
	ck_assert_int_eq(fake_polls, 1);
	ck_assert_int_eq(esock_cq_poll(cq, 1, &wc), 0);
	ck_assert_int_eq(fake_polls, 1);
	/* ... and what it lacks is not done by anyone else */
	ck_assert_int_eq(esock_cq_fd((struct esock_cq *)&fake_cq), -EOPNOTSUPP);
	ck_assert_int_eq(esock_cq_destroy((struct esock_cq *)&fake_cq), -EOPNOTSUPP);
	ck_assert_int_eq(esock_cq_destroy(cq), 0);
	ck_assert_int_eq(esock_pd_free(pd), 0);
}
END_TEST

START_TEST(null_objects)
{
	struct esock_wc wc;

	ck_assert_int_eq(esock_pd_free(NULL), -EINVAL);
	ck_assert_int_eq(esock_mr_reg(NULL, &wc, sizeof(wc), ESOCK_ACCESS_LOCAL_WRITE, 0,
				      &(struct esock_mr *){ NULL }), -EINVAL);
	ck_assert_uint_eq(esock_mr_stag(NULL), 0);
	ck_assert(!esock_mr_valid(NULL));
	ck_assert_int_eq(esock_cq_poll(NULL, 1, &wc), -EINVAL);
	ck_assert_int_eq(esock_cq_fd(NULL), -EINVAL);
	ck_assert_int_eq(esock_qp_create(NULL, &(struct esock_qp *){ NULL }), -EINVAL);
	ck_assert_int_eq(esock_qp_state(NULL), ESOCK_QPS_ERROR);
	ck_assert_uint_eq(esock_qp_num(NULL), 0);
	ck_assert_int_eq(esock_qp_connect_wait_ms(NULL), -1);
	ck_assert_int_eq(esock_post_send(NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(esock_listener_fd(NULL), -EINVAL);
	ck_assert_int_eq(esock_conn_req_fd(NULL), -EINVAL);
	ck_assert_int_eq(esock_accept(NULL, NULL, NULL), -EINVAL);
	ck_assert_ptr_null(esock_qp_backend(NULL));
	ck_assert_ptr_null(esock_listener_backend(NULL));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("backends");
	TCase *tc = tcase_create("seam");

	tcase_add_test(tc, user_by_default);
	tcase_add_test(tc, chosen_by_name);
	tcase_add_test(tc, auto_is_user_here);
	tcase_add_loop_test(tc, unknown_or_absent, 0, 2);
	tcase_add_test(tc, no_mixing);
	tcase_add_test(tc, null_objects);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_forked(suite());
}
