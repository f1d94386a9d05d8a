# ddp/: RFC 5041 headers, segmentation, placement: sources, unit tests, fuzz targets.
libesock_core_la_SOURCES += \
	ddp/ddp_hdr.c
libesock_core_la_SOURCES += \
	ddp/ddp_seg.c \
	ddp/ddp_place.c

check_PROGRAMS += tests/unit/check_ddp_hdr tests/unit/check_ddp_seg tests/unit/check_ddp_place
TESTS += tests/unit/check_ddp_hdr tests/unit/check_ddp_seg tests/unit/check_ddp_place
tests_unit_check_ddp_hdr_SOURCES = tests/unit/check_ddp_hdr.c tests/unit/mpa_vectors.h
tests_unit_check_ddp_hdr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_ddp_hdr_LDADD = $(UNIT_LDADD)
tests_unit_check_ddp_seg_SOURCES = tests/unit/check_ddp_seg.c
tests_unit_check_ddp_seg_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_ddp_seg_LDADD = $(UNIT_LDADD)
tests_unit_check_ddp_place_SOURCES = tests/unit/check_ddp_place.c
tests_unit_check_ddp_place_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_ddp_place_LDADD = $(UNIT_LDADD)

FUZZ_TARGETS += ddp_place
check_PROGRAMS += tests/fuzz/replay_ddp_place
TESTS += tests/fuzz/replay_ddp_place
tests_fuzz_replay_ddp_place_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ddp_place.c
tests_fuzz_replay_ddp_place_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"ddp_place"'
tests_fuzz_replay_ddp_place_LDADD = libesock_core.la
