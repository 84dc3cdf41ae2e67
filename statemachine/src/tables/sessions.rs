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
        hashes.push(hash_after(Table::UserSessions, &item?.0, prefix.len())?);
    }
    sessions_of(txn, Table::UserSessions, hashes, |hash| {
        format!("session {hash} of user {user_id} is missing")
    })
}

/// The sessions whose `expires_at` is before `t`, by expiry then token hash.
pub(crate) fn expired_before<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    t: Millis,
) -> Result<Vec<Session>, StoreError> {
    let end = Key::new().u64(t).build();
    let mut hashes = Vec::new();
    for item in txn.scan(Table::SessionExpiry, &[], Some(&end), Direction::Forward)? {
        hashes.push(hash_after(Table::SessionExpiry, &item?.0, 8)?);
    }
    sessions_of(txn, Table::SessionExpiry, hashes, |hash| {
        format!("expired session {hash} is missing")
    })
}

/// The token hash an index key ends with, after its first `offset` bytes.
fn hash_after(table: Table, key: &[u8], offset: usize) -> Result<String, StoreError> {
    key.get(offset..)
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(str::to_string)
        .ok_or_else(|| StoreError::Corrupt {
            table,
            reason: format!("bad key {key:?}"),
        })
}

/// The sessions an index names; one it names but the table lacks is corruption of `index`.
fn sessions_of<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    index: Table,
    hashes: Vec<String>,
    missing: impl Fn(&str) -> String,
) -> Result<Vec<Session>, StoreError> {
    let mut out = Vec::with_capacity(hashes.len());
    for hash in hashes {
        match get(txn, &hash)? {
            Some(session) => out.push(session),
            None => {
                return Err(StoreError::Corrupt {
                    table: index,
                    reason: missing(&hash),
                })
            }
        }
    }
    Ok(out)
}
