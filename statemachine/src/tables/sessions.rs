//! The engine's sessions (docs/SPEC.md §13):
//!
//! - `Sessions`: token hash (raw bytes) → [`Session`];
//! - `UserSessions`: user id (length-prefixed) ‖ token hash (raw) → (), so the operations on
//!   one user's sessions read only that user's;
//! - `SessionExpiry`: expires_at (u64) ‖ token hash (raw) → (), so PurgeExpiredSessions reads
//!   only the expired ones.
//!
//! Every session is in all three; [`insert`], [`update`] and [`remove`] keep them in step
//! (`expires_at` never changes after creation).

use crate::model::ids::Millis;
use crate::model::session::Session;
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn user_prefix(user_id: &str) -> Vec<u8> {
    Key::new().str(user_id).build()
}

fn user_key(user_id: &str, token_hash: &str) -> Vec<u8> {
    Key::new().str(user_id).bytes(token_hash.as_bytes()).build()
}

fn expiry_key(expires_at: Millis, token_hash: &str) -> Vec<u8> {
    Key::new()
        .u64(expires_at)
        .bytes(token_hash.as_bytes())
        .build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    token_hash: &str,
) -> Result<Option<Session>, StoreError> {
    txn.get(Table::Sessions, token_hash.as_bytes())
}

/// Store a new session with its index entries.
pub(crate) fn insert(cx: &mut Db<'_, '_>, session: &Session) {
    update(cx, session);
    cx.txn.put_raw(
        Table::UserSessions,
        user_key(&session.user_id, &session.token_hash),
        Vec::new(),
    );
    cx.txn.put_raw(
        Table::SessionExpiry,
        expiry_key(session.expires_at, &session.token_hash),
        Vec::new(),
    );
}

/// Store a changed session (its user and expiry are unchanged, so are its index entries).
pub(crate) fn update(cx: &mut Db<'_, '_>, session: &Session) {
    cx.txn.put(
        Table::Sessions,
        session.token_hash.as_bytes().to_vec(),
        session,
    );
}

/// Delete a session with its index entries.
pub(crate) fn remove(cx: &mut Db<'_, '_>, session: &Session) {
    cx.txn.delete(
        Table::SessionExpiry,
        expiry_key(session.expires_at, &session.token_hash),
    );
    cx.txn.delete(
        Table::UserSessions,
        user_key(&session.user_id, &session.token_hash),
    );
    cx.txn
        .delete(Table::Sessions, session.token_hash.as_bytes().to_vec());
}

/// Every session of a user, by token hash.
pub(crate) fn of_user<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    user_id: &str,
) -> Result<Vec<Session>, StoreError> {
    let prefix = user_prefix(user_id);
    let mut hashes = Vec::new();
    for item in txn.scan_prefix(Table::UserSessions, &prefix, Direction::Forward)? {
        let (key, _) = item?;
        let hash = key
            .get(prefix.len()..)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| StoreError::Corrupt {
                table: Table::UserSessions,
                reason: format!("bad key {key:?}"),
            })?
            .to_string();
        hashes.push(hash);
    }
    let mut out = Vec::with_capacity(hashes.len());
    for hash in hashes {
        match get(txn, &hash)? {
            Some(session) => out.push(session),
            None => {
                return Err(StoreError::Corrupt {
                    table: Table::UserSessions,
                    reason: format!("session {hash} of user {user_id} is missing"),
                })
            }
        }
    }
    Ok(out)
}

/// The sessions whose `expires_at` is before `t`, by expiry then token hash.
pub(crate) fn expired_before<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    t: Millis,
) -> Result<Vec<Session>, StoreError> {
    let end = Key::new().u64(t).build();
    let mut hashes = Vec::new();
    for item in txn.scan(Table::SessionExpiry, &[], Some(&end), Direction::Forward)? {
        let (key, _) = item?;
        let hash = key
            .get(8..)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| StoreError::Corrupt {
                table: Table::SessionExpiry,
                reason: format!("bad key {key:?}"),
            })?
            .to_string();
        hashes.push(hash);
    }
    let mut out = Vec::with_capacity(hashes.len());
    for hash in hashes {
        match get(txn, &hash)? {
            Some(session) => out.push(session),
            None => {
                return Err(StoreError::Corrupt {
                    table: Table::SessionExpiry,
                    reason: format!("expired session {hash} is missing"),
                })
            }
        }
    }
    Ok(out)
}
