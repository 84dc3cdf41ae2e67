//! The cluster's time as one node keeps it: tied to the monotonic clock, corrected only slowly.
//!
//! Why: the evidence about the cluster's time (this node's wall clock and its peers') can jump
//! when a wall clock steps, and the time stamped into the log must not: a jump forward cuts
//! every running lease short by its size, a jump back makes the state's clock stand still
//! (`clock = max(clock, now)`) for as long. So the time advances by the monotonic clock's
//! elapsed time, and the evidence (the target) only steers its rate, within bounds:
//!
//! - within [`DEADBAND_MS`] of the target it runs at exactly the monotonic rate (noise in the
//!   peers' samples, up to half a round trip, moves nothing);
//! - behind the target it runs at most [`FAST_PER_MILLE`] ‰ fast: a lease of `L` ms can end
//!   at most `L × 1 %` early in real time, and only while a real lag is being made up;
//! - ahead of the target it runs at least at half speed: leases last longer in real time
//!   (safe), and the time never stands still.
//!
//! It never runs backwards.

/// Below this distance from the target, the evidence is ignored.
pub(crate) const DEADBAND_MS: u64 = 250;
/// How much faster than the monotonic clock the time may run to catch up, in ‰.
pub(crate) const FAST_PER_MILLE: u64 = 10;
/// How much slower than the monotonic clock the time may run to let the target catch up, in ‰.
pub(crate) const SLOW_PER_MILLE: u64 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Anchor {
    mono_ms: u64,
    /// The cluster's time at `mono_ms`, in µs (slewing moves it by fractions of a ms).
    cluster_us: u64,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Slew {
    anchor: Option<Anchor>,
}

impl Slew {
    /// The cluster's time at `mono_ms`, steered toward `target_ms` (the evidence of the moment).
    /// The first call takes the target as it is.
    pub(crate) fn advance(&mut self, mono_ms: u64, target_ms: u64) -> u64 {
        let target_us = target_ms.saturating_mul(1000);
        let next = match self.anchor {
            None => target_us,
            Some(a) => {
                let elapsed_us = mono_ms.saturating_sub(a.mono_ms).saturating_mul(1000);
                let free = a.cluster_us.saturating_add(elapsed_us);
                let deadband = DEADBAND_MS * 1000;
                if target_us > free.saturating_add(deadband) {
                    let fast = elapsed_us / 1000 * FAST_PER_MILLE;
                    free + (target_us - free).min(fast)
                } else if target_us.saturating_add(deadband) < free {
                    let slow = elapsed_us / 1000 * SLOW_PER_MILLE;
                    free - (free - target_us).min(slow)
                } else {
                    free
                }
            }
        };
        // Never backwards, whatever the arithmetic above saturated at.
        let next = self.anchor.map_or(next, |a| next.max(a.cluster_us));
        self.anchor = Some(Anchor {
            mono_ms,
            cluster_us: next,
        });
        next / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_follows_the_monotonic_clock_and_ignores_noise() {
        let mut s = Slew::default();
        assert_eq!(s.advance(0, 1_000_000), 1_000_000);
        assert_eq!(s.advance(100, 1_000_300), 1_000_100);
        assert_eq!(s.advance(200, 1_000_000), 1_000_200);
    }

    #[test]
    fn a_jump_forward_is_made_up_at_one_percent() {
        let mut s = Slew::default();
        s.advance(0, 1_000_000);
        // The evidence jumps 25 s: in 10 s of real time the time moves 10.1 s.
        assert_eq!(s.advance(10_000, 1_035_000), 1_010_100);
        // In small steps (every ms) the fractions add up the same.
        let mut s = Slew::default();
        s.advance(0, 1_000_000);
        let mut t = 0;
        for mono in 1..=10_000 {
            t = s.advance(mono, 1_000_000 + mono + 25_000);
        }
        assert_eq!(t, 1_010_100);
    }

    #[test]
    fn a_jump_back_slows_the_time_but_never_stops_it() {
        let mut s = Slew::default();
        s.advance(0, 1_000_000);
        // The evidence falls 25 s behind: the time runs at half speed until it is within the
        // band (10 s of real time move it 5 s).
        assert_eq!(s.advance(10_000, 975_000 + 10_000), 1_005_000);
        let mut last = 1_005_000;
        for mono in (10_007..=70_000).step_by(7) {
            let t = s.advance(mono, 975_000 + mono);
            assert!(t >= last, "never backwards");
            assert!(t - last >= 3, "never standing still: {last} → {t}");
            last = t;
        }
        // Another 40 s of real time at half speed made up the rest: within the band again.
        assert!(last.abs_diff(975_000 + 69_997) <= DEADBAND_MS, "{last}");
    }
}
