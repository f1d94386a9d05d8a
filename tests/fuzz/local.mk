# Fuzz targets.  Each target tests/fuzz/fuzz_<name>.c defines
# LLVMFuzzerTestOneInput.  `make check` builds tests/fuzz/replay_<name> (with
# standalone.c) and replays tests/fuzz/corpus/<name>/; `make fuzz` builds
# tests/fuzz/fuzz_<name> with clang -fsanitize=fuzzer,address,undefined;
# `make fuzz-run FUZZ_SECONDS=60` runs each for a bounded time.
# Layer fragments (mpa/*.mk, ddp/local.mk, rdmap/local.mk) append to
# FUZZ_TARGETS and declare their replay programs.
FUZZ_SECONDS ?= 60
EXTRA_DIST += tests/fuzz/standalone.c tests/fuzz/corpus tests/fuzz/dict tests/fuzz/run-fuzzers.sh

FUZZ_CORE_SRCS = $(addprefix $(srcdir)/,$(filter %.c,$(libesock_core_la_SOURCES)))
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -DESOCK_BUILDING -I$(top_srcdir)/include -I$(top_srcdir) -I$(top_builddir)

fuzz: $(FUZZ_CORE_SRCS)
	@test -n "$(FUZZ_CC)" || { echo "make fuzz needs clang: apt-get install clang" >&2; exit 1; }
	@$(MKDIR_P) tests/fuzz
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "  FUZZCC   tests/fuzz/fuzz_$$t"; \
	  $(FUZZ_CC) $(FUZZ_FLAGS) -o tests/fuzz/fuzz_$$t $(srcdir)/tests/fuzz/fuzz_$$t.c \
	    $(FUZZ_CORE_SRCS) $(ISAL_LIBS); \
	done

fuzz-run: fuzz
	FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(SHELL) $(srcdir)/tests/fuzz/run-fuzzers.sh $(srcdir)

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/fuzz_* tests/fuzz/work
.PHONY: fuzz fuzz-run clean-fuzz
