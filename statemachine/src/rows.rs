//! Persistence of work rows and the indexes derived from them.
//!
//! Every index entry of a row is a function of the row alone ([`index_entries`]); saving a row
//! removes the entries of its old version and writes those of the new one. That keeps the
//! indexes exact without any command having to remember which index a transition touches.

use crate::command::Rejection;
use crate::ids::{MessageId, Millis, RowId};
use crate::keys::{trailing_u64, Key};
use crate::lane;
use crate::machine::{ApplyResult, Ctx};
use crate::row::{RowStatus, Stage, WorkRow};
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;

pub(crate) fn row_key(id: RowId) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn message_row_key(message: MessageId, row: RowId) -> Vec<u8> {
    Key::new().u64(message.0).u64(row.0).build()
}

/// The index entries a row version owns.
fn index_entries(row: &WorkRow) -> Vec<(Table, Vec<u8>)> {
    let lane = row.lane();
    match (&row.status, &row.claim) {
        (RowStatus::Pending, _) => vec![
            (Table::LanePending, lane.pending_key(row.created_at, row.id)),
            (
                Table::Due,
                Key::new()
                    .u8(row.stage.tag())
                    .u64(row.next_attempt_at)
                    .u64(row.id.0)
                    .build(),
            ),
        ],
        (RowStatus::Inflight, Some(claim)) => vec![
            (Table::LaneInflight, lane.inflight_key(row.id)),
            (
                Table::Leases,
                Key::new().u64(claim.lease_expires_at).u64(row.id.0).build(),
            ),
        ],
        (RowStatus::Dead, _) => vec![(
            Table::DeadRows,
            Key::new().u8(row.stage.tag()).u64(row.id.0).build(),
        )],
        _ => Vec::new(),
    }
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: RowId,
) -> Result<Option<WorkRow>, StoreError> {
    txn.get(Table::Rows, &row_key(id))
}

/// Load a row or reject with `UnknownRow`.
pub(crate) fn load(cx: &Ctx<'_, '_>, id: RowId) -> ApplyResult<WorkRow> {
    get(cx.txn, id)?.ok_or_else(|| Rejection::UnknownRow(id).into())
}

/// A row id that was handed out but whose row no longer exists was consumed by a handoff.
pub(crate) fn was_consumed(cx: &Ctx<'_, '_>, id: RowId) -> bool {
    id.0 < cx.meta.next_row_id
}

/// What a new row needs; the rest is derived.
pub(crate) struct NewRow<'a> {
    pub message_id: MessageId,
    pub stage: Stage,
    pub channel_id: &'a str,
    pub destination_name: Option<&'a str>,
    pub handler_name: Option<&'a str>,
    pub payload: &'a str,
}

/// Insert a pending row, due now, at the tail of its lane.
pub(crate) fn insert(cx: &mut Ctx<'_, '_>, new: NewRow<'_>) -> ApplyResult<RowId> {
    let id = RowId(cx.meta.next_row_id);
    cx.meta.next_row_id += 1;
    let mut row = WorkRow {
        id,
        message_id: new.message_id,
        stage: new.stage,
        channel_id: new.channel_id.to_string(),
        destination_name: new.destination_name.map(str::to_string),
        handler_name: new.handler_name.map(str::to_string),
        payload: new.payload.to_string(),
        status: RowStatus::Pending,
        attempts: 0,
        next_attempt_at: cx.t,
        last_error: None,
        created_at: 0,
        updated_at: cx.t,
        claim: None,
        last_fence: None,
    };
    row.created_at = lane::stamp_created_at(cx, &row.lane())?;
    cx.txn.put_raw(
        Table::MessageRows,
        message_row_key(row.message_id, id),
        Vec::new(),
    );
    write(cx, None, &row);
    Ok(id)
}

/// Persist a new version of a row and move its index entries.
pub(crate) fn save(cx: &mut Ctx<'_, '_>, before: &WorkRow, after: &WorkRow) {
    write(cx, Some(before), after);
}

fn count(cx: &mut Ctx<'_, '_>, row: &WorkRow, add: bool) {
    let slot = &mut cx.meta.row_counts[row.stage as usize][row.status as usize];
    *slot = if add {
        slot.saturating_add(1)
    } else {
        slot.saturating_sub(1)
    };
}

fn write(cx: &mut Ctx<'_, '_>, before: Option<&WorkRow>, after: &WorkRow) {
    let new_entries = index_entries(after);
    if let Some(before) = before {
        count(cx, before, false);
        for entry in index_entries(before) {
            if !new_entries.contains(&entry) {
                cx.txn.delete(entry.0, entry.1);
            }
        }
    }
    count(cx, after, true);
    for (table, key) in new_entries {
        cx.txn.put_raw(table, key, Vec::new());
    }
    cx.txn.put(Table::Rows, row_key(after.id), after);
}

/// Remove a consumed row and all its index entries.
pub(crate) fn remove(cx: &mut Ctx<'_, '_>, row: &WorkRow) {
    count(cx, row, false);
    for (table, key) in index_entries(row) {
        cx.txn.delete(table, key);
    }
    cx.txn
        .delete(Table::MessageRows, message_row_key(row.message_id, row.id));
    cx.txn.delete(Table::Rows, row_key(row.id));
}

/// Every row of a message, in seq order.
pub(crate) fn of_message<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Vec<WorkRow>, StoreError> {
    let prefix = message.to_be_bytes();
    let mut ids = Vec::new();
    for item in txn.scan_prefix(Table::MessageRows, &prefix, Direction::Forward)? {
        let (key, _) = item?;
        if let Some(id) = trailing_u64(&key) {
            ids.push(RowId(id));
        }
    }
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(row) = get(txn, id)? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Return a row to pending, due at `due`, clearing its claim (lease expiry, replay, retry).
pub(crate) fn to_pending(cx: &mut Ctx<'_, '_>, row: &WorkRow, due: Millis) -> WorkRow {
    let mut after = row.clone();
    after.status = RowStatus::Pending;
    after.claim = None;
    after.next_attempt_at = due;
    after.updated_at = cx.t;
    save(cx, row, &after);
    after
}

/// End a row with a terminal status, clearing its claim.
pub(crate) fn finish(
    cx: &mut Ctx<'_, '_>,
    row: &WorkRow,
    status: RowStatus,
    error: Option<&str>,
) -> WorkRow {
    let mut after = row.clone();
    after.status = status;
    after.claim = None;
    after.updated_at = cx.t;
    if let Some(e) = error {
        after.last_error = Some(e.to_string());
    }
    save(cx, row, &after);
    after
}
