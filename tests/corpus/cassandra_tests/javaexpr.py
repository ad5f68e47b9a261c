"""Java expressions as trees of tuples, for the subset the CQL unit tests use.

Nodes: ("lit", value) ("str", s) ("name", id) ("member", obj, id) ("call", callee, args) ("new", type, args)
("newarr", items) ("index", obj, idx) ("bin", op, a, b) ("un", op, a) ("cast", type, a) ("cond", c, a, b)
("assign", op, target, value) ("incdec", op, target, prefix) ("lambda", params, body_tokens_or_expr)
("opaque", why). Parsing never raises: what it cannot read becomes ("opaque", ...).
"""

from javasrc import Tok, match_close

PRIMITIVES = {"int", "long", "short", "byte", "float", "double", "boolean", "char"}
BINARY = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">=", "instanceof"),
    ("<<", ">>", ">>>"), ("+", "-"), ("*", "/", "%"),
]
ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "|=", "&="}


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else Tok("eof", "")

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, v):
        if self.peek().val != v:
            raise SyntaxError("expected %r got %r" % (v, self.peek().val))
        return self.take()

    def parse(self):
        try:
            e = self.assignment()
            if self.i < len(self.t):
                return ("opaque", "trailing tokens at %r" % self.peek().val)
            return e
        except (SyntaxError, IndexError, ValueError) as ex:
            return ("opaque", str(ex))

    def assignment(self):
        lam = self.try_lambda()
        if lam:
            return lam
        left = self.ternary()
        if self.peek().val in ASSIGN:
            op = self.take().val
            return ("assign", op, left, self.assignment())
        return left

    def try_lambda(self):
        p = self.peek()
        if p.kind == "id" and self.peek(1).val == "->":
            self.i += 2
            return ("lambda", [p.val], self.lambda_body())
        if p.val == "(":
            j = match_close(self.t, self.i)
            if j + 1 < len(self.t) and self.t[j + 1].val == "->":
                params = [x.val for x in self.t[self.i + 1:j] if x.kind == "id"]
                self.i = j + 2
                return ("lambda", params, self.lambda_body())
        return None

    def lambda_body(self):
        if self.peek().val == "{":
            j = match_close(self.t, self.i)
            body = self.t[self.i + 1:j]
            self.i = j + 1
            return ("block", body)
        return self.assignment()

    def ternary(self):
        c = self.binary(0)
        if self.peek().val == "?":
            self.take()
            a = self.assignment()
            self.expect(":")
            b = self.assignment()
            return ("cond", c, a, b)
        return c

    def binary(self, level):
        if level == len(BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().val in BINARY[level] or self.shift_op(level):
            op = self.shift_op(level) or self.take().val
            if op == "instanceof":
                self.type_tokens()
                left = ("opaque", "instanceof")
                continue
            right = self.binary(level + 1)
            left = ("bin", op, left, right)
        return left

    def shift_op(self, level):
        # '>>' is lexed as two '>' so that generics close; rebuild it here.
        if BINARY[level][0] != "<<":
            return None
        if self.peek().val == ">" and self.peek(1).val == ">":
            n = 3 if self.peek(2).val == ">" else 2
            self.i += n
            return ">" * n
        return None

    def unary(self):
        p = self.peek()
        if p.val in ("-", "+", "!", "~"):
            self.take()
            return ("un", p.val, self.unary())
        if p.val in ("++", "--"):
            self.take()
            return ("incdec", p.val, self.unary(), True)
        if p.val == "(" and self.is_cast():
            j = match_close(self.t, self.i)
            typ = " ".join(x.val for x in self.t[self.i + 1:j])
            self.i = j + 1
            return ("cast", typ, self.unary())
        return self.postfix(self.primary())

    def is_cast(self):
        j = match_close(self.t, self.i)
        inner = self.t[self.i + 1:j]
        if not inner or any(x.kind not in ("id",) and x.val not in (".", "<", ">", "[", "]", ",", "?") for x in inner):
            return False
        nxt = self.t[j + 1] if j + 1 < len(self.t) else Tok("eof", "")
        if inner[0].val in PRIMITIVES and len(inner) <= 3:
            return nxt.kind != "eof" and nxt.val not in (")", ";", ",", "+", "*", "/", "?", ":", "==", "!=", "<", ">")
        if inner[0].val[:1].isupper():
            return nxt.kind in ("id", "num", "str", "chr") or nxt.val in ("(",)
        return False

    def type_tokens(self):
        out = [self.take().val]
        while self.peek().val == "." and self.peek(1).kind == "id":
            self.take()
            out.append(self.take().val)
        if self.peek().val == "<":
            j, depth = self.i, 0
            while j < len(self.t):
                depth += self.t[j].val == "<"
                depth -= self.t[j].val == ">"
                j += 1
                if depth == 0:
                    break
            self.i = j
        while self.peek().val == "[" and self.peek(1).val == "]":
            self.i += 2
            out.append("[]")
        return ".".join(out)

    def args(self):
        self.expect("(")
        out = []
        if self.peek().val == ")":
            self.take()
            return out
        while True:
            out.append(self.assignment())
            if self.peek().val == ",":
                self.take()
                continue
            self.expect(")")
            return out

    def array_init(self):
        self.expect("{")
        items = []
        while self.peek().val != "}":
            items.append(self.array_init() if self.peek().val == "{" else self.assignment())
            if self.peek().val == ",":
                self.take()
        self.expect("}")
        return ("newarr", items)

    def primary(self):
        p = self.take()
        if p.kind == "str":
            return ("str", p.val)
        if p.kind == "chr":
            return ("lit", p.val)
        if p.kind == "num":
            return ("lit", number(p.val))
        if p.val == "(":
            e = self.assignment()
            self.expect(")")
            return e
        if p.val == "{":
            self.i -= 1
            return self.array_init()
        if p.kind == "id":
            if p.val in ("true", "false"):
                return ("lit", p.val == "true")
            if p.val == "null":
                return ("lit", None)
            if p.val == "new":
                typ = self.type_tokens()
                if self.peek().val == "[":
                    while self.peek().val == "[":
                        j = match_close(self.t, self.i)
                        self.i = j + 1
                    return self.array_init() if self.peek().val == "{" else ("opaque", "sized array")
                if typ.endswith("[]"):
                    return self.array_init()
                a = self.args()
                if self.peek().val == "{":  # anonymous class
                    self.i = match_close(self.t, self.i) + 1
                    return ("opaque", "anonymous class")
                return ("new", typ, a)
            if p.val in PRIMITIVES and self.peek().val == ".":
                return ("name", p.val)
            return ("name", p.val)
        if p.val == "<":  # explicit generic call like Collections.<T>emptyList()
            raise SyntaxError("generic call")
        raise SyntaxError("unexpected %r" % p.val)

    def postfix(self, e):
        while True:
            p = self.peek()
            if p.val == "(" and e[0] in ("name", "member"):
                e = ("call", e, self.args())
            elif p.val == ".":
                self.take()
                if self.peek().val == "<":
                    j, depth = self.i, 0
                    while True:
                        depth += self.t[j].val == "<"
                        depth -= self.t[j].val == ">"
                        j += 1
                        if depth == 0:
                            break
                    self.i = j
                name = self.take()
                if name.kind != "id":
                    raise SyntaxError("member %r" % name.val)
                e = ("member", e, name.val)
            elif p.val == "::":
                self.take()
                e = ("opaque", "method reference %s" % self.take().val)
            elif p.val == "[":
                self.take()
                idx = self.assignment()
                self.expect("]")
                e = ("index", e, idx)
            elif p.val in ("++", "--"):
                self.take()
                e = ("incdec", p.val, e, False)
            else:
                return e


class JLong(int):
    """A Java long literal (ByteBufferUtil.bytes() writes 8 bytes for it, 4 for an int)."""


class JFloat(float):
    """A Java float literal (printed with float precision)."""


def number(s):
    s = s.replace("_", "")
    low = s.lower()
    if low.startswith("0x"):
        v = int(low[2:].rstrip("l"), 16)
        return JLong(v) if low.endswith("l") else v
    if low.endswith("l"):
        return JLong(int(low[:-1]))
    if low.endswith("f"):
        return JFloat(float(low[:-1]))
    if low.endswith("d"):
        return float(low[:-1])
    if any(c in low for c in ".e"):
        return float(low)
    v = int(low)
    if len(low) > 1 and low.startswith("0") and low.isdigit():
        v = int(low, 8)
    return v


def parse_expr(toks):
    return Parser(toks).parse()
