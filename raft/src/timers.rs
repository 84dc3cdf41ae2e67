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
//! and runs each pass whose period is set with `older_than = now - period`. Message passes are
//! paged (`RetentionPage`, docs/SPEC.md §8.6): the leader proposes page after page, yielding in
//! between so other writes interleave, until a page answers that nothing older than the cutoff
//! is left. A period that is `None` (or 0) means keep forever, and nothing is proposed for it.

use crate::quorum::{Lead, QuorumCheck};
use crate::sm_adapter::StateHandle;
use crate::types::{NodeId, Raft};
use raftlane_statemachine::model::config::RetentionConfig;
use raftlane_statemachine::model::ids::Millis;
use raftlane_statemachine::wire::command::{
    PurgeState, ReclaimExpired, RetentionPage, RetentionPass, MAX_RETENTION_PAGE,
};
use raftlane_statemachine::{Command, Envelope, Outcome, Response};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

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

/// How long ended messages are kept before retention deletes them, in ms (0 = keep forever).
/// From the node's `[tuning]` (`message_retention_ms`, `dead_letter_retention_ms`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletePeriods {
    /// Messages that ended without error.
    pub messages_ms: u64,
    /// Messages that ended in error: dead letters and errors recorded by their producer.
    pub dead_letters_ms: u64,
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
/// returns the state machine's response once committed.
///
/// The envelope is built with the cluster's time itself: built with 0 and re-stamped, it was
/// counted and logged as a proposal ~1.8·10¹² ms behind the cluster's clock, every tick.
async fn propose(t: &Timers, command: Command) -> Option<Response> {
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
            Some(resp.data)
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

/// The first command of each retention pass the periods ask for at `now`: for every period
/// that is set and non-zero, the period turned into an absolute cutoff (`older_than = now -
/// period`, the form the state machine takes). Unset periods mean "keep forever" and yield
/// nothing. Message passes come as the first page of a `RetentionPage` (the tick repeats each
/// until it is done), led by the one-time walk that indexes messages ended before the index
/// existed; deletions before blanking, so nothing is blanked just before it is deleted.
pub fn retention_commands(
    retention: &RetentionConfig,
    deletes: DeletePeriods,
    now: Millis,
) -> Vec<Command> {
    let cutoff = |period: Option<u64>| period.filter(|p| *p > 0).map(|p| now.saturating_sub(p));
    let page = |pass, older_than| {
        Command::RetentionPage(RetentionPage {
            pass,
            older_than,
            limit: MAX_RETENTION_PAGE,
        })
    };
    let mut passes = Vec::new();
    if let Some(older_than) = cutoff(Some(deletes.messages_ms)) {
        passes.push(page(RetentionPass::DeleteEnded, older_than));
    }
    if let Some(older_than) = cutoff(Some(deletes.dead_letters_ms)) {
        passes.push(page(RetentionPass::DeleteFailed, older_than));
    }
    if let Some(older_than) = cutoff(retention.message_bodies_ms) {
        passes.push(page(RetentionPass::BlankBodies, older_than));
        passes.push(page(RetentionPass::BlankFailedBodies, older_than));
    }
    if let Some(older_than) = cutoff(retention.dead_letters_ms) {
        passes.push(page(RetentionPass::BlankDeadLetters, older_than));
    }
    let mut commands = Vec::new();
    if !passes.is_empty() {
        commands.push(page(RetentionPass::IndexEnded, 0));
        commands.extend(passes);
    }
    if let Some(older_than) = cutoff(retention.state_ms) {
        commands.push(Command::PurgeState(PurgeState { older_than }));
    }
    commands
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
    for command in retention_commands(&retention, t.deletes, now) {
        let index_walk = matches!(
            &command,
            Command::RetentionPage(RetentionPage {
                pass: RetentionPass::IndexEnded,
                ..
            })
        );
        if index_walk && t.index_walk_done.load(Ordering::Relaxed) {
            continue;
        }
        // Debug form, e.g. `PurgeState { older_than: 1733140000000 }`: kind and cutoff.
        let what = format!("{command:?}");
        let started = std::time::Instant::now();
        let mut total = 0u64;
        let mut pages = 0u64;
        loop {
            let Some(response) = propose(t, command.clone()).await else {
                // Lost leadership (or shutting down): the next leader's tick takes over.
                return;
            };
            t.stats.retention_purges.fetch_add(1, Ordering::Relaxed);
            let more = match response {
                Ok(Outcome::Count(n)) => {
                    total += n;
                    false
                }
                Ok(Outcome::RetentionPaged { purged, next, .. }) => {
                    pages += 1;
                    t.stats.retention_pages.fetch_add(1, Ordering::Relaxed);
                    if index_walk && next.is_none() {
                        t.index_walk_done.store(true, Ordering::Relaxed);
                    }
                    if !index_walk {
                        total += purged;
                    }
                    next.is_some()
                }
                Ok(other) => {
                    tracing::warn!(id = t.id, command = %what, outcome = ?other, "retention purge: unexpected outcome");
                    false
                }
                Err(rejection) => {
                    tracing::warn!(id = t.id, command = %what, %rejection, "retention purge rejected");
                    false
                }
            };
            if !more {
                break;
            }
            // Let other proposals in between pages: a purge is many small entries, not one.
            tokio::task::yield_now().await;
        }
        t.stats.retention_purged.fetch_add(total, Ordering::Relaxed);
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if total > 0 {
            tracing::info!(id = t.id, command = %what, purged = total, pages, elapsed_ms, "retention purge");
        } else {
            tracing::debug!(id = t.id, command = %what, pages, elapsed_ms, "retention purge: nothing to purge");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page(pass: RetentionPass, older_than: Millis) -> Command {
        Command::RetentionPage(RetentionPage {
            pass,
            older_than,
            limit: MAX_RETENTION_PAGE,
        })
    }

    #[test]
    fn retention_commands_follow_the_config() {
        let now = 1_000_000;
        let none = DeletePeriods::default();
        assert!(retention_commands(&RetentionConfig::default(), none, now).is_empty());
        // Zero counts as unset, like the interval settings.
        let zero = RetentionConfig {
            message_bodies_ms: Some(0),
            dead_letters_ms: Some(0),
            state_ms: Some(0),
            dedupe_window_ms: Some(5),
        };
        assert!(retention_commands(&zero, none, now).is_empty());
        let all = RetentionConfig {
            message_bodies_ms: Some(1_000),
            dead_letters_ms: Some(20_000),
            state_ms: Some(300_000),
            dedupe_window_ms: None,
        };
        let deletes = DeletePeriods {
            messages_ms: 100_000,
            dead_letters_ms: 200_000,
        };
        assert_eq!(
            retention_commands(&all, deletes, now),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::DeleteEnded, 900_000),
                page(RetentionPass::DeleteFailed, 800_000),
                page(RetentionPass::BlankBodies, 999_000),
                page(RetentionPass::BlankFailedBodies, 999_000),
                page(RetentionPass::BlankDeadLetters, 980_000),
                Command::PurgeState(PurgeState {
                    older_than: 700_000
                }),
            ]
        );
        let only_state = RetentionConfig {
            state_ms: Some(2 * now),
            ..RetentionConfig::default()
        };
        // A period longer than the clock saturates at 0: nothing is older than that. No
        // message pass, so no indexing walk either.
        assert_eq!(
            retention_commands(&only_state, none, now),
            vec![Command::PurgeState(PurgeState { older_than: 0 })]
        );
        let only_deletes = DeletePeriods {
            messages_ms: 1_000,
            dead_letters_ms: 0,
        };
        assert_eq!(
            retention_commands(&RetentionConfig::default(), only_deletes, now),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::DeleteEnded, 999_000),
            ]
        );
    }
}
