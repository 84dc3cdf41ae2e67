//! Every error status with its JSON body, and proof that a refused request wrote nothing.

use crate::harness::*;

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
    // An offset no page can reach (a page examines at most 10,000 messages) is refused, not
    // answered with empty pages; one below it is served.
    let r = api.get("/v1/messages?offset=10000").await;
    api_error(&r, 400, "invalid", Some("offset"));
    assert!(r.text().contains("cursor"), "{}", r.text());
    let r = api.get("/v1/messages?offset=9999").await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    let r = api.get("/v1/messages/%FF").await;
    api_error(&r, 400, "invalid", Some("id"));
    // Not a number: a re-ingested child's key, which nobody gave (docs/SPEC.md §14.7)...
    let r = api.get("/v1/messages/abc").await;
    api_error(&r, 404, "not_found", None);
    // ...and one that cannot be a key is refused.
    let r = api.get("/v1/messages/a%07b").await;
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
    let view = serde_json::to_value(api.admin.message(MessageId(mid)).await.expect("message"))
        .expect("json");
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

/// A channel the config does not name (docs/SPEC.md §6.1): `404` naming the field and the
/// channel, and the state as it was.
#[tokio::test]
async fn an_unconfigured_channel_is_a_404_naming_it() {
    let api = start().await;
    let doc = json!({ "channels": { "orders": {} } });
    ok(&api.put_config(Some("0"), &doc).await, 200);
    api.enqueue("orders", "a").await;
    let before = api.digest().await;
    let r = api
        .post("/v1/channels/lab/messages", json!({ "raw": "b" }))
        .await;
    api_error(&r, 404, "not_found", Some("channel"));
    message_contains(&r, "channel 'lab' is not configured");
    assert_eq!(
        api.digest().await.1,
        before.1,
        "the refused enqueue changed the state"
    );
    let doc = json!({ "channels": { "orders": {}, "*": {} } });
    ok(&api.put_config(Some("1"), &doc).await, 200);
    api.enqueue("lab", "b").await;
}
