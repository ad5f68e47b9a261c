"""RF=3 on a healthy ring: what one coordinator acknowledges at QUORUM, another reads at ALL; updates,
deletes and tombstones written through different coordinators reconcile by timestamp."""

import pytest
from cassandra import ConsistencyLevel as CL
from conftest import create_keyspace, nodes, stmt

STRATEGIES = {
    "ct_simple": "{'class': 'SimpleStrategy', 'replication_factor': 3}",
    "ct_nts": "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}",
}


@pytest.fixture(scope="module", params=sorted(STRATEGIES))
def ks(request, pinned):
    name = request.param
    a1 = sorted(nodes().values())[0]
    create_keyspace(pinned[a1], name, STRATEGIES[name])
    pinned[a1].execute(f"CREATE TABLE {name}.kv (k int PRIMARY KEY, v text)")
    pinned[a1].execute(f"CREATE TABLE {name}.wide (p int, c int, v text, PRIMARY KEY (p, c))")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    return name


def test_quorum_writes_read_at_all_elsewhere(ks, pinned):
    a1, a2, a3 = sorted(nodes().values())
    insert = pinned[a1].prepare(f"INSERT INTO {ks}.kv (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.QUORUM
    acked = {}
    for k in range(200):
        pinned[a1].execute(insert, (k, f"v{k}"))
        acked[k] = f"v{k}"
    select = pinned[a2].prepare(f"SELECT v FROM {ks}.kv WHERE k = ?")
    select.consistency_level = CL.ALL
    for k, v in acked.items():
        row = pinned[a2].execute(select, (k,)).one()
        assert row is not None and row.v == v, f"key {k}: {row}"
    # A range read at ALL (every ring range, paged) sees exactly the acknowledged keys.
    scan = stmt(f"SELECT k, v FROM {ks}.kv", CL.ALL, fetch_size=37)
    got = {r.k: r.v for r in pinned[a3].execute(scan)}
    assert got == acked
    count = pinned[a2].execute(stmt(f"SELECT count(*) FROM {ks}.kv", CL.QUORUM)).one().count
    assert count == 200


def test_last_write_wins_across_coordinators(ks, pinned):
    a1, a2, a3 = sorted(nodes().values())
    q = lambda a, cql: pinned[a].execute(stmt(cql, CL.QUORUM))  # noqa: E731
    # Newer timestamp first through one node, older later through another: the newer one stays.
    q(a1, f"INSERT INTO {ks}.kv (k, v) VALUES (1000, 'new') USING TIMESTAMP 2000")
    q(a2, f"INSERT INTO {ks}.kv (k, v) VALUES (1000, 'old') USING TIMESTAMP 1000")
    # An update through a third node with a newer timestamp wins.
    q(a1, f"INSERT INTO {ks}.kv (k, v) VALUES (1001, 'first') USING TIMESTAMP 1000")
    q(a3, f"UPDATE {ks}.kv USING TIMESTAMP 3000 SET v = 'second' WHERE k = 1001")
    # A delete beats an older write that arrives after it, loses to a newer one.
    q(a1, f"INSERT INTO {ks}.kv (k, v) VALUES (1002, 'x') USING TIMESTAMP 1000")
    q(a2, f"DELETE FROM {ks}.kv USING TIMESTAMP 2000 WHERE k = 1002")
    q(a3, f"INSERT INTO {ks}.kv (k, v) VALUES (1002, 'late') USING TIMESTAMP 1500")
    q(a1, f"INSERT INTO {ks}.kv (k, v) VALUES (1003, 'x') USING TIMESTAMP 1000")
    q(a2, f"DELETE FROM {ks}.kv USING TIMESTAMP 2000 WHERE k = 1003")
    q(a3, f"INSERT INTO {ks}.kv (k, v) VALUES (1003, 'revived') USING TIMESTAMP 2500")
    # A cell deletion.
    q(a1, f"INSERT INTO {ks}.kv (k, v) VALUES (1004, 'x')")
    q(a2, f"UPDATE {ks}.kv SET v = null WHERE k = 1004")
    want = {1000: "new", 1001: "second", 1002: None, 1003: "revived", 1004: None}
    for reader in (a1, a2, a3):
        for k, v in want.items():
            row = pinned[reader].execute(stmt(f"SELECT v FROM {ks}.kv WHERE k = {k}", CL.ALL)).one()
            got = row.v if row else None
            assert got == v, f"key {k} read at ALL through {reader}: {got!r}, want {v!r}"
    # The row of 1004 still exists (its primary key was written by INSERT), with v null.
    assert pinned[a3].execute(stmt(f"SELECT k FROM {ks}.kv WHERE k = 1004", CL.ALL)).one() is not None
    assert pinned[a3].execute(stmt(f"SELECT k FROM {ks}.kv WHERE k = 1002", CL.ALL)).one() is None


def test_range_and_partition_tombstones_reconcile(ks, pinned):
    a1, a2, a3 = sorted(nodes().values())
    ins = pinned[a1].prepare(f"INSERT INTO {ks}.wide (p, c, v) VALUES (?, ?, ?)")
    ins.consistency_level = CL.QUORUM
    for p in range(3):
        for c in range(10):
            pinned[a1].execute(ins, (p, c, f"{p}.{c}"))
    pinned[a2].execute(stmt(f"DELETE FROM {ks}.wide WHERE p = 0 AND c >= 3 AND c < 7", CL.QUORUM))
    pinned[a3].execute(stmt(f"DELETE FROM {ks}.wide WHERE p = 1", CL.QUORUM))
    pinned[a2].execute(stmt(f"DELETE FROM {ks}.wide WHERE p = 2 AND c = 9", CL.QUORUM))
    pinned[a1].execute(stmt(f"INSERT INTO {ks}.wide (p, c, v) VALUES (1, 42, 'after')", CL.QUORUM))
    for reader in (a1, a2, a3):
        rows = {
            p: [r.c for r in pinned[reader].execute(stmt(f"SELECT c FROM {ks}.wide WHERE p = {p}", CL.ALL))]
            for p in range(3)
        }
        assert rows == {0: [0, 1, 2, 7, 8, 9], 1: [42], 2: list(range(9))}, f"through {reader}: {rows}"
        limited = [r.c for r in pinned[reader].execute(stmt(f"SELECT c FROM {ks}.wide WHERE p = 0 LIMIT 4", CL.ALL))]
        assert limited == [0, 1, 2, 7]


def test_truncate_empties_every_replica(ks, pinned):
    a1, a2, a3 = sorted(nodes().values())
    pinned[a1].execute(f"CREATE TABLE {ks}.trunc (k int PRIMARY KEY, v int)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    for k in range(20):
        pinned[a2].execute(stmt(f"INSERT INTO {ks}.trunc (k, v) VALUES ({k}, {k})", CL.QUORUM))
    pinned[a3].execute(f"TRUNCATE {ks}.trunc")
    for reader in (a1, a2, a3):
        # ONE through each node: each node's own replica is empty (RF=3: every node holds every key).
        assert list(pinned[reader].execute(stmt(f"SELECT k FROM {ks}.trunc", CL.ONE))) == [], reader
        assert pinned[reader].execute(stmt(f"SELECT k FROM {ks}.trunc WHERE k = 5", CL.ALL)).one() is None


def trace_text(session, statement):
    rs = session.execute(statement, trace=True)
    rows = list(rs)
    events = rs.get_query_trace(max_wait_sec=10).events
    return rows, " | ".join(e.description for e in events)


def test_columnar_scans_run_on_a_replica_of_every_token_at_one(ks, pinned):
    """RF=3 on three nodes: every node replicates every token, so at ONE / LOCAL_ONE (the Spark
    connector's default) a column scan answers from the coordinator's own data; at QUORUM the
    same statement goes through the replicas. Both answer what was acknowledged at ALL."""
    a1, a2, _ = sorted(nodes().values())
    pinned[a1].execute(f"CREATE TABLE IF NOT EXISTS {ks}.cols (k int PRIMARY KEY, m int, x double) "
                       "WITH extensions = {'helenus.layout': 'columnar'}")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {ks}.cols (k, m, x) VALUES (?, ?, ?)")
    insert.consistency_level = CL.ALL
    for k in range(300):
        pinned[a1].execute(insert, (k, k % 7, k / 4))
    agg = f"SELECT count(*), sum(m), max(x) FROM {ks}.cols"
    for cl, local in ((CL.ONE, True), (CL.LOCAL_ONE, True), (CL.QUORUM, False)):
        rows, trace = trace_text(pinned[a2], stmt(agg, cl))
        assert tuple(rows[0]) == (300, sum(k % 7 for k in range(300)), 299 / 4), cl
        assert ("from its column chunks" in trace) == local, (cl, trace)
        rows, trace = trace_text(pinned[a2], stmt(f"SELECT k, x FROM {ks}.cols", cl, fetch_size=1000))
        assert sorted(r.k for r in rows) == list(range(300)), cl
        assert ("column by column" in trace) == local, (cl, trace)
