//! Names bound to principals (docs/SPEC.md §9.1, §9.8): principal names and usernames have one
//! normal form; engine node ids and owner names are their principal's, from their first use
//! or an admin's reservation; one engine cannot resign or leave another.

use crate::harness::*;

/// The `field` of a refusal, and its code.
#[track_caller]
fn refused(r: &Resp, status: u16, code: &str, field: &str) {
    api_error(r, status, code, Some(field));
}

#[tokio::test]
async fn principal_names_have_one_normal_form() {
    let api = start().await;
    api.token("bob", "worker", None).await;
    let before = api.digest().await;
    for name in [
        " admin",
        "admin ",
        "admin\u{200b}",
        "ad\u{200d}min",
        "\u{202e}nimda",
        "аdmin", // Cyrillic а
        "ADMIN",
        "Root",
        "raftlane:timer",
        "bоb", // Cyrillic о: looks like the existing bob
        "BOB",
        "b\u{00ad}ob",
        "a\tb",
    ] {
        let r = api
            .post("/v1/tokens", json!({ "name": name, "role": "viewer" }))
            .await;
        refused(&r, 400, "invalid", "name");
    }
    // Refused by the API (its own characters) or by the state machine as it applies (against
    // the other principals): either way nothing changed.
    assert_eq!(
        api.digest().await.1,
        before.1,
        "a look-alike principal name changed the state"
    );

    // A compatibility form is taken in its NFKC form, and is then the name it looks like.
    let r = api
        .post(
            "/v1/tokens",
            json!({ "name": "ｃａｒｏｌ", "role": "viewer" }),
        )
        .await;
    ok(&r, 201);
    assert_eq!(r.body["name"], "carol");
    let r = api.get("/v1/tokens").await;
    ok(&r, 200);
    let names: Vec<&str> = r.body["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"carol"), "{names:?}");
    // Rotating a principal's own token is not a look-alike of itself.
    api.token("bob", "worker", None).await;

    // The engine's usernames: the same rule among usernames (`admin` is messagefoundry's own
    // bootstrap user and stays allowed there).
    for (id, username) in [("u1", "admin"), ("u2", "dana")] {
        let r = api
            .post(
                "/v1/users",
                json!({ "id": id, "username": username, "auth_provider": "local" }),
            )
            .await;
        ok(&r, 201);
    }
    for (i, username) in ["dаna", "DANA", " erin", "erin\u{2060}", "raftlane:x"]
        .into_iter()
        .enumerate()
    {
        let r = api
            .post(
                "/v1/users",
                json!({ "id": format!("x{i}"), "username": username, "auth_provider": "local" }),
            )
            .await;
        refused(&r, 400, "invalid", "username");
    }
}

#[tokio::test]
async fn an_engine_node_id_is_its_principals() {
    let api = start().await;
    let a = api.token("engine-a", "engine", None).await;
    let b = api.token("engine-b", "engine", None).await;
    let ops = api.token("ops", "operator", None).await;
    let put_as = |token: String, path: String| {
        let api = &api;
        async move {
            api.call(Method::PUT, &path, Some(&token), Some(json!({})))
                .await
        }
    };
    let r = put_as(a.clone(), "/v1/engine/nodes/node-a".into()).await;
    ok(&r, 200);
    let r = api
        .post_as(
            &a,
            "/v1/engine/leadership/mf",
            json!({ "node_id": "node-a", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["owner"], "node-a");

    // Engine b can neither pose as node-a nor resign its leadership nor mark it left.
    let before = api.digest().await;
    let r = put_as(b.clone(), "/v1/engine/nodes/node-a".into()).await;
    refused(&r, 403, "owner_of_another_principal", "node_id");
    let r = api
        .post_as(
            &b,
            "/v1/engine/leadership/other",
            json!({ "node_id": "node-a", "ttl_ms": LONG_TTL }),
        )
        .await;
    refused(&r, 403, "owner_of_another_principal", "node_id");
    let r = api
        .post_as(
            &b,
            "/v1/engine/leadership/mf/resign",
            json!({ "node_id": "node-a" }),
        )
        .await;
    refused(&r, 403, "owner_of_another_principal", "node_id");
    let r = api
        .call(Method::DELETE, "/v1/engine/nodes/node-a", Some(&b), None)
        .await;
    refused(&r, 403, "owner_of_another_principal", "node_id");
    assert_eq!(
        api.digest().await.1,
        before.1,
        "a refused call changed the state"
    );
    let r = api.get_as(&b, "/v1/engine/leadership/mf").await;
    ok(&r, 200);
    assert_eq!(r.body["owner"], "node-a");
    let r = api.get_as(&b, "/v1/owners/node-a").await;
    ok(&r, 200);
    assert_eq!(r.body["principal"], "engine-a");

    // Engine b's own node id is its own.
    let r = put_as(b.clone(), "/v1/engine/nodes/node-b".into()).await;
    ok(&r, 200);

    // An operator resigns engine a's leadership and marks it left: its override, audited.
    let r = api
        .post_as(
            &ops,
            "/v1/engine/leadership/mf/resign",
            json!({ "node_id": "node-a" }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["resigned"], true);
    let r = api
        .call(Method::DELETE, "/v1/engine/nodes/node-a", Some(&ops), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["left"], true);
    let r = api.get("/v1/audit/search?org=default&actor=ops").await;
    ok(&r, 200);
    let overrides = r.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["action"] == "owner.override")
        .count();
    assert_eq!(overrides, 2, "{}", r.text());
}

#[tokio::test]
async fn an_admin_reserves_an_owner_name_ahead_of_use() {
    let api = start().await;
    let engine = api.token("engine-a", "engine", None).await;
    let worker = api.token("squatter", "worker", None).await;
    api.token("engine-b", "engine", None).await;

    let r = api
        .put("/v1/owners/mf-node-1", json!({ "principal": "engine-a" }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], true);
    // Again: nothing changes.
    let r = api
        .put("/v1/owners/mf-node-1", json!({ "principal": "engine-a" }))
        .await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], false);
    // Bound to another principal: release it first.
    let r = api
        .put("/v1/owners/mf-node-1", json!({ "principal": "engine-b" }))
        .await;
    refused(&r, 409, "already_exists", "owner");
    let r = api
        .put("/v1/owners/mf-node-2", json!({ "principal": "nobody" }))
        .await;
    api_error(&r, 404, "not_found", None);
    // Only an admin reserves.
    let r = api
        .call(
            Method::PUT,
            "/v1/owners/mf-node-3",
            Some(&engine),
            Some(json!({ "principal": "engine-a" })),
        )
        .await;
    api_error(&r, 403, "forbidden", None);

    // The squatter cannot take the reserved name first, nor heartbeat under it.
    api.enqueue("lab", "MSH|1").await;
    let before = api.digest().await;
    let r = api
        .post_as(
            &worker,
            "/v1/lanes/ingress/lab/claim",
            json!({ "owner": "mf-node-1", "ttl_ms": LONG_TTL }),
        )
        .await;
    refused(&r, 403, "owner_of_another_principal", "owner");
    let r = api
        .call(
            Method::PUT,
            "/v1/engine/nodes/mf-node-1",
            Some(&worker),
            Some(json!({})),
        )
        .await;
    refused(&r, 403, "owner_of_another_principal", "node_id");
    assert_eq!(
        api.digest().await.1,
        before.1,
        "a refused claim changed the state"
    );
    // The engine it was reserved for claims under it.
    let r = api
        .post_as(
            &engine,
            "/v1/lanes/ingress/lab/claim",
            json!({ "owner": "mf-node-1", "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    assert!(r.body["item"]["row_id"].is_u64(), "{}", r.text());

    // Released, the name is nobody's until its next use.
    let r = api
        .call(Method::DELETE, "/v1/owners/mf-node-1", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["changed"], true);
    let r = api.get("/v1/owners/mf-node-1").await;
    ok(&r, 200);
    assert!(r.body["principal"].is_null(), "{}", r.text());
    let r = api.get("/v1/audit/search?org=default&actor=admin").await;
    ok(&r, 200);
    let actions: Vec<&str> = r.body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|row| row["action"].as_str())
        .collect();
    assert!(
        actions.contains(&"owner.reserve") && actions.contains(&"owner.release"),
        "{actions:?}"
    );
}

/// docs/SPEC.md §9.3: the engine role does what messagefoundry's engine does (users and
/// sessions included) and nothing of an operator's or admin's beyond it.
#[tokio::test]
async fn the_engine_role_runs_the_engine_and_no_more() {
    let api = start().await;
    let engine = api.token("engine-a", "engine", None).await;
    let r = api
        .post_as(
            &engine,
            "/v1/users",
            json!({ "id": "u1", "username": "alice", "auth_provider": "local" }),
        )
        .await;
    ok(&r, 201);
    let r = api.get_as(&engine, "/v1/users?username=alice").await;
    ok(&r, 200);
    assert_eq!(r.body["count"], 1);
    let r = api
        .post_as(
            &engine,
            "/v1/audit",
            json!({ "action": "auth.login", "actor": "alice", "org": "default" }),
        )
        .await;
    ok(&r, 200);
    let r = api
        .post_as(
            &engine,
            "/v1/retention/purge",
            json!({ "kind": "state", "older_than": 0 }),
        )
        .await;
    ok(&r, 200);
    // Not the cluster's config, tokens, keys or membership.
    let doc = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {},
                      "approvals_required": [] });
    let r = api
        .call(Method::PUT, "/v1/config", Some(&engine), Some(doc))
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(
            &engine,
            "/v1/tokens",
            json!({ "name": "x", "role": "admin" }),
        )
        .await;
    api_error(&r, 403, "forbidden", None);
    let r = api
        .post_as(&engine, "/v1/audit/seal", json!({ "org": "default" }))
        .await;
    api_error(&r, 403, "forbidden", None);
    // A worker is refused the engine's users (what stopped messagefoundry at start).
    let worker = api.token("w", "worker", None).await;
    let r = api.get_as(&worker, "/v1/users?limit=0").await;
    api_error(&r, 403, "forbidden", None);
    message_contains(&r, "role worker may not");
}
