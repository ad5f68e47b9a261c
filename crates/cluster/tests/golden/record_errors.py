#!/usr/bin/env python3
"""Records how a 3-node Cassandra 5.0 answers consistency levels with one node down (issue 12).

Start a 3-node cluster (../shared/cassandra/start.sh cluster 3), run record_placement.py (it creates
the keyspaces), kill -9 the node on 127.0.0.3 and wait until `nodetool status` shows it DN, then:
    $VENV/bin/python crates/cluster/tests/golden/record_errors.py > crates/cluster/tests/golden/cassandra_cl_errors.txt

One line per request: <keyspace> <statement kind> <consistency> -> ok | <error class> code=<hex>
[required=N alive=N] message=<message>
"""

from cassandra import ConsistencyLevel as CL
from cassandra import InvalidRequest, Unavailable
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import FallthroughRetryPolicy, WhiteListRoundRobinPolicy
from cassandra.query import SimpleStatement

LEVELS = ["ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE"]


def main():
    # No driver retries: record the server's own answer, not the retry policy's.
    pinned = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]), retry_policy=FallthroughRetryPolicy())
    cluster = Cluster(["127.0.0.1"], port=9042, protocol_version=5, execution_profiles={EXEC_PROFILE_DEFAULT: pinned})
    s = cluster.connect()
    for ks in ("placement_simple3", "placement_nts2"):
        for kind, cql in (("write", f"INSERT INTO {ks}.t (k, v) VALUES ('key1', 1)"), ("read", f"SELECT * FROM {ks}.t WHERE k = 'key1'")):
            for level in LEVELS:
                stmt = SimpleStatement(cql, consistency_level=getattr(CL, level))
                try:
                    s.execute(stmt)
                    outcome = "ok"
                except Unavailable as e:
                    outcome = f"Unavailable code=0x1000 required={e.required_replicas} alive={e.alive_replicas} message={e}"
                except InvalidRequest as e:
                    outcome = f"InvalidRequest code=0x2200 message={e}"
                except Exception as e:  # noqa: BLE001 - record whatever else Cassandra answers
                    outcome = f"{type(e).__name__} message={e}"
                print(f"{ks} {kind} {level} -> {outcome}")
    cluster.shutdown()


if __name__ == "__main__":
    main()
