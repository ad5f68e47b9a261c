"""Unit tests for the corpus runner's pure parts: statement splitting, value rendering, comparison.

    $(tests/corpus/setup.sh) -m unittest discover -s tests/corpus -p 'test_*.py'
"""

import decimal
import unittest
import uuid

import corpus


class SplitStatements(unittest.TestCase):
    def test_semicolons_inside_strings_identifiers_and_dollar_bodies_do_not_split(self):
        text = "INSERT INTO t (k, v) VALUES (1, 'a;b');\nSELECT \"x;y\" FROM t;\nSELECT $$c;d$$ FROM t;"
        self.assertEqual([s for s, _ in corpus.split_statements(text)],
                         ["INSERT INTO t (k, v) VALUES (1, 'a;b')", 'SELECT "x;y" FROM t', "SELECT $$c;d$$ FROM t"])

    def test_doubled_quote_escape_stays_in_string(self):
        stmts = corpus.split_statements("SELECT 'it''s;' FROM t; SELECT 1 FROM t;")
        self.assertEqual(stmts[0][0], "SELECT 'it''s;' FROM t")
        self.assertEqual(len(stmts), 2)

    def test_annotation_applies_to_next_statement_only(self):
        stmts = corpus.split_statements("-- @ignore-values\nSELECT now() FROM t;\nSELECT 1 FROM t;")
        self.assertEqual(stmts[0][1], ["@ignore-values"])
        self.assertEqual(stmts[1][1], [])

    def test_plain_comments_are_dropped_before_a_statement(self):
        stmts = corpus.split_statements("-- hello; world\n// x;y\n/* a;b */ SELECT 1 FROM t;")
        self.assertEqual(len(stmts), 1)
        self.assertTrue(stmts[0][0].endswith("SELECT 1 FROM t"))

    def test_batch_runs_until_apply_batch(self):
        text = "BEGIN BATCH INSERT INTO t (k) VALUES (1); INSERT INTO t (k) VALUES (2); APPLY BATCH;\nSELECT * FROM t;"
        stmts = corpus.split_statements(text)
        self.assertEqual(len(stmts), 2)
        self.assertTrue(stmts[0][0].endswith("APPLY BATCH"))


class Render(unittest.TestCase):
    def test_scalars_are_tagged_so_types_stay_distinct(self):
        self.assertEqual(corpus.render(1.5), "f:1.5")
        self.assertEqual(corpus.render(decimal.Decimal("1.50")), "d:1.50")
        self.assertEqual(corpus.render(b"\x01\xff"), "0x01ff")
        self.assertEqual(corpus.render(uuid.UUID(int=0)), "uuid:00000000-0000-0000-0000-000000000000")
        self.assertEqual(corpus.render(7), 7)
        self.assertIsNone(corpus.render(None))

    def test_collections_keep_server_order(self):
        self.assertEqual(corpus.render([3, 1, 2]), [3, 1, 2])
        self.assertEqual(corpus.render({"b": 1, "a": 2}), {"map": [["b", 1], ["a", 2]]})
        self.assertEqual(corpus.render((1, "x")), {"tuple": [1, "x"]})


class Compare(unittest.TestCase):
    ROWS = {"cql": "SELECT", "kind": "rows", "columns": [["k", "int"]], "rows": [[1]]}

    def test_error_messages_are_not_compared_but_codes_are(self):
        gold = {"cql": "X", "kind": "error", "code": "0x2200", "message": "a"}
        self.assertIsNone(corpus.compare_statement(gold, dict(gold, message="b")))
        self.assertIsNotNone(corpus.compare_statement(gold, dict(gold, code="0x2000")))

    def test_ignore_values_compares_row_count_only(self):
        gold = dict(self.ROWS, notes=["@ignore-values"])
        self.assertIsNone(corpus.compare_statement(gold, dict(self.ROWS, rows=[[2]])))
        self.assertIsNotNone(corpus.compare_statement(gold, dict(self.ROWS, rows=[])))

    def test_row_order_matters(self):
        gold = dict(self.ROWS, rows=[[1], [2]])
        self.assertIsNotNone(corpus.compare_statement(gold, dict(self.ROWS, rows=[[2], [1]])))

    def test_script_with_extra_statements_does_not_match(self):
        gold = {"statements": [self.ROWS]}
        self.assertIsNone(corpus.compare_script(gold, {"statements": [self.ROWS]}))
        self.assertIsNotNone(corpus.compare_script(gold, {"statements": [self.ROWS, self.ROWS]}))


class Floors(unittest.TestCase):
    PER_FAMILY = {"lwt": (98, 100), "json": (100, 100), "cu_select": (80, 100), "cu_json": (90, 100)}

    def test_prefixed_families_are_judged_apart_from_the_main_floor(self):
        groups, failed = corpus.judge(self.PER_FAMILY, 0.98, corpus.parse_floors(["cu_=0.85"]))
        self.assertEqual(groups["main"], (198, 200, 0.98))
        self.assertEqual(groups["cu_*"], (170, 200, 0.85))
        self.assertEqual(failed, [])

    def test_a_group_below_its_floor_fails_even_when_the_main_group_passes(self):
        _, failed = corpus.judge(self.PER_FAMILY, 0.98, corpus.parse_floors(["cu_=0.9"]))
        self.assertEqual(len(failed), 1)
        self.assertIn("cu_*", failed[0])

    def test_without_floors_every_family_counts_against_min_rate(self):
        _, failed = corpus.judge(self.PER_FAMILY, 0.98, [])
        self.assertEqual(len(failed), 1)
        self.assertIn("main", failed[0])


if __name__ == "__main__":
    unittest.main()
