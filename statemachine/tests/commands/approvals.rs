//! Approvals: create, decide, self-approval, expiry.

use crate::harness::*;

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

fn consume(id: ApprovalId, operation: &str, params: &str) -> Command {
    Command::ConsumeApproval(ConsumeApproval {
        id,
        operation: operation.into(),
        params: params.into(),
    })
}

fn not_usable(id: ApprovalId, reason: &str) -> Rejection {
    Rejection::ApprovalNotUsable {
        id,
        reason: reason.into(),
    }
}

fn purge_approval(h: &mut Harness, params: &str, ttl_ms: u64) -> ApprovalId {
    approval_id(h.ok_as(
        "alice",
        Command::CreateApproval(CreateApproval {
            operation: "purge".into(),
            params: params.into(),
            terms: ApprovalTerms::Ttl(ttl_ms),
        }),
    ))
}

/// Dual control (docs/SPEC.md §9.5): an approved approval authorizes exactly the operation and
/// parameters it names (compared as JSON values), once; afterwards it reads as consumed.
#[test]
fn an_approved_approval_is_used_once_for_exactly_its_action() {
    let mut h = Harness::new();
    let id = purge_approval(&mut h, r#"{"kind":"bodies","older_than_ms":5}"#, 60_000);
    h.reject_as(
        "alice",
        consume(id, "purge", r#"{"kind":"bodies","older_than_ms":5}"#),
        not_usable(id, "it is pending, not approved"),
    );
    h.ok_as("bob", decide(id, true));
    // Only its requester may use it (not the approver, not a third principal).
    for other in ["bob", "carol"] {
        h.reject_as(
            other,
            consume(id, "purge", r#"{"kind":"bodies","older_than_ms":5}"#),
            not_usable(
                id,
                "it was requested by alice, and only its requester may use it",
            ),
        );
    }
    h.reject_as(
        "alice",
        consume(id, "put_config", r#"{"kind":"bodies","older_than_ms":5}"#),
        not_usable(id, "it approves 'purge', not 'put_config'"),
    );
    h.reject_as(
        "alice",
        consume(id, "purge", r#"{"kind":"bodies","older_than_ms":6}"#),
        not_usable(id, "it approves other parameters than this request's"),
    );
    // Member order and spacing do not matter.
    assert_eq!(
        h.ok_as(
            "alice",
            consume(id, "purge", r#"{ "older_than_ms": 5, "kind": "bodies" }"#)
        ),
        Outcome::Approval(id)
    );
    let a = h.sm.read().approval(id).unwrap().unwrap();
    assert_eq!(a.status, ApprovalStatus::Consumed);
    h.reject_as(
        "alice",
        consume(id, "purge", r#"{"kind":"bodies","older_than_ms":5}"#),
        not_usable(id, "it was already used"),
    );
    // A consumed approval cannot be decided again either.
    h.reject_as("bob", decide(id, false), Rejection::AlreadyDecided(id));
}

#[test]
fn a_rejected_expired_or_unknown_approval_authorizes_nothing() {
    let mut h = Harness::new();
    let rejected = purge_approval(&mut h, "{}", 60_000);
    h.ok_as("bob", decide(rejected, false));
    h.reject_as(
        "alice",
        consume(rejected, "purge", "{}"),
        not_usable(rejected, "it is rejected, not approved"),
    );
    let late = purge_approval(&mut h, "{}", 1_000);
    h.ok_as("bob", decide(late, true));
    h.advance(1_000);
    h.reject_as(
        "alice",
        consume(late, "purge", "{}"),
        not_usable(late, "it expired"),
    );
    h.reject_as(
        "alice",
        consume(ApprovalId(999_999), "purge", "{}"),
        Rejection::UnknownApproval(ApprovalId(999_999)),
    );
}

/// A keyed approval's requester and approver are the caller's say-so (docs/SPEC.md §14.10), so
/// even "approved" by "someone else" it authorizes no action.
#[test]
fn a_keyed_approval_never_authorizes_an_action() {
    let mut h = Harness::new();
    let id = approval_id(h.ok_as(
        "alice",
        Command::CreateApproval(CreateApproval {
            operation: "purge".into(),
            params: "{}".into(),
            terms: ApprovalTerms::Named(NamedApproval {
                key: "k-1".into(),
                requester: "alice".into(),
                requested_at: T0,
                expires_at: None,
            }),
        }),
    ));
    h.ok_as(
        "alice",
        Command::DecideApproval(DecideApproval {
            decision: Decision::ByKey(KeyedDecision {
                key: "k-1".into(),
                status: ApprovalStatus::Approved,
                approver: Some("bob".into()),
                decided_at: T0,
            }),
        }),
    );
    h.reject_as(
        "alice",
        consume(id, "purge", "{}"),
        not_usable(
            id,
            "it is a keyed record, not one requested and decided by principals",
        ),
    );
}
