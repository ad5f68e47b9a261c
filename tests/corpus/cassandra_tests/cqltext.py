"""CQL text helpers for the converter: binding Java values into a statement, and checking that the corpus's
statement splitter will read a statement back whole."""

import re

from values import Untranslatable, to_cql

def splits_cleanly(q):
    """True when corpus.py would read q back as one whole statement: quotes, $$ bodies and block comments
    closed, no ';' outside them, no line comment that would swallow the statement's end."""
    i, n = 0, len(q)
    flat = " ".join(q.upper().split())
    batch = flat.startswith("BEGIN")
    if batch and not flat.endswith("APPLY BATCH"):
        return False
    while i < n:
        c = q[i]
        if c in ("'", '"'):
            j = i + 1
            while j < n:
                if q[j] == c:
                    if j + 1 < n and q[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                return False
            i = j + 1
            continue
        for opener, closer in (("$$", "$$"), ("/*", "*/")):
            if q.startswith(opener, i):
                j = q.find(closer, i + 2)
                if j < 0:
                    return False
                i = j + 2
                break
        else:
            if (c == ";" and not batch) or q.startswith("--", i) or q.startswith("//", i):
                return False
            i += 1
    return True


def bind(q, args):
    """Replaces each '?' outside strings, quoted names and comments with the CQL literal of its argument."""
    out, i, k, n = [], 0, 0, len(q)
    while i < n:
        c = q[i]
        if c in ("'", '"'):
            j = i + 1
            while j < n and not (q[j] == c and not (j + 1 < n and q[j + 1] == c)):
                j += 2 if q[j] == c else 1
            out.append(q[i:j + 1])
            i = j + 1
            continue
        if q.startswith("$$", i):
            j = q.find("$$", i + 2)
            j = n if j < 0 else j + 2
            out.append(q[i:j])
            i = j
            continue
        if c == "?":
            if k >= len(args):
                raise Untranslatable("fewer arguments than bind markers")
            in_ctx = re.search(r"\bIN\s*$", "".join(out[-3:]), re.I) is not None
            out.append(to_cql(args[k], in_context=in_ctx))
            k += 1
            i += 1
            continue
        if c == ":" and i + 1 < n and (q[i + 1].isalpha() or q[i + 1] == "_") and args and (i == 0 or q[i - 1] in " (,="):
            raise Untranslatable("named bind marker")
        out.append(c)
        i += 1
    if k != len(args):
        raise Untranslatable("%d arguments for %d bind markers" % (len(args), k))
    return "".join(out)

