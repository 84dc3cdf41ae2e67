//! Ending a claimed row: MarkDone, CompleteWithResponse, MarkFailed (retry with backoff) and
//! DeadLetterNow. Each runs the finalizer when the row ends.

use crate::command::{Outcome, Rejection, RetryPolicy};
use crate::fence;
use crate::finalize::finalize;
use crate::ids::{Fence, Millis, RowId};
use crate::keys::Key;
use crate::machine::{ApplyResult, Ctx};
use crate::message::EventKind;
use crate::messages;
use crate::row::{RowStatus, Stage};
use crate::rows::{self, NewRow};
use crate::store::{Direction, Table};
use crate::validate;
use serde::{Deserialize, Serialize};

/// A captured response of a destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedResponse {
    pub message_id: crate::ids::MessageId,
    pub destination: String,
    pub response_seq: u32,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub captured_at: Millis,
}

/// What a `response`-stage row's payload points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRef {
    pub message_id: crate::ids::MessageId,
    pub destination: String,
    pub seq: u32,
}

pub(crate) fn response_key(message: crate::ids::MessageId, destination: &str, seq: u32) -> Vec<u8> {
    Key::new().u64(message.0).str(destination).u32(seq).build()
}

const ALL_STAGES: &[Stage] = &Stage::ALL;

pub(crate) fn mark_done(cx: &mut Ctx<'_, '_>, row_id: RowId, fence: Fence) -> ApplyResult<Outcome> {
    let row = fence::held(cx, row_id, fence, ALL_STAGES)?;
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

#[allow(clippy::too_many_arguments)]
pub(crate) fn complete_with_response(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    body: &str,
    outcome: &str,
    detail: Option<&str>,
    reingress_to: Option<&str>,
) -> ApplyResult<Outcome> {
    validate::opt_name("reingress_to", reingress_to)?;
    let row = fence::held(cx, row_id, fence, &[Stage::Outbound])?;
    let destination = row.destination_name.clone().unwrap_or_default();
    let prefix = Key::new().u64(row.message_id.0).str(&destination).build();
    let last = match cx
        .txn
        .scan_prefix(Table::Responses, &prefix, Direction::Reverse)?
        .next()
    {
        Some(item) => {
            let (key, _) = item?;
            // The seq is the trailing u32.
            key.len()
                .checked_sub(4)
                .and_then(|at| crate::keys::read_u32(&key, at))
                .unwrap_or(0)
        }
        None => 0,
    };
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
    cx.txn.put(
        Table::Responses,
        response_key(row.message_id, &destination, seq),
        &response,
    );
    let done = rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        row.message_id,
        EventKind::Delivered,
        Some(&destination),
        Some(format!(
            "attempt {}; response {seq}: {outcome}",
            done.attempts
        )),
    )?;
    if let Some(channel) = reingress_to {
        let reference = ResponseRef {
            message_id: row.message_id,
            destination: destination.clone(),
            seq,
        };
        let payload = serde_json::to_string(&reference).unwrap_or_default();
        rows::insert(
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

/// `min(max_backoff, backoff × multiplier^(attempts−1))`, in integer fixed point.
pub fn backoff_delay(retry: &RetryPolicy, attempts: u32) -> u64 {
    let mut delay = u128::from(retry.backoff_ms);
    let max = u128::from(retry.max_backoff_ms);
    if retry.multiplier_milli > 1000 {
        for _ in 1..attempts {
            if delay >= max || delay == 0 {
                break;
            }
            delay = delay * u128::from(retry.multiplier_milli) / 1000;
        }
    }
    u64::try_from(delay.min(max)).unwrap_or(u64::MAX)
}

pub(crate) fn mark_failed(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    error: &str,
    retry: &RetryPolicy,
) -> ApplyResult<Outcome> {
    if retry.multiplier_milli < 1000 {
        return Err(Rejection::invalid("retry.multiplier", "must be at least 1.0").into());
    }
    if retry.max_attempts == Some(0) {
        return Err(Rejection::invalid("retry.max_attempts", "must be at least 1").into());
    }
    let row = fence::held(cx, row_id, fence, ALL_STAGES)?;
    let destination = row.destination_name.clone();
    if retry.max_attempts.is_some_and(|max| row.attempts >= max) {
        rows::finish(cx, &row, RowStatus::Dead, Some(error));
        messages::event(
            cx,
            row.message_id,
            EventKind::Dead,
            destination.as_deref(),
            Some(error.to_string()),
        )?;
        finalize(cx, row.message_id)?;
        return Ok(Outcome::Failed {
            dead: true,
            next_attempt_at: cx.t,
        });
    }
    let due = cx.t.saturating_add(backoff_delay(retry, row.attempts));
    let mut after = rows::to_pending(cx, &row, due);
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

pub(crate) fn dead_letter_now(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Option<Fence>,
    error: &str,
) -> ApplyResult<Outcome> {
    let row = match fence {
        Some(f) => fence::held(cx, row_id, f, ALL_STAGES)?,
        None => {
            // Operator action without a claim: only a row that is not already terminal.
            let row = rows::load(cx, row_id)?;
            if !row.status.is_live() {
                return Err(Rejection::WrongStatus {
                    row: row_id,
                    status: row.status.as_str().to_string(),
                    expected: "pending or inflight".to_string(),
                }
                .into());
            }
            row
        }
    };
    dead_letter(cx, &row, error)?;
    Ok(Outcome::Done)
}

/// Dead-letter a live row and finalize its message (poison rows, orphans, depth cap).
pub(crate) fn dead_letter(
    cx: &mut Ctx<'_, '_>,
    row: &crate::row::WorkRow,
    error: &str,
) -> ApplyResult<()> {
    rows::finish(cx, row, RowStatus::Dead, Some(error));
    messages::event(
        cx,
        row.message_id,
        EventKind::Dead,
        row.destination_name.as_deref(),
        Some(error.to_string()),
    )?;
    finalize(cx, row.message_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff: u64, mult: u32, max: u64) -> RetryPolicy {
        RetryPolicy {
            max_attempts: None,
            backoff_ms: backoff,
            multiplier_milli: mult,
            max_backoff_ms: max,
        }
    }

    #[test]
    fn backoff_formula() {
        let p = policy(1000, 2000, 60_000);
        assert_eq!(backoff_delay(&p, 1), 1000);
        assert_eq!(backoff_delay(&p, 2), 2000);
        assert_eq!(backoff_delay(&p, 3), 4000);
        assert_eq!(backoff_delay(&p, 7), 60_000);
        assert_eq!(backoff_delay(&p, u32::MAX), 60_000);
        let p = policy(1000, 1500, 10_000);
        assert_eq!(backoff_delay(&p, 3), 2250);
        let p = policy(500, 1000, 10_000);
        assert_eq!(backoff_delay(&p, 50), 500);
        let p = policy(50_000, 2000, 10_000);
        assert_eq!(backoff_delay(&p, 1), 10_000);
    }

    #[test]
    fn keys_read_back() {
        let k = Key::new().u64(9).build();
        assert_eq!(crate::keys::read_u64(&k, 0), Some(9));
    }
}
