#!/usr/bin/env python3
"""Groups the cu_* scripts that do not match into failure classes and writes FAILURES.md (most frequent first,
one example each: the statement, Cassandra's answer, the node's answer).

    failures.py --host 127.0.0.80 --port 9042 [--jobs 4] [--out FAILURES.md]

Every cu_* script is replayed; the first statement that differs from the golden file decides the class.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from corpus import GOLDEN, Runner, compare_statement, list_scripts  # noqa: E402

FEATURES = [("ALLOW FILTERING", r"ALLOW FILTERING"), ("GROUP BY", r"GROUP BY"), ("ORDER BY", r"ORDER BY"),
            ("JSON", r"\bJSON\b|fromJson|toJson"), ("DISTINCT", r"DISTINCT"), ("token()", r"token\s*\("),
            ("CONTAINS", r"CONTAINS"), ("IN", r"\bIN\s*\("), ("multi-column relation", r"\(\s*\w+\s*,\s*\w+.*\)\s*(=|<|>|IN)"),
            ("LIMIT", r"LIMIT"), ("CAST", r"\bCAST\b"), ("aggregate", r"\b(count|sum|avg|min|max)\s*\("),
            ("IF condition", r"\bIF\b"), ("BATCH", r"\bBATCH\b"), ("index", r"\bINDEX\b"), ("TYPE", r"\bTYPE\b")]


def verb(cql):
    words = cql.split()
    head = " ".join(words[:2]).upper()
    for v in ("CREATE TABLE", "CREATE TYPE", "CREATE INDEX", "CREATE CUSTOM", "CREATE FUNCTION", "CREATE AGGREGATE",
              "CREATE KEYSPACE", "ALTER TABLE", "ALTER TYPE", "ALTER KEYSPACE", "DROP TABLE", "DROP TYPE",
              "DROP INDEX", "DROP FUNCTION", "DROP AGGREGATE", "DROP KEYSPACE", "CREATE OR", "CREATE MATERIALIZED"):
        if head.startswith(v):
            return v
    return words[0].upper() if words else "?"


def feature(cql):
    for name, rx in FEATURES:
        if re.search(rx, cql, re.I):
            return name
    return "plain"


def normalize(msg):
    msg = re.sub(r"cu_[0-9a-f]{12}(_2)?", "KS", msg or "")
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", msg)
    return " ".join(msg.split()[:7])


def classify(gold, got):
    v, gk, k = verb(gold["cql"]), gold.get("kind"), got.get("kind")
    if gk == "error" and k != "error":
        return "%s: accepted where Cassandra refuses (%s %s)" % (v, gold.get("code"), normalize(gold.get("message")))
    if gk != "error" and k == "error" and "Unknown function" in (got.get("message") or ""):
        # One cause whatever the statement: a built-in function (5.0 snake_case names, math) is missing.
        return "any statement: refused with Unknown function (a Cassandra 5.0 built-in Helenus lacks)"
    if gk != "error" and k == "error":
        return "%s: refused where Cassandra accepts (%s %s)" % (v, got.get("code"), normalize(got.get("message")))
    if gk == "error":
        return "%s: error code %s instead of %s" % (v, got.get("code"), gold.get("code"))
    if gk != k:
        return "%s: result kind %s instead of %s" % (v, k, gk)
    if gk == "rows" and gold.get("columns") != got.get("columns"):
        return "%s: result columns/types differ (%s)" % (v, feature(gold["cql"]))
    if gk == "rows":
        return "%s: different rows (%s)" % (v, feature(gold["cql"]))
    return "%s: different %s result" % (v, gk)


def summary(r):
    if r.get("kind") == "error":
        return "error %s: %s" % (r.get("code"), (r.get("message") or "")[:200])
    if r.get("kind") == "rows":
        return "rows %s %s" % (json.dumps(r.get("columns"))[:150], json.dumps(r.get("rows"))[:250])
    return json.dumps({k: v for k, v in r.items() if k != "cql"})[:250]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.80")
    p.add_argument("--port", type=int, default=9042)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--out", default=os.path.join(HERE, "FAILURES.md"))
    args = p.parse_args()
    scripts = [s for s in list_scripts() if s[0].startswith("cu_")]
    runner = Runner(args.host, args.port, 20.0)

    def one(item):
        with open(os.path.join(GOLDEN, item[0], item[1] + ".json"), encoding="utf-8") as f:
            gold = json.load(f)
        got = runner.run_script(*item)
        for g, r in zip(gold["statements"], got["statements"]):
            if compare_statement(g, r):
                return item, classify(g, r), g, r
        return item, None, None, None

    classes = collections.defaultdict(list)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for item, cls, g, r in pool.map(one, scripts):
                if cls:
                    classes[cls].append(("%s/%s" % item, g, r))
    finally:
        runner.close()
    failing = sum(len(v) for v in classes.values())
    notes_path = os.path.join(HERE, "failures_notes.md")
    notes = open(notes_path, encoding="utf-8").read().strip().split("\n") + [""] if os.path.exists(notes_path) else []
    lines = ["# cu_* scripts that do not match Cassandra, by cause", ""] + notes + [
             "Generated by `failures.py` against %s:%d: %d of %d scripts fail. A script is counted once, under the "
             "first statement that differs; fixing a class may reveal later differences in the same scripts." % (
                 args.host, args.port, failing, len(scripts)), "",
             "| scripts | kind of difference |", "|---:|---|"]
    themes = collections.Counter()
    for cls, items in classes.items():
        themes[re.sub(r"^[^:]+: ", "", cls).split(" (")[0]] += len(items)
    lines += ["| %d | %s |" % (n, t) for t, n in themes.most_common()]
    lines += ["", "| # | scripts | class |", "|---:|---:|---|"]
    ranked = sorted(classes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for i, (cls, items) in enumerate(ranked, 1):
        lines.append("| %d | %d | %s |" % (i, len(items), cls.replace("|", "/")))
    lines.append("")
    for i, (cls, items) in enumerate(ranked, 1):
        name, g, r = items[0]
        lines += ["## %d. %s (%d)" % (i, cls, len(items)), "",
                  "Example `%s`; also: %s" % (name, ", ".join("`%s`" % n for n, _, _ in items[1:6]) or "none"), "",
                  "```", g["cql"][:600], "```", "",
                  "- Cassandra: %s" % summary(g), "- Helenus: %s" % summary(r), ""]
        if cls.startswith("any statement: refused with Unknown function"):
            names = collections.Counter(re.search(r"Unknown function '?([\w.]+)", r.get("message") or "").group(1)
                                        for _, _, r in items if re.search(r"Unknown function '?([\w.]+)", r.get("message") or ""))
            lines += ["Functions: %s" % ", ".join("`%s` (%d)" % kv for kv in names.most_common()), ""]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("%d failing scripts in %d classes -> %s" % (failing, len(classes), args.out))


if __name__ == "__main__":
    main()
