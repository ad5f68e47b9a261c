"""Topology operations, part 2 (issue 13): `nodetool rebuild`, one topology change at a time,
and repair history in `system_distributed`.

Three nodes hold about 8 MB (RF 3). Every stream is throttled to 1 megabit/s
(`nodetool setstreamthroughput 1`), so each operation below stays in progress long enough to
try a second one meanwhile:
- node3 rebuilds (`nodetool rebuild`, no data center: from any other replica): netstats shows a
  Rebuild plan receiving; a second rebuild and a decommission of node3 are refused; node3 killed
  during a second rebuild and rebuilt again streams only the ranges it lacked;
- a fourth node joins (JOINING): a decommission and a rebuild elsewhere are refused with
  Cassandra's "Other bootstrapping/leaving/moving nodes detected" error, and a fifth node that
  tries to bootstrap meanwhile stops with that error;
- the fourth node decommissions (LEAVING): a second decommission of it, and a decommission of
  node1, are refused.
Then `nodetool repair` writes its parent row and a SUCCESS row per table and range to
`system_distributed.parent_repair_history` / `repair_history`, readable on every node; a
repair with a replica down records FAILED with its reason. Last, two nodes told to decommission
at the same moment: the metadata log's topology claim lets exactly one go.

Runs on its own cluster of three (phase "topology operations" in run.sh)."""

import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import BIN, DIR, ccm, create_keyspace, nodes, nodetool, status_states, stmt, wait_state, wait_until

KS = "ct_ops"
TABLE = f"{KS}.blobs"
ROWS = 8000
VALUE = "x" * 1000
RANGE_MOVEMENT = "Other bootstrapping/leaving/moving nodes detected, cannot {} while cassandra.consistent.rangemovement is true"
S = {}


def first_three():
    n = nodes()
    return n["node1"], n["node2"], n["node3"]


def set_rate(addresses, megabits):
    for address in addresses:
        nodetool(address, "setstreamthroughput", str(megabits))


def refused(address, *args):
    """Runs nodetool expecting a refusal; its message."""
    p = subprocess.run([BIN, "nodetool", "-h", address, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode != 0, f"nodetool {' '.join(args)} on {address} was not refused:\n{p.stdout}"
    return p.stdout + p.stderr


def background(*args):
    return subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc, timeout=300):
    try:
        rc = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert rc == 0, proc.stdout.read()


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1, _, _ = first_three()
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.ALL
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, [(k, VALUE) for k in range(ROWS)], concurrency=64):
        assert ok, result
    for address in first_three():
        nodetool(address, "flush", KS)
    yield
    for proc in S.get("procs", []):
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_rebuild_streams_under_a_rebuild_plan_and_refuses_a_second_operation(pinned):
    a1, a2, a3 = first_three()
    set_rate([a1, a2, a3], 1)
    rebuild = background("nodetool", "-h", a3, "rebuild")
    S.setdefault("procs", []).append(rebuild)

    def receiving():
        out = nodetool(a3, "netstats")
        return out if re.search(r"^Rebuild [0-9a-f-]{36}$", out, re.M) and "Receiving" in out else None

    out = wait_until(receiving, 60, "a Rebuild plan receiving on node3", interval=0.3)
    assert out.startswith("Mode: NORMAL\n"), out  # a rebuilding node serves on
    assert "Node is still rebuilding. Check nodetool netstats." in refused(a3, "rebuild")
    assert RANGE_MOVEMENT.format("decommission") in refused(a3, "decommission")
    assert "Provided datacenter 'nowhere' is not a valid datacenter, available datacenters are: datacenter1" in refused(a1, "rebuild", "nowhere")
    set_rate([a1, a2, a3], 0)
    finish(rebuild)
    # node3 answers everything alone after it.
    rows = pinned[a3].execute(stmt(f"SELECT count(*) FROM {TABLE}", CL.ONE, fetch_size=None), timeout=60).one()
    assert rows[0] == ROWS


def test_a_rebuild_killed_half_way_streams_only_the_missing_ranges_again(pinned):
    """Each range a rebuild receives is recorded (as Cassandra's available_ranges): node3 killed
    mid-rebuild and rebuilt again skips the ranges it had, and holds every row after."""
    a1, a2, a3 = first_three()
    set_rate([a1, a2], 1)
    record = Path(DIR) / "node3" / "data" / "system" / "rebuilt_ranges.json"
    rebuild = background("nodetool", "-h", a3, "rebuild")
    S.setdefault("procs", []).append(rebuild)
    wait_until(lambda: record.exists(), 120, "a first rebuilt range recorded on node3", interval=0.2)
    ccm("kill", "node3")
    rebuild.wait(timeout=60)
    ccm("start", "node3", timeout=120)
    wait_until(lambda: status_states(a1).get(a3, ("?",))[0] == "UN", 60, "node3 UN again")
    wait_until(lambda: all(status_states(a3).get(a, ("?",))[0] == "UN" for a in (a1, a2)), 60, "node3 to see its sources UN")
    set_rate([a1, a2], 0)
    nodetool(a3, "rebuild", timeout=300)
    log = (Path(DIR) / "node3" / "log").read_text()
    resumed = re.findall(r"resuming rebuild: the ranges received before are not streamed again skipped=(\d+) remaining=(\d+)", log)
    assert resumed, "the second rebuild did not skip the ranges received before"
    skipped, remaining = map(int, resumed[-1])
    print(f"rebuild after kill -9: {skipped} ranges received before, {remaining} streamed")
    assert skipped > 0 and remaining > 0, resumed
    assert not record.exists(), "the record outlived the completed rebuild"
    pinned.reset()
    rows = pinned[a3].execute(stmt(f"SELECT count(*) FROM {TABLE}", CL.ONE, fetch_size=None), timeout=60).one()
    assert rows[0] == ROWS


def test_a_joining_node_blocks_other_topology_changes():
    a1, a2, a3 = first_three()
    set_rate([a1, a2, a3], 1)
    before = set(nodes().values())
    add = background("cluster", "--dir", DIR, "add")
    S.setdefault("procs", []).append(add)
    a4 = wait_until(lambda: next(iter(set(nodes().values()) - before), None), 60, "node4 in cluster.txt")
    S["a4"] = a4
    wait_until(lambda: nodetool(a4, "netstats").startswith("Mode: JOINING\n") and "Receiving" in nodetool(a4, "netstats"),
               120, "node4 JOINING and receiving", interval=0.3)
    message = refused(a1, "decommission")
    assert RANGE_MOVEMENT.format("decommission") in message, message
    assert f"bootstrapping: [/{a4}]" in message, message
    assert RANGE_MOVEMENT.format("rebuild") in refused(a2, "rebuild")
    # A fifth node may not bootstrap meanwhile: it stops, as Cassandra's fails to start.
    fifth = subprocess.run([BIN, "cluster", "--dir", DIR, "add"], capture_output=True, text=True, timeout=200, stdin=subprocess.DEVNULL)
    assert fifth.returncode != 0, fifth.stdout
    assert RANGE_MOVEMENT.format("bootstrap") in fifth.stdout + fifth.stderr, fifth.stdout + fifth.stderr
    assert "JOINING" in nodetool(a4, "netstats").splitlines()[0]
    set_rate([a1, a2, a3], 0)
    finish(add)


def test_a_leaving_node_blocks_a_second_decommission():
    a1, _, _ = first_three()
    a4 = S.get("a4")
    if a4 is None:
        pytest.skip("the bootstrap test did not add a node")
    nodetool(a4, "setstreamthroughput", "1")
    leaving = background("nodetool", "-h", a4, "decommission")
    S.setdefault("procs", []).append(leaving)
    wait_until(lambda: nodetool(a4, "netstats").startswith("Mode: LEAVING\n"), 60, "node4 LEAVING", interval=0.3)
    assert "Node in LEAVING state; wait for status to become normal or restart" in refused(a4, "decommission")
    # node1 must know node4 is leaving first: otherwise its decommission would be allowed.
    wait_until(lambda: status_states(a1).get(a4, ("?",))[0] == "UL", 30, "node1 to see node4 leaving")
    message = refused(a1, "decommission")
    assert RANGE_MOVEMENT.format("decommission") in message and f"leaving: [/{a4}]" in message, message
    nodetool(a4, "setstreamthroughput", "0")
    finish(leaving)
    pid = int((Path(DIR) / "node4" / "pid").read_text())
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "the decommissioned node to stop")


def history(session):
    parents = [r for r in session.execute("SELECT * FROM system_distributed.parent_repair_history") if r.keyspace_name == KS]
    jobs = [r for r in session.execute("SELECT * FROM system_distributed.repair_history") if r.keyspace_name == KS]
    return parents, jobs


def test_repair_history_is_kept_in_system_distributed(pinned):
    a1, a2, a3 = first_three()
    meta = pinned[a1].cluster.metadata.keyspaces["system_distributed"]
    assert {"repair_history", "parent_repair_history"} <= set(meta.tables)
    assert meta.replication_strategy.replication_factor == 3
    nodetool(a1, "repair", KS, timeout=120)
    parents, jobs = history(pinned[a1])
    assert len(parents) == 1, parents
    p = parents[0]
    assert p.columnfamily_names == {"blobs"} and p.exception_message is None
    assert p.started_at <= p.finished_at
    assert p.requested_ranges and p.successful_ranges == p.requested_ranges
    assert all(re.fullmatch(r"\(-?\d+,-?\d+\]", r) for r in p.requested_ranges), p.requested_ranges
    assert p.options["incremental"] == "true"
    assert len(jobs) == len(p.requested_ranges), (jobs, p.requested_ranges)
    for j in jobs:
        assert (j.columnfamily_name, j.parent_id, j.status) == ("blobs", p.parent_id, "SUCCESS"), j
        assert str(j.coordinator) == a1 and j.coordinator_port == 7000, j
        assert {str(x) for x in j.participants} == {a2, a3}, j
        assert j.participants_v2 == {f"{a2}:7000", f"{a3}:7000"}, j
        assert f"({j.range_begin},{j.range_end}]" in p.requested_ranges
        assert j.started_at <= j.finished_at
    # Shared with the peers, as the replicated keyspace is.
    assert wait_until(lambda: history(pinned[a2]) == (parents, jobs) or None, 20, "node2 to have the history")


def test_a_failed_repair_is_recorded_as_failed(pinned):
    a1, _, a3 = first_three()
    ccm("kill", "node3")
    wait_state(a1, a3, "DN")
    assert "Endpoint not alive" in refused(a1, "repair", KS)
    parents, jobs = history(pinned[a1])
    failed = [p for p in parents if p.exception_message]
    assert len(failed) == 1 and "Endpoint not alive" in failed[0].exception_message, parents
    assert failed[0].successful_ranges is None and failed[0].finished_at is not None
    rows = [j for j in jobs if j.parent_id == failed[0].parent_id]
    assert rows and all(j.status == "FAILED" and "Endpoint not alive" in j.exception_message for j in rows), rows


def test_two_decommissions_started_together_one_is_refused():
    """Two nodes asked to decommission at the same moment: neither has seen the other LEAVING
    in gossip yet, so only the topology claim of the metadata log can keep them apart; exactly
    one leaves, the other is refused with Cassandra's range-movement error."""
    a1, a2, a3 = first_three()
    ccm("start", "node3", timeout=120)
    wait_until(lambda: all(status_states(a).get(a3, ("?",))[0] == "UN" for a in (a1, a2)), 60, "node3 UN again")
    before = set(nodes().values())
    ccm("add", timeout=300)
    (new,) = set(nodes().values()) - before
    wait_until(lambda: status_states(a1).get(new, ("?",))[0] == "UN", 60, "the new node UN")
    barrier = threading.Barrier(2)
    results = {}

    def decommission(address):
        barrier.wait()
        results[address] = subprocess.run([BIN, "nodetool", "-h", address, "decommission"], capture_output=True,
                                          text=True, timeout=300, stdin=subprocess.DEVNULL)

    threads = [threading.Thread(target=decommission, args=(a,)) for a in (new, a2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=320)
    outcome = {a: (r.returncode, (r.stdout + r.stderr).strip()[-300:]) for a, r in results.items()}
    print(f"decommissions started together: {outcome}")
    left = [a for a, r in results.items() if r.returncode == 0]
    refusals = [a for a, r in results.items() if r.returncode != 0]
    assert len(left) == 1 and len(refusals) == 1, outcome
    assert RANGE_MOVEMENT.format("decommission") in outcome[refusals[0]][1], outcome
    stayed = refusals[0]
    wait_until(lambda: left[0] not in status_states(stayed), 60, "the node that left gone from the ring")
    assert status_states(stayed)[stayed][0] == "UN"
