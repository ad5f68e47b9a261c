#!/usr/bin/env bash
# Creates (idempotently) the Python venv the differential corpus runner uses.
# The venv lives outside the repo so nothing binary gets committed.
set -euo pipefail
VENV="${HELENUS_CACHE:-$HOME/.cache/helenus}/corpus-venv"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import cassandra, sys; sys.exit(0 if cassandra.__version__.startswith("3.30") else 1)' 2>/dev/null; then
  # The driver's C extensions take minutes to compile on 2 cores and are not needed here.
  CASS_DRIVER_NO_EXTENSIONS=1 CASS_DRIVER_NO_CYTHON=1 \
    "$VENV/bin/pip" install --quiet 'cassandra-driver>=3.30,<3.31'
fi
echo "$VENV/bin/python"
