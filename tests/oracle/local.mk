# tests/oracle/: tshark as an independent decoder of our FPDU streams.
check_PROGRAMS += tests/oracle/check_tshark_oracle
TESTS += tests/oracle/check_tshark_oracle
tests_oracle_check_tshark_oracle_SOURCES = tests/oracle/check_tshark_oracle.c \
	tests/oracle/pcap_synth.c tests/oracle/pcap_synth.h \
	tests/oracle/tshark_run.c tests/oracle/tshark_run.h
tests_oracle_check_tshark_oracle_CFLAGS = $(UNIT_CFLAGS) $(PCAP_CFLAGS)
tests_oracle_check_tshark_oracle_LDADD = $(UNIT_LDADD) $(PCAP_LIBS)
CLEANFILES += oracle-*.pcap
