//! MarkDone, MarkFailed and DeadLetterNow: the finalizer waiting for siblings, retry backoff and
//! dead-lettering.

use crate::harness::*;

#[test]
fn mark_done_waits_for_sibling_rows_before_finalizing() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    let first = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
    assert_eq!(h.mark_done(&first), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Routed);
    let second = h.claim_one(Stage::Outbound);
    assert_eq!(h.mark_done(&second), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Processed);
}

#[test]
fn mark_failed_backs_off_exactly_by_the_policy() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(None, 1_000, 2_000, 5_000);
    let mut expected_delays = Vec::new();
    for attempt in 1..=5u32 {
        let row = h.claim_one(Stage::Outbound);
        assert_eq!(row.attempts, attempt);
        let t = h.now;
        let out = h.ok(mark_failed(&row, "boom", policy.clone()));
        let delay = 5_000u64.min(1_000 * 2u64.pow(attempt - 1));
        expected_delays.push(delay);
        assert_eq!(
            out,
            Outcome::Failed {
                dead: false,
                next_attempt_at: t + delay
            }
        );
        let stored = h.row(row.row_id);
        assert_eq!(stored.status, RowStatus::Pending);
        assert_eq!(stored.next_attempt_at, t + delay);
        assert_eq!(stored.last_error.as_deref(), Some("boom"));
        assert_eq!(stored.claim, None);
        let event = h.view(id).events.last().unwrap().clone();
        assert_eq!(event.event, EventKind::Failed);
        assert_eq!(event.destination.as_deref(), Some("d"));
        assert_eq!(event.detail, Some(format!("attempt {attempt}: boom")));
        // Not claimable a millisecond early.
        h.advance(delay - 1);
        assert!(h.claim_ready(Stage::Outbound, 1, "w", 1_000).is_empty());
        h.advance(1);
    }
    assert_eq!(expected_delays, vec![1_000, 2_000, 4_000, 5_000, 5_000]);
    assert_eq!(h.status(id), MessageStatus::Routed);
}

#[test]
fn mark_failed_with_a_fractional_multiplier() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(None, 1_000, 1_500, 10_000);
    let mut delays = Vec::new();
    for _ in 0..3 {
        let row = h.claim_one(Stage::Outbound);
        let t = h.now;
        let Outcome::Failed {
            next_attempt_at, ..
        } = h.ok(mark_failed(&row, "x", policy.clone()))
        else {
            panic!()
        };
        delays.push(next_attempt_at - t);
        h.advance(next_attempt_at - t);
    }
    assert_eq!(delays, vec![1_000, 1_500, 2_250]);
}

#[test]
fn mark_failed_dead_letters_after_max_attempts() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(Some(2), 100, 1_000, 100);
    let first = h.claim_one(Stage::Outbound);
    assert!(matches!(
        h.ok(mark_failed(&first, "e1", policy.clone())),
        Outcome::Failed { dead: false, .. }
    ));
    h.advance(100);
    let second = h.claim_one(Stage::Outbound);
    assert_eq!(second.attempts, 2);
    let t = h.now;
    assert_eq!(
        h.ok(mark_failed(&second, "e2", policy)),
        Outcome::Failed {
            dead: true,
            next_attempt_at: t
        }
    );
    let row = h.row(second.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(row.last_error.as_deref(), Some("e2"));
    assert_eq!(row.claim, None);
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Failed, EventKind::Dead]
    );
    // messagefoundry's texts: the dead event says which attempt, as the failed one does.
    let events = h.view(id).events;
    assert_eq!(events[1].detail.as_deref(), Some("attempt 1: e1"));
    assert_eq!(events[2].detail.as_deref(), Some("attempt 2: e2"));
    let dead = h.sm.read().dead_letters(None, None, 10).unwrap();
    assert_eq!(
        dead.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![second.row_id]
    );
}

#[test]
fn mark_failed_rejects_an_invalid_policy() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    h.reject(
        mark_failed(&row, "x", retry(None, 1_000, 999, 1_000)),
        invalid(
            "retry.multiplier_milli",
            "must be between 1000 and 100000 (thousandths: ×1.0 to ×100)",
        ),
    );
    h.reject(
        mark_failed(&row, "x", retry(Some(0), 1_000, 1_000, 1_000)),
        invalid("retry.max_attempts", "must be at least 1"),
    );
    assert_eq!(h.row(row.row_id).status, RowStatus::Inflight);
}

#[test]
fn dead_letter_now_with_the_current_fence_kills_the_row_and_finalizes() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    assert_eq!(
        h.ok(dead_letter(row.row_id, Some(row.fence), "poison")),
        Outcome::Done
    );
    let stored = h.row(row.row_id);
    assert_eq!(stored.status, RowStatus::Dead);
    assert_eq!(stored.last_error.as_deref(), Some("poison"));
    assert_eq!(stored.claim, None);
    assert_eq!(h.status(row.message_id), MessageStatus::Error);
    let event = h.view(row.message_id).events.last().unwrap().clone();
    assert_eq!(event.event, EventKind::Dead);
    assert_eq!(event.destination.as_deref(), Some("d"));
    assert_eq!(event.detail.as_deref(), Some("poison"));
}

#[test]
fn dead_letter_now_without_a_fence_takes_a_pending_row_but_not_a_terminal_one() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    assert_eq!(h.ok(dead_letter(RowId(0), None, "operator")), Outcome::Done);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Dead);
    assert_eq!(h.status(id), MessageStatus::Error);
    h.reject(
        dead_letter(RowId(0), None, "again"),
        wrong_status(RowId(0), "dead", "pending or inflight"),
    );

    let row = h.outbound_claimed("orders", "d");
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    h.reject(
        dead_letter(row.row_id, None, "x"),
        wrong_status(row.row_id, "done", "pending or inflight"),
    );
    h.reject(
        dead_letter(row.row_id, Some(row.fence), "x"),
        wrong_status(row.row_id, "done", "inflight"),
    );
}
