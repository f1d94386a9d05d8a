# Fuzz targets.  Each target tests/fuzz/fuzz_<name>.c defines
# LLVMFuzzerTestOneInput.  `make check` builds tests/fuzz/replay_<name> (with
# standalone.c) and replays tests/fuzz/corpus/<name>/; `make fuzz` builds
# tests/fuzz/fuzz_<name> with clang -fsanitize=fuzzer,address,undefined;
# `make fuzz-run FUZZ_SECONDS=60` runs each for a bounded time.
# Fragments (mpa/*.mk, ddp/local.mk, rdmap/local.mk, endpoint/local.mk,
# tools/local.mk) append their replay programs to FUZZ_REPLAYS, the one list
# of targets; standalone.c takes the target's name from the program's.
FUZZ_TARGETS = $(patsubst tests/fuzz/replay_%,%,$(FUZZ_REPLAYS))
FUZZ_SECONDS ?= 60
EXTRA_DIST += tests/fuzz/standalone.c tests/fuzz/corpus tests/fuzz/dict tests/fuzz/run-fuzzers.sh \
	tests/fuzz/deep-fuzz.sh

FUZZ_CORE_SRCS = $(addprefix $(srcdir)/,$(filter %.c,$(libesock_core_la_SOURCES)))
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -DESOCK_BUILDING -I$(top_srcdir)/include -I$(top_srcdir) -I$(top_builddir)

fuzz: $(addprefix tests/fuzz/fuzz_,$(FUZZ_TARGETS))

# One rule for every target; FUZZ_EXTRA_<name> adds sources and libraries.
tests/fuzz/fuzz_%: $(srcdir)/tests/fuzz/fuzz_%.c $(FUZZ_CORE_SRCS)
	@test -n "$(FUZZ_CC)" || { echo "make fuzz needs clang: apt-get install clang" >&2; exit 1; }
	@$(MKDIR_P) tests/fuzz
	@echo "  FUZZCC   $@"
	@$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_CORE_SRCS) $(FUZZ_EXTRA_$*) $(ISAL_LIBS)

fuzz-run: fuzz
	FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(SHELL) $(srcdir)/tests/fuzz/run-fuzzers.sh $(srcdir)

clean-local: clean-fuzz
clean-fuzz:
	rm -f $(addprefix tests/fuzz/fuzz_,$(FUZZ_TARGETS))
	rm -rf tests/fuzz/runs
.PHONY: fuzz fuzz-run clean-fuzz
