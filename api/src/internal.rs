//! The node-to-node routes of the API (`/internal/...`): their handlers, and the verification
//! of the signed calls they accept.
//!
//! A follower's write path ([`crate::write`]) sends the leader the writes
//! (`/internal/propose-batch`, or `/internal/propose` for one), read-index requests
//! (`/internal/read-index`) and membership changes (`/internal/membership`) its clients made,
//! signed with the cluster secret as [`crate::write::signing`] describes. Here the leader checks
//! the signature before it reads the body (so a caller without the secret cannot make it buffer
//! a large body) and the body MAC before anything decodes it, then serves the call through its
//! own write path, without forwarding it again.
//!
//! The former scheme, the secret itself in [`LEGACY_SECRET_HEADER`], is refused like any other
//! unsigned request (401); a node that still sends it (an older version during a rolling
//! upgrade) is logged, so the operator sees why its forwarded writes fail.
//!
//! A refusal says only that authentication failed, with a stable code (`clock_skew` or
//! `unauthorized`): why (which node a call was signed for, how far the clocks are apart) is
//! logged here at WARN, never answered.

use crate::backend::{MembershipChange, ProposeError};
use crate::error::{ApiError, ApiResult};
use crate::extract::body_error;
use crate::state::AppState;
use crate::write::relay::MAX_ENVELOPES;
use crate::write::signing::{
    LEGACY_SECRET_HEADER, PATH_MEMBERSHIP, PATH_PROPOSE, PATH_PROPOSE_BATCH, PATH_READ_INDEX,
};
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use raftlane_raft::auth::{AuthError, ClusterAuth, Verified, AUTH_HEADER, REFUSED_MESSAGE};
use raftlane_statemachine::{codec, Envelope};
use std::sync::Arc;

/// Check everything but the body: the signature's shape, that it was made for this node, its
/// freshness, head MAC and nonce (a replay is refused).
fn check_head<'a>(
    state: &'a AppState,
    headers: &HeaderMap,
    path: &str,
) -> ApiResult<(&'a ClusterAuth, Verified)> {
    let Some(auth) = state.writes.cluster_auth() else {
        tracing::warn!(
            path,
            "refused a node-to-node call: this node has no cluster secret configured"
        );
        return Err(ApiError::unauthorized(REFUSED_MESSAGE));
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
        .check_head(
            header,
            path,
            state.backend.node_id(),
            crate::clock::now_ms(),
        )
        .map_err(|e| refused(path, e))?;
    Ok((auth, head))
}

/// The `401` of a refused call: a stable code (`clock_skew` or `unauthorized`) and a message
/// that says only that authentication failed ([`AuthError::public_code`]). The reason (the node
/// the call was signed for, the size of a clock skew, a replayed nonce) could help a caller
/// without the secret, so it goes to this node's log instead.
fn refused(path: &str, e: AuthError) -> ApiError {
    tracing::warn!(path, error = %e, "refused a node-to-node call");
    ApiError::new(StatusCode::UNAUTHORIZED, e.public_code(), REFUSED_MESSAGE)
}

/// Verify a signed request to `path` and return its body. The head is checked before the body
/// is read (within the route's body limit), the body MAC before anything decodes it.
async fn verified_body(state: &AppState, req: Request, path: &str) -> ApiResult<Bytes> {
    let (auth, head) = check_head(state, req.headers(), path)?;
    let body = Bytes::from_request(req, &()).await.map_err(body_error)?;
    auth.check_body(path, &head, &body)
        .map_err(|e| refused(path, e))?;
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
        Ok(envelope) => state.writes.propose_here(envelope).await,
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
    if envelopes.is_empty() || envelopes.len() > MAX_ENVELOPES {
        return ApiError::invalid("body", format!("must hold 1 to {MAX_ENVELOPES} envelopes"))
            .into_response();
    }
    let proposals = envelopes.into_iter().map(|e| state.writes.propose_here(e));
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
    let result = state.writes.read_index().await;
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
    let result = state.writes.membership_here(change).await;
    (StatusCode::OK, codec::encode(&result)).into_response()
}
