"""Tombstone thresholds as Cassandra 5.0 applies them, with the node's defaults
(tombstone_warn_threshold 1000, tombstone_failure_threshold 100000): a read that scans more
tombstones than the warn threshold carries a client warning, one that scans more than the
failure threshold fails with READ_FAILURE (READ_TOO_MANY_TOMBSTONES)."""

import time

import pytest
from cassandra import ReadFailure
from cassandra.query import SimpleStatement

from conftest import KS, make_cluster

WARN_THRESHOLD = 1000
FAILURE_THRESHOLD = 100_000


def test_read_over_deleted_rows_carries_tombstone_warning(session):
    session.execute("CREATE TABLE IF NOT EXISTS tomb_rows (pk int, ck int, v int, PRIMARY KEY (pk, ck))")
    insert = session.prepare("INSERT INTO tomb_rows (pk, ck, v) VALUES (1, ?, ?)")
    delete = session.prepare("DELETE FROM tomb_rows WHERE pk = 1 AND ck = ?")
    for ck in range(1510):
        session.execute(insert, (ck, ck))
    for ck in range(1500):
        session.execute(delete, (ck,))
    future = session.execute_async(SimpleStatement("SELECT * FROM tomb_rows WHERE pk = 1"))
    rows = list(future.result())
    assert [r.ck for r in rows] == list(range(1500, 1510))
    warnings = future.warnings or []
    assert len(warnings) == 1, warnings
    w = warnings[0]
    assert w.startswith("Read 10 live rows and 1500 tombstone cells for query SELECT * FROM "), w
    assert f"{KS}.tomb_rows WHERE pk = 1" in w, w
    assert w.endswith("(see tombstone_warn_threshold)"), w


def test_read_under_warn_threshold_has_no_warning(session):
    session.execute("CREATE TABLE IF NOT EXISTS tomb_few (pk int, ck int, v int, PRIMARY KEY (pk, ck))")
    delete = session.prepare("DELETE FROM tomb_few WHERE pk = 1 AND ck = ?")
    for ck in range(WARN_THRESHOLD):
        session.execute(delete, (ck,))
    future = session.execute_async("SELECT * FROM tomb_few WHERE pk = 1")
    assert list(future.result()) == []
    assert not future.warnings


def test_read_over_failure_threshold_fails_with_read_failure(session):
    # One statement writes more cell tombstones than the failure threshold: removing that many
    # elements from a set leaves one tombstone per element.
    session.execute("CREATE TABLE IF NOT EXISTS tomb_fail (pk int PRIMARY KEY, s set<int>)")
    remove = session.prepare("UPDATE tomb_fail SET s = s - ? WHERE pk = 1")
    session.execute(remove, (set(range(FAILURE_THRESHOLD + 1)),), timeout=30)
    started = time.monotonic()
    with pytest.raises(ReadFailure) as err:
        session.execute("SELECT * FROM tomb_fail WHERE pk = 1")
    assert time.monotonic() - started < 10
    assert err.value.failures == 1
    assert err.value.received_responses == 0
    assert "READ_TOO_MANY_TOMBSTONES from /" in str(err.value)
    # Protocol v5 carries the reason per replica: READ_TOO_MANY_TOMBSTONES is code 1.
    c5 = make_cluster(protocol_version=5)
    try:
        s5 = c5.connect(KS)
        with pytest.raises(ReadFailure) as err5:
            s5.execute("SELECT * FROM tomb_fail WHERE pk = 1")
        assert list(err5.value.error_code_map.values()) == [1]
    finally:
        c5.shutdown()
