//! ClaimNextFifo and DoneThenClaimNext: lane order, lane leases, stranded heads and backoff.

use crate::harness::*;
use raftlane_statemachine::wire::command::{HandOn, HandOnThenClaimNext};

#[test]
fn fifo_claims_the_lane_head_in_created_at_then_seq_order() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("other", "x"), ("d", "p1")]);
    h.advance(10);
    h.enqueue_message("orders", &[("d", "p2")]);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let fence = Fence(h.next_index());
        let row = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");
        assert_eq!(row.fence, fence);
        assert_eq!(row.attempts, 1);
        assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
        seen.push(row.payload);
    }
    assert_eq!(seen, vec!["p0", "p1", "p2"]);
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "a", 10_000),
        Err(FifoEmpty::Empty)
    );
}

fn done_then_next(row: &ClaimedRow, owner: &str) -> Command {
    Command::DoneThenClaimNext(DoneThenClaimNext {
        row_id: row.row_id,
        fence: row.fence,
        owner: owner.into(),
        ttl_ms: 10_000,
    })
}

#[test]
fn done_then_claim_next_walks_a_lane_in_order_one_command_per_row() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("other", "x"), ("d", "p1")]);
    h.advance(10);
    h.enqueue_message("orders", &[("d", "p2")]);
    let mut row = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");
    let mut seen = vec![row.payload.clone()];
    loop {
        let fence = Fence(h.next_index());
        let done = row.row_id;
        match h.ok(done_then_next(&row, "a")) {
            Outcome::FifoClaimed(Ok(next)) => {
                assert_eq!(next.fence, fence, "the next row is fenced by this entry");
                seen.push(next.payload.clone());
                row = next;
            }
            Outcome::FifoClaimed(Err(FifoEmpty::Empty)) => break,
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(h.row(done).status, RowStatus::Done);
    }
    assert_eq!(seen, vec!["p0", "p1", "p2"]);
    assert_eq!(h.row(row.row_id).status, RowStatus::Done);
    // The unrelated destination's row was never touched.
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
}

#[test]
fn done_then_claim_next_with_a_stale_fence_changes_nothing_not_even_the_claim() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");
    let stale = ClaimedRow {
        fence: Fence(head.fence.0 + 1),
        ..head.clone()
    };
    h.reject(
        done_then_next(&stale, "a"),
        Rejection::StaleFence {
            row: head.row_id,
            presented: stale.fence,
            current: Some(head.fence),
        },
    );
    h.reject(
        done_then_next(&head, ""),
        invalid("owner", "must not be empty"),
    );
    assert_eq!(h.row(head.row_id).status, RowStatus::Inflight);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    h.reject(
        Command::DoneThenClaimNext(DoneThenClaimNext {
            row_id: RowId(99),
            fence: Fence(1),
            owner: "a".into(),
            ttl_ms: 10_000,
        }),
        Rejection::UnknownRow(RowId(99)),
    );
}

#[test]
fn done_then_claim_next_answers_like_a_claim_when_the_lane_has_another_holder() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    // "b" finishes a's row with a's fence (a worker handing over), but the lane is a's.
    assert_eq!(
        h.ok(done_then_next(&head, "b")),
        Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "a".into(),
            expires_at: T0 + 1_000,
        }))
    );
    assert_eq!(h.row(head.row_id).status, RowStatus::Done);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    assert_eq!(
        Command::DoneThenClaimNext(DoneThenClaimNext {
            row_id: RowId(0),
            fence: Fence(0),
            owner: "a".into(),
            ttl_ms: 1,
        })
        .name(),
        "done_then_claim_next"
    );
}

#[test]
fn fifo_lane_busy_for_a_second_owner_until_the_lane_lease_expires() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    assert_eq!(head.row_id, RowId(0));
    assert_eq!(h.mark_done(&head), Ok(Outcome::Done));
    h.advance(500);
    h.no_change(
        fifo_cmd(Stage::Outbound, "d", "b", 1_000),
        Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "a".into(),
            expires_at: T0 + 1_000,
        })),
    );
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    h.advance(501);
    let next = h
        .fifo(Stage::Outbound, "d", "b", 1_000)
        .expect("b takes the lane");
    assert_eq!(next.row_id, RowId(1));
    assert_eq!(
        h.sm.read().lane(Stage::Outbound, "d").unwrap().holder,
        Some(LaneLease {
            owner: "b".into(),
            expires_at: T0 + 2_001
        })
    );
}

#[test]
fn fifo_lane_stays_busy_at_the_exact_expiry_instant_so_the_stranded_head_is_not_overtaken() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    assert_eq!(head.row_id, RowId(0));
    // At t == expires_at the row lease is still live (ReclaimExpired takes only `< t`), so
    // the lane must be too: otherwise "b" would claim row 1 while "a" still holds row 0.
    h.advance(1_000);
    let at_expiry = h.fifo(Stage::Outbound, "d", "b", 1_000);
    assert_eq!(
        at_expiry,
        Err(FifoEmpty::LaneBusy {
            holder: "a".into(),
            expires_at: T0 + 1_000
        })
    );
    h.advance(1);
    let taken = h
        .fifo(Stage::Outbound, "d", "b", 1_000)
        .expect("stranded head");
    assert_eq!(taken.row_id, RowId(0));
}

#[test]
fn fifo_repoll_with_a_shorter_ttl_does_not_shorten_the_holders_leases() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let row0 = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");
    assert_eq!(row0.row_id, RowId(0));
    h.advance(100);
    let again = h.fifo(Stage::Outbound, "d", "a", 100).expect("own row");
    assert_eq!(again.row_id, RowId(0));
    assert_eq!(again.lease_expires_at, T0 + 10_000);
    assert_eq!(
        h.sm.read().lane(Stage::Outbound, "d").unwrap().holder,
        Some(LaneLease {
            owner: "a".into(),
            expires_at: T0 + 10_000
        })
    );
    // Row 0 is still leased to "a": nobody else may work the lane.
    h.advance(200);
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "b", 1_000),
        Err(FifoEmpty::LaneBusy {
            holder: "a".into(),
            expires_at: T0 + 10_000
        })
    );
}

/// A worker whose claim answer was lost retries the claim. Handing it the row behind its
/// unacknowledged one would let that row finish first and break FIFO once the first row's
/// lease ran out, so the retry gets the same row under the same fence, its lease extended.
#[test]
fn fifo_reclaim_by_the_same_owner_returns_its_own_row_under_the_same_fence() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let first = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    h.advance(600);
    let retry = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("own row");
    assert_eq!(retry.row_id, first.row_id);
    assert_eq!(retry.fence, first.fence);
    assert_eq!(retry.attempts, 1);
    assert_eq!(retry.lease_expires_at, T0 + 1_600);
    assert_eq!(h.row(RowId(0)).claim.unwrap().lease_expires_at, T0 + 1_600);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    // The original fence still completes it, then the lane moves on.
    assert_eq!(h.mark_done(&first), Ok(Outcome::Done));
    let next = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("next");
    assert_eq!(next.row_id, RowId(1));
}

#[test]
fn fifo_returns_a_crashed_holders_stranded_head_to_the_next_owner() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let old = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    h.advance(1_001);
    let fence = Fence(h.next_index());
    let again = h
        .fifo(Stage::Outbound, "d", "b", 1_000)
        .expect("stranded head");
    assert_eq!(again.row_id, old.row_id);
    assert_eq!(again.attempts, 2);
    assert_eq!(again.fence, fence);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(0)).claim.unwrap().owner, "b");
}

#[test]
fn stale_fence_after_fifo_stranded_recovery_is_refused_and_changes_nothing() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0")]);
    let old = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    h.advance(1_001);
    let new = h
        .fifo(Stage::Outbound, "d", "b", 1_000)
        .expect("re-claimed");
    h.reject(
        mark_done(&old),
        stale(old.row_id, old.fence, Some(new.fence)),
    );
    h.reject(
        mark_failed(&old, "late", retry_1s()),
        stale(old.row_id, old.fence, Some(new.fence)),
    );
    assert_eq!(h.mark_done(&new), Ok(Outcome::Done));
}

#[test]
fn fifo_head_backing_off_blocks_the_lane_and_younger_rows_are_not_claimed() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");
    let failed = h.ok(mark_failed(&head, "boom", retry(None, 5_000, 1_000, 5_000)));
    assert_eq!(
        failed,
        Outcome::Failed {
            dead: false,
            next_attempt_at: T0 + 5_000
        }
    );
    h.advance(4_999);
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "a", 10_000),
        Err(FifoEmpty::NotDue { due_at: T0 + 5_000 })
    );
    let younger = h.row(RowId(1));
    assert_eq!(younger.status, RowStatus::Pending);
    assert_eq!(younger.attempts, 0);
    h.advance(1);
    let retried = h
        .fifo(Stage::Outbound, "d", "a", 10_000)
        .expect("head again");
    assert_eq!(retried.row_id, RowId(0));
    assert_eq!(retried.attempts, 2);
}

#[test]
fn fifo_on_an_empty_lane_returns_empty() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("other", "p")]);
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "a", 1_000),
        Err(FifoEmpty::Empty)
    );
}

#[test]
fn fifo_rejects_invalid_lane_owner_and_ttl() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p")]);
    h.reject(
        fifo_cmd(Stage::Outbound, "", "a", 1_000),
        invalid("lane", "must not be empty"),
    );
    h.reject(
        fifo_cmd(Stage::Outbound, "d", "", 1_000),
        invalid("owner", "must not be empty"),
    );
    h.reject(
        fifo_cmd(Stage::Outbound, "d", "a", 0),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
}

#[test]
fn fifo_lanes_of_ingress_stage_are_named_by_channel() {
    let mut h = Harness::new();
    h.enqueue("c1", "one");
    h.enqueue("c2", "two");
    let row = h.fifo(Stage::Ingress, "c2", "a", 1_000).expect("c2 head");
    assert_eq!(row.payload, "two");
    assert_eq!(
        h.fifo(Stage::Ingress, "c2", "b", 1_000),
        Err(FifoEmpty::LaneBusy {
            holder: "a".into(),
            expires_at: T0 + 1_000
        })
    );
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    assert_eq!(
        h.fifo(Stage::Ingress, "c2", "a", 1_000),
        Err(FifoEmpty::Empty)
    );
}

fn route_then_next(row: &ClaimedRow, owner: &str) -> Command {
    Command::HandOnThenClaimNext(HandOnThenClaimNext {
        action: HandOn::Route(RouteHandoff {
            row_id: row.row_id,
            fence: row.fence,
            handlers: vec![handler("h1", "x")],
            disposition: RouteDisposition::Routed,
        }),
        owner: owner.into(),
        ttl_ms: 10_000,
    })
}

/// A stage worker's "handed this one on, give me the next": the route and the lane's next
/// claim in one command, lane order kept; a repeat of it (a retried request) hands nothing on
/// and gets the owner's own live row back; a stale fence applies nothing, the claim included.
#[test]
fn hand_on_then_claim_next_walks_an_ingress_lane_in_order_one_command_per_row() {
    let mut h = Harness::new();
    let ids: Vec<_> = (0..3)
        .map(|i| h.enqueue("orders", &format!("m{i}")))
        .collect();
    let mut row = h.fifo(Stage::Ingress, "orders", "w", 10_000).expect("head");
    let mut seen = vec![row.message_id];
    loop {
        let fence = Fence(h.next_index());
        match h.ok(route_then_next(&row, "w")) {
            Outcome::HandedOnThenClaimed {
                applied: true,
                next: Some(Ok(next)),
            } => {
                assert_eq!(next.fence, fence, "fenced by the handoff's own entry");
                assert_eq!(next.attempts, 1);
                seen.push(next.message_id);
                row = next;
            }
            Outcome::HandedOnThenClaimed {
                applied: true,
                next: Some(Err(FifoEmpty::Empty)),
            } => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ids);
    assert_eq!(h.status(ids[0]), MessageStatus::Routed);

    // The last route again (its row consumed under that fence): nothing more is handed on,
    // and no claim is made.
    assert_eq!(
        h.ok(route_then_next(&row, "w")),
        Outcome::HandedOnThenClaimed {
            applied: false,
            next: None
        }
    );
    // A stale fence: rejected whole, nothing applied, not even the claim.
    let fresh = h.enqueue("orders", "m3");
    let head = h.fifo(Stage::Ingress, "orders", "w", 10_000).expect("head");
    assert_eq!(head.message_id, fresh);
    let before = h.digest();
    let stale = ClaimedRow {
        fence: Fence(head.fence.0 - 1),
        ..head.clone()
    };
    assert!(h.run(route_then_next(&stale, "w")).is_err());
    assert_eq!(h.digest(), before);
}
