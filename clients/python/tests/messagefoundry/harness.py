"""Run messagefoundry 0.1.0's PostgreSQL-store suite against ``RaftlaneStore``.

    python tests/messagefoundry/harness.py --ensure      # fetch the sdist, install messagefoundry
    python tests/messagefoundry/harness.py [--summary F] # run the suite, print and write a summary

Steps (each idempotent):

1. ``pip download --no-deps --no-binary :all: messagefoundry==0.1.0`` into
   ``~/.cache/raftlane/sdist`` (``$RAFTLANE_SDIST_DIR``), unpacked beside it;
2. ``pip install`` that sdist into this interpreter's environment (the cached venv of
   ``scripts/test.sh``) unless messagefoundry 0.1.0 is already there; the suite itself needs only
   pytest and pytest-asyncio, which our ``test`` extra installs;
3. copy ``tests/test_postgres_store.py`` into a temporary directory and rewrite exactly three
   module-level definitions, found with :mod:`ast` by name and replaced by source line range:

   - the ``store`` fixture is removed, so the ``store`` fixture of ``mf_conftest.py`` (copied
     beside it as ``conftest.py``) applies: a ``RaftlaneStore`` on a fresh
     ``empty_cluster(node_args=["--test-client-clock"])`` per test;
   - ``_queue_row(store, queue_id)`` becomes ``return await store.row_lease(queue_id)``;
   - ``_lane_lease(store, lane)`` becomes ``return await store.lane_lease(lane)``;

   and check that every ``async def test_`` is byte-identical to the shipped one;
4. run pytest on the rewritten file with the tests of ``deselected.txt`` deselected, and print
   and write the summary ("N of 61 ... pass on raftlane") with every test's outcome.

messagefoundry is AGPL: its test file is only ever copied into the temporary directory, never
into this repository.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

VERSION = "0.1.0"
SUITE = "tests/test_postgres_store.py"
TOTAL = 61
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("RAFTLANE_CACHE_DIR", Path.home() / ".cache" / "raftlane"))
SDIST_DIR = Path(os.environ.get("RAFTLANE_SDIST_DIR", CACHE / "sdist"))
SUMMARY = CACHE / "messagefoundry" / "summary.txt"
CLIENT_CLOCK_FLAG = "--test-client-clock"

#: The three module-level definitions the harness replaces, and their replacement source.
REPLACEMENTS: dict[str, str] = {
    "store": (
        "# [raftlane harness] the `store` fixture is removed here: conftest.py provides a\n"
        "# RaftlaneStore on a fresh raftlane cluster per test.\n"
    ),
    "_queue_row": (
        "async def _queue_row(store, queue_id: str):\n"
        "    # [raftlane harness] rewritten: the row's lease through the store's public read.\n"
        "    return await store.row_lease(queue_id)\n"
    ),
    "_lane_lease": (
        "async def _lane_lease(store, lane: str):\n"
        "    # [raftlane harness] rewritten: the lane's lease through the store's public read.\n"
        "    return await store.lane_lease(lane)\n"
    ),
}


# --- fetching and installing ------------------------------------------------------------------


def sdist_tarball() -> Path:
    return SDIST_DIR / f"messagefoundry-{VERSION}.tar.gz"


def ensure_sdist() -> Path:
    """The unpacked sdist directory, downloading and unpacking it when missing."""
    tarball = sdist_tarball()
    if not tarball.exists():
        SDIST_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"messagefoundry=={VERSION}",
                "-d",
                str(SDIST_DIR),
            ],
            check=True,
        )
    root = SDIST_DIR / f"messagefoundry-{VERSION}"
    if not (root / SUITE).exists():
        with tarfile.open(tarball) as tf:
            tf.extractall(SDIST_DIR, filter="data")
    return root


def installed_version() -> str | None:
    try:
        return importlib.metadata.version("messagefoundry")
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_installed() -> None:
    """messagefoundry 0.1.0 (with its dependencies) in this interpreter's environment."""
    if installed_version() == VERSION:
        return
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(sdist_tarball()),
            "pytest>=7.4",
            "pytest-asyncio>=0.23",
        ],
        check=True,
    )


# --- the rewrite ------------------------------------------------------------------------------


def _definitions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """1-based first and last line of a definition, its decorators included."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    return first, node.end_lineno


def suite_tests(source: str) -> dict[str, str]:
    """Every ``async def test_*`` of the module, as its exact source text (decorators included)."""
    lines = source.splitlines(keepends=True)
    out = {}
    for name, node in _definitions(ast.parse(source)).items():
        if isinstance(node, ast.AsyncFunctionDef) and name.startswith("test_"):
            first, last = _span(node)
            out[name] = "".join(lines[first - 1 : last])
    return out


def rewrite(source: str) -> str:
    """The suite with the ``store`` fixture removed and ``_queue_row``/``_lane_lease`` rewritten
    onto the store's public reads; every test body unchanged (checked)."""
    defs = _definitions(ast.parse(source))
    missing = sorted(set(REPLACEMENTS) - set(defs))
    if missing:
        raise ValueError(f"the suite has no module-level {', '.join(missing)}")
    lines = source.splitlines(keepends=True)
    spans = sorted(((*_span(defs[n]), n) for n in REPLACEMENTS), reverse=True)
    for first, last, name in spans:
        lines[first - 1 : last] = [REPLACEMENTS[name]]
    out = "".join(lines)
    before, after = suite_tests(source), suite_tests(out)
    if before != after:
        changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        raise AssertionError(f"the rewrite changed test bodies: {changed}")
    return out


# --- running ----------------------------------------------------------------------------------


def read_list(path: Path) -> dict[str, str]:
    """``name`` or ``name | note`` per line; ``#`` comments and blank lines skipped."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, note = line.partition("|")
        out[name.strip()] = note.strip()
    return out


def binary_has_client_clock(binary: str | None) -> bool:
    if not binary:
        return False
    try:
        r = subprocess.run(
            [binary, "node", "--help"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return False
    return CLIENT_CLOCK_FLAG in r.stdout


@dataclass
class Result:
    outcomes: dict[str, str]  # test → passed | failed | error | skipped | deselected
    details: dict[str, str]
    client_clock: bool

    @property
    def passed(self) -> list[str]:
        return [n for n, o in self.outcomes.items() if o == "passed"]

    def headline(self) -> str:
        return (
            f"{len(self.passed)} of {TOTAL} messagefoundry {VERSION} PostgreSQL-store tests pass "
            "on raftlane"
        )

    def text(self) -> str:
        out = [self.headline()]
        deselected = sum(1 for o in self.outcomes.values() if o == "deselected")
        out.append(
            f"({TOTAL - deselected} runnable, {deselected} deselected as not runnable; "
            f"client-clock mode: {'on' if self.client_clock else 'OFF: the binary has no '}"
            f"{'' if self.client_clock else CLIENT_CLOCK_FLAG + ', nodes use their wall clock'})"
        )
        for name, outcome in self.outcomes.items():
            detail = self.details.get(name, "")
            out.append(f"{outcome:>10}  {name}" + (f"  — {detail}" if detail else ""))
        return "\n".join(out) + "\n"


def _outcomes_from_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    outcomes: dict[str, str] = {}
    details: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                lines = (child.get("message") or "").splitlines()
                detail = lines[0][:200] if lines else ""
                break
        outcomes[name] = outcome
        details[name] = detail
    return outcomes, details


def suite_env(client_clock: bool) -> dict[str, str]:
    """The suite's environment. It runs in a temporary directory, where a relative
    ``PYTHONPATH`` entry (``PYTHONPATH=src`` from clients/python) names nothing and the suite
    would import whichever raftlane is installed instead of the one under test: every entry is
    made absolute."""
    env = dict(os.environ, RAFTLANE_MF_CLIENT_CLOCK="1" if client_clock else "0")
    given = env.get("PYTHONPATH")
    if given:
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in given.split(os.pathsep) if p
        )
    return env


def run_suite(pytest_args: list[str] | None = None) -> Result:
    root = ensure_sdist()
    source = (root / SUITE).read_text()
    names = list(suite_tests(source))
    if len(names) != TOTAL:
        raise AssertionError(f"expected {TOTAL} tests in the suite, found {len(names)}")
    deselected = read_list(HERE / "deselected.txt")
    unknown = sorted(set(deselected) - set(names))
    if unknown:
        raise AssertionError(f"deselected.txt names tests the suite does not have: {unknown}")
    binary = os.environ.get("RAFTLANE_BIN")
    client_clock = binary_has_client_clock(binary)
    with tempfile.TemporaryDirectory(prefix="raftlane-mf-") as tmp:
        d = Path(tmp)
        (d / "test_postgres_store.py").write_text(rewrite(source))
        (d / "conftest.py").write_text((HERE / "mf_conftest.py").read_text())
        (d / "pytest.ini").write_text(
            "[pytest]\n"
            "asyncio_mode = auto\n"
            "asyncio_default_fixture_loop_scope = function\n"
            "asyncio_default_test_loop_scope = function\n"
        )
        junit = d / "junit.xml"
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(d / "test_postgres_store.py"),
            "-c",
            str(d / "pytest.ini"),
            "--rootdir",
            str(d),
            "-p",
            "no:cacheprovider",
            "-q",
            "--tb=line",
            f"--junitxml={junit}",
            *(f"--deselect=test_postgres_store.py::{n}" for n in deselected),
            *(pytest_args or []),
        ]
        env = suite_env(client_clock)
        subprocess.run(argv, cwd=d, env=env, check=False)
        ran, details = _outcomes_from_junit(junit) if junit.exists() else ({}, {})
    outcomes: dict[str, str] = {}
    for n in names:
        if n in deselected:
            outcomes[n] = "deselected"
            details[n] = deselected[n]
        else:
            outcomes[n] = ran.get(n, "not run")
    return Result(outcomes, details, client_clock)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ensure", action="store_true", help="only fetch and install messagefoundry")
    ap.add_argument(
        "--summary", type=Path, default=SUMMARY, help=f"where to write (default {SUMMARY})"
    )
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    ensure_sdist()
    ensure_installed()
    if args.ensure:
        return 0
    result = run_suite(args.pytest_args)
    text = result.text()
    args.summary.parent.mkdir(parents=True, exist_ok=True)
    args.summary.write_text(text)
    args.summary.with_suffix(".json").write_text(
        json.dumps(
            {
                "headline": result.headline(),
                "client_clock": result.client_clock,
                "outcomes": result.outcomes,
                "details": result.details,
            },
            indent=1,
        )
    )
    print(text, end="")
    print(f"summary written to {args.summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
