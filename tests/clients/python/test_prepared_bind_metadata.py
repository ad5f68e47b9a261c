"""PREPARED metadata matches Cassandra 5.0.9's (issue 16, section 6): drivers build their encoders from the
bind variables' names and types and their routing keys from the partition key indexes, so a different type
makes them refuse to bind (e.g. `fromJson(?)` announced as the column's type instead of text)."""

import json
import uuid
from decimal import Decimal

import pytest

import prepared_bind_cases as cases
from conftest import make_cluster

with open(cases.GOLDEN) as f:
    GOLDEN = json.load(f)


@pytest.fixture(scope="module")
def bind_session():
    c = make_cluster()
    s = c.connect()
    cases.create_schema(s)
    yield s
    s.execute(f"DROP KEYSPACE IF EXISTS {cases.KS}")
    c.shutdown()


def comparable(answer):
    """What must match: bind names, types and tables, routing key indexes, result columns; for a refusal
    only that it is one (messages are checked by the corpus, not here)."""
    if "error" in answer:
        return {"error": True}
    return {
        "binds": [[table, name, ty] for _ks, table, name, ty in answer["binds"]],
        "routing_key_indexes": answer["routing_key_indexes"],
        "result": answer["result"],
    }


def test_golden_covers_every_statement():
    assert list(GOLDEN) == cases.STATEMENTS


@pytest.mark.parametrize("query", cases.STATEMENTS)
def test_prepared_metadata_matches_cassandra(bind_session, query):
    got = cases.describe(bind_session, query)
    assert comparable(got) == comparable(GOLDEN[query]), got


BOUND = [
    ("INSERT INTO kv (k, v) VALUES (?, fromJson(?))", (1, "7"), "SELECT v FROM kv WHERE k = 1", 7),
    ("UPDATE kv SET v = blobAsInt(?) WHERE k = ?", (b"\x00\x00\x00\x08", 1), "SELECT v FROM kv WHERE k = 1", 8),
    ("INSERT INTO kv (k, t) VALUES (fromJson(?), fromJson(?))", ("2", '"two"'), "SELECT t FROM kv WHERE k = 2",
     "two"),
    ("INSERT INTO kv (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?", (3, 30, 1000, 5),
     "SELECT v FROM kv WHERE k = 3", 30),
    ("INSERT INTO kv (k, d) VALUES (?, ?)", (4, Decimal("1.5")), "SELECT d FROM kv WHERE k = 4", Decimal("1.5")),
    ("INSERT INTO coll (k, m, l, s) VALUES (?, ?, ?, ?)", (1, {"a": 1}, [1, 2], {"x"}),
     "SELECT m FROM coll WHERE k = 1", {"a": 1}),
    ("UPDATE coll SET m[?] = ? WHERE k = ?", ("b", 2, 1), "SELECT m FROM coll WHERE k = 1", {"a": 1, "b": 2}),
    ("UPDATE coll SET l[?] = ? WHERE k = ?", (0, 9, 1), "SELECT l FROM coll WHERE k = 1", [9, 2]),
    ("UPDATE coll SET l = ? + l WHERE k = ?", ([0], 1), "SELECT l FROM coll WHERE k = 1", [0, 9, 2]),
    ("UPDATE coll SET m = m - ? WHERE k = ?", ({"a"}, 1), "SELECT m FROM coll WHERE k = 1", {"b": 2}),
    ("UPDATE coll SET u.zip = ?, u.street = ? WHERE k = ?", (75001, "rue", 1), "SELECT u FROM coll WHERE k = 1",
     None),
    ("INSERT INTO coll (k, tp) VALUES (?, (?, ?))", (2, 5, "five"), "SELECT tp FROM coll WHERE k = 2", (5, "five")),
    ("INSERT INTO vec (k, v) VALUES (?, [?, ?, ?])", (1, 1.0, 0.0, 0.0), "SELECT v FROM vec WHERE k = 1",
     [1.0, 0.0, 0.0]),
]


def test_drivers_bind_and_execute(bind_session):
    s = bind_session
    for query, values, check, expected in BOUND:
        s.execute(s.prepare(query), values)
        got = s.execute(check).one()[0]
        if expected is None:  # a UDT: compare its fields
            assert (got.street, got.zip) == ("rue", 75001)
        else:
            assert got == expected, query


def test_reads_with_markers_in_functions_subscripts_and_tuples(bind_session):
    s = bind_session
    s.execute("INSERT INTO cl (k, a, b, v) VALUES (1, 1, 'x', 10)")
    s.execute("INSERT INTO cl (k, a, b, v) VALUES (1, 2, 'y', 20)")
    s.execute("INSERT INTO coll (k, m) VALUES (5, {'k': 3})")
    s.execute("INSERT INTO vec (k, v) VALUES (2, [1.0, 0.0, 0.0])")
    rows = s.execute(s.prepare("SELECT v FROM cl WHERE k = ? AND (a, b) > (?, ?)"), (1, 1, "x"))
    assert [r.v for r in rows] == [20]
    rows = s.execute(s.prepare("SELECT v FROM cl WHERE k = ? AND (a, b) IN ?"), (1, [(2, "y"), (3, "z")]))
    assert [r.v for r in rows] == [20]
    rows = s.execute(s.prepare("SELECT * FROM cl WHERE k = ? LIMIT ?"), (1, 1))
    assert len(list(rows)) == 1
    row = s.execute(s.prepare("SELECT m[?] FROM coll WHERE k = ?"), ("k", 5)).one()
    assert row[0] == 3
    rows = s.execute(s.prepare("SELECT k FROM coll WHERE m CONTAINS KEY ? ALLOW FILTERING"), ("k",))
    assert [r.k for r in rows] == [5]
    row = s.execute(s.prepare("SELECT k FROM kv WHERE k = fromJson(?)"), ("1",)).one()
    assert row.k == 1
    rows = s.execute(s.prepare("SELECT k FROM kv WHERE token(k) = token(?)"), (1,))
    assert [r.k for r in rows] == [1]
    row = s.execute(s.prepare("SELECT k, similarity_cosine(v, ?) FROM vec WHERE k = ?"), ([1.0, 0.0, 0.0], 2))
    assert row.one()[1] == pytest.approx(1.0)
    done = s.execute(s.prepare("UPDATE coll SET m = ? WHERE k = ? IF m[?] IN ?"), ({"z": 1}, 5, "k", [3, 4]))
    assert done.one()[0] is True
    k = uuid.uuid4().int % 1000 + 100
    s.execute(s.prepare("INSERT INTO kv JSON ?"), (json.dumps({"k": k, "v": 1}),))
    assert s.execute(f"SELECT v FROM kv WHERE k = {k}").one().v == 1
