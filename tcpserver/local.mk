# tcpserver/: the TCP Server (issue 16, docs/tcpserver.md).  proto/ is TSP,
# the request/response format between host processes and tcpserverd: sans-I/O
# like the wire codecs (tests/unit/sans-io.sh checks it); shmq.c the queues
# that carry it, chan.c between processes of one machine, rchan.c across the
# network (over an esock QP, hence the endpoint library).
noinst_LTLIBRARIES += libesock_tsp.la
libesock_tsp_la_SOURCES = tcpserver/proto/tsp.h tcpserver/proto/tsp.c \
	tcpserver/shmq.h tcpserver/shmq.c tcpserver/chan.h tcpserver/chan.c \
	tcpserver/rchan.h tcpserver/rchan.c tcpserver/host.h tcpserver/host.c tcpserver/sys.h
libesock_tsp_la_LIBADD = libesock_ep.la -lpthread
# The same host side inside libesock.so (the offload mode): libc's calls
# through the library's table, the channel's descriptors the library's own.
noinst_LTLIBRARIES += libesock_tsp_lib.la
libesock_tsp_lib_la_SOURCES = $(libesock_tsp_la_SOURCES) tcpserver/sys.h
libesock_tsp_lib_la_CPPFLAGS = $(AM_CPPFLAGS) -DESOCK_TSP_IN_LIBESOCK
libesock_tsp_lib_la_LIBADD = -lpthread

TEST_PROGS += tests/integration/check_rchan
tests_integration_check_rchan_LDADD = libesock_tsp.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# The daemon (tcpserver/daemon/tsd.h says which file holds what).
bin_PROGRAMS += tcpserver/tcpserverd
tcpserver_tcpserverd_SOURCES = tcpserver/daemon/tsd.h tcpserver/daemon/main.c tcpserver/daemon/hosts.c \
	tcpserver/daemon/req.h tcpserver/daemon/req.c tcpserver/daemon/calls.c tcpserver/daemon/calls_io.c \
	tcpserver/daemon/calls_opt.c tcpserver/daemon/sockets.c tcpserver/daemon/answer.c tcpserver/daemon/sendq.c \
	tcpserver/daemon/ahead.c tcpserver/daemon/forks.c tcpserver/daemon/hold.c tcpserver/daemon/cpu_watch.c \
	tcpserver/hostmem.h tcpserver/hostmem.c
tcpserver_tcpserverd_LDADD = libesock_tsp.la
dist_man_MANS += tcpserver/tcpserverd.8

# A host program for the tests: echoes through tcpserverd, or misbehaves on purpose.
check_PROGRAMS += tests/tcpserver/tsp-host
tests_tcpserver_tsp_host_SOURCES = tests/tcpserver/tsp_host.c
tests_tcpserver_tsp_host_LDADD = libesock_tsp.la
# A program that registers its buffer through the extended API, then echoes with recv/send.
check_PROGRAMS += tests/tcpserver/reg-echo
tests_tcpserver_reg_echo_SOURCES = tests/tcpserver/reg_echo.c
tests_tcpserver_reg_echo_LDADD =
TESTS += tests/tcpserver/tcpserverd-test.sh tests/tcpserver/offload-test.sh tests/tcpserver/offload-net-test.sh \
	tests/tcpserver/nginx-debian-test.sh \
	tests/tcpserver/shared-cpu-test.sh tests/tcpserver/netns-test.sh tests/tcpserver/netns-net-test.sh
EXTRA_DIST += tests/tcpserver/tcpserverd-test.sh tests/tcpserver/offload-test.sh tests/tcpserver/offload-net-test.sh \
	tests/tcpserver/nginx-debian-test.sh \
	tests/tcpserver/shared-cpu-test.sh tests/tcpserver/netns-test.sh tests/tcpserver/netns-net-test.sh \
	tests/tcpserver/stop.sh

TEST_PROGS += tests/unit/check_tsp tests/unit/check_shmq tests/unit/check_hostmem
tests_unit_check_hostmem_SOURCES = tests/unit/check_hostmem.c tcpserver/hostmem.c
tests_unit_check_hostmem_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS)
tests_unit_check_tsp_LDADD = libesock_tsp.la tests/unit/libtestutil.la $(CHECK_LIBS)
tests_unit_check_shmq_LDADD = libesock_tsp.la tests/unit/libtestutil.la $(CHECK_LIBS)

FUZZ_REPLAYS += tests/fuzz/replay_tsp
FUZZ_EXTRA_tsp = $(srcdir)/tcpserver/proto/tsp.c
tests_fuzz_replay_tsp_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_tsp.c
tests_fuzz_replay_tsp_LDADD = libesock_tsp.la
