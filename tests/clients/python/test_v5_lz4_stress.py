"""Protocol v5 with lz4 segments under thousands of requests in flight (issue 16 item 2).

The Python driver (3.30) loses the connection ("CRC mismatch on header") when a TCP read ends
inside a segment header, and misreads the tail of an lz4 segment stored uncompressed. A server
that writes one segment per response puts a header every few dozen bytes of the stream, so a
burst of small responses mixed with large ones used to hit this within seconds. Every request
here must succeed with the right value on a connection that really negotiated v5 + lz4.
"""

import io
import os
import random
import socket
import struct
import time

import pytest
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT, NoHostAvailable
from cassandra import ConsistencyLevel
from cassandra.connection import segment_codec_lz4
from cassandra.policies import RoundRobinPolicy
from cassandra.protocol import ProtocolHandler, QueryMessage

from conftest import HOST, PORT

KS = "helenus_clients_python_v5"
DEADLINE_S = 40
ROUNDS = 4
READS_PER_ROUND = 5000
WRITES_PER_ROUND = 500
SCANS_PER_ROUND = 20
BURSTS = 6
RECEIVE_BUFFER_BYTES = 16 * 1024


def blob(rng, size):
    """Half the blobs are random (lz4 cannot shrink them), half repetitive."""
    if rng.random() < 0.5:
        return rng.randbytes(size)
    unit = rng.randbytes(rng.randint(1, 64))
    return (unit * (size // len(unit) + 1))[:size]


def value_sizes(rng):
    """Mostly tiny values, some medium, a few up to 200 KiB (several segments each)."""
    sizes = [rng.randint(1, 200) for _ in range(300)]
    sizes += [rng.randint(1024, 16 * 1024) for _ in range(80)]
    sizes += [rng.randint(64 * 1024, 200 * 1024) for _ in range(20)]
    return sizes


def v5_cluster(**kw):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=40)
    return Cluster(
        [HOST],
        port=PORT,
        protocol_version=5,
        compression="lz4",
        connect_timeout=10,
        control_connection_timeout=10,
        max_schema_agreement_wait=20,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        **kw,
    )


@pytest.fixture(scope="module")
def v5_session():
    cluster = v5_cluster()
    session = cluster.connect()
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    session.execute(
        f"CREATE KEYSPACE {KS} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.set_keyspace(KS)
    yield session
    session.execute(f"DROP KEYSPACE IF EXISTS {KS}")
    cluster.shutdown()


@pytest.fixture(scope="module")
def expected(v5_session):
    """Tables `blobs` (key -> value of value_sizes) and `small`; returns the blob values."""
    s = v5_session
    s.execute("CREATE TABLE blobs (k int PRIMARY KEY, v blob)")
    s.execute("CREATE TABLE small (k int PRIMARY KEY, v int)")
    rng = random.Random(20240516)
    values = {}
    insert = s.prepare("INSERT INTO blobs (k, v) VALUES (?, ?)")
    futures = []
    for k, size in enumerate(value_sizes(rng)):
        values[k] = blob(rng, size)
        futures.append(s.execute_async(insert, (k, values[k])))
    for f in futures:
        f.result()
    return values


def pool_connections(session):
    conns = []
    for pool in session.get_pools():
        conns.extend(pool.get_connections())
    return conns


def assert_v5_lz4(session):
    conns = pool_connections(session) + [session.cluster.control_connection._connection]
    assert conns
    for c in conns:
        assert c.protocol_version == 5
        assert c._compression_type == "lz4", "lz4 was not negotiated (is the lz4 module installed?)"
        assert c._is_checksumming_enabled, "v5 segments (checksumming) are not on"


@pytest.mark.skipif(
    os.environ.get("HELENUS_SLOW_READER_STRESS") != "1",
    reason="opt-in (HELENUS_SLOW_READER_STRESS=1): the driver itself drops a segment header cut by a "
    "TCP read, so even a correct server fails it now and then; it stays out of the CI gate",
)
def test_v5_lz4_bursts_of_small_responses_to_a_slow_reader(expected):
    """The issue's pattern: every key read back at once, all in flight, by a slow reader.

    A small receive window makes TCP deliver the stream in pieces cut at arbitrary bytes, as
    a slow client over a real network sees it; the driver loses the connection when a cut
    lands in a segment header, so with one segment per response this failed within ~10,000
    requests ("CRC mismatch on header").
    """
    cluster = v5_cluster(sockopts=[(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)])
    try:
        s = cluster.connect(KS)
        assert_v5_lz4(s)
        read = s.prepare("SELECT v FROM blobs WHERE k = ?")
        small_keys = [k for k, v in expected.items() if len(v) <= 200]
        rng = random.Random(11)
        started = time.monotonic()
        done = 0
        for _ in range(BURSTS):
            if time.monotonic() - started > DEADLINE_S / 2:
                break
            keys = rng.choices(small_keys, k=READS_PER_ROUND)
            futures = [s.execute_async(read, (k,)) for k in keys]
            for k, f in zip(keys, futures):
                assert f.result().one().v == expected[k]
                done += 1
        assert done >= 2 * READS_PER_ROUND, f"only {done} reads finished before the deadline"
        for c in pool_connections(s):
            assert not c.is_defunct, c.last_error
    finally:
        cluster.shutdown()


# The driver's own defect (it drops a segment header that a TCP read splits; see the module doc)
# cannot be removed by a server; with responses sharing segments it is rare (about one run in six
# lost the connection once). A round whose connection the driver drops for it is retried after the
# driver reconnects, at most this many times per run. The server bug this test guards against hit
# every round, so it still fails here.
DRIVER_CRC_RETRIES = 2


def driver_dropped_a_split_header(exc):
    return isinstance(exc, NoHostAvailable) and "CRC mismatch on header" in str(exc)


def wait_until_reconnected(session, timeout_s=20):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            session.execute("SELECT release_version FROM system.local")
            return
        except NoHostAvailable:
            time.sleep(0.2)
    raise AssertionError("the driver did not reconnect")


def test_v5_lz4_many_requests_in_flight_keep_the_connection(v5_session, expected):
    s = v5_session
    started = time.monotonic()
    assert_v5_lz4(s)
    driver_crc_drops = 0

    rng = random.Random(7)
    read = s.prepare("SELECT v FROM blobs WHERE k = ?")
    write = s.prepare("INSERT INTO small (k, v) VALUES (?, ?)")
    scan = s.prepare("SELECT k, v FROM blobs WHERE token(k) > ? LIMIT 40")
    small_keys = [k for k, v in expected.items() if len(v) <= 200]
    keys = list(expected)
    checked = 0
    for round_no in range(ROUNDS):
        if time.monotonic() - started > DEADLINE_S:
            break
        # Even rounds: a burst of small reads and writes, as when a client reads back every
        # key after a restart (the burst of small responses is what exposed the bug). Odd
        # rounds: values of every size and some slower scans, so segments of all sizes and
        # envelopes spanning segments interleave.
        burst = round_no % 2 == 0
        if burst:
            picks = rng.choices(small_keys, k=READS_PER_ROUND)
        else:
            picks = rng.choices(keys, k=READS_PER_ROUND // 4)
        batch = []
        for i, k in enumerate(picks):
            batch.append(("read", k, s.execute_async(read, (k,))))
            if burst and i % (READS_PER_ROUND // WRITES_PER_ROUND) == 0:
                w = round_no * READS_PER_ROUND + i
                batch.append(("write", w, s.execute_async(write, (w, w * 7))))
            if not burst and i % (len(picks) // SCANS_PER_ROUND) == 0:
                t = rng.randint(-(2**63), 2**63 - 1)
                batch.append(("scan", t, s.execute_async(scan, (t,))))
        try:
            checked += check_round(batch, expected)
        except NoHostAvailable as exc:
            if not driver_dropped_a_split_header(exc) or driver_crc_drops >= DRIVER_CRC_RETRIES:
                raise
            driver_crc_drops += 1
            wait_until_reconnected(s)
    assert checked >= READS_PER_ROUND, f"only {checked} requests finished before the deadline"
    for c in pool_connections(s):
        assert not c.is_defunct, c.last_error
    # The writes landed too.
    assert s.execute("SELECT v FROM small WHERE k = 10").one().v == 70


def check_round(batch, expected):
    """Waits for every request of a round and checks its answer; returns how many."""
    checked = 0
    for kind, key, f in batch:
        rows = f.result()
        if kind == "read":
            row = rows.one()
            assert row is not None, f"key {key} missing"
            assert row.v == expected[key], f"key {key}: wrong value ({len(row.v)} bytes)"
        elif kind == "scan":
            for row in rows:
                assert row.v == expected[row.k]
        checked += 1
    return checked


def envelope(opcode, stream, body):
    return struct.pack(">BBhBi", 5, 0, stream, opcode, len(body)) + body


def string_map(m):
    out = struct.pack(">H", len(m))
    for k, v in m.items():
        out += struct.pack(">H", len(k)) + k.encode() + struct.pack(">H", len(v)) + v.encode()
    return out


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        assert more, "connection closed"
        data += more
    return data


def test_pipelined_small_responses_share_segments(expected):
    """Responses queued together go out in shared segments, never stored uncompressed.

    Each segment boundary is a place where a TCP read can split a header, which the driver
    cannot survive; with one segment per response there was one every ~70 bytes.
    """
    n = 2000
    small_keys = [k for k, v in expected.items() if len(v) <= 200]
    with socket.create_connection((HOST, PORT), timeout=20) as sock:
        startup = {"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4"}
        sock.sendall(envelope(0x01, 0, string_map(startup)))
        ready = recv_exactly(sock, 9)
        assert ready[4] == 0x02, f"expected READY, got opcode {ready[4]:#x}"
        wire = io.BytesIO()
        for i in range(n):
            query = QueryMessage(
                f"SELECT v FROM {KS}.blobs WHERE k = {small_keys[i % len(small_keys)]}",
                ConsistencyLevel.ONE,
            )
            msg = ProtocolHandler.encode_message(query, i + 1, 5, None, False)
            segment_codec_lz4.encode(wire, msg)
        sock.sendall(wire.getvalue())

        buf, frames = b"", b""
        segments = stored = envelopes = 0
        while envelopes < n:
            more = sock.recv(1 << 20)
            assert more, "connection closed"
            buf += more
            while len(buf) >= 8:
                header = segment_codec_lz4.decode_header(io.BytesIO(buf))
                # The driver's own SegmentHeader.segment_length is wrong for stored segments.
                length = 8 + header.payload_length + 4
                if len(buf) < length:
                    break
                body = io.BytesIO(buf[8:length])
                frames += segment_codec_lz4.decode(body, header).payload
                segments += 1
                stored += header.uncompressed_payload_length == 0
                buf = buf[length:]
            while len(frames) >= 9:
                body_len = struct.unpack(">i", frames[5:9])[0]
                if len(frames) < 9 + body_len:
                    break
                frames = frames[9 + body_len:]
                envelopes += 1
    assert stored == 0, f"{stored} of {segments} lz4 segments stored uncompressed"
    # How many responses join one batch varies with scheduling: the writer gathers those that
    # keep completing for up to 50 us (13-111 segments for 2,000 measured at a0cc10f; 200-534
    # when statements ran on their own pool). One segment per response (the bug, and what a
    # writer that does not gather gives: 1,896 in CI) gives 2,000; a quarter fewer segments than
    # responses is asserted, with room for scheduling.
    assert segments <= n * 3 // 4, f"{segments} segments for {n} pipelined responses"


def test_corrupt_segment_is_answered_inside_a_segment(expected):
    """A bad segment is fatal, but the PROTOCOL_ERROR still goes out in segment framing.

    A plain envelope in a v5 stream reads as a segment header with a bad CRC24, which is the
    error the driver reported in the issue.
    """
    with socket.create_connection((HOST, PORT), timeout=20) as sock:
        startup = {"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4"}
        sock.sendall(envelope(0x01, 0, string_map(startup)))
        assert recv_exactly(sock, 9)[4] == 0x02
        wire = io.BytesIO()
        segment_codec_lz4.encode(wire, envelope(0x05, 1, b""))
        bad = bytearray(wire.getvalue())
        bad[-1] ^= 0xFF  # payload CRC32
        sock.sendall(bytes(bad))
        head = recv_exactly(sock, 8)
        header = segment_codec_lz4.decode_header(io.BytesIO(head))
        rest = recv_exactly(sock, header.payload_length + 4)
        payload = segment_codec_lz4.decode(io.BytesIO(rest), header).payload
        assert payload[4] == 0x00, "expected an ERROR envelope"
        assert struct.unpack(">i", payload[9:13])[0] == 0x000A  # PROTOCOL_ERROR
        assert sock.recv(1) == b"", "the connection should close after a fatal error"
