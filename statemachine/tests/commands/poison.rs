//! A poison row cannot wedge its lane (docs/SPEC.md §5.2): every claim is a
//! delivery attempt, a lease that runs out on the last attempt dead-letters the row; retry
//! policies are checked when the config is written by the same rule `fail` uses; the config's
//! orphan sweep and the handoffs follow one registry rule (§6.2).

use crate::harness::*;
use raftlane_statemachine::rules::retry::{DEFAULT_MAX_ATTEMPTS, LEASE_EXPIRED_TALLY};

/// A config whose one destination `d` has `policy`.
fn config_with_policy(policy: raftlane_statemachine::model::config::RetryPolicy) -> ConfigDoc {
    ConfigDoc {
        destinations: BTreeMap::from([(
            "d".to_string(),
            DestinationConfig {
                url: None,
                retry: Some(policy),
            },
        )]),
        ..ConfigDoc::default()
    }
}

fn lease_expired_tally(h: &Harness) -> u64 {
    h.sm.read()
        .tallies()
        .unwrap()
        .get(LEASE_EXPIRED_TALLY)
        .copied()
        .unwrap_or(0)
}

/// The poison worker of the robustness report: it takes the FIFO head and crashes, again and
/// again. With the default policy the head is handed out `DEFAULT_MAX_ATTEMPTS` times, then it
/// dies and the next message of the lane is claimable.
#[test]
fn a_fifo_head_whose_lease_keeps_expiring_dies_and_the_lane_moves_on() {
    let mut h = Harness::new();
    let poison = h.enqueue_message("orders", &[("d", "poison")]);
    let next = h.enqueue_message("orders", &[("d", "next")]);
    let mut handed = Vec::new();
    for _ in 0..DEFAULT_MAX_ATTEMPTS {
        let row = h.fifo(Stage::Outbound, "d", "w1", 1_000).expect("the head");
        handed.push((row.message_id, row.attempts));
        // The worker crashes: the lease runs out.
        h.advance(1_001);
    }
    assert_eq!(
        handed,
        (1..=DEFAULT_MAX_ATTEMPTS)
            .map(|a| (poison, a))
            .collect::<Vec<_>>()
    );
    // The takeover after the last expiry kills the head and hands out the message behind it.
    let row = h.fifo(Stage::Outbound, "d", "w1", 1_000).expect("next");
    assert_eq!(row.message_id, next);
    assert_eq!(row.attempts, 1);
    let dead = h.sm.read().dead_letters(None, None, 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].message_id, poison);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some("lease expired on attempt 10 of 10")
    );
    assert_eq!(h.status(poison), MessageStatus::Error);
    assert_eq!(h.event_kinds(poison).last(), Some(&EventKind::Dead));
    assert_eq!(lease_expired_tally(&h), 1);
}

/// ReclaimExpired (the leader's timer) counts the same way, under the destination's policy.
#[test]
fn reclaim_expired_kills_a_row_past_its_destinations_attempt_limit() {
    let mut h = Harness::new();
    h.ok(put_config(
        0,
        config_with_policy(retry(Some(2), 10, 1000, 10)),
    ));
    let id = h.enqueue_message("orders", &[("d", "poison")]);
    for attempt in 1..=2u32 {
        let rows = h.claim_ready(Stage::Outbound, 1, "w", 100);
        assert_eq!(rows[0].attempts, attempt);
        h.advance(101);
        assert_eq!(
            h.ok(Command::ReclaimExpired(ReclaimExpired { stage: None })),
            Outcome::Count(1)
        );
    }
    let row = h.view(id).rows.remove(0);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("lease expired on attempt 2 of 2")
    );
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(lease_expired_tally(&h), 1);
    // Nothing left to claim.
    assert!(h.claim_ready(Stage::Outbound, 1, "w", 100).is_empty());
}

/// Below the limit an expiry is what it always was: pending again, due now, attempts kept.
#[test]
fn an_expiry_below_the_limit_returns_the_row_to_pending() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "x")]);
    h.claim_ready(Stage::Outbound, 1, "w", 100);
    h.advance(101);
    h.ok(Command::ReclaimExpired(ReclaimExpired { stage: None }));
    let row = h.view(id).rows.remove(0);
    assert_eq!(row.status, RowStatus::Pending);
    assert_eq!(row.attempts, 1);
    assert_eq!(lease_expired_tally(&h), 0);
}

/// A `fail` without `max_attempts` stops at the default limit instead of retrying forever.
#[test]
fn a_fail_without_max_attempts_stops_at_the_default_limit() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "x")]);
    let mut last = None;
    for _ in 0..DEFAULT_MAX_ATTEMPTS {
        let row = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
        last = Some(h.ok(mark_failed(&row, "boom", retry(None, 0, 1000, 0))));
    }
    assert_eq!(
        last,
        Some(Outcome::Failed {
            dead: true,
            next_attempt_at: h.clock()
        })
    );
    assert_eq!(h.status(id), MessageStatus::Error);
}

/// The config write refuses what `fail` refuses, naming the field inside the document, and
/// changes nothing.
#[test]
fn put_config_refuses_a_retry_policy_fail_would_refuse() {
    let mut h = Harness::new();
    let cases = [
        (
            retry(Some(0), 1_000, 2_000, 60_000),
            "destinations.d.retry.max_attempts",
        ),
        (
            retry(None, 1_000, 0, 60_000),
            "destinations.d.retry.multiplier_milli",
        ),
        (
            retry(None, 1_000, 500, 60_000),
            "destinations.d.retry.multiplier_milli",
        ),
        (
            retry(None, 1_000, 100_001, 60_000),
            "destinations.d.retry.multiplier_milli",
        ),
        (
            retry(None, 1_000_000_000_000_000, 2_000, 60_000),
            "destinations.d.retry.backoff_ms",
        ),
        (
            retry(None, 1_000, 2_000, u64::MAX),
            "destinations.d.retry.max_backoff_ms",
        ),
    ];
    for (policy, field) in cases {
        let r = h.run(put_config(0, config_with_policy(policy.clone())));
        match r {
            Err(Rejection::Invalid { field: f, .. }) => assert_eq!(f, field, "{policy:?}"),
            other => panic!("{policy:?}: {other:?}"),
        }
        // The same policy in a fail is refused for the same field (under `retry`).
        let row = h.outbound_claimed("orders", "d");
        match h.run(mark_failed(&row, "x", policy.clone())) {
            Err(Rejection::Invalid { field: f, .. }) => {
                assert_eq!(f, field.replace("destinations.d.", ""), "{policy:?}")
            }
            other => panic!("{policy:?}: {other:?}"),
        }
        h.ok(mark_done(&row));
    }
    // Nothing was written: still version 0.
    assert_eq!(h.sm.read().config().unwrap().version, 0);
    // The bounds themselves are accepted.
    h.ok(put_config(
        0,
        config_with_policy(retry(Some(1), 86_400_000, 100_000, 86_400_000)),
    ));
}

/// The sweep covers every live row the new config does not register, not only names the
/// previous version removed; response rows are never swept.
#[test]
fn put_config_sweeps_every_unregistered_row_but_never_responses() {
    let mut h = Harness::new();
    // Queued before any config. A response row carrying destination d2 (the one that
    // answered); rows to d1 (to be listed) and d2 (never listed); a routed row for h9.
    let response = response_row_pending(&mut h, "d2", "replies");
    let kept = h.enqueue_message("orders", &[("d1", "a")]);
    let orphan = h.enqueue_message("orders", &[("d2", "b")]);
    let routed = routed_message(&mut h, "orders", &[("h9", "p")]);
    let out = h.ok(put_config(0, config_with(&["d1", "x"], &["h1"])));
    assert_eq!(out, Outcome::ConfigVersion(1));
    assert_eq!(h.status(kept), MessageStatus::Routed);
    let row = h.view(orphan).rows.remove(0);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("destination d2 not in config")
    );
    let row = h.view(routed).rows.remove(0);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(row.last_error.as_deref(), Some("handler h9 not in config"));
    let rows = h.view(response).rows;
    let response_row = rows.iter().find(|r| r.stage == Stage::Response).unwrap();
    assert_eq!(response_row.status, RowStatus::Pending);
    assert_eq!(
        h.audit_actions(DEFAULT_ORG).last().map(String::as_str),
        Some("config.change")
    );
    assert_eq!(
        h.audit(DEFAULT_ORG).last().unwrap().detail,
        Some("version 1; 2 orphan row(s) dead-lettered".to_string())
    );
}

/// Once the config lists destinations (handlers), a handoff or enqueue to another is refused
/// and changes nothing; an empty section restricts nothing.
#[test]
fn a_delivery_to_an_unregistered_name_is_refused() {
    let mut h = Harness::new();
    // No config: any name.
    h.enqueue_message("orders", &[("anything", "a")]);
    h.ok(put_config(0, config_with(&["d1"], &["h1"])));
    h.reject(
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "r".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d1", "ok"), delivery("nope", "x")],
            idempotency_key: None,
        }),
        invalid(
            "deliveries.destination",
            "destination nope is not in the config",
        ),
    );
    h.enqueue("orders", "raw");
    let row = h.claim_one(Stage::Ingress);
    h.reject(
        handoff(&row, &[("nope", "x")], HandoffDisposition::Routed),
        invalid(
            "deliveries.destination",
            "destination nope is not in the config",
        ),
    );
    h.reject(
        route(&row, &[("h2", "x")]),
        invalid("handlers.handler", "handler h2 is not in the config"),
    );
    assert_eq!(h.ok(route(&row, &[("h1", "x")])), Outcome::HandedOff(true));
    let row = h.claim_one(Stage::Routed);
    h.reject(
        transform(&row, &[("nope", "x")], &[]),
        invalid(
            "deliveries.destination",
            "destination nope is not in the config",
        ),
    );
    assert_eq!(
        h.ok(transform(&row, &[("d1", "x")], &[])),
        Outcome::HandedOff(true)
    );
}

/// A lease expiry is judged by the policy the row is being retried under: after its worker
/// failed it under a policy with no limit (messagefoundry's default), a crash past the default
/// limit puts it back to pending instead of killing it; under a finite `fail` policy the
/// expiry limit is that policy's. Once the row ends its policy is forgotten.
#[test]
fn a_lease_expiry_is_judged_by_the_policy_of_the_rows_last_fail() {
    use raftlane_statemachine::rules::retry::UNLIMITED_ATTEMPTS;
    let mut h = Harness::new();
    let forever = h.enqueue_message("orders", &[("d", "forever")]);
    // Twelve failures under "no limit": past the default limit of ten.
    for _ in 0..12 {
        let row = h.fifo(Stage::Outbound, "d", "w1", 1_000).expect("the head");
        assert_eq!(row.message_id, forever);
        h.ok(Command::MarkFailed(MarkFailed {
            row_id: row.row_id,
            fence: row.fence,
            error: "connection refused".into(),
            retry: retry(Some(UNLIMITED_ATTEMPTS), 1, 1000, 1),
        }));
        h.advance(2);
    }
    // Then the worker crashes on it: the lease runs out on attempt 13, the row comes back.
    let row = h.fifo(Stage::Outbound, "d", "w1", 1_000).expect("the head");
    assert_eq!(row.attempts, 13);
    h.advance(1_001);
    let again = h
        .fifo(Stage::Outbound, "d", "w1", 1_000)
        .expect("back after the crash");
    assert_eq!((again.row_id, again.attempts), (row.row_id, 14));
    assert!(h.sm.read().dead_letters(None, None, 10).unwrap().is_empty());
    assert_eq!(lease_expired_tally(&h), 0);
    h.mark_done(&again).expect("done");
    assert_eq!(h.status(forever), MessageStatus::Processed);

    // A finite `fail` policy of 2 attempts: the crash on attempt 2 is its last.
    let capped = h.enqueue_message("orders", &[("d", "capped")]);
    let row = h.fifo(Stage::Outbound, "d", "w1", 1_000).expect("the head");
    h.ok(Command::MarkFailed(MarkFailed {
        row_id: row.row_id,
        fence: row.fence,
        error: "AE".into(),
        retry: retry(Some(2), 1, 1000, 1),
    }));
    h.advance(2);
    let row = h
        .fifo(Stage::Outbound, "d", "w1", 1_000)
        .expect("attempt 2");
    assert_eq!(row.attempts, 2);
    h.advance(1_001);
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "w1", 1_000).err(),
        Some(FifoEmpty::Empty)
    );
    let dead = h.sm.read().dead_letters(None, None, 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].message_id, capped);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some("lease expired on attempt 2 of 2")
    );
}
