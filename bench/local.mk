# bench/: benchmark helpers (built with `make`, not installed).
noinst_PROGRAMS += bench/mkcapture
bench_mkcapture_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS)
bench_mkcapture_LDADD = tests/oracle/liboracle.la $(LDADD) $(PCAP_LIBS)
EXTRA_DIST += bench/ddpdump-vs-tshark.sh
