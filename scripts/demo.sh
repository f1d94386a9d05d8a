#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command 1: install what is missing, build, run the main demo:
#   1. the codecs: start frames, Send / Write / Read / Terminate FPDUs, parsed
#      back from a randomly split stream and placed (options go to esock-demo);
#   2. the endpoint: iwping (rping's protocol) between two processes on
#      loopback, with RDMA Read and Write of the ping buffer, data validated;
#   3. extended sockets: an unmodified TCP program (esock-sockbench) run under
#      esock-run --ddp: its sockets speak iWARP, measured next to plain TCP.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
bash "$top/scripts/deps.sh" build
bash "$top/scripts/build.sh"
"$build/tools/esock-demo" "$@"

echo
echo "== the endpoint: iwping server and client on 127.0.0.1 (RDMA Send, Read, Write) =="
log=$(mktemp)
"$build/tools/iwping/iwping" -s -a 127.0.0.1 -p 0 -d >"$log" 2>&1 &
srv=$!
# The server may have ended already (one client, as rping's): that is no failure of the demo.
trap 'kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; rm -f "$log" "$log.ddp"' EXIT
port=""
for _ in $(seq 50); do
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log" | head -n1)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "iwping server did not start:"; cat "$log"; exit 1; }
"$build/tools/iwping/iwping" -c -a 127.0.0.1 -p "$port" -C 4 -S 64 -V -v
echo "iwping: 4 pings validated (each: Send of a buffer descriptor, RDMA Read, RDMA Write)"

echo
echo "== extended sockets: an unmodified TCP program under esock-run --ddp =="
echo "plain TCP:   $("$build/tools/esock-sockbench" bw 65536 256)   $("$build/tools/esock-sockbench" lat 64 5000)"
echo "DDPMODE:     $("$build/tools/esock-run/esock-run" --ddp --log=info "$build/tools/esock-sockbench" bw 65536 256 2>"$log.ddp")   $("$build/tools/esock-run/esock-run" --ddp "$build/tools/esock-sockbench" lat 64 5000)"
grep 'DDPMODE connected' "$log.ddp" | sed 's/^/  /'
echo "(bw: MB/s of 64 KiB writes; lat: 64-octet round trip p50 in us; both ends on one CPU)"
