"""Column scans on a ring (issue 15): the plan any node gives names, for every ring range, a node
that holds it; reading each range from the node named gives every row exactly once; a node
asked for a range it does not replicate refuses it instead of answering with a part of the data.
This is what the Helenus Spark source (connectors/spark) relies on; the wire format is decoded
here as its reader decodes it."""

import struct
import urllib.error
import urllib.request

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import create_keyspace, nodes

KS = "cs_rf1"
N = 2000


def get(host, path):
    try:
        with urllib.request.urlopen(f"http://{host}:10000{path}", timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def plan(host):
    status, body = get(host, f"/column_scan/{KS}/t?splits=1")
    assert status == 200, body
    lines = [line.split("\t") for line in body.decode().splitlines()]
    columns = [f[1:] for f in lines if f[0] == "column"]
    ranges = [(int(f[1]), int(f[2]), f[3]) for f in lines if f[0] == "range"]
    return columns, ranges


def int_columns(body, columns):
    """The rows of a column-scan stream whose columns are all i32 (admin/column_scan/wire.rs)."""
    assert body[:4] == b"HCS1", body[:40]
    at, rows = 4, []
    while True:
        kind = body[at]
        if kind == 0:
            return rows
        assert kind == 1, body[at:at + 200]
        (length,) = struct.unpack_from("<I", body, at + 1)
        batch, at = body[at + 5:at + 5 + length], at + 5 + length
        (n,) = struct.unpack_from("<I", batch, 0)
        pos, cols = 4, []
        for _ in range(columns):
            has_nulls = batch[pos]
            pos += 1
            valid = [True] * n
            if has_nulls:
                valid = [bool(batch[pos + i // 8] >> (i % 8) & 1) for i in range(n)]
                pos += (n + 7) // 8
            values = struct.unpack_from(f"<{n}i", batch, pos)
            pos += 4 * n
            cols.append([v if ok else None for v, ok in zip(values, valid)])
        rows.extend(zip(*cols))


@pytest.fixture(scope="module")
def table(pinned):
    a1 = sorted(nodes().values())[0]
    s = pinned[a1]
    create_keyspace(s, KS, "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(f"CREATE TABLE {KS}.t (k int PRIMARY KEY, v int) WITH extensions = {{'helenus.layout': 'columnar'}}")
    assert s.cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    ins = s.prepare(f"INSERT INTO {KS}.t (k, v) VALUES (?, ?)")
    ins.consistency_level = CL.ONE
    execute_concurrent_with_args(s, ins, [(k, k * 7 if k % 10 else None) for k in range(N)], concurrency=64,
                                 raise_on_first_error=True)
    yield
    s.execute(f"DROP KEYSPACE IF EXISTS {KS}")


def test_every_row_once_from_the_nodes_the_plan_names(table):
    addresses = sorted(nodes().values())
    columns, ranges = plan(addresses[0])
    assert [c[0] for c in columns] == ["k", "v"] and columns[0][1] == "partition_key"
    assert len(ranges) == 3 * 16, len(ranges)
    assert {h for _, _, h in ranges} == set(addresses), "each node holds some ranges at RF=1"
    assert plan(addresses[1])[1] == ranges, "every node plans the same ranges and holders"
    rows = []
    for start, end, host in ranges:
        status, body = get(host, f"/column_scan/{KS}/t/data?start={start}&end={end}&columns=6b.76")
        assert status == 200, body
        rows.extend(int_columns(body, 2))
    assert len(rows) == N, "no row twice, none missing"
    assert sorted(rows) == [(k, k * 7 if k % 10 else None) for k in range(N)]


def test_a_node_refuses_a_range_it_does_not_hold(table):
    addresses = sorted(nodes().values())
    _, ranges = plan(addresses[0])
    start, end, host = ranges[0]
    other = next(a for a in addresses if a != host)
    status, body = get(other, f"/column_scan/{KS}/t/data?start={start}&end={end}&columns=6b")
    assert status == 400 and b"does not hold" in body, (status, body)
    # Nor may a range reach past the ring range that holds its end.
    prev_start = ranges[-1][0]
    status, body = get(host, f"/column_scan/{KS}/t/data?start={prev_start}&end={end}")
    assert status == 400 and b"does not hold" in body, (status, body)
