#!/usr/bin/env bash
# Run every test of the workspace (the README's second command; .ci/run calls it).
# Tests run on the release profile so one RocksDB build serves tests, demo and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
echo "==> build directory: $CARGO_TARGET_DIR"
echo "==> cargo test (release profile; the first build compiles RocksDB, ~15 min on 2 cores)"
cargo test --release --workspace "$@"
