//! IngressHandoff with a child key: the re-ingested child named by the caller's own key and described by
//! the caller's fields (messagefoundry's `ingress_handoff`).

use crate::harness::*;

const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

fn keyed(row: &ClaimedRow, key: &str, peek_failed: bool) -> Command {
    Command::IngressHandoff(IngressHandoff {
        row_id: row.row_id,
        fence: row.fence,
        loopback_channel: "IB_LOOP".into(),
        depth_cap: 8,
        child: Some(ChildKey {
            key: key.into(),
            control_id: Some("R1".into()),
            message_type: Some("RSP^K11".into()),
            summary: None,
            peek_failed,
        }),
    })
}

fn claimed_response(h: &mut Harness) -> (MessageId, ClaimedRow) {
    let origin = response_row_pending(h, "OB1", "IB_LOOP");
    let row = h
        .fifo(Stage::Response, "IB_LOOP", "store-1", 60_000)
        .expect("response row");
    assert_eq!(row.message_id, origin);
    (origin, row)
}

#[test]
fn the_child_takes_the_callers_fields_and_is_found_by_the_callers_key() {
    // messagefoundry test_ingress_handoff_parity.
    let mut h = Harness::new();
    let (origin, row) = claimed_response(&mut h);
    assert_eq!(h.sm.read().message_by_child_key(KEY).unwrap(), None);
    let out = h.ok(keyed(&row, KEY, false));
    let Outcome::Reingressed(Some(child)) = out else {
        panic!("expected a child, got {out:?}")
    };
    assert_eq!(h.sm.read().message_by_child_key(KEY).unwrap(), Some(child));
    let c = h.view(child).message;
    assert_eq!(c.status, MessageStatus::Received);
    assert_eq!(c.channel_id, "IB_LOOP");
    assert_eq!(c.raw, "reply");
    assert_eq!(c.control_id.as_deref(), Some("R1"));
    assert_eq!(c.message_type.as_deref(), Some("RSP^K11"));
    assert_eq!(c.summary, None);
    assert_eq!(c.source_type.as_deref(), Some("reingress"));
    assert_eq!(
        c.correlation,
        Some(Correlation {
            correlation_id: origin,
            root_id: origin,
            depth: 1,
            reingress_of_seq: 1,
        })
    );
    assert_eq!(h.view(child).rows.len(), 1);
    assert_eq!(h.status(origin), MessageStatus::Processed);
    // The work row is consumed: the lane is empty, and a repeat answers wrong_status (the
    // engine's False).
    assert_eq!(
        h.fifo(Stage::Response, "IB_LOOP", "store-1", 60_000),
        Err(FifoEmpty::Empty)
    );
    h.reject(
        keyed(&row, KEY, false),
        wrong_status(row.row_id, "done", "inflight"),
    );
}

#[test]
fn a_replayed_response_maps_to_the_same_child_by_either_key() {
    let mut h = Harness::new();
    let (origin, row) = claimed_response(&mut h);
    let Outcome::Reingressed(Some(child)) = h.ok(keyed(&row, KEY, false)) else {
        panic!()
    };
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: origin })),
        Outcome::Count(2)
    );
    let again = h.claim_ready(Stage::Response, 1, "w", 1_000).remove(0);
    let before = h.sm.meta().next_message_id;
    // Under another caller key the child is still found, by the derived identity of the same
    // response, and the new key is recorded for it too.
    assert_eq!(
        h.ok(keyed(&again, "another-key", false)),
        Outcome::Reingressed(Some(child))
    );
    assert_eq!(h.sm.meta().next_message_id, before);
    assert_eq!(
        h.sm.read().message_by_child_key("another-key").unwrap(),
        Some(child)
    );
    assert_eq!(h.view(child).rows.len(), 1, "no second ingress row");
}

#[test]
fn a_child_made_by_the_plain_handoff_is_found_and_given_the_callers_key() {
    let mut h = Harness::new();
    let (origin, row) = claimed_response(&mut h);
    let Outcome::Reingressed(Some(child)) = h.ok(ingress_handoff(&row, "IB_LOOP", 8)) else {
        panic!()
    };
    // The plain handoff keeps the origin's message type and sets no control id.
    assert_eq!(h.view(child).message.control_id, None);
    h.ok(Command::Replay(Replay { message_id: origin }));
    let again = h.claim_ready(Stage::Response, 1, "w", 1_000).remove(0);
    assert_eq!(
        h.ok(keyed(&again, KEY, false)),
        Outcome::Reingressed(Some(child))
    );
    assert_eq!(h.sm.read().message_by_child_key(KEY).unwrap(), Some(child));
}

#[test]
fn a_body_the_caller_could_not_parse_makes_an_error_child_without_an_ingress_row() {
    let mut h = Harness::new();
    let (origin, row) = claimed_response(&mut h);
    let Outcome::Reingressed(Some(child)) = h.ok(keyed(&row, KEY, true)) else {
        panic!()
    };
    let v = h.view(child);
    assert_eq!(v.message.status, MessageStatus::Error);
    assert_eq!(
        v.message.error.as_deref(),
        Some("re-ingress body failed HL7 peek")
    );
    assert!(v.rows.is_empty());
    // One event, `received`, as messagefoundry records a child born in error.
    assert_eq!(h.event_kinds(child), vec![EventKind::Received]);
    assert_eq!(
        v.events[0].detail,
        Some(format!("reingress from {origin}/OB1/seq1"))
    );
    assert_eq!(h.status(origin), MessageStatus::Processed);
}

#[test]
fn the_depth_cap_and_bad_keys_behave_as_for_the_plain_handoff() {
    let mut h = Harness::new();
    let (_, row) = claimed_response(&mut h);
    h.reject(
        keyed(&row, "", false),
        invalid("child_key", "must not be empty"),
    );
    let capped = Command::IngressHandoff(IngressHandoff {
        depth_cap: 0,
        ..match keyed(&row, KEY, false) {
            Command::IngressHandoff(c) => c,
            _ => unreachable!(),
        }
    });
    assert_eq!(h.ok(capped), Outcome::Reingressed(None));
    assert_eq!(h.row(row.row_id).status, RowStatus::Dead);
    assert_eq!(h.sm.read().message_by_child_key(KEY).unwrap(), None);
    assert_eq!(keyed(&row, KEY, false).name(), "ingress_handoff_keyed");
}
