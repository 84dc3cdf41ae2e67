//! `Tallies` (name → u64): running totals the state machine keeps about itself, such as how
//! many rows died of lease expiries (`crate::rules::retry::LEASE_EXPIRED_TALLY`). Kept in the
//! replicated state, not in a node's memory, so every node's `/metrics` reports the same count
//! and it survives restarts and snapshots.

use crate::storage::keys::{read_str, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;
use std::collections::BTreeMap;

fn key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

/// The tally `name` (0 until first counted).
pub(crate) fn get<S: Store + ?Sized>(txn: &Txn<'_, S>, name: &str) -> Result<u64, StoreError> {
    Ok(txn.get::<u64>(Table::Tallies, &key(name))?.unwrap_or(0))
}

/// Add `n` to the tally `name` (saturating).
pub(crate) fn add(cx: &mut Db<'_, '_>, name: &str, n: u64) -> Result<(), StoreError> {
    let value = get(cx.txn, name)?.saturating_add(n);
    cx.txn.put(Table::Tallies, key(name), &value);
    Ok(())
}

/// Every tally, by name.
pub(crate) fn all<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut out = BTreeMap::new();
    for item in txn.scan(Table::Tallies, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        let Some(name) = read_str(&k, &mut 0) else {
            continue;
        };
        out.insert(name, Txn::<S>::decode(Table::Tallies, &v)?);
    }
    Ok(out)
}
