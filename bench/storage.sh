#!/usr/bin/env bash
# Storage benchmark, Helenus beside Apache Cassandra 5.0 in the same run, on the same data and client:
#   bench/storage.sh [quick|full]
# Parts (PARTS_TO_RUN, default "standard1 reads wide gdelt"; run in this order on each server, one
# server after the other, each on a fresh data dir):
#   standard1  load N rows of cassandra-stress `standard1` with helenus-stress in PARTS runs of consecutive
#              keys, each followed by a flush (PARTS SSTables, below SizeTiered's min_threshold of 4: no
#              background compaction); time `nodetool compact keyspace1 standard1`; on-disk size before/after.
#   reads      (needs standard1's data: loads it when standard1 is not in PARTS_TO_RUN) restart the server on
#              the same data dir after dropping the OS page cache (`echo 1 > /proc/sys/vm/drop_caches`, recorded
#              whether it worked), then `helenus-stress read duration=READ_DURATION -pop dist=UNIFORM(1..N)
#              -rate threads=THREADS` twice: "cold" (right after the restart) and "warm" (the same again).
#   wide       bench_wide.t (pk int, ck int, v text, PRIMARY KEY ((pk), ck)): WIDE_PARTITIONS x WIDE_ROWS rows of
#              100-byte values loaded by bench/storage_client.py in PARTS clustering ranges, each flushed, major-compacted; then slices with
#              random starting points for SLICE_DURATION each: `WHERE pk = ? AND ck >= ? LIMIT 100` and
#              `WHERE pk = ? AND ck >= ? AND ck < ?+100` (32 requests in flight, Python driver).
#   gdelt      GDELT_ROWS GDELT 1.0-shaped events (57 columns, one row per partition, seeded generator in
#              storage_client.py) loaded with prepared INSERTs in PARTS ranges, each flushed, major-compacted; ingest rate and
#              on-disk bytes.
#   gdelt_memtable  (not in the default PARTS_TO_RUN) restarts the server on a fresh data dir and loads
#              GDELT_MEM_ROWS (400000) GDELT-shaped rows with no flush asked for (the server's default memtable
#              budget decides): peak RSS (VmHWM) and RSS after the load, Helenus vs Cassandra (HEAP).
# Writes bench/results/storage-<date>-<commit>.json and .md: a section per part, each metric with the
# Helenus and Cassandra values and the Helenus/Cassandra ratio. A failed part is recorded as failed (with
# the reason) and the other parts go on.
# Env: N (rows of standard1), PARTS (3), THREADS (32), HEAP (Cassandra heap, 1G), SERVERS ("helenus cassandra"),
#      THROUGHPUT (compaction_throughput MiB/s on both servers; 0 = unthrottled, the default here),
#      HEL_ADDR (127.0.0.32), CASS_ADDR (127.0.0.31), SETTLE_MAX (seconds to wait for compactions),
#      PARTS_TO_RUN, READ_DURATION (20), WIDE_PARTITIONS (20), WIDE_ROWS, SLICE_DURATION, GDELT_ROWS (200000),
#      GDELT_MEM_ROWS (400000), HEL_MEMTABLE_SPACE (Helenus's memtable_heap_space, e.g. 256MiB = Cassandra's
#      heap/4 default at HEAP=1G; empty = the server default, 1024MiB),
#      PY (python with cassandra-driver, default ~/.cache/helenus/venv/bin/python).
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
HELENUS="$TARGET_DIR/release/helenus"
CLIENT="$ROOT/bench/storage_client.py"
PY="${PY:-$HOME/.cache/helenus/venv/bin/python}"
case "$MODE" in
  quick) : "${N:=100000}"; : "${SETTLE_MAX:=120}"; : "${WIDE_ROWS:=10000}"; : "${SLICE_DURATION:=15}" ;;
  full)  : "${N:=1000000}"; : "${SETTLE_MAX:=600}"; : "${WIDE_ROWS:=50000}"; : "${SLICE_DURATION:=30}" ;;
  *) echo "usage: bench/storage.sh [quick|full]" >&2; exit 2 ;;
esac
THREADS="${THREADS:-32}"; HEAP="${HEAP:-1G}"; PARTS="${PARTS:-3}"
READ_DURATION="${READ_DURATION:-20}"; WIDE_PARTITIONS="${WIDE_PARTITIONS:-20}"; GDELT_ROWS="${GDELT_ROWS:-200000}"
GDELT_MEM_ROWS="${GDELT_MEM_ROWS:-400000}"
PARTS_TO_RUN="${PARTS_TO_RUN:-standard1 reads wide gdelt}"
# compaction_throughput in MiB/s for both servers; 0 (the default here) lifts the cap on both, so
# the time of `nodetool compact` measures the engines and not the 64 MiB/s default throttle.
THROUGHPUT="${THROUGHPUT:-0}"
SERVERS="${SERVERS:-helenus cassandra}"
# Loopback addresses reserved for this benchmark (Cassandra's JMX port is 7099 + 100 x last octet).
HEL_ADDR="${HEL_ADDR:-127.0.0.32}"; CASS_ADDR="${CASS_ADDR:-127.0.0.31}"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
WORK="${HOME}/.cache/helenus/bench/storage-$$"
OUT="$ROOT/bench/results"; NAME="storage-$DATE-$COMMIT"
mkdir -p "$WORK" "$OUT"
RESULTS="$WORK/results.jsonl"; : > "$RESULTS"
LOADAVG_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log() { echo "[storage-bench $(date -u +%T)] $*" >&2; }
has_part() { [[ " $PARTS_TO_RUN " == *" $1 "* ]]; }

if [ ! -x "$STRESS" ] || [ ! -x "$HELENUS" ]; then
  log "building helenus and helenus-stress (release)"
  (cd "$ROOT" && cargo build -q --release -p helenus-cli -p helenus-tools)
fi

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$1" "$2" && return 0; sleep 1; done; return 1; }
now_ms() { date +%s%3N; }
table_dir() {  # data-root keyspace table
  find "$1" -maxdepth 4 -type d -path "*/$2/$3-*" 2>/dev/null | head -1
}
# Bytes of the table's live files (no snapshots, no commitlog).
table_bytes() {  # data-root [keyspace table]
  local d; d="$(table_dir "$1" "${2:-keyspace1}" "${3:-standard1}")"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'
}
table_files() {  # data-root [keyspace table]: number of Data.db files (SSTables)
  local d; d="$(table_dir "$1" "${2:-keyspace1}" "${3:-standard1}")"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -name '*Data.db' | wc -l
}
# One JSON line per (part, server): {"part", "server", ...} or {"part", "server", "failed": reason}.
record() {  # part server json-object-body (without braces)
  printf '{"part":"%s","server":"%s",%s}\n' "$1" "$2" "$3" >> "$RESULTS"
}
fail() {  # part server reason
  local reason; reason="$(printf '%s' "$3" | tr -d '"\\' | tr '\n' ' ')"
  log "$2: part $1 FAILED: $3"
  record "$1" "$2" "\"failed\":\"$reason\""
}

PID=""; ADDR=""; DIR=""; CURRENT=""
start() {  # server [keep]  (keep: reuse the data dir of the previous start)
  local s="$1" keep="${2:-}"
  DIR="$WORK/data-$s"
  [ -n "$keep" ] || { rm -rf "$DIR"; mkdir -p "$DIR"; }
  case "$s" in
    helenus)
      ADDR="$HEL_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      local mem=(); [ -z "${HEL_MEMTABLE_SPACE:-}" ] || mem=(--set memtable_heap_space="$HEL_MEMTABLE_SPACE")
      "$HELENUS" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$DIR" \
        --set compaction_throughput_mb_per_sec="$THROUGHPUT" "${mem[@]}" >> "$WORK/helenus.log" 2>&1 &
      PID=$!
      wait_port "$ADDR" 9042 120 || { log "helenus did not start; see $WORK/helenus.log"; return 1; } ;;
    cassandra)
      ADDR="$CASS_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      # shellcheck disable=SC1091
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
      HEAP="$HEAP" "$CASS/start.sh" "$ADDR" 9042 "$DIR" >&2 || return 1
      PID="$(cat "$DIR/cassandra.pid")"
      "$CASS/nodetool.sh" "$ADDR" -- setcompactionthroughput "$THROUGHPUT" >/dev/null 2>&1 || true ;;
  esac
  CURRENT="$s"
  log "$s up on $ADDR:9042 (pid $PID)"
}
stop() {
  case "$CURRENT" in
    helenus) if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
               kill -TERM "$PID"
               local t0=$SECONDS
               while kill -0 "$PID" 2>/dev/null && (( SECONDS - t0 < 60 )); do sleep 0.2; done
               kill -0 "$PID" 2>/dev/null && kill -KILL "$PID"
               wait "$PID" 2>/dev/null || true
             fi ;;
    cassandra) "$CASS/stop.sh" "$ADDR" "$DIR" >&2 || true ;;
  esac
  CURRENT=""; PID=""
}
trap stop EXIT
alive() { [ -n "$CURRENT" ] && [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null && port_open "$ADDR" 9042; }

nodetool() {  # server args...
  local s="$1"; shift
  case "$s" in
    helenus) timeout 900 "$HELENUS" nodetool -h "$ADDR" "$@" ;;
    cassandra) timeout 900 "$CASS/nodetool.sh" "$ADDR" -- "$@" ;;
  esac
}
settle() {  # waits until no compaction is pending (bounded)
  local s="$1" t0=$SECONDS p
  while (( SECONDS - t0 < SETTLE_MAX )); do
    p="$(nodetool "$s" compactionstats 2>/dev/null | awk '/pending tasks/{print $3}')"
    [ "${p:-0}" = 0 ] && return 0; sleep 2
  done
  log "$s: compactions still pending after ${SETTLE_MAX}s"
}
# Waits (bounded) until the server process is idle: work a flush leaves behind (Helenus frees the
# flushed memtable on a thread of its own; Cassandra's GC and bookkeeping) would otherwise run
# during the timed compaction. Both servers get the same treatment.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
settle_cpu() {
  local t0=$SECONDS a b hz; hz=$(getconf CLK_TCK)
  while (( SECONDS - t0 < ${IDLE_MAX:-30} )); do
    a=$(cpu_ticks "$PID"); sleep 1; b=$(cpu_ticks "$PID")
    # Under 5% of one core over the last second.
    (( (b - a) * 100 < hz * 5 )) && return 0
  done
  log "$CURRENT: still busy after ${IDLE_MAX:-30}s; timing the compaction anyway"
}
# The nodetool client's own start-up (a JVM for Cassandra's) is timed apart and subtracted from compact times.
nodetool_startup_ms() {
  local t0; t0=$(now_ms); nodetool "$1" version >/dev/null 2>&1 || true; echo $(( $(now_ms) - t0 ))
}
# Flush, settle, major compaction of KS.TABLE; sets FC_* (bytes and sstables before/after, times).
flush_compact() {  # server keyspace table
  local s="$1" ks="$2" t="$3" t0
  t0=$(now_ms); nodetool "$s" flush "$ks" "$t" >/dev/null || return 1; FC_FLUSH_MS=$(( $(now_ms) - t0 ))
  settle "$s"
  settle_cpu
  FC_PRE_BYTES=$(table_bytes "$DIR" "$ks" "$t"); FC_PRE_SSTABLES=$(table_files "$DIR" "$ks" "$t")
  FC_NODETOOL_MS=$(nodetool_startup_ms "$s")
  local logf="$DIR/logs/system.log" loglines=0
  [ -f "$logf" ] && loglines=$(wc -l < "$logf")
  t0=$(now_ms); nodetool "$s" compact "$ks" "$t" >/dev/null || return 1; FC_COMPACT_MS=$(( $(now_ms) - t0 ))
  FC_COMPACT_NET_MS=$(( FC_COMPACT_MS > FC_NODETOOL_MS ? FC_COMPACT_MS - FC_NODETOOL_MS : 0 ))
  # The compaction's own duration: Cassandra logs it ("Compacted (id) 3 sstables to [...] ... in 4,424ms");
  # Helenus's nodetool is a native client of a few ms, so its compact_net_ms is the server time.
  FC_SERVER_MS=null
  case "$s" in
    helenus) FC_SERVER_MS=$FC_COMPACT_NET_MS ;;
    cassandra) if [ -f "$logf" ]; then
                 FC_SERVER_MS="$(tail -n +"$(( loglines + 1 ))" "$logf" | grep "Compacted (" | grep "/$ks/$t-" | tail -1 \
                   | sed -nE 's/.* in ([0-9,]+)ms\..*/\1/p' | tr -d ,)"
                 [ -n "$FC_SERVER_MS" ] || FC_SERVER_MS=null
               fi ;;
  esac
  settle "$s"
  sleep 2  # Cassandra deletes obsolete files just after the transaction commits
  FC_POST_BYTES=$(table_bytes "$DIR" "$ks" "$t"); FC_POST_SSTABLES=$(table_files "$DIR" "$ks" "$t")
  log "$s: $ks.$t: $FC_PRE_SSTABLES sstables, $FC_PRE_BYTES bytes -> major compaction ${FC_COMPACT_MS} ms -> $FC_POST_SSTABLES sstables, $FC_POST_BYTES bytes"
}
fc_json() {
  printf '"compact_server_ms":%s,"flush_ms":%s,"nodetool_startup_ms":%s,"compact_ms":%s,"compact_net_ms":%s,"pre_compact_bytes":%s,"pre_compact_sstables":%s,"post_compact_bytes":%s,"post_compact_sstables":%s' \
    "$FC_SERVER_MS" "$FC_FLUSH_MS" "$FC_NODETOOL_MS" "$FC_COMPACT_MS" "$FC_COMPACT_NET_MS" "$FC_PRE_BYTES" "$FC_PRE_SSTABLES" "$FC_POST_BYTES" "$FC_POST_SSTABLES"
}

# --- part: standard1 (load, flush per part, major compaction, on-disk size) -----------------------------
part_standard1() {
  local s="$1" load_ms=0 flush_ms=0 per=$(( N / PARTS )) part lo hi t0
  log "$s: loading $N rows in $PARTS parts (threads=$THREADS)"
  for part in $(seq 1 "$PARTS"); do
    lo=$(( (part - 1) * per + 1 )); hi=$(( part == PARTS ? N : part * per ))
    t0=$(now_ms)
    timeout 3600 "$STRESS" write n=$(( hi - lo + 1 )) no-warmup -pop seq="$lo..$hi" -node "$ADDR" -rate threads="$THREADS" \
      -json "$WORK/$s-load-$part.json" > "$WORK/$s-load-$part.log" 2>&1 \
      || { why "helenus-stress write exited non-zero (see $WORK/$s-load-$part.log)"; return 1; }
    load_ms=$(( load_ms + $(now_ms) - t0 ))
    t0=$(now_ms); nodetool "$s" flush keyspace1 standard1 >/dev/null || { why "flush failed"; return 1; }
    flush_ms=$(( flush_ms + $(now_ms) - t0 ))
  done
  settle "$s"
  flush_compact "$s" keyspace1 standard1 || { why "flush/compact failed"; return 1; }
  local rss_kb; rss_kb=$(awk '/VmHWM/{print $2}' "/proc/$PID/status" 2>/dev/null || echo 0)
  # FC_FLUSH_MS is a no-op flush here (everything was flushed per part): the load's flushes are flush_ms.
  FC_FLUSH_MS=$flush_ms
  record standard1 "$s" "\"rows\":$N,\"load_ms\":$load_ms,\"peak_rss_kb\":${rss_kb:-0},$(fc_json)"
}

# --- part: point reads, cold (just restarted, page cache dropped) and warm ------------------------------
cached_kb() { awk '/^Cached:/{print $2}' /proc/meminfo; }
part_reads() {
  local s="$1" t0 restart_ms before after dropped=false
  log "$s: restarting on the same data for cold reads"
  stop
  before=$(cached_kb)
  if sync && (echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null; then dropped=true; fi
  after=$(cached_kb)
  log "$s: drop_caches write ok=$dropped, page cache ${before} kB -> ${after} kB"
  t0=$(now_ms)
  start "$s" keep || { why "restart failed"; return 1; }
  restart_ms=$(( $(now_ms) - t0 ))
  local run
  for run in cold warm; do
    timeout $(( READ_DURATION + 120 )) "$STRESS" read duration="${READ_DURATION}s" no-warmup -pop dist="UNIFORM(1..$N)" \
      -node "$ADDR" -rate threads="$THREADS" -json "$WORK/$s-read-$run.json" > "$WORK/$s-read-$run.log" 2>&1 \
      || { why "helenus-stress read ($run) exited non-zero (see $WORK/$s-read-$run.log)"; return 1; }
    log "$s: $run reads: $(jq -c '.total | {rate_per_s, latency_p50_ms, latency_p99_ms, errors}' "$WORK/$s-read-$run.json")"
  done
  record reads "$s" "$(printf '"rows":%s,"duration_s":%s,"threads":%s,"restart_ms":%s,"drop_caches_write_ok":%s,"page_cache_kb_before_drop":%s,"page_cache_kb_after_drop":%s,"cold":%s,"warm":%s' \
    "$N" "$READ_DURATION" "$THREADS" "$restart_ms" "$dropped" "${before:-null}" "${after:-null}" \
    "$(jq -c '.total' "$WORK/$s-read-cold.json")" "$(jq -c '.total' "$WORK/$s-read-warm.json")")"
}

# --- part: wide partitions, slices ----------------------------------------------------------------------
# Sums the per-part load outputs (one JSON line each) of FILE into one object.
sum_loads() { jq -cs '{rows: (map(.rows) | add), load_s: (map(.load_s) | add), errors: (map(.errors) | add),
  first_error: (map(.first_error) | map(select(. != null)) | first), client_cpu_s: (map(.client_cpu_s) | add),
  parts: length} | .rows_per_s = (if .load_s > 0 then .rows / .load_s else null end)' "$1"; }
part_wide() {
  local s="$1" load q part t0 flush_ms=0 per=$(( WIDE_ROWS / PARTS ))
  log "$s: loading $WIDE_PARTITIONS x $WIDE_ROWS rows into bench_wide.t in $PARTS parts (clustering ranges)"
  : > "$WORK/$s-wide-load.jsonl"
  for part in $(seq 1 "$PARTS"); do
    timeout 3600 "$PY" "$CLIENT" wide-load "$ADDR" --partitions "$WIDE_PARTITIONS" --rows "$WIDE_ROWS" \
      --ck-from $(( (part - 1) * per )) --ck-to $(( part == PARTS ? WIDE_ROWS : part * per )) \
      >> "$WORK/$s-wide-load.jsonl" 2>"$WORK/$s-wide-load.err" \
      || { why "wide-load failed: $(tail -3 "$WORK/$s-wide-load.err")"; return 1; }
    t0=$(now_ms); nodetool "$s" flush bench_wide t >/dev/null || { why "flush failed"; return 1; }
    flush_ms=$(( flush_ms + $(now_ms) - t0 ))
  done
  load="$(sum_loads "$WORK/$s-wide-load.jsonl")"
  log "$s: wide load: $load"
  flush_compact "$s" bench_wide t || { why "flush/compact failed"; return 1; }
  FC_FLUSH_MS=$flush_ms
  # A short unrecorded warm-up (same for both servers), then each slice query for SLICE_DURATION.
  timeout 120 "$PY" "$CLIENT" wide-slice "$ADDR" --partitions "$WIDE_PARTITIONS" --rows "$WIDE_ROWS" --query limit \
    --duration 5 > "$WORK/$s-wide-warmup.json" 2>&1 || true
  for q in limit range; do
    timeout $(( SLICE_DURATION + 180 )) "$PY" "$CLIENT" wide-slice "$ADDR" --partitions "$WIDE_PARTITIONS" --rows "$WIDE_ROWS" \
      --query "$q" --duration "$SLICE_DURATION" > "$WORK/$s-wide-$q.json" 2>"$WORK/$s-wide-$q.err" \
      || { why "wide-slice $q failed: $(tail -3 "$WORK/$s-wide-$q.err")"; return 1; }
    log "$s: slices ($q): $(cat "$WORK/$s-wide-$q.json")"
  done
  record wide "$s" "\"load\":$load,$(fc_json),\"slice_limit\":$(cat "$WORK/$s-wide-limit.json"),\"slice_range\":$(cat "$WORK/$s-wide-range.json")"
}

# --- part: GDELT-shaped events, on-disk size after major compaction -------------------------------------
GDELT_FILE="$WORK/gdelt-$GDELT_ROWS.pkl"; GDELT_GEN=""
part_gdelt() {
  local s="$1" load part t0 flush_ms=0
  [ -n "$GDELT_GEN" ] || { why "the GDELT generator failed"; return 1; }
  log "$s: loading $GDELT_ROWS GDELT-shaped rows into bench_gdelt.events in $PARTS parts"
  : > "$WORK/$s-gdelt-load.jsonl"
  for part in $(seq 1 "$PARTS"); do
    timeout 3600 "$PY" "$CLIENT" gdelt-load "$ADDR" "$GDELT_FILE" --part "$part" --parts "$PARTS" \
      >> "$WORK/$s-gdelt-load.jsonl" 2>"$WORK/$s-gdelt-load.err" \
      || { why "gdelt-load failed: $(tail -3 "$WORK/$s-gdelt-load.err")"; return 1; }
    t0=$(now_ms); nodetool "$s" flush bench_gdelt events >/dev/null || { why "flush failed"; return 1; }
    flush_ms=$(( flush_ms + $(now_ms) - t0 ))
  done
  load="$(sum_loads "$WORK/$s-gdelt-load.jsonl")"
  log "$s: gdelt load: $load"
  flush_compact "$s" bench_gdelt events || { why "flush/compact failed"; return 1; }
  FC_FLUSH_MS=$flush_ms
  local rss_kb; rss_kb=$(awk '/VmHWM/{print $2}' "/proc/$PID/status" 2>/dev/null || echo 0)
  record gdelt "$s" "\"load\":$load,\"data_set\":$GDELT_GEN,\"peak_rss_kb\":${rss_kb:-0},$(fc_json)"
}

# --- part: GDELT-shaped rows held in memtables: the server's memory --------------------------------------
GDELT_MEM_FILE="$WORK/gdelt-mem-$GDELT_MEM_ROWS.pkl"; GDELT_MEM_GEN=""
part_gdelt_memtable() {
  local s="$1" load peak after
  [ -n "$GDELT_MEM_GEN" ] || { why "the GDELT generator failed"; return 1; }
  # A fresh process, so VmHWM is this load's peak and not an earlier part's.
  stop; start "$s" || { why "restart failed"; return 1; }
  log "$s: loading $GDELT_MEM_ROWS GDELT-shaped rows with no flush asked for"
  load="$(timeout 3600 "$PY" "$CLIENT" gdelt-load "$ADDR" "$GDELT_MEM_FILE" 2>"$WORK/$s-gdelt-mem.err")" \
    || { why "gdelt-load failed: $(tail -3 "$WORK/$s-gdelt-mem.err")"; return 1; }
  sleep 5  # let a flush the load started finish and its memtable be freed
  peak=$(awk '/VmHWM/{print $2}' "/proc/$PID/status" 2>/dev/null || echo 0)
  after=$(awk '/VmRSS/{print $2}' "/proc/$PID/status" 2>/dev/null || echo 0)
  log "$s: gdelt memtable load: $load, peak RSS ${peak} kB, after ${after} kB"
  record gdelt_memtable "$s" "\"load\":$load,\"data_set\":$GDELT_MEM_GEN,\"peak_rss_kb\":${peak:-0},\"rss_after_load_kb\":${after:-0}"
}

# Part functions run in this shell (they may restart the server): on failure they set FAIL_REASON and return 1.
FAIL_REASON=""
why() { FAIL_REASON="$*"; }
run_part() {  # part server
  local p="$1" s="$2"
  if ! alive; then
    log "$s is not running before part $p: restarting it on the same data"
    stop; start "$s" keep || { fail "$p" "$s" "server not running and could not be restarted"; return; }
  fi
  log "$s: part $p"
  FAIL_REASON=""
  if ! "part_$p" "$s"; then fail "$p" "$s" "${FAIL_REASON:-unknown error}"; fi
}

if has_part gdelt; then
  log "generating $GDELT_ROWS GDELT-shaped rows (seeded)"
  GDELT_GEN="$(timeout 1800 "$PY" "$CLIENT" gdelt-gen "$GDELT_FILE" --rows "$GDELT_ROWS" 2>"$WORK/gdelt-gen.err")" \
    || { GDELT_GEN=""; log "GDELT generator failed: $(tail -3 "$WORK/gdelt-gen.err")"; }
  log "GDELT data set: $GDELT_GEN"
fi
if has_part gdelt_memtable; then
  log "generating $GDELT_MEM_ROWS GDELT-shaped rows (seeded) for gdelt_memtable"
  GDELT_MEM_GEN="$(timeout 1800 "$PY" "$CLIENT" gdelt-gen "$GDELT_MEM_FILE" --rows "$GDELT_MEM_ROWS" 2>"$WORK/gdelt-mem-gen.err")" \
    || { GDELT_MEM_GEN=""; log "GDELT generator failed: $(tail -3 "$WORK/gdelt-mem-gen.err")"; }
fi

for s in $SERVERS; do
  if ! start "$s"; then
    for p in $PARTS_TO_RUN; do fail "$p" "$s" "server did not start"; done
    stop; continue
  fi
  if has_part standard1 || has_part reads; then run_part standard1 "$s"; fi
  for p in reads wide gdelt gdelt_memtable; do if has_part "$p"; then run_part "$p" "$s"; fi; done
  stop
done
rm -f "$GDELT_FILE" "$GDELT_MEM_FILE"

N="$N" PARTS="$PARTS" THREADS="$THREADS" HEAP="$HEAP" READ_DURATION="$READ_DURATION" WIDE_PARTITIONS="$WIDE_PARTITIONS" \
WIDE_ROWS="$WIDE_ROWS" SLICE_DURATION="$SLICE_DURATION" GDELT_ROWS="$GDELT_ROWS" GDELT_MEM_ROWS="$GDELT_MEM_ROWS" HEL_MEMTABLE_SPACE="${HEL_MEMTABLE_SPACE:-}" PARTS_TO_RUN="$PARTS_TO_RUN" \
SERVERS="$SERVERS" LOADAVG_START="$LOADAVG_START" \
python3 "$ROOT/bench/storage_report.py" "$RESULTS" "$OUT/$NAME" "$MODE" "$COMMIT" "$DATE" "$(nproc)" "$THROUGHPUT"
log "wrote $OUT/$NAME.json and .md (raw files in $WORK)"
