"""The async client.

A :class:`Client` knows every node of a cluster. It sends a call to the node it believes leads
(asking ``GET /v1/cluster`` after any failure), and on a connection failure, a timeout or a
``503`` moves on to the next node and tries again, pausing 50 ms doubling to 1 s, until its
deadline. Every call is safe to repeat: reads change nothing, and each write carries one
``Request-Id`` generated when the write is called and kept across its retries, so the cluster
applies it at most once and answers a repeat with the first answer (docs/SPEC.md §2.5).

Any other error answer raises an :class:`~raftlane.errors.ApiError` subclass carrying the
body's ``code``, ``field`` and ``message``.

Logging (logger ``raftlane.client``): every answer at DEBUG, never above: a program that logs at
INFO, as messagefoundry's service does by default, would otherwise log each of its calls, and an
idle engine's workers call many times a second. The first attempt of a call that fails and is
tried again (no answer, a ``503``, a ``429``) at WARNING, its further attempts at DEBUG, so an
election or a node going away shows once per call, not once per retry.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json as _json
import logging
import os
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar
from urllib.parse import quote, urlsplit

import httpx

from . import wire
from .errors import (
    DecodeError,
    InsecureTransportError,
    RaftlaneError,
    UnavailableError,
    error_from_response,
)
from .types import (
    Ack,
    Backup,
    LeaderTransferred,
    LogFormatStatus,
    Approval,
    ApprovalList,
    ApprovalCreated,
    ApprovalDecided,
    AuditAnchor,
    AuditAppended,
    AuditRow,
    AuditRows,
    AuditVerification,
    Cancelled,
    ClaimedRow,
    Claims,
    ClusterStatus,
    ConnectionTraffic,
    ConfigVersion,
    ConfigWritten,
    DeadLetterRow,
    DeadLetters,
    Delivery,
    DoneNext,
    Enqueued,
    Failed,
    FifoClaim,
    GroupMap,
    GroupMapWritten,
    HandedOff,
    HandedOnNext,
    Handler,
    Health,
    KeyRotation,
    EngineNodes,
    HeartbeatAck,
    KeyedDecided,
    LaneList,
    Leadership,
    NamespaceList,
    ReferenceSetList,
    StorageStats,
    Viewed,
    PausedDestinations,
    PauseState,
    LaneView,
    ListedMessage,
    MessageList,
    MessageView,
    Namespace,
    Principal,
    Purged,
    Readiness,
    ReferenceSnapshot,
    ReferenceWritten,
    Reingressed,
    Released,
    Renewed,
    Requeued,
    RetryPolicy,
    Revoked,
    RoleList,
    RolesAssigned,
    RoleWritten,
    RowActionResult,
    RowDetail,
    SessionChanged,
    SessionCreated,
    SessionList,
    SessionsPurged,
    SessionsRevoked,
    SessionView,
    Stage,
    SnapshotTaken,
    StateDigest,
    StateEntry,
    StateOp,
    Stats,
    TokenCreated,
    TokenList,
    UserChanged,
    UserCreated,
    UserDeleted,
    UserList,
    UserRoles,
    UserSecrets,
    UserView,
    decode,
)

__all__ = ["Client", "RouteInfo", "RowAction", "client_routes", "segment"]

T = TypeVar("T")

log = logging.getLogger(__name__)

#: How long an endpoint that failed to answer is not taken for the leader.
RECENT_FAILURE_S = 3.0

#: Longest ``Request-Id`` the API accepts (docs/SPEC.md §2.5).
MAX_REQUEST_ID_LEN = 56


def segment(name: str | int) -> str:
    """``name`` as one path segment: every byte but RFC 3986's unreserved characters
    percent-encoded, so a name with ``/``, ``?``, ``#``, ``%`` or a space stays one segment."""
    return quote(str(name), safe="")


def _base_url(endpoint: str) -> str:
    e = endpoint.strip().rstrip("/")
    return e if "://" in e else f"http://{e}"


def _tls_url(url: str) -> str:
    return "https://" + url[len("http://") :] if url.startswith("http://") else url


def _host_port(endpoint: str) -> str:
    e = endpoint.strip().rstrip("/")
    return e.split("://", 1)[1] if "://" in e else e


def _stage(stage: Stage | str) -> str:
    return stage.value if isinstance(stage, Stage) else stage


# --- the route registry: every public method names the route it calls -----------------------


@dataclass(frozen=True)
class RouteInfo:
    """The route a :class:`Client` method calls, the body members it may send and the type its
    answer decodes into (``tests/test_cluster.py`` checks both against the served OpenAPI
    document, with ``tests/openapi_check.py``)."""

    method: str
    path: str
    name: str
    body: tuple[str, ...] = ()
    answer: type | None = None


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def _route(
    method: str, path: str, *, body: Sequence[str] = (), answer: type | None = None
) -> Callable[[F], F]:
    def mark(fn: F) -> F:
        fn.__raftlane_route__ = RouteInfo(  # type: ignore[attr-defined]
            method, path, fn.__name__, tuple(body), answer
        )
        return fn

    return mark


def client_routes() -> list[RouteInfo]:
    """Every route a :class:`Client` method calls, in definition order."""
    out = []
    for name in vars(Client):
        info = getattr(getattr(Client, name), "__raftlane_route__", None)
        if isinstance(info, RouteInfo):
            out.append(info)
    return out


# --- row actions ----------------------------------------------------------------------------


def _approval(approval: int | None) -> dict[str, str] | None:
    """The ``Raftlane-Approval`` header of an action under dual control (SPEC §9.5)."""
    return None if approval is None else {"raftlane-approval": str(approval)}


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _retry_json(retry: RetryPolicy) -> dict[str, Any]:
    return _drop_none(
        {
            "max_attempts": retry.max_attempts,
            "backoff_ms": retry.backoff_ms,
            "multiplier_milli": retry.multiplier_milli,
            "max_backoff_ms": retry.max_backoff_ms,
        }
    )


@dataclass(frozen=True)
class RowAction:
    """A fenced row action on one row: ``POST /v1/rows/{row}/{action}`` with ``body``, or one
    item of :meth:`Client.row_actions`. Build it with the class methods."""

    row: int
    action: str
    body: dict[str, Any]

    @classmethod
    def route(
        cls,
        row: int,
        fence: int,
        handlers: Iterable[Handler | tuple[str, str]],
        disposition: str | None = None,
    ) -> RowAction:
        hs = [h if isinstance(h, Handler) else Handler(*h) for h in handlers]
        return cls(
            row,
            "route",
            _drop_none(
                {
                    "fence": fence,
                    "handlers": [{"handler": h.handler, "payload": h.payload} for h in hs],
                    "disposition": disposition,
                }
            ),
        )

    @classmethod
    def handoff(
        cls,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        disposition: str | None = None,
    ) -> RowAction:
        return cls(
            row,
            "handoff",
            _drop_none(
                {"fence": fence, "deliveries": _deliveries(deliveries), "disposition": disposition}
            ),
        )

    @classmethod
    def transform(
        cls,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        state_ops: Iterable[StateOp | tuple[str, str, Any]] = (),
    ) -> RowAction:
        ops = [o if isinstance(o, StateOp) else StateOp(*o) for o in state_ops]
        return cls(
            row,
            "transform",
            {
                "fence": fence,
                "deliveries": _deliveries(deliveries),
                "state_ops": [
                    {"namespace": o.namespace, "key": o.key, "value": o.value} for o in ops
                ],
            },
        )

    @classmethod
    def done(cls, row: int, fence: int) -> RowAction:
        return cls(row, "done", {"fence": fence})

    @classmethod
    def response(
        cls,
        row: int,
        fence: int,
        body: str,
        outcome: str,
        detail: str | None = None,
        reingress_to: str | None = None,
    ) -> RowAction:
        return cls(
            row,
            "response",
            _drop_none(
                {
                    "fence": fence,
                    "body": body,
                    "outcome": outcome,
                    "detail": detail,
                    "reingress_to": reingress_to,
                }
            ),
        )

    @classmethod
    def fail(cls, row: int, fence: int, error: str, retry: RetryPolicy | None = None) -> RowAction:
        return cls(
            row,
            "fail",
            _drop_none(
                {"fence": fence, "error": error, "retry": _retry_json(retry) if retry else None}
            ),
        )

    @classmethod
    def dead(cls, row: int, error: str, fence: int | None = None) -> RowAction:
        return cls(row, "dead", _drop_none({"fence": fence, "error": error}))

    @classmethod
    def reingress(
        cls, row: int, fence: int, loopback_channel: str, depth_cap: int | None = None
    ) -> RowAction:
        return cls(
            row,
            "reingress",
            _drop_none(
                {"fence": fence, "loopback_channel": loopback_channel, "depth_cap": depth_cap}
            ),
        )


def _deliveries(deliveries: Iterable[Delivery | tuple[str, str]]) -> list[dict[str, str]]:
    ds = [d if isinstance(d, Delivery) else Delivery(*d) for d in deliveries]
    return [{"destination": d.destination, "payload": d.payload} for d in ds]


# --- the client -----------------------------------------------------------------------------


def _tls_context(
    verify: ssl.SSLContext | str | os.PathLike[str] | bool,
    cert: str | os.PathLike[str] | tuple[str | os.PathLike[str], str | os.PathLike[str]] | None,
) -> ssl.SSLContext | None:
    """What the nodes are verified with: a given SSL context as it is; a CA file (PEM) as a
    context that trusts it; ``True`` the system's trust (``None``), ``False`` no verification.
    ``cert`` (a PEM file holding the certificate and key, or a ``(certificate, key)`` pair) is
    loaded into the context, for nodes that demand a client certificate (mutual TLS)."""
    if verify is True and cert is None:
        return None
    if isinstance(verify, ssl.SSLContext):
        ctx = verify
    elif isinstance(verify, bool):
        ctx = ssl.create_default_context()
        if not verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=os.fspath(verify))
    if cert is not None:
        if isinstance(cert, tuple):
            ctx.load_cert_chain(os.fspath(cert[0]), os.fspath(cert[1]))
        else:
            ctx.load_cert_chain(os.fspath(cert))
    return ctx


class _Shared:
    """What every handle of one client shares: the connection pool and the node it talks to."""

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout: float,
        transport: httpx.AsyncBaseTransport | None,
        verify: ssl.SSLContext | str | os.PathLike[str] | bool = True,
        cert: str
        | os.PathLike[str]
        | tuple[str | os.PathLike[str], str | os.PathLike[str]]
        | None = None,
        allow_cleartext: bool = False,
    ) -> None:
        if not endpoints:
            raise ValueError("a client needs at least one endpoint")
        # A client given a CA (or an SSL context) dials every node over TLS: bare addresses
        # and http:// URLs alike, as the Rust client does (docs/SPEC.md §9.6).
        tls = not isinstance(verify, bool) or cert is not None
        self.endpoints = [_tls_url(_base_url(e)) if tls else _base_url(e) for e in endpoints]
        self.current = 0
        self.need_leader = True
        #: When each endpoint last failed to answer at all (monotonic seconds).
        self.failed_at: dict[int, float] = {}
        self.timeout = timeout
        self.wire: wire.Wire = (
            wire.HttpxWire(transport)
            if transport is not None
            else wire.LeanWire(_tls_context(verify, cert))
        )
        # A bearer token sent over plain HTTP can be read by anyone on the path: refused
        # unless every node is on this machine or the caller said so (docs/SPEC.md §9.6).
        self.cleartext_remote = [
            e for e in self.endpoints if e.startswith("http://") and not _loopback(e)
        ]
        self.allow_cleartext = allow_cleartext or os.environ.get(
            "RAFTLANE_ALLOW_CLEARTEXT", ""
        ).lower() in ("1", "true", "yes")

    async def get(
        self, url: str, headers: Mapping[str, str], timeout: float | None = None
    ) -> wire.Answer:
        return await self.wire.request(
            "GET", url, headers=headers, body=None, timeout=timeout or self.timeout
        )


def _loopback(endpoint: str) -> bool:
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _log_retry(attempt: int, what: str, then: str) -> None:
    """A failed attempt that will be tried again: WARNING for a call's first, DEBUG after."""
    log.log(logging.WARNING if attempt == 1 else logging.DEBUG, "%s; %s", what, then)


def _retry_after_s(r: wire.Answer) -> float | None:
    """A 429's ``Retry-After`` in seconds (raftlane sends whole seconds), if it has one."""
    try:
        v = float(r.headers.get("retry-after", ""))
    except ValueError:
        return None
    return v if 0 <= v <= 3600 else None


class Client:
    """An async client for a raftlane cluster.

    ``endpoints``: every node's API address (``host:port`` or a URL). ``token``: the bearer
    token (none for the unauthenticated routes only). ``deadline``: how long one call keeps
    trying other nodes. ``follow_leader``: ask ``GET /v1/cluster`` which node leads and send
    there (writes sent to a follower are forwarded anyway; this saves that hop).
    ``verify``: for nodes serving TLS, the CA file (PEM) their certificates are signed by, or an
    ``ssl.SSLContext``; given either, every node is dialled over ``https://``. ``cert``: a client
    certificate for nodes with mutual TLS, a PEM file or a ``(certificate, key)`` pair. Left
    out, they default to ``$RAFTLANE_CA_FILE`` and ``$RAFTLANE_CLIENT_CERT`` (with
    ``$RAFTLANE_CLIENT_KEY``), so programs that build their client themselves (``python -m
    raftlane.messagefoundry serve``) can be pointed at a TLS cluster without new options.
    ``allow_cleartext``: send the token over plain ``http://`` to nodes on other machines (by
    default refused with :class:`~raftlane.errors.InsecureTransportError`; also
    ``$RAFTLANE_ALLOW_CLEARTEXT=1``). ``transport``: an httpx transport to send through instead
    of the client's own connections (tests answer from a function with ``httpx.MockTransport``).
    Use it as ``async with Client(...) as c:``, or call :meth:`aclose`.
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        token: str | None = None,
        *,
        timeout: float = 10.0,
        deadline: float = 20.0,
        follow_leader: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | str | os.PathLike[str] | bool | None = None,
        cert: str
        | os.PathLike[str]
        | tuple[str | os.PathLike[str], str | os.PathLike[str]]
        | None = None,
        allow_cleartext: bool = False,
    ) -> None:
        if verify is None:
            verify = os.environ.get("RAFTLANE_CA_FILE") or True
        if cert is None and os.environ.get("RAFTLANE_CLIENT_CERT"):
            key = os.environ.get("RAFTLANE_CLIENT_KEY")
            cert = (
                (os.environ["RAFTLANE_CLIENT_CERT"], key)
                if key
                else os.environ["RAFTLANE_CLIENT_CERT"]
            )
        self._shared = _Shared(endpoints, timeout, transport, verify, cert, allow_cleartext)
        self._token = token
        self._deadline = deadline
        self._follow_leader = follow_leader
        self._request_id: str | None = None
        self._extra_headers: dict[str, str] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._shared.wire.aclose()

    # --- handles ----------------------------------------------------------------------------

    def _copy(self) -> Client:
        c = object.__new__(Client)
        c.__dict__.update(self.__dict__)
        return c

    def for_request(self, request_id: str) -> Client:
        """A handle whose writes all carry ``Request-Id: request_id``: for one logical write the
        caller sends again itself (after :class:`~raftlane.errors.UnavailableError`, or from
        another process). The cluster applies it once and answers every repeat with the first
        answer. Shares this client's connections."""
        if not (
            1 <= len(request_id) <= MAX_REQUEST_ID_LEN
            and all(0x21 <= ord(ch) <= 0x7E for ch in request_id)
        ):
            raise ValueError("a Request-Id is 1 to 56 visible ASCII characters")
        c = self._copy()
        c._request_id = request_id
        return c

    def with_token(self, token: str | None) -> Client:
        """A handle that authenticates with ``token``; shares this client's connections."""
        c = self._copy()
        c._token = token
        return c

    def with_headers(self, headers: Mapping[str, str]) -> Client:
        """A handle that adds ``headers`` to every request it sends (after this client's own
        extra headers, before a call's own); shares this client's connections."""
        c = self._copy()
        c._extra_headers = {**self._extra_headers, **{k.lower(): v for k, v in headers.items()}}
        return c

    def with_deadline(self, deadline: float) -> Client:
        c = self._copy()
        c._deadline = deadline
        return c

    @property
    def endpoints(self) -> list[str]:
        return list(self._shared.endpoints)

    @property
    def current_endpoint(self) -> str:
        """The node the next call goes to first."""
        s = self._shared
        return s.endpoints[s.current % len(s.endpoints)]

    # --- transport --------------------------------------------------------------------------

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        hs: dict[str, str] = dict(self._extra_headers)
        if self._token is not None:
            s = self._shared
            if s.cleartext_remote and not s.allow_cleartext:
                raise InsecureTransportError(
                    f"refusing to send a token over plain HTTP to {s.cleartext_remote[0]}: "
                    "give the client the cluster's CA (verify=, $RAFTLANE_CA_FILE) or "
                    "allow_cleartext=True"
                )
            hs["authorization"] = f"Bearer {self._token}"
        if extra:
            hs.update(extra)
        return hs

    async def _locate_leader(self) -> None:
        """Point at the leader if a node names one among our endpoints (one pass, no retries)."""
        s = self._shared
        s.need_leader = False
        by_addr = {_host_port(e): i for i, e in enumerate(s.endpoints)}
        n = len(s.endpoints)
        for k in range(n):
            i = (s.current + k) % n
            try:
                r = await s.get(
                    f"{s.endpoints[i]}/v1/cluster", headers=self._headers(None), timeout=1.0
                )
                if r.status_code != 200:
                    continue
                status = decode(ClusterStatus, r.json())
            except InsecureTransportError:
                raise
            except (wire.WireError, ValueError, RaftlaneError):
                continue
            if status.leader_id is None:
                continue
            for m in status.membership:
                if m.id == status.leader_id and _host_port(m.addr) in by_addr:
                    j = by_addr[_host_port(m.addr)]
                    # A leader that just refused our connection is probably the one that
                    # went away: its followers still name it until they elect another.
                    if time.monotonic() - s.failed_at.get(j, -1e9) > RECENT_FAILURE_S:
                        s.current = j
                    return
            return

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        ok: Sequence[int] = (),
        wait_s: float = 0.0,
    ) -> wire.Answer:
        """One logical call, retried on other nodes until the deadline; a write keeps one
        ``Request-Id`` across every attempt. ``wait_s``: how long the server may hold the call
        (a claim's ``wait_ms``), added to each attempt's timeout and to the deadline."""
        s = self._shared
        hs = self._headers(headers)
        if method != "GET":
            hs["request-id"] = self._request_id or f"py-{uuid.uuid4().hex}"
        if json is not None:
            content = wire.json_body(json)
            hs.setdefault("content-type", "application/json")
        started = time.monotonic()
        pause = 0.05
        last = "no attempt"
        last_status: int | None = None
        attempt = 0
        while True:
            if self._follow_leader and s.need_leader and len(s.endpoints) > 1:
                await self._locate_leader()
            i = s.current % len(s.endpoints)
            url = f"{s.endpoints[i]}{path}"
            if params:
                url = wire.with_query(url, params)
            attempt += 1
            sent = time.monotonic()
            try:
                r = await s.wire.request(
                    method, url, headers=hs, body=content, timeout=s.timeout + wait_s
                )
            except wire.WireError as e:
                last, last_status = f"{method} {url}: {type(e).__name__}: {e}", None
                s.failed_at[i] = time.monotonic()
            else:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "%s %s: %d in %.1f ms (attempt %d)",
                        method,
                        url,
                        r.status_code,
                        (time.monotonic() - sent) * 1000,
                        attempt,
                    )
                if r.status_code in ok or 200 <= r.status_code < 300:
                    return r
                if r.status_code == 429:
                    # Over the token's rate on this node (docs/SPEC.md §10.5): nothing was done;
                    # wait as told and ask the same node again, if the deadline allows.
                    wait = _retry_after_s(r)
                    if wait is None or time.monotonic() - started + wait > self._deadline + wait_s:
                        raise error_from_response(r.status_code, r.content)
                    last, last_status = f"{method} {url}: 429 {r.text[:200]}", 429
                    _log_retry(attempt, last, f"again in {wait:g} s")
                    await asyncio.sleep(wait)
                    continue
                if r.status_code != 503:
                    raise error_from_response(r.status_code, r.content)
                last, last_status = f"{method} {url}: 503 {r.text[:200]}", 503
            # Another node may answer: move on, and ask again who leads.
            s.current = (i + 1) % len(s.endpoints)
            s.need_leader = True
            if time.monotonic() - started + pause > self._deadline + wait_s:
                raise UnavailableError(f"no node answered: {last}", last_status=last_status)
            _log_retry(attempt, last, "trying the other nodes")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)

    async def _call(
        self,
        cls: type[T],
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        wait_s: float = 0.0,
    ) -> T:
        r = await self._send(method, path, json=json, params=params, headers=headers, wait_s=wait_s)
        try:
            body = r.json()
        except ValueError as e:
            raise DecodeError(f"{method} {path}: not JSON: {e}") from e
        return decode(cls, body, f"{method} {path}")

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        wait_s: float = 0.0,
    ) -> Any:
        """Any call, with the same failover, ``Request-Id`` and errors; answers the parsed JSON
        (``None`` for an empty body). ``wait_s``: how long the server may hold the call (a
        claim's ``wait_ms``), added to its timeout."""
        r = await self._send(
            method.upper(), path, json=json, params=params, headers=headers, wait_s=wait_s
        )
        return r.json() if r.content else None

    # --- messages ---------------------------------------------------------------------------

    @_route(
        "post",
        "/v1/channels/{channel}/messages",
        body=("raw", "control_id", "message_type", "source_type", "summary", "metadata"),
        answer=Enqueued,
    )
    async def enqueue(
        self,
        channel: str,
        raw: str,
        *,
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Enqueued:
        """Enqueue a message on ``channel`` (a new message and its ingress row). With
        ``idempotency_key``, a key already used on this channel answers the first message with
        ``duplicate=True``."""
        body = _drop_none(
            {
                "raw": raw,
                "control_id": control_id,
                "message_type": message_type,
                "source_type": source_type,
                "summary": summary,
                "metadata": dict(metadata) if metadata is not None else None,
            }
        )
        headers = {"idempotency-key": idempotency_key} if idempotency_key is not None else None
        return await self._call(
            Enqueued,
            "POST",
            f"/v1/channels/{segment(channel)}/messages",
            json=body,
            headers=headers,
        )

    @_route("get", "/v1/messages", answer=MessageList)
    async def list_messages(
        self,
        *,
        channel: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        allowed_channels: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: int | None = None,
        consistency: str | None = None,
    ) -> list[ListedMessage]:
        """Messages, newest first, each with its newest event's kind (no bodies). One page:
        :meth:`message_page` also says where the next one starts."""
        page = await self.message_page(
            channel=channel,
            status=status,
            message_type=message_type,
            control_id=control_id,
            allowed_channels=allowed_channels,
            limit=limit,
            offset=offset,
            cursor=cursor,
            consistency=consistency,
        )
        return page.messages

    @_route("get", "/v1/messages", answer=MessageList)
    async def message_page(
        self,
        *,
        channel: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        allowed_channels: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: int | None = None,
        consistency: str | None = None,
    ) -> MessageList:
        """A page of :meth:`list_messages` with its ``next_cursor`` (``None``: the list is done;
        else pass it as ``cursor`` for the next page)."""
        params = {
            "channel": channel,
            "status": status,
            "message_type": message_type,
            "control_id": control_id,
            "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
            "limit": limit,
            "offset": offset,
            "cursor": cursor,
            "consistency": consistency,
        }
        return await self._call(MessageList, "GET", "/v1/messages", params=params)

    @_route("get", "/v1/messages/{id}", answer=MessageView)
    async def message(
        self,
        message_id: int,
        *,
        body: bool = False,
        record_view: bool | None = None,
        viewer: str | None = None,
        consistency: str | None = None,
    ) -> MessageView:
        """A message with its events, rows and captured responses. ``body=True`` adds the bodies
        and records the read as a ``viewed`` event (for ``viewer``, the person the caller reads
        for); ``record_view=False`` skips that record, for callers that process messages
        (role worker and above)."""
        params = {
            "body": "true" if body else None,
            "record_view": None if record_view is None else str(record_view).lower(),
            "viewer": viewer,
            "consistency": consistency,
        }
        return await self._call(
            MessageView, "GET", f"/v1/messages/{segment(message_id)}", params=params
        )

    @_route("post", "/v1/messages/{id}/replay", answer=Requeued)
    async def replay(self, message_id: int) -> Requeued:
        """Recover a message's dead or pending rows, else re-send its done rows."""
        return await self._call(Requeued, "POST", f"/v1/messages/{segment(message_id)}/replay")

    @_route("get", "/v1/dead-letters", answer=DeadLetters)
    async def dead_letters(
        self,
        *,
        stage: Stage | str | None = None,
        channel: str | None = None,
        destination: str | None = None,
        allowed_channels: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        newest_failed: bool = False,
        consistency: str | None = None,
    ) -> list[DeadLetterRow]:
        """Dead rows of ``stage`` (default ``outbound``; ``"all"`` for every stage) with their
        messages' fields, in row-id order (``newest_failed``: the most recently dead first)."""
        params = {
            "stage": None if stage is None else _stage(stage),
            "channel": channel,
            "destination": destination,
            "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
            "limit": limit,
            "offset": offset,
            "order": "newest_failed" if newest_failed else None,
            "consistency": consistency,
        }
        return (
            await self._call(DeadLetters, "GET", "/v1/dead-letters", params=params)
        ).dead_letters

    @_route("post", "/v1/dead-letters/replay", body=("channel", "destination"), answer=Requeued)
    async def replay_dead(
        self,
        *,
        channel: str | None = None,
        destination: str | None = None,
        approval: int | None = None,
    ) -> Requeued:
        """Requeue dead outbound rows (optionally of one channel and/or destination).
        ``approval``: the approval id when the config lists ``replay_dead`` for dual control."""
        return await self._call(
            Requeued,
            "POST",
            "/v1/dead-letters/replay",
            json=_drop_none({"channel": channel, "destination": destination}),
            headers=_approval(approval),
        )

    @_route("get", "/v1/stats", answer=Stats)
    async def stats(self, *, consistency: str | None = None) -> Stats:
        return await self._call(Stats, "GET", "/v1/stats", params={"consistency": consistency})

    @_route("get", "/v1/messages/count")
    async def count_messages(self, **filters: Any) -> int:
        """Messages passing the list's filters (``channel``, ``status``, ``message_type``,
        ``control_id``, ``allowed_channels`` comma-separated)."""
        answer = await self.request("GET", "/v1/messages/count", params=_drop_none(filters))
        return int(answer["count"])

    @_route("get", "/v1/dead-letters/count")
    async def count_dead_letters(self, **filters: Any) -> int:
        """Dead rows passing ``stage`` (default ``outbound``, or ``"all"``), ``channel``,
        ``destination``, ``allowed_channels``."""
        answer = await self.request("GET", "/v1/dead-letters/count", params=_drop_none(filters))
        return int(answer["count"])

    @_route("post", "/v1/messages/{id}/viewed", body=("actor",), answer=Viewed)
    async def record_view(self, message_id: int | str, *, actor: str | None = None) -> Viewed:
        """Append the event ``viewed`` (detail: ``actor``) to a message's history."""
        return await self._call(
            Viewed,
            "POST",
            f"/v1/messages/{segment(message_id)}/viewed",
            json=_drop_none({"actor": actor}),
        )

    @_route("get", "/v1/stats/storage", answer=StorageStats)
    async def storage_stats(self) -> StorageStats:
        """What the state holds (scans it)."""
        return await self._call(StorageStats, "GET", "/v1/stats/storage")

    @_route("get", "/v1/metrics/connections", answer=ConnectionTraffic)
    async def connection_metrics(
        self, *, since: int = 0, rate_window_ms: int = 60_000
    ) -> ConnectionTraffic:
        """Inbound traffic per channel and outbound per destination (scans the state)."""
        return await self._call(
            ConnectionTraffic,
            "GET",
            "/v1/metrics/connections",
            params={"since": since, "rate_window_ms": rate_window_ms},
        )

    # --- work -------------------------------------------------------------------------------

    @_route("get", "/v1/rows/{id}", answer=RowDetail)
    async def row(self, row_id: int) -> RowDetail:
        """A work row as it is now (``.row``), with its payload."""
        return await self._call(RowDetail, "GET", f"/v1/rows/{segment(row_id)}")

    @_route("post", "/v1/leases/reclaim", body=("stage",))
    async def reclaim_expired(self, *, stage: Stage | str | None = None) -> int:
        """In-flight rows whose lease expired back to pending; answers how many."""
        body = {} if stage is None else {"stage": _stage(stage)}
        return int((await self.request("POST", "/v1/leases/reclaim", json=body))["reclaimed"])

    @_route("post", "/v1/leases/reset", body=("stage",))
    async def reset_inflight(self, *, stage: Stage | str | None = None) -> int:
        """Every in-flight row back to pending, whatever its lease (single-process start-up)."""
        body = {} if stage is None else {"stage": _stage(stage)}
        return int((await self.request("POST", "/v1/leases/reset", json=body))["reset"])

    @_route("post", "/v1/leases/recover", body=("owner", "lane_owner"))
    async def recover_inflight(self, owner: str, *, lane_owner: str | None = None) -> int:
        """Other owners' in-flight rows and lane leases taken back by a new leader."""
        body = _drop_none({"owner": owner, "lane_owner": lane_owner})
        return int((await self.request("POST", "/v1/leases/recover", json=body))["recovered"])

    @_route("post", "/v1/dead-letters/sweep", body=("stage", "keep"))
    async def sweep_dead_letters(self, stage: Stage | str, keep: Sequence[str]) -> int:
        """Dead-letter live rows of ``stage`` (``outbound`` or ``routed``) whose destination or
        handler is not in ``keep``; answers how many."""
        body = {"stage": _stage(stage), "keep": list(keep)}
        return int((await self.request("POST", "/v1/dead-letters/sweep", json=body))["dead"])

    @_route("get", "/v1/lanes", answer=LaneList)
    async def lanes(
        self,
        *,
        stage: Stage | str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        consistency: str | None = None,
    ) -> LaneList:
        """A page of every lane (stage, then name) with its depth, oldest row and holder; pass
        the answer's ``next_cursor`` as ``cursor`` for the next page. Unscoped tokens only."""
        params = {
            "stage": None if stage is None else _stage(stage),
            "limit": limit,
            "cursor": cursor,
            "consistency": consistency,
        }
        return await self._call(LaneList, "GET", "/v1/lanes", params=params)

    @_route("get", "/v1/lanes/{stage}/{name}", answer=LaneView)
    async def lane(
        self, stage: Stage | str, name: str, *, consistency: str | None = None
    ) -> LaneView:
        """A lane's depth, oldest pending row, inflight count and holder."""
        return await self._call(
            LaneView,
            "GET",
            f"/v1/lanes/{segment(_stage(stage))}/{segment(name)}",
            params={"consistency": consistency},
        )

    @_route(
        "post",
        "/v1/lanes/{stage}/{name}/claim",
        body=("owner", "ttl_ms", "lane_lease", "row_owner", "wait_ms"),
        answer=FifoClaim,
    )
    async def claim_fifo(
        self,
        stage: Stage | str,
        name: str,
        *,
        owner: str,
        ttl_ms: int,
        lane_lease: bool = True,
        row_owner: str | None = None,
        wait_ms: int | None = None,
    ) -> FifoClaim:
        """Claim the lane's head under a lane lease for ``owner`` (strict FIFO). With
        ``row_owner`` the row's claim is recorded for it while ``owner`` holds the lane; with
        ``lane_lease=False`` no lane lease is taken (the single-process engine's claim). With
        ``wait_ms`` (up to 30,000) a lane with nothing to hand out now is waited on at the
        server, which answers as soon as its head can be claimed, or empty once ``wait_ms``
        has passed (docs/SPEC.md §4.7a); the call's timeout grows by as much."""
        body: dict[str, Any] = {"owner": owner, "ttl_ms": ttl_ms}
        if not lane_lease:
            body["lane_lease"] = False
        if row_owner is not None:
            body["row_owner"] = row_owner
        if wait_ms:
            body["wait_ms"] = wait_ms
        return await self._call(
            FifoClaim,
            "POST",
            f"/v1/lanes/{segment(_stage(stage))}/{segment(name)}/claim",
            json=body,
            wait_s=(wait_ms or 0) / 1000,
        )

    @_route("post", "/v1/lanes/{stage}/{name}/release", body=("owner",), answer=Released)
    async def release_lane(self, stage: Stage | str, name: str, *, owner: str) -> bool:
        """Give ``owner``'s lane lease back; false when it did not hold it."""
        r = await self._call(
            Released,
            "POST",
            f"/v1/lanes/{segment(_stage(stage))}/{segment(name)}/release",
            json={"owner": owner},
        )
        return r.released

    @_route(
        "post", "/v1/destinations/{destination}/pause", body=("reason",), answer=PauseState
    )
    async def pause_destination(self, destination: str, *, reason: str | None = None) -> PauseState:
        """Stop handing out ``destination``'s rows (they stay, in order; rows already out
        finish) until :meth:`resume_destination`. Replicated and audited; unscoped tokens."""
        return await self._call(
            PauseState,
            "POST",
            f"/v1/destinations/{segment(destination)}/pause",
            json=_drop_none({"reason": reason}),
        )

    @_route("post", "/v1/destinations/{destination}/resume", answer=PauseState)
    async def resume_destination(self, destination: str) -> PauseState:
        """Hand ``destination``'s rows out again, its lanes' heads first."""
        return await self._call(
            PauseState, "POST", f"/v1/destinations/{segment(destination)}/resume"
        )

    @_route("get", "/v1/destinations/paused", answer=PausedDestinations)
    async def paused_destinations(
        self, *, consistency: str | None = None
    ) -> PausedDestinations:
        """Every paused destination: who paused it, when and why."""
        return await self._call(
            PausedDestinations,
            "GET",
            "/v1/destinations/paused",
            params={"consistency": consistency},
        )

    @_route(
        "post", "/v1/lanes/outbound/{dest}/cancel", body=("channel", "top_only"), answer=Cancelled
    )
    async def cancel(
        self, destination: str, *, channel: str | None = None, top_only: bool = False
    ) -> int:
        """Cancel a destination's pending outbound rows (or only the first); answers how many."""
        r = await self._call(
            Cancelled,
            "POST",
            f"/v1/lanes/outbound/{segment(destination)}/cancel",
            json=_drop_none({"channel": channel, "top_only": top_only}),
        )
        return r.cancelled

    @_route(
        "post",
        "/v1/claims",
        body=("stage", "limit", "owner", "ttl_ms", "channel", "destination", "wait_ms"),
        answer=Claims,
    )
    async def claim(
        self,
        stage: Stage | str,
        *,
        owner: str,
        ttl_ms: int,
        limit: int = 1,
        channel: str | None = None,
        destination: str | None = None,
        wait_ms: int | None = None,
    ) -> list[ClaimedRow]:
        """Claim up to ``limit`` due rows of ``stage`` (unordered: lanes are ignored). With
        ``wait_ms`` (up to 30,000) a stage with nothing due now is waited on at the server,
        which answers as soon as a row can be claimed, or empty once ``wait_ms`` has passed
        (docs/SPEC.md §4.7a); the call's timeout grows by as much."""
        body = _drop_none(
            {
                "stage": _stage(stage),
                "limit": limit,
                "owner": owner,
                "ttl_ms": ttl_ms,
                "channel": channel,
                "destination": destination,
                "wait_ms": wait_ms or None,
            }
        )
        return (
            await self._call(Claims, "POST", "/v1/claims", json=body, wait_s=(wait_ms or 0) / 1000)
        ).items

    @_route("post", "/v1/leases/renew", body=("owner", "ids", "ttl_ms"), answer=Renewed)
    async def renew(self, ids: Iterable[int], *, owner: str, ttl_ms: int) -> int:
        """Extend ``owner``'s row leases (and its lane leases); answers the rows renewed."""
        r = await self._call(
            Renewed,
            "POST",
            "/v1/leases/renew",
            json={"owner": owner, "ids": list(ids), "ttl_ms": ttl_ms},
        )
        return r.renewed

    async def _row(self, cls: type[T], action: RowAction) -> T:
        return await self._call(
            cls,
            "POST",
            f"/v1/rows/{segment(action.row)}/{segment(action.action)}",
            json=action.body,
        )

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "handlers", "disposition"),
        answer=HandedOff,
    )
    async def route(
        self,
        row: int,
        fence: int,
        handlers: Iterable[Handler | tuple[str, str]],
        *,
        disposition: str | None = None,
    ) -> HandedOff:
        """Hand an ingress row on to one routed row per handler."""
        return await self._row(HandedOff, RowAction.route(row, fence, handlers, disposition))

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "deliveries", "disposition"),
        answer=HandedOff,
    )
    async def handoff(
        self,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        *,
        disposition: str | None = None,
    ) -> HandedOff:
        """Hand an ingress row straight on to one outbound row per delivery."""
        return await self._row(HandedOff, RowAction.handoff(row, fence, deliveries, disposition))

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "deliveries", "state_ops"),
        answer=HandedOff,
    )
    async def transform(
        self,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        *,
        state_ops: Iterable[StateOp | tuple[str, str, Any]] = (),
    ) -> HandedOff:
        """Hand a routed row on to outbound rows, writing transform state in the same command."""
        return await self._row(HandedOff, RowAction.transform(row, fence, deliveries, state_ops))

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "handlers", "deliveries", "disposition", "state_ops", "claim_next"),
        answer=HandedOff,
    )
    async def hand_on_then_claim_next(
        self, action: RowAction, *, owner: str, ttl_ms: int
    ) -> tuple[HandedOff, FifoClaim | None]:
        """A ``route``, ``handoff`` or ``transform`` (built with :class:`RowAction`) and the
        claim of its row's lane's next row for ``owner``, in one write; the claim is ``None``
        when the handoff had already been applied (a retry), which makes none."""
        if action.action not in ("route", "handoff", "transform"):
            raise ValueError(
                f"claim_next goes with a route, handoff or transform, not {action.action}"
            )
        body = {**action.body, "claim_next": {"owner": owner, "ttl_ms": ttl_ms}}
        answer = await self._row(HandedOnNext, RowAction(action.row, action.action, body))
        return HandedOff(applied=answer.applied, index=answer.index), answer.next

    @_route("post", "/v1/rows/{id}/{action}", body=("fence",), answer=Ack)
    async def done(self, row: int, fence: int) -> Ack:
        """The row is finished."""
        return await self._row(Ack, RowAction.done(row, fence))

    @_route("post", "/v1/rows/{id}/{action}", body=("fence", "claim_next"), answer=DoneNext)
    async def done_then_claim_next(
        self, row: int, fence: int, *, owner: str, ttl_ms: int
    ) -> FifoClaim:
        """Mark the row done and claim its lane's next row for ``owner``, in one write."""
        action = RowAction(
            row, "done", {"fence": fence, "claim_next": {"owner": owner, "ttl_ms": ttl_ms}}
        )
        return (await self._row(DoneNext, action)).next

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "body", "outcome", "detail", "reingress_to"),
        answer=Ack,
    )
    async def respond(
        self,
        row: int,
        fence: int,
        body: str,
        outcome: str,
        *,
        detail: str | None = None,
        reingress_to: str | None = None,
    ) -> Ack:
        """An outbound row delivered, with the destination's captured answer."""
        return await self._row(
            Ack, RowAction.response(row, fence, body, outcome, detail, reingress_to)
        )

    @_route("post", "/v1/rows/{id}/{action}", body=("fence", "error", "retry"), answer=Failed)
    async def fail(
        self, row: int, fence: int, error: str, *, retry: RetryPolicy | None = None
    ) -> Failed:
        """The attempt failed: retried after a backoff, or dead once out of attempts."""
        return await self._row(Failed, RowAction.fail(row, fence, error, retry))

    @_route("post", "/v1/rows/{id}/{action}", body=("fence", "error"), answer=Ack)
    async def dead(self, row: int, error: str, *, fence: int | None = None) -> Ack:
        """Dead-letter the row now (without a fence: a live row need not be claimed)."""
        return await self._row(Ack, RowAction.dead(row, error, fence))

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "loopback_channel", "depth_cap"),
        answer=Reingressed,
    )
    async def reingress(
        self, row: int, fence: int, loopback_channel: str, *, depth_cap: int | None = None
    ) -> Reingressed:
        """Re-ingest a response row's captured answer as a new message on ``loopback_channel``."""
        return await self._row(
            Reingressed, RowAction.reingress(row, fence, loopback_channel, depth_cap)
        )

    @_route("post", "/v1/rows/actions", body=("actions",))
    async def row_actions(self, actions: Sequence[RowAction]) -> list[RowActionResult]:
        """Many row actions (each on a different row) in one request, answered one by one in
        order; an action the cluster refused has its :class:`ApiError` in ``error``."""
        body = {"actions": [{"row": a.row, "action": a.action, "body": a.body} for a in actions]}
        answer = await self.request("POST", "/v1/rows/actions", json=body)
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise DecodeError(f"POST /v1/rows/actions: no results in {answer!r}")
        out = []
        for item in results:
            if isinstance(item, dict) and "error" in item and "status" in item:
                err = error_from_response(
                    int(item["status"]), _json_bytes({"error": item["error"]})
                )
                out.append(RowActionResult(None, err))
            else:
                out.append(RowActionResult(item if isinstance(item, dict) else {"value": item}))
        return out

    # --- configuration ----------------------------------------------------------------------

    @_route("get", "/v1/config", answer=ConfigVersion)
    async def config(self, *, consistency: str | None = None) -> ConfigVersion:
        return await self._call(
            ConfigVersion, "GET", "/v1/config", params={"consistency": consistency}
        )

    @_route("put", "/v1/config", answer=ConfigWritten)
    async def put_config(
        self, expected_version: int, config: Mapping[str, Any], *, approval: int | None = None
    ) -> ConfigWritten:
        """Compare-and-set: raises :class:`~raftlane.errors.VersionMismatchError` (with
        ``current_version``) when ``expected_version`` is not the current version.
        ``approval``: the approval id when the config lists ``put_config``."""
        return await self._call(
            ConfigWritten,
            "PUT",
            "/v1/config",
            json=dict(config),
            headers={"if-match": str(expected_version), **(_approval(approval) or {})},
        )

    @_route("get", "/v1/config/versions/{v}", answer=ConfigVersion)
    async def config_version(
        self, version: int, *, consistency: str | None = None
    ) -> ConfigVersion:
        return await self._call(
            ConfigVersion,
            "GET",
            f"/v1/config/versions/{segment(version)}",
            params={"consistency": consistency},
        )

    # --- the engine's users, roles and sessions (docs/SPEC.md §13.6; admin) ----------------
    # raftlane.messagefoundry.RaftlaneStore gives these answers messagefoundry's record types.

    @_route(
        "post",
        "/v1/users",
        body=(
            "id",
            "username",
            "auth_provider",
            "display_name",
            "email",
            "password_hash",
            "must_change_password",
        ),
        answer=UserCreated,
    )
    async def create_user(self, body: Mapping[str, Any]) -> UserCreated:
        """A new user (409 ``already_exists`` naming ``user_id`` or ``username`` when taken)."""
        return await self._call(UserCreated, "POST", "/v1/users", json=dict(body))

    @_route("get", "/v1/users", body=(), answer=UserList)
    async def list_users(
        self, *, username: str | None = None, limit: int | None = None
    ) -> UserList:
        """Users by username; ``count``: how many match before ``limit`` (0: the count only)."""
        return await self._call(
            UserList,
            "GET",
            "/v1/users",
            params=_drop_none({"username": username, "limit": limit}),
        )

    @_route("get", "/v1/users/{id}", body=(), answer=UserView)
    async def get_user(self, user_id: str) -> UserView:
        return await self._call(UserView, "GET", f"/v1/users/{segment(user_id)}")

    @_route("delete", "/v1/users/{id}", body=(), answer=UserDeleted)
    async def delete_user(self, user_id: str) -> UserDeleted:
        """The user, its role assignments and its sessions; ``deleted`` false when unknown."""
        return await self._call(UserDeleted, "DELETE", f"/v1/users/{segment(user_id)}")

    @_route("get", "/v1/users/{id}/secrets", body=(), answer=UserSecrets)
    async def user_secrets(self, user_id: str) -> UserSecrets:
        return await self._call(UserSecrets, "GET", f"/v1/users/{segment(user_id)}/secrets")

    @_route("get", "/v1/users/{id}/roles", body=(), answer=UserRoles)
    async def user_roles(self, user_id: str) -> UserRoles:
        return await self._call(UserRoles, "GET", f"/v1/users/{segment(user_id)}/roles")

    @_route("put", "/v1/users/{id}/roles", body=("role_ids", "assigned_by"), answer=RolesAssigned)
    async def set_user_roles(
        self, user_id: str, role_ids: Sequence[str], *, assigned_by: str | None = None
    ) -> RolesAssigned:
        return await self._call(
            RolesAssigned,
            "PUT",
            f"/v1/users/{segment(user_id)}/roles",
            json=_drop_none({"role_ids": list(role_ids), "assigned_by": assigned_by}),
        )

    @_route("get", "/v1/users/{id}/sessions", body=(), answer=SessionList)
    async def user_sessions(self, user_id: str) -> SessionList:
        """The user's sessions neither revoked nor expired, most recently used first."""
        return await self._call(SessionList, "GET", f"/v1/users/{segment(user_id)}/sessions")

    @_route(
        "post",
        "/v1/users/{id}/sessions/revoke",
        body=("except_token_hash", "at"),
        answer=SessionsRevoked,
    )
    async def revoke_user_sessions(
        self, user_id: str, *, except_token_hash: str | None = None, at: int | None = None
    ) -> SessionsRevoked:
        """``at``: the caller's time (ms) to stamp as ``revoked_at`` (docs/SPEC.md §13.2)."""
        return await self._call(
            SessionsRevoked,
            "POST",
            f"/v1/users/{segment(user_id)}/sessions/revoke",
            json=_drop_none({"except_token_hash": except_token_hash, "at": at}),
        )

    @_route("post", "/v1/users/{id}/sessions/cap", body=("keep", "at"), answer=SessionsRevoked)
    async def cap_user_sessions(
        self, user_id: str, keep: int, *, at: int | None = None
    ) -> SessionsRevoked:
        """``at``: the caller's time (ms) to stamp as ``revoked_at`` (docs/SPEC.md §13.2)."""
        return await self._call(
            SessionsRevoked,
            "POST",
            f"/v1/users/{segment(user_id)}/sessions/cap",
            json=_drop_none({"keep": keep, "at": at}),
        )

    @_route("post", "/v1/users/{id}/{change}", body=(), answer=UserChanged)
    async def change_user(
        self, user_id: str, change: str, body: Mapping[str, Any] | None = None
    ) -> UserChanged:
        """``change``: ``password``, ``disabled``, ``profile``, ``totp-secret``, ``totp-enable``,
        ``totp-disable``, ``login-success``, ``login-failure``, ``channel-scope`` or
        ``consume`` (which also answers ``consumed``), ``body`` that change's members."""
        return await self._call(
            UserChanged,
            "POST",
            f"/v1/users/{segment(user_id)}/{segment(change)}",
            json=dict(body or {}),
        )

    @_route("get", "/v1/roles", body=(), answer=RoleList)
    async def list_roles(self) -> RoleList:
        return await self._call(RoleList, "GET", "/v1/roles")

    @_route(
        "put",
        "/v1/roles/{id}",
        body=("display_name", "description", "builtin"),
        answer=RoleWritten,
    )
    async def put_role(
        self,
        role_id: str,
        display_name: str,
        *,
        description: str | None = None,
        builtin: bool | None = None,
    ) -> RoleWritten:
        return await self._call(
            RoleWritten,
            "PUT",
            f"/v1/roles/{segment(role_id)}",
            json=_drop_none(
                {"display_name": display_name, "description": description, "builtin": builtin}
            ),
        )

    @_route("get", "/v1/directory-groups/{map}", body=(), answer=GroupMap)
    async def group_map(self, which: str, *, groups: Sequence[str] | None = None) -> GroupMap:
        """The map ``which`` (``roles`` or ``channels``); with ``groups`` also what it gives
        them (``values``)."""
        return await self._call(
            GroupMap,
            "GET",
            f"/v1/directory-groups/{segment(which)}",
            params=_drop_none({"groups": ",".join(groups) if groups is not None else None}),
        )

    @_route("put", "/v1/directory-groups/{map}", body=("entries",), answer=GroupMapWritten)
    async def put_group_map(
        self, which: str, entries: Sequence[tuple[str, str]]
    ) -> GroupMapWritten:
        """Replace the map ``which`` whole with ``(group, value)`` entries."""
        return await self._call(
            GroupMapWritten,
            "PUT",
            f"/v1/directory-groups/{segment(which)}",
            json={"entries": [{"group": g, "value": v} for g, v in entries]},
        )

    @_route(
        "post",
        "/v1/sessions",
        body=("token_hash", "user_id", "expires_at", "client", "seed_reauth", "at"),
        answer=SessionCreated,
    )
    async def create_session(self, body: Mapping[str, Any]) -> SessionCreated:
        """A new session of a user (404 for an unknown user, 409 for a token hash in use)."""
        return await self._call(SessionCreated, "POST", "/v1/sessions", json=dict(body))

    @_route("post", "/v1/sessions/purge-expired", body=(), answer=SessionsPurged)
    async def purge_expired_sessions(self) -> SessionsPurged:
        """Delete the sessions expired before the request's time."""
        return await self._call(SessionsPurged, "POST", "/v1/sessions/purge-expired", json={})

    @_route("get", "/v1/sessions/{token_hash}", body=(), answer=SessionView)
    async def get_session(self, token_hash: str) -> SessionView:
        return await self._call(SessionView, "GET", f"/v1/sessions/{segment(token_hash)}")

    @_route("post", "/v1/sessions/{token_hash}/{change}", body=(), answer=SessionChanged)
    async def change_session(
        self, token_hash: str, change: str, body: Mapping[str, Any] | None = None
    ) -> SessionChanged:
        """``change``: ``touch``, ``reauth``, ``mfa-verified`` or ``revoke``; ``body``: its
        ``at`` and (``reauth``) ``client``."""
        return await self._call(
            SessionChanged,
            "POST",
            f"/v1/sessions/{segment(token_hash)}/{segment(change)}",
            json=dict(body or {}),
        )

    # --- audit ------------------------------------------------------------------------------

    @_route("post", "/v1/audit", body=("action", "channel", "org", "detail"), answer=AuditAppended)
    async def audit_append(
        self,
        action: str,
        *,
        channel: str | None = None,
        org: str | None = None,
        detail: str | None = None,
    ) -> AuditAppended:
        return await self._call(
            AuditAppended,
            "POST",
            "/v1/audit",
            json=_drop_none({"action": action, "channel": channel, "org": org, "detail": detail}),
        )

    @_route("get", "/v1/audit", answer=AuditRows)
    async def audit_list(
        self,
        org: str,
        *,
        start: int | None = None,
        limit: int | None = None,
        consistency: str | None = None,
    ) -> list[AuditRow]:
        """An org's audit rows from seq ``start``."""
        params = {"org": org, "from": start, "limit": limit, "consistency": consistency}
        return (await self._call(AuditRows, "GET", "/v1/audit", params=params)).rows

    @_route("get", "/v1/audit/anchor", answer=AuditAnchor)
    async def audit_anchor(self, org: str, *, consistency: str | None = None) -> AuditAnchor:
        return await self._call(
            AuditAnchor,
            "GET",
            "/v1/audit/anchor",
            params={"org": org, "consistency": consistency},
        )

    @_route("get", "/v1/audit/verify", answer=AuditVerification)
    async def audit_verify(
        self,
        org: str,
        *,
        anchor: AuditAnchor | tuple[int, str] | None = None,
        consistency: str | None = None,
    ) -> AuditVerification:
        """Recompute an org's chain, optionally against an anchor kept elsewhere."""
        params: dict[str, Any] = {"org": org, "consistency": consistency}
        if anchor is not None:
            count, head = (anchor.count, anchor.head) if isinstance(anchor, AuditAnchor) else anchor
            params.update(count=count, head=head)
        return await self._call(AuditVerification, "GET", "/v1/audit/verify", params=params)

    @_route("get", "/v1/audit/search", answer=AuditRows)
    async def audit_search(
        self, org: str, actor: str, *, action_prefix: str | None = None, limit: int = 100
    ) -> AuditRows:
        """``actor``'s audit rows of ``org``, newest first."""
        return await self._call(
            AuditRows,
            "GET",
            "/v1/audit/search",
            params=_drop_none(
                {"org": org, "actor": actor, "action_prefix": action_prefix, "limit": limit}
            ),
        )

    @_route("post", "/v1/audit/seal", body=("org",), answer=AuditAppended)
    async def audit_seal(self, org: str) -> AuditAppended:
        return await self._call(AuditAppended, "POST", "/v1/audit/seal", json={"org": org})

    # --- transform state, reference sets, retention -----------------------------------------

    @_route("get", "/v1/state/{namespace}", answer=Namespace)
    async def namespace(
        self, namespace: str, *, entries: bool = False, consistency: str | None = None
    ) -> Namespace:
        """A namespace's version; with ``entries`` also every entry, read at that version."""
        return await self._call(
            Namespace,
            "GET",
            f"/v1/state/{segment(namespace)}",
            params=_drop_none({"entries": "true" if entries else None, "consistency": consistency}),
        )

    @_route("get", "/v1/state/{namespace}/{key}", answer=StateEntry)
    async def state_entry(
        self, namespace: str, key: str, *, consistency: str | None = None
    ) -> StateEntry:
        return await self._call(
            StateEntry,
            "GET",
            f"/v1/state/{segment(namespace)}/{segment(key)}",
            params={"consistency": consistency},
        )

    @_route("get", "/v1/state", answer=NamespaceList)
    async def namespaces(self, *, consistency: str | None = None) -> NamespaceList:
        """Every transform-state namespace with its version, in name order."""
        return await self._call(
            NamespaceList, "GET", "/v1/state", params={"consistency": consistency}
        )

    @_route("get", "/v1/reference", answer=ReferenceSetList)
    async def reference_sets(self, *, consistency: str | None = None) -> ReferenceSetList:
        """Every reference set without its rows, in name order."""
        return await self._call(
            ReferenceSetList, "GET", "/v1/reference", params={"consistency": consistency}
        )

    @_route("put", "/v1/reference/{name}", body=("version", "rows"), answer=ReferenceWritten)
    async def put_reference(
        self, name: str, version: int | str, rows: Mapping[str, str]
    ) -> ReferenceWritten:
        """Replace a set whole. ``version``: a number, or a text label such as ``"v1"`` (then
        the stored number moves by one and the label is kept beside it)."""
        return await self._call(
            ReferenceWritten,
            "PUT",
            f"/v1/reference/{segment(name)}",
            json={"version": version, "rows": dict(rows)},
        )

    @_route("get", "/v1/reference/{name}", answer=ReferenceSnapshot)
    async def reference(self, name: str, *, consistency: str | None = None) -> ReferenceSnapshot:
        return await self._call(
            ReferenceSnapshot,
            "GET",
            f"/v1/reference/{segment(name)}",
            params={"consistency": consistency},
        )

    @_route(
        "post", "/v1/retention/purge", body=("kind", "older_than_ms", "older_than"), answer=Purged
    )
    async def purge(
        self,
        kind: str,
        *,
        older_than_ms: int | None = None,
        older_than: int | None = None,
        approval: int | None = None,
    ) -> Purged:
        """``kind``: ``bodies``, ``dead_letters`` or ``state``; what is older than an age
        (``older_than_ms``) or a cutoff (``older_than``, ms since the epoch) goes.
        ``approval``: the approval id when the config lists ``purge``."""
        return await self._call(
            Purged,
            "POST",
            "/v1/retention/purge",
            json=_drop_none(
                {"kind": kind, "older_than_ms": older_than_ms, "older_than": older_than}
            ),
            headers=_approval(approval),
        )

    # --- approvals, tokens, keys ------------------------------------------------------------

    @_route("post", "/v1/approvals", body=("operation", "params", "ttl_ms"), answer=ApprovalCreated)
    async def create_approval(
        self, operation: str, *, params: Any = None, ttl_ms: int | None = None
    ) -> ApprovalCreated:
        return await self._call(
            ApprovalCreated,
            "POST",
            "/v1/approvals",
            json=_drop_none({"operation": operation, "params": params, "ttl_ms": ttl_ms}),
        )

    @_route("get", "/v1/approvals/{id}", answer=Approval)
    async def approval(self, approval_id: int, *, consistency: str | None = None) -> Approval:
        return await self._call(
            Approval,
            "GET",
            f"/v1/approvals/{segment(approval_id)}",
            params={"consistency": consistency},
        )

    @_route("post", "/v1/approvals/{id}/decide", body=("approve",), answer=ApprovalDecided)
    async def decide_approval(self, approval_id: int, approve: bool) -> ApprovalDecided:
        return await self._call(
            ApprovalDecided,
            "POST",
            f"/v1/approvals/{segment(approval_id)}/decide",
            json={"approve": approve},
        )

    @_route("get", "/v1/approvals", answer=ApprovalList)
    async def pending_approvals(self, *, limit: int = 100) -> ApprovalList:
        """Approvals pending and unexpired at the request's time, newest request first."""
        return await self._call(
            ApprovalList, "GET", "/v1/approvals", params={"status": "pending", "limit": limit}
        )

    @_route(
        "post",
        "/v1/approvals/keyed",
        body=("key", "operation", "params", "requester", "requested_at", "expires_at"),
        answer=ApprovalCreated,
    )
    async def create_keyed_approval(
        self,
        key: str,
        operation: str,
        *,
        params: str,
        requester: str,
        requested_at: int,
        expires_at: int | None = None,
    ) -> ApprovalCreated:
        """An approval under the caller's ``key``, requester and times (ms); no ``expires_at``:
        it never expires."""
        body = {
            "key": key,
            "operation": operation,
            "params": params,
            "requester": requester,
            "requested_at": requested_at,
            "expires_at": expires_at,
        }
        return await self._call(
            ApprovalCreated, "POST", "/v1/approvals/keyed", json=_drop_none(body)
        )

    @_route("get", "/v1/approvals/keyed/{key}", answer=Approval)
    async def keyed_approval(self, key: str) -> Approval:
        """The approval under ``key``, its status as stored."""
        return await self._call(Approval, "GET", f"/v1/approvals/keyed/{segment(key)}")

    @_route(
        "post",
        "/v1/approvals/keyed/{key}/decide",
        body=("status", "approver", "decided_at"),
        answer=KeyedDecided,
    )
    async def decide_keyed_approval(
        self, key: str, status: str, *, approver: str | None = None, decided_at: int
    ) -> KeyedDecided:
        """``status``: ``approved``, ``rejected`` or ``expired``; a decided approval answers
        409 ``already_decided``."""
        body = _drop_none({"status": status, "approver": approver, "decided_at": decided_at})
        return await self._call(
            KeyedDecided, "POST", f"/v1/approvals/keyed/{segment(key)}/decide", json=body
        )

    # --- engine coordination (docs/SPEC.md §15) ----------------------------------------------

    @_route("put", "/v1/engine/nodes/{node_id}", body=("host", "pid"), answer=HeartbeatAck)
    async def engine_heartbeat(
        self, node_id: str, *, host: str | None = None, pid: int | None = None
    ) -> HeartbeatAck:
        """Register ``node_id`` or refresh its ``last_seen``."""
        return await self._call(
            HeartbeatAck,
            "PUT",
            f"/v1/engine/nodes/{segment(node_id)}",
            json=_drop_none({"host": host, "pid": pid}),
        )

    @_route("delete", "/v1/engine/nodes/{node_id}")
    async def engine_leave(self, node_id: str) -> bool:
        """Mark ``node_id`` left (and give up its leadership); false when it was never registered."""
        answer = await self.request("DELETE", f"/v1/engine/nodes/{segment(node_id)}")
        return bool(answer["left"])

    @_route("get", "/v1/engine/nodes", answer=EngineNodes)
    async def engine_nodes(self) -> EngineNodes:
        """Every registered engine process (tombstones of clean stops included) and the time
        of the read."""
        return await self._call(EngineNodes, "GET", "/v1/engine/nodes")

    @_route(
        "post", "/v1/engine/leadership/{group}", body=("node_id", "ttl_ms"), answer=Leadership
    )
    async def campaign(self, group: str, node_id: str, *, ttl_ms: int) -> Leadership:
        """Take or renew ``group``'s leadership for ``node_id``; answers the lease as it stands,
        whoever holds it."""
        return await self._call(
            Leadership,
            "POST",
            f"/v1/engine/leadership/{segment(group)}",
            json={"node_id": node_id, "ttl_ms": ttl_ms},
        )

    @_route("post", "/v1/engine/leadership/{group}/resign", body=("node_id",))
    async def resign(self, group: str, node_id: str) -> bool:
        answer = await self.request(
            "POST", f"/v1/engine/leadership/{segment(group)}/resign", json={"node_id": node_id}
        )
        return bool(answer["resigned"])

    @_route("get", "/v1/engine/leadership/{group}", answer=Leadership)
    async def leadership(self, group: str) -> Leadership:
        """``group``'s leadership lease as it stands."""
        return await self._call(Leadership, "GET", f"/v1/engine/leadership/{segment(group)}")

    @_route("post", "/v1/engine/counters/{name}")
    async def bump_counter(self, name: str) -> int:
        answer = await self.request("POST", f"/v1/engine/counters/{segment(name)}")
        return int(answer["value"])

    @_route("get", "/v1/engine/counters/{name}")
    async def counter(self, name: str) -> int:
        answer = await self.request("GET", f"/v1/engine/counters/{segment(name)}")
        return int(answer["value"])

    @_route("get", "/v1/engine/lanes/{owner}")
    async def held_lanes(self, owner: str) -> list[str]:
        """The lanes (``stage:name``) whose lease ``owner`` holds now."""
        answer = await self.request("GET", f"/v1/engine/lanes/{segment(owner)}")
        return [str(lane) for lane in answer["lanes"]]

    @_route("get", "/v1/tokens", answer=TokenList)
    async def tokens(self, *, consistency: str | None = None) -> list[Principal]:
        return (
            await self._call(TokenList, "GET", "/v1/tokens", params={"consistency": consistency})
        ).tokens

    @_route("post", "/v1/tokens", body=("name", "role", "channels", "orgs"), answer=TokenCreated)
    async def create_token(
        self,
        name: str,
        role: str,
        *,
        channels: Sequence[str] | None = None,
        orgs: Sequence[str] | None = None,
        approval: int | None = None,
    ) -> TokenCreated:
        """Create or rotate a principal's token (admin); the token is shown once. ``orgs``: the
        audit orgs it may reach; ``approval`` when the config lists ``create_token``."""
        body = {
            "name": name,
            "role": role,
            "channels": list(channels) if channels else None,
            "orgs": list(orgs) if orgs is not None else None,
        }
        return await self._call(
            TokenCreated, "POST", "/v1/tokens", json=_drop_none(body), headers=_approval(approval)
        )

    @_route("delete", "/v1/tokens/{name}", answer=Revoked)
    async def revoke_token(self, name: str) -> Revoked:
        return await self._call(Revoked, "DELETE", f"/v1/tokens/{segment(name)}")

    @_route("get", "/v1/owners/{owner}")
    async def owner(self, owner: str) -> str | None:
        """The principal a lease owner name or engine node id is bound to (``None``: nobody's
        yet; docs/SPEC.md §9.8)."""
        answer = await self.request("GET", f"/v1/owners/{segment(owner)}")
        principal = answer.get("principal")
        return None if principal is None else str(principal)

    @_route("put", "/v1/owners/{owner}", body=("principal",))
    async def reserve_owner(self, owner: str, principal: str) -> bool:
        """Bind ``owner`` (an owner name or engine node id) to ``principal`` ahead of its first
        use (admin); answers whether the binding changed."""
        answer = await self.request(
            "PUT", f"/v1/owners/{segment(owner)}", json={"principal": principal}
        )
        return bool(answer["changed"])

    @_route("delete", "/v1/owners/{owner}")
    async def release_owner(self, owner: str) -> bool:
        """Release ``owner``'s binding (admin); answers whether there was one."""
        answer = await self.request("DELETE", f"/v1/owners/{segment(owner)}")
        return bool(answer["changed"])

    @_route("post", "/v1/keys/rotate", body=("batch_size",), answer=KeyRotation)
    async def rotate_keys(
        self, *, batch_size: int | None = None, approval: int | None = None
    ) -> KeyRotation:
        return await self._call(
            KeyRotation,
            "POST",
            "/v1/keys/rotate",
            json=_drop_none({"batch_size": batch_size}),
            headers=_approval(approval),
        )

    # --- cluster ----------------------------------------------------------------------------

    @_route("get", "/v1/cluster", answer=ClusterStatus)
    async def cluster(self) -> ClusterStatus:
        """The answering node's view: leader, term, indexes, membership."""
        return await self._call(ClusterStatus, "GET", "/v1/cluster")

    @_route("get", "/v1/cluster/digest", answer=StateDigest)
    async def digest(self, endpoint: str | None = None) -> StateDigest:
        """A node's state digest: ``endpoint``'s, without failover, else the current node's."""
        if endpoint is None:
            return await self._call(StateDigest, "GET", "/v1/cluster/digest")
        base = _base_url(endpoint)
        try:
            r = await self._shared.get(f"{base}/v1/cluster/digest", self._headers(None))
        except wire.WireError as e:
            raise UnavailableError(f"GET {base}/v1/cluster/digest: {e}") from e
        if r.status_code != 200:
            raise error_from_response(r.status_code, r.content)
        return decode(StateDigest, r.json(), "GET /v1/cluster/digest")

    @_route("post", "/v1/cluster/snapshot", answer=SnapshotTaken)
    async def snapshot(self) -> SnapshotTaken:
        """The current node builds a snapshot covering everything it has applied (unless its
        current one does) and answers the index it covers. Admin tokens only."""
        return await self._call(SnapshotTaken, "POST", "/v1/cluster/snapshot")

    @_route("get", "/v1/cluster/snapshot")
    async def backup(self, path: str | os.PathLike[str]) -> Backup:
        """Save a backup of the cluster to ``path`` (admin): the answering node catches up with
        the leader's commit, snapshots and sends the file, which holds every write acknowledged
        before the call. Written to ``path + ".part"`` (mode 0600: it holds every message), then
        renamed. The file passes through memory here; for a large state use ``raftlane ctl
        snapshot save``, which streams it and checks its SHA-256. Restore: ``raftlane restore``."""
        r = await self._send("GET", "/v1/cluster/snapshot")
        target = os.fspath(path)
        part = target + ".part"
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(r.content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, target)
        try:
            index = int(r.headers.get("x-raftlane-snapshot-index", ""))
            node_id = int(r.headers.get("x-raftlane-node-id", ""))
        except ValueError as e:
            raise DecodeError(f"GET /v1/cluster/snapshot: bad backup headers: {e}") from e
        return Backup(path=target, index=index, node_id=node_id, bytes=len(r.content))

    @_route("post", "/v1/cluster/leader", body=("to",), answer=LeaderTransferred)
    async def transfer_leader(self, to: int | None = None) -> LeaderTransferred:
        """Hand leadership to voter ``to`` (``None``: the voter whose log reaches furthest); the
        leader holds new writes until it has caught up, then it is elected. Admin tokens only;
        a voter that cannot take it, or a transfer that did not happen, is a 400/409 naming
        ``to``."""
        return await self._call(
            LeaderTransferred, "POST", "/v1/cluster/leader", json=_drop_none({"to": to})
        )

    @_route("get", "/v1/cluster/log-format", answer=LogFormatStatus)
    async def log_format(self) -> LogFormatStatus:
        """The log format the cluster writes, as the answering node applied it, and the formats
        that node's build reads (a rolling upgrade is done once it says the newest)."""
        return await self._call(LogFormatStatus, "GET", "/v1/cluster/log-format")

    @_route("post", "/v1/cluster/log-format", body=("format",), answer=LogFormatStatus)
    async def raise_log_format(self, format: int) -> LogFormatStatus:
        """Raise the cluster's log format to ``format`` now (the leader does it by itself once
        every node reads it). Admin tokens only; a 409 names a node whose build cannot read it,
        a 400 refuses an unknown format or a step back."""
        return await self._call(
            LogFormatStatus, "POST", "/v1/cluster/log-format", json={"format": format}
        )

    @_route("post", "/v1/cluster/learners", body=("id", "addr"))
    async def add_learner(self, node_id: int, addr: str) -> None:
        await self._send("POST", "/v1/cluster/learners", json={"id": node_id, "addr": addr})

    @_route("post", "/v1/cluster/membership", body=("voters",))
    async def change_membership(self, voters: Iterable[int]) -> None:
        await self._send("POST", "/v1/cluster/membership", json={"voters": list(voters)})

    @_route("get", "/healthz", answer=Health)
    async def healthz(self) -> Health:
        return await self._call(Health, "GET", "/healthz")

    @_route("get", "/readyz", answer=Readiness)
    async def readyz(self, endpoint: str | None = None) -> Readiness:
        """One node's readiness (``endpoint``, else the current node), without failover: a
        ``503`` answer is ``ready=False``, not an error."""
        base = _base_url(endpoint) if endpoint else self.current_endpoint
        try:
            r = await self._shared.get(f"{base}/readyz", {})
        except wire.WireError as e:
            raise UnavailableError(f"GET {base}/readyz: {e}") from e
        if r.status_code not in (200, 503):
            raise error_from_response(r.status_code, r.content)
        return decode(Readiness, r.json(), "GET /readyz")

    @_route("get", "/metrics")
    async def metrics(self) -> str:
        """Prometheus text of the answering node."""
        return (await self._send("GET", "/metrics")).text

    @_route("get", "/ui")
    async def operator_page(self) -> str:
        """The operator's page (HTML) the answering node serves; open it in a browser."""
        return (await self._send("GET", "/ui")).text

    @_route("get", "/openapi.json")
    async def openapi(self) -> dict[str, Any]:
        """The OpenAPI document the node serves."""
        doc = await self.request("GET", "/openapi.json")
        if not isinstance(doc, dict):
            raise DecodeError("GET /openapi.json: not a JSON object")
        return doc


def _json_bytes(v: Any) -> bytes:
    return _json.dumps(v).encode()
