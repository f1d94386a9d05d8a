#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command 2: install what is missing, build, run the whole test suite:
#   1. unit tests, fuzz-corpus replays and the tshark oracle (-Werror build)
#   2. the same under ASan + UBSan
#   3. the same under valgrind memcheck (make check-valgrind)
#   4. the portable CRC32C build (--without-isal)
#   5. every libFuzzer target for FUZZ_SECONDS (default 60) each
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
show_failures() { # $1 = build dir (distcheck's own tree included)
	find "$1/tests" "$1/tools" "$1"/esock-*/_build/sub/tests "$1"/esock-*/_build/sub/tools \
		-name '*.log' -exec grep -l -s -E '^(FAIL|ERROR)' {} + 2>/dev/null | head -n 5 |
		while read -r l; do echo "--- $l"; tail -n 40 "$l"; done
}
# stage NAME DIR TARGET [configure options]: configure (once), build, make TARGET.
stage() {
	local name=$1 dir=$2 target=$3 rc log; shift 3
	echo "=== stage $name"
	mkdir -p "$dir"
	( cd "$dir" && { [ -f Makefile ] || "$top/configure" -q --enable-werror "$@"; } &&
	  make -s -j"$jobs" && CK_FORK=no make -s -j"$jobs" "$target" ) >"$dir/stage-$name.out" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):|^fuzz |^  [a-z_]+: (stat|Done)' "$dir/stage-$name.out"
	case $target in
	check) log=$dir/test-suite.log ;;
	check-valgrind*) log=$dir/test-suite-memcheck.log ;;
	*) log="" ;;
	esac
	[ -n "$log" ] && count "$log"
	if [ $rc -ne 0 ]; then
		tail -n 40 "$dir/stage-$name.out"; show_failures "$dir"
		echo "=== stage $name: FAILED"; failed_stages+=("$name")
		[ -z "$log" ] && failed=$((failed + 1))
	else
		echo "=== stage $name: ok"
		[ -z "$log" ] && passed=$((passed + 1))
	fi
}

for s in "${stages[@]}"; do
	case $s in
	unit) stage unit "$out/default" check ;;
	san) stage sanitizers "$out/san" check --enable-sanitizers ;;
	valgrind) stage valgrind "$out/default" check-valgrind-memcheck ;;
	portable) stage portable-crc "$out/portable" check --without-isal ;;
	fuzz) FUZZ_SECONDS=${FUZZ_SECONDS:-60} stage fuzz "$out/default" fuzz-run ;;
	distcheck) stage distcheck "$out/default" distcheck ;;
	demo)
		echo "=== stage demo"
		BUILD="$out/demo" bash "$top/scripts/demo.sh" >"$out/stage-demo.out" 2>&1
		rc=$?
		grep -E "^iwping:|^DDPMODE:" "$out/stage-demo.out"
		if [ $rc -eq 0 ] && grep -q "pings validated" "$out/stage-demo.out" &&
		   grep -q "DDPMODE connected" "$out/stage-demo.out"; then
			echo "=== stage demo: ok"; passed=$((passed + 1))
		else tail -n 30 "$out/stage-demo.out"; echo "=== stage demo: FAILED (exit $rc)"
			failed_stages+=(demo); failed=$((failed + 1)); fi ;;
	faults)
		echo "=== stage faults"
		mkdir -p "$out/default"
		( cd "$out/default" && { [ -f Makefile ] || "$top/configure" -q --enable-werror; } &&
		  make -s -j"$jobs" && make -s check-faults ) >"$out/stage-faults.out" 2>&1
		rc=$?
		grep -E "^faults:|^FAIL|^SKIP|check-faults:" "$out/stage-faults.out"
		if [ $rc -eq 0 ] && grep -qx "check-faults: SKIP" "$out/stage-faults.out"; then
			echo "=== stage faults: skipped"
		elif [ $rc -eq 0 ]; then echo "=== stage faults: ok"; passed=$((passed + 1))
		else tail -n 30 "$out/stage-faults.out"; echo "=== stage faults: FAILED"
			failed_stages+=(faults); failed=$((failed + 1)); fi ;;
	interop)
		echo "=== stage interop"
		mkdir -p "$out/default"
		( cd "$out/default" && { [ -f Makefile ] || "$top/configure" -q --enable-werror; } &&
		  make -s -j"$jobs" && make -s check-interop ) >"$out/stage-interop.out" 2>&1
		rc=$?
		grep -E "agree with tshark|SKIP|interop:|siw-rig:" "$out/stage-interop.out"
		grep -qx "check-interop: SKIP" "$out/stage-interop.out" && rc=77
		if [ $rc -eq 0 ]; then echo "=== stage interop: ok"; passed=$((passed + 1))
		elif [ $rc -eq 77 ]; then echo "=== stage interop: skipped"
		else tail -n 30 "$out/stage-interop.out"; echo "=== stage interop: FAILED"
			failed_stages+=(interop); failed=$((failed + 1)); fi ;;
	*) echo "unknown stage $s"; failed_stages+=("$s") ;;
	esac
done

echo
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "tests: $passed passed, $failed failed"
[ ${#failed_stages[@]} -eq 0 ] && [ "$failed" -eq 0 ]
