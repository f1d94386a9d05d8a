/* SPDX-License-Identifier: MIT */
/*
 * util/atfork: the library's fork handlers run by phase, whatever the order
 * in which the modules registered them (they register lazily): before the
 * fork in phase order, after it in the exact reverse, in the parent and in
 * the child.  A registry that is full says so.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "util/atfork.h"

static char seq[64];
static int nseq;

static void mark(char c)
{
	if (nseq < (int)sizeof(seq) - 1)
		seq[nseq++] = c;
}

/* Prepare marks an upper-case letter, the parent's handler the lower case, the child's a digit. */
#define HOOKS(tag, up, low, digit)                      \
	static void tag##_prepare(void) { mark(up); }   \
	static void tag##_parent(void) { mark(low); }   \
	static void tag##_child(void) { mark(digit); }

HOOKS(quiesce, 'Q', 'q', '1')
HOOKS(table_a, 'T', 't', '2')
HOOKS(table_b, 'U', 'u', '3')
HOOKS(leaf, 'L', 'l', '4')

START_TEST(phases_in_order_whatever_the_registration)
{
	char child_seq[sizeof(seq)] = { 0 };
	int fds[2], status = -1;
	ssize_t n;
	pid_t pid;

	/* Registered as lazy modules might: a leaf first, the quiesce third. */
	ck_assert_int_eq(esock_atfork(ESOCK_FORK_LEAVES, leaf_prepare, leaf_parent, leaf_child), 0);
	ck_assert_int_eq(esock_atfork(ESOCK_FORK_TABLES, table_a_prepare, table_a_parent, table_a_child), 0);
	ck_assert_int_eq(esock_atfork(ESOCK_FORK_QUIESCE, quiesce_prepare, quiesce_parent, quiesce_child), 0);
	ck_assert_int_eq(esock_atfork(ESOCK_FORK_TABLES, table_b_prepare, table_b_parent, table_b_child), 0);
	ck_assert_int_eq(esock_atfork(ESOCK_FORK_TABLES, NULL, NULL, NULL), 0); /* (none of the three) */
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		_exit(write(fds[1], seq, (size_t)nseq) == nseq ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], child_seq, sizeof(child_seq) - 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_gt(n, 0);
	/* Quiesce, then the tables in the order registered, then the leaf; after: the reverse. */
	ck_assert_str_eq(seq, "QTULlutq");
	ck_assert_str_eq(child_seq, "QTUL4321");
}
END_TEST

static void nothing(void)
{
}

START_TEST(a_full_registry_says_so)
{
	int i, rc = 0;

	for (i = 0; i < 100 && rc == 0; i++)
		rc = esock_atfork(ESOCK_FORK_LEAVES, nothing, NULL, NULL);
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_ge(i, 2);  /* (32 in all: this process registered none before) */
	ck_assert_int_le(i, 33);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("atfork");
	TCase *tc = tcase_create("order");

	/* Each test in a process of its own: the registry is the process's. */
	tcase_add_test(tc, phases_in_order_whatever_the_registration);
	tcase_add_test(tc, a_full_registry_says_so);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_forked(suite());
}
