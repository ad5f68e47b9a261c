"""Losing a node for good (issue 13): replacing it, and removing it.

Replace: node3 of three (RF 3, a few thousand rows at QUORUM) is killed (`kill -9`), and a new
node at the next address is started with `--replace-address` of node3 (`helenus cluster replace
node3`) while a QUORUM writer runs. It takes over node3's tokens under a new host id, streams
node3's ranges from the two survivors and becomes Normal. Checked: no write failed during the
replace; every row (before and during) is readable at ALL; the new node alone (the others
stopped) answers every row at ONE; every node lists three UN nodes and not node3, in `nodetool
status` and `system.peers`; the driver drops node3 and adds the new node (REMOVED_NODE/NEW_NODE).

Removenode: a fourth node joins (`helenus cluster add`), node2 is killed, and `nodetool
removenode <node2's host id>` on node1 restores node2's ranges on the nodes that replicate them
next. It refuses a live node and the local node first, with Cassandra's messages. Checked: every
row at ALL, three UN nodes everywhere without node2, ownership spread over the three. Tables of
one wide partition each, flushed on every node before node2 is killed, hold SSTables wholly
inside one token range: those in ranges node2 replicated go to the gaining nodes as their files
(`helenus_stream_whole_sstables_received_total` / `_sent_total`) and read back whole at ALL.

Runs on its own cluster of three (phase "replace and removenode" in run.sh)."""

import re
import subprocess
import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import (
    write_wide_partitions,
    BIN,
    ccm,
    connect,
    create_keyspace,
    nodes,
    nodetool,
    status_states,
    stream_metrics,
    wait_state,
    wait_until,
)
from load import Events, Writer, read_all

KS = "ct_replace"
TABLE = f"{KS}.kv"
ROWS = 3000
WIDE_TABLES = 6
WIDE_ROWS = 200
S = {}


def host_ids(observer):
    """{address: host id} from `nodetool status` on `observer`."""
    out = nodetool(observer, "status")
    pairs = [
        (m.group(1), m.group(2))
        for m in re.finditer(r"^[UD][NLJM]\s+(\d+\.\d+\.\d+\.\d+)\s.*?([0-9a-f]{8}-[0-9a-f-]{27})", out, re.M)
    ]
    assert len(pairs) == len(dict(pairs)), f"an address listed twice by {observer}:\n{out}"
    return dict(pairs)


def everything():
    out = dict(S["rows"])
    for w in ("writer", "writer2"):
        if w in S:
            out.update(S[w].acked)
    return out


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1 = nodes()["node1"]
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    create_keyspace(pinned[a1], f"{KS}_rf1", "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    for i in range(WIDE_TABLES):
        pinned[a1].execute(f"CREATE TABLE {KS}.wide{i} (p int, c int, v text, PRIMARY KEY (p, c))")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.QUORUM
    rows = [(k, f"r{k}") for k in range(ROWS)]
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, rows, concurrency=64):
        assert ok, result
    S["rows"] = dict(rows)
    pinned[a1].execute(f"DELETE FROM {TABLE} WHERE k = 7")
    del S["rows"][7]
    yield
    for w in ("writer", "writer2"):
        if w in S and S[w].is_alive():
            S[w].stop()
    if "events" in S:
        S["events"].close()
    pinned.reset()


def test_a_live_node_cannot_be_replaced(tmp_path):
    """A server started to replace a node that is up refuses, before it takes anything."""
    n = nodes()
    spare = ".".join(n["node3"].split(".")[:3] + [str(max(int(a.split(".")[3]) for a in n.values()) + 1)])
    p = subprocess.run(
        [BIN, "server", "--listen-address", spare, "--data-dir", str(tmp_path), "--seeds", n["node1"],
         "--replace-address", n["node3"]],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )
    assert p.returncode != 0, p.stdout[-2000:]
    assert f"Cannot replace a live node /{n['node3']}" in p.stderr + p.stdout, p.stderr[-2000:]


def test_replace_a_killed_node_under_load(pinned):
    n = nodes()
    a1, a2, a3 = n["node1"], n["node2"], n["node3"]
    S["old_ids"] = host_ids(a1)
    S["events"] = Events(a1)
    ccm("kill", "node3")
    wait_state(a1, a3, "DN")
    wait_state(a2, a3, "DN")
    w = Writer([pinned[a1], pinned[a2]], TABLE, prefix=5, pause=0.005)
    S["writer"] = w
    w.start()
    t0 = time.monotonic()
    ccm("replace", "node3", timeout=240)
    S["replace_seconds"] = time.monotonic() - t0
    time.sleep(1)
    w.stop()
    assert w.acked, "the load wrote nothing"
    assert not w.failed, f"{len(w.failed)} writes failed during the replace: {w.failed[:3]}"
    print(f"replace took {S['replace_seconds']:.1f} s under {len(w.acked)} acknowledged writes")


def test_the_replacement_is_a_new_node_with_the_dead_nodes_tokens():
    n = nodes()
    a1, a3, a4 = n["node1"], n["node3"], n["node4"]
    ids = host_ids(a1)
    assert a4 in ids and ids[a4] != S["old_ids"][a3], "a new host id"
    ring = nodetool(a1, "ring")
    assert a3 not in ring, "the dead node's tokens are all the replacement's"


def test_every_node_lists_three_up_nodes_without_the_dead_one(pinned):
    n = nodes()
    a1, a2, a3, a4 = n["node1"], n["node2"], n["node3"], n["node4"]
    for observer in (a1, a2, a4):
        states = wait_until(
            lambda: (lambda s: s if a3 not in s and len(s) == 3 else None)(status_states(observer)),
            30,
            f"{observer} to drop {a3}",
        )
        assert all(states[a][0] == "UN" for a in (a1, a2, a4)), states
    for observer in (a1, a4):
        peers = {str(r.peer) for r in pinned[observer].execute("SELECT peer FROM system.peers")}
        assert a3 not in peers, f"system.peers on {observer}: {peers}"
    assert a4 in {str(r.peer) for r in pinned[a1].execute("SELECT peer FROM system.peers")}
    ev = S["events"]
    wait_until(
        lambda: ev.cluster.metadata.get_host(a3) is None and ev.cluster.metadata.get_host(a4) is not None,
        30,
        f"the driver to drop {a3} and add {a4} (events: {ev.log})",
    )


def test_every_row_is_readable_at_all(pinned):
    a1 = nodes()["node1"]
    rows = everything()
    missing = read_all(pinned[a1], TABLE, rows, CL.ALL)
    assert missing == {}, f"{len(missing)} rows missing at ALL: {list(missing.items())[:5]}"
    assert pinned[a1].execute(f"SELECT k FROM {TABLE} WHERE k = 7").one() is None, "a deletion was lost"


def test_the_replacement_alone_holds_every_row():
    n = nodes()
    a4 = n["node4"]
    rows = everything()
    for name in ("node1", "node2"):
        ccm("stop", name)
    try:
        c, s = connect(a4)
        try:
            missing = read_all(s, TABLE, rows, CL.ONE)
        finally:
            c.shutdown()
    finally:
        for name in ("node1", "node2"):
            ccm("start", name, timeout=120)
    assert missing == {}, f"{len(missing)} of {len(rows)} rows are not on the replacement"


def test_restarted_nodes_agree_with_the_replacement_on_its_host_id():
    """The refused start at the replacement's address left a host id in gossip that never owned
    anything; nodes restarted after the replace learn it from their peers, and must neither
    list it nor take it for the replacement (Cassandra drops such fat clients)."""
    n = nodes()
    a1, a2, a4 = n["node1"], n["node2"], n["node4"]
    own = host_ids(a4)[a4]
    for observer in (a1, a2):
        ids = wait_until(lambda: (lambda i: i if a4 in i else None)(host_ids(observer)), 30, f"{observer} to list {a4}")
        assert ids[a4] == own, f"{observer} takes {ids[a4]} for {a4}, which is {own}"
        # Up once its own heartbeat reaches the restarted node, not on a third party's word.
        wait_until(lambda: status_states(observer).get(a4, ("?",))[0] == "UN", 30, f"{observer} to see {a4} up")
        assert host_ids(observer)[a4] == own


def test_removenode_refuses_a_live_node_and_itself():
    n = nodes()
    a1, a4 = n["node1"], n["node4"]
    ids = host_ids(a1)
    with pytest.raises(AssertionError, match="is alive and owns this ID"):
        nodetool(a1, "removenode", ids[a4])
    with pytest.raises(AssertionError, match="Cannot remove self"):
        nodetool(a1, "removenode", ids[a1])
    with pytest.raises(AssertionError, match="Host ID not found"):
        nodetool(a1, "removenode", "00000000-0000-0000-0000-000000000001")
    assert "No removals in process" in nodetool(a1, "removenode", "status")


def test_removenode_restores_a_killed_nodes_ranges(pinned):
    ccm("add", timeout=300)
    n = nodes()
    a1, a2, a4, a5 = n["node1"], n["node2"], n["node4"], n["node5"]
    pinned.reset()
    ids = host_ids(a1)
    write_wide_partitions(pinned[a1], (a1, a2, a4, a5), KS, WIDE_TABLES, WIDE_ROWS)
    S["metrics_before_removenode"] = {a: stream_metrics(a) for a in (a1, a4, a5)}
    ccm("kill", "node2")
    wait_state(a1, a2, "DN")
    w = Writer([pinned[a1], pinned[a4]], TABLE, prefix=6, pause=0.005)
    S["writer2"] = w
    w.start()
    t0 = time.monotonic()
    nodetool(a1, "removenode", ids[a2], timeout=240)
    S["remove_seconds"] = time.monotonic() - t0
    w.stop()
    assert not w.failed, f"{len(w.failed)} writes failed during removenode: {w.failed[:3]}"
    print(f"removenode took {S['remove_seconds']:.1f} s under {len(w.acked)} writes")
    for observer in (a1, a4, a5):
        states = wait_until(
            lambda: (lambda s: s if a2 not in s and len(s) == 3 else None)(status_states(observer)),
            30,
            f"{observer} to drop {a2}",
        )
        assert all(states[a][0] == "UN" for a in (a1, a4, a5)), states
    peers = {str(r.peer) for r in pinned[a5].execute("SELECT peer FROM system.peers")}
    assert a2 not in peers, peers


def test_after_removenode_nothing_is_lost_and_ownership_is_spread(pinned):
    n = nodes()
    a1, a5 = n["node1"], n["node5"]
    rows = everything()
    missing = read_all(pinned[a5], TABLE, rows, CL.ALL)
    assert missing == {}, f"{len(missing)} rows missing at ALL after removenode: {list(missing.items())[:5]}"
    three = {a: owns for a, (state, owns) in status_states(a1, KS).items()}
    assert len(three) == 3 and all(o > 99 for o in three.values()), three
    one = {a: owns for a, (state, owns) in status_states(a1, f"{KS}_rf1").items()}
    assert len(one) == 3 and abs(sum(one.values()) - 100) < 1 and all(10 <= o <= 60 for o in one.values()), one


def test_sstables_inside_a_restored_range_went_whole(pinned):
    n = nodes()
    survivors = (n["node1"], n["node4"], n["node5"])
    before = S["metrics_before_removenode"]
    got = {a: stream_metrics(a) for a in survivors}

    def grown(name):
        return sum(got[a][name] - before[a][name] for a in survivors)

    whole = grown("helenus_stream_whole_sstables_received_total")
    sent = grown("helenus_stream_whole_sstables_sent_total")
    whole_bytes = grown("helenus_stream_whole_sstable_bytes_received_total")
    print(f"removenode: {whole} SSTables ({whole_bytes} bytes) went whole")
    assert whole > 0, f"no SSTable went whole during removenode: {got}"
    assert sent == whole, f"the sources sent {sent} whole SSTables, the gaining nodes received {whole}"
    for i in range(WIDE_TABLES):
        q = pinned[n["node5"]].prepare(f"SELECT c, v FROM {KS}.wide{i} WHERE p = ?")
        q.consistency_level = CL.ALL
        got_rows = {r.c: r.v for r in pinned[n["node5"]].execute(q, (i,))}
        assert got_rows == {c: f"w{i}-{c}" * 20 for c in range(WIDE_ROWS)}, f"wide{i}: {len(got_rows)} rows at ALL"
