# ddp/: RFC 5041 headers, segmentation, placement: sources, unit tests, fuzz targets.
libesock_core_la_SOURCES += \
	ddp/ddp_hdr.c
libesock_core_la_SOURCES += \
	ddp/ddp_state.h \
	ddp/ddp_seg.c \
	ddp/ddp_place.c

TEST_PROGS += tests/unit/check_ddp_hdr tests/unit/check_ddp_seg tests/unit/check_ddp_place

FUZZ_REPLAYS += tests/fuzz/replay_ddp_place
tests_fuzz_replay_ddp_place_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ddp_place.c
tests_fuzz_replay_ddp_place_LDADD = libesock_core.la
