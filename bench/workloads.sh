#!/usr/bin/env bash
# The studies' other workloads, Helenus then Apache Cassandra 5.0 in the same run, same client
# (helenus-stress), same settings, each server on a fresh data dir and stopped (by its pid) before
# the next:
#   timeseries  WORKLOADS.md §2: `helenus-stress timeseries` (tlp-stress BasicTimeSeries: TWCS,
#               ts DESC, 80% inserts / 20% reads of a sensor's latest LIMIT rows, TS_THREADS in
#               flight on one connection) at fixed-rate steps TS_RATES of TS_STEP each; per step the
#               achieved vs requested rate and the average and max P99 per 1 s interval, reads and
#               writes apart.
#   logstore    WORKLOADS.md §3: `profile=widettl` (1,000 rows of ~16 KB per partition, ~16 MB,
#               default_time_to_live 8640), LOG_STAGES stages of steady inserts at LOG_RATE rows/s
#               (5% reads of the partition being written); after each stage: client-side latency
#               percentiles like `nodetool tablehistograms` (P50/P75/P95/P98/P99/max), then
#               flush, timed `nodetool compact` and `nodetool garbagecollect` of the table.
#   bench/workloads.sh [quick|full]      quick: ~5 min per server; full: ~25 min per server
# Writes bench/results/workloads-<date>-<commit>.{json,md} and -timeseries.png / -logstore.png.
# Env: SERVERS="helenus cassandra" PARTS="timeseries logstore" HEAP=1G NOISE_MAX_CORES=0.25
#      HELENUS_ADDR=127.0.0.146 CASS_ADDR=127.0.0.147 (Cassandra's JMX port follows the last octet)
#      TS_RATES TS_STEP TS_PARTITIONS TS_THREADS TS_POPULATE LOG_RATE LOG_STAGE_S LOG_STAGES LOG_THREADS
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
CACHE="${HOME}/.cache/helenus"
WORK="$CACHE/bench/workloads-$$"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
HELENUS="$TARGET_DIR/release/helenus"

case "$MODE" in
  quick) : "${TS_RATES:=1000,2000,4000}" "${TS_STEP:=15s}" "${TS_POPULATE:=20000}"
         : "${LOG_RATE:=300}" "${LOG_STAGE_S:=20}" ;;
  # Rates the 2-core machine can offer both servers; the studies' 25k-55k ran on 3 x 8 vCPU.
  full)  : "${TS_RATES:=2000,4000,6000,8000,10000}" "${TS_STEP:=60s}" "${TS_POPULATE:=200000}"
         : "${LOG_RATE:=500}" "${LOG_STAGE_S:=120}" ;;
  *) echo "usage: bench/workloads.sh [quick|full]" >&2; exit 2 ;;
esac
TS_PARTITIONS="${TS_PARTITIONS:-10000}"; TS_THREADS="${TS_THREADS:-400}"
LOG_STAGES="${LOG_STAGES:-3}"; LOG_THREADS="${LOG_THREADS:-32}"
HEAP="${HEAP:-1G}"; NOISE_MAX_CORES="${NOISE_MAX_CORES:-0.25}"
SERVERS="${SERVERS:-helenus cassandra}"; PARTS="${PARTS:-timeseries logstore}"
HELENUS_ADDR="${HELENUS_ADDR:-127.0.0.146}"; CASS_ADDR="${CASS_ADDR:-127.0.0.147}"
# Every stress run and every nodetool call is bounded.
STRESS_TIMEOUT="${STRESS_TIMEOUT:-1800}"; NODETOOL_TIMEOUT="${NODETOOL_TIMEOUT:-900}"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results/workloads-$DATE-$COMMIT"
mkdir -p "$WORK" "$ROOT/bench/results"
MANIFEST="$WORK/manifest.jsonl"; : > "$MANIFEST"   # one line per measured stress run (lib.sh)
ADMIN="$WORK/admin.jsonl"; : > "$ADMIN"            # one line per timed nodetool operation
ROWS=0   # lib.sh's pop_for is not used here
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
has_part() { [[ " $PARTS " == *" $1 "* ]]; }
now_ms() { date +%s%3N; }

if [ ! -x "$STRESS" ] || [ ! -x "$HELENUS" ]; then
  log "building helenus and helenus-stress (release)"
  (cd "$ROOT" && cargo build -q --release --bin helenus --bin helenus-stress)
fi

SERVER_PID=""; SERVER_ADDR=""; SERVER_DIR=""; CURRENT=""
start_server() {
  local s="$1"
  case "$s" in helenus) SERVER_ADDR="$HELENUS_ADDR" ;; cassandra) SERVER_ADDR="$CASS_ADDR" ;; *) return 1 ;; esac
  if port_open "$SERVER_ADDR" 9042; then log "$SERVER_ADDR:9042 is already in use by another process"; return 1; fi
  SERVER_DIR="$WORK/data-$s"; rm -rf "$SERVER_DIR"; mkdir -p "$SERVER_DIR"
  case "$s" in
    helenus)
      "$HELENUS" server --listen-address "$SERVER_ADDR" --native-transport-port 9042 --data-dir "$SERVER_DIR" \
        > "$WORK/helenus.log" 2>&1 &
      SERVER_PID=$!
      wait_port "$SERVER_ADDR" 9042 60 || { log "helenus did not open 9042; see $WORK/helenus.log"; return 1; } ;;
    cassandra)
      # shellcheck disable=SC1091
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
      HEAP="$HEAP" "$CASS/start.sh" "$SERVER_ADDR" 9042 "$SERVER_DIR" >&2 || return 1
      SERVER_PID="$(cat "$SERVER_DIR/cassandra.pid")" ;;
  esac
  SERVER_PIDS="$SERVER_PID"; CURRENT="$s"
  log "$s up on $SERVER_ADDR:9042 (pid $SERVER_PID)"
}
stop_server() {
  case "$CURRENT" in
    cassandra) "$CASS/stop.sh" "$SERVER_ADDR" "$SERVER_DIR" >&2 || true ;;
    helenus) if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
               kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
             fi ;;
  esac
  CURRENT=""; SERVER_PID=""
}
trap stop_server EXIT

nodetool() {  # args...: the current server's nodetool, bounded
  case "$CURRENT" in
    helenus) timeout -k 10 "$NODETOOL_TIMEOUT" "$HELENUS" nodetool -h "$SERVER_ADDR" "$@" ;;
    cassandra) timeout -k 10 "$NODETOOL_TIMEOUT" "$CASS/nodetool.sh" "$SERVER_ADDR" -- "$@" ;;
  esac
}
table_bytes() {  # keyspace table: bytes of the table's live files (no snapshots, no commitlog)
  local d; d="$(find "$SERVER_DIR" -maxdepth 4 -type d -path "*/$1/$2-*" 2>/dev/null | head -1)"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'
}
table_sstables() {  # keyspace table
  local d; d="$(find "$SERVER_DIR" -maxdepth 4 -type d -path "*/$1/$2-*" 2>/dev/null | head -1)"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -name '*Data.db' | wc -l
}
# One timed nodetool operation on keyspace1.wide_events, recorded with the nodetool client's own
# start-up (a JVM for Cassandra's, measured just before with `nodetool version`) so the report can
# show the net time; bytes and SSTables before/after.
timed_admin() {  # stage operation
  local stage="$1" op="$2" t0 ms rc=0 startup b0 f0 b1 f1
  t0=$(now_ms); nodetool version >/dev/null 2>&1 || true; startup=$(( $(now_ms) - t0 ))
  b0=$(table_bytes keyspace1 wide_events); f0=$(table_sstables keyspace1 wide_events)
  t0=$(now_ms); nodetool "$op" keyspace1 wide_events > "$WORK/$CURRENT-$stage-$op.log" 2>&1 || rc=$?
  ms=$(( $(now_ms) - t0 ))
  sleep 2   # Cassandra deletes obsolete files just after the transaction commits
  b1=$(table_bytes keyspace1 wide_events); f1=$(table_sstables keyspace1 wide_events)
  log "$CURRENT: stage $stage: nodetool $op ${ms} ms (client start-up ${startup} ms, exit $rc): $f0 sstables / $b0 B -> $f1 / $b1 B"
  printf '{"server":"%s","stage":%s,"op":"%s","ms":%d,"nodetool_startup_ms":%d,"exit_code":%d,"bytes_before":%s,"sstables_before":%s,"bytes_after":%s,"sstables_after":%s}\n' \
    "$CURRENT" "$stage" "$op" "$ms" "$startup" "$rc" "$b0" "$f0" "$b1" "$f1" >> "$ADMIN"
}

run_timeseries() {
  local s="$1"
  log "$s: timeseries rates=$TS_RATES step=$TS_STEP partitions=$TS_PARTITIONS in-flight=$TS_THREADS populate=$TS_POPULATE"
  measured "$s" timeseries steps "$WORK/$s-timeseries.json" timeseries rates="$TS_RATES" step_duration="$TS_STEP" \
    partitions="$TS_PARTITIONS" populate="$TS_POPULATE" quiet -rate threads="$TS_THREADS" -node "$SERVER_ADDR"
}

run_logstore() {
  local s="$1" k ops first last
  ops=$(( LOG_RATE * LOG_STAGE_S ))
  for k in $(seq 1 "$LOG_STAGES"); do
    first=$(( (k - 1) * ops + 1 )); last=$(( k * ops ))
    log "$s: logstore stage $k: $ops ops at $LOG_RATE/s (keys $first..$last)"
    # SEQ keys: rows fill partition after partition (key / 1000); the 5% reads hit the partition
    # being written, as a log viewer tails the newest events.
    measured "$s" logstore "stage$k" "$WORK/$s-logstore-$k.json" mixed profile=widettl "ratio(insert=19,select=1)" \
      n="$ops" cl=ONE quiet -pop seq="$first..$last" -rate threads="$LOG_THREADS" fixed="$LOG_RATE/s" -node "$SERVER_ADDR"
    # The servers' own view too (kept raw in the JSON; the .md shows the client side for both).
    nodetool tablehistograms keyspace1 wide_events > "$WORK/$s-tablehistograms-$k.txt" 2>&1 || true
    nodetool flush keyspace1 wide_events >/dev/null 2>&1 || log "$s: flush failed"
    timed_admin "$k" compact
    timed_admin "$k" garbagecollect
  done
}

log "mode=$MODE servers=[$SERVERS] parts=[$PARTS] heap=$HEAP loadavg=$(cut -d' ' -f1-3 /proc/loadavg) (2 cores shared with other work: a busy machine)"
LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
RAN=""
for s in $SERVERS; do
  if [ "$s" = helenus ] && [ ! -x "$HELENUS" ]; then log "skipping helenus: $HELENUS not built"; continue; fi
  start_server "$s" || { log "cannot start $s, skipped"; stop_server; continue; }
  RAN="$RAN $s"
  has_part timeseries && run_timeseries "$s"
  has_part logstore && run_logstore "$s"
  echo "{\"server\":\"$s\",\"op\":\"rss\",\"rss_mib\":$(rss_mib "$SERVER_PID")}" >> "$ADMIN"
  stop_server
done
[ -n "$RAN" ] || { log "no server ran"; exit 1; }

venv="$HOME/.cache/helenus/bench-venv"; py="$venv/bin/python"
if [ ! -x "$py" ] || ! "$py" -c 'import matplotlib' 2>/dev/null; then
  log "creating $venv (matplotlib)"
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib >&2; } || { log "matplotlib unavailable: report without PNGs"; py=python3; }
fi
"$py" "$ROOT/bench/workloads_report.py" --manifest "$MANIFEST" --admin "$ADMIN" --out "$OUT" --mode "$MODE" --commit "$COMMIT" \
  --settings "ts_rates=$TS_RATES ts_step=$TS_STEP ts_partitions=$TS_PARTITIONS ts_in_flight=$TS_THREADS ts_populate=$TS_POPULATE log_rate=$LOG_RATE/s log_stage=${LOG_STAGE_S}s log_stages=$LOG_STAGES log_in_flight=$LOG_THREADS heap=$HEAP cores=$(nproc) loadavg_before=[$LOADAVG_BEFORE] loadavg_after=[$(cut -d' ' -f1-3 /proc/loadavg)]"
log "results: $OUT.{json,md} (raw: $WORK)"
