"""The async client.

A :class:`Client` knows every node of a cluster. It sends a call to the node it believes leads
(asking ``GET /v1/cluster`` after any failure), and on a connection failure, a timeout or a
``503`` moves on to the next node and tries again, pausing 50 ms doubling to 1 s, until its
deadline. Every call is safe to repeat: reads change nothing, and each write carries one
``Request-Id`` generated when the write is called and kept across its retries, so the cluster
applies it at most once and answers a repeat with the first answer (docs/SPEC.md §2.5).

Any other error answer raises an :class:`~raftlane.errors.ApiError` subclass carrying the
body's ``code``, ``field`` and ``message``.

Each route method names its route once, in its ``@route`` decorator (:mod:`raftlane._routes`):
verb, path template, the members of its path, query, headers and body, and its answer type. The
decorator builds the request and decodes the answer; the method states its signature, defaults
and docstring. The methods therefore have empty bodies, which mypy's ``empty-body`` check would
take for a missing ``return`` (disabled for this module below).

Logging (logger ``raftlane.client``): every answer at DEBUG, never above: a program that logs at
INFO, as messagefoundry's service does by default, would otherwise log each of its calls, and an
idle engine's workers call many times a second. The first attempt of a call that fails and is
tried again (no answer, a ``503``, a ``429``) at WARNING, its further attempts at DEBUG, so an
election or a node going away shows once per call, not once per retry.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

import asyncio
import ipaddress
import json as _json
import logging
import os
import ssl
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from . import wire
from ._routes import Request, Route, RouteInfo, route_of, segment
from ._routes import route as _route
from .errors import (
    DecodeError,
    InsecureTransportError,
    RaftlaneError,
    UnavailableError,
    error_from_response,
)
from .types import (
    Ack,
    Approval,
    ApprovalCreated,
    ApprovalDecided,
    ApprovalList,
    AuditAnchor,
    AuditAppended,
    AuditRow,
    AuditRows,
    AuditVerification,
    Backup,
    Cancelled,
    ClaimedRow,
    Claims,
    ClusterStatus,
    ConfigVersion,
    ConfigWritten,
    ConnectionTraffic,
    Count,
    CounterValue,
    DeadLetterRow,
    DeadLetters,
    Delivery,
    DoneNext,
    EngineNodes,
    Enqueued,
    Failed,
    FifoClaim,
    GroupMap,
    GroupMapWritten,
    HandedOff,
    HandedOnNext,
    Handler,
    Health,
    HeartbeatAck,
    HeldLanes,
    KeyedDecided,
    KeyRotation,
    LaneList,
    LaneView,
    Leadership,
    LeaderTransferred,
    ListedMessage,
    LogFormatStatus,
    MessageList,
    MessageView,
    Namespace,
    NamespaceList,
    NodeLeft,
    OwnerBinding,
    PausedDestinations,
    PauseState,
    Principal,
    Purged,
    Readiness,
    Reclaimed,
    Recovered,
    ReferenceSetList,
    ReferenceSnapshot,
    ReferenceWritten,
    Reingressed,
    Released,
    Renewed,
    Requeued,
    ResetRows,
    Resigned,
    RetryPolicy,
    Revoked,
    RoleList,
    RolesAssigned,
    RoleWritten,
    RowActionResult,
    RowActionResults,
    RowDetail,
    SessionChanged,
    SessionCreated,
    SessionList,
    SessionsPurged,
    SessionsRevoked,
    SessionView,
    SnapshotTaken,
    Stage,
    StateDigest,
    StateEntry,
    StateOp,
    Stats,
    StorageStats,
    Swept,
    TokenCreated,
    TokenList,
    UserChanged,
    UserCreated,
    UserDeleted,
    UserList,
    UserRoles,
    UserSecrets,
    UserView,
    Viewed,
    decode,
)

__all__ = ["Client", "RouteInfo", "RowAction", "client_routes", "segment"]

log = logging.getLogger(__name__)

#: How long an endpoint that failed to answer is not taken for the leader.
RECENT_FAILURE_S = 3.0

#: Longest ``Request-Id`` the API accepts (docs/SPEC.md §2.5).
MAX_REQUEST_ID_LEN = 56


def _base_url(endpoint: str) -> str:
    e = endpoint.strip().rstrip("/")
    return e if "://" in e else f"http://{e}"


def _tls_url(url: str) -> str:
    return "https://" + url[len("http://") :] if url.startswith("http://") else url


def _host_port(endpoint: str) -> str:
    e = endpoint.strip().rstrip("/")
    return e.split("://", 1)[1] if "://" in e else e


def client_routes() -> list[RouteInfo]:
    """Every route a :class:`Client` method calls, in definition order."""
    out = []
    for name in vars(Client):
        spec = getattr(getattr(Client, name), "__raftlane_route__", None)
        if isinstance(spec, Route):
            out.append(spec.info)
    return out


#: The filters of the message list and its count.
_MESSAGE_FILTERS = ("channel", "status", "message_type", "control_id", "allowed_channels")
#: The filters of the dead-letter list and its count.
_DEAD_FILTERS = ("stage", "channel", "destination", "allowed_channels")


# --- how members travel: the encoders the route declarations name ---------------------------


def _or_none(v: Any) -> Any:
    """Left out when false, empty or zero (a flag sent only when set, a ``wait_ms`` of 0)."""
    return v or None


def _only_false(v: bool) -> bool | None:
    """Sent only when false (``lane_lease``, whose default is true at the server too)."""
    return None if v else False


def _newest_failed(v: bool) -> str | None:
    return "newest_failed" if v else None


def _handlers(handlers: Iterable[Handler | tuple[str, str]]) -> list[dict[str, str]]:
    hs = [h if isinstance(h, Handler) else Handler(*h) for h in handlers]
    return [{"handler": h.handler, "payload": h.payload} for h in hs]


def _deliveries(deliveries: Iterable[Delivery | tuple[str, str]]) -> list[dict[str, str]]:
    ds = [d if isinstance(d, Delivery) else Delivery(*d) for d in deliveries]
    return [{"destination": d.destination, "payload": d.payload} for d in ds]


def _state_ops(state_ops: Iterable[StateOp | tuple[str, str, Any]]) -> list[dict[str, Any]]:
    ops = [o if isinstance(o, StateOp) else StateOp(*o) for o in state_ops]
    return [{"namespace": o.namespace, "key": o.key, "value": o.value} for o in ops]


def _retry_json(retry: RetryPolicy) -> dict[str, Any]:
    members = {
        "max_attempts": retry.max_attempts,
        "backoff_ms": retry.backoff_ms,
        "multiplier_milli": retry.multiplier_milli,
        "max_backoff_ms": retry.max_backoff_ms,
    }
    return {k: v for k, v in members.items() if v is not None}


def _group_entries(entries: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"group": g, "value": v} for g, v in entries]


def _anchor_count(anchor: AuditAnchor | tuple[int, str]) -> int:
    return anchor.count if isinstance(anchor, AuditAnchor) else anchor[0]


def _anchor_head(anchor: AuditAnchor | tuple[int, str]) -> str:
    return anchor.head if isinstance(anchor, AuditAnchor) else anchor[1]


def _row_actions(actions: Iterable[RowAction]) -> list[dict[str, Any]]:
    return [{"row": a.row, "action": a.action, "body": a.body} for a in actions]


def _changed(binding: OwnerBinding) -> bool:
    return bool(binding.changed)


# --- row actions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RowAction:
    """A fenced row action on one row: ``POST /v1/rows/{row}/{action}`` with ``body``, or one
    item of :meth:`Client.row_actions`. Build it with the class methods, whose bodies are the
    ones the :class:`Client` method of the same action sends (built from its declaration)."""

    row: int
    action: str
    body: dict[str, Any]

    @classmethod
    def _of(cls, method: Callable[..., Any], **arguments: Any) -> RowAction:
        spec = route_of(method)
        body = spec.request(spec.values(arguments)).json
        return cls(arguments["row"], spec.const["action"], body)

    @classmethod
    def route(
        cls,
        row: int,
        fence: int,
        handlers: Iterable[Handler | tuple[str, str]],
        disposition: str | None = None,
    ) -> RowAction:
        return cls._of(
            Client.route, row=row, fence=fence, handlers=handlers, disposition=disposition
        )

    @classmethod
    def handoff(
        cls,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        disposition: str | None = None,
    ) -> RowAction:
        return cls._of(
            Client.handoff, row=row, fence=fence, deliveries=deliveries, disposition=disposition
        )

    @classmethod
    def transform(
        cls,
        row: int,
        fence: int,
        deliveries: Iterable[Delivery | tuple[str, str]],
        state_ops: Iterable[StateOp | tuple[str, str, Any]] = (),
    ) -> RowAction:
        return cls._of(
            Client.transform, row=row, fence=fence, deliveries=deliveries, state_ops=state_ops
        )

    @classmethod
    def done(cls, row: int, fence: int) -> RowAction:
        return cls._of(Client.done, row=row, fence=fence)

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
        return cls._of(
            Client.respond,
            row=row,
            fence=fence,
            body=body,
            outcome=outcome,
            detail=detail,
            reingress_to=reingress_to,
        )

    @classmethod
    def fail(cls, row: int, fence: int, error: str, retry: RetryPolicy | None = None) -> RowAction:
        return cls._of(Client.fail, row=row, fence=fence, error=error, retry=retry)

    @classmethod
    def dead(cls, row: int, error: str, fence: int | None = None) -> RowAction:
        return cls._of(Client.dead, row=row, error=error, fence=fence)

    @classmethod
    def reingress(
        cls,
        row: int,
        fence: int,
        loopback_channel: str,
        depth_cap: int | None = None,
        *,
        child_key: str | None = None,
        control_id: str | None = None,
        message_type: str | None = None,
        summary: str | None = None,
        peek_failed: bool | None = None,
    ) -> RowAction:
        return cls._of(
            Client.reingress,
            row=row,
            fence=fence,
            loopback_channel=loopback_channel,
            depth_cap=depth_cap,
            child_key=child_key,
            control_id=control_id,
            message_type=message_type,
            summary=summary,
            peek_failed=peek_failed,
        )


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

    async def _invoke_route(self, spec: Route, req: Request) -> Any:
        """Send a route's request (with failover) and decode its answer as the route says."""
        r = await self._send(
            spec.verb,
            req.path,
            json=req.json,
            params=req.query,
            headers=req.headers,
            wait_s=req.wait_s,
        )
        return spec.answer_of(r, req.path)

    async def _invoke(
        self,
        method: Callable[..., Any],
        values: Mapping[str, Any] | None = None,
        *,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        """Call the route ``method`` is declared with, its members' ``values`` given by wire
        name (``body``: the whole body): for the methods written by hand."""
        spec = route_of(method)
        return await self._invoke_route(spec, spec.request(values or {}, body=body))

    async def _one_node(
        self,
        method: Callable[..., Any],
        base: str,
        headers: Mapping[str, str],
        ok: Sequence[int] = (200,),
    ) -> Any:
        """Call ``method``'s route (a GET without members) at the node ``base``, without
        failover: a node's own view."""
        spec = route_of(method)
        url = f"{base}{spec.path}"
        try:
            r = await self._shared.get(url, headers)
        except wire.WireError as e:
            raise UnavailableError(f"{spec.verb} {url}: {e}") from e
        if r.status_code not in ok:
            raise error_from_response(r.status_code, r.content)
        return spec.answer_of(r, spec.path)

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
        body=(
            "raw",
            "control_id",
            "message_type",
            "source_type",
            "summary",
            "metadata",
            "deliveries",
            "status",
            "error",
        ),
        encode={"deliveries": _deliveries},
        headers={"idempotency-key": "idempotency_key"},
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
        deliveries: Iterable[Delivery | tuple[str, str]] | None = None,
        status: str | None = None,
        error: str | None = None,
    ) -> Enqueued:
        """Enqueue a message on ``channel`` (a new message and its ingress row). With
        ``idempotency_key``, a key already used on this channel answers the first message with
        ``duplicate=True``. With ``deliveries`` the producer routed it already: its outbound
        rows instead of an ingress row. With ``status`` (``filtered`` or ``error``, and
        ``error``'s text) it is recorded as received and ended, with no row."""

    @_route(
        "get",
        "/v1/messages",
        query=_MESSAGE_FILTERS + ("limit", "offset", "cursor", "consistency"),
        answer=MessageList,
        unwrap="messages",
    )
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

    @_route(
        "get",
        "/v1/messages",
        query=_MESSAGE_FILTERS + ("limit", "offset", "cursor", "consistency"),
        answer=MessageList,
    )
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

    @_route(
        "get",
        "/v1/messages/{id}",
        args={"id": "message_id"},
        query=("body", "record_view", "viewer", "consistency"),
        encode={"body": _or_none},
        answer=MessageView,
    )
    async def message(
        self,
        message_id: int | str,
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

    @_route("post", "/v1/messages/{id}/replay", args={"id": "message_id"}, answer=Requeued)
    async def replay(self, message_id: int) -> Requeued:
        """Recover a message's dead or pending rows, else re-send its done rows."""

    @_route(
        "get",
        "/v1/dead-letters",
        query=_DEAD_FILTERS + ("limit", "offset", "order", "consistency"),
        args={"order": "newest_failed"},
        encode={"order": _newest_failed},
        answer=DeadLetters,
        unwrap="dead_letters",
    )
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

    @_route(
        "post",
        "/v1/dead-letters/replay",
        body=("channel", "destination"),
        headers={"raftlane-approval": "approval"},
        answer=Requeued,
    )
    async def replay_dead(
        self,
        *,
        channel: str | None = None,
        destination: str | None = None,
        approval: int | None = None,
    ) -> Requeued:
        """Requeue dead outbound rows (optionally of one channel and/or destination).
        ``approval``: the approval id when the config lists ``replay_dead`` for dual control."""

    @_route("get", "/v1/stats", query=("consistency",), answer=Stats)
    async def stats(self, *, consistency: str | None = None) -> Stats:
        """Messages and rows by stage and status, the cluster's clock and last applied index."""

    @_route("get", "/v1/messages/count", query=_MESSAGE_FILTERS, answer=Count, unwrap="count")
    async def count_messages(self, **filters: Any) -> int:
        """Messages passing the list's filters (``channel``, ``status``, ``message_type``,
        ``control_id``, ``allowed_channels`` comma-separated)."""

    @_route("get", "/v1/dead-letters/count", query=_DEAD_FILTERS, answer=Count, unwrap="count")
    async def count_dead_letters(self, **filters: Any) -> int:
        """Dead rows passing ``stage`` (default ``outbound``, or ``"all"``), ``channel``,
        ``destination``, ``allowed_channels``."""

    @_route(
        "post",
        "/v1/messages/{id}/viewed",
        args={"id": "message_id"},
        body=("actor",),
        answer=Viewed,
    )
    async def record_view(self, message_id: int | str, *, actor: str | None = None) -> Viewed:
        """Append the event ``viewed`` (detail: ``actor``) to a message's history."""

    @_route("get", "/v1/stats/storage", answer=StorageStats)
    async def storage_stats(self) -> StorageStats:
        """What the state holds (scans it)."""

    @_route(
        "get",
        "/v1/metrics/connections",
        query=("since", "rate_window_ms"),
        answer=ConnectionTraffic,
    )
    async def connection_metrics(
        self, *, since: int = 0, rate_window_ms: int = 60_000
    ) -> ConnectionTraffic:
        """Inbound traffic per channel and outbound per destination (scans the state)."""

    # --- work -------------------------------------------------------------------------------

    @_route("get", "/v1/rows/{id}", args={"id": "row_id"}, answer=RowDetail)
    async def row(self, row_id: int) -> RowDetail:
        """A work row as it is now (``.row``), with its payload."""

    @_route("post", "/v1/leases/reclaim", body=("stage",), answer=Reclaimed, unwrap="reclaimed")
    async def reclaim_expired(self, *, stage: Stage | str | None = None) -> int:
        """In-flight rows whose lease expired back to pending; answers how many."""

    @_route("post", "/v1/leases/reset", body=("stage",), answer=ResetRows, unwrap="reset")
    async def reset_inflight(self, *, stage: Stage | str | None = None) -> int:
        """Every in-flight row back to pending, whatever its lease (single-process start-up)."""

    @_route(
        "post",
        "/v1/leases/recover",
        body=("owner", "lane_owner"),
        answer=Recovered,
        unwrap="recovered",
    )
    async def recover_inflight(self, owner: str, *, lane_owner: str | None = None) -> int:
        """Other owners' in-flight rows and lane leases taken back by a new leader."""

    @_route("post", "/v1/dead-letters/sweep", body=("stage", "keep"), answer=Swept, unwrap="dead")
    async def sweep_dead_letters(self, stage: Stage | str, keep: Sequence[str]) -> int:
        """Dead-letter live rows of ``stage`` (``outbound`` or ``routed``) whose destination or
        handler is not in ``keep``; answers how many."""

    @_route("get", "/v1/lanes", query=("stage", "limit", "cursor", "consistency"), answer=LaneList)
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

    @_route("get", "/v1/lanes/{stage}/{name}", query=("consistency",), answer=LaneView)
    async def lane(
        self, stage: Stage | str, name: str, *, consistency: str | None = None
    ) -> LaneView:
        """A lane's depth, oldest pending row, inflight count and holder."""

    @_route(
        "post",
        "/v1/lanes/{stage}/{name}/claim",
        body=("owner", "ttl_ms", "lane_lease", "row_owner", "wait_ms"),
        encode={"lane_lease": _only_false, "wait_ms": _or_none},
        wait="wait_ms",
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

    @_route(
        "post",
        "/v1/lanes/{stage}/{name}/release",
        body=("owner",),
        answer=Released,
        unwrap="released",
    )
    async def release_lane(self, stage: Stage | str, name: str, *, owner: str) -> bool:
        """Give ``owner``'s lane lease back; false when it did not hold it."""

    @_route("post", "/v1/destinations/{destination}/pause", body=("reason",), answer=PauseState)
    async def pause_destination(self, destination: str, *, reason: str | None = None) -> PauseState:
        """Stop handing out ``destination``'s rows (they stay, in order; rows already out
        finish) until :meth:`resume_destination`. Replicated and audited; unscoped tokens."""

    @_route("post", "/v1/destinations/{destination}/resume", answer=PauseState)
    async def resume_destination(self, destination: str) -> PauseState:
        """Hand ``destination``'s rows out again, its lanes' heads first."""

    @_route("get", "/v1/destinations/paused", query=("consistency",), answer=PausedDestinations)
    async def paused_destinations(self, *, consistency: str | None = None) -> PausedDestinations:
        """Every paused destination: who paused it, when and why."""

    @_route(
        "post",
        "/v1/lanes/outbound/{dest}/cancel",
        args={"dest": "destination"},
        body=("channel", "top_only"),
        answer=Cancelled,
        unwrap="cancelled",
    )
    async def cancel(
        self, destination: str, *, channel: str | None = None, top_only: bool = False
    ) -> int:
        """Cancel a destination's pending outbound rows (or only the first); answers how many."""

    @_route(
        "post",
        "/v1/claims",
        body=("stage", "limit", "owner", "ttl_ms", "channel", "destination", "wait_ms"),
        encode={"wait_ms": _or_none},
        wait="wait_ms",
        answer=Claims,
        unwrap="items",
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

    @_route(
        "post",
        "/v1/leases/renew",
        body=("owner", "ids", "ttl_ms"),
        answer=Renewed,
        unwrap="renewed",
    )
    async def renew(self, ids: Iterable[int], *, owner: str, ttl_ms: int) -> int:
        """Extend ``owner``'s row leases (and its lane leases); answers the rows renewed."""

    # The fenced row actions: POST /v1/rows/{id}/{action}, one method per action (RowAction
    # builds the same bodies from these declarations, for row_actions and claim_next).

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "route"},
        body=("fence", "handlers", "disposition"),
        encode={"handlers": _handlers},
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

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "handoff"},
        body=("fence", "deliveries", "disposition"),
        encode={"deliveries": _deliveries},
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

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "transform"},
        body=("fence", "deliveries", "state_ops"),
        encode={"deliveries": _deliveries, "state_ops": _state_ops},
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

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        body=("fence", "handlers", "deliveries", "disposition", "state_ops", "claim_next"),
        answer=HandedOnNext,
        by_hand=True,
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
        answer: HandedOnNext = await self._invoke(
            Client.hand_on_then_claim_next,
            {"id": action.row, "action": action.action},
            body={**action.body, "claim_next": {"owner": owner, "ttl_ms": ttl_ms}},
        )
        return HandedOff(applied=answer.applied, index=answer.index), answer.next

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "done"},
        body=("fence",),
        answer=Ack,
    )
    async def done(self, row: int, fence: int) -> Ack:
        """The row is finished."""

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row", "claim_next": ("owner", "ttl_ms")},
        const={"action": "done"},
        body=("fence", "claim_next"),
        answer=DoneNext,
        unwrap="next",
    )
    async def done_then_claim_next(
        self, row: int, fence: int, *, owner: str, ttl_ms: int
    ) -> FifoClaim:
        """Mark the row done and claim its lane's next row for ``owner``, in one write."""

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "response"},
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

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "fail"},
        body=("fence", "error", "retry"),
        encode={"retry": _retry_json},
        answer=Failed,
    )
    async def fail(
        self, row: int, fence: int, error: str, *, retry: RetryPolicy | None = None
    ) -> Failed:
        """The attempt failed: retried after a backoff, or dead once out of attempts."""

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "dead"},
        body=("fence", "error"),
        answer=Ack,
    )
    async def dead(self, row: int, error: str, *, fence: int | None = None) -> Ack:
        """Dead-letter the row now (without a fence: a live row need not be claimed)."""

    @_route(
        "post",
        "/v1/rows/{id}/{action}",
        args={"id": "row"},
        const={"action": "reingress"},
        body=(
            "fence",
            "loopback_channel",
            "depth_cap",
            "child_key",
            "control_id",
            "message_type",
            "summary",
            "peek_failed",
        ),
        answer=Reingressed,
    )
    async def reingress(
        self,
        row: int,
        fence: int,
        loopback_channel: str,
        *,
        depth_cap: int | None = None,
        child_key: str | None = None,
        control_id: str | None = None,
        message_type: str | None = None,
        summary: str | None = None,
        peek_failed: bool | None = None,
    ) -> Reingressed:
        """Re-ingest a response row's captured answer as a new message on ``loopback_channel``.
        With ``child_key`` the caller names the child (and may describe it: ``control_id``,
        ``message_type``, ``summary``; ``peek_failed`` records it in error), and reads it back
        by that key (docs/SPEC.md §14.7)."""

    @_route(
        "post",
        "/v1/rows/actions",
        body=("actions",),
        encode={"actions": _row_actions},
        answer=RowActionResults,
        by_hand=True,
    )
    async def row_actions(self, actions: Sequence[RowAction]) -> list[RowActionResult]:
        """Many row actions (each on a different row) in one request, answered one by one in
        order; an action the cluster refused has its :class:`ApiError` in ``error``."""
        answer: RowActionResults = await self._invoke(Client.row_actions, {"actions": actions})
        out = []
        for item in answer.results:
            if isinstance(item, dict) and "error" in item and "status" in item:
                err = error_from_response(
                    int(item["status"]), _json.dumps({"error": item["error"]}).encode()
                )
                out.append(RowActionResult(None, err))
            else:
                out.append(RowActionResult(item if isinstance(item, dict) else {"value": item}))
        return out

    # --- configuration ----------------------------------------------------------------------

    @_route("get", "/v1/config", query=("consistency",), answer=ConfigVersion)
    async def config(self, *, consistency: str | None = None) -> ConfigVersion:
        """The current configuration document and its version."""

    @_route(
        "put",
        "/v1/config",
        headers={"if-match": "expected_version", "raftlane-approval": "approval"},
        body_from="config",
        answer=ConfigWritten,
    )
    async def put_config(
        self, expected_version: int, config: Mapping[str, Any], *, approval: int | None = None
    ) -> ConfigWritten:
        """Compare-and-set: raises :class:`~raftlane.errors.VersionMismatchError` (with
        ``current_version``) when ``expected_version`` is not the current version.
        ``approval``: the approval id when the config lists ``put_config``."""

    @_route(
        "get",
        "/v1/config/versions/{v}",
        args={"v": "version"},
        query=("consistency",),
        answer=ConfigVersion,
    )
    async def config_version(
        self, version: int, *, consistency: str | None = None
    ) -> ConfigVersion:
        """The configuration document as it was at ``version``."""

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
        body_from="body",
        answer=UserCreated,
    )
    async def create_user(self, body: Mapping[str, Any]) -> UserCreated:
        """A new user (409 ``already_exists`` naming ``user_id`` or ``username`` when taken)."""

    @_route("get", "/v1/users", query=("username", "limit"), answer=UserList)
    async def list_users(
        self, *, username: str | None = None, limit: int | None = None
    ) -> UserList:
        """Users by username; ``count``: how many match before ``limit`` (0: the count only)."""

    @_route("get", "/v1/users/{id}", args={"id": "user_id"}, answer=UserView)
    async def get_user(self, user_id: str) -> UserView:
        """A user without its second-factor secrets (:meth:`user_secrets`)."""

    @_route("delete", "/v1/users/{id}", args={"id": "user_id"}, answer=UserDeleted)
    async def delete_user(self, user_id: str) -> UserDeleted:
        """The user, its role assignments and its sessions; ``deleted`` false when unknown."""

    @_route("get", "/v1/users/{id}/secrets", args={"id": "user_id"}, answer=UserSecrets)
    async def user_secrets(self, user_id: str) -> UserSecrets:
        """The user's second-factor values: TOTP secret and step, recovery-code hashes."""

    @_route("get", "/v1/users/{id}/roles", args={"id": "user_id"}, answer=UserRoles)
    async def user_roles(self, user_id: str) -> UserRoles:
        """The user's role ids and their assignments."""

    @_route(
        "put",
        "/v1/users/{id}/roles",
        args={"id": "user_id"},
        body=("role_ids", "assigned_by"),
        answer=RolesAssigned,
    )
    async def set_user_roles(
        self, user_id: str, role_ids: Sequence[str], *, assigned_by: str | None = None
    ) -> RolesAssigned:
        """Replace the user's roles with ``role_ids``."""

    @_route("get", "/v1/users/{id}/sessions", args={"id": "user_id"}, answer=SessionList)
    async def user_sessions(self, user_id: str) -> SessionList:
        """The user's sessions neither revoked nor expired, most recently used first."""

    @_route(
        "post",
        "/v1/users/{id}/sessions/revoke",
        args={"id": "user_id"},
        body=("except_token_hash", "at"),
        answer=SessionsRevoked,
    )
    async def revoke_user_sessions(
        self, user_id: str, *, except_token_hash: str | None = None, at: int | None = None
    ) -> SessionsRevoked:
        """``at``: the caller's time (ms) to stamp as ``revoked_at`` (docs/SPEC.md §13.2)."""

    @_route(
        "post",
        "/v1/users/{id}/sessions/cap",
        args={"id": "user_id"},
        body=("keep", "at"),
        answer=SessionsRevoked,
    )
    async def cap_user_sessions(
        self, user_id: str, keep: int, *, at: int | None = None
    ) -> SessionsRevoked:
        """``at``: the caller's time (ms) to stamp as ``revoked_at`` (docs/SPEC.md §13.2)."""

    @_route(
        "post",
        "/v1/users/{id}/{change}",
        args={"id": "user_id"},
        body=(),
        body_from="body",
        answer=UserChanged,
    )
    async def change_user(
        self, user_id: str, change: str, body: Mapping[str, Any] | None = None
    ) -> UserChanged:
        """``change``: ``password``, ``disabled``, ``profile``, ``totp-secret``, ``totp-enable``,
        ``totp-disable``, ``login-success``, ``login-failure``, ``channel-scope`` or
        ``consume`` (which also answers ``consumed``), ``body`` that change's members."""

    @_route("get", "/v1/roles", answer=RoleList)
    async def list_roles(self) -> RoleList:
        """Every role, by id."""

    @_route(
        "put",
        "/v1/roles/{id}",
        args={"id": "role_id"},
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
        """Create or replace the role ``role_id``."""

    @_route(
        "get",
        "/v1/directory-groups/{map}",
        args={"map": "which"},
        query=("groups",),
        answer=GroupMap,
    )
    async def group_map(self, which: str, *, groups: Sequence[str] | None = None) -> GroupMap:
        """The map ``which`` (``roles`` or ``channels``); with ``groups`` also what it gives
        them (``values``)."""

    @_route(
        "put",
        "/v1/directory-groups/{map}",
        args={"map": "which"},
        body=("entries",),
        encode={"entries": _group_entries},
        answer=GroupMapWritten,
    )
    async def put_group_map(
        self, which: str, entries: Sequence[tuple[str, str]]
    ) -> GroupMapWritten:
        """Replace the map ``which`` whole with ``(group, value)`` entries."""

    @_route(
        "post",
        "/v1/sessions",
        body=("token_hash", "user_id", "expires_at", "client", "seed_reauth", "at"),
        body_from="body",
        answer=SessionCreated,
    )
    async def create_session(self, body: Mapping[str, Any]) -> SessionCreated:
        """A new session of a user (404 for an unknown user, 409 for a token hash in use)."""

    @_route("post", "/v1/sessions/purge-expired", body=(), answer=SessionsPurged)
    async def purge_expired_sessions(self) -> SessionsPurged:
        """Delete the sessions expired before the request's time."""

    @_route("get", "/v1/sessions/{token_hash}", answer=SessionView)
    async def get_session(self, token_hash: str) -> SessionView:
        """A session by its token's hash."""

    @_route(
        "post",
        "/v1/sessions/{token_hash}/{change}",
        body=(),
        body_from="body",
        answer=SessionChanged,
    )
    async def change_session(
        self, token_hash: str, change: str, body: Mapping[str, Any] | None = None
    ) -> SessionChanged:
        """``change``: ``touch``, ``reauth``, ``mfa-verified`` or ``revoke``; ``body``: its
        ``at`` and (``reauth``) ``client``."""

    # --- audit ------------------------------------------------------------------------------

    @_route(
        "post",
        "/v1/audit",
        body=("action", "channel", "org", "detail", "actor"),
        answer=AuditAppended,
    )
    async def audit_append(
        self,
        action: str,
        *,
        channel: str | None = None,
        org: str | None = None,
        detail: str | None = None,
        actor: str | None = None,
    ) -> AuditAppended:
        """Append a row to an org's audit chain. With ``actor`` the row names that actor (a
        person the caller acts for), recorded beside the caller's principal (docs/SPEC.md
        §14.5)."""

    @_route(
        "get",
        "/v1/audit",
        query=("org", "from", "limit", "consistency"),
        args={"from": "start"},
        answer=AuditRows,
        unwrap="rows",
    )
    async def audit_list(
        self,
        org: str,
        *,
        start: int | None = None,
        limit: int | None = None,
        consistency: str | None = None,
    ) -> list[AuditRow]:
        """An org's audit rows from seq ``start``."""

    @_route("get", "/v1/audit/anchor", query=("org", "consistency"), answer=AuditAnchor)
    async def audit_anchor(self, org: str, *, consistency: str | None = None) -> AuditAnchor:
        """An org's chain head (count and hash), to keep elsewhere and verify against later."""

    @_route(
        "get",
        "/v1/audit/verify",
        query=("org", "consistency", "count", "head"),
        args={"count": "anchor", "head": "anchor"},
        encode={"count": _anchor_count, "head": _anchor_head},
        answer=AuditVerification,
    )
    async def audit_verify(
        self,
        org: str,
        *,
        anchor: AuditAnchor | tuple[int, str] | None = None,
        consistency: str | None = None,
    ) -> AuditVerification:
        """Recompute an org's chain, optionally against an anchor kept elsewhere."""

    @_route(
        "get",
        "/v1/audit/search",
        query=("org", "actor", "action_prefix", "limit"),
        answer=AuditRows,
    )
    async def audit_search(
        self, org: str, actor: str, *, action_prefix: str | None = None, limit: int = 100
    ) -> AuditRows:
        """``actor``'s audit rows of ``org``, newest first."""

    @_route("post", "/v1/audit/seal", body=("org",), answer=AuditAppended)
    async def audit_seal(self, org: str) -> AuditAppended:
        """Close ``org``'s current era with an ``audit.seal`` row and start the next."""

    # --- transform state, reference sets, retention -----------------------------------------

    @_route(
        "get",
        "/v1/state/{namespace}",
        query=("entries", "consistency"),
        encode={"entries": _or_none},
        answer=Namespace,
    )
    async def namespace(
        self, namespace: str, *, entries: bool = False, consistency: str | None = None
    ) -> Namespace:
        """A namespace's version; with ``entries`` also every entry, read at that version."""

    @_route("get", "/v1/state/{namespace}/{key}", query=("consistency",), answer=StateEntry)
    async def state_entry(
        self, namespace: str, key: str, *, consistency: str | None = None
    ) -> StateEntry:
        """One transform-state entry."""

    @_route("get", "/v1/state", query=("consistency",), answer=NamespaceList)
    async def namespaces(self, *, consistency: str | None = None) -> NamespaceList:
        """Every transform-state namespace with its version, in name order."""

    @_route("get", "/v1/reference", query=("consistency",), answer=ReferenceSetList)
    async def reference_sets(self, *, consistency: str | None = None) -> ReferenceSetList:
        """Every reference set without its rows, in name order."""

    @_route("put", "/v1/reference/{name}", body=("version", "rows"), answer=ReferenceWritten)
    async def put_reference(
        self, name: str, version: int | str, rows: Mapping[str, str]
    ) -> ReferenceWritten:
        """Replace a set whole. ``version``: a number, or a text label such as ``"v1"`` (then
        the stored number moves by one and the label is kept beside it)."""

    @_route("get", "/v1/reference/{name}", query=("consistency",), answer=ReferenceSnapshot)
    async def reference(self, name: str, *, consistency: str | None = None) -> ReferenceSnapshot:
        """A reference set with its rows."""

    @_route(
        "post",
        "/v1/retention/purge",
        body=("kind", "older_than_ms", "older_than"),
        headers={"raftlane-approval": "approval"},
        answer=Purged,
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

    # --- approvals, tokens, keys ------------------------------------------------------------

    @_route("post", "/v1/approvals", body=("operation", "params", "ttl_ms"), answer=ApprovalCreated)
    async def create_approval(
        self, operation: str, *, params: Any = None, ttl_ms: int | None = None
    ) -> ApprovalCreated:
        """Request another principal's approval of ``operation`` (dual control, SPEC §9.5)."""

    @_route(
        "get",
        "/v1/approvals/{id}",
        args={"id": "approval_id"},
        query=("consistency",),
        answer=Approval,
    )
    async def approval(self, approval_id: int, *, consistency: str | None = None) -> Approval:
        """An approval as stored."""

    @_route(
        "post",
        "/v1/approvals/{id}/decide",
        args={"id": "approval_id"},
        body=("approve",),
        answer=ApprovalDecided,
    )
    async def decide_approval(self, approval_id: int, approve: bool) -> ApprovalDecided:
        """Approve or reject a pending approval (not the requester's own)."""

    @_route(
        "get",
        "/v1/approvals",
        query=("status", "limit"),
        const={"status": "pending"},
        answer=ApprovalList,
    )
    async def pending_approvals(self, *, limit: int = 100) -> ApprovalList:
        """Approvals pending and unexpired at the request's time, newest request first."""

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

    @_route("get", "/v1/approvals/keyed/{key}", answer=Approval)
    async def keyed_approval(self, key: str) -> Approval:
        """The approval under ``key``, its status as stored."""

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

    # --- engine coordination (docs/SPEC.md §15) ----------------------------------------------

    @_route("put", "/v1/engine/nodes/{node_id}", body=("host", "pid"), answer=HeartbeatAck)
    async def engine_heartbeat(
        self, node_id: str, *, host: str | None = None, pid: int | None = None
    ) -> HeartbeatAck:
        """Register ``node_id`` or refresh its ``last_seen``."""

    @_route("delete", "/v1/engine/nodes/{node_id}", answer=NodeLeft, unwrap="left")
    async def engine_leave(self, node_id: str) -> bool:
        """Mark ``node_id`` left (and give up its leadership); false when it was never
        registered."""

    @_route("get", "/v1/engine/nodes", answer=EngineNodes)
    async def engine_nodes(self) -> EngineNodes:
        """Every registered engine process (tombstones of clean stops included) and the time
        of the read."""

    @_route("post", "/v1/engine/leadership/{group}", body=("node_id", "ttl_ms"), answer=Leadership)
    async def campaign(self, group: str, node_id: str, *, ttl_ms: int) -> Leadership:
        """Take or renew ``group``'s leadership for ``node_id``; answers the lease as it stands,
        whoever holds it."""

    @_route(
        "post",
        "/v1/engine/leadership/{group}/resign",
        body=("node_id",),
        answer=Resigned,
        unwrap="resigned",
    )
    async def resign(self, group: str, node_id: str) -> bool:
        """Give up ``group``'s leadership; false when ``node_id`` did not hold it."""

    @_route("get", "/v1/engine/leadership/{group}", answer=Leadership)
    async def leadership(self, group: str) -> Leadership:
        """``group``'s leadership lease as it stands."""

    @_route("post", "/v1/engine/counters/{name}", answer=CounterValue, unwrap="value")
    async def bump_counter(self, name: str) -> int:
        """Add one to the shared counter ``name``; answers its new value."""

    @_route("get", "/v1/engine/counters/{name}", answer=CounterValue, unwrap="value")
    async def counter(self, name: str) -> int:
        """The shared counter ``name``."""

    @_route("get", "/v1/engine/lanes/{owner}", answer=HeldLanes, unwrap="lanes")
    async def held_lanes(self, owner: str) -> list[str]:
        """The lanes (``stage:name``) whose lease ``owner`` holds now."""

    @_route("get", "/v1/tokens", query=("consistency",), answer=TokenList, unwrap="tokens")
    async def tokens(self, *, consistency: str | None = None) -> list[Principal]:
        """Every principal with its role and scope (not its token)."""

    @_route(
        "post",
        "/v1/tokens",
        body=("name", "role", "channels", "orgs"),
        encode={"channels": _or_none},
        headers={"raftlane-approval": "approval"},
        answer=TokenCreated,
    )
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

    @_route("delete", "/v1/tokens/{name}", answer=Revoked)
    async def revoke_token(self, name: str) -> Revoked:
        """Revoke a principal's token."""

    @_route("get", "/v1/owners/{owner}", answer=OwnerBinding, unwrap="principal")
    async def owner(self, owner: str) -> str | None:
        """The principal a lease owner name or engine node id is bound to (``None``: nobody's
        yet; docs/SPEC.md §9.8)."""

    @_route("put", "/v1/owners/{owner}", body=("principal",), answer=OwnerBinding, unwrap=_changed)
    async def reserve_owner(self, owner: str, principal: str) -> bool:
        """Bind ``owner`` (an owner name or engine node id) to ``principal`` ahead of its first
        use (admin); answers whether the binding changed."""

    @_route("delete", "/v1/owners/{owner}", answer=OwnerBinding, unwrap=_changed)
    async def release_owner(self, owner: str) -> bool:
        """Release ``owner``'s binding (admin); answers whether there was one."""

    @_route(
        "post",
        "/v1/keys/rotate",
        body=("batch_size",),
        headers={"raftlane-approval": "approval"},
        answer=KeyRotation,
    )
    async def rotate_keys(
        self, *, batch_size: int | None = None, approval: int | None = None
    ) -> KeyRotation:
        """Rewrite every encrypted value under the active key, ``batch_size`` per page
        (docs/SPEC.md §2.6); ``approval`` when the config lists ``rotate_key``."""

    # --- cluster ----------------------------------------------------------------------------

    @_route("get", "/v1/cluster", answer=ClusterStatus)
    async def cluster(self) -> ClusterStatus:
        """The answering node's view: leader, term, indexes, membership."""

    @_route("get", "/v1/cluster/digest", answer=StateDigest, by_hand=True)
    async def digest(self, endpoint: str | None = None) -> StateDigest:
        """A node's state digest: ``endpoint``'s, without failover, else the current node's."""
        if endpoint is None:
            digest: StateDigest = await self._invoke(Client.digest)
            return digest
        one: StateDigest = await self._one_node(
            Client.digest, _base_url(endpoint), self._headers(None)
        )
        return one

    @_route("post", "/v1/cluster/snapshot", answer=SnapshotTaken)
    async def snapshot(self) -> SnapshotTaken:
        """The current node builds a snapshot covering everything it has applied (unless its
        current one does) and answers the index it covers. Admin tokens only."""

    @_route("get", "/v1/cluster/snapshot", by_hand=True)
    async def backup(self, path: str | os.PathLike[str]) -> Backup:
        """Save a backup of the cluster to ``path`` (admin): the answering node catches up with
        the leader's commit, snapshots and sends the file, which holds every write acknowledged
        before the call. Written to ``path + ".part"`` (mode 0600: it holds every message), then
        renamed. The file passes through memory here; for a large state use ``raftlane ctl
        snapshot save``, which streams it and checks its SHA-256. Restore: ``raftlane restore``."""
        spec = route_of(Client.backup)
        r = await self._send(spec.verb, spec.path)
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
            raise DecodeError(f"{spec.verb} {spec.path}: bad backup headers: {e}") from e
        return Backup(path=target, index=index, node_id=node_id, bytes=len(r.content))

    @_route("post", "/v1/cluster/leader", body=("to",), answer=LeaderTransferred)
    async def transfer_leader(self, to: int | None = None) -> LeaderTransferred:
        """Hand leadership to voter ``to`` (``None``: the voter whose log reaches furthest); the
        leader holds new writes until it has caught up, then it is elected. Admin tokens only;
        a voter that cannot take it, or a transfer that did not happen, is a 400/409 naming
        ``to``."""

    @_route("get", "/v1/cluster/log-format", answer=LogFormatStatus)
    async def log_format(self) -> LogFormatStatus:
        """The log format the cluster writes, as the answering node applied it, and the formats
        that node's build reads (a rolling upgrade is done once it says the newest)."""

    @_route("post", "/v1/cluster/log-format", body=("format",), answer=LogFormatStatus)
    async def raise_log_format(self, format: int) -> LogFormatStatus:
        """Raise the cluster's log format to ``format`` now (the leader does it by itself once
        every node reads it). Admin tokens only; a 409 names a node whose build cannot read it,
        a 400 refuses an unknown format or a step back."""

    @_route("post", "/v1/cluster/learners", body=("id", "addr"), args={"id": "node_id"})
    async def add_learner(self, node_id: int, addr: str) -> None:
        """Add node ``node_id`` at ``addr`` as a learner (admin); it catches up from the log."""

    @_route("post", "/v1/cluster/membership", body=("voters",))
    async def change_membership(self, voters: Iterable[int]) -> None:
        """Make ``voters`` the cluster's voters (admin)."""

    @_route("get", "/healthz", answer=Health)
    async def healthz(self) -> Health:
        """Whether the answering node's process is up."""

    @_route("get", "/readyz", answer=Readiness, by_hand=True)
    async def readyz(self, endpoint: str | None = None) -> Readiness:
        """One node's readiness (``endpoint``, else the current node), without failover: a
        ``503`` answer is ``ready=False``, not an error."""
        base = _base_url(endpoint) if endpoint else self.current_endpoint
        ready: Readiness = await self._one_node(Client.readyz, base, {}, ok=(200, 503))
        return ready

    @_route("get", "/metrics", answer=str)
    async def metrics(self) -> str:
        """Prometheus text of the answering node."""

    @_route("get", "/ui", answer=str)
    async def operator_page(self) -> str:
        """The operator's page (HTML) the answering node serves; open it in a browser."""

    @_route("get", "/openapi.json", answer=dict)
    async def openapi(self) -> dict[str, Any]:
        """The OpenAPI document the node serves."""
