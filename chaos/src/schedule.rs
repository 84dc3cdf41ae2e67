//! The fault schedule: a pure function of (seed, duration, enabled kinds), so a seed reproduces
//! the same faults at the same offsets. Kinds are drawn in shuffled rounds, so every enabled
//! kind is injected once before any is injected twice.

use crate::faults::{Fault, FaultKind, Shape, Target};
use crate::prng::SplitMix64;
use crate::proxy::CutMode;
use std::time::Duration;

/// Quiet time before the first fault (the workloads warm up).
pub const WARMUP: Duration = Duration::from_secs(3);
/// Quiet time kept free at the end of the fault phase.
pub const COOLDOWN: Duration = Duration::from_secs(2);
/// Added to the hold of a partition that isolates the leader.
pub const ISOLATED_LEADER_EXTRA_HOLD: Duration = Duration::from_secs(7);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Offset from the start of the fault phase.
    pub at: Duration,
    /// How long the fault stays in place.
    pub hold: Duration,
    pub fault: Fault,
}

fn ms(rng: &mut SplitMix64, lo: u64, hi: u64) -> Duration {
    Duration::from_millis(rng.range(lo, hi))
}

fn target(rng: &mut SplitMix64) -> Target {
    if rng.chance(50) {
        Target::Leader
    } else {
        Target::Follower(rng.range(0, 1))
    }
}

/// One fault of `kind` with its hold time. `lease_ttl` is the workers' lease: a pause must
/// outlast it.
pub fn fault_of(kind: FaultKind, rng: &mut SplitMix64, lease_ttl: Duration) -> (Fault, Duration) {
    let ttl = lease_ttl.as_millis() as u64;
    match kind {
        FaultKind::Kill => (
            Fault::Kill {
                target: target(rng),
            },
            ms(rng, 2000, 5000),
        ),
        FaultKind::Pause => (
            Fault::Pause {
                target: target(rng),
            },
            ms(rng, ttl + 1000, ttl + 3500),
        ),
        FaultKind::Partition => {
            let pick = rng.range(0, 1);
            let shape = match rng.range(0, 4) {
                0 => Shape::IsolateLeader,
                1 => Shape::IsolateFollower(pick),
                2 => Shape::OneWayFromLeader(pick),
                3 => Shape::OneWayToLeader(pick),
                _ => Shape::Bridge(pick),
            };
            let mode = if rng.chance(50) {
                CutMode::Drop
            } else {
                CutMode::Blackhole
            };
            let mut hold = ms(rng, 3000, 6000);
            if shape == Shape::IsolateLeader {
                // Long enough for the isolated leader to give up leading (check-quorum: two
                // election timeouts, 4 s by default) and to answer a write sent to it (the 8 s
                // retry window), and be seen to (`crate::isolation`).
                hold += ISOLATED_LEADER_EXTRA_HOLD;
            }
            (Fault::Partition { shape, mode }, hold)
        }
        FaultKind::Latency => {
            let t = if rng.chance(50) {
                Some(target(rng))
            } else {
                None
            };
            let latency = rng.range(50, 400);
            (
                Fault::Latency {
                    target: t,
                    ms: latency,
                },
                ms(rng, 3000, 6000),
            )
        }
        FaultKind::RestartAll => (Fault::RestartAll, ms(rng, 500, 2000)),
        FaultKind::ClockSkew => {
            // Within the nodes' skew bound (30 s) the skewed node stays in the cluster and its
            // clock is outvoted; beyond it (±60 s, +1 h) its calls are refused as clock skew.
            let magnitude = match rng.range(0, 3) {
                0 | 1 => rng.range(2000, 8000) as i64,
                2 => 60_000,
                _ => 3_600_000,
            };
            let offset = if magnitude < 3_600_000 && rng.chance(50) {
                -magnitude
            } else {
                magnitude
            };
            (
                Fault::ClockSkew {
                    target: target(rng),
                    offset_ms: offset,
                },
                ms(rng, 4000, 8000),
            )
        }
        FaultKind::ClockStep => {
            // Inside the skew bound (±5 s, ±25 s: the stepped node stays in the cluster and its
            // clock is outvoted) and beyond it (±10 min: cut off until it steps back). The
            // leader twice as often as a follower: its steps broke leases.
            let magnitude = match rng.range(0, 2) {
                0 => 5_000,
                1 => 25_000,
                _ => 600_000,
            };
            let step_ms = if rng.chance(50) {
                magnitude
            } else {
                -magnitude
            };
            let target = if rng.range(0, 2) < 2 {
                Target::Leader
            } else {
                Target::Follower(rng.range(0, 1))
            };
            (Fault::ClockStep { target, step_ms }, ms(rng, 3000, 5000))
        }
        FaultKind::SlowFsync => {
            // Slow enough that a leader that kept leading would cut the write rate to a
            // fraction, held long enough for the throughput checker to see it come back (the
            // leader hands off after ~3 s of slow writes). The leader twice as often.
            let target = if rng.range(0, 2) < 2 {
                Target::Leader
            } else {
                Target::Follower(rng.range(0, 1))
            };
            let delay_ms = rng.range(300, 800);
            let hold = crate::checkers::throughput::RECOVERS_WITHIN
                + crate::checkers::throughput::WINDOW
                + ms(rng, 2000, 4000);
            (Fault::SlowFsync { target, delay_ms }, hold)
        }
    }
}

/// The schedule for a fault phase of `duration`.
pub fn build(seed: u64, duration: Duration, kinds: &[FaultKind], lease_ttl: Duration) -> Vec<Step> {
    let mut rng = SplitMix64::new(seed);
    let mut steps = Vec::new();
    if kinds.is_empty() {
        return steps;
    }
    let end = duration.saturating_sub(COOLDOWN);
    let mut t = WARMUP;
    'rounds: loop {
        let mut round = kinds.to_vec();
        rng.shuffle(&mut round);
        for kind in round {
            let (fault, hold) = fault_of(kind, &mut rng, lease_ttl);
            if t + hold > end {
                break 'rounds;
            }
            steps.push(Step { at: t, hold, fault });
            t += hold + ms(&mut rng, 1000, 2500);
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_schedule() {
        let ttl = Duration::from_millis(2500);
        let a = build(7, Duration::from_secs(60), &FaultKind::ALL, ttl);
        let b = build(7, Duration::from_secs(60), &FaultKind::ALL, ttl);
        let c = build(8, Duration::from_secs(60), &FaultKind::ALL, ttl);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn every_kind_once_per_round_and_within_bounds() {
        let ttl = Duration::from_millis(2500);
        for seed in 0..50 {
            // Long enough for a whole round of the longest holds (a slow disk holds ~17 s).
            let s = build(seed, Duration::from_secs(120), &FaultKind::ALL, ttl);
            let kinds = FaultKind::ALL.len();
            assert!(s.len() >= kinds, "seed {seed}: {} steps", s.len());
            let first: std::collections::BTreeSet<_> =
                s.iter().take(kinds).map(|st| st.fault.kind()).collect();
            assert_eq!(
                first.len(),
                kinds,
                "seed {seed}: the first round covers every kind"
            );
            for w in s.windows(2) {
                assert!(w[0].at + w[0].hold < w[1].at, "faults do not overlap");
            }
            let last = s.last().unwrap();
            assert!(last.at + last.hold <= Duration::from_secs(118));
            for st in &s {
                if let Fault::Pause { .. } = st.fault {
                    assert!(st.hold > ttl, "a pause outlasts the lease");
                }
            }
        }
    }

    #[test]
    fn only_enabled_kinds() {
        let s = build(
            3,
            Duration::from_secs(60),
            &[FaultKind::Kill],
            Duration::from_secs(2),
        );
        assert!(!s.is_empty());
        assert!(s.iter().all(|st| st.fault.kind() == FaultKind::Kill));
    }
}
