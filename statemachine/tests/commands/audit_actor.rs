//! RecordAudit naming its actor (an audit row on behalf of the engine's own user) and the audit reads by actor
//! and action prefix, newest first, through the actor index.

use crate::harness::*;
use raftlane_statemachine::model::audit::AuditRow;
use raftlane_statemachine::storage::store::Direction;

const MF: &str = "messagefoundry";

fn audit_as(action: &str, actor: Option<&str>, detail: &str) -> Command {
    Command::RecordAudit(RecordAudit {
        action: action.into(),
        channel: None,
        org: Some(MF.into()),
        detail: Some(detail.into()),
        author: AuditAuthor::Named(actor.map(Into::into)),
    })
}

fn by_actor(h: &Harness, actor: &str, prefix: &str, limit: usize) -> Vec<String> {
    h.sm.read()
        .audit_by_actor(MF, actor, prefix, limit)
        .unwrap()
        .into_iter()
        .map(|r| r.detail.unwrap_or_default())
        .collect()
}

#[test]
fn the_row_names_the_given_actor_and_hashes_like_any_other() {
    // messagefoundry test_audit_chain_verifies.
    let mut h = Harness::new();
    assert_eq!(
        h.ok_as("engine", audit_as("message_view", Some("alice"), "view 1")),
        Outcome::Audit {
            seq: 0,
            hash: hex::encode(h.audit(MF)[0].hash),
        }
    );
    h.ok_as("engine", audit_as("export", Some("bob"), "export 1"));
    h.ok_as("engine", audit_as("system.tick", None, "no actor"));
    let rows = h.audit(MF);
    let actors: Vec<Option<&str>> = rows.iter().map(|r| r.actor.as_deref()).collect();
    assert_eq!(actors, vec![Some("alice"), Some("bob"), None]);
    assert_eq!(rows[1].hash, row_hash(&rows[0].hash, &rows[1]));
    assert_eq!(rows[2].hash, row_hash(&rows[1].hash, &rows[2]));
    let v = h.sm.read().audit_verify(MF, None).unwrap();
    assert!(v.ok && v.count == 3, "{v:?}");
    // Without an org the row goes to the default chain, like RecordAudit.
    h.ok(Command::RecordAudit(RecordAudit {
        action: "a".into(),
        channel: Some("IB".into()),
        org: None,
        detail: None,
        author: AuditAuthor::Named(Some("carol".into())),
    }));
    let row = h.audit(DEFAULT_ORG).pop().expect("row");
    assert_eq!(
        (row.actor.as_deref(), row.channel_id.as_deref()),
        (Some("carol"), Some("IB"))
    );
}

#[test]
fn bad_fields_are_rejected() {
    let mut h = Harness::new();
    h.reject(
        audit_as("x", Some(""), "d"),
        invalid("actor", "must not be empty"),
    );
    h.reject(
        audit_as("", Some("alice"), "d"),
        invalid("action", "must not be empty"),
    );
    assert_eq!(audit_as("x", None, "d").name(), "record_audit_as");
}

#[test]
fn rows_by_actor_and_action_prefix_come_newest_first_up_to_the_limit() {
    // messagefoundry test_security_events_for_user_scopes_to_actor.
    let mut h = Harness::new();
    for (action, actor, detail) in [
        ("auth.login", "alice", "a1"),
        ("auth.login", "bob", "b1"),
        ("message_view", "alice", "a2"),
        ("auth.password_change", "alice", "a3"),
        ("auth.logout", "alice", "a4"),
    ] {
        h.ok(audit_as(action, Some(actor), detail));
    }
    // Another org's rows by the same actor are not the engine's.
    h.ok(Command::RecordAudit(RecordAudit {
        action: "auth.login".into(),
        channel: None,
        org: Some("other".into()),
        detail: Some("elsewhere".into()),
        author: AuditAuthor::Named(Some("alice".into())),
    }));
    assert_eq!(by_actor(&h, "alice", "auth.", 100), vec!["a4", "a3", "a1"]);
    assert_eq!(by_actor(&h, "alice", "auth.", 2), vec!["a4", "a3"]);
    assert_eq!(by_actor(&h, "alice", "", 100), vec!["a4", "a3", "a2", "a1"]);
    assert_eq!(by_actor(&h, "bob", "auth.", 100), vec!["b1"]);
    assert_eq!(by_actor(&h, "al", "", 100), Vec::<String>::new());
    assert_eq!(by_actor(&h, "alice", "auth.", 0), Vec::<String>::new());
    let newest: Vec<String> =
        h.sm.read()
            .audit_newest(MF, 2)
            .unwrap()
            .into_iter()
            .map(|r| r.detail.unwrap_or_default())
            .collect();
    assert_eq!(newest, vec!["a4", "a3"]);
}

#[test]
fn rows_appended_by_the_envelope_actor_are_indexed_too() {
    let mut h = Harness::new();
    h.ok_as(
        "operator-1",
        Command::RecordAudit(RecordAudit {
            action: "note".into(),
            channel: None,
            org: None,
            detail: Some("by the principal".into()),
            author: AuditAuthor::Principal,
        }),
    );
    let rows: Vec<AuditRow> =
        h.sm.read()
            .audit_by_actor(DEFAULT_ORG, "operator-1", "", 10)
            .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].detail.as_deref(), Some("by the principal"));
}

#[test]
fn a_chain_older_than_the_index_is_still_found_by_actor() {
    let mut h = Harness::new();
    h.ok(audit_as("auth.login", Some("alice"), "old-1"));
    h.ok(audit_as("auth.login", Some("bob"), "old-2"));
    h.ok(audit_as("auth.logout", Some("alice"), "old-3"));
    // Forget the index, as a chain appended by a build without it would be.
    let mut batch = WriteBatch::default();
    for table in [Table::AuditActors, Table::AuditIndexFrom] {
        let keys: Vec<Vec<u8>> =
            h.sm.store()
                .scan(table, &[], None, Direction::Forward)
                .unwrap()
                .map(|kv| kv.unwrap().0)
                .collect();
        assert!(!keys.is_empty(), "{table:?} was written");
        for key in keys {
            batch.delete(table, key);
        }
    }
    h.sm.store_mut().write(batch).expect("forget the index");
    assert_eq!(by_actor(&h, "alice", "auth.", 10), vec!["old-3", "old-1"]);
    // New rows are indexed from here on; old ones are still found behind them.
    h.ok(audit_as("auth.login", Some("alice"), "new-1"));
    assert_eq!(
        by_actor(&h, "alice", "auth.", 10),
        vec!["new-1", "old-3", "old-1"]
    );
    assert_eq!(by_actor(&h, "alice", "auth.", 2), vec!["new-1", "old-3"]);
    assert_eq!(by_actor(&h, "bob", "", 10), vec!["old-2"]);
}

/// docs/SPEC.md §9.8: a row whose actor the caller names records the envelope's principal
/// beside it (never instead of it), hashed with the row, so the chain still verifies and a
/// changed principal would not; a row whose actor is the principal records none.
#[test]
fn the_principal_that_wrote_a_row_is_recorded_beside_the_named_actor() {
    let mut h = Harness::new();
    h.ok_as("engine", audit_as("message_view", Some("alice"), "view 1"));
    h.ok_as("engine", audit_as("system.tick", None, "no actor"));
    h.ok_as("engine", audit_as("self", Some("engine"), "its own"));
    let rows = h.audit(MF);
    let written: Vec<(Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|r| (r.actor.as_deref(), r.principal.as_deref()))
        .collect();
    assert_eq!(
        written,
        vec![
            (Some("alice"), Some("engine")),
            (None, Some("engine")),
            (Some("engine"), None)
        ]
    );
    assert_eq!(rows[0].hash, row_hash(&[0u8; 32], &rows[0]));
    let mut forged = rows[0].clone();
    forged.principal = Some("alice".into());
    assert_ne!(row_hash(&[0u8; 32], &forged), rows[0].hash);
    let mut unrecorded = rows[0].clone();
    unrecorded.principal = None;
    assert_ne!(row_hash(&[0u8; 32], &unrecorded), rows[0].hash);
    let v = h.sm.read().audit_verify(MF, None).unwrap();
    assert!(v.ok && v.count == 3, "{v:?}");
    // Reads by actor carry the principal too.
    let found = h.sm.read().audit_by_actor(MF, "alice", "", 10).unwrap();
    assert_eq!(found[0].principal.as_deref(), Some("engine"));
}
