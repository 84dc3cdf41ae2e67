//! The engine's users and roles: CreateUser, UpdateUser (every change), DeleteUser, UpsertRole,
//! SetUserRoles, SetAdGroupMap and their reads.

use crate::harness::*;

#[test]
fn create_user_stores_every_field() {
    let mut h = Harness::new();
    let out = h.ok(Command::CreateUser(CreateUser {
        user_id: "u1".into(),
        username: "alice".into(),
        auth_provider: AuthProvider::Ad,
        display_name: Some("Alice".into()),
        email: Some("alice@example.org".into()),
        password_hash: Some("h1".into()),
        must_change_password: true,
    }));
    assert_eq!(out, Outcome::Done);
    let t = h.clock();
    assert_eq!(
        user_of(&h, "u1"),
        User {
            id: "u1".into(),
            username: "alice".into(),
            auth_provider: AuthProvider::Ad,
            display_name: Some("Alice".into()),
            email: Some("alice@example.org".into()),
            disabled: false,
            created_at: t,
            updated_at: t,
            last_login_at: None,
            password_hash: Some("h1".into()),
            password_changed_at: Some(t),
            must_change_password: true,
            failed_attempts: 0,
            locked_until: None,
            channel_scope: None,
            totp_secret: None,
            totp_enabled: false,
            totp_enrolled_at: None,
            recovery_code_hashes: Vec::new(),
            last_totp_step: None,
        }
    );
    // Without a password hash there is no password_changed_at.
    h.ok(Command::CreateUser(CreateUser {
        user_id: "u2".into(),
        username: "bob".into(),
        auth_provider: AuthProvider::Local,
        display_name: None,
        email: None,
        password_hash: None,
        must_change_password: false,
    }));
    let bob = user_of(&h, "u2");
    assert_eq!(bob.password_hash, None);
    assert_eq!(bob.password_changed_at, None);
    let r = h.sm.read();
    assert_eq!(r.user_by_username("bob").unwrap(), Some(bob));
    assert_eq!(r.user_by_username("carol").unwrap(), None);
    assert_eq!(r.user("u3").unwrap(), None);
    assert_eq!(r.user_count().unwrap(), 2);
    assert_eq!(AuthProvider::parse("ad"), Some(AuthProvider::Ad));
    assert_eq!(AuthProvider::Local.as_str(), "local");
}

#[test]
fn users_are_listed_by_username() {
    let mut h = Harness::new();
    h.ok(create_user("id-1", "mallory"));
    h.ok(create_user("id-2", "alice"));
    h.ok(create_user("id-3", "bob"));
    h.ok(create_user("id-4", "al"));
    let names: Vec<String> =
        h.sm.read()
            .users()
            .unwrap()
            .into_iter()
            .map(|u| u.username)
            .collect();
    assert_eq!(names, strings(&["al", "alice", "bob", "mallory"]));
    assert_eq!(h.sm.read().user_count().unwrap(), 4);
}

#[test]
fn create_user_rejects_a_taken_id_or_username_and_empty_names() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    let taken = |field: &str, value: &str| Rejection::AlreadyExists {
        field: field.into(),
        value: value.into(),
    };
    h.reject(create_user("u1", "someone"), taken("user_id", "u1"));
    h.reject(create_user("u2", "alice"), taken("username", "alice"));
    assert_eq!(taken("username", "alice").code(), "already_exists");
    h.reject(
        create_user("", "carol"),
        invalid("user_id", "must not be empty"),
    );
    h.reject(
        create_user("u3", ""),
        invalid("username", "must not be empty"),
    );
    // The original is untouched, and a fresh id and name are fine.
    assert_eq!(user_of(&h, "u1").username, "alice");
    h.ok(create_user("u2", "bob"));
    assert_eq!(h.sm.read().user_count().unwrap(), 2);
}

#[test]
fn password_change_resets_the_lockout() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    let created = h.clock();
    h.advance(1_000);
    let locked_until = h.now + 60_000;
    assert_eq!(
        h.ok(update_user(
            "u1",
            UserChange::LoginFailure {
                failed_attempts: 5,
                locked_until: Some(locked_until),
            }
        )),
        Outcome::Count(1)
    );
    let u = user_of(&h, "u1");
    assert_eq!((u.failed_attempts, u.locked_until), (5, Some(locked_until)));
    assert_eq!(u.updated_at, h.clock());
    assert_eq!(u.password_changed_at, Some(created));
    h.advance(1_000);
    assert_eq!(
        h.ok(update_user(
            "u1",
            UserChange::Password {
                password_hash: "h2".into(),
                must_change_password: true,
            }
        )),
        Outcome::Count(1)
    );
    let t = h.clock();
    let u = user_of(&h, "u1");
    assert_eq!(u.password_hash.as_deref(), Some("h2"));
    assert_eq!(u.password_changed_at, Some(t));
    assert!(u.must_change_password);
    assert_eq!((u.failed_attempts, u.locked_until), (0, None));
    assert_eq!(u.updated_at, t);
    assert_eq!(u.created_at, created);
}

#[test]
fn login_success_records_the_login_and_clears_failures() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(update_user(
        "u1",
        UserChange::LoginFailure {
            failed_attempts: 2,
            locked_until: None,
        },
    ));
    h.advance(500);
    assert_eq!(
        h.ok(update_user("u1", UserChange::LoginSuccess)),
        Outcome::Count(1)
    );
    let u = user_of(&h, "u1");
    assert_eq!(u.last_login_at, Some(h.clock()));
    assert_eq!(u.updated_at, h.clock());
    assert_eq!((u.failed_attempts, u.locked_until), (0, None));
}

#[test]
fn profile_disabled_and_channel_scope_changes() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(10);
    h.ok(update_user(
        "u1",
        UserChange::Profile {
            display_name: Some("Alice A.".into()),
            email: Some("a@example.org".into()),
        },
    ));
    let u = user_of(&h, "u1");
    assert_eq!(u.display_name.as_deref(), Some("Alice A."));
    assert_eq!(u.email.as_deref(), Some("a@example.org"));
    assert_eq!(u.updated_at, h.clock());
    // Both profile fields are replaced: None clears.
    h.advance(10);
    h.ok(update_user(
        "u1",
        UserChange::Profile {
            display_name: None,
            email: Some("b@example.org".into()),
        },
    ));
    let u = user_of(&h, "u1");
    assert_eq!(u.display_name, None);
    assert_eq!(u.email.as_deref(), Some("b@example.org"));

    h.advance(10);
    assert_eq!(
        h.ok(update_user("u1", UserChange::Disabled(true))),
        Outcome::Count(1)
    );
    let u = user_of(&h, "u1");
    assert!(u.disabled);
    assert_eq!(u.updated_at, h.clock());
    h.ok(update_user("u1", UserChange::Disabled(false)));
    assert!(!user_of(&h, "u1").disabled);

    h.advance(10);
    h.ok(update_user(
        "u1",
        UserChange::ChannelScope(Some(r#"["c1","c2"]"#.into())),
    ));
    let u = user_of(&h, "u1");
    assert_eq!(u.channel_scope.as_deref(), Some(r#"["c1","c2"]"#));
    assert_eq!(u.updated_at, h.clock());
    h.ok(update_user("u1", UserChange::ChannelScope(None)));
    assert_eq!(user_of(&h, "u1").channel_scope, None);
}

#[test]
fn totp_enrolment_and_recovery_codes() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(10);
    assert_eq!(
        h.ok(update_user(
            "u1",
            UserChange::TotpSecret(Some("sealed".into()))
        )),
        Outcome::Count(1)
    );
    let u = user_of(&h, "u1");
    assert_eq!(u.totp_secret.as_deref(), Some("sealed"));
    // Staging a secret does not enable TOTP.
    assert!(!u.totp_enabled);
    assert_eq!(u.updated_at, h.clock());

    h.advance(10);
    h.ok(update_user(
        "u1",
        UserChange::EnableTotp {
            recovery_code_hashes: strings(&["r1", "r2", "r3"]),
        },
    ));
    let enabled_at = h.clock();
    let u = user_of(&h, "u1");
    assert!(u.totp_enabled);
    assert_eq!(u.totp_enrolled_at, Some(enabled_at));
    assert_eq!(u.recovery_code_hashes, strings(&["r1", "r2", "r3"]));

    // A recovery code is single-use: consumed once, then gone.
    h.advance(10);
    let consume = |code: &str| {
        update_user(
            "u1",
            UserChange::ConsumeRecoveryCode {
                code_hash: code.into(),
            },
        )
    };
    assert_eq!(h.ok(consume("r2")), Outcome::Count(1));
    let u = user_of(&h, "u1");
    assert_eq!(u.recovery_code_hashes, strings(&["r1", "r3"]));
    assert_eq!(u.updated_at, h.clock());
    h.advance(10);
    // Nothing consumed changes nothing, not even updated_at.
    h.no_change(consume("r2"), Outcome::Count(0));
    h.no_change(consume("unknown"), Outcome::Count(0));
    assert_eq!(user_of(&h, "u1").updated_at, h.clock() - 10);

    h.advance(10);
    h.ok(update_user("u1", UserChange::DisableTotp));
    let u = user_of(&h, "u1");
    assert_eq!(u.totp_secret, None);
    assert!(!u.totp_enabled);
    assert_eq!(u.totp_enrolled_at, None);
    assert!(u.recovery_code_hashes.is_empty());
    assert_eq!(u.updated_at, h.clock());
    h.no_change(consume("r1"), Outcome::Count(0));
}

#[test]
fn a_totp_step_is_consumed_once_and_never_backwards() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    let created = h.clock();
    let step = |n: u64| update_user("u1", UserChange::ConsumeTotpStep { step: n });
    h.advance(10);
    assert_eq!(h.ok(step(100)), Outcome::Count(1));
    let u = user_of(&h, "u1");
    assert_eq!(u.last_totp_step, Some(100));
    // Consuming a step does not touch updated_at.
    assert_eq!(u.updated_at, created);
    // A replay inside the window, or an older step, is refused.
    h.no_change(step(100), Outcome::Count(0));
    h.no_change(step(99), Outcome::Count(0));
    assert_eq!(h.ok(step(101)), Outcome::Count(1));
    assert_eq!(user_of(&h, "u1").last_totp_step, Some(101));
    // Step 0 is a step like any other on a fresh user.
    h.ok(create_user("u2", "bob"));
    assert_eq!(
        h.ok(update_user("u2", UserChange::ConsumeTotpStep { step: 0 })),
        Outcome::Count(1)
    );
    h.no_change(
        update_user("u2", UserChange::ConsumeTotpStep { step: 0 }),
        Outcome::Count(0),
    );
}

#[test]
fn updating_an_unknown_user_changes_nothing() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    for change in [
        UserChange::Password {
            password_hash: "h".into(),
            must_change_password: false,
        },
        UserChange::Disabled(true),
        UserChange::Profile {
            display_name: None,
            email: None,
        },
        UserChange::TotpSecret(Some("s".into())),
        UserChange::EnableTotp {
            recovery_code_hashes: strings(&["r"]),
        },
        UserChange::DisableTotp,
        UserChange::ConsumeRecoveryCode {
            code_hash: "r".into(),
        },
        UserChange::ConsumeTotpStep { step: 1 },
        UserChange::LoginSuccess,
        UserChange::LoginFailure {
            failed_attempts: 1,
            locked_until: None,
        },
        UserChange::ChannelScope(None),
    ] {
        h.no_change(update_user("nobody", change), Outcome::Count(0));
    }
}

#[test]
fn delete_user_cascades_to_roles_and_sessions() {
    let mut h = Harness::new();
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    h.ok(set_user_roles("u1", &["admin"], None));
    h.ok(set_user_roles("u2", &["admin"], None));
    let far = h.now + 3_600_000;
    h.ok(create_session(&token_hash('a'), "u1", far));
    h.ok(create_session(&token_hash('b'), "u1", h.now + 10));
    h.ok(create_session(&token_hash('c'), "u2", far));

    assert_eq!(h.ok(delete_user("u1")), Outcome::Count(1));
    let r = h.sm.read();
    assert_eq!(r.user("u1").unwrap(), None);
    assert_eq!(r.user_by_username("alice").unwrap(), None);
    assert!(r.user_role_ids("u1").unwrap().is_empty());
    assert_eq!(r.session(&token_hash('a')).unwrap(), None);
    assert_eq!(r.session(&token_hash('b')).unwrap(), None);
    assert!(r.active_sessions("u1", h.now).unwrap().is_empty());
    // The other user keeps everything.
    assert_eq!(r.user_role_ids("u2").unwrap(), strings(&["admin"]));
    assert!(r.session(&token_hash('c')).unwrap().is_some());
    assert_eq!(r.user_count().unwrap(), 1);
    drop(r);
    // The expiry index went with the sessions: a purge past their expiry finds nothing of u1.
    h.advance(4_000_000);
    assert_eq!(
        h.ok(Command::PurgeExpiredSessions(PurgeExpiredSessions)),
        Outcome::Count(1)
    );
    // Deleting again answers 0; the id and the username can be used again.
    h.no_change(delete_user("u1"), Outcome::Count(0));
    h.ok(create_user("u1", "alice"));
    assert!(h.sm.read().user_role_ids("u1").unwrap().is_empty());
    assert!(h.sm.read().active_sessions("u1", h.now).unwrap().is_empty());
}

#[test]
fn roles_are_upserted_and_listed_by_id() {
    let mut h = Harness::new();
    assert_eq!(h.ok(upsert_role("viewer", "Viewer")), Outcome::Done);
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(Command::UpsertRole(UpsertRole {
        role_id: "operator".into(),
        display_name: "Operator".into(),
        description: Some("runs things".into()),
        builtin: false,
    }));
    let ids: Vec<String> =
        h.sm.read()
            .roles()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
    assert_eq!(ids, strings(&["admin", "operator", "viewer"]));
    let op = h.sm.read().role("operator").unwrap().unwrap();
    assert_eq!(op.description.as_deref(), Some("runs things"));
    assert!(!op.builtin);
    // An upsert replaces every field.
    h.ok(upsert_role("operator", "Ops"));
    let op = h.sm.read().role("operator").unwrap().unwrap();
    assert_eq!(
        (op.display_name.as_str(), op.description, op.builtin),
        ("Ops", None, true)
    );
    assert_eq!(h.sm.read().roles().unwrap().len(), 3);
    h.reject(
        upsert_role("", "Nameless"),
        invalid("role_id", "must not be empty"),
    );
}

#[test]
fn set_user_roles_replaces_the_assignments() {
    let mut h = Harness::new();
    for role in ["admin", "operator", "viewer"] {
        h.ok(upsert_role(role, role));
    }
    h.ok(create_user("u1", "alice"));
    assert_eq!(
        h.ok(set_user_roles(
            "u1",
            &["viewer", "admin", "viewer"],
            Some("root")
        )),
        Outcome::Count(2)
    );
    let t1 = h.clock();
    let r = h.sm.read();
    assert_eq!(
        r.user_role_ids("u1").unwrap(),
        strings(&["admin", "viewer"])
    );
    let assigned = r.user_role_assignments("u1").unwrap();
    assert_eq!(assigned.len(), 2);
    assert!(assigned
        .iter()
        .all(|a| a.assigned_at == t1 && a.assigned_by.as_deref() == Some("root")));
    drop(r);
    h.advance(100);
    h.ok(set_user_roles("u1", &["operator"], None));
    let r = h.sm.read();
    assert_eq!(r.user_role_ids("u1").unwrap(), strings(&["operator"]));
    let a = &r.user_role_assignments("u1").unwrap()[0];
    assert_eq!((a.assigned_at, a.assigned_by.clone()), (t1 + 100, None));
    drop(r);
    // An empty list removes every role.
    assert_eq!(h.ok(set_user_roles("u1", &[], None)), Outcome::Count(0));
    assert!(h.sm.read().user_role_ids("u1").unwrap().is_empty());
    assert!(h.sm.read().user_role_ids("nobody").unwrap().is_empty());
}

#[test]
fn set_user_roles_needs_a_known_user_and_known_roles() {
    let mut h = Harness::new();
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(create_user("u1", "alice"));
    h.ok(set_user_roles("u1", &["admin"], None));
    h.reject(
        set_user_roles("nobody", &["admin"], None),
        Rejection::UnknownUser("nobody".into()),
    );
    assert_eq!(Rejection::UnknownUser("x".into()).code(), "not_found");
    // One unknown role rejects the whole command: the old assignments stay.
    h.reject(
        set_user_roles("u1", &["admin", "ghost"], None),
        Rejection::UnknownRole("ghost".into()),
    );
    assert_eq!(Rejection::UnknownRole("x".into()).code(), "not_found");
    assert_eq!(
        h.sm.read().user_role_ids("u1").unwrap(),
        strings(&["admin"])
    );
}

#[test]
fn ad_group_maps_are_normalised_and_replaced_whole() {
    let mut h = Harness::new();
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(upsert_role("viewer", "Viewer"));
    let out = h.ok(set_ad_map(
        AdGroupMap::Roles,
        &[
            ("  Domain Admins ", "admin"),
            ("domain admins", "admin"),
            ("DOMAIN ADMINS", "viewer"),
            ("   ", "admin"),
            ("", "viewer"),
            ("Readers", "viewer"),
        ],
    ));
    assert_eq!(out, Outcome::Count(3));
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
            .collect()
    };
    let r = h.sm.read();
    assert_eq!(
        r.ad_group_map(AdGroupMap::Roles).unwrap(),
        pairs(&[
            ("domain admins", "admin"),
            ("domain admins", "viewer"),
            ("readers", "viewer"),
        ])
    );
    // Lookups normalise the groups they are given the same way.
    assert_eq!(
        r.roles_for_ad_groups(&strings(&[" Domain Admins", "unknown", ""]))
            .unwrap(),
        strings(&["admin", "viewer"])
    );
    assert_eq!(
        r.roles_for_ad_groups(&strings(&["READERS"])).unwrap(),
        strings(&["viewer"])
    );
    assert!(r.roles_for_ad_groups(&[]).unwrap().is_empty());
    assert!(r.ad_group_map(AdGroupMap::Scope).unwrap().is_empty());
    drop(r);

    // The scope map: channels trimmed, blank channels and groups skipped.
    let out = h.ok(set_ad_map(
        AdGroupMap::Scope,
        &[
            ("Lab Staff", " lab-results "),
            ("lab staff", "lab-results"),
            ("Lab Staff", "   "),
            ("Nurses", "adt"),
            ("nurses", "orders"),
            (" ", "adt"),
        ],
    ));
    assert_eq!(out, Outcome::Count(3));
    let r = h.sm.read();
    assert_eq!(
        r.ad_group_map(AdGroupMap::Scope).unwrap(),
        pairs(&[
            ("lab staff", "lab-results"),
            ("nurses", "adt"),
            ("nurses", "orders"),
        ])
    );
    assert_eq!(
        r.channels_for_ad_groups(&strings(&["NURSES", "Lab Staff "]))
            .unwrap(),
        strings(&["adt", "lab-results", "orders"])
    );
    // Writing one map leaves the other alone.
    assert_eq!(r.ad_group_map(AdGroupMap::Roles).unwrap().len(), 3);
    drop(r);

    // A new map replaces the old one whole; an empty one clears it.
    h.ok(set_ad_map(AdGroupMap::Roles, &[("Ops", "viewer")]));
    assert_eq!(
        h.sm.read().ad_group_map(AdGroupMap::Roles).unwrap(),
        pairs(&[("ops", "viewer")])
    );
    assert!(h
        .sm
        .read()
        .roles_for_ad_groups(&strings(&["domain admins"]))
        .unwrap()
        .is_empty());
    assert_eq!(h.ok(set_ad_map(AdGroupMap::Scope, &[])), Outcome::Count(0));
    assert!(h
        .sm
        .read()
        .ad_group_map(AdGroupMap::Scope)
        .unwrap()
        .is_empty());
}

#[test]
fn the_roles_map_needs_known_roles() {
    let mut h = Harness::new();
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(set_ad_map(AdGroupMap::Roles, &[("g1", "admin")]));
    h.reject(
        set_ad_map(AdGroupMap::Roles, &[("g2", "admin"), ("g3", "ghost")]),
        Rejection::UnknownRole("ghost".into()),
    );
    assert_eq!(
        h.sm.read().roles_for_ad_groups(&strings(&["g1"])).unwrap(),
        strings(&["admin"])
    );
    // The scope map holds channels, which need not exist anywhere.
    h.ok(set_ad_map(AdGroupMap::Scope, &[("g1", "any-channel")]));
}
