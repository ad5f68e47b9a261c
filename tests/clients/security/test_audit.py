"""The audit log (`audit_logging_options`, `nodetool enableauditlog/disableauditlog`) with the
Python driver: a node of its own on HELENUS_AUDIT_HOST (default 127.0.0.49) with
PasswordAuthenticator; SELECTs, DML, DDL and a failed login appear in FileAuditLogger's line
format, excluded keyspaces and categories do not."""

import os
import re
import time

import pytest
from cassandra import AuthenticationFailed
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable

from helpers import nodetool, running

HOST = os.environ.get("HELENUS_AUDIT_HOST", "127.0.0.49")
API_PORT = 10000
LINE = re.compile(r"^user:[^|]+\|host:[^|]+:\d+\|source:/[\d.]+\|port:\d+\|timestamp:\d+\|"
                  r"type:[A-Z_]+\|category:(QUERY|DML|DDL|DCL|AUTH|PREPARE|ERROR|OTHER)"
                  r"(\|ks:[^|]+)?(\|scope:[^|]+)?\|operation:.*$")


@pytest.fixture(scope="module")
def node():
    yaml = ("authenticator: PasswordAuthenticator\n"
            "audit_logging_options:\n  enabled: true\n  logger:\n    - class_name: FileAuditLogger\n"
            "  excluded_keyspaces: system,system_schema,system_virtual_schema,hidden_ks\n")
    for n in running(HOST, 9042, API_PORT, yaml):
        yield n


@pytest.fixture(scope="module")
def session(node):
    cluster = Cluster([HOST], auth_provider=PlainTextAuthProvider("cassandra", "cassandra"),
                      connect_timeout=10)
    s = cluster.connect()
    for ks in ("seen_ks", "hidden_ks"):
        s.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
        s.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, 'x')")
        s.execute(f"SELECT v FROM {ks}.t WHERE k = 1")
    yield s
    cluster.shutdown()


def audit_lines(node):
    path = node.dir / "data" / "audit" / "audit.log"  # --data-dir DATA: DATA/audit
    deadline = time.monotonic() + 5
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text().splitlines()


def test_every_line_has_file_audit_loggers_format(node, session):
    lines = audit_lines(node)
    assert lines
    bad = [l for l in lines if not LINE.match(l)]
    assert not bad, bad


def test_a_select_is_logged_with_user_keyspace_and_text(node, session):
    lines = audit_lines(node)
    selects = [l for l in lines if "|type:SELECT|category:QUERY|ks:seen_ks|scope:t|" in l]
    assert selects, lines
    assert selects[-1].startswith(f"user:cassandra|host:{HOST}:7000|source:/127.0.0.1|")
    assert selects[-1].endswith("|operation:SELECT v FROM seen_ks.t WHERE k = 1")
    assert any("|type:CREATE_TABLE|category:DDL|ks:seen_ks|scope:t|" in l for l in lines)
    assert any("|type:UPDATE|category:DML|ks:seen_ks|" in l for l in lines)
    assert any("|type:LOGIN_SUCCESS|category:AUTH|" in l for l in lines)


def test_excluded_keyspaces_are_not_logged(node, session):
    lines = audit_lines(node)
    assert not [l for l in lines if "hidden_ks" in l and "ks:" in l], lines
    assert not [l for l in lines if "|ks:system" in l]


def test_a_failed_login_is_logged(node, session):
    cluster = Cluster([HOST], auth_provider=PlainTextAuthProvider("cassandra", "wrong"),
                      connect_timeout=10)
    with pytest.raises((NoHostAvailable, AuthenticationFailed)):
        cluster.connect()
    cluster.shutdown()
    failures = [l for l in audit_lines(node) if "|type:LOGIN_ERROR|category:AUTH|" in l]
    assert failures
    assert failures[-1].startswith("user:cassandra|")
    assert "Provided username cassandra and/or password are incorrect" in failures[-1]


def test_a_failed_statement_is_an_error_entry(node, session):
    with pytest.raises(Exception):
        session.execute("SELECT * FROM seen_ks.nosuch")
    errors = [l for l in audit_lines(node) if "|category:ERROR|" in l]
    assert errors and "seen_ks.nosuch" in errors[-1]


def test_nodetool_disables_and_reenables_with_filters(node, session):
    off = nodetool("-h", HOST, "-p", str(API_PORT), "disableauditlog")
    assert off.returncode == 0, off.stderr
    before = len(audit_lines(node))
    session.execute("SELECT v FROM seen_ks.t WHERE k = 2")
    assert len(audit_lines(node)) == before
    on = nodetool("-h", HOST, "-p", str(API_PORT), "enableauditlog", "--excluded-categories", "QUERY")
    assert on.returncode == 0, on.stderr
    session.execute("SELECT v FROM seen_ks.t WHERE k = 3")
    session.execute("INSERT INTO seen_ks.t (k, v) VALUES (4, 'y')")
    new = audit_lines(node)[before:]
    assert not [l for l in new if "category:QUERY" in l], new
    assert [l for l in new if "VALUES (4, 'y')" in l], new
    bad = nodetool("-h", HOST, "-p", str(API_PORT), "enableauditlog", "--included-categories", "NOPE")
    assert bad.returncode != 0
    assert "unknown audit category" in bad.stderr
