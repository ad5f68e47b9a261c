"""Shared helpers for the process-level cluster suite (issue 12).

run.sh starts a cluster with `helenus cluster start` and passes its directory in
HELENUS_CLUSTER_DIR and the binary in HELENUS_BIN. Tests drive it through `helenus cluster`
(kill, pause, stop, start) and talk to it with the Python driver: one driver per node, pinned to
that node with a whitelist, so a statement's coordinator is known, plus a default driver for
routing checks. Every wait is bounded.
"""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra import ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.policies import (
    ConstantReconnectionPolicy,
    FallthroughRetryPolicy,
    WhiteListRoundRobinPolicy,
)
from cassandra.query import SimpleStatement

BIN = os.environ.get("HELENUS_BIN", "helenus")
DIR = os.environ.get("HELENUS_CLUSTER_DIR", "")
GOLDEN = Path(__file__).parent / "golden"
PROTOCOL = int(os.environ.get("HELENUS_CLUSTER_PROTOCOL", "5"))
# How long a killed or paused node may take to be convicted (phi accrual, 1 s gossip rounds).
CONVICT_WAIT = float(os.environ.get("HELENUS_CLUSTER_CONVICT_WAIT", "45"))


def nodes():
    """{name: address} of the cluster under test, from DIR/cluster.txt."""
    out = {}
    for line in (Path(DIR) / "cluster.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[0].startswith("node"):
            out[f[0]] = f[1]
    return out


def datacenters():
    out = {}
    for line in (Path(DIR) / "cluster.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[0].startswith("node"):
            out[f[0]] = f[2]
    return out


def ccm(*args, timeout=120, check=True):
    """`helenus cluster --dir DIR ARGS...`; its stdout."""
    p = subprocess.run(
        [BIN, "cluster", "--dir", DIR, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"helenus cluster {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def nodetool(address, *args, timeout=30):
    p = subprocess.run(
        [BIN, "nodetool", "-h", address, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if p.returncode != 0:
        raise AssertionError(f"nodetool -h {address} {' '.join(args)} failed:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def stream_metrics(address):
    """The node's `helenus_stream_*` counters (Prometheus text on port 10000)."""
    import urllib.request

    with urllib.request.urlopen(f"http://{address}:10000/metrics", timeout=10) as r:
        text = r.read().decode()
    return {m[0]: int(m[1]) for m in re.findall(r"^(helenus_stream_\w+) (\d+)$", text, re.M)}


def status_states(address, keyspace=None):
    """{address: (state, owns)} from `nodetool status [KS]` on `address`."""
    out = nodetool(address, "status", *([keyspace] if keyspace else []))
    states = {}
    for line in out.splitlines():
        m = re.match(r"^([UD][NLJM])\s+(\d+\.\d+\.\d+\.\d+)\s+(.*)$", line)
        if m:
            owns = re.search(r"(\d+(?:\.\d+)?)%", m.group(3))
            # One process per address: a second line for one (an old host id that never owned
            # anything, say) would hide the real node behind it.
            assert m.group(2) not in states, f"{m.group(2)} listed twice by {address}:\n{out}"
            states[m.group(2)] = (m.group(1), float(owns.group(1)) if owns else None)
    return states


def wait_until(predicate, timeout, what, interval=0.5):
    """Polls `predicate` until it returns a truthy value (returned) or `timeout` s pass (fails)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - a node may be half up while we poll
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def wait_state(observer, address, state, timeout=CONVICT_WAIT):
    """Waits until `nodetool status` on `observer` shows `address` in `state` (UN/DN); seconds taken."""
    t0 = time.monotonic()
    wait_until(
        lambda: status_states(observer).get(address, ("?",))[0] == state,
        timeout,
        f"{observer} to see {address} {state}",
    )
    return time.monotonic() - t0


def wait_all_up(timeout=60):
    """Every node running and seen UN by every node."""
    addrs = list(nodes().values())

    def all_un():
        return all(
            all(status_states(o).get(a, ("?",))[0] == "UN" for a in addrs) for o in addrs
        )

    wait_until(all_un, timeout, "every node to see every node UN")


def ensure_all_running():
    """Restarts any node a failed test left stopped, killed or paused."""
    for name in nodes():
        ccm("resume", name, check=False)
        ccm("start", name, timeout=120)
    wait_all_up()


def connect(address, protocol=PROTOCOL, **profile_kw):
    """A driver pinned to one node (it coordinates everything), errors passed through unretried."""
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([address]),
        retry_policy=FallthroughRetryPolicy(),
        request_timeout=profile_kw.pop("request_timeout", 30),
        **profile_kw,
    )
    c = Cluster(
        [address],
        protocol_version=protocol,
        connect_timeout=10,
        control_connection_timeout=10,
        max_schema_agreement_wait=30,
        reconnection_policy=ConstantReconnectionPolicy(1.0, None),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    return c, c.connect()


class Pinned:
    """Lazily connected drivers, one per node address; `reset` drops one after its node restarted."""

    def __init__(self):
        self.clusters = {}

    def __getitem__(self, address):
        if address not in self.clusters:
            self.clusters[address] = connect(address)
        return self.clusters[address][1]

    def reset(self, address=None):
        for a in [address] if address else list(self.clusters):
            c = self.clusters.pop(a, None)
            if c:
                c[0].shutdown()

    def close(self):
        self.reset()


@pytest.fixture(scope="session")
def pinned():
    p = Pinned()
    yield p
    p.close()


def stmt(cql, cl, **kw):
    return SimpleStatement(cql, consistency_level=cl, **kw)


def create_keyspace(session, name, replication):
    session.execute(f"DROP KEYSPACE IF EXISTS {name}")
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {replication}")
    assert session.cluster.control_connection.wait_for_schema_agreement(wait_time=30), "no schema agreement"


ERROR_CODES = {Unavailable: 0x1000, WriteTimeout: 0x1100, ReadTimeout: 0x1200}


def error_fields(e):
    """The protocol error a driver exception carries, as comparable fields."""
    from cassandra import ConsistencyLevel

    for cls, code in ERROR_CODES.items():
        if isinstance(e, cls):
            break
    else:
        return {"error": type(e).__name__, "message": str(e)}
    out = {"code": code, "consistency": ConsistencyLevel.value_to_name.get(e.consistency, e.consistency)}
    if isinstance(e, Unavailable):
        out.update(required=e.required_replicas, alive=e.alive_replicas)
    else:
        out.update(received=e.received_responses, block_for=e.required_responses)
        if isinstance(e, WriteTimeout):
            wt = e.write_type
            out["write_type"] = getattr(wt, "name", None) or {0: "SIMPLE", 1: "BATCH", 2: "UNLOGGED_BATCH", 3: "COUNTER", 4: "BATCH_LOG", 5: "CAS", 6: "VIEW", 7: "CDC"}.get(wt, wt)
        else:
            out["data_retrieved"] = bool(e.data_retrieved)
    return out


def expect_error(session, statement, cls):
    """Runs `statement`, which must fail with `cls`; the error's fields."""
    try:
        session.execute(statement)
    except cls as e:
        return error_fields(e)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"expected {cls.__name__}, got {type(e).__name__}: {e}") from e
    raise AssertionError(f"expected {cls.__name__}, the statement succeeded")


def golden(name):
    """Recorded Cassandra 5.0.9 answer for scenario `name` (tests/cluster/golden/NAME.json), or None."""
    p = GOLDEN / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def check_against_golden(name, got, keys):
    """Compares `got`'s `keys` with Cassandra's recorded answer when one is recorded."""
    want = golden(name)
    if want is None:
        return
    for k in keys:
        if k in want:
            assert got.get(k) == want[k], f"{name}: {k} is {got.get(k)!r}, Cassandra 5.0.9 says {want[k]!r} ({got} vs {want})"


def read_alone(address, read):
    """`read(session)` on `address` with the other two nodes of the 3-node ring stopped (so it
    can only answer from its own data); they are started again afterwards."""
    others = [name for name, a in sorted(nodes().items())[:3] if a != address]
    for name in others:
        ccm("stop", name)
    try:
        c, s = connect(address)
        try:
            return read(s)
        finally:
            c.shutdown()
    finally:
        for name in others:
            ccm("start", name)
        wait_all_up()


def hints_pending():
    """Hint files still waiting on any node (hints/<host id>.hints; removed once delivered)."""
    return sorted(str(p) for p in Path(DIR).glob("node*/hints/*.hints") if p.stat().st_size > 0)


def wait_hints_delivered(timeout=40):
    wait_until(lambda: not hints_pending(), timeout, "hints to be delivered", interval=1)


def write_wide_partitions(session, addresses, ks, tables, rows_each):
    """One partition in each of `ks`.wide0..wide{tables-1}, flushed on every node of `addresses`:
    each node's SSTable of such a table spans a single token, so it lies wholly inside the range
    holding it (and streams whole when that range moves)."""
    for i in range(tables):
        insert = session.prepare(f"INSERT INTO {ks}.wide{i} (p, c, v) VALUES (?, ?, ?)")
        insert.consistency_level = CL.ALL
        rows = [(i, c, f"w{i}-{c}" * 20) for c in range(rows_each)]
        for ok, result in execute_concurrent_with_args(session, insert, rows, concurrency=64):
            assert ok, result
    for a in addresses:
        nodetool(a, "flush", ks)
