//! A fenced row action, retried across ambiguous failures under one request id, and recorded
//! with what it is known to have done. The request id makes the retries exactly-once: an
//! attempt that was applied although its answer was lost answers every retry with its first
//! answer (and the original log index), so a completion ends definite unless every attempt
//! went unanswered.

use super::Ctx;
use crate::conn::{Attempt, Cursor};
use crate::history::{Completion, CompletionRec};
use serde_json::Value;
use std::time::Duration;

pub struct Action<'a> {
    pub row: u64,
    pub fence: u64,
    /// `done`, `handoff`, `fail`.
    pub action: &'a str,
    pub lane: &'a str,
    pub after_stall: bool,
    pub body: Value,
}

/// Run the action; returns what it is known to have done and, when answered, the answer's body.
pub async fn complete(ctx: &Ctx, cursor: &Cursor, a: Action<'_>) -> (Completion, Option<Value>) {
    let invoke = ctx.history.now();
    let request = format!("chaos-{}-{}-{}", a.row, a.fence, a.action);
    let mut unanswered = false;
    let mut result = Completion::Refused("never sent".into());
    let mut answer = None;
    let mut node = ctx.conn.node_id(cursor.get());
    for _ in 0..4 {
        node = ctx.conn.node_id(cursor.get());
        let (row, action, body) = (a.row, a.action.to_string(), a.body.clone());
        let request = request.clone();
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.for_request(request).row(row, &action, body).await
            })
            .await;
        match attempt {
            // With one request id, a retry's answer is the first application's answer: it is
            // definite even after unanswered attempts.
            Attempt::Ok(v) => {
                result = if v["applied"] == Value::Bool(false) {
                    // Already consumed under this fence by a handoff that was not ours.
                    Completion::NoOp
                } else {
                    Completion::Accepted {
                        index: v["index"].as_u64(),
                    }
                };
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
    ctx.history.completion(CompletionRec {
        row: a.row,
        fence: a.fence,
        action: a.action.to_string(),
        lane: a.lane.to_string(),
        after_stall: a.after_stall,
        invoke,
        complete: ctx.history.now(),
        result: result.clone(),
        node,
    });
    (result, answer)
}
