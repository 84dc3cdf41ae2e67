"""What the client logs: each call's answer at DEBUG only, so a program logging at INFO (as
messagefoundry's service does) does not log every call its idle workers make; a failed attempt
that is tried again at WARNING once per call. Both wires: an httpx transport and the client's own
connections (against a local scripted server)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from raftlane import Client, UnavailableError

NODES = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
CLAIMS: dict[str, list[object]] = {"items": []}


def _at_info_or_above(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name} {r.levelname}: {r.getMessage()}" for r in caplog.records if r.levelno >= 20]


def _client_debug(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "raftlane.client" and r.levelno == logging.DEBUG
    ]


async def test_successful_calls_log_nothing_at_info_through_an_httpx_transport(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=CLAIMS))
    async with Client(NODES, "tok", follow_leader=False, transport=transport) as c:
        for _ in range(3):
            assert await c.claim("outbound", owner="w", ttl_ms=1000) == []
        await c.request("GET", "/v1/stats")
    assert _at_info_or_above(caplog) == []
    calls = _client_debug(caplog)
    assert len(calls) == 4, calls
    assert calls[0].startswith("POST http://127.0.0.1:7001/v1/claims: 200 in ")
    assert calls[-1].startswith("GET http://127.0.0.1:7001/v1/stats: 200 in ")


@asynccontextmanager
async def _node(answer: bytes) -> AsyncIterator[str]:
    """A local server answering every request with ``answer``; yields its address."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_successful_calls_log_nothing_at_info_over_the_clients_own_connections(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = b'{"items":[]}'
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    async with _node(answer) as addr, Client([addr], "tok") as c:
        for _ in range(3):
            assert await c.claim("outbound", owner="w", ttl_ms=1000) == []
    assert _at_info_or_above(caplog) == []
    calls = _client_debug(caplog)
    assert len(calls) == 3, calls
    assert all(m.startswith(f"POST http://{addr}/v1/claims: 200 in ") for m in calls), calls


async def test_a_call_tried_again_warns_once_and_logs_later_attempts_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    def handler(r: httpx.Request) -> httpx.Response:
        if r.url.port == 7001:
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "x"}})
        if r.url.port == 7002:
            raise httpx.ConnectError("refused", request=r)
        return httpx.Response(200, json=CLAIMS)

    transport = httpx.MockTransport(handler)
    async with Client(NODES, "tok", follow_leader=False, transport=transport) as c:
        assert await c.claim("outbound", owner="w", ttl_ms=1000) == []
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].name == "raftlane.client"
    assert "7001/v1/claims: 503" in warnings[0].getMessage()
    assert "trying the other nodes" in warnings[0].getMessage()
    debug = _client_debug(caplog)
    assert any("7002/v1/claims: ConnectError" in m for m in debug), debug
    assert any(m.startswith("POST http://127.0.0.1:7003/v1/claims: 200") for m in debug), debug
    assert not [r for r in caplog.records if r.levelno == logging.INFO]


async def test_a_call_that_gives_up_raises_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    transport = httpx.MockTransport(lambda r: httpx.Response(503, json={}))
    async with Client(NODES, "tok", follow_leader=False, transport=transport, deadline=0.3) as c:
        with pytest.raises(UnavailableError):
            await c.claim("outbound", owner="w", ttl_ms=1000)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
