"""Stream throttling and progress (issue 13): `nodetool setstreamthroughput` /
`getstreamthroughput` and `nodetool netstats` while a node bootstraps and decommissions.

Three nodes hold about 12 MB (RF 3). Every node's outbound stream rate is set to 1 MiB/s, then
a fourth node joins (`helenus cluster add`, in the background). While it streams, netstats on
it shows Mode JOINING, a Bootstrap plan and a session receiving files, and netstats on the
sources shows the matching sending session; the bytes received grow at no more than the
throttle allows. The throttle is then lifted (0 = unthrottled) and the join finishes. The new
node is then decommissioned at 1 MiB/s: its netstats shows an Unbootstrap plan sending to its
peers until the throttle is lifted and it leaves. A table holding one partition of random bytes,
written on the new node before it leaves, is an SSTable wholly inside a range it hands over: the
node gaining that range pulls it whole (at an entire-SSTable rate of 1 MiB/s), and its netstats
shows the pull as an Unbootstrap plan of its own, receiving.

Runs on its own cluster of three (phase "streaming" in run.sh)."""

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from cassandra import ConsistencyLevel as CL
from cassandra.concurrent import execute_concurrent_with_args
from conftest import BIN, DIR, ccm, create_keyspace, nodes, nodetool, wait_until

KS = "ct_streaming"
TABLE = f"{KS}.blobs"
ROWS = 12000
VALUE = "x" * 1000
MIB = 1024 * 1024
S = {}


def received_bytes(netstats):
    """Bytes received so far over every receiving session in a netstats output."""
    return sum(int(m) for m in re.findall(r"Already received \d+ files \([^)]*\), (\d+) bytes total", netstats))


def set_rate_everywhere(mib_per_s):
    for address in nodes().values():
        try:
            nodetool(address, "setstreamthroughput", "-m", str(mib_per_s))
        except AssertionError:
            pass  # a node that already left


@pytest.fixture(scope="module", autouse=True)
def scenario(pinned):
    a1 = nodes()["node1"]
    create_keyspace(pinned[a1], KS, "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    pinned[a1].execute(f"CREATE TABLE {TABLE} (k int PRIMARY KEY, v text)")
    pinned[a1].execute(f"CREATE TABLE {KS}.wide (p int, c int, v text, PRIMARY KEY (p, c))")
    assert pinned[a1].cluster.control_connection.wait_for_schema_agreement(wait_time=30)
    insert = pinned[a1].prepare(f"INSERT INTO {TABLE} (k, v) VALUES (?, ?)")
    insert.consistency_level = CL.QUORUM
    for ok, result in execute_concurrent_with_args(pinned[a1], insert, [(k, VALUE) for k in range(ROWS)], concurrency=64):
        assert ok, result
    for address in nodes().values():
        nodetool(address, "flush", KS)
    yield
    if "add" in S and S["add"].poll() is None:
        S["add"].kill()
        S["add"].wait(timeout=30)


def test_stream_throughput_is_settable_at_runtime():
    a1 = nodes()["node1"]
    # Cassandra 5.0's default, 24 MiB/s, printed as its nodetool prints it.
    assert nodetool(a1, "getstreamthroughput", "-m").strip() == "Current stream throughput: 24.0 MiB/s"
    assert nodetool(a1, "getstreamthroughput", "-d").strip() == "Current stream throughput: 201.326592 Mb/s"
    nodetool(a1, "setstreamthroughput", "200")  # megabits per second
    assert nodetool(a1, "getstreamthroughput").strip() == "Current stream throughput: 200 Mb/s"
    nodetool(a1, "setstreamthroughput", "-e", "48")
    assert nodetool(a1, "getstreamthroughput", "-e").strip() == "Current entire SSTable stream throughput: 48.0 MiB/s"
    nodetool(a1, "setstreamthroughput", "0")
    assert nodetool(a1, "getstreamthroughput").strip() == "Current stream throughput: unlimited"
    out = nodetool(a1, "netstats")
    assert out.startswith("Mode: NORMAL\nNot sending any streams.\nRead Repair Statistics:\n"), out
    assert re.search(r"^Pool Name\s+Active\s+Pending\s+Completed\s+Dropped$", out, re.M), out


def test_netstats_shows_a_throttled_bootstrap_on_both_sides():
    set_rate_everywhere(1)
    before = set(nodes().values())
    S["add"] = subprocess.Popen(
        [BIN, "cluster", "--dir", DIR, "add"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    a4 = wait_until(lambda: next(iter(set(nodes().values()) - before), None), 60, "node4 in cluster.txt")
    S["a4"] = a4

    def joining_session():
        out = nodetool(a4, "netstats")
        return out if re.search(r"^Bootstrap [0-9a-f-]{36}$", out, re.M) and received_bytes(out) > 0 else None

    out = wait_until(joining_session, 120, "a Bootstrap session receiving on the new node", interval=0.3)
    print(f"netstats on the joining node:\n{out}")
    assert out.startswith("Mode: JOINING\n"), out
    assert re.search(r"^    /\d+\.\d+\.\d+\.\d+$", out, re.M), out
    assert re.search(r"^        Receiving \d+ files, \d+ bytes total\. Already received \d+ files", out, re.M), out

    # The sources show the sending side of the same plan.
    plan = re.search(r"^Bootstrap ([0-9a-f-]{36})$", out, re.M).group(1)
    def source_session():
        for address in before:
            text = nodetool(address, "netstats")
            if plan in text and "Sending" in text:
                return text
        return None
    sending = wait_until(source_session, 30, "a source showing the Bootstrap plan", interval=0.3)
    print(f"netstats on a source:\n{sending}")
    assert re.search(r"^        Sending \d+ files, \d+ bytes total\. Already sent \d+ files", sending, re.M), sending

    # The throttle bounds what each source sends (it is per node, outbound, as Cassandra's):
    # over a few seconds each sends at most 1 MiB/s, with slack for a page in flight at either
    # end of the window and the bucket's 100 ms burst.
    def sent(address):
        return sum(int(m) for m in re.findall(r"Already sent \d+ files \([^)]*\), (\d+) bytes total", nodetool(address, "netstats")))

    t0, b0 = time.monotonic(), {a: sent(a) for a in before}
    time.sleep(3)
    b1 = {a: sent(a) for a in before}
    seconds = time.monotonic() - t0
    if "Bootstrap" in nodetool(a4, "netstats"):
        for address in before:
            if b1[address] >= b0[address]:
                rate = (b1[address] - b0[address]) / seconds
                assert rate < 1.5 * MIB, f"{address} sent {rate / MIB:.2f} MiB/s under a 1 MiB/s throttle"

    # Lifting the throttle at runtime lets the join finish.
    set_rate_everywhere(0)
    assert S["add"].wait(timeout=300) == 0, S["add"].stdout.read()
    out = nodetool(a4, "netstats")
    assert out.startswith("Mode: NORMAL\nNot sending any streams.\n"), out


def write_a_wide_partition_on(session, address):
    """About 3 MB of random text in one partition that `address` replicates, flushed there."""
    p = next(p for p in range(100) if address in nodetool(address, "getendpoints", KS, "wide", str(p)))
    insert = session.prepare(f"INSERT INTO {KS}.wide (p, c, v) VALUES (?, ?, ?)")
    insert.consistency_level = CL.ALL
    rows = [(p, c, os.urandom(250).hex()) for c in range(6000)]
    for ok, result in execute_concurrent_with_args(session, insert, rows, concurrency=64):
        assert ok, result
    nodetool(address, "flush", KS, "wide")
    return p, dict((c, v) for _, c, v in rows)


def test_netstats_shows_a_throttled_decommission(pinned):
    a4 = S.get("a4")
    if a4 is None:
        pytest.skip("the bootstrap test did not add a node")
    others = sorted(set(nodes().values()) - {a4})
    p, wide = write_a_wide_partition_on(pinned[others[0]], a4)
    nodetool(a4, "setstreamthroughput", "-m", "1")
    nodetool(a4, "setstreamthroughput", "-e", "1")
    leaving = subprocess.Popen(
        [BIN, "nodetool", "-h", a4, "decommission"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        def sending():
            out = nodetool(a4, "netstats")
            return out if re.search(r"^Unbootstrap [0-9a-f-]{36}$", out, re.M) and "Sending" in out else None

        out = wait_until(sending, 60, "an Unbootstrap session on the leaving node", interval=0.3)
        assert out.startswith("Mode: LEAVING\n"), out
        assert re.search(r"^        Sending \d+ files, \d+ bytes total\. Already sent \d+ files \([\d.]+%\), \d+ bytes total \([\d.]+%\) $", out, re.M), out

        def pulling():
            for address in others:
                text = nodetool(address, "netstats")
                if re.search(r"^Unbootstrap [0-9a-f-]{36}$", text, re.M) and re.search(r"Receiving [1-9]", text):
                    return text
            return None

        pull = wait_until(pulling, 120, "a gaining node pulling the wide SSTable whole", interval=0.3)
        print(f"netstats on a gaining node:\n{pull}")
        assert re.search(r"^        Receiving \d+ files, \d+ bytes total\.", pull, re.M), pull
        nodetool(a4, "setstreamthroughput", "0")
        nodetool(a4, "setstreamthroughput", "-e", "0")
        assert leaving.wait(timeout=300) == 0, leaving.stdout.read()
    finally:
        if leaving.poll() is None:
            leaving.kill()
            leaving.wait(timeout=30)
    pid = int((Path(DIR) / "node4" / "pid").read_text())
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "the decommissioned node to stop")
    q = pinned[others[0]].prepare(f"SELECT c, v FROM {KS}.wide WHERE p = ?")
    q.consistency_level = CL.ALL
    got = {r.c: r.v for r in pinned[others[0]].execute(q, (p,))}
    assert got == wide, f"{len(got)} of {len(wide)} wide rows at ALL after the decommission"
