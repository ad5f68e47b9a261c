"""Statements whose PREPARED metadata (bind variables and result columns) the python suite compares with
what Cassandra 5.0.9 answered; the golden file is golden/prepared_bind_metadata.json.

Re-record it from a real Cassandra (never edit it by hand):
    $VENV/bin/python prepared_bind_cases.py record 127.0.0.56 9042
"""

import json
import os
import sys

KS = "prepared_binds"
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "prepared_bind_metadata.json")

SCHEMA = [
    "CREATE TYPE addr (street text, zip int)",
    "CREATE TABLE kv (k int PRIMARY KEY, v int, t text, b blob, dt date, ts timestamp, tu timeuuid,"
    " d decimal)",
    "CREATE TABLE cl (k int, a int, b text, v int, PRIMARY KEY (k, a, b))",
    "CREATE TABLE comp (k1 int, k2 text, c int, v int, PRIMARY KEY ((k1, k2), c))",
    "CREATE TABLE coll (k int PRIMARY KEY, m map<text, int>, l list<int>, s set<text>,"
    " fm frozen<map<int, text>>, fl frozen<list<text>>, u addr, fu frozen<addr>, tp tuple<int, text>)",
    "CREATE TABLE cnt (k int PRIMARY KEY, c counter)",
    "CREATE TABLE vec (k int PRIMARY KEY, v vector<float, 3>)",
]

STATEMENTS = [
    # INSERT
    "INSERT INTO kv (k, v) VALUES (?, ?)",
    "INSERT INTO kv (k, v) VALUES (?, fromJson(?))",
    "INSERT INTO kv (k, t) VALUES (fromJson(?), fromJson(?))",
    "INSERT INTO kv JSON ?",
    "INSERT INTO kv JSON ? DEFAULT UNSET",
    "INSERT INTO kv (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?",
    "INSERT INTO kv (k, v) VALUES (?, ?) USING TIMESTAMP ?",
    "INSERT INTO kv (k, b) VALUES (?, intAsBlob(?))",
    "INSERT INTO kv (k, v) VALUES (?, blobAsInt(?))",
    "INSERT INTO kv (k, dt) VALUES (?, toDate(?))",
    "INSERT INTO kv (k, ts, tu) VALUES (?, ?, now())",
    "INSERT INTO kv (k, tu, ts) VALUES (?, now(), toTimestamp(now()))",
    "INSERT INTO kv (k, v) VALUES (:key, :val)",
    "INSERT INTO kv (k, v) VALUES (?, (int)?)",
    "INSERT INTO kv (k, t) VALUES (?, (text)?)",
    "INSERT INTO kv (k, v) VALUES (?, ?) IF NOT EXISTS",
    "INSERT INTO kv (k, d) VALUES (?, ?)",
    "INSERT INTO coll (k, m, l, s) VALUES (?, ?, ?, ?)",
    "INSERT INTO coll (k, m) VALUES (?, {'a': ?, ?: 2})",
    "INSERT INTO coll (k, l, s) VALUES (?, [?, ?], {?})",
    "INSERT INTO coll (k, u) VALUES (?, {street: ?, zip: ?})",
    "INSERT INTO coll (k, fu, fm) VALUES (?, ?, ?)",
    "INSERT INTO coll (k, tp) VALUES (?, (?, ?))",
    "INSERT INTO vec (k, v) VALUES (?, ?)",
    "INSERT INTO vec (k, v) VALUES (?, [?, ?, ?])",
    # UPDATE
    "UPDATE coll SET m[?] = ? WHERE k = ?",
    "UPDATE coll SET l[?] = ? WHERE k = ?",
    "UPDATE coll SET s = s + ? WHERE k = ?",
    "UPDATE coll SET s = s - ? WHERE k = ?",
    "UPDATE coll SET m = m + ? WHERE k = ?",
    "UPDATE coll SET m = m - ? WHERE k = ?",
    "UPDATE coll SET l = ? + l WHERE k = ?",
    "UPDATE coll SET l = l + ? WHERE k = ?",
    "UPDATE coll SET l = l - ? WHERE k = ?",
    "UPDATE coll SET m += ? WHERE k = ?",
    "UPDATE coll SET s -= ? WHERE k = ?",
    "UPDATE coll SET u.zip = ?, u.street = ? WHERE k = ?",
    "UPDATE coll SET m['x'] = ? WHERE k = ? IF m[?] = ?",
    "UPDATE coll SET l = ? WHERE k = ? IF l[?] = ?",
    "UPDATE coll SET m = ? WHERE k = ? IF m[?] IN (?, ?)",
    "UPDATE coll SET m = ? WHERE k = ? IF m[?] IN ?",
    "UPDATE coll SET u = ? WHERE k = ? IF u.zip = ?",
    "UPDATE coll SET s = ? WHERE k = ? IF s CONTAINS ?",
    "UPDATE kv USING TTL ? AND TIMESTAMP ? SET v = ? WHERE k = ?",
    "UPDATE kv USING TIMESTAMP ? SET v = ? WHERE k IN ?",
    "UPDATE kv SET v = ? WHERE k IN (?, ?)",
    "UPDATE kv SET v = blobAsInt(?) WHERE k = ?",
    "UPDATE kv SET v = ? WHERE k = fromJson(?)",
    "UPDATE kv SET v = ? WHERE k = ? IF v = ? AND t IN ?",
    "UPDATE kv SET v = ? WHERE k = ? IF v > ?",
    "UPDATE kv SET v = :v WHERE k = :k IF t = :t",
    "UPDATE cnt SET c = c + ? WHERE k = ?",
    "UPDATE cnt SET c = c - ? WHERE k = ?",
    "UPDATE cl SET v = ? WHERE k = ? AND a = ? AND b = ?",
    "UPDATE comp SET v = ? WHERE k1 = ? AND k2 = ? AND c IN ?",
    # DELETE
    "DELETE m[?] FROM coll WHERE k = ?",
    "DELETE l[?] FROM coll WHERE k = ?",
    "DELETE u.zip FROM coll WHERE k = ?",
    "DELETE FROM kv USING TIMESTAMP ? WHERE k = ?",
    "DELETE FROM cl WHERE k = ? AND a > ?",
    "DELETE FROM cl WHERE k = ? AND (a, b) = (?, ?)",
    "DELETE FROM kv WHERE k = ? IF EXISTS",
    "DELETE FROM kv WHERE k = ? IF v = ?",
    "DELETE FROM kv WHERE k IN ?",
    # SELECT
    "SELECT * FROM kv WHERE k = ?",
    "SELECT * FROM kv WHERE k = fromJson(?)",
    "SELECT * FROM kv WHERE k = blobAsInt(?)",
    "SELECT * FROM kv WHERE k = (int)?",
    "SELECT * FROM kv WHERE token(k) > ?",
    "SELECT * FROM kv WHERE token(k) > token(?)",
    "SELECT * FROM kv WHERE token(k) = token(?)",
    "SELECT * FROM comp WHERE token(k1, k2) >= ? AND token(k1, k2) < ?",
    "SELECT * FROM comp WHERE token(k1, k2) > token(?, ?)",
    "SELECT * FROM kv WHERE k IN ?",
    "SELECT * FROM kv WHERE k IN (?, ?)",
    "SELECT * FROM kv WHERE k = :key",
    "SELECT * FROM cl WHERE k = ? AND a IN ?",
    "SELECT * FROM cl WHERE k = ? AND a IN (?, ?)",
    "SELECT * FROM cl WHERE k = ? AND (a, b) > (?, ?)",
    "SELECT * FROM cl WHERE k = ? AND (a, b) = (?, ?)",
    "SELECT * FROM cl WHERE k = ? AND (a, b) IN ?",
    "SELECT * FROM cl WHERE k = ? AND (a, b) IN ((?, ?), (?, ?))",
    "SELECT * FROM cl WHERE k = ? AND (a, b) IN (?, ?)",
    "SELECT * FROM cl WHERE k = ? AND (a, b) > ?",
    "SELECT * FROM cl WHERE k = ? AND (a, b) >= (?, ?) AND (a) < (?)",
    "SELECT * FROM cl WHERE k = ? AND a > ? AND a <= ?",
    "SELECT * FROM cl WHERE k = :k AND a = :a",
    "SELECT * FROM cl WHERE k = ? LIMIT ?",
    "SELECT * FROM cl PER PARTITION LIMIT ? LIMIT ?",
    "SELECT * FROM cl WHERE k = ? ORDER BY a DESC LIMIT ?",
    "SELECT * FROM cl WHERE k = ? AND v = ? ALLOW FILTERING",
    "SELECT * FROM cl WHERE k = ? AND v IN ? ALLOW FILTERING",
    "SELECT * FROM cl WHERE k = ? AND v IN (?, ?) ALLOW FILTERING",
    "SELECT * FROM kv WHERE v > ? AND t = ? ALLOW FILTERING",
    "SELECT * FROM comp WHERE k1 = ? AND k2 = ?",
    "SELECT * FROM comp WHERE k1 = ? AND k2 IN ?",
    "SELECT * FROM comp WHERE k1 IN ? AND k2 = ? AND c = ?",
    "SELECT m[?] FROM coll WHERE k = ?",
    "SELECT m[?..?] FROM coll WHERE k = ?",
    "SELECT s[?] FROM coll WHERE k = ?",
    "SELECT l[?] FROM coll WHERE k = ?",
    "SELECT u.zip, fu.street FROM coll WHERE k = ?",
    "SELECT * FROM coll WHERE m[?] = ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE k = ? AND m[?] = ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE m CONTAINS ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE m CONTAINS KEY ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE l CONTAINS ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE s CONTAINS ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE fm CONTAINS KEY ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE fm = ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE tp = ? ALLOW FILTERING",
    "SELECT * FROM coll WHERE fu = ? ALLOW FILTERING",
    "SELECT k, blobAsInt(?) FROM kv WHERE k = ?",
    "SELECT k, intAsBlob(?) FROM kv",
    "SELECT k, toDate(?) FROM kv",
    "SELECT k, now(), toTimestamp(?) FROM kv",
    "SELECT k, ? FROM kv",
    "SELECT k, (int)? FROM kv",
    "SELECT k, v + ? FROM kv",
    "SELECT CAST(v AS text), writetime(v), ttl(v) FROM kv WHERE k = ?",
    "SELECT JSON * FROM kv WHERE k = ?",
    "SELECT JSON k, v FROM kv WHERE k IN ?",
    "SELECT DISTINCT k FROM kv WHERE token(k) >= ? LIMIT ?",
    "SELECT COUNT(*) FROM kv WHERE k = ?",
    "SELECT k, similarity_cosine(v, ?) FROM vec",
    "SELECT k, similarity_euclidean(v, ?) FROM vec WHERE k = ?",
    "SELECT k, similarity_dot_product(?, v) FROM vec",
    "SELECT k, similarity_cosine(v, [?, ?, ?]) FROM vec",
    # BATCH
    "BEGIN BATCH INSERT INTO kv (k, v) VALUES (?, ?); UPDATE kv SET t = ? WHERE k = ?; APPLY BATCH",
    "BEGIN BATCH USING TIMESTAMP ? INSERT INTO kv (k, v) VALUES (?, ?) APPLY BATCH",
    "BEGIN UNLOGGED BATCH DELETE m[?] FROM coll WHERE k = ?; INSERT INTO cl (k, a, b) VALUES (?, ?, ?)"
    " USING TTL ?; APPLY BATCH",
    "BEGIN COUNTER BATCH UPDATE cnt SET c = c + ? WHERE k = ? APPLY BATCH",
]


def type_name(t):
    return t.cql_parameterized_type()


def describe(session, query):
    """What PREPARE answers for `query`: bind variables, result columns and routing key indexes, or the
    error class and message."""
    try:
        p = session.prepare(query)
    except Exception as e:  # the error itself is the recorded answer
        return {"error": type(e).__name__, "message": str(getattr(e, "message", e))}
    return {
        "binds": [
            [c.keyspace_name, c.table_name, c.name, type_name(c.type)] for c in (p.column_metadata or [])
        ],
        "routing_key_indexes": p.routing_key_indexes,
        "result": [
            [c[2], type_name(c[3])] for c in (p.result_metadata or [])
        ],
    }


def create_schema(session):
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    session.execute(
        f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
    session.set_keyspace(KS)
    for ddl in SCHEMA:
        session.execute(ddl)


def record(host, port):
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=4, connect_timeout=10)
    try:
        session = cluster.connect()
        create_schema(session)
        out = {q: describe(session, q) for q in STATEMENTS}
        session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    finally:
        cluster.shutdown()
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    with open(GOLDEN, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"recorded {len(out)} statements into {GOLDEN}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "record":
        sys.exit(__doc__)
    record(sys.argv[2], int(sys.argv[3]))
