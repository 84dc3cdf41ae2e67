//! Taking work back and sweeping what the engine no longer knows: `POST /v1/leases/reclaim`,
//! `reset`, `recover` and `POST /v1/dead-letters/sweep` (docs/SPEC.md §4.5, §14.2, §14.3,
//! §14.9). Each spans every channel, so a channel-scoped token may call none of them.
//!
//! Whose work (§9.8): `reclaim` takes back only leases that ran out, as the leader's timer does,
//! so any worker may call it. `reset` and `recover` take back live claims: an operator's
//! (proposed as the envelope's `as_operator`, under dual control when listed) reach every principal's rows and
//! lane leases, anyone else's only its own principal's. The sweeps are operators'.

use super::{check_name, propose, unexpected};
use crate::auth::{Caller, Permission};
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, OptionalJson};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{
    Reclaimed, RecoverRequest, Recovered, ResetRows, StageScope, SweepRequest, Swept,
};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::wire::command::{
    DeadLetterMissingDestinations, DeadLetterMissingHandlers, ReclaimExpired,
    RecoverInflightOnPromotion, ResetStaleInflight,
};
use raftlane_statemachine::{Command, Outcome};
use std::sync::Arc;

/// A body of `{stage?}` (an empty body: every stage).
fn stage_scope(body: &OptionalJson<StageScope>) -> ApiResult<Option<Stage>> {
    Ok(body.parse()?.stage)
}

/// Propose `command` and read its `Count`.
async fn count(
    state: &AppState,
    caller: &Caller,
    command: impl Into<crate::auth::Proposal>,
) -> ApiResult<(u64, u64)> {
    match propose(state, caller, command).await? {
        (index, Outcome::Count(n)) => Ok((index, n)),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn reclaim(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<StageScope>,
) -> ApiResult<Json<Reclaimed>> {
    caller.require_global(Permission::Work)?;
    let stage = stage_scope(&body)?;
    let (index, reclaimed) = count(
        &state,
        &caller,
        Command::ReclaimExpired(ReclaimExpired { stage }),
    )
    .await?;
    Ok(Json(Reclaimed { index, reclaimed }))
}

pub async fn reset(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<StageScope>,
) -> ApiResult<Json<ResetRows>> {
    caller.require_global(Permission::Work)?;
    let scope = body.parse()?;
    let stage = scope.stage;
    if caller.is_operator() {
        dual_control::authorize(&state, &caller, Action::ResetLeases, &scope).await?;
    }
    let command = caller.authority(Command::ResetStaleInflight(ResetStaleInflight { stage }));
    let (index, reset) = count(&state, &caller, command).await?;
    Ok(Json(ResetRows { index, reset }))
}

pub async fn recover(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<RecoverRequest>,
) -> ApiResult<Json<Recovered>> {
    caller.require_global(Permission::Work)?;
    check_name("owner", &b.owner)?;
    if let Some(lane_owner) = &b.lane_owner {
        check_name("lane_owner", lane_owner)?;
    }
    if caller.is_operator() {
        dual_control::authorize(&state, &caller, Action::RecoverLeases, &b).await?;
    }
    let command = caller.authority(Command::RecoverInflightOnPromotion(
        RecoverInflightOnPromotion {
            owner: b.owner,
            lane_owner: b.lane_owner,
        },
    ));
    let (index, recovered) = count(&state, &caller, command).await?;
    Ok(Json(Recovered { index, recovered }))
}

pub async fn sweep(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<SweepRequest>,
) -> ApiResult<Json<Swept>> {
    caller.require_global(Permission::Requeue)?;
    let stage = b.stage;
    if matches!(stage, Stage::Outbound | Stage::Routed) {
        dual_control::authorize(&state, &caller, Action::SweepDeadLetters, &b).await?;
    }
    let command = match stage {
        Stage::Outbound => Command::DeadLetterMissingDestinations(DeadLetterMissingDestinations {
            destinations: b.keep,
        }),
        Stage::Routed => {
            Command::DeadLetterMissingHandlers(DeadLetterMissingHandlers { handlers: b.keep })
        }
        other => {
            return Err(ApiError::invalid(
                "stage",
                format!(
                    "'{}' has no registry to sweep by: outbound or routed",
                    other.as_str()
                ),
            ))
        }
    };
    // An operator's sweep takes every claim back, anyone else's only its own principal's
    // (docs/SPEC.md §9.8, from log format 2).
    let (index, dead) = count(&state, &caller, caller.authority(command)).await?;
    Ok(Json(Swept { index, dead }))
}
