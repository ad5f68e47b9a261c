"""A bootstrap whose only source dies fails clearly and resumes (issue 13).

A keyspace at RF 1 (each range has exactly one replica, so no other source can stand in) holds
about 4 MB. The sources stream at 1 Mb/s, so a new node's bootstrap takes several seconds.
While it streams, one source is killed with SIGKILL: the bootstrap fails, the joining node says
so in its mode (`nodetool netstats`) and log ("Error during bootstrap: Stream failed") and stays
JOINING, owning nothing. `nodetool bootstrap resume` is refused on a NORMAL node ("Node is
already bootstrapped.") and fails again while the source is still down; once the source is
back, it streams only the ranges not yet received (`system.available_ranges_v2` lists those that
were, and the resume reports them as skipped), the node becomes NORMAL and every row reads at
ALL.

Runs last in the streaming phase (run.sh), after test_11_streaming.py: it leaves a fourth owner
in the ring."""

import re
import subprocess
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import BIN, DIR, ccm, connect, create_keyspace, nodes, nodetool, status_states, stmt, wait_until

KS = "ct_resume"
TABLE = f"{KS}.blobs"
ROWS = 4000
VALUE = "y" * 1000
SOURCES = ("node1", "node2", "node3")
VICTIM = "node3"


def set_rate(mbit_per_s):
    for name in SOURCES:
        try:
            nodetool(nodes()[name], "setstreamthroughput", str(mbit_per_s))
        except AssertionError:
            pass  # the killed source


def received_ranges(address):
    """The ranges `system.available_ranges_v2` on `address` lists, over every keyspace."""
    cluster, session = connect(address)
    try:
        return sum(len(r.full_ranges or ()) for r in session.execute("SELECT * FROM system.available_ranges_v2"))
    finally:
        cluster.shutdown()


def files_received(address):
    """Files received so far over every receiving session in `address`'s netstats."""
    return sum(int(n) for n in re.findall(r"Already received (\d+) files", nodetool(address, "netstats")))


@pytest.fixture(scope="module")
def loaded(pinned):
    a1 = nodes()["node1"]
    # The earlier streaming test's data (RF 3) would only slow this bootstrap down.
    pinned[a1].execute("DROP KEYSPACE IF EXISTS ct_streaming")
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.ONE
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, [(k, VALUE) for k in range(ROWS)], concurrency=64):
        assert ok, result


def test_a_bootstrap_whose_source_dies_fails_then_resumes(pinned, loaded):
    a1, victim = nodes()["node1"], nodes()[VICTIM]
    set_rate(1)  # megabits per second: about 125 kB/s from each source
    before = set(nodes())
    add = subprocess.Popen([BIN, "cluster", "--dir", DIR, "add"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        name = wait_until(lambda: next(iter(set(nodes()) - before), None), 60, "the new node in cluster.txt")
        joining = nodes()[name]
        wait_until(lambda: files_received(joining) >= 2, 90, "two ranges received", interval=0.2)
        ccm("kill", VICTIM)

        # The bootstrap fails clearly: mode, netstats and log say so; the node owns nothing.
        out = wait_until(
            lambda: o if "Error during bootstrap" in (o := nodetool(joining, "netstats")) else None,
            60,
            "the bootstrap to fail",
        )
        print(f"netstats on the joining node after the kill:\n{out}")
        assert re.match(r"Mode: JOINING \(Error during bootstrap: Stream failed: .*nodetool bootstrap resume\)", out), out
        log = (Path(DIR) / name / "log").read_text()
        assert "Error during bootstrap: Stream failed" in log
        assert "Use nodetool to check bootstrap state and resume" in log
        state = status_states(a1).get(joining)
        assert state is None or state[0] == "UJ", state
        assert nodetool(a1, "bootstrap", "resume").strip() == "Node is already bootstrapped."

        # Resuming while the only source of some ranges is still down fails again, as clearly.
        with pytest.raises(AssertionError, match="Error during bootstrap: Stream failed"):
            nodetool(joining, "bootstrap", "resume", timeout=60)
        received = received_ranges(joining)
        assert received >= 2, received

        # With the source back, the resume streams only what is missing and the node joins.
        ccm("start", VICTIM)
        wait_until(lambda: status_states(joining).get(victim, ("?",))[0] == "UN", 60, "the joining node to see the source up")
        set_rate(0)
        out = nodetool(joining, "bootstrap", "resume", timeout=120)
        print(out)
        m = re.search(r"Resume bootstrap complete: (\d+) ranges streamed, (\d+) already received", out)
        assert out.startswith("Resuming bootstrap\n") and m, out
        progress = [int(n) for n in re.findall(r"^Bootstrap progress: (\d+) ranges received$", out, re.M)]
        assert progress == sorted(progress) and all(n >= received for n in progress), out
        assert int(m.group(1)) > 0 and int(m.group(2)) == received, (out, received)
        assert nodetool(joining, "netstats").startswith("Mode: NORMAL\n")
        wait_until(lambda: status_states(a1).get(joining, ("?",))[0] == "UN", 60, "the new node UN")
        assert received_ranges(joining) == 0
        assert add.wait(timeout=60) == 0, add.stdout.read()
    finally:
        if add.poll() is None:
            add.kill()
            add.wait(timeout=30)

    # Every row reads at ALL: each range's one replica (the new node for those it took) has it.
    count = pinned[a1].execute(stmt(f"SELECT count(*) FROM {TABLE}", CL.ALL, fetch_size=None)).one()[0]
    assert count == ROWS
    select = pinned[a1].prepare(f"SELECT v FROM {TABLE} WHERE k = ?")
    select.consistency_level = CL.ALL
    for ok, rows in execute_concurrent_with_args(pinned[a1], select, [(k,) for k in range(0, ROWS, 7)], concurrency=32):
        assert ok and rows.one().v == VALUE, rows
