//! Commands (what travels in the Raft log) and their results.
//!
//! Every command is wrapped in an [`Envelope`] carrying the proposer's clock reading and the
//! acting principal, so `apply` needs neither a clock nor a session.

use crate::config::ConfigDoc;
use crate::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
use crate::principal::Role;
use crate::row::Stage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A command as proposed: stamped with the proposer's wall clock and the acting principal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The proposer's clock. The state machine clamps it monotonic: `t = max(now_ms, last_t)`.
    pub now_ms: Millis,
    /// Principal name recorded in audit rows and approvals.
    pub actor: String,
    /// Makes a retried write exactly-once: a second envelope with the same `(actor,
    /// request_id)` gets the first one's answer back and changes nothing (see
    /// [`crate::request`]). The proposer sets it; `None` applies every time.
    pub request_id: Option<String>,
    pub command: Command,
}

impl Envelope {
    pub fn new(now_ms: Millis, actor: impl Into<String>, command: Command) -> Self {
        Self {
            now_ms,
            actor: actor.into(),
            request_id: None,
            command,
        }
    }

    /// The same envelope, remembered under `request_id`.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }
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

/// Retry policy carried by MarkFailed (the worker reads it from the config it works under).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// `None` = retry forever.
    pub max_attempts: Option<u32>,
    pub backoff_ms: u64,
    /// Fixed-point multiplier in thousandths (1500 = ×1.5): no floats in `apply`.
    pub multiplier_milli: u32,
    pub max_backoff_ms: u64,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceivedStatus {
    Filtered,
    Error,
}

/// The complete command set (docs/SPEC.md §2.7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    // --- producing ---
    EnqueueIngress {
        channel: String,
        raw: String,
        fields: MessageFields,
        idempotency_key: Option<String>,
    },
    RecordReceived {
        channel: String,
        raw: String,
        fields: MessageFields,
        status: ReceivedStatus,
        error: Option<String>,
    },
    EnqueueMessage {
        channel: String,
        raw: String,
        fields: MessageFields,
        deliveries: Vec<Delivery>,
        idempotency_key: Option<String>,
    },
    // --- claiming ---
    ClaimReady {
        stage: Stage,
        limit: u32,
        channel: Option<String>,
        destination: Option<String>,
        owner: String,
        ttl_ms: u64,
    },
    ClaimNextFifo {
        stage: Stage,
        lane: String,
        owner: String,
        ttl_ms: u64,
    },
    RenewLeases {
        ids: Vec<RowId>,
        owner: String,
        ttl_ms: u64,
    },
    ReclaimExpired {
        stage: Option<Stage>,
    },
    ReleaseLane {
        stage: Stage,
        lane: String,
        owner: String,
    },
    // --- handoffs and completions (all fenced) ---
    RouteHandoff {
        row_id: RowId,
        fence: Fence,
        handlers: Vec<HandlerWork>,
        disposition: RouteDisposition,
    },
    Handoff {
        row_id: RowId,
        fence: Fence,
        deliveries: Vec<Delivery>,
        disposition: HandoffDisposition,
    },
    TransformHandoff {
        row_id: RowId,
        fence: Fence,
        deliveries: Vec<Delivery>,
        state_ops: Vec<StateOp>,
    },
    MarkDone {
        row_id: RowId,
        fence: Fence,
    },
    CompleteWithResponse {
        row_id: RowId,
        fence: Fence,
        body: String,
        outcome: String,
        detail: Option<String>,
        reingress_to: Option<String>,
    },
    IngressHandoff {
        row_id: RowId,
        fence: Fence,
        loopback_channel: String,
        depth_cap: u32,
    },
    MarkFailed {
        row_id: RowId,
        fence: Fence,
        error: String,
        retry: RetryPolicy,
    },
    DeadLetterNow {
        row_id: RowId,
        fence: Option<Fence>,
        error: String,
    },
    // --- operator actions ---
    Replay {
        message_id: MessageId,
    },
    ReplayDead {
        channel: Option<String>,
        destination: Option<String>,
    },
    CancelQueued {
        destination: String,
        channel: Option<String>,
        top_only: bool,
    },
    PutConfig {
        expected_version: u64,
        config: ConfigDoc,
    },
    // --- state, reference, retention ---
    WriteReferenceSnapshot {
        name: String,
        version: u64,
        rows: BTreeMap<String, String>,
    },
    PurgeMessageBodies {
        older_than: Millis,
    },
    PurgeDeadLetters {
        older_than: Millis,
    },
    PurgeState {
        older_than: Millis,
    },
    /// Drop idempotency keys and decided/expired approvals whose time has passed.
    ExpireRecords,
    // --- audit ---
    RecordAudit {
        action: String,
        channel: Option<String>,
        org: Option<String>,
        detail: Option<String>,
    },
    SealAuditEpoch {
        org: String,
    },
    // --- approvals ---
    CreateApproval {
        operation: String,
        params: String,
        ttl_ms: u64,
    },
    DecideApproval {
        id: ApprovalId,
        approve: bool,
    },
    // --- principals ---
    PutPrincipal {
        name: String,
        /// Hex SHA-256 of the bearer token; the token itself never enters the log.
        token_hash: String,
        role: Role,
        channels: Option<Vec<String>>,
    },
    RevokePrincipal {
        name: String,
    },
    // --- group commit ---
    /// Many proposals in one log entry, so they share one append and one fsync. Each envelope
    /// is applied as if it had its own entry: its own clock reading, actor, rollback on
    /// rejection, and operation id (see [`op_id`]). A batch may not contain a batch.
    Batch {
        commands: Vec<Envelope>,
    },
    // --- encryption at rest (docs/SPEC.md §2.6) ---
    /// Key rotation: compare-and-set each covered value to its re-encryption, made by the
    /// proposer (see [`crate::rewrite`]). Last in the enum so older variants keep their tags.
    RewriteValues {
        items: Vec<crate::rewrite::Rewrite>,
    },
    /// MarkDone of a row, then ClaimNextFifo of the row's own lane for `owner`, in one entry:
    /// a FIFO lane worker's "finished this one, give me the next" costs one consensus round
    /// trip instead of two. Answers like ClaimNextFifo (`Outcome::FifoClaimed`); when the done
    /// is rejected nothing is applied, the claim included. Last in the enum for the tags.
    DoneThenClaimNext {
        row_id: RowId,
        fence: Fence,
        owner: String,
        ttl_ms: u64,
    },
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

impl Command {
    /// Short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Command::EnqueueIngress { .. } => "enqueue_ingress",
            Command::RecordReceived { .. } => "record_received",
            Command::EnqueueMessage { .. } => "enqueue_message",
            Command::ClaimReady { .. } => "claim_ready",
            Command::ClaimNextFifo { .. } => "claim_next_fifo",
            Command::RenewLeases { .. } => "renew_leases",
            Command::ReclaimExpired { .. } => "reclaim_expired",
            Command::ReleaseLane { .. } => "release_lane",
            Command::RouteHandoff { .. } => "route_handoff",
            Command::Handoff { .. } => "handoff",
            Command::TransformHandoff { .. } => "transform_handoff",
            Command::MarkDone { .. } => "mark_done",
            Command::CompleteWithResponse { .. } => "complete_with_response",
            Command::IngressHandoff { .. } => "ingress_handoff",
            Command::MarkFailed { .. } => "mark_failed",
            Command::DeadLetterNow { .. } => "dead_letter_now",
            Command::Replay { .. } => "replay",
            Command::ReplayDead { .. } => "replay_dead",
            Command::CancelQueued { .. } => "cancel_queued",
            Command::PutConfig { .. } => "put_config",
            Command::WriteReferenceSnapshot { .. } => "write_reference_snapshot",
            Command::PurgeMessageBodies { .. } => "purge_message_bodies",
            Command::PurgeDeadLetters { .. } => "purge_dead_letters",
            Command::PurgeState { .. } => "purge_state",
            Command::ExpireRecords => "expire_records",
            Command::RecordAudit { .. } => "record_audit",
            Command::SealAuditEpoch { .. } => "seal_audit_epoch",
            Command::CreateApproval { .. } => "create_approval",
            Command::DecideApproval { .. } => "decide_approval",
            Command::PutPrincipal { .. } => "put_principal",
            Command::RevokePrincipal { .. } => "revoke_principal",
            Command::Batch { .. } => "batch",
            Command::RewriteValues { .. } => "rewrite_values",
            Command::DoneThenClaimNext { .. } => "done_then_claim_next",
        }
    }
}

/// A claimed row as handed to a worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedRow {
    pub row_id: RowId,
    pub message_id: MessageId,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub payload: String,
    pub attempts: u32,
    pub fence: Fence,
    pub lease_expires_at: Millis,
}

/// Why a FIFO claim returned nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FifoEmpty {
    /// No pending row in the lane.
    Empty,
    /// The head is backing off until `due_at`; the lane waits for it.
    NotDue { due_at: Millis },
    /// Another owner holds the lane.
    LaneBusy { holder: String, expires_at: Millis },
}

/// The successful result of a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Enqueued {
        message_id: MessageId,
        duplicate: bool,
    },
    Claimed(Vec<ClaimedRow>),
    FifoClaimed(Result<ClaimedRow, FifoEmpty>),
    /// Number of rows (or records) affected.
    Count(u64),
    /// A handoff; `false` when the row was already consumed under this fence (idempotent retry).
    HandedOff(bool),
    /// IngressHandoff: the child message, or `None` when the row was dead-lettered instead.
    Reingressed(Option<MessageId>),
    /// MarkFailed: the row's new status.
    Failed {
        dead: bool,
        next_attempt_at: Millis,
    },
    ConfigVersion(u64),
    Audit {
        seq: u64,
        hash: String,
    },
    Approval(ApprovalId),
    Done,
    /// The responses of a [`Command::Batch`], in order.
    Batch(Vec<Response>),
    /// A retried request (same actor and request id) that was already applied at `index`:
    /// its first answer, unchanged, and nothing was applied again.
    Repeated {
        index: u64,
        response: Box<Response>,
    },
}

/// A command that does not apply to the current state. Applied as a no-op: nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Rejection {
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("message {0} not found")]
    UnknownMessage(MessageId),
    #[error("row {0} not found")]
    UnknownRow(RowId),
    #[error("approval {0} not found")]
    UnknownApproval(ApprovalId),
    #[error("principal {0} not found")]
    UnknownPrincipal(String),
    #[error("row {row} is {status}, expected {expected}")]
    WrongStatus {
        row: RowId,
        status: String,
        expected: String,
    },
    #[error("row {row} wrong stage {stage}")]
    WrongStage { row: RowId, stage: String },
    #[error("stale fence {presented} for row {row} (current {current:?})")]
    StaleFence {
        row: RowId,
        presented: Fence,
        current: Option<Fence>,
    },
    /// Reserved, never produced: a busy lane is not a rejection but an ordinary answer of a FIFO
    /// claim ([`FifoEmpty::LaneBusy`] inside [`Outcome::FifoClaimed`], docs/SPEC.md §4.3 step
    /// 1). Kept only because variants are encoded by position (bincode) in remembered answers
    /// and snapshots: removing it would renumber every variant after it.
    #[error("lane {lane} is held by {holder} until {expires_at}")]
    LaneBusy {
        lane: String,
        holder: String,
        expires_at: Millis,
    },
    #[error("config version mismatch: expected {expected}, current {current}")]
    VersionMismatch { expected: u64, current: u64 },
    #[error("approval {0} already decided")]
    AlreadyDecided(ApprovalId),
    #[error("approval {0} expired")]
    ApprovalExpired(ApprovalId),
    #[error("the approver must differ from the requester")]
    SelfApproval,
}

impl Rejection {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Rejection::Invalid {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// Stable machine-readable code for APIs.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Invalid { .. } => "invalid",
            Rejection::UnknownMessage(_)
            | Rejection::UnknownRow(_)
            | Rejection::UnknownApproval(_)
            | Rejection::UnknownPrincipal(_) => "not_found",
            Rejection::WrongStatus { .. } | Rejection::WrongStage { .. } => "wrong_status",
            Rejection::StaleFence { .. } => "stale_fence",
            Rejection::LaneBusy { .. } => "lane_busy",
            Rejection::VersionMismatch { .. } => "version_mismatch",
            Rejection::AlreadyDecided(_) => "already_decided",
            Rejection::ApprovalExpired(_) => "expired",
            Rejection::SelfApproval => "self_approval",
        }
    }
}

/// What `apply` returns for one command.
pub type Response = Result<Outcome, Rejection>;

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
