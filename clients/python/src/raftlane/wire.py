"""The HTTP/1.1 connections a :class:`~raftlane.Client` sends its calls over.

Why not httpx: measured inside messagefoundry's engine on raftlane, more than half of the engine
process's CPU went to the general-purpose HTTP stack (httpx, httpcore, h11, anyio) for calls
that are all alike: small JSON bodies to a few known nodes over long-lived connections
(docs/BENCHMARKS.md, "messagefoundry: where a message's time goes"). The engine's one Python
process was the limit. :class:`LeanWire` does only what those calls need — keep-alive
connections per node, ``Content-Length`` and chunked bodies, TLS through :mod:`ssl`, a timeout per
call — in a few hundred instructions per request.

:class:`HttpxWire` keeps the older path for callers that hand the client an httpx transport (tests
answer from a function with ``httpx.MockTransport``).

Both answer an :class:`Answer` or raise :class:`WireError` (nothing reached the node, or its
answer was cut off): the client's failover treats that as "this node did not answer".
"""

from __future__ import annotations

import asyncio
import json as _json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast
from urllib.parse import quote, urlsplit

import httpx

#: Idle connections kept per node. The engine runs a few dozen concurrent workers; more idle
#: sockets than callers buy nothing.
MAX_IDLE_PER_NODE = 64
#: The largest answer head accepted (the nodes' heads are a few hundred bytes).
MAX_HEAD_BYTES = 64 * 1024
#: The largest answer body accepted (the nodes cap list pages well below this).
MAX_BODY_BYTES = 256 * 1024 * 1024


class WireError(Exception):
    """The call did not get a whole answer: connection refused or reset, TLS failure, a timeout,
    or an answer that is not HTTP/1.1. Whether the node acted on it is unknown (writes carry a
    ``Request-Id`` so the client's retry is applied once)."""


@dataclass(slots=True)
class Answer:
    """A node's whole answer: status, headers (names in lower case) and body."""

    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""

    def json(self) -> Any:
        return _json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class Wire(Protocol):
    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float,
    ) -> Answer: ...

    async def aclose(self) -> None: ...


def json_body(value: Any) -> bytes:
    """A request body as the nodes take it: compact UTF-8 JSON, no NaN."""
    return _json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _param(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


def with_query(url: str, params: Mapping[str, Any]) -> str:
    """``url`` with ``params`` appended (``None`` values left out, lists as repeated keys)."""
    parts: list[str] = []
    for k, v in params.items():
        if v is None:
            continue
        for item in v if isinstance(v, (list, tuple)) else (v,):
            parts.append(f"{quote(str(k), safe='')}={quote(_param(item), safe='')}")
    if not parts:
        return url
    return f"{url}{'&' if '?' in url else '?'}{'&'.join(parts)}"


class _Connection(asyncio.Protocol):
    """One keep-alive connection, one call at a time: the head and body of the answer are parsed
    as bytes arrive and the waiting call is woken once, with the whole answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = True
        self._buf = bytearray()
        self._waiter: asyncio.Future[Answer] | None = None
        self._answer: Answer | None = None
        # Set once the head is parsed: the body's framing.
        self._length: int | None = None
        self._chunked = False
        self._until_close = False
        self._got_bytes = False

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports (messagefoundry's service runs on uvloop) are not subclasses of
        # asyncio.Transport, though they behave as one.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        self._buf += data
        if self._waiter is None or self._waiter.done():
            # Bytes nobody asked for: the connection is out of step; never reuse it.
            self.reusable = False
            return
        try:
            self._advance()
        except WireError as e:
            self._fail(e)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._waiter is not None and not self._waiter.done():
            if self._answer is not None and self._until_close:
                self._answer.content = bytes(self._buf)
                self._waiter.set_result(self._answer)
            else:
                why = f"{type(exc).__name__}: {exc}" if exc else "closed by the node"
                self._waiter.set_exception(WireError(f"connection lost: {why}"))

    # --- one call -------------------------------------------------------------------------

    @property
    def answered_nothing(self) -> bool:
        """No byte of an answer arrived: a reused connection the node closed while idle."""
        return not self._got_bytes

    def send(self, head: bytes, body: bytes | None) -> asyncio.Future[Answer]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        self._waiter = waiter
        self._answer = None
        self._length = None
        self._chunked = False
        self._until_close = False
        self._got_bytes = False
        self._buf.clear()
        if self.transport is None or self.closed:
            raise WireError("connection closed before the call was sent")
        self.transport.write(head + body if body else head)
        return waiter

    def finish(self) -> None:
        self._waiter = None

    def abort(self) -> None:
        self.reusable = False
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, e: WireError) -> None:
        self.abort()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(e)

    def _advance(self) -> None:
        buf = self._buf
        if self._answer is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise WireError("answer head too large")
                return
            self._answer = self._head(bytes(buf[:end]))
            del buf[: end + 4]
        answer = self._answer
        if self._until_close:
            if len(buf) > MAX_BODY_BYTES:
                raise WireError("answer body too large")
            return
        if self._chunked:
            body = self._dechunk()
            if body is None:
                return
            answer.content = body
        else:
            n = self._length or 0
            if len(buf) < n:
                return
            answer.content = bytes(buf[:n])
            if len(buf) > n:
                self.reusable = False
            buf.clear()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    def _head(self, raw: bytes) -> Answer:
        lines = raw.split(b"\r\n")
        status = lines[0].split(b" ", 2)
        if len(status) < 2 or not status[0].startswith(b"HTTP/1."):
            raise WireError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
        try:
            code = int(status[1])
        except ValueError as e:
            raise WireError(f"bad status line: {lines[0][:80]!r}") from e
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise WireError(f"bad header line: {line[:80]!r}")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        if status[0] == b"HTTP/1.0" or headers.get("connection", "").lower() == "close":
            self.reusable = False
        if code in (204, 304) or 100 <= code < 200:
            self._length = 0
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif "content-length" in headers:
            try:
                self._length = int(headers["content-length"])
            except ValueError as e:
                raise WireError("bad content-length") from e
            if not 0 <= self._length <= MAX_BODY_BYTES:
                raise WireError("answer body too large")
        else:
            self._until_close = True
            self.reusable = False
        return Answer(code, headers)

    def _dechunk(self) -> bytes | None:
        """The whole body once every chunk and the last one are in, else ``None``."""
        buf = self._buf
        out = bytearray()
        pos = 0
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError as e:
                raise WireError("bad chunk size") from e
            if size == 0:
                # Trailers (none expected) end with an empty line.
                end = buf.find(b"\r\n\r\n", eol)
                if end < 0:
                    return None
                if end + 4 < len(buf):
                    self.reusable = False
                buf.clear()
                return bytes(out)
            start = eol + 2
            if len(buf) < start + size + 2:
                return None
            out += buf[start : start + size]
            if len(out) > MAX_BODY_BYTES:
                raise WireError("answer body too large")
            pos = start + size + 2


@dataclass(frozen=True, slots=True)
class _Node:
    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


class LeanWire:
    """Keep-alive HTTP/1.1 connections to each node, one call per connection at a time.

    ``tls``: the SSL context ``https://`` nodes are dialled with (``None``: the system's
    default trust). A call on a reused connection that the node had closed while it idled
    (nothing at all came back) is sent once more on a new connection, as a browser does: the
    write's ``Request-Id`` makes that safe."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._idle: dict[_Node, list[_Connection]] = {}
        self._nodes: dict[str, tuple[_Node, str]] = {}
        self._open: set[_Connection] = set()

    def _split(self, url: str) -> tuple[_Node, str]:
        base, _, rest = url.partition("://")
        hostpart, slash, path = rest.partition("/")
        key = f"{base}://{hostpart}"
        hit = self._nodes.get(key)
        if hit is None:
            u = urlsplit(key)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise WireError(f"not an http(s) URL: {url!r}")
            port = u.port or (443 if u.scheme == "https" else 80)
            node = _Node(u.scheme, u.hostname, port)
            hit = (node, node.host_header)
            self._nodes[key] = hit
        return hit[0], "/" + path if slash else "/"

    async def _connect(self, node: _Node) -> _Connection:
        loop = asyncio.get_running_loop()
        tls: ssl.SSLContext | None = None
        if node.scheme == "https":
            tls = self._tls or ssl.create_default_context()
        try:
            _, conn = await loop.create_connection(
                _Connection,
                node.host,
                node.port,
                ssl=tls,
                server_hostname=node.host if tls else None,
            )
        except (OSError, ssl.SSLError) as e:
            raise WireError(f"connect {node.host}:{node.port}: {type(e).__name__}: {e}") from e
        self._open.add(conn)
        return conn

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float,
    ) -> Answer:
        node, target = self._split(url)
        lines = [f"{method} {target} HTTP/1.1\r\nhost: {node.host_header}\r\n"]
        for k, v in headers.items():
            lines.append(f"{k}: {v}\r\n")
        if body is not None:
            lines.append(f"content-length: {len(body)}\r\n")
        elif method not in ("GET", "HEAD"):
            lines.append("content-length: 0\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(node, head, body)
        except TimeoutError as e:
            raise WireError(f"{method} {url}: no answer within {timeout} s") from e

    async def _exchange(self, node: _Node, head: bytes, body: bytes | None) -> Answer:
        idle = self._idle.get(node)
        while idle:
            conn = idle.pop()
            if conn.closed or not conn.reusable:
                self._open.discard(conn)
                continue
            try:
                return await self._once(node, conn, head, body)
            except WireError:
                if not conn.answered_nothing:
                    raise
                # The node closed this idle connection as we reused it: try a fresh one.
                break
        return await self._once(node, await self._connect(node), head, body)

    async def _once(
        self, node: _Node, conn: _Connection, head: bytes, body: bytes | None
    ) -> Answer:
        try:
            answer = await conn.send(head, body)
        except BaseException:
            # Timed out, cancelled or failed mid-call: the connection's state is unknown.
            conn.abort()
            self._open.discard(conn)
            raise
        conn.finish()
        if conn.reusable and not conn.closed:
            idle = self._idle.setdefault(node, [])
            if len(idle) < MAX_IDLE_PER_NODE:
                idle.append(conn)
                return answer
        conn.abort()
        self._open.discard(conn)
        return answer

    async def aclose(self) -> None:
        for conn in list(self._open):
            if conn.transport is not None:
                conn.transport.close()
        self._open.clear()
        self._idle.clear()


class HttpxWire:
    """Calls through httpx, for a client built with an httpx transport (``httpx.MockTransport``
    in tests, or a caller's own).

    The request is built by an ``httpx.AsyncClient`` (its default headers and the call's timeout)
    and handed to the transport directly, not sent with ``AsyncClient.send``: that logs every
    request at INFO on the ``httpx`` logger, and the client's calls are logged at DEBUG only
    (:mod:`raftlane.client`). Nothing else of ``send`` applies to these calls (no redirects, no
    cookies, no auth flows)."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._transport = transport
        self._http = httpx.AsyncClient(transport=transport)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float,
    ) -> Answer:
        try:
            req = self._http.build_request(
                method, url, content=body, headers=headers, timeout=timeout
            )
            r = await self._transport.handle_async_request(req)
            try:
                content = await r.aread()
            finally:
                await r.aclose()
        except httpx.TransportError as e:
            raise WireError(f"{method} {url}: {type(e).__name__}: {e}") from e
        return Answer(r.status_code, {k.lower(): v for k, v in r.headers.items()}, content)

    async def aclose(self) -> None:
        await self._http.aclose()
