//! Throughput under a fault the cluster must act on: while one node's disk is slow, the
//! cluster's acknowledged writes come back to at least half their rate before the fault within
//! [`RECOVERS_WITHIN`] of its start, and stay there.
//!
//! Why: a slow disk on the leader does not stop the cluster, it slows it. Every commit waits for
//! the leader's fsync, so without a handoff the acknowledged writes fall to a trickle (200 ms per
//! fsync took 233 writes/s to 3.4) while no checker of safety sees anything wrong. A slow disk on
//! a follower should not show at all: the leader commits with the other follower.
//!
//! The rate is the producers' acknowledged enqueues (closed-loop producers: each waits for its
//! answer, so a slow commit lowers the rate at once). The baseline is the rate over the
//! [`BASELINE`] before the fault.

use super::Verdict;
use crate::history::{EnqueueOp, FaultWindow, Micros, Seen};

/// How soon after a slow disk appears the cluster's write rate must be back.
pub const RECOVERS_WITHIN: std::time::Duration = std::time::Duration::from_secs(12);
/// The window before the fault the baseline rate is taken over.
pub const BASELINE: std::time::Duration = std::time::Duration::from_secs(6);
/// The window a recovered rate is measured over.
pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(2);
/// Recovered: at least this share of the baseline rate, in percent.
pub const RECOVERED_PERCENT: u64 = 50;
/// Fewer acknowledged writes than this in the baseline: too few to judge.
const MIN_BASELINE_WRITES: usize = 10;

fn micros(d: std::time::Duration) -> Micros {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Acknowledgement times of `enqueues`, sorted.
fn acks(enqueues: &[EnqueueOp]) -> Vec<Micros> {
    let mut at: Vec<Micros> = enqueues
        .iter()
        .filter(|op| matches!(op.result, Seen::Ok(_)))
        .map(|op| op.complete)
        .collect();
    at.sort_unstable();
    at
}

/// Acknowledgements in `[from, to)`.
fn count(acks: &[Micros], from: Micros, to: Micros) -> usize {
    acks.partition_point(|t| *t < to) - acks.partition_point(|t| *t < from)
}

pub fn check(enqueues: &[EnqueueOp], windows: &[FaultWindow]) -> Verdict {
    let mut v = Verdict::new("throughput");
    let acks = acks(enqueues);
    let (baseline, window, within) = (micros(BASELINE), micros(WINDOW), micros(RECOVERS_WITHIN));
    for w in windows {
        let before = count(&acks, w.start.saturating_sub(baseline), w.start);
        if before < MIN_BASELINE_WRITES {
            v.notes.push(format!(
                "{}: {before} acknowledged writes in the {} s before it, too few to judge",
                w.description,
                BASELINE.as_secs()
            ));
            continue;
        }
        v.checked += 1;
        // Writes a recovered window must hold: RECOVERED_PERCENT of the baseline's, scaled to
        // the window, rounded up.
        let needed = (before as u64 * window * RECOVERED_PERCENT).div_ceil(baseline * 100);
        let needed = usize::try_from(needed).unwrap_or(usize::MAX).max(1);
        // The fault must outlast the bound by a whole window for the verdict to mean anything.
        if w.end < w.start + within + window {
            v.notes.push(format!(
                "{}: held {:.1} s, shorter than {} s + {} s: not judged",
                w.description,
                (w.end - w.start) as f64 / 1e6,
                RECOVERS_WITHIN.as_secs(),
                WINDOW.as_secs()
            ));
            continue;
        }
        // The first window from which every later window (to the end of the fault) holds
        // enough: the rate came back and stayed back.
        let step = 250_000;
        let mut recovered: Option<Micros> = None;
        let mut worst = usize::MAX;
        let mut t = w.start;
        while t + window <= w.end {
            let n = count(&acks, t, t + window);
            worst = worst.min(n);
            if n >= needed {
                recovered.get_or_insert(t);
            } else {
                recovered = None;
            }
            t += step;
        }
        let rate = |n: usize| n as f64 / WINDOW.as_secs_f64();
        let base_rate = before as f64 / BASELINE.as_secs_f64();
        match recovered {
            Some(at) if at <= w.start + within => v.notes.push(format!(
                "{}: {base_rate:.1} writes/s before, {:.1} at worst, back to {RECOVERED_PERCENT} % \
                 after {:.1} s",
                w.description,
                rate(worst),
                (at - w.start) as f64 / 1e6
            )),
            Some(at) => v.fail(format!(
                "{}: {base_rate:.1} writes/s before, {:.1} at worst; back to {RECOVERED_PERCENT} % \
                 only after {:.1} s (bound {} s)",
                w.description,
                rate(worst),
                (at - w.start) as f64 / 1e6,
                RECOVERS_WITHIN.as_secs()
            )),
            None => v.fail(format!(
                "{}: {base_rate:.1} writes/s before, {:.1} at worst; not back to \
                 {RECOVERED_PERCENT} % ({needed} writes per {} s) in the fault's {:.1} s",
                w.description,
                rate(worst),
                WINDOW.as_secs(),
                (w.end - w.start) as f64 / 1e6
            )),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = 1_000_000;

    /// Acknowledged enqueues at `per_second` from `from` to `to` (seconds).
    fn steady(from: u64, to: u64, per_second: u64) -> Vec<EnqueueOp> {
        let gap = S / per_second;
        (from * S / gap..to * S / gap)
            .map(|i| EnqueueOp {
                key: format!("k{i}"),
                channel: "c".into(),
                invoke: i * gap,
                complete: i * gap,
                attempts: 1,
                result: Seen::Ok(i),
            })
            .collect()
    }

    fn window(start: u64, end: u64) -> FaultWindow {
        FaultWindow {
            description: "slow fsync".into(),
            start: start * S,
            end: end * S,
        }
    }

    #[test]
    fn a_rate_that_never_drops_passes() {
        let v = check(&steady(0, 40, 20), &[window(10, 30)]);
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.checked, 1);
        assert!(v.notes[0].contains("after 0.0 s"), "{:?}", v.notes);
    }

    #[test]
    fn a_rate_back_within_the_bound_passes() {
        let mut ops = steady(0, 10, 20);
        ops.extend(steady(10, 15, 1));
        ops.extend(steady(15, 40, 20));
        let v = check(&ops, &[window(10, 30)]);
        assert!(v.ok(), "{:?}", v.violations);
    }

    #[test]
    fn a_rate_that_stays_down_fails() {
        let mut ops = steady(0, 10, 20);
        ops.extend(steady(10, 30, 2));
        ops.extend(steady(30, 40, 20));
        let v = check(&ops, &[window(10, 30)]);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert!(v.violations[0].contains("not back"), "{:?}", v.violations);
    }

    #[test]
    fn a_rate_back_too_late_fails() {
        let mut ops = steady(0, 10, 20);
        ops.extend(steady(10, 25, 2));
        ops.extend(steady(25, 40, 20));
        let v = check(&ops, &[window(10, 30)]);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert!(v.violations[0].contains("only after"), "{:?}", v.violations);
    }

    #[test]
    fn a_rate_that_falls_again_is_not_recovered() {
        let mut ops = steady(0, 10, 20);
        ops.extend(steady(10, 20, 20));
        ops.extend(steady(20, 30, 1));
        let v = check(&ops, &[window(10, 30)]);
        assert!(!v.ok(), "a drop late in the fault is still a drop");
    }

    #[test]
    fn too_little_traffic_or_too_short_a_fault_is_not_judged() {
        let v = check(&steady(0, 40, 1), &[window(10, 30)]);
        assert!(v.ok());
        assert_eq!(v.checked, 0);
        let v = check(&steady(0, 40, 20), &[window(10, 15)]);
        assert!(v.ok());
        assert!(v.notes[0].contains("not judged"), "{:?}", v.notes);
    }
}
