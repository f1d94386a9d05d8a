# SPDX-License-Identifier: MIT
# Sourced by the tcpserver tests: ending a daemon they started, in bounded time.
# stop_by_term PID [SECONDS]: SIGTERM, then up to SECONDS (10) for it to end.  Returns
# its exit status, or 124 if it was still running (then it is killed): a daemon that
# ignores SIGTERM is a failure of its own, not a test that hangs in `wait`.
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
stop_by_term() {
	kill -TERM "$1" 2>/dev/null
	for _i in $(seq 1 $((${2:-10} * 10))); do alive "$1" || break; sleep 0.1; done
	if alive "$1"; then
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}
