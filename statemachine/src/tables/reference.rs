//! `Reference`: name → [`ReferenceSnapshot`]; `ReferenceLabels`: name → the text version a
//! caller gave the snapshot (a WriteReferenceSnapshot with a text label).

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

/// The text version of a snapshot, if its writer gave one.
pub(crate) fn label<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    name: &str,
) -> Result<Option<String>, StoreError> {
    txn.get(Table::ReferenceLabels, &key(name))
}

/// Set (`Some`) or clear (`None`) a snapshot's text version.
pub(crate) fn set_label(
    cx: &mut Db<'_, '_>,
    name: &str,
    label: Option<&str>,
) -> Result<(), StoreError> {
    match label {
        Some(l) => cx
            .txn
            .put(Table::ReferenceLabels, key(name), &l.to_string()),
        None => {
            if label_present(cx.txn, name)? {
                cx.txn.delete(Table::ReferenceLabels, key(name));
            }
        }
    }
    Ok(())
}

fn label_present<S: Store + ?Sized>(txn: &Txn<'_, S>, name: &str) -> Result<bool, StoreError> {
    Ok(txn.get_raw(Table::ReferenceLabels, &key(name))?.is_some())
}
