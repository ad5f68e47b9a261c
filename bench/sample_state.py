#!/usr/bin/env python3
"""The server's state once a second, one JSON line each, until killed (bench/lib.sh's measured runs
it beside helenus-stress): what a step's latency may be waiting on.

Both servers: SSTables of keyspace1 on disk under the data directory. Helenus also (its admin API on
ADDR:10000): compactions pending and running, write stalls (writes held for memtable space) and the
milliseconds they waited, unflushed memtable bytes. Cassandra's would need a nodetool JVM a second.
Also the machine's idle, steal and total CPU jiffies (/proc/stat, cumulative): a closed-loop probe that
leaves the cores idle did not find the server's maximum, it found the client's concurrency limit; steal
is time the hypervisor gave this machine's virtual CPUs to someone else while they had work: a
second with steal stalls whichever server runs, so a tail in it is not that server's alone.

One long-lived process at the lowest priority: the shell loop it replaced started curl, jq, find and
awk every second, a few milliseconds of CPU each, which the 2-core machine's tails then carried.

    sample_state.py OUT SERVER DATA_DIR ADDR"""
import json, os, sys, time, urllib.request


def sstables(root):
    n = 0
    for dirpath, _, files in os.walk(root):
        if "keyspace1" in dirpath:
            n += sum(1 for f in files if f.endswith("Data.db"))
    return n


def cpu_jiffies():
    """(idle, steal, total) jiffies of all cores since boot; iowait counts as idle (no CPU did work)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None, None, None
    # user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    work = fields[:8]
    return work[3] + work[4], work[7], sum(work)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.read().decode()
    except (OSError, ValueError):
        return None


def helenus_state(addr):
    out = {"pending_compactions": None, "write_stalls": None, "write_stall_ms": None, "unflushed_bytes": None}
    metrics = get(f"http://{addr}:10000/metrics") or ""
    names = {"helenus_write_stalls_total": "write_stalls", "helenus_write_stall_ms_total": "write_stall_ms",
             "helenus_unflushed_memtable_bytes": "unflushed_bytes"}
    for line in metrics.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in names:
            out[names[parts[0]]] = float(parts[1])
    pending = get(f"http://{addr}:10000/compaction_manager/pending_tasks_by_table")
    try:
        out["pending_compactions"] = sum(n for tables in json.loads(pending).values() for n in tables.values())
    except (TypeError, ValueError, AttributeError):
        pass
    return out


def main():
    out, server, root, addr = sys.argv[1:5]
    os.nice(19)
    with open(out, "a") as f:
        while True:
            idle, steal, total = cpu_jiffies()
            sample = {"t": time.time(), "sstables": sstables(root), "idle_jiffies": idle, "steal_jiffies": steal,
                      "total_jiffies": total}
            if server == "helenus":
                sample.update(helenus_state(addr))
            f.write(json.dumps(sample) + "\n")
            f.flush()
            time.sleep(1)


if __name__ == "__main__":
    main()
