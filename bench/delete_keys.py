#!/usr/bin/env python3
"""Deletes a fraction of a stress table's partitions, spread over the ring, for bench/ops.sh's
garbagecollect after deletes: the keys after RUNS random tokens (FRACTION of ROWS in all), each
deleted at QUORUM. Prints how many it deleted. Needs the DataStax/Scylla Python driver (the test
command's venv has it).

    delete_keys.py HOST KEYSPACE.TABLE ROWS FRACTION"""
import random, sys, time

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

RUNS = 20


def main():
    host, table, rows, fraction = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    per_run = max(1, int(rows * fraction / RUNS))
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 13)
    cluster = Cluster([host], port=9042, connect_timeout=30, control_connection_timeout=30)
    session = cluster.connect()
    session.default_timeout = 60
    select = session.prepare(f"SELECT key FROM {table} WHERE token(key) >= ? LIMIT {per_run}")
    delete = session.prepare(f"DELETE FROM {table} WHERE key = ?")
    delete.consistency_level = ConsistencyLevel.QUORUM
    keys = set()
    for _ in range(RUNS):
        start = rng.randint(-(2**63), 2**63 - 1)
        keys.update(r.key for r in session.execute(select, (start,)))
    t0 = time.time()
    results = execute_concurrent_with_args(session, delete, [(k,) for k in keys], concurrency=64,
                                           raise_on_first_error=True)
    assert all(ok for ok, _ in results)
    print(f"deleted {len(keys)} partitions in {time.time() - t0:.1f} s")
    cluster.shutdown()


if __name__ == "__main__":
    main()
