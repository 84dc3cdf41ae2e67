//! How this node judges its own log storage ([`StorageHealth`], sampled by [`Sampler`]), the
//! hold a leader puts on new proposals while it hands off ([`ProposalHold`]), and the voter's
//! side of a handoff (`/raft/elect`: [`ElectRequest`], [`may_campaign`]). The handoff itself,
//! which needs the running node, is [`crate::slow_storage`]; its module documentation says why
//! and how.

use crate::types::{NodeId, RaftMetrics};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

    pub(crate) fn bound_micros(&self) -> u64 {
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

    pub(crate) fn set(&self, held: bool) {
        self.held.send_replace(held);
    }

    /// Proposals past the hold and not yet answered.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Wait until no proposal is under way, at most `within`; whether none is.
    pub(crate) async fn drained(&self, within: Duration) -> bool {
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
