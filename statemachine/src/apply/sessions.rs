//! The engine's sessions (docs/SPEC.md §13): CreateSession, UpdateSession, RevokeUserSessions,
//! EnforceSessionCap and PurgeExpiredSessions, and SessionAt, which dates the first four by the
//! caller. Only token hashes enter the log.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::ids::Millis;
use crate::model::session::{Session, MAX_SESSION_AT_SKEW_MS};
use crate::rules::validate;
use crate::tables::{sessions, users};
use crate::wire::command::{
    CreateSession, EnforceSessionCap, PurgeExpiredSessions, RevokeUserSessions, SessionAt,
    SessionChange, SessionWrite, UpdateSession,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::cmp::Reverse;

impl Apply for CreateSession {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let t = cx.t;
        create(cx, self, t)
    }
}

impl Apply for UpdateSession {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let t = cx.t;
        update(cx, self, t)
    }
}

impl Apply for RevokeUserSessions {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let t = cx.t;
        revoke_user(cx, self, t)
    }
}

impl Apply for EnforceSessionCap {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let t = cx.t;
        cap(cx, self, t)
    }
}

/// docs/SPEC.md §13.2: the write, with the caller's `at` as every session time it stamps, when
/// `at` is within [`MAX_SESSION_AT_SKEW_MS`] of `t`. Only the session record sees `at`; the
/// machine's clock stays `t`.
impl Apply for SessionAt {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SessionAt { at, write } = self;
        let at = *at;
        if at.abs_diff(cx.t) > MAX_SESSION_AT_SKEW_MS {
            let way = if at < cx.t { "behind" } else { "ahead of" };
            return Err(Rejection::invalid(
                "at",
                format!(
                    "{at} is {} ms {way} the cluster's time {} (at most {MAX_SESSION_AT_SKEW_MS} ms)",
                    at.abs_diff(cx.t),
                    cx.t
                ),
            )
            .into());
        }
        match write {
            SessionWrite::Create(c) => create(cx, c, at),
            SessionWrite::Update(c) => update(cx, c, at),
            SessionWrite::RevokeUser(c) => revoke_user(cx, c, at),
            SessionWrite::Cap(c) => cap(cx, c, at),
        }
    }
}

/// CreateSession with its times `at`.
fn create(cx: &mut Ctx<'_, '_>, c: &CreateSession, at: Millis) -> ApplyResult<Outcome> {
    let CreateSession {
        token_hash,
        user_id,
        expires_at,
        client,
        seed_reauth,
    } = c;
    validate::name("token_hash", token_hash)?;
    if users::get(cx.txn, user_id)?.is_none() {
        return Err(Rejection::UnknownUser(user_id.clone()).into());
    }
    if sessions::get(cx.txn, token_hash)?.is_some() {
        return Err(Rejection::AlreadyExists {
            field: "token_hash".to_string(),
            value: token_hash.clone(),
        }
        .into());
    }
    sessions::insert(
        cx,
        &Session {
            token_hash: token_hash.clone(),
            user_id: user_id.clone(),
            created_at: at,
            expires_at: *expires_at,
            last_used_at: at,
            revoked_at: None,
            client: client.clone(),
            reauth_at: seed_reauth.then_some(at),
            mfa_verified_at: None,
        },
    );
    Ok(Outcome::Done)
}

/// UpdateSession stamping `at`.
fn update(cx: &mut Ctx<'_, '_>, c: &UpdateSession, at: Millis) -> ApplyResult<Outcome> {
    let UpdateSession { token_hash, change } = c;
    let Some(mut session) = sessions::get(cx.txn, token_hash)? else {
        return Ok(Outcome::Count(0));
    };
    match change {
        SessionChange::Touch => session.last_used_at = at,
        SessionChange::Reauthed { client } => {
            session.reauth_at = Some(at);
            if let Some(client) = client {
                session.client = Some(client.clone());
            }
        }
        SessionChange::MfaVerified => session.mfa_verified_at = Some(at),
        SessionChange::Revoke => {
            if session.revoked_at.is_some() {
                return Ok(Outcome::Count(0));
            }
            session.revoked_at = Some(at);
        }
    }
    sessions::update(cx, &session);
    Ok(Outcome::Count(1))
}

/// RevokeUserSessions stamping `revoked_at = at`.
fn revoke_user(cx: &mut Ctx<'_, '_>, c: &RevokeUserSessions, at: Millis) -> ApplyResult<Outcome> {
    let RevokeUserSessions {
        user_id,
        except_token_hash,
    } = c;
    let mut revoked = 0u64;
    for mut session in sessions::of_user(cx.txn, user_id)? {
        if session.revoked_at.is_some() || except_token_hash.as_ref() == Some(&session.token_hash) {
            continue;
        }
        session.revoked_at = Some(at);
        sessions::update(cx, &session);
        revoked += 1;
    }
    Ok(Outcome::Count(revoked))
}

/// EnforceSessionCap stamping `revoked_at = at`.
fn cap(cx: &mut Ctx<'_, '_>, c: &EnforceSessionCap, at: Millis) -> ApplyResult<Outcome> {
    let EnforceSessionCap { user_id, keep } = c;
    if *keep == 0 {
        return Ok(Outcome::Count(0));
    }
    let mut unrevoked: Vec<Session> = sessions::of_user(cx.txn, user_id)?
        .into_iter()
        .filter(|s| s.revoked_at.is_none())
        .collect();
    // Newest first: created_at, then token hash, both descending.
    unrevoked.sort_by(|a, b| {
        (Reverse(a.created_at), Reverse(&a.token_hash))
            .cmp(&(Reverse(b.created_at), Reverse(&b.token_hash)))
    });
    let mut revoked = 0u64;
    for mut session in unrevoked.into_iter().skip(*keep as usize) {
        session.revoked_at = Some(at);
        sessions::update(cx, &session);
        revoked += 1;
    }
    Ok(Outcome::Count(revoked))
}

impl Apply for PurgeExpiredSessions {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let expired = sessions::expired_before(cx.txn, cx.t)?;
        for session in &expired {
            sessions::remove(cx, session);
        }
        Ok(Outcome::Count(expired.len() as u64))
    }
}
