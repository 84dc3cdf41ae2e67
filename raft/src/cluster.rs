//! Cluster life cycle: bootstrap once, add learners, change the voter set.
//!
//! Membership changes go through openraft's joint consensus, one at a time: every helper takes
//! the node's membership mutex, so two changes started on this node can never interleave and
//! leave a joint configuration behind. (Changes started on different nodes are serialized by
//! Raft itself: only the leader accepts them, and it refuses a second one while the first is in
//! progress.) They must run on the leader; elsewhere they return `ForwardToLeader`.

use crate::node::{NotLeader, RaftNode};
use crate::types::{Node, NodeId};
use openraft::error::{ChangeMembershipError, ClientWriteError, InitializeError, RaftError};
use openraft::ChangeMembers;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A cluster operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// Membership changes are made by the leader only: ask the leader [`NotLeader`] names.
    #[error(transparent)]
    ForwardToLeader(#[from] NotLeader),
    /// Refused by Raft for good: unknown learner, empty voter set, ...
    #[error("membership change refused: {0}")]
    Refused(String),
    /// Refused for now: the leader has not yet committed the configuration it last appended
    /// (a change just made, from this node or another). Retrying shortly succeeds.
    #[error("membership change in progress: {0}")]
    Busy(String),
    #[error("cannot initialize: {0}")]
    Initialize(String),
    #[error("raft is stopped: {0}")]
    Stopped(String),
    /// The operation did not finish in `Tuning::membership_timeout_ms`. It may still complete
    /// (e.g. the learner is added but has not caught up): check `voters()`/metrics.
    #[error("membership operation timed out")]
    Timeout,
}

fn from_write(e: RaftError<NodeId, ClientWriteError<NodeId, Node>>) -> ClusterError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => {
            ClusterError::ForwardToLeader(f.into())
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(e),
        )) => ClusterError::Busy(e.to_string()),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            ClusterError::Refused(e.to_string())
        }
        RaftError::Fatal(f) => ClusterError::Stopped(f.to_string()),
    }
}

impl RaftNode {
    /// Initialize a new cluster with `members` (id → address) as its voters, unless this node
    /// was initialized before (it has a vote or log entries). Safe to call at every start:
    /// returns `Ok(true)` if it initialized, `Ok(false)` if there was nothing to do.
    pub async fn bootstrap(
        &self,
        members: &BTreeMap<NodeId, String>,
    ) -> Result<bool, ClusterError> {
        let raft = self.raft();
        if raft
            .is_initialized()
            .await
            .map_err(|e| ClusterError::Stopped(e.to_string()))?
        {
            return Ok(false);
        }
        let nodes: BTreeMap<NodeId, Node> = members
            .iter()
            .map(|(id, addr)| (*id, Node { addr: addr.clone() }))
            .collect();
        match raft.initialize(nodes).await {
            Ok(()) => {
                tracing::info!(id = self.id(), ?members, "cluster initialized");
                Ok(true)
            }
            // Already initialized (a race with another start, or with replication from a
            // leader that reached us first): fine.
            Err(RaftError::APIError(InitializeError::NotAllowed(e))) => {
                tracing::info!(id = self.id(), reason = %e, "already initialized");
                Ok(false)
            }
            Err(RaftError::APIError(InitializeError::NotInMembers(e))) => {
                Err(ClusterError::Initialize(e.to_string()))
            }
            Err(RaftError::Fatal(f)) => Err(ClusterError::Stopped(f.to_string())),
        }
    }

    /// The current voter ids (from this node's view of the membership).
    pub fn voters(&self) -> BTreeSet<NodeId> {
        let m = self.raft().metrics();
        let m = m.borrow();
        m.membership_config.membership().voter_ids().collect()
    }

    /// Add (or update the address of) a learner and wait until it has caught up with the log
    /// (to within `Tuning::learner_lag_threshold` entries).
    pub async fn add_learner(
        &self,
        id: NodeId,
        addr: impl Into<String>,
    ) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        self.add_learner_locked(id, addr.into()).await
    }

    async fn bounded<T>(
        &self,
        op: impl std::future::Future<
            Output = Result<T, RaftError<NodeId, ClientWriteError<NodeId, Node>>>,
        >,
    ) -> Result<(), ClusterError> {
        let limit = Duration::from_millis(self.config().tuning.membership_timeout_ms.max(1));
        match tokio::time::timeout(limit, op).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(from_write(e)),
            Err(_) => Err(ClusterError::Timeout),
        }
    }

    async fn add_learner_locked(&self, id: NodeId, addr: String) -> Result<(), ClusterError> {
        tracing::info!(id = self.id(), learner = id, %addr, "adding learner");
        self.bounded(self.raft().add_learner(id, Node { addr }, true))
            .await
    }

    async fn change_locked(
        &self,
        changes: ChangeMembers<NodeId, Node>,
        retain: bool,
    ) -> Result<(), ClusterError> {
        tracing::info!(id = self.id(), ?changes, retain, "changing membership");
        self.bounded(self.raft().change_membership(changes, retain))
            .await
    }

    /// Make an existing learner a voter.
    pub async fn promote(&self, id: NodeId) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        self.change_locked(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
            .await
    }

    /// Remove a voter or a learner from the cluster entirely.
    pub async fn remove(&self, id: NodeId) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        let ids = BTreeSet::from([id]);
        if self.voters().contains(&id) {
            // `retain = false`: the removed voter does not stay on as a learner.
            self.change_locked(ChangeMembers::RemoveVoters(ids), false)
                .await
        } else {
            self.change_locked(ChangeMembers::RemoveNodes(ids), false)
                .await
        }
    }

    /// Replace voter `old` by a new node: add it as a learner, let it catch up, then switch the
    /// voter set in one joint-consensus change and drop `old`.
    pub async fn replace(
        &self,
        old: NodeId,
        new_id: NodeId,
        new_addr: impl Into<String>,
    ) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        self.add_learner_locked(new_id, new_addr.into()).await?;
        let mut voters = self.voters();
        voters.remove(&old);
        voters.insert(new_id);
        self.change_locked(ChangeMembers::ReplaceAllVoters(voters), false)
            .await
    }

    /// Set the voter set to exactly `voters` (all must be members already, e.g. learners).
    /// Nodes dropped from the voter set leave the cluster.
    pub async fn set_voters(&self, voters: BTreeSet<NodeId>) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        self.change_locked(ChangeMembers::ReplaceAllVoters(voters), false)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::error::{InProgress, LearnerNotFound};

    fn change_error(e: ChangeMembershipError<NodeId>) -> ClusterError {
        from_write(RaftError::APIError(
            ClientWriteError::ChangeMembershipError(e),
        ))
    }

    #[test]
    fn a_change_behind_an_uncommitted_one_is_busy_not_refused() {
        let busy = change_error(ChangeMembershipError::InProgress(InProgress {
            committed: None,
            membership_log_id: None,
        }));
        assert!(matches!(busy, ClusterError::Busy(_)), "{busy:?}");
        let refused = change_error(ChangeMembershipError::LearnerNotFound(LearnerNotFound {
            node_id: 99,
        }));
        assert!(
            matches!(&refused, ClusterError::Refused(m) if m.contains("99")),
            "{refused:?}"
        );
    }
}
