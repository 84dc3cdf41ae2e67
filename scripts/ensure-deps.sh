#!/usr/bin/env bash
# Install or check what building and testing raftlane needs on a fresh Debian machine.
# Sourced by scripts/test.sh and scripts/demo.sh; safe to run again; also runnable on its own:
#
#   scripts/ensure-deps.sh            # system packages, then the Rust toolchain check
#   scripts/ensure-deps.sh --system   # system packages only (tests/fresh_machine.sh uses this
#                                     # inside a bare Debian root that has no Rust)
#
# Why each check is exact: a heuristic once decided libclang was present because *some*
# `libclang*.so*` existed. Installing `clang` brings `libclang-14.so.1` and
# `libclang-cpp.so.14`, which matched the pattern, yet bindgen's loader (the clang-sys crate)
# looks only for an unversioned `libclang.so` or `libclang-<N>.so`, which only the -dev package
# ships; the build then panicked in clang-sys. So packages are checked by `dpkg -s` (the
# package is installed, not merely some file that resembles it) and, as a second guard, the
# exact file clang-sys loads must exist after installation.
set -euo pipefail

_raftlane_system_only=0
[ "${1:-}" = "--system" ] && _raftlane_system_only=1

# Debian packages, one per tool the two README commands and the tests use:
#   libclang-dev    bindgen (RocksDB's bindings) loads libclang.so at build time
#   g++, make       librocksdb-sys and lz4-sys compile C/C++ through the cc crate
#   pkg-config      probed by -sys build scripts
#   curl, python3   the demo, the docker-compose test and scripts/bench.sh talk HTTP/JSON
#   python3-venv    the Python client's tests run in a virtualenv (~/.cache/raftlane/venv)
#   ca-certificates cargo and pip reach crates.io / PyPI over TLS
#   docker-compose  the compose test, only where a docker engine is present (the engine itself
#                   is the machine's; without it the compose test says SKIP)
_raftlane_packages=(libclang-dev g++ make pkg-config curl python3 python3-venv ca-certificates)
if command -v docker >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  _raftlane_packages+=(docker-compose)
fi

# A package counts as present only when dpkg says "install ok installed"; a tool found on PATH
# outside dpkg (a pyenv python3, a hand-installed docker) also counts, so nothing is
# reinstalled over it.
_raftlane_present() {
  local pkg="$1"
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    return 0
  fi
  case "$pkg" in
    curl|python3|make|pkg-config|docker-compose) command -v "$pkg" >/dev/null 2>&1 ;;
    g++) command -v g++ >/dev/null 2>&1 ;;
    python3-venv) command -v python3 >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' 2>/dev/null ;;
    *) return 1 ;;
  esac
}

# The file clang-sys accepts: libclang.so or libclang-<version>.so (no trailing .so.N), in the
# directories it searches on Debian (or $LIBCLANG_PATH when the user points it elsewhere).
raftlane_libclang_file() {
  local dir f
  for dir in ${LIBCLANG_PATH:-} /usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib; do
    for f in "$dir"/libclang.so "$dir"/libclang-*.so; do
      if [ -e "$f" ]; then
        echo "$f"
        return 0
      fi
    done
  done
  return 1
}

_raftlane_missing=()
for _p in "${_raftlane_packages[@]}"; do
  _raftlane_present "$_p" || _raftlane_missing+=("$_p")
done
if [ "${#_raftlane_missing[@]}" -gt 0 ]; then
  echo "==> installing ${_raftlane_missing[*]} (needed to build RocksDB and to run the tests and the demo)"
  if [ "$(id -u)" -ne 0 ]; then _raftlane_sudo=sudo; else _raftlane_sudo=; fi
  $_raftlane_sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $_raftlane_sudo apt-get install -y -qq --no-install-recommends \
    "${_raftlane_missing[@]}" >/dev/null
fi

if ! _raftlane_libclang="$(raftlane_libclang_file)"; then
  echo "error: libclang-dev is installed but no libclang.so / libclang-<N>.so was found;" >&2
  echo "       set LIBCLANG_PATH to the folder that holds it" >&2
  exit 1
fi
echo "==> native prerequisites present (libclang: $_raftlane_libclang)"

if [ "$_raftlane_system_only" = "1" ]; then
  return 0 2>/dev/null || exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi

# scripts/test.sh checks formatting and lints; rustup-managed toolchains may lack the two tools.
for _c in rustfmt clippy; do
  _bin="$_c"; [ "$_c" = clippy ] && _bin=cargo-clippy
  if ! command -v "$_bin" >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      echo "==> installing the Rust component $_c"
      rustup component add "$_c"
    else
      echo "error: $_bin not found and no rustup to install it" >&2
      exit 1
    fi
  fi
done

# One build directory outside the clone, shared by every checkout: RocksDB compiles once
# (about 15 minutes on 2 cores) and is reused by tests, the demo and CI.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/raftlane/target}"
mkdir -p "$CARGO_TARGET_DIR"
