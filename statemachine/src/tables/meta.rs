//! `Meta`: the counters ([`MetaState`] under `state`) and the Raft adapter's own entries
//! (under `ext/`, opaque to the state machine). Read straight from the store: the state machine
//! loads them when it opens a store or installs a snapshot.

use crate::model::meta::MetaState;
use crate::storage::keys::meta::{EXTERNAL_PREFIX, LOG_FORMAT, STATE};
use crate::storage::{Store, StoreError, Table, Txn};
use crate::wire::log_format::LogFormat;

fn external_key(key: &[u8]) -> Vec<u8> {
    let mut k = EXTERNAL_PREFIX.to_vec();
    k.extend_from_slice(key);
    k
}

/// The counters kept in `store` (an empty store: all zero).
pub(crate) fn load<S: Store + ?Sized>(store: &S) -> Result<MetaState, StoreError> {
    match store.get(Table::Meta, STATE)? {
        Some(bytes) => Txn::<S>::decode(Table::Meta, &bytes),
        None => Ok(MetaState::default()),
    }
}

pub(crate) fn save<S: Store + ?Sized>(txn: &mut Txn<'_, S>, meta: &MetaState) {
    txn.put(Table::Meta, STATE.to_vec(), meta);
}

/// Set (`Some`) or delete an adapter-owned entry.
pub(crate) fn put_external<S: Store + ?Sized>(
    txn: &mut Txn<'_, S>,
    key: &[u8],
    value: Option<&Vec<u8>>,
) {
    match value {
        Some(v) => txn.put_raw(Table::Meta, external_key(key), v.clone()),
        None => txn.delete(Table::Meta, external_key(key)),
    }
}

pub(crate) fn external<S: Store + ?Sized>(
    store: &S,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StoreError> {
    store.get(Table::Meta, &external_key(key))
}

/// The cluster's log format, as its number (absent: 1, the format of every build before it was
/// kept). A number this build does not know is reported as it is: the caller says so.
pub(crate) fn log_format<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<u32, StoreError> {
    Ok(txn.get::<u32>(Table::Meta, LOG_FORMAT)?.unwrap_or(1))
}

pub(crate) fn set_log_format<S: Store + ?Sized>(txn: &mut Txn<'_, S>, format: LogFormat) {
    txn.put(Table::Meta, LOG_FORMAT.to_vec(), &format.number());
}
