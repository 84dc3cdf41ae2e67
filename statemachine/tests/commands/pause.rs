//! SetDestinationPaused (docs/SPEC.md §4.9): a paused destination keeps its rows and hands none
//! out, by ClaimReady, by a FIFO claim of its lane, or to a probe a waiting claim reads; a
//! resume hands them out again in their order. Audited, and counted once per change.

use crate::harness::*;
use raftlane_statemachine::model::lane::LaneEvent;
use raftlane_statemachine::model::row::ClaimChance;
use raftlane_statemachine::wire::command::SetDestinationPaused;

fn set(destination: &str, paused: bool) -> Command {
    Command::SetDestinationPaused(SetDestinationPaused {
        destination: destination.into(),
        paused,
        reason: paused.then(|| "EMR down for maintenance".into()),
    })
}

fn claim_outbound(h: &mut Harness, destination: Option<&str>) -> Vec<ClaimedRow> {
    match h.ok(Command::ClaimReady(ClaimReady {
        stage: Stage::Outbound,
        limit: 10,
        channel: None,
        destination: destination.map(str::to_string),
        owner: "worker".into(),
        ttl_ms: 30_000,
    })) {
        Outcome::Claimed(rows) => rows,
        other => panic!("expected Claimed, got {other:?}"),
    }
}

#[test]
fn a_paused_destination_hands_out_nothing_until_resumed() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("EMR", "a"), ("LAB", "b")]); // rows 0, 1
    h.enqueue_message("IB", &[("EMR", "c")]); // row 2
    h.advance(10);
    assert_eq!(h.ok_as("ops", set("EMR", true)), Outcome::Count(1));
    let paused = h.sm.read().paused_destinations().expect("read");
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].0, "EMR");
    assert_eq!(paused[0].1.paused_by, "ops");
    assert_eq!(paused[0].1.paused_at, T0 + 10);
    assert_eq!(
        paused[0].1.reason.as_deref(),
        Some("EMR down for maintenance")
    );

    // Unfiltered and filtered ClaimReady alike: LAB's row only.
    let rows = claim_outbound(&mut h, None);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].destination_name.as_deref(), Some("LAB"));
    assert!(claim_outbound(&mut h, Some("EMR")).is_empty());
    // The FIFO lane reads empty, to a claim and to the probes of an idle or waiting claim.
    assert_eq!(
        h.fifo(Stage::Outbound, "EMR", "worker", 30_000),
        Err(FifoEmpty::Empty)
    );
    let t = h.clock();
    let r = h.sm.read();
    assert_eq!(
        r.due_rows(Stage::Outbound, t, None, Some("EMR"), 100)
            .expect("read"),
        raftlane_statemachine::query::DueRows::None
    );
    assert_eq!(
        r.fifo_idle_answer(Stage::Outbound, "EMR", "worker", t)
            .expect("read"),
        Some(FifoEmpty::Empty)
    );
    assert_eq!(
        r.fifo_claim_chance(Stage::Outbound, "EMR", "worker", Some("worker"), t)
            .expect("read"),
        ClaimChance::OnChange
    );
    drop(r);
    // The rows are where they were.
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(2)).status, RowStatus::Pending);

    // Resumed: the lane's head first.
    assert_eq!(h.ok_as("ops", set("EMR", false)), Outcome::Count(1));
    assert!(h.sm.read().paused_destinations().expect("read").is_empty());
    let head = h
        .fifo(Stage::Outbound, "EMR", "worker", 30_000)
        .expect("head");
    assert_eq!(head.row_id, RowId(0));
    assert_eq!(
        h.audit_actions(DEFAULT_ORG)
            .into_iter()
            .filter(|a| a.starts_with("destination."))
            .collect::<Vec<_>>(),
        ["destination.pause", "destination.resume"]
    );
}

#[test]
fn pausing_twice_or_resuming_what_runs_changes_nothing() {
    let mut h = Harness::new();
    assert_eq!(h.ok(set("EMR", true)), Outcome::Count(1));
    h.no_change(set("EMR", true), Outcome::Count(0));
    assert_eq!(h.ok(set("EMR", false)), Outcome::Count(1));
    h.no_change(set("EMR", false), Outcome::Count(0));
    h.reject(
        Command::SetDestinationPaused(SetDestinationPaused {
            destination: "".into(),
            paused: true,
            reason: None,
        }),
        Rejection::Invalid {
            field: "destination".into(),
            reason: "must not be empty".into(),
        },
    );
}

#[test]
fn a_row_already_out_finishes_while_its_destination_is_paused() {
    let mut h = Harness::new();
    let out = h.outbound_claimed("IB", "EMR");
    h.ok(set("EMR", true));
    assert_eq!(h.mark_done(&out), Ok(Outcome::Done));
}

#[test]
fn lanes_count_their_redeliveries_and_dead_letters() {
    let mut h = Harness::new();
    let first = h.outbound_claimed("IB", "EMR");
    let policy = retry(Some(2), 1, 1000, 1);
    let failed = h.ok(Command::MarkFailed(MarkFailed {
        row_id: first.row_id,
        fence: first.fence,
        error: "refused".into(),
        retry: policy.clone(),
    }));
    assert!(
        matches!(failed, Outcome::Failed { dead: false, .. }),
        "{failed:?}"
    );
    h.advance(10);
    let again = claim_outbound(&mut h, Some("EMR"));
    assert_eq!(again.len(), 1);
    h.ok(Command::MarkFailed(MarkFailed {
        row_id: again[0].row_id,
        fence: again[0].fence,
        error: "refused".into(),
        retry: policy,
    }));
    let tallies: Vec<_> =
        h.sm.read()
            .lane_tallies()
            .expect("read")
            .into_iter()
            .map(|t| (t.event, t.lane.to_string(), t.count))
            .collect();
    assert_eq!(
        tallies,
        [
            (LaneEvent::DeadLettered, "outbound:EMR".to_string(), 1),
            (LaneEvent::Redelivered, "outbound:EMR".to_string(), 1),
        ]
    );
    // The per-lane tallies are not among the state machine's named totals.
    assert!(h.sm.read().tallies().expect("read").is_empty());
}
