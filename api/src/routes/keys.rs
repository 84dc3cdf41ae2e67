//! Encryption at rest on the API side (docs/SPEC.md §2.6): key rotation. (Sealing proposals,
//! opening reads and containing claimed rows whose payload no configured key can decrypt are
//! the write path's: `crate::write::at_rest`, `crate::write::claim`.)

use crate::auth::{Caller, Permission};
use crate::backend;
use crate::crypto::{self, Keyring};
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::OptionalJson;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{RotateRequest, Rotated};
use raftlane_statemachine::wire::command::RewriteValues;
use raftlane_statemachine::wire::rewrite::{Rewrite, ValueRef};
use raftlane_statemachine::{Command, Outcome};
use serde_json::json;
use std::sync::Arc;

/// Covered values read per batch of a rotation, by default.
pub const ROTATE_BATCH: usize = 500;
/// Largest batch a caller may ask for.
pub const MAX_ROTATE_BATCH: usize = 5000;

fn undecryptable(target: &ValueRef, value: &str, err: &crypto::CryptoError) -> ApiError {
    let key = crypto::key_id_of(value);
    ApiError {
        extra: Some(json!({ "ref": target, "key_id": key })),
        ..ApiError::new(
            StatusCode::CONFLICT,
            "undecryptable",
            format!("rotation stopped, nothing written for this value's batch: {target:?}: {err}"),
        )
    }
}

/// Read the next page of covered values after `cursor` (linearizable, so a page reflects every
/// write acknowledged before it, including this rotation's own previous batches).
async fn page(
    state: &AppState,
    cursor: Option<&ValueRef>,
    size: usize,
) -> ApiResult<Vec<(ValueRef, String)>> {
    state.writes.linearize().await?;
    Ok(backend::read(state.backend.as_ref(), |r| {
        r.covered_values(cursor, size)
    })?)
}

/// Pass 1: every covered value must decrypt under some configured key, or nothing is written.
async fn preflight(state: &AppState, keyring: &Keyring, size: usize) -> ApiResult<u64> {
    let mut cursor: Option<ValueRef> = None;
    let mut seen = 0u64;
    loop {
        let values = page(state, cursor.as_ref(), size).await?;
        let Some((last, _)) = values.last() else {
            return Ok(seen);
        };
        let next = last.clone();
        for (target, value) in &values {
            if value.is_empty() || keyring.is_current(value) {
                continue;
            }
            if let Err(e) = keyring.open(value) {
                return Err(undecryptable(target, value, &e));
            }
        }
        seen += values.len() as u64;
        cursor = Some(next);
    }
}

/// `POST /v1/keys/rotate`: re-encrypt every covered value under the active key.
///
/// A first pass checks that every covered value decrypts (a value no configured key can decrypt
/// answers `409` naming it, and nothing is written). The second pass walks the values again in
/// bounded batches, re-encrypts those not already under the active key (legacy plaintext
/// included) and proposes one compare-and-set [`Command::RewriteValues`] per batch, split further
/// so no command outgrows the request size limit. A value that changed meanwhile is left alone
/// and counted in `conflicts` (run the rotation again). Answers `{rewritten, skipped,
/// conflicts, batches}`.
pub async fn rotate(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<RotateRequest>,
) -> ApiResult<Json<Rotated>> {
    caller.require_global(Permission::Admin)?;
    let body = body.parse()?;
    let size = body.batch_size.unwrap_or(ROTATE_BATCH);
    if size == 0 || size > MAX_ROTATE_BATCH {
        return Err(ApiError::invalid(
            "batch_size",
            format!("must be between 1 and {MAX_ROTATE_BATCH}"),
        ));
    }
    let Some(keyring) = state.keyring() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "no_keyring",
            "encryption at rest is off on this node (set RAFTLANE_KEYRING)",
        ));
    };
    dual_control::authorize(&state, &caller, Action::RotateKey, &body).await?;
    let active = keyring.active_id().to_string();
    tracing::info!(active = %active, "key rotation: checking every covered value decrypts");
    let total = preflight(&state, keyring, size).await?;
    tracing::info!(active = %active, values = total, "key rotation: rewriting");
    // Bytes of expected + new values per command: a forwarded command must fit the leader's
    // request limit.
    let budget = state.max_body_bytes.max(64 * 1024);
    let (mut rewritten, mut skipped, mut conflicts, mut batches) = (0u64, 0u64, 0u64, 0u64);
    let mut cursor: Option<ValueRef> = None;
    loop {
        let values = page(&state, cursor.as_ref(), size).await?;
        let Some((last, _)) = values.last() else {
            break;
        };
        cursor = Some(last.clone());
        // Encrypt the whole page before proposing any of it: a value that became
        // undecryptable since the first pass stops the rotation before this page is written.
        let mut items = Vec::with_capacity(values.len());
        for (target, value) in values {
            match keyring.rotate(&value) {
                Ok(Some(new)) => items.push(Rewrite {
                    target,
                    expected: value,
                    value: new,
                }),
                Ok(None) => skipped += 1,
                Err(e) => {
                    tracing::warn!(?target, %e, rewritten, batches, "key rotation stopped");
                    return Err(undecryptable(&target, &value, &e));
                }
            }
        }
        let mut chunk: Vec<Rewrite> = Vec::new();
        let mut bytes = 0usize;
        let mut rest = items.into_iter().peekable();
        while let Some(item) = rest.next() {
            bytes += item.expected.len() + item.value.len();
            chunk.push(item);
            let full = rest
                .peek()
                .is_none_or(|n| bytes + n.expected.len() + n.value.len() > budget);
            if !full {
                continue;
            }
            let requested = chunk.len() as u64;
            let command = Command::RewriteValues(RewriteValues {
                items: std::mem::take(&mut chunk),
            });
            bytes = 0;
            match super::propose(&state, &caller, command).await? {
                (index, Outcome::Count(n)) => {
                    batches += 1;
                    rewritten += n;
                    conflicts += requested.saturating_sub(n);
                    tracing::info!(
                        batch = batches,
                        index,
                        rewritten = n,
                        total_rewritten = rewritten,
                        "key rotation: batch applied"
                    );
                }
                (_, other) => return Err(super::unexpected(other)),
            }
        }
    }
    tracing::info!(active = %active, rewritten, skipped, conflicts, batches, "key rotation done");
    Ok(Json(Rotated {
        active_key: active,
        batches,
        conflicts,
        rewritten,
        skipped,
    }))
}
