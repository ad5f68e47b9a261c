#!/usr/bin/env python3
"""Spark client of bench/analytics.sh: the GDELT study's six queries through Apache Spark 3.5 (local[2]) in
ONE Spark session, on layout tables through the DataStax Spark Cassandra Connector 3.5.1 and on Parquet files
through spark.read.parquet. Run with the pyspark venv's python (~/.cache/helenus/spark-venv, bench/lib.sh's
spark_install). The session is bench/spark_bench.py's (spark_session: connector from spark.jars.packages, the
driver bound to --driver-addr, the connector on HOST:9042 at LOCAL_ONE).

  analytics_spark.py run HOST [--layouts narrow,wide,compact,columnar] [--parquet DIR] [options]
  analytics_spark.py serve HOST [options]     targets read from stdin, one a line, until EOF or `quit`:
      table LAYOUT                            the layout's table in keyspace bench_analytics (gdelt.table_name)
      source LAYOUT                           the same table through the Helenus Spark source (engine
                                              "spark_source"; HELENUS_SPARK_JAR names its jar)
      parquet DIR                             the Parquet files under DIR (recursively)
    after each target a {"done": "<the line>"} line (bench/analytics.sh feeds one session per server
    through a FIFO: a layout right after its CQL queries, the Parquet export after DuckDB).
  Options: --server-pid PID (its CPU seconds per query), --limit-s 600 (per query), --driver-addr
  127.0.0.95, --driver-memory 2g, --local-dir DIR, --pid-file FILE (the driver JVM's pid).

The queries are the SQL of analytics_client.py's DuckDB part, run by spark.sql on a temporary view of the
target (so Spark and DuckDB answer the same SQL): full-scan count, AVG(avgtone) GROUP BY actor1name ORDER BY
tone DESC, AVG/MIN/MAX(avgtone) + count WHERE monthyear = 198012, counts for actor1countrycode USA and ALB, and
the 2-column projection forced as count(monthyear) + sum(numarticles). Before a target's queries, one untimed
`limit(1)` read (connector connection and classes warm; reported as warmup_s), and one untimed small SQL job
when the session starts (Spark's code generation warm), so the first target timed does not pay them.
One JSON object per query on stdout, the shape of analytics_client.py's: {"engine": "spark", "layout",
"query", "sql", "seconds", "rows", "result", "client_cpu_s" (the driver JVM's + this process's CPU seconds:
Spark's local[2] executors run in the driver JVM), "server_cpu_s" (--server-pid's; null on Parquet),
"spark_partitions", "warmup_s", "timed_out", "runs", "first_s"[, "error"]} (analytics_client.best_of: a query
under 1 s is run up to 3 times, its best run reported). A query over --limit-s is cancelled (its Spark
job group) and recorded as timed out; the next one runs.
"""
import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from analytics_client import best_of, duckdb_queries, rounded  # noqa: E402 (stdlib + gdelt only)
from gdelt import KEYSPACE, table_name  # noqa: E402
from spark_bench import CONNECTOR, spark_session  # noqa: E402


def process_cpu_s(pid):
    """User + system CPU seconds of process `pid` (all its threads), or None."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def emit(obj):
    print(json.dumps(obj), flush=True)


class Runner:
    def __init__(self, spark, limit_s, server_pid, host):
        self.spark, self.limit_s, self.server_pid, self.host = spark, limit_s, server_pid, host
        self.jvm_pid = spark.sparkContext._gateway.proc.pid
        self.n = 0

    def cpu(self):
        return (process_cpu_s(self.jvm_pid) or 0.0) + time.process_time()

    def warm_session(self):
        """Untimed: Spark's planner and code generation on the study's query shapes over 200k generated rows."""
        t0 = time.monotonic()
        self.spark.range(200_000).selectExpr("id % 97 AS k", "cast(id AS double) / 7 AS v") \
            .createOrReplaceTempView("warm")
        for sql in ("SELECT count(*) FROM warm", "SELECT k, avg(v) AS t FROM warm GROUP BY k ORDER BY t DESC",
                    "SELECT avg(v), min(v), max(v), count(*) FROM warm WHERE k = 3"):
            self.spark.sql(sql).collect()
        return round(time.monotonic() - t0, 3)

    def timed(self, sql):
        """Runs `sql` to completion in a thread of its own Spark job group; cancels the group after
        limit_s. Returns (rows or None, error or None, timed_out)."""
        from pyspark import InheritableThread
        sc = self.spark.sparkContext
        self.n += 1
        group = f"analytics-{self.n}"
        box = {}

        def work():
            sc.setJobGroup(group, sql[:80], interruptOnCancel=True)
            try:
                box["rows"] = self.spark.sql(sql).collect()
            except Exception as e:  # noqa: BLE001 - recorded
                box["error"] = e

        t = InheritableThread(target=work, daemon=True)
        t.start()
        t.join(self.limit_s)
        if t.is_alive():
            sc.cancelJobGroup(group)
            t.join(120)
            return None, None, True
        if "error" in box:
            return None, box["error"], False
        return box["rows"], None, False

    def target(self, kind, arg):
        """Loads the target as a temporary view, warms it, then times the six queries."""
        t0 = time.monotonic()
        engine = "spark"
        if kind == "table":
            layout = arg
            view = f"spark_{layout}"
            df = (self.spark.read.format("org.apache.spark.sql.cassandra")
                  .options(keyspace=KEYSPACE, table=table_name(layout)).load())
            server_pid = self.server_pid
        elif kind == "source":
            # The Helenus Spark source (connectors/spark): column batches from the node's column-scan API.
            layout, view, engine = arg, f"spark_source_{arg}", "spark_source"
            df = (self.spark.read.format("helenus")
                  .options(host=self.host, keyspace=KEYSPACE, table=table_name(layout)).load())
            server_pid = self.server_pid
        elif kind == "parquet":
            layout, view = "parquet", "spark_parquet"
            df = self.spark.read.option("recursiveFileLookup", "true").parquet(arg)
            server_pid = None
        else:
            raise ValueError(f"unknown target kind {kind!r} (table LAYOUT | parquet DIR)")
        df.createOrReplaceTempView(view)
        splits = df.rdd.getNumPartitions()
        df.limit(1).collect()
        warm = round(time.monotonic() - t0, 3)
        for name, sql in duckdb_queries(view):
            out = best_of(lambda: self.once(engine, layout, name, sql, server_pid))
            out["spark_partitions"] = splits
            out["warmup_s"] = warm
            emit(out)

    def once(self, engine, layout, name, sql, server_pid):
        """One timed run of a query."""
        out = {"engine": engine, "layout": layout, "query": name, "sql": sql, "timed_out": False}
        s0, c0, t1 = process_cpu_s(server_pid), self.cpu(), time.monotonic()
        rows, err, timed_out = self.timed(sql)
        out["seconds"] = round(time.monotonic() - t1, 3)
        out["client_cpu_s"] = round(self.cpu() - c0, 3)
        s1 = process_cpu_s(server_pid)
        out["server_cpu_s"] = None if s0 is None or s1 is None else round(s1 - s0, 3)
        out["timed_out"] = timed_out
        if err is not None:
            out["error"] = repr(err)[:300]
        elif rows is not None:
            out["rows"] = len(rows)
            out["result"] = ({"groups": len(rows), "top": rows[0][0], "top_tone": rounded(rows[0][1])}
                             if name == "tone_by_actor1name" and rows else [rounded(v) for v in rows[0]])
        return out


def target_failed(kind, arg, e):
    """One error record per query when a target cannot even be read (the report shows `error`)."""
    layout = "parquet" if kind == "parquet" else arg
    for name, sql in duckdb_queries("t"):
        emit({"engine": "spark_source" if kind == "source" else "spark", "layout": layout, "query": name, "seconds": None, "timed_out": False,
              "error": f"target: {e!r}"[:300]})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("run", "serve"))
    p.add_argument("host")
    p.add_argument("--layouts", default="")
    p.add_argument("--parquet", default="")
    p.add_argument("--server-pid", type=int, default=0)
    p.add_argument("--limit-s", type=float, default=600.0)
    p.add_argument("--driver-addr", default="127.0.0.95")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--local-dir", default="/tmp")
    p.add_argument("--pid-file", default="")
    a = p.parse_args()
    os.makedirs(a.local_dir, exist_ok=True)
    t0 = time.monotonic()
    spark = spark_session(a.host, a.driver_addr, a.driver_memory, a.local_dir, a.pid_file,
                          app="helenus-analytics")
    try:
        import pyspark
        r = Runner(spark, a.limit_s, a.server_pid, a.host)
        start_s = round(time.monotonic() - t0, 3)
        emit({"spark_session": {"spark": pyspark.__version__, "connector": CONNECTOR, "master": "local[2]",
                                "driver_memory": a.driver_memory, "driver_addr": a.driver_addr,
                                "start_s": start_s, "warm_s": r.warm_session()}})
        if a.mode == "run":
            todo = [("table", x) for x in a.layouts.split(",") if x] + ([("parquet", a.parquet)]
                                                                           if a.parquet else [])
            for kind, arg in todo:
                try:
                    r.target(kind, arg)
                except Exception as e:  # noqa: BLE001 - recorded, the next target runs
                    target_failed(kind, arg, e)
            return 0
        while True:
            line = sys.stdin.readline()
            if not line or line.strip() == "quit":
                return 0
            if not line.strip():
                continue
            kind, _, arg = line.strip().partition(" ")
            try:
                r.target(kind, arg.strip())
            except Exception as e:  # noqa: BLE001 - recorded, the session serves the next target
                target_failed(kind, arg.strip(), e)
            emit({"done": line.strip()})
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
