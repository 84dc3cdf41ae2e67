//! EnqueueIngress, RecordReceived and EnqueueMessage: inserting messages and their rows, channel and
//! destination validation, idempotency keys and their dedupe window.

use crate::harness::*;

fn config_with_window(window_ms: u64) -> ConfigDoc {
    let mut doc = ConfigDoc::default();
    doc.retention.dedupe_window_ms = Some(window_ms);
    doc
}

#[test]
fn enqueue_ingress_inserts_received_message_and_one_pending_ingress_row() {
    let mut h = Harness::new();
    let fields = MessageFields {
        control_id: Some("ctl-1".into()),
        message_type: Some("ADT^A01".into()),
        source_type: Some("mllp".into()),
        summary: Some("admit".into()),
        metadata: Some(r#"{"k":1}"#.into()),
    };
    let out = h.ok(Command::EnqueueIngress(EnqueueIngress {
        channel: "orders".into(),
        raw: "hello".into(),
        fields: fields.clone(),
        idempotency_key: None,
    }));
    assert_eq!(
        out,
        Outcome::Enqueued {
            message_id: MessageId(0),
            duplicate: false
        }
    );
    let v = h.view(MessageId(0));
    let m = &v.message;
    assert_eq!(m.channel_id, "orders");
    assert_eq!(m.received_at, T0);
    assert_eq!(m.raw, "hello");
    assert_eq!(m.status, MessageStatus::Received);
    assert_eq!(m.control_id, fields.control_id);
    assert_eq!(m.message_type, fields.message_type);
    assert_eq!(m.source_type, fields.source_type);
    assert_eq!(m.summary, fields.summary);
    assert_eq!(m.metadata, fields.metadata);
    assert_eq!(m.error, None);
    assert_eq!(v.events.len(), 1);
    assert_eq!(v.events[0].event, EventKind::Received);
    assert_eq!(v.events[0].detail.as_deref(), Some("ingress"));
    assert_eq!(v.events[0].ts, T0);
    assert_eq!(v.rows.len(), 1);
    let row = &v.rows[0];
    assert_eq!(row.id, RowId(0));
    assert_eq!(row.stage, Stage::Ingress);
    assert_eq!(row.status, RowStatus::Pending);
    assert_eq!(row.channel_id, "orders");
    assert_eq!(row.payload, "hello");
    assert_eq!(row.attempts, 0);
    assert_eq!(row.next_attempt_at, T0);
    assert_eq!(row.created_at, T0);
    assert_eq!(row.claim, None);
    assert_eq!(
        h.sm.read()
            .lane_order(Stage::Ingress, "orders", 10)
            .unwrap(),
        vec![RowId(0)]
    );
}

#[test]
fn enqueue_ingress_rejects_invalid_channel_names() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    h.reject(
        enqueue_cmd("", "x", None),
        invalid("channel", "must not be empty"),
    );
    h.reject(
        enqueue_cmd("bad\nname", "x", None),
        invalid("channel", "must not contain control characters"),
    );
    h.reject(
        enqueue_cmd(&"c".repeat(201), "x", None),
        invalid("channel", "longer than 200 bytes"),
    );
}

#[test]
fn enqueue_ingress_rejects_empty_or_overlong_idempotency_key() {
    let mut h = Harness::new();
    h.reject(
        enqueue_cmd("orders", "x", Some("")),
        invalid("idempotency_key", "must be 1 to 200 bytes"),
    );
    h.reject(
        enqueue_cmd("orders", "x", Some(&"k".repeat(201))),
        invalid("idempotency_key", "must be 1 to 200 bytes"),
    );
}

#[test]
fn duplicate_idempotency_key_returns_original_id_and_inserts_nothing() {
    let mut h = Harness::new();
    let (first, dup) = h.enqueue_key("orders", "one", "k1");
    assert!(!dup);
    h.advance(10);
    h.no_change(
        enqueue_cmd("orders", "two", Some("k1")),
        Outcome::Enqueued {
            message_id: first,
            duplicate: true,
        },
    );
    assert_eq!(h.view(first).message.raw, "one");
    // The same key on another channel is a different key.
    let (other, dup) = h.enqueue_key("billing", "three", "k1");
    assert!(!dup);
    assert_ne!(other, first);
}

#[test]
fn duplicate_idempotency_key_also_applies_to_enqueue_message() {
    let mut h = Harness::new();
    let cmd = |raw: &str| {
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: raw.into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d", "p")],
            idempotency_key: Some("k".into()),
        })
    };
    let (first, dup) = enqueued(h.ok(cmd("one")));
    assert!(!dup);
    h.no_change(
        cmd("two"),
        Outcome::Enqueued {
            message_id: first,
            duplicate: true,
        },
    );
}

#[test]
fn idempotency_key_never_expires_while_its_message_is_in_flight() {
    let mut h = Harness::new();
    let (id, _) = h.enqueue_key("orders", "one", "k1");
    // Far beyond any dedupe window: the message is still received (in flight).
    h.advance(40 * DEFAULT_DEDUPE_WINDOW_MS);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "again", Some("k1"))),
        Outcome::Enqueued {
            message_id: id,
            duplicate: true
        }
    );
}

#[test]
fn idempotency_key_expires_only_after_terminal_status_plus_dedupe_window() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with_window(5_000)));
    let (id, _) = h.enqueue_key("orders", "one", "k1");
    let row = h.claim_one(Stage::Ingress);
    h.advance(100);
    // Terminal now (filtered): the window starts here.
    assert_eq!(
        h.ok(handoff(&row, &[], HandoffDisposition::Filtered)),
        Outcome::HandedOff(true)
    );
    assert_eq!(h.status(id), MessageStatus::Filtered);
    h.advance(4_999);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "dup", Some("k1"))),
        Outcome::Enqueued {
            message_id: id,
            duplicate: true
        }
    );
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(1));
    let (fresh, dup) = h.enqueue_key("orders", "new", "k1");
    assert!(!dup);
    assert_ne!(fresh, id);
    assert_eq!(h.view(fresh).message.raw, "new");
}

#[test]
fn reused_idempotency_key_is_not_dropped_by_the_previous_use_expiring() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with_window(5_000)));
    let (first, _) = h.enqueue_key("orders", "one", "k1");
    let row = h.claim_one(Stage::Ingress);
    h.ok(handoff(&row, &[], HandoffDisposition::Filtered));
    // The window passes but no ExpireRecords ran yet: the key is reused by a new message.
    h.advance(5_000);
    let (second, dup) = h.enqueue_key("orders", "two", "k1");
    assert!(!dup);
    assert_ne!(second, first);
    // The first use's expiry must not take the second (in-flight) message's key with it.
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "three", Some("k1"))),
        Outcome::Enqueued {
            message_id: second,
            duplicate: true
        }
    );
}

#[test]
fn record_received_filtered_keeps_message_without_rows() {
    let mut h = Harness::new();
    let out = h.ok(Command::RecordReceived(RecordReceived {
        channel: "orders".into(),
        raw: "junk".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Filtered,
        error: None,
    }));
    let (id, _) = enqueued(out);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Filtered);
    assert_eq!(v.message.raw, "junk");
    assert!(v.rows.is_empty());
    // One event, the disposition itself (messagefoundry's record_received).
    assert_eq!(h.event_kinds(id), vec![EventKind::Filtered]);
    assert_eq!(v.events[0].detail, None);
}

#[test]
fn record_received_error_keeps_message_with_its_error() {
    let mut h = Harness::new();
    let out = h.ok(Command::RecordReceived(RecordReceived {
        channel: "orders".into(),
        raw: "junk".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Error,
        error: Some("unparseable".into()),
    }));
    let (id, _) = enqueued(out);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Error);
    assert_eq!(v.message.error.as_deref(), Some("unparseable"));
    assert!(v.rows.is_empty());
    assert_eq!(h.event_kinds(id), vec![EventKind::Error]);
    assert_eq!(v.events[0].detail.as_deref(), Some("unparseable"));
}

#[test]
fn record_received_rejects_invalid_channel() {
    let mut h = Harness::new();
    h.reject(
        Command::RecordReceived(RecordReceived {
            channel: String::new(),
            raw: "junk".into(),
            fields: MessageFields::default(),
            status: ReceivedStatus::Filtered,
            error: None,
        }),
        invalid("channel", "must not be empty"),
    );
}

#[test]
fn enqueue_message_is_routed_with_one_outbound_row_per_delivery_in_list_order() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("a", "p1"), ("b", "p2"), ("a", "p3")]);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let rows: Vec<_> = v
        .rows
        .iter()
        .map(|r| {
            (
                r.id,
                r.stage,
                r.destination_name.as_deref().unwrap(),
                r.payload.as_str(),
                r.status,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (RowId(0), Stage::Outbound, "a", "p1", RowStatus::Pending),
            (RowId(1), Stage::Outbound, "b", "p2", RowStatus::Pending),
            (RowId(2), Stage::Outbound, "a", "p3", RowStatus::Pending),
        ]
    );
    // One event: messagefoundry's enqueue_message writes `received` "N destination(s)".
    assert_eq!(h.event_kinds(id), vec![EventKind::Received]);
    assert_eq!(v.events[0].detail.as_deref(), Some("3 destination(s)"));
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "a", 10).unwrap(),
        vec![RowId(0), RowId(2)]
    );
}

#[test]
fn enqueue_message_without_deliveries_is_unrouted() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[]);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Unrouted);
    assert!(v.rows.is_empty());
    assert_eq!(h.event_kinds(id), vec![EventKind::Received]);
    assert_eq!(v.events[0].detail.as_deref(), Some("0 destination(s)"));
}

#[test]
fn enqueue_message_rejects_an_invalid_destination() {
    let mut h = Harness::new();
    h.reject(
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "x".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("ok", "p"), delivery("", "p")],
            idempotency_key: None,
        }),
        invalid("deliveries.destination", "must not be empty"),
    );
}
