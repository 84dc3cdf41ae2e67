"""The client's own HTTP/1.1 connections (raftlane.wire), against a scripted local server: what
a node may send (lengths, chunks, answers split across packets, closed idle connections) and how
the client takes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from raftlane import Client, InsecureTransportError
from raftlane.wire import LeanWire, WireError, with_query

# A script answers one parsed request (method, target, headers, body) with raw bytes to send,
# split into the pieces the server writes one by one (an empty piece: close the connection
# there; None: close it without answering).
Script = Callable[[str, str, dict[str, str], bytes], list[bytes] | None]


class _Server:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((method, target, headers, body))
                pieces = self.script(method, target, headers, body)
                if pieces is None:
                    return
                for p in pieces:
                    if not p:
                        return  # an empty piece: close here
                    writer.write(p)
                    await writer.drain()
                    await asyncio.sleep(0.005)
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"


@asynccontextmanager
async def serving(script: Script) -> AsyncIterator[_Server]:
    s = _Server(script)
    s.server = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    try:
        yield s
    finally:
        s.server.close()


def _ok(body: bytes, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra}"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def test_connections_are_kept_and_bodies_sent_with_their_length() -> None:
    async with serving(lambda m, t, h, b: [_ok(b'{"echo":' + (b or b"null") + b"}")]) as srv:
        w = LeanWire()
        for i in range(5):
            a = await w.request(
                "POST", f"{srv.url}/v1/x", headers={"a": "b"}, body=b"%d" % i, timeout=2
            )
            assert a.status_code == 200
            assert a.json() == {"echo": i}
        assert srv.connections == 1
        method, target, headers, body = srv.requests[-1]
        assert (method, target, headers["a"], body) == ("POST", "/v1/x", "b", b"4")
        assert headers["host"] == srv.url.removeprefix("http://")
        await w.aclose()


async def test_an_answer_split_across_packets_and_a_chunked_one_are_read_whole() -> None:
    whole = _ok(b'{"n":12345}')

    def script(m: str, t: str, h: dict[str, str], b: bytes) -> list[bytes]:
        if t == "/split":
            return [whole[:7], whole[7:30], whole[30:]]
        return [
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            b"4\r\n[1,2\r\n",
            b"3\r\n,3]\r\n0\r\n\r\n",
        ]

    async with serving(script) as srv:
        w = LeanWire()
        assert (
            await w.request("GET", f"{srv.url}/split", headers={}, body=None, timeout=2)
        ).json() == {"n": 12345}
        assert (
            await w.request("GET", f"{srv.url}/chunked", headers={}, body=None, timeout=2)
        ).json() == [1, 2, 3]
        # Both answers were whole, so the one connection served both.
        assert srv.connections == 1
        await w.aclose()


async def test_a_kept_connection_the_node_dropped_is_replaced_without_an_error() -> None:
    calls = 0

    def script(m: str, t: str, h: dict[str, str], b: bytes) -> list[bytes] | None:
        nonlocal calls
        calls += 1
        # The second request arrives as the node gives up the idle connection: it closes it
        # without a byte of answer.
        return None if calls == 2 else [_ok(b"{}")]

    async with serving(script) as srv:
        w = LeanWire()
        await w.request("GET", f"{srv.url}/a", headers={}, body=None, timeout=2)
        answer = await w.request("POST", f"{srv.url}/b", headers={}, body=b"1", timeout=2)
        assert answer.status_code == 200
        # Sent once on the kept connection, once more on a new one.
        assert [r[1] for r in srv.requests] == ["/a", "/b", "/b"]
        assert srv.connections == 2
        await w.aclose()


async def test_a_connection_that_fails_after_answering_part_is_not_retried() -> None:
    async with serving(
        lambda m, t, h, b: [b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}", b""]
    ) as srv:
        w = LeanWire()
        # The answer is cut off mid-body (the server closes after its pieces): an error, and
        # the request was not sent again.
        with pytest.raises(WireError, match="connection lost"):
            await w.request("GET", f"{srv.url}/a", headers={}, body=None, timeout=2)
        assert [r[1] for r in srv.requests] == ["/a"]
        await w.aclose()


async def test_a_node_that_never_answers_is_a_wire_error_at_the_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    w = LeanWire()
    with pytest.raises(WireError, match="no answer within"):
        await w.request("GET", f"http://127.0.0.1:{port}/", headers={}, body=None, timeout=0.2)
    server.close()
    await w.aclose()


async def test_a_refused_connection_is_a_wire_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(WireError, match="connect"):
        await LeanWire().request(
            "GET", f"http://127.0.0.1:{port}/", headers={}, body=None, timeout=1
        )


async def test_a_garbled_answer_is_a_wire_error_and_the_connection_is_dropped() -> None:
    async with serving(lambda m, t, h, b: [b"SSH-2.0-OpenSSH\r\n\r\n"]) as srv:
        w = LeanWire()
        with pytest.raises(WireError, match="not an HTTP/1.1 answer"):
            await w.request("GET", f"{srv.url}/", headers={}, body=None, timeout=2)
        assert not any(w._idle.values())


def test_query_strings_leave_out_none_and_repeat_lists() -> None:
    assert with_query("http://n/v1/x", {"a": 1, "b": None, "c": True, "d": ["x y", "z"]}) == (
        "http://n/v1/x?a=1&c=true&d=x%20y&d=z"
    )
    assert with_query("http://n/v1/x", {"b": None}) == "http://n/v1/x"


async def test_a_token_is_not_sent_in_clear_text_to_another_machine() -> None:
    seen: list[str] = []

    async with serving(lambda m, t, h, b: seen.append(t) or [_ok(b"{}")]) as srv:
        remote = Client(["http://203.0.113.9:7001"], "secret", follow_leader=False, deadline=0.1)
        with pytest.raises(InsecureTransportError, match="203.0.113.9"):
            await remote.request("GET", "/v1/stats")
        await remote.aclose()
        # Loopback is this machine: allowed.
        local = Client([srv.url], "secret", follow_leader=False)
        assert await local.request("GET", "/v1/stats") == {}
        await local.aclose()
        # Told to, the client sends it anyway (a remote name that answers is not at hand, so
        # the refusal check alone is exercised: the call goes past it and fails to connect).
        told = Client(
            ["http://203.0.113.9:1"],
            "secret",
            follow_leader=False,
            deadline=0.1,
            timeout=0.05,
            allow_cleartext=True,
        )
        with pytest.raises(Exception) as info:
            await told.request("GET", "/v1/stats")
        assert not isinstance(info.value, InsecureTransportError)
        await told.aclose()
    assert seen == ["/v1/stats"]


def test_the_wire_runs_on_uvloop_as_messagefoundry_s_service_does() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def go() -> list[object]:
        async with serving(lambda m, t, h, b: [_ok(b'{"ok":true}')]) as srv:
            w = LeanWire()
            got = [
                (await w.request("GET", f"{srv.url}/{i}", headers={}, body=None, timeout=2)).json()
                for i in range(3)
            ]
            await w.aclose()
            assert srv.connections == 1
            return got

    assert uvloop.run(go()) == [{"ok": True}] * 3
