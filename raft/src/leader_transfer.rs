//! Handing leadership to another voter: what a leader on slow storage does by itself
//! ([`crate::slow_storage`]) and what an operator asks for (`POST /v1/cluster/leader`,
//! `raftlane ctl leader transfer`). One mechanism for both.
//!
//! openraft 0.9 has no leadership transfer, so the leader makes one from Raft's ordinary vote:
//! it holds new proposals ([`ProposalHold`](crate::storage_health::ProposalHold)) until the
//! target has every entry it has (so the target's log is at least as up to date as any voter's
//! and its vote can be won), stops campaigning itself for a cool-down, and asks the target in a
//! signed `/raft/elect` call to campaign at once. The target refuses when it is no voter, is
//! rejoining, or its own storage is slow. Nothing about safety changes: the new leader is
//! elected by a majority's votes; held writes go on once the hold ends, on the new leader
//! through the write layer's forwarding.

use crate::node::RaftNode;
use crate::quorum::Lead;
use crate::storage_health::{ElectRequest, ElectResponse, CATCH_UP_WAIT, ELECTION_WAIT};
use crate::types::NodeId;
use crate::wire;
use std::time::Duration;

/// A leadership transfer that did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    /// This node does not lead (the API forwards the request to the leader).
    #[error(transparent)]
    NotLeader(#[from] crate::node::NotLeader),
    /// The target cannot take it: not a voter, this node itself, no address.
    #[error("{0}")]
    Refused(String),
    /// It was tried and did not happen (the target did not catch up, declined, or lost).
    #[error("{0}")]
    Failed(String),
}

impl RaftNode {
    /// Transfer this node's leadership to voter `to` (`None`: the voter whose log reaches
    /// furthest), for `reason` (logged by both); this node stays out of elections for
    /// `cool_down` afterwards. Answers the new leader.
    pub async fn transfer_leadership(
        &self,
        to: Option<NodeId>,
        reason: String,
        cool_down: Duration,
    ) -> Result<NodeId, TransferError> {
        if !matches!(self.lead(), Lead::Leads { .. }) {
            return Err(TransferError::NotLeader(self.not_leader()));
        }
        let m = self.raft().metrics().borrow().clone();
        let to = match to {
            Some(to) => to,
            None => crate::storage_health::successor(&m, self.id()).ok_or_else(|| {
                TransferError::Refused("no other voter has this node's log".into())
            })?,
        };
        if to == self.id() {
            return Err(TransferError::Refused(format!("node {to} already leads")));
        }
        let is_voter = m
            .membership_config
            .membership()
            .voter_ids()
            .any(|v| v == to);
        if !is_voter {
            return Err(TransferError::Refused(format!("node {to} is not a voter")));
        }
        // One change of the cluster's shape at a time: not while a learner is being added or
        // the voters change (`cluster.rs` holds the same lock).
        let _one_change = self.inner.membership_lock.lock().await;
        tracing::info!(id = self.id(), to, %reason, "transferring leadership");
        self.hand_leadership_to(to, reason, cool_down)
            .await
            .map_err(TransferError::Failed)?;
        tracing::info!(id = self.id(), to, "leadership transferred");
        Ok(to)
    }

    /// Hold proposals, stop campaigning, have `to` catch up and campaign; on success this node
    /// stays out of elections for `cool_down`.
    pub(crate) async fn hand_leadership_to(
        &self,
        to: NodeId,
        reason: String,
        cool_down: Duration,
    ) -> Result<(), String> {
        let (addr, term) = {
            let m = self.raft().metrics().borrow().clone();
            let addr = crate::types::member_addr(&m, to)
                .ok_or_else(|| format!("node {to} has no address"))?;
            (addr, m.current_term)
        };
        let hold = &self.inner.proposal_hold;
        hold.set(true);
        self.raft().runtime_config().elect(false);
        let outcome = self.ask_to_elect(to, &addr, term, reason).await;
        hold.set(false);
        match outcome {
            Ok(()) => {
                let raft = self.raft().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(cool_down).await;
                    raft.runtime_config().elect(true);
                });
                Ok(())
            }
            Err(e) => {
                self.raft().runtime_config().elect(true);
                Err(e)
            }
        }
    }

    /// Wait for `to` to have this node's whole log, ask it to campaign, and wait until it
    /// leads (proposals are held meanwhile).
    async fn ask_to_elect(
        &self,
        to: NodeId,
        addr: &str,
        term: u64,
        reason: String,
    ) -> Result<(), String> {
        if !self.inner.proposal_hold.drained(CATCH_UP_WAIT).await {
            return Err(format!(
                "{} proposal(s) already under way were not committed within {CATCH_UP_WAIT:?}",
                self.inner.proposal_hold.in_flight()
            ));
        }
        let mut metrics = self.raft().metrics();
        let still_leads = match tokio::time::timeout(
            CATCH_UP_WAIT,
            metrics.wait_for(|m| {
                let last = m.last_log_index;
                let matched = m
                    .replication
                    .as_ref()
                    .and_then(|r| r.get(&to).copied().flatten())
                    .map(|l| l.index);
                m.current_leader != Some(self.id()) || matched >= last
            }),
        )
        .await
        {
            Err(_) => {
                return Err(format!(
                    "node {to} did not catch up within {CATCH_UP_WAIT:?}"
                ))
            }
            Ok(Err(_)) => return Err("the raft core stopped".into()),
            Ok(Ok(m)) => m.current_leader == Some(self.id()),
        };
        if !still_leads {
            return Err("this node stopped leading meanwhile".into());
        }
        let request = ElectRequest {
            leader: self.id(),
            term,
            reason,
        };
        let answer: ElectResponse = self
            .inner
            .network
            .peer(to, addr)
            .call(wire::PATH_ELECT, &request, ELECTION_WAIT)
            .await
            .map_err(|e| format!("asking node {to} to campaign: {e}"))?;
        answer.map_err(|why| format!("node {to} declined: {why}"))?;
        let leader = match tokio::time::timeout(
            ELECTION_WAIT,
            metrics.wait_for(|m| m.current_term > term && m.current_leader.is_some()),
        )
        .await
        {
            Ok(Ok(m)) => m.current_leader,
            Ok(Err(_)) => return Err("the raft core stopped".into()),
            Err(_) => {
                return Err(format!(
                    "node {to} was not elected within {ELECTION_WAIT:?}"
                ))
            }
        };
        match leader {
            Some(l) if l == to => Ok(()),
            other => Err(format!("node {other:?} was elected instead of node {to}")),
        }
    }
}
