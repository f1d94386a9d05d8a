# mpa/ FPDU framing (RFC 5044 §4: length, markers, pad, CRC): sources, unit tests, fuzz target.
libesock_core_la_SOURCES += \
	mpa/mpa_wire.h \
	mpa/mpa_state.h \
	mpa/mpa_tx.c \
	mpa/mpa_rx.c

TEST_PROGS += tests/unit/check_mpa_tx tests/unit/check_mpa_rx

FUZZ_REPLAYS += tests/fuzz/replay_mpa_rx
tests_fuzz_replay_mpa_rx_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_mpa_rx.c
tests_fuzz_replay_mpa_rx_LDADD = libesock_core.la
