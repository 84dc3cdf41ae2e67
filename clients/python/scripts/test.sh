#!/usr/bin/env bash
# Run the Python client's tests in a virtualenv kept outside the clone
# (~/.cache/raftlane/venv, created on first use), with the package installed in editable mode.
# The cluster tests need the raftlane binary: $RAFTLANE_BIN, else the release build in
# ~/.cache/raftlane/target, else `raftlane` on PATH; without one they are skipped.
# Extra arguments go to pytest, e.g. scripts/test.sh -k fifo -x
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RAFTLANE_VENV:-$HOME/.cache/raftlane/venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$here[test]"
if [ -z "${RAFTLANE_BIN:-}" ] && [ -x "$HOME/.cache/raftlane/target/release/raftlane" ]; then
    export RAFTLANE_BIN="$HOME/.cache/raftlane/target/release/raftlane"
fi
cd "$here"
# Debian packages some tests drive, installed here when apt can (else those parts skip and say
# why): chromium and its driver for the operator page's browser test
# (tests/test_operator_page.py), promtool (package prometheus) for tests/test_metrics.py.
sudo_=""
if [ "$(id -u)" -ne 0 ]; then sudo_="sudo"; fi
apt_install() {  # apt_install WHAT PACKAGE...
    local what="$1"
    shift
    command -v apt-get >/dev/null 2>&1 || return 1
    echo "==> installing $* ($what)"
    inst() {
        DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends \
            "$@" >/dev/null 2>&1
    }
    inst "$@" || { $sudo_ apt-get update -qq >/dev/null 2>&1 && inst "$@"; }
}
if ! command -v chromedriver >/dev/null 2>&1; then
    apt_install "the operator page's browser test" chromium chromium-driver \
        || echo "test.sh: chromium not installed; the operator page's browser test will skip" >&2
fi
if ! command -v promtool >/dev/null 2>&1; then
    apt_install "promtool check metrics" prometheus \
        || echo "test.sh: promtool not installed; test_metrics checks with the parsers only" >&2
fi
# messagefoundry 0.1.0 for raftlane.messagefoundry and its tests (sdist cached in
# ~/.cache/raftlane/sdist); without network and cache those tests skip.
"$venv/bin/python" tests/messagefoundry/harness.py --ensure \
    || echo "test.sh: messagefoundry 0.1.0 not installed; its tests will skip" >&2
exec "$venv/bin/python" -m pytest "$@"
