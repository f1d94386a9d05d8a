#!/bin/sh
# SPDX-License-Identifier: MIT
# Test driver for `make check`: automake's test-driver with a time limit per test.
#   driver.sh TEST-DRIVER [test-driver options] -- COMMAND...
# A test that hangs is stopped after ESOCK_TEST_TIMEOUT seconds (default 600; 0 = no
# limit): `timeout` signals the test's whole process group (TERM, KILL 10 s later),
# the test counts as failed and its log says so.  Every log ends with the test's
# wall time ("# elapsed: N s"), so a suite run can name its slowest tests.
set -u
driver=$1
shift
limit=${ESOCK_TEST_TIMEOUT:-600}
log="" opts=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	[ "$1" = --log-file ] && log=$2
	opts="$opts $1"
	shift
done
[ $# -gt 0 ] && shift # the "--"
start=$(date +%s)
# (From a terminal, the test stays in the terminal's foreground process group, where a
# program that touches the terminal is not stopped: then only the test's own process is
# signalled at the limit.)
fg=
[ -t 0 ] && fg=--foreground
if [ "$limit" -gt 0 ] 2>/dev/null; then
	# shellcheck disable=SC2086 # the options are single words by automake's making
	$SHELL "$driver" $opts -- timeout $fg -k 10 "$limit" "$@"
else
	# shellcheck disable=SC2086
	$SHELL "$driver" $opts -- "$@"
fi
rc=$?
took=$(($(date +%s) - start))
if [ -n "$log" ] && [ -f "$log" ]; then
	[ "$limit" -gt 0 ] 2>/dev/null && [ "$took" -ge "$limit" ] &&
		echo "driver: stopped after the time limit of $limit s (ESOCK_TEST_TIMEOUT)" >>"$log"
	echo "# elapsed: $took s" >>"$log"
fi
exit $rc
