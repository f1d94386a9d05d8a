# SPDX-License-Identifier: MIT
# tests/integration/: the endpoint attacked by a crafted peer (bad STags,
# bounds, access rights, malformed FPDUs, MPA start-up failures).
check_PROGRAMS += tests/integration/check_ep_security
TESTS += tests/integration/check_ep_security
tests_integration_check_ep_security_SOURCES = tests/integration/check_ep_security.c \
	tests/integration/evil_peer.c tests/integration/evil_peer.h
tests_integration_check_ep_security_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_integration_check_ep_security_LDADD = tests/integration/libeppair.la libesock_ep.la \
	tests/unit/libtestutil.la $(CHECK_LIBS)
