#!/usr/bin/env bash
# Server instruction counts of the scan bench's three scans (valgrind callgrind), the steady measure
# when changing the read path (wall times on this machine move by 30% between runs; these by <1%).
# Loads 50k one-row rows, 50k clustered rows (350 partitions per 200k) and one 25k-row partition into
# one node under callgrind, runs each scan with helenus-scan from memtables, flushes, runs them again,
# and prints each phase's instruction total; the dumps stay in OUT for callgrind_annotate.
# usage: bench/scan_profile.sh NAME [ROWS] [WIDE_ROWS]; env FS (fetch size, 5000), BIN, SCAN, PY,
#        HOST (127.0.0.61), OUT (/tmp/helenus-scan-profile/NAME). Bounded: the load and each scan are
#        timed out, and the node is stopped by PID.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME=$1; ROWS=${2:-50000}; WIDE=${3:-25000}; FS=${FS:-5000}
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN=${BIN:-$TARGET_DIR/release/helenus}; SCAN=${SCAN:-$TARGET_DIR/release/helenus-scan}
PY=${PY:-$HOME/.cache/helenus/venv/bin/python}; HOST=${HOST:-127.0.0.61}
OUT=${OUT:-/tmp/helenus-scan-profile/$NAME}
rm -rf "$OUT"; mkdir -p "$OUT/data"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.%p.out" \
  "$BIN" server --listen-address "$HOST" --native-transport-port 9042 --data-dir "$OUT/data" \
  > "$OUT/server.log" 2>&1 &
P=$!
trap 'kill -TERM $P 2>/dev/null || true' EXIT
for _ in $(seq 300); do (exec 3<>"/dev/tcp/$HOST/9042") 2>/dev/null && break; sleep 1; done
timeout 1800 "$PY" - "$HOST" "$ROWS" "$WIDE" <<PYEOF
import sys
sys.path.insert(0, "$ROOT/bench")
import scan_client as sc
from cassandra.cluster import Cluster
c = Cluster([sys.argv[1]], port=9042)
s = c.connect()
s.default_timeout = 600
sc.schema(s)
rows = int(sys.argv[2])
sc.load(s, rows, 350 * rows // 200000 or 1, int(sys.argv[3]))
c.shutdown()
PYEOF
scans() {
  for q in "single|SELECT globaleventid FROM bench_scan.single" \
           "events|SELECT globaleventid FROM bench_scan.events" \
           "wide|SELECT globaleventid FROM bench_scan.wide WHERE part = 0"; do
    callgrind_control -i on $P > /dev/null
    timeout 600 "$SCAN" "$HOST:9042" "$FS" "${q#*|}" >> "$OUT/scan.jsonl"
    callgrind_control -i off $P > /dev/null
    callgrind_control -d "$1-${q%%|*}" $P > /dev/null
  done
}
scans memtable
"$BIN" nodetool -h "$HOST" flush bench_scan
scans flushed
kill -TERM $P; wait $P || true
trap - EXIT
for f in "$OUT"/cg.*.out.*; do
  echo "$(grep -m1 '^desc: Trigger' "$f" | cut -d' ' -f4) $(grep '^totals' "$f")"
done
