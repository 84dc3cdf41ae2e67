//! Black-box tests of the HTTP API against a real three-node cluster: every request goes over
//! loopback HTTP, writes are committed by Raft, followers forward to the leader.

use hyper::Method;
use raftlane_client::contract::{
    DeliveryBody, FifoEmptyReason, HandoffBody, RouteBody, RouteHandler, Stage, StateOpBody,
    TransformBody,
};
use raftlane_client::{Client, ClientError, RowAction, RowAnswer};
use raftlane_testkit::http::{Http, Reply};
use raftlane_testkit::node::{NodeCluster, ADMIN};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn api_code(e: &ClientError) -> (Option<u16>, Option<&str>) {
    (e.status(), e.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_pipeline_through_a_follower_ends_processed() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();

    let m = c.enqueue("lab", "MSH|^~\\&|LAB|1", None).await.unwrap();
    assert!(!m.duplicate);

    let ingress = c
        .claim_ready(Stage::Ingress, 10, "router", 30_000, Some("lab"))
        .await
        .unwrap();
    assert_eq!(ingress.len(), 1);
    let row = &ingress[0];
    let r = c
        .row(
            row.row_id.0,
            RowAction::Route(RouteBody {
                fence: row.fence,
                handlers: vec![RouteHandler {
                    handler: "hl7-to-fhir".into(),
                    payload: row.payload.clone(),
                }],
                disposition: None,
                claim_next: None,
            }),
        )
        .await
        .unwrap();
    assert!(
        matches!(r, RowAnswer::HandedOff { applied: true, .. }),
        "{r:?}"
    );

    let routed = c
        .claim_ready(Stage::Routed, 10, "transformer", 30_000, None)
        .await
        .unwrap();
    assert_eq!(routed.len(), 1);
    let row = &routed[0];
    let r = c
        .row(
            row.row_id.0,
            RowAction::Transform(TransformBody {
                fence: row.fence,
                deliveries: vec![DeliveryBody {
                    destination: "ehr".into(),
                    payload: "fhir-bundle".into(),
                }],
                state_ops: vec![StateOpBody {
                    namespace: "lab".into(),
                    key: "last".into(),
                    value: json!(1),
                }],
                claim_next: None,
            }),
        )
        .await
        .unwrap();
    assert!(
        matches!(r, RowAnswer::HandedOff { applied: true, .. }),
        "{r:?}"
    );

    let claim = c
        .claim_fifo("outbound", "ehr", "sender", 30_000)
        .await
        .unwrap();
    let item = claim.item.expect("the outbound head");
    assert_eq!(item.payload, "fhir-bundle");
    c.done(&item).await.unwrap();

    let view = serde_json::to_value(c.message(m.message_id).await.unwrap()).unwrap();
    assert_eq!(view["message"]["status"], "processed");
    let events: Vec<&str> = view["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["received", "routed", "transformed", "delivered"]);
    // The details messagefoundry's console shows, in messagefoundry's words.
    let details: Vec<&str> = view["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        details,
        ["ingress", "1 handler(s)", "1 destination(s)", "attempt 1"]
    );
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifo_order_with_two_competing_workers_and_a_stale_fence() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.client();
    // Ten messages, each handed straight to the outbound lane "billing" in enqueue order.
    let mut message_ids = Vec::new();
    for n in 0..10 {
        message_ids.push(
            c.enqueue("orders", &format!("order-{n}"), None)
                .await
                .unwrap()
                .message_id,
        );
        let rows = c
            .claim_ready(Stage::Ingress, 1, "router", 30_000, None)
            .await
            .unwrap();
        let row = &rows[0];
        let handoff = RowAction::Handoff(HandoffBody {
            fence: row.fence,
            deliveries: vec![DeliveryBody {
                destination: "billing".into(),
                payload: format!("{n}"),
            }],
            disposition: None,
            claim_next: None,
        });
        c.row(row.row_id.0, handoff).await.unwrap();
    }
    // Worker A takes the lane; B is refused while A's lane lease lives.
    let a = c
        .claim_fifo("outbound", "billing", "worker-a", 1_500)
        .await
        .unwrap();
    let first = a.item.expect("head for A");
    assert_eq!(first.payload, "0");
    let b = c
        .claim_fifo("outbound", "billing", "worker-b", 30_000)
        .await
        .unwrap();
    assert!(b.item.is_none());
    assert_eq!(b.reason, Some(FifoEmptyReason::LaneBusy));
    assert_eq!(b.holder.as_deref(), Some("worker-a"));

    // A stalls past its lease; B takes over and gets the stranded head again, not row 1.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let b = c
        .claim_fifo("outbound", "billing", "worker-b", 30_000)
        .await
        .unwrap();
    let again = b.item.expect("B gets the stranded head");
    assert_eq!(again.row_id, first.row_id);
    assert_ne!(again.fence, first.fence);

    // A's old fence is refused with 409 and changes nothing: the row stays B's.
    let err = c.done(&first).await.unwrap_err();
    assert_eq!(api_code(&err), (Some(409), Some("stale_fence")));
    let view = serde_json::to_value(c.message(again.message_id).await.unwrap()).unwrap();
    let row = view["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"].as_u64() == Some(again.row_id.0))
        .unwrap()
        .clone();
    assert_eq!(row["status"], "inflight");
    assert_eq!(row["claim"]["fence"].as_u64(), Some(again.fence.0));

    // B finishes the head and gives the lane back; then both workers drain the lane at once.
    c.done(&again).await.unwrap();
    let release = |c: Client, owner: &'static str| async move {
        c.request(
            Method::POST,
            "/v1/lanes/outbound/billing/release",
            Some(json!({ "owner": owner })),
        )
        .await
        .unwrap();
    };
    release(c.clone(), "worker-b").await;
    // (payload, worker) in the order the rows were done: a worker records its row after `done`
    // and before giving the lane back, and nobody can claim the next row before that.
    let delivered = Arc::new(Mutex::new(vec![(again.payload.clone(), "worker-b")]));
    let busy_answers = Arc::new(AtomicUsize::new(0));
    // Both workers point at different nodes, so their claims race through Raft.
    let mut workers = Vec::new();
    for (i, owner) in ["worker-a", "worker-b"].into_iter().enumerate() {
        let c = cluster.client().pinned(i);
        let delivered = delivered.clone();
        let busy_answers = busy_answers.clone();
        workers.push(tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                assert!(
                    Instant::now() < deadline,
                    "{owner}: lane not drained in time"
                );
                let claim = c
                    .claim_fifo("outbound", "billing", owner, 30_000)
                    .await
                    .unwrap();
                match (claim.item, claim.reason) {
                    (Some(item), _) => {
                        c.done(&item).await.unwrap();
                        delivered.lock().unwrap().push((item.payload, owner));
                        release(c.clone(), owner).await;
                        // Let the other worker win the next head now and then.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    (None, Some(FifoEmptyReason::LaneBusy)) => {
                        busy_answers.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    (None, Some(FifoEmptyReason::Empty))
                        if delivered.lock().unwrap().len() >= 10 =>
                    {
                        // A claim of an empty lane may still take the lane lease (when it is
                        // proposed rather than answered from a read): give it back too.
                        release(c.clone(), owner).await;
                        break;
                    }
                    (None, _) => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let delivered = delivered.lock().unwrap().clone();
    let order: Vec<&str> = delivered.iter().map(|(p, _)| p.as_str()).collect();
    let want: Vec<String> = (0..10).map(|n| n.to_string()).collect();
    assert_eq!(
        order, want,
        "completion order across both workers: {delivered:?}"
    );
    for owner in ["worker-a", "worker-b"] {
        assert!(
            delivered[1..].iter().any(|(_, w)| *w == owner),
            "{owner} took part in the drain: {delivered:?}"
        );
    }
    assert!(
        busy_answers.load(Ordering::Relaxed) > 0,
        "the workers never contended for the lane"
    );
    // Each message was delivered exactly once: one done outbound row, one `delivered` event.
    for id in message_ids {
        let view = serde_json::to_value(c.message(id).await.unwrap()).unwrap();
        assert_eq!(view["message"]["status"], "processed", "{view}");
        let delivered_events = view["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "delivered")
            .count();
        assert_eq!(delivered_events, 1, "message {id}: {view}");
        let outbound: Vec<&Value> = view["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["stage"] == "outbound")
            .collect();
        assert_eq!(outbound.len(), 1, "message {id}: {view}");
        assert_eq!(outbound[0]["status"], "done", "message {id}: {view}");
    }
    cluster.shutdown().await;
}

/// The message count and the row counts by stage and status (not the clock or applied index,
/// which move with every write, the leader's timers included), read linearizably from `h`.
async fn counts(h: &Http) -> Value {
    let stats = h.get("/v1/stats", Some(ADMIN)).await;
    let stats = stats.ok();
    json!({ "messages": stats["messages"], "rows": stats["rows"] })
}

/// The first claimed item of a `POST /v1/claims` or `…/claim` answer: `(row id, fence)`.
fn claimed(r: &Reply) -> (u64, u64) {
    let v = r.ok();
    let item = if v["items"].is_array() {
        &v["items"][0]
    } else {
        &v["item"]
    };
    (
        item["row_id"]
            .as_u64()
            .unwrap_or_else(|| panic!("no item in {r:?}")),
        item["fence"].as_u64().unwrap(),
    )
}

/// Every error status of the contract, each with its full JSON body, sent to a follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_enqueue_and_every_error_status_with_its_json_body() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.client();
    let one = c.enqueue("adt", "A01", Some("key-1")).await.unwrap();
    let two = c.enqueue("adt", "A01 again", Some("key-1")).await.unwrap();
    assert!(!one.duplicate);
    assert!(two.duplicate);
    assert_eq!(one.message_id, two.message_id);

    let f = cluster.follower().await.unwrap();
    let h = cluster.http(f);
    let before = counts(&h).await;
    assert_eq!(before["messages"], 1, "{before}");

    // 400: malformed JSON, wrong types, unknown stage, empty and over-long names; the field
    // named where there is one.
    let enqueue = "/v1/channels/adt/messages";
    let r = h
        .send(
            Method::POST,
            enqueue,
            Some(ADMIN),
            Some("application/json"),
            br#"{"raw": "A02"#.to_vec(),
            &[],
        )
        .await;
    r.assert_error(400, "invalid", Some("body"));
    let r = h
        .json(Method::POST, enqueue, ADMIN, &json!({ "raw": 5 }))
        .await;
    r.assert_error(400, "invalid", Some("raw"));
    let r = h
        .json(Method::POST, enqueue, ADMIN, &json!({ "raw": "" }))
        .await;
    r.assert_error(400, "invalid", Some("raw"));
    let long = "x".repeat(300);
    let r = h
        .json(
            Method::POST,
            &format!("/v1/channels/{long}/messages"),
            ADMIN,
            &json!({ "raw": "A02" }),
        )
        .await;
    r.assert_error(400, "invalid", Some("channel"));
    let claim = |body: Value| {
        let h = h.clone();
        async move { h.json(Method::POST, "/v1/claims", ADMIN, &body).await }
    };
    claim(json!({ "stage": "ingress", "limit": 1, "owner": "w", "ttl_ms": "soon" }))
        .await
        .assert_error(400, "invalid", Some("ttl_ms"));
    claim(json!({ "stage": "nowhere", "limit": 1, "owner": "w", "ttl_ms": 1000 }))
        .await
        .assert_error(400, "invalid", Some("stage"));
    claim(json!({ "stage": "ingress", "limit": 1, "owner": "", "ttl_ms": 1000 }))
        .await
        .assert_error(400, "invalid", Some("owner"));
    claim(json!({ "stage": "ingress", "limit": 1, "owner": long, "ttl_ms": 1000 }))
        .await
        .assert_error(400, "invalid", Some("owner"));
    let r = h
        .json(
            Method::POST,
            "/v1/lanes/nowhere/adt/claim",
            ADMIN,
            &json!({ "owner": "w", "ttl_ms": 1000 }),
        )
        .await;
    r.assert_error(400, "invalid", Some("stage"));
    let r = h
        .send(
            Method::PUT,
            "/v1/config",
            Some(ADMIN),
            Some("application/json"),
            b"{}".to_vec(),
            &[],
        )
        .await;
    r.assert_error(400, "invalid", Some("If-Match"));

    // 401: no token, an unknown token, not a bearer token.
    h.get("/v1/messages", None)
        .await
        .assert_error(401, "unauthorized", None);
    h.json(Method::POST, enqueue, "nope", &json!({ "raw": "A02" }))
        .await
        .assert_error(401, "unauthorized", None);
    h.send(
        Method::GET,
        "/v1/messages",
        None,
        None,
        Vec::new(),
        &[("authorization", format!("Basic {ADMIN}"))],
    )
    .await
    .assert_error(401, "unauthorized", None);

    // 403: outside the role.
    let viewer = cluster.token("v", "viewer", None).await.unwrap();
    let worker = cluster.token("w", "worker", None).await.unwrap();
    h.json(Method::POST, enqueue, &viewer, &json!({ "raw": "A02" }))
        .await
        .assert_error(403, "forbidden", None);
    h.json(
        Method::POST,
        "/v1/tokens",
        &worker,
        &json!({ "name": "x", "role": "admin" }),
    )
    .await
    .assert_error(403, "forbidden", None);

    // 413 over the body limit (64 KiB in the harness), JSON or raw.
    let big = "x".repeat(100 * 1024);
    h.json(Method::POST, enqueue, ADMIN, &json!({ "raw": big }))
        .await
        .assert_error(413, "too_large", None);
    h.send(
        Method::POST,
        enqueue,
        Some(ADMIN),
        Some("text/plain"),
        big.into_bytes(),
        &[],
    )
    .await
    .assert_error(413, "too_large", None);

    // None of the refused requests wrote anything (the token creations are principals, not
    // messages or rows).
    assert_eq!(counts(&h).await, before);

    // 404: an unknown message, config version, row; an unknown route is a 404 too, told
    // apart by its message.
    h.get("/v1/messages/999999", Some(ADMIN))
        .await
        .assert_error(404, "not_found", None);
    h.get("/v1/config/versions/999999", Some(ADMIN))
        .await
        .assert_error(404, "not_found", None);
    h.json(
        Method::POST,
        "/v1/rows/999999/done",
        ADMIN,
        &json!({ "fence": 1 }),
    )
    .await
    .assert_error(404, "not_found", None);
    let r = h.get("/v1/not-a-route", Some(ADMIN)).await;
    r.assert_error(404, "not_found", None);
    assert_eq!(r.message(), "no such route");

    // 409: a stale fence, then a row in the wrong status.
    let r = claim(json!({ "stage": "ingress", "limit": 1, "owner": "router", "ttl_ms": 30_000, "channel": "adt" })).await;
    let (row, fence) = claimed(&r);
    let action = |row: u64, action: &str, body: Value| {
        let h = h.clone();
        let path = format!("/v1/rows/{row}/{action}");
        async move { h.json(Method::POST, &path, ADMIN, &body).await }
    };
    action(row, "route", json!({ "fence": fence + 1, "handlers": [] }))
        .await
        .assert_error(409, "stale_fence", None);
    let r = action(
        row,
        "handoff",
        json!({ "fence": fence, "deliveries": [{ "destination": "ehr", "payload": "p" }] }),
    )
    .await;
    assert_eq!(r.ok()["applied"], true, "{r:?}");
    let r = h
        .json(
            Method::POST,
            "/v1/lanes/outbound/ehr/claim",
            ADMIN,
            &json!({ "owner": "sender", "ttl_ms": 30_000 }),
        )
        .await;
    let (out_row, out_fence) = claimed(&r);
    action(out_row, "done", json!({ "fence": out_fence }))
        .await
        .ok();
    action(out_row, "done", json!({ "fence": out_fence }))
        .await
        .assert_error(409, "wrong_status", None);

    // 412: a stale If-Match, with the current version in the body.
    let version = h.get("/v1/config", Some(ADMIN)).await.ok()["version"]
        .as_u64()
        .unwrap();
    let put = |v: u64| {
        let h = h.clone();
        async move {
            h.send(
                Method::PUT,
                "/v1/config",
                Some(ADMIN),
                Some("application/json"),
                b"{}".to_vec(),
                &[("if-match", v.to_string())],
            )
            .await
        }
    };
    let current = put(version).await.ok()["version"].as_u64().unwrap();
    assert!(current > version);
    let r = put(version).await;
    r.assert_error_with(412, "version_mismatch", None, &["current_version"]);
    assert_eq!(r.json["error"]["current_version"].as_u64(), Some(current));
    let now = h.get("/v1/config", Some(ADMIN)).await;
    assert_eq!(now.ok()["version"].as_u64(), Some(current));
    cluster.shutdown().await;
}

/// With two of three nodes down no leader can be elected: a write and a linearizable read
/// sent to the survivor answer 503 with `Retry-After` once the node's retry window is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_a_leader_writes_and_reads_answer_503_with_retry_after() {
    let mut cluster = NodeCluster::start().await.unwrap();
    cluster
        .client()
        .enqueue("adt", "before", None)
        .await
        .unwrap();
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    let survivor = cluster.follower().await.unwrap();
    for id in 1..=3 {
        if id != survivor {
            cluster.stop(id).await;
        }
    }
    // The node retries for about 8 s (api/src/write/forward.rs) before it gives up.
    let h = Http::new(
        &cluster.addrs[cluster.index_of(survivor)],
        Duration::from_secs(40),
    );
    let body = json!({ "raw": "after" });
    let started = Instant::now();
    let (write, read) = tokio::join!(
        h.json(Method::POST, "/v1/channels/adt/messages", ADMIN, &body,),
        h.get("/v1/messages", Some(ADMIN)),
    );
    let took = started.elapsed();
    for r in [&write, &read] {
        r.assert_error(503, "unavailable", None);
        let retry_after = r
            .headers
            .get("retry-after")
            .unwrap_or_else(|| panic!("no Retry-After: {r:?}"))
            .to_str()
            .unwrap();
        let secs: u64 = retry_after.parse().expect("Retry-After in seconds");
        assert!(secs >= 1, "Retry-After {secs}");
    }
    assert!(took < Duration::from_secs(30), "503 took {took:?}");
    // The probes agree; a stale read still serves the local state.
    let ready = h.get("/readyz", None).await;
    assert_eq!(ready.status.as_u16(), 503, "{ready:?}");
    assert_eq!(ready.json["ready"], false, "{ready:?}");
    assert_eq!(h.get("/healthz", None).await.status.as_u16(), 200);
    let stale = h.get("/v1/messages?consistency=stale", Some(ADMIN)).await;
    let channels: Vec<&Value> = stale.ok()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["channel_id"])
        .collect();
    assert_eq!(channels, [&json!("adt")], "{stale:?}");
    cluster.shutdown().await;
}

/// A POST of `body` to `path` with `token` is refused with 403 `forbidden`.
async fn forbidden_post(h: &Http, path: &str, token: &str, body: Value) {
    h.json(Method::POST, path, token, &body)
        .await
        .assert_error(403, "forbidden", None);
}

/// What each role may do (api/src/auth.rs `role_allows`), and a channel-scoped token that can
/// neither read nor touch another channel's messages. All requests go to a follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn roles_and_channel_scope() {
    let cluster = NodeCluster::start().await.unwrap();
    let admin = cluster.client();
    let h = cluster.http(cluster.follower().await.unwrap());
    let operator = cluster.token("ops", "operator", None).await.unwrap();
    let worker = cluster.token("w", "worker", None).await.unwrap();
    let viewer = cluster.token("v", "viewer", None).await.unwrap();
    let lab_worker = cluster
        .token("lab-worker", "worker", Some(&["lab"][..]))
        .await
        .unwrap();
    let lab_operator = cluster
        .token("lab-ops", "operator", Some(&["lab"][..]))
        .await
        .unwrap();
    let adt = admin
        .enqueue("adt", "not yours", None)
        .await
        .unwrap()
        .message_id;
    let forbidden = |r: Reply| r.assert_error(403, "forbidden", None);
    let post = |path: String, token: String, body: Value| {
        let h = h.clone();
        async move { h.json(Method::POST, &path, &token, &body).await }
    };
    let config_put = |token: String| {
        let h = h.clone();
        async move {
            let v = h.get("/v1/config", Some(&token)).await.ok()["version"]
                .as_u64()
                .unwrap();
            h.send(
                Method::PUT,
                "/v1/config",
                Some(&token),
                Some("application/json"),
                b"{}".to_vec(),
                &[("if-match", v.to_string())],
            )
            .await
        }
    };

    // Operator: produce, work, read and operate...
    let r = post(
        "/v1/channels/ops/messages".into(),
        operator.clone(),
        json!({ "raw": "x" }),
    )
    .await;
    let ops_message = r.ok()["message_id"].as_u64().unwrap();
    h.get(&format!("/v1/messages/{adt}"), Some(&operator))
        .await
        .ok();
    let r = post(
        "/v1/claims".into(),
        operator.clone(),
        json!({ "stage": "ingress", "limit": 1, "owner": "op", "ttl_ms": 30_000, "channel": "ops" }),
    )
    .await;
    let (row, fence) = claimed(&r);
    post(
        format!("/v1/rows/{row}/done"),
        operator.clone(),
        json!({ "fence": fence }),
    )
    .await
    .ok();
    config_put(operator.clone()).await.ok();
    post(
        "/v1/audit".into(),
        operator.clone(),
        json!({ "action": "ops-check" }),
    )
    .await
    .ok();
    let r = post(
        format!("/v1/messages/{ops_message}/replay"),
        operator.clone(),
        json!({}),
    )
    .await;
    assert_eq!(r.ok()["requeued"], 1, "{r:?}");
    post(
        "/v1/lanes/outbound/nowhere/cancel".into(),
        operator.clone(),
        json!({}),
    )
    .await
    .ok();
    post(
        "/v1/dead-letters/replay".into(),
        operator.clone(),
        json!({}),
    )
    .await
    .ok();
    // ...but not administer principals, keys or membership.
    forbidden_post(
        &h,
        "/v1/tokens",
        &operator,
        json!({ "name": "x", "role": "admin" }),
    )
    .await;
    forbidden(h.get("/v1/tokens", Some(&operator)).await);
    forbidden(
        h.send(
            Method::DELETE,
            "/v1/tokens/w",
            Some(&operator),
            None,
            Vec::new(),
            &[],
        )
        .await,
    );
    forbidden(
        h.send(
            Method::POST,
            "/v1/keys/rotate",
            Some(&operator),
            None,
            Vec::new(),
            &[],
        )
        .await,
    );
    forbidden_post(
        &h,
        "/v1/cluster/membership",
        &operator,
        json!({ "voters": [1, 2, 3] }),
    )
    .await;
    forbidden_post(
        &h,
        "/v1/cluster/learners",
        &operator,
        json!({ "id": 9, "addr": "127.0.0.1:9" }),
    )
    .await;
    // The refused revocation revoked nothing.
    h.get("/v1/stats", Some(&worker)).await.ok();

    // Worker: produce, work and read, but not operate or administer.
    post(
        "/v1/channels/w/messages".into(),
        worker.clone(),
        json!({ "raw": "x" }),
    )
    .await
    .ok();
    forbidden(config_put(worker.clone()).await);
    forbidden_post(
        &h,
        &format!("/v1/messages/{adt}/replay"),
        &worker,
        json!({}),
    )
    .await;
    forbidden_post(&h, "/v1/audit", &worker, json!({ "action": "w" })).await;
    forbidden_post(&h, "/v1/lanes/outbound/nowhere/cancel", &worker, json!({})).await;
    forbidden_post(&h, "/v1/dead-letters/replay", &worker, json!({})).await;
    forbidden(h.get("/v1/tokens", Some(&worker)).await);

    // Viewer: read only.
    h.get("/v1/stats", Some(&viewer)).await.ok();
    h.get(&format!("/v1/messages/{adt}"), Some(&viewer))
        .await
        .ok();
    for (path, body) in [
        ("/v1/channels/adt/messages", json!({ "raw": "x" })),
        (
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": "v", "ttl_ms": 1000 }),
        ),
        (
            "/v1/lanes/ingress/adt/claim",
            json!({ "owner": "v", "ttl_ms": 1000 }),
        ),
        ("/v1/rows/1/done", json!({ "fence": 1 })),
    ] {
        forbidden_post(&h, path, &viewer, body).await;
    }
    forbidden(config_put(viewer.clone()).await);

    // Channel scope: the lab worker produces and reads in "lab" only.
    let r = post(
        "/v1/channels/lab/messages".into(),
        lab_worker.clone(),
        json!({ "raw": "yours" }),
    )
    .await;
    let lab = r.ok()["message_id"].as_u64().unwrap();
    forbidden_post(
        &h,
        "/v1/channels/adt/messages",
        &lab_worker,
        json!({ "raw": "no" }),
    )
    .await;
    // Lists are filtered to the scope; naming another channel is refused.
    let list = h.get("/v1/messages", Some(&lab_worker)).await;
    let seen: Vec<(u64, &str)> = list.ok()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_u64().unwrap(), m["channel_id"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [(lab, "lab")], "{list:?}");
    forbidden(h.get("/v1/messages?channel=adt", Some(&lab_worker)).await);
    forbidden(
        h.get("/v1/dead-letters?channel=adt", Some(&lab_worker))
            .await,
    );
    forbidden(h.get("/v1/lanes/ingress/adt", Some(&lab_worker)).await);
    // Another channel's message reads as missing (its existence is not disclosed).
    h.get(&format!("/v1/messages/{adt}"), Some(&lab_worker))
        .await
        .assert_error(404, "not_found", None);
    h.get(&format!("/v1/messages/{lab}"), Some(&lab_worker))
        .await
        .ok();
    // Claims: never another channel's lane, nor every channel at once, nor a whole outbound lane.
    forbidden_post(
        &h,
        "/v1/lanes/ingress/adt/claim",
        &lab_worker,
        json!({ "owner": "lw", "ttl_ms": 30_000 }),
    )
    .await;
    forbidden_post(&h, "/v1/claims", &lab_worker, json!({ "stage": "ingress", "limit": 10, "owner": "lw", "ttl_ms": 30_000, "channel": "adt" })).await;
    post(
        "/v1/claims".into(),
        lab_worker.clone(),
        json!({ "stage": "ingress", "limit": 10, "owner": "lw", "ttl_ms": 30_000 }),
    )
    .await
    .assert_error(400, "invalid", Some("channel"));
    forbidden_post(
        &h,
        "/v1/lanes/outbound/ehr/claim",
        &lab_worker,
        json!({ "owner": "lw", "ttl_ms": 30_000 }),
    )
    .await;
    let r = post(
        "/v1/claims".into(),
        lab_worker.clone(),
        json!({ "stage": "ingress", "limit": 10, "owner": "lw", "ttl_ms": 30_000, "channel": "lab" }),
    )
    .await;
    let items = r.ok()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1, "{r:?}");
    assert_eq!(items[0]["message_id"].as_u64(), Some(lab));
    // The other channel's claimed row cannot be acted on, even with its fence.
    let adt_rows = admin
        .claim_ready(Stage::Ingress, 10, "router", 30_000, Some("adt"))
        .await
        .unwrap();
    assert_eq!(adt_rows.len(), 1);
    let adt_row = &adt_rows[0];
    for (act, body) in [
        ("route", json!({ "fence": adt_row.fence.0, "handlers": [] })),
        ("done", json!({ "fence": adt_row.fence.0 })),
        ("dead", json!({ "fence": adt_row.fence.0, "error": "x" })),
    ] {
        // Out of scope reads as absent, as the row's read does: a 403 naming the channel
        // would tell a scoped caller which ids exist elsewhere (SPEC §9.9).
        h.json(
            Method::POST,
            &format!("/v1/rows/{}/{act}", adt_row.row_id.0),
            &lab_worker,
            &body,
        )
        .await
        .assert_error(404, "not_found", None);
    }
    let view = serde_json::to_value(admin.message(adt).await.unwrap()).unwrap();
    assert_eq!(view["rows"][0]["status"], "inflight", "{view}");
    assert_eq!(
        view["rows"][0]["claim"]["fence"].as_u64(),
        Some(adt_row.fence.0)
    );
    admin.done(adt_row).await.unwrap();
    // A channel-scoped operator may not operate on another channel either: a message of
    // another channel reads as absent by id, a named channel is refused.
    h.json(
        Method::POST,
        &format!("/v1/messages/{adt}/replay"),
        &lab_operator,
        &json!({}),
    )
    .await
    .assert_error(404, "not_found", None);
    forbidden_post(
        &h,
        "/v1/dead-letters/replay",
        &lab_operator,
        json!({ "channel": "adt" }),
    )
    .await;
    post(
        "/v1/dead-letters/replay".into(),
        lab_operator.clone(),
        json!({}),
    )
    .await
    .assert_error(400, "invalid", Some("channel"));
    forbidden_post(
        &h,
        "/v1/lanes/outbound/ehr/cancel",
        &lab_operator,
        json!({ "channel": "adt" }),
    )
    .await;
    forbidden_post(
        &h,
        "/v1/audit",
        &lab_operator,
        json!({ "action": "x", "channel": "adt" }),
    )
    .await;
    cluster.shutdown().await;
}

/// A concrete path for a documented one: placeholders replaced by plausible values.
fn fill(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{id}" | "{v}" => "999999",
            "{stage}" => "ingress",
            "{action}" => "done",
            s if s.starts_with('{') => "probe",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether `path` (possibly with placeholders) is an instance of the documented `template`.
fn matches_template(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| t == p || (t.starts_with('{') && t.ends_with('}')))
}

/// The OpenAPI document a cluster node serves lists every route of the contract, and every
/// operation it lists is mounted on the node (the router's fallback never answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn openapi_document_matches_the_routes_a_node_serves() {
    let cluster = NodeCluster::start().await.unwrap();
    let h = cluster.http(cluster.follower().await.unwrap());
    let r = h.get("/openapi.json", None).await;
    let doc = r.ok().clone();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
    let paths = doc["paths"].as_object().expect("paths");

    // The contract's routes are all documented.
    let mut contract: Vec<(&str, String)> = [
        ("post", "/v1/channels/{channel}/messages"),
        ("post", "/v1/lanes/{stage}/{name}/claim"),
        ("get", "/v1/lanes/{stage}/{name}"),
        ("post", "/v1/claims"),
        ("post", "/v1/leases/renew"),
        ("get", "/v1/messages"),
        ("get", "/v1/messages/{id}"),
        ("post", "/v1/messages/{id}/replay"),
        ("get", "/v1/dead-letters"),
        ("post", "/v1/dead-letters/replay"),
        ("post", "/v1/lanes/outbound/{dest}/cancel"),
        ("get", "/v1/stats"),
        ("get", "/v1/config"),
        ("get", "/v1/config/versions/{v}"),
        ("put", "/v1/config"),
        ("post", "/v1/audit"),
        ("get", "/v1/audit"),
        ("get", "/v1/audit/anchor"),
        ("get", "/v1/audit/verify"),
        ("get", "/v1/cluster"),
        ("get", "/v1/cluster/digest"),
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
    ]
    .into_iter()
    .map(|(m, p)| (m, p.to_string()))
    .collect();
    const ROW_ACTIONS: [&str; 7] = [
        "route",
        "handoff",
        "transform",
        "done",
        "response",
        "fail",
        "dead",
    ];
    for a in ROW_ACTIONS {
        contract.push(("post", format!("/v1/rows/{{id}}/{a}")));
    }
    for (method, path) in &contract {
        let documented = paths
            .iter()
            .filter(|(template, _)| matches_template(template, path))
            .find_map(|(template, item)| item.get(*method).map(|op| (template, op)));
        let (template, op) =
            documented.unwrap_or_else(|| panic!("{method} {path} is not in the document"));
        if template.contains("{action}") {
            let action = path.rsplit('/').next().unwrap();
            assert!(
                op["summary"].as_str().is_some_and(|s| s.contains(action)),
                "{template} does not document the action {action}: {op}"
            );
        }
    }

    // The probe below tells the router's fallback from a handler's answer.
    let r = h.get("/v1/not-a-route", Some(ADMIN)).await;
    r.assert_error(404, "not_found", None);
    assert_eq!(r.message(), "no such route");
    h.send(Method::POST, "/healthz", None, None, Vec::new(), &[])
        .await
        .assert_error(405, "method_not_allowed", None);

    // Every documented operation is mounted. Writes get a malformed JSON body, so the ones
    // that parse one refuse it with 400 and write nothing.
    let mut probed = 0;
    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let concrete = fill(path);
            let (ct, body) = if m == Method::GET || m == Method::DELETE {
                (None, Vec::new())
            } else {
                (Some("application/json"), b"{".to_vec())
            };
            let r = h
                .send(m.clone(), &concrete, Some(ADMIN), ct, body, &[])
                .await;
            let what = format!("{m} {concrete} (documented as {path})");
            assert!(
                !(r.status.as_u16() == 404 && r.message() == "no such route"),
                "{what} hit the router fallback: {r:?}"
            );
            assert_ne!(
                r.status.as_u16(),
                405,
                "{what} is not mounted for {m}: {r:?}"
            );
            assert!(
                ![401, 403, 503].contains(&r.status.as_u16()),
                "{what} refused the admin: {r:?}"
            );
            if r.status.as_u16() >= 400 {
                let code = r.json["error"]["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                r.assert_error_with(
                    r.status.as_u16(),
                    &code,
                    r.json["error"]["field"].as_str(),
                    &[],
                );
            }
            probed += 1;
        }
    }
    assert!(
        probed >= contract.len() - ROW_ACTIONS.len(),
        "{probed} operations"
    );
    // Each row action the contract names is a known action (an unknown one is a 404): the
    // malformed body is what gets refused.
    for a in ROW_ACTIONS {
        let r = h
            .send(
                Method::POST,
                &format!("/v1/rows/999999/{a}"),
                Some(ADMIN),
                Some("application/json"),
                b"{".to_vec(),
                &[],
            )
            .await;
        r.assert_error(400, "invalid", Some("body"));
    }
    let r = h
        .json(Method::POST, "/v1/rows/999999/bogus", ADMIN, &json!({}))
        .await;
    r.assert_error(404, "not_found", None);
    assert_ne!(r.message(), "no such route");
    // The probe's malformed writes wrote no message and no row.
    let after = counts(&h).await;
    assert_eq!(after["messages"], 0, "{after}");
    let rows: u64 = after["rows"]
        .as_object()
        .into_iter()
        .flat_map(|stages| stages.values())
        .filter_map(Value::as_object)
        .flat_map(|by_status| by_status.values())
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(rows, 0, "{after}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_leader_loses_no_acknowledged_write() {
    let mut cluster = NodeCluster::start().await.unwrap();
    let c = cluster.client();
    let mut acked = Vec::new();
    for n in 0..20 {
        acked.push(
            c.enqueue("adt", &format!("before-{n}"), Some(&format!("k{n}")))
                .await
                .unwrap()
                .message_id,
        );
    }
    let leader = cluster
        .wait_for_leader(Duration::from_secs(10))
        .await
        .unwrap();
    cluster.stop(leader).await;
    for n in 20..40 {
        acked.push(
            c.enqueue("adt", &format!("after-{n}"), Some(&format!("k{n}")))
                .await
                .unwrap()
                .message_id,
        );
    }
    let new_leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    assert_ne!(new_leader, leader);
    cluster.restart(leader).await.unwrap();
    cluster
        .wait_for_equal_digests(Duration::from_secs(60))
        .await
        .unwrap();
    for (i, _) in cluster.addrs.iter().enumerate() {
        let pinned = c.pinned(i);
        for id in &acked {
            let m: Value = pinned
                .request(
                    Method::GET,
                    &format!("/v1/messages/{id}?consistency=stale"),
                    None,
                )
                .await
                .unwrap();
            assert_eq!(m["message"]["id"].as_u64(), Some(id.0));
        }
    }
    cluster.shutdown().await;
}

/// Reads one counter from a node's `/metrics`.
async fn metric(client: &Client, name: &str) -> f64 {
    let text = client.request_text("/metrics").await.unwrap();
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.trim().parse().ok())
        })
        .unwrap_or(0.0)
}

/// A started cluster and a client pinned to its leader (so counters are read where writes land).
async fn cluster_and_leader_client() -> (NodeCluster, Client) {
    let cluster = NodeCluster::start().await.unwrap();
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let c = cluster.client().pinned(cluster.index_of(leader));
    (cluster, c)
}

/// `/metrics` breaks a node's memory down: the resident size, each database's memtables, and
/// the state's in-memory index keys, which follow the queue (two per pending row).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_show_where_memory_goes() {
    let (cluster, c) = cluster_and_leader_client().await;
    const STATE_MEMTABLES: &str = r#"raftlane_rocksdb_memory_bytes{db="state",part="memtables"}"#;
    const LOG_MEMTABLES: &str = r#"raftlane_rocksdb_memory_bytes{db="log",part="memtables"}"#;
    let before = metric(&c, STATE_MEMTABLES).await;
    let keys_before = metric(&c, "raftlane_state_index_keys").await;
    let body = "x".repeat(4096);
    for n in 0..50 {
        c.enqueue("adt", &format!("{n}{body}"), None).await.unwrap();
    }
    let after = metric(&c, STATE_MEMTABLES).await;
    assert!(
        after >= before + 50.0 * 4096.0,
        "50 messages of 4 KiB should grow the state's memtables: {before} -> {after}"
    );
    assert!(metric(&c, LOG_MEMTABLES).await >= 50.0 * 4096.0);
    assert!(metric(&c, "process_resident_memory_bytes").await > after);
    let keys = metric(&c, "raftlane_state_index_keys").await;
    assert!(
        keys >= keys_before + 100.0,
        "50 pending rows hold at least 100 index keys: {keys_before} -> {keys}"
    );
    cluster.shutdown().await;
}

/// Send `n` enqueues at once through `c`; each must be acknowledged with its own message id.
async fn enqueue_concurrently(c: &Client, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.enqueue("adt", &format!("m{i}"), None).await })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().message_id);
    }
    assert_eq!(
        ids.len(),
        n,
        "every write acknowledged with its own message id"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_log_entries() {
    let (cluster, c) = cluster_and_leader_client().await;
    let before = metric(&c, "raftlane_log_entries_appended_total").await;
    let synced_before = metric(&c, "raftlane_log_sync_seconds_total").await;
    let applying_before = metric(&c, "raftlane_sm_apply_seconds_total").await;
    enqueue_concurrently(&c, 300).await;
    let after = metric(&c, "raftlane_log_entries_appended_total").await;
    // The time the writes spent in fsync and in apply is counted, for the mean of each.
    assert!(metric(&c, "raftlane_log_sync_seconds_total").await > synced_before);
    assert!(metric(&c, "raftlane_sm_apply_seconds_total").await > applying_before);
    let entries = after - before;
    assert!(
        entries < 150.0,
        "300 concurrent writes took {entries} log entries: no group commit"
    );
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    cluster.shutdown().await;
}

/// Writes sent to a follower reach the leader in shared calls (api/src/write/relay.rs), and every
/// one is still acknowledged with its own answer and applied on every node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_through_a_follower_share_forwarding_calls() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();
    let calls_before = metric(&c, "raftlane_forward_calls_total").await;
    let writes_before = metric(&c, "raftlane_forwarded_writes_total").await;
    enqueue_concurrently(&c, 300).await;
    let calls = metric(&c, "raftlane_forward_calls_total").await - calls_before;
    let writes = metric(&c, "raftlane_forwarded_writes_total").await - writes_before;
    assert!(writes >= 300.0, "{writes} writes forwarded, 300 sent");
    assert!(
        calls < 150.0,
        "300 concurrent writes through a follower took {calls} calls to the leader"
    );
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    cluster.shutdown().await;
}

/// `POST /v1/cluster/snapshot`: the node builds a snapshot covering everything it had applied,
/// answers its index, and `/metrics` shows it; asked again with nothing new applied, it answers
/// the same snapshot without building another. A worker may not ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_is_built_on_demand() {
    let (cluster, c) = cluster_and_leader_client().await;
    for n in 0..20 {
        c.enqueue("adt", &format!("m{n}"), None).await.unwrap();
    }
    let applied = c.cluster().await.unwrap().last_applied;
    let built_before = metric(&c, "raftlane_snapshots_built_total").await;
    let taken = c
        .request(Method::POST, "/v1/cluster/snapshot", Some(json!({})))
        .await
        .unwrap();
    let index = taken["index"].as_u64().expect("index");
    assert!(index >= applied, "covers index {applied}: {taken}");
    assert_eq!(metric(&c, "raftlane_snapshot_index").await, index as f64);
    assert_eq!(
        metric(&c, "raftlane_snapshots_built_total").await,
        built_before + 1.0
    );
    let again = c
        .request(Method::POST, "/v1/cluster/snapshot", Some(json!({})))
        .await
        .unwrap();
    assert!(again["index"].as_u64().expect("index") >= index);

    let worker = c.with_token(cluster.token("snap-worker", "worker", None).await.unwrap());
    let refused = worker
        .request(Method::POST, "/v1/cluster/snapshot", Some(json!({})))
        .await
        .expect_err("a worker may not snapshot");
    assert_eq!(refused.status(), Some(403), "{refused}");
    cluster.shutdown().await;
}
