//! The fencing rule, in one place: a completion must present the fence of the row's current
//! claim, and come from the claim's principal (or an operator: [`crate::rules::claim_owner`]).
//! Handoffs and completions all go through [`check`].

use crate::model::ids::{Fence, RowId};
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::rules::claim_owner::{self, Acting};
use crate::rules::{ApplyError, ApplyResult};
use crate::tables::{rows, Db};
use crate::wire::rejection::Rejection;

/// What a fenced command may act on.
pub(crate) enum Fenced {
    /// The row is inflight under the presented fence.
    Held(Box<WorkRow>),
    /// The row was already consumed by a handoff (a retry or a late duplicate).
    Consumed,
}

/// Check that `row_id` is inflight at one of `stages` under `fence`, and that `who` may act on
/// its claim ([`claim_owner::check`]: an operator's act on another principal's claim is
/// audited here).
pub(crate) fn check(
    cx: &mut Db<'_, '_>,
    who: &Acting<'_>,
    row_id: RowId,
    fence: Fence,
    stages: &[Stage],
) -> ApplyResult<Fenced> {
    let Some(row) = rows::get(cx.txn, row_id)? else {
        // A row id that was handed out but whose row no longer exists was consumed by a
        // handoff.
        if row_id.0 < cx.meta.next_row_id {
            return Ok(Fenced::Consumed);
        }
        return Err(Rejection::UnknownRow(row_id).into());
    };
    if !stages.contains(&row.stage) {
        return Err(Rejection::WrongStage {
            row: row_id,
            stage: row.stage.as_str().to_string(),
        }
        .into());
    }
    match (&row.status, &row.claim) {
        (RowStatus::Inflight, Some(claim)) if claim.fence == fence => {
            claim_owner::check(cx, who, &row)?;
            Ok(Fenced::Held(Box::new(row)))
        }
        (RowStatus::Inflight, Some(claim)) => Err(stale(row_id, fence, Some(claim.fence))),
        // Lost the lease and the row went back to pending: the claim is gone.
        (RowStatus::Pending, _) => Err(stale(row_id, fence, None)),
        _ if row.last_fence != Some(fence) => Err(stale(row_id, fence, None)),
        _ => Err(Rejection::WrongStatus {
            row: row_id,
            status: row.status.as_str().to_string(),
            expected: RowStatus::Inflight.as_str().to_string(),
        }
        .into()),
    }
}

/// Like [`check`] for commands on rows that are never consumed: a missing row is unknown.
pub(crate) fn held(
    cx: &mut Db<'_, '_>,
    who: &Acting<'_>,
    row_id: RowId,
    fence: Fence,
    stages: &[Stage],
) -> ApplyResult<WorkRow> {
    match check(cx, who, row_id, fence, stages)? {
        Fenced::Held(row) => Ok(*row),
        Fenced::Consumed => Err(Rejection::UnknownRow(row_id).into()),
    }
}

fn stale(row: RowId, presented: Fence, current: Option<Fence>) -> ApplyError {
    Rejection::StaleFence {
        row,
        presented,
        current,
    }
    .into()
}
