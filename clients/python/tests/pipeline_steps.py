"""Steps several tests take to put a row where they need it, written once."""

from __future__ import annotations

from raftlane import Client


async def outbound_row(client: Client, channel: str, destination: str, raw: str) -> None:
    """Enqueue ``raw`` on ``channel`` and hand its ingress row on to ``destination``: one
    pending outbound row (``channel`` must have no other ingress row pending)."""
    await client.enqueue(channel, raw)
    (row,) = await client.claim("ingress", owner="router", ttl_ms=30_000, channel=channel)
    assert (await client.handoff(row.row_id, row.fence, [(destination, "OUT")])).applied
