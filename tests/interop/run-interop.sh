#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop stage (`make check-interop`): kernel siw in a qemu guest runs rping (siw
# as shipped, and the variant that asks for CRC) and perftest Send/Write/Read;
# ddpdump must decode the fresh captures exactly as tshark does, CRC verdicts
# included.  Then our iwping against rping in both roles (iwping-vs-rping.sh) and
# the perftest anchor next to esock-bench (perftest-anchor.sh); and our iwping on
# the verbs backend (kernel siw through rdma-core) against rping and against the
# user-level backend (verbs-matrix.sh); every operation across the two backends
# (backend-ops.sh); DDPMODE sockets of an unmodified program on
# the verbs backend against the user-level one (verbs-sockets.sh); the TCP Server's
# cluster channel with a kernel end on either side (tcpserver-cluster.sh); and kpatch/linux's siw patches, each
# shown on the wire against siw as shipped (siw-patches.sh).
#   run-interop.sh BUILD_DIR
# Exits 77 (skip) with a reason when the rig cannot be prepared here (no
# package mirror, no qemu); any failure after that is a real failure.  A part
# that cannot run here (iwping-vs-rping without root or a tun device) says SKIP
# and does not fail the stage.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run-interop.sh BUILD_DIR}" && pwd)
export RIG_DIR=${RIG_DIR:-$build/interop-rig}
out=$build/interop-captures
rm -rf "$out" && mkdir -p "$out"

start=$SECONDS t0=$SECONDS
if ! bash "$top/tests/interop/siw-rig.sh" prepare; then
	echo "interop: SKIP: the siw rig could not be prepared (packages or qemu unavailable)"
	exit 77
fi
if ! bash "$top/tests/interop/siw-rig.sh" probe; then
	echo "interop: SKIP: qemu cannot run the guest here"
	exit 77
fi
echo "interop: rig ready and qemu boots in $((SECONDS - t0)) s"
t0=$SECONDS
(
set -e
captures=""
for v in default crc; do
	bash "$top/tests/interop/siw-rig.sh" run "$top/tests/interop/jobs/rping-capture.sh" "$out/$v" "$v"
	grep -c "ping data" "$out/$v/rping-client.log" | grep -qx 3 || { echo "interop: rping ($v) did not complete 3 pings"; exit 1; }
	captures="$captures $out/$v/rping.pcap $out/$v/rping-term.pcap"
	# That capture exists for siw's Terminate: without it, it proves nothing.
	"$build/tools/ddpdump/ddpdump" -r "$out/$v/rping-term.pcap" | grep -q '| Terminate |' ||
		{ echo "interop: rping-term ($v): no Terminate in the capture"; exit 1; }
done
bash "$top/tests/interop/siw-rig.sh" run "$top/tests/interop/jobs/perftest-capture.sh" "$out/perftest" default
for t in send write read; do
	captures="$captures $out/perftest/perftest-$t.pcap"
done
cd "$build"
ESOCK_CAPTURES="${captures# }" ESOCK_REQUIRE_TSHARK=1 srcdir="$top" top_builddir=. CK_FORK=no \
	./tests/ddpdump/check_ddpdump
)
failed=$?
echo "interop: rping and perftest captures: $((SECONDS - t0)) s, $([ $failed -eq 0 ] && echo ok || echo FAILED)"
failed_parts=()
[ $failed -eq 0 ] || failed_parts+=(captures)
# Every part adds its cases to one matrix (server, client, operations, CRC, sizes, result),
# printed at the end and kept in $out/matrix.txt.
export ESOCK_MATRIX=$out/matrix.tsv
: >"$ESOCK_MATRIX"
for part in iwping-vs-rping sock-vs-rping iwping-vs-verbs verbs-matrix backend-ops verbs-sockets tcpserver-cluster siw-patches perftest-anchor; do
	t0=$SECONDS
	if [ "$part" = sock-vs-rping ]; then
		# A DDPMODE socket (libesock's socket layer and extended calls) as rping's client.
		IWPING=$build/tests/interop/sock-rping IWPING_ROLES=s IWPING_SIZES="23 4096 65535" \
			bash "$top/tests/interop/iwping-vs-rping.sh" "$build" "$out/sock"
	elif [ "$part" = iwping-vs-verbs ]; then
		# The user-level backend on the host against the verbs backend in the guest.
		IWPING_GUEST=verbs IWPING_SIZES="23 4096 65535" \
			bash "$top/tests/interop/iwping-vs-rping.sh" "$build" "$out/verbs-host"
	else
		bash "$top/tests/interop/$part.sh" "$build"
	fi 2>&1 | tee "$out/part-$part.log"
	rc=${PIPESTATUS[0]}
	case $rc in
	0) echo "interop: $part: $((SECONDS - t0)) s, ok" ;;
	77) echo "interop: $part: skipped" ;;
	*) echo "interop: $part: $((SECONDS - t0)) s, FAILED"; failed=1; failed_parts+=("$part") ;;
	esac
done
echo "interop: total $((SECONDS - start)) s"
# The matrix: backend of each side (user: esock's user-level endpoint; verbs: kernel siw
# through rdma-core, rping's or our own), role, operations, CRC, result.
awk -F '\t' 'BEGIN { printf "%-34s %-28s %-32s %-4s %-20s %s\n", "SERVER (backend)", "CLIENT (backend)", "OPERATIONS", "CRC", "SIZES", "RESULT" }
	{ printf "%-34s %-28s %-32s %-4s %-20s %s\n", $1, $2, $3, $4, $5, $6 }' "$ESOCK_MATRIX" |
	tee "$out/matrix.txt" | sed 's/^/interop: /'
echo "interop: matrix: $(grep -c 'PASS$' "$out/matrix.txt") passed, $(grep -c 'FAIL$' "$out/matrix.txt") failed"
# The stage's log is read from its end: name what failed there, with the part's own
# verdict lines, so that the last lines of a failed run say why.
for part in "${failed_parts[@]}"; do
	echo "interop: FAILED part $part:"
	[ -f "$out/part-$part.log" ] &&
		grep -a -E "FAIL|failed|exit [1-9]|did not|killed" "$out/part-$part.log" | tail -n 8 | sed 's/^/interop:   /'
done
exit "$failed"
