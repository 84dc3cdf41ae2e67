"""QueueStore, write path: messages in (enqueue, record on receipt) and claimed rows handed on
to the next stage (route, handoff, transform)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from messagefoundry.redaction import safe_text
from messagefoundry.store.store import MessageStatus

from ...client import Client, RowAction
from ...types import HandedOff, StateOp
from .context import StorePart
from .convert import known_row_id
from .outcomes import unless_gone


def _metadata(text: str | None) -> dict[str, Any] | None:
    """A message's ``metadata`` (the JSON text of an object) as the object the enqueue body
    carries."""
    if text is None:
        return None
    parsed = json.loads(text)
    if isinstance(parsed, dict):
        return parsed
    raise ValueError("metadata must be the JSON text of an object")


@dataclass(frozen=True)
class _Fields:
    """A message's optional fields, as messagefoundry passes them to every enqueue."""

    control_id: str | None
    message_type: str | None
    source_type: str | None
    summary: str | None
    metadata: str | None


@dataclass(frozen=True)
class _HandOn:
    """One handoff of a claimed row to the next stage: sent alone, or as a :class:`RowAction`
    with the lane's next claim riding in its write."""

    kind: Literal["route", "handoff", "transform"]
    row: int
    fence: int
    #: ``(handler, payload)`` for a route, ``(destination, payload)`` otherwise.
    items: list[tuple[str, str]]
    disposition: str | None = None
    state_ops: list[StateOp] = field(default_factory=list)

    def action(self) -> RowAction:
        if self.kind == "route":
            return RowAction.route(self.row, self.fence, self.items, self.disposition)
        if self.kind == "handoff":
            return RowAction.handoff(self.row, self.fence, self.items, self.disposition)
        return RowAction.transform(self.row, self.fence, self.items, self.state_ops)

    async def send(self, client: Client) -> HandedOff:
        if self.kind == "route":
            return await client.route(
                self.row, self.fence, self.items, disposition=self.disposition
            )
        if self.kind == "handoff":
            return await client.handoff(
                self.row, self.fence, self.items, disposition=self.disposition
            )
        return await client.transform(self.row, self.fence, self.items, state_ops=self.state_ops)


class PipelinePart(StorePart):
    """messagefoundry's ``QueueStore`` write path."""

    async def enqueue_message(
        self,
        *,
        channel_id: str,
        raw: str,
        deliveries: Sequence[tuple[str, str]],
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        fields = _Fields(control_id, message_type, source_type, summary, metadata)
        return await self._enqueue(channel_id, raw, fields, now, deliveries=list(deliveries))

    async def record_received(
        self,
        *,
        channel_id: str,
        raw: str,
        status: MessageStatus,
        error: str | None = None,
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        fields = _Fields(control_id, message_type, source_type, summary, metadata)
        # The store layer is messagefoundry's PHI chokepoint: an error's text is made safe here.
        return await self._enqueue(
            channel_id,
            raw,
            fields,
            now,
            status=MessageStatus(status).value,
            error=safe_text(error) if error else error,
        )

    async def enqueue_ingress(
        self,
        *,
        channel_id: str,
        raw: str,
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        fields = _Fields(control_id, message_type, source_type, summary, metadata)
        return await self._enqueue(channel_id, raw, fields, now)

    async def _enqueue(
        self, channel_id: str, raw: str, fields: _Fields, now: float | None, **outcome: Any
    ) -> str:
        """The one enqueue call of the three ways a message comes in: ``outcome`` is what sets
        them apart (its producer's ``deliveries``, or a ``status`` and ``error`` on receipt)."""
        enqueued = await self._ctx.at(now).enqueue(
            channel_id,
            raw,
            control_id=fields.control_id,
            message_type=fields.message_type,
            source_type=fields.source_type,
            summary=fields.summary,
            metadata=_metadata(fields.metadata),
            **outcome,
        )
        return str(enqueued.message_id)

    async def handoff(
        self,
        *,
        ingress_id: str,
        message_id: str,
        channel_id: str,
        deliveries: Sequence[tuple[str, str]],
        disposition: MessageStatus,
        now: float | None = None,
    ) -> bool:
        row = known_row_id(ingress_id)
        if row is None:
            return False  # no such row: nothing to consume
        with unless_gone("handoff", row, self._ctx.leases.held) as done:
            fence = await self._ctx.leases.fence(row)
            step = _HandOn(
                "handoff", row, fence, list(deliveries), MessageStatus(disposition).value
            )
            done.applied = await self._hand_on(step, now)
        return self._ctx.claims.handed_on(row, done.applied)

    async def route_handoff(
        self,
        *,
        ingress_id: str,
        message_id: str,
        channel_id: str,
        handlers: Sequence[tuple[str, str]],
        disposition: MessageStatus,
        now: float | None = None,
    ) -> bool:
        row = known_row_id(ingress_id)
        if row is None:
            return False  # no such row: nothing to consume
        with unless_gone("route", row, self._ctx.leases.held) as done:
            fence = await self._ctx.leases.fence(row)
            step = _HandOn("route", row, fence, list(handlers), MessageStatus(disposition).value)
            done.applied = await self._hand_on(step, now)
        return self._ctx.claims.handed_on(row, done.applied)

    async def transform_handoff(
        self,
        *,
        routed_id: str,
        message_id: str,
        channel_id: str,
        deliveries: Sequence[tuple[str, str]],
        state_ops: Sequence[tuple[str, str, Any]] = (),
        now: float | None = None,
    ) -> bool:
        row = known_row_id(routed_id)
        if row is None:
            return False
        ops = [StateOp(ns, key, value) for ns, key, value in state_ops]
        with unless_gone("transform", row, self._ctx.leases.held) as done:
            fence = await self._ctx.leases.fence(row)
            step = _HandOn("transform", row, fence, list(deliveries), state_ops=ops)
            done.applied = await self._hand_on(step, now)
        if done.applied:
            # Committed: the writes are visible to this handle's handlers at once.
            self._ctx.caches.apply_state_ops(ops)
        return self._ctx.claims.handed_on(row, done.applied)

    async def _hand_on(self, step: _HandOn, now: float | None) -> bool:
        """One handoff (route, handoff or transform) of a claimed row. For a row this handle
        claimed from a FIFO lane with one owner for row and lane (the clustered engine's
        claims), the lane's next row is claimed in the same write and kept for the lane's next
        ``claim_next_fifo``: one round trip per message per stage instead of two."""
        ctx = self._ctx
        key = ctx.claims.riding(step.row)
        if key is None:
            return (await step.send(ctx.at(now))).applied
        handed, claim = await ctx.at(now).hand_on_then_claim_next(
            step.action(), owner=ctx.owner, ttl_ms=ctx.ttl_ms
        )
        ctx.claims.keep_ahead(step.row, key, claim)
        return handed.applied
