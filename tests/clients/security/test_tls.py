"""TLS for CQL clients (`client_encryption_options`) with real clients: the Python driver over
an `ssl_context`, cqlsh `--ssl`, `helenus nodetool --ssl`, and plaintext clients refused or served
as the options say. Starts its own nodes on HELENUS_TLS_HOST (default 127.0.0.46) with a CA and
certificates that openssl makes in a temporary directory."""

import os
import socket
import ssl
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from cassandra.cluster import Cluster, NoHostAvailable

from helpers import Certs, Node, nodetool, running

HOST = os.environ.get("HELENUS_TLS_HOST", "127.0.0.46")
CQLSH = str(Path(sys.executable).with_name("cqlsh"))


@pytest.fixture(scope="module")
def certs():
    c = Certs(HOST)
    yield c
    c.remove()


def tls_yaml(certs, **extra):
    lines = ["client_encryption_options:", f"  keystore: {certs['node.pem']}",
             f"  private_key: {certs['node.key']}"]
    extra.setdefault("enabled", "true")
    lines += [f"  {k}: {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def tls_node(certs):
    yield from running(HOST, 9042, 10000, tls_yaml(certs))


@pytest.fixture(scope="module")
def optional_node(certs):
    yield from running(HOST, 9043, 10001, tls_yaml(certs, enabled="false", optional="true"))


@pytest.fixture(scope="module")
def mutual_node(certs):
    yield from running(HOST, 9044, 10002, tls_yaml(
        certs, require_client_auth="true", truststore=certs["ca.pem"]))


def context(certs, client=None):
    ctx = ssl.create_default_context(cafile=certs["ca.pem"])
    if client:
        ctx.load_cert_chain(certs[f"{client}.pem"], certs[f"{client}.key"])
    return ctx


def round_trip(port, ssl_context=None):
    """Creates, writes and reads a table over one driver session."""
    cluster = Cluster([HOST], port=port, ssl_context=ssl_context, connect_timeout=5,
                      control_connection_timeout=5)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS tls_test WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS tls_test.t (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO tls_test.t (k, v) VALUES (1, 'over tls')")
        return s.execute("SELECT v FROM tls_test.t WHERE k = 1").one().v
    finally:
        cluster.shutdown()


def refused(port, ssl_context=None):
    with pytest.raises(NoHostAvailable):
        round_trip(port, ssl_context)


OPTIONS_V4 = struct.pack(">BBhBi", 4, 0, 1, 0x05, 0)


def plaintext_options_answered(port):
    """Whether a plaintext OPTIONS frame on a raw socket gets SUPPORTED back."""
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(OPTIONS_V4)
        try:
            head = s.recv(9)
        except (ConnectionResetError, socket.timeout):
            return False
        return len(head) == 9 and head[4] == 0x06


def test_python_driver_reads_and_writes_over_tls(tls_node, certs):
    assert round_trip(9042, context(certs)) == "over tls"
    cluster = Cluster([HOST], port=9042, ssl_context=context(certs), connect_timeout=5)
    try:
        rows = cluster.connect().execute("SELECT ssl_enabled FROM system_views.clients")
        assert [r.ssl_enabled for r in rows] and all(r.ssl_enabled for r in rows)
    finally:
        cluster.shutdown()


def test_plaintext_clients_are_refused_when_tls_is_required(tls_node, certs):
    refused(9042)
    assert not plaintext_options_answered(9042)
    # A client that does not trust the node's CA does not connect either.
    refused(9042, ssl.create_default_context())


def test_cqlsh_over_tls_with_ssl_certfile(tls_node, certs):
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", SSL_CERTFILE=certs["ca.pem"],
               SSL_VALIDATE="true", HOME=str(certs.dir))
    r = subprocess.run([CQLSH, HOST, "9042", "--ssl", "--connect-timeout=10", "-e",
                        "SELECT release_version FROM system.local"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert "5.0.9" in r.stdout
    plain = subprocess.run([CQLSH, HOST, "9042", "--connect-timeout=5", "-e", "SELECT 1 FROM system.local"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env)
    assert plain.returncode != 0


def test_cqlsh_over_tls_with_a_cqlshrc(tls_node, certs):
    rc = certs.dir / "cqlshrc"
    rc.write_text(f"[connection]\nssl = true\n[ssl]\ncertfile = {certs['ca.pem']}\nvalidate = true\n")
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", HOME=str(certs.dir))
    env.pop("SSL_CERTFILE", None)
    r = subprocess.run([CQLSH, HOST, "9042", f"--cqlshrc={rc}", "--connect-timeout=10", "-e",
                        "SELECT v FROM tls_test.t WHERE k = 1"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert "over tls" in r.stdout


def test_nodetool_reaches_the_admin_api_over_tls(tls_node, certs):
    ok = nodetool("-h", HOST, "-p", "10000", "--ssl", "--truststore", certs["ca.pem"], "version")
    assert ok.returncode == 0, ok.stderr
    assert "ReleaseVersion: 5.0.9" in ok.stdout
    plain = nodetool("-h", HOST, "-p", "10000", "version")
    assert plain.returncode != 0
    assert "--ssl" in plain.stderr
    untrusted = nodetool("-h", HOST, "-p", "10000", "--ssl", "--truststore", certs["rogue.pem"],
                         "version")
    assert untrusted.returncode != 0


def test_optional_tls_serves_both_on_one_port(optional_node, certs):
    assert round_trip(9043, context(certs)) == "over tls"
    assert round_trip(9043) == "over tls"
    assert plaintext_options_answered(9043)
    cluster = Cluster([HOST], port=9043, connect_timeout=5)
    try:
        rows = cluster.connect().execute("SELECT ssl_enabled FROM system_views.clients")
        assert not any(r.ssl_enabled for r in rows)
    finally:
        cluster.shutdown()


def test_client_certificates_are_required_when_asked(mutual_node, certs):
    assert round_trip(9044, context(certs, "client")) == "over tls"
    refused(9044, context(certs))
    refused(9044, context(certs, "rogue_client"))
    refused(9044)


def test_key_and_chain_in_one_pem_as_cassandra_reads_it(certs):
    yaml = ("client_encryption_options:\n  enabled: true\n"
            f"  keystore: {certs['node_both.pem']}\n  keystore_password: cassandra\n")
    for n in running(HOST, 9045, 10003, yaml):
        assert round_trip(9045, context(certs)) == "over tls"


@pytest.mark.parametrize("options,why", [
    ("  enabled: true\n  keystore: conf/.keystore\n  keystore_password: cassandra\n",
     "Java keystore"),
    ("  enabled: true\n  keystore: {node}\n  store_type: PKCS12\n", "PKCS12"),
    ("  enabled: true\n  keystore: {ca}\n", "no PEM private key"),
    ("  enabled: true\n  keystore: {node}\n  private_key: {dir}/missing.key\n", "cannot read"),
    ("  enabled: true\n  keystore: {node}\n  private_key: {node_key}\n  require_client_auth: true\n",
     "truststore"),
])
def test_what_cannot_be_served_stops_the_node_with_the_reason(certs, options, why):
    options = options.format(node=certs["node.pem"], ca=certs["ca.pem"], dir=certs.dir,
                             node_key=certs["node.key"])
    n = Node(HOST, 9046, 10004, "client_encryption_options:\n" + options)
    try:
        code, out = n.refused_start()
        assert code != 0
        assert why in out, out
    finally:
        n.remove()


def test_internode_encryption_is_still_refused(certs):
    n = Node(HOST, 9046, 10004, "server_encryption_options:\n  internode_encryption: all\n")
    try:
        code, out = n.refused_start()
        assert code != 0
        assert "internode" in out, out
    finally:
        n.remove()
