#!/usr/bin/env python3
"""Turns bench/storage.sh's results.jsonl into storage-<date>-<commit>.json and .md.

  storage_report.py RESULTS.jsonl OUT-PREFIX MODE COMMIT DATE CORES THROUGHPUT

Every line is {"part", "server", ...} or {"part", "server", "failed": reason}. The JSON keeps every record
(`parts.<part>.servers.<server>`) and a flat metric table (`parts.<part>.metrics.<metric>` = {helenus,
cassandra, ratio (helenus / cassandra), better ("higher" or "lower")}); a metric of a failed part is null.
"""
import json
import os
import sys

# (metric, path in the record or a function of it, better, note)
def _rate(rows_key, ms_key):
    return lambda r: (r[rows_key] / (r[ms_key] / 1000)) if r.get(ms_key) else None


def _mb_s(r):
    # On-disk input bytes (the SSTables before the major compaction) per second of the compaction's own
    # duration (compact_server_ms: Cassandra's log line, Helenus's nodetool round trip), else compact_net_ms.
    ms = r.get("compact_server_ms") or r.get("compact_net_ms")
    return r["pre_compact_bytes"] / 1e6 / (ms / 1000) if ms else None


COMPACTION = [
    ("flush_ms", "flush_ms", "lower"),
    ("compact_ms", "compact_ms", "lower"),
    ("compact_net_ms", "compact_net_ms", "lower"),
    ("compact_server_ms", "compact_server_ms", "lower"),
    ("compact_mb_s", _mb_s, "higher"),
    ("pre_compact_bytes", "pre_compact_bytes", "lower"),
    ("pre_compact_sstables", "pre_compact_sstables", None),
    ("post_compact_bytes", "post_compact_bytes", "lower"),
    ("post_compact_sstables", "post_compact_sstables", None),
]
PARTS = {
    "standard1": {
        "title": "write throughput, flush, major compaction, on-disk size",
        "metrics": [("rows", "rows", None), ("load_ms", "load_ms", "lower"),
                    ("write_rows_per_s", _rate("rows", "load_ms"), "higher")] + COMPACTION
                   + [("nodetool_startup_ms", "nodetool_startup_ms", None),
                      ("bytes_per_row", lambda r: r["post_compact_bytes"] / r["rows"], "lower"),
                      ("peak_rss_kb", "peak_rss_kb", "lower")],
    },
    "reads": {
        "title": "standard1 point reads after a restart: cold (first run) and warm (second run)",
        "metrics": [("restart_ms", "restart_ms", "lower")]
                   + [(f"{run}.{k}", f"{run}.{k}", b) for run in ("cold", "warm")
                      for k, b in (("rate_per_s", "higher"), ("latency_p50_ms", "lower"),
                                   ("latency_p99_ms", "lower"), ("errors", "lower"))]
                   + [("page_cache_kb_before_drop", "page_cache_kb_before_drop", None),
                      ("page_cache_kb_after_drop", "page_cache_kb_after_drop", None)],
    },
    "wide": {
        "title": "wide partitions: load, major compaction, slices of 100 rows",
        "metrics": [("load.rows", "load.rows", None), ("load.rows_per_s", "load.rows_per_s", "higher")]
                   + COMPACTION
                   + [(f"{q}.{k}", f"{q}.{k}", b) for q in ("slice_limit", "slice_range")
                      for k, b in (("rate_per_s", "higher"), ("latency_p50_ms", "lower"),
                                   ("latency_p99_ms", "lower"), ("rows_per_op", None),
                                   ("errors", "lower"), ("client_cpu_s", None))],
    },
    "gdelt": {
        "title": "GDELT 1.0-shaped events (57 columns, one row per partition): ingest, on-disk size",
        "metrics": [("load.rows", "load.rows", None), ("load.rows_per_s", "load.rows_per_s", "higher"),
                    ("load.errors", "load.errors", "lower")] + COMPACTION
                   + [("bytes_per_row", lambda r: r["post_compact_bytes"] / r["load"]["rows"], "lower"),
                      ("peak_rss_kb", "peak_rss_kb", "lower")],
    },
    "gdelt_memtable": {
        "title": "GDELT-shaped rows loaded into a fresh server with no flush asked for: memory held",
        "metrics": [("load.rows", "load.rows", None), ("load.rows_per_s", "load.rows_per_s", "higher"),
                    ("load.errors", "load.errors", "lower"), ("peak_rss_kb", "peak_rss_kb", "lower"),
                    ("rss_after_load_kb", "rss_after_load_kb", "lower"),
                    ("rss_per_row_b", lambda r: r["peak_rss_kb"] * 1024 / r["load"]["rows"], "lower")],
    },
}


def get(rec, path):
    if rec is None or "failed" in rec:
        return None
    try:
        if callable(path):
            return path(rec)
        v = rec
        for k in path.split("."):
            v = v[k]
        return v
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def main():
    results, out, mode, commit, date, cores, throughput = sys.argv[1:8]
    recs = [json.loads(l) for l in open(results) if l.strip()]
    doc = {"benchmark": "storage", "mode": mode, "commit": commit, "date": date, "cores": int(cores),
           "loadavg_at_end": open("/proc/loadavg").read().split()[:3],
           "compaction_throughput_mib_s": int(throughput),
           "settings": {k: os.environ.get(k) for k in ("N", "PARTS", "THREADS", "HEAP", "READ_DURATION",
                                                      "WIDE_PARTITIONS", "WIDE_ROWS", "SLICE_DURATION",
                                                      "GDELT_ROWS", "GDELT_MEM_ROWS", "HEL_MEMTABLE_SPACE", "PARTS_TO_RUN", "SERVERS", "LOADAVG_START")},
           "parts": {}}
    md = [f"# Storage benchmark {date} ({commit}, {mode}, {cores} cores, machine not necessarily quiet)", "",
          "Ratios are Helenus / Cassandra; `better` says which direction is good. Same data, same client and "
          "options on both servers, one server at a time. compact_net_ms subtracts one measured nodetool "
          "start-up (a JVM for Cassandra) from compact_ms; compact_server_ms is the major compaction's own "
          "duration (Cassandra: its `Compacted (...) in N ms` log line; Helenus: compact_net_ms, its nodetool "
          "being a native client of a few ms); compact_mb_s = on-disk bytes before the major compaction / "
          "compact_server_ms (1 MB = 10^6 bytes). Latencies are client-side.", ""]
    for part, spec in PARTS.items():
        by = {r["server"]: r for r in recs if r["part"] == part}
        if not by:
            continue
        h, c = by.get("helenus"), by.get("cassandra")
        metrics = {}
        for name, path, better in spec["metrics"]:
            hv, cv = get(h, path), get(c, path)
            ratio = hv / cv if isinstance(hv, (int, float)) and isinstance(cv, (int, float)) and cv else None
            metrics[name] = {"helenus": hv, "cassandra": cv, "ratio": ratio, "better": better}
        doc["parts"][part] = {"title": spec["title"], "servers": by, "metrics": metrics}
        md += [f"## {part}: {spec['title']}", ""]
        for s, r in by.items():
            if "failed" in r:
                md.append(f"**{s}: failed**: {r['failed']}")
                md.append("")
        md += ["| metric | helenus | cassandra | helenus / cassandra | better |", "|---|---|---|---|---|"]
        for name, m in metrics.items():
            ratio = "-" if m["ratio"] is None else f"{m['ratio']:.2f}"
            md.append(f"| {name} | {fmt(m['helenus'])} | {fmt(m['cassandra'])} | {ratio} | {m['better'] or ''} |")
        md.append("")
        if part == "reads":
            for s, r in by.items():
                if "failed" not in r:
                    md.append(f"- {s}: drop_caches write {'accepted' if r.get('drop_caches_write_ok') else 'refused'}; "
                              f"page cache {fmt(r.get('page_cache_kb_before_drop'))} kB -> "
                              f"{fmt(r.get('page_cache_kb_after_drop'))} kB before the restart.")
            md.append("")
        if part == "wide":
            q = next((r for r in by.values() if "failed" not in r), None)
            if q:
                md += [f"Queries: `{q['slice_limit'].get('query')}` and `{q['slice_range'].get('query')}`, "
                       f"{q['slice_limit'].get('concurrency')} in flight from one Python process "
                       "(client_cpu_s near the duration means the client, not the server, was the limit).", ""]
        if part == "gdelt":
            q = next((r for r in by.values() if "failed" not in r), None)
            if q:
                md += [f"Data set: `{json.dumps(q.get('data_set'))}`", ""]
    json.dump(doc, open(out + ".json", "w"), indent=2)
    open(out + ".md", "w").write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
