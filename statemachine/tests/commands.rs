//! Per-command tests of the state machine through its public API: the happy path of every
//! command and every rejection path, with exact outcomes, and for every rejection a check
//! that nothing changed (state digest and counters byte-identical before and after).
//!
//! Log indexes increase by one per applied command (see `cmd_support::Harness`); a claim's
//! fence is the index it was applied at.

mod cmd_support;

use cmd_support::*;
use raftlane_statemachine::model::approval::ApprovalStatus;
use raftlane_statemachine::model::audit::{row_hash, SealRecord, DEFAULT_ORG, SEAL_ACTION};
use raftlane_statemachine::model::config::{
    ConfigDoc, DestinationConfig, HandlerConfig, DEFAULT_DEDUPE_WINDOW_MS,
};
use raftlane_statemachine::model::lane::LaneLease;
use raftlane_statemachine::model::message::{Correlation, EventKind, MessageStatus};
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::model::response::ResponseRef;
use raftlane_statemachine::model::row::{Claim, RowStatus, Stage};
use raftlane_statemachine::model::state::ReferenceSnapshot;
use raftlane_statemachine::storage::store::WriteBatch;
use raftlane_statemachine::wire::command::{
    Batch, CancelQueued, ClaimReady, CompleteWithResponse, CreateApproval, DeadLetterNow,
    DecideApproval, DoneThenClaimNext, EnqueueIngress, EnqueueMessage, Handoff, HandoffDisposition,
    IngressHandoff, MarkDone, MarkFailed, MessageFields, PurgeDeadLetters, PurgeMessageBodies,
    PurgeState, PutConfig, PutPrincipal, ReceivedStatus, ReclaimExpired, RecordAudit,
    RecordReceived, ReleaseLane, RenewLeases, Replay, ReplayDead, RevokePrincipal,
    RouteDisposition, RouteHandoff, SealAuditEpoch, StateOp, TransformHandoff,
    WriteReferenceSnapshot,
};
use raftlane_statemachine::{
    codec, ApprovalId, ClaimedRow, Command, Fence, FifoEmpty, MessageId, Outcome, Rejection, RowId,
    Store, Table,
};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Local helpers
// ---------------------------------------------------------------------------------------------

fn invalid(field: &str, reason: &str) -> Rejection {
    Rejection::invalid(field, reason)
}

fn stale(row: RowId, presented: Fence, current: Option<Fence>) -> Rejection {
    Rejection::StaleFence {
        row,
        presented,
        current,
    }
}

fn wrong_status(row: RowId, status: &str, expected: &str) -> Rejection {
    Rejection::WrongStatus {
        row,
        status: status.into(),
        expected: expected.into(),
    }
}

fn wrong_stage(row: RowId, stage: &str) -> Rejection {
    Rejection::WrongStage {
        row,
        stage: stage.into(),
    }
}

fn mark_done(row: &ClaimedRow) -> Command {
    Command::MarkDone(MarkDone {
        row_id: row.row_id,
        fence: row.fence,
    })
}

fn mark_failed(
    row: &ClaimedRow,
    error: &str,
    policy: raftlane_statemachine::model::config::RetryPolicy,
) -> Command {
    Command::MarkFailed(MarkFailed {
        row_id: row.row_id,
        fence: row.fence,
        error: error.into(),
        retry: policy,
    })
}

fn respond(row: &ClaimedRow, body: &str, reingress_to: Option<&str>) -> Command {
    Command::CompleteWithResponse(CompleteWithResponse {
        row_id: row.row_id,
        fence: row.fence,
        body: body.into(),
        outcome: "200".into(),
        detail: Some("ok".into()),
        reingress_to: reingress_to.map(Into::into),
    })
}

fn route(row: &ClaimedRow, handlers: &[(&str, &str)]) -> Command {
    Command::RouteHandoff(RouteHandoff {
        row_id: row.row_id,
        fence: row.fence,
        handlers: handlers.iter().map(|(n, p)| handler(n, p)).collect(),
        disposition: RouteDisposition::Routed,
    })
}

fn handoff(
    row: &ClaimedRow,
    deliveries: &[(&str, &str)],
    disposition: HandoffDisposition,
) -> Command {
    Command::Handoff(Handoff {
        row_id: row.row_id,
        fence: row.fence,
        deliveries: deliveries.iter().map(|(d, p)| delivery(d, p)).collect(),
        disposition,
    })
}

fn transform(row: &ClaimedRow, deliveries: &[(&str, &str)], ops: &[(&str, &str, &str)]) -> Command {
    Command::TransformHandoff(TransformHandoff {
        row_id: row.row_id,
        fence: row.fence,
        deliveries: deliveries.iter().map(|(d, p)| delivery(d, p)).collect(),
        state_ops: ops
            .iter()
            .map(|(ns, k, v)| StateOp {
                namespace: (*ns).into(),
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect(),
    })
}

fn ingress_handoff(row: &ClaimedRow, loopback: &str, depth_cap: u32) -> Command {
    Command::IngressHandoff(IngressHandoff {
        row_id: row.row_id,
        fence: row.fence,
        loopback_channel: loopback.into(),
        depth_cap,
    })
}

fn dead_letter(row: RowId, fence: Option<Fence>, error: &str) -> Command {
    Command::DeadLetterNow(DeadLetterNow {
        row_id: row,
        fence,
        error: error.into(),
    })
}

fn cancel(destination: &str, channel: Option<&str>, top_only: bool) -> Command {
    Command::CancelQueued(CancelQueued {
        destination: destination.into(),
        channel: channel.map(Into::into),
        top_only,
    })
}

fn put_config(expected_version: u64, config: ConfigDoc) -> Command {
    Command::PutConfig(PutConfig {
        expected_version,
        config,
    })
}

fn config_with(destinations: &[&str], handlers: &[&str]) -> ConfigDoc {
    ConfigDoc {
        destinations: destinations
            .iter()
            .map(|d| ((*d).to_string(), DestinationConfig::default()))
            .collect(),
        handlers: handlers
            .iter()
            .map(|h| ((*h).to_string(), HandlerConfig::default()))
            .collect(),
        ..ConfigDoc::default()
    }
}

fn config_with_window(window_ms: u64) -> ConfigDoc {
    let mut doc = ConfigDoc::default();
    doc.retention.dedupe_window_ms = Some(window_ms);
    doc
}

fn record_audit(action: &str, org: Option<&str>, detail: Option<&str>) -> Command {
    Command::RecordAudit(RecordAudit {
        action: action.into(),
        channel: None,
        org: org.map(Into::into),
        detail: detail.map(Into::into),
    })
}

fn put_principal(name: &str, hash: &str, role: Role, channels: Option<&[&str]>) -> Command {
    Command::PutPrincipal(PutPrincipal {
        name: name.into(),
        token_hash: hash.into(),
        role,
        channels: channels.map(|cs| cs.iter().map(|c| (*c).to_string()).collect()),
    })
}

fn create_approval(operation: &str, ttl_ms: u64) -> Command {
    Command::CreateApproval(CreateApproval {
        operation: operation.into(),
        params: "{}".into(),
        ttl_ms,
    })
}

fn decide(id: ApprovalId, approve: bool) -> Command {
    Command::DecideApproval(DecideApproval { id, approve })
}

fn approval_id(outcome: Outcome) -> ApprovalId {
    match outcome {
        Outcome::Approval(id) => id,
        other => panic!("expected Approval, got {other:?}"),
    }
}

/// A policy that retries forever after a fixed 1 s.
fn retry_1s() -> raftlane_statemachine::model::config::RetryPolicy {
    retry(None, 1_000, 1_000, 1_000)
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

/// Enqueue on `channel`, claim the ingress row and route it to `handlers`; returns the message.
fn routed_message(h: &mut Harness, channel: &str, handlers: &[(&str, &str)]) -> MessageId {
    let id = h.enqueue(channel, "raw");
    let row = h.claim_one(Stage::Ingress);
    assert_eq!(h.ok(route(&row, handlers)), Outcome::HandedOff(true));
    id
}

/// A message to `destination` whose outbound row was answered with a response to be
/// re-ingested on `loopback` (a pending response row); returns the origin message.
fn response_row_pending(h: &mut Harness, destination: &str, loopback: &str) -> MessageId {
    let out = h.outbound_claimed("orders", destination);
    assert_eq!(h.ok(respond(&out, "reply", Some(loopback))), Outcome::Done);
    out.message_id
}

/// As [`response_row_pending`], with the response row claimed by "worker".
fn response_row_claimed(
    h: &mut Harness,
    destination: &str,
    loopback: &str,
) -> (MessageId, ClaimedRow) {
    let origin = response_row_pending(h, destination, loopback);
    let row = h.claim_one(Stage::Response);
    assert_eq!(row.message_id, origin);
    (origin, row)
}

// ---------------------------------------------------------------------------------------------
// EnqueueIngress, RecordReceived, EnqueueMessage
// ---------------------------------------------------------------------------------------------

#[test]
fn enqueue_ingress_inserts_received_message_and_one_pending_ingress_row() {
    let mut h = Harness::new();
    let fields = MessageFields {
        control_id: Some("ctl-1".into()),
        message_type: Some("ADT^A01".into()),
        source_type: Some("mllp".into()),
        summary: Some("admit".into()),
        metadata: Some(r#"{"k":1}"#.into()),
    };
    let out = h.ok(Command::EnqueueIngress(EnqueueIngress {
        channel: "orders".into(),
        raw: "hello".into(),
        fields: fields.clone(),
        idempotency_key: None,
    }));
    assert_eq!(
        out,
        Outcome::Enqueued {
            message_id: MessageId(0),
            duplicate: false
        }
    );
    let v = h.view(MessageId(0));
    let m = &v.message;
    assert_eq!(m.channel_id, "orders");
    assert_eq!(m.received_at, T0);
    assert_eq!(m.raw, "hello");
    assert_eq!(m.status, MessageStatus::Received);
    assert_eq!(m.control_id, fields.control_id);
    assert_eq!(m.message_type, fields.message_type);
    assert_eq!(m.source_type, fields.source_type);
    assert_eq!(m.summary, fields.summary);
    assert_eq!(m.metadata, fields.metadata);
    assert_eq!(m.error, None);
    assert_eq!(v.events.len(), 1);
    assert_eq!(v.events[0].event, EventKind::Received);
    assert_eq!(v.events[0].ts, T0);
    assert_eq!(v.rows.len(), 1);
    let row = &v.rows[0];
    assert_eq!(row.id, RowId(0));
    assert_eq!(row.stage, Stage::Ingress);
    assert_eq!(row.status, RowStatus::Pending);
    assert_eq!(row.channel_id, "orders");
    assert_eq!(row.payload, "hello");
    assert_eq!(row.attempts, 0);
    assert_eq!(row.next_attempt_at, T0);
    assert_eq!(row.created_at, T0);
    assert_eq!(row.claim, None);
    assert_eq!(
        h.sm.read()
            .lane_order(Stage::Ingress, "orders", 10)
            .unwrap(),
        vec![RowId(0)]
    );
}

#[test]
fn enqueue_ingress_rejects_invalid_channel_names() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    h.reject(
        enqueue_cmd("", "x", None),
        invalid("channel", "must not be empty"),
    );
    h.reject(
        enqueue_cmd("bad\nname", "x", None),
        invalid("channel", "must not contain control characters"),
    );
    h.reject(
        enqueue_cmd(&"c".repeat(201), "x", None),
        invalid("channel", "longer than 200 bytes"),
    );
}

#[test]
fn enqueue_ingress_rejects_empty_or_overlong_idempotency_key() {
    let mut h = Harness::new();
    h.reject(
        enqueue_cmd("orders", "x", Some("")),
        invalid("idempotency_key", "must be 1 to 200 bytes"),
    );
    h.reject(
        enqueue_cmd("orders", "x", Some(&"k".repeat(201))),
        invalid("idempotency_key", "must be 1 to 200 bytes"),
    );
}

#[test]
fn duplicate_idempotency_key_returns_original_id_and_inserts_nothing() {
    let mut h = Harness::new();
    let (first, dup) = h.enqueue_key("orders", "one", "k1");
    assert!(!dup);
    h.advance(10);
    h.no_change(
        enqueue_cmd("orders", "two", Some("k1")),
        Outcome::Enqueued {
            message_id: first,
            duplicate: true,
        },
    );
    assert_eq!(h.view(first).message.raw, "one");
    // The same key on another channel is a different key.
    let (other, dup) = h.enqueue_key("billing", "three", "k1");
    assert!(!dup);
    assert_ne!(other, first);
}

#[test]
fn duplicate_idempotency_key_also_applies_to_enqueue_message() {
    let mut h = Harness::new();
    let cmd = |raw: &str| {
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: raw.into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d", "p")],
            idempotency_key: Some("k".into()),
        })
    };
    let (first, dup) = enqueued(h.ok(cmd("one")));
    assert!(!dup);
    h.no_change(
        cmd("two"),
        Outcome::Enqueued {
            message_id: first,
            duplicate: true,
        },
    );
}

#[test]
fn idempotency_key_never_expires_while_its_message_is_in_flight() {
    let mut h = Harness::new();
    let (id, _) = h.enqueue_key("orders", "one", "k1");
    // Far beyond any dedupe window: the message is still received (in flight).
    h.advance(40 * DEFAULT_DEDUPE_WINDOW_MS);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "again", Some("k1"))),
        Outcome::Enqueued {
            message_id: id,
            duplicate: true
        }
    );
}

#[test]
fn idempotency_key_expires_only_after_terminal_status_plus_dedupe_window() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with_window(5_000)));
    let (id, _) = h.enqueue_key("orders", "one", "k1");
    let row = h.claim_one(Stage::Ingress);
    h.advance(100);
    // Terminal now (filtered): the window starts here.
    assert_eq!(
        h.ok(handoff(&row, &[], HandoffDisposition::Filtered)),
        Outcome::HandedOff(true)
    );
    assert_eq!(h.status(id), MessageStatus::Filtered);
    h.advance(4_999);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "dup", Some("k1"))),
        Outcome::Enqueued {
            message_id: id,
            duplicate: true
        }
    );
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(1));
    let (fresh, dup) = h.enqueue_key("orders", "new", "k1");
    assert!(!dup);
    assert_ne!(fresh, id);
    assert_eq!(h.view(fresh).message.raw, "new");
}

#[test]
fn reused_idempotency_key_is_not_dropped_by_the_previous_use_expiring() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with_window(5_000)));
    let (first, _) = h.enqueue_key("orders", "one", "k1");
    let row = h.claim_one(Stage::Ingress);
    h.ok(handoff(&row, &[], HandoffDisposition::Filtered));
    // The window passes but no ExpireRecords ran yet: the key is reused by a new message.
    h.advance(5_000);
    let (second, dup) = h.enqueue_key("orders", "two", "k1");
    assert!(!dup);
    assert_ne!(second, first);
    // The first use's expiry must not take the second (in-flight) message's key with it.
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(0));
    assert_eq!(
        h.ok(enqueue_cmd("orders", "three", Some("k1"))),
        Outcome::Enqueued {
            message_id: second,
            duplicate: true
        }
    );
}

#[test]
fn record_received_filtered_keeps_message_without_rows() {
    let mut h = Harness::new();
    let out = h.ok(Command::RecordReceived(RecordReceived {
        channel: "orders".into(),
        raw: "junk".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Filtered,
        error: None,
    }));
    let (id, _) = enqueued(out);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Filtered);
    assert_eq!(v.message.raw, "junk");
    assert!(v.rows.is_empty());
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Filtered]
    );
}

#[test]
fn record_received_error_keeps_message_with_its_error() {
    let mut h = Harness::new();
    let out = h.ok(Command::RecordReceived(RecordReceived {
        channel: "orders".into(),
        raw: "junk".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Error,
        error: Some("unparseable".into()),
    }));
    let (id, _) = enqueued(out);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Error);
    assert_eq!(v.message.error.as_deref(), Some("unparseable"));
    assert!(v.rows.is_empty());
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Error]
    );
    assert_eq!(v.events[1].detail.as_deref(), Some("unparseable"));
}

#[test]
fn record_received_rejects_invalid_channel() {
    let mut h = Harness::new();
    h.reject(
        Command::RecordReceived(RecordReceived {
            channel: String::new(),
            raw: "junk".into(),
            fields: MessageFields::default(),
            status: ReceivedStatus::Filtered,
            error: None,
        }),
        invalid("channel", "must not be empty"),
    );
}

#[test]
fn enqueue_message_is_routed_with_one_outbound_row_per_delivery_in_list_order() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("a", "p1"), ("b", "p2"), ("a", "p3")]);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let rows: Vec<_> = v
        .rows
        .iter()
        .map(|r| {
            (
                r.id,
                r.stage,
                r.destination_name.as_deref().unwrap(),
                r.payload.as_str(),
                r.status,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (RowId(0), Stage::Outbound, "a", "p1", RowStatus::Pending),
            (RowId(1), Stage::Outbound, "b", "p2", RowStatus::Pending),
            (RowId(2), Stage::Outbound, "a", "p3", RowStatus::Pending),
        ]
    );
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Routed]
    );
    assert_eq!(v.events[1].detail.as_deref(), Some("3 deliveries"));
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "a", 10).unwrap(),
        vec![RowId(0), RowId(2)]
    );
}

#[test]
fn enqueue_message_without_deliveries_is_unrouted() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[]);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Unrouted);
    assert!(v.rows.is_empty());
    assert_eq!(
        h.event_kinds(id),
        vec![EventKind::Received, EventKind::Unrouted]
    );
}

#[test]
fn enqueue_message_rejects_an_invalid_destination() {
    let mut h = Harness::new();
    h.reject(
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "x".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("ok", "p"), delivery("", "p")],
            idempotency_key: None,
        }),
        invalid("deliveries.destination", "must not be empty"),
    );
}

// ---------------------------------------------------------------------------------------------
// The clock
// ---------------------------------------------------------------------------------------------

#[test]
fn earlier_now_ms_is_clamped_to_the_clock_and_fifo_order_is_kept() {
    let mut h = Harness::new();
    h.advance(5_000);
    let late = h.enqueue_message("orders", &[("d", "first")]);
    // A proposer whose clock is 5 s behind.
    let out = h.run_at(
        T0,
        ACTOR,
        Command::EnqueueMessage(EnqueueMessage {
            channel: "orders".into(),
            raw: "second".into(),
            fields: MessageFields::default(),
            deliveries: vec![delivery("d", "second")],
            idempotency_key: None,
        }),
    );
    let (early, _) = enqueued(out.unwrap());
    assert_eq!(h.clock(), T0 + 5_000);
    assert_eq!(h.view(early).message.received_at, T0 + 5_000);
    assert_eq!(h.view(early).events[0].ts, T0 + 5_000);
    assert_eq!(h.row(RowId(1)).created_at, T0 + 5_000);
    assert_eq!(h.view(late).rows[0].created_at, T0 + 5_000);
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "d", 10).unwrap(),
        vec![RowId(0), RowId(1)]
    );
    // A claim proposed with the old clock gets its lease from t, not from now_ms.
    let claimed = h
        .run_at(T0, "a", fifo_cmd(Stage::Outbound, "d", "a", 1_000))
        .unwrap();
    match claimed {
        Outcome::FifoClaimed(Ok(row)) => {
            assert_eq!(row.row_id, RowId(0));
            assert_eq!(row.lease_expires_at, T0 + 6_000);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_rejected_command_does_not_even_advance_the_clock() {
    let mut h = Harness::new();
    h.enqueue("orders", "x");
    let before = h.sm.meta().clone();
    h.advance(500);
    let rejected = h.run(Command::MarkDone(MarkDone {
        row_id: RowId(77),
        fence: Fence(1),
    }));
    assert_eq!(rejected, Err(Rejection::UnknownRow(RowId(77))));
    assert_eq!(h.clock(), before.clock);
    assert_eq!(h.sm.meta().next_message_id, before.next_message_id);
    assert_eq!(h.sm.meta().next_row_id, before.next_row_id);
}

// ---------------------------------------------------------------------------------------------
// ClaimReady
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// ClaimNextFifo
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// RenewLeases, ReclaimExpired, ReleaseLane
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Fencing and completion guards
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Handoffs
// ---------------------------------------------------------------------------------------------

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
    assert_eq!(v.events[1].detail.as_deref(), Some("2 deliveries"));
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
    assert_eq!(last.detail.as_deref(), Some("h1: 1 deliveries"));
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

// ---------------------------------------------------------------------------------------------
// MarkDone, MarkFailed, DeadLetterNow
// ---------------------------------------------------------------------------------------------

#[test]
fn mark_done_waits_for_sibling_rows_before_finalizing() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    let first = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
    assert_eq!(h.mark_done(&first), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Routed);
    let second = h.claim_one(Stage::Outbound);
    assert_eq!(h.mark_done(&second), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Processed);
}

#[test]
fn mark_failed_backs_off_exactly_by_the_policy() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(None, 1_000, 2_000, 5_000);
    let mut expected_delays = Vec::new();
    for attempt in 1..=5u32 {
        let row = h.claim_one(Stage::Outbound);
        assert_eq!(row.attempts, attempt);
        let t = h.now;
        let out = h.ok(mark_failed(&row, "boom", policy.clone()));
        let delay = 5_000u64.min(1_000 * 2u64.pow(attempt - 1));
        expected_delays.push(delay);
        assert_eq!(
            out,
            Outcome::Failed {
                dead: false,
                next_attempt_at: t + delay
            }
        );
        let stored = h.row(row.row_id);
        assert_eq!(stored.status, RowStatus::Pending);
        assert_eq!(stored.next_attempt_at, t + delay);
        assert_eq!(stored.last_error.as_deref(), Some("boom"));
        assert_eq!(stored.claim, None);
        let event = h.view(id).events.last().unwrap().clone();
        assert_eq!(event.event, EventKind::Failed);
        assert_eq!(event.destination.as_deref(), Some("d"));
        assert_eq!(event.detail, Some(format!("attempt {attempt}: boom")));
        // Not claimable a millisecond early.
        h.advance(delay - 1);
        assert!(h.claim_ready(Stage::Outbound, 1, "w", 1_000).is_empty());
        h.advance(1);
    }
    assert_eq!(expected_delays, vec![1_000, 2_000, 4_000, 5_000, 5_000]);
    assert_eq!(h.status(id), MessageStatus::Routed);
}

#[test]
fn mark_failed_with_a_fractional_multiplier() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(None, 1_000, 1_500, 10_000);
    let mut delays = Vec::new();
    for _ in 0..3 {
        let row = h.claim_one(Stage::Outbound);
        let t = h.now;
        let Outcome::Failed {
            next_attempt_at, ..
        } = h.ok(mark_failed(&row, "x", policy.clone()))
        else {
            panic!()
        };
        delays.push(next_attempt_at - t);
        h.advance(next_attempt_at - t);
    }
    assert_eq!(delays, vec![1_000, 1_500, 2_250]);
}

#[test]
fn mark_failed_dead_letters_after_max_attempts() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    let policy = retry(Some(2), 100, 1_000, 100);
    let first = h.claim_one(Stage::Outbound);
    assert!(matches!(
        h.ok(mark_failed(&first, "e1", policy.clone())),
        Outcome::Failed { dead: false, .. }
    ));
    h.advance(100);
    let second = h.claim_one(Stage::Outbound);
    assert_eq!(second.attempts, 2);
    let t = h.now;
    assert_eq!(
        h.ok(mark_failed(&second, "e2", policy)),
        Outcome::Failed {
            dead: true,
            next_attempt_at: t
        }
    );
    let row = h.row(second.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(row.last_error.as_deref(), Some("e2"));
    assert_eq!(row.claim, None);
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(
        h.event_kinds(id),
        vec![
            EventKind::Received,
            EventKind::Routed,
            EventKind::Failed,
            EventKind::Dead
        ]
    );
    let dead = h.sm.read().dead_letters(None, None, 10).unwrap();
    assert_eq!(
        dead.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![second.row_id]
    );
}

#[test]
fn mark_failed_rejects_an_invalid_policy() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    h.reject(
        mark_failed(&row, "x", retry(None, 1_000, 999, 1_000)),
        invalid("retry.multiplier", "must be at least 1.0"),
    );
    h.reject(
        mark_failed(&row, "x", retry(Some(0), 1_000, 1_000, 1_000)),
        invalid("retry.max_attempts", "must be at least 1"),
    );
    assert_eq!(h.row(row.row_id).status, RowStatus::Inflight);
}

#[test]
fn dead_letter_now_with_the_current_fence_kills_the_row_and_finalizes() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    assert_eq!(
        h.ok(dead_letter(row.row_id, Some(row.fence), "poison")),
        Outcome::Done
    );
    let stored = h.row(row.row_id);
    assert_eq!(stored.status, RowStatus::Dead);
    assert_eq!(stored.last_error.as_deref(), Some("poison"));
    assert_eq!(stored.claim, None);
    assert_eq!(h.status(row.message_id), MessageStatus::Error);
    let event = h.view(row.message_id).events.last().unwrap().clone();
    assert_eq!(event.event, EventKind::Dead);
    assert_eq!(event.destination.as_deref(), Some("d"));
    assert_eq!(event.detail.as_deref(), Some("poison"));
}

#[test]
fn dead_letter_now_without_a_fence_takes_a_pending_row_but_not_a_terminal_one() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d", "p")]);
    assert_eq!(h.ok(dead_letter(RowId(0), None, "operator")), Outcome::Done);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Dead);
    assert_eq!(h.status(id), MessageStatus::Error);
    h.reject(
        dead_letter(RowId(0), None, "again"),
        wrong_status(RowId(0), "dead", "pending or inflight"),
    );

    let row = h.outbound_claimed("orders", "d");
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    h.reject(
        dead_letter(row.row_id, None, "x"),
        wrong_status(row.row_id, "done", "pending or inflight"),
    );
    h.reject(
        dead_letter(row.row_id, Some(row.fence), "x"),
        wrong_status(row.row_id, "done", "inflight"),
    );
}

// ---------------------------------------------------------------------------------------------
// CompleteWithResponse, IngressHandoff
// ---------------------------------------------------------------------------------------------

#[test]
fn complete_with_response_captures_the_response_and_finalizes() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.advance(3);
    assert_eq!(h.ok(respond(&row, "resp-1", None)), Outcome::Done);
    let v = h.view(row.message_id);
    assert_eq!(v.message.status, MessageStatus::Processed);
    assert_eq!(v.rows.len(), 1);
    assert_eq!(v.rows[0].status, RowStatus::Done);
    assert_eq!(v.responses.len(), 1);
    let r = &v.responses[0];
    assert_eq!(r.message_id, row.message_id);
    assert_eq!(r.destination, "api");
    assert_eq!(r.response_seq, 1);
    assert_eq!(r.body, "resp-1");
    assert_eq!(r.outcome, "200");
    assert_eq!(r.detail.as_deref(), Some("ok"));
    assert_eq!(r.captured_at, T0 + 3);
    let event = v.events.last().unwrap();
    assert_eq!(event.event, EventKind::Delivered);
    assert_eq!(event.detail.as_deref(), Some("attempt 1; response 1: 200"));
}

#[test]
fn complete_with_response_increments_response_seq_per_message_and_destination() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.ok(respond(&row, "first", None));
    // Re-send the delivered row and answer again.
    assert_eq!(
        h.ok(Command::Replay(Replay {
            message_id: row.message_id
        })),
        Outcome::Count(1)
    );
    let again = h.claim_one(Stage::Outbound);
    h.ok(respond(&again, "second", None));
    let v = h.view(row.message_id);
    let seqs: Vec<_> = v
        .responses
        .iter()
        .map(|r| (r.response_seq, r.body.as_str()))
        .collect();
    assert_eq!(seqs, vec![(1, "first"), (2, "second")]);
    // Another destination of another message starts at 1.
    let other = h.outbound_claimed("orders", "api2");
    h.ok(respond(&other, "x", None));
    assert_eq!(h.view(other.message_id).responses[0].response_seq, 1);
}

#[test]
fn complete_with_response_reingress_creates_a_response_row_referencing_the_response() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    assert_eq!(h.ok(respond(&row, "reply", Some("loop"))), Outcome::Done);
    let v = h.view(row.message_id);
    // The response row is live, so the message is not final yet.
    assert_eq!(v.message.status, MessageStatus::Routed);
    let resp: Vec<_> = v
        .rows
        .iter()
        .filter(|r| r.stage == Stage::Response)
        .collect();
    assert_eq!(resp.len(), 1);
    let resp = resp[0];
    assert_eq!(resp.status, RowStatus::Pending);
    assert_eq!(resp.channel_id, "loop");
    assert_eq!(resp.destination_name.as_deref(), Some("api"));
    let reference: ResponseRef = serde_json::from_str(&resp.payload).unwrap();
    assert_eq!(
        reference,
        ResponseRef {
            message_id: row.message_id,
            destination: "api".into(),
            seq: 1
        }
    );
    assert_eq!(
        h.sm.read().lane_order(Stage::Response, "loop", 10).unwrap(),
        vec![resp.id]
    );
}

#[test]
fn complete_with_response_rejects_an_invalid_reingress_channel() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    h.reject(
        respond(&row, "b", Some("")),
        invalid("reingress_to", "must not be empty"),
    );
}

#[test]
fn ingress_handoff_creates_a_correlated_child_message_and_finalizes_the_origin() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let child = MessageId(1);
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 3)),
        Outcome::Reingressed(Some(child))
    );
    let c = h.view(child);
    assert_eq!(c.message.channel_id, "loop");
    assert_eq!(c.message.raw, "reply");
    assert_eq!(c.message.status, MessageStatus::Received);
    assert_eq!(c.message.source_type.as_deref(), Some("reingress"));
    assert_eq!(
        c.message.correlation,
        Some(Correlation {
            correlation_id: origin,
            root_id: origin,
            depth: 1,
            reingress_of_seq: 1
        })
    );
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].stage, Stage::Ingress);
    assert_eq!(c.rows[0].payload, "reply");
    assert_eq!(h.event_kinds(child), vec![EventKind::Received]);
    let o = h.view(origin);
    assert_eq!(o.message.status, MessageStatus::Processed);
    assert_eq!(h.row(resp.row_id).status, RowStatus::Done);
    let event = o.events.last().unwrap();
    assert_eq!(event.event, EventKind::Reingressed);
    assert_eq!(event.destination.as_deref(), Some("api"));
    assert_eq!(event.detail.as_deref(), Some("child 1 on loop"));
}

#[test]
fn ingress_handoff_of_the_same_response_again_maps_to_the_same_child() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let Outcome::Reingressed(Some(child)) = h.ok(ingress_handoff(&resp, "loop", 3)) else {
        panic!()
    };
    // Re-send everything of the origin (the outbound row and the response row).
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: origin })),
        Outcome::Count(2)
    );
    let again = h.claim_ready(Stage::Response, 1, "w", 1_000).remove(0);
    assert_eq!(again.row_id, resp.row_id);
    let messages_before = h.sm.meta().next_message_id;
    assert_eq!(
        h.ok(ingress_handoff(&again, "loop", 3)),
        Outcome::Reingressed(Some(child))
    );
    assert_eq!(h.sm.meta().next_message_id, messages_before);
    assert_eq!(h.view(child).rows.len(), 1);
}

#[test]
fn ingress_handoff_of_a_child_carries_the_root_and_depth() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let Outcome::Reingressed(Some(child)) = h.ok(ingress_handoff(&resp, "loop", 2)) else {
        panic!()
    };
    // The child flows through its own pipeline and its answer is re-ingested too.
    let ing = h.claim_one(Stage::Ingress);
    assert_eq!(ing.message_id, child);
    h.ok(handoff(
        &ing,
        &[("api", "again")],
        HandoffDisposition::Routed,
    ));
    let out = h.claim_one(Stage::Outbound);
    h.ok(respond(&out, "reply-2", Some("loop")));
    let resp2 = h.claim_one(Stage::Response);
    let Outcome::Reingressed(Some(grandchild)) = h.ok(ingress_handoff(&resp2, "loop", 2)) else {
        panic!()
    };
    assert_eq!(
        h.view(grandchild).message.correlation,
        Some(Correlation {
            correlation_id: child,
            root_id: origin,
            depth: 2,
            reingress_of_seq: 1
        })
    );
}

#[test]
fn ingress_handoff_over_the_depth_cap_dead_letters_the_row_and_finalizes_the_origin() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    let messages_before = h.sm.meta().next_message_id;
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 0)),
        Outcome::Reingressed(None)
    );
    assert_eq!(h.sm.meta().next_message_id, messages_before);
    let row = h.row(resp.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("correlation depth 1 exceeds cap 0")
    );
    assert_eq!(h.status(origin), MessageStatus::Error);
    assert_eq!(h.event_kinds(origin).last(), Some(&EventKind::Dead));
}

#[test]
fn ingress_handoff_with_a_corrupt_reference_dead_letters_the_row() {
    let mut h = Harness::new();
    let (origin, resp) = response_row_claimed(&mut h, "api", "loop");
    // Corrupt the stored reference behind the state machine's back.
    let mut row = h.row(resp.row_id);
    row.payload = "not a reference".into();
    let mut batch = WriteBatch::default();
    batch.put(
        Table::Rows,
        resp.row_id.to_be_bytes().to_vec(),
        codec::encode(&row),
    );
    h.sm.store_mut().write(batch).unwrap();
    assert_eq!(
        h.ok(ingress_handoff(&resp, "loop", 3)),
        Outcome::Reingressed(None)
    );
    let row = h.row(resp.row_id);
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("corrupt response reference")
    );
    assert_eq!(h.status(origin), MessageStatus::Error);
    assert_eq!(h.sm.meta().next_message_id, 1);
}

#[test]
fn ingress_handoff_rejects_an_invalid_loopback_channel() {
    let mut h = Harness::new();
    let (_, resp) = response_row_claimed(&mut h, "api", "loop");
    h.reject(
        ingress_handoff(&resp, "", 3),
        invalid("loopback_channel", "must not be empty"),
    );
}

// ---------------------------------------------------------------------------------------------
// Replay, ReplayDead, CancelQueued
// ---------------------------------------------------------------------------------------------

#[test]
fn replay_recover_mode_requeues_dead_and_pending_rows_never_a_done_sibling() {
    let mut h = Harness::new();
    let id = h.enqueue_message(
        "orders",
        &[("d1", "p"), ("d2", "p"), ("d3", "p"), ("d4", "p")],
    );
    let rows: Vec<ClaimedRow> = h.claim_ready(Stage::Outbound, 4, "w", 60_000);
    assert_eq!(h.mark_done(&rows[0]), Ok(Outcome::Done));
    h.ok(dead_letter(rows[1].row_id, Some(rows[1].fence), "gone"));
    h.ok(mark_failed(
        &rows[2],
        "slow",
        retry(None, 60_000, 1_000, 60_000),
    ));
    // rows[3] stays inflight.
    h.advance(10);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(2)
    );
    assert_eq!(h.row(rows[0].row_id).status, RowStatus::Done);
    for r in [&rows[1], &rows[2]] {
        let stored = h.row(r.row_id);
        assert_eq!(stored.status, RowStatus::Pending);
        assert_eq!(stored.attempts, 0);
        assert_eq!(stored.next_attempt_at, T0 + 10);
        assert_eq!(stored.last_error, None);
        assert_eq!(stored.claim, None);
    }
    let inflight = h.row(rows[3].row_id);
    assert_eq!(inflight.status, RowStatus::Inflight);
    assert_eq!(inflight.claim.unwrap().fence, rows[3].fence);
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    let event = v.events.last().unwrap();
    assert_eq!(event.event, EventKind::Replayed);
    assert_eq!(event.detail.as_deref(), Some("2 row(s)"));
}

#[test]
fn replay_recover_mode_clears_the_error_status() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "d");
    h.ok(dead_letter(row.row_id, Some(row.fence), "gone"));
    assert_eq!(h.status(row.message_id), MessageStatus::Error);
    assert_eq!(
        h.ok(Command::Replay(Replay {
            message_id: row.message_id
        })),
        Outcome::Count(1)
    );
    let v = h.view(row.message_id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    assert_eq!(v.message.error, None);
}

#[test]
fn replay_resend_mode_requeues_done_rows() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    for row in h.claim_ready(Stage::Outbound, 2, "w", 1_000) {
        assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    }
    assert_eq!(h.status(id), MessageStatus::Processed);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(2)
    );
    let v = h.view(id);
    assert_eq!(v.message.status, MessageStatus::Routed);
    assert!(v
        .rows
        .iter()
        .all(|r| r.status == RowStatus::Pending && r.attempts == 0));
    assert_eq!(h.claim_ready(Stage::Outbound, 10, "w", 1_000).len(), 2);
}

#[test]
fn replay_never_touches_cancelled_rows() {
    let mut h = Harness::new();
    let id = h.enqueue_message("orders", &[("d1", "p"), ("d2", "p")]);
    assert_eq!(h.ok(cancel("d1", None, false)), Outcome::Count(1));
    let row = h.claim_one(Stage::Outbound);
    assert_eq!(row.destination_name.as_deref(), Some("d2"));
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    assert_eq!(h.status(id), MessageStatus::Processed);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(1)
    );
    assert_eq!(h.row(RowId(0)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Pending);
    // A message with nothing but cancelled rows has nothing to replay.
    let only = h.enqueue_message("orders", &[("d3", "p")]);
    h.ok(cancel("d3", None, false));
    h.no_change(
        Command::Replay(Replay { message_id: only }),
        Outcome::Count(0),
    );
    assert_eq!(h.status(only), MessageStatus::Processed);
}

#[test]
fn replay_with_a_pending_ingress_row_sets_received() {
    let mut h = Harness::new();
    let id = h.enqueue("orders", "raw");
    h.ok(dead_letter(RowId(0), None, "poison"));
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(
        h.ok(Command::Replay(Replay { message_id: id })),
        Outcome::Count(1)
    );
    assert_eq!(h.status(id), MessageStatus::Received);
    assert_eq!(h.row(RowId(0)).status, RowStatus::Pending);
}

#[test]
fn replay_of_an_unknown_message_is_refused() {
    let mut h = Harness::new();
    h.enqueue("orders", "raw");
    h.reject(
        Command::Replay(Replay {
            message_id: MessageId(42),
        }),
        Rejection::UnknownMessage(MessageId(42)),
    );
}

#[test]
fn replay_dead_requeues_dead_outbound_rows_and_moves_error_to_routed() {
    let mut h = Harness::new();
    let m0 = h.enqueue_message("c1", &[("d1", "p")]);
    let m1 = h.enqueue_message("c2", &[("d2", "p")]);
    let m2 = h.enqueue_message("c1", &[("d1", "p")]);
    let m3 = h.enqueue("c1", "raw");
    h.ok(dead_letter(RowId(0), None, "x"));
    h.ok(dead_letter(RowId(1), None, "x"));
    let done = h.claim_ready(Stage::Outbound, 1, "w", 1_000).remove(0);
    assert_eq!(done.message_id, m2);
    h.mark_done(&done).unwrap();
    h.ok(dead_letter(RowId(3), None, "ingress poison"));
    assert_eq!(h.status(m3), MessageStatus::Error);

    let by_dest = Command::ReplayDead(ReplayDead {
        channel: None,
        destination: Some("d1".into()),
    });
    assert_eq!(h.ok(by_dest), Outcome::Count(1));
    let r0 = h.row(RowId(0));
    assert_eq!(r0.status, RowStatus::Pending);
    assert_eq!(r0.last_error, None);
    assert_eq!(h.status(m0), MessageStatus::Routed);
    assert_eq!(h.event_kinds(m0).last(), Some(&EventKind::Replayed));
    assert_eq!(
        h.view(m0).events.last().unwrap().detail.as_deref(),
        Some("dead-letter replay")
    );
    assert_eq!(h.status(m1), MessageStatus::Error);
    assert_eq!(h.status(m2), MessageStatus::Processed);

    h.no_change(
        Command::ReplayDead(ReplayDead {
            channel: Some("c1".into()),
            destination: None,
        }),
        Outcome::Count(0),
    );
    assert_eq!(
        h.ok(Command::ReplayDead(ReplayDead {
            channel: None,
            destination: None
        })),
        Outcome::Count(1)
    );
    assert_eq!(h.status(m1), MessageStatus::Routed);
    // Dead ingress rows are not dead letters of ReplayDead.
    assert_eq!(h.row(RowId(3)).status, RowStatus::Dead);
    assert_eq!(h.status(m3), MessageStatus::Error);
}

#[test]
fn cancel_queued_cancels_pending_rows_of_the_destination_and_finalizes() {
    let mut h = Harness::new();
    let m0 = h.enqueue_message("c1", &[("d", "p")]);
    let m1 = h.enqueue_message("c1", &[("d", "p"), ("e", "p")]);
    let m2 = h.enqueue_message("c1", &[("d", "p")]);
    let inflight = h.claim_ready(Stage::Outbound, 1, "w", 60_000).remove(0);
    assert_eq!(inflight.message_id, m0);
    assert_eq!(h.ok(cancel("d", None, false)), Outcome::Count(2));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Inflight);
    assert_eq!(h.row(RowId(1)).status, RowStatus::Cancelled);
    assert_eq!(h.row(RowId(2)).status, RowStatus::Pending);
    assert_eq!(h.row(RowId(3)).status, RowStatus::Cancelled);
    assert_eq!(h.status(m0), MessageStatus::Routed);
    assert_eq!(h.status(m1), MessageStatus::Routed);
    assert_eq!(h.status(m2), MessageStatus::Processed);
    let event = h.view(m2).events.last().unwrap().clone();
    assert_eq!(event.event, EventKind::Cancelled);
    assert_eq!(event.destination.as_deref(), Some("d"));
    assert_eq!(event.detail.as_deref(), Some("cancelled by operator"));
    h.no_change(cancel("d", None, false), Outcome::Count(0));
    // m1 finalizes once its last row is cancelled too.
    assert_eq!(h.ok(cancel("e", None, false)), Outcome::Count(1));
    assert_eq!(h.status(m1), MessageStatus::Processed);
}

#[test]
fn cancel_queued_top_only_cancels_just_the_lane_head() {
    let mut h = Harness::new();
    h.enqueue_message("c1", &[("d", "0"), ("d", "1"), ("d", "2")]);
    assert_eq!(h.ok(cancel("d", None, true)), Outcome::Count(1));
    assert_eq!(h.row(RowId(0)).status, RowStatus::Cancelled);
    assert_eq!(
        h.sm.read().lane_order(Stage::Outbound, "d", 10).unwrap(),
        vec![RowId(1), RowId(2)]
    );
}

#[test]
fn cancel_queued_with_a_channel_cancels_only_that_channels_rows() {
    let mut h = Harness::new();
    let a = h.enqueue_message("c1", &[("d", "p")]);
    let b = h.enqueue_message("c2", &[("d", "p")]);
    assert_eq!(h.ok(cancel("d", Some("c2"), false)), Outcome::Count(1));
    assert_eq!(h.status(a), MessageStatus::Routed);
    assert_eq!(h.status(b), MessageStatus::Processed);
}

#[test]
fn cancel_queued_rejects_an_invalid_destination() {
    let mut h = Harness::new();
    h.reject(
        cancel("", None, false),
        invalid("destination", "must not be empty"),
    );
}

// ---------------------------------------------------------------------------------------------
// PutConfig
// ---------------------------------------------------------------------------------------------

#[test]
fn put_config_increments_the_version_and_keeps_history() {
    let mut h = Harness::new();
    assert_eq!(h.sm.read().config().unwrap().version, 0);
    let v1 = config_with(&["d1"], &["h1"]);
    assert_eq!(
        h.ok_as("admin", put_config(0, v1.clone())),
        Outcome::ConfigVersion(1)
    );
    h.advance(5);
    let v2 = config_with(&["d1", "d2"], &["h1"]);
    assert_eq!(
        h.ok_as("admin2", put_config(1, v2.clone())),
        Outcome::ConfigVersion(2)
    );
    let current = h.sm.read().config().unwrap();
    assert_eq!(current.version, 2);
    assert_eq!(current.doc, v2);
    assert_eq!(current.set_at, T0 + 5);
    assert_eq!(current.set_by, "admin2");
    let old = h.sm.read().config_version(1).unwrap().unwrap();
    assert_eq!(old.doc, v1);
    assert_eq!(old.set_by, "admin");
    assert_eq!(
        h.sm.read().config_version(0).unwrap().unwrap().doc,
        ConfigDoc::default()
    );
}

#[test]
fn put_config_with_the_wrong_expected_version_is_refused() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with(&["d1"], &[])));
    h.reject(
        put_config(0, config_with(&[], &[])),
        Rejection::VersionMismatch {
            expected: 0,
            current: 1,
        },
    );
    h.reject(
        put_config(2, config_with(&[], &[])),
        Rejection::VersionMismatch {
            expected: 2,
            current: 1,
        },
    );
}

#[test]
fn put_config_rejects_an_invalid_name() {
    let mut h = Harness::new();
    h.reject(
        put_config(0, config_with(&[""], &[])),
        invalid("config name", "must not be empty"),
    );
}

#[test]
fn removing_a_destination_dead_letters_its_live_rows_in_the_same_command() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with(&["d1", "d2"], &[])));
    let m0 = h.enqueue_message("c", &[("d1", "p"), ("d2", "p")]);
    let m1 = h.enqueue_message("c", &[("d1", "p")]);
    let m2 = h.enqueue_message("c", &[("d1", "p")]);
    // m1's row inflight, m2's row done.
    let rows = h.claim_ready(Stage::Outbound, 4, "w", 60_000);
    let by_msg = |m: MessageId| rows.iter().find(|r| r.message_id == m).unwrap().clone();
    let m2_row = by_msg(m2);
    h.mark_done(&m2_row).unwrap();
    let m0_d1 = rows
        .iter()
        .find(|r| r.message_id == m0 && r.destination_name.as_deref() == Some("d1"))
        .unwrap()
        .clone();
    let m0_d2 = rows
        .iter()
        .find(|r| r.message_id == m0 && r.destination_name.as_deref() == Some("d2"))
        .unwrap()
        .clone();
    // Put m0's d2 row back to pending so m0 stays live after the orphaning.
    h.ok(mark_failed(&m0_d2, "later", retry_1s()));
    h.ok(mark_failed(&m0_d1, "later", retry_1s()));

    assert_eq!(
        h.ok(put_config(1, config_with(&["d2"], &[]))),
        Outcome::ConfigVersion(2)
    );
    let orphan = h.row(m0_d1.row_id);
    assert_eq!(orphan.status, RowStatus::Dead);
    assert_eq!(
        orphan.last_error.as_deref(),
        Some("destination d1 removed from config")
    );
    let inflight_orphan = h.row(by_msg(m1).row_id);
    assert_eq!(inflight_orphan.status, RowStatus::Dead);
    assert_eq!(inflight_orphan.claim, None);
    assert_eq!(h.row(m2_row.row_id).status, RowStatus::Done);
    assert_eq!(h.row(m0_d2.row_id).status, RowStatus::Pending);
    assert_eq!(h.status(m0), MessageStatus::Routed);
    assert_eq!(h.status(m1), MessageStatus::Error);
    assert_eq!(h.status(m2), MessageStatus::Processed);
    assert_eq!(h.event_kinds(m1).last(), Some(&EventKind::Dead));
    let audit = h.audit(DEFAULT_ORG);
    let last = audit.last().unwrap();
    assert_eq!(last.action, "config.change");
    assert_eq!(
        last.detail.as_deref(),
        Some("version 2; 2 orphan row(s) dead-lettered")
    );
    // The worker that held m1's row can no longer complete it.
    let m1_row = by_msg(m1);
    h.reject(
        mark_done(&m1_row),
        wrong_status(m1_row.row_id, "dead", "inflight"),
    );
}

#[test]
fn removing_a_handler_dead_letters_its_routed_rows() {
    let mut h = Harness::new();
    h.ok(put_config(0, config_with(&[], &["h1", "h2"])));
    let id = routed_message(&mut h, "c", &[("h1", "p")]);
    let keep = routed_message(&mut h, "c", &[("h2", "p")]);
    assert_eq!(
        h.ok(put_config(1, config_with(&[], &["h2"]))),
        Outcome::ConfigVersion(2)
    );
    let row = h.view(id).rows[0].clone();
    assert_eq!(row.status, RowStatus::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("handler h1 removed from config")
    );
    assert_eq!(h.status(id), MessageStatus::Error);
    assert_eq!(h.status(keep), MessageStatus::Routed);
    assert_eq!(h.view(keep).rows[0].status, RowStatus::Pending);
}

// ---------------------------------------------------------------------------------------------
// State, reference, retention, expiry
// ---------------------------------------------------------------------------------------------

#[test]
fn write_reference_snapshot_replaces_the_whole_set() {
    let mut h = Harness::new();
    let rows = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    };
    let write = |version: u64, r: BTreeMap<String, String>| {
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: "codes".into(),
            version,
            rows: r,
        })
    };
    assert_eq!(
        h.ok(write(1, rows(&[("a", "1"), ("b", "2")]))),
        Outcome::Count(2)
    );
    h.advance(9);
    assert_eq!(h.ok(write(2, rows(&[("c", "3")]))), Outcome::Count(1));
    assert_eq!(
        h.sm.read().reference("codes").unwrap(),
        Some(ReferenceSnapshot {
            version: 2,
            rows: rows(&[("c", "3")]),
            synced_at: T0 + 9,
            row_count: 1
        })
    );
    assert_eq!(h.sm.read().reference("other").unwrap(), None);
    h.reject(
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: String::new(),
            version: 3,
            rows: BTreeMap::new(),
        }),
        invalid("name", "must not be empty"),
    );
}

#[test]
fn purge_message_bodies_blanks_ended_messages_and_skips_live_ones() {
    let mut h = Harness::new();
    // m0: delivered with a captured response.
    let done = h.outbound_claimed("orders", "api");
    h.ok(respond(&done, "secret-body", None));
    // m1: still pending.
    let live = h.enqueue_message("orders", &[("api", "p")]);
    // m2: dead-lettered (no live rows, but a dead payload is kept for PurgeDeadLetters).
    let dead = h.enqueue_message("orders", &[("api2", "dead-payload")]);
    h.ok(dead_letter(RowId(2), None, "x"));
    h.advance(10_000);
    // m3: after the cutoff.
    let young = h.outbound_claimed("orders", "api3");
    h.mark_done(&young).unwrap();

    assert_eq!(
        h.ok(Command::PurgeMessageBodies(PurgeMessageBodies {
            older_than: T0 + 5_000
        })),
        Outcome::Count(2)
    );
    let v = h.view(done.message_id);
    assert!(v.message.purged);
    assert_eq!(v.message.raw, "");
    assert_eq!(v.message.summary, None);
    assert_eq!(v.rows[0].payload, "");
    assert!(v.events.iter().all(|e| e.detail.is_none()));
    assert_eq!(v.events.len(), 3);
    assert_eq!(v.responses[0].body, "");
    assert_eq!(v.responses[0].detail, None);
    assert_eq!(v.responses[0].outcome, "200");
    let l = h.view(live);
    assert!(!l.message.purged);
    assert_eq!(l.message.raw, "raw");
    let d = h.view(dead);
    assert!(d.message.purged);
    assert_eq!(d.message.raw, "");
    assert_eq!(d.rows[0].payload, "dead-payload");
    assert!(!h.view(young.message_id).message.purged);
    assert_eq!(h.audit_actions(DEFAULT_ORG), vec!["retention.purge_bodies"]);
    // Already purged: nothing left to do.
    h.no_change(
        Command::PurgeMessageBodies(PurgeMessageBodies {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn purge_dead_letters_blanks_payload_and_error_of_old_dead_outbound_rows() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "old-payload")]);
    h.ok(dead_letter(RowId(0), None, "old-error"));
    h.advance(10_000);
    h.enqueue_message("orders", &[("d", "new-payload")]);
    h.ok(dead_letter(RowId(1), None, "new-error"));
    assert_eq!(
        h.ok(Command::PurgeDeadLetters(PurgeDeadLetters {
            older_than: T0 + 5_000
        })),
        Outcome::Count(1)
    );
    let old = h.row(RowId(0));
    assert_eq!(old.payload, "");
    assert_eq!(old.last_error, None);
    assert_eq!(old.status, RowStatus::Dead);
    let new = h.row(RowId(1));
    assert_eq!(new.payload, "new-payload");
    assert_eq!(new.last_error.as_deref(), Some("new-error"));
    assert_eq!(
        h.audit_actions(DEFAULT_ORG),
        vec!["retention.purge_dead_letters"]
    );
    h.no_change(
        Command::PurgeDeadLetters(PurgeDeadLetters {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn purge_state_deletes_old_entries_and_bumps_touched_namespace_versions() {
    let mut h = Harness::new();
    routed_message(&mut h, "c", &[("h", "p")]);
    let first = h.claim_one(Stage::Routed);
    h.ok(transform(
        &first,
        &[],
        &[("ns1", "old", "1"), ("ns2", "old", "2")],
    ));
    h.advance(10_000);
    routed_message(&mut h, "c", &[("h", "p")]);
    let second = h.claim_one(Stage::Routed);
    h.ok(transform(
        &second,
        &[],
        &[("ns1", "new", "3"), ("ns3", "new", "4")],
    ));
    let r = h.sm.read();
    assert_eq!(
        (
            r.namespace_version("ns1").unwrap(),
            r.namespace_version("ns2").unwrap()
        ),
        (2, 1)
    );
    drop(r);
    assert_eq!(
        h.ok(Command::PurgeState(PurgeState {
            older_than: T0 + 5_000
        })),
        Outcome::Count(2)
    );
    let r = h.sm.read();
    assert_eq!(r.state_entry("ns1", "old").unwrap(), None);
    assert_eq!(r.state_entry("ns2", "old").unwrap(), None);
    assert_eq!(r.state_entry("ns1", "new").unwrap().unwrap().value, "3");
    assert_eq!(r.namespace_version("ns1").unwrap(), 3);
    assert_eq!(r.namespace_version("ns2").unwrap(), 2);
    assert_eq!(r.namespace_version("ns3").unwrap(), 1);
    drop(r);
    assert_eq!(h.audit_actions(DEFAULT_ORG), vec!["retention.purge_state"]);
    h.no_change(
        Command::PurgeState(PurgeState {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn expire_records_drops_decided_approvals_and_marks_pending_ones_expired() {
    let mut h = Harness::new();
    let decided = approval_id(h.ok_as("alice", create_approval("purge", 1_000)));
    h.ok_as("bob", decide(decided, true));
    let pending = approval_id(h.ok_as("alice", create_approval("purge", 1_000)));
    h.advance(999);
    h.no_change(Command::ExpireRecords, Outcome::Count(0));
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(2));
    assert_eq!(h.sm.read().approval(decided).unwrap(), None);
    assert_eq!(
        h.sm.read().approval(pending).unwrap().unwrap().status,
        ApprovalStatus::Expired
    );
}

// ---------------------------------------------------------------------------------------------
// Audit chain
// ---------------------------------------------------------------------------------------------

#[test]
fn record_audit_appends_a_hash_chain_per_org() {
    let mut h = Harness::new();
    let Outcome::Audit { seq, hash } = h.ok(record_audit("login", None, Some("from 10.0.0.1")))
    else {
        panic!()
    };
    assert_eq!(seq, 0);
    let Outcome::Audit { seq: acme_seq, .. } = h.ok(record_audit("login", Some("acme"), None))
    else {
        panic!()
    };
    assert_eq!(acme_seq, 0);
    h.advance(1);
    let Outcome::Audit { seq: second, .. } = h.ok_as("", record_audit("logout", None, None)) else {
        panic!()
    };
    assert_eq!(second, 1);

    let rows = h.audit(DEFAULT_ORG);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].prev_hash, [0u8; 32]);
    assert_eq!(rows[0].hash, row_hash(&[0u8; 32], &rows[0]));
    assert_eq!(hex::encode(rows[0].hash), hash);
    assert_eq!(rows[0].actor.as_deref(), Some(ACTOR));
    assert_eq!(rows[0].org, DEFAULT_ORG);
    assert_eq!(rows[0].ts, T0);
    assert_eq!(rows[0].detail.as_deref(), Some("from 10.0.0.1"));
    assert_eq!(rows[1].prev_hash, rows[0].hash);
    assert_eq!(rows[1].hash, row_hash(&rows[0].hash, &rows[1]));
    assert_eq!(rows[1].actor, None);
    let acme = h.audit("acme");
    assert_eq!(acme.len(), 1);
    assert_eq!(acme[0].prev_hash, [0u8; 32]);
    let r = h.sm.read();
    assert_eq!(
        r.audit_orgs().unwrap(),
        vec!["acme".to_string(), DEFAULT_ORG.to_string()]
    );
    let v = r.audit_verify(DEFAULT_ORG, None).unwrap();
    assert!(v.ok, "{v:?}");
    assert_eq!(v.count, 2);
    assert_eq!(v.head_hash, hex::encode(rows[1].hash));
    assert!(r.audit_verify("acme", None).unwrap().ok);
}

#[test]
fn record_audit_rejects_invalid_names() {
    let mut h = Harness::new();
    h.reject(
        record_audit("", None, None),
        invalid("action", "must not be empty"),
    );
    h.reject(
        record_audit("x", Some(""), None),
        invalid("org", "must not be empty"),
    );
    h.reject(
        Command::RecordAudit(RecordAudit {
            action: "x".into(),
            channel: Some(String::new()),
            org: None,
            detail: None,
        }),
        invalid("channel", "must not be empty"),
    );
}

#[test]
fn verify_with_an_anchor_still_passes_after_further_appends() {
    let mut h = Harness::new();
    for i in 0..3 {
        h.ok(record_audit(&format!("a{i}"), None, None));
    }
    let anchor = h.sm.read().audit_anchor(DEFAULT_ORG).unwrap();
    assert_eq!(anchor.count, 3);
    assert_eq!(anchor.head_hash, h.audit(DEFAULT_ORG)[2].hash);
    for i in 3..6 {
        h.ok(record_audit(&format!("a{i}"), None, None));
    }
    let v =
        h.sm.read()
            .audit_verify(DEFAULT_ORG, Some((anchor.count, anchor.head_hash)))
            .unwrap();
    assert!(v.ok, "{v:?}");
    assert_eq!(v.count, 6);
}

#[test]
fn verify_with_a_wrong_anchor_hash_fails() {
    let mut h = Harness::new();
    for i in 0..4 {
        h.ok(record_audit(&format!("a{i}"), None, None));
    }
    let v =
        h.sm.read()
            .audit_verify(DEFAULT_ORG, Some((2, [7u8; 32])))
            .unwrap();
    assert!(!v.ok);
    assert_eq!(v.first_bad_seq, Some(1));
    assert_eq!(v.reason.as_deref(), Some("anchored row was rewritten"));
    // An anchor longer than the chain means the chain was truncated.
    let head = h.sm.read().audit_anchor(DEFAULT_ORG).unwrap();
    let v =
        h.sm.read()
            .audit_verify(DEFAULT_ORG, Some((9, head.head_hash)))
            .unwrap();
    assert!(!v.ok);
    assert_eq!(
        v.reason.as_deref(),
        Some("chain is shorter than the anchor (truncated)")
    );
}

#[test]
fn verify_detects_a_rewritten_row() {
    let mut h = Harness::new();
    for i in 0..3 {
        h.ok(record_audit(&format!("a{i}"), None, Some("original")));
    }
    let mut row = h.audit(DEFAULT_ORG)[1].clone();
    row.detail = Some("forged".into());
    let key =
        h.sm.store()
            .scan(
                Table::Audit,
                &[],
                None,
                raftlane_statemachine::storage::store::Direction::Forward,
            )
            .unwrap()
            .nth(1)
            .unwrap()
            .unwrap()
            .0;
    let mut batch = WriteBatch::default();
    batch.put(Table::Audit, key, codec::encode(&row));
    h.sm.store_mut().write(batch).unwrap();
    let v = h.sm.read().audit_verify(DEFAULT_ORG, None).unwrap();
    assert!(!v.ok);
    assert_eq!(v.first_bad_seq, Some(1));
    assert_eq!(v.reason.as_deref(), Some("hash mismatch"));
}

#[test]
fn seal_audit_epoch_closes_an_era_and_verify_walks_every_era() {
    let mut h = Harness::new();
    h.ok(record_audit("a0", Some("acme"), None));
    h.ok(record_audit("a1", Some("acme"), None));
    let before = h.sm.read().audit_anchor("acme").unwrap();
    let Outcome::Audit { seq, .. } = h.ok(Command::SealAuditEpoch(SealAuditEpoch {
        org: "acme".into(),
    })) else {
        panic!()
    };
    assert_eq!(seq, 2);
    let seal = h.audit("acme")[2].clone();
    assert_eq!(seal.action, SEAL_ACTION);
    let record: SealRecord = serde_json::from_str(seal.detail.as_deref().unwrap()).unwrap();
    assert_eq!(
        record,
        SealRecord {
            era: 0,
            count: 2,
            head_hash: hex::encode(before.head_hash)
        }
    );
    assert_eq!(h.sm.read().audit_anchor("acme").unwrap().era, 1);
    h.ok(record_audit("a3", Some("acme"), None));
    h.ok(Command::SealAuditEpoch(SealAuditEpoch {
        org: "acme".into(),
    }));
    h.ok(record_audit("a5", Some("acme"), None));
    let v = h.sm.read().audit_verify("acme", None).unwrap();
    assert!(v.ok, "{v:?}");
    assert_eq!(v.eras, 2);
    assert_eq!(v.count, 6);
    // The default org's chain is untouched by acme's seals.
    assert_eq!(h.sm.read().audit_anchor(DEFAULT_ORG).unwrap().count, 0);
    h.reject(
        Command::SealAuditEpoch(SealAuditEpoch { org: String::new() }),
        invalid("org", "must not be empty"),
    );
}

#[test]
fn data_changing_commands_append_a_default_org_audit_row() {
    let mut h = Harness::new();
    h.ok_as("admin", put_config(0, config_with(&["d"], &[])));
    h.ok_as(
        "admin",
        put_principal("w", &token_hash('1'), Role::Worker, None),
    );
    h.ok_as(
        "admin",
        Command::RevokePrincipal(RevokePrincipal { name: "w".into() }),
    );
    let id = approval_id(h.ok_as("alice", create_approval("replay_dead", 60_000)));
    h.ok_as("bob", decide(id, true));
    let row = h.outbound_claimed("c", "d");
    h.ok(dead_letter(row.row_id, Some(row.fence), "x"));
    h.ok_as(
        "op",
        Command::Replay(Replay {
            message_id: row.message_id,
        }),
    );
    h.ok(dead_letter(row.row_id, None, "x"));
    h.ok_as(
        "op",
        Command::ReplayDead(ReplayDead {
            channel: Some("c".into()),
            destination: None,
        }),
    );
    h.ok_as("op", cancel("d", None, false));
    let rows = h.audit(DEFAULT_ORG);
    let summary: Vec<(&str, Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r.action.as_str(),
                r.actor.as_deref(),
                r.channel_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("config.change", Some("admin"), None),
            ("principal.put", Some("admin"), None),
            ("principal.revoke", Some("admin"), None),
            ("approval.request", Some("alice"), None),
            ("approval.decide", Some("bob"), None),
            ("message.replay", Some("op"), Some("c")),
            ("dead_letters.replay", Some("op"), Some("c")),
            ("queue.cancel", Some("op"), None),
        ]
    );
    assert!(h.sm.read().audit_verify(DEFAULT_ORG, None).unwrap().ok);
}

// ---------------------------------------------------------------------------------------------
// Approvals
// ---------------------------------------------------------------------------------------------

#[test]
fn approval_is_created_pending_and_decided_by_another_principal() {
    let mut h = Harness::new();
    let index = h.next_index();
    let id = approval_id(h.ok_as("alice", create_approval("purge", 60_000)));
    assert_eq!(id, ApprovalId(index));
    let a = h.sm.read().approval(id).unwrap().unwrap();
    assert_eq!(a.operation, "purge");
    assert_eq!(a.params, "{}");
    assert_eq!(a.requester, "alice");
    assert_eq!(a.requested_at, T0);
    assert_eq!(a.status, ApprovalStatus::Pending);
    assert_eq!(a.expires_at, T0 + 60_000);
    h.advance(10);
    assert_eq!(h.ok_as("bob", decide(id, true)), Outcome::Approval(id));
    let a = h.sm.read().approval(id).unwrap().unwrap();
    assert_eq!(a.status, ApprovalStatus::Approved);
    assert_eq!(a.approver.as_deref(), Some("bob"));
    assert_eq!(a.decided_at, Some(T0 + 10));
}

#[test]
fn approval_can_be_rejected() {
    let mut h = Harness::new();
    let id = approval_id(h.ok_as("alice", create_approval("purge", 60_000)));
    assert_eq!(h.ok_as("bob", decide(id, false)), Outcome::Approval(id));
    assert_eq!(
        h.sm.read().approval(id).unwrap().unwrap().status,
        ApprovalStatus::Rejected
    );
}

#[test]
fn approval_decided_twice_is_refused() {
    let mut h = Harness::new();
    let id = approval_id(h.ok_as("alice", create_approval("purge", 60_000)));
    h.ok_as("bob", decide(id, true));
    h.reject_as("carol", decide(id, false), Rejection::AlreadyDecided(id));
    h.reject_as("bob", decide(id, true), Rejection::AlreadyDecided(id));
}

#[test]
fn self_approval_is_refused() {
    let mut h = Harness::new();
    let id = approval_id(h.ok_as("alice", create_approval("purge", 60_000)));
    h.reject_as("alice", decide(id, true), Rejection::SelfApproval);
    assert_eq!(
        h.sm.read().approval(id).unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
}

#[test]
fn expired_approval_cannot_be_decided() {
    let mut h = Harness::new();
    let id = approval_id(h.ok_as("alice", create_approval("purge", 1_000)));
    h.advance(1_000);
    h.reject_as("bob", decide(id, true), Rejection::ApprovalExpired(id));
}

#[test]
fn unknown_approval_is_refused() {
    let mut h = Harness::new();
    h.reject_as(
        "bob",
        decide(ApprovalId(404), true),
        Rejection::UnknownApproval(ApprovalId(404)),
    );
}

#[test]
fn create_approval_rejects_invalid_operation_and_ttl() {
    let mut h = Harness::new();
    h.reject(
        create_approval("", 1_000),
        invalid("operation", "must not be empty"),
    );
    h.reject(
        create_approval("purge", 0),
        invalid("ttl_ms", "must be between 1 and 86400000 ms"),
    );
}

// ---------------------------------------------------------------------------------------------
// Principals
// ---------------------------------------------------------------------------------------------

#[test]
fn put_principal_stores_the_hash_and_is_found_by_token() {
    let mut h = Harness::new();
    let out = h.ok(put_principal(
        "alice",
        &token_hash('a'),
        Role::Operator,
        Some(&["c1"][..]),
    ));
    assert_eq!(out, Outcome::Done);
    let p =
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap()
            .unwrap();
    assert_eq!(p.name, "alice");
    assert_eq!(p.token_hash, token_hash('a'));
    assert_eq!(p.role, Role::Operator);
    assert_eq!(p.channels, Some(vec!["c1".to_string()]));
    assert_eq!(p.created_at, T0);
    assert!(p.may_see_channel("c1"));
    assert!(!p.may_see_channel("c2"));
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('b'))
            .unwrap(),
        None
    );
}

#[test]
fn put_principal_validates_the_token_hash_and_names() {
    let mut h = Harness::new();
    let bad_hash = invalid("token_hash", "must be 64 lowercase hex digits (SHA-256)");
    h.reject(
        put_principal("alice", &token_hash('A'), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &token_hash('g'), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &"a".repeat(63), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &"a".repeat(65), Role::Admin, None),
        bad_hash,
    );
    h.reject(
        put_principal("", &token_hash('a'), Role::Admin, None),
        invalid("name", "must not be empty"),
    );
    h.reject(
        put_principal("alice", &token_hash('a'), Role::Admin, Some(&[""][..])),
        invalid("channels", "must not be empty"),
    );
}

#[test]
fn put_principal_reassigns_a_token_and_refuses_a_token_held_by_another() {
    let mut h = Harness::new();
    h.ok(put_principal("alice", &token_hash('a'), Role::Admin, None));
    // A new token for alice frees the old one.
    h.ok(put_principal("alice", &token_hash('b'), Role::Viewer, None));
    let r = h.sm.read();
    assert_eq!(r.principal_by_token_hash(&token_hash('a')).unwrap(), None);
    let p = r
        .principal_by_token_hash(&token_hash('b'))
        .unwrap()
        .unwrap();
    assert_eq!((p.name.as_str(), p.role), ("alice", Role::Viewer));
    drop(r);
    h.reject(
        put_principal("bob", &token_hash('b'), Role::Admin, None),
        invalid("token_hash", "already assigned to another principal"),
    );
    h.ok(put_principal("bob", &token_hash('a'), Role::Worker, None));
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap()
            .unwrap()
            .name,
        "bob"
    );
    assert_eq!(h.sm.read().principals().unwrap().len(), 2);
}

#[test]
fn revoke_principal_removes_the_principal_and_its_token() {
    let mut h = Harness::new();
    h.ok(put_principal("alice", &token_hash('a'), Role::Admin, None));
    h.ok(put_principal("bob", &token_hash('b'), Role::Admin, None));
    assert_eq!(
        h.ok(Command::RevokePrincipal(RevokePrincipal {
            name: "alice".into()
        })),
        Outcome::Done
    );
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap(),
        None
    );
    let names: Vec<String> =
        h.sm.read()
            .principals()
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
    assert_eq!(names, vec!["bob".to_string()]);
    h.reject(
        Command::RevokePrincipal(RevokePrincipal {
            name: "alice".into(),
        }),
        Rejection::UnknownPrincipal("alice".into()),
    );
    // The freed token can be given to someone else.
    h.ok(put_principal("carol", &token_hash('a'), Role::Viewer, None));
}

// ---------------------------------------------------------------------------------------------
// Group commit
// ---------------------------------------------------------------------------------------------

#[test]
fn a_batch_applies_each_envelope_alone_with_unique_fences() {
    use raftlane_statemachine::wire::command::op_id;
    use raftlane_statemachine::Envelope;
    let mut h = Harness::new();
    let e = |cmd: Command| Envelope::new(T0, "producer", cmd);
    let index = h.next_index();
    let out = h.ok(Command::Batch(Batch {
        commands: vec![
            e(enqueue_cmd("orders", "a", Some("k"))),
            e(enqueue_cmd("orders", "a again", Some("k"))),
            // Rejected on its own; the others still apply.
            e(Command::MarkDone(MarkDone {
                row_id: RowId(99),
                fence: Fence(1),
            })),
            e(claim_ready_cmd(Stage::Ingress, 1, "w", 10_000)),
            e(Command::Batch(Batch { commands: vec![] })),
        ],
    }));
    let Outcome::Batch(responses) = out else {
        panic!("a batch outcome, got {out:?}")
    };
    assert_eq!(responses.len(), 5);
    let (first, dup) = (
        enqueued(responses[0].clone().unwrap()),
        enqueued(responses[1].clone().unwrap()),
    );
    assert_eq!(first.0, dup.0);
    assert!(dup.1, "the second enqueue is a duplicate of the first");
    assert_eq!(responses[2], Err(Rejection::UnknownRow(RowId(99))));
    match &responses[3] {
        Ok(Outcome::Claimed(rows)) => {
            assert_eq!(rows.len(), 1);
            // The claim's fence is its operation id, not the bare log index.
            assert_eq!(rows[0].fence, Fence(op_id(index, 3)));
            // And it completes like any other claim.
            let row = rows[0].clone();
            assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
        }
        other => panic!("a claim, got {other:?}"),
    }
    assert!(
        matches!(responses[4], Err(Rejection::Invalid { .. })),
        "no nested batches"
    );
}

#[test]
fn op_ids_never_collide_with_log_indexes_and_stay_exact_in_json() {
    use raftlane_statemachine::wire::command::{op_id, BATCH_OP_BASE, MAX_BATCH};
    assert!(op_id(1, 0) > 1 << 40);
    assert!(op_id(1 << 39, MAX_BATCH - 1) < (1u64 << 53));
    assert_eq!(op_id(7, 1) - op_id(7, 0), 1);
    assert!(op_id(8, 0) > op_id(7, MAX_BATCH - 1));
    assert_eq!(op_id(0, 0), BATCH_OP_BASE);
}

// ---------------------------------------------------------------------------------------------
// Request ids: exactly-once retries
// ---------------------------------------------------------------------------------------------

#[test]
fn a_retried_request_gets_its_first_answer_and_changes_nothing() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let first_index = h.next_index();
    let first = h.run_request("w", "r-1", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    let Ok(Outcome::FifoClaimed(Ok(claimed))) = &first else {
        panic!("claim: {first:?}");
    };
    assert_eq!(claimed.row_id, RowId(0));
    h.advance(10);
    let before = h.digest();
    let again = h.run_request("w", "r-1", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    assert_eq!(
        again,
        Ok(Outcome::Repeated {
            index: first_index,
            response: Box::new(first.clone()),
        })
    );
    assert_eq!(h.digest(), before, "a repeat changes nothing");
    // A new request id is a new claim (here: the same owner gets its own row back).
    let other = h.run_request("w", "r-2", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    assert!(matches!(other, Ok(Outcome::FifoClaimed(Ok(ref c))) if c.row_id == RowId(0)));
}

#[test]
fn a_rejection_is_not_remembered_and_ids_are_per_actor() {
    let mut h = Harness::new();
    let before = h.digest();
    let first = h.run_request("a", "r", enqueue_cmd("", "x", None));
    assert!(first.is_err());
    assert_eq!(
        h.digest(),
        before,
        "bad input changes nothing, not even a record"
    );
    // Its retry (here with the input fixed) is judged again.
    let again = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(again, Ok(Outcome::Enqueued { .. })), "{again:?}");
    // The same id under another principal is another request.
    let theirs = h.run_request("b", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(theirs, Ok(Outcome::Enqueued { .. })));
    let ours = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(ours, Ok(Outcome::Repeated { .. })));
}

#[test]
fn remembered_answers_expire_with_expire_records() {
    use raftlane_statemachine::apply::request::REQUEST_TTL_MS;
    let mut h = Harness::new();
    h.run_request("a", "r", enqueue_cmd("c", "x", None))
        .expect("enqueued");
    h.advance(REQUEST_TTL_MS);
    assert_eq!(
        h.ok(Command::ExpireRecords),
        Outcome::Count(0),
        "still inside the window"
    );
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(1));
    let after = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(
        matches!(after, Ok(Outcome::Enqueued { .. })),
        "applied anew: {after:?}"
    );
}

#[test]
fn an_invalid_request_id_is_rejected_and_changes_nothing() {
    let mut h = Harness::new();
    let before = h.digest();
    for id in ["", "a b", &"x".repeat(65)] {
        let r = h.run_request("a", id, enqueue_cmd("c", "x", None));
        assert_eq!(
            r,
            Err(invalid(
                "request_id",
                "must be 1 to 64 visible ASCII characters"
            ))
        );
    }
    assert_eq!(h.digest(), before);
}

/// A batched write runs under its operation id (its fences), but a repeat of it reports the log
/// index of the entry that applied it: clients order completions by that index.
#[test]
fn a_repeat_of_a_batched_request_reports_the_entry_index() {
    use raftlane_statemachine::Envelope;
    let mut h = Harness::new();
    let index = h.next_index();
    let batched = Envelope::new(T0, "p", enqueue_cmd("orders", "a", None)).with_request_id("r");
    let out = h.ok(Command::Batch(Batch {
        commands: vec![batched.clone()],
    }));
    let Outcome::Batch(responses) = out else {
        panic!("a batch outcome, got {out:?}")
    };
    let again = h.run_request("p", "r", enqueue_cmd("orders", "a", None));
    assert_eq!(
        again,
        Ok(Outcome::Repeated {
            index,
            response: Box::new(responses[0].clone()),
        })
    );
}
