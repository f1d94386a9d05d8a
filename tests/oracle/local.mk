# tests/oracle/: tshark as an independent decoder of our FPDU streams; the
# capture synthesiser and stream builder are shared with the ddpdump tests.
noinst_LTLIBRARIES += tests/oracle/liboracle.la
tests_oracle_liboracle_la_SOURCES = \
	tests/oracle/pcap_synth.c tests/oracle/pcap_synth.h \
	tests/oracle/streams.c tests/oracle/streams.h \
	tests/oracle/tshark_run.c tests/oracle/tshark_run.h
tests_oracle_liboracle_la_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS)

TEST_PROGS += tests/oracle/check_tshark_oracle
tests_oracle_check_tshark_oracle_CFLAGS = $(AM_CFLAGS) $(PCAP_CFLAGS)
tests_oracle_check_tshark_oracle_LDADD = tests/oracle/liboracle.la $(LDADD) $(PCAP_LIBS)
CLEANFILES += oracle-*.pcap
