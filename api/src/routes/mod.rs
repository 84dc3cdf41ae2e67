//! Route handlers, one module per area of the API.

pub mod admin;
pub mod approvals;
pub mod audit;
pub mod cluster;
pub mod config;
pub mod coordination;
pub mod keys;
pub mod messages;
pub mod recovery;
pub mod sessions;
pub mod users;
pub mod work;

use crate::app::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::{Command, Outcome};
use serde::Deserialize;

/// `?consistency=stale` serves from local state; anything else is linearizable.
#[derive(Debug, Default, Deserialize)]
pub struct ReadOpts {
    pub consistency: Option<String>,
}

pub async fn prepare_read(state: &AppState, opts: &ReadOpts) -> ApiResult<()> {
    match opts.consistency.as_deref() {
        Some("stale") => Ok(()),
        None | Some("linearizable") => Ok(state.writes.linearize().await?),
        Some(other) => Err(ApiError::invalid(
            "consistency",
            format!("'{other}' is not 'stale' or 'linearizable'"),
        )),
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
    command: Command,
) -> ApiResult<(u64, Outcome)> {
    let envelope = state.envelope(caller, command);
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

/// An outcome of an unexpected shape (a programming error, reported rather than panicking).
pub fn unexpected(outcome: Outcome) -> ApiError {
    ApiError::unexpected_outcome(&outcome)
}
