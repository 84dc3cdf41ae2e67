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
//!
//! The command structs live by family, one module each ([`produce`], [`claim`], [`handoff`],
//! [`recovery`], [`stored`], [`audit`], [`approvals`], [`principals`], [`users`],
//! [`coordination`]), like `crate::apply`; this module holds the [`Envelope`], the [`Command`]
//! set and the wrappers that carry another command ([`Batch`], [`AtClientTime`],
//! [`Fingerprinted`], [`AsOperator`]), and re-exports the rest.

mod approvals;
mod audit;
mod claim;
mod coordination;
mod handoff;
mod principals;
mod produce;
mod recovery;
mod stored;
mod users;

use crate::model::ids::Millis;
pub use crate::wire::legacy::{PurgeDeadLetters, PurgeMessageBodies};
use crate::wire::log_format::LogFormat;
pub use approvals::{
    ConsumeApproval, CreateApproval, CreateApprovalAs, DecideApproval, DecideApprovalAs,
};
pub use audit::{RecordAudit, RecordAuditAs, RecordView, SealAuditEpoch};
pub use claim::{
    ClaimFifoHead, ClaimNextFifo, ClaimReady, DoneThenClaimNext, ReclaimExpired, ReleaseLane,
    RenewLeases,
};
pub use coordination::{
    BumpCounter, CampaignLeadership, NodeHeartbeat, NodeLeave, ResignLeadership,
};
pub use handoff::{
    CompleteWithResponse, DeadLetterNow, HandOn, HandOnThenClaimNext, HandlerWork, Handoff,
    HandoffDisposition, IngressHandoff, IngressHandoffKeyed, MarkDone, MarkFailed,
    RouteDisposition, RouteHandoff, StateOp, TransformHandoff,
};
pub use principals::{IssueToken, PutPrincipal, ReserveOwner, RevokePrincipal, SetPrincipalOrgs};
pub use produce::{
    Delivery, EnqueueIngress, EnqueueMessage, MessageFields, ReceivedStatus, RecordReceived,
};
pub use recovery::{
    CancelQueued, DeadLetterMissingDestinations, DeadLetterMissingHandlers,
    RecoverInflightOnPromotion, Replay, ReplayDead, ResetStaleInflight, SetDestinationPaused,
};
use serde::{Deserialize, Serialize};
pub use stored::{
    ExpireRecords, PurgeState, PutConfig, RetentionPage, RetentionPass, RewriteValues,
    WriteReferenceSnapshot, WriteReferenceSnapshotText, MAX_RETENTION_PAGE,
};
pub use users::{
    CreateSession, CreateUser, DeleteUser, EnforceSessionCap, PurgeExpiredSessions,
    RevokeUserSessions, SessionAt, SessionChange, SessionWrite, SetAdGroupMap, SetUserRoles,
    UpdateSession, UpdateUser, UpsertRole, UserChange,
};

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
    /// Whether applying this command may change the cluster's log format: a `SetLogFormat`,
    /// alone, wrapped or in a batch. What the Raft adapter watches for, so it need not read the
    /// format back after every batch.
    pub fn sets_log_format(&self) -> bool {
        match self {
            Command::SetLogFormat(_) => true,
            Command::Batch(batch) => batch.commands.iter().any(|e| e.command.sets_log_format()),
            Command::AtClientTime(AtClientTime { command, .. })
            | Command::Fingerprinted(Fingerprinted { command, .. })
            | Command::AsOperator(AsOperator { command }) => command.sets_log_format(),
            _ => false,
        }
    }

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
