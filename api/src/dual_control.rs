//! Dual control: the actions the configuration lists in `approvals_required` need a second
//! person's approval, used once (docs/SPEC.md §9.5).
//!
//! The rule lives in two places by design, each once: this module decides *whether* an action
//! needs an approval and names the action and its parameters; the state machine's
//! `ConsumeApproval` (`statemachine/src/apply/approval.rs`) decides whether the approval the
//! request presents authorizes exactly that, and uses it up in the same log entry, so two
//! requests racing with one approval cannot both pass.
//!
//! The approval is used when the action starts: an action that then fails (a 409 on a stale
//! config version, say) needs a new approval. A retry of the same request (same `Request-Id`)
//! finds its first answer and does not need another.

mod config_change;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::routes::{propose, unexpected};
use crate::state::AppState;
use axum::http::StatusCode;
use raftlane_statemachine::wire::command::{Command, ConsumeApproval};
use raftlane_statemachine::wire::outcome::Outcome;
use serde::Serialize;

/// The actions dual control can cover: the names `approvals_required` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `POST /v1/retention/purge`
    Purge,
    /// `POST /v1/dead-letters/replay`
    ReplayDead,
    /// `POST /v1/keys/rotate`
    RotateKey,
    /// `POST /v1/cluster/learners` and `POST /v1/cluster/membership`
    ChangeMembership,
    /// `POST /v1/tokens`
    CreateToken,
    /// `PUT /v1/config`
    PutConfig,
    /// `POST /v1/leases/reset` by an operator (every principal's rows; a worker's reset of its
    /// own rows is not covered)
    ResetLeases,
    /// `POST /v1/leases/recover` by an operator (as [`Action::ResetLeases`])
    RecoverLeases,
    /// `POST /v1/dead-letters/sweep`
    SweepDeadLetters,
    /// `POST /v1/lanes/outbound/{dest}/cancel`
    CancelQueued,
    /// `DELETE /v1/tokens/{name}`: a principal locked out
    RevokeToken,
    /// `PUT /v1/reference/{name}`: a reference set replaced
    WriteReference,
    /// `DELETE /v1/users/{id}`: an engine user deleted
    DeleteUser,
    /// `DELETE /v1/owners/{owner}`: a name's binding, and with it its claims, released
    ReleaseOwner,
    /// `POST /v1/destinations/{destination}/pause`: a destination's deliveries stopped
    PauseDestination,
}

impl Action {
    pub const ALL: [Action; 15] = [
        Action::Purge,
        Action::ReplayDead,
        Action::RotateKey,
        Action::ChangeMembership,
        Action::CreateToken,
        Action::PutConfig,
        Action::ResetLeases,
        Action::RecoverLeases,
        Action::SweepDeadLetters,
        Action::CancelQueued,
        Action::RevokeToken,
        Action::WriteReference,
        Action::DeleteUser,
        Action::ReleaseOwner,
        Action::PauseDestination,
    ];

    /// The name an approval's `operation` and the config's `approvals_required` use.
    pub fn name(self) -> &'static str {
        match self {
            Action::Purge => "purge",
            Action::ReplayDead => "replay_dead",
            Action::RotateKey => "rotate_key",
            Action::ChangeMembership => "change_membership",
            Action::CreateToken => "create_token",
            Action::PutConfig => "put_config",
            Action::ResetLeases => "reset_leases",
            Action::RecoverLeases => "recover_leases",
            Action::SweepDeadLetters => "sweep_dead_letters",
            Action::CancelQueued => "cancel_queued",
            Action::RevokeToken => "revoke_token",
            Action::WriteReference => "write_reference",
            Action::DeleteUser => "delete_user",
            Action::ReleaseOwner => "release_owner",
            Action::PauseDestination => "pause_destination",
        }
    }
}

/// A configuration may list only actions dual control knows: a misspelt name would otherwise
/// protect nothing, silently.
pub fn check_required<'a>(names: impl IntoIterator<Item = &'a String>) -> ApiResult<()> {
    for name in names {
        if !Action::ALL.iter().any(|a| a.name() == name) {
            let known: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
            return Err(ApiError::invalid(
                "approvals_required",
                format!(
                    "'{name}' is not an action dual control covers ({})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Before `action` runs with `params`: nothing when the configuration does not list it; else the
/// request's approval (`Raftlane-Approval`) is used up for exactly this action and these
/// parameters, or the request is refused (403 `approval_required` naming the operation and the
/// parameters to request an approval for; 409 `approval_not_usable`; 404 for an unknown id).
pub async fn authorize<P: Serialize>(
    state: &AppState,
    caller: &Caller,
    action: Action,
    params: &P,
) -> ApiResult<()> {
    let config = current_config(state).await?;
    if !config.approvals_required.contains(action.name()) {
        return Ok(());
    }
    consume(state, caller, action, params, None).await
}

/// [`authorize`] for `PUT /v1/config` with `params` (`{expected_version, config}`): the change
/// needs an approval for `put_config` when `put_config` is listed, and also when it would take
/// away what another listed action guards or shrink the list itself
/// ([`config_change::reasons`]); the refusal names why.
pub async fn authorize_config<P: Serialize>(
    state: &AppState,
    caller: &Caller,
    params: &P,
    new: &raftlane_statemachine::model::config::ConfigDoc,
) -> ApiResult<()> {
    let current = current_config(state).await?;
    let reasons = config_change::reasons(&current, new);
    if reasons.is_empty() {
        return Ok(());
    }
    consume(
        state,
        caller,
        Action::PutConfig,
        params,
        Some(reasons.join("; ")),
    )
    .await
}

/// The current configuration, as of now: a list changed a moment ago must hold.
async fn current_config(
    state: &AppState,
) -> ApiResult<raftlane_statemachine::model::config::ConfigDoc> {
    state.writes.linearize().await?;
    Ok(crate::backend::read(state.backend.as_ref(), |r| r.config())?.doc)
}

/// Use the request's approval for `action` with `params`, or refuse: 403 `approval_required`
/// naming the operation, the parameters to request an approval for and `why` it is needed.
async fn consume<P: Serialize>(
    state: &AppState,
    caller: &Caller,
    action: Action,
    params: &P,
    why: Option<String>,
) -> ApiResult<()> {
    let params = serde_json::to_value(params)
        .map_err(|e| ApiError::internal(format!("parameters of {}: {e}", action.name())))?;
    let Some(id) = caller.approval else {
        let because = why.map(|w| format!(" ({w})")).unwrap_or_default();
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "approval_required",
            format!(
                "the configuration requires an approval for '{}'{because}: request one (POST \
                 /v1/approvals with this operation and params), have another principal approve \
                 it, then send its id in Raftlane-Approval",
                action.name()
            ),
        )
        .with_extra(serde_json::json!({ "operation": action.name(), "params": params })));
    };
    let command = Command::ConsumeApproval(ConsumeApproval {
        id,
        operation: action.name().to_string(),
        params: params.to_string(),
    });
    match propose(state, caller, command).await? {
        (_, Outcome::Approval(_)) => Ok(()),
        (_, other) => Err(unexpected(other)),
    }
}
