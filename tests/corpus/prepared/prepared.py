#!/usr/bin/env python3
"""PREPARED metadata as drivers see it, recorded from a real Cassandra and checked against Helenus.

The corpus runs simple statements; drivers prepare. What they bind by is the PREPARED answer: each
bind marker's name and type, the result columns, the partition-key indexes used for routing, or
the error. One statement list (statements.cql, one per line, run against the schema in
schema.cql), one golden file recorded from Cassandra 5.0.9:

    prepared.py record --host 127.0.0.2 --port 9042     # writes golden.json
    prepared.py check  --host 127.0.0.1 --port 9042     # exit 1 on any difference

Errors compare by protocol error code only (messages are Cassandra's to word). known.json lists
the deliberate differences, each with its reason: they are reported, and do not fail the check.
"""

import argparse
import json
import os
import sys

from cassandra.cluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
KEYSPACE = "c_prepared"


def lines(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("--")]


def describe(host, port):
    cluster = Cluster([host], port=port, protocol_version=4, connect_timeout=20)
    session = cluster.connect()
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=60)
        session.execute(
            f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
            timeout=60,
        )
        session.set_keyspace(KEYSPACE)
        for ddl in lines("schema.cql"):
            session.execute(ddl, timeout=60)
        out = {}
        for q in lines("statements.cql"):
            try:
                p = session.prepare(q)
                out[q] = {
                    "markers": [[m.name, m.type.cql_parameterized_type()] for m in p.column_metadata],
                    # (keyspace, table, name, type) tuples in this driver.
                    "columns": [[m[2], m[3].cql_parameterized_type()] for m in (p.result_metadata or [])],
                    "routing": p.routing_key_indexes,
                }
            except Exception as e:  # noqa: BLE001 - the error is the answer being compared
                code = getattr(e, "code", None)
                if code is None and hasattr(e, "errors"):
                    codes = [getattr(x, "code", None) for x in e.errors.values()]
                    code = next((c for c in codes if c is not None), None)
                out[q] = {"error": f"0x{code:04x}" if isinstance(code, int) else type(e).__name__}
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=60)
        return out
    finally:
        cluster.shutdown()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["record", "check"])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9042)
    args = ap.parse_args()
    got = describe(args.host, args.port)
    golden = os.path.join(HERE, "golden.json")
    if args.mode == "record":
        with open(golden, "w", encoding="utf-8") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(got)} statements into {golden}")
        return 0
    with open(golden, encoding="utf-8") as f:
        want = json.load(f)
    with open(os.path.join(HERE, "known.json"), encoding="utf-8") as f:
        known = json.load(f)
    differ = [q for q in want if got.get(q) != want[q]]
    for q in differ:
        why = f" (known: {known[q]})" if q in known else ""
        print(f"DIFF {q}{why}\n   cassandra: {want[q]}\n   helenus:   {got.get(q)}")
    unexpected = [q for q in differ if q not in known]
    print(f"prepared metadata: {len(want) - len(differ)}/{len(want)} statements as Cassandra 5.0.9 prepares them"
          f" ({len(differ) - len(unexpected)} known differences)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
