//! What the API needs from a node: propose, read, and report on the cluster.
//!
//! The trait keeps the HTTP layer independent of how replication is done. Production nodes
//! implement it over the Raft node (in the `node` crate's wiring); [`LocalBackend`] implements it
//! over an in-memory state machine, so the HTTP contract can be tested without a cluster.

use crate::metrics::set::MetricSet;
use raftlane_raft as raft;
use raftlane_raft::NotLeader;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::wire::command::SetLogFormat;
use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{Command, Envelope, MemStore, Response, StateMachine, StoreError};
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a proposal or a read index could not be served here.
///
/// Also what a leader answers a follower's forwarded call with (encoded, `/internal/...`), so
/// every variant but [`ProposeError::ForwardToLeader`] carries its cause as a message: the
/// causes (openraft's errors, storage errors) do not cross the network. A cause's own type
/// goes no further than the conversions below, which keep its message.
#[derive(Debug, Clone, thiserror::Error, Serialize, serde::Deserialize)]
pub enum ProposeError {
    /// This node does not lead; [`NotLeader::addr`] is the leader's HTTP address when known.
    /// Raft's own answer, unchanged (one type from `raftlane-raft` up to the retry loop).
    #[error(transparent)]
    ForwardToLeader(#[from] NotLeader),
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
    /// change in progress, a voter that is not a member yet, ...). After the variants above,
    /// so that older nodes still decode them in a forwarded answer.
    #[error("refused: {0}")]
    Refused(String),
    /// This node's Raft core stopped on a storage error (a full disk): it writes nothing more
    /// until its process restarts, which it does by exiting (docs/SPEC.md, "Storage faults").
    /// Appended after `Refused`, for the same reason.
    #[error("storage unavailable: {0}")]
    StorageUnavailable(String),
    /// A membership change raftlane's rules refuse (`raftlane_raft::membership_rules`), or a
    /// learner removed again for not catching up: the request's field at fault, why, and
    /// whether it is bad input (400) or conflicts with the cluster as it is (409). Appended
    /// after `StorageUnavailable`, for the same reason as `Refused`.
    #[error("{field}: {reason}")]
    MembershipRule {
        field: String,
        reason: String,
        invalid: bool,
    },
    /// The leader refused this node's call as clock skew (this node's clock, or the leader's,
    /// is beyond the bound): retrying inside the retry window cannot fix a clock, so the write
    /// is answered `503 clock_skew` at once rather than after the window. Built
    /// by the follower from the leader's refusal; appended last, like `StorageUnavailable`.
    #[error("clock skew: {0}")]
    ClockSkew(String),
}

/// A leadership transfer that did not happen: the leader elsewhere is forwarded to; a target
/// that cannot take it is bad input on `to` only when it is not a voter or is this node, and
/// a transfer tried and failed conflicts with the cluster as it is.
impl From<raft::leader_transfer::TransferError> for ProposeError {
    fn from(e: raft::leader_transfer::TransferError) -> Self {
        use raft::leader_transfer::TransferError as T;
        match e {
            T::NotLeader(not_leader) => not_leader.into(),
            T::Refused(reason) => ProposeError::MembershipRule {
                field: "to".into(),
                reason,
                invalid: true,
            },
            T::Failed(reason) => ProposeError::MembershipRule {
                field: "to".into(),
                reason,
                invalid: false,
            },
        }
    }
}

/// A proposal Raft did not commit: a leader elsewhere is forwarded to, a refusal (a
/// membership change in progress) is worth retrying shortly, a stopped node is fatal.
/// A raise of the log format refused (docs/SPEC.md §2.8), naming the field `format`: by the
/// state machine (`invalid`: an unknown format or a step back, 400) or by a member that cannot
/// read it (409).
pub fn log_format_refused(reason: impl std::fmt::Display, invalid: bool) -> ProposeError {
    ProposeError::MembershipRule {
        field: "format".into(),
        reason: reason.to_string(),
        invalid,
    }
}

impl From<raft::WriteError> for ProposeError {
    fn from(e: raft::WriteError) -> Self {
        match e {
            raft::WriteError::ForwardToLeader(not_leader) => not_leader.into(),
            raft::WriteError::Refused(m) => ProposeError::Unavailable(m),
            raft::WriteError::Stopped(m) => ProposeError::Fatal(m),
            e @ raft::WriteError::NoClock(_) => ProposeError::Unavailable(e.to_string()),
            raft::WriteError::Storage(m) => ProposeError::StorageUnavailable(m),
        }
    }
}

/// A read index Raft could not confirm: a leader elsewhere is asked instead, a missing quorum
/// or a timeout is retried, a stopped node or a failed state read is fatal.
impl From<raft::ReadError> for ProposeError {
    fn from(e: raft::ReadError) -> Self {
        match e {
            raft::ReadError::ForwardToLeader(not_leader) => not_leader.into(),
            raft::ReadError::NoQuorum(m) => ProposeError::Unavailable(m),
            raft::ReadError::Timeout => ProposeError::Unavailable("read index timed out".into()),
            raft::ReadError::Stopped(m) | raft::ReadError::State(m) => ProposeError::Fatal(m),
            raft::ReadError::Storage(m) => ProposeError::StorageUnavailable(m),
        }
    }
}

/// A membership operation's failure, as the API must answer it: `ForwardToLeader` so that the
/// API forwards it to the leader, Raft's refusals (a voter that is not a member yet, an empty
/// voter set) as `Refused` (409), a change in progress as `Unavailable` (retried by the write
/// path for a few seconds, then a 503 with Retry-After), a timeout as `Unknown` (it may still
/// complete, e.g. a learner that has not caught up yet).
impl From<raft::ClusterError> for ProposeError {
    fn from(e: raft::ClusterError) -> Self {
        match e {
            raft::ClusterError::ForwardToLeader(not_leader) => not_leader.into(),
            raft::ClusterError::Refused(m) => ProposeError::Refused(m),
            raft::ClusterError::Rule(r) => ProposeError::MembershipRule {
                field: r.field.to_string(),
                reason: r.reason,
                invalid: r.kind == raft::membership_rules::RefusalKind::Invalid,
            },
            raft::ClusterError::LearnerStalled(s) => ProposeError::MembershipRule {
                field: "addr".into(),
                reason: s.to_string(),
                invalid: false,
            },
            raft::ClusterError::Busy(m) => ProposeError::Unavailable(m),
            e @ raft::ClusterError::Timeout => ProposeError::Unknown(e.to_string()),
            raft::ClusterError::Stopped(m) | raft::ClusterError::Initialize(m) => {
                ProposeError::Fatal(m)
            }
        }
    }
}

/// A membership change, as a follower forwards it to the leader. Not a state-machine command:
/// Raft applies it to its own configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum MembershipChange {
    /// Add (or re-address) a learner and wait until it has caught up.
    AddLearner { id: u64, addr: String },
    /// Make the voter set exactly these nodes (each must be a member already).
    SetVoters(Vec<u64>),
    /// Hand leadership to voter `to` (`None`: the voter whose log reaches furthest). Appended
    /// last, so that older nodes still decode the variants above.
    TransferLeader { to: Option<u64> },
    /// Raise the cluster's log format to `format` (docs/SPEC.md §2.8) once every member reads
    /// it, recorded in the audit chain as `actor`'s. Appended last, like `TransferLeader`: a
    /// node of a build before it refuses to decode it, and such a node is exactly one the
    /// raise must wait for.
    RaiseLogFormat { format: u32, actor: String },
}

impl MembershipChange {
    /// Apply the change through `backend` (on the leader; elsewhere `ForwardToLeader`).
    pub async fn apply(self, backend: &dyn Backend) -> Result<(), ProposeError> {
        match self {
            MembershipChange::AddLearner { id, addr } => backend.add_learner(id, addr).await,
            MembershipChange::SetVoters(voters) => backend.change_membership(voters).await,
            MembershipChange::TransferLeader { to } => backend.transfer_leader(to).await,
            MembershipChange::RaiseLogFormat { format, actor } => {
                backend.raise_log_format(format, actor).await
            }
        }
    }
}

/// What a node reports of the cluster; `GET /v1/cluster` serves it as it is.
pub use raftlane_contract::cluster::{ClusterStatus, Member, RemovedLearner};

pub trait Backend: Send + Sync + 'static {
    fn node_id(&self) -> u64;

    /// The cluster's time as this node knows it (`raftlane_raft::clock`): what reads that
    /// compare against lease ends and cutoffs use. A single node's is its wall clock.
    fn cluster_now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }

    /// Why this node's clock keeps it out of the cluster, if it does (`raftlane_raft::clock`):
    /// writes sent to it are then answered `503 clock_skew` at once.
    fn clock_skew(&self) -> Option<String> {
        None
    }

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

    /// The index of the last entry this node has applied (what [`Backend::applied_beyond`]
    /// compares with; it may trail what a read of the state already shows, never lead it).
    fn applied_index(&self) -> u64 {
        self.status().last_applied
    }

    /// Wait until this node has applied an entry after `index`, at most `timeout`; answers
    /// whether it has. What a claim that waits for work sleeps on (`crate::wait`). The default
    /// wakes every 20 ms and looks, for stand-in backends in tests; the real ones are woken
    /// by their apply path.
    fn applied_beyond(&self, index: u64, timeout: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            tokio::time::sleep(timeout.min(Duration::from_millis(20))).await;
            self.applied_index() > index
        })
    }

    /// Run `f` against the locally applied state.
    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError>;

    fn status(&self) -> ClusterStatus;

    /// This node's own figures for `/metrics` (Raft, the log's storage, the state machine's
    /// work, memory), written into `set`. Kept out of [`Backend::status`], which
    /// `/v1/cluster` (leader discovery) also serves, so that route does not pay for them.
    fn node_metrics(&self, set: &mut MetricSet) {
        let _ = set;
    }

    /// `(last_applied, digest)` of the local state.
    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>>;

    /// Add a learner. Only the leader can (`ForwardToLeader` elsewhere); a change Raft rejects
    /// is `Refused`.
    fn add_learner(&self, id: u64, addr: String) -> BoxFuture<'_, Result<(), ProposeError>>;

    /// Set the voter set. Only the leader can (`ForwardToLeader` elsewhere); a change Raft
    /// rejects is `Refused`.
    fn change_membership(&self, voters: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>>;

    /// Hand leadership to voter `to` (`None`: the best placed voter). Only the leader can
    /// (`ForwardToLeader` elsewhere); a target that cannot take it, or a transfer that did not
    /// happen, is `MembershipRule` naming `to`.
    fn transfer_leader(&self, to: Option<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        let _ = to;
        Box::pin(async {
            Err(ProposeError::Refused(
                "this node has no leader to transfer".into(),
            ))
        })
    }

    /// Raise the cluster's log format to `format` for `actor` (docs/SPEC.md §2.8). Only the
    /// leader can (`ForwardToLeader` elsewhere); a member whose build does not read it, or a
    /// format the state machine refuses, is `MembershipRule` naming `format`.
    fn raise_log_format(
        &self,
        format: u32,
        actor: String,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        let _ = (format, actor);
        Box::pin(async {
            Err(ProposeError::Refused(
                "this node keeps no replicated log".into(),
            ))
        })
    }

    /// `Err(reason)` while the node should not take traffic (no leader known, failed self-check).
    fn ready(&self) -> Result<(), String>;

    /// A snapshot of this node's state covering every entry applied now (built if need be):
    /// the index it covers. `Err(reason)` where there are no snapshots (a stand-in backend) or
    /// none could be built in time.
    fn snapshot_now(&self) -> BoxFuture<'_, Result<u64, String>> {
        Box::pin(async { Err("this node keeps no snapshots".to_string()) })
    }

    /// This node's current snapshot file, opened: what a backup streams out
    /// (`GET /v1/cluster/snapshot`). `Ok(None)` where there is none.
    fn open_snapshot(&self) -> Result<Option<SnapshotFile>, String> {
        Ok(None)
    }
}

/// An open snapshot file and what it covers.
pub struct SnapshotFile {
    /// The last log index the snapshot reflects.
    pub index: u64,
    /// Its size in bytes.
    pub bytes: u64,
    pub file: std::fs::File,
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
    /// The last applied index, sent after each apply: what [`Backend::applied_beyond`] awaits.
    applied: tokio::sync::watch::Sender<u64>,
}

impl Default for LocalBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalBackend {
    pub fn new() -> Self {
        let sm = StateMachine::open(MemStore::new()).unwrap_or_else(|_| unreachable_empty());
        Self {
            sm: Mutex::new(sm),
            applied: tokio::sync::watch::Sender::new(0),
        }
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

    fn propose(
        &self,
        mut envelope: Envelope,
    ) -> BoxFuture<'_, Result<(u64, Response), ProposeError>> {
        Box::pin(async move {
            let mut sm = self.lock()?;
            // Written, as a leader writes it, in the format the state names (docs/SPEC.md §2.8).
            let format = sm
                .read()
                .log_format()
                .map_err(|e| ProposeError::Fatal(e.to_string()))?;
            envelope.set_format(LogFormat::from_number(format).unwrap_or(LogFormat::NEWEST));
            let index = sm.last_applied() + 1;
            let response = sm
                .apply(index, &envelope)
                .map_err(|e| ProposeError::Fatal(e.to_string()))?;
            self.applied.send_replace(sm.last_applied());
            Ok((index, response))
        })
    }

    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>> {
        Box::pin(async move { Ok(self.lock()?.last_applied()) })
    }

    /// One replica of this build: every member reads every format it knows.
    fn raise_log_format(
        &self,
        format: u32,
        actor: String,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async move {
            let command = Command::SetLogFormat(SetLogFormat { format });
            match self.propose(Envelope::new(0, actor, command)).await? {
                (_, Ok(_)) => Ok(()),
                (_, Err(rejection)) => Err(log_format_refused(rejection, true)),
            }
        })
    }

    fn wait_applied(
        &self,
        _index: u64,
        _timeout: Duration,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Ok(()) })
    }

    fn applied_index(&self) -> u64 {
        *self.applied.borrow()
    }

    fn applied_beyond(&self, index: u64, timeout: Duration) -> BoxFuture<'_, bool> {
        let mut applied = self.applied.subscribe();
        Box::pin(async move {
            let beyond = applied.wait_for(|a| *a > index);
            matches!(tokio::time::timeout(timeout, beyond).await, Ok(Ok(_)))
        })
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
            removed_learners: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_statemachine::codec;

    /// [`ProposeError`] as older nodes encode it (a struct variant where [`NotLeader`] is
    /// now).
    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    enum Before {
        ForwardToLeader {
            leader_id: Option<u64>,
            addr: Option<String>,
        },
        Unavailable(String),
        Unknown(String),
        Fatal(String),
        Refused(String),
    }

    /// A forwarded answer decodes the same on nodes of either version, in both directions.
    #[test]
    fn not_leader_keeps_the_encoding_of_forwarded_answers() {
        let before = Before::ForwardToLeader {
            leader_id: Some(2),
            addr: Some("10.0.0.2:7000".into()),
        };
        let now = ProposeError::ForwardToLeader(NotLeader {
            leader_id: Some(2),
            addr: Some("10.0.0.2:7000".into()),
        });
        assert_eq!(codec::encode(&before), codec::encode(&now));
        let decoded: ProposeError = codec::decode(&codec::encode(&before)).expect("decodes");
        assert!(matches!(
            decoded,
            ProposeError::ForwardToLeader(NotLeader {
                leader_id: Some(2),
                ..
            })
        ));
        let back: Before = codec::decode(&codec::encode(&now)).expect("decodes");
        assert_eq!(back, before);
        let refused: Before =
            codec::decode(&codec::encode(&ProposeError::Refused("no".into()))).expect("decodes");
        assert_eq!(refused, Before::Refused("no".into()));
    }

    /// Raft's "not the leader" reaches the API's error unchanged from each of its three
    /// operations, and the API's message is Raft's.
    #[test]
    fn each_raft_not_leader_converts_once() {
        let not_leader = NotLeader {
            leader_id: Some(3),
            addr: None,
        };
        let from = [
            ProposeError::from(raft::WriteError::ForwardToLeader(not_leader.clone())),
            ProposeError::from(raft::ReadError::ForwardToLeader(not_leader.clone())),
            ProposeError::from(raft::ClusterError::ForwardToLeader(not_leader.clone())),
        ];
        for e in from {
            assert_eq!(e.to_string(), not_leader.to_string());
            assert!(matches!(e, ProposeError::ForwardToLeader(ref n) if *n == not_leader));
        }
        assert!(matches!(
            ProposeError::from(raft::ReadError::Timeout),
            ProposeError::Unavailable(m) if m == "read index timed out"
        ));
        assert!(matches!(
            ProposeError::from(raft::ClusterError::Busy("joint".into())),
            ProposeError::Unavailable(_)
        ));
        assert!(matches!(
            ProposeError::from(raft::ClusterError::Timeout),
            ProposeError::Unknown(m) if m == "membership operation timed out"
        ));
        // A storage failure keeps its own variant from Raft up, for its own 503.
        assert!(matches!(
            ProposeError::from(raft::WriteError::Storage("disk full".into())),
            ProposeError::StorageUnavailable(m) if m == "disk full"
        ));
        assert!(matches!(
            ProposeError::from(raft::ReadError::Storage("disk full".into())),
            ProposeError::StorageUnavailable(_)
        ));
    }
}
