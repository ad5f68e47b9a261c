#!/usr/bin/env python3
"""Functions longer than a limit in the crates' non-test sources (issue 17: none over ~150 lines).

    python3 tests/fn_lengths.py            # list functions over 80 lines, longest first
    python3 tests/fn_lengths.py --check    # exit 1 if any function is over 150 lines

A function is counted from its `fn` line to the closing brace at the same indentation. Test files
(`tests/`, `benches/`, `tests.rs`, `*_tests.rs`) and `#[cfg(test)]` modules at the end of a file are
skipped: a long table-driven test is one idea.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FN_RE = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?(unsafe\s+)?(const\s+)?fn\s+(\w+)")
LIMIT = 150


def functions(path):
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return  # the test module runs to the end of the file
        m = FN_RE.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = " " * len(m.group(1))
        for j in range(i + 1, len(lines)):
            tail = lines[j][len(indent):]
            if lines[j].startswith(indent + "}") and (len(tail) == 1 or tail[1] in " ,;)"):
                yield (j - i + 1, i + 1, m.group(7))
                break


def main():
    check = "--check" in sys.argv
    found = []
    for f in sorted((ROOT / "crates").rglob("*.rs")):
        rel = f.relative_to(ROOT)
        if "tests" in rel.parts or "benches" in rel.parts or f.name == "tests.rs" or f.name.endswith("_tests.rs"):
            continue
        for n, line, name in functions(f):
            if n > (LIMIT if check else 80):
                found.append((n, f"{rel}:{line}", name))
    for n, where, name in sorted(found, reverse=True):
        print(f"{n:5} {where} {name}")
    if check and found:
        print(f"{len(found)} function(s) over {LIMIT} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
