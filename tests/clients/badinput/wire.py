"""Minimal CQL native-protocol v4 framing over raw sockets, for feeding the server bad input."""

import os
import socket
import struct
import time

HOST = os.environ.get("HELENUS_HOST", "127.0.0.1")
PORT = int(os.environ.get("HELENUS_PORT", "9042"))
TIMEOUT = 10.0

OP_ERROR, OP_STARTUP, OP_READY, OP_OPTIONS, OP_QUERY, OP_RESULT = 0x00, 0x01, 0x02, 0x05, 0x07, 0x08


def frame(opcode, body=b"", version=0x04, stream=0, flags=0, length=None):
    """A request frame; `length` overrides the header's body length to build lying headers."""
    n = len(body) if length is None else length
    return struct.pack(">BBhBI", version, flags, stream, opcode, n) + body


def string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def long_string(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b


def startup_body():
    return struct.pack(">H", 1) + string("CQL_VERSION") + string("3.0.0")


def query_body(cql, consistency=0x0001):
    return long_string(cql) + struct.pack(">HB", consistency, 0)


def connect():
    s = socket.create_connection((HOST, PORT), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def read_frame(s):
    """Returns (version, flags, stream, opcode, body) of the next response frame.

    Cassandra answers a v1/v2 request with a v1/v2-layout frame (8-byte header, 1-byte stream),
    so the header size is chosen from the response's own version byte.
    """
    first = recv_exact(s, 1)
    if first[0] & 0x7F <= 2:
        flags, stream, opcode, n = struct.unpack(">BbBI", recv_exact(s, 7))
    else:
        flags, stream, opcode, n = struct.unpack(">BhBI", recv_exact(s, 8))
    return first[0], flags, stream, opcode, recv_exact(s, n)


def parse_error(body):
    code, mlen = struct.unpack(">iH", body[:6])
    return code, body[6:6 + mlen].decode("utf-8", "replace")


def outcome(s, wait=5.0):
    """What the server did after bad input: ('error', code, message), ('closed',) or ('silent',).

    A server that closes after an ERROR frame yields the ERROR (the frame is what a client sees).
    """
    s.settimeout(wait)
    try:
        _v, _f, _st, opcode, body = read_frame(s)
    except socket.timeout:
        return ("silent",)
    except (ConnectionError, OSError):
        return ("closed",)
    if opcode == OP_ERROR:
        code, msg = parse_error(body)
        return ("error", code, msg, _v)
    return ("frame", opcode)


def closed_after(s, wait=5.0):
    """True if the server closes the connection within `wait` seconds (EOF or reset)."""
    s.settimeout(wait)
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            if not s.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True
    return False


def handshake(s):
    """STARTUP on a fresh v4 connection; asserts READY."""
    s.sendall(frame(OP_STARTUP, startup_body(), stream=1))
    _v, _f, stream, opcode, body = read_frame(s)
    assert (stream, opcode) == (1, OP_READY), (stream, opcode, body[:200])


def release_version(s, stream=2):
    """Runs SELECT release_version FROM system.local on a READY connection and returns it."""
    s.sendall(frame(OP_QUERY, query_body("SELECT release_version FROM system.local"), stream=stream))
    _v, _f, st, opcode, body = read_frame(s)
    assert (st, opcode) == (stream, OP_RESULT), (st, opcode, body[:200])
    kind, = struct.unpack(">i", body[:4])
    assert kind == 2, kind  # Rows
    # Rows metadata: flags, column count, (global table spec), column spec, then rows.
    flags, ncols = struct.unpack(">ii", body[4:12])
    assert ncols == 1
    assert b"5." in body, body  # release_version "5.0.x" is in the single cell
    return body
