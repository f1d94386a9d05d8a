# tools/: demo, benchmark, (later) ddpdump, iwping, esock-run.
