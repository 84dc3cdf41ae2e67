//! The config compare-and-set loop: read the config (version + register value), then CAS a new
//! unique value with `If-Match: version`. Every read and CAS is recorded with its invocation and
//! completion time for the linearizability checker.

use super::{Ctx, REGISTER_CHANNEL};
use crate::conn::{Attempt, Cursor};
use crate::history::{RegCall, RegOp, RegReturn, RegState, Seen};
use crate::prng::SplitMix64;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The register value inside a config document (what [`with_value`] writes).
pub fn register_value(config: &Value) -> Option<String> {
    config["channels"][REGISTER_CHANNEL]["description"]
        .as_str()
        .map(str::to_string)
}

/// The config document with the register set to `value` (everything else kept).
pub fn with_value(doc: &Value, value: &str) -> Value {
    let mut doc = if doc.is_object() {
        doc.clone()
    } else {
        json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {}, "approvals_required": [] })
    };
    if !doc["channels"].is_object() {
        doc["channels"] = json!({});
    }
    doc["channels"][REGISTER_CHANNEL] = json!({ "description": value });
    // The register's entry names a channel, so the section would take that one alone
    // (docs/SPEC.md §4.10): "*" keeps every producer channel open.
    doc["channels"]["*"] = json!({});
    doc
}

pub async fn run(ctx: Arc<Ctx>, client: usize, mut rng: SplitMix64) {
    let cursor = Cursor::new(client);
    let mut n = 0u64;
    while ctx.producing() {
        let invoke = ctx.history.now();
        let node = ctx.conn.node_id(cursor.get());
        let attempt = ctx
            .conn
            .once(cursor.get(), |c| async move { c.config().await })
            .await;
        let complete = ctx.history.now();
        let (version, doc) = match attempt {
            Attempt::Ok(v) => {
                let config = serde_json::to_value(&v.config).unwrap_or_default();
                let state = RegState {
                    version: v.version,
                    value: register_value(&config),
                };
                let version = state.version;
                ctx.history.register(RegOp {
                    client,
                    node,
                    invoke,
                    complete,
                    call: RegCall::Read,
                    ret: RegReturn::Read(state),
                });
                (version, config)
            }
            Attempt::Refused { code, .. } => {
                ctx.history.count("config-read", &Seen::<()>::Refused(code));
                ctx.sleep(Duration::from_millis(200)).await;
                continue;
            }
            Attempt::NotSent(e) | Attempt::Unknown(e) => {
                ctx.history.count("config-read", &Seen::<()>::Unknown(e));
                cursor.advance();
                ctx.sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        n += 1;
        let value = format!("{}-c{client}-{n}", ctx.run);
        let new_doc = with_value(&doc, &value);
        let invoke = ctx.history.now();
        let node = ctx.conn.node_id(cursor.get());
        let attempt = ctx
            .conn
            .once(cursor.get(), move |c| async move {
                c.put_config(version, new_doc).await
            })
            .await;
        let complete = ctx.history.now();
        let ret = match attempt {
            Attempt::Ok(v) => Some(RegReturn::CasOk(v)),
            Attempt::Refused { status: 412, .. } => Some(RegReturn::CasFailed),
            Attempt::Refused { code, message, .. } => {
                tracing::warn!(%code, %message, "config CAS refused for another reason");
                ctx.history.count("config-cas", &Seen::<()>::Refused(code));
                None
            }
            Attempt::NotSent(e) => {
                ctx.history.count(
                    "config-cas",
                    &Seen::<()>::Refused(format!("never sent: {e}")),
                );
                cursor.advance();
                None
            }
            Attempt::Unknown(_) => {
                cursor.advance();
                Some(RegReturn::Unknown)
            }
        };
        if let Some(ret) = ret {
            ctx.history.register(RegOp {
                client,
                node,
                invoke,
                complete,
                call: RegCall::Cas {
                    expected: version,
                    value,
                },
                ret,
            });
        }
        ctx.sleep(Duration::from_millis(rng.range(50, 250))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_register_and_keeps_the_rest() {
        let doc = json!({ "channels": { "c0": {"description": null} }, "destinations": {"x": {}}, "handlers": {}, "retention": {}, "approvals_required": [] });
        let d = with_value(&doc, "v1");
        assert_eq!(register_value(&d).as_deref(), Some("v1"));
        assert_eq!(d["destinations"]["x"], json!({}));
        assert!(d["channels"]["c0"].is_object());
        assert_eq!(
            register_value(&with_value(&Value::Null, "v2")).as_deref(),
            Some("v2")
        );
    }
}
