"""A handle's claims: claimed rows as messagefoundry's ``OutboxItem`` (their fences remembered and
their leases held), the FIFO claim of a lane, and the lane's next row claimed ahead.

Once a row claimed with ``claim_next_fifo`` is done or handed on, its lane's worker asks for the
lane's next row at once, so the handle claims it ahead. With one owner for row and lane (the
clustered engine's claims) the claim rides in the completion's own write (``claim_next``);
otherwise it is sent as soon as the completion is answered, while the engine is still busy with
what it just did.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from messagefoundry.store.store import OutboxItem

from ...errors import RaftlaneError
from ...types import ClaimedRow, FifoClaim

if TYPE_CHECKING:
    from .context import StoreContext

#: A FIFO claim as ``claim_next_fifo`` was called: stage, lane name, and the ``owner`` argument.
FifoKey = tuple[str, str, str | None]


class Claims:
    """Claimed rows, and the FIFO claims of a handle with what it claimed ahead."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        #: The FIFO claim (lane and owner) of each row this handle claimed with
        #: ``claim_next_fifo``, until the row is done or handed on.
        self._fifo_lane: dict[int, FifoKey] = {}
        #: Rows claimed ahead, per FIFO claim: the next ``claim_next_fifo`` with the same lane and
        #: owner gets the row without waiting. Held (leases renewed) like any claim.
        self._ahead: dict[FifoKey, OutboxItem] = {}
        self._ahead_claims: dict[FifoKey, asyncio.Task[OutboxItem | None]] = {}

    def item(self, row: ClaimedRow) -> OutboxItem:
        """A claimed row as the engine's work item; its fence remembered, its lease held. Its
        ``created_at`` (epoch seconds) is the row's creation time, which the engine hands its
        handlers as the message's ingest time; a cluster still writing a log format before 4
        answers none, and it is left unset."""
        leases = self._ctx.leases
        leases.remember(row.row_id, row.fence)
        leases.hold(row.row_id)
        return OutboxItem(
            id=str(row.row_id),
            message_id=str(row.message_id),
            channel_id=row.channel_id,
            destination_name=row.destination_name,
            payload=row.payload,
            attempts=row.attempts,
            stage=row.stage,
            handler_name=row.handler_name,
            created_at=None if row.created_at is None else row.created_at / 1000.0,
        )

    async def next_of(self, key: FifoKey, now: float | None) -> OutboxItem | None:
        """The lane's head for ``key``: the row claimed ahead when there is one, else a claim
        sent now (waiting at the server as a worker's claim does)."""
        ahead = self._ahead.pop(key, None)
        if ahead is not None:
            return ahead
        pending = self._ahead_claims.pop(key, None)
        if pending is not None:
            with contextlib.suppress(RaftlaneError):
                claimed = await pending
                if claimed is not None:
                    return claimed
            # The lane was empty then, or the claim failed: ask again now.
        return await self._claim_fifo(key, now, wait_ms=self._ctx.claim_wait(now))

    async def _claim_fifo(
        self, key: FifoKey, now: float | None, *, wait_ms: int = 0
    ) -> OutboxItem | None:
        """The FIFO claim of ``key``; ``wait_ms`` for the worker's own claim (a claim made ahead
        answers at once: the worker's next claim waits if it must)."""
        ctx = self._ctx
        stage, name, owner = key
        claim = await ctx.at(now).claim_fifo(
            stage,
            name,
            owner=owner if owner is not None else ctx.owner,
            ttl_ms=ctx.ttl_ms,
            lane_lease=owner is not None,
            row_owner=ctx.owner if owner is not None and owner != ctx.owner else None,
            wait_ms=wait_ms,
        )
        if claim.item is None:
            return None
        claimed = self.item(claim.item)
        if not ctx.client_clock:
            self._fifo_lane[claim.item.row_id] = key
        return claimed

    def riding(self, row: int) -> FifoKey | None:
        """The FIFO claim that can ride in the write finishing or handing on ``row``
        (``claim_next``): its lane's, when this handle claimed it with one owner for row and
        lane and has nothing claimed ahead for that lane yet; else ``None``."""
        key = self._fifo_lane.get(row)
        if key is None or key[2] != self._ctx.owner or self._claimed_ahead(key):
            return None
        return key

    def _claimed_ahead(self, key: FifoKey) -> bool:
        return key in self._ahead or key in self._ahead_claims

    def keep_ahead(self, row: int, key: FifoKey, claim: FifoClaim | None) -> None:
        """``row``'s write carried its lane's next claim: keep the row it claimed for the lane's
        next ``claim_next_fifo``."""
        del self._fifo_lane[row]
        if claim is not None and claim.item is not None:
            item = self.item(claim.item)
            self._ahead[key] = item
            self._fifo_lane[claim.item.row_id] = key

    def handed_on(self, row: int, applied: bool) -> bool:
        """After a handoff of ``row``: claim its lane's next row ahead unless that was done in
        the handoff's own write (or the handoff did nothing)."""
        if applied:
            self.claim_ahead(row)
        else:
            self.forget_row(row)
        return applied

    def claim_ahead(self, row: int) -> None:
        """``row`` was just handed on or finished: claim its lane's next row now, for the
        lane's next ``claim_next_fifo`` (the same claim, sent while the engine works)."""
        key = self._fifo_lane.pop(row, None)
        if key is None or self._claimed_ahead(key):
            return
        self._ahead_claims[key] = asyncio.get_running_loop().create_task(
            self._claim_fifo(key, None)
        )

    def forget_row(self, row: int) -> None:
        """``row`` leaves its lane without a next claim (failed, dead, answered or refused)."""
        self._fifo_lane.pop(row, None)

    def forget_ahead(self) -> None:
        """Drop the rows claimed ahead and the claims under way: a recovery just took in-flight
        rows back (or the handle closes), so their claims may be gone; the next claim of each
        lane asks the cluster again."""
        self._ahead.clear()
        for task in self._ahead_claims.values():
            task.cancel()
        self._ahead_claims.clear()
