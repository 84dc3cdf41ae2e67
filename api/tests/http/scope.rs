//! Channel scope beyond a row's own channel (docs/SPEC.md §9.4): operations that span every
//! channel need an unscoped token whatever the role; an action that reaches another channel (a
//! re-ingress's loopback channel, a response's re-entry channel) needs that channel in scope; a
//! dead-letter without the row's fence is an operator's; reserved principal names are refused.
//! Every refusal writes nothing.

use crate::harness::*;

/// Each global operation, as a scoped operator (or admin) would call it.
fn global_calls() -> Vec<(Method, &'static str, Option<Value>)> {
    vec![
        (
            Method::POST,
            "/v1/retention/purge",
            Some(json!({ "kind": "bodies", "older_than_ms": 0 })),
        ),
        (
            Method::PUT,
            "/v1/reference/codes",
            Some(json!({ "version": 1, "rows": {} })),
        ),
        (
            Method::POST,
            "/v1/approvals",
            Some(json!({ "operation": "purge" })),
        ),
        (
            Method::POST,
            "/v1/approvals/keyed",
            Some(json!({ "key": "k", "operation": "purge", "params": "{}",
                         "requester": "r", "requested_at": 1 })),
        ),
        (
            Method::POST,
            "/v1/audit/seal",
            Some(json!({ "org": "default" })),
        ),
        (
            Method::POST,
            "/v1/dead-letters/sweep",
            Some(json!({ "stage": "outbound", "keep": [] })),
        ),
        (Method::POST, "/v1/leases/reset", Some(json!({}))),
        (
            Method::POST,
            "/v1/engine/leadership/mf",
            Some(json!({ "node_id": "n", "ttl_ms": 1000 })),
        ),
        (Method::PUT, "/v1/engine/nodes/n", Some(json!({}))),
        (Method::POST, "/v1/engine/counters/c", None),
    ]
}

#[tokio::test]
async fn a_scoped_operator_cannot_act_on_every_channel() {
    let api = start().await;
    let scoped = api.token("op-a", "operator", Some(&["a"])).await;
    let unscoped = api.token("op-all", "operator", None).await;
    let before = api.digest().await;
    for (method, path, body) in global_calls() {
        let r = api.call(method.clone(), path, Some(&scoped), body).await;
        api_error(&r, 403, "forbidden", None);
        message_contains(&r, "channel-scoped");
    }
    let r = api
        .call(
            Method::PUT,
            "/v1/config",
            Some(&scoped),
            Some(json!({ "channels": {}, "destinations": {}, "handlers": {} })),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "global operations by a scoped operator").await;

    // The same calls by an unscoped operator are not refused for scope.
    for (method, path, body) in global_calls() {
        let r = api.call(method, path, Some(&unscoped), body).await;
        assert_ne!(r.status.as_u16(), 403, "{path}: {}", r.text());
    }
}

#[tokio::test]
async fn a_scoped_admin_cannot_mint_tokens() {
    let api = start().await;
    let scoped_admin = api.token("admin-a", "admin", Some(&["a"])).await;
    let before = api.digest().await;
    let r = api
        .post_as(
            &scoped_admin,
            "/v1/tokens",
            json!({ "name": "escalated", "role": "admin" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "token minted by a scoped admin").await;
}

#[tokio::test]
async fn actions_reaching_another_channel_need_it_in_scope() {
    let api = start().await;
    let worker = api.token("worker-a", "worker", Some(&["a"])).await;
    let r = api
        .post_as(
            &worker,
            "/v1/channels/a/messages",
            json!({ "raw": "M", "deliveries": [{ "destination": "d", "payload": "p" }] }),
        )
        .await;
    ok(&r, 201);
    let claimed = api
        .post_as(
            &worker,
            "/v1/claims",
            json!({ "stage": "outbound", "limit": 1, "owner": "w", "ttl_ms": 60000,
                    "channel": "a" }),
        )
        .await;
    ok(&claimed, 200);
    let item = &claimed.body["items"][0];
    let (row, fence) = (item["row_id"].clone(), item["fence"].clone());
    let before = api.digest().await;
    // A response that would re-enter as a message on channel b.
    let r = api
        .post_as(
            &worker,
            &format!("/v1/rows/{row}/response"),
            json!({ "fence": fence, "body": "ACK", "outcome": "accepted", "reingress_to": "b" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    // A dead-letter without the fence overrides the holder: an operator's action.
    let r = api
        .post_as(
            &worker,
            &format!("/v1/rows/{row}/dead"),
            json!({ "error": "gone" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    nothing_proposed(&api, &before, "actions reaching beyond the worker's scope").await;
    // Within scope, with the fence, both are the worker's to do.
    let r = api
        .post_as(
            &worker,
            &format!("/v1/rows/{row}/dead"),
            json!({ "fence": fence, "error": "poison" }),
        )
        .await;
    ok(&r, 200);
}

#[tokio::test]
async fn reserved_principal_names_are_refused() {
    let api = start().await;
    let before = api.digest().await;
    for name in ["admin", "Admin", "raftlane:timer", "raftlane:anything"] {
        let r = api
            .post("/v1/tokens", json!({ "name": name, "role": "viewer" }))
            .await;
        api_error(&r, 400, "invalid", Some("name"));
    }
    nothing_proposed(&api, &before, "reserved names").await;
    let r = api
        .post("/v1/tokens", json!({ "name": "admins", "role": "viewer" }))
        .await;
    assert!(r.status.is_success(), "{}", r.text());
}

#[tokio::test]
async fn metrics_can_require_a_token_that_reads_every_channel() {
    // Off by default: a scraper needs no token.
    let open = start().await;
    let r = open.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());

    let api = start_with(ApiConfig {
        metrics_token_required: true,
        ..Default::default()
    })
    .await;
    let r = api.call(Method::GET, "/metrics", None, None).await;
    api_error(&r, 401, "unauthorized", None);
    let scoped = api.token("viewer-a", "viewer", Some(&["a"])).await;
    let r = api.get_as(&scoped, "/metrics").await;
    api_error(&r, 403, "forbidden", None);
    let viewer = api.token("viewer-all", "viewer", None).await;
    let r = api.get_as(&viewer, "/metrics").await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    assert!(r.text().contains("raftlane_last_applied"));
}
