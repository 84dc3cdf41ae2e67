//! The fencing rule, in one place: a completion must present the fence of the row's current
//! claim. Handoffs and completions all go through [`check`].

use crate::command::Rejection;
use crate::ids::{Fence, RowId};
use crate::machine::{ApplyResult, Ctx};
use crate::row::{RowStatus, Stage, WorkRow};
use crate::rows;

/// What a fenced command may act on.
pub(crate) enum Fenced {
    /// The row is inflight under the presented fence.
    Held(Box<WorkRow>),
    /// The row was already consumed by a handoff (a retry or a late duplicate).
    Consumed,
}

/// Check that `row_id` is inflight at one of `stages` under `fence`.
pub(crate) fn check(
    cx: &Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    stages: &[Stage],
) -> ApplyResult<Fenced> {
    let Some(row) = rows::get(cx.txn, row_id)? else {
        if rows::was_consumed(cx, row_id) {
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
    cx: &Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    stages: &[Stage],
) -> ApplyResult<WorkRow> {
    match check(cx, row_id, fence, stages)? {
        Fenced::Held(row) => Ok(*row),
        Fenced::Consumed => Err(Rejection::UnknownRow(row_id).into()),
    }
}

fn stale(row: RowId, presented: Fence, current: Option<Fence>) -> crate::machine::ApplyError {
    Rejection::StaleFence {
        row,
        presented,
        current,
    }
    .into()
}
