#!/bin/bash
# Peak RSS growth per resource probe, each on a fresh node (README "Resource bounds").
# usage: tests/clients/hostile/measure_bounds.sh HELENUS_BINARY 127.0.0.x   (run from the repo root)
PY=${PYTHON:-$HOME/.cache/helenus/venv/bin/python}
BIN=$(realpath "$1"); IP=$2; D=/tmp/helenus-bounds-probe-$IP
for k in unread unfinished admin_requests slow_statements huge_bound_list; do
  rm -rf $D; mkdir -p $D
  $BIN server --listen-address $IP --data-dir $D/data > $D.log 2>&1 &
  PID=$!; sleep 2
  out=$(cd "$(dirname "$0")" && HELENUS_HOST=$IP HELENUS_PID=$PID timeout 120 $PY -m pytest -s -q test_hostile.py -k $k 2>&1)
  echo "$k: $(echo "$out" | grep -oE 'peak RSS growth [0-9]+ MiB \(peak [0-9]+ MiB\)' | head -1) $(echo "$out" | grep -oE 'third client.s latencies \[[0-9.]+' | head -1) $(echo "$out" | tail -1)"
  kill $PID; wait $PID 2>/dev/null
done
