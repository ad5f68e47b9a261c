#!/usr/bin/env bash
# Client cost: helenus-stress against latte (the neutral load generator of ../shared/cassandra/), same
# server, same key-value workload, same fixed rate, one after the other. Measures each client's CPU
# (user + system, GNU time) per 1,000 operations, which is what "the tool must not be the bottleneck"
# means on a 2-core machine: every CPU second the client spends is taken from the server.
#   bench/client-cpu.sh            RATE=10000 DURATION=30 ROWS=100000 WORKLOADS="write read"
# Writes bench/results/client-cpu-<date>-<commit>.{json,md}. Needs latte: SKIP_LATTE=0 setup.sh of
# ../shared/cassandra (cargo install latte-cli, ~15 min once).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASS="${CASS_TOOLS:-/work/shared/cassandra}"
# shellcheck disable=SC1091
source "$CASS/lib.sh"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HELENUS="$TARGET_DIR/release/helenus"; STRESS="$TARGET_DIR/release/helenus-stress"
RATE="${RATE:-10000}"; DURATION="${DURATION:-30}"; ROWS="${ROWS:-100000}"
WORKLOADS="${WORKLOADS:-write read}"; ADDR="${ADDR:-127.0.0.46}"
[ -x "$LATTE_BIN" ] || { echo "latte not built ($LATTE_BIN): run $CASS/setup.sh without SKIP_LATTE" >&2; exit 1; }
[ -x "$HELENUS" ] && [ -x "$STRESS" ] || { echo "build first: cargo build --release --bins" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/helenus-client-cpu.XXXXXX")"
DATE="$(date -u +%Y%m%d-%H%M%S)"; COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"
OUT="$ROOT/bench/results/client-cpu-$DATE-$COMMIT"
log() { echo "[client-cpu $(date -u +%T)] $*" >&2; }

if (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null; then log "$ADDR:9042 is in use by another process"; exit 1; fi
"$HELENUS" server --listen-address "$ADDR" --native-transport-port 9042 --data-dir "$WORK/data" > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/$ADDR/9042") 2>/dev/null && break; sleep 0.1; done

# One measured client run: name, ops expected, command...; prints a JSON object.
measure() {
  local name="$1" ops="$2"; shift 2
  /usr/bin/time -f "%e %U %S" -o "$WORK/$name.time" "$@" > "$WORK/$name.log" 2>&1 \
    || { log "$name failed:"; tail -20 "$WORK/$name.log" >&2; return 1; }
  awk -v n="$name" -v ops="$ops" '{printf "{\"run\":\"%s\",\"wall_s\":%.2f,\"cpu_s\":%.2f,\"ops\":%d,\"cpu_ms_per_1k_ops\":%.3f}\n", n, $1, $2 + $3, ops, ($2 + $3) * 1000000 / ops}' "$WORK/$name.time"
}

LATTE_CONN=(--consistency ONE -c 1 "$ADDR")
LATTE_P=(-P rows="$ROWS" -P value_size=170 -P rf=1)
(cd "$WORK" && "$LATTE_BIN" schema "$CASS/workloads/kv.rn" "${LATTE_P[@]}" "${LATTE_CONN[@]}" > latte-schema.log 2>&1)
(cd "$WORK" && "$LATTE_BIN" load -q "$CASS/workloads/kv.rn" "${LATTE_P[@]}" "${LATTE_CONN[@]}" > latte-load.log 2>&1)
"$STRESS" write n="$ROWS" cl=ONE quiet -pop seq=1.."$ROWS" -node "$ADDR" -rate threads=64 > "$WORK/stress-load.log" 2>&1

OPS=$((RATE * DURATION))
: > "$WORK/runs.jsonl"
for wl in $WORKLOADS; do
  log "latte $wl: $RATE op/s for ${DURATION}s"
  (cd "$WORK" && measure "latte-$wl" "$OPS" "$LATTE_BIN" run -q -w 0s -d "${DURATION}s" -t 1 -p 128 -r "$RATE" \
    -f "$wl" "$CASS/workloads/kv.rn" "${LATTE_P[@]}" "${LATTE_CONN[@]}") >> "$WORK/runs.jsonl"
  # latte runs one thread (-t 1); helenus-stress likewise with one runtime thread, then with its
  # former default two, so the cost of cross-thread wake-ups stays on record.
  log "helenus-stress $wl (1 client thread): $RATE op/s for ${DURATION}s"
  measure "helenus-stress-$wl" "$OPS" "$STRESS" "$wl" duration="${DURATION}s" cl=ONE quiet \
    -pop "dist=UNIFORM(1..$ROWS)" -node "$ADDR" -rate threads=64 fixed="$RATE/s" -mode clientThreads=1 >> "$WORK/runs.jsonl"
  log "helenus-stress $wl (2 client threads): $RATE op/s for ${DURATION}s"
  measure "helenus-stress-2t-$wl" "$OPS" "$STRESS" "$wl" duration="${DURATION}s" cl=ONE quiet \
    -pop "dist=UNIFORM(1..$ROWS)" -node "$ADDR" -rate threads=64 fixed="$RATE/s" -mode clientThreads=2 >> "$WORK/runs.jsonl"
done

python3 - "$WORK/runs.jsonl" "$OUT" "$RATE" "$DURATION" "$LATTE_VERSION" "$COMMIT" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out, rate, dur, latte, commit = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
doc = {"rate_ops_s": rate, "duration_s": dur, "latte_version": latte, "commit": commit, "runs": runs}
json.dump(doc, open(out + ".json", "w"), indent=2)
by = {r["run"]: r for r in runs}
lines = ["# Client CPU per 1,000 operations: helenus-stress vs latte %s" % latte, "",
         "Same Helenus node, same key-value workload (170-byte values), %d op/s for %d s, client CPU = user + system." % (rate, dur), "",
         "| workload | latte (1 thread) | helenus-stress, 1 client thread | ratio | helenus-stress, 2 client threads | ratio |",
         "|---|---:|---:|---:|---:|---:|"]
ratio = lambda b, a: b["cpu_ms_per_1k_ops"] / a["cpu_ms_per_1k_ops"] if a["cpu_ms_per_1k_ops"] else float("nan")
for wl in ("write", "read", "mixed"):
    a, b, c = by.get("latte-" + wl), by.get("helenus-stress-" + wl), by.get("helenus-stress-2t-" + wl)
    if a and b and c:
        lines.append("| %s | %.1f | %.1f | %.2f | %.1f | %.2f |" % (wl, a["cpu_ms_per_1k_ops"], b["cpu_ms_per_1k_ops"],
                     ratio(b, a), c["cpu_ms_per_1k_ops"], ratio(c, a)))
lines += ["", "Values are client CPU milliseconds per 1,000 operations (user + system, GNU time over the whole run)."]
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "results: $OUT.{json,md}"
