# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the loopback tests: port_of LOG PID prints the port a server started in the
# background (PID) said it listens on ("listening on port N" in LOG), or nothing if it
# ended or said nothing within 30 s (under valgrind on a loaded machine a server starts
# slowly; without its port a client would connect to port 0 and be refused).
port_of() {
	po_=
	for _ in $(seq 300); do
		po_=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$1" | head -n1)
		[ -n "$po_" ] && break
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	echo "$po_"
}
