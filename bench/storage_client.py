#!/usr/bin/env python3
"""Python client parts of bench/storage.sh (DataStax driver, the same code for both servers).

  storage_client.py wide-load  HOST --partitions P --rows R [--value-size 100]
  storage_client.py wide-slice HOST --partitions P --rows R --query limit|range --duration S
  storage_client.py gdelt-gen  FILE --rows N [--seed 1979]      (a deterministic GDELT 1.0-shaped data set)
  storage_client.py gdelt-load HOST FILE

Each command prints one JSON object on stdout. helenus-stress user profiles derive every key column from
the operation's index, so they cannot express "few partitions, random clustering start" or GDELT's skewed
country codes: hence this script. Latency is measured in the client from the request to the callback
(Python + driver included, the same for both servers); `client_cpu_s` says how busy the client was.
"""
import argparse
import json
import pickle
import random
import resource
import sys
import threading
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent
from cassandra.policies import RetryPolicy, WhiteListRoundRobinPolicy
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType, tuple_factory

WIDE_KS, WIDE_TABLE = "bench_wide", "t"
GDELT_KS, GDELT_TABLE = "bench_gdelt", "events"


def connect(host, timeout=30):
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        retry_policy=RetryPolicy(),
        row_factory=tuple_factory,
        request_timeout=timeout,
        consistency_level=ConsistencyLevel.ONE,
    )
    cluster = Cluster([host], port=9042, protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      schema_metadata_enabled=False, token_metadata_enabled=False,
                      connect_timeout=30, control_connection_timeout=30, max_schema_agreement_wait=10)
    return cluster, cluster.connect()


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load(session, stmts, concurrency=64):
    """Executes (statement, params) pairs; returns (elapsed_s, errors, first_error)."""
    t0 = time.perf_counter()
    errors, first = 0, None
    for ok, res in execute_concurrent(session, stmts, concurrency=concurrency, raise_on_first_error=False,
                                      results_generator=True):
        if not ok:
            errors += 1
            first = first or repr(res)
    return time.perf_counter() - t0, errors, first


def pct(sorted_ms, q):
    if not sorted_ms:
        return None
    return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 3)


class FixedDuration:
    """`concurrency` chains of requests, each issuing the next one from the previous one's callback,
    until `duration` seconds have passed (closed loop, no rate limit)."""

    def __init__(self, session, stmt, params, concurrency, duration):
        self.session, self.stmt, self.params = session, stmt, params
        self.concurrency, self.duration = concurrency, duration
        self.lock = threading.Lock()
        self.lat_ms, self.rows, self.errors, self.first_error = [], 0, 0, None
        self.done = threading.Event()

    def run(self):
        self.inflight = self.concurrency
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + self.duration
        c0 = cpu_s()
        for _ in range(self.concurrency):
            self.issue()
        self.done.wait(self.duration + 120)
        elapsed = time.perf_counter() - self.t0
        lat = sorted(self.lat_ms)
        return {
            "ops": len(lat), "errors": self.errors, "first_error": self.first_error,
            "elapsed_s": round(elapsed, 3), "rate_per_s": round(len(lat) / elapsed, 1),
            "rows_per_op": round(self.rows / len(lat), 1) if lat else None,
            "latency_p50_ms": pct(lat, 0.50), "latency_p99_ms": pct(lat, 0.99),
            "latency_mean_ms": round(sum(lat) / len(lat), 3) if lat else None,
            "concurrency": self.concurrency, "client_cpu_s": round(cpu_s() - c0, 2),
        }

    def finish_chain(self):
        with self.lock:
            self.inflight -= 1
            if self.inflight == 0:
                self.done.set()

    def issue(self):
        if time.perf_counter() >= self.deadline:
            self.finish_chain()
            return
        t = time.perf_counter()
        try:
            f = self.session.execute_async(self.stmt, self.params())
        except Exception as e:  # noqa: BLE001 - counted, the chain goes on
            self.on_err(e, t)
            return
        f.add_callbacks(self.on_ok, self.on_err, callback_args=(t,), errback_args=(t,))

    def on_ok(self, rows, t):
        ms = (time.perf_counter() - t) * 1000
        with self.lock:
            self.lat_ms.append(ms)
            self.rows += len(rows)
        self.issue()

    def on_err(self, exc, t):
        with self.lock:
            self.errors += 1
            self.first_error = self.first_error or repr(exc)
        if self.errors > 1000:
            self.deadline = 0
        self.issue()


# ---------------------------------------------------------------------------------------- wide partitions

def wide_value(rng, size):
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=size))


def wide_load(a):
    cluster, s = connect(a.host)
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {WIDE_KS} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE IF NOT EXISTS {WIDE_KS}.{WIDE_TABLE} (pk int, ck int, v text, "
                  "PRIMARY KEY ((pk), ck))")
        ins = s.prepare(f"INSERT INTO {WIDE_KS}.{WIDE_TABLE} (pk, ck, v) VALUES (?, ?, ?)")
        rng = random.Random(a.seed)
        # 64 distinct values reused: generating 1M random strings in Python would dominate the load time;
        # rotating 64 of them still defeats run-length tricks but compresses like repeated text.
        values = [wide_value(rng, a.value_size) for _ in range(64)]

        def batches():
            # Unlogged batches of `batch` rows of one partition (a single mutation), partitions interleaved.
            end = a.rows if a.ck_to is None else min(a.rows, a.ck_to)
            for start in range(a.ck_from, end, a.batch):
                for pk in range(a.partitions):
                    b = BatchStatement(batch_type=BatchType.UNLOGGED)
                    for ck in range(start, min(end, start + a.batch)):
                        b.add(ins, (pk, ck, values[(pk * 7 + ck) % 64]))
                    yield b, None

        c0 = cpu_s()
        elapsed, errors, first = load(s, batches(), a.concurrency)
        n = a.partitions * ((a.rows if a.ck_to is None else min(a.rows, a.ck_to)) - a.ck_from)
        print(json.dumps({"rows": n, "partitions": a.partitions, "rows_per_partition": a.rows,
                          "value_bytes": a.value_size, "batch_rows": a.batch, "load_s": round(elapsed, 3),
                          "rows_per_s": round(n / elapsed, 1), "errors": errors, "first_error": first,
                          "client_cpu_s": round(cpu_s() - c0, 2)}))
    finally:
        cluster.shutdown()


def wide_slice(a):
    cluster, s = connect(a.host)
    try:
        span = 100
        if a.query == "limit":
            cql = f"SELECT * FROM {WIDE_KS}.{WIDE_TABLE} WHERE pk = ? AND ck >= ? LIMIT {span}"
        else:
            cql = f"SELECT * FROM {WIDE_KS}.{WIDE_TABLE} WHERE pk = ? AND ck >= ? AND ck < ?"
        stmt = s.prepare(cql)
        stmt.fetch_size = 1000  # one page per query
        rng = random.Random(a.seed)
        top = max(1, a.rows - span)

        def params():
            pk, ck = rng.randrange(a.partitions), rng.randrange(top)
            return (pk, ck) if a.query == "limit" else (pk, ck, ck + span)

        out = FixedDuration(s, stmt, params, a.concurrency, a.duration).run()
        out.update({"query": cql.replace(f"{WIDE_KS}.", ""), "rows_per_slice": span})
        print(json.dumps(out))
    finally:
        cluster.shutdown()


# ---------------------------------------------------------------------------------------- GDELT

# The generator lives in bench/gdelt.py (shared with bench/analytics.sh); the rows are unchanged.
from gdelt import GDELT_COLUMNS, data_stats, generate  # noqa: E402


def gdelt_gen(a):
    rows = generate(a.rows, a.seed)
    with open(a.file, "wb") as f:
        pickle.dump(rows, f, protocol=pickle.HIGHEST_PROTOCOL)
    print(json.dumps(data_stats(rows, a.seed)))


def gdelt_load(a):
    with open(a.file, "rb") as f:
        rows = pickle.load(f)
    # Part K of P: a contiguous range of event ids (one SSTable per part when each is followed by a flush).
    lo, hi = (a.part - 1) * len(rows) // a.parts, a.part * len(rows) // a.parts
    rows = rows[lo:hi]
    cluster, s = connect(a.host)
    try:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {GDELT_KS} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        cols = ", ".join(f"{c} {t}" + (" PRIMARY KEY" if i == 0 else "") for i, (c, t) in enumerate(GDELT_COLUMNS))
        s.execute(f"CREATE TABLE IF NOT EXISTS {GDELT_KS}.{GDELT_TABLE} ({cols})")
        names = ", ".join(c for c, _ in GDELT_COLUMNS)
        ins = s.prepare(f"INSERT INTO {GDELT_KS}.{GDELT_TABLE} ({names}) VALUES ({', '.join('?' * 57)})")
        # Empty GDELT fields are not written at all (UNSET, no cell and no tombstone).
        stmts = ((ins, tuple(UNSET_VALUE if v is None else v for v in r)) for r in rows)
        c0 = cpu_s()
        elapsed, errors, first = load(s, stmts, a.concurrency)
        print(json.dumps({"rows": len(rows), "columns": 57, "load_s": round(elapsed, 3),
                          "rows_per_s": round(len(rows) / elapsed, 1), "errors": errors, "first_error": first,
                          "client_cpu_s": round(cpu_s() - c0, 2)}))
    finally:
        cluster.shutdown()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wide-load")
    w.add_argument("host")
    w.add_argument("--partitions", type=int, default=20)
    w.add_argument("--rows", type=int, default=50000)
    w.add_argument("--value-size", type=int, default=100)
    w.add_argument("--batch", type=int, default=25)
    w.add_argument("--concurrency", type=int, default=32)
    w.add_argument("--seed", type=int, default=42)
    w.add_argument("--ck-from", type=int, default=0, help="load clustering keys [ck-from, ck-to) only")
    w.add_argument("--ck-to", type=int, default=None)
    r = sub.add_parser("wide-slice")
    r.add_argument("host")
    r.add_argument("--partitions", type=int, default=20)
    r.add_argument("--rows", type=int, default=50000)
    r.add_argument("--query", choices=["limit", "range"], default="limit")
    r.add_argument("--duration", type=float, default=20)
    r.add_argument("--concurrency", type=int, default=32)
    r.add_argument("--seed", type=int, default=7)
    g = sub.add_parser("gdelt-gen")
    g.add_argument("file")
    g.add_argument("--rows", type=int, default=200000)
    g.add_argument("--seed", type=int, default=1979)
    gl = sub.add_parser("gdelt-load")
    gl.add_argument("host")
    gl.add_argument("file")
    gl.add_argument("--concurrency", type=int, default=64)
    gl.add_argument("--part", type=int, default=1)
    gl.add_argument("--parts", type=int, default=1)
    a = p.parse_args()
    {"wide-load": wide_load, "wide-slice": wide_slice, "gdelt-gen": gdelt_gen, "gdelt-load": gdelt_load}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
