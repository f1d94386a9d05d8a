# rdmap/: RFC 5040 / RFC 7306 headers, Terminate, name tables: sources, unit tests, fuzz targets.
libesock_core_la_SOURCES += \
	rdmap/rdmap_internal.h \
	rdmap/rdmap_hdr.c \
	rdmap/rdmap_term.c \
	rdmap/rdmap_ext.c \
	rdmap/rdmap_names.c

check_PROGRAMS += tests/unit/check_rdmap_hdr tests/unit/check_rdmap_term
TESTS += tests/unit/check_rdmap_hdr tests/unit/check_rdmap_term
tests_unit_check_rdmap_hdr_SOURCES = tests/unit/check_rdmap_hdr.c tests/unit/mpa_vectors.h
tests_unit_check_rdmap_hdr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_rdmap_hdr_LDADD = $(UNIT_LDADD)
tests_unit_check_rdmap_term_SOURCES = tests/unit/check_rdmap_term.c tests/unit/mpa_vectors.h
tests_unit_check_rdmap_term_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_rdmap_term_LDADD = $(UNIT_LDADD)

FUZZ_TARGETS += rdmap_hdr
check_PROGRAMS += tests/fuzz/replay_rdmap_hdr
TESTS += tests/fuzz/replay_rdmap_hdr
tests_fuzz_replay_rdmap_hdr_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_rdmap_hdr.c
tests_fuzz_replay_rdmap_hdr_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"rdmap_hdr"'
tests_fuzz_replay_rdmap_hdr_LDADD = libesock_core.la
