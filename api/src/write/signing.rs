//! How nodes sign their calls to each other's `/internal/...` routes, and where those routes
//! are.
//!
//! A follower sends the leader the writes (`/internal/propose-batch`, or `/internal/propose` for
//! one), read-index requests (`/internal/read-index`) and membership changes
//! (`/internal/membership`) its clients made. These routes can write anything, so they are
//! signed exactly like the Raft transport's RPCs, with [`ClusterAuth`]:
//! `x-raftlane-auth: <ts>.<nonce>.<target id>.<head MAC>.<body MAC>`, HMAC-SHA256s under the
//! cluster secret over the route's path, the timestamp, a random nonce, the id of the node
//! called (the leader) and the body. Hence:
//! - the secret never travels (the API may be plain HTTP; a secret in a header could be read
//!   off the wire and would then let anyone write anything),
//! - a captured request cannot be sent to another route, with another body, to another node,
//!   or a second time (the receiver remembers the nonces of the freshness window),
//! - the receiving node can check the signature before it reads the body, so a caller without
//!   the secret cannot make it buffer a large body.
//!
//! This module signs the write path's calls to the leader ([`super::relay`]'s among them); the
//! HTTP layer's `internal` module verifies incoming calls with the same [`ClusterAuth`].
//!
//! The former scheme, the secret itself in [`LEGACY_SECRET_HEADER`], is refused like any other
//! unsigned request (401).
//!
//! A replay of a captured request is refused (401): within the freshness window (the clock-skew bound)
//! its nonce is remembered, past it the request is stale. The nonce is what refuses a replay
//! inside the window; even without it, the window, shorter than the state machine's request-id
//! memory, makes a replayed proposal a repeat, never applied twice.

use crate::backend::ProposeError;
use raftlane_raft::auth::{ClusterAuth, AUTH_HEADER};

/// Where a follower forwards a write (one envelope; what nodes before the batch route sent).
pub const PATH_PROPOSE: &str = "/internal/propose";
/// Where a follower forwards the writes gathered by its [`super::relay`] (many envelopes).
pub const PATH_PROPOSE_BATCH: &str = "/internal/propose-batch";
/// Where a follower asks the leader for a read index.
pub const PATH_READ_INDEX: &str = "/internal/read-index";
/// Where a follower forwards a membership change (not a state-machine command, so it cannot
/// travel as a proposal).
pub const PATH_MEMBERSHIP: &str = "/internal/membership";

/// The header of the former scheme, which carried the cluster secret itself. No longer
/// accepted; only recognized to log that a peer still sends it.
pub const LEGACY_SECRET_HEADER: &str = "x-raftlane-cluster-secret";

/// The signer/verifier for `secret` with the default clock-skew bound; `None` when no secret is
/// configured (then every internal request is refused and this node cannot forward).
pub fn cluster_auth(secret: &str) -> Option<ClusterAuth> {
    cluster_auth_with(secret, raftlane_raft::config::DEFAULT_CLOCK_SKEW_MS)
}

/// [`cluster_auth`] with the node's clock-skew bound (`Tuning::max_clock_skew_ms`, the one bound
/// Raft's own RPCs use too, at most half the state machine's request-id memory, so that a
/// replayed proposal is either refused as stale or answered as a repeat).
pub fn cluster_auth_with(secret: &str, max_skew_ms: u64) -> Option<ClusterAuth> {
    (!secret.is_empty()).then(|| ClusterAuth::new(secret, max_skew_ms))
}

/// The signature header of a request to node `target`'s `path` carrying `body`, stamped now.
pub fn signature(
    auth: &ClusterAuth,
    target: u64,
    path: &str,
    body: &[u8],
) -> (&'static str, String) {
    (
        AUTH_HEADER,
        auth.sign(target, path, raftlane_raft::now_ms(), body),
    )
}

/// Headers of a signed call from this node to node `target`, or `Fatal` when it has no secret
/// to sign with.
pub(crate) fn signed_headers(
    auth: Option<&ClusterAuth>,
    target: u64,
    path: &str,
    body: &[u8],
) -> Result<Vec<(&'static str, String)>, ProposeError> {
    let auth = auth.ok_or_else(|| {
        ProposeError::Fatal("this node has no cluster secret: it cannot reach the leader".into())
    })?;
    Ok(vec![
        signature(auth, target, path, body),
        ("content-type", "application/octet-stream".to_string()),
    ])
}
