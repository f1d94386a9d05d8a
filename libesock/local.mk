# libesock/: the installed library: the wire codecs (esock/wire.h) and the
# user-level endpoint (esock/iwarp.h); the extended sockets layer joins it in
# issue 5 (libesock_sock.la).  libesock_ep.la is the endpoint as a convenience library, linked by
# the tools and the tests.
noinst_LTLIBRARIES += libesock_ep.la
libesock_ep_la_SOURCES = libesock/ep.h libesock/ep_ring.h libesock/ep_profile.h libesock/ep_profile.c \
	libesock/ep_mr.c libesock/ep_cq.c libesock/ep_qp.c libesock/ep_conn.c libesock/ep_listen.c \
	libesock/ep_tx.c libesock/ep_txbatch.c libesock/ep_spare.h libesock/ep_spare.c libesock/ep_rx.c libesock/ep_engine.c libesock/ep_sockbuf.c libesock/ep_restrict.c \
	libesock/fdtab.h libesock/fdtab.c libesock/real.h libesock/real.c
libesock_ep_la_LIBADD = libesock_core.la -lpthread

# The extended sockets layer and the libc wrappers: only in libesock.so (the
# tools and tests that link libesock_ep.la keep libc's calls).
noinst_LTLIBRARIES += libesock_sock.la
libesock_sock_la_SOURCES = libesock/sock.h libesock/sock.c libesock/sock_opt.c \
	libesock/sock_conn.c libesock/sock_carry.c libesock/sock_share.c libesock/sock_handoff.c libesock/sock_stdio.c libesock/sock_data.c libesock/sock_ready.c libesock/sock_epoll.c libesock/sock_api.c libesock/sock_slots.c \
	libesock/sock_stat.h libesock/sock_stat.c libesock/preload.c
libesock_sock_la_LIBADD = libesock_ep.la

lib_LTLIBRARIES += libesock.la
libesock_la_SOURCES =
# No sources of its own: everything comes from the convenience libraries.
nodist_EXTRA_libesock_la_SOURCES = dummy.c
libesock_la_LIBADD = libesock_sock.la -ldl
libesock_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/libesock/libesock.map
EXTRA_libesock_la_DEPENDENCIES = libesock/libesock.map
EXTRA_DIST += libesock/libesock.map

# Fuzz target over the endpoint's receive path (a QP fed from a socketpair).
FUZZ_TARGETS += ep_rx
FUZZ_EXTRA_ep_rx = $(addprefix $(srcdir)/,$(filter %.c,$(libesock_ep_la_SOURCES))) -lpthread
check_PROGRAMS += tests/fuzz/replay_ep_rx
TESTS += tests/fuzz/replay_ep_rx
tests_fuzz_replay_ep_rx_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ep_rx.c
tests_fuzz_replay_ep_rx_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"ep_rx"'
tests_fuzz_replay_ep_rx_LDADD = libesock_ep.la

# Structure-aware fuzz target: a whole passive connection (Request, Reply,
# then RDMAP messages framed as negotiated) into the endpoint.
FUZZ_TARGETS += ep_conn
FUZZ_EXTRA_ep_conn = $(FUZZ_EXTRA_ep_rx)
check_PROGRAMS += tests/fuzz/replay_ep_conn
TESTS += tests/fuzz/replay_ep_conn
tests_fuzz_replay_ep_conn_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ep_conn.c
tests_fuzz_replay_ep_conn_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"ep_conn"'
tests_fuzz_replay_ep_conn_LDADD = libesock_ep.la
