#!/usr/bin/env bash
# The main job (README's first command): build raftlane-demo, start a local three-node cluster,
# push a demo workload through the whole pipeline, print a summary, and keep the cluster
# running for your own curl session until Ctrl-C.
#
# Options are passed to `raftlane-demo` (after --fresh), e.g. --base-port 8001 --demo-messages 600
# or --exit-after-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
echo "==> building raftlane-demo (release; the first build compiles RocksDB, ~15 min on 2 cores)"
cargo build --release -p raftlane-demo
exec "$CARGO_TARGET_DIR/release/raftlane-demo" --fresh "$@"
