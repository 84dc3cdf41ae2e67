"""``RaftlaneStore``: messagefoundry's ``Store`` protocol on a raftlane cluster.

Every change is one replicated command sent through :class:`raftlane.Client` (one ``Request-Id``
per write across retries); reads are linearizable reads. The store translates at its edge only:

- ids: raftlane's integer ids become ``str`` (``"17"``), and come back with ``int()``;
- times: messagefoundry's float epoch seconds become integer milliseconds (``round(s * 1000)``)
  and back (``ms / 1000``);
- fences: raftlane fences every completion (docs/SPEC.md §4.6) while the engine completes rows
  by id, so the handle keeps the fence of every row it claimed (row id → fence) and sends it;
- the caller's clock: a method given ``now=`` sends it as the header :data:`CLIENT_TIME_HEADER`
  (integer ms), which nodes started with ``--test-client-clock`` use as the command's time.

Every method calls routes the cluster serves (docs/SPEC.md §10.1); nothing is emulated here.
docs/MESSAGEFOUNDRY.md §5 maps every method.

messagefoundry (AGPL) is an optional dependency: it is imported at run time for its answer types
(``OutboxItem``, ``CapturedResponse``, ``DbStatus``, ...) and its audit tee; none of its code is
copied here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from messagefoundry.config.models import RetryPolicy as MfRetryPolicy
from messagefoundry.redaction import safe_text
from messagefoundry.store.audit_tee import emit_audit_tee
from messagefoundry.store.store import (
    CapturedResponse,
    ConnectionMetrics,
    DbStatus,
    DestinationMetrics,
    InboundMetrics,
    MessageStatus,
    MessageStore,
    OutboxItem,
    SessionRecord,
    UserRecord,
)

from ..client import Client, RowAction, segment
from ..errors import (
    ConflictError,
    NotFoundError,
    RaftlaneError,
    StaleFenceError,
    WrongStatusError,
)
from ..types import (
    UNLIMITED_ATTEMPTS,
    Approval,
    AuditAnchor,
    FifoClaim,
    GroupEntry,
    RetryPolicy,
    SessionView,
    StateOp,
    UserChanged,
    UserSecrets,
    UserView,
)

__all__ = [
    "AUDIT_ORG",
    "CLIENT_TIME_HEADER",
    "RaftlaneStore",
    "StoreSettings",
]


#: The request header carrying the caller's ``now`` (integer milliseconds since the epoch). A node
#: started with ``--test-client-clock`` uses it as the command's time instead of its wall clock.
CLIENT_TIME_HEADER = "Raftlane-Client-Time-Ms"

log = logging.getLogger(__name__)

#: The audit org the engine's own audit chain lives in (raftlane's own rows stay in ``default``).
AUDIT_ORG = "messagefoundry"

#: How many claims' fences a handle remembers (oldest forgotten first).
FENCE_MEMORY = 65_536

#: A session touched by this handle less than this long ago is not touched again (seconds):
#: ``touch_session`` runs on every API request, and each touch is a replicated write.
TOUCH_COALESCE_S = 60.0

#: The message raftlane's router answers an unknown path with (``404 not_found``).
_NO_SUCH_ROUTE = "no such route"


#: ``expires_at`` of an approval that never expires (2^64 - 1 ms).
NEVER_MS = 2**64 - 1

#: How long an engine worker's claim waits at the server for work when there is none now
#: (``wait_ms``, docs/SPEC.md §4.7a; default of ``claim_wait_seconds``): the server answers as
#: soon as a row can be claimed, so an idle worker neither polls nor sleeps past new work.
CLAIM_WAIT_S = 5.0


def _reference_version(label: str | None, version: int) -> str:
    """A reference set's version as the engine names it: the writer's text label, else the
    number (docs/SPEC.md §14.8)."""
    return label if label is not None else str(version)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _s(ms: Any) -> float | None:
    return None if ms is None else ms / 1000


def _s0(ms: Any) -> float:
    return float(ms) / 1000


def _sid(value: Any) -> str | None:
    return None if value is None else str(value)


def _row_id(row_id: str | int) -> int:
    try:
        return int(row_id)
    except (TypeError, ValueError) as e:
        raise ValueError(f"not a raftlane row id: {row_id!r}") from e


#: A FIFO claim as ``claim_next_fifo`` was called: stage, lane name, and the ``owner`` argument.
_FifoKey = tuple[str, str, str | None]


#: A view raftlane records names the authenticated principal beside the actor the engine names
#: ("alice (via engine)", docs/SPEC.md §9.8); messagefoundry's contract reads the actor back.
_VIA_PRINCIPAL = re.compile(r"^(?P<actor>.*) \(via [^()]+\)$", re.DOTALL)


def _event_detail(event: Mapping[str, Any]) -> Any:
    """An event's detail as messagefoundry wrote it: a view's actor without the principal
    raftlane records beside it (still in the message's events on raftlane's own API)."""
    detail = event.get("detail")
    if event.get("event") == "viewed" and isinstance(detail, str):
        named = _VIA_PRINCIPAL.match(detail)
        if named is not None:
            return named["actor"]
    return detail


def _known_row_id(row_id: str | int) -> int | None:
    """``row_id`` as raftlane's integer id, ``None`` for text that names no raftlane row (which
    no row can have: the contract makes completing such an id a no-op, not an error)."""
    try:
        value = int(row_id)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def is_missing_route(err: NotFoundError) -> bool:
    """True when a ``404`` says the server has no such route (as opposed to no such record)."""
    return err.message == _NO_SUCH_ROUTE


@dataclass(frozen=True)
class StoreSettings:
    """The settings the engine and its tests read from a store (``store._settings``)."""

    lease_ttl_seconds: float = 30.0


class RaftlaneStore:
    """messagefoundry's ``Store`` on a raftlane cluster. Open with :meth:`open`."""

    supports_ingest_stage = True
    supports_response_capture = True

    def __init__(
        self,
        client: Client,
        *,
        owner: str | None = None,
        lease_ttl_seconds: float = 30.0,
        journal_mode: str = "raftlane",
        client_clock: bool = False,
        claim_wait_seconds: float = CLAIM_WAIT_S,
    ) -> None:
        if lease_ttl_seconds <= 0:
            raise ValueError("lease_ttl_seconds must be > 0")
        if not 0 <= claim_wait_seconds <= 30:
            raise ValueError("claim_wait_seconds must be between 0 and 30")
        self._client = client
        self._settings = StoreSettings(lease_ttl_seconds=lease_ttl_seconds)
        self._owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.path = "raftlane:" + ",".join(client.endpoints)
        self._journal_mode = journal_mode
        #: Send a method's ``now=`` as the request's time (a cluster in client-clock test mode);
        #: otherwise ``now`` is ignored and the cluster stamps its own time, as in production.
        self._client_clock = client_clock
        #: How long a worker's claim (``claim_ready``, ``claim_next_fifo``, made without ``now``)
        #: waits at the server for work when none is there: the engine's poll, and its sleep
        #: after an empty claim, then rarely run. 0: answer at once.
        self._claim_wait_ms = _ms(claim_wait_seconds)
        self._fences: OrderedDict[int, int] = OrderedDict()
        self._state_cache: dict[tuple[str, str], Any] = {}
        self._state_versions: dict[str, int] = {}
        self._reference_cache: dict[str, dict[str, Any]] = {}
        self._reference_versions: dict[str, str] = {}
        self._touched: dict[str, float] = {}
        #: Rows this handle claimed and has not completed: their leases are renewed every third
        #: of the TTL while the engine works on them (messagefoundry's engine never renews a
        #: lease itself; its own stores hold an in-flight row until it is completed).
        self._held: set[int] = set()
        self._renewer: asyncio.Task[None] | None = None
        #: The FIFO claim (lane and owner) of each row this handle claimed with
        #: ``claim_next_fifo``: once the row is done or handed on, its lane's worker asks for the
        #: lane's next row at once, so the store claims it ahead. With one owner for row and lane
        #: (the clustered engine's claims) ``mark_done`` does so in the same write (``done`` with
        #: ``claim_next``); otherwise the claim is sent as soon as the completion is answered,
        #: while the engine is still busy with what it just did.
        self._fifo_lane: dict[int, _FifoKey] = {}
        #: Rows claimed ahead, per FIFO claim: the next ``claim_next_fifo`` with the same lane and
        #: owner gets the row without waiting. Held (leases renewed) like any claim.
        self._ahead: dict[_FifoKey, OutboxItem] = {}
        self._ahead_claims: dict[_FifoKey, asyncio.Task[OutboxItem | None]] = {}

    # --- lifecycle ------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        endpoints: Sequence[str],
        token: str,
        *,
        owner: str | None = None,
        lease_ttl_seconds: float = 30.0,
        journal_mode: str = "raftlane",
        deadline: float = 20.0,
        client_clock: bool = False,
        claim_wait_seconds: float = CLAIM_WAIT_S,
    ) -> RaftlaneStore:
        """Connect to the cluster at ``endpoints`` with ``token`` and load the read-through caches
        (transform state, reference sets). ``owner`` names this handle's claims (default
        ``host:pid:random``); ``journal_mode`` is the label :meth:`db_status` reports. ``client_clock``: the cluster runs in
        client-clock test mode (``--test-client-clock``) and a method's ``now=`` becomes the time
        of its command; otherwise ``now`` is ignored (the cluster stamps time, docs/SPEC.md §2.1)
        except by the session writes, which are dated by the caller in every mode (``now``, else
        this host's clock; docs/SPEC.md §13.2). ``claim_wait_seconds``: how long a worker's
        claim waits at the server for work (0 to 30; 0: answer at once, as a poll)."""
        store = cls(
            Client(endpoints, token, deadline=deadline),
            owner=owner,
            lease_ttl_seconds=lease_ttl_seconds,
            journal_mode=journal_mode,
            client_clock=client_clock,
            claim_wait_seconds=claim_wait_seconds,
        )
        try:
            await store._load_caches()
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        self._forget_ahead()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
            self._renewer = None
        await self._client.aclose()

    async def _load_caches(self) -> None:
        """Fill the state and reference caches from the cluster."""
        await self.converge_state_cache()
        await self.converge_reference_cache()

    # --- plumbing -------------------------------------------------------------------------------

    def _at(self, now: float | None) -> Client:
        """The client handle for a call made at ``now``: with the client-time header when the
        store runs against a client-clock cluster and ``now`` is given."""
        if now is None or not self._client_clock:
            return self._client
        return self._client.with_headers({CLIENT_TIME_HEADER: str(_ms(now))})

    @property
    def _ttl_ms(self) -> int:
        return _ms(self._settings.lease_ttl_seconds)

    def _remember(self, row_id: int, fence: int) -> None:
        self._fences[row_id] = fence
        self._fences.move_to_end(row_id)
        while len(self._fences) > FENCE_MEMORY:
            self._fences.popitem(last=False)

    async def _fence(self, row_id: int) -> int:
        """The fence to complete ``row_id`` with: this handle's claim, else the row's current
        claim (or, once it left inflight, its last one) from ``GET /v1/rows/{id}``. The completion
        is still checked by the cluster against the row's fence when it applies."""
        fence = self._fences.get(row_id)
        if fence is not None:
            return fence
        row = (await self._client.row(row_id)).row
        if row.claim is not None:
            return row.claim.fence
        if row.last_fence is not None:
            return row.last_fence
        raise NeverClaimedError(
            f"row {row_id} has never been claimed: no fence to complete it with"
        )

    async def _row(self, row_id: int) -> dict[str, Any]:
        return dataclasses.asdict((await self._client.row(row_id)).row)

    async def _post(
        self, path: str, body: Mapping[str, Any] | None = None, *, now: float | None = None
    ) -> dict[str, Any]:
        answer = await self._at(now).request("POST", path, json=dict(body or {}))
        return answer if isinstance(answer, dict) else {}

    def _claim_wait(self, now: float | None) -> int:
        """The ``wait_ms`` of a worker's claim made at ``now``: the store's wait for the engine's
        own claims (no ``now``, the cluster's clock); none for a claim dated by its caller (a
        client-clock cluster's time never moves while a claim waits)."""
        return 0 if now is not None or self._client_clock else self._claim_wait_ms

    async def _claim(
        self, path: str, body: dict[str, Any], now: float | None, wait_ms: int
    ) -> dict[str, Any]:
        """A claim request, waiting up to ``wait_ms`` at the server for work (docs/SPEC.md §4.7a):
        answered as soon as a row can be claimed, empty once the wait is over."""
        if wait_ms:
            body["wait_ms"] = wait_ms
        answer = await self._at(now).request("POST", path, json=body, wait_s=wait_ms / 1000)
        return answer if isinstance(answer, dict) else {}

    async def _get(
        self, path: str, params: Mapping[str, Any] | None = None, *, now: float | None = None
    ) -> dict[str, Any]:
        answer = await self._at(now).request("GET", path, params=params)
        if not isinstance(answer, dict):
            raise RaftlaneError(f"GET {path}: not a JSON object")
        return answer

    async def _view(self, message_id: str) -> dict[str, Any] | None:
        """``GET /v1/messages/{id}`` with its bodies as JSON, ``None`` for an unknown message.

        The engine reads bodies to process them and records its users' views itself
        (``record_view``), so this read does not record one (``record_view=false``)."""
        try:
            return await self._get(
                f"/v1/messages/{segment(message_id)}",
                {"body": "true", "record_view": "false"},
            )
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    def _hold(self, row_id: int) -> None:
        """Keep ``row_id``'s lease alive until this handle completes it. Not in client-clock
        mode: there the caller's ``now`` is the only clock, and a renewal at the real time would
        move the cluster's time past every lease the test set up."""
        self._held.add(row_id)
        if self._renewer is None and not self._client_clock:
            self._renewer = asyncio.get_running_loop().create_task(self._renew_held())

    async def _renew_held(self) -> None:
        """Every third of the lease TTL, renew the leases of the rows this handle holds (one
        replicated write for all of them). A row whose fence the handle forgot is dropped: it
        can no longer complete it anyway."""
        interval = self._settings.lease_ttl_seconds / 3
        while True:
            await asyncio.sleep(interval)
            self._held.intersection_update(self._fences)
            rows = sorted(self._held)
            if not rows:
                continue
            try:
                await self._client.renew(rows, owner=self._owner, ttl_ms=self._ttl_ms)
            except RaftlaneError as e:
                log.warning("renewing the leases of %d held row(s) failed: %s", len(rows), e)

    def _item(self, c: Mapping[str, Any]) -> OutboxItem:
        self._remember(int(c["row_id"]), int(c["fence"]))
        self._hold(int(c["row_id"]))
        return OutboxItem(
            id=str(c["row_id"]),
            message_id=str(c["message_id"]),
            channel_id=c["channel_id"],
            destination_name=c.get("destination_name"),
            payload=c.get("payload", ""),
            attempts=int(c["attempts"]),
            stage=c["stage"],
            handler_name=c.get("handler_name"),
            created_at=_s(c.get("created_at")),
        )

    @staticmethod
    def _message_dict(m: Mapping[str, Any]) -> dict[str, Any]:
        corr = m.get("correlation") or {}
        metadata = m.get("metadata")
        if isinstance(metadata, (dict, list)):
            metadata = json.dumps(metadata)
        if corr and metadata is None:
            # A re-ingressed message: messagefoundry keeps its lineage in the message's metadata
            # text, and the engine's loopback path reads ``correlation_id`` from there to find
            # the origin's replies; raftlane keeps it as a record of its own.
            metadata = json.dumps(
                {
                    "correlation_id": _sid(corr.get("correlation_id")),
                    "correlation_root_id": _sid(corr.get("root_id")),
                    "correlation_depth": corr.get("depth"),
                    "reingress_of_seq": corr.get("reingress_of_seq"),
                }
            )
        return {
            "id": str(m["id"]),
            "channel_id": m["channel_id"],
            "received_at": _s0(m["received_at"]),
            "source_type": m.get("source_type"),
            "control_id": m.get("control_id"),
            "message_type": m.get("message_type"),
            "raw": m.get("raw"),
            "status": m["status"],
            "error": m.get("error"),
            "summary": m.get("summary"),
            "metadata": metadata,
            "correlation_id": _sid(corr.get("correlation_id")),
            "correlation_root_id": _sid(corr.get("root_id")),
            "correlation_depth": corr.get("depth"),
            "reingress_of_seq": corr.get("reingress_of_seq"),
            "purged": bool(m.get("purged", False)),
        }

    @staticmethod
    def _row_dict(r: Mapping[str, Any], *, payload: bool) -> dict[str, Any]:
        claim = r.get("claim") or {}
        d = {
            "id": str(r["id"]),
            "message_id": str(r["message_id"]),
            "stage": r["stage"],
            "channel_id": r["channel_id"],
            "destination_name": r.get("destination_name"),
            "handler_name": r.get("handler_name"),
            "status": r["status"],
            "attempts": r["attempts"],
            "next_attempt_at": _s0(r["next_attempt_at"]),
            # A delivered row has no error (messagefoundry clears it on done); raftlane keeps
            # the last failure's text with the row.
            "last_error": None if r["status"] == "done" else r.get("last_error"),
            "created_at": _s0(r["created_at"]),
            "updated_at": _s0(r["updated_at"]),
            "seq": r["id"],
            "owner": claim.get("owner"),
            "lease_expires_at": _s(claim.get("lease_expires_at")),
        }
        if payload:
            d["payload"] = r.get("payload")
        return d

    # --- inspection reads (the suite's two SQL helpers are rewritten onto these) ---------------

    async def row_lease(self, row_id: str) -> dict[str, Any] | None:
        """A row's ``{owner, lease_expires_at, status}`` (owner and expiry ``None`` unless it is
        inflight), ``None`` for an unknown row."""
        try:
            row = await self._row(_row_id(row_id))
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        claim = row.get("claim") or {}
        return {
            "owner": claim.get("owner"),
            "lease_expires_at": _s(claim.get("lease_expires_at")),
            "status": row.get("status"),
        }

    async def lane_lease(self, lane: str) -> dict[str, Any] | None:
        """A lane's live lease ``{owner, lease_expires_at}``, ``None`` when nobody holds it.
        ``lane`` is ``"<stage>:<name>"`` (e.g. ``outbound:OB1``)."""
        stage, sep, name = lane.partition(":")
        if not sep:
            raise ValueError(f"a lane is '<stage>:<name>', not {lane!r}")
        view = await self._client.lane(stage, name)
        if view.holder is None:
            return None
        return {"owner": view.holder.owner, "lease_expires_at": _s(view.holder.expires_at)}

    # --- QueueStore: write path ----------------------------------------------------------------

    @staticmethod
    def _fields(
        control_id: str | None,
        message_type: str | None,
        source_type: str | None,
        summary: str | None,
        metadata: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "control_id": control_id,
            "message_type": message_type,
            "source_type": source_type,
            "summary": summary,
        }
        if metadata is not None:
            parsed = json.loads(metadata)
            if not isinstance(parsed, dict):
                raise ValueError("metadata must be the JSON text of an object")
            body["metadata"] = parsed
        return {k: v for k, v in body.items() if v is not None}

    async def _enqueue(self, channel_id: str, body: dict[str, Any], now: float | None) -> str:
        answer = await self._post(f"/v1/channels/{segment(channel_id)}/messages", body, now=now)
        return str(answer["message_id"])

    async def enqueue_message(
        self,
        *,
        channel_id: str,
        raw: str,
        deliveries: Sequence[tuple[str, str]],
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        body = {
            "raw": raw,
            **self._fields(control_id, message_type, source_type, summary, metadata),
            "deliveries": [{"destination": d, "payload": p} for d, p in deliveries],
        }
        return await self._enqueue(channel_id, body, now)

    async def record_received(
        self,
        *,
        channel_id: str,
        raw: str,
        status: MessageStatus,
        error: str | None = None,
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        body: dict[str, Any] = {
            "raw": raw,
            **self._fields(control_id, message_type, source_type, summary, metadata),
            "status": MessageStatus(status).value,
        }
        if error:
            body["error"] = safe_text(error)  # the store layer is messagefoundry's PHI chokepoint
        elif error is not None:
            body["error"] = error
        return await self._enqueue(channel_id, body, now)

    async def enqueue_ingress(
        self,
        *,
        channel_id: str,
        raw: str,
        control_id: str | None = None,
        message_type: str | None = None,
        source_type: str | None = None,
        summary: str | None = None,
        metadata: str | None = None,
        now: float | None = None,
    ) -> str:
        body = {
            "raw": raw,
            **self._fields(control_id, message_type, source_type, summary, metadata),
        }
        return await self._enqueue(channel_id, body, now)

    async def handoff(
        self,
        *,
        ingress_id: str,
        message_id: str,
        channel_id: str,
        deliveries: Sequence[tuple[str, str]],
        disposition: MessageStatus,
        now: float | None = None,
    ) -> bool:
        row = _known_row_id(ingress_id)
        if row is None:
            return False  # no such row: nothing to consume
        with _unless_gone("handoff", row, self._held) as done:
            fence = await self._fence(row)
            action = RowAction.handoff(
                row, fence, list(deliveries), MessageStatus(disposition).value
            )
            done.applied = await self._hand_on(action, now)
        return self._handed_on(row, done.applied)

    async def route_handoff(
        self,
        *,
        ingress_id: str,
        message_id: str,
        channel_id: str,
        handlers: Sequence[tuple[str, str]],
        disposition: MessageStatus,
        now: float | None = None,
    ) -> bool:
        row = _known_row_id(ingress_id)
        if row is None:
            return False  # no such row: nothing to consume
        with _unless_gone("route", row, self._held) as done:
            fence = await self._fence(row)
            action = RowAction.route(row, fence, list(handlers), MessageStatus(disposition).value)
            done.applied = await self._hand_on(action, now)
        return self._handed_on(row, done.applied)

    async def transform_handoff(
        self,
        *,
        routed_id: str,
        message_id: str,
        channel_id: str,
        deliveries: Sequence[tuple[str, str]],
        state_ops: Sequence[tuple[str, str, Any]] = (),
        now: float | None = None,
    ) -> bool:
        row = _known_row_id(routed_id)
        if row is None:
            return False
        ops = [StateOp(ns, key, value) for ns, key, value in state_ops]
        with _unless_gone("transform", row, self._held) as done:
            fence = await self._fence(row)
            action = RowAction.transform(row, fence, list(deliveries), ops)
            done.applied = await self._hand_on(action, now)
        if done.applied:
            # Committed: the writes are visible to this handle's handlers at once.
            for op in ops:
                self._state_cache[(op.namespace, op.key)] = op.value
        return self._handed_on(row, done.applied)

    async def _hand_on(self, action: RowAction, now: float | None) -> bool:
        """One handoff (route, handoff or transform) of a claimed row. For a row this handle
        claimed from a FIFO lane with one owner for row and lane (the clustered engine's
        claims), the lane's next row is claimed in the same write and kept for the lane's next
        ``claim_next_fifo``: one round trip per message per stage instead of two."""
        key = self._riding_claim(action.row)
        if key is None:
            path = f"/v1/rows/{segment(action.row)}/{segment(action.action)}"
            return bool((await self._post(path, action.body, now=now)).get("applied"))
        handed, claim = await self._at(now).hand_on_then_claim_next(
            action, owner=self._owner, ttl_ms=self._ttl_ms
        )
        self._keep_ahead(action.row, key, claim)
        return handed.applied

    def _riding_claim(self, row: int) -> _FifoKey | None:
        """The FIFO claim that can ride in the write finishing or handing on ``row``
        (``claim_next``): its lane's, when this handle claimed it with one owner for row and
        lane and has nothing claimed ahead for that lane yet; else ``None``."""
        key = self._fifo_lane.get(row)
        if key is None or key[2] != self._owner or self._claimed_ahead(key):
            return None
        return key

    def _claimed_ahead(self, key: _FifoKey) -> bool:
        return key in self._ahead or key in self._ahead_claims

    def _keep_ahead(self, row: int, key: _FifoKey, claim: FifoClaim | None) -> None:
        """``row``'s write carried its lane's next claim: keep the row it claimed for the lane's
        next ``claim_next_fifo``."""
        del self._fifo_lane[row]
        if claim is not None and claim.item is not None:
            item = self._item(dataclasses.asdict(claim.item))
            self._ahead[key] = item
            self._fifo_lane[int(item.id)] = key

    def _handed_on(self, row: int, applied: bool) -> bool:
        """After a handoff of ``row``: claim its lane's next row ahead unless that was done in
        the handoff's own write (or the handoff did nothing)."""
        if applied:
            self._claim_ahead(row)
        else:
            self._fifo_lane.pop(row, None)
        return applied

    def state_view(self) -> Mapping[tuple[str, str], Any]:
        return MappingProxyType(self._state_cache)

    def reference_view(self) -> Mapping[str, Mapping[str, Any]]:
        return MappingProxyType(self._reference_cache)

    async def write_reference_snapshot(
        self, *, name: str, version: str, rows: Mapping[str, Any]
    ) -> None:
        await self._client.put_reference(name, version, {k: json.dumps(v) for k, v in rows.items()})
        self._reference_cache[name] = dict(rows)
        self._reference_versions[name] = version

    async def converge_reference_cache(self) -> list[str]:
        """Reload every reference set whose version in the cluster differs from the one this
        handle reflects; answers the names reloaded."""
        listing = await self._client.reference_sets()
        refreshed = []
        for entry in listing.sets:
            name = entry.name
            version = _reference_version(entry.label, entry.version)
            if self._reference_versions.get(name) == version:
                continue
            snap = await self._get(f"/v1/reference/{segment(name)}")
            rows = snap.get("rows") or {}
            self._reference_cache[name] = {k: json.loads(v) for k, v in rows.items()}
            self._reference_versions[name] = _reference_version(snap.get("label"), snap["version"])
            refreshed.append(name)
        return refreshed

    async def converge_state_cache(self) -> list[str]:
        """Re-read every namespace whose version in the cluster moved past the one this handle
        reflects; answers the namespaces re-read."""
        listing = await self._client.namespaces()
        refreshed = []
        for entry in listing.namespaces:
            ns = entry.namespace
            if self._state_versions.get(ns) == entry.version:
                continue
            view = await self._client.namespace(ns, entries=True)
            for key in [k for k in self._state_cache if k[0] == ns]:
                del self._state_cache[key]
            for e in view.entries or []:
                self._state_cache[(ns, e.key)] = e.value
            self._state_versions[ns] = view.version
            refreshed.append(ns)
        return refreshed

    def enable_state_convergence(self) -> None:
        """Nothing to do: raftlane versions every namespace on every write."""

    # --- QueueStore: delivery worker -----------------------------------------------------------

    async def claim_ready(
        self,
        limit: int = 10,
        now: float | None = None,
        *,
        stage: str = "outbound",
        channel_id: str | None = None,
        destination_name: str | None = None,
    ) -> list[OutboxItem]:
        if limit <= 0:
            return []
        body = {
            "stage": stage,
            "limit": min(limit, 1000),
            "owner": self._owner,
            "ttl_ms": self._ttl_ms,
            "channel": channel_id,
            "destination": destination_name,
        }
        answer = await self._claim(
            "/v1/claims",
            {k: v for k, v in body.items() if v is not None},
            now,
            self._claim_wait(now),
        )
        return [self._item(c) for c in answer.get("items", [])]

    async def claim_next_fifo(
        self,
        name: str,
        now: float | None = None,
        *,
        stage: str = "outbound",
        owner: str | None = None,
    ) -> OutboxItem | None:
        """The lane's head, claimed for this handle's ``_owner``. With ``owner`` (the engine's node
        id when clustered) the lane lease is ``owner``'s; without, no lane lease is taken
        (docs/SPEC.md §14.1)."""
        key: _FifoKey = (stage, name, owner)
        ahead = self._ahead.pop(key, None)
        if ahead is not None:
            return ahead
        pending = self._ahead_claims.pop(key, None)
        if pending is not None:
            with contextlib.suppress(RaftlaneError):
                claimed = await pending
                if claimed is not None:
                    return claimed
            # The lane was empty then, or the claim failed: ask again now.
        return await self._claim_fifo(key, now, wait_ms=self._claim_wait(now))

    async def _claim_fifo(
        self, key: _FifoKey, now: float | None, *, wait_ms: int = 0
    ) -> OutboxItem | None:
        """The FIFO claim of ``key``; ``wait_ms`` for the worker's own claim (a claim made ahead
        answers at once: the worker's next claim waits if it must)."""
        stage, name, owner = key
        path = f"/v1/lanes/{segment(stage)}/{segment(name)}/claim"
        lane_owner = owner if owner is not None else self._owner
        body: dict[str, Any] = {"owner": lane_owner, "ttl_ms": self._ttl_ms}
        if owner is None:
            body["lane_lease"] = False
        elif owner != self._owner:
            body["row_owner"] = self._owner
        answer = await self._claim(path, body, now, wait_ms)
        item = answer.get("item")
        if not isinstance(item, dict):
            return None
        claimed = self._item(item)
        if not self._client_clock:
            self._fifo_lane[int(claimed.id)] = key
        return claimed

    def _claim_ahead(self, row: int) -> None:
        """``row`` was just handed on or finished: claim its lane's next row now, for the
        lane's next ``claim_next_fifo`` (the same claim, sent while the engine works)."""
        key = self._fifo_lane.pop(row, None)
        if key is None or self._claimed_ahead(key):
            return
        self._ahead_claims[key] = asyncio.get_running_loop().create_task(
            self._claim_fifo(key, None)
        )

    async def mark_done(self, outbox_id: str, now: float | None = None) -> None:
        row = _known_row_id(outbox_id)
        if row is None:
            return  # no such row: the contract's no-op
        with _unless_gone("mark_done", row, self._held):
            fence = await self._fence(row)
            key = self._riding_claim(row)
            if key is None:
                await self._at(now).done(row, fence)
                self._claim_ahead(row)
                return
            # The lane's worker will ask for the lane's next row as soon as this returns: claim
            # it in the same write, under the same lease and fence rules as any FIFO claim.
            claim = await self._at(now).done_then_claim_next(
                row, fence, owner=self._owner, ttl_ms=self._ttl_ms
            )
            self._keep_ahead(row, key, claim)

    def _forget_ahead(self) -> None:
        """Drop the rows claimed ahead and the claims under way: a recovery just took in-flight
        rows back (or the handle closes), so their claims may be gone; the next claim of each
        lane asks the cluster again."""
        self._ahead.clear()
        for task in self._ahead_claims.values():
            task.cancel()
        self._ahead_claims.clear()

    async def complete_with_response(
        self,
        outbox_id: str,
        *,
        body: str,
        outcome: str,
        detail: str | None = None,
        reingress_to: str | None = None,
        now: float | None = None,
    ) -> None:
        row = _known_row_id(outbox_id)
        if row is None:
            return
        self._fifo_lane.pop(row, None)
        with _unless_gone("complete_with_response", row, self._held):
            await self._at(now).respond(
                row, await self._fence(row), body, outcome, detail=detail, reingress_to=reingress_to
            )

    async def correlate_response(self, message_id: str) -> list[CapturedResponse]:
        view = await self._view(message_id)
        if view is None:
            return []
        out = [
            CapturedResponse(
                message_id=str(r["message_id"]),
                destination_name=r["destination"],
                response_seq=int(r["response_seq"]),
                outcome=r["outcome"],
                detail=r.get("detail"),
                captured_at=_s0(r["captured_at"]),
                body=r.get("body"),
            )
            for r in view.get("responses", [])
        ]
        out.sort(key=lambda c: (c.destination_name, c.response_seq))
        return out

    async def _response_reference(self, row_id: int) -> tuple[str, str, int] | None:
        row = await self._row(row_id)
        if row.get("stage") != "response":
            return None
        try:
            ref = json.loads(row.get("payload") or "")
            return str(ref["message_id"]), str(ref["destination"]), int(ref["seq"])
        except (ValueError, KeyError, TypeError):
            return None

    async def _response_body(self, ref: tuple[str, str, int]) -> str | None:
        mid, dest, seq = ref
        for c in await self.correlate_response(mid):
            if c.destination_name == dest and c.response_seq == seq:
                return c.body if c.body is not None else ""
        return None

    async def ingress_handoff(
        self,
        *,
        response_row_id: str,
        loopback_channel_id: str,
        correlation_depth_cap: int,
        control_id: str | None,
        message_type: str | None,
        summary: str | None,
        peek_failed: bool = False,
        now: float | None = None,
    ) -> bool:
        row = _known_row_id(response_row_id)
        if row is None:
            return False
        with _unless_gone("ingress_handoff", row, self._held) as done:
            await self._ingress_handoff(
                row,
                loopback_channel_id=loopback_channel_id,
                correlation_depth_cap=correlation_depth_cap,
                control_id=control_id,
                message_type=message_type,
                summary=summary,
                peek_failed=peek_failed,
                now=now,
            )
        return done.applied

    async def _ingress_handoff(
        self,
        row: int,
        *,
        loopback_channel_id: str,
        correlation_depth_cap: int,
        control_id: str | None,
        message_type: str | None,
        summary: str | None,
        peek_failed: bool,
        now: float | None,
    ) -> None:
        body: dict[str, Any] = {
            "fence": await self._fence(row),
            "loopback_channel": loopback_channel_id,
            "depth_cap": correlation_depth_cap,
            "control_id": control_id,
            "message_type": message_type,
            "summary": summary,
            "peek_failed": peek_failed or None,
        }
        # The engine finds the child by an id it derives from the origin and the reply (its own
        # function, called here); the cluster keeps it with the child.
        ref = await self._response_reference(row)
        if ref is not None:
            reply = await self._response_body(ref)
            if reply is not None:
                body["child_key"] = MessageStore._reingress_message_id(
                    ref[0], ref[1], ref[2], reply
                )
        await self._post(
            f"/v1/rows/{segment(row)}/reingress",
            {k: v for k, v in body.items() if v is not None},
            now=now,
        )

    async def response_body_for_work_row(self, response_row_id: str) -> str | None:
        row = _known_row_id(response_row_id)
        if row is None:
            return None
        try:
            ref = await self._response_reference(row)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        if ref is None:
            return None
        body = await self._response_body(ref)
        # The reference is sound but its capture is gone (purged): an empty body, as the
        # contract has it, so the worker's peek sees nothing rather than no row.
        return "" if body is None else body

    async def mark_failed(
        self, outbox_id: str, error: str, retry: MfRetryPolicy, now: float | None = None
    ) -> None:
        row = _known_row_id(outbox_id)
        if row is None:
            return
        policy = RetryPolicy(
            backoff_ms=_ms(retry.backoff_seconds),
            multiplier=retry.backoff_multiplier,
            max_backoff_ms=_ms(retry.max_backoff_seconds),
            # messagefoundry's ``None`` is "retry forever", not "the server's default".
            max_attempts=UNLIMITED_ATTEMPTS if retry.max_attempts is None else retry.max_attempts,
        )
        self._fifo_lane.pop(row, None)
        with _unless_gone("mark_failed", row, self._held):
            await self._at(now).fail(row, await self._fence(row), safe_text(error), retry=policy)

    async def dead_letter_now(self, outbox_id: str, error: str, now: float | None = None) -> None:
        row = _known_row_id(outbox_id)
        if row is None:
            return
        # With this handle's fence when it claimed the row; without one the cluster ends the
        # row only while it is live (docs/SPEC.md §5.3).
        self._fifo_lane.pop(row, None)
        with _unless_gone("dead_letter_now", row, self._held):
            await self._at(now).dead(row, safe_text(error), fence=self._fences.get(row))

    # --- QueueStore: recovery and replay -------------------------------------------------------

    async def pending_depth(
        self, name: str, *, stage: str = "outbound"
    ) -> tuple[int, float | None]:
        view = await self._client.lane(stage, name)
        return view.depth, _s(view.oldest)

    async def reset_stale_inflight(
        self, now: float | None = None, *, stage: str | None = None
    ) -> int:
        self._forget_ahead()
        return await self._at(now).reset_inflight(stage=stage)

    async def renew_leases(self, ids: Sequence[str], *, now: float | None = None) -> int:
        rows = [r for r in map(_known_row_id, ids) if r is not None]
        if not rows:
            return 0
        return await self._at(now).renew(rows, owner=self._owner, ttl_ms=self._ttl_ms)

    async def reclaim_expired_leases(
        self, now: float | None = None, *, stage: str | None = None
    ) -> int:
        return await self._at(now).reclaim_expired(stage=stage)

    async def recover_inflight_on_promotion(
        self, *, lane_owner: str | None, now: float | None = None
    ) -> int:
        self._forget_ahead()
        return await self._at(now).recover_inflight(self._owner, lane_owner=lane_owner)

    async def _sweep(self, stage: str, keep: set[str], now: float | None) -> int:
        return await self._at(now).sweep_dead_letters(stage, sorted(keep))

    async def dead_letter_missing_destinations(
        self, valid_names: set[str], now: float | None = None
    ) -> int:
        return await self._sweep("outbound", valid_names, now)

    async def dead_letter_missing_handlers(
        self, valid_names: set[str], now: float | None = None
    ) -> int:
        return await self._sweep("routed", valid_names, now)

    async def replay(self, message_id: str, now: float | None = None) -> int:
        mid = _known_row_id(message_id)
        if mid is None:
            # Not a raftlane id: a re-ingested child's key (messagefoundry's own id for it),
            # which the cluster resolves on read.
            view = await self._view(message_id)
            if view is None:
                return 0
            mid = int(view["message"]["id"])
        try:
            r = await self._at(now).replay(mid)
        except NotFoundError as e:
            _raise_unless_gone(e)
            return 0
        return r.requeued

    async def replay_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        now: float | None = None,
    ) -> int:
        r = await self._at(now).replay_dead(channel=channel_id, destination=destination_name)
        return r.requeued

    async def cancel_queued(
        self,
        channel_id: str | None,
        destination_name: str,
        *,
        top_only: bool = False,
        now: float | None = None,
    ) -> int:
        return await self._at(now).cancel(destination_name, channel=channel_id, top_only=top_only)

    # --- QueueStore: reads ---------------------------------------------------------------------

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        view = await self._view(message_id)
        return None if view is None else self._message_dict(view["message"])

    @staticmethod
    def _filters(
        channel_id: str | None,
        status: str | None,
        message_type: str | None,
        control_id: str | None,
        allowed_channels: Sequence[str] | None,
    ) -> dict[str, Any]:
        return {
            "channel": channel_id,
            "status": status,
            "message_type": message_type,
            "control_id": control_id,
            "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
        }

    async def list_messages(
        self,
        *,
        channel_id: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        allowed_channels: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        if limit <= 0 or (allowed_channels is not None and not allowed_channels):
            return []
        filters = self._filters(channel_id, status, message_type, control_id, allowed_channels)
        # A page of the server's list examines a bounded number of messages and then answers
        # what it found with a cursor, so a selective filter over a long history can come back
        # short: follow the cursor until the page is full, as an SQL LIMIT/OFFSET would be. The
        # offset is counted here, because the server's skip count does not carry to the next
        # page.
        skip = max(0, offset)
        out: list[dict[str, Any]] = []
        cursor: int | None = None
        while True:
            params: dict[str, Any] = {
                **filters,
                "limit": max(1, min(skip + limit - len(out), 1000)),
                "offset": 0,
            }
            if cursor is not None:
                params["cursor"] = cursor
            answer = await self._get("/v1/messages", params)
            for m in answer.get("messages", []):
                if allowed_channels is not None and m["channel_id"] not in allowed_channels:
                    continue  # never widen a scope, whatever the server did with the filter
                if skip:
                    skip -= 1
                    continue
                d = self._message_dict(m)
                del d["raw"]
                d["last_event"] = m.get("last_event")
                out.append(d)
                if len(out) >= limit:
                    return out
            cursor = answer.get("next_cursor")
            if cursor is None:
                return out

    async def count_messages(
        self,
        *,
        channel_id: str | None = None,
        status: str | None = None,
        message_type: str | None = None,
        control_id: str | None = None,
        allowed_channels: Sequence[str] | None = None,
    ) -> int:
        if allowed_channels is not None and not allowed_channels:
            return 0
        params = self._filters(channel_id, status, message_type, control_id, allowed_channels)
        return await self._client.count_messages(**params)

    def _dead_params(
        self,
        channel_id: str | None,
        destination_name: str | None,
        allowed_channels: Sequence[str] | None,
    ) -> dict[str, Any]:
        return {
            "channel": channel_id,
            "destination": destination_name,
            "allowed_channels": None if allowed_channels is None else ",".join(allowed_channels),
        }

    async def list_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        limit: int = 50,
        offset: int = 0,
        allowed_channels: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        if allowed_channels is not None and not allowed_channels:
            return []
        params = {
            **self._dead_params(channel_id, destination_name, allowed_channels),
            "limit": max(1, min(limit, 1000)),
            "offset": offset,
            "order": "newest_failed",
        }
        answer = await self._get("/v1/dead-letters", params)
        out = []
        for r in answer.get("dead_letters", []):
            if allowed_channels is not None and r["channel_id"] not in allowed_channels:
                continue
            out.append(
                {
                    "outbox_id": str(r["id"]),
                    "message_id": str(r["message_id"]),
                    "channel_id": r["channel_id"],
                    "destination_name": r.get("destination_name"),
                    "attempts": r["attempts"],
                    "last_error": r.get("last_error"),
                    "updated_at": _s0(r["updated_at"]),
                    "control_id": r.get("control_id"),
                    "message_type": r.get("message_type"),
                    "received_at": _s(r.get("received_at")),
                    "summary": r.get("summary"),
                }
            )
        return out

    async def count_dead(
        self,
        *,
        channel_id: str | None = None,
        destination_name: str | None = None,
        allowed_channels: Sequence[str] | None = None,
    ) -> int:
        if allowed_channels is not None and not allowed_channels:
            return 0
        params = self._dead_params(channel_id, destination_name, allowed_channels)
        return await self._client.count_dead_letters(**params)

    async def _outbound_rows(self, message_id: str, *, payload: bool) -> list[dict[str, Any]]:
        view = await self._view(message_id)
        if view is None:
            return []
        rows = [
            self._row_dict(r, payload=payload)
            for r in view.get("rows", [])
            if r.get("stage") == "outbound"
        ]
        rows.sort(key=lambda r: (r["destination_name"] or "", int(r["id"])))
        return rows

    async def outbox_for(self, message_id: str) -> list[dict[str, Any]]:
        return await self._outbound_rows(message_id, payload=False)

    async def outbox_payloads_for(self, message_id: str) -> list[dict[str, Any]]:
        return await self._outbound_rows(message_id, payload=True)

    async def events_for(self, message_id: str) -> list[dict[str, Any]]:
        view = await self._view(message_id)
        if view is None:
            return []
        return [
            {
                "id": i,
                "message_id": str(view["message"]["id"]),
                "ts": _s0(e["ts"]),
                "event": e["event"],
                "destination": e.get("destination"),
                "detail": _event_detail(e),
            }
            for i, e in enumerate(view.get("events", []))
        ]

    async def stats(self) -> dict[str, int]:
        s = await self._client.stats()
        return {status: n for status, n in s.rows.get("outbound", {}).items() if n}

    async def in_pipeline_depth(self) -> int:
        s = await self._client.stats()
        return sum(
            s.rows.get(stage, {}).get(status, 0)
            for stage in ("ingress", "routed", "outbound")
            for status in ("pending", "inflight")
        )

    # --- QueueStore: keys, retention, health ---------------------------------------------------

    async def reencrypt_to_active(self, *, batch: int = 500) -> int:
        r = await self._client.rotate_keys(batch_size=batch)
        return r.rewritten

    async def _purge(self, kind: str, older_than: float, now: float | None) -> int:
        return (await self._at(now).purge(kind, older_than=_ms(older_than))).purged

    async def purge_message_bodies(self, *, older_than: float, now: float | None = None) -> int:
        return await self._purge("bodies", older_than, now)

    async def purge_dead_letters(self, *, older_than: float, now: float | None = None) -> int:
        return await self._purge("dead_letters", older_than, now)

    async def purge_state(self, *, older_than: float, now: float | None = None) -> int:
        purged = await self._purge("state", older_than, now)
        if purged:
            # Purged entries leave this handle's read-through cache at once, as they leave the
            # store: a transform must not read state that retention removed.
            await self.converge_state_cache()
        return purged

    async def wal_checkpoint(self) -> None:
        """Nothing to do: each node's RocksDB manages its own files."""

    async def vacuum(self) -> None:
        """Nothing to do: each node's RocksDB compacts on its own."""

    async def db_status(self) -> DbStatus:
        stats = await self._client.storage_stats()
        anchor = await self._client.audit_anchor(AUDIT_ORG)
        return DbStatus(
            path=self.path,
            size_bytes=stats.size_bytes,
            disk_free_bytes=0,
            journal_mode=self._journal_mode,
            messages=stats.messages,
            events=stats.events,
            audit=anchor.count,
        )

    async def integrity_check(self) -> tuple[bool, str]:
        """Every node ready, and every node's state digest equal at one applied index."""
        endpoints = self._client.endpoints
        for ep in endpoints:
            ready = await self._client.readyz(ep)
            if not ready.ready:
                return False, f"{ep} is not ready: {ready.reason}"
        for _ in range(50):
            digests = [await self._client.digest(ep) for ep in endpoints]
            if len({d.last_applied for d in digests}) == 1:
                if len({d.digest for d in digests}) == 1:
                    return True, "ok"  # every node ready, and one state at one applied index
                return False, f"digests differ at index {digests[0].last_applied}"
            await asyncio.sleep(0.1)
        return False, "the nodes did not reach one applied index to compare digests"

    async def connection_metrics(
        self, *, since: float, now: float | None = None, rate_window: float = 60.0
    ) -> ConnectionMetrics:
        answer = await self._at(now).connection_metrics(
            since=_ms(since), rate_window_ms=_ms(rate_window)
        )
        inbound = {
            i.channel: InboundMetrics(read=i.read, errored=i.errored, last_at=_s(i.last_at))
            for i in answer.inbound
        }
        destinations = {
            (d.channel, d.destination): DestinationMetrics(
                queue_depth=d.queue_depth,
                written=d.written,
                dead=d.dead,
                oldest_pending_at=_s(d.oldest_pending_at),
                recent_done=d.recent_done,
                last_done_at=_s(d.last_done_at),
            )
            for d in answer.destinations
        }
        return ConnectionMetrics(inbound=inbound, destinations=destinations)

    # --- AuditStore ----------------------------------------------------------------------------

    async def record_view(
        self, message_id: str, *, actor: str | None = None, now: float | None = None
    ) -> None:
        await self._at(now).record_view(message_id, actor=actor)

    async def record_audit(
        self,
        action: str,
        *,
        actor: str | None = None,
        channel_id: str | None = None,
        detail: str | None = None,
        now: float | None = None,
    ) -> None:
        body = {
            "action": action,
            "org": AUDIT_ORG,
            "actor": actor,
            "channel": channel_id,
            "detail": detail,
        }
        await self._post("/v1/audit", _drop_none(body), now=now)
        # The engine's off-box copy (metadata only, redacted by its own code), after the append.
        emit_audit_tee(
            action=action,
            actor=actor,
            channel_id=channel_id,
            detail=detail,
            ts=time.time() if now is None else now,
        )

    async def list_audit(self, *, limit: int = 50) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        anchor = await self._client.audit_anchor(AUDIT_ORG)
        start = max(0, anchor.count - limit)
        rows = await self._client.audit_list(AUDIT_ORG, start=start, limit=min(limit, 1000))
        return [
            {
                "id": r.seq,
                "ts": r.ts / 1000,
                "actor": r.actor,
                "action": r.action,
                "channel_id": r.channel,
                "detail": r.detail,
                "row_hash": r.hash,
            }
            for r in reversed(rows)
        ]

    async def security_events_for_user(
        self, username: str, *, limit: int = 100
    ) -> list[dict[str, Any]]:
        answer = await self._client.audit_search(
            AUDIT_ORG, username, action_prefix="auth.", limit=limit
        )
        return [{"ts": _s0(r.ts), "action": r.action, "detail": r.detail} for r in answer.rows]

    @staticmethod
    def _approval_dict(a: Approval) -> dict[str, Any]:
        return {
            "id": a.key if a.key is not None else str(a.id),
            "operation": a.operation,
            "params": a.params,
            "requester": a.requester,
            "requested_at": _s0(a.requested_at),
            "status": a.status,
            "approver": a.approver,
            "decided_at": _s(a.decided_at),
            # 2^64 - 1 is "never" (docs/SPEC.md §14.10).
            "expires_at": None if a.expires_at >= NEVER_MS else _s(a.expires_at),
        }

    async def create_pending_approval(
        self,
        *,
        approval_id: str,
        operation: str,
        params: str,
        requester: str,
        requested_at: float,
        expires_at: float | None,
    ) -> None:
        await self._client.create_keyed_approval(
            approval_id,
            operation,
            params=params,
            requester=requester,
            requested_at=_ms(requested_at),
            expires_at=None if expires_at is None else _ms(expires_at),
        )

    async def get_pending_approval(self, approval_id: str) -> dict[str, Any] | None:
        try:
            a = await self._client.keyed_approval(approval_id)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None
        return self._approval_dict(a)

    async def list_pending_approvals(self, *, now: float, limit: int = 100) -> list[dict[str, Any]]:
        answer = await self._at(now).pending_approvals(limit=max(1, min(limit, 1000)))
        return [self._approval_dict(a) for a in answer.approvals]

    async def decide_pending_approval(
        self, approval_id: str, *, status: str, approver: str | None, decided_at: float
    ) -> bool:
        try:
            await self._client.decide_keyed_approval(
                approval_id, status, approver=approver, decided_at=_ms(decided_at)
            )
        except ConflictError as e:
            if e.code == "already_decided":
                return False
            raise
        except NotFoundError as e:
            _raise_unless_gone(e)
            return False  # no such approval: nothing was decided
        return True

    async def audit_anchor(self) -> tuple[int, str]:
        a = await self._client.audit_anchor(AUDIT_ORG)
        return (a.count, a.head) if a.count else (0, "")

    async def verify_audit_chain(
        self, *, expected_anchor: tuple[int, str] | None = None
    ) -> tuple[bool, str | None]:
        anchor: AuditAnchor | tuple[int, str] | None = None
        if expected_anchor is not None:
            count, head = expected_anchor
            anchor = (count, head or "0" * 64)
        v = await self._client.audit_verify(AUDIT_ORG, anchor=anchor)
        if v.ok and expected_anchor is not None:
            # The cluster checked that the anchored row is in the chain; the contract also
            # treats a chain that moved past the anchor as diverged (the anchor is the head the
            # caller recorded as current).
            now_count, now_head = await self.audit_anchor()
            exp_count, exp_head = expected_anchor
            if now_count < exp_count or now_head != exp_head:
                return False, (
                    f"audit log diverges from recorded anchor (have {now_count} row(s) head "
                    f"{now_head[:12]!r}, expected {exp_count} head {exp_head[:12]!r})"
                    " — truncated or rewritten"
                )
        if v.ok:
            return True, f"verified {v.count} audit row(s)"
        where = f" at row {v.first_bad_seq}" if v.first_bad_seq is not None else ""
        return False, f"audit chain broken{where}: {v.reason}"

    # --- AuthStore: users ----------------------------------------------------------------------

    @staticmethod
    def _user(u: UserView) -> UserRecord:
        return UserRecord(
            id=u.id,
            username=u.username,
            auth_provider=u.auth_provider,
            display_name=u.display_name,
            email=u.email,
            disabled=u.disabled,
            created_at=_s0(u.created_at),
            updated_at=_s0(u.updated_at),
            last_login_at=_s(u.last_login_at),
            password_hash=u.password_hash,
            password_changed_at=_s(u.password_changed_at),
            must_change_password=u.must_change_password,
            failed_attempts=u.failed_attempts,
            locked_until=_s(u.locked_until),
            channel_scope=u.channel_scope,
            totp_enabled=u.totp_enabled,
            totp_enrolled_at=_s(u.totp_enrolled_at),
        )

    async def _user_change(
        self, user_id: str, change: str, body: Mapping[str, Any], now: float | None
    ) -> UserChanged:
        return await self._at(now).change_user(user_id, change, body)

    async def create_user(
        self,
        *,
        user_id: str,
        username: str,
        auth_provider: str,
        display_name: str | None = None,
        email: str | None = None,
        password_hash: str | None = None,
        must_change_password: bool = False,
        now: float | None = None,
    ) -> None:
        body = {
            "id": user_id,
            "username": username,
            "auth_provider": auth_provider,
            "display_name": display_name,
            "email": email,
            "password_hash": password_hash,
            "must_change_password": must_change_password,
        }
        await self._at(now).create_user(_drop_none(body))

    async def get_user(self, user_id: str) -> UserRecord | None:
        try:
            return self._user(await self._client.get_user(user_id))
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def get_user_by_username(self, username: str) -> UserRecord | None:
        users = (await self._client.list_users(username=username)).users
        return self._user(users[0]) if users else None

    async def list_users(self) -> list[UserRecord]:
        return [self._user(u) for u in (await self._client.list_users()).users]

    async def count_users(self) -> int:
        return (await self._client.list_users(limit=0)).count

    async def set_password(
        self,
        user_id: str,
        *,
        password_hash: str,
        must_change_password: bool = False,
        now: float | None = None,
    ) -> None:
        await self._user_change(
            user_id,
            "password",
            {"password_hash": password_hash, "must_change_password": must_change_password},
            now,
        )

    async def set_user_disabled(
        self, user_id: str, *, disabled: bool, now: float | None = None
    ) -> None:
        await self._user_change(user_id, "disabled", {"disabled": disabled}, now)

    async def update_user_profile(
        self,
        user_id: str,
        *,
        display_name: str | None,
        email: str | None,
        now: float | None = None,
    ) -> None:
        await self._user_change(
            user_id, "profile", {"display_name": display_name, "email": email}, now
        )

    async def delete_user(self, user_id: str) -> None:
        await self._client.delete_user(user_id)

    # --- AuthStore: second factor, sign-in ----------------------------------------------------

    async def set_totp_secret(
        self, user_id: str, *, secret: str | None, now: float | None = None
    ) -> None:
        await self._user_change(user_id, "totp-secret", {"secret": secret}, now)

    async def _secrets(self, user_id: str) -> UserSecrets:
        return await self._client.user_secrets(user_id)

    async def get_totp_secret(self, user_id: str) -> str | None:
        try:
            return (await self._secrets(user_id)).totp_secret
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def enable_totp(
        self, user_id: str, *, recovery_code_hashes: list[str], now: float | None = None
    ) -> None:
        await self._user_change(
            user_id, "totp-enable", {"recovery_code_hashes": list(recovery_code_hashes)}, now
        )

    async def disable_totp(self, user_id: str, *, now: float | None = None) -> None:
        await self._user_change(user_id, "totp-disable", {}, now)

    async def get_recovery_code_hashes(self, user_id: str) -> list[str]:
        try:
            return list((await self._secrets(user_id)).recovery_code_hashes)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return []

    async def consume_recovery_code_hash(
        self, user_id: str, code_hash: str, *, now: float | None = None
    ) -> bool:
        answer = await self._user_change(user_id, "consume", {"recovery_code_hash": code_hash}, now)
        return bool(answer.consumed)

    async def consume_totp_step(self, user_id: str, step: int) -> bool:
        answer = await self._user_change(user_id, "consume", {"totp_step": step}, None)
        return bool(answer.consumed)

    async def record_login_success(self, user_id: str, *, now: float | None = None) -> None:
        await self._user_change(user_id, "login-success", {}, now)

    async def record_login_failure(
        self,
        user_id: str,
        *,
        failed_attempts: int,
        locked_until: float | None,
        now: float | None = None,
    ) -> None:
        body = {
            "failed_attempts": failed_attempts,
            "locked_until": None if locked_until is None else _ms(locked_until),
        }
        await self._user_change(user_id, "login-failure", body, now)

    # --- AuthStore: roles, scope, directory groups ---------------------------------------------

    async def upsert_role(
        self,
        *,
        role_id: str,
        display_name: str,
        description: str | None = None,
        builtin: bool = True,
    ) -> None:
        await self._client.put_role(role_id, display_name, description=description, builtin=builtin)

    async def list_roles(self) -> list[dict[str, Any]]:
        return [
            {
                "id": r.id,
                "display_name": r.display_name,
                "description": r.description,
                "builtin": r.builtin,
            }
            for r in (await self._client.list_roles()).roles
        ]

    async def get_user_role_ids(self, user_id: str) -> list[str]:
        try:
            return list((await self._client.user_roles(user_id)).role_ids)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return []

    async def set_user_roles(
        self,
        user_id: str,
        role_ids: Sequence[str],
        *,
        assigned_by: str | None = None,
        now: float | None = None,
    ) -> None:
        await self._at(now).set_user_roles(user_id, list(role_ids), assigned_by=assigned_by)

    async def set_user_channel_scope(
        self, user_id: str, scope_json: str | None, *, now: float | None = None
    ) -> None:
        await self._user_change(user_id, "channel-scope", {"scope": scope_json}, now)

    async def _group_map(self, which: str) -> list[GroupEntry]:
        return (await self._client.group_map(which)).entries

    async def _set_group_map(self, which: str, entries: Iterable[tuple[str, str]]) -> None:
        await self._client.put_group_map(which, list(entries))

    async def _groups_to_values(self, which: str, groups: Iterable[str]) -> set[str]:
        wanted = {g.strip().lower() for g in groups if g.strip()}
        if not wanted:
            return set()
        return {e.value for e in await self._group_map(which) if e.group.lower() in wanted}

    async def roles_for_ad_groups(self, groups: Iterable[str]) -> set[str]:
        return await self._groups_to_values("roles", groups)

    async def list_ad_group_role_map(self) -> list[dict[str, Any]]:
        return [{"ad_group": e.group, "role_id": e.value} for e in await self._group_map("roles")]

    async def set_ad_group_role_map(self, entries: Iterable[tuple[str, str]]) -> None:
        await self._set_group_map("roles", entries)

    async def channels_for_ad_groups(self, groups: Iterable[str]) -> set[str]:
        return await self._groups_to_values("channels", groups)

    async def list_ad_group_scope_map(self) -> list[dict[str, Any]]:
        return [
            {"ad_group": e.group, "channel_id": e.value} for e in await self._group_map("channels")
        ]

    async def set_ad_group_scope_map(self, entries: Iterable[tuple[str, str]]) -> None:
        await self._set_group_map("channels", entries)

    # --- AuthStore: sessions -------------------------------------------------------------------

    @staticmethod
    def _session(s: SessionView) -> SessionRecord:
        return SessionRecord(
            token_hash=s.token_hash,
            user_id=s.user_id,
            created_at=_s0(s.created_at),
            expires_at=_s0(s.expires_at),
            last_used_at=_s0(s.last_used_at),
            revoked_at=_s(s.revoked_at),
            client=s.client,
            reauth_at=_s(s.reauth_at),
            mfa_verified_at=_s(s.mfa_verified_at),
        )

    @staticmethod
    def _session_at(now: float | None) -> int:
        """A session write's ``at``: the caller's time (its ``now``, else this host's clock) in
        ms. messagefoundry ages sessions by its own clock and revokes one stamped ahead of it, so
        a session's times are the engine's, in every mode; the cluster accepts them within its
        clock-skew bound (30 s, docs/SPEC.md §13.2)."""
        return _ms(time.time() if now is None else now)

    async def _session_change(
        self, token_hash: str, change: str, body: Mapping[str, Any], now: float | None
    ) -> None:
        await self._at(now).change_session(
            token_hash, change, {**body, "at": self._session_at(now)}
        )

    async def create_session(
        self,
        *,
        token_hash: str,
        user_id: str,
        expires_at: float,
        client: str | None = None,
        seed_reauth: bool = True,
        now: float | None = None,
    ) -> None:
        body = {
            "token_hash": token_hash,
            "user_id": user_id,
            "expires_at": _ms(expires_at),
            "client": client,
            "seed_reauth": seed_reauth,
            "at": self._session_at(now),
        }
        await self._at(now).create_session(_drop_none(body))

    async def get_session(self, token_hash: str) -> SessionRecord | None:
        try:
            return self._session(await self._client.get_session(token_hash))
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def list_sessions(self, user_id: str, *, now: float | None = None) -> list[SessionRecord]:
        answer = await self._at(now).user_sessions(user_id)
        return [self._session(s) for s in answer.sessions]

    async def touch_session(self, token_hash: str, *, now: float | None = None) -> None:
        at = time.time() if now is None else now
        last = self._touched.get(token_hash)
        if last is not None and 0 <= at - last < TOUCH_COALESCE_S:
            return  # touched by this handle within the last minute: one write per minute
        await self._session_change(token_hash, "touch", {}, now)
        self._touched[token_hash] = at
        if len(self._touched) > FENCE_MEMORY:
            self._touched.clear()

    async def mark_session_reauthed(
        self, token_hash: str, *, now: float | None = None, client: str | None = None
    ) -> None:
        await self._session_change(token_hash, "reauth", _drop_none({"client": client}), now)

    async def mark_session_mfa_verified(self, token_hash: str, *, now: float | None = None) -> None:
        await self._session_change(token_hash, "mfa-verified", {}, now)

    async def revoke_session(self, token_hash: str, *, now: float | None = None) -> None:
        await self._session_change(token_hash, "revoke", {}, now)

    async def revoke_user_sessions(
        self, user_id: str, *, except_token_hash: str | None = None, now: float | None = None
    ) -> int:
        answer = await self._at(now).revoke_user_sessions(
            user_id, except_token_hash=except_token_hash, at=self._session_at(now)
        )
        return answer.revoked

    async def enforce_session_cap(
        self, user_id: str, *, keep: int, now: float | None = None
    ) -> None:
        if keep <= 0:
            return  # the contract keeps every session then
        await self._at(now).cap_user_sessions(user_id, keep, at=self._session_at(now))

    async def purge_expired_sessions(self, *, now: float | None = None) -> int:
        return (await self._at(now).purge_expired_sessions()).purged


class NeverClaimedError(RaftlaneError):
    """A row was to be completed that no claim ever took: it has no fence to complete it with."""


@dataclass
class _Applied:
    """Whether the write inside :func:`_unless_gone` took effect."""

    applied: bool = True


@contextlib.contextmanager
def _unless_gone(what: str, row_id: int, held: set[int]) -> Iterator[_Applied]:
    """Run one completion or handoff of ``row_id`` as the contract has it: a row that is not
    there, no longer this claim's, or already past this step is a no-op (``applied`` false),
    not an error. A route the server does not serve still raises.

    - ``404`` (no such row, or consumed by a handoff): messagefoundry's "unknown id" no-op;
    - ``wrong_status`` (already done, dead or handed off): the step already happened;
    - ``stale_fence`` (the claim's lease ran out and the row went to another claim): raftlane
      completes a row only under its current claim, so the late completion changes nothing and
      the row is delivered by its current holder (logged: it means a lease shorter than the
      work);
    - a row never claimed: it has no fence, so only a claim may complete it (logged).

    Whichever of these it was, the handle no longer holds the row (``held``: the rows whose
    leases it renews); an error that is none of them leaves it held, for the engine's retry."""
    result = _Applied()
    try:
        yield result
        held.discard(row_id)
        return
    except NotFoundError as e:
        _raise_unless_gone(e)
        result.applied = False
    except WrongStatusError:
        result.applied = False
    except StaleFenceError:
        log.warning("%s of row %s ignored: its claim was taken back (lease expired)", what, row_id)
        result.applied = False
    except NeverClaimedError:
        log.warning("%s of row %s ignored: the row was never claimed", what, row_id)
        result.applied = False
    held.discard(row_id)


def _raise_unless_gone(err: NotFoundError) -> None:
    """A completion of a row the cluster does not have is the contract's no-op; a route the
    server does not serve is still an error."""
    if is_missing_route(err):
        raise err


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
