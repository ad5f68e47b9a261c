#!/usr/bin/env python3
"""Turns a bench/run.sh manifest into <out>.json (every number), <out>.md (ratio tables),
<out>-<workload>.png (P90/P99 vs offered rate, one line per server) and <out>.html.
Manifest lines with "client": "latte" (the second client) get their own tables and
<out>-latte.png; lines without a client are helenus-stress's. In --mode steady the latte runs
are long fixed-rate ones, reported per second by bench/steady_report.py (<out>-steady-*.png)."""
import argparse, html, json, os, sys
import state_report
import steady_report
from jsonfile import load

METRICS = [  # (key, label, higher_is_better)
    ("max_throughput_per_s", "max throughput (op/s)", True),
    ("max_throughput_p90_under_10ms_per_s", "max op/s with P90 < 10 ms", True),
    ("max_throughput_p99_under_10ms_per_s", "max op/s with P99 < 10 ms", True),
    ("probe_p50_ms", "P50 at max (ms)", False),
    ("probe_p99_ms", "P99 at max (ms)", False),
    ("half_max_p50_ms", "P50 at 50% of max (ms)", False),
    ("half_max_p90_ms", "P90 at 50% of max (ms)", False),
    ("half_max_p99_ms", "P99 at 50% of max (ms)", False),
    ("half_max_p999_ms", "P99.9 at 50% of max (ms)", False),
    ("half_max_max_ms", "max at 50% of max (ms)", False),
    ("server_cpu_ms_per_1000_ops", "server CPU per 1,000 ops (ms)", False),
    ("client_cpu_ms_per_1000_ops", "client CPU per 1,000 ops (ms)", False),
    ("server_rss_mib", "server RSS (MiB, all nodes)", False),
]
DIST_ORDER = ["uniform", "gaussian", "inmem"]
# The short table: (key, label) shown for each server, then the Helenus/Cassandra ratio.
SUMMARY = [("max_throughput_per_s", "op/s"), ("probe_p99_ms", "P99 at max (ms)"),
           ("half_max_p99_ms", "P99 at 50% (ms)"), ("server_cpu_ms_per_1000_ops", "server CPU ms / 1k ops")]


def steal_cores(r):
    """Cores' worth of CPU the hypervisor took during the run (inside other cores too); "-" for
    manifests that predate steal accounting."""
    steal, wall = r.get("steal_cpu_s"), r.get("wall_s")
    return f"{steal / wall:.2f}" if steal is not None and wall else "-"


def summarize(entry):
    r = load(entry["json"]) or {}
    out = dict(entry)
    out["stress"] = r
    half = (r.get("half_max") or {}).get("total") or {}
    probe = (r.get("probe") or {}).get("total") or {}
    out["probe_p50_ms"] = probe.get("latency_p50_ms")
    out["probe_p99_ms"] = probe.get("latency_p99_ms")
    out["errors"] = sum((ph or {}).get("total", {}).get("errors", 0) or 0
                        for ph in [r.get("probe")] + [s.get("phase") for s in r.get("steps") or []])
    total_ops = 0
    for ph in [r.get("probe")] + [s.get("phase") for s in r.get("steps") or []] + [(r.get("half_max") or {}).get("phase")]:
        if ph:
            total_ops += (ph.get("total") or {}).get("ops", 0)
    if "steps" not in r:  # a plain run (the load phase)
        total_ops = (r.get("total") or {}).get("ops", 0)
    out["ops"] = total_ops
    out["phases"] = state_report.per_phase(entry, r)
    out["max_throughput_per_s"] = r.get("max_throughput_per_s")
    out["max_throughput_p90_under_10ms_per_s"] = r.get("max_throughput_p90_under_10ms_per_s")
    out["max_throughput_p99_under_10ms_per_s"] = r.get("max_throughput_p99_under_10ms_per_s")
    for k, src in [("p50", "latency_p50_ms"), ("p90", "latency_p90_ms"), ("p99", "latency_p99_ms"),
                   ("p999", "latency_p999_ms"), ("max", "latency_max_ms")]:
        out[f"half_max_{k}_ms"] = half.get(src)
    all_ops = load_ops = total_ops
    out["server_cpu_ms_per_1000_ops"] = entry["server_cpu_s"] * 1e6 / all_ops if all_ops else None
    out["client_cpu_ms_per_1000_ops"] = entry["client_cpu_s"] * 1e6 / load_ops if load_ops else None
    out["curve"] = [
        {"offered": s["offered_rate_per_s"], "achieved": s["total"]["rate_per_s"],
         "p90_ms": s["total"]["latency_p90_ms"], "p99_ms": s["total"]["latency_p99_ms"], "reached": s["reached"]}
        for s in r.get("steps") or []
    ]
    return out


# latte 0.29's percentile list (stats/percentiles.rs): Min, 1, 2, 5, 10, 25, 50, 75, 90, 95, 98,
# 99, 99.9, 99.99, Max.
LATTE_PCT = {"p50": 6, "p90": 8, "p99": 11, "p999": 12, "max": 14}
# The latte table: (key, label); each shown for Helenus and Cassandra, then their ratio.
LATTE_SUMMARY = [("max_throughput_per_s", "op/s"), ("probe_p99_ms", "P99 at max (ms)"),
                 ("half_max_p50_ms", "P50 at 50% (ms)"), ("half_max_p99_ms", "P99 at 50% (ms)"),
                 ("half_max_p999_ms", "P99.9 at 50% (ms)"), ("server_cpu_ms_per_1000_ops", "server CPU ms / 1k ops"),
                 ("client_cpu_ms_per_1000_ops", "client CPU ms / 1k ops")]


def latte_pcts(report, prefix, out):
    lat = ((report or {}).get("result") or {}).get("cycle_latency") or {}
    pct = lat.get("percentiles") or []
    for k, i in LATTE_PCT.items():
        out[f"{prefix}_{k}_ms"] = pct[i]["value"] if i < len(pct) else None


def summarize_latte(entry):
    """A latte manifest line: the closed-loop report (json) and the half-rate one (half_json)."""
    mx, half = load(entry["json"]) or {}, load(entry.get("half_json", "")) or {}
    out = dict(entry)
    res, hres = mx.get("result") or {}, half.get("result") or {}
    out["max_throughput_per_s"] = (res.get("cycle_throughput") or {}).get("value")
    out["half_max_rate_per_s"] = (hres.get("cycle_throughput") or {}).get("value")
    latte_pcts(mx, "probe", out)
    latte_pcts(half, "half_max", out)
    out["errors"] = (res.get("error_count") or 0) + (hres.get("error_count") or 0)
    out["rows_per_read"] = res.get("row_count_per_req")
    ops = (res.get("cycle_count") or 0) + (hres.get("cycle_count") or 0)
    out["ops"] = ops
    out["server_cpu_ms_per_1000_ops"] = entry["server_cpu_s"] * 1e6 / ops if ops else None
    out["client_cpu_ms_per_1000_ops"] = entry["client_cpu_s"] * 1e6 / ops if ops else None
    return out


def latte_markdown(latte, servers):
    by = {(r["server"], r["workload"], r["dist"]): r for r in latte}
    keys = sorted({(r["workload"], r["dist"]) for r in latte},
                  key=lambda k: (["write", "read", "mixed"].index(k[0]), DIST_ORDER.index(k[1]) if k[1] in DIST_ORDER else 9))
    md = ["## latte (second client)", "",
          "latte 0.29 with `bench/standard1.rn`: a closed-loop run for the maximum, then a fixed-rate run at half "
          "of it for the percentiles. Client CPU is latte's own (user + system of both runs).", ""]
    if "helenus" in servers and "cassandra" in servers:
        md += ["| workload | " + " | ".join(f"H {l} | C {l} | H/C" for _, l in LATTE_SUMMARY) + " |",
               "|---|" + "---|---|---|" * len(LATTE_SUMMARY)]
        for wl, d in keys:
            h, c = by.get(("helenus", wl, d)) or {}, by.get(("cassandra", wl, d)) or {}
            cells = []
            for k, _ in LATTE_SUMMARY:
                hv, cv = h.get(k), c.get(k)
                cells += [fmt(hv), fmt(cv), f"{hv / cv:.2f}" if hv is not None and cv else "-"]
            md.append(f"| {wl}/{d} | " + " | ".join(cells) + " |")
        md.append("")
    md += ["| server | workload | max op/s | P50 / P99 / P99.9 at max (ms) | half rate offered / achieved (op/s) | P50 / P99 / P99.9 / max at 50% (ms) "
           "| server CPU s | client CPU s | server RSS (MiB) | rows per op | errors | other cores |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for wl, d in keys:
        for s in servers:
            r = by.get((s, wl, d))
            if r:
                md.append(f"| {s} | {wl}/{d} | {fmt(r.get('max_throughput_per_s'))} | "
                          f"{fmt(r.get('probe_p50_ms'))} / {fmt(r.get('probe_p99_ms'))} / {fmt(r.get('probe_p999_ms'))} | "
                          f"{fmt(r.get('half_rate_per_s'))} / {fmt(r.get('half_max_rate_per_s'))} | {fmt(r.get('half_max_p50_ms'))} / {fmt(r.get('half_max_p99_ms'))} / "
                          f"{fmt(r.get('half_max_p999_ms'))} / {fmt(r.get('half_max_max_ms'))} | {fmt(r['server_cpu_s'])} | "
                          f"{fmt(r['client_cpu_s'])} | {r.get('server_rss_mib', '-')} | {fmt(r.get('rows_per_read'))} | "
                          f"{r.get('errors', 0)} | {r['other_cores']:.2f} |")
    md.append("")
    return md


def fmt(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="quick")
    ap.add_argument("--commit", default="")
    ap.add_argument("--settings", default="")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    rows, latte = [], []
    with open(a.manifest) as f:
        for line in f:
            if line.strip():
                e = json.loads(line)
                if e.get("client") == "latte":
                    latte.append(summarize_latte(e))
                else:
                    rows.append(summarize(e))
    servers = sorted({r["server"] for r in rows + latte}, key=["helenus", "cassandra", "ceiling"].index)
    steady = []
    if a.mode == "steady":
        with open(a.manifest) as f:
            steady = [steady_report.summarize(json.loads(line)) for line in f if '"latte"' in line]
    runs = [r for r in rows if r["workload"] != "load"]
    keys = sorted({(r["workload"], r["dist"]) for r in runs}, key=lambda k: (["write", "read", "mixed"].index(k[0]), DIST_ORDER.index(k[1]) if k[1] in DIST_ORDER else 9, k[1]))
    by = {(r["server"], r["workload"], r["dist"]): r for r in runs}
    trustworthy = all(r["trustworthy"] for r in rows + latte)
    result = {"mode": a.mode, "commit": a.commit, "settings": a.settings, "trustworthy": trustworthy,
              "servers": servers, "runs": rows, "latte_runs": latte, "steady_runs": steady}
    with open(a.out + ".json", "w") as f:
        json.dump(result, f, indent=1)

    title = f"{a.title} " if a.title else ""
    md = [f"# Benchmark {title}{os.path.basename(a.out)} ({a.mode})", "", f"Settings: {a.settings}", ""]
    if not trustworthy:
        md += ["**NOT TRUSTWORTHY: the machine was not quiet** (other processes used more CPU than allowed; "
               "see `other_cores` per run in the JSON).", ""]
    failed = [r for r in rows + latte if r.get("exit_code")]
    if failed:
        md += ["**Runs that failed** (client exit code; see its log):", ""]
        md += [f"- {r.get('client', 'stress')} {r['server']} {r['workload']}/{r['dist']}: exit {r['exit_code']} ({r['json']}.log)" for r in failed]
        md.append("")
    if "helenus" in servers and "cassandra" in servers and runs:
        md += ["## Summary: Helenus vs Cassandra", "",
               "| workload | " + " | ".join(f"H {l} | C {l} | H/C" for _, l in SUMMARY) + " |",
               "|---|" + "---|---|---|" * len(SUMMARY)]
        for wl, d in keys:
            h, c = by.get(("helenus", wl, d)) or {}, by.get(("cassandra", wl, d)) or {}
            cells = []
            for k, _ in SUMMARY:
                hv, cv = h.get(k), c.get(k)
                cells += [fmt(hv), fmt(cv), f"{hv / cv:.2f}" if hv is not None and cv else "-"]
            md.append(f"| {wl}/{d} | " + " | ".join(cells) + " |")
        md.append("")
    loads = [r for r in rows if r["workload"] == "load"]
    if loads:
        md += ["## Load", "", "| server | rows/s | P99 (ms) | server CPU ms / 1k ops | RSS per node (MiB) |", "|---|---|---|---|---|"]
        for r in loads:
            t = (r["stress"].get("total") or {})
            md.append(f"| {r['server']} | {fmt(t.get('rate_per_s'))} | {fmt(t.get('latency_p99_ms'))} | "
                      f"{fmt(r.get('server_cpu_ms_per_1000_ops'))} | {r.get('server_rss_mib_per_node', [r.get('server_rss_mib')])} |")
        md.append("")
    for base, other in [("cassandra", "helenus"), ("cassandra", "ceiling")]:
        if base not in servers or other not in servers or not runs:
            continue
        md += [f"## {other.capitalize()} / Cassandra", "",
               "| workload | " + " | ".join(m[1] for m in METRICS) + " |",
               "|---|" + "---|" * len(METRICS)]
        for wl, d in keys:
            x, y = by.get((other, wl, d)), by.get((base, wl, d))
            cells = []
            for k, _, _ in METRICS:
                xv, yv = (x or {}).get(k), (y or {}).get(k)
                cells.append(f"{xv / yv:.2f}" if xv is not None and yv else "-")
            md.append(f"| {wl}/{d} | " + " | ".join(cells) + " |")
        md.append("")
    if runs:
        md += ["## Absolute numbers", "", "| server | workload | " + " | ".join(m[1] for m in METRICS) + " | RSS per node (MiB) | errors | other cores | steal cores | trustworthy |",
               "|---|---|" + "---|" * (len(METRICS) + 5)]
    for wl, d in keys:
        for s in servers:
            r = by.get((s, wl, d))
            if r:
                md.append(f"| {s} | {wl}/{d} | " + " | ".join(fmt(r.get(k)) for k, _, _ in METRICS)
                          + f" | {r.get('server_rss_mib_per_node', '-')} | {r.get('errors', 0)} | {r['other_cores']:.2f} | {steal_cores(r)} | {r['trustworthy']} |")
    md.append("")
    md += state_report.markdown(runs, servers, keys, fmt)
    if steady:
        md += steady_report.markdown(steady, servers, fmt)
    if latte:
        md += latte_markdown(latte, servers)
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md))

    pngs = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for wl, d in keys:
            fig, axes = plt.subplots(1, 2, figsize=(10, 4))
            for ax, q in zip(axes, ["p90_ms", "p99_ms"]):
                for s in servers:
                    c = (by.get((s, wl, d)) or {}).get("curve") or []
                    if c:
                        ax.plot([p["offered"] for p in c], [p[q] for p in c], marker="o", label=s)
                ax.set_yscale("log"); ax.set_xlabel("offered rate (op/s)"); ax.set_ylabel(q.replace("_ms", " latency (ms)"))
                ax.axhline(10, color="grey", lw=0.5, ls="--"); ax.grid(alpha=0.3); ax.legend()
            fig.suptitle(f"{wl} / {d}")
            fig.tight_layout()
            png = f"{a.out}-{wl}-{d}.png"
            fig.savefig(png, dpi=80); plt.close(fig); pngs.append(png)
        if latte:
            lkeys = sorted({(r["workload"], r["dist"]) for r in latte},
                           key=lambda k: (["write", "read", "mixed"].index(k[0]), DIST_ORDER.index(k[1]) if k[1] in DIST_ORDER else 9))
            lby = {(r["server"], r["workload"], r["dist"]): r for r in latte}
            fig, axes = plt.subplots(1, 2, figsize=(12, 4))
            width = 0.8 / max(1, len(servers))
            for ax, (k, label) in zip(axes, [("max_throughput_per_s", "max throughput (op/s)"), ("half_max_p99_ms", "P99 at 50% of max (ms)")]):
                for j, s in enumerate(servers):
                    ys = [(lby.get((s, wl, d)) or {}).get(k) or 0 for wl, d in lkeys]
                    ax.bar([i + j * width for i in range(len(lkeys))], ys, width, label=s)
                ax.set_xticks([i + width * (len(servers) - 1) / 2 for i in range(len(lkeys))])
                ax.set_xticklabels([f"{wl}/{d}" for wl, d in lkeys], rotation=45, ha="right", fontsize=8)
                ax.set_ylabel(label); ax.grid(alpha=0.3, axis="y"); ax.legend()
            fig.suptitle("latte (second client)")
            fig.tight_layout()
            png = f"{a.out}-latte.png"
            fig.savefig(png, dpi=80); plt.close(fig); pngs.append(png)
        if steady:
            pngs += steady_report.plot(steady, servers, a.out, plt)
    except ImportError:
        print("matplotlib not available: no PNGs", file=sys.stderr)

    body = [f"<h1>Benchmark {html.escape(os.path.basename(a.out))}</h1>", f"<p>{html.escape(a.settings)}</p>"]
    if not trustworthy:
        body.append("<p style='color:red'><b>Not trustworthy: the machine was not quiet.</b></p>")
    body += [f"<img src='{html.escape(os.path.basename(p))}'>" for p in pngs]
    body.append("<pre>" + html.escape("\n".join(md)) + "</pre>")
    with open(a.out + ".html", "w") as f:
        f.write("<!doctype html><html><head><meta charset='utf-8'><title>bench</title></head><body>"
                + "\n".join(body) + "</body></html>\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
