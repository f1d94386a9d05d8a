# rdmap/: RFC 5040 / RFC 7306 headers, Terminate, name tables: sources, unit tests, fuzz targets.
libesock_core_la_SOURCES += \
	rdmap/rdmap_internal.h \
	rdmap/rdmap_hdr.c \
	rdmap/rdmap_term.c \
	rdmap/rdmap_ext.c \
	rdmap/rdmap_names.c

TEST_PROGS += tests/unit/check_rdmap_hdr tests/unit/check_rdmap_term

FUZZ_REPLAYS += tests/fuzz/replay_rdmap_hdr
tests_fuzz_replay_rdmap_hdr_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_rdmap_hdr.c
tests_fuzz_replay_rdmap_hdr_LDADD = libesock_core.la
