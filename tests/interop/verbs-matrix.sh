#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The verbs backend against kernel siw, in the qemu guest of siw-rig.sh: our iwping
# on the verbs backend (rdma-core, kernel siw) as server and client against rping
# and against iwping on the user-level backend (CRC off and on), and against itself;
# sizes 64 and 65535, 5 validated pings each (jobs/verbs-matrix.sh).  Prints the
# matrix (server x client x size) and fails when a case fails or a side did not run
# on the backend it was asked for.
#   verbs-matrix.sh BUILD_DIR [OUTDIR]
# Exits 77 (skip) when the rig is not prepared or iwping was built without the verbs
# backend (configure found no rdma-core development files).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: verbs-matrix.sh BUILD_DIR [OUTDIR]}" && pwd)
out=${2:-$build/interop-captures/verbs}
IWPING=$build/tools/iwping/iwping
export RIG_DIR=${RIG_DIR:-$build/interop-rig}

say() { echo "interop: $*"; }
[ -x "$IWPING" ] || { say "SKIP: verbs matrix: no iwping"; exit 77; }
grep -q '^#define ESOCK_HAVE_VERBS 1' "$build/config.h" ||
	{ say "SKIP: verbs matrix: built without the verbs backend"; exit 77; }
[ -f "$RIG_DIR/groot.stamp" ] || { say "SKIP: verbs matrix: the siw rig is not prepared"; exit 77; }

rm -rf "$out"
RIG_FILES="$IWPING=/iwping" bash "$here/siw-rig.sh" run "$here/jobs/verbs-matrix.sh" "$out" default ||
	{ say "verbs matrix: the guest job failed"; exit 1; }
fail=0 n=0
printf '%-22s %-14s %-14s %6s  %s\n' case server client size result
while read -r _ name srv cli size rc; do
	rc=${rc%$'\r'}
	n=$((n + 1))
	verdict=ok
	[ "$rc" = 0 ] || verdict="FAILED (exit $rc)"
	# Each iwping side says which backend carried it (iwping -d).
	for side in server client; do
		role=$srv
		[ $side = client ] && role=$cli
		case $role in
		verbs) want=verbs ;;
		user*) want=user ;;
		*) continue ;;
		esac
		grep -q "(backend $want)" "$out/$name-$side.log" 2>/dev/null ||
			verdict="FAILED ($side not on the $want backend)"
	done
	[ "$verdict" = ok ] || fail=1
	printf '%-22s %-14s %-14s %6s  %s\n' "$name" "$srv" "$cli" "$size" "$verdict"
	if [ -n "${ESOCK_MATRIX:-}" ]; then # (a row of check-interop's matrix: run-interop.sh)
		label() { case $1 in rping) echo "rping (verbs)" ;; verbs) echo "iwping (verbs)" ;; *) echo "iwping (user)" ;; esac; }
		crc=off
		case "$srv $cli" in *user--crc*) crc=on ;; esac
		res=PASS
		[ "$verdict" = ok ] || res=FAIL
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(label "$srv")" "$(label "$cli")" "Send, Read, Write" "$crc" \
			"$size" "$res" >>"$ESOCK_MATRIX"
	fi
done < <(grep -a '^RIG-CASE ' "$out/console.log")
[ "$n" -eq 14 ] || { say "verbs matrix: $n of 14 cases ran"; fail=1; }
# Cases that passed only the second time (jobs/verbs-matrix.sh: siw's accept race), named.
grep -a '^RIG-RETRY ' "$out/console.log" | while read -r _ name rc; do
	say "verbs matrix: $name failed once (exit ${rc%$'\r'}) and passed when run again; first logs in $out/$name-*-try1.log"
done
exit $fail
