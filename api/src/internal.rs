//! The node-to-node routes of the API (`/internal/...`) and how they are authenticated.
//!
//! A follower sends the leader the writes (`/internal/propose-batch`, or `/internal/propose` for
//! one), read-index requests
//! (`/internal/read-index`) and membership changes (`/internal/membership`) its clients made.
//! These routes can write anything, so they are signed exactly like the Raft transport's RPCs,
//! with [`ClusterAuth`]: `x-raftlane-auth: <ts>.<head MAC>.<body MAC>`, HMAC-SHA256s under the
//! cluster secret over the route's path, the timestamp and the body. Hence:
//! - the secret never travels (the API is plain HTTP; a secret in a header could be read off the
//!   wire and would then let anyone write anything),
//! - a captured request cannot be sent to another route or with another body,
//! - the signature is checked before the body is read, so a caller without the secret cannot
//!   make the node buffer a large body.
//!
//! The former scheme, the secret itself in [`LEGACY_SECRET_HEADER`], is refused like any other
//! unsigned request (401); a node that still sends it (an older version during a rolling
//! upgrade) is logged, so the operator sees why its forwarded writes fail.
//!
//! Replays of a captured request are limited by the freshness window [`MAX_SKEW_MS`], which is
//! shorter than the state machine's request-id memory: a replayed proposal still finds the
//! record of its first application and is answered as a repeat, never applied twice.

use crate::app::{body_error, AppState};
use crate::backend::{MembershipChange, ProposeError};
use crate::error::{ApiError, ApiResult};
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use raftlane_raft::auth::{ClusterAuth, Verified, AUTH_HEADER};
use raftlane_statemachine::{codec, Envelope};
use std::sync::Arc;

/// Where a follower forwards a write (one envelope; what nodes before the batch route sent).
pub const PATH_PROPOSE: &str = "/internal/propose";
/// Where a follower forwards the writes gathered by its [`crate::relay`] (many envelopes).
pub const PATH_PROPOSE_BATCH: &str = "/internal/propose-batch";
/// Where a follower asks the leader for a read index.
pub const PATH_READ_INDEX: &str = "/internal/read-index";
/// Where a follower forwards a membership change (not a state-machine command, so it cannot
/// travel as a proposal).
pub const PATH_MEMBERSHIP: &str = "/internal/membership";

/// The header of the former scheme, which carried the cluster secret itself. No longer
/// accepted; only recognized to log that a peer still sends it.
pub const LEGACY_SECRET_HEADER: &str = "x-raftlane-cluster-secret";

/// Largest accepted difference between a signature's timestamp and this node's clock: half the
/// state machine's request-id memory, so that a replayed proposal is either refused as stale or
/// answered as a repeat of its first application. Far above the clock differences the chaos
/// suite injects (a few seconds).
pub const MAX_SKEW_MS: u64 = raftlane_statemachine::request::REQUEST_TTL_MS / 2;

/// The signer/verifier for `secret`; `None` when no secret is configured (then every internal
/// request is refused and this node cannot forward).
pub fn cluster_auth(secret: &str) -> Option<ClusterAuth> {
    (!secret.is_empty()).then(|| ClusterAuth::new(secret, MAX_SKEW_MS))
}

/// The signature header of a request to `path` carrying `body`, stamped now.
pub fn signature(auth: &ClusterAuth, path: &str, body: &[u8]) -> (&'static str, String) {
    (AUTH_HEADER, auth.sign(path, crate::app::now_ms(), body))
}

/// Headers of a signed call from this node, or `Fatal` when it has no secret to sign with.
pub(crate) fn signed_headers(
    auth: Option<&ClusterAuth>,
    path: &str,
    body: &[u8],
) -> Result<Vec<(&'static str, String)>, ProposeError> {
    let auth = auth.ok_or_else(|| {
        ProposeError::Fatal("this node has no cluster secret: it cannot reach the leader".into())
    })?;
    Ok(vec![
        signature(auth, path, body),
        ("content-type", "application/octet-stream".to_string()),
    ])
}

/// Check everything but the body: the signature's shape, freshness and head MAC.
fn check_head<'a>(
    state: &'a AppState,
    headers: &HeaderMap,
    path: &str,
) -> ApiResult<(&'a ClusterAuth, Verified)> {
    let Some(auth) = state.cluster_auth.as_ref() else {
        return Err(ApiError::unauthorized(
            "this node has no cluster secret configured",
        ));
    };
    if headers.contains_key(LEGACY_SECRET_HEADER) {
        tracing::warn!(
            path,
            "refused a node-to-node call carrying the cluster secret in plain text; \
             the calling node runs an older version and must be upgraded"
        );
    }
    let header = headers.get(AUTH_HEADER).and_then(|v| v.to_str().ok());
    let head = auth
        .check_head(header, path, crate::app::now_ms())
        .map_err(refused)?;
    Ok((auth, head))
}

fn refused(e: raftlane_raft::auth::AuthError) -> ApiError {
    ApiError::unauthorized(format!("node-to-node call refused: {e}"))
}

/// Verify a signed request to `path` and return its body. The head is checked before the body
/// is read (within the route's body limit), the body MAC before anything decodes it.
async fn verified_body(state: &AppState, req: Request, path: &str) -> ApiResult<Bytes> {
    let (auth, head) = check_head(state, req.headers(), path)?;
    let body = Bytes::from_request(req, &()).await.map_err(body_error)?;
    auth.check_body(path, &head, &body).map_err(refused)?;
    Ok(body)
}

/// `POST /internal/propose`: propose a follower's envelope here; answers the encoded
/// `Result<(u64, Response), ProposeError>`.
pub async fn propose(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let body = match verified_body(&state, req, PATH_PROPOSE).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let result = match codec::decode::<Envelope>(&body) {
        Ok(envelope) => state.batcher.propose(envelope).await,
        Err(e) => return ApiError::invalid("body", e.to_string()).into_response(),
    };
    (StatusCode::OK, codec::encode(&result)).into_response()
}

/// `POST /internal/propose-batch`: propose a follower's forwarded envelopes here, each through
/// this node's batcher as if its own client had sent it (so they share its log entries);
/// answers the encoded `Result<Vec<Result<(u64, Response), ProposeError>>, ProposeError>`
/// (always `Ok`: the outer result is the shape every internal answer has), one per envelope,
/// in order.
pub async fn propose_batch(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let body = match verified_body(&state, req, PATH_PROPOSE_BATCH).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let envelopes = match codec::decode::<Vec<Envelope>>(&body) {
        Ok(envelopes) => envelopes,
        Err(e) => return ApiError::invalid("body", e.to_string()).into_response(),
    };
    if envelopes.is_empty() || envelopes.len() > crate::relay::MAX_ENVELOPES {
        return ApiError::invalid(
            "body",
            format!("must hold 1 to {} envelopes", crate::relay::MAX_ENVELOPES),
        )
        .into_response();
    }
    let proposals = envelopes.into_iter().map(|e| state.batcher.propose(e));
    let answers: Result<Vec<_>, ProposeError> = Ok(futures::future::join_all(proposals).await);
    (StatusCode::OK, codec::encode(&answers)).into_response()
}

/// `GET /internal/read-index`: the leader's read index; answers the encoded
/// `Result<u64, ProposeError>`.
pub async fn read_index(State(state): State<Arc<AppState>>, req: Request) -> Response {
    if let Err(e) = verified_body(&state, req, PATH_READ_INDEX).await {
        return e.into_response();
    }
    // Through the batcher: followers' linearizable reads share one confirmation round too.
    let result = state.batcher.read_index().await;
    (StatusCode::OK, codec::encode(&result)).into_response()
}

/// `POST /internal/membership`: apply a follower's membership change here (it is forwarded
/// only once: if leadership moved meanwhile, the answer says so and the follower retries);
/// answers the encoded `Result<(), ProposeError>`.
pub async fn membership(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let body = match verified_body(&state, req, PATH_MEMBERSHIP).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let change = match codec::decode::<MembershipChange>(&body) {
        Ok(c) => c,
        Err(e) => return ApiError::invalid("body", e.to_string()).into_response(),
    };
    let result = change.apply(state.backend.as_ref()).await;
    (StatusCode::OK, codec::encode(&result)).into_response()
}
