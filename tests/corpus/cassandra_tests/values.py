"""Java values as the converter models them, and how they are written as CQL literals and Java strings."""

import math
import re

from javaexpr import JFloat, JLong


class Untranslatable(Exception):
    """This statement cannot be replayed as CQL text."""


class SkipMethod(Exception):
    """Dropping the untranslatable statement would change what the rest of the method means."""


class Unknown:
    """A value the converter cannot know (a result set, a timestamp taken at run time ...)."""

    def __init__(self, why):
        self.why = why

    def __repr__(self):
        return "Unknown(%s)" % self.why


class Coll:
    """list / set / map / tuple / udt / vector; map and udt items are (key, value) pairs."""

    def __init__(self, kind, items):
        self.kind, self.items = kind, list(items)


class Blob(bytes):
    pass


class Raw(str):
    """Already a CQL literal (uuid, varint, decimal, inet)."""


class ClassRef:
    def __init__(self, name):
        self.name = name


class Lambda:
    def __init__(self, params, body, env):
        self.params, self.body, self.env = params, body, env


class ResultSet:
    """What execute() returns: only its presence matters."""


PV = ClassRef("ProtocolVersion")


def java_str(v):
    """String.valueOf(v) for the values modelled here."""
    if isinstance(v, Unknown):
        raise Untranslatable("string of unknown value: %s" % v.why)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, Coll) and v.kind in ("list", "set"):
        return "[" + ", ".join(java_str(x) for x in v.items) + "]"
    raise Untranslatable("string of %s" % type(v).__name__)


def java_double(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == int(v) and abs(v) < 1e7:
        return "%d.0" % int(v)
    if 1e-3 <= abs(v) < 1e7:
        return repr(float(v))
    m, e = ("%.17g" % v).split("e") if "e" in ("%.17g" % v) else (repr(v), "0")
    return "%sE%d" % (repr(float(m)), int(e))


def cql_str(s):
    return "'" + s.replace("'", "''") + "'"


def to_cql(v, in_context=False):
    """The CQL literal of a bound Java value."""
    if isinstance(v, Unknown):
        raise Untranslatable("bound value unknown: %s" % v.why)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, Blob):
        return "0x" + bytes(v).hex()
    if isinstance(v, str):
        return cql_str(v)
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(float(v)) if not isinstance(v, JFloat) else float_repr(v)
    if isinstance(v, Coll):
        if v.kind in ("map", "udt"):
            return "{" + ", ".join("%s: %s" % (k if v.kind == "udt" else to_cql(k), to_cql(x)) for k, x in v.items) + "}"
        parts = ", ".join(to_cql(x) for x in v.items)
        if v.kind == "set":
            return "{" + parts + "}"
        if v.kind == "tuple" or in_context:
            return "(" + parts + ")"
        return "[" + parts + "]"
    raise Untranslatable("no CQL literal for %s" % type(v).__name__)


def float_repr(v):
    # The shortest decimal that reads back as the same 32-bit float, like Java's Float.toString.
    import struct
    f32 = struct.unpack("f", struct.pack("f", v))[0]
    for digits in range(1, 10):
        s = "%.*g" % (digits, f32)
        if struct.unpack("f", struct.pack("f", float(s)))[0] == f32:
            return s if any(c in s for c in ".en") else s + ".0"
    return repr(f32)


def to_bytes(v):
    """ByteBufferUtil.bytes(v)."""
    if isinstance(v, Unknown):
        raise Untranslatable("bytes of unknown")
    if isinstance(v, bool):
        raise Untranslatable("bytes of boolean")
    if isinstance(v, str):
        return Blob(v.encode("utf-8"))
    if isinstance(v, JLong):
        return Blob(int(v).to_bytes(8, "big", signed=True))
    if isinstance(v, int):
        return Blob(int(v).to_bytes(4, "big", signed=True))
    if isinstance(v, float):
        import struct
        return Blob(struct.pack(">f" if isinstance(v, JFloat) else ">d", v))
    raise Untranslatable("bytes of %s" % type(v).__name__)


FORMAT_RE = re.compile(r"%(?:(\d+)\$)?([-#+ 0,(]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])")


def java_format(fmt, args):
    """String.format for %s %d %x %f %n %% (the conversions the tests use)."""
    if isinstance(fmt, Unknown) or not isinstance(fmt, str):
        raise Untranslatable("format string unknown")
    pos = [0]

    def sub(m):
        idx, flags, width, prec, conv = m.groups()
        if conv == "%":
            return "%"
        if conv == "n":
            return "\n"
        if idx:
            k = int(idx) - 1
        else:
            k = pos[0]
            pos[0] += 1
        if k >= len(args):
            raise Untranslatable("format argument missing")
        a = args[k]
        if conv in ("s", "S"):
            s = java_str(a)
            s = s.upper() if conv == "S" else s
        elif conv == "d":
            if isinstance(a, Unknown) or not isinstance(a, int):
                raise Untranslatable("%d of non-int")
            s = str(int(a))
        elif conv in ("x", "X"):
            s = "%x" % int(a)
        elif conv == "f":
            s = "%.*f" % (int(prec) if prec else 6, a)
        else:
            raise Untranslatable("format %" + conv)
        if width:
            s = s.rjust(int(width), "0" if "0" in flags else " ") if "-" not in flags else s.ljust(int(width))
        return s

    return FORMAT_RE.sub(sub, str(fmt))


def unary(op, v):
    if isinstance(v, Unknown):
        return v
    if op == "!":
        return (not v) if isinstance(v, bool) else Unknown("!")
    if op == "-" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return type(v)(-v) if isinstance(v, (JLong, JFloat)) else -v
    if op == "+":
        return v
    if op == "~" and isinstance(v, int):
        return ~v
    return Unknown("unary %s" % op)


def cast(typ, v):
    if isinstance(v, Unknown) or isinstance(v, bool):
        return v
    if typ in ("int", "short", "byte") and isinstance(v, (int, float)):
        bits = {"int": 32, "short": 16, "byte": 8}[typ]
        x = int(v) & ((1 << bits) - 1)
        return x - (1 << bits) if x >= 1 << (bits - 1) else x
    if typ == "long" and isinstance(v, (int, float)):
        return JLong(int(v))
    if typ == "float" and isinstance(v, (int, float)):
        return JFloat(v)
    if typ == "double" and isinstance(v, (int, float)):
        return float(v)
    return v


def string_method(s, name, args):
    if any(isinstance(a, Unknown) for a in args):
        return Unknown("string argument")
    simple = {"toUpperCase": lambda: s.upper(), "toLowerCase": lambda: s.lower(), "trim": lambda: s.strip(),
              "length": lambda: len(s), "isEmpty": lambda: not s, "toString": lambda: s, "intern": lambda: s}
    if name in simple and not args:
        return simple[name]()
    if name == "replace" and len(args) == 2:
        return s.replace(java_str(args[0]), java_str(args[1]))
    if name == "substring" and args and all(isinstance(a, int) for a in args):
        return s[args[0]:args[1]] if len(args) == 2 else s[args[0]:]
    if name == "equals" and len(args) == 1:
        return s == args[0]
    if name == "contains":
        return java_str(args[0]) in s
    if name == "startsWith":
        return s.startswith(java_str(args[0]))
    if name == "concat":
        return s + java_str(args[0])
    if name == "repeat" and isinstance(args[0], int):
        return s * args[0]
    if name == "format" or name == "formatted":
        return java_format(s, args)
    return Unknown("String.%s" % name)


def collection_method(c, name, args):
    items = c.items if isinstance(c, Coll) else c
    if name == "size" and not args:
        return len(items)
    if name == "get" and len(args) == 1 and isinstance(args[0], int) and 0 <= args[0] < len(items):
        return items[args[0]]
    if name == "add" and len(args) == 1:
        items.append(args[0])
        return True
    if name == "put" and len(args) == 2 and isinstance(c, Coll):
        c.items.append((args[0], args[1]))
        return None
    return Unknown("collection.%s" % name)
