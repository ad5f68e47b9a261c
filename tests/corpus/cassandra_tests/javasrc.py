"""A small Java reader for Cassandra's CQL unit tests: tokens, classes' methods and fields, expression trees.

It is not a Java compiler. It understands just enough of the language the CQLTester-based tests are written in
(string concatenation, literals, calls, casts, lambdas, simple for loops) for convert.py to replay the CQL they
send; anything it does not understand becomes an `Opaque` node that the interpreter refuses to evaluate.
"""

import re

TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<text>\"\"\"[ \t]*\n.*?\"\"\")
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<chr>'(?:\\.|[^'\\\n])+')
  | (?P<num>0[xX][0-9a-fA-F_]+[lL]?|(?:\d[\d_]*\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[fFdDlL]?)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>>>>=|<<=|>>=|\.\.\.|->|::|\+\+|--|&&|\|\||[=!<>+\-*/%&|^]=|[{}()\[\];,.=<>!~?:+\-*/%&|^@])
""", re.S | re.X)

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "'": "'", '"': '"', "\\": "\\", "s": " "}


class Tok:
    __slots__ = ("kind", "val")

    def __init__(self, kind, val):
        self.kind, self.val = kind, val

    def __repr__(self):
        return "%s:%s" % (self.kind, self.val)


def unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "u":
                j = i + 1
                while j < len(body) and body[j] == "u":
                    j += 1
                out.append(chr(int(body[j:j + 4], 16)))
                i = j + 4
                continue
            out.append(ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def text_block(raw):
    lines = raw[3:-3].split("\n")[1:]
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return unescape("\n".join(l[indent:] for l in lines))


def tokenize(src):
    toks, pos = [], 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            toks.append(Tok("op", src[pos]))
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup
        v = m.group(kind)
        if kind in ("ws", "comment"):
            continue
        if kind == "text":
            toks.append(Tok("str", text_block(v)))
        elif kind == "str":
            toks.append(Tok("str", unescape(v[1:-1])))
        elif kind == "chr":
            toks.append(Tok("chr", unescape(v[1:-1])))
        else:
            toks.append(Tok(kind, v))
    return toks


def match_close(toks, i):
    """Index of the bracket closing the one at toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener = toks[i].val
    closer = pairs[opener]
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind == "op":
            if t.val == opener:
                depth += 1
            elif t.val == closer:
                depth -= 1
                if depth == 0:
                    return j
    return len(toks) - 1


# ----------------------------------------------------------------------------------------------------------
# Class structure.

class Method:
    def __init__(self, name, params, body, annotations, param_types=None):
        self.name, self.params, self.body, self.annotations = name, params, body, annotations
        # The declared type of each parameter, as text ("List<Long>"), to choose among overloads.
        self.param_types = param_types or [""] * len(params)
        # Every method of the class with this name, this one included (Java overloads).
        self.overloads = [self]


def parse_class(src):
    """Returns (class name, superclass, methods by name (the last overload, with `overloads` holding all),
    [(field name, init tokens)])."""
    toks = tokenize(src)
    cls, sup = None, None
    for i, t in enumerate(toks):
        if t.kind == "id" and t.val == "class" and i + 1 < len(toks):
            cls = toks[i + 1].val
            j = i + 2
            if j < len(toks) and toks[j].val == "<":
                depth = 0
                while j < len(toks):
                    depth += toks[j].val == "<"
                    depth -= toks[j].val == ">"
                    j += 1
                    if depth == 0:
                        break
            if j < len(toks) and toks[j].val == "extends":
                sup = toks[j + 1].val
            break
    start = next((i for i, t in enumerate(toks) if t.val == "{"), None)
    if start is None:
        return cls, sup, {}, []
    end = match_close(toks, start)
    methods, fields = {}, []
    i = start + 1
    annotations = []
    while i < end:
        t = toks[i]
        if t.val == "@":
            name = toks[i + 1].val
            annotations.append(name)
            i += 2
            if i < end and toks[i].val == "(":
                i = match_close(toks, i) + 1
            continue
        # One member: up to ';' or a body '{...}' at depth 0.
        j = i
        while j < end and toks[j].val not in (";", "{", "="):
            if toks[j].val in ("(", "["):
                j = match_close(toks, j)
            j += 1
        if j >= end:
            break
        if toks[j].val == "=":
            k = j
            while k < end and toks[k].val != ";":
                if toks[k].val in ("(", "[", "{"):
                    k = match_close(toks, k)
                k += 1
            if j > i and toks[j - 1].kind == "id":
                fields.append((toks[j - 1].val, toks[j + 1:k]))
            i = k + 1
            annotations = []
            continue
        if toks[j].val == ";":
            i = j + 1
            annotations = []
            continue
        # '{': a method, constructor, static block or nested class.
        close = match_close(toks, j)
        head = toks[i:j]
        paren = next((k for k, x in enumerate(head) if x.val == "("), None)
        if paren is not None and paren > 0 and head[paren - 1].kind == "id" and "class" not in [x.val for x in head]:
            pclose = match_close(head, paren)
            name = head[paren - 1].val
            params = head[paren + 1:pclose]
            method = Method(name, param_names(params), toks[j + 1:close], annotations, param_types(params))
            if name in methods:
                method.overloads = methods[name].overloads + [method]
            methods[name] = method
        i = close + 1
        annotations = []
    return cls, sup, methods, fields


def param_types(toks):
    """The type of each parameter of a parameter list, as its tokens' text without the name."""
    types, depth, current = [], 0, []
    for t in toks:
        if t.val == "<":
            depth += 1
        elif t.val == ">":
            depth -= 1
        if t.val == "," and depth == 0:
            types.append("".join(x.val for x in current[:-1]))
            current = []
        else:
            current.append(t)
    if current:
        types.append("".join(x.val for x in current[:-1]))
    return types


def param_names(toks):
    names, depth, last = [], 0, None
    for t in toks:
        if t.val == "<":
            depth += 1
        elif t.val == ">":
            depth -= 1
        elif t.val == "," and depth == 0:
            if last:
                names.append(last)
            last = None
        elif t.kind == "id":
            last = t.val
    if last:
        names.append(last)
    return names


# ----------------------------------------------------------------------------------------------------------
# Statements.

def split_statements(toks):
    """Splits a block's tokens into statements: lists of tokens, blocks kept whole with their header."""
    out, i, n = [], 0, len(toks)
    while i < n:
        t = toks[i]
        if t.val == "{":
            j = match_close(toks, i)
            out.append(toks[i:j + 1])
            i = j + 1
            continue
        if t.kind == "id" and t.val in ("for", "while", "if", "synchronized", "switch"):
            j = i + 1
            j = match_close(toks, j) + 1  # the (...) header
            j = end_of_statement(toks, j)
            if t.val == "if":
                while j < n and toks[j].val == "else":
                    j = end_of_statement(toks, j + 1)
            out.append(toks[i:j])
            i = j
            continue
        if t.kind == "id" and t.val in ("try", "do"):
            j = i + 1
            if t.val == "try" and toks[j].val == "(":
                j = match_close(toks, j) + 1
            j = end_of_statement(toks, j)
            while j < n and toks[j].val in ("catch", "finally", "while"):
                if toks[j].val == "while":
                    j = end_of_statement(toks, j + 1)
                    break
                j += 1
                if toks[j].val == "(":
                    j = match_close(toks, j) + 1
                j = end_of_statement(toks, j)
            out.append(toks[i:j])
            i = j
            continue
        j = end_of_statement(toks, i)
        out.append(toks[i:j])
        i = j
    return [s for s in out if s and not (len(s) == 1 and s[0].val == ";")]


def end_of_statement(toks, i):
    """Index just past the statement starting at i (a block, a compound statement or one ending with ';')."""
    n = len(toks)
    if i < n and toks[i].val == "{":
        return match_close(toks, i) + 1
    if i < n and toks[i].kind == "id" and toks[i].val in ("for", "while", "if", "try", "do", "synchronized"):
        return i + len(split_statements(toks[i:])[0])
    j = i
    while j < n and toks[j].val != ";":
        if toks[j].val in ("(", "[", "{"):
            j = match_close(toks, j)
        j += 1
    return j + 1
