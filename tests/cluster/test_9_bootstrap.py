"""Adding a node to a ring that holds data (issue 13's bootstrap): a fourth node joins the three
under a QUORUM write load (`helenus cluster add`). It announces its tokens as joining, receives
the writes of the ranges it gains while it streams them from the current replicas, and becomes
Normal only then. Checked: nothing acknowledged before or during the join is lost (every row at
ALL through the new node and an old one), the new node itself holds every row of the ranges it
now replicates (read at ONE through it, which reads its own replica first), and ownership is
balanced: about 25% each for `nodetool status`, about 75% each for the keyspace at RF 3.

Then the same node is decommissioned under load (`nodetool decommission`): the ring is back to
three nodes with nothing lost, and the decommissioned node refuses to start again.

Whole-SSTable streaming: tables of one wide partition each, flushed on every node before the
join, hold SSTables that lie wholly inside one token range; the ones in ranges the new node gains
go as their files (`helenus_stream_whole_sstables_received_total` on the new node), are read
back whole at ALL, and the test prints how many bytes went whole against partition pages.

Runs last in phase 1 (its fourth node is 127.0.0.84)."""

import re
import time
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import DIR, ccm, create_keyspace, nodes, nodetool, status_states, wait_until, write_wide_partitions
from conftest import stream_metrics as metrics
from load import Writer, read_all

KS = "ct_bootstrap"
TABLE = f"{KS}.kv"
ROWS = 4000
WIDE_TABLES = 6
WIDE_ROWS = 300
LCS = f"{KS}.lcs"
S = {}


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1 = sorted(nodes().values())[0]
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    create_keyspace(pinned[a1], f"{KS}_rf1", "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    for i in range(WIDE_TABLES):
        pinned[a1].execute(f"CREATE TABLE {KS}.wide{i} (p int, c int, v text, PRIMARY KEY (p, c))")
    pinned[a1].execute(f"CREATE TABLE {LCS} (k int PRIMARY KEY, v text) WITH compaction = {{'class': 'LeveledCompactionStrategy'}}")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    yield
    for w in ("writer", "writer2"):
        if w in S and S[w].is_alive():
            S[w].stop()
    pinned.reset()


def test_a_fourth_node_joins_under_load(pinned):
    a1, a2, a3 = sorted(nodes().values())[:3]
    insert = pinned[a1].prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.QUORUM
    rows = [(k, f"r{k}") for k in range(ROWS)]
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, rows, concurrency=64):
        assert ok, result
    S["rows"] = dict(rows)
    insert = pinned[a1].prepare(f"INSERT INTO {LCS} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.QUORUM
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, rows, concurrency=64):
        assert ok, result
    write_wide_partitions(pinned[a1], (a1, a2, a3), KS, WIDE_TABLES, WIDE_ROWS)
    # Deletions and overwrites must stream too, not only live rows.
    pinned[a2].execute(f"DELETE FROM {TABLE} WHERE k = 7")
    del S["rows"][7]
    w = Writer([pinned[a1], pinned[a2], pinned[a3]], TABLE, prefix=3, pause=0.005)
    S["writer"] = w
    w.start()
    time.sleep(1)
    t0 = time.monotonic()
    ccm("add", timeout=900)
    S["join_seconds"] = time.monotonic() - t0
    time.sleep(1)
    w.stop()
    assert len(nodes()) == 4
    assert w.acked, "the load wrote nothing"
    assert not w.failed, f"{len(w.failed)} writes failed during the join: {w.failed[:3]}"
    print(f"join took {S['join_seconds']:.1f} s under {len(w.acked)} acknowledged writes")


def test_every_node_sees_the_new_one_normal():
    a4 = sorted(nodes().values())[3]
    for observer in sorted(nodes().values()):
        assert status_states(observer).get(a4, ("?",))[0] == "UN", f"{observer} does not see {a4} UN"


def test_nothing_acknowledged_was_lost(pinned):
    a1, a4 = sorted(nodes().values())[0], sorted(nodes().values())[3]
    everything = {**S["rows"], **S["writer"].acked}
    for a in (a4, a1):
        missing = read_all(pinned[a], TABLE, everything, CL.ALL)
        assert missing == {}, f"{len(missing)} rows missing at ALL through {a}: {list(missing.items())[:5]}"
    gone = pinned[a4].execute(f"SELECT k FROM {TABLE} WHERE k = 7").one()
    assert gone is None, "the deleted row came back"


def test_the_new_node_holds_its_ranges(pinned):
    a4 = sorted(nodes().values())[3]
    everything = {**S["rows"], **S["writer"].acked}
    sample = sorted(everything)[:: max(1, len(everything) // 300)]
    mine = {k: everything[k] for k in sample if a4 in endpoints(a4, k)}
    assert len(mine) > len(sample) / 2, "RF 3 of 4 nodes: the new node replicates most keys"
    # A ONE read coordinated by a replica reads its own copy first.
    missing = read_all(pinned[a4], TABLE, mine, CL.ONE)
    assert missing == {}, f"{len(missing)} of its {len(mine)} rows are not on the new node"


def test_ownership_is_balanced():
    a1 = sorted(nodes().values())[0]
    # Plain `nodetool status` prints "?" when keyspaces differ in replication, as Cassandra's
    # does: ownership is asked per keyspace.
    one_copy = {a: owns for a, (state, owns) in status_states(a1, f"{KS}_rf1").items()}
    assert len(one_copy) == 4 and all(15 <= o <= 35 for o in one_copy.values()), one_copy
    three_copies = {a: owns for a, (state, owns) in status_states(a1, KS).items()}
    assert len(three_copies) == 4 and all(60 <= o <= 90 for o in three_copies.values()), three_copies


def read_wide_tables(session):
    """Every wide partition, read at ALL through `session`."""
    for i in range(WIDE_TABLES):
        q = session.prepare(f"SELECT c, v FROM {KS}.wide{i} WHERE p = ?")
        q.consistency_level = CL.ALL
        got = {r.c: r.v for r in session.execute(q, (i,))}
        assert got == {c: f"w{i}-{c}" * 20 for c in range(WIDE_ROWS)}, f"wide{i}: {len(got)} rows at ALL"


def test_sstables_inside_a_gained_range_went_whole(pinned):
    a4 = sorted(nodes().values())[3]
    m = metrics(a4)
    whole, whole_bytes = m["helenus_stream_whole_sstables_received_total"], m["helenus_stream_whole_sstable_bytes_received_total"]
    pages = m["helenus_stream_partition_bytes_received_total"]
    print(f"bootstrap: {whole} SSTables ({whole_bytes} bytes) went whole, {pages} bytes as partition pages")
    assert whole > 0, f"no SSTable went whole: {m}"
    sent = sum(metrics(a)["helenus_stream_whole_sstables_sent_total"] for a in sorted(nodes().values())[:3])
    assert sent == whole, f"the sources sent {sent} whole SSTables, the new node received {whole}"
    read_wide_tables(pinned[a4])


def sstable_count(address, table):
    out = nodetool(address, "tablestats", f"{KS}.{table}")
    return int(re.search(r"SSTable count: (\d+)", out).group(1))


def partitions_on(address):
    """Partitions of the table stored on `address` (compacted first, so none counts twice)."""
    nodetool(address, "flush", KS, "kv")
    nodetool(address, "compact", KS, "kv")
    out = nodetool(address, "tablestats", f"{KS}.kv")
    return int(re.search(r"Number of partitions \(estimate\): (\d+)", out).group(1))


def test_cleanup_drops_what_an_old_node_no_longer_replicates(pinned):
    """`nodetool cleanup` on node1 after the join: it kept every partition at RF 3 of 3 nodes,
    and replicates about 3/4 of them at RF 3 of 4; nothing is lost to the cluster."""
    a1, a4 = sorted(nodes().values())[0], sorted(nodes().values())[3]
    before = partitions_on(a1)
    everything = {**S["rows"], **S["writer"].acked}
    assert before >= 0.9 * len(everything), f"node1 holds {before} of {len(everything)} partitions before cleanup"
    sample = sorted(everything)[:: max(1, len(everything) // 300)]
    kept_share = sum(a1 in endpoints(a1, k) for k in sample) / len(sample)
    nodetool(a1, "cleanup", KS, timeout=300)
    after = partitions_on(a1)
    share = after / before
    print(f"cleanup on node1: {before} -> {after} partitions ({share:.2f}; it replicates {kept_share:.2f} of a sample)")
    assert abs(share - kept_share) < 0.1, f"node1 kept {share:.2f} of its partitions, replicates {kept_share:.2f}"
    missing = read_all(pinned[a4], TABLE, everything, CL.ALL)
    assert missing == {}, f"{len(missing)} rows missing at ALL after cleanup: {list(missing.items())[:5]}"


def endpoints(address, key):
    out = nodetool(address, "getendpoints", KS, "kv", str(key))
    return set(re.findall(r"\d+\.\d+\.\d+\.\d+", out))


def test_decommission_hands_the_ranges_back_under_load(pinned):
    """`nodetool decommission` on the new node: LEAVING, its ranges pushed to the nodes that own
    them next (which also get the writes meanwhile), LEFT, and the process stops."""
    a1, a2, a3, a4 = sorted(nodes().values())
    w = Writer([pinned[a1], pinned[a2], pinned[a3]], TABLE, prefix=4, pause=0.005)
    S["writer2"] = w
    # A Leveled compaction ends its outputs at the ring's tokens: each of the node's SSTables of
    # the table lies wholly inside one range, and goes whole below.
    nodetool(a4, "flush", KS, "lcs")
    S["lcs_before_compact"] = sstable_count(a4, "lcs")
    nodetool(a4, "compact", KS, "lcs", timeout=120)
    S["lcs_sstables"] = sstable_count(a4, "lcs")
    print(f"Leveled table on the new node: {S['lcs_before_compact']} SSTables, {S['lcs_sstables']} after a major compaction")
    w.start()
    time.sleep(1)
    S["received_before_decommission"] = {a: metrics(a) for a in (a1, a2, a3)}
    t0 = time.monotonic()
    nodetool(a4, "decommission", timeout=600)
    S["decommission_seconds"] = time.monotonic() - t0
    w.stop()
    assert not w.failed, f"{len(w.failed)} writes failed during the decommission: {w.failed[:3]}"
    pid = int((Path(DIR) / "node4" / "pid").read_text())
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "the decommissioned node to stop")
    print(f"decommission took {S['decommission_seconds']:.1f} s under {len(w.acked)} writes")


def test_the_ring_is_back_to_three_and_lost_nothing(pinned):
    a1, a2, a3, a4 = sorted(nodes().values())
    for observer in (a1, a2, a3):
        states = status_states(observer)
        assert a4 not in states, f"{observer} still lists the decommissioned node: {states}"
        assert all(states.get(a, ("?",))[0] == "UN" for a in (a1, a2, a3)), states
    peers = {r.peer for r in pinned[a1].execute("SELECT peer FROM system.peers")}
    assert a4 not in {str(p) for p in peers}
    everything = {**S["rows"], **S["writer"].acked, **S["writer2"].acked}
    missing = read_all(pinned[a2], TABLE, everything, CL.ALL)
    assert missing == {}, f"{len(missing)} rows missing at ALL after the decommission"


def test_sstables_inside_a_handed_back_range_went_whole(pinned):
    """The wide tables' SSTables the new node received whole lie wholly inside ranges it hands
    back: the nodes gaining them pulled them as files from the leaving node."""
    a1, a2, a3, a4 = sorted(nodes().values())
    before = S["received_before_decommission"]
    got = {a: metrics(a) for a in (a1, a2, a3)}
    whole = sum(
        got[a]["helenus_stream_whole_sstables_received_total"] - before[a]["helenus_stream_whole_sstables_received_total"]
        for a in got
    )
    whole_bytes = sum(
        got[a]["helenus_stream_whole_sstable_bytes_received_total"]
        - before[a]["helenus_stream_whole_sstable_bytes_received_total"]
        for a in got
    )
    log = re.sub(r"\x1b\[[0-9;]*m", "", (Path(DIR) / "node4" / "log").read_text())
    handed = re.findall(r"decommission handed every range over.*?bytes=(\d+) whole_sstables=(\d+)", log)
    print(f"decommission: {whole} SSTables ({whole_bytes} bytes) went whole; the leaving node logged (bytes, whole) {handed}")
    assert whole > 0, f"no SSTable went whole during the decommission: {got}"
    assert S["lcs_sstables"] > 1, "the Leveled compaction did not split at the ring's tokens"
    assert whole >= S["lcs_sstables"], f"{whole} SSTables went whole, fewer than the Leveled table's {S['lcs_sstables']}"
    assert handed and int(handed[-1][1]) == whole, f"the leaving node sent {handed}, its peers received {whole}"
    read_wide_tables(pinned[a1])
    missing = read_all(pinned[a3], LCS, S["rows"], CL.ALL)
    assert missing == {}, f"{len(missing)} rows of the Leveled table missing at ALL after the decommission"


def test_a_decommissioned_node_does_not_rejoin():
    out = ccm("start", "node4", timeout=60, check=False)
    log = (Path(DIR) / "node4" / "log").read_text()
    assert "decommissioned" in log.lower(), out
