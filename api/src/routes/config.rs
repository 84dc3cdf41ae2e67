//! The versioned configuration: read current or any version; replace with `If-Match`.

use super::{propose, read_state, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::dual_control;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use raftlane_contract::{ConfigAnswer, ConfigWritten};
use raftlane_statemachine::model::config::ConfigDoc;
use raftlane_statemachine::rules::retry;
use raftlane_statemachine::wire::command::PutConfig;
use raftlane_statemachine::{Command, Outcome};
use std::sync::Arc;

pub async fn get_current(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<ConfigAnswer>> {
    caller.require(Permission::Read)?;
    let v = read_state(&state, &opts, |r| r.config()).await?;
    Ok(Json(ConfigAnswer::from(v)))
}

pub async fn get_version(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(v): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<ConfigAnswer>> {
    caller.require(Permission::Read)?;
    let v: u64 = v
        .parse()
        .map_err(|_| ApiError::invalid("version", "must be an integer"))?;
    match read_state(&state, &opts, |r| r.config_version(v)).await? {
        Some(c) => Ok(Json(ConfigAnswer::from(c))),
        None => Err(ApiError::not_found(format!("config version {v} not found"))),
    }
}

/// `PUT /v1/config` with `If-Match: <version>`: compare-and-set; 412 with the current version.
pub async fn put_config(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(doc): JsonBody<ConfigDoc>,
) -> ApiResult<Json<ConfigWritten>> {
    caller.require_global(Permission::Operate)?;
    dual_control::check_required(&doc.approvals_required)?;
    // The state machine's own check of every retry policy (the one `fail` gets), run before
    // proposing so a bad policy is a 400 naming its field and nothing is written.
    retry::check_config(&doc)?;
    let expected = headers
        .get("if-match")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::invalid("If-Match", "required: the version this change is based on")
        })?
        .trim()
        .trim_matches('"')
        .parse::<u64>()
        .map_err(|_| ApiError::invalid("If-Match", "must be a version number"))?;
    let params = serde_json::json!({ "expected_version": expected, "config": &doc });
    // Under dual control when put_config is listed, and when the change would shorten
    // retention, unregister what a listed sweep guards, or shrink the list (docs/SPEC.md §9.5).
    dual_control::authorize_config(&state, &caller, &params, &doc).await?;
    match propose(
        &state,
        &caller,
        Command::PutConfig(PutConfig {
            expected_version: expected,
            config: doc,
        }),
    )
    .await?
    {
        (index, Outcome::ConfigVersion(version)) => Ok(Json(ConfigWritten { version, index })),
        (_, other) => Err(unexpected(other)),
    }
}
