"""Authentication and authorization with real clients: starts its own Helenus node with
PasswordAuthenticator + CassandraAuthorizer (on HELENUS_AUTH_HOST, default 127.0.0.44), runs the
scenario recorded from Cassandra 5.0.9 with the Python driver and compares every answer, then
checks cqlsh logins, the wire protocol before login, and that roles survive a restart.

The node binary is HELENUS_BIN, else $CARGO_TARGET_DIR/release/helenus. Every step is bounded:
the node must answer within 30 s, and is stopped by its PID (SIGTERM, then SIGKILL)."""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import scenario  # noqa: E402

HOST = os.environ.get("HELENUS_AUTH_HOST", "127.0.0.44")
PORT = int(os.environ.get("HELENUS_AUTH_PORT", "9042"))
GOLDEN = Path(__file__).parent / "golden" / "cassandra-5.0-auth.json"
GOLDEN_AUTHN_ONLY = Path(__file__).parent / "golden" / "cassandra-5.0-authn-only.json"
# The PasswordAuthenticator + AllowAllAuthorizer node listens beside the main one.
AUTHN_ONLY_PORT = PORT + 1
BOTH = ["authenticator=PasswordAuthenticator", "authorizer=CassandraAuthorizer"]
CQLSH = str(Path(sys.executable).with_name("cqlsh"))


def binary():
    explicit = os.environ.get("HELENUS_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR") or str(Path.home() / ".cache/helenus/target")
    return str(Path(target) / "release" / "helenus")


class Node:
    """One auth-enabled node on HOST:port over a data dir that outlives restarts."""

    def __init__(self, data_dir, port=PORT, settings=BOTH):
        self.data_dir = data_dir
        self.port = port
        self.settings = settings
        self.proc = None
        self.log = open(Path(data_dir).with_suffix(".log"), "ab")

    def start(self):
        args = [
            binary(), "server", "--listen-address", HOST, "--native-transport-port", str(self.port),
            "--data-dir", self.data_dir,
            # The golden file was recorded from a cluster named so.
            "--set", "cluster_name=baseline",
            # Two nodes share the address: only one admin API.
            "--set", f"api_port={10000 + self.port - PORT}",
        ]
        for setting in self.settings:
            args += ["--set", setting]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"node exited: see {self.log.name}"
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"node on {HOST}:{self.port} did not answer within 30 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None


def running_node(port, settings):
    assert Path(binary()).exists(), f"no helenus binary at {binary()} (set HELENUS_BIN)"
    data_dir = tempfile.mkdtemp(prefix="helenus-auth-test-")
    n = Node(data_dir, port, settings)
    n.start()
    yield n
    n.stop()
    n.log.close()
    shutil.rmtree(data_dir, ignore_errors=True)
    Path(data_dir).with_suffix(".log").unlink(missing_ok=True)


@pytest.fixture(scope="module")
def node():
    yield from running_node(PORT, BOTH)


@pytest.fixture(scope="module")
def authn_only_node():
    yield from running_node(AUTHN_ONLY_PORT, ["authenticator=PasswordAuthenticator"])


def test_scenario_matches_cassandra(node):
    golden = json.loads(GOLDEN.read_text())
    got = json.loads(json.dumps(scenario.scenario(HOST, PORT, settle=False)))
    assert [s["step"] for s in got] == [s["step"] for s in golden]
    diffs = [(g["step"], g, h) for g, h in zip(golden, got) if g != h]
    assert not diffs, "\n".join(f"{s}:\n  cassandra {g}\n  helenus   {h}" for s, g, h in diffs)


def test_logins_without_authorization_match_cassandra(authn_only_node):
    golden = json.loads(GOLDEN_AUTHN_ONLY.read_text())
    got = json.loads(json.dumps(scenario.scenario_authn_only(HOST, AUTHN_ONLY_PORT, settle=False)))
    assert [s["step"] for s in got] == [s["step"] for s in golden]
    diffs = [(g["step"], g, h) for g, h in zip(golden, got) if g != h]
    assert not diffs, "\n".join(f"{s}:\n  cassandra {g}\n  helenus   {h}" for s, g, h in diffs)


def test_bad_password_is_refused_with_bad_credentials(node):
    err = scenario.login_error(HOST, PORT, "cassandra", "not-the-password")
    assert err == {"code": 0x0100,
                   "message": "Provided username cassandra and/or password are incorrect"}


def cqlsh(*args, timeout=60):
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", HOME=os.environ.get("HOME", "/tmp"))
    return subprocess.run(
        [CQLSH, HOST, str(PORT), "--connect-timeout=10", "--request-timeout=30", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, env=env,
    )


def test_cqlsh_logs_in_and_lists_roles(node):
    ok = cqlsh("-u", "cassandra", "-p", "cassandra", "-e", "LIST ROLES")
    assert ok.returncode == 0, ok.stderr
    lines = [l.split("|") for l in ok.stdout.splitlines() if "|" in l]
    header = [c.strip() for c in lines[0]]
    assert header == ["role", "super", "login", "options", "datacenters"], ok.stdout
    assert ["cassandra", "True", "True", "{}", "ALL"] in [[c.strip() for c in l] for l in lines[1:]]
    bad = cqlsh("-u", "cassandra", "-p", "nope", "-e", "LIST ROLES")
    assert bad.returncode != 0
    assert "Provided username cassandra and/or password are incorrect" in bad.stderr, bad.stderr


def frame(opcode, body, stream=1):
    return struct.pack(">BBhBi", 4, 0, stream, opcode, len(body)) + body


def read_frame(sock):
    head = b""
    while len(head) < 9:
        chunk = sock.recv(9 - len(head))
        assert chunk, "connection closed"
        head += chunk
    _, _, _, opcode, length = struct.unpack(">BBhBi", head)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        assert chunk, "connection closed"
        body += chunk
    return opcode, body


def string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def error_code(body):
    return struct.unpack(">i", body[:4])[0]


def test_requests_before_login_are_refused_and_bad_tokens_do_not_kill_the_connection(node):
    with socket.create_connection((HOST, PORT), timeout=10) as s:
        s.sendall(frame(0x01, struct.pack(">H", 1) + string("CQL_VERSION") + string("3.0.0")))
        op, body = read_frame(s)
        assert op == 0x03 and b"org.apache.cassandra.auth.PasswordAuthenticator" in body
        query = struct.pack(">i", 26) + b"SELECT * FROM system.local" + struct.pack(">HB", 1, 0)
        s.sendall(frame(0x07, query))
        op, body = read_frame(s)
        assert (op, error_code(body)) == (0x00, 0x000A)
        assert b"Unexpected message QUERY, expecting SASL_RESPONSE" in body
        for token in [b"", b"garbage", b"\x00\x00", b"\x00cassandra\x00wrong", b"\xff" * 300]:
            s.sendall(frame(0x0F, struct.pack(">i", len(token)) + token))
            op, body = read_frame(s)
            assert (op, error_code(body)) == (0x00, 0x0100), (token, body)
        good = b"\x00cassandra\x00cassandra"
        s.sendall(frame(0x0F, struct.pack(">i", len(good)) + good))
        op, _ = read_frame(s)
        assert op == 0x10
        s.sendall(frame(0x07, query))
        op, _ = read_frame(s)
        assert op == 0x08


def test_roles_and_grants_survive_a_restart_and_drop_role_is_durable(node):
    cluster, su = scenario.connect(HOST, PORT, "cassandra", "cassandra")
    try:
        su.execute("CREATE KEYSPACE IF NOT EXISTS durable WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        su.execute("CREATE TABLE IF NOT EXISTS durable.t (k int PRIMARY KEY)")
        su.execute("CREATE ROLE survivor WITH PASSWORD = 'pw' AND LOGIN = true")
        su.execute("GRANT SELECT ON KEYSPACE durable TO survivor")
    finally:
        cluster.shutdown()
    node.stop()
    node.start()
    cluster, s = scenario.connect(HOST, PORT, "survivor", "pw")
    try:
        assert list(s.execute("SELECT k FROM durable.t")) == []
        perms = [tuple(r) for r in s.execute("LIST ALL PERMISSIONS OF survivor")]
        assert perms == [("survivor", "survivor", "<keyspace durable>", "SELECT")]
    finally:
        cluster.shutdown()
    cluster, su = scenario.connect(HOST, PORT, "cassandra", "cassandra")
    try:
        su.execute("DROP ROLE survivor")
    finally:
        cluster.shutdown()
    node.stop()
    node.start()
    assert scenario.login_error(HOST, PORT, "survivor", "pw")["code"] == 0x0100
    cluster, su = scenario.connect(HOST, PORT, "cassandra", "cassandra")
    try:
        assert [r.role for r in su.execute("LIST ROLES")] == ["cassandra"]
        su.execute("DROP KEYSPACE durable")
    finally:
        cluster.shutdown()


def test_prepared_statements_and_protocol_batches_are_checked_too(node):
    from cassandra import Unauthorized
    from cassandra.query import BatchStatement

    cluster, su = scenario.connect(HOST, PORT, "cassandra", "cassandra")
    try:
        su.execute("CREATE KEYSPACE pb WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        su.execute("CREATE TABLE pb.t (k int PRIMARY KEY, v int)")
        su.execute("CREATE ROLE carol WITH PASSWORD = 'pw' AND LOGIN = true")
        c_cluster, carol = scenario.connect(HOST, PORT, "carol", "pw")
        try:
            select = carol.prepare("SELECT v FROM pb.t WHERE k = ?")
            insert = carol.prepare("INSERT INTO pb.t (k, v) VALUES (?, ?)")
            with pytest.raises(Unauthorized, match="no SELECT permission on <table pb.t>"):
                carol.execute(select, [1])
            batch = BatchStatement()
            batch.add(insert, [1, 10])
            with pytest.raises(Unauthorized, match="no MODIFY permission on <table pb.t>"):
                carol.execute(batch)
            su.execute("GRANT MODIFY ON TABLE pb.t TO carol")
            carol.execute(batch)
            with pytest.raises(Unauthorized, match="no SELECT permission"):
                carol.execute("UPDATE pb.t SET v = 11 WHERE k = 1 IF v = 10")
            su.execute("GRANT SELECT ON KEYSPACE pb TO carol")
            assert [r.v for r in carol.execute(select, [1])] == [10]
            su.execute("REVOKE MODIFY ON TABLE pb.t FROM carol")
            with pytest.raises(Unauthorized):
                carol.execute(batch)
        finally:
            c_cluster.shutdown()
        su.execute("DROP ROLE carol")
        su.execute("DROP KEYSPACE pb")
    finally:
        cluster.shutdown()


def test_clients_view_shows_who_is_logged_in_and_auth_tables_index_grants(node):
    cluster, su = scenario.connect(HOST, PORT, "cassandra", "cassandra")
    try:
        names = {r.username for r in su.execute("SELECT username FROM system_views.clients")}
        assert "cassandra" in names, names
        su.execute("CREATE ROLE indexed")
        su.execute("GRANT DESCRIBE ON ALL ROLES TO indexed")
        index = [tuple(r) for r in su.execute(
            "SELECT resource, role FROM system_auth.resource_role_permissons_index")]
        assert ("roles", "indexed") in index, index
        su.execute("DROP ROLE indexed")
        tables = {r.table_name for r in su.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'system_auth'")}
        assert {"roles", "role_members", "role_permissions"} <= tables, tables
    finally:
        cluster.shutdown()
