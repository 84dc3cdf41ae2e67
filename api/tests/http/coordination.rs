//! Engine coordination over HTTP (docs/SPEC.md §15): the registry with heartbeats and clean
//! leaves, one leader per group through a lease with a fence, shared counters, a node's lanes.
//! Time is driven with the client clock, so leases run out when the test says.

use crate::harness::*;

const T: u64 = 1_000_000;

async fn campaign(api: &Api, at: u64, node: &str, ttl_ms: u64) -> Value {
    let r = api
        .call_at(
            at,
            Method::POST,
            "/v1/engine/leadership/mf",
            Some(json!({ "node_id": node, "ttl_ms": ttl_ms })),
        )
        .await;
    ok(&r, 200);
    r.body
}

#[tokio::test]
async fn the_registry_keeps_heartbeats_and_tombstones() {
    let api = start_client_clock().await;
    let r = api
        .call_at(
            T,
            Method::PUT,
            "/v1/engine/nodes/node-a",
            Some(json!({ "host": "h1", "pid": 42 })),
        )
        .await;
    ok(&r, 200);
    let r = api
        .call_at(T + 100, Method::PUT, "/v1/engine/nodes/node-a", None)
        .await;
    ok(&r, 200);
    let r = api
        .call_at(T + 150, Method::GET, "/v1/engine/nodes", None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["now"], T + 150);
    let node = &r.body["nodes"][0];
    assert_eq!(node["node_id"], "node-a");
    assert_eq!(node["host"], "h1");
    assert_eq!(node["pid"], 42);
    assert_eq!(node["started_at"], T);
    assert_eq!(node["last_seen"], T + 100);
    assert_eq!(node["status"], "active");

    let r = api
        .call(Method::DELETE, "/v1/engine/nodes/node-a", Some(ADMIN), None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["left"], true);
    let r = api.get("/v1/engine/nodes").await;
    assert_eq!(r.body["nodes"][0]["status"], "left");
    let r = api
        .call(Method::DELETE, "/v1/engine/nodes/nobody", Some(ADMIN), None)
        .await;
    assert_eq!(r.body["left"], false);

    let before = api.digest().await;
    let r = api
        .call(
            Method::PUT,
            "/v1/engine/nodes/node-a",
            Some(ADMIN),
            Some(json!({ "host": "" })),
        )
        .await;
    api_error(&r, 400, "invalid", Some("host"));
    nothing_proposed(&api, &before, "empty host").await;
}

#[tokio::test]
async fn one_leader_whose_fence_changes_with_the_owner() {
    let api = start_client_clock().await;
    let a = campaign(&api, T, "node-a", 1_000).await;
    assert_eq!(a["owner"], "node-a");
    assert_eq!(a["expires_at"], T + 1_000);
    let b = campaign(&api, T + 500, "node-b", 1_000).await;
    assert_eq!(b["owner"], "node-a", "a live lease stands");
    assert_eq!(b["fence"], a["fence"]);
    // a stops renewing: after its expiry b takes over under a new fence.
    let b = campaign(&api, T + 1_001, "node-b", 1_000).await;
    assert_eq!(b["owner"], "node-b");
    assert_ne!(b["fence"], a["fence"]);
    let r = api.get("/v1/engine/leadership/mf").await;
    ok(&r, 200);
    assert_eq!(r.body["owner"], "node-b");

    let r = api
        .post(
            "/v1/engine/leadership/mf/resign",
            json!({ "node_id": "node-a" }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["resigned"], false);
    let r = api
        .post(
            "/v1/engine/leadership/mf/resign",
            json!({ "node_id": "node-b" }),
        )
        .await;
    assert_eq!(r.body["resigned"], true);
    let r = api.get("/v1/engine/leadership/mf").await;
    assert!(r.body["owner"].is_null(), "{}", r.body);

    let r = api
        .post(
            "/v1/engine/leadership/mf",
            json!({ "node_id": "a", "ttl_ms": 0 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("ttl_ms"));
}

#[tokio::test]
async fn counters_and_held_lanes() {
    let api = start_client_clock().await;
    let r = api.get("/v1/engine/counters/config_version").await;
    ok(&r, 200);
    assert_eq!(r.body["value"], 0);
    let r = api
        .call(
            Method::POST,
            "/v1/engine/counters/config_version",
            Some(ADMIN),
            None,
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["value"], 1);
    let r = api.get("/v1/engine/counters/config_version").await;
    assert_eq!(r.body["value"], 1);

    // A lane leased to node-a is listed while the lease lives.
    let r = api
        .call_at(
            T,
            Method::POST,
            "/v1/channels/ib/messages",
            Some(json!({ "raw": "M", "deliveries": [{ "destination": "ob1", "payload": "p" }] })),
        )
        .await;
    ok(&r, 201);
    let r = api
        .call_at(
            T + 1,
            Method::POST,
            "/v1/lanes/outbound/ob1/claim",
            Some(json!({ "owner": "node-a", "row_owner": "node-a:1", "ttl_ms": 1_000 })),
        )
        .await;
    ok(&r, 200);
    let r = api
        .call_at(T + 2, Method::GET, "/v1/engine/lanes/node-a", None)
        .await;
    ok(&r, 200);
    assert_eq!(r.body["lanes"], json!(["outbound:ob1"]));
    let r = api
        .call_at(T + 5_000, Method::GET, "/v1/engine/lanes/node-a", None)
        .await;
    assert_eq!(r.body["lanes"], json!([]));
}
