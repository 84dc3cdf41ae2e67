"""QueueStore, reads for the API and console: messages, dead letters, a message's rows and events,
counts and depths; and the two inspection reads the harness rewrites messagefoundry's suite onto
(``row_lease``, ``lane_lease``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ...errors import NotFoundError
from ...types import Event, ListedMessage, MessageMeta, WorkRow
from .context import StorePart
from .convert import row_id as parse_row_id
from .convert import s, s0, sid
from .outcomes import is_missing_route

#: A view raftlane records names the authenticated principal beside the actor the engine names
#: ("alice (via engine)", docs/SPEC.md §9.8); messagefoundry's contract reads the actor back.
_VIA_PRINCIPAL = re.compile(r"^(?P<actor>.*) \(via [^()]+\)$", re.DOTALL)


def _event_detail(event: Event) -> str | None:
    """An event's detail as messagefoundry wrote it: a view's actor without the principal
    raftlane records beside it (still in the message's events on raftlane's own API)."""
    detail = event.detail
    if event.event == "viewed" and isinstance(detail, str):
        named = _VIA_PRINCIPAL.match(detail)
        if named is not None:
            return named["actor"]
    return detail


def _message_dict(m: MessageMeta | ListedMessage, raw: str | None) -> dict[str, Any]:
    corr = m.correlation
    metadata = m.metadata
    if corr is not None and metadata is None:
        # A re-ingressed message: messagefoundry keeps its lineage in the message's metadata
        # text, and the engine's loopback path reads ``correlation_id`` from there to find
        # the origin's replies; raftlane keeps it as a record of its own.
        metadata = json.dumps(
            {
                "correlation_id": sid(corr.correlation_id),
                "correlation_root_id": sid(corr.root_id),
                "correlation_depth": corr.depth,
                "reingress_of_seq": corr.reingress_of_seq,
            }
        )
    return {
        "id": str(m.id),
        "channel_id": m.channel_id,
        "received_at": s0(m.received_at),
        "source_type": m.source_type,
        "control_id": m.control_id,
        "message_type": m.message_type,
        "raw": raw,
        "status": m.status,
        "error": m.error,
        "summary": m.summary,
        "metadata": metadata,
        "correlation_id": None if corr is None else sid(corr.correlation_id),
        "correlation_root_id": None if corr is None else sid(corr.root_id),
        "correlation_depth": None if corr is None else corr.depth,
        "reingress_of_seq": None if corr is None else corr.reingress_of_seq,
        "purged": m.purged,
    }


def _row_dict(r: WorkRow, *, payload: bool) -> dict[str, Any]:
    claim = r.claim
    d: dict[str, Any] = {
        "id": str(r.id),
        "message_id": str(r.message_id),
        "stage": r.stage,
        "channel_id": r.channel_id,
        "destination_name": r.destination_name,
        "handler_name": r.handler_name,
        "status": r.status,
        "attempts": r.attempts,
        "next_attempt_at": s0(r.next_attempt_at),
        # A delivered row has no error (messagefoundry clears it on done); raftlane keeps
        # the last failure's text with the row.
        "last_error": None if r.status == "done" else r.last_error,
        "created_at": s0(r.created_at),
        "updated_at": s0(r.updated_at),
        "seq": r.id,
        "owner": None if claim is None else claim.owner,
        "lease_expires_at": None if claim is None else s(claim.lease_expires_at),
    }
    if payload:
        d["payload"] = r.payload
    return d


def _filters(
    channel_id: str | None,
    status: str | None,
    message_type: str | None,
    control_id: str | None,
    allowed_channels: Sequence[str] | None,
) -> dict[str, Any]:
    return {
        "channel": channel_id,
        "status": status,
        "message_type": message_type,
        "control_id": control_id,
        "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
    }


def _dead_filters(
    channel_id: str | None,
    destination_name: str | None,
    allowed_channels: Sequence[str] | None,
) -> dict[str, Any]:
    return {
        "channel": channel_id,
        "destination": destination_name,
        "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
    }


class ReadsPart(StorePart):
    """messagefoundry's ``QueueStore`` read helpers, and the store's inspection reads."""

    # --- inspection reads (the suite's two SQL helpers are rewritten onto these) ---------------

    async def row_lease(self, row_id: str) -> dict[str, Any] | None:
        """A row's ``{owner, lease_expires_at, status}`` (owner and expiry ``None`` unless it is
        inflight), ``None`` for an unknown row."""
        try:
            row = (await self._ctx.client.row(parse_row_id(row_id))).row
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        claim = row.claim
        return {
            "owner": None if claim is None else claim.owner,
            "lease_expires_at": None if claim is None else s(claim.lease_expires_at),
            "status": row.status,
        }

    async def lane_lease(self, lane: str) -> dict[str, Any] | None:
        """A lane's live lease ``{owner, lease_expires_at}``, ``None`` when nobody holds it.
        ``lane`` is ``"<stage>:<name>"`` (e.g. ``outbound:OB1``)."""
        stage, sep, name = lane.partition(":")
        if not sep:
            raise ValueError(f"a lane is '<stage>:<name>', not {lane!r}")
        view = await self._ctx.client.lane(stage, name)
        if view.holder is None:
            return None
        return {"owner": view.holder.owner, "lease_expires_at": s(view.holder.expires_at)}

    # --- messages --------------------------------------------------------------------------------

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        view = await self._ctx.message_view(message_id)
        return None if view is None else _message_dict(view.message, view.message.raw)

    async def list_messages(
        self,
        *,
        channel_id: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        allowed_channels: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        if limit <= 0 or (allowed_channels is not None and not allowed_channels):
            return []
        # A page of the server's list examines a bounded number of messages and then answers
        # what it found with a cursor, so a selective filter over a long history can come back
        # short: follow the cursor until the page is full, as an SQL LIMIT/OFFSET would be. The
        # offset is counted here, because the server's skip count does not carry to the next
        # page.
        skip = max(0, offset)
        out: list[dict[str, Any]] = []
        cursor: int | None = None
        while True:
            page = await self._ctx.client.message_page(
                channel=channel_id,
                status=status,
                message_type=message_type,
                control_id=control_id,
                allowed_channels=allowed_channels,
                limit=max(1, min(skip + limit - len(out), 1000)),
                offset=0,
                cursor=cursor,
            )
            for m in page.messages:
                if allowed_channels is not None and m.channel_id not in allowed_channels:
                    continue  # never widen a scope, whatever the server did with the filter
                if skip:
                    skip -= 1
                    continue
                d = _message_dict(m, None)
                del d["raw"]
                d["last_event"] = m.last_event
                out.append(d)
                if len(out) >= limit:
                    return out
            cursor = page.next_cursor
            if cursor is None:
                return out

    async def count_messages(
        self,
        *,
        channel_id: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        allowed_channels: Sequence[str] | None = None,
    ) -> int:
        if allowed_channels is not None and not allowed_channels:
            return 0
        filters = _filters(channel_id, status, message_type, control_id, allowed_channels)
        return await self._ctx.client.count_messages(**filters)

    # --- dead letters ----------------------------------------------------------------------------

    async def list_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        limit: int = 50,
        offset: int = 0,
        allowed_channels: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        if allowed_channels is not None and not allowed_channels:
            return []
        rows = await self._ctx.client.dead_letters(
            channel=channel_id,
            destination=destination_name,
            allowed_channels=allowed_channels,
            limit=max(1, min(limit, 1000)),
            offset=offset,
            newest_failed=True,
        )
        return [
            {
                "outbox_id": str(r.id),
                "message_id": str(r.message_id),
                "channel_id": r.channel_id,
                "destination_name": r.destination_name,
                "attempts": r.attempts,
                "last_error": r.last_error,
                "updated_at": s0(r.updated_at),
                "control_id": r.control_id,
                "message_type": r.message_type,
                "received_at": s(r.received_at),
                "summary": r.summary,
            }
            for r in rows
            if allowed_channels is None or r.channel_id in allowed_channels
        ]

    async def count_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        allowed_channels: Sequence[str] | None = None,
    ) -> int:
        if allowed_channels is not None and not allowed_channels:
            return 0
        filters = _dead_filters(channel_id, destination_name, allowed_channels)
        return await self._ctx.client.count_dead_letters(**filters)

    # --- one message's rows and events -----------------------------------------------------------

    async def _outbound_rows(self, message_id: str, *, payload: bool) -> list[dict[str, Any]]:
        view = await self._ctx.message_view(message_id)
        if view is None:
            return []
        rows = [_row_dict(r, payload=payload) for r in view.rows if r.stage == "outbound"]
        rows.sort(key=lambda r: (r["destination_name"] or "", int(r["id"])))
        return rows

    async def outbox_for(self, message_id: str) -> list[dict[str, Any]]:
        return await self._outbound_rows(message_id, payload=False)

    async def outbox_payloads_for(self, message_id: str) -> list[dict[str, Any]]:
        return await self._outbound_rows(message_id, payload=True)

    async def events_for(self, message_id: str) -> list[dict[str, Any]]:
        view = await self._ctx.message_view(message_id)
        if view is None:
            return []
        return [
            {
                "id": i,
                "message_id": str(view.message.id),
                "ts": s0(e.ts),
                "event": e.event,
                "destination": e.destination,
                "detail": _event_detail(e),
            }
            for i, e in enumerate(view.events)
        ]

    # --- counts by status ------------------------------------------------------------------------

    async def stats(self) -> dict[str, int]:
        st = await self._ctx.client.stats()
        return {status: n for status, n in st.rows.get("outbound", {}).items() if n}

    async def in_pipeline_depth(self) -> int:
        st = await self._ctx.client.stats()
        return sum(
            st.rows.get(stage, {}).get(status, 0)
            for stage in ("ingress", "routed", "outbound")
            for status in ("pending", "inflight")
        )
