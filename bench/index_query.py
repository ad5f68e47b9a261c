#!/usr/bin/env python3
"""Secondary-index query latency against a running node (issue 16 item 6).

Loads ROWS rows `k int PRIMARY KEY, v int` with v = k % (ROWS / 10) (every value matches 10 rows),
creates an index on v, then times `SELECT * FROM t WHERE v = ?` (10 matches) and a paged read of a
2,500-match value (fetch size 100). Run it against a node before and after a change:

    ~/.cache/helenus/venv/bin/python bench/index_query.py --host 127.0.0.121 [--rows 200000]
"""
import argparse
import time

from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--wait", type=float, default=120, help="seconds to wait for the index build")
    a = ap.parse_args()
    session = Cluster([a.host], connect_timeout=10).connect()
    session.default_timeout = 120
    session.execute("CREATE KEYSPACE IF NOT EXISTS ixbench WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("DROP TABLE IF EXISTS ixbench.t")
    session.execute("CREATE TABLE ixbench.t (k int PRIMARY KEY, v int, p int)")
    ins = session.prepare("INSERT INTO ixbench.t (k, v, p) VALUES (?, ?, ?)")
    distinct = a.rows // 10
    t0 = time.time()
    # p = 1 on 2,500 rows: the paged value.
    args = [(k, k % distinct, 1 if k % (a.rows // 2500) == 0 else 0) for k in range(a.rows)]
    execute_concurrent_with_args(session, ins, args, concurrency=64)
    print(f"loaded {a.rows} rows in {time.time() - t0:.1f} s")
    t0 = time.time()
    session.execute("CREATE INDEX t_v_idx ON ixbench.t (v)")
    session.execute("CREATE INDEX t_p_idx ON ixbench.t (p)")
    # The index serves queries once built; before, the same query scans. Wait until a query is
    # fast or --wait seconds pass (0 for a
    # build that never serves queries, such as a node that scans).
    q = session.prepare("SELECT * FROM ixbench.t WHERE v = ?")
    while time.time() - t0 < a.wait:
        s = time.time()
        session.execute(q, (7,))
        if time.time() - s < 0.05:
            break
        time.sleep(0.5)
    print(f"index ready after {time.time() - t0:.1f} s")
    lat = []
    for i in range(a.queries):
        s = time.time()
        rows = list(session.execute(q, (i * 37 % distinct,)))
        lat.append(time.time() - s)
        assert len(rows) == 10, len(rows)
    lat.sort()
    print(f"WHERE v = ? (10 of {a.rows} rows): median {lat[len(lat) // 2] * 1000:.2f} ms, "
          f"max {lat[-1] * 1000:.2f} ms over {a.queries} queries")
    s = time.time()
    stmt = SimpleStatement("SELECT k FROM ixbench.t WHERE p = 1", fetch_size=100)
    keys = [r.k for r in session.execute(stmt)]
    assert len(keys) == 2500 and len(set(keys)) == 2500, len(keys)
    print(f"paged WHERE p = 1 (2,500 rows, fetch size 100): {(time.time() - s) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
