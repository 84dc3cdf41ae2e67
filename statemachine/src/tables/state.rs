//! Transform state: `State` (namespace ‖ key → [`StateEntry`]) and `StateNamespaces`
//! (namespace → version).

use crate::model::ids::Millis;
use crate::model::state::StateEntry;
use crate::storage::keys::{read_str, read_u32, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;
use std::collections::BTreeSet;

pub(crate) fn key(namespace: &str, key: &str) -> Vec<u8> {
    Key::new().str(namespace).str(key).build()
}

fn namespace_key(namespace: &str) -> Vec<u8> {
    Key::new().str(namespace).build()
}

/// `(namespace, key)` of a `State` key.
pub(crate) fn parse_key(bytes: &[u8]) -> Option<(String, String)> {
    let mut at = 0;
    Some((read_str(bytes, &mut at)?, read_str(bytes, &mut at)?))
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    namespace: &str,
    k: &str,
) -> Result<Option<StateEntry>, StoreError> {
    txn.get(Table::State, &key(namespace, k))
}

pub(crate) fn put(cx: &mut Db<'_, '_>, namespace: &str, k: &str, entry: &StateEntry) {
    cx.txn.put(Table::State, key(namespace, k), entry);
}

pub(crate) fn namespace_version<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    namespace: &str,
) -> Result<u64, StoreError> {
    Ok(txn
        .get(Table::StateNamespaces, &namespace_key(namespace))?
        .unwrap_or(0))
}

/// Increase a namespace's version by one.
pub(crate) fn bump_namespace(cx: &mut Db<'_, '_>, namespace: &str) -> Result<u64, StoreError> {
    let version = namespace_version(cx.txn, namespace)?.saturating_add(1);
    cx.txn
        .put(Table::StateNamespaces, namespace_key(namespace), &version);
    Ok(version)
}

/// Delete every entry set before `older_than`; returns how many, and their namespaces.
pub(crate) fn delete_older(
    cx: &mut Db<'_, '_>,
    older_than: Millis,
) -> Result<(u64, BTreeSet<String>), StoreError> {
    let mut doomed = Vec::new();
    let mut namespaces = BTreeSet::new();
    for item in cx.txn.scan(Table::State, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        let entry: StateEntry = Txn::<dyn Store>::decode(Table::State, &v)?;
        if entry.set_at < older_than {
            // Key = len ‖ namespace ‖ len ‖ key.
            let ns_len = read_u32(&k, 0).unwrap_or(0) as usize;
            if let Some(ns) = k
                .get(4..4 + ns_len)
                .and_then(|b| std::str::from_utf8(b).ok())
            {
                namespaces.insert(ns.to_string());
            }
            doomed.push(k);
        }
    }
    let count = doomed.len() as u64;
    for k in doomed {
        cx.txn.delete(Table::State, k);
    }
    Ok((count, namespaces))
}

/// Every namespace that has a version, with it, in name order.
pub(crate) fn namespaces<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<(String, u64)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::StateNamespaces, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        if let Some(ns) = read_str(&k, &mut 0) {
            out.push((ns, Txn::<S>::decode(Table::StateNamespaces, &v)?));
        }
    }
    Ok(out)
}

/// Every entry of `namespace`, in key order.
pub(crate) fn entries<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    namespace: &str,
) -> Result<Vec<(String, StateEntry)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::State, &namespace_key(namespace), Direction::Forward)? {
        let (k, v) = item?;
        if let Some((_, key)) = parse_key(&k) {
            out.push((key, Txn::<S>::decode(Table::State, &v)?));
        }
    }
    Ok(out)
}
