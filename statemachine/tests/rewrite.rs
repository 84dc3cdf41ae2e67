//! `RewriteValues` (key rotation, docs/SPEC.md §2.6) and the covered-values walk behind it.
//!
//! Semantics under test (see `raftlane_statemachine::apply::rewrite`): each item is a
//! compare-and-set; a target that no longer exists is ignored (counted as not rewritten), not
//! rejected; only the value changes; one `keys.rotate` audit row per command; too many items is a
//! rejection that changes nothing.

#[allow(dead_code)]
mod cmd_support;

use cmd_support::*;
use raftlane_statemachine::apply::rewrite::ROTATE_ACTION;
use raftlane_statemachine::model::audit::DEFAULT_ORG;
use raftlane_statemachine::model::row::{RowStatus, Stage};
use raftlane_statemachine::wire::command::ReferenceVersion;
use raftlane_statemachine::wire::command::{
    CompleteWithResponse, DeadLetterNow, MarkFailed, MessageFields, ReceivedStatus, RecordReceived,
    Replay, RewriteValues, RouteDisposition, RouteHandoff, StateOp, TransformHandoff,
    WriteReferenceSnapshot,
};
use raftlane_statemachine::wire::rewrite::{Rewrite, ValueRef, MAX_REWRITES};
use raftlane_statemachine::{Command, MessageId, Outcome, Rejection, RowId};
use std::collections::BTreeMap;

/// What `populate` built.
struct World {
    /// Message that went ingress → routed → outbound → response captured (and re-ingressed).
    m1: MessageId,
    /// Its outbound row (failed once, then completed with a response).
    outbound: RowId,
    /// The response-stage row created by the re-ingress request.
    response_row: RowId,
    /// A message recorded with an error and no rows.
    m2: MessageId,
    /// A message whose outbound row was dead-lettered.
    m3: MessageId,
    dead_row: RowId,
}

fn populate(h: &mut Harness) -> World {
    let m1 = h.enqueue("ch", "raw-1");
    let ingress = h.claim_one(Stage::Ingress);
    h.ok(Command::RouteHandoff(RouteHandoff {
        row_id: ingress.row_id,
        fence: ingress.fence,
        handlers: vec![handler("h", "handler-payload")],
        disposition: RouteDisposition::Routed,
    }));
    let routed = h.claim_one(Stage::Routed);
    h.ok(Command::TransformHandoff(TransformHandoff {
        row_id: routed.row_id,
        fence: routed.fence,
        deliveries: vec![delivery("dest", "out-payload")],
        state_ops: vec![StateOp {
            namespace: "ns".into(),
            key: "k".into(),
            value: "\"state-value\"".into(),
        }],
    }));
    let out = h.claim_one(Stage::Outbound);
    h.ok(Command::MarkFailed(MarkFailed {
        row_id: out.row_id,
        fence: out.fence,
        error: "boom".into(),
        retry: retry(None, 10, 1000, 10),
    }));
    h.advance(100);
    let out2 = h.claim_one(Stage::Outbound);
    h.ok(Command::CompleteWithResponse(CompleteWithResponse {
        row_id: out2.row_id,
        fence: out2.fence,
        body: "response-body".into(),
        outcome: "ok".into(),
        detail: Some("response-detail".into()),
        reingress_to: Some("loop".into()),
    }));
    let response_row = h
        .view(m1)
        .rows
        .iter()
        .find(|r| r.stage == Stage::Response)
        .expect("response row")
        .id;
    h.ok(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: "ref".into(),
        version: ReferenceVersion::Number(1),
        rows: BTreeMap::from([("a".into(), "ref-a".into()), ("b".into(), "ref-b".into())]),
    }));
    let m2 = enqueued(h.ok(Command::RecordReceived(RecordReceived {
        channel: "ch".into(),
        raw: "raw-2".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Error,
        error: Some("parse error".into()),
    })))
    .0;
    let dead = h.outbound_claimed("ch", "dest2");
    h.ok(Command::DeadLetterNow(DeadLetterNow {
        row_id: dead.row_id,
        fence: Some(dead.fence),
        error: "poison".into(),
    }));
    World {
        m1,
        outbound: out.row_id,
        response_row,
        m2,
        m3: dead.message_id,
        dead_row: dead.row_id,
    }
}

fn all_values(h: &Harness) -> Vec<(ValueRef, String)> {
    h.sm.read().covered_values(None, usize::MAX).expect("walk")
}

fn value_of(h: &Harness, target: &ValueRef) -> Option<String> {
    all_values(h)
        .into_iter()
        .find(|(t, _)| t == target)
        .map(|(_, v)| v)
}

fn rw(target: ValueRef, expected: &str, value: &str) -> Rewrite {
    Rewrite {
        target,
        expected: expected.into(),
        value: value.into(),
    }
}

/// One reference of every kind, with its current value.
fn one_of_each(w: &World, h: &Harness) -> Vec<(ValueRef, String)> {
    let failed_event = h
        .view(w.m1)
        .events
        .iter()
        .position(|e| e.detail.as_deref() == Some("attempt 1: boom"))
        .expect("failed event") as u64;
    vec![
        (ValueRef::MessageRaw { message_id: w.m1 }, "raw-1".into()),
        (
            ValueRef::MessageError { message_id: w.m2 },
            "parse error".into(),
        ),
        (
            ValueRef::RowPayload { row_id: w.outbound },
            "out-payload".into(),
        ),
        (ValueRef::RowLastError { row_id: w.outbound }, "boom".into()),
        (
            ValueRef::EventDetail {
                message_id: w.m1,
                event_no: failed_event,
            },
            "attempt 1: boom".into(),
        ),
        (
            ValueRef::ResponseBody {
                message_id: w.m1,
                destination: "dest".into(),
                seq: 1,
            },
            "response-body".into(),
        ),
        (
            ValueRef::ResponseDetail {
                message_id: w.m1,
                destination: "dest".into(),
                seq: 1,
            },
            "response-detail".into(),
        ),
        (
            ValueRef::StateValue {
                namespace: "ns".into(),
                key: "k".into(),
            },
            "\"state-value\"".into(),
        ),
        (
            ValueRef::ReferenceValue {
                name: "ref".into(),
                key: "b".into(),
            },
            "ref-b".into(),
        ),
    ]
}

#[test]
fn walk_covers_every_kind_in_a_stable_resumable_order() {
    let mut h = Harness::new();
    let w = populate(&mut h);
    let all = all_values(&h);
    for (target, value) in one_of_each(&w, &h) {
        assert!(
            all.contains(&(target.clone(), value.clone())),
            "{target:?} = {value:?} missing from {all:#?}"
        );
    }
    assert!(all.contains(&(
        ValueRef::RowLastError { row_id: w.dead_row },
        "poison".into()
    )));
    assert!(all.contains(&(
        ValueRef::ReferenceValue {
            name: "ref".into(),
            key: "a".into()
        },
        "ref-a".into()
    )));
    // A response-stage row's payload is the state machine's own reference, never covered.
    assert!(!all.iter().any(|(t, _)| *t
        == ValueRef::RowPayload {
            row_id: w.response_row
        }));
    // No duplicates.
    for (i, (t, _)) in all.iter().enumerate() {
        assert!(!all[i + 1..].iter().any(|(u, _)| u == t), "{t:?} twice");
    }
    // Paging with any page size gives the same sequence.
    for size in [1, 2, 3, 7, 50] {
        let mut paged = Vec::new();
        let mut cursor: Option<ValueRef> = None;
        loop {
            let page =
                h.sm.read()
                    .covered_values(cursor.as_ref(), size)
                    .expect("page");
            assert!(page.len() <= size);
            let Some((last, _)) = page.last() else { break };
            cursor = Some(last.clone());
            paged.extend(page);
        }
        assert_eq!(paged, all, "page size {size}");
    }
    assert!(h
        .sm
        .read()
        .covered_values(None, 0)
        .expect("empty")
        .is_empty());
    let last = all.last().expect("values").0.clone();
    assert!(h
        .sm
        .read()
        .covered_values(Some(&last), 10)
        .expect("after last")
        .is_empty());
    // A cursor naming a value that no longer exists still resumes at the right place.
    let gone = ValueRef::MessageError { message_id: w.m1 };
    let after_gone = h.sm.read().covered_values(Some(&gone), 1).expect("resume");
    let m1_raw = all
        .iter()
        .position(|(t, _)| *t == ValueRef::MessageRaw { message_id: w.m1 })
        .expect("raw");
    assert_eq!(after_gone[0], all[m1_raw + 1]);
}

#[test]
fn rewrite_replaces_every_kind_when_expected_matches() {
    let mut h = Harness::new();
    let w = populate(&mut h);
    let targets = one_of_each(&w, &h);
    let rows_before: Vec<_> = h.view(w.m1).rows;
    let ns_version = h.sm.read().namespace_version("ns").expect("version");
    let items: Vec<Rewrite> = targets
        .iter()
        .map(|(t, v)| rw(t.clone(), v, &format!("enc:v1:k2:{v}")))
        .collect();
    let n = items.len() as u64;
    assert_eq!(
        h.ok(Command::RewriteValues(RewriteValues { items })),
        Outcome::Count(n)
    );
    for (t, v) in &targets {
        assert_eq!(value_of(&h, t), Some(format!("enc:v1:k2:{v}")), "{t:?}");
    }
    // Only values changed: statuses, attempts, lanes, fences, timestamps are as before.
    let rows_after = h.view(w.m1).rows;
    assert_eq!(rows_before.len(), rows_after.len());
    for (b, a) in rows_before.iter().zip(&rows_after) {
        assert_eq!(
            (
                b.status,
                b.attempts,
                b.created_at,
                b.updated_at,
                b.last_fence
            ),
            (
                a.status,
                a.attempts,
                a.created_at,
                a.updated_at,
                a.last_fence
            )
        );
    }
    assert_eq!(
        h.sm.read().namespace_version("ns").expect("version"),
        ns_version
    );
    let snapshot = h.sm.read().reference("ref").expect("read").expect("ref");
    assert_eq!(snapshot.version, 1);
    assert_eq!(snapshot.rows["a"], "ref-a");
    // The audit row, in the same command.
    let audit = h.audit(DEFAULT_ORG);
    let last = audit.last().expect("audit row");
    assert_eq!(last.action, ROTATE_ACTION);
    assert_eq!(last.actor.as_deref(), Some(ACTOR));
    assert_eq!(
        last.detail.as_deref(),
        Some(format!("{{\"requested\":{n},\"rewritten\":{n}}}").as_str())
    );
    assert!(
        h.sm.read()
            .audit_verify(DEFAULT_ORG, None)
            .expect("verify")
            .ok
    );
}

#[test]
fn compare_and_set_never_clobbers_a_changed_value() {
    let mut h = Harness::new();
    let w = populate(&mut h);
    let targets = one_of_each(&w, &h);
    let before = h.digest();
    let audit_len = h.audit(DEFAULT_ORG).len();
    let items: Vec<Rewrite> = targets
        .iter()
        .map(|(t, v)| rw(t.clone(), &format!("{v}-stale"), "new"))
        .collect();
    assert_eq!(
        h.ok(Command::RewriteValues(RewriteValues { items })),
        Outcome::Count(0)
    );
    for (t, v) in &targets {
        assert_eq!(value_of(&h, t).as_deref(), Some(v.as_str()), "{t:?}");
    }
    // Nothing changed but the audit trail (and the clock).
    assert_ne!(h.digest(), before);
    assert_eq!(h.audit(DEFAULT_ORG).len(), audit_len + 1);
    assert_eq!(
        h.audit(DEFAULT_ORG).last().and_then(|r| r.detail.clone()),
        Some(format!(
            "{{\"requested\":{},\"rewritten\":0}}",
            targets.len()
        ))
    );

    // Two rewrites of one value in one command: the second sees the first's result.
    let raw = ValueRef::MessageRaw { message_id: w.m1 };
    let out = h.ok(Command::RewriteValues(RewriteValues {
        items: vec![
            rw(raw.clone(), "raw-1", "v2"),
            rw(raw.clone(), "raw-1", "v3"),
        ],
    }));
    assert_eq!(out, Outcome::Count(1));
    assert_eq!(value_of(&h, &raw).as_deref(), Some("v2"));
    let out = h.ok(Command::RewriteValues(RewriteValues {
        items: vec![rw(raw.clone(), "v2", "v3"), rw(raw.clone(), "v3", "v4")],
    }));
    assert_eq!(out, Outcome::Count(2));
    assert_eq!(value_of(&h, &raw).as_deref(), Some("v4"));
}

#[test]
fn a_value_changed_after_the_read_is_left_alone() {
    let mut h = Harness::new();
    let w = populate(&mut h);
    // The rotation read the dead row's error; then an operator replays and it fails anew.
    let target = ValueRef::RowLastError { row_id: w.dead_row };
    let read = value_of(&h, &target).expect("error");
    assert_eq!(read, "poison");
    h.ok(Command::Replay(Replay { message_id: w.m3 }));
    let again = h.claim_one(Stage::Outbound);
    h.ok(Command::MarkFailed(MarkFailed {
        row_id: again.row_id,
        fence: again.fence,
        error: "second failure".into(),
        retry: retry(None, 10, 1000, 10),
    }));
    let out = h.ok(Command::RewriteValues(RewriteValues {
        items: vec![rw(target.clone(), &read, "rotated-old")],
    }));
    assert_eq!(out, Outcome::Count(0));
    assert_eq!(value_of(&h, &target).as_deref(), Some("second failure"));
    assert_eq!(h.row(w.dead_row).status, RowStatus::Pending);
}

#[test]
fn unknown_and_absent_targets_are_ignored_not_rejected() {
    let mut h = Harness::new();
    let w = populate(&mut h);
    let items = vec![
        rw(
            ValueRef::MessageRaw {
                message_id: MessageId(999),
            },
            "x",
            "y",
        ),
        // m1 has no error: an absent optional field is a miss, never created.
        rw(ValueRef::MessageError { message_id: w.m1 }, "", "y"),
        rw(ValueRef::RowPayload { row_id: RowId(999) }, "x", "y"),
        rw(
            ValueRef::RowLastError {
                row_id: w.response_row,
            },
            "",
            "y",
        ),
        rw(
            ValueRef::EventDetail {
                message_id: w.m1,
                event_no: 999,
            },
            "x",
            "y",
        ),
        rw(
            ValueRef::ResponseBody {
                message_id: w.m1,
                destination: "dest".into(),
                seq: 9,
            },
            "x",
            "y",
        ),
        rw(
            ValueRef::StateValue {
                namespace: "ns".into(),
                key: "nope".into(),
            },
            "x",
            "y",
        ),
        rw(
            ValueRef::ReferenceValue {
                name: "ref".into(),
                key: "zz".into(),
            },
            "x",
            "y",
        ),
        rw(
            ValueRef::ReferenceValue {
                name: "nope".into(),
                key: "a".into(),
            },
            "x",
            "y",
        ),
        // One real hit among the misses.
        rw(ValueRef::MessageRaw { message_id: w.m2 }, "raw-2", "z"),
    ];
    assert_eq!(
        h.ok(Command::RewriteValues(RewriteValues { items })),
        Outcome::Count(1)
    );
    assert_eq!(h.view(w.m1).message.error, None);
    assert!(h.sm.read().message(MessageId(999)).expect("read").is_none());
    let snapshot = h.sm.read().reference("ref").expect("read").expect("ref");
    assert_eq!(snapshot.rows.len(), 2);
    assert!(h.sm.read().reference("nope").expect("read").is_none());
    assert!(h
        .sm
        .read()
        .state_entry("ns", "nope")
        .expect("read")
        .is_none());
    assert_eq!(h.view(w.m2).message.raw, "z");
}

#[test]
fn an_empty_rewrite_still_audits_and_too_many_is_rejected() {
    let mut h = Harness::new();
    let _ = populate(&mut h);
    assert_eq!(
        h.ok(Command::RewriteValues(RewriteValues { items: vec![] })),
        Outcome::Count(0)
    );
    assert_eq!(
        h.audit_actions(DEFAULT_ORG).last().map(String::as_str),
        Some(ROTATE_ACTION)
    );
    let items = vec![
        rw(
            ValueRef::MessageRaw {
                message_id: MessageId(0)
            },
            "raw-1",
            "x"
        );
        MAX_REWRITES + 1
    ];
    h.reject(
        Command::RewriteValues(RewriteValues { items }),
        Rejection::invalid("items", format!("more than {MAX_REWRITES}")),
    );
}

#[test]
fn rewritten_state_is_identical_on_every_replica() {
    // The same log applied to two replicas gives the same digest: the command carries the new
    // values, apply computes nothing from outside.
    let run = || {
        let mut h = Harness::new();
        let w = populate(&mut h);
        let items: Vec<Rewrite> = one_of_each(&w, &h)
            .into_iter()
            .map(|(t, v)| rw(t, &v, "cipher"))
            .collect();
        h.ok(Command::RewriteValues(RewriteValues { items }));
        h.digest()
    };
    assert_eq!(run(), run());
    assert_eq!(
        Command::RewriteValues(RewriteValues { items: vec![] }).name(),
        "rewrite_values"
    );
}

#[test]
fn rewrite_round_trips_through_the_codec() {
    let cmd = Command::RewriteValues(RewriteValues {
        items: vec![rw(
            ValueRef::ResponseDetail {
                message_id: MessageId(1),
                destination: "d".into(),
                seq: 2,
            },
            "a",
            "b",
        )],
    });
    let bytes = raftlane_statemachine::wire::codec::encode(&cmd);
    let back: Command = raftlane_statemachine::wire::codec::decode(&bytes).expect("decode");
    assert_eq!(back, cmd);
}
