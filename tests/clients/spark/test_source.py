"""The Helenus Spark source (connectors/spark, issue 15) against a running node: Spark reads a
columnar table as column batches from the node's column-scan API, and must see exactly what
CQL sees: every type the source maps, composite partition keys and clustering columns, nulls,
deletes, expired TTLs, data both in SSTables and in the memtable; with the columns pruned and
comparisons pushed to the server (which must not change an answer); and bad requests to the
API get a 400 with a reason, never a hang or a crash.

  python test_source.py            (HELENUS_HOST, HELENUS_PORT, HELENUS_BIN, HELENUS_SPARK_JAR)

Plain asserts, no pytest: the suite's venv holds pyspark and the driver only.
"""
import datetime
import os
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

os.environ["TZ"] = "UTC"  # PySpark hands timestamps to Python in the process's zone
time.tzset()

from cassandra.cluster import Cluster  # noqa: E402
from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402

HOST = os.environ.get("HELENUS_HOST", "127.0.0.1")
PORT = int(os.environ.get("HELENUS_PORT", "9042"))
BIN = os.environ["HELENUS_BIN"]
JAR = os.environ["HELENUS_SPARK_JAR"]
KS = "spark_source_test"
COLUMNAR = "WITH extensions = {'helenus.layout': 'columnar'}"
N = 3000
CODES = ["USA", "FRA", "ALB", "CHN", None]


def nodetool(*args):
    subprocess.run([BIN, "nodetool", "-h", HOST, *args], check=True, timeout=300,
                   stdout=subprocess.DEVNULL)


def setup(session):
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    session.execute(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    session.execute(
        f"""CREATE TABLE {KS}.events (a int, b text, c bigint, month int, tone double, code text,
            f float, flag boolean, day date, at timestamp, id uuid, small smallint, tiny tinyint,
            raw blob, PRIMARY KEY ((a, b), c)) {COLUMNAR}""")
    session.execute(f"CREATE TABLE {KS}.plain (k int PRIMARY KEY, v int) {COLUMNAR}")
    session.execute(f"CREATE TABLE {KS}.rows (k int PRIMARY KEY, v int)")


def rows_for(seed, n, offset=0):
    r = random.Random(seed)
    out = []
    for i in range(offset, offset + n):
        maybe = lambda v: None if r.random() < 0.1 else v  # noqa: E731
        out.append((
            i % 97, f"p{i % 13}", i,
            maybe(197901 + r.randrange(72)), maybe(r.uniform(-10, 10)), r.choice(CODES),
            maybe(r.uniform(-1000, 1000)), maybe(r.random() < 0.5),
            maybe(datetime.date(1970, 1, 1) + datetime.timedelta(days=r.randrange(-4000, 20000))),
            maybe(datetime.datetime(2020, 1, 1) + datetime.timedelta(milliseconds=r.randrange(10**11))),
            maybe(uuid.UUID(int=r.getrandbits(128))), maybe(r.randrange(-32768, 32768)),
            maybe(r.randrange(-128, 128)), maybe(bytes(r.randrange(256) for _ in range(r.randrange(0, 9)))),
        ))
    return out


INSERT = (f"INSERT INTO {KS}.events (a, b, c, month, tone, code, f, flag, day, at, id, small, tiny, raw) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def load(session):
    ins = session.prepare(INSERT)
    execute_concurrent_with_args(session, ins, rows_for(1, N), concurrency=64, raise_on_first_error=True)
    r = random.Random(2)
    for _ in range(40):
        i = r.randrange(N)
        session.execute(f"DELETE FROM {KS}.events WHERE a = %s AND b = %s AND c = %s", (i % 97, f"p{i % 13}", i))
        i = r.randrange(N)
        session.execute(f"DELETE tone, code FROM {KS}.events WHERE a = %s AND b = %s AND c = %s",
                        (i % 97, f"p{i % 13}", i))
    j = r.randrange(97)
    session.execute(f"DELETE FROM {KS}.events WHERE a = %s AND b = %s", (j, f"p{j % 13}"))
    nodetool("flush", KS)
    # Expiring rows and more writes left in the memtable: read through the row path.
    ttl = session.prepare(INSERT + " USING TTL 1")
    execute_concurrent_with_args(session, ttl, rows_for(3, 200, offset=N), concurrency=32, raise_on_first_error=True)
    execute_concurrent_with_args(session, ins, rows_for(4, 300, offset=N + 200), concurrency=32,
                                 raise_on_first_error=True)
    session.execute(f"UPDATE {KS}.events SET tone = 99.5 WHERE a = 1 AND b = 'p1' AND c = 1")
    plain = session.prepare(f"INSERT INTO {KS}.plain (k, v) VALUES (?, ?)")
    execute_concurrent_with_args(session, plain, [(k, k * 3) for k in range(500)], concurrency=32)
    time.sleep(1.5)  # the TTL'd rows expire


COLUMNS = ["a", "b", "c", "month", "tone", "code", "f", "flag", "day", "at", "id", "small", "tiny", "raw"]


def normal(row):
    """A row as both sides can compare it: floats rounded as float32, ids as text, timestamps naive UTC."""
    out = []
    for name, v in zip(COLUMNS, row):
        if v is None:
            out.append(None)
        elif name == "f":
            out.append(round(float(v), 2))
        elif name == "id":
            out.append(str(v))
        elif name == "at":
            out.append(v.replace(tzinfo=None) if v.tzinfo is None else
                       v.astimezone(datetime.timezone.utc).replace(tzinfo=None))
        elif name == "raw":
            out.append(bytes(v))
        elif name == "day" and not isinstance(v, datetime.date):
            out.append(v.date() if hasattr(v, "date") else datetime.date(1970, 1, 1) + datetime.timedelta(days=v.days_from_epoch))
        else:
            out.append(v)
    return tuple(out)


def spark_session():
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName("helenus-source-test")
            .config("spark.jars", JAR)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
            .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .getOrCreate())


def check_rows(spark, session):
    df = spark.read.format("helenus").options(host=HOST, keyspace=KS, table="events").load()
    # As `SELECT *` orders them: the partition key, the clustering columns, the rest by name.
    assert df.columns == COLUMNS[:3] + sorted(COLUMNS[3:]), df.columns
    assert df.rdd.getNumPartitions() >= 2
    cql = {normal(r) for r in session.execute(f"SELECT {', '.join(COLUMNS)} FROM {KS}.events")}
    got = {normal(r) for r in df.select(*COLUMNS).collect()}
    assert len(cql) > N // 2, len(cql)
    assert got == cql, (len(got), len(cql), sorted(got - cql, key=str)[:3], sorted(cql - got, key=str)[:3])
    # A plain count reads no column at all.
    assert df.count() == len(cql)
    print(f"rows: {len(got)} rows of 14 columns equal through Spark and CQL")
    return df


def check_filters(df, session):
    cases = [
        ("month = 198012", "month = 198012"),
        ("tone > 5.5", "tone > 5.5"),
        ("code = 'ALB'", "code = 'ALB'"),
        ("small <= -100", "small <= -100"),
        ("day >= date'1990-01-01'", "day >= '1990-01-01'"),
        ("at < timestamp'2021-06-01 00:00:00'", "at < '2021-06-01 00:00:00+0000'"),
    ]
    for spark_where, cql_where in cases:
        plan = df.filter(spark_where)._jdf.queryExecution().executedPlan().toString()
        assert " where " in plan, f"{spark_where} was not pushed: {plan}"
        want = session.execute(f"SELECT count(*) FROM {KS}.events WHERE {cql_where} ALLOW FILTERING").one()[0]
        got = df.filter(spark_where).count()
        assert got == want, (spark_where, got, want)
    # The server skips rows by the pushed comparison; Spark still applies every filter.
    both = df.filter("code = 'USA' AND tone < 0").select("c", "tone").collect()
    want = {(r.c, r.tone) for r in session.execute(f"SELECT c, tone, code FROM {KS}.events") if r.code == "USA"
            and r.tone is not None and r.tone < 0}
    assert {(r.c, r.tone) for r in both} == want
    print(f"filters: {len(cases)} pushed comparisons answer as CQL's ALLOW FILTERING")


def check_aggregate(spark, session):
    from pyspark.sql import functions as F
    df = spark.read.format("helenus").options(host=HOST, keyspace=KS, table="plain", splits="5").load()
    assert df.rdd.getNumPartitions() >= 5
    row = df.agg(F.count("*"), F.sum("v"), F.max("k")).collect()[0]
    assert tuple(row) == (500, sum(k * 3 for k in range(500)), 499), row
    print("aggregate: count/sum/max over a split table")


def check_refusals(spark):
    base = f"http://{HOST}:10000/column_scan/{KS}"

    def status(path):
        try:
            with urllib.request.urlopen(base + path, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    for path, fragment in [
        ("/rows", b"stored as rows"),
        ("/nosuch", b"does not exist"),
        ("/events/data?end=5", b"'start'"),
        ("/events/data?start=x&end=5", b"must be a token"),
        ("/events/data?start=0&end=5&columns=zz", b"hex column name"),
        ("/events/data?start=0&end=5&columns=6e6f7065", b"has no column nope"),
        ("/events/data?start=0&end=5&where=eq.6d6f6e7468.01", b"wrong"),
        ("/events/data?start=0&end=5&where=like.6d6f6e7468.00000001", b"bad restriction"),
        ("/events/data?start=0&end=5&where=eq.61.00000001", b"key column"),
        ("/events?splits=many", b"splits must be a number"),
    ]:
        code, body = status(path)
        assert code in (400, 404) and fragment in body, (path, code, body)
    try:
        spark.read.format("helenus").options(host=HOST, keyspace=KS, table="rows").load().count()
        raise AssertionError("a rows table was read")
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        assert "stored as rows" in str(e), str(e)[:500]
    print("refusals: bad requests answered 400/404 with their reason")


def main():
    cluster = Cluster([HOST], port=PORT)
    session = cluster.connect()
    setup(session)
    load(session)
    spark = spark_session()
    try:
        spark.sparkContext.setLogLevel("ERROR")
        df = check_rows(spark, session)
        check_filters(df, session)
        check_aggregate(spark, session)
        check_refusals(spark)
    finally:
        spark.stop()
        session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
        cluster.shutdown()
    print("spark source: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
