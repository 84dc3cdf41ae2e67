//! Encryption at rest on the API side (docs/SPEC.md §2.6): key rotation. (Sealing proposals,
//! opening reads, containing claimed rows whose payload no configured key can decrypt and the
//! rotation itself are the write path's: `crate::write::at_rest`, `crate::write::claim`,
//! `crate::write::key_rotation`.)

use crate::auth::{Caller, Permission};
use crate::dual_control::{self, Action};
use crate::error::ApiResult;
use crate::extract::OptionalJson;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use raftlane_contract::{RotateRequest, Rotated};
use std::sync::Arc;

/// `POST /v1/keys/rotate`: re-encrypt every covered value under the active key
/// ([`crate::write::key_rotation`]). A value no configured key can decrypt answers `409`
/// naming it, and nothing is written for its batch; a value that changed meanwhile is left
/// alone and counted in `conflicts` (run the rotation again). Answers `{rewritten, skipped,
/// conflicts, batches}`.
pub async fn rotate(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<RotateRequest>,
) -> ApiResult<Json<Rotated>> {
    caller.require_global(Permission::Admin)?;
    let body = body.parse()?;
    // Bytes of expected + new values per command: a forwarded command must fit the leader's
    // request limit.
    let budget = state.max_body_bytes.max(64 * 1024);
    let rotation = state.writes.key_rotation(body.batch_size, budget)?;
    dual_control::authorize(&state, &caller, Action::RotateKey, &body).await?;
    let done = rotation.run(&|command| caller.envelope(command)).await?;
    Ok(Json(Rotated {
        active_key: done.active_key,
        batches: done.batches,
        conflicts: done.conflicts,
        rewritten: done.rewritten,
        skipped: done.skipped,
    }))
}
