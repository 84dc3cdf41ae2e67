//! Leader-only housekeeping: periodic `ReclaimExpired` and `ExpireRecords` proposals.
//!
//! Time-driven changes cannot happen inside the deterministic state machine (it has no clock),
//! so the leader proposes them as ordinary commands stamped with its wall clock (`now_ms`); every
//! replica then applies them identically. Followers skip their ticks: only a node whose metrics
//! say it is the leader proposes, so there is one proposal per tick cluster-wide (a stale leader
//! that still believes it leads is refused by Raft and counted as a failure).

use crate::types::{NodeId, Raft};
use crate::util::now_ms;
use openraft::ServerState;
use raftlane_statemachine::command::{Command, Envelope};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

/// The actor recorded for timer-proposed commands.
pub const TIMER_ACTOR: &str = "raftlane:timer";

/// Counters of the timer task.
#[derive(Debug, Default)]
pub struct TimerStats {
    /// Proposals committed.
    pub proposals: AtomicU64,
    /// Proposals refused or failed (lost leadership, shutting down).
    pub failures: AtomicU64,
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

/// Whether this node currently leads (read from metrics; the guard is dropped at once, never
/// held across an await).
fn is_leader(raft: &Raft, id: NodeId) -> bool {
    let m = raft.metrics();
    let m = m.borrow();
    m.state == ServerState::Leader && m.current_leader == Some(id)
}

async fn propose(raft: &Raft, id: NodeId, command: Command, stats: &TimerStats) {
    if !is_leader(raft, id) {
        return;
    }
    let name = command.name();
    match raft
        .client_write(Envelope::new(now_ms(), TIMER_ACTOR, command))
        .await
    {
        Ok(_) => {
            stats.proposals.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(command = name, error = %e, "timer proposal failed");
        }
    }
}

/// Run the timers until `stop` turns true (or its sender is dropped).
pub(crate) async fn run_timers(
    raft: Raft,
    id: NodeId,
    reclaim_ms: u64,
    expire_ms: u64,
    stats: Arc<TimerStats>,
    mut stop: watch::Receiver<bool>,
) {
    let mut reclaim = interval(reclaim_ms);
    let mut expire = interval(expire_ms);
    if reclaim.is_none() && expire.is_none() {
        return;
    }
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    return;
                }
            }
            _ = tick(&mut reclaim) => propose(&raft, id, Command::ReclaimExpired { stage: None }, &stats).await,
            _ = tick(&mut expire) => propose(&raft, id, Command::ExpireRecords, &stats).await,
        }
    }
}
