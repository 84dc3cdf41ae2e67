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
# The operator page's browser test (tests/test_operator_page.py) needs Debian's chromium and its
# driver; installed here when apt can, else that test skips and says why.
if ! command -v chromedriver >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo_=""
    if [ "$(id -u)" -ne 0 ]; then sudo_="sudo"; fi
    echo "==> installing chromium and chromium-driver (the operator page's browser test)"
    browser() {
        DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends \
            chromium chromium-driver >/dev/null 2>&1
    }
    browser || { $sudo_ apt-get update -qq >/dev/null 2>&1 && browser; } \
        || echo "test.sh: chromium not installed; the operator page's browser test will skip" >&2
fi
# messagefoundry 0.1.0 for raftlane.messagefoundry and its tests (sdist cached in
# ~/.cache/raftlane/sdist); without network and cache those tests skip.
"$venv/bin/python" tests/messagefoundry/harness.py --ensure \
    || echo "test.sh: messagefoundry 0.1.0 not installed; its tests will skip" >&2
exec "$venv/bin/python" -m pytest "$@"
