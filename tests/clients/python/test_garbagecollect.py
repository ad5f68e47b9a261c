"""`helenus nodetool garbagecollect [-g ROW|CELL] KS TABLE`, as Cassandra's: each SSTable is
rewritten without the data that deletions in the table's other SSTables shadow (and with
`-g CELL`, the cells newer writes in them overwrite); reads never change; an unknown granularity
is refused. Measured through `nodetool tablestats` (the live bytes on disk).

Needs the helenus binary as test_parquet_export.py does, and a node alone (on a ring the node
holds only part of the table).
"""

import os
import re
import urllib.request

from conftest import HOST
from test_parquet_export import nodetool, whole_table_on_this_node  # noqa: F401

ROWS_PER_KEY = 40
VALUE_BYTES = 1024


def tablestats_number(ks, table, label):
    """The whole number `nodetool tablestats` prints after `label:` for the table."""
    r = nodetool("tablestats", f"{ks}.{table}")
    assert r.returncode == 0, r.stderr
    m = re.search(re.escape(label) + r": (\d+)", r.stdout)
    assert m, r.stdout
    return int(m.group(1))


def live_bytes(ks, table):
    return tablestats_number(ks, table, "Space used (live)")


def flush(ks, table):
    r = nodetool("flush", ks, table)
    assert r.returncode == 0, r.stderr


def write_rows(session, keys):
    insert = session.prepare("INSERT INTO gc_rows (k, c, v) VALUES (?, ?, ?)")
    for k in keys:
        for c in range(ROWS_PER_KEY):
            # Random hex: the SSTables cannot compress it away.
            session.execute(insert, (k, c, os.urandom(VALUE_BYTES // 2).hex()))


def contents(session):
    return sorted((r.k, r.c, r.v) for r in session.execute("SELECT k, c, v FROM gc_rows"))


def test_garbagecollect_drops_what_other_sstables_shadow(session, whole_table_on_this_node):  # noqa: F811
    ks = session.keyspace
    session.execute("DROP TABLE IF EXISTS gc_rows")
    # No background compaction: it would merge the SSTables before garbagecollect sees them.
    session.execute(
        "CREATE TABLE gc_rows (k int, c int, v text, PRIMARY KEY (k, c)) WITH compaction = "
        "{'class': 'SizeTieredCompactionStrategy', 'min_threshold': 32, 'max_threshold': 32}"
    )
    write_rows(session, range(10))
    flush(ks, "gc_rows")
    for k in range(5):
        session.execute("DELETE FROM gc_rows WHERE k = %s", (k,))
    flush(ks, "gc_rows")
    before = contents(session)
    assert len(before) == 5 * ROWS_PER_KEY
    full = live_bytes(ks, "gc_rows")

    r = nodetool("garbagecollect", ks, "gc_rows")
    assert r.returncode == 0, r.stderr
    assert contents(session) == before
    collected = live_bytes(ks, "gc_rows")
    deleted_bytes = 5 * ROWS_PER_KEY * VALUE_BYTES
    assert collected < full - deleted_bytes * 0.8, (full, collected)

    # Overwrites are not deletions: ROW keeps them, CELL drops them.
    write_rows(session, range(5, 10))
    flush(ks, "gc_rows")
    after_overwrite = contents(session)
    with_overwritten = live_bytes(ks, "gc_rows")
    r = nodetool("garbagecollect", "-g", "ROW", ks, "gc_rows")
    assert r.returncode == 0, r.stderr
    assert live_bytes(ks, "gc_rows") > with_overwritten - deleted_bytes * 0.2
    r = nodetool("garbagecollect", "-g", "CELL", ks, "gc_rows")
    assert r.returncode == 0, r.stderr
    assert contents(session) == after_overwrite
    assert live_bytes(ks, "gc_rows") < with_overwritten - deleted_bytes * 0.8


def test_an_unknown_granularity_is_refused(session):
    r = nodetool("garbagecollect", "-g", "PARTITION", session.keyspace)
    assert r.returncode != 0
    assert "ROW or CELL" in r.stderr + r.stdout


def test_compaction_throughput_is_settable_at_runtime(session):
    """`nodetool setcompactionthroughput` / `getcompactionthroughput` as Cassandra's: MiB/s, 0
    unthrottled, the new cap in `system_views.settings` too."""

    def current(*flags):
        r = nodetool("getcompactionthroughput", *flags)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    # The node nodetool talks to: on a ring (tests/cluster) the driver would ask any coordinator.
    node = session.cluster.metadata.get_host(HOST)
    assert node is not None, HOST

    def setting():
        query = "SELECT value FROM system_views.settings WHERE name = 'compaction_throughput'"
        return session.execute(query, host=node).one().value

    m = re.fullmatch(r"Current compaction throughput: (\d+) MB/s", current())
    assert m, current()
    before = int(m.group(1))
    try:
        assert nodetool("setcompactionthroughput", "16").returncode == 0
        assert current() == "Current compaction throughput: 16 MB/s"
        assert current("-d") == "Current compaction throughput: 16.0 MiB/s"
        assert setting() == "16MiB/s"
        assert nodetool("setcompactionthroughput", "0").returncode == 0
        assert current() == "Current compaction throughput: 0 MB/s"
        bad = nodetool("setcompactionthroughput", "fast")
        assert bad.returncode != 0 and "not a whole number" in bad.stderr + bad.stdout
        assert current() == "Current compaction throughput: 0 MB/s"
    finally:
        nodetool("setcompactionthroughput", str(before))
    assert current() == f"Current compaction throughput: {before} MB/s"


def test_recent_compaction_rates_are_in_the_metrics():
    """Cassandra's BytesCompactedThroughput meter (1, 5 and 15 minute rates) as Prometheus gauges,
    after a major compaction that wrote something."""
    assert nodetool("compact").returncode == 0
    with urllib.request.urlopen(f"http://{HOST}:10000/metrics", timeout=30) as r:
        text = r.read().decode()
    rates = dict(re.findall(r'^helenus_compaction_written_bytes_per_second\{window="(\w+)"\} (\d+)$', text, re.M))
    assert sorted(rates) == ["15m", "1m", "5m"], text[-2000:]
    assert all(int(v) >= 0 for v in rates.values()), rates
