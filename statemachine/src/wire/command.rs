//! Commands: what travels in the Raft log.
//!
//! Every command is wrapped in an [`Envelope`] carrying the proposer's clock reading and the
//! acting principal, so `apply` needs neither a clock nor a session. Each command is a struct of
//! its own, carried by the [`Command`] variant of the same name; what it does is its `Apply`
//! implementation, next to the rest of its family in [`crate::apply`].
//!
//! The encoding is pinned by `tests/golden_wire.rs` (golden bytes in `tests/golden/*.hex`):
//! bincode writes a variant as its position followed by its fields in declaration order, so a
//! new command goes at the end of [`Command`], and a struct's fields are never reordered. A
//! newtype variant holding a struct encodes exactly like the struct variant it replaced.

use crate::model::approval::ApprovalStatus;
use crate::model::config::{ConfigDoc, RetryPolicy};
use crate::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
use crate::model::principal::Role;
use crate::model::row::Stage;
use crate::model::user::{AdGroupMap, AuthProvider};
use crate::wire::log_format::LogFormat;
use crate::wire::rewrite::Rewrite;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A command as proposed: stamped with the proposer's wall clock and the acting principal.
/// Its bytes: [`crate::wire::envelope`] (docs/SPEC.md §2.8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The proposer's clock. The state machine clamps it monotonic: `t = max(now_ms, last_t)`.
    pub now_ms: Millis,
    /// Principal name recorded in audit rows and approvals.
    pub actor: String,
    /// Makes a retried write exactly-once: a second envelope with the same `(actor,
    /// request_id)` gets the first one's answer back and changes nothing (see
    /// [`crate::apply::request`]). The proposer sets it; `None` applies every time.
    pub request_id: Option<String>,
    pub command: Command,
    /// The format the envelope is written in: what it was read in, else format 1 (the one
    /// every build reads) until the leader sets the cluster's format with [`Self::set_format`].
    /// It changes the bytes, never what the envelope means.
    pub format: LogFormat,
}

impl Envelope {
    pub fn new(now_ms: Millis, actor: impl Into<String>, command: Command) -> Self {
        Self {
            now_ms,
            actor: actor.into(),
            request_id: None,
            command,
            format: LogFormat::V1,
        }
    }

    /// The same envelope, remembered under `request_id`.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Write this envelope, and every envelope a batch carries, in `format`.
    pub fn set_format(&mut self, format: LogFormat) {
        self.format = format;
        if let Command::Batch(batch) = &mut self.command {
            for inner in &mut batch.commands {
                inner.set_format(format);
            }
        }
    }
}

/// The complete command set (docs/SPEC.md §2.7), one variant per command struct. Encoded by
/// position: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    // --- producing ---
    EnqueueIngress(EnqueueIngress),
    RecordReceived(RecordReceived),
    EnqueueMessage(EnqueueMessage),
    // --- claiming ---
    ClaimReady(ClaimReady),
    ClaimNextFifo(ClaimNextFifo),
    RenewLeases(RenewLeases),
    ReclaimExpired(ReclaimExpired),
    ReleaseLane(ReleaseLane),
    // --- handoffs and completions (all fenced) ---
    RouteHandoff(RouteHandoff),
    Handoff(Handoff),
    TransformHandoff(TransformHandoff),
    MarkDone(MarkDone),
    CompleteWithResponse(CompleteWithResponse),
    IngressHandoff(IngressHandoff),
    MarkFailed(MarkFailed),
    DeadLetterNow(DeadLetterNow),
    // --- operator actions ---
    Replay(Replay),
    ReplayDead(ReplayDead),
    CancelQueued(CancelQueued),
    PutConfig(PutConfig),
    // --- state, reference, retention ---
    WriteReferenceSnapshot(WriteReferenceSnapshot),
    PurgeMessageBodies(PurgeMessageBodies),
    PurgeDeadLetters(PurgeDeadLetters),
    PurgeState(PurgeState),
    /// Carries nothing, so it stays a unit variant; [`ExpireRecords`] is its struct for `apply`.
    ExpireRecords,
    // --- audit ---
    RecordAudit(RecordAudit),
    SealAuditEpoch(SealAuditEpoch),
    // --- approvals ---
    CreateApproval(CreateApproval),
    DecideApproval(DecideApproval),
    // --- principals ---
    PutPrincipal(PutPrincipal),
    RevokePrincipal(RevokePrincipal),
    // --- group commit ---
    Batch(Batch),
    // --- encryption at rest (docs/SPEC.md §2.6) ---
    RewriteValues(RewriteValues),
    // --- claiming, continued ---
    DoneThenClaimNext(DoneThenClaimNext),
    // --- the engine's users, roles and sessions (docs/SPEC.md §13) ---
    CreateUser(CreateUser),
    UpdateUser(UpdateUser),
    DeleteUser(DeleteUser),
    UpsertRole(UpsertRole),
    SetUserRoles(SetUserRoles),
    SetAdGroupMap(SetAdGroupMap),
    CreateSession(CreateSession),
    UpdateSession(UpdateSession),
    RevokeUserSessions(RevokeUserSessions),
    EnforceSessionCap(EnforceSessionCap),
    PurgeExpiredSessions(PurgeExpiredSessions),
    // --- messagefoundry store: queue side ---
    ClaimFifoHead(ClaimFifoHead),
    ResetStaleInflight(ResetStaleInflight),
    DeadLetterMissingDestinations(DeadLetterMissingDestinations),
    DeadLetterMissingHandlers(DeadLetterMissingHandlers),
    RecordAuditAs(RecordAuditAs),
    RecordView(RecordView),
    IngressHandoffKeyed(IngressHandoffKeyed),
    WriteReferenceSnapshotText(WriteReferenceSnapshotText),
    RecoverInflightOnPromotion(RecoverInflightOnPromotion),
    CreateApprovalAs(CreateApprovalAs),
    DecideApprovalAs(DecideApprovalAs),
    // --- test mode (docs/SPEC.md §2.1) ---
    AtClientTime(AtClientTime),
    // --- engine coordination (docs/SPEC.md §15) ---
    NodeHeartbeat(NodeHeartbeat),
    NodeLeave(NodeLeave),
    CampaignLeadership(CampaignLeadership),
    ResignLeadership(ResignLeadership),
    BumpCounter(BumpCounter),
    // --- dual control (docs/SPEC.md §9.5) ---
    ConsumeApproval(ConsumeApproval),
    // --- security (docs/SPEC.md §9.4) ---
    SetPrincipalOrgs(SetPrincipalOrgs),
    // --- Request-Id reuse and random tokens (docs/SPEC.md §10.5, §9.1) ---
    Fingerprinted(Fingerprinted),
    IssueToken(IssueToken),
    // --- paged retention (docs/SPEC.md §8.6) ---
    RetentionPage(RetentionPage),
    // --- sessions dated by the caller (docs/SPEC.md §13.2) ---
    SessionAt(SessionAt),
    // --- a handoff and the lane's next claim in one entry (docs/SPEC.md §4.4a) ---
    HandOnThenClaimNext(HandOnThenClaimNext),
    // --- a principal acts only on what is its own (docs/SPEC.md §9.8) ---
    AsOperator(AsOperator),
    // --- names bound to principals: an admin's reservation (docs/SPEC.md §9.8) ---
    ReserveOwner(ReserveOwner),
    // --- a destination paused by an operator (docs/SPEC.md §4.9) ---
    SetDestinationPaused(SetDestinationPaused),
    // --- the log itself (docs/SPEC.md §2.8) ---
    SetLogFormat(SetLogFormat),
}

impl Command {
    /// Short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Command::EnqueueIngress(_) => "enqueue_ingress",
            Command::RecordReceived(_) => "record_received",
            Command::EnqueueMessage(_) => "enqueue_message",
            Command::ClaimReady(_) => "claim_ready",
            Command::ClaimNextFifo(_) => "claim_next_fifo",
            Command::RenewLeases(_) => "renew_leases",
            Command::ReclaimExpired(_) => "reclaim_expired",
            Command::ReleaseLane(_) => "release_lane",
            Command::RouteHandoff(_) => "route_handoff",
            Command::Handoff(_) => "handoff",
            Command::TransformHandoff(_) => "transform_handoff",
            Command::MarkDone(_) => "mark_done",
            Command::CompleteWithResponse(_) => "complete_with_response",
            Command::IngressHandoff(_) => "ingress_handoff",
            Command::MarkFailed(_) => "mark_failed",
            Command::DeadLetterNow(_) => "dead_letter_now",
            Command::Replay(_) => "replay",
            Command::ReplayDead(_) => "replay_dead",
            Command::CancelQueued(_) => "cancel_queued",
            Command::PutConfig(_) => "put_config",
            Command::WriteReferenceSnapshot(_) => "write_reference_snapshot",
            Command::PurgeMessageBodies(_) => "purge_message_bodies",
            Command::PurgeDeadLetters(_) => "purge_dead_letters",
            Command::PurgeState(_) => "purge_state",
            Command::ExpireRecords => "expire_records",
            Command::RecordAudit(_) => "record_audit",
            Command::SealAuditEpoch(_) => "seal_audit_epoch",
            Command::CreateApproval(_) => "create_approval",
            Command::DecideApproval(_) => "decide_approval",
            Command::PutPrincipal(_) => "put_principal",
            Command::RevokePrincipal(_) => "revoke_principal",
            Command::Batch(_) => "batch",
            Command::RewriteValues(_) => "rewrite_values",
            Command::DoneThenClaimNext(_) => "done_then_claim_next",
            Command::CreateUser(_) => "create_user",
            Command::UpdateUser(_) => "update_user",
            Command::DeleteUser(_) => "delete_user",
            Command::UpsertRole(_) => "upsert_role",
            Command::SetUserRoles(_) => "set_user_roles",
            Command::SetAdGroupMap(_) => "set_ad_group_map",
            Command::CreateSession(_) => "create_session",
            Command::UpdateSession(_) => "update_session",
            Command::RevokeUserSessions(_) => "revoke_user_sessions",
            Command::EnforceSessionCap(_) => "enforce_session_cap",
            Command::PurgeExpiredSessions(_) => "purge_expired_sessions",
            // --- messagefoundry store: queue side ---
            Command::ClaimFifoHead(_) => "claim_fifo_head",
            Command::ResetStaleInflight(_) => "reset_stale_inflight",
            Command::DeadLetterMissingDestinations(_) => "dead_letter_missing_destinations",
            Command::DeadLetterMissingHandlers(_) => "dead_letter_missing_handlers",
            Command::RecordAuditAs(_) => "record_audit_as",
            Command::RecordView(_) => "record_view",
            Command::IngressHandoffKeyed(_) => "ingress_handoff_keyed",
            Command::WriteReferenceSnapshotText(_) => "write_reference_snapshot_text",
            Command::RecoverInflightOnPromotion(_) => "recover_inflight_on_promotion",
            Command::CreateApprovalAs(_) => "create_approval_as",
            Command::DecideApprovalAs(_) => "decide_approval_as",
            Command::AtClientTime(_) => "at_client_time",
            Command::NodeHeartbeat(_) => "node_heartbeat",
            Command::NodeLeave(_) => "node_leave",
            Command::CampaignLeadership(_) => "campaign_leadership",
            Command::ResignLeadership(_) => "resign_leadership",
            Command::BumpCounter(_) => "bump_counter",
            Command::ConsumeApproval(_) => "consume_approval",
            Command::SetPrincipalOrgs(_) => "set_principal_orgs",
            // A wrapper, not a command of its own: metrics and logs count what it carries.
            Command::Fingerprinted(c) => c.command.name(),
            Command::IssueToken(_) => "issue_token",
            Command::RetentionPage(_) => "retention_page",
            // The caller's time is data of the session write: counted as the write it dates.
            Command::SessionAt(c) => c.write.name(),
            Command::HandOnThenClaimNext(_) => "hand_on_then_claim_next",
            // The proposer's word on the caller's role: counted as the command it carries.
            Command::AsOperator(c) => c.command.name(),
            Command::ReserveOwner(_) => "reserve_owner",
            Command::SetDestinationPaused(_) => "set_destination_paused",
            Command::SetLogFormat(_) => "set_log_format",
        }
    }
}

// --- producing ---

/// A new message on `channel`, with one ingress row (docs/SPEC.md §4.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueIngress {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub idempotency_key: Option<String>,
}

/// A message the producer already judged (filtered or in error): recorded, no rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordReceived {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub status: ReceivedStatus,
    pub error: Option<String>,
}

/// A new message already routed by its producer: one outbound row per delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueMessage {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub deliveries: Vec<Delivery>,
    pub idempotency_key: Option<String>,
}

/// Optional descriptive fields of a new message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageFields {
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub source_type: Option<String>,
    pub summary: Option<String>,
    /// JSON text.
    pub metadata: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub destination: String,
    pub payload: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceivedStatus {
    Filtered,
    Error,
}

// --- claiming ---

/// Up to `limit` due rows of `stage` for `owner`, in due order, unordered across lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimReady {
    pub stage: Stage,
    pub limit: u32,
    pub channel: Option<String>,
    pub destination: Option<String>,
    pub owner: String,
    pub ttl_ms: u64,
}

/// The head of one lane for `owner`, in strict FIFO order (docs/SPEC.md §4.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimNextFifo {
    pub stage: Stage,
    pub lane: String,
    pub owner: String,
    pub ttl_ms: u64,
}

/// Extend `owner`'s leases on these rows and on their lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewLeases {
    pub ids: Vec<RowId>,
    pub owner: String,
    pub ttl_ms: u64,
}

/// Return every row whose lease expired to pending (of one stage, or all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimExpired {
    pub stage: Option<Stage>,
}

/// Give a lane back before its lease ends; only its owner may.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseLane {
    pub stage: Stage,
    pub lane: String,
    pub owner: String,
}

/// MarkDone of a row, then ClaimNextFifo of the row's own lane for `owner`, in one entry: a FIFO
/// lane worker's "finished this one, give me the next" costs one consensus round trip instead
/// of two. Answers like ClaimNextFifo (`Outcome::FifoClaimed`); when the done is rejected
/// nothing is applied, the claim included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneThenClaimNext {
    pub row_id: RowId,
    pub fence: Fence,
    pub owner: String,
    pub ttl_ms: u64,
}

/// The handoffs that consume a claimed FIFO row and hand its message on: what
/// [`HandOnThenClaimNext`] may carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HandOn {
    Route(RouteHandoff),
    Handoff(Handoff),
    Transform(TransformHandoff),
}

impl HandOn {
    /// The row the handoff consumes.
    pub fn row_id(&self) -> RowId {
        match self {
            HandOn::Route(c) => c.row_id,
            HandOn::Handoff(c) => c.row_id,
            HandOn::Transform(c) => c.row_id,
        }
    }
}

/// A handoff of a claimed row, then ClaimNextFifo of that row's lane for `owner`, in one entry:
/// a stage worker's "handed this one on, give me the next" costs one consensus round trip
/// instead of two, as [`DoneThenClaimNext`] does for the delivery worker. Answers
/// `Outcome::HandedOnThenClaimed`; when the handoff is rejected nothing is applied, the claim
/// included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandOnThenClaimNext {
    pub action: HandOn,
    pub owner: String,
    pub ttl_ms: u64,
}

// --- handoffs and completions (all fenced) ---

/// Ingress → routed: the ingress row is consumed, one routed row per handler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub handlers: Vec<HandlerWork>,
    pub disposition: RouteDisposition,
}

/// Ingress → outbound: the ingress row is consumed, one outbound row per delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub deliveries: Vec<Delivery>,
    pub disposition: HandoffDisposition,
}

/// Routed → outbound, with the transform's state changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransformHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub deliveries: Vec<Delivery>,
    pub state_ops: Vec<StateOp>,
}

/// The row's work is done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkDone {
    pub row_id: RowId,
    pub fence: Fence,
}

/// An outbound row is done and the destination answered: the response is captured, and
/// re-ingested on `reingress_to` if given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteWithResponse {
    pub row_id: RowId,
    pub fence: Fence,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub reingress_to: Option<String>,
}

/// Response → a new message on `loopback_channel`, correlated with its origin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub loopback_channel: String,
    pub depth_cap: u32,
}

/// An attempt failed: retry after the policy's backoff, or dead-letter the row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkFailed {
    pub row_id: RowId,
    pub fence: Fence,
    pub error: String,
    pub retry: RetryPolicy,
}

/// Dead-letter a row at once (a worker under its fence, or an operator without one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterNow {
    pub row_id: RowId,
    pub fence: Option<Fence>,
    pub error: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerWork {
    pub handler: String,
    pub payload: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateOp {
    pub namespace: String,
    pub key: String,
    /// JSON text.
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteDisposition {
    Routed,
    Unrouted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffDisposition {
    Routed,
    Filtered,
    Unrouted,
}

// --- operator actions ---

/// Recover a message's stuck rows, or re-send its done ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    pub message_id: MessageId,
}

/// Requeue dead outbound rows matching the filters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayDead {
    pub channel: Option<String>,
    pub destination: Option<String>,
}

/// Cancel pending rows queued to a destination (all, or only the head).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelQueued {
    pub destination: String,
    pub channel: Option<String>,
    pub top_only: bool,
}

/// Compare-and-set the configuration document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutConfig {
    pub expected_version: u64,
    pub config: ConfigDoc,
}

// --- state, reference, retention ---

/// Replace a named reference snapshot whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteReferenceSnapshot {
    pub name: String,
    pub version: u64,
    pub rows: BTreeMap<String, String>,
}

/// Blank the bodies of ended messages received before `older_than`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeMessageBodies {
    pub older_than: Millis,
}

/// Blank payload and error of dead outbound rows that died before `older_than`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeDeadLetters {
    pub older_than: Millis,
}

/// Delete transform state set before `older_than`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeState {
    pub older_than: Millis,
}

/// Drop idempotency keys and decided/expired approvals whose time has passed
/// ([`Command::ExpireRecords`], a unit variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpireRecords;

/// Most ended messages one [`RetentionPage`] examines: what bounds the longest apply of a purge
/// (docs/BENCHMARKS.md, "retention"). A larger `limit` is clamped to it.
pub const MAX_RETENTION_PAGE: u32 = 1_000;

/// One bounded page of retention over the ended-message index (docs/SPEC.md §8.6): at most
/// `limit` (clamped to 1..=[`MAX_RETENTION_PAGE`]) messages of `pass`'s class that ended before
/// `older_than`, after where the pass stopped (its cursor, kept in the state). Answers `Outcome::RetentionPaged`, whose `next`
/// is `None` once nothing older than the cutoff is left; the proposer repeats it until then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPage {
    pub pass: RetentionPass,
    pub older_than: Millis,
    pub limit: u32,
}

/// What a [`RetentionPage`] does. Encoded by position: new passes go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetentionPass {
    /// Index messages that ended before the ended-message index existed (a one-time walk of
    /// the messages by id; `older_than` is not used).
    IndexEnded,
    /// Blank the bodies of ended, not failed, messages (what PurgeMessageBodies blanks).
    BlankBodies,
    /// Blank the bodies of failed messages (dead rows keep their payload: see below).
    BlankFailedBodies,
    /// Blank payload and error of the dead outbound rows of failed messages.
    BlankDeadLetters,
    /// Delete ended, not failed, messages with their rows, events and responses.
    DeleteEnded,
    /// Delete failed messages (dead letters) with their rows, events and responses.
    DeleteFailed,
}

impl RetentionPass {
    pub const ALL: [RetentionPass; 6] = [
        Self::IndexEnded,
        Self::BlankBodies,
        Self::BlankFailedBodies,
        Self::BlankDeadLetters,
        Self::DeleteEnded,
        Self::DeleteFailed,
    ];

    /// One byte: the pass's key in `RetentionCursors`.
    pub fn tag(self) -> u8 {
        self as u8
    }
}

// --- audit ---

/// Append a row to an org's audit chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAudit {
    pub action: String,
    pub channel: Option<String>,
    pub org: Option<String>,
    pub detail: Option<String>,
}

/// Close the current era of an org's chain with a seal row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealAuditEpoch {
    pub org: String,
}

// --- approvals ---

/// Ask a second principal to approve an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateApproval {
    pub operation: String,
    pub params: String,
    pub ttl_ms: u64,
}

/// Approve or reject a pending approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecideApproval {
    pub id: ApprovalId,
    pub approve: bool,
}

// --- principals ---

/// Create or replace an API principal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutPrincipal {
    pub name: String,
    /// Hex SHA-256 of the bearer token; the token itself never enters the log.
    pub token_hash: String,
    pub role: Role,
    pub channels: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokePrincipal {
    pub name: String,
}

// --- group commit ---

/// Many proposals in one log entry, so they share one append and one fsync. Each envelope is
/// applied as if it had its own entry: its own clock reading, actor, rollback on rejection, and
/// operation id (see [`op_id`]). A batch may not contain a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub commands: Vec<Envelope>,
}

/// Largest number of envelopes in one [`Command::Batch`].
pub const MAX_BATCH: usize = 4096;

/// Operation ids of batched envelopes start here: above any log index a cluster will reach, below
/// 2^53 so they stay exact in JSON numbers everywhere.
pub const BATCH_OP_BASE: u64 = 1 << 52;

/// The operation id of envelope `position` of the batch at log `index`: what fences and approval
/// ids are made of. A plain entry's operation id is its log index; a batched envelope's is
/// `BATCH_OP_BASE + index × MAX_BATCH + position`, unique and increasing within the batch.
pub fn op_id(index: u64, position: usize) -> u64 {
    BATCH_OP_BASE
        .saturating_add(index.saturating_mul(MAX_BATCH as u64))
        .saturating_add(position as u64)
}

/// When operation `op` was applied, the inverse of [`op_id`]: `(log index, position)`, position
/// 0 for a plain entry and `1 + position` inside a batch. Ordering these pairs orders operations
/// by apply time; ordering raw operation ids does not once batches are involved (a batched id is
/// larger than any plain one). Checkers of histories (the chaos suite) order fences with it.
pub fn op_order(op: u64) -> (u64, u64) {
    match op.checked_sub(BATCH_OP_BASE) {
        Some(r) => (r / MAX_BATCH as u64, r % MAX_BATCH as u64 + 1),
        None => (op, 0),
    }
}

// --- encryption at rest (docs/SPEC.md §2.6) ---

/// Key rotation: compare-and-set each covered value to its re-encryption, made by the proposer
/// (see [`crate::wire::rewrite`] and [`crate::apply::rewrite`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteValues {
    pub items: Vec<Rewrite>,
}

// --- the engine's users, roles and sessions (docs/SPEC.md §13) ---

/// A new user account (`created_at = updated_at = t`). Rejected if the id or the username is
/// taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateUser {
    pub user_id: String,
    pub username: String,
    pub auth_provider: AuthProvider,
    pub display_name: Option<String>,
    pub email: Option<String>,
    /// Opaque; `password_changed_at = t` when given.
    pub password_hash: Option<String>,
    pub must_change_password: bool,
}

/// One change to a user. Answers `Count(1)` when the user changed, `Count(0)` for an unknown
/// user (and for a consume that consumed nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateUser {
    pub user_id: String,
    pub change: UserChange,
}

/// What [`UpdateUser`] changes. Every change sets `updated_at = t`, except `ConsumeTotpStep`
/// (and a consume that consumed nothing, which changes nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserChange {
    /// A new password: also `password_changed_at = t`, `failed_attempts = 0`, no lockout.
    Password {
        password_hash: String,
        must_change_password: bool,
    },
    Disabled(bool),
    /// Both fields are replaced (`None` clears).
    Profile {
        display_name: Option<String>,
        email: Option<String>,
    },
    /// Stage (or clear) the TOTP secret; does not enable TOTP.
    TotpSecret(Option<String>),
    /// `totp_enabled`, `totp_enrolled_at = t`, and the recovery codes replaced.
    EnableTotp {
        recovery_code_hashes: Vec<String>,
    },
    /// Clears the secret, `totp_enabled`, `totp_enrolled_at` and the recovery codes.
    DisableTotp,
    /// Remove one recovery code hash: `Count(1)` iff it was there.
    ConsumeRecoveryCode {
        code_hash: String,
    },
    /// Record `step` as consumed: `Count(1)` iff it is greater than every step consumed before
    /// (a replayed code answers `Count(0)`).
    ConsumeTotpStep {
        step: u64,
    },
    /// `last_login_at = t`, `failed_attempts = 0`, no lockout.
    LoginSuccess,
    LoginFailure {
        failed_attempts: u32,
        locked_until: Option<Millis>,
    },
    /// JSON text, opaque; `None` = every channel.
    ChannelScope(Option<String>),
}

/// Delete a user with its role assignments and sessions: `Count(0 or 1)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteUser {
    pub user_id: String,
}

/// Create or replace a role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpsertRole {
    pub role_id: String,
    pub display_name: String,
    pub description: Option<String>,
    pub builtin: bool,
}

/// Replace a user's role assignments (`assigned_at = t`): `Count(roles assigned)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetUserRoles {
    pub user_id: String,
    pub role_ids: Vec<String>,
    pub assigned_by: Option<String>,
}

/// Replace one AD group map whole with `(group, role id or channel)` entries, normalised (see
/// [`crate::rules::ad_groups`]): `Count(entries stored)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAdGroupMap {
    pub map: AdGroupMap,
    pub entries: Vec<(String, String)>,
}

/// A new session (`created_at = last_used_at = t`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSession {
    /// The hash of the session token; the token never enters the log.
    pub token_hash: String,
    pub user_id: String,
    pub expires_at: Millis,
    pub client: Option<String>,
    /// `reauth_at = t` when set; `None` for a session still waiting for its second factor.
    pub seed_reauth: bool,
}

/// One change to a session: `Count(1)` when it changed, `Count(0)` for an unknown session (or
/// a revocation of a revoked one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateSession {
    pub token_hash: String,
    pub change: SessionChange,
}

/// What [`UpdateSession`] changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionChange {
    /// `last_used_at = t`.
    Touch,
    /// `reauth_at = t`; the client is replaced only when given.
    Reauthed { client: Option<String> },
    /// `mfa_verified_at = t`.
    MfaVerified,
    /// `revoked_at = t`, unless already revoked.
    Revoke,
}

/// Revoke a user's unrevoked sessions, all or all but one: `Count(revoked)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeUserSessions {
    pub user_id: String,
    pub except_token_hash: Option<String>,
}

/// Revoke a user's unrevoked sessions beyond the `keep` most recently created (`keep = 0`:
/// nothing): `Count(revoked)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnforceSessionCap {
    pub user_id: String,
    pub keep: u32,
}

/// Delete every session with `expires_at < t`: `Count(deleted)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeExpiredSessions;

/// A session write dated by its caller (docs/SPEC.md §13.2): `write` applies as it would on its
/// own, except that every session time it stamps (`created_at`, `last_used_at`, `reauth_at`,
/// `mfa_verified_at`, `revoked_at`) is `at` instead of `t`. The engine ages its sessions against
/// its own clock and revokes one stamped ahead of it, so the times must be the ones it named.
/// `at` must lie within [`MAX_SESSION_AT_SKEW_MS`](crate::model::session::MAX_SESSION_AT_SKEW_MS)
/// of `t` either way, else the write is refused as `invalid` (`field` = `at`) and changes
/// nothing. `at` moves neither the machine's clock nor any lease. Answers what `write` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAt {
    pub at: Millis,
    pub write: SessionWrite,
}

/// The session writes [`SessionAt`] can date: those that stamp a session time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionWrite {
    Create(CreateSession),
    Update(UpdateSession),
    RevokeUser(RevokeUserSessions),
    Cap(EnforceSessionCap),
}

impl SessionWrite {
    /// The name of the command this write is on its own.
    pub fn name(&self) -> &'static str {
        match self {
            SessionWrite::Create(_) => "create_session",
            SessionWrite::Update(_) => "update_session",
            SessionWrite::RevokeUser(_) => "revoke_user_sessions",
            SessionWrite::Cap(_) => "enforce_session_cap",
        }
    }
}

// --- messagefoundry store: queue side (docs/SPEC.md §14) ---

/// ClaimNextFifo with the row claim's owner apart from the lane lease's owner (docs/SPEC.md
/// §14.1): the claim is recorded for `owner`, the lane lease is taken (or verified) for
/// `lane_owner`, and with `lane_owner: None` no lane lease is taken at all (a live lease of
/// another owner still keeps the lane busy). `ClaimNextFifo {owner}` is this command with
/// `lane_owner: Some(owner)`. Answers `Outcome::FifoClaimed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimFifoHead {
    pub stage: Stage,
    pub lane: String,
    /// The owner recorded in the row's claim (what RenewLeases and completions go by).
    pub owner: String,
    /// Who holds the lane lease; `None`: the claim takes no lane lease.
    pub lane_owner: Option<String>,
    pub ttl_ms: u64,
}

/// Every inflight row (of `stage`, or of every stage) back to pending, whatever its lease and
/// owner: a single process's start-up recovery (docs/SPEC.md §14.2). Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetStaleInflight {
    pub stage: Option<Stage>,
}

/// Dead-letter every live outbound row whose destination is not one of `destinations` (the
/// engine's registry): docs/SPEC.md §14.3. Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterMissingDestinations {
    pub destinations: Vec<String>,
}

/// Dead-letter every live routed row whose handler is not one of `handlers`: docs/SPEC.md
/// §14.3. Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterMissingHandlers {
    pub handlers: Vec<String>,
}

/// RecordAudit on behalf of someone else: the row's actor is `actor` (absent when `None`), not
/// the envelope's principal (docs/SPEC.md §14.5). The engine records its own users' actions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAuditAs {
    pub action: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    pub org: Option<String>,
    pub detail: Option<String>,
}

/// Someone opened a message's body: its history gets the event `viewed`, with the viewer as
/// detail (docs/SPEC.md §14.6). Answers `Done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub message_id: MessageId,
    pub viewer: Option<String>,
}

/// IngressHandoff with the child named and described by the caller (docs/SPEC.md §14.7): the
/// child is found again by `child_key` (the engine's own derived id), carries the caller's
/// `control_id`, `message_type` and `summary`, and with `peek_failed` is recorded in `error`
/// without an ingress row. Answers `Reingressed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressHandoffKeyed {
    pub row_id: RowId,
    pub fence: Fence,
    pub loopback_channel: String,
    pub depth_cap: u32,
    pub child_key: String,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub summary: Option<String>,
    pub peek_failed: bool,
}

/// WriteReferenceSnapshot with a text version (`"v1"`): the set is replaced whole, its numeric
/// version becomes the previous one plus one, and `version` is kept as its label (docs/SPEC.md
/// §14.8). Answers `Count(rows)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteReferenceSnapshotText {
    pub name: String,
    pub version: String,
    pub rows: BTreeMap<String, String>,
}

/// A new leader's take-over (docs/SPEC.md §14.9): every inflight row claimed by anyone but
/// `owner` back to pending whatever its lease, and every lane lease not held by `lane_owner`
/// (every lease, when `None`) dropped, in one command. Answers `Count(rows)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoverInflightOnPromotion {
    pub owner: String,
    pub lane_owner: Option<String>,
}

/// An approval request the caller names and dates (docs/SPEC.md §14.10): its own `key`, the
/// requester, the request time and the expiry (`None`: never). Answers `Approval(id)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateApprovalAs {
    pub key: String,
    pub operation: String,
    pub params: String,
    pub requester: String,
    pub requested_at: Millis,
    pub expires_at: Option<Millis>,
}

/// Decide a pending approval named by the caller's key (docs/SPEC.md §14.10), with the outcome,
/// approver and time the caller gives. Succeeds only for the call that decides it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecideApprovalAs {
    pub key: String,
    pub status: ApprovalStatus,
    pub approver: Option<String>,
    pub decided_at: Millis,
}

// --- test mode ---

/// `command` applied at exactly `now_ms`, the time a test client named, instead of at the
/// envelope's clamped clock (docs/SPEC.md §2.1). Only a node started with
/// `--test-client-clock` proposes it: messagefoundry's store suite moves its clock backwards
/// between calls (a login "at 20 s" after a user created "at 1000 s") and checks the times it
/// named, which no monotonic clock can give. It does not move the machine's clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AtClientTime {
    pub now_ms: Millis,
    pub command: Box<Command>,
}

// --- engine coordination ---

/// An engine process says it is alive (docs/SPEC.md §15.1): registers it, or refreshes its
/// `last_seen`; a node that had left (or is new) starts a new incarnation at `t`. Answers `Done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHeartbeat {
    pub node_id: String,
    pub host: Option<String>,
    pub pid: Option<u32>,
}

/// An engine process stops cleanly: its record becomes a `left` tombstone and any leadership
/// it holds is given up. Answers `Count(1)`, or `Count(0)` for a node never registered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLeave {
    pub node_id: String,
}

/// Take or renew a group's leadership lease for `node_id` until `t + ttl_ms` (§15.2): granted
/// when the lease is free, expired, or already `node_id`'s. Answers `Leader` with the lease as
/// it stands afterwards, whoever holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignLeadership {
    pub group: String,
    pub node_id: String,
    pub ttl_ms: u64,
}

/// Give a group's leadership up, if `node_id` holds it. Answers `Count(1)` or `Count(0)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResignLeadership {
    pub group: String,
    pub node_id: String,
}

/// Add one to a shared counter (§15.3). Answers `Count(new value)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BumpCounter {
    pub name: String,
}

/// Use an approved approval for the action it names, once (docs/SPEC.md §9.5): the approval
/// must be approved, unexpired and not used yet, and name exactly this `operation` with these
/// `params` (JSON text, compared as JSON values so that member order and spacing do not matter).
/// The API proposes it before it performs an action the config lists in `approvals_required`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumeApproval {
    pub id: ApprovalId,
    pub operation: String,
    pub params: String,
}

/// The audit orgs a principal may read and append to (docs/SPEC.md §9.4); `None` clears the
/// scope (every org for an unscoped principal, none for a channel-scoped one). Proposed with
/// each token creation, before the principal's `PutPrincipal`, so a re-created principal
/// never keeps an earlier scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetPrincipalOrgs {
    pub name: String,
    pub orgs: Option<Vec<String>>,
}

// --- Request-Id reuse and random tokens ---

/// `command`, bound to the HTTP request that proposed it (docs/SPEC.md §10.5). `fingerprint`
/// is the SHA-256 the API computed over that request (method, path and query, the headers that
/// feed commands, the body); it is stored beside the remembered answer of the envelope's request
/// id, and a later envelope with the same `(actor, request id)` but another fingerprint is
/// refused with [`Rejection::RequestIdReused`](crate::wire::rejection::Rejection) instead of
/// being answered the first request's outcome. The API proposes it only for a client-chosen
/// `Request-Id` (a node-drawn id cannot be reused by anyone). In test mode it sits inside
/// [`AtClientTime`], never around it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprinted {
    pub fingerprint: [u8; 32],
    pub command: Box<Command>,
}

/// [`PutPrincipal`] with a token the proposer drew at random (`POST /v1/tokens`, docs/SPEC.md
/// §9.1): `nonce` is the random value the token is derived from under a key only the nodes
/// hold (the token itself never enters the log). Answers `TokenIssued { nonce }`, so a retry of
/// the same request, answered with the remembered outcome, re-derives the very token that was
/// stored; a new request draws a new nonce and so a new token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueToken {
    pub principal: PutPrincipal,
    pub nonce: String,
}

// --- a principal acts only on what is its own ---

/// `command`, proposed for a caller the API found to hold the operator role (docs/SPEC.md §9.8):
/// it may act on what belongs to other principals. A fenced row action may act on a row another
/// principal claimed, and every such override is audited (`row.override`); a recovery
/// (ResetStaleInflight, RecoverInflightOnPromotion) takes back every principal's rows, not only
/// the caller's own. Without it a command acts on the actor's own claims only. The proposer
/// stamps it (the state machine knows principals by name, not their roles); it wraps one plain
/// command, inside [`Fingerprinted`] and [`AtClientTime`], never around them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOperator {
    pub command: Box<Command>,
}

/// An admin binds a lease owner name or engine node id to a principal ahead of its first use
/// (`principal: Some`), or releases the binding (`None`), docs/SPEC.md §9.8. A reservation
/// for a principal that does not exist is `UnknownPrincipal`; one of a name bound to another
/// principal is `AlreadyExists` (field `owner`): release it first. Answers `Count(1)` when the
/// binding changed, `Count(0)` when it already was so. Audited `owner.reserve` /
/// `owner.release`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReserveOwner {
    pub owner: String,
    pub principal: Option<String>,
}

/// Pause a destination (`paused: true`: none of its outbound rows is handed out until it is
/// resumed; rows already out finish as they would) or resume it (docs/SPEC.md §4.9). Answers
/// `Count(1)` when that changed the destination, `Count(0)` when it already was so. Audited
/// `destination.pause` / `destination.resume`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetDestinationPaused {
    pub destination: String,
    pub paused: bool,
    pub reason: Option<String>,
}

/// Raise the cluster's log format (docs/SPEC.md §2.8): from the next entry on, the leader
/// writes envelopes in `format`. Proposed only once every member runs a build that reads it
/// (the leader asks each, `raftlane_raft::log_format`); the state machine refuses a format this
/// build does not know and a step back (entries of the higher format are in the log already).
/// Answers `Count(1)` when the format changed, `Count(0)` when it already was `format`.
/// Audited `cluster.log_format`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetLogFormat {
    pub format: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_ids_decode_to_apply_order() {
        assert_eq!(op_order(1000), (1000, 0));
        assert_eq!(op_order(op_id(500, 3)), (500, 4));
        assert_eq!(op_order(op_id(7, MAX_BATCH - 1)), (7, MAX_BATCH as u64));
        // A batched op at index 500 came before a plain entry at index 1000, though its id is
        // larger; and a batch's envelopes come after a plain entry at the same index.
        assert!(op_id(500, 3) > 1000);
        assert!(op_order(op_id(500, 3)) < op_order(1000));
        assert!(op_order(op_id(1000, 0)) > op_order(1000));
        assert!(op_order(op_id(1000, 0)) < op_order(op_id(1000, 1)));
    }
}
