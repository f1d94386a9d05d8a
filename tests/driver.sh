#!/bin/sh
# SPDX-License-Identifier: MIT
# The test driver of `make check` (automake's parallel-tests protocol): runs one test
# with a time limit, writes its log and its .trs, prints its result line.
#   driver.sh --test-name NAME --log-file LOG --trs-file TRS [--color-tests yes|no]
#             [--expect-failure yes|no] [--enable-hard-errors yes|no] -- COMMAND...
# A test that hangs is stopped after ESOCK_TEST_TIMEOUT seconds (default 600; 0 = no
# limit): `timeout` signals the test's whole process group (TERM, KILL 10 s later), the
# test fails and its log says so.  Every log ends with the test's wall time
# ("# elapsed: N s"), so that a suite run can name its slowest tests.
# Exit status 0 passes, 77 skips, 99 is a hard error, anything else fails.
set -u
name="" log="" trs="" color=no xfail=no hard=yes
while [ $# -gt 0 ]; do
	case $1 in
	--test-name) name=$2; shift ;;
	--log-file) log=$2; shift ;;
	--trs-file) trs=$2; shift ;;
	--color-tests) color=$2; shift ;;
	--expect-failure) xfail=$2; shift ;;
	--enable-hard-errors) hard=$2; shift ;;
	--) shift; break ;;
	*) echo "driver.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$name" ] && [ -n "$log" ] && [ -n "$trs" ] && [ $# -gt 0 ] ||
	{ echo "driver.sh: --test-name, --log-file, --trs-file and a command are needed" >&2; exit 2; }
limit=${ESOCK_TEST_TIMEOUT:-600}
[ "$limit" -ge 0 ] 2>/dev/null || limit=600

start=$(date +%s)
# (From a terminal the test stays in the terminal's foreground process group, where a
# program that touches the terminal is not stopped: then only its own process is
# signalled at the limit.)
if [ "$limit" -gt 0 ]; then
	fg=
	[ -t 0 ] && fg=--foreground
	timeout $fg -k 10 "$limit" "$@" >"$log" 2>&1
else
	"$@" >"$log" 2>&1
fi
rc=$?
took=$(($(date +%s) - start))
[ "$limit" -gt 0 ] && [ "$took" -ge "$limit" ] && [ $rc -ne 0 ] &&
	echo "driver: stopped at the time limit of $limit s (ESOCK_TEST_TIMEOUT)" >>"$log"
echo "# elapsed: $took s" >>"$log"

# result, whether `make recheck` runs it again, whether its log goes into the suite's
case $rc:$xfail in
0:yes) res=XPASS again=yes copy=yes ;;
0:*) res=PASS again=no copy=no ;;
77:*) res=SKIP again=no copy=yes ;;
99:*) if [ "$hard" = no ]; then
		if [ "$xfail" = yes ]; then res=XFAIL again=no; else res=FAIL again=yes; fi
	else res=ERROR again=yes; fi
	copy=yes ;;
*:yes) res=XFAIL again=no copy=yes ;;
*) res=FAIL again=yes copy=yes ;;
esac
printf ':test-result: %s\n:global-test-result: %s\n:recheck: %s\n:copy-in-global-log: %s\n' \
	"$res" "$res" "$again" "$copy" >"$trs"
if [ "$color" = yes ]; then
	case $res in
	PASS) c='\033[0;32m' ;; SKIP) c='\033[1;34m' ;; XFAIL) c='\033[1;32m' ;;
	ERROR) c='\033[0;35m' ;; *) c='\033[0;31m' ;;
	esac
	printf "${c}%s\033[m: %s\n" "$res" "$name"
else
	echo "$res: $name"
fi
# (the status is in the .trs; a non-zero one here would stop make)
exit 0
