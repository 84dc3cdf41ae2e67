//! Appends to the `chaos` org's audit chain; each append carries a unique detail so the checker
//! can find it (and find it twice, were it applied twice).

use super::{Ctx, AUDIT_ORG};
use crate::conn::{Attempt, Cursor};
use crate::history::{AuditOp, Seen};
use crate::prng::SplitMix64;
use std::sync::Arc;
use std::time::Duration;

pub async fn run(ctx: Arc<Ctx>, mut rng: SplitMix64) {
    let cursor = Cursor::new(2);
    let mut n = 0u64;
    while ctx.producing() {
        n += 1;
        let detail = format!("{}-a-{n}", ctx.run);
        let invoke = ctx.history.now();
        let d = detail.clone();
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.audit_append("chaos.op", Some(AUDIT_ORG), Some(&d)).await
            })
            .await;
        let result = match attempt {
            Attempt::Ok(v) => Seen::Ok((v.seq, v.hash)),
            Attempt::Refused { code, .. } => Seen::Refused(code),
            Attempt::NotSent(e) => {
                cursor.advance();
                Seen::Refused(format!("never sent: {e}"))
            }
            Attempt::Unknown(e) => {
                cursor.advance();
                Seen::Unknown(e)
            }
        };
        ctx.history.audit(AuditOp {
            org: AUDIT_ORG.to_string(),
            detail,
            invoke,
            complete: ctx.history.now(),
            result,
        });
        ctx.sleep(Duration::from_millis(rng.range(100, 300))).await;
    }
}
