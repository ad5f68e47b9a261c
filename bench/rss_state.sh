#!/usr/bin/env bash
# What a node's RSS is made of in the state bench/run.sh's reads run in: a node started with the
# bench's memory budgets (FC: its chunk cache, 256MiB), loaded by latte with 1M rows of
# bench/standard1.rn, flushed; RSS (anonymous and file-backed, /proc/PID/status) after the load,
# 3, 13 and 33 s after the flush (the flushed memtable is dropped in the background, then the
# allocator gives it back), and after each of FNS (latte functions, DUR s each, with the server
# CPU ticks they took). Prints its numbers; writes nothing under bench/results (no Cassandra).
#   BIN=target/release/helenus bench/rss_state.sh     FC FNS ("read_uniform read_inmem") DUR (30)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
# shellcheck disable=SC1091
source "$CASS/lib.sh"   # LATTE_BIN
BIN="${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/helenus}"
ADDR="${ADDR:-127.0.0.68}"; RN="$ROOT/bench/standard1.rn"; DUR="${DUR:-30}"; ROWS=1000000
[ -x "$LATTE_BIN" ] || { echo "latte not built ($LATTE_BIN): run $CASS/setup.sh without SKIP_LATTE" >&2; exit 1; }
[ -x "$BIN" ] || { echo "no helenus binary at $BIN" >&2; exit 1; }
if (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null; then echo "$ADDR:9042 is in use by another process" >&2; exit 1; fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/helenus-rss-state.XXXXXX")"; cd "$WORK"
"$BIN" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$WORK/data" \
  --set memtable_heap_space=256MiB --set file_cache_size="${FC:-256MiB}" --set key_cache_size=51MiB > server.log 2>&1 &
SP=$!
trap 'kill "$SP" 2>/dev/null || true; wait "$SP" 2>/dev/null || true; rm -rf "$WORK/data"' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null && break; sleep 0.2; done
rss() { echo "$1: $(grep -E 'VmRSS|RssAnon|RssFile' "/proc/$SP/status" | tr -s ' \t' ' ' | tr '\n' ' ')"; }
rss started
"$LATTE_BIN" schema "$RN" -P rows="$ROWS" "$ADDR" > schema.log 2>&1
"$LATTE_BIN" load -q -t 1 --concurrency 128 "$RN" -P rows="$ROWS" "$ADDR" > load.log 2>&1
rss loaded
"$BIN" nodetool -h "$ADDR" flush keyspace1 > /dev/null
sleep 3; rss "flushed +3 s"; sleep 10; rss "flushed +13 s"; sleep 20; rss "flushed +33 s"
for fn in ${FNS:-read_uniform read_inmem}; do
  t0=$(awk '{print $14 + $15}' "/proc/$SP/stat")
  "$LATTE_BIN" run -q -t 1 -p 128 -d "${DUR}s" -w 0s -f "$fn" "$RN" -P rows="$ROWS" --consistency ONE -c 1 \
    -o "$fn.json" "$ADDR" > "$fn.log" 2>&1
  t1=$(awk '{print $14 + $15}' "/proc/$SP/stat")
  rss "after $fn ($DUR s, server CPU ticks $((t1 - t0)))"
done
echo "work dir: $WORK"
