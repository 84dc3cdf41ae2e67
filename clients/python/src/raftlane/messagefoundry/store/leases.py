"""The claims a handle holds: each claimed row's fence, and the leases kept alive while the
engine works on them.

raftlane fences every completion (docs/SPEC.md §4.6) while the engine completes rows by id, so
the handle keeps the fence of every row it claimed (row id → fence) and sends it. messagefoundry's
engine never renews a lease itself (its own stores hold an in-flight row until it is completed),
so the handle renews the leases of the rows it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from typing import TYPE_CHECKING

from ...errors import RaftlaneError
from .outcomes import NeverClaimedError, log

if TYPE_CHECKING:
    from .context import StoreContext

#: How many claims' fences a handle remembers (oldest forgotten first).
FENCE_MEMORY = 65_536


class Leases:
    """The fences of the rows a handle claimed and the rows whose leases it renews."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self.fences: OrderedDict[int, int] = OrderedDict()
        #: Rows this handle claimed and has not completed: their leases are renewed every third
        #: of the TTL while the engine works on them.
        self.held: set[int] = set()
        self._renewer: asyncio.Task[None] | None = None

    def remember(self, row_id: int, fence: int) -> None:
        self.fences[row_id] = fence
        self.fences.move_to_end(row_id)
        while len(self.fences) > FENCE_MEMORY:
            self.fences.popitem(last=False)

    async def fence(self, row_id: int) -> int:
        """The fence to complete ``row_id`` with: this handle's claim, else the row's current
        claim (or, once it left inflight, its last one) from ``GET /v1/rows/{id}``. The completion
        is still checked by the cluster against the row's fence when it applies."""
        fence = self.fences.get(row_id)
        if fence is not None:
            return fence
        row = (await self._ctx.client.row(row_id)).row
        if row.claim is not None:
            return row.claim.fence
        if row.last_fence is not None:
            return row.last_fence
        raise NeverClaimedError(
            f"row {row_id} has never been claimed: no fence to complete it with"
        )

    def hold(self, row_id: int) -> None:
        """Keep ``row_id``'s lease alive until this handle completes it. Not in client-clock
        mode: there the caller's ``now`` is the only clock, and a renewal at the real time would
        move the cluster's time past every lease the test set up."""
        self.held.add(row_id)
        if self._renewer is None and not self._ctx.client_clock:
            self._renewer = asyncio.get_running_loop().create_task(self._renew_held())

    async def _renew_held(self) -> None:
        """Every third of the lease TTL, renew the leases of the rows this handle holds (one
        replicated write for all of them). A row whose fence the handle forgot is dropped: it
        can no longer complete it anyway."""
        ctx = self._ctx
        interval = ctx.settings.lease_ttl_seconds / 3
        while True:
            await asyncio.sleep(interval)
            self.held.intersection_update(self.fences)
            rows = sorted(self.held)
            if not rows:
                continue
            try:
                await ctx.client.renew(rows, owner=ctx.owner, ttl_ms=ctx.ttl_ms)
            except RaftlaneError as e:
                log.warning("renewing the leases of %d held row(s) failed: %s", len(rows), e)

    async def stop(self) -> None:
        """Stop renewing (the handle closes)."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
            self._renewer = None
