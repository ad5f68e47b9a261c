#!/usr/bin/env bash
# Process-level cluster tests (issue 12): real `helenus server` processes started with
# `helenus cluster` on 127.0.0.81-88, driven by the Python driver (tests/cluster/*.py).
#   phase 1: 3 nodes (127.0.0.81-83, datacenter1) shared by test_1..test_9 (drivers' view,
#            replication, SIGSTOP, kill -9, LWT, counters, a network partition, repair, and last
#            a fourth node, 127.0.0.84, bootstrapping into the ring under load, then leaving);
#            then the client suites against the ring (CLUSTER_CLIENT_SUITES; default all drivers);
#   phase 2: 4 nodes in two data centers (127.0.0.85-88, dc1/dc2) for test_dcs.py
#            (skip with HELENUS_CLUSTER_SKIP_DCS=1);
#   phase 3: 3 nodes (127.0.0.81-83) with PasswordAuthenticator and CassandraAuthorizer for
#            test_auth_ring.py, roles replicated across the ring (skip: HELENUS_CLUSTER_SKIP_AUTH=1);
#   phase 4: 3 nodes (127.0.0.81-83) for test_10_replace.py: node3 killed and replaced by a node
#            on 127.0.0.84 (--replace-address), then a node added on .85 and node2 killed and
#            removed (nodetool removenode) (skip: HELENUS_CLUSTER_SKIP_REPLACE=1);
#   phase 5: 3 nodes (127.0.0.81-83) for test_11_streaming.py: netstats and setstreamthroughput
#            while a node joins (.84) and leaves at 1 MiB/s; then test_13_resume.py: a node
#            joining on .85 whose only source for some ranges is killed fails, and
#            `nodetool bootstrap resume` finishes it (skip: HELENUS_CLUSTER_SKIP_STREAMS=1);
#   phase 6: 3 nodes (127.0.0.81-83) for test_12_ops.py: rebuild, one topology change at a time
#            (a node joining on .84, one refused on .85) and repair history
#            (skip: HELENUS_CLUSTER_SKIP_OPS=1).
# HELENUS_CLUSTER_SKIP_MAIN=1 skips phase 1 (to run only a later phase); HELENUS_CLUSTER_FIRST moves
# every phase's nodes (default 127.0.0.81: phase 2 starts 4 addresses after it, nodes a phase adds
# take the next free addresses), so two runs can share the machine on different addresses.
# Builds nothing: the binary is $HELENUS_BIN (default $CARGO_TARGET_DIR/release/helenus). Every
# cluster is cleared on exit (trap), every step has a timeout. Extra pytest args pass through
# (e.g. tests/cluster/run.sh -k kill). HELENUS_CLUSTER_LOGS=DIR keeps the nodes' logs there.
set -uo pipefail
exec < /dev/null
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${HELENUS_CACHE:-$HOME/.cache/helenus}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
export HELENUS_BIN="${HELENUS_BIN:-$CARGO_TARGET_DIR/release/helenus}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
VENV="$CACHE/venv"
T0=$SECONDS

[ -x "$HELENUS_BIN" ] || { echo "no helenus binary at $HELENUS_BIN (cargo build --release --bin helenus)"; exit 1; }

# The venv the client suites use (tests/clients/run.sh); created here only if missing.
if [ ! -x "$VENV/bin/pytest" ]; then
  timeout 300 python3 -m venv "$VENV" || exit 1
  req="$HERE/../clients/python/requirements.txt"
  timeout 900 "$VENV/bin/pip" install -q --only-binary=cassandra-driver -r "$req" \
    || CASS_DRIVER_NO_CYTHON=1 timeout 900 "$VENV/bin/pip" install -q -r "$req" || exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/helenus-cluster-test.XXXXXX")"
clear_cluster() {  # clear_cluster DIR: stop every node (SIGCONT, SIGTERM, then SIGKILL by pid)
  local dir="$1"
  [ -f "$dir/cluster.txt" ] || return 0
  if [ -n "${HELENUS_CLUSTER_LOGS:-}" ]; then
    mkdir -p "$HELENUS_CLUSTER_LOGS"
    for log in "$dir"/node*/log; do
      [ -f "$log" ] && cp "$log" "$HELENUS_CLUSTER_LOGS/$(basename "$dir")-$(basename "$(dirname "$log")").log"
    done
  fi
  timeout 120 "$HELENUS_BIN" cluster --dir "$dir" clear >/dev/null 2>&1 && return 0
  for pidfile in "$dir"/node*/pid; do
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null; [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$dir"
}
cleanup() {
  for d in "$WORK"/c3 "$WORK"/dcs "$WORK"/auth "$WORK"/rp "$WORK"/st "$WORK"/ops; do clear_cluster "$d"; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

show_logs() {
  for log in "$1"/node*/log; do
    [ -f "$log" ] || continue
    echo "--- $log (last 25 lines)"; tail -25 "$log"
  done
}

FIRST="${HELENUS_CLUSTER_FIRST:-127.0.0.81}"
plus4() {  # the address 4 after $1 (a.b.c.d -> a.b.c.d+4)
  local head="${1%.*}" last="${1##*.}"; echo "$head.$((last + 4))"
}
failed=0
phase() {  # phase NAME DIR COUNT FIRST_ADDRESS START_ARGS LIMIT_S TEST_FILES... [-- PYTEST ARGS]
  local name="$1" dir="$2" count="$3" first="$4" start_args="$5" limit="$6"; shift 6
  local t0=$SECONDS
  echo "--- $name: starting $count nodes from $first"
  # shellcheck disable=SC2086
  if ! timeout 240 "$HELENUS_BIN" cluster --dir "$dir" start "$count" --first-address "$first" $start_args \
      -- --set commitlog_sync=batch --set fault_injection_enabled=true ${NODE_SETTINGS:-}; then
    echo "--- $name: the cluster did not start"; show_logs "$dir"; failed=1; clear_cluster "$dir"; return
  fi
  echo "--- $name: up in $((SECONDS - t0)) s"
  if ! (cd "$HERE" && HELENUS_CLUSTER_DIR="$dir" timeout -k 10 "$limit" \
      "$VENV/bin/pytest" -q -p no:cacheprovider -rxXfE "$@"); then
    failed=1; show_logs "$dir"
  fi
  if [ -n "${CLIENT_SUITES:-}" ]; then
    # The client suites written for one node, against the ring: drivers spread over its nodes.
    # shellcheck disable=SC2086
    if ! HELENUS_HOST="$first" HELENUS_PORT=9042 timeout -k 10 600 "$HERE/../clients/run.sh" $CLIENT_SUITES; then
      failed=1; show_logs "$dir"
    fi
  fi
  clear_cluster "$dir"
  echo "--- $name: $((SECONDS - t0)) s"
}

if [ "${HELENUS_CLUSTER_SKIP_MAIN:-0}" != 1 ]; then
CLIENT_SUITES="${CLUSTER_CLIENT_SUITES-python cqlsh rust go java node}" \
  phase "3 nodes" "$WORK/c3" 3 "$FIRST" "" 600 test_1_drivers.py test_2_replication.py test_3_pause.py test_4_kill.py test_5_lwt.py test_6_counters.py test_7_partition.py test_8_repair.py test_14_column_scan.py test_9_bootstrap.py "$@"
fi
if [ "${HELENUS_CLUSTER_SKIP_DCS:-0}" != 1 ]; then
  CLIENT_SUITES="" phase "2 data centers" "$WORK/dcs" 4 "$(plus4 "$FIRST")" "--dcs 2" 240 test_dcs.py "$@"
fi
if [ "${HELENUS_CLUSTER_SKIP_AUTH:-0}" != 1 ]; then
  CLIENT_SUITES="" NODE_SETTINGS="--set authenticator=PasswordAuthenticator --set authorizer=CassandraAuthorizer" \
    phase "3 nodes with authentication" "$WORK/auth" 3 "$FIRST" "" 240 test_auth_ring.py "$@"
fi
if [ "${HELENUS_CLUSTER_SKIP_REPLACE:-0}" != 1 ]; then
  CLIENT_SUITES="" phase "replace and removenode" "$WORK/rp" 3 "$FIRST" "" 300 test_10_replace.py "$@"
fi
if [ "${HELENUS_CLUSTER_SKIP_STREAMS:-0}" != 1 ]; then
  CLIENT_SUITES="" phase "streaming" "$WORK/st" 3 "$FIRST" "" 400 test_11_streaming.py test_13_resume.py "$@"
fi
if [ "${HELENUS_CLUSTER_SKIP_OPS:-0}" != 1 ]; then
  CLIENT_SUITES="" phase "topology operations" "$WORK/ops" 3 "$FIRST" "" 420 test_12_ops.py "$@"
fi
echo "cluster tests: $([ $failed -eq 0 ] && echo ok || echo FAILED) in $((SECONDS - T0)) s"
exit $failed
