//! Handing rows out: ClaimReady (unordered), ClaimNextFifo and DoneThenClaimNext (strict
//! per-lane FIFO, decided in [`crate::rules::fifo`]), lease renewal, reclaiming expired leases
//! and releasing lanes.

use crate::apply::complete::mark_done;
use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::ids::{Fence, RowId};
use crate::model::lane::LaneKey;
use crate::model::row::{RowStatus, Stage};
use crate::rules::fifo::{self, Claimant};
use crate::rules::{claim_owner, pause, retry, validate};
use crate::tables::{config, rows};
use crate::wire::command::{
    ClaimFifoHead, ClaimNextFifo, ClaimReady, DoneThenClaimNext, HandOn, HandOnThenClaimNext,
    ReclaimExpired, RecoverInflightOnPromotion, ReleaseLane, RenewLeases, ResetStaleInflight,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::collections::BTreeSet;

impl Apply for ClaimReady {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ClaimReady {
            stage,
            limit,
            channel,
            destination,
            owner,
            ttl_ms,
        } = self;
        cx.check_owner("owner", owner)?;
        let out = claim_ready(
            cx,
            *stage,
            *limit,
            channel.as_deref(),
            destination.as_deref(),
            owner,
            *ttl_ms,
        )?;
        bind_if_taken(cx, &out, "owner", owner)?;
        Ok(out)
    }
}

impl Apply for ClaimNextFifo {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ClaimNextFifo {
            stage,
            lane,
            owner,
            ttl_ms,
        } = self;
        cx.check_owner("owner", owner)?;
        let out = claim_next_fifo(cx, *stage, lane, owner, *ttl_ms)?;
        bind_if_taken(cx, &out, "owner", owner)?;
        Ok(out)
    }
}

impl Apply for ClaimFifoHead {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ClaimFifoHead {
            stage,
            lane,
            owner,
            lane_owner,
            ttl_ms,
        } = self;
        cx.check_owner("owner", owner)?;
        if let Some(lane_owner) = lane_owner {
            cx.check_owner("lane_owner", lane_owner)?;
        }
        let out = claim_fifo_head(
            cx,
            *stage,
            lane,
            Claimant {
                owner,
                lane_owner: lane_owner.as_deref(),
            },
            *ttl_ms,
        )?;
        bind_if_taken(cx, &out, "owner", owner)?;
        if let Some(lane_owner) = lane_owner {
            bind_if_taken(cx, &out, "lane_owner", lane_owner)?;
        }
        Ok(out)
    }
}

impl Apply for DoneThenClaimNext {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DoneThenClaimNext {
            row_id,
            fence,
            owner,
            ttl_ms,
        } = self;
        cx.check_owner("owner", owner)?;
        let out = done_then_claim_next(cx, *row_id, *fence, owner, *ttl_ms)?;
        bind_if_taken(cx, &out, "owner", owner)?;
        Ok(out)
    }
}

impl Apply for HandOnThenClaimNext {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let HandOnThenClaimNext {
            action,
            owner,
            ttl_ms,
        } = self;
        cx.check_owner("owner", owner)?;
        validate::name("owner", owner)?;
        validate::ttl("ttl_ms", *ttl_ms)?;
        // The lane is read before the handoff consumes the row; an unknown row is left to the
        // handoff to reject.
        let row_id = action.row_id();
        let lane = rows::get(cx.txn, row_id)?.map(|row| row.lane());
        let applied = match action {
            HandOn::Route(c) => c.apply(cx)?,
            HandOn::Handoff(c) => c.apply(cx)?,
            HandOn::Transform(c) => c.apply(cx)?,
        };
        let Outcome::HandedOff(applied) = applied else {
            return Err(Rejection::invalid("action", "not a handoff").into());
        };
        let Some(lane) = lane else {
            // The row is gone: this handoff was already applied (a retried request), so its
            // lane is not known here, and no claim is made.
            return Ok(Outcome::HandedOnThenClaimed {
                applied,
                next: None,
            });
        };
        let out = claim_next_fifo(cx, lane.stage, &lane.name, owner, *ttl_ms)?;
        bind_if_taken(cx, &out, "owner", owner)?;
        let Outcome::FifoClaimed(next) = out else {
            return Err(Rejection::invalid("action", "the claim answered no claim").into());
        };
        Ok(Outcome::HandedOnThenClaimed {
            applied,
            next: Some(next),
        })
    }
}

impl Apply for RenewLeases {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RenewLeases { ids, owner, ttl_ms } = self;
        cx.check_owner("owner", owner)?;
        renew_leases(cx, ids, owner, *ttl_ms)
    }
}

/// A claim that took a row binds its owner name to the claiming principal
/// (`crate::rules::lease_owner`); one that took nothing leaves the name free and the state as it
/// was.
fn bind_if_taken(cx: &mut Ctx<'_, '_>, out: &Outcome, field: &str, owner: &str) -> ApplyResult<()> {
    let took = match out {
        Outcome::Claimed(rows) => !rows.is_empty(),
        Outcome::FifoClaimed(head) => head.is_ok(),
        _ => false,
    };
    if took {
        cx.bind_owner(field, owner)?;
    }
    Ok(())
}

impl Apply for ReclaimExpired {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ReclaimExpired { stage } = self;
        reclaim_expired(cx, *stage)
    }
}

impl Apply for ResetStaleInflight {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ResetStaleInflight { stage } = self;
        reset_stale_inflight(cx, *stage)
    }
}

impl Apply for RecoverInflightOnPromotion {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RecoverInflightOnPromotion { owner, lane_owner } = self;
        validate::name("owner", owner)?;
        validate::opt_name("lane_owner", lane_owner.as_deref())?;
        recover_on_promotion(cx, owner, lane_owner.as_deref())
    }
}

impl Apply for ReleaseLane {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let ReleaseLane { stage, lane, owner } = self;
        cx.check_owner_or_override("owner", owner, "release_lane")?;
        release_lane(cx, *stage, lane, owner)
    }
}

fn claim_ready(
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
    // Due rows of the stage, earliest next_attempt_at first.
    let mut picked = Vec::new();
    for id in rows::due(cx.txn, stage, cx.t)? {
        if picked.len() >= limit {
            break;
        }
        let Some(row) = rows::get(cx.txn, id?)? else {
            continue;
        };
        if !row.matches(channel, destination) || pause::holds_back(cx.txn, &row)? {
            continue;
        }
        picked.push(row);
    }
    let fence = Fence(cx.index);
    let claimed = picked
        .iter()
        .map(|row| rows::claim(cx, row, owner, ttl_ms, fence))
        .collect::<Result<_, _>>()?;
    Ok(Outcome::Claimed(claimed))
}

/// docs/SPEC.md §4.3 ClaimNextFifo, once its arguments are checked: [`fifo::claim_next`], under
/// this operation's fence.
fn claim_next_fifo(
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
    let fence = Fence(cx.index);
    Ok(Outcome::FifoClaimed(fifo::claim_next(
        cx, &lane, owner, ttl_ms, fence,
    )?))
}

/// docs/SPEC.md §14.1 ClaimFifoHead: [`fifo::claim_head`] for a row owner and a lane owner
/// named apart (or no lane lease at all), under this operation's fence.
fn claim_fifo_head(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    lane_name: &str,
    who: Claimant<'_>,
    ttl_ms: u64,
) -> ApplyResult<Outcome> {
    validate::name("lane", lane_name)?;
    validate::name("owner", who.owner)?;
    validate::opt_name("lane_owner", who.lane_owner)?;
    validate::ttl("ttl_ms", ttl_ms)?;
    let lane = LaneKey::new(stage, lane_name);
    let fence = Fence(cx.index);
    Ok(Outcome::FifoClaimed(fifo::claim_head(
        cx, &lane, who, ttl_ms, fence,
    )?))
}

/// MarkDone of `row_id`, then ClaimNextFifo of that row's lane for `owner`: the two commands
/// composed, nothing more. The arguments are checked before anything changes, and a rejected
/// done rejects the whole command (apply rolls back), so the claim never runs on its own.
fn done_then_claim_next(
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
    mark_done(cx, row_id, fence)?;
    let Some(lane) = lane else {
        return Err(Rejection::UnknownRow(row_id).into());
    };
    claim_next_fifo(cx, lane.stage, &lane.name, owner, ttl_ms)
}

fn renew_leases(
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
        rows::extend_lease(cx, &row, claim, ttl_ms);
        lanes.insert(row.lane());
        renewed += 1;
    }
    for lane in lanes {
        fifo::renew(cx, &lane, owner, ttl_ms)?;
    }
    Ok(Outcome::Count(renewed))
}

/// docs/SPEC.md §4.5: every inflight row whose lease ran out before `t` (of `stage`, if given)
/// is given back ([`retry::expire_lease`]: pending again, or dead once its claim was the last
/// attempt its policy allows). Counts every row taken back, dead or not.
fn reclaim_expired(cx: &mut Ctx<'_, '_>, stage: Option<Stage>) -> ApplyResult<Outcome> {
    // Leases strictly before t.
    let expired = rows::leases_before(cx.txn, cx.t)?;
    let config = config::current(cx.txn)?;
    let mut count = 0u64;
    for id in expired {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        if row.status != RowStatus::Inflight || stage.is_some_and(|s| s != row.stage) {
            continue;
        }
        retry::expire_lease(cx, &config, &row)?;
        count += 1;
    }
    Ok(Outcome::Count(count))
}

/// docs/SPEC.md §14.2: every inflight row of `stage` (or all) back to pending, due now, claim
/// cleared, attempts kept, in id order; then the lease of each lane a row came back to is
/// dropped ([`fifo::free`]), so whoever claims next finds the head at once. Only an operator
/// takes back every principal's rows and leases; anyone else its own (§9.8).
fn reset_stale_inflight(cx: &mut Ctx<'_, '_>, stage: Option<Stage>) -> ApplyResult<Outcome> {
    let t = cx.t;
    let who = cx.acting("reset");
    let mut lanes = BTreeSet::new();
    let mut count = 0u64;
    for id in rows::all_inflight(cx.txn)? {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        if row.status != RowStatus::Inflight
            || stage.is_some_and(|s| s != row.stage)
            || !claim_owner::may_take_back(cx, &who, &row)?
        {
            continue;
        }
        rows::to_pending(cx, &row, t);
        lanes.insert(row.lane());
        count += 1;
    }
    for lane in lanes {
        fifo::free(cx, &lane, claim_owner::confined_to(&who))?;
    }
    Ok(Outcome::Count(count))
}

/// docs/SPEC.md §14.9: every inflight row whose claim is not `owner`'s back to pending (as
/// ResetStaleInflight does), then every lane lease not held by `lane_owner` dropped. Only an
/// operator takes back every principal's rows and leases; anyone else its own (§9.8), e.g. a
/// standby engine the rows and lanes of the engine it replaces, which ran under its principal.
fn recover_on_promotion(
    cx: &mut Ctx<'_, '_>,
    owner: &str,
    lane_owner: Option<&str>,
) -> ApplyResult<Outcome> {
    let t = cx.t;
    let who = cx.acting("recover");
    let mut count = 0u64;
    for id in rows::all_inflight(cx.txn)? {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        if row.status != RowStatus::Inflight
            || row.claim.as_ref().is_some_and(|c| c.owner == owner)
            || !claim_owner::may_take_back(cx, &who, &row)?
        {
            continue;
        }
        rows::to_pending(cx, &row, t);
        count += 1;
    }
    fifo::free_all_but(cx, lane_owner, claim_owner::confined_to(&who))?;
    Ok(Outcome::Count(count))
}

fn release_lane(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    lane_name: &str,
    owner: &str,
) -> ApplyResult<Outcome> {
    validate::name("lane", lane_name)?;
    let released = fifo::release(cx, &LaneKey::new(stage, lane_name), owner)?;
    Ok(Outcome::Count(u64::from(released)))
}
