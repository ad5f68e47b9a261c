"""Corpus templates for collections, tuples/UDTs, vectors, SELECT clauses and JSON (see generate.py)."""

from gen_types import ALL, NUMERIC, ORDERABLE, bad, shuffled, vals
import gen_dml
import gen_ddl

IGN = "-- @ignore-values\n"


def coll_lit(kind, xs):
    if kind == "list":
        return "[" + ", ".join(xs) + "]"
    return "{" + ", ".join(xs) + "}"


def gen_collections(c):
    for t in ALL:
        vs = vals(t)
        sh = shuffled(vs)
        for frozen in (False, True):
            fz = "frozen" if frozen else "plain"
            w = (lambda s: "frozen<%s>" % s) if frozen else (lambda s: s)
            # list
            st = ["CREATE TABLE t (k int PRIMARY KEY, l %s)" % w("list<%s>" % t),
                  "INSERT INTO t (k, l) VALUES (1, %s)" % coll_lit("list", sh),
                  "INSERT INTO t (k, l) VALUES (2, [])",
                  "INSERT INTO t (k, l) VALUES (3, %s)" % coll_lit("list", [vs[0], vs[0]]),
                  "SELECT k, l FROM t"]
            if not frozen:
                st += ["UPDATE t SET l = l + [%s] WHERE k = 1" % vs[0],
                       "UPDATE t SET l = [%s] + l WHERE k = 1" % vs[-1],
                       "UPDATE t SET l[0] = %s WHERE k = 1" % vs[1],
                       "UPDATE t SET l[100] = %s WHERE k = 1" % vs[1],
                       "DELETE l[1] FROM t WHERE k = 1",
                       "UPDATE t SET l = l - [%s] WHERE k = 1" % vs[0],
                       "SELECT l FROM t WHERE k = 1",
                       "UPDATE t SET l = l + [%s] WHERE k = 9" % vs[0],
                       "SELECT k, l FROM t WHERE k = 9"]
            else:
                st += ["UPDATE t SET l = l + [%s] WHERE k = 1" % vs[0],
                       "UPDATE t SET l[0] = %s WHERE k = 1" % vs[0]]
            c.add("types_collections", "list_%s_%s" % (t, fz), st)
            if t == "duration":
                c.add("types_collections", "set_duration_%s_rejected" % fz,
                      ["CREATE TABLE t (k int PRIMARY KEY, s %s)" % w("set<duration>")])
                continue
            # set
            st = ["CREATE TABLE t (k int PRIMARY KEY, s %s)" % w("set<%s>" % t),
                  "INSERT INTO t (k, s) VALUES (1, %s)" % coll_lit("set", sh),
                  "INSERT INTO t (k, s) VALUES (2, {})",
                  "INSERT INTO t (k, s) VALUES (3, %s)" % coll_lit("set", [vs[1], vs[1]]),
                  "SELECT k, s FROM t"]
            if not frozen:
                st += ["UPDATE t SET s = s + {%s} WHERE k = 2" % vs[-1],
                       "UPDATE t SET s = s - {%s} WHERE k = 1" % vs[0],
                       "DELETE s[%s] FROM t WHERE k = 1" % vs[1],
                       "SELECT k, s FROM t",
                       "SELECT s[%s] FROM t WHERE k = 1" % vs[-1],
                       "SELECT s[%s..%s] FROM t WHERE k = 1" % (vs[1], vs[-1]),
                       "SELECT k FROM t WHERE s CONTAINS %s ALLOW FILTERING" % vs[-1]]
            else:
                st += ["UPDATE t SET s = s + {%s} WHERE k = 2" % vs[-1],
                       "SELECT k FROM t WHERE s = %s ALLOW FILTERING" % coll_lit("set", vs)]
            c.add("types_collections", "set_%s_%s" % (t, fz), st)
            # map keyed by t
            m1 = ", ".join("%s: %d" % (v, i) for i, v in enumerate(sh))
            st = ["CREATE TABLE t (k int PRIMARY KEY, m %s)" % w("map<%s, int>" % t),
                  "INSERT INTO t (k, m) VALUES (1, {%s})" % m1,
                  "INSERT INTO t (k, m) VALUES (2, {})",
                  "SELECT k, m FROM t"]
            if not frozen:
                st += ["UPDATE t SET m[%s] = 100 WHERE k = 2" % vs[0],
                       "UPDATE t SET m = m + {%s: 7} WHERE k = 1" % vs[0],
                       "UPDATE t SET m = m - {%s} WHERE k = 1" % vs[-1],
                       "DELETE m[%s] FROM t WHERE k = 1" % vs[1],
                       "SELECT k, m FROM t",
                       "SELECT m[%s] FROM t WHERE k = 1" % vs[0],
                       "SELECT m[%s..%s] FROM t WHERE k = 1" % (vs[0], vs[-1]),
                       "SELECT k FROM t WHERE m CONTAINS KEY %s ALLOW FILTERING" % vs[0],
                       "SELECT k FROM t WHERE m CONTAINS 7 ALLOW FILTERING",
                       "SELECT k FROM t WHERE m[%s] = 7 ALLOW FILTERING" % vs[0]]
            c.add("types_collections", "map_key_%s_%s" % (t, fz), st)
        # map valued by t
        m2 = ", ".join("'k%d': %s" % (i, v) for i, v in enumerate(vs))
        c.add("types_collections", "map_value_%s" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, m map<text, %s>)" % t,
               "INSERT INTO t (k, m) VALUES (1, {%s})" % m2,
               "UPDATE t SET m['k0'] = %s WHERE k = 1" % vs[-1],
               "UPDATE t SET m['zz'] = null WHERE k = 1",
               "SELECT m, m['k0'], m['nope'] FROM t WHERE k = 1"])
        if t != "duration":
            c.add("types_collections", "frozen_list_%s_clustering" % t,
                  ["CREATE TABLE t (k int, c frozen<list<%s>>, v int, PRIMARY KEY (k, c))" % t]
                  + ["INSERT INTO t (k, c, v) VALUES (0, [%s], %d)" % (", ".join(vs[:i + 1]), i)
                     for i in range(len(vs))][::-1]
                  + ["INSERT INTO t (k, c, v) VALUES (0, [], 99)",
                     "SELECT c, v FROM t WHERE k = 0",
                     "SELECT v FROM t WHERE k = 0 AND c = [%s]" % vs[0],
                     "SELECT v FROM t WHERE k = 0 AND c > [%s]" % vs[0]])
            c.add("types_collections", "frozen_set_%s_partition_key" % t,
                  ["CREATE TABLE t (k frozen<set<%s>> PRIMARY KEY, v int)" % t,
                   "INSERT INTO t (k, v) VALUES (%s, 1)" % coll_lit("set", sh),
                   "INSERT INTO t (k, v) VALUES ({}, 2)",
                   "SELECT k, v, token(k) FROM t",
                   "SELECT v FROM t WHERE k = %s" % coll_lit("set", vs)])
        for j, b in enumerate(bad(t)[:1]):
            c.add("types_collections", "list_%s_bad_element" % t,
                  ["CREATE TABLE t (k int PRIMARY KEY, l list<%s>)" % t,
                   "INSERT INTO t (k, l) VALUES (1, [%s, %s])" % (vs[0], b)])
    for ddl, slug in (("CREATE TABLE t (k int PRIMARY KEY, l list<list<int>>)", "nested_nonfrozen_rejected"),
                      ("CREATE TABLE t (k int PRIMARY KEY, l list<frozen<list<int>>>)", "nested_frozen_list"),
                      ("CREATE TABLE t (k int PRIMARY KEY, l map<text, frozen<set<int>>>)", "nested_map_of_sets"),
                      ("CREATE TABLE t (k list<int> PRIMARY KEY)", "nonfrozen_pk_rejected"),
                      ("CREATE TABLE t (k int, c set<int>, PRIMARY KEY (k, c))", "nonfrozen_ck_rejected"),
                      ("CREATE TABLE t (k int PRIMARY KEY, s set<counter>)", "counter_set_rejected"),
                      ("CREATE TABLE t (k int PRIMARY KEY, s frozen<int>)", "frozen_non_collection")):
        c.add("types_collections", slug, [ddl, "INSERT INTO t (k, l) VALUES (1, [[1, 2], [3]])",
                                          "INSERT INTO t (k, l) VALUES (2, {'a': {3, 1, 2}})",
                                          "SELECT * FROM t"])
    c.add("types_collections", "list_index_out_of_bounds",
          ["CREATE TABLE t (k int PRIMARY KEY, l list<int>)", "INSERT INTO t (k, l) VALUES (1, [1, 2])",
           "UPDATE t SET l[5] = 3 WHERE k = 1", "UPDATE t SET l[-1] = 3 WHERE k = 1", "DELETE l[7] FROM t WHERE k = 1",
           "UPDATE t SET l[0] = 3 WHERE k = 2", "SELECT * FROM t"])
    c.add("types_collections", "null_in_collection_literal",
          ["CREATE TABLE t (k int PRIMARY KEY, l list<int>, s set<int>, m map<int, int>)",
           "INSERT INTO t (k, l) VALUES (1, [1, null])", "INSERT INTO t (k, s) VALUES (1, {null})",
           "INSERT INTO t (k, m) VALUES (1, {1: null})", "INSERT INTO t (k, m) VALUES (1, {null: 1})",
           "SELECT * FROM t"])
    c.add("types_collections", "empty_collection_is_null",
          ["CREATE TABLE t (k int PRIMARY KEY, l list<int>, s set<int>, m map<int, int>)",
           "INSERT INTO t (k, l, s, m) VALUES (1, [], {}, {})", "SELECT * FROM t",
           "UPDATE t SET l = l + [1] WHERE k = 1", "UPDATE t SET l = l - [1] WHERE k = 1", "SELECT * FROM t"])


def gen_tuple_udt(c):
    for t in ALL:
        vs = vals(t)
        c.add("types_tuple_udt", "tuple_%s_regular" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v tuple<%s, int>)" % t]
              + ["INSERT INTO t (k, v) VALUES (%d, (%s, %d))" % (i, v, i) for i, v in enumerate(vs)]
              + ["INSERT INTO t (k, v) VALUES (50, (%s))" % vs[0],
                 "INSERT INTO t (k, v) VALUES (51, (%s, null))" % vs[0],
                 "INSERT INTO t (k, v) VALUES (52, (%s, 1, 2))" % vs[0],
                 "SELECT k, v FROM t"])
        c.add("types_tuple_udt", "udt_%s_frozen" % t,
              ["CREATE TYPE u (a %s, b text)" % t,
               "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)"]
              + ["INSERT INTO t (k, v) VALUES (%d, {a: %s, b: 'x%d'})" % (i, v, i) for i, v in enumerate(vs)]
              + ["INSERT INTO t (k, v) VALUES (90, {b: 'only b'})",
                 "INSERT INTO t (k, v) VALUES (91, {c: 1})",
                 "SELECT k, v, v.a, v.b FROM t",
                 "UPDATE t SET v.a = %s WHERE k = 0" % vs[0]])
        c.add("types_tuple_udt", "udt_%s_nonfrozen_field_ops" % t,
              ["CREATE TYPE u (a %s, b int)" % t,
               "CREATE TABLE t (k int PRIMARY KEY, v u)",
               "INSERT INTO t (k, v) VALUES (1, {a: %s, b: 1})" % vs[0],
               "UPDATE t SET v.a = %s WHERE k = 1" % vs[-1],
               "UPDATE t SET v.b = null WHERE k = 1",
               "UPDATE t SET v.b = 5 WHERE k = 2",
               "SELECT k, v, v.a FROM t",
               "DELETE v.a FROM t WHERE k = 1",
               "SELECT k, v FROM t"])
        if t != "duration":
            c.add("types_tuple_udt", "tuple_%s_clustering_order" % t,
                  ["CREATE TABLE t (k int, c frozen<tuple<%s, int>>, PRIMARY KEY (k, c))" % t]
                  + ["INSERT INTO t (k, c) VALUES (0, (%s, %d))" % (v, 5 - i) for i, v in enumerate(shuffled(vs))]
                  + ["INSERT INTO t (k, c) VALUES (0, (%s, null))" % vs[0],
                     "SELECT c FROM t WHERE k = 0",
                     "SELECT c FROM t WHERE k = 0 AND c > (%s, 0)" % vs[0]])
            c.add("types_tuple_udt", "udt_%s_partition_key" % t,
                  ["CREATE TYPE u (a %s, b int)" % t,
                   "CREATE TABLE t (k frozen<u> PRIMARY KEY, v int)"]
                  + ["INSERT INTO t (k, v) VALUES ({a: %s, b: %d}, %d)" % (v, i, i) for i, v in enumerate(vs)]
                  + ["SELECT k, v FROM t", "SELECT v FROM t WHERE k = {a: %s, b: 0}" % vs[0]])
    gen_dml.udt_ddl(c)


def gen_vector(c):
    for t in ALL:
        vs = vals(t)
        v3 = (vs * 3)[:3]
        c.add("types_vector", "vector_%s_roundtrip" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, v vector<%s, 3>)" % t,
               "INSERT INTO t (k, v) VALUES (1, [%s])" % ", ".join(v3),
               "INSERT INTO t (k, v) VALUES (2, [%s])" % ", ".join(v3[:2]),
               "INSERT INTO t (k, v) VALUES (3, [%s, null, %s])" % (v3[0], v3[2]),
               "SELECT k, v FROM t",
               "UPDATE t SET v[0] = %s WHERE k = 1" % v3[1],
               "UPDATE t SET v = v + [%s] WHERE k = 1" % v3[1]])
        c.add("types_vector", "vector_%s_as_key" % t,
              ["CREATE TABLE t (k vector<%s, 2> PRIMARY KEY, v int)" % t,
               "INSERT INTO t (k, v) VALUES ([%s], 1)" % ", ".join(v3[:2]),
               "SELECT k, v FROM t",
               "CREATE TABLE t2 (k int, c vector<%s, 2>, PRIMARY KEY (k, c))" % t,
               "INSERT INTO t2 (k, c) VALUES (1, [%s])" % ", ".join(v3[:2]),
               "SELECT * FROM t2"])
    for dims in ("0", "-1", "1", "2", "8192", "a"):
        c.add("types_vector", "vector_dimension_%s" % dims.replace("-", "neg"),
              ["CREATE TABLE t (k int PRIMARY KEY, v vector<float, %s>)" % dims,
               "INSERT INTO t (k, v) VALUES (1, [1.0])", "SELECT * FROM t"])
    for fn in ("similarity_cosine", "similarity_euclidean", "similarity_dot_product"):
        c.add("types_vector", "%s_function" % fn,
              ["CREATE TABLE t (k int PRIMARY KEY, v vector<float, 3>)",
               "INSERT INTO t (k, v) VALUES (1, [1.0, 2.0, 3.0])",
               "INSERT INTO t (k, v) VALUES (2, [0.5, -1.0, 0.0])",
               "INSERT INTO t (k, v) VALUES (3, [0.0, 0.0, 0.0])",
               "SELECT k, %s(v, [1.0, 0.0, 0.0]) FROM t" % fn,
               "SELECT k, %s(v, [1.0, 0.0]) FROM t" % fn])
    for ddl in ("vector<int, 2>", "vector<text, 2>", "vector<frozen<list<int>>, 2>", "vector<vector<float, 2>, 2>",
                "frozen<vector<float, 2>>", "list<vector<float, 2>>", "vector<list<int>, 2>"):
        slug = ddl.replace("<", "_").replace(">", "").replace(", ", "_").replace(",", "_")
        c.add("types_vector", "vector_nested_%s" % slug,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % ddl, "SELECT * FROM t"])
    c.add("types_vector", "vector_sai_ann",
          ["CREATE TABLE t (k int PRIMARY KEY, v vector<float, 2>)",
           "CREATE INDEX ON t (v) USING 'sai'",
           "INSERT INTO t (k, v) VALUES (1, [1.0, 0.0])",
           "INSERT INTO t (k, v) VALUES (2, [0.0, 1.0])",
           "INSERT INTO t (k, v) VALUES (3, [0.9, 0.1])",
           "SELECT k FROM t ORDER BY v ANN OF [1.0, 0.0] LIMIT 2",
           "SELECT k FROM t ORDER BY v ANN OF [1.0, 0.0]"])


def _where_table():
    st = ["CREATE TABLE t (p int, c1 int, c2 text, v int, PRIMARY KEY (p, c1, c2))"]
    for p in range(4):
        for c1 in range(3):
            for c2 in ("a", "b"):
                st.append("INSERT INTO t (p, c1, c2, v) VALUES (%d, %d, '%s', %d)" % (p, c1, c2, p * 10 + c1))
    return st


WHERE_QUERIES = [
    "SELECT * FROM t WHERE p = 1",
    "SELECT * FROM t WHERE p IN (3, 1)",
    "SELECT * FROM t WHERE p IN (1, 1, 2)",
    "SELECT * FROM t WHERE p IN ()",
    "SELECT * FROM t WHERE p = 1 AND c1 = 2",
    "SELECT * FROM t WHERE p = 1 AND c1 IN (2, 0)",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND c2 = 'b'",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND c2 IN ('b', 'a')",
    "SELECT * FROM t WHERE p = 1 AND c1 > 0",
    "SELECT * FROM t WHERE p = 1 AND c1 >= 1 AND c1 < 2",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND c2 > 'a'",
    "SELECT * FROM t WHERE p = 1 AND c2 = 'a'",
    "SELECT * FROM t WHERE p = 1 AND c1 > 0 AND c2 = 'a'",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) > (1, 'a')",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) >= (1, 'a') AND (c1, c2) < (2, 'b')",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) = (1, 'b')",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) IN ((1, 'b'), (0, 'a'))",
    "SELECT * FROM t WHERE p = 1 AND (c1) > (0)",
    "SELECT * FROM t WHERE p = 1 AND (c2, c1) > ('a', 1)",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) > (0, 'b') AND c1 < 2",
    "SELECT * FROM t WHERE p IN (1, 2) AND c1 = 1",
    "SELECT * FROM t WHERE p IN (1, 2) AND c1 > 1",
    "SELECT * FROM t WHERE token(p) > token(1)",
    "SELECT * FROM t WHERE token(p) >= -3000000000000000000 AND token(p) < 3000000000000000000",
    "SELECT p, token(p) FROM t WHERE token(p) <= 0",
    "SELECT * FROM t WHERE token(p) = token(2)",
    "SELECT * FROM t WHERE token(p) > token(1) AND p = 1",
    "SELECT * FROM t WHERE p > 1",
    "SELECT * FROM t WHERE c1 = 1",
    "SELECT * FROM t WHERE v = 11",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND c1 = 2",
    "SELECT * FROM t WHERE p = 1 AND c1 > 1 AND c1 > 0",
    "SELECT * FROM t WHERE p = 1 AND c1 > 2 AND c1 < 1",
    "SELECT * FROM t WHERE p = 1 AND c1 IN (0, 1) AND c2 > 'a'",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND c2 < 'b' AND c2 >= 'a'",
    "SELECT * FROM t WHERE p = null",
    "SELECT * FROM t WHERE p = 1 AND c1 = null",
    "SELECT * FROM t WHERE p = 1 AND c1 IN (null, 1)",
    "SELECT * FROM t WHERE p = 1 OR p = 2",
    "SELECT * FROM t WHERE p = 1 AND nosuch = 2",
    "SELECT * FROM t WHERE p = 'x'",
    "SELECT * FROM t WHERE p IN (1, 2) ORDER BY c1 DESC",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) > (1)",
    "SELECT * FROM t WHERE p = 1 AND (c1, c2) = (1, 'a', 3)",
    "SELECT * FROM t WHERE p = 1 AND c1 != 1",
    "SELECT * FROM t WHERE p = 1 AND c1 = 1 AND (c2) IN (('a'), ('b'))",
]


def gen_select(c):
    base = _where_table()
    for i, q in enumerate(WHERE_QUERIES):
        c.add("select_where", "where_%02d" % i, base + [q])
    for t in ORDERABLE:
        vs = vals(t)
        st = ["CREATE TABLE t (k %s, c %s, v int, PRIMARY KEY (k, c))" % (t, t)]
        for i, v in enumerate(vs):
            for j, w in enumerate(vs[:3]):
                st.append("INSERT INTO t (k, c, v) VALUES (%s, %s, %d)" % (v, w, i * 10 + j))
        c.add("select_where", "%s_in_partition" % t, st + ["SELECT * FROM t WHERE k IN (%s, %s)" % (vs[-1], vs[0])])
        c.add("select_where", "%s_in_clustering" % t,
              st + ["SELECT * FROM t WHERE k = %s AND c IN (%s, %s)" % (vs[0], vs[-1], vs[0]),
                    "SELECT * FROM t WHERE k IN (%s, %s) AND c IN (%s, %s)" % (vs[1], vs[0], vs[1], vs[0])])
        c.add("select_where", "%s_tuple_slice" % t,
              st + ["SELECT * FROM t WHERE k = %s AND (c) > (%s)" % (vs[0], vs[0]),
                    "SELECT * FROM t WHERE k = %s AND (c) <= (%s)" % (vs[0], vs[1])])
        # filtering
        fst = ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % t]
        for i, v in enumerate(vs):
            fst.append("INSERT INTO t (k, v) VALUES (%d, %s)" % (i, v))
        c.add("select_filtering", "%s_eq_without_allow" % t, fst + ["SELECT * FROM t WHERE v = %s" % vs[0]])
        c.add("select_filtering", "%s_eq_allow" % t, fst + ["SELECT * FROM t WHERE v = %s ALLOW FILTERING" % vs[0]])
        c.add("select_filtering", "%s_range_allow" % t,
              fst + ["SELECT * FROM t WHERE v > %s ALLOW FILTERING" % vs[1],
                     "SELECT * FROM t WHERE v <= %s AND v >= %s ALLOW FILTERING" % (vs[-2], vs[0])])
        c.add("select_filtering", "%s_in_and_ne_allow" % t,
              fst + ["SELECT * FROM t WHERE v IN (%s, %s) ALLOW FILTERING" % (vs[-1], vs[0]),
                     "SELECT * FROM t WHERE v != %s ALLOW FILTERING" % vs[0]])
    filt = ["CREATE TABLE t (p int, c int, v int, s int static, l list<int>, PRIMARY KEY (p, c))"]
    for p in range(3):
        for cc in range(3):
            filt.append("INSERT INTO t (p, c, v, l) VALUES (%d, %d, %d, [%d])" % (p, cc, p + cc, cc))
        filt.append("UPDATE t SET s = %d WHERE p = %d" % (p * 7, p))
    for i, q in enumerate([
        "SELECT * FROM t WHERE c = 1", "SELECT * FROM t WHERE c = 1 ALLOW FILTERING",
        "SELECT * FROM t WHERE c > 0 ALLOW FILTERING", "SELECT * FROM t WHERE v = 2",
        "SELECT * FROM t WHERE v = 2 ALLOW FILTERING", "SELECT * FROM t WHERE p = 1 AND v = 2",
        "SELECT * FROM t WHERE p = 1 AND v = 2 ALLOW FILTERING", "SELECT * FROM t WHERE s = 7",
        "SELECT * FROM t WHERE s = 7 ALLOW FILTERING", "SELECT * FROM t WHERE l CONTAINS 1",
        "SELECT * FROM t WHERE l CONTAINS 1 ALLOW FILTERING", "SELECT * FROM t WHERE p > 0 ALLOW FILTERING",
        "SELECT * FROM t WHERE p IN (0, 1) AND v > 1 ALLOW FILTERING",
        "SELECT * FROM t WHERE v > 1 AND v < 4 ALLOW FILTERING LIMIT 2",
        "SELECT count(*) FROM t WHERE v = 2 ALLOW FILTERING",
        "SELECT * FROM t WHERE token(p) > 0 AND v = 2 ALLOW FILTERING",
        "SELECT * FROM t WHERE p = 1 AND c > 0 AND v = 2 ALLOW FILTERING",
        "SELECT * FROM t WHERE v = null ALLOW FILTERING",
        "SELECT * FROM t WHERE l = [1] ALLOW FILTERING",
        "SELECT * FROM t WHERE v IN (1, 2) AND c = 1 ALLOW FILTERING",
        "SELECT DISTINCT p FROM t WHERE s = 7 ALLOW FILTERING",
        "SELECT * FROM t WHERE v = 2 ALLOW FILTERING AND c = 1",
    ]):
        c.add("select_filtering", "rule_%02d" % i, filt + [q])
    ol = ["CREATE TABLE t (p int, c int, d int, v int, s int static, PRIMARY KEY (p, c, d))"]
    for p in range(4):
        for cc in range(3):
            for d in range(2):
                ol.append("INSERT INTO t (p, c, d, v) VALUES (%d, %d, %d, %d)" % (p, cc, d, p * 100 + cc * 10 + d))
        ol.append("UPDATE t SET s = %d WHERE p = %d" % (p, p))
    for i, q in enumerate([
        "SELECT * FROM t WHERE p = 1 ORDER BY c DESC", "SELECT * FROM t WHERE p = 1 ORDER BY c ASC",
        "SELECT * FROM t WHERE p = 1 ORDER BY c DESC, d DESC", "SELECT * FROM t WHERE p = 1 ORDER BY c DESC, d ASC",
        "SELECT * FROM t WHERE p = 1 ORDER BY d DESC", "SELECT * FROM t ORDER BY c DESC",
        "SELECT * FROM t WHERE p IN (1, 2) ORDER BY c DESC", "SELECT c, d FROM t WHERE p IN (2, 1) ORDER BY c ASC",
        "SELECT * FROM t WHERE p = 1 ORDER BY v", "SELECT * FROM t WHERE p = 1 LIMIT 2",
        "SELECT * FROM t LIMIT 5", "SELECT * FROM t LIMIT 0", "SELECT * FROM t LIMIT -1",
        "SELECT * FROM t PER PARTITION LIMIT 1", "SELECT * FROM t PER PARTITION LIMIT 2 LIMIT 5",
        "SELECT * FROM t WHERE p IN (1, 3) PER PARTITION LIMIT 1",
        "SELECT * FROM t PER PARTITION LIMIT 0", "SELECT * FROM t WHERE p = 1 ORDER BY c DESC LIMIT 3",
        "SELECT * FROM t WHERE p = 1 AND c > 0 ORDER BY c DESC LIMIT 1",
        "SELECT DISTINCT p FROM t", "SELECT DISTINCT p, s FROM t", "SELECT DISTINCT p FROM t LIMIT 2",
        "SELECT DISTINCT p FROM t WHERE p IN (1, 2)", "SELECT DISTINCT c FROM t", "SELECT DISTINCT p, c FROM t",
        "SELECT DISTINCT p, v FROM t", "SELECT DISTINCT s FROM t", "SELECT DISTINCT token(p) FROM t",
        "SELECT count(*) FROM t LIMIT 1", "SELECT DISTINCT p FROM t PER PARTITION LIMIT 1",
        "SELECT * FROM t WHERE p = 1 LIMIT 1000000", "SELECT * FROM t WHERE p = 1 LIMIT 2147483647",
        "SELECT * FROM t WHERE p = 1 LIMIT 2147483648", "SELECT p, c AS cc, d FROM t WHERE p = 2 ORDER BY c DESC",
        "SELECT * FROM t WHERE p = 2 ORDER BY c", "SELECT p, s, c FROM t WHERE p = 3",
        "SELECT s FROM t", "SELECT p, s FROM t WHERE p = 1 LIMIT 1",
    ]):
        c.add("select_order_limit", "q_%02d" % i, ol + [q])
    gb = ["CREATE TABLE t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))"]
    for p in range(3):
        for c1 in range(3):
            for c2 in range(2):
                gb.append("INSERT INTO t (p, c1, c2, v) VALUES (%d, %d, %d, %d) USING TIMESTAMP %d"
                          % (p, c1, c2, p + c1 * c2, 1000 + p * 10 + c1 * 2 + c2))
    for i, q in enumerate([
        "SELECT p, count(*) FROM t GROUP BY p", "SELECT p, c1, count(*) FROM t GROUP BY p, c1",
        "SELECT p, c1, c2, v FROM t GROUP BY p, c1, c2", "SELECT p, max(v), min(v), sum(v), avg(v) FROM t GROUP BY p",
        "SELECT p, c1 FROM t GROUP BY p, c1", "SELECT p, v FROM t GROUP BY p",
        "SELECT count(*) FROM t WHERE p = 1 GROUP BY c1", "SELECT c1, count(*) FROM t WHERE p = 1 GROUP BY c1",
        "SELECT * FROM t GROUP BY c1", "SELECT * FROM t GROUP BY v", "SELECT * FROM t GROUP BY p, c2",
        "SELECT p, count(*) FROM t GROUP BY p LIMIT 2", "SELECT p, c1, count(*) FROM t GROUP BY p, c1 LIMIT 4",
        "SELECT p, c1, count(*) FROM t GROUP BY p, c1 PER PARTITION LIMIT 1",
        "SELECT p, count(*) FROM t WHERE p IN (2, 0) GROUP BY p",
        "SELECT p, c1, count(*) FROM t WHERE p = 1 AND c1 > 0 GROUP BY p, c1 ORDER BY c1 DESC",
        "SELECT p, count(*) FROM t WHERE v > 1 GROUP BY p ALLOW FILTERING",
        "SELECT p, c1 FROM t WHERE p = 1 GROUP BY c1", "SELECT DISTINCT p FROM t GROUP BY p",
        "SELECT p, count(*) FROM t GROUP BY p, c1, c2, v", "SELECT p, writetime(v) FROM t GROUP BY p",
        "SELECT p, count(v) AS n FROM t GROUP BY p", "SELECT c1, count(*) FROM t WHERE c1 = 1 GROUP BY p ALLOW FILTERING",
        "SELECT p, c1, sum(c2) FROM t WHERE p = 0 GROUP BY p, c1",
        "SELECT p, count(*) FROM t GROUP BY token(p)",
    ]):
        c.add("select_groupby", "q_%02d" % i, gb + [q])
    bs = ["CREATE TABLE t (k int PRIMARY KEY, a int, b text, \"Quoted\" int)",
          "INSERT INTO t (k, a, b, \"Quoted\") VALUES (1, 10, 'x', 5)",
          "INSERT INTO t (k, a, b) VALUES (2, 20, 'y')"]
    for i, q in enumerate([
        "SELECT * FROM t", "SELECT k, a FROM t", "SELECT a, k FROM t", "SELECT k AS key, a AS \"A\" FROM t",
        "SELECT \"Quoted\" FROM t", "SELECT quoted FROM t", "SELECT K, A FROM t", "SELECT k, k, a FROM t",
        "SELECT * FROM {ks}.t", "SELECT * FROM t WHERE k = 1", "SELECT * FROM t WHERE k = 3", "select * from T",
        "SELECT JSON * FROM t", "SELECT a FROM t WHERE k IN (2, 1)", "SELECT k, b FROM t WHERE k = 2 AND k = 1",
        "SELECT * FROM t WHERE k = 1;;", "SELECT * FROM \"t\"", "SELECT * FROM \"T\"", "SELECT *, k FROM t",
        "SELECT k, (int)a FROM t", "SELECT k, (text)a FROM t", "SELECT k, a AS b, b AS a FROM t",
        "SELECT k, 1, 'lit', true FROM t", "SELECT k FROM t WHERE k = 1 AND a = 10",
        "SELECT k, \"Quoted\" AS q FROM t WHERE k = 1",
    ]):
        c.add("select_basic", "q_%02d" % i, bs + [q])


def gen_json(c):
    for t in ALL:
        vs = vals(t)
        st = ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % t]
        for i, v in enumerate(vs):
            st.append("INSERT INTO t (k, v) VALUES (%d, %s)" % (i, v))
        c.add("json", "%s_select_json" % t, st + ["SELECT JSON * FROM t", "SELECT JSON k, v AS val FROM t",
                                                   "SELECT k, toJson(v) FROM t"])
        c.add("json", "%s_insert_json_roundtrip" % t,
              st + ["INSERT INTO t JSON '{\"k\": 100, \"v\": null}'",
                    "SELECT JSON v FROM t WHERE k = 0"] +
              ["INSERT INTO t (k, v) VALUES (%d, fromJson(toJson(%s)))" % (200 + i, v) for i, v in enumerate(vs[:1])]
              + ["SELECT k, v FROM t WHERE k IN (100, 200)"])
        c.add("json", "%s_collections_json" % t,
              ["CREATE TABLE t (k int PRIMARY KEY, l list<%s>, m map<text, %s>, tu tuple<%s, int>)" % (t, t, t),
               "INSERT INTO t (k, l, m, tu) VALUES (1, [%s], {'a': %s}, (%s, 1))" % (", ".join(vs), vs[0], vs[-1]),
               "SELECT JSON * FROM t", "SELECT toJson(l), toJson(m), toJson(tu) FROM t"])
    js = [("int_from_string", "int", "'{\"k\": 1, \"v\": \"42\"}'"),
          ("int_from_float", "int", "'{\"k\": 1, \"v\": 1.5}'"),
          ("bigint_large", "bigint", "'{\"k\": 1, \"v\": 9223372036854775807}'"),
          ("text_escape", "text", "'{\"k\": 1, \"v\": \"a\\\"b\\u00e9\"}'"),
          ("blob_hex", "blob", "'{\"k\": 1, \"v\": \"0xcafe\"}'"),
          ("blob_bad", "blob", "'{\"k\": 1, \"v\": \"cafe\"}'"),
          ("bool_string", "boolean", "'{\"k\": 1, \"v\": \"true\"}'"),
          ("timestamp_number", "timestamp", "'{\"k\": 1, \"v\": 1000}'"),
          ("timestamp_string", "timestamp", "'{\"k\": 1, \"v\": \"2020-01-01 00:00:00.000Z\"}'"),
          ("date_string", "date", "'{\"k\": 1, \"v\": \"2020-01-01\"}'"),
          ("uuid_string", "uuid", "'{\"k\": 1, \"v\": \"123e4567-e89b-12d3-a456-426614174000\"}'"),
          ("list_json", "list<int>", "'{\"k\": 1, \"v\": [3, 1, 2]}'"),
          ("set_json", "set<int>", "'{\"k\": 1, \"v\": [3, 1, 2, 1]}'"),
          ("map_json", "map<int, text>", "'{\"k\": 1, \"v\": {\"2\": \"b\", \"1\": \"a\"}}'"),
          ("unknown_column", "int", "'{\"k\": 1, \"nope\": 1}'"),
          ("missing_key", "int", "'{\"v\": 1}'"),
          ("not_an_object", "int", "'[1, 2]'"),
          ("invalid_json", "int", "'{\"k\": 1,'"),
          ("case_sensitive_key", "int", "'{\"K\": 1, \"v\": 2}'"),
          ("duplicate_key", "int", "'{\"k\": 1, \"v\": 2, \"v\": 3}'"),
          ("decimal_precision", "decimal", "'{\"k\": 1, \"v\": 1.000000000000000000001}'"),
          ("double_string_nan", "double", "'{\"k\": 1, \"v\": \"NaN\"}'"),
          ("varint_big", "varint", "'{\"k\": 1, \"v\": 123456789012345678901234567890}'"),
          ("inet_string", "inet", "'{\"k\": 1, \"v\": \"::1\"}'"),
          ("duration_string", "duration", "'{\"k\": 1, \"v\": \"1h30m\"}'")]
    for slug, t, doc in js:
        c.add("json", "insert_json_%s" % slug,
              ["CREATE TABLE t (k int PRIMARY KEY, v %s)" % t, "INSERT INTO t JSON %s" % doc,
               "SELECT k, v FROM t", "SELECT JSON * FROM t"])
    c.add("json", "default_unset_vs_null",
          ["CREATE TABLE t (k int PRIMARY KEY, a int, b int)", "INSERT INTO t (k, a, b) VALUES (1, 1, 1)",
           "INSERT INTO t JSON '{\"k\": 1, \"a\": 2}' DEFAULT UNSET", "SELECT * FROM t",
           "INSERT INTO t JSON '{\"k\": 1, \"a\": 3}' DEFAULT NULL", "SELECT * FROM t",
           "INSERT INTO t JSON '{\"k\": 1, \"a\": 4}'", "SELECT * FROM t"])
    c.add("json", "quoted_column_names",
          ["CREATE TABLE t (k int PRIMARY KEY, \"CamelCase\" int)",
           "INSERT INTO t JSON '{\"k\": 1, \"\\\"CamelCase\\\"\": 5}'",
           "INSERT INTO t JSON '{\"k\": 2, \"CamelCase\": 6}'", "SELECT JSON * FROM t"])
    c.add("json", "udt_json",
          ["CREATE TYPE u (a int, b text)", "CREATE TABLE t (k int PRIMARY KEY, v frozen<u>)",
           "INSERT INTO t JSON '{\"k\": 1, \"v\": {\"a\": 1, \"b\": \"x\"}}'",
           "INSERT INTO t JSON '{\"k\": 2, \"v\": {\"a\": 1, \"c\": \"x\"}}'", "SELECT JSON * FROM t",
           "SELECT toJson(v) FROM t"])
    c.add("json", "json_with_ttl_timestamp",
          ["CREATE TABLE t (k int PRIMARY KEY, v int)",
           "INSERT INTO t JSON '{\"k\": 1, \"v\": 1}' USING TIMESTAMP 1234",
           "INSERT INTO t JSON '{\"k\": 2, \"v\": 2}' IF NOT EXISTS",
           "INSERT INTO t JSON '{\"k\": 2, \"v\": 2}' IF NOT EXISTS",
           IGN + "SELECT k, v, writetime(v) FROM t"])
    c.add("json", "select_json_functions",
          ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 7",
           "SELECT JSON k, writetime(v), count(*) FROM t", "SELECT JSON k, v AS \"Value\" FROM t",
           "SELECT JSON DISTINCT k FROM t", "SELECT fromJson('1') FROM t"])


def generate(c):
    gen_collections(c)
    gen_tuple_udt(c)
    gen_vector(c)
    gen_select(c)
    gen_json(c)
    gen_dml.generate(c)
    gen_ddl.generate(c)
    _ = (NUMERIC, IGN)
