//! Producers: enqueue with an idempotency key; on an ambiguous failure retry the same key
//! (safe: the cluster deduplicates) on the next node until acknowledged or out of time.

use super::{Ctx, CHANNELS};
use crate::conn::{Attempt, Cursor};
use crate::history::{EnqueueOp, Seen};
use crate::prng::SplitMix64;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one enqueue keeps retrying.
pub const ENQUEUE_DEADLINE: Duration = Duration::from_secs(30);

pub async fn run(ctx: Arc<Ctx>, id: usize, mut rng: SplitMix64) {
    let cursor = Cursor::new(id);
    let mut n = 0u64;
    while ctx.producing() {
        n += 1;
        let key = format!("{}-p{id}-{n}", ctx.run);
        let channel = CHANNELS[(id + n as usize) % CHANNELS.len()].to_string();
        let raw = format!("chaos message {key}");
        let invoke = ctx.history.now();
        let started = Instant::now();
        let mut attempts = 0u32;
        let mut pause = Duration::from_millis(50);
        let result = loop {
            attempts += 1;
            let (k, ch, body) = (key.clone(), channel.clone(), raw.clone());
            let attempt = ctx
                .conn
                .once(cursor.get(), move |c| async move {
                    c.enqueue(&ch, &body, Some(&k)).await
                })
                .await;
            let last = match attempt {
                Attempt::Ok(e) => break Seen::Ok(e.message_id.0),
                Attempt::Refused { code, .. } => break Seen::Refused(code),
                Attempt::NotSent(e) | Attempt::Unknown(e) => e,
            };
            cursor.advance();
            if started.elapsed() + pause > ENQUEUE_DEADLINE
                || Instant::now() + pause >= ctx.hard_deadline
            {
                break Seen::Unknown(last);
            }
            ctx.sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(1000));
        };
        ctx.history.enqueue(EnqueueOp {
            key,
            channel,
            invoke,
            complete: ctx.history.now(),
            attempts,
            result,
        });
        let base = ctx.cfg.produce_every.as_millis() as u64;
        ctx.sleep(Duration::from_millis(rng.range(base / 2, base * 3 / 2)))
            .await;
    }
}
