# mpa/ start frames (RFC 5044 §7.1, RFC 6581): sources, unit tests, fuzz target.
libesock_core_la_SOURCES += \
	mpa/mpa_startup.c \
	mpa/mpa_negotiate.c

check_PROGRAMS += tests/unit/check_mpa_startup
TESTS += tests/unit/check_mpa_startup
tests_unit_check_mpa_startup_SOURCES = tests/unit/check_mpa_startup.c
tests_unit_check_mpa_startup_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_mpa_startup_LDADD = $(UNIT_LDADD)

FUZZ_TARGETS += mpa_startup
check_PROGRAMS += tests/fuzz/replay_mpa_startup
TESTS += tests/fuzz/replay_mpa_startup
tests_fuzz_replay_mpa_startup_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_mpa_startup.c
tests_fuzz_replay_mpa_startup_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"mpa_startup"'
tests_fuzz_replay_mpa_startup_LDADD = libesock_core.la
