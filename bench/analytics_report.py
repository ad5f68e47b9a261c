#!/usr/bin/env python3
"""Turns bench/analytics.sh's JSON lines into <out>.json (every number), <out>.md (ingest, size and
query tables) and <out>-<query>.png (one bar per server and layout; without matplotlib, no PNGs).

  analytics_report.py RESULTS.jsonl OUT_PREFIX --label COMMIT --dataset JSON --loadavg "1 1 1" --rows N
"""
import argparse
import json
import os
import sys

QUERIES = [  # (name, what the study asks)
    ("count", "full-scan count"),
    ("tone_by_actor1name", "AVG(AvgTone) GROUP BY Actor1Name"),
    ("tone_198012", "AVG/MIN/MAX(AvgTone) WHERE MonthYear = 198012"),
    ("count_usa", "count WHERE Actor1CountryCode = 'USA'"),
    ("count_alb", "count WHERE Actor1CountryCode = 'ALB'"),
    ("projection_2col", "2-column projection (monthyear, numarticles)"),
]
# Queries that read every row: their scan rate (records per server CPU second) is reported.
FULL_SCANS = {"count", "tone_by_actor1name", "count_usa", "count_alb", "projection_2col"}
SPARK_TODO = ("TODO: Spark over each layout (pyspark 3.5 + the DataStax connector, local[2]) and over the "
              "Parquet files: next session; bench/spark.sh exists for the CQL layouts.")


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def target(r):
    """The column a record belongs to: server/layout, or duckdb/parquet."""
    return f"{r['server']}/{r['layout']}"


def targets(recs):
    out = []
    for r in recs:
        if r.get("step") == "query" and target(r) not in out:
            out.append(target(r))
    return out


def ingest_rows(recs):
    """One row per server/layout: load rate and the size after flush + major compaction."""
    rows = {}
    for r in recs:
        row = rows.setdefault(target(r), {"target": target(r)})
        if r.get("failed"):
            row.setdefault("failed", []).append(f"{r['step']}: {r['failed']}")
        elif r["step"] == "load":
            ld = r["load"]
            row.update(rows_per_s=ld["rows_per_s"], load_s=ld["load_s"], load_errors=ld["errors"],
                       load_client_cpu_s=ld["client_cpu_s"])
        elif r["step"] == "size":
            row.update({k: v for k, v in r.items() if k not in ("server", "layout", "step")})
    return [v for v in rows.values() if len(v) > 1]


def query_table(recs, total_rows):
    """query -> target -> {seconds, rows, result, server_cpu_s, records_per_cpu_s, ...}."""
    out = {}
    for r in recs:
        if r.get("step") != "query":
            continue
        cell = {k: r.get(k) for k in ("seconds", "rows", "result", "client_cpu_s", "server_cpu_s",
                                      "timed_out", "error")}
        # Scan rate per core: the table's rows (every full-scan query reads them all) over the CPU
        # seconds that read them: the server's for CQL, DuckDB's own for Parquet.
        cpu = r.get("server_cpu_s") if r["server"] != "duckdb" else r.get("client_cpu_s")
        if r["query"] in FULL_SCANS and cpu and total_rows and not r.get("error") and not r.get("timed_out"):
            cell["records_per_cpu_s"] = round(total_rows / cpu)
        out.setdefault(r["query"], {})[target(r)] = cell
    return out


def fmt_s(cell):
    if not cell:
        return "-"
    if cell.get("error"):
        return "error"
    s = f"{cell['seconds']:.3f}"
    return s + " (timed out)" if cell.get("timed_out") else s


def fmt_result(res):
    if isinstance(res, dict):
        return ", ".join(f"{k}={v}" for k, v in res.items())
    if isinstance(res, list):
        return ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in res)
    return str(res)


def agreement(cells):
    """Whether every engine returned the same answer (floats to 3 decimals, stream sizes aside)."""
    def key(res):
        if isinstance(res, dict) and "sum_numarticles" in res:  # the CQL projection's stream = DuckDB's row
            res = [res["rows"], res["sum_numarticles"]]
        if isinstance(res, dict):
            return json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()
                               if k != "rows"}, sort_keys=True)
        if isinstance(res, list):
            return json.dumps([round(v, 3) if isinstance(v, float) else v for v in res])
        return json.dumps(res)
    seen = {key(c["result"]) for c in cells.values() if c.get("result") is not None}
    return "yes" if len(seen) == 1 else ("-" if not seen else f"no ({len(seen)} answers)")


def markdown(a, ingest, queries, cols, pngs):
    lines = [f"# GDELT analytics study at {a.label}", "",
             f"{a.rows} generated GDELT 1.0 events of 57 columns (bench/gdelt.py): `{a.dataset}`.",
             f"Load average at the start: {a.loadavg}. One node per server on loopback, one at a time.", "",
             "## Ingest and size after `nodetool flush` + `nodetool compact`", "",
             "| server/layout | rows/s | load s | bytes | bytes/row | SSTables | compact ms | note |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    notes = ["", "Compact ms is the `nodetool compact` command's wall time, its client's start-up included (a JVM "
             "of ~2 s for Cassandra's nodetool); for Parquet it is the export's. Bytes are the table's live "
             "files after the major compaction (the Parquet files for the export)."]
    for r in ingest:
        b = r.get("bytes")
        lines.append(f"| {r['target']} | {r.get('rows_per_s', '-')} | {r.get('load_s', '-')} | "
                     f"{b if b is not None else '-'} | {round(b / a.rows, 1) if b else '-'} | "
                     f"{r.get('sstables', r.get('files', '-'))} | {r.get('compact_ms', r.get('export_ms', '-'))} | "
                     f"{'; '.join(r.get('failed', [])) or ('Parquet export (ms in compact column)' if 'export_ms' in r else '')} |")
    lines += notes + ["", "## Query wall seconds", "",
              "CQL queries through the Python driver (fetch size 5000); the tone-by-actor query streams "
              "(actor1name, avgtone) and aggregates in the client, as CQL cannot GROUP BY a regular column. "
              "DuckDB (2 threads) runs SQL on Helenus's Parquet export of the narrow table.", "",
              "| query | " + " | ".join(cols) + " | same answer |",
              "|---|" + "---:|" * len(cols) + "---|"]
    for q, label in QUERIES:
        cells = queries.get(q, {})
        lines.append(f"| {label} | " + " | ".join(fmt_s(cells.get(c)) for c in cols)
                     + f" | {agreement(cells)} |")
    lines += ["", "## Scan rate: records per CPU second (server's for CQL, DuckDB's own for Parquet)", "",
              "The table's rows over the CPU seconds of the query (from /proc at 10 ms ticks: coarse on small runs).", "",
              "| query | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for q, label in QUERIES:
        if q in FULL_SCANS:
            cells = queries.get(q, {})
            lines.append(f"| {label} | " + " | ".join(str((cells.get(c) or {}).get("records_per_cpu_s", "-"))
                                                       for c in cols) + " |")
    lines += ["", "## Answers", "", "| query | server/layout | answer |", "|---|---|---|"]
    for q, label in QUERIES:
        for c, cell in queries.get(q, {}).items():
            lines.append(f"| {label} | {c} | {cell.get('error') or fmt_result(cell.get('result'))} |")
    lines += ["", SPARK_TODO, ""]
    if pngs:
        lines += ["## Charts", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in pngs] + [""]
    return "\n".join(lines)


def charts(prefix, queries, cols):
    """One PNG per query: wall seconds per server/layout (log scale: the spread is orders of magnitude)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no PNGs", file=sys.stderr)
        return []
    pngs = []
    for q, label in QUERIES:
        cells = queries.get(q, {})
        names = [c for c in cols if cells.get(c) and not cells[c].get("error")]
        if not names:
            continue
        secs = [max(cells[c]["seconds"], 1e-4) for c in names]
        colors = ["tab:blue" if c.startswith("helenus") else "tab:orange" if c.startswith("cassandra")
                  else "tab:green" for c in names]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        bars = ax.bar(range(len(names)), secs, color=colors)
        ax.bar_label(bars, labels=[f"{v:.3g}" for v in secs], fontsize=7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("wall seconds (log)")
        ax.set_title(label, fontsize=10)
        fig.tight_layout()
        png = f"{prefix}-{q}.png"
        fig.savefig(png, dpi=80)
        plt.close(fig)
        pngs.append(png)
    return pngs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("prefix")
    p.add_argument("--label", default="")
    p.add_argument("--dataset", default="{}")
    p.add_argument("--loadavg", default="")
    p.add_argument("--rows", type=int, default=0)
    a = p.parse_args()
    recs = read(a.results)
    ingest, queries, cols = ingest_rows(recs), query_table(recs, a.rows), targets(recs)
    pngs = charts(a.prefix, queries, cols)
    try:
        dataset = json.loads(a.dataset)
    except ValueError:
        dataset = a.dataset
    with open(a.prefix + ".json", "w") as f:
        json.dump({"label": a.label, "rows": a.rows, "dataset": dataset, "loadavg_at_start": a.loadavg,
                   "cores": os.cpu_count(), "ingest": ingest, "queries": queries, "spark": SPARK_TODO,
                   "records": recs}, f, indent=1)
    with open(a.prefix + ".md", "w") as f:
        f.write(markdown(a, ingest, queries, cols, pngs))


if __name__ == "__main__":
    sys.exit(main())
