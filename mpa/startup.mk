# mpa/ start frames (RFC 5044 §7.1, RFC 6581): sources, unit tests, fuzz target.
libesock_core_la_SOURCES += \
	mpa/mpa_startup.c \
	mpa/mpa_negotiate.c

TEST_PROGS += tests/unit/check_mpa_startup

FUZZ_REPLAYS += tests/fuzz/replay_mpa_startup
tests_fuzz_replay_mpa_startup_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_mpa_startup.c
tests_fuzz_replay_mpa_startup_LDADD = libesock_core.la
