#!/usr/bin/env bash
# Admin operations side by side under a fixed-rate background load (issue 13): Helenus (127.0.0.150-157,
# `helenus cluster`) and Apache Cassandra 5.0.9 (127.0.0.160-167, /work/shared/cassandra start.sh per
# node), one after the other.
#   bench/ops.sh [quick|full]     quick: 100k rows per table (~20 min for both); full: 1M rows
# Per ring: 3 nodes, RF=3, two tables loaded with ROWS rows each at QUORUM and flushed:
# keyspace1.standard1 (STCS) and keyspace2.standard1 (LCS, sstable_size_in_mb=LCS_MB). Then a
# background load starts (helenus-stress mixed read/write 1:1 on keyspace1 at QUORUM, RATE op/s fixed,
# coordinators node1 and node2, which are never stopped; the driver also routes to the other nodes
# it discovers) and runs through every operation, each timed by wall clock:
#   add             a fourth node bootstraps (Helenus: `helenus cluster add`, until every node sees
#                   it UN; Cassandra: start.sh, until CQL is open, which it opens after the join)
#   cleanup         `nodetool cleanup` on the three original nodes, one after another
#   decommission    `nodetool decommission` of the fourth node
#   double_1..3     3 -> 6, one bootstrap after another (double: the three together)
#   shrink_1..3     decommission of those three, back to 3 (shrink: together)
#   replace         node3 is killed (kill -9); once node1 sees it DN, a new node at the next address
#                   replaces it (Helenus: `helenus cluster replace`; Cassandra: start.sh with
#                   -Dcassandra.replace_address_first_boot); timed until it has joined
#   repair_in_sync  `nodetool repair -full` of keyspace1 then keyspace2 on node1
#   repair_inc_first / repair_inc_again   `nodetool repair keyspace1` (incremental, the default of
#                   both) on node1 twice: the first compares everything and marks it repaired
#                   (anticompaction), the second only what the background load wrote since
#   repair_missed   hints disabled, the third node stopped, ROWS/10 new rows written at QUORUM, the
#                   node started again; `nodetool repair -full keyspace1` on it
#   compact / compact_lcs   `nodetool compact keyspace1` / `keyspace2` on node1
#   garbagecollect  `nodetool garbagecollect` of keyspace1 then keyspace2 on node1 (nothing deleted yet:
#                   Cassandra rewrites every SSTable, Helenus only those with something to drop)
#   deletes / gc_deleted   DELETE_PCT% of keyspace1's partitions deleted at QUORUM (bench/delete_keys.py,
#                   the keys after 20 random tokens; needs the test command's Python venv, VENV) and
#                   node1 flushed; then `nodetool garbagecollect keyspace1` on node1 (default gc_grace:
#                   the deleted rows go, the tombstones stay)
#   deletes_2 / gc_unthrottled   as deletes / gc_deleted on other keys, with `nodetool
#                   setcompactionthroughput 0` on node1 for the garbagecollect (restored after): both
#                   servers hold a manual compaction to compaction_throughput (64 MiB/s by default)
# MB/s: the data the operation moved (the new node's keyspace directories after a flush for a join or a
# replace, the leaving node's before a decommission, the freed MB for cleanup, node1's table before a
# compaction) over its wall time. The background load is one helenus-stress run with an HDR interval
# log (-hdr, one histogram per op and second); the report cuts each operation's window out of it: P99
# over the window (merged histograms), max per-second P99, failed requests (from -log). Both servers
# keep their default stream throttle (24 MiB/s).
# Writes bench/results/ops-<date>-<commit>.{json,md,png} (bench/ops_report.py).
# Env: SERVERS="helenus cassandra" ROWS RATE (background op/s, 200) BG_THREADS (16) BG_MAX_S (7200)
#      HEAP (Cassandra heap per node, 1G) THREADS (loader, 32) LCS_MB SETTLE_S (2) KEEP_DATA=1
#      DELETE_PCT (5) VENV (~/.cache/helenus/venv)
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
RATE="${RATE:-200}"; BG_THREADS="${BG_THREADS:-16}"; BG_MAX_S="${BG_MAX_S:-7200}"; SETTLE_S="${SETTLE_S:-2}"
LCS_MB="${LCS_MB:-$(( ROWS >= 1000000 ? 32 : 4 ))}"
DELETE_PCT="${DELETE_PCT:-5}"; VENV="${VENV:-$HOME/.cache/helenus/venv}"
MISSED=$(( ROWS / 10 ))
H_NODES=(127.0.0.150 127.0.0.151 127.0.0.152 127.0.0.153 127.0.0.154 127.0.0.155 127.0.0.156 127.0.0.157)
C_NODES=(127.0.0.160 127.0.0.161 127.0.0.162 127.0.0.163 127.0.0.164 127.0.0.165 127.0.0.166 127.0.0.167)
# COMMIT: the commit the binaries were built from (default: this checkout's HEAD).
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="${COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)}"
BENCH_COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results"; NAME="ops-$DATE-$COMMIT"
mkdir -p "$WORK" "$OUT"
TIMES="$WORK/times.jsonl"; : > "$TIMES"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"   # log, port_open, wait_port

for b in "$STRESS" "$HELENUS"; do
  [ -x "$b" ] || { echo "$b not built: cargo build --release --bin helenus --bin helenus-stress" >&2; exit 1; }
done

HDIR="$WORK/helenus-ring"; CDIR="$WORK/cassandra-ring"
PIDS=""      # every server process this script started, stopped by pid at exit
BG_PID=""    # the background load (timeout around helenus-stress)
BG_DIR=""

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{print b-a}'; }
# One operation: `op_end server op t0 [extra-json]` after `t0=$(now)` and the operation; it ended
# at $OP_END if set (then cleared), else now.
# Each operation has SETTLE_S seconds of quiet on both sides (settle), so that the background load's
# 1-second intervals around it do not hold a neighbouring step.
OP_END=""
settle() { sleep "$SETTLE_S"; }
op_end() {
  local t1="${OP_END:-$(now)}" was_set="$OP_END"; OP_END=""
  printf '{"server":"%s","op":"%s","start":%s,"end":%s,"seconds":%.3f%s}\n' "$1" "$2" "$3" "$t1" \
    "$(awk -v a="$3" -v b="$t1" 'BEGIN{print b-a}')" "${4:+,$4}" >> "$TIMES"
  log "$1 $2: $(awk -v a="$3" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s${4:+ ($4)}"
  [ -n "$was_set" ] || settle
}
# A total over several operations: its window spans them, its seconds are their sum (the flushes and
# process stops between them left out).
op_total() {  # server op part-prefix [extra-json]
  local line
  line="$(grep "\"server\":\"$1\",\"op\":\"$3" "$TIMES" | python3 -c '
import json, sys
p = [json.loads(l) for l in sys.stdin if l.strip()]
if p:
    print("%s %s %.3f %d" % (min(x["start"] for x in p), max(x["end"] for x in p), sum(x["seconds"] for x in p), len(p)))')"
  [ -n "$line" ] || return 0
  set -- "$1" "$2" $line "${4:-}"
  printf '{"server":"%s","op":"%s","start":%s,"end":%s,"seconds":%s,"parts":%s%s}\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:+,$7}" >> "$TIMES"
  log "$1 $2: $5 s in $6 steps"
}
mbps() { awk -v m="$1" -v t="$2" 'BEGIN{printf "%.2f", (t > 0 ? m/t : 0)}'; }
note() {  # server key json-value: a fact that is not an operation (a failure, a skipped step)
  printf '{"server":"%s","note":"%s","value":%s}\n' "$1" "$2" "$3" >> "$TIMES"
}

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
c_start() {  # addr (EXTRA_JVM_OPTS passes through)
  local dir="$CDIR/node-$1"
  CB_RUN="$CDIR" HEAP="$HEAP" SEEDS="${C_NODES[0]}" START_TIMEOUT=1700 timeout -k 10 1800 "$CASS/start.sh" "$1" 9042 "$dir" \
    >> "$WORK/cassandra-start.log" 2>&1 || { tail -20 "$WORK/cassandra-start.log" >&2; return 1; }
  PIDS="$PIDS $(cat "$dir/cassandra.pid")"
}
c_stop() {  # addr
  local dir="$CDIR/node-$1"
  [ -f "$dir/cassandra.pid" ] || return 0
  CB_RUN="$CDIR" STOP_TIMEOUT=60 timeout -k 10 120 "$CASS/stop.sh" "$1" "$dir" >> "$WORK/cassandra-start.log" 2>&1 || true
}
h_pid() { cat "$HDIR/$1/pid" 2>/dev/null || true; }
h_name() { awk -v a="$1" '$2 == a {print $1}' "$HDIR/cluster.txt"; }   # address -> nodeN
hcluster() { timeout -k 10 1800 "$HELENUS" cluster --dir "$HDIR" "$@" >> "$WORK/helenus-start.log" 2>&1; }
server_pid() {  # server addr
  case "$1" in
    helenus) h_pid "$(h_name "$2")" ;;
    cassandra) cat "$CDIR/node-$2/cassandra.pid" 2>/dev/null || true ;;
  esac
}

# MB (float) of the benchmark keyspaces on one node (SSTables only: a node directory also holds
# commitlog segments, which Helenus preallocates).
data_mb() {  # server addr
  local dir
  case "$1" in
    helenus) dir="$HDIR/$(h_name "$2")" ;;
    cassandra) dir="$CDIR/node-$2/data" ;;
  esac
  [ -d "$dir" ] || { echo 0; return; }
  find "$dir" -type d \( -name keyspace1 -o -name keyspace2 \) -prune -exec du -sk {} + 2>/dev/null \
    | awk '{t += $1} END {printf "%.1f", t / 1024}'
}
sstables() {  # server addr keyspace: its Data.db files
  local dir
  case "$1" in helenus) dir="$HDIR/$(h_name "$2")" ;; cassandra) dir="$CDIR/node-$2/data" ;; esac
  find "$dir" -path "*/$3/*" -name "*Data.db" -not -path "*/snapshots/*" 2>/dev/null | wc -l
}
flush() {  # server addr...
  local s="$1" a; shift
  for a in "$@"; do nodetool "$s" "$a" flush keyspace1 > /dev/null 2>&1 || true; nodetool "$s" "$a" flush keyspace2 > /dev/null 2>&1 || true; done
}

# Until node1 lists ADDR with STATE (UN, DN) or no longer lists it (STATE "gone"); 1 on timeout.
wait_state() {  # server observer addr state timeout-s
  local s="$1" obs="$2" a="$3" st="$4" t0=$SECONDS out pause=0.5
  [ "$s" = cassandra ] && pause=3   # each Cassandra nodetool is a JVM: poll gently
  while (( SECONDS - t0 < $5 )); do
    out="$(nodetool "$s" "$obs" status 2>/dev/null || true)"
    if [ "$st" = gone ]; then
      [ -n "$out" ] && ! grep -q "^[UD][NLJM]  *$a " <<< "$out" && return 0
    else
      grep -q "^$st  *$a " <<< "$out" && return 0
    fi
    sleep "$pause"
  done
  log "$s: $a not $st on $obs after $5 s"; return 1
}

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

# A node joins (bootstrap, or replacing DEAD): returns once it has joined; the new address in JOINED.
JOINED=""
join_node() {  # server addr [dead-addr]
  local s="$1" a="$2" dead="${3:-}"
  case "$s" in
    helenus)
      if [ -n "$dead" ]; then hcluster replace "$(h_name "$dead")" || return 1; else hcluster add || return 1; fi
      JOINED="$(tail -1 "$HDIR/cluster.txt" | awk '{print $2}')"
      [ "$JOINED" = "$a" ] || log "helenus: the new node is $JOINED (expected $a)"
      PIDS="$PIDS $(h_pid "$(h_name "$JOINED")")" ;;
    cassandra)
      if [ -n "$dead" ]; then EXTRA_JVM_OPTS="-Dcassandra.replace_address_first_boot=$dead" c_start "$a" || return 1
      else c_start "$a" || return 1; fi
      JOINED="$a" ;;
  esac
}
leave_node() {  # server addr: decommission
  local s="$1" a="$2"
  nodetool "$s" "$a" decommission >> "$WORK/$s-decommission.log" 2>&1 || return 1
}
after_leave() {  # server addr
  local s="$1" a="$2" pid
  case "$s" in
    helenus)   # a decommissioned Helenus node stops by itself
      pid="$(h_pid "$(h_name "$a")")"
      for _ in $(seq 60); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      hcluster stop "$a" || true ;;
    cassandra) c_stop "$a" ;;
  esac
}

stop_all() {  # [now]
  stop_bg "${1:-}"
  local p
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 60); do
    local alive=0; for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break; sleep 1
  done
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && { log "pid $p still alive: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; }; done
  PIDS=""
}
cleanup() { stop_all now; [ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$HDIR" "$CDIR"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

stress_write() {  # nodes-csv first-key count keyspace [schema...]
  local nodes="$1" first="$2" count="$3" ks="$4"; shift 4
  timeout -k 10 $(( 300 + ROWS / 100 )) "$STRESS" write n="$count" cl=QUORUM quiet -pop seq="$first".."$(( first + count - 1 ))" \
    -node "$nodes" -port native=9042 -rate threads="$THREADS" -schema keyspace="$ks" "replication(factor=3)" "$@" \
    >> "$WORK/stress.log" 2>&1 || { log "stress failed:"; tail -5 "$WORK/stress.log" >&2; return 1; }
}

# The background load: one fixed-rate helenus-stress run (BG_MAX_S at most) through every operation.
# Its -hdr interval log (absolute base time) and -log are buffered (8 KiB) and helenus-stress has no
# signal handling, so stop_bg lets it run until the log on disk reaches past the last operation, then
# stops it: what is lost is the unflushed tail after the operations. Separate short runs would each
# start with the stress tool's schema statements (CREATE ... IF NOT EXISTS), which Helenus fails while
# a killed node is still thought alive (the schema lease, see the report): one run avoids that.
start_bg() {  # server nodes-csv
  BG_DIR="$WORK/$1-bg"; mkdir -p "$BG_DIR"
  timeout -k 5 "$BG_MAX_S" "$STRESS" mixed 'ratio(write=1,read=1)' duration="${BG_MAX_S}s" cl=QUORUM no-warmup \
    -pop "dist=UNIFORM(1..$ROWS)" -node "$2" -port native=9042 -rate threads="$BG_THREADS" fixed="${RATE}/s" \
    -schema keyspace=keyspace1 "replication(factor=3)" -hdr "$BG_DIR/bg.hdr" -log file="$BG_DIR/bg.log" interval=1s \
    > "$BG_DIR/stdout.log" 2>&1 &
  BG_PID=$!
  sleep 3   # connected and running before the first operation
  kill -0 "$BG_PID" 2>/dev/null || { log "the background load did not start:"; tail -5 "$BG_DIR/stdout.log" >&2; BG_PID=""; return 1; }
}
hdr_end() {  # epoch seconds of the last whole interval in the background HDR log (0 if none)
  awk -F'[ ,]' '/^#\[BaseTime:/ {b = $2} /^Tag=/ {prev = last; last = $2} END {printf "%.3f", (prev != "" ? b + prev : 0)}' "$BG_DIR/bg.hdr" 2>/dev/null || echo 0
}
stop_bg() {  # [now]: do not wait for the log to reach the end of the operations
  [ -n "$BG_PID" ] || return 0
  local target; target="$(awk -v t="$(now)" 'BEGIN{printf "%.3f", t + 2}')"
  if [ "${1:-}" != now ]; then
    for _ in $(seq 180); do
      kill -0 "$BG_PID" 2>/dev/null || break
      awk -v e="$(hdr_end)" -v t="$target" 'BEGIN{exit !(e >= t)}' && break
      sleep 1
    done
  fi
  kill -TERM "$BG_PID" 2>/dev/null || true
  wait "$BG_PID" 2>/dev/null || true
  BG_PID=""
}

run_ops() {  # server
  local s="$1" t0 t00 secs mb a i pid dead new ok
  local -a nodes ring
  if [ "$s" = helenus ]; then nodes=("${H_NODES[@]}"); else nodes=("${C_NODES[@]}"); fi
  ring=("${nodes[@]:0:3}")
  local first3; first3="$(IFS=,; echo "${ring[*]}")"
  local next=3   # index in nodes of the next address to join

  log "$s: load $ROWS rows at QUORUM into keyspace1.standard1 (STCS) and keyspace2.standard1 (LCS)"
  t0=$(now); stress_write "$first3" 1 "$ROWS" keyspace1 || return 1; op_end "$s" load "$t0"
  t0=$(now)
  stress_write "$first3" 1 "$ROWS" keyspace2 "compaction(strategy=LeveledCompactionStrategy,sstable_size_in_mb=$LCS_MB)" || return 1
  op_end "$s" load_lcs "$t0"
  flush "$s" "${ring[@]}"
  note "$s" data_mb_per_node "[$(for a in "${ring[@]}"; do printf '%s,' "$(data_mb "$s" "$a")"; done | sed 's/,$//')]"
  t0=$(now); nodetool "$s" "${ring[0]}" version > /dev/null 2>&1 || true; op_end "$s" nodetool_call "$t0"

  log "$s: background load, $RATE op/s mixed at QUORUM through ${ring[0]},${ring[1]}"
  start_bg "$s" "${ring[0]},${ring[1]}" || return 1

  # 1. add a fourth node
  a="${nodes[$next]}"; next=$(( next + 1 ))
  log "$s: add $a"
  settle; t0=$(now); join_node "$s" "$a" || return 1; OP_END=$(now); secs="$(elapsed "$t0")"; settle
  wait_state "$s" "${ring[0]}" "$a" UN 300 || true
  flush "$s" "$a"; mb="$(data_mb "$s" "$a")"
  op_end "$s" add "$t0" "\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"
  local fourth="$a"

  # 2. cleanup on the original three
  log "$s: cleanup on ${ring[*]}"
  local before=0 after=0 parts="" per_before="" per_after=""
  flush "$s" "${ring[@]}"   # the memtables' rows on disk first, so only the cleanup changes the sizes
  for a in "${ring[@]}"; do mb="$(data_mb "$s" "$a")"; per_before="$per_before${per_before:+,}$mb"; before="$(awk -v x="$before" -v y="$mb" 'BEGIN{print x+y}')"; done
  settle; t0=$(now)
  for a in "${ring[@]}"; do
    t00=$(now); nodetool "$s" "$a" cleanup >> "$WORK/$s-cleanup.log" 2>&1 || { log "$s: cleanup on $a failed"; note "$s" cleanup_failed "\"$a\""; }
    parts="$parts${parts:+,}$(awk -v a="$t00" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}')"
  done
  OP_END=$(now); secs="$(elapsed "$t0")"; settle
  sleep 2   # obsolete SSTables deleted
  for a in "${ring[@]}"; do mb="$(data_mb "$s" "$a")"; per_after="$per_after${per_after:+,}$mb"; after="$(awk -v x="$after" -v y="$mb" 'BEGIN{print x+y}')"; done
  mb="$(awk -v b="$before" -v a="$after" 'BEGIN{printf "%.1f", b-a}')"
  op_end "$s" cleanup "$t0" "\"per_node_s\":[$parts],\"mb_before\":[$per_before],\"mb_after\":[$per_after],\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"

  # 3. decommission the fourth
  log "$s: decommission $fourth"
  flush "$s" "$fourth"; mb="$(data_mb "$s" "$fourth")"
  settle; t0=$(now); leave_node "$s" "$fourth" || return 1; secs="$(elapsed "$t0")"
  op_end "$s" decommission "$t0" "\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"
  after_leave "$s" "$fourth"

  # 4. double: 3 -> 6, one bootstrap after another
  local added=() min_free
  if [ "$s" = cassandra ]; then min_free=3000; else min_free=1000; fi
  for i in 1 2 3; do
    local avail; avail=$(awk '/MemAvailable/{print int($2/1024)}' /proc/meminfo)
    if [ "$avail" -lt "$min_free" ]; then
      log "$s: only $avail MB available: the ring stays at $(( 3 + ${#added[@]} )) nodes"; note "$s" double_stopped_mem_mb "$avail"; break
    fi
    a="${nodes[$next]}"; next=$(( next + 1 ))
    log "$s: double, node $(( 3 + i )) at $a"
    settle; t0=$(now); join_node "$s" "$a" || { note "$s" double_failed "\"$a\""; break; }; OP_END=$(now); secs="$(elapsed "$t0")"; settle
    wait_state "$s" "${ring[0]}" "$a" UN 300 || true
    flush "$s" "$a"; mb="$(data_mb "$s" "$a")"
    op_end "$s" "double_$i" "$t0" "\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"
    added+=("$a")
  done
  op_total "$s" double double_

  # 5. decommission back to 3 (the last added first)
  i=0
  local k
  for (( k=${#added[@]}-1; k>=0; k-- )); do
    a="${added[$k]}"; i=$(( i + 1 ))
    log "$s: shrink, decommission $a"
    flush "$s" "$a"; mb="$(data_mb "$s" "$a")"
    settle; t0=$(now); leave_node "$s" "$a" || { note "$s" shrink_failed "\"$a\""; return 1; }; secs="$(elapsed "$t0")"
    op_end "$s" "shrink_$i" "$t0" "\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"
    after_leave "$s" "$a"
  done
  op_total "$s" shrink shrink_

  # 6. replace a dead node: kill -9 the third, a new node takes over its tokens
  dead="${ring[2]}"; new="${nodes[$next]}"; next=$(( next + 1 ))
  log "$s: kill -9 $dead, replace it with $new"
  pid="$(server_pid "$s" "$dead")"
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  [ "$s" = cassandra ] && rm -f "$CDIR/node-$dead/cassandra.pid"
  t00=$(now); wait_state "$s" "${ring[0]}" "$dead" DN 180 || true
  op_end "$s" dead_until_down "$t00"
  settle; t0=$(now); join_node "$s" "$new" "$dead" || return 1; OP_END=$(now); secs="$(elapsed "$t0")"; settle
  new="$JOINED"
  wait_state "$s" "${ring[0]}" "$new" UN 300 || true
  flush "$s" "$new"; mb="$(data_mb "$s" "$new")"
  op_end "$s" replace "$t0" "\"mb\":$mb,\"mb_per_s\":$(mbps "$mb" "$secs")"
  wait_state "$s" "${ring[0]}" "$dead" gone 120 || note "$s" replace_dead_still_listed "\"$dead\""
  ring[2]="$new"

  # 7. repair of in-sync replicas
  log "$s: repair of in-sync replicas"
  settle; t0=$(now)
  t00=$(now); nodetool "$s" "${ring[0]}" repair -full keyspace1 > "$WORK/$s-repair1.log" 2>&1 || { log "$s: repair keyspace1 failed"; tail -5 "$WORK/$s-repair1.log" >&2; return 1; }
  local r1; r1="$(elapsed "$t00")"
  t00=$(now); nodetool "$s" "${ring[0]}" repair -full keyspace2 >> "$WORK/$s-repair1.log" 2>&1 || { log "$s: repair keyspace2 failed"; tail -5 "$WORK/$s-repair1.log" >&2; return 1; }
  op_end "$s" repair_in_sync "$t0" "\"keyspace1_s\":$(printf %.2f "$r1"),\"keyspace2_s\":$(printf %.2f "$(elapsed "$t00")")"

  # 7b. incremental repair (both servers' default), twice
  log "$s: incremental repairs"
  settle; t0=$(now); nodetool "$s" "${ring[0]}" repair keyspace1 > "$WORK/$s-repair-inc.log" 2>&1 || { log "$s: incremental repair failed"; tail -5 "$WORK/$s-repair-inc.log" >&2; return 1; }
  op_end "$s" repair_inc_first "$t0"
  settle; t0=$(now); nodetool "$s" "${ring[0]}" repair keyspace1 >> "$WORK/$s-repair-inc.log" 2>&1 || { log "$s: incremental repair failed"; tail -5 "$WORK/$s-repair-inc.log" >&2; return 1; }
  op_end "$s" repair_inc_again "$t0"

  # 8. repair after the third node missed writes
  local third="${ring[2]}"
  log "$s: $third misses $MISSED writes (hints disabled)"
  for a in "${ring[@]}"; do nodetool "$s" "$a" disablehandoff > /dev/null 2>&1 || true; done
  case "$s" in
    helenus) hcluster stop "$third" || true ;;
    cassandra) c_stop "$third" ;;
  esac
  wait_state "$s" "${ring[0]}" "$third" DN 60 || true
  settle; t0=$(now); stress_write "${ring[0]},${ring[1]}" $(( ROWS + 1 )) "$MISSED" keyspace1 || return 1; op_end "$s" missed_writes "$t0"
  case "$s" in
    helenus) hcluster start "$(h_name "$third")" || return 1; PIDS="$PIDS $(h_pid "$(h_name "$third")")" ;;
    cassandra) c_start "$third" || return 1 ;;
  esac
  wait_state "$s" "${ring[0]}" "$third" UN 120 || true
  sleep 3   # every node sees it up again
  settle; t0=$(now); nodetool "$s" "$third" repair -full keyspace1 > "$WORK/$s-repair2.log" 2>&1 || { log "$s: repair failed"; tail -5 "$WORK/$s-repair2.log" >&2; return 1; }
  op_end "$s" repair_missed "$t0"
  for a in "${ring[@]}"; do nodetool "$s" "$a" enablehandoff > /dev/null 2>&1 || true; done

  # 9. major compaction, 10. garbagecollect (node1)
  flush "$s" "${ring[0]}"
  mb="$(data_mb "$s" "${ring[0]}")"
  local n0; n0="$(sstables "$s" "${ring[0]}" keyspace1)"
  settle; t0=$(now); nodetool "$s" "${ring[0]}" compact keyspace1 > "$WORK/$s-compact.log" 2>&1 || return 1; OP_END=$(now); settle
  op_end "$s" compact "$t0" "\"node1_mb_both_tables\":$mb,\"sstables_before\":$n0,\"sstables_after\":$(sstables "$s" "${ring[0]}" keyspace1)"
  n0="$(sstables "$s" "${ring[0]}" keyspace2)"
  settle; t0=$(now); nodetool "$s" "${ring[0]}" compact keyspace2 >> "$WORK/$s-compact.log" 2>&1 || return 1; OP_END=$(now); settle
  op_end "$s" compact_lcs "$t0" "\"sstables_before\":$n0,\"sstables_after\":$(sstables "$s" "${ring[0]}" keyspace2)"
  settle; t0=$(now)
  t00=$(now); nodetool "$s" "${ring[0]}" garbagecollect keyspace1 > "$WORK/$s-gc.log" 2>&1 || return 1; r1="$(elapsed "$t00")"
  t00=$(now); nodetool "$s" "${ring[0]}" garbagecollect keyspace2 >> "$WORK/$s-gc.log" 2>&1 || return 1
  op_end "$s" garbagecollect "$t0" "\"keyspace1_s\":$(printf %.2f "$r1"),\"keyspace2_s\":$(printf %.2f "$(elapsed "$t00")")"
  if [ -x "$VENV/bin/python" ]; then
    settle; t0=$(now)
    timeout -k 10 900 "$VENV/bin/python" "$ROOT/bench/delete_keys.py" "${ring[0]}" keyspace1.standard1 "$ROWS" "$(awk -v p="$DELETE_PCT" 'BEGIN{print p/100}')" \
      > "$WORK/$s-deletes.log" 2>&1 || { log "$s: deletes failed"; tail -5 "$WORK/$s-deletes.log" >&2; return 1; }
    nodetool "$s" "${ring[0]}" flush keyspace1 > /dev/null 2>&1 || true
    op_end "$s" deletes "$t0" "\"deleted\":$(awk '/^deleted/ {print $2}' "$WORK/$s-deletes.log")"
    mb="$(data_mb "$s" "${ring[0]}")"
    settle; t0=$(now); nodetool "$s" "${ring[0]}" garbagecollect keyspace1 >> "$WORK/$s-gc.log" 2>&1 || return 1
    OP_END=$(now); op_end "$s" gc_deleted "$t0" "\"node1_mb_before\":$mb,\"node1_mb_after\":$(data_mb "$s" "${ring[0]}")"
    # The same again on other keys with compaction_throughput lifted on node1 (both servers cap it at
    # 64 MiB/s by default, and the rewrite above is held to that rate on both): the engines' own speed.
    settle; t0=$(now)
    timeout -k 10 900 "$VENV/bin/python" "$ROOT/bench/delete_keys.py" "${ring[0]}" keyspace1.standard1 "$ROWS" "$(awk -v p="$DELETE_PCT" 'BEGIN{print p/100}')" 29 \
      > "$WORK/$s-deletes2.log" 2>&1 || { log "$s: deletes failed"; tail -5 "$WORK/$s-deletes2.log" >&2; return 1; }
    nodetool "$s" "${ring[0]}" flush keyspace1 > /dev/null 2>&1 || true
    op_end "$s" deletes_2 "$t0" "\"deleted\":$(awk '/^deleted/ {print $2}' "$WORK/$s-deletes2.log")"
    cap="$(nodetool "$s" "${ring[0]}" getcompactionthroughput 2>/dev/null | awk '/^Current compaction throughput:/ {print $4; exit}')"
    nodetool "$s" "${ring[0]}" setcompactionthroughput 0 >> "$WORK/$s-gc.log" 2>&1 || return 1
    mb="$(data_mb "$s" "${ring[0]}")"
    settle; t0=$(now); nodetool "$s" "${ring[0]}" garbagecollect keyspace1 >> "$WORK/$s-gc.log" 2>&1 || return 1
    OP_END=$(now); op_end "$s" gc_unthrottled "$t0" "\"node1_mb_before\":$mb,\"node1_mb_after\":$(data_mb "$s" "${ring[0]}"),\"cap_restored_mib_s\":${cap:-64}"
    nodetool "$s" "${ring[0]}" setcompactionthroughput "${cap:-64}" >> "$WORK/$s-gc.log" 2>&1 || true
  else
    note "$s" gc_deleted_skipped "\"no Python venv with the driver at $VENV (run the test command once)\""
  fi
  nodetool "$s" "${ring[0]}" getstreamthroughput > "$WORK/$s-streamthroughput.txt" 2>&1 || true
  nodetool "$s" "${ring[0]}" status > "$WORK/$s-status-end.txt" 2>&1 || true
}

LOADAVG="$(cut -d' ' -f1-3 /proc/loadavg)"
log "mode=$MODE rows=$ROWS rate=$RATE servers=[$SERVERS] loadavg=$LOADAVG raw=$WORK"
START_ALL=$SECONDS
for s in $SERVERS; do
  note "$s" loadavg_before "\"$(cut -d' ' -f1-3 /proc/loadavg)\""
  if start_ring "$s"; then
    run_ops "$s" || { log "$s: an operation failed (see $WORK)"; note "$s" failed true; }
  else
    log "cannot start the $s ring, skipped"; note "$s" failed true
  fi
  stop_all
  note "$s" loadavg_after "\"$(cut -d' ' -f1-3 /proc/loadavg)\""
done
log "both rings done in $(( SECONDS - START_ALL )) s"

VENV="$HOME/.cache/helenus/bench-venv"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
  log "creating $VENV (matplotlib)"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q matplotlib >&2 || log "matplotlib unavailable: report without PNG"
fi
PY="$VENV/bin/python"; [ -x "$PY" ] || PY=python3
"$PY" "$ROOT/bench/ops_report.py" --work "$WORK" --out "$OUT/$NAME" --mode "$MODE" --rows "$ROWS" --commit "$COMMIT" --bench-commit "$BENCH_COMMIT" \
  --rate "$RATE" --bg-threads "$BG_THREADS" --lcs-mb "$LCS_MB" --loadavg-before "$LOADAVG" --loadavg-after "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --total-s "$(( SECONDS - START_ALL ))"
log "wrote $OUT/$NAME.{json,md,png} (raw: $WORK)"
