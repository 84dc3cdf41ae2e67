//! DeadLetterMissingDestinations and DeadLetterMissingHandlers: the engine's start-up sweeps of
//! rows whose destination or handler left its registry.

use crate::harness::*;
use raftlane_statemachine::wire::command::{
    DeadLetterMissingDestinations, DeadLetterMissingHandlers,
};

fn sweep_destinations(known: &[&str]) -> Command {
    Command::DeadLetterMissingDestinations(DeadLetterMissingDestinations {
        destinations: known.iter().map(|d| d.to_string()).collect(),
    })
}

fn sweep_handlers(known: &[&str]) -> Command {
    Command::DeadLetterMissingHandlers(DeadLetterMissingHandlers {
        handlers: known.iter().map(|d| d.to_string()).collect(),
    })
}

#[test]
fn a_row_to_a_destination_missing_from_the_set_is_dead_lettered_and_its_message_errors() {
    // messagefoundry test_dead_letter_missing_destinations.
    let mut h = Harness::new();
    let id = h.enqueue_message("IB", &[("GONE", "p")]);
    h.advance(100);
    assert_eq!(h.ok(sweep_destinations(&["OB1"])), Outcome::Count(1));
    let row = h.row(RowId(0));
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("destination removed from outbound registry")
    );
    assert_eq!(row.updated_at, T0 + 100);
    assert_eq!(h.status(id), MessageStatus::Error);
    let last = h.view(id).events.pop().expect("event");
    assert_eq!(last.event, EventKind::Dead);
    assert_eq!(last.destination.as_deref(), Some("GONE"));
    assert_eq!(
        last.detail.as_deref(),
        Some("destination removed from outbound registry")
    );
    assert_eq!(
        h.audit(DEFAULT_ORG).pop().map(|r| (r.action, r.detail)),
        Some((
            "queue.dead_letter_missing_destinations".into(),
            Some("1 row(s); destination(s) GONE".into())
        ))
    );
}

#[test]
fn the_destination_sweep_takes_live_outbound_rows_only() {
    let mut h = Harness::new();
    let done = h.outbound_claimed("IB", "GONE"); // row 0
    assert_eq!(h.mark_done(&done), Ok(Outcome::Done));
    let inflight = h.outbound_claimed("IB", "OLD"); // row 1
    let keep = h.enqueue_message("IB", &[("OB1", "a"), ("GONE", "b"), ("OLD", "c")]); // rows 2-4
    h.enqueue("GONE", "ingress rows have no destination"); // row 5
    assert_eq!(h.ok(sweep_destinations(&["OB1"])), Outcome::Count(3));
    assert_eq!(h.row(done.row_id).status, RowStatus::Done);
    assert_eq!(h.row(inflight.row_id).status, RowStatus::Dead);
    assert_eq!(h.row(RowId(2)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(3)).status, RowStatus::Dead);
    assert_eq!(h.row(RowId(4)).status, RowStatus::Dead);
    assert_eq!(h.row(RowId(5)).status, RowStatus::Pending);
    assert_eq!(h.status(keep), MessageStatus::Routed, "row 2 is still live");
    // The holder of the swept inflight row can no longer complete it.
    h.reject(
        mark_done(&inflight),
        wrong_status(inflight.row_id, "dead", "inflight"),
    );
    assert_eq!(
        h.audit(DEFAULT_ORG).pop().and_then(|r| r.detail),
        Some("3 row(s); destination(s) GONE, OLD".into())
    );
    // Nothing left to sweep: nothing changes, no audit row.
    h.no_change(sweep_destinations(&["OB1"]), Outcome::Count(0));
    // An empty set sweeps every live outbound row.
    assert_eq!(h.ok(sweep_destinations(&[])), Outcome::Count(1));
    assert_eq!(h.status(keep), MessageStatus::Error);
}

#[test]
fn the_handler_sweep_takes_live_routed_rows_whose_handler_is_missing() {
    let mut h = Harness::new();
    let id = h.enqueue("IB", "m");
    let ingress = h.claim_one(Stage::Ingress);
    assert_eq!(
        h.ok(route(&ingress, &[("H1", "x"), ("H_GONE", "y")])),
        Outcome::HandedOff(true)
    );
    let other = h.enqueue("IB", "n");
    let ingress2 = h.claim_one(Stage::Ingress);
    assert_eq!(
        h.ok(route(&ingress2, &[("H_GONE", "z")])),
        Outcome::HandedOff(true)
    );
    let rows: Vec<_> = h.view(other).rows;
    let gone_inflight = h.claim_ready(Stage::Routed, 3, "w", 1_000);
    assert_eq!(gone_inflight.len(), 3);
    h.enqueue_message("IB", &[("H_GONE", "outbound rows are not routed rows")]);
    assert_eq!(h.ok(sweep_handlers(&["H1"])), Outcome::Count(2));
    let by_handler = |h: &Harness, msg| {
        h.view(msg)
            .rows
            .into_iter()
            .map(|r| (r.handler_name.unwrap_or_default(), r.status))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by_handler(&h, id),
        vec![
            ("H1".to_string(), RowStatus::Inflight),
            ("H_GONE".to_string(), RowStatus::Dead)
        ]
    );
    assert_eq!(h.status(other), MessageStatus::Error);
    assert_eq!(rows.len(), 1);
    let dead = h.row(rows[0].id);
    assert_eq!(
        dead.last_error.as_deref(),
        Some("handler removed from registry")
    );
    let last = h.view(other).events.pop().expect("event");
    assert_eq!(last.destination, None);
    assert_eq!(
        last.detail.as_deref(),
        Some("handler removed from registry")
    );
    assert_eq!(
        h.row(RowId(5)).status,
        RowStatus::Pending,
        "the outbound row"
    );
    assert_eq!(
        h.audit(DEFAULT_ORG).pop().map(|r| (r.action, r.detail)),
        Some((
            "queue.dead_letter_missing_handlers".into(),
            Some("2 row(s); handler(s) H_GONE".into())
        ))
    );
    assert_eq!(sweep_handlers(&[]).name(), "dead_letter_missing_handlers");
    assert_eq!(
        sweep_destinations(&[]).name(),
        "dead_letter_missing_destinations"
    );
}
