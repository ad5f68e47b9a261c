"""The admin API's credentials with `helenus nodetool -u/-pw/-pwf --ssl`: a node of its own on
HELENUS_ADMIN_HOST (default 127.0.0.47) with PasswordAuthenticator, TLS and
`admin_api_requires_credentials: true` (a loopback admin API is open otherwise; a non-loopback
one always needs credentials, and cannot be bound at all without PasswordAuthenticator)."""

import base64
import os
import socket
import ssl

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster

from helpers import Certs, Node, nodetool, running

HOST = os.environ.get("HELENUS_ADMIN_HOST", "127.0.0.47")
API_PORT = 10000


@pytest.fixture(scope="module")
def certs():
    c = Certs(HOST)
    yield c
    c.remove()


@pytest.fixture(scope="module")
def node(certs):
    yaml = ("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
            "admin_api_requires_credentials: true\n"
            "client_encryption_options:\n  enabled: true\n"
            f"  keystore: {certs['node.pem']}\n  private_key: {certs['node.key']}\n")
    for n in running(HOST, 9042, API_PORT, yaml):
        cluster = Cluster([HOST], ssl_context=ssl.create_default_context(cafile=certs["ca.pem"]),
                          auth_provider=PlainTextAuthProvider("cassandra", "cassandra"),
                          connect_timeout=10)
        s = cluster.connect()
        s.execute("CREATE ROLE operator WITH PASSWORD = 'op' AND LOGIN = true")
        s.execute("CREATE ROLE admin2 WITH PASSWORD = 'ad' AND LOGIN = true AND SUPERUSER = true")
        cluster.shutdown()
        yield n


def tool(certs, *args):
    return nodetool("-h", HOST, "-p", str(API_PORT), "--ssl", "--truststore", certs["ca.pem"], *args)


def test_nodetool_without_credentials_gets_401(node, certs):
    r = tool(certs, "version")
    assert r.returncode != 0
    assert "requires credentials" in r.stderr, r.stderr


def test_superuser_credentials_work(node, certs):
    r = tool(certs, "-u", "cassandra", "-pw", "cassandra", "version")
    assert r.returncode == 0, r.stderr
    assert "ReleaseVersion: 5.0.9" in r.stdout
    r = tool(certs, "-u", "admin2", "-pw", "ad", "flush")
    assert r.returncode == 0, r.stderr


def test_password_file_as_nodetool_reads_it(node, certs):
    f = certs.dir / "jmxremote.password"
    f.write_text("operator op\ncassandra cassandra\n")
    r = tool(certs, "-u", "cassandra", "-pwf", str(f), "info")
    assert r.returncode == 0, r.stderr


def test_wrong_password_is_401_and_a_non_superuser_403(node, certs):
    bad = tool(certs, "-u", "cassandra", "-pw", "nope", "version")
    assert bad.returncode != 0
    assert "Provided username cassandra and/or password are incorrect" in bad.stderr, bad.stderr
    plain = tool(certs, "-u", "operator", "-pw", "op", "version")
    assert plain.returncode != 0
    assert "operator is not a superuser" in plain.stderr, plain.stderr


def raw(certs, head):
    """Sends one request head over TLS; the status code answered."""
    ctx = ssl.create_default_context(cafile=certs["ca.pem"])
    with socket.create_connection((HOST, API_PORT), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname=HOST) as t:
            t.sendall(head.encode("latin-1"))
            data = b""
            while chunk := t.recv(65536):
                data += chunk
    return int(data.split(b" ", 2)[1]), data


@pytest.mark.parametrize("header,status", [
    ("", 401),
    ("Authorization: Bearer abc\r\n", 400),
    ("Authorization: Basic !!!\r\n", 400),
    ("Authorization: Basic " + base64.b64encode(b"nocolon").decode() + "\r\n", 400),
    ("Authorization: Basic " + base64.b64encode(b"\xff:\xfe").decode() + "\r\n", 400),
    ("Authorization: Basic " + "A" * 5000 + "\r\n", 400),
    ("Authorization: Basic " + base64.b64encode(b"cassandra:cassandra").decode() + "\r\n", 200),
    ("authorization: basic " + base64.b64encode(b"operator:op").decode() + "\r\n", 403),
])
def test_malformed_credentials_are_answered_never_fatal(node, certs, header, status):
    got, data = raw(certs, f"GET /storage_service/release_version HTTP/1.1\r\nHost: x\r\n{header}\r\n")
    assert got == status, data
    if status == 401:
        assert b"WWW-Authenticate: Basic" in data
    assert node.proc.poll() is None


def test_a_snapshot_delete_needs_credentials_too(node, certs):
    got, _ = raw(certs, "DELETE /storage_service/snapshots?tag=x HTTP/1.1\r\nHost: x\r\n\r\n")
    assert got == 401


def test_column_scans_need_credentials_too(node, certs):
    """The Spark source's column scans (issue 15) stream table data: the same rule as nodetool."""
    for path in ("/column_scan/system/local", "/column_scan/ks/t/data?start=0&end=1"):
        got, _ = raw(certs, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n")
        assert got == 401, path
    basic = base64.b64encode(b"cassandra:cassandra").decode()
    got, data = raw(certs, f"GET /column_scan/system/local HTTP/1.1\r\nHost: x\r\n"
                           f"Authorization: Basic {basic}\r\n\r\n")
    assert got == 400 and b"stored as rows" in data, data


@pytest.mark.parametrize("yaml,why", [
    # TEST-NET-1: not an address of this machine, so nothing could be bound even by mistake.
    ("api_address: 192.0.2.1\n", "needs authenticator: PasswordAuthenticator"),
    ("admin_api_requires_credentials: true\n", "PasswordAuthenticator"),
])
def test_an_unprotected_admin_api_refuses_to_start(yaml, why):
    # Refused while the configuration is checked, before any port is bound.
    n = Node(HOST, 9046, 10004, yaml)
    try:
        code, out = n.refused_start()
        assert code != 0
        assert why in out, out
    finally:
        n.remove()
