//! The engine's sessions (docs/SPEC.md §13): CreateSession, UpdateSession, RevokeUserSessions,
//! EnforceSessionCap and PurgeExpiredSessions. Only token hashes enter the log.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::session::Session;
use crate::rules::validate;
use crate::tables::{sessions, users};
use crate::wire::command::{
    CreateSession, EnforceSessionCap, PurgeExpiredSessions, RevokeUserSessions, SessionChange,
    UpdateSession,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::cmp::Reverse;

impl Apply for CreateSession {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CreateSession {
            token_hash,
            user_id,
            expires_at,
            client,
            seed_reauth,
        } = self;
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
        let t = cx.t;
        sessions::insert(
            cx,
            &Session {
                token_hash: token_hash.clone(),
                user_id: user_id.clone(),
                created_at: t,
                expires_at: *expires_at,
                last_used_at: t,
                revoked_at: None,
                client: client.clone(),
                reauth_at: seed_reauth.then_some(t),
                mfa_verified_at: None,
            },
        );
        Ok(Outcome::Done)
    }
}

impl Apply for UpdateSession {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let UpdateSession { token_hash, change } = self;
        let Some(mut session) = sessions::get(cx.txn, token_hash)? else {
            return Ok(Outcome::Count(0));
        };
        let t = cx.t;
        match change {
            SessionChange::Touch => session.last_used_at = t,
            SessionChange::Reauthed { client } => {
                session.reauth_at = Some(t);
                if let Some(client) = client {
                    session.client = Some(client.clone());
                }
            }
            SessionChange::MfaVerified => session.mfa_verified_at = Some(t),
            SessionChange::Revoke => {
                if session.revoked_at.is_some() {
                    return Ok(Outcome::Count(0));
                }
                session.revoked_at = Some(t);
            }
        }
        sessions::update(cx, &session);
        Ok(Outcome::Count(1))
    }
}

impl Apply for RevokeUserSessions {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RevokeUserSessions {
            user_id,
            except_token_hash,
        } = self;
        let t = cx.t;
        let mut revoked = 0u64;
        for mut session in sessions::of_user(cx.txn, user_id)? {
            if session.revoked_at.is_some()
                || except_token_hash.as_ref() == Some(&session.token_hash)
            {
                continue;
            }
            session.revoked_at = Some(t);
            sessions::update(cx, &session);
            revoked += 1;
        }
        Ok(Outcome::Count(revoked))
    }
}

impl Apply for EnforceSessionCap {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let EnforceSessionCap { user_id, keep } = self;
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
        let t = cx.t;
        let mut revoked = 0u64;
        for mut session in unrevoked.into_iter().skip(*keep as usize) {
            session.revoked_at = Some(t);
            sessions::update(cx, &session);
            revoked += 1;
        }
        Ok(Outcome::Count(revoked))
    }
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
