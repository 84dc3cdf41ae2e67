//! Cluster life cycle: bootstrap once, add learners, change the voter set.
//!
//! Membership changes go through openraft's joint consensus, one at a time: every helper takes
//! the node's membership mutex, so two changes started on this node can never interleave and
//! leave a joint configuration behind. (Changes started on different nodes are serialized by
//! Raft itself: only the leader accepts them, and it refuses a second one while the first is in
//! progress.) They must run on the leader; elsewhere they return `ForwardToLeader`.
//!
//! Every change is judged first, under that mutex, by [`crate::membership_rules`] against the
//! configuration the leader holds (one voter removed per change, ids from 1, one address per
//! member, a majority of the new voters caught up), and a learner is given
//! `Tuning::learner_catchup_timeout_ms` to catch up or is removed again ([`crate::learners`]).

use crate::learners::Stalled;
use crate::membership_rules::{self, LearnerAdd, Refusal, View};
use crate::node::{NotLeader, RaftNode};
use crate::types::{Node, NodeId};
use openraft::error::{ChangeMembershipError, ClientWriteError, InitializeError, RaftError};
use openraft::ChangeMembers;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How often a learner's progress is looked at while an add waits for it.
const CATCH_UP_POLL: Duration = Duration::from_millis(100);

/// A cluster operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// Membership changes are made by the leader only: ask the leader [`NotLeader`] names.
    #[error(transparent)]
    ForwardToLeader(#[from] NotLeader),
    /// Refused by Raft for good: unknown learner, empty voter set, ...
    #[error("membership change refused: {0}")]
    Refused(String),
    /// Refused by raftlane's membership rules ([`crate::membership_rules`]) before anything
    /// was appended: the request's field at fault and why.
    #[error("membership change refused: {0}")]
    Rule(#[from] Refusal),
    /// A learner did not catch up within `Tuning::learner_catchup_timeout_ms` and was removed
    /// again ([`crate::learners`]).
    #[error("membership change refused: {0}")]
    LearnerStalled(#[from] Stalled),
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

    /// Add a learner and wait until it has caught up with the log (to within
    /// `Tuning::learner_lag_threshold` entries), for at most `Tuning::learner_catchup_timeout_ms`:
    /// a learner still behind then is removed again and the answer says so
    /// ([`ClusterError::LearnerStalled`]). Adding a member again at its own address changes
    /// nothing; the rules of [`membership_rules::check_add_learner`] refuse the rest.
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

    /// The configuration as the rules judge it: only the leader's is authoritative (elsewhere
    /// `ForwardToLeader`, which the callers would get from Raft anyway).
    pub(crate) fn view_for_rules(&self) -> Result<View, ClusterError> {
        let m = self.raft().metrics().borrow().clone();
        if m.current_leader != Some(self.id()) {
            return Err(ClusterError::ForwardToLeader(NotLeader {
                leader_id: m.current_leader,
                addr: m
                    .current_leader
                    .and_then(|l| crate::types::member_addr(&m, l)),
            }));
        }
        let membership = m.membership_config.membership();
        let answering = self.clock().offsets().into_iter().map(|o| o.node).collect();
        Ok(View {
            leader: self.id(),
            nodes: membership
                .nodes()
                .map(|(id, n)| (*id, n.addr.clone()))
                .collect(),
            voters: membership.voter_ids().collect(),
            last_index: m.last_log_index.unwrap_or(0),
            matched: m
                .replication
                .as_ref()
                .map(|r| r.iter().map(|(id, l)| (*id, l.map(|l| l.index))).collect())
                .unwrap_or_default(),
            answering,
            max_lag: self.config().tuning.learner_lag_threshold,
        })
    }

    async fn add_learner_locked(&self, id: NodeId, addr: String) -> Result<(), ClusterError> {
        let view = self.view_for_rules()?;
        if membership_rules::check_add_learner(&view, id, &addr)? == LearnerAdd::New {
            tracing::info!(id = self.id(), learner = id, %addr, "adding learner");
            self.bounded(
                self.raft()
                    .add_learner(id, Node { addr: addr.clone() }, false),
            )
            .await?;
        }
        if view.voters.contains(&id) {
            return Ok(());
        }
        self.await_catch_up(id, &addr).await
    }

    /// Wait until learner `id` is caught up; past the bound, remove it and say why.
    async fn await_catch_up(&self, id: NodeId, addr: &str) -> Result<(), ClusterError> {
        let tuning = &self.config().tuning;
        let bound = Duration::from_millis(tuning.learner_catchup_timeout_ms.max(1));
        let started = tokio::time::Instant::now();
        loop {
            let view = self.view_for_rules()?;
            if view.current(id) {
                self.inner.learners.caught_up(id);
                return Ok(());
            }
            if started.elapsed() >= bound {
                let stalled = Stalled::new(id, addr, &view, bound);
                self.remove_stalled(&stalled).await?;
                return Err(ClusterError::LearnerStalled(stalled));
            }
            tokio::time::sleep(CATCH_UP_POLL).await;
        }
    }

    /// Remove the learner `stalled` names (the membership lock held), log it and keep it for
    /// `GET /v1/cluster`.
    pub(crate) async fn remove_stalled(&self, stalled: &Stalled) -> Result<(), ClusterError> {
        tracing::warn!(
            id = self.id(),
            learner = stalled.id,
            addr = %stalled.addr,
            "removing learner {}: {}",
            stalled.id,
            stalled.reason
        );
        self.change_locked(
            ChangeMembers::RemoveNodes(BTreeSet::from([stalled.id])),
            false,
        )
        .await?;
        self.inner.learners.removed(stalled.clone());
        Ok(())
    }

    /// The voter set `voters` once [`membership_rules::check_set_voters`] allows it.
    fn judge_voters(&self, voters: &[NodeId]) -> Result<BTreeSet<NodeId>, ClusterError> {
        Ok(membership_rules::check_set_voters(
            &self.view_for_rules()?,
            voters,
        )?)
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
        let mut voters: Vec<NodeId> = self.voters().into_iter().collect();
        voters.push(id);
        voters.dedup();
        self.judge_voters(&voters)?;
        self.change_locked(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
            .await
    }

    /// Remove a voter or a learner from the cluster entirely.
    pub async fn remove(&self, id: NodeId) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        let ids = BTreeSet::from([id]);
        let voters = self.voters();
        if voters.contains(&id) {
            let rest: Vec<NodeId> = voters.into_iter().filter(|v| *v != id).collect();
            self.judge_voters(&rest)?;
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
        let voters = self.judge_voters(&voters.into_iter().collect::<Vec<_>>())?;
        self.change_locked(ChangeMembers::ReplaceAllVoters(voters), false)
            .await
    }

    /// Set the voter set to exactly `voters` (all must be members already, e.g. learners),
    /// within [`membership_rules::check_set_voters`]. Nodes dropped from the voter set leave
    /// the cluster.
    pub async fn set_voters(&self, voters: &[NodeId]) -> Result<(), ClusterError> {
        let _guard = self.inner.membership_lock.lock().await;
        let voters = self.judge_voters(voters)?;
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
