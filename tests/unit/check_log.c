/* SPDX-License-Identifier: MIT */
/*
 * util/: the logging module (level parsing, silence by default, file sink) and
 * integer settings from the environment (default, range, number forms, typos).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "util/env.h"
#include "util/log.h"

START_TEST(test_parse)
{
	ck_assert_int_eq(esock_log_parse_level("error"), ESOCK_LOG_ERROR);
	ck_assert_int_eq(esock_log_parse_level("WARN"), ESOCK_LOG_WARN);
	ck_assert_int_eq(esock_log_parse_level("debug,/tmp/x"), ESOCK_LOG_DEBUG);
	ck_assert_int_eq(esock_log_parse_level("5"), ESOCK_LOG_TRACE);
	ck_assert_int_eq(esock_log_parse_level("loud"), -EINVAL);
	ck_assert_int_eq(esock_log_set(99, NULL), -EINVAL);
}
END_TEST

START_TEST(test_levels_and_sink)
{
	char path[] = "/tmp/esock-log-XXXXXX";
	int fd = mkstemp(path);
	char text[256] = { 0 }, want[2][64];
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(esock_log_set(ESOCK_LOG_WARN, path), 0);
	log_info("hidden %d", 1);
	log_warn("shown %d", 2);
	log_error("also %s", "shown");
	ck_assert_int_eq(esock_log_set(ESOCK_LOG_NONE, NULL), 0);
	log_error("silent again");
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_gt(fread(text, 1, sizeof(text) - 1, f), 0);
	fclose(f);
	unlink(path);
	ck_assert_ptr_null(strstr(text, "hidden"));
	/* Each line names the process (a pre-fork server's children share the sink). */
	snprintf(want[0], sizeof(want[0]), "esock[%d] warn: shown 2\n", (int)getpid());
	snprintf(want[1], sizeof(want[1]), "esock[%d] error: also shown\n", (int)getpid());
	ck_assert_ptr_nonnull(strstr(text, want[0]));
	ck_assert_ptr_nonnull(strstr(text, want[1]));
	ck_assert_ptr_null(strstr(text, "silent"));
}
END_TEST

START_TEST(test_env_int)
{
	unsetenv("ESOCK_TEST_INT");
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7);
	setenv("ESOCK_TEST_INT", "", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7);
	setenv("ESOCK_TEST_INT", "42", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 42);
	setenv("ESOCK_TEST_INT", "0x30", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 48);
	setenv("ESOCK_TEST_INT", "-1", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, -1, 100), -1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7); /* below the range */
	setenv("ESOCK_TEST_INT", "101", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7); /* above */
	setenv("ESOCK_TEST_INT", "12ms", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7); /* trailing junk */
	setenv("ESOCK_TEST_INT", "99999999999999999999", 1);
	ck_assert_int_eq(esock_env_int("ESOCK_TEST_INT", 7, 0, 100), 7); /* overflow */
	unsetenv("ESOCK_TEST_INT");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_levels_and_sink);
	tcase_add_test(tc, test_env_int);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
