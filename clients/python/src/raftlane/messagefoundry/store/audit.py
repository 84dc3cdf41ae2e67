"""AuditStore: the engine's audit chain (in its own org), its users' views of messages, and its
keyed approvals."""

from __future__ import annotations

import time
from typing import Any

from messagefoundry.store.audit_tee import emit_audit_tee

from ...errors import ConflictError, NotFoundError
from ...types import Approval, AuditAnchor
from .context import StorePart
from .convert import ms, s, s0
from .outcomes import is_missing_route, raise_unless_gone

#: The audit org the engine's own audit chain lives in (raftlane's own rows stay in ``default``).
AUDIT_ORG = "messagefoundry"

#: ``expires_at`` of an approval that never expires (2^64 - 1 ms).
NEVER_MS = 2**64 - 1


def _approval_dict(a: Approval) -> dict[str, Any]:
    return {
        "id": a.key if a.key is not None else str(a.id),
        "operation": a.operation,
        "params": a.params,
        "requester": a.requester,
        "requested_at": s0(a.requested_at),
        "status": a.status,
        "approver": a.approver,
        "decided_at": s(a.decided_at),
        # 2^64 - 1 is "never" (docs/SPEC.md §14.10).
        "expires_at": None if a.expires_at >= NEVER_MS else s(a.expires_at),
    }


class AuditPart(StorePart):
    """messagefoundry's ``AuditStore``."""

    async def record_view(
        self, message_id: str, *, actor: str | None = None, now: float | None = None
    ) -> None:
        await self._ctx.at(now).record_view(message_id, actor=actor)

    async def record_audit(
        self,
        action: str,
        *,
        actor: str | None = None,
        channel_id: str | None = None,
        detail: str | None = None,
        now: float | None = None,
    ) -> None:
        await self._ctx.at(now).audit_append(
            action, org=AUDIT_ORG, actor=actor, channel=channel_id, detail=detail
        )
        # The engine's off-box copy (metadata only, redacted by its own code), after the append.
        emit_audit_tee(
            action=action,
            actor=actor,
            channel_id=channel_id,
            detail=detail,
            ts=time.time() if now is None else now,
        )

    async def list_audit(self, *, limit: int = 50) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        client = self._ctx.client
        anchor = await client.audit_anchor(AUDIT_ORG)
        start = max(0, anchor.count - limit)
        rows = await client.audit_list(AUDIT_ORG, start=start, limit=min(limit, 1000))
        return [
            {
                "id": r.seq,
                "ts": r.ts / 1000,
                "actor": r.actor,
                "action": r.action,
                "channel_id": r.channel,
                "detail": r.detail,
                "row_hash": r.hash,
            }
            for r in reversed(rows)
        ]

    async def security_events_for_user(
        self, username: str, *, limit: int = 100
    ) -> list[dict[str, Any]]:
        answer = await self._ctx.client.audit_search(
            AUDIT_ORG, username, action_prefix="auth.", limit=limit
        )
        return [{"ts": s0(r.ts), "action": r.action, "detail": r.detail} for r in answer.rows]

    async def create_pending_approval(
        self,
        *,
        approval_id: str,
        operation: str,
        params: str,
        requester: str,
        requested_at: float,
        expires_at: float | None,
    ) -> None:
        await self._ctx.client.create_keyed_approval(
            approval_id,
            operation,
            params=params,
            requester=requester,
            requested_at=ms(requested_at),
            expires_at=None if expires_at is None else ms(expires_at),
        )

    async def get_pending_approval(self, approval_id: str) -> dict[str, Any] | None:
        try:
            a = await self._ctx.client.keyed_approval(approval_id)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        return _approval_dict(a)

    async def list_pending_approvals(self, *, now: float, limit: int = 100) -> list[dict[str, Any]]:
        answer = await self._ctx.at(now).pending_approvals(limit=max(1, min(limit, 1000)))
        return [_approval_dict(a) for a in answer.approvals]

    async def decide_pending_approval(
        self, approval_id: str, *, status: str, approver: str | None, decided_at: float
    ) -> bool:
        try:
            await self._ctx.client.decide_keyed_approval(
                approval_id, status, approver=approver, decided_at=ms(decided_at)
            )
        except ConflictError as e:
            if e.code == "already_decided":
                return False
            raise
        except NotFoundError as e:
            raise_unless_gone(e)
            return False  # no such approval: nothing was decided
        return True

    async def audit_anchor(self) -> tuple[int, str]:
        a = await self._ctx.client.audit_anchor(AUDIT_ORG)
        return (a.count, a.head) if a.count else (0, "")

    async def verify_audit_chain(
        self, *, expected_anchor: tuple[int, str] | None = None
    ) -> tuple[bool, str | None]:
        anchor: AuditAnchor | tuple[int, str] | None = None
        if expected_anchor is not None:
            count, head = expected_anchor
            anchor = (count, head or "0" * 64)
        v = await self._ctx.client.audit_verify(AUDIT_ORG, anchor=anchor)
        if v.ok and expected_anchor is not None:
            # The cluster checked that the anchored row is in the chain; the contract also
            # treats a chain that moved past the anchor as diverged (the anchor is the head the
            # caller recorded as current).
            now_count, now_head = await self.audit_anchor()
            exp_count, exp_head = expected_anchor
            if now_count < exp_count or now_head != exp_head:
                return False, (
                    f"audit log diverges from recorded anchor (have {now_count} row(s) head "
                    f"{now_head[:12]!r}, expected {exp_count} head {exp_head[:12]!r})"
                    " — truncated or rewritten"
                )
        if v.ok:
            return True, f"verified {v.count} audit row(s)"
        where = f" at row {v.first_bad_seq}" if v.first_bad_seq is not None else ""
        return False, f"audit chain broken{where}: {v.reason}"
