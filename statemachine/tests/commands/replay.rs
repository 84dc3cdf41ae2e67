//! Replay, ReplayDead and CancelQueued.

use crate::harness::*;

#[test]
fn replay_recover_mode_requeues_dead_and_pending_rows_never_a_done_sibling() {
    let mut h = Harness::new();
    let id = h.enqueue_message(
        "orders",
        &[("d1", "p"), ("d2", "p"), ("d3", "p"), ("d4", "p")],
    );
    let rows: Vec<ClaimedRow> = h.claim_ready(Stage::Outbound, 4, "w", 60_000);
    assert_eq!(h.mark_done(&rows[0]), Ok(Outcome::Done));
    h.ok(dead_letter(rows[1].row_id, Some(rows[1].fence), "gone"));
    h.ok(mark_failed(
        &rows[2],
        "slow",
        retry(None, 60_000, 1_000, 60_000),
    ));
    // rows[3] stays inflight.
    h.advance(10);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(2)
    );
    assert_eq!(h.row(rows[0].row_id).status, RowStatus::Done);
    for r in [&rows[1], &rows[2]] {
        let stored = h.row(r.row_id);
        assert_eq!(stored.status, RowStatus::Pending);
        assert_eq!(stored.attempts, 0);
        assert_eq!(stored.next_attempt_at, T0 + 10);
        assert_eq!(stored.last_error, None);
        assert_eq!(stored.claim, None);
    }
    let inflight = h.row(rows[3].row_id);
    assert_eq!(inflight.status, RowStatus::Inflight);
    assert_eq!(inflight.claim.unwrap().fence, rows[3].fence);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let event = v.events.last().unwrap();
    assert_eq!(event.event, EventKind::Replayed);
    assert_eq!(event.detail.as_deref(), Some("2 row(s)"));
}

#[test]
fn replay_recover_mode_clears_the_error_status() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    h.ok(dead_letter(row.row_id, Some(row.fence), "gone"));
    assert_eq!(h.status(row.message_id), MessageStatus::Error);
    assert_eq!(
        h.ok(Command::Replay(Replay {
            message_id: row.message_id
        })),
        Outcome::Count(1)
    );
    let v = h.view(row.message_id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    assert_eq!(v.message.error, None);
}

#[test]
fn replay_resend_mode_requeues_done_rows() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    for row in h.claim_ready(Stage::Outbound, 2, "w", 1_000) {
        assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    }
    assert_eq!(h.status(id), MessageStatus::Processed);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(2)
    );
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    assert!(v
        .rows
        .iter()
        .all(|r| r.status == RowStatus::Pending && r.attempts == 0));
    assert_eq!(h.claim_ready(Stage::Outbound, 10, "w", 1_000).len(), 2);
}

#[test]
fn replay_never_touches_cancelled_rows() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    assert_eq!(h.ok(cancel("d1", None, false)), Outcome::Count(1));
    let row = h.claim_one(Stage::Outbound);
    assert_eq!(row.destination_name.as_deref(), Some("d2"));
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Processed);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(1)
    );
    assert_eq!(h.row(RowId(0)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    // A message with nothing but cancelled rows has nothing to replay.
    let only = h.enqueue_message("orders", &[("d3", "p")]);
    h.ok(cancel("d3", None, false));
    h.no_change(
        Command::Replay(Replay { message_id: only }),
        Outcome::Count(0),
    );
    assert_eq!(h.status(only), MessageStatus::Processed);
}

#[test]
fn replay_with_a_pending_ingress_row_sets_received() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    h.ok(dead_letter(RowId(0), None, "poison"));
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(1)
    );
    assert_eq!(h.status(id), MessageStatus::Received);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
}

#[test]
fn replay_of_an_unknown_message_is_refused() {
    let mut h = Harness::new();
    h.enqueue("orders", "raw");
    h.reject(
        Command::Replay(Replay {
            message_id: MessageId(42),
        }),
        Rejection::UnknownMessage(MessageId(42)),
    );
}

#[test]
fn replay_dead_requeues_dead_outbound_rows_and_moves_error_to_routed() {
    let mut h = Harness::new();
    let m0 = h.enqueue_message("c1", &[("d1", "p")]);
    let m1 = h.enqueue_message("c2", &[("d2", "p")]);
    let m2 = h.enqueue_message("c1", &[("d1", "p")]);
    let m3 = h.enqueue("c1", "raw");
    h.ok(dead_letter(RowId(0), None, "x"));
    h.ok(dead_letter(RowId(1), None, "x"));
    let done = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
    assert_eq!(done.message_id, m2);
    h.mark_done(&done).unwrap();
    h.ok(dead_letter(RowId(3), None, "ingress poison"));
    assert_eq!(h.status(m3), MessageStatus::Error);

    let by_dest = Command::ReplayDead(ReplayDead {
        channel: None,
        destination: Some("d1".into()),
    });
    assert_eq!(h.ok(by_dest), Outcome::Count(1));
    let r0 = h.row(RowId(0));
    assert_eq!(r0.status, RowStatus::Pending);
    assert_eq!(r0.last_error, None);
    assert_eq!(h.status(m0), MessageStatus::Routed);
    assert_eq!(h.event_kinds(m0).last(), Some(&EventKind::Replayed));
    assert_eq!(
        h.view(m0).events.last().unwrap().detail.as_deref(),
        Some("dead-letter replay")
    );
    assert_eq!(h.status(m1), MessageStatus::Error);
    assert_eq!(h.status(m2), MessageStatus::Processed);

    h.no_change(
        Command::ReplayDead(ReplayDead {
            channel: Some("c1".into()),
            destination: None,
        }),
        Outcome::Count(0),
    );
    assert_eq!(
        h.ok(Command::ReplayDead(ReplayDead {
            channel: None,
            destination: None
        })),
        Outcome::Count(1)
    );
    assert_eq!(h.status(m1), MessageStatus::Routed);
    // Dead ingress rows are not dead letters of ReplayDead.
    assert_eq!(h.row(RowId(3)).status, RowStatus::Dead);
    assert_eq!(h.status(m3), MessageStatus::Error);
}

#[test]
fn cancel_queued_cancels_pending_rows_of_the_destination_and_finalizes() {
    let mut h = Harness::new();
    let m0 = h.enqueue_message("c1", &[("d", "p")]);
    let m1 = h.enqueue_message("c1", &[("d", "p"), ("e", "p")]);
    let m2 = h.enqueue_message("c1", &[("d", "p")]);
    let inflight = h.claim_ready(Stage::Outbound, 1, "w", 60_000).remove(0);
    assert_eq!(inflight.message_id, m0);
    assert_eq!(h.ok(cancel("d", None, false)), Outcome::Count(2));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Inflight);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(2)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(3)).status, RowStatus::Cancelled);
    assert_eq!(h.status(m0), MessageStatus::Routed);
    assert_eq!(h.status(m1), MessageStatus::Routed);
    assert_eq!(h.status(m2), MessageStatus::Processed);
    let event = h.view(m2).events.last().unwrap().clone();
    assert_eq!(event.event, EventKind::Cancelled);
    assert_eq!(event.destination.as_deref(), Some("d"));
    assert_eq!(event.detail.as_deref(), Some("manual purge"));
    h.no_change(cancel("d", None, false), Outcome::Count(0));
    // m1 finalizes once its last row is cancelled too.
    assert_eq!(h.ok(cancel("e", None, false)), Outcome::Count(1));
    assert_eq!(h.status(m1), MessageStatus::Processed);
}

#[test]
fn cancel_queued_top_only_cancels_just_the_lane_head() {
    let mut h = Harness::new();
    h.enqueue_message("c1", &[("d", "0"), ("d", "1"), ("d", "2")]);
    assert_eq!(h.ok(cancel("d", None, true)), Outcome::Count(1));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Cancelled);
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "d", 10).unwrap(),
        vec![RowId(1), RowId(2)]
    );
}

#[test]
fn cancel_queued_top_only_cancels_the_next_due_row_not_a_head_backing_off() {
    // messagefoundry's "top": ORDER BY next_attempt_at, created_at (then seq).
    let mut h = Harness::new();
    let m0 = h.enqueue_message("c1", &[("d", "0")]);
    h.advance(5);
    let m1 = h.enqueue_message("c1", &[("d", "1")]);
    let m2 = h.enqueue_message("c1", &[("d", "2")]);
    let head = h.claim_ready(Stage::Outbound, 1, "w", 60_000).remove(0);
    assert_eq!(head.message_id, m0);
    h.ok(mark_failed(
        &head,
        "busy",
        retry(None, 60_000, 1_000, 60_000),
    ));
    // The head (row 0) is pending again but due in a minute; rows 1 and 2 are due now.
    assert_eq!(h.ok(cancel("d", None, true)), Outcome::Count(1));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(2)).status, RowStatus::Pending);
    assert_eq!(h.status(m1), MessageStatus::Processed);
    assert_eq!(h.status(m2), MessageStatus::Routed);
    // Even once the head is due again, row 2 was due earlier: it goes next, then the head.
    h.advance(60_000);
    assert_eq!(h.ok(cancel("d", None, true)), Outcome::Count(1));
    assert_eq!(h.row(RowId(2)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
    assert_eq!(h.ok(cancel("d", None, true)), Outcome::Count(1));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Cancelled);
}

#[test]
fn cancel_queued_with_a_channel_cancels_only_that_channels_rows() {
    let mut h = Harness::new();
    let a = h.enqueue_message("c1", &[("d", "p")]);
    let b = h.enqueue_message("c2", &[("d", "p")]);
    assert_eq!(h.ok(cancel("d", Some("c2"), false)), Outcome::Count(1));
    assert_eq!(h.status(a), MessageStatus::Routed);
    assert_eq!(h.status(b), MessageStatus::Processed);
}

#[test]
fn cancel_queued_rejects_an_invalid_destination() {
    let mut h = Harness::new();
    h.reject(
        cancel("", None, false),
        invalid("destination", "must not be empty"),
    );
}
