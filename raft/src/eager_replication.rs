//! Eager replication: a leader sends each batch of entries to the other voters while it writes
//! the batch to its own log.
//!
//! Why: openraft 0.9 appends a leader's entries in its core task and awaits their fsync before
//! its replication streams may send them (`RaftCore::append_to_log`), so a commit costs the
//! leader's fsync and then a follower's, one after the other. The log store offers every batch
//! it is about to write to [`EagerReplication::offer`]; when this node is the leader that made
//! the batch, the batch goes to the other voters at once as an ordinary AppendEntries request,
//! and they write it while the leader does. When openraft's own stream sends the same entries
//! after the leader's flush, the follower already holds them (same log ids, nothing to write)
//! and answers at once: a commit waits for about one fsync instead of two.
//!
//! Why it is safe: nothing here counts toward a commit, and the request is one openraft's own
//! replication could send. It carries the leader's committed vote and the entry before the batch
//! as `prev_log_id`, and no commit index: it moves no follower's commit, and a rejoining node
//! takes the index it must reach before voting only from an append that names one
//! ([`crate::rejoin`]). A follower checks it as any other append: a stale vote is refused, a gap
//! is refused, and it writes what it accepts before it answers anything. The leader still
//! counts its own copy only after its own fsync, and openraft still counts a follower's only
//! from its own stream's answers; the answers to eager requests are only counted in
//! [`EagerStats`].
//!
//! Bounds: at most one eager request in flight per follower (a slow follower gets the batches it
//! missed through openraft's stream, which is what keeps eager requests in order), each within
//! [`DEADLINE`]; nothing is sent while this node is not the leader of the batch's term.

use crate::network::HttpNetwork;
use crate::types::member_addr;
use crate::types::{Entry, LogId, NodeId, RaftMetrics, TypeConfig};
use crate::wire;
use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};
use openraft::ServerState;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

/// An eager request that takes longer than this is abandoned (openraft's stream sends the same
/// entries anyway).
pub const DEADLINE: Duration = Duration::from_secs(2);

/// What eager replication did, for `/metrics` and the tests.
#[derive(Debug, Default)]
pub struct EagerStats {
    /// Requests sent (one per follower per batch).
    pub sent: AtomicU64,
    /// Requests a follower accepted: it wrote the batch (or already had it).
    pub accepted: AtomicU64,
    /// Requests a follower refused (a newer vote, a gap before the batch) or that failed in
    /// transit; openraft's stream brings that follower the batch.
    pub refused: AtomicU64,
    /// Batches not sent to a follower because the previous eager request to it was in flight.
    pub skipped_busy: AtomicU64,
}

/// Sends the leader's batches to the other voters as it writes them (module docs).
pub struct EagerReplication {
    self_id: NodeId,
    network: HttpNetwork,
    /// The node's Raft metrics, attached once Raft runs: who leads, in which term, the voters.
    metrics: OnceLock<watch::Receiver<RaftMetrics>>,
    /// Followers with an eager request in flight.
    busy: Arc<Mutex<HashSet<NodeId>>>,
    stats: Arc<EagerStats>,
}

/// Where and how to send one batch ([`EagerReplication::plan`]).
pub struct Plan {
    request_vote: crate::types::Vote,
    peers: Vec<(NodeId, String)>,
}

impl EagerReplication {
    pub fn new(self_id: NodeId, network: HttpNetwork) -> Arc<Self> {
        Arc::new(Self {
            self_id,
            network,
            metrics: OnceLock::new(),
            busy: Arc::default(),
            stats: Arc::default(),
        })
    }

    /// Start sending: `metrics` are the running Raft's. Before this nothing is sent.
    pub fn attach(&self, metrics: watch::Receiver<RaftMetrics>) {
        let _ = self.metrics.set(metrics);
    }

    pub fn stats(&self) -> Arc<EagerStats> {
        self.stats.clone()
    }

    /// Whether a batch starting at `first` is this node's own, written as the leader of its
    /// term, with followers to send it to; if so, the request's vote and targets.
    pub fn plan(&self, first: &LogId) -> Option<Plan> {
        let m = self.metrics.get()?.borrow();
        let leads = m.state == ServerState::Leader
            && m.current_leader == Some(self.self_id)
            && m.vote.is_committed()
            && *m.vote.leader_id() == first.leader_id
            && first.leader_id.voted_for() == Some(self.self_id);
        if !leads || m.running_state.is_err() {
            return None;
        }
        let peers: Vec<(NodeId, String)> = m
            .membership_config
            .membership()
            .voter_ids()
            .filter(|id| *id != self.self_id)
            .filter_map(|id| member_addr(&m, id).map(|addr| (id, addr)))
            .collect();
        if peers.is_empty() {
            return None;
        }
        Some(Plan {
            request_vote: m.vote,
            peers,
        })
    }

    /// Send `entries` (a batch the log store is about to write, which [`plan`](Self::plan)
    /// made `plan` for; `prev` is the log id just before it) to every other voter without an
    /// eager request in flight. Returns at once: the encoding and the requests run on their
    /// own task.
    pub fn offer(&self, plan: Plan, prev: Option<LogId>, entries: Vec<Entry>) {
        let mut targets = Vec::with_capacity(plan.peers.len());
        {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            for (id, addr) in plan.peers {
                if busy.insert(id) {
                    targets.push((id, addr));
                } else {
                    self.stats.skipped_busy.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if targets.is_empty() {
            return;
        }
        let request = AppendEntriesRequest::<TypeConfig> {
            vote: plan.request_vote,
            prev_log_id: prev,
            entries,
            leader_commit: None,
        };
        let (network, busy, stats) = (self.network.clone(), self.busy.clone(), self.stats.clone());
        tokio::spawn(async move {
            let body = match wire::encode(&request) {
                Ok(body) => bytes::Bytes::from(body),
                Err(e) => {
                    tracing::debug!(error = %e, "eager replication: cannot encode a batch");
                    let mut busy = busy.lock().unwrap_or_else(|p| p.into_inner());
                    for (id, _) in &targets {
                        busy.remove(id);
                    }
                    return;
                }
            };
            for (id, addr) in targets {
                let (peer, body) = (network.peer(id, &addr), body.clone());
                let (busy, stats) = (busy.clone(), stats.clone());
                tokio::spawn(async move {
                    stats.sent.fetch_add(1, Ordering::Relaxed);
                    let answer = peer
                        .call_encoded::<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>>(
                            wire::PATH_APPEND,
                            body,
                            DEADLINE,
                        )
                        .await;
                    busy.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    match answer {
                        Ok(Ok(
                            AppendEntriesResponse::Success
                            | AppendEntriesResponse::PartialSuccess(_),
                        )) => {
                            stats.accepted.fetch_add(1, Ordering::Relaxed);
                        }
                        other => {
                            stats.refused.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(target_node = id, answer = ?other, "eager replication: not taken");
                        }
                    }
                });
            }
        });
    }
}
