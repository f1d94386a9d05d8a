# tests/faults/: the fault stage (make check-faults; scripts/test.sh stage
# 'faults'): DDPMODE transfers between two network namespaces with packet
# loss (nftables), MSS 536 and either end killed.  Needs root, ip and nft;
# skipped with the reason otherwise.
EXTRA_DIST += tests/faults/run-faults.sh

check-faults: all
	@rc=0; top_builddir=$(abs_top_builddir) $(SHELL) $(srcdir)/tests/faults/run-faults.sh || rc=$$?; \
	if test $$rc -eq 77; then echo "check-faults: SKIP"; exit 0; fi; \
	if test $$rc -eq 0; then echo "check-faults: PASS"; else echo "check-faults: FAIL"; fi; \
	exit $$rc
.PHONY: check-faults
