#!/usr/bin/env python3
"""Prints, comma-separated for `corpus.py record --only`, the cu_* scripts whose golden file is missing,
broken or recorded from other statements, so that a re-conversion re-records only what changed."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from corpus import GOLDEN, list_scripts, split_statements, SCRIPTS  # noqa: E402


def stale():
    out = []
    for fam, name in list_scripts():
        if not fam.startswith("cu_"):
            continue
        gp = os.path.join(GOLDEN, fam, name + ".json")
        with open(os.path.join(SCRIPTS, fam, name + ".cql"), encoding="utf-8") as f:
            stmts = [(s, n) for s, n in split_statements(f.read())]
        try:
            with open(gp, encoding="utf-8") as f:
                gold = json.load(f)
        except (OSError, ValueError):
            out.append("%s/%s" % (fam, name))
            continue
        recorded = [(g.get("cql"), g.get("notes", [])) for g in gold.get("statements", [])]
        if gold.get("runner_error") or recorded != stmts:
            out.append("%s/%s" % (fam, name))
    return out


if __name__ == "__main__":
    print(",".join(stale()))
