//! The audit chain: append, list, anchor, verify (with an anchor held elsewhere), seal.

use super::{check_name, prepare_read, propose, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{
    AuditAnchor, AuditAppendRequest, AuditAppended, AuditEntry, AuditQuery, AuditRows,
    AuditSealRequest, AuditVerification,
};
use raftlane_statemachine::model::audit::DEFAULT_ORG;
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::{RecordAudit, SealAuditEpoch};
use raftlane_statemachine::{Command, Outcome};
use std::sync::Arc;

pub async fn append(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<AuditAppendRequest>,
) -> ApiResult<Json<AuditAppended>> {
    caller.require(Permission::AppendAudit)?;
    check_name("action", &b.action)?;
    if let Some(c) = &b.channel {
        caller.require_channel(c)?;
    }
    caller.require_org(b.org.as_deref().unwrap_or(DEFAULT_ORG))?;
    let command = match b.actor {
        Some(actor) => {
            check_name("actor", &actor)?;
            Command::RecordAudit(RecordAudit {
                action: b.action,
                channel: b.channel,
                org: b.org,
                detail: b.detail,
                author: AuditAuthor::Named(Some(actor)),
            })
        }
        None => Command::RecordAudit(RecordAudit {
            action: b.action,
            channel: b.channel,
            org: b.org,
            detail: b.detail,
            author: AuditAuthor::Principal,
        }),
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Audit { seq, hash }) => Ok(Json(AuditAppended { hash, index, seq })),
        (_, other) => Err(unexpected(other)),
    }
}

fn org(q: &AuditQuery) -> ApiResult<&str> {
    let org = q
        .org
        .as_deref()
        .ok_or_else(|| ApiError::invalid("org", "audit reads must name an org"))?;
    check_name("org", org)?;
    Ok(org)
}

/// Make the read as consistent as `q` asks.
async fn read_ready(state: &AppState, q: &AuditQuery) -> ApiResult<()> {
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    prepare_read(state, &opts).await
}

/// The preamble of every audit read: the caller may read, the org is named and valid, and the
/// local state is as consistent as asked.
async fn readable_org(state: &AppState, caller: &Caller, q: &AuditQuery) -> ApiResult<String> {
    caller.require(Permission::Read)?;
    let org = org(q)?.to_string();
    caller.require_org(&org)?;
    read_ready(state, q).await?;
    Ok(org)
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<AuditRows>> {
    let org = readable_org(&state, &caller, &q).await?;
    let limit = q.limit.get();
    let rows = backend::read(state.backend.as_ref(), |r| {
        r.audit_list(&org, q.from.unwrap_or(0), limit)
    })?;
    Ok(Json(visible_rows(&caller, org, rows)))
}

/// The rows `caller` may see (a row about a channel outside its scope is left out).
fn visible_rows(
    caller: &Caller,
    org: String,
    rows: Vec<raftlane_statemachine::model::audit::AuditRow>,
) -> AuditRows {
    let rows = rows
        .into_iter()
        .filter(|row| row.channel_id.as_deref().is_none_or(|c| caller.may_see(c)))
        .map(AuditEntry::from)
        .collect();
    AuditRows { org, rows }
}

/// `GET /v1/audit/search`: an actor's rows, newest first, optionally only actions starting with
/// `action_prefix` (docs/SPEC.md §14.5), read through the actor index.
pub async fn search(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<AuditRows>> {
    let actor = q
        .actor
        .as_deref()
        .ok_or_else(|| ApiError::invalid("actor", "a search names the actor"))?;
    check_name("actor", actor)?;
    let org = readable_org(&state, &caller, &q).await?;
    let limit = q.limit.get();
    let prefix = q.action_prefix.as_deref().unwrap_or("");
    let rows = backend::read(state.backend.as_ref(), |r| {
        r.audit_by_actor(&org, actor, prefix, limit)
    })?;
    Ok(Json(visible_rows(&caller, org, rows)))
}

pub async fn anchor(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<AuditAnchor>> {
    let org = readable_org(&state, &caller, &q).await?;
    let head = backend::read(state.backend.as_ref(), |r| r.audit_anchor(&org))?;
    Ok(Json(AuditAnchor {
        count: head.count,
        era: head.era,
        head: hex::encode(head.head_hash),
        org,
    }))
}

pub async fn verify(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<AuditVerification>> {
    caller.require(Permission::Read)?;
    let org = org(&q)?.to_string();
    caller.require_org(&org)?;
    let anchor = match (q.count, &q.head) {
        (None, None) => None,
        (Some(count), Some(head)) => {
            let bytes = hex::decode(head)
                .map_err(|_| ApiError::invalid("head", "must be 64 hex digits"))?;
            let hash: [u8; 32] = bytes
                .try_into()
                .map_err(|_| ApiError::invalid("head", "must be 64 hex digits"))?;
            Some((count, hash))
        }
        _ => return Err(ApiError::invalid("count", "count and head go together")),
    };
    read_ready(&state, &q).await?;
    let v = backend::read(state.backend.as_ref(), |r| r.audit_verify(&org, anchor))?;
    Ok(Json(AuditVerification::from(v)))
}

pub async fn seal(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<AuditSealRequest>,
) -> ApiResult<Json<AuditAppended>> {
    caller.require_global(Permission::Operate)?;
    check_name("org", &b.org)?;
    match propose(
        &state,
        &caller,
        Command::SealAuditEpoch(SealAuditEpoch { org: b.org }),
    )
    .await?
    {
        (index, Outcome::Audit { seq, hash }) => Ok(Json(AuditAppended { hash, index, seq })),
        (_, other) => Err(unexpected(other)),
    }
}
