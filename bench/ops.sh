#!/usr/bin/env bash
# Admin operations side by side (issue 13): Helenus (127.0.0.150-153, `helenus cluster`) and Apache
# Cassandra 5.0 (127.0.0.160-163, /work/shared/cassandra start.sh per node), one after the other.
#   bench/ops.sh [quick|full]     quick: 100k rows (~10 min for both); full: 1M rows
# Per ring: 3 nodes, keyspace1.standard1 (helenus-stress, SimpleStrategy RF=3) loaded with ROWS rows at
# QUORUM and flushed; then, each timed by wall clock:
#   add        a fourth node bootstraps, until it is Up/Normal (Helenus: `helenus cluster add`;
#              Cassandra: start.sh, which returns once CQL is open, i.e. after the join), and the MB/s
#              of its keyspace1 directory (flushed) over that time
#   decommission   `nodetool decommission` of that fourth node (then its process is stopped)
#   repair_in_sync `nodetool repair -full keyspace1` on node1, replicas in sync
#   repair_missed  hints disabled on every node, node3 stopped, ROWS/10 new rows written at QUORUM,
#              node3 started again; `nodetool repair -full keyspace1` on node3
#   compact    `nodetool compact keyspace1` on node1
#   garbagecollect `nodetool garbagecollect keyspace1` on node1
# Both use their default stream throttle (stream_throughput_outbound 24MiB/s), RING_DELAY 5 s for
# Cassandra (start.sh's default). No background load (the 2-core machine cannot hold one steady).
# Writes bench/results/ops-<date>-<commit>.{json,md} with Helenus/Cassandra ratios.
# Env: SERVERS="helenus cassandra" ROWS HEAP (Cassandra heap per node, 1G) THREADS KEEP_DATA=1
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
WORK="$HOME/.cache/helenus/bench/ops-$$"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
HELENUS="$TARGET_DIR/release/helenus"
case "$MODE" in
  quick) : "${ROWS:=100000}" ;;
  full) : "${ROWS:=1000000}" ;;
  *) echo "usage: bench/ops.sh [quick|full]" >&2; exit 2 ;;
esac
THREADS="${THREADS:-32}"; HEAP="${HEAP:-1G}"; SERVERS="${SERVERS:-helenus cassandra}"
MISSED=$(( ROWS / 10 ))
H_NODES=(127.0.0.150 127.0.0.151 127.0.0.152 127.0.0.153)
C_NODES=(127.0.0.160 127.0.0.161 127.0.0.162 127.0.0.163)
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results"; NAME="ops-$DATE-$COMMIT"
mkdir -p "$WORK" "$OUT"
TIMES="$WORK/times.jsonl"; : > "$TIMES"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"   # log, port_open, wait_port

for b in "$STRESS" "$HELENUS"; do
  [ -x "$b" ] || { echo "$b not built: cargo build --release --bin helenus --bin helenus-stress" >&2; exit 1; }
done

HDIR="$WORK/helenus-ring"; CDIR="$WORK/cassandra-ring"
PIDS=""   # every server process this script started, stopped by pid at exit

now() { date +%s.%N; }
record() {  # server op seconds [extra-json]
  printf '{"server":"%s","op":"%s","seconds":%.3f%s}\n' "$1" "$2" "$3" "${4:+,$4}" >> "$TIMES"
  log "$1 $2: $(printf %.2f "$3") s${4:+ ($4)}"
}
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{print b-a}'; }

nodetool() {  # server addr args...
  local s="$1" a="$2"; shift 2
  case "$s" in
    helenus) timeout -k 10 1800 "$HELENUS" nodetool -h "$a" "$@" ;;
    cassandra) timeout -k 10 1800 "$CASS/nodetool.sh" "$a" -- "$@" ;;
  esac
}

addresses_free() {
  local a
  for a in "$@"; do
    if port_open "$a" 9042 || port_open "$a" 7000; then log "$a:9042/7000 is already in use"; return 1; fi
  done
}

# Cassandra nodes are started one by one (each bootstraps in turn), seed the first.
c_start() {  # addr
  local dir="$CDIR/node-$1"
  CB_RUN="$CDIR" HEAP="$HEAP" SEEDS="${C_NODES[0]}" timeout -k 10 900 "$CASS/start.sh" "$1" 9042 "$dir" \
    >> "$WORK/cassandra-start.log" 2>&1 || { tail -20 "$WORK/cassandra-start.log" >&2; return 1; }
  PIDS="$PIDS $(cat "$dir/cassandra.pid")"
}
c_stop() {  # addr
  local dir="$CDIR/node-$1"
  [ -f "$dir/cassandra.pid" ] || return 0
  CB_RUN="$CDIR" STOP_TIMEOUT=60 timeout -k 10 120 "$CASS/stop.sh" "$1" "$dir" >> "$WORK/cassandra-start.log" 2>&1 || true
}
h_pid() { cat "$HDIR/$1/pid" 2>/dev/null || true; }

start_ring() {  # server
  case "$1" in
    helenus)
      addresses_free "${H_NODES[@]}" || return 1
      timeout -k 10 400 "$HELENUS" cluster --dir "$HDIR" start 3 --first-address "${H_NODES[0]}" \
        > "$WORK/helenus-start.log" 2>&1 || { tail -30 "$WORK/helenus-start.log" >&2; return 1; }
      PIDS="$PIDS $(h_pid node1) $(h_pid node2) $(h_pid node3)" ;;
    cassandra)
      addresses_free "${C_NODES[@]}" || return 1
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || { log "cassandra not set up ($CASS/setup.sh)"; return 1; }
      mkdir -p "$CDIR"
      local a; for a in "${C_NODES[@]:0:3}"; do c_start "$a" || return 1; done ;;
  esac
}

stop_all() {
  local p
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 60); do
    local alive=0; for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break; sleep 1
  done
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && { log "pid $p still alive: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; }; done
  PIDS=""
}
cleanup() { stop_all; [ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$HDIR" "$CDIR"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

stress() {  # nodes-csv first-key count
  timeout -k 10 $(( 300 + ROWS / 100 )) "$STRESS" write n="$3" cl=QUORUM quiet -pop seq="$2".."$(( $2 + $3 - 1 ))" \
    -node "$1" -port native=9042 -rate threads="$THREADS" -schema "replication(factor=3)" \
    >> "$WORK/stress.log" 2>&1 || { log "stress failed:"; tail -5 "$WORK/stress.log" >&2; return 1; }
}

node_dir() {  # server index(1-4)
  case "$1" in helenus) echo "$HDIR/node$2" ;; cassandra) echo "$CDIR/node-${C_NODES[$(( $2 - 1 ))]}" ;; esac
}

run_ops() {  # server
  local s="$1" n t0 secs mb a
  local -a nodes
  if [ "$s" = helenus ]; then nodes=("${H_NODES[@]}"); else nodes=("${C_NODES[@]}"); fi
  local first3; first3="$(IFS=,; echo "${nodes[*]:0:3}")"
  log "$s: load $ROWS rows at QUORUM"
  t0=$(now); stress "$first3" 1 "$ROWS" || return 1; record "$s" load "$(elapsed "$t0")"
  for a in "${nodes[@]:0:3}"; do nodetool "$s" "$a" flush keyspace1 > /dev/null; done

  log "$s: add a fourth node"
  t0=$(now)
  case "$s" in
    helenus) timeout -k 10 1800 "$HELENUS" cluster --dir "$HDIR" add >> "$WORK/helenus-start.log" 2>&1 || return 1
             PIDS="$PIDS $(h_pid node4)" ;;
    cassandra) c_start "${nodes[3]}" || return 1 ;;
  esac
  # Until the first node sees it Up and Normal.
  for _ in $(seq 600); do
    nodetool "$s" "${nodes[0]}" status 2>/dev/null | grep -q "^UN  *${nodes[3]} " && break; sleep 0.5
  done
  secs="$(elapsed "$t0")"
  nodetool "$s" "${nodes[3]}" flush keyspace1 > /dev/null 2>&1 || true
  # The keyspace's SSTables only: a node directory also holds commitlog segments, which
  # Helenus preallocates.
  mb="$(find "$(node_dir "$s" 4)" -type d -name keyspace1 -exec du -sm {} + | awk '{t += $1} END {print t + 0}')"
  record "$s" add "$secs" "\"node4_data_mb\":$mb,\"mb_per_s\":$(awk -v m="$mb" -v t="$secs" 'BEGIN{printf "%.2f", m/t}')"

  log "$s: decommission the fourth node"
  t0=$(now); nodetool "$s" "${nodes[3]}" decommission > "$WORK/$s-decommission.log" 2>&1 || return 1; secs="$(elapsed "$t0")"
  record "$s" decommission "$secs"
  [ "$s" = cassandra ] && c_stop "${nodes[3]}"

  log "$s: repair of in-sync replicas"
  t0=$(now); nodetool "$s" "${nodes[0]}" repair -full keyspace1 > "$WORK/$s-repair1.log" 2>&1 || return 1; record "$s" repair_in_sync "$(elapsed "$t0")"

  log "$s: node3 misses $MISSED writes (hints disabled)"
  for a in "${nodes[@]:0:3}"; do nodetool "$s" "$a" disablehandoff; done
  case "$s" in
    helenus) timeout -k 10 120 "$HELENUS" cluster --dir "$HDIR" stop node3 >> "$WORK/helenus-start.log" 2>&1 ;;
    cassandra) c_stop "${nodes[2]}" ;;
  esac
  sleep 5   # the coordinators see it down, so QUORUM writes do not wait on it
  stress "${nodes[0]},${nodes[1]}" $(( ROWS + 1 )) "$MISSED" || return 1
  case "$s" in
    helenus) timeout -k 10 120 "$HELENUS" cluster --dir "$HDIR" start node3 >> "$WORK/helenus-start.log" 2>&1
             PIDS="$PIDS $(h_pid node3)" ;;
    cassandra) c_start "${nodes[2]}" || return 1 ;;
  esac
  sleep 5   # every node sees it up again
  t0=$(now); nodetool "$s" "${nodes[2]}" repair -full keyspace1 > "$WORK/$s-repair2.log" 2>&1 || return 1; record "$s" repair_missed "$(elapsed "$t0")"

  t0=$(now); nodetool "$s" "${nodes[0]}" compact keyspace1 > /dev/null || return 1; record "$s" compact "$(elapsed "$t0")"
  t0=$(now); nodetool "$s" "${nodes[0]}" garbagecollect keyspace1 > /dev/null || return 1; record "$s" garbagecollect "$(elapsed "$t0")"
  nodetool "$s" "${nodes[0]}" getstreamthroughput > "$WORK/$s-streamthroughput.txt" 2>&1 || true
}

LOADAVG="$(cut -d' ' -f1-3 /proc/loadavg)"
log "mode=$MODE rows=$ROWS servers=[$SERVERS] loadavg=$LOADAVG raw=$WORK"
for s in $SERVERS; do
  if start_ring "$s"; then
    run_ops "$s" || log "$s: an operation failed (see $WORK)"
  else
    log "cannot start the $s ring, skipped"
  fi
  stop_all
done

python3 - "$TIMES" "$OUT/$NAME" "$MODE" "$ROWS" "$COMMIT" "$LOADAVG" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, sys
times, base, mode, rows, commit, load_before, load_after = sys.argv[1:]
rows_in = [json.loads(l) for l in open(times) if l.strip()]
by = {}
for r in rows_in:
    by.setdefault(r["server"], {})[r["op"]] = r
ops = ["load", "add", "decommission", "repair_in_sync", "repair_missed", "compact", "garbagecollect"]
h, c = by.get("helenus", {}), by.get("cassandra", {})
ratios = {op: round(h[op]["seconds"] / c[op]["seconds"], 3) for op in ops
          if op in h and op in c and c[op]["seconds"] > 0}
busy = max(float(load_before.split()[0]), float(load_after.split()[0])) > 1.5
doc = {"mode": mode, "rows": int(rows), "commit": commit, "loadavg_before": load_before,
       "loadavg_after": load_after, "busy": busy, "results": by,
       "ratio_helenus_over_cassandra": ratios}
json.dump(doc, open(base + ".json", "w"), indent=1)
cell = lambda d, op: f'{d[op]["seconds"]:.2f}' if op in d else "—"
lines = [f"# Admin operations, Helenus vs Cassandra 5.0 ({mode}, {rows} rows RF=3, commit {commit})", "",
         "Wall seconds per operation on 3 nodes (+1 for add/decommission), 2-core machine, both with the "
         "default 24 MiB/s stream throttle; ratio < 1 means Helenus is faster.", "",
         "| operation | Helenus s | Cassandra s | Helenus/Cassandra |", "|---|---:|---:|---:|"]
for op in ops:
    lines.append(f"| {op} | {cell(h, op)} | {cell(c, op)} | {ratios.get(op, '—')} |")
for name, d in (("Helenus", h), ("Cassandra", c)):
    if "add" in d and "mb_per_s" in d["add"]:
        lines.append(f"\n{name} add: node4 holds {d['add']['node4_data_mb']} MB after the join, "
                     f"{d['add']['mb_per_s']} MB/s over the whole join.")
lines.append(f"\nLoad average before/after: {load_before} / {load_after}.")
if busy:
    lines.append("**The machine was busy** (load average above 1.5 on 2 cores): the times are noisy.")
open(base + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "wrote $OUT/$NAME.{json,md}"
