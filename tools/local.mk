# tools/: demo, benchmark, (later) ddpdump, iwping, esock-run.
noinst_LTLIBRARIES += tools/libtools.la
tools_libtools_la_SOURCES = tools/fpdu_print.c tools/fpdu_print.h

bin_PROGRAMS += tools/esock-demo tools/esock-bench
tools_esock_demo_SOURCES = tools/esock-demo.c
tools_esock_demo_LDADD = tools/libtools.la libesock_core.la
tools_esock_bench_SOURCES = tools/esock-bench.c
tools_esock_bench_LDADD = libesock_core.la

# The demo verifies what it places: run it (quietly, every framing option) as a test.
TESTS += tools/demo-test.sh
EXTRA_DIST += tools/demo-test.sh

# ddpdump: libpcap input, TCP reassembly, the project's decoders, output.
bin_PROGRAMS += tools/ddpdump/ddpdump
tools_ddpdump_ddpdump_SOURCES = tools/ddpdump/ddpdump.c tools/ddpdump/ddpdump.h \
	tools/ddpdump/capture.c tools/ddpdump/capture.h \
	tools/ddpdump/tcp_reasm.c tools/ddpdump/tcp_reasm.h \
	tools/ddpdump/flows.c tools/ddpdump/fpdu.c tools/ddpdump/resync.c tools/ddpdump/output.c
tools_ddpdump_ddpdump_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS) $(ZLIB_CFLAGS)
tools_ddpdump_ddpdump_LDADD = tools/libtools.la libesock_core.la $(PCAP_LIBS) $(ZLIB_LIBS)
dist_man_MANS = tools/ddpdump/ddpdump.1
