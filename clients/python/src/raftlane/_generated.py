"""The API's wire types as frozen dataclasses, generated from api/openapi.json by
clients/python/scripts/gen_types.py: do not edit; change the contract (or the
script's tables) and run the script again. ``raftlane.types`` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Ack",
    "Approval",
    "ApprovalCreated",
    "ApprovalDecided",
    "ApprovalList",
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
    "ConnectionTraffic",
    "Correlation",
    "Count",
    "CounterValue",
    "DeadLetterRow",
    "DeadLetters",
    "DestinationTraffic",
    "DoneNext",
    "EngineNode",
    "EngineNodes",
    "Enqueued",
    "Event",
    "Failed",
    "FifoClaim",
    "GroupEntry",
    "GroupMap",
    "GroupMapWritten",
    "HandedOff",
    "HandedOnNext",
    "Health",
    "HeartbeatAck",
    "HeldLanes",
    "InboundTraffic",
    "KeyRotation",
    "KeyedDecided",
    "LaneLease",
    "LaneList",
    "LaneView",
    "LeaderTransferred",
    "Leadership",
    "ListedMessage",
    "LogFormatStatus",
    "Message",
    "MessageList",
    "MessageView",
    "Namespace",
    "NamespaceList",
    "NodeLeft",
    "OwnerBinding",
    "PauseState",
    "PausedDestination",
    "PausedDestinations",
    "Principal",
    "Purged",
    "Readiness",
    "Reclaimed",
    "Recovered",
    "ReferenceSetInfo",
    "ReferenceSetList",
    "ReferenceSnapshot",
    "ReferenceWritten",
    "Reingressed",
    "Released",
    "RemovedLearner",
    "Renewed",
    "Requeued",
    "ResetRows",
    "Resigned",
    "Revoked",
    "RoleAssignmentView",
    "RoleList",
    "RoleView",
    "RoleWritten",
    "RolesAssigned",
    "RowActionResults",
    "RowDetail",
    "SessionChanged",
    "SessionCreated",
    "SessionList",
    "SessionView",
    "SessionsPurged",
    "SessionsRevoked",
    "SnapshotTaken",
    "StateDigest",
    "StateEntry",
    "Stats",
    "StorageStats",
    "Swept",
    "TokenCreated",
    "TokenList",
    "UserChanged",
    "UserCreated",
    "UserDeleted",
    "UserList",
    "UserRoles",
    "UserSecrets",
    "UserView",
    "Viewed",
    "WorkRow",
]


@dataclass(frozen=True)
class Enqueued:
    """``POST /v1/channels/{channel}/messages``: 201 for a new message, 200 for a duplicate of an
    earlier idempotency key (then ``message_id`` is the first message's)."""

    message_id: int
    duplicate: bool
    #: The log index the enqueue was applied at.
    index: int


@dataclass(frozen=True)
class Correlation:
    """Correlation of a message created by re-ingesting a captured response."""

    #: The message whose response produced this one.
    correlation_id: int
    #: The first message of the chain.
    root_id: int
    #: 1 for a direct child of an original message.
    depth: int
    #: The ``response_seq`` of the captured response that was re-ingested.
    reingress_of_seq: int


@dataclass(frozen=True)
class Event:
    """One event of a message's history."""

    ts: int
    event: str
    destination: str | None
    detail: str | None


@dataclass(frozen=True)
class Claim:
    """Who holds an inflight row, until when, under which fence. Present exactly when the row is
    inflight, so a pending row with an owner cannot be represented."""

    owner: str
    lease_expires_at: int
    fence: int


@dataclass(frozen=True)
class Message:
    """The message of ``MessageView``: its body only when asked for."""

    id: int
    channel_id: str
    received_at: int
    status: str
    purged: bool
    source_type: str | None
    control_id: str | None
    message_type: str | None
    error: str | None
    summary: str | None
    #: A JSON object, as its text.
    metadata: str | None
    correlation: Correlation | None
    #: The producer's idempotency key.
    idempotency_key: str | None
    raw: str | None = None


@dataclass(frozen=True)
class WorkRow:
    """A row of ``MessageView``: its payload only when bodies were asked for."""

    id: int
    message_id: int
    stage: str
    channel_id: str
    status: str
    attempts: int
    next_attempt_at: int
    created_at: int
    updated_at: int
    destination_name: str | None
    handler_name: str | None
    last_error: str | None
    claim: Claim | None
    last_fence: int | None
    payload: str | None = None


@dataclass(frozen=True)
class CapturedResponse:
    """A captured response of ``MessageView``: its body only when bodies were asked for."""

    message_id: int
    destination: str
    response_seq: int
    outcome: str
    captured_at: int
    detail: str | None
    body: str | None = None


@dataclass(frozen=True)
class MessageView:
    """``GET /v1/messages/{id}``: a message with its events, rows and captured responses. Bodies
    (``message.raw``, ``rows[].payload``, ``responses[].body``) only with ``?body=true``, a
    read that records a ``viewed`` event (its index in ``viewed_index``). Members in
    alphabetical order, the order clients read on the wire."""

    message: Message
    events: list[Event]
    rows: list[WorkRow]
    responses: list[CapturedResponse]
    #: The log index of the ``viewed`` event a body read recorded.
    viewed_index: int | None = None


@dataclass(frozen=True)
class ListedMessage:
    """A message of ``GET /v1/messages`` with the kind of its newest event."""

    id: int
    channel_id: str
    received_at: int
    status: str
    purged: bool
    source_type: str | None
    control_id: str | None
    message_type: str | None
    error: str | None
    summary: str | None
    #: A JSON object, as its text.
    metadata: str | None
    correlation: Correlation | None
    #: The producer's idempotency key.
    idempotency_key: str | None
    last_event: str | None


@dataclass(frozen=True)
class MessageList:
    """``GET /v1/messages``: newest first, only channels the token may see, without bodies (a
    body is read with ``GET /v1/messages/{id}?body=true``, which records the view:
    docs/SPEC.md §9.7)."""

    messages: list[ListedMessage]
    #: More may follow: pass it as ``cursor`` for the next page (absent: the list is done). A page
    #: holds at most ``limit`` (1 to 1000) messages and examines at most 10,000.
    next_cursor: int | None = None


@dataclass(frozen=True)
class DeadLetterRow:
    """A dead outbound row (its members as in ``GET /v1/messages/{id}`` ``rows[]``, without the
    payload) with its message's ``control_id``, ``message_type``, ``received_at`` and
    ``summary``, which a dead-letter screen shows beside it."""

    id: int
    message_id: int
    stage: str
    channel_id: str
    status: str
    attempts: int
    next_attempt_at: int
    created_at: int
    updated_at: int
    destination_name: str | None
    handler_name: str | None
    last_error: str | None
    claim: Claim | None
    last_fence: int | None
    control_id: str | None
    message_type: str | None
    #: Absent only for a row whose message is gone.
    received_at: int | None
    summary: str | None


@dataclass(frozen=True)
class DeadLetters:
    """``GET /v1/dead-letters``: dead outbound rows without their payloads, each with its
    message's identifying fields."""

    dead_letters: list[DeadLetterRow]


@dataclass(frozen=True)
class Requeued:
    """``POST /v1/messages/{id}/replay`` and ``POST /v1/dead-letters/replay``: how many rows were
    put back to pending."""

    requeued: int
    index: int


@dataclass(frozen=True)
class Stats:
    """``GET /v1/stats``: row counts by stage and status, for every channel. Members in
    alphabetical order, the order clients read on the wire."""

    messages: int
    #: stage → status → rows.
    rows: dict[str, dict[str, int]]
    #: The state machine's clock (ms since the epoch).
    clock: int
    last_applied: int


@dataclass(frozen=True)
class StorageStats:
    """``GET /v1/stats/storage``: how much the replicated state holds."""

    messages: int
    events: int
    #: Bytes of every key and value of the state (its logical size; a node's files also hold the
    #: Raft log and what compaction has not reclaimed yet).
    size_bytes: int
    last_applied: int


@dataclass(frozen=True)
class Count:
    """``GET /v1/messages/count`` and ``GET /v1/dead-letters/count``: how many pass the filters."""

    count: int


@dataclass(frozen=True)
class Viewed:
    """``POST /v1/messages/{id}/viewed``: the ``viewed`` event was appended."""

    index: int


@dataclass(frozen=True)
class InboundTraffic:
    """One channel's inbound traffic."""

    channel: str
    #: Messages received at or after ``since``.
    read: int
    #: Of those, the ones in status ``error``.
    errored: int
    #: The channel's newest message (ms), whenever it came.
    last_at: int | None


@dataclass(frozen=True)
class DestinationTraffic:
    """One (channel, destination)'s outbound traffic."""

    channel: str
    destination: str
    #: Rows pending or in flight now.
    queue_depth: int
    #: Rows done since ``since``.
    written: int
    #: Rows dead-lettered since ``since``.
    dead: int
    #: Rows done within the rate window before the request's time.
    recent_done: int
    #: The oldest pending row's creation time (ms).
    oldest_pending_at: int | None
    #: The newest done row's completion time (ms).
    last_done_at: int | None


@dataclass(frozen=True)
class ConnectionTraffic:
    """``GET /v1/metrics/connections?since=&rate_window_ms=``, channels and destinations in name
    order."""

    inbound: list[InboundTraffic]
    destinations: list[DestinationTraffic]


@dataclass(frozen=True)
class ClaimedRow:
    """A claimed row as handed to a worker."""

    row_id: int
    message_id: int
    stage: str
    channel_id: str
    payload: str
    attempts: int
    fence: int
    lease_expires_at: int
    destination_name: str | None
    handler_name: str | None
    #: When the row was created (ms since the epoch): for an ingress row the message's receipt, for
    #: a later stage its handoff. The same at every claim of the row, so a worker that runs the row
    #: again sees the same ingest time. Absent while the cluster writes a log format before 4.
    created_at: int | None = None


@dataclass(frozen=True)
class Claims:
    """``POST /v1/claims``: the rows claimed, payloads decrypted (possibly none)."""

    items: list[ClaimedRow]


@dataclass(frozen=True)
class FifoClaim:
    """``POST /v1/lanes/{stage}/{lane}/claim`` (and ``next`` of a ``done`` with ``claim_next``):
    the lane's head with its fence, or why there is none. Absent members are not sent:
    ``{"item": {...}}``, or ``{"item": null, "reason": "not_due", "due_at": ...}``, or
    ``{"item": null, "reason": "lane_busy", "holder": ..., "expires_at": ...}``."""

    item: ClaimedRow | None
    reason: str | None = None
    due_at: int | None = None
    holder: str | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class LaneLease:
    """Who owns a lane until when (live through ``expires_at`` inclusive)."""

    owner: str
    expires_at: int


@dataclass(frozen=True)
class LaneView:
    """``GET /v1/lanes/{stage}/{name}``: the lane's depth, oldest row and holder; one item of
    ``GET /v1/lanes``. Members in alphabetical order, the order clients read on the wire;
    absent values are ``null``."""

    #: ``"{stage}:{name}"``.
    lane: str
    #: Pending rows.
    depth: int
    #: Inflight rows.
    inflight: int
    #: ``created_at`` of the oldest pending row.
    oldest: int | None
    #: The lane's lease while it is live.
    holder: LaneLease | None
    stage: str
    #: The lane's name: a channel's, or for ``outbound`` a destination's.
    name: str
    #: How long the oldest pending row has waited, by the cluster's time when read.
    oldest_age_ms: int | None


@dataclass(frozen=True)
class LaneList:
    """``GET /v1/lanes``: a page of lanes in the store's order: stage (ingress, routed, outbound,
    response), then name, shorter names first."""

    lanes: list[LaneView]
    #: Pass as ``cursor`` for the next page (``"{stage}:{name}"`` of this page's last lane);
    #: ``null``: this was the last page.
    next_cursor: str | None


@dataclass(frozen=True)
class Released:
    """``POST /v1/lanes/{stage}/{name}/release``: whether ``owner`` held the lane (and now does
    not)."""

    released: bool


@dataclass(frozen=True)
class PauseState:
    """The answer to a pause or a resume: the destination's state afterwards, and whether this
    call changed it (``false``: it already was so)."""

    destination: str
    paused: bool
    changed: bool


@dataclass(frozen=True)
class PausedDestination:
    """One paused destination."""

    destination: str
    #: The principal that paused it.
    paused_by: str
    #: When (the cluster's time, ms since the epoch).
    paused_at: int
    reason: str | None = None


@dataclass(frozen=True)
class PausedDestinations:
    """``GET /v1/destinations/paused``: every paused destination, in name order."""

    destinations: list[PausedDestination]


@dataclass(frozen=True)
class Cancelled:
    """``POST /v1/lanes/outbound/{dest}/cancel``: how many pending rows were cancelled."""

    cancelled: int


@dataclass(frozen=True)
class Renewed:
    """``POST /v1/leases/renew``: how many leases were extended."""

    renewed: int


@dataclass(frozen=True)
class Reclaimed:
    """``POST /v1/leases/reclaim``: in-flight rows whose lease had expired, now pending again."""

    index: int
    reclaimed: int


@dataclass(frozen=True)
class ResetRows:
    """``POST /v1/leases/reset``: every in-flight row (of the stage), whatever its lease, now
    pending again. For a single process starting up; in a cluster it takes live rows from
    their holders."""

    index: int
    reset: int


@dataclass(frozen=True)
class Recovered:
    """``POST /v1/leases/recover``: rows returned to pending."""

    index: int
    recovered: int


@dataclass(frozen=True)
class Swept:
    """``POST /v1/dead-letters/sweep``: rows dead-lettered."""

    index: int
    dead: int


@dataclass(frozen=True)
class RowDetail:
    """``GET /v1/rows/{id}``: one work row as it is now (payload decrypted)."""

    row: WorkRow


@dataclass(frozen=True)
class HandedOff:
    """``route``, ``handoff``, ``transform``, ``response``: ``applied`` is ``false`` when the row
    was already consumed under this fence (a retry)."""

    applied: bool
    index: int
    #: With ``claim_next``: the lane's FIFO claim.
    next: FifoClaim | None = None


@dataclass(frozen=True)
class HandedOnNext:
    """``route``, ``handoff``, ``transform``, ``response``: ``applied`` is ``false`` when the row
    was already consumed under this fence (a retry)."""

    applied: bool
    index: int
    #: With ``claim_next``: the lane's FIFO claim.
    next: FifoClaim | None = None


@dataclass(frozen=True)
class Ack:
    """``done`` (and ``dead``); with ``claim_next``, ``next`` is the lane's FIFO claim."""

    ok: bool
    index: int
    next: FifoClaim | None = None


@dataclass(frozen=True)
class DoneNext:
    """``done`` (and ``dead``); with ``claim_next``, ``next`` is the lane's FIFO claim."""

    ok: bool
    index: int
    next: FifoClaim


@dataclass(frozen=True)
class Failed:
    """``fail``: dead-lettered, or due again at ``next_attempt_at``."""

    dead: bool
    next_attempt_at: int
    index: int


@dataclass(frozen=True)
class Reingressed:
    """``reingress``: the child message, or ``null`` when the depth cap dead-lettered the row."""

    child_message_id: int | None
    index: int


@dataclass(frozen=True)
class RowActionResults:
    """``POST /v1/rows/actions``: one result per action, in request order."""

    results: list[dict[str, Any]]


@dataclass(frozen=True)
class ConfigVersion:
    """The body of ``PUT /v1/config`` is a ``ConfigDoc`` (re-exported at the crate root). ``GET
    /v1/config`` and ``GET /v1/config/versions/{v}``: a configuration version. Members in
    alphabetical order, the order clients read on the wire."""

    version: int
    config: dict[str, Any]
    #: When it was written (ms since the epoch).
    set_at: int
    #: The principal that wrote it.
    set_by: str


@dataclass(frozen=True)
class ConfigWritten:
    """``PUT /v1/config``: the version the new configuration got, and the log index it was
    applied at."""

    version: int
    index: int


@dataclass(frozen=True)
class AuditAppended:
    """``POST /v1/audit`` and ``POST /v1/audit/seal``: the row's place in the chain."""

    seq: int
    #: Hex SHA-256 of the row.
    hash: str
    index: int


@dataclass(frozen=True)
class AuditRow:
    """One audit row. Members in alphabetical order, the order clients read on the wire; absent
    values are ``null``."""

    seq: int
    ts: int
    action: str
    org: str
    #: Hex SHA-256 of the previous row.
    prev_hash: str
    #: Hex SHA-256.
    hash: str
    actor: str | None
    channel: str | None
    detail: str | None
    #: The authenticated principal that wrote the row when the caller named its ``actor`` (``POST
    #: /v1/audit`` with ``actor``): the row reads "``actor`` via ``principal``" (docs/SPEC.md §9.8).
    #: ``null`` when the actor is the principal that wrote it.
    principal: str | None


@dataclass(frozen=True)
class AuditRows:
    """``GET /v1/audit``: an org's rows from ``from``, those about channels the token may see."""

    org: str
    rows: list[AuditRow]


@dataclass(frozen=True)
class AuditAnchor:
    """``GET /v1/audit/anchor``: the chain's tip, to keep elsewhere and verify against later."""

    org: str
    #: Rows in the chain.
    count: int
    #: Hex SHA-256 of the last row.
    head: str
    #: Seals so far.
    era: int


@dataclass(frozen=True)
class AuditVerification:
    """``GET /v1/audit/verify``: the result of recomputing the chain. Members in the order the
    server has always sent them (alphabetical); absent values are ``null``."""

    ok: bool
    count: int
    head_hash: str
    eras: int
    #: The first row that failed.
    first_bad_seq: int | None
    #: Why it failed.
    reason: str | None


@dataclass(frozen=True)
class Namespace:
    """``GET /v1/state/{namespace}``: the namespace's version (bumped by every write to it), and
    with ``?entries=true`` its entries read at that version (how a follower's cache
    converges)."""

    namespace: str
    version: int
    #: Only with ``?entries=true``: every entry, in key order.
    entries: list[StateEntry] | None = None


@dataclass(frozen=True)
class NamespaceList:
    """``GET /v1/state``: every namespace with its version, in name order (a namespace whose
    entries were all purged stays, with the version the purge gave it)."""

    namespaces: list[Namespace]


@dataclass(frozen=True)
class StateEntry:
    """``GET /v1/state/{namespace}/{key}``: one transform-state entry. Members in the order the
    server has always sent them (alphabetical)."""

    namespace: str
    key: str
    #: The JSON the transform wrote (a string when the stored text is not JSON).
    value: Any
    set_at: int
    #: The message whose transform wrote it.
    message_id: int


@dataclass(frozen=True)
class ReferenceSetInfo:
    """One reference set of ``GET /v1/reference``, without its rows."""

    name: str
    version: int
    synced_at: int
    row_count: int
    label: str | None = None


@dataclass(frozen=True)
class ReferenceSetList:
    """``GET /v1/reference``: every reference set, in name order."""

    sets: list[ReferenceSetInfo]


@dataclass(frozen=True)
class ReferenceWritten:
    """``PUT /v1/reference/{name}``: rows written."""

    row_count: int
    index: int


@dataclass(frozen=True)
class ReferenceSnapshot:
    """``GET /v1/reference/{name}``: a reference snapshot, values decrypted. Members in the order
    the server has always sent them (alphabetical)."""

    version: int
    rows: dict[str, str]
    synced_at: int
    row_count: int
    #: The writer's text version, for a set last written with one.
    label: str | None = None


@dataclass(frozen=True)
class Purged:
    """``POST /v1/retention/purge``: how many records were purged."""

    purged: int
    index: int


@dataclass(frozen=True)
class ApprovalCreated:
    """``POST /v1/approvals`` (201): the approval's id."""

    id: int
    index: int


@dataclass(frozen=True)
class Approval:
    """``GET /v1/approvals/{id}``: an approval, its ``status`` as of the read (``expired`` once
    past ``expires_at``). Members in the order the server has always sent them (alphabetical);
    absent values are ``null``."""

    id: int
    operation: str
    #: The request's ``params``, as JSON text.
    params: str
    requester: str
    requested_at: int
    status: str
    expires_at: int
    approver: str | None
    decided_at: int | None
    #: The caller's key, for an approval made by ``POST /v1/approvals/keyed``.
    key: str | None = None


@dataclass(frozen=True)
class ApprovalList:
    """``GET /v1/approvals?status=pending``: approvals still pending and unexpired at the
    request's time, newest request first."""

    approvals: list[Approval]


@dataclass(frozen=True)
class KeyedDecided:
    """``POST /v1/approvals/keyed/{key}/decide``: the decision recorded."""

    key: str
    id: int
    status: str
    index: int


@dataclass(frozen=True)
class ApprovalDecided:
    """``POST /v1/approvals/{id}/decide``: the decision taken."""

    id: int
    approved: bool
    index: int


@dataclass(frozen=True)
class Principal:
    """One principal. Members in the order the server has always sent them (alphabetical)."""

    name: str
    role: str
    created_at: int
    #: ``null``: every channel.
    channels: list[str] | None


@dataclass(frozen=True)
class TokenList:
    """``GET /v1/tokens``: every principal (never a token or its hash)."""

    tokens: list[Principal]


@dataclass(frozen=True)
class TokenCreated:
    """``POST /v1/tokens`` (201): the token, shown this once (only its hash is kept)."""

    name: str
    role: str
    token: str
    index: int


@dataclass(frozen=True)
class Revoked:
    """``DELETE /v1/tokens/{name}``."""

    revoked: bool
    index: int


@dataclass(frozen=True)
class OwnerBinding:
    """``GET``, ``PUT`` and ``DELETE /v1/owners/{owner}``: whose the name is (``null``: nobody's
    yet). The writes answer their log ``index`` and whether the binding ``changed``."""

    owner: str
    principal: str | None
    changed: bool | None = None
    index: int | None = None


@dataclass(frozen=True)
class KeyRotation:
    """``POST /v1/keys/rotate``: what the rotation did. Members in the order the server has
    always sent them (alphabetical)."""

    #: The id of the key every covered value is now under.
    active_key: str
    rewritten: int
    #: Values already under the active key.
    skipped: int
    #: Values that changed during the rotation and were left alone (run it again).
    conflicts: int
    batches: int


@dataclass(frozen=True)
class ClusterMember:
    """One member of the cluster (members alphabetical, as always sent)."""

    id: int
    #: Its HTTP address.
    addr: str
    #: A voter, or a learner.
    voter: bool


@dataclass(frozen=True)
class RemovedLearner:
    """A learner removed because it did not catch up in time (docs/SPEC.md §9.5)."""

    id: int
    addr: str
    #: Why, in words: how far it got, where the leader was, and the bound.
    reason: str
    #: When it was removed (ms since the epoch, by the removing node's clock).
    removed_at_ms: int


@dataclass(frozen=True)
class ClusterStatus:
    """``GET /v1/cluster``: what this node knows of the cluster (also how a client finds the
    leader). Members in alphabetical order, the order clients read on the wire."""

    node_id: int
    term: int
    last_log_index: int
    last_applied: int
    membership: list[ClusterMember]
    #: ``null`` while no leader is known.
    leader_id: int | None
    #: Learners this node removed, while it led, because they did not catch up within the node's
    #: bound (``--learner-catchup-timeout``), oldest first; absent when none.
    removed_learners: list[RemovedLearner] | None = None


@dataclass(frozen=True)
class StateDigest:
    """``GET /v1/cluster/digest``: the SHA-256 of this node's whole applied state at
    ``last_applied``. Two nodes at the same ``last_applied`` must answer the same digest (the
    chaos suite and the compose test compare them)."""

    node_id: int
    last_applied: int
    #: Lower-case hex.
    digest: str


@dataclass(frozen=True)
class LeaderTransferred:
    """``POST /v1/cluster/leader``: the leader once the transfer is done, as the answering node
    sees it."""

    leader_id: int | None


@dataclass(frozen=True)
class LogFormatStatus:
    """``GET`` and ``POST /v1/cluster/log-format``: the format the cluster writes, as this node
    has applied it, and the formats this node's build reads."""

    node_id: int
    #: The cluster's log format: what its leader writes.
    log_format: int
    #: Every log format this node's build reads, oldest first.
    reads: list[int]


@dataclass(frozen=True)
class SnapshotTaken:
    """``POST /v1/cluster/snapshot``: the snapshot this node now has, covering every entry it had
    applied when asked."""

    node_id: int
    #: The last log index the snapshot covers.
    index: int


@dataclass(frozen=True)
class Health:
    """``GET /healthz``: the process answers (``{"status": "ok"}``)."""

    status: str


@dataclass(frozen=True)
class Readiness:
    """``GET /readyz``: 200 ``{"ready": true}``, or 503 ``{"ready": false, "reason": ...}``."""

    ready: bool
    reason: str | None = None


@dataclass(frozen=True)
class UserCreated:
    """``POST /v1/users`` (201): the user was created."""

    index: int
    id: str


@dataclass(frozen=True)
class UserView:
    """A user as the API shows it: everything but the TOTP secret, the recovery-code hashes and
    the last consumed TOTP step (``GET /v1/users/{id}/secrets``)."""

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
    display_name: str | None
    email: str | None
    last_login_at: int | None
    password_hash: str | None
    password_changed_at: int | None
    locked_until: int | None
    #: JSON text listing the channels the user may see; ``null`` = every channel.
    channel_scope: str | None
    totp_enrolled_at: int | None


@dataclass(frozen=True)
class UserList:
    """``GET /v1/users`` (``?username=``, ``?limit=``): users by username; ``count`` is how many
    match before the limit (``limit=0`` answers only the count)."""

    users: list[UserView]
    count: int


@dataclass(frozen=True)
class UserSecrets:
    """``GET /v1/users/{id}/secrets``: the second-factor values the user view leaves out."""

    recovery_code_hashes: list[str]
    totp_secret: str | None
    last_totp_step: int | None


@dataclass(frozen=True)
class UserDeleted:
    """``DELETE /v1/users/{id}``: whether a user was deleted (with its role assignments and
    sessions); ``false`` for an unknown user."""

    index: int
    deleted: bool


@dataclass(frozen=True)
class UserChanged:
    """``POST /v1/users/{id}/{change}``: ``changed`` is ``false`` for an unknown user; a
    ``consume`` also answers ``consumed`` (``false``: nothing consumed, or an unknown user)."""

    index: int
    changed: bool
    consumed: bool | None = None


@dataclass(frozen=True)
class RoleView:
    """A role."""

    id: str
    display_name: str
    builtin: bool
    description: str | None


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
    """One role given to a user."""

    role_id: str
    assigned_at: int
    assigned_by: str | None


@dataclass(frozen=True)
class UserRoles:
    """``GET /v1/users/{id}/roles``: the user's role ids, sorted, and when and by whom each was
    given (both empty for an unknown user)."""

    role_ids: list[str]
    assignments: list[RoleAssignmentView]


@dataclass(frozen=True)
class RolesAssigned:
    """``PUT /v1/users/{id}/roles``: how many roles the user now has."""

    index: int
    assigned: int


@dataclass(frozen=True)
class GroupEntry:
    """One entry of a directory-group map: a group and the role id (map ``roles``) or channel
    (map ``channels``) it gives."""

    group: str
    value: str


@dataclass(frozen=True)
class GroupMap:
    """``GET /v1/directory-groups/{map}`` (``map`` = ``roles`` or ``channels``): the map's
    entries, groups normalised as stored, sorted. With ``?groups=a,b`` also ``values``: what
    the map gives any of those groups (compared as the map normalises them), sorted."""

    map: str
    entries: list[GroupEntry]
    values: list[str] | None = None


@dataclass(frozen=True)
class GroupMapWritten:
    """``PUT /v1/directory-groups/{map}``: entries stored after normalisation."""

    index: int
    stored: int


@dataclass(frozen=True)
class SessionCreated:
    """``POST /v1/sessions`` (201)."""

    index: int
    token_hash: str


@dataclass(frozen=True)
class SessionView:
    """A session."""

    token_hash: str
    user_id: str
    created_at: int
    expires_at: int
    last_used_at: int
    revoked_at: int | None
    client: str | None
    reauth_at: int | None
    mfa_verified_at: int | None


@dataclass(frozen=True)
class SessionList:
    """``GET /v1/users/{id}/sessions``: the user's sessions neither revoked nor expired at the
    request's time, most recently used first."""

    sessions: list[SessionView]


@dataclass(frozen=True)
class SessionChanged:
    """``POST /v1/sessions/{token_hash}/{change}``: ``false`` for an unknown session (or revoking
    a revoked one)."""

    index: int
    changed: bool


@dataclass(frozen=True)
class SessionsRevoked:
    """``POST /v1/users/{id}/sessions/revoke`` and ``.../cap``: sessions revoked."""

    index: int
    revoked: int


@dataclass(frozen=True)
class SessionsPurged:
    """``POST /v1/sessions/purge-expired``: sessions deleted (expired before the request's time)."""

    index: int
    purged: int


@dataclass(frozen=True)
class HeartbeatAck:
    """``PUT /v1/engine/nodes/{node_id}``: the heartbeat was applied."""

    index: int


@dataclass(frozen=True)
class EngineNode:
    """One engine process of the registry."""

    node_id: str
    started_at: int
    last_seen: int
    #: ``active``, or ``left`` after a clean stop.
    status: str
    host: str | None
    pid: int | None


@dataclass(frozen=True)
class EngineNodes:
    """``GET /v1/engine/nodes``: every registered node, by node id, and the time of the read
    (judge a node's freshness by ``now − last_seen``)."""

    nodes: list[EngineNode]
    now: int


@dataclass(frozen=True)
class Leadership:
    """A group's leadership lease (absent members: nobody ever held it, or it was given up), and
    the time it was read at. The campaign's answer is the lease after it, whoever won."""

    group: str
    now: int
    owner: str | None
    #: Live through this time inclusive.
    expires_at: int | None
    #: Changes exactly when the owner changes.
    fence: int | None


@dataclass(frozen=True)
class NodeLeft:
    """``DELETE /v1/engine/nodes/{node_id}``: whether the node was registered (now ``left``)."""

    left: bool
    index: int


@dataclass(frozen=True)
class Resigned:
    """``POST /v1/engine/leadership/{group}/resign``: whether ``node_id`` held it."""

    resigned: bool
    index: int


@dataclass(frozen=True)
class CounterValue:
    """``GET`` and ``POST /v1/engine/counters/{name}``: a shared counter (after the bump, for
    ``POST``)."""

    name: str
    value: int


@dataclass(frozen=True)
class HeldLanes:
    """``GET /v1/engine/lanes/{owner}``: the lanes whose lease ``owner`` holds now, as
    ``stage:name``."""

    owner: str
    lanes: list[str]
