//! `Approvals`: approval id → [`Approval`]; `ApprovalKeys` (the caller's key → id) and
//! `ApprovalKeyOf` (id → key) for approvals a caller named (CreateApproval with named terms).

use crate::model::approval::Approval;
use crate::model::ids::ApprovalId;
use crate::storage::keys::Key;
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(id: ApprovalId) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: ApprovalId,
) -> Result<Option<Approval>, StoreError> {
    txn.get(Table::Approvals, &key(id))
}

/// Store an approval under its own id.
pub(crate) fn put(cx: &mut Db<'_, '_>, approval: &Approval) {
    cx.txn.put(Table::Approvals, key(approval.id), approval);
}

/// Delete an approval, and its caller's key if it has one.
pub(crate) fn delete(cx: &mut Db<'_, '_>, id: ApprovalId) -> Result<(), StoreError> {
    cx.txn.delete(Table::Approvals, key(id));
    if let Some(caller) = key_of(cx.txn, id)? {
        cx.txn.delete(Table::ApprovalKeys, caller_key(&caller));
        cx.txn.delete(Table::ApprovalKeyOf, key(id));
    }
    Ok(())
}

fn caller_key(k: &str) -> Vec<u8> {
    Key::new().str(k).build()
}

/// The approval the caller named `k`.
pub(crate) fn id_by_key<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    k: &str,
) -> Result<Option<ApprovalId>, StoreError> {
    txn.get(Table::ApprovalKeys, &caller_key(k))
}

/// The caller's key of an approval, if it was created with one.
pub(crate) fn key_of<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: ApprovalId,
) -> Result<Option<String>, StoreError> {
    txn.get(Table::ApprovalKeyOf, &key(id))
}

pub(crate) fn put_key(cx: &mut Db<'_, '_>, k: &str, id: ApprovalId) {
    cx.txn.put(Table::ApprovalKeys, caller_key(k), &id);
    cx.txn.put(Table::ApprovalKeyOf, key(id), &k.to_string());
}

/// Every approval, by id.
pub(crate) fn all<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<Approval>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Approvals, &[], None, Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::Approvals, &item?.1)?);
    }
    Ok(out)
}
