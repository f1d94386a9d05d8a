#!/bin/sh
# SPDX-License-Identifier: MIT
# A plain TCP program (esock-sockbench) under the preload: as it is, passed
# through, and with ESOCK_DDPMODE=all, where the log must show its sockets
# connected in DDPMODE and both runs must move every octet (the program checks
# its counts and exits non-zero otherwise).  Then sockbench.sh's table, for
# form only: no timing is judged.
set -u
b=${top_builddir:-.}
bin=$b/tools/esock-sockbench lib=$b/.libs/libesock.so
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
# A sanitizer build's libesock.so cannot be preloaded into an uninstrumented
# program (the ASan runtime must come first); check_sock covers the library there.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded"
	exit 77
fi
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
fail=0
for t in "lat 64 200" "lat 70000 50" "bw 65536 16" "bw 1000 4"; do
	set -- $t
	out=$(LD_PRELOAD=$lib "$bin" "$1" "$2" "$3") || { echo "FAIL: preloaded $t"; fail=1; }
	echo "pass-through $t: $out"
	out=$(ESOCK_LOG=info ESOCK_DDPMODE=all LD_PRELOAD=$lib "$bin" "$1" "$2" "$3" 2>"$log") ||
		{ echo "FAIL: DDPMODE $t"; cat "$log"; fail=1; }
	echo "DDPMODE $t: $out"
	n=$(grep -c 'DDPMODE connected' "$log")
	[ "$n" -eq 2 ] || { echo "FAIL: DDPMODE $t: $n sockets connected in DDPMODE (want 2)"; cat "$log"; fail=1; }
done
top_builddir=$b sh "${srcdir:-.}/tools/sockbench.sh" --iters 200 --mb 8 --lat-sizes 64 --bw-sizes 65536 \
	>"$log" 2>&1 || { echo "FAIL: sockbench.sh"; fail=1; }
cat "$log"
grep -Eq '^bw +65536 +same( +[0-9.]+){5}$' "$log" || { echo "FAIL: no bw row"; fail=1; }
[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
