#!/usr/bin/env bash
# Usage: crates/server/fuzz/run.sh SECONDS
# Runs the planning (type-checker) fuzz target for SECONDS (default 30): statement text prepared
# against a fixed schema, seeded with the differential corpus's statements (tests/corpus/scripts,
# one statement per seed). Exits non-zero if libFuzzer finds a crash, a hang over 10 s or an
# allocation over 512 MiB (artifacts land in fuzz/artifacts/plan/).
# cargo-fuzz needs nightly flags (-Zsanitizer); RUSTC_BOOTSTRAP=1 unlocks them on stable.
set -euo pipefail
secs="${1:-30}"
cd "$(dirname "$0")"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
mkdir -p corpus/plan
if [ -z "$(ls -A corpus/plan 2>/dev/null)" ]; then
    # Statements of every family, with their keyspace names pointed at the fuzz schema's.
    find ../../../tests/corpus/scripts -name '*.cql' | sort | awk 'NR % 4 == 0' | while read -r f; do
        grep -E '^(SELECT|INSERT|UPDATE|DELETE|BEGIN|CREATE|ALTER|DROP|GRANT|LIST)' "$f" | head -10 \
            | sed -E 's/\b(c_[a-z_0-9]+|cu_[0-9a-f]+)\b/fz/g' \
            | split -l 1 - "corpus/plan/$(basename "$(dirname "$f")")-$(basename "$f" .cql)-" || true
    done
fi
RUSTC_BOOTSTRAP=1 cargo fuzz run plan corpus/plan -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 -max_len=8192 \
    -print_final_stats=1
