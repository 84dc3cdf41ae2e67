//! Pausing and resuming a destination (docs/SPEC.md §4.9): an operator's way to stop deliveries
//! to a system that is down or being changed, without losing or reordering a row.
//!
//! A destination spans channels, so these routes take unscoped tokens only; pausing and
//! resuming take `Requeue` (they change what the pipeline hands out, like a cancel).

use super::{check_name, prepare_read, propose, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::ApiResult;
use crate::extract::{OptionalJson, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{PauseRequest, PauseState, PausedDestinationView, PausedDestinations};
use raftlane_statemachine::wire::command::{Command, SetDestinationPaused};
use raftlane_statemachine::Outcome;
use std::sync::Arc;

/// `POST /v1/destinations/{destination}/pause`.
pub async fn pause(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(destination): Path<String>,
    body: OptionalJson<PauseRequest>,
) -> ApiResult<Json<PauseState>> {
    let body = body.parse()?;
    set_paused(&state, &caller, destination, true, body.reason).await
}

/// `POST /v1/destinations/{destination}/resume`.
pub async fn resume(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(destination): Path<String>,
) -> ApiResult<Json<PauseState>> {
    set_paused(&state, &caller, destination, false, None).await
}

async fn set_paused(
    state: &AppState,
    caller: &Caller,
    destination: String,
    paused: bool,
    reason: Option<String>,
) -> ApiResult<Json<PauseState>> {
    caller.require_global(Permission::Requeue)?;
    check_name("destination", &destination)?;
    if paused {
        let params = serde_json::json!({ "destination": &destination, "reason": &reason });
        crate::dual_control::authorize(
            state,
            caller,
            crate::dual_control::Action::PauseDestination,
            &params,
        )
        .await?;
    }
    let command = Command::SetDestinationPaused(SetDestinationPaused {
        destination: destination.clone(),
        paused,
        reason,
    });
    match propose(state, caller, command).await? {
        (_, Outcome::Count(n)) => Ok(Json(PauseState {
            destination,
            paused,
            changed: n > 0,
        })),
        (_, other) => Err(unexpected(other)),
    }
}

/// `GET /v1/destinations/paused`.
pub async fn paused(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<PausedDestinations>> {
    caller.require_global(Permission::Read)?;
    prepare_read(&state, &opts).await?;
    let list = backend::read(state.backend.as_ref(), |r| r.paused_destinations())?;
    Ok(Json(PausedDestinations {
        destinations: list
            .into_iter()
            .map(|(destination, p)| PausedDestinationView {
                destination,
                paused_by: p.paused_by,
                paused_at: p.paused_at,
                reason: p.reason,
            })
            .collect(),
    }))
}
