#!/usr/bin/env bash
# Side-by-side benchmark: Helenus vs Apache Cassandra 5.0 vs the protocol-ceiling server, one after
# the other in the same run, with the same clients (helenus-stress, then latte) and the same settings.
#   bench/run.sh [quick|full]        quick: a few minutes; full: the record run (>= 60 s steps)
#   bench/run.sh steady              latte only: per workload, Helenus's closed-loop maximum, then each
#                                    server at half of it for STEADY_S seconds (600), judged by the P99
#                                    of every second (bench/steady_report.py); WORKLOADS=mixed DISTS=uniform
# Matrix (WORKLOADS.md §1): write / read / mixed x uniform / gaussian / in-memory key populations,
# each a `helenus-stress sla` step load (closed-loop probe, then fixed-rate steps, then 50% of max).
# latte (second client, bench/standard1.rn): the same matrix as a closed-loop run for the maximum
# and a fixed-rate run at half of it; not run against the ceiling server.
# Writes bench/results/<date>-<commit>.{json,html,md} and PNGs (P90/P99 vs offered rate).
# Env: SERVERS="helenus cassandra ceiling" CLIENTS="stress latte" WORKLOADS="write read mixed"
#      DISTS="uniform gaussian inmem" ROWS THREADS HEAP (memory budget per server, default 1G)
#      NOISE_MAX_CORES (0.25) KEEP_SERVERS=0 LATTE_THREADS=1 LATTE_CONCURRENCY=128
#      HELENUS_ADDR=127.0.0.1 CASS_ADDR=127.0.0.44 CEILING_ADDR=127.0.0.45
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
CACHE="${HOME}/.cache/helenus"
WORK="$CACHE/bench/run-$$"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
CEILING="$TARGET_DIR/release/helenus-ceiling"
HELENUS="$TARGET_DIR/release/helenus"

case "$MODE" in
  quick) : "${ROWS:=200000}"; STEP=25%; STEP_DUR=5s; PROBE=5s; MAX_STEPS=8; SETTLE_MAX=30 ;;
  # The record run. 60 s steps x 12 steps x 9 workloads x 2 servers would take over 4 hours on this
  # 2-core machine; 15 s steps at 20% increments keep it near 40 minutes with the same matrix.
  full)  : "${ROWS:=1000000}"; STEP=20%; STEP_DUR=15s; PROBE=15s; MAX_STEPS=6; SETTLE_MAX=120 ;;
  # One long fixed-rate run per server: flushes and compactions happen inside it, as in production.
  steady) : "${ROWS:=1000000}"; STEP=25%; : "${STEADY_S:=600}"; STEP_DUR="${STEADY_S}s"; PROBE=15s; MAX_STEPS=0
          SETTLE_MAX=120; : "${CLIENTS:=latte}" "${SERVERS:=helenus cassandra}" "${WORKLOADS:=mixed}" "${DISTS:=uniform}"
          STRESS_TIMEOUT=$((STEADY_S + 120)) ;;
  *) echo "usage: bench/run.sh [quick|full|steady]" >&2; exit 2 ;;
esac
THREADS="${THREADS:-64}"; HEAP="${HEAP:-1G}"; NOISE_MAX_CORES="${NOISE_MAX_CORES:-0.25}"
SERVERS="${SERVERS:-helenus cassandra ceiling}"; CLIENTS="${CLIENTS:-stress latte}"
# latte as bench.sh of ../shared/cassandra drives it: one thread, one connection, 128 in flight.
LATTE_THREADS="${LATTE_THREADS:-1}"; LATTE_CONCURRENCY="${LATTE_CONCURRENCY:-128}"
LATTE_BIN="${LATTE_BIN:-${CB_CACHE:-$HOME/.cache/cassandra-baseline}/latte/bin/latte}"
has_client() { case " $CLIENTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if has_client latte && [ ! -x "$LATTE_BIN" ]; then
  echo "latte not built ($LATTE_BIN): run $CASS/setup.sh without SKIP_LATTE, or CLIENTS=stress" >&2; exit 1
fi
WORKLOADS="${WORKLOADS:-write read mixed}"; DISTS="${DISTS:-uniform gaussian inmem}"
# Uncommon loopback addresses so other work on this machine (127.0.0.2-5) is not disturbed;
# Cassandra's JMX port follows the last octet (7099 + 100 x 44).
HELENUS_ADDR="${HELENUS_ADDR:-127.0.0.1}"; CASS_ADDR="${CASS_ADDR:-127.0.0.44}"; CEILING_ADDR="${CEILING_ADDR:-127.0.0.45}"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results"; NAME="$DATE-$COMMIT"; [ "$MODE" = steady ] && NAME="steady-$NAME"
mkdir -p "$WORK" "$OUT"
MANIFEST="$WORK/manifest.jsonl"; : > "$MANIFEST"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"   # log, CPU/RSS from /proc, measured, pop_for, make_report

# ---- client and ceiling binaries (only our crate is built) ----
if [ ! -x "$STRESS" ] || [ ! -x "$CEILING" ]; then
  log "building helenus-tools (release)"
  (cd "$ROOT" && cargo build -q -p helenus-tools --release)
fi

SERVER_PID=""; SERVER_ADDR=""; SERVER_DIR=""
heap_mib() { case "$HEAP" in *[Gg]) echo $(( ${HEAP%?} * 1024 )) ;; *[Mm]) echo "${HEAP%?}" ;; *) echo 1024 ;; esac; }
helenus_budgets() {
  local h; h="$(heap_mib)"
  echo "--set memtable_heap_space=$(( h / 4 ))MiB --set file_cache_size=$(( h / 4 < 512 ? h / 4 : 512 ))MiB" \
    "--set key_cache_size=$(( h / 20 < 100 ? h / 20 : 100 ))MiB"
}
start_server() {
  local s="$1"
  case "$s" in helenus) SERVER_ADDR="$HELENUS_ADDR" ;; cassandra) SERVER_ADDR="$CASS_ADDR" ;; ceiling) SERVER_ADDR="$CEILING_ADDR" ;; esac
  # Never measure somebody else's process: the address must be free before we start ours.
  if port_open "$SERVER_ADDR" 9042; then log "$SERVER_ADDR:9042 is already in use by another process"; return 1; fi
  SERVER_DIR="$WORK/data-$s"; rm -rf "$SERVER_DIR"; mkdir -p "$SERVER_DIR"
  case "$s" in
    helenus)
      # Memory budgets as Cassandra derives them from its heap, so both hold the same unflushed data and
      # caches and RSS compares like with like (Helenus's own defaults: 1 GiB of memtables, a 512 MiB
      # chunk cache, a 100 MiB key cache): memtable space 1/4 of the heap, file cache the smaller of
      # 1/4 of it and 512 MiB, key cache the smaller of 5% and 100 MiB. Cassandra 5.0.9 sizes its file
      # cache so but does not use it (file_cache_enabled is false by default: its reads decompress
      # from the OS page cache, outside its RSS); Helenus's chunk cache is in its RSS.
      "$HELENUS" server --listen-address "$SERVER_ADDR" --native-transport-port 9042 --data-dir "$SERVER_DIR" \
        $(helenus_budgets) > "$WORK/helenus.log" 2>&1 &
      SERVER_PID=$!
      wait_port "$SERVER_ADDR" 9042 60 || { log "helenus did not open 9042; see $WORK/helenus.log"; return 1; } ;;
    cassandra)
      # shellcheck disable=SC1091
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
      HEAP="$HEAP" "$CASS/start.sh" "$SERVER_ADDR" 9042 "$SERVER_DIR" >&2 || return 1
      SERVER_PID="$(cat "$SERVER_DIR/cassandra.pid")" ;;
    ceiling)
      "$CEILING" "$SERVER_ADDR:9042" > "$WORK/ceiling.log" 2>&1 &
      SERVER_PID=$!
      wait_port "$SERVER_ADDR" 9042 10 || return 1 ;;
  esac
  SERVER_PIDS="$SERVER_PID"
  # measured (bench/lib.sh) samples SSTables, pending compactions and write stalls beside each run.
  STATE_DIR=""; [ "$s" = ceiling ] || { STATE_DIR="$SERVER_DIR"; STATE_ADDR="$SERVER_ADDR"; }
  log "$s up on $SERVER_ADDR:9042 (pid $SERVER_PID)"
}

stop_server() {
  local s="$1"
  [ "${KEEP_SERVERS:-0}" = 1 ] && return 0
  case "$s" in
    cassandra) "$CASS/stop.sh" "$SERVER_ADDR" "$SERVER_DIR" >&2 || true ;;
    *) if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; fi ;;
  esac
  SERVER_PID=""
}
trap 'stop_server "${CURRENT:-}"' EXIT

# Flush and wait for the compactions it starts, on both servers alike: a workload is charged for
# the compactions its own writes cause, not for the previous workload's (Helenus was only flushed
# before 2026-11-30, so its CPU per op carried the compaction of the workload before it).
settle() {
  local s="$1" t0=$SECONDS
  local nodetool=()
  case "$s" in
    cassandra) nodetool=("$CASS/nodetool.sh" "$SERVER_ADDR" --) ;;
    helenus) nodetool=("$HELENUS" nodetool -h "$SERVER_ADDR") ;;
    *) return 0 ;;
  esac
  "${nodetool[@]}" flush keyspace1 >/dev/null 2>&1 || true
  sleep 1  # the compaction a flush starts may not be listed yet the moment the flush returns
  while (( SECONDS - t0 < SETTLE_MAX )); do
    p="$("${nodetool[@]}" compactionstats 2>/dev/null | awk '/pending tasks/{print $3}')"
    [ "${p:-0}" = 0 ] && break; sleep 2
  done
  log "settled in $((SECONDS - t0))s"
}

log "mode=$MODE rows=$ROWS threads=$THREADS heap=$HEAP step=$STEP step_duration=$STEP_DUR servers=[$SERVERS] clients=[$CLIENTS] loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
RAN=""
declare -A STEADY_RATE_OF=()
for s in $SERVERS; do
  if [ "$s" = helenus ] && [ ! -x "$HELENUS" ]; then log "skipping helenus: $HELENUS not built"; continue; fi
  CURRENT="$s"
  start_server "$s" || { log "cannot start $s, skipped"; SERVER_PID=""; CURRENT=""; continue; }
  RAN="$RAN $s"
  common=(cl=ONE)
  net=(-node "$SERVER_ADDR" -port native=9042 -rate threads="$THREADS")
  if has_client stress || [ "$s" = ceiling ]; then
    measured "$s" load seq "$WORK/$s-load.json" write n="$ROWS" "${common[@]}" quiet -pop seq=1.."$ROWS" "${net[@]}"
  else  # latte alone: it loads the same keys (1..ROWS) itself
    (cd "$WORK" && "$LATTE_BIN" schema "$ROOT/bench/standard1.rn" -P rows="$ROWS" "$SERVER_ADDR" > "$WORK/$s-latte-schema.log" 2>&1 &&
      timeout -k 10 1800 "$LATTE_BIN" load -q -t "$LATTE_THREADS" --concurrency "$LATTE_CONCURRENCY" "$ROOT/bench/standard1.rn" \
        -P rows="$ROWS" --consistency ONE -c 1 "$SERVER_ADDR" > "$WORK/$s-latte-load.log" 2>&1) || log "latte load failed: $WORK/$s-latte-load.log"
  fi
  settle "$s"
  # The ceiling server ignores keys: one key population is enough to measure it.
  dists="$DISTS"; [ "$s" = ceiling ] && dists="${DISTS%% *}"
  if has_client stress || [ "$s" = ceiling ]; then
    for wl in $WORKLOADS; do
      for d in $dists; do
        args=(sla "$wl"); [ "$wl" = mixed ] && args+=("ratio(write=1,read=1)")
        log "$s: $wl / $d"
        measured "$s" "$wl" "$d" "$WORK/$s-$wl-$d.json" "${args[@]}" "${common[@]}" quiet step="$STEP" step_duration="$STEP_DUR" \
          probe_duration="$PROBE" max_steps="$MAX_STEPS" -pop "$(pop_for "$d")" "${net[@]}" -hdr "$WORK/$s-$wl-$d.hdr"
        [ "$wl" = write ] && settle "$s"
      done
    done
  fi
  # latte's prepared statements need real result metadata, which the ceiling server does not give.
  if has_client latte && [ "$s" != ceiling ]; then
    for wl in $WORKLOADS; do
      for d in $dists; do
        log "$s: latte $wl / $d"
        # steady: every server runs at the rate found for Helenus (or STEADY_RATE), without a probe of its own.
        fixed="${STEADY_RATE:-}"; [ "$MODE" = steady ] && [ -z "$fixed" ] && [ "$s" != helenus ] && fixed="${STEADY_RATE_OF[$wl-$d]:-}"
        LATTE_FIXED_RATE="$fixed" measured_latte "$s" "$wl" "$d" "$WORK/$s-latte-$wl-$d"
        [ "$s" = helenus ] && STEADY_RATE_OF[$wl-$d]="$(tail -1 "$MANIFEST" | jq -r '.half_rate_per_s')"
        [ "$wl" = write ] && [ "$MODE" != steady ] && settle "$s"
      done
    done
  fi
  stop_server "$s"; CURRENT=""
done
[ -n "$RAN" ] || { log "no server ran"; exit 1; }

make_report --manifest "$MANIFEST" --out "$OUT/$NAME" --mode "$MODE" --commit "$COMMIT" \
  --settings "rows=$ROWS threads=$THREADS heap=$HEAP helenus=[$(helenus_budgets)] step=$STEP step_duration=$STEP_DUR probe=$PROBE max_steps=$MAX_STEPS cores=$(nproc) clients=[$CLIENTS] latte=-t$LATTE_THREADS/-p$LATTE_CONCURRENCY/-c1 loadavg_before=[$LOADAVG_BEFORE] loadavg_after=[$(cut -d' ' -f1-3 /proc/loadavg)]"
log "results: $OUT/$NAME.{json,html,md} (raw: $WORK)"
