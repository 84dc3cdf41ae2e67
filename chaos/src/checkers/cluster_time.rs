//! The cluster's time by the wall clock: every acknowledged enqueue was stamped (its message's
//! `received_at`, the time the leader stamped into the entry) between the producer sending it and
//! the answer, by the chaos runner's own clock, give or take the tolerance.
//!
//! Why: the leases checker sees a cluster clock that runs ahead only where a takeover happened
//! to fall in the window. Every enqueue is a sample of the cluster's time: a clock dragged ahead
//! (a leader stamping its own fast clock, a step of a wall clock) shows as stamps after the
//! answer, a clock standing still after such a jump, or running slow, as stamps before the send.
//! Found with it: a leader restarted 6.8 s fast took writes before its metrics said
//! it led, and they carried its own clock; the time then stood still for 6.8 s.

use super::leases::TOLERANCE_MS;
use super::Verdict;
use crate::final_state::FinalMessage;
use crate::history::{EnqueueOp, Micros, Seen};
use std::collections::BTreeMap;

/// At most this many violations are listed one by one.
const LISTED: usize = 5;

/// `start_wall_ms`: the runner's wall clock when the history's monotonic times were 0.
pub fn check(enqueues: &[EnqueueOp], messages: &[FinalMessage], start_wall_ms: u64) -> Verdict {
    let mut v = Verdict::new("cluster-time");
    let by_id: BTreeMap<u64, &FinalMessage> = messages.iter().map(|m| (m.id, m)).collect();
    let wall = |t: Micros| start_wall_ms + t / 1000;
    let (mut ahead, mut behind) = (Vec::new(), Vec::new());
    for op in enqueues {
        let Seen::Ok(id) = &op.result else { continue };
        let Some(m) = by_id.get(id) else { continue };
        v.checked += 1;
        let (sent, answered) = (wall(op.invoke), wall(op.complete) + 1);
        if m.received_at > answered + TOLERANCE_MS {
            ahead.push((op.invoke, m.received_at - answered, *id));
        } else if m.received_at + TOLERANCE_MS < sent {
            behind.push((op.invoke, sent - m.received_at, *id));
        }
    }
    for (what, found) in [
        ("after its answer", &ahead),
        ("before it was sent", &behind),
    ] {
        if found.is_empty() {
            continue;
        }
        let worst = found.iter().map(|f| f.1).max().unwrap_or(0);
        let mut line = format!(
            "{} acknowledged enqueues stamped more than {TOLERANCE_MS} ms {what} by the wall \
             clock (up to {worst} ms):",
            found.len()
        );
        for (invoke, by, id) in found.iter().take(LISTED) {
            line.push_str(&format!(
                " message {id} sent at t+{:.1} s by {by} ms;",
                *invoke as f64 / 1e6
            ));
        }
        v.fail(line);
    }
    v.notes.push(format!(
        "{} acknowledged enqueues stamped between sending and the answer (tolerance {TOLERANCE_MS} ms)",
        v.checked
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enqueue(id: u64, invoke_ms: u64, complete_ms: u64) -> EnqueueOp {
        EnqueueOp {
            key: format!("k{id}"),
            channel: "c".into(),
            invoke: invoke_ms * 1000,
            complete: complete_ms * 1000,
            attempts: 1,
            result: Seen::Ok(id),
        }
    }

    fn message(id: u64, received_at: u64) -> FinalMessage {
        FinalMessage {
            id,
            channel: "c".into(),
            status: "processed".into(),
            idempotency_key: Some(format!("k{id}")),
            received_at,
            events: Vec::new(),
            rows: Vec::new(),
        }
    }

    #[test]
    fn stamps_within_the_round_trip_pass() {
        let start = 1_800_000_000_000;
        let ops = [enqueue(1, 100, 120), enqueue(2, 200, 5_000)];
        let msgs = [message(1, start + 110), message(2, start + 4_900)];
        assert!(check(&ops, &msgs, start).ok());
    }

    #[test]
    fn a_clock_ahead_or_standing_still_is_caught() {
        let start = 1_800_000_000_000;
        // The reproduction: stamped 6.7 s after the answer, then standing still.
        let ops = [enqueue(1, 77_000, 77_400), enqueue(2, 80_000, 80_010)];
        let msgs = [message(1, start + 84_100), message(2, start + 84_100)];
        let v = check(&ops, &msgs, start);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert!(v.violations[0].contains("2 acknowledged enqueues"));
        // Behind: a clock that froze or runs slow.
        let ops = [enqueue(1, 30_000, 30_010)];
        let msgs = [message(1, start + 5_000)];
        let v = check(&ops, &msgs, start);
        assert!(v.violations[0].contains("before it was sent"), "{v:?}");
        // Unacknowledged enqueues are not judged.
        let mut unknown = enqueue(1, 30_000, 30_010);
        unknown.result = Seen::Unknown("timeout".into());
        assert!(check(&[unknown], &msgs, start).ok());
    }
}
