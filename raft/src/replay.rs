//! Progress of the replay after a restart.
//!
//! The state's RocksDB has no WAL of its own, so a node that crashed comes back at its last
//! memtable flush and openraft re-applies the committed entries after it (up to 64 MiB of state
//! writes, tens of thousands of entries). That happens in the background while the node rejoins,
//! and without a word it looks like a node that is stuck. So while the state is behind the log
//! it had at start-up, a line every few seconds says how far the replay has come, at what rate,
//! and how long it has left; a last line says when it is done.

use crate::types::{NodeId, Raft};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often a replay in progress is reported.
const EVERY: Duration = Duration::from_secs(5);
/// A replay that has not moved for this long is no longer reported (the log's tail beyond the
/// commit index may never be applied: a new leader can truncate it).
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// What one look at `last_applied` says about the replay.
#[derive(Debug, PartialEq)]
pub(crate) enum Progress {
    /// The state has reached the log's last index at start-up.
    Done,
    /// Applied entries since the last look, and what is left.
    Advancing {
        applied: u64,
        left: u64,
        percent: u64,
        per_sec: u64,
        eta_secs: Option<u64>,
    },
    /// Nothing applied since the last look.
    Stalled,
}

/// The replay from `from` (applied at start-up) to `target` (the log's last index then).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Replay {
    pub from: u64,
    pub target: u64,
}

impl Replay {
    /// Judge `applied` now against `before`, seen `elapsed` earlier.
    pub(crate) fn progress(&self, before: u64, applied: u64, elapsed: Duration) -> Progress {
        if applied >= self.target {
            return Progress::Done;
        }
        if applied <= before {
            return Progress::Stalled;
        }
        let total = self.target.saturating_sub(self.from).max(1);
        let done = applied.saturating_sub(self.from);
        let left = self.target - applied;
        let millis = elapsed.as_millis().max(1) as u64;
        let per_sec = (applied - before).saturating_mul(1000) / millis;
        Progress::Advancing {
            applied,
            left,
            percent: done.saturating_mul(100) / total,
            per_sec,
            eta_secs: left.checked_div(per_sec),
        }
    }
}

/// Report the replay of `replay` on node `id` until it is done, gives up or the node stops.
pub(crate) async fn report_replay(
    raft: Raft,
    id: NodeId,
    replay: Replay,
    mut stop: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let mut before = replay.from;
    let mut seen = Instant::now();
    let mut last_move = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = stop.changed() => return,
        }
        // Copy the value out at once: a metrics guard must not be held across an await.
        let applied = raft.metrics().borrow().last_applied.map_or(0, |l| l.index);
        match replay.progress(before, applied, seen.elapsed()) {
            Progress::Done => {
                tracing::info!(
                    id,
                    applied,
                    replayed = applied.saturating_sub(replay.from),
                    secs = started.elapsed().as_secs(),
                    "replay done: the state has caught up with the log it had at start-up"
                );
                return;
            }
            Progress::Advancing {
                applied,
                left,
                percent,
                per_sec,
                eta_secs,
            } => {
                tracing::info!(
                    id,
                    applied,
                    target = replay.target,
                    left,
                    percent,
                    entries_per_sec = per_sec,
                    eta_secs,
                    "replaying the log"
                );
                last_move = Instant::now();
            }
            Progress::Stalled => {
                if last_move.elapsed() >= GIVE_UP_AFTER {
                    tracing::info!(
                        id,
                        applied,
                        target = replay.target,
                        "replay not reported any longer: nothing applied for 10 minutes (the \
                         log's uncommitted tail may have been replaced by the leader)"
                    );
                    return;
                }
            }
        }
        before = applied.max(before);
        seen = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLAY: Replay = Replay {
        from: 1_000,
        target: 11_000,
    };

    #[test]
    fn progress_reports_share_rate_and_time_left() {
        assert_eq!(
            REPLAY.progress(1_000, 3_500, Duration::from_secs(5)),
            Progress::Advancing {
                applied: 3_500,
                left: 7_500,
                percent: 25,
                per_sec: 500,
                eta_secs: Some(15),
            }
        );
    }

    #[test]
    fn reaching_the_target_is_done_and_no_move_is_a_stall() {
        assert_eq!(
            REPLAY.progress(9_000, 11_000, Duration::from_secs(5)),
            Progress::Done
        );
        assert_eq!(
            REPLAY.progress(9_000, 12_000, Duration::from_secs(5)),
            Progress::Done
        );
        assert_eq!(
            REPLAY.progress(4_000, 4_000, Duration::from_secs(5)),
            Progress::Stalled
        );
    }

    #[test]
    fn a_very_slow_replay_has_no_time_left_estimate() {
        // One entry in ten seconds: a rate of 0 per second, so no estimate (and no division).
        match REPLAY.progress(2_000, 2_001, Duration::from_secs(10)) {
            Progress::Advancing {
                per_sec, eta_secs, ..
            } => {
                assert_eq!(per_sec, 0);
                assert_eq!(eta_secs, None);
            }
            other => panic!("expected progress, got {other:?}"),
        }
    }
}
