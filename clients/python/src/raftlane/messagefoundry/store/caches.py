"""The read-through caches of transform state and reference sets a handle serves the engine's
handlers from (messagefoundry reads them synchronously, through ``state_view`` and
``reference_view``), each kept at the version of the cluster it last read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...client import Client
from ...types import StateOp


def _reference_version(label: str | None, version: int) -> str:
    """A reference set's version as the engine names it: the writer's text label, else the
    number (docs/SPEC.md §14.8)."""
    return label if label is not None else str(version)


class Caches:
    """Transform state by ``(namespace, key)`` and reference sets by name, with the version of
    each namespace and set they reflect."""

    def __init__(self) -> None:
        self.state: dict[tuple[str, str], Any] = {}
        self.state_versions: dict[str, int] = {}
        self.reference: dict[str, dict[str, Any]] = {}
        self.reference_versions: dict[str, str] = {}

    def apply_state_ops(self, ops: Iterable[StateOp]) -> None:
        """Writes this handle committed: visible to its handlers at once."""
        for op in ops:
            self.state[(op.namespace, op.key)] = op.value

    def put_reference(self, name: str, version: str, rows: Mapping[str, Any]) -> None:
        self.reference[name] = dict(rows)
        self.reference_versions[name] = version

    async def converge_reference(self, client: Client) -> list[str]:
        """Reload every reference set whose version in the cluster differs from the one this
        handle reflects; answers the names reloaded."""
        listing = await client.reference_sets()
        refreshed = []
        for entry in listing.sets:
            name = entry.name
            version = _reference_version(entry.label, entry.version)
            if self.reference_versions.get(name) == version:
                continue
            snap = await client.reference(name)
            self.reference[name] = {k: json.loads(v) for k, v in snap.rows.items()}
            self.reference_versions[name] = _reference_version(snap.label, snap.version)
            refreshed.append(name)
        return refreshed

    async def converge_state(self, client: Client) -> list[str]:
        """Re-read every namespace whose version in the cluster moved past the one this handle
        reflects; answers the namespaces re-read."""
        listing = await client.namespaces()
        refreshed = []
        for entry in listing.namespaces:
            ns = entry.namespace
            if self.state_versions.get(ns) == entry.version:
                continue
            view = await client.namespace(ns, entries=True)
            for key in [k for k in self.state if k[0] == ns]:
                del self.state[key]
            for e in view.entries or []:
                self.state[(ns, e.key)] = e.value
            self.state_versions[ns] = view.version
            refreshed.append(ns)
        return refreshed
