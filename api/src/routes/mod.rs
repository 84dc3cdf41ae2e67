//! Route handlers, one module per area of the API.

pub mod admin;
pub mod approvals;
pub mod audit;
pub mod cluster;
pub mod config;
pub mod coordination;
pub mod destinations;
pub mod keys;
pub mod messages;
pub mod recovery;
pub mod sessions;
pub mod users;
pub mod work;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use raftlane_contract::{Consistency, ReadOpts};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::Outcome;

/// Wait for the consistency `opts` asks: `stale` serves from local state as it is, absent or
/// `linearizable` after catching up with the leader's commit (another value is refused by the
/// query extractor, naming `consistency`).
pub async fn prepare_read(state: &AppState, opts: &ReadOpts) -> ApiResult<()> {
    match opts.consistency.unwrap_or_default() {
        Consistency::Stale => Ok(()),
        Consistency::Linearizable => Ok(state.writes.linearize().await?),
    }
}

/// Wait for the consistency `opts` asks for, then read the local state with `f`.
pub async fn read_state<T>(
    state: &AppState,
    opts: &ReadOpts,
    f: impl FnOnce(
        &raftlane_statemachine::query::Reader<'_>,
    ) -> Result<T, raftlane_statemachine::StoreError>,
) -> ApiResult<T> {
    prepare_read(state, opts).await?;
    Ok(crate::backend::read(state.backend.as_ref(), f)?)
}

/// [`read_state`] for answers holding covered values (docs/SPEC.md §2.6): the write path
/// serves them decrypted.
pub async fn read_covered<T: crate::write::at_rest::Covered>(
    state: &AppState,
    opts: &ReadOpts,
    f: impl FnOnce(
        &raftlane_statemachine::query::Reader<'_>,
    ) -> Result<T, raftlane_statemachine::StoreError>,
) -> ApiResult<T> {
    prepare_read(state, opts).await?;
    Ok(state.writes.read_covered(f)?)
}

/// Propose a command as `caller`; a rejection becomes its HTTP error.
pub async fn propose(
    state: &AppState,
    caller: &Caller,
    command: impl Into<crate::auth::Proposal>,
) -> ApiResult<(u64, Outcome)> {
    let envelope = caller.envelope(command);
    let (index, response) = state.writes.write(envelope).await?;
    Ok((index, response?))
}

pub fn parse_stage(s: &str) -> ApiResult<Stage> {
    Stage::parse(s).ok_or_else(|| {
        ApiError::invalid(
            "stage",
            format!("'{s}' is not one of ingress, routed, outbound, response"),
        )
    })
}

pub fn check_name(field: &str, value: &str) -> ApiResult<()> {
    raftlane_statemachine::checks::name(field, value).map_err(ApiError::from)
}

/// The principal of `row`'s current claim (docs/SPEC.md §9.8): the one its owner name is bound
/// to. `None` for a row without a claim, or a claim bound to no principal.
pub fn claim_holder(
    state: &AppState,
    row: &raftlane_statemachine::row::WorkRow,
) -> ApiResult<Option<String>> {
    match &row.claim {
        None => Ok(None),
        Some(claim) => Ok(crate::backend::read(state.backend.as_ref(), |r| {
            r.lease_owner(&claim.owner)
        })?),
    }
}

/// `row` as `caller` may see it: a claim's fence is its principal's (and operators'); anyone
/// else reads it as `0` (never a fence: fences are log indexes) and the row's `last_fence` as
/// `null`, so a read hands no one the means to act on another principal's claim.
pub fn hide_foreign_fence(
    state: &AppState,
    caller: &Caller,
    row: &mut raftlane_statemachine::row::WorkRow,
) -> ApiResult<()> {
    if row.claim.is_none() || caller.is_operator() {
        return Ok(());
    }
    let holder = claim_holder(state, row)?;
    if !caller.may_act_on_claim(holder.as_deref()) {
        if let Some(claim) = &mut row.claim {
            claim.fence = raftlane_statemachine::Fence(0);
        }
        row.last_fence = None;
    }
    Ok(())
}

/// The code of a row action refused because another principal holds the row's claim.
pub const CLAIM_OF_ANOTHER: &str = "claim_of_another_principal";

/// 403 `claim_of_another_principal` unless `caller` may act on `row`'s current claim (its own,
/// or any as an operator; docs/SPEC.md §9.8). The state machine checks it again when the action
/// applies, against the claim as it then stands.
pub fn require_claim(
    state: &AppState,
    caller: &Caller,
    row: &raftlane_statemachine::row::WorkRow,
) -> ApiResult<()> {
    if row.claim.is_none() || caller.is_operator() {
        return Ok(());
    }
    let holder = claim_holder(state, row)?;
    if caller.may_act_on_claim(holder.as_deref()) {
        Ok(())
    } else {
        Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            CLAIM_OF_ANOTHER,
            format!(
                "row {} is claimed by another principal; acting on it needs the operator role",
                row.id
            ),
        ))
    }
}

/// An outcome of an unexpected shape (a programming error, reported rather than panicking).
pub fn unexpected(outcome: Outcome) -> ApiError {
    ApiError::unexpected_outcome(&outcome)
}
