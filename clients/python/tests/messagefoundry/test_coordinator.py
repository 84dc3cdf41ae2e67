"""``RaftlaneCoordinator`` on a real three-node cluster: the intent of messagefoundry 0.1.0's
``test_db_coordinator_*`` tests (its PostgreSQL ``DbCoordinator``), ported to raftlane's
registry, leadership lease and counters (docs/SPEC.md §15), plus the fence: a leader that can
no longer renew steps down, and a deposed one learns it from its next campaign."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from messagefoundry.pipeline.cluster import ClusterCoordinator

from raftlane import Client
from raftlane.errors import ForbiddenError
from raftlane.messagefoundry import RaftlaneCoordinator
from raftlane.messagefoundry.coordinator import LEADERSHIP_GROUP
from raftlane.testing import ClusterHandle, empty_cluster
from raftlane.types import EngineNode

pytestmark = pytest.mark.cluster

FAST = {
    "heartbeat_seconds": 0.05,
    "node_timeout_seconds": 1.0,
    "leader_lease_ttl_seconds": 0.6,
    "leader_fence_timeout_seconds": 0.4,
}


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[ClusterHandle]:
    async with empty_cluster() as handle:
        yield handle


@pytest_asyncio.fixture
async def client(cluster: ClusterHandle) -> AsyncIterator[Client]:
    endpoints, token = cluster
    async with Client(endpoints, token) as c:
        yield c


async def until(check: Callable[[], Awaitable[bool]], *, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def _node(client: Client, node_id: str) -> EngineNode | None:
    listing = await client.engine_nodes()
    return next((n for n in listing.nodes if n.node_id == node_id), None)


async def test_registers_heartbeats_and_leaves_a_tombstone(client: Client) -> None:
    coord = RaftlaneCoordinator(client, "node-X", **FAST)
    assert isinstance(coord, ClusterCoordinator)  # messagefoundry's runtime-checkable protocol
    try:
        await coord.start()
        await coord.start()  # idempotent
        row = await _node(client, "node-X")
        assert row is not None and row.status == "active"
        first_seen = row.last_seen
        await coord.heartbeat_once()
        row = await _node(client, "node-X")
        assert row is not None and row.last_seen >= first_seen

        async def leads() -> bool:
            return coord.is_leader()

        await until(leads)
        assert coord.fence is not None
        assert coord.owns_lane("outbound:any") is False
        assert coord.lane_owner() == "node-X"
        assert coord.reclaims_inflight() and coord.is_clustered()
    finally:
        await coord.stop()
    assert coord.is_leader() is False
    left = await _node(client, "node-X")
    assert left is not None and left.status == "left"
    lease = await client.leadership("messagefoundry")
    assert (lease.owner, lease.expires_at, lease.fence) == (None, None, None)

    # Starting again re-activates the same single record.
    again = RaftlaneCoordinator(client, "node-X", **FAST)
    try:
        await again.start()
        listing = await client.engine_nodes()
        assert [n.node_id for n in listing.nodes].count("node-X") == 1
        again_row = await _node(client, "node-X")
        assert again_row is not None and again_row.status == "active"
    finally:
        await again.stop()


async def test_stop_is_safe_before_start(client: Client) -> None:
    coord = RaftlaneCoordinator(client, "never-started", **FAST)
    await coord.stop()
    await coord.stop()
    assert coord.is_leader() is False


async def test_single_leader_and_failover(client: Client) -> None:
    a = RaftlaneCoordinator(client, "node-A", **FAST)
    b = RaftlaneCoordinator(client, "node-B", **FAST)
    try:
        await a.start()
        await b.start()

        async def exactly_one() -> bool:
            return a.is_leader() ^ b.is_leader()

        await until(exactly_one)
        leader, follower = (a, b) if a.is_leader() else (b, a)
        await leader.stop()
        assert leader.is_leader() is False

        async def follower_leads() -> bool:
            return follower.is_leader()

        await until(follower_leads)
        stopped = await _node(client, leader.node_id)
        assert stopped is not None and stopped.status == "left"
    finally:
        await a.stop()
        await b.stop()


async def test_cluster_members_list_both_and_derive_one_leader(client: Client) -> None:
    a = RaftlaneCoordinator(client, "node-A", **FAST)
    b = RaftlaneCoordinator(client, "node-B", **FAST)
    try:
        await a.start()
        await b.start()

        async def settled() -> bool:
            members = await a.cluster_members()
            return len(members) == 2 and sum(m.is_leader for m in members) == 1

        await until(settled)
        members = await a.cluster_members()
        assert [m.node_id for m in members] == ["node-A", "node-B"]
        leaders = [m.node_id for m in members if m.is_leader]
        assert leaders == [a.node_id if a.is_leader() else b.node_id]
        for m in members:
            assert m.status == "active"
            assert m.last_seen is not None and m.started_at is not None
            assert m.host is not None and m.pid is not None
        owner, expires = await a.leadership_lease()
        assert owner == leaders[0] and expires is not None
    finally:
        await a.stop()
        await b.stop()


async def test_a_stale_leader_is_not_reported(cluster: ClusterHandle, client: Client) -> None:
    """A node that crashed while leading keeps its lease until it runs out, but its heartbeat
    goes stale: cluster_members reports no leader for it."""
    crashed = RaftlaneCoordinator(client, "node-crashed", **FAST)
    await crashed.heartbeat_once()
    await crashed.tick()  # takes the lease, then "crashes": no task runs
    assert crashed.is_leader()
    fresh = RaftlaneCoordinator(client, "node-fresh", **FAST)
    try:
        await fresh.heartbeat_once()
        await asyncio.sleep(FAST["node_timeout_seconds"] + 0.2)
        await fresh.heartbeat_once()
        members = {m.node_id: m for m in await fresh.cluster_members()}
        assert set(members) == {"node-crashed", "node-fresh"}
        assert members["node-crashed"].is_leader is False
    finally:
        await fresh.stop()


async def test_a_deposed_leader_learns_it_and_a_cut_off_one_steps_down(client: Client) -> None:
    clock = [0.0]
    a = RaftlaneCoordinator(client, "node-A", monotonic=lambda: clock[0], **FAST)
    b = RaftlaneCoordinator(client, "node-B", **FAST)
    await a.tick()
    assert a.is_leader()
    fence_a = a.fence
    # a cannot renew (no ticks) for longer than the fence timeout: it steps down by itself,
    # before its lease (0.6 s) can run out.
    clock[0] += FAST["leader_fence_timeout_seconds"] + 0.01
    a.check_fence()
    assert a.is_leader() is False
    # Once the lease ran out, b takes over under a new fence...
    await asyncio.sleep(FAST["leader_lease_ttl_seconds"] + 0.1)
    await b.tick()
    assert b.is_leader() and b.fence != fence_a
    # ...and a's next campaign tells it someone else leads.
    await a.tick()
    assert a.is_leader() is False
    await a.stop()
    await b.stop()


async def test_config_version_bumps_and_round_trips(client: Client) -> None:
    a = RaftlaneCoordinator(client, "node-A", **FAST)
    b = RaftlaneCoordinator(client, "node-B", **FAST)
    try:
        await a.start()
        await b.start()
        start = await a.config_version()
        assert await b.config_version() == start
        assert await a.bump_config_version() == start + 1
        assert a.config_version_cached() == start + 1

        async def b_sees_it() -> bool:
            return b.config_version_cached() == start + 1

        await until(b_sees_it)
    finally:
        await a.stop()
        await b.stop()


async def test_owns_lane_follows_the_lane_leases(client: Client) -> None:
    coord = RaftlaneCoordinator(client, "node-L", **FAST)
    try:
        await coord.start()
        await client.request(
            "POST",
            "/v1/channels/IB/messages",
            json={"raw": "MSH|1", "deliveries": [{"destination": "OB9", "payload": "p"}]},
        )
        claim = await client.claim_fifo(
            "outbound", "OB9", owner="node-L", ttl_ms=60_000, row_owner="node-L:1"
        )
        assert claim.item is not None

        async def owned() -> bool:
            return coord.owns_lane("outbound:OB9")

        await until(owned)
    finally:
        await coord.stop()


async def test_engines_on_engine_tokens_cannot_resign_or_leave_each_other(
    cluster: ClusterHandle, client: Client
) -> None:
    """Two engines under two `engine` principals (docs/SPEC.md §9.3, §9.8): each coordinates
    under its own node id, which is bound to its principal at its first heartbeat; the other
    can neither resign its leadership nor mark it left, nor beat as it."""
    endpoints, _ = cluster
    tok_a = (await client.create_token("engine-a", "engine")).token
    tok_b = (await client.create_token("engine-b", "engine")).token
    async with Client(endpoints, tok_a) as ca, Client(endpoints, tok_b) as cb:
        a = RaftlaneCoordinator(ca, "node-A", **FAST)
        try:
            await a.start()

            async def leads() -> bool:
                return a.is_leader()

            await until(leads)
            assert await client.owner("node-A") == "engine-a"
            with pytest.raises(ForbiddenError) as refused:
                await cb.resign(LEADERSHIP_GROUP, "node-A")
            assert refused.value.field == "node_id"
            with pytest.raises(ForbiddenError):
                await cb.engine_leave("node-A")
            with pytest.raises(ForbiddenError):
                await cb.engine_heartbeat("node-A")
            lease = await cb.leadership(LEADERSHIP_GROUP)
            assert lease.owner == "node-A"
            row = await _node(client, "node-A")
            assert row is not None and row.status == "active"
            # A worker token cannot run an engine's store at all: its users are the engine's.
            tok_w = (await client.create_token("worker-w", "worker")).token
            async with Client(endpoints, tok_w) as cw:
                with pytest.raises(ForbiddenError):
                    await cw.list_users(limit=0)
        finally:
            await a.stop()
        row = await _node(client, "node-A")
        assert row is not None and row.status == "left"
