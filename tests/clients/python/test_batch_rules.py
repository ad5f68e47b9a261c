"""Batch rules as Cassandra applies them to both BATCH requests and BEGIN BATCH text: which statements a
batch kind may hold, and the size/spread guardrails sent as client warnings (issue 16, finding 6)."""

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, BatchType, SimpleStatement


@pytest.fixture(scope="module")
def tables(session):
    session.execute("CREATE TABLE IF NOT EXISTS batch_kv (k int PRIMARY KEY, v text)")
    session.execute("CREATE TABLE IF NOT EXISTS batch_counts (k int PRIMARY KEY, c counter)")
    return session


def test_counter_batch_refuses_non_counter_statements_in_batch_request(tables):
    s = tables
    b = BatchStatement(batch_type=BatchType.COUNTER)
    b.add(SimpleStatement("UPDATE batch_counts SET c = c + 1 WHERE k = 1"))
    b.add(SimpleStatement("INSERT INTO batch_kv (k, v) VALUES (1, 'x')"))
    with pytest.raises(InvalidRequest, match="non-counter statement in a counter batch"):
        s.execute(b)
    assert s.execute("SELECT * FROM batch_kv WHERE k = 1").one() is None


def test_logged_batch_refuses_counters_in_batch_request(tables):
    b = BatchStatement(batch_type=BatchType.LOGGED)
    b.add(SimpleStatement("UPDATE batch_counts SET c = c + 1 WHERE k = 2"))
    with pytest.raises(InvalidRequest, match="counter statement in a logged batch"):
        tables.execute(b)


def test_unlogged_batch_may_hold_counters_but_not_mixed(tables):
    s = tables
    s.execute("BEGIN UNLOGGED BATCH UPDATE batch_counts SET c = c + 2 WHERE k = 3; APPLY BATCH")
    assert s.execute("SELECT c FROM batch_counts WHERE k = 3").one().c == 2
    with pytest.raises(InvalidRequest, match="Counter and non-counter mutations"):
        s.execute(
            "BEGIN UNLOGGED BATCH UPDATE batch_counts SET c = c + 1 WHERE k = 3;"
            " INSERT INTO batch_kv (k, v) VALUES (3, 'x'); APPLY BATCH"
        )


def test_large_multi_partition_batch_warns(tables):
    ins = tables.prepare("INSERT INTO batch_kv (k, v) VALUES (?, ?)")
    b = BatchStatement(batch_type=BatchType.LOGGED)
    for k in range(10, 16):
        b.add(ins, (k, "x" * 1200))  # about 7.3 KiB over 6 partitions: over 5 KiB, under 50 KiB
    future = tables.execute_async(b)
    future.result()
    warnings = future.warnings or []
    assert any("Batch for [" in w and "exceeding specified threshold of 5.000KiB" in w for w in warnings), warnings


def test_single_partition_batch_never_warns_on_size(session):
    session.execute("CREATE TABLE IF NOT EXISTS batch_wide (k int, c int, v text, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO batch_wide (k, c, v) VALUES (?, ?, ?)")
    b = BatchStatement(batch_type=BatchType.LOGGED)
    for c in range(10):
        b.add(ins, (1, c, "y" * 1200))
    future = session.execute_async(b)
    future.result()
    assert not future.warnings


def test_too_large_batch_is_refused(tables):
    ins = tables.prepare("INSERT INTO batch_kv (k, v) VALUES (?, ?)")
    b = BatchStatement(batch_type=BatchType.LOGGED)
    for k in range(100, 160):
        b.add(ins, (k, "z" * 1000))  # about 60 KiB over 60 partitions
    with pytest.raises(InvalidRequest, match="Batch too large"):
        tables.execute(b)
    assert tables.execute("SELECT * FROM batch_kv WHERE k = 100").one() is None


def test_unlogged_batch_over_many_partitions_warns(tables):
    ins = tables.prepare("INSERT INTO batch_kv (k, v) VALUES (?, ?)")
    b = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k in range(200, 212):
        b.add(ins, (k, "a"))
    future = tables.execute_async(b)
    future.result()
    warnings = future.warnings or []
    assert any(w.startswith("Unlogged batch covering 12 partitions") for w in warnings), warnings


def test_conditional_batch_request_checks_its_conditions(session):
    """A BATCH request (each statement with its own values) holding IF clauses is a compare-and-set:
    it applies all or nothing and reports [applied], as BEGIN BATCH text does."""
    s = session
    s.execute("CREATE TABLE IF NOT EXISTS batch_lwt (k int, c int, v int, PRIMARY KEY (k, c))")
    s.execute("INSERT INTO batch_lwt (k, c, v) VALUES (1, 1, 1)")
    ins = s.prepare("INSERT INTO batch_lwt (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS")
    b = BatchStatement()
    b.add(ins, (1, 1, 5))
    b.add(ins, (1, 2, 6))
    r = s.execute(b)
    assert not r.was_applied
    assert [(row.c, row.v) for row in s.execute("SELECT c, v FROM batch_lwt WHERE k = 1")] == [(1, 1)]
    b = BatchStatement()
    b.add(ins, (1, 2, 6))
    b.add(s.prepare("UPDATE batch_lwt SET v = ? WHERE k = ? AND c = ? IF v = ?"), (7, 1, 1, 1))
    assert s.execute(b).was_applied
    assert [(row.c, row.v) for row in s.execute("SELECT c, v FROM batch_lwt WHERE k = 1")] == [(1, 7), (2, 6)]
