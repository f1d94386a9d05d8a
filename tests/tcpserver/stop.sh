# SPDX-License-Identifier: MIT
# Sourced by the tcpserver tests: waiting for what a program they started writes, and
# ending a daemon they started, in bounded time.
# wait_file FILE: up to 5 s for FILE to hold something; 1 if it never does.
wait_file() { for _w in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
# stop_by_term PID [SECONDS]: SIGTERM, then waits up to SECONDS (10) for it to end.  Returns
# its exit status, or 124 if it was still running (then it is killed): a daemon that
# ignores SIGTERM is a failure of its own, not a test that hangs in `wait`.
# (The shell's own `wait` tells when it ends: a pid looked up in /proc can be another
# process's by then.  Until the wait returns, the pid is still the daemon's.)
# Where PID is (for the log): each thread's state and kernel stack; its user stacks if
# gdb is here.
where_is() {
	echo "stop_by_term: pid $1 ($(cat "/proc/$1/comm" 2>/dev/null)) still runs $2 s after SIGTERM:"
	for t in /proc/"$1"/task/*; do
		[ -e "$t" ] || continue
		echo "  task ${t##*/}: $(grep -E '^State' "$t/status" 2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/    /' "$t/stack" 2>/dev/null | head -n 20
	done
	command -v gdb >/dev/null &&
		timeout 60 gdb -p "$1" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' | head -n 60
}
stop_by_term() {
	_mark=$(mktemp -d) || return 99
	kill -TERM "$1" 2>/dev/null
	# (the watchdog: if the daemon has not ended by the limit, its state, a mark, SIGKILL;
	# it looks for the end every 0.1 s, so nothing of it outlives the wait)
	(
		for _i in $(seq 1 $((${2:-10} * 10))); do
			[ -e "$_mark/ended" ] && exit 0
			sleep 0.1
		done
		where_is "$1" "${2:-10}"
		: >"$_mark/late"
		kill -KILL "$1" 2>/dev/null
	) &
	_dog=$!
	wait "$1"
	_rc=$?
	: >"$_mark/ended"
	wait "$_dog"
	[ -e "$_mark/late" ] && _rc=124
	rm -rf "$_mark"
	return $_rc
}
