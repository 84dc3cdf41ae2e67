#!/usr/bin/env bash
# Run every test (the README's second command; .ci/run calls it):
#   0. no committed secrets (scripts/check-secrets.sh);
#   1. the fresh-machine test: scripts/ensure-deps.sh in a bare Debian root (tests/fresh_machine.sh);
#   2. cargo fmt --check and cargo clippy on every target with warnings as errors;
#   3. the previous version's binary built (scripts/previous-build.sh, in a build directory of
#      its own, for the rolling-upgrade test), then cargo test of the whole workspace, on the release profile, so one RocksDB build serves
#      tests, the demo and the benchmarks (clippy runs on the release profile for the same reason:
#      it reuses the RocksDB build script's output instead of compiling RocksDB a second time);
#   4. the Python client's tests, including messagefoundry 0.1.0's own PostgreSQL-store suite run
#      against raftlane (clients/python/tests/messagefoundry, sdist and virtualenv cached in
#      ~/.cache/raftlane);
#   5. the three-node docker-compose failover test, then the operator's walk on a compose cluster
#      of its own (docs/OPERATIONS.md: replace a node, back up and restore), with the image the
#      first built (both skipped, with a note, where Docker is absent).
# Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-deps.sh
echo "==> build directory: $CARGO_TARGET_DIR"
# A build directory kept between runs gathers every past build of our own crates, and a full
# disk shows up as a linker killed by SIGBUS halfway through the tests. Below 20 GiB free, drop
# our crates' old builds (the dependencies, RocksDB's above all, stay) before building.
free_kib() { df -Pk "$CARGO_TARGET_DIR" | awk 'NR == 2 { print $4 }'; }
echo "    $(( $(free_kib) / 1048576 )) GiB free on the build directory's disk"
if [ "$(free_kib)" -lt $(( 20 * 1048576 )) ]; then
  echo "    under 20 GiB: removing old builds of the workspace's own crates"
  cargo metadata --no-deps --format-version 1 \
    | python3 -c 'import json, sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))' \
    | while read -r package; do cargo clean --release --quiet -p "$package"; done
  echo "    $(( $(free_kib) / 1048576 )) GiB free after"
fi
echo "==> no committed secrets (scripts/check-secrets.sh)"
bash scripts/check-secrets.sh
echo "==> fresh-machine test (ensure-deps.sh in a bare Debian root)"
bash tests/fresh_machine.sh
echo "==> cargo fmt --check"
cargo fmt --all --check
echo "==> cargo build (release; the first build compiles RocksDB, ~15 min on 2 cores)"
# Every binary: the chaos tests run `raftlane node` processes, and Cargo builds another
# package's binary for no test (the demo test's own binary it does build).
cargo build --release -p raftlane-node -p raftlane-demo -p raftlane-bench -p raftlane-chaos
echo "==> the previous version's raftlane, for the rolling-upgrade test (scripts/previous-build.sh)"
RAFTLANE_PREVIOUS_BIN="$(bash scripts/previous-build.sh)"
export RAFTLANE_PREVIOUS_BIN
echo "==> cargo clippy (every target, warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings
echo "==> cargo test (release profile)"
cargo test --release --workspace "$@"
echo "==> Python client and messagefoundry 0.1.0's store suite on raftlane (clients/python)"
RAFTLANE_BIN="$CARGO_TARGET_DIR/release/raftlane" bash clients/python/scripts/test.sh
echo "==> docker-compose cluster test"
bash tests/docker/compose_test.sh
echo "==> docker-compose operator's walk: replace a node, back up and restore (docs/OPERATIONS.md)"
RAFTLANE_CI_SKIP_BUILD=1 bash tests/docker/ops_walk.sh
