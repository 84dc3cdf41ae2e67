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
