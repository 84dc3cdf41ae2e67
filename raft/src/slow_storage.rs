//! Slow storage: how this node judges its own log storage, and a leader on a slow disk handing
//! its leadership to a healthy voter.
//!
//! Why: with 200 ms added to every fsync of the leader's log, the cluster fell from 233 to 3.4
//! acknowledged writes/s while two healthy followers could have formed a quorum. openraft 0.9
//! writes the leader's entries before it replicates them, so every commit pays the leader's disk
//! at least once, and nothing in Raft moves leadership away from a leader that is alive but
//! slow: it keeps answering heartbeats.
//!
//! How it is judged ([`crate::storage_health`]): every node samples its log's synced writes
//! every [`SAMPLE_EVERY`]: the mean time of the writes that finished within the last
//! [`WINDOW`](crate::storage_health::WINDOW), and the age of a write still waiting (a write stuck
//! in fsync finishes no sample). Storage is slow when either reaches the bound,
//! `Tuning::slow_storage_handoff_ms` (`--slow-storage-handoff-ms`; 0 turns this off).
//!
//! How a leader hands off, once its storage has been slow for [`SLOW_FOR`]:
//! 1. it picks the voter whose log matches the most of its own;
//! 2. it holds new proposals ([`ProposalHold`](crate::storage_health::ProposalHold): client
//!    writes and timer proposals wait, at most
//!    [`HOLD_AT_MOST`](crate::storage_health::HOLD_AT_MOST)) until that voter has every entry it has, so the voter's log is at least
//!    as up to date as its own and a vote for the voter can be granted;
//! 3. it stops campaigning for [`COOL_DOWN`] (`runtime_config().elect(false)`), so it does not
//!    take leadership back at its next election timeout;
//! 4. it asks the voter, in a signed `/raft/elect` call, to campaign. openraft 0.9 has no
//!    leadership transfer, but a follower told to elect runs for the next term at once; the old
//!    leader grants it its vote (its own lease dates from its election, long past) and steps
//!    down on seeing the higher term; the third node may refuse (its lease from the old leader
//!    is fresh), but two votes are a majority of three.
//!
//! The asked voter refuses when its own storage is slow, when it is rejoining (it does not vote
//! yet) or when it is no voter. If leadership has not moved within [`ELECTION_WAIT`], the leader
//! campaigns again as before and tries once more after [`RETRY_AFTER`]. Nothing about safety
//! changes: the new leader is elected by Raft's ordinary vote; held writes go on once the hold
//! ends, on the new leader through the write layer's forwarding.

use crate::node::{NodeInner, RaftNode};
use crate::quorum::Lead;
use crate::storage_health::{successor, Sampler, COOL_DOWN, RETRY_AFTER, SAMPLE_EVERY, SLOW_FOR};
use crate::types::NodeId;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Instant;
use tokio::sync::watch;

/// Run on every node until `stop`: sample the storage, and hand leadership off when this node
/// leads on slow storage.
pub(crate) async fn watch(node: Weak<NodeInner>, stop: watch::Receiver<bool>) {
    let mut ticks = crate::util::Ticks::new(SAMPLE_EVERY, stop);
    let mut sampler = Sampler::default();
    let mut next_try = Instant::now();
    while ticks.next().await {
        let Some(inner) = node.upgrade() else { return };
        let node = RaftNode { inner };
        let stats = node.log_stats();
        let now = Instant::now();
        let slow_since = sampler.sample(
            stats.syncs.load(Ordering::Relaxed),
            stats.sync_micros.load(Ordering::Relaxed),
            stats.sync_latency.in_flight_for(),
            &node.inner.storage_health,
            now,
        );
        let Some(since) = slow_since else { continue };
        if now.duration_since(since) < SLOW_FOR || now < next_try {
            continue;
        }
        if !matches!(node.lead(), Lead::Leads { .. }) {
            continue;
        }
        next_try = match node.hand_off().await {
            Ok(to) => {
                node.inner
                    .storage_health
                    .handoffs
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    id = node.id(),
                    new_leader = to,
                    "slow storage: handed leadership to node {to}; this node stays out of \
                     elections for {} s",
                    COOL_DOWN.as_secs()
                );
                Instant::now() + COOL_DOWN
            }
            Err(why) => {
                tracing::warn!(
                    id = node.id(),
                    "slow storage: could not hand leadership off ({why}); trying again in {} s",
                    RETRY_AFTER.as_secs()
                );
                Instant::now() + RETRY_AFTER
            }
        };
    }
}

impl RaftNode {
    /// Hand this node's leadership to a healthy voter (see the module documentation); the new
    /// leader's id, or why not.
    async fn hand_off(&self) -> Result<NodeId, String> {
        let health = &self.inner.storage_health;
        let to = {
            let m = self.raft().metrics().borrow().clone();
            successor(&m, self.id()).ok_or("no other voter has this node's log")?
        };
        let reason = format!(
            "the raft log's synced writes on node {} take {:.1} ms on average (bound {} ms)",
            self.id(),
            health.mean_ms(),
            health.bound_micros() / 1000
        );
        tracing::warn!(
            id = self.id(),
            successor = to,
            "slow storage: {reason}; handing leadership to node {to}"
        );
        self.hand_leadership_to(to, reason, COOL_DOWN).await?;
        Ok(to)
    }
}
