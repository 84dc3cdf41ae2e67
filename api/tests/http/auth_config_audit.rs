//! Roles, channel scope and revocation; configuration compare-and-set; the audit chain.

use crate::harness::*;

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
    assert!(v.ok, "{v:?}");
}
