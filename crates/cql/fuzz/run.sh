#!/usr/bin/env bash
# Usage: crates/cql/fuzz/run.sh SECONDS
# Runs the CQL parser fuzz target for SECONDS (default 30), seeded with the statements of the
# differential corpus (tests/corpus/scripts); installs cargo-fuzz if missing. Exits non-zero if
# libFuzzer finds a crash (artifacts land in fuzz/artifacts/parse/).
# cargo-fuzz needs nightly flags (-Zsanitizer); RUSTC_BOOTSTRAP=1 unlocks them on stable.
set -euo pipefail
secs="${1:-30}"
cd "$(dirname "$0")"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
mkdir -p corpus/parse
if [ -z "$(ls -A corpus/parse 2>/dev/null)" ]; then
    # One seed per corpus script: real statements of every family, DDL to JSON to LWT.
    find ../../../tests/corpus/scripts -name '*.cql' | head -3000 | while read -r f; do
        cp "$f" "corpus/parse/$(basename "$(dirname "$f")")-$(basename "$f")"
    done
fi
# -j1 / 2 GiB RSS: the build machine has 2 shared cores.
RUSTC_BOOTSTRAP=1 cargo fuzz run parse corpus/parse -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 -max_len=8192 \
    -print_final_stats=1
