#!/usr/bin/env bash
# Scan benchmark, Helenus beside Apache Cassandra 5.0 in the same run, on the same data and client:
#   bench/scan.sh
# Each server, on a fresh data dir, gets bench_scan.single (ROWS one-row partitions), bench_scan.events
# (ROWS rows in PARTITIONS partitions of clustered rows, the shape of issue 16's Spark table) and
# bench_scan.wide (one partition of WIDE_ROWS rows), loaded by bench/scan_client.py (Python driver,
# prepared INSERTs). Then, with the data in memtables and again after `nodetool flush`, it times
# `SELECT globaleventid FROM single`, `... FROM events` and `... FROM wide WHERE part = 0` paged at each
# of FETCH_SIZES, recording the client's CPU seconds beside each wall time (the client can be the
# bottleneck: when its CPU is close to the wall time, a ratio understates the server's difference).
# Writes bench/results/scan-<date>-<commit>.json and .md (Helenus/Cassandra time ratios).
# Env: ROWS (200000), PARTITIONS (350), WIDE_ROWS (100000), FETCH_SIZES (1000,5000), SCAN_LIMIT_S (300: a
#      scan slower than this stops and is recorded as timed out), SERVERS ("helenus cassandra"),
#      HEL_ADDR (127.0.0.60), CASS_ADDR (127.0.0.6), HEAP (Cassandra heap, 1G), HELENUS (binary),
#      PY (python with cassandra-driver, default ~/.cache/helenus/venv/bin/python), LABEL (names the results
#      instead of the commit, e.g. for an older HELENUS binary).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HELENUS="${HELENUS:-$TARGET_DIR/release/helenus}"
# The second client (Rust, scylla driver): its CPU per row is small, so wall times are the servers'.
SCAN_BIN="${SCAN_BIN:-$TARGET_DIR/release/helenus-scan}"
PY="${PY:-$HOME/.cache/helenus/venv/bin/python}"
ROWS="${ROWS:-200000}"; PARTITIONS="${PARTITIONS:-350}"; WIDE_ROWS="${WIDE_ROWS:-100000}"
FETCH_SIZES="${FETCH_SIZES:-1000,5000}"; SCAN_LIMIT_S="${SCAN_LIMIT_S:-300}"
SERVERS="${SERVERS:-helenus cassandra}"; HEAP="${HEAP:-1G}"
HEL_ADDR="${HEL_ADDR:-127.0.0.60}"; CASS_ADDR="${CASS_ADDR:-127.0.0.6}"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
WORK="${HOME}/.cache/helenus/bench/scan-$$"
OUT="$ROOT/bench/results"; NAME="scan-$DATE-${LABEL:-$COMMIT}"
mkdir -p "$WORK" "$OUT"
log() { echo "[scan-bench $(date -u +%T)] $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$1" "$2" && return 0; sleep 1; done; return 1; }

if [ ! -x "$HELENUS" ] || [ ! -x "$SCAN_BIN" ]; then
  log "building helenus and helenus-scan (release)"
  (cd "$ROOT" && cargo build -q --release --bin helenus --bin helenus-scan)
fi

HPID=""; CASS_UP=""
cleanup() {
  if [ -n "$HPID" ] && kill -0 "$HPID" 2>/dev/null; then kill -TERM "$HPID"; wait "$HPID" 2>/dev/null || true; fi
  if [ -n "$CASS_UP" ]; then "$CASS/stop.sh" "$CASS_ADDR" "$WORK/cassandra" >&2 || true; fi
}
trap cleanup EXIT

run_client() {  # server addr flush-command server-pid
  log "$1: load and scans"
  timeout -k 10 3600 "$PY" "$ROOT/bench/scan_client.py" "$2" 9042 --rows "$ROWS" --partitions "$PARTITIONS" \
    --wide-rows "$WIDE_ROWS" --fetch-sizes "$FETCH_SIZES" --scan-limit-s "$SCAN_LIMIT_S" \
    --flush-cmd "$3" --server-pid "$4" --rust-scan "$SCAN_BIN" > "$WORK/$1.jsonl"
}

for s in $SERVERS; do
  case "$s" in
    helenus)
      mkdir -p "$WORK/helenus"
      "$HELENUS" server --listen-address "$HEL_ADDR" --native-transport-port 9042 \
        --data-dir "$WORK/helenus" > "$WORK/helenus.log" 2>&1 &
      HPID=$!
      wait_port "$HEL_ADDR" 9042 60 || { log "helenus did not start"; exit 1; }
      run_client helenus "$HEL_ADDR" "$HELENUS nodetool -h $HEL_ADDR flush bench_scan" "$HPID"
      kill -TERM "$HPID"; wait "$HPID" 2>/dev/null || true; HPID="" ;;
    cassandra)
      CASS_UP=1
      HEAP="$HEAP" "$CASS/start.sh" "$CASS_ADDR" 9042 "$WORK/cassandra" >&2
      run_client cassandra "$CASS_ADDR" "$CASS/nodetool.sh $CASS_ADDR -- flush bench_scan" \
        "$(cat "$WORK/cassandra/cassandra.pid")"
      "$CASS/stop.sh" "$CASS_ADDR" "$WORK/cassandra" >&2 || true; CASS_UP="" ;;
    *) log "unknown server $s"; exit 2 ;;
  esac
done

"$PY" "$ROOT/bench/scan_report.py" "$WORK" "$OUT/$NAME" "${LABEL:-$COMMIT}" "$(cut -d' ' -f1-3 /proc/loadavg)" $SERVERS
log "wrote $OUT/$NAME.json and .md"
rm -rf "$WORK"
