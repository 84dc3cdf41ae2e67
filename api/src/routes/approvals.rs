//! Approvals: raftlane's own four-eyes approvals (`POST /v1/approvals`, docs/SPEC.md §9.5) and
//! the ones an engine names, dates and decides itself (`/v1/approvals/keyed`, §14.10).

use super::{check_name, prepare_read, propose, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    ApprovalCreated, ApprovalDecided, ApprovalList, ApprovalListQuery, ApprovalListStatus,
    ApprovalRequest, ApprovalView, DecideRequest, KeyedApprovalRequest, KeyedDecideRequest,
    KeyedDecided,
};
use raftlane_statemachine::model::approval::ApprovalStatus;
use raftlane_statemachine::wire::command::{ApprovalTerms, Decision, KeyedDecision, NamedApproval};
use raftlane_statemachine::wire::command::{CreateApproval, DecideApproval};
use raftlane_statemachine::{ApprovalId, Command, Outcome};
use std::sync::Arc;

pub async fn create_approval(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<ApprovalRequest>,
) -> ApiResult<(StatusCode, Json<ApprovalCreated>)> {
    caller.require_global(Permission::Operate)?;
    check_name("operation", &b.operation)?;
    let command = Command::CreateApproval(CreateApproval {
        operation: b.operation,
        params: b.params.to_string(),
        terms: ApprovalTerms::Ttl(b.ttl_ms.unwrap_or(24 * 60 * 60 * 1000)),
    });
    match propose(&state, &caller, command).await? {
        (index, Outcome::Approval(id)) => {
            Ok((StatusCode::CREATED, Json(ApprovalCreated { id, index })))
        }
        (_, other) => Err(unexpected(other)),
    }
}

fn approval_id(s: &str) -> ApiResult<ApprovalId> {
    s.parse::<u64>()
        .map(ApprovalId)
        .map_err(|_| ApiError::invalid("id", "must be an approval id (an integer)"))
}

pub async fn get_approval(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<ApprovalView>> {
    caller.require_global(Permission::Read)?;
    let id = approval_id(&id)?;
    prepare_read(&state, &opts).await?;
    let (approval, t) = backend::read(state.backend.as_ref(), |r| {
        Ok((r.approval(id)?, r.meta().clock))
    })?;
    match approval {
        Some(a) => Ok(Json(ApprovalView::at(a, t))),
        None => Err(ApiError::not_found(format!("approval {id} not found"))),
    }
}

pub async fn decide_approval(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<DecideRequest>,
) -> ApiResult<Json<ApprovalDecided>> {
    caller.require_global(Permission::Operate)?;
    let id = approval_id(&id)?;
    match propose(
        &state,
        &caller,
        Command::DecideApproval(DecideApproval {
            decision: Decision::ById {
                id,
                approve: b.approve,
            },
        }),
    )
    .await?
    {
        (index, Outcome::Approval(id)) => Ok(Json(ApprovalDecided {
            approved: b.approve,
            id,
            index,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

/// `POST /v1/approvals/keyed`: an approval under the caller's key, requester and times.
pub async fn create_keyed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<KeyedApprovalRequest>,
) -> ApiResult<(StatusCode, Json<ApprovalCreated>)> {
    caller.require_global(Permission::KeyedApprovals)?;
    check_name("key", &b.key)?;
    check_name("operation", &b.operation)?;
    check_name("requester", &b.requester)?;
    let command = Command::CreateApproval(CreateApproval {
        operation: b.operation,
        params: b.params,
        terms: ApprovalTerms::Named(NamedApproval {
            key: b.key,
            requester: b.requester,
            requested_at: b.requested_at,
            expires_at: b.expires_at,
        }),
    });
    match propose(&state, &caller, command).await? {
        (index, Outcome::Approval(id)) => {
            Ok((StatusCode::CREATED, Json(ApprovalCreated { id, index })))
        }
        (_, other) => Err(unexpected(other)),
    }
}

/// `GET /v1/approvals/keyed/{key}`: the approval, its status as stored.
pub async fn get_keyed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<ApprovalView>> {
    caller.require_global(Permission::Read)?;
    check_name("key", &key)?;
    prepare_read(&state, &opts).await?;
    match backend::read(state.backend.as_ref(), |r| r.approval_by_key(&key))? {
        Some(a) => Ok(Json(ApprovalView::keyed(a.key, a.approval))),
        None => Err(ApiError::not_found(format!("no approval under key {key}"))),
    }
}

/// `POST /v1/approvals/keyed/{key}/decide`: `approved`, `rejected` or `expired`, as the caller
/// says; 409 `already_decided` once it is no longer pending.
pub async fn decide_keyed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(key): Path<String>,
    JsonBody(b): JsonBody<KeyedDecideRequest>,
) -> ApiResult<Json<KeyedDecided>> {
    caller.require_global(Permission::KeyedApprovals)?;
    check_name("key", &key)?;
    if b.status == ApprovalStatus::Pending {
        return Err(ApiError::invalid(
            "status",
            "a decision is approved, rejected or expired",
        ));
    }
    if let Some(approver) = &b.approver {
        check_name("approver", approver)?;
    }
    let command = Command::DecideApproval(DecideApproval {
        decision: Decision::ByKey(KeyedDecision {
            key: key.clone(),
            status: b.status,
            approver: b.approver,
            decided_at: b.decided_at,
        }),
    });
    match propose(&state, &caller, command).await? {
        (index, Outcome::Approval(id)) => Ok(Json(KeyedDecided {
            key,
            id,
            status: b.status,
            index,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

/// `GET /v1/approvals?status=pending`: pending, unexpired at the request's time, newest first.
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<ApprovalListQuery>,
) -> ApiResult<Json<ApprovalList>> {
    caller.require_global(Permission::Read)?;
    // Only pending approvals are listed; a status added to the query's type stops this line
    // compiling until the listing handles it.
    let ApprovalListStatus::Pending = q.status;
    let limit = q.limit.get();
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    prepare_read(&state, &opts).await?;
    let now = caller.now_ms();
    let open = backend::read(state.backend.as_ref(), |r| r.pending_approvals(now, limit))?;
    Ok(Json(ApprovalList {
        approvals: open
            .into_iter()
            .map(|a| ApprovalView::keyed(a.key, a.approval))
            .collect(),
    }))
}
