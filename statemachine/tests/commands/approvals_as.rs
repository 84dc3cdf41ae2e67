//! Named approvals (CreateApproval with named terms, DecideApproval by key): approvals the caller names, dates and decides
//! (messagefoundry's pending approvals), and the listing of open ones.

use crate::harness::*;

fn create(key: &str, requested_at: u64, expires_at: Option<u64>) -> Command {
    Command::CreateApproval(CreateApproval {
        operation: "replay_dead".into(),
        params: r#"{"destination":"OB1"}"#.into(),
        terms: ApprovalTerms::Named(NamedApproval {
            key: key.into(),
            requester: "alice".into(),
            requested_at,
            expires_at,
        }),
    })
}

fn decide(key: &str, status: ApprovalStatus, approver: Option<&str>) -> Command {
    Command::DecideApproval(DecideApproval {
        decision: Decision::ByKey(KeyedDecision {
            key: key.into(),
            status,
            approver: approver.map(Into::into),
            decided_at: 777,
        }),
    })
}

fn pending_keys(h: &Harness, t: u64) -> Vec<String> {
    h.sm.read()
        .pending_approvals(t, 100)
        .unwrap()
        .into_iter()
        .map(|a| a.key.unwrap_or_default())
        .collect()
}

#[test]
fn the_callers_key_requester_times_and_decision_are_stored_as_given() {
    let mut h = Harness::new();
    let id = ApprovalId(h.next_index());
    assert_eq!(
        h.ok_as("engine", create("ap-1", 500, Some(T0 + 1_000))),
        Outcome::Approval(id)
    );
    let a =
        h.sm.read()
            .approval_by_key("ap-1")
            .unwrap()
            .expect("approval");
    assert_eq!(a.key.as_deref(), Some("ap-1"));
    assert_eq!(a.approval.id, id);
    assert_eq!(
        (a.approval.requester.as_str(), a.approval.requested_at),
        ("alice", 500)
    );
    assert_eq!(a.approval.expires_at, T0 + 1_000);
    assert_eq!(a.approval.status, ApprovalStatus::Pending);
    // The engine decides for its own user: no self-approval check, the caller's time.
    assert_eq!(
        h.ok_as(
            "engine",
            decide("ap-1", ApprovalStatus::Approved, Some("alice"))
        ),
        Outcome::Approval(id)
    );
    let a =
        h.sm.read()
            .approval_by_key("ap-1")
            .unwrap()
            .expect("approval");
    assert_eq!(a.approval.status, ApprovalStatus::Approved);
    assert_eq!(a.approval.approver.as_deref(), Some("alice"));
    assert_eq!(a.approval.decided_at, Some(777));
    // Only the call that decided succeeds.
    h.reject(
        decide("ap-1", ApprovalStatus::Rejected, Some("bob")),
        Rejection::AlreadyDecided(id),
    );
    let actions = h.audit_actions(DEFAULT_ORG);
    assert_eq!(
        actions[actions.len() - 2..],
        [
            "approval.request".to_string(),
            "approval.decide".to_string()
        ]
    );
}

#[test]
fn an_expired_outcome_and_no_expiry_at_all_are_the_callers_to_give() {
    let mut h = Harness::new();
    h.ok(create("forever", 1, None));
    let a = h.sm.read().approval_by_key("forever").unwrap().expect("a");
    assert_eq!(a.approval.expires_at, u64::MAX);
    // Far in the future it is still pending, and ExpireRecords never touches it.
    h.advance(10 * 86_400_000);
    h.ok(Command::ExpireRecords);
    assert_eq!(pending_keys(&h, h.clock()), vec!["forever"]);
    assert_eq!(
        h.ok(decide("forever", ApprovalStatus::Expired, None)),
        Outcome::Approval(a.approval.id)
    );
    let a = h.sm.read().approval_by_key("forever").unwrap().expect("a");
    assert_eq!(
        (a.approval.status, a.approval.approver),
        (ApprovalStatus::Expired, None)
    );
    assert_eq!(pending_keys(&h, h.clock()), Vec::<String>::new());
}

#[test]
fn open_approvals_are_listed_newest_request_first_without_the_expired_or_decided() {
    let mut h = Harness::new();
    h.ok(create("old", 100, None));
    h.ok(create("new", 300, None));
    h.ok(create("mid", 200, Some(T0 + 50)));
    h.ok(create("decided", 400, None));
    h.ok(decide("decided", ApprovalStatus::Rejected, Some("bob")));
    // A plain approval (no key) is listed too.
    h.ok(Command::CreateApproval(CreateApproval {
        operation: "purge".into(),
        params: "{}".into(),
        terms: ApprovalTerms::Ttl(1_000),
    }));
    assert_eq!(pending_keys(&h, T0), vec!["", "new", "mid", "old"]);
    assert_eq!(pending_keys(&h, T0 + 50), vec!["", "new", "old"]);
    assert_eq!(
        h.sm.read().pending_approvals(T0, 2).unwrap().len(),
        2,
        "the limit"
    );
    // ExpireRecords marks a pending approval past its expiry `expired` (kept), then deletes
    // it with its key on a later pass, which frees the key.
    h.advance(100);
    h.ok(Command::ExpireRecords);
    let mid = h.sm.read().approval_by_key("mid").unwrap().expect("kept");
    assert_eq!(mid.approval.status, ApprovalStatus::Expired);
    h.reject(
        decide("mid", ApprovalStatus::Approved, None),
        Rejection::AlreadyDecided(mid.approval.id),
    );
    h.ok(Command::ExpireRecords);
    assert_eq!(h.sm.read().approval_by_key("mid").unwrap(), None);
    h.ok(create("mid", 500, None));
}

#[test]
fn unknown_keys_duplicates_and_bad_fields_are_rejected() {
    let mut h = Harness::new();
    h.reject(
        decide("nope", ApprovalStatus::Approved, None),
        Rejection::UnknownApprovalKey("nope".into()),
    );
    h.ok(create("ap-1", 1, None));
    h.reject(
        create("ap-1", 2, None),
        invalid("key", "an approval with this key exists"),
    );
    h.reject(create("", 2, None), invalid("key", "must not be empty"));
    h.reject(
        decide("ap-1", ApprovalStatus::Pending, None),
        invalid("status", "must be approved, rejected or expired"),
    );
    h.reject(
        decide("ap-1", ApprovalStatus::Approved, Some("")),
        invalid("approver", "must not be empty"),
    );
    assert_eq!(create("k", 1, None).name(), "create_approval_as");
    assert_eq!(
        decide("k", ApprovalStatus::Approved, None).name(),
        "decide_approval_as"
    );
    assert_eq!(
        Rejection::UnknownApprovalKey("k".into()).code(),
        "not_found"
    );
}
