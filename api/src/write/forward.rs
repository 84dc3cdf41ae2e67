//! The one retry loop of the write path, and the calls a follower makes to the leader.
//!
//! A write is proposed locally; if this node does not lead, the envelope is sent to the leader
//! with the other writes forwarded meanwhile ([`super::relay`]), signed with the cluster secret
//! ([`super::signing`]). Leader changes, lost answers and dropped proposals are retried with the
//! same envelope for a bounded time ([`until_settled`]): its request id makes the retry
//! exactly-once (an entry that did commit answers the retry with its first answer,
//! `Outcome::Repeated`, unwrapped by [`super::Proposer::write`]). After the window the caller
//! gets [`WriteError::NoLeader`] (the HTTP layer's 503 with `Retry-After`); a client may retry
//! with the same `Request-Id`.
//!
//! Read indexes ([`read_index_at`]) and membership changes ([`membership_at`], not state-machine
//! commands) go to the leader's internal routes the same way.

use super::signing::{signed_headers, PATH_MEMBERSHIP, PATH_READ_INDEX};
use super::WriteError;
use crate::backend::{MembershipChange, ProposeError};
use crate::peer::{base_url, PeerClient, PeerError};
use bytes::Bytes;
use hyper::{Method, StatusCode};
use raftlane_raft::auth::ClusterAuth;
use raftlane_statemachine::codec;
use std::time::{Duration, Instant};

/// How long a request keeps retrying across a leader change.
pub(crate) const RETRY_WINDOW: Duration = Duration::from_secs(8);

/// Which errors end [`until_settled`]'s retries; every other one is retried.
#[derive(Clone, Copy)]
pub(crate) enum Settles {
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
            // A node whose storage failed stays failed until it restarts: retrying here only
            // delays the 503 that sends the client to another node.
            ProposeError::Fatal(_)
            | ProposeError::Refused(_)
            | ProposeError::MembershipRule { .. }
            | ProposeError::StorageUnavailable(_)
            | ProposeError::ClockSkew(_) => true,
            ProposeError::Unknown(_) => matches!(self, Settles::Answered),
            ProposeError::ForwardToLeader(_) | ProposeError::Unavailable(_) => false,
        }
    }
}

/// Run `attempt` until it succeeds or fails for good, retrying leader changes and unreachable
/// leaders with a growing pause for at most [`RETRY_WINDOW`], after which the error is
/// [`WriteError::NoLeader`]. The one retry loop of writes, reads and membership changes.
pub(crate) async fn until_settled<T, F, Fut>(
    what: &'static str,
    settles: Settles,
    mut attempt: F,
) -> Result<T, WriteError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProposeError>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) if !settles.is_final(&e) => {
                if started.elapsed() + pause > RETRY_WINDOW {
                    return Err(WriteError::NoLeader { what, last: e });
                }
                tracing::debug!(error = %e, "{what} not accepted yet; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(WriteError::settled(what, e)),
        }
    }
}

/// The read index of the leader (node `leader`, at `addr`), asked at its
/// `/internal/read-index`.
pub(crate) async fn read_index_at(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    leader: u64,
    addr: &str,
) -> Result<u64, ProposeError> {
    let url = format!("{}{PATH_READ_INDEX}", base_url(addr));
    let headers = signed_headers(auth, leader, PATH_READ_INDEX, &[])?;
    let (status, _, bytes) = peer
        .call(Method::GET, &url, &headers, Vec::new())
        .await
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?;
    if !status.is_success() {
        return Err(refusal(status, &bytes));
    }
    codec::decode::<Result<u64, ProposeError>>(&bytes)
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?
}

/// Apply `change` at the leader (node `leader`, at `addr`), through its `/internal/membership`
/// (`peer` must wait as long as [`membership_timeout`]).
pub(crate) async fn membership_at(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    leader: u64,
    addr: &str,
    change: &MembershipChange,
) -> Result<(), ProposeError> {
    call_leader(
        peer,
        auth,
        leader,
        addr,
        PATH_MEMBERSHIP,
        codec::encode(change),
    )
    .await
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

/// POST `body` to the leader's internal `path`, signed for node `leader`, and decode the
/// leader's own answer (`Result<T, ProposeError>`, as the local call would have returned it).
pub(crate) async fn call_leader<T: serde::de::DeserializeOwned>(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    leader: u64,
    addr: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<T, ProposeError> {
    let (status, bytes) = post_signed(peer, auth, leader, addr, path, body).await?;
    leader_answer(status, &bytes)
}

/// POST `body` to the leader's internal `path`, signed for node `leader`; the status and body
/// of the answer.
pub(crate) async fn post_signed(
    peer: &PeerClient,
    auth: Option<&ClusterAuth>,
    leader: u64,
    addr: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), ProposeError> {
    let url = format!("{}{path}", base_url(addr));
    let headers = signed_headers(auth, leader, path, &body)?;
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
        return Err(refusal(status, bytes));
    }
    codec::decode::<Result<T, ProposeError>>(bytes)
        .map_err(|e| ProposeError::Unavailable(e.to_string()))?
}

/// The leader did not take the call: its status, and the reason its error body gives (a clock
/// skew between the two nodes reads as such, not as a bad cluster secret).
fn refusal(status: StatusCode, bytes: &[u8]) -> ProposeError {
    // Every error body is the contract's one shape, `{"error": {"code", "message", ...}}`.
    match serde_json::from_slice::<raftlane_contract::ErrorBody>(bytes).map(|e| e.error) {
        Ok(b) if b.code == "clock_skew" => {
            tracing::warn!(reason = %b.message, "the leader refused this node's call: clock skew");
            ProposeError::ClockSkew(format!(
                "the leader refused this node's call: {}",
                b.message
            ))
        }
        Ok(b) => ProposeError::Unavailable(format!("leader answered {status}: {}", b.message)),
        Err(_) => ProposeError::Unavailable(format!("leader answered {status}")),
    }
}

/// A forwarded proposal whose answer was lost may have been applied; retrying it is still safe
/// (its request id makes the retry return the first answer), but the error says what happened.
fn lost_or_unsent(e: PeerError) -> ProposeError {
    match e {
        PeerError::Unreachable(m) | PeerError::Request(m) => ProposeError::Unavailable(m),
        PeerError::Timeout => ProposeError::Unknown("the leader did not answer in time".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leader's refusal is read from the error envelope every route answers: a clock-skew
    /// refusal is named as such, any other keeps the leader's message.
    #[test]
    fn a_leaders_refusal_is_read_from_its_error_envelope() {
        let skew = raftlane_contract::ErrorBody {
            error: raftlane_contract::ErrorDetail {
                code: "clock_skew".into(),
                message: "this node's clock is off".into(),
                field: None,
                extra: serde_json::Map::new(),
            },
        };
        let bytes = serde_json::to_vec(&skew).expect("a body");
        let ProposeError::ClockSkew(m) = refusal(StatusCode::UNAUTHORIZED, &bytes) else {
            panic!("a clock-skew refusal is named as one");
        };
        assert_eq!(
            m,
            "the leader refused this node's call: this node's clock is off"
        );
        let other = br#"{"error":{"code":"unavailable","message":"no quorum"}}"#;
        let ProposeError::Unavailable(m) = refusal(StatusCode::SERVICE_UNAVAILABLE, other) else {
            panic!("a refusal is unavailable");
        };
        assert_eq!(m, "leader answered 503 Service Unavailable: no quorum");
        let ProposeError::Unavailable(m) = refusal(StatusCode::BAD_GATEWAY, b"<html>") else {
            panic!("a refusal is unavailable");
        };
        assert_eq!(m, "leader answered 502 Bad Gateway");
    }

    #[tokio::test]
    async fn a_leader_refusing_this_node_for_clock_skew_ends_the_write_at_once() {
        let body = br#"{"error":{"code":"clock_skew","message":"authentication failed"}}"#;
        let e = refusal(StatusCode::UNAUTHORIZED, body);
        assert!(matches!(e, ProposeError::ClockSkew(_)), "{e:?}");
        // Not retried for the window: a clock does not fix itself in 8 s.
        let started = Instant::now();
        let mut attempts = 0;
        let got: Result<(), WriteError> = until_settled("write", Settles::Applied, || {
            attempts += 1;
            let e = e.clone();
            async move { Err(e) }
        })
        .await;
        assert!(matches!(got, Err(WriteError::ClockSkew(_))), "{got:?}");
        assert_eq!(attempts, 1);
        assert!(started.elapsed() < Duration::from_secs(1));
        // Any other refusal stays retryable.
        let other = refusal(
            StatusCode::UNAUTHORIZED,
            br#"{"error":{"code":"unauthorized","message":"x"}}"#,
        );
        assert!(matches!(other, ProposeError::Unavailable(_)), "{other:?}");
    }

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
