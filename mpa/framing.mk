# mpa/ FPDU framing (RFC 5044 §4: length, markers, pad, CRC): sources, unit tests, fuzz target.
libesock_core_la_SOURCES += \
	mpa/mpa_wire.h \
	mpa/mpa_tx.c \
	mpa/mpa_rx.c

check_PROGRAMS += tests/unit/check_mpa_tx tests/unit/check_mpa_rx
TESTS += tests/unit/check_mpa_tx tests/unit/check_mpa_rx
tests_unit_check_mpa_tx_SOURCES = tests/unit/check_mpa_tx.c tests/unit/mpa_vectors.h
tests_unit_check_mpa_tx_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_mpa_tx_LDADD = $(UNIT_LDADD)
tests_unit_check_mpa_rx_SOURCES = tests/unit/check_mpa_rx.c tests/unit/mpa_vectors.h
tests_unit_check_mpa_rx_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_mpa_rx_LDADD = $(UNIT_LDADD)

FUZZ_TARGETS += mpa_rx
check_PROGRAMS += tests/fuzz/replay_mpa_rx
TESTS += tests/fuzz/replay_mpa_rx
tests_fuzz_replay_mpa_rx_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_mpa_rx.c
tests_fuzz_replay_mpa_rx_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"mpa_rx"'
tests_fuzz_replay_mpa_rx_LDADD = libesock_core.la
