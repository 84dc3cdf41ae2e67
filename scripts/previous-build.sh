#!/usr/bin/env bash
# Build the `raftlane` binary of the previous version, for the rolling-upgrade test
# (chaos/tests/rolling_upgrade.rs, docs/OPERATIONS.md "Rolling upgrade"), and print its path.
#
# The previous version is the commit named in tests/upgrade/previous-commit: the last build
# before log format 2, which reads format 1 only. Its source is taken from this clone's history
# (`git archive`, no network) into ~/.cache/raftlane/previous/<commit>/src and built there in a
# build directory of its own (~/.cache/raftlane/target-previous: Cargo names a workspace crate's
# artifacts by its path inside the workspace, so two versions in one build directory overwrite
# each other's and may each take the other's for fresh). RocksDB is not compiled again: the
# RocksDB library this version's build made ($CARGO_TARGET_DIR, built first) is linked in
# (ROCKSDB_LIB_DIR; both versions lock the same RocksDB). The binary is copied to
# ~/.cache/raftlane/previous/<commit>/raftlane and reused by later runs.
#
#   scripts/previous-build.sh          # prints the binary's path (progress on stderr)
set -euo pipefail
cd "$(dirname "$0")/.."
commit="$(tr -d '[:space:]' < tests/upgrade/previous-commit)"
cache="${RAFTLANE_CACHE:-$HOME/.cache/raftlane}/previous/$commit"
binary="$cache/raftlane"
if [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "previous-build: commit $commit is not in this clone's history (a shallow clone?);" >&2
  echo "  fetch it (git fetch --unshallow) and run again" >&2
  exit 1
fi
: "${CARGO_TARGET_DIR:=$HOME/.cache/raftlane/target}"
export CARGO_TARGET_DIR
previous_target="${RAFTLANE_CACHE:-$HOME/.cache/raftlane}/target-previous"
rocksdb_lib="$(find "$CARGO_TARGET_DIR/release/build" -path '*librocksdb-sys-*/out/librocksdb.a' 2>/dev/null | head -n 1)"
rm -rf "$cache/src"
mkdir -p "$cache/src"
git archive "$commit" | tar -x -C "$cache/src"
if [ -n "$rocksdb_lib" ]; then
  export ROCKSDB_LIB_DIR="${rocksdb_lib%/*}" ROCKSDB_STATIC=1
  echo "previous-build: building raftlane at ${commit:0:12} with RocksDB from $ROCKSDB_LIB_DIR (~8 min)" >&2
else
  echo "previous-build: building raftlane at ${commit:0:12}, RocksDB included (no build of it in $CARGO_TARGET_DIR yet; ~25 min)" >&2
fi
(cd "$cache/src" && CARGO_TARGET_DIR="$previous_target" cargo build --release --locked -p raftlane-node --bin raftlane >&2)
cp "$previous_target/release/raftlane" "$binary.tmp"
mv "$binary.tmp" "$binary"
rm -rf "$cache/src"
echo "$binary"
