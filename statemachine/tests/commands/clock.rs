//! The state machine's clock: proposer timestamps are clamped, and a rejection leaves it alone.

use crate::harness::*;
use raftlane_statemachine::wire::layout_v1::{self, CommandV1};

#[test]
fn earlier_now_ms_is_clamped_to_the_clock_and_fifo_order_is_kept() {
    let mut h = Harness::new();
    h.advance(5_000);
    let late = h.enqueue_message("orders", &[("d", "first")]);
    // A proposer whose clock is 5 s behind.
    let out = h.run_at(
        T0,
        ACTOR,
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "second".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d", "second")],
            idempotency_key: None,
        }),
    );
    let (early, _) = enqueued(out.unwrap());
    assert_eq!(h.clock(), T0 + 5_000);
    assert_eq!(h.view(early).message.received_at, T0 + 5_000);
    assert_eq!(h.view(early).events[0].ts, T0 + 5_000);
    assert_eq!(h.row(RowId(1)).created_at, T0 + 5_000);
    assert_eq!(h.view(late).rows[0].created_at, T0 + 5_000);
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "d", 10).unwrap(),
        vec![RowId(0), RowId(1)]
    );
    // A claim proposed with the old clock gets its lease from t, not from now_ms.
    let claimed = h
        .run_at(T0, "a", fifo_cmd(Stage::Outbound, "d", "a", 1_000))
        .unwrap();
    match claimed {
        Outcome::FifoClaimed(Ok(row)) => {
            assert_eq!(row.row_id, RowId(0));
            assert_eq!(row.lease_expires_at, T0 + 6_000);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_rejected_command_does_not_even_advance_the_clock() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    let before = h.sm.meta().clone();
    h.advance(500);
    let rejected = h.run(Command::MarkDone(MarkDone {
        row_id: RowId(77),
        fence: Fence(1),
    }));
    assert_eq!(rejected, Err(Rejection::UnknownRow(RowId(77))));
    assert_eq!(h.clock(), before.clock);
    assert_eq!(h.sm.meta().next_message_id, before.next_message_id);
    assert_eq!(h.sm.meta().next_row_id, before.next_row_id);
}

/// Test mode's exact time (docs/SPEC.md §2.1): an envelope's client time applies its command at the time
/// it names, even before the machine's clock, and leaves that clock where it was.
#[test]
fn a_client_time_command_applies_at_exactly_its_time_and_leaves_the_clock() {
    let mut h = Harness::new();
    h.advance(5_000);
    h.enqueue("orders", "first");
    let before = h.clock();
    assert_eq!(before, T0 + 5_000);
    let at = at_client_time;
    let out = h.run(at(
        T0 - 1_000,
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "early".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d", "early")],
            idempotency_key: None,
        }),
    ));
    let (id, _) = enqueued(out.unwrap());
    assert_eq!(h.view(id).message.received_at, T0 - 1_000);
    assert_eq!(h.view(id).rows[0].created_at, T0 - 1_000);
    assert_eq!(h.clock(), before, "the machine's clock does not move");
    // A lease taken at a client time runs from that time.
    match h.run(at(T0 + 7, fifo_cmd(Stage::Outbound, "d", "a", 100))) {
        Ok(Outcome::FifoClaimed(Ok(row))) => assert_eq!(row.lease_expires_at, T0 + 107),
        other => panic!("unexpected {other:?}"),
    }
    // A format 1 log's client time nested in another names no single time: refused, and
    // nothing changes but the applied index.
    let meta = h.sm.meta().clone();
    let wrap = |c| {
        CommandV1::AtClientTime(layout_v1::AtClientTime {
            now_ms: T0,
            command: Box::new(c),
        })
    };
    let nested = h.run(legacy(wrap(wrap(CommandV1::ExpireRecords))));
    assert!(
        matches!(nested, Err(Rejection::Invalid { ref field, .. }) if field == "command"),
        "{nested:?}"
    );
    let after = h.sm.meta();
    assert_eq!(
        (
            after.clock,
            after.next_message_id,
            after.next_row_id,
            &after.row_counts
        ),
        (
            meta.clock,
            meta.next_message_id,
            meta.next_row_id,
            &meta.row_counts
        )
    );
}
