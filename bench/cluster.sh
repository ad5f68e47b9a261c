#!/usr/bin/env bash
# 3-node rings side by side: Helenus (127.0.0.91-93, `helenus cluster`) and Apache Cassandra 5.0
# (127.0.0.1-3, /work/shared/cassandra `start.sh cluster 3`), one after the other, never both at once.
#   bench/cluster.sh [quick|full]     quick: 50k rows (~20-25 min for both); full: 200k rows, longer steps
# Per ring: keyspace1 with SimpleStrategy RF=3 (helenus-stress -schema replication(factor=3)), load ROWS
# standard1 rows at QUORUM, flush every node, then the nine key-value workloads (write / read / mixed x
# uniform / gaussian / inmem) at QUORUM, each a `helenus-stress sla` step load over the three contact
# points (the driver is token-aware): closed-loop probe (max throughput, its P50/P99), a few fixed-rate
# steps (max op/s with P99 < 10 ms), one step at 50% of the max. Server CPU is summed over the three
# node processes from /proc/PID/stat before/after each workload; RSS per node after each workload.
# Writes bench/results/<date>-<commit>-cluster.{json,md,html} (+ PNGs) with Helenus/Cassandra ratios.
# Env: SERVERS="helenus cassandra" WORKLOADS DISTS ROWS THREADS HEAP (Cassandra heap per node, 1G)
#      NOISE_MAX_CORES (0.25) HELENUS_ARGS (extra `helenus server` args) PROBE STEP_DUR MAX_STEPS
#      KEEP_SERVERS=1 (leave the last ring running) KEEP_DATA=1 (keep the rings' data dirs)
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
WORK="$HOME/.cache/helenus/bench/cluster-$$"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
HELENUS="$TARGET_DIR/release/helenus"

case "$MODE" in
  quick) : "${ROWS:=50000}"; : "${PROBE:=10s}"; STEP=25%; : "${STEP_DUR:=5s}"; : "${MAX_STEPS:=4}"; SETTLE_MAX=60 ;;
  full)  : "${ROWS:=200000}"; : "${PROBE:=20s}"; STEP=20%; : "${STEP_DUR:=10s}"; : "${MAX_STEPS:=5}"; SETTLE_MAX=180 ;;
  *) echo "usage: bench/cluster.sh [quick|full]" >&2; exit 2 ;;
esac
THREADS="${THREADS:-64}"; HEAP="${HEAP:-1G}"; NOISE_MAX_CORES="${NOISE_MAX_CORES:-0.25}"
SERVERS="${SERVERS:-helenus cassandra}"
WORKLOADS="${WORKLOADS:-write read mixed}"; DISTS="${DISTS:-uniform gaussian inmem}"
HELENUS_FIRST=127.0.0.91
HELENUS_NODES="127.0.0.91 127.0.0.92 127.0.0.93"
CASS_NODES="127.0.0.1 127.0.0.2 127.0.0.3"          # fixed by start.sh cluster 3
CL=QUORUM
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results"; NAME="$DATE-$COMMIT-cluster"
mkdir -p "$WORK" "$OUT"
MANIFEST="$WORK/manifest.jsonl"; : > "$MANIFEST"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"   # log, CPU/RSS from /proc, measured, pop_for, make_report

for b in "$STRESS" "$HELENUS"; do
  [ -x "$b" ] || { echo "$b not built: cargo build --release --bin helenus --bin helenus-stress" >&2; exit 1; }
done

SERVER_PIDS=""; NODES=""; CURRENT=""
HDIR="$WORK/helenus-ring"; CDIR="$WORK/cassandra-ring"

# Never measure (or stop) somebody else's processes: every address of the ring must be free.
addresses_free() {
  local a
  for a in $1; do
    if port_open "$a" 9042 || port_open "$a" 7000; then log "$a:9042/7000 is already in use by another process"; return 1; fi
  done
}

start_ring() {
  local s="$1" i
  case "$s" in
    helenus)
      NODES="$HELENUS_NODES"; addresses_free "$NODES" || return 1
      # shellcheck disable=SC2086
      timeout -k 10 400 "$HELENUS" cluster --dir "$HDIR" start 3 --first-address "$HELENUS_FIRST" \
        ${HELENUS_ARGS:+-- $HELENUS_ARGS} > "$WORK/helenus-start.log" 2>&1 \
        || { log "helenus cluster start failed:"; tail -30 "$WORK/helenus-start.log" >&2; return 1; }
      SERVER_PIDS="$(for i in 1 2 3; do echo "$(cat "$HDIR/node$i/pid")"; done | tr '\n' ' ')" ;;
    cassandra)
      NODES="$CASS_NODES"; addresses_free "$NODES" || return 1
      # shellcheck disable=SC1091
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
      mkdir -p "$CDIR"
      CB_RUN="$CDIR" HEAP="$HEAP" timeout -k 10 1200 "$CASS/start.sh" cluster 3 > "$WORK/cassandra-start.log" 2>&1 \
        || { log "cassandra cluster start failed:"; tail -30 "$WORK/cassandra-start.log" >&2; return 1; }
      SERVER_PIDS="$(for i in $NODES; do echo "$(cat "$CDIR/node-$i/cassandra.pid")"; done | tr '\n' ' ')" ;;
  esac
  log "$s ring up on $NODES (pids $SERVER_PIDS)"
}

stop_ring() {
  local s="$1"
  [ -n "$s" ] || return 0
  if [ "${KEEP_SERVERS:-0}" = 1 ]; then log "KEEP_SERVERS=1: $s ring left running (pids $SERVER_PIDS)"; return 0; fi
  log "stopping the $s ring"
  case "$s" in
    helenus) [ -f "$HDIR/cluster.txt" ] && timeout -k 10 150 "$HELENUS" cluster --dir "$HDIR" stop >&2 || true ;;
    cassandra) CB_RUN="$CDIR" STOP_TIMEOUT=60 timeout -k 10 400 "$CASS/stop.sh" cluster 3 >&2 || true ;;
  esac
  # Whatever is still alive of what we started (by pid only).
  local p
  for p in $SERVER_PIDS; do kill -0 "$p" 2>/dev/null && { log "pid $p still alive: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; }; done
  SERVER_PIDS=""
}
trap 'stop_ring "$CURRENT"' EXIT
trap 'exit 130' INT TERM

settle() {  # flush every node and wait (bounded) for compactions
  local s="$1" t0=$SECONDS a p
  for a in $NODES; do
    case "$s" in
      cassandra) timeout 120 "$CASS/nodetool.sh" "$a" -- flush keyspace1 >/dev/null 2>&1 || log "flush on $a failed" ;;
      helenus) timeout 60 "$HELENUS" nodetool -h "$a" flush keyspace1 >/dev/null 2>&1 || log "flush on $a failed" ;;
    esac
  done
  if [ "$s" = cassandra ]; then
    for a in $NODES; do
      while (( SECONDS - t0 < SETTLE_MAX )); do
        p="$(timeout 60 "$CASS/nodetool.sh" "$a" -- compactionstats 2>/dev/null | awk '/pending tasks/{print $3}')"
        [ "${p:-0}" = 0 ] && break; sleep 2
      done
    done
  fi
  log "settled in $((SECONDS - t0))s"
}

log "mode=$MODE rows=$ROWS threads=$THREADS cl=$CL heap=$HEAP probe=$PROBE step=$STEP step_duration=$STEP_DUR max_steps=$MAX_STEPS servers=[$SERVERS] loadavg=$(cut -d' ' -f1-3 /proc/loadavg) raw=$WORK"
RAN=""; FAILED=""
for s in $SERVERS; do
  CURRENT="$s"
  start_ring "$s" || { log "cannot start the $s ring, skipped"; FAILED="$FAILED $s"; stop_ring "$s"; CURRENT=""; continue; }
  RAN="$RAN $s"
  common=(cl="$CL")
  net=(-node "$(echo $NODES | tr ' ' ,)" -port native=9042 -rate threads="$THREADS" -schema "replication(factor=3)")
  log "$s: load $ROWS rows at $CL"
  STRESS_TIMEOUT=$(( 120 + ROWS / 50 )) measured "$s" load seq "$WORK/$s-load.json" \
    write n="$ROWS" "${common[@]}" quiet -pop seq=1.."$ROWS" "${net[@]}"
  settle "$s"
  # probe + steps + half step, each with its warm-up, plus connection set-up: bounded generously.
  per_run=$(( 3 * (${PROBE%s} + (MAX_STEPS + 1) * ${STEP_DUR%s}) + 120 ))
  for wl in $WORKLOADS; do
    for d in $DISTS; do
      args=(sla "$wl"); [ "$wl" = mixed ] && args+=("ratio(write=1,read=1)")
      log "$s: $wl / $d"
      STRESS_TIMEOUT=$per_run measured "$s" "$wl" "$d" "$WORK/$s-$wl-$d.json" "${args[@]}" "${common[@]}" quiet \
        step="$STEP" step_duration="$STEP_DUR" probe_duration="$PROBE" max_steps="$MAX_STEPS" \
        -pop "$(pop_for "$d")" "${net[@]}" -hdr "$WORK/$s-$wl-$d.hdr"
      [ "$wl" = write ] && settle "$s"
    done
  done
  # Node logs next to the raw results (errors, warnings).
  case "$s" in
    helenus) for i in 1 2 3; do cp "$HDIR/node$i/log" "$WORK/helenus-node$i.log" 2>/dev/null || true; done ;;
    cassandra) for a in $NODES; do cp "$CDIR/node-$a/logs/system.log" "$WORK/cassandra-$a-system.log" 2>/dev/null || true; done ;;
  esac
  stop_ring "$s"; CURRENT=""
  # The data dirs are only needed while the ring runs (logs were copied above); KEEP_DATA=1 keeps them.
  if [ "${KEEP_DATA:-0}" != 1 ] && [ "${KEEP_SERVERS:-0}" != 1 ]; then
    case "$s" in
      helenus) rm -rf "$HDIR"/node*/{data,commitlog,hints} ;;
      cassandra) rm -rf "$CDIR"/node-*/{data,commitlog,saved_caches,hints,cdc_raw} ;;
    esac
  fi
done
[ -n "$RAN" ] || { log "no ring ran"; exit 1; }

make_report --manifest "$MANIFEST" --out "$OUT/$NAME" --mode "$MODE" --commit "$COMMIT" \
  --title "3-node RF=3 $CL" \
  --settings "3 nodes per server, RF=3 SimpleStrategy, cl=$CL, rows=$ROWS threads=$THREADS (one client, token-aware over 3 contact points) cassandra_heap=$HEAP step=$STEP step_duration=$STEP_DUR probe=$PROBE max_steps=$MAX_STEPS cores=$(nproc)${FAILED:+ failed:$FAILED}"
log "results: $OUT/$NAME.{json,html,md} (raw: $WORK)"
[ -z "$FAILED" ] || { log "rings that did not run:$FAILED"; exit 1; }
