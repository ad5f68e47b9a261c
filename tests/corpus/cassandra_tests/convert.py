#!/usr/bin/env python3
"""Turns Apache Cassandra's CQL unit tests (CQLTester classes) into differential corpus scripts.

    convert.py GIT_DIR [--ref REF]      # GIT_DIR: a clone or bare mirror of apache/cassandra

Reads test/unit/org/apache/cassandra/cql3/{,validation/entities,validation/operations,validation/miscellaneous}
at REF (default: the newest cassandra-5.0 branch or tag found), replays every @Test method with interp.py and
writes one script per method to ../scripts/cu_<class>/<method>.cql, plus CONVERSION.md (what was converted and
what was skipped, and why). Only the CQL statements are kept: expected results come from recording the scripts
against a real Cassandra (corpus.py record), not from the Java assertions.

Statements listed in annotations.json ({"family/method": {"<statement>": "@ignore-values"}}) get that
annotation: they are the ones whose results differ between two runs on Cassandra itself.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from interp import Interpreter  # noqa: E402
from javasrc import parse_class  # noqa: E402
from values import SkipMethod, Untranslatable  # noqa: E402

SCRIPTS = os.path.join(HERE, "..", "scripts")
BASE = "test/unit/org/apache/cassandra/cql3"
DIRS = ["", "validation/entities", "validation/operations", "validation/miscellaneous"]
PREFIX = "cu_"
# Families that only exercise features the reference node has disabled (user-defined functions' sandbox,
# materialized views) or the node's Java internals: every statement would record the same refusal.
EXCLUDED = re.compile(r"^(UF\w*|View\w*|CQLTesterTest|PstmtPersistenceTest|KeywordSplit\w*|RandomSchemaTest)$")
# Bases that are CQLTester themselves or thin wrappers of it whose helpers convert.py does not need.
TESTER_BASES = {"CQLTester", "CQLTester.InMemory", "InMemory", "Fuzzed"}


def git(gitdir, *args):
    return subprocess.run(["git", "-C", gitdir] + list(args), check=True, capture_output=True,
                          text=True, errors="replace").stdout


def default_ref(gitdir):
    refs = git(gitdir, "for-each-ref", "--format=%(refname:short)").split()
    for pattern in (r"^(origin/)?cassandra-5\.0$", r"^cassandra-5\.0\.\d+$"):
        found = sorted((r for r in refs if re.match(pattern, r)), key=lambda r: [int(x) for x in re.findall(r"\d+", r)])
        if found:
            return found[-1]
    return "HEAD"


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def family_names(paths):
    """cu_<class> per test class; a class name used in two packages gets its package in front."""
    by_class = collections.defaultdict(list)
    for p in paths:
        by_class[os.path.basename(p)[:-5]].append(p)
    out = {}
    for cls, ps in by_class.items():
        base = snake(re.sub(r"Test$", "", cls))
        for p in ps:
            pkg = os.path.basename(os.path.dirname(p))
            out[p] = PREFIX + (base if len(ps) == 1 else "%s_%s" % (pkg if pkg != "cql3" else "cql3", base))
    return out


def keyspace_for(family, method):
    return "cu_" + hashlib.sha1(("%s/%s" % (family, method)).encode()).hexdigest()[:12]


KEYSPACE_NAME_RE = re.compile(r"\bCREATE\s+KEYSPACE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z]\w*)", re.I)


def private_keyspaces(interp):
    """Keyspace names a test spells out (CREATE KEYSPACE testXYZ) are shared by every script that uses them, and
    scripts run in parallel: each script gets its own copy of the name. system* names stay (their refusal is the
    point)."""
    names = {}
    for cql, _ in interp.out:
        for name in KEYSPACE_NAME_RE.findall(cql):
            low = name.lower()
            if low.startswith("system") or low.startswith(interp.ks) or low in names or low in ("with", "if", "not") \
                    or len(low) > 48:  # too long to be valid: the refusal is the point, and nothing is created
                continue
            names[low] = ("%s_%s" % (interp.ks, low))[:48]
    return names


def rename_keyspaces(cql, names):
    for low, new in names.items():
        cql = re.sub(r"(?<![\w.\"'])%s\b(?!['\"])" % re.escape(low), new, cql, flags=re.I)
    return cql


def render_script(source, family, method, interp, notes_override):
    ks = interp.ks
    renamed = private_keyspaces(interp)
    interp.out = [(rename_keyspaces(cql, renamed), notes) for cql, notes in interp.out]
    create = "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};"
    lines = ["-- converted by cassandra_tests/convert.py from %s::%s" % (source, method),
             "DROP KEYSPACE IF EXISTS %s;" % ks, create % ks]
    if interp.uses_ks2:
        lines += ["DROP KEYSPACE IF EXISTS %s;" % interp.ks2, create % interp.ks2]
    for cql, notes in interp.out:
        notes = set(notes)
        if cql in notes_override:
            notes.add(notes_override[cql])
        if "@ignore" in notes:
            notes.discard("@ignore-values")
        tags = [n for n in sorted(notes) if n.startswith("@")]
        if "expect-error" in notes:
            lines.append("-- expects an error")
        if tags:
            lines.append("-- " + " ".join(tags))
        lines.append(cql + ";")
    for k in sorted(set(renamed.values()) | {k for k in interp.keyspaces if k.lower() not in renamed}):
        lines.append("DROP KEYSPACE IF EXISTS %s;" % k)
    if interp.uses_ks2:
        lines.append("DROP KEYSPACE IF EXISTS %s;" % interp.ks2)
    lines.append("DROP KEYSPACE %s;" % ks)
    return "\n".join(lines) + "\n"


def convert_class(src, path, family, annotations, stats):
    cls, sup, methods, fields = parse_class(src)
    st = stats[family]
    st["source"] = path
    written = {}
    for name, m in methods.items():
        if "Test" not in m.annotations or "Ignore" in m.annotations:
            continue
        st["methods"] += 1
        interp = Interpreter({k: v for k, v in methods.items() if "Test" not in v.annotations}, fields,
                             keyspace_for(family, name))
        try:
            interp.run_method(m)
        except SkipMethod as e:
            st["skipped"][short_reason(str(e))] += 1
            continue
        except (Untranslatable, RecursionError, TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
            st["skipped"]["converter: %s" % short_reason("%s %s" % (type(e).__name__, e))] += 1
            continue
        if not interp.out:
            st["skipped"]["no CQL statement"] += 1
            continue
        st["converted"] += 1
        st["statements"] += len(interp.out)
        st["dropped_statements"] += interp.skipped
        written[name] = render_script(path, family, name, interp, annotations.get("%s/%s" % (family, name), {}))
    return written


def short_reason(s):
    s = re.sub(r"\d+", "N", s)
    return s[:70]


def write_report(stats, ref):
    lines = ["# Conversion of Cassandra's CQL unit tests", "",
             "Generated by `convert.py` from apache/cassandra `%s`. A method is skipped when a statement it needs" % ref,
             "cannot be written as CQL text (a value computed at run time, a loop over unknown data, node settings",
             "changed from Java); statements that only read are dropped alone (`dropped`).", "",
             "| family | source class | @Test methods | scripts | statements | dropped | skipped methods (reasons) |",
             "|---|---|---:|---:|---:|---:|---|"]
    tot = collections.Counter()
    for fam in sorted(stats):
        st = stats[fam]
        reasons = "; ".join("%s: %d" % (r, n) for r, n in st["skipped"].most_common(4))
        lines.append("| %s | %s | %d | %d | %d | %d | %s |" % (
            fam, os.path.basename(st["source"]), st["methods"], st["converted"], st["statements"],
            st["dropped_statements"], reasons.replace("|", "/")))
        for k in ("methods", "converted", "statements", "dropped_statements"):
            tot[k] += st[k]
    lines.append("| **total** | | %d | %d | %d | %d | |" % (tot["methods"], tot["converted"], tot["statements"],
                                                          tot["dropped_statements"]))
    with open(os.path.join(HERE, "CONVERSION.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return tot


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gitdir")
    p.add_argument("--ref")
    p.add_argument("--out", default=SCRIPTS, help="scripts directory (default: the corpus's)")
    args = p.parse_args()
    ref = args.ref or default_ref(args.gitdir)
    files = git(args.gitdir, "ls-tree", "--name-only", ref, *["%s/%s/" % (BASE, d) if d else BASE + "/" for d in DIRS])
    paths = [f for f in files.split("\n") if f.endswith("Test.java")]
    with open(os.path.join(HERE, "annotations.json"), encoding="utf-8") as f:
        annotations = json.load(f)
    stats = collections.defaultdict(lambda: {"methods": 0, "converted": 0, "statements": 0, "dropped_statements": 0,
                                             "skipped": collections.Counter(), "source": ""})
    families = family_names(paths)
    os.makedirs(args.out, exist_ok=True)
    for d in os.listdir(args.out):
        if d.startswith(PREFIX):
            shutil.rmtree(os.path.join(args.out, d))
    for path in sorted(paths):
        cls = os.path.basename(path)[:-5]
        if EXCLUDED.match(cls):
            continue
        src = git(args.gitdir, "show", "%s:%s" % (ref, path))
        m = re.search(r"\bclass\s+%s\b[^{]*\bextends\s+([\w.]+)" % cls, src)
        if not m or m.group(1) not in TESTER_BASES:
            continue
        written = convert_class(src, path.replace(BASE + "/", ""), families[path], annotations, stats)
        if written:
            d = os.path.join(args.out, families[path])
            os.makedirs(d, exist_ok=True)
            for name, text in written.items():
                with open(os.path.join(d, name + ".cql"), "w", encoding="utf-8") as f:
                    f.write(text)
    tot = write_report(stats, ref)
    print("%d classes, %d @Test methods, %d scripts, %d statements (%d read-only statements dropped)" % (
        len(stats), tot["methods"], tot["converted"], tot["statements"], tot["dropped_statements"]))


if __name__ == "__main__":
    main()
