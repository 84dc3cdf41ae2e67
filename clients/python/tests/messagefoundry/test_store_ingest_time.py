"""The ingest time messagefoundry hands its handlers: ``OutboxItem.created_at``, the claimed row's
creation time, the same at every claim of the row (ADR 0009 in messagefoundry's docs; its
PostgreSQL store reads it from the row). On raftlane a claim answers it from log format 4 on; a
cluster raises its format by itself within seconds of starting, but not in client-clock mode, so
this test raises it by hand first (and shows what an older format answers)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from messagefoundry.config.models import RetryPolicy
from messagefoundry.store.store import MessageStatus, Stage

from raftlane import Client
from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import empty_cluster

pytestmark = pytest.mark.cluster

RAW = "MSH|^~\\&|S|F|R|RF|20260101||ADT^A01|MSG1|P|2.5.1\rPID|1||100||DOE^JANE\r"


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[tuple[list[str], str]]:
    async with empty_cluster(node_args=["--test-client-clock"]) as (eps, token):
        yield eps, token


async def test_a_claimed_row_carries_its_creation_time_from_log_format_4(
    cluster: tuple[list[str], str],
) -> None:
    eps, token = cluster
    store = await RaftlaneStore.open(eps, token, client_clock=True)
    try:
        async with Client(eps, token) as admin:
            before = await admin.log_format()
            assert before.log_format < 4, "client-clock mode holds the format"
            # An older format's claim answers no creation time.
            await store.enqueue_ingress(channel_id="IBold", raw=RAW, now=50.0)
            old = await store.claim_next_fifo("IBold", stage=Stage.INGRESS.value, now=51.0)
            assert old is not None and old.created_at is None

            raised = await admin.raise_log_format(4)
            assert raised.log_format == 4

        mid = await store.enqueue_ingress(channel_id="IB1", raw=RAW, now=100.0)
        ingress = await store.claim_next_fifo("IB1", stage=Stage.INGRESS.value, now=105.0)
        assert ingress is not None and ingress.message_id == mid
        assert ingress.created_at == 100.0  # received, not claimed

        assert await store.route_handoff(
            ingress_id=ingress.id,
            message_id=mid,
            channel_id="IB1",
            handlers=[("h1", "x")],
            disposition=MessageStatus.ROUTED,
            now=107.5,
        )
        routed = await store.claim_next_fifo("IB1", stage=Stage.ROUTED.value, now=110.0)
        assert routed is not None and routed.created_at == 107.5  # handed to the transform stage

        await store.enqueue_message(
            channel_id="IB2", raw=RAW, deliveries=[("OB2", "p")], now=200.25
        )
        out = await store.claim_next_fifo("OB2", now=201.0)
        assert out is not None and out.created_at == 200.25
        # Claimed again after a failure, the row keeps its creation time.
        await store.mark_failed(out.id, "down", RetryPolicy(), now=202.0)
        again = await store.claim_next_fifo("OB2", now=10_000.0)
        assert again is not None and again.id == out.id and again.created_at == 200.25
    finally:
        await store.close()
