"""``RaftlaneStore`` methods of messagefoundry's ``Store`` protocol that its PostgreSQL-store
suite does not exercise, on a real cluster in client-clock mode: pending approvals, ``viewed``
events, the message list's channel scope, and body purges by cutoff."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import empty_cluster

pytestmark = pytest.mark.cluster


@pytest_asyncio.fixture
async def store() -> AsyncIterator[RaftlaneStore]:
    async with empty_cluster(node_args=["--test-client-clock"]) as (endpoints, token):
        s = await RaftlaneStore.open(endpoints, token, owner="node-a:1", client_clock=True)
        try:
            yield s
        finally:
            await s.close()


async def test_pending_approvals_are_listed_decided_once_and_expire(store: RaftlaneStore) -> None:
    await store.create_pending_approval(
        approval_id="ap-1",
        operation="replay_dead",
        params='{"destination": "OB1"}',
        requester="alice",
        requested_at=100.0,
        expires_at=200.0,
    )
    await store.create_pending_approval(
        approval_id="ap-2",
        operation="purge",
        params="{}",
        requester="alice",
        requested_at=110.0,
        expires_at=None,
    )
    listed = await store.list_pending_approvals(now=150.0)
    assert [a["id"] for a in listed] == ["ap-2", "ap-1"]
    assert listed[0]["expires_at"] is None  # never expires
    assert listed[1]["params"] == '{"destination": "OB1"}'
    # Past its expiry ap-1 is no longer listed.
    assert [a["id"] for a in await store.list_pending_approvals(now=250.0)] == ["ap-2"]

    assert await store.decide_pending_approval(
        "ap-2", status="approved", approver="bob", decided_at=300.0
    )
    assert not await store.decide_pending_approval(
        "ap-2", status="rejected", approver="carol", decided_at=301.0
    )
    decided = await store.get_pending_approval("ap-2")
    assert decided is not None
    assert (decided["status"], decided["approver"], decided["decided_at"]) == (
        "approved",
        "bob",
        300.0,
    )
    assert await store.get_pending_approval("nobody") is None


async def test_views_scopes_and_purges(store: RaftlaneStore) -> None:
    mid = await store.enqueue_message(
        channel_id="IB", raw="MSH|1", deliveries=[("OB1", "p")], now=100.0
    )
    await store.enqueue_message(channel_id="IB2", raw="MSH|2", deliveries=[], now=101.0)
    await store.record_view(mid, actor="alice", now=102.0)
    events = await store.events_for(mid)
    assert events[-1]["event"] == "viewed" and events[-1]["detail"] == "alice"
    (listed,) = await store.list_messages(channel_id="IB")
    assert listed["last_event"] == "viewed"

    assert [m["channel_id"] for m in await store.list_messages(allowed_channels=["IB2"])] == ["IB2"]
    assert await store.count_messages(allowed_channels=["IB", "IB2"]) == 2
    assert await store.count_messages(allowed_channels=[]) == 0

    # Bodies received before the cutoff lose their raw text, once no row of theirs is live:
    # the unrouted message at 101 goes, the routed one (its row still pending) stays.
    assert await store.purge_message_bodies(older_than=101.5, now=500.0) == 1
    kept = await store.get_message(mid)
    assert kept is not None and kept["purged"] is False and kept["raw"] == "MSH|1"
    (unrouted,) = await store.list_messages(channel_id="IB2")
    assert unrouted["purged"] is True
