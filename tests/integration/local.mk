# tests/integration/: the endpoint over loopback TCP (Check), both ends in one
# process or in two.
noinst_LTLIBRARIES += tests/integration/libeppair.la
tests_integration_libeppair_la_SOURCES = tests/integration/ep_pair.c tests/integration/ep_pair.h \
	tests/integration/tcp_segs.c

# The endpoint's tests link the pair helpers and the endpoint library.
EP_TEST_LDADD = tests/integration/libeppair.la libesock_ep.la tests/unit/libtestutil.la $(CHECK_LIBS)

TEST_PROGS += tests/integration/check_ep_ops
tests_integration_check_ep_ops_LDADD = $(EP_TEST_LDADD)

TEST_PROGS += tests/integration/check_ep_sem
tests_integration_check_ep_sem_LDADD = $(EP_TEST_LDADD)

TEST_PROGS += tests/integration/check_ep_proc
tests_integration_check_ep_proc_LDADD = $(EP_TEST_LDADD)

TEST_PROGS += tests/integration/check_ep_profile
tests_integration_check_ep_profile_LDADD = $(EP_TEST_LDADD)

TESTS += tests/integration/engine-modes.sh
EXTRA_DIST += tests/integration/engine-modes.sh

TEST_PROGS += tests/integration/check_ep_mem
tests_integration_check_ep_mem_LDADD = $(EP_TEST_LDADD) -lpthread

TEST_PROGS += tests/integration/check_ep_ring
tests_integration_check_ep_ring_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

TEST_PROGS += tests/integration/check_fdtab
tests_integration_check_fdtab_SOURCES = tests/integration/check_fdtab.c libesock/fdtab.c
# Own object names: libesock/fdtab.c is also built by libtool for libesock_sock.la.
tests_integration_check_fdtab_CFLAGS = $(AM_CFLAGS)
tests_integration_check_fdtab_LDADD = $(EP_TEST_LDADD)

TEST_PROGS += tests/integration/check_ep_scale
tests_integration_check_ep_scale_LDADD = $(EP_TEST_LDADD) -lpthread

TEST_PROGS += tests/integration/check_backend
tests_integration_check_backend_LDADD = $(EP_TEST_LDADD)

TEST_PROGS += tests/integration/check_ep_real
tests_integration_check_ep_real_LDADD = $(EP_TEST_LDADD)

# The extended sockets layer through libc's names: these link libesock.so
# itself; all but check_sock share sock_util.c.
SOCK_TEST_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread
SOCK_UTIL = tests/integration/sock_util.c tests/integration/sock_util.h

TEST_PROGS += tests/integration/check_sock
tests_integration_check_sock_LDADD = $(SOCK_TEST_LDADD)

# Slow and silent peers against a DDPMODE server (issue 12).
TEST_PROGS += tests/integration/check_sock_peers
tests_integration_check_sock_peers_SOURCES = tests/integration/check_sock_peers.c $(SOCK_UTIL)
tests_integration_check_sock_peers_LDADD = $(SOCK_TEST_LDADD)

# Flow control towards a reader that cannot stop reading (a kernel QP; issue 15).
TEST_PROGS += tests/integration/check_sock_credits
tests_integration_check_sock_credits_SOURCES = tests/integration/check_sock_credits.c $(SOCK_UTIL)
tests_integration_check_sock_credits_LDADD = $(SOCK_TEST_LDADD)

# A forked child in a seccomp sandbox carries on its connection (issue 13).
# The handlers' trampoline and an emulated wait's sleeps, linked with the
# socket layer itself (internal functions; its wrappers are this program's).
TEST_PROGS += tests/integration/check_sock_signal
tests_integration_check_sock_signal_LDADD = libesock_sock.la tests/unit/libtestutil.la \
	$(CHECK_LIBS) -ldl -lpthread

TEST_PROGS += tests/integration/check_sock_sandbox
tests_integration_check_sock_sandbox_SOURCES = tests/integration/check_sock_sandbox.c $(SOCK_UTIL)
tests_integration_check_sock_sandbox_LDADD = $(SOCK_TEST_LDADD)

# One DDPMODE connection used by several processes one after another, as sshd does (issue 13).
TEST_PROGS += tests/integration/check_sock_fork
tests_integration_check_sock_fork_SOURCES = tests/integration/check_sock_fork.c $(SOCK_UTIL)
tests_integration_check_sock_fork_LDADD = $(SOCK_TEST_LDADD)

# A DDPMODE connection carried across exec, inetd style (issue 13).
TEST_PROGS += tests/integration/check_sock_exec
tests_integration_check_sock_exec_SOURCES = tests/integration/check_sock_exec.c $(SOCK_UTIL)
tests_integration_check_sock_exec_LDADD = $(SOCK_TEST_LDADD) -ldl

# Socket calls that must behave as with libc on DDPMODE sockets (issue 12).
TEST_PROGS += tests/integration/check_sock_calls
tests_integration_check_sock_calls_SOURCES = tests/integration/check_sock_calls.c $(SOCK_UTIL)
tests_integration_check_sock_calls_LDADD = $(SOCK_TEST_LDADD)
# The offload mode through the library's own calls (sanitizers and valgrind see it); needs tcpserverd.
TEST_PROGS += tests/integration/check_sock_off
tests_integration_check_sock_off_SOURCES = tests/integration/check_sock_off.c
tests_integration_check_sock_off_LDADD = $(SOCK_TEST_LDADD)
EXTRA_tests_integration_check_sock_off_DEPENDENCIES = tcpserver/tcpserverd$(EXEEXT)
