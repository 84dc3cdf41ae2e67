"""The request and answer types of the raftlane HTTP API, as frozen dataclasses.

Each answer type decodes with :func:`decode` from the JSON the server sends (docs/SPEC.md §10.1).
Members the server adds later are ignored, so an older client keeps working against a newer
node; ``tests/test_openapi.py`` checks these types against the served OpenAPI document.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar, Union

from .errors import DecodeError

__all__ = [
    "Ack",
    "Approval",
    "ApprovalCreated",
    "ApprovalDecided",
    "AuditAnchor",
    "AuditAppended",
    "AuditRow",
    "AuditRows",
    "AuditVerification",
    "Cancelled",
    "CapturedResponse",
    "Claim",
    "ClaimedRow",
    "Claims",
    "ClusterMember",
    "ClusterStatus",
    "ConfigVersion",
    "ConfigWritten",
    "Correlation",
    "DeadLetters",
    "Delivery",
    "DoneNext",
    "Enqueued",
    "Event",
    "Failed",
    "FifoClaim",
    "GroupEntry",
    "GroupMap",
    "GroupMapWritten",
    "HandedOff",
    "Handler",
    "Health",
    "KeyRotation",
    "LaneLease",
    "LaneView",
    "Message",
    "MessageList",
    "MessageView",
    "Namespace",
    "Principal",
    "Purged",
    "Readiness",
    "ReferenceSnapshot",
    "ReferenceWritten",
    "Reingressed",
    "Released",
    "Renewed",
    "Requeued",
    "RetryPolicy",
    "Revoked",
    "RoleAssignmentView",
    "RoleList",
    "RoleView",
    "RoleWritten",
    "RolesAssigned",
    "RowActionResult",
    "RowDetail",
    "SessionChanged",
    "SessionCreated",
    "SessionList",
    "SessionView",
    "SessionsPurged",
    "SessionsRevoked",
    "Stage",
    "StateDigest",
    "StateEntry",
    "StateOp",
    "Stats",
    "TokenCreated",
    "TokenList",
    "UserChanged",
    "UserCreated",
    "UserDeleted",
    "UserList",
    "UserRoles",
    "UserSecrets",
    "UserView",
    "WorkRow",
    "decode",
]


class Stage(str, Enum):
    """A work row's stage; a lane is ``(stage, name)``."""

    INGRESS = "ingress"
    ROUTED = "routed"
    OUTBOUND = "outbound"
    RESPONSE = "response"


# --- producing and reading messages ---------------------------------------------------------


@dataclass(frozen=True)
class Enqueued:
    """``POST /v1/channels/{channel}/messages``; ``duplicate`` when the Idempotency-Key was used."""

    message_id: int
    duplicate: bool
    index: int


@dataclass(frozen=True)
class Correlation:
    correlation_id: int
    root_id: int
    depth: int
    reingress_of_seq: int


@dataclass(frozen=True)
class MessageMeta:
    """A message without its body: what lists carry (SPEC §9.7)."""

    id: int
    channel_id: str
    received_at: int
    status: str
    purged: bool
    source_type: str | None = None
    control_id: str | None = None
    message_type: str | None = None
    error: str | None = None
    summary: str | None = None
    #: JSON text of an object, as stored.
    metadata: str | None = None
    correlation: Correlation | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Message(MessageMeta):
    #: The body: only in ``message(id, body=True)`` (plain reads carry none).
    raw: str | None = None


@dataclass(frozen=True)
class Event:
    ts: int
    event: str
    destination: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Claim:
    owner: str
    lease_expires_at: int
    fence: int


@dataclass(frozen=True)
class RowMeta:
    """A work row without its payload: what the dead-letter list carries."""

    id: int
    message_id: int
    stage: str
    channel_id: str
    status: str
    attempts: int
    next_attempt_at: int
    created_at: int
    updated_at: int
    destination_name: str | None = None
    handler_name: str | None = None
    last_error: str | None = None
    claim: Claim | None = None
    last_fence: int | None = None


@dataclass(frozen=True)
class WorkRow(RowMeta):
    #: The payload: in ``message(id, body=True)`` and ``row(id)``, not in plain reads.
    payload: str | None = None


@dataclass(frozen=True)
class RowDetail:
    """``GET /v1/rows/{id}``: one work row as it is now, its payload decrypted."""

    row: WorkRow


@dataclass(frozen=True)
class CapturedResponse:
    message_id: int
    destination: str
    response_seq: int
    outcome: str
    captured_at: int
    detail: str | None = None
    #: The response body: only in ``message(id, body=True)``.
    body: str | None = None


@dataclass(frozen=True)
class MessageView:
    """``GET /v1/messages/{id}``: the message with its history, rows and captured responses;
    bodies only when asked for, a read recorded as a ``viewed`` event (``viewed_index``)."""

    message: Message
    events: list[Event]
    rows: list[WorkRow]
    responses: list[CapturedResponse]
    viewed_index: int | None = None


@dataclass(frozen=True)
class ListedMessage(MessageMeta):
    """A message as ``GET /v1/messages`` lists it: with its newest event's kind."""

    last_event: str | None = None


@dataclass(frozen=True)
class MessageList:
    messages: list[ListedMessage]
    #: Where the next page starts (pass it as ``cursor``); ``None`` when the list is done.
    next_cursor: int | None = None


@dataclass(frozen=True)
class DeadLetterRow(RowMeta):
    """A dead outbound row with its message's identifying fields."""

    control_id: str | None = None
    message_type: str | None = None
    received_at: int | None = None
    summary: str | None = None


@dataclass(frozen=True)
class DeadLetters:
    dead_letters: list[DeadLetterRow]


@dataclass(frozen=True)
class Requeued:
    """A replay's answer: rows reset to pending."""

    requeued: int
    index: int


@dataclass(frozen=True)
class Stats:
    messages: int
    #: ``{stage: {status: count}}``.
    rows: dict[str, dict[str, int]]
    clock: int
    last_applied: int


# --- work: claims, lanes, leases, row actions -----------------------------------------------


@dataclass(frozen=True)
class ClaimedRow:
    row_id: int
    message_id: int
    stage: str
    channel_id: str
    payload: str
    attempts: int
    fence: int
    lease_expires_at: int
    destination_name: str | None = None
    handler_name: str | None = None


@dataclass(frozen=True)
class Claims:
    items: list[ClaimedRow]


@dataclass(frozen=True)
class FifoClaim:
    """A FIFO claim: the lane's head with its fence, or why there is none (``reason``:
    ``empty``, ``not_due`` with ``due_at``, ``lane_busy`` with ``holder`` and ``expires_at``)."""

    item: ClaimedRow | None
    reason: str | None = None
    due_at: int | None = None
    holder: str | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class LaneLease:
    owner: str
    expires_at: int


@dataclass(frozen=True)
class LaneView:
    #: ``"{stage}:{name}"``.
    lane: str
    #: Pending rows.
    depth: int
    inflight: int
    #: ``created_at`` of the oldest pending row.
    oldest: int | None = None
    holder: LaneLease | None = None
    stage: str = ""
    name: str = ""
    #: How long the oldest pending row has waited, by the cluster's time when read.
    oldest_age_ms: int | None = None


@dataclass(frozen=True)
class LaneList:
    lanes: list[LaneView]
    #: Where the next page starts (pass it as ``cursor``); ``None`` when the list is done.
    next_cursor: str | None = None


@dataclass(frozen=True)
class Released:
    released: bool


@dataclass(frozen=True)
class PauseState:
    """A destination after a pause or a resume; ``changed`` is false when it already was so."""

    destination: str
    paused: bool
    changed: bool


@dataclass(frozen=True)
class PausedDestination:
    destination: str
    #: The principal that paused it.
    paused_by: str
    #: When (the cluster's time, ms since the epoch).
    paused_at: int
    reason: str | None = None


@dataclass(frozen=True)
class PausedDestinations:
    destinations: list[PausedDestination]


@dataclass(frozen=True)
class Cancelled:
    cancelled: int


@dataclass(frozen=True)
class Renewed:
    renewed: int


@dataclass(frozen=True)
class Handler:
    """One handler of a ``route``, with the payload its routed row gets."""

    handler: str
    payload: str = ""


@dataclass(frozen=True)
class Delivery:
    """One outbound row of a ``handoff`` or ``transform``."""

    destination: str
    payload: str = ""


@dataclass(frozen=True)
class StateOp:
    """A transform-state write of a ``transform``; ``value`` is any JSON value."""

    namespace: str
    key: str
    value: Any


#: ``RetryPolicy.max_attempts`` for "no limit: retry with backoff forever" (docs/SPEC.md §5.2).
UNLIMITED_ATTEMPTS = -1


@dataclass(frozen=True)
class RetryPolicy:
    """The retry policy of a ``fail``: ``multiplier`` from 1.0 to 100.0, sent as
    ``multiplier_milli`` (thousandths, the config's spelling, docs/SPEC.md §5.2);
    ``max_attempts``: at least 1, :data:`UNLIMITED_ATTEMPTS` (``-1``) to retry forever, or
    ``None`` for the server's default limit (10 attempts). ``backoff_ms`` and
    ``max_backoff_ms`` are at most a day."""

    backoff_ms: int
    multiplier: float
    max_backoff_ms: int
    max_attempts: int | None = None

    @property
    def multiplier_milli(self) -> int:
        """The multiplier as it travels: thousandths, rounded (1.5 -> 1500)."""
        return round(self.multiplier * 1000)


@dataclass(frozen=True)
class HandedOff:
    """``route``, ``handoff``, ``transform``: ``applied`` is false when the row was already
    consumed (a retried handoff)."""

    applied: bool
    index: int


@dataclass(frozen=True)
class Ack:
    """``done``, ``response``, ``dead``."""

    ok: bool
    index: int


@dataclass(frozen=True)
class HandedOnNext:
    """``route``, ``handoff`` or ``transform`` with ``claim_next``: ``next`` is the lane's next
    claim (absent when the handoff had already been applied and made none)."""

    applied: bool
    index: int
    next: FifoClaim | None = None


@dataclass(frozen=True)
class DoneNext:
    """``done`` with ``claim_next``: the row is done and ``next`` is the lane's next claim."""

    ok: bool
    index: int
    next: FifoClaim


@dataclass(frozen=True)
class Failed:
    dead: bool
    next_attempt_at: int
    index: int


@dataclass(frozen=True)
class Reingressed:
    child_message_id: int | None
    index: int


@dataclass(frozen=True)
class RowActionResult:
    """One result of ``POST /v1/rows/actions``: ``answer`` is the action's own answer (as JSON)
    when it succeeded, else ``error`` is the :class:`~raftlane.errors.ApiError` it got."""

    answer: dict[str, Any] | None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# --- configuration --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigVersion:
    version: int
    config: dict[str, Any]
    set_at: int
    set_by: str


@dataclass(frozen=True)
class ConfigWritten:
    version: int
    index: int


# --- audit ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditAppended:
    seq: int
    hash: str
    index: int


@dataclass(frozen=True)
class AuditRow:
    seq: int
    ts: int
    action: str
    org: str
    prev_hash: str
    hash: str
    actor: str | None = None
    channel: str | None = None
    detail: str | None = None
    #: The authenticated principal that wrote the row when it names another ``actor`` (the row
    #: reads "actor via principal", docs/SPEC.md §9.8); ``None`` when the actor wrote it.
    principal: str | None = None


@dataclass(frozen=True)
class AuditRows:
    org: str
    rows: list[AuditRow]


@dataclass(frozen=True)
class AuditAnchor:
    org: str
    count: int
    head: str
    era: int


@dataclass(frozen=True)
class AuditVerification:
    ok: bool
    count: int
    head_hash: str
    eras: int
    first_bad_seq: int | None = None
    reason: str | None = None


# --- transform state, reference sets, retention ---------------------------------------------


@dataclass(frozen=True)
class Namespace:
    namespace: str
    version: int
    #: Only when asked for (``GET /v1/state/{namespace}?entries=true``).
    entries: list[StateEntry] | None = None


@dataclass(frozen=True)
class NamespaceList:
    namespaces: list[Namespace]


@dataclass(frozen=True)
class ReferenceSetInfo:
    """A reference set without its rows."""

    name: str
    version: int
    synced_at: int
    row_count: int
    #: The writer's text version (``"v1"``), when it gave one.
    label: str | None = None


@dataclass(frozen=True)
class ReferenceSetList:
    sets: list[ReferenceSetInfo]


@dataclass(frozen=True)
class StorageStats:
    """What the state holds (``size_bytes``: every key and value, its logical size)."""

    messages: int
    events: int
    size_bytes: int
    last_applied: int


@dataclass(frozen=True)
class StateEntry:
    namespace: str
    key: str
    value: Any
    set_at: int
    message_id: int | None = None


@dataclass(frozen=True)
class ReferenceWritten:
    row_count: int
    index: int


@dataclass(frozen=True)
class ReferenceSnapshot:
    version: int
    rows: dict[str, str]
    synced_at: int
    row_count: int
    #: The writer's text version (``"v1"``), for a set last written with one.
    label: str | None = None


@dataclass(frozen=True)
class Purged:
    purged: int
    index: int


# --- approvals, tokens, keys ----------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalCreated:
    id: int
    index: int


@dataclass(frozen=True)
class Approval:
    id: int
    operation: str
    #: JSON text.
    params: str
    requester: str
    requested_at: int
    status: str
    expires_at: int
    approver: str | None = None
    decided_at: int | None = None
    #: The caller's key, for an approval made by ``POST /v1/approvals/keyed``.
    key: str | None = None


@dataclass(frozen=True)
class ApprovalList:
    approvals: list[Approval]


@dataclass(frozen=True)
class KeyedDecided:
    """A keyed approval's decision as recorded."""

    key: str
    id: int
    status: str
    index: int


@dataclass(frozen=True)
class ApprovalDecided:
    id: int
    approved: bool
    index: int


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    created_at: int
    channels: list[str] | None = None


@dataclass(frozen=True)
class TokenList:
    tokens: list[Principal]


@dataclass(frozen=True)
class TokenCreated:
    """The token is shown once."""

    name: str
    role: str
    token: str
    index: int


@dataclass(frozen=True)
class Revoked:
    revoked: bool
    index: int


@dataclass(frozen=True)
class KeyRotation:
    active_key: str
    rewritten: int
    skipped: int
    conflicts: int
    batches: int


# --- cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterMember:
    id: int
    addr: str
    voter: bool


@dataclass(frozen=True)
class ClusterStatus:
    node_id: int
    term: int
    last_log_index: int
    last_applied: int
    membership: list[ClusterMember] = field(default_factory=list)
    leader_id: int | None = None


@dataclass(frozen=True)
class StateDigest:
    node_id: int
    last_applied: int
    digest: str


@dataclass(frozen=True)
class LeaderTransferred:
    """``POST /v1/cluster/leader``: the leader once the transfer is done, as the answering node
    sees it."""

    leader_id: int | None = None


@dataclass(frozen=True)
class LogFormatStatus:
    """``GET``/``POST /v1/cluster/log-format``: the cluster's log format as the answering node
    applied it, and every format that node's build reads."""

    node_id: int
    log_format: int
    reads: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SnapshotTaken:
    node_id: int
    #: The last log index the node's snapshot covers.
    index: int


@dataclass(frozen=True)
class Backup:
    """A backup :meth:`raftlane.Client.backup` wrote (``GET /v1/cluster/snapshot``)."""

    path: str
    #: The last log index the backup reflects (its ``x-raftlane-snapshot-index`` header).
    index: int
    #: The node that served it.
    node_id: int
    #: The file's size.
    bytes: int


@dataclass(frozen=True)
class Health:
    status: str


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str | None = None


# --- the engine's users, roles and sessions (docs/SPEC.md §13) ---------------------------------
# Times are ms since the epoch; password, recovery-code and session-token values are the engine's
# hashes, opaque here.


@dataclass(frozen=True)
class UserCreated:
    """``POST /v1/users`` (201)."""

    index: int
    id: str


@dataclass(frozen=True)
class UserView:
    """An engine user as the API shows it: everything but its second-factor secrets
    (:class:`UserSecrets`)."""

    id: str
    username: str
    #: ``local`` or ``ad``.
    auth_provider: str
    disabled: bool
    created_at: int
    updated_at: int
    must_change_password: bool
    failed_attempts: int
    totp_enabled: bool
    display_name: str | None = None
    email: str | None = None
    last_login_at: int | None = None
    password_hash: str | None = None
    password_changed_at: int | None = None
    locked_until: int | None = None
    #: JSON text listing the channels the user may see; ``None``: every channel.
    channel_scope: str | None = None
    totp_enrolled_at: int | None = None


@dataclass(frozen=True)
class UserList:
    """``GET /v1/users``: users by username; ``count`` is how many match before the limit
    (``limit=0`` answers only the count)."""

    users: list[UserView]
    count: int


@dataclass(frozen=True)
class UserSecrets:
    """``GET /v1/users/{id}/secrets``: the second-factor values the user view leaves out."""

    recovery_code_hashes: list[str]
    totp_secret: str | None = None
    last_totp_step: int | None = None


@dataclass(frozen=True)
class UserDeleted:
    """``DELETE /v1/users/{id}``: ``deleted`` is false for an unknown user."""

    index: int
    deleted: bool


@dataclass(frozen=True)
class UserChanged:
    """``POST /v1/users/{id}/{change}``: ``changed`` is false for an unknown user; a
    ``consume`` also answers ``consumed`` (false: nothing consumed, or an unknown user)."""

    index: int
    changed: bool
    consumed: bool | None = None


@dataclass(frozen=True)
class RoleView:
    id: str
    display_name: str
    builtin: bool
    description: str | None = None


@dataclass(frozen=True)
class RoleList:
    """``GET /v1/roles``: every role, by id."""

    roles: list[RoleView]


@dataclass(frozen=True)
class RoleWritten:
    """``PUT /v1/roles/{id}``."""

    index: int
    id: str


@dataclass(frozen=True)
class RoleAssignmentView:
    """One role given to a user: when and by whom."""

    role_id: str
    assigned_at: int
    assigned_by: str | None = None


@dataclass(frozen=True)
class UserRoles:
    """``GET /v1/users/{id}/roles``: the user's role ids, sorted, and their assignments (both
    empty for an unknown user)."""

    role_ids: list[str]
    assignments: list[RoleAssignmentView]


@dataclass(frozen=True)
class RolesAssigned:
    """``PUT /v1/users/{id}/roles``: how many roles the user now has."""

    index: int
    assigned: int


@dataclass(frozen=True)
class GroupEntry:
    """A directory group and the role id (map ``roles``) or channel (map ``channels``) it
    gives."""

    group: str
    value: str


@dataclass(frozen=True)
class GroupMap:
    """``GET /v1/directory-groups/{map}``: the map's entries (groups normalised as stored,
    sorted); asked with ``groups``, also ``values``: what the map gives any of them, sorted."""

    map: str
    entries: list[GroupEntry]
    values: list[str] | None = None


@dataclass(frozen=True)
class GroupMapWritten:
    """``PUT /v1/directory-groups/{map}``: the entries stored after normalisation."""

    index: int
    stored: int


@dataclass(frozen=True)
class SessionCreated:
    """``POST /v1/sessions`` (201)."""

    index: int
    token_hash: str


@dataclass(frozen=True)
class SessionView:
    """An engine user's session, by its token's hash."""

    token_hash: str
    user_id: str
    created_at: int
    expires_at: int
    last_used_at: int
    revoked_at: int | None = None
    client: str | None = None
    reauth_at: int | None = None
    mfa_verified_at: int | None = None


@dataclass(frozen=True)
class SessionList:
    """``GET /v1/users/{id}/sessions``: the user's sessions neither revoked nor expired at the
    request's time, most recently used first."""

    sessions: list[SessionView]


@dataclass(frozen=True)
class SessionChanged:
    """``POST /v1/sessions/{token_hash}/{change}``: ``changed`` is false for an unknown
    session (or revoking a revoked one)."""

    index: int
    changed: bool


@dataclass(frozen=True)
class SessionsRevoked:
    """``POST /v1/users/{id}/sessions/revoke`` and ``.../cap``: the sessions revoked."""

    index: int
    revoked: int


@dataclass(frozen=True)
class SessionsPurged:
    """``POST /v1/sessions/purge-expired``: the sessions deleted (expired before the request's
    time)."""

    index: int
    purged: int


# --- decoding -------------------------------------------------------------------------------

T = TypeVar("T")

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def _convert(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise DecodeError(f"{where}: null where {tp} was expected")
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _convert(inner[0], value, where)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = typing.get_args(tp)
        return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise DecodeError(f"{where}: expected an object, got {type(value).__name__}")
        _, item = typing.get_args(tp)
        return {k: _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return decode(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise DecodeError(f"{where}: expected a boolean, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DecodeError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DecodeError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise DecodeError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def decode(cls: type[T], value: Any, where: str = "answer") -> T:
    """``value`` (parsed JSON) as a ``cls``; a missing required member or a member of the wrong
    type is a :class:`~raftlane.errors.DecodeError`. Unknown members are ignored."""
    if not isinstance(value, dict):
        raise DecodeError(f"{where}: expected an object for {cls.__name__}, got {value!r}")
    kwargs: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in value:
            kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DecodeError(f"{where}: {cls.__name__} needs member {f.name!r}")
    return cls(**kwargs)


# --- engine coordination (docs/SPEC.md §15) ---------------------------------------------------


@dataclass(frozen=True)
class HeartbeatAck:
    #: The log index the heartbeat was applied at.
    index: int


@dataclass(frozen=True)
class EngineNode:
    """One engine process of the registry."""

    node_id: str
    started_at: int
    last_seen: int
    #: ``active``, or ``left`` after a clean stop.
    status: str
    host: str | None = None
    pid: int | None = None


@dataclass(frozen=True)
class EngineNodes:
    """Every registered engine process, and the cluster's time of the read (judge a node's
    freshness by ``now - last_seen``)."""

    nodes: list[EngineNode]
    now: int


@dataclass(frozen=True)
class Leadership:
    """A group's leadership lease as it stands (``owner`` ``None``: nobody holds it), read at
    ``now``; ``fence`` changes exactly when the owner does."""

    group: str
    now: int
    owner: str | None = None
    #: Live through this time inclusive.
    expires_at: int | None = None
    fence: int | None = None


# --- the dashboard's figures (docs/SPEC.md §14.11) ----------------------------------------------


@dataclass(frozen=True)
class InboundTraffic:
    """One channel's inbound traffic: messages received since ``since``, the errored ones among
    them, and its newest message ever (ms)."""

    channel: str
    read: int
    errored: int
    last_at: int | None = None


@dataclass(frozen=True)
class DestinationTraffic:
    """One (channel, destination)'s outbound traffic: rows pending or in flight now, done and
    dead since ``since``, done within the rate window, and times in ms."""

    channel: str
    destination: str
    queue_depth: int
    written: int
    dead: int
    recent_done: int
    oldest_pending_at: int | None = None
    last_done_at: int | None = None


@dataclass(frozen=True)
class ConnectionTraffic:
    """``GET /v1/metrics/connections``: channels and destinations in name order."""

    inbound: list[InboundTraffic]
    destinations: list[DestinationTraffic]


@dataclass(frozen=True)
class Viewed:
    #: The log index the ``viewed`` event was applied at.
    index: int


@dataclass(frozen=True)
class Count:
    count: int


@dataclass(frozen=True)
class CounterValue:
    name: str
    value: int


@dataclass(frozen=True)
class HeldLanes:
    owner: str
    lanes: list[str]


@dataclass(frozen=True)
class NodeLeft:
    left: bool


@dataclass(frozen=True)
class OwnerBinding:
    owner: str
    principal: str | None = None
    index: int | None = None
    changed: bool | None = None


@dataclass(frozen=True)
class Reclaimed:
    index: int
    reclaimed: int


@dataclass(frozen=True)
class ResetRows:
    index: int
    reset: int


@dataclass(frozen=True)
class Recovered:
    index: int
    recovered: int


@dataclass(frozen=True)
class Swept:
    index: int
    dead: int


@dataclass(frozen=True)
class Resigned:
    resigned: bool
    index: int


@dataclass(frozen=True)
class RowActionResults:
    results: list[Any]
