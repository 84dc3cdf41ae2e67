"""QueueStore, recovery and replay: lane depth, in-flight rows taken back (at start-up, by lease
expiry, on promotion: the last two are messagefoundry's ``ReclaimingStore``), dead-letter sweeps,
replays and cancels."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import NotFoundError
from .context import StorePart
from .convert import known_row_id, s
from .outcomes import raise_unless_gone


class RecoveryPart(StorePart):
    """messagefoundry's ``QueueStore`` recovery and replay, and its ``ReclaimingStore``."""

    async def pending_depth(
        self, name: str, *, stage: str = "outbound"
    ) -> tuple[int, float | None]:
        view = await self._ctx.client.lane(stage, name)
        return view.depth, s(view.oldest)

    async def reset_stale_inflight(
        self, now: float | None = None, *, stage: str | None = None
    ) -> int:
        self._ctx.claims.forget_ahead()
        return await self._ctx.at(now).reset_inflight(stage=stage)

    async def renew_leases(self, ids: Sequence[str], *, now: float | None = None) -> int:
        rows = [r for r in map(known_row_id, ids) if r is not None]
        if not rows:
            return 0
        ctx = self._ctx
        return await ctx.at(now).renew(rows, owner=ctx.owner, ttl_ms=ctx.ttl_ms)

    async def reclaim_expired_leases(
        self, now: float | None = None, *, stage: str | None = None
    ) -> int:
        return await self._ctx.at(now).reclaim_expired(stage=stage)

    async def recover_inflight_on_promotion(
        self, *, lane_owner: str | None, now: float | None = None
    ) -> int:
        self._ctx.claims.forget_ahead()
        return await self._ctx.at(now).recover_inflight(self._ctx.owner, lane_owner=lane_owner)

    async def _sweep(self, stage: str, keep: set[str], now: float | None) -> int:
        return await self._ctx.at(now).sweep_dead_letters(stage, sorted(keep))

    async def dead_letter_missing_destinations(
        self, valid_names: set[str], now: float | None = None
    ) -> int:
        return await self._sweep("outbound", valid_names, now)

    async def dead_letter_missing_handlers(
        self, valid_names: set[str], now: float | None = None
    ) -> int:
        return await self._sweep("routed", valid_names, now)

    async def replay(self, message_id: str, now: float | None = None) -> int:
        mid = known_row_id(message_id)
        if mid is None:
            # Not a raftlane id: a re-ingested child's key (messagefoundry's own id for it),
            # which the cluster resolves on read.
            view = await self._ctx.message_view(message_id)
            if view is None:
                return 0
            mid = view.message.id
        try:
            r = await self._ctx.at(now).replay(mid)
        except NotFoundError as e:
            raise_unless_gone(e)
            return 0
        return r.requeued

    async def replay_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        now: float | None = None,
    ) -> int:
        r = await self._ctx.at(now).replay_dead(channel=channel_id, destination=destination_name)
        return r.requeued

    async def cancel_queued(
        self,
        channel_id: str | None,
        destination_name: str,
        *,
        top_only: bool = False,
        now: float | None = None,
    ) -> int:
        return await self._ctx.at(now).cancel(
            destination_name, channel=channel_id, top_only=top_only
        )
