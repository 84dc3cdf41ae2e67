"""QueueStore, transform state and reference sets: the synchronous views the engine's handlers
read, reference writes, and convergence of the views with the cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .context import StorePart


class StatePart(StorePart):
    """messagefoundry's ``QueueStore`` state and reference-set views."""

    def state_view(self) -> Mapping[tuple[str, str], Any]:
        return MappingProxyType(self._ctx.caches.state)

    def reference_view(self) -> Mapping[str, Mapping[str, Any]]:
        return MappingProxyType(self._ctx.caches.reference)

    async def write_reference_snapshot(
        self, *, name: str, version: str, rows: Mapping[str, Any]
    ) -> None:
        await self._ctx.client.put_reference(
            name, version, {k: json.dumps(v) for k, v in rows.items()}
        )
        self._ctx.caches.put_reference(name, version, rows)

    async def converge_reference_cache(self) -> list[str]:
        """Reload every reference set whose version in the cluster differs from the one this
        handle reflects; answers the names reloaded."""
        return await self._ctx.caches.converge_reference(self._ctx.client)

    async def converge_state_cache(self) -> list[str]:
        """Re-read every namespace whose version in the cluster moved past the one this handle
        reflects; answers the namespaces re-read."""
        return await self._ctx.caches.converge_state(self._ctx.client)

    def enable_state_convergence(self) -> None:
        """Nothing to do: raftlane versions every namespace on every write."""
