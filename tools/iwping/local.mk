# tools/iwping/: rping's ping-pong over the esock endpoint (esock/iwarp.h).
bin_PROGRAMS += tools/iwping/iwping
tools_iwping_iwping_SOURCES = tools/iwping/iwping.c tools/iwping/iwping.h \
	tools/iwping/conn.c tools/iwping/ping.c
# The endpoint library brings the codec core and pthread with it.
tools_iwping_iwping_LDADD = libesock_ep.la
dist_man_MANS += tools/iwping/iwping.1

# Server and client on loopback: every size limit, CRC on and off, -P, bad options.
TESTS += tools/iwping/iwping-test.sh
EXTRA_DIST += tools/iwping/iwping-test.sh
