#!/usr/bin/env bash
# Scans through Apache Spark 3.5 and the DataStax Spark Cassandra Connector 3.5.1 (a tool nobody on the
# project wrote), Helenus beside Apache Cassandra 5.0.9 in the same run, on the same data:
#   bench/spark.sh                 # quick (the default): 200k rows, each query twice (25 min at load ~10 on 2 cores)
#   ROWS=20000 bench/spark.sh      # a smoke test
# Installs, idempotently: pyspark 3.5 in a venv at ~/.cache/helenus/spark-venv (PyPI) and the connector with
# its dependencies through spark.jars.packages into ~/.cache/helenus/spark-ivy (Maven Central).
# Per server, on a fresh data dir: load bench_spark.events (ROWS GDELT-shaped rows of 61 columns in
# PARTITIONS partitions clustered by globaleventid, issue 16's table) and bench_spark.events_single (the same
# rows one per partition) with bench/spark_bench.py (Python driver, prepared statements, concurrency), flush,
# then time in one Spark session (local[2], driver 2g): df.count(), a filter on a non-key column, groupBy/avg,
# an RDD scan through Python workers and an all-column hash, each RUNS times. The answers (counts, sums,
# group averages, xxhash64 sum of every column) must be identical on both servers, else the script exits 1.
# Writes bench/results/spark-<date>-<commit>.json and .md.
# Env: ROWS (200000), PARTITIONS (350), RUNS (2), SERVERS ("helenus cassandra"), QUERIES (all), TABLES
#      ("events,events_single"), HEL_ADDR (127.0.0.170), CASS_ADDR (127.0.0.171), SPARK_ADDR (127.0.0.172,
#      the Spark driver's bind address), HEAP (Cassandra heap, 1G), DRIVER_MEMORY (2g), HELENUS (binary),
#      PY (python with cassandra-driver, ~/.cache/helenus/venv/bin/python), QUERY_LIMIT_S (1200 per server),
#      LABEL (names the results instead of the commit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/bench/lib.sh"   # spark_install, kill_pidfile
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HELENUS="${HELENUS:-$TARGET_DIR/release/helenus}"
PY="${PY:-$HOME/.cache/helenus/venv/bin/python}"
SPARK_VENV="${SPARK_VENV:-$HOME/.cache/helenus/spark-venv}"
ROWS="${ROWS:-200000}"; PARTITIONS="${PARTITIONS:-350}"; RUNS="${RUNS:-2}"
SERVERS="${SERVERS:-helenus cassandra}"; HEAP="${HEAP:-1G}"; DRIVER_MEMORY="${DRIVER_MEMORY:-2g}"
QUERIES="${QUERIES:-}"; TABLES="${TABLES:-events,events_single}"; QUERY_LIMIT_S="${QUERY_LIMIT_S:-1200}"
HEL_ADDR="${HEL_ADDR:-127.0.0.170}"; CASS_ADDR="${CASS_ADDR:-127.0.0.171}"; SPARK_ADDR="${SPARK_ADDR:-127.0.0.172}"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
WORK="${HOME}/.cache/helenus/bench/spark-$$"
OUT="$ROOT/bench/results"; NAME="spark-$DATE-${LABEL:-$COMMIT}"
mkdir -p "$WORK" "$OUT"
log() { echo "[spark-bench $(date -u +%T)] $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$1" "$2" && return 0; sleep 1; done; return 1; }

# --- installs (idempotent): pyspark (bench/lib.sh), the connector on the session's first start
spark_install || { log "pyspark 3.5 could not be installed into $SPARK_VENV"; exit 1; }
if [ ! -x "$HELENUS" ]; then
  log "building helenus (release)"
  (cd "$ROOT" && cargo build -q --release --bin helenus)
fi

HPID=""; CASS_UP=""
kill_spark() { kill_pidfile "$WORK/$1-spark.pid"; }  # the Spark driver JVM (backstop)
cleanup() {
  for s in $SERVERS; do kill_spark "$s"; done
  if [ -n "$HPID" ] && kill -0 "$HPID" 2>/dev/null; then kill -TERM "$HPID"; wait "$HPID" 2>/dev/null || true; fi
  if [ -n "$CASS_UP" ]; then "$CASS/stop.sh" "$CASS_ADDR" "$WORK/cassandra" >&2 || true; fi
}
trap cleanup EXIT

for a in "$HEL_ADDR" "$CASS_ADDR"; do
  if port_open "$a" 9042; then log "$a:9042 is taken by another process: refusing to measure it"; exit 1; fi
done

log "generating $ROWS GDELT-shaped rows"
"$PY" "$ROOT/bench/spark_bench.py" gen "$WORK/rows.pkl" --rows "$ROWS" > "$WORK/gen.json"

run_server() {  # server addr flush-command
  local s=$1 addr=$2
  log "$s: load ($ROWS rows x 2 tables)"
  timeout -k 10 1800 "$PY" "$ROOT/bench/spark_bench.py" load "$addr" "$WORK/rows.pkl" \
    --partitions "$PARTITIONS" > "$WORK/$s-load.jsonl"
  log "$s: flush"
  timeout -k 10 600 $3 >&2
  sleep 2
  echo "\"${s}_uptime_before\": \"$(uptime | sed 's/^ *//')\"," >> "$WORK/meta.part"
  log "$s: Spark queries ($(uptime | sed 's/.*load/load/'))"
  mkdir -p "$WORK/$s-spark-local"
  # No `set -e` abort on a failed Spark run: the report records what was measured.
  timeout -k 20 "$QUERY_LIMIT_S" "$SPARK_VENV/bin/python" "$ROOT/bench/spark_bench.py" query "$addr" \
    --runs "$RUNS" --tables "$TABLES" --queries "$QUERIES" --driver-memory "$DRIVER_MEMORY" \
    --driver-addr "$SPARK_ADDR" --local-dir "$WORK/$s-spark-local" --pid-file "$WORK/$s-spark.pid" \
    > "$WORK/$s-query.jsonl" 2> "$WORK/$s-spark.log" || log "$s: Spark exited with $? (see $WORK/$s-spark.log)"
  kill_spark "$s"
  echo "\"${s}_uptime_after\": \"$(uptime | sed 's/^ *//')\"," >> "$WORK/meta.part"
  grep -h '"query"' "$WORK/$s-query.jsonl" | cut -c1-160 >&2 || true
}

for s in $SERVERS; do
  case "$s" in
    helenus)
      mkdir -p "$WORK/helenus"
      "$HELENUS" server --listen-address "$HEL_ADDR" --native-transport-port 9042 \
        --data-dir "$WORK/helenus" > "$WORK/helenus.log" 2>&1 &
      HPID=$!
      wait_port "$HEL_ADDR" 9042 60 || { log "helenus did not start"; exit 1; }
      run_server helenus "$HEL_ADDR" "$HELENUS nodetool -h $HEL_ADDR flush bench_spark"
      kill -TERM "$HPID"; wait "$HPID" 2>/dev/null || true; HPID="" ;;
    cassandra)
      CASS_UP=1
      HEAP="$HEAP" "$CASS/start.sh" "$CASS_ADDR" 9042 "$WORK/cassandra" >&2
      run_server cassandra "$CASS_ADDR" "$CASS/nodetool.sh $CASS_ADDR -- flush bench_spark"
      "$CASS/stop.sh" "$CASS_ADDR" "$WORK/cassandra" >&2 || true; CASS_UP="" ;;
    *) log "unknown server $s"; exit 2 ;;
  esac
done

{ echo "{"; cat "$WORK/meta.part"
  echo "\"date\": \"$DATE\", \"rows\": $ROWS, \"partitions\": $PARTITIONS, \"runs\": $RUNS,"
  echo "\"spark\": \"$SPARK_VERSION\", \"driver_memory\": \"$DRIVER_MEMORY\", \"heap\": \"$HEAP\","
  echo "\"loadavg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"; } > "$WORK/meta.json"
rc=0
"$PY" "$ROOT/bench/spark_bench.py" report "$WORK" "$OUT/$NAME" "${LABEL:-$COMMIT}" $SERVERS || rc=$?
log "wrote $OUT/$NAME.json and .md"
if [ "$rc" -ne 0 ]; then
  log "the servers' answers differ (or a query failed): logs kept in $WORK"
  exit "$rc"
fi
rm -rf "$WORK"
