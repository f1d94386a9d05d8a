#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/appinstr.sh on nginx with few requests: instructions per request in
# all three modes (DDPMODE more than plain: it frames and checks every
# message), the CSV rows carry the machine, and the functions DDPMODE adds
# are listed with the library's among them.
set -u
b=${top_builddir:-.}
[ -x "$b/tools/esock-run/esock-run" ] || { echo "SKIP: esock-run not built"; exit 77; }
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded"
	exit 77
fi
for p in valgrind cg_diff cg_annotate nginx ab; do
	command -v "$p" >/dev/null 2>&1 || { echo "SKIP: $p not installed (bash scripts/deps.sh test)"; exit 77; }
done
out=$(mktemp -d) || exit 99
trap 'rm -rf "$out"' EXIT
APPINSTR_N1=100 APPINSTR_N2=600 timeout 600 sh "$(dirname "$0")/appinstr.sh" "$out" nginx \
	>"$out/log" 2>&1 || { cat "$out/log"; echo "FAIL: appinstr.sh"; exit 1; }
fail() { echo "FAIL: $*"; cat "$out/log"; exit 1; }
per() { sed -n "s/^appinstr: nginx  $1 *\([0-9][0-9]*\) instructions per request/\1/p" "$out/log"; }
plain=$(per plain) pass=$(per pass) ddp=$(per ddp)
[ -n "$plain" ] && [ -n "$pass" ] && [ -n "$ddp" ] || fail "a mode has no figure"
[ "$plain" -gt 1000 ] || fail "plain nginx: $plain instructions per request"
[ "$ddp" -gt "$plain" ] || fail "DDPMODE $ddp not above plain $plain"
kernel=$(uname -r)
[ "$(grep -c ",$kernel,nginx,\(plain\|pass\|ddp\),[0-9]*,[0-9][0-9]*$" "$out/appinstr.csv")" = 6 ] ||
	fail "appinstr.csv: not six rows with the machine"
grep -q '^appinstr:   nginx  *+[0-9]*  .*\.c:' "$out/log" || fail "no library function listed"
echo "PASS: appinstr.sh (nginx: $plain / $pass / $ddp instructions per request)"
