//! CompleteWithResponse and IngressHandoff: captured responses, re-ingress rows and correlated
//! child messages.

use crate::harness::*;

/// As [`response_row_pending`], with the response row claimed by "worker".
fn response_row_claimed(
    h: &mut Harness,
    destination: &str,
    loopback: &str,
) -> (MessageId, ClaimedRow) {
    let origin = response_row_pending(h, destination, loopback);
    let row = h.claim_one(Stage::Response);
    assert_eq!(row.message_id, origin);
    (origin, row)
}

#[test]
fn complete_with_response_captures_the_response_and_finalizes() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.advance(3);
    assert_eq!(h.ok(respond(&row, "resp-1", None)), Outcome::Done);
    let v = h.view(row.message_id);
    assert_eq!(v.message.status, MessageStatus::Processed);
    assert_eq!(v.rows.len(), 1);
    assert_eq!(v.rows[0].status, RowStatus::Done);
    assert_eq!(v.responses.len(), 1);
    let r = &v.responses[0];
    assert_eq!(r.message_id, row.message_id);
    assert_eq!(r.destination, "api");
    assert_eq!(r.response_seq, 1);
    assert_eq!(r.body, "resp-1");
    assert_eq!(r.outcome, "200");
    assert_eq!(r.detail.as_deref(), Some("ok"));
    assert_eq!(r.captured_at, T0 + 3);
    let event = v.events.last().unwrap();
    assert_eq!(event.event, EventKind::Delivered);
    assert_eq!(event.detail.as_deref(), Some("attempt 1 (response 200)"));
}

#[test]
fn complete_with_response_increments_response_seq_per_message_and_destination() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.ok(respond(&row, "first", None));
    // Re-send the delivered row and answer again.
    assert_eq!(
        h.ok(Command::Replay(Replay {
            message_id: row.message_id
        })),
        Outcome::Count(1)
    );
    let again = h.claim_one(Stage::Outbound);
    h.ok(respond(&again, "second", None));
    let v = h.view(row.message_id);
    let seqs: Vec<_> = v
        .responses
        .iter()
        .map(|r| (r.response_seq, r.body.as_str()))
        .collect();
    assert_eq!(seqs, vec![(1, "first"), (2, "second")]);
    // Another destination of another message starts at 1.
    let other = h.outbound_claimed("orders", "api2");
    h.ok(respond(&other, "x", None));
    assert_eq!(h.view(other.message_id).responses[0].response_seq, 1);
}

#[test]
fn complete_with_response_reingress_creates_a_response_row_referencing_the_response() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    assert_eq!(h.ok(respond(&row, "reply", Some("loop"))), Outcome::Done);
    let v = h.view(row.message_id);
    // The response row is live, so the message is not final yet.
    assert_eq!(v.message.status, MessageStatus::Routed);
    let resp: Vec<_> = v
        .rows
        .iter()
        .filter(|r| r.stage == Stage::Response)
        .collect();
    assert_eq!(resp.len(), 1);
    let resp = resp[0];
    assert_eq!(resp.status, RowStatus::Pending);
    assert_eq!(resp.channel_id, "loop");
    assert_eq!(resp.destination_name.as_deref(), Some("api"));
    let reference: ResponseRef = serde_json::from_str(&resp.payload).unwrap();
    assert_eq!(
        reference,
        ResponseRef {
            message_id: row.message_id,
            destination: "api".into(),
            seq: 1
        }
    );
    assert_eq!(
        h.sm.read().lane_order(Stage::Response, "loop", 10).unwrap(),
        vec![resp.id]
    );
}

#[test]
fn complete_with_response_rejects_an_invalid_reingress_channel() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.reject(
        respond(&row, "b", Some("")),
        invalid("reingress_to", "must not be empty"),
    );
}

#[test]
fn ingress_handoff_creates_a_correlated_child_message_and_finalizes_the_origin() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let child = MessageId(1);
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 3)),
        Outcome::Reingressed(Some(child))
    );
    let c = h.view(child);
    assert_eq!(c.message.channel_id, "loop");
    assert_eq!(c.message.raw, "reply");
    assert_eq!(c.message.status, MessageStatus::Received);
    assert_eq!(c.message.source_type.as_deref(), Some("reingress"));
    assert_eq!(
        c.message.correlation,
        Some(Correlation {
            correlation_id: origin,
            root_id: origin,
            depth: 1,
            reingress_of_seq: 1
        })
    );
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].stage, Stage::Ingress);
    assert_eq!(c.rows[0].payload, "reply");
    assert_eq!(h.event_kinds(child), vec![EventKind::Received]);
    assert_eq!(
        c.events[0].detail,
        Some(format!("reingress from {origin}/api/seq1"))
    );
    let o = h.view(origin);
    assert_eq!(o.message.status, MessageStatus::Processed);
    assert_eq!(h.row(resp.row_id).status, RowStatus::Done);
    let event = o.events.last().unwrap();
    assert_eq!(event.event, EventKind::Reingressed);
    assert_eq!(event.destination.as_deref(), Some("api"));
    assert_eq!(event.detail.as_deref(), Some("-> 1 depth 1"));
}

#[test]
fn ingress_handoff_of_the_same_response_again_maps_to_the_same_child() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let Outcome::Reingressed(Some(child)) = h.ok(ingress_handoff(&resp, "loop", 3)) else {
        panic!()
    };
    // Re-send everything of the origin (the outbound row and the response row).
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: origin })),
        Outcome::Count(2)
    );
    let again = h.claim_ready(Stage::Response, 1, "w", 1_000).remove(0);
    assert_eq!(again.row_id, resp.row_id);
    let messages_before = h.sm.meta().next_message_id;
    assert_eq!(
        h.ok(ingress_handoff(&again, "loop", 3)),
        Outcome::Reingressed(Some(child))
    );
    assert_eq!(h.sm.meta().next_message_id, messages_before);
    assert_eq!(h.view(child).rows.len(), 1);
}

#[test]
fn ingress_handoff_of_a_child_carries_the_root_and_depth() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let Outcome::Reingressed(Some(child)) = h.ok(ingress_handoff(&resp, "loop", 2)) else {
        panic!()
    };
    // The child flows through its own pipeline and its answer is re-ingested too.
    let ing = h.claim_one(Stage::Ingress);
    assert_eq!(ing.message_id, child);
    h.ok(handoff(
        &ing,
        &[("api", "again")],
        HandoffDisposition::Routed,
    ));
    let out = h.claim_one(Stage::Outbound);
    h.ok(respond(&out, "reply-2", Some("loop")));
    let resp2 = h.claim_one(Stage::Response);
    let Outcome::Reingressed(Some(grandchild)) = h.ok(ingress_handoff(&resp2, "loop", 2)) else {
        panic!()
    };
    assert_eq!(
        h.view(grandchild).message.correlation,
        Some(Correlation {
            correlation_id: child,
            root_id: origin,
            depth: 2,
            reingress_of_seq: 1
        })
    );
}

#[test]
fn ingress_handoff_over_the_depth_cap_dead_letters_the_row_and_finalizes_the_origin() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let messages_before = h.sm.meta().next_message_id;
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 0)),
        Outcome::Reingressed(None)
    );
    assert_eq!(h.sm.meta().next_message_id, messages_before);
    let row = h.row(resp.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("re-ingress correlation depth exceeded (1 > 0)")
    );
    assert_eq!(h.status(origin), MessageStatus::Error);
    let event = h.view(origin).events.pop().unwrap();
    assert_eq!(event.event, EventKind::Dead);
    assert_eq!(event.destination.as_deref(), Some("api"));
    assert_eq!(event.detail.as_deref(), Some("re-ingress depth cap (1)"));
}

#[test]
fn ingress_handoff_with_a_corrupt_reference_dead_letters_the_row() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    // Corrupt the stored reference behind the state machine's back.
    let mut row = h.row(resp.row_id);
    row.payload = "not a reference".into();
    let mut batch = WriteBatch::default();
    batch.put(
        Table::Rows,
        resp.row_id.to_be_bytes().to_vec(),
        codec::encode(&row),
    );
    h.sm.store_mut().write(batch).unwrap();
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 3)),
        Outcome::Reingressed(None)
    );
    let row = h.row(resp.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("re-ingress work-row reference is corrupt/unparseable")
    );
    assert_eq!(h.status(origin), MessageStatus::Error);
    // messagefoundry's event: no destination (it could not read one), a short detail.
    let event = h.view(origin).events.pop().unwrap();
    assert_eq!(event.event, EventKind::Dead);
    assert_eq!(event.destination, None);
    assert_eq!(event.detail.as_deref(), Some("re-ingress ref corrupt"));
    assert_eq!(h.sm.meta().next_message_id, 1);
}

#[test]
fn ingress_handoff_rejects_an_invalid_loopback_channel() {
    let mut h = Harness::new();
    let (_, resp) = response_row_claimed(&mut h, "api", "loop");
    h.reject(
        ingress_handoff(&resp, "", 3),
        invalid("loopback_channel", "must not be empty"),
    );
}
