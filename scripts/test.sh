#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command 2: install what is missing, build, run the whole test suite:
#   1. unit tests, fuzz-corpus replays and the tshark oracle (-Werror build)
#   2. the same under ASan + UBSan
#   3. the test programs under valgrind memcheck (make check-valgrind)
#   4. the test programs in the portable CRC32C build (--without-isal)
#   5. every libFuzzer target for FUZZ_SECONDS (default 60) each, one per CPU at a time
#   6. make distcheck
#   7. demo: README command 1 (scripts/demo.sh) must run through and exit 0
#   7b. faults (make check-faults): DDPMODE transfers between two network
#      namespaces with packet loss, MSS 536 and either end killed
#   8. interop (make check-interop): kernel siw in a qemu guest (rping, CRC
#      on/off); ddpdump must decode the captures as tshark does; our iwping
#      against rping both ways; the perftest anchor next to esock-bench
#      (skipped, with a reason, where the guest cannot be prepared or run)
# Stages can be picked: test.sh unit san valgrind portable fuzz distcheck demo faults interop
# Ends with one line "N passed, N failed" counting test programs over all stages.
# Every test has a time limit (tests/driver.sh, ESOCK_TEST_TIMEOUT); ESOCK_TEST_BUDGET
# (seconds) bounds the whole run (docs/testing.md).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${BUILD_ROOT:-$top/build-test}
jobs=$(nproc)
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(unit san valgrind portable fuzz distcheck demo faults interop)

bash "$top/scripts/deps.sh" test || { echo "dependency installation failed"; exit 1; }
cd "$top" && { [ -x configure ] || autoreconf -fi >/dev/null; } || exit 1
mkdir -p "$out"

# The oracle test must not skip here: tshark was just installed.
export ESOCK_REQUIRE_TSHARK=1
# Root here: the live-capture test must run, not skip.
[ "$(id -u)" -eq 0 ] && export ESOCK_REQUIRE_LIVE=1

passed=0 failed=0 failed_stages=()
count() { # $1 = test-suite log: add its automake counts
	local n k
	for k in PASS FAIL ERROR XPASS; do
		n=$(sed -n "s/^# $k: *//p" "$1" 2>/dev/null | head -n1)
		if [ "$k" = PASS ]; then passed=$((passed + ${n:-0})); else failed=$((failed + ${n:-0})); fi
	done
}
show_failures() { # $1 = build dir (distcheck's own tree included), $2 = stage
	# (automake's verdict is in each test's .trs, a Check program's log has no FAIL line;
	# only this stage's)
	find "$1/tests" "$1/tools" "$1"/esock-*/_build/sub/tests "$1"/esock-*/_build/sub/tools \
		-name '*.trs' -newer "$1/stage-$2.start" -exec grep -l -s -E '^:test-result: (FAIL|ERROR|XPASS)' {} + 2>/dev/null |
		head -n 5 | while read -r t; do
			l=${t%.trs}.log
			echo "--- $l"; grep -E ':[FE]:' "$l" | head -n 20; tail -n 40 "$l"
		done
}
# The slowest tests of a suite run in DIR (their logs end with "# elapsed: N s").
slowest() {
	find "$1/tests" "$1/tools" -name '*.log' -newer "$1/stage-$2.start" 2>/dev/null |
		while read -r l; do
			t=$(sed -n 's/^# elapsed: \([0-9]*\) s$/\1/p' "$l" | tail -n 1)
			[ -n "$t" ] && echo "$t ${l#"$1"/}"
		done | sort -rn | head -n 5 | awk '{ printf "%s %s s %s", (NR > 1 ? "," : "slowest:"), $1, $2 } END { if (NR) print "" }'
}
# build_and_make DIR TARGET N [N make arguments] [configure options]: configure DIR (once),
# build, make TARGET.
build_and_make() {
	local dir=$1 target=$2 n=$3; shift 3
	local margs=("${@:1:n}"); shift "$n"
	cd "$dir" && { [ -f Makefile ] || "$top/configure" -q --enable-werror "$@"; } &&
		make -s -j"$jobs" && CK_FORK=no make -s -j"$jobs" "$target" "${margs[@]}"
}
export -f build_and_make
export top jobs
# run_bounded OUT COMMAND...: COMMAND's output to OUT.  With ESOCK_TEST_BUDGET (seconds for
# the whole run; CI sets it below its own limit), COMMAND gets what is left of it: a stage
# that would overrun is stopped and fails, and the stages after it fail as not run, so that
# the run always ends with its summary.
budget=${ESOCK_TEST_BUDGET:-0}
run_bounded() {
	local out=$1 left rc; shift
	if [ "$budget" -gt 0 ] 2>/dev/null; then
		left=$((budget - SECONDS))
		if [ "$left" -le 0 ]; then
			echo "not run: the run's time budget (ESOCK_TEST_BUDGET=$budget s) is spent" >"$out"
			return 125
		fi
		timeout -k 30 "$left" bash -c '"$@"' _ "$@" >"$out" 2>&1 </dev/null
		rc=$?
		[ $rc -eq 124 ] && echo "stopped: the run's time budget (ESOCK_TEST_BUDGET=$budget s) ran out" >>"$out"
		return $rc
	fi
	"$@" >"$out" 2>&1
}
# stage NAME DIR TARGET [configure options]: configure (once), build, make TARGET with the
# make arguments in the array make_args (if set).
stage() {
	local name=$1 dir=$2 target=$3 rc log t0=$SECONDS; shift 3
	echo "=== stage $name"
	mkdir -p "$dir"
	touch "$dir/stage-$name.start"
	run_bounded "$dir/stage-$name.out" build_and_make "$dir" "$target" ${#make_args[@]} "${make_args[@]}" "$@"
	rc=$?
	make_args=()
	slowest "$dir" "$name"
	grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):|^fuzz |^  [a-z_]+: (stat|Done)' "$dir/stage-$name.out"
	case $target in
	check) log=$dir/test-suite.log ;;
	check-valgrind*) log=$dir/test-suite-memcheck.log ;;
	*) log="" ;;
	esac
	# (a suite log from before this stage, or none, counts for nothing: the stage then
	# counts as one test, failed or passed)
	[ -n "$log" ] && { [ "$log" -nt "$dir/stage-$name.start" ] || log=""; }
	[ -n "$log" ] && count "$log"
	if [ $rc -ne 0 ]; then
		tail -n 40 "$dir/stage-$name.out"; show_failures "$dir" "$name"
		echo "=== stage $name: FAILED ($((SECONDS - t0)) s)"; failed_stages+=("$name")
		[ -z "$log" ] && failed=$((failed + 1))
	else
		echo "=== stage $name: ok ($((SECONDS - t0)) s)"
		[ -z "$log" ] && passed=$((passed + 1))
	fi
}

# verdict NAME RC OUTPUT: the end of a stage that is one test (demo, faults, interop), begun
# at $t0: exit 0 passed, 77 skipped, anything else failed (with the tail of its output).
verdict() {
	if [ "$2" -eq 0 ]; then
		echo "=== stage $1: ok ($((SECONDS - t0)) s)"; passed=$((passed + 1))
	elif [ "$2" -eq 77 ]; then
		echo "=== stage $1: skipped"
	else
		tail -n 30 "$3"; echo "=== stage $1: FAILED (exit $2, $((SECONDS - t0)) s)"
		failed_stages+=("$1"); failed=$((failed + 1))
	fi
}

make_args=()
for s in "${stages[@]}"; do
	case $s in
	unit) stage unit "$out/default" check ;;
	san) stage sanitizers "$out/san" check --enable-sanitizers ;;
	valgrind)
		# The test programs under memcheck (the shell tests never run under it: they
		# ran in the unit stage), with room for memcheck's slowdown.
		make_args=('TESTS=$(TEST_PROGS) $(FUZZ_REPLAYS)' ESOCK_TEST_TIMEOUT=1800)
		stage valgrind "$out/default" check-valgrind-memcheck ;;
	portable)
		# Only the CRC32C implementation differs: the programs that compute and check it
		# (vectors, codecs, oracle, replays, endpoints with CRC on) run; the shell tests
		# of whole applications ran in the unit stage.
		make_args=('TESTS=$(TEST_PROGS) $(FUZZ_REPLAYS)')
		stage portable-crc "$out/portable" check --without-isal ;;
	fuzz) FUZZ_SECONDS=${FUZZ_SECONDS:-60} stage fuzz "$out/default" fuzz-run ;;
	distcheck) stage distcheck "$out/default" distcheck ;;
	demo)
		t0=$SECONDS
		echo "=== stage demo"
		run_bounded "$out/stage-demo.out" env BUILD="$out/demo" bash "$top/scripts/demo.sh"
		rc=$?
		grep -E "^iwping:|^DDPMODE:" "$out/stage-demo.out"
		# (README command 1 must run through: no skip, and both of its proofs printed)
		{ grep -q "pings validated" "$out/stage-demo.out" &&
			grep -q "DDPMODE connected" "$out/stage-demo.out"; } || [ $rc -ne 0 ] || rc=1
		[ $rc -eq 77 ] && rc=1
		verdict demo $rc "$out/stage-demo.out" ;;
	faults)
		t0=$SECONDS
		echo "=== stage faults"
		mkdir -p "$out/default"
		run_bounded "$out/stage-faults.out" build_and_make "$out/default" check-faults 0
		rc=$?
		grep -E "^faults:|^FAIL|^SKIP|check-faults:" "$out/stage-faults.out"
		[ $rc -eq 0 ] && grep -qx "check-faults: SKIP" "$out/stage-faults.out" && rc=77
		verdict faults $rc "$out/stage-faults.out" ;;
	interop)
		t0=$SECONDS
		echo "=== stage interop"
		mkdir -p "$out/default"
		run_bounded "$out/stage-interop.out" build_and_make "$out/default" check-interop 0
		rc=$?
		grep -E "agree with tshark|SKIP|interop:|siw-rig:" "$out/stage-interop.out"
		grep -qx "check-interop: SKIP" "$out/stage-interop.out" && rc=77
		verdict interop $rc "$out/stage-interop.out" ;;
	*) echo "unknown stage $s"; failed_stages+=("$s") ;;
	esac
done

echo
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "tests: $passed passed, $failed failed ($SECONDS s)"
[ ${#failed_stages[@]} -eq 0 ] && [ "$failed" -eq 0 ]
