# tests/oracle/: tshark as an independent decoder of our FPDU streams.
