"""The client against a scripted transport: failover, one Request-Id per write across retries,
leader following, bearer tokens, path encoding, typed errors and answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from raftlane import (
    BadRequestError,
    Client,
    DecodeError,
    RetryPolicy,
    RowAction,
    StaleFenceError,
    UnavailableError,
    VersionMismatchError,
)
from raftlane.types import Ack

NODES = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]

Handler = Callable[[httpx.Request], httpx.Response]


class Script:
    """A transport that records every request and answers with ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return self.handler(request)

    def client(self, token: str | None = "tok", **kw: Any) -> Client:
        kw.setdefault("follow_leader", False)
        return Client(NODES, token, transport=httpx.MockTransport(self), **kw)

    def writes(self) -> list[httpx.Request]:
        return [r for r in self.seen if r.method != "GET"]


def err(status: int, code: str, message: str = "m", **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, **extra}})


ENQUEUED = {"message_id": 4, "duplicate": False, "index": 12}


async def test_a_write_keeps_one_request_id_across_failover() -> None:
    def handler(r: httpx.Request) -> httpx.Response:
        if r.url.port == 7001:
            return err(503, "unavailable", "no leader")
        if r.url.port == 7002:
            raise httpx.ConnectError("refused", request=r)
        return httpx.Response(201, json=ENQUEUED)

    s = Script(handler)
    async with s.client() as c:
        sent = await c.enqueue("lab", "MSH|1")
        assert sent.message_id == 4 and sent.duplicate is False and sent.index == 12
        assert [r.url.port for r in s.seen] == [7001, 7002, 7003]
        ids = {r.headers["request-id"] for r in s.seen}
        assert len(ids) == 1, ids
        (first,) = ids
        assert 1 <= len(first) <= 56
        # The node that answered is the one the next call goes to first.
        assert c.current_endpoint == "http://127.0.0.1:7003"
        await c.enqueue("lab", "MSH|2")
        assert s.seen[-1].url.port == 7003
        assert s.seen[-1].headers["request-id"] != first, "a new write gets a new id"


async def test_reads_carry_no_request_id_and_every_call_the_token() -> None:
    def handler(r: httpx.Request) -> httpx.Response:
        if r.url.path == "/v1/stats":
            return httpx.Response(
                200,
                json={
                    "messages": 1,
                    "rows": {"ingress": {"pending": 1}},
                    "clock": 5,
                    "last_applied": 9,
                },
            )
        return httpx.Response(201, json=ENQUEUED)

    s = Script(handler)
    async with s.client(token="alpha") as c:
        stats = await c.stats()
        assert stats.rows == {"ingress": {"pending": 1}}
        await c.with_token("beta").enqueue("lab", "x")
        assert "request-id" not in s.seen[0].headers
        assert s.seen[0].headers["authorization"] == "Bearer alpha"
        assert s.seen[1].headers["authorization"] == "Bearer beta"
    s2 = Script(lambda r: httpx.Response(200, json={"status": "ok"}))
    async with s2.client(token=None) as c:
        assert (await c.healthz()).status == "ok"
        assert "authorization" not in s2.seen[0].headers


async def test_for_request_pins_the_id_and_validates_it() -> None:
    s = Script(lambda r: httpx.Response(200, json={**ENQUEUED, "duplicate": False}))
    async with s.client() as c:
        pinned = c.for_request("order-1001/try")
        await pinned.enqueue("lab", "x")
        await pinned.enqueue("lab", "x")
        assert [r.headers["request-id"] for r in s.seen] == ["order-1001/try"] * 2
        for bad in ["", "x" * 57, "has space", "tab\t", "é"]:
            with pytest.raises(ValueError):
                c.for_request(bad)


async def test_the_deadline_gives_unavailable_with_the_last_failure() -> None:
    s = Script(lambda r: err(503, "unavailable", "no leader accepted"))
    async with s.client(deadline=0.3) as c:
        with pytest.raises(UnavailableError) as info:
            await c.enqueue("lab", "x")
        assert info.value.last_status == 503
        assert "no leader accepted" in str(info.value)
    ports = {r.url.port for r in s.seen}
    assert ports == {7001, 7002, 7003}, "every node was tried"
    assert len({r.headers["request-id"] for r in s.seen}) == 1


async def test_an_error_answer_is_raised_at_once_and_typed() -> None:
    s = Script(lambda r: err(400, "invalid", "must be between 1 and 86400000", field="ttl_ms"))
    async with s.client() as c:
        with pytest.raises(BadRequestError) as info:
            await c.claim_fifo("outbound", "emr", owner="w", ttl_ms=0)
    assert (info.value.status, info.value.code, info.value.field) == (400, "invalid", "ttl_ms")
    assert len(s.seen) == 1, "a 400 is not retried on another node"

    s = Script(lambda r: err(409, "stale_fence", "stale fence 17 for row 4"))
    async with s.client() as c:
        with pytest.raises(StaleFenceError) as fence:
            await c.done(4, 17)
    assert "stale fence 17" in fence.value.message

    s = Script(lambda r: err(412, "version_mismatch", "expected 1, current 2", current_version=2))
    async with s.client() as c:
        with pytest.raises(VersionMismatchError) as mismatch:
            await c.put_config(1, {"channels": {}})
    assert mismatch.value.current_version == 2
    assert s.seen[0].headers["if-match"] == "1"


async def test_it_follows_the_leader() -> None:
    cluster = {
        "node_id": 1,
        "leader_id": 3,
        "term": 2,
        "last_log_index": 10,
        "last_applied": 10,
        "membership": [
            {"id": 1, "addr": "127.0.0.1:7001", "voter": True},
            {"id": 2, "addr": "127.0.0.1:7002", "voter": True},
            {"id": 3, "addr": "127.0.0.1:7003", "voter": True},
        ],
    }

    def handler(r: httpx.Request) -> httpx.Response:
        if r.url.path == "/v1/cluster":
            return httpx.Response(200, json=cluster)
        return httpx.Response(201, json=ENQUEUED)

    s = Script(handler)
    async with s.client(follow_leader=True) as c:
        await c.enqueue("lab", "x")
        await c.enqueue("lab", "y")
    writes = s.writes()
    assert [r.url.port for r in writes] == [7003, 7003]
    assert [r.url.path for r in s.seen].count("/v1/cluster") == 1, "asked once, then kept"


async def test_a_leader_that_just_refused_is_not_taken_again() -> None:
    """After the leader dies its followers still name it for a while: the client must not keep
    going back to it while another node can take the write."""
    cluster = {
        "node_id": 2,
        "leader_id": 1,
        "term": 2,
        "last_log_index": 10,
        "last_applied": 10,
        "membership": [{"id": i, "addr": f"127.0.0.1:700{i}", "voter": True} for i in (1, 2, 3)],
    }

    def handler(r: httpx.Request) -> httpx.Response:
        if r.url.port == 7001:
            raise httpx.ConnectError("refused", request=r)
        if r.url.path == "/v1/cluster":
            return httpx.Response(200, json=cluster)
        return httpx.Response(201, json=ENQUEUED)

    s = Script(handler)
    async with s.client(follow_leader=True) as c:
        await c.enqueue("lab", "x")
    writes = s.writes()
    assert [r.url.port for r in writes] == [7001, 7002]


async def test_names_are_one_path_segment() -> None:
    s = Script(lambda r: httpx.Response(201, json=ENQUEUED))
    async with s.client() as c:
        await c.enqueue("a/b c?d#e%f", "x")
    assert s.seen[0].url.raw_path == b"/v1/channels/a%2Fb%20c%3Fd%23e%25f/messages"
    assert json.loads(s.seen[0].content) == {"raw": "x"}


async def test_request_bodies_have_the_members_the_server_accepts() -> None:
    s = Script(
        lambda r: httpx.Response(200, json={"dead": False, "next_attempt_at": 99, "index": 3})
    )
    async with s.client() as c:
        failed = await c.fail(
            7, 42, "boom", retry=RetryPolicy(backoff_ms=100, multiplier=2.5, max_backoff_ms=800)
        )
        assert (failed.dead, failed.next_attempt_at) == (False, 99)
    assert s.seen[0].url.path == "/v1/rows/7/fail"
    assert json.loads(s.seen[0].content) == {
        "fence": 42,
        "error": "boom",
        "retry": {"backoff_ms": 100, "multiplier_milli": 2500, "max_backoff_ms": 800},
    }
    assert RowAction.dead(3, "poison").body == {"error": "poison"}
    assert RowAction.handoff(3, 9, [("emr", "p")]).body == {
        "fence": 9,
        "deliveries": [{"destination": "emr", "payload": "p"}],
    }


async def test_batched_row_actions_answer_one_by_one() -> None:
    answer = {
        "results": [
            {"ok": True, "index": 5},
            {"status": 409, "error": {"code": "stale_fence", "message": "stale fence 1"}},
        ]
    }
    s = Script(lambda r: httpx.Response(200, json=answer))
    async with s.client() as c:
        results = await c.row_actions([RowAction.done(1, 10), RowAction.done(2, 1)])
    assert json.loads(s.seen[0].content) == {
        "actions": [
            {"row": 1, "action": "done", "body": {"fence": 10}},
            {"row": 2, "action": "done", "body": {"fence": 1}},
        ]
    }
    assert results[0].ok and results[0].answer == {"ok": True, "index": 5}
    assert not results[1].ok and isinstance(results[1].error, StaleFenceError)


async def test_an_answer_of_the_wrong_shape_is_a_decode_error() -> None:
    s = Script(lambda r: httpx.Response(200, json={"ok": True}))
    async with s.client() as c:
        with pytest.raises(DecodeError, match="index"):
            await c.done(1, 2)
    s = Script(lambda r: httpx.Response(200, json={"ok": "yes", "index": 1}))
    async with s.client() as c:
        with pytest.raises(DecodeError, match="boolean"):
            await c.done(1, 2)
    s = Script(lambda r: httpx.Response(200, json={"ok": True, "index": 1, "later": "ignored"}))
    async with s.client() as c:
        assert await c.done(1, 2) == Ack(ok=True, index=1)


async def test_a_fifo_claim_decodes_each_reason() -> None:
    answers = iter(
        [
            {"item": None, "reason": "lane_busy", "holder": "w2", "expires_at": 77},
            {
                "item": {
                    "row_id": 7,
                    "message_id": 3,
                    "stage": "outbound",
                    "channel_id": "lab",
                    "destination_name": "emr",
                    "handler_name": None,
                    "payload": "MSH|",
                    "attempts": 1,
                    "fence": 42,
                    "lease_expires_at": 1000,
                }
            },
        ]
    )
    s = Script(lambda r: httpx.Response(200, json=next(answers)))
    async with s.client() as c:
        busy = await c.claim_fifo("outbound", "emr", owner="w1", ttl_ms=1000)
        assert busy.item is None and (busy.reason, busy.holder, busy.expires_at) == (
            "lane_busy",
            "w2",
            77,
        )
        got = await c.claim_fifo("outbound", "emr", owner="w1", ttl_ms=1000)
        assert got.item is not None and (got.item.row_id, got.item.fence) == (7, 42)
        assert got.item.destination_name == "emr" and got.item.handler_name is None


async def test_a_rate_limited_call_waits_as_told_on_the_same_node() -> None:
    from raftlane import RateLimitedError

    answers = [
        httpx.Response(
            429,
            headers={"retry-after": "0"},
            json={"error": {"code": "rate_limited", "message": "m", "retry_after_s": 0}},
        ),
        httpx.Response(201, json=ENQUEUED),
    ]
    s = Script(lambda r: answers.pop(0))
    async with s.client() as c:
        await c.enqueue("lab", "x")
    assert [r.url.port for r in s.seen] == [7001, 7001], "the limit is per node: same node"
    assert len({r.headers["request-id"] for r in s.seen}) == 1

    # A wait past the deadline is not slept through: the typed error at once.
    s = Script(
        lambda r: httpx.Response(
            429,
            headers={"retry-after": "30"},
            json={"error": {"code": "rate_limited", "message": "m", "retry_after_s": 30}},
        )
    )
    async with s.client(deadline=1.0) as c:
        with pytest.raises(RateLimitedError) as info:
            await c.enqueue("lab", "x")
    assert info.value.retry_after == 30
    assert len(s.seen) == 1
