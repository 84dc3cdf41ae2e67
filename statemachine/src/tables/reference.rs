//! `Reference`: name → [`ReferenceSnapshot`].

use crate::model::state::ReferenceSnapshot;
use crate::storage::keys::{read_str, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

pub(crate) fn key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

/// The name of a `Reference` key.
pub(crate) fn parse_key(bytes: &[u8]) -> Option<String> {
    read_str(bytes, &mut 0)
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    name: &str,
) -> Result<Option<ReferenceSnapshot>, StoreError> {
    txn.get(Table::Reference, &key(name))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, name: &str, snapshot: &ReferenceSnapshot) {
    cx.txn.put(Table::Reference, key(name), snapshot);
}

/// Every reference snapshot with its name, in name order.
pub(crate) fn all<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<(String, ReferenceSnapshot)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Reference, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        if let Some(name) = parse_key(&k) {
            out.push((name, Txn::<S>::decode(Table::Reference, &v)?));
        }
    }
    Ok(out)
}
