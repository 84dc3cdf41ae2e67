//! Black-box tests of the HTTP API: the real router served over real loopback HTTP, driven by
//! the typed [`Client`] and by raw requests (malformed bodies, missing headers, node-to-node
//! calls). Every case checks the status code and the JSON body.
//!
//! "Nothing was written" is checked with `GET /v1/cluster/digest`. Requests the API refuses before
//! proposing leave `(last_applied, digest)` untouched; requests the state machine rejects are
//! applied as no-ops that change nothing, not even its clock, so the digest stays the same.

mod support;

use axum::http::{HeaderMap, Method, StatusCode};
use bytes::Bytes;
use raftlane_api::app::{api_routes, now_ms};
use raftlane_api::client::{Client, FifoClaim};
use raftlane_api::internal::LEGACY_SECRET_HEADER;
use raftlane_api::peer::PeerClient;
use raftlane_api::{ApiConfig, LocalBackend, ProposeError};
use raftlane_statemachine::{codec, ClaimedRow, Command, Envelope, Outcome, Response};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const ADMIN: &str = "admin-secret";
const CLUSTER_SECRET: &str = "cs";
const MAX_BODY: usize = 64 * 1024;
const LONG_TTL: u64 = 120_000;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A running API over a fresh in-memory single node.
struct Api {
    base: String,
    http: PeerClient,
    /// The typed client with the bootstrap admin token.
    admin: Client,
}

/// One HTTP exchange as seen on the wire.
struct Resp {
    status: StatusCode,
    headers: HeaderMap,
    raw: Bytes,
    /// The body parsed as JSON (`Null` when empty or not JSON).
    body: Value,
}

impl Resp {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

async fn start() -> Api {
    let config = ApiConfig {
        admin_token: ADMIN.into(),
        cluster_secret: CLUSTER_SECRET.into(),
        max_body_bytes: MAX_BODY,
        ..Default::default()
    };
    let addr = support::serve(Arc::new(LocalBackend::new()), &config).await;
    Api {
        base: format!("http://{addr}"),
        http: PeerClient::new(Duration::from_secs(10)),
        admin: Client::new(vec![addr], ADMIN).with_deadline(Duration::from_secs(5)),
    }
}

impl Api {
    /// Send exactly these headers and bytes.
    async fn send_raw(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Resp {
        let url = format!("{}{}", self.base, path);
        let (status, headers, raw) = self
            .http
            .call(method.clone(), &url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            raw,
            body,
        }
    }

    /// A JSON call with an optional bearer token.
    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let (headers, bytes) = support::json_request(token, body);
        self.send_raw(method, path, &headers, bytes).await
    }

    async fn get_as(&self, token: &str, path: &str) -> Resp {
        self.call(Method::GET, path, Some(token), None).await
    }

    async fn post_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    async fn get(&self, path: &str) -> Resp {
        self.get_as(ADMIN, path).await
    }

    async fn post(&self, path: &str, body: Value) -> Resp {
        self.post_as(ADMIN, path, body).await
    }

    /// POST a body as JSON text exactly as given (malformed JSON included).
    async fn post_text(&self, path: &str, body: &str) -> Resp {
        let headers = [
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
        ];
        self.send_raw(Method::POST, path, &headers, body.as_bytes().to_vec())
            .await
    }

    /// `PUT /v1/config` with an optional `If-Match`.
    async fn put_config(&self, if_match: Option<&str>, doc: &Value) -> Resp {
        let mut headers = vec![
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
        ];
        if let Some(v) = if_match {
            headers.push(("if-match", v.to_string()));
        }
        self.send_raw(
            Method::PUT,
            "/v1/config",
            &headers,
            doc.to_string().into_bytes(),
        )
        .await
    }

    /// `(last_applied, digest)` of the node.
    async fn digest(&self) -> (u64, String) {
        let r = self.get("/v1/cluster/digest").await;
        ok(&r, 200);
        assert_eq!(r.body["node_id"], 1);
        let digest = r.body["digest"].as_str().expect("digest").to_string();
        assert_eq!(digest.len(), 64, "hex SHA-256");
        (
            r.body["last_applied"].as_u64().expect("last_applied"),
            digest,
        )
    }

    /// Enqueue `raw` on `channel` as admin; returns the message id.
    async fn enqueue(&self, channel: &str, raw: &str) -> u64 {
        let r = self
            .post(
                &format!("/v1/channels/{channel}/messages"),
                json!({ "raw": raw }),
            )
            .await;
        ok(&r, 201);
        assert_eq!(r.body["duplicate"], false);
        r.body["message_id"].as_u64().expect("message_id")
    }

    /// Claim every due ingress row of `channel` (unordered claim), sorted by message id.
    async fn claim_ingress(&self, channel: &str, limit: u32) -> Vec<Value> {
        let r = self
            .post("/v1/claims", json!({ "stage": "ingress", "limit": limit, "owner": "router", "ttl_ms": LONG_TTL, "channel": channel }))
            .await;
        ok(&r, 200);
        let mut items = r.body["items"].as_array().expect("items").clone();
        items.sort_by_key(|i| i["message_id"].as_u64());
        items
    }

    /// Hand a claimed ingress row straight to one outbound delivery.
    async fn handoff_to(&self, item: &Value, destination: &str, payload: &str) {
        let r = self
            .post(
                &format!("/v1/rows/{}/handoff", item["row_id"]),
                json!({ "fence": item["fence"], "deliveries": [{ "destination": destination, "payload": payload }] }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["applied"], true);
    }

    /// Enqueue one message on `channel` and route it straight to `destination`; returns its id.
    async fn message_at(&self, channel: &str, destination: &str) -> u64 {
        let id = self.enqueue(channel, "payload").await;
        let items = self.claim_ingress(channel, 10).await;
        assert_eq!(items.len(), 1);
        self.handoff_to(&items[0], destination, "payload").await;
        id
    }

    /// Claim the head of outbound lane `lane` for `owner` (which must get one).
    async fn claim_head(&self, lane: &str, owner: &str, ttl_ms: u64) -> ClaimedRow {
        self.admin
            .claim_fifo("outbound", lane, owner, ttl_ms)
            .await
            .expect("claim")
            .item
            .unwrap_or_else(|| panic!("{owner} should get the head of {lane}"))
    }

    /// Create a principal; returns its token.
    async fn token(&self, name: &str, role: &str, channels: Option<&[&str]>) -> String {
        let r = self
            .post(
                "/v1/tokens",
                json!({ "name": name, "role": role, "channels": channels }),
            )
            .await;
        ok(&r, 201);
        assert_eq!(r.body["name"], name);
        assert_eq!(r.body["role"], role);
        let token = r.body["token"].as_str().expect("token").to_string();
        assert!(token.len() > 20, "a generated token: {token}");
        token
    }
}

/// A successful JSON response with this status.
#[track_caller]
fn ok(r: &Resp, status: u16) {
    assert_eq!(r.status.as_u16(), status, "body: {}", r.text());
    assert!(
        r.content_type().starts_with("application/json"),
        "content-type {}",
        r.content_type()
    );
    assert!(r.body.is_object(), "a JSON object: {}", r.text());
}

/// The error shape `{"error": {"code", "message", "field"?}}` with this status.
#[track_caller]
fn api_error(r: &Resp, status: u16, code: &str, field: Option<&str>) {
    assert_eq!(r.status.as_u16(), status, "body: {}", r.text());
    assert!(
        r.content_type().starts_with("application/json"),
        "content-type {:?} body {}",
        r.content_type(),
        r.text()
    );
    let obj = r
        .body
        .as_object()
        .unwrap_or_else(|| panic!("a JSON object: {}", r.text()));
    assert_eq!(obj.len(), 1, "only `error`: {}", r.text());
    let err = &r.body["error"];
    assert_eq!(err["code"], code, "{}", r.text());
    assert!(
        err["message"].as_str().is_some_and(|m| !m.is_empty()),
        "a message: {}",
        r.text()
    );
    match field {
        Some(f) => assert_eq!(err["field"], f, "{}", r.text()),
        None => assert!(err.get("field").is_none(), "no field: {}", r.text()),
    }
}

#[track_caller]
fn message_contains(r: &Resp, needle: &str) {
    let m = r.body["error"]["message"].as_str().unwrap_or("");
    assert!(
        m.contains(needle),
        "message {m:?} should contain {needle:?}"
    );
}

fn event_kinds(view: &Value) -> Vec<String> {
    view["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn ids_of(list: &Value) -> Vec<u64> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|m| m["id"].as_u64().expect("id"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The pipeline
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn full_pipeline_ingress_route_transform_deliver() {
    let api = start().await;

    // Enqueue: 201 once committed.
    let r = api
        .post("/v1/channels/orders/messages", json!({ "raw": "ORDER 42", "message_type": "ORM", "control_id": "c-42", "metadata": { "k": "v" } }))
        .await;
    ok(&r, 201);
    assert_eq!(r.body["duplicate"], false);
    assert!(r.body["index"].as_u64().is_some());
    let mid = r.body["message_id"].as_u64().expect("message_id");
    let view = api.get(&format!("/v1/messages/{mid}")).await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "received");
    assert_eq!(view.body["message"]["channel_id"], "orders");
    assert_eq!(view.body["message"]["raw"], "ORDER 42");
    assert_eq!(view.body["message"]["message_type"], "ORM");
    assert_eq!(view.body["message"]["control_id"], "c-42");
    assert_eq!(event_kinds(&view.body), ["received"]);
    assert_eq!(view.body["rows"][0]["stage"], "ingress");
    assert_eq!(view.body["rows"][0]["status"], "pending");

    // Ingress claim.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 10, "owner": "router-1", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    let ingress = &items[0];
    assert_eq!(ingress["message_id"], mid);
    assert_eq!(ingress["stage"], "ingress");
    assert_eq!(ingress["channel_id"], "orders");
    assert_eq!(ingress["payload"], "ORDER 42");
    assert_eq!(ingress["attempts"], 1);
    assert!(ingress["fence"].as_u64().is_some_and(|f| f > 0));
    // Nothing else is due.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 10, "owner": "router-2", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["items"], json!([]));

    // Route to one handler.
    let r = api
        .post(
            &format!("/v1/rows/{}/route", ingress["row_id"]),
            json!({ "fence": ingress["fence"], "handlers": [{ "handler": "to-json", "payload": "{\"order\":42}" }] }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["applied"], true);
    let view = api.get(&format!("/v1/messages/{mid}")).await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "routed");

    // Routed claim.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "routed", "limit": 10, "owner": "xform-1", "ttl_ms": 30_000 }),
        )
        .await;
    ok(&r, 200);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    let routed = &items[0];
    assert_eq!(routed["message_id"], mid);
    assert_eq!(routed["stage"], "routed");
    assert_eq!(routed["handler_name"], "to-json");
    assert_eq!(routed["payload"], "{\"order\":42}");

    // Transform: two deliveries and a state op.
    let r = api
        .post(
            &format!("/v1/rows/{}/transform", routed["row_id"]),
            json!({
                "fence": routed["fence"],
                "deliveries": [
                    { "destination": "warehouse", "payload": "W-42" },
                    { "destination": "billing", "payload": "B-42" }
                ],
                "state_ops": [{ "namespace": "orders", "key": "last", "value": { "id": mid, "total": 9.5 } }]
            }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["applied"], true);
    let view = api.get(&format!("/v1/messages/{mid}")).await;
    ok(&view, 200);
    assert_eq!(
        view.body["message"]["status"], "routed",
        "transform never sets the status while rows are live"
    );
    let outbound: Vec<&Value> = view.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["stage"] == "outbound")
        .collect();
    assert_eq!(outbound.len(), 2);
    assert!(outbound.iter().all(|r| r["status"] == "pending"));

    // Deliver each destination through its FIFO lane.
    for (dest, payload) in [("warehouse", "W-42"), ("billing", "B-42")] {
        let r = api
            .post(
                &format!("/v1/lanes/outbound/{dest}/claim"),
                json!({ "owner": "sender-1", "ttl_ms": 30_000 }),
            )
            .await;
        ok(&r, 200);
        let item = &r.body["item"];
        assert_eq!(item["message_id"], mid);
        assert_eq!(item["stage"], "outbound");
        assert_eq!(item["destination_name"], dest);
        assert_eq!(item["payload"], payload);
        // A repeated claim by the holder (its answer lost, say) gets the same row and fence.
        let again = api
            .post(
                &format!("/v1/lanes/outbound/{dest}/claim"),
                json!({ "owner": "sender-1", "ttl_ms": 30_000 }),
            )
            .await;
        ok(&again, 200);
        assert_eq!(again.body["item"]["row_id"], item["row_id"]);
        assert_eq!(again.body["item"]["fence"], item["fence"]);
        let r = api
            .post(
                &format!("/v1/rows/{}/done", item["row_id"]),
                json!({ "fence": item["fence"] }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["ok"], true);
    }

    let view = api.get(&format!("/v1/messages/{mid}")).await;
    ok(&view, 200);
    assert_eq!(view.body["message"]["status"], "processed");
    assert_eq!(
        event_kinds(&view.body),
        [
            "received",
            "routed",
            "transformed",
            "delivered",
            "delivered"
        ]
    );
    let delivered: Vec<&Value> = view.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "delivered")
        .map(|e| &e["destination"])
        .collect();
    assert_eq!(delivered, [&json!("warehouse"), &json!("billing")]);
    assert!(view.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .all(|r| r["status"] == "done" && r["claim"].is_null()));

    // The state op.
    let r = api.get("/v1/state/orders/last").await;
    ok(&r, 200);
    assert_eq!(r.body["namespace"], "orders");
    assert_eq!(r.body["key"], "last");
    assert_eq!(r.body["value"], json!({ "id": mid, "total": 9.5 }));
    assert_eq!(r.body["message_id"], mid);
    let r = api.get("/v1/state/orders").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 1);
    let r = api.get("/v1/state/orders/missing").await;
    api_error(&r, 404, "not_found", None);

    // The list and the stats agree.
    let r = api.get("/v1/messages?status=processed").await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]), [mid]);
    let r = api.get("/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["rows"]["outbound"]["done"], 2);
    assert_eq!(r.body["rows"]["outbound"]["pending"], 0);
}

#[tokio::test]
async fn fifo_lane_with_two_competing_workers() {
    let api = start().await;
    let client = &api.admin;
    const N: usize = 6;
    let mut enqueued = Vec::new();
    for i in 0..N {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    let items = api.claim_ingress("feed", 100).await;
    assert_eq!(items.len(), N);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["message_id"], enqueued[i]);
        api.handoff_to(item, "printer", &format!("m{i}")).await;
    }
    let lane = api.get("/v1/lanes/outbound/printer").await;
    ok(&lane, 200);
    assert_eq!(lane.body["lane"], "outbound:printer");
    assert_eq!(lane.body["depth"], N);
    assert_eq!(lane.body["inflight"], 0);
    assert_eq!(lane.body["holder"], Value::Null);

    let workers = ["worker-a", "worker-b"];
    let mut completed = Vec::new();
    for i in 0..N {
        let (me, other) = (workers[i % 2], workers[(i + 1) % 2]);
        let claim: FifoClaim = client
            .claim_fifo("outbound", "printer", me, LONG_TTL)
            .await
            .expect("claim");
        let item = claim
            .item
            .clone()
            .unwrap_or_else(|| panic!("{me} should get the head: {claim:?}"));
        assert_eq!(item.payload, format!("m{i}"), "the head of the lane");
        assert_eq!(item.destination_name.as_deref(), Some("printer"));

        // The competitor is refused while the lane lease is held, and told by whom.
        let r = api
            .post(
                "/v1/lanes/outbound/printer/claim",
                json!({ "owner": other, "ttl_ms": LONG_TTL }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["item"], Value::Null);
        assert_eq!(r.body["reason"], "lane_busy");
        assert_eq!(r.body["holder"], me);
        assert!(r.body["expires_at"].as_u64().is_some());
        let lane = api.get("/v1/lanes/outbound/printer").await;
        ok(&lane, 200);
        assert_eq!(lane.body["holder"]["owner"], me);
        assert_eq!(lane.body["inflight"], 1);
        assert_eq!(lane.body["depth"], N - i - 1);

        client.done(&item).await.expect("done");
        completed.push(item.message_id.0);

        // Still busy until the holder gives the lane back.
        let busy = client
            .claim_fifo("outbound", "printer", other, LONG_TTL)
            .await
            .expect("claim");
        assert_eq!(busy.reason.as_deref(), Some("lane_busy"));
        assert_eq!(busy.holder.as_deref(), Some(me));
        let r = api
            .post("/v1/lanes/outbound/printer/release", json!({ "owner": me }))
            .await;
        ok(&r, 200);
        assert_eq!(r.body["released"], true);
    }
    assert_eq!(completed, enqueued, "completion order equals enqueue order");

    let r = api
        .post(
            "/v1/lanes/outbound/printer/claim",
            json!({ "owner": "worker-a", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["item"], Value::Null);
    assert_eq!(r.body["reason"], "empty");
    let r = api
        .get("/v1/messages?channel=feed&status=processed&limit=100")
        .await;
    ok(&r, 200);
    let mut processed = ids_of(&r.body["messages"]);
    processed.reverse(); // newest first
    assert_eq!(processed, enqueued);
}

#[tokio::test]
async fn done_with_claim_next_walks_a_lane_one_write_per_row() {
    let api = start().await;
    const N: usize = 4;
    let mut enqueued = Vec::new();
    for i in 0..N {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    for (i, item) in api.claim_ingress("feed", 100).await.iter().enumerate() {
        api.handoff_to(item, "printer", &format!("m{i}")).await;
    }
    let first = api.claim_head("printer", "w", LONG_TTL).await;

    // Bad claim_next fields: 400 naming the field, and nothing proposed (the row stays out).
    let done_path = format!("/v1/rows/{}/done", first.row_id.0);
    let before = api.digest().await;
    for (next, field) in [
        (
            json!({ "owner": "", "ttl_ms": LONG_TTL }),
            "claim_next.owner",
        ),
        (json!({ "owner": "w", "ttl_ms": 0 }), "claim_next.ttl_ms"),
    ] {
        let r = api
            .post(
                &done_path,
                json!({ "fence": first.fence.0, "claim_next": next }),
            )
            .await;
        api_error(&r, 400, "invalid", Some(field));
    }
    nothing_proposed(&api, &before, "done with a bad claim_next").await;
    // A channel-scoped worker may finish its channel's rows but not claim a whole outbound lane.
    let scoped = api.token("worker-feed", "worker", Some(&["feed"])).await;
    let r = api
        .post_as(
            &scoped,
            &done_path,
            json!({ "fence": first.fence.0, "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);

    // Each done hands back the lane's next row, in order, fenced by the same write.
    let mut item = first;
    let mut delivered = vec![item.message_id.0];
    loop {
        let r = api
            .post(
                &format!("/v1/rows/{}/done", item.row_id.0),
                json!({ "fence": item.fence.0, "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["ok"], true);
        let index = r.body["index"].as_u64().expect("index");
        let next = &r.body["next"];
        if next["item"].is_null() {
            assert_eq!(next["reason"], "empty");
            break;
        }
        let claimed: ClaimedRow =
            serde_json::from_value(next["item"].clone()).expect("a claimed row");
        assert_eq!(claimed.fence.0, index, "fenced by the done's own entry");
        assert_eq!(claimed.payload, format!("m{}", delivered.len()));
        delivered.push(claimed.message_id.0);
        item = claimed;
    }
    assert_eq!(delivered, enqueued, "delivery order equals enqueue order");
    let r = api
        .get("/v1/messages?channel=feed&status=processed&limit=100")
        .await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]).len(), N);
    // The finished row's fence is spent: the typed client gets the state machine's refusal.
    let err = api
        .admin
        .done_then_claim_next(&item, "w", LONG_TTL)
        .await
        .expect_err("the row is done");
    assert_eq!(err.code(), Some("wrong_status"));
}

#[tokio::test]
async fn row_actions_hand_on_a_claimed_batch_in_one_request() {
    let api = start().await;
    let mut enqueued = Vec::new();
    for i in 0..3 {
        enqueued.push(api.enqueue("feed", &format!("m{i}")).await);
    }
    let items = api.claim_ingress("feed", 10).await;
    assert_eq!(items.len(), 3);
    let handoff = |item: &Value| json!({ "row": item["row_id"], "action": "handoff", "body": { "fence": item["fence"], "deliveries": [{ "destination": "printer", "payload": item["payload"] }] } });

    let scoped = api.token("worker-other", "worker", Some(&["other"])).await;

    // Bad input refuses the whole request, naming the item and its field; nothing is proposed.
    let before = api.digest().await;
    let mut no_fence = handoff(&items[0]);
    no_fence["body"]
        .as_object_mut()
        .expect("body")
        .remove("fence");
    let with_claim = json!({ "row": items[1]["row_id"], "action": "done", "body": { "fence": items[1]["fence"], "claim_next": { "owner": "w", "ttl_ms": LONG_TTL } } });
    for (actions, field) in [
        (json!([]), "actions"),
        (
            json!([handoff(&items[0]), { "row": items[1]["row_id"], "action": "explode", "body": {} }]),
            "actions[1].action",
        ),
        (
            json!([handoff(&items[0]), handoff(&items[0])]),
            "actions[1].row",
        ),
        (json!([no_fence]), "actions[0].body.fence"),
        (
            json!([handoff(&items[0]), with_claim]),
            "actions[1].body.claim_next",
        ),
    ] {
        let r = api
            .post("/v1/rows/actions", json!({ "actions": actions }))
            .await;
        api_error(&r, 400, "invalid", Some(field));
    }
    let too_many: Vec<Value> = (0..=raftlane_api::routes::work::MAX_ROW_ACTIONS as u64)
        .map(|row| json!({ "row": row, "action": "done", "body": { "fence": 1 } }))
        .collect();
    let r = api
        .post("/v1/rows/actions", json!({ "actions": too_many }))
        .await;
    api_error(&r, 400, "invalid", Some("actions"));
    // A row outside a scoped caller's channels refuses the whole request too.
    let r = api
        .post_as(
            &scoped,
            "/v1/rows/actions",
            json!({ "actions": [handoff(&items[0])] }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let after = api.digest().await;
    assert_eq!(after.1, before.1, "a refused batch changed the state");

    // One answer per action, in order: two hand-offs, a stale fence, an unknown row.
    let mut stale = handoff(&items[2]);
    stale["body"]["fence"] = json!(items[2]["fence"].as_u64().expect("fence") - 1);
    let body = json!({ "actions": [handoff(&items[0]), handoff(&items[1]), stale, { "row": 999_999, "action": "done", "body": { "fence": 1 } }] });
    let send = || async {
        let headers = [
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
            ("request-id", "batch-1".to_string()),
        ];
        api.send_raw(
            Method::POST,
            "/v1/rows/actions",
            &headers,
            body.to_string().into_bytes(),
        )
        .await
    };
    let r = send().await;
    ok(&r, 200);
    let results = r.body["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), 4, "{}", r.text());
    for answer in &results[..2] {
        assert_eq!(answer["applied"], true, "{answer}");
        assert!(answer["index"].as_u64().is_some(), "{answer}");
    }
    assert_eq!(results[2]["status"], 409, "{}", results[2]);
    assert_eq!(results[2]["error"]["code"], "stale_fence");
    assert_eq!(results[3]["status"], 404, "{}", results[3]);
    assert_eq!(results[3]["error"]["code"], "not_found");

    // The same request again (same Request-Id) gets the same answers and changes nothing.
    let state = api.digest().await;
    let again = send().await;
    ok(&again, 200);
    assert_eq!(again.body["results"][0], results[0]);
    assert_eq!(again.body["results"][1], results[1]);
    assert_eq!(
        api.digest().await.1,
        state.1,
        "a repeated batch applied twice"
    );

    // The handed-on rows wait on the printer lane in enqueue order; the stale one stays put.
    let first = api.claim_head("printer", "w", LONG_TTL).await;
    assert_eq!(first.message_id.0, enqueued[0]);
    assert_eq!(first.payload, "m0");
    let next = api
        .admin
        .done_then_claim_next(&first, "w", LONG_TTL)
        .await
        .expect("done")
        .item
        .expect("the second row");
    assert_eq!(next.message_id.0, enqueued[1]);
    let view = api.admin.message(enqueued[2]).await.expect("message");
    assert_eq!(view["rows"][0]["stage"], "ingress");
    assert_eq!(view["rows"][0]["status"], "inflight");
}

#[tokio::test]
async fn stale_fence_is_refused_and_changes_nothing() {
    let api = start().await;
    let client = &api.admin;
    let mid = api.message_at("slow", "dest").await;

    let old = api.claim_head("dest", "old-worker", 100).await;
    assert_eq!(old.attempts, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Past both leases: the new owner takes the lane and recovers the stranded head.
    let new = api.claim_head("dest", "new-worker", LONG_TTL).await;
    assert_eq!(new.row_id, old.row_id, "the stranded head, not a later row");
    assert_eq!(new.attempts, 2);
    assert!(new.fence.0 > old.fence.0);

    let before = api.digest().await;
    for (action, body) in [
        ("done", json!({ "fence": old.fence.0 })),
        (
            "fail",
            json!({ "fence": old.fence.0, "error": "late", "retry": { "backoff_ms": 10, "multiplier": 2.0, "max_backoff_ms": 100 } }),
        ),
        (
            "response",
            json!({ "fence": old.fence.0, "body": "late", "outcome": "ok" }),
        ),
    ] {
        let r = api
            .post(&format!("/v1/rows/{}/{action}", old.row_id.0), body)
            .await;
        api_error(&r, 409, "stale_fence", None);
        message_contains(&r, "stale fence");
        let after = api.digest().await;
        assert_eq!(after.1, before.1, "a stale {action} changed the state");
        assert!(after.0 > before.0, "it was proposed and applied as a no-op");
    }
    let view = client.message(mid).await.expect("message");
    let row = &view["rows"][0];
    assert_eq!(row["status"], "inflight");
    assert_eq!(row["claim"]["owner"], "new-worker");
    assert_eq!(row["claim"]["fence"], new.fence.0);
    assert!(view["responses"].as_array().expect("responses").is_empty());
    assert_eq!(event_kinds(&view), ["received", "routed"]);

    // The current holder completes normally.
    let r = api
        .post(
            &format!("/v1/rows/{}/done", new.row_id.0),
            json!({ "fence": new.fence.0 }),
        )
        .await;
    ok(&r, 200);
    let view = client.message(mid).await.expect("message");
    assert_eq!(view["message"]["status"], "processed");
}

#[tokio::test]
async fn idempotent_enqueue() {
    let api = start().await;
    let path = "/v1/channels/inbox/messages";
    let send = |key: &'static str, path: &'static str| {
        let api = &api;
        async move {
            api.send_raw(
                Method::POST,
                path,
                &[
                    ("authorization", format!("Bearer {ADMIN}")),
                    ("content-type", "application/json".into()),
                    ("idempotency-key", key.into()),
                ],
                json!({ "raw": "hello" }).to_string().into_bytes(),
            )
            .await
        }
    };
    let first = send("key-1", path).await;
    ok(&first, 201);
    assert_eq!(first.body["duplicate"], false);
    let id = first.body["message_id"].as_u64().expect("id");
    let second = send("key-1", path).await;
    ok(&second, 200);
    assert_eq!(second.body["duplicate"], true);
    assert_eq!(second.body["message_id"], id);
    // The typed client sees the same.
    let third = api
        .admin
        .enqueue("inbox", "hello", Some("key-1"))
        .await
        .expect("enqueue");
    assert!(third.duplicate);
    assert_eq!(third.message_id, id);
    // Keys are per channel; another key is another message.
    let other_channel = send("key-1", "/v1/channels/outbox/messages").await;
    ok(&other_channel, 201);
    assert_ne!(other_channel.body["message_id"], id);
    let other_key = send("key-2", path).await;
    ok(&other_key, 201);
    assert_ne!(other_key.body["message_id"], id);

    let r = api.get("/v1/messages?channel=inbox").await;
    ok(&r, 200);
    assert_eq!(r.body["messages"].as_array().expect("messages").len(), 2);
    let r = api.get("/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["rows"]["ingress"]["pending"], 3);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Assert that nothing at all was proposed since `before`.
async fn nothing_proposed(api: &Api, before: &(u64, String), case: &str) {
    assert_eq!(
        &api.digest().await,
        before,
        "{case}: nothing may be proposed or written"
    );
}

#[tokio::test]
async fn every_error_status_with_its_json_body() {
    let api = start().await;
    let viewer = api.token("viewer-1", "viewer", None).await;
    let scoped = api.token("worker-a", "worker", Some(&["a"])).await;
    let before = api.digest().await;

    // 400: malformed JSON.
    let r = api
        .post_text("/v1/claims", "{\"stage\": \"ingress\", ")
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    let r = api
        .post_text("/v1/channels/orders/messages", "not json")
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    nothing_proposed(&api, &before, "malformed JSON").await;

    // 400: a field of the wrong type is named.
    let r = api
        .post_text(
            "/v1/lanes/outbound/d/claim",
            r#"{"owner": "w", "ttl_ms": "100"}"#,
        )
        .await;
    api_error(&r, 400, "invalid", Some("ttl_ms"));
    message_contains(&r, "invalid type");
    let r = api
        .post_text(
            "/v1/claims",
            r#"{"stage": "ingress", "limit": -1, "owner": "w", "ttl_ms": 100}"#,
        )
        .await;
    api_error(&r, 400, "invalid", Some("limit"));
    nothing_proposed(&api, &before, "wrong type").await;

    // 400: a missing field is named.
    let r = api
        .post_text(
            "/v1/claims",
            r#"{"stage": "ingress", "limit": 1, "owner": "w"}"#,
        )
        .await;
    api_error(&r, 400, "invalid", Some("ttl_ms"));
    message_contains(&r, "missing field");
    let r = api
        .post_text("/v1/channels/orders/messages", r#"{"summary": "no raw"}"#)
        .await;
    api_error(&r, 400, "invalid", Some("raw"));
    nothing_proposed(&api, &before, "missing field").await;

    // 400: the same for query strings and path parameters.
    let r = api.get("/v1/messages?limit=abc").await;
    api_error(&r, 400, "invalid", Some("limit"));
    let r = api.get("/v1/messages?status=bogus").await;
    api_error(&r, 400, "invalid", Some("status"));
    let r = api.get("/v1/messages/%FF").await;
    api_error(&r, 400, "invalid", Some("id"));
    let r = api.get("/v1/messages/abc").await;
    api_error(&r, 400, "invalid", Some("id"));
    let r = api
        .post("/v1/rows/1/done", json!({ "fence": 1, "extra": true }))
        .await;
    api_error(&r, 400, "invalid", Some("extra"));
    message_contains(&r, "unknown field");
    nothing_proposed(&api, &before, "bad query or path").await;

    // 400: an unknown stage.
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "bogus", "limit": 1, "owner": "w", "ttl_ms": 100 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("stage"));
    let r = api
        .post(
            "/v1/lanes/bogus/x/claim",
            json!({ "owner": "w", "ttl_ms": 100 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("stage"));
    let r = api.get("/v1/lanes/bogus/x").await;
    api_error(&r, 400, "invalid", Some("stage"));
    nothing_proposed(&api, &before, "unknown stage").await;

    // 400: empty and over-long channel names.
    let r = api
        .post("/v1/channels//messages", json!({ "raw": "x" }))
        .await;
    api_error(&r, 400, "invalid", Some("channel"));
    message_contains(&r, "must not be empty");
    let long = "c".repeat(201);
    let r = api
        .post(
            &format!("/v1/channels/{long}/messages"),
            json!({ "raw": "x" }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("channel"));
    message_contains(&r, "longer than 200 bytes");
    let exactly = "c".repeat(200);
    nothing_proposed(&api, &before, "bad channel names").await;

    // 401: no token, a wrong token, a malformed header.
    let r = api
        .call(
            Method::POST,
            "/v1/channels/orders/messages",
            None,
            Some(json!({ "raw": "x" })),
        )
        .await;
    api_error(&r, 401, "unauthorized", None);
    let r = api.call(Method::GET, "/v1/messages", None, None).await;
    api_error(&r, 401, "unauthorized", None);
    let r = api
        .call(
            Method::POST,
            "/v1/channels/orders/messages",
            Some("not-a-token"),
            Some(json!({ "raw": "x" })),
        )
        .await;
    api_error(&r, 401, "unauthorized", None);
    let r = api
        .send_raw(
            Method::GET,
            "/v1/messages",
            &[("authorization", format!("Basic {ADMIN}"))],
            Vec::new(),
        )
        .await;
    api_error(&r, 401, "unauthorized", None);
    nothing_proposed(&api, &before, "401").await;

    // 403: outside the role, outside the channel scope.
    let r = api
        .post_as(
            &viewer,
            "/v1/channels/orders/messages",
            json!({ "raw": "x" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(&scoped, "/v1/channels/b/messages", json!({ "raw": "x" }))
        .await;
    api_error(&r, 403, "forbidden", None);
    message_contains(&r, "channel b");
    let r = api
        .post_as(
            &scoped,
            "/v1/tokens",
            json!({ "name": "x", "role": "admin" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "403").await;

    // 404: an unknown message, an unknown route.
    let r = api.get("/v1/messages/424242").await;
    api_error(&r, 404, "not_found", None);
    let r = api.get("/v1/no-such-thing").await;
    api_error(&r, 404, "not_found", None);
    assert_eq!(r.body["error"]["message"], "no such route");
    let r = api.call(Method::GET, "/nope", None, None).await;
    api_error(&r, 404, "not_found", None);
    let r = api.post("/v1/rows/1/explode", json!({ "fence": 1 })).await;
    api_error(&r, 404, "not_found", None);
    message_contains(&r, "unknown row action");
    // 405: a known path with another method is JSON too, with Allow.
    let r = api
        .call(Method::DELETE, "/v1/messages", Some(ADMIN), None)
        .await;
    api_error(&r, 405, "method_not_allowed", None);
    assert_eq!(
        r.headers.get("allow").and_then(|v| v.to_str().ok()),
        Some("GET,HEAD")
    );
    nothing_proposed(&api, &before, "404").await;

    // 413: a body over max_body_bytes, on a JSON route and on a raw-body route.
    let big = "x".repeat(MAX_BODY + 1);
    let r = api
        .post("/v1/channels/orders/messages", json!({ "raw": big }))
        .await;
    api_error(&r, 413, "too_large", None);
    let r = api
        .send_raw(
            Method::POST,
            "/v1/channels/orders/messages",
            &[
                ("authorization", format!("Bearer {ADMIN}")),
                ("content-type", "text/plain".into()),
            ],
            big.clone().into_bytes(),
        )
        .await;
    api_error(&r, 413, "too_large", None);
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": big, "ttl_ms": 100 }),
        )
        .await;
    api_error(&r, 413, "too_large", None);
    let r = api
        .post("/v1/rows/1/done", json!({ "fence": 1, "pad": big }))
        .await;
    api_error(&r, 413, "too_large", None);
    nothing_proposed(&api, &before, "413").await;

    // 412: PUT /v1/config with a wrong If-Match carries the current version.
    let doc = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {}, "approvals_required": [] });
    let r = api.put_config(None, &doc).await;
    api_error(&r, 400, "invalid", Some("If-Match"));
    nothing_proposed(&api, &before, "no If-Match").await;
    let r = api.put_config(Some("7"), &doc).await;
    assert_eq!(r.status.as_u16(), 412);
    assert_eq!(r.body["error"]["code"], "version_mismatch");
    assert_eq!(r.body["error"]["current_version"], 0);
    message_contains(&r, "expected 7, current 0");
    let after = api.digest().await;
    assert_eq!(after.1, before.1, "a refused config change wrote nothing");
    let r = api.get("/v1/config").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 0);

    // 409: done twice.
    let mid = api.message_at("orders", "dest").await;
    let item = api.claim_head("dest", "w", LONG_TTL).await;
    let r = api
        .post(
            &format!("/v1/rows/{}/done", item.row_id.0),
            json!({ "fence": item.fence.0 }),
        )
        .await;
    ok(&r, 200);
    let before = api.digest().await;
    let r = api
        .post(
            &format!("/v1/rows/{}/done", item.row_id.0),
            json!({ "fence": item.fence.0 }),
        )
        .await;
    api_error(&r, 409, "wrong_status", None);
    message_contains(&r, "is done, expected inflight");
    assert_eq!(
        api.digest().await.1,
        before.1,
        "a second done wrote nothing"
    );
    let view = api.admin.message(mid).await.expect("message");
    assert_eq!(
        event_kinds(&view),
        ["received", "routed", "delivered"],
        "delivered once"
    );

    // A 200-byte name is still fine (boundary of the 400 above).
    let r = api
        .post(
            &format!("/v1/channels/{exactly}/messages"),
            json!({ "raw": "x" }),
        )
        .await;
    ok(&r, 201);
}

// ---------------------------------------------------------------------------------------------
// Auth, config, audit
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn roles_channel_scope_and_revocation() {
    let api = start().await;
    let worker = api.token("worker-a", "worker", Some(&["a"])).await;
    let viewer = api.token("viewer-1", "viewer", None).await;
    let b1 = api.enqueue("b", "b1").await;
    let b2 = api.enqueue("b", "b2").await;
    let a1 = api.enqueue("a", "a1").await;

    // The scoped worker: its channel yes, another no.
    let r = api
        .post_as(&worker, "/v1/channels/a/messages", json!({ "raw": "a2" }))
        .await;
    ok(&r, 201);
    let a2 = r.body["message_id"].as_u64().expect("id");
    let r = api
        .post_as(&worker, "/v1/channels/b/messages", json!({ "raw": "nope" }))
        .await;
    api_error(&r, 403, "forbidden", None);
    // Its list shows only channel a, even with messages in b.
    let r = api.get_as(&worker, "/v1/messages").await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]), [a2, a1]);
    assert!(r.body["messages"]
        .as_array()
        .expect("list")
        .iter()
        .all(|m| m["channel_id"] == "a"));
    let r = api.get_as(&worker, "/v1/messages?channel=b").await;
    api_error(&r, 403, "forbidden", None);
    let r = api.get_as(&worker, &format!("/v1/messages/{b1}")).await;
    api_error(&r, 404, "not_found", None);
    let r = api.get_as(&worker, &format!("/v1/messages/{a1}")).await;
    ok(&r, 200);
    // Lanes named by a channel are scoped like the channel.
    let r = api.get_as(&worker, "/v1/lanes/ingress/a").await;
    ok(&r, 200);
    assert_eq!(r.body["depth"], 2);
    let r = api.get_as(&worker, "/v1/lanes/ingress/b").await;
    api_error(&r, 403, "forbidden", None);
    // A scoped worker must name its channel to claim.
    let r = api
        .post_as(
            &worker,
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 10, "owner": "w", "ttl_ms": 1000 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("channel"));
    let r = api.post_as(&worker, "/v1/claims", json!({ "stage": "ingress", "limit": 10, "owner": "w", "ttl_ms": 1000, "channel": "b" })).await;
    api_error(&r, 403, "forbidden", None);
    let r = api.post_as(&worker, "/v1/claims", json!({ "stage": "ingress", "limit": 10, "owner": "w", "ttl_ms": 1000, "channel": "a" })).await;
    ok(&r, 200);
    assert_eq!(r.body["items"].as_array().expect("items").len(), 2);
    // Workers may not administer.
    let r = api
        .post_as(
            &worker,
            "/v1/tokens",
            json!({ "name": "evil", "role": "admin" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(&worker, "/v1/audit", json!({ "action": "x" }))
        .await;
    api_error(&r, 403, "forbidden", None);

    // The admin sees everything.
    let r = api.get("/v1/messages").await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]), [a2, a1, b2, b1]);

    // The viewer reads but never writes.
    let r = api.get_as(&viewer, "/v1/messages").await;
    ok(&r, 200);
    assert_eq!(ids_of(&r.body["messages"]).len(), 4);
    let r = api.get_as(&viewer, &format!("/v1/messages/{b1}")).await;
    ok(&r, 200);
    for path in [
        "/v1/stats",
        "/v1/config",
        "/v1/lanes/ingress/a",
        "/v1/audit/verify?org=default",
    ] {
        let r = api.get_as(&viewer, path).await;
        ok(&r, 200);
    }
    let r = api
        .post_as(&viewer, "/v1/channels/b/messages", json!({ "raw": "x" }))
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(
            &viewer,
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": "v", "ttl_ms": 1000 }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(&viewer, &format!("/v1/messages/{b1}/replay"), json!({}))
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api.get_as(&viewer, "/v1/tokens").await;
    api_error(&r, 403, "forbidden", None);

    // The admin lists principals (never their hashes) and revokes one.
    let r = api.get("/v1/tokens").await;
    ok(&r, 200);
    let tokens = r.body["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 2);
    let w = tokens
        .iter()
        .find(|t| t["name"] == "worker-a")
        .expect("worker-a");
    assert_eq!(w["role"], "worker");
    assert_eq!(w["channels"], json!(["a"]));
    assert!(tokens
        .iter()
        .all(|t| t.get("token_hash").is_none() && t.get("token").is_none()));
    let r = api
        .call(Method::DELETE, "/v1/tokens/worker-a", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["revoked"], true);
    let r = api.get_as(&worker, "/v1/messages").await;
    api_error(&r, 401, "unauthorized", None);
    let r = api
        .call(Method::DELETE, "/v1/tokens/worker-a", Some(ADMIN), None)
        .await;
    api_error(&r, 404, "not_found", None);
    // The viewer is unaffected.
    let r = api.get_as(&viewer, "/v1/messages").await;
    ok(&r, 200);
}

#[tokio::test]
async fn config_compare_and_set() {
    let api = start().await;
    let r = api.get("/v1/config").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 0);
    assert_eq!(r.body["config"]["channels"], json!({}));

    let doc = json!({
        "channels": { "orders": { "description": "incoming orders" } },
        "destinations": { "warehouse": { "url": "http://warehouse.local", "retry": { "max_attempts": 3, "backoff_ms": 100, "multiplier_milli": 2000, "max_backoff_ms": 1000 } } },
        "handlers": { "to-json": { "channel": "orders" } },
        "retention": { "message_bodies_ms": 86400000, "dead_letters_ms": null, "state_ms": null, "dedupe_window_ms": null },
        "approvals_required": []
    });
    let r = api.put_config(Some("0"), &doc).await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 1);

    let r = api.get("/v1/config").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 1);
    assert_eq!(r.body["config"], doc);
    assert_eq!(r.body["set_by"], "admin");
    let r = api.get("/v1/config/versions/1").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 1);
    assert_eq!(r.body["config"], doc);
    let r = api.get("/v1/config/versions/0").await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 0);
    assert_eq!(r.body["config"]["destinations"], json!({}));
    let r = api.get("/v1/config/versions/2").await;
    api_error(&r, 404, "not_found", None);
    let r = api.get("/v1/config/versions/latest").await;
    api_error(&r, 400, "invalid", Some("version"));

    // The same base version again loses the race.
    let r = api.put_config(Some("0"), &doc).await;
    api_error_412(&r, 1);
    // A quoted ETag-style version works; the typed client agrees.
    let r = api.put_config(Some("\"1\""), &doc).await;
    ok(&r, 200);
    assert_eq!(r.body["version"], 2);
    assert_eq!(api.admin.put_config(2, doc.clone()).await.expect("put"), 3);
    let err = api.admin.put_config(2, doc).await.expect_err("stale");
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.code(), Some("version_mismatch"));
}

#[track_caller]
fn api_error_412(r: &Resp, current: u64) {
    assert_eq!(r.status.as_u16(), 412, "{}", r.text());
    assert_eq!(r.body["error"]["code"], "version_mismatch");
    assert_eq!(r.body["error"]["current_version"], current);
    assert!(r.body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}

#[tokio::test]
async fn audit_chain_append_anchor_verify() {
    let api = start().await;
    let mut hashes = Vec::new();
    for (i, action) in ["deploy", "rotate", "approve"].into_iter().enumerate() {
        let r = api
            .post(
                "/v1/audit",
                json!({ "action": action, "detail": format!("step {i}") }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["seq"], i);
        let hash = r.body["hash"].as_str().expect("hash").to_string();
        assert_eq!(hash.len(), 64);
        hashes.push(hash);
    }
    let r = api.get("/v1/audit/verify?org=default").await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], true);
    assert_eq!(r.body["count"], 3);
    assert_eq!(r.body["head_hash"], hashes[2]);

    let anchor = api.get("/v1/audit/anchor?org=default").await;
    ok(&anchor, 200);
    assert_eq!(anchor.body["org"], "default");
    assert_eq!(anchor.body["count"], 3);
    assert_eq!(anchor.body["head"], hashes[2]);
    let head = anchor.body["head"].as_str().expect("head").to_string();

    // Appends after the anchor do not fail it.
    let r = api
        .post(
            "/v1/audit",
            json!({ "action": "later", "channel": "orders" }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["seq"], 3);
    let r = api
        .get(&format!("/v1/audit/verify?org=default&count=3&head={head}"))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], true, "{}", r.text());
    assert_eq!(r.body["count"], 4);
    // A different anchored head is a rewrite; a longer anchor is a truncation.
    let zeros = "0".repeat(64);
    let r = api
        .get(&format!(
            "/v1/audit/verify?org=default&count=3&head={zeros}"
        ))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], false);
    assert!(
        r.body["reason"]
            .as_str()
            .is_some_and(|s| s.contains("rewritten")),
        "{}",
        r.text()
    );
    let r = api
        .get(&format!(
            "/v1/audit/verify?org=default&count=10&head={head}"
        ))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], false);
    assert!(
        r.body["reason"]
            .as_str()
            .is_some_and(|s| s.contains("truncated")),
        "{}",
        r.text()
    );

    // The list, in order, linked.
    let r = api.get("/v1/audit?org=default").await;
    ok(&r, 200);
    let rows = r.body["rows"].as_array().expect("rows");
    let actions: Vec<&str> = rows
        .iter()
        .map(|r| r["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(actions, ["deploy", "rotate", "approve", "later"]);
    assert_eq!(rows[0]["prev_hash"], zeros);
    for w in rows.windows(2) {
        assert_eq!(w[1]["prev_hash"], w[0]["hash"]);
    }
    assert_eq!(rows[0]["actor"], "admin");
    assert_eq!(rows[3]["channel"], "orders");

    // Orgs are independent chains; reads must name one.
    let r = api
        .post("/v1/audit", json!({ "action": "x", "org": "acme" }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["seq"], 0);
    let r = api.get("/v1/audit/verify?org=acme").await;
    ok(&r, 200);
    assert_eq!(r.body["ok"], true);
    assert_eq!(r.body["count"], 1);
    let r = api.get("/v1/audit/verify").await;
    api_error(&r, 400, "invalid", Some("org"));
    let r = api.get("/v1/audit/verify?org=default&count=3").await;
    api_error(&r, 400, "invalid", Some("count"));
    let r = api
        .get("/v1/audit/verify?org=default&count=3&head=xyz")
        .await;
    api_error(&r, 400, "invalid", Some("head"));
    let r = api
        .get("/v1/audit/verify?org=default&count=abc&head=00")
        .await;
    api_error(&r, 400, "invalid", Some("count"));

    // The typed client agrees.
    let v = api.admin.audit_verify("default").await.expect("verify");
    assert_eq!(v["ok"], true);
}

// ---------------------------------------------------------------------------------------------
// The document, the probes, node-to-node
// ---------------------------------------------------------------------------------------------

/// A plausible value for a path parameter.
fn fill(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{channel}" => "orders",
            "{id}" => "1",
            "{stage}" => "outbound",
            "{name}" => "lane-1",
            "{dest}" => "warehouse",
            "{action}" => "done",
            "{v}" => "0",
            "{namespace}" => "ns",
            "{key}" => "k",
            s if s.starts_with('{') => panic!("no value for parameter {s} of {path}"),
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn openapi_lists_every_route_and_every_documented_route_is_mounted() {
    let api = start().await;
    let r = api.call(Method::GET, "/openapi.json", None, None).await;
    ok(&r, 200);
    let doc = &r.body;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
    let paths = doc["paths"].as_object().expect("paths");

    let routes = api_routes();
    for route in &routes {
        let op = &doc["paths"][route.path][route.method];
        assert!(
            op.is_object(),
            "{} {} is not documented",
            route.method,
            route.path
        );
        assert_eq!(op["summary"], route.summary);
        assert_eq!(
            op.get("security").is_some(),
            route.auth,
            "{} {}",
            route.method,
            route.path
        );
    }
    let documented: usize = paths
        .values()
        .map(|p| p.as_object().map_or(0, |m| m.len()))
        .sum();
    assert_eq!(
        documented,
        routes.len(),
        "the document lists exactly the routes"
    );

    // Sanity of the probe below: the fallback is recognizable.
    let r = api.get("/v1/not-a-route").await;
    api_error(&r, 404, "not_found", None);
    assert_eq!(r.body["error"]["message"], "no such route");

    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let concrete = fill(path);
            let body = if m == Method::GET || m == Method::DELETE {
                None
            } else {
                Some(json!({}))
            };
            let r = api.call(m.clone(), &concrete, Some(ADMIN), body).await;
            let fallback =
                r.status == StatusCode::NOT_FOUND && r.body["error"]["message"] == "no such route";
            assert!(
                !fallback,
                "{m} {concrete} (documented as {path}) hit the router fallback"
            );
            assert_ne!(
                r.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{m} {concrete} is not mounted for {m}"
            );
        }
    }
}

#[tokio::test]
async fn probes_and_metrics() {
    let api = start().await;
    let r = api.call(Method::GET, "/healthz", None, None).await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "status": "ok" }));
    let r = api.call(Method::GET, "/readyz", None, None).await;
    ok(&r, 200);
    assert_eq!(r.body, json!({ "ready": true }));

    api.enqueue("orders", "x").await;
    let r = api.post("/v1/rows/999/done", json!({ "fence": 1 })).await;
    api_error(&r, 404, "not_found", None);

    let r = api.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.content_type().starts_with("text/plain"),
        "{}",
        r.content_type()
    );
    let text = r.text();
    assert!(
        text.contains("# TYPE raftlane_commands_total counter"),
        "{text}"
    );
    assert!(
        text.contains(
            "raftlane_commands_total{command=\"enqueue_ingress\",outcome=\"accepted\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("raftlane_commands_total{command=\"mark_done\",outcome=\"rejected\"} 1"),
        "{text}"
    );
    assert!(text.contains("raftlane_messages_total 1"), "{text}");
    assert!(
        text.contains("raftlane_rows{stage=\"ingress\",status=\"pending\"} 1"),
        "{text}"
    );
    assert!(text.contains("raftlane_is_leader 1"), "{text}");

    let r = api.get("/v1/cluster").await;
    ok(&r, 200);
    assert_eq!(r.body["leader_id"], 1);
    assert_eq!(r.body["node_id"], 1);
    assert_eq!(r.body["membership"][0]["voter"], true);
}

/// The headers of a node-to-node call to `path` with `body`, signed with the cluster secret.
fn signed(path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    let auth = raftlane_api::internal::cluster_auth(CLUSTER_SECRET).expect("a secret");
    vec![raftlane_api::internal::signature(&auth, path, body)]
}

#[tokio::test]
async fn internal_routes_need_the_cluster_secret() {
    let api = start().await;
    let before = api.digest().await;
    let envelope = Envelope::new(
        now_ms(),
        "intruder",
        Command::RecordAudit {
            action: "forged".into(),
            channel: None,
            org: None,
            detail: None,
        },
    );
    let body = codec::encode(&envelope);
    for headers in [
        vec![(LEGACY_SECRET_HEADER, "wrong".to_string())],
        vec![(LEGACY_SECRET_HEADER, String::new())],
        vec![],
        // A client token is not the cluster secret.
        vec![("authorization", format!("Bearer {ADMIN}"))],
    ] {
        let r = api
            .send_raw(Method::POST, "/internal/propose", &headers, body.clone())
            .await;
        api_error(&r, 401, "unauthorized", None);
        let batch = codec::encode(&vec![envelope.clone()]);
        let r = api
            .send_raw(Method::POST, "/internal/propose-batch", &headers, batch)
            .await;
        api_error(&r, 401, "unauthorized", None);
        let r = api
            .send_raw(Method::GET, "/internal/read-index", &headers, Vec::new())
            .await;
        api_error(&r, 401, "unauthorized", None);
    }
    nothing_proposed(&api, &before, "forged proposals").await;
    let r = api.get("/v1/audit/verify?org=default").await;
    assert_eq!(r.body["count"], 0);

    // Signed with the secret: a garbage body is a 400, a good one is applied.
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", b"garbage"),
            b"garbage".to_vec(),
        )
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    nothing_proposed(&api, &before, "garbage proposal").await;
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &body),
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let result: Result<(u64, Response), ProposeError> = codec::decode(&r.raw).expect("decode");
    assert!(
        matches!(result, Ok((_, Ok(Outcome::Audit { seq: 0, .. })))),
        "{result:?}"
    );
    let r = api
        .send_raw(
            Method::GET,
            "/internal/read-index",
            &signed("/internal/read-index", b""),
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let index: Result<u64, ProposeError> = codec::decode(&r.raw).expect("decode");
    assert_eq!(index.expect("index"), before.0 + 1);
}

#[tokio::test]
async fn a_forwarded_maximal_write_fits_through_internal_propose() {
    let api = start().await;
    // The largest enqueue a client may send as JSON...
    let raw = "x".repeat(MAX_BODY - r#"{"raw":""}"#.len());
    let r = api
        .post("/v1/channels/orders/messages", json!({ "raw": raw }))
        .await;
    ok(&r, 201);
    // ...is what a follower forwards to the leader, wrapped in an envelope (a little larger).
    let command = Command::EnqueueIngress {
        channel: "orders".into(),
        raw,
        fields: Default::default(),
        idempotency_key: Some("forwarded-1".into()),
    };
    let body = codec::encode(&Envelope::new(now_ms(), "admin", command));
    assert!(body.len() > MAX_BODY);
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &body),
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let result: Result<(u64, Response), ProposeError> = codec::decode(&r.raw).expect("decode");
    assert!(
        matches!(
            result,
            Ok((
                _,
                Ok(Outcome::Enqueued {
                    duplicate: false,
                    ..
                })
            ))
        ),
        "{result:?}"
    );
    // The internal route is still bounded.
    let huge = vec![0; 2 * MAX_BODY + (1 << 20) + 1];
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &signed("/internal/propose", &huge),
            huge,
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// A follower's batch of forwarded writes: each envelope is proposed and answered on its own,
/// in order (one refused does not fail the others); an empty batch is refused whole.
#[tokio::test]
async fn internal_propose_batch_answers_each_envelope_in_order() {
    let api = start().await;
    let enqueue = |raw: &str| {
        Envelope::new(
            now_ms(),
            "admin",
            Command::EnqueueIngress {
                channel: "orders".into(),
                raw: raw.into(),
                fields: Default::default(),
                idempotency_key: None,
            },
        )
    };
    let refused = Envelope::new(
        now_ms(),
        "admin",
        Command::EnqueueIngress {
            channel: String::new(),
            raw: "no channel".into(),
            fields: Default::default(),
            idempotency_key: None,
        },
    );
    let body = codec::encode(&vec![enqueue("first"), refused, enqueue("second")]);
    let path = "/internal/propose-batch";
    let r = api
        .send_raw(Method::POST, path, &signed(path, &body), body)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    type Answer = Result<(u64, Response), ProposeError>;
    let answers: Result<Vec<Answer>, ProposeError> = codec::decode(&r.raw).expect("decode");
    let answers = answers.expect("the batch was taken");
    assert_eq!(answers.len(), 3, "{answers:?}");
    let id = |a: &Answer| match a {
        Ok((_, Ok(Outcome::Enqueued { message_id, .. }))) => message_id.0,
        other => panic!("not enqueued: {other:?}"),
    };
    assert!(
        matches!(answers[1], Ok((_, Err(_)))),
        "the empty channel is refused by the state machine: {:?}",
        answers[1]
    );
    assert!(id(&answers[0]) < id(&answers[2]), "{answers:?}");
    let r = api.get("/v1/messages?channel=orders").await;
    let raws: Vec<&str> = r.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["raw"].as_str())
        .collect();
    assert_eq!(raws.len(), 2, "{raws:?}");

    let before = api.digest().await;
    let empty = codec::encode(&Vec::<Envelope>::new());
    let r = api
        .send_raw(Method::POST, path, &signed(path, &empty), empty)
        .await;
    api_error(&r, 400, "invalid", Some("body"));
    nothing_proposed(&api, &before, "an empty batch").await;
}

/// `older_than_ms` of a purge is an age: a message seconds old survives an hour's purge and is
/// blanked by a purge of everything older than now.
#[tokio::test]
async fn retention_purge_takes_an_age() {
    let api = start().await;
    let id = api.enqueue("lab", "MSH|secret body").await;
    let item = api.claim_ingress("lab", 1).await.remove(0);
    let r = api
        .post(
            &format!("/v1/rows/{}/dead", item["row_id"]),
            json!({ "fence": item["fence"], "error": "poison" }),
        )
        .await;
    ok(&r, 200);
    tokio::time::sleep(Duration::from_millis(20)).await;

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "bodies", "older_than_ms": 3_600_000 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 0, "an hour's purge keeps a fresh message");
    let r = api.get(&format!("/v1/messages/{id}")).await;
    assert_eq!(r.body["message"]["raw"], "MSH|secret body");

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "bodies", "older_than_ms": 0 }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["purged"], 1, "{}", r.text());
    let r = api.get(&format!("/v1/messages/{id}")).await;
    assert_eq!(r.body["message"]["raw"], "");
    assert_eq!(r.body["message"]["purged"], true);

    let r = api
        .post(
            "/v1/retention/purge",
            json!({ "kind": "everything", "older_than_ms": 0 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("kind"));
}

/// `/v1/stats` counts every channel, so a channel-scoped token may not read it.
#[tokio::test]
async fn stats_are_refused_to_a_channel_scoped_token() {
    let api = start().await;
    api.enqueue("adt", "not yours").await;
    let scoped = api.token("lab-reader", "viewer", Some(&["lab"])).await;
    let viewer = api.token("reader", "viewer", None).await;
    let r = api.get_as(&scoped, "/v1/stats").await;
    api_error(&r, 403, "forbidden", None);
    let r = api.get_as(&viewer, "/v1/stats").await;
    ok(&r, 200);
    assert_eq!(r.body["messages"], 1);
}
