# tests/ddpdump/: ddpdump on synthetic captures (clean and damaged) and against tshark.
TEST_PROGS += tests/ddpdump/check_ddpdump
tests_ddpdump_check_ddpdump_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS) $(ZLIB_CFLAGS)
tests_ddpdump_check_ddpdump_LDADD = tests/oracle/liboracle.la $(LDADD) $(PCAP_LIBS) $(ZLIB_LIBS)
EXTRA_tests_ddpdump_check_ddpdump_DEPENDENCIES = tools/ddpdump/ddpdump
CLEANFILES += ddpdump-test-*.pcap
EXTRA_DIST += tests/data

# Live capture on lo (root): ddpdump -i while live_peer talks MPA over 127.0.0.1.
check_PROGRAMS += tests/ddpdump/live_peer
tests_ddpdump_live_peer_LDADD = libesock_core.la
# pack_peer: the endpoint on both ends, a WR list packed or one message per segment.
check_PROGRAMS += tests/ddpdump/pack_peer
tests_ddpdump_pack_peer_LDADD = libesock_ep.la
TESTS += tests/ddpdump/live.sh
EXTRA_DIST += tests/ddpdump/live.sh
# The interop harness, file by file: a directory entry would be copied from the
# build tree once objects are built there (tests/interop/sock-rping), sources missing.
EXTRA_DIST += tests/interop/guest-init.sh tests/interop/guest-lib.sh \
	tests/interop/iwping-vs-rping.sh tests/interop/perftest-anchor.sh \
	tests/interop/refresh-data.sh tests/interop/run-interop.sh tests/interop/siw-rig.sh \
	tests/interop/verbs-matrix.sh tests/interop/backend-bench.sh tests/interop/siw-patches.sh \
	tests/interop/backend-ops.sh tests/interop/verbs-sockets.sh tests/interop/tcpserver-cluster.sh tests/interop/verbs-part.sh \
	tests/interop/local.mk tests/interop/jobs
