"""Statements stay true to the schema: after DROP and re-CREATE, or ALTER, the same statement text (plain
or prepared) runs against the new table, as on Cassandra (issue 16, finding 1)."""

import pytest
from cassandra.query import SimpleStatement

from conftest import KS, make_cluster


def test_plain_statement_after_drop_and_recreate_table(session):
    session.execute("CREATE TABLE stale_plain (k int PRIMARY KEY, v int)")
    insert = "INSERT INTO stale_plain (k, v) VALUES (1, 10)"
    select = "SELECT * FROM stale_plain WHERE k = 1"
    session.execute(insert)
    assert session.execute(select).one().v == 10
    session.execute("DROP TABLE stale_plain")
    session.execute("CREATE TABLE stale_plain (k int PRIMARY KEY, v int, w text)")
    # The same text again: it must reach the new table, not the dropped one.
    assert session.execute(select).one() is None
    session.execute(insert)
    row = session.execute(select).one()
    assert (row.k, row.v, row.w) == (1, 10, None)


def test_fully_qualified_statement_after_keyspace_recreated():
    c = make_cluster()
    try:
        s = c.connect()  # no session keyspace: the statement names it
        ks = "stale_ks_py"
        create_ks = (
            f"CREATE KEYSPACE {ks} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
        for round_ in range(3):
            s.execute(create_ks)
            s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
            s.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, {round_})")
            rows = list(s.execute(f"SELECT v FROM {ks}.t"))
            assert [r.v for r in rows] == [round_]
            s.execute(f"DROP KEYSPACE {ks}")
    finally:
        c.shutdown()


def test_prepared_statement_after_drop_and_recreate_table(session):
    session.execute("CREATE TABLE stale_prep (k int PRIMARY KEY, v int)")
    ins = session.prepare("INSERT INTO stale_prep (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM stale_prep WHERE k = ?")
    session.execute(ins, (1, 1))
    assert session.execute(sel, (1,)).one().v == 1
    session.execute("DROP TABLE stale_prep")
    session.execute("CREATE TABLE stale_prep (k int PRIMARY KEY, v int)")
    # The driver gets UNPREPARED, re-prepares against the new table and retries.
    session.execute(ins, (2, 2))
    assert session.execute(sel, (1,)).one() is None
    assert session.execute(sel, (2,)).one().v == 2


@pytest.mark.parametrize("version", [4, 5])
def test_prepared_select_star_sees_added_column(session, version):
    c = make_cluster(protocol_version=version)
    try:
        s = c.connect()  # no session keyspace: only the table's own keyspace ties it to the DDL
        table = f"{KS}.stale_alter_v{version}"
        s.execute(f"DROP TABLE IF EXISTS {table}")
        s.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v int)")
        s.execute(f"INSERT INTO {table} (k, v) VALUES (1, 1)")
        sel = s.prepare(f"SELECT * FROM {table} WHERE k = ?")
        assert list(s.execute(sel, (1,)).one()._fields) == ["k", "v"]
        s.execute(f"ALTER TABLE {table} ADD w text")
        s.execute(f"UPDATE {table} SET w = 'x' WHERE k = 1")
        row = s.execute(sel, (1,)).one()
        assert list(row._fields) == ["k", "v", "w"]
        assert row.w == "x"
        # A plain SELECT * (never cached across schema versions) agrees.
        plain = s.execute(SimpleStatement(f"SELECT * FROM {table} WHERE k = 1")).one()
        assert plain.w == "x"
    finally:
        c.shutdown()


def test_prepared_statement_after_column_dropped(session):
    session.execute("CREATE TABLE stale_dropcol (k int PRIMARY KEY, v int, w int)")
    upd = session.prepare("UPDATE stale_dropcol SET w = ? WHERE k = ?")
    session.execute(upd, (5, 1))
    session.execute("ALTER TABLE stale_dropcol DROP w")
    # Re-preparing against the new table fails as Cassandra fails it: the column is gone.
    with pytest.raises(Exception) as err:
        session.execute(upd, (6, 1))
    assert "w" in str(err.value)
