//! Sessions of the engine's users (docs/SPEC.md §13): created, read, changed, revoked and
//! purged, by token hash (the token itself never reaches the API). Admin only, like the users
//! they belong to ([`super::users`]).
//!
//! A write whose body names `at` (the caller's time, ms) is proposed as [`SessionAt`]: the
//! session times it stamps are the caller's, within the bound the state machine checks
//! (docs/SPEC.md §13.2); without `at` they are the cluster's time.

use super::users::{change_body, count, done};
use super::{check_name, propose, read_state, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json_or_default, JsonBody, OptionalJson, Path, Query, RawBody};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use raftlane_contract::{
    CreateSessionRequest, NoChangeBody, ReauthChange, RevokeSessionsRequest, SessionCapRequest,
    SessionChangeAt, SessionChanged, SessionCreated, SessionList, SessionView, SessionsPurged,
    SessionsRevoked,
};
use raftlane_statemachine::wire::command::{
    CreateSession, EnforceSessionCap, PurgeExpiredSessions, RevokeUserSessions, SessionAt,
    SessionChange, SessionWrite, UpdateSession,
};
use raftlane_statemachine::Command;
use std::sync::Arc;

/// The command for a session write: dated by the caller ([`SessionAt`]) when the body names
/// `at`, else the plain command, stamped with the cluster's time.
fn session_write(at: Option<u64>, write: SessionWrite) -> Command {
    match (at, write) {
        (Some(at), write) => Command::SessionAt(SessionAt { at, write }),
        (None, SessionWrite::Create(c)) => Command::CreateSession(c),
        (None, SessionWrite::Update(c)) => Command::UpdateSession(c),
        (None, SessionWrite::RevokeUser(c)) => Command::RevokeUserSessions(c),
        (None, SessionWrite::Cap(c)) => Command::EnforceSessionCap(c),
    }
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<CreateSessionRequest>,
) -> ApiResult<(StatusCode, Json<SessionCreated>)> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("token_hash", &b.token_hash)?;
    check_name("user_id", &b.user_id)?;
    let command = session_write(
        b.at,
        SessionWrite::Create(CreateSession {
            token_hash: b.token_hash.clone(),
            user_id: b.user_id,
            expires_at: b.expires_at,
            client: b.client,
            seed_reauth: b.seed_reauth,
        }),
    );
    let index = done(propose(&state, &caller, command).await?)?;
    Ok((
        StatusCode::CREATED,
        Json(SessionCreated {
            index,
            token_hash: b.token_hash,
        }),
    ))
}

pub async fn get_one(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(token_hash): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<SessionView>> {
    caller.require_global(Permission::EngineUsers)?;
    match read_state(&state, &opts, |r| r.session(&token_hash)).await? {
        Some(s) => Ok(Json(SessionView::from(s))),
        None => Err(ApiError::not_found("session not found")),
    }
}

/// The user's live sessions at the request's time (the client's in test mode).
pub async fn of_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(user_id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<SessionList>> {
    caller.require_global(Permission::EngineUsers)?;
    let now = caller.now_ms();
    let sessions = read_state(&state, &opts, |r| r.active_sessions(&user_id, now)).await?;
    Ok(Json(SessionList {
        sessions: sessions.into_iter().map(SessionView::from).collect(),
    }))
}

pub async fn change(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((token_hash, change)): Path<(String, String)>,
    RawBody(body): RawBody,
) -> ApiResult<Json<SessionChanged>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("token_hash", &token_hash)?;
    let (change, at) = parse_change(&change, &body)?;
    let command = session_write(
        at,
        SessionWrite::Update(UpdateSession { token_hash, change }),
    );
    let (index, n) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(SessionChanged {
        index,
        changed: n > 0,
    }))
}

/// The change `POST /v1/sessions/{token_hash}/{change}` names, with the time its body gives.
fn parse_change(change: &str, body: &[u8]) -> ApiResult<(SessionChange, Option<u64>)> {
    let at = |body: &[u8]| Ok::<_, ApiError>(change_body::<SessionChangeAt>(body)?.at);
    Ok(match change {
        "touch" => (SessionChange::Touch, at(body)?),
        "reauth" => {
            let ReauthChange { client, at } = parse_json_or_default(body)?;
            (SessionChange::Reauthed { client }, at)
        }
        "mfa-verified" => (SessionChange::MfaVerified, at(body)?),
        "revoke" => (SessionChange::Revoke, at(body)?),
        other => {
            return Err(ApiError::invalid(
                "change",
                format!("'{other}' is not touch, reauth, mfa-verified or revoke"),
            ))
        }
    })
}

pub async fn revoke_of_user(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(user_id): Path<String>,
    body: OptionalJson<RevokeSessionsRequest>,
) -> ApiResult<Json<SessionsRevoked>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &user_id)?;
    let b = body.parse()?;
    let command = session_write(
        b.at,
        SessionWrite::RevokeUser(RevokeUserSessions {
            user_id,
            except_token_hash: b.except_token_hash,
        }),
    );
    let (index, revoked) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(SessionsRevoked { index, revoked }))
}

pub async fn cap(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(user_id): Path<String>,
    JsonBody(b): JsonBody<SessionCapRequest>,
) -> ApiResult<Json<SessionsRevoked>> {
    caller.require_global(Permission::EngineUsers)?;
    check_name("id", &user_id)?;
    let command = session_write(
        b.at,
        SessionWrite::Cap(EnforceSessionCap {
            user_id,
            keep: b.keep,
        }),
    );
    let (index, revoked) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(SessionsRevoked { index, revoked }))
}

/// Delete every session expired before the request's time (the client's in test mode).
pub async fn purge_expired(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<NoChangeBody>,
) -> ApiResult<Json<SessionsPurged>> {
    caller.require_global(Permission::EngineUsers)?;
    let NoChangeBody {} = body.parse()?;
    let command = Command::PurgeExpiredSessions(PurgeExpiredSessions);
    let (index, purged) = count(propose(&state, &caller, command).await?)?;
    Ok(Json(SessionsPurged { index, purged }))
}
