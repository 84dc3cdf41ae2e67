"""The drift check: ``src/raftlane/_generated.py`` is what ``scripts/gen_types.py`` writes from the
API's OpenAPI document (``api/openapi.json``), and every name ``raftlane.types`` ever exported is
still there."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import raftlane.types
from raftlane import _generated

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
GENERATOR = PACKAGE / "scripts" / "gen_types.py"
OPENAPI = PACKAGE.parent.parent / "api" / "openapi.json"
COMMITTED = PACKAGE / "src" / "raftlane" / "_generated.py"

#: Every name ``raftlane.types`` exported before its wire types were generated.
NAMES = """
Ack Approval ApprovalCreated ApprovalDecided ApprovalList AuditAnchor AuditAppended AuditRow
AuditRows AuditVerification Backup Cancelled CapturedResponse Claim ClaimedRow Claims
ClusterMember ClusterStatus ConfigVersion ConfigWritten ConnectionTraffic Correlation
DeadLetterRow DeadLetters Delivery DestinationTraffic DoneNext EngineNode EngineNodes Enqueued
Event Failed FifoClaim GroupEntry GroupMap GroupMapWritten HandedOff HandedOnNext Handler Health
HeartbeatAck InboundTraffic KeyRotation KeyedDecided LaneLease LaneList LaneView
LeaderTransferred Leadership ListedMessage LogFormatStatus Message MessageList MessageMeta
MessageView Namespace NamespaceList PauseState PausedDestination PausedDestinations Principal
Purged Readiness ReferenceSetInfo ReferenceSetList ReferenceSnapshot ReferenceWritten Reingressed
Released Renewed Requeued RetryPolicy Revoked RoleAssignmentView RoleList RoleView RoleWritten
RolesAssigned RowActionResult RowDetail RowMeta SessionChanged SessionCreated SessionList
SessionView SessionsPurged SessionsRevoked SnapshotTaken Stage StateDigest StateEntry StateOp
Stats StorageStats TokenCreated TokenList UNLIMITED_ATTEMPTS UserChanged UserCreated UserDeleted
UserList UserRoles UserSecrets UserView Viewed WorkRow decode
""".split()  # noqa: SIM905 (one word a name, as the old module listed them)


def test_the_committed_module_is_what_the_generator_writes(tmp_path: Path) -> None:
    if not OPENAPI.exists():
        pytest.fail(f"{OPENAPI} is missing: the generator's input")
    out = tmp_path / "_generated.py"
    run = subprocess.run(
        [sys.executable, str(GENERATOR), "--openapi", str(OPENAPI), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text() == COMMITTED.read_text(), (
        "src/raftlane/_generated.py is not what the OpenAPI document gives: run "
        "clients/python/scripts/gen_types.py and commit the result"
    )


def test_every_name_types_exported_is_still_there() -> None:
    missing = [n for n in NAMES if not hasattr(raftlane.types, n)]
    assert missing == []


def test_the_wire_types_are_the_generated_ones() -> None:
    generated = [getattr(_generated, n) for n in _generated.__all__]
    assert generated, "the generated module defines no classes"
    for cls in generated:
        assert dataclasses.is_dataclass(cls)
        assert getattr(raftlane.types, cls.__name__) is cls
        assert cls.__name__ in raftlane.types.__all__
