//! `Approvals`: approval id → [`Approval`].

use crate::model::approval::Approval;
use crate::model::ids::ApprovalId;
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

pub(crate) fn delete(cx: &mut Db<'_, '_>, id: ApprovalId) {
    cx.txn.delete(Table::Approvals, key(id));
}

/// Every approval, by id.
pub(crate) fn all<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<Approval>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Approvals, &[], None, Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::Approvals, &item?.1)?);
    }
    Ok(out)
}
