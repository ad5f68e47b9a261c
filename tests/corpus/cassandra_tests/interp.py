"""Replays one @Test method of a CQLTester class and collects the CQL statements it sends, in order."""

import re

from javaexpr import JFloat, JLong, parse_expr, PRIMITIVES
from javasrc import split_statements
from cqltext import bind, splits_cleanly
from values import (PV, Blob, ClassRef, Coll, Lambda, Raw, ResultSet, SkipMethod, Unknown, Untranslatable, cast,
                    collection_method, java_format, java_str, string_method, to_bytes, unary)

TEST_KEYSPACE = "cql_test_keyspace"
TEST_KEYSPACE_ALT = "cql_test_keyspace_alt"
MAX_STATEMENTS = 400   # per script: loops over thousands of rows say nothing more than loops over a few hundred
MAX_HELPER_DEPTH = 6

# Helpers that send a statement which changes schema or data: leaving one out changes the rest of the method.
MUTATORS = {"assertSchemaChange", "createTable", "createType", "createFunction", "createAggregate", "createFunctionOverload",
            "createAggregateOverload", "createIndex", "createIndexAsync", "createView", "createViewAsync",
            "createKeyspace", "alterKeyspace", "schemaChange", "createTableMayThrow", "createIndexMayThrow",
            "createTableName", "createTypeName", "createKeyspaceName"}
EXECUTORS = {"execute", "executeNet", "executeNetWithPaging", "executeNetWithoutPaging", "executeView",
             "executeFormattedQuery", "executeInternal", "executeNetWithProtocolVersion"}
# (index of the query argument) for the helpers that expect the statement to fail.
EXPECT_ERROR = {"assertInvalid": 0, "assertInvalidMessage": 1, "assertInvalidThrow": 1,
                "assertInvalidThrowMessage": 2, "assertInvalidSyntax": 0, "assertInvalidSyntaxMessage": 1,
                "assertInvalidRequestMessage": 1, "assertInvalidMessageNet": 1}
# Assertions on a result: only the first argument (the execute call) is replayed.
RESULT_ASSERTS = {"assertRows", "assertRowsIgnoringOrder", "assertRowsIgnoringOrderAndExtra", "assertRowCount",
                  "assertEmpty", "assertColumnNames", "assertRowsNet", "assertRowCountNet", "assertOneRow",
                  "assertRowsContains", "assertAllRows", "assertColumnCount"}
NO_OPS = {"flush", "compact", "disableCompaction", "enableCompaction", "waitForIndexQueryable", "requireNetwork",
          "fail", "forcePreparedValues", "stopForcingPreparedValues", "waitForViewBuild", "waitForIndexBuilds",
          "registerFunction", "registerAggregate", "assertWarningsContain", "assertNoWarningContains", "logger", "println"}
# A method that touches the node's configuration, the clock or the user cannot be replayed as plain CQL.
NODE_STATE = {"DatabaseDescriptor", "StorageService", "Thread", "Uninterruptibles", "useUser", "useSuperUser",
              "executeNetWithAuth", "setPartitionerUnsafe", "CassandraRelevantProperties", "Guardrails",
              "TimeUnit", "sleep", "SchemaKeyspace", "Schema", "ClientState", "QueryProcessor",
              "Clock", "FBUtilities", "currentTimeMillis", "nanoTime", "prepare", "executePrepared",
              "StorageProxy", "sessionNet", "getSession", "truncateBlocking", "clearUnsafe", "loadNewSSTables",
              "importNewSSTables", "invalidate", "setNowInSeconds", "setDefaultTimeToLive"}
COLL_BUILDERS = {"list": "list", "set": "set", "linkedHashSet": "set", "map": "map", "linkedHashMap": "map",
                 "tuple": "tuple", "vector": "list"}
STATIC_BUILDERS = {("Arrays", "asList"): "list", ("List", "of"): "list", ("ImmutableList", "of"): "list",
                   ("Lists", "newArrayList"): "list", ("Set", "of"): "set", ("ImmutableSet", "of"): "set",
                   ("Sets", "newHashSet"): "set", ("Map", "of"): "map", ("ImmutableMap", "of"): "map",
                   ("Collections", "singletonList"): "list", ("Collections", "singleton"): "set",
                   ("Collections", "singletonMap"): "map", ("Collections", "emptyList"): "list",
                   ("Collections", "emptySet"): "set", ("Collections", "emptyMap"): "map",
                   ("ImmutableSet", "copyOf"): "set", ("Sets", "newTreeSet"): "set"}
CONSTANTS = {
    ("Integer", "MAX_VALUE"): 2 ** 31 - 1, ("Integer", "MIN_VALUE"): -2 ** 31,
    ("Long", "MAX_VALUE"): JLong(2 ** 63 - 1), ("Long", "MIN_VALUE"): JLong(-2 ** 63),
    ("Short", "MAX_VALUE"): 32767, ("Short", "MIN_VALUE"): -32768, ("Byte", "MAX_VALUE"): 127,
    ("Byte", "MIN_VALUE"): -128, ("Double", "NaN"): float("nan"), ("Double", "POSITIVE_INFINITY"): float("inf"),
    ("Double", "NEGATIVE_INFINITY"): float("-inf"), ("Float", "NaN"): JFloat("nan"),
    ("Float", "POSITIVE_INFINITY"): JFloat("inf"), ("Float", "NEGATIVE_INFINITY"): JFloat("-inf"),
    ("Double", "MAX_VALUE"): 1.7976931348623157e308, ("Double", "MIN_VALUE"): 5e-324,
    ("Float", "MAX_VALUE"): JFloat(3.4028234663852886e38), ("Float", "MIN_VALUE"): JFloat(1.401298464324817e-45),
    ("BigInteger", "ONE"): Raw("1"), ("BigInteger", "ZERO"): Raw("0"), ("BigInteger", "TEN"): Raw("10"),
    ("BigDecimal", "ONE"): Raw("1"), ("BigDecimal", "ZERO"): Raw("0"), ("BigDecimal", "TEN"): Raw("10"),
    ("ByteBufferUtil", "EMPTY_BYTE_BUFFER"): Blob(b""), ("Boolean", "TRUE"): True, ("Boolean", "FALSE"): False,
}
NONDETERMINISTIC = re.compile(r"\b(now|uuid|current_?timestamp|current_?date|current_?time|current_?timeuuid|"
                              r"ttl|random)\s*\(", re.I)
# Write times are the clock's unless every write of the method gave its own (`USING TIMESTAMP`).
WRITETIME = re.compile(r"\b(writetime|maxwritetime)\s*\(", re.I)
WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|BEGIN)\b", re.I)

CLUSTER_WIDE = re.compile(r"\bFROM\s+\"?system(_schema|_views|_virtual_schema|_auth|_distributed|_traces)?\"?\.", re.I)


class Return(Exception):
    def __init__(self, value):
        self.value = value


class Interpreter:
    def __init__(self, methods, fields, keyspace):
        self.methods, self.fields = methods, dict(fields)
        self.ks, self.ks2 = keyspace, keyspace + "_2"
        self.out = []            # (cql, notes)
        self.tables, self.types, self.views, self.keyspaces = [], [], [], []
        self.seq = 0
        self.uses_ks2 = False
        self.skipped = 0
        self.depth = 0
        self.field_cache = {}
        self._mut_cache = {}

    # ---------------------------------------------------------------- statements

    def run_method(self, method):
        touched = self.touches_node_state(method.body, set())
        if touched:
            raise SkipMethod("uses %s" % touched)
        try:
            self.exec_block(method.body, {})
        except Return:
            pass

    def touches_node_state(self, toks, seen):
        for i, t in enumerate(toks):
            if t.kind != "id":
                continue
            if t.val in NODE_STATE:
                return t.val
            helper = self.methods.get(t.val)
            if helper and t.val not in seen and i + 1 < len(toks) and toks[i + 1].val == "(":
                seen.add(t.val)
                found = self.touches_node_state(helper.body, seen)
                if found:
                    return found
        return None

    def exec_block(self, toks, env):
        for stmt in split_statements(toks):
            self.exec_guarded(stmt, env)

    def exec_guarded(self, stmt, env):
        mark = len(self.out)
        try:
            self.exec_stmt(stmt, env)
        except Untranslatable as e:
            del self.out[mark:]
            if self.mutates(stmt, set()):
                raise SkipMethod("untranslatable write: %s" % e)
            self.skipped += 1
        if len(self.out) > MAX_STATEMENTS:
            raise SkipMethod("more than %d statements" % MAX_STATEMENTS)

    def mutates(self, toks, seen):
        for i, t in enumerate(toks):
            if t.kind != "id" or i + 1 >= len(toks) or toks[i + 1].val != "(":
                continue
            if t.val in MUTATORS:
                return True
            if t.val in EXECUTORS:
                q = next((x for x in toks[i + 2:i + 8] if x.kind == "str"), None)
                if q is None or not q.val.lstrip().upper().startswith("SELECT"):
                    return True
            helper = self.methods.get(t.val)
            if helper and t.val not in seen:
                seen.add(t.val)
                if self.mutates(helper.body, seen):
                    return True
        return False

    def exec_stmt(self, s, env):
        head = s[0].val
        if head == "{":
            return self.exec_block(s[1:-1], env)
        if head == "for":
            return self.exec_for(s, env)
        if head == "if":
            return self.exec_if(s, env)
        if head == "try":
            return self.exec_try(s, env)
        if head in ("while", "do", "switch", "synchronized", "break", "continue", "assert", "class", "yield"):
            raise Untranslatable("%s statement" % head)
        if head == "return":
            raise Return(self.eval(parse_expr(s[1:-1]), env) if len(s) > 2 else None)
        if head == "throw":
            raise Return(None)
        body = s[:-1] if s[-1].val == ";" else s
        decl = self.declaration(body)
        if decl is not None:
            for name, init in decl:
                env[name] = self.eval(parse_expr(init), env) if init else None
            return None
        return self.eval(parse_expr(body), env)

    def declaration(self, toks):
        """[(name, init tokens)] when toks declare local variables, else None."""
        i = 0
        while i < len(toks) and toks[i].val in ("final", "@"):
            i += 1
        start = i
        if i >= len(toks) or toks[i].kind != "id":
            return None
        i += 1
        while i + 1 < len(toks) and toks[i].val == "." and toks[i + 1].kind == "id":
            i += 2
        if i < len(toks) and toks[i].val == "<":
            depth = 0
            while i < len(toks):
                depth += toks[i].val == "<"
                depth -= toks[i].val == ">"
                i += 1
                if depth == 0:
                    break
        while i + 1 < len(toks) and toks[i].val == "[" and toks[i + 1].val == "]":
            i += 2
        if i == start + 1 and toks[start].val in ("return", "new"):
            return None
        if i >= len(toks) or toks[i].kind != "id" or (i + 1 < len(toks) and toks[i + 1].val not in ("=", ",")):
            if not (i < len(toks) and toks[i].kind == "id" and i + 1 == len(toks)):
                return None
        out, j = [], i
        while j < len(toks):
            name = toks[j].val
            j += 1
            if j < len(toks) and toks[j].val == "=":
                k, depth = j + 1, 0
                while k < len(toks):
                    v = toks[k].val
                    if v in ("(", "[", "{"):
                        depth += 1
                    elif v in (")", "]", "}"):
                        depth -= 1
                    elif v == "," and depth == 0:
                        break
                    k += 1
                out.append((name, toks[j + 1:k]))
                j = k + 1
            else:
                out.append((name, None))
                j += 1
        return out

    def exec_for(self, s, env):
        from javasrc import match_close
        close = match_close(s, 1)
        header, body = s[2:close], s[close + 1:]
        colon = [k for k, t in enumerate(header) if t.val == ":"]
        semis = [k for k, t in enumerate(header) if t.val == ";"]
        if colon and not semis:
            name = header[colon[0] - 1].val
            items = self.eval(parse_expr(header[colon[0] + 1:]), env)
            if isinstance(items, Coll):
                items = [k for k, _ in items.items] if items.kind == "map" else items.items
            if not isinstance(items, list):
                raise Untranslatable("for-each over unknown")
            for x in items:
                env[name] = x
                self.exec_block(body, env)
            return
        if len(semis) != 2:
            raise Untranslatable("for header")
        init, cond, step = header[:semis[0]], header[semis[0] + 1:semis[1]], header[semis[1] + 1:]
        if init:
            self.exec_stmt(init + [type(init[0])("op", ";")], env)
        for _ in range(MAX_STATEMENTS + 1):
            c = self.eval(parse_expr(cond), env) if cond else True
            if not isinstance(c, bool):
                raise Untranslatable("loop condition unknown")
            if not c:
                return
            self.exec_block(body, env)
            if step:
                self.eval(parse_expr(step), env)
        raise SkipMethod("loop too long")

    def exec_if(self, s, env):
        from javasrc import end_of_statement, match_close
        close = match_close(s, 1)
        cond = self.eval(parse_expr(s[2:close]), env)
        if not isinstance(cond, bool):
            raise Untranslatable("if condition unknown")
        then_end = end_of_statement(s, close + 1)
        if cond:
            return self.exec_block(s[close + 1:then_end], env)
        if then_end < len(s) and s[then_end].val == "else":
            return self.exec_block(s[then_end + 1:], env)
        return None

    def exec_try(self, s, env):
        # The try block is replayed (what it expects to fail is recorded as Cassandra's error); catch blocks
        # hold Java-side checks, but one that writes would have to run only on failure: not replayable.
        from javasrc import end_of_statement
        i = 1
        if s[i].val == "(":
            raise Untranslatable("try-with-resources")
        end = end_of_statement(s, i)
        rest = s[end:]
        if self.mutates(rest, set()):
            raise SkipMethod("catch block writes")
        self.exec_block(s[i + 1:end - 1], env)

    # ---------------------------------------------------------------- expressions

    def eval(self, e, env):
        kind = e[0]
        if kind == "lit":
            return e[1]
        if kind == "str":
            return e[1]
        if kind == "name":
            return self.lookup(e[1], env)
        if kind == "opaque":
            return Unknown(e[1])
        if kind == "newarr":
            return [self.eval(x, env) for x in e[1]]
        if kind == "lambda":
            return Lambda(e[1], e[2], env)
        if kind == "cond":
            c = self.eval(e[1], env)
            if not isinstance(c, bool):
                return Unknown("condition")
            return self.eval(e[2] if c else e[3], env)
        if kind == "bin":
            return self.binary(e[1], e[2], e[3], env)
        if kind == "un":
            return unary(e[1], self.eval(e[2], env))
        if kind == "cast":
            return cast(e[1], self.eval(e[2], env))
        if kind == "assign":
            return self.assign(e, env)
        if kind == "incdec":
            target = e[2]
            if target[0] != "name" or not isinstance(env.get(target[1]), int):
                raise Untranslatable("++ on unknown")
            old = env[target[1]]
            env[target[1]] = type(old)(old + (1 if e[1] == "++" else -1))
            return env[target[1]] if e[3] else old
        if kind == "index":
            obj, idx = self.eval(e[1], env), self.eval(e[2], env)
            if isinstance(obj, list) and isinstance(idx, int) and -len(obj) <= idx < len(obj):
                return obj[idx]
            return Unknown("index")
        if kind == "member":
            return self.member(e, env)
        if kind == "new":
            return self.new(e[1], [self.eval(a, env) for a in e[2]])
        if kind == "call":
            return self.call(e[1], e[2], env)
        return Unknown(kind)

    def lookup(self, name, env):
        if name in env:
            return env[name]
        if name == "KEYSPACE":
            return TEST_KEYSPACE
        if name == "KEYSPACE_PER_TEST":
            return TEST_KEYSPACE_ALT
        if name == "EMPTY_BYTE_BUFFER":
            return Blob(b"")
        if name in self.fields:
            if name not in self.field_cache:
                self.field_cache[name] = Unknown("field")
                self.field_cache[name] = self.eval(parse_expr(self.fields[name]), {})
            return self.field_cache[name]
        if name[:1].isupper() or name in PRIMITIVES:
            return ClassRef(name)
        return Unknown("variable %s" % name)

    def assign(self, e, env):
        op, target, value = e[1], e[2], self.eval(e[3], env)
        if target[0] != "name":
            return value
        if op != "=":
            value = self.binary_values(op[0], env.get(target[1], Unknown("unset")), value)
        env[target[1]] = value
        return value

    def binary(self, op, a, b, env):
        left = self.eval(a, env)
        if op in ("&&", "||"):
            if not isinstance(left, bool):
                return Unknown("bool")
            if (op == "&&") != left:
                return left
            return self.eval(b, env)
        return self.binary_values(op, left, self.eval(b, env))

    def binary_values(self, op, x, y):
        if op == "+" and (isinstance(x, str) and not isinstance(x, Raw) or isinstance(y, str) and not isinstance(y, Raw)):
            try:
                return java_str(x) + java_str(y)
            except Untranslatable as ex:
                return Unknown(str(ex))
        if isinstance(x, Unknown) or isinstance(y, Unknown):
            return Unknown("operand")
        if op in ("==", "!="):
            same = x == y if not (isinstance(x, (list, Coll)) or isinstance(y, (list, Coll))) else x is y
            return same if op == "==" else not same
        nums = (int, float)
        if not (isinstance(x, nums) and isinstance(y, nums)) or isinstance(x, bool) or isinstance(y, bool):
            if op in ("&", "|", "^") and isinstance(x, bool) and isinstance(y, bool):
                return {"&": x and y, "|": x or y, "^": x != y}[op]
            return Unknown("operands of %s" % op)
        integral = isinstance(x, int) and isinstance(y, int)
        wrap = JLong if isinstance(x, JLong) or isinstance(y, JLong) else int
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            if y == 0:
                return Unknown("division by zero")
            r = int(x / y) if integral else x / y
        elif op == "%":
            if y == 0:
                return Unknown("division by zero")
            r = (abs(x) % abs(y)) * (1 if x >= 0 else -1) if integral else x % y
        elif op in ("<", ">", "<=", ">="):
            return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]
        elif integral and op in ("&", "|", "^", "<<", ">>", ">>>"):
            r = {"&": x & y, "|": x | y, "^": x ^ y, "<<": x << y, ">>": x >> y, ">>>": x >> y}[op]
        else:
            return Unknown("operator %s" % op)
        return wrap(r) if integral else (JFloat(r) if isinstance(x, JFloat) and isinstance(y, (JFloat, int)) else float(r))

    def member(self, e, env):
        obj = self.eval(e[1], env)
        name = e[2]
        if isinstance(obj, ClassRef):
            if (obj.name, name) in CONSTANTS:
                return CONSTANTS[(obj.name, name)]
            if obj.name == "ProtocolVersion":
                return PV
            if obj.name == "CQLTester" or obj.name == "SchemaConstants":
                return self.lookup(name, {})
            if name[:1].isupper() and name.upper() != name:
                return ClassRef(name)
            return Unknown("%s.%s" % (obj.name, name))
        if name == "length" and isinstance(obj, (list, str)):
            return len(obj)
        return Unknown("field %s" % name)

    def new(self, typ, args):
        base = typ.split(".")[-1]
        if base in ("BigInteger", "BigDecimal") and len(args) == 1 and isinstance(args[0], (str, int)):
            return Raw(str(args[0]))
        if base in ("String",) and args and isinstance(args[0], str):
            return args[0]
        if base in ("Integer", "Long", "Short", "Byte") and args and isinstance(args[0], int):
            return JLong(args[0]) if base == "Long" else int(args[0])
        if base in ("ArrayList", "LinkedList") and not args:
            return Coll("list", [])
        if base in ("HashSet", "TreeSet", "LinkedHashSet") and not args:
            return Coll("set", [])
        if base in ("HashMap", "TreeMap", "LinkedHashMap") and not args:
            return Coll("map", [])
        if base == "TupleValue":
            return Coll("tuple", args[0] if args and isinstance(args[0], list) else args)
        return Unknown("new %s" % base)

    # ---------------------------------------------------------------- calls

    def call(self, callee, arg_nodes, env):
        if callee[0] == "member":
            return self.method_call(callee, arg_nodes, env)
        name = callee[1]
        if name in RESULT_ASSERTS:
            first = self.eval(arg_nodes[0], env) if arg_nodes else None
            if isinstance(first, str) and name in self.methods:
                # The class's own overload taking the query text (`assertRows(String, Object[]...)`).
                rest = [self.eval(a, env) for a in arg_nodes[1:]]
                return self.call_helper(self.methods[name], [first] + rest)
            return first
        if name in EXPECT_ERROR:
            k = EXPECT_ERROR[name]
            args = [self.eval(a, env) for a in arg_nodes[k:]] if len(arg_nodes) > k else []
            if name == "assertInvalidThrowMessage" and args and not isinstance(args[0], str):
                args = args[1:]  # the Optional<ProtocolVersion> overload has its query one further on
            if not args:
                raise Untranslatable("assert without query")
            self.emit_formatted(self.format_table(args[0]), args[1:], ["expect-error"])
            return None
        if name in ("row", "rows", "assertTrue", "assertFalse") and name == "row":
            return Unknown("row")
        args = [self.eval(a, env) for a in arg_nodes]
        return self.builtin(name, args, env)

    def builtin(self, name, args, env):
        if name in EXECUTORS:
            args = [a for a in args if a is not PV]
            if not args:
                raise Untranslatable("execute without query")
            if name == "executeNetWithPaging":
                args = args[:1]
            if name == "executeFormattedQuery":
                q = args[0]
            elif name == "executeView":
                q = self.format_with(args[0], self.views[-1] if self.views else None, TEST_KEYSPACE)
            else:
                q = self.format_table(args[0])
            self.emit_formatted(q, args[1:], [])
            return ResultSet()
        if name == "format" and args and isinstance(args[0], str):
            return java_format(args[0], args[1:])  # `import static java.lang.String.format`
        if name == "shortFunctionName" and isinstance(args[0], str):
            return args[0].split(".")[-1]
        if name in ("createFunctionName", "createAggregateName"):
            return "%s.%s" % (args[0], self.next_name("function" if "Function" in name else "aggregate"))
        if name in ("schemaChange", "assertSchemaChange"):
            self.emit_formatted(args[0], [], [])
            return ResultSet()
        if name.startswith("create") and name in MUTATORS or name == "alterKeyspace":
            return self.create(name, args)
        if name in COLL_BUILDERS:
            kind = COLL_BUILDERS[name]
            if kind in ("map",):
                return Coll("map", list(zip(args[0::2], args[1::2])))
            return Coll(kind, args)
        if name == "userType":
            return Coll("udt", list(zip(args[0::2], args[1::2])))
        if name == "bytes":
            return to_bytes(args[0])
        if name == "keyspace":
            return TEST_KEYSPACE
        if name == "currentTable":
            return self.tables[-1] if self.tables else None
        if name == "currentView":
            return self.views[-1] if self.views else None
        if name == "currentKeyspace":
            return self.keyspaces[-1] if self.keyspaces else None
        if name == "unset":
            return Unknown("unset()")
        if name == "beforeAndAfterFlush":
            return self.call_lambda(args[0])
        if name in NO_OPS:
            return None
        if name in self.methods:
            return self.call_helper(self.methods[name], args)
        # An unknown helper (assertEquals, assertTrue ...): its arguments were evaluated for the statements
        # they send; lambdas it gets (assertThatThrownBy(() -> execute(...))) are run once.
        for a in args:
            if isinstance(a, Lambda) and not a.params:
                self.call_lambda(a)
        return Unknown("call %s" % name)

    def call_lambda(self, lam, args=()):
        if not isinstance(lam, Lambda):
            raise Untranslatable("not a lambda")
        env = dict(lam.env)
        env.update(zip(lam.params, args))
        if lam.body[0] == "block":
            try:
                self.exec_block(lam.body[1], env)
            except Return as r:
                return r.value
            return None
        return self.eval(lam.body, env)

    def call_helper(self, method, args):
        method = choose_overload(method, args)
        if self.depth >= MAX_HELPER_DEPTH:
            raise SkipMethod("helper recursion")
        self.depth += 1
        try:
            env = dict(zip(method.params, args))
            self.exec_block(method.body, env)
            return None
        except Return as r:
            return r.value
        finally:
            self.depth -= 1

    def method_call(self, callee, arg_nodes, env):
        recv_node, name = callee[1], callee[2]
        recv = self.eval(recv_node, env)
        args = [self.eval(a, env) for a in arg_nodes]
        if isinstance(recv, ClassRef):
            return self.static_call(recv.name, name, args)
        if isinstance(recv, str) and not isinstance(recv, Raw):
            return string_method(recv, name, args)
        if isinstance(recv, Coll) or isinstance(recv, list):
            return collection_method(recv, name, args)
        for a in args:
            if isinstance(a, Lambda) and not a.params:
                self.call_lambda(a)
        return Unknown("method %s" % name)

    def static_call(self, cls, name, args):
        if (cls, name) in STATIC_BUILDERS:
            kind = STATIC_BUILDERS[(cls, name)]
            if len(args) == 1 and isinstance(args[0], list):
                args = args[0]
            if len(args) == 1 and isinstance(args[0], Coll) and name in ("copyOf", "newArrayList", "newHashSet"):
                args = args[0].items
            if kind == "map":
                return Coll("map", list(zip(args[0::2], args[1::2])))
            return Coll(kind, args)
        if cls == "String" and name == "format":
            return java_format(args[0], args[1:])
        if cls == "String" and name == "valueOf":
            return java_str(args[0])
        if cls == "String" and name == "join":
            items = args[1].items if isinstance(args[1], Coll) else args[1:]
            return java_str(args[0]).join(java_str(x) for x in items)
        if cls in ("Integer", "Long", "Short", "Byte") and name in ("valueOf", "parseInt", "parseLong", "toString"):
            if name == "toString":
                return java_str(args[0])
            v = int(args[0]) if isinstance(args[0], (int, str)) else Unknown("number")
            return JLong(v) if cls == "Long" and isinstance(v, int) else v
        if cls in ("Float", "Double") and name in ("valueOf", "parseFloat", "parseDouble"):
            return JFloat(float(args[0])) if cls == "Float" else float(args[0])
        if cls == "UUID" and name == "fromString":
            return Raw(args[0])
        if cls == "TimeUUID" and name == "fromString":
            return Raw(args[0])
        if cls in ("BigInteger", "BigDecimal") and name == "valueOf" and isinstance(args[0], (int, float)):
            return Raw(str(args[0]) if isinstance(args[0], int) else repr(float(args[0])))
        if cls == "ByteBufferUtil" and name == "bytes":
            return to_bytes(args[0])
        if cls in ("ByteBufferUtil", "Hex") and name == "hexToBytes":
            return Blob(bytes.fromhex(args[0]))
        if cls == "InetAddress" and name == "getByName" and isinstance(args[0], str):
            return Raw("'%s'" % args[0])
        if cls == "Math" and name in ("abs", "max", "min") and all(isinstance(a, (int, float)) for a in args):
            return {"abs": abs, "max": max, "min": min}[name](*args)
        if cls == "Optional":
            return PV
        return Unknown("%s.%s" % (cls, name))

    # ---------------------------------------------------------------- schema helpers and emission

    def next_name(self, kind):
        name = "%s_%02d" % (kind, self.seq)
        self.seq += 1
        return name

    def create(self, name, args):
        if name == "createTableName":
            t = args[0] if args and isinstance(args[0], str) else self.next_name("table")
            self.tables.append(t)
            return t
        if name == "createTypeName":
            t = self.next_name("type")
            self.types.append(t)
            return t
        if name == "createKeyspaceName":
            k = self.next_name("keyspace")
            self.keyspaces.append(k)
            return k
        if name in ("createTable", "createTableMayThrow"):
            ks, q = (TEST_KEYSPACE, args[0]) if len(args) == 1 else (args[0], args[1])
            t = args[2] if len(args) > 2 and isinstance(args[2], str) else self.next_name("table")
            self.tables.append(t)
            self.emit(self.format_with(q, t, ks), [])
            return t
        if name == "createType":
            ks, q = (TEST_KEYSPACE, args[0]) if len(args) == 1 else (args[0], args[1])
            t = self.next_name("type")
            self.types.append(t)
            self.emit(java_format(q, [ks + "." + t]), [])
            return t
        if name in ("createFunction", "createAggregate"):
            f = "%s.%s" % (args[0], self.next_name("function" if name == "createFunction" else "aggregate"))
            self.emit(java_format(args[2], [f]), [])
            return f
        if name in ("createFunctionOverload", "createAggregateOverload"):
            self.emit(java_format(args[2], [args[0]]), [])
            return None
        if name == "createKeyspace":
            k = self.next_name("keyspace")
            self.keyspaces.append(k)
            self.emit(java_format(args[0], [k]), [])
            return k
        if name == "alterKeyspace":
            self.emit(java_format(args[0], [self.keyspaces[-1] if self.keyspaces else "null"]), [])
            return None
        if name in ("createIndex", "createIndexAsync", "createIndexMayThrow"):
            ks, q = (TEST_KEYSPACE, args[0]) if len(args) == 1 else (args[0], args[1])
            self.emit(self.format_with(q, self.tables[-1] if self.tables else None, ks), [])
            m = re.search(r"INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+ON", q, re.I)
            return m.group(1) if m else Unknown("index name")
        if name in ("createView", "createViewAsync"):
            v, q = (args[0], args[1]) if len(args) == 2 else (self.next_name("mv"), args[0])
            self.views.append(v)
            self.emit(java_format(q, [TEST_KEYSPACE + "." + v]), [])
            return v
        raise Untranslatable("helper %s" % name)

    def format_table(self, q):
        return self.format_with(q, self.tables[-1] if self.tables else None, TEST_KEYSPACE)

    @staticmethod
    def format_with(q, table, ks):
        if not isinstance(q, str):
            raise Untranslatable("query unknown")
        return q if table is None else java_format(q, [ks + "." + table])

    def emit_formatted(self, q, args, notes):
        if len(args) == 1 and isinstance(args[0], list):
            args = args[0]  # a Java array passed as the varargs array itself
        self.emit(bind(q, args), notes)

    def emit(self, q, notes):
        if not isinstance(q, str) or not q.strip():
            raise Untranslatable("empty query")
        q = re.sub(r"\b" + TEST_KEYSPACE_ALT + r"\b", self.ks2, q, flags=re.I)
        if re.search(r"\b" + self.ks2 + r"\b", q):
            self.uses_ks2 = True
        q = re.sub(r"\b" + TEST_KEYSPACE + r"\b", self.ks, q, flags=re.I)
        q = q.strip().rstrip(";").strip()
        if not splits_cleanly(q):
            raise Untranslatable("statement the script splitter would cut or run on")
        notes = list(notes)
        if WRITE.search(q) and not re.search(r"\bTIMESTAMP\b", q, re.I):
            self.untimed_writes = True
        timed = not getattr(self, "untimed_writes", False)
        if q[:6].upper() == "SELECT" and (NONDETERMINISTIC.search(q) or (WRITETIME.search(q) and not timed)):
            notes.append("@ignore-values")
        if q[:6].upper() == "SELECT" and CLUSTER_WIDE.search(q) and not re.search(r"\bWHERE\b", q, re.I):
            # Sees every keyspace of the node: other scripts run beside this one, and system keyspaces differ.
            notes.append("@ignore")
        self.out.append((q, notes))


def choose_overload(method, args):
    """The overload of `method` a Java compiler would pick for `args`: the right arity, then the
    first whose collection parameters get collections and whose scalar parameters get scalars."""
    fitting = [m for m in method.overloads if len(m.params) == len(args)]
    if len(fitting) <= 1:
        return fitting[0] if fitting else method

    def accepts(declared, value):
        if value is None or isinstance(value, Unknown):
            return True
        is_collection = isinstance(value, (Coll, list))
        wants_collection = any(k in declared for k in ("List", "Set", "Map", "Collection", "[]"))
        return is_collection == wants_collection

    for m in fitting:
        if all(accepts(t, a) for t, a in zip(m.param_types, args)):
            return m
    return fitting[-1]
