#!/usr/bin/env bash
# The differential CQL corpus again, on a node whose user tables are stored in the columnar layout
# (issue 15: "a columnar table passes the same CQL corpus families as a row table"). The node runs with
# `default_table_layout: columnar`, so every table the scripts create is columnar while its schema, DESCRIBE
# and system_schema rows stay as the scripts wrote them (the goldens are Cassandra's); aggregates and
# projections go through the column scans. Used by tests/run-all.sh, with the same floors as the row node.
# Environment: HELENUS_BIN (the binary; default $CARGO_TARGET_DIR/release/helenus), HELENUS_COLUMNAR_HOST
# (127.0.0.6), and check.sh's (CORPUS_MIN_RATE, CORPUS_CU_MIN_RATE, CORPUS_ARGS).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${HELENUS_BIN:-${CARGO_TARGET_DIR:-$HERE/../../target}/release/helenus}"
HOST="${HELENUS_COLUMNAR_HOST:-127.0.0.6}"
DIR="$(mktemp -d "${TMPDIR:-/tmp}/helenus-columnar-corpus.XXXXXX")"
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill "$PID" 2>/dev/null; sleep 1; kill -9 "$PID" 2>/dev/null || true
  fi
  rm -rf "$DIR"
}
trap cleanup EXIT
printf 'default_table_layout: columnar\n' > "$DIR/helenus.yaml"
"$BIN" server --config "$DIR/helenus.yaml" --listen-address "$HOST" --rpc-address "$HOST" \
  --native-transport-port 9042 --data-dir "$DIR/node" > "$DIR/node.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  (echo > "/dev/tcp/$HOST/9042") 2>/dev/null && break
  kill -0 "$PID" 2>/dev/null || { echo "node did not start:"; tail -30 "$DIR/node.log"; exit 1; }
  sleep 0.1
done
HELENUS_HOST="$HOST" HELENUS_PORT=9042 \
  CORPUS_REPORT="${CORPUS_REPORT:-${HELENUS_CACHE:-$HOME/.cache/helenus}/corpus-columnar-report.json}" \
  "$HERE/check.sh"
kill -0 "$PID" 2>/dev/null || { echo "node died during the corpus:"; tail -30 "$DIR/node.log"; exit 1; }
