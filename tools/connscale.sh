#!/bin/sh
# SPDX-License-Identifier: MIT
# The cost of many connections, plain TCP against DDPMODE in the same run:
# esock-connscale runs plainly, then under the preload with ESOCK_DDPMODE=all.
# Prints per step the setup rate ratio and, per connection, the server's
# resident memory and descriptors; then the throughput ratio over ACTIVE
# connections and the ratio of CPU time per message (both processes: on a
# shared machine steadier than the throughput, which others' load moves);
# writes both CSVs and an SVG plot (memory and setup time against the
# connection count) into OUTDIR.
#
#   top_builddir=build sh tools/connscale.sh [MAX STEP ACTIVE BYTES SECONDS OUTDIR]
#   (defaults: 2000 500 200 4096 2 connscale-out)
#   CONNSCALE_CPUS=split|same: client and server on CPUs 0 and 1, or both on 0
#   (a sequential client's setup rate is latency: where the two run decides it)
#   CONNSCALE_INFLIGHT=K: up to K connections set up at once (the server's
#   accept rate under many clients: CPU, not one connection's latency)
#   CONNSCALE_ROUNDS=R: R rounds, plain and DDPMODE in turn (which goes first
#   alternates), and the ratios' medians over the rounds in rounds.txt: on a
#   shared machine one pair of runs can be a quarter apart (plain TCP's
#   throughput was seen at either 500 or 645 MB/s from one run to the next).
#   The summary and the plot are the first round's.
set -eu
b=${top_builddir:-.}
bin=$b/tools/esock-connscale
lib=${ESOCK_LIB:-$b/.libs/libesock.so}
max=${1:-2000} step=${2:-500} active=${3:-200} bytes=${4:-4096} secs=${5:-2} out=${6:-connscale-out}
[ -x "$bin" ] && [ -f "$lib" ] || { echo "connscale: build first ($bin, $lib)"; exit 77; }
mkdir -p "$out"
machine="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d), CPUs ${CONNSCALE_CPUS:-not pinned}, ${CONNSCALE_INFLIGHT:-1} in flight"
rounds=${CONNSCALE_ROUNDS:-1}
echo "# $machine, $rounds round(s)" | tee "$out/machine.txt"
plain_run() { "$bin" "$max" "$step" "$active" "$bytes" "$secs" >"$1"; }
ddp_run() { LD_PRELOAD=$lib ESOCK_DDPMODE=all "$bin" "$max" "$step" "$active" "$bytes" "$secs" >"$1"; }
r=1
while [ "$r" -le "$rounds" ]; do
	sfx=; [ "$r" -gt 1 ] && sfx=.$r
	if [ $((r % 2)) -eq 1 ]; then
		plain_run "$out/plain.csv$sfx"; ddp_run "$out/ddp.csv$sfx"
	else
		ddp_run "$out/ddp.csv$sfx"; plain_run "$out/plain.csv$sfx"
	fi
	r=$((r + 1))
done

# Per step: ratio of setup rates; memory and fds per connection above the empty process;
# CPU time per connection, both processes (all their threads) together.
awk -F, '
FNR == 1 { next }
$1 == "throughput" { tp[FILENAME ~ /ddp/] = $4; tcpu[FILENAME ~ /ddp/] = $5 + $6; next }
$1 == "busy" { busy[FILENAME ~ /ddp/] = $3; next }
FNR == 2 { base_rss[FILENAME ~ /ddp/] = $4; base_fds[FILENAME ~ /ddp/] = $5; next }
{ d = FILENAME ~ /ddp/; rate[d, $1] = $3; rss[d, $1] = $4; fds[d, $1] = $5; con[d, $1] = $8; rtt[d, $1] = $9
  cpu[d, $1] = $10 + $11
  if (!d) n[++k] = $1 }
END {
	printf "%8s %12s %12s %7s %14s %14s %9s %9s %17s %17s %17s\n", "conns", "plain conn/s", "ddp conn/s", "ratio",
	       "plain KB/conn", "ddp KB/conn", "plain fd", "ddp fd", "connect us p/d", "1st rtt us p/d", "CPU us/conn p/d"
	for (i = 1; i <= k; i++) {
		c = n[i]
		printf "%8d %12.0f %12.0f %7.2f %14.1f %14.1f %9.2f %9.2f %8.1f/%8.1f %8.1f/%8.1f %8.1f/%8.1f\n", c, rate[0, c], rate[1, c],
		       rate[0, c] ? rate[1, c] / rate[0, c] : 0,
		       (rss[0, c] - base_rss[0]) / c, (rss[1, c] - base_rss[1]) / c,
		       (fds[0, c] - base_fds[0]) / c, (fds[1, c] - base_fds[1]) / c,
		       con[0, c], con[1, c], rtt[0, c], rtt[1, c], cpu[0, c], cpu[1, c]
	}
	if (tp[0]) printf "throughput over '"$active"' connections, '"$bytes"'-octet messages: plain %.1f MB/s, DDPMODE %.1f MB/s, ratio %.2f\n", tp[0], tp[1], tp[1] / tp[0]
	if (tcpu[0] > 0) printf "CPU time per message, both processes: plain %.2f us, DDPMODE %.2f us, ratio %.2f\n", tcpu[0], tcpu[1], tcpu[1] / tcpu[0]
	c = n[k]
	if (busy[0] && busy[1]) printf "server memory the traffic added: plain %.1f KB, DDPMODE %.1f KB per active connection\n", (busy[0] - rss[0, c]) / '"$active"', (busy[1] - rss[1, c]) / '"$active"'
}' "$out/plain.csv" "$out/ddp.csv" | tee "$out/summary.txt"

# Over the rounds: per step the setup ratio of each round and their median;
# the throughput ratio of each round, its median, and DDPMODE's own MB/s.
if [ "$rounds" -gt 1 ]; then
	r=1 files=
	while [ "$r" -le "$rounds" ]; do
		sfx=; [ "$r" -gt 1 ] && sfx=.$r
		files="$files $out/plain.csv$sfx $out/ddp.csv$sfx"
		r=$((r + 1))
	done
	# shellcheck disable=SC2086 # the list of files
	awk -F, '
	function med(v, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	FNR == 1 { d = FILENAME ~ /ddp/; if (!d) round++; next }
	$1 == "throughput" { tp[round, d] = $4; tcpu[round, d] = $5 + $6; next }
	$1 == "busy" || $1 == 0 { next }
	{ rate[round, d, $1] = $3; if (!seen[$1]++) step[++ns] = $1 }
	END {
		printf "%8s  %-40s %7s\n", "conns", "setup ratio per round", "median"
		for (k = 1; k <= ns; k++) {
			c = step[k]; n = 0; line = ""
			for (i = 1; i <= round; i++) if (rate[i, 0, c] > 0) { v[++n] = rate[i, 1, c] / rate[i, 0, c]; line = line sprintf("%.2f ", v[n]) }
			printf "%8d  %-40s %7.2f\n", c, line, n ? med(v, n) : 0
		}
		n = 0; line = ""; m = 0
		for (i = 1; i <= round; i++) if (tp[i, 0] > 0) { v[++n] = tp[i, 1] / tp[i, 0]; w[n] = tp[i, 1]; line = line sprintf("%.2f ", v[n]) }
		if (n) { mr = med(v, n); for (i = 1; i <= n; i++) v[i] = w[i]
			printf "throughput ratio per round: %s median %.2f; DDPMODE median %.1f MB/s\n", line, mr, med(v, n) }
		n = 0; line = ""
		for (i = 1; i <= round; i++) if (tcpu[i, 0] > 0) { v[++n] = tcpu[i, 1] / tcpu[i, 0]; line = line sprintf("%.2f ", v[n]) }
		if (n) printf "CPU per message ratio (DDPMODE/plain) per round: %s median %.2f\n", line, med(v, n)
	}' $files | tee "$out/rounds.txt"
fi

# The plot: server memory (MB) and cumulative setup time (s) against connections.
awk -F, -v max="$max" -v machine="$machine" '
FNR == 1 || $1 == "throughput" || $1 == "busy" { next }
FNR == 2 { next }
{ d = FILENAME ~ /ddp/; i = ++cnt[d]; x[d, i] = $1; mem[d, i] = $4 / 1024; t[d] += $2 / 1000; tt[d, i] = t[d]
  if (mem[d, i] > mmax) mmax = mem[d, i]; if (t[d] > tmax) tmax = t[d] }
END {
	W = 640; H = 300; L = 60; B = 40
	if (mmax <= 0) mmax = 1; if (tmax <= 0) tmax = 1
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W * 2 + 40, H + 60
	split("server resident memory (MB)|cumulative setup time (s)", title, "|")
	for (p = 0; p < 2; p++) {
		ox = 20 + p * (W + 20); ymax = p ? tmax : mmax
		printf "<text x=\"%d\" y=\"16\">%s vs connections</text>\n", ox + L, title[p + 1]
		printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ox + L, H, ox + W, H
		printf "<line x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ox + L, ox + L, H
		printf "<text x=\"%d\" y=\"%d\">%d</text><text x=\"%d\" y=\"40\">%.1f</text>\n", ox + W - 30, H + 16, max, ox, ymax
		for (d = 0; d < 2; d++) {
			printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%d,%d", d ? "red" : "blue", ox + L, H
			for (i = 1; i <= cnt[d]; i++)
				printf " %.1f,%.1f", ox + L + (W - L) * x[d, i] / max, H - (H - 30) * (p ? tt[d, i] : mem[d, i]) / ymax
			printf "\"/>\n"
		}
		printf "<text x=\"%d\" y=\"%d\" fill=\"blue\">plain TCP</text><text x=\"%d\" y=\"%d\" fill=\"red\">DDPMODE</text>\n", ox + L + 10, H + 32, ox + L + 100, H + 32
	}
	printf "<text x=\"%d\" y=\"%d\">%s</text>\n", 20 + L, H + 52, machine
	printf "</svg>\n"
}' "$out/plain.csv" "$out/ddp.csv" >"$out/connscale.svg"
echo "connscale: CSVs, summary.txt$([ "$rounds" -gt 1 ] && echo ", rounds.txt") and connscale.svg in $out"
