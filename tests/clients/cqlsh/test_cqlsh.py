"""Real-client suite: the cqlsh shell (PyPI cqlsh) run as a subprocess against the node."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HOST = os.environ.get("HELENUS_HOST", "127.0.0.1")
PORT = os.environ.get("HELENUS_PORT", "9042")
KS = "helenus_clients_cqlsh"
# cqlsh lives next to the interpreter running pytest (the suite venv).
CQLSH = str(Path(sys.executable).with_name("cqlsh")) if Path(sys.executable).with_name("cqlsh").exists() \
    else shutil.which("cqlsh")


def cqlsh(*args, timeout=60):
    """Runs cqlsh non-interactively, stdin closed, with its own timeouts, and returns stdout."""
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", HOME=os.environ.get("HOME", "/tmp"))
    proc = subprocess.run(
        [CQLSH, HOST, PORT, "--connect-timeout=10", "--request-timeout=30", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, env=env,
    )
    assert proc.returncode == 0, f"cqlsh {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert "Error" not in proc.stderr, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module", autouse=True)
def keyspace():
    cqlsh("-e", f"DROP KEYSPACE IF EXISTS {KS}")
    yield
    cqlsh("-e", f"DROP KEYSPACE IF EXISTS {KS}")


def test_describe_keyspaces():
    out = cqlsh("-e", "DESCRIBE KEYSPACES")
    for ks in ("system", "system_schema"):
        assert ks in out.split(), out


def test_create_insert_select_describe():
    cqlsh("-e", f"CREATE KEYSPACE {KS} WITH replication = "
                "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    cqlsh("-e", f"CREATE TABLE {KS}.people (id int PRIMARY KEY, name text, score double)")
    cqlsh("-e", f"INSERT INTO {KS}.people (id, name, score) VALUES (1, 'ada', 9.5)")
    cqlsh("-e", f"INSERT INTO {KS}.people (id, name, score) VALUES (2, 'bob', 7)")
    out = cqlsh("-e", f"SELECT id, name, score FROM {KS}.people WHERE id IN (1, 2)")
    # cqlsh prints "WARNING: cqlsh was built against 5.0.0, but this server is 5.0.9" first.
    lines = [l.strip() for l in out.splitlines() if l.strip() and not l.startswith("WARNING")]
    header = [c.strip() for c in lines[0].split("|")]
    assert header == ["id", "name", "score"], out
    assert set(lines[1]) == {"-", "+"}, out
    rows = [[c.strip() for c in l.split("|")] for l in lines[2:4]]
    assert rows == [["1", "ada", "9.5"], ["2", "bob", "7"]], out
    assert "(2 rows)" in out, out
    desc = cqlsh("-e", f"DESCRIBE TABLE {KS}.people")
    assert f"CREATE TABLE {KS}.people (" in desc, desc
    assert "id int PRIMARY KEY" in desc and "name text" in desc and "score double" in desc, desc


def test_file_with_several_statements(tmp_path):
    f = tmp_path / "script.cql"
    f.write_text(
        f"CREATE KEYSPACE IF NOT EXISTS {KS} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1};\n"
        f"USE {KS};\n"
        "CREATE TABLE files (k text, c int, v text, PRIMARY KEY (k, c));\n"
        "INSERT INTO files (k, c, v) VALUES ('a', 1, 'one');\n"
        "INSERT INTO files (k, c, v) VALUES ('a', 2, 'two');\n"
        "UPDATE files SET v = 'TWO' WHERE k = 'a' AND c = 2;\n"
        "SELECT c, v FROM files WHERE k = 'a';\n"
    )
    out = cqlsh("-f", str(f))
    assert "TWO" in out and "one" in out and "(2 rows)" in out, out


def test_tracing_on_shows_the_trace():
    """cqlsh's TRACING ON prints the session read back from system_traces, as against Cassandra."""
    out = cqlsh("-e", "TRACING ON; SELECT release_version FROM system.local WHERE key = 'local';")
    assert "Tracing session:" in out, out
    assert "activity" in out and "source_elapsed" in out, out
    assert "Execute CQL3 query" in out, out
    assert "Request complete" in out, out
