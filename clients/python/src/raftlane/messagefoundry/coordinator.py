"""``RaftlaneCoordinator``: messagefoundry 0.1.0's ``ClusterCoordinator`` on a raftlane cluster.

Several engine processes share one raftlane cluster. Each keeps its record in raftlane's
engine registry with heartbeats, campaigns for one leadership lease (docs/SPEC.md §15) and
reads the shared configuration version there; FIFO lane ownership is decided at claim time by
the store's ``claim_next_fifo(owner=node_id)`` (lane leases in the replicated state), so
``lane_owner()`` is this node's id and ``owns_lane()`` is an observability hint refreshed each
tick. The semantics follow messagefoundry's PostgreSQL ``DbCoordinator``:

- the maintenance task beats, then campaigns (take or renew the lease for
  ``leader_lease_ttl_seconds``), then refreshes the owned lanes and the configuration version,
  every ``heartbeat_seconds``;
- a **fence watchdog** without any I/O demotes this node when its last successful renewal is
  older than ``leader_fence_timeout_seconds`` (shorter than the lease), so a leader cut off from
  the cluster stops its leader work before anyone else may take the lease;
- a deposed leader learns it from its next campaign, which answers the other owner;
- ``stop()`` gives leadership up and marks the node ``left`` (a tombstone the registry keeps).

Errors of a tick are logged and retried on the next one; they never stop the task.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from messagefoundry.pipeline.cluster import ClusterMember

from ..client import Client
from ..errors import RaftlaneError

__all__ = ["CONFIG_VERSION_COUNTER", "LEADERSHIP_GROUP", "RaftlaneCoordinator"]

log = logging.getLogger("raftlane.messagefoundry.coordinator")

#: The leadership group every engine node of one cluster campaigns in.
LEADERSHIP_GROUP = "messagefoundry"
#: The shared counter that carries the engine's configuration version.
CONFIG_VERSION_COUNTER = "messagefoundry.config_version"


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class RaftlaneCoordinator:
    """One engine node's view of the cluster (see the module docs)."""

    def __init__(
        self,
        client: Client,
        node_id: str,
        *,
        heartbeat_seconds: float = 10.0,
        node_timeout_seconds: float = 30.0,
        leader_lease_ttl_seconds: float = 30.0,
        leader_fence_timeout_seconds: float = 20.0,
        group: str = LEADERSHIP_GROUP,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if leader_fence_timeout_seconds >= leader_lease_ttl_seconds:
            raise ValueError(
                "leader_fence_timeout_seconds must be shorter than leader_lease_ttl_seconds, or a "
                "cut-off leader could still act after another node took the lease"
            )
        self._client = client
        self.node_id = node_id
        self._heartbeat = heartbeat_seconds
        self._node_timeout = node_timeout_seconds
        self._lease_ttl = leader_lease_ttl_seconds
        self._fence_timeout = leader_fence_timeout_seconds
        self._fence_tick = max(0.05, min(1.0, leader_fence_timeout_seconds / 5.0))
        self._group = group
        self._monotonic = monotonic
        self._host = socket.gethostname()
        self._pid = os.getpid()
        self._tasks: list[asyncio.Task[None]] = []
        self._is_leader = False
        self._last_renew_ok: float | None = None
        self._fence: int | None = None
        self._owned_lanes: frozenset[str] = frozenset()
        self._config_version = 0

    @classmethod
    def for_store(cls, store: Any, cluster_settings: Any = None) -> RaftlaneCoordinator:
        """The coordinator of a :class:`~raftlane.messagefoundry.RaftlaneStore`: its client, and
        its ``_owner`` as node id unless ``[cluster].node_id`` pins one; the timings from
        messagefoundry's ``[cluster]`` settings when given."""

        def setting(name: str, default: float) -> float:
            return float(getattr(cluster_settings, name, None) or default)

        node_id = getattr(cluster_settings, "node_id", None) or store._owner
        return cls(
            store._client,
            node_id,
            heartbeat_seconds=setting("heartbeat_seconds", 10.0),
            node_timeout_seconds=setting("node_timeout_seconds", 30.0),
            leader_lease_ttl_seconds=setting("leader_lease_ttl_seconds", 30.0),
            leader_fence_timeout_seconds=setting("leader_fence_timeout_seconds", 20.0),
        )

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Register this node and start the maintenance and fence tasks; a second call while
        running does nothing."""
        if self._tasks:
            return
        await self.heartbeat_once()
        self._config_version = await self._client.counter(CONFIG_VERSION_COUNTER)
        self._tasks = [
            asyncio.create_task(
                self._maintenance_loop(), name=f"raftlane-coordinator-{self.node_id}"
            ),
            asyncio.create_task(self._fence_loop(), name=f"raftlane-fence-{self.node_id}"),
        ]

    async def stop(self) -> None:
        """Stop the tasks first (so no tick renews after the resignation), then give leadership
        up and mark this node left. Safe before :meth:`start` and twice."""
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._is_leader = False
        try:
            await self._client.resign(self._group, self.node_id)
            await self._client.engine_leave(self.node_id)
        except (RaftlaneError, OSError) as e:
            log.warning("could not mark node %s left: %s", self.node_id, e)

    # --- the cheap, cached gates ----------------------------------------------------------------

    def is_leader(self) -> bool:
        return self._is_leader

    def owns_lane(self, lane_key: str) -> bool:
        return lane_key in self._owned_lanes

    def lane_owner(self) -> str | None:
        return self.node_id

    def reclaims_inflight(self) -> bool:
        return True

    def is_clustered(self) -> bool:
        return True

    def config_version_cached(self) -> int:
        return self._config_version

    @property
    def fence(self) -> int | None:
        """The fence of the leadership this node holds (changes with every new owner)."""
        return self._fence if self._is_leader else None

    # --- reads and writes -----------------------------------------------------------------------

    async def config_version(self) -> int:
        self._config_version = await self._client.counter(CONFIG_VERSION_COUNTER)
        return self._config_version

    async def bump_config_version(self) -> int:
        self._config_version = await self._client.bump_counter(CONFIG_VERSION_COUNTER)
        return self._config_version

    async def cluster_members(self) -> list[ClusterMember]:
        """Every registered node, by node id; at most one is the leader: the live lease's owner,
        if its heartbeat is fresh (``last_seen`` within ``node_timeout_seconds``)."""
        listing = await self._client.engine_nodes()
        lease = await self._client.leadership(self._group)
        now = listing.now
        expires = lease.expires_at
        live_owner = lease.owner if expires is not None and now <= expires else None
        members = []
        for n in listing.nodes:
            fresh = now - n.last_seen <= _ms(self._node_timeout)
            members.append(
                ClusterMember(
                    node_id=n.node_id,
                    host=n.host,
                    pid=n.pid,
                    started_at=n.started_at / 1000,
                    last_seen=n.last_seen / 1000,
                    status=n.status,
                    is_leader=n.node_id == live_owner and fresh and n.status == "active",
                )
            )
        return members

    async def leadership_lease(self) -> tuple[str | None, float | None]:
        lease = await self._client.leadership(self._group)
        expires = lease.expires_at
        return lease.owner, None if expires is None else expires / 1000

    async def heartbeat_once(self) -> None:
        await self._client.engine_heartbeat(self.node_id, host=self._host, pid=self._pid)

    # --- the tasks ------------------------------------------------------------------------------

    async def _campaign(self) -> None:
        sent_at = self._monotonic()
        lease = await self._client.campaign(self._group, self.node_id, ttl_ms=_ms(self._lease_ttl))
        if lease.owner == self.node_id:
            if not self._is_leader:
                log.info("node %s leads (fence %s)", self.node_id, lease.fence)
            self._is_leader = True
            self._fence = lease.fence
            # Measured from before the request: the lease may have been granted that early.
            self._last_renew_ok = sent_at
        else:
            if self._is_leader:
                log.warning("node %s was deposed; %s leads", self.node_id, lease.owner)
            self._is_leader = False

    async def tick(self) -> None:
        """One maintenance round: beat, campaign, refresh the cached lanes and version."""
        await self.heartbeat_once()
        await self._campaign()
        self._owned_lanes = frozenset(await self._client.held_lanes(self.node_id))
        self._config_version = await self._client.counter(CONFIG_VERSION_COUNTER)

    async def _maintenance_loop(self) -> None:
        while True:
            try:
                await self.tick()
            except (RaftlaneError, OSError, KeyError, TypeError, ValueError) as e:
                # A tick's failure (the cluster unreachable, an election under way) is retried
                # by the next one; the fence task demotes a leader that stays cut off.
                log.warning("cluster maintenance of %s failed: %s", self.node_id, e)
            await asyncio.sleep(self._heartbeat)

    def check_fence(self) -> None:
        """Demote this node if its last successful renewal is older than the fence timeout."""
        if not self._is_leader or self._last_renew_ok is None:
            return
        if self._monotonic() - self._last_renew_ok > self._fence_timeout:
            log.warning(
                "node %s could not renew its leadership for %.1f s: stepping down",
                self.node_id,
                self._fence_timeout,
            )
            self._is_leader = False

    async def _fence_loop(self) -> None:
        while True:
            self.check_fence()
            await asyncio.sleep(self._fence_tick)
