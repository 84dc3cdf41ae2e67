#!/usr/bin/env bash
# Fresh-machine test: scripts/ensure-deps.sh, run in a bare Debian root, must install everything
# the build's native side and the test scripts need. It fails when an install step is missing.
#
#   1. debootstrap a minimal Debian bookworm root (cached as a tarball outside the clone, so only
#      the first run downloads it; the cache holds the root *before* anything of ours ran);
#   2. put it in the state that once fooled the script: `libclang1-14` installed (it ships
#      libclang-14.so.1, which looks like libclang but is not what bindgen loads), no libclang-dev;
#   3. run `ensure-deps.sh --system` inside it (chroot), as root, like a first `./scripts/test.sh`;
#   4. check, inside the root: every package is installed per dpkg; libclang really loads (a C
#      program compiled with g++ against -lclang calls clang_getClangVersion and prints it);
#      curl and python3 run;
#   5. run ensure-deps.sh a second time: it must install nothing more (idempotent).
#
# Needs root (chroot) and Debian's package mirror; prints SKIP and exits 0 only where it is not
# root, since CI runs as root. Environment:
#   RAFTLANE_FRESH_CACHE   folder for the cached root tarball (default ~/.cache/raftlane)
#   RAFTLANE_FRESH_KEEP=1  keep the unpacked root afterwards (debugging)
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
say() { printf '[fresh-machine +%3ss] %s\n' "$((SECONDS - started))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: tests/fresh_machine.sh needs root for chroot"; exit 0
fi

SUITE=bookworm
MIRROR="${RAFTLANE_FRESH_MIRROR:-http://deb.debian.org/debian}"
CACHE="${RAFTLANE_FRESH_CACHE:-$HOME/.cache/raftlane}"
TARBALL="$CACHE/fresh-root-$SUITE.tar"
ROOT="$(mktemp -d /var/tmp/raftlane-fresh.XXXXXX)"

cleanup() {
  umount "$ROOT/proc" 2>/dev/null || true
  umount -R "$ROOT/dev" 2>/dev/null || true
  if [ "${RAFTLANE_FRESH_KEEP:-0}" != "1" ]; then rm -rf --one-file-system "$ROOT"; fi
}
trap cleanup EXIT

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap (host)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

mkdir -p "$CACHE"
if [ -s "$TARBALL" ]; then
  say "unpacking the cached bare root ($TARBALL)"
  tar -C "$ROOT" -xf "$TARBALL"
else
  say "debootstrap --variant=minbase $SUITE (first run only; cached afterwards)"
  debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 \
    || { tail -20 "$ROOT.debootstrap.log"; fail "debootstrap failed"; }
  rm -f "$ROOT.debootstrap.log"
  tar -C "$ROOT" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
fi

cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# Sanity: the bare root really lacks what we are about to require, so the test can fail.
for tool in g++ curl python3; do
  if in_root sh -c "command -v $tool" >/dev/null 2>&1; then fail "the bare root already has $tool"; fi
done

say "state before: libclang1-14 only (the library clang brings, not the -dev package)"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libclang1-14 >/dev/null
in_root sh -c 'ls /usr/lib/llvm-14/lib/ | grep libclang' | sed 's/^/    /'
if in_root dpkg -s libclang-dev >/dev/null 2>&1; then fail "libclang-dev is already installed"; fi

cp scripts/ensure-deps.sh "$ROOT/root/ensure-deps.sh"
say "running ensure-deps.sh --system in the root"
if ! in_root bash /root/ensure-deps.sh --system 2>&1 | sed 's/^/    /'; then
  fail "ensure-deps.sh failed"
fi

say "checking the prerequisites inside the root"
for pkg in libclang-dev g++ make pkg-config curl python3 ca-certificates; do
  in_root dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' || fail "$pkg not installed"
done
# What bindgen does at build time is load libclang; do the same from C, in the root.
cat >"$ROOT/root/libclang_probe.c" <<'EOF'
#include <stdio.h>
typedef struct { const void *data; unsigned private_flags; } CXString;
CXString clang_getClangVersion(void);
const char *clang_getCString(CXString);
void clang_disposeString(CXString);
int main(void) {
  CXString v = clang_getClangVersion();
  printf("%s\n", clang_getCString(v));
  clang_disposeString(v);
  return 0;
}
EOF
libdir="$(in_root bash -c 'source /root/ensure-deps.sh --system >/dev/null && dirname "$(raftlane_libclang_file)"')" \
  || fail "ensure-deps.sh finds no libclang file after installing"
in_root g++ -x c /root/libclang_probe.c -o /root/libclang_probe -L"$libdir" -lclang -Wl,-rpath,"$libdir" \
  || fail "cannot link against libclang in $libdir"
version="$(in_root /root/libclang_probe)" || fail "the libclang probe did not run"
case "$version" in *clang\ version*) say "libclang loads: $version" ;; *) fail "unexpected libclang answer: $version" ;; esac
in_root curl --version >/dev/null || fail "curl does not run"
in_root python3 -c 'import json' || fail "python3 does not run"

say "second run installs nothing"
second="$(in_root bash /root/ensure-deps.sh --system 2>&1)"
case "$second" in *installing*) fail "second run installed again: $second" ;; esac

say "PASS"
