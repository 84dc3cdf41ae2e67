//! `LeaseOwners` (lease owner name or engine node id → principal): who a name belongs to
//! (`crate::rules::lease_owner`).

use crate::storage::keys::Key;
use crate::storage::{Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(owner: &str) -> Vec<u8> {
    Key::new().str(owner).build()
}

/// The principal `owner` belongs to, if it was ever used.
pub(crate) fn principal<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    owner: &str,
) -> Result<Option<String>, StoreError> {
    txn.get(Table::LeaseOwners, &key(owner))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, owner: &str, principal: &str) {
    cx.txn
        .put(Table::LeaseOwners, key(owner), &principal.to_string());
}

/// Forget whose `owner` is (an admin's release, docs/SPEC.md §9.8).
pub(crate) fn delete(cx: &mut Db<'_, '_>, owner: &str) {
    cx.txn.delete(Table::LeaseOwners, key(owner));
}
