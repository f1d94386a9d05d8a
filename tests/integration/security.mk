# SPDX-License-Identifier: MIT
# tests/integration/: the endpoint attacked by a crafted peer (bad STags,
# bounds, access rights, malformed FPDUs, MPA start-up failures).
TEST_PROGS += tests/integration/check_ep_security
tests_integration_check_ep_security_SOURCES = tests/integration/check_ep_security.c \
	tests/integration/evil_peer.c tests/integration/evil_peer.h
tests_integration_check_ep_security_LDADD = $(EP_TEST_LDADD)
