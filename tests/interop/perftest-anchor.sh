#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The kernel anchor for esock-bench: rdma-core perftest siw-to-siw in the qemu guest of
# siw-rig.sh (ib_send_bw, ib_write_bw, ib_read_bw and ib_send_lat over rdma_cm, CRC
# off with siw as shipped and on with the "crc" variant), printed next to esock-bench's
# endpoint figures for the same operations, sizes and CRC settings, one row each:
#   test     op    size  crc  siw  esock  tcp  unit
# bw rows are MB/s (10^6 octets/s of payload; perftest's BW average is 2^20-based and
# converted; the better of its client's and server's report, as ib_send_bw's client can
# report 0 under TCG); latency rows are round trips in us (perftest
# prints half the round trip; siw's figure is twice its typical / 99th percentile).
# siw runs in an emulated guest (TCG unless KVM works) and esock natively on this host:
# the anchor gives the kernel's shape across sizes and operations, not a race.
# Without esock-bench endpoint modes (--bw/--lat) the siw figures are printed alone.
#   perftest-anchor.sh BUILD_DIR [OUTDIR]      (writes OUTDIR/anchor.csv too)
# ANCHOR_BW_SIZES, ANCHOR_LAT_SIZES, ANCHOR_BW_ITERS, ANCHOR_LAT_ITERS override the
# defaults below.  Exits 77 when the rig is not prepared, 1 when the guest job fails or
# more than ANCHOR_MAX_MISSING (2) cells have no figure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: perftest-anchor.sh BUILD_DIR [OUTDIR]}" && pwd)
out=${2:-$build/interop-captures/anchor}
BENCH=${BENCH:-$build/tools/esock-bench}
export RIG_DIR=${RIG_DIR:-$build/interop-rig}
BW_SIZES=${ANCHOR_BW_SIZES:-4096 65536 1048576}
LAT_SIZES=${ANCHOR_LAT_SIZES:-64 4096}
BW_ITERS=${ANCHOR_BW_ITERS:-200}
LAT_ITERS=${ANCHOR_LAT_ITERS:-500}

say() { echo "interop: $*"; }
[ -f "$RIG_DIR/groot.stamp" ] || { say "SKIP: perftest anchor: the siw rig is not prepared"; exit 77; }
rm -rf "$out" && mkdir -p "$out"
{
	printf 'BW_SIZES="%s"\nLAT_SIZES="%s"\nBW_ITERS=%s\nLAT_ITERS=%s\nVARIANTS="default crc"\n' \
		"$BW_SIZES" "$LAT_SIZES" "$BW_ITERS" "$LAT_ITERS"
	cat "$here/jobs/perftest-anchor.sh"
} >"$out/job.sh"
t0=$SECONDS
bash "$here/siw-rig.sh" run "$out/job.sh" "$out" default >"$out/rig.log" 2>&1
rig_rc=$?
accel=TCG
[ -w /dev/kvm ] && grep -qE 'vmx|svm' /proc/cpuinfo && accel=KVM
say "perftest anchor: guest ran $((SECONDS - t0)) s ($accel, siw-rig exit $rig_rc)"

# ---- siw figures: test,op,size,crc,value,unit -------------------------------------
# A cell perftest gave no figure for after three tries in the guest (siw to siw:
# no esock code involved) is reported with its log's end; more than MAX_MISSING
# such cells, or a failed guest job, fail the anchor.
MAX_MISSING=${ANCHOR_MAX_MISSING:-2}
failed=0 nmissing=0
missing() { # $1 = cell, $2 = client log
	nmissing=$((nmissing + 1))
	say "WARN perftest $1: no result after 3 tries, see ${2#"$build"/}; its end:"
	{ tail -n 4 "$2"; tail -n 4 "$2.server"; } 2>/dev/null | sed 's/^/interop:     | /'
}
: >"$out/siw.csv"
for v in default crc; do
	crc=off; [ "$v" = crc ] && crc=on
	for s in $BW_SIZES; do
		for op in send write read; do
			f=$out/$v-ib_${op}_bw-$s.log
			# " #bytes #iterations BW peak BW average MsgRate[Mpps]", the last report of each side
			r=$(cat "$f" "$f.server" 2>/dev/null | awk -v s="$s" '$1 == s && NF >= 5 && $4 ~ /^[0-9.]+$/ {
				if ($4 + 0 > m) m = $4 + 0; n++ } END { if (n) printf "%.2f", m * 1.048576 }')
			if [ -n "$r" ]; then echo "bw,$op,$s,$crc,$r,MB/s" >>"$out/siw.csv"
			else missing "ib_${op}_bw $s ($v)" "$f"; fi
		done
	done
	for s in $LAT_SIZES; do
		f=$out/$v-ib_send_lat-$s.log
		# " #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
		r=$(awk -v s="$s" '$1 == s && NF >= 8 && $5 ~ /^[0-9.]+$/ { printf "%.2f %.2f", 2 * $5, 2 * $8; exit }' "$f" 2>/dev/null)
		if [ -n "$r" ]; then
			echo "lat_p50,send,$s,$crc,${r% *},us" >>"$out/siw.csv"
			echo "lat_p99,send,$s,$crc,${r#* },us" >>"$out/siw.csv"
		else missing "ib_send_lat $s ($v)" "$f"; fi
	done
done

# ---- esock-bench figures, same cells: test,op,size,crc,esock,tcp ------------------
: >"$out/esock.csv"
if [ -x "$BENCH" ] && "$BENCH" --help 2>&1 | grep -q -- '--bw'; then
	"$BENCH" --bw --ops send,write,read --bw-sizes "${BW_SIZES// /,}" --crc both --csv --seconds 0.3 \
		>"$out/esock-bench-bw.csv" 2>"$out/esock-bench.err"
	"$BENCH" --lat --ops send --lat-sizes "${LAT_SIZES// /,}" --crc both --csv --iters 2000 \
		>"$out/esock-bench-lat.csv" 2>>"$out/esock-bench.err"
	# test,op,size,crc,markers,placement,iters,esock_value,tcp_value,unit,ratio
	awk -F, '$1 != "test" && $5 == "off" { print $1 "," $2 "," $3 "," $4 "," $8 "," $9 }' \
		"$out/esock-bench-bw.csv" "$out/esock-bench-lat.csv" >"$out/esock.csv"
	[ -s "$out/esock.csv" ] || say "esock-bench gave no figures: $(head -c 300 "$out/esock-bench.err")"
	have_esock=1
else
	have_esock=0
fi

# ---- side by side ---------------------------------------------------------------
{
	echo "test,op,size,crc,siw,esock,tcp,unit"
	awk -F, 'NR == FNR { e[$1 "," $2 "," $3 "," $4] = $5 "," $6; next }
		{ k = $1 "," $2 "," $3 "," $4; v = (k in e) ? e[k] : "-,-"; print k "," $5 "," v "," $6 }' \
		"$out/esock.csv" "$out/siw.csv"
} >"$out/anchor.csv"
if [ "$have_esock" = 1 ]; then
	say "perftest anchor: siw-to-siw in the guest ($accel) next to esock-bench on this host (ratios, not absolutes):"
else
	say "perftest anchor: siw-to-siw in the guest ($accel); esock-bench has no endpoint modes (--bw/--lat) in this build, siw figures alone:"
fi
awk -F, '{ printf "interop:   %-8s %-5s %8s %-3s %10s %10s %10s %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$out/anchor.csv"
[ "$rig_rc" -eq 0 ] || { say "FAIL perftest anchor: the guest job failed: $(tail -n 3 "$out/rig.log")"; failed=$((failed + 1)); }
[ "$nmissing" -le "$MAX_MISSING" ] ||
	{ say "FAIL perftest anchor: $nmissing cells without a figure (at most $MAX_MISSING allowed)"; failed=$((failed + 1)); }
[ "$failed" -eq 0 ]
