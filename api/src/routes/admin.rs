//! Administration: transform state and reference reads/writes, retention, approvals, tokens.

use super::{check_name, prepare_read, propose, read_state, unexpected, ReadOpts};
use crate::app::{AppState, JsonBody, Path, Query};
use crate::auth::{sha256_hex, Caller, Permission};
use crate::backend;
use crate::error::{ApiError, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_statemachine::principal::Role;
use raftlane_statemachine::{ApprovalId, Command, Outcome};
use rand::RngCore;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub async fn namespace(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(ns): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    check_name("namespace", &ns)?;
    let version = read_state(&state, &opts, |r| r.namespace_version(&ns)).await?;
    Ok(Json(json!({ "namespace": ns, "version": version })))
}

pub async fn state_entry(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((ns, key)): Path<(String, String)>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    check_name("namespace", &ns)?;
    check_name("key", &key)?;
    match read_state(&state, &opts, |r| r.state_entry(&ns, &key)).await? {
        Some(mut e) => {
            crate::crypto::open(state.keyring(), &mut e.value);
            let value: Value = serde_json::from_str(&e.value).unwrap_or(Value::String(e.value));
            Ok(Json(
                json!({ "namespace": ns, "key": key, "value": value, "set_at": e.set_at, "message_id": e.message_id }),
            ))
        }
        None => Err(ApiError::not_found(format!("no state {ns}/{key}"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceBody {
    version: u64,
    rows: BTreeMap<String, String>,
}

pub async fn put_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(b): JsonBody<ReferenceBody>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Operate)?;
    check_name("name", &name)?;
    let mut rows = BTreeMap::new();
    for (k, v) in b.rows {
        rows.insert(k, crate::crypto::seal(state.keyring(), v)?);
    }
    let command = Command::WriteReferenceSnapshot {
        name,
        version: b.version,
        rows,
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(json!({ "row_count": n, "index": index }))),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn get_reference(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    check_name("name", &name)?;
    match read_state(&state, &opts, |r| r.reference(&name)).await? {
        Some(mut s) => {
            for v in s.rows.values_mut() {
                crate::crypto::open(state.keyring(), v);
            }
            Ok(Json(
                serde_json::to_value(s).map_err(|e| ApiError::internal(e.to_string()))?,
            ))
        }
        None => Err(ApiError::not_found(format!("no reference snapshot {name}"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeBody {
    kind: String,
    older_than_ms: u64,
}

pub async fn purge(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<PurgeBody>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Operate)?;
    let command = match b.kind.as_str() {
        "bodies" => Command::PurgeMessageBodies {
            older_than: b.older_than_ms,
        },
        "dead_letters" => Command::PurgeDeadLetters {
            older_than: b.older_than_ms,
        },
        "state" => Command::PurgeState {
            older_than: b.older_than_ms,
        },
        other => {
            return Err(ApiError::invalid(
                "kind",
                format!("'{other}' is not bodies, dead_letters or state"),
            ))
        }
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(json!({ "purged": n, "index": index }))),
        (_, other) => Err(unexpected(other)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBody {
    operation: String,
    #[serde(default)]
    params: Value,
    ttl_ms: Option<u64>,
}

pub async fn create_approval(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<ApprovalBody>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.require(Permission::Operate)?;
    check_name("operation", &b.operation)?;
    let command = Command::CreateApproval {
        operation: b.operation,
        params: b.params.to_string(),
        ttl_ms: b.ttl_ms.unwrap_or(24 * 60 * 60 * 1000),
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Approval(id)) => Ok((
            StatusCode::CREATED,
            Json(json!({ "id": id, "index": index })),
        )),
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
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    let id = approval_id(&id)?;
    prepare_read(&state, &opts).await?;
    let (approval, t) = backend::read(state.backend.as_ref(), |r| {
        Ok((r.approval(id)?, r.meta().clock))
    })?;
    match approval {
        Some(a) => {
            let status = a.status_at(t);
            let mut v = serde_json::to_value(&a).map_err(|e| ApiError::internal(e.to_string()))?;
            v["status"] = serde_json::to_value(status).unwrap_or(Value::Null);
            Ok(Json(v))
        }
        None => Err(ApiError::not_found(format!("approval {id} not found"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    approve: bool,
}

pub async fn decide_approval(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<DecideBody>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Operate)?;
    let id = approval_id(&id)?;
    match propose(
        &state,
        &caller,
        Command::DecideApproval {
            id,
            approve: b.approve,
        },
    )
    .await?
    {
        (index, Outcome::Approval(id)) => Ok(Json(
            json!({ "id": id, "approved": b.approve, "index": index }),
        )),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn list_tokens(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Admin)?;
    let principals = read_state(&state, &opts, |r| r.principals()).await?;
    let list: Vec<Value> = principals
        .into_iter()
        .map(|p| json!({ "name": p.name, "role": p.role, "channels": p.channels, "created_at": p.created_at }))
        .collect();
    Ok(Json(json!({ "tokens": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBody {
    name: String,
    role: String,
    channels: Option<Vec<String>>,
}

/// Create (or rotate) a principal's token. The token is generated here, by the proposer, shown
/// once in the response, and only its hash enters the log.
pub async fn create_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<TokenBody>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.require(Permission::Admin)?;
    check_name("name", &b.name)?;
    let role = Role::parse(&b.role)
        .ok_or_else(|| ApiError::invalid("role", "must be admin, operator, worker or viewer"))?;
    if let Some(chs) = &b.channels {
        for c in chs {
            check_name("channels", c)?;
        }
    }
    let mut raw = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut raw);
    let token = format!("rl_{}", hex::encode(raw));
    let command = Command::PutPrincipal {
        name: b.name.clone(),
        token_hash: sha256_hex(&token),
        role,
        channels: b.channels,
    };
    match propose(&state, &caller, command).await? {
        (index, Outcome::Done) => Ok((
            StatusCode::CREATED,
            Json(json!({ "name": b.name, "role": b.role, "token": token, "index": index })),
        )),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn revoke_token(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Admin)?;
    check_name("name", &name)?;
    match propose(&state, &caller, Command::RevokePrincipal { name }).await? {
        (index, Outcome::Done) => Ok(Json(json!({ "revoked": true, "index": index }))),
        (_, other) => Err(unexpected(other)),
    }
}
