"""Background QUORUM load that records what was acknowledged, and a driver-side event watcher."""

import threading
import time

from cassandra import ConsistencyLevel as CL
from cassandra.policies import HostStateListener
from conftest import connect, wait_until


class Writer(threading.Thread):
    """Writes keys `prefix*1e6 + i` at `cl` through the given sessions in turn until stopped;
    `acked` holds every acknowledged key with its value, `failed` every error."""

    def __init__(self, sessions, table, prefix, cl=CL.QUORUM, pause=0.02):
        super().__init__(daemon=True)
        self.sessions = sessions
        self.prefix = prefix
        self.pause = pause
        self.acked = {}
        self.failed = []
        self.stopping = threading.Event()
        self.inserts = []
        for s in sessions:
            p = s.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
            p.consistency_level = cl
            self.inserts.append(p)

    def run(self):
        i = 0
        while not self.stopping.is_set():
            n = i % len(self.sessions)
            k = self.prefix * 1_000_000 + i
            v = f"w{k}"
            try:
                self.sessions[n].execute(self.inserts[n], (k, v))
                self.acked[k] = v
            except Exception as e:  # noqa: BLE001
                self.failed.append((k, time.monotonic(), f"{type(e).__name__}: {e}"))
            i += 1
            time.sleep(self.pause)

    def stop(self):
        self.stopping.set()
        self.join(60)
        assert not self.is_alive(), "writer did not stop"


def read_all(session, table, acked, cl):
    """Keys of `acked` whose value does not read back at `cl` through `session`: {k: got}."""
    select = session.prepare(f"SELECT v FROM {table} WHERE k = ?")
    select.consistency_level = cl
    missing = {}
    futures = []
    for k in acked:
        futures.append((k, session.execute_async(select, (k,))))
        if len(futures) >= 64:
            _collect(futures, acked, missing)
    _collect(futures, acked, missing)
    return missing


def _collect(futures, acked, missing):
    for k, f in futures:
        row = f.result().one()
        if row is None or row.v != acked[k]:
            missing[k] = row.v if row else None
    futures.clear()


class Events(HostStateListener):
    """A driver pinned to one node (no pools to the others), so other hosts' up/down state comes
    only from STATUS_CHANGE events on its control connection. Such hosts start with is_up None
    (unknown), and the driver calls listeners only on a transition from a known state, so tests
    watch `is_up` rather than the listener log (kept for failure messages)."""

    def __init__(self, address):
        self.log = []
        self.cluster, self.session = connect(address)
        self.cluster.register_listener(self)

    def on_up(self, host):
        self.log.append(("up", host.address, time.monotonic()))

    def on_down(self, host):
        self.log.append(("down", host.address, time.monotonic()))

    def on_add(self, host):
        self.log.append(("add", host.address, time.monotonic()))

    def on_remove(self, host):
        self.log.append(("remove", host.address, time.monotonic()))

    def is_up(self, address):
        return self.cluster.metadata.get_host(address).is_up

    def wait(self, address, up, timeout):
        wait_until(lambda: self.is_up(address) is up, timeout,
                   f"the driver on {self.cluster.contact_points} to mark {address} {'up' if up else 'down'} (events: {self.log})")

    def close(self):
        self.cluster.shutdown()
