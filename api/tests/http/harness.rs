//! The harness every topic shares: one API over a fresh in-memory node (started by the test
//! kit, `raftlane_testkit::api`), raw and typed requests, and assertions on the JSON error shape.

pub(crate) use axum::http::{HeaderMap, Method, StatusCode};
pub(crate) use bytes::Bytes;
pub(crate) use raftlane_api::clock::now_ms;
pub(crate) use raftlane_api::peer::PeerClient;
pub(crate) use raftlane_api::route_table::api_routes;
pub(crate) use raftlane_api::write::signing::LEGACY_SECRET_HEADER;
pub(crate) use raftlane_api::{ApiConfig, ProposeError};
pub(crate) use raftlane_client::contract::FifoEmptyReason;
pub(crate) use raftlane_client::{Client, FifoClaim};
pub(crate) use raftlane_statemachine::{
    codec, ClaimedRow, Command, Envelope, MessageId, Outcome, Response,
};
pub(crate) use serde_json::{json, Value};
pub(crate) use std::time::Duration;

pub(crate) const ADMIN: &str = "admin-secret";
pub(crate) const CLUSTER_SECRET: &str = "cs";
pub(crate) const MAX_BODY: usize = 64 * 1024;
pub(crate) const LONG_TTL: u64 = 120_000;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// The document every check below reads (the one the route table builds, which the API serves).
fn document() -> &'static Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(raftlane_api::route_table::openapi_document)
}

/// The documented operation `method path` (a concrete path, query included) is an instance of:
/// the template with the most literal segments that matches (`/v1/rows/actions` over
/// `/v1/rows/{id}/{action}`), with the template. `None`: not a documented route (the internal
/// ones).
fn operation(method: &Method, path: &str) -> Option<(String, &'static Value)> {
    let doc = document();
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    let method = method.as_str().to_ascii_lowercase();
    let template = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, ops)| ops.get(&method).is_some())
        .filter_map(|(t, _)| {
            let parts: Vec<&str> = t.split('/').collect();
            let fits = parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(p, s)| p.starts_with('{') || p == s);
            fits.then(|| (parts.iter().filter(|p| !p.starts_with('{')).count(), t))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, t)| t.clone())?;
    let op = &doc["paths"][&template][&method];
    Some((template, op))
}

/// Every 2xx JSON answer any test gets is checked against the schema the OpenAPI document gives
/// its route, so a route that answers another type than the one its entry in the route list
/// names (or a schema that forgot a member) fails whichever test calls it.
fn answer_fits_the_document(method: &Method, path: &str, body: &Value) {
    let Some((template, op)) = operation(method, path) else {
        return;
    };
    let Some(schema) = op["responses"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(status, _)| status.starts_with('2'))
        .find_map(|(_, r)| r["content"]["application/json"].get("schema"))
    else {
        panic!("{method} {template} answered JSON but documents no JSON answer: {body}");
    };
    if let Err(e) =
        raftlane_contract::schema::conforms(body, schema, &document()["components"]["schemas"])
    {
        panic!("{method} {path} ({template}) answered what its schema does not say: {e}\n{body}");
    }
}

/// Every request any test sends that the API answers with a 2xx is checked against the
/// document too: each query parameter it names is one its route documents, and a JSON body
/// fits the route's request schema. A route's query and body types are read off its handler's
/// signature, so they are the ones it parses; the exceptions are the raw bodies a handler
/// parses itself (by a path segment, by content type), whose type the route table names, and
/// this is what holds those names to what the handlers accept.
fn request_fits_the_document(method: &Method, path: &str, headers: &[(&str, String)], body: &[u8]) {
    let Some((template, op)) = operation(method, path) else {
        return;
    };
    let documented: Vec<&str> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "query")
        .filter_map(|p| p["name"].as_str())
        .collect();
    let query = path.split_once('?').map_or("", |(_, q)| q);
    for name in query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split('=').next().unwrap_or(p))
    {
        assert!(
            documented.contains(&name),
            "{method} {path} ({template}) was answered with a 2xx, but its query parameter \
             '{name}' is not documented (documented: {documented:?})"
        );
    }
    let json = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("content-type") && value.starts_with("application/json")
    });
    let Some(schema) = op["requestBody"]["content"]["application/json"].get("schema") else {
        return;
    };
    if !json || body.is_empty() {
        return;
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        panic!("{method} {path} ({template}) accepted a body that is not JSON as JSON");
    };
    if let Err(e) =
        raftlane_contract::schema::conforms(&value, schema, &document()["components"]["schemas"])
    {
        panic!(
            "{method} {path} ({template}) accepted a body its request schema refuses: {e}\n{value}"
        );
    }
}

/// The request check is not vacuous: a query parameter the route does not document, or a body
/// member its schema does not declare, fails it; what the document describes passes.
#[test]
fn a_request_the_document_does_not_describe_fails_the_check() {
    let json = [("content-type", "application/json".to_string())];
    request_fits_the_document(&Method::GET, "/v1/messages?limit=5&channel=a", &[], b"");
    request_fits_the_document(&Method::POST, "/v1/rows/7/done", &json, br#"{"fence":3}"#);
    request_fits_the_document(&Method::POST, "/v1/leases/reclaim", &json, b"");
    let undescribed: [(Method, &str, &[u8]); 3] = [
        (Method::GET, "/v1/messages?surprise=1", b""),
        (Method::GET, "/v1/stats?limit=5", b""),
        (
            Method::POST,
            "/v1/rows/7/done",
            br#"{"fence":3,"surprise":1}"#,
        ),
    ];
    for (method, path, body) in undescribed {
        let caught =
            std::panic::catch_unwind(|| request_fits_the_document(&method, path, &json, body));
        assert!(caught.is_err(), "{method} {path} passed the check");
    }
}

/// A running API over a fresh in-memory single node.
pub(crate) struct Api {
    pub(crate) base: String,
    pub(crate) http: PeerClient,
    /// The typed client with the bootstrap admin token.
    pub(crate) admin: Client,
}

/// One HTTP exchange as seen on the wire.
pub(crate) struct Resp {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) raw: Bytes,
    /// The body parsed as JSON (`Null` when empty or not JSON).
    pub(crate) body: Value,
}

impl Resp {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    pub(crate) fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

pub(crate) async fn start() -> Api {
    start_with(ApiConfig::default()).await
}

/// An API in client-clock test mode (`--test-client-clock`): requests may carry
/// `Raftlane-Client-Time-Ms`.
pub(crate) async fn start_client_clock() -> Api {
    start_with(ApiConfig {
        test_client_clock: true,
        ..Default::default()
    })
    .await
}

/// An API with `config`'s settings, and the harness's admin token, cluster secret and body
/// limit.
pub(crate) async fn start_with(config: ApiConfig) -> Api {
    let api = raftlane_testkit::api::LocalApi::start_with(ApiConfig {
        admin_token: ADMIN.into(),
        cluster_secret: CLUSTER_SECRET.into(),
        max_body_bytes: MAX_BODY,
        ..config
    })
    .await;
    Api {
        admin: Client::new(vec![api.addr], ADMIN).with_deadline(Duration::from_secs(5)),
        base: api.base,
        http: api.http,
    }
}

impl Api {
    /// Send exactly these headers and bytes.
    pub(crate) async fn send_raw(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Resp {
        let url = format!("{}{}", self.base, path);
        let sent = body.clone();
        let (status, answer_headers, raw) = self
            .http
            .call(method.clone(), &url, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if status.is_success() {
            request_fits_the_document(&method, path, headers, &sent);
        }
        let headers = answer_headers;
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        if status.is_success() && !body.is_null() {
            answer_fits_the_document(&method, path, &body);
        }
        Resp {
            status,
            headers,
            raw,
            body,
        }
    }

    /// A JSON call with an optional bearer token.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let (headers, bytes) = raftlane_testkit::http::json_request(token, body);
        self.send_raw(method, path, &headers, bytes).await
    }

    pub(crate) async fn get_as(&self, token: &str, path: &str) -> Resp {
        self.call(Method::GET, path, Some(token), None).await
    }

    pub(crate) async fn post_as(&self, token: &str, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    /// A JSON call as admin with `Raftlane-Client-Time-Ms: ms`.
    pub(crate) async fn call_at(
        &self,
        ms: u64,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Resp {
        let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(ADMIN), body);
        headers.push(("raftlane-client-time-ms", ms.to_string()));
        self.send_raw(method, path, &headers, bytes).await
    }

    /// POST as admin, at client time `at` when given.
    pub(crate) async fn post_maybe_at(&self, at: Option<u64>, path: &str, body: Value) -> Resp {
        match at {
            Some(ms) => self.call_at(ms, Method::POST, path, Some(body)).await,
            None => self.post(path, body).await,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Resp {
        self.get_as(ADMIN, path).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Resp {
        self.post_as(ADMIN, path, body).await
    }

    pub(crate) async fn put(&self, path: &str, body: Value) -> Resp {
        self.call(Method::PUT, path, Some(ADMIN), Some(body)).await
    }

    /// POST a body as JSON text exactly as given (malformed JSON included).
    pub(crate) async fn post_text(&self, path: &str, body: &str) -> Resp {
        let headers = [
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
        ];
        self.send_raw(Method::POST, path, &headers, body.as_bytes().to_vec())
            .await
    }

    /// `PUT /v1/config` with an optional `If-Match`.
    pub(crate) async fn put_config(&self, if_match: Option<&str>, doc: &Value) -> Resp {
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
    pub(crate) async fn digest(&self) -> (u64, String) {
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
    pub(crate) async fn enqueue(&self, channel: &str, raw: &str) -> u64 {
        self.enqueue_at(None, channel, raw).await
    }

    /// [`Api::enqueue`] at client time `at` when given (client-clock mode).
    pub(crate) async fn enqueue_at(&self, at: Option<u64>, channel: &str, raw: &str) -> u64 {
        let r = self
            .post_maybe_at(
                at,
                &format!("/v1/channels/{channel}/messages"),
                json!({ "raw": raw }),
            )
            .await;
        ok(&r, 201);
        assert_eq!(r.body["duplicate"], false);
        r.body["message_id"].as_u64().expect("message_id")
    }

    /// Claim every due ingress row of `channel` (unordered claim), sorted by message id.
    pub(crate) async fn claim_ingress(&self, channel: &str, limit: u32) -> Vec<Value> {
        self.claim_ingress_at(None, channel, limit).await
    }

    /// [`Api::claim_ingress`] at client time `at` when given.
    pub(crate) async fn claim_ingress_at(
        &self,
        at: Option<u64>,
        channel: &str,
        limit: u32,
    ) -> Vec<Value> {
        let r = self
            .post_maybe_at(at, "/v1/claims", json!({ "stage": "ingress", "limit": limit, "owner": "router", "ttl_ms": LONG_TTL, "channel": channel }))
            .await;
        ok(&r, 200);
        let mut items = r.body["items"].as_array().expect("items").clone();
        items.sort_by_key(|i| i["message_id"].as_u64());
        items
    }

    /// Hand a claimed ingress row straight to one outbound delivery.
    pub(crate) async fn handoff_to(&self, item: &Value, destination: &str, payload: &str) {
        self.handoff_at(None, item, destination, payload).await
    }

    /// [`Api::handoff_to`] at client time `at` when given.
    pub(crate) async fn handoff_at(
        &self,
        at: Option<u64>,
        item: &Value,
        destination: &str,
        payload: &str,
    ) {
        let r = self
            .post_maybe_at(
                at,
                &format!("/v1/rows/{}/handoff", item["row_id"]),
                json!({ "fence": item["fence"], "deliveries": [{ "destination": destination, "payload": payload }] }),
            )
            .await;
        ok(&r, 200);
        assert_eq!(r.body["applied"], true);
    }

    /// Enqueue one message on `channel` and route it straight to `destination`; returns its id.
    pub(crate) async fn message_at(&self, channel: &str, destination: &str) -> u64 {
        let id = self.enqueue(channel, "payload").await;
        let items = self.claim_ingress(channel, 10).await;
        assert_eq!(items.len(), 1);
        self.handoff_to(&items[0], destination, "payload").await;
        id
    }

    /// Claim the head of outbound lane `lane` for `owner` (which must get one).
    pub(crate) async fn claim_head(&self, lane: &str, owner: &str, ttl_ms: u64) -> ClaimedRow {
        self.admin
            .claim_fifo("outbound", lane, owner, ttl_ms)
            .await
            .expect("claim")
            .item
            .unwrap_or_else(|| panic!("{owner} should get the head of {lane}"))
    }

    /// Create a principal; returns its token.
    pub(crate) async fn token(&self, name: &str, role: &str, channels: Option<&[&str]>) -> String {
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
pub(crate) fn ok(r: &Resp, status: u16) {
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
pub(crate) fn api_error(r: &Resp, status: u16, code: &str, field: Option<&str>) {
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
pub(crate) fn message_contains(r: &Resp, needle: &str) {
    let m = r.body["error"]["message"].as_str().unwrap_or("");
    assert!(
        m.contains(needle),
        "message {m:?} should contain {needle:?}"
    );
}

pub(crate) fn event_kinds(view: &Value) -> Vec<String> {
    view["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("?").to_string())
        .collect()
}

pub(crate) fn ids_of(list: &Value) -> Vec<u64> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|m| m["id"].as_u64().expect("id"))
        .collect()
}

/// Assert that nothing at all was proposed since `before`.
pub(crate) async fn nothing_proposed(api: &Api, before: &(u64, String), case: &str) {
    assert_eq!(
        &api.digest().await,
        before,
        "{case}: nothing may be proposed or written"
    );
}

/// An ingress row of `channel` claimed by `token` under `owner`: `(message id, row id, fence)`.
pub(crate) async fn claimed_ingress(
    api: &Api,
    token: &str,
    channel: &str,
    owner: &str,
) -> (u64, u64, u64) {
    let message = api.enqueue(channel, "MSH|claimed").await;
    let r = api
        .post_as(
            token,
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": owner, "ttl_ms": LONG_TTL,
                    "channel": channel }),
        )
        .await;
    ok(&r, 200);
    let item = &r.body["items"][0];
    (
        message,
        item["row_id"].as_u64().expect("row_id"),
        item["fence"].as_u64().expect("fence"),
    )
}

/// The status and owner of a row's claim, as the admin reads it.
pub(crate) async fn claim_owner(api: &Api, row: u64) -> (String, Value) {
    let r = api.get(&format!("/v1/rows/{row}")).await;
    ok(&r, 200);
    (
        r.body["row"]["status"].as_str().unwrap_or("?").to_string(),
        r.body["row"]["claim"]["owner"].clone(),
    )
}
