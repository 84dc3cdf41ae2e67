//! FIFO lanes: their ordering, their leases and their heads. The one place FIFO rules live.
//!
//! A lane is `(stage, name)`. Pending rows of a lane are kept in the `LanePending` index under
//! `lane ‖ created_at ‖ seq`, so the head is the first key of the lane's prefix: one seek,
//! O(log n) in the lane's depth. `created_at` of a new row is clamped up to the lane's maximum,
//! so the order survives any clock step of a proposer.

use crate::ids::{Millis, RowId};
use crate::keys::{trailing_u64, Key};
use crate::machine::{ApplyResult, Ctx};
use crate::row::Stage;
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use serde::{Deserialize, Serialize};

/// `"{stage}:{name}"` as a type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LaneKey {
    pub stage: Stage,
    pub name: String,
}

impl LaneKey {
    pub fn new(stage: Stage, name: &str) -> Self {
        Self {
            stage,
            name: name.to_string(),
        }
    }

    /// The key prefix shared by every index entry of this lane.
    pub fn prefix(&self) -> Vec<u8> {
        Key::new().u8(self.stage.tag()).str(&self.name).build()
    }

    pub fn pending_key(&self, created_at: Millis, row: RowId) -> Vec<u8> {
        Key::new()
            .bytes(&self.prefix())
            .u64(created_at)
            .u64(row.0)
            .build()
    }

    pub fn inflight_key(&self, row: RowId) -> Vec<u8> {
        Key::new().bytes(&self.prefix()).u64(row.0).build()
    }
}

impl std::fmt::Display for LaneKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.stage.as_str(), self.name)
    }
}

/// Who owns a lane until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneLease {
    pub owner: String,
    pub expires_at: Millis,
}

impl LaneLease {
    /// Live through `expires_at` inclusive, exactly like a row lease (which ReclaimExpired and
    /// ClaimNextFifo step 2 only take back once `lease_expires_at < t`). Were the lane free at
    /// `t == expires_at` while its head's row lease is still live, a new owner would be handed
    /// the next row past the stranded head.
    pub fn is_live(&self, t: Millis) -> bool {
        self.expires_at >= t
    }
}

/// Per-lane bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneState {
    /// The largest `created_at` given to a row of this lane.
    pub max_created_at: Millis,
    pub lease: Option<LaneLease>,
}

pub(crate) fn load_state<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<LaneState, StoreError> {
    Ok(txn.get(Table::Lanes, &lane.prefix())?.unwrap_or_default())
}

fn save_state(cx: &mut Ctx<'_, '_>, lane: &LaneKey, state: &LaneState) {
    cx.txn.put(Table::Lanes, lane.prefix(), state);
}

/// The `created_at` for a new row of `lane` at time `t`: never earlier than the lane's newest.
pub(crate) fn stamp_created_at(cx: &mut Ctx<'_, '_>, lane: &LaneKey) -> ApplyResult<Millis> {
    let mut state = load_state(cx.txn, lane)?;
    let created_at = state.max_created_at.max(cx.t);
    state.max_created_at = created_at;
    save_state(cx, lane, &state);
    Ok(created_at)
}

/// Acquire or verify the lane lease for `owner` (docs/SPEC.md §4.3 step 1): taken when free,
/// already held by `owner`, or expired at `t`. Otherwise the live lease is returned.
pub(crate) fn acquire(
    cx: &mut Ctx<'_, '_>,
    lane: &LaneKey,
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<Result<(), LaneLease>> {
    let mut state = load_state(cx.txn, lane)?;
    if let Some(lease) = &state.lease {
        if lease.owner != owner && lease.is_live(cx.t) {
            return Ok(Err(lease.clone()));
        }
    }
    // Never shorten the owner's own live lease: it must outlast every row it claimed in the
    // lane, or another owner could enter while those rows are still out.
    let held_until = state
        .lease
        .as_ref()
        .filter(|l| l.owner == owner)
        .map_or(0, |l| l.expires_at);
    state.lease = Some(LaneLease {
        owner: owner.to_string(),
        expires_at: cx.t.saturating_add(ttl_ms).max(held_until),
    });
    save_state(cx, lane, &state);
    Ok(Ok(()))
}

/// Extend `owner`'s lease on `lane` if it holds it (live or not yet taken by anyone else).
pub(crate) fn renew(
    cx: &mut Ctx<'_, '_>,
    lane: &LaneKey,
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<bool> {
    let mut state = load_state(cx.txn, lane)?;
    match &mut state.lease {
        Some(lease) if lease.owner == owner => {
            lease.expires_at = lease.expires_at.max(cx.t.saturating_add(ttl_ms));
            save_state(cx, lane, &state);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Give the lane back early; only its owner may.
pub(crate) fn release(cx: &mut Ctx<'_, '_>, lane: &LaneKey, owner: &str) -> ApplyResult<bool> {
    let mut state = load_state(cx.txn, lane)?;
    match &state.lease {
        Some(lease) if lease.owner == owner => {
            state.lease = None;
            save_state(cx, lane, &state);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The oldest pending row of the lane by `(created_at, seq)`: one seek.
pub(crate) fn head<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<Option<RowId>, StoreError> {
    let mut it = txn.scan_prefix(Table::LanePending, &lane.prefix(), Direction::Forward)?;
    match it.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        Some(Ok((key, _))) => Ok(trailing_u64(&key).map(RowId)),
    }
}

/// Inflight rows of the lane, in seq order.
pub(crate) fn inflight<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<Vec<RowId>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::LaneInflight, &lane.prefix(), Direction::Forward)? {
        let (key, _) = item?;
        if let Some(id) = trailing_u64(&key) {
            out.push(RowId(id));
        }
    }
    Ok(out)
}

/// Pending count and the head's `created_at`.
pub(crate) fn depth<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
) -> Result<(u64, Option<Millis>), StoreError> {
    let prefix = lane.prefix();
    let mut count = 0u64;
    let mut oldest = None;
    for item in txn.scan_prefix(Table::LanePending, &prefix, Direction::Forward)? {
        let (key, _) = item?;
        if oldest.is_none() {
            oldest = crate::keys::read_u64(&key, prefix.len());
        }
        count += 1;
    }
    Ok((count, oldest))
}
