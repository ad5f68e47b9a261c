"""Repair (issue 13's `nodetool repair`): replicas already in sync compare Merkle trees and stream
nothing; a replica that missed writes (killed during them, hinted handoff disabled with
`nodetool disablehandoff` as an operator would) is brought level by a repair run on another
node, after which every replica answers the same at ONE. The repair is row-level: it writes the
partitions that differ, to the replica that lacks them, not every partition of a differing
Merkle leaf to every replica.

`nodetool repair` is incremental, as Cassandra's since 4.0: each repair compares only what is
unrepaired (the second one the missed writes alone, not the rows the first repaired), then every
replica marks it repaired (`Percent repaired` in tablestats, sessions FINALIZED in `repair_admin
list`); `-full` compares everything again."""

import re

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import ccm, create_keyspace, nodes, nodetool, wait_all_up
from load import read_all

KS = "ct_repair"
TABLE = f"{KS}.kv"
S = {}


def three():
    return sorted(nodes().values())[:3]


def flush_all():
    for a in three():
        nodetool(a, "flush", KS)


def percent_repaired(address):
    out = nodetool(address, "tablestats", TABLE)
    m = re.search(r"Percent repaired: ([\d.]+)", out)
    assert m, out
    return float(m.group(1))


def info_percent_repaired(address):
    m = re.search(r"^Percent Repaired +: ([\d.]+)%$", nodetool(address, "info"), re.M)
    assert m
    return float(m.group(1))


def summary(out):
    m = re.search(r"(\d+) ranges compared, (\d+) out of sync, (\d+) sub-ranges repaired, (\d+) partitions", out)
    assert m, out
    got = dict(zip(["compared", "out_of_sync", "sub_ranges", "partitions"], map(int, m.groups())))
    rows = re.search(r"Row-level sync: (\d+) partitions compared by digest, (\d+) out of sync; written to: (.*)", out)
    assert rows, out
    got["rows_compared"], got["rows_out_of_sync"] = int(rows.group(1)), int(rows.group(2))
    got["written"] = {} if rows.group(3).strip() == "none" else {
        peer: int(n) for peer, n in (w.split() for w in rows.group(3).strip().split(", "))
    }
    return got


def write(session, keys, cl):
    insert = session.prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = cl
    rows = [(k, f"v{k}") for k in keys]
    for ok, result in execute_concurrent_with_args(session, insert, rows, concurrency=64):
        assert ok, result
    S.setdefault("rows", {}).update(dict(rows))


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1, _, _ = three()
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    yield
    for a in three():
        try:
            nodetool(a, "enablehandoff")
        except AssertionError:
            pass
    pinned.reset()


def test_repair_of_in_sync_replicas_streams_nothing(pinned):
    a1, a2, a3 = three()
    write(pinned[a1], range(500), CL.ALL)
    flush_all()
    assert all(percent_repaired(a) < 100 for a in (a1, a2, a3))
    node_percent = info_percent_repaired(a1)
    out = nodetool(a1, "repair", KS, timeout=120)
    assert "incremental: true" in out and "Incremental repair sessions finalized: " in out, out
    got = summary(out)
    assert got["compared"] > 0 and got["out_of_sync"] == 0 and got["partitions"] == 0, got
    assert got["rows_compared"] == 0 and got["written"] == {}, got
    session = re.search(r"sessions finalized: (\S+)", out).group(1)
    for a in three():
        # Finalized everywhere before the repair answers, and nothing left pending.
        assert percent_repaired(a) == 100.0, a
        listed = nodetool(a, "repair_admin", "list", "--all")
        assert re.search(rf"^{session} +\| FINALIZED +\|", listed, re.M), listed
        assert session not in nodetool(a, "repair_admin", "list"), a
        assert nodetool(a, "repair_admin", "summarize-pending") == "no pending repair data\n"
    # Over every table of the node: the other tests' keyspaces are not repaired.
    assert info_percent_repaired(a1) > node_percent
    with pytest.raises(AssertionError, match="already finalized"):
        nodetool(a2, "repair_admin", "cancel", "--session", session)


def test_a_replica_that_missed_writes_is_repaired(pinned):
    a1, a2, a3 = three()
    for a in (a1, a2, a3):
        nodetool(a, "disablehandoff")
    assert "not running" in nodetool(a1, "statushandoff")
    pinned.reset(a3)
    ccm("kill", "node3")
    missed = range(1000, 1300)
    write(pinned[a1], missed, CL.QUORUM)
    ccm("start", "node3", timeout=120)
    wait_all_up()
    before = read_all(pinned[a3], TABLE, {k: S["rows"][k] for k in missed}, CL.ONE)
    assert len(before) == len(missed), f"node3 should have missed every write: {len(before)} missing"
    flush_all()
    assert percent_repaired(a1) < 100
    got = summary(nodetool(a2, "repair", KS, timeout=300))
    assert got["out_of_sync"] > 0 and got["partitions"] >= len(missed), got
    # Only what node3 missed moves, and only to node3: a leaf-level repair would write each
    # differing leaf's every partition (the in-sync ones too) to all three replicas.
    assert got["partitions"] <= 2 * len(missed) + 10, got
    assert got["rows_out_of_sync"] == len(missed), got
    assert got["written"] == {a3: len(missed)}, got
    # Incremental: the digest lists held the unrepaired rows alone. The 500 rows the first
    # repair marked repaired share the differing leaves but were not listed again.
    assert got["rows_compared"] == len(missed), got
    # What node3 received is in the session's set, repaired with the rest.
    assert all(percent_repaired(a) == 100.0 for a in (a1, a2, a3))
    for a in (a3, a1, a2):
        missing = read_all(pinned[a], TABLE, S["rows"], CL.ONE)
        assert missing == {}, f"{len(missing)} rows differ at ONE through {a} after the repair"


def test_an_incremental_repair_after_one_compares_nothing_and_full_compares_all(pinned):
    a1, a2, a3 = three()
    got = summary(nodetool(a3, "repair", KS, timeout=120))
    assert got["out_of_sync"] == 0 and got["rows_compared"] == 0 and got["partitions"] == 0, got
    # A full repair hashes the repaired data too: in sync, so nothing moves either.
    out = nodetool(a3, "repair", "-full", KS, timeout=120)
    assert "incremental: false" in out and "sessions finalized" not in out, out
    got = summary(out)
    assert got["compared"] > 0 and got["out_of_sync"] == 0 and got["partitions"] == 0, got
    # Written after: unrepaired until the next incremental repair, on every replica.
    write(pinned[a1], range(2000, 2050), CL.ALL)
    flush_all()
    assert all(percent_repaired(a) < 100 for a in (a1, a2, a3))
    got = summary(nodetool(a1, "repair", KS, timeout=120))
    assert got["out_of_sync"] == 0 and got["partitions"] == 0, got
    assert all(percent_repaired(a) == 100.0 for a in (a1, a2, a3))
    for a in (a1, a2, a3):
        assert read_all(pinned[a], TABLE, S["rows"], CL.ONE) == {}
