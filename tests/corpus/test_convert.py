"""Unit tests of cassandra_tests/convert.py's Java interpreter: which CQL a CQLTester method turns into.

    python3 -m unittest discover -s tests/corpus -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cassandra_tests"))

from cqltext import bind  # noqa: E402
from interp import Interpreter  # noqa: E402
from javasrc import parse_class  # noqa: E402
from values import Coll, SkipMethod, Untranslatable, to_bytes  # noqa: E402


def convert(body, helpers=""):
    src = "public class FooTest extends CQLTester {\n%s\n@Test\npublic void t() throws Throwable {\n%s\n}\n}" % (
        helpers, body)
    _, _, methods, fields = parse_class(src)
    it = Interpreter({k: v for k, v in methods.items() if "Test" not in v.annotations}, fields, "ks")
    it.run_method(methods["t"])
    return [q for q, _ in it.out], it


class Conversion(unittest.TestCase):
    def test_table_names_and_bound_values_become_literals(self):
        out, _ = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY, v text, l list<int>)");\n'
                         'execute("INSERT INTO %s (k, v, l) VALUES (?, ?, ?)", 1, "it\'s", list(1, 2));\n'
                         'assertRows(execute("SELECT * FROM %s WHERE k IN ?", list(1, 2)), row(1, "x"));')
        self.assertEqual(out, ["CREATE TABLE ks.table_00 (k int PRIMARY KEY, v text, l list<int>)",
                               "INSERT INTO ks.table_00 (k, v, l) VALUES (1, 'it''s', [1, 2])",
                               "SELECT * FROM ks.table_00 WHERE k IN (1, 2)"])

    def test_counted_loops_are_unrolled(self):
        out, _ = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY, v int)");\n'
                         'for (int i = 0; i < 3; i++)\n    execute("INSERT INTO %s (k, v) VALUES (?, ?)", i, i * 2);')
        self.assertEqual(out[1:], ["INSERT INTO ks.table_00 (k, v) VALUES (%d, %d)" % (i, 2 * i) for i in range(3)])

    def test_expected_errors_keep_their_query(self):
        out, it = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY)");\n'
                          'assertInvalidMessage("msg " + 1, "SELECT * FROM %s WHERE v = ?", 2);')
        self.assertEqual(out[1], "SELECT * FROM ks.table_00 WHERE v = 2")
        self.assertEqual(it.out[1][1], ["expect-error"])

    def test_helper_methods_and_created_types_are_followed(self):
        out, _ = convert('String t = createType("CREATE TYPE %s (a int)");\n'
                         'createTable("CREATE TABLE %s (k int PRIMARY KEY, v frozen<" + t + ">)");\n'
                         'insert(3);',
                         'private void insert(int k) throws Throwable { execute("INSERT INTO %s (k) VALUES (?)", k); }')
        self.assertEqual(out, ["CREATE TYPE ks.type_00 (a int)",
                               "CREATE TABLE ks.table_01 (k int PRIMARY KEY, v frozen<type_00>)",
                               "INSERT INTO ks.table_01 (k) VALUES (3)"])

    def test_unknown_value_in_a_write_skips_the_method(self):
        with self.assertRaises(SkipMethod):
            convert('createTable("CREATE TABLE %s (k int PRIMARY KEY, v bigint)");\n'
                    'long ts = someClock();\nexecute("INSERT INTO %s (k, v) VALUES (1, ?)", ts);')

    def test_unknown_value_in_a_read_drops_only_that_read(self):
        out, it = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY, v bigint)");\n'
                          'long ts = someClock();\nexecute("SELECT * FROM %s WHERE k = ?", ts);\n'
                          'execute("SELECT * FROM %s");')
        self.assertEqual(out[1:], ["SELECT * FROM ks.table_00"])
        self.assertEqual(it.skipped, 1)

    def test_node_settings_skip_the_method(self):
        with self.assertRaises(SkipMethod):
            convert('DatabaseDescriptor.setFoo(true);\ncreateTable("CREATE TABLE %s (k int PRIMARY KEY)");')

    def test_statement_with_an_unclosed_quote_is_dropped_not_glued_to_the_next(self):
        out, it = convert('createTable("CREATE TABLE %s (k text PRIMARY KEY)");\n'
                          'assertInvalidSyntax("INSERT INTO %s (k) VALUES (\'it\'s\')");')
        self.assertEqual(len(out), 1)
        self.assertEqual(it.skipped, 1)

    def test_cluster_wide_system_reads_are_not_compared(self):
        _, it = convert('execute("SELECT * FROM system_schema.keyspaces");')
        self.assertIn("@ignore", it.out[0][1])

    def test_nondeterministic_reads_are_annotated(self):
        _, it = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY)");\nexecute("SELECT now() FROM %s");')
        self.assertIn("@ignore-values", it.out[1][1])


class Literals(unittest.TestCase):
    def test_overloads_static_format_and_query_text_assert_rows(self):
        helpers = (
            'private static List<Long> ts(Long... a) { return Arrays.asList(a); }\n'
            'private void check(String c, Long t) throws Throwable { check(c, null, t); }\n'
            'private void check(String c, List<Long> t) throws Throwable { check(c, null, t); }\n'
            'private void check(String c, String w, Long t) throws Throwable {\n'
            '    w = w == null ? "" : " WHERE " + w;\n'
            '    assertRows(format("SELECT WRITETIME(%s) FROM %%s%s", c, w), row(t)); }\n'
            'private void check(String c, String w, List<Long> t) throws Throwable {\n'
            '    w = w == null ? "" : " WHERE " + w;\n'
            '    assertRows(format("SELECT MAXWRITETIME(%s) FROM %%s%s", c, w), row(t)); }\n'
            'private void assertRows(String q, Object[]... rows) throws Throwable { assertRows(execute(q), rows); }')
        out, it = convert('createTable("CREATE TABLE %s (k int PRIMARY KEY, s set<int>)");\n'
                          'execute("INSERT INTO %s (k, s) VALUES (1, {1}) USING TIMESTAMP 1");\n'
                          'check("s", ts(1L));\ncheck("s[1]", 1L);\ncheck("s[1]", "k=1", 1L);', helpers)
        self.assertEqual(out[2:], ["SELECT MAXWRITETIME(s) FROM ks.table_00",
                                   "SELECT WRITETIME(s[1]) FROM ks.table_00",
                                   "SELECT WRITETIME(s[1]) FROM ks.table_00 WHERE k=1"])
        # Every write gave its timestamp: write times are compared, not ignored.
        self.assertEqual([n for _, n in it.out[2:]], [[], [], []])

    def test_bind_skips_question_marks_in_strings(self):
        self.assertEqual(bind("SELECT '?' FROM t WHERE k = ?", [5]), "SELECT '?' FROM t WHERE k = 5")

    def test_bind_counts_arguments(self):
        with self.assertRaises(Untranslatable):
            bind("SELECT * FROM t WHERE k = ?", [])

    def test_bytes_of_int_and_string(self):
        self.assertEqual(bytes(to_bytes(1)).hex(), "00000001")
        self.assertEqual(bytes(to_bytes("ab")).hex(), "6162")

    def test_udt_and_map_literals(self):
        self.assertEqual(bind("?", [Coll("udt", [("a", 1)])]), "{a: 1}")
        self.assertEqual(bind("?", [Coll("map", [("a", 1)])]), "{'a': 1}")


if __name__ == "__main__":
    unittest.main()
