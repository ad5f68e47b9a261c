"""The columnar layout (issue 15) through the driver: `WITH extensions = {'helenus.layout':
'columnar'}` is accepted and round-trips through system_schema and DESCRIBE; a columnar table
holding the same writes, deletes and TTLs as a row table answers every read and every CQL
aggregate the same, before and after flushes and compactions (which turn its SSTables
columnar); a bad layout value is a configuration error.

Flush and compaction go through `helenus nodetool` (HELENUS_BIN, or
$CARGO_TARGET_DIR/release/helenus as tests/clients/run.sh sets it).
"""

import math
import random

import pytest
from cassandra.protocol import ConfigurationException
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement

from test_parquet_export import nodetool

COLUMNAR = "WITH extensions = {'helenus.layout': 'columnar'}"
SCHEMA = "(k int PRIMARY KEY, month int, tone double, code text, n bigint, f float, tags set<text>)"
CODES = ["USA", "FRA", "ALB", "CHN", "DEU"]
N = 4000


def write(session, table, rows):
    ins = session.prepare(
        f"INSERT INTO {table} (k, month, tone, code, n, f, tags) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    execute_concurrent_with_args(session, ins, rows, concurrency=64, raise_on_first_error=True)


def rows_for(seed, keys):
    r = random.Random(seed)
    return [
        (
            k,
            197901 + r.randrange(72),
            r.uniform(-10, 10),
            r.choice(CODES),
            r.randrange(-(10**12), 10**12),
            r.uniform(-1000, 1000),
            {r.choice(CODES)} if r.random() < 0.1 else None,
        )
        for k in keys
    ]


def changes(session, table, seed):
    """Deletes, cell deletions, updates without INSERT and TTLs: what a columnar SSTable
    must keep exactly as a row SSTable does."""
    r = random.Random(seed)
    for _ in range(60):
        k = r.randrange(N)
        session.execute(f"DELETE FROM {table} WHERE k = %s", (k,))
        session.execute(f"DELETE tone FROM {table} WHERE k = %s", (r.randrange(N),))
        session.execute(
            f"UPDATE {table} SET month = %s, code = 'UPD' WHERE k = %s",
            (198012, N + r.randrange(200)),
        )
        session.execute(
            f"UPDATE {table} USING TTL 100000 SET n = %s WHERE k = %s", (7, r.randrange(N))
        )


def create_pair(session, prefix):
    """A columnar table and a row table of the same schema: {"col": name, "row": name}."""
    names = {"col": f"col_{prefix}", "row": f"row_{prefix}"}
    for kind, name in names.items():
        session.execute(f"DROP TABLE IF EXISTS {name}")
        session.execute(f"CREATE TABLE {name} {SCHEMA} {COLUMNAR if kind == 'col' else ''}")
    return names


def flush_and_compact(session, table):
    for step in ("flush", "compact"):
        r = nodetool(step, session.keyspace, table)
        assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def tables(session):
    names = create_pair(session, "events")
    for name in names.values():
        write(session, name, rows_for(1, range(N)))
        changes(session, name, 2)
    flush_and_compact(session, names["col"])
    # Writes after the compaction stay in the memtable, over the compacted SSTable.
    for name in names.values():
        write(session, name, rows_for(3, range(0, N, 37)))
        changes(session, name, 4)
    return names


QUERIES = [
    "SELECT count(*) FROM {t}",
    "SELECT count(*), sum(month), avg(tone), min(code), max(code), min(tone), max(n), "
    "sum(f), avg(n), count(tone), min(month) FROM {t}",
    "SELECT count(*), avg(tone), min(tone), max(tone) FROM {t} WHERE month = 198012 "
    "ALLOW FILTERING",
    "SELECT count(*) FROM {t} WHERE code = 'ALB' ALLOW FILTERING",
    "SELECT count(*), max(code) FROM {t} WHERE code = 'NONE' ALLOW FILTERING",
    "SELECT count(tone), sum(n) FROM {t} WHERE month >= 198000 AND month < 198100 "
    "AND tone > 0 ALLOW FILTERING",
    "SELECT count(*), sum(month) FROM {t} WHERE token(k) > -3000000000000000000 "
    "AND token(k) <= 4000000000000000000",
    "SELECT count(*) FROM {t} WHERE token(k) > 5000000000000000000",
    "SELECT k, month, tone, code, n, f, tags FROM {t}",
    # Read column by column on a columnar table (no collection selected), in pages of 333.
    "SELECT k, month, tone, code, n, f FROM {t}",
    "SELECT code, k FROM {t} WHERE token(k) > -3000000000000000000 "
    "AND token(k) <= 4000000000000000000",
    "SELECT k, tone FROM {t} WHERE code = 'ALB' AND month > 198006 ALLOW FILTERING",
    "SELECT k FROM {t} LIMIT 1000",
    "SELECT k, code FROM {t} WHERE k IN (1, 37, 74, 3999, 4100)",
    # Grouped by the partition key: one group per partition, LIMIT counting groups.
    "SELECT k, count(*), avg(tone), max(code), sum(n) FROM {t} GROUP BY k",
    "SELECT count(tone), k FROM {t} WHERE month > 198006 GROUP BY k LIMIT 50 ALLOW FILTERING",
]


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def answer(session, q, t):
    rows = session.execute(SimpleStatement(q.format(t=t), fetch_size=333))
    return sorted(tuple(r) for r in rows)


def check_all(session, tables):
    for q in QUERIES:
        got, want = answer(session, q, tables["col"]), answer(session, q, tables["row"])
        assert len(got) == len(want), q
        for g, w in zip(got, want):
            assert same(g, w), f"{q}: {g} != {w}"


def test_columnar_answers_as_rows_do(session, tables):
    check_all(session, tables)
    assert answer(session, QUERIES[0], tables["col"])[0][0] > N // 2


def test_columnar_answers_as_rows_do_once_all_is_compacted(session, tables):
    flush_and_compact(session, tables["col"])
    check_all(session, tables)


@pytest.fixture(scope="module")
def clean_tables(session):
    """Inserts only, compacted: every row group of the columnar table is read from its chunks."""
    names = create_pair(session, "clean")
    for name in names.values():
        write(session, name, rows_for(5, range(N)))
    flush_and_compact(session, names["col"])
    return names


def test_a_compacted_columnar_table_answers_as_rows_do(session, clean_tables):
    check_all(session, clean_tables)


def test_pages_of_a_column_scan_are_in_token_order_and_resume_exactly(session, tables):
    """Pages read from chunks and from the memtable interleave in token order, as a row
    table's do: the same keys in the same order, page after page."""
    q = "SELECT k FROM {t}"
    for size in (7, 97, 1000):
        got = [r.k for r in session.execute(SimpleStatement(q.format(t=tables["col"]), fetch_size=size))]
        want = [r.k for r in session.execute(SimpleStatement(q.format(t=tables["row"]), fetch_size=size))]
        assert got == want, size


WIDE_SCHEMA = "(m int, d int, k int, tone double, code text, PRIMARY KEY (m, d, k))"
WIDE_QUERIES = [
    "SELECT m, count(*), avg(tone), min(code), max(tone) FROM {t} GROUP BY m",
    "SELECT m, count(code) FROM {t} WHERE tone > 0 GROUP BY m LIMIT 7 ALLOW FILTERING",
    "SELECT count(*), sum(tone) FROM {t} WHERE token(m) > 0 GROUP BY m",
    "SELECT count(*), sum(tone) FROM {t}",
    "SELECT d, m, count(*), max(code), avg(tone) FROM {t} GROUP BY m, d",
    "SELECT m, d, k, sum(tone) FROM {t} GROUP BY m, d, k LIMIT 500",
]


@pytest.fixture(scope="module")
def alone(session):
    """Whether the node is alone: then its column scans answer (the trace says so). On a ring
    (tests/cluster runs this suite against one) they do only where a node replicates every
    token, which tests/cluster/test_2_replication.py checks."""
    return not list(session.execute("SELECT peer FROM system.peers"))


def test_aggregates_grouped_by_key_prefixes_answer_as_rows_do(session, alone):
    """Partitions of many rows, some in compacted SSTables and some in the memtable, grouped
    by the partition key and by one or two clustering columns more: the column scan (the
    trace says it ran) gives the row table's groups in the same order."""
    names = {"col": "col_wide", "row": "row_wide"}
    r = random.Random(11)
    rows = [(m, k % 5, k, r.uniform(-5, 5), r.choice(CODES))
            for m in range(40) for k in range(r.randrange(1, 300))]
    for kind, name in names.items():
        session.execute(f"DROP TABLE IF EXISTS {name}")
        session.execute(f"CREATE TABLE {name} {WIDE_SCHEMA} {COLUMNAR if kind == 'col' else ''}")
        ins = session.prepare(f"INSERT INTO {name} (m, d, k, tone, code) VALUES (?, ?, ?, ?, ?)")
        execute_concurrent_with_args(session, ins, rows, concurrency=64, raise_on_first_error=True)
    flush_and_compact(session, names["col"])
    for name in names.values():
        session.execute(f"DELETE FROM {name} WHERE m = 3")
        session.execute(f"INSERT INTO {name} (m, d, k, tone, code) VALUES (5, 7, 100000, 1.5, 'NEW')")
    for q in WIDE_QUERIES:
        rs = session.execute(q.format(t=names["col"]), trace=True)
        events = " | ".join(e.description for e in rs.get_query_trace(max_wait_sec=10).events)
        assert ("from its column chunks" in events) or not alone, q
        got = list(rs)
        want = list(session.execute(q.format(t=names["row"])))
        assert len(got) == len(want) and len(got) > 0, q
        for g, w in zip(got, want):
            assert same(tuple(g), tuple(w)), f"{q}: {g} != {w}"
    # Projections of the clustered table, paged: pages resume inside partitions (a page of 7
    # rows ends inside most of them), from chunks and from the memtable alike.
    for q in ("SELECT m, d, k, code FROM {t}", "SELECT tone, k, m FROM {t} WHERE token(m) > 0",
              "SELECT k, m FROM {t} WHERE code = 'ALB' ALLOW FILTERING"):
        for size in (7, 1000):
            rs = session.execute(SimpleStatement(q.format(t=names["col"]), fetch_size=size), trace=True)
            events = " | ".join(e.description for e in rs.get_query_trace(max_wait_sec=10).events)
            assert ("column by column" in events) or not alone, q
            got = [tuple(r) for r in rs]
            want = [tuple(r) for r in session.execute(SimpleStatement(q.format(t=names["row"]), fetch_size=size))]
            assert got == want and len(got) > 0, (q, size)


def test_column_scans_are_what_answers_a_columnar_table(session, clean_tables, alone):
    """The trace shows which path ran: aggregates and projections of the columnar table read
    its columns, the row table's the rows."""
    if not alone:
        pytest.skip("a ring member scans columns only where it replicates every token")
    for q, what in (("SELECT count(*), avg(tone) FROM {t}", "from its column chunks"),
                    ("SELECT k, count(*) FROM {t} GROUP BY k", "from its column chunks"),
                    ("SELECT k, month FROM {t}", "column by column")):
        for kind in ("col", "row"):
            rs = session.execute(q.format(t=clean_tables[kind]), trace=True)
            events = " | ".join(e.description for e in rs.get_query_trace(max_wait_sec=10).events)
            assert (what in events) == (kind == "col"), (q, kind, events)


def test_layout_round_trips_through_schema_and_describe(session, tables):
    row = session.execute(
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s "
        "AND table_name = %s",
        (session.keyspace, tables["col"]),
    ).one()
    assert dict(row.extensions) == {"helenus.layout": b"columnar"}
    ddl = session.execute(f"DESCRIBE TABLE {tables['col']}").one().create_statement
    assert "extensions = {'helenus.layout': 'columnar'}" in ddl
    plain = session.execute(f"DESCRIBE TABLE {tables['row']}").one().create_statement
    assert "extensions = {}" in plain
    # The DESCRIBE output creates the same table again (a blob literal is accepted too).
    session.execute("DROP TABLE IF EXISTS col_copy")
    session.execute(ddl.replace(f".{tables['col']} ", ".col_copy "))
    again = session.execute(
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s "
        "AND table_name = 'col_copy'",
        (session.keyspace,),
    ).one()
    assert dict(again.extensions) == {"helenus.layout": b"columnar"}
    session.execute("ALTER TABLE col_copy WITH extensions = {'helenus.layout': 0x726f7773}")
    altered = session.execute(
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s "
        "AND table_name = 'col_copy'",
        (session.keyspace,),
    ).one()
    assert dict(altered.extensions) == {"helenus.layout": b"rows"}


def test_an_unknown_layout_is_a_configuration_error(session):
    with pytest.raises(ConfigurationException, match="Unknown value 'parquet' .*expected 'rows' or 'columnar'"):
        session.execute(
            "CREATE TABLE bad_layout (k int PRIMARY KEY) "
            "WITH extensions = {'helenus.layout': 'parquet'}"
        )
