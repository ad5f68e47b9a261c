#!/usr/bin/env bash
# Read cost in the state bench/run.sh's latte reads run in: a node loaded by latte (1M rows of
# bench/standard1.rn), then latte's three write workloads (WRITES, WDUR s each), each settled
# (flush, then `compactionstats` until nothing is pending), so every in-memory key sits in several
# SSTables. Then FN (read_inmem) is measured for 10 s: server CPU per 1,000 reads from
# /proc/PID/stat, the SSTable count and SSTables read per read (tablehistograms); again after
# `nodetool compact` (one SSTable), which is the state a read-only A/B starts from.
#   CARGO_TARGET_DIR=... bench/read_state.sh     BIN (helenus binary) FN WRITES WDUR PERF=1 (perf
#   record -g of the first measurement into $WORK/perf.data)
# Prints its numbers; writes nothing under bench/results (no Cassandra in it: not a record).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
# shellcheck disable=SC1091
source "$CASS/lib.sh"   # LATTE_BIN
BIN="${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/helenus}"
FN="${FN:-read_inmem}"; WRITES="${WRITES:-write_uniform write_gaussian write_inmem}"; WDUR="${WDUR:-30}"
ROWS=1000000; ADDR="${ADDR:-127.0.0.67}"; RN="$ROOT/bench/standard1.rn"
[ -x "$LATTE_BIN" ] || { echo "latte not built ($LATTE_BIN): run $CASS/setup.sh without SKIP_LATTE" >&2; exit 1; }
[ -x "$BIN" ] || { echo "no helenus binary at $BIN" >&2; exit 1; }
if (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null; then echo "$ADDR:9042 is in use by another process" >&2; exit 1; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/helenus-read-state.XXXXXX")"; cd "$WORK"
"$BIN" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$WORK/data" \
  --set memtable_heap_space=256MiB --set file_cache_size=256MiB --set key_cache_size=51MiB > server.log 2>&1 &
SP=$!
trap 'kill "$SP" 2>/dev/null || true; wait "$SP" 2>/dev/null || true; rm -rf "$WORK/data"' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null && break; sleep 0.2; done
nt() { "$BIN" nodetool -h "$ADDR" "$@"; }
settle() {
  nt flush keyspace1 > /dev/null 2>&1 || true; sleep 1
  for _ in $(seq 1 300); do
    [ "$(nt compactionstats | awk '/pending tasks/{print $3}')" = 0 ] && return; sleep 1
  done
}
latte_run() {  # function seconds output
  "$LATTE_BIN" run -q -t 1 -p 128 -d "$2s" -w 0s -f "$1" "$RN" -P rows="$ROWS" --consistency ONE -c 1 -o "$3" "$ADDR" > "$3.log" 2>&1
}
"$LATTE_BIN" schema "$RN" -P rows="$ROWS" "$ADDR" > schema.log 2>&1
"$LATTE_BIN" load -q -t 1 --concurrency 128 "$RN" -P rows="$ROWS" "$ADDR" > load.log 2>&1
settle
for fn in $WRITES; do latte_run "$fn" "$WDUR" "$fn.json"; settle; done
measure() {
  latte_run "$FN" 3 warm.json
  local t0 t1 ops pp=""
  if [ "${PERF:-0}" = 1 ] && [ "$1" = writes ]; then
    perf record -F 999 -g --call-graph dwarf,16384 -p "$SP" -o perf.data -- sleep 11 > /dev/null 2>&1 &
    pp=$!
  fi
  t0=$(awk '{print $14+$15}' "/proc/$SP/stat")
  latte_run "$FN" 10 run.json
  t1=$(awk '{print $14+$15}' "/proc/$SP/stat")
  [ -z "$pp" ] || wait "$pp"
  ops=$(python3 -c "import json; d=json.load(open('run.json')); print(d.get('result', d)['cycle_count'])")
  echo "after $1: $FN ops=$ops server_ms_per_1k=$(python3 -c "print(round(($t1-$t0)*10/($ops/1000),2))")" \
    "sstables=$(nt tablestats keyspace1.standard1 | awk '/SSTable count/{print $3}')" \
    "sstables_read_p99=$(nt tablehistograms keyspace1 standard1 | awk '$1=="99%"{print $4}')"
}
measure writes
nt compact keyspace1 > /dev/null 2>&1; settle
measure compact
echo "work dir: $WORK"
