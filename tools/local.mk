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
