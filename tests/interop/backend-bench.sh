#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test): esock-bench in the siw guest on the user-level backend
# and on the verbs backend (kernel siw through rdma-core), same guest, same run,
# rounds alternated: Send/Write/Read bandwidth at 64 KiB and 1 MiB, round trips at
# 64 B and 4 KiB, CRC off (siw as shipped).  Prints per cell the medians of both
# and user/verbs (bandwidth: > 1 means the user-level backend is faster; latency:
# < 1 means it is).  The guest runs under TCG here unless KVM works.
#   backend-bench.sh BUILD_DIR [OUTDIR] [ROUNDS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: backend-bench.sh BUILD_DIR [OUTDIR] [ROUNDS]}" && pwd)
out=${2:-$build/interop-captures/backend-bench}
rounds=${3:-2}
export RIG_DIR=${RIG_DIR:-$build/interop-rig}
grep -q '^#define ESOCK_HAVE_VERBS 1' "$build/config.h" || { echo "built without the verbs backend"; exit 77; }
[ -f "$RIG_DIR/groot.stamp" ] || bash "$here/siw-rig.sh" prepare || exit 77
rm -rf "$out"
job=$(mktemp)
{ echo "ROUNDS=$rounds"; cat "$here/jobs/backend-bench.sh"; } > "$job"
RIG_FILES="$build/tools/esock-bench=/esock-bench" bash "$here/siw-rig.sh" run "$job" "$out" default
rc=$?
rm -f "$job"
[ $rc -eq 0 ] || { echo "the guest job failed: $out/console.log"; exit 1; }
echo "# esock-bench in the siw guest (siw $(sed -n 's/.*RIG: ready, siw \(.*\)/\1/p' "$out/console.log" | head -n 1 | tr -d '\r')), $(date -u +%Y-%m-%d), host: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $rounds rounds"
printf '%-7s %-6s %8s %12s %12s %10s %s\n' test op size user verbs user/verbs unit
for f in "$out"/user-*.csv "$out"/verbs-*.csv; do
	[ -s "$f" ] || { echo "no figures in $f: $(tail -n 3 "${f%.csv}.log")"; exit 1; }
done
# test,op,size,crc,markers,placement,iters,esock_value,tcp_value,unit,ratio: the esock column.
awk -F, '
	FNR == 1 { be = FILENAME; sub(/.*\//, "", be); sub(/-[0-9]+\.csv$/, "", be) }
	$1 == "bw" || $1 == "lat_p50" {
		k = $1 "," $2 "," $3
		if (!(k in seen)) { seen[k] = 1; order[++n] = k; unit[k] = $10 }
		v[be, k, ++c[be, k]] = $8
	}
	function median(be, k,    m, i, j, t, a) {
		m = c[be, k]
		for (i = 1; i <= m; i++) a[i] = v[be, k, i] + 0
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]; split(k, p, ",")
			u = median("user", k); w = median("verbs", k)
			printf "%-7s %-6s %8s %12.2f %12.2f %10.3f %s\n", p[1], p[2], p[3], u, w, w ? u / w : 0, unit[k]
		}
	}' "$out"/user-*.csv "$out"/verbs-*.csv
