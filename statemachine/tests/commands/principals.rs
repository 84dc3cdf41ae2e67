//! Principals: PutPrincipal and RevokePrincipal, token hashes and token ownership.

use crate::harness::*;
use raftlane_statemachine::wire::command::SetPrincipalOrgs;

#[test]
fn put_principal_stores_the_hash_and_is_found_by_token() {
    let mut h = Harness::new();
    let out = h.ok(put_principal(
        "alice",
        &token_hash('a'),
        Role::Operator,
        Some(&["c1"][..]),
    ));
    assert_eq!(out, Outcome::Done);
    let p =
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap()
            .unwrap();
    assert_eq!(p.name, "alice");
    assert_eq!(p.token_hash, token_hash('a'));
    assert_eq!(p.role, Role::Operator);
    assert_eq!(p.channels, Some(vec!["c1".to_string()]));
    assert_eq!(p.created_at, T0);
    assert!(p.may_see_channel("c1"));
    assert!(!p.may_see_channel("c2"));
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('b'))
            .unwrap(),
        None
    );
}

#[test]
fn put_principal_validates_the_token_hash_and_names() {
    let mut h = Harness::new();
    let bad_hash = invalid("token_hash", "must be 64 lowercase hex digits (SHA-256)");
    h.reject(
        put_principal("alice", &token_hash('A'), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &token_hash('g'), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &"a".repeat(63), Role::Admin, None),
        bad_hash.clone(),
    );
    h.reject(
        put_principal("alice", &"a".repeat(65), Role::Admin, None),
        bad_hash,
    );
    h.reject(
        put_principal("", &token_hash('a'), Role::Admin, None),
        invalid("name", "must not be empty"),
    );
    h.reject(
        put_principal("alice", &token_hash('a'), Role::Admin, Some(&[""][..])),
        invalid("channels", "must not be empty"),
    );
}

#[test]
fn put_principal_reassigns_a_token_and_refuses_a_token_held_by_another() {
    let mut h = Harness::new();
    h.ok(put_principal("alice", &token_hash('a'), Role::Admin, None));
    // A new token for alice frees the old one.
    h.ok(put_principal("alice", &token_hash('b'), Role::Viewer, None));
    let r = h.sm.read();
    assert_eq!(r.principal_by_token_hash(&token_hash('a')).unwrap(), None);
    let p = r
        .principal_by_token_hash(&token_hash('b'))
        .unwrap()
        .unwrap();
    assert_eq!((p.name.as_str(), p.role), ("alice", Role::Viewer));
    drop(r);
    h.reject(
        put_principal("bob", &token_hash('b'), Role::Admin, None),
        invalid("token_hash", "already assigned to another principal"),
    );
    h.ok(put_principal("bob", &token_hash('a'), Role::Worker, None));
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap()
            .unwrap()
            .name,
        "bob"
    );
    assert_eq!(h.sm.read().principals().unwrap().len(), 2);
}

#[test]
fn revoke_principal_removes_the_principal_and_its_token() {
    let mut h = Harness::new();
    h.ok(put_principal("alice", &token_hash('a'), Role::Admin, None));
    h.ok(put_principal("bob", &token_hash('b'), Role::Admin, None));
    assert_eq!(
        h.ok(Command::RevokePrincipal(RevokePrincipal {
            name: "alice".into()
        })),
        Outcome::Done
    );
    assert_eq!(
        h.sm.read()
            .principal_by_token_hash(&token_hash('a'))
            .unwrap(),
        None
    );
    let names: Vec<String> =
        h.sm.read()
            .principals()
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
    assert_eq!(names, vec!["bob".to_string()]);
    h.reject(
        Command::RevokePrincipal(RevokePrincipal {
            name: "alice".into(),
        }),
        Rejection::UnknownPrincipal("alice".into()),
    );
    // The freed token can be given to someone else.
    h.ok(put_principal("carol", &token_hash('a'), Role::Viewer, None));
}

/// docs/SPEC.md §9.1: a principal's name has one normal form, whatever carries it (a command
/// forwarded or replayed from the log is judged as the API judges a request).
#[test]
fn principal_names_have_one_normal_form_in_apply() {
    let mut h = Harness::new();
    h.ok(put_principal("alice", &token_hash('a'), Role::Worker, None));
    for (i, name) in [
        " admin",
        "admin\u{200b}",
        "аdmin", // Cyrillic а
        "ADMIN",
        "ｂｏｂ", // fullwidth: not NFKC
        "raftlane:timer",
        "аlice", // confusable with the existing alice
        "ALICE",
        "a\u{202e}b",
    ]
    .into_iter()
    .enumerate()
    {
        let hash = token_hash(char::from(b'b' + u8::try_from(i).expect("small")));
        match h.run(put_principal(name, &hash, Role::Admin, None)) {
            Err(Rejection::Invalid { field, .. }) => assert_eq!(field, "name", "{name:?}"),
            other => panic!("{name:?} was accepted: {other:?}"),
        }
        match h.run(Command::SetPrincipalOrgs(SetPrincipalOrgs {
            name: name.into(),
            orgs: None,
        })) {
            Err(Rejection::Invalid { field, .. }) => assert_eq!(field, "name", "{name:?}"),
            other => panic!("{name:?} was accepted for an org scope: {other:?}"),
        }
    }
    // The same name again is a rotation, not a look-alike of itself.
    h.ok(put_principal("alice", &token_hash('e'), Role::Worker, None));
    // An engine user's name follows the rule among usernames; `admin` is messagefoundry's own
    // bootstrap user and stays allowed there.
    h.ok(create_user("u1", "admin"));
    h.ok(create_user("u2", "carol"));
    for (i, username) in ["саrol", "Carol", " dave", "dave\u{2060}", "raftlane:x"]
        .into_iter()
        .enumerate()
    {
        match h.run(create_user(&format!("x{i}"), username)) {
            Err(Rejection::Invalid { field, .. }) => assert_eq!(field, "username", "{username:?}"),
            other => panic!("{username:?} was accepted: {other:?}"),
        }
    }
}
