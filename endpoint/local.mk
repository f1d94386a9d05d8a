# endpoint/: the user-level endpoint (include/esock/iwarp.h over kernel TCP):
# queue pairs, completion queues, registration, listeners and the progress
# engine, built on the wire codecs; and iwarp/, the API handed to the backend
# of each object (the user-level one here).  libesock_ep.la is linked by the
# tools and the tests as it is, and by libesock.so under the socket layer.
noinst_LTLIBRARIES += libesock_ep.la
libesock_ep_la_SOURCES = endpoint/ep.h endpoint/ep_ring.h endpoint/ep_profile.h endpoint/ep_profile.c \
	endpoint/ep_mr.c endpoint/ep_cq.c endpoint/ep_qp.c endpoint/ep_conn.c endpoint/ep_start.c endpoint/ep_listen.c \
	endpoint/ep_tx.c endpoint/ep_txbatch.c endpoint/ep_spare.h endpoint/ep_spare.c endpoint/ep_rx.c \
	endpoint/ep_engine.c endpoint/ep_sockbuf.c endpoint/ep_restrict.c endpoint/ep_backend.c \
	endpoint/ep_ops.h endpoint/ep_ops.c endpoint/ep_sock.h endpoint/ep_sock.c endpoint/ep_wait.c \
	endpoint/ep_spin.h endpoint/ep_mem.h endpoint/ep_mem.c \
	iwarp/backend.h iwarp/dispatch.c iwarp/choose.c
libesock_ep_la_LIBADD = libesock_libc.la libesock_core.la -lpthread

# Fuzz target over the endpoint's receive path (a QP fed from a socketpair).
FUZZ_REPLAYS += tests/fuzz/replay_ep_rx
FUZZ_EXTRA_ep_rx = $(addprefix $(srcdir)/,$(filter %.c,$(libesock_ep_la_SOURCES) $(libesock_libc_la_SOURCES))) \
	-ldl -lpthread
tests_fuzz_replay_ep_rx_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ep_rx.c
tests_fuzz_replay_ep_rx_LDADD = libesock_ep.la

# Structure-aware fuzz target: a whole passive connection (Request, Reply,
# then RDMAP messages framed as negotiated) into the endpoint.
FUZZ_REPLAYS += tests/fuzz/replay_ep_conn
FUZZ_EXTRA_ep_conn = $(FUZZ_EXTRA_ep_rx)
tests_fuzz_replay_ep_conn_SOURCES = tests/fuzz/standalone.c tests/fuzz/fuzz_ep_conn.c
tests_fuzz_replay_ep_conn_LDADD = libesock_ep.la
