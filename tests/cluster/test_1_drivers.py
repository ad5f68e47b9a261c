"""What drivers and tools see of a healthy 3-node ring: peers tables, driver metadata and token
map, token-aware routing, nodetool status / getendpoints / describecluster, schema agreement."""

import re
import struct
import threading
import uuid

import pytest

from cassandra import ConsistencyLevel as CL
from cassandra.cluster import Cluster
from conftest import (
    PROTOCOL,
    create_keyspace,
    golden,
    nodes,
    nodetool,
    status_states,
    stmt,
    wait_until,
)

KS1, KS2, KS3 = "ct_rf1", "ct_rf2", "ct_rf3"


def addresses():
    return sorted(nodes().values())


NIL = uuid.UUID(int=0)


def test_no_nil_schema_version_in_peers_right_after_start(pinned):
    """Runs first, right after `helenus cluster start` returned (every node sees every node UN)."""
    seen = {
        (a, str(p.peer)): p.schema_version
        for a in addresses()
        for table in ("peers", "peers_v2")
        for p in pinned[a].execute(f"SELECT peer, schema_version FROM system.{table}")
    }
    assert NIL not in seen.values() and None not in seen.values(), seen


def test_peers_tables_list_exactly_the_other_nodes(pinned):
    addrs = addresses()
    assert len(addrs) == 3
    # Peers' schema versions converge on each node's own (bounded: gossip rounds are 1 s).
    wait_until(lambda: all(
        p.schema_version == pinned[a].execute("SELECT schema_version FROM system.local").one().schema_version
        for a in addrs for p in pinned[a].execute("SELECT schema_version FROM system.peers_v2")), 15,
        "peers' schema versions to match system.local")
    host_ids = {}
    for a in addrs:
        local = pinned[a].execute("SELECT host_id, tokens, schema_version, release_version FROM system.local").one()
        host_ids[a] = local.host_id
        assert len(local.tokens) == 16
        assert local.release_version == "5.0.9"
    assert len(set(host_ids.values())) == 3
    for a in addrs:
        s = pinned[a]
        local = s.execute("SELECT schema_version, tokens FROM system.local").one()
        others = {x for x in addrs if x != a}
        peers = list(s.execute("SELECT * FROM system.peers"))
        assert {str(p.peer) for p in peers} == others, f"system.peers on {a}"
        for p in peers:
            assert p.host_id == host_ids[str(p.peer)]
            assert p.data_center == "datacenter1" and p.rack == "rack1"
            assert len(p.tokens) == 16
            assert p.release_version == "5.0.9"
            assert str(p.rpc_address) == str(p.peer)
            assert p.schema_version == local.schema_version, f"{p.peer}'s schema version seen from {a}"
        v2 = list(s.execute("SELECT * FROM system.peers_v2"))
        assert {str(p.peer) for p in v2} == others, f"system.peers_v2 on {a}"
        for p in v2:
            assert p.host_id == host_ids[str(p.peer)]
            assert p.peer_port == 7000 and p.native_port == 9042
            assert str(p.native_address) == str(p.peer)
            assert p.data_center == "datacenter1" and p.rack == "rack1"
            assert len(p.tokens) == 16 and p.release_version == "5.0.9"
            assert p.schema_version == local.schema_version
    # Tokens are disjoint across the ring.
    all_tokens = []
    for a in addrs:
        all_tokens += list(pinned[a].execute("SELECT tokens FROM system.local").one().tokens)
    assert len(set(all_tokens)) == 48


def test_peers_tables_have_cassandras_columns(pinned):
    want = golden("peers_columns")
    if want is None:
        pytest.skip("no golden/peers_columns.json recorded")
    s = pinned[addresses()[0]]
    for table in ("peers", "peers_v2"):
        got = sorted(r.column_name for r in s.execute(
            f"SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'system' AND table_name = '{table}'"))
        assert got == want[table], f"system.{table} columns"


def test_driver_metadata_sees_three_hosts_and_a_token_map():
    c = Cluster([addresses()[0]], protocol_version=PROTOCOL, connect_timeout=10)
    try:
        c.connect()
        hosts = c.metadata.all_hosts()
        assert sorted(h.address for h in hosts) == addresses()
        assert all(h.is_up and h.datacenter == "datacenter1" and h.release_version == "5.0.9" for h in hosts)
        tm = c.metadata.token_map
        assert tm is not None and len(tm.ring) == 48
        assert {h.address for h in tm.token_to_host_owner.values()} == set(addresses())
    finally:
        c.shutdown()


def _setup_keyspaces(session):
    for ks, rf in ((KS1, 1), (KS2, 2), (KS3, 3)):
        create_keyspace(session, ks, f"{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
        session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
    assert session.cluster.control_connection.wait_for_schema_agreement(wait_time=30)


def test_getendpoints_and_token_aware_routing():
    """nodetool getendpoints agrees with the driver's replicas, and the default TokenAwarePolicy
    sends each request to one of them (with RF=1: exactly the one owner)."""
    c = Cluster([addresses()[0]], protocol_version=PROTOCOL, connect_timeout=10)
    try:
        s = c.connect()
        _setup_keyspaces(s)
        c.refresh_schema_metadata()
        for ks, rf in ((KS1, 1), (KS2, 2), (KS3, 3)):
            insert = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
            insert.consistency_level = CL.ONE
            owners = set()
            for k in range(12):
                out = nodetool(addresses()[k % 3], "getendpoints", ks, "t", str(k))
                endpoints = sorted(line.strip() for line in out.splitlines() if line.strip())
                assert len(endpoints) == rf, f"getendpoints {ks} t {k}: {endpoints}"
                replicas = sorted(h.address for h in c.metadata.get_replicas(ks, struct.pack(">i", k)))
                assert replicas == endpoints, f"key {k} in {ks}: driver {replicas}, nodetool {endpoints}"
                for _ in range(2):
                    rs = s.execute(insert, (k, k))
                    coordinator = rs.response_future.coordinator_host
                    coordinator = coordinator.split(":")[0] if isinstance(coordinator, str) else coordinator.address
                    assert coordinator in endpoints, f"key {k} in {ks} coordinated by {coordinator}, replicas {endpoints}"
                owners.add(endpoints[0])
            if rf == 1:
                assert len(owners) > 1, "12 keys at RF=1 all owned by one node"
    finally:
        c.shutdown()


def test_nodetool_status_owns_effective():
    for ks, rf in ((KS1, 1), (KS2, 2), (KS3, 3)):
        for a in addresses():
            states = status_states(a, ks)
            assert set(states) == set(addresses())
            assert all(st == "UN" for st, _ in states.values()), states
            total = sum(owns for _, owns in states.values())
            assert abs(total - 100.0 * rf) < 1.0, f"Owns (effective) for {ks} on {a} sums to {total}"
            if rf == 3:
                assert all(abs(o - 100.0) < 0.1 for _, o in states.values()), states


def describecluster_versions(address):
    out = nodetool(address, "describecluster")
    block = out.split("Schema versions:")[1].split("\n\n")[0]
    return {
        m.group(1): sorted(re.findall(r"\d+\.\d+\.\d+\.\d+", m.group(2)))
        for m in re.finditer(r"([0-9a-f-]{36}):\s*\[([^\]]*)\]", block)
    }


def local_versions(pinned):
    return {a: pinned[a].execute("SELECT schema_version FROM system.local").one().schema_version for a in addresses()}


def agreed(pinned):
    v = local_versions(pinned)
    if len(set(v.values())) != 1:
        return False
    return all(len(describecluster_versions(a)) == 1 for a in addresses())


def test_ddl_on_one_node_is_usable_on_the_others(pinned):
    a1, a2, a3 = addresses()
    s1 = pinned[a1]
    create_keyspace(s1, "ct_ddl", "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}")
    rs = s1.execute("CREATE TABLE ct_ddl.t (k int PRIMARY KEY, v text)")
    assert rs.response_future.is_schema_agreed, "the driver saw no schema agreement after CREATE TABLE"
    assert s1.cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    for a in (a2, a3):
        pinned[a].execute(stmt(f"INSERT INTO ct_ddl.t (k, v) VALUES (1, '{a}')", CL.ALL))
    assert s1.execute(stmt("SELECT v FROM ct_ddl.t WHERE k = 1", CL.ALL)).one().v == a3
    s1.execute("ALTER TABLE ct_ddl.t ADD w int")
    assert s1.cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    pinned[a3].execute(stmt("INSERT INTO ct_ddl.t (k, w) VALUES (2, 7)", CL.QUORUM))
    assert pinned[a2].execute(stmt("SELECT w FROM ct_ddl.t WHERE k = 2", CL.QUORUM)).one().w == 7
    wait_until(lambda: agreed(pinned), 30, "one schema version in system.local and describecluster")
    version = next(iter(describecluster_versions(a1)))
    assert describecluster_versions(a1) == {version: addresses()}
    assert str(local_versions(pinned)[a1]) == version


RACE = {}


def at_once(calls, limit):
    """Runs each (name, fn) in a thread of its own, all released together; the errors by name."""
    barrier = threading.Barrier(len(calls))
    errors = {}

    def run(name, fn):
        try:
            barrier.wait(10)
            fn()
        except Exception as e:  # noqa: BLE001
            errors[name] = e

    threads = [threading.Thread(target=run, args=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(limit)
    return errors


def test_concurrent_create_table_on_two_nodes_converges(pinned):
    """CREATE TABLE of two different tables on node1 and node2 at once: both acknowledged, and all
    three nodes end with one schema version listing the same tables."""
    a1, a2, a3 = addresses()
    create_keyspace(pinned[a1], "ct_race", "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    wait_until(lambda: agreed(pinned), 30, "agreement before the race")
    for a in (a1, a2):
        pinned[a]  # connect both before the race

    def create(a, name):
        return lambda: pinned[a].execute(f"CREATE TABLE ct_race.{name} (k int PRIMARY KEY, v int)")

    errors = at_once([("t_one", create(a1, "t_one")), ("t_two", create(a2, "t_two"))], 60)
    assert not errors, errors
    wait_until(lambda: agreed(pinned), 40, "one schema version on all three nodes after concurrent DDL")
    tables = {
        a: sorted(r.table_name for r in pinned[a].execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ct_race'"))
        for a in addresses()
    }
    RACE["tables"] = tables
    print(f"tables surviving the concurrent CREATE TABLE: {tables}")
    assert len({tuple(t) for t in tables.values()}) == 1, f"nodes agree on a version but list different tables: {tables}"
    assert tables[a1], "both tables lost"


def test_concurrent_create_table_keeps_both_tables(pinned):
    tables = RACE.get("tables")
    assert tables is not None, "the race did not run"
    for a in addresses():
        assert tables[a] == ["t_one", "t_two"], f"an acknowledged CREATE TABLE was lost: {tables}"
    for name in ("t_one", "t_two"):
        pinned[addresses()[2]].execute(stmt(f"INSERT INTO ct_race.{name} (k, v) VALUES (1, 1)", CL.ALL))


def test_concurrent_alters_on_three_nodes_all_land_in_one_order(pinned):
    """The metadata log (issue 12): 18 ALTER TABLE ... ADD of different columns, six from each
    node at once, all acknowledged; every node ends with all 18 columns on one schema version
    (each change was ordered after the others, none overwrote another's). The same names again
    are refused everywhere as existing columns, so a node's stale view cannot re-add them."""
    addrs = addresses()
    pinned[addrs[0]].execute("CREATE TABLE ct_race.wide (k int PRIMARY KEY, v int)")
    wait_until(lambda: agreed(pinned), 30, "agreement before the alters")

    def add_columns(i, a):
        def run():
            for j in range(6):
                pinned[a].execute(f"ALTER TABLE ct_race.wide ADD c{i}_{j} int", timeout=60)
        return run

    errors = at_once([(a, add_columns(i, a)) for i, a in enumerate(addrs)], 120)
    assert not errors, errors
    wait_until(lambda: agreed(pinned), 40, "one schema version after the concurrent alters")
    want = {"k", "v"} | {f"c{i}_{j}" for i in range(3) for j in range(6)}
    for a in addrs:
        got = {r.column_name for r in pinned[a].execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ct_race' AND table_name = 'wide'")}
        assert got == want, f"{a} lost acknowledged ALTERs: missing {sorted(want - got)}"
    for a in addrs:
        with pytest.raises(Exception, match="(?i)already exist|conflicts"):
            pinned[a].execute("ALTER TABLE ct_race.wide ADD c0_0 int")


def test_status_shows_un_everywhere():
    for a in addresses():
        states = status_states(a)
        assert {k: v[0] for k, v in states.items()} == {x: "UN" for x in addresses()}
    ring = nodetool(addresses()[0], "ring")
    assert len([line for line in ring.splitlines() if re.match(r"^\d+\.\d+\.\d+\.\d+\s", line)]) == 48, ring
