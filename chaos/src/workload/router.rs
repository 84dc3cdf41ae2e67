//! The router: claims due ingress rows (unordered ClaimReady) and hands each message off to its
//! outbound destinations, so messages reach the FIFO lanes quickly.

use super::completion::{complete, complete_all, Action};
use super::{Ctx, DESTINATIONS};
use crate::conn::{Attempt, Cursor};
use crate::history::{ClaimRec, Seen};
use crate::prng::SplitMix64;
use raftlane_client::contract::{DeliveryBody, HandoffBody, HandoffDisposition, Stage};
use raftlane_client::RowAction;
use std::sync::Arc;
use std::time::Duration;

/// Where a message goes, derived from its id: mostly one destination, sometimes two, sometimes
/// none (filtered).
pub fn destinations(message_id: u64) -> Vec<&'static str> {
    let h = SplitMix64::new(message_id).next_u64();
    let n = DESTINATIONS.len() as u64;
    let first = DESTINATIONS[(h % n) as usize];
    match (h >> 8) % 20 {
        0 => vec![],
        1 | 2 => vec![first, DESTINATIONS[((h % n + 1) % n) as usize]],
        _ => vec![first],
    }
}

pub async fn run(ctx: Arc<Ctx>, id: usize, mut rng: SplitMix64) {
    let owner = format!("router-{id}");
    let cursor = Cursor::new(id + 1);
    let ttl = ctx.cfg.lease_ttl.as_millis() as u64;
    while ctx.working() {
        let o = owner.clone();
        let invoke = ctx.history.now();
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.claim_ready(Stage::Ingress, 8, &o, ttl, None).await
            })
            .await;
        let rows = match attempt {
            Attempt::Ok(rows) => {
                ctx.history.count("claim-ready", &Seen::Ok(()));
                rows
            }
            Attempt::Refused { code, .. } => {
                ctx.history.count("claim-ready", &Seen::<()>::Refused(code));
                ctx.sleep(Duration::from_millis(200)).await;
                continue;
            }
            Attempt::NotSent(e) | Attempt::Unknown(e) => {
                ctx.history.count("claim-ready", &Seen::<()>::Unknown(e));
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if rows.is_empty() {
            ctx.sleep(Duration::from_millis(rng.range(60, 140))).await;
            continue;
        }
        // Odd routers hand on a whole claim in one request (`POST /v1/rows/actions`), even
        // ones row by row, so both paths run under the faults.
        let batch = id % 2 == 1;
        let lanes: Vec<String> = rows
            .iter()
            .map(|row| format!("ingress:{}", row.channel_id))
            .collect();
        let mut actions = Vec::with_capacity(rows.len());
        for (row, lane) in rows.iter().zip(&lanes) {
            ctx.history.claim(ClaimRec {
                row: row.row_id.0,
                message: row.message_id.0,
                lane: lane.clone(),
                owner: owner.clone(),
                fence: row.fence.0,
                invoke,
                at: ctx.history.now(),
                ttl_ms: ttl,
                node: ctx.conn.node_id(cursor.get()),
            });
            let stall = rng.chance(ctx.cfg.stall_percent / 2);
            if stall {
                ctx.sleep(ctx.cfg.lease_ttl + Duration::from_millis(rng.range(500, 1500)))
                    .await;
            }
            let dests = destinations(row.message_id.0);
            let deliveries: Vec<DeliveryBody> = dests
                .iter()
                .map(|d| DeliveryBody {
                    destination: d.to_string(),
                    payload: format!("m{} to {d}", row.message_id.0),
                })
                .collect();
            let disposition = if dests.is_empty() {
                HandoffDisposition::Filtered
            } else {
                HandoffDisposition::Routed
            };
            let action = Action {
                row: row.row_id.0,
                fence: row.fence.0,
                action: RowAction::Handoff(HandoffBody {
                    fence: row.fence,
                    deliveries,
                    disposition: Some(disposition),
                    claim_next: None,
                }),
                lane,
                after_stall: stall,
            };
            if batch {
                actions.push(action);
            } else {
                complete(&ctx, &cursor, action).await;
            }
            if !ctx.working() {
                break;
            }
        }
        complete_all(&ctx, &cursor, &actions).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_a_deterministic_mix() {
        let mut none = 0;
        let mut two = 0;
        for id in 1..2000 {
            let d = destinations(id);
            assert_eq!(d, destinations(id));
            match d.len() {
                0 => none += 1,
                2 => {
                    two += 1;
                    assert_ne!(d[0], d[1]);
                }
                _ => {}
            }
        }
        assert!(none > 20 && two > 50, "none {none}, two {two}");
    }
}
