//! WriteReferenceSnapshot with a text label: reference snapshots with the caller's text versions.

use crate::harness::*;

fn write_text(name: &str, version: &str, rows: &[(&str, &str)]) -> Command {
    Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: name.into(),
        version: ReferenceVersion::Label(version.into()),
        rows: rows
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    })
}

fn sets(h: &Harness) -> Vec<(String, Option<String>, u64, Vec<String>)> {
    h.sm.read()
        .reference_sets()
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                s.name,
                s.label,
                s.snapshot.version,
                s.snapshot.rows.into_keys().collect(),
            )
        })
        .collect()
}

#[test]
fn a_text_version_replaces_the_set_whole_and_is_kept_as_its_label() {
    // messagefoundry test_reference_snapshot_write_and_read.
    let mut h = Harness::new();
    assert_eq!(
        h.ok(write_text(
            "providers",
            "v1",
            &[("P1", r#"{"name":"Dr A"}"#), ("P2", r#"{"name":"Dr B"}"#)]
        )),
        Outcome::Count(2)
    );
    assert_eq!(
        sets(&h),
        vec![(
            "providers".into(),
            Some("v1".into()),
            1,
            vec!["P1".into(), "P2".into()]
        )]
    );
    h.advance(5);
    h.ok(write_text(
        "providers",
        "v2",
        &[("P1", r#"{"name":"Dr A2"}"#)],
    ));
    let snap = h.sm.read().reference("providers").unwrap().expect("set");
    assert_eq!(snap.rows.len(), 1);
    assert_eq!(snap.rows["P1"], r#"{"name":"Dr A2"}"#);
    assert_eq!((snap.version, snap.synced_at), (2, T0 + 5));
    assert_eq!(
        h.sm.read().reference_label("providers").unwrap().as_deref(),
        Some("v2")
    );
    // The same label written again is still a new write: the numeric version moves.
    h.ok(write_text("providers", "v2", &[]));
    assert_eq!(
        sets(&h),
        vec![("providers".into(), Some("v2".into()), 3, vec![])]
    );
}

#[test]
fn a_numeric_write_after_a_text_one_clears_the_label() {
    let mut h = Harness::new();
    h.ok(write_text("codes", "v1", &[("a", "1")]));
    h.ok(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
        name: "codes".into(),
        version: ReferenceVersion::Number(40),
        rows: BTreeMap::new(),
    }));
    assert_eq!(sets(&h), vec![("codes".into(), None, 40, vec![])]);
    // A text write continues from the numeric version.
    h.ok(write_text("codes", "v9", &[]));
    assert_eq!(
        sets(&h),
        vec![("codes".into(), Some("v9".into()), 41, vec![])]
    );
}

#[test]
fn bad_names_and_versions_are_rejected() {
    let mut h = Harness::new();
    h.reject(
        write_text("", "v1", &[]),
        invalid("name", "must not be empty"),
    );
    h.reject(
        write_text("codes", "", &[]),
        invalid("version", "must not be empty"),
    );
    assert_eq!(
        write_text("a", "b", &[]).name(),
        "write_reference_snapshot_text"
    );
}
