//! Fencing and completion guards: stale fences, repeated completions, unknown rows and rows of the
//! wrong stage are refused and change nothing.

use crate::harness::*;

fn wrong_stage(row: RowId, stage: &str) -> Rejection {
    Rejection::WrongStage {
        row,
        stage: stage.into(),
    }
}

/// A row of `stage` claimed by "a" (ttl 1 s), its lease left to expire, reclaimed by
/// ReclaimExpired and claimed again by "b": returns (a's old claim, b's claim).
fn steal(h: &mut Harness, stage: Stage) -> (ClaimedRow, ClaimedRow) {
    let mut old = h.claim_ready(stage, 1, "a", 1_000);
    assert_eq!(old.len(), 1);
    h.advance(1_001);
    assert_eq!(
        h.ok(Command::ReclaimExpired(ReclaimExpired { stage: None })),
        Outcome::Count(1)
    );
    let mut new = h.claim_ready(stage, 1, "b", 30_000);
    assert_eq!(new.len(), 1);
    assert_eq!(old[0].row_id, new[0].row_id);
    (old.remove(0), new.remove(0))
}

#[test]
fn stale_fence_after_reclaim_and_reclaim_by_another_owner_is_refused_by_every_completion() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p")]);
    let (old, new) = steal(&mut h, Stage::Outbound);
    assert_ne!(old.fence, new.fence);
    let refused = stale(old.row_id, old.fence, Some(new.fence));
    h.reject(mark_done(&old), refused.clone());
    h.reject(mark_failed(&old, "late", retry_1s()), refused.clone());
    h.reject(respond(&old, "late body", None), refused.clone());
    h.reject(respond(&old, "late body", Some("loop")), refused.clone());
    h.reject(dead_letter(old.row_id, Some(old.fence), "late"), refused);
    assert!(h.view(old.message_id).responses.is_empty());
    // The current holder still completes.
    assert_eq!(h.mark_done(&new), Ok(Outcome::Done));
    assert_eq!(h.status(new.message_id), MessageStatus::Processed);
}

#[test]
fn stale_fence_is_refused_by_every_handoff() {
    let mut h = Harness::new();
    h.enqueue("orders", "raw");
    let (old, new) = steal(&mut h, Stage::Ingress);
    let refused = stale(old.row_id, old.fence, Some(new.fence));
    h.reject(route(&old, &[("h1", "p")]), refused.clone());
    h.reject(
        handoff(&old, &[("d", "p")], HandoffDisposition::Routed),
        refused,
    );

    let mut h = Harness::new();
    routed_message(&mut h, "orders", &[("h1", "p")]);
    let (old, new) = steal(&mut h, Stage::Routed);
    h.reject(
        transform(&old, &[("d", "p")], &[("ns", "k", "1")]),
        stale(old.row_id, old.fence, Some(new.fence)),
    );
    assert_eq!(h.sm.read().namespace_version("ns").unwrap(), 0);

    let mut h = Harness::new();
    response_row_pending(&mut h, "api", "loop");
    let (old, new) = steal(&mut h, Stage::Response);
    h.reject(
        ingress_handoff(&old, "loop", 3),
        stale(old.row_id, old.fence, Some(new.fence)),
    );
}

#[test]
fn completion_on_a_row_that_lost_its_lease_is_stale_with_no_current_fence() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p")]);
    let row = h.claim_ready(Stage::Outbound, 1, "a", 1_000).remove(0);
    h.advance(1_001);
    h.ok(Command::ReclaimExpired(ReclaimExpired { stage: None }));
    h.reject(mark_done(&row), stale(row.row_id, row.fence, None));
    h.reject(respond(&row, "b", None), stale(row.row_id, row.fence, None));
}

#[test]
fn a_repeated_completion_is_refused_as_wrong_status() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    h.reject(
        mark_done(&row),
        wrong_status(row.row_id, "done", "inflight"),
    );
    h.reject(
        mark_failed(&row, "x", retry_1s()),
        wrong_status(row.row_id, "done", "inflight"),
    );
}

#[test]
fn a_repeated_complete_with_response_captures_no_second_response() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    assert_eq!(h.ok(respond(&row, "body", Some("loop"))), Outcome::Done);
    h.reject(
        respond(&row, "body", Some("loop")),
        wrong_status(row.row_id, "done", "inflight"),
    );
    let v = h.view(row.message_id);
    assert_eq!(v.responses.len(), 1);
    assert_eq!(
        v.rows.iter().filter(|r| r.stage == Stage::Response).count(),
        1
    );
}

#[test]
fn completions_on_an_unknown_row_are_refused() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    let ghost = ClaimedRow {
        row_id: RowId(999),
        message_id: MessageId(0),
        stage: Stage::Outbound,
        channel_id: "orders".into(),
        destination_name: None,
        handler_name: None,
        payload: String::new(),
        attempts: 1,
        fence: Fence(1),
        lease_expires_at: 0,
        created_at: None,
    };
    let unknown = Rejection::UnknownRow(RowId(999));
    h.reject(mark_done(&ghost), unknown.clone());
    h.reject(mark_failed(&ghost, "x", retry_1s()), unknown.clone());
    h.reject(respond(&ghost, "b", None), unknown.clone());
    h.reject(dead_letter(RowId(999), None, "x"), unknown.clone());
    h.reject(
        dead_letter(RowId(999), Some(Fence(1)), "x"),
        unknown.clone(),
    );
    h.reject(ingress_handoff(&ghost, "loop", 3), unknown.clone());
    h.reject(route(&ghost, &[("h", "p")]), unknown.clone());
    h.reject(
        handoff(&ghost, &[], HandoffDisposition::Filtered),
        unknown.clone(),
    );
    h.reject(transform(&ghost, &[], &[]), unknown);
}

#[test]
fn commands_on_a_row_of_the_wrong_stage_are_refused() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    let ing = h.claim_one(Stage::Ingress);
    h.reject(
        transform(&ing, &[], &[]),
        wrong_stage(ing.row_id, "ingress"),
    );
    h.reject(respond(&ing, "b", None), wrong_stage(ing.row_id, "ingress"));
    h.reject(
        ingress_handoff(&ing, "loop", 3),
        wrong_stage(ing.row_id, "ingress"),
    );

    let out = h.outbound_claimed("orders", "d");
    h.reject(
        route(&out, &[("h", "p")]),
        wrong_stage(out.row_id, "outbound"),
    );
    h.reject(
        handoff(&out, &[], HandoffDisposition::Filtered),
        wrong_stage(out.row_id, "outbound"),
    );
    h.reject(
        transform(&out, &[], &[]),
        wrong_stage(out.row_id, "outbound"),
    );
    h.reject(
        ingress_handoff(&out, "loop", 3),
        wrong_stage(out.row_id, "outbound"),
    );

    routed_message(&mut h, "orders", &[("h1", "p")]);
    let routed = h.claim_one(Stage::Routed);
    h.reject(
        route(&routed, &[("h", "p")]),
        wrong_stage(routed.row_id, "routed"),
    );
    h.reject(
        respond(&routed, "b", None),
        wrong_stage(routed.row_id, "routed"),
    );
}
