//! Remembered answers of writes (see [`crate::apply::request`]): `Requests` (actor ‖ request id →
//! [`RequestRecord`]), its expiry index `RequestExpiry` (expires_at ‖ actor ‖ request id → ()),
//! and `RequestFingerprints` (actor ‖ request id → the fingerprint of the request the answer
//! belongs to, when its proposer bound it to one). A fingerprint lives in a table of its own
//! rather than in the record so that records written by older builds keep their encoding.

use crate::model::ids::Millis;
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;
use crate::wire::outcome::Response;
use serde::{Deserialize, Serialize};

/// The answer given to a request, at `index`, remembered until `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestRecord {
    pub index: u64,
    pub expires_at: Millis,
    pub response: Response,
}

fn key(actor: &str, id: &str) -> Vec<u8> {
    Key::new().str(actor).str(id).build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    actor: &str,
    id: &str,
) -> Result<Option<RequestRecord>, StoreError> {
    txn.get(Table::Requests, &key(actor, id))
}

/// The fingerprint the answer of `(actor, id)` is bound to; `None` for an answer proposed
/// without one.
pub(crate) fn fingerprint<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    actor: &str,
    id: &str,
) -> Result<Option<[u8; 32]>, StoreError> {
    txn.get(Table::RequestFingerprints, &key(actor, id))
}

/// Store the record of `(actor, id)`, bound to `fingerprint` when there is one, and index it by
/// its expiry.
pub(crate) fn put<S: Store + ?Sized>(
    txn: &mut Txn<'_, S>,
    actor: &str,
    id: &str,
    record: &RequestRecord,
    fingerprint: Option<&[u8; 32]>,
) {
    let k = key(actor, id);
    txn.put_raw(
        Table::RequestExpiry,
        Key::new().u64(record.expires_at).bytes(&k).build(),
        Vec::new(),
    );
    if let Some(f) = fingerprint {
        txn.put(Table::RequestFingerprints, k.clone(), f);
    }
    txn.put(Table::Requests, k, record);
}

/// Forget every answer whose window ended before `t`; returns how many.
pub(crate) fn expire(cx: &mut Db<'_, '_>) -> Result<u64, StoreError> {
    let end = Key::new().u64(cx.t).build();
    let mut keys = Vec::new();
    for item in cx
        .txn
        .scan(Table::RequestExpiry, &[], Some(&end), Direction::Forward)?
    {
        keys.push(item?.0);
    }
    let count = keys.len() as u64;
    for k in keys {
        // expires_at (8) ‖ actor ‖ request id: the record's key is everything after the expiry.
        if let Some(record) = k.get(8..) {
            cx.txn.delete(Table::Requests, record.to_vec());
            cx.txn.delete(Table::RequestFingerprints, record.to_vec());
        }
        cx.txn.delete(Table::RequestExpiry, k);
    }
    Ok(count)
}
