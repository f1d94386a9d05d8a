#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every operation across the two backends, in the siw guest: tests/interop/op-matrix
# (3 QPs at once; per QP and size a Send gathered from 2 SGEs into a receive
# scattered over 2, an RDMA Write gathered from 2 SGEs, an RDMA Read; 0 B, 1 B,
# 4093 B, 64 KiB, and 1 MiB and 16 MiB on the first QP; every octet checked) with
# server and client each on the user-level or the verbs backend (kernel siw),
# siw as shipped and siw asking for CRC (no 0-octet Reads towards them: kpatch/linux
# 0006), and siw with kpatch/linux's series (every Read) (jobs/backend-ops.sh); then
# short-cross (256 RDMA Writes of 24 octets across a page, on the verbs backend, siw as shipped
# and patched: kpatch/linux 0007); esock-bench with its client on one backend and its server
# on the other, both ways.
# Prints the matrix; fails when a case fails or a side ran on another backend than asked.
#   backend-ops.sh BUILD_DIR [OUTDIR]
# Exits 77 (skip) without the verbs backend or the rig.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/interop/verbs-part.sh
. "$here/verbs-part.sh" backend-ops "backend ops" "$@"
part_run backend-ops.sh "$build/tests/interop/op-matrix=/op-matrix $build/tools/esock-bench=/esock-bench
$build/tests/interop/short-cross=/short-cross"
fail=0 n=0
# matrix_row SERVER CLIENT OPERATIONS CRC SIZES: a row of check-interop's matrix (run-interop.sh)
# for $verdict, when one is asked for.
matrix_row() {
	[ -n "${ESOCK_MATRIX:-}" ] || return 0
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$([ "$verdict" = ok ] && echo PASS || echo FAIL)" >>"$ESOCK_MATRIX"
}
printf '%-22s %-8s %-7s %-7s %s\n' case siw server client result
while read -r _ name siw srv cli rc; do
	rc=${rc%$'\r'} n=$((n + 1)) verdict=ok
	[ "$rc" = 0 ] || verdict="FAILED (exit $rc)"
	grep -q "server on backend $srv" "$out/$name-server.log" 2>/dev/null ||
		verdict="FAILED (server not on $srv)"
	grep -q "client on backend $cli" "$out/$name-client.log" 2>/dev/null ||
		verdict="FAILED (client not on $cli)"
	ops=$(grep -Ec 'read (ok|skipped)' "$out/$name-client.log" 2>/dev/null)
	[ "${ops:-0}" -eq 18 ] || verdict="FAILED ($ops of 18 rounds)"
	[ "$verdict" = ok ] || fail=1
	printf '%-22s %-8s %-7s %-7s %s\n' "$name" "$siw" "$srv" "$cli" "$verdict"
	crc=off sizes="0B-16MiB"
	[ "$siw" = crc ] && crc=on
	[ "$siw" = patched ] || sizes="0B-16MiB (Read 1B+)"
	on=", siw $siw"
	[ "$srv$cli" = useruser ] && on="" # (kernel TCP only: siw not in it)
	matrix_row "op-matrix ($srv$on)" "op-matrix ($cli)" "Send SGL, Write SGL, Read; 3 QPs" "$crc" "$sizes"
done < <(grep -a '^RIG-CASE ' "$out/console.log")
[ "$n" -eq 12 ] || { say "backend ops: $n of 12 cases ran"; fail=1; }
# short-cross on siw as shipped and patched: every octet of 256 page-crossing short Writes right.
ns=0
while read -r _ siw rc; do
	rc=${rc%$'\r'} ns=$((ns + 1)) verdict=ok
	[ "$rc" = 0 ] || verdict="FAILED (exit $rc)"
	grep -q "client sent 256 writes" "$out/short-$siw-client.log" 2>/dev/null &&
		grep -q "server on backend user" "$out/short-$siw-server.log" &&
		grep -q "256 writes of 24 octets across a page, 0 placed wrong" "$out/short-$siw-server.log" ||
		verdict="FAILED (not every Write placed right)"
	[ "$verdict" = ok ] || fail=1
	say "short Writes across a page from the verbs backend, siw $siw: $verdict"
	matrix_row "short-cross (user)" "short-cross (verbs, siw $siw)" "RDMA Write, source across a page" off 24B
done < <(grep -a '^RIG-SHORT ' "$out/console.log")
[ "$ns" -eq 2 ] || { say "backend ops: $ns of 2 short-cross runs"; fail=1; }
# esock-bench, client and server on different backends: every cell must have a value (36:
# 3 operations x (2 round-trip sizes x p50/p99 + 2 bandwidth sizes) x 2 CRC settings).
nb=0
while read -r _ cli srv rc; do
	rc=${rc%$'\r'} nb=$((nb + 1)) verdict=ok csv=$out/bench-$cli-$srv.csv
	cells=$(awk -F, 'NR > 1 && $8 + 0 > 0' "$csv" 2>/dev/null | wc -l)
	[ "$rc" = 0 ] && [ "$cells" -eq 36 ] || verdict="FAILED (exit $rc, $cells of 36 cells)"
	[ "$verdict" = ok ] || fail=1
	say "esock-bench client on $cli, server on $srv: $verdict"
	matrix_row "esock-bench ($srv, siw default)" "esock-bench ($cli)" "Send, Write, Read: lat + bw" off+on 64B-1MiB
done < <(grep -a '^RIG-BENCH ' "$out/console.log")
[ "$nb" -eq 2 ] || { say "backend ops: $nb of 2 esock-bench runs"; fail=1; }
# Cases that passed only the second time, named (their first logs: NAME-*-try1.log).
grep -a '^RIG-RETRY ' "$out/console.log" | while read -r _ name rc; do
	say "backend ops: $name failed once (exit ${rc%$'\r'}) and passed when run again; first logs in $out/$name-*-try1.log"
done
exit $fail
