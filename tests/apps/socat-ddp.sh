#!/bin/sh
# SPDX-License-Identifier: MIT
# DDPMODE on both ends with socat (it waits with select(), interposed):
#   1. a 5 MiB random file, client to a listener that writes it out: same sha256
#   2. the same client towards a plain listener: what arrives starts with an
#      MPA Request ("MPA ID Req Frame"), so iWARP framing is really on the wire
#   3. an echo (socat PIPE) of the file, both directions at once; the client
#      does not half-close (shut-none; see socat-halfclose-ddp.sh for that)
. "$(dirname "$0")/common.sh"
need socat sha256sum

random_file "$tmp/in" 5120
want=$(sum "$tmp/in")

# 1. one way, both ends in DDPMODE.
port=$(free_port)
start sink "$esock_run" --ddp="$port" --log=info,"$tmp/sink.esock" \
	socat -u TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr OPEN:"$tmp/out",creat,trunc
wait_listen "$port" "$srv_pid"
$limit "$esock_run" --ddp="$port" --log=info,"$tmp/send.esock" \
	socat -u OPEN:"$tmp/in" TCP:127.0.0.1:"$port" 2>"$tmp/send.err" || fail "sending socat"
wait_exit "$srv_pid" 40 || fail "receiving socat"
ddp_engaged "$tmp/sink.esock" "$tmp/send.esock"
[ "$(sum "$tmp/out")" = "$want" ] || fail "one way: sha256 differs ($(wc -c <"$tmp/out") octets arrived)"

# 2. DDPMODE client, plain listener: the MPA Request arrives as data.  The
# client waits for a reply that never comes; its MPA timeout ends it.
port=$(free_port)
start plain-sink socat -u TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr OPEN:"$tmp/raw",creat,trunc
wait_listen "$port" "$srv_pid"
ESOCK_MPA_TIMEOUT_MS=2000 $limit "$esock_run" --ddp="$port" \
	socat -u OPEN:"$tmp/in" TCP:127.0.0.1:"$port" 2>"$tmp/mpa-client.err" &&
	fail "a DDPMODE client connected to a plain listener"
wait_exit "$srv_pid" 40 || fail "wire check server"
[ "$(head -c 16 "$tmp/raw")" = "MPA ID Req Frame" ] ||
	fail "a DDPMODE client sent no MPA Request ($(head -c 16 "$tmp/raw" | od -An -c))"

# 3. echo: the server returns what it reads while the client is still sending.
# The client stops 2 s after its input ended and the echo stopped (-t 2).
port=$(free_port)
start echo "$esock_run" --ddp="$port" --log=info,"$tmp/echo-server.esock" \
	socat -t 10 TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr PIPE
wait_listen "$port" "$srv_pid"
$limit "$esock_run" --ddp="$port" --log=info,"$tmp/echo-client.esock" \
	socat -t 2 - TCP:127.0.0.1:"$port",shut-none <"$tmp/in" >"$tmp/echo" 2>"$tmp/echo-client.err" ||
	fail "echo client"
wait_exit "$srv_pid" 40 || fail "echo server"
ddp_engaged "$tmp/echo-server.esock" "$tmp/echo-client.esock"
[ "$(sum "$tmp/echo")" = "$want" ] || fail "echo: sha256 differs ($(wc -c <"$tmp/echo") octets came back)"
echo "socat: 5 MiB one way and echoed in DDPMODE, MPA Request on the wire: ok"
