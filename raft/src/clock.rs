//! The cluster's clock: the time the leader stamps into every entry it proposes.
//!
//! Why: the state machine's clock (`MetaState::clock`) is `max` of the times stamped into the
//! entries it applied, and leases, backoff and retention are decided against it. If every node
//! that proposed stamped its own wall clock, one write forwarded through a follower running 60 s
//! fast would move the cluster's clock 60 s ahead, and a 30 s lease would be taken over after one
//! second; afterwards the clock would stand still for the size of the jump.
//!
//! The leader alone stamps (`RaftNode::client_write` and the leader's timers re-stamp every
//! envelope, also those a follower forwarded), and what it stamps follows two rules:
//!
//! 1. **The evidence: the latest time a majority of the voters' clocks have reached.** The
//!    leader learns each peer's clock from the `Raftlane-Clock-Ms` header every Raft RPC answer
//!    carries (heartbeats every 250 ms keep the samples fresh; an election's vote answers give a
//!    new leader its first ones), takes its own wall clock as one more, and picks the
//!    majority-th largest. One node whose clock runs fast or steps, the leader included, cannot
//!    move it; a slow one cannot hold it back. Without fresh samples from a majority the leader
//!    cannot commit anyway, and it refuses to stamp ([`ClockError::NoMajority`]).
//! 2. **The time itself runs on the monotonic clock** ([`slew`]): it advances by the elapsed
//!    monotonic time, and the evidence only steers its rate, by at most 1 % faster or half
//!    slower. A wall-clock step, on any node, either way, inside or beyond the skew bound, can
//!    therefore never make the stamped time jump ahead (which cut leases short), run backwards
//!    or stand still (which froze every lease and backoff for the size of the step).
//!
//! Peer samples are kept against this node's monotonic clock, not its wall clock, so a step of
//! the leader's own wall clock leaves them valid (kept against the wall clock, they stayed
//! "fresh" for 5 s across a +25 s step and put the cluster's time 25 s ahead at once). A sample
//! whose round trip the wall clock and the monotonic clock measured differently was taken across
//! a step, and is thrown away ([`own`]).
//!
//! One skew bound (`Tuning::max_clock_skew_ms`) serves every path: signed node-to-node calls
//! whose timestamp is further off are refused as clock skew, a peer sample further off and a
//! forwarded proposal stamped further off the cluster's clock are logged as skew
//! (rate-limited) and counted.

mod own;
mod slew;
mod source;

pub use source::{now_ms, ManualTime, SystemTime, TimeSource, TEST_CLOCK_STEP_ENV};

use crate::types::{NodeId, Raft};
use own::{signed, OwnClock};
use raftlane_statemachine::{Command, Envelope};
use slew::Slew;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The header carrying the answering node's wall clock (ms since the Unix epoch) on every Raft
/// RPC answer.
pub const CLOCK_HEADER: &str = "raftlane-clock-ms";

/// A peer's sample older than this is not used: heartbeats refresh it every `heartbeat_ms`.
pub const SAMPLE_FRESH_FOR: Duration = Duration::from_secs(5);

/// How often one skew warning about the same node is logged at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The key under which warnings about this node's own wall-clock steps are rate-limited.
const OWN_STEP_WARNING: NodeId = NodeId::MAX;

/// Why the leader cannot stamp a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("no recent clock sample from a majority of the voters ({have} of {need}): the cluster's time is unknown")]
    NoMajority { have: usize, need: usize },
}

/// One peer's clock relative to this node's monotonic clock.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Its wall clock minus our monotonic clock, in ms.
    offset_ms: i64,
    /// Our monotonic time of the sample.
    at_mono: u64,
}

/// The time the leader stamps, and the term it stamps it in.
#[derive(Debug, Default)]
struct Stamping {
    term: Option<u64>,
    slew: Slew,
}

/// A node's view of the cluster's clock (see the module documentation).
#[derive(Debug)]
pub struct ClusterClock {
    self_id: NodeId,
    max_skew_ms: u64,
    source: Arc<dyn TimeSource>,
    own: Mutex<OwnClock>,
    samples: Mutex<HashMap<NodeId, Sample>>,
    stamping: Mutex<Stamping>,
    /// The last cluster's time this node knew (stamped or estimated), with the monotonic time
    /// it was known at: carried on by the monotonic clock while no majority can be heard.
    last_known: Mutex<Option<(u64, u64)>>,
    warned: Mutex<HashMap<NodeId, Instant>>,
    /// Proposals re-stamped from a time further than the bound off the cluster's clock.
    restamped_far: AtomicU64,
    /// Peer samples thrown away (taken across a step of this node's wall clock, or too slow).
    discarded: AtomicU64,
    /// Steps of this node's wall clock seen.
    steps: AtomicU64,
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
    /// The clock of node `self_id` on the machine's clocks, its wall clock `offset_ms` off (0
    /// outside in-process tests).
    pub fn new(self_id: NodeId, offset_ms: i64, max_skew_ms: u64) -> Self {
        Self::with_source(self_id, max_skew_ms, Arc::new(SystemTime::new(offset_ms)))
    }

    /// The clock of node `self_id` on the clocks of `source` (tests step them by hand).
    pub fn with_source(self_id: NodeId, max_skew_ms: u64, source: Arc<dyn TimeSource>) -> Self {
        Self {
            self_id,
            max_skew_ms,
            source,
            own: Mutex::new(OwnClock::default()),
            samples: Mutex::new(HashMap::new()),
            stamping: Mutex::new(Stamping::default()),
            last_known: Mutex::new(None),
            warned: Mutex::new(HashMap::new()),
            restamped_far: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            steps: AtomicU64::new(0),
        }
    }

    /// This node's wall clock (with its test offset). Every reading is remembered with the
    /// monotonic time it was taken at ([`own`]), which is how a step is seen.
    pub fn wall_ms(&self) -> u64 {
        self.reading().0
    }

    /// Read both clocks (wall, monotonic) and note a step of the wall clock.
    fn reading(&self) -> (u64, u64) {
        let mut own = self.own.lock().unwrap_or_else(|p| p.into_inner());
        let (wall, mono) = (self.source.wall_ms(), self.source.mono_ms());
        if let Some(step) = own.observe(wall, mono) {
            self.steps.fetch_add(1, Ordering::Relaxed);
            self.warn(OWN_STEP_WARNING, || {
                tracing::warn!(
                    step_ms = step.delta_ms,
                    "this node's wall clock stepped {} ms {}; the cluster's time follows the \
                     monotonic clock and is not moved by it",
                    step.delta_ms.unsigned_abs(),
                    if step.delta_ms > 0 { "forward" } else { "back" }
                )
            });
        }
        (wall, mono)
    }

    /// The skew bound (0: none).
    pub fn max_skew_ms(&self) -> u64 {
        self.max_skew_ms
    }

    /// Record `peer`'s clock as it answered: `peer_ms` read between our `sent_ms` and
    /// `received_ms` (both [`Self::wall_ms`]). The midpoint assumes the two legs took as long;
    /// a round trip across a step of our wall clock is thrown away.
    pub fn record_answer(&self, peer: NodeId, sent_ms: u64, peer_ms: u64, received_ms: u64) {
        let mono = self.source.mono_ms();
        let mid = {
            let own = self.own.lock().unwrap_or_else(|p| p.into_inner());
            own.midpoint(sent_ms, received_ms, mono)
        };
        match mid {
            Ok(mid) => self.record_mono(peer, signed(peer_ms, mid), mono),
            Err(why) => {
                self.discarded.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(peer, ?why, sent_ms, received_ms, "clock sample discarded");
            }
        }
    }

    /// Record `peer`'s clock from the timestamp of a call it made to us (one way: its offset
    /// appears smaller by the network delay). Followers learn the leader's clock this way.
    pub fn record_call(&self, peer: NodeId, peer_ms: u64) {
        let mono = self.source.mono_ms();
        self.record_mono(peer, signed(peer_ms, mono), mono);
    }

    /// Record `peer`'s clock `offset_ms` off this node's wall clock now (tests).
    #[cfg(test)]
    fn record(&self, peer: NodeId, offset_ms: i64) {
        let (wall, mono) = self.reading();
        self.record_mono(peer, offset_ms + signed(wall, mono), mono);
    }

    fn record_mono(&self, peer: NodeId, offset_ms: i64, at_mono: u64) {
        if peer == self.self_id {
            return;
        }
        let relative = self.own_offset().map(|own| offset_ms - own);
        if let Some(offset_ms) = relative {
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
        }
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.insert(peer, Sample { offset_ms, at_mono });
    }

    /// This node's wall clock minus its monotonic clock, as last read.
    fn own_offset(&self) -> Option<i64> {
        self.own.lock().unwrap_or_else(|p| p.into_inner()).offset()
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

    /// The fresh samples, for metrics and status: each peer's clock minus this node's.
    pub fn offsets(&self) -> Vec<PeerOffset> {
        let (wall, mono) = self.reading();
        self.offsets_at(signed(wall, mono), mono)
    }

    fn offsets_at(&self, own_offset: i64, mono: u64) -> Vec<PeerOffset> {
        let fresh = u64::try_from(SAMPLE_FRESH_FOR.as_millis()).unwrap_or(u64::MAX);
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<PeerOffset> = samples
            .iter()
            .map(|(node, s)| (node, s, mono.saturating_sub(s.at_mono)))
            .filter(|(_, _, age)| *age <= fresh)
            .map(|(node, s, age)| PeerOffset {
                node: *node,
                offset_ms: s.offset_ms.saturating_sub(own_offset),
                age: Duration::from_millis(age),
            })
            .collect();
        out.sort_by_key(|o| o.node);
        out
    }

    /// The offset from this node's clock to the cluster's evidence: of this node's own (0) and
    /// the fresh samples of the other `voters` within the skew bound, the largest offset that at
    /// least a majority of the voters' clocks have reached. A voter beyond the bound does not
    /// count: the others refuse its calls, it takes no part in the cluster (and two fast clocks,
    /// one of them cut off, must not outvote the rest).
    pub fn cluster_offset(&self, voters: &BTreeSet<NodeId>) -> Result<i64, ClockError> {
        let (wall, mono) = self.reading();
        self.majority_offset(voters, true, signed(wall, mono), mono)
    }

    fn majority_offset(
        &self,
        voters: &BTreeSet<NodeId>,
        within_bound: bool,
        own_offset: i64,
        mono: u64,
    ) -> Result<i64, ClockError> {
        // No voters known (a node whose membership is not loaded yet): no time to tell.
        let need = voters.len() / 2 + 1;
        let mut offsets: Vec<i64> = Vec::with_capacity(voters.len());
        if voters.contains(&self.self_id) {
            offsets.push(0);
        }
        for o in self.offsets_at(own_offset, mono) {
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

    /// The leader is about to stamp in `term`. A new term starts the stamped time afresh from
    /// the majority's evidence (see [`Self::cluster_now`]): what this node estimated while it
    /// followed, or stamped in an earlier term, does not carry over.
    pub fn leading(&self, term: u64) {
        let mut stamping = self.stamping.lock().unwrap_or_else(|p| p.into_inner());
        if stamping.term != Some(term) {
            *stamping = Stamping {
                term: Some(term),
                slew: Slew::default(),
            };
        }
    }

    /// The cluster's time now, for the leader to stamp into what it proposes: advanced by the
    /// monotonic clock since the last call, steered toward the majority's evidence
    /// ([`Self::cluster_offset`]) at a bounded rate ([`slew`]). Never runs backwards, never
    /// runs more than 1 % faster than real time, never stands still.
    pub fn cluster_now(&self, voters: &BTreeSet<NodeId>) -> Result<u64, ClockError> {
        let (wall, mono) = self.reading();
        let offset = self.majority_offset(voters, true, signed(wall, mono), mono)?;
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
        let target = wall.saturating_add_signed(offset);
        let now = {
            let mut stamping = self.stamping.lock().unwrap_or_else(|p| p.into_inner());
            stamping.slew.advance(mono, target)
        };
        self.know(mono, now);
        Ok(now)
    }

    /// Remember `time` as the cluster's time at `mono`.
    fn know(&self, mono: u64, time: u64) {
        *self.last_known.lock().unwrap_or_else(|p| p.into_inner()) = Some((mono, time));
    }

    /// How far this node's clock is off the cluster's, when that is beyond the bound: such a node
    /// cannot take part (the others refuse its signed calls and it refuses theirs), and says so
    /// in `/readyz` and in the answer to every write sent to it. `None` when within the bound
    /// or when too few peers answered lately to tell.
    pub fn own_skew(&self, voters: &BTreeSet<NodeId>) -> Option<String> {
        // Every sample counts here: to the others, this node is the one beyond the bound.
        let (wall, mono) = self.reading();
        let offset = self
            .majority_offset(voters, false, signed(wall, mono), mono)
            .ok()?;
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

    /// Best estimate of the cluster's time on a node that does not stamp (for reads that
    /// compare against lease ends; the leader reads [`Self::cluster_now`], the time it stamps):
    /// the majority's evidence where enough samples are fresh, else the last time this node
    /// knew carried on by the monotonic clock (a node cut off, for its clock or by a partition,
    /// does not fall back on a clock that may be the wrong one), else this node's wall clock.
    /// It does not move the stamped time: a follower's view (its own clock and the leader's, the
    /// lower of the two) must not carry over into the time it stamps once it leads.
    pub fn estimate_now(&self, voters: &BTreeSet<NodeId>) -> u64 {
        let (wall, mono) = self.reading();
        match self.majority_offset(voters, true, signed(wall, mono), mono) {
            Ok(offset) => {
                let now = wall.saturating_add_signed(offset);
                self.know(mono, now);
                now
            }
            Err(_) => {
                let known = *self.last_known.lock().unwrap_or_else(|p| p.into_inner());
                known.map_or(wall, |(at, time)| {
                    time.saturating_add(mono.saturating_sub(at))
                })
            }
        }
    }

    /// Note that a proposal stamped `proposed_ms` by `actor` is re-stamped `stamped_ms`; a
    /// difference beyond the bound is skew on the node that proposed it, logged and counted.
    /// A proposal stamped 0 was left for the leader to stamp: no clock was read, none is off.
    pub fn note_restamp(&self, actor: &str, proposed_ms: u64, stamped_ms: u64) {
        if proposed_ms == 0 {
            return;
        }
        let diff = signed(proposed_ms, stamped_ms);
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

    /// Whether openraft says this node leads, and the voters of its membership. (A leader cut
    /// off from its voters still says so: `RaftNode::is_leader` adds the quorum check.)
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

    /// Peer samples thrown away because their round trip spanned a step of this node's wall
    /// clock (or took too long to place the peer's reading).
    pub fn discarded_samples(&self) -> u64 {
        self.discarded.load(Ordering::Relaxed)
    }

    /// Steps of this node's wall clock seen so far.
    pub fn wall_steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
