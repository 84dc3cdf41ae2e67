//! Slow storage: how this node judges its own log storage, and a leader on a slow disk handing
//! its leadership to a healthy voter.
//!
//! Why: with 200 ms added to every fsync of the leader's log, the cluster fell from 233 to 3.4
//! acknowledged writes/s while two healthy followers could have formed a quorum. openraft 0.9
//! writes the leader's entries before it replicates them, so every commit pays the leader's disk
//! at least once, and nothing in Raft moves leadership away from a leader that is alive but
//! slow: it keeps answering heartbeats.
//!
//! How it is judged: every node samples its log's synced writes every [`SAMPLE_EVERY`]: the mean
//! time of the writes that finished within the last [`WINDOW`], and the age of a write still
//! waiting (a write stuck in fsync finishes no sample). Storage is slow when either reaches the
//! bound, `Tuning::slow_storage_handoff_ms` (`--slow-storage-handoff-ms`; 0 turns this off).
//!
//! How a leader hands off, once its storage has been slow for [`SLOW_FOR`]:
//! 1. it picks the voter whose log matches the most of its own;
//! 2. it holds new proposals ([`ProposalHold`]: client writes and timer proposals wait, at most
//!    [`HOLD_AT_MOST`]) until that voter has every entry it has, so the voter's log is at least
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
use crate::types::{NodeId, RaftMetrics};
use crate::wire;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Weak;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often storage is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// The span a mean covers.
pub const WINDOW: Duration = Duration::from_secs(3);
/// How long a leader's storage must stay slow before it hands off.
pub const SLOW_FOR: Duration = Duration::from_secs(3);
/// Longest a proposal waits behind a handoff (the waits below, and the election's).
pub const HOLD_AT_MOST: Duration = Duration::from_secs(13);
/// How long the handing leader waits for the proposals under way to be committed, and then
/// for the chosen voter to have its whole log (each wait).
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(5);
/// How long it waits for the new leader's election once asked.
pub const ELECTION_WAIT: Duration = Duration::from_secs(3);
/// How long a node that handed off stays out of elections.
pub const COOL_DOWN: Duration = Duration::from_secs(30);
/// The pause after a handoff that did not happen before the next try.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// The default bound: a synced write of the log taking this long on average is slow.
pub const DEFAULT_BOUND_MS: u64 = 100;

/// This node's storage, as last judged (shared by the watch, the Raft endpoint and `/metrics`).
#[derive(Debug, Default)]
pub struct StorageHealth {
    bound_micros: AtomicU64,
    slow: AtomicBool,
    /// The mean synced write in the last window, µs (0: no write finished in it).
    mean_micros: AtomicU64,
    /// Handoffs this node made as leader (leadership moved).
    pub handoffs: AtomicU64,
}

impl StorageHealth {
    pub fn new(bound_ms: u64) -> Self {
        let health = Self::default();
        health
            .bound_micros
            .store(bound_ms.saturating_mul(1000), Ordering::Relaxed);
        health
    }

    /// Whether the last judgement found this node's storage slow.
    pub fn is_slow(&self) -> bool {
        self.slow.load(Ordering::Relaxed)
    }

    /// The mean time of the log's synced writes over the last window, in ms.
    pub fn mean_ms(&self) -> f64 {
        self.mean_micros.load(Ordering::Relaxed) as f64 / 1000.0
    }

    fn bound_micros(&self) -> u64 {
        self.bound_micros.load(Ordering::Relaxed)
    }
}

/// One judgement from the samples of the last window.
#[derive(Debug, Default)]
pub(crate) struct Sampler {
    last_syncs: u64,
    last_micros: u64,
    /// `(writes, µs)` finished in each sample period, newest last.
    window: VecDeque<(u64, u64)>,
    slow_since: Option<Instant>,
}

impl Sampler {
    /// Take one sample of the cumulative counters (`syncs`, `sync_micros`) and the age of the
    /// write in flight; update `health`; answer since when storage has been slow, if it is.
    pub(crate) fn sample(
        &mut self,
        syncs: u64,
        sync_micros: u64,
        in_flight: Option<Duration>,
        health: &StorageHealth,
        now: Instant,
    ) -> Option<Instant> {
        let done = syncs.saturating_sub(self.last_syncs);
        let spent = sync_micros.saturating_sub(self.last_micros);
        self.last_syncs = syncs;
        self.last_micros = sync_micros;
        self.window.push_back((done, spent));
        let keep = (WINDOW.as_millis() / SAMPLE_EVERY.as_millis()).max(1) as usize;
        while self.window.len() > keep {
            self.window.pop_front();
        }
        let (count, micros) = self.window.iter().fold((0u64, 0u64), |(c, m), (dc, dm)| {
            (c + dc, m.saturating_add(*dm))
        });
        let mean = micros.checked_div(count).unwrap_or(0);
        health.mean_micros.store(mean, Ordering::Relaxed);
        let bound = health.bound_micros();
        let stuck = in_flight.is_some_and(|d| d.as_micros() >= u128::from(bound));
        let slow = bound > 0 && (mean >= bound || stuck);
        health.slow.store(slow, Ordering::Relaxed);
        if slow {
            Some(*self.slow_since.get_or_insert(now))
        } else {
            self.slow_since = None;
            None
        }
    }
}

/// New proposals wait while a handoff holds them ([`RaftNode::client_write`] and the leader's
/// timers pass through [`ProposalHold::pass`]), and the proposals already past it are counted:
/// the handoff waits for them too, since a write queued inside openraft when the hold began is
/// appended after it and would leave the successor's log behind this node's (its vote would
/// then be refused by log).
#[derive(Debug)]
pub struct ProposalHold {
    held: watch::Sender<bool>,
    in_flight: AtomicU64,
}

impl Default for ProposalHold {
    fn default() -> Self {
        Self {
            held: watch::channel(false).0,
            in_flight: AtomicU64::new(0),
        }
    }
}

/// A proposal past the hold, counted until it is dropped (answered or abandoned).
#[derive(Debug)]
pub struct Proposing<'a>(&'a ProposalHold);

impl Drop for Proposing<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ProposalHold {
    /// Wait while proposals are held, at most [`HOLD_AT_MOST`]; keep the answer while the
    /// proposal is under way.
    pub async fn pass(&self) -> Proposing<'_> {
        // Counted before the hold is read (and both sequentially consistent): a handoff that
        // sets the hold and then finds nothing in flight cannot miss a proposal that read the
        // hold just before it was set.
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let proposing = Proposing(self);
        let mut rx = self.held.subscribe();
        if !*rx.borrow_and_update() {
            return proposing;
        }
        drop(proposing);
        let _ = tokio::time::timeout(HOLD_AT_MOST, rx.wait_for(|held| !*held)).await;
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Proposing(self)
    }

    fn set(&self, held: bool) {
        self.held.send_replace(held);
    }

    /// Proposals past the hold and not yet answered.
    fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Wait until no proposal is under way, at most `within`; whether none is.
    async fn drained(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.in_flight() > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// The `/raft/elect` request: the leader asking a voter to campaign.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ElectRequest {
    /// The leader asking.
    pub leader: NodeId,
    /// Its term.
    pub term: u64,
    /// Why (for the voter's log).
    pub reason: String,
}

/// The answer: `Ok` once the voter has started its campaign, or why it will not.
pub type ElectResponse = Result<(), String>;

/// Run on every node until `stop`: sample the storage, and hand leadership off when this node
/// leads on slow storage.
pub(crate) async fn watch(node: Weak<NodeInner>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sampler = Sampler::default();
    let mut next_try = Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
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

/// The voter to hand leadership to: the one whose replicated log reaches furthest, `None` when
/// no other voter has any of it.
pub(crate) fn successor(m: &RaftMetrics, self_id: NodeId) -> Option<NodeId> {
    let voters: Vec<NodeId> = m.membership_config.membership().voter_ids().collect();
    let replication = m.replication.as_ref()?;
    voters
        .into_iter()
        .filter(|id| *id != self_id)
        .filter_map(|id| {
            let matched = replication.get(&id).copied().flatten()?;
            Some((matched.index, id))
        })
        .max()
        .map(|(_, id)| id)
}

impl RaftNode {
    /// Hand this node's leadership to a healthy voter (see the module documentation); the new
    /// leader's id, or why not.
    async fn hand_off(&self) -> Result<NodeId, String> {
        let health = &self.inner.storage_health;
        let (to, addr, term) = {
            let m = self.raft().metrics().borrow().clone();
            let to = successor(&m, self.id()).ok_or("no other voter has this node's log")?;
            let addr = crate::node::member_addr(&m, to)
                .ok_or_else(|| format!("node {to} has no address"))?;
            (to, addr, m.current_term)
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
        let hold = &self.inner.proposal_hold;
        hold.set(true);
        self.raft().runtime_config().elect(false);
        let outcome = self.ask_to_elect(to, &addr, term, reason).await;
        hold.set(false);
        match outcome {
            Ok(()) => {
                let raft = self.raft().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(COOL_DOWN).await;
                    raft.runtime_config().elect(true);
                });
                Ok(to)
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

/// Whether this node takes a leader's request to campaign; `Err` says why not.
pub(crate) fn may_campaign(
    health: &StorageHealth,
    m: &RaftMetrics,
    may_vote: bool,
    request: &ElectRequest,
) -> ElectResponse {
    if !may_vote {
        return Err("rejoining: this node does not vote until it has caught up".into());
    }
    if !m
        .membership_config
        .membership()
        .voter_ids()
        .any(|v| v == m.id)
    {
        return Err("this node is no voter".into());
    }
    if health.is_slow() {
        return Err(format!(
            "this node's storage is slow too ({:.1} ms per synced write)",
            health.mean_ms()
        ));
    }
    if m.current_term > request.term {
        return Err(format!(
            "the request is from term {}, this node is at term {}",
            request.term, m.current_term
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_when_the_mean_reaches_the_bound_and_not_before() {
        let health = StorageHealth::new(100);
        let mut s = Sampler::default();
        let t0 = Instant::now();
        // Fast writes: 10 per sample at 1 ms.
        assert_eq!(s.sample(10, 10_000, None, &health, t0), None);
        assert!(!health.is_slow());
        // Slow writes pull the window's mean over 100 ms.
        let t1 = t0 + SAMPLE_EVERY;
        assert_eq!(
            s.sample(12, 10_000 + 2 * 1_000_000, None, &health, t1),
            Some(t1)
        );
        assert!(health.is_slow());
        assert!(health.mean_ms() > 100.0);
        // It stays slow from the same instant.
        let t2 = t1 + SAMPLE_EVERY;
        assert_eq!(
            s.sample(14, 10_000 + 4 * 1_000_000, None, &health, t2),
            Some(t1)
        );
    }

    #[test]
    fn a_write_stuck_in_fsync_is_slow_though_none_finishes() {
        let health = StorageHealth::new(100);
        let mut s = Sampler::default();
        let t0 = Instant::now();
        assert_eq!(
            s.sample(0, 0, Some(Duration::from_millis(20)), &health, t0),
            None
        );
        assert_eq!(
            s.sample(0, 0, Some(Duration::from_millis(150)), &health, t0),
            Some(t0)
        );
    }

    #[test]
    fn old_samples_leave_the_window() {
        let health = StorageHealth::new(100);
        let mut s = Sampler::default();
        let mut t = Instant::now();
        s.sample(1, 1_000_000, None, &health, t);
        assert!(health.is_slow());
        let mut syncs = 1;
        for _ in 0..(WINDOW.as_millis() / SAMPLE_EVERY.as_millis()) {
            t += SAMPLE_EVERY;
            syncs += 100;
            s.sample(syncs, 1_000_000 + (syncs - 1) * 1_000, None, &health, t);
        }
        assert!(!health.is_slow(), "mean {} ms", health.mean_ms());
    }

    #[test]
    fn a_zero_bound_turns_judging_off() {
        let health = StorageHealth::new(0);
        let mut s = Sampler::default();
        let t = Instant::now();
        assert_eq!(
            s.sample(1, 10_000_000, Some(Duration::from_secs(9)), &health, t),
            None
        );
        assert!(!health.is_slow());
    }

    #[tokio::test]
    async fn a_hold_delays_proposals_until_released() {
        let hold = std::sync::Arc::new(ProposalHold::default());
        drop(hold.pass().await); // not held: passes at once
        assert_eq!(hold.in_flight(), 0);
        hold.set(true);
        let h = hold.clone();
        let waiter = tokio::spawn(async move {
            let started = Instant::now();
            let proposing = h.pass().await;
            let waited = started.elapsed();
            assert_eq!(h.in_flight(), 1);
            assert!(!h.drained(Duration::from_millis(30)).await);
            drop(proposing);
            assert!(h.drained(Duration::from_millis(30)).await);
            waited
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        hold.set(false);
        let waited = waiter.await.expect("joined");
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        assert!(waited < HOLD_AT_MOST);
    }
}
