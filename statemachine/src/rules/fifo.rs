//! FIFO lanes: the one place FIFO is decided. Lane order, the head, and who may hold a lane are
//! all here; [`crate::tables::lanes`] only stores what this module decides.
//!
//! ## Lanes and their order
//! A lane is `(stage, name)` ([`LaneKey`]): a row's lane is its destination for outbound rows
//! and its channel at every other stage ([`WorkRow::lane`]). A lane's rows are ordered by
//! `(created_at, seq)`: the seq is the row id, strictly increasing in insertion order, and a new
//! row's `created_at` is clamped up to the lane's maximum ([`push_row`]), so the order survives
//! any clock step of a proposer. The lane's pending index keeps its pending rows in exactly this
//! order, so the head is the first of them: one seek, O(log n) in the lane's depth.
//!
//! ## Who may claim from a lane
//! One owner at a time holds a lane, under a lane lease ([`acquire`], [`renew`], [`release`]),
//! live through its `expires_at` ([`lease_is_live`]). An owner's lease is never shortened, so it
//! outlasts the rows the owner claimed in the lane; and a live row claimed by another owner (one
//! that released the lane early) still holds the lane, whatever the lease says.
//!
//! ## The head
//! [`claim_next`] is ClaimNextFifo (docs/SPEC.md §4.3): the lane's oldest pending row, and only
//! when it is due, so a row backing off blocks the rows behind it. [`idle_answer`] is the same
//! decision made read-only, for the API's idle polls.

use crate::model::ids::{Fence, Millis, RowId};
use crate::model::lane::{LaneKey, LaneLease};
use crate::model::row::{Claim, ClaimChance, WorkRow};
use crate::rules::{pause, retry, ApplyResult};
use crate::storage::{Store, StoreError, Txn};
use crate::tables::rows::{self, NewRow};
use crate::tables::{config, lanes, lease_owners, Db};
use crate::wire::outcome::{ClaimedRow, FifoEmpty};
use crate::wire::rejection::Rejection;

/// Whether a lane lease is live at `t`: through `expires_at` inclusive, exactly like a row lease
/// (which ReclaimExpired and ClaimNextFifo step 2 only take back once `lease_expires_at < t`).
/// Were the lane free at `t == expires_at` while its head's row lease is still live, a new owner
/// would be handed the next row past the stranded head.
pub(crate) fn lease_is_live(lease: &LaneLease, t: Millis) -> bool {
    lease.expires_at >= t
}

/// A new row enters its lane at the tail: the next seq (its id), and a `created_at` never
/// earlier than the lane's newest.
pub(crate) fn push_row(cx: &mut Db<'_, '_>, new: NewRow<'_>) -> Result<RowId, StoreError> {
    let mut row = rows::new_pending(cx, new);
    row.created_at = stamp_created_at(cx, &row.lane())?;
    rows::insert(cx, &row);
    Ok(row.id)
}

/// The `created_at` for a new row of `lane` at time `t`: never earlier than the lane's newest.
fn stamp_created_at(cx: &mut Db<'_, '_>, lane: &LaneKey) -> Result<Millis, StoreError> {
    let mut state = lanes::state(cx.txn, lane)?;
    let created_at = state.max_created_at.max(cx.t);
    state.max_created_at = created_at;
    lanes::put_state(cx, lane, &state);
    Ok(created_at)
}

/// Acquire or verify the lane lease for `owner` (docs/SPEC.md §4.3 step 1): taken when free,
/// already held by `owner`, or expired at `t`. Otherwise the live lease is returned.
pub(crate) fn acquire(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    owner: &str,
    ttl_ms: u64,
) -> Result<Result<(), LaneLease>, StoreError> {
    let mut state = lanes::state(cx.txn, lane)?;
    if let Some(lease) = &state.lease {
        if lease.owner != owner && lease_is_live(lease, cx.t) {
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
    lanes::put_state(cx, lane, &state);
    Ok(Ok(()))
}

/// Extend `owner`'s lease on `lane` if it holds it (live or not yet taken by anyone else).
pub(crate) fn renew(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    owner: &str,
    ttl_ms: u64,
) -> Result<bool, StoreError> {
    let mut state = lanes::state(cx.txn, lane)?;
    match &mut state.lease {
        Some(lease) if lease.owner == owner => {
            lease.expires_at = lease.expires_at.max(cx.t.saturating_add(ttl_ms));
            lanes::put_state(cx, lane, &state);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Give the lane back early; only its owner may.
pub(crate) fn release(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    owner: &str,
) -> Result<bool, StoreError> {
    let mut state = lanes::state(cx.txn, lane)?;
    match &state.lease {
        Some(lease) if lease.owner == owner => {
            state.lease = None;
            lanes::put_state(cx, lane, &state);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Drop the lane's lease (an unconditional recovery took the rows the lease was guarding back,
/// so the head must be claimable again at once): whoever holds it, or with `within` only a lease
/// whose owner name belongs to that principal (a worker's recovery of its own rows, docs/SPEC.md
/// §9.8). Whether one was dropped.
pub(crate) fn free(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    within: Option<&str>,
) -> Result<bool, StoreError> {
    let mut state = lanes::state(cx.txn, lane)?;
    let Some(lease) = &state.lease else {
        return Ok(false);
    };
    if !held_within(cx, &lease.owner, within)? {
        return Ok(false);
    }
    state.lease = None;
    lanes::put_state(cx, lane, &state);
    Ok(true)
}

/// Whether a lease held under `owner` is within reach: every lease with `within: None`, else
/// only one whose owner name belongs to the principal `within` (`crate::rules::lease_owner`).
fn held_within(cx: &Db<'_, '_>, owner: &str, within: Option<&str>) -> Result<bool, StoreError> {
    match within {
        None => Ok(true),
        Some(principal) => {
            Ok(lease_owners::principal(cx.txn, owner)?.as_deref() == Some(principal))
        }
    }
}

/// Drop every lane lease not held by `keep` (every lease when `None`): a new leader taking over
/// its predecessor's lanes at once (RecoverInflightOnPromotion); with `within`, only leases
/// whose owner name belongs to that principal ([`free`]). How many were dropped.
pub(crate) fn free_all_but(
    cx: &mut Db<'_, '_>,
    keep: Option<&str>,
    within: Option<&str>,
) -> Result<u64, StoreError> {
    let mut dropped = 0;
    for (lane, mut state) in lanes::all_states(cx.txn)? {
        let Some(lease) = &state.lease else {
            continue;
        };
        if keep.is_some_and(|k| k == lease.owner) || !held_within(cx, &lease.owner, within)? {
            continue;
        }
        state.lease = None;
        lanes::put_state(cx, &lane, &state);
        dropped += 1;
    }
    Ok(dropped)
}

/// Who a FIFO claim is for: the owner recorded in the row's claim, and the owner of the lane
/// lease (`None`: the claim takes no lane lease). ClaimNextFifo is one owner for both;
/// ClaimFifoHead (docs/SPEC.md §14.1) names them apart.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claimant<'a> {
    pub owner: &'a str,
    pub lane_owner: Option<&'a str>,
}

impl<'a> Claimant<'a> {
    /// One owner for the row and the lane (ClaimNextFifo, DoneThenClaimNext).
    pub(crate) fn single(owner: &'a str) -> Self {
        Self {
            owner,
            lane_owner: Some(owner),
        }
    }
}

/// docs/SPEC.md §4.3 ClaimNextFifo: the next row of `lane` for `owner`, claimed under `fence`,
/// or why there is none. Step 3 is ours, not the first contract's (docs/SPEC.md §12 item 5): an
/// owner that claims again while it holds a live row of the lane gets that row back under the
/// same fence. The first contract would hand it the next pending row, which lets a row overtake
/// one whose claim answer was lost.
pub(crate) fn claim_next(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    owner: &str,
    ttl_ms: u64,
    fence: Fence,
) -> ApplyResult<Result<ClaimedRow, FifoEmpty>> {
    claim_head(cx, lane, Claimant::single(owner), ttl_ms, fence)
}

/// The FIFO claim for `who` (docs/SPEC.md §4.3, §14.1): [`claim_next`] when one owner holds both
/// the row and the lane. Steps 0, 2 and 3 go by the row owner (`who.owner`): another owner's
/// live row keeps the lane busy, stranded rows go back to pending, the owner's own live row
/// comes back. Step 1 goes by the lane owner: the lease is acquired or verified for
/// `who.lane_owner`; without one no lease is taken or extended, and a live lease held by
/// anyone but `who.owner` keeps the lane busy (its holder may be about to claim the head).
pub(crate) fn claim_head(
    cx: &mut Db<'_, '_>,
    lane: &LaneKey,
    who: Claimant<'_>,
    ttl_ms: u64,
    fence: Fence,
) -> ApplyResult<Result<ClaimedRow, FifoEmpty>> {
    let owner = who.owner;
    // The lane's inflight rows with their claims, in seq order, read once for steps 0, 2 and 3.
    let mut inflight = Vec::new();
    for id in lanes::inflight(cx.txn, lane)? {
        if let Some(row) = rows::get(cx.txn, id)? {
            if let Some(claim) = row.claim.clone() {
                inflight.push((row, claim));
            }
        }
    }
    // 0. A live row claimed by another owner (one that released the lane early, say) still
    //    holds the lane: claiming the next row would overtake it.
    if let Some((_, claim)) = inflight
        .iter()
        .find(|(_, c)| c.owner != owner && c.lease_expires_at >= cx.t)
    {
        return Ok(Err(FifoEmpty::LaneBusy {
            holder: claim.owner.clone(),
            expires_at: claim.lease_expires_at,
        }));
    }
    // 1. Acquire or verify the lane lease (or, taking none, respect another's live one).
    let busy = match who.lane_owner {
        Some(lane_owner) => acquire(cx, lane, lane_owner, ttl_ms)?.err(),
        None => lanes::state(cx.txn, lane)?
            .lease
            .filter(|l| l.owner != owner && lease_is_live(l, cx.t)),
    };
    if let Some(lease) = busy {
        return Ok(Err(FifoEmpty::LaneBusy {
            holder: lease.owner,
            expires_at: lease.expires_at,
        }));
    }
    // 2. A crashed holder's stranded rows go back to pending, so the head blocks the lane
    //    again; one whose claim was its last allowed attempt dies instead
    //    (`retry::expire_lease`), and the row behind it becomes the head.
    let t = cx.t;
    let (stranded, live): (Vec<_>, Vec<_>) = inflight
        .into_iter()
        .partition(|(_, c)| c.lease_expires_at < t);
    if !stranded.is_empty() {
        let config = config::current(cx.txn)?;
        for (row, _) in &stranded {
            retry::expire_lease(cx, &config, row)?;
        }
    }
    // 3. The owner's own live claim in this lane comes back first (a retried claim): the
    //    row behind it must not overtake it. After step 0 every live row here is the owner's.
    //    A claim without a lane lease is a single engine's serial worker (messagefoundry's
    //    store contract, docs/MESSAGEFOUNDRY.md): it claims again only once it is done with,
    //    or has handed on, what it holds, and its contract is "the oldest pending row", so
    //    it gets the next row instead of a second delivery of the one it holds. A lost
    //    answer is still safe for it: the retry carries the same Request-Id and gets the
    //    first answer back (docs/SPEC.md §10.5).
    if who.lane_owner.is_some() {
        if let Some((row, claim)) = live.first() {
            return Ok(Ok(reclaim_own(cx, row, claim, ttl_ms)));
        }
    }
    // 4. The head, if due, and its destination not paused (`rules::pause`: the lane reads as
    //    empty until it is resumed).
    if pause::lane_paused(cx.txn, lane)? {
        return Ok(Err(FifoEmpty::Empty));
    }
    let Some(head_id) = lanes::first_pending(cx.txn, lane)? else {
        return Ok(Err(FifoEmpty::Empty));
    };
    let head = rows::get(cx.txn, head_id)?.ok_or(Rejection::UnknownRow(head_id))?;
    if head.next_attempt_at > cx.t {
        return Ok(Err(FifoEmpty::NotDue {
            due_at: head.next_attempt_at,
        }));
    }
    Ok(Ok(rows::claim(cx, &head, owner, ttl_ms, fence)?))
}

/// Hand `owner` its own live claim on `row` again: same fence, same attempt, the lease
/// extended (never shortened). This is what makes a retried FIFO claim safe: the retry of a
/// claim whose answer was lost gets that row back instead of the row behind it, which would
/// otherwise overtake the first one once its lease ran out.
fn reclaim_own(cx: &mut Db<'_, '_>, row: &WorkRow, claim: &Claim, ttl_ms: u64) -> ClaimedRow {
    let after = rows::extend_lease(cx, row, claim, ttl_ms);
    rows::claimed(after, claim.fence)
}

/// What ClaimNextFifo by `owner` at `t` answers when it is sure to hand out nothing: no row of
/// the lane is out, no other owner holds a live lane lease, and the head is missing (`Empty`)
/// or backing off (`NotDue`). `None` whenever the claim could hand out a row or needs to look
/// further (stranded rows, the owner's own claim): only the command can tell then.
///
/// Read-only, for the API's idle polls (docs/SPEC.md §4.7). Such a claim, proposed, would change
/// nothing but take (or extend) `owner`'s lane lease (docs/SPEC.md §4.3 step 1), so answering it
/// without a write differs in that alone: the poller does not become the lane's holder, and a
/// row that arrives later may be claimed by another worker at once instead of after that lease.
/// FIFO holds either way (one holder at a time, the head first). Which answer an idle poll gets
/// depends on the node (the API takes this path only where a linearizable read confirms it, not
/// under load), so a worker must not count on holding a lane it found empty: it keeps a lane by
/// claiming it.
pub(crate) fn idle_answer<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
    owner: &str,
    t: Millis,
) -> Result<Option<FifoEmpty>, StoreError> {
    if !lanes::inflight(txn, lane)?.is_empty() {
        return Ok(None);
    }
    let lease = lanes::state(txn, lane)?.lease;
    if lease.is_some_and(|l| l.owner != owner && lease_is_live(&l, t)) {
        return Ok(None);
    }
    if pause::lane_paused(txn, lane)? {
        return Ok(Some(FifoEmpty::Empty));
    }
    let Some(head) = lanes::first_pending(txn, lane)? else {
        return Ok(Some(FifoEmpty::Empty));
    };
    Ok(rows::get(txn, head)?
        .filter(|row| row.next_attempt_at > t)
        .map(|row| FifoEmpty::NotDue {
            due_at: row.next_attempt_at,
        }))
}

/// When a FIFO claim by `who` at `t` could next hand out a row (see [`ClaimChance`]): the
/// decision of [`claim_head`] read without changing anything, for a claim that waits for work.
///
/// `Now` whenever the claim may hand something out or needs to act (a stranded row it takes
/// back, the owner's own live row it hands back); `At(end + 1)` while another owner's live row
/// or lane lease holds the lane (the claim takes the lane once that lease has ended); `At(due)`
/// for a head that backs off; `OnChange` for an empty lane.
pub(crate) fn claim_chance<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    lane: &LaneKey,
    who: Claimant<'_>,
    t: Millis,
) -> Result<ClaimChance, StoreError> {
    // Steps 0, 2 and 3: the lane's rows that are out.
    let mut held_until: Option<Millis> = None;
    for id in lanes::inflight(txn, lane)? {
        let Some(claim) = rows::get(txn, id)?.and_then(|row| row.claim) else {
            continue;
        };
        if claim.lease_expires_at < t || (claim.owner == who.owner && who.lane_owner.is_some()) {
            return Ok(ClaimChance::Now);
        }
        if claim.owner != who.owner {
            held_until = held_until.max(Some(claim.lease_expires_at));
        }
    }
    // Step 1: another's live lane lease.
    let lease_holder = who.lane_owner.unwrap_or(who.owner);
    if let Some(lease) = lanes::state(txn, lane)?.lease {
        if lease.owner != lease_holder && lease_is_live(&lease, t) {
            held_until = held_until.max(Some(lease.expires_at));
        }
    }
    if let Some(end) = held_until {
        return Ok(ClaimChance::At(end.saturating_add(1)));
    }
    // Step 4: the head (none while paused: the resume is the change that wakes the claim).
    if pause::lane_paused(txn, lane)? {
        return Ok(ClaimChance::OnChange);
    }
    let Some(head) = lanes::first_pending(txn, lane)? else {
        return Ok(ClaimChance::OnChange);
    };
    Ok(match rows::get(txn, head)? {
        Some(row) if row.next_attempt_at > t => ClaimChance::At(row.next_attempt_at),
        _ => ClaimChance::Now,
    })
}
