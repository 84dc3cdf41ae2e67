"""QueueStore, upkeep: at-rest key rotation, retention purges, and the store's health and traffic
metrics."""

from __future__ import annotations

import asyncio

from messagefoundry.store.store import (
    ConnectionMetrics,
    DbStatus,
    DestinationMetrics,
    InboundMetrics,
)

from .audit import AUDIT_ORG
from .context import StorePart
from .convert import ms, s


class MaintenancePart(StorePart):
    """messagefoundry's ``QueueStore`` key rotation, retention, maintenance and health."""

    async def reencrypt_to_active(self, *, batch: int = 500) -> int:
        r = await self._ctx.client.rotate_keys(batch_size=batch)
        return r.rewritten

    async def _purge(self, kind: str, older_than: float, now: float | None) -> int:
        return (await self._ctx.at(now).purge(kind, older_than=ms(older_than))).purged

    async def purge_message_bodies(self, *, older_than: float, now: float | None = None) -> int:
        return await self._purge("bodies", older_than, now)

    async def purge_dead_letters(self, *, older_than: float, now: float | None = None) -> int:
        return await self._purge("dead_letters", older_than, now)

    async def purge_state(self, *, older_than: float, now: float | None = None) -> int:
        purged = await self._purge("state", older_than, now)
        if purged:
            # Purged entries leave this handle's read-through cache at once, as they leave the
            # store: a transform must not read state that retention removed.
            await self._ctx.caches.converge_state(self._ctx.client)
        return purged

    async def wal_checkpoint(self) -> None:
        """Nothing to do: each node's RocksDB manages its own files."""

    async def vacuum(self) -> None:
        """Nothing to do: each node's RocksDB compacts on its own."""

    async def db_status(self) -> DbStatus:
        ctx = self._ctx
        stats = await ctx.client.storage_stats()
        anchor = await ctx.client.audit_anchor(AUDIT_ORG)
        return DbStatus(
            path=ctx.path,
            size_bytes=stats.size_bytes,
            disk_free_bytes=0,
            journal_mode=ctx.journal_mode,
            messages=stats.messages,
            events=stats.events,
            audit=anchor.count,
        )

    async def integrity_check(self) -> tuple[bool, str]:
        """Every node ready, and every node's state digest equal at one applied index."""
        client = self._ctx.client
        endpoints = client.endpoints
        for ep in endpoints:
            ready = await client.readyz(ep)
            if not ready.ready:
                return False, f"{ep} is not ready: {ready.reason}"
        for _ in range(50):
            digests = [await client.digest(ep) for ep in endpoints]
            if len({d.last_applied for d in digests}) == 1:
                if len({d.digest for d in digests}) == 1:
                    return True, "ok"  # every node ready, and one state at one applied index
                return False, f"digests differ at index {digests[0].last_applied}"
            await asyncio.sleep(0.1)
        return False, "the nodes did not reach one applied index to compare digests"

    async def connection_metrics(
        self, *, since: float, now: float | None = None, rate_window: float = 60.0
    ) -> ConnectionMetrics:
        answer = await self._ctx.at(now).connection_metrics(
            since=ms(since), rate_window_ms=ms(rate_window)
        )
        inbound = {
            i.channel: InboundMetrics(read=i.read, errored=i.errored, last_at=s(i.last_at))
            for i in answer.inbound
        }
        destinations = {
            (d.channel, d.destination): DestinationMetrics(
                queue_depth=d.queue_depth,
                written=d.written,
                dead=d.dead,
                oldest_pending_at=s(d.oldest_pending_at),
                recent_done=d.recent_done,
                last_done_at=s(d.last_done_at),
            )
            for d in answer.destinations
        }
        return ConnectionMetrics(inbound=inbound, destinations=destinations)
