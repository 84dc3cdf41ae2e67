//! The `Rows` table and the indexes derived from each row: `MessageRows`, `LanePending`,
//! `LaneInflight`, `Due`, `Leases` and `DeadRows`.
//!
//! Every index entry of a row is a function of the row alone ([`index_entries`]); saving a row
//! removes the entries of its old version and writes those of the new one. That keeps the
//! indexes exact without any command having to remember which index a transition touches.

use crate::model::ids::{Fence, MessageId, Millis, RowId};
use crate::model::lane::LaneEvent;
use crate::model::row::{Claim, RowStatus, Stage, WorkRow};
use crate::storage::keys::{trailing_u64, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::{lanes, row_retry, tallies, Db};
use crate::wire::outcome::ClaimedRow;

pub(crate) fn row_key(id: RowId) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn message_row_key(message: MessageId, row: RowId) -> Vec<u8> {
    Key::new().u64(message.0).u64(row.0).build()
}

/// `Due`: stage ‖ next_attempt_at ‖ seq, for pending rows (ClaimReady order).
fn due_key(stage: Stage, at: Millis, row: RowId) -> Vec<u8> {
    Key::new().u8(stage.tag()).u64(at).u64(row.0).build()
}

/// `Leases`: lease_expires_at ‖ seq, for inflight rows (ReclaimExpired order).
fn lease_key(expires_at: Millis, row: RowId) -> Vec<u8> {
    Key::new().u64(expires_at).u64(row.0).build()
}

/// `DeadRows`: stage ‖ seq, for dead rows (the dead-letter view and ReplayDead).
fn dead_key(stage: Stage, row: RowId) -> Vec<u8> {
    Key::new().u8(stage.tag()).u64(row.0).build()
}

/// The index entries a row version owns.
fn index_entries(row: &WorkRow) -> Vec<(Table, Vec<u8>)> {
    let lane = row.lane();
    match (&row.status, &row.claim) {
        (RowStatus::Pending, _) => vec![
            (
                Table::LanePending,
                lanes::pending_key(&lane, row.created_at, row.id),
            ),
            (Table::Due, due_key(row.stage, row.next_attempt_at, row.id)),
        ],
        (RowStatus::Inflight, Some(claim)) => vec![
            (Table::LaneInflight, lanes::inflight_key(&lane, row.id)),
            (Table::Leases, lease_key(claim.lease_expires_at, row.id)),
        ],
        (RowStatus::Dead, _) => vec![(Table::DeadRows, dead_key(row.stage, row.id))],
        _ => Vec::new(),
    }
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: RowId,
) -> Result<Option<WorkRow>, StoreError> {
    txn.get(Table::Rows, &row_key(id))
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

/// A new pending row, due now, under the next row id (= seq). `created_at` is left for the
/// caller to stamp ([`crate::rules::fifo::push_row`]) before [`insert`].
pub(crate) fn new_pending(cx: &mut Db<'_, '_>, new: NewRow<'_>) -> WorkRow {
    let id = RowId(cx.meta.next_row_id);
    cx.meta.next_row_id += 1;
    WorkRow {
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
    }
}

/// Store a new row: the row, its index entries and its place among its message's rows.
pub(crate) fn insert(cx: &mut Db<'_, '_>, row: &WorkRow) {
    cx.txn.put_raw(
        Table::MessageRows,
        message_row_key(row.message_id, row.id),
        Vec::new(),
    );
    write(cx, None, row);
}

/// Persist a new version of a row and move its index entries.
pub(crate) fn save(cx: &mut Db<'_, '_>, before: &WorkRow, after: &WorkRow) {
    write(cx, Some(before), after);
}

fn count(cx: &mut Db<'_, '_>, row: &WorkRow, add: bool) {
    let slot = &mut cx.meta.row_counts[row.stage as usize][row.status as usize];
    *slot = if add {
        slot.saturating_add(1)
    } else {
        slot.saturating_sub(1)
    };
}

fn write(cx: &mut Db<'_, '_>, before: Option<&WorkRow>, after: &WorkRow) {
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
    // Only a live row has a `fail` policy to forget: a write between two terminal states (a
    // retention blank) adds no delete for a key that is already gone.
    if before.is_some_and(is_live) && !is_live(after) {
        row_retry::forget(cx, after.id);
    }
    cx.txn.put(Table::Rows, row_key(after.id), after);
}

fn is_live(row: &WorkRow) -> bool {
    matches!(row.status, RowStatus::Pending | RowStatus::Inflight)
}

/// Remove a consumed row and all its index entries.
pub(crate) fn remove(cx: &mut Db<'_, '_>, row: &WorkRow) {
    count(cx, row, false);
    for (table, key) in index_entries(row) {
        cx.txn.delete(table, key);
    }
    cx.txn
        .delete(Table::MessageRows, message_row_key(row.message_id, row.id));
    if is_live(row) {
        row_retry::forget(cx, row.id);
    }
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

/// Claim a pending row for `owner` under `fence`: inflight, one more attempt, leased until
/// `t + ttl_ms`. Returns the row as handed to the worker.
pub(crate) fn claim(
    cx: &mut Db<'_, '_>,
    row: &WorkRow,
    owner: &str,
    ttl_ms: u64,
    fence: Fence,
) -> Result<ClaimedRow, StoreError> {
    // A row claimed again (its lease ran out, or it was failed and came back): a redelivery,
    // counted per lane for `/metrics`.
    if row.attempts > 0 {
        tallies::add_lane(cx, LaneEvent::Redelivered, &row.lane())?;
    }
    let mut after = row.clone();
    after.status = RowStatus::Inflight;
    after.attempts = after.attempts.saturating_add(1);
    after.claim = Some(Claim {
        owner: owner.to_string(),
        lease_expires_at: cx.t.saturating_add(ttl_ms),
        fence,
    });
    after.last_fence = Some(fence);
    after.updated_at = cx.t;
    save(cx, row, &after);
    Ok(claimed(after, fence))
}

/// A claimed row as the worker sees it.
pub(crate) fn claimed(row: WorkRow, fence: Fence) -> ClaimedRow {
    ClaimedRow {
        lease_expires_at: row.claim.as_ref().map_or(0, |c| c.lease_expires_at),
        row_id: row.id,
        message_id: row.message_id,
        stage: row.stage,
        channel_id: row.channel_id,
        destination_name: row.destination_name,
        handler_name: row.handler_name,
        payload: row.payload,
        attempts: row.attempts,
        fence,
        created_at: Some(row.created_at),
    }
}

/// Extend an inflight row's lease to at least `t + ttl_ms` (never shortened), keeping its
/// owner, fence and attempt.
pub(crate) fn extend_lease(
    cx: &mut Db<'_, '_>,
    row: &WorkRow,
    claim: &Claim,
    ttl_ms: u64,
) -> WorkRow {
    let mut after = row.clone();
    after.claim = Some(Claim {
        lease_expires_at: claim.lease_expires_at.max(cx.t.saturating_add(ttl_ms)),
        ..claim.clone()
    });
    save(cx, row, &after);
    after
}

/// Return a row to pending, due at `due`, clearing its claim (lease expiry, replay, retry).
pub(crate) fn to_pending(cx: &mut Db<'_, '_>, row: &WorkRow, due: Millis) -> WorkRow {
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
    cx: &mut Db<'_, '_>,
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

/// Row ids from the keys of an index scan (each key ends with the row id).
fn ids<'a>(
    scan: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), StoreError>> + 'a,
) -> impl Iterator<Item = Result<RowId, StoreError>> + 'a {
    scan.filter_map(|item| match item {
        Ok((key, _)) => trailing_u64(&key).map(|id| Ok(RowId(id))),
        Err(e) => Some(Err(e)),
    })
}

/// Pending rows of `stage` due at `t` or earlier, earliest `next_attempt_at` first (keys below
/// stage ‖ (t + 1)): what ClaimReady hands out.
pub(crate) fn due<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    stage: Stage,
    t: Millis,
) -> Result<impl Iterator<Item = Result<RowId, StoreError>> + 'a, StoreError> {
    let start = Key::new().u8(stage.tag()).build();
    let end = Key::new().u8(stage.tag()).u64(t.saturating_add(1)).build();
    Ok(ids(txn.scan(
        Table::Due,
        &start,
        Some(&end),
        Direction::Forward,
    )?))
}

/// The earliest `next_attempt_at` after `t` among the pending rows of `stage` (the first key
/// at or above stage ‖ (t + 1)): when a row of the stage that is backing off becomes due.
pub(crate) fn next_due_after<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    stage: Stage,
    t: Millis,
) -> Result<Option<Millis>, StoreError> {
    let start = Key::new().u8(stage.tag()).u64(t.saturating_add(1)).build();
    let end = Key::new().u8(stage.tag().saturating_add(1)).build();
    let mut scan = txn.scan(Table::Due, &start, Some(&end), Direction::Forward)?;
    match scan.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        // stage (1 byte) ‖ next_attempt_at (8 bytes) ‖ row id (8 bytes)
        Some(Ok((key, _))) => Ok(key
            .get(1..9)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)),
    }
}

/// Inflight rows whose lease ended strictly before `t` (keys below t ‖ 0).
pub(crate) fn leases_before<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    t: Millis,
) -> Result<Vec<RowId>, StoreError> {
    let end = Key::new().u64(t).build();
    ids(txn.scan(Table::Leases, &[], Some(&end), Direction::Forward)?).collect()
}

/// Every inflight row, in id order.
pub(crate) fn all_inflight<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<RowId>, StoreError> {
    let mut out: Vec<RowId> =
        ids(txn.scan(Table::Leases, &[], None, Direction::Forward)?).collect::<Result<_, _>>()?;
    out.sort();
    Ok(out)
}

/// Dead rows of `stage`, oldest first.
pub(crate) fn dead<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    stage: Stage,
) -> Result<impl Iterator<Item = Result<RowId, StoreError>> + 'a, StoreError> {
    let prefix = Key::new().u8(stage.tag()).build();
    Ok(ids(txn.scan_prefix(
        Table::DeadRows,
        &prefix,
        Direction::Forward,
    )?))
}
