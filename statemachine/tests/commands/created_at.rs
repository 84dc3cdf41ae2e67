//! Log format 4's rule: a claim's answer carries each claimed row's creation time (the ingest
//! time a worker hands its handlers), in `Outcome::Dated`; an entry of an older format answers
//! without it. Either way a retried request gets the same answer back, and the encoded row is
//! what it was before format 4 (the time travels beside it).

use crate::harness::*;
use raftlane_statemachine::codec;
use raftlane_statemachine::wire::log_format::LogFormat;
use raftlane_statemachine::{Envelope, Response};

/// Apply `command` as written in `format`, under `request_id` when given.
fn run_in(
    h: &mut Harness,
    format: LogFormat,
    request_id: Option<&str>,
    command: Command,
) -> Response {
    h.index += 1;
    let mut envelope = Envelope::new(h.now, ACTOR, command);
    if let Some(id) = request_id {
        envelope = envelope.with_request_id(id);
    }
    envelope.set_format(format);
    h.sm.apply(h.index, &envelope).expect("store error")
}

fn ok_in(h: &mut Harness, format: LogFormat, command: Command) -> Outcome {
    run_in(h, format, None, command).expect("applied")
}

#[test]
fn from_format_4_a_claim_answers_each_rows_creation_time() {
    let mut h = Harness::new();
    h.enqueue("lab", "m1");
    let first = h.now;
    h.advance(250);
    h.enqueue("lab", "m2");
    let second = h.now;
    h.advance(1_000);

    let answer = ok_in(
        &mut h,
        LogFormat::V4,
        claim_ready_cmd(Stage::Ingress, 10, "w", 30_000),
    );
    let Outcome::Dated {
        created_at,
        outcome,
    } = answer.clone()
    else {
        panic!("a format 4 claim answers its rows' times: {answer:?}");
    };
    assert_eq!(created_at, vec![first, second]);
    let Outcome::Claimed(rows) = *outcome else {
        panic!("the claim inside: {outcome:?}");
    };
    assert!(
        rows.iter().all(|r| r.created_at.is_none()),
        "the times travel beside the rows"
    );

    let Outcome::Claimed(rows) = answer.undated() else {
        panic!("undated is the claim");
    };
    let times: Vec<_> = rows.iter().map(|r| r.created_at).collect();
    assert_eq!(times, vec![Some(first), Some(second)]);
}

#[test]
fn before_format_4_a_claim_answers_no_creation_time() {
    for format in [LogFormat::V1, LogFormat::V2, LogFormat::V3] {
        let mut h = Harness::new();
        h.enqueue("lab", "m1");
        let answer = ok_in(
            &mut h,
            format,
            claim_ready_cmd(Stage::Ingress, 10, "w", 30_000),
        );
        let Outcome::Claimed(rows) = answer.clone().undated() else {
            panic!("format {format}: {answer:?}");
        };
        assert!(!matches!(answer, Outcome::Dated { .. }), "format {format}");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].created_at, None, "format {format}");
    }
}

#[test]
fn a_fifo_claim_and_a_done_then_next_are_dated_too_and_an_empty_claim_is_not() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0")]);
    let first = h.now;
    h.advance(40);
    h.enqueue_message("orders", &[("d", "p1")]);
    let second = h.now;

    let head = match ok_in(
        &mut h,
        LogFormat::V4,
        fifo_cmd(Stage::Outbound, "d", "a", 10_000),
    )
    .undated()
    {
        Outcome::FifoClaimed(Ok(row)) => row,
        other => panic!("the head: {other:?}"),
    };
    assert_eq!(head.created_at, Some(first));
    let next = ok_in(
        &mut h,
        LogFormat::V4,
        Command::DoneThenClaimNext(DoneThenClaimNext {
            row_id: head.row_id,
            fence: head.fence,
            owner: "a".into(),
            ttl_ms: 10_000,
        }),
    );
    assert!(matches!(next, Outcome::Dated { .. }), "{next:?}");
    let next_row = next
        .clone()
        .undated()
        .claimed_rows()
        .into_iter()
        .map(|r| r.clone())
        .next()
        .expect("the lane's next row");
    assert_eq!(next_row.created_at, Some(second));
    assert_eq!(next_row.payload, "p1");

    // A claim that finds nothing has no time to carry.
    let empty = ok_in(
        &mut h,
        LogFormat::V4,
        claim_ready_cmd(Stage::Ingress, 10, "w", 30_000),
    );
    assert_eq!(empty, Outcome::Claimed(vec![]));
}

#[test]
fn a_retried_claim_gets_the_same_dated_answer() {
    let mut h = Harness::new();
    h.enqueue("lab", "m1");
    let created = h.now;
    let cmd = claim_ready_cmd(Stage::Ingress, 10, "w", 30_000);
    let first = run_in(&mut h, LogFormat::V4, Some("r-1"), cmd.clone()).expect("applied");
    let again = run_in(&mut h, LogFormat::V4, Some("r-1"), cmd).expect("answered");
    let Outcome::Repeated { response, .. } = again else {
        panic!("a repeat: {again:?}");
    };
    assert_eq!(*response, Ok(first.clone()));
    let Outcome::Claimed(rows) = first.undated() else {
        panic!("a claim");
    };
    assert_eq!(rows[0].created_at, Some(created));
}

#[test]
fn the_creation_time_is_named_in_json_and_absent_from_the_encoded_row() {
    let mut h = Harness::new();
    h.enqueue("lab", "m1");
    let created = h.now;
    let Outcome::Claimed(mut rows) = ok_in(
        &mut h,
        LogFormat::V4,
        claim_ready_cmd(Stage::Ingress, 1, "w", 30_000),
    )
    .undated() else {
        panic!("a claim");
    };
    let row = rows.remove(0);
    let json = serde_json::to_value(&row).expect("json");
    assert_eq!(json["created_at"], serde_json::json!(created));
    let back: ClaimedRow = serde_json::from_value(json).expect("read back");
    assert_eq!(back, row);

    let bare = ClaimedRow {
        created_at: None,
        ..row.clone()
    };
    assert_eq!(
        codec::encode(&row),
        codec::encode(&bare),
        "the encoded row has no room for it"
    );
    let decoded: ClaimedRow = codec::decode(&codec::encode(&row)).expect("decode");
    assert_eq!(decoded, bare);
    assert!(serde_json::to_value(&bare)
        .expect("json")
        .get("created_at")
        .is_none());
}
