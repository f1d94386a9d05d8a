# tests/integration/: the endpoint over loopback TCP (Check), both ends in one
# process or in two.
noinst_LTLIBRARIES += tests/integration/libeppair.la
tests_integration_libeppair_la_SOURCES = tests/integration/ep_pair.c tests/integration/ep_pair.h
tests_integration_libeppair_la_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)

EP_TEST_LDADD = tests/integration/libeppair.la libesock_ep.la tests/unit/libtestutil.la $(CHECK_LIBS)

check_PROGRAMS += tests/integration/check_ep_ops
TESTS += tests/integration/check_ep_ops
tests_integration_check_ep_ops_SOURCES = tests/integration/check_ep_ops.c
tests_integration_check_ep_ops_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_ops_LDADD = $(EP_TEST_LDADD)

check_PROGRAMS += tests/integration/check_ep_sem
TESTS += tests/integration/check_ep_sem
tests_integration_check_ep_sem_SOURCES = tests/integration/check_ep_sem.c
tests_integration_check_ep_sem_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_sem_LDADD = $(EP_TEST_LDADD)

check_PROGRAMS += tests/integration/check_ep_proc
TESTS += tests/integration/check_ep_proc
tests_integration_check_ep_proc_SOURCES = tests/integration/check_ep_proc.c
tests_integration_check_ep_proc_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_proc_LDADD = $(EP_TEST_LDADD)

check_PROGRAMS += tests/integration/check_ep_profile
TESTS += tests/integration/check_ep_profile
tests_integration_check_ep_profile_SOURCES = tests/integration/check_ep_profile.c
tests_integration_check_ep_profile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_profile_LDADD = $(EP_TEST_LDADD)

TESTS += tests/integration/engine-modes.sh
EXTRA_DIST += tests/integration/engine-modes.sh

check_PROGRAMS += tests/integration/check_ep_ring
TESTS += tests/integration/check_ep_ring
tests_integration_check_ep_ring_SOURCES = tests/integration/check_ep_ring.c
tests_integration_check_ep_ring_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_ring_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

check_PROGRAMS += tests/integration/check_fdtab
TESTS += tests/integration/check_fdtab
tests_integration_check_fdtab_SOURCES = tests/integration/check_fdtab.c libesock/fdtab.c
tests_integration_check_fdtab_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_fdtab_LDADD = $(EP_TEST_LDADD)

check_PROGRAMS += tests/integration/check_ep_scale
TESTS += tests/integration/check_ep_scale
tests_integration_check_ep_scale_SOURCES = tests/integration/check_ep_scale.c
tests_integration_check_ep_scale_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_scale_LDADD = $(EP_TEST_LDADD) -lpthread

check_PROGRAMS += tests/integration/check_backend
TESTS += tests/integration/check_backend
tests_integration_check_backend_SOURCES = tests/integration/check_backend.c
tests_integration_check_backend_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_backend_LDADD = $(EP_TEST_LDADD)

check_PROGRAMS += tests/integration/check_ep_real
TESTS += tests/integration/check_ep_real
tests_integration_check_ep_real_SOURCES = tests/integration/check_ep_real.c
tests_integration_check_ep_real_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_real_LDADD = $(EP_TEST_LDADD)

# The extended sockets layer through libc's names (links libesock.so itself).
check_PROGRAMS += tests/integration/check_sock
TESTS += tests/integration/check_sock
tests_integration_check_sock_SOURCES = tests/integration/check_sock.c
tests_integration_check_sock_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# Slow and silent peers against a DDPMODE server (issue 12).
check_PROGRAMS += tests/integration/check_sock_peers
TESTS += tests/integration/check_sock_peers
tests_integration_check_sock_peers_SOURCES = tests/integration/check_sock_peers.c \
	tests/integration/sock_util.c tests/integration/sock_util.h
tests_integration_check_sock_peers_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_peers_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# A forked child in a seccomp sandbox carries on its connection (issue 13).
check_PROGRAMS += tests/integration/check_sock_sandbox
TESTS += tests/integration/check_sock_sandbox
tests_integration_check_sock_sandbox_SOURCES = tests/integration/check_sock_sandbox.c \
	tests/integration/sock_util.c tests/integration/sock_util.h
tests_integration_check_sock_sandbox_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_sandbox_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# One DDPMODE connection used by several processes one after another, as sshd does (issue 13).
check_PROGRAMS += tests/integration/check_sock_fork
TESTS += tests/integration/check_sock_fork
tests_integration_check_sock_fork_SOURCES = tests/integration/check_sock_fork.c \
	tests/integration/sock_util.c tests/integration/sock_util.h
tests_integration_check_sock_fork_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_fork_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# A DDPMODE connection carried across exec, inetd style (issue 13).
check_PROGRAMS += tests/integration/check_sock_exec
TESTS += tests/integration/check_sock_exec
tests_integration_check_sock_exec_SOURCES = tests/integration/check_sock_exec.c \
	tests/integration/sock_util.c tests/integration/sock_util.h
tests_integration_check_sock_exec_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_exec_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -ldl -lpthread

# Socket calls that must behave as with libc on DDPMODE sockets (issue 12).
check_PROGRAMS += tests/integration/check_sock_calls
TESTS += tests/integration/check_sock_calls
tests_integration_check_sock_calls_SOURCES = tests/integration/check_sock_calls.c \
	tests/integration/sock_util.c tests/integration/sock_util.h
tests_integration_check_sock_calls_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_sock_calls_LDADD = libesock.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread
