#!/usr/bin/env python3
"""Records Cassandra's replica placement for golden tests of crates/cluster (issue 12).

Start a 3-node Cassandra 5.0 first (../shared/cassandra/start.sh cluster 3), then:
    $VENV/bin/python crates/cluster/tests/golden/record_placement.py > crates/cluster/tests/golden/cassandra_placement.txt

Output, one fact per line (read by tests/placement_golden.rs):
    node <host_id> <address> <dc> <rack> <token,token,...>
    keyspace <name> simple <rf>            | keyspace <name> nts <dc>:<rf>[,<dc>:<rf>]
    range <keyspace> <start> <end> <endpoint,endpoint,...>     (nodetool describering)
    key <keyspace> <key> <endpoint,endpoint,...>               (nodetool getendpoints)
"""

import re
import subprocess
import sys
import time

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy

NODETOOL = "/work/shared/cassandra/nodetool.sh"
KEYSPACES = {
    "placement_simple1": ("simple", "{'class': 'SimpleStrategy', 'replication_factor': 1}"),
    "placement_simple2": ("simple", "{'class': 'SimpleStrategy', 'replication_factor': 2}"),
    "placement_simple3": ("simple", "{'class': 'SimpleStrategy', 'replication_factor': 3}"),
    "placement_nts2": ("nts", "{'class': 'NetworkTopologyStrategy', 'datacenter1': 2}"),
}
KEYS = [f"key{i}" for i in range(12)]


def nodetool(*args):
    out = subprocess.run([NODETOOL, "127.0.0.1", "--", *args], capture_output=True, text=True, check=True)
    return out.stdout


def main():
    # system.local and system.peers_v2 must come from the same node: pin every query to one.
    pinned = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]))
    cluster = Cluster(["127.0.0.1"], port=9042, protocol_version=5, execution_profiles={EXEC_PROFILE_DEFAULT: pinned})
    s = cluster.connect()
    for ks, (_, repl) in KEYSPACES.items():
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {repl}")
        s.execute(f"CREATE TABLE IF NOT EXISTS {ks}.t (k text PRIMARY KEY, v int)")
    time.sleep(2)
    local = s.execute("SELECT host_id, broadcast_address, data_center, rack, tokens FROM system.local").one()
    rows = [(local.host_id, local.broadcast_address, local.data_center, local.rack, local.tokens)]
    for p in s.execute("SELECT host_id, peer, data_center, rack, tokens FROM system.peers_v2"):
        rows.append((p.host_id, p.peer, p.data_center, p.rack, p.tokens))
    for host_id, addr, dc, rack, tokens in sorted(rows, key=lambda r: str(r[1])):
        print(f"node {host_id} {addr} {dc} {rack} {','.join(sorted(tokens, key=int))}")
    for ks, (kind, _) in KEYSPACES.items():
        row = s.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", [ks]).one()
        repl = dict(row.replication)
        if kind == "simple":
            print(f"keyspace {ks} simple {repl['replication_factor']}")
        else:
            dcs = ",".join(f"{k}:{v}" for k, v in sorted(repl.items()) if k != "class")
            print(f"keyspace {ks} nts {dcs}")
    for ks in KEYSPACES:
        for m in re.finditer(r"TokenRange\(start_token:(-?\d+), end_token:(-?\d+), endpoints:\[([^\]]*)\]", nodetool("describering", ks)):
            endpoints = ",".join(e.strip() for e in m.group(3).split(","))
            print(f"range {ks} {m.group(1)} {m.group(2)} {endpoints}")
    for ks in ("placement_simple2", "placement_nts2"):
        for key in KEYS:
            eps = [l.strip() for l in nodetool("getendpoints", ks, "t", key).splitlines() if l.strip()]
            print(f"key {ks} {key} {','.join(eps)}")
    cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
