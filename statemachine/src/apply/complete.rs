//! Ending a claimed row: MarkDone, CompleteWithResponse, MarkFailed (retry with the backoff of
//! [`crate::rules::retry`]) and DeadLetterNow. Each runs the finalizer when the row ends.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::config::RetryPolicy;
use crate::model::ids::{Fence, RowId};
use crate::model::message::EventKind;
use crate::model::response::{CapturedResponse, ResponseRef};
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::rules::finalizer::{finalize, DeadEvent};
use crate::rules::retry::{attempt_limit, backoff_delay, check_policy};
use crate::rules::{channels, fifo, validate};
use crate::rules::{claim_owner, fence};
use crate::tables::rows::{self, NewRow};
use crate::tables::{messages, responses, row_retry};
use crate::wire::command::{CompleteWithResponse, DeadLetterNow, MarkDone, MarkFailed};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for MarkDone {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let MarkDone { row_id, fence } = self;
        mark_done(cx, *row_id, *fence)
    }
}

impl Apply for CompleteWithResponse {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CompleteWithResponse {
            row_id,
            fence,
            body,
            outcome,
            detail,
            reingress_to,
        } = self;
        complete_with_response(
            cx,
            *row_id,
            *fence,
            body,
            outcome,
            detail.as_deref(),
            reingress_to.as_deref(),
        )
    }
}

impl Apply for MarkFailed {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let MarkFailed {
            row_id,
            fence,
            error,
            retry,
        } = self;
        mark_failed(cx, *row_id, *fence, error, retry)
    }
}

impl Apply for DeadLetterNow {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DeadLetterNow {
            row_id,
            fence,
            error,
        } = self;
        dead_letter_now(cx, *row_id, *fence, error)
    }
}

const ALL_STAGES: &[Stage] = &Stage::ALL;

pub(crate) fn mark_done(cx: &mut Ctx<'_, '_>, row_id: RowId, fence: Fence) -> ApplyResult<Outcome> {
    let who = cx.acting("done");
    let row = fence::held(cx, &who, row_id, fence, ALL_STAGES)?;
    let done = rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        row.message_id,
        EventKind::Delivered,
        done.destination_name.as_deref(),
        Some(format!("attempt {}", done.attempts)),
    )?;
    finalize(cx, row.message_id)?;
    Ok(Outcome::Done)
}

fn complete_with_response(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    body: &str,
    outcome: &str,
    detail: Option<&str>,
    reingress_to: Option<&str>,
) -> ApplyResult<Outcome> {
    validate::opt_name("reingress_to", reingress_to)?;
    if let Some(channel) = reingress_to {
        channels::admit(cx.txn, "reingress_to", channel)?;
    }
    let who = cx.acting("response");
    let row = fence::held(cx, &who, row_id, fence, &[Stage::Outbound])?;
    let destination = row.destination_name.clone().unwrap_or_default();
    let last = responses::last_seq(cx.txn, row.message_id, &destination)?;
    let seq = last.saturating_add(1);
    let response = CapturedResponse {
        message_id: row.message_id,
        destination: destination.clone(),
        response_seq: seq,
        body: body.to_string(),
        outcome: outcome.to_string(),
        detail: detail.map(str::to_string),
        captured_at: cx.t,
    };
    responses::put(cx, &response);
    let done = rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        row.message_id,
        EventKind::Delivered,
        Some(&destination),
        Some(format!("attempt {} (response {outcome})", done.attempts)),
    )?;
    if let Some(channel) = reingress_to {
        let reference = ResponseRef {
            message_id: row.message_id,
            destination: destination.clone(),
            seq,
        };
        let payload = serde_json::to_string(&reference).unwrap_or_default();
        fifo::push_row(
            cx,
            NewRow {
                message_id: row.message_id,
                stage: Stage::Response,
                channel_id: channel,
                destination_name: Some(&destination),
                handler_name: None,
                payload: &payload,
            },
        )?;
    }
    finalize(cx, row.message_id)?;
    Ok(Outcome::Done)
}

fn mark_failed(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    error: &str,
    retry: &RetryPolicy,
) -> ApplyResult<Outcome> {
    check_policy("retry", retry)?;
    let who = cx.acting("fail");
    let row = fence::held(cx, &who, row_id, fence, ALL_STAGES)?;
    let destination = row.destination_name.clone();
    if attempt_limit(retry).exhausted_by(row.attempts) {
        // messagefoundry's text: the `dead` event says which attempt it was, like `failed`;
        // the row's `last_error` is the error alone.
        let event = DeadEvent {
            destination: destination.as_deref(),
            detail: format!("attempt {}: {error}", row.attempts),
        };
        crate::rules::finalizer::dead_letter_as(cx, &row, error, event)?;
        return Ok(Outcome::Failed {
            dead: true,
            next_attempt_at: cx.t,
        });
    }
    let due = cx.t.saturating_add(backoff_delay(retry, row.attempts));
    let mut after = rows::to_pending(cx, &row, due);
    row_retry::put(cx, row.id, retry);
    let before = after.clone();
    after.last_error = Some(error.to_string());
    rows::save(cx, &before, &after);
    messages::event(
        cx,
        row.message_id,
        EventKind::Failed,
        destination.as_deref(),
        Some(format!("attempt {}: {error}", row.attempts)),
    )?;
    Ok(Outcome::Failed {
        dead: false,
        next_attempt_at: due,
    })
}

fn dead_letter_now(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Option<Fence>,
    error: &str,
) -> ApplyResult<Outcome> {
    let who = cx.acting("dead");
    let row = match fence {
        Some(f) => fence::held(cx, &who, row_id, f, ALL_STAGES)?,
        None => {
            // Operator action without a claim: only a row that is not already terminal, and
            // an in-flight row's claim is its principal's (an operator's override is audited).
            let row = cx.row(row_id)?;
            if !row.status.is_live() {
                return Err(Rejection::WrongStatus {
                    row: row_id,
                    status: row.status.as_str().to_string(),
                    expected: "pending or inflight".to_string(),
                }
                .into());
            }
            claim_owner::check(cx, &who, &row)?;
            row
        }
    };
    dead_letter(cx, &row, error)?;
    Ok(Outcome::Done)
}

/// Dead-letter a live row and finalize its message (poison rows, orphans, depth cap):
/// [`crate::rules::finalizer::dead_letter`].
pub(crate) fn dead_letter(cx: &mut Ctx<'_, '_>, row: &WorkRow, error: &str) -> ApplyResult<()> {
    Ok(crate::rules::finalizer::dead_letter(cx, row, error)?)
}
