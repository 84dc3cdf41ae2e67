//! Dual control (docs/SPEC.md §9.5): an action the configuration lists in `approvals_required`
//! runs only with an approval naming exactly that action and its parameters, decided by another
//! principal, unexpired, and used once. Refusals write nothing.

use crate::harness::*;

/// A config listing `required`, written as admin at the current version.
async fn require_approvals(api: &Api, required: &[&str]) {
    let current = api.get("/v1/config").await;
    ok(&current, 200);
    let version = current.body["version"].as_u64().expect("version");
    let doc = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {},
                      "approvals_required": required });
    let r = api.put_config(Some(&version.to_string()), &doc).await;
    ok(&r, 200);
}

/// A call as `token` carrying `Raftlane-Approval: approval` when given.
async fn call_with_approval(
    api: &Api,
    token: &str,
    method: Method,
    path: &str,
    body: Value,
    approval: Option<u64>,
) -> Resp {
    let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(token), Some(body));
    if let Some(id) = approval {
        headers.push(("raftlane-approval", id.to_string()));
    }
    api.send_raw(method, path, &headers, bytes).await
}

/// `POST /v1/approvals` as `token`: the new approval's id.
async fn request_approval(api: &Api, token: &str, operation: &str, params: Value) -> u64 {
    let r = api
        .post_as(
            token,
            "/v1/approvals",
            json!({ "operation": operation, "params": params }),
        )
        .await;
    ok(&r, 201);
    r.body["id"].as_u64().expect("approval id")
}

async fn decide(api: &Api, token: &str, id: u64, approve: bool) -> Resp {
    api.post_as(
        token,
        &format!("/v1/approvals/{id}/decide"),
        json!({ "approve": approve }),
    )
    .await
}

#[tokio::test]
async fn a_listed_purge_needs_another_principals_approval_used_once() {
    let api = start().await;
    let alice = api.token("alice", "operator", None).await;
    let bob = api.token("bob", "operator", None).await;
    require_approvals(&api, &["purge"]).await;
    let purge = json!({ "kind": "bodies", "older_than_ms": 0 });

    // Without an approval: 403 naming what to request, and nothing written.
    let before = api.digest().await;
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        purge.clone(),
        None,
    )
    .await;
    api_error(&r, 403, "approval_required", None);
    assert_eq!(r.body["error"]["operation"], "purge");
    assert_eq!(r.body["error"]["params"], purge);
    nothing_proposed(&api, &before, "a purge without an approval").await;

    // Requested by alice; while pending it authorizes nothing.
    let id = request_approval(&api, &alice, "purge", purge.clone()).await;
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        purge.clone(),
        Some(id),
    )
    .await;
    api_error(&r, 409, "approval_not_usable", None);
    message_contains(&r, "pending");
    // Alice cannot approve her own request.
    api_error(
        &decide(&api, &alice, id, true).await,
        403,
        "self_approval",
        None,
    );
    ok(&decide(&api, &bob, id, true).await, 200);

    // Other parameters than approved: refused, and the approval stays usable.
    let other = json!({ "kind": "dead_letters", "older_than_ms": 0 });
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        other,
        Some(id),
    )
    .await;
    api_error(&r, 409, "approval_not_usable", None);
    message_contains(&r, "other parameters");

    // Exactly the approved action: runs, and uses the approval up.
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        purge.clone(),
        Some(id),
    )
    .await;
    ok(&r, 200);
    let a = api.get(&format!("/v1/approvals/{id}")).await;
    ok(&a, 200);
    assert_eq!(a.body["status"], "consumed");
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        purge,
        Some(id),
    )
    .await;
    api_error(&r, 409, "approval_not_usable", None);
    message_contains(&r, "already used");

    // An approval for another operation does not stand in for this one.
    let cfg = request_approval(&api, &alice, "put_config", json!({})).await;
    ok(&decide(&api, &bob, cfg, true).await, 200);
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/retention/purge",
        json!({ "kind": "bodies", "older_than_ms": 0 }),
        Some(cfg),
    )
    .await;
    api_error(&r, 409, "approval_not_usable", None);
    message_contains(&r, "approves 'put_config'");
}

#[tokio::test]
async fn token_creation_and_config_changes_need_approval_when_listed() {
    let api = start().await;
    let alice = api.token("alice", "admin", None).await;
    let bob = api.token("bob", "admin", None).await;
    require_approvals(&api, &["create_token", "put_config"]).await;

    let token = json!({ "name": "carol", "role": "viewer" });
    let r = call_with_approval(
        &api,
        &alice,
        Method::POST,
        "/v1/tokens",
        token.clone(),
        None,
    )
    .await;
    api_error(&r, 403, "approval_required", None);
    let id = request_approval(&api, &alice, "create_token", token.clone()).await;
    ok(&decide(&api, &bob, id, true).await, 200);
    let r = call_with_approval(&api, &alice, Method::POST, "/v1/tokens", token, Some(id)).await;
    ok(&r, 201);
    assert!(r.body["token"].as_str().is_some_and(|t| !t.is_empty()));

    // The config change that would lift the requirement is itself under it.
    let version = api.get("/v1/config").await.body["version"]
        .as_u64()
        .expect("version");
    let lifted = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {},
                         "approvals_required": [] });
    let r = api.put_config(Some(&version.to_string()), &lifted).await;
    api_error(&r, 403, "approval_required", None);
    let params = r.body["error"]["params"].clone();
    let id = request_approval(&api, &alice, "put_config", params).await;
    ok(&decide(&api, &bob, id, true).await, 200);
    let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(&alice), Some(lifted));
    headers.push(("if-match", version.to_string()));
    headers.push(("raftlane-approval", id.to_string()));
    let r = api
        .send_raw(Method::PUT, "/v1/config", &headers, bytes)
        .await;
    ok(&r, 200);
}

#[tokio::test]
async fn a_config_may_list_only_actions_dual_control_covers() {
    let api = start().await;
    let doc = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {},
                      "approvals_required": ["purgee"] });
    let before = api.digest().await;
    let r = api.put_config(Some("0"), &doc).await;
    api_error(&r, 400, "invalid", Some("approvals_required"));
    message_contains(&r, "purgee");
    nothing_proposed(&api, &before, "a config naming an unknown action").await;
    let r = call_with_approval(
        &api,
        ADMIN,
        Method::POST,
        "/v1/retention/purge",
        json!({ "kind": "bodies", "older_than_ms": 0 }),
        None,
    )
    .await;
    ok(&r, 200);
    let bad = raftlane_testkit::http::json_request(
        Some(ADMIN),
        Some(json!({ "kind": "bodies", "older_than_ms": 0 })),
    );
    let (mut headers, bytes) = bad;
    headers.push(("raftlane-approval", "x".into()));
    let r = api
        .send_raw(Method::POST, "/v1/retention/purge", &headers, bytes)
        .await;
    api_error(&r, 400, "invalid", Some("Raftlane-Approval"));
}

/// `change_membership` listed: both membership routes need an approval naming their body
/// (docs/SPEC.md §9.5, §9.10), asked before the change reaches Raft; with one, the change goes
/// on to Raft (which this single local node refuses: it has no peers).
#[tokio::test]
async fn a_listed_membership_change_needs_an_approval_on_every_membership_route() {
    let api = start().await;
    let alice = api.token("alice", "admin", None).await;
    let bob = api.token("bob", "admin", None).await;
    require_approvals(&api, &["change_membership"]).await;
    for (path, body) in [
        ("/v1/cluster/membership", json!({ "voters": [1] })),
        (
            "/v1/cluster/learners",
            json!({ "id": 4, "addr": "n4:7001" }),
        ),
    ] {
        let before = api.digest().await;
        let r = call_with_approval(&api, &alice, Method::POST, path, body.clone(), None).await;
        api_error(&r, 403, "approval_required", None);
        assert_eq!(r.body["error"]["operation"], "change_membership", "{path}");
        assert_eq!(r.body["error"]["params"], body, "{path}");
        nothing_proposed(&api, &before, path).await;
        let id = request_approval(&api, &alice, "change_membership", body.clone()).await;
        ok(&decide(&api, &bob, id, true).await, 200);
        let r = call_with_approval(&api, &alice, Method::POST, path, body, Some(id)).await;
        assert_ne!(r.status.as_u16(), 403, "{path}: {}", r.text());
    }
}
