# Check unit tests: one program per module (tests/unit/check_<module>.c),
# each linked with the default LDADD (codec core, shared helpers, Check).
noinst_LTLIBRARIES += tests/unit/libtestutil.la
tests_unit_libtestutil_la_SOURCES = tests/unit/testutil.c tests/unit/testutil.h
# Test vectors included by several unit tests (none lists it in _SOURCES).
EXTRA_DIST += tests/unit/mpa_vectors.h

TEST_PROGS += tests/unit/check_crc32c tests/unit/check_log tests/unit/check_atfork

# The verbs backend's key map is plain C: tested whether or not rdma-core is there.
TEST_PROGS += tests/unit/check_vb_keys
tests_unit_check_vb_keys_SOURCES = tests/unit/check_vb_keys.c kpatch/verbs/vb_keys.c
# Own object names: vb_keys.c is also built by libtool for libesock_ep.la.
tests_unit_check_vb_keys_CFLAGS = $(AM_CFLAGS)
tests_unit_check_vb_keys_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# The verbs backend's posting against a fake provider (siw's negated errors, no SGE-less
# receives): built only with the backend, whose rdma-core headers it needs.
if HAVE_VERBS
TEST_PROGS += tests/unit/check_vb_post
tests_unit_check_vb_post_SOURCES = tests/unit/check_vb_post.c kpatch/verbs/vb_qp.c
tests_unit_check_vb_post_CFLAGS = $(AM_CFLAGS)
tests_unit_check_vb_post_LDADD = libesock_core.la tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread
else
EXTRA_DIST += tests/unit/check_vb_post.c
endif

# The rule by which a CQ learns how long to spin: one header, no library.
TEST_PROGS += tests/unit/check_ep_spin
tests_unit_check_ep_spin_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS)

# The socket layer's shared receive buffers: plain C over mmap.
TEST_PROGS += tests/unit/check_sock_rxbuf
tests_unit_check_sock_rxbuf_SOURCES = tests/unit/check_sock_rxbuf.c libesock/sock_rxbuf.c util/atfork.c
# Own object names: these files are also built by libtool for the libraries.
tests_unit_check_sock_rxbuf_CFLAGS = $(AM_CFLAGS)
tests_unit_check_sock_rxbuf_LDADD = tests/unit/libtestutil.la $(CHECK_LIBS) -lpthread

# Shell tests run by $(SHELL), never under valgrind.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
TESTS += tests/unit/headers.sh tests/unit/exports.sh tests/unit/sans-io.sh tests/unit/deps-lock.sh
EXTRA_DIST += tests/unit/headers.sh tests/unit/exports.sh tests/unit/sans-io.sh tests/unit/deps-lock.sh
