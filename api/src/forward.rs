//! Any node accepts any request: writes go to the leader, linearizable reads wait for the
//! leader's read index. This module is the only place that knows how.
//!
//! A write is proposed locally; if this node does not lead, the envelope is sent to the leader
//! with the other writes forwarded meanwhile ([`crate::relay`]), signed with the cluster secret
//! ([`crate::internal`]). Leader changes, lost answers and
//! dropped proposals are retried with the same envelope for a bounded time: its request id makes
//! the retry exactly-once (an entry that did commit answers the retry with its first answer,
//! [`Outcome::Repeated`], unwrapped here). After the window the client gets 503 with
//! `Retry-After`; it may retry with the same `Request-Id`.
//!
//! Membership changes are not state-machine commands; [`membership`] forwards them the same way
//! to the leader's `/internal/membership`.

use crate::app::AppState;
use crate::backend::{MembershipChange, ProposeError};
use crate::error::{ApiError, ApiResult};
use crate::internal::{signed_headers, PATH_MEMBERSHIP, PATH_READ_INDEX};
use crate::peer::base_url;
use crate::peer::PeerClient;
use bytes::Bytes;
use hyper::{Method, StatusCode};
use raftlane_raft::auth::ClusterAuth;
use raftlane_statemachine::{codec, Envelope, Outcome, Response};
use std::time::{Duration, Instant};

/// How long a request keeps retrying across a leader change.
const RETRY_WINDOW: Duration = Duration::from_secs(8);

/// Propose `envelope` through the leader and return the applied response.
pub async fn write(state: &AppState, envelope: Envelope) -> ApiResult<(u64, Response)> {
    let settled = until_settled("write", Settles::Applied, || async {
        match state.batcher.propose(envelope.clone()).await {
            Err(ProposeError::ForwardToLeader {
                addr: Some(addr), ..
            }) => state.relay.propose(&addr, envelope.clone()).await,
            other => other,
        }
    })
    .await?;
    let (index, response) = match settled? {
        (_, Ok(Outcome::Repeated { index, response })) => (index, *response),
        other => other,
    };
    state
        .metrics
        .record_command(envelope.command.name(), response.is_ok());
    Ok((index, response))
}

/// Which errors end [`until_settled`]'s retries; every other one is retried.
#[derive(Clone, Copy)]
enum Settles {
    /// Only a refusal or a fatal error: the call is safe to repeat even after an unknown
    /// outcome (a write's request id, a read index).
    Applied,
    /// Also an unknown outcome, which the caller must not blindly repeat (a membership change
    /// that timed out may still be under way).
    Answered,
}

impl Settles {
    fn is_final(self, e: &ProposeError) -> bool {
        match e {
            ProposeError::Fatal(_) | ProposeError::Refused(_) => true,
            ProposeError::Unknown(_) => matches!(self, Settles::Answered),
            ProposeError::ForwardToLeader { .. } | ProposeError::Unavailable(_) => false,
        }
    }
}

/// Run `attempt` until it succeeds or fails for good, retrying leader changes and unreachable
/// leaders with a growing pause for at most [`RETRY_WINDOW`], after which the client gets 503
/// (`Retry-After`). The one retry loop of writes, reads and membership changes.
async fn until_settled<T, F, Fut>(
    what: &str,
    settles: Settles,
    mut attempt: F,
) -> ApiResult<Result<T, ProposeError>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProposeError>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match attempt().await {
            Err(e) if !settles.is_final(&e) => {
                if started.elapsed() + pause > RETRY_WINDOW {
                    return Err(ApiError::unavailable(format!(
                        "no leader accepted the {what}: {e}"
                    )));
                }
                tracing::debug!(error = %e, "{what} not accepted yet; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            settled => return Ok(settled),
        }
    }
}

/// Make the local state at least as new as the leader's commit at the time of the call.
pub async fn linearize(state: &AppState) -> ApiResult<()> {
    let started = Instant::now();
    let index = until_settled("linearizable read", Settles::Applied, || async {
        // The batcher shares one leadership confirmation among concurrent readers.
        match state.batcher.read_index().await {
            Err(ProposeError::ForwardToLeader {
                addr: Some(addr), ..
            }) => remote_read_index(state, &addr).await,
            other => other,
        }
    })
    .await??;
    state
        .backend
        .wait_applied(index, RETRY_WINDOW.saturating_sub(started.elapsed()))
        .await
        .map_err(ApiError::from)
}

async fn remote_read_index(state: &AppState, addr: &str) -> Result<u64, ProposeError> {
    let url = format!("{}{PATH_READ_INDEX}", base_url(addr));
    let headers = signed_headers(state.cluster_auth.as_ref(), PATH_READ_INDEX, &[])?;
    let (status, _, bytes) = state
        .peer
        .call(Method::GET, &url, &headers, Vec::new())
        .await
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?;
    if !status.is_success() {
        return Err(ProposeError::Unavailable(format!(
            "leader answered {status}"
        )));
    }
    codec::decode::<Result<u64, ProposeError>>(&bytes)
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?
}

/// What a forwarded membership change allows beyond Raft's own bound for the answer to travel
/// back (the leader answers only after the change is committed).
const MEMBERSHIP_ANSWER_MARGIN: Duration = Duration::from_secs(15);

/// How long a forwarded membership change may take: adding a learner waits until it has
/// caught up, which Raft bounds by `raft_bound` (the node's `Tuning::membership_timeout_ms`),
/// plus a margin for the answer to arrive; never less than an ordinary node-to-node call.
pub fn membership_timeout(peer_timeout: Duration, raft_bound: Duration) -> Duration {
    raft_bound
        .saturating_add(MEMBERSHIP_ANSWER_MARGIN)
        .max(peer_timeout)
}

/// Apply a membership change through the leader, like [`write`]: here if this node leads, else
/// at the leader's `/internal/membership`. Leader changes and unreachable leaders are retried
/// for [`RETRY_WINDOW`] (both changes are idempotent: re-adding a learner or setting the same
/// voters again changes nothing), and so is a change made while the leader has not yet
/// committed the previous one (the backend reports it `Unavailable`: it will be accepted once
/// that commits). A change Raft refuses is `409 membership_refused`; one whose
/// outcome is unknown (it timed out, e.g. a learner still catching up) is a 503 the client may
/// check with `/v1/cluster`.
pub async fn membership(state: &AppState, change: MembershipChange) -> ApiResult<()> {
    let settled = until_settled("membership change", Settles::Answered, || async {
        match change.clone().apply(state.backend.as_ref()).await {
            Err(ProposeError::ForwardToLeader {
                addr: Some(addr), ..
            }) => forward_membership(state, &addr, &change).await,
            other => other,
        }
    })
    .await?;
    match settled {
        Ok(()) => Ok(()),
        Err(ProposeError::Refused(m)) => {
            Err(ApiError::new(StatusCode::CONFLICT, "membership_refused", m))
        }
        Err(e @ ProposeError::Unknown(_)) => Err(ApiError::unavailable(format!(
            "{e}; check /v1/cluster before retrying"
        ))),
        Err(e) => Err(ApiError::from(e)),
    }
}

async fn forward_membership(
    state: &AppState,
    addr: &str,
    change: &MembershipChange,
) -> Result<(), ProposeError> {
    let body = codec::encode(change);
    call_leader(
        &state.membership_peer,
        state.cluster_auth.as_ref(),
        addr,
        PATH_MEMBERSHIP,
        body,
    )
    .await
}

/// POST `body` to the leader's internal `path`, signed, and decode the leader's own answer
/// (`Result<T, ProposeError>`, as the local call would have returned it).
pub(crate) async fn call_leader<T: serde::de::DeserializeOwned>(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    addr: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<T, ProposeError> {
    let (status, bytes) = post_signed(peer, auth, addr, path, body).await?;
    leader_answer(status, &bytes)
}

/// POST `body` to the leader's internal `path`, signed; the status and body of the answer.
pub(crate) async fn post_signed(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    addr: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), ProposeError> {
    let url = format!("{}{path}", base_url(addr));
    let headers = signed_headers(auth, path, &body)?;
    let (status, _, bytes) = peer
        .call(Method::POST, &url, &headers, body)
        .await
        .map_err(lost_or_unsent)?;
    Ok((status, bytes))
}

/// The leader's own answer (`Result<T, ProposeError>`) in a successful response.
pub(crate) fn leader_answer<T: serde::de::DeserializeOwned>(
    status: StatusCode,
    bytes: &[u8],
) -> Result<T, ProposeError> {
    if !status.is_success() {
        return Err(ProposeError::Unavailable(format!(
            "leader answered {status}"
        )));
    }
    codec::decode::<Result<T, ProposeError>>(bytes)
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?
}

/// A forwarded proposal whose answer was lost may have been applied; retrying it is still safe
/// (its request id makes the retry return the first answer), but the error says what happened.
fn lost_or_unsent(e: crate::peer::PeerError) -> ProposeError {
    match e {
        crate::peer::PeerError::Unreachable(m) | crate::peer::PeerError::Request(m) => {
            ProposeError::Unavailable(m)
        }
        crate::peer::PeerError::Timeout => {
            ProposeError::Unknown("the leader did not answer in time".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_timeout_follows_the_nodes_raft_bound() {
        let peer = Duration::from_secs(10);
        // A node tuned for slow catch-up waits longer than the default would allow.
        assert_eq!(
            membership_timeout(peer, Duration::from_secs(300)),
            Duration::from_secs(315)
        );
        assert_eq!(
            membership_timeout(peer, Duration::from_secs(60)),
            Duration::from_secs(75)
        );
        // Never shorter than an ordinary node-to-node call.
        assert_eq!(
            membership_timeout(Duration::from_secs(40), Duration::from_secs(1)),
            Duration::from_secs(40)
        );
    }
}
