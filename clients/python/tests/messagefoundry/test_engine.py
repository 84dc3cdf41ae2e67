"""messagefoundry's ``Engine`` on a ``RaftlaneStore``: one HL7 message end to end.

A file inbound (a directory polled for ``*.hl7``) feeds a router that sends every ADT to one
handler; the handler stamps MSH-3 and sends the message to a file outbound. The engine runs its
staged pipeline on raftlane: ``enqueue_ingress`` at receipt, the FIFO ingress and routed workers
(``route_handoff``, ``transform_handoff``), the delivery worker (``mark_done``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("messagefoundry")

from messagefoundry.config.wiring import (
    File,
    InboundConnection,
    OutboundConnection,
    Registry,
    Send,
)
from messagefoundry.pipeline.engine import Engine

from raftlane.messagefoundry import RaftlaneStore
from raftlane.testing import ClusterHandle, empty_cluster

ADT = (
    "MSH|^~\\&|LAB|NORTH|EMR|SOUTH|20261205120000||ADT^A01|RL0001|P|2.5.1\r"
    "EVN|A01|20261205120000\r"
    "PID|1||4711^^^NORTH^MR||ROE^RICHARD\r"
)


@pytest_asyncio.fixture
async def own_cluster() -> AsyncIterator[ClusterHandle]:
    async with empty_cluster() as handle:
        yield handle


def _registry(inbox: Path, outbox: Path) -> Registry:
    reg = Registry()
    reg.add_inbound(
        InboundConnection("lab_in", File(directory=str(inbox), poll_seconds=0.05), router="by_type")
    )
    reg.add_outbound(
        OutboundConnection("emr_out", File(directory=str(outbox), filename="{MSH-10}.hl7"))
    )

    def by_type(msg: Any) -> list[str]:
        return ["stamp"] if msg["MSH-9.1"] == "ADT" else []

    def stamp(msg: Any) -> Send:
        msg["MSH-3"] = "RAFTLANE"
        return Send("emr_out", msg)

    reg.add_router("by_type", by_type)
    reg.add_handler("stamp", stamp)
    return reg


@pytest.mark.cluster
async def test_engine_delivers_one_message_end_to_end(
    own_cluster: ClusterHandle, tmp_path: Path
) -> None:
    endpoints, token = own_cluster
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    outbox.mkdir()
    store = await RaftlaneStore.open(endpoints, token)
    engine = Engine(store, poll_interval=0.05)
    engine.add_registry(_registry(inbox, outbox))
    try:
        await engine.start()
        (inbox / "one.hl7").write_text(ADT)
        delivered = outbox / "RL0001.hl7"
        for _ in range(300):
            if delivered.exists() and (await store.stats()).get("done") == 1:
                break
            await asyncio.sleep(0.05)
        assert delivered.exists(), "the message never reached the file outbound"
        assert "|RAFTLANE|" in delivered.read_text()
        (msg,) = await store.list_messages(channel_id="lab_in")
        assert msg["status"] == "processed"
        events = [e["event"] for e in await store.events_for(msg["id"])]
        assert events[0] == "received" and "delivered" in events
    finally:
        await engine.stop()  # stops the graph and closes the store
