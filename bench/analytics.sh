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
# projection), then the same queries through Spark 3.5 (local[2], the DataStax connector 3.5.1) on that
# layout's table (bench/analytics_spark.py: one Spark session per server, fed layout by layout through a
# FIFO; Spark SQL = the DuckDB SQL). Helenus's narrow table is then exported with `helenus nodetool export
# ... --format parquet`; DuckDB, then the same Spark session (spark.read.parquet), run the queries on the files.
# Writes bench/results/analytics-<date>-<commit>.json, .md and -<query>.png (bench/analytics_report.py).
# Env: ROWS (100000), SEED (1979), LAYOUTS ("narrow wide compact columnar"), SERVERS ("helenus cassandra"),
#      QUERY_LIMIT_S (600: a query slower than this is recorded as timed out, CQL and Spark alike),
#      LOAD_LIMIT_S (3600), HEL_ADDR (127.0.0.91), CASS_ADDR (127.0.0.92), HEAP (Cassandra heap, 1G),
#      HELENUS (binary), PY (python with cassandra-driver; duckdb is installed into it when missing),
#      SPARK (1; 0 skips Spark), SPARK_ADDR (the Spark driver's bind address, 127.0.0.95), DRIVER_MEMORY
#      (Spark driver, 2g), SPARK_VENV (~/.cache/helenus/spark-venv: pyspark 3.5 installed there once,
#      bench/lib.sh's spark_install), LABEL (names the results instead of the commit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/bench/lib.sh"   # spark_install, kill_pidfile
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HELENUS="${HELENUS:-$TARGET_DIR/release/helenus}"
PY="${PY:-$HOME/.cache/helenus/venv/bin/python}"
ROWS="${ROWS:-100000}"; SEED="${SEED:-1979}"; LAYOUTS="${LAYOUTS:-narrow wide compact columnar}"
SERVERS="${SERVERS:-helenus cassandra}"; HEAP="${HEAP:-1G}"
QUERY_LIMIT_S="${QUERY_LIMIT_S:-600}"; LOAD_LIMIT_S="${LOAD_LIMIT_S:-3600}"
HEL_ADDR="${HEL_ADDR:-127.0.0.91}"; CASS_ADDR="${CASS_ADDR:-127.0.0.92}"
SPARK="${SPARK:-1}"; SPARK_ADDR="${SPARK_ADDR:-127.0.0.95}"; DRIVER_MEMORY="${DRIVER_MEMORY:-2g}"
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
if [ "$SPARK" = 1 ] && ! spark_install; then log "pyspark 3.5 unavailable: no Spark queries"; SPARK=0; fi
# The Helenus Spark source (connectors/spark), built against that pyspark's jars; Spark reads the columnar
# table through it as well as through the connector (engine "spark_source" in the report).
HELENUS_SPARK_JAR=""
if [ "$SPARK" = 1 ]; then
  HELENUS_SPARK_JAR="$(PYTHON="$SPARK_PY" "$ROOT/connectors/spark/build.sh" 2>"$WORK/spark-source-build.err")" \
    || { log "the Helenus Spark source did not build: $(tail -3 "$WORK/spark-source-build.err")"; HELENUS_SPARK_JAR=""; }
fi
export HELENUS_SPARK_JAR

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
      # A fresh machine has no Cassandra jars yet: set up once (as bench/run.sh does).
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
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
trap 'if declare -F spark_stop >/dev/null; then spark_stop; fi; stop_server' EXIT

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

# ---- Spark: one client (bench/analytics_spark.py serve) per server, fed targets through a FIFO ----
# Each target ("table LAYOUT", "source LAYOUT" or "parquet DIR") ends with a {"done"} line in spark.out; the query lines
# go to RESULTS with the server's name. Bounded: a query over QUERY_LIMIT_S is cancelled by the client; a
# target without its "done" after 7 x QUERY_LIMIT_S + 300 s stops the client (recorded as failed).
SPARK_PID=""; SPARK_BROKEN=""
spark_start() {
  rm -f "$WORK/spark.in" "$WORK/spark.pid"; mkfifo "$WORK/spark.in"; : > "$WORK/spark.out"
  mkdir -p "$WORK/spark-local"
  "$SPARK_PY" "$ROOT/bench/analytics_spark.py" serve "$ADDR" --server-pid "$PID" --limit-s "$QUERY_LIMIT_S" \
    --driver-addr "$SPARK_ADDR" --driver-memory "$DRIVER_MEMORY" --local-dir "$WORK/spark-local" \
    --pid-file "$WORK/spark.pid" < "$WORK/spark.in" > "$WORK/spark.out" 2>> "$WORK/spark.err" &
  SPARK_PID=$!
  exec 7> "$WORK/spark.in"   # held open between targets: the client sees EOF only when it is closed
  log "$CURRENT: Spark client started (pid $SPARK_PID, driver on $SPARK_ADDR)"
}
spark_stop() {
  [ -n "$SPARK_PID" ] || return 0
  if kill -0 "$SPARK_PID" 2>/dev/null; then ( echo quit >&7 ) 2>/dev/null || true; fi
  exec 7>&-   # (a bare exec: its redirections are permanent, so nothing else on this line)
  local t0=$SECONDS
  while kill -0 "$SPARK_PID" 2>/dev/null && (( SECONDS - t0 < 60 )); do sleep 0.5; done
  kill -0 "$SPARK_PID" 2>/dev/null && kill -TERM "$SPARK_PID" 2>/dev/null
  wait "$SPARK_PID" 2>/dev/null || true
  kill_pidfile "$WORK/spark.pid"
  SPARK_PID=""
}
spark_target() {  # layout target-line (the layout names the records of a failure)
  [ "$SPARK" = 1 ] && [ -z "$SPARK_BROKEN" ] || return 0
  if [ -z "$SPARK_PID" ] || ! kill -0 "$SPARK_PID" 2>/dev/null; then
    SPARK_PID=""; spark_start
  fi
  local n0 t0=$SECONDS limit=$(( QUERY_LIMIT_S * 7 + 300 )) done=""
  n0=$(wc -l < "$WORK/spark.out")
  log "$CURRENT: Spark queries on $2"
  ( echo "$2" >&7 ) 2>/dev/null || true
  while (( SECONDS - t0 < limit )); do
    if tail -n +"$((n0 + 1))" "$WORK/spark.out" | grep -q '^{"done"'; then done=1; break; fi
    kill -0 "$SPARK_PID" 2>/dev/null || break
    sleep 1
  done
  tail -n +"$((n0 + 1))" "$WORK/spark.out" | grep '^{"spark_session"' \
    | sed "s/^{/{\"server\":\"$CURRENT\",\"layout\":\"all\",\"step\":\"spark_session\",/" >> "$RESULTS" || true
  tail -n +"$((n0 + 1))" "$WORK/spark.out" | grep '^{"engine"' \
    | sed "s/^{/{\"server\":\"$CURRENT\",\"step\":\"query\",/" >> "$RESULTS" || true
  if [ -z "$done" ]; then
    failed "$1" spark "no answer from the Spark client after $(( SECONDS - t0 )) s: $(tail -5 "$WORK/spark.err" 2>/dev/null)"
    # A client that never started a session is not restarted for this server's other targets.
    grep -q '"spark_session"' "$WORK/spark.out" || SPARK_BROKEN=1
    spark_stop
    return 1
  fi
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
    spark_target "$layout" "table $layout" || true
    if [ "$s" = helenus ] && [ "$layout" = columnar ] && [ -n "$HELENUS_SPARK_JAR" ]; then
      spark_target "$layout" "source $layout" || true
    fi
  done
  if [ "$s" = helenus ] && [[ " $LAYOUTS " == *" narrow "* ]] && parquet_export; then
    spark_target parquet "parquet $WORK/parquet" || true
  fi
  spark_stop; SPARK_BROKEN=""
  stop_server
done

VENV_PY="$HOME/.cache/helenus/bench-venv/bin/python"   # matplotlib (bench/lib.sh's make_report creates it)
"$VENV_PY" -c 'import matplotlib' 2>/dev/null || VENV_PY="$PY"
"$VENV_PY" "$ROOT/bench/analytics_report.py" "$RESULTS" "$OUT/$NAME" --label "${LABEL:-$COMMIT}" \
  --dataset "$DATASET" --loadavg "$LOADAVG_START" --rows "$ROWS" --cores 2   # scan rate per core: Spark local[2], DuckDB 2 threads, the 2-core test box
log "wrote $OUT/$NAME.json and .md"
rm -rf "$WORK"
