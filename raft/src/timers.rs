//! Leader-only housekeeping: periodic `ReclaimExpired`, `ExpireRecords` and retention purges.
//!
//! Time-driven changes cannot happen inside the deterministic state machine (it has no clock),
//! so the leader proposes them as ordinary commands stamped with the cluster's time
//! ([`crate::clock`], not its own wall clock); every
//! replica then applies them identically. Followers skip their ticks: only a node whose metrics
//! say it is the leader, with a quorum behind it ([`crate::quorum`]), proposes, so there is one
//! proposal per tick cluster-wide (a stale leader that still believes it leads is refused by
//! Raft, or gives up after the write timeout, and is counted as a failure).
//!
//! Retention: the replicated config's `retention` section gives ages (`message_bodies_ms`,
//! `dead_letters_ms`, `state_ms`) and the node's `[tuning]` the deletion ages
//! (`message_retention_ms`, `dead_letter_retention_ms`: the config document's encoding is
//! pinned, so it cannot grow fields); the commands take an absolute cutoff time. On each
//! retention tick the leader reads the current config from its own state, reads its clock once,
//! and walks the [`RetentionPlan`] those ages give at that time ([`crate::retention`], the plan
//! an operator's purge walks too): each pass whose period is set, with `older_than = now -
//! period`, message passes page by page. A period that is `None` (or 0) means keep forever, and
//! nothing is proposed for it.

use crate::quorum::{Lead, QuorumCheck};
use crate::retention::{RetentionPlan, RetentionStep, StepEnd};
use crate::sm_adapter::StateHandle;
use crate::types::{NodeId, Raft};
use raftlane_statemachine::model::config::RetentionConfig;
use raftlane_statemachine::wire::command::ReclaimExpired;
use raftlane_statemachine::{Command, Envelope, Outcome, Response};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

pub use crate::retention::DeletePeriods;

/// The actor recorded for timer-proposed commands.
pub const TIMER_ACTOR: &str = "raftlane:timer";

/// Counters of the timer task.
#[derive(Debug, Default)]
pub struct TimerStats {
    /// Proposals committed (all kinds, retention purges included).
    pub proposals: AtomicU64,
    /// Proposals refused or failed (lost leadership, shutting down).
    pub failures: AtomicU64,
    /// Retention ticks handled while leading (whether or not anything was set to purge), so a
    /// test can wait for ticks to have happened instead of sleeping.
    pub retention_ticks: AtomicU64,
    /// Retention purge commands committed (each page of a paged pass counts once).
    pub retention_purges: AtomicU64,
    /// Items the committed retention purges reported: messages blanked or deleted, messages
    /// whose dead letters were blanked, state entries deleted (the one-time indexing walk's
    /// pages are not counted here).
    pub retention_purged: AtomicU64,
    /// Pages of paged retention passes committed (`RetentionPage`).
    pub retention_pages: AtomicU64,
}

/// What the timer task needs; built by the node at start.
pub(crate) struct Timers {
    pub(crate) raft: Raft,
    pub(crate) id: NodeId,
    /// The local state, to read the retention section of the replicated config.
    pub(crate) state: StateHandle,
    pub(crate) reclaim_ms: u64,
    pub(crate) expire_ms: u64,
    pub(crate) retention_ms: u64,
    /// The node's deletion ages (`[tuning]`).
    pub(crate) deletes: DeletePeriods,
    /// Set once a page of `RetentionPass::IndexEnded` answered that the walk is over, so later
    /// ticks no longer propose it (a restarted node proposes it once more, and learns again).
    pub(crate) index_walk_done: AtomicBool,
    pub(crate) stats: Arc<TimerStats>,
    /// The cluster's time: what every proposal is stamped with, and what retention cuts at.
    pub(crate) clock: Arc<crate::clock::ClusterClock>,
    /// Whether this node leads with a quorum behind it.
    pub(crate) quorum: Arc<QuorumCheck>,
    /// Held while this leader hands off for slow storage ([`crate::slow_storage`]).
    pub(crate) hold: Arc<crate::storage_health::ProposalHold>,
    /// How long one proposal may wait for its commit (a leader cut off from its voters would
    /// wait forever, and its timers with it).
    pub(crate) write_timeout: Duration,
}

fn interval(ms: u64) -> Option<Interval> {
    (ms > 0).then(|| {
        let period = Duration::from_millis(ms);
        let mut i = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        i.set_missed_tick_behavior(MissedTickBehavior::Delay);
        i
    })
}

async fn tick(i: &mut Option<Interval>) {
    match i {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The voters, if this node leads with a quorum; its stamping starts in the leader's term.
fn leading(t: &Timers) -> Option<BTreeSet<NodeId>> {
    let lead = {
        let m = t.raft.metrics();
        let m = m.borrow();
        t.quorum.judge(&m, t.id)
    };
    match lead {
        Lead::Leads { voters, term } => {
            t.clock.leading(term);
            Some(voters)
        }
        Lead::Lost { .. } | Lead::Follows => None,
    }
}

/// Propose `command` if this node leads, stamped with the cluster's time ([`crate::clock`]);
/// returns the entry's log index and the state machine's response once committed.
///
/// The envelope is built with the cluster's time itself: built with 0 and re-stamped, it was
/// counted and logged as a proposal ~1.8·10¹² ms behind the cluster's clock, every tick.
async fn propose(t: &Timers, command: Command) -> Option<(u64, Response)> {
    let _proposing = t.hold.pass().await;
    let voters = leading(t)?;
    let name = command.name();
    let now = match t.clock.cluster_now(&voters) {
        Ok(now) => now,
        Err(e) => {
            t.stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(command = name, error = %e, "timer proposal not stamped");
            return None;
        }
    };
    let mut envelope = Envelope::new(now, TIMER_ACTOR, command);
    envelope.set_format(t.state.log_format());
    match tokio::time::timeout(t.write_timeout, t.raft.client_write(envelope)).await {
        Ok(Ok(resp)) => {
            t.stats.proposals.fetch_add(1, Ordering::Relaxed);
            Some((resp.log_id.index, resp.data))
        }
        Ok(Err(e)) => {
            t.stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(command = name, error = %e, "timer proposal failed");
            None
        }
        Err(_) => {
            t.stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                command = name,
                timeout_ms = t.write_timeout.as_millis() as u64,
                "timer proposal not committed in time (is this leader cut off?)"
            );
            None
        }
    }
}

/// Read the retention section of the current config from the local state. On the blocking pool:
/// the read takes the state's lock, which a large apply batch may hold for a while.
async fn read_retention(state: &StateHandle) -> Result<RetentionConfig, String> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || {
        state
            .read(|sm| sm.read().config().map(|v| v.doc.retention))
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// One retention tick: on the leader only, propose the purges the current config asks for and
/// log what they purged.
///
/// The config is read from the leader's local state, which may trail the commit index by a few
/// entries; a retention change then takes effect one tick later, which is harmless.
async fn retention_tick(t: &Timers) {
    let Some(voters) = leading(t) else {
        return;
    };
    // Cut at the cluster's time, not this node's wall clock: a leader whose clock runs fast must
    // not purge what is not yet old.
    let now = match t.clock.cluster_now(&voters) {
        Ok(now) => now,
        Err(error) => {
            tracing::warn!(id = t.id, %error, "retention: the cluster's time is unknown; no purge this tick");
            return;
        }
    };
    t.stats.retention_ticks.fetch_add(1, Ordering::Relaxed);
    let retention = match read_retention(&t.state).await {
        Ok(r) => r,
        Err(error) => {
            tracing::warn!(id = t.id, %error, "retention: cannot read the config; no purge this tick");
            return;
        }
    };
    for step in RetentionPlan::from_config(&retention, t.deletes, now).steps() {
        if step.is_index_walk() && t.index_walk_done.load(Ordering::Relaxed) {
            continue;
        }
        if !retention_step(t, step).await {
            // Lost leadership (or shutting down): the next leader's tick takes over.
            return;
        }
    }
}

/// Walk one step of the tick's plan, counting and logging what it purged; `false` when a
/// proposal failed (this node no longer leads, or is shutting down).
async fn retention_step(t: &Timers, step: &RetentionStep) -> bool {
    // Debug form, e.g. `PurgeState { older_than: 1733140000000 }`: kind and cutoff.
    let what = format!("{:?}", step.command());
    let started = std::time::Instant::now();
    let run = step
        .run(|command| async move {
            let answer = propose(t, command).await.ok_or(())?;
            t.stats.retention_purges.fetch_add(1, Ordering::Relaxed);
            if let Ok(Outcome::RetentionPaged { .. }) = &answer.1 {
                t.stats.retention_pages.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, ()>(answer)
        })
        .await;
    match &run.end {
        StepEnd::Finished if step.is_index_walk() => {
            t.index_walk_done.store(true, Ordering::Relaxed);
        }
        StepEnd::Finished => {}
        StepEnd::Failed(()) => return false,
        StepEnd::Unexpected(other) => {
            tracing::warn!(id = t.id, command = %what, outcome = ?other, "retention purge: unexpected outcome");
        }
        StepEnd::Rejected(rejection) => {
            tracing::warn!(id = t.id, command = %what, %rejection, "retention purge rejected");
        }
    }
    t.stats
        .retention_purged
        .fetch_add(run.purged, Ordering::Relaxed);
    let (total, pages) = (run.purged, run.pages);
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if total > 0 {
        tracing::info!(id = t.id, command = %what, purged = total, pages, elapsed_ms, "retention purge");
    } else {
        tracing::debug!(id = t.id, command = %what, pages, elapsed_ms, "retention purge: nothing to purge");
    }
    true
}

/// Run the timers until `stop` turns true (or its sender is dropped).
pub(crate) async fn run_timers(t: Timers, mut stop: watch::Receiver<bool>) {
    let mut reclaim = interval(t.reclaim_ms);
    let mut expire = interval(t.expire_ms);
    let mut retention = interval(t.retention_ms);
    if reclaim.is_none() && expire.is_none() && retention.is_none() {
        return;
    }
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    return;
                }
            }
            _ = tick(&mut reclaim) => {
                let reclaim_all = Command::ReclaimExpired(ReclaimExpired { stage: None });
                propose(&t, reclaim_all).await;
            }
            _ = tick(&mut expire) => {
                propose(&t, Command::ExpireRecords).await;
            }
            _ = tick(&mut retention) => retention_tick(&t).await,
        }
    }
}
