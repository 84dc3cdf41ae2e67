//! How long the raft log's synced writes take: a histogram for `/metrics`, a WARN line when one
//! is slow, and (tests only) an added delay.
//!
//! Why: 200 ms added to each fsync on the leader took the cluster from 233 to 3.4
//! acknowledged writes/s with nothing reporting slow storage; only the mean
//! (`raftlane_log_sync_seconds_total` over `raftlane_log_syncs_total`) hinted at it. Each
//! synced write now lands in a bucket of `raftlane_log_sync_latency_seconds` (a Prometheus
//! histogram), and a write slower than [`SLOW_SYNC`] is logged at WARN (at most every
//! [`WARN_EVERY`], with how many were slow since).
//!
//! The test hook: with `RAFTLANE_TEST_FSYNC_DELAY_FILE` naming a file, every synced write of the
//! log first sleeps the milliseconds the file holds (re-read every 100 ms; absent or unreadable:
//! no delay). The chaos suite slows one node's disk this way.

use crate::test_knob::TestKnob;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The test-only env var naming the delay file (see the module documentation).
pub const TEST_FSYNC_DELAY_ENV: &str = "RAFTLANE_TEST_FSYNC_DELAY_FILE";

/// A synced write slower than this is logged.
pub const SLOW_SYNC: Duration = Duration::from_millis(100);
/// At most one slow-write line per this long.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Upper bounds of the histogram's buckets, in microseconds (1 ms to 5 s; `+Inf` beyond).
pub const BUCKETS_MICROS: [u64; 9] = [
    1_000, 5_000, 10_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 5_000_000,
];

/// A latency histogram over [`BUCKETS_MICROS`], with the sum and count Prometheus wants.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Samples at or below each bound of [`BUCKETS_MICROS`] (not cumulative here).
    buckets: [AtomicU64; BUCKETS_MICROS.len()],
    /// Samples above the last bound.
    over: AtomicU64,
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl LatencyHistogram {
    pub fn record(&self, micros: u64) {
        match BUCKETS_MICROS.iter().position(|b| micros <= *b) {
            Some(i) => self.buckets[i].fetch_add(1, Ordering::Relaxed),
            None => self.over.fetch_add(1, Ordering::Relaxed),
        };
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// `(upper bound in seconds, samples in that bucket)`, not cumulative, the last bound
    /// `f64::MAX` standing for `+Inf` (as prometheus-client's encoder takes them).
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = BUCKETS_MICROS
            .iter()
            .zip(&self.buckets)
            .map(|(bound, n)| (*bound as f64 / 1e6, n.load(Ordering::Relaxed)))
            .collect();
        out.push((f64::MAX, self.over.load(Ordering::Relaxed)));
        out
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// The latency histogram of the log's synced writes, and the slow-write warnings.
#[derive(Debug, Default)]
pub struct SyncLatency {
    /// Each finished synced write's time.
    pub histogram: LatencyHistogram,
    /// Slow writes not yet reported by a WARN line.
    slow_unreported: AtomicU64,
    /// When the last WARN line was written.
    warned: Mutex<Option<Instant>>,
    /// The slowest write since the last WARN line, in µs.
    slowest_micros: AtomicU64,
    /// When the synced write now running started, in µs since [`epoch`] plus one (0: none
    /// running). A write stuck in fsync completes no sample, so the slow-storage watch
    /// ([`crate::slow_storage`]) needs its age as well as the finished writes' times.
    in_flight_since: AtomicU64,
}

/// The process's reference instant for [`SyncLatency::in_flight_for`].
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl SyncLatency {
    /// A synced write starts now (ended by [`Self::record`]).
    pub fn started(&self) {
        let since = u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX - 1) + 1;
        self.in_flight_since.store(since, Ordering::Relaxed);
    }

    /// The synced write now running failed (it is not counted).
    pub fn abandoned(&self) {
        self.in_flight_since.store(0, Ordering::Relaxed);
    }

    /// How long the synced write now running has been waiting, if one is.
    pub fn in_flight_for(&self) -> Option<Duration> {
        match self.in_flight_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(
                epoch()
                    .elapsed()
                    .saturating_sub(Duration::from_micros(since - 1)),
            ),
        }
    }

    /// Count one synced write that took `micros`; warn when it was slow.
    pub fn record(&self, micros: u64) {
        self.in_flight_since.store(0, Ordering::Relaxed);
        self.histogram.record(micros);
        if micros < SLOW_SYNC.as_micros() as u64 {
            return;
        }
        let slow = self.slow_unreported.fetch_add(1, Ordering::Relaxed) + 1;
        self.slowest_micros.fetch_max(micros, Ordering::Relaxed);
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return;
        }
        *warned = Some(Instant::now());
        let slowest = self.slowest_micros.swap(0, Ordering::Relaxed);
        self.slow_unreported.store(0, Ordering::Relaxed);
        tracing::warn!(
            slow_writes = slow,
            slowest_ms = slowest / 1000,
            bound_ms = SLOW_SYNC.as_millis() as u64,
            "slow storage: {slow} synced write(s) of the raft log took over {} ms since the last \
             report (slowest {} ms); every write this node acknowledges waits for them",
            SLOW_SYNC.as_millis(),
            slowest / 1000
        );
    }
}

/// Sleep the test delay, if [`TEST_FSYNC_DELAY_ENV`] is set (on a blocking thread: the log's
/// writes run there).
pub fn test_delay() {
    let ms = delay_ms();
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

fn delay_ms() -> u64 {
    static DELAY: TestKnob = TestKnob::new(
        TEST_FSYNC_DELAY_ENV,
        "the raft log's synced writes are delayed as a test file says",
        Duration::from_millis(100),
    );
    // At most a minute: a typo in a test must not wedge a node for good.
    u64::try_from(DELAY.value()).unwrap_or(0).min(60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_land_in_cumulative_buckets() {
        let h = SyncLatency::default();
        for micros in [500, 900, 4_000, 120_000, 7_000_000] {
            h.record(micros);
        }
        // As Prometheus writes them: cumulative, the last bound `+Inf` (`None`).
        let mut total = 0;
        let c: Vec<(Option<f64>, u64)> = h
            .histogram
            .buckets()
            .into_iter()
            .map(|(bound, n)| {
                total += n;
                ((bound < f64::MAX).then_some(bound), total)
            })
            .collect();
        assert_eq!(h.histogram.count(), 5);
        assert_eq!(h.histogram.buckets().last(), Some(&(f64::MAX, 1)));
        assert_eq!(c[0], (Some(0.001), 2));
        assert_eq!(c[1], (Some(0.005), 3));
        assert_eq!(c[4].1, 3, "nothing between 10 and 100 ms");
        assert_eq!(c[5], (Some(0.25), 4));
        assert_eq!(c.last(), Some(&(None, 5)));
    }
}
