#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# DDPMODE sockets on the verbs backend, in the siw guest: plain-echo (plain sockets
# only) as an unmodified program under esock-run (--ddp --backend=B), server and client each on
# the verbs backend (kernel siw through rdma-core) or the user-level one, the server
# waiting in poll or epoll; 1 B to 4 MiB echoed, every octet checked
# (jobs/verbs-sockets.sh).  Two cases with a slow server (8 receives, a read every 2 ms) and a
# client that writes without bound check the flow control (credits), three more with a slow
# client too (credits both ways, the server waiting in poll, epoll, edge-triggered epoll);
# three run sock-api-ops
# (the extended calls: RDMA Read 1 MiB, RDMA Write 512 KiB, Send), two a client that waits
# in epoll with its socket added before connect, two Debian's socat as the server on the
# verbs backend.  Prints the matrix; fails when a case fails or a side's connection was not
# on the backend asked for (each side's log says).
#   verbs-sockets.sh BUILD_DIR [OUTDIR]
# Exits 77 (skip) without the verbs backend or the rig.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/interop/verbs-part.sh
. "$here/verbs-part.sh" verbs-sockets "verbs sockets" "$@"
part_run verbs-sockets.sh "$build/tests/interop/plain-echo=/plain-echo $build/.libs/libesock.so=/libesock.so
	$build/tests/interop/.libs/sock-api-ops=/sock-api-ops
	$build/tools/esock-run/esock-run=/esock-run"
fail=0 n=0
printf '%-24s %-7s %-7s %s\n' case server client result
while read -r _ name srv cli rc; do
	rc=${rc%$'\r'} n=$((n + 1)) verdict=ok
	[ "$rc" = 0 ] || verdict="FAILED (exit $rc)"
	for side in server client; do
		be=$srv
		[ $side = client ] && be=$cli
		be=${be##*:} # (auto:EXPECTED: run under auto, EXPECTED is where it must go)
		want="DDPMODE connected (peer esock"
		[ "$be" = verbs ] && want="DDPMODE connected on the verbs backend (peer esock"
		grep -q "$want" "$out/$name-$side.log" 2>/dev/null || verdict="FAILED ($side not on $be)"
	done
	if [ "${name%%-*}" = api ]; then
		grep -q "the server checked the Write: ok" "$out/$name-client.log" 2>/dev/null &&
			grep -q "RDMA Read of 1048576 octets: 0 wrong" "$out/$name-client.log" &&
			grep -q " 0 octets wrong" "$out/$name-server.log" ||
			verdict="FAILED (the extended calls' data)"
	elif [ "$(grep -c 'echoed and checked' "$out/$name-client.log" 2>/dev/null)" != 5 ]; then
		verdict="FAILED (not every size came back)"
	fi
	[ "$verdict" = ok ] || fail=1
	printf '%-24s %-7s %-7s %s\n' "$name" "$srv" "$cli" "$verdict"
	[ "$verdict" = ok ] || for side in server client; do # (what a failure said: run-interop shows it)
		tail -n 2 "$out/$name-$side.log" 2>/dev/null | sed "s/^/  failed $name, $side: /"
	done
	if [ -n "${ESOCK_MATRIX:-}" ]; then # (a row of check-interop's matrix: run-interop.sh)
		crc=on # (a user-level side asks for CRC, siw echoes it; siw to siw: none asks)
		[ "${srv##*:}/${cli##*:}" = verbs/verbs ] && crc=off
		op="stream (Sends)" sizes=1B-4MiB srv_prog="plain-echo socket"
		[ "${name%%-*}" = slow ] && op="stream, slow reader (credits)"
		[ "${name%%-*}" = slowboth ] && op="stream, both slow (credits both ways)"
		[ "${name%%-*}" = epollclient ] && op="stream, client in epoll (added before connect)"
		[ "${name%%-*}" = socat ] && srv_prog="socat (Debian, echo: PIPE)"
		[ "${name%%-*}" = api ] && op="extended calls: RDMA Read, RDMA Write, Send" sizes=4B-1MiB
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$srv_prog ($srv, ${name##*-})" "plain-echo socket ($cli)" \
			"$op" "$crc" "$sizes" "$([ "$verdict" = ok ] && echo PASS || echo FAIL)" >>"$ESOCK_MATRIX"
	fi
done < <(grep -a '^RIG-CASE ' "$out/console.log")
[ "$n" -eq 18 ] || { say "verbs sockets: $n of 18 cases ran"; fail=1; }
exit $fail
