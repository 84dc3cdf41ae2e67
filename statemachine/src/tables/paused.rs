//! `PausedDestinations`: destination → [`PausedDestination`] (docs/SPEC.md §4.9). The rule that
//! reads it is `rules::pause`.

use crate::model::destination::PausedDestination;
use crate::storage::keys::{read_str, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(destination: &str) -> Vec<u8> {
    Key::new().str(destination).build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    destination: &str,
) -> Result<Option<PausedDestination>, StoreError> {
    txn.get(Table::PausedDestinations, &key(destination))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, destination: &str, paused: &PausedDestination) {
    cx.txn
        .put(Table::PausedDestinations, key(destination), paused);
}

pub(crate) fn delete(cx: &mut Db<'_, '_>, destination: &str) {
    cx.txn.delete(Table::PausedDestinations, key(destination));
}

/// Every paused destination, in name order.
pub(crate) fn all<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<(String, PausedDestination)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::PausedDestinations, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        if let Some(name) = read_str(&k, &mut 0) {
            out.push((name, Txn::<S>::decode(Table::PausedDestinations, &v)?));
        }
    }
    Ok(out)
}
