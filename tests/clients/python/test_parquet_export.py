"""`helenus nodetool export KS TABLE DIR`: the Parquet files hold exactly what `SELECT *` returns
(deleted rows and cells, expired TTLs left out), one file per token range of the node, with
Parquet types pyarrow and DuckDB read back as the driver's values.

Needs the helenus binary: HELENUS_BIN, or $CARGO_TARGET_DIR/release/helenus (as tests/clients/run.sh
sets it); the node's admin API on HELENUS_HOST:10000; and the export directory on this machine.
"""

import datetime
import decimal
import ipaddress
import json
import os
import subprocess
import tempfile
import time
import uuid

import pyarrow.parquet as pq
import pytest
from cassandra.util import Date, Duration, Time

from conftest import HOST


def helenus_bin():
    candidates = [os.environ.get("HELENUS_BIN", "")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(os.path.join(os.environ["CARGO_TARGET_DIR"], "release", "helenus"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("no helenus binary: set HELENUS_BIN or CARGO_TARGET_DIR")


def nodetool(*args):
    return subprocess.run(
        [helenus_bin(), "nodetool", "-h", HOST, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def whole_table_on_this_node(session):
    """An export holds this node's primary ranges: the whole table only on a node alone. On a
    ring (tests/cluster runs this suite against one) each node is exported, as README says, so
    the tests comparing one export with `SELECT *` need a single node (tests/run-all.sh's)."""
    if list(session.execute("SELECT peer FROM system.peers")):
        pytest.skip("a ring: one node's export holds its primary ranges, not the whole table")


COLUMNS = """
    k int, c int, s text static,
    i int, big bigint, small smallint, tiny tinyint, f float, d double, b boolean,
    t text, a ascii, v varchar, bl blob, ts timestamp, dt date, tm time,
    u uuid, tu timeuuid, ip inet, dec decimal, vi varint, du duration,
    l list<int>, st set<text>, m map<text, int>, tup tuple<int, text>, fr frozen<list<text>>
"""


@pytest.fixture(scope="module")
def exported_table(session):
    session.execute("DROP TABLE IF EXISTS export_all")
    session.execute(f"CREATE TABLE export_all ({COLUMNS}, PRIMARY KEY (k, c))")
    ins = session.prepare(
        "INSERT INTO export_all (k, c, i, big, small, tiny, f, d, b, t, a, v, bl, ts, dt, tm, "
        "u, tu, ip, dec, vi, du, l, st, m, tup, fr) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    for k in range(40):
        session.execute("INSERT INTO export_all (k, s) VALUES (%s, %s)", (k, f"static{k}"))
        for c in range(5):
            n = k * 10 + c
            session.execute(
                ins,
                (
                    k, c, n - 200, n * 10**12, n - 100, (n % 200) - 100, n / 4, n / 3.0,
                    n % 2 == 0, f"text {n} ü", f"ascii{n}", f"v{n}", bytes([n % 256, 0, 7]),
                    datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=n * 3601),
                    Date(19000 + n), Time(n * 1_000_000_007), uuid.UUID(int=n * 7919),
                    uuid.uuid1(), ipaddress.ip_address(f"10.0.{n % 256}.1"),
                    decimal.Decimal(f"{n}.{n:03d}"), 10**30 + n, Duration(1, 2, n),
                    [n, n + 1], {f"a{n}", "b"}, {"x": n}, (n, f"t{n}"), [f"f{n}"],
                ),
            )
    # A partition with its static row alone, and one deleted whole.
    session.execute("INSERT INTO export_all (k, s) VALUES (1000, 'lonely static')")
    session.execute("DELETE FROM export_all WHERE k = 3")
    # Deleted rows, a deleted clustering range, deleted cells and a deleted collection element.
    session.execute("DELETE FROM export_all WHERE k = 4 AND c = 1")
    session.execute("DELETE FROM export_all WHERE k = 5 AND c >= 2")
    session.execute("DELETE t, bl FROM export_all WHERE k = 6 AND c = 0")
    session.execute("UPDATE export_all SET st = st - {'b'} WHERE k = 7 AND c = 0")
    session.execute("DELETE s FROM export_all WHERE k = 8")
    # Expired TTLs: a whole row and one cell of a live row.
    session.execute("INSERT INTO export_all (k, c, i) VALUES (2000, 0, 1) USING TTL 1")
    session.execute("UPDATE export_all USING TTL 1 SET t = 'short' WHERE k = 9 AND c = 0")
    time.sleep(2.5)
    return "export_all"


def select_all(session, table):
    rows = list(session.execute(f"SELECT * FROM {table}"))
    return rows


def normalise(col, v):
    """The driver's value and the Parquet value as comparable Python values."""
    if v is None:
        return None
    if isinstance(v, Date):
        return v.date() if hasattr(v, "date") else v
    if isinstance(v, Time):
        return int(v.nanosecond_time)
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 10**9 + v.microsecond * 1000
    if isinstance(v, datetime.datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, (uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(v)
    if isinstance(v, decimal.Decimal):
        return v
    if isinstance(v, Duration):
        return (v.months, v.days, v.nanoseconds)
    if isinstance(v, (list, tuple, set, frozenset, dict)) or type(v).__name__ in (
        "SortedSet", "OrderedMapSerializedKey"
    ):
        return json_of(v)
    if isinstance(v, float):
        return round(v, 4)
    return v


def json_of(v):
    if isinstance(v, dict) or type(v).__name__ == "OrderedMapSerializedKey":
        return {str(k): json_of(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)) or type(v).__name__ == "SortedSet":
        return [json_of(x) for x in v]
    return v


def parquet_value(col, v):
    """A Parquet cell back to what `normalise` makes of the driver's value."""
    if v is None:
        return None
    if col in ("l", "st", "m", "tup", "fr"):
        return json_of(json.loads(v))
    if col == "dec":
        return decimal.Decimal(v)
    if col == "vi":
        return int(v)
    if col == "du":
        return v
    return normalise(col, v)


@pytest.mark.usefixtures("whole_table_on_this_node")
def test_export_matches_select_star(session, exported_table):
    out = tempfile.mkdtemp(prefix="helenus-export-")
    r = nodetool("export", session.keyspace, exported_table, out)
    assert r.returncode == 0, r.stderr + r.stdout
    lines = r.stdout.strip().splitlines()
    files = sorted(f for f in os.listdir(out) if f.endswith(".parquet"))
    # One file per token range of the node (16 vnodes by default), the range in its name.
    assert len(files) >= 2, files
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]
    for f in files:
        ks, table, rng, ext = f.split(".")
        assert (ks, table, ext) == (session.keyspace, exported_table, "parquet")
        start, end = (int(t) for t in rng.split("_"))
    # The CLI prints a line per file with its rows and bytes, then the totals.
    assert lines[-1].startswith(f"Exported {session.keyspace}.{exported_table}: {len(files)} files")
    printed_rows = 0
    for f in files:
        line = next(l for l in lines if l.endswith(f))
        rows_in_line, bytes_in_line = line.split()[-3], line.split()[-2]
        meta = pq.ParquetFile(os.path.join(out, f)).metadata
        assert int(rows_in_line) == meta.num_rows
        assert int(bytes_in_line) == os.path.getsize(os.path.join(out, f))
        printed_rows += meta.num_rows
        kv = {k.decode(): v.decode() for k, v in meta.metadata.items()}
        assert kv["helenus.table"] == exported_table
        start, end = (int(t) for t in f.split(".")[2].split("_"))
        assert kv["helenus.token_range"] == f"({start}, {end}]"
        if meta.num_rows:
            assert meta.row_group(0).column(0).compression == "ZSTD"

    tables = [pq.read_table(os.path.join(out, f)) for f in files]
    expected = select_all(session, exported_table)
    assert printed_rows == len(expected)
    names = list(expected[0]._fields)
    assert tables[0].schema.names == names

    # Parquet types a reader sees.
    schema = tables[0].schema
    assert str(schema.field("i").type) == "int32"
    assert str(schema.field("small").type) == "int16"
    assert str(schema.field("tiny").type) == "int8"
    assert str(schema.field("big").type) == "int64"
    assert str(schema.field("f").type) == "float"
    assert str(schema.field("d").type) == "double"
    assert str(schema.field("b").type) == "bool"
    assert str(schema.field("t").type) == "string"
    assert str(schema.field("bl").type) == "binary"
    assert str(schema.field("ts").type).startswith("timestamp[ms")
    assert str(schema.field("dt").type) == "date32[day]"
    # Nanoseconds since midnight, unannotated: Spark 3.5 cannot read Parquet's TIME type.
    assert str(schema.field("tm").type) == "int64"

    got = []
    for t in tables:
        for row in t.to_pylist():
            got.append(tuple(parquet_value(c, row[c]) for c in names))
    want = []
    for row in expected:
        vals = []
        for c in names:
            v = getattr(row, c)
            if c == "du" and v is not None:
                vals.append(None)  # compared below through the CQL text
                continue
            if c == "dt" and v is not None:
                vals.append(v.date())
                continue
            if c == "vi" and v is not None:
                vals.append(int(v))
                continue
            vals.append(normalise(c, v))
        want.append(tuple(vals))
    du = names.index("du")
    got_no_du = [tuple(None if i == du else x for i, x in enumerate(r)) for r in got]
    key = lambda r: (r[0], -1 if r[1] is None else r[1])
    assert sorted(got_no_du, key=key) == sorted(want, key=key)

    # What was deleted or expired is not there; what stayed is.
    keys = {(r[0], r[1]) for r in got}
    assert not any(k == 3 for k, _ in keys)
    assert (4, 1) not in keys and (4, 0) in keys
    assert not any(k == 5 and c is not None and c >= 2 for k, c in keys)
    assert (2000, 0) not in keys
    assert (1000, None) in keys
    by_key = {(r[0], r[1]): r for r in got}
    assert by_key[(6, 0)][names.index("t")] is None
    assert by_key[(6, 0)][names.index("bl")] is None
    assert by_key[(9, 0)][names.index("t")] is None
    assert by_key[(7, 0)][names.index("st")] == ["a70"]
    assert by_key[(8, 0)][names.index("s")] is None
    assert by_key[(1000, None)][names.index("s")] == "lonely static"
    # A duration is its CQL text.
    assert by_key[(0, 1)][du] == "1mo2d1ns"


@pytest.mark.usefixtures("whole_table_on_this_node")
def test_export_is_readable_by_duckdb(session, exported_table):
    import duckdb

    out = tempfile.mkdtemp(prefix="helenus-export-duckdb-")
    r = nodetool("export", session.keyspace, exported_table, out, "--format", "parquet")
    assert r.returncode == 0, r.stderr + r.stdout
    con = duckdb.connect()
    pattern = os.path.join(out, "*.parquet")
    n, total = con.execute(
        f"SELECT count(*), sum(i) FROM read_parquet('{pattern}') WHERE c IS NOT NULL"
    ).fetchone()
    want = [row for row in select_all(session, exported_table) if row.c is not None]
    assert n == len(want)
    assert total == sum(row.i for row in want if row.i is not None)
    # A UTC timestamp to DuckDB (as milliseconds: its Python zone conversion needs pytz).
    ts_ms, dt = con.execute(
        f"SELECT epoch_ms(ts), dt FROM read_parquet('{pattern}') WHERE k = 0 AND c = 0"
    ).fetchone()
    assert ts_ms == int(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    assert dt == datetime.date(1970, 1, 1) + datetime.timedelta(days=19000)


@pytest.mark.usefixtures("whole_table_on_this_node")
def test_export_of_a_snapshot_ignores_later_writes(session):
    """The files are the table as of the export, even with writes going on meanwhile."""
    session.execute("DROP TABLE IF EXISTS export_busy")
    session.execute("CREATE TABLE export_busy (k int PRIMARY KEY, v int)")
    for k in range(200):
        session.execute("INSERT INTO export_busy (k, v) VALUES (%s, 1)", (k,))
    out = tempfile.mkdtemp(prefix="helenus-export-busy-")
    proc = subprocess.Popen(
        [helenus_bin(), "nodetool", "-h", HOST, "export", session.keyspace, "export_busy", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Writes racing the export: each is either wholly in it (as of its flush) or not at all.
    for k in range(200, 400):
        session.execute("INSERT INTO export_busy (k, v) VALUES (%s, 2)", (k,))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    rows = []
    for f in os.listdir(out):
        rows.extend(pq.read_table(os.path.join(out, f)).to_pylist())
    ks = sorted(r["k"] for r in rows)
    assert ks[:200] == list(range(200))
    assert len(ks) == len(set(ks))
    assert all(r["v"] == (1 if r["k"] < 200 else 2) for r in rows)


def test_unknown_table_or_keyspace_fails_clearly(session):
    out = tempfile.mkdtemp(prefix="helenus-export-missing-")
    r = nodetool("export", session.keyspace, "no_such_table", out)
    assert r.returncode != 0
    assert f"Table {session.keyspace}.no_such_table does not exist" in r.stderr
    r = nodetool("export", "no_such_keyspace", "t", out)
    assert r.returncode != 0
    assert "Keyspace no_such_keyspace does not exist" in r.stderr
    assert os.listdir(out) == []
    r = nodetool("export", session.keyspace, "t", out, "--format", "orc")
    assert r.returncode != 0
    assert "unknown export format 'orc'" in r.stderr
    r = nodetool("export", session.keyspace)
    assert r.returncode != 0
    assert "usage: nodetool export" in r.stderr


@pytest.mark.usefixtures("whole_table_on_this_node")
def test_a_wide_partition_is_exported_whole(session):
    """A partition of more rows than one storage read returns (5000) is read on from its last
    row: every live row once, its static value on each, deleted rows left out."""
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute("DROP TABLE IF EXISTS export_wide")
    session.execute("CREATE TABLE export_wide (k int, c int, s text static, v int, PRIMARY KEY (k, c))")
    ins = session.prepare("INSERT INTO export_wide (k, c, v) VALUES (?, ?, ?)")
    rows = [(1, c, c) for c in range(12_000)] + [(k, 0, k) for k in range(2, 50)]
    execute_concurrent_with_args(session, ins, rows, concurrency=64, raise_on_first_error=True)
    session.execute("UPDATE export_wide SET s = 'wide' WHERE k = 1")
    session.execute("DELETE FROM export_wide WHERE k = 1 AND c >= 4990 AND c < 5010")
    session.execute("DELETE FROM export_wide WHERE k = 1 AND c = 11999")
    out = tempfile.mkdtemp(prefix="helenus-export-wide-")
    r = nodetool("export", session.keyspace, "export_wide", out)
    assert r.returncode == 0, r.stderr + r.stdout
    got = []
    for f in os.listdir(out):
        got.extend(pq.read_table(os.path.join(out, f)).to_pylist())
    wide = sorted(row["c"] for row in got if row["k"] == 1)
    want = [c for c in range(12_000) if not (4990 <= c < 5010) and c != 11999]
    assert wide == want
    assert all(row["s"] == "wide" for row in got if row["k"] == 1)
    assert sorted(row["k"] for row in got if row["k"] != 1) == list(range(2, 50))
    assert len(got) == len(list(session.execute("SELECT * FROM export_wide")))
