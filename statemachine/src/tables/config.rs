//! `Config`: version → [`ConfigVersion`], every version kept; the newest is current.

use crate::model::config::{ConfigDoc, ConfigVersion};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

/// Version 0: the empty document, current until the first change.
fn initial() -> ConfigVersion {
    ConfigVersion {
        version: 0,
        doc: ConfigDoc::default(),
        set_at: 0,
        set_by: String::new(),
    }
}

/// The current version (version 0, the empty document, until the first change).
pub(crate) fn current_version<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<ConfigVersion, StoreError> {
    match txn
        .scan(Table::Config, &[], None, Direction::Reverse)?
        .next()
    {
        Some(item) => Txn::<S>::decode(Table::Config, &item?.1),
        None => Ok(initial()),
    }
}

pub(crate) fn current<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<ConfigDoc, StoreError> {
    Ok(current_version(txn)?.doc)
}

pub(crate) fn version<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    v: u64,
) -> Result<Option<ConfigVersion>, StoreError> {
    if v == 0 {
        return Ok(Some(initial()));
    }
    txn.get(Table::Config, &v.to_be_bytes())
}

/// Store a new version under its number.
pub(crate) fn put(cx: &mut Db<'_, '_>, record: &ConfigVersion) {
    cx.txn
        .put(Table::Config, record.version.to_be_bytes().to_vec(), record);
}
