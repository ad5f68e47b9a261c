#!/usr/bin/env python3
"""Python parts of bench/spark.sh: scans through Apache Spark and the DataStax Spark Cassandra Connector.

  spark_bench.py gen    FILE --rows N [--seed 1979]          GDELT-shaped rows (bench/gdelt.py's generator)
  spark_bench.py load   HOST FILE --partitions P             cassandra-driver: schema + both tables
  spark_bench.py query  HOST --runs 2 --tables events,events_single --pid-file F   pyspark: the timed queries
  spark_bench.py report WORKDIR OUT_PREFIX COMMIT SERVER...  results JSON + Markdown

`gen` and `load` run with the Python driver's venv (~/.cache/helenus/venv), `query` with the pyspark venv
(~/.cache/helenus/spark-venv), `report` with either (stdlib only). `load` and `query` print one JSON object
per line on stdout.

Tables (keyspace bench_spark), the issue 16 shape: `events` has 61 columns, `part int` (partition key, event id
modulo P: 350 partitions of ~570 rows for 200k rows), `globaleventid bigint` (clustering), the other 56 GDELT 1.0
columns and three more (`sourceurl text`, `eventdate date`, `ingested_at timestamp`); `events_single` is the same
data with one row per partition (`globaleventid` the partition key, 60 columns).
"""
import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KS = "bench_spark"
TABLES = ("events", "events_single")
CONNECTOR = "com.datastax.spark:spark-cassandra-connector_2.12:3.5.1"


def gdelt_columns():
    sys.path.insert(0, HERE)
    from storage_client import GDELT_COLUMNS  # noqa: E402 (the 57 GDELT columns)
    return GDELT_COLUMNS


EXTRA = [("sourceurl", "text"), ("eventdate", "date"), ("ingested_at", "timestamp")]


def columns():
    """(name, cql type) of every non-key GDELT column plus the three extra ones, lower-cased."""
    return [(c.lower(), t) for c, t in gdelt_columns()[1:]] + EXTRA


# ---------------------------------------------------------------------------------------- gen / load

def cmd_gen(a):
    sys.path.insert(0, HERE)
    import storage_client
    storage_client.gdelt_gen(argparse.Namespace(file=a.file, rows=a.rows, seed=a.seed))


def extra_values(r):
    gid, sqldate = r[0], r[1]
    d = datetime.date(sqldate // 10000, sqldate // 100 % 100, sqldate % 100)
    added = datetime.datetime(2013, 2, 3, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=gid)
    return (f"http://news.example.org/{d.year}/{gid:09d}.html", d, added)


def cmd_load(a):
    import pickle
    from cassandra import ConsistencyLevel
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.concurrent import execute_concurrent
    from cassandra.policies import RetryPolicy, WhiteListRoundRobinPolicy
    from cassandra.query import UNSET_VALUE, BatchStatement, BatchType

    with open(a.file, "rb") as f:
        rows = pickle.load(f)
    cols = columns()
    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([a.host]),
                               retry_policy=RetryPolicy(), request_timeout=60,
                               consistency_level=ConsistencyLevel.ONE)
    cluster = Cluster([a.host], port=9042, protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=30)
    s = cluster.connect()
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        body = ", ".join(f"{c} {t}" for c, t in cols)
        s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.events (part int, globaleventid bigint, {body}, "
                  "PRIMARY KEY (part, globaleventid))")
        s.execute(f"CREATE TABLE IF NOT EXISTS {KS}.events_single (globaleventid bigint PRIMARY KEY, {body})")
        names = ", ".join(c for c, _ in cols)
        ins_ev = s.prepare(f"INSERT INTO {KS}.events (part, globaleventid, {names}) "
                           f"VALUES ({', '.join('?' * (len(cols) + 2))})")
        ins_single = s.prepare(f"INSERT INTO {KS}.events_single (globaleventid, {names}) "
                               f"VALUES ({', '.join('?' * (len(cols) + 1))})")
        # Empty GDELT fields are not written (UNSET: no cell, no tombstone), as in bench/storage.sh.
        vals = [tuple(UNSET_VALUE if v is None else v for v in r[1:]) + extra_values(r) for r in rows]
        gids = [r[0] for r in rows]

        def run(stmts, concurrency):
            t0 = time.perf_counter()
            errors, first = 0, None
            for ok, res in execute_concurrent(s, stmts, concurrency=concurrency, raise_on_first_error=False,
                                              results_generator=True):
                if not ok:
                    errors += 1
                    first = first or repr(res)
            return round(time.perf_counter() - t0, 3), errors, first

        # events: unlogged batches of rows of one partition (one mutation each), partitions interleaved.
        by_part = {}
        for gid, v in zip(gids, vals):
            by_part.setdefault(gid % a.partitions, []).append((gid, v))

        def ev_batches():
            longest = max(len(x) for x in by_part.values())
            for start in range(0, longest, a.batch):
                for part in sorted(by_part):
                    chunk = by_part[part][start:start + a.batch]
                    if not chunk:
                        continue
                    b = BatchStatement(batch_type=BatchType.UNLOGGED)
                    for gid, v in chunk:
                        b.add(ins_ev, (part, gid) + v)
                    yield b, None

        secs, errors, first = run(ev_batches(), a.concurrency)
        print(json.dumps({"table": "events", "rows": len(rows), "partitions": len(by_part), "load_s": secs,
                          "errors": errors, "first_error": first}), flush=True)
        secs, errors, first = run(((ins_single, (gid,) + v) for gid, v in zip(gids, vals)), a.concurrency * 2)
        print(json.dumps({"table": "events_single", "rows": len(rows), "partitions": len(rows), "load_s": secs,
                          "errors": errors, "first_error": first}), flush=True)
    finally:
        cluster.shutdown()


# ---------------------------------------------------------------------------------------- Spark queries

def spark_session(host, driver_addr, driver_memory="2g", local_dir="/tmp", pid_file="",
                  app="helenus-spark-bench"):
    """The Spark session of the benches (bench/spark.sh and bench/analytics.sh): local[2], the connector
    from spark.jars.packages (cached in ~/.cache/helenus/spark-ivy), the driver bound to `driver_addr`,
    the connector on `host`:9042 at LOCAL_ONE. Writes the driver JVM's pid to `pid_file` (a backstop for
    the caller's cleanup: the JVM exits with its Python parent)."""
    from pyspark.sql import SparkSession

    cache = os.path.expanduser("~/.cache/helenus")
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.jars.packages", CONNECTOR)
             .config("spark.jars.ivy", os.path.join(cache, "spark-ivy"))
             .config("spark.driver.memory", driver_memory)
             .config("spark.driver.bindAddress", driver_addr)
             .config("spark.driver.host", driver_addr)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.local.dir", local_dir)
             .config("spark.sql.extensions", "com.datastax.spark.connector.CassandraSparkExtensions")
             .config("spark.cassandra.connection.host", host)
             .config("spark.cassandra.connection.port", "9042")
             .config("spark.cassandra.input.consistency.level", "LOCAL_ONE")
             .config("spark.cassandra.read.timeoutMS", "120000"))
    # The Helenus Spark source (connectors/spark/build.sh), when the caller built it.
    if os.environ.get("HELENUS_SPARK_JAR"):
        spark = spark.config("spark.jars", os.environ["HELENUS_SPARK_JAR"])
    spark = spark.getOrCreate()
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(spark.sparkContext._gateway.proc.pid))
    spark.sparkContext.setLogLevel("WARN")
    return spark


def cmd_query(a):
    from pyspark.sql import functions as F

    spark = spark_session(a.host, a.driver_addr, a.driver_memory, a.local_dir, a.pid_file)
    try:
        for table in a.tables.split(","):
            df = spark.read.format("org.apache.spark.sql.cassandra").options(keyspace=KS, table=table).load()
            cols = df.columns
            t0 = time.perf_counter()
            splits = df.rdd.getNumPartitions()
            print(json.dumps({"table": table, "columns": len(cols), "spark_partitions": splits,
                              "plan_s": round(time.perf_counter() - t0, 3)}), flush=True)

            def q_count():
                return {"rows": df.count()}

            def q_filter():
                r = (df.where(F.col("actor1countrycode") == "USA")
                     .agg(F.count(F.lit(1)).alias("n"), F.sum("numarticles").alias("s")).collect()[0])
                return {"rows": r["n"], "sum_numarticles": r["s"]}

            def q_group():
                rows = df.groupBy("eventrootcode").avg("avgtone").collect()
                return {"groups": sorted([r[0], round(r[1], 9)] for r in rows)}

            def q_rdd():
                # Every row through a Python worker (the connector's rows, all columns, pickled).
                r = df.rdd.map(lambda row: (1, sum(v is not None for v in row))) \
                          .reduce(lambda x, y: (x[0] + y[0], x[1] + y[1]))
                return {"rows": r[0], "non_null_cells": r[1]}

            def q_hash():
                # Every column read and hashed in the JVM; the sum is an order-free checksum of the data.
                r = df.select(F.xxhash64(*cols).cast("decimal(38,0)").alias("h")) \
                      .agg(F.count(F.lit(1)).alias("n"), F.sum("h").alias("s")).collect()[0]
                return {"rows": r["n"], "xxhash64_sum": str(r["s"])}

            queries = [("count", "df.count()", q_count),
                       ("filter_non_key", "where(actor1countrycode = 'USA').agg(count, sum(numarticles))",
                        q_filter),
                       ("groupby_avg", "groupBy(eventrootcode).avg(avgtone).collect()", q_group),
                       ("rdd_scan", "df.rdd.map(row -> non-null cells).reduce (Python workers)", q_rdd),
                       ("all_columns_hash", "select(sum(xxhash64(every column))), count", q_hash)]
            for name, desc, fn in queries:
                if a.queries and name not in a.queries.split(","):
                    continue
                for run in range(1, a.runs + 1):
                    t0 = time.perf_counter()
                    try:
                        res, err = fn(), None
                    except Exception as e:  # noqa: BLE001 - recorded, the next query runs
                        res, err = None, repr(e)[:2000]
                    secs = time.perf_counter() - t0
                    print(json.dumps({"table": table, "query": name, "desc": desc, "run": run,
                                      "seconds": round(secs, 3), "result": res, "error": err}), flush=True)
    finally:
        spark.stop()


# ---------------------------------------------------------------------------------------- report

def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    out.append(json.loads(line))
    return out


def cmd_report(a):
    servers = a.servers
    meta = json.load(open(os.path.join(a.workdir, "meta.json")))
    data = {}
    for s in servers:
        q = read_jsonl(os.path.join(a.workdir, f"{s}-query.jsonl"))
        data[s] = {
            "load": read_jsonl(os.path.join(a.workdir, f"{s}-load.jsonl")),
            "splits": {r["table"]: r["spark_partitions"] for r in q if "spark_partitions" in r},
            "runs": [r for r in q if "query" in r],
            "uptime_before": meta.get(f"{s}_uptime_before"), "uptime_after": meta.get(f"{s}_uptime_after"),
        }
    keys = []
    for s in servers:
        for r in data[s]["runs"]:
            if (r["table"], r["query"]) not in keys:
                keys.append((r["table"], r["query"]))
    results, mismatches = [], []
    for table, query in keys:
        row = {"table": table, "query": query}
        answers = {}
        for s in servers:
            runs = [r for r in data[s]["runs"] if r["table"] == table and r["query"] == query]
            ok = [r for r in runs if not r["error"]]
            row["desc"] = runs[0]["desc"] if runs else None
            row[s] = {"seconds_runs": [r["seconds"] for r in runs],
                      "best_s": min(r["seconds"] for r in ok) if ok else None,
                      "errors": [r["error"] for r in runs if r["error"]]}
            results_seen = {json.dumps(r["result"], sort_keys=True) for r in ok}
            if len(results_seen) > 1:
                mismatches.append(f"{s}: {table}.{query} gave different results in its own runs")
            if ok:
                answers[s] = ok[0]["result"]
                row[s]["result"] = ok[0]["result"]
        if "helenus" in row and "cassandra" in row and row["helenus"]["best_s"] and row["cassandra"]["best_s"]:
            row["ratio_helenus_over_cassandra"] = round(row["helenus"]["best_s"] / row["cassandra"]["best_s"], 3)
        if len(answers) == len(servers) and len(servers) > 1:
            vals = {json.dumps(v, sort_keys=True) for v in answers.values()}
            row["same_result"] = len(vals) == 1
            if len(vals) != 1:
                mismatches.append(f"{table}.{query}: " + "; ".join(f"{s}={json.dumps(v)[:300]}"
                                                                      for s, v in answers.items()))
        elif len(servers) > 1:
            row["same_result"] = None
            mismatches.append(f"{table}.{query}: not answered by every server")
        results.append(row)
    loads = [float(x) for x in meta.get("loadavg_end", "0 0 0").split()[:3]]
    busy = max(loads) > 1.0 or any(
        float((data[s].get("uptime_before") or "load average: 0").rsplit("load average:", 1)[1].split(",")[0])
        > 1.0 for s in servers)
    out = {"bench": "spark", "commit": a.commit, "date": meta.get("date"), "rows": meta.get("rows"),
           "partitions": meta.get("partitions"), "runs_per_query": meta.get("runs"),
           "spark": meta.get("spark"), "connector": CONNECTOR, "master": "local[2]",
           "driver_memory": meta.get("driver_memory"), "cassandra_heap": meta.get("heap"),
           "loadavg_end": meta.get("loadavg_end"), "cores": os.cpu_count(), "machine_busy": busy,
           "all_results_identical": not mismatches, "mismatches": mismatches,
           "servers": {s: {"load": data[s]["load"], "spark_partitions": data[s]["splits"],
                           "uptime_before": data[s]["uptime_before"], "uptime_after": data[s]["uptime_after"],
                           "runs": data[s]["runs"]} for s in servers},
           "results": results}
    with open(a.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    md = [f"# Spark scan benchmark at {a.commit} ({meta.get('date')})", "",
          f"Spark {meta.get('spark')} `local[2]` (driver {meta.get('driver_memory')}), connector "
          f"`{CONNECTOR}`; {meta.get('rows')} GDELT-shaped rows of 61 columns in `events` "
          f"({meta.get('partitions')} partitions, clustered by globaleventid) and the same rows one per partition "
          f"in `events_single` (60 columns). Each query ran {meta.get('runs')} times in one Spark session per "
          "server; best time first, every run in brackets. Ratio = Helenus best / Cassandra best (below 1: "
          "Helenus is faster). Cassandra 5.0.9, heap " + str(meta.get("heap")) + ".", ""]
    if busy:
        md += [f"**Machine busy**: {os.cpu_count()} cores shared with other work; load average at the end "
               f"{meta.get('loadavg_end')}. `uptime` before/after each server: "
               + "; ".join(f"{s}: `{data[s]['uptime_before']}` / `{data[s]['uptime_after']}`" for s in servers)
               + ". Treat the ratios as rough.", ""]
    md.append("**Results identical on both servers.**" if not mismatches else
              "**Results differ:**\n" + "\n".join(f"- {m}" for m in mismatches))
    md.append("")
    md.append("Spark partitions (connector splits) per table: " + "; ".join(
        f"{s} {data[s]['splits']}" for s in servers) + ".")
    md.append("")
    head = "| table | query | " + " | ".join(f"{s} s" for s in servers)
    head += " | Helenus/Cassandra |" if len(servers) > 1 else " |"
    md += [head, "|" + "---|" * (2 + len(servers) + (1 if len(servers) > 1 else 0))]
    for r in results:
        cells = []
        for s in servers:
            x = r[s]
            runs = ", ".join(str(v) for v in x["seconds_runs"])
            cells.append(f"{x['best_s']} ({runs})" + (" ERROR" if x["errors"] else ""))
        line = f"| {r['table']} | {r['query']} | " + " | ".join(cells)
        if len(servers) > 1:
            line += f" | {r.get('ratio_helenus_over_cassandra')} |"
        else:
            line += " |"
        md.append(line)
    md += ["", "Queries:"] + [f"- `{r['query']}`: {r['desc']}" for r in results if r["table"] == TABLES[0]]
    md += ["", "Load (Python driver, prepared statements; not the benchmark): " + "; ".join(
        f"{s} " + ", ".join(f"{x['table']} {x['load_s']} s" for x in data[s]["load"]) for s in servers) + "."]
    errs = [(s, r["table"], r["query"], e) for r in results for s in servers for e in r[s]["errors"]]
    if errs:
        md += ["", "Errors:"] + [f"- {s} {t}.{q}: `{e[:500]}`" for s, t, q, e in errs]
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if mismatches else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("file")
    g.add_argument("--rows", type=int, default=200000)
    g.add_argument("--seed", type=int, default=1979)
    ld = sub.add_parser("load")
    ld.add_argument("host")
    ld.add_argument("file")
    ld.add_argument("--partitions", type=int, default=350)
    ld.add_argument("--batch", type=int, default=10)
    ld.add_argument("--concurrency", type=int, default=64)
    q = sub.add_parser("query")
    q.add_argument("host")
    q.add_argument("--runs", type=int, default=2)
    q.add_argument("--tables", default=",".join(TABLES))
    q.add_argument("--queries", default="")
    q.add_argument("--driver-memory", default="2g")
    q.add_argument("--driver-addr", default="127.0.0.172")
    q.add_argument("--local-dir", default="/tmp")
    q.add_argument("--pid-file", default="")
    r = sub.add_parser("report")
    r.add_argument("workdir")
    r.add_argument("out")
    r.add_argument("commit")
    r.add_argument("servers", nargs="+")
    a = p.parse_args()
    return {"gen": cmd_gen, "load": cmd_load, "query": cmd_query, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
