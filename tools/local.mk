# tools/: demo, benchmark, (later) ddpdump, iwping, esock-run.
noinst_LTLIBRARIES += tools/libtools.la
tools_libtools_la_SOURCES = tools/fpdu_print.c tools/fpdu_print.h

bin_PROGRAMS += tools/esock-demo tools/esock-bench
tools_esock_demo_SOURCES = tools/esock-demo.c
tools_esock_demo_LDADD = tools/libtools.la libesock_core.la
# esock-bench: the codec benchmark, and the endpoint against kernel TCP (a
# forked server on loopback), hence the endpoint library.
tools_esock_bench_SOURCES = tools/esock-bench.c tools/bench/bench.h tools/bench/util.c \
	tools/bench/codec.c tools/bench/epside.c tools/bench/ep_lat.c tools/bench/ep_bw.c \
	tools/bench/tcp.c tools/bench/server.c tools/bench/run.c
tools_esock_bench_LDADD = libesock_ep.la

# The demo verifies what it places: run it (quietly, every framing option) as a test.
TESTS += tools/demo-test.sh
EXTRA_DIST += tools/demo-test.sh

# A few round trips and small transfers of every endpoint mode: it runs and
# prints sane CSV (no timing is judged: the machines are shared).
TESTS += tools/bench-test.sh
EXTRA_DIST += tools/bench-test.sh

# ddpdump: libpcap input, TCP reassembly, the project's decoders, output.
noinst_LTLIBRARIES += tools/ddpdump/libddpdump.la
DDPDUMP_SRCS = tools/ddpdump/ddpdump.h tools/ddpdump/run.c \
	tools/ddpdump/capture.c tools/ddpdump/capture.h \
	tools/ddpdump/tcp_reasm.c tools/ddpdump/tcp_reasm.h \
	tools/ddpdump/flows.c tools/ddpdump/fpdu.c tools/ddpdump/resync.c tools/ddpdump/output.c
tools_ddpdump_libddpdump_la_SOURCES = $(DDPDUMP_SRCS)
tools_ddpdump_libddpdump_la_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS) $(ZLIB_CFLAGS)
tools_ddpdump_libddpdump_la_LIBADD = tools/libtools.la libesock_core.la $(PCAP_LIBS) $(ZLIB_LIBS)
bin_PROGRAMS += tools/ddpdump/ddpdump
tools_ddpdump_ddpdump_SOURCES = tools/ddpdump/ddpdump.c
tools_ddpdump_ddpdump_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS)
tools_ddpdump_ddpdump_LDADD = tools/ddpdump/libddpdump.la

# Fuzz target over whole capture files (libpcap reading from memory).
FUZZ_REPLAYS += tests/fuzz/replay_pcap_reader
FUZZ_EXTRA_pcap_reader = $(addprefix $(srcdir)/,$(filter %.c,$(DDPDUMP_SRCS))) \
	$(srcdir)/tools/fpdu_print.c $(PCAP_LIBS) $(ZLIB_LIBS)
tests_fuzz_replay_pcap_reader_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_pcap_reader.c
tests_fuzz_replay_pcap_reader_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS)
tests_fuzz_replay_pcap_reader_LDADD = tools/ddpdump/libddpdump.la
dist_man_MANS += tools/ddpdump/ddpdump.1

# esock-sockbench: a plain TCP ping-pong/stream program; tools/sockbench.sh
# runs it plain, preloaded (pass-through) and preloaded in DDPMODE.
bin_PROGRAMS += tools/esock-sockbench
tools_esock_sockbench_SOURCES = tools/bench/sockbench.c
tools_esock_sockbench_LDADD =
dist_bin_SCRIPTS = tools/sockbench.sh tools/bench-median.sh tools/connscale.sh
TESTS += tools/sockbench-test.sh
EXTRA_DIST += tools/sockbench-test.sh

# esock-wakecost: what a wake-up across CPUs costs here (the sleeper's CPU,
# the waker's write); the TCP Server's few-client figures are counts of these.
bin_PROGRAMS += tools/esock-wakecost
tools_esock_wakecost_SOURCES = tools/bench/wakecost.c
tools_esock_wakecost_LDADD = -lpthread
TESTS += tools/wakecost-test.sh
EXTRA_DIST += tools/wakecost-test.sh

# esock-connscale: the cost of many connections (setup rate, memory and
# descriptors per connection, throughput over many); tools/connscale.sh runs
# it plain and in DDPMODE.
bin_PROGRAMS += tools/esock-connscale
tools_esock_connscale_SOURCES = tools/bench/connscale.c
tools_esock_connscale_LDADD =
TESTS += tools/connscale-test.sh
EXTRA_DIST += tools/connscale-test.sh

# tools/appbench.sh: real applications (redis, nginx, pgbench, iperf3, a 64-octet
# request/response) plain, pass-through and DDPMODE in the same run; run from
# the source tree (it uses tests/apps/common.sh), not installed; its test runs
# one round of its smallest group.
EXTRA_DIST += tools/appbench.sh tools/appbench-test.sh
TESTS += tools/appbench-test.sh

# tools/appinstr.sh: user-space instructions per request of a server (nginx,
# redis) under valgrind's cachegrind, plain, pass-through and DDPMODE: a steady
# figure where throughput moves from hour to hour; its test counts nginx with
# few requests.
EXTRA_DIST += tools/appinstr.sh tools/appinstr-test.sh
TESTS += tools/appinstr-test.sh

# tools/tcpserver-eval.sh: the TCP Server's evaluation (nginx, regular TCP against
# tcpserverd with its optimisations one by one; docs/tcpserver.md); its test
# runs it for a few cells and checks what it wrote.
EXTRA_DIST += tools/tcpserver-eval.sh tools/tcpserver-eval-plot.py tools/tcpserver-eval-test.sh \
	tools/tcpserver-regbench.sh
TESTS += tools/tcpserver-eval-test.sh

# esock-stat: the DDPMODE sockets of running processes (shared-memory counters).
bin_PROGRAMS += tools/esock-stat
tools_esock_stat_SOURCES = tools/esock-stat.c libesock/sock_stat.h
tools_esock_stat_LDADD =
TESTS += tools/esock-stat-test.sh
EXTRA_DIST += tools/esock-stat-test.sh
