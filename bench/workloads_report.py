#!/usr/bin/env python3
"""Turns bench/workloads.sh's manifest (one line per helenus-stress run) and admin log (one line per
timed nodetool operation) into <out>.json (every number), <out>.md (Helenus and Cassandra side by
side, with ratios) and <out>-timeseries.png / <out>-logstore.png."""
import argparse, json, sys
from jsonfile import load

SERVERS = ["helenus", "cassandra"]
# `nodetool tablehistograms`-style columns, from helenus-stress's per-op summary (client side).
PCTS = [("latency_p50_ms", "P50"), ("latency_p95_ms", "P95"), ("latency_p99_ms", "P99"),
        ("latency_p999_ms", "P99.9"), ("latency_max_ms", "max")]


def read_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def fmt(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def timeseries(manifest):
    out = {}
    for e in manifest:
        if e["workload"] != "timeseries":
            continue
        r = load(e["json"]) or {}
        steps = []
        for s in r.get("steps") or []:
            ops = {name: {k: v for k, v in o.items()} for name, o in (s.get("ops") or {}).items()}
            steps.append({"requested_rate_per_s": s.get("requested_rate_per_s"),
                          "achieved_rate_per_s": s.get("achieved_rate_per_s"),
                          "reached": s.get("reached"), "ops": ops})
        out[e["server"]] = {"steps": steps, "settings": r.get("timeseries"),
                            "populate": ((r.get("populate") or {}).get("total")),
                            **{k: e.get(k) for k in ("exit_code", "wall_s", "server_cpu_s", "client_cpu_s",
                                                     "other_cores", "trustworthy", "server_rss_mib")}}
    return out


def logstore(manifest, admin):
    out = {}
    for e in manifest:
        if e["workload"] != "logstore":
            continue
        stage = int(e["dist"].removeprefix("stage"))
        r = load(e["json"]) or {}
        hist = e["json"].replace(f"-logstore-{stage}.json", f"-tablehistograms-{stage}.txt")
        try:
            with open(hist) as f:
                server_hist = f.read()
        except OSError:
            server_hist = None
        st = {"stage": stage, "total": r.get("total"), "ops": r.get("ops") or {}, "server_tablehistograms": server_hist,
              **{k: e.get(k) for k in ("exit_code", "wall_s", "server_cpu_s", "client_cpu_s", "other_cores", "trustworthy")}}
        for a in admin:
            if a.get("server") == e["server"] and a.get("stage") == stage:
                st[a["op"]] = {**a, "net_ms": max(0, a["ms"] - a["nodetool_startup_ms"])}
        out.setdefault(e["server"], {"stages": []})["stages"].append(st)
    for a in admin:
        if a.get("op") == "rss" and a["server"] in out:
            out[a["server"]]["rss_mib_at_end"] = a.get("rss_mib")
    for v in out.values():
        v["stages"].sort(key=lambda s: s["stage"])
    return out


def ts_markdown(ts):
    servers = [s for s in SERVERS if s in ts]
    md = ["## Time series (tlp-stress BasicTimeSeries)", "",
          "Per fixed-rate step: achieved vs requested op/s, and for inserts and reads apart the average and the "
          "maximum of the P99 of each 1 s interval (ms; open model, latency from each request's due time).", ""]
    hdr = "| requested op/s |"
    for s in servers:
        hdr += f" {s} achieved | {s} insert P99 avg / max | {s} read P99 avg / max |"
    if len(servers) == 2:
        hdr += " achieved H/C | insert max-P99 C/H | read max-P99 C/H |"
    md += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    rates = []
    for s in servers:
        for st in ts[s]["steps"]:
            if st["requested_rate_per_s"] not in rates:
                rates.append(st["requested_rate_per_s"])
    by = {(s, st["requested_rate_per_s"]): st for s in servers for st in ts[s]["steps"]}
    for rate in rates:
        row = f"| {fmt(rate)} |"
        vals = {}
        for s in servers:
            st = by.get((s, rate)) or {}
            ins, sel = (st.get("ops") or {}).get("insert") or {}, (st.get("ops") or {}).get("select") or {}
            vals[s] = (st.get("achieved_rate_per_s"), ins.get("interval_p99_max_ms"), sel.get("interval_p99_max_ms"))
            mark = "" if st.get("reached", True) else " (not reached)"
            row += (f" {fmt(st.get('achieved_rate_per_s'))}{mark} | {fmt(ins.get('interval_p99_avg_ms'))} / {fmt(ins.get('interval_p99_max_ms'))} |"
                    f" {fmt(sel.get('interval_p99_avg_ms'))} / {fmt(sel.get('interval_p99_max_ms'))} |")
        if len(servers) == 2:
            h, c = vals["helenus"], vals["cassandra"]
            row += f" {ratio(h[0], c[0])} | {ratio(c[1], h[1])} | {ratio(c[2], h[2])} |"
        md.append(row)
    md += ["", "| server | server CPU s | client CPU s | wall s | other cores | errors |", "|---|---|---|---|---|---|"]
    for s in servers:
        v = ts[s]
        errors = sum((o.get("errors") or 0) for st in v["steps"] for o in st["ops"].values())
        md.append(f"| {s} | {fmt(v.get('server_cpu_s'))} | {fmt(v.get('client_cpu_s'))} | {fmt(v.get('wall_s'))} | "
                  f"{fmt(v.get('other_cores'))} | {errors} |")
    md.append("")
    return md


def ls_markdown(ls):
    servers = [s for s in SERVERS if s in ls]
    md = ["## Log store with TTL (wide partitions)", "",
          "After each stage of inserts: client-side latency percentiles per operation (ms, like `nodetool "
          "tablehistograms`), then the time of `nodetool compact` and `nodetool garbagecollect` on the table "
          "(`net` = minus the nodetool client's own start-up, a JVM for Cassandra's).", ""]
    wcols = " | ".join(f"write {l}" for _, l in PCTS)
    rcols = " | ".join(f"read {l}" for _, l in PCTS)
    md += [f"| stage | server | rows/s | {wcols} | {rcols} | compact ms (net) | garbagecollect ms (net) | size after (MB) | SSTables |",
           "|---|---|---|" + "---|" * (2 * len(PCTS)) + "---|---|---|---|"]
    stages = sorted({st["stage"] for s in servers for st in ls[s]["stages"]})
    by = {(s, st["stage"]): st for s in servers for st in ls[s]["stages"]}
    for k in stages:
        for s in servers:
            st = by.get((s, k))
            if not st:
                continue
            w, r = st["ops"].get("insert") or {}, st["ops"].get("select") or {}
            c, g = st.get("compact") or {}, st.get("garbagecollect") or {}
            md.append(f"| {k} | {s} | {fmt(w.get('rate_per_s'))} | " + " | ".join(fmt(w.get(p)) for p, _ in PCTS) + " | "
                      + " | ".join(fmt(r.get(p)) for p, _ in PCTS)
                      + f" | {fmt(c.get('ms'))} ({fmt(c.get('net_ms'))}) | {fmt(g.get('ms'))} ({fmt(g.get('net_ms'))}) | "
                      f"{fmt((g.get('bytes_after') or 0) / 1e6)} | {g.get('sstables_after', '-')} |")
    if len(servers) == 2:
        md += ["", "| stage | compact net C/H | garbagecollect net C/H | write P99 C/H | read P99 C/H |", "|---|---|---|---|---|"]
        for k in stages:
            h, c = by.get(("helenus", k)) or {}, by.get(("cassandra", k)) or {}
            get = lambda d, op, key: ((d.get(op) or {}).get(key))
            md.append(f"| {k} | {ratio(get(c, 'compact', 'net_ms'), get(h, 'compact', 'net_ms'))} | "
                      f"{ratio(get(c, 'garbagecollect', 'net_ms'), get(h, 'garbagecollect', 'net_ms'))} | "
                      f"{ratio((c.get('ops', {}).get('insert') or {}).get('latency_p99_ms'), (h.get('ops', {}).get('insert') or {}).get('latency_p99_ms'))} | "
                      f"{ratio((c.get('ops', {}).get('select') or {}).get('latency_p99_ms'), (h.get('ops', {}).get('select') or {}).get('latency_p99_ms'))} |")
    md += ["", "| server | RSS at end (MiB) | server CPU s (during the insert stages) | client CPU s | other cores (max) |", "|---|---|---|---|---|"]
    for s in servers:
        sts = ls[s]["stages"]
        md.append(f"| {s} | {ls[s].get('rss_mib_at_end', '-')} | {fmt(sum(st.get('server_cpu_s') or 0 for st in sts))} | "
                  f"{fmt(sum(st.get('client_cpu_s') or 0 for st in sts))} | {fmt(max((st.get('other_cores') or 0) for st in sts) if sts else None)} |")
    md.append("")
    return md


def plots(out, ts, ls):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no PNGs", file=sys.stderr)
        return []
    pngs = []
    if ts:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for s, v in ts.items():
            req = [st["requested_rate_per_s"] for st in v["steps"]]
            axes[0].plot(req, [st["achieved_rate_per_s"] for st in v["steps"]], marker="o", label=s)
            for ax, op in zip(axes[1:], ["insert", "select"]):
                ops = [st["ops"].get(op) or {} for st in v["steps"]]
                line, = ax.plot(req, [o.get("interval_p99_avg_ms") for o in ops], marker="o", label=f"{s} avg")
                ax.plot(req, [o.get("interval_p99_max_ms") for o in ops], marker="x", ls="--", color=line.get_color(), label=f"{s} max")
        lim = max((st["requested_rate_per_s"] for v in ts.values() for st in v["steps"]), default=1)
        axes[0].plot([0, lim], [0, lim], color="grey", lw=0.5, ls="--")
        axes[0].set_xlabel("requested op/s"); axes[0].set_ylabel("achieved op/s"); axes[0].legend(); axes[0].grid(alpha=0.3)
        for ax, op in zip(axes[1:], ["insert", "select"]):
            ax.set_yscale("log"); ax.set_xlabel("requested op/s"); ax.set_ylabel(f"{op} P99 per 1 s interval (ms)")
            ax.axhline(10, color="grey", lw=0.5, ls="--"); ax.grid(alpha=0.3); ax.legend(fontsize=8)
        fig.suptitle("time series: achieved rate, P99 per interval (avg and max)")
        fig.tight_layout(); png = f"{out}-timeseries.png"; fig.savefig(png, dpi=80); plt.close(fig); pngs.append(png)
    if ls:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        servers = [s for s in SERVERS if s in ls]
        width = 0.8 / max(1, len(servers))
        for j, s in enumerate(servers):
            sts = ls[s]["stages"]
            xs = [st["stage"] + j * width for st in sts]
            axes[0].bar(xs, [(st.get("compact") or {}).get("net_ms", 0) / 1e3 for st in sts], width, label=s)
            axes[1].bar(xs, [(st.get("garbagecollect") or {}).get("net_ms", 0) / 1e3 for st in sts], width, label=s)
            axes[2].plot([st["stage"] for st in sts], [(st["ops"].get("insert") or {}).get("latency_p99_ms") for st in sts], marker="o", label=f"{s} write")
            axes[2].plot([st["stage"] for st in sts], [(st["ops"].get("select") or {}).get("latency_p99_ms") for st in sts], marker="x", ls="--", label=f"{s} read")
        stages = sorted({st["stage"] for s in servers for st in ls[s]["stages"]})
        for ax, label in zip(axes, ["nodetool compact (s, net)", "nodetool garbagecollect (s, net)", "P99 (ms)"]):
            ax.set_xlabel("stage"); ax.set_ylabel(label); ax.grid(alpha=0.3, axis="y"); ax.legend(fontsize=8)
            ax.set_xticks([k + (width * (len(servers) - 1) / 2 if ax is not axes[2] else 0) for k in stages])
            ax.set_xticklabels([str(k) for k in stages])
        axes[2].set_yscale("log")
        fig.suptitle("log store with TTL: admin operations and latency after each stage")
        fig.tight_layout(); png = f"{out}-logstore.png"; fig.savefig(png, dpi=80); plt.close(fig); pngs.append(png)
    return pngs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--admin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="quick")
    ap.add_argument("--commit", default="")
    ap.add_argument("--settings", default="")
    a = ap.parse_args()
    manifest, admin = read_lines(a.manifest), read_lines(a.admin)
    ts, ls = timeseries(manifest), logstore(manifest, admin)
    trustworthy = all(e.get("trustworthy") for e in manifest)
    doc = {"mode": a.mode, "commit": a.commit, "settings": a.settings, "trustworthy": trustworthy,
           "timeseries": ts, "logstore": ls, "runs": manifest, "admin": admin}
    with open(a.out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    md = [f"# Workloads {a.out.rsplit('/', 1)[-1]} ({a.mode})", "", f"Settings: {a.settings}", ""]
    if not trustworthy:
        md += ["**NOT TRUSTWORTHY: the machine was not quiet** (2 cores shared with other work; see `other_cores` "
               "per run in the JSON). Read the ratios, not the absolute numbers.", ""]
    failed = [e for e in manifest if e.get("exit_code")] + [x for x in admin if x.get("exit_code")]
    if failed:
        md += ["**Runs or nodetool calls that failed:**", ""]
        md += [f"- {e.get('server')} {e.get('workload', e.get('op'))} {e.get('dist', e.get('stage', ''))}: exit {e['exit_code']}" for e in failed]
        md.append("")
    if ts:
        md += ts_markdown(ts)
    if ls:
        md += ls_markdown(ls)
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md))
    plots(a.out, ts, ls)
    print("\n".join(md))


if __name__ == "__main__":
    main()
