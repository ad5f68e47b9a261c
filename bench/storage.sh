#!/usr/bin/env bash
# Storage benchmark, Helenus beside Apache Cassandra 5.0 in the same run:
#   bench/storage.sh [quick|full]     quick: N=100000 rows (a few minutes); full: N=1000000
# For each server: load N rows of cassandra-stress `standard1` with helenus-stress (same client and
# options for both) in PARTS runs of consecutive keys, each followed by a flush, so both servers
# hold PARTS SSTables (below SizeTiered's min_threshold of 4: no background compaction); then time
# `nodetool compact` on keyspace1.standard1 and record the on-disk size of the table before and
# after the major compaction. Writes bench/results/storage-<date>-<commit>.json and .md (with Helenus/Cassandra
# ratios).
# Env: N (rows), PARTS (3), THREADS (32), HEAP (Cassandra heap, 1G), SERVERS ("helenus cassandra"),
#      THROUGHPUT (compaction_throughput MiB/s on both servers; 0 = unthrottled, the default here),
#      HEL_ADDR (127.0.0.32), CASS_ADDR (127.0.0.31), SETTLE_MAX (seconds to wait for compactions).
set -euo pipefail
MODE="${1:-quick}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
STRESS="$TARGET_DIR/release/helenus-stress"
HELENUS="$TARGET_DIR/release/helenus"
case "$MODE" in
  quick) : "${N:=100000}"; : "${SETTLE_MAX:=120}" ;;
  full)  : "${N:=1000000}"; : "${SETTLE_MAX:=600}" ;;
  *) echo "usage: bench/storage.sh [quick|full]" >&2; exit 2 ;;
esac
THREADS="${THREADS:-32}"; HEAP="${HEAP:-1G}"; PARTS="${PARTS:-3}"
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
log() { echo "[storage-bench $(date -u +%T)] $*" >&2; }

if [ ! -x "$STRESS" ] || [ ! -x "$HELENUS" ]; then
  log "building helenus and helenus-stress (release)"
  (cd "$ROOT" && cargo build -q --release -p helenus-cli -p helenus-tools)
fi

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { local t0=$SECONDS; while (( SECONDS - t0 < ${3:-120} )); do port_open "$1" "$2" && return 0; sleep 1; done; return 1; }
now_ms() { date +%s%3N; }
# Bytes of the table's live files (no snapshots, no commitlog).
table_bytes() {  # data-root
  local d; d="$(find "$1" -maxdepth 4 -type d -name 'standard1-*' 2>/dev/null | head -1)"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}'
}
table_files() {  # data-root: number of Data.db files (SSTables)
  local d; d="$(find "$1" -maxdepth 4 -type d -name 'standard1-*' 2>/dev/null | head -1)"
  [ -n "$d" ] || { echo 0; return; }
  find "$d" -maxdepth 1 -type f -name '*Data.db' | wc -l
}

PID=""; ADDR=""; DIR=""; CURRENT=""
start() {
  local s="$1"
  DIR="$WORK/data-$s"; rm -rf "$DIR"; mkdir -p "$DIR"
  case "$s" in
    helenus)
      ADDR="$HEL_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      "$HELENUS" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$DIR" \
        --set compaction_throughput_mb_per_sec="$THROUGHPUT" > "$WORK/helenus.log" 2>&1 &
      PID=$!
      wait_port "$ADDR" 9042 60 || { log "helenus did not start; see $WORK/helenus.log"; return 1; } ;;
    cassandra)
      ADDR="$CASS_ADDR"
      port_open "$ADDR" 9042 && { log "$ADDR:9042 already in use"; return 1; }
      # shellcheck disable=SC1091
      (source "$CASS/lib.sh" && [ -f "$CB_LIB/.complete" ]) || SKIP_LATTE=1 "$CASS/setup.sh" >&2
      HEAP="$HEAP" "$CASS/start.sh" "$ADDR" 9042 "$DIR" >&2 || return 1
      PID="$(cat "$DIR/cassandra.pid")" ;;
  esac
  CURRENT="$s"
  log "$s up on $ADDR:9042 (pid $PID)"
}
stop() {
  case "$CURRENT" in
    helenus) if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; fi ;;
    cassandra) "$CASS/stop.sh" "$ADDR" "$DIR" >&2 || true ;;
  esac
  CURRENT=""; PID=""
}
trap stop EXIT

nodetool() {  # server args...
  local s="$1"; shift
  case "$s" in
    helenus) "$HELENUS" nodetool -h "$ADDR" "$@" ;;
    cassandra) "$CASS/nodetool.sh" "$ADDR" -- "$@" ;;
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

for s in $SERVERS; do
  start "$s" || { stop; continue; }
  log "$s: loading $N rows in $PARTS parts (threads=$THREADS)"
  load_ms=0; flush_ms=0; per=$(( N / PARTS ))
  for part in $(seq 1 "$PARTS"); do
    lo=$(( (part - 1) * per + 1 )); hi=$(( part == PARTS ? N : part * per ))
    t0=$(now_ms)
    "$STRESS" write n=$(( hi - lo + 1 )) no-warmup -pop seq="$lo..$hi" -node "$ADDR" -rate threads="$THREADS" \
      -json "$WORK/$s-load-$part.json" > "$WORK/$s-load-$part.log" 2>&1 \
      || log "$s: stress exited non-zero (see $WORK/$s-load-$part.log)"
    load_ms=$(( load_ms + $(now_ms) - t0 ))
    t0=$(now_ms); nodetool "$s" flush keyspace1 standard1 >/dev/null; flush_ms=$(( flush_ms + $(now_ms) - t0 ))
  done
  settle "$s"
  pre_bytes=$(table_bytes "$DIR"); pre_sstables=$(table_files "$DIR")
  log "$s: before major compaction: $pre_sstables sstables, $pre_bytes bytes"
  [ "$s" = cassandra ] && nodetool "$s" setcompactionthroughput "$THROUGHPUT" >/dev/null
  # The nodetool client's own start-up (a JVM for Cassandra's) is timed apart and subtracted.
  t0=$(now_ms); nodetool "$s" version >/dev/null 2>&1 || true; nodetool_ms=$(( $(now_ms) - t0 ))
  t0=$(now_ms); nodetool "$s" compact keyspace1 standard1 >/dev/null; compact_ms=$(( $(now_ms) - t0 ))
  compact_net_ms=$(( compact_ms > nodetool_ms ? compact_ms - nodetool_ms : 0 ))
  settle "$s"
  sleep 2  # Cassandra deletes obsolete files just after the transaction commits
  post_bytes=$(table_bytes "$DIR"); post_sstables=$(table_files "$DIR")
  log "$s: major compaction ${compact_ms} ms -> $post_sstables sstables, $post_bytes bytes"
  rss_kb=$(awk '/VmHWM/{print $2}' "/proc/$PID/status" 2>/dev/null || echo 0)
  printf '{"server":"%s","rows":%s,"load_ms":%s,"flush_ms":%s,"nodetool_startup_ms":%s,"compact_ms":%s,"compact_net_ms":%s,"pre_compact_bytes":%s,"pre_compact_sstables":%s,"post_compact_bytes":%s,"post_compact_sstables":%s,"peak_rss_kb":%s}\n' \
    "$s" "$N" "$load_ms" "$flush_ms" "$nodetool_ms" "$compact_ms" "$compact_net_ms" "$pre_bytes" "$pre_sstables" "$post_bytes" "$post_sstables" "${rss_kb:-0}" >> "$RESULTS"
  stop
done

python3 - "$RESULTS" "$OUT/$NAME" "$MODE" "$COMMIT" "$DATE" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out, mode, commit, date, cores = sys.argv[2:7]
by = {r["server"]: r for r in rows}
doc = {"benchmark": "storage", "mode": mode, "commit": commit, "date": date, "cores": int(cores),
       "workload": "helenus-stress write standard1, flush, nodetool compact keyspace1 standard1",
       "compaction_throughput_mib_s": int(__import__("os").environ.get("THROUGHPUT", "0")),
       "servers": by}
h, c = by.get("helenus"), by.get("cassandra")
keys = ["load_ms", "flush_ms", "nodetool_startup_ms", "compact_ms", "compact_net_ms",
        "pre_compact_bytes", "post_compact_bytes", "peak_rss_kb"]
if h and c:
    doc["ratios_helenus_over_cassandra"] = {k: (h[k] / c[k] if c[k] else None) for k in keys}
json.dump(doc, open(out + ".json", "w"), indent=2)
lines = [f"# Storage benchmark {date} ({commit}, {mode}, {cores} cores, machine not necessarily quiet)", "",
         "flush_ms includes one nodetool start-up per part (a JVM for Cassandra); compact_net_ms "
         "subtracts one measured nodetool start-up from compact_ms.", "",
         "| metric | " + " | ".join(by) + (" | helenus / cassandra |" if h and c else " |"),
         "|---|" + "---|" * len(by) + ("---|" if h and c else "")]
for k in ["rows"] + keys + ["pre_compact_sstables", "post_compact_sstables"]:
    cells = [str(by[s].get(k)) for s in by]
    ratio = ""
    if h and c:
        r = doc["ratios_helenus_over_cassandra"].get(k)
        ratio = f" {r:.2f} |" if isinstance(r, float) else " |"
    lines.append(f"| {k} | " + " | ".join(cells) + " |" + ratio)
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "wrote $OUT/$NAME.json and .md"
