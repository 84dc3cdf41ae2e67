//! This node's own wall clock against its monotonic clock: where it stepped, and whether a
//! peer's clock sample was taken across a step (and so must be thrown away).
//!
//! Why: the leader learns a peer's clock from an RPC answer, placing the peer's reading at the
//! middle of the round trip measured by its own wall clock. A round trip during which that wall
//! clock stepped +25 s looked 25 s long, and put the peer 12.5 s off; worse, every offset kept
//! against the wall clock was wrong by the step until it was refreshed. So offsets are kept
//! against the monotonic clock, and every wall-clock reading this node hands out is remembered
//! with the monotonic time it was taken at: an answer is kept only if the wall clock and the
//! monotonic clock measured the same round trip.

use std::collections::VecDeque;

/// Wall-clock readings remembered: each RPC takes two, every answer the node serves one; only
/// the last [`MAX_SAMPLE_RTT_MS`] of them are ever looked at.
const READINGS: usize = 16_384;

/// How far the wall clock may drift from the monotonic clock between two readings before it
/// counts as a step: rounding of the two readings, plus 1 ms per second for NTP's slewing.
pub(crate) const STEP_TOLERANCE_MS: u64 = 20;

/// A round trip longer than this gives no useful sample (the peer's reading is placed at its
/// middle, so its error is up to half of it). Heartbeats and appends time out after one
/// heartbeat interval (250 ms) anyway.
pub(crate) const MAX_SAMPLE_RTT_MS: u64 = 2_000;

#[derive(Debug, Clone, Copy)]
struct Reading {
    wall: u64,
    mono: u64,
}

impl Reading {
    /// Wall clock minus monotonic clock.
    fn offset(&self) -> i64 {
        signed(self.wall, self.mono)
    }
}

/// A step of this node's wall clock: by how much (ms, forward positive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) delta_ms: i64,
}

/// Why an RPC answer's clock sample is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discard {
    /// The wall clock ran backwards across the round trip (it stepped back).
    Backwards,
    /// Too long a round trip to place the peer's reading (by either clock), or a send time this
    /// clock did not hand out lately.
    TooSlow,
    /// The wall clock and the monotonic clock measured different round trips: a step.
    SpansStep,
    /// The send time matches wall-clock readings taken at different times (after a step back,
    /// the wall clock shows the same time twice): which one was the send is unknown.
    Ambiguous,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct OwnClock {
    /// In the order taken (monotonic time never decreases along it).
    readings: VecDeque<Reading>,
}

impl OwnClock {
    /// Remember a reading of both clocks; returns the step since the previous reading, if the
    /// wall clock stepped.
    pub(crate) fn observe(&mut self, wall: u64, mono: u64) -> Option<Step> {
        let now = Reading { wall, mono };
        let step = self.readings.back().and_then(|last| {
            let drift = now.offset() - last.offset();
            let allowed = STEP_TOLERANCE_MS + mono.saturating_sub(last.mono) / 1000;
            (drift.unsigned_abs() > allowed).then_some(Step { delta_ms: drift })
        });
        if self.readings.len() == READINGS {
            self.readings.pop_front();
        }
        self.readings.push_back(now);
        step
    }

    /// The monotonic time of the middle of a round trip sent at wall time `sent` and answered at
    /// wall time `received` (both readings of this clock), `received_mono` being the monotonic
    /// time of the answer; or why the round trip cannot be trusted.
    ///
    /// The send is found among the readings of the last [`MAX_SAMPLE_RTT_MS`]: a send further
    /// back makes too slow a sample anyway. Should a send further back have been answered
    /// across a step back, and a later reading show the same wall time, the sample is kept with
    /// an error of at most its round trip: one peer's sample cannot move the majority's time
    /// beyond the other clocks, and the stamped time moves at a bounded rate whatever the
    /// samples say (`slew`).
    pub(crate) fn midpoint(
        &self,
        sent: u64,
        received: u64,
        received_mono: u64,
    ) -> Result<u64, Discard> {
        if received < sent {
            return Err(Discard::Backwards);
        }
        let wall_rtt = received - sent;
        if wall_rtt > MAX_SAMPLE_RTT_MS {
            return Err(Discard::TooSlow);
        }
        let earliest = received_mono.saturating_sub(MAX_SAMPLE_RTT_MS + STEP_TOLERANCE_MS);
        // The recent readings that showed `sent`, newest first.
        let mut sends = self
            .readings
            .iter()
            .rev()
            .skip_while(|r| r.mono > received_mono)
            .take_while(|r| r.mono >= earliest)
            .filter(|r| r.wall == sent)
            .map(|r| r.mono);
        let Some(newest) = sends.next() else {
            return Err(Discard::TooSlow);
        };
        if sends.any(|m| newest - m > STEP_TOLERANCE_MS) {
            return Err(Discard::Ambiguous);
        }
        let mono_rtt = received_mono - newest;
        if mono_rtt.abs_diff(wall_rtt) > STEP_TOLERANCE_MS {
            return Err(Discard::SpansStep);
        }
        Ok(newest + mono_rtt / 2)
    }

    /// The wall clock minus the monotonic clock at the last reading.
    pub(crate) fn offset(&self) -> Option<i64> {
        self.readings.back().map(Reading::offset)
    }
}

/// `a - b` as a signed number of ms (saturating).
pub(crate) fn signed(a: u64, b: u64) -> i64 {
    if a >= b {
        i64::try_from(a - b).unwrap_or(i64::MAX)
    } else {
        i64::try_from(b - a).map_or(i64::MIN, |d| -d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_without_a_step_is_kept() {
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(1_000_008, 18);
        assert_eq!(own.midpoint(1_000_000, 1_000_008, 18), Ok(14));
        // Gentle slewing is no step.
        assert_eq!(own.observe(1_010_009, 10_018), None);
    }

    #[test]
    fn a_round_trip_across_a_step_is_thrown_away() {
        // Forward: the wall clock says 25 s passed, the monotonic clock 8 ms.
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        let step = own.observe(1_025_008, 18).expect("a step");
        assert_eq!(step.delta_ms, 25_000);
        assert_eq!(
            own.midpoint(1_000_000, 1_025_008, 18),
            Err(Discard::TooSlow)
        );
        // A small forward step inside the round trip.
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(1_000_508, 18);
        assert_eq!(
            own.midpoint(1_000_000, 1_000_508, 18),
            Err(Discard::SpansStep)
        );
        // Backward, further than the round trip: the wall clock ran backwards.
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(975_008, 18);
        assert_eq!(
            own.midpoint(1_000_000, 975_008, 18),
            Err(Discard::Backwards)
        );
        // Backward by less than the round trip: the monotonic clock saw the longer trip.
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(1_000_100, 1_010);
        assert_eq!(
            own.midpoint(1_000_000, 1_000_100, 1_010),
            Err(Discard::SpansStep)
        );
    }

    #[test]
    fn after_a_step_back_a_repeated_wall_time_is_ambiguous() {
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(999_000, 20); // 1 s back
        own.observe(1_000_000, 1_010); // the wall clock shows 1_000_000 again
        own.observe(1_000_005, 1_015);
        assert_eq!(
            own.midpoint(1_000_000, 1_000_005, 1_015),
            Err(Discard::Ambiguous)
        );
    }

    #[test]
    fn a_send_not_read_lately_is_too_old_to_place() {
        let mut own = OwnClock::default();
        own.observe(1_000_000, 10);
        own.observe(1_003_000, 3_010);
        // Sent at a wall time this clock never handed out.
        assert_eq!(
            own.midpoint(1_002_990, 1_003_000, 3_010),
            Err(Discard::TooSlow)
        );
        // Sent 3 s ago by the monotonic clock (read back then), answered 1 s later by the wall
        // clock after a 2 s step back: too old to find, too slow to use.
        own.observe(1_001_000, 3_011);
        assert_eq!(
            own.midpoint(1_000_000, 1_001_000, 3_011),
            Err(Discard::TooSlow)
        );
    }
}
