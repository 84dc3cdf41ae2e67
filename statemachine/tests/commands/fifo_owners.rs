//! ClaimFifoHead: a FIFO claim whose row owner and lane owner are named apart, or that takes no
//! lane lease at all (messagefoundry's `claim_next_fifo(owner=None)`).

use crate::harness::*;
use raftlane_statemachine::wire::command::ClaimFifoHead;

fn head_cmd(lane: &str, owner: &str, lane_owner: Option<&str>, ttl_ms: u64) -> Command {
    Command::ClaimFifoHead(ClaimFifoHead {
        stage: Stage::Outbound,
        lane: lane.into(),
        owner: owner.into(),
        lane_owner: lane_owner.map(Into::into),
        ttl_ms,
    })
}

fn head(
    h: &mut Harness,
    lane: &str,
    owner: &str,
    lane_owner: Option<&str>,
    ttl_ms: u64,
) -> Result<ClaimedRow, FifoEmpty> {
    match h.ok(head_cmd(lane, owner, lane_owner, ttl_ms)) {
        Outcome::FifoClaimed(r) => r,
        other => panic!("expected FifoClaimed, got {other:?}"),
    }
}

fn lease(h: &Harness, lane: &str) -> Option<LaneLease> {
    h.sm.read().lane_lease(Stage::Outbound, lane).expect("read")
}

#[test]
fn without_a_lane_owner_the_head_is_claimed_in_order_and_no_lane_lease_is_ever_taken() {
    // messagefoundry test_fifo_owner_none_parity_no_lane_lease.
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB1", "p1")]);
    h.advance(1);
    h.enqueue_message("IB", &[("OB1", "p2")]);
    let fence = Fence(h.next_index());
    let first = head(&mut h, "OB1", "store-1", None, 60_000).expect("head");
    assert_eq!((first.payload.as_str(), first.fence), ("p1", fence));
    assert_eq!(lease(&h, "OB1"), None);
    let claim = h.row(first.row_id).claim.expect("inflight");
    assert_eq!(claim.owner, "store-1");
    assert_eq!(claim.lease_expires_at, h.clock() + 60_000);
    assert_eq!(h.mark_done(&first), Ok(Outcome::Done));
    let second = head(&mut h, "OB1", "store-1", None, 60_000).expect("next");
    assert_eq!(second.payload, "p2");
    assert_eq!(h.mark_done(&second), Ok(Outcome::Done));
    assert_eq!(
        head(&mut h, "OB1", "store-1", None, 60_000),
        Err(FifoEmpty::Empty)
    );
    assert_eq!(lease(&h, "OB1"), None);
    assert_eq!(
        h.sm.read().lane(Stage::Outbound, "OB1").unwrap().holder,
        None
    );
}

#[test]
fn the_row_owner_and_the_lane_owner_are_recorded_apart() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB1", "p1"), ("OB1", "p2")]);
    let row = head(&mut h, "OB1", "store-1", Some("node-a"), 60_000).expect("head");
    assert_eq!(h.row(row.row_id).claim.expect("inflight").owner, "store-1");
    assert_eq!(
        lease(&h, "OB1"),
        Some(LaneLease {
            owner: "node-a".into(),
            expires_at: T0 + 60_000,
        })
    );
    // Another store on another node: the live row of store-1 keeps the lane busy (step 0).
    h.no_change(
        head_cmd("OB1", "store-2", Some("node-b"), 60_000),
        Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "store-1".into(),
            expires_at: T0 + 60_000,
        })),
    );
    // Once the row is done, node-a's lane lease still keeps node-b out (step 1).
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    h.no_change(
        head_cmd("OB1", "store-2", Some("node-b"), 60_000),
        Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "node-a".into(),
            expires_at: T0 + 60_000,
        })),
    );
    // A second store on node-a shares the node's lane lease.
    h.advance(10);
    let next = head(&mut h, "OB1", "store-3", Some("node-a"), 60_000).expect("same node");
    assert_eq!(next.payload, "p2");
    assert_eq!(h.row(next.row_id).claim.expect("inflight").owner, "store-3");
    assert_eq!(lease(&h, "OB1").expect("lease").expires_at, T0 + 60_010);
}

#[test]
fn a_claim_without_a_lane_owner_respects_another_owners_live_lane_lease() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB1", "p1"), ("OB1", "p2")]);
    let row = h
        .fifo(Stage::Outbound, "OB1", "node-a", 1_000)
        .expect("head");
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    h.no_change(
        head_cmd("OB1", "store-1", None, 60_000),
        Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "node-a".into(),
            expires_at: T0 + 1_000,
        })),
    );
    // The lease's own owner may claim without extending it.
    let own = head(&mut h, "OB1", "node-a", None, 60_000).expect("own lane");
    assert_eq!(own.payload, "p2");
    assert_eq!(lease(&h, "OB1").expect("kept").expires_at, T0 + 1_000);
    assert_eq!(h.mark_done(&own), Ok(Outcome::Done));
    // Past the lease the lane is free, and the expired lease is left as it was.
    h.enqueue_message("IB", &[("OB1", "p3")]);
    h.advance(1_001);
    let third = head(&mut h, "OB1", "store-1", None, 60_000).expect("free lane");
    assert_eq!(third.payload, "p3");
    assert_eq!(lease(&h, "OB1").expect("stored").owner, "node-a");
    assert_eq!(
        h.sm.read().lane(Stage::Outbound, "OB1").unwrap().holder,
        None
    );
}

#[test]
fn a_claim_without_a_lane_owner_passes_over_its_own_live_rows_and_recovers_a_stranded_head() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB1", "p1"), ("OB1", "p2")]);
    let first = head(&mut h, "OB1", "store-1", None, 1_000).expect("head");
    // The same owner claiming again (messagefoundry's single engine: "the oldest pending row")
    // gets the row behind, never a second delivery of the row it holds.
    h.advance(10);
    let second = head(&mut h, "OB1", "store-1", None, 5_000).expect("next row");
    assert!(second.row_id.0 > first.row_id.0);
    assert_eq!(second.attempts, 1);
    assert_eq!(
        head(&mut h, "OB1", "store-1", None, 1_000),
        Err(FifoEmpty::Empty)
    );
    // Another owner is kept out while store-1's rows are live, then recovers the stranded head
    // first.
    assert_eq!(
        head(&mut h, "OB1", "store-2", None, 1_000),
        Err(FifoEmpty::LaneBusy {
            holder: "store-1".into(),
            expires_at: T0 + 1_000,
        })
    );
    h.advance(5_001);
    let fence = Fence(h.next_index());
    let taken = head(&mut h, "OB1", "store-2", None, 1_000).expect("stranded head");
    assert_eq!(
        (taken.row_id, taken.fence, taken.attempts),
        (first.row_id, fence, 2)
    );
    assert_eq!(lease(&h, "OB1"), None);
}

#[test]
fn with_one_owner_for_both_it_is_exactly_claim_next_fifo() {
    let run = |use_head: bool| {
        let mut h = Harness::new();
        h.enqueue_message("IB", &[("OB1", "p1"), ("OB1", "p2"), ("OB2", "x")]);
        let mut answers = Vec::new();
        for (owner, advance) in [("a", 0), ("b", 10), ("a", 20), ("b", 2_000), ("b", 0)] {
            h.advance(advance);
            let cmd = if use_head {
                head_cmd("OB1", owner, Some(owner), 1_000)
            } else {
                fifo_cmd(Stage::Outbound, "OB1", owner, 1_000)
            };
            answers.push(h.run(cmd));
        }
        (answers, h.digest())
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn bad_arguments_are_rejected() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB1", "p1")]);
    h.reject(
        head_cmd("OB1", "store-1", Some(""), 1_000),
        invalid("lane_owner", "must not be empty"),
    );
    h.reject(
        head_cmd("OB1", "", None, 1_000),
        invalid("owner", "must not be empty"),
    );
    h.reject(
        head_cmd("", "store-1", None, 1_000),
        invalid("lane", "must not be empty"),
    );
    h.reject(
        head_cmd("OB1", "store-1", None, 0),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
    assert_eq!(head_cmd("OB1", "s", None, 1).name(), "claim_fifo_head");
}
