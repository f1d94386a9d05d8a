# bench/: benchmark helpers (built with `make`, not installed).
noinst_PROGRAMS += bench/mkcapture
bench_mkcapture_SOURCES = bench/mkcapture.c
bench_mkcapture_CFLAGS = $(UNIT_CFLAGS) $(PCAP_CFLAGS)
bench_mkcapture_LDADD = tests/oracle/liboracle.la $(UNIT_LDADD) $(PCAP_LIBS)
EXTRA_DIST += bench/ddpdump-vs-tshark.sh
