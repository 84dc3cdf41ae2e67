//! [`RaftNode`]: one running replica — storage, Raft, the Raft HTTP endpoint and the timers —
//! behind a cheap, cloneable handle for the API layer.

use crate::clock::ClusterClock;
use crate::config::RaftNodeConfig;
use crate::eager_replication::EagerStats;
use crate::log_store::{LogStats, LogStore};
use crate::network::HttpNetwork;
use crate::quorum::{Lead, QuorumCheck};
use crate::server::{RaftHttpService, ServerStats};
use crate::sm_adapter::{SmError, SmStats, StateHandle};
use crate::storage_health::{ProposalHold, StorageHealth};
use crate::timers::TimerStats;
use crate::types::{member_addr, LogId, NodeId, Raft, RaftMetrics, StorageError};
use crate::util::ReleaseProbe;
use openraft::error::{CheckIsLeaderError, ClientWriteError, Fatal, RaftError};
use raftlane_statemachine::machine::StateMachine;
use raftlane_statemachine::rocks::RocksStore;
use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{Envelope, Response};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a restart waits for a previous instance in this process to release its databases.
pub(crate) const REOPEN_WAIT: Duration = Duration::from_secs(20);

/// How often a write waiting on the leader checks that the leader still has its quorum.
const QUORUM_POLL: Duration = Duration::from_millis(100);

/// A write was not committed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// This node is not the leader: retry at the leader [`NotLeader`] names, or here later.
    #[error(transparent)]
    ForwardToLeader(#[from] NotLeader),
    /// Raft refused the proposal for another reason (e.g. a membership change in progress), or
    /// it was not committed in time: this node leads but no quorum answers it (check-quorum,
    /// [`crate::quorum`]), or the wait reached `Tuning::read_timeout_ms`. After a wait the
    /// outcome is unknown: a retry with the same request id tells.
    #[error("write refused: {0}")]
    Refused(String),
    /// This node is shutting down (or its Raft core stopped for another reason than storage).
    #[error("raft is stopped: {0}")]
    Stopped(String),
    /// This node leads but does not know the cluster's time ([`crate::clock`]): it has no
    /// recent clock sample from a majority, so it could not commit either. Retry shortly.
    #[error(transparent)]
    NoClock(#[from] crate::clock::ClockError),
    /// This node's Raft core stopped on a storage error (a full disk, an I/O error): nothing
    /// more is written here until the process restarts ([`RaftNode::core_failed`]).
    #[error("{0}")]
    Storage(String),
}

/// A linearizable read could not be served here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Only the leader confirms a read index: ask the leader [`NotLeader`] names.
    #[error(transparent)]
    ForwardToLeader(#[from] NotLeader),
    /// Leadership could not be confirmed by a quorum (partition, peers down).
    #[error("leadership not confirmed by a quorum: {0}")]
    NoQuorum(String),
    #[error("linearizable read timed out")]
    Timeout,
    #[error("raft is stopped: {0}")]
    Stopped(String),
    /// This node's Raft core stopped on a storage error (see [`WriteError::Storage`]).
    #[error("{0}")]
    Storage(String),
    #[error("state read failed: {0}")]
    State(String),
}

/// Why this node's Raft core stopped by itself. openraft's core does not restart after it
/// stops: the node can still answer HTTP, but never again writes, votes or replicates, so the
/// process must end and be restarted (the server does that, `raftlane_node::server`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreFailure {
    /// A read or write of the log or the state failed (a full disk: ENOSPC; an I/O error).
    #[error("the raft core stopped after a storage error: {0}")]
    Storage(String),
    #[error("the raft core panicked")]
    Panicked,
}

impl CoreFailure {
    /// The failure a fatal error of openraft's stands for; `None` for a requested shutdown.
    fn of(fatal: &Fatal<NodeId>) -> Option<Self> {
        match fatal {
            Fatal::StorageError(e) => Some(Self::storage(e)),
            Fatal::Panicked => Some(CoreFailure::Panicked),
            Fatal::Stopped => None,
        }
    }

    fn storage(e: &StorageError) -> Self {
        CoreFailure::Storage(e.to_string())
    }

    /// A short reason for an unauthenticated probe (`/readyz`): what kind of fault, without
    /// RocksDB's text (paths, file names), which goes to the node's log.
    pub fn summary(&self) -> String {
        match self {
            CoreFailure::Storage(m) => format!(
                "storage_unavailable: the raft core stopped after a storage error ({}); the \
                 node exits to be restarted",
                storage_fault_kind(m)
            ),
            CoreFailure::Panicked => {
                "core_stopped: the raft core panicked; the node exits to be restarted".into()
            }
        }
    }
}

/// The kind of storage fault a storage error's text tells: a full disk, or another I/O error.
pub fn storage_fault_kind(message: &str) -> &'static str {
    if message.contains("No space left on device") || message.contains("ENOSPC") {
        "no space left on device"
    } else if raftlane_statemachine::storage::verify::is_corruption(message) {
        "damaged data: a checksum failed"
    } else {
        "an I/O error"
    }
}

/// Local (non-Raft) failures of node operations.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("the node is shut down")]
    Stopped,
    #[error(transparent)]
    State(#[from] SmError),
}

/// Clear the time of `envelope` and of every envelope a batch carries: 0 is no time, the state
/// machine applies it at its clock as it is (`clock = max(clock, now_ms)`).
fn unstamp(envelope: &mut Envelope) {
    if let raftlane_statemachine::Command::Batch(batch) = &mut envelope.command {
        for inner in &mut batch.commands {
            inner.now_ms = 0;
        }
    }
    envelope.now_ms = 0;
}

/// This node does not lead: the one answer of every operation only a leader performs
/// (a write, a read index, a membership change), wrapped by [`WriteError`], [`ReadError`] and
/// [`ClusterError`](crate::ClusterError) alike, so the layers above convert it once.
///
/// `leader_id` and `addr` (the leader's `host:port`) name the leader when this node knows it;
/// during an election neither is known. Serializable: the API forwards it between nodes, and
/// its encoding is that of the struct variants the three enums had before it existed, so nodes of either version decode each other's answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, thiserror::Error)]
#[error("not the leader; forward to {leader_id:?} at {addr:?}")]
pub struct NotLeader {
    pub leader_id: Option<NodeId>,
    pub addr: Option<String>,
}

impl From<openraft::error::ForwardToLeader<NodeId, crate::types::Node>> for NotLeader {
    fn from(f: openraft::error::ForwardToLeader<NodeId, crate::types::Node>) -> Self {
        NotLeader {
            leader_id: f.leader_id,
            addr: f.leader_node.map(|n| n.addr),
        }
    }
}

pub(crate) struct NodeInner {
    pub(crate) id: NodeId,
    pub(crate) addr: String,
    pub(crate) raft: Raft,
    pub(crate) config: RaftNodeConfig,
    /// Taken at shutdown so the state's database can close.
    pub(crate) state: Mutex<Option<StateHandle>>,
    /// The log store, for its memory figures; taken at shutdown like `state`.
    pub(crate) log: Mutex<Option<LogStore>>,
    pub(crate) sm_stats: Arc<SmStats>,
    pub(crate) log_stats: Arc<LogStats>,
    pub(crate) eager_stats: Arc<EagerStats>,
    pub(crate) http: RaftHttpService,
    pub(crate) local_addr: Option<SocketAddr>,
    pub(crate) tasks: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) stop_tx: watch::Sender<bool>,
    pub(crate) stopped: AtomicBool,
    pub(crate) probes: Vec<ReleaseProbe>,
    pub(crate) timer_stats: Arc<TimerStats>,
    /// The cluster's time as this node sees it ([`crate::clock`]).
    pub(crate) clock: Arc<ClusterClock>,
    /// Whether this node, if it leads, still has its quorum ([`crate::quorum`]).
    pub(crate) quorum: Arc<QuorumCheck>,
    /// Serializes membership changes (see `cluster.rs`).
    pub(crate) membership_lock: tokio::sync::Mutex<()>,
    /// Learners waited on, and the ones removed for not catching up ([`crate::learners`]).
    pub(crate) learners: crate::learners::LearnerWatch,
    /// This node's log storage as last judged ([`crate::slow_storage`]).
    pub(crate) storage_health: Arc<StorageHealth>,
    /// Held while this leader hands off for slow storage ([`crate::slow_storage`]).
    pub(crate) proposal_hold: Arc<ProposalHold>,
    /// Signed calls to peers outside openraft (the slow-storage handoff's `/raft/elect`).
    pub(crate) network: HttpNetwork,
    /// Leaders this node saw take over after the first ([`crate::leader_changes`]).
    pub(crate) leader_changes: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for NodeInner {
    fn drop(&mut self) {
        // Dropped without shutdown(): at least stop serving and proposing.
        let _ = self.stop_tx.send(true);
    }
}

/// What [`RaftNode::storage_memory`] reports.
#[derive(Clone, Copy, Debug)]
pub struct StorageMemory {
    pub state: raftlane_statemachine::rocks::DbMemory,
    pub log: raftlane_statemachine::rocks::DbMemory,
    pub mirrored_keys: usize,
}

/// A running Raft replica. Clones share the node.
#[derive(Clone)]
pub struct RaftNode {
    pub(crate) inner: Arc<NodeInner>,
}

impl std::fmt::Debug for RaftNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftNode")
            .field("id", &self.inner.id)
            .field("addr", &self.inner.addr)
            .finish()
    }
}

impl RaftNode {
    pub fn id(&self) -> NodeId {
        self.inner.id
    }

    /// The address peers use for this node.
    pub fn advertise_addr(&self) -> &str {
        &self.inner.addr
    }

    /// The address the node's own Raft listener is bound to, if it has one.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.inner.local_addr
    }

    /// The underlying openraft handle, for what this wrapper does not cover.
    pub fn raft(&self) -> &Raft {
        &self.inner.raft
    }

    /// The Raft endpoint as a service to mount under `/raft/` in another HTTP router.
    pub fn http_service(&self) -> RaftHttpService {
        self.inner.http.clone()
    }

    pub fn config(&self) -> &RaftNodeConfig {
        &self.inner.config
    }

    /// The log format this node writes as leader: the cluster's (docs/SPEC.md §2.8).
    pub fn log_format(&self) -> LogFormat {
        self.state().map(|s| s.log_format()).unwrap_or_default()
    }

    fn state(&self) -> Result<StateHandle, NodeError> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(NodeError::Stopped)
    }

    /// Propose `envelope`; returns its log index and the state machine's response once the
    /// entry is committed and applied here (on the leader).
    ///
    /// The leader re-stamps `envelope` with the cluster's time ([`crate::clock`]); a node that
    /// does not lead leaves it as it is and gets `ForwardToLeader` back from Raft. A leader that
    /// lost its quorum ([`crate::quorum`]) refuses at once, and a write waiting on the leader
    /// waits no longer than `Tuning::read_timeout_ms`, and no longer than the quorum lasts:
    /// openraft would keep it waiting for as long as the leader is cut off.
    pub async fn client_write(
        &self,
        mut envelope: Envelope,
    ) -> Result<(u64, Response), WriteError> {
        // A leader handing off for slow storage holds new entries until its successor has its
        // whole log ([`crate::slow_storage`]); stamped after the wait, so the time is current.
        let _proposing = self.inner.proposal_hold.pass().await;
        match self.lead() {
            Lead::Leads { voters, term } => {
                self.inner.clock.leading(term);
                self.inner.clock.stamp(&voters, &mut envelope)?;
                envelope.set_format(self.log_format());
            }
            lost @ Lead::Lost { .. } => {
                return Err(WriteError::Refused(lost.reason().unwrap_or_default()))
            }
            // Not leading, by the metrics. Another node leads: forward at once
            // ([`Self::leader_elsewhere`]). Else openraft answers `ForwardToLeader`, unless it
            // leads after all and its metrics lag (a leader restarted into its own committed
            // vote takes writes at once). Such an entry carries no time rather than the one the
            // proposing node guessed: a leader restarted with its clock 6.8 s fast wrote its own
            // clock into the log that way, and the state's clock stood still for 6.8 s after.
            Lead::Follows => {
                if let Some(leader) = self.leader_elsewhere() {
                    return Err(WriteError::ForwardToLeader(leader));
                }
                unstamp(&mut envelope)
            }
        }
        let timeout = Duration::from_millis(self.inner.config.tuning.read_timeout_ms.max(1));
        let written = tokio::select! {
            written = self.inner.raft.client_write(envelope) => written,
            reason = self.quorum_lost() => {
                return Err(WriteError::Refused(format!(
                    "{reason}; the write was proposed and may still be committed: retry it with \
                     the same request id to learn its outcome"
                )))
            }
            _ = tokio::time::sleep(timeout) => {
                return Err(WriteError::Refused(format!(
                    "not committed within {} ms; the write may still be committed: retry it \
                     with the same request id to learn its outcome",
                    timeout.as_millis()
                )))
            }
        };
        match written {
            Ok(resp) => Ok((resp.log_id.index, resp.data)),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                Err(WriteError::ForwardToLeader(f.into()))
            }
            Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(e))) => {
                Err(WriteError::Refused(e.to_string()))
            }
            Err(RaftError::Fatal(f)) => Err(match self.failure_behind(&f) {
                Some(CoreFailure::Storage(m)) => WriteError::Storage(m),
                _ => WriteError::Stopped(f.to_string()),
            }),
        }
    }

    /// Why the Raft core stopped by itself, if it did (a shut-down node answers `None`).
    pub fn core_failure(&self) -> Option<CoreFailure> {
        match &self.inner.raft.metrics().borrow().running_state {
            Ok(()) => None,
            Err(fatal) => CoreFailure::of(fatal),
        }
    }

    /// Wait until the Raft core stops by itself, and say why. Never returns for a node that
    /// keeps running or is shut down on request: the server selects on it beside its signals.
    pub async fn core_failed(&self) -> CoreFailure {
        let mut metrics = self.inner.raft.metrics();
        loop {
            if let Err(fatal) = &metrics.borrow_and_update().running_state {
                if let Some(failure) = CoreFailure::of(fatal) {
                    return failure;
                }
            }
            if metrics.changed().await.is_err() {
                // The core's task ended without saying why in the metrics (a panic drops the
                // sender): a failure, unless this node was shut down on request.
                if self.inner.stopped.load(Ordering::SeqCst) {
                    return std::future::pending().await;
                }
                return self.core_failure().unwrap_or(CoreFailure::Panicked);
            }
        }
    }

    /// The failure a fatal answer of openraft's stands for: its own, or the core's as the
    /// metrics report it (a call that came after the core stopped may only say "stopped").
    fn failure_behind(&self, fatal: &Fatal<NodeId>) -> Option<CoreFailure> {
        CoreFailure::of(fatal).or_else(|| self.core_failure())
    }

    /// This node's leadership as check-quorum judges it ([`crate::quorum`]).
    pub(crate) fn lead(&self) -> Lead {
        let m = self.inner.raft.metrics();
        let m = m.borrow();
        self.inner.quorum.judge(&m, self.inner.id)
    }

    /// Resolves (with the reason) once this node leads without a quorum; never while it leads
    /// with one or follows.
    async fn quorum_lost(&self) -> String {
        loop {
            if let Some(reason) = self.lead().reason() {
                return reason;
            }
            tokio::time::sleep(QUORUM_POLL).await;
        }
    }

    /// Why this follower should not count as ready although it names a leader: it has not
    /// heard from that leader (an accepted append or heartbeat) within the check-quorum bound.
    /// openraft keeps naming the leader of its last vote; a node restarted with its clock beyond
    /// the skew bound refuses the leader's heartbeats and, until it campaigns and learns why,
    /// looked ready while every write sent to it waited 8 s for a `503`. For
    /// `/readyz`; `None` on the leader and on a node that names no leader.
    pub fn leader_unheard(&self) -> Option<String> {
        let leader = self.inner.raft.metrics().borrow().current_leader?;
        if leader == self.inner.id {
            return None;
        }
        let bound = Duration::from_millis(self.inner.config.tuning.check_quorum_ms());
        let heard = self
            .inner
            .clock
            .offsets()
            .into_iter()
            .find(|o| o.node == leader)
            .map(|o| o.age);
        match heard {
            Some(age) if age <= bound => None,
            _ => Some(format!(
                "leader unheard: this node names node {leader} its leader but has not heard from \
                 it for over {} ms (cut off, or its calls refused: see the log for clock skew)",
                bound.as_millis()
            )),
        }
    }

    /// Why this node, elected leader, acts as none: no majority of the voters has answered it
    /// for longer than `Tuning::check_quorum_ms` ([`crate::quorum`]). For `/readyz`.
    pub fn leadership_lost(&self) -> Option<String> {
        self.lead().reason()
    }

    /// Confirm (read index) that this node is the leader and that its state has applied every
    /// entry committed before the call; returns the read log id. Reads made after it are
    /// linearizable.
    pub async fn ensure_linearizable(&self) -> Result<Option<LogId>, ReadError> {
        if let Some(reason) = self.leadership_lost() {
            return Err(ReadError::NoQuorum(reason));
        }
        if let Some(leader) = self.leader_elsewhere() {
            return Err(ReadError::ForwardToLeader(leader));
        }
        let timeout = Duration::from_millis(self.inner.config.tuning.read_timeout_ms.max(1));
        let confirmed = tokio::select! {
            confirmed = tokio::time::timeout(timeout, self.inner.raft.ensure_linearizable()) => confirmed,
            reason = self.quorum_lost() => return Err(ReadError::NoQuorum(reason)),
        };
        match confirmed {
            Err(_) => Err(ReadError::Timeout),
            Ok(Ok(read_log_id)) => Ok(read_log_id),
            Ok(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)))) => {
                Err(ReadError::ForwardToLeader(f.into()))
            }
            Ok(Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q)))) => {
                Err(ReadError::NoQuorum(q.to_string()))
            }
            Ok(Err(RaftError::Fatal(f))) => Err(match self.failure_behind(&f) {
                Some(CoreFailure::Storage(m)) => ReadError::Storage(m),
                _ => ReadError::Stopped(f.to_string()),
            }),
        }
    }

    /// A linearizable read: [`Self::ensure_linearizable`], then `f` on the local state.
    /// Only the leader serves these (followers answer `ForwardToLeader`).
    pub async fn read_linearizable<T>(
        &self,
        f: impl FnOnce(&StateMachine<RocksStore>) -> T,
    ) -> Result<T, ReadError> {
        self.ensure_linearizable().await?;
        let state = self
            .state()
            .map_err(|e| ReadError::Stopped(e.to_string()))?;
        state.read(f).map_err(|e| ReadError::State(e.to_string()))
    }

    /// A local read, possibly stale (what this replica has applied so far).
    pub fn read_local<T>(
        &self,
        f: impl FnOnce(&StateMachine<RocksStore>) -> T,
    ) -> Result<T, NodeError> {
        Ok(self.state()?.read(f)?)
    }

    /// SHA-256 of this replica's state (equal on replicas that applied the same entries) and
    /// the log id it was taken at, read atomically.
    pub async fn digest(&self) -> Result<(Option<LogId>, [u8; 32]), NodeError> {
        Ok(self.state()?.digest().await?)
    }

    /// openraft's last applied log id as recorded in the state.
    pub fn applied_log_id(&self) -> Result<Option<LogId>, NodeError> {
        Ok(self.state()?.applied_state()?.0)
    }

    /// A copy of the current Raft metrics, as the cluster should see them: a leader that lost
    /// its quorum ([`crate::quorum`]) names no leader (openraft's own metrics still say it
    /// leads, and `millis_since_quorum_ack` says for how long no quorum answered).
    pub fn metrics(&self) -> RaftMetrics {
        let mut m = self.inner.raft.metrics().borrow().clone();
        if matches!(
            self.inner.quorum.judge(&m, self.inner.id),
            Lead::Lost { .. }
        ) {
            m.current_leader = None;
        }
        m
    }

    /// The metrics channel, to await changes. Do not hold a `borrow()` across an await.
    /// openraft's own: a leader that lost its quorum still names itself there (see
    /// [`Self::metrics`]).
    pub fn metrics_watch(&self) -> watch::Receiver<RaftMetrics> {
        self.inner.raft.metrics()
    }

    /// Whether this node believes it is the leader with a quorum behind it (from metrics; may
    /// be stale by a tick; see [`crate::quorum`]).
    pub fn is_leader(&self) -> bool {
        matches!(self.lead(), Lead::Leads { .. })
    }

    /// The leader this node knows of, with its address (none while this node leads without a
    /// quorum).
    pub fn leader(&self) -> Option<(NodeId, String)> {
        let m = self.metrics();
        let id = m.current_leader?;
        Some((id, member_addr(&m, id)?))
    }

    /// Another node leads, by this node's metrics, at this address: a write or a read index
    /// asked of this node goes there without asking this node's Raft core first. The core
    /// would answer the same, but only once it is done with what it is doing: on a node whose
    /// disk is slow, a log fsync of hundreds of milliseconds for each write sent through it
    /// (a slow follower cut the chaos workload's writes through it to one a second). Metrics
    /// that lag only cost a forward the old leader answers with the new one. A node whose
    /// core stopped (a storage failure) forwards nothing: its metrics are frozen, and it says
    /// why it cannot serve (§11.7) until it exits.
    fn leader_elsewhere(&self) -> Option<NotLeader> {
        let m = self.inner.raft.metrics();
        let m = m.borrow();
        if m.running_state.is_err() {
            return None;
        }
        let id = m.current_leader.filter(|id| *id != self.inner.id)?;
        Some(NotLeader {
            leader_id: Some(id),
            addr: Some(member_addr(&m, id)?),
        })
    }

    /// This node does not lead: who does, as far as its metrics know (both `None` during an
    /// election).
    pub(crate) fn not_leader(&self) -> NotLeader {
        let m = self.inner.raft.metrics();
        let m = m.borrow();
        let leader = m.current_leader.filter(|id| *id != self.inner.id);
        NotLeader {
            leader_id: leader,
            addr: leader.and_then(|id| member_addr(&m, id)),
        }
    }

    /// Build a snapshot now (asynchronously; watch `metrics().snapshot`).
    pub async fn trigger_snapshot(&self) -> Result<(), WriteError> {
        self.inner
            .raft
            .trigger()
            .snapshot()
            .await
            .map_err(|e| WriteError::Stopped(e.to_string()))
    }

    /// A snapshot of this node's state covering at least every entry applied when called: the
    /// current one if it already does, else one built now. Waits at most `within` for it and
    /// answers the index it covers. What an operator asks for before a backup, or to compact
    /// the log of a young cluster that has not reached the automatic threshold.
    pub async fn snapshot_covering_applied(&self, within: Duration) -> Result<u64, WriteError> {
        let mut watch = self.metrics_watch();
        let (target, current) = {
            let m = watch.borrow();
            (
                m.last_applied.map_or(0, |l| l.index),
                m.snapshot.map(|l| l.index),
            )
        };
        if let Some(index) = current.filter(|i| *i >= target) {
            return Ok(index);
        }
        self.trigger_snapshot().await?;
        let covered = tokio::time::timeout(
            within,
            watch.wait_for(|m| m.snapshot.is_some_and(|l| l.index >= target)),
        )
        .await
        .map_err(|_| {
            WriteError::Refused(format!(
                "no snapshot covering index {target} within {} s",
                within.as_secs()
            ))
        })?
        .map_err(|e| WriteError::Stopped(e.to_string()))?
        .snapshot
        .map_or(target, |l| l.index);
        Ok(covered)
    }

    /// This node's current snapshot, its file opened (what a backup streams out); see
    /// [`crate::sm_adapter::StateHandle::open_current_snapshot`].
    pub fn open_current_snapshot(
        &self,
    ) -> Result<Option<(crate::types::SnapshotMeta, std::fs::File)>, NodeError> {
        Ok(self.state()?.open_current_snapshot()?)
    }

    /// How many times this node has seen the leader change since it started.
    pub fn leader_changes(&self) -> u64 {
        self.inner
            .leader_changes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn sm_stats(&self) -> Arc<SmStats> {
        self.inner.sm_stats.clone()
    }

    /// Memory and disk figures of the state's and the log's databases, and the number of keys
    /// in the state's in-memory indexes (`None` once the node is shut down).
    pub fn storage_memory(&self) -> Option<StorageMemory> {
        let log = self
            .inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()?
            .memory();
        let (state, mirrored_keys) = self
            .read_local(|sm| (sm.store().memory(), sm.store().mirrored_keys()))
            .ok()?;
        Some(StorageMemory {
            state,
            log,
            mirrored_keys,
        })
    }

    pub fn log_stats(&self) -> Arc<LogStats> {
        self.inner.log_stats.clone()
    }

    /// What eager replication sent and how the followers took it ([`crate::eager_replication`]).
    pub fn eager_stats(&self) -> Arc<EagerStats> {
        self.inner.eager_stats.clone()
    }

    /// This node's log storage as last judged ([`crate::slow_storage`]).
    pub fn storage_health(&self) -> Arc<StorageHealth> {
        self.inner.storage_health.clone()
    }

    pub fn server_stats(&self) -> Arc<ServerStats> {
        self.inner.http.stats()
    }

    /// The cluster's time as this node sees it: peers' clock offsets, the skew bound, the
    /// time the leader stamps ([`crate::clock`]).
    pub fn clock(&self) -> Arc<ClusterClock> {
        self.inner.clock.clone()
    }

    /// The cluster's time for a read on this node: on the leader the time it stamps
    /// ([`ClusterClock::cluster_now`]), elsewhere its best estimate
    /// ([`ClusterClock::estimate_now`]).
    pub fn cluster_now_ms(&self) -> u64 {
        if let Lead::Leads { voters, term } = self.lead() {
            self.inner.clock.leading(term);
            if let Ok(now) = self.inner.clock.cluster_now(&voters) {
                return now;
            }
        }
        let voters = ClusterClock::voters(&self.inner.raft);
        self.inner.clock.estimate_now(&voters)
    }

    /// Why this node cannot take part because of its clock, if that is so
    /// ([`ClusterClock::own_skew`]).
    pub fn clock_skew(&self) -> Option<String> {
        let voters = ClusterClock::voters(&self.inner.raft);
        self.inner.clock.own_skew(&voters)
    }

    pub fn timer_stats(&self) -> Arc<TimerStats> {
        self.inner.timer_stats.clone()
    }

    /// Stop the node: stop serving and proposing, shut Raft down, and wait until its databases
    /// are closed (so the data directory can be reopened at once). Idempotent.
    pub async fn shutdown(&self) {
        if self.inner.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.inner.stop_tx.send(true);
        let tasks: Vec<_> =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in tasks {
            // The timer may be waiting on a write that can no longer commit: do not wait for it.
            task.abort();
            let _ = task.await;
        }
        if let Err(e) = self.inner.raft.shutdown().await {
            tracing::warn!(id = self.inner.id, error = %e, "raft core ended abnormally");
        }
        drop(
            self.inner
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        drop(
            self.inner
                .log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        for probe in &self.inner.probes {
            if !probe.wait(REOPEN_WAIT).await {
                tracing::warn!(id = self.inner.id, "storage still in use after shutdown");
            }
        }
        tracing::info!(id = self.inner.id, "raft node stopped");
    }
}
