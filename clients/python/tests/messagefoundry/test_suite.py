"""messagefoundry 0.1.0's PostgreSQL-store suite on raftlane (harness.py does the work)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import harness
import pytest

HERE = Path(__file__).resolve().parent
RUNNABLE = harness.TOTAL - 14


@pytest.fixture(scope="module")
def suite_source() -> str:
    try:
        root = harness.ensure_sdist()
    except (subprocess.CalledProcessError, OSError) as e:
        pytest.skip(f"messagefoundry {harness.VERSION} sdist not available: {e}")
    return (root / harness.SUITE).read_text()


def test_rewrite_replaces_exactly_three_definitions(suite_source: str) -> None:
    out = harness.rewrite(suite_source)
    before, after = harness.suite_tests(suite_source), harness.suite_tests(out)
    assert len(before) == harness.TOTAL
    assert before == after  # every test byte-identical

    def defs(src: str) -> dict[str, str]:
        lines = src.splitlines(keepends=True)
        out = {}
        for node in ast.parse(src).body:
            name = getattr(node, "name", None)
            if name is not None:
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                out[name] = "".join(lines[first - 1 : node.end_lineno])
        return out

    d0, d1 = defs(suite_source), defs(out)
    changed = {n for n in d0.keys() | d1.keys() if d0.get(n) != d1.get(n)}
    assert changed == {"store", "_queue_row", "_lane_lease"}
    assert "store" not in d1
    assert "store.row_lease(queue_id)" in d1["_queue_row"]
    assert "store.lane_lease(lane)" in d1["_lane_lease"]


def test_rewrite_refuses_a_suite_without_the_definitions() -> None:
    with pytest.raises(ValueError, match="_lane_lease"):
        harness.rewrite("async def store():\n    pass\n\nasync def _queue_row(s, i):\n    pass\n")


def test_lists_name_suite_tests(suite_source: str) -> None:
    names = set(harness.suite_tests(suite_source))
    deselected = harness.read_list(HERE / "deselected.txt")
    expected = harness.read_list(HERE / "expected_pass.txt")
    assert len(deselected) == harness.TOTAL - RUNNABLE
    assert set(deselected) <= names
    assert all(deselected.values()), "every deselected test has its reason"
    assert set(expected) <= names
    assert not set(expected) & set(deselected)


@pytest.fixture(scope="module")
def result(suite_source: str) -> harness.Result:
    pytest.importorskip("messagefoundry")
    r = harness.run_suite()
    harness.SUMMARY.parent.mkdir(parents=True, exist_ok=True)
    harness.SUMMARY.write_text(r.text())
    print("\n" + r.text())
    return r


@pytest.mark.cluster
def test_no_expected_pass_regresses(result: harness.Result) -> None:
    expected = harness.read_list(HERE / "expected_pass.txt")
    regressed = sorted(n for n in expected if result.outcomes.get(n) != "passed")
    assert not regressed, f"{result.headline()}; these passed before and no longer do: {regressed}"
    newly = sorted(set(result.passed) - set(expected))
    if newly:
        print(f"newly passing (add them to expected_pass.txt): {newly}")


@pytest.mark.cluster
def test_all_runnable_pass(result: harness.Result) -> None:
    assert len(result.passed) == RUNNABLE, result.headline()
