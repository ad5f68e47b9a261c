"""Bad input on raw sockets: the node must answer an ERROR frame or close, never crash or wedge.

Each case records what Cassandra 5.0.9 does (asserted exactly where it is a protocol-visible
contract) and checks that a well-behaved connection opened BEFORE the bad one still works AFTER it.
"""

import random
import socket
import struct

import pytest

from wire import (
    OP_ERROR, OP_OPTIONS, OP_QUERY, OP_STARTUP, closed_after, connect, frame, handshake, outcome,
    parse_error, query_body, read_frame, release_version, startup_body,
)

PROTOCOL_ERROR = 0x000A


@pytest.fixture
def witness():
    """A READY connection opened before the bad input; checked usable after the bad input."""
    s = connect()
    handshake(s)
    release_version(s, stream=2)
    yield s
    # The node must still serve this connection and accept a brand-new one.
    release_version(s, stream=3)
    s.close()
    fresh = connect()
    handshake(fresh)
    release_version(fresh)
    fresh.close()


def assert_protocol_error(result, fragment):
    assert result[0] == "error", f"expected ERROR frame, got {result}"
    assert result[1] == PROTOCOL_ERROR, result
    assert fragment in result[2], result


def test_random_bytes(witness):
    # Seeded, so the first byte (0x61) is always an impossible protocol version: Cassandra answers
    # ERROR 0x000A "Invalid or unsupported protocol version (97)".
    rnd = random.Random(1234)
    data = bytes(rnd.randrange(256) for _ in range(64))
    s = connect()
    s.sendall(data)
    result = outcome(s)
    assert result[0] in ("error", "closed"), result
    if result[0] == "error":
        assert result[1] == PROTOCOL_ERROR, result
    s.close()


def test_many_random_garbage_connections(witness):
    rnd = random.Random(99)
    for _ in range(20):
        s = connect()
        s.sendall(bytes([rnd.randrange(0x07, 0x80)]) + bytes(rnd.randrange(256) for _ in range(200)))
        assert outcome(s, wait=3)[0] in ("error", "closed")
        s.close()


def test_truncated_frame_then_close(witness):
    s = connect()
    s.sendall(frame(OP_STARTUP, startup_body())[:12])
    s.shutdown(socket.SHUT_WR)
    # Cassandra: closes without a reply once the client half-closes.
    assert outcome(s)[0] in ("closed", "error")
    s.close()


def test_truncated_frame_abrupt_close(witness):
    s = connect()
    s.sendall(frame(OP_QUERY, query_body("SELECT * FROM system.local"))[:20])
    s.close()


def test_oversized_body_length(witness):
    s = connect()
    handshake(s)
    s.sendall(frame(OP_QUERY, b"", length=300 * 1024 * 1024, stream=5))
    # Cassandra 5.0.9 neither answers nor closes within seconds (it waits for the body), so an
    # ERROR frame, a close, or waiting are all accepted; what matters is that it does not try to
    # allocate 300 MiB up front and that other connections are unaffected (the witness).
    result = outcome(s, wait=3)
    assert result[0] in ("silent", "error", "closed"), result
    if result[0] == "error":
        assert result[1] in (PROTOCOL_ERROR, 0x2200), result
    s.close()


def test_unknown_opcode(witness):
    s = connect()
    s.sendall(frame(0x42, b"", stream=7))
    assert_protocol_error(outcome(s), "Unknown opcode 66")
    s.close()


def test_unknown_opcode_after_startup(witness):
    s = connect()
    handshake(s)
    s.sendall(frame(0x42, b"", stream=7))
    assert_protocol_error(outcome(s), "Unknown opcode 66")
    # Cassandra 5.0.9 keeps this connection open but its decoder stays stuck on the bad frame:
    # the next request is answered with the same "Unknown opcode 66" error on stream 7. That is
    # not a contract worth copying, so usability of THIS connection is not asserted; the
    # witness connection proves the node itself is fine.
    s.close()


@pytest.mark.parametrize("version,reply_version", [(0x42, 0x85), (0x02, 0x82)])
def test_unsupported_protocol_version(witness, version, reply_version):
    s = connect()
    if version <= 2:
        # A v1/v2 header is 8 bytes (1-byte stream); send a well-formed one.
        s.sendall(struct.pack(">BBbBI", version, 0, 0, OP_STARTUP, len(startup_body())) + startup_body())
    else:
        s.sendall(frame(OP_OPTIONS, version=version))
    result = outcome(s)
    assert_protocol_error(result, "Invalid or unsupported protocol version")
    # Cassandra replies in the client's old layout for v1/v2 (so the driver can read it and
    # downgrade) and with its highest version (v5 flag byte 0x85) for versions it cannot know.
    assert result[3] == reply_version, hex(result[3])
    s.close()


def test_query_before_startup(witness):
    s = connect()
    s.sendall(frame(OP_QUERY, query_body("SELECT release_version FROM system.local"), stream=4))
    assert_protocol_error(outcome(s), "Unexpected message QUERY, expecting STARTUP or OPTIONS")
    # Cassandra closes the connection after this error.
    assert closed_after(s, wait=5)
    s.close()


def test_string_length_exceeds_frame_in_query(witness):
    s = connect()
    handshake(s)
    body = struct.pack(">I", 5000) + b"SELECT"  # [long string] claims 5000 bytes, frame has 6
    s.sendall(frame(OP_QUERY, body, stream=9))
    assert_protocol_error(outcome(s), "Not enough bytes")
    s.close()


def test_string_length_exceeds_frame_in_startup(witness):
    s = connect()
    body = struct.pack(">H", 1) + struct.pack(">H", 500) + b"CQL"  # [string] claims 500 bytes
    s.sendall(frame(OP_STARTUP, body))
    # Cassandra 5.0.9 closes the connection without an ERROR frame here.
    assert outcome(s)[0] in ("closed", "error")
    s.close()


def test_pipelined_requests_around_a_bad_frame_are_all_answered(witness):
    # Requests that arrive in one read run one after another, their answers held back to be
    # written together (in batches of 32): none may be lost, doubled or answered on a wrong
    # stream, and a frame that does not decode in the middle gets its error without harm to
    # the requests before and after it.
    s = connect()
    handshake(s)
    select = query_body("SELECT release_version FROM system.local")
    before, after = list(range(10, 60)), list(range(100, 150))
    bad = frame(OP_QUERY, struct.pack(">I", 5000) + b"SELECT", stream=99)
    s.sendall(
        b"".join(frame(OP_QUERY, select, stream=st) for st in before)
        + bad
        + b"".join(frame(OP_QUERY, select, stream=st) for st in after)
    )
    answered, errors = [], []
    while len(answered) + len(errors) < len(before) + len(after) + 1:
        _v, _f, stream, opcode, body = read_frame(s)
        if opcode == OP_ERROR:
            errors.append((stream, parse_error(body)))
        else:
            assert opcode == 0x08, (stream, opcode, body[:100])  # RESULT
            answered.append(stream)
    assert sorted(answered) == before + after
    assert [(st, code) for st, (code, _msg) in errors] == [(99, PROTOCOL_ERROR)], errors
    s.close()
