#!/usr/bin/env bash
# Real-client integration suites against a CQL node at HELENUS_HOST:HELENUS_PORT
# (default 127.0.0.1:9042). Usage: tests/clients/run.sh [python cqlsh rust go java node badinput hostile auth tls admin audit]
# The auth suite starts its own node with PasswordAuthenticator (HELENUS_AUTH_HOST, default 127.0.0.44;
# binary HELENUS_BIN or $CARGO_TARGET_DIR/release/helenus) and stops it by PID; so do tls
# (HELENUS_TLS_HOST, default 127.0.0.46) and admin (HELENUS_ADMIN_HOST, default 127.0.0.47),
# which also need openssl to make their throwaway certificates, and audit (HELENUS_AUDIT_HOST,
# default 127.0.0.49).
# Installs pinned clients on first use (cached: venv and cargo target under HELENUS_CACHE, Go
# module cache, ~/.m2, node_modules), runs each suite under a timeout, prints one summary line per
# suite and finally "N passed, N failed". Exits non-zero if any suite failed. Never reads stdin.
set -uo pipefail
exec < /dev/null
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export HELENUS_HOST="${HELENUS_HOST:-127.0.0.1}" HELENUS_PORT="${HELENUS_PORT:-9042}"
CACHE="${HELENUS_CACHE:-$HOME/.cache/helenus}"
VENV="$CACHE/venv"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
mkdir -p "$CACHE"

ALL=(python cqlsh rust go java node badinput hostile auth tls admin audit spark)
SUITES=("$@"); [ ${#SUITES[@]} -eq 0 ] && SUITES=("${ALL[@]}")

need() { command -v "$1" >/dev/null 2>&1 || { echo "missing tool: $1"; return 1; }; }

# Python venv shared by python, cqlsh and badinput; reinstalled only when requirements change.
setup_venv() {
  local req="$DIR/python/requirements.txt" stamp="$VENV/.helenus-requirements"
  if [ -x "$VENV/bin/python" ] && cmp -s "$req" "$stamp"; then return 0; fi
  need python3 || return 1
  [ -x "$VENV/bin/python" ] || timeout 300 python3 -m venv "$VENV" || return 1
  # Prefer the binary wheel (a Cython build of the driver takes many minutes on 2 cores);
  # fall back to the pure-Python build if no wheel matches this interpreter.
  if ! timeout 900 "$VENV/bin/pip" install -q --only-binary=cassandra-driver -r "$req"; then
    CASS_DRIVER_NO_CYTHON=1 timeout 900 "$VENV/bin/pip" install -q -r "$req" || return 1
  fi
  cp "$req" "$stamp"
}

suite_python()   { setup_venv && cd "$DIR/python" && timeout -k 10 900 "$VENV/bin/pytest" -q -p no:cacheprovider; }
suite_cqlsh()    { setup_venv && cd "$DIR/cqlsh" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider; }
suite_badinput() { setup_venv && cd "$DIR/badinput" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider; }
# Issue 11's hostile inputs; the admin API must be on HELENUS_HOST:10000.
suite_hostile()  { setup_venv && cd "$DIR/hostile" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider; }
# Issue 11's authentication and authorization, against a node of its own started with auth on.
suite_auth()     { setup_venv && cd "$DIR/auth" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider; }
# TLS for clients (driver, cqlsh, nodetool) and the admin API's credentials, on nodes of their own.
suite_tls()      { need openssl && setup_venv && cd "$DIR/security" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider test_tls.py; }
suite_admin()    { need openssl && setup_venv && cd "$DIR/security" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider test_admin_api.py; }
# The audit log: FileAuditLogger lines, keyspace and category filters, nodetool enable/disable.
suite_audit()    { setup_venv && cd "$DIR/security" && timeout -k 10 600 "$VENV/bin/pytest" -q -p no:cacheprovider test_audit.py; }
# The Helenus Spark source (connectors/spark) under pyspark 3.5, in a venv of its own (pyspark is
# 300 MB; bench/lib.sh's spark_install uses the same one).
setup_spark_venv() {
  local req="$DIR/spark/requirements.txt" venv="$CACHE/spark-venv"
  if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/.helenus-requirements"; then return 0; fi
  need python3 && need javac || return 1
  [ -x "$venv/bin/python" ] || timeout 300 python3 -m venv "$venv" || return 1
  timeout 1200 "$venv/bin/pip" install -q --only-binary=cassandra-driver -r "$req" || return 1
  cp "$req" "$venv/.helenus-requirements"
}
suite_spark() {
  setup_spark_venv || return 1
  local py="$CACHE/spark-venv/bin/python" jar
  jar="$(PYTHON="$py" timeout 300 "$DIR/../../connectors/spark/build.sh")" || return 1
  HELENUS_SPARK_JAR="$jar" HELENUS_BIN="${HELENUS_BIN:-$CARGO_TARGET_DIR/release/helenus}" \
    timeout -k 10 600 "$py" "$DIR/spark/test_source.py"
}
suite_rust() {
  need cargo && cd "$DIR/rust" && timeout -k 10 1800 cargo build -q --locked \
    && timeout -k 10 600 cargo run -q --locked
}
suite_go() {
  need go && cd "$DIR/go" && timeout -k 10 900 go test -mod=readonly -count=1 -timeout 300s -v ./...
}
suite_java() {
  need mvn && cd "$DIR/java" && timeout -k 10 1200 mvn -q -B -ntp -Dstyle.color=never compile exec:java
}
suite_node() {
  need npm && cd "$DIR/node" || return 1
  if [ ! -d node_modules/cassandra-driver ]; then
    timeout -k 10 600 npm ci --no-audit --no-fund --loglevel=error || return 1
  fi
  timeout -k 10 300 node --test --test-timeout=120000 client.test.js
}

passed=0; failed=0; summary=()
for s in "${SUITES[@]}"; do
  if ! declare -F "suite_$s" >/dev/null; then
    echo "unknown suite: $s (known: ${ALL[*]})"; failed=$((failed + 1)); summary+=("$s: FAILED (unknown suite)"); continue
  fi
  echo "=== client suite $s against $HELENUS_HOST:$HELENUS_PORT"
  t0=$SECONDS
  ( "suite_$s" ); rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); summary+=("$s: ok ($((SECONDS - t0)) s)")
  else
    failed=$((failed + 1)); summary+=("$s: FAILED (exit $rc, $((SECONDS - t0)) s)")
  fi
done
echo
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
