//! The audit chain: RecordAudit, per-org hash chains, verification with anchors, sealed eras and
//! the rows data-changing commands append.

use crate::harness::*;

fn record_audit(action: &str, org: Option<&str>, detail: Option<&str>) -> Command {
    Command::RecordAudit(RecordAudit {
        action: action.into(),
        channel: None,
        org: org.map(Into::into),
        detail: detail.map(Into::into),
        author: AuditAuthor::Principal,
    })
}

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
            author: AuditAuthor::Principal,
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
