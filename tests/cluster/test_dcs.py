"""Two data centers of two nodes (run.sh phase 2: node1/node2 in dc1, node3/node4 in dc2) with
NTS {dc1: 2, dc2: 2}: placement per DC, a DC-aware driver stays in its DC, and with one dc2 node
killed EACH_QUORUM and dc2's LOCAL_QUORUM answer Unavailable while dc1's LOCAL_QUORUM goes on."""

import re
import struct

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import Unavailable
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, FallthroughRetryPolicy, TokenAwarePolicy
from conftest import (
    CONVICT_WAIT,
    PROTOCOL,
    ccm,
    check_against_golden,
    create_keyspace,
    datacenters,
    expect_error,
    nodes,
    nodetool,
    status_states,
    stmt,
    wait_state,
)
from load import read_all

KS = "ct_dcs"
TABLE = f"{KS}.kv"
S = {"acked": {}}


def by_dc():
    dcs = datacenters()
    out = {}
    for name, address in sorted(nodes().items()):
        out.setdefault(dcs[name], []).append(address)
    return out




@pytest.fixture(scope="module")
def ks(pinned):
    dcs = by_dc()
    a1 = dcs["dc1"][0]
    create_keyspace(pinned[a1], KS, "{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    return KS


@pytest.fixture(scope="module", autouse=True)
def teardown(pinned):
    yield
    pinned.reset()


def test_data_centers_seen_by_drivers_and_nodetool(pinned):
    dcs = by_dc()
    assert sorted(dcs) == ["dc1", "dc2"] and all(len(v) == 2 for v in dcs.values()), dcs
    dc_of = {a: dc for dc, addrs in dcs.items() for a in addrs}
    for a, dc in dc_of.items():
        local = pinned[a].execute("SELECT data_center FROM system.local").one()
        assert local.data_center == dc
        peers = {str(p.peer): p.data_center for p in pinned[a].execute("SELECT peer, data_center FROM system.peers")}
        assert peers == {x: d for x, d in dc_of.items() if x != a}
        peers_v2 = {str(p.peer): p.data_center for p in pinned[a].execute("SELECT peer, data_center FROM system.peers_v2")}
        assert peers_v2 == peers
    out = nodetool(dcs["dc1"][0], "status")
    for dc, addrs in dcs.items():
        section = out.split(f"Datacenter: {dc}")[1].split("Datacenter:")[0]
        assert sorted(re.findall(r"^UN\s+(\S+)", section, re.M)) == addrs, out
    c = Cluster(dcs["dc2"][:1], protocol_version=PROTOCOL, connect_timeout=10)
    try:
        c.connect()
        assert {(h.address, h.datacenter) for h in c.metadata.all_hosts()} == set(dc_of.items())
    finally:
        c.shutdown()


REBUILD_KS = "ct_rebuild"
REBUILD_ROWS = 600


def local_one_keys(session):
    rows = session.execute(stmt(f"SELECT k FROM {REBUILD_KS}.kv", CL.LOCAL_ONE, fetch_size=200), timeout=60)
    return {r.k for r in rows}


def test_rebuild_gives_a_new_data_center_its_data(pinned):
    """Adding a data center as Cassandra's docs describe: a keyspace written while dc2 had no
    replicas is altered to replicate there, and `nodetool rebuild dc1` on each dc2 node streams
    it from dc1; LOCAL_ONE reads in dc2 then return every row."""
    dcs = by_dc()
    a1 = dcs["dc1"][0]
    create_keyspace(pinned[a1], REBUILD_KS, "{'class': 'NetworkTopologyStrategy', 'dc1': 2}")
    pinned[a1].execute(f"CREATE TABLE {REBUILD_KS}.kv (k int PRIMARY KEY, v text)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {REBUILD_KS}.kv (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.LOCAL_QUORUM
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, [(k, f"v{k}") for k in range(REBUILD_ROWS)], concurrency=32):
        assert ok, result
    pinned[a1].execute(f"ALTER KEYSPACE {REBUILD_KS} WITH replication = {{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}}")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    d2 = dcs["dc2"][0]
    assert len(local_one_keys(pinned[d2])) < REBUILD_ROWS  # dc2 holds none of it yet
    with pytest.raises(AssertionError) as bad:
        nodetool(d2, "rebuild", "dc3")
    assert "Provided datacenter 'dc3' is not a valid datacenter, available datacenters are: dc1,dc2" in str(bad.value)
    with pytest.raises(AssertionError) as bad:
        nodetool(d2, "rebuild", "-ks", "ct_no_such_ks", "--", "dc1")
    assert "Unknown keyspace ct_no_such_ks" in str(bad.value)
    # `-ks` limits the rebuild to the keyspaces named: another one's rebuild leaves this short.
    other = REBUILD_KS + "_other"
    create_keyspace(pinned[a1], other, "{'class': 'NetworkTopologyStrategy', 'dc1': 1, 'dc2': 1}")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    nodetool(d2, "rebuild", "-ks", other, "--", "dc1", timeout=180)
    assert len(local_one_keys(pinned[d2])) < REBUILD_ROWS
    pinned[a1].execute(f"DROP KEYSPACE {other}")
    for address in dcs["dc2"]:
        nodetool(address, "rebuild", "--", "dc1", timeout=180)
    for address in dcs["dc2"]:
        assert local_one_keys(pinned[address]) == set(range(REBUILD_ROWS)), address
        row = pinned[address].execute(stmt(f"SELECT v FROM {REBUILD_KS}.kv WHERE k = 7", CL.LOCAL_ONE)).one()
        assert row.v == "v7"
    pinned[a1].execute(f"DROP KEYSPACE {REBUILD_KS}")


def test_placement_per_data_center(ks):
    dcs = by_dc()
    dc_of = {a: dc for dc, addrs in dcs.items() for a in addrs}
    out = nodetool(dcs["dc1"][0], "status", KS)
    assert "Datacenter: dc1" in out and "Datacenter: dc2" in out, out
    for dc, addrs in dcs.items():
        section = out.split(f"Datacenter: {dc}")[1].split("Datacenter:")[0]
        owns = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)%", section)]
        assert len(owns) == 2 and abs(sum(owns) - 200.0) < 1.0, f"{dc}: {section}"
    for k in range(8):
        endpoints = [line.strip() for line in nodetool(dcs["dc2"][0], "getendpoints", KS, "kv", str(k)).splitlines() if line.strip()]
        assert sorted(endpoints) == sorted(dc_of), f"key {k}: {endpoints}"


def test_each_quorum_and_local_quorum_with_all_up(ks, pinned):
    dcs = by_dc()
    for i, (cl, a) in enumerate([(CL.EACH_QUORUM, dcs["dc1"][0]), (CL.LOCAL_QUORUM, dcs["dc2"][1]), (CL.QUORUM, dcs["dc1"][1])]):
        for k in range(i * 50, i * 50 + 50):
            pinned[a].execute(stmt(f"INSERT INTO {TABLE} (k, v) VALUES ({k}, 'v{k}')", cl))
            S["acked"][k] = f"v{k}"
    assert not read_all(pinned[dcs["dc2"][0]], TABLE, S["acked"], CL.ALL)


def test_dc_aware_driver_stays_in_its_dc(ks):
    dcs = by_dc()
    for policy in (DCAwareRoundRobinPolicy(local_dc="dc1"), TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc="dc1"))):
        profile = ExecutionProfile(load_balancing_policy=policy, request_timeout=30)
        c = Cluster(dcs["dc2"][:1], protocol_version=PROTOCOL, connect_timeout=10,
                    execution_profiles={EXEC_PROFILE_DEFAULT: profile})
        try:
            s = c.connect()
            assert len(c.metadata.all_hosts()) == 4
            insert = s.prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
            insert.consistency_level = CL.LOCAL_QUORUM
            coordinators = set()
            for k in range(1000, 1040):
                rs = s.execute(insert, (k, f"v{k}"))
                S["acked"][k] = f"v{k}"
                coordinators.add(rs.response_future.coordinator_host.split(":")[0]
                                 if isinstance(rs.response_future.coordinator_host, str) else rs.response_future.coordinator_host.address)
                if isinstance(policy, TokenAwarePolicy):
                    replicas = {h.address for h in c.metadata.get_replicas(KS, struct.pack(">i", k))}
                    assert len(replicas) == 4
            assert coordinators <= set(dcs["dc1"]), f"{type(policy).__name__}: requests went to {coordinators}"
            assert len(coordinators) == 2, coordinators
        finally:
            c.shutdown()


def test_one_dc2_node_killed(ks, pinned):
    dcs = by_dc()
    d1a, d1b = dcs["dc1"]
    d2a, d2b = dcs["dc2"]
    node4 = [n for n, a in nodes().items() if a == d2b][0]
    pinned.reset(d2b)
    ccm("kill", node4)
    for observer in (d1a, d2a):
        wait_state(observer, d2b, "DN", timeout=CONVICT_WAIT)
    st = status_states(d1a)
    assert {a: v[0] for a, v in st.items()} == {d1a: "UN", d1b: "UN", d2a: "UN", d2b: "DN"}, st
    # EACH_QUORUM needs 2 of 2 in dc2, where 1 is alive. Cassandra 5.0 reports alive=0 here:
    # ReplicaPlans.assureSufficientLiveReplicas passes (dcBlockFor, dcCount.allReplicas(), 0, ...)
    # to UnavailableException.create(cl, dc, required, requiredFull, alive, aliveFull).
    for coordinator in (d1a, d2a):
        f = expect_error(pinned[coordinator], stmt(f"INSERT INTO {TABLE} (k, v) VALUES (-1, 'x')", CL.EACH_QUORUM), Unavailable)
        assert f == {"code": 0x1000, "consistency": "EACH_QUORUM", "required": 2, "alive": 0}, f
        check_against_golden("each_quorum_write_unavailable_dc2_node_down", f, ["code", "consistency", "required", "alive"])
    # dc2's LOCAL_QUORUM likewise; ALL counts every replica.
    f = expect_error(pinned[d2a], stmt(f"INSERT INTO {TABLE} (k, v) VALUES (-1, 'x')", CL.LOCAL_QUORUM), Unavailable)
    assert f == {"code": 0x1000, "consistency": "LOCAL_QUORUM", "required": 2, "alive": 1}, f
    f = expect_error(pinned[d2a], stmt(f"SELECT v FROM {TABLE} WHERE k = 1", CL.LOCAL_QUORUM), Unavailable)
    assert f == {"code": 0x1000, "consistency": "LOCAL_QUORUM", "required": 2, "alive": 1}, f
    f = expect_error(pinned[d1a], stmt(f"INSERT INTO {TABLE} (k, v) VALUES (-1, 'x')", CL.ALL), Unavailable)
    assert f == {"code": 0x1000, "consistency": "ALL", "required": 4, "alive": 3}, f
    # dc1's LOCAL_QUORUM and QUORUM (3 of 4) keep working, through either DC's nodes.
    for k in range(2000, 2060):
        cl, a = [(CL.LOCAL_QUORUM, d1a), (CL.QUORUM, d1b), (CL.QUORUM, d2a)][k % 3]
        pinned[a].execute(stmt(f"INSERT INTO {TABLE} (k, v) VALUES ({k}, 'v{k}')", cl))
        S["acked"][k] = f"v{k}"
    assert not read_all(pinned[d1b], TABLE, S["acked"], CL.LOCAL_QUORUM)
    assert not read_all(pinned[d2a], TABLE, S["acked"], CL.QUORUM)
    assert pinned[d2a].execute(stmt(f"SELECT v FROM {TABLE} WHERE k = 2000", CL.LOCAL_ONE)).one().v == "v2000"
