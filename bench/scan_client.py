"""Full-scan and paged-read client for bench/scan.sh: loads the scan tables into one server, then times
unrestricted scans (and the paged read of one wide partition) at two fetch sizes, before and after a
flush. Prints one JSON object per line: {"phase", "scan", "fetch_size", "rows", "seconds",
"client_cpu_s"} and a final {"load_s"}.

  scan_client.py HOST PORT --flush-cmd 'helenus nodetool -h 127.0.0.60 flush bench_scan'
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType, SimpleStatement

KS = "bench_scan"
LOAD_CONCURRENCY = 32
# Rows per unlogged batch while loading (under Cassandra's 50 KiB batch size failure threshold).
BATCH_ROWS = 50
REQUEST_TIMEOUT_S = 120


def schema(session):
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    cols = "actor text, eventcode int, goldstein double, day int"
    # 350 partitions of ~570 clustered rows (the Spark table shape).
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {KS}.events (part int, globaleventid bigint, {cols}, "
        "PRIMARY KEY (part, globaleventid))"
    )
    # One row per partition.
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {KS}.single (globaleventid bigint PRIMARY KEY, {cols})"
    )
    # One partition read page by page.
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {KS}.wide (part int, globaleventid bigint, {cols}, "
        "PRIMARY KEY (part, globaleventid))"
    )


def row_values(i):
    return (f"actor-{i % 977}", i % 400, (i % 200) / 10.0 - 10.0, 20260000 + i % 365)


def load(session, rows, partitions, wide_rows):
    """Unlogged batches of BATCH_ROWS rows (one partition each for the clustered tables): a client
    starved of CPU loads as fast as the servers take it."""
    cols = "actor, eventcode, goldstein, day"
    ins_events = session.prepare(
        f"INSERT INTO {KS}.events (part, globaleventid, {cols}) VALUES (?, ?, ?, ?, ?, ?)"
    )
    ins_single = session.prepare(
        f"INSERT INTO {KS}.single (globaleventid, {cols}) VALUES (?, ?, ?, ?, ?)"
    )
    ins_wide = session.prepare(
        f"INSERT INTO {KS}.wide (part, globaleventid, {cols}) VALUES (?, ?, ?, ?, ?, ?)"
    )
    events = sorted(range(rows), key=lambda i: (i % partitions, i))
    jobs = [
        (ins_events, [(i % partitions, i) + row_values(i) for i in events]),
        (ins_single, [(i,) + row_values(i) for i in range(rows)]),
        (ins_wide, [(0, i) + row_values(i) for i in range(wide_rows)]),
    ]
    for stmt, args in jobs:
        batches = []
        for at in range(0, len(args), BATCH_ROWS):
            b = BatchStatement(batch_type=BatchType.UNLOGGED)
            for a in args[at:at + BATCH_ROWS]:
                b.add(stmt, a)
            batches.append((b,))
        for r in execute_concurrent(
            session, [(b, ()) for (b,) in batches], concurrency=LOAD_CONCURRENCY,
            raise_on_first_error=True,
        ):
            if not r.success:
                raise RuntimeError(r.result_or_exc)


def process_cpu_s(pid):
    """User + system CPU seconds of process `pid` (all its threads), or None without one."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            # Fields after the command name, which may hold spaces: utime and stime are 14 and 15.
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def timed_scan(session, cql, fetch_size, limit_s, server_pid):
    stmt = SimpleStatement(cql, fetch_size=fetch_size)
    s0 = process_cpu_s(server_pid)
    t0, c0 = time.monotonic(), time.process_time()
    n = 0
    timed_out = False
    for _ in session.execute(stmt, timeout=REQUEST_TIMEOUT_S):
        n += 1
        # Checked per row, so a scan far slower than expected ends within one page of the limit.
        if n % 1000 == 0 and time.monotonic() - t0 > limit_s:
            timed_out = True
            break
    secs, cpu = time.monotonic() - t0, time.process_time() - c0
    s1 = process_cpu_s(server_pid)
    server_cpu = None if s0 is None or s1 is None else s1 - s0
    return n, secs, cpu, server_cpu, timed_out


SCANS = [
    ("one-row partitions", f"SELECT globaleventid FROM {KS}.single"),
    ("clustered partitions", f"SELECT globaleventid FROM {KS}.events"),
    ("one wide partition", f"SELECT globaleventid FROM {KS}.wide WHERE part = 0"),
]


def rust_scan(binary, host, port, cql, fetch_size, limit_s, server_pid):
    """The same scan by helenus-scan (Rust, scylla driver, one page at a time): a client whose
    CPU per row is a few percent of the Python driver's, so the wall time is the server's."""
    s0 = process_cpu_s(server_pid)
    try:
        out = subprocess.run([binary, f"{host}:{port}", str(fetch_size), cql], check=True,
                             capture_output=True, text=True, timeout=limit_s + 60)
        r = json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as e:
        print(f"helenus-scan failed: {e}", file=sys.stderr)
        return None
    s1 = process_cpu_s(server_pid)
    return {"rows": r["rows"], "seconds": round(r["seconds"], 3),
            "client_cpu_s": round(r["client_cpu_s"], 3),
            "server_cpu_s": None if s0 is None or s1 is None else round(s1 - s0, 3)}


def scans(session, phase, fetch_sizes, limit_s, server_pid, rust=None):
    for name, cql in SCANS:
        for fs in fetch_sizes:
            n, secs, cpu, server_cpu, timed_out = timed_scan(session, cql, fs, limit_s, server_pid)
            out = {"phase": phase, "scan": name, "fetch_size": fs, "rows": n,
                   "seconds": round(secs, 3), "client_cpu_s": round(cpu, 3),
                   "server_cpu_s": None if server_cpu is None else round(server_cpu, 3),
                   "timed_out": timed_out}
            if rust:
                out["rust"] = rust_scan(rust[0], rust[1], rust[2], cql, fs, limit_s, server_pid)
            print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=350)
    ap.add_argument("--wide-rows", type=int, default=100_000)
    ap.add_argument("--fetch-sizes", default="1000,5000")
    ap.add_argument("--scan-limit-s", type=float, default=300.0)
    ap.add_argument("--flush-cmd", required=True)
    ap.add_argument("--skip-load", action="store_true")
    # The server's CPU per scan says what the server costs whatever the client's share of the wall time.
    ap.add_argument("--server-pid", type=int, default=0)
    ap.add_argument("--rust-scan", default="", help="helenus-scan binary: each scan again with it")
    a = ap.parse_args()
    profile = ExecutionProfile(request_timeout=REQUEST_TIMEOUT_S)
    cluster = Cluster([a.host], port=a.port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      protocol_version=5)
    session = cluster.connect()
    fetch_sizes = [int(x) for x in a.fetch_sizes.split(",")]
    rust = (a.rust_scan, a.host, a.port) if a.rust_scan else None
    if not a.skip_load:
        schema(session)
        t0 = time.monotonic()
        load(session, a.rows, a.partitions, a.wide_rows)
        print(json.dumps({"load_s": round(time.monotonic() - t0, 3)}), flush=True)
        scans(session, "memtable", fetch_sizes, a.scan_limit_s, a.server_pid, rust)
    subprocess.run(shlex.split(a.flush_cmd), check=True, stdout=sys.stderr, timeout=600)
    scans(session, "flushed", fetch_sizes, a.scan_limit_s, a.server_pid, rust)
    cluster.shutdown()


if __name__ == "__main__":
    main()
