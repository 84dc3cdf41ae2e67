//! `RowRetry` (row id → RetryPolicy): the retry policy of a live row's last `fail`.
//!
//! Why a row remembers it: a `fail` carries the worker's policy, and messagefoundry's default
//! one retries forever. A lease that later expires on that row (its worker crashed) was judged
//! by the config's policy alone, so a row the worker had been retrying through a long outage
//! died at the first crash once its attempts passed the config's limit ("lease expired on
//! attempt 13 of 10"). With this table a lease expiry is judged by the policy the row is being
//! retried under ([`crate::rules::retry::expire_lease`]).
//!
//! Only live rows have an entry: [`crate::tables::rows`] drops it when a row ends or is
//! consumed, so the table never outgrows the queue.

use crate::model::config::RetryPolicy;
use crate::model::ids::RowId;
use crate::storage::keys::Key;
use crate::storage::{Store, StoreError, Table, Txn};
use crate::tables::Db;

fn key(id: RowId) -> Vec<u8> {
    Key::new().u64(id.0).build()
}

/// The policy of row `id`'s last `fail`, while the row is live.
pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: RowId,
) -> Result<Option<RetryPolicy>, StoreError> {
    txn.get::<RetryPolicy>(Table::RowRetry, &key(id))
}

/// Remember `policy` as row `id`'s (a `fail` put it back to pending under it).
pub(crate) fn put(cx: &mut Db<'_, '_>, id: RowId, policy: &RetryPolicy) {
    cx.txn.put(Table::RowRetry, key(id), policy);
}

/// Forget row `id`'s policy (it ended or was consumed).
pub(crate) fn forget(cx: &mut Db<'_, '_>, id: RowId) {
    cx.txn.delete(Table::RowRetry, key(id));
}
