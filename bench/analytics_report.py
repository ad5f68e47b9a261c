#!/usr/bin/env python3
"""Turns bench/analytics.sh's JSON lines into <out>.json (every number), <out>.md (ingest, size, query
seconds, scan rates, the issue's aims as ratios, answers) and <out>-<query>.png (one bar per engine and
server/layout: CQL, Spark and DuckDB; without matplotlib, no PNGs).

  analytics_report.py RESULTS.jsonl OUT_PREFIX --label COMMIT --dataset JSON --loadavg "1 1 1" --rows N [--cores 2]

Query columns are "<engine> <server>/<layout>" (cql helenus/narrow, spark cassandra/wide, ...) and
"<engine> parquet" for the Parquet export (duckdb parquet, spark parquet).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdelt import LAYOUT_INDEXES  # noqa: E402 (stdlib only)

QUERIES = [  # (name, what the study asks)
    ("count", "full-scan count"),
    ("tone_by_actor1name", "AVG(AvgTone) GROUP BY Actor1Name"),
    ("tone_198012", "AVG/MIN/MAX(AvgTone) WHERE MonthYear = 198012"),
    ("count_usa", "count WHERE Actor1CountryCode = 'USA'"),
    ("count_alb", "count WHERE Actor1CountryCode = 'ALB'"),
    ("projection_2col", "2-column projection (monthyear, numarticles)"),
]
# Queries that read every row: their scan rates (records per CPU second, records per second per core) are
# reported.
FULL_SCANS = {"count", "tone_by_actor1name", "count_usa", "count_alb", "projection_2col"}
# Queries CQL answers with a server-side aggregate (one row back); the other two stream rows to the client.
CQL_AGGREGATES = ["count", "tone_198012", "count_usa", "count_alb"]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def target(r):
    """The ingest/size row a record belongs to: server/layout (helenus/parquet: the export)."""
    return f"{r['server']}/{r['layout']}"


def column(r):
    """The query column a record belongs to: "<engine> <server>/<layout>", or "<engine> parquet"."""
    engine = r.get("engine", "cql")
    return f"{engine} parquet" if r["layout"] == "parquet" else f"{engine} {r['server']}/{r['layout']}"


ENGINE_ORDER = {"cql": 0, "duckdb": 1, "spark": 2, "spark_source": 3}


def targets(recs):
    """Query columns: CQL per server/layout, then DuckDB, then Spark per server/layout and on Parquet."""
    out = []
    for r in recs:
        if r.get("step") == "query" and column(r) not in out:
            out.append(column(r))
    return sorted(out, key=lambda c: ENGINE_ORDER.get(c.split(" ", 1)[0], 9))  # stable: run order kept


def ingest_rows(recs):
    """One row per server/layout: load rate and the size after flush + major compaction."""
    rows = {}
    for r in recs:
        if r.get("step") in ("query", "spark_session") and not r.get("failed"):
            continue
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


def query_table(recs, total_rows, cores):
    """query -> column -> {seconds, rows, result, server_cpu_s, records_per_cpu_s, records_per_s_per_core, ...}."""
    out = {}
    for r in recs:
        if r.get("step") != "query":
            continue
        cell = {k: r.get(k) for k in ("seconds", "rows", "result", "client_cpu_s", "server_cpu_s",
                                      "timed_out", "error", "spark_partitions", "warmup_s") if k in r}
        ok = not r.get("error") and not r.get("timed_out") and r.get("seconds")
        if r["query"] in FULL_SCANS and total_rows and ok:
            # Records per CPU second: the table's rows (every full-scan query reads them all) over the CPU
            # seconds that read them: the server's for CQL, DuckDB's own, Spark's driver JVM (its local[2]
            # executors) plus the server's for Spark.
            engine = r.get("engine", "cql")
            if engine == "cql":
                cpu = r.get("server_cpu_s")
            elif engine.startswith("spark"):
                cpu = (r.get("client_cpu_s") or 0) + (r.get("server_cpu_s") or 0)
            else:
                cpu = r.get("client_cpu_s")
            if cpu:
                cell["records_per_cpu_s"] = round(total_rows / cpu)
            # Records per wall second per core: rows scanned / seconds / cores (2: Spark local[2], DuckDB's 2
            # threads, the 2-core machine a server runs on).
            cell["records_per_s_per_core"] = round(total_rows / r["seconds"] / cores)
        out.setdefault(r["query"], {})[column(r)] = cell
    return out


def ok_seconds(cell):
    if not cell or cell.get("error") or cell.get("timed_out") or not cell.get("seconds"):
        return None
    return cell["seconds"]


def size_bytes(ingest, tgt):
    for r in ingest:
        if r["target"] == tgt and r.get("bytes"):
            return r["bytes"]
    return None


def aims(queries, ingest):
    """The issue's aims as ratios: [{aim, query, ratio, target, met, a, b}] (None when a side is missing).
    `ratio` is always "how many times better the first side is" except where `aim` says otherwise."""
    out = []

    def add(aim, query, num, den, want, sense, a_name, b_name):
        ratio = round(num / den, 3) if num and den else None
        met = None if ratio is None else (ratio >= want if sense == ">=" else ratio <= want)
        out.append({"aim": aim, "query": query, "ratio": ratio, "target": f"{sense} {want}", "met": met,
                    "a": a_name, "a_value": num, "b": b_name, "b_value": den})

    def sec(q, col):
        return ok_seconds(queries.get(q, {}).get(col))

    # Through the connector (CQL rows) and through the Helenus Spark source (connectors/spark: column batches).
    for who, col in (("Spark: Helenus columnar", "spark helenus/columnar"),
                     ("Spark, Helenus source: columnar", "spark_source helenus/columnar")):
        for q in ("count", "projection_2col"):
            add(f"{who} faster than Cassandra narrow rows (Cassandra s / Helenus s)", q,
                sec(q, "spark cassandra/narrow"), sec(q, col), 10, ">=", "spark cassandra/narrow", col)
        for q, _ in QUERIES:
            add(f"{who} within 1.5x of Spark on Parquet (columnar s / Parquet s)", q,
                sec(q, col), sec(q, "spark parquet"), 1.5, "<=", col, "spark parquet")
    add("Size: Helenus columnar vs the Parquet export (columnar bytes / Parquet bytes)", "bytes",
        size_bytes(ingest, "helenus/columnar"), size_bytes(ingest, "helenus/parquet"), 1.1, "<=",
        "helenus/columnar", "helenus/parquet")
    add("Size: Cassandra narrow rows vs Helenus columnar (Cassandra bytes / columnar bytes)", "bytes",
        size_bytes(ingest, "cassandra/narrow"), size_bytes(ingest, "helenus/columnar"), 5, ">=",
        "cassandra/narrow", "helenus/columnar")
    for q in CQL_AGGREGATES:
        add("CQL aggregate: Helenus columnar vs Helenus narrow (narrow s / columnar s)", q,
            sec(q, "cql helenus/narrow"), sec(q, "cql helenus/columnar"), 100, ">=",
            "cql helenus/narrow", "cql helenus/columnar")
    for q in CQL_AGGREGATES:
        add("CQL aggregate: Helenus columnar no slower than DuckDB on Parquet (columnar s / DuckDB s)", q,
            sec(q, "cql helenus/columnar"), sec(q, "duckdb parquet"), 1, "<=",
            "cql helenus/columnar", "duckdb parquet")
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
    """Whether every engine returned the same answer (floats to 3 decimals, stream sizes aside); when not,
    which columns gave which answer."""
    def key(res):
        if isinstance(res, dict) and "sum_numarticles" in res:  # the CQL projection's stream = DuckDB's row
            res = [res["rows"], res["sum_numarticles"]]
        if isinstance(res, dict):
            return json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()
                               if k != "rows"}, sort_keys=True)
        if isinstance(res, list):
            return json.dumps([round(v, 3) if isinstance(v, float) else v for v in res])
        return json.dumps(res)
    seen = {}
    for col, c in cells.items():
        if c.get("result") is not None:
            seen.setdefault(key(c["result"]), []).append(col)
    if len(seen) <= 1:
        return "yes" if seen else "-"
    groups = sorted(seen.values(), key=len, reverse=True)
    return f"no ({len(seen)} answers: " + "; ".join(", ".join(g) for g in groups) + ")"


def spark_sessions(recs):
    return [r for r in recs if r.get("step") == "spark_session"]


def spark_splits(queries, cols):
    """Spark's partitions (connector splits, Parquet file splits) per Spark column."""
    parts = [f"{c} {cell['spark_partitions']}" for c in cols if c.startswith("spark")
             for cell in [queries.get("count", {}).get(c) or {}] if cell.get("spark_partitions")]
    return (" Spark partitions: " + ", ".join(parts) + ".") if parts else ""


def fmt_ratio(x):
    return "-" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def markdown(a, ingest, queries, cols, pngs, aim_rows, sessions):
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
    spark_note = ""
    if sessions:
        ss = sessions[0]["spark_session"]
        spark_note = (f"Spark {ss.get('spark')} `{ss.get('master')}` (driver {ss.get('driver_memory')}), connector "
                      f"`{ss.get('connector')}`: one session per server (started in "
                      + ", ".join(f"{r['server']} {r['spark_session'].get('start_s')} s" for r in sessions)
                      + "), fed each layout right after its CQL queries and, on Helenus, the Parquet export; it "
                      "runs DuckDB's SQL through `spark.sql` on a temporary view of the connector's DataFrame "
                      "(`spark.read.parquet` for the files). Untimed before each target: one `limit(1)` read; "
                      "before the first, a small SQL job (code generation warm). The columnar table declares "
                      "storage-attached indexes on " + ", ".join(LAYOUT_INDEXES.get("columnar", ())) + " (its "
                      "columns serve them: no index table, nothing built), so the connector pushes the filters "
                      "on them into CQL; the other tables have none.")
    lines += notes + ["", "## Query wall seconds", "",
              "Columns: engine then server/layout. Every engine's query that ran under 1 s is run up to 3 "
              "times and its best run shown (the first run's seconds are in the JSON as `first_s`). "
              "`cql`: the Python driver (fetch size 5000); the tone-by-actor "
              "query streams (actor1name, avgtone) and aggregates in the client, as CQL cannot GROUP BY a regular "
              "column, and the projection streams both columns. `duckdb`: 2 threads, SQL on Helenus's Parquet "
              "export of the narrow table (the projection as count + sum of the two columns). `spark`: the same "
              "SQL as DuckDB. " + spark_note + spark_splits(queries, cols), "",
              "| query | " + " | ".join(cols) + " | same answer |",
              "|---|" + "---:|" * len(cols) + "---|"]
    for q, label in QUERIES:
        cells = queries.get(q, {})
        lines.append(f"| {label} | " + " | ".join(fmt_s(cells.get(c)) for c in cols)
                     + f" | {agreement(cells)} |")
    lines += ["", "## Scan rate: records per second per core", "",
              f"The table's {a.rows} rows / wall seconds / {a.cores} cores (Spark `local[2]`, DuckDB's 2 threads, "
              "the 2-core machine a server runs on). A count may not read every row (Parquet row-group metadata, "
              "an engine's own shortcuts): it is the rate a user sees.", "",
              "| query | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for q, label in QUERIES:
        if q in FULL_SCANS:
            cells = queries.get(q, {})
            lines.append(f"| {label} | " + " | ".join(
                str((cells.get(c) or {}).get("records_per_s_per_core", "-")) for c in cols) + " |")
    lines += ["", "## Scan rate: records per CPU second", "",
              "The table's rows over the CPU seconds of the query (from /proc at 10 ms ticks: coarse on small "
              "runs): the server's for CQL, DuckDB's own, the Spark driver JVM's (its executors) plus the "
              "server's for Spark.", "",
              "| query | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for q, label in QUERIES:
        if q in FULL_SCANS:
            cells = queries.get(q, {})
            lines.append(f"| {label} | " + " | ".join(str((cells.get(c) or {}).get("records_per_cpu_s", "-"))
                                                       for c in cols) + " |")
    lines += ["", "## The issue's aims", "",
              "Ratios from the tables above (wall seconds, bytes after compaction); `-` when a side was not "
              "measured (a layout or server not run, a query that failed or timed out).", "",
              "| aim | query | ratio | target | met |", "|---|---|---:|---|---|"]
    for r in aim_rows:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "**no**")
        lines.append(f"| {r['aim']} | {r['query']} | {fmt_ratio(r['ratio'])} | {r['target']} | {met} |")
    lines += ["", "## Answers", "", "| query | engine server/layout | answer |", "|---|---|---|"]
    for q, label in QUERIES:
        cells = queries.get(q, {})
        for c in [c for c in cols if c in cells]:
            cell = cells[c]
            lines.append(f"| {label} | {c} | {cell.get('error') or fmt_result(cell.get('result'))} |")
    lines.append("")
    if pngs:
        lines += ["## Charts", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in pngs] + [""]
    return "\n".join(lines)


def charts(prefix, queries, cols):
    """One PNG per query: wall seconds per engine and server/layout (log scale: the spread is orders of
    magnitude). Colour by data (Helenus blue, Cassandra orange, Parquet green); Spark bars hatched."""
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
        names = [c for c in cols if ok_seconds(cells.get(c)) or (cells.get(c) or {}).get("timed_out")]
        if not names:
            continue
        secs = [max(cells[c]["seconds"], 1e-4) for c in names]
        colors = ["tab:blue" if " helenus/" in c else "tab:orange" if " cassandra/" in c else "tab:green"
                  for c in names]
        fig, ax = plt.subplots(figsize=(max(7, 0.55 * len(names) + 2), 4))
        bars = ax.bar(range(len(names)), secs, color=colors, edgecolor="black", linewidth=0.4)
        for b, c in zip(bars, names):
            if c.startswith("spark"):
                b.set_hatch("//")
        ax.bar_label(bars, labels=[f"{v:.3g}" + ("+" if cells[c].get("timed_out") else "")
                                   for v, c in zip(secs, names)], fontsize=7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("wall seconds (log)")
        ax.set_title(label + " (hatched: Spark; + timed out)", fontsize=10)
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
    p.add_argument("--cores", type=int, default=2, help="cores of the scan rate per core (Spark local[2])")
    a = p.parse_args()
    recs = read(a.results)
    ingest, queries, cols = ingest_rows(recs), query_table(recs, a.rows, a.cores), targets(recs)
    aim_rows, sessions = aims(queries, ingest), spark_sessions(recs)
    pngs = charts(a.prefix, queries, cols)
    try:
        dataset = json.loads(a.dataset)
    except ValueError:
        dataset = a.dataset
    with open(a.prefix + ".json", "w") as f:
        json.dump({"label": a.label, "rows": a.rows, "dataset": dataset, "loadavg_at_start": a.loadavg,
                   "cores": os.cpu_count(), "scan_rate_cores": a.cores, "ingest": ingest, "queries": queries,
                   "aims": aim_rows, "spark": [dict(r["spark_session"], server=r["server"]) for r in sessions],
                   "records": recs}, f, indent=1)
    with open(a.prefix + ".md", "w") as f:
        f.write(markdown(a, ingest, queries, cols, pngs, aim_rows, sessions))


if __name__ == "__main__":
    sys.exit(main())
