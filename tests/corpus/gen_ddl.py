"""Corpus templates for keyspace/table/index/view DDL, ALTER, error cases and DESCRIBE (see generate.py)."""

from gen_types import ALL, ORDERABLE, vals

IGN = "-- @ignore-values\n"
KS2 = "{ks}_2"
SIMPLE = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
KSQ = ("SELECT keyspace_name, durable_writes, replication FROM system_schema.keyspaces "
       "WHERE keyspace_name = '{ks}_2'")


def tq(table="t"):
    return ("SELECT column_name, clustering_order, kind, position, type FROM system_schema.columns "
            "WHERE keyspace_name = '{ks}' AND table_name = '%s'" % table)


def gen_keyspace(c):
    cases = [
        ("simple_rf1", "CREATE KEYSPACE %s WITH replication = %s" % (KS2, SIMPLE)),
        ("simple_rf3", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}" % KS2),
        ("simple_short_class", "CREATE KEYSPACE %s WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '2'}" % KS2),
        ("nts_datacenter1", "CREATE KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}" % KS2),
        ("nts_unknown_dc", "CREATE KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', 'nodc': 1}" % KS2),
        ("nts_default_rf", "CREATE KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}" % KS2),
        ("nts_no_options", "CREATE KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy'}" % KS2),
        ("missing_rf", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy'}" % KS2),
        ("rf_zero", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 0}" % KS2),
        ("rf_negative", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': -1}" % KS2),
        ("rf_not_number", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 'x'}" % KS2),
        ("unknown_strategy", "CREATE KEYSPACE %s WITH replication = {'class': 'NoSuchStrategy', 'replication_factor': 1}" % KS2),
        ("local_strategy", "CREATE KEYSPACE %s WITH replication = {'class': 'LocalStrategy'}" % KS2),
        ("unknown_option", "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1, 'foo': 1}" % KS2),
        ("no_replication", "CREATE KEYSPACE %s" % KS2),
        ("no_class", "CREATE KEYSPACE %s WITH replication = {'replication_factor': 1}" % KS2),
        ("durable_writes_false", "CREATE KEYSPACE %s WITH replication = %s AND durable_writes = false" % (KS2, SIMPLE)),
        ("durable_writes_bad", "CREATE KEYSPACE %s WITH replication = %s AND durable_writes = 'maybe'" % (KS2, SIMPLE)),
        ("unknown_property", "CREATE KEYSPACE %s WITH replication = %s AND foo = 1" % (KS2, SIMPLE)),
        ("already_exists", "CREATE KEYSPACE {ks} WITH replication = %s" % SIMPLE),
        ("if_not_exists_existing", "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = %s" % SIMPLE),
        ("if_not_exists_new", "CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s" % (KS2, SIMPLE)),
        ("quoted_name_case", "CREATE KEYSPACE \"{ks}_2\" WITH replication = %s" % SIMPLE),
        ("uppercase_unquoted", "CREATE KEYSPACE {KS}_2 WITH replication = %s" % SIMPLE),
        ("name_too_long", "CREATE KEYSPACE k%s WITH replication = %s" % ("x" * 60, SIMPLE)),
        ("name_invalid_chars", "CREATE KEYSPACE \"bad-name\" WITH replication = %s" % SIMPLE),
        ("system_name_rejected", "CREATE KEYSPACE system WITH replication = %s" % SIMPLE),
        ("drop_missing", "DROP KEYSPACE nosuch_keyspace_xyz"),
        ("drop_missing_if_exists", "DROP KEYSPACE IF EXISTS nosuch_keyspace_xyz"),
        ("drop_system_rejected", "DROP KEYSPACE system"),
        ("drop_system_schema_rejected", "DROP KEYSPACE system_schema"),
        ("alter_missing", "ALTER KEYSPACE nosuch_keyspace_xyz WITH durable_writes = false"),
        ("alter_system_rejected", "ALTER KEYSPACE system WITH durable_writes = false"),
        ("use_missing", "USE nosuch_keyspace_xyz"),
        ("use_quoted", "USE \"{ks}\""),
        ("with_keyword_case", "create keyspace %s with REPLICATION = {'CLASS': 'SimpleStrategy', 'replication_factor': 1}" % KS2),
    ]
    for slug, st in cases:
        c.add("ddl_keyspace", slug, [st, KSQ])
    alters = [
        ("alter_rf", "ALTER KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}" % KS2),
        ("alter_to_nts", "ALTER KEYSPACE %s WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}" % KS2),
        ("alter_durable", "ALTER KEYSPACE %s WITH durable_writes = false" % KS2),
        ("alter_nothing", "ALTER KEYSPACE %s" % KS2),
        ("alter_if_exists", "ALTER KEYSPACE IF EXISTS %s WITH durable_writes = false" % KS2),
        ("alter_if_exists_missing", "ALTER KEYSPACE IF EXISTS nosuch_keyspace_xyz WITH durable_writes = false"),
        ("alter_bad_rf", "ALTER KEYSPACE %s WITH replication = {'class': 'SimpleStrategy'}" % KS2),
    ]
    for slug, st in alters:
        c.add("ddl_keyspace", slug, ["CREATE KEYSPACE %s WITH replication = %s" % (KS2, SIMPLE), st, KSQ])
    c.add("ddl_keyspace", "drop_with_tables",
          ["CREATE KEYSPACE %s WITH replication = %s" % (KS2, SIMPLE), "CREATE TABLE %s.t (k int PRIMARY KEY)" % KS2,
           "CREATE TYPE %s.u (a int)" % KS2, "DROP KEYSPACE %s" % KS2, KSQ, "SELECT * FROM %s.t" % KS2,
           "CREATE KEYSPACE %s WITH replication = %s" % (KS2, SIMPLE), "SELECT * FROM %s.t" % KS2])
    c.add("ddl_keyspace", "use_switches",
          ["CREATE KEYSPACE %s WITH replication = %s" % (KS2, SIMPLE), "CREATE TABLE t (k int PRIMARY KEY)",
           "USE %s" % KS2, "SELECT * FROM t", "USE {ks}", "SELECT * FROM t"])


TABLE_DDL = [
    ("single_pk", "CREATE TABLE t (k int PRIMARY KEY, v text)"),
    ("compound", "CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))"),
    ("composite_pk", "CREATE TABLE t (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))"),
    ("multi_clustering", "CREATE TABLE t (k int, c1 int, c2 text, c3 uuid, v int, PRIMARY KEY (k, c1, c2, c3))"),
    ("clustering_order_desc", "CREATE TABLE t (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)"),
    ("clustering_order_partial", "CREATE TABLE t (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC)"),
    ("clustering_order_wrong_sequence", "CREATE TABLE t (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c2 DESC, c1 ASC)"),
    ("clustering_order_non_clustering", "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (v DESC)"),
    ("only_pk", "CREATE TABLE t (k int PRIMARY KEY)"),
    ("pk_only_columns_compound", "CREATE TABLE t (k int, c int, PRIMARY KEY (k, c))"),
    ("no_pk", "CREATE TABLE t (k int, v int)"),
    ("two_pk_inline", "CREATE TABLE t (k int PRIMARY KEY, v int PRIMARY KEY)"),
    ("inline_and_clause", "CREATE TABLE t (k int PRIMARY KEY, v int, PRIMARY KEY (k))"),
    ("pk_unknown_column", "CREATE TABLE t (k int, v int, PRIMARY KEY (nope))"),
    ("pk_repeated", "CREATE TABLE t (k int, v int, PRIMARY KEY (k, k))"),
    ("duplicate_column", "CREATE TABLE t (k int PRIMARY KEY, v int, v text)"),
    ("unknown_type", "CREATE TABLE t (k int PRIMARY KEY, v nosuchtype)"),
    ("empty_columns", "CREATE TABLE t ()"),
    ("quoted_identifiers", "CREATE TABLE \"T\" (\"K\" int PRIMARY KEY, \"select\" int, \"a b\" text)"),
    ("reserved_word_column", "CREATE TABLE t (k int PRIMARY KEY, select int)"),
    ("unreserved_keyword_column", "CREATE TABLE t (k int PRIMARY KEY, key int, type text, ttl int, writetime int)"),
    ("if_not_exists", "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)"),
    ("compact_storage_rejected", "CREATE TABLE t (k int PRIMARY KEY, v int) WITH COMPACT STORAGE"),
    ("options_common", "CREATE TABLE t (k int PRIMARY KEY, v int) WITH comment = 'hi' AND gc_grace_seconds = 10 AND default_time_to_live = 5 AND bloom_filter_fp_chance = 0.1"),
    ("option_caching", "CREATE TABLE t (k int PRIMARY KEY) WITH caching = {'keys': 'NONE', 'rows_per_partition': '10'}"),
    ("option_compaction_lcs", "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 64}"),
    ("option_compaction_twcs", "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', 'compaction_window_size': 1}"),
    ("option_compaction_ucs", "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'UnifiedCompactionStrategy'}"),
    ("option_compaction_unknown", "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'class': 'NoSuchStrategy'}"),
    ("option_compression_off", "CREATE TABLE t (k int PRIMARY KEY) WITH compression = {'enabled': 'false'}"),
    ("option_compression_zstd", "CREATE TABLE t (k int PRIMARY KEY) WITH compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64}"),
    ("option_compression_bad_chunk", "CREATE TABLE t (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 3}"),
    ("option_unknown", "CREATE TABLE t (k int PRIMARY KEY) WITH nosuchoption = 1"),
    ("option_bad_value", "CREATE TABLE t (k int PRIMARY KEY) WITH gc_grace_seconds = -1"),
    ("option_bad_fp_chance", "CREATE TABLE t (k int PRIMARY KEY) WITH bloom_filter_fp_chance = 2.0"),
    ("option_speculative_retry", "CREATE TABLE t (k int PRIMARY KEY) WITH speculative_retry = '50ms' AND additional_write_policy = 'NEVER'"),
    ("option_read_repair", "CREATE TABLE t (k int PRIMARY KEY) WITH read_repair = 'NONE'"),
    ("option_cdc", "CREATE TABLE t (k int PRIMARY KEY) WITH cdc = true"),
    ("option_id", "CREATE TABLE t (k int PRIMARY KEY) WITH id = 5a1c395e-b41f-11e5-9f22-ba0be0483c18"),
    ("option_memtable", "CREATE TABLE t (k int PRIMARY KEY) WITH memtable = 'default'"),
    ("option_memtable_unknown", "CREATE TABLE t (k int PRIMARY KEY) WITH memtable = 'nosuch'"),
    ("option_twice", "CREATE TABLE t (k int PRIMARY KEY) WITH comment = 'a' AND comment = 'b'"),
    ("option_index_intervals", "CREATE TABLE t (k int PRIMARY KEY) WITH min_index_interval = 256 AND max_index_interval = 128"),
    ("qualified_name", "CREATE TABLE {ks}.t (k int PRIMARY KEY)"),
    ("unknown_keyspace", "CREATE TABLE nosuch_keyspace_xyz.t (k int PRIMARY KEY)"),
    ("table_name_too_long", "CREATE TABLE t%s (k int PRIMARY KEY)" % ("x" * 250)),
    ("table_name_invalid", "CREATE TABLE \"bad-name\" (k int PRIMARY KEY)"),
    ("static_in_simple_pk", "CREATE TABLE t (k int PRIMARY KEY, s int static)"),
    ("many_columns", "CREATE TABLE t (k int PRIMARY KEY, %s)" % ", ".join("c%d int" % i for i in range(60))),
    ("all_types", "CREATE TABLE t (k int PRIMARY KEY, %s)" % ", ".join("v_%s %s" % (t, t) for t in ALL)),
    ("in_system_rejected", "CREATE TABLE system.t (k int PRIMARY KEY)"),
    ("frozen_collections_pk", "CREATE TABLE t (k frozen<map<text, int>>, c frozen<list<int>>, PRIMARY KEY (k, c))"),
    ("counter_table", "CREATE TABLE t (k int PRIMARY KEY, a counter, b counter)"),
    ("empty_type", "CREATE TABLE t (k int PRIMARY KEY, v empty)"),
    ("custom_type", "CREATE TABLE t (k int PRIMARY KEY, v 'org.apache.cassandra.db.marshal.BytesType')"),
]


def gen_table(c):
    for slug, ddl in TABLE_DDL:
        c.add("ddl_table", slug, [ddl, "SELECT table_name FROM system_schema.tables WHERE keyspace_name = '{ks}'",
                                  tq("t"), tq("T")])
    c.add("ddl_table", "already_exists", ["CREATE TABLE t (k int PRIMARY KEY)", "CREATE TABLE t (k int PRIMARY KEY)",
                                          "CREATE TABLE IF NOT EXISTS t (k text PRIMARY KEY)", tq()])
    c.add("ddl_table", "drop", ["CREATE TABLE t (k int PRIMARY KEY)", "INSERT INTO t (k) VALUES (1)", "DROP TABLE t",
                                "SELECT * FROM t", "DROP TABLE t", "DROP TABLE IF EXISTS t", "CREATE TABLE t (k int PRIMARY KEY)",
                                "SELECT * FROM t"])
    c.add("ddl_table", "drop_columnfamily_alias", ["CREATE COLUMNFAMILY t (k int PRIMARY KEY)", "DROP COLUMNFAMILY t", tq()])
    c.add("ddl_table", "truncate", ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t (k, v) VALUES (1, 1)",
                                    "TRUNCATE t", "SELECT * FROM t", "TRUNCATE TABLE t", "TRUNCATE nope",
                                    "INSERT INTO t (k, v) VALUES (2, 2)", "SELECT * FROM t"])
    c.add("ddl_table", "table_options_readback",
          ["CREATE TABLE t (k int PRIMARY KEY) WITH comment = 'c' AND gc_grace_seconds = 77",
           "SELECT comment, gc_grace_seconds, default_time_to_live, bloom_filter_fp_chance, caching, compaction, compression, "
           "crc_check_chance, speculative_retry, min_index_interval, max_index_interval, memtable_flush_period_in_ms, read_repair "
           "FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 't'"])
    for t in ALL:
        c.add("ddl_table", "%s_column_metadata" % t,
              ["CREATE TABLE t (k int, c %s, v %s, l list<%s>, PRIMARY KEY (k, c))" % (t, t, t), tq()])


def gen_alter(c):
    base = ["CREATE TABLE t (k int, c int, v int, w text, l list<int>, PRIMARY KEY (k, c))",
            "INSERT INTO t (k, c, v, w, l) VALUES (1, 1, 1, 'a', [1])"]
    cases = [
        ("add_column", ["ALTER TABLE t ADD x int", "INSERT INTO t (k, c, x) VALUES (1, 2, 5)"]),
        ("add_multiple", ["ALTER TABLE t ADD (x int, y text)"]),
        ("add_existing", ["ALTER TABLE t ADD v int"]),
        ("add_if_not_exists", ["ALTER TABLE t ADD IF NOT EXISTS v int", "ALTER TABLE t ADD IF NOT EXISTS z int"]),
        ("add_static", ["ALTER TABLE t ADD s int static"]),
        ("add_collection", ["ALTER TABLE t ADD m map<text, int>", "UPDATE t SET m['a'] = 1 WHERE k = 1 AND c = 1"]),
        ("add_counter_rejected", ["ALTER TABLE t ADD n counter"]),
        ("drop_column", ["ALTER TABLE t DROP v"]),
        ("drop_multiple", ["ALTER TABLE t DROP (v, w)"]),
        ("drop_missing", ["ALTER TABLE t DROP nope", "ALTER TABLE t DROP IF EXISTS nope"]),
        ("drop_pk_rejected", ["ALTER TABLE t DROP k", "ALTER TABLE t DROP c"]),
        ("drop_then_readd_same_type", ["ALTER TABLE t DROP v", "ALTER TABLE t ADD v int"]),
        ("drop_then_readd_other_type", ["ALTER TABLE t DROP v", "ALTER TABLE t ADD v text"]),
        ("drop_collection_readd_frozen", ["ALTER TABLE t DROP l", "ALTER TABLE t ADD l frozen<list<int>>"]),
        ("drop_with_timestamp", ["ALTER TABLE t DROP v USING TIMESTAMP 1"]),
        ("rename_pk", ["ALTER TABLE t RENAME k TO kk", "ALTER TABLE t RENAME c TO cc", "SELECT kk, cc FROM t"]),
        ("rename_regular_rejected", ["ALTER TABLE t RENAME v TO vv"]),
        ("rename_to_existing", ["ALTER TABLE t RENAME c TO v"]),
        ("rename_multiple", ["ALTER TABLE t RENAME k TO a AND c TO b"]),
        ("rename_if_exists", ["ALTER TABLE t RENAME IF EXISTS nope TO x"]),
        ("alter_type_rejected", ["ALTER TABLE t ALTER v TYPE bigint"]),
        ("with_options", ["ALTER TABLE t WITH comment = 'new' AND gc_grace_seconds = 100",
                          "SELECT comment, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 't'"]),
        ("with_unknown_option", ["ALTER TABLE t WITH nosuch = 1"]),
        ("with_compaction", ["ALTER TABLE t WITH compaction = {'class': 'LeveledCompactionStrategy'}",
                             "SELECT compaction FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 't'"]),
        ("with_clustering_order_rejected", ["ALTER TABLE t WITH CLUSTERING ORDER BY (c DESC)"]),
        ("missing_table", ["ALTER TABLE nope ADD x int", "ALTER TABLE IF EXISTS nope ADD x int"]),
        ("system_table_rejected", ["ALTER TABLE system.local ADD x int"]),
        ("add_then_select_star", ["ALTER TABLE t ADD a int", "ALTER TABLE t ADD b int", "ALTER TABLE t DROP w"]),
        ("drop_column_data_gone", ["ALTER TABLE t DROP w", "ALTER TABLE t ADD w text"]),
        ("add_udt_column", ["CREATE TYPE u (a int)", "ALTER TABLE t ADD x frozen<u>", "ALTER TABLE t ADD y u"]),
        ("add_nosuch_type", ["ALTER TABLE t ADD x nosuchtype"]),
        ("add_dup_in_list", ["ALTER TABLE t ADD (x int, x text)"]),
    ]
    for slug, st in cases:
        # Reading after a DROP ... USING TIMESTAMP races Cassandra's own read path (sometimes a ReadFailure).
        sel = ("-- @ignore\n" if slug == "drop_with_timestamp" else "") + "SELECT * FROM t"
        c.add("ddl_alter", slug, base + st + [sel, tq()])
    for t in ALL:
        vs = vals(t)
        c.add("ddl_alter", "add_%s_then_write" % t,
              base + ["ALTER TABLE t ADD x %s" % t, "UPDATE t SET x = %s WHERE k = 1 AND c = 1" % vs[0],
                      "SELECT k, c, x FROM t"])


def gen_index(c):
    for t in ORDERABLE:
        vs = vals(t)
        for using in ("", " USING 'sai'"):
            slug = "sai" if using else "legacy"
            st = ["CREATE TABLE t (k int, c int, v %s, PRIMARY KEY (k, c))" % t,
                  "CREATE INDEX t_v_idx ON t (v)%s" % using]
            for i, v in enumerate(vs):
                st.append("INSERT INTO t (k, c, v) VALUES (%d, %d, %s)" % (i % 2, i, v))
            st += ["SELECT k, c, v FROM t WHERE v = %s" % vs[0], "SELECT k, c, v FROM t WHERE k = 0 AND v = %s" % vs[0],
                   "SELECT k, c FROM t WHERE v = %s" % vs[-1], "SELECT k, c FROM t WHERE v > %s" % vs[0]]
            c.add("ddl_index", "%s_%s" % (t, slug), st)
    cases = [
        ("named_and_if_not_exists", ["CREATE INDEX i ON t (v)", "CREATE INDEX i ON t (v)", "CREATE INDEX IF NOT EXISTS i ON t (v)",
                                     "CREATE INDEX i2 ON t (v)"]),
        ("unnamed", ["CREATE INDEX ON t (v)", "CREATE INDEX ON t (v)"]),
        ("on_partition_key", ["CREATE INDEX ON t (k)"]),
        ("on_clustering", ["CREATE INDEX ON t (c)", "SELECT * FROM t WHERE c = 1"]),
        ("on_unknown_column", ["CREATE INDEX ON t (nope)"]),
        ("on_static", ["CREATE INDEX ON t (s)", "SELECT * FROM t WHERE s = 1"]),
        ("drop_index", ["CREATE INDEX i ON t (v)", "DROP INDEX i", "DROP INDEX i", "DROP INDEX IF EXISTS i",
                        "SELECT * FROM t WHERE v = 1"]),
        ("drop_qualified", ["CREATE INDEX i ON t (v)", "DROP INDEX {ks}.i"]),
        ("list_values", ["CREATE INDEX ON t (l)", "SELECT * FROM t WHERE l CONTAINS 2"]),
        ("map_keys", ["CREATE INDEX ON t (KEYS(m))", "SELECT * FROM t WHERE m CONTAINS KEY 'a'"]),
        ("map_values", ["CREATE INDEX ON t (VALUES(m))", "SELECT * FROM t WHERE m CONTAINS 1"]),
        ("map_entries", ["CREATE INDEX ON t (ENTRIES(m))", "SELECT * FROM t WHERE m['a'] = 1"]),
        ("full_frozen", ["CREATE INDEX ON t (FULL(f))", "SELECT * FROM t WHERE f = [1, 2]"]),
        ("full_on_nonfrozen_rejected", ["CREATE INDEX ON t (FULL(l))"]),
        ("keys_on_list_rejected", ["CREATE INDEX ON t (KEYS(l))"]),
        ("sai_collections", ["CREATE INDEX ON t (l) USING 'sai'", "CREATE INDEX ON t (KEYS(m)) USING 'sai'",
                             "SELECT * FROM t WHERE l CONTAINS 2", "SELECT * FROM t WHERE m CONTAINS KEY 'a'"]),
        ("sai_multiple_and", ["CREATE INDEX ON t (v) USING 'sai'", "CREATE INDEX ON t (w) USING 'sai'",
                              "SELECT * FROM t WHERE v = 1 AND w = 'a'", "SELECT * FROM t WHERE v >= 1 AND v < 3"]),
        ("sai_options", ["CREATE INDEX ON t (w) USING 'sai' WITH OPTIONS = {'case_sensitive': 'false'}",
                         "SELECT * FROM t WHERE w = 'A'"]),
        ("sasi_disabled", ["CREATE CUSTOM INDEX ON t (w) USING 'org.apache.cassandra.index.sasi.SASIIndex'"]),
        ("custom_unknown", ["CREATE CUSTOM INDEX ON t (w) USING 'com.nosuch.Index'"]),
        ("storage_attached_class", ["CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex'", "SELECT * FROM t WHERE v = 1"]),
        ("index_on_counter", ["CREATE TABLE cn (k int PRIMARY KEY, n counter)", "CREATE INDEX ON cn (n)"]),
        ("index_and_filtering", ["CREATE INDEX ON t (v)", "SELECT * FROM t WHERE v = 1 AND w = 'a'",
                                 "SELECT * FROM t WHERE v = 1 AND w = 'a' ALLOW FILTERING"]),
        ("index_after_data", ["CREATE INDEX i ON t (w)", "SELECT k, c FROM t WHERE w = 'b'"]),
        ("index_update_delete", ["CREATE INDEX i ON t (v)", "UPDATE t SET v = 9 WHERE k = 1 AND c = 1",
                                 "DELETE FROM t WHERE k = 2 AND c = 2", "SELECT k, c FROM t WHERE v = 9",
                                 "SELECT k, c FROM t WHERE v = 1"]),
        ("system_schema_indexes", ["CREATE INDEX i ON t (v)", "CREATE INDEX j ON t (w) USING 'sai'",
                                   "SELECT index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = '{ks}'"]),
        ("index_name_conflict_table", ["CREATE INDEX t ON t (v)"]),
        ("index_quoted_name", ["CREATE INDEX \"MyIdx\" ON t (v)", "DROP INDEX myidx", "DROP INDEX \"MyIdx\""]),
    ]
    base = ["CREATE TABLE t (k int, c int, v int, w text, s int static, l list<int>, m map<text, int>, f frozen<list<int>>, PRIMARY KEY (k, c))"]
    for k in range(3):
        for cc in range(3):
            base.append("INSERT INTO t (k, c, v, w, l, m, f) VALUES (%d, %d, %d, '%s', [%d], {'%s': %d}, [1, %d])"
                        % (k, cc, cc, "ab"[cc % 2], cc, "ab"[k % 2], k, cc + 1))
    # Indexes are created before the data: a 2i/SAI build over existing rows runs in the background and a query
    # racing it fails with a ReadFailure on Cassandra, which would make the golden result non-deterministic.
    for slug, st in cases:
        ddl = [x for x in st if x.startswith(("CREATE", "DROP"))]
        rest = [x for x in st if not x.startswith(("CREATE", "DROP"))]
        c.add("ddl_index", slug, base[:1] + ddl + base[1:] + rest)


def gen_view(c):
    base = ["CREATE TABLE t (k int, c int, v int, w text, PRIMARY KEY (k, c))",
            "INSERT INTO t (k, c, v, w) VALUES (1, 1, 10, 'a')"]
    views = [
        ("basic", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)"),
        ("missing_not_null", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t PRIMARY KEY (v, k, c)"),
        ("missing_base_key", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)"),
        ("two_non_pk", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND w IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY ((v, w), k, c)"),
        ("unknown_table", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM nope WHERE k IS NOT NULL PRIMARY KEY (k)"),
        ("drop_missing", "DROP MATERIALIZED VIEW mv"),
        ("drop_missing_if_exists", "DROP MATERIALIZED VIEW IF EXISTS mv"),
        ("with_options", "CREATE MATERIALIZED VIEW mv AS SELECT k, c, v FROM t WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c) WITH CLUSTERING ORDER BY (k DESC) AND comment = 'x'"),
    ]
    for slug, st in views:
        c.add("ddl_view", slug, base + [st, "SELECT * FROM mv", "INSERT INTO mv (v, k, c) VALUES (1, 1, 1)",
                                        "SELECT view_name FROM system_schema.views WHERE keyspace_name = '{ks}'"])


ERRORS = [
    "SELEC * FROM t", "SELECT * FORM t", "SELECT * FROM", "SELECT FROM t", "INSERT t (k) VALUES (1)",
    "INSERT INTO t k VALUES 1", "UPDATE t v = 1 WHERE k = 1", "DELETE FROM t k = 1", "CREATE TABLE", "DROP",
    "SELECT * FROM t WHERE", "SELECT * FROM t WHERE k =", "SELECT * FROM t WHERE k == 1", "SELECT * FROM t LIMIT",
    "SELECT * FROM t LIMIT 'a'", "SELECT * FROM t ORDER k", "SELECT * FROM t WHERE k = 1 AND", "SELECT (k FROM t",
    "SELECT * FROM t WHERE k IN 1", "SELECT * FROM t WHERE k IN (1,)", "SELECT * FROM t WHERE k = 0x",
    "SELECT * FROM t WHERE k = 1 1", "INSERT INTO t (k, v) VALUES (1, 2", "INSERT INTO t (k, v) VALUES (1, 2) USING", "UPDATE t SET WHERE k = 1", "SELECT * FROM t; garbage", "garbage", "SELECT * FROM t WHERE k = 1 ALLOW", "SELECT * FROM nosuch_table",
    "SELECT * FROM nosuch_keyspace_xyz.t", "SELECT nope FROM t", "SELECT * FROM t WHERE nope = 1",
    "SELECT * FROM t WHERE k = 'text'", "SELECT * FROM t WHERE k = 1.5", "SELECT * FROM t WHERE k = 99999999999",
    "SELECT * FROM t WHERE k = true", "SELECT * FROM t WHERE k = 0x01", "SELECT * FROM t WHERE k = [1]",
    "SELECT * FROM t WHERE k = {1}", "SELECT * FROM t WHERE k = (1, 2)", "SELECT * FROM t WHERE k = ?",
    "INSERT INTO t (k, v) VALUES (1, 1) IF NOT EXISTS IF NOT EXISTS", "SELECT * FROM t WHERE v = 'x' ALLOW FILTERING",
    "UPDATE t SET v = 1", "DELETE FROM t", "SELECT k FROM t WHERE k = 1 GROUP BY v",
    "SELECT * FROM system_schema.nosuch", "SELECT * FROM system.local WHERE key = 1",
    "CREATE TABLE t (k int PRIMARY KEY)", "DROP TABLE nosuch", "ALTER TABLE nosuch ADD x int",
    "CREATE INDEX ON nosuch (v)", "TRUNCATE nosuch", "USE nosuch_keyspace_xyz", "DROP KEYSPACE nosuch_keyspace_xyz",
    "DROP TYPE nosuch", "SELECT * FROM t WHERE token(k) = 'a'", "SELECT token(k, k) FROM t",
    "SELECT * FROM t WHERE k = 1 AND k = 2", "SELECT * FROM t LIMIT 1 LIMIT 2",
    "SELECT * FROM t WHERE k = -", "SELECT * FROM t WHERE k = 1e", "INSERT INTO t (k, v) VALUES (1, 2) USING TTL", "GRANT SELECT ON t TO nosuchrole",
    "LIST ROLES",
    "CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'",
    "CREATE AGGREGATE ag (int) SFUNC nosuch STYPE int", "CREATE TRIGGER tr ON t USING 'nosuch.Class'",
    "SELECT * FROM t WHERE k = 1 AND v CONTAINS 1", "SELECT * FROM t WHERE v IS NOT NULL",
    "SELECT * FROM t WHERE k LIKE 'a%'", "SELECT * FROM t WHERE k = 1 AND v LIKE 'a%' ALLOW FILTERING",
    "UPDATE t SET v = v + 1 WHERE k = 1", "UPDATE t SET v[0] = 1 WHERE k = 1", "SELECT v[0] FROM t",
    "SELECT CAST(v AS nosuchtype) FROM t", "SELECT CAST(v) FROM t", "SELECT * FROM t WHERE k = 2147483648",
    "SELECT * FROM t WHERE k = -2147483649", "INSERT INTO t (k, v) VALUES (1, 1) USING TIMESTAMP 1 AND TIMESTAMP 2",
    "SELECT * FROM t WHERE k = 1 ORDER BY k", "SELECT * FROM t PER PARTITION LIMIT -1",
    "SELECT * FROM t WHERE k IN (1, 2) AND v = 1", "SELECT DISTINCT v FROM t",
    "SELECT * FROM t WHERE k = 1 GROUP BY k ORDER BY k", "SELECT * FROM t WHERE \"K\" = 1",
    "SELECT \"V\" FROM t", "select * from T where K = 1",
    "SELECT * FROM t /* block */ WHERE k = 1",
]


def gen_errors(c):
    base = ["CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t (k, v) VALUES (1, 1)"]
    for i, q in enumerate(ERRORS):
        c.add("errors", "e_%03d" % i, base + [q])


def gen_describe(c):
    base = ["CREATE TYPE u (a int, \"B\" text)",
            "CREATE TABLE t (k int, c text, v int, s int static, l list<int>, u frozen<u>, PRIMARY KEY (k, c)) "
            "WITH CLUSTERING ORDER BY (c DESC) AND comment = 'described'",
            "CREATE TABLE t2 (k int PRIMARY KEY, n counter)",
            "CREATE INDEX t_v ON t (v)"]
    for i, q in enumerate([
        "DESCRIBE TABLE t", "DESC TABLE t", "DESCRIBE TABLE {ks}.t", "DESCRIBE t", "DESCRIBE TABLE t2",
        "DESCRIBE KEYSPACE {ks}", "DESCRIBE KEYSPACE", "DESCRIBE ONLY KEYSPACE {ks}", "DESCRIBE TYPE u",
        "DESCRIBE TYPES", "DESCRIBE TABLES", "DESCRIBE INDEX t_v", "DESCRIBE TABLE nosuch",
        "DESCRIBE KEYSPACE nosuch_keyspace_xyz", "DESCRIBE TYPE nosuch", "DESCRIBE INDEX nosuch",
        "DESCRIBE FUNCTIONS", "DESCRIBE AGGREGATES", "DESCRIBE TABLE t WITH INTERNALS", "DESCRIBE {ks}",
        "DESCRIBE {ks}.t2", "DESCRIBE MATERIALIZED VIEW nosuch", "DESCRIBE TABLE system.local",
        "DESCRIBE KEYSPACE system_schema", "DESCRIBE FULL SCHEMA", "DESCRIBE SCHEMA", "DESCRIBE KEYSPACES",
        "DESCRIBE CLUSTER",
    ]):
        # Whole-schema output includes other scripts' keyspaces (they run in parallel): not comparable.
        note = IGN if q == "DESCRIBE TABLE t WITH INTERNALS" else ""
        if q in ("DESCRIBE FULL SCHEMA", "DESCRIBE SCHEMA", "DESCRIBE KEYSPACES", "DESCRIBE CLUSTER"):
            note = "-- @ignore\n"
        c.add("describe", "d_%02d" % i, base + [note + q])
    for t in ALL:
        c.add("describe", "%s_column_table" % t,
              ["CREATE TABLE t (k int, c %s, v %s, m map<int, %s>, PRIMARY KEY (k, c))" % (
                  "int" if t == "duration" else t, t, t), "DESCRIBE TABLE t"])


def generate(c):
    gen_keyspace(c)
    gen_table(c)
    gen_alter(c)
    gen_index(c)
    gen_view(c)
    gen_errors(c)
    gen_describe(c)
