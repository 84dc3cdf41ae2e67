//! Encryption at rest (docs/SPEC.md §2.6) through the real router over loopback HTTP, on a
//! LocalBackend: what the state holds is ciphertext, what the API serves is plaintext, poison
//! rows are contained at claim, and key rotation re-encrypts everything (or stops, writing
//! nothing).

use axum::http::Method;
use raftlane_api::backend::{self, Backend};
use raftlane_api::crypto::Keyring;
use raftlane_api::peer::PeerClient;
use raftlane_api::{ApiConfig, LocalBackend};
use raftlane_statemachine::wire::rewrite::ValueRef;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const ADMIN: &str = "admin-secret";
const TTL: u64 = 120_000;

fn keyring(keys: &[(&str, u8)]) -> Keyring {
    Keyring::new(
        keys.iter()
            .map(|(id, b)| (id.to_string(), [*b; 32]))
            .collect(),
    )
    .expect("keyring")
}

/// A router over `backend` with `keyring` (several may share one backend: a node restarted
/// with another keyring).
struct Api {
    base: String,
    http: PeerClient,
    backend: Arc<LocalBackend>,
}

async fn start_on(backend: Arc<LocalBackend>, keyring: Option<Keyring>) -> Api {
    let config = ApiConfig {
        admin_token: ADMIN.into(),
        cluster_secret: "cs".into(),
        keyring,
        ..Default::default()
    };
    let dyn_backend: Arc<dyn Backend> = backend.clone();
    let addr = raftlane_testkit::api::serve(dyn_backend, &config).await;
    Api {
        base: format!("http://{addr}"),
        http: PeerClient::new(Duration::from_secs(10)),
        backend,
    }
}

async fn start(keyring: Option<Keyring>) -> Api {
    start_on(Arc::new(LocalBackend::new()), keyring).await
}

impl Api {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let (headers, bytes) = raftlane_testkit::http::json_request(Some(ADMIN), body);
        let url = format!("{}{}", self.base, path);
        let (status, _, raw) = self
            .http
            .call(method.clone(), &url, &headers, bytes)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        (
            status.as_u16(),
            serde_json::from_slice(&raw).unwrap_or(Value::Null),
        )
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.call(Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, out) = self.call(Method::POST, path, Some(body)).await;
        assert!((200..300).contains(&status), "POST {path}: {status} {out}");
        out
    }

    async fn enqueue(&self, channel: &str, raw: &str) -> u64 {
        let r = self
            .post(
                &format!("/v1/channels/{channel}/messages"),
                json!({ "raw": raw }),
            )
            .await;
        r["message_id"].as_u64().expect("message_id")
    }

    async fn claim(&self, stage: &str, channel: Option<&str>) -> Vec<Value> {
        let r = self
            .post(
                "/v1/claims",
                json!({ "stage": stage, "limit": 100, "owner": "w", "ttl_ms": TTL, "channel": channel }),
            )
            .await;
        r["items"].as_array().expect("items").clone()
    }

    async fn action(&self, item: &Value, action: &str, mut body: Value) -> Value {
        body["fence"] = item["fence"].clone();
        self.post(&format!("/v1/rows/{}/{action}", item["row_id"]), body)
            .await
    }

    async fn fifo(&self, lane: &str) -> Value {
        self.post(
            &format!("/v1/lanes/outbound/{lane}/claim"),
            json!({ "owner": "w", "ttl_ms": TTL }),
        )
        .await
    }

    async fn rotate(&self) -> (u16, Value) {
        self.call(
            Method::POST,
            "/v1/keys/rotate",
            Some(json!({ "batch_size": 3 })),
        )
        .await
    }

    /// Every covered value as stored (what the Raft log and the disks hold).
    fn stored(&self) -> Vec<(ValueRef, String)> {
        backend::read(self.backend.as_ref(), |r| {
            r.covered_values(None, usize::MAX)
        })
        .expect("read")
    }

    fn stored_raw(&self, id: u64) -> String {
        backend::read(self.backend.as_ref(), |r| {
            r.message(raftlane_statemachine::MessageId(id))
        })
        .expect("read")
        .expect("message")
        .message
        .raw
    }

    async fn digest(&self) -> [u8; 32] {
        self.backend.digest().await.expect("digest").1
    }
}

/// Enqueue → route → transform (with state) → fail once → complete with a response, plus a
/// reference snapshot and a dead letter: every kind of covered value. Returns the message ids.
async fn pipeline(api: &Api, tag: &str) -> (u64, u64) {
    let mid = api.enqueue("orders", &format!("SECRET ORDER {tag}")).await;
    let items = api.claim("ingress", Some("orders")).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["payload"], format!("SECRET ORDER {tag}"));
    api.action(
        &items[0],
        "route",
        json!({ "handlers": [{ "handler": "h", "payload": format!("handler-{tag}") }] }),
    )
    .await;
    let routed = api.claim("routed", Some("orders")).await;
    assert_eq!(routed[0]["payload"], format!("handler-{tag}"));
    api.action(
        &routed[0],
        "transform",
        json!({
            "deliveries": [{ "destination": format!("wh-{tag}"), "payload": format!("out-{tag}") }],
            "state_ops": [{ "namespace": "ns", "key": tag, "value": { "secret": tag } }]
        }),
    )
    .await;
    let out = api.claim("outbound", Some("orders")).await;
    assert_eq!(out[0]["payload"], format!("out-{tag}"));
    let r = api
        .action(
            &out[0],
            "fail",
            json!({ "error": format!("boom-{tag}"), "retry": { "backoff_ms": 0, "multiplier": 1.0, "max_backoff_ms": 0 } }),
        )
        .await;
    assert_eq!(r["dead"], false);
    let out = api.claim("outbound", Some("orders")).await;
    assert_eq!(out.len(), 1);
    api.action(
        &out[0],
        "response",
        json!({ "body": format!("resp-{tag}"), "outcome": "ok", "detail": format!("detail-{tag}") }),
    )
    .await;
    let (status, _) = api
        .call(
            Method::PUT,
            &format!("/v1/reference/ref-{tag}"),
            Some(json!({ "version": 1, "rows": { "k": format!("refval-{tag}") } })),
        )
        .await;
    assert_eq!(status, 200);
    // A dead letter.
    let dead_mid = api.enqueue("orders", &format!("poison-{tag}")).await;
    let items = api.claim("ingress", Some("orders")).await;
    api.action(
        &items[0],
        "handoff",
        json!({ "deliveries": [{ "destination": format!("dl-{tag}"), "payload": format!("dlpay-{tag}") }] }),
    )
    .await;
    let out = api.claim("outbound", Some("orders")).await;
    api.action(&out[0], "dead", json!({ "error": format!("dead-{tag}") }))
        .await;
    (mid, dead_mid)
}

/// What a reader sees of everything `pipeline` wrote.
async fn assert_plaintext_reads(api: &Api, tag: &str, mid: u64) {
    let view = api
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    assert_eq!(view["message"]["raw"], format!("SECRET ORDER {tag}"));
    let rows = view["rows"].as_array().expect("rows");
    let outbound = rows
        .iter()
        .find(|r| r["stage"] == "outbound")
        .expect("outbound row");
    assert_eq!(outbound["payload"], format!("out-{tag}"));
    assert_eq!(outbound["last_error"], format!("boom-{tag}"));
    let details: Vec<String> = view["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["detail"].as_str().map(str::to_string))
        .collect();
    assert!(
        details.contains(&format!("attempt 1: boom-{tag}")),
        "{details:?}"
    );
    assert!(
        details.iter().all(|d| !d.contains("enc:v1:")),
        "{details:?}"
    );
    assert_eq!(view["responses"][0]["body"], format!("resp-{tag}"));
    assert_eq!(view["responses"][0]["detail"], format!("detail-{tag}"));
    let state = api.get(&format!("/v1/state/ns/{tag}")).await;
    assert_eq!(state["value"], json!({ "secret": tag }));
    let reference = api.get(&format!("/v1/reference/ref-{tag}")).await;
    assert_eq!(reference["rows"]["k"], format!("refval-{tag}"));
    let dead = api
        .get(&format!("/v1/dead-letters?destination=dl-{tag}"))
        .await;
    assert_eq!(dead["dead_letters"][0]["last_error"], format!("dead-{tag}"));
    // Lists carry no payloads (docs/SPEC.md §9.7): the row read does.
    let row = dead["dead_letters"][0]["id"].as_u64().expect("row id");
    let row = api.get(&format!("/v1/rows/{row}")).await;
    assert_eq!(row["row"]["payload"], format!("dlpay-{tag}"));
    let list = api.get("/v1/messages?channel=orders&limit=1000").await;
    assert!(list["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .any(|m| m["id"] == mid && m.get("raw").is_none()));
}

/// Every stored covered value that is not empty is one token under `key`, and no stored value
/// contains `needle` in the clear.
fn assert_all_stored_under(api: &Api, key: &str, needles: &[&str]) {
    let prefix = format!("enc:v1:{key}:");
    for (target, value) in api.stored() {
        assert!(
            value.is_empty() || value.starts_with(&prefix),
            "{target:?} stored as {value:?}, expected {prefix}…"
        );
        for n in needles {
            assert!(!value.contains(n), "{target:?} leaks {n}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn values_are_stored_encrypted_and_served_in_plaintext() {
    let api = start(Some(keyring(&[("k1", 1)]))).await;
    let (mid, _) = pipeline(&api, "a").await;
    let raw = api.stored_raw(mid);
    assert!(raw.starts_with("enc:v1:k1:"), "stored raw: {raw}");
    assert!(!raw.contains("SECRET"));
    // Row payloads, errors, response body/detail, state and reference values: all ciphertext.
    // Event details the state machine composed around a ciphertext carry it embedded.
    for (target, value) in api.stored() {
        match target {
            ValueRef::EventDetail { .. } => {
                assert!(
                    !value.contains("boom-a") && !value.contains("dead-a"),
                    "{value}"
                );
            }
            _ => assert!(
                value.is_empty() || value.starts_with("enc:v1:k1:"),
                "{target:?} stored as {value}"
            ),
        }
    }
    assert_plaintext_reads(&api, "a", mid).await;

    // Encryption off: the same API stores and serves plaintext, as before the feature.
    let plain = start(None).await;
    let id = plain.enqueue("c", "clear text").await;
    assert_eq!(plain.stored_raw(id), "clear text");
    let items = plain.claim("ingress", None).await;
    assert_eq!(items[0]["payload"], "clear text");
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_plaintext_is_served_as_is() {
    // Written before encryption was turned on, read after.
    let backend = Arc::new(LocalBackend::new());
    let before = start_on(backend.clone(), None).await;
    let mid = before.enqueue("c", "legacy body").await;
    let after = start_on(backend, Some(keyring(&[("k1", 1)]))).await;
    let view = after
        .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
        .await;
    assert_eq!(view["message"]["raw"], "legacy body");
    let items = after.claim("ingress", None).await;
    assert_eq!(items[0]["payload"], "legacy body");
}

#[tokio::test(flavor = "multi_thread")]
async fn undecryptable_rows_are_dead_lettered_at_claim_and_the_lane_moves_on() {
    let backend = Arc::new(LocalBackend::new());
    // Written under k0, a key the restarted node no longer has.
    let old = start_on(backend.clone(), Some(keyring(&[("k0", 7)]))).await;
    let mut lost = Vec::new();
    for i in 0..2 {
        let mid = old.enqueue("c", &format!("lost {i}")).await;
        let items = old.claim("ingress", None).await;
        old.action(
            &items[0],
            "handoff",
            json!({ "deliveries": [{ "destination": "fifo", "payload": format!("lost-{i}") }] }),
        )
        .await;
        lost.push(mid);
    }
    // An ingress row under k0 too, for the unordered claim.
    let lost_ingress = old.enqueue("c", "lost ingress").await;
    let api = start_on(backend, Some(keyring(&[("k1", 1)]))).await;
    let good = api.enqueue("c", "good").await;
    let items = api.claim("ingress", None).await;
    api.action(
        &items[0],
        "handoff",
        json!({ "deliveries": [{ "destination": "fifo", "payload": "good-payload" }] }),
    )
    .await;
    assert_eq!(items.len(), 1, "the k0 ingress row is never returned");
    assert_eq!(items[0]["message_id"], good);

    // FIFO: the two undecryptable heads are dead-lettered, the claim returns the good row.
    let r = api.fifo("fifo").await;
    assert_eq!(r["item"]["message_id"], good, "{r}");
    assert_eq!(r["item"]["payload"], "good-payload");
    for mid in lost.iter().chain([&lost_ingress]) {
        let view = api
            .get(&format!("/v1/messages/{mid}?body=true&record_view=false"))
            .await;
        assert_eq!(view["message"]["status"], "error", "{view}");
        let dead = view["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["status"] == "dead")
            .expect("a dead row");
        let err = dead["last_error"].as_str().expect("error");
        assert!(
            err.starts_with("undecryptable payload (key k0)"),
            "error: {err}"
        );
        // Still the original ciphertext: replayable once the key is back.
        assert!(dead["payload"]
            .as_str()
            .is_some_and(|p| p.starts_with("enc:v1:k0:")));
    }
    let lane = api.get("/v1/lanes/outbound/fifo").await;
    assert_eq!(lane["depth"], 0);
    assert_eq!(lane["inflight"], 1);

    // With k0 back in the keyring, a replayed poison row is deliverable again.
    let healed = start_on(api.backend.clone(), Some(keyring(&[("k1", 1), ("k0", 7)]))).await;
    healed
        .post(&format!("/v1/messages/{}/replay", lost[0]), json!({}))
        .await;
    let out = healed.claim("outbound", None).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["payload"], "lost-0");
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_re_encrypts_everything_under_the_new_key() {
    let backend = Arc::new(LocalBackend::new());
    let v1 = start_on(backend.clone(), Some(keyring(&[("k1", 1)]))).await;
    let (mid_a, _) = pipeline(&v1, "a").await;
    // Legacy plaintext from before encryption was on.
    let clear = start_on(backend.clone(), None).await;
    let legacy = clear.enqueue("legacy", "legacy clear text").await;

    let v2 = start_on(backend.clone(), Some(keyring(&[("k2", 2), ("k1", 1)]))).await;
    let (mid_b, _) = pipeline(&v2, "b").await;
    let before: Vec<_> = v2.stored();
    let (status, r) = v2.rotate().await;
    assert_eq!(status, 200, "{r}");
    let rewritten = r["rewritten"].as_u64().expect("rewritten");
    let skipped = r["skipped"].as_u64().expect("skipped");
    assert!(rewritten > 0 && skipped > 0, "{r}");
    assert_eq!(r["conflicts"], 0);
    assert!(r["batches"].as_u64().expect("batches") >= 2, "{r}");
    assert_eq!(r["active_key"], "k2");
    assert_eq!(
        rewritten + skipped,
        before.len() as u64,
        "every covered value accounted for"
    );
    assert_all_stored_under(&v2, "k2", &["SECRET", "boom-", "resp-", "legacy clear"]);

    // Old-key data is now readable with the new key alone.
    let only_k2 = start_on(backend.clone(), Some(keyring(&[("k2", 2)]))).await;
    assert_plaintext_reads(&only_k2, "a", mid_a).await;
    assert_plaintext_reads(&only_k2, "b", mid_b).await;
    let view = only_k2
        .get(&format!(
            "/v1/messages/{legacy}?body=true&record_view=false"
        ))
        .await;
    assert_eq!(view["message"]["raw"], "legacy clear text");
    // ...and no longer with the old key alone.
    let only_k1 = start_on(backend.clone(), Some(keyring(&[("k1", 1)]))).await;
    let view = only_k1
        .get(&format!("/v1/messages/{mid_a}?body=true&record_view=false"))
        .await;
    assert!(view["message"]["raw"]
        .as_str()
        .is_some_and(|r| r.starts_with("enc:v1:k2:")));

    // The audit trail records each batch.
    let audit = v2.get("/v1/audit?org=default&limit=1000").await;
    let rotations = audit["rows"]
        .as_array()
        .or_else(|| audit["audit"].as_array())
        .expect("audit rows")
        .iter()
        .filter(|row| row["action"] == "keys.rotate")
        .count() as u64;
    assert_eq!(rotations, r["batches"].as_u64().expect("batches"));

    // A second rotation finds nothing to do.
    let (status, again) = v2.rotate().await;
    assert_eq!(status, 200);
    assert_eq!(again["rewritten"], 0);
    assert_eq!(again["batches"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_stops_on_an_undecryptable_value_with_nothing_written() {
    let backend = Arc::new(LocalBackend::new());
    let lost = start_on(backend.clone(), Some(keyring(&[("k0", 7)]))).await;
    let v1 = start_on(backend.clone(), Some(keyring(&[("k1", 1)]))).await;
    // Plenty of rotatable values first, so the bad one is in a later batch.
    let _ = pipeline(&v1, "a").await;
    let bad = lost.enqueue("zz", "under a lost key").await;
    let _ = pipeline(&v1, "b").await;

    let v2 = start_on(backend.clone(), Some(keyring(&[("k2", 2), ("k1", 1)]))).await;
    let stored_before = v2.stored();
    let digest_before = v2.digest().await;
    let (status, r) = v2.rotate().await;
    assert_eq!(status, 409, "{r}");
    assert_eq!(r["error"]["code"], "undecryptable");
    assert_eq!(r["error"]["key_id"], "k0");
    assert_eq!(
        r["error"]["ref"],
        json!({ "message_raw": { "message_id": bad } })
    );
    assert_eq!(v2.stored(), stored_before, "nothing rewritten");
    assert_eq!(v2.digest().await, digest_before, "nothing proposed at all");

    // No keyring: rotation is refused.
    let off = start_on(backend, None).await;
    let (status, r) = off.rotate().await;
    assert_eq!(status, 409, "{r}");
    assert_eq!(r["error"]["code"], "no_keyring");
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_is_admin_only_and_listed() {
    let api = start(Some(keyring(&[("k1", 1)]))).await;
    let r = api
        .post(
            "/v1/tokens",
            json!({ "name": "op", "role": "operator", "channels": null }),
        )
        .await;
    let token = r["token"].as_str().expect("token").to_string();
    let url = format!("{}/v1/keys/rotate", api.base);
    let (status, _, _) = api
        .http
        .call(
            Method::POST,
            &url,
            &[("authorization", format!("Bearer {token}"))],
            Vec::new(),
        )
        .await
        .expect("call");
    assert_eq!(status.as_u16(), 403);
    let doc = api.get("/openapi.json").await;
    assert!(doc["paths"]["/v1/keys/rotate"]["post"].is_object(), "{doc}");
}
