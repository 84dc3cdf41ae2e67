//! The engine's sessions: CreateSession, UpdateSession (every change), RevokeUserSessions,
//! EnforceSessionCap, PurgeExpiredSessions and their reads.

use crate::harness::*;

const HOUR: u64 = 3_600_000;

fn purge() -> Command {
    Command::PurgeExpiredSessions(PurgeExpiredSessions)
}

fn revoke_all(user: &str, except: Option<&str>) -> Command {
    Command::RevokeUserSessions(RevokeUserSessions {
        user_id: user.into(),
        except_token_hash: except.map(Into::into),
    })
}

fn cap(user: &str, keep: u32) -> Command {
    Command::EnforceSessionCap(EnforceSessionCap {
        user_id: user.into(),
        keep,
    })
}

fn revoked(h: &Harness, hash: &str) -> bool {
    session_of(h, hash).revoked_at.is_some()
}

#[test]
fn create_session_stores_every_field() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(10);
    let expires_at = h.now + HOUR;
    assert_eq!(
        h.ok(create_session(&token_hash('a'), "u1", expires_at)),
        Outcome::Done
    );
    let t = h.clock();
    assert_eq!(
        session_of(&h, &token_hash('a')),
        Session {
            token_hash: token_hash('a'),
            user_id: "u1".into(),
            created_at: t,
            expires_at,
            last_used_at: t,
            revoked_at: None,
            client: Some("10.0.0.1".into()),
            reauth_at: Some(t),
            mfa_verified_at: None,
        }
    );
    // A session waiting for its second factor has no reauth time.
    h.ok(Command::CreateSession(CreateSession {
        token_hash: token_hash('b'),
        user_id: "u1".into(),
        expires_at,
        client: None,
        seed_reauth: false,
    }));
    let s = session_of(&h, &token_hash('b'));
    assert_eq!((s.reauth_at, s.client), (None, None));
    assert_eq!(h.sm.read().session(&token_hash('c')).unwrap(), None);
}

#[test]
fn create_session_needs_a_known_user_and_a_new_token_hash() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    let far = h.now + HOUR;
    h.reject(
        create_session(&token_hash('a'), "nobody", far),
        Rejection::UnknownUser("nobody".into()),
    );
    h.ok(create_session(&token_hash('a'), "u1", far));
    h.reject(
        create_session(&token_hash('a'), "u2", far),
        Rejection::AlreadyExists {
            field: "token_hash".into(),
            value: token_hash('a'),
        },
    );
    h.reject(
        create_session("", "u1", far),
        invalid("token_hash", "must not be empty"),
    );
    assert_eq!(session_of(&h, &token_hash('a')).user_id, "u1");
}

#[test]
fn update_session_changes() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    let hash = token_hash('a');
    h.ok(Command::CreateSession(CreateSession {
        token_hash: hash.clone(),
        user_id: "u1".into(),
        expires_at: h.now + HOUR,
        client: Some("10.0.0.1".into()),
        seed_reauth: false,
    }));
    let created = h.clock();

    h.advance(100);
    assert_eq!(
        h.ok(update_session(&hash, SessionChange::Touch)),
        Outcome::Count(1)
    );
    let s = session_of(&h, &hash);
    assert_eq!((s.created_at, s.last_used_at), (created, h.clock()));

    // Reauthed without a client keeps the stored one; with one re-anchors to it.
    h.advance(100);
    h.ok(update_session(
        &hash,
        SessionChange::Reauthed { client: None },
    ));
    let s = session_of(&h, &hash);
    assert_eq!(s.reauth_at, Some(h.clock()));
    assert_eq!(s.client.as_deref(), Some("10.0.0.1"));
    h.advance(100);
    h.ok(update_session(
        &hash,
        SessionChange::Reauthed {
            client: Some("10.9.9.9".into()),
        },
    ));
    let s = session_of(&h, &hash);
    assert_eq!(s.reauth_at, Some(h.clock()));
    assert_eq!(s.client.as_deref(), Some("10.9.9.9"));

    h.advance(100);
    assert_eq!(
        h.ok(update_session(&hash, SessionChange::MfaVerified)),
        Outcome::Count(1)
    );
    assert_eq!(session_of(&h, &hash).mfa_verified_at, Some(h.clock()));

    // Revoke stamps once; revoking again changes nothing.
    h.advance(100);
    assert_eq!(
        h.ok(update_session(&hash, SessionChange::Revoke)),
        Outcome::Count(1)
    );
    let revoked_at = h.clock();
    assert_eq!(session_of(&h, &hash).revoked_at, Some(revoked_at));
    h.advance(100);
    h.no_change(
        update_session(&hash, SessionChange::Revoke),
        Outcome::Count(0),
    );
    assert_eq!(session_of(&h, &hash).revoked_at, Some(revoked_at));

    // An unknown session: nothing to update.
    for change in [
        SessionChange::Touch,
        SessionChange::Reauthed {
            client: Some("x".into()),
        },
        SessionChange::MfaVerified,
        SessionChange::Revoke,
    ] {
        h.no_change(update_session(&token_hash('z'), change), Outcome::Count(0));
    }
}

#[test]
fn revoke_user_sessions_revokes_the_unrevoked_ones_but_the_exception() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    let far = h.now + HOUR;
    for c in ['a', 'b', 'c', 'd'] {
        h.ok(create_session(&token_hash(c), "u1", far));
    }
    h.ok(create_session(&token_hash('e'), "u2", far));
    h.ok(update_session(&token_hash('a'), SessionChange::Revoke));
    let first_revoke = h.clock();
    h.advance(10);
    assert_eq!(
        h.ok(revoke_all("u1", Some(&token_hash('b')))),
        Outcome::Count(2)
    );
    let t = h.clock();
    // The one already revoked keeps its time; the exception and the other user are untouched.
    assert_eq!(
        session_of(&h, &token_hash('a')).revoked_at,
        Some(first_revoke)
    );
    assert!(!revoked(&h, &token_hash('b')));
    assert_eq!(session_of(&h, &token_hash('c')).revoked_at, Some(t));
    assert_eq!(session_of(&h, &token_hash('d')).revoked_at, Some(t));
    assert!(!revoked(&h, &token_hash('e')));
    h.no_change(revoke_all("u1", Some(&token_hash('b'))), Outcome::Count(0));
    assert_eq!(h.ok(revoke_all("u1", None)), Outcome::Count(1));
    assert!(revoked(&h, &token_hash('b')));
    h.no_change(revoke_all("nobody", None), Outcome::Count(0));
}

#[test]
fn the_session_cap_keeps_the_most_recently_created() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    let far = h.now + 10 * HOUR;
    // Created at T, T+1 (two sessions: 'b' and 'c', tie broken by token hash), T+2, T+3.
    h.ok(create_session(&token_hash('a'), "u1", far));
    h.advance(1);
    h.ok(create_session(&token_hash('c'), "u1", far));
    h.ok(create_session(&token_hash('b'), "u1", far));
    h.advance(1);
    h.ok(create_session(&token_hash('d'), "u1", far));
    h.advance(1);
    // The newest one is already revoked: it does not count toward `keep`.
    h.ok(create_session(&token_hash('e'), "u1", far));
    h.ok(update_session(&token_hash('e'), SessionChange::Revoke));
    h.ok(create_session(&token_hash('f'), "u2", far));

    // keep = 0 does nothing.
    h.no_change(cap("u1", 0), Outcome::Count(0));
    // Keep 2 of a, b, c, d (newest first: d, then c before b since 'c' > 'b'): revoke b and a.
    h.advance(5);
    assert_eq!(h.ok(cap("u1", 2)), Outcome::Count(2));
    let t = h.clock();
    assert_eq!(session_of(&h, &token_hash('a')).revoked_at, Some(t));
    assert_eq!(session_of(&h, &token_hash('b')).revoked_at, Some(t));
    assert!(!revoked(&h, &token_hash('c')));
    assert!(!revoked(&h, &token_hash('d')));
    assert!(!revoked(&h, &token_hash('f')));
    // Within the cap: nothing more to revoke.
    h.no_change(cap("u1", 2), Outcome::Count(0));
    h.no_change(cap("u1", 5), Outcome::Count(0));
    assert_eq!(h.ok(cap("u1", 1)), Outcome::Count(1));
    assert!(revoked(&h, &token_hash('c')));
    assert!(!revoked(&h, &token_hash('d')));
    h.no_change(cap("nobody", 1), Outcome::Count(0));
}

#[test]
fn the_session_cap_counts_expired_but_unrevoked_sessions() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    // 'a' expires at once; 'b' is older but lives.
    h.ok(create_session(&token_hash('b'), "u1", h.now + HOUR));
    h.advance(1);
    h.ok(create_session(&token_hash('a'), "u1", h.now + 1));
    h.advance(10);
    assert_eq!(h.ok(cap("u1", 1)), Outcome::Count(1));
    // The expired one is the newest, so it is the one kept (as the reference store does).
    assert!(!revoked(&h, &token_hash('a')));
    assert!(revoked(&h, &token_hash('b')));
}

#[test]
fn purge_deletes_sessions_that_expired_before_now() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    let cutoff = h.now + 1_000;
    h.ok(create_session(&token_hash('a'), "u1", cutoff - 1));
    h.ok(create_session(&token_hash('b'), "u1", cutoff));
    h.ok(create_session(&token_hash('c'), "u2", cutoff + 1));
    h.ok(create_session(&token_hash('d'), "u2", cutoff - 500));
    h.ok(update_session(&token_hash('d'), SessionChange::Revoke));
    // Before anything expired: nothing to purge.
    h.no_change(purge(), Outcome::Count(0));

    h.now = cutoff;
    // expires_at < t: 'a' and 'd' (revoked or not); 'b' expires exactly now and stays.
    assert_eq!(h.ok(purge()), Outcome::Count(2));
    let r = h.sm.read();
    assert_eq!(r.session(&token_hash('a')).unwrap(), None);
    assert_eq!(r.session(&token_hash('d')).unwrap(), None);
    assert!(r.session(&token_hash('b')).unwrap().is_some());
    assert!(r.session(&token_hash('c')).unwrap().is_some());
    drop(r);
    h.no_change(purge(), Outcome::Count(0));

    h.advance(1);
    assert_eq!(h.ok(purge()), Outcome::Count(1));
    assert_eq!(h.sm.read().session(&token_hash('b')).unwrap(), None);
    // The user index no longer lists purged sessions: per-user commands see only 'c'.
    assert_eq!(h.ok(revoke_all("u1", None)), Outcome::Count(0));
    assert_eq!(h.ok(revoke_all("u2", None)), Outcome::Count(1));
    assert_eq!(h.ok(delete_user("u2")), Outcome::Count(1));
    assert_eq!(h.sm.read().session(&token_hash('c')).unwrap(), None);
}

#[test]
fn active_sessions_are_unrevoked_unexpired_and_most_recently_used_first() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.ok(create_user("u2", "bob"));
    let far = h.now + HOUR;
    h.ok(create_session(&token_hash('a'), "u1", far));
    h.ok(create_session(&token_hash('b'), "u1", far));
    h.ok(create_session(&token_hash('c'), "u1", far));
    h.ok(create_session(&token_hash('d'), "u1", h.now + 100));
    h.ok(create_session(&token_hash('e'), "u1", far));
    h.ok(create_session(&token_hash('f'), "u2", far));
    h.ok(update_session(&token_hash('e'), SessionChange::Revoke));
    h.advance(10);
    h.ok(update_session(&token_hash('a'), SessionChange::Touch));
    h.advance(10);
    h.ok(update_session(&token_hash('c'), SessionChange::Touch));

    let hashes = |now: u64| -> Vec<String> {
        h.sm.read()
            .active_sessions("u1", now)
            .unwrap()
            .into_iter()
            .map(|s| s.token_hash)
            .collect()
    };
    let start = T0;
    assert_eq!(
        hashes(start + 50),
        vec![
            token_hash('c'),
            token_hash('a'),
            token_hash('b'),
            token_hash('d')
        ]
    );
    // 'd' expires at start + 100: not active at that instant.
    assert_eq!(
        hashes(start + 100),
        vec![token_hash('c'), token_hash('a'), token_hash('b')]
    );
    assert!(hashes(far).is_empty());
    assert!(h
        .sm
        .read()
        .active_sessions("nobody", start)
        .unwrap()
        .is_empty());
}

#[test]
fn the_auth_tables_travel_in_snapshots_and_the_digest() {
    use raftlane_statemachine::{MemStore, StateMachine};
    let mut h = Harness::new();
    let empty = h.digest();
    h.ok(upsert_role("admin", "Administrator"));
    h.ok(create_user("u1", "alice"));
    h.ok(set_user_roles("u1", &["admin"], Some("root")));
    h.ok(set_ad_map(AdGroupMap::Roles, &[("Admins", "admin")]));
    h.ok(set_ad_map(AdGroupMap::Scope, &[("Admins", "c1")]));
    h.ok(create_session(&token_hash('a'), "u1", h.now + HOUR));
    let digest = h.digest();
    assert_ne!(digest, empty);

    let entries: Vec<_> = h.sm.export().map(|e| e.expect("export")).collect();
    for table in [
        Table::Users,
        Table::Usernames,
        Table::UserRoles,
        Table::Roles,
        Table::AdGroupMaps,
        Table::Sessions,
        Table::UserSessions,
        Table::SessionExpiry,
    ] {
        assert!(
            entries.iter().any(|(t, _, _)| *t == table),
            "{table:?} missing from the snapshot"
        );
    }
    let mut copy = StateMachine::open(MemStore::new()).expect("open");
    copy.install(entries).expect("install");
    assert_eq!(copy.digest().unwrap(), digest);
    let r = copy.read();
    assert_eq!(r.user_by_username("alice").unwrap().unwrap().id, "u1");
    assert_eq!(r.user_role_ids("u1").unwrap(), strings(&["admin"]));
    assert_eq!(
        r.roles_for_ad_groups(&strings(&["ADMINS"])).unwrap(),
        strings(&["admin"])
    );
    assert_eq!(
        r.channels_for_ad_groups(&strings(&["admins"])).unwrap(),
        strings(&["c1"])
    );
    assert_eq!(r.active_sessions("u1", h.now).unwrap().len(), 1);

    // A change to any of them changes the digest.
    h.ok(update_user("u1", UserChange::ConsumeTotpStep { step: 7 }));
    assert_ne!(h.digest(), digest);
}

// --- SessionAt: session writes dated by the caller (docs/SPEC.md §13.2) ---

use raftlane_statemachine::model::session::MAX_SESSION_AT_SKEW_MS;
use raftlane_statemachine::wire::command::{SessionAt, SessionWrite};

fn dated(at: u64, write: SessionWrite) -> Command {
    Command::SessionAt(SessionAt { at, write })
}

fn dated_update(at: u64, hash: &str, change: SessionChange) -> Command {
    dated(
        at,
        SessionWrite::Update(UpdateSession {
            token_hash: hash.into(),
            change,
        }),
    )
}

fn dated_create(at: u64, hash: &str, user: &str, expires_at: u64) -> Command {
    dated(
        at,
        SessionWrite::Create(CreateSession {
            token_hash: hash.into(),
            user_id: user.into(),
            expires_at,
            client: Some("10.0.0.1".into()),
            seed_reauth: true,
        }),
    )
}

#[test]
fn a_dated_session_keeps_the_callers_times() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(60_000);
    h.tick();
    let t = h.clock();
    let hash = token_hash('a');
    let expires_at = h.now + HOUR;

    // An engine host 5 s behind the cluster: the session is dated by its clock, not `t`.
    let created = t - 5_000;
    assert_eq!(
        h.ok(dated_create(created, &hash, "u1", expires_at)),
        Outcome::Done
    );
    assert_eq!(
        session_of(&h, &hash),
        Session {
            token_hash: hash.clone(),
            user_id: "u1".into(),
            created_at: created,
            expires_at,
            last_used_at: created,
            revoked_at: None,
            client: Some("10.0.0.1".into()),
            reauth_at: Some(created),
            mfa_verified_at: None,
        }
    );
    // The machine's clock is the cluster's, untouched by the caller's time.
    assert_eq!(h.clock(), t);

    // Every change stamps the caller's time.
    h.advance(1_000);
    let touched = h.now - 4_000;
    assert_eq!(
        h.ok(dated_update(touched, &hash, SessionChange::Touch)),
        Outcome::Count(1)
    );
    h.ok(dated_update(touched + 1, &hash, SessionChange::MfaVerified));
    h.ok(dated_update(
        touched + 2,
        &hash,
        SessionChange::Reauthed {
            client: Some("10.0.0.2".into()),
        },
    ));
    let s = session_of(&h, &hash);
    assert_eq!(
        (
            s.created_at,
            s.last_used_at,
            s.mfa_verified_at,
            s.reauth_at,
            s.client.as_deref()
        ),
        (
            created,
            touched,
            Some(touched + 1),
            Some(touched + 2),
            Some("10.0.0.2")
        )
    );
    assert_eq!(h.clock(), h.now);
    assert_eq!(
        h.ok(dated_update(touched + 3, &hash, SessionChange::Revoke)),
        Outcome::Count(1)
    );
    assert_eq!(session_of(&h, &hash).revoked_at, Some(touched + 3));
    // A revoked session stays revoked at its first time.
    h.no_change(
        dated_update(touched + 4, &hash, SessionChange::Revoke),
        Outcome::Count(0),
    );
    // An unknown session: nothing, as undated.
    h.no_change(
        dated_update(h.now, &token_hash('z'), SessionChange::Touch),
        Outcome::Count(0),
    );

    // A user's sessions revoked, and a cap enforced, at the caller's time.
    for (c, at) in [('b', 10), ('c', 20), ('d', 30)] {
        h.ok(dated_create(
            h.now - 1_000 + at,
            &token_hash(c),
            "u1",
            expires_at,
        ));
    }
    let capped_at = h.now - 500;
    assert_eq!(
        h.ok(dated(
            capped_at,
            SessionWrite::Cap(EnforceSessionCap {
                user_id: "u1".into(),
                keep: 2,
            }),
        )),
        Outcome::Count(1)
    );
    assert_eq!(session_of(&h, &token_hash('b')).revoked_at, Some(capped_at));
    let revoked_at = h.now - 400;
    assert_eq!(
        h.ok(dated(
            revoked_at,
            SessionWrite::RevokeUser(RevokeUserSessions {
                user_id: "u1".into(),
                except_token_hash: Some(token_hash('d')),
            }),
        )),
        Outcome::Count(1)
    );
    assert_eq!(
        session_of(&h, &token_hash('c')).revoked_at,
        Some(revoked_at)
    );
    assert_eq!(session_of(&h, &token_hash('d')).revoked_at, None);
}

#[test]
fn a_dated_session_write_is_accepted_up_to_the_skew_bound_either_way() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(100_000);
    h.tick();
    let t = h.clock();
    let expires_at = t + HOUR;
    h.ok(dated_create(
        t - MAX_SESSION_AT_SKEW_MS,
        &token_hash('a'),
        "u1",
        expires_at,
    ));
    h.ok(dated_create(
        t + MAX_SESSION_AT_SKEW_MS,
        &token_hash('b'),
        "u1",
        expires_at,
    ));
    assert_eq!(
        session_of(&h, &token_hash('b')).created_at,
        t + MAX_SESSION_AT_SKEW_MS
    );
    // A time ahead moves neither the machine's clock nor what later writes stamp.
    assert_eq!(h.clock(), t);
    h.advance(1);
    h.ok(update_session(&token_hash('a'), SessionChange::Touch));
    assert_eq!(session_of(&h, &token_hash('a')).last_used_at, t + 1);
    assert_eq!(h.clock(), t + 1);
}

#[test]
fn a_dated_session_write_beyond_the_skew_bound_is_refused_and_changes_nothing() {
    let mut h = Harness::new();
    h.ok(create_user("u1", "alice"));
    h.advance(100_000);
    let hash = token_hash('a');
    h.ok(create_session(&hash, "u1", h.now + HOUR));
    let t = h.now;
    let behind = t - MAX_SESSION_AT_SKEW_MS - 1;
    let ahead = t + MAX_SESSION_AT_SKEW_MS + 1;
    let refused = |at: u64, way: &str| {
        invalid(
            "at",
            &format!(
                "{at} is {} ms {way} the cluster's time {t} (at most {MAX_SESSION_AT_SKEW_MS} ms)",
                MAX_SESSION_AT_SKEW_MS + 1
            ),
        )
    };
    let before = session_of(&h, &hash);
    h.reject(
        dated_create(behind, &token_hash('b'), "u1", t + HOUR),
        refused(behind, "behind"),
    );
    h.reject(
        dated_create(ahead, &token_hash('b'), "u1", t + HOUR),
        refused(ahead, "ahead of"),
    );
    for change in [
        SessionChange::Touch,
        SessionChange::Reauthed { client: None },
        SessionChange::MfaVerified,
        SessionChange::Revoke,
    ] {
        h.reject(
            dated_update(behind, &hash, change.clone()),
            refused(behind, "behind"),
        );
        h.reject(
            dated_update(ahead, &hash, change),
            refused(ahead, "ahead of"),
        );
    }
    h.reject(
        dated(
            ahead,
            SessionWrite::RevokeUser(RevokeUserSessions {
                user_id: "u1".into(),
                except_token_hash: None,
            }),
        ),
        refused(ahead, "ahead of"),
    );
    h.reject(
        dated(
            behind,
            SessionWrite::Cap(EnforceSessionCap {
                user_id: "u1".into(),
                keep: 1,
            }),
        ),
        refused(behind, "behind"),
    );
    assert_eq!(session_of(&h, &hash), before);
    assert_eq!(h.sm.read().session(&token_hash('b')).unwrap(), None);
    // The bound is checked first: even an unknown user's session is refused for its time.
    h.reject(
        dated_create(ahead, &token_hash('c'), "nobody", t + HOUR),
        refused(ahead, "ahead of"),
    );
}
