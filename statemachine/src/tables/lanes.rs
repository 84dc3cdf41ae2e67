//! The lane tables. `Lanes`: lane → [`LaneState`]. `LanePending`: lane ‖ created_at ‖ seq → ()
//! for pending rows, so a lane's pending rows sort in lane order and its head is the first key
//! of its prefix (one seek, O(log n) in the lane's depth). `LaneInflight`: lane ‖ seq → () for
//! inflight rows. The order itself (and who may claim from a lane) is
//! [`crate::rules::fifo`]'s; this module only encodes it.

use crate::model::ids::{Millis, RowId};
use crate::model::lane::{LaneKey, LaneState};
use crate::model::row::Stage;
use crate::storage::keys::{read_str, read_u64, trailing_u64, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

/// The key prefix shared by every index entry of this lane (and its `Lanes` key).
fn prefix(lane: &LaneKey) -> Vec<u8> {
    Key::new().u8(lane.stage.tag()).str(&lane.name).build()
}

pub(crate) fn pending_key(lane: &LaneKey, created_at: Millis, row: RowId) -> Vec<u8> {
    Key::new()
        .bytes(&prefix(lane))
        .u64(created_at)
        .u64(row.0)
        .build()
}

pub(crate) fn inflight_key(lane: &LaneKey, row: RowId) -> Vec<u8> {
    Key::new().bytes(&prefix(lane)).u64(row.0).build()
}

pub(crate) fn state<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<LaneState, StoreError> {
    Ok(txn.get(Table::Lanes, &prefix(lane))?.unwrap_or_default())
}

pub(crate) fn put_state(cx: &mut Db<'_, '_>, lane: &LaneKey, state: &LaneState) {
    cx.txn.put(Table::Lanes, prefix(lane), state);
}

/// The first pending row of the lane in lane order: one seek.
pub(crate) fn first_pending<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<Option<RowId>, StoreError> {
    let mut it = txn.scan_prefix(Table::LanePending, &prefix(lane), Direction::Forward)?;
    match it.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        Some(Ok((key, _))) => Ok(trailing_u64(&key).map(RowId)),
    }
}

/// The lane's pending rows in lane order, lazily.
pub(crate) fn pending<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    lane: &LaneKey,
) -> Result<impl Iterator<Item = Result<RowId, StoreError>> + 'a, StoreError> {
    let scan = txn.scan_prefix(Table::LanePending, &prefix(lane), Direction::Forward)?;
    Ok(scan.filter_map(|item| match item {
        Ok((key, _)) => trailing_u64(&key).map(|id| Ok(RowId(id))),
        Err(e) => Some(Err(e)),
    }))
}

/// Inflight rows of the lane, in seq order.
pub(crate) fn inflight<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<Vec<RowId>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::LaneInflight, &prefix(lane), Direction::Forward)? {
        let (key, _) = item?;
        if let Some(id) = trailing_u64(&key) {
            out.push(RowId(id));
        }
    }
    Ok(out)
}

/// The lane a `Lanes` key names (`None`: not a lane key).
fn lane_of_key(key: &[u8]) -> Option<LaneKey> {
    let stage = key
        .first()
        .and_then(|tag| Stage::ALL.get(*tag as usize))
        .copied()?;
    let name = read_str(key, &mut 1)?;
    Some(LaneKey::new(stage, &name))
}

/// Every lane that has a record, with it, in key order.
pub(crate) fn all_states<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<Vec<(LaneKey, LaneState)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::Lanes, &[], None, Direction::Forward)? {
        let (key, value) = item?;
        if let Some(lane) = lane_of_key(&key) {
            out.push((lane, Txn::<S>::decode(Table::Lanes, &value)?));
        }
    }
    Ok(out)
}

/// The lanes that have a record, in key order (stage, then name), of `stage` only when given,
/// strictly after `after` when given, lazily: a listing pages through them.
pub(crate) fn keys_after<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    stage: Option<Stage>,
    after: Option<&LaneKey>,
) -> Result<impl Iterator<Item = Result<LaneKey, StoreError>> + 'a, StoreError> {
    let stage_prefix = stage.map(|s| Key::new().u8(s.tag()).build());
    // The smallest key past `after`'s own: no other lane's key extends it (names are
    // length-prefixed), so appending a zero byte skips exactly that lane.
    let past_after = after.map(|lane| {
        let mut key = prefix(lane);
        key.push(0);
        key
    });
    let start = match (&stage_prefix, past_after) {
        (Some(p), Some(a)) => a.max(p.clone()),
        (Some(p), None) => p.clone(),
        (None, Some(a)) => a,
        (None, None) => Vec::new(),
    };
    let end = stage_prefix
        .as_deref()
        .and_then(crate::storage::keys::prefix_end);
    let scan = txn.scan(Table::Lanes, &start, end.as_deref(), Direction::Forward)?;
    Ok(scan.filter_map(|item| match item {
        Ok((key, _)) => lane_of_key(&key).map(Ok),
        Err(e) => Some(Err(e)),
    }))
}

/// Every live row (pending or inflight) of `stage`, in id order.
pub(crate) fn live_of_stage<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    stage: Stage,
) -> Result<Vec<RowId>, StoreError> {
    let prefix = Key::new().u8(stage.tag()).build();
    let mut out = Vec::new();
    for table in [Table::LanePending, Table::LaneInflight] {
        for item in txn.scan_prefix(table, &prefix, Direction::Forward)? {
            let (key, _) = item?;
            if let Some(id) = trailing_u64(&key) {
                out.push(RowId(id));
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Pending count and the head's `created_at`.
pub(crate) fn depth<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<(u64, Option<Millis>), StoreError> {
    let prefix = prefix(lane);
    let mut count = 0u64;
    let mut oldest = None;
    for item in txn.scan_prefix(Table::LanePending, &prefix, Direction::Forward)? {
        let (key, _) = item?;
        if oldest.is_none() {
            oldest = read_u64(&key, prefix.len());
        }
        count += 1;
    }
    Ok((count, oldest))
}
