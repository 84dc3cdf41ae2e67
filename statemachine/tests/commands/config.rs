//! PutConfig: versions and history, and the rows a removed destination or handler leaves behind.

use crate::harness::*;

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
