#!/usr/bin/env bash
# The GDELT analytics study of issue 15, Helenus beside Apache Cassandra 5.0 in the same run:
#   bench/analytics.sh                     quick: 100,000 events (a few minutes on 2 cores)
#   ROWS=4160000 bench/analytics.sh        the study's size (4.16M events of 57 columns)
# bench/gdelt.py generates GDELT 1.0 events once (deterministic by SEED). Each server, on a fresh data dir,
# gets each layout of LAYOUTS (narrow: one row per partition; wide: a partition per month; compact: narrow
# WITH COMPACT STORAGE; columnar: narrow in Helenus's columnar layout, Helenus only) loaded through the Python driver (prepared INSERTs in unlogged batches), then
# `nodetool flush` + `nodetool compact` (the on-disk size after compaction), then the study's queries
# through CQL (bench/analytics_client.py: full-scan count, AvgTone by Actor1Name aggregated in the client,
# AVG/MIN/MAX(AvgTone) for MonthYear 198012, counts for Actor1CountryCode USA and ALB, a 2-column
# projection). Helenus's narrow table is then exported with `helenus nodetool export ... --format parquet`
# and DuckDB runs the same queries on the Parquet files.
# Writes bench/results/analytics-<date>-<commit>.json, .md and -<query>.png (bench/analytics_report.py).
# Spark over each layout is not run here yet (bench/spark.sh covers the CQL layouts).
# Env: ROWS (100000), SEED (1979), LAYOUTS ("narrow wide compact columnar"), SERVERS ("helenus cassandra"),
#      QUERY_LIMIT_S (600: a query slower than this is recorded as timed out), LOAD_LIMIT_S (3600),
#      HEL_ADDR (127.0.0.91), CASS_ADDR (127.0.0.92), HEAP (Cassandra heap, 1G), HELENUS (binary),
#      PY (python with cassandra-driver; duckdb is installed into it when missing), LABEL (names the
#      results instead of the commit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HELENUS="${HELENUS:-$TARGET_DIR/release/helenus}"
PY="${PY:-$HOME/.cache/helenus/venv/bin/python}"
ROWS="${ROWS:-100000}"; SEED="${SEED:-1979}"; LAYOUTS="${LAYOUTS:-narrow wide compact columnar}"
SERVERS="${SERVERS:-helenus cassandra}"; HEAP="${HEAP:-1G}"
QUERY_LIMIT_S="${QUERY_LIMIT_S:-600}"; LOAD_LIMIT_S="${LOAD_LIMIT_S:-3600}"
HEL_ADDR="${HEL_ADDR:-127.0.0.91}"; CASS_ADDR="${CASS_ADDR:-127.0.0.92}"
KS=bench_analytics
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
WORK="${HOME}/.cache/helenus/bench/analytics-$$"
OUT="$ROOT/bench/results"; NAME="analytics-$DATE-${LABEL:-$COMMIT}"
RESULTS="$WORK/results.jsonl"
mkdir -p "$WORK" "$OUT"; : > "$RESULTS"
LOADAVG_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log() { echo "[analytics-bench $(date -u +%T)] $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$1" "$2" && return 0; sleep 1; done; return 1; }
now_ms() { date +%s%3N; }

if [ ! -x "$HELENUS" ]; then
  log "building helenus (release)"
  (cd "$ROOT" && cargo build -q --release --bin helenus)
fi
# DuckDB reads the Parquet export; installed into the driver's venv once.
"$PY" -c 'import duckdb' 2>/dev/null || { log "installing duckdb into $PY's venv"; "$PY" -m pip install -q duckdb >&2; }

# ---- servers: one at a time, each on a fresh data dir; stopped by PID ----
CURRENT=""; PID=""; ADDR=""; DIR=""
start_server() {  # server
  DIR="$WORK/data-$1"; rm -rf "$DIR"; mkdir -p "$DIR"
  case "$1" in
    helenus)
      ADDR="$HEL_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      "$HELENUS" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$DIR" \
        > "$WORK/helenus.log" 2>&1 &
      PID=$!; CURRENT=helenus
      wait_port "$ADDR" 9042 120 || { log "helenus did not start; see $WORK/helenus.log"; return 1; } ;;
    cassandra)
      ADDR="$CASS_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      CURRENT=cassandra
      HEAP="$HEAP" timeout 600 "$CASS/start.sh" "$ADDR" 9042 "$DIR" >&2 || return 1
      PID="$(cat "$DIR/cassandra.pid")" ;;
    *) log "unknown server $1"; return 2 ;;
  esac
  log "$1 up on $ADDR:9042 (pid $PID)"
}
stop_server() {
  case "$CURRENT" in
    helenus) if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
               kill -TERM "$PID"
               local t0=$SECONDS
               while kill -0 "$PID" 2>/dev/null && (( SECONDS - t0 < 60 )); do sleep 0.2; done
               kill -0 "$PID" 2>/dev/null && kill -KILL "$PID"
               wait "$PID" 2>/dev/null || true
             fi ;;
    cassandra) timeout 120 "$CASS/stop.sh" "$ADDR" "$DIR" >&2 || true ;;
  esac
  CURRENT=""; PID=""
}
trap stop_server EXIT

nodetool() {  # args... (against the current server)
  case "$CURRENT" in
    helenus) timeout 1800 "$HELENUS" nodetool -h "$ADDR" "$@" ;;
    cassandra) timeout 1800 "$CASS/nodetool.sh" "$ADDR" -- "$@" ;;
  esac
}
# Waits (bounded) until no compaction is pending, so sizes are read after the server's own compactions.
settle() {
  local t0=$SECONDS p
  while (( SECONDS - t0 < 300 )); do
    p="$(nodetool compactionstats 2>/dev/null | awk '/pending tasks/{print $3}')"
    [ "${p:-0}" = 0 ] && return 0; sleep 2
  done
  log "$CURRENT: compactions still pending after 300 s"
}
table_dir() { find "$DIR" -maxdepth 4 -type d -path "*/$KS/$1-*" 2>/dev/null | head -1; }
# Bytes of the table's live files (no snapshots, no commitlog) and its number of SSTables.
table_bytes() { local d; d="$(table_dir "$1")"; [ -n "$d" ] && find "$d" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}' || echo 0; }
# (Cassandra's and Helenus's row SSTables have a Data.db, Helenus's columnar ones a Columns.db.)
table_sstables() { local d; d="$(table_dir "$1")"; [ -n "$d" ] && find "$d" -maxdepth 1 -type f \( -name '*Data.db' -o -name '*Columns.db' \) | wc -l || echo 0; }
live_bytes() { nodetool tablestats "$KS.$1" 2>/dev/null | awk -F': ' '/Space used \(live\)/{print $2; exit}'; }

# One JSON line per step: {"server", "layout", "step", ...} or {..., "failed": reason}.
record() { printf '{"server":"%s","layout":"%s","step":"%s",%s}\n' "$CURRENT" "$1" "$2" "$3" >> "$RESULTS"; }
failed() { record "$1" "$2" "\"failed\":$(printf '%s' "$3" | "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read()[-400:]))')"; log "$CURRENT $1 $2 failed: $3"; }

load_layout() {  # layout table
  local out
  log "$CURRENT: loading $ROWS events into $KS.$2 ($1)"
  if out="$(timeout "$LOAD_LIMIT_S" "$PY" "$ROOT/bench/gdelt.py" load "$ADDR" "$WORK/gdelt.pkl" --layout "$1" 2>"$WORK/load.err")"; then
    record "$1" load "\"load\":$out"; log "$CURRENT $1 load: $out"
  else
    failed "$1" load "$(tail -5 "$WORK/load.err")"; return 1
  fi
}
compact_layout() {  # layout table
  local t0 flush_ms compact_ms pre_bytes pre_sst
  t0=$(now_ms); nodetool flush "$KS" "$2" >/dev/null || { failed "$1" compact "flush failed"; return 1; }
  flush_ms=$(( $(now_ms) - t0 )); settle
  pre_bytes=$(table_bytes "$2"); pre_sst=$(table_sstables "$2")
  t0=$(now_ms); nodetool compact "$KS" "$2" >/dev/null || { failed "$1" compact "compact failed"; return 1; }
  compact_ms=$(( $(now_ms) - t0 )); settle
  sleep 2  # Cassandra deletes obsolete files just after the compaction's transaction commits
  record "$1" size "\"flush_ms\":$flush_ms,\"compact_ms\":$compact_ms,\"pre_compact_bytes\":$pre_bytes,\"pre_compact_sstables\":$pre_sst,\"bytes\":$(table_bytes "$2"),\"sstables\":$(table_sstables "$2"),\"live_bytes_tablestats\":$(live_bytes "$2" | grep -E '^[0-9]+$' || echo null)"
  log "$CURRENT $1: $pre_sst sstables, $pre_bytes bytes -> compact ${compact_ms} ms -> $(table_bytes "$2") bytes"
}
query_layout() {  # layout
  log "$CURRENT: queries on $1"
  timeout $(( QUERY_LIMIT_S * 7 + 120 )) "$PY" "$ROOT/bench/analytics_client.py" cql "$ADDR" --layout "$1" \
      --server-pid "$PID" --limit-s "$QUERY_LIMIT_S" 2>"$WORK/query.err" \
    | sed "s/^{/{\"server\":\"$CURRENT\",\"step\":\"query\",/" >> "$RESULTS" \
    || failed "$1" query "$(tail -5 "$WORK/query.err")"
}
# Helenus's narrow table as Parquet (one file per token range), then DuckDB's queries on the files.
parquet_export() {
  local dir="$WORK/parquet" t0 ms
  rm -rf "$dir"; mkdir -p "$dir"
  t0=$(now_ms)
  nodetool export "$KS" narrow "$dir" --format parquet > "$WORK/export.log" 2>&1 \
    || { failed parquet export "$(tail -5 "$WORK/export.log")"; return 1; }
  ms=$(( $(now_ms) - t0 ))
  record parquet size "\"export_ms\":$ms,\"files\":$(find "$dir" -type f -name '*.parquet' | wc -l),\"bytes\":$(find "$dir" -type f -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s+0}')"
  log "parquet export: $(tail -1 "$RESULTS")"
  timeout $(( QUERY_LIMIT_S * 7 )) "$PY" "$ROOT/bench/analytics_client.py" duckdb "$dir" 2>"$WORK/duckdb.err" \
    | sed "s/^{/{\"server\":\"duckdb\",\"step\":\"query\",/" >> "$RESULTS" \
    || failed parquet query "$(tail -5 "$WORK/duckdb.err")"
}

log "generating $ROWS GDELT 1.0 events (seed $SEED)"
DATASET="$(timeout 3600 "$PY" "$ROOT/bench/gdelt.py" gen --rows "$ROWS" --seed "$SEED" --pickle "$WORK/gdelt.pkl")"
log "data set: $DATASET"

for s in $SERVERS; do
  if ! start_server "$s"; then
    CURRENT="$s"; failed all start "$s did not start"; stop_server; continue
  fi
  for layout in $LAYOUTS; do
    [ "$s" = cassandra ] && [ "$layout" = columnar ] && continue
    table="$("$PY" -c "import sys; sys.path.insert(0, '$ROOT/bench'); import gdelt; print(gdelt.table_name('$layout'))")"
    load_layout "$layout" "$table" || continue
    compact_layout "$layout" "$table" || true
    query_layout "$layout"
  done
  if [ "$s" = helenus ] && [[ " $LAYOUTS " == *" narrow "* ]]; then parquet_export || true; fi
  stop_server
done

VENV_PY="$HOME/.cache/helenus/bench-venv/bin/python"   # matplotlib (bench/lib.sh's make_report creates it)
"$VENV_PY" -c 'import matplotlib' 2>/dev/null || VENV_PY="$PY"
"$VENV_PY" "$ROOT/bench/analytics_report.py" "$RESULTS" "$OUT/$NAME" --label "${LABEL:-$COMMIT}" \
  --dataset "$DATASET" --loadavg "$LOADAVG_START" --rows "$ROWS"
log "wrote $OUT/$NAME.json and .md"
rm -rf "$WORK"
