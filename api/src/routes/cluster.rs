//! Cluster status, digest, membership, and the unauthenticated probes.

use crate::app::{AppState, JsonBody};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::{ApiError, ApiResult};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn status(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    let s = state.backend.status();
    Ok(Json(json!({
        "node_id": s.node_id,
        "leader_id": s.leader_id,
        "term": s.term,
        "last_log_index": s.last_log_index,
        "last_applied": s.last_applied,
        "membership": s.membership,
    })))
}

pub async fn digest(State(state): State<Arc<AppState>>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.require(Permission::Read)?;
    let (last_applied, digest) = state.backend.digest().await.map_err(ApiError::internal)?;
    Ok(Json(
        json!({ "node_id": state.backend.node_id(), "last_applied": last_applied, "digest": hex::encode(digest) }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnerBody {
    id: u64,
    addr: String,
}

pub async fn add_learner(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<LearnerBody>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Admin)?;
    if b.addr.is_empty() {
        return Err(ApiError::invalid("addr", "must not be empty"));
    }
    state.backend.add_learner(b.id, b.addr).await?;
    Ok(Json(json!({ "ok": true })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipBody {
    voters: Vec<u64>,
}

pub async fn change_membership(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<MembershipBody>,
) -> ApiResult<Json<Value>> {
    caller.require(Permission::Admin)?;
    if b.voters.is_empty() {
        return Err(ApiError::invalid("voters", "must name at least one node"));
    }
    state.backend.change_membership(b.voters).await?;
    Ok(Json(json!({ "ok": true })))
}

pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

pub async fn readyz(State(state): State<Arc<AppState>>) -> axum::response::Response {
    match state.backend.ready() {
        Ok(()) => (StatusCode::OK, Json(json!({ "ready": true }))).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "ready": false, "reason": reason })),
        )
            .into_response(),
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> axum::response::Response {
    let s = state.backend.status();
    let mut gauges = state.backend.gauges();
    gauges.insert("raftlane_term".into(), s.term as f64);
    gauges.insert("raftlane_last_log_index".into(), s.last_log_index as f64);
    gauges.insert("raftlane_last_applied".into(), s.last_applied as f64);
    gauges.insert(
        "raftlane_is_leader".into(),
        if s.leader_id == Some(s.node_id) {
            1.0
        } else {
            0.0
        },
    );
    if let Ok(stats) = backend::read(state.backend.as_ref(), |r| Ok(r.stats())) {
        gauges.insert("raftlane_messages_total".into(), stats.messages as f64);
        for (stage, by_status) in &stats.rows {
            for (status, n) in by_status {
                gauges.insert(
                    format!("raftlane_rows{{stage=\"{stage}\",status=\"{status}\"}}"),
                    *n as f64,
                );
            }
        }
    }
    let body = state.metrics.render(&gauges);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
