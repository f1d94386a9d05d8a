#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The TCP Server's cluster channel with a kernel iWARP end, in the siw guest
# (jobs/tcpserver-cluster.sh): tcpserverd (-l on the guest's siw address) and a host,
# each on the verbs backend (kernel siw through rdma-core) or the user-level one; per case
# 200 synchronous calls and 1 MB echoed through a listener of tcpserverd's, every octet
# compared.  Fails when a case fails or a side was not on the backend asked for (each
# side's log says which backend its objects got).
#   tcpserver-cluster.sh BUILD_DIR [OUTDIR]
# Exits 77 (skip) without the verbs backend or the rig.  Each case leaves a capture for
# ddpdump in OUTDIR.  Part of check-interop (run-interop.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/interop/verbs-part.sh
. "$here/verbs-part.sh" tcpserver-cluster "TCP Server cluster channel" "$@"
# (made every time: a test program is not remade by `make`, and a stale one tests old code)
make -C "$build" tests/tcpserver/tsp-host >/dev/null ||
	{ say "FAIL: cannot build tsp-host"; exit 1; }
part_run tcpserver-cluster.sh "$build/tcpserver/tcpserverd=/tcpserverd $build/tests/tcpserver/tsp-host=/tsp-host"
fail=0 n=0
printf '%-24s %-10s %-7s %s\n' case tcpserverd host result
while read -r _ name tsd host rc; do
	rc=${rc%$'\r'} n=$((n + 1)) verdict=ok
	[ "$rc" = 0 ] || verdict="FAILED (exit $rc)"
	grep -q "backend: $tsd" "$out/$name-server.log" 2>/dev/null || verdict="FAILED (tcpserverd not on $tsd)"
	grep -q "backend: $host" "$out/$name-client.log" 2>/dev/null || verdict="FAILED (the host not on $host)"
	grep -q "^calls: 200 getsockname" "$out/$name-client.log" 2>/dev/null &&
		grep -q "^plain: 1000000 octets echoed" "$out/$name-client.log" ||
		verdict="FAILED (calls or echo incomplete)"
	[ "$verdict" = ok ] || fail=1
	printf '%-24s %-10s %-7s %s\n' "$name" "$tsd" "$host" "$verdict"
	if [ -n "${ESOCK_MATRIX:-}" ]; then # (a row of check-interop's matrix: run-interop.sh)
		crc=on # (a user-level side asks for CRC, siw echoes it; siw to siw: none asks)
		[ "$tsd/$host" = verbs/verbs ] && crc=off
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "tcpserverd -l ($tsd)" "tsp-host ($host)" \
			"TCP Server channel: RDMA Write/Read, Send" "$crc" "200 calls, 1 MB" \
			"$([ "$verdict" = ok ] && echo PASS || echo FAIL)" >>"$ESOCK_MATRIX"
	fi
done < <(grep -a '^RIG-CASE ' "$out/console.log")
[ "$n" -eq 3 ] || { say "TCP Server cluster channel: $n of 3 cases ran"; fail=1; }
# A case run twice: its first run's link broke on an RDMA Read that kernel siw left
# unanswered for 5 s (jobs/tcpserver-cluster.sh); the capture of that run tells whose Read.
while read -r _ name rc; do
	fpdus=$("$build/tools/ddpdump/ddpdump" -r "$out/$name-try1.pcap" 2>/dev/null)
	rq=$(grep -c "RDMA Read Request |" <<<"$fpdus") rs=$(grep -c "RDMA Read Response |" <<<"$fpdus")
	say "TCP Server cluster channel: $name ran twice: its first run ended (exit ${rc%$'\r'}) on a Read unanswered for 5 s; that run's capture: $rq Read Requests, $rs Read Responses (kernel siw as shipped, docs/interop.md)"
done < <(grep -a '^RIG-RETRY ' "$out/console.log")
exit $fail
