"""Real-client suite: the DataStax/Apache Python driver (cassandra-driver) against the node."""

import datetime
import ipaddress
import time
import uuid
from decimal import Decimal

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException
from cassandra.query import BatchStatement, BatchType, SimpleStatement
from cassandra.util import Date, Duration, Time
from cassandra.concurrent import execute_concurrent_with_args

from conftest import KS, make_cluster


@pytest.mark.parametrize("version", [4, 5])
def test_connects_with_protocol_version(version):
    c = make_cluster(protocol_version=version)
    try:
        s = c.connect()
        row = s.execute("SELECT release_version FROM system.local").one()
        assert row.release_version
        assert c.protocol_version == version
    finally:
        c.shutdown()


@pytest.mark.parametrize("compression", ["lz4", "snappy"])
def test_compressed_connection_v4(compression):
    c = make_cluster(protocol_version=4, compression=compression)
    try:
        s = c.connect()
        conn = c.control_connection._connection
        assert conn.compressor is not None, "driver did not negotiate compression"
        # A large enough payload that the compressor is actually exercised.
        rows = list(s.execute("SELECT keyspace_name, table_name FROM system_schema.tables"))
        assert len(rows) > 10
    finally:
        c.shutdown()


def test_metadata_loads_keyspace_table_columns(cluster, session):
    session.execute(
        "CREATE TABLE meta_t (p1 int, p2 text, c1 timestamp, c2 uuid, v1 text, v2 list<int>,"
        " PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)"
    )
    cluster.refresh_schema_metadata(max_schema_agreement_wait=20)
    ks = cluster.metadata.keyspaces[KS]
    assert ks.replication_strategy.replication_factor == 1
    t = ks.tables["meta_t"]
    assert [c.name for c in t.partition_key] == ["p1", "p2"]
    assert [c.name for c in t.clustering_key] == ["c1", "c2"]
    assert t.columns["c1"].is_reversed and not t.columns["c2"].is_reversed
    types = {name: col.cql_type for name, col in t.columns.items()}
    assert types == {
        "p1": "int", "p2": "text", "c1": "timestamp", "c2": "uuid", "v1": "text", "v2": "list<int>",
    }
    assert "CREATE TABLE" in t.export_as_string()
    assert "system" in cluster.metadata.keyspaces
    assert "local" in cluster.metadata.keyspaces["system"].tables


ALL_TYPES = [
    ("a_ascii", "ascii", "hello ascii"),
    ("a_bigint", "bigint", -(2**63)),
    ("a_blob", "blob", b"\x00\x01\xfe\xff"),
    ("a_boolean", "boolean", True),
    ("a_date", "date", Date(datetime.date(2024, 2, 29))),
    ("a_decimal", "decimal", Decimal("-12345678901234567890.000123")),
    ("a_double", "double", 3.141592653589793),
    ("a_duration", "duration", Duration(months=14, days=3, nanoseconds=5_000_000_123)),
    ("a_float", "float", 1.5),
    ("a_inet4", "inet", "192.0.2.1"),
    ("a_inet6", "inet", "2001:db8::1"),
    ("a_int", "int", -2147483648),
    ("a_smallint", "smallint", -32768),
    ("a_text", "text", "héllo wörld ✓"),
    ("a_time", "time", Time(datetime.time(23, 59, 59, 999999))),
    ("a_timestamp", "timestamp", datetime.datetime(2024, 2, 29, 12, 0, 1, 123000)),
    ("a_timeuuid", "timeuuid", uuid.uuid1()),
    ("a_tinyint", "tinyint", -128),
    ("a_uuid", "uuid", uuid.uuid4()),
    ("a_varchar", "varchar", "varchar value"),
    ("a_varint", "varint", 2**100 + 7),
    ("a_list", "list<int>", [3, 1, 2, 1]),
    ("a_set", "set<text>", {"x", "y", "z"}),
    ("a_map", "map<text, bigint>", {"a": 1, "b": -2}),
    ("a_tuple", "tuple<int, text, boolean>", (1, "t", False)),
    ("a_frozen_list", "frozen<list<text>>", ["f", "g"]),
    ("a_udt", "frozen<addr>", None),  # value filled in the test: needs the registered class
]


def test_prepared_statements_bind_every_type(cluster, session):
    session.execute("CREATE TYPE IF NOT EXISTS addr (street text, zip int, tags set<text>)")

    class Addr:
        def __init__(self, street=None, zip=None, tags=None):
            self.street, self.zip, self.tags = street, zip, tags

        def __eq__(self, other):
            return (self.street, self.zip, self.tags) == (other.street, other.zip, other.tags)

    cluster.register_user_type(KS, "addr", Addr)
    cols = ", ".join(f"{n} {t}" for n, t, _ in ALL_TYPES)
    session.execute(f"CREATE TABLE all_types (k int PRIMARY KEY, {cols})")
    values = [v for _, _, v in ALL_TYPES[:-1]] + [Addr("Main St", 12345, {"home"})]
    names = [n for n, _, _ in ALL_TYPES]
    ins = session.prepare(
        f"INSERT INTO all_types (k, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))})"
    )
    session.execute(ins, [1] + values)
    sel = session.prepare(f"SELECT {', '.join(names)} FROM all_types WHERE k = ?")
    row = session.execute(sel, [1]).one()
    assert row is not None
    for (name, typ, _), want in zip(ALL_TYPES, values):
        got = getattr(row, name)
        if typ == "inet":
            assert ipaddress.ip_address(got) == ipaddress.ip_address(want), name
        elif typ == "float":
            assert got == pytest.approx(want), name
        elif typ.startswith("set"):
            assert set(got) == want, name
        elif typ.startswith("map"):
            assert dict(got) == want, name
        elif typ.startswith("list") or typ.startswith("frozen<list"):
            assert list(got) == want, name
        elif typ == "frozen<addr>":
            assert (got.street, got.zip, set(got.tags)) == ("Main St", 12345, {"home"}), name
        else:
            assert got == want, f"{name}: {got!r} != {want!r}"
    # Nulls bind and read back as None for every column.
    session.execute(ins, [2] + [None] * len(names))
    row = session.execute(sel, [2]).one()
    assert all(getattr(row, n) is None for n in names)


def test_paging_10000_rows_fetch_size_100(session):
    session.execute("CREATE TABLE paged (p int, c int, v text, PRIMARY KEY (p, c))")
    ins = session.prepare("INSERT INTO paged (p, c, v) VALUES (?, ?, ?)")
    execute_concurrent_with_args(
        session, ins, [(i % 10, i, "v") for i in range(10_000)], concurrency=100
    )
    rs = session.execute(SimpleStatement("SELECT p, c FROM paged", fetch_size=100))
    pages, rows, seen = 0, 0, set()
    while True:
        pages += 1
        rows += len(rs.current_rows)
        seen.update((r.p, r.c) for r in rs.current_rows)
        assert len(rs.current_rows) <= 100
        if not rs.has_more_pages:
            break
        rs.fetch_next_page()
    # Pages end inside partitions: each resumes after its last row, nothing twice or missed.
    assert rows == 10_000 and len(seen) == 10_000
    assert pages in (100, 101)  # Cassandra may send a final empty page
    # Paging inside one partition, with a prepared statement, and iteration across pages.
    sel = session.prepare("SELECT c FROM paged WHERE p = ?")
    sel.fetch_size = 100
    cs = [r.c for r in session.execute(sel, [3])]
    assert cs == sorted(cs) and len(cs) == 1000
    # Pages resume where the last stopped: in reverse order, and inside a slice.
    sel = session.prepare("SELECT c FROM paged WHERE p = ? ORDER BY c DESC")
    sel.fetch_size = 70
    cs = [r.c for r in session.execute(sel, [3])]
    assert cs == sorted(cs, reverse=True) and len(cs) == 1000
    sel = session.prepare("SELECT c FROM paged WHERE p = ? AND c >= ? AND c < ?")
    sel.fetch_size = 33
    cs = [r.c for r in session.execute(sel, [3, 2003, 7003])]
    assert cs == [c for c in range(2003, 7003) if c % 10 == 3]


def test_range_scan_pages_stop_inside_partitions_with_static_only_ones(session):
    """A range page stops after its row limit inside a partition and the next resumes there,
    also when partitions that give no row (static data only, under a clustering slice) lie
    between, when a deleted run sits inside a big partition, and over token sub-ranges."""
    session.execute(
        "CREATE TABLE scanned (p int, c int, s text static, v int, PRIMARY KEY (p, c))"
    )
    ins = session.prepare("INSERT INTO scanned (p, c, v) VALUES (?, ?, ?)")
    rows = [(p, c, c) for p in range(12) for c in range(300 if p == 5 else 7)]
    execute_concurrent_with_args(session, ins, rows, concurrency=100)
    for p in range(12, 40):
        session.execute("INSERT INTO scanned (p, s) VALUES (%s, 'only static')", (p,))
    session.execute("DELETE FROM scanned WHERE p = 5 AND c >= 100 AND c < 200")

    def scan(cql, fetch_size):
        got = [(r.p, r.c) for r in session.execute(SimpleStatement(cql, fetch_size=fetch_size))]
        assert len(got) == len(set(got)), "no row twice"
        return got

    for cql in (
        "SELECT p, c FROM scanned",
        "SELECT p, c FROM scanned WHERE c >= 3 ALLOW FILTERING",
        "SELECT p, c FROM scanned WHERE token(p) > -3000000000000000000 "
        "AND token(p) <= 4000000000000000000",
    ):
        whole = scan(cql, 100_000)
        for fetch_size in (1, 3, 50, 199):
            assert scan(cql, fetch_size) == whole, (cql, fetch_size)
    live = [(p, c) for (p, c, _) in rows if not (p == 5 and 100 <= c < 200)]
    assert sorted(scan("SELECT p, c FROM scanned WHERE c >= 0 ALLOW FILTERING", 7)) == sorted(live)


def test_logged_and_unlogged_batches(session):
    session.execute("CREATE TABLE batched (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO batched (k, c, v) VALUES (?, ?, ?)")
    for btype, k in ((BatchType.LOGGED, 1), (BatchType.UNLOGGED, 2)):
        b = BatchStatement(batch_type=btype)
        for c in range(10):
            b.add(ins, (k, c, f"{btype}"))
        b.add(SimpleStatement("UPDATE batched SET v = 'simple' WHERE k = %s AND c = %s"), (k, 0))
        session.execute(b)
        rows = list(session.execute("SELECT c, v FROM batched WHERE k = %s", (k,)))
        assert len(rows) == 10 and rows[0].v == "simple"
    session.execute(
        "BEGIN BATCH "
        "INSERT INTO batched (k, c, v) VALUES (3, 1, 'one'); "
        "INSERT INTO batched (k, c, v) VALUES (3, 2, 'two'); "
        "DELETE FROM batched WHERE k = 2 AND c = 9; "
        "APPLY BATCH"
    )
    assert [r.v for r in session.execute("SELECT v FROM batched WHERE k = 3")] == ["one", "two"]
    assert len(list(session.execute("SELECT c FROM batched WHERE k = 2"))) == 9


def test_1000_concurrent_execute_async(session):
    session.execute("CREATE TABLE conc (k int PRIMARY KEY, v int)")
    ins = session.prepare("INSERT INTO conc (k, v) VALUES (?, ?)")
    futures = [session.execute_async(ins, (i, i * i)) for i in range(1000)]
    for f in futures:
        f.result()
    sel = session.prepare("SELECT v FROM conc WHERE k = ?")
    futures = [session.execute_async(sel, (i,)) for i in range(1000)]
    for i, f in enumerate(futures):
        assert f.result().one().v == i * i


def test_use_update_delete_drop(cluster, session):
    s = cluster.connect()
    s.execute(f"USE {KS}")
    s.execute("CREATE TABLE crud (k int PRIMARY KEY, v text, n int)")
    s.execute("INSERT INTO crud (k, v, n) VALUES (1, 'a', 1)")
    s.execute("UPDATE crud SET v = 'b', n = 2 WHERE k = 1")
    s.execute("UPDATE crud SET v = 'new' WHERE k = 2")  # UPDATE is an upsert
    assert s.execute("SELECT v, n FROM crud WHERE k = 1").one() == ("b", 2)
    assert s.execute("SELECT v, n FROM crud WHERE k = 2").one() == ("new", None)
    s.execute("DELETE n FROM crud WHERE k = 1")
    assert s.execute("SELECT v, n FROM crud WHERE k = 1").one() == ("b", None)
    s.execute("DELETE FROM crud WHERE k = 1")
    assert s.execute("SELECT v FROM crud WHERE k = 1").one() is None
    s.execute("DROP TABLE crud")
    with pytest.raises(InvalidRequest):
        s.execute("SELECT * FROM crud")
    s.shutdown()


def test_errors(session):
    with pytest.raises(InvalidRequest):
        session.execute("SELECT * FROM no_such_keyspace_xyz.t")
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT * FROM {KS}.no_such_table")
    with pytest.raises(SyntaxException):
        session.execute("SELEKT * FROM system.local")
    with pytest.raises(InvalidRequest):
        session.prepare(f"SELECT nope FROM {KS}.conc WHERE k = ?")
    # The connection is still usable after errors.
    assert session.execute("SELECT release_version FROM system.local").one()


def test_schema_change_seen_by_second_session(cluster, session):
    other = make_cluster()
    try:
        other.connect()
        assert "late_table" not in other.metadata.keyspaces[KS].tables
        session.execute("CREATE TABLE late_table (k int PRIMARY KEY, v text)")
        assert cluster.control_connection.wait_for_schema_agreement(wait_time=20)
        # The second cluster learns of the table only through the pushed SCHEMA_CHANGE event.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if "late_table" in other.metadata.keyspaces[KS].tables:
                break
            time.sleep(0.2)
        t = other.metadata.keyspaces[KS].tables.get("late_table")
        assert t is not None, "SCHEMA_CHANGE event not delivered/processed"
        assert [c.name for c in t.partition_key] == ["k"]
    finally:
        other.shutdown()


def test_query_trace_is_readable_from_system_traces(session):
    session.execute("CREATE TABLE IF NOT EXISTS traced (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO traced (k, v) VALUES (1, 1)")
    result = session.execute("SELECT v FROM traced WHERE k = 1", trace=True)
    trace = result.get_query_trace(max_wait_sec=10)
    assert trace.request_type == "Execute CQL3 query"
    assert trace.parameters["query"] == "SELECT v FROM traced WHERE k = 1"
    assert trace.duration is not None and trace.coordinator
    activities = [e.description for e in trace.events]
    assert activities[0] == "Execute CQL3 query received"
    assert "Read 1 live rows" in activities
    assert activities[-1] == "Request complete"
    # An untraced request carries no trace id.
    assert session.execute("SELECT v FROM traced WHERE k = 1").get_all_query_traces() == []
