#!/usr/bin/env python3
"""Replays the cu_* scripts against the node they were recorded from and writes every statement whose result
differs from its golden one into annotations.json (@ignore-values when only the values differ, @ignore
otherwise), so that the next convert.py run annotates it. Run it until Cassandra matches itself fully.

    selfcheck.py --host 127.0.0.2 --port 9042 [--only fam/name,...] [--jobs 4]
"""

import argparse
import concurrent.futures
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from corpus import GOLDEN, Runner, compare_statement, list_scripts  # noqa: E402

ANNOTATIONS = os.path.join(HERE, "annotations.json")


def note_for(gold, got):
    same_shape = (gold.get("kind") == got.get("kind") == "rows" and gold.get("columns") == got.get("columns")
                  and len(gold.get("rows", [])) == len(got.get("rows", [])))
    return "@ignore-values" if same_shape else "@ignore"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.2")
    p.add_argument("--port", type=int, default=9042)
    p.add_argument("--only")
    p.add_argument("--jobs", type=int, default=4)
    args = p.parse_args()
    scripts = [s for s in list_scripts() if s[0].startswith("cu_")]
    if args.only:
        wanted = set(args.only.split(","))
        scripts = [s for s in scripts if "%s/%s" % s in wanted]
    runner = Runner(args.host, args.port, 30.0)

    def one(item):
        fam, name = item
        with open(os.path.join(GOLDEN, fam, name + ".json"), encoding="utf-8") as f:
            gold = json.load(f)
        got = runner.run_script(fam, name)
        found = {}
        for g, r in zip(gold["statements"], got["statements"]):
            if compare_statement(g, r):
                found[g["cql"]] = note_for(g, r)
        return "%s/%s" % item, found

    with open(ANNOTATIONS, encoding="utf-8") as f:
        annotations = json.load(f)
    added = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for key, found in pool.map(one, scripts):
                for cql, note in found.items():
                    prev = annotations.setdefault(key, {}).get(cql)
                    if prev != "@ignore":
                        annotations[key][cql] = note
                        added += 1
                        print("%s: %s %s" % (key, note, cql[:120]))
    finally:
        runner.close()
    with open(ANNOTATIONS, "w", encoding="utf-8") as f:
        json.dump(annotations, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%d scripts replayed, %d statements annotated" % (len(scripts), added))


if __name__ == "__main__":
    main()
