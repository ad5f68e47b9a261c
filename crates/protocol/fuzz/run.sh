#!/usr/bin/env bash
# Usage: crates/protocol/fuzz/run.sh SECONDS
# Runs the decode_frame fuzz target for 3/4 of SECONDS (default 60) and segment_roundtrip (v5
# segment writer -> reader) for the rest; installs cargo-fuzz if missing. Exits non-zero if
# libFuzzer finds a crash (artifacts land in fuzz/artifacts/<target>/).
# cargo-fuzz needs nightly flags (-Zsanitizer); RUSTC_BOOTSTRAP=1 unlocks them on stable.
set -euo pipefail
secs="${1:-60}"
cd "$(dirname "$0")"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
if [ -z "$(ls -A corpus/decode_frame 2>/dev/null)" ]; then
    # Seed with one valid frame per version/mode/message (written by an ignored test).
    FUZZ_SEED_DIR="$PWD/corpus/decode_frame" cargo test --manifest-path ../Cargo.toml \
        --test corrupt -- --ignored write_fuzz_seeds --exact
fi
mkdir -p corpus/decode_frame
# -j1 / 2 GiB RSS: the build machine has 2 shared cores.
RUSTC_BOOTSTRAP=1 cargo fuzz run decode_frame corpus/decode_frame -- \
    -max_total_time="$((secs * 3 / 4))" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
mkdir -p corpus/segment_roundtrip
RUSTC_BOOTSTRAP=1 cargo fuzz run segment_roundtrip corpus/segment_roundtrip -- \
    -max_total_time="$((secs - secs * 3 / 4))" -rss_limit_mb=2048 -max_len=512 \
    -print_final_stats=1
