//! Idempotency keys: `Idempotency` (channel ‖ key → [`IdempotencyRecord`]) and its expiry index
//! `IdempotencyExpiry` (expires_at ‖ channel ‖ key → ()). When a key's window starts and ends is
//! [`crate::rules::dedupe`]'s.

use crate::model::ids::{MessageId, Millis};
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;
use serde::{Deserialize, Serialize};

/// `(channel, key) → message`, live until `expires_at` (absent while the message is in flight).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IdempotencyRecord {
    pub message_id: MessageId,
    pub expires_at: Option<Millis>,
}

impl IdempotencyRecord {
    pub fn is_live(&self, t: Millis) -> bool {
        self.expires_at.is_none_or(|e| e > t)
    }
}

fn record_key(channel: &str, key: &str) -> Vec<u8> {
    Key::new().str(channel).str(key).build()
}

fn expiry_key(expires_at: Millis, channel: &str, key: &str) -> Vec<u8> {
    Key::new().u64(expires_at).str(channel).str(key).build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    channel: &str,
    key: &str,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    txn.get(Table::Idempotency, &record_key(channel, key))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, channel: &str, key: &str, record: &IdempotencyRecord) {
    cx.txn
        .put(Table::Idempotency, record_key(channel, key), record);
}

/// Index `(channel, key)` as expiring at `expires_at`.
pub(crate) fn add_expiry(cx: &mut Db<'_, '_>, expires_at: Millis, channel: &str, key: &str) {
    cx.txn.put_raw(
        Table::IdempotencyExpiry,
        expiry_key(expires_at, channel, key),
        Vec::new(),
    );
}

/// Remove the expiry index entry of `(channel, key)` at `expires_at`.
pub(crate) fn remove_expiry(cx: &mut Db<'_, '_>, expires_at: Millis, channel: &str, key: &str) {
    cx.txn.delete(
        Table::IdempotencyExpiry,
        expiry_key(expires_at, channel, key),
    );
}

/// Drop every key whose window ended at `t` or before, with its expiry entry; returns how many.
pub(crate) fn expire(cx: &mut Db<'_, '_>) -> Result<u64, StoreError> {
    let end = Key::new().u64(cx.t.saturating_add(1)).build();
    let mut keys = Vec::new();
    for item in cx.txn.scan(
        Table::IdempotencyExpiry,
        &[],
        Some(&end),
        Direction::Forward,
    )? {
        keys.push(item?.0);
    }
    let mut count = 0u64;
    for k in keys {
        // expires_at (8) ‖ channel ‖ key: the idempotency key is everything after the expiry.
        if let Some(idem) = k.get(8..) {
            cx.txn.delete(Table::Idempotency, idem.to_vec());
        }
        cx.txn.delete(Table::IdempotencyExpiry, k);
        count += 1;
    }
    Ok(count)
}
