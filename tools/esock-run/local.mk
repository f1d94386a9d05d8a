# tools/esock-run/: the launcher that preloads libesock.so into an unmodified
# program.  Generated here, not by configure, so that @libdir@ follows a
# `make libdir=...` or `make prefix=...` override as the install does.
bin_SCRIPTS = tools/esock-run/esock-run
CLEANFILES += tools/esock-run/esock-run
EXTRA_DIST += tools/esock-run/esock-run.in
dist_man_MANS += tools/esock-run/esock-run.1

esock_run_subst = sed -e 's|[@]libdir[@]|$(libdir)|g' \
	-e 's|[@]PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g'
tools/esock-run/esock-run: $(srcdir)/tools/esock-run/esock-run.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tools/esock-run && \
	$(esock_run_subst) $(srcdir)/tools/esock-run/esock-run.in >$@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@

# Options, the environment it hands on and where it finds the library.
TESTS += tools/esock-run/esock-run-test.sh
EXTRA_DIST += tools/esock-run/esock-run-test.sh
