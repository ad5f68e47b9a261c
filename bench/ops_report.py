#!/usr/bin/env python3
"""Report of bench/ops.sh: <out>.json (every number), <out>.md (Helenus/Cassandra table, the aims of
issue 13) and <out>.png (background P99 per second over time, each operation's span marked, one panel
per server).

Inputs in --work: times.jsonl (one line per operation: server, op, start, end epoch seconds, seconds,
extras; or a note), and per server <server>-bg/N.hdr + N.json, the background load's consecutive
helenus-stress runs (HDR interval logs: one histogram per op and second, microseconds, timestamps
relative to the log's BaseTime). An operation's window P99 merges the histograms of the seconds that
overlap it; "max P99" is the largest per-second P99 among them (read and write merged)."""
import argparse, base64, glob, json, math, os, struct, zlib

OPS = [  # (op, label, moves data)
    ("load", "load keyspace1 (STCS)", False), ("load_lcs", "load keyspace2 (LCS)", False),
    ("add", "add a 4th node", True), ("cleanup", "cleanup x3 after the add", True),
    ("decommission", "decommission the 4th", True),
    ("double_1", "3->4 (double)", True), ("double_2", "4->5 (double)", True), ("double_3", "5->6 (double)", True),
    ("double", "double 3->6 total", False),
    ("shrink_1", "6->5 (decommission)", True), ("shrink_2", "5->4 (decommission)", True),
    ("shrink_3", "4->3 (decommission)", True), ("shrink", "back to 3 total", False),
    ("dead_until_down", "node3 killed, until node1 sees it DN", False), ("replace", "replace a dead node", True), ("repair_in_sync", "repair, replicas in sync", False),
    ("repair_inc_first", "first incremental repair", False), ("repair_inc_again", "incremental repair again", False),
    ("missed_writes", "writes node3 misses", False), ("repair_missed", "repair after missed writes", False),
    ("compact", "major compaction (STCS)", False), ("compact_lcs", "major compaction (LCS)", False),
    ("garbagecollect", "garbagecollect (both), nothing deleted", False),
    ("deletes", "delete 5% of keyspace1's partitions", False), ("gc_deleted", "garbagecollect keyspace1 after the deletes", False),
    ("deletes_2", "delete 5% more (other keys)", False),
    ("gc_unthrottled", "the same garbagecollect, compaction_throughput 0 on both", False),
]
BG_OPS = [op for op, _, _ in OPS if not op.startswith("load")]
# Steps that set an operation up rather than being one of the operations: waiting for a
# killed node to be seen down, and writing the rows a stopped node misses (a write burst of its
# own, beside the background load), and deleting the partitions a garbagecollect then drops (a
# delete burst). Their background P99 is reported but not held to the aim.
SETUP_OPS = ("dead_until_down", "missed_writes", "deletes", "deletes_2")
AIMS = [  # (op, max Helenus/Cassandra ratio, text)
    ("add", 1 / 3, "add a node >= 3x faster"), ("double_1", 1 / 3, "add >= 3x faster, doubling step 3->4"),
    ("double_2", 1 / 3, "add >= 3x faster, doubling step 4->5"), ("double_3", 1 / 3, "add >= 3x faster, doubling step 5->6"),
    ("replace", 1 / 3, "replace a dead node >= 3x faster"), ("repair_in_sync", 1 / 5, "repair of in-sync replicas <= 1/5 of the time"),
    ("repair_inc_again", 1 / 5, "incremental repair of in-sync replicas <= 1/5 of the time"),
    ("garbagecollect", 1 / 3, "garbagecollect <= 1/3 of the time, nothing to collect"),
    ("gc_deleted", 1 / 3, "garbagecollect <= 1/3 of the time, after deletes"),
    ("gc_unthrottled", 1 / 3, "garbagecollect <= 1/3 of the time, after deletes, compaction_throughput lifted on both"),
]
P99_AIM_MS = 10.0


# ---- HdrHistogram V2 (compressed) decoding ----
class Hist:
    def __init__(self, sig, lowest):
        self.sig = sig
        self.unit_mag = int(math.floor(math.log2(max(lowest, 1))))
        self.sub_mag = int(math.ceil(math.log2(2 * 10 ** sig)))
        self.half_mag = self.sub_mag - 1
        self.half = 1 << self.half_mag
        self.counts = {}  # index -> count
        self.total = 0

    def value_at(self, index):
        bucket = (index >> self.half_mag) - 1
        sub = (index & (self.half - 1)) + self.half
        if bucket < 0:
            sub -= self.half
            bucket = 0
        low = sub << (bucket + self.unit_mag)
        return low + (1 << (bucket + self.unit_mag)) - 1  # highest equivalent value

    def merge(self, other):
        if (other.sig, other.unit_mag) != (self.sig, self.unit_mag):
            raise ValueError("histograms with different layouts")
        for i, c in other.counts.items():
            self.counts[i] = self.counts.get(i, 0) + c
        self.total += other.total

    def percentile(self, q):
        if self.total == 0:
            return None
        want = max(1, math.ceil(q / 100.0 * self.total))
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= want:
                return self.value_at(i)
        return self.value_at(max(self.counts))


def varint_zigzag(buf, pos):
    """One ZigZag LEB128 64-bit value (HdrHistogram's V2 payload: at most 9 bytes, the 9th whole)."""
    result = 0
    for i in range(8):
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            break
    else:
        result |= buf[pos] << 56
        pos += 1
    return (result >> 1) ^ -(result & 1), pos


def decode(b64):
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack(">ii", raw[:8])
    if cookie & ~0xFF == 0x1C849300 and (cookie & 0x0F) == 4:  # compressed envelope
        raw = zlib.decompress(raw[8:8 + length])
    _, payload_len, _norm, sig, lowest, _highest, _ratio = struct.unpack(">iiiiqqd", raw[:40])
    h = Hist(sig, lowest)
    buf, pos, end, index = raw, 40, 40 + payload_len, 0
    while pos < end:
        v, pos = varint_zigzag(buf, pos)
        if v < 0:
            index += -v
        else:
            if v:
                h.counts[index] = h.counts.get(index, 0) + v
                h.total += v
            index += 1
    return h


def read_hdr(path):
    """[(start epoch s, duration s, tag, Hist)]."""
    base, out = 0.0, []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        if line.startswith("#[BaseTime:"):
            base = float(line.split()[1])
        elif line.startswith("#") or line.startswith('"') or not line.strip():
            continue
        else:
            parts = line.split(",")
            tag = None
            if parts[0].startswith("Tag="):
                tag = parts[0][4:]
                parts = parts[1:]
            try:
                out.append((base + float(parts[0]), float(parts[1]), tag, decode(parts[3])))
            except (ValueError, IndexError, zlib.error, struct.error):
                continue
    return out


def background(work, server):
    """The background load: per-second histograms [(start, end, Hist)] (ops merged) from bg.hdr, and
    failed requests per interval [(end epoch, errors, ops)] from the progress lines (stdout.log;
    "total," lines: cumulative ops and errors, elapsed time since the run's start = the HDR BaseTime)."""
    d = os.path.join(work, f"{server}-bg")
    by_start = {}
    base = None
    for start, dur, _tag, h in read_hdr(os.path.join(d, "bg.hdr")):
        key = round(start, 3)
        if key in by_start:
            by_start[key][2].merge(h)
        else:
            by_start[key] = [start, start + dur, h]
    seconds = [tuple(x) for x in sorted(by_start.values(), key=lambda x: x[0])]
    try:
        for line in open(os.path.join(d, "bg.hdr")):
            if line.startswith("#[BaseTime:"):
                base = float(line.split()[1])
    except OSError:
        pass
    errors, last_ops, last_err = [], 0, 0
    try:
        lines = open(os.path.join(d, "stdout.log")).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if base is None or not line.startswith("total,"):
            continue
        f = [x.strip() for x in line.split(",")]
        try:
            ops, t, err = int(f[1]), float(f[9]), int(f[10])
        except (ValueError, IndexError):
            continue
        errors.append((base + t, err - last_err, ops - last_ops))
        last_ops, last_err = ops, err
    runs = [(seconds[0][0], seconds[-1][1])] if seconds else []
    return seconds, errors, runs


def window_stats(seconds, errors, start, end):
    merged, max_p99, n = None, None, 0
    for s, e, h in seconds:
        if e > start and s < end:
            n += 1
            p = h.percentile(99)
            if p is not None:
                max_p99 = p if max_p99 is None else max(max_p99, p)
            if merged is None:
                merged = Hist(h.sig, 1 << h.unit_mag)
            merged.merge(h)
    errs = sum(x for t, x, _ in errors if start < t <= end + 1)  # intervals ending in the window
    ops = merged.total if merged else 0
    ms = lambda v: None if v is None else round(v / 1000.0, 2)
    return {"bg_seconds": n, "bg_ops": ops, "bg_errors": errs,
            "bg_p50_ms": ms(merged.percentile(50)) if merged else None,
            "bg_p99_ms": ms(merged.percentile(99)) if merged else None,
            "bg_p999_ms": ms(merged.percentile(99.9)) if merged else None,
            "bg_max_p99_ms": ms(max_p99)}


def fmt(v, nd=2):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def main():
    ap = argparse.ArgumentParser()
    for a in ("work", "out", "mode", "rows", "commit", "bench-commit", "rate", "bg-threads", "lcs-mb", "loadavg-before",
              "loadavg-after", "total-s"):
        ap.add_argument("--" + a, default="")
    o = ap.parse_args()
    recs = [json.loads(l) for l in open(os.path.join(o.work, "times.jsonl")) if l.strip()]
    servers = []
    for r in recs:
        if r["server"] not in servers:
            servers.append(r["server"])
    res, notes, series = {}, {}, {}
    for s in servers:
        seconds, errors, runs = background(o.work, s)
        series[s] = (seconds, errors, runs)
        res[s] = {}
        notes[s] = {r["note"]: r["value"] for r in recs if r["server"] == s and "note" in r}
        for r in recs:
            if r["server"] != s or "op" not in r:
                continue
            d = dict(r)
            if r["op"] in BG_OPS:
                d.update(window_stats(seconds, errors, r["start"], r["end"]))
            res[s][r["op"]] = d
        if seconds:
            total = Hist(seconds[0][2].sig, 1 << seconds[0][2].unit_mag)
            for _, _, h in seconds:
                total.merge(h)
            notes[s]["bg_whole_run"] = {"seconds": len(seconds), "ops": total.total,
                                        "p50_ms": round((total.percentile(50) or 0) / 1000, 2),
                                        "p99_ms": round((total.percentile(99) or 0) / 1000, 2),
                                        "errors": sum(e for _, e, _ in errors), "runs": len(runs)}
    h, c = res.get("helenus", {}), res.get("cassandra", {})
    ratios = {op: round(h[op]["seconds"] / c[op]["seconds"], 3) for op, _, _ in OPS
              if op in h and op in c and c[op]["seconds"] > 0}
    aims = []
    for op, limit, text in AIMS:
        if op in ratios:
            aims.append({"op": op, "aim": text, "limit": round(limit, 3),
                         "ratio": ratios[op], "met": ratios[op] <= limit})
    p99_aims = {}
    for s in servers:
        p99_aims[s] = {op: {"p99_ms": d.get("bg_p99_ms"), "met": d.get("bg_p99_ms") is not None and d["bg_p99_ms"] < P99_AIM_MS}
                       for op, d in res[s].items() if op in BG_OPS and op not in ("double", "shrink") + SETUP_OPS}
    lb = [float(x) for x in (o.loadavg_before or "0").split()[:1]]
    la = [float(x) for x in (o.loadavg_after or "0").split()[:1]]
    busy = max(lb + la) > 1.5 or any(
        float(str(notes[s].get(k, "0")).split()[0]) > 1.5 for s in servers for k in ("loadavg_before", "loadavg_after"))
    doc = {"mode": o.mode, "rows": int(o.rows or 0), "commit": o.commit, "bench_commit": o.bench_commit, "background_rate_per_s": int(o.rate or 0),
           "background_threads": int(o.bg_threads or 0), "lcs_sstable_mb": int(o.lcs_mb or 0),
           "loadavg_before": o.loadavg_before, "loadavg_after": o.loadavg_after, "busy": busy,
           "total_s": int(o.total_s or 0), "results": res, "notes": notes,
           "ratio_helenus_over_cassandra": ratios, "aims": aims, "p99_under_10ms": p99_aims}
    json.dump(doc, open(o.out + ".json", "w"), indent=1)

    name = os.path.basename(o.out)
    L = [f"# Admin operations under load, Helenus vs Cassandra 5.0.9 ({o.mode}, {o.rows} rows per table, RF=3, commit {o.commit})", "",
         f"3-node rings on one 2-core machine, one server after the other; keyspace1.standard1 (STCS) and "
         f"keyspace2.standard1 (LCS, {o.lcs_mb} MB SSTables) with {o.rows} rows each, loaded at QUORUM and flushed. "
         f"Background load through every operation: helenus-stress mixed read/write 1:1 on keyspace1 at QUORUM, "
         f"{o.rate} op/s fixed, {o.bg_threads} threads, coordinators node1 and node2 (the driver also uses the "
         f"nodes it discovers). Default stream throttle on both (24 MiB/s). Wall seconds; ratio < 1: Helenus faster. "
         f"MB/s: data moved over the wall time (see bench/ops.sh). bg P99: the background load's P99 over the "
         f"operation's window (merged per-second histograms); max: the largest per-second P99 in it; err: failed "
         f"background requests in the window.", "",
         "| operation | Helenus s | Cassandra s | H/C | Helenus MB/s | Cassandra MB/s | Helenus bg P99 / max (ms) | Cassandra bg P99 / max (ms) | bg err H / C |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for op, label, moves in OPS:
        if op not in h and op not in c:
            continue
        sec = lambda d: fmt(d[op]["seconds"]) if op in d else "—"
        mbs = lambda d: fmt(d[op].get("mb_per_s")) if op in d and moves and "mb_per_s" in d[op] else ""
        p99 = lambda d: (f'{fmt(d[op].get("bg_p99_ms"))} / {fmt(d[op].get("bg_max_p99_ms"))}'
                         if op in d and op in BG_OPS else "")
        err = lambda d: str(d[op].get("bg_errors", "")) if op in d and op in BG_OPS else ""
        L.append(f"| {label} | {sec(h)} | {sec(c)} | {fmt(ratios.get(op), 3)} | {mbs(h)} | {mbs(c)} | "
                 f"{p99(h)} | {p99(c)} | {err(h)}{' / ' if op in BG_OPS else ''}{err(c)} |")
    L += ["", "## Aims (issue 13)", "", "| aim | Helenus/Cassandra | met |", "|---|---:|---|"]
    for a in aims:
        L.append(f"| {a['aim']} (`{a['op']}`, ratio <= {a['limit']:.2f}) | {a['ratio']:.3f} | {'yes' if a['met'] else '**no**'} |")
    for s in servers:
        ok = [op for op, v in p99_aims[s].items() if v["met"]]
        bad = [f"{op} ({fmt(v['p99_ms'])} ms)" for op, v in p99_aims[s].items() if not v["met"]]
        L.append(f"\nForeground (background load) P99 < {P99_AIM_MS:.0f} ms during each operation, {s}: "
                 f"met for {len(ok)} of {len(ok) + len(bad)}" + (f"; not for {', '.join(bad)}." if bad else ".")
                 + f" (Setup steps not counted: {', '.join(SETUP_OPS)}.)")
    L += ["", "## Notes", ""]
    for s in servers:
        n = notes[s]
        w = n.get("bg_whole_run")
        if w:
            L.append(f"- {s}: background load over the whole run: {w['ops']} ops in {w['seconds']} s "
                     f"(the whole run), P50 {w['p50_ms']} ms, P99 {w['p99_ms']} ms, {w['errors']} errors.")
        extra = {k: v for k, v in n.items() if k != "bg_whole_run"}
        if extra:
            L.append(f"- {s}: " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in extra.items()))
        if "nodetool_call" in res[s]:
            L.append(f"- {s}: one no-op nodetool call (`version`) takes {res[s]['nodetool_call']['seconds']:.2f} s; "
                     f"every nodetool-driven time above includes one such call.")
    L.append(f"- Load average before/after: {o.loadavg_before} / {o.loadavg_after}; both rings took {o.total_s} s.")
    if busy:
        L.append("- **The machine was busy** (load average above 1.5 on 2 cores at some point): times and latencies are noisy.")
    L.append(f"\n![background latency]({name}.png)")
    open(o.out + ".md", "w").write("\n".join(L) + "\n")
    print("\n".join(L))
    plot(o, servers, series, res)


def plot(o, servers, series, res):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib unavailable: no PNG")
        return
    servers = [s for s in servers if series[s][0]]
    if not servers:
        return
    fig, axes = plt.subplots(len(servers), 1, figsize=(14, 4.2 * len(servers)), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, s in zip(axes[:, 0], servers):
        seconds, errors, runs = series[s]
        t0 = seconds[0][0]
        xs = [(e - t0) for _, e, _ in seconds]
        p99 = [(h.percentile(99) or 0) / 1000 for _, _, h in seconds]
        p50 = [(h.percentile(50) or 0) / 1000 for _, _, h in seconds]
        ax.plot(xs, p99, lw=0.9, color="black", label="P99 per second")
        ax.plot(xs, p50, lw=0.7, color="grey", label="P50 per second")
        ax.axhline(P99_AIM_MS, color="red", ls="--", lw=0.8, label="10 ms aim")
        k = 0
        for op, label, _ in OPS:
            d = res[s].get(op)
            if not d or op not in BG_OPS or op in ("double", "shrink"):
                continue
            a, b = d["start"] - t0, d["end"] - t0
            ax.axvspan(a, b, color=colors[k % len(colors)], alpha=0.22)
            ax.text((a + b) / 2, 1.0, op, rotation=90, va="top", ha="center", fontsize=7,
                    transform=ax.get_xaxis_transform())
            k += 1
        errs = [(t - t0, e) for t, e, _ in errors if e]
        if errs:
            ax.scatter([x for x, _ in errs], [max(p99) if p99 else 1] * len(errs), marker="x", color="red", s=12,
                       label="errors in that second")
        ax.set_yscale("log")
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"{s}: background load ({o.rate} op/s mixed at QUORUM) during the operations", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="lower right", fontsize=7)
    axes[-1, 0].set_xlabel("seconds since the background load started")
    fig.tight_layout()
    fig.savefig(o.out + ".png", dpi=110)
    print(f"wrote {o.out}.png")


if __name__ == "__main__":
    main()
