#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Medians, ratios and the plot of tools/tcpserver-eval.sh.

    tcpserver-eval-plot.py EVAL.CSV OUTDIR "MACHINE LINE"

Writes OUTDIR/summary.txt (a Markdown table per file and protocol: medians
of requests/s, host, tcpserverd and load generator CPU time per request, the host's
sleeps per request, CPU busy, the share of the quota's periods in which
nginx was throttled, which side saturated, and the ratios to regular TCP:
medians of each run's ratios) and OUTDIR/tcpserver-eval.svg (requests/s and host
CPU per request against concurrent clients, a line per mode)."""
import csv
import statistics
import sys
from collections import defaultdict

MODES = ["tcp", "sync", "async", "eagerrx", "eageracc", "setup", "share", "cluster"]
NAMES = {"tcp": "regular TCP", "sync": "synchronous", "async": "+ async send",
         "eagerrx": "+ eager receive", "eageracc": "+ eager accept", "setup": "+ setup with accept",
         "share": "all, host's share", "cluster": "cluster (iWARP, all)"}
COLORS = {"tcp": "black", "sync": "#1f77b4", "async": "#ff7f0e", "eagerrx": "#2ca02c",
          "eageracc": "#d62728", "setup": "#9467bd", "share": "#e377c2", "cluster": "#8c564b"}
FIELDS = ["rps", "host_us_per_req", "tsd_us_per_req", "host_cpu_busy", "server_cpu_busy", "client_us_per_req",
          "host_sleeps_per_req"]


# A side saturates: nginx throttled in at least half its quota's periods (without a quota:
# its CPU busy 90 % of the time), the other CPU (tcpserverd's, and ab's) busy 90 % of the time.
THROTTLED, BUSY = 0.5, 0.9


def saturates(c, thr_col):
    """Which side bounds the cell: "host", "other CPU", "both" or "neither" (a chain
    of waits across CPUs, or the load generator's own pace)."""
    if not thr_col:
        return "-"  # (an older file: no quota count, and under a quota busy says nothing)
    t = c["host_throttled"]
    host = t >= THROTTLED if t is not None else c["host_cpu_busy"] >= BUSY
    other = c["server_cpu_busy"] >= BUSY
    return {(True, True): "both", (True, False): "host", (False, True): "other CPU"}.get((host, other), "neither")


def load(path):
    """Medians per cell and mode, and the medians of each run's ratios to
    regular TCP (a mode's figure over regular TCP's of the same run and cell,
    measured seconds apart: the machine's drift between runs cancels); and
    whether the file has the quota's throttled column."""
    cells = defaultdict(lambda: defaultdict(list))
    runs = {}
    with open(path) as f:
        rows = csv.DictReader(f)
        thr_col = "host_throttled" in (rows.fieldnames or [])
        for row in rows:
            key = (row["file"], row["proto"], int(row["conc"]), row["mode"])
            for k in FIELDS:
                cells[key][k].append(float(row.get(k) or 0))  # (older files: no client column)
            if row.get("host_throttled"):  # (empty without a quota)
                cells[key]["host_throttled"].append(float(row["host_throttled"]))
            runs[key + (row["run"],)] = row
    med = {k: {f: statistics.median(v[f]) for f in FIELDS} | {"n": len(v["rps"])}
           | {"host_throttled": statistics.median(v["host_throttled"]) if v["host_throttled"] else None}
           for k, v in cells.items()}
    for (file, proto, conc, mode, run), row in runs.items():
        base = runs.get((file, proto, conc, "tcp", run))
        for f in ("rps", "host_us_per_req"):
            if base and float(base[f]) > 0:
                med[(file, proto, conc, mode)].setdefault(f"{f}_ratios", []).append(
                    float(row[f]) / float(base[f]))
    for c in med.values():
        for f in ("rps", "host_us_per_req"):
            r = c.pop(f"{f}_ratios", None)
            c[f"{f}_vs"] = statistics.median(r) if r else None
    return med, thr_col


def summary(med, thr_col, machine):
    lines = [f"# {machine}", ""]
    for file in ("4k", "16k"):
        for proto in ("http10", "keepalive"):
            if not any(k[0] == file and k[1] == proto for k in med):
                continue
            lines.append(f"## {file}, {'HTTP/1.0' if proto == 'http10' else 'keep-alive'}")
            lines.append("")
            lines.append("| clients | mode | req/s | vs TCP | host us/req | vs TCP | tcpserverd us/req "
                         "| ab us/req | host sleeps/req | host CPU busy | other CPU busy | host throttled "
                         "| saturates | runs |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for conc in (1, 8, 32):
                for m in MODES:
                    c = med.get((file, proto, conc, m))
                    if not c:
                        continue
                    rr = f"{c['rps_vs']:.2f}" if c["rps_vs"] is not None else "-"
                    hr = f"{c['host_us_per_req_vs']:.2f}" if c["host_us_per_req_vs"] is not None else "-"
                    lines.append(f"| {conc} | {NAMES[m]} | {c['rps']:.0f} | {rr} | "
                                 f"{c['host_us_per_req']:.1f} | {hr} | {c['tsd_us_per_req']:.1f} | "
                                 f"{c['client_us_per_req']:.1f} | {c['host_sleeps_per_req']:.2f} | "
                                 f"{c['host_cpu_busy']:.2f} | {c['server_cpu_busy']:.2f} | "
                                 f"{'-' if c['host_throttled'] is None else format(c['host_throttled'], '.2f')} | "
                                 f"{saturates(c, thr_col)} | {c['n']} |")
            lines.append("")
    return "\n".join(lines)


def svg(med, machine):
    W, H, L, B, T = 300, 200, 55, 30, 25
    panels = [(f, p) for f in ("4k", "16k") for p in ("http10", "keepalive")
              if any(k[0] == f and k[1] == p for k in med)]
    width, height = 2 * (W + 20) + 20, len(panels) * (H + 45) + 95
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">']
    xs = [1, 8, 32]
    for row, (file, proto) in enumerate(panels):
        for col, (field, label) in enumerate((("rps", "requests/s"),
                                             ("host_us_per_req", "host CPU us per request"))):
            ox, oy = 20 + col * (W + 20), 20 + row * (H + 45)
            vals = [med[(file, proto, c, m)][field] for c in xs for m in MODES
                    if (file, proto, c, m) in med]
            ymax = max(vals) * 1.1 if vals else 1
            title = f"{label}, {file}, {'HTTP/1.0' if proto == 'http10' else 'keep-alive'}"
            out.append(f'<text x="{ox + L}" y="{oy + 12}">{title}</text>')
            out.append(f'<line x1="{ox + L}" y1="{oy + H}" x2="{ox + W}" y2="{oy + H}" stroke="black"/>')
            out.append(f'<line x1="{ox + L}" y1="{oy + T}" x2="{ox + L}" y2="{oy + H}" stroke="black"/>')
            out.append(f'<text x="{ox}" y="{oy + T + 4}">{ymax:.0f}</text>')
            out.append(f'<text x="{ox + L - 10}" y="{oy + H + 4}">0</text>')
            for i, c in enumerate(xs):
                x = ox + L + (W - L - 10) * i / (len(xs) - 1)
                out.append(f'<text x="{x - 4:.0f}" y="{oy + H + 14}">{c}</text>')
            out.append(f'<text x="{ox + W - 60}" y="{oy + H + 26}">clients</text>')
            for m in MODES:
                pts = []
                for i, c in enumerate(xs):
                    if (file, proto, c, m) in med:
                        x = ox + L + (W - L - 10) * i / (len(xs) - 1)
                        y = oy + H - (H - T) * med[(file, proto, c, m)][field] / ymax
                        pts.append(f"{x:.1f},{y:.1f}")
                if pts:
                    out.append(f'<polyline fill="none" stroke="{COLORS[m]}" stroke-width="2" '
                               f'points="{" ".join(pts)}"/>')
    ly = height - 60
    for i, m in enumerate(MODES):  # (two rows of legend)
        out.append(f'<text x="{20 + (i % 4) * 160}" y="{ly + (i // 4) * 14}" '
                   f'fill="{COLORS[m]}">{NAMES[m]}</text>')
    out.append(f'<text x="20" y="{height - 20}">{machine}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    path, outdir, machine = sys.argv[1], sys.argv[2], sys.argv[3]
    med, thr_col = load(path)
    text = summary(med, thr_col, machine)
    with open(f"{outdir}/summary.txt", "w") as f:
        f.write(text + "\n")
    with open(f"{outdir}/tcpserver-eval.svg", "w") as f:
        f.write(svg(med, machine))
    print(text)
    print(f"tcpserver-eval: eval.csv, summary.txt and tcpserver-eval.svg in {outdir}")


if __name__ == "__main__":
    main()
