"""What the security suites share: a throwaway CA and certificates made with openssl at test
time (no private key is committed), and a node of their own started with a given helenus.yaml,
bounded in time and stopped by its PID.

The node binary is HELENUS_BIN, else $CARGO_TARGET_DIR/release/helenus."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

START_TIMEOUT_S = 30


def binary():
    explicit = os.environ.get("HELENUS_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR") or str(Path.home() / ".cache/helenus/target")
    return str(Path(target) / "release" / "helenus")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=Helenus test {name}", cwd=d)


def make_cert(d, name, ca, ext):
    """A certificate for `name` signed by `ca`, with the extensions `ext` (openssl syntax)."""
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}", cwd=d)
    Path(d, f"{name}.ext").write_text(ext)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)


class Certs:
    """ca.pem signs node.pem (for `host`) and client.pem; rogue.pem signs rogue_client.pem."""

    def __init__(self, host):
        self.dir = Path(tempfile.mkdtemp(prefix="helenus-tls-certs-"))
        d = self.dir
        make_ca(d, "ca")
        make_ca(d, "rogue")
        make_cert(d, "node", "ca", f"subjectAltName=IP:{host},DNS:localhost\n"
                  "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        client_ext = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
        make_cert(d, "client", "ca", client_ext)
        make_cert(d, "rogue_client", "rogue", client_ext)
        # Cassandra 5.0's PEMBasedSslContextFactory form: key and chain in one file.
        Path(d, "node_both.pem").write_text(
            Path(d, "node.key").read_text() + Path(d, "node.pem").read_text())

    def __getitem__(self, name):
        return str(self.dir / name)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Node:
    """A node on host:port with `yaml` as its helenus.yaml, over a fresh data dir."""

    def __init__(self, host, port, api_port, yaml):
        self.host, self.port, self.api_port = host, port, api_port
        self.dir = Path(tempfile.mkdtemp(prefix="helenus-security-test-"))
        self.config = self.dir / "helenus.yaml"
        self.config.write_text(yaml)
        self.log_path = self.dir / "node.log"
        self.proc = None

    def args(self):
        return [binary(), "server", "--config", str(self.config), "--listen-address", self.host,
                "--native-transport-port", str(self.port), "--data-dir", str(self.dir / "data"),
                "--set", f"api_port={self.api_port}",
                # Logins in tests need not pay bcrypt's default cost.
                "--set", "auth_bcrypt_gensalt_log2_rounds=4"]

    def start(self):
        assert Path(binary()).exists(), f"no helenus binary at {binary()} (set HELENUS_BIN)"
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args(), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"node exited: {self.log()}"
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"node on {self.host}:{self.port} did not answer within {START_TIMEOUT_S} s")

    def log(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused_start(self, timeout=30):
        """Runs the node expecting it to refuse to start: its exit code and output."""
        r = subprocess.run(self.args(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
        return r.returncode, r.stdout + r.stderr


def running(host, port, api_port, yaml):
    n = Node(host, port, api_port, yaml).start()
    try:
        yield n
    finally:
        n.remove()


def nodetool(*args, timeout=60):
    return subprocess.run([binary(), "nodetool", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
