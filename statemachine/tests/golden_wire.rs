//! Golden wire encodings: compatibility of the log, remembered answers, snapshots and stored
//! values, enforced by test instead of by comment.
//!
//! Every byte that leaves a replica and may be read back by another build goes through
//! `raftlane_statemachine::codec` (bincode, fixed-width integers, big-endian). bincode writes
//! neither field names nor variant names: a struct is its fields in declaration order, an enum
//! variant is its *position* (u32) followed by its fields. Reordering variants or fields,
//! inserting a variant anywhere but at the end, changing a field's type or removing a variant
//! silently changes what old bytes mean. This file pins the current layout: for every variant of
//! every enum that travels (and one value of every stored type) it builds a deterministic example
//! with non-default field values, encodes it and compares with the hex in `tests/golden/*.hex`;
//! then it decodes the golden bytes and checks they give back the example (both directions).
//!
//! Golden files (`name hexbytes`, one case a line, `#` lines are comments):
//! - `commands.hex`: one [`Envelope`] per [`Command`] variant (fixed `now_ms`, actor and
//!   `request_id: Some`), plus the bare encoding of every variant of the enums nested in commands
//!   (`Stage`, `ReceivedStatus`, `RouteDisposition`, `HandoffDisposition`, `Role`, `ValueRef`,
//!   `UserChange`, `SessionChange`, `AdGroupMap`, `AuthProvider`, `SessionWrite`, `HandOn`).
//! - `outcomes.hex`: every [`Outcome`] variant, and every [`FifoEmpty`] variant as it travels,
//!   inside `Outcome::FifoClaimed(Err(..))` (`Outcome::FifoClaimed` itself carries `Ok`, and
//!   `Outcome::Batch` / `Outcome::Repeated` carry both `Response` variants).
//! - `rejections.hex`: every [`Rejection`] variant.
//! - `stored.hex`: one value of the type stored in each [`Table`] that holds encoded values
//!   (`table.Type`), every variant of `RowStatus`, `MessageStatus`, `EventKind` and
//!   `ApprovalStatus`, and the JSON documents the state machine keeps inside stored strings
//!   (`json.*`: a response-stage row's payload, a seal row's audit detail).
//! - `tables.hex`: each table's one-byte tag (snapshot streams, digest) followed by its RocksDB
//!   column family name.
//!
//! ## Rules
//! - **Existing lines must never change, and are never deleted.** A line that stops matching
//!   means logs, remembered answers, snapshots or databases written by an older build no longer
//!   decode (or decode to something else). Fix the code, not the golden file.
//! - **Adding a variant:** append it at the *end* of its enum (never in the middle: that would
//!   renumber every variant after it). The build then fails on the `match` of that enum below
//!   (no wildcard arms); add the arm and one example with non-default field values to the
//!   enum's example list. Run
//!   `RAFTLANE_GOLDEN_BLESS=1 cargo test --release -p raftlane-statemachine --test golden_wire`:
//!   it appends the missing lines (only those; it never rewrites an existing line) and still
//!   fails, listing what it added. Review the appended lines, then run again without the
//!   variable: it passes.
//! - A new table, or a new stored type: add the arm to `table_name` / `stored_cases` /
//!   `verify_live_value` and bless the same way.
//!
//! ## How exhaustiveness is enforced
//! 1. At compile time: one function per enum (`command_variant`, `outcome_variant`, ...) names
//!    each variant in a `match` without a wildcard arm, so a new variant does not build.
//! 2. At run time: the variant list that serde's derive itself declares for each enum (read by a
//!    probe deserializer, see [`probe`]) must equal, in declaration order, the names of that
//!    enum's examples: a variant without an example, or two examples of one variant, fails.
//! 3. Every example's name must appear exactly once in its golden file, and the golden file may
//!    hold no other names.
//!
//! The test uses only the crate's public API. The two stored records whose types are private
//! (the idempotency record and the remembered answer of a request) are pinned through mirror
//! structs, and `stored_values_of_a_live_state_have_the_golden_types` checks against a state
//! built through `StateMachine::apply` that the real stored bytes of every table decode as (and
//! re-encode to) the types pinned here, the mirrors included.

use raftlane_statemachine::codec;
use raftlane_statemachine::model::approval::{Approval, ApprovalStatus};
use raftlane_statemachine::model::audit::{AuditHead, AuditRow, SealRecord};
use raftlane_statemachine::model::config::{
    ChannelConfig, ConfigDoc, ConfigVersion, DestinationConfig, HandlerConfig, RetentionConfig,
    RetryPolicy,
};
use raftlane_statemachine::model::lane::{LaneLease, LaneState};
use raftlane_statemachine::model::message::{
    Correlation, Event, EventKind, Message, MessageStatus,
};
use raftlane_statemachine::model::principal::{Principal, Role};
use raftlane_statemachine::model::response::{CapturedResponse, ResponseRef};
use raftlane_statemachine::model::row::{Claim, RowStatus, Stage, WorkRow};
use raftlane_statemachine::model::session::Session;
use raftlane_statemachine::model::state::{ReferenceSnapshot, StateEntry};
use raftlane_statemachine::model::user::{
    AdGroupMap, AuthProvider, AuthRole, RoleAssignment, User,
};
use raftlane_statemachine::storage::keys::meta;
use raftlane_statemachine::storage::store::Direction;
use raftlane_statemachine::wire::command::{
    ApprovalTerms, AuditAuthor, ChildKey, NamedApproval, ReferenceVersion,
};
use raftlane_statemachine::wire::command::{
    Batch, CancelQueued, ClaimNextFifo, ClaimReady, CompleteWithResponse, CreateApproval,
    CreateSession, CreateUser, DeadLetterNow, DeleteUser, Delivery, DoneThenClaimNext,
    EnforceSessionCap, EnqueueIngress, EnqueueMessage, HandlerWork, Handoff, HandoffDisposition,
    IngressHandoff, MarkDone, MarkFailed, MessageFields, PurgeDeadLetters, PurgeExpiredSessions,
    PurgeMessageBodies, PurgeState, PutConfig, PutPrincipal, ReceivedStatus, ReclaimExpired,
    RecordAudit, RecordReceived, ReleaseLane, RenewLeases, Replay, ReplayDead, RevokePrincipal,
    RevokeUserSessions, RewriteValues, RouteDisposition, RouteHandoff, SealAuditEpoch,
    SessionChange, SetAdGroupMap, SetUserRoles, StateOp, TransformHandoff, UpdateSession,
    UpdateUser, UpsertRole, UserChange, WriteReferenceSnapshot,
};
// --- messagefoundry store: queue side ---
use raftlane_statemachine::wire::command::{
    ClaimFifoHead, DeadLetterMissingDestinations, DeadLetterMissingHandlers, RecordView,
    RecoverInflightOnPromotion, ResetStaleInflight,
};
// --- formats 1 and 2: wrappers and twins ---
use raftlane_statemachine::wire::command::Nested;
use raftlane_statemachine::wire::layout_v1::{
    self, AsOperator, AtClientTime, CommandV1, CreateApprovalAsV1, CreateApprovalV1,
    DecideApprovalAsV1, DecideApprovalV1, Fingerprinted, IngressHandoffKeyedV1, IngressHandoffV1,
    RecordAuditAsV1, RecordAuditV1, WriteReferenceSnapshotTextV1, WriteReferenceSnapshotV1,
};
// --- a principal acts only on what is its own ---
use raftlane_statemachine::wire::command::ReserveOwner;
// --- paused destinations ---
use raftlane_statemachine::model::destination::PausedDestination;
use raftlane_statemachine::wire::command::{SetDestinationPaused, SetLogFormat};
use raftlane_statemachine::wire::LogFormat;
// --- engine coordination ---
use raftlane_statemachine::model::coordination::{LeaderLease, NodeRecord, NodeStatus};
use raftlane_statemachine::wire::command::{
    BumpCounter, CampaignLeadership, ConsumeApproval, NodeHeartbeat, NodeLeave, ResignLeadership,
    SetPrincipalOrgs,
};
// --- Request-Id reuse and random tokens ---
use raftlane_statemachine::model::retention::{MessageEnd, RetentionCursor};
use raftlane_statemachine::wire::command::{IssueToken, RetentionPage, RetentionPass};
// --- sessions dated by the caller ---
use raftlane_statemachine::wire::command::{HandOn, HandOnThenClaimNext, SessionAt, SessionWrite};
use raftlane_statemachine::wire::rewrite::{Rewrite, ValueRef};
use raftlane_statemachine::{
    ApprovalId, ClaimedRow, Command, Envelope, Fence, FifoEmpty, MemStore, MessageId, MetaState,
    Millis, Outcome, Rejection, Response, RowId, StateMachine, Store, Table,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::fs;
use std::io::Write;
use std::path::PathBuf;

// ------------------------------------------------------------------------------------------
// Fixed example values
// ------------------------------------------------------------------------------------------

const NOW: Millis = 1_700_000_000_123;
const ACTOR: &str = "golden-actor";
const REQUEST_ID: &str = "golden-request-0001";
/// A valid token hash (64 lowercase hex digits).
const TOKEN_HASH: &str = "00112233445566778899aabbccddeeff0123456789abcdef0f1e2d3c4b5a6978";

fn s(v: &str) -> String {
    v.to_string()
}

fn some(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// 32 distinct bytes starting at `start` (a hash whose byte order shows).
fn bytes32(start: u8) -> [u8; 32] {
    std::array::from_fn(|i| start.wrapping_add(i as u8))
}

/// The envelope a format 1/2 command stands for: its wrappers are the envelope's header fields
/// (`layout_v1::split`), so writing it back in format 1 or 2 must give the golden bytes.
fn envelope(command: CommandV1) -> Envelope {
    let (wrappers, command) = layout_v1::split(command);
    Envelope::new(NOW, ACTOR, command)
        .with_request_id(REQUEST_ID)
        .at_client_time(wrappers.client_time)
        .fingerprinted(wrappers.fingerprint)
        .as_operator(wrappers.as_operator)
}

fn fields() -> MessageFields {
    MessageFields {
        control_id: some("ctl-7"),
        message_type: some("ADT^A01"),
        source_type: some("mllp"),
        summary: some("summary text"),
        metadata: some(r#"{"k":"v"}"#),
    }
}

fn delivery(destination: &str, payload: &str) -> Delivery {
    Delivery {
        destination: s(destination),
        payload: s(payload),
    }
}

fn retry_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: Some(7),
        backoff_ms: 1_500,
        multiplier_milli: 2_000,
        max_backoff_ms: 60_000,
    }
}

fn config_doc() -> ConfigDoc {
    ConfigDoc {
        channels: BTreeMap::from([
            (
                s("billing"),
                ChannelConfig {
                    description: some("billing feed"),
                },
            ),
            (
                s("orders"),
                ChannelConfig {
                    description: some("order feed"),
                },
            ),
        ]),
        destinations: BTreeMap::from([(
            s("dest-a"),
            DestinationConfig {
                url: some("https://a.example/hook"),
                retry: Some(retry_policy()),
            },
        )]),
        handlers: BTreeMap::from([(
            s("enricher"),
            HandlerConfig {
                channel: some("orders"),
            },
        )]),
        retention: RetentionConfig {
            message_bodies_ms: Some(86_400_001),
            dead_letters_ms: Some(86_400_002),
            state_ms: Some(86_400_003),
            dedupe_window_ms: Some(86_400_004),
        },
        approvals_required: BTreeSet::from([s("purge"), s("put_config")]),
    }
}

fn reference_rows() -> BTreeMap<String, String> {
    BTreeMap::from([(s("a"), s("1")), (s("b"), s("2"))])
}

fn claimed_row(n: u64) -> ClaimedRow {
    ClaimedRow {
        row_id: RowId(1000 + n),
        message_id: MessageId(2000 + n),
        stage: Stage::Outbound,
        channel_id: format!("channel-{n}"),
        destination_name: Some(format!("dest-{n}")),
        handler_name: Some(format!("handler-{n}")),
        payload: format!("payload-{n}"),
        attempts: 3 + n as u32,
        fence: Fence(3000 + n),
        lease_expires_at: NOW + n,
        created_at: None,
    }
}

// ------------------------------------------------------------------------------------------
// Exhaustive variant names: one `match` per enum, no wildcard arms. A new variant does not
// build until it is named here (and then needs an example, see `enum_cases`).
// ------------------------------------------------------------------------------------------

fn command_v1_variant(c: &CommandV1) -> &'static str {
    match c {
        CommandV1::EnqueueIngress(_) => "EnqueueIngress",
        CommandV1::RecordReceived(_) => "RecordReceived",
        CommandV1::EnqueueMessage(_) => "EnqueueMessage",
        CommandV1::ClaimReady(_) => "ClaimReady",
        CommandV1::ClaimNextFifo(_) => "ClaimNextFifo",
        CommandV1::RenewLeases(_) => "RenewLeases",
        CommandV1::ReclaimExpired(_) => "ReclaimExpired",
        CommandV1::ReleaseLane(_) => "ReleaseLane",
        CommandV1::RouteHandoff(_) => "RouteHandoff",
        CommandV1::Handoff(_) => "Handoff",
        CommandV1::TransformHandoff(_) => "TransformHandoff",
        CommandV1::MarkDone(_) => "MarkDone",
        CommandV1::CompleteWithResponse(_) => "CompleteWithResponse",
        CommandV1::IngressHandoff(_) => "IngressHandoff",
        CommandV1::MarkFailed(_) => "MarkFailed",
        CommandV1::DeadLetterNow(_) => "DeadLetterNow",
        CommandV1::Replay(_) => "Replay",
        CommandV1::ReplayDead(_) => "ReplayDead",
        CommandV1::CancelQueued(_) => "CancelQueued",
        CommandV1::PutConfig(_) => "PutConfig",
        CommandV1::WriteReferenceSnapshot(_) => "WriteReferenceSnapshot",
        CommandV1::PurgeMessageBodies(_) => "PurgeMessageBodies",
        CommandV1::PurgeDeadLetters(_) => "PurgeDeadLetters",
        CommandV1::PurgeState(_) => "PurgeState",
        CommandV1::ExpireRecords => "ExpireRecords",
        CommandV1::RecordAudit(_) => "RecordAudit",
        CommandV1::SealAuditEpoch(_) => "SealAuditEpoch",
        CommandV1::CreateApproval(_) => "CreateApproval",
        CommandV1::DecideApproval(_) => "DecideApproval",
        CommandV1::PutPrincipal(_) => "PutPrincipal",
        CommandV1::RevokePrincipal(_) => "RevokePrincipal",
        CommandV1::Batch(_) => "Batch",
        CommandV1::RewriteValues(_) => "RewriteValues",
        CommandV1::DoneThenClaimNext(_) => "DoneThenClaimNext",
        CommandV1::CreateUser(_) => "CreateUser",
        CommandV1::UpdateUser(_) => "UpdateUser",
        CommandV1::DeleteUser(_) => "DeleteUser",
        CommandV1::UpsertRole(_) => "UpsertRole",
        CommandV1::SetUserRoles(_) => "SetUserRoles",
        CommandV1::SetAdGroupMap(_) => "SetAdGroupMap",
        CommandV1::CreateSession(_) => "CreateSession",
        CommandV1::UpdateSession(_) => "UpdateSession",
        CommandV1::RevokeUserSessions(_) => "RevokeUserSessions",
        CommandV1::EnforceSessionCap(_) => "EnforceSessionCap",
        CommandV1::PurgeExpiredSessions(_) => "PurgeExpiredSessions",
        // --- messagefoundry store: queue side ---
        CommandV1::ClaimFifoHead(_) => "ClaimFifoHead",
        CommandV1::ResetStaleInflight(_) => "ResetStaleInflight",
        CommandV1::DeadLetterMissingDestinations(_) => "DeadLetterMissingDestinations",
        CommandV1::DeadLetterMissingHandlers(_) => "DeadLetterMissingHandlers",
        CommandV1::RecordAuditAs(_) => "RecordAuditAs",
        CommandV1::RecordView(_) => "RecordView",
        CommandV1::IngressHandoffKeyed(_) => "IngressHandoffKeyed",
        CommandV1::WriteReferenceSnapshotText(_) => "WriteReferenceSnapshotText",
        CommandV1::RecoverInflightOnPromotion(_) => "RecoverInflightOnPromotion",
        CommandV1::CreateApprovalAs(_) => "CreateApprovalAs",
        CommandV1::DecideApprovalAs(_) => "DecideApprovalAs",
        CommandV1::AtClientTime(_) => "AtClientTime",
        CommandV1::NodeHeartbeat(_) => "NodeHeartbeat",
        CommandV1::NodeLeave(_) => "NodeLeave",
        CommandV1::CampaignLeadership(_) => "CampaignLeadership",
        CommandV1::ResignLeadership(_) => "ResignLeadership",
        CommandV1::BumpCounter(_) => "BumpCounter",
        CommandV1::ConsumeApproval(_) => "ConsumeApproval",
        CommandV1::SetPrincipalOrgs(_) => "SetPrincipalOrgs",
        CommandV1::Fingerprinted(_) => "Fingerprinted",
        CommandV1::IssueToken(_) => "IssueToken",
        CommandV1::RetentionPage(_) => "RetentionPage",
        CommandV1::SessionAt(_) => "SessionAt",
        CommandV1::HandOnThenClaimNext(_) => "HandOnThenClaimNext",
        CommandV1::AsOperator(_) => "AsOperator",
        CommandV1::ReserveOwner(_) => "ReserveOwner",
        CommandV1::SetDestinationPaused(_) => "SetDestinationPaused",
        CommandV1::SetLogFormat(_) => "SetLogFormat",
    }
}

fn command_variant(c: &Command) -> &'static str {
    match c {
        Command::EnqueueIngress(_) => "EnqueueIngress",
        Command::RecordReceived(_) => "RecordReceived",
        Command::EnqueueMessage(_) => "EnqueueMessage",
        Command::ClaimReady(_) => "ClaimReady",
        Command::ClaimNextFifo(_) => "ClaimNextFifo",
        Command::RenewLeases(_) => "RenewLeases",
        Command::ReclaimExpired(_) => "ReclaimExpired",
        Command::ReleaseLane(_) => "ReleaseLane",
        Command::RouteHandoff(_) => "RouteHandoff",
        Command::Handoff(_) => "Handoff",
        Command::TransformHandoff(_) => "TransformHandoff",
        Command::MarkDone(_) => "MarkDone",
        Command::CompleteWithResponse(_) => "CompleteWithResponse",
        Command::IngressHandoff(_) => "IngressHandoff",
        Command::MarkFailed(_) => "MarkFailed",
        Command::DeadLetterNow(_) => "DeadLetterNow",
        Command::Replay(_) => "Replay",
        Command::ReplayDead(_) => "ReplayDead",
        Command::CancelQueued(_) => "CancelQueued",
        Command::PutConfig(_) => "PutConfig",
        Command::WriteReferenceSnapshot(_) => "WriteReferenceSnapshot",
        Command::PurgeMessageBodies(_) => "PurgeMessageBodies",
        Command::PurgeDeadLetters(_) => "PurgeDeadLetters",
        Command::PurgeState(_) => "PurgeState",
        Command::ExpireRecords => "ExpireRecords",
        Command::RecordAudit(_) => "RecordAudit",
        Command::SealAuditEpoch(_) => "SealAuditEpoch",
        Command::CreateApproval(_) => "CreateApproval",
        Command::DecideApproval(_) => "DecideApproval",
        Command::PutPrincipal(_) => "PutPrincipal",
        Command::RevokePrincipal(_) => "RevokePrincipal",
        Command::Batch(_) => "Batch",
        Command::RewriteValues(_) => "RewriteValues",
        Command::DoneThenClaimNext(_) => "DoneThenClaimNext",
        Command::CreateUser(_) => "CreateUser",
        Command::UpdateUser(_) => "UpdateUser",
        Command::DeleteUser(_) => "DeleteUser",
        Command::UpsertRole(_) => "UpsertRole",
        Command::SetUserRoles(_) => "SetUserRoles",
        Command::SetAdGroupMap(_) => "SetAdGroupMap",
        Command::CreateSession(_) => "CreateSession",
        Command::UpdateSession(_) => "UpdateSession",
        Command::RevokeUserSessions(_) => "RevokeUserSessions",
        Command::EnforceSessionCap(_) => "EnforceSessionCap",
        Command::PurgeExpiredSessions(_) => "PurgeExpiredSessions",
        // --- messagefoundry store: queue side ---
        Command::ClaimFifoHead(_) => "ClaimFifoHead",
        Command::ResetStaleInflight(_) => "ResetStaleInflight",
        Command::DeadLetterMissingDestinations(_) => "DeadLetterMissingDestinations",
        Command::DeadLetterMissingHandlers(_) => "DeadLetterMissingHandlers",
        Command::RecordView(_) => "RecordView",
        Command::RecoverInflightOnPromotion(_) => "RecoverInflightOnPromotion",
        Command::NodeHeartbeat(_) => "NodeHeartbeat",
        Command::NodeLeave(_) => "NodeLeave",
        Command::CampaignLeadership(_) => "CampaignLeadership",
        Command::ResignLeadership(_) => "ResignLeadership",
        Command::BumpCounter(_) => "BumpCounter",
        Command::ConsumeApproval(_) => "ConsumeApproval",
        Command::SetPrincipalOrgs(_) => "SetPrincipalOrgs",
        Command::IssueToken(_) => "IssueToken",
        Command::RetentionPage(_) => "RetentionPage",
        Command::SessionAt(_) => "SessionAt",
        Command::HandOnThenClaimNext(_) => "HandOnThenClaimNext",
        Command::ReserveOwner(_) => "ReserveOwner",
        Command::SetDestinationPaused(_) => "SetDestinationPaused",
        Command::SetLogFormat(_) => "SetLogFormat",
        Command::Nested(_) => "Nested",
    }
}

fn outcome_variant(o: &Outcome) -> &'static str {
    match o {
        Outcome::Enqueued { .. } => "Enqueued",
        Outcome::Claimed(_) => "Claimed",
        Outcome::FifoClaimed(_) => "FifoClaimed",
        Outcome::Count(_) => "Count",
        Outcome::HandedOff(_) => "HandedOff",
        Outcome::Reingressed(_) => "Reingressed",
        Outcome::Failed { .. } => "Failed",
        Outcome::ConfigVersion(_) => "ConfigVersion",
        Outcome::Audit { .. } => "Audit",
        Outcome::Approval(_) => "Approval",
        Outcome::Done => "Done",
        Outcome::Batch(_) => "Batch",
        Outcome::Repeated { .. } => "Repeated",
        Outcome::Leader(_) => "Leader",
        Outcome::TokenIssued { .. } => "TokenIssued",
        Outcome::RetentionPaged { .. } => "RetentionPaged",
        Outcome::HandedOnThenClaimed { .. } => "HandedOnThenClaimed",
        Outcome::Dated { .. } => "Dated",
    }
}

fn fifo_empty_variant(f: &FifoEmpty) -> &'static str {
    match f {
        FifoEmpty::Empty => "Empty",
        FifoEmpty::NotDue { .. } => "NotDue",
        FifoEmpty::LaneBusy { .. } => "LaneBusy",
    }
}

fn rejection_variant(r: &Rejection) -> &'static str {
    match r {
        Rejection::Invalid { .. } => "Invalid",
        Rejection::UnknownMessage(_) => "UnknownMessage",
        Rejection::UnknownRow(_) => "UnknownRow",
        Rejection::UnknownApproval(_) => "UnknownApproval",
        Rejection::UnknownPrincipal(_) => "UnknownPrincipal",
        Rejection::WrongStatus { .. } => "WrongStatus",
        Rejection::WrongStage { .. } => "WrongStage",
        Rejection::StaleFence { .. } => "StaleFence",
        Rejection::LaneBusy { .. } => "LaneBusy",
        Rejection::VersionMismatch { .. } => "VersionMismatch",
        Rejection::AlreadyDecided(_) => "AlreadyDecided",
        Rejection::ApprovalExpired(_) => "ApprovalExpired",
        Rejection::SelfApproval => "SelfApproval",
        Rejection::AlreadyExists { .. } => "AlreadyExists",
        Rejection::UnknownUser(_) => "UnknownUser",
        Rejection::UnknownRole(_) => "UnknownRole",
        // --- messagefoundry store: queue side ---
        Rejection::UnknownApprovalKey(_) => "UnknownApprovalKey",
        Rejection::ApprovalNotUsable { .. } => "ApprovalNotUsable",
        Rejection::OwnerOfAnother { .. } => "OwnerOfAnother",
        Rejection::NameOfAnother { .. } => "NameOfAnother",
        Rejection::RequestIdReused { .. } => "RequestIdReused",
        Rejection::ClaimOfAnother { .. } => "ClaimOfAnother",
        Rejection::UnknownChannel { .. } => "UnknownChannel",
    }
}

fn user_change_variant(v: &UserChange) -> &'static str {
    match v {
        UserChange::Password { .. } => "Password",
        UserChange::Disabled(_) => "Disabled",
        UserChange::Profile { .. } => "Profile",
        UserChange::TotpSecret(_) => "TotpSecret",
        UserChange::EnableTotp { .. } => "EnableTotp",
        UserChange::DisableTotp => "DisableTotp",
        UserChange::ConsumeRecoveryCode { .. } => "ConsumeRecoveryCode",
        UserChange::ConsumeTotpStep { .. } => "ConsumeTotpStep",
        UserChange::LoginSuccess => "LoginSuccess",
        UserChange::LoginFailure { .. } => "LoginFailure",
        UserChange::ChannelScope(_) => "ChannelScope",
    }
}

fn session_change_variant(v: &SessionChange) -> &'static str {
    match v {
        SessionChange::Touch => "Touch",
        SessionChange::Reauthed { .. } => "Reauthed",
        SessionChange::MfaVerified => "MfaVerified",
        SessionChange::Revoke => "Revoke",
    }
}

fn ad_group_map_variant(v: &AdGroupMap) -> &'static str {
    match v {
        AdGroupMap::Roles => "Roles",
        AdGroupMap::Scope => "Scope",
    }
}

fn auth_provider_variant(v: &AuthProvider) -> &'static str {
    match v {
        AuthProvider::Local => "Local",
        AuthProvider::Ad => "Ad",
    }
}

fn stage_variant(v: &Stage) -> &'static str {
    match v {
        Stage::Ingress => "Ingress",
        Stage::Routed => "Routed",
        Stage::Outbound => "Outbound",
        Stage::Response => "Response",
    }
}

fn row_status_variant(v: &RowStatus) -> &'static str {
    match v {
        RowStatus::Pending => "Pending",
        RowStatus::Inflight => "Inflight",
        RowStatus::Done => "Done",
        RowStatus::Dead => "Dead",
        RowStatus::Cancelled => "Cancelled",
    }
}

fn message_status_variant(v: &MessageStatus) -> &'static str {
    match v {
        MessageStatus::Received => "Received",
        MessageStatus::Routed => "Routed",
        MessageStatus::Unrouted => "Unrouted",
        MessageStatus::Filtered => "Filtered",
        MessageStatus::Processed => "Processed",
        MessageStatus::Error => "Error",
    }
}

fn event_kind_variant(v: &EventKind) -> &'static str {
    match v {
        EventKind::Received => "Received",
        EventKind::Routed => "Routed",
        EventKind::Unrouted => "Unrouted",
        EventKind::Filtered => "Filtered",
        EventKind::Transformed => "Transformed",
        EventKind::Delivered => "Delivered",
        EventKind::Failed => "Failed",
        EventKind::Dead => "Dead",
        EventKind::Replayed => "Replayed",
        EventKind::Cancelled => "Cancelled",
        EventKind::Reingressed => "Reingressed",
        EventKind::Viewed => "Viewed",
        EventKind::Error => "Error",
    }
}

fn role_variant(v: &Role) -> &'static str {
    match v {
        Role::Admin => "Admin",
        Role::Operator => "Operator",
        Role::Worker => "Worker",
        Role::Viewer => "Viewer",
        Role::Metadata => "Metadata",
        Role::Engine => "Engine",
    }
}

fn route_disposition_variant(v: &RouteDisposition) -> &'static str {
    match v {
        RouteDisposition::Routed => "Routed",
        RouteDisposition::Unrouted => "Unrouted",
    }
}

fn handoff_disposition_variant(v: &HandoffDisposition) -> &'static str {
    match v {
        HandoffDisposition::Routed => "Routed",
        HandoffDisposition::Filtered => "Filtered",
        HandoffDisposition::Unrouted => "Unrouted",
    }
}

fn received_status_variant(v: &ReceivedStatus) -> &'static str {
    match v {
        ReceivedStatus::Filtered => "Filtered",
        ReceivedStatus::Error => "Error",
    }
}

fn approval_status_variant(v: &ApprovalStatus) -> &'static str {
    match v {
        ApprovalStatus::Pending => "Pending",
        ApprovalStatus::Approved => "Approved",
        ApprovalStatus::Rejected => "Rejected",
        ApprovalStatus::Expired => "Expired",
        ApprovalStatus::Consumed => "Consumed",
    }
}

fn value_ref_variant(v: &ValueRef) -> &'static str {
    match v {
        ValueRef::MessageRaw { .. } => "MessageRaw",
        ValueRef::MessageError { .. } => "MessageError",
        ValueRef::RowPayload { .. } => "RowPayload",
        ValueRef::RowLastError { .. } => "RowLastError",
        ValueRef::EventDetail { .. } => "EventDetail",
        ValueRef::ResponseBody { .. } => "ResponseBody",
        ValueRef::ResponseDetail { .. } => "ResponseDetail",
        ValueRef::StateValue { .. } => "StateValue",
        ValueRef::ReferenceValue { .. } => "ReferenceValue",
    }
}

/// Each table's variant name and RocksDB column family name.
fn table_name(t: Table) -> (&'static str, &'static str) {
    match t {
        Table::Meta => ("Meta", "meta"),
        Table::Messages => ("Messages", "messages"),
        Table::Rows => ("Rows", "rows"),
        Table::MessageRows => ("MessageRows", "message_rows"),
        Table::Events => ("Events", "events"),
        Table::LanePending => ("LanePending", "lane_pending"),
        Table::LaneInflight => ("LaneInflight", "lane_inflight"),
        Table::Lanes => ("Lanes", "lanes"),
        Table::Due => ("Due", "due"),
        Table::Leases => ("Leases", "leases"),
        Table::Responses => ("Responses", "responses"),
        Table::State => ("State", "state"),
        Table::StateNamespaces => ("StateNamespaces", "state_namespaces"),
        Table::Reference => ("Reference", "reference"),
        Table::Config => ("Config", "config"),
        Table::Audit => ("Audit", "audit"),
        Table::AuditHeads => ("AuditHeads", "audit_heads"),
        Table::Idempotency => ("Idempotency", "idempotency"),
        Table::Approvals => ("Approvals", "approvals"),
        Table::Principals => ("Principals", "principals"),
        Table::PrincipalTokens => ("PrincipalTokens", "principal_tokens"),
        Table::Children => ("Children", "children"),
        Table::DeadRows => ("DeadRows", "dead_rows"),
        Table::IdempotencyExpiry => ("IdempotencyExpiry", "idempotency_expiry"),
        Table::Requests => ("Requests", "requests"),
        Table::RequestExpiry => ("RequestExpiry", "request_expiry"),
        Table::EventCounts => ("EventCounts", "event_counts"),
        Table::Users => ("Users", "users"),
        Table::Usernames => ("Usernames", "usernames"),
        Table::UserRoles => ("UserRoles", "user_roles"),
        Table::Roles => ("Roles", "roles"),
        Table::AdGroupMaps => ("AdGroupMaps", "ad_group_maps"),
        Table::Sessions => ("Sessions", "sessions"),
        Table::UserSessions => ("UserSessions", "user_sessions"),
        Table::SessionExpiry => ("SessionExpiry", "session_expiry"),
        // --- messagefoundry store: queue side ---
        Table::AuditActors => ("AuditActors", "audit_actors"),
        Table::AuditIndexFrom => ("AuditIndexFrom", "audit_index_from"),
        Table::ChildKeys => ("ChildKeys", "child_keys"),
        Table::ReferenceLabels => ("ReferenceLabels", "reference_labels"),
        Table::ApprovalKeys => ("ApprovalKeys", "approval_keys"),
        Table::ApprovalKeyOf => ("ApprovalKeyOf", "approval_key_of"),
        Table::EngineNodes => ("EngineNodes", "engine_nodes"),
        Table::Leadership => ("Leadership", "leadership"),
        Table::Counters => ("Counters", "counters"),
        Table::LeaseOwners => ("LeaseOwners", "lease_owners"),
        Table::PrincipalOrgs => ("PrincipalOrgs", "principal_orgs"),
        Table::RequestFingerprints => ("RequestFingerprints", "request_fingerprints"),
        Table::EndedMessages => ("EndedMessages", "ended_messages"),
        Table::MessageEnds => ("MessageEnds", "message_ends"),
        Table::RetentionCursors => ("RetentionCursors", "retention_cursors"),
        Table::Tallies => ("Tallies", "tallies"),
        Table::RowRetry => ("RowRetry", "row_retry"),
        Table::AuditPrincipals => ("AuditPrincipals", "audit_principals"),
        Table::PausedDestinations => ("PausedDestinations", "paused_destinations"),
    }
}

// ------------------------------------------------------------------------------------------
// Examples, one per variant
// ------------------------------------------------------------------------------------------

fn command_examples() -> Vec<CommandV1> {
    vec![
        CommandV1::EnqueueIngress(EnqueueIngress {
            channel: s("orders"),
            raw: s("MSH|raw-1"),
            fields: fields(),
            idempotency_key: some("idem-1"),
        }),
        CommandV1::RecordReceived(RecordReceived {
            channel: s("orders"),
            raw: s("MSH|raw-2"),
            fields: fields(),
            status: ReceivedStatus::Error,
            error: some("parse failed"),
        }),
        CommandV1::EnqueueMessage(EnqueueMessage {
            channel: s("orders"),
            raw: s("MSH|raw-3"),
            fields: fields(),
            deliveries: vec![
                delivery("dest-a", "payload-a"),
                delivery("dest-b", "payload-b"),
            ],
            idempotency_key: some("idem-2"),
        }),
        CommandV1::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 17,
            channel: some("orders"),
            destination: some("dest-a"),
            owner: s("worker-1"),
            ttl_ms: 30_001,
        }),
        CommandV1::ClaimNextFifo(ClaimNextFifo {
            stage: Stage::Routed,
            lane: s("lane-1"),
            owner: s("worker-2"),
            ttl_ms: 30_002,
        }),
        CommandV1::RenewLeases(RenewLeases {
            ids: vec![RowId(101), RowId(102)],
            owner: s("worker-3"),
            ttl_ms: 30_003,
        }),
        CommandV1::ReclaimExpired(ReclaimExpired {
            stage: Some(Stage::Response),
        }),
        CommandV1::ReleaseLane(ReleaseLane {
            stage: Stage::Ingress,
            lane: s("lane-2"),
            owner: s("worker-4"),
        }),
        CommandV1::RouteHandoff(RouteHandoff {
            row_id: RowId(201),
            fence: Fence(202),
            handlers: vec![HandlerWork {
                handler: s("handler-1"),
                payload: s("handler-payload-1"),
            }],
            disposition: RouteDisposition::Unrouted,
        }),
        CommandV1::Handoff(Handoff {
            row_id: RowId(211),
            fence: Fence(212),
            deliveries: vec![delivery("dest-c", "payload-c")],
            disposition: HandoffDisposition::Filtered,
        }),
        CommandV1::TransformHandoff(TransformHandoff {
            row_id: RowId(221),
            fence: Fence(222),
            deliveries: vec![delivery("dest-d", "payload-d")],
            state_ops: vec![StateOp {
                namespace: s("ns-1"),
                key: s("key-1"),
                value: s(r#"{"n":1}"#),
            }],
        }),
        CommandV1::MarkDone(MarkDone {
            row_id: RowId(231),
            fence: Fence(232),
        }),
        CommandV1::CompleteWithResponse(CompleteWithResponse {
            row_id: RowId(241),
            fence: Fence(242),
            body: s("response body"),
            outcome: s("accepted"),
            detail: some("detail-1"),
            reingress_to: some("replies"),
        }),
        CommandV1::IngressHandoff(IngressHandoffV1 {
            row_id: RowId(251),
            fence: Fence(252),
            loopback_channel: s("loopback"),
            depth_cap: 5,
        }),
        CommandV1::MarkFailed(MarkFailed {
            row_id: RowId(261),
            fence: Fence(262),
            error: s("timeout"),
            retry: retry_policy(),
        }),
        CommandV1::DeadLetterNow(DeadLetterNow {
            row_id: RowId(271),
            fence: Some(Fence(272)),
            error: s("poison"),
        }),
        CommandV1::Replay(Replay {
            message_id: MessageId(281),
        }),
        CommandV1::ReplayDead(ReplayDead {
            channel: some("orders"),
            destination: some("dest-e"),
        }),
        CommandV1::CancelQueued(CancelQueued {
            destination: s("dest-f"),
            channel: some("orders"),
            top_only: true,
        }),
        CommandV1::PutConfig(PutConfig {
            expected_version: 291,
            config: config_doc(),
        }),
        CommandV1::WriteReferenceSnapshot(WriteReferenceSnapshotV1 {
            name: s("ref-1"),
            version: 301,
            rows: reference_rows(),
        }),
        CommandV1::PurgeMessageBodies(PurgeMessageBodies { older_than: 311 }),
        CommandV1::PurgeDeadLetters(PurgeDeadLetters { older_than: 321 }),
        CommandV1::PurgeState(PurgeState { older_than: 331 }),
        CommandV1::ExpireRecords,
        CommandV1::RecordAudit(RecordAuditV1 {
            action: s("user.login"),
            channel: some("orders"),
            org: some("org-1"),
            detail: some("from 10.0.0.1"),
        }),
        CommandV1::SealAuditEpoch(SealAuditEpoch { org: s("org-2") }),
        CommandV1::CreateApproval(CreateApprovalV1 {
            operation: s("purge"),
            params: s(r#"{"older_than":1}"#),
            ttl_ms: 86_400_000,
        }),
        CommandV1::DecideApproval(DecideApprovalV1 {
            id: ApprovalId(341),
            approve: true,
        }),
        CommandV1::PutPrincipal(PutPrincipal {
            name: s("alice"),
            token_hash: s(TOKEN_HASH),
            role: Role::Operator,
            channels: Some(vec![s("orders"), s("billing")]),
        }),
        CommandV1::RevokePrincipal(RevokePrincipal { name: s("bob") }),
        CommandV1::Batch(Batch {
            commands: vec![
                Envelope::new(
                    NOW + 1,
                    "batch-actor-1",
                    Command::MarkDone(MarkDone {
                        row_id: RowId(351),
                        fence: Fence(352),
                    }),
                ),
                Envelope::new(NOW + 2, "batch-actor-2", Command::ExpireRecords)
                    .with_request_id("batch-request-2"),
            ],
        }),
        CommandV1::RewriteValues(RewriteValues {
            items: vec![Rewrite {
                target: ValueRef::RowPayload { row_id: RowId(361) },
                expected: s("old-ciphertext"),
                value: s("new-ciphertext"),
            }],
        }),
        CommandV1::DoneThenClaimNext(DoneThenClaimNext {
            row_id: RowId(371),
            fence: Fence(372),
            owner: s("worker-5"),
            ttl_ms: 30_005,
        }),
        CommandV1::CreateUser(CreateUser {
            user_id: s("user-801"),
            username: s("alice.801"),
            auth_provider: AuthProvider::Ad,
            display_name: some("Alice Example"),
            email: some("alice@example.org"),
            password_hash: some("$argon2id$v=19$hash-801"),
            must_change_password: true,
        }),
        CommandV1::UpdateUser(UpdateUser {
            user_id: s("user-802"),
            change: UserChange::LoginFailure {
                failed_attempts: 803,
                locked_until: Some(NOW + 804),
            },
        }),
        CommandV1::DeleteUser(DeleteUser {
            user_id: s("user-805"),
        }),
        CommandV1::UpsertRole(UpsertRole {
            role_id: s("role-806"),
            display_name: s("Role 806"),
            description: some("may do 806 things"),
            builtin: true,
        }),
        CommandV1::SetUserRoles(SetUserRoles {
            user_id: s("user-807"),
            role_ids: vec![s("role-808"), s("role-809")],
            assigned_by: some("admin-810"),
        }),
        CommandV1::SetAdGroupMap(SetAdGroupMap {
            map: AdGroupMap::Scope,
            entries: vec![(s("Group-811"), s("channel-812")), (s("g-813"), s("c-814"))],
        }),
        CommandV1::CreateSession(CreateSession {
            token_hash: s(TOKEN_HASH),
            user_id: s("user-815"),
            expires_at: NOW + 816,
            client: some("10.0.8.17"),
            seed_reauth: true,
        }),
        CommandV1::UpdateSession(UpdateSession {
            token_hash: s(TOKEN_HASH),
            change: SessionChange::Reauthed {
                client: some("10.0.8.18"),
            },
        }),
        CommandV1::RevokeUserSessions(RevokeUserSessions {
            user_id: s("user-819"),
            except_token_hash: some("hash-820"),
        }),
        CommandV1::EnforceSessionCap(EnforceSessionCap {
            user_id: s("user-821"),
            keep: 822,
        }),
        CommandV1::PurgeExpiredSessions(PurgeExpiredSessions),
        // --- messagefoundry store: queue side ---
        CommandV1::ClaimFifoHead(ClaimFifoHead {
            stage: Stage::Routed,
            lane: s("lane-mf-1"),
            owner: s("store-owner-1"),
            lane_owner: some("node-1"),
            ttl_ms: 30_006,
        }),
        CommandV1::ResetStaleInflight(ResetStaleInflight {
            stage: Some(Stage::Response),
        }),
        CommandV1::DeadLetterMissingDestinations(DeadLetterMissingDestinations {
            destinations: vec![s("dest-mf-1"), s("dest-mf-2")],
        }),
        CommandV1::DeadLetterMissingHandlers(DeadLetterMissingHandlers {
            handlers: vec![s("handler-mf-1")],
        }),
        CommandV1::RecordAuditAs(RecordAuditAsV1 {
            action: s("auth.login"),
            actor: some("alice"),
            channel: some("chan-mf-1"),
            org: some("messagefoundry"),
            detail: some("from 10.0.0.1"),
        }),
        CommandV1::RecordView(RecordView {
            message_id: MessageId(381),
            viewer: some("alice"),
        }),
        CommandV1::IngressHandoffKeyed(IngressHandoffKeyedV1 {
            row_id: RowId(391),
            fence: Fence(392),
            loopback_channel: s("loop-mf-1"),
            depth_cap: 8,
            child_key: s("0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
            control_id: some("R1"),
            message_type: some("RSP^K11"),
            summary: some("reply summary"),
            peek_failed: true,
        }),
        CommandV1::WriteReferenceSnapshotText(WriteReferenceSnapshotTextV1 {
            name: s("ref-mf-1"),
            version: s("v7"),
            rows: reference_rows(),
        }),
        CommandV1::RecoverInflightOnPromotion(RecoverInflightOnPromotion {
            owner: s("store-owner-2"),
            lane_owner: some("node-2"),
        }),
        CommandV1::CreateApprovalAs(CreateApprovalAsV1 {
            key: s("approval-key-1"),
            operation: s("replay_dead"),
            params: s(r#"{"destination":"d"}"#),
            requester: s("alice"),
            requested_at: 401,
            expires_at: Some(402),
        }),
        CommandV1::DecideApprovalAs(DecideApprovalAsV1 {
            key: s("approval-key-1"),
            status: ApprovalStatus::Expired,
            approver: some("bob"),
            decided_at: 403,
        }),
        CommandV1::AtClientTime(AtClientTime {
            now_ms: 404,
            command: Box::new(CommandV1::RecordView(RecordView {
                message_id: MessageId(405),
                viewer: some("carol"),
            })),
        }),
        // --- engine coordination ---
        CommandV1::NodeHeartbeat(NodeHeartbeat {
            node_id: s("engine-1"),
            host: some("host-a"),
            pid: Some(406),
        }),
        CommandV1::NodeLeave(NodeLeave {
            node_id: s("engine-1"),
        }),
        CommandV1::CampaignLeadership(CampaignLeadership {
            group: s("messagefoundry"),
            node_id: s("engine-2"),
            ttl_ms: 407,
        }),
        CommandV1::ResignLeadership(ResignLeadership {
            group: s("messagefoundry"),
            node_id: s("engine-2"),
        }),
        CommandV1::BumpCounter(BumpCounter {
            name: s("config_version"),
        }),
        CommandV1::ConsumeApproval(ConsumeApproval {
            id: ApprovalId(408),
            operation: s("purge"),
            params: s(r#"{"scope":"bodies","older_than_ms":409}"#),
        }),
        CommandV1::SetPrincipalOrgs(SetPrincipalOrgs {
            name: s("auditor-410"),
            orgs: Some(vec![s("org-411")]),
        }),
        CommandV1::Fingerprinted(Fingerprinted {
            fingerprint: bytes32(0x90),
            command: Box::new(CommandV1::BumpCounter(BumpCounter {
                name: s("counter-911"),
            })),
        }),
        CommandV1::IssueToken(IssueToken {
            principal: PutPrincipal {
                name: s("alice-921"),
                token_hash: s(TOKEN_HASH),
                role: Role::Operator,
                channels: Some(vec![s("orders")]),
            },
            nonce: s("0123456789abcdef0123456789abc922"),
        }),
        CommandV1::RetentionPage(RetentionPage {
            pass: RetentionPass::DeleteFailed,
            older_than: NOW + 931,
            limit: 932,
        }),
        CommandV1::SessionAt(SessionAt {
            at: NOW - 941,
            write: SessionWrite::Update(UpdateSession {
                token_hash: s(TOKEN_HASH),
                change: SessionChange::Reauthed {
                    client: some("10.0.9.42"),
                },
            }),
        }),
        CommandV1::HandOnThenClaimNext(HandOnThenClaimNext {
            action: HandOn::Handoff(Handoff {
                row_id: RowId(961),
                fence: Fence(962),
                deliveries: vec![delivery("dest-963", "payload-963")],
                disposition: HandoffDisposition::Routed,
            }),
            owner: s("worker-964"),
            ttl_ms: 965,
        }),
        CommandV1::AsOperator(AsOperator {
            command: Box::new(CommandV1::DeadLetterNow(DeadLetterNow {
                row_id: RowId(981),
                fence: None,
                error: s("operator override 982"),
            })),
        }),
        CommandV1::ReserveOwner(ReserveOwner {
            owner: s("engine-992"),
            principal: some("engine-a"),
        }),
        CommandV1::SetDestinationPaused(SetDestinationPaused {
            destination: s("dest-993"),
            paused: true,
            reason: some("maintenance 994"),
        }),
        CommandV1::SetLogFormat(SetLogFormat { format: 2 }),
    ]
}

fn hand_on_variant(v: &HandOn) -> &'static str {
    match v {
        HandOn::Route(_) => "Route",
        HandOn::Handoff(_) => "Handoff",
        HandOn::Transform(_) => "Transform",
    }
}

fn hand_on_examples() -> Vec<HandOn> {
    vec![
        HandOn::Route(RouteHandoff {
            row_id: RowId(971),
            fence: Fence(972),
            handlers: vec![HandlerWork {
                handler: s("handler-973"),
                payload: s("handler-payload-973"),
            }],
            disposition: RouteDisposition::Routed,
        }),
        HandOn::Handoff(Handoff {
            row_id: RowId(974),
            fence: Fence(975),
            deliveries: vec![delivery("dest-976", "payload-976")],
            disposition: HandoffDisposition::Unrouted,
        }),
        HandOn::Transform(TransformHandoff {
            row_id: RowId(977),
            fence: Fence(978),
            deliveries: vec![delivery("dest-979", "payload-979")],
            state_ops: vec![StateOp {
                namespace: s("ns-980"),
                key: s("key-980"),
                value: s(r#"{"n":980}"#),
            }],
        }),
    ]
}

fn retention_pass_variant(v: &RetentionPass) -> &'static str {
    match v {
        RetentionPass::IndexEnded => "IndexEnded",
        RetentionPass::BlankBodies => "BlankBodies",
        RetentionPass::BlankFailedBodies => "BlankFailedBodies",
        RetentionPass::BlankDeadLetters => "BlankDeadLetters",
        RetentionPass::DeleteEnded => "DeleteEnded",
        RetentionPass::DeleteFailed => "DeleteFailed",
    }
}

fn user_change_examples() -> Vec<UserChange> {
    vec![
        UserChange::Password {
            password_hash: s("$argon2id$v=19$hash-831"),
            must_change_password: true,
        },
        UserChange::Disabled(true),
        UserChange::Profile {
            display_name: some("Display 832"),
            email: some("u832@example.org"),
        },
        UserChange::TotpSecret(some("sealed-secret-833")),
        UserChange::EnableTotp {
            recovery_code_hashes: vec![s("code-hash-834"), s("code-hash-835")],
        },
        UserChange::DisableTotp,
        UserChange::ConsumeRecoveryCode {
            code_hash: s("code-hash-836"),
        },
        UserChange::ConsumeTotpStep { step: 56_666_837 },
        UserChange::LoginSuccess,
        UserChange::LoginFailure {
            failed_attempts: 838,
            locked_until: Some(NOW + 839),
        },
        UserChange::ChannelScope(some(r#"["orders","billing"]"#)),
    ]
}

fn session_change_examples() -> Vec<SessionChange> {
    vec![
        SessionChange::Touch,
        SessionChange::Reauthed {
            client: some("10.0.8.41"),
        },
        SessionChange::MfaVerified,
        SessionChange::Revoke,
    ]
}

fn session_write_variant(v: &SessionWrite) -> &'static str {
    match v {
        SessionWrite::Create(_) => "Create",
        SessionWrite::Update(_) => "Update",
        SessionWrite::RevokeUser(_) => "RevokeUser",
        SessionWrite::Cap(_) => "Cap",
    }
}

fn session_write_examples() -> Vec<SessionWrite> {
    vec![
        SessionWrite::Create(CreateSession {
            token_hash: s(TOKEN_HASH),
            user_id: s("user-951"),
            expires_at: NOW + 952,
            client: some("10.0.9.53"),
            seed_reauth: true,
        }),
        SessionWrite::Update(UpdateSession {
            token_hash: s(TOKEN_HASH),
            change: SessionChange::MfaVerified,
        }),
        SessionWrite::RevokeUser(RevokeUserSessions {
            user_id: s("user-954"),
            except_token_hash: some(TOKEN_HASH),
        }),
        SessionWrite::Cap(EnforceSessionCap {
            user_id: s("user-955"),
            keep: 956,
        }),
    ]
}

fn outcome_examples() -> Vec<Outcome> {
    vec![
        Outcome::Enqueued {
            message_id: MessageId(401),
            duplicate: true,
        },
        Outcome::Claimed(vec![claimed_row(1), claimed_row(2)]),
        Outcome::FifoClaimed(Ok(claimed_row(3))),
        Outcome::Count(411),
        Outcome::HandedOff(true),
        Outcome::Reingressed(Some(MessageId(421))),
        Outcome::Failed {
            dead: true,
            next_attempt_at: 431,
        },
        Outcome::ConfigVersion(441),
        Outcome::Audit {
            seq: 451,
            hash: hex::encode(bytes32(0x40)),
        },
        Outcome::Approval(ApprovalId(461)),
        Outcome::Done,
        Outcome::Batch(vec![
            Ok(Outcome::Count(471)),
            Err(Rejection::UnknownRow(RowId(472))),
        ]),
        Outcome::Repeated {
            index: 481,
            response: Box::new(Ok(Outcome::Enqueued {
                message_id: MessageId(482),
                duplicate: true,
            })),
        },
        Outcome::Leader(LeaderLease {
            owner: s("engine-2"),
            expires_at: 493,
            fence: Fence(494),
        }),
        Outcome::TokenIssued {
            nonce: s("0123456789abcdef0123456789abc495"),
        },
        Outcome::RetentionPaged {
            examined: 501,
            purged: 502,
            next: Some(RetentionCursor {
                at: NOW + 503,
                message_id: MessageId(504),
            }),
        },
        Outcome::HandedOnThenClaimed {
            applied: true,
            next: Some(Ok(claimed_row(5))),
        },
        Outcome::Dated {
            created_at: vec![NOW - 505, NOW - 506],
            outcome: Box::new(Outcome::Claimed(vec![claimed_row(7), claimed_row(8)])),
        },
    ]
}

fn fifo_empty_examples() -> Vec<FifoEmpty> {
    vec![
        FifoEmpty::Empty,
        FifoEmpty::NotDue { due_at: 491 },
        FifoEmpty::LaneBusy {
            holder: s("worker-6"),
            expires_at: 492,
        },
    ]
}

fn rejection_examples() -> Vec<Rejection> {
    vec![
        Rejection::Invalid {
            field: s("limit"),
            reason: s("must be positive"),
        },
        Rejection::UnknownMessage(MessageId(501)),
        Rejection::UnknownRow(RowId(502)),
        Rejection::UnknownApproval(ApprovalId(503)),
        Rejection::UnknownPrincipal(s("carol")),
        Rejection::WrongStatus {
            row: RowId(504),
            status: s("done"),
            expected: s("inflight"),
        },
        Rejection::WrongStage {
            row: RowId(505),
            stage: s("routed"),
        },
        Rejection::StaleFence {
            row: RowId(506),
            presented: Fence(507),
            current: Some(Fence(508)),
        },
        Rejection::LaneBusy {
            lane: s("lane-3"),
            holder: s("worker-7"),
            expires_at: 509,
        },
        Rejection::VersionMismatch {
            expected: 510,
            current: 511,
        },
        Rejection::AlreadyDecided(ApprovalId(512)),
        Rejection::ApprovalExpired(ApprovalId(513)),
        Rejection::SelfApproval,
        Rejection::AlreadyExists {
            field: s("username"),
            value: s("alice.851"),
        },
        Rejection::UnknownUser(s("user-852")),
        Rejection::UnknownRole(s("role-853")),
        // --- messagefoundry store: queue side ---
        Rejection::UnknownApprovalKey(s("approval-key-2")),
        Rejection::ApprovalNotUsable {
            id: ApprovalId(514),
            reason: s("it was already used"),
        },
        Rejection::OwnerOfAnother {
            owner: s("worker-7"),
            principal: s("alice"),
        },
        Rejection::RequestIdReused {
            request_id: s("golden-request-0002/3"),
        },
        Rejection::ClaimOfAnother { row: RowId(983) },
        Rejection::NameOfAnother {
            field: s("node_id"),
            name: s("engine-991"),
            principal: s("engine-a"),
        },
        Rejection::UnknownChannel {
            field: s("channel"),
            channel: s("lab-unconfigured"),
        },
    ]
}

fn value_ref_examples() -> Vec<ValueRef> {
    vec![
        ValueRef::MessageRaw {
            message_id: MessageId(521),
        },
        ValueRef::MessageError {
            message_id: MessageId(522),
        },
        ValueRef::RowPayload { row_id: RowId(523) },
        ValueRef::RowLastError { row_id: RowId(524) },
        ValueRef::EventDetail {
            message_id: MessageId(525),
            event_no: 526,
        },
        ValueRef::ResponseBody {
            message_id: MessageId(527),
            destination: s("dest-g"),
            seq: 528,
        },
        ValueRef::ResponseDetail {
            message_id: MessageId(529),
            destination: s("dest-h"),
            seq: 530,
        },
        ValueRef::StateValue {
            namespace: s("ns-2"),
            key: s("key-2"),
        },
        ValueRef::ReferenceValue {
            name: s("ref-2"),
            key: s("key-3"),
        },
    ]
}

// ------------------------------------------------------------------------------------------
// Mirrors of the stored records whose types are private to the crate. Their layout is pinned
// here and checked against real stored bytes in `stored_values_of_a_live_state_have_the_golden_types`.
// ------------------------------------------------------------------------------------------

/// `Table::Idempotency` value (`messages::IdempotencyRecord`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct IdempotencyRecordWire {
    message_id: MessageId,
    expires_at: Option<Millis>,
}

/// `Table::Requests` value (`request::RequestRecord`): a remembered answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct RequestRecordWire {
    index: u64,
    expires_at: Millis,
    response: Response,
}

// ------------------------------------------------------------------------------------------
// Stored values, one per table
// ------------------------------------------------------------------------------------------

/// The stored user of `stored.hex`: every optional field set.
fn user_example() -> User {
    User {
        id: s("user-874"),
        username: s("alice.874"),
        auth_provider: AuthProvider::Local,
        display_name: some("Alice 874"),
        email: some("alice874@example.org"),
        disabled: true,
        created_at: 875,
        updated_at: 876,
        last_login_at: Some(877),
        password_hash: some("$argon2id$v=19$hash-878"),
        password_changed_at: Some(879),
        must_change_password: true,
        failed_attempts: 880,
        locked_until: Some(881),
        channel_scope: some(r#"["orders"]"#),
        totp_secret: some("sealed-secret-882"),
        totp_enabled: true,
        totp_enrolled_at: Some(883),
        recovery_code_hashes: vec![s("code-hash-884"), s("code-hash-885")],
        last_totp_step: Some(56_666_886),
    }
}

/// The golden cases of the values stored in `table` (empty for index tables, whose values are
/// always empty: everything is in the key).
fn stored_cases(table: Table) -> Vec<Case> {
    let (_, cf) = table_name(table);
    let name = |ty: &str| format!("{cf}.{ty}");
    match table {
        Table::Meta => vec![
            codec_case(
                name("MetaState"),
                MetaState {
                    clock: 1_700_000_000_999,
                    next_message_id: 601,
                    next_row_id: 602,
                    last_applied: 603,
                    row_counts: [
                        [1, 2, 3, 4, 5],
                        [6, 7, 8, 9, 10],
                        [11, 12, 13, 14, 15],
                        [16, 17, 18, 19, 20],
                    ],
                },
            ),
            codec_case(name("LogFormat"), 2u32),
        ],
        Table::Messages => vec![codec_case(
            name("Message"),
            Message {
                id: MessageId(611),
                channel_id: s("orders"),
                received_at: 612,
                source_type: some("mllp"),
                control_id: some("ctl-1"),
                message_type: some("ADT^A01"),
                raw: s("MSH|stored"),
                status: MessageStatus::Processed,
                error: some("earlier error"),
                summary: some("summary"),
                metadata: some(r#"{"k":"v"}"#),
                correlation: Some(Correlation {
                    correlation_id: MessageId(613),
                    root_id: MessageId(614),
                    depth: 2,
                    reingress_of_seq: 3,
                }),
                idempotency_key: some("idem-3"),
                purged: true,
            },
        )],
        Table::Rows => vec![codec_case(
            name("WorkRow"),
            WorkRow {
                id: RowId(621),
                message_id: MessageId(622),
                stage: Stage::Outbound,
                channel_id: s("orders"),
                destination_name: some("dest-a"),
                handler_name: some("handler-1"),
                payload: s("payload"),
                status: RowStatus::Inflight,
                attempts: 3,
                next_attempt_at: 623,
                last_error: some("timeout"),
                created_at: 624,
                updated_at: 625,
                claim: Some(Claim {
                    owner: s("worker-1"),
                    lease_expires_at: 626,
                    fence: Fence(627),
                }),
                last_fence: Some(Fence(628)),
            },
        )],
        Table::Events => vec![codec_case(
            name("Event"),
            Event {
                ts: 631,
                event: EventKind::Delivered,
                destination: some("dest-a"),
                detail: some("attempt 1"),
            },
        )],
        Table::Lanes => vec![codec_case(
            name("LaneState"),
            LaneState {
                max_created_at: 641,
                lease: Some(LaneLease {
                    owner: s("worker-2"),
                    expires_at: 642,
                }),
            },
        )],
        Table::Responses => vec![codec_case(
            name("CapturedResponse"),
            CapturedResponse {
                message_id: MessageId(651),
                destination: s("dest-a"),
                response_seq: 2,
                body: s("ack"),
                outcome: s("ok"),
                detail: some("200"),
                captured_at: 652,
            },
        )],
        Table::State => vec![codec_case(
            name("StateEntry"),
            StateEntry {
                value: s(r#"{"n":1}"#),
                set_at: 661,
                message_id: MessageId(662),
            },
        )],
        Table::StateNamespaces => vec![codec_case(name("u64"), 671u64)],
        Table::Reference => vec![codec_case(
            name("ReferenceSnapshot"),
            ReferenceSnapshot {
                version: 681,
                rows: reference_rows(),
                synced_at: 682,
                row_count: 2,
            },
        )],
        Table::Config => vec![codec_case(
            name("ConfigVersion"),
            ConfigVersion {
                version: 691,
                doc: config_doc(),
                set_at: 692,
                set_by: s("admin"),
            },
        )],
        Table::Audit => vec![codec_case(
            name("AuditRow"),
            AuditRow {
                seq: 701,
                ts: 702,
                actor: some("alice"),
                action: s("config.change"),
                channel_id: some("orders"),
                org: s("default"),
                detail: some("version 1"),
                prev_hash: bytes32(0x00),
                hash: bytes32(0x80),
                // Kept beside the row (AuditPrincipals), never in its encoding.
                principal: None,
            },
        )],
        Table::AuditHeads => vec![codec_case(
            name("AuditHead"),
            AuditHead {
                count: 711,
                head_hash: bytes32(0x20),
                era: 712,
            },
        )],
        Table::Idempotency => vec![codec_case(
            name("IdempotencyRecord"),
            IdempotencyRecordWire {
                message_id: MessageId(721),
                expires_at: Some(722),
            },
        )],
        Table::Approvals => vec![codec_case(
            name("Approval"),
            Approval {
                id: ApprovalId(731),
                operation: s("purge"),
                params: s(r#"{"older_than":1}"#),
                requester: s("alice"),
                requested_at: 732,
                status: ApprovalStatus::Approved,
                approver: some("bob"),
                decided_at: Some(733),
                expires_at: 734,
            },
        )],
        Table::Principals => vec![codec_case(
            name("Principal"),
            Principal {
                name: s("alice"),
                token_hash: s(TOKEN_HASH),
                role: Role::Worker,
                channels: Some(vec![s("orders"), s("billing")]),
                created_at: 741,
            },
        )],
        Table::PrincipalTokens => vec![codec_case(name("String"), s("alice"))],
        Table::Children => vec![codec_case(name("MessageId"), MessageId(751))],
        Table::Requests => vec![codec_case(
            name("RequestRecord"),
            RequestRecordWire {
                index: 761,
                expires_at: 762,
                response: Ok(Outcome::Enqueued {
                    message_id: MessageId(763),
                    duplicate: true,
                }),
            },
        )],
        Table::EventCounts => vec![codec_case(name("u64"), 771u64)],
        Table::Users => vec![codec_case(name("User"), user_example())],
        Table::Usernames => vec![codec_case(name("String"), s("user-861"))],
        Table::UserRoles => vec![codec_case(
            name("RoleAssignment"),
            RoleAssignment {
                role_id: s("role-862"),
                assigned_at: 863,
                assigned_by: some("admin-864"),
            },
        )],
        Table::Roles => vec![codec_case(
            name("AuthRole"),
            AuthRole {
                id: s("role-865"),
                display_name: s("Role 865"),
                description: some("may do 865 things"),
                builtin: true,
            },
        )],
        Table::Sessions => vec![codec_case(
            name("Session"),
            Session {
                token_hash: s(TOKEN_HASH),
                user_id: s("user-866"),
                created_at: 867,
                expires_at: 868,
                last_used_at: 869,
                revoked_at: Some(870),
                client: some("10.0.8.71"),
                reauth_at: Some(872),
                mfa_verified_at: Some(873),
            },
        )],
        // --- messagefoundry store: queue side ---
        Table::AuditIndexFrom => vec![codec_case(name("u64"), 781u64)],
        Table::ChildKeys => vec![codec_case(name("MessageId"), MessageId(791))],
        Table::ReferenceLabels => vec![codec_case(name("String"), s("v-label-1"))],
        Table::ApprovalKeys => vec![codec_case(name("ApprovalId"), ApprovalId(801))],
        Table::ApprovalKeyOf => vec![codec_case(name("String"), s("approval-key-3"))],
        // --- engine coordination ---
        Table::EngineNodes => vec![codec_case(
            name("NodeRecord"),
            NodeRecord {
                node_id: s("engine-1"),
                host: some("host-a"),
                pid: Some(901),
                started_at: 902,
                last_seen: 903,
                status: NodeStatus::Left,
            },
        )],
        Table::Leadership => vec![codec_case(
            name("LeaderLease"),
            LeaderLease {
                owner: s("engine-1"),
                expires_at: 904,
                fence: Fence(905),
            },
        )],
        Table::Counters => vec![codec_case(name("u64"), 906u64)],
        Table::LeaseOwners => vec![codec_case(name("String"), s("worker-a"))],
        Table::PrincipalOrgs => vec![codec_case(
            name("Vec<String>"),
            vec![s("org-a"), s("org-b")],
        )],
        Table::RequestFingerprints => vec![codec_case(name("Fingerprint"), bytes32(0xa0))],
        Table::MessageEnds => vec![codec_case(
            name("MessageEnd"),
            MessageEnd {
                failed: true,
                at: NOW + 941,
            },
        )],
        Table::RetentionCursors => vec![codec_case(
            name("RetentionCursor"),
            RetentionCursor {
                at: NOW + 942,
                message_id: MessageId(943),
            },
        )],
        Table::Tallies => vec![codec_case(name("u64"), 907u64)],
        Table::RowRetry => vec![codec_case(
            name("RetryPolicy"),
            RetryPolicy {
                max_attempts: Some(u32::MAX),
                backoff_ms: 911,
                multiplier_milli: 1_500,
                max_backoff_ms: 912_000,
            },
        )],
        Table::AuditPrincipals => vec![codec_case(name("String"), s("engine"))],
        Table::PausedDestinations => vec![codec_case(
            name("PausedDestination"),
            PausedDestination {
                paused_by: s("ops-995"),
                paused_at: 996,
                reason: some("maintenance 997"),
            },
        )],
        // Index tables: key only, the value is always empty.
        Table::MessageRows
        | Table::LanePending
        | Table::LaneInflight
        | Table::Due
        | Table::Leases
        | Table::DeadRows
        | Table::IdempotencyExpiry
        | Table::RequestExpiry
        | Table::AdGroupMaps
        | Table::UserSessions
        | Table::SessionExpiry
        | Table::AuditActors
        | Table::EndedMessages => Vec::new(),
    }
}

/// Check one `(table, key, value)` of a real state against the type pinned for its table:
/// the value decodes as that type and re-encodes to the same bytes.
fn verify_live_value(table: Table, key: &[u8], value: &[u8]) -> Result<(), String> {
    match table {
        Table::Meta => {
            if key == meta::STATE {
                reencodes::<MetaState>(value)
            } else if key == meta::LOG_FORMAT {
                reencodes::<u32>(value)
            } else if key.starts_with(meta::EXTERNAL_PREFIX) {
                Ok(()) // opaque bytes of the Raft adapter
            } else {
                Err(format!("unexpected meta key {}", hex::encode(key)))
            }
        }
        Table::Messages => reencodes::<Message>(value),
        Table::Rows => reencodes::<WorkRow>(value),
        Table::Events => reencodes::<Event>(value),
        Table::Lanes => reencodes::<LaneState>(value),
        Table::Responses => reencodes::<CapturedResponse>(value),
        Table::State => reencodes::<StateEntry>(value),
        Table::StateNamespaces => reencodes::<u64>(value),
        Table::Reference => reencodes::<ReferenceSnapshot>(value),
        Table::Config => reencodes::<ConfigVersion>(value),
        Table::Audit => reencodes::<AuditRow>(value),
        Table::AuditHeads => reencodes::<AuditHead>(value),
        Table::Idempotency => reencodes::<IdempotencyRecordWire>(value),
        Table::Approvals => reencodes::<Approval>(value),
        Table::Principals => reencodes::<Principal>(value),
        Table::PrincipalTokens => reencodes::<String>(value),
        Table::Children => reencodes::<MessageId>(value),
        Table::Requests => reencodes::<RequestRecordWire>(value),
        Table::EventCounts => reencodes::<u64>(value),
        Table::Users => reencodes::<User>(value),
        Table::Usernames => reencodes::<String>(value),
        Table::UserRoles => reencodes::<RoleAssignment>(value),
        Table::Roles => reencodes::<AuthRole>(value),
        Table::Sessions => reencodes::<Session>(value),
        Table::AuditIndexFrom => reencodes::<u64>(value),
        Table::ChildKeys => reencodes::<MessageId>(value),
        Table::ReferenceLabels => reencodes::<String>(value),
        Table::ApprovalKeys => reencodes::<ApprovalId>(value),
        Table::ApprovalKeyOf => reencodes::<String>(value),
        Table::EngineNodes => reencodes::<NodeRecord>(value),
        Table::Leadership => reencodes::<LeaderLease>(value),
        Table::Counters => reencodes::<u64>(value),
        Table::LeaseOwners => reencodes::<String>(value),
        Table::PrincipalOrgs => reencodes::<Vec<String>>(value),
        Table::RequestFingerprints => reencodes::<[u8; 32]>(value),
        Table::MessageEnds => reencodes::<MessageEnd>(value),
        Table::RetentionCursors => reencodes::<RetentionCursor>(value),
        Table::Tallies => reencodes::<u64>(value),
        Table::RowRetry => reencodes::<RetryPolicy>(value),
        Table::AuditPrincipals => reencodes::<String>(value),
        Table::PausedDestinations => reencodes::<PausedDestination>(value),
        Table::MessageRows
        | Table::LanePending
        | Table::LaneInflight
        | Table::Due
        | Table::Leases
        | Table::DeadRows
        | Table::IdempotencyExpiry
        | Table::RequestExpiry
        | Table::AdGroupMaps
        | Table::UserSessions
        | Table::SessionExpiry
        | Table::AuditActors
        | Table::EndedMessages => {
            if value.is_empty() {
                Ok(())
            } else {
                Err(format!("index value not empty: {}", hex::encode(value)))
            }
        }
    }
}

fn reencodes<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Result<(), String> {
    let value: T = codec::decode(bytes).map_err(|e| e.to_string())?;
    let again = codec::try_encode(&value).map_err(|e| e.to_string())?;
    if again == bytes {
        Ok(())
    } else {
        Err(format!(
            "re-encodes differently: {} vs {}",
            hex::encode(&again),
            hex::encode(bytes)
        ))
    }
}

// ------------------------------------------------------------------------------------------
// Cases and golden files
// ------------------------------------------------------------------------------------------

/// Checks that golden bytes decode back to a case's example.
type DecodeCheck = Box<dyn Fn(&[u8]) -> Result<(), String>>;

/// One golden line: its name, the bytes the current code produces, and its decode check.
struct Case {
    name: String,
    bytes: Vec<u8>,
    check: DecodeCheck,
}

/// A value encoded with the crate's codec.
fn codec_case<T>(name: impl Into<String>, value: T) -> Case
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + 'static,
{
    let name = name.into();
    let bytes = codec::try_encode(&value).unwrap_or_else(|e| panic!("{name}: {e}"));
    Case {
        name,
        bytes,
        check: Box::new(move |golden| {
            let decoded: T = codec::decode(golden).map_err(|e| format!("does not decode: {e}"))?;
            if decoded == value {
                Ok(())
            } else {
                Err(format!("decodes to {decoded:?}, expected {value:?}"))
            }
        }),
    }
}

/// A JSON document the state machine stores inside a string field.
fn json_case<T>(name: impl Into<String>, value: T) -> Case
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + 'static,
{
    let name = name.into();
    let bytes = serde_json::to_vec(&value).unwrap_or_else(|e| panic!("{name}: {e}"));
    Case {
        name,
        bytes,
        check: Box::new(move |golden| {
            let decoded: T =
                serde_json::from_slice(golden).map_err(|e| format!("does not decode: {e}"))?;
            if decoded == value {
                Ok(())
            } else {
                Err(format!("decodes to {decoded:?}, expected {value:?}"))
            }
        }),
    }
}

/// The cases of one enum: `{label}.{Variant}` for each example, encoded as `wrap(example)`.
/// Panics unless the examples name every variant serde declares for `T`, once each, in
/// declaration order (= encoding position).
fn enum_cases<T, W>(
    label: &str,
    examples: Vec<T>,
    variant: fn(&T) -> &'static str,
    wrap: impl Fn(T) -> W,
) -> Vec<Case>
where
    T: DeserializeOwned,
    W: Serialize + DeserializeOwned + PartialEq + Debug + 'static,
{
    let names: Vec<&'static str> = examples.iter().map(variant).collect();
    assert_covers_variants::<T>(label, &names);
    examples
        .into_iter()
        .zip(names)
        .map(|(example, name)| codec_case(format!("{label}.{name}"), wrap(example)))
        .collect()
}

fn assert_covers_variants<T: DeserializeOwned>(label: &str, names: &[&str]) {
    let norm = |n: &str| n.replace('_', "").to_ascii_lowercase();
    let declared: Vec<String> = probe::variants::<T>().iter().map(|v| norm(v)).collect();
    let examples: Vec<String> = names.iter().map(|v| norm(v)).collect();
    assert_eq!(
        examples, declared,
        "{label}: the examples must be exactly one per variant, in declaration order \
         (left: examples, right: variants serde declares). A new variant needs an example \
         in this file; see the rules at the top."
    );
}

/// Reads the variant list serde's derive declares for an enum: deserializing from this probe
/// stops at `deserialize_enum` and reports its `variants` argument.
mod probe {
    use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
    use std::fmt;

    #[derive(Debug)]
    pub enum Stop {
        Variants(&'static [&'static str]),
        Other(String),
    }

    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl std::error::Error for Stop {}

    impl de::Error for Stop {
        fn custom<T: fmt::Display>(msg: T) -> Self {
            Stop::Other(msg.to_string())
        }
    }

    struct Probe;

    impl<'de> Deserializer<'de> for Probe {
        type Error = Stop;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
            Err(Stop::Other("not an enum".to_string()))
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            variants: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Stop> {
            Err(Stop::Variants(variants))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct
            identifier ignored_any
        }
    }

    pub fn variants<T: DeserializeOwned>() -> &'static [&'static str] {
        match T::deserialize(Probe) {
            Err(Stop::Variants(v)) => v,
            Err(Stop::Other(e)) => panic!("{}: {e}", std::any::type_name::<T>()),
            Ok(_) => panic!("{}: probe produced a value", std::any::type_name::<T>()),
        }
    }
}

const BLESS_VAR: &str = "RAFTLANE_GOLDEN_BLESS";

const GOLDEN_HEADER: &str = "\
# Golden wire encodings, see statemachine/tests/golden_wire.rs. One case a line: `name hex`.
# NEVER change or delete an existing line: old logs, remembered answers, snapshots and stored
# values would no longer decode. New variants go at the end of their enum; their lines are
# appended by RAFTLANE_GOLDEN_BLESS=1 and reviewed.
";

fn golden_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(file)
}

/// `(line number, name, bytes)` of each case line.
fn parse_golden(file: &str, text: &str) -> Vec<(usize, String, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, hex_text) = line.split_once(' ').unwrap_or((line, ""));
        let bytes = hex::decode(hex_text.trim())
            .unwrap_or_else(|e| panic!("{file}:{line_no}: bad hex for {name}: {e}"));
        out.push((line_no, name.to_string(), bytes));
    }
    out
}

/// Compare `cases` with the golden file: each case's name exactly once, its bytes equal to
/// the golden bytes, the golden bytes decoding to the example, and no other names. Missing
/// lines are appended (never rewritten) when `RAFTLANE_GOLDEN_BLESS=1`; the test fails anyway.
fn check_golden(file: &str, cases: Vec<Case>) {
    let mut seen = BTreeSet::new();
    for case in &cases {
        assert!(
            seen.insert(case.name.clone()),
            "{file}: two examples are named {}",
            case.name
        );
    }
    let path = golden_path(file);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let golden = parse_golden(file, &text);
    let mut errors = Vec::new();
    let mut by_name: BTreeMap<&str, (usize, &[u8])> = BTreeMap::new();
    for (line_no, name, bytes) in &golden {
        if let Some((first, _)) = by_name.insert(name, (*line_no, bytes)) {
            errors.push(format!(
                "{file}:{line_no}: {name} appears again (first on line {first})"
            ));
        }
    }
    let mut missing = Vec::new();
    for case in &cases {
        match by_name.get(case.name.as_str()) {
            None => missing.push(case),
            Some((line_no, bytes)) => {
                if *bytes != case.bytes.as_slice() {
                    errors.push(format!(
                        "{file}:{line_no}: {} ENCODING CHANGED: old logs/snapshots would no \
                         longer decode. Restore the wire layout (variant and field order, field \
                         types); do not edit the golden line.\n  golden:  {}\n  current: {}",
                        case.name,
                        hex::encode(bytes),
                        hex::encode(&case.bytes)
                    ));
                }
                if let Err(e) = (case.check)(bytes) {
                    errors.push(format!(
                        "{file}:{line_no}: golden bytes of {} {e}",
                        case.name
                    ));
                }
            }
        }
    }
    for (line_no, name, _) in &golden {
        if !seen.contains(name) {
            errors.push(format!(
                "{file}:{line_no}: {name} has no example: a variant or stored type was removed \
                 or renamed (removing a variant renumbers the ones after it)"
            ));
        }
    }
    if !missing.is_empty() {
        let lines: Vec<String> = missing
            .iter()
            .map(|c| format!("{} {}", c.name, hex::encode(&c.bytes)))
            .collect();
        if std::env::var(BLESS_VAR).as_deref() == Ok("1") {
            let mut append = String::new();
            if text.is_empty() {
                append.push_str(GOLDEN_HEADER);
            } else if !text.ends_with('\n') {
                append.push('\n');
            }
            for line in &lines {
                append.push_str(line);
                append.push('\n');
            }
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            }
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(append.as_bytes()))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            errors.push(format!(
                "{file}: BLESSED, appended {} line(s); review them, then rerun without \
                 {BLESS_VAR}:\n  {}",
                lines.len(),
                lines.join("\n  ")
            ));
        } else {
            errors.push(format!(
                "{file}: {} case(s) have no golden line. For a deliberately new variant (added \
                 at the end of its enum), run with {BLESS_VAR}=1 to append them, then review:\n  {}",
                lines.len(),
                lines.join("\n  ")
            ));
        }
    }
    assert!(errors.is_empty(), "\n{}\n", errors.join("\n"));
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

fn commands_cases() -> Vec<Case> {
    let mut cases = enum_cases("Command", command_examples(), command_v1_variant, envelope);
    cases.extend(enum_cases(
        "Stage",
        vec![
            Stage::Ingress,
            Stage::Routed,
            Stage::Outbound,
            Stage::Response,
        ],
        stage_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "ReceivedStatus",
        vec![ReceivedStatus::Filtered, ReceivedStatus::Error],
        received_status_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "RouteDisposition",
        vec![RouteDisposition::Routed, RouteDisposition::Unrouted],
        route_disposition_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "HandoffDisposition",
        vec![
            HandoffDisposition::Routed,
            HandoffDisposition::Filtered,
            HandoffDisposition::Unrouted,
        ],
        handoff_disposition_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "Role",
        vec![
            Role::Admin,
            Role::Operator,
            Role::Worker,
            Role::Viewer,
            Role::Metadata,
            Role::Engine,
        ],
        role_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "ValueRef",
        value_ref_examples(),
        value_ref_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "UserChange",
        user_change_examples(),
        user_change_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "SessionChange",
        session_change_examples(),
        session_change_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "AdGroupMap",
        vec![AdGroupMap::Roles, AdGroupMap::Scope],
        ad_group_map_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "AuthProvider",
        vec![AuthProvider::Local, AuthProvider::Ad],
        auth_provider_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "RetentionPass",
        RetentionPass::ALL.to_vec(),
        retention_pass_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "SessionWrite",
        session_write_examples(),
        session_write_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "HandOn",
        hand_on_examples(),
        hand_on_variant,
        |v| v,
    ));
    cases
}

fn outcomes_cases() -> Vec<Case> {
    let mut cases = enum_cases("Outcome", outcome_examples(), outcome_variant, |v| v);
    cases.extend(enum_cases(
        "FifoEmpty",
        fifo_empty_examples(),
        fifo_empty_variant,
        |v| Outcome::FifoClaimed(Err(v)),
    ));
    cases
}

fn stored_cases_all() -> Vec<Case> {
    let mut cases: Vec<Case> = Table::ALL.into_iter().flat_map(stored_cases).collect();
    cases.extend(enum_cases(
        "RowStatus",
        vec![
            RowStatus::Pending,
            RowStatus::Inflight,
            RowStatus::Done,
            RowStatus::Dead,
            RowStatus::Cancelled,
        ],
        row_status_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "MessageStatus",
        vec![
            MessageStatus::Received,
            MessageStatus::Routed,
            MessageStatus::Unrouted,
            MessageStatus::Filtered,
            MessageStatus::Processed,
            MessageStatus::Error,
        ],
        message_status_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "EventKind",
        vec![
            EventKind::Received,
            EventKind::Routed,
            EventKind::Unrouted,
            EventKind::Filtered,
            EventKind::Transformed,
            EventKind::Delivered,
            EventKind::Failed,
            EventKind::Dead,
            EventKind::Replayed,
            EventKind::Cancelled,
            EventKind::Reingressed,
            EventKind::Viewed,
            EventKind::Error,
        ],
        event_kind_variant,
        |v| v,
    ));
    cases.extend(enum_cases(
        "ApprovalStatus",
        vec![
            ApprovalStatus::Pending,
            ApprovalStatus::Approved,
            ApprovalStatus::Rejected,
            ApprovalStatus::Expired,
            ApprovalStatus::Consumed,
        ],
        approval_status_variant,
        |v| v,
    ));
    cases.push(json_case(
        "json.ResponseRef",
        ResponseRef {
            message_id: MessageId(781),
            destination: s("dest-a"),
            seq: 4,
        },
    ));
    cases.push(json_case(
        "json.SealRecord",
        SealRecord {
            era: 1,
            count: 782,
            head_hash: hex::encode(bytes32(0x60)),
        },
    ));
    cases
}

fn table_cases() -> Vec<Case> {
    Table::ALL
        .into_iter()
        .map(|table| {
            let (variant, cf) = table_name(table);
            let mut bytes = vec![table.tag()];
            bytes.extend_from_slice(cf.as_bytes());
            Case {
                name: format!("Table.{variant}"),
                bytes,
                check: Box::new(move |golden| {
                    let (tag, name) = golden.split_first().ok_or("empty")?;
                    if Table::from_tag(*tag) != Some(table) {
                        return Err(format!("tag {tag} is {:?}", Table::from_tag(*tag)));
                    }
                    if name != table.name().as_bytes() {
                        return Err(format!(
                            "column family is {:?}, golden {:?}",
                            table.name(),
                            String::from_utf8_lossy(name)
                        ));
                    }
                    Ok(())
                }),
            }
        })
        .collect()
}

#[test]
fn commands_match_golden() {
    check_golden("commands.hex", commands_cases());
}

/// Every command in a format 2 envelope (docs/SPEC.md §2.8), the batch's envelopes included.
fn format_2_envelope(command: CommandV1) -> Envelope {
    let mut envelope = envelope(command);
    envelope.set_format(LogFormat::V2);
    envelope
}

#[test]
fn format_2_envelopes_match_golden() {
    check_golden(
        "envelopes-v2.hex",
        enum_cases(
            "Format2",
            command_examples(),
            command_v1_variant,
            format_2_envelope,
        ),
    );
}

/// One example of every command of the one vocabulary (format 3), in its order: the format
/// 1/2 examples without the wrappers and the twins (each twin is its command with the optional
/// part, the first of the pair stands for both), then a decode-only `Nested`.
fn live_command_examples() -> Vec<Command> {
    let mut out: Vec<Command> = command_examples()
        .into_iter()
        .filter(|c| {
            !matches!(
                c,
                CommandV1::RecordAuditAs(_)
                    | CommandV1::IngressHandoffKeyed(_)
                    | CommandV1::WriteReferenceSnapshotText(_)
                    | CommandV1::CreateApprovalAs(_)
                    | CommandV1::DecideApprovalAs(_)
                    | CommandV1::AtClientTime(_)
                    | CommandV1::Fingerprinted(_)
                    | CommandV1::AsOperator(_)
            )
        })
        .map(|c| layout_v1::split(c).1)
        .collect();
    out.push(Command::Nested(Nested(codec::encode(
        &CommandV1::AsOperator(layout_v1::AsOperator {
            command: Box::new(CommandV1::Fingerprinted(layout_v1::Fingerprinted {
                fingerprint: bytes32(0xa0),
                command: Box::new(CommandV1::ExpireRecords),
            })),
        }),
    ))));
    out
}

/// Every command in a format 3 envelope, then the header fields that formats 1 and 2 wrote as
/// wrappers, and the twins' second forms (each now its command with the optional part).
fn format_3_cases() -> Vec<Case> {
    let v3 = |mut envelope: Envelope| {
        envelope.set_format(LogFormat::V3);
        envelope
    };
    let mut cases = enum_cases("Format3", live_command_examples(), command_variant, |c| {
        v3(Envelope::new(NOW, ACTOR, c).with_request_id(REQUEST_ID))
    });
    for example in command_examples() {
        let name = command_v1_variant(&example);
        if matches!(
            example,
            CommandV1::RecordAuditAs(_)
                | CommandV1::IngressHandoffKeyed(_)
                | CommandV1::WriteReferenceSnapshotText(_)
                | CommandV1::CreateApprovalAs(_)
                | CommandV1::DecideApprovalAs(_)
                | CommandV1::AtClientTime(_)
                | CommandV1::Fingerprinted(_)
                | CommandV1::AsOperator(_)
        ) {
            cases.push(codec_case(
                format!("Format3Header.{name}"),
                v3(envelope(example)),
            ));
        }
    }
    cases.push(codec_case(
        "Format3Header.Every",
        v3(Envelope::new(NOW, ACTOR, Command::ExpireRecords)
            .with_request_id(REQUEST_ID)
            .at_client_time(Some(NOW - 5))
            .fingerprinted(Some(bytes32(0xb0)))
            .as_operator(true)),
    ));
    cases
}

#[test]
fn format_3_envelopes_match_golden() {
    check_golden("envelopes-v3.hex", format_3_cases());
}

/// Format 4 is format 3's layout under its own number (its rule is in the answers): a command,
/// every header field, and a batch, whose members are written in format 4 too.
fn format_4_cases() -> Vec<Case> {
    let v4 = |mut envelope: Envelope| {
        envelope.set_format(LogFormat::V4);
        envelope
    };
    let claim = || {
        Command::ClaimReady(ClaimReady {
            stage: Stage::Ingress,
            limit: 10,
            owner: s("worker-4"),
            ttl_ms: 30_000,
            channel: None,
            destination: None,
        })
    };
    vec![
        codec_case(
            "Format4.ClaimReady",
            v4(Envelope::new(NOW, ACTOR, claim()).with_request_id(REQUEST_ID)),
        ),
        codec_case(
            "Format4.Every",
            v4(Envelope::new(NOW, ACTOR, Command::ExpireRecords)
                .with_request_id(REQUEST_ID)
                .at_client_time(Some(NOW - 5))
                .fingerprinted(Some(bytes32(0xc0)))
                .as_operator(true)),
        ),
        codec_case(
            "Format4.Batch",
            v4(Envelope::new(
                NOW,
                "raftlane:batch",
                Command::Batch(Batch {
                    commands: vec![
                        Envelope::new(NOW, ACTOR, claim()).with_request_id("r/0"),
                        Envelope::new(NOW, ACTOR, Command::ExpireRecords).with_request_id("r/1"),
                    ],
                }),
            )),
        ),
    ]
}

#[test]
fn format_4_envelopes_match_golden() {
    check_golden("envelopes-v4.hex", format_4_cases());
}

#[test]
fn outcomes_match_golden() {
    check_golden("outcomes.hex", outcomes_cases());
}

#[test]
fn rejections_match_golden() {
    check_golden(
        "rejections.hex",
        enum_cases("Rejection", rejection_examples(), rejection_variant, |v| v),
    );
}

#[test]
fn stored_values_match_golden() {
    check_golden("stored.hex", stored_cases_all());
}

#[test]
fn table_tags_match_golden() {
    // `Table::ALL` must list every table once, in tag order (the snapshot stream relies on it).
    for (i, table) in Table::ALL.into_iter().enumerate() {
        assert_eq!(table.tag() as usize, i, "{table:?}");
        assert_eq!(Table::from_tag(table.tag()), Some(table));
        assert_eq!(
            table.name(),
            table_name(table).1,
            "{table:?}: column family renamed"
        );
    }
    assert_eq!(Table::from_tag(Table::ALL.len() as u8), None);
    check_golden("tables.hex", table_cases());
}

/// A state built through `apply` from commands touching every table; every stored value must
/// decode as the type this file pins for its table (and re-encode to the same bytes), so the
/// golden `stored.hex` types are the ones really stored, the mirrors of private records included.
#[test]
fn stored_values_of_a_live_state_have_the_golden_types() {
    struct Live {
        sm: StateMachine<MemStore>,
        index: u64,
    }

    impl Live {
        fn run(&mut self, request_id: Option<&str>, command: Command) -> Response {
            self.run_bound(request_id, None, command)
        }

        fn run_bound(
            &mut self,
            request_id: Option<&str>,
            fingerprint: Option<[u8; 32]>,
            command: Command,
        ) -> Response {
            self.index += 1;
            let mut envelope = Envelope::new(NOW + self.index * 1_000, "scenario", command)
                .fingerprinted(fingerprint);
            envelope.request_id = request_id.map(str::to_string);
            self.sm.apply(self.index, &envelope).expect("store error")
        }

        #[track_caller]
        fn ok(&mut self, command: Command) -> Outcome {
            let name = command_variant(&command);
            self.run(None, command)
                .unwrap_or_else(|r| panic!("{name} rejected: {r:?}"))
        }

        #[track_caller]
        fn claim(&mut self, stage: Stage, channel: &str) -> ClaimedRow {
            match self.ok(Command::ClaimReady(ClaimReady {
                stage,
                limit: 1,
                channel: some(channel),
                destination: None,
                owner: s("worker"),
                ttl_ms: 60_000,
            })) {
                Outcome::Claimed(mut rows) if rows.len() == 1 => rows.remove(0),
                other => panic!("claim {stage:?} {channel}: {other:?}"),
            }
        }
    }

    let mut live = Live {
        sm: StateMachine::open(MemStore::new()).expect("open"),
        index: 0,
    };

    // A message with an idempotency key under a request id: Messages, Rows, Events, Lanes,
    // Idempotency, Requests and their indexes.
    // Bound to its request's fingerprint: RequestFingerprints.
    let first = live.run_bound(
        Some("scenario-request-1"),
        Some(bytes32(0x30)),
        Command::EnqueueIngress(EnqueueIngress {
            channel: s("orders"),
            raw: s("raw-1"),
            fields: fields(),
            idempotency_key: some("idem-1"),
        }),
    );
    let Ok(Outcome::Enqueued {
        message_id: first_id,
        ..
    }) = first
    else {
        panic!("enqueue: {first:?}")
    };
    // Ingress → routed → outbound (transform state) → response captured and re-ingested.
    let row = live.claim(Stage::Ingress, "orders");
    live.ok(Command::RouteHandoff(RouteHandoff {
        row_id: row.row_id,
        fence: row.fence,
        handlers: vec![HandlerWork {
            handler: s("enricher"),
            payload: s("{}"),
        }],
        disposition: RouteDisposition::Routed,
    }));
    let row = live.claim(Stage::Routed, "orders");
    live.ok(Command::TransformHandoff(TransformHandoff {
        row_id: row.row_id,
        fence: row.fence,
        deliveries: vec![delivery("dest-a", "out-1")],
        state_ops: vec![StateOp {
            namespace: s("ns-1"),
            key: s("key-1"),
            value: s(r#"{"n":1}"#),
        }],
    }));
    let row = live.claim(Stage::Outbound, "orders");
    live.ok(Command::CompleteWithResponse(CompleteWithResponse {
        row_id: row.row_id,
        fence: row.fence,
        body: s("ack"),
        outcome: s("ok"),
        detail: some("200"),
        reingress_to: some("replies"),
    }));
    let row = live.claim(Stage::Response, "replies");
    live.ok(Command::IngressHandoff(IngressHandoff {
        row_id: row.row_id,
        fence: row.fence,
        loopback_channel: s("loopback"),
        depth_cap: 3,
        child: None,
    }));
    // The same response re-sent and handed off under the caller's key: ChildKeys.
    live.ok(Command::Replay(Replay {
        message_id: row.message_id,
    }));
    let outbound = live.claim(Stage::Outbound, "orders");
    live.ok(Command::MarkDone(MarkDone {
        row_id: outbound.row_id,
        fence: outbound.fence,
    }));
    let row = live.claim(Stage::Response, "replies");
    live.ok(Command::IngressHandoff(IngressHandoff {
        row_id: row.row_id,
        fence: row.fence,
        loopback_channel: s("loopback"),
        depth_cap: 3,
        child: Some(ChildKey {
            key: s("caller-child-1"),
            control_id: None,
            message_type: None,
            summary: None,
            peek_failed: false,
        }),
    }));
    // A dead letter.
    live.ok(Command::EnqueueIngress(EnqueueIngress {
        channel: s("other"),
        raw: s("raw-2"),
        fields: MessageFields::default(),
        idempotency_key: None,
    }));
    let row = live.claim(Stage::Ingress, "other");
    live.ok(Command::DeadLetterNow(DeadLetterNow {
        row_id: row.row_id,
        fence: Some(row.fence),
        error: s("poison"),
    }));
    // Ended messages (EndedMessages, MessageEnds) and a retention pass's cursor
    // (RetentionCursors).
    live.ok(Command::RetentionPage(RetentionPage {
        pass: RetentionPass::IndexEnded,
        older_than: 0,
        limit: 1000,
    }));
    live.ok(Command::RetentionPage(RetentionPage {
        pass: RetentionPass::BlankDeadLetters,
        older_than: NOW + 1_000_000,
        limit: 1000,
    }));
    // A row failed under its worker's policy and back to pending: RowRetry.
    live.ok(Command::EnqueueIngress(EnqueueIngress {
        channel: s("retrying"),
        raw: s("raw-retrying"),
        fields: MessageFields::default(),
        idempotency_key: None,
    }));
    let row = live.claim(Stage::Ingress, "retrying");
    live.ok(Command::MarkFailed(MarkFailed {
        row_id: row.row_id,
        fence: row.fence,
        error: s("partner down"),
        retry: retry_policy(),
    }));
    // Config, principals, approvals, reference data, audit chains.
    live.ok(Command::PutConfig(PutConfig {
        expected_version: 0,
        config: config_doc(),
    }));
    // A poison row: its lease expires on every attempt the default policy allows, so it dies
    // and the tally counts it: Tallies. On a configured channel (the config names some).
    live.ok(Command::EnqueueIngress(EnqueueIngress {
        channel: s("billing"),
        raw: s("raw-poison"),
        fields: MessageFields::default(),
        idempotency_key: None,
    }));
    for _ in 0..raftlane_statemachine::rules::retry::DEFAULT_MAX_ATTEMPTS {
        live.ok(Command::ClaimReady(ClaimReady {
            stage: Stage::Ingress,
            limit: 1,
            channel: some("billing"),
            destination: None,
            owner: s("worker"),
            ttl_ms: 1,
        }));
        live.ok(Command::ReclaimExpired(ReclaimExpired { stage: None }));
    }
    live.ok(Command::PutPrincipal(PutPrincipal {
        name: s("alice"),
        token_hash: s(TOKEN_HASH),
        role: Role::Operator,
        channels: Some(vec![s("orders")]),
    }));
    live.ok(Command::CreateApproval(CreateApproval {
        operation: s("purge"),
        params: s("{}"),
        terms: ApprovalTerms::Ttl(60_000),
    }));
    live.ok(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: s("ref-1"),
        version: ReferenceVersion::Number(1),
        rows: reference_rows(),
    }));
    live.ok(Command::CreateApproval(CreateApproval {
        operation: s("purge"),
        params: s("{}"),
        terms: ApprovalTerms::Named(NamedApproval {
            key: s("ap-1"),
            requester: s("alice"),
            requested_at: NOW,
            expires_at: None,
        }),
    }));
    live.ok(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: s("ref-2"),
        version: ReferenceVersion::Label(s("v1")),
        rows: reference_rows(),
    }));
    live.ok(Command::SealAuditEpoch(SealAuditEpoch { org: s("org-1") }));
    // The engine's users, roles, AD group maps and sessions.
    live.ok(Command::UpsertRole(UpsertRole {
        role_id: s("operator"),
        display_name: s("Operator"),
        description: None,
        builtin: true,
    }));
    live.ok(Command::CreateUser(CreateUser {
        user_id: s("u-1"),
        username: s("alice"),
        auth_provider: AuthProvider::Local,
        display_name: some("Alice"),
        email: None,
        password_hash: some("hash"),
        must_change_password: false,
    }));
    live.ok(Command::UpdateUser(UpdateUser {
        user_id: s("u-1"),
        change: UserChange::EnableTotp {
            recovery_code_hashes: vec![s("code-1")],
        },
    }));
    live.ok(Command::SetUserRoles(SetUserRoles {
        user_id: s("u-1"),
        role_ids: vec![s("operator")],
        assigned_by: some("admin"),
    }));
    live.ok(Command::SetAdGroupMap(SetAdGroupMap {
        map: AdGroupMap::Roles,
        entries: vec![(s("Ops"), s("operator"))],
    }));
    live.ok(Command::CreateSession(CreateSession {
        token_hash: s(TOKEN_HASH),
        user_id: s("u-1"),
        expires_at: NOW + 1_000_000,
        client: some("10.0.0.1"),
        seed_reauth: false,
    }));
    // Engine coordination.
    live.ok(Command::NodeHeartbeat(NodeHeartbeat {
        node_id: s("engine-1"),
        host: some("host-a"),
        pid: Some(1),
    }));
    live.ok(Command::CampaignLeadership(CampaignLeadership {
        group: s("messagefoundry"),
        node_id: s("engine-1"),
        ttl_ms: 1_000,
    }));
    live.ok(Command::BumpCounter(BumpCounter {
        name: s("config_version"),
    }));
    live.ok(Command::SetPrincipalOrgs(SetPrincipalOrgs {
        name: s("auditor"),
        orgs: Some(vec![s("default")]),
    }));
    // An audit row an engine writes for its user: the principal beside the actor
    // (AuditPrincipals).
    live.ok(Command::RecordAudit(RecordAudit {
        action: s("auth.login"),
        channel: None,
        org: some("engine-org"),
        detail: None,
        author: AuditAuthor::Named(some("alice")),
    }));
    // A destination paused by an operator (PausedDestinations).
    live.ok(Command::SetDestinationPaused(SetDestinationPaused {
        destination: s("emr"),
        paused: true,
        reason: some("upgrade"),
    }));

    let mut seen = BTreeSet::new();
    let mut errors = Vec::new();
    for table in Table::ALL {
        let entries = live
            .sm
            .store()
            .scan(table, &[], None, Direction::Forward)
            .expect("scan");
        for entry in entries {
            let (key, value) = entry.expect("scan");
            seen.insert(table);
            if let Err(e) = verify_live_value(table, &key, &value) {
                errors.push(format!("{table:?} {}: {e}", hex::encode(&key)));
            }
            // The mirrors of private records hold what the state machine put there.
            if table == Table::Requests {
                let record: RequestRecordWire = codec::decode(&value).expect("request record");
                assert_eq!(record.index, 1);
                assert_eq!(record.response, first);
            }
            if table == Table::Idempotency {
                let record: IdempotencyRecordWire =
                    codec::decode(&value).expect("idempotency record");
                assert_eq!(record.message_id, first_id);
            }
        }
    }
    assert!(errors.is_empty(), "\n{}\n", errors.join("\n"));
    // Every table pinned in stored.hex was exercised by real data.
    let pinned: BTreeSet<Table> = Table::ALL
        .into_iter()
        .filter(|t| !stored_cases(*t).is_empty())
        .collect();
    let unexercised: Vec<&Table> = pinned.difference(&seen).collect();
    assert!(
        unexercised.is_empty(),
        "the scenario wrote nothing to {unexercised:?}"
    );
}
