#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs esock-bench N times with the same options and prints, per row, the
# median of the esock/TCP ratio (each run measures TCP right before esock,
# so every ratio comes from one moment of the machine) with the lowest and
# highest ratio seen: on a shared machine single runs spread by +-20 %.
#
#   bench-median.sh N [esock-bench options...]     (--csv is added)
#   e.g. bench-median.sh 5 --bw --ops send,write,read --bw-sizes 64K,1M --cpus same
set -eu
[ $# -ge 1 ] && [ "$1" -gt 0 ] 2>/dev/null || { sed -n '3,9p' "$0"; exit 2; }
n=$1
shift
bench=${ESOCK_BENCH:-${top_builddir:+$top_builddir/tools/}esock-bench}
[ -n "${top_builddir:-}" ] || [ -n "${ESOCK_BENCH:-}" ] || bench=$(dirname "$0")/esock-bench
[ -x "$bench" ] || { echo "bench-median.sh: $bench not built" >&2; exit 1; }
machine="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "# $machine; medians of $n runs of esock-bench $*"
i=0
while [ $i -lt "$n" ]; do
	"$bench" --csv "$@" | sed 1d
	i=$((i + 1))
done | awk -F, -v runs="$n" '
function median(k,    m, a, j, t, x) {
	m = split(r[k], a, " ")
	for (j = 2; j <= m; j++) { # insertion sort: a handful of values
		x = a[j] + 0
		for (t = j - 1; t >= 1 && a[t] + 0 > x; t--) a[t + 1] = a[t]
		a[t + 1] = x
	}
	lo = a[1]; hi = a[m]
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{
	k = $1 "," $2 "," $3 "," $4 "," $5 "," $6
	if (!(k in r)) order[++nk] = k
	r[k] = r[k] " " $11; cnt[k]++
}
END {
	printf "%-8s %-6s %9s %-3s %-7s %-9s %5s %8s %8s %8s\n", "test", "op", "size", "crc",
		"markers", "placement", "runs", "ratio", "min", "max"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, f, ",")
		med = median(k)
		printf "%-8s %-6s %9s %-3s %-7s %-9s %5d %8.3f %8.3f %8.3f\n", f[1], f[2], f[3], f[4],
			f[5], f[6], cnt[k], med, lo, hi
	}
	print "# ratio: median of esock/TCP over " runs " runs (lat: lower is better; bw: higher is better)"
}'
