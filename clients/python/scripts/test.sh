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
# messagefoundry 0.1.0 for raftlane.messagefoundry and its tests (sdist cached in
# ~/.cache/raftlane/sdist); without network and cache those tests skip.
"$venv/bin/python" tests/messagefoundry/harness.py --ensure \
    || echo "test.sh: messagefoundry 0.1.0 not installed; its tests will skip" >&2
exec "$venv/bin/python" -m pytest "$@"
