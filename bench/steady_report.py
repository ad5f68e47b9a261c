"""The `bench/run.sh steady` part of a report: one long fixed-rate latte run per server and
workload, judged by the P99 of every 1 s interval (the GC studies' "max P99 per interval", where a
collector's pauses show) rather than by the run's overall percentiles, which hide a bad second.
Imported by bench/report.py."""
from jsonfile import load

# latte 0.29's percentile list (stats/percentiles.rs): Min, 1, 2, 5, 10, 25, 50, 75, 90, 95, 98,
# 99, 99.9, 99.99, Max.
P99, P999, MAX = 11, 12, 14
LIMIT_MS = 10.0


def intervals(report):
    """(seconds since start, op/s, P99 ms, max ms) of each of latte's 1 s samples."""
    out = []
    for s in ((report or {}).get("result") or {}).get("log") or []:
        pct = (s.get("cycle_latency") or {}).get("percentiles") or []
        if len(pct) > MAX:
            out.append((s.get("time_s"), (s.get("cycle_throughput") or 0), pct[P99]["value"], pct[MAX]["value"]))
    return out


def summarize(entry):
    """A steady run: the fixed-rate report is the manifest line's half_json."""
    rep = load(entry.get("half_json", "")) or {}
    res = rep.get("result") or {}
    iv = intervals(rep)
    p99s = [p for _, _, p, _ in iv]
    pct = (res.get("cycle_latency") or {}).get("percentiles") or []
    # The server's CPU was measured over the closed-loop probe too (Helenus's runs have one).
    probe = ((load(entry.get("json", "")) or {}).get("result") or {})
    ops = (res.get("cycle_count") or 0) + (probe.get("cycle_count") or 0)
    return {
        "server": entry["server"], "workload": entry["workload"], "dist": entry["dist"],
        "requested_per_s": entry.get("half_rate_per_s"),
        "achieved_per_s": (res.get("cycle_throughput") or {}).get("value"),
        "seconds": len(iv),
        "intervals_p99_over_10ms": sum(1 for p in p99s if p > LIMIT_MS),
        "max_interval_p99_ms": max(p99s) if p99s else None,
        "mean_interval_p99_ms": sum(p99s) / len(p99s) if p99s else None,
        "p99_ms": pct[P99]["value"] if len(pct) > MAX else None,
        "p999_ms": pct[P999]["value"] if len(pct) > MAX else None,
        "max_ms": pct[MAX]["value"] if len(pct) > MAX else None,
        "errors": res.get("error_count") or 0,
        "server_cpu_ms_per_1000_ops": entry["server_cpu_s"] * 1e6 / ops if ops else None,
        "server_rss_mib": entry.get("server_rss_mib"),
        "other_cores": entry.get("other_cores"),
        "intervals": iv,
    }


def markdown(steady, servers, fmt):
    md = ["## Steady rate: the P99 of every second", "",
          "latte at a fixed rate (half of Helenus's closed-loop maximum on the same workload, measured first in "
          "the same run) for the whole duration, flushes and compactions included. Aim (issue 14): no 1 s "
          "interval with a P99 above 10 ms.", "",
          "| server | workload | requested / achieved op/s | seconds | seconds with P99 > 10 ms | max / mean P99 per second (ms) "
          "| P99 / P99.9 / max overall (ms) | server CPU ms / 1k ops | RSS (MiB) | errors |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(steady, key=lambda r: (r["workload"], servers.index(r["server"]))):
        md.append(f"| {r['server']} | {r['workload']}/{r['dist']} | {fmt(r['requested_per_s'])} / {fmt(r['achieved_per_s'])} | "
                  f"{r['seconds']} | {r['intervals_p99_over_10ms']} | {fmt(r['max_interval_p99_ms'])} / {fmt(r['mean_interval_p99_ms'])} | "
                  f"{fmt(r['p99_ms'])} / {fmt(r['p999_ms'])} / {fmt(r['max_ms'])} | {fmt(r['server_cpu_ms_per_1000_ops'])} | "
                  f"{r['server_rss_mib']} | {r['errors']} |")
    md.append("")
    return md


def plot(steady, servers, out, plt):
    """One PNG per workload: each server's P99 per second over the run."""
    pngs = []
    for wl in sorted({r["workload"] for r in steady}):
        fig, ax = plt.subplots(figsize=(12, 4))
        for s in servers:
            for r in steady:
                if r["server"] == s and r["workload"] == wl and r["intervals"]:
                    ax.plot([t for t, _, _, _ in r["intervals"]], [p for _, _, p, _ in r["intervals"]], lw=0.8,
                            label=f"{s} ({fmt_rate(r['achieved_per_s'])} op/s)")
        ax.axhline(LIMIT_MS, color="grey", lw=0.5, ls="--")
        ax.set_yscale("log"); ax.set_xlabel("seconds"); ax.set_ylabel("P99 of the second (ms)")
        ax.grid(alpha=0.3); ax.legend(); ax.set_title(f"steady {wl}: P99 per 1 s interval")
        fig.tight_layout()
        png = f"{out}-steady-{wl}.png"
        fig.savefig(png, dpi=80); plt.close(fig); pngs.append(png)
    return pngs


def fmt_rate(x):
    return f"{x:,.0f}" if x else "-"
