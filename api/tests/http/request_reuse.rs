//! Request-Id answers bound to their request, random tokens and the per-token rate limit
//! (docs/SPEC.md §10.5, §9.1). Each case is a finding of a security review, kept as a test: a
//! reused `Request-Id` must not be answered with another request's outcome (a 500 dumping it,
//! or a silently dropped message), a token must not be derived from its `Request-Id` (re-created
//! after a revocation, the old token would work again), and one token's request rate is
//! limited.

use crate::harness::*;

/// A JSON request as `token` carrying `Request-Id: request_id` (and, when given, the test
/// client's time).
async fn with_id(
    api: &Api,
    method: Method,
    path: &str,
    request_id: &str,
    body: Option<Value>,
    client_time: Option<u64>,
) -> Resp {
    let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(ADMIN), body);
    headers.push(("request-id", request_id.to_string()));
    if let Some(t) = client_time {
        headers.push(("raftlane-client-time-ms", t.to_string()));
    }
    api.send_raw(method, path, &headers, bytes).await
}

async fn message_count(api: &Api) -> u64 {
    let r = api.get("/v1/messages/count").await;
    ok(&r, 200);
    r.body["count"].as_u64().expect("count")
}

/// Before: the second message was silently dropped and the request answered `201` with the
/// first message's id.
#[tokio::test]
async fn a_request_id_reused_with_another_body_is_refused_not_dropped() {
    let api = start().await;
    let path = "/v1/channels/lab/messages";
    let first = with_id(
        &api,
        Method::POST,
        path,
        "r-1",
        Some(json!({ "raw": "one" })),
        None,
    )
    .await;
    ok(&first, 201);
    let before = api.digest().await;

    let reused = with_id(
        &api,
        Method::POST,
        path,
        "r-1",
        Some(json!({ "raw": "two" })),
        None,
    )
    .await;
    api_error(&reused, 409, "request_id_reused", Some("Request-Id"));
    // (Refused in the state machine: applied as a no-op, so only `last_applied` moves.)
    assert_eq!(api.digest().await.1, before.1, "nothing changed");
    assert!(
        !reused.text().contains("message_id"),
        "the first answer is not shown: {}",
        reused.text()
    );
    // The same Request-Id on another channel (another path) is another request too.
    let other_path = with_id(
        &api,
        Method::POST,
        "/v1/channels/other/messages",
        "r-1",
        Some(json!({ "raw": "one" })),
        None,
    )
    .await;
    api_error(&other_path, 409, "request_id_reused", Some("Request-Id"));
    // ...and so is a raw enqueue whose header-borne fields differ.
    let raw_headers = |summary: &str| {
        vec![
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "text/plain".to_string()),
            ("request-id", "r-raw".to_string()),
            ("x-summary", summary.to_string()),
        ]
    };
    let r = api
        .send_raw(Method::POST, path, &raw_headers("a"), b"body".to_vec())
        .await;
    ok(&r, 201);
    let r = api
        .send_raw(Method::POST, path, &raw_headers("b"), b"body".to_vec())
        .await;
    api_error(&r, 409, "request_id_reused", Some("Request-Id"));
    let r = api
        .send_raw(Method::POST, path, &raw_headers("a"), b"body".to_vec())
        .await;
    ok(&r, 201);
    assert_eq!(message_count(&api).await, 2);

    // The true retry (same request) still gets its first answer, and nothing is applied twice.
    let before = api.digest().await;
    let retry = with_id(
        &api,
        Method::POST,
        path,
        "r-1",
        Some(json!({ "raw": "one" })),
        None,
    )
    .await;
    ok(&retry, 201);
    assert_eq!(retry.body["message_id"], first.body["message_id"]);
    assert_eq!(retry.body["index"], first.body["index"]);
    assert_eq!(api.digest().await.1, before.1, "a retry changes nothing");
}

/// Before: the other route got the first route's outcome and answered `500 internal` with that
/// outcome in its message.
#[tokio::test]
async fn a_request_id_reused_on_another_route_is_409_never_500() {
    let api = start().await;
    let first = with_id(
        &api,
        Method::POST,
        "/v1/channels/lab/messages",
        "r-2",
        Some(json!({ "raw": "secret payload" })),
        None,
    )
    .await;
    ok(&first, 201);
    let before = api.digest().await;
    for (method, path, body) in [
        (Method::POST, "/v1/engine/counters/c", None),
        (Method::POST, "/v1/leases/reclaim", None),
        (
            Method::POST,
            "/v1/audit",
            Some(json!({ "action": "x", "detail": "y" })),
        ),
    ] {
        let r = with_id(&api, method, path, "r-2", body, None).await;
        api_error(&r, 409, "request_id_reused", Some("Request-Id"));
        assert!(
            !r.text().contains("secret payload") && !r.text().contains("Enqueued"),
            "{path}: {}",
            r.text()
        );
    }
    assert_eq!(api.digest().await.1, before.1, "nothing was applied");
}

/// A retry in test mode names its own time: still the same request.
#[tokio::test]
async fn a_retry_with_another_client_time_is_the_same_request() {
    let api = start_client_clock().await;
    let path = "/v1/channels/lab/messages";
    let body = json!({ "raw": "m" });
    let first = with_id(
        &api,
        Method::POST,
        path,
        "r-3",
        Some(body.clone()),
        Some(5_000),
    )
    .await;
    ok(&first, 201);
    let retry = with_id(&api, Method::POST, path, "r-3", Some(body), Some(9_000)).await;
    ok(&retry, 201);
    assert_eq!(retry.body["message_id"], first.body["message_id"]);
    let reused = with_id(
        &api,
        Method::POST,
        path,
        "r-3",
        Some(json!({ "raw": "n" })),
        Some(5_000),
    )
    .await;
    api_error(&reused, 409, "request_id_reused", Some("Request-Id"));
}

/// The body of a request with a Request-Id is read before the handler: the size limit still
/// answers `413`, not a generic error.
#[tokio::test]
async fn a_bound_request_over_the_body_limit_is_413() {
    let api = start().await;
    let raw = "x".repeat(MAX_BODY + 1);
    let r = with_id(
        &api,
        Method::POST,
        "/v1/channels/lab/messages",
        "r-big",
        Some(json!({ "raw": raw })),
        None,
    )
    .await;
    api_error(&r, 413, "too_large", None);
}

/// The status of a read made with `token`.
async fn works(api: &Api, token: &str) -> u16 {
    api.get_as(token, "/v1/stats").await.status.as_u16()
}

/// Before: the token was an HMAC of the Request-Id (and the caller, name, role, channels), so
/// re-creating a revoked principal with the same Request-Id after the 120 s window gave the
/// same token back, and the old token worked again.
#[tokio::test]
async fn a_token_re_created_with_a_reused_request_id_is_a_new_token() {
    let api = start().await;
    let body = json!({ "name": "alice", "role": "viewer" });
    let first = with_id(
        &api,
        Method::POST,
        "/v1/tokens",
        "mint",
        Some(body.clone()),
        None,
    )
    .await;
    ok(&first, 201);
    let old = first.body["token"].as_str().expect("token").to_string();
    assert_eq!(works(&api, &old).await, 200);
    // A retry inside the window gets the stored token (re-derived from its nonce).
    let retry = with_id(
        &api,
        Method::POST,
        "/v1/tokens",
        "mint",
        Some(body.clone()),
        None,
    )
    .await;
    ok(&retry, 201);
    assert_eq!(retry.body["token"], first.body["token"]);

    let r = api
        .call(Method::DELETE, "/v1/tokens/alice", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(works(&api, &old).await, 401);

    // Past the window: the leader's record expiry, as a node would propose it, 121 s later.
    let expire = Envelope::new(
        now_ms() + raftlane_statemachine::apply::request::REQUEST_TTL_MS + 1_000,
        "raftlane:timer",
        Command::ExpireRecords,
    );
    let bytes = codec::encode(&expire);
    let auth = raftlane_api::write::signing::cluster_auth(CLUSTER_SECRET).expect("a secret");
    let r = api
        .send_raw(
            Method::POST,
            "/internal/propose",
            &[raftlane_api::write::signing::signature(
                &auth,
                1,
                "/internal/propose",
                &bytes,
            )],
            bytes,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());

    let again = with_id(&api, Method::POST, "/v1/tokens", "mint", Some(body), None).await;
    ok(&again, 201);
    let new = again.body["token"].as_str().expect("token").to_string();
    assert_ne!(new, old, "a new token, not the revoked one");
    assert_eq!(works(&api, &new).await, 200);
    assert_eq!(
        works(&api, &old).await,
        401,
        "the revoked token stays refused"
    );
}

/// Two creations with different Request-Ids but the same principal and body: two different
/// tokens (nothing but randomness makes them).
#[tokio::test]
async fn tokens_are_random() {
    let api = start().await;
    let a = api.token("bob", "viewer", None).await;
    let b = api.token("bob", "viewer", None).await;
    assert_ne!(a, b);
    assert_eq!(works(&api, &a).await, 401, "rotated away");
    assert_eq!(works(&api, &b).await, 200);
}

/// `--rate-limit-per-token`: a token over its rate gets `429 rate_limited` with `Retry-After`;
/// another token has its own bucket; probes and unknown tokens are not counted.
#[tokio::test]
async fn a_token_over_its_rate_gets_429_with_retry_after() {
    let api = start_with(ApiConfig {
        rate_limit: raftlane_api::rate_limit::RateLimit {
            per_second: 0.2,
            burst: 3,
        },
        ..Default::default()
    })
    .await;
    // The admin's three requests of burst: one creates a worker's token.
    let worker = api.token("w", "worker", None).await;
    ok(&api.get("/v1/stats").await, 200);
    ok(&api.get("/v1/stats").await, 200);
    let r = api.get("/v1/stats").await;
    assert_eq!(r.status.as_u16(), 429, "{}", r.text());
    let err = &r.body["error"];
    assert_eq!(err["code"], "rate_limited", "{}", r.text());
    let retry_after: u64 = r
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After header in seconds");
    assert!((1..=5).contains(&retry_after), "{retry_after}");
    assert_eq!(err["retry_after_s"], retry_after);
    // A write is refused before it is proposed.
    let before = api.digest_as(&worker).await;
    let r = api
        .post("/v1/channels/lab/messages", json!({ "raw": "m" }))
        .await;
    assert_eq!(r.status.as_u16(), 429, "{}", r.text());

    // Another token has its own bucket (digest_as used one of its three).
    ok(&api.get_as(&worker, "/v1/stats").await, 200);
    assert_eq!(api.digest_as(&worker).await, before, "nothing was proposed");
    let r = api.get_as(&worker, "/v1/stats").await;
    assert_eq!(r.status.as_u16(), 429, "{}", r.text());
    // Probes are not limited, and an unknown token is still told it is unknown.
    for _ in 0..5 {
        assert_eq!(
            api.call(Method::GET, "/healthz", None, None).await.status,
            StatusCode::OK
        );
    }
    let r = api.get_as("rl_not_a_token", "/v1/stats").await;
    api_error(&r, 401, "unauthorized", None);
}

impl Api {
    /// `(last_applied, digest)` read with `token`.
    async fn digest_as(&self, token: &str) -> (u64, String) {
        let r = self.get_as(token, "/v1/cluster/digest").await;
        ok(&r, 200);
        (
            r.body["last_applied"].as_u64().expect("last_applied"),
            r.body["digest"].as_str().expect("digest").to_string(),
        )
    }
}
