//! The cluster's clock: the time the leader stamps into every entry it proposes.
//!
//! Why: the state machine's clock (`MetaState::clock`) is `max` of the times stamped into the
//! entries it applied, and leases, backoff and retention are decided against it. Until
//! 2026-12-06 every node that proposed stamped its own wall clock: one write forwarded through
//! a follower running 60 s fast moved the cluster's clock 60 s ahead, and a 30 s lease was taken
//! over after one second; afterwards the clock stood still for the size of the jump.
//!
//! Now the leader alone stamps (`RaftNode::client_write` and the leader's timers re-stamp every
//! envelope, also those a follower forwarded), and the time it stamps is not its own wall clock
//! but **the latest time a majority of the voters' clocks have reached**: the leader learns each
//! peer's clock from the `Raftlane-Clock-Ms` header every Raft RPC answer carries (heartbeats
//! every 250 ms keep the samples fresh; an election's vote answers give a new leader its first
//! ones), takes its own clock as offset 0, sorts the offsets and picks the majority-th largest.
//! One node whose clock runs fast, the leader included, cannot move the cluster's clock ahead of
//! the others; a slow one cannot hold it back. Without fresh samples from a majority the leader
//! cannot commit anyway, and it refuses to stamp ([`ClockError::NoMajority`]).
//!
//! One skew bound (`Tuning::max_clock_skew_ms`) serves every path: signed node-to-node calls
//! whose timestamp is further off are refused as clock skew, a peer sample further off and a
//! forwarded proposal stamped further off the cluster's clock are logged as skew
//! (rate-limited) and counted.

use crate::types::{NodeId, Raft};
use raftlane_statemachine::{Command, Envelope};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The header carrying the answering node's wall clock (ms since the Unix epoch) on every Raft
/// RPC answer.
pub const CLOCK_HEADER: &str = "raftlane-clock-ms";

/// A peer's sample older than this is not used: heartbeats refresh it every `heartbeat_ms`.
pub const SAMPLE_FRESH_FOR: Duration = Duration::from_secs(5);

/// How often one skew warning about the same node is logged at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Why the leader cannot stamp a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("no recent clock sample from a majority of the voters ({have} of {need}): the cluster's time is unknown")]
    NoMajority { have: usize, need: usize },
}

/// One peer's clock relative to ours.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Its clock minus ours, in ms.
    offset_ms: i64,
    at: Instant,
}

/// A node's view of the cluster's clock (see the module documentation).
#[derive(Debug)]
pub struct ClusterClock {
    self_id: NodeId,
    /// Added to [`crate::now_ms`]: lets an in-process test give one node a skewed clock.
    offset_ms: i64,
    max_skew_ms: u64,
    samples: Mutex<HashMap<NodeId, Sample>>,
    warned: Mutex<HashMap<NodeId, Instant>>,
    /// Proposals re-stamped from a time further than the bound off the cluster's clock.
    restamped_far: AtomicU64,
}

/// What [`ClusterClock::offsets`] reports about one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerOffset {
    pub node: NodeId,
    /// The peer's clock minus this node's, in ms.
    pub offset_ms: i64,
    pub age: Duration,
}

impl ClusterClock {
    pub fn new(self_id: NodeId, offset_ms: i64, max_skew_ms: u64) -> Self {
        Self {
            self_id,
            offset_ms,
            max_skew_ms,
            samples: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashMap::new()),
            restamped_far: AtomicU64::new(0),
        }
    }

    /// This node's wall clock (with its test offset).
    pub fn wall_ms(&self) -> u64 {
        crate::now_ms().saturating_add_signed(self.offset_ms)
    }

    /// The skew bound (0: none).
    pub fn max_skew_ms(&self) -> u64 {
        self.max_skew_ms
    }

    /// Record `peer`'s clock as it answered: `peer_ms` read between our `sent_ms` and
    /// `received_ms` (both [`Self::wall_ms`]). The midpoint assumes the two legs took as long.
    pub fn record_answer(&self, peer: NodeId, sent_ms: u64, peer_ms: u64, received_ms: u64) {
        let mid = sent_ms / 2 + received_ms / 2 + (sent_ms % 2 + received_ms % 2) / 2;
        self.record(peer, signed_diff(peer_ms, mid));
    }

    /// Record `peer`'s clock from the timestamp of a call it made to us (one way: its offset
    /// appears smaller by the network delay). Followers learn the leader's clock this way.
    pub fn record_call(&self, peer: NodeId, peer_ms: u64) {
        self.record(peer, signed_diff(peer_ms, self.wall_ms()));
    }

    fn record(&self, peer: NodeId, offset_ms: i64) {
        if peer == self.self_id {
            return;
        }
        if self.max_skew_ms > 0 && offset_ms.unsigned_abs() > self.max_skew_ms {
            self.warn(peer, || {
                tracing::warn!(
                    peer,
                    offset_ms,
                    bound_ms = self.max_skew_ms,
                    "clock skew: node {peer}'s clock is {} ms {} this node's, beyond the bound of {} ms; \
                     calls between the two are refused until the clocks agree",
                    offset_ms.unsigned_abs(),
                    if offset_ms > 0 { "ahead of" } else { "behind" },
                    self.max_skew_ms
                )
            });
        }
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.insert(
            peer,
            Sample {
                offset_ms,
                at: Instant::now(),
            },
        );
    }

    /// Log with `log` unless a warning about `node` was logged within [`WARN_EVERY`].
    fn warn(&self, node: NodeId, log: impl FnOnce()) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if warned
            .get(&node)
            .is_none_or(|last| now.duration_since(*last) >= WARN_EVERY)
        {
            warned.insert(node, now);
            log();
        }
    }

    /// The fresh samples, for metrics and status.
    pub fn offsets(&self) -> Vec<PeerOffset> {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<PeerOffset> = samples
            .iter()
            .map(|(node, s)| PeerOffset {
                node: *node,
                offset_ms: s.offset_ms,
                age: s.at.elapsed(),
            })
            .filter(|o| o.age <= SAMPLE_FRESH_FOR)
            .collect();
        out.sort_by_key(|o| o.node);
        out
    }

    /// The offset from this node's clock to the cluster's: of this node's own (0) and the fresh
    /// samples of the other `voters` within the skew bound, the largest offset that at least a
    /// majority of the voters' clocks have reached. A voter beyond the bound does not count: the
    /// others refuse its calls, it takes no part in the cluster (and two fast clocks, one of them
    /// cut off, must not outvote the rest).
    pub fn cluster_offset(&self, voters: &BTreeSet<NodeId>) -> Result<i64, ClockError> {
        self.majority_offset(voters, true)
    }

    fn majority_offset(
        &self,
        voters: &BTreeSet<NodeId>,
        within_bound: bool,
    ) -> Result<i64, ClockError> {
        let need = voters.len() / 2 + 1;
        let mut offsets: Vec<i64> = Vec::with_capacity(voters.len());
        if voters.contains(&self.self_id) || voters.is_empty() {
            offsets.push(0);
        }
        for o in self.offsets() {
            let counted = !within_bound
                || self.max_skew_ms == 0
                || o.offset_ms.unsigned_abs() <= self.max_skew_ms;
            if voters.contains(&o.node) && counted {
                offsets.push(o.offset_ms);
            }
        }
        if offsets.len() < need {
            return Err(ClockError::NoMajority {
                have: offsets.len(),
                need,
            });
        }
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        Ok(offsets[need - 1])
    }

    /// The cluster's time now, for the leader to stamp into what it proposes.
    pub fn cluster_now(&self, voters: &BTreeSet<NodeId>) -> Result<u64, ClockError> {
        let offset = self.cluster_offset(voters)?;
        if self.max_skew_ms > 0 && offset.unsigned_abs() > self.max_skew_ms {
            self.warn(self.self_id, || {
                tracing::warn!(
                    offset_ms = -offset,
                    bound_ms = self.max_skew_ms,
                    "clock skew: this node's clock is {} ms {} the cluster's (bound {} ms); \
                     stamping the cluster's time",
                    offset.unsigned_abs(),
                    if offset < 0 { "ahead of" } else { "behind" },
                    self.max_skew_ms
                )
            });
        }
        Ok(self.wall_ms().saturating_add_signed(offset))
    }

    /// How far this node's clock is off the cluster's, when that is beyond the bound: such a node
    /// cannot take part (the others refuse its signed calls and it refuses theirs), and says so
    /// in `/readyz` and in the answer to every write sent to it. `None` when within the bound
    /// or when too few peers answered lately to tell.
    pub fn own_skew(&self, voters: &BTreeSet<NodeId>) -> Option<String> {
        // Every sample counts here: to the others, this node is the one beyond the bound.
        let offset = self.majority_offset(voters, false).ok()?;
        (self.max_skew_ms > 0 && offset.unsigned_abs() > self.max_skew_ms).then(|| {
            format!(
                "clock skew: this node's clock is {} ms {} the cluster's (the time a majority of the \
                 voters' clocks agree on), beyond the bound of {} ms; fix its clock (NTP)",
                offset.unsigned_abs(),
                if offset < 0 { "ahead of" } else { "behind" },
                self.max_skew_ms
            )
        })
    }

    /// Best estimate of the cluster's time on any node (for reads that compare against lease
    /// ends): the cluster's time where enough samples are fresh, else this node's wall clock.
    pub fn estimate_now(&self, voters: &BTreeSet<NodeId>) -> u64 {
        self.cluster_now(voters).unwrap_or_else(|_| self.wall_ms())
    }

    /// Note that a proposal stamped `proposed_ms` by `actor` is re-stamped `stamped_ms`; a
    /// difference beyond the bound is skew on the node that proposed it, logged and counted.
    pub fn note_restamp(&self, actor: &str, proposed_ms: u64, stamped_ms: u64) {
        let diff = signed_diff(proposed_ms, stamped_ms);
        if self.max_skew_ms > 0 && diff.unsigned_abs() > self.max_skew_ms {
            self.restamped_far.fetch_add(1, Ordering::Relaxed);
            // Node 0 stands for "some proposer": the actor names who, the counter how often.
            self.warn(0, || {
                tracing::warn!(
                    actor,
                    skew_ms = diff,
                    bound_ms = self.max_skew_ms,
                    "clock skew: a proposal was stamped {} ms {} the cluster's clock by the node \
                     that received it; re-stamped with the cluster's time",
                    diff.unsigned_abs(),
                    if diff > 0 { "ahead of" } else { "behind" }
                )
            });
        }
    }

    /// Re-stamp `envelope`, and every envelope a batch carries, with the cluster's time: called
    /// by the leader on everything it proposes, whichever node stamped it first.
    pub fn stamp(
        &self,
        voters: &BTreeSet<NodeId>,
        envelope: &mut Envelope,
    ) -> Result<(), ClockError> {
        let now = self.cluster_now(voters)?;
        if let Command::Batch(batch) = &mut envelope.command {
            for inner in &mut batch.commands {
                self.note_restamp(&inner.actor, inner.now_ms, now);
                inner.now_ms = now;
            }
        } else {
            self.note_restamp(&envelope.actor, envelope.now_ms, now);
        }
        envelope.now_ms = now;
        Ok(())
    }

    /// Whether this node leads, and the voters of its membership: only a leader stamps.
    pub fn leader_voters(raft: &Raft, self_id: NodeId) -> Option<BTreeSet<NodeId>> {
        let m = raft.metrics();
        let m = m.borrow();
        (m.state == openraft::ServerState::Leader && m.current_leader == Some(self_id))
            .then(|| m.membership_config.membership().voter_ids().collect())
    }

    /// The voters of the membership this node knows.
    pub fn voters(raft: &Raft) -> BTreeSet<NodeId> {
        raft.metrics()
            .borrow()
            .membership_config
            .membership()
            .voter_ids()
            .collect()
    }

    /// Proposals re-stamped from a time beyond the bound (see [`Self::note_restamp`]).
    pub fn restamped_far(&self) -> u64 {
        self.restamped_far.load(Ordering::Relaxed)
    }
}

/// `a - b` as a signed number of ms (saturating).
fn signed_diff(a: u64, b: u64) -> i64 {
    if a >= b {
        i64::try_from(a - b).unwrap_or(i64::MAX)
    } else {
        i64::try_from(b - a).map_or(i64::MIN, |d| -d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voters(ids: &[NodeId]) -> BTreeSet<NodeId> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_fast_leader_stamps_the_majoritys_time() {
        // The leader (1) runs 20 s fast: both followers are 20 s behind it.
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, -20_000);
        clock.record(3, -19_990);
        assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(-19_990));
    }

    #[test]
    fn a_fast_follower_cannot_move_the_time() {
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, 20_000);
        clock.record(3, 5);
        assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(5));
        // With the third node silent, the two remaining clocks must both have reached the time.
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, 20_000);
        assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
        // A node an hour fast is cut off: with only it answering, there is no majority.
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, 3_600_000);
        assert!(clock.cluster_offset(&voters(&[1, 2, 3])).is_err());
    }

    #[test]
    fn a_node_beyond_the_bound_does_not_count() {
        // Node 2 runs 20 s fast (inside the bound), node 3 60 s fast (cut off): the time is
        // node 1's and node 2's lower one, not the 20 s the two fast clocks agree on.
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, 20_000);
        clock.record(3, 60_000);
        assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
    }

    #[test]
    fn a_slow_node_cannot_hold_the_time_back() {
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, -60_000);
        clock.record(3, 2);
        assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
    }

    #[test]
    fn without_a_majority_of_samples_there_is_no_time() {
        let clock = ClusterClock::new(1, 0, 30_000);
        assert_eq!(
            clock.cluster_offset(&voters(&[1, 2, 3])),
            Err(ClockError::NoMajority { have: 1, need: 2 })
        );
        // A single voter is its own majority; learners' samples do not count.
        assert_eq!(clock.cluster_offset(&voters(&[1])), Ok(0));
        clock.record(4, 10_000);
        assert!(clock.cluster_offset(&voters(&[1, 2, 3])).is_err());
    }

    #[test]
    fn a_node_beyond_the_bound_knows_it() {
        // Node 3 runs an hour fast: both others answer an hour behind it.
        let clock = ClusterClock::new(3, 0, 30_000);
        clock.record(1, -3_600_000);
        clock.record(2, -3_599_990);
        let skew = clock.own_skew(&voters(&[1, 2, 3])).expect("skew reported");
        assert!(skew.contains("3599990 ms ahead of"), "{skew}");
        // Node 1 (honest) sees node 3 fast but itself in agreement with node 2.
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record(2, 10);
        clock.record(3, 3_600_000);
        assert_eq!(clock.own_skew(&voters(&[1, 2, 3])), None);
    }

    #[test]
    fn an_answer_is_placed_at_the_middle_of_its_round_trip() {
        let clock = ClusterClock::new(1, 0, 30_000);
        clock.record_answer(2, 1_000, 61_010, 1_020);
        assert_eq!(clock.offsets()[0].offset_ms, 60_000);
        clock.note_restamp("a", 100_000, 10_000);
        clock.note_restamp("a", 10_001, 10_000);
        assert_eq!(clock.restamped_far(), 1);
    }
}
