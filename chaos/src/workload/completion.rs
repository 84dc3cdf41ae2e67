//! A fenced row action, retried across ambiguous failures under one request id, and recorded
//! with what it is known to have done. The request id makes the retries exactly-once: an
//! attempt that was applied although its answer was lost answers every retry with its first
//! answer (and the original log index), so a completion ends definite unless every attempt
//! went unanswered.

use super::Ctx;
use crate::conn::{Attempt, Cursor};
use crate::history::{Completion, CompletionRec, Micros};
use raftlane_client::{RowAction, RowActionItem, RowActionResult, RowAnswer};
use std::time::Duration;

pub struct Action<'a> {
    pub row: u64,
    pub fence: u64,
    /// `done`, `handoff`, `fail`, with its body.
    pub action: RowAction,
    pub lane: &'a str,
    pub after_stall: bool,
}

/// Run the action; returns what it is known to have done and, when answered, the answer's body.
pub async fn complete(
    ctx: &Ctx,
    cursor: &Cursor,
    a: Action<'_>,
) -> (Completion, Option<RowAnswer>) {
    let invoke = ctx.history.now();
    let request = format!("chaos-{}-{}-{}", a.row, a.fence, a.action.name());
    let mut unanswered = false;
    let mut result = Completion::Refused("never sent".into());
    let mut answer = None;
    let mut node = ctx.conn.node_id(cursor.get());
    for _ in 0..4 {
        node = ctx.conn.node_id(cursor.get());
        let (row, action) = (a.row, a.action.clone());
        let request = request.clone();
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.for_request(request).row(row, action).await
            })
            .await;
        match attempt {
            // With one request id, a retry's answer is the first application's answer: it is
            // definite even after unanswered attempts.
            Attempt::Ok(v) => {
                result = accepted(&v);
                answer = Some(v);
                break;
            }
            Attempt::Refused { code, .. } => {
                result = Completion::Refused(code);
                break;
            }
            Attempt::NotSent(e) => {
                if !unanswered {
                    result = Completion::Refused(format!("never sent: {e}"));
                }
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
            }
            Attempt::Unknown(e) => {
                unanswered = true;
                result = Completion::Unknown(e);
                cursor.advance();
                ctx.sleep(Duration::from_millis(200)).await;
            }
        }
        if !ctx.working() {
            break;
        }
    }
    record(ctx, &a, invoke, result.clone(), node);
    (result, answer)
}

/// What a row action's answer says it did: `applied: false` is a handoff already consumed
/// under this fence by another (not ours).
fn accepted(answer: &RowAnswer) -> Completion {
    match answer {
        RowAnswer::HandedOff { applied: false, .. } => Completion::NoOp,
        other => Completion::Accepted {
            index: Some(other.index()),
        },
    }
}

/// Run `actions` as one `POST /v1/rows/actions`, retried as a whole under one request id, and
/// record each like [`complete`]. The same list goes out on every attempt, so action i always
/// proposes as request `<id>/i`: an action applied by an attempt whose answer was lost answers
/// the retry with its first answer. Each action is definite once its own answer is: applied or
/// refused (4xx). An action answered 5xx, or in a request that went unanswered, is retried.
pub async fn complete_all(ctx: &Ctx, cursor: &Cursor, actions: &[Action<'_>]) {
    let Some(first) = actions.first() else {
        return;
    };
    let invoke = ctx.history.now();
    let request = format!("chaos-batch-{}-{}", first.row, first.fence);
    let list: Vec<RowActionItem> = actions
        .iter()
        .map(|a| RowActionItem {
            row: a.row,
            action: a.action.clone(),
        })
        .collect();
    let mut definite: Vec<Option<Completion>> = vec![None; actions.len()];
    let mut latest = vec![Completion::Refused("never sent".into()); actions.len()];
    let mut node = ctx.conn.node_id(cursor.get());
    for _ in 0..4 {
        node = ctx.conn.node_id(cursor.get());
        let (list, request) = (list.clone(), request.clone());
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.for_request(request).row_actions(&list).await
            })
            .await;
        match attempt {
            Attempt::Ok(answers) => {
                for (i, answer) in answers.iter().enumerate().take(actions.len()) {
                    if definite[i].is_some() {
                        continue;
                    }
                    match answer {
                        RowActionResult::Applied(a) => definite[i] = Some(accepted(a)),
                        RowActionResult::Refused(refused) => {
                            let code = refused.error.code.clone();
                            if (400..500).contains(&refused.status) {
                                definite[i] = Some(Completion::Refused(code));
                            } else {
                                latest[i] = Completion::Unknown(code);
                            }
                        }
                    }
                }
                if definite.iter().all(Option::is_some) {
                    break;
                }
                cursor.advance();
                ctx.sleep(Duration::from_millis(200)).await;
            }
            Attempt::Refused { code, .. } => {
                for d in definite.iter_mut().filter(|d| d.is_none()) {
                    *d = Some(Completion::Refused(code.clone()));
                }
                break;
            }
            Attempt::NotSent(e) => {
                for l in latest.iter_mut() {
                    if !matches!(l, Completion::Unknown(_)) {
                        *l = Completion::Refused(format!("never sent: {e}"));
                    }
                }
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
            }
            Attempt::Unknown(e) => {
                for l in latest.iter_mut() {
                    *l = Completion::Unknown(e.clone());
                }
                cursor.advance();
                ctx.sleep(Duration::from_millis(200)).await;
            }
        }
        if !ctx.working() {
            break;
        }
    }
    for ((a, d), l) in actions.iter().zip(definite).zip(latest) {
        record(ctx, a, invoke, d.unwrap_or(l), node);
    }
}

fn record(ctx: &Ctx, a: &Action<'_>, invoke: Micros, result: Completion, node: u64) {
    ctx.history.completion(CompletionRec {
        row: a.row,
        fence: a.fence,
        action: a.action.name().to_string(),
        lane: a.lane.to_string(),
        after_stall: a.after_stall,
        invoke,
        complete: ctx.history.now(),
        result,
        node,
    });
}
