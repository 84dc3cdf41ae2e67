#!/usr/bin/env bash
# Run every test (the README's second command; .ci/run calls it):
#   1. cargo test of the whole workspace, on the release profile, so one RocksDB build serves
#      tests, the demo and the benchmarks;
#   2. the three-node docker-compose failover test (skipped, with a note, where Docker is absent).
# Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
echo "==> build directory: $CARGO_TARGET_DIR"
echo "==> cargo build (release; the first build compiles RocksDB, ~15 min on 2 cores)"
cargo build --release -p raftlane-node
echo "==> cargo test (release profile)"
cargo test --release --workspace "$@"
echo "==> docker-compose cluster test"
bash tests/docker/compose_test.sh
