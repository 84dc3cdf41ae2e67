"""RaftlaneStore against a scripted transport: the edge translations (ids, times, the client-time
header, fences). No cluster needed."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("messagefoundry")

from messagefoundry.config.models import RetryPolicy as MfRetryPolicy
from messagefoundry.pipeline.leader_tasks import ReclaimingStore
from messagefoundry.store.base import AuditStore, AuthStore, QueueStore, Store, StoreLifecycle
from messagefoundry.store.store import MessageStatus

from raftlane import Client
from raftlane.errors import BadRequestError, NotFoundError
from raftlane.messagefoundry import (
    CLIENT_TIME_HEADER,
    RaftlaneStore,
)
from raftlane.messagefoundry import store as store_package
from raftlane.messagefoundry.store.audit import AuditPart
from raftlane.messagefoundry.store.roles import RolesPart
from raftlane.messagefoundry.store.sessions import SessionsPart
from raftlane.messagefoundry.store.users import UsersPart

README = Path(__file__).resolve().parents[1] / "README.md"

Handler = Callable[[httpx.Request], httpx.Response]


def _store(handler: Handler, **kw: Any) -> RaftlaneStore:
    client = Client(
        ["127.0.0.1:1"], "t", follow_leader=False, transport=httpx.MockTransport(handler)
    )
    return RaftlaneStore(client, owner="me", **{"client_clock": True, **kw})


def _protocol_members(protocol: type) -> set[str]:
    """The methods and attributes a messagefoundry protocol declares itself (not inherited)."""
    own = set(vars(protocol)) | set(getattr(protocol, "__annotations__", {}))
    return {n for n in own if not n.startswith("_")}


async def test_the_store_is_every_protocol_messagefoundry_composes() -> None:
    store = _store(lambda req: httpx.Response(200, json={}))
    for protocol in (StoreLifecycle, QueueStore, AuditStore, AuthStore, ReclaimingStore):
        missing = sorted(n for n in _protocol_members(protocol) if not hasattr(store, n))
        assert not missing, f"{protocol.__name__} lacks {missing}"
    assert isinstance(store, Store)
    # The audit and auth protocols are served by their own parts, not by the queue's.
    assert _protocol_members(AuditStore) <= set(dir(AuditPart))
    auth = set(dir(UsersPart)) | set(dir(RolesPart)) | set(dir(SessionsPart))
    assert _protocol_members(AuthStore) <= auth
    await store.close()


def test_the_store_makes_no_raw_calls() -> None:
    """Every part of the store calls the client's typed methods: no raw request, no path."""
    root = Path(store_package.__file__).parent
    raw = {
        p.name
        for p in root.glob("*.py")
        if re.search(r"\.request\(|_request\(|[\"']/v1", p.read_text())
    }
    assert raw == set()


def _claimed(row_id: int, fence: int, **kw: Any) -> dict[str, Any]:
    return {
        "row_id": row_id,
        "message_id": 3,
        "stage": "outbound",
        "channel_id": "IB",
        "destination_name": "OB1",
        "handler_name": None,
        "payload": "p",
        "attempts": 1,
        "fence": fence,
        "lease_expires_at": 230_000,
        **kw,
    }


async def test_claim_then_done_sends_times_in_ms_and_the_claims_fence() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": [_claimed(5, 41)]})
        return httpx.Response(200, json={"ok": True, "index": 9})

    store = _store(handler)
    (item,) = await store.claim_ready(now=200.0)
    assert (item.id, item.message_id, item.payload, item.attempts) == ("5", "3", "p", 1)
    await store.mark_done(item.id, now=300.25)
    claim, done = seen
    assert claim.headers[CLIENT_TIME_HEADER] == "200000"
    assert json.loads(claim.content) == {
        "stage": "outbound",
        "limit": 10,
        "owner": "me",
        "ttl_ms": 30_000,
    }
    assert done.url.path == "/v1/rows/5/done"
    assert done.headers[CLIENT_TIME_HEADER] == "300250"
    assert json.loads(done.content) == {"fence": 41}
    await store.close()


async def test_no_header_without_now() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={"message_id": 8, "duplicate": False, "index": 2})

    store = _store(handler)
    assert await store.enqueue_ingress(channel_id="IB", raw="MSH|", metadata='{"a": 1}') == "8"
    assert CLIENT_TIME_HEADER.lower() not in seen[0].headers
    assert json.loads(seen[0].content) == {"raw": "MSH|", "metadata": {"a": 1}}
    await store.close()


async def test_fifo_claim_without_an_owner_takes_no_lane_lease() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(req.content))
        return httpx.Response(200, json={"item": _claimed(7, 50)})

    store = _store(handler)
    item = await store.claim_next_fifo("OB1", now=1.0)
    assert item is not None and item.id == "7"
    assert await store.claim_next_fifo("OB1", now=2.0) is not None
    assert bodies == [{"owner": "me", "ttl_ms": 30_000, "lane_lease": False}] * 2
    await store.close()


async def test_a_refused_fifo_claim_raises_naming_the_member() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        err = {"code": "invalid", "message": "unknown field", "field": "lane_lease"}
        return httpx.Response(400, json={"error": err})

    store = _store(handler)
    with pytest.raises(BadRequestError) as refused:
        await store.claim_next_fifo("OB1", now=1.0)
    assert refused.value.field == "lane_lease"
    await store.close()


async def test_fifo_claim_with_a_lane_owner_names_the_row_owner() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(req.content))
        return httpx.Response(200, json={"item": None, "reason": "empty"})

    store = _store(handler, lease_ttl_seconds=60.0)
    assert await store.claim_next_fifo("IB", stage="ingress", owner="node-a") is None
    assert await store.claim_next_fifo("IB", stage="ingress", owner="me") is None
    assert bodies == [
        {"owner": "node-a", "ttl_ms": 60_000, "row_owner": "me"},
        {"owner": "me", "ttl_ms": 60_000},
    ]
    await store.close()


async def test_worker_claims_wait_at_the_server_unless_dated_or_claimed_ahead() -> None:
    bodies: list[tuple[str, dict[str, Any]]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        bodies.append((req.url.path, json.loads(req.content)))
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": []})
        if req.url.path.endswith("/claim"):
            return httpx.Response(200, json={"item": _claimed(7, 50)})
        return httpx.Response(200, json={"ok": True, "index": 9})

    store = _store(handler, client_clock=False, claim_wait_seconds=2.5)
    assert await store.claim_ready(stage="ingress") == []
    assert await store.claim_ready(now=5.0, stage="ingress") == []
    item = await store.claim_next_fifo("OB1")
    assert item is not None
    await store.mark_done(item.id)
    # The lane's next claim takes the row claimed ahead (sent as soon as done was answered).
    assert await store.claim_next_fifo("OB1") is not None
    await store.close()
    waits = [(path, body.get("wait_ms")) for path, body in bodies]
    assert waits == [
        ("/v1/claims", 2500),  # the engine's worker: waits
        ("/v1/claims", None),  # dated by its caller: answers at once
        ("/v1/lanes/outbound/OB1/claim", 2500),
        ("/v1/rows/7/done", None),
        ("/v1/lanes/outbound/OB1/claim", None),  # claimed ahead: answers at once
    ]
    # On a client-clock cluster, or with no wait set, nothing waits.
    bodies.clear()
    for store in (_store(handler), _store(handler, client_clock=False, claim_wait_seconds=0)):
        await store.claim_ready(stage="ingress")
        await store.close()
    assert [body.get("wait_ms") for _, body in bodies] == [None, None]
    with pytest.raises(ValueError, match="claim_wait_seconds"):
        _store(handler, claim_wait_seconds=31)


async def test_an_idle_engines_claims_log_nothing_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # messagefoundry's service logs at INFO; its idle workers claim many times a second.
    caplog.set_level(logging.DEBUG)

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": []})
        return httpx.Response(200, json={"item": None, "reason": "empty"})

    store = _store(handler, client_clock=False)
    for _ in range(5):
        assert await store.claim_ready(stage="outbound") == []
        assert await store.claim_next_fifo("OB1") is None
    await store.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
    assert len([r for r in caplog.records if r.name == "raftlane.client"]) == 10


async def test_row_lease_tells_a_missing_route_from_a_missing_row() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        message = "no such route" if req.url.path == "/v1/rows/1" else "row 2 not found"
        return httpx.Response(404, json={"error": {"code": "not_found", "message": message}})

    store = _store(handler)
    with pytest.raises(NotFoundError):
        await store.row_lease("1")
    assert await store.row_lease("2") is None
    await store.close()


async def test_row_lease_and_lane_lease_in_seconds() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/rows/4":
            row = {
                "id": 4,
                "message_id": 3,
                "stage": "outbound",
                "channel_id": "IB",
                "destination_name": "OB1",
                "handler_name": None,
                "payload": "p",
                "status": "inflight",
                "attempts": 1,
                "next_attempt_at": 200_000,
                "last_error": None,
                "created_at": 200_000,
                "updated_at": 200_000,
                "claim": {"owner": "me", "lease_expires_at": 230_000, "fence": 3},
                "last_fence": 3,
            }
            return httpx.Response(200, json={"row": row})
        holder = {"owner": "A", "expires_at": 260_500}
        lane = {"lane": "outbound:OB1", "stage": "outbound", "name": "OB1", "depth": 0}
        lane |= {"inflight": 1, "holder": holder, "oldest": None, "oldest_age_ms": None}
        return httpx.Response(200, json=lane)

    store = _store(handler)
    assert await store.row_lease("4") == {
        "owner": "me",
        "lease_expires_at": 230.0,
        "status": "inflight",
    }
    assert await store.lane_lease("outbound:OB1") == {"owner": "A", "lease_expires_at": 260.5}
    await store.close()


async def test_now_is_ignored_unless_the_cluster_runs_on_the_client_clock() -> None:
    """In production the cluster stamps time; a node without the test mode refuses the header."""
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={"message_id": 8, "duplicate": False, "index": 2})

    store = _store(handler, client_clock=False)
    await store.enqueue_ingress(channel_id="IB", raw="MSH|", now=1234.5)
    assert CLIENT_TIME_HEADER.lower() not in seen[0].headers
    await store.close()


async def test_held_rows_have_their_leases_renewed_until_completed() -> None:
    """messagefoundry's engine never renews a lease (its own stores hold an in-flight row until
    it completes it), so the store does: every third of the TTL, the rows it holds, in one
    request; a completed row is no longer renewed."""
    renewals: list[list[int]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": [_claimed(5, 41), _claimed(6, 42)]})
        if req.url.path == "/v1/leases/renew":
            body = json.loads(req.content)
            assert body["owner"] == "me" and body["ttl_ms"] == 300
            renewals.append(body["ids"])
            return httpx.Response(200, json={"renewed": len(body["ids"]), "index": 3})
        return httpx.Response(200, json={"ok": True, "index": 9})

    store = _store(handler, client_clock=False, lease_ttl_seconds=0.3)
    await store.claim_ready()
    await asyncio.sleep(0.25)
    await store.mark_done("5")
    await asyncio.sleep(0.25)
    await store.close()
    assert renewals[0] == [5, 6]
    assert renewals[-1] == [6]


async def test_no_renewals_on_the_client_clock() -> None:
    """In client-clock mode the caller's ``now`` is the only clock: a renewal at the real time
    would move the cluster's time past every lease the test set up."""
    paths: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        paths.append(req.url.path)
        return httpx.Response(200, json={"items": [_claimed(5, 41)]})

    store = _store(handler, lease_ttl_seconds=0.03)
    await store.claim_ready(now=1.0)
    await asyncio.sleep(0.1)
    await store.close()
    assert paths == ["/v1/claims"]


@pytest.mark.parametrize(
    ("code", "status"),
    [("stale_fence", 409), ("wrong_status", 409), ("not_found", 404)],
)
async def test_a_completion_that_lost_its_row_is_a_no_op(code: str, status: int) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": [_claimed(5, 41)]})
        err = {"code": code, "message": "row 5 moved on"}
        return httpx.Response(status, json={"error": err})

    store = _store(handler)
    (item,) = await store.claim_ready(now=1.0)
    await store.mark_done(item.id, now=2.0)
    await store.mark_failed(item.id, "x", MfRetryPolicy(), now=2.0)
    await store.dead_letter_now(item.id, "x", now=2.0)
    assert not await store.handoff(
        ingress_id=item.id,
        message_id="3",
        channel_id="IB",
        deliveries=[],
        disposition=MessageStatus.UNROUTED,
        now=2.0,
    )
    await store.close()


async def test_a_missing_route_still_raises() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": [_claimed(5, 41)]})
        err = {"code": "not_found", "message": "no such route"}
        return httpx.Response(404, json={"error": err})

    store = _store(handler)
    (item,) = await store.claim_ready(now=1.0)
    with pytest.raises(NotFoundError):
        await store.mark_done(item.id, now=2.0)
    await store.close()


async def test_the_default_policy_is_sent_as_no_limit() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/claims":
            return httpx.Response(200, json={"items": [_claimed(5, 41)]})
        bodies.append(json.loads(req.content))
        return httpx.Response(
            200, json={"dead": False, "next_attempt_at": 1, "index": 4, "ok": True}
        )

    store = _store(handler)
    (item,) = await store.claim_ready(now=1.0)
    await store.mark_failed(item.id, "refused", MfRetryPolicy(), now=2.0)
    await store.mark_failed(item.id, "refused", MfRetryPolicy(max_attempts=3), now=3.0)
    assert [b["retry"]["max_attempts"] for b in bodies] == [-1, 3]
    assert bodies[0]["retry"]["backoff_ms"] == 5000
    await store.close()


async def test_a_fifo_done_claims_the_lanes_next_row_in_the_same_write() -> None:
    """The clustered engine's delivery worker marks a row done and asks for its lane's next row
    at once: the store does both in one write (``done`` with ``claim_next``) and hands the row
    claimed ahead to that next claim without a round trip."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        seen.append((req.url.path, body))
        claims = sum(p == "/v1/lanes/outbound/OB1/claim" for p, _ in seen)
        if req.url.path == "/v1/lanes/outbound/OB1/claim" and claims == 1:
            return httpx.Response(200, json={"item": _claimed(7, 50)})
        if req.url.path == "/v1/rows/7/done":
            return httpx.Response(
                200, json={"ok": True, "index": 9, "next": {"item": _claimed(8, 51)}}
            )
        if req.url.path == "/v1/rows/8/done":
            empty = {"item": None, "reason": "empty"}
            return httpx.Response(200, json={"ok": True, "index": 10, "next": empty})
        return httpx.Response(200, json={"item": None, "reason": "empty"})

    store = _store(handler, client_clock=False)
    first = await store.claim_next_fifo("OB1", owner="me")
    assert first is not None and first.id == "7"
    await store.mark_done(first.id)
    second = await store.claim_next_fifo("OB1", owner="me")
    assert second is not None and second.id == "8"  # claimed ahead: no request for it
    await store.mark_done(second.id)
    assert await store.claim_next_fifo("OB1", owner="me") is None
    await store.close()
    paths = [p for p, _ in seen if p != "/v1/leases/renew"]
    assert paths == [
        "/v1/lanes/outbound/OB1/claim",
        "/v1/rows/7/done",
        "/v1/rows/8/done",
        "/v1/lanes/outbound/OB1/claim",
    ]
    assert dict(seen)["/v1/rows/7/done"] == {
        "fence": 50,
        "claim_next": {"owner": "me", "ttl_ms": 30_000},
    }


async def test_done_is_a_plain_done_without_one_owner_or_on_the_client_clock() -> None:
    """Without an owner (one engine, no lane lease) or with a lane owner apart from the row's,
    and in client-clock mode, ``done`` stays a plain ``done`` (no lane lease is taken for a
    claim that asked for none)."""
    dones: list[dict[str, Any]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path.endswith("/claim"):
            return httpx.Response(200, json={"item": _claimed(7, 50)})
        dones.append(json.loads(req.content))
        return httpx.Response(200, json={"ok": True, "index": 9})

    for kw, owner in (
        ({"client_clock": False}, None),
        ({"client_clock": False}, "node-a"),
        ({}, "me"),
    ):
        store = _store(handler, **kw)
        item = await store.claim_next_fifo("OB1", owner=owner, now=1.0)
        assert item is not None
        await store.mark_done(item.id, now=2.0)
        await store.close()
    assert dones == [{"fence": 50}] * 3


async def test_a_recovery_forgets_the_rows_claimed_ahead() -> None:
    calls: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.url.path)
        if req.url.path.endswith("/claim"):
            return httpx.Response(200, json={"item": _claimed(7, 50)})
        if req.url.path == "/v1/rows/7/done":
            return httpx.Response(
                200, json={"ok": True, "index": 9, "next": {"item": _claimed(8, 51)}}
            )
        return httpx.Response(200, json={"reset": 1, "count": 1, "index": 11})

    store = _store(handler, client_clock=False)
    item = await store.claim_next_fifo("OB1", owner="me")
    assert item is not None
    await store.mark_done(item.id)
    await store.reset_stale_inflight()
    again = await store.claim_next_fifo("OB1", owner="me")
    assert again is not None and again.id == "7"  # asked the cluster, not the stale row 8
    assert calls.count("/v1/lanes/outbound/OB1/claim") == 2
    await store.close()


async def test_a_handoff_claims_the_lanes_next_row_while_the_engine_works() -> None:
    """A routed ingress row: as soon as the route is answered the store sends the lane's next
    claim (the same claim the worker makes next: no owner, no lane lease), and the worker's
    next ``claim_next_fifo`` gets that row instead of sending its own."""
    claims: list[dict[str, Any]] = []
    gate = asyncio.Event()

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/lanes/ingress/IB/claim":
            claims.append(json.loads(req.content))
            if len(claims) == 2:
                gate.set()
            n = len(claims)
            return httpx.Response(200, json={"item": _claimed(6 + n, 50 + n, stage="ingress")})
        return httpx.Response(200, json={"applied": True, "index": 9})

    client = Client(
        ["127.0.0.1:1"], "t", follow_leader=False, transport=httpx.MockTransport(handler)
    )
    store = RaftlaneStore(client, owner="me")
    first = await store.claim_next_fifo("IB", stage="ingress")
    assert first is not None and first.id == "7"
    assert await store.route_handoff(
        ingress_id=first.id,
        message_id="3",
        channel_id="IB",
        handlers=[("h1", "x")],
        disposition=MessageStatus.ROUTED,
    )
    await asyncio.wait_for(gate.wait(), 5)  # sent without the worker asking
    second = await store.claim_next_fifo("IB", stage="ingress")
    assert second is not None and second.id == "8"
    # The worker's own claim waits at the server for work; the one made ahead answers at once.
    claim = {"owner": "me", "ttl_ms": 30_000, "lane_lease": False}
    assert claims == [{**claim, "wait_ms": 5_000}, claim]
    await store.close()


async def test_a_clustered_route_claims_the_lanes_next_row_in_the_same_write() -> None:
    """The clustered engine's router worker (one owner for row and lane): its route carries the
    lane's next claim (``claim_next``), and the worker's next ``claim_next_fifo`` gets that row
    without a request of its own."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        seen.append((req.url.path, body))
        if req.url.path == "/v1/lanes/ingress/IB/claim":
            return httpx.Response(200, json={"item": _claimed(7, 50, stage="ingress")})
        if req.url.path == "/v1/rows/7/route":
            nxt = {"item": _claimed(8, 51, stage="ingress")}
            return httpx.Response(200, json={"applied": True, "index": 51, "next": nxt})
        return httpx.Response(200, json={"applied": True, "index": 52})

    store = _store(handler, client_clock=False)
    first = await store.claim_next_fifo("IB", stage="ingress", owner="me")
    assert first is not None and first.id == "7"
    assert await store.route_handoff(
        ingress_id=first.id,
        message_id="3",
        channel_id="IB",
        handlers=[("h1", "x")],
        disposition=MessageStatus.ROUTED,
    )
    second = await store.claim_next_fifo("IB", stage="ingress", owner="me")
    assert second is not None and second.id == "8"
    await store.close()
    paths = [p for p, _ in seen if p != "/v1/leases/renew"]
    assert paths == ["/v1/lanes/ingress/IB/claim", "/v1/rows/7/route"]
    assert dict(seen)["/v1/rows/7/route"] == {
        "fence": 50,
        "handlers": [{"handler": "h1", "payload": "x"}],
        "disposition": "routed",
        "claim_next": {"owner": "me", "ttl_ms": 30_000},
    }
