//! Handing rows out: ClaimReady (unordered), ClaimNextFifo (strict per-lane FIFO), lease
//! renewal, reclaiming expired leases and releasing lanes.

use crate::command::{ClaimedRow, FifoEmpty, Outcome};
use crate::ids::{Fence, Millis, RowId};
use crate::keys::{trailing_u64, Key};
use crate::lane::{self, LaneKey};
use crate::machine::{ApplyResult, Ctx};
use crate::row::{Claim, RowStatus, Stage, WorkRow};
use crate::rows;
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use crate::validate;

/// Claim one pending row for `owner`: inflight, one more attempt, fenced by this log index.
fn claim_row(cx: &mut Ctx<'_, '_>, row: &WorkRow, owner: &str, ttl_ms: u64) -> ClaimedRow {
    let fence = Fence(cx.index);
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
    rows::save(cx, row, &after);
    claimed(after, fence)
}

/// Hand `owner` its own live claim on `row` again: same fence, same attempt, the lease
/// extended (never shortened). This is what makes a retried FIFO claim safe: the retry of a
/// claim whose answer was lost gets that row back instead of the row behind it, which would
/// otherwise overtake the first one once its lease ran out.
fn reclaim_own(cx: &mut Ctx<'_, '_>, row: &WorkRow, claim: &Claim, ttl_ms: u64) -> ClaimedRow {
    let mut after = row.clone();
    after.claim = Some(Claim {
        lease_expires_at: claim.lease_expires_at.max(cx.t.saturating_add(ttl_ms)),
        ..claim.clone()
    });
    rows::save(cx, row, &after);
    claimed(after, claim.fence)
}

fn claimed(row: WorkRow, fence: Fence) -> ClaimedRow {
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
    }
}

pub(crate) fn claim_ready(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    limit: u32,
    channel: Option<&str>,
    destination: Option<&str>,
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("owner", owner)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    validate::opt_name("channel", channel)?;
    validate::opt_name("destination", destination)?;
    let limit = limit.min(validate::MAX_CLAIM_LIMIT) as usize;
    // Due rows of the stage, earliest next_attempt_at first: keys below stage ‖ (t + 1).
    let start = Key::new().u8(stage.tag()).build();
    let end = Key::new()
        .u8(stage.tag())
        .u64(cx.t.saturating_add(1))
        .build();
    let mut picked = Vec::new();
    for item in cx
        .txn
        .scan(Table::Due, &start, Some(&end), Direction::Forward)?
    {
        if picked.len() >= limit {
            break;
        }
        let (key, _) = item?;
        let Some(id) = trailing_u64(&key) else {
            continue;
        };
        let Some(row) = rows::get(cx.txn, RowId(id))? else {
            continue;
        };
        if !row.matches(channel, destination) {
            continue;
        }
        picked.push(row);
    }
    let claimed = picked
        .iter()
        .map(|row| claim_row(cx, row, owner, ttl_ms))
        .collect();
    Ok(Outcome::Claimed(claimed))
}

/// docs/SPEC.md §4.3 ClaimNextFifo. Step 3 is ours, not the first contract's (docs/SPEC.md §12
/// item 5): an owner that claims again while it holds a live row of the lane gets that row back
/// under the same fence. The first contract would hand it the next pending row, which lets a
/// row overtake one whose claim answer was lost.
pub(crate) fn claim_next_fifo(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    lane_name: &str,
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("lane", lane_name)?;
    validate::name("owner", owner)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    let lane = LaneKey::new(stage, lane_name);
    // The lane's inflight rows with their claims, in seq order, read once for steps 0, 2 and 3.
    let mut inflight = Vec::new();
    for id in lane::inflight(cx.txn, &lane)? {
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
        return Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: claim.owner.clone(),
            expires_at: claim.lease_expires_at,
        })));
    }
    // 1. Acquire or verify the lane lease.
    if let Err(lease) = lane::acquire(cx, &lane, owner, ttl_ms)? {
        return Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: lease.owner,
            expires_at: lease.expires_at,
        })));
    }
    // 2. A crashed holder's stranded rows go back to pending, so the head blocks the lane again.
    let (stranded, live): (Vec<_>, Vec<_>) = inflight
        .into_iter()
        .partition(|(_, c)| c.lease_expires_at < cx.t);
    for (row, _) in &stranded {
        rows::to_pending(cx, row, cx.t);
    }
    // 3. The owner's own live claim in this lane comes back first (a retried claim): the
    //    row behind it must not overtake it. After step 0 every live row here is the owner's.
    if let Some((row, claim)) = live.first() {
        return Ok(Outcome::FifoClaimed(Ok(reclaim_own(
            cx, row, claim, ttl_ms,
        ))));
    }
    // 4. The head, if due.
    let Some(head_id) = lane::head(cx.txn, &lane)? else {
        return Ok(Outcome::FifoClaimed(Err(FifoEmpty::Empty)));
    };
    let head = rows::load(cx, head_id)?;
    if head.next_attempt_at > cx.t {
        return Ok(Outcome::FifoClaimed(Err(FifoEmpty::NotDue {
            due_at: head.next_attempt_at,
        })));
    }
    Ok(Outcome::FifoClaimed(Ok(claim_row(
        cx, &head, owner, ttl_ms,
    ))))
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
    if !lane::inflight(txn, lane)?.is_empty() {
        return Ok(None);
    }
    let lease = lane::load_state(txn, lane)?.lease;
    if lease.is_some_and(|l| l.owner != owner && l.is_live(t)) {
        return Ok(None);
    }
    let Some(head) = lane::head(txn, lane)? else {
        return Ok(Some(FifoEmpty::Empty));
    };
    Ok(rows::get(txn, head)?
        .filter(|row| row.next_attempt_at > t)
        .map(|row| FifoEmpty::NotDue {
            due_at: row.next_attempt_at,
        }))
}

/// MarkDone of `row_id`, then ClaimNextFifo of that row's lane for `owner`: the two commands
/// composed, nothing more. The arguments are checked before anything changes, and a rejected
/// done rejects the whole command (apply rolls back), so the claim never runs on its own.
pub(crate) fn done_then_claim_next(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("owner", owner)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    // The lane is read before the done; an unknown row is left to MarkDone to reject.
    let lane = rows::get(cx.txn, row_id)?.map(|row| row.lane());
    crate::complete::mark_done(cx, row_id, fence)?;
    let Some(lane) = lane else {
        return Err(crate::command::Rejection::UnknownRow(row_id).into());
    };
    claim_next_fifo(cx, lane.stage, &lane.name, owner, ttl_ms)
}

pub(crate) fn renew_leases(
    cx: &mut Ctx<'_, '_>,
    ids: &[RowId],
    owner: &str,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("owner", owner)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    let mut renewed = 0u64;
    let mut lanes = std::collections::BTreeSet::new();
    for id in ids {
        let Some(row) = rows::get(cx.txn, *id)? else {
            continue;
        };
        let Some(claim) = row
            .claim
            .as_ref()
            .filter(|c| row.status == RowStatus::Inflight && c.owner == owner)
        else {
            continue;
        };
        let mut after = row.clone();
        after.claim = Some(Claim {
            lease_expires_at: claim.lease_expires_at.max(cx.t.saturating_add(ttl_ms)),
            ..claim.clone()
        });
        rows::save(cx, &row, &after);
        lanes.insert(row.lane());
        renewed += 1;
    }
    for lane in lanes {
        lane::renew(cx, &lane, owner, ttl_ms)?;
    }
    Ok(Outcome::Count(renewed))
}

pub(crate) fn reclaim_expired(cx: &mut Ctx<'_, '_>, stage: Option<Stage>) -> ApplyResult<Outcome> {
    // Leases strictly before t: keys below t ‖ 0.
    let end = Key::new().u64(cx.t).build();
    let mut expired = Vec::new();
    for item in cx
        .txn
        .scan(Table::Leases, &[], Some(&end), Direction::Forward)?
    {
        let (key, _) = item?;
        if let Some(id) = trailing_u64(&key) {
            expired.push(RowId(id));
        }
    }
    let mut count = 0u64;
    for id in expired {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        if row.status != RowStatus::Inflight || stage.is_some_and(|s| s != row.stage) {
            continue;
        }
        rows::to_pending(cx, &row, cx.t);
        count += 1;
    }
    Ok(Outcome::Count(count))
}

pub(crate) fn release_lane(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    lane_name: &str,
    owner: &str,
) -> ApplyResult<Outcome> {
    validate::name("lane", lane_name)?;
    let released = lane::release(cx, &LaneKey::new(stage, lane_name), owner)?;
    Ok(Outcome::Count(u64::from(released)))
}
