//! docs/SPEC.md §9.8: a row's claim is its principal's. A fenced action by another principal
//! is refused and changes nothing, whatever fence it presents; under the envelope's `as_operator` (the
//! proposer's word that the caller is an operator) it applies, and leaves an audit row
//! `row.override` naming the claim's principal.

use crate::harness::*;
use raftlane_statemachine::wire::layout_v1::{self, CommandV1, RecordAuditV1};

#[test]
fn only_the_claims_principal_acts_on_it_and_an_operator_is_audited() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0")]);
    let row = match h.ok_as(
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
        Outcome::Claimed(rows) => rows[0].clone(),
        other => panic!("expected Claimed, got {other:?}"),
    };
    let refused = Rejection::ClaimOfAnother { row: row.row_id };
    // Another principal, with the claim's very fence: every fenced action is refused.
    let done = Command::MarkDone(MarkDone {
        row_id: row.row_id,
        fence: row.fence,
    });
    let dead = |fence| {
        Command::DeadLetterNow(DeadLetterNow {
            row_id: row.row_id,
            fence,
            error: "forged".into(),
        })
    };
    h.reject_as("worker-b", done.clone(), refused.clone());
    h.reject_as("worker-b", dead(Some(row.fence)), refused.clone());
    h.reject_as("worker-b", dead(None), refused.clone());
    h.reject_as(
        "worker-b",
        Command::MarkFailed(MarkFailed {
            row_id: row.row_id,
            fence: row.fence,
            error: "forged".into(),
            retry: retry(Some(3), 10, 1000, 100),
        }),
        refused.clone(),
    );
    h.reject_as(
        "worker-b",
        Command::DoneThenClaimNext(DoneThenClaimNext {
            row_id: row.row_id,
            fence: row.fence,
            owner: "wb".into(),
            ttl_ms: 1_000,
        }),
        refused,
    );
    assert_eq!(h.row(row.row_id).status, RowStatus::Inflight);

    // An operator's override applies and is audited in the row's channel.
    let before = h.audit(DEFAULT_ORG).len();
    assert_eq!(h.run_as("ops", as_operator(dead(None))), Ok(Outcome::Done));
    assert_eq!(h.row(row.row_id).status, RowStatus::Dead);
    let audit = h.audit(DEFAULT_ORG);
    let overrides: Vec<_> = audit[before..]
        .iter()
        .filter(|r| r.action == "row.override")
        .collect();
    assert_eq!(overrides.len(), 1, "{audit:?}");
    assert_eq!(overrides[0].actor.as_deref(), Some("ops"));
    assert_eq!(overrides[0].channel_id.as_deref(), Some("orders"));
    let detail = overrides[0].detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("worker-a") && detail.contains("wa"),
        "{detail}"
    );
}

#[test]
fn the_claims_own_principal_and_an_operator_on_its_own_claim_leave_no_override() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "0"), ("d", "1")]);
    let claim = |h: &mut Harness, actor: &str, owner: &str| match h.ok_as(
        actor,
        Command::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 1,
            channel: None,
            destination: None,
            owner: owner.into(),
            ttl_ms: 30_000,
        }),
    ) {
        Outcome::Claimed(rows) => rows[0].clone(),
        other => panic!("expected Claimed, got {other:?}"),
    };
    let mine = claim(&mut h, "worker-a", "wa");
    let ops = claim(&mut h, "ops", "ops-1");
    let done = |r: &ClaimedRow| {
        Command::MarkDone(MarkDone {
            row_id: r.row_id,
            fence: r.fence,
        })
    };
    assert_eq!(h.run_as("worker-a", done(&mine)), Ok(Outcome::Done));
    assert_eq!(h.run_as("ops", as_operator(done(&ops))), Ok(Outcome::Done));
    assert!(!h
        .audit_actions(DEFAULT_ORG)
        .iter()
        .any(|a| a == "row.override"));
}

/// Format 1 and 2 logs carried the operator's word as a wrapper command: one nested in another
/// (which no proposer wrote) is kept as it was and refused, changing nothing.
#[test]
fn a_format_1_operator_wrapper_in_a_wrapper_is_refused() {
    let mut h = Harness::new();
    let wrap = |c| {
        CommandV1::AsOperator(layout_v1::AsOperator {
            command: Box::new(c),
        })
    };
    let audit = CommandV1::RecordAudit(RecordAuditV1 {
        action: "a".into(),
        channel: None,
        org: None,
        detail: None,
    });
    let proposal = legacy(wrap(wrap(audit)));
    assert!(proposal.as_operator);
    assert!(
        matches!(proposal.command, Command::Nested(_)),
        "{proposal:?}"
    );
    h.reject_as(
        "ops",
        proposal,
        Rejection::invalid("command", "a wrapper command where no proposer puts one"),
    );
}
