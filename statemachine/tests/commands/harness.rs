//! What the topic modules share: the imports they all use (re-exported), and short
//! constructors for commands, rejections and common setups. The harness that applies
//! commands lives in `cmd_support`, shared with other test targets.

pub(crate) use crate::cmd_support::*;
pub(crate) use raftlane_statemachine::model::approval::ApprovalStatus;
pub(crate) use raftlane_statemachine::model::audit::{
    row_hash, SealRecord, DEFAULT_ORG, SEAL_ACTION,
};
pub(crate) use raftlane_statemachine::model::config::{
    ConfigDoc, DestinationConfig, HandlerConfig, DEFAULT_DEDUPE_WINDOW_MS,
};
pub(crate) use raftlane_statemachine::model::lane::LaneLease;
pub(crate) use raftlane_statemachine::model::message::{Correlation, EventKind, MessageStatus};
pub(crate) use raftlane_statemachine::model::principal::Role;
pub(crate) use raftlane_statemachine::model::response::ResponseRef;
pub(crate) use raftlane_statemachine::model::row::{Claim, RowStatus, Stage};
pub(crate) use raftlane_statemachine::model::session::Session;
pub(crate) use raftlane_statemachine::model::state::ReferenceSnapshot;
pub(crate) use raftlane_statemachine::model::user::{AdGroupMap, AuthProvider, User};
pub(crate) use raftlane_statemachine::storage::store::WriteBatch;
pub(crate) use raftlane_statemachine::wire::command::{
    ApprovalTerms, AuditAuthor, ChildKey, Decision, KeyedDecision, NamedApproval, ReferenceVersion,
};
pub(crate) use raftlane_statemachine::wire::command::{
    Batch, CancelQueued, ClaimReady, CompleteWithResponse, ConsumeApproval, CreateApproval,
    CreateSession, CreateUser, DeadLetterNow, DecideApproval, DeleteUser, DoneThenClaimNext,
    EnforceSessionCap, EnqueueIngress, EnqueueMessage, Handoff, HandoffDisposition, IngressHandoff,
    MarkDone, MarkFailed, MessageFields, PurgeDeadLetters, PurgeExpiredSessions,
    PurgeMessageBodies, PurgeState, PutConfig, PutPrincipal, ReceivedStatus, ReclaimExpired,
    RecordAudit, RecordReceived, ReleaseLane, RenewLeases, Replay, ReplayDead, RevokePrincipal,
    RevokeUserSessions, RouteDisposition, RouteHandoff, SealAuditEpoch, SessionChange,
    SetAdGroupMap, SetUserRoles, StateOp, TransformHandoff, UpdateSession, UpdateUser, UpsertRole,
    UserChange, WriteReferenceSnapshot,
};
pub(crate) use raftlane_statemachine::{
    codec, ApprovalId, ClaimedRow, Command, Fence, FifoEmpty, MessageId, Outcome, Rejection, RowId,
    Store, Table,
};
pub(crate) use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

pub(crate) fn invalid(field: &str, reason: &str) -> Rejection {
    Rejection::invalid(field, reason)
}

pub(crate) fn stale(row: RowId, presented: Fence, current: Option<Fence>) -> Rejection {
    Rejection::StaleFence {
        row,
        presented,
        current,
    }
}

pub(crate) fn wrong_status(row: RowId, status: &str, expected: &str) -> Rejection {
    Rejection::WrongStatus {
        row,
        status: status.into(),
        expected: expected.into(),
    }
}

pub(crate) fn mark_done(row: &ClaimedRow) -> Command {
    Command::MarkDone(MarkDone {
        row_id: row.row_id,
        fence: row.fence,
    })
}

pub(crate) fn mark_failed(
    row: &ClaimedRow,
    error: &str,
    policy: raftlane_statemachine::model::config::RetryPolicy,
) -> Command {
    Command::MarkFailed(MarkFailed {
        row_id: row.row_id,
        fence: row.fence,
        error: error.into(),
        retry: policy,
    })
}

pub(crate) fn respond(row: &ClaimedRow, body: &str, reingress_to: Option<&str>) -> Command {
    Command::CompleteWithResponse(CompleteWithResponse {
        row_id: row.row_id,
        fence: row.fence,
        body: body.into(),
        outcome: "200".into(),
        detail: Some("ok".into()),
        reingress_to: reingress_to.map(Into::into),
    })
}

pub(crate) fn route(row: &ClaimedRow, handlers: &[(&str, &str)]) -> Command {
    Command::RouteHandoff(RouteHandoff {
        row_id: row.row_id,
        fence: row.fence,
        handlers: handlers.iter().map(|(n, p)| handler(n, p)).collect(),
        disposition: RouteDisposition::Routed,
    })
}

pub(crate) fn handoff(
    row: &ClaimedRow,
    deliveries: &[(&str, &str)],
    disposition: HandoffDisposition,
) -> Command {
    Command::Handoff(Handoff {
        row_id: row.row_id,
        fence: row.fence,
        deliveries: deliveries.iter().map(|(d, p)| delivery(d, p)).collect(),
        disposition,
    })
}

pub(crate) fn transform(
    row: &ClaimedRow,
    deliveries: &[(&str, &str)],
    ops: &[(&str, &str, &str)],
) -> Command {
    Command::TransformHandoff(TransformHandoff {
        row_id: row.row_id,
        fence: row.fence,
        deliveries: deliveries.iter().map(|(d, p)| delivery(d, p)).collect(),
        state_ops: ops
            .iter()
            .map(|(ns, k, v)| StateOp {
                namespace: (*ns).into(),
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect(),
    })
}

pub(crate) fn ingress_handoff(row: &ClaimedRow, loopback: &str, depth_cap: u32) -> Command {
    Command::IngressHandoff(IngressHandoff {
        row_id: row.row_id,
        fence: row.fence,
        loopback_channel: loopback.into(),
        depth_cap,
        child: None,
    })
}

pub(crate) fn dead_letter(row: RowId, fence: Option<Fence>, error: &str) -> Command {
    Command::DeadLetterNow(DeadLetterNow {
        row_id: row,
        fence,
        error: error.into(),
    })
}

pub(crate) fn cancel(destination: &str, channel: Option<&str>, top_only: bool) -> Command {
    Command::CancelQueued(CancelQueued {
        destination: destination.into(),
        channel: channel.map(Into::into),
        top_only,
    })
}

pub(crate) fn put_config(expected_version: u64, config: ConfigDoc) -> Command {
    Command::PutConfig(PutConfig {
        expected_version,
        config,
    })
}

pub(crate) fn config_with(destinations: &[&str], handlers: &[&str]) -> ConfigDoc {
    ConfigDoc {
        destinations: destinations
            .iter()
            .map(|d| ((*d).to_string(), DestinationConfig::default()))
            .collect(),
        handlers: handlers
            .iter()
            .map(|h| ((*h).to_string(), HandlerConfig::default()))
            .collect(),
        ..ConfigDoc::default()
    }
}

pub(crate) fn put_principal(
    name: &str,
    hash: &str,
    role: Role,
    channels: Option<&[&str]>,
) -> Command {
    Command::PutPrincipal(PutPrincipal {
        name: name.into(),
        token_hash: hash.into(),
        role,
        channels: channels.map(|cs| cs.iter().map(|c| (*c).to_string()).collect()),
    })
}

pub(crate) fn create_approval(operation: &str, ttl_ms: u64) -> Command {
    Command::CreateApproval(CreateApproval {
        operation: operation.into(),
        params: "{}".into(),
        terms: ApprovalTerms::Ttl(ttl_ms),
    })
}

pub(crate) fn decide(id: ApprovalId, approve: bool) -> Command {
    Command::DecideApproval(DecideApproval {
        decision: Decision::ById { id, approve },
    })
}

pub(crate) fn approval_id(outcome: Outcome) -> ApprovalId {
    match outcome {
        Outcome::Approval(id) => id,
        other => panic!("expected Approval, got {other:?}"),
    }
}

/// A policy that retries forever after a fixed 1 s.
pub(crate) fn retry_1s() -> raftlane_statemachine::model::config::RetryPolicy {
    retry(None, 1_000, 1_000, 1_000)
}

/// Enqueue on `channel`, claim the ingress row and route it to `handlers`; returns the message.
pub(crate) fn routed_message(
    h: &mut Harness,
    channel: &str,
    handlers: &[(&str, &str)],
) -> MessageId {
    let id = h.enqueue(channel, "raw");
    let row = h.claim_one(Stage::Ingress);
    assert_eq!(h.ok(route(&row, handlers)), Outcome::HandedOff(true));
    id
}

/// A message to `destination` whose outbound row was answered with a response to be
/// re-ingested on `loopback` (a pending response row); returns the origin message.
pub(crate) fn response_row_pending(
    h: &mut Harness,
    destination: &str,
    loopback: &str,
) -> MessageId {
    let out = h.outbound_claimed("orders", destination);
    assert_eq!(h.ok(respond(&out, "reply", Some(loopback))), Outcome::Done);
    out.message_id
}

// --- the engine's users, roles and sessions ---

/// A local user `id` named `username` with a password hash.
pub(crate) fn create_user(id: &str, username: &str) -> Command {
    Command::CreateUser(CreateUser {
        user_id: id.into(),
        username: username.into(),
        auth_provider: AuthProvider::Local,
        display_name: None,
        email: None,
        password_hash: Some(format!("hash-of-{id}")),
        must_change_password: false,
    })
}

pub(crate) fn update_user(id: &str, change: UserChange) -> Command {
    Command::UpdateUser(UpdateUser {
        user_id: id.into(),
        change,
    })
}

pub(crate) fn delete_user(id: &str) -> Command {
    Command::DeleteUser(DeleteUser { user_id: id.into() })
}

pub(crate) fn upsert_role(id: &str, display_name: &str) -> Command {
    Command::UpsertRole(UpsertRole {
        role_id: id.into(),
        display_name: display_name.into(),
        description: None,
        builtin: true,
    })
}

pub(crate) fn set_user_roles(id: &str, roles: &[&str], by: Option<&str>) -> Command {
    Command::SetUserRoles(SetUserRoles {
        user_id: id.into(),
        role_ids: roles.iter().map(|r| (*r).to_string()).collect(),
        assigned_by: by.map(Into::into),
    })
}

pub(crate) fn set_ad_map(map: AdGroupMap, entries: &[(&str, &str)]) -> Command {
    Command::SetAdGroupMap(SetAdGroupMap {
        map,
        entries: entries
            .iter()
            .map(|(g, v)| ((*g).to_string(), (*v).to_string()))
            .collect(),
    })
}

/// A session of `user` with token hash `hash`, expiring at `expires_at`, reauth seeded.
pub(crate) fn create_session(hash: &str, user: &str, expires_at: u64) -> Command {
    Command::CreateSession(CreateSession {
        token_hash: hash.into(),
        user_id: user.into(),
        expires_at,
        client: Some("10.0.0.1".into()),
        seed_reauth: true,
    })
}

pub(crate) fn update_session(hash: &str, change: SessionChange) -> Command {
    Command::UpdateSession(UpdateSession {
        token_hash: hash.into(),
        change,
    })
}

pub(crate) fn user_of(h: &Harness, id: &str) -> User {
    h.sm.read()
        .user(id)
        .unwrap()
        .unwrap_or_else(|| panic!("user {id} not found"))
}

pub(crate) fn session_of(h: &Harness, hash: &str) -> Session {
    h.sm.read()
        .session(hash)
        .unwrap()
        .unwrap_or_else(|| panic!("session {hash} not found"))
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}
