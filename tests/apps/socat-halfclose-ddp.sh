#!/bin/sh
# SPDX-License-Identifier: MIT
# A request/response pattern many programs use: the client sends, half-closes
# (shutdown(SHUT_WR), socat's default at end of input) and reads the answer
# to its end.  Plain TCP first, then DDPMODE on both ends.  RDMA has no
# half-close; between esock peers libesock keeps TCP's (a FIN between FPDUs
# ends one direction only), so the whole echo must come back to the client.
# socat -t 60 and 1 MiB: with -t 10 and 5 MiB, plain socat itself (no esock)
# once returned only 4.6 MiB on a loaded CI machine (its linger timer expired).
. "$(dirname "$0")/common.sh"
need socat sha256sum

random_file "$tmp/in" 1024

# echo_run NAME WRAP...: a socat PIPE echo server and a client, both run by WRAP.
echo_run() {
	name=$1
	shift
	port=$(free_port)
	start "$name-server" "$@" socat -t 60 TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr PIPE
	wait_listen "$port" "$srv_pid"
	$limit "$@" socat -t 60 - TCP:127.0.0.1:"$port" <"$tmp/in" >"$tmp/$name.out" \
		2>"$tmp/$name-client.err" || fail "$name: client"
	[ "$(sum "$tmp/$name.out")" = "$(sum "$tmp/in")" ] ||
		fail "$name: sha256 differs ($(wc -c <"$tmp/$name.out") of 1048576 octets came back)"
	# The echo server normally ends by itself; plain socat's PIPE server was seen to
	# linger past 40 s on a loaded machine (no esock involved), so that is not judged.
	wait_exit "$srv_pid" 15 || echo "note: $name: the socat server lingered; stopped"
}

echo_run plain env
echo_run ddp "$esock_run" --ddp --log=info,"$tmp/ddp.esock"
echo "socat half-close: the whole echo came back in DDPMODE"
