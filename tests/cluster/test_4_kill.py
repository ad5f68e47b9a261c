"""kill -9 one node of three under QUORUM load (issue 12's first cluster test): QUORUM reads and
writes go on with nothing acknowledged lost, ALL answers Unavailable once the node is seen down,
nodetool shows it DN, a driver listening on another node gets STATUS_CHANGE DOWN then UP; the node
returns and the hints reach it: with the other two stopped, it alone has every acknowledged write."""

import time

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unavailable, WriteTimeout
from cassandra.protocol import TruncateError
from conftest import (
    CONVICT_WAIT,
    ccm,
    check_against_golden,
    create_keyspace,
    ensure_all_running,
    expect_error,
    nodes,
    read_alone,
    status_states,
    stmt,
    wait_all_up,
    wait_hints_delivered,
    wait_state,
)
from load import Events, Writer, read_all

KS = "ct_kill"
TABLE = f"{KS}.kv"
S = {}


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1, a2, a3 = sorted(nodes().values())
    create_keyspace(pinned[a1], KS, "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    pinned[a1].execute(f"CREATE TABLE {KS}.other (k int PRIMARY KEY)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    S["events"] = Events(a1)
    yield
    if "writer" in S and S["writer"].is_alive():
        S["writer"].stop()
    S["events"].close()
    pinned.reset()
    ensure_all_running()


def test_kill_node3_under_quorum_load(pinned):
    a1, a2, a3 = sorted(nodes().values())
    w = Writer([pinned[a1], pinned[a2]], TABLE, prefix=2)
    S["writer"] = w
    w.start()
    time.sleep(1.5)
    assert w.acked and not w.failed, w.failed[:3]
    assert S["events"].is_up(a3) is not False, "the driver on node1 sees node3 down before the kill"
    pinned.reset(a3)
    ccm("kill", "node3")
    S["killed_at"] = time.monotonic()
    # Before conviction the coordinator still counts node3 alive: ALL waits for it and times out.
    try:
        pinned[a1].execute(stmt(f"INSERT INTO {TABLE} (k, v) VALUES (-1, 'all')", CL.ALL))
        outcome = "succeeded"
    except Exception as e:  # noqa: BLE001
        outcome = e
    elapsed = time.monotonic() - S["killed_at"]
    S["before"] = outcome
    assert isinstance(outcome, (WriteTimeout, Unavailable)), f"ALL write {elapsed:.1f} s after kill -9: {outcome!r}"
    if isinstance(outcome, WriteTimeout):
        assert (outcome.received_responses, outcome.required_responses) == (2, 3), outcome


def test_node3_seen_down(pinned):
    a1, a2, a3 = sorted(nodes().values())
    for observer in (a1, a2):
        wait_state(observer, a3, "DN", timeout=CONVICT_WAIT)
        st = status_states(observer)
        assert {a: v[0] for a, v in st.items()} == {a1: "UN", a2: "UN", a3: "DN"}, st
    print(f"node3 convicted {time.monotonic() - S['killed_at']:.1f} s after kill -9")
    S["events"].wait(a3, False, timeout=20)


def test_all_is_unavailable(pinned):
    a1, a2, a3 = sorted(nodes().values())
    for coordinator in (a1, a2):
        wf = expect_error(pinned[coordinator], stmt(f"INSERT INTO {TABLE} (k, v) VALUES (-2, 'all')", CL.ALL), Unavailable)
        assert wf == {"code": 0x1000, "consistency": "ALL", "required": 3, "alive": 2}, wf
        check_against_golden("all_write_unavailable_node_down", wf, ["code", "consistency", "required", "alive"])
        rf = expect_error(pinned[coordinator], stmt(f"SELECT v FROM {TABLE} WHERE k = 1", CL.ALL), Unavailable)
        assert rf == {"code": 0x1000, "consistency": "ALL", "required": 3, "alive": 2}, rf
        # A range read needs every range at ALL too.
        sf = expect_error(pinned[coordinator], stmt(f"SELECT k FROM {TABLE}", CL.ALL), Unavailable)
        assert sf == {"code": 0x1000, "consistency": "ALL", "required": 3, "alive": 2}, sf
    # TRUNCATE needs every node: Cassandra's TruncateStatement wraps the Unavailable of
    # StorageProxy.truncateBlocking in a TruncateException (code 0x1003).
    tf = expect_error(pinned[a1], stmt(f"TRUNCATE {KS}.other", CL.ALL), TruncateError)
    check_against_golden("truncate_node_down", tf, ["error"])
    # QUORUM scans and counts still answer.
    n = pinned[a2].execute(stmt(f"SELECT count(*) FROM {TABLE}", CL.QUORUM)).one().count
    assert n >= len(S["writer"].acked) - 5


def test_quorum_lost_nothing(pinned):
    a1, a2, a3 = sorted(nodes().values())
    time.sleep(1)
    w = S["writer"]
    w.stop()
    assert not w.failed, f"{len(w.failed)} QUORUM writes failed with node3 killed, first: {w.failed[:3]}"
    missing = read_all(pinned[a2], TABLE, w.acked, CL.QUORUM)
    assert not missing, f"{len(missing)} of {len(w.acked)} acknowledged writes not read at QUORUM: {list(missing.items())[:5]}"


def test_node3_returns_and_has_every_acknowledged_write(pinned):
    a1, a2, a3 = sorted(nodes().values())
    ccm("start", "node3")
    wait_all_up(timeout=60)
    S["events"].wait(a3, True, timeout=30)
    wait_hints_delivered(timeout=60)
    pinned.reset()
    missing = read_alone(a3, lambda s: read_all(s, TABLE, S["writer"].acked, CL.ONE))
    assert not missing, f"node3 alone lacks {len(missing)} of {len(S['writer'].acked)} acknowledged writes: {list(missing.items())[:5]}"
