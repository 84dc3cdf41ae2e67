//! ClaimReady: what a claim stamps, the order rows are claimed in, filters and validation.

use crate::harness::*;

#[test]
fn claim_ready_stamps_inflight_attempts_owner_lease_and_fence() {
    let mut h = Harness::new();
    h.enqueue("orders", "one");
    h.enqueue("orders", "two");
    let fence = Fence(h.next_index());
    let rows = h.claim_ready(Stage::Ingress, 10, "w1", 5_000);
    assert_eq!(rows.len(), 2);
    for (i, claimed) in rows.iter().enumerate() {
        assert_eq!(claimed.row_id, RowId(i as u64));
        assert_eq!(claimed.message_id, MessageId(i as u64));
        assert_eq!(claimed.stage, Stage::Ingress);
        assert_eq!(claimed.channel_id, "orders");
        assert_eq!(claimed.attempts, 1);
        assert_eq!(claimed.fence, fence);
        assert_eq!(claimed.lease_expires_at, T0 + 5_000);
        let row = h.row(claimed.row_id);
        assert_eq!(row.status, RowStatus::Inflight);
        assert_eq!(row.attempts, 1);
        assert_eq!(
            row.claim,
            Some(Claim {
                owner: "w1".into(),
                lease_expires_at: T0 + 5_000,
                fence
            })
        );
        assert_eq!(row.last_fence, Some(fence));
    }
    assert_eq!(rows[0].payload, "one");
    assert_eq!(rows[1].payload, "two");
    // Nothing left to claim.
    assert!(h.claim_ready(Stage::Ingress, 10, "w2", 5_000).is_empty());
}

#[test]
fn claim_ready_takes_earliest_next_attempt_at_first() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d0", "p")]);
    let row0 = h.claim_one(Stage::Outbound);
    // Row 0 backs off until T0 + 1000.
    h.ok(mark_failed(&row0, "boom", retry_1s()));
    h.advance(500);
    // Row 1 is due at T0 + 500: younger seq, earlier next_attempt_at.
    h.enqueue_message("orders", &[("d1", "p")]);
    h.advance(1_500);
    let first = h.claim_ready(Stage::Outbound, 1, "w", 1_000);
    assert_eq!(first[0].row_id, RowId(1));
    let second = h.claim_ready(Stage::Outbound, 1, "w", 1_000);
    assert_eq!(second[0].row_id, RowId(0));
}

#[test]
fn claim_ready_skips_a_backing_off_row_without_blocking_others() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1"), ("d", "p2")]);
    let row0 = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
    assert_eq!(row0.row_id, RowId(0));
    h.ok(mark_failed(
        &row0,
        "boom",
        retry(None, 60_000, 1_000, 60_000),
    ));
    let rest: Vec<RowId> = h
        .claim_ready(Stage::Outbound, 10, "w", 1_000)
        .iter()
        .map(|r| r.row_id)
        .collect();
    assert_eq!(rest, vec![RowId(1), RowId(2)]);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
}

#[test]
fn claim_ready_honours_limit_channel_and_destination_filters() {
    let mut h = Harness::new();
    h.enqueue_message("c1", &[("d1", "a"), ("d2", "b")]);
    h.enqueue_message("c2", &[("d1", "c")]);
    h.no_change(
        claim_ready_cmd(Stage::Outbound, 0, "w", 1_000),
        Outcome::Claimed(vec![]),
    );
    let by_dest = h.ok(Command::ClaimReady(ClaimReady {
        stage: Stage::Outbound,
        limit: 10,
        channel: None,
        destination: Some("d1".into()),
        owner: "w".into(),
        ttl_ms: 1_000,
    }));
    let Outcome::Claimed(rows) = by_dest else {
        panic!()
    };
    assert_eq!(
        rows.iter().map(|r| r.row_id).collect::<Vec<_>>(),
        vec![RowId(0), RowId(2)]
    );
    h.enqueue_message("c2", &[("d2", "d")]);
    let by_channel = h.ok(Command::ClaimReady(ClaimReady {
        stage: Stage::Outbound,
        limit: 10,
        channel: Some("c2".into()),
        destination: None,
        owner: "w".into(),
        ttl_ms: 1_000,
    }));
    let Outcome::Claimed(rows) = by_channel else {
        panic!()
    };
    assert_eq!(
        rows.iter().map(|r| r.row_id).collect::<Vec<_>>(),
        vec![RowId(3)]
    );
    // Other stages are not touched.
    assert!(h.claim_ready(Stage::Ingress, 10, "w", 1_000).is_empty());
}

#[test]
fn claim_ready_rejects_invalid_owner_ttl_and_filters() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    h.reject(
        claim_ready_cmd(Stage::Ingress, 1, "", 1_000),
        invalid("owner", "must not be empty"),
    );
    h.reject(
        claim_ready_cmd(Stage::Ingress, 1, "w", 0),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
    h.reject(
        claim_ready_cmd(Stage::Ingress, 1, "w", 86_400_001),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
    h.reject(
        Command::ClaimReady(ClaimReady {
            stage: Stage::Ingress,
            limit: 1,
            channel: Some(String::new()),
            destination: None,
            owner: "w".into(),
            ttl_ms: 1_000,
        }),
        invalid("channel", "must not be empty"),
    );
}
