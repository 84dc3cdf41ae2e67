//! `Reference`: name → [`ReferenceSnapshot`].

use crate::model::state::ReferenceSnapshot;
use crate::storage::keys::{read_str, Key};
use crate::storage::{Store, StoreError, Table, Txn};
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
