//! Black-box tests of the HTTP API against a real three-node cluster: every request goes over
//! loopback HTTP, writes are committed by Raft, followers forward to the leader.

use hyper::Method;
use raftlane_api::client::{Client, ClientError};
use raftlane_tests::{TestCluster, ADMIN};
use serde_json::{json, Value};
use std::time::Duration;

/// A client pinned to a follower, so every write has to be forwarded.
fn follower_client(cluster: &TestCluster, leader: u64) -> Client {
    let follower = if leader == 1 { 2 } else { 1 };
    cluster.client().pinned(cluster.index_of(follower))
}

fn api_code(e: &ClientError) -> (Option<u16>, Option<&str>) {
    (e.status(), e.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_pipeline_through_a_follower_ends_processed() {
    let cluster = TestCluster::start().await.unwrap();
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let c = follower_client(&cluster, leader);

    let m = c.enqueue("lab", "MSH|^~\\&|LAB|1", None).await.unwrap();
    assert!(!m.duplicate);

    let ingress = c
        .claim_ready("ingress", 10, "router", 30_000, Some("lab"))
        .await
        .unwrap();
    assert_eq!(ingress.len(), 1);
    let row = &ingress[0];
    let r = c
        .row(row.row_id.0, "route", json!({ "fence": row.fence.0, "handlers": [{ "handler": "hl7-to-fhir", "payload": row.payload }] }))
        .await
        .unwrap();
    assert_eq!(r["applied"], true);

    let routed = c
        .claim_ready("routed", 10, "transformer", 30_000, None)
        .await
        .unwrap();
    assert_eq!(routed.len(), 1);
    let row = &routed[0];
    let r = c
        .row(
            row.row_id.0,
            "transform",
            json!({ "fence": row.fence.0, "deliveries": [{ "destination": "ehr", "payload": "fhir-bundle" }],
                     "state_ops": [{ "namespace": "lab", "key": "last", "value": 1 }] }),
        )
        .await
        .unwrap();
    assert_eq!(r["applied"], true);

    let claim = c
        .claim_fifo("outbound", "ehr", "sender", 30_000)
        .await
        .unwrap();
    let item = claim.item.expect("the outbound head");
    assert_eq!(item.payload, "fhir-bundle");
    c.done(&item).await.unwrap();

    let view = c.message(m.message_id).await.unwrap();
    assert_eq!(view["message"]["status"], "processed");
    let events: Vec<&str> = view["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["received", "routed", "transformed", "delivered"]);
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifo_order_with_two_competing_workers_and_a_stale_fence() {
    let cluster = TestCluster::start().await.unwrap();
    let c = cluster.client();
    // Ten messages, each handed straight to the outbound lane "billing" in enqueue order.
    for n in 0..10 {
        c.enqueue("orders", &format!("order-{n}"), None)
            .await
            .unwrap();
        let rows = c
            .claim_ready("ingress", 1, "router", 30_000, None)
            .await
            .unwrap();
        let row = &rows[0];
        c.row(row.row_id.0, "handoff", json!({ "fence": row.fence.0, "deliveries": [{ "destination": "billing", "payload": format!("{n}") }] }))
            .await
            .unwrap();
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
    assert_eq!(b.reason.as_deref(), Some("lane_busy"));
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
    let view = c.message(again.message_id.0).await.unwrap();
    let row = view["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"].as_u64() == Some(again.row_id.0))
        .unwrap()
        .clone();
    assert_eq!(row["status"], "inflight");
    assert_eq!(row["claim"]["fence"].as_u64(), Some(again.fence.0));

    // B drains the lane; completion order equals enqueue order.
    c.done(&again).await.unwrap();
    let mut order = vec![again.payload.clone()];
    loop {
        let claim = c
            .claim_fifo("outbound", "billing", "worker-b", 30_000)
            .await
            .unwrap();
        let Some(item) = claim.item else { break };
        c.done(&item).await.unwrap();
        order.push(item.payload);
    }
    let want: Vec<String> = (0..10).map(|n| n.to_string()).collect();
    assert_eq!(order, want);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_enqueue_and_error_statuses() {
    let cluster = TestCluster::start().await.unwrap();
    let c = cluster.client();
    let one = c.enqueue("adt", "A01", Some("key-1")).await.unwrap();
    let two = c.enqueue("adt", "A01 again", Some("key-1")).await.unwrap();
    assert!(!one.duplicate);
    assert!(two.duplicate);
    assert_eq!(one.message_id, two.message_id);

    // (That nothing is written by a refused request is checked on a single node in
    // api/tests/http.rs: here the leader's timers keep proposing in the background.)
    // 400: unknown stage, wrong type naming the field, empty/over-long names.
    let e = c.claim_fifo("nowhere", "x", "w", 1000).await.unwrap_err();
    assert_eq!(api_code(&e), (Some(400), Some("invalid")));
    let e = c
        .request(
            Method::POST,
            "/v1/claims",
            Some(json!({ "stage": "ingress", "limit": 1, "owner": "w", "ttl_ms": "soon" })),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Api { status: 400, field: Some(f), .. } if f == "ttl_ms"),
        "{e:?}"
    );
    let long = "x".repeat(300);
    let e = c.enqueue(&long, "raw", None).await.unwrap_err();
    assert_eq!(api_code(&e), (Some(400), Some("invalid")));
    // 401 and 403.
    let e = c
        .with_token("nope")
        .enqueue("adt", "raw", None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(401));
    let viewer = c
        .request(
            Method::POST,
            "/v1/tokens",
            Some(json!({ "name": "v", "role": "viewer" })),
        )
        .await
        .unwrap();
    let e = c
        .with_token(viewer["token"].as_str().unwrap())
        .enqueue("adt", "raw", None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(403));
    // 404 and 409.
    let e = c.message(999_999).await.unwrap_err();
    assert_eq!(e.status(), Some(404));
    // 412 with the current version.
    let e = c.put_config(7, json!({})).await.unwrap_err();
    assert_eq!(api_code(&e), (Some(412), Some("version_mismatch")));
    // 413 over the body limit.
    let e = c
        .enqueue("adt", &"x".repeat(100 * 1024), None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(413));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn channel_scoped_worker_sees_only_its_channel() {
    let cluster = TestCluster::start().await.unwrap();
    let admin = cluster.client();
    let t = admin
        .request(
            Method::POST,
            "/v1/tokens",
            Some(json!({ "name": "lab-worker", "role": "worker", "channels": ["lab"] })),
        )
        .await
        .unwrap();
    let worker = admin.with_token(t["token"].as_str().unwrap());
    admin.enqueue("adt", "not yours", None).await.unwrap();
    // The token reached the follower's state through Raft before it is used there.
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    worker.enqueue("lab", "yours", None).await.unwrap();
    let e = worker.enqueue("adt", "no", None).await.unwrap_err();
    assert_eq!(e.status(), Some(403));
    let list = worker
        .request(Method::GET, "/v1/messages", None)
        .await
        .unwrap();
    let channels: Vec<&str> = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["channel_id"].as_str().unwrap())
        .collect();
    assert_eq!(channels, ["lab"]);
    let _ = ADMIN;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_leader_loses_no_acknowledged_write() {
    let mut cluster = TestCluster::start().await.unwrap();
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
            assert_eq!(m["message"]["id"].as_u64(), Some(*id));
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
async fn cluster_and_leader_client() -> (TestCluster, Client) {
    let cluster = TestCluster::start().await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_log_entries() {
    let (cluster, c) = cluster_and_leader_client().await;
    let before = metric(&c, "raftlane_log_entries_appended_total").await;
    let mut tasks = Vec::new();
    for n in 0..300 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.enqueue("adt", &format!("m{n}"), None).await
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().message_id);
    }
    assert_eq!(
        ids.len(),
        300,
        "every write acknowledged with its own message id"
    );
    let after = metric(&c, "raftlane_log_entries_appended_total").await;
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
