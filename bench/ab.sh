#!/usr/bin/env bash
# A/B of two Helenus server binaries on one helenus-stress workload, in one run, alternating
# A, B, A, B... so that this machine's drift (±20-40% between runs an hour apart) falls on both.
# Each run starts a fresh node, optionally loads the keys, then drives the workload and reads from
# /proc what the server spent: CPU per 1,000 operations, bytes written to disk per operation
# (commitlog, flushes and compactions together), context switches per operation, RSS at the end,
# and steal (% of the machine's CPU time the hypervisor gave to other guests while this one had work).
#   A=old/helenus B=new/helenus bench/ab.sh
# Env: WORKLOAD=write|read|mixed (write)  KEYS=1000000  LOAD=0|1 (load KEYS keys first; 1 for read
#      and mixed)  DURATION=60  RUNS=2 (pairs)  RATE= (fixed op/s; empty = closed loop)
#      THREADS=64  ADDR=127.0.0.47  EXTRA="--set k=v ..." (server settings, both sides)
#      EXTRA_A, EXTRA_B: settings for one side only (A=B with two settings compares the settings)
#      LOAD_PASSES=1: with LOAD=1, write the keys this many times, flushing after each, so a read
#      merges that many SSTables (as the record's reads do after its write workloads)
#      CLIENT=stress|latte: latte as bench/run.sh drives it (bench/standard1.rn, one thread, one
#      connection, 128 in flight; keys UNIFORM(1..KEYS)); LATTE_BIN as bench/run.sh's
# Writes bench/results/ab-<date>-<commit>.{jsonl,md}; the Markdown has per-run rows and the means.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="${STRESS:-$TARGET_DIR/release/helenus-stress}"
: "${A:?A=path of the first server binary}" "${B:?B=path of the second server binary}"
WORKLOAD="${WORKLOAD:-write}"; KEYS="${KEYS:-1000000}"; DURATION="${DURATION:-60}"; RUNS="${RUNS:-2}"
THREADS="${THREADS:-64}"; ADDR="${ADDR:-127.0.0.47}"; RATE="${RATE:-}"
case "$WORKLOAD" in write) LOAD="${LOAD:-0}" ;; *) LOAD="${LOAD:-1}" ;; esac
CLIENT="${CLIENT:-stress}"
# bench/lib.sh's latte_run: one thread, one connection, 128 in flight, keys 1..KEYS on ADDR.
LATTE_THREADS=1; LATTE_CONCURRENCY=128; ROWS="$KEYS"; SERVER_ADDR="$ADDR"
LATTE_BIN="${LATTE_BIN:-${CB_CACHE:-$HOME/.cache/cassandra-baseline}/latte/bin/latte}"
[ -x "$STRESS" ] || { echo "build first: cargo build --release -p helenus-tools ($STRESS)" >&2; exit 1; }
if [ "$CLIENT" = latte ] && [ ! -x "$LATTE_BIN" ]; then
  echo "latte not built ($LATTE_BIN): run ../shared/cassandra/setup.sh without SKIP_LATTE" >&2; exit 1
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/helenus-ab.XXXXXX")"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results/ab-$DATE-$COMMIT"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"   # log, port_open, wait_port, pid_ticks, rss_mib, cpu_steal_total, HZ
log() { echo "[ab $(date -u +%T)] $*" >&2; }
SERVER_PID=""
stop_server() { [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }; }
trap 'stop_server; rm -rf "$WORK/data"' EXIT

disk_bytes() { awk '/^write_bytes/{print $2}' "/proc/$1/io"; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/{s+=$2} END{print s+0}'; }
rate_args() { [ -z "$RATE" ] && echo "threads=$THREADS" || echo "threads=$THREADS fixed=$RATE/s"; }

# latte for DURATION seconds through bench/lib.sh's latte_run (as bench/run.sh drives it); prints
# the lines of helenus-stress's summary that run_one reads, so both clients are reported alike
# (latte 0.29's percentile list: index 11 is P99, 12 P99.9).
latte_summary() {  # label
  local json="$WORK/latte-$1.json" rate=()
  [ -z "$RATE" ] || rate=(-r "$RATE")
  latte_run "$json" -w 0s -d "${DURATION}s" "${rate[@]}" -f "$(latte_fns "$WORKLOAD" uniform)" ||
    { log "$1: latte failed: $(tail -3 "$json.log" | tr '\n' ' ')"; return 0; }
  jq -r --arg cpu "$(awk '{print $1 + $2}' "$json.time" | tail -1)" '.result as $r | ($r.cycle_latency.percentiles) as $p |
    "Total operations : \($r.cycle_count)", "Op rate : \($r.cycle_throughput.value)",
    "Latency 99th percentile : \($p[11].value)", "Latency 99.9th percentile : \($p[12].value)",
    "Client CPU : x x \((($cpu | tonumber) * 1e6 / $r.cycle_count))"' "$json"
}

# One run: label binary; appends a JSON line.
run_one() {
  local label="$1" bin="$2" side_extra="$3"
  if port_open "$ADDR" 9042; then log "$ADDR:9042 is in use by another process"; return 1; fi
  rm -rf "$WORK/data"; mkdir -p "$WORK/data"
  # shellcheck disable=SC2086 # EXTRA and side_extra are lists of settings
  "$bin" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$WORK/data" \
    --set memtable_heap_space=256MiB --set file_cache_size=256MiB --set key_cache_size=51MiB ${EXTRA:-} $side_extra \
    > "$WORK/server-$label.log" 2>&1 &
  SERVER_PID=$!
  wait_port "$ADDR" 9042 60 || { log "$label: no port 9042; see $WORK/server-$label.log"; return 1; }
  # The same keys and table for either client (bench/standard1.rn writes helenus-stress's keys).
  if [ "$LOAD" = 1 ]; then
    for _ in $(seq 1 "${LOAD_PASSES:-1}"); do
      "$STRESS" write n="$KEYS" cl=ONE quiet -pop "seq=1..$KEYS" -node "$ADDR" -rate threads="$THREADS" > /dev/null
      [ "${LOAD_PASSES:-1}" = 1 ] || "$bin" nodetool -h "$ADDR" flush keyspace1 > /dev/null
    done
  elif [ "$CLIENT" = latte ]; then
    (cd "$WORK" && "$LATTE_BIN" schema "$ROOT/bench/standard1.rn" "$ADDR" > /dev/null 2>&1)
  fi
  local c0 w0 s0 t0 c1 w1 s1 t1 out
  c0=$(pid_ticks "$SERVER_PID"); w0=$(disk_bytes "$SERVER_PID"); s0=$(switches "$SERVER_PID"); t0=$(cpu_steal_total)
  if [ "$CLIENT" = latte ]; then
    out=$(latte_summary "$label")
  else
    # shellcheck disable=SC2046 # rate_args is two words at most
    out=$("$STRESS" "$WORKLOAD" duration="${DURATION}s" cl=ONE -pop "dist=UNIFORM(1..$KEYS)" \
      -rate $(rate_args) -node "$ADDR" 2>&1)
  fi
  c1=$(pid_ticks "$SERVER_PID"); w1=$(disk_bytes "$SERVER_PID"); s1=$(switches "$SERVER_PID"); t1=$(cpu_steal_total)
  local rss caches; rss=$(rss_mib "$SERVER_PID")
  # What the caches held and how often the chunk and key caches answered: RSS beside what it is made of.
  caches=$(curl -s --max-time 5 "http://$ADDR:10000/metrics" | awk '
    /^helenus_chunk_cache_hits_total/ {h = $2} /^helenus_chunk_cache_requests_total/ {r = $2}
    /^helenus_chunk_cache_bytes/ {cb = $2} /^helenus_key_cache_bytes/ {kb = $2}
    /^helenus_key_cache_hits_total/ {kh = $2} /^helenus_key_cache_requests_total/ {kr = $2}
    END {printf "%.1f %.0f %.0f %.1f", (r > 0 ? 100 * h / r : 0), cb / 1048576, kb / 1048576, (kr > 0 ? 100 * kh / kr : 0)}')
  stop_server
  echo "$out" > "$WORK/stress-$label.log"
  echo "$out" | awk -v label="$label" -v c="$((c1 - c0))" -v hz="$HZ" -v w="$((w1 - w0))" -v s="$((s1 - s0))" -v rss="$rss" -v caches="${caches:-0 0 0 0}" \
      -v steal="$(echo "$t0 $t1" | awk '{print ($4 > $2) ? 100 * ($3 - $1) / ($4 - $2) : 0}')" '
    /^Total operations/ {ops = $4} /^Op rate/ {rate = $4} /^Latency 99th/ {p99 = $5} /^Latency 99.9th/ {p999 = $5}
    /^Client CPU/ {cc = $6; gsub(/\(/, "", cc)}
    END { if (ops == 0) exit 1
      split(caches, k, " ")
      printf "{\"run\":\"%s\",\"ops\":%d,\"op_s\":%s,\"p99_ms\":%s,\"p999_ms\":%s,\"server_cpu_ms_per_1k\":%.2f,\"client_cpu_ms_per_1k\":%s,\"disk_bytes_per_op\":%.0f,\"switches_per_op\":%.4f,\"rss_mib\":%d,\"chunk_hit_pct\":%s,\"chunk_cache_mib\":%s,\"key_cache_mib\":%s,\"key_hit_pct\":%s,\"steal_pct\":%.1f}\n",
        label, ops, rate + 0, p99 + 0, p999 + 0, c * 1000 / hz * 1000 / ops, cc + 0, w / ops, s / ops, rss, k[1], k[2], k[3], k[4], steal }' \
    || { log "$label: no result; see $WORK/stress-$label.log"; return 1; }
}

mkdir -p "$ROOT/bench/results"; : > "$OUT.jsonl"
for i in $(seq 1 "$RUNS"); do
  for side in A B; do
    bin="$A"; extra="${EXTRA_A:-}"; [ "$side" = B ] && { bin="$B"; extra="${EXTRA_B:-}"; }
    log "$side$i: $CLIENT $WORKLOAD over $KEYS keys, ${DURATION}s${RATE:+ at $RATE/s}${extra:+ ($extra)}"
    run_one "$side$i" "$bin" "$extra" >> "$OUT.jsonl"
  done
done
python3 - "$OUT.jsonl" "$OUT.md" "$A ${EXTRA_A:-}" "$B ${EXTRA_B:-}" "$WORKLOAD" "$KEYS" "$DURATION" "${RATE:-closed loop}" "$CLIENT" <<'PY'
import json, sys
src, dst, a, b, wl, keys, dur, rate, client = sys.argv[1:]
runs = [json.loads(l) for l in open(src)]
cols = ["op_s", "p99_ms", "p999_ms", "server_cpu_ms_per_1k", "client_cpu_ms_per_1k", "disk_bytes_per_op", "switches_per_op", "rss_mib",
        "chunk_hit_pct", "chunk_cache_mib", "key_cache_mib", "key_hit_pct", "steal_pct"]
lines = [f"# A/B: {wl} over {keys} keys, {dur} s, {rate}, client {'latte' if client == 'latte' else 'helenus-stress'}", "", f"- A: `{a}`", f"- B: `{b}`", "",
         "| run | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
lines += ["| " + r["run"] + " | " + " | ".join(str(r.get(c, "-")) for c in cols) + " |" for r in runs]
for side in "AB":
    rs = [r for r in runs if r["run"].startswith(side)]
    lines.append(f"| **mean {side}** | " + " | ".join(f"{sum(r.get(c, 0) for r in rs) / len(rs):.2f}" for c in cols) + " |")
open(dst, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "wrote $OUT.jsonl and $OUT.md"
