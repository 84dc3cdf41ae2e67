"""QueueStore, delivery worker path: claims (unordered and FIFO), completions (done, answered,
failed, dead), captured responses and their re-ingress."""

from __future__ import annotations

import json

from messagefoundry.config.models import RetryPolicy as MfRetryPolicy
from messagefoundry.redaction import safe_text
from messagefoundry.store.store import CapturedResponse, MessageStore, OutboxItem

from ...errors import NotFoundError
from ...types import UNLIMITED_ATTEMPTS, RetryPolicy
from .claims import FifoKey
from .context import StorePart
from .convert import known_row_id, ms, s0
from .outcomes import is_missing_route, unless_gone

#: A response row's reference to the capture it re-ingests: message id, destination, seq.
_ResponseRef = tuple[str, str, int]


class DeliveryPart(StorePart):
    """messagefoundry's ``QueueStore`` delivery worker path."""

    async def claim_ready(
        self,
        limit: int = 10,
        now: float | None = None,
        *,
        stage: str = "outbound",
        channel_id: str | None = None,
        destination_name: str | None = None,
    ) -> list[OutboxItem]:
        if limit <= 0:
            return []
        ctx = self._ctx
        rows = await ctx.at(now).claim(
            stage,
            owner=ctx.owner,
            ttl_ms=ctx.ttl_ms,
            limit=min(limit, 1000),
            channel=channel_id,
            destination=destination_name,
            wait_ms=ctx.claim_wait(now),
        )
        return [ctx.claims.item(r) for r in rows]

    async def claim_next_fifo(
        self,
        name: str,
        now: float | None = None,
        *,
        stage: str = "outbound",
        owner: str | None = None,
    ) -> OutboxItem | None:
        """The lane's head, claimed for this handle's ``_owner``. With ``owner`` (the engine's node
        id when clustered) the lane lease is ``owner``'s; without, no lane lease is taken
        (docs/SPEC.md §14.1)."""
        key: FifoKey = (stage, name, owner)
        return await self._ctx.claims.next_of(key, now)

    async def mark_done(self, outbox_id: str, now: float | None = None) -> None:
        row = known_row_id(outbox_id)
        if row is None:
            return  # no such row: the contract's no-op
        ctx = self._ctx
        with unless_gone("mark_done", row, ctx.leases.held):
            fence = await ctx.leases.fence(row)
            key = ctx.claims.riding(row)
            if key is None:
                await ctx.at(now).done(row, fence)
                ctx.claims.claim_ahead(row)
                return
            # The lane's worker will ask for the lane's next row as soon as this returns: claim
            # it in the same write, under the same lease and fence rules as any FIFO claim.
            claim = await ctx.at(now).done_then_claim_next(
                row, fence, owner=ctx.owner, ttl_ms=ctx.ttl_ms
            )
            ctx.claims.keep_ahead(row, key, claim)

    async def complete_with_response(
        self,
        outbox_id: str,
        *,
        body: str,
        outcome: str,
        detail: str | None = None,
        reingress_to: str | None = None,
        now: float | None = None,
    ) -> None:
        row = known_row_id(outbox_id)
        if row is None:
            return
        ctx = self._ctx
        ctx.claims.forget_row(row)
        with unless_gone("complete_with_response", row, ctx.leases.held):
            await ctx.at(now).respond(
                row,
                await ctx.leases.fence(row),
                body,
                outcome,
                detail=detail,
                reingress_to=reingress_to,
            )

    async def correlate_response(self, message_id: str) -> list[CapturedResponse]:
        view = await self._ctx.message_view(message_id)
        if view is None:
            return []
        out = [
            CapturedResponse(
                message_id=str(r.message_id),
                destination_name=r.destination,
                response_seq=r.response_seq,
                outcome=r.outcome,
                detail=r.detail,
                captured_at=s0(r.captured_at),
                body=r.body,
            )
            for r in view.responses
        ]
        out.sort(key=lambda c: (c.destination_name, c.response_seq))
        return out

    async def _response_reference(self, row_id: int) -> _ResponseRef | None:
        row = (await self._ctx.client.row(row_id)).row
        if row.stage != "response":
            return None
        try:
            ref = json.loads(row.payload or "")
            return str(ref["message_id"]), str(ref["destination"]), int(ref["seq"])
        except (ValueError, KeyError, TypeError):
            return None

    async def _response_body(self, ref: _ResponseRef) -> str | None:
        mid, dest, seq = ref
        for c in await self.correlate_response(mid):
            if c.destination_name == dest and c.response_seq == seq:
                return c.body if c.body is not None else ""
        return None

    async def ingress_handoff(
        self,
        *,
        response_row_id: str,
        loopback_channel_id: str,
        correlation_depth_cap: int,
        control_id: str | None,
        message_type: str | None,
        summary: str | None,
        peek_failed: bool = False,
        now: float | None = None,
    ) -> bool:
        row = known_row_id(response_row_id)
        if row is None:
            return False
        with unless_gone("ingress_handoff", row, self._ctx.leases.held) as done:
            fence = await self._ctx.leases.fence(row)
            # The engine finds the child by an id it derives from the origin and the reply (its
            # own function, called here); the cluster keeps it with the child.
            child_key: str | None = None
            ref = await self._response_reference(row)
            if ref is not None:
                reply = await self._response_body(ref)
                if reply is not None:
                    child_key = MessageStore._reingress_message_id(ref[0], ref[1], ref[2], reply)
            await self._ctx.at(now).reingress(
                row,
                fence,
                loopback_channel_id,
                depth_cap=correlation_depth_cap,
                child_key=child_key,
                control_id=control_id,
                message_type=message_type,
                summary=summary,
                peek_failed=peek_failed or None,
            )
        return done.applied

    async def response_body_for_work_row(self, response_row_id: str) -> str | None:
        row = known_row_id(response_row_id)
        if row is None:
            return None
        try:
            ref = await self._response_reference(row)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        if ref is None:
            return None
        body = await self._response_body(ref)
        # The reference is sound but its capture is gone (purged): an empty body, as the
        # contract has it, so the worker's peek sees nothing rather than no row.
        return "" if body is None else body

    async def mark_failed(
        self, outbox_id: str, error: str, retry: MfRetryPolicy, now: float | None = None
    ) -> None:
        row = known_row_id(outbox_id)
        if row is None:
            return
        policy = RetryPolicy(
            backoff_ms=ms(retry.backoff_seconds),
            multiplier=retry.backoff_multiplier,
            max_backoff_ms=ms(retry.max_backoff_seconds),
            # messagefoundry's ``None`` is "retry forever", not "the server's default".
            max_attempts=UNLIMITED_ATTEMPTS if retry.max_attempts is None else retry.max_attempts,
        )
        ctx = self._ctx
        ctx.claims.forget_row(row)
        with unless_gone("mark_failed", row, ctx.leases.held):
            await ctx.at(now).fail(row, await ctx.leases.fence(row), safe_text(error), retry=policy)

    async def dead_letter_now(self, outbox_id: str, error: str, now: float | None = None) -> None:
        row = known_row_id(outbox_id)
        if row is None:
            return
        ctx = self._ctx
        # With this handle's fence when it claimed the row; without one the cluster ends the
        # row only while it is live (docs/SPEC.md §5.3).
        ctx.claims.forget_row(row)
        with unless_gone("dead_letter_now", row, ctx.leases.held):
            await ctx.at(now).dead(row, safe_text(error), fence=ctx.leases.fences.get(row))
