//! RenewLeases, ReclaimExpired and ReleaseLane: extending, expiring and giving back leases.

use crate::harness::*;

#[test]
fn renew_leases_extends_only_inflight_rows_owned_by_the_caller() {
    let mut h = Harness::new();
    h.enqueue_message(
        "orders",
        &[("d", "0"), ("d", "1"), ("d", "2"), ("d", "3"), ("d", "4")],
    );
    let mine = h.claim_ready(Stage::Outbound, 2, "a", 1_000);
    let theirs = h.claim_ready(Stage::Outbound, 1, "b", 1_000);
    let done = h.claim_ready(Stage::Outbound, 1, "a", 1_000);
    assert_eq!(h.mark_done(&done[0]), Ok(Outcome::Done));
    h.advance(500);
    let ids = vec![RowId(0), RowId(1), RowId(2), RowId(3), RowId(4), RowId(99)];
    let out = h.ok(Command::RenewLeases(RenewLeases {
        ids,
        owner: "a".into(),
        ttl_ms: 2_000,
    }));
    assert_eq!(out, Outcome::Count(2));
    for claimed in &mine {
        let claim = h.row(claimed.row_id).claim.unwrap();
        assert_eq!(claim.lease_expires_at, T0 + 2_500);
        assert_eq!(claim.fence, claimed.fence);
        assert_eq!(claim.owner, "a");
    }
    assert_eq!(
        h.row(theirs[0].row_id).claim.unwrap().lease_expires_at,
        T0 + 1_000
    );
    assert_eq!(h.row(RowId(3)).status, RowStatus::Done);
    assert_eq!(h.row(RowId(4)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(4)).claim, None);
}

#[test]
fn renew_leases_also_renews_the_owners_lane_lease() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0")]);
    let row = h.fifo(Stage::Outbound, "d", "a", 1_000).expect("head");
    h.advance(800);
    let out = h.ok(Command::RenewLeases(RenewLeases {
        ids: vec![row.row_id],
        owner: "a".into(),
        ttl_ms: 1_000,
    }));
    assert_eq!(out, Outcome::Count(1));
    assert_eq!(
        h.sm.read().lane(Stage::Outbound, "d").unwrap().holder,
        Some(LaneLease {
            owner: "a".into(),
            expires_at: T0 + 1_800
        })
    );
    // Past the original expiry the lane is still a's.
    h.advance(500);
    assert!(matches!(
        h.fifo(Stage::Outbound, "d", "b", 1_000),
        Err(FifoEmpty::LaneBusy { .. })
    ));
}

#[test]
fn renew_leases_by_a_non_owner_changes_nothing() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0")]);
    let row = h.claim_one(Stage::Outbound);
    h.no_change(
        Command::RenewLeases(RenewLeases {
            ids: vec![row.row_id],
            owner: "intruder".into(),
            ttl_ms: 60_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn renew_leases_rejects_invalid_owner_and_ttl() {
    let mut h = Harness::new();
    h.reject(
        Command::RenewLeases(RenewLeases {
            ids: vec![],
            owner: String::new(),
            ttl_ms: 1,
        }),
        invalid("owner", "must not be empty"),
    );
    h.reject(
        Command::RenewLeases(RenewLeases {
            ids: vec![],
            owner: "a".into(),
            ttl_ms: 0,
        }),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
}

#[test]
fn reclaim_expired_returns_only_leases_strictly_before_t_to_pending() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0")]);
    h.enqueue("orders", "in");
    let out = h.claim_ready(Stage::Outbound, 1, "a", 1_000).remove(0);
    let ing = h.claim_ready(Stage::Ingress, 1, "a", 5_000).remove(0);
    h.advance(1_000);
    // lease_expires_at == t: still live.
    h.no_change(
        Command::ReclaimExpired(ReclaimExpired { stage: None }),
        Outcome::Count(0),
    );
    h.advance(1);
    // The stage filter excludes it.
    h.no_change(
        Command::ReclaimExpired(ReclaimExpired {
            stage: Some(Stage::Ingress),
        }),
        Outcome::Count(0),
    );
    assert_eq!(
        h.ok(Command::ReclaimExpired(ReclaimExpired {
            stage: Some(Stage::Outbound)
        })),
        Outcome::Count(1)
    );
    let row = h.row(out.row_id);
    assert_eq!(row.status, RowStatus::Pending);
    assert_eq!(row.claim, None);
    assert_eq!(row.attempts, 1);
    assert_eq!(row.next_attempt_at, T0 + 1_001);
    assert_eq!(row.last_fence, Some(out.fence));
    assert_eq!(h.row(ing.row_id).status, RowStatus::Inflight);
}

#[test]
fn release_lane_lets_only_the_owner_give_the_lane_back() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0"), ("d", "1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 60_000).expect("head");
    assert_eq!(h.mark_done(&head), Ok(Outcome::Done));
    assert!(matches!(
        h.fifo(Stage::Outbound, "d", "b", 1_000),
        Err(FifoEmpty::LaneBusy { .. })
    ));
    let release = |owner: &str| {
        Command::ReleaseLane(ReleaseLane {
            stage: Stage::Outbound,
            lane: "d".into(),
            owner: owner.into(),
        })
    };
    h.no_change(release("b"), Outcome::Count(0));
    assert_eq!(h.ok(release("a")), Outcome::Count(1));
    assert_eq!(h.sm.read().lane(Stage::Outbound, "d").unwrap().holder, None);
    let next = h.fifo(Stage::Outbound, "d", "b", 1_000).expect("b now");
    assert_eq!(next.row_id, RowId(1));
    h.reject(
        Command::ReleaseLane(ReleaseLane {
            stage: Stage::Outbound,
            lane: String::new(),
            owner: "b".into(),
        }),
        invalid("lane", "must not be empty"),
    );
}

#[test]
fn a_released_lane_is_still_held_by_the_previous_owners_live_row() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0"), ("d", "1")]);
    let head = h.fifo(Stage::Outbound, "d", "a", 5_000).expect("head");
    let release = Command::ReleaseLane(ReleaseLane {
        stage: Stage::Outbound,
        lane: "d".into(),
        owner: "a".into(),
    });
    assert_eq!(h.ok(release), Outcome::Count(1));
    // b may not overtake a's live head by claiming row 1.
    match h.fifo(Stage::Outbound, "d", "b", 5_000) {
        Err(FifoEmpty::LaneBusy { holder, .. }) => assert_eq!(holder, "a"),
        other => panic!("expected lane_busy, got {other:?}"),
    }
    // Once a's row lease has run out, b recovers the stranded head itself.
    h.advance(5_001);
    let next = h
        .fifo(Stage::Outbound, "d", "b", 5_000)
        .expect("b gets the head");
    assert_eq!(next.row_id, head.row_id);
}

/// docs/SPEC.md §9.4: an owner name belongs to the principal that first took a lease under it.
/// Another principal can neither renew its rows nor release its lane nor claim under its name
/// (a worker of one channel once kept another channel's row leased for a day this way), and
/// a refused attempt changes nothing. A claim that takes nothing binds nothing.
#[test]
fn a_lease_owner_name_belongs_to_the_principal_that_claimed_under_it() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0"), ("e", "1")]);
    let rows = match h.ok_as(
        "worker-a",
        Command::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 1,
            channel: None,
            destination: Some("d".into()),
            owner: "wa".into(),
            ttl_ms: 30_000,
        }),
    ) {
        Outcome::Claimed(rows) => rows,
        other => panic!("expected Claimed, got {other:?}"),
    };
    let row = &rows[0];
    let taken = || Rejection::NameOfAnother {
        field: "owner".into(),
        name: "wa".into(),
        principal: "worker-a".into(),
    };
    h.reject_as(
        "worker-b",
        Command::RenewLeases(RenewLeases {
            ids: vec![row.row_id],
            owner: "wa".into(),
            ttl_ms: 86_400_000,
        }),
        taken(),
    );
    h.reject_as(
        "worker-b",
        Command::ReleaseLane(ReleaseLane {
            stage: Stage::Outbound,
            lane: "d".into(),
            owner: "wa".into(),
        }),
        taken(),
    );
    h.reject_as(
        "worker-b",
        fifo_cmd(Stage::Outbound, "e", "wa", 30_000),
        taken(),
    );
    // Its own principal renews as before.
    assert_eq!(
        h.ok_as(
            "worker-a",
            Command::RenewLeases(RenewLeases {
                ids: vec![row.row_id],
                owner: "wa".into(),
                ttl_ms: 60_000,
            }),
        ),
        Outcome::Count(1)
    );
    // A claim that finds nothing leaves its owner name free: worker-b may take it up later.
    h.no_change_as(
        "worker-a",
        Command::ClaimReady(ClaimReady {
            stage: Stage::Routed,
            limit: 1,
            channel: None,
            destination: None,
            owner: "unused".into(),
            ttl_ms: 30_000,
        }),
        Outcome::Claimed(vec![]),
    );
    assert!(matches!(
        h.ok_as("worker-b", fifo_cmd(Stage::Outbound, "e", "unused", 30_000)),
        Outcome::FifoClaimed(Ok(_))
    ));
}
