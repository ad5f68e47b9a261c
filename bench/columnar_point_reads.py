"""The cost of point reads on the columnar layout (issue 15): 2,000 random `SELECT * WHERE k = ?`
(one client thread, prepared) on a 22-column table of N rows (default 100,000), after flush + compact,
in the row layout and in the columnar one. A columnar point read decodes the 16,384-row group that
holds the key (a segment keeps its last two decoded groups), so it costs more than a row read.
    python3 bench/columnar_point_reads.py HOST HELENUS_BINARY [N]      # against a running Helenus node
"""
import random, subprocess, sys, time, statistics
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args
host, helenus = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
s = Cluster([host]).connect()
s.execute("CREATE KEYSPACE IF NOT EXISTS pr WITH replication={'class':'SimpleStrategy','replication_factor':1}")
cols = ", ".join(f"c{i} int" for i in range(20))
for name, opts in (("rows_t", ""), ("col_t", "WITH extensions = {'helenus.layout': 'columnar'}")):
    s.execute(f"DROP TABLE IF EXISTS pr.{name}")
    s.execute(f"CREATE TABLE pr.{name} (k int PRIMARY KEY, {cols}, t text) {opts}")
    ins = s.prepare(f"INSERT INTO pr.{name} (k, {', '.join(f'c{i}' for i in range(20))}, t) VALUES (?, {', '.join('?' for _ in range(20))}, ?)")
    execute_concurrent_with_args(s, ins, [(k, *[k * i % 1000 for i in range(20)], f"text{k % 97}") for k in range(N)], concurrency=64)
    for step in ("flush", "compact"):
        subprocess.run([helenus, "nodetool", "-h", host, step, "pr", name], check=True, capture_output=True)
out = {}
for name in ("rows_t", "col_t"):
    q = s.prepare(f"SELECT * FROM pr.{name} WHERE k = ?")
    r = random.Random(7)
    for k in range(200):
        s.execute(q, (r.randrange(N),))
    lat = []
    for _ in range(2000):
        k = r.randrange(N)
        t0 = time.perf_counter(); row = s.execute(q, (k,)).one(); lat.append((time.perf_counter() - t0) * 1000)
        assert row is not None and row.k == k
    lat.sort()
    out[name] = (statistics.mean(lat), lat[len(lat) // 2], lat[int(len(lat) * 0.99)])
    print(f"{name}: mean {out[name][0]:.3f} ms, p50 {out[name][1]:.3f} ms, p99 {out[name][2]:.3f} ms (2000 random point reads of {N} rows, 1 client thread)")
