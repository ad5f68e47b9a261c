"""Corpus templates for INSERT/UPDATE/DELETE, TTL and timestamps, LWT, batches, counters, static columns
and UDT DDL (see generate.py)."""

from gen_types import ALL, vals

IGN = "-- @ignore-values\n"

KV = "CREATE TABLE t (k int, c int, v int, w text, PRIMARY KEY (k, c))"


def udt_ddl(c):
    cases = [
        ("create_simple", ["CREATE TYPE u (a int, b text)", "CREATE TYPE IF NOT EXISTS u (a int)",
                           "CREATE TYPE u (a int)"]),
        ("create_nested", ["CREATE TYPE a (x int)", "CREATE TYPE b (y frozen<a>, z list<frozen<a>>)",
                           "CREATE TABLE t (k int PRIMARY KEY, v frozen<b>)",
                           "INSERT INTO t (k, v) VALUES (1, {y: {x: 1}, z: [{x: 2}, {x: 3}]})", "SELECT * FROM t"]),
        ("create_nonfrozen_nested", ["CREATE TYPE a (x int)", "CREATE TYPE b (y a)"]),
        ("create_duplicate_field", ["CREATE TYPE u (a int, a text)"]),
        ("create_self_reference", ["CREATE TYPE u (a frozen<u>)"]),
        ("create_unknown_field_type", ["CREATE TYPE u (a nosuchtype)"]),
        ("create_counter_field", ["CREATE TYPE u (a counter)"]),
        ("create_reserved_name", ["CREATE TYPE int (a int)", "CREATE TYPE \"text\" (a int)"]),
        ("alter_add_field", ["CREATE TYPE u (a int)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)",
                             "INSERT INTO t (k, v) VALUES (1, {a: 1})", "ALTER TYPE u ADD b text",
                             "SELECT * FROM t", "INSERT INTO t (k, v) VALUES (2, {a: 2, b: 'x'})", "SELECT * FROM t"]),
        ("alter_add_existing", ["CREATE TYPE u (a int)", "ALTER TYPE u ADD a text", "ALTER TYPE u ADD IF NOT EXISTS a text"]),
        ("alter_rename_field", ["CREATE TYPE u (a int, b int)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)",
                                "INSERT INTO t (k, v) VALUES (1, {a: 1, b: 2})", "ALTER TYPE u RENAME a TO aa",
                                "SELECT v.aa, v.b FROM t", "SELECT v.a FROM t", "ALTER TYPE u RENAME nope TO x",
                                "ALTER TYPE u RENAME IF EXISTS nope TO x"]),
        ("alter_field_type", ["CREATE TYPE u (a int)", "ALTER TYPE u ALTER a TYPE bigint"]),
        ("alter_unknown_type", ["ALTER TYPE nope ADD a int", "ALTER TYPE IF EXISTS nope ADD a int"]),
        ("drop_in_use", ["CREATE TYPE u (a int)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)", "DROP TYPE u",
                         "DROP TABLE t", "DROP TYPE u", "DROP TYPE u", "DROP TYPE IF EXISTS u"]),
        ("drop_used_by_type", ["CREATE TYPE a (x int)", "CREATE TYPE b (y frozen<a>)", "DROP TYPE a"]),
        ("qualified_names", ["CREATE TYPE {ks}.u (a int)", "CREATE TABLE {ks}.t (k int PRIMARY KEY, v frozen<{ks}.u>)",
                             "CREATE KEYSPACE {ks}_2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                             "CREATE TABLE {ks}_2.t (k int PRIMARY KEY, v frozen<{ks}.u>)"]),
        ("udt_in_collections", ["CREATE TYPE u (a int, b text)",
                                "CREATE TABLE t (k int PRIMARY KEY, l list<frozen<u>>, s set<frozen<u>>, m map<frozen<u>, int>)",
                                "INSERT INTO t (k, l, s, m) VALUES (1, [{a: 2}, {a: 1}], {{a: 2, b: 'z'}, {a: 1, b: 'y'}}, {{a: 3}: 1, {a: 1}: 2})",
                                "SELECT * FROM t"]),
        ("udt_field_selection_errors", ["CREATE TYPE u (a int)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)",
                                        "INSERT INTO t (k, v) VALUES (1, {a: 1})", "SELECT v.nope FROM t",
                                        "SELECT k.a FROM t", "UPDATE t SET v.a = 2 WHERE k = 1"]),
        ("udt_quoted_fields", ["CREATE TYPE u (\"Aa\" int, bb int)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)",
                               "INSERT INTO t (k, v) VALUES (1, {\"Aa\": 1, bb: 2})", "SELECT v.\"Aa\", v.bb FROM t",
                               "INSERT INTO t (k, v) VALUES (2, {aa: 1})"]),
        ("tuple_nested", ["CREATE TABLE t (k int PRIMARY KEY, v tuple<int, tuple<text, list<int>>>)",
                          "INSERT INTO t (k, v) VALUES (1, (1, ('a', [1, 2])))", "SELECT * FROM t",
                          "INSERT INTO t (k, v) VALUES (2, (1, 'a'))"]),
        ("tuple_in_collections", ["CREATE TABLE t (k int PRIMARY KEY, s set<tuple<int, text>>, m map<int, tuple<int, int>>)",
                                  "INSERT INTO t (k, s, m) VALUES (1, {(2, 'a'), (1, 'b'), (1, 'a')}, {1: (1, 2)})",
                                  "SELECT * FROM t", "UPDATE t SET s = s + {(0, 'z')} WHERE k = 1", "SELECT s FROM t"]),
    ]
    for slug, st in cases:
        c.add("ddl_type", slug, st + ["SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = '{ks}'"])


def gen_insert_update_delete(c):
    ins = [
        ("basic", ["INSERT INTO t (k, c, v, w) VALUES (1, 1, 1, 'a')", "SELECT * FROM t"]),
        ("upsert_overwrites", ["INSERT INTO t (k, c, v) VALUES (1, 1, 1)", "INSERT INTO t (k, c, w) VALUES (1, 1, 'b')",
                               "INSERT INTO t (k, c, v) VALUES (1, 1, 2)", "SELECT * FROM t"]),
        ("only_key_columns", ["INSERT INTO t (k, c) VALUES (1, 1)", "SELECT * FROM t", "SELECT count(*) FROM t"]),
        ("missing_partition_key", ["INSERT INTO t (c, v) VALUES (1, 1)"]),
        ("missing_clustering_key", ["INSERT INTO t (k, v) VALUES (1, 1)"]),
        ("null_partition_key", ["INSERT INTO t (k, c, v) VALUES (null, 1, 1)"]),
        ("null_clustering_key", ["INSERT INTO t (k, c, v) VALUES (1, null, 1)"]),
        ("unknown_column", ["INSERT INTO t (k, c, nope) VALUES (1, 1, 1)"]),
        ("duplicate_column", ["INSERT INTO t (k, c, v, v) VALUES (1, 1, 1, 2)"]),
        ("count_mismatch", ["INSERT INTO t (k, c, v) VALUES (1, 1)", "INSERT INTO t (k, c) VALUES (1, 1, 1)"]),
        ("type_mismatch", ["INSERT INTO t (k, c, v) VALUES (1, 1, 'x')", "INSERT INTO t (k, c, w) VALUES (1, 1, 5)"]),
        ("null_value_deletes", ["INSERT INTO t (k, c, v, w) VALUES (1, 1, 1, 'a')", "INSERT INTO t (k, c, v) VALUES (1, 1, null)",
                                "SELECT * FROM t"]),
        ("unknown_table", ["INSERT INTO nope (k) VALUES (1)"]),
        ("unknown_keyspace", ["INSERT INTO nope.t (k, c) VALUES (1, 1)"]),
        ("qualified", ["INSERT INTO {ks}.t (k, c, v) VALUES (1, 1, 1)", "SELECT * FROM {ks}.t"]),
        ("case_insensitive_keywords", ["insert into T (K, C, V) values (1, 2, 3)", "select * from t"]),
        ("empty_string", ["INSERT INTO t (k, c, w) VALUES (1, 1, '')", "SELECT w FROM t"]),
        ("using_ttl_and_timestamp", ["INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING TTL 100000 AND TIMESTAMP 123",
                                     "SELECT writetime(v) FROM t", IGN + "SELECT ttl(v) FROM t"]),
        ("insert_into_view_rejected", ["SELECT * FROM system_schema.keyspaces WHERE keyspace_name = 'nope'"]),
        ("insert_system_rejected", ["INSERT INTO system.local (key) VALUES ('x')"]),
        ("many_rows_ordering", ["INSERT INTO t (k, c, v) VALUES (%d, %d, %d)" % (i % 5, i, i) for i in range(40)]
         + ["SELECT * FROM t", "SELECT k, count(*) FROM t GROUP BY k"]),
        ("large_text_value", ["INSERT INTO t (k, c, w) VALUES (1, 1, '%s')" % ("x" * 5000), "SELECT k, c FROM t"]),
        ("bind_marker_rejected", ["INSERT INTO t (k, c, v) VALUES (?, ?, ?)"]),
        ("set_clause_rejected", ["INSERT INTO t SET k = 1"]),
    ]
    for slug, st in ins:
        c.add("insert", slug, [KV] + st)
    upd = [
        ("basic", ["UPDATE t SET v = 1 WHERE k = 1 AND c = 1", "SELECT * FROM t"]),
        ("creates_row_without_marker", ["UPDATE t SET v = null WHERE k = 1 AND c = 1", "SELECT * FROM t",
                                        "UPDATE t SET v = 1 WHERE k = 1 AND c = 1", "UPDATE t SET v = null WHERE k = 1 AND c = 1",
                                        "SELECT * FROM t"]),
        ("multiple_columns", ["UPDATE t SET v = 1, w = 'a' WHERE k = 1 AND c = 1", "SELECT * FROM t"]),
        ("in_partition", ["UPDATE t SET v = 7 WHERE k IN (1, 2, 3) AND c = 1", "SELECT * FROM t"]),
        ("in_clustering", ["UPDATE t SET v = 7 WHERE k = 1 AND c IN (1, 2)", "SELECT * FROM t"]),
        ("missing_clustering", ["UPDATE t SET v = 1 WHERE k = 1"]),
        ("missing_partition", ["UPDATE t SET v = 1 WHERE c = 1"]),
        ("range_clustering", ["UPDATE t SET v = 1 WHERE k = 1 AND c > 1"]),
        ("set_primary_key", ["UPDATE t SET k = 2 WHERE k = 1 AND c = 1", "UPDATE t SET c = 2 WHERE k = 1 AND c = 1"]),
        ("non_key_where", ["UPDATE t SET v = 1 WHERE k = 1 AND c = 1 AND v = 2"]),
        ("unknown_column", ["UPDATE t SET nope = 1 WHERE k = 1 AND c = 1"]),
        ("type_mismatch", ["UPDATE t SET v = 'a' WHERE k = 1 AND c = 1"]),
        ("arith_on_int_rejected", ["UPDATE t SET v = v + 1 WHERE k = 1 AND c = 1"]),
        ("using_timestamp_order", ["UPDATE t USING TIMESTAMP 10 SET v = 1 WHERE k = 1 AND c = 1",
                                   "UPDATE t USING TIMESTAMP 5 SET v = 2 WHERE k = 1 AND c = 1",
                                   "SELECT v, writetime(v) FROM t",
                                   "UPDATE t USING TIMESTAMP 10 SET v = 3 WHERE k = 1 AND c = 1",
                                   "SELECT v, writetime(v) FROM t"]),
        ("tie_break_on_value", ["UPDATE t USING TIMESTAMP 10 SET w = 'b' WHERE k = 1 AND c = 1",
                                "UPDATE t USING TIMESTAMP 10 SET w = 'a' WHERE k = 1 AND c = 1",
                                "UPDATE t USING TIMESTAMP 10 SET w = 'c' WHERE k = 1 AND c = 1",
                                "UPDATE t USING TIMESTAMP 10 SET w = 'a' WHERE k = 1 AND c = 1", "SELECT w FROM t"]),
        ("qualified", ["UPDATE {ks}.t SET v = 1 WHERE k = 1 AND c = 1", "SELECT * FROM {ks}.t"]),
        ("if_exists_missing", ["UPDATE t SET v = 1 WHERE k = 1 AND c = 1 IF EXISTS", "SELECT * FROM t"]),
        ("token_where_rejected", ["UPDATE t SET v = 1 WHERE token(k) = 1 AND c = 1"]),
    ]
    for slug, st in upd:
        c.add("update", slug, [KV] + st)
    rows = [KV] + ["INSERT INTO t (k, c, v, w) VALUES (%d, %d, %d, 'w%d') USING TIMESTAMP 100" % (k, cc, k * 10 + cc, cc)
                   for k in range(3) for cc in range(4)]
    dels = [
        ("row", ["DELETE FROM t WHERE k = 1 AND c = 1"]),
        ("partition", ["DELETE FROM t WHERE k = 1"]),
        ("column", ["DELETE v FROM t WHERE k = 1 AND c = 1"]),
        ("columns_multi", ["DELETE v, w FROM t WHERE k = 1 AND c = 1"]),
        ("column_whole_partition_rejected", ["DELETE v FROM t WHERE k = 1"]),
        ("range_gt", ["DELETE FROM t WHERE k = 1 AND c > 1"]),
        ("range_between", ["DELETE FROM t WHERE k = 1 AND c >= 1 AND c < 3"]),
        ("range_le", ["DELETE FROM t WHERE k = 1 AND c <= 2"]),
        ("in_partition", ["DELETE FROM t WHERE k IN (0, 2)"]),
        ("in_clustering", ["DELETE FROM t WHERE k = 0 AND c IN (0, 3)"]),
        ("no_where", ["DELETE FROM t"]),
        ("clustering_only", ["DELETE FROM t WHERE c = 1"]),
        ("non_key_where", ["DELETE FROM t WHERE k = 1 AND v = 11"]),
        ("older_timestamp_noop", ["DELETE FROM t USING TIMESTAMP 50 WHERE k = 1"]),
        ("newer_timestamp", ["DELETE FROM t USING TIMESTAMP 150 WHERE k = 1 AND c = 2",
                             "INSERT INTO t (k, c, v) VALUES (1, 2, 99) USING TIMESTAMP 140",
                             "INSERT INTO t (k, c, v) VALUES (1, 2, 98) USING TIMESTAMP 160"]),
        ("same_timestamp_delete_wins", ["DELETE FROM t USING TIMESTAMP 100 WHERE k = 2 AND c = 0"]),
        ("unknown_column", ["DELETE nope FROM t WHERE k = 1 AND c = 1"]),
        ("delete_key_column", ["DELETE c FROM t WHERE k = 1 AND c = 1"]),
        ("if_exists", ["DELETE FROM t WHERE k = 1 AND c = 1 IF EXISTS", "DELETE FROM t WHERE k = 1 AND c = 1 IF EXISTS"]),
        ("if_condition", ["DELETE FROM t WHERE k = 1 AND c = 2 IF v = 0", "DELETE FROM t WHERE k = 1 AND c = 2 IF v = 12"]),
        ("using_ttl_rejected", ["DELETE FROM t USING TTL 10 WHERE k = 1"]),
        ("then_reinsert", ["DELETE FROM t WHERE k = 0", "INSERT INTO t (k, c) VALUES (0, 9)"]),
        ("tuple_range", ["DELETE FROM t WHERE k = 1 AND (c) > (1)"]),
        ("token_rejected", ["DELETE FROM t WHERE token(k) > 0"]),
    ]
    for slug, st in dels:
        c.add("delete", slug, rows + st + ["SELECT * FROM t"])
    for t in ALL:
        vs = vals(t)
        c.add("delete", "%s_cell_tombstone_roundtrip" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s, x int)" % t,
               "INSERT INTO t (k, v, x) VALUES (1, %s, 1)" % vs[0], "DELETE v FROM t WHERE k = 1", "SELECT * FROM t",
               "DELETE x FROM t WHERE k = 1", "SELECT * FROM t", "SELECT count(*) FROM t"])
        c.add("update", "%s_update_overwrite" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % t]
              + ["UPDATE t USING TIMESTAMP %d SET v = %s WHERE k = 1" % (10 + i, v) for i, v in enumerate(vs)]
              + ["SELECT v, writetime(v) FROM t"])
        c.add("insert", "%s_same_timestamp_tiebreak" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % t]
              + ["INSERT INTO t (k, v) VALUES (1, %s) USING TIMESTAMP 42" % v for v in vals(t)[::-1]]
              + ["SELECT v FROM t"])


def gen_ttl_timestamp(c):
    base = ["CREATE TABLE t (k int PRIMARY KEY, v int, w int)"]
    cases = [
        ("ttl_zero_means_none", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 0", "SELECT ttl(v) FROM t"]),
        ("ttl_negative", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL -1"]),
        ("ttl_max", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 630720000", IGN + "SELECT ttl(v) FROM t"]),
        ("ttl_too_large", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 630720001"]),
        ("ttl_per_column", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 100000", "UPDATE t SET w = 2 WHERE k = 1",
                            IGN + "SELECT ttl(v), ttl(w) FROM t", "SELECT ttl(w) FROM t"]),
        ("ttl_on_key_rejected", ["SELECT ttl(k) FROM t"]),
        ("timestamp_negative", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP -5", "SELECT writetime(v) FROM t"]),
        ("timestamp_huge", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 9223372036854775807",
                            "SELECT writetime(v) FROM t"]),
        ("timestamp_min", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP -9223372036854775808"]),
        ("timestamp_order_insert", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 100",
                                    "INSERT INTO t (k, v) VALUES (1, 2) USING TIMESTAMP 50", "SELECT v, writetime(v) FROM t"]),
        ("delete_then_older_insert", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 100",
                                      "DELETE FROM t USING TIMESTAMP 200 WHERE k = 1",
                                      "INSERT INTO t (k, v) VALUES (1, 2) USING TIMESTAMP 150", "SELECT * FROM t",
                                      "INSERT INTO t (k, v) VALUES (1, 3) USING TIMESTAMP 250", "SELECT * FROM t"]),
        ("column_delete_timestamp", ["INSERT INTO t (k, v, w) VALUES (1, 1, 1) USING TIMESTAMP 100",
                                     "DELETE v FROM t USING TIMESTAMP 99 WHERE k = 1", "SELECT * FROM t",
                                     "DELETE v FROM t USING TIMESTAMP 101 WHERE k = 1", "SELECT * FROM t"]),
        ("row_marker_ttl", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 100000", "UPDATE t SET w = 5 WHERE k = 1",
                            "SELECT * FROM t"]),
        ("default_ttl_table", ["ALTER TABLE t WITH default_time_to_live = 100000",
                               "INSERT INTO t (k, v) VALUES (1, 1)", IGN + "SELECT ttl(v) FROM t",
                               "INSERT INTO t (k, v) VALUES (2, 1) USING TTL 0", "SELECT ttl(v) FROM t WHERE k = 2"]),
        ("ttl_bind_in_update", ["UPDATE t USING TTL 100000 AND TIMESTAMP 5 SET v = 1 WHERE k = 1",
                                "SELECT writetime(v) FROM t", IGN + "SELECT ttl(v) FROM t"]),
        ("using_twice", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 5 AND TTL 6"]),
        ("ttl_non_integer", ["INSERT INTO t (k, v) VALUES (1, 1) USING TTL 'a'", "INSERT INTO t (k, v) VALUES (1, 1) USING TTL 1.5"]),
        ("timestamp_non_integer", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 'a'"]),
        ("writetime_null_column", ["INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 3", "SELECT writetime(w), ttl(w) FROM t"]),
        ("ttl_on_collection_rejected", ["CREATE TABLE t2 (k int PRIMARY KEY, l list<int>)",
                                        "INSERT INTO t2 (k, l) VALUES (1, [1]) USING TIMESTAMP 3",
                                        "SELECT writetime(l) FROM t2", "SELECT ttl(l) FROM t2"]),
        ("writetime_collection_elements", ["CREATE TABLE t2 (k int PRIMARY KEY, s set<int>)",
                                           "UPDATE t2 USING TIMESTAMP 10 SET s = s + {1} WHERE k = 1",
                                           "UPDATE t2 USING TIMESTAMP 20 SET s = s + {2} WHERE k = 1",
                                           "SELECT s, writetime(s), maxwritetime(s), minwritetime(s) FROM t2"]),
        ("range_tombstone_timestamp", ["CREATE TABLE t2 (k int, c int, v int, PRIMARY KEY (k, c))",
                                       "INSERT INTO t2 (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 10",
                                       "INSERT INTO t2 (k, c, v) VALUES (1, 2, 2) USING TIMESTAMP 30",
                                       "DELETE FROM t2 USING TIMESTAMP 20 WHERE k = 1 AND c >= 1", "SELECT * FROM t2"]),
    ]
    for slug, st in cases:
        c.add("ttl_timestamp", slug, base + st)


def gen_lwt(c):
    base = ["CREATE TABLE t (k int, c int, v int, w text, s int static, l list<int>, m map<text, int>, PRIMARY KEY (k, c))",
            "INSERT INTO t (k, c, v, w, l, m) VALUES (1, 1, 10, 'a', [1, 2], {'x': 1})",
            "UPDATE t SET s = 5 WHERE k = 1"]
    stmts = [
        "INSERT INTO t (k, c, v) VALUES (1, 1, 11) IF NOT EXISTS",
        "INSERT INTO t (k, c, v) VALUES (1, 2, 11) IF NOT EXISTS",
        "INSERT INTO t (k, c, v) VALUES (1, 2, 11) IF NOT EXISTS USING TTL 100000",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF EXISTS",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 9 IF EXISTS",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v = 10",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v = 99",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v > 5 AND w = 'a'",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v < 5 AND w = 'a'",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v != 10",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF v IN (1, 10)",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF w = null",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 9 IF v = null",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 9 IF v = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF l[0] = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF m['x'] = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF m['nope'] = null",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF l = [1, 2]",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF l CONTAINS 2",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF m CONTAINS KEY 'x'",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF s = 5",
        "UPDATE t SET s = 6 WHERE k = 1 IF s = 5",
        "UPDATE t SET s = 6 WHERE k = 1 IF s = 4",
        "UPDATE t SET s = 6 WHERE k = 1 IF EXISTS",
        "UPDATE t SET v = 11 WHERE k = 1 AND c IN (1, 2) IF v = 10",
        "UPDATE t SET v = 11 WHERE k IN (1, 2) AND c = 1 IF v = 10",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF k = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF c = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF nope = 1",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF EXISTS AND v = 10",
        "UPDATE t USING TIMESTAMP 5 SET v = 11 WHERE k = 1 AND c = 1 IF v = 10",
        "DELETE FROM t WHERE k = 1 AND c = 1 IF EXISTS",
        "DELETE FROM t WHERE k = 1 AND c = 1 IF v = 10",
        "DELETE FROM t WHERE k = 1 AND c = 1 IF v = 1",
        "DELETE FROM t WHERE k = 1 IF s = 5",
        "DELETE FROM t WHERE k = 1 IF EXISTS",
        "DELETE FROM t WHERE k = 1 AND c > 0 IF EXISTS",
        "DELETE v FROM t WHERE k = 1 AND c = 1 IF w = 'a'",
        "INSERT INTO t (k, c, v) VALUES (2, 1, 1) IF NOT EXISTS",
        "INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF EXISTS",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF NOT EXISTS",
        "UPDATE t SET v = 11 WHERE k = 1 AND c = 1 IF w > 'A' AND v >= 10 AND v <= 10",
    ]
    for i, s in enumerate(stmts):
        c.add("lwt", "stmt_%02d" % i, base + [s, "SELECT * FROM t"])
    c.add("lwt", "serial_read_after_cas", base + ["INSERT INTO t (k, c, v) VALUES (3, 1, 1) IF NOT EXISTS",
                                                  "UPDATE t SET v = 2 WHERE k = 3 AND c = 1 IF v = 1",
                                                  "UPDATE t SET v = 3 WHERE k = 3 AND c = 1 IF v = 1",
                                                  "SELECT * FROM t WHERE k = 3"])
    c.add("lwt", "counter_lwt_rejected", ["CREATE TABLE t (k int PRIMARY KEY, n counter)",
                                          "UPDATE t SET n = n + 1 WHERE k = 1 IF n = 0"])
    c.add("lwt", "if_not_exists_no_clustering", ["CREATE TABLE t (k int PRIMARY KEY, v int)",
                                                 "INSERT INTO t (k, v) VALUES (1, 1) IF NOT EXISTS",
                                                 "INSERT INTO t (k, v) VALUES (1, 2) IF NOT EXISTS",
                                                 "DELETE FROM t WHERE k = 1 IF EXISTS",
                                                 "INSERT INTO t (k, v) VALUES (1, 3) IF NOT EXISTS", "SELECT * FROM t"])
    for t in ALL:
        vs = vals(t)
        c.add("lwt", "%s_condition" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s, x int)" % t,
               "INSERT INTO t (k, v) VALUES (1, %s)" % vs[0],
               "UPDATE t SET x = 1 WHERE k = 1 IF v = %s" % vs[0],
               "UPDATE t SET x = 2 WHERE k = 1 IF v = %s" % vs[1],
               "UPDATE t SET x = 3 WHERE k = 1 IF v < %s" % vs[-1], "SELECT * FROM t"])


def gen_batch(c):
    base = [KV, "CREATE TABLE cnt (k int PRIMARY KEY, n counter)"]
    cases = [
        ("logged", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1); INSERT INTO t (k, c, v) VALUES (2, 1, 2); APPLY BATCH"),
        ("unlogged", "BEGIN UNLOGGED BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1); UPDATE t SET v = 5 WHERE k = 1 AND c = 2; APPLY BATCH"),
        ("counter_batch", "BEGIN COUNTER BATCH UPDATE cnt SET n = n + 1 WHERE k = 1; UPDATE cnt SET n = n + 2 WHERE k = 1; APPLY BATCH"),
        ("counter_in_logged_rejected", "BEGIN BATCH UPDATE cnt SET n = n + 1 WHERE k = 1; APPLY BATCH"),
        ("mixed_counter_rejected", "BEGIN COUNTER BATCH UPDATE cnt SET n = n + 1 WHERE k = 1; INSERT INTO t (k, c) VALUES (1, 1); APPLY BATCH"),
        ("using_timestamp", "BEGIN BATCH USING TIMESTAMP 77 INSERT INTO t (k, c, v) VALUES (1, 1, 1); INSERT INTO t (k, c, w) VALUES (1, 2, 'x'); APPLY BATCH"),
        ("inner_timestamp", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 5; INSERT INTO t (k, c, v) VALUES (1, 2, 1) USING TIMESTAMP 6; APPLY BATCH"),
        ("both_timestamps_rejected", "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO t (k, c, v) VALUES (1, 1, 1) USING TIMESTAMP 6; APPLY BATCH"),
        ("same_cell_twice", "BEGIN BATCH USING TIMESTAMP 9 INSERT INTO t (k, c, v) VALUES (1, 1, 1); INSERT INTO t (k, c, v) VALUES (1, 1, 2); APPLY BATCH"),
        ("insert_then_delete", "BEGIN BATCH USING TIMESTAMP 9 INSERT INTO t (k, c, v) VALUES (1, 1, 1); DELETE FROM t WHERE k = 1 AND c = 1; APPLY BATCH"),
        ("lwt_same_partition", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS; INSERT INTO t (k, c, v) VALUES (1, 2, 2) IF NOT EXISTS; APPLY BATCH"),
        ("lwt_cross_partition_rejected", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS; INSERT INTO t (k, c, v) VALUES (2, 2, 2); APPLY BATCH"),
        ("lwt_mixed_conditions", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) IF NOT EXISTS; UPDATE t SET v = 3 WHERE k = 1 AND c = 2 IF v = 3; APPLY BATCH"),
        ("select_in_batch_rejected", "BEGIN BATCH SELECT * FROM t; APPLY BATCH"),
        ("ddl_in_batch_rejected", "BEGIN BATCH CREATE TABLE x (k int PRIMARY KEY); APPLY BATCH"),
        ("empty_batch", "BEGIN BATCH APPLY BATCH"),
        ("ttl_in_batch_header_rejected", "BEGIN BATCH USING TTL 10 INSERT INTO t (k, c, v) VALUES (1, 1, 1); APPLY BATCH"),
        ("unknown_table", "BEGIN BATCH INSERT INTO nope (k) VALUES (1); APPLY BATCH"),
        ("qualified_tables", "BEGIN BATCH INSERT INTO {ks}.t (k, c, v) VALUES (1, 1, 1); UPDATE {ks}.t SET v = 2 WHERE k = 1 AND c = 1; APPLY BATCH"),
        ("unlogged_multi_partition", "BEGIN UNLOGGED BATCH " + " ".join("INSERT INTO t (k, c, v) VALUES (%d, 0, %d);" % (i, i) for i in range(10)) + " APPLY BATCH"),
        ("range_delete_in_batch", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 5, 5); DELETE FROM t WHERE k = 1 AND c < 3; APPLY BATCH"),
        ("static_and_rows", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (3, 1, 1); UPDATE t SET w = 'z' WHERE k = 3 AND c = 2; APPLY BATCH"),
        ("lowercase_keywords", "begin batch insert into t (k, c, v) values (4, 4, 4); apply batch"),
        ("missing_semicolons", "BEGIN BATCH INSERT INTO t (k, c, v) VALUES (1, 1, 1) INSERT INTO t (k, c, v) VALUES (2, 1, 2) APPLY BATCH"),
    ]
    pre = ["INSERT INTO t (k, c, v) VALUES (1, 3, 3) USING TIMESTAMP 1"]
    for slug, b in cases:
        c.add("batch", slug, base + pre + [b, "SELECT * FROM t", "SELECT * FROM cnt"])


def gen_counters(c):
    base = ["CREATE TABLE t (k int, c int, n counter, m counter, PRIMARY KEY (k, c))"]
    cases = [
        ("increment", ["UPDATE t SET n = n + 1 WHERE k = 1 AND c = 1"]),
        ("decrement", ["UPDATE t SET n = n - 5 WHERE k = 1 AND c = 1"]),
        ("multiple", ["UPDATE t SET n = n + 1, m = m - 1 WHERE k = 1 AND c = 1", "UPDATE t SET n = n + 10 WHERE k = 1 AND c = 1"]),
        ("negative_literal", ["UPDATE t SET n = n + -3 WHERE k = 1 AND c = 1"]),
        ("set_rejected", ["UPDATE t SET n = 5 WHERE k = 1 AND c = 1"]),
        ("insert_rejected", ["INSERT INTO t (k, c, n) VALUES (1, 1, 1)"]),
        ("reverse_order", ["UPDATE t SET n = 1 + n WHERE k = 1 AND c = 1"]),
        ("other_column", ["UPDATE t SET n = m + 1 WHERE k = 1 AND c = 1"]),
        ("delete", ["UPDATE t SET n = n + 1 WHERE k = 1 AND c = 1", "DELETE n FROM t WHERE k = 1 AND c = 1"]),
        ("delete_row", ["UPDATE t SET n = n + 1 WHERE k = 1 AND c = 1", "DELETE FROM t WHERE k = 1 AND c = 1"]),
        ("using_ttl_rejected", ["UPDATE t USING TTL 10 SET n = n + 1 WHERE k = 1 AND c = 1"]),
        ("using_timestamp_rejected", ["UPDATE t USING TIMESTAMP 10 SET n = n + 1 WHERE k = 1 AND c = 1"]),
        ("in_clause", ["UPDATE t SET n = n + 2 WHERE k IN (1, 2) AND c IN (1, 2)"]),
        ("bigint_bounds", ["UPDATE t SET n = n + 9223372036854775807 WHERE k = 1 AND c = 1",
                           "UPDATE t SET n = n + 1 WHERE k = 1 AND c = 1"]),
        ("aggregates", ["UPDATE t SET n = n + %d WHERE k = 1 AND c = %d" % (i, i) for i in range(1, 5)]
         + ["SELECT sum(n), max(n), min(n), avg(n), count(n) FROM t WHERE k = 1"]),
        ("writetime_rejected", ["UPDATE t SET n = n + 1 WHERE k = 1 AND c = 1", IGN + "SELECT writetime(n) FROM t", "SELECT ttl(n) FROM t"]),
        ("float_increment_rejected", ["UPDATE t SET n = n + 1.5 WHERE k = 1 AND c = 1"]),
        ("null_increment", ["UPDATE t SET n = n + null WHERE k = 1 AND c = 1"]),
        ("cast", ["UPDATE t SET n = n + 3 WHERE k = 1 AND c = 1", "SELECT CAST(n AS text), CAST(n AS double) FROM t"]),
        ("json", ["UPDATE t SET n = n + 3 WHERE k = 1 AND c = 1", "SELECT JSON * FROM t"]),
        ("truncate", ["UPDATE t SET n = n + 3 WHERE k = 1 AND c = 1", "TRUNCATE t"]),
    ]
    for slug, st in cases:
        c.add("counters", slug, base + st + ["SELECT * FROM t"])
    for slug, ddl in (("mixed_table_rejected", "CREATE TABLE x (k int PRIMARY KEY, n counter, v int)"),
                      ("counter_pk_rejected", "CREATE TABLE x (k counter PRIMARY KEY, v int)"),
                      ("counter_static", "CREATE TABLE x (k int, c int, n counter static, m counter, PRIMARY KEY (k, c))"),
                      ("counter_only_pk", "CREATE TABLE x (k int PRIMARY KEY, n counter)"),
                      ("counter_ttl_rejected", "CREATE TABLE x (k int PRIMARY KEY, n counter) WITH default_time_to_live = 10"),
                      ("counter_list_rejected", "CREATE TABLE x (k int PRIMARY KEY, n list<counter>)")):
        c.add("counters", slug, [ddl, "UPDATE x SET n = n + 1 WHERE k = 1", "SELECT * FROM x"])
    c.add("counters", "alter_add_counter", ["CREATE TABLE x (k int PRIMARY KEY, n counter)", "ALTER TABLE x ADD m counter",
                                            "ALTER TABLE x ADD v int", "UPDATE x SET m = m + 4 WHERE k = 1", "SELECT * FROM x"])


def gen_static(c):
    base = ["CREATE TABLE t (k int, c int, v int, s int static, s2 text static, PRIMARY KEY (k, c))"]
    cases = [
        ("static_only_insert", ["INSERT INTO t (k, s) VALUES (1, 5)"]),
        ("static_shared", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "INSERT INTO t (k, c, v) VALUES (1, 2, 2)",
                           "UPDATE t SET s = 6 WHERE k = 1"]),
        ("static_update_with_clustering", ["UPDATE t SET s = 6 WHERE k = 1 AND c = 1"]),
        ("static_and_regular_update", ["UPDATE t SET s = 6, v = 1 WHERE k = 1 AND c = 1"]),
        ("static_update_no_clustering_regular", ["UPDATE t SET v = 1 WHERE k = 1"]),
        ("delete_static", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "DELETE s FROM t WHERE k = 1"]),
        ("delete_static_with_clustering", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "DELETE s FROM t WHERE k = 1 AND c = 1"]),
        ("delete_rows_keep_static", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "DELETE FROM t WHERE k = 1 AND c = 1"]),
        ("delete_partition", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "DELETE FROM t WHERE k = 1"]),
        ("select_static_only", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "INSERT INTO t (k, c, v) VALUES (1, 2, 2)",
                                "SELECT s FROM t", "SELECT k, s FROM t WHERE k = 1", "SELECT DISTINCT k, s FROM t"]),
        ("select_with_clustering_filter", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)",
                                           "SELECT * FROM t WHERE k = 1 AND c = 2", "SELECT s FROM t WHERE k = 1 AND c = 2",
                                           "SELECT count(*) FROM t WHERE k = 1 AND c = 2"]),
        ("static_no_rows_count", ["INSERT INTO t (k, s) VALUES (1, 5)", "SELECT count(*) FROM t", "SELECT count(s) FROM t"]),
        ("static_lwt", ["INSERT INTO t (k, s) VALUES (1, 5) IF NOT EXISTS", "INSERT INTO t (k, s) VALUES (1, 6) IF NOT EXISTS",
                        "UPDATE t SET s = 7 WHERE k = 1 IF s = 5"]),
        ("static_ttl", ["INSERT INTO t (k, s) VALUES (1, 5) USING TTL 100000 AND TIMESTAMP 10", "SELECT writetime(s) FROM t",
                        IGN + "SELECT ttl(s) FROM t"]),
        ("static_order_by", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "INSERT INTO t (k, c, v) VALUES (1, 2, 2)",
                             "SELECT * FROM t WHERE k = 1 ORDER BY c DESC"]),
        ("static_in_query", ["INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 5)", "INSERT INTO t (k, s) VALUES (2, 6)",
                             "SELECT * FROM t WHERE k IN (2, 1)"]),
        ("static_timestamp_conflict", ["INSERT INTO t (k, c, s) VALUES (1, 1, 5) USING TIMESTAMP 10",
                                       "INSERT INTO t (k, c, s) VALUES (1, 2, 6) USING TIMESTAMP 9", "SELECT * FROM t"]),
        ("insert_static_without_clustering_but_regular", ["INSERT INTO t (k, s, v) VALUES (1, 5, 5)"]),
        ("static_json", ["INSERT INTO t JSON '{\"k\": 1, \"s\": 3}'", "SELECT JSON * FROM t"]),
    ]
    for slug, st in cases:
        c.add("static_columns", slug, base + st + ["SELECT * FROM t"])
    for slug, ddl in (("no_clustering_rejected", "CREATE TABLE x (k int PRIMARY KEY, s int static)"),
                      ("static_pk_rejected", "CREATE TABLE x (k int static, c int, PRIMARY KEY (k, c))"),
                      ("static_ck_rejected", "CREATE TABLE x (k int, c int static, PRIMARY KEY (k, c))"),
                      ("static_collection", "CREATE TABLE x (k int, c int, s set<int> static, PRIMARY KEY (k, c))"),
                      ("alter_add_static", "CREATE TABLE x (k int, c int, PRIMARY KEY (k, c))")):
        c.add("static_columns", slug, [ddl, "ALTER TABLE x ADD s2 int static", "INSERT INTO x (k, s2) VALUES (1, 1)",
                                       "SELECT * FROM x"])
    for t in ALL:
        vs = vals(t)
        c.add("static_columns", "%s_static_type" % t,
              ["CREATE TABLE t (k int, c int, s %s static, PRIMARY KEY (k, c))" % t,
               "INSERT INTO t (k, c, s) VALUES (1, 1, %s)" % vs[0], "INSERT INTO t (k, c) VALUES (1, 2)",
               "UPDATE t SET s = %s WHERE k = 1" % vs[-1], "SELECT * FROM t", "SELECT DISTINCT k, s FROM t"])


def generate(c):
    gen_insert_update_delete(c)
    gen_ttl_timestamp(c)
    gen_lwt(c)
    gen_batch(c)
    gen_counters(c)
    gen_static(c)
