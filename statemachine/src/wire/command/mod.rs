//! Commands: what travels in the Raft log.
//!
//! Every command is wrapped in an [`Envelope`] carrying the proposer's clock reading and the
//! acting principal, so `apply` needs neither a clock nor a session. Each command is a struct of
//! its own, carried by the [`Command`] variant of the same name; what it does is its `Apply`
//! implementation, next to the rest of its family in [`crate::apply`].
//!
//! What belongs to the envelope rather than to one command (the proposer's clock, the actor,
//! the request id, test mode's client time, the request's fingerprint, the operator's word) is
//! a field of the [`Envelope`], written as a numbered header field by log format 3
//! ([`crate::wire::format3`]). Formats 1 and 2 carried some of them as wrapper commands and
//! some commands as twins; [`crate::wire::layout_v1`] still reads and writes that layout.
//!
//! The encoding is pinned by `tests/golden_wire.rs` (golden bytes in `tests/golden/*.hex`): in
//! format 3 bincode writes a variant as its position followed by its fields in declaration
//! order, so a new command goes at the end of [`Command`], and a struct's fields are never
//! reordered; a change of a command's fields needs a new log format.
//!
//! The command structs live by family, one module each ([`produce`], [`claim`], [`handoff`],
//! [`recovery`], [`stored`], [`audit`], [`approvals`], [`principals`], [`users`],
//! [`coordination`]), like `crate::apply`; this module holds the [`Envelope`], the [`Command`]
//! set and the [`Batch`] of envelopes, and re-exports the rest.

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
pub use crate::wire::legacy::{Nested, PurgeDeadLetters, PurgeMessageBodies};
use crate::wire::log_format::LogFormat;
pub use approvals::{
    ApprovalTerms, ConsumeApproval, CreateApproval, DecideApproval, Decision, KeyedDecision,
    NamedApproval,
};
pub use audit::{AuditAuthor, RecordAudit, RecordView, SealAuditEpoch};
pub use claim::{
    ClaimFifoHead, ClaimNextFifo, ClaimReady, DoneThenClaimNext, ReclaimExpired, ReleaseLane,
    RenewLeases,
};
pub use coordination::{
    BumpCounter, CampaignLeadership, NodeHeartbeat, NodeLeave, ResignLeadership,
};
pub use handoff::{
    ChildKey, CompleteWithResponse, DeadLetterNow, HandOn, HandOnThenClaimNext, HandlerWork,
    Handoff, HandoffDisposition, IngressHandoff, MarkDone, MarkFailed, RouteDisposition,
    RouteHandoff, StateOp, TransformHandoff,
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
    ExpireRecords, PurgeState, PutConfig, ReferenceVersion, RetentionPage, RetentionPass,
    RewriteValues, WriteReferenceSnapshot, MAX_RETENTION_PAGE,
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
    /// Test mode only (docs/SPEC.md §2.1): the command applies at exactly this time, the one a
    /// test client named, instead of at the clamped clock, and leaves the machine's clock where
    /// it was. Only a node started with `--test-client-clock` proposes it: messagefoundry's
    /// store suite moves its clock backwards between calls and checks the times it named.
    pub client_time: Option<Millis>,
    /// The SHA-256 the API computed over the HTTP request that proposed the command (method,
    /// path and query, the headers that feed commands, the body; docs/SPEC.md §10.5). It is
    /// stored beside the remembered answer of `request_id`, and a later envelope with the same
    /// `(actor, request_id)` but another fingerprint is refused
    /// ([`Rejection::RequestIdReused`](crate::wire::rejection::Rejection)) instead of being
    /// answered the first request's outcome. Set only for a client-chosen `Request-Id`.
    pub fingerprint: Option<[u8; 32]>,
    /// The proposer's word that the caller holds the operator role (docs/SPEC.md §9.8): the
    /// command may act on what belongs to other principals (a fenced row action on a row
    /// another principal claimed, audited `row.override`; a recovery of every principal's
    /// rows). Without it a command acts on the actor's own claims only. The state machine knows
    /// principals by name, not their roles, so the proposer stamps it.
    pub as_operator: bool,
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
            client_time: None,
            fingerprint: None,
            as_operator: false,
            command,
            format: LogFormat::V1,
        }
    }

    /// The same envelope, remembered under `request_id`.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The same envelope, applied at exactly `now_ms` (test mode: [`Self::client_time`]).
    pub fn at_client_time(mut self, now_ms: Option<Millis>) -> Self {
        self.client_time = now_ms;
        self
    }

    /// The same envelope, bound to its request's fingerprint ([`Self::fingerprint`]).
    pub fn fingerprinted(mut self, fingerprint: Option<[u8; 32]>) -> Self {
        self.fingerprint = fingerprint;
        self
    }

    /// The same envelope, vouched for as an operator's ([`Self::as_operator`]).
    pub fn as_operator(mut self, as_operator: bool) -> Self {
        self.as_operator = as_operator;
        self
    }

    /// Whether the envelope carries a batch to apply member by member: a [`Command::Batch`]
    /// with no header field that belongs to one command (a batch's members carry their own).
    pub fn is_batch(&self) -> bool {
        matches!(self.command, Command::Batch(_))
            && self.client_time.is_none()
            && self.fingerprint.is_none()
            && !self.as_operator
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
    RecordView(RecordView),
    RecoverInflightOnPromotion(RecoverInflightOnPromotion),
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
    // --- random tokens (docs/SPEC.md §9.1) ---
    IssueToken(IssueToken),
    // --- paged retention (docs/SPEC.md §8.6) ---
    RetentionPage(RetentionPage),
    // --- sessions dated by the caller (docs/SPEC.md §13.2) ---
    SessionAt(SessionAt),
    // --- a handoff and the lane's next claim in one entry (docs/SPEC.md §4.4a) ---
    HandOnThenClaimNext(HandOnThenClaimNext),
    // --- names bound to principals: an admin's reservation (docs/SPEC.md §9.8) ---
    ReserveOwner(ReserveOwner),
    // --- a destination paused by an operator (docs/SPEC.md §4.9) ---
    SetDestinationPaused(SetDestinationPaused),
    // --- the log itself (docs/SPEC.md §2.8) ---
    SetLogFormat(SetLogFormat),
    // --- decode-only: a format 1/2 command in a place no proposer puts one ---
    Nested(Nested),
}

impl Command {
    /// Whether applying this command may change the cluster's log format: a `SetLogFormat`,
    /// alone or in a batch. What the Raft adapter watches for, so it need not read the
    /// format back after every batch.
    pub fn sets_log_format(&self) -> bool {
        match self {
            Command::SetLogFormat(_) => true,
            Command::Batch(batch) => batch.commands.iter().any(|e| e.command.sets_log_format()),
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
            // A twin of formats 1 and 2 keeps its name in metrics and logs.
            Command::IngressHandoff(c) if c.child.is_some() => "ingress_handoff_keyed",
            Command::IngressHandoff(_) => "ingress_handoff",
            Command::MarkFailed(_) => "mark_failed",
            Command::DeadLetterNow(_) => "dead_letter_now",
            Command::Replay(_) => "replay",
            Command::ReplayDead(_) => "replay_dead",
            Command::CancelQueued(_) => "cancel_queued",
            Command::PutConfig(_) => "put_config",
            Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
                version: ReferenceVersion::Label(_),
                ..
            }) => "write_reference_snapshot_text",
            Command::WriteReferenceSnapshot(_) => "write_reference_snapshot",
            Command::PurgeMessageBodies(_) => "purge_message_bodies",
            Command::PurgeDeadLetters(_) => "purge_dead_letters",
            Command::PurgeState(_) => "purge_state",
            Command::ExpireRecords => "expire_records",
            Command::RecordAudit(RecordAudit {
                author: AuditAuthor::Named(_),
                ..
            }) => "record_audit_as",
            Command::RecordAudit(_) => "record_audit",
            Command::SealAuditEpoch(_) => "seal_audit_epoch",
            Command::CreateApproval(CreateApproval {
                terms: ApprovalTerms::Named(_),
                ..
            }) => "create_approval_as",
            Command::CreateApproval(_) => "create_approval",
            Command::DecideApproval(DecideApproval {
                decision: Decision::ByKey(_),
            }) => "decide_approval_as",
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
            Command::RecordView(_) => "record_view",
            Command::RecoverInflightOnPromotion(_) => "recover_inflight_on_promotion",
            Command::NodeHeartbeat(_) => "node_heartbeat",
            Command::NodeLeave(_) => "node_leave",
            Command::CampaignLeadership(_) => "campaign_leadership",
            Command::ResignLeadership(_) => "resign_leadership",
            Command::BumpCounter(_) => "bump_counter",
            Command::ConsumeApproval(_) => "consume_approval",
            Command::SetPrincipalOrgs(_) => "set_principal_orgs",
            Command::IssueToken(_) => "issue_token",
            Command::RetentionPage(_) => "retention_page",
            // The caller's time is data of the session write: counted as the write it dates.
            Command::SessionAt(c) => c.write.name(),
            Command::HandOnThenClaimNext(_) => "hand_on_then_claim_next",
            Command::ReserveOwner(_) => "reserve_owner",
            Command::SetDestinationPaused(_) => "set_destination_paused",
            Command::SetLogFormat(_) => "set_log_format",
            Command::Nested(_) => "nested",
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
