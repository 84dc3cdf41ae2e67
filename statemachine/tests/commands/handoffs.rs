//! RouteHandoff, Handoff and TransformHandoff, and a full pipeline from ingress to processed.

use crate::harness::*;

#[test]
fn route_handoff_consumes_ingress_and_inserts_routed_rows_in_list_order() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    assert_eq!(
        h.ok(route(&ing, &[("h1", "p1"), ("h2", "p2")])),
        Outcome::HandedOff(true)
    );
    assert_eq!(h.sm.read().row(ing.row_id).unwrap(), None);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let rows: Vec<_> = v
        .rows
        .iter()
        .map(|r| {
            (
                r.id,
                r.stage,
                r.handler_name.as_deref().unwrap(),
                r.payload.as_str(),
                r.status,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (RowId(1), Stage::Routed, "h1", "p1", RowStatus::Pending),
            (RowId(2), Stage::Routed, "h2", "p2", RowStatus::Pending),
        ]
    );
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Routed]
    );
    assert_eq!(v.events[1].detail.as_deref(), Some("2 handler(s)"));
    assert_eq!(
        h.sm.read().lane_order(Stage::Routed, "orders", 10).unwrap(),
        vec![RowId(1), RowId(2)]
    );
}

#[test]
fn route_handoff_unrouted_disposition_sets_unrouted() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    let out = h.ok(Command::RouteHandoff(RouteHandoff {
        row_id: ing.row_id,
        fence: ing.fence,
        handlers: vec![],
        disposition: RouteDisposition::Unrouted,
    }));
    assert_eq!(out, Outcome::HandedOff(true));
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Unrouted);
    assert!(v.rows.is_empty());
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Unrouted]
    );
}

#[test]
fn route_handoff_retry_after_consumption_is_false_and_changes_nothing() {
    let mut h = Harness::new();
    h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    assert_eq!(h.ok(route(&ing, &[("h1", "p1")])), Outcome::HandedOff(true));
    h.no_change(route(&ing, &[("h1", "p1")]), Outcome::HandedOff(false));
}

#[test]
fn route_handoff_rejects_an_invalid_handler_name() {
    let mut h = Harness::new();
    h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    h.reject(
        route(&ing, &[("h1", "p"), ("", "p")]),
        invalid("handlers.handler", "must not be empty"),
    );
    assert_eq!(h.row(ing.row_id).status, RowStatus::Inflight);
}

#[test]
fn handoff_goes_straight_to_outbound_rows() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    let out = h.ok(handoff(
        &ing,
        &[("d1", "p1"), ("d2", "p2")],
        HandoffDisposition::Routed,
    ));
    assert_eq!(out, Outcome::HandedOff(true));
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let rows: Vec<_> = v
        .rows
        .iter()
        .map(|r| {
            (
                r.stage,
                r.destination_name.clone().unwrap(),
                r.payload.clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (Stage::Outbound, "d1".to_string(), "p1".to_string()),
            (Stage::Outbound, "d2".to_string(), "p2".to_string()),
        ]
    );
    assert_eq!(v.events[1].detail.as_deref(), Some("2 destination(s)"));
    h.no_change(
        handoff(&ing, &[("d1", "p1")], HandoffDisposition::Routed),
        Outcome::HandedOff(false),
    );
}

#[test]
fn handoff_filtered_and_unrouted_dispositions_set_the_status() {
    for (disposition, status, kind) in [
        (
            HandoffDisposition::Filtered,
            MessageStatus::Filtered,
            EventKind::Filtered,
        ),
        (
            HandoffDisposition::Unrouted,
            MessageStatus::Unrouted,
            EventKind::Unrouted,
        ),
    ] {
        let mut h = Harness::new();
        let id = h.enqueue("orders", "raw");
        let ing = h.claim_one(Stage::Ingress);
        assert_eq!(
            h.ok(handoff(&ing, &[], disposition)),
            Outcome::HandedOff(true)
        );
        assert_eq!(h.status(id), status);
        assert_eq!(h.event_kinds(id), vec![EventKind::Received, kind]);
        assert!(h.view(id).rows.is_empty());
    }
}

#[test]
fn transform_handoff_upserts_state_and_bumps_each_namespace_once() {
    let mut h = Harness::new();
    let id = routed_message(&mut h, "orders", &[("h1", "p")]);
    let routed = h.claim_one(Stage::Routed);
    h.advance(7);
    let ops = [
        ("ns1", "k1", "1"),
        ("ns1", "k2", "2"),
        ("ns2", "k1", "3"),
        ("ns1", "k1", "4"),
    ];
    assert_eq!(
        h.ok(transform(&routed, &[("d", "out")], &ops)),
        Outcome::HandedOff(true)
    );
    let r = h.sm.read();
    assert_eq!(r.namespace_version("ns1").unwrap(), 1);
    assert_eq!(r.namespace_version("ns2").unwrap(), 1);
    assert_eq!(r.namespace_version("ns3").unwrap(), 0);
    let entry = r.state_entry("ns1", "k1").unwrap().unwrap();
    assert_eq!(entry.value, "4");
    assert_eq!(entry.set_at, T0 + 7);
    assert_eq!(entry.message_id, id);
    assert_eq!(r.state_entry("ns1", "k2").unwrap().unwrap().value, "2");
    assert_eq!(r.state_entry("ns2", "k1").unwrap().unwrap().value, "3");
    drop(r);
    // The routed row is consumed; one outbound row; status still routed (not final yet).
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    assert_eq!(v.rows.len(), 1);
    assert_eq!(v.rows[0].stage, Stage::Outbound);
    let last = v.events.last().unwrap();
    assert_eq!(last.event, EventKind::Transformed);
    assert_eq!(last.detail.as_deref(), Some("1 destination(s)"));
    // A second transform touching ns1 bumps it again, once.
    routed_message(&mut h, "orders", &[("h1", "p")]);
    let routed = h.claim_one(Stage::Routed);
    h.ok(transform(
        &routed,
        &[],
        &[("ns1", "k9", "9"), ("ns1", "k8", "8")],
    ));
    assert_eq!(h.sm.read().namespace_version("ns1").unwrap(), 2);
    assert_eq!(h.sm.read().namespace_version("ns2").unwrap(), 1);
    // Already consumed: false, nothing changes.
    h.no_change(
        transform(&routed, &[], &[("ns1", "k9", "9")]),
        Outcome::HandedOff(false),
    );
}

#[test]
fn transform_handoff_rejects_invalid_state_op_names() {
    let mut h = Harness::new();
    routed_message(&mut h, "orders", &[("h1", "p")]);
    let routed = h.claim_one(Stage::Routed);
    h.reject(
        transform(&routed, &[("d", "p")], &[("", "k", "1")]),
        invalid("state_ops.namespace", "must not be empty"),
    );
    h.reject(
        transform(&routed, &[("d", "p")], &[("ns", "", "1")]),
        invalid("state_ops.key", "must not be empty"),
    );
    h.reject(
        transform(&routed, &[("", "p")], &[]),
        invalid("deliveries.destination", "must not be empty"),
    );
}

#[test]
fn transform_with_zero_deliveries_and_no_other_rows_finalizes_filtered() {
    let mut h = Harness::new();
    let id = routed_message(&mut h, "orders", &[("h1", "p")]);
    let routed = h.claim_one(Stage::Routed);
    assert_eq!(h.ok(transform(&routed, &[], &[])), Outcome::HandedOff(true));
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Filtered);
    assert!(v.rows.is_empty());
    assert_eq!(
        h.event_kinds(id),
        vec![
            EventKind::Received,
            EventKind::Routed,
            EventKind::Transformed
        ]
    );
}

#[test]
fn transform_with_zero_deliveries_waits_for_sibling_handlers() {
    let mut h = Harness::new();
    let id = routed_message(&mut h, "orders", &[("h1", "p"), ("h2", "p")]);
    let first = h.claim_one(Stage::Routed);
    h.ok(transform(&first, &[], &[]));
    assert_eq!(h.status(id), MessageStatus::Routed);
    let second = h.claim_one(Stage::Routed);
    h.ok(transform(&second, &[], &[]));
    assert_eq!(h.status(id), MessageStatus::Filtered);
}

#[test]
fn full_pipeline_ends_processed_with_the_right_event_sequence() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    let ing = h.claim_one(Stage::Ingress);
    assert_eq!(ing.message_id, id);
    assert_eq!(
        h.ok(route(&ing, &[("h1", "routed-payload")])),
        Outcome::HandedOff(true)
    );
    assert_eq!(h.status(id), MessageStatus::Routed);
    let routed = h.claim_one(Stage::Routed);
    assert_eq!(routed.handler_name.as_deref(), Some("h1"));
    assert_eq!(routed.payload, "routed-payload");
    let out = h.ok(transform(
        &routed,
        &[("dest", "final")],
        &[
            ("counters", "seen", "1"),
            ("counters", "last", "\"x\""),
            ("other", "k", "true"),
        ],
    ));
    assert_eq!(out, Outcome::HandedOff(true));
    assert_eq!(h.sm.read().namespace_version("counters").unwrap(), 1);
    assert_eq!(h.sm.read().namespace_version("other").unwrap(), 1);
    assert_eq!(h.status(id), MessageStatus::Routed);
    let outbound = h
        .fifo(Stage::Outbound, "dest", "sender", 10_000)
        .expect("outbound head");
    assert_eq!(outbound.payload, "final");
    assert_eq!(h.mark_done(&outbound), Ok(Outcome::Done));
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Processed);
    assert_eq!(
        h.event_kinds(id),
        vec![
            EventKind::Received,
            EventKind::Routed,
            EventKind::Transformed,
            EventKind::Delivered
        ]
    );
    let delivered = v.events.last().unwrap();
    assert_eq!(delivered.destination.as_deref(), Some("dest"));
    assert_eq!(delivered.detail.as_deref(), Some("attempt 1"));
    assert_eq!(v.rows.len(), 1);
    assert_eq!(v.rows[0].status, RowStatus::Done);
    assert_eq!(v.rows[0].claim, None);
    let stats = h.sm.read().stats();
    assert_eq!(stats.rows["outbound"]["done"], 1);
    assert_eq!(stats.rows["ingress"].values().sum::<u64>(), 0);
    assert_eq!(stats.rows["routed"].values().sum::<u64>(), 0);
}
