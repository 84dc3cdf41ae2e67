//! The write path: how a proposal, a linearizable read and a membership change made at any node
//! reach the leader and come back with their answer.
//!
//! This layer sits below the HTTP layer and knows nothing of it: no web framework, no
//! application state, no HTTP status. It answers with [`WriteError`], which the HTTP layer
//! maps to its responses in one place. A test (`api/tests/write_layer.rs`) keeps it that way.
//!
//! [`Proposer`] owns the pieces:
//! - [`at_rest`]: encryption at rest, one wrapper around every proposal (covered values are
//!   sealed before a command is batched or forwarded) and every read of covered values (opened
//!   on the way out),
//! - [`policy`]: the defaults a row action gets when its request leaves them out,
//! - [`claim`]: claimed payloads opened (poison rows dead-lettered), FIFO claims moved past
//!   poison heads, idle polls answered without a write,
//! - the workflows a route asks for in one call, one module each: [`row_action`] (a row
//!   action's command and answer), [`key_rotation`] (every covered value re-encrypted),
//!   [`token_issue`] (a principal's token created and checked), [`retention`] (an operator's
//!   purge, on the retention plan the leader's timer walks),
//! - [`batch`]: group commit of this node's proposals (one Raft entry for many) and shared
//!   read-index confirmations,
//! - [`relay`]: a follower's forwarded writes, batched per call to the leader,
//! - `forward`: the one retry loop (leader changes, lost answers, dropped proposals; bounded by
//!   a retry window) and the calls to the leader's internal routes,
//! - [`signing`]: where those routes are and how calls to them are signed with the cluster
//!   secret.
//!
//! Any node accepts any request: a write is proposed here when this node leads, else sent to
//! the leader; a linearizable read waits until this node has applied the leader's read index.

pub mod at_rest;
pub mod batch;
pub mod claim;
mod error;
mod forward;
pub mod key_rotation;
pub mod policy;
pub mod relay;
pub mod retention;
pub mod row_action;
pub mod signing;
pub mod token_issue;

pub use error::WriteError;
pub use forward::membership_timeout;

use crate::backend::{Backend, MembershipChange, ProposeError};
use crate::crypto::Keyring;
use crate::metrics::Metrics;
use crate::peer::PeerClient;
use at_rest::{AtRest, Covered};
use batch::Batcher;
use forward::{until_settled, Settles, RETRY_WINDOW};
use raftlane_raft::auth::ClusterAuth;
use raftlane_raft::NotLeader;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::{Envelope, Outcome, Response, StoreError};
use relay::Relay;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the write path reaches other nodes.
#[derive(Clone)]
pub struct Settings {
    /// Signs this node's calls to the leader's internal routes (`None` without a cluster
    /// secret: then a node that does not lead cannot forward, and says so with
    /// [`WriteError::Fatal`]).
    pub cluster_auth: Option<ClusterAuth>,
    /// Timeout of one node-to-node call.
    pub peer_timeout: Duration,
    /// How long Raft may take to add a learner (the node's `Tuning::membership_timeout_ms`):
    /// a forwarded membership change waits that long, plus a margin, for its answer.
    pub membership_timeout: Duration,
    /// Encryption at rest (docs/SPEC.md §2.6); `None` = off, values are stored as sent.
    pub keyring: Option<Keyring>,
    /// Dial other nodes over TLS with this CA and client identity (docs/SPEC.md §9.6).
    pub peer_tls: Option<raftlane_client::tls::ClientTls>,
}

/// The write path of one node: writes, linearizable reads and membership changes, through the
/// leader wherever they are made.
pub struct Proposer {
    backend: Arc<dyn Backend>,
    /// Group commit of this node's proposals.
    batcher: Batcher,
    /// Forwarded writes, batched per call to the leader (when this node does not lead).
    relay: Relay,
    /// For forwarded read indexes.
    peer: PeerClient,
    /// For forwarded membership changes: adding a learner waits until it has caught up, far
    /// longer than any other node-to-node call may take.
    membership_peer: PeerClient,
    cluster_auth: Option<ClusterAuth>,
    /// Seals what this node proposes, opens what it serves.
    at_rest: AtRest,
    /// Counts the commands proposed through this node, by outcome.
    metrics: Arc<Metrics>,
}

impl Proposer {
    /// Start the batching and relay tasks over `backend` (must run inside a tokio runtime).
    pub fn start(backend: Arc<dyn Backend>, settings: Settings, metrics: Arc<Metrics>) -> Self {
        let peer = PeerClient::with_tls(settings.peer_timeout, settings.peer_tls.as_ref());
        Self {
            batcher: Batcher::start(backend.clone()),
            relay: Relay::start(peer.clone(), settings.cluster_auth.clone()),
            backend,
            peer,
            membership_peer: PeerClient::with_tls(
                membership_timeout(settings.peer_timeout, settings.membership_timeout),
                settings.peer_tls.as_ref(),
            ),
            cluster_auth: settings.cluster_auth,
            at_rest: AtRest::new(settings.keyring),
            metrics,
        }
    }

    /// The keyring, when encryption at rest is on (key rotation rewrites with it).
    pub fn keyring(&self) -> Option<&Keyring> {
        self.at_rest.keyring()
    }

    /// Run `f` against this node's applied state (as stale as this node is: linearize first
    /// for a linearizable read) and serve its answer with every covered value decrypted.
    pub fn read_covered<T: Covered>(
        &self,
        f: impl FnOnce(&Reader<'_>) -> Result<T, StoreError>,
    ) -> Result<T, WriteError> {
        let mut answer = crate::backend::read(self.backend.as_ref(), f)?;
        self.at_rest.open(&mut answer);
        Ok(answer)
    }

    /// The signer and verifier of node-to-node calls, when a cluster secret is configured.
    pub fn cluster_auth(&self) -> Option<&ClusterAuth> {
        self.cluster_auth.as_ref()
    }

    /// Propose `envelope` through the leader and return its log index and applied response.
    ///
    /// Its command's covered values are encrypted first, once ([`at_rest`]): every retry and
    /// every forwarded copy carries the same ciphertext. Leader changes, lost answers and
    /// dropped proposals are retried with the same envelope for a bounded time; its request id
    /// makes the retry exactly-once (an entry that did commit answers the retry with its first
    /// answer, `Outcome::Repeated`, unwrapped here; so is a claim's `Outcome::Dated`).
    pub async fn write(&self, mut envelope: Envelope) -> Result<(u64, Response), WriteError> {
        // A node the others refuse for its clock would only retry until the window closes.
        if let Some(skew) = self.backend.clock_skew() {
            return Err(WriteError::ClockSkew(skew));
        }
        self.at_rest
            .seal(&mut envelope.command)
            .map_err(WriteError::Seal)?;
        let settled = until_settled("write", Settles::Applied, || async {
            // Checked at every attempt: a node restarted with its clock beyond the bound learns
            // so only at its first campaign (the others' answers carry their clocks), which
            // usually falls inside the retry window; it then ends the write at once.
            if let Some(skew) = self.backend.clock_skew() {
                return Err(ProposeError::ClockSkew(skew));
            }
            match self.batcher.propose(envelope.clone()).await {
                Err(ProposeError::ForwardToLeader(NotLeader {
                    leader_id: Some(leader),
                    addr: Some(addr),
                })) => self.relay.propose(leader, &addr, envelope.clone()).await,
                other => other,
            }
        })
        .await?;
        let (index, response) = match settled {
            (_, Ok(Outcome::Repeated { index, response })) => (index, *response),
            other => other,
        };
        // A claim's rows get their creation times back (log format 4 on).
        let response = response.map(Outcome::undated);
        self.metrics
            .record_command(envelope.command.name(), response.is_ok());
        Ok((index, response))
    }

    /// Make the local state at least as new as the leader's commit at the time of the call.
    pub async fn linearize(&self) -> Result<(), WriteError> {
        let started = Instant::now();
        let index = until_settled("linearizable read", Settles::Applied, || async {
            // The batcher shares one leadership confirmation among concurrent readers.
            match self.batcher.read_index().await {
                Err(ProposeError::ForwardToLeader(NotLeader {
                    leader_id: Some(leader),
                    addr: Some(addr),
                })) => forward::read_index_at(&self.peer, self.cluster_auth(), leader, &addr).await,
                other => other,
            }
        })
        .await?;
        self.backend
            .wait_applied(index, RETRY_WINDOW.saturating_sub(started.elapsed()))
            .await
            .map_err(WriteError::not_applied)
    }

    /// Apply a membership change through the leader, like [`Proposer::write`]: here if this
    /// node leads, else at the leader's `/internal/membership`. Leader changes and unreachable
    /// leaders are retried for the retry window (both changes are idempotent: re-adding a
    /// learner or setting the same voters again changes nothing), and so is a change made while
    /// the leader has not yet committed the previous one (the backend reports it
    /// `Unavailable`: it will be accepted once that commits). A change Raft refuses is
    /// [`WriteError::MembershipRefused`]; one whose outcome is unknown (it timed out, e.g. a
    /// learner still catching up) is [`WriteError::OutcomeUnknown`] and not retried.
    pub async fn membership(&self, change: MembershipChange) -> Result<(), WriteError> {
        until_settled("membership change", Settles::Answered, || async {
            match self.membership_here(change.clone()).await {
                Err(ProposeError::ForwardToLeader(NotLeader {
                    leader_id: Some(leader),
                    addr: Some(addr),
                })) => {
                    forward::membership_at(
                        &self.membership_peer,
                        self.cluster_auth(),
                        leader,
                        &addr,
                        &change,
                    )
                    .await
                }
                other => other,
            }
        })
        .await
        .map_err(|e| match e {
            WriteError::Refused(m) => WriteError::MembershipRefused(m),
            other => other,
        })
    }

    /// This node's read index, shared with concurrent callers (see [`Batcher::read_index`]);
    /// not forwarded: a follower answers `ForwardToLeader`.
    pub async fn read_index(&self) -> Result<u64, ProposeError> {
        self.batcher.read_index().await
    }

    /// Whether a full batch of proposals is already queued (see [`Batcher::saturated`]).
    pub fn saturated(&self) -> bool {
        self.batcher.saturated()
    }

    /// Calls this node made to a leader with forwarded writes, and the writes they carried.
    pub fn relay_counts(&self) -> (u64, u64) {
        self.relay.counts()
    }

    /// Propose `envelope` here, through this node's batcher, once and without forwarding: what
    /// the leader does with a follower's forwarded writes. Not sealed again: the follower that
    /// built the envelope sealed it.
    pub async fn propose_here(&self, envelope: Envelope) -> Result<(u64, Response), ProposeError> {
        self.batcher.propose(envelope).await
    }

    /// Apply `change` here, once and without forwarding (`ForwardToLeader` unless this node
    /// leads): what the leader does with a follower's forwarded membership change.
    pub async fn membership_here(&self, change: MembershipChange) -> Result<(), ProposeError> {
        change.apply(self.backend.as_ref()).await
    }
}
