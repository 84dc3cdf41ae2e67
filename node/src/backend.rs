//! The API's [`Backend`] over a Raft node: proposals go through openraft, reads come from the
//! locally applied state, read indexes from the leader's quorum check.

use raftlane_api::backend::{
    log_format_refused, BoxFuture, ClusterStatus, Member, ProposeError, RemovedLearner,
    SnapshotFile,
};
use raftlane_api::metrics::set::MetricSet;
use raftlane_api::Backend;
use raftlane_raft::RaftNode;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::{Envelope, Response, StoreError};
use std::time::Duration;

/// How long a leader that handed its leadership over on request stays out of elections: long
/// enough for the new leader to settle, short enough to stand again soon after.
const TRANSFER_COOL_DOWN: Duration = Duration::from_secs(5);

/// How long `POST /v1/cluster/snapshot` waits for a snapshot to be built (a state of a few GB
/// takes a minute or more to walk and write).
const SNAPSHOT_WITHIN: Duration = Duration::from_secs(600);

pub struct RaftBackend {
    node: RaftNode,
}

impl RaftBackend {
    pub fn new(node: RaftNode) -> Self {
        Self { node }
    }
}

impl Backend for RaftBackend {
    fn node_id(&self) -> u64 {
        self.node.id()
    }

    fn cluster_now_ms(&self) -> u64 {
        self.node.cluster_now_ms()
    }

    fn clock_skew(&self) -> Option<String> {
        self.node.clock_skew()
    }

    fn propose(&self, envelope: Envelope) -> BoxFuture<'_, Result<(u64, Response), ProposeError>> {
        Box::pin(async move {
            self.node
                .client_write(envelope)
                .await
                .map_err(ProposeError::from)
        })
    }

    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>> {
        Box::pin(async move {
            let log_id = self
                .node
                .ensure_linearizable()
                .await
                .map_err(ProposeError::from)?;
            Ok(log_id.map_or(0, |l| l.index))
        })
    }

    fn wait_applied(
        &self,
        index: u64,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async move {
            if index == 0 {
                return Ok(());
            }
            self.node
                .raft()
                .wait(Some(timeout))
                .applied_index_at_least(Some(index), "linearizable read")
                .await
                .map(|_| ())
                .map_err(|e| ProposeError::Unavailable(format!("waiting for index {index}: {e}")))
        })
    }

    fn applied_index(&self) -> u64 {
        self.node
            .metrics_watch()
            .borrow()
            .last_applied
            .as_ref()
            .map_or(0, |l| l.index)
    }

    /// Woken by openraft's metrics, which it sends after each batch it applies (and on other
    /// changes: a wake-up that finds the same index waits on).
    fn applied_beyond(&self, index: u64, timeout: Duration) -> BoxFuture<'_, bool> {
        let mut metrics = self.node.metrics_watch();
        Box::pin(async move {
            let beyond = metrics.wait_for(|m| m.last_applied.is_some_and(|l| l.index > index));
            matches!(tokio::time::timeout(timeout, beyond).await, Ok(Ok(_)))
        })
    }

    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError> {
        self.node
            .read_local(|sm| f(&sm.read()))
            .map_err(|e| StoreError::Io(e.to_string()))
    }

    fn status(&self) -> ClusterStatus {
        let m = self.node.metrics();
        let membership = m.membership_config.membership();
        let voters: Vec<u64> = membership.voter_ids().collect();
        let membership_list = membership
            .nodes()
            .map(|(id, node)| Member {
                id: *id,
                addr: node.addr.clone(),
                voter: voters.contains(id),
            })
            .collect();
        ClusterStatus {
            node_id: self.node.id(),
            leader_id: m.current_leader,
            term: m.current_term,
            last_log_index: m.last_log_index.unwrap_or(0),
            last_applied: m.last_applied.map_or(0, |l| l.index),
            membership: membership_list,
            removed_learners: self
                .node
                .removed_learners()
                .into_iter()
                .map(|s| RemovedLearner {
                    id: s.id,
                    addr: s.addr,
                    reason: s.reason,
                    removed_at_ms: s.removed_at_ms,
                })
                .collect(),
        }
    }

    fn node_metrics(&self, set: &mut MetricSet) {
        crate::node_metrics::write(&self.node, set);
    }

    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>> {
        Box::pin(async move {
            // One atomic read: checkers compare equal digests at equal indexes.
            let (applied, digest) = self.node.digest().await.map_err(|e| e.to_string())?;
            Ok((applied.map_or(0, |l| l.index), digest))
        })
    }

    fn snapshot_now(&self) -> BoxFuture<'_, Result<u64, String>> {
        Box::pin(async move {
            self.node
                .snapshot_covering_applied(SNAPSHOT_WITHIN)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn open_snapshot(&self) -> Result<Option<SnapshotFile>, String> {
        let Some((meta, file)) = self
            .node
            .open_current_snapshot()
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let bytes = file.metadata().map_err(|e| e.to_string())?.len();
        Ok(Some(SnapshotFile {
            index: meta.last_log_id.map_or(0, |l| l.index),
            bytes,
            file,
        }))
    }

    fn add_learner(&self, id: u64, addr: String) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async move {
            self.node
                .add_learner(id, addr)
                .await
                .map_err(ProposeError::from)
        })
    }

    fn change_membership(&self, voters: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async move {
            self.node
                .set_voters(&voters)
                .await
                .map_err(ProposeError::from)
        })
    }

    fn transfer_leader(&self, to: Option<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async move {
            self.node
                .transfer_leadership(
                    to,
                    "an operator asked (POST /v1/cluster/leader)".into(),
                    TRANSFER_COOL_DOWN,
                )
                .await
                .map(|_| ())
                .map_err(ProposeError::from)
        })
    }

    fn raise_log_format(
        &self,
        format: u32,
        actor: String,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        use raftlane_raft::log_format::LogFormatError;
        Box::pin(async move {
            match self.node.raise_log_format(format, &actor).await {
                Ok((_, Ok(_))) => Ok(()),
                Ok((_, Err(rejection))) => Err(log_format_refused(rejection, true)),
                Err(LogFormatError::NotLeader(not_leader)) => Err(not_leader.into()),
                Err(e @ LogFormatError::MemberCannotRead { .. }) => {
                    Err(log_format_refused(e, false))
                }
                Err(LogFormatError::Write(e)) => Err(e.into()),
            }
        })
    }

    fn ready(&self) -> Result<(), String> {
        // First: a node whose Raft core stopped may still know a leader from its last metrics.
        if let Some(failure) = self.node.core_failure() {
            return Err(failure.summary());
        }
        if let Some(skew) = self.node.clock_skew() {
            return Err(skew);
        }
        // A leader cut off from its majority says so, rather than only "no leader known":
        // the operator learns it is the old leader of a partition (check-quorum).
        if let Some(lost) = self.node.leadership_lost() {
            return Err(lost);
        }
        if let Some(unheard) = self.node.leader_unheard() {
            return Err(unheard);
        }
        let m = self.node.metrics();
        match m.current_leader {
            Some(_) => Ok(()),
            None => Err("no leader known".into()),
        }
    }
}
