#!/usr/bin/env bash
# Replays the differential CQL corpus against a running node and prints the match rate per family.
# Used by tests/run-all.sh. Environment: HELENUS_HOST / HELENUS_PORT (node to check, default 127.0.0.1:9042),
# CORPUS_MIN_RATE (fail when the hand-made families match below this rate, default 0), CORPUS_CU_MIN_RATE (the
# floor of the cu_* families converted from Cassandra's own unit tests: the rate last measured against Helenus
# rounded down to 5 %, a ratchet; see README.md), CORPUS_REPORT (JSON report path),
# CORPUS_ARGS (extra corpus.py arguments, e.g. "--family lwt -v").
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$("$HERE/setup.sh")"
REPORT="${CORPUS_REPORT:-${HELENUS_CACHE:-$HOME/.cache/helenus}/corpus-report.json}"
mkdir -p "$(dirname "$REPORT")"
# shellcheck disable=SC2086 # CORPUS_ARGS is a list of arguments on purpose
"$PY" "$HERE/corpus.py" check --host "${HELENUS_HOST:-127.0.0.1}" --port "${HELENUS_PORT:-9042}" \
  --min-rate "${CORPUS_MIN_RATE:-0}" --group-floor "cu_=${CORPUS_CU_MIN_RATE:-0.95}" --report "$REPORT" --quiet --timeout 20 --deadline "${CORPUS_DEADLINE:-1000}" ${CORPUS_ARGS:-}
echo "corpus report: $REPORT"
# PREPARED metadata (bind markers' names and types, result columns, routing) as drivers see it.
"$PY" "$HERE/prepared/prepared.py" check --host "${HELENUS_HOST:-127.0.0.1}" --port "${HELENUS_PORT:-9042}"
