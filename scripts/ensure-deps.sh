#!/usr/bin/env bash
# Install or check what building raftlane needs on a fresh Debian machine:
# a Rust toolchain, clang + libclang-dev for RocksDB's bindgen, and curl + python3, which the
# docker-compose test, the demo and the benchmark script use to talk to the cluster.
# Sourced by scripts/test.sh and scripts/demo.sh; safe to run again.
set -euo pipefail

missing=()
command -v clang >/dev/null 2>&1 || missing+=(clang)
if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1; then
  missing+=(libclang-dev)
fi
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> installing ${missing[*]} (needed to build RocksDB and to run the tests and the demo)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi

# One build directory outside the clone, shared by every checkout: RocksDB compiles once
# (about 15 minutes on 2 cores) and is reused by tests, the demo and CI.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/raftlane/target}"
mkdir -p "$CARGO_TARGET_DIR"
