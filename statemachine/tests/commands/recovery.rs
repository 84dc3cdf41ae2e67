//! ResetStaleInflight (a single process's start-up recovery) and RecoverInflightOnPromotion (a
//! new leader taking over its predecessor's rows and lanes): inflight rows back to pending
//! whatever their leases say.

use crate::harness::*;
use raftlane_statemachine::wire::command::{
    ClaimFifoHead, RecoverInflightOnPromotion, ResetStaleInflight,
};

fn reset(stage: Option<Stage>) -> Command {
    Command::ResetStaleInflight(ResetStaleInflight { stage })
}

fn head_no_lease(h: &mut Harness, stage: Stage, lane: &str, owner: &str) -> ClaimedRow {
    let out = h.ok(Command::ClaimFifoHead(ClaimFifoHead {
        stage,
        lane: lane.into(),
        owner: owner.into(),
        lane_owner: None,
        ttl_ms: 60_000,
    }));
    match out {
        Outcome::FifoClaimed(Ok(row)) => row,
        other => panic!("expected a row, got {other:?}"),
    }
}

#[test]
fn reset_returns_an_inflight_row_to_pending_however_live_its_lease() {
    // messagefoundry test_reset_stale_inflight_recovers and ..._still_unconditional.
    let mut h = Harness::new();
    let id = h.enqueue_message("IB", &[("OB1", "p")]);
    let claimed = h.claim_one(Stage::Outbound);
    h.advance(100);
    assert_eq!(
        h.ok(Command::ReclaimExpired(ReclaimExpired { stage: None })),
        Outcome::Count(0)
    );
    h.advance(100);
    assert_eq!(h.ok(reset(None)), Outcome::Count(1));
    let row = h.row(claimed.row_id);
    assert_eq!(row.status, RowStatus::Pending);
    assert_eq!(row.claim, None);
    assert_eq!(row.attempts, 1, "attempts are kept");
    assert_eq!(row.next_attempt_at, T0 + 200);
    assert_eq!(row.updated_at, T0 + 200);
    assert_eq!(row.last_fence, Some(claimed.fence));
    assert_eq!(h.status(id), MessageStatus::Routed);
    // The old holder's completion is now stale; a new claim gets the row under a new fence.
    h.reject(
        mark_done(&claimed),
        stale(claimed.row_id, claimed.fence, None),
    );
    let again = h.claim_one(Stage::Outbound);
    assert_eq!((again.row_id, again.attempts), (claimed.row_id, 2));
}

#[test]
fn reset_without_a_stage_recovers_every_stage_and_each_lane_head_is_claimable_again() {
    // messagefoundry test_reset_stale_inflight_across_stages.
    let mut h = Harness::new();
    h.enqueue("IB", "m1");
    head_no_lease(&mut h, Stage::Ingress, "IB", "store-1");
    h.enqueue("IB2", "m2");
    let ing = head_no_lease(&mut h, Stage::Ingress, "IB2", "store-1");
    assert_eq!(h.ok(route(&ing, &[("H1", "r")])), Outcome::HandedOff(true));
    h.fifo(Stage::Routed, "IB2", "node-a", 60_000)
        .expect("routed row, with a lane lease");
    h.enqueue_message("IB3", &[("OB1", "p")]);
    h.claim_one(Stage::Outbound);
    assert_eq!(h.ok(reset(None)), Outcome::Count(3));
    // node-a's lane lease went with its row: another owner claims the head at once.
    assert_eq!(h.sm.read().lane_lease(Stage::Routed, "IB2").unwrap(), None);
    h.fifo(Stage::Ingress, "IB", "other", 1_000)
        .expect("ingress head");
    h.fifo(Stage::Routed, "IB2", "other", 1_000)
        .expect("routed head");
    h.fifo(Stage::Outbound, "OB1", "other", 1_000)
        .expect("outbound head");
}

#[test]
fn reset_of_one_stage_leaves_the_others_and_unrelated_lane_leases_alone() {
    let mut h = Harness::new();
    h.enqueue("IB", "m1");
    let ingress = h
        .fifo(Stage::Ingress, "IB", "node-a", 60_000)
        .expect("ingress");
    h.enqueue_message("IB", &[("OB1", "p"), ("OB2", "q")]);
    let ob1 = h
        .fifo(Stage::Outbound, "OB1", "node-a", 60_000)
        .expect("ob1");
    let ob2 = h
        .fifo(Stage::Outbound, "OB2", "node-b", 60_000)
        .expect("ob2");
    assert_eq!(h.mark_done(&ob2), Ok(Outcome::Done));
    assert_eq!(h.ok(reset(Some(Stage::Outbound))), Outcome::Count(1));
    assert_eq!(h.row(ob1.row_id).status, RowStatus::Pending);
    assert_eq!(h.row(ingress.row_id).status, RowStatus::Inflight);
    assert_eq!(
        h.sm.read().lane_lease(Stage::Outbound, "OB1").unwrap(),
        None
    );
    // OB2 had no inflight row: its lease stays; so does the ingress lane's.
    assert_eq!(
        h.sm.read().lane_lease(Stage::Outbound, "OB2").unwrap(),
        Some(LaneLease {
            owner: "node-b".into(),
            expires_at: T0 + 60_000,
        })
    );
    assert!(h
        .sm
        .read()
        .lane_lease(Stage::Ingress, "IB")
        .unwrap()
        .is_some());
    // Nothing inflight at the stage any more: nothing to do, nothing changes.
    h.no_change(reset(Some(Stage::Outbound)), Outcome::Count(0));
    assert_eq!(reset(None).name(), "reset_stale_inflight");
}

fn promote(owner: &str, lane_owner: Option<&str>) -> Command {
    Command::RecoverInflightOnPromotion(RecoverInflightOnPromotion {
        owner: owner.into(),
        lane_owner: lane_owner.map(Into::into),
    })
}

fn head_split(h: &mut Harness, lane: &str, owner: &str, lane_owner: &str) -> ClaimedRow {
    match h.ok(Command::ClaimFifoHead(ClaimFifoHead {
        stage: Stage::Outbound,
        lane: lane.into(),
        owner: owner.into(),
        lane_owner: Some(lane_owner.into()),
        ttl_ms: 60_000,
    })) {
        Outcome::FifoClaimed(Ok(row)) => row,
        other => panic!("expected a row, got {other:?}"),
    }
}

#[test]
fn promotion_takes_back_other_owners_rows_and_lanes_at_once_and_keeps_its_own() {
    // messagefoundry test_recover_inflight_on_promotion_owner_scoped_and_takes_lanes.
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("OB_OLD", "p")]);
    h.enqueue_message("IB", &[("OB_NEW", "q")]);
    let old = head_split(&mut h, "OB_OLD", "store-old", "old-node");
    let mine = head_split(&mut h, "OB_NEW", "store-new", "new-node");
    h.enqueue_message("IB", &[("OB3", "r")]);
    let unordered = h.claim_one(Stage::Outbound); // "worker", no lane lease
    h.advance(10);
    assert_eq!(
        h.ok(promote("store-new", Some("new-node"))),
        Outcome::Count(2)
    );
    let old_row = h.row(old.row_id);
    assert_eq!((old_row.status, old_row.claim), (RowStatus::Pending, None));
    assert_eq!(old_row.next_attempt_at, T0 + 10);
    assert_eq!(h.row(unordered.row_id).status, RowStatus::Pending);
    let mine_row = h.row(mine.row_id);
    assert_eq!(mine_row.status, RowStatus::Inflight);
    assert_eq!(mine_row.claim.expect("kept").owner, "store-new");
    let read = h.sm.read();
    assert_eq!(read.lane_lease(Stage::Outbound, "OB_OLD").unwrap(), None);
    assert_eq!(
        read.lane_lease(Stage::Outbound, "OB_NEW").unwrap(),
        Some(LaneLease {
            owner: "new-node".into(),
            expires_at: T0 + 60_000,
        })
    );
    drop(read);
    // Both gates are open: the old head is claimable by the new leader at once.
    let again = head_split(&mut h, "OB_OLD", "store-new", "new-node");
    assert_eq!(again.row_id, old.row_id);
}

#[test]
fn promotion_without_a_lane_owner_drops_every_lane_lease() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("A", "p"), ("B", "q")]);
    let a = head_split(&mut h, "A", "store-1", "node-1");
    let b = head_split(&mut h, "B", "store-1", "node-2");
    assert_eq!(h.ok(promote("store-1", None)), Outcome::Count(0));
    assert_eq!(h.row(a.row_id).status, RowStatus::Inflight);
    assert_eq!(h.row(b.row_id).status, RowStatus::Inflight);
    let read = h.sm.read();
    assert_eq!(read.lane_lease(Stage::Outbound, "A").unwrap(), None);
    assert_eq!(read.lane_lease(Stage::Outbound, "B").unwrap(), None);
    drop(read);
    h.reject(promote("", None), invalid("owner", "must not be empty"));
    h.reject(
        promote("s", Some("")),
        invalid("lane_owner", "must not be empty"),
    );
    assert_eq!(promote("s", None).name(), "recover_inflight_on_promotion");
}

/// docs/SPEC.md §9.8: a recovery takes back only its own principal's claims and lane leases,
/// unless the proposer vouched for an operator (the envelope's `as_operator`), which takes back everyone's.
#[test]
fn a_recovery_reaches_only_its_own_principals_claims_unless_an_operator_proposes_it() {
    let mut h = Harness::new();
    h.enqueue_message("IB", &[("A", "p"), ("B", "q")]);
    let claim = |h: &mut Harness, actor: &str, lane: &str, owner: &str| match h.ok_as(
        actor,
        Command::ClaimFifoHead(ClaimFifoHead {
            stage: Stage::Outbound,
            lane: lane.into(),
            owner: owner.into(),
            lane_owner: Some(format!("{owner}-node")),
            ttl_ms: 60_000,
        }),
    ) {
        Outcome::FifoClaimed(Ok(row)) => row,
        other => panic!("expected a row, got {other:?}"),
    };
    let alices = claim(&mut h, "alice", "A", "a-1");
    let bobs = claim(&mut h, "bob", "B", "b-1");
    // Bob, promoted under a new owner name, takes back his own principal's row and lane only.
    assert_eq!(
        h.run_as("bob", promote("b-2", Some("b-2-node"))),
        Ok(Outcome::Count(1))
    );
    assert_eq!(h.row(bobs.row_id).status, RowStatus::Pending);
    assert_eq!(h.row(alices.row_id).status, RowStatus::Inflight);
    let read = h.sm.read();
    assert!(read.lane_lease(Stage::Outbound, "A").unwrap().is_some());
    assert_eq!(read.lane_lease(Stage::Outbound, "B").unwrap(), None);
    drop(read);
    assert_eq!(h.run_as("bob", reset(None)), Ok(Outcome::Count(0)));
    assert_eq!(h.row(alices.row_id).status, RowStatus::Inflight);
    // An operator's reset takes back everyone's.
    let everyone = as_operator(reset(None));
    assert_eq!(h.run_as("ops", everyone), Ok(Outcome::Count(1)));
    assert_eq!(h.row(alices.row_id).status, RowStatus::Pending);
    assert_eq!(h.sm.read().lane_lease(Stage::Outbound, "A").unwrap(), None);
}
