//! The pause rule (docs/SPEC.md §4.9): an outbound row of a paused destination is handed to no
//! one. Every path that hands rows out asks here (ClaimReady and its probe for waiting claims,
//! the FIFO claims and their probes, the compound claims built on them), so a pause holds
//! whichever way a worker asks. Rows already out finish as they would; nothing else changes.

use crate::model::lane::LaneKey;
use crate::model::row::{Stage, WorkRow};
use crate::storage::{Store, StoreError, Txn};
use crate::tables::paused;

/// Whether `row` is held back by a pause of its destination.
pub(crate) fn holds_back<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    row: &WorkRow,
) -> Result<bool, StoreError> {
    match (row.stage, row.destination_name.as_deref()) {
        (Stage::Outbound, Some(destination)) => Ok(paused::get(txn, destination)?.is_some()),
        _ => Ok(false),
    }
}

/// Whether the FIFO lane `lane` is held back: an outbound lane is its destination's.
pub(crate) fn lane_paused<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<bool, StoreError> {
    match lane.stage {
        Stage::Outbound => Ok(paused::get(txn, &lane.name)?.is_some()),
        _ => Ok(false),
    }
}
