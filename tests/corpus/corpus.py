#!/usr/bin/env python3
"""Differential CQL corpus runner: records golden results from a real Cassandra 5.0 and replays them.

    corpus.py record --host H --port P [--family F] [--jobs N]
    corpus.py check  --host H --port P [--family F] [--min-rate R] [--group-floor PREFIX=R] [--report PATH]

Every script under scripts/<family>/<name>.cql is split into statements and run one by one on its own
session (protocol v4, simple statements, all results fetched at once). For each statement the raw
protocol outcome is kept: result kind (void / rows / set_keyspace / schema_change), for rows the column
names, CQL types and rendered values, for errors the protocol error code and message. `record` writes
golden/<family>/<name>.json; `check` replays and compares (codes compared, messages not).

Statement annotations are `--` comments directly before a statement:
    -- @ignore-values   compare only kind, column metadata and row count (non-deterministic values)
    -- @ignore          run the statement but do not compare anything about it
"""

import argparse
import concurrent.futures
import re
import datetime
import decimal
import ipaddress
import json
import os
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
GOLDEN = os.path.join(HERE, "golden")

try:
    from cassandra import cqltypes, util
    from cassandra.cluster import Cluster, ResponseFuture, ExecutionProfile, EXEC_PROFILE_DEFAULT
    from cassandra.policies import RetryPolicy, WhiteListRoundRobinPolicy
    from cassandra.protocol import ErrorMessage, ResultMessage, _ProtocolHandler
    from cassandra.query import SimpleStatement, tuple_factory
    from cassandra.marshal import int64_unpack
except ImportError:  # pragma: no cover - guidance for a missing venv
    sys.stderr.write("cassandra-driver missing: run tests/corpus/setup.sh and use the venv python it prints\n")
    raise


# ----------------------------------------------------------------------------------------------------------
# Driver adjustments. The goal is to see what the server sent, not what the driver makes of it.

_orig_set_result = ResponseFuture._set_result


def _capturing_set_result(self, host, connection, pool, response):
    # Keep the raw protocol message: the driver hides the result kind and turns some errors into exceptions
    # that no longer carry the protocol code.
    self._corpus_response = response
    return _orig_set_result(self, host, connection, pool, response)


ResponseFuture._set_result = _capturing_set_result

# Sets come back from the server in its own (type-specific) order; the driver would re-sort them in Python.
cqltypes.SetType.adapter = list
# Timestamps outside Python's datetime range would fail to decode; the raw epoch millis are exact anyway.
cqltypes.DateType.deserialize = staticmethod(lambda byts, protocol_version: int64_unpack(byts))


class NeverRetry(RetryPolicy):
    """Every error must surface exactly once, as the server sent it."""

    def on_read_timeout(self, *args, **kwargs):
        return self.RETHROW, None

    def on_write_timeout(self, *args, **kwargs):
        return self.RETHROW, None

    def on_unavailable(self, *args, **kwargs):
        return self.RETHROW, None

    def on_request_error(self, *args, **kwargs):
        return self.RETHROW, None


# ----------------------------------------------------------------------------------------------------------
# Script parsing.

def split_statements(text):
    """Split a CQL script into (statement, annotations) pairs.

    Understands '...' strings (with '' escapes), "..." identifiers, $$...$$ bodies, -- and // line comments
    and /* */ block comments, so a ';' inside any of them does not end a statement.
    """
    out = []
    buf = []
    notes = set()
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        two = text[i:i + 2]
        if two in ("--", "//"):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comment = text[i + 2:j].strip()
            if comment.startswith("@") and not "".join(buf).strip():
                notes.update(w for w in comment.split() if w.startswith("@"))
            elif "".join(buf).strip():
                buf.append(text[i:j])
            i = j
            continue
        if two == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            buf.append(text[i:j])
            i = j
            continue
        if two == "$$":
            j = text.find("$$", i + 2)
            j = n if j < 0 else j + 2
            buf.append(text[i:j])
            i = j
            continue
        if c in ("'", '"'):
            j = i + 1
            while j < n:
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i:j + 1])
            i = j + 1
            continue
        if c == ";":
            stmt = "".join(buf).strip()
            head = stmt[:5].upper()
            if head == "BEGIN" and not stmt.upper().replace("\n", " ").rstrip().endswith("APPLY BATCH"):
                # Statements inside a batch end with ';' too; the batch ends at APPLY BATCH.
                buf.append(c)
                i += 1
                continue
            if stmt:
                out.append((stmt, sorted(notes)))
            buf = []
            notes = set()
            i += 1
            continue
        buf.append(c)
        i += 1
    stmt = "".join(buf).strip()
    if stmt:
        out.append((stmt, sorted(notes)))
    return out


def list_scripts(family=None):
    result = []
    families = sorted(os.listdir(SCRIPTS)) if os.path.isdir(SCRIPTS) else []
    for fam in families:
        if family and fam not in family.split(","):
            continue
        d = os.path.join(SCRIPTS, fam)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".cql"):
                result.append((fam, name[:-4]))
    return result


# ----------------------------------------------------------------------------------------------------------
# Deterministic rendering of decoded values.

def render(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return "f:" + repr(v)
    if isinstance(v, decimal.Decimal):
        return "d:" + str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return "uuid:" + str(v)
    if isinstance(v, util.Date):
        return "date:" + str(v)
    if isinstance(v, util.Time):
        return "time:" + str(v)
    if isinstance(v, util.Duration):
        return "duration:%d,%d,%d" % (v.months, v.days, v.nanoseconds)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return "dt:" + v.isoformat()
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return "inet:" + str(v)
    if isinstance(v, util.OrderedMap) or isinstance(v, dict):
        return {"map": [[render(k), render(x)] for k, x in v.items()]}
    if hasattr(v, "_fields"):  # UDT decoded as a namedtuple
        return {"udt": [[f, render(getattr(v, f))] for f in v._fields]}
    if isinstance(v, tuple):
        return {"tuple": [render(x) for x in v]}
    if isinstance(v, (list, set, frozenset, util.SortedSet)):
        return [render(x) for x in v]
    return "repr:" + repr(v)


def type_name(t):
    try:
        return t.cql_parameterized_type()
    except Exception:  # noqa: BLE001 - a type the driver can't name still gets a stable name
        return getattr(t, "__name__", repr(t))


# ----------------------------------------------------------------------------------------------------------
# Execution.

class Runner:
    def __init__(self, host, port, timeout):
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([host]),
            retry_policy=NeverRetry(),
            row_factory=tuple_factory,
            request_timeout=timeout,
        )
        self.cluster = Cluster(
            [host], port=port, protocol_version=4,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            # The corpus needs no driver-side schema model; refreshing it after every DDL only costs time.
            schema_metadata_enabled=False, token_metadata_enabled=False,
            max_schema_agreement_wait=0, connect_timeout=30, control_connection_timeout=30,
        )
        self.cluster.connect().shutdown()
        self.timeout = timeout

    def close(self):
        self.cluster.shutdown()

    def run_statement(self, session, cql):
        stmt = SimpleStatement(cql, fetch_size=None)
        try:
            fut = session.execute_async(stmt, timeout=self.timeout)
        except Exception as e:  # noqa: BLE001 - a client-side refusal is an outcome too
            return {"kind": "client_error", "message": "%s: %s" % (type(e).__name__, e)}
        try:
            fut.result()
        except Exception as e:  # noqa: BLE001
            resp = getattr(fut, "_corpus_response", None)
            if isinstance(resp, ErrorMessage):
                return {"kind": "error", "code": "0x%04x" % resp.code, "message": str(resp.message)}
            return {"kind": "client_error", "message": "%s: %s" % (type(e).__name__, e)}
        resp = getattr(fut, "_corpus_response", None)
        if not isinstance(resp, ResultMessage):
            return {"kind": "client_error", "message": "no result message: %r" % (resp,)}
        if resp.kind == 1:
            return {"kind": "void"}
        if resp.kind == 3:
            return {"kind": "set_keyspace", "keyspace": resp.new_keyspace}
        if resp.kind == 5:
            ev = resp.schema_change_event or {}
            event = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in ev.items()}
            return {"kind": "schema_change", "event": event}
        if resp.kind == 2:
            cols = [[n, type_name(t)] for n, t in zip(resp.column_names or [], resp.column_types or [])]
            try:
                rows = [[render(v) for v in row] for row in (resp.parsed_rows or [])]
            except Exception as e:  # noqa: BLE001
                return {"kind": "client_error", "message": "render: %s" % e}
            return {"kind": "rows", "columns": cols, "rows": rows}
        return {"kind": "other", "result_kind": resp.kind}

    def run_script(self, family, name):
        path = os.path.join(SCRIPTS, family, name + ".cql")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        stmts = split_statements(text)
        results = []
        session = self.cluster.connect()
        # The Cython row parser bypasses the type adjustments above; the pure-Python one honours them.
        session.client_protocol_handler = _ProtocolHandler
        try:
            for cql, notes in stmts:
                r = self.run_statement(session, cql)
                entry = {"cql": cql}
                if notes:
                    entry["notes"] = notes
                if "@ignore" in notes:
                    # Not compared, and often large or run-dependent (whole-schema DESCRIBE): keep only the kind.
                    r = {"kind": r.get("kind")}
                entry.update(r)
                results.append(entry)
        finally:
            session.shutdown()
        return {"script": "%s/%s" % (family, name), "statements": results}


# ----------------------------------------------------------------------------------------------------------
# Comparison.

def compare_statement(gold, got):
    """Returns None when the replayed statement matches the golden one, else a short reason."""
    notes = gold.get("notes", [])
    if "@ignore" in notes:
        return None
    if gold.get("cql") != got.get("cql"):
        return "script changed since recording (re-record)"
    gk, k = gold.get("kind"), got.get("kind")
    if gk != k:
        extra = ""
        if k == "error":
            extra = " (%s %s)" % (got.get("code"), got.get("message", "")[:200])
        elif gk == "error":
            extra = " (expected %s %s)" % (gold.get("code"), gold.get("message", "")[:200])
        return "kind %s != expected %s%s" % (k, gk, extra)
    if gk == "error":
        if gold.get("code") != got.get("code"):
            return "error code %s != expected %s (%s)" % (got.get("code"), gold.get("code"),
                                                          got.get("message", "")[:200])
        return None
    if gk == "set_keyspace":
        return None if gold.get("keyspace") == got.get("keyspace") else "keyspace differs"
    if gk == "schema_change":
        if gold.get("event") != got.get("event"):
            return "schema event %s != expected %s" % (got.get("event"), gold.get("event"))
        return None
    if gk == "rows":
        if gold.get("columns") != got.get("columns"):
            return "columns %s != expected %s" % (got.get("columns"), gold.get("columns"))
        if "@ignore-values" in notes:
            if len(gold.get("rows", [])) != len(got.get("rows", [])):
                return "row count %d != expected %d" % (len(got.get("rows", [])), len(gold.get("rows", [])))
            return None
        if gold.get("rows") != got.get("rows"):
            return "rows differ: got %s expected %s" % (json.dumps(got.get("rows"))[:300],
                                                        json.dumps(gold.get("rows"))[:300])
        return None
    return None


def compare_script(gold, got):
    if got.get("runner_error"):
        return "runner error: %s" % got["runner_error"]
    gs, ts = gold.get("statements", []), got.get("statements", [])
    for i, g in enumerate(gs):
        if i >= len(ts):
            return "statement %d missing" % (i + 1)
        why = compare_statement(g, ts[i])
        if why:
            return "statement %d `%s`: %s" % (i + 1, g.get("cql", "")[:160].replace("\n", " "), why)
    if len(ts) != len(gs):
        return "statement count %d != expected %d (re-record)" % (len(ts), len(gs))
    return None


# ----------------------------------------------------------------------------------------------------------
# Commands.

def dump_json(obj):
    """Stable, diff-friendly JSON: one statement (or report entry) per line."""
    def one(x):
        return json.dumps(x, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    lines = ["{"]
    keys = sorted(obj)
    for i, k in enumerate(keys):
        v = obj[k]
        comma = "," if i + 1 < len(keys) else ""
        if isinstance(v, list) and v:
            lines.append(" %s: [" % one(k))
            lines.extend("  %s%s" % (one(x), "," if j + 1 < len(v) else "") for j, x in enumerate(v))
            lines.append(" ]" + comma)
        elif isinstance(v, dict) and v:
            lines.append(" %s: {" % one(k))
            ks = sorted(v)
            lines.extend("  %s: %s%s" % (one(kk), one(v[kk]), "," if j + 1 < len(ks) else "") for j, kk in enumerate(ks))
            lines.append(" }" + comma)
        else:
            lines.append(" %s: %s%s" % (one(k), one(v), comma))
    lines.append("}")
    return "\n".join(lines) + "\n"


GLOBAL_SCHEMA_RE = re.compile(r"\bDESC(RIBE)?\s+(FULL\s+)?(TABLES|TYPES|KEYSPACES|FUNCTIONS|AGGREGATES|SCHEMA|CLUSTER)\b", re.I)


def reads_global_schema(fam, name):
    with open(os.path.join(SCRIPTS, fam, name + ".cql"), encoding="utf-8") as f:
        return bool(GLOBAL_SCHEMA_RE.search(f.read()))


def run_all(args, scripts, on_done):
    if getattr(args, "shuffle", False):
        # Interleaves families so that a --deadline cut still samples all of them.
        import random
        scripts = list(scripts)
        random.Random(42).shuffle(scripts)
    runner = Runner(args.host, args.port, args.timeout)
    lock = threading.Lock()
    done = [0]
    start = time.time()

    def task(item):
        fam, name = item
        try:
            if args.deadline and time.time() - start > args.deadline:
                # A hung or very slow node must not hold the whole suite hostage: late scripts count as failed.
                res = {"script": "%s/%s" % (fam, name), "statements": [], "runner_error": "deadline"}
            else:
                res = runner.run_script(fam, name)
        except Exception as e:  # noqa: BLE001 - one broken script must not stop the run
            res = {"script": "%s/%s" % (fam, name), "statements": [], "runner_error": repr(e)}
        with lock:
            on_done(fam, name, res)
            done[0] += 1
            if not args.quiet and (done[0] % 50 == 0 or done[0] == len(scripts)):
                sys.stderr.write("  %d/%d scripts (%.0fs)\n" % (done[0], len(scripts), time.time() - start))
        return res

    # Scripts that look at the whole cluster (DESCRIBE TABLES, TYPES, ...) see other scripts'
    # keyspaces when run beside them: they run alone, after the others.
    serial = [s for s in scripts if reads_global_schema(*s)]
    parallel = [s for s in scripts if s not in serial]
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(task, parallel))
        for item in serial:
            task(item)
    finally:
        runner.close()


def cmd_record(args):
    scripts = list_scripts(args.family)
    if args.only:
        scripts = [s for s in scripts if "%s/%s" % s in args.only.split(",")]

    def on_done(fam, name, res):
        d = os.path.join(GOLDEN, fam)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".json"), "w", encoding="utf-8") as f:
            f.write(dump_json(res))

    run_all(args, scripts, on_done)
    print("recorded %d scripts into %s" % (len(scripts), GOLDEN))
    return 0


def cmd_check(args):
    scripts = list_scripts(args.family)
    if args.only:
        scripts = [s for s in scripts if "%s/%s" % s in args.only.split(",")]
    per_family = {}
    failures = {}

    def on_done(fam, name, res):
        gp = os.path.join(GOLDEN, fam, name + ".json")
        if not os.path.exists(gp):
            why = "no golden file (record first)"
        else:
            with open(gp, encoding="utf-8") as f:
                why = compare_script(json.load(f), res)
        stats = per_family.setdefault(fam, [0, 0])
        stats[1] += 1
        if why is None:
            stats[0] += 1
        else:
            failures["%s/%s" % (fam, name)] = why

    run_all(args, scripts, on_done)
    total_ok = sum(s[0] for s in per_family.values())
    total = sum(s[1] for s in per_family.values())
    rate = (total_ok / total) if total else 0.0
    print("%-20s %8s %8s %8s" % ("family", "matched", "total", "rate"))
    for fam in sorted(per_family):
        ok, n = per_family[fam]
        print("%-20s %8d %8d %7.1f%%" % (fam, ok, n, 100.0 * ok / n if n else 0))
    print("%-20s %8d %8d %7.1f%%" % ("OVERALL", total_ok, total, 100.0 * rate))
    if args.verbose:
        for k in sorted(failures):
            print("FAIL %s: %s" % (k, failures[k]))
    if args.report:
        report = {
            "host": args.host, "port": args.port, "matched": total_ok, "total": total, "rate": rate,
            "families": {f: {"matched": s[0], "total": s[1]} for f, s in sorted(per_family.items())},
            "failures": dict(sorted(failures.items())),
        }
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(dump_json(report))
    groups, failed = judge(per_family, args.min_rate, parse_floors(args.group_floor or []))
    for label, (ok, n, floor) in groups.items():
        print("%-20s %8d %8d %7.1f%%  (floor %.0f%%)" % (label, ok, n, 100.0 * ok / n if n else 0, 100 * floor))
    for msg in failed:
        print(msg)
    return 1 if failed else 0


def parse_floors(specs):
    """['cu_=0.85', ...] -> [('cu_', 0.85), ...]"""
    out = []
    for spec in specs:
        prefix, _, rate = spec.partition("=")
        out.append((prefix, float(rate)))
    return out


def judge(per_family, min_rate, floors):
    """Match rate of each group of families against its floor.

    Families whose name starts with a floor's prefix are judged together against that floor (a corpus imported
    from elsewhere ratchets up from its own level); all the other families are judged against min_rate.
    Returns ({label: (matched, total, floor)}, [failure messages]).
    """
    groups = {}
    for fam, (ok, n) in per_family.items():
        prefix = next((p for p, _ in floors if fam.startswith(p)), None)
        label = "%s*" % prefix if prefix is not None else "main"
        floor = dict(floors)[prefix] if prefix is not None else min_rate
        g = groups.setdefault(label, [0, 0, floor])
        g[0] += ok
        g[1] += n
    failed = []
    for label, (ok, n, floor) in sorted(groups.items()):
        rate = ok / n if n else 0.0
        if rate < floor:
            failed.append("%s match rate %.4f below its floor %.4f" % (label, rate, floor))
    return {k: tuple(v) for k, v in sorted(groups.items())}, failed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("record", "check"):
        s = sub.add_parser(name)
        s.add_argument("--host", default="127.0.0.1")
        s.add_argument("--port", type=int, default=9042)
        s.add_argument("--family", help="comma-separated families to run (default: all)")
        s.add_argument("--only", help="comma-separated family/name scripts to run")
        s.add_argument("--jobs", type=int, default=4, help="scripts run in parallel")
        s.add_argument("--timeout", type=float, default=60.0, help="per-statement timeout, seconds")
        s.add_argument("--quiet", action="store_true")
        s.add_argument("--deadline", type=float, default=0,
                       help="seconds after which scripts not yet started are skipped (and fail); 0 = none")
        if name == "check":
            s.add_argument("--min-rate", type=float, default=0.0,
                           help="fail when the families outside every --group-floor match below this rate")
            s.add_argument("--group-floor", action="append", metavar="PREFIX=RATE",
                           help="judge families named PREFIX* together against their own floor (repeatable)")
            s.add_argument("--report", help="write a JSON report here")
            s.add_argument("--verbose", "-v", action="store_true", help="print every mismatch")
            s.add_argument("--shuffle", action="store_true", help="run scripts in a fixed shuffled order")
    args = p.parse_args(argv)
    return cmd_record(args) if args.cmd == "record" else cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
