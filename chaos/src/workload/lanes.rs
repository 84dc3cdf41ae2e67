//! Lane workers: claim an outbound lane's head (strict FIFO) and complete it, one row at a time.
//! Now and then a worker fails a row (it is retried with backoff, blocking its lane) or stalls
//! past its lease and then tries to complete with the old fence. After an unanswered claim or
//! completion a worker simply claims again under the same owner name: a row it still holds in
//! the lane comes back under the same fence, so nothing behind it can overtake it.
//! Half of the `done`s also claim the lane's next row in the same write (`claim_next`).

use super::completion::{complete, Action};
use super::{wall_ms, Ctx};
use crate::conn::{Attempt, Cursor};
use crate::history::{ClaimRec, Micros, Seen};
use crate::prng::SplitMix64;
use raftlane_client::contract::{ClaimNext, DoneBody, FailBody, FifoEmptyReason, RetryBody};
use raftlane_client::{FifoClaim, RowAction, RowAnswer};
use std::sync::Arc;
use std::time::Duration;

pub async fn run(ctx: Arc<Ctx>, lane: &'static str, k: usize, mut rng: SplitMix64) {
    let cursor = Cursor::new(k + lane.len());
    let ttl = ctx.cfg.lease_ttl.as_millis() as u64;
    let lane_key = format!("outbound:{lane}");
    let owner = format!("w-{lane}-{k}");
    // The next row's claim as answered by a `done` with `claim_next`.
    let mut chained: Option<(FifoClaim, u64, Micros)> = None;
    while ctx.working() {
        let o = owner.clone();
        let mut invoke = ctx.history.now();
        let attempt = match chained.take() {
            Some((claim, node, sent)) => {
                invoke = sent;
                Attempt::Ok((claim, node))
            }
            None => {
                let node = ctx.conn.node_id(cursor.get());
                ctx.conn
                    .once(cursor.get(), move |c| async move {
                        c.claim_fifo("outbound", lane, &o, ttl).await
                    })
                    .await
                    .map(|c| (c, node))
            }
        };
        let (claim, node) = match attempt {
            Attempt::Ok(c) => {
                ctx.history.count("claim-fifo", &Seen::Ok(()));
                c
            }
            Attempt::Refused { code, .. } => {
                ctx.history.count("claim-fifo", &Seen::<()>::Refused(code));
                ctx.sleep(Duration::from_millis(200)).await;
                continue;
            }
            Attempt::NotSent(e) => {
                ctx.history.count("claim-fifo", &Seen::<()>::Refused(e));
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
                continue;
            }
            Attempt::Unknown(e) => {
                ctx.history.count("claim-fifo", &Seen::<()>::Unknown(e));
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(row) = claim.item else {
            let wait = match claim.reason {
                Some(FifoEmptyReason::NotDue) => claim
                    .due_at
                    .map(|d| d.saturating_sub(wall_ms()))
                    .unwrap_or(100)
                    .clamp(20, 500),
                Some(FifoEmptyReason::LaneBusy) => rng.range(150, 300),
                _ => rng.range(80, 160),
            };
            ctx.sleep(Duration::from_millis(wait)).await;
            continue;
        };
        let (row_id, fence) = (row.row_id.0, row.fence.0);
        ctx.history.claim(ClaimRec {
            row: row_id,
            message: row.message_id.0,
            lane: lane_key.clone(),
            owner: owner.clone(),
            fence,
            invoke,
            at: ctx.history.now(),
            ttl_ms: ttl,
            node,
        });
        let stall = rng.chance(ctx.cfg.stall_percent);
        if stall {
            ctx.sleep(ctx.cfg.lease_ttl + Duration::from_millis(rng.range(800, 2000)))
                .await;
        }
        let fail = !stall && rng.chance(ctx.cfg.fail_percent);
        let action = if fail {
            RowAction::Fail(FailBody {
                fence: row.fence,
                error: "chaos: transient failure".into(),
                retry: Some(RetryBody {
                    max_attempts: Some(6),
                    backoff_ms: 100,
                    multiplier: 2.0,
                    max_backoff_ms: 800,
                }),
            })
        } else if rng.chance(50) {
            RowAction::Done(DoneBody {
                fence: row.fence,
                claim_next: Some(ClaimNext {
                    owner: owner.clone(),
                    ttl_ms: ttl,
                }),
            })
        } else {
            RowAction::Done(DoneBody::new(row.fence))
        };
        let action = Action {
            row: row_id,
            fence,
            action,
            lane: &lane_key,
            after_stall: stall,
        };
        let node = ctx.conn.node_id(cursor.get());
        // No later than the `done` is sent: a row it claims next cannot be leased earlier.
        let sent = ctx.history.now();
        if let (
            _,
            Some(RowAnswer::Done {
                next: Some(next), ..
            }),
        ) = complete(&ctx, &cursor, action).await
        {
            chained = Some((next, node, sent));
        }
    }
}
