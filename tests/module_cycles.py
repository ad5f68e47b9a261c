#!/usr/bin/env python3
"""Module dependency cycles inside a crate, from its `use` lines and paths (issue 17).

Reads every .rs file under crates/<crate>/src, maps it to its module path (src/exec/select/plan.rs ->
exec::select::plan), collects the modules it names through `crate::...`, `super::...` and `self::...` paths, and
collapses modules to a depth (storage: its top-level modules; server: the modules under `exec`, and the top
level). Strongly connected groups of more than one module are cycles.

    python3 tests/module_cycles.py                  # print the cycles of every checked crate
    python3 tests/module_cycles.py --check          # exit 1 if a cycle is new or larger than recorded
    python3 tests/module_cycles.py --record         # rewrite the record (tests/module_cycles.json)

The record is a ratchet: the reshaping of issue 17 removes cycles and re-records; `--check` (run by
tests/run-all.sh) keeps new ones from appearing meanwhile.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "module_cycles.json"
# crate -> module prefixes whose children are the nodes of the graph ("" = the crate's top level)
CHECKED = {
    "storage": [""],
    "mutation": [""],
    "server": ["", "exec"],
    "cql": [""],
    "protocol": [""],
    "schema": [""],
    "cluster": [""],
    "coordinator": [""],
}

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")
USE_GROUP_RE = re.compile(r"\buse\s+(crate|super|self)::([^;]*);", re.S)


def module_of(src: Path, f: Path):
    parts = list(f.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return parts


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def strip_tests(text):
    """Drops `#[cfg(test)] mod ... { ... }` blocks: tests may reach anywhere."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def expand_group(head, body):
    """`a::{b, c::d}` -> [a::b, a::c::d] (one level of nesting is enough for module names)."""
    body = body.strip()
    if "{" not in body:
        return [head + "::" + body.split(" as ")[0].strip()]
    prefix, _, rest = body.partition("{")
    rest = rest.rsplit("}", 1)[0]
    items, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    items.append(cur)
    out = []
    for it in items:
        it = it.strip()
        if it:
            out.extend(expand_group(head + "::" + prefix.rstrip(":"), it))
    return out


def resolve(kind, rest, here):
    names = [p for p in rest.split("::") if p]
    if kind == "crate":
        base = []
    elif kind == "self":
        base = list(here)
    else:
        base = list(here[:-1])
        while names and names[0] == "super":
            base = base[:-1]
            names = names[1:]
    return base + names


def graph(crate):
    src = ROOT / "crates" / crate / "src"
    files = [f for f in src.rglob("*.rs") if "bin" not in f.relative_to(src).parts[:1]]
    modules = {tuple(module_of(src, f)): f for f in files}
    edges = {}
    for mod, f in modules.items():
        text = strip_tests(strip_comments(f.read_text()))
        targets = []
        for m in USE_GROUP_RE.finditer(text):
            for path in expand_group(m.group(1), m.group(2)):
                kind, _, rest = path.partition("::")
                targets.append(resolve(kind, rest, list(mod)))
        for m in PATH_RE.finditer(text):
            if m.group(2) == "::{":
                continue
            targets.append(resolve(m.group(1), m.group(2), list(mod)))
        deps = set()
        for t in targets:
            # the longest prefix of the path that is a module
            for n in range(len(t), 0, -1):
                if tuple(t[:n]) in modules:
                    deps.add(tuple(t[:n]))
                    break
        edges[mod] = deps - {mod}
    return modules, edges


def collapse(mod, prefix):
    """The node a module belongs to at the level under `prefix` (None if outside it)."""
    pre = [p for p in prefix.split("::") if p]
    if list(mod[: len(pre)]) != pre or len(mod) <= len(pre):
        return None
    return "::".join(mod[: len(pre) + 1])


def sccs(nodes, adj):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def cycles():
    found = {}
    for crate, prefixes in CHECKED.items():
        modules, edges = graph(crate)
        for prefix in prefixes:
            adj, nodes = {}, set()
            for a, deps in edges.items():
                ca = collapse(a, prefix)
                if ca is None:
                    continue
                nodes.add(ca)
                for b in deps:
                    cb = collapse(b, prefix)
                    if cb is not None and cb != ca:
                        adj.setdefault(ca, set()).add(cb)
            key = crate + ("::" + prefix if prefix else "")
            found[key] = sccs(nodes, adj)
    return found


def main(argv):
    found = cycles()
    if "--record" in argv:
        RECORD.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"recorded {sum(len(v) for v in found.values())} cycles into {RECORD}")
        return 0
    for key, comps in found.items():
        for c in comps:
            print(f"{key}: cycle of {len(c)} modules: {', '.join(c)}")
    if "--check" not in argv:
        return 0
    recorded = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    bad = []
    for key, comps in found.items():
        allowed = [set(c) for c in recorded.get(key, [])]
        for c in comps:
            # A cycle is tolerated while it fits inside one the record already holds.
            if not any(set(c) <= a for a in allowed):
                bad.append(f"{key}: new or larger cycle: {', '.join(c)}")
    for b in bad:
        print(b)
    print(f"module cycles: {sum(len(v) for v in found.values())} found, {len(bad)} new or larger")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
