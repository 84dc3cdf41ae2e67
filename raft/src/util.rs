//! Small helpers shared by the modules of this crate.

use std::any::Any;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

/// The clock of a node's periodic watches (learners, slow storage, the log format): each
/// [`Ticks::next`] waits for the next tick, and answers `false` once the node is stopping, so a
/// watch is `while ticks.next().await { ... }`.
pub(crate) struct Ticks {
    tick: Interval,
    stop: watch::Receiver<bool>,
}

impl Ticks {
    /// Every `every`, the first tick at once.
    pub(crate) fn new(every: Duration, stop: watch::Receiver<bool>) -> Self {
        Self::starting(tokio::time::interval(every), stop)
    }

    /// Every `every`, the first tick one period from now.
    pub(crate) fn after(every: Duration, stop: watch::Receiver<bool>) -> Self {
        let first = tokio::time::Instant::now() + every;
        Self::starting(tokio::time::interval_at(first, every), stop)
    }

    fn starting(mut tick: Interval, stop: watch::Receiver<bool>) -> Self {
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self { tick, stop }
    }

    /// Wait for the next tick; `false` once the stop signal changed (or its sender is gone).
    pub(crate) async fn next(&mut self) -> bool {
        tokio::select! {
            _ = self.tick.tick() => !*self.stop.borrow(),
            _ = self.stop.changed() => false,
        }
    }
}

/// Whole microseconds since `started` (saturating): for the time counters in `/metrics`, never
/// for anything that reaches the state.
pub(crate) fn micros_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Tells when every strong reference to a shared resource (a RocksDB handle) is gone.
///
/// openraft's state-machine worker and snapshot tasks outlive `Raft::shutdown` by a moment; a
/// restart in the same process must wait for them to drop the database before reopening it
/// (RocksDB holds a `LOCK` file per directory).
#[derive(Clone)]
pub(crate) struct ReleaseProbe(Weak<dyn Any + Send + Sync>);

impl ReleaseProbe {
    pub(crate) fn of<T: Any + Send + Sync>(arc: &Arc<T>) -> Self {
        let any: Arc<dyn Any + Send + Sync> = arc.clone();
        ReleaseProbe(Arc::downgrade(&any))
    }

    pub(crate) fn is_released(&self) -> bool {
        self.0.strong_count() == 0
    }

    /// Poll until released or `timeout` passes; returns whether it was released.
    pub(crate) async fn wait(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.is_released() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// The proposer's clock: milliseconds since the Unix epoch (0 if the clock is before 1970),
/// shifted by `RAFTLANE_CLOCK_OFFSET_MS` (signed, read once). The offset exists for the chaos
/// suite, which gives one node a skewed clock to show that leases and lane order do not depend
/// on nodes agreeing about time (the state machine clamps proposer time monotonic).
pub fn now_ms() -> u64 {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let offset = *OFFSET.get_or_init(|| {
        std::env::var("RAFTLANE_CLOCK_OFFSET_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    });
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
        .saturating_add_signed(offset)
}

/// Fsync a directory so that a rename or a new file inside it survives power loss.
pub(crate) fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
