# tests/interop/: the interop proof against the Linux kernel's siw in a qemu guest
# (docs/interop.md): rping and perftest captures decoded as tshark does, our iwping
# against rping in both roles (CRC off and on), and the perftest anchor next to
# esock-bench.  Not part of `make check`: it takes minutes, downloads the guest's
# Debian packages on first use and needs root for the tap device.  Where qemu cannot
# run, run-interop.sh exits 77 with the reason and the target reports the skip and
# succeeds, as a skipped test does under `make check`.
check-interop: all tests/ddpdump/check_ddpdump$(EXEEXT)
	@rc=0; $(SHELL) $(srcdir)/tests/interop/run-interop.sh $(abs_top_builddir) || rc=$$?; \
	if test $$rc -eq 77; then echo "check-interop: SKIP"; exit 0; fi; \
	if test $$rc -eq 0; then echo "check-interop: PASS"; else echo "check-interop: FAIL"; fi; \
	exit $$rc
.PHONY: check-interop

# sock-rping: rping's client through DDPMODE sockets and the extended calls (run
# against rping -s on siw by run-interop.sh, against iwping -s by sock-rping-test.sh).
noinst_PROGRAMS += tests/interop/sock-rping
tests_interop_sock_rping_SOURCES = tests/interop/sock_rping.c
tests_interop_sock_rping_LDADD = libesock.la
TESTS += tests/interop/sock-rping-test.sh
EXTRA_DIST += tests/interop/sock-rping-test.sh tests/interop/port-of.sh

# bad-read: an RDMA Read with an STag the peer never gave out (siw-patches.sh runs
# it in the siw guest against rping -s: siw's Terminate copies the Read back).
noinst_PROGRAMS += tests/interop/bad-read
tests_interop_bad_read_SOURCES = tests/interop/bad_read.c
tests_interop_bad_read_LDADD = libesock_ep.la

# op-matrix: every operation between two processes on the backends they are
# given, data checked (backend-ops.sh runs it across the user-level and the
# verbs backend in the siw guest; op-matrix-test.sh on loopback).
noinst_PROGRAMS += tests/interop/op-matrix
tests_interop_op_matrix_SOURCES = tests/interop/op_matrix.c
tests_interop_op_matrix_LDADD = libesock_ep.la

# plain-echo: an echo server and client on plain sockets only, run as an unmodified
# program under the interposer (verbs-sockets.sh in the siw guest, on both backends;
# plain-echo-test.sh on loopback, plain TCP and DDPMODE, poll and epoll).
noinst_PROGRAMS += tests/interop/plain-echo
tests_interop_plain_echo_SOURCES = tests/interop/plain_echo.c
TESTS += tests/interop/plain-echo-test.sh
EXTRA_DIST += tests/interop/plain-echo-test.sh

# sock-api-ops: the extended calls (RDMA Read, Write, Send, event queues) on a DDPMODE
# socket (verbs-sockets.sh in the siw guest, both backends each way; sock-api-ops-test.sh
# on loopback).
noinst_PROGRAMS += tests/interop/sock-api-ops
tests_interop_sock_api_ops_SOURCES = tests/interop/sock_api_ops.c
tests_interop_sock_api_ops_LDADD = libesock.la
TESTS += tests/interop/sock-api-ops-test.sh
EXTRA_DIST += tests/interop/sock-api-ops-test.sh

# short-cross: RDMA Writes of a few octets whose source crosses a page, sent by the
# transmit thread (backend-ops.sh runs it on the verbs backend in the siw guest: kernel
# siw copies such a payload wrongly, kpatch/linux 0007, which the verbs backend avoids).
noinst_PROGRAMS += tests/interop/short-cross
tests_interop_short_cross_SOURCES = tests/interop/short_cross.c
tests_interop_short_cross_LDADD = libesock_ep.la
