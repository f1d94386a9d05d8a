# Check unit tests: one program per module (tests/unit/check_<module>.c),
# each linked with the codec core and the shared helpers.
noinst_LTLIBRARIES += tests/unit/libtestutil.la
tests_unit_libtestutil_la_SOURCES = tests/unit/testutil.c tests/unit/testutil.h
tests_unit_libtestutil_la_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

UNIT_LDADD = libesock_core.la tests/unit/libtestutil.la $(CHECK_LIBS)
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

check_PROGRAMS += tests/unit/check_crc32c tests/unit/check_log
TESTS += tests/unit/check_crc32c tests/unit/check_log
tests_unit_check_crc32c_SOURCES = tests/unit/check_crc32c.c
tests_unit_check_crc32c_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_crc32c_LDADD = $(UNIT_LDADD)
tests_unit_check_log_SOURCES = tests/unit/check_log.c
tests_unit_check_log_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_log_LDADD = $(UNIT_LDADD)

# Shell tests run by $(SHELL), never under valgrind.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
TESTS += tests/unit/headers.sh tests/unit/exports.sh tests/unit/sans-io.sh tests/unit/deps-lock.sh
EXTRA_DIST += tests/unit/headers.sh tests/unit/exports.sh tests/unit/sans-io.sh tests/unit/deps-lock.sh
