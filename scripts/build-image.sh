#!/usr/bin/env bash
# Build the raftlane container image FROM scratch, without pulling any base image:
#   1. build the release binary on the host (cargo, shared RocksDB build directory);
#   2. assemble a build context: the binary (debug info stripped), every shared library `ldd`
#      lists and the dynamic loader, at the same paths, plus an empty /data;
#   3. docker build -t "$IMAGE" (default raftlane:dev) with docker/Dockerfile.
#
# Usage: scripts/build-image.sh [--no-cargo]
#   IMAGE=raftlane:dev        image tag
#   RAFTLANE_STRIP=debug      debug (keep symbol names for backtraces), all, or none
#   --no-cargo                reuse the binary already in $CARGO_TARGET_DIR/release
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-raftlane:dev}"
STRIP_MODE="${RAFTLANE_STRIP:-debug}"
RUN_CARGO=1
for arg in "$@"; do
  case "$arg" in
    --no-cargo) RUN_CARGO=0 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

command -v docker >/dev/null 2>&1 || { echo "error: docker not found" >&2; exit 1; }

# clang/libclang for RocksDB's bindgen, cargo, and CARGO_TARGET_DIR (default
# ~/.cache/raftlane/target, shared with tests so RocksDB compiles once).
# shellcheck source=scripts/ensure-deps.sh
source scripts/ensure-deps.sh

BIN="$CARGO_TARGET_DIR/release/raftlane"
if [ "$RUN_CARGO" = 1 ]; then
  echo "==> cargo build --release -p raftlane-node (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  cargo build --release -p raftlane-node
fi
[ -x "$BIN" ] || { echo "error: $BIN not found (run without --no-cargo)" >&2; exit 1; }

CTX="$CARGO_TARGET_DIR/docker-context"
echo "==> assembling the build context in $CTX"
rm -rf "$CTX"
mkdir -p "$CTX/rootfs/etc" "$CTX/data"
cp docker/Dockerfile "$CTX/Dockerfile"

case "$STRIP_MODE" in
  debug) objcopy --strip-debug "$BIN" "$CTX/rootfs/raftlane" ;;
  all) strip -o "$CTX/rootfs/raftlane" "$BIN" ;;
  none) cp "$BIN" "$CTX/rootfs/raftlane" ;;
  *) echo "error: RAFTLANE_STRIP must be debug, all or none" >&2; exit 2 ;;
esac
chmod 0755 "$CTX/rootfs/raftlane"

# ldd lines look like "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
# "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file. Copy each at the path
# ldd shows (the loader's default search path), dereferencing symlinks.
libs=$(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
if ldd "$BIN" | grep -q "not found"; then
  ldd "$BIN" >&2
  echo "error: a shared library of $BIN is missing" >&2
  exit 1
fi
for lib in $libs; do
  mkdir -p "$CTX/rootfs$(dirname "$lib")"
  cp -L "$lib" "$CTX/rootfs$lib"
  echo "    $lib"
done
# glibc >= 2.34 has the files and dns NSS modules built in; say the order explicitly.
printf 'hosts: files dns\n' > "$CTX/rootfs/etc/nsswitch.conf"

echo "==> binary $(du -h "$CTX/rootfs/raftlane" | cut -f1) (strip: $STRIP_MODE), context $(du -sh "$CTX" | cut -f1)"

# No buildx plugin: use the classic builder explicitly (the Dockerfile needs nothing newer).
if ! docker buildx version >/dev/null 2>&1; then
  export DOCKER_BUILDKIT=0
fi
echo "==> docker build -t $IMAGE"
docker build -q -t "$IMAGE" "$CTX" >/dev/null
docker image ls "$IMAGE" --format '==> built {{.Repository}}:{{.Tag}} {{.ID}} ({{.Size}})'
