//! `EngineNodes` (node id → [`NodeRecord`]), `Leadership` (group → [`LeaderLease`]) and
//! `Counters` (name → u64): the engine coordination of docs/SPEC.md §15.

use crate::model::coordination::{LeaderLease, NodeRecord};
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

pub(crate) fn node<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    node_id: &str,
) -> Result<Option<NodeRecord>, StoreError> {
    txn.get(Table::EngineNodes, &key(node_id))
}

pub(crate) fn put_node(cx: &mut Db<'_, '_>, record: &NodeRecord) {
    cx.txn.put(Table::EngineNodes, key(&record.node_id), record);
}

/// Every registered node, by node id.
pub(crate) fn nodes<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<NodeRecord>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::EngineNodes, &[], None, Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::EngineNodes, &item?.1)?);
    }
    Ok(out)
}

pub(crate) fn leader<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    group: &str,
) -> Result<Option<LeaderLease>, StoreError> {
    txn.get(Table::Leadership, &key(group))
}

pub(crate) fn put_leader(cx: &mut Db<'_, '_>, group: &str, lease: &LeaderLease) {
    cx.txn.put(Table::Leadership, key(group), lease);
}

pub(crate) fn drop_leader(cx: &mut Db<'_, '_>, group: &str) {
    cx.txn.delete(Table::Leadership, key(group));
}

pub(crate) fn counter<S: Store + ?Sized>(txn: &Txn<'_, S>, name: &str) -> Result<u64, StoreError> {
    Ok(txn.get::<u64>(Table::Counters, &key(name))?.unwrap_or(0))
}

pub(crate) fn set_counter(cx: &mut Db<'_, '_>, name: &str, value: u64) {
    cx.txn.put(Table::Counters, key(name), &value);
}

/// Every group's leadership lease as stored (live or expired), by group name.
pub(crate) fn leaders<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<(String, LeaderLease)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Leadership, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        if let Some(group) = crate::storage::keys::read_str(&k, &mut 0) {
            out.push((group, Txn::<S>::decode(Table::Leadership, &v)?));
        }
    }
    Ok(out)
}

/// The groups whose leadership `node_id` holds (live or expired).
pub(crate) fn groups_led_by<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    node_id: &str,
) -> Result<Vec<String>, StoreError> {
    Ok(leaders(txn)?
        .into_iter()
        .filter(|(_, lease)| lease.owner == node_id)
        .map(|(group, _)| group)
        .collect())
}
