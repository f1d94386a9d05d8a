#!/bin/sh
# SPDX-License-Identifier: MIT
# The endpoint tests again with the engine busy-polling (ESOCK_POLL=spin) and
# pinned (ESOCK_ENGINE_CPU=0), and with logging on at the trace level into a
# file (which must then name connections and the engine mode).
set -u
b=${top_builddir:-.}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0
for t in check_ep_ops check_ep_proc; do
	ESOCK_POLL=spin ESOCK_ENGINE_CPU=0 CK_FORK=no "$b/tests/integration/$t" >/dev/null 2>&1 ||
		{ echo "FAIL: $t with ESOCK_POLL=spin ESOCK_ENGINE_CPU=0"; fail=1; }
done
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
ESOCK_LOG="trace,$log" ESOCK_POLL=spin CK_FORK=no "$b/tests/integration/check_ep_sem" >"$out" 2>&1 ||
	{ echo "FAIL: check_ep_sem with ESOCK_LOG=trace"; grep -E ':[FE]:' "$out"; fail=1; }
grep -q "engine: started (busy-poll" "$log" || { echo "FAIL: no engine start line in the log"; fail=1; }
grep -q "^.*\[qp [0-9]* fd [0-9]*\] connected: MPA rev 2" "$log" ||
	{ echo "FAIL: no connection line in the log"; fail=1; }
[ $fail -eq 0 ] && echo "engine modes: ok"
exit $fail
