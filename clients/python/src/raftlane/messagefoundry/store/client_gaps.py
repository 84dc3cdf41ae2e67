"""The calls the store makes that :class:`raftlane.Client` has no typed method for yet, kept in
this one module so the gap is in one place: each names the member the client's method lacks.
Everything else in the store goes through the client's typed methods; once the client grows
these members, each function here becomes the typed call and this module goes away.

The raw calls still go through :meth:`Client.request` (same failover, ``Request-Id`` and errors
as every typed call).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...client import Client, segment
from ...types import MessageView


async def message_by_key(client: Client, key: str) -> MessageView:
    """``GET /v1/messages/{id}?body=true&record_view=false`` by raftlane's id or by a
    re-ingested child's key: the route takes either (docs/SPEC.md §14.7), while
    :meth:`Client.message` types its id as an integer only. A typed call all the same."""
    read: Callable[..., Awaitable[MessageView]] = client.message
    return await read(key, body=True, record_view=False)


async def enqueue_with_outcome(client: Client, channel: str, body: Mapping[str, Any]) -> str:
    """``POST /v1/channels/{channel}/messages`` with ``deliveries`` (a message its producer
    routed) or ``status``/``error`` (a message recorded on receipt): :meth:`Client.enqueue`
    sends neither member. Answers the message id as the engine's text id."""
    answer = await client.request(
        "POST", f"/v1/channels/{segment(channel)}/messages", json=dict(body)
    )
    return str(_object(answer)["message_id"])


async def reingress_with_child(client: Client, row: int, body: Mapping[str, Any]) -> None:
    """``POST /v1/rows/{row}/reingress`` with ``child_key``, ``control_id``, ``message_type``,
    ``summary`` and ``peek_failed``: :meth:`Client.reingress` sends only ``fence``,
    ``loopback_channel`` and ``depth_cap``."""
    await client.request("POST", f"/v1/rows/{segment(row)}/reingress", json=dict(body))


async def audit_append_as(client: Client, body: Mapping[str, Any]) -> None:
    """``POST /v1/audit`` with ``actor`` (the engine records on behalf of its own users,
    docs/SPEC.md §14.5): :meth:`Client.audit_append` has no ``actor``."""
    await client.request("POST", "/v1/audit", json=dict(body))


def _object(answer: Any) -> dict[str, Any]:
    return answer if isinstance(answer, dict) else {}
