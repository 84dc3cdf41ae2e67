"""``RaftlaneStore``'s worker claims wait at the server for work (``claim_wait_seconds``,
docs/SPEC.md §4.7a) on a real cluster on the cluster's own clock: answered as soon as a row
arrives, empty once the wait is over, and a worker cancelled while its claim waits leaves
neither the store nor the cluster holding anything."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import ClusterHandle, empty_cluster

pytestmark = pytest.mark.cluster

#: How late a waiting claim may answer after the enqueue that gave it work (busy machine).
PROMPT_S = 1.5


@pytest_asyncio.fixture(scope="module")
async def cluster() -> AsyncIterator[ClusterHandle]:
    async with empty_cluster() as handle:
        yield handle


@pytest_asyncio.fixture
async def store(cluster: ClusterHandle) -> AsyncIterator[RaftlaneStore]:
    endpoints, token = cluster
    s = await RaftlaneStore.open(endpoints, token, claim_wait_seconds=10.0)
    try:
        yield s
    finally:
        await s.close()


async def _enqueue_later(store: RaftlaneStore, channel: str, delay: float) -> float:
    await asyncio.sleep(delay)
    await store.enqueue_ingress(channel_id=channel, raw="MSH|1")
    return time.monotonic()


async def test_a_fifo_claim_waits_for_its_lanes_next_row(store: RaftlaneStore, name: str) -> None:
    started = time.monotonic()
    claim = asyncio.ensure_future(store.claim_next_fifo(name, stage="ingress"))
    enqueued = await _enqueue_later(store, name, 0.3)
    item = await claim
    answered = time.monotonic()
    assert item is not None
    assert answered - started >= 0.3
    assert answered - enqueued < PROMPT_S


async def test_an_unordered_claim_waits_for_a_due_row(store: RaftlaneStore, name: str) -> None:
    claim = asyncio.ensure_future(store.claim_ready(5, stage="ingress", channel_id=name))
    enqueued = await _enqueue_later(store, name, 0.3)
    items = await claim
    assert len(items) == 1
    assert time.monotonic() - enqueued < PROMPT_S


async def test_an_idle_claim_answers_empty_once_its_wait_is_over(
    cluster: ClusterHandle, name: str
) -> None:
    endpoints, token = cluster
    store = await RaftlaneStore.open(endpoints, token, claim_wait_seconds=0.5)
    try:
        started = time.monotonic()
        assert await store.claim_next_fifo(name, stage="ingress") is None
        assert await store.claim_ready(5, stage="ingress", channel_id=name) == []
        waited = time.monotonic() - started
        assert 1.0 <= waited < 1.0 + 2 * PROMPT_S
        # A claim dated by its caller (``now``) answers at once: it asks about that time.
        started = time.monotonic()
        assert await store.claim_ready(5, now=time.time(), stage="ingress", channel_id=name) == []
        assert time.monotonic() - started < 0.4
    finally:
        await store.close()


async def test_a_worker_cancelled_while_its_claim_waits_leaves_nothing_waiting(
    cluster: ClusterHandle, store: RaftlaneStore, name: str
) -> None:
    claim = asyncio.ensure_future(store.claim_next_fifo(name, stage="ingress"))
    await asyncio.sleep(0.3)
    claim.cancel()
    with pytest.raises(asyncio.CancelledError):
        await claim
    # The server dropped the waiter with its connection: the next row is not claimed by it,
    # and the store's next claim (another owner's, waiting) gets it.
    endpoints, token = cluster
    other = await RaftlaneStore.open(endpoints, token, claim_wait_seconds=10.0)
    try:
        waiting = asyncio.ensure_future(other.claim_next_fifo(name, stage="ingress"))
        await _enqueue_later(store, name, 0.3)
        item = await waiting
        assert item is not None
        # The cancelled store still works.
        assert await store.claim_ready(1, now=time.time(), stage="ingress", channel_id=name) == []
    finally:
        await other.close()
