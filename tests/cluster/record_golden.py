#!/usr/bin/env python3
"""Records Cassandra 5.0.9's answers for the scenarios the cluster tests compare against
(tests/cluster/golden/*.json): the error fields of ALL with one of three RF=3 replicas paused
(before conviction: timeouts) and convicted (Unavailable), and the columns of the peers tables.

Against a real 3-node cluster started by ../shared/cassandra/start.sh cluster 3 (127.0.0.1-3):
    /work/shared/cassandra/start.sh cluster 3
    $HELENUS_CACHE/venv/bin/python tests/cluster/record_golden.py
    /work/shared/cassandra/stop.sh cluster 3
The paused node is found by its pid file (CB_CACHE/run/node-ADDR/cassandra.pid) and always resumed.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cassandra import ConsistencyLevel as CL  # noqa: E402
from cassandra import ReadTimeout, Unavailable, WriteTimeout  # noqa: E402
from conftest import GOLDEN, connect, error_fields, stmt  # noqa: E402

HOSTS = os.environ.get("CASSANDRA_HOSTS", "127.0.0.1,127.0.0.2,127.0.0.3").split(",")
RUN = Path(os.environ.get("CB_CACHE", Path.home() / ".cache/cassandra-baseline")) / "run"


def save(name, value):
    GOLDEN.mkdir(exist_ok=True)
    (GOLDEN / f"{name}.json").write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {value}")


def main():
    c, s = connect(HOSTS[0], request_timeout=60)
    s.execute("DROP KEYSPACE IF EXISTS golden")
    s.execute("CREATE KEYSPACE golden WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    s.execute("CREATE TABLE golden.kv (k int PRIMARY KEY, v text)")
    assert c.control_connection.wait_for_schema_agreement(wait_time=60)
    s.execute(stmt("INSERT INTO golden.kv (k, v) VALUES (1, 'one')", CL.ALL))
    peers = {r.column_name for r in s.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'system' AND table_name = 'peers'")}
    peers_v2 = {r.column_name for r in s.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'system' AND table_name = 'peers_v2'")}
    save("peers_columns", {"peers": sorted(peers), "peers_v2": sorted(peers_v2)})

    pid = int((RUN / f"node-{HOSTS[1]}" / "cassandra.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    paused = time.monotonic()
    try:
        w = s.execute_async(stmt("INSERT INTO golden.kv (k, v) VALUES (2, 'all')", CL.ALL))
        r = s.execute_async(stmt("SELECT v FROM golden.kv WHERE k = 1", CL.ALL))
        for name, f, cls in (("all_write_timeout_node_paused", w, WriteTimeout), ("all_read_timeout_node_paused", r, ReadTimeout)):
            try:
                f.result()
                save(name, {"error": "succeeded"})
            except cls as e:
                save(name, error_fields(e))
            except Exception as e:  # noqa: BLE001
                save(name, {"error": type(e).__name__, "message": str(e)})
        # Until the paused node is convicted, ALL keeps timing out; then it is Unavailable.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                s.execute(stmt("INSERT INTO golden.kv (k, v) VALUES (3, 'all')", CL.ALL))
            except Unavailable as e:
                save("all_write_unavailable_node_down", error_fields(e))
                print(f"convicted within {time.monotonic() - paused:.1f} s")
                break
            except WriteTimeout:
                continue
        try:
            s.execute(stmt("SELECT v FROM golden.kv WHERE k = 1", CL.ALL))
        except Unavailable as e:
            save("all_read_unavailable_node_down", error_fields(e))
        try:
            s.execute(stmt("SELECT k FROM golden.kv", CL.ALL))
        except Unavailable as e:
            save("all_range_read_unavailable_node_down", error_fields(e))
        try:
            s.execute("TRUNCATE golden.kv")
            save("truncate_node_down", {"error": "succeeded"})
        except Exception as e:  # noqa: BLE001
            save("truncate_node_down", error_fields(e))
    finally:
        os.kill(pid, signal.SIGCONT)
    c.shutdown()


if __name__ == "__main__":
    main()
