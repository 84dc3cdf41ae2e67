//! `Children`: derived child key → child message id, so that re-ingesting the same captured
//! response twice (a retried IngressHandoff) finds the child it made the first time; and
//! `ChildKeys`: the caller's own key for a child → its id (an IngressHandoff with a child key), so the caller
//! finds the child by the id it derived itself.

use crate::model::ids::MessageId;
use crate::storage::keys::Key;
use crate::storage::{Store, StoreError, Table, Txn};
use crate::tables::Db;
use sha2::{Digest, Sha256};

/// The deterministic identity of a re-ingested response: a retry of the same response can only
/// ever map to the same child.
pub(crate) fn key(origin: MessageId, destination: &str, seq: u32, body: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(origin.to_be_bytes());
    h.update((destination.len() as u64).to_be_bytes());
    h.update(destination.as_bytes());
    h.update(seq.to_be_bytes());
    h.update(body.as_bytes());
    h.finalize().to_vec()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    key: &[u8],
) -> Result<Option<MessageId>, StoreError> {
    txn.get(Table::Children, key)
}

pub(crate) fn put(cx: &mut Db<'_, '_>, key: Vec<u8>, child: MessageId) {
    cx.txn.put(Table::Children, key, &child);
}

fn caller_key(key: &str) -> Vec<u8> {
    Key::new().str(key).build()
}

/// The child the caller named `key`.
pub(crate) fn by_caller_key<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    key: &str,
) -> Result<Option<MessageId>, StoreError> {
    txn.get(Table::ChildKeys, &caller_key(key))
}

pub(crate) fn put_caller_key(cx: &mut Db<'_, '_>, key: &str, child: MessageId) {
    cx.txn.put(Table::ChildKeys, caller_key(key), &child);
}
