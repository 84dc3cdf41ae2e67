//! Where the cluster's clock reads time: this node's wall clock, which may step (NTP, an
//! operator, a VM resumed), and a monotonic clock, which never does.
//!
//! Why a trait: the rules in [`crate::clock`] are about what happens when the two disagree, and
//! tests must be able to step a wall clock at will ([`ManualTime`]) without touching the
//! machine's.

use crate::test_knob::TestKnob;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The env var naming a file whose content (a signed number of ms) is added to this node's wall
/// clock while the node runs: **for tests only**. The chaos suite steps a running node's clock
/// with it (`chaos/src/faults.rs`, clock-step faults); no production setup sets it. Read again
/// at most every [`STEP_FILE_REREAD`]; a missing or unreadable file counts as 0.
pub const TEST_CLOCK_STEP_ENV: &str = "RAFTLANE_TEST_CLOCK_STEP_FILE";

/// How stale the test step file's value may be.
const STEP_FILE_REREAD: Duration = Duration::from_millis(20);

/// A source of the two clocks.
pub trait TimeSource: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch by this node's wall clock (may step either way).
    fn wall_ms(&self) -> u64;
    /// Milliseconds since an arbitrary start, by a clock that never steps or runs backwards.
    fn mono_ms(&self) -> u64;
}

/// The machine's clocks: [`now_ms`] (with the test hooks) and [`Instant`].
#[derive(Debug)]
pub struct SystemTime {
    start: Instant,
    /// Added to the wall clock: lets an in-process test run one node with a skewed clock.
    offset_ms: i64,
}

impl SystemTime {
    pub fn new(offset_ms: i64) -> Self {
        Self {
            start: Instant::now(),
            offset_ms,
        }
    }
}

impl TimeSource for SystemTime {
    fn wall_ms(&self) -> u64 {
        now_ms().saturating_add_signed(self.offset_ms)
    }

    fn mono_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// This process's wall clock: [`crate::util::now_ms`] (with `RAFTLANE_CLOCK_OFFSET_MS`) plus the
/// test step of [`TEST_CLOCK_STEP_ENV`], if set. Everything in a node that reads the wall clock
/// (signatures, the API's own estimates) reads it here, so a test step moves all of it at once,
/// as a real step would.
pub fn now_ms() -> u64 {
    crate::util::now_ms().saturating_add_signed(test_step_ms())
}

/// The current value of the test step file (0 when [`TEST_CLOCK_STEP_ENV`] is unset).
fn test_step_ms() -> i64 {
    static STEP: TestKnob = TestKnob::new(
        TEST_CLOCK_STEP_ENV,
        "this node's wall clock follows a test step file",
        STEP_FILE_REREAD,
    );
    STEP.value()
}

/// Clocks a test moves by hand: real time advances both, a step moves the wall clock alone.
#[derive(Debug)]
pub struct ManualTime {
    mono: AtomicU64,
    /// Wall clock minus monotonic clock.
    wall_offset: AtomicI64,
}

impl ManualTime {
    /// Both clocks at `wall_ms`'s start (the monotonic one at 0).
    pub fn new(wall_ms: u64) -> Self {
        Self {
            mono: AtomicU64::new(0),
            wall_offset: AtomicI64::new(i64::try_from(wall_ms).unwrap_or(i64::MAX)),
        }
    }

    /// Real time passes.
    pub fn advance(&self, ms: u64) {
        self.mono.fetch_add(ms, Ordering::SeqCst);
    }

    /// The wall clock steps by `ms` (either way); the monotonic clock does not.
    pub fn step(&self, ms: i64) {
        self.wall_offset.fetch_add(ms, Ordering::SeqCst);
    }
}

impl TimeSource for ManualTime {
    fn wall_ms(&self) -> u64 {
        self.mono
            .load(Ordering::SeqCst)
            .saturating_add_signed(self.wall_offset.load(Ordering::SeqCst))
    }

    fn mono_ms(&self) -> u64 {
        self.mono.load(Ordering::SeqCst)
    }
}
