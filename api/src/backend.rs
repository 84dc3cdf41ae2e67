//! What the API needs from a node: propose, read, and report on the cluster.
//!
//! The trait keeps the HTTP layer independent of how replication is done. Production nodes
//! implement it over the Raft node (in the `node` crate's wiring); [`LocalBackend`] implements it
//! over an in-memory state machine, so the HTTP contract can be tested without a cluster.

use raftlane_statemachine::query::Reader;
use raftlane_statemachine::{Envelope, MemStore, Response, StateMachine, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a proposal or a read index could not be served here.
#[derive(Debug, Clone, thiserror::Error, Serialize, serde::Deserialize)]
pub enum ProposeError {
    /// This node does not lead; `addr` is the leader's HTTP address when known.
    #[error("not the leader (leader: {leader_id:?})")]
    ForwardToLeader {
        leader_id: Option<u64>,
        addr: Option<String>,
    },
    /// No quorum or a leader change in progress: try again shortly.
    #[error("cluster unavailable: {0}")]
    Unavailable(String),
    /// The proposal may or may not have been committed (the answer was lost on the way back).
    /// Retrying the same envelope is safe: its request id makes the state machine answer a
    /// repeat with the first answer.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The node cannot serve (storage failure, shutting down).
    #[error("node failure: {0}")]
    Fatal(String),
    /// Refused for a reason retrying will not fix: a membership change Raft rejects (another
    /// change in progress, a voter that is not a member yet, ...). Last, so that older nodes
    /// still decode the other variants of a forwarded answer.
    #[error("refused: {0}")]
    Refused(String),
}

/// A membership change, as a follower forwards it to the leader. Not a state-machine command:
/// Raft applies it to its own configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum MembershipChange {
    /// Add (or re-address) a learner and wait until it has caught up.
    AddLearner { id: u64, addr: String },
    /// Make the voter set exactly these nodes (each must be a member already).
    SetVoters(Vec<u64>),
}

impl MembershipChange {
    /// Apply the change through `backend` (on the leader; elsewhere `ForwardToLeader`).
    pub async fn apply(self, backend: &dyn Backend) -> Result<(), ProposeError> {
        match self {
            MembershipChange::AddLearner { id, addr } => backend.add_learner(id, addr).await,
            MembershipChange::SetVoters(voters) => backend.change_membership(voters).await,
        }
    }
}

/// What a node reports of the cluster; `GET /v1/cluster` serves it as it is.
pub use raftlane_contract::cluster::{ClusterStatus, Member};

pub trait Backend: Send + Sync + 'static {
    fn node_id(&self) -> u64;

    /// Propose a command; answers `(log index, response)` after it is committed by a majority
    /// and applied here.
    fn propose(&self, envelope: Envelope) -> BoxFuture<'_, Result<(u64, Response), ProposeError>>;

    /// On the leader: confirm leadership with a quorum and return the index a linearizable read
    /// must see applied.
    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>>;

    /// Wait until this node has applied `index`.
    fn wait_applied(
        &self,
        index: u64,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<(), ProposeError>>;

    /// Run `f` against the locally applied state.
    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError>;

    fn status(&self) -> ClusterStatus;

    /// Extra gauges for `/metrics` only (name → value): storage counters and memory figures.
    /// Kept out of [`Backend::status`], which `/v1/cluster` (leader discovery) also serves, so
    /// that route does not pay for reading them.
    fn gauges(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// `(last_applied, digest)` of the local state.
    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>>;

    /// Add a learner. Only the leader can (`ForwardToLeader` elsewhere); a change Raft rejects
    /// is `Refused`.
    fn add_learner(&self, id: u64, addr: String) -> BoxFuture<'_, Result<(), ProposeError>>;

    /// Set the voter set. Only the leader can (`ForwardToLeader` elsewhere); a change Raft
    /// rejects is `Refused`.
    fn change_membership(&self, voters: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>>;

    /// `Err(reason)` while the node should not take traffic (no leader known, failed self-check).
    fn ready(&self) -> Result<(), String>;
}

/// Read from a backend with a closure that returns a value.
pub fn read<T>(
    backend: &dyn Backend,
    f: impl FnOnce(&Reader<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut f = Some(f);
    let mut out = None;
    backend.with_reader(&mut |reader| {
        if let Some(f) = f.take() {
            out = Some(f(reader));
        }
    })?;
    out.unwrap_or_else(|| Err(StoreError::Io("reader was not called".into())))
}

/// A single in-memory replica that is always the leader: for tests and `--help` examples.
pub struct LocalBackend {
    sm: Mutex<StateMachine<MemStore>>,
}

impl Default for LocalBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalBackend {
    pub fn new() -> Self {
        let sm = StateMachine::open(MemStore::new()).unwrap_or_else(|_| unreachable_empty());
        Self { sm: Mutex::new(sm) }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, StateMachine<MemStore>>, ProposeError> {
        self.sm
            .lock()
            .map_err(|_| ProposeError::Fatal("state lock poisoned".into()))
    }
}

/// Opening an empty in-memory store reads nothing and cannot fail.
fn unreachable_empty() -> StateMachine<MemStore> {
    match StateMachine::open(MemStore::new()) {
        Ok(sm) => sm,
        Err(_) => std::process::abort(),
    }
}

impl Backend for LocalBackend {
    fn node_id(&self) -> u64 {
        1
    }

    fn propose(&self, envelope: Envelope) -> BoxFuture<'_, Result<(u64, Response), ProposeError>> {
        Box::pin(async move {
            let mut sm = self.lock()?;
            let index = sm.last_applied() + 1;
            let response = sm
                .apply(index, &envelope)
                .map_err(|e| ProposeError::Fatal(e.to_string()))?;
            Ok((index, response))
        })
    }

    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>> {
        Box::pin(async move { Ok(self.lock()?.last_applied()) })
    }

    fn wait_applied(
        &self,
        _index: u64,
        _timeout: Duration,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Ok(()) })
    }

    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError> {
        let sm = self
            .sm
            .lock()
            .map_err(|_| StoreError::Io("state lock poisoned".into()))?;
        f(&sm.read());
        Ok(())
    }

    fn status(&self) -> ClusterStatus {
        let last = self.sm.lock().map(|sm| sm.last_applied()).unwrap_or(0);
        ClusterStatus {
            node_id: 1,
            leader_id: Some(1),
            term: 1,
            last_log_index: last,
            last_applied: last,
            membership: vec![Member {
                id: 1,
                addr: "local".into(),
                voter: true,
            }],
        }
    }

    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>> {
        Box::pin(async move {
            let sm = self
                .sm
                .lock()
                .map_err(|_| "state lock poisoned".to_string())?;
            Ok((sm.last_applied(), sm.digest().map_err(|e| e.to_string())?))
        })
    }

    // A single in-memory replica cannot have peers: a refusal of the request, not a failure.
    fn add_learner(&self, _id: u64, _addr: String) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Err(ProposeError::Refused("a local backend has no peers".into())) })
    }

    fn change_membership(&self, _voters: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Err(ProposeError::Refused("a local backend has no peers".into())) })
    }

    fn ready(&self) -> Result<(), String> {
        Ok(())
    }
}
