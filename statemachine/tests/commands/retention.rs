//! State, reference data, retention purges and record expiry.

use crate::harness::*;

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
