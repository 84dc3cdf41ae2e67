//! Claims that wait for work across a three-node cluster (docs/SPEC.md §4.7a): a claim waiting
//! on one node is answered as soon as a row enqueued through another node is applied there,
//! whether it waits on a follower or on the leader.

use hyper::Method;
use raftlane_testkit::http::Http;
use raftlane_testkit::node::{NodeCluster, ADMIN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How late a waiting claim may answer after the enqueue that gave it work, on a busy machine.
const PROMPT: Duration = Duration::from_millis(1_500);

/// Claim on `waiter` with `wait_ms` while, 300 ms in, `writer` enqueues on `channel`; answers
/// the claim's body and how long after the enqueue's answer it came.
async fn claim_while_enqueued(
    waiter: &Http,
    path: &str,
    claim: Value,
    writer: &Http,
    channel: &str,
) -> (Value, Duration) {
    let claim = async {
        let r = waiter.json(Method::POST, path, ADMIN, &claim).await;
        (r, Instant::now())
    };
    let enqueue = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let r = writer
            .json(
                Method::POST,
                &format!("/v1/channels/{channel}/messages"),
                ADMIN,
                &json!({ "raw": "MSH|1" }),
            )
            .await;
        r.ok();
        Instant::now()
    };
    let ((r, answered), enqueued) = tokio::join!(claim, enqueue);
    (r.ok().clone(), answered.saturating_duration_since(enqueued))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiting_claim_on_any_node_is_answered_by_an_enqueue_on_another() {
    let cluster = NodeCluster::start().await.unwrap();
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let follower = cluster.follower().await.unwrap();
    let other = [1, 2, 3]
        .into_iter()
        .find(|id| *id != leader && *id != follower)
        .unwrap();
    // Waiting on a follower, enqueued through the other follower; then waiting on the leader,
    // enqueued through a follower.
    for (i, (waiter, writer)) in [(follower, other), (leader, follower)]
        .into_iter()
        .enumerate()
    {
        let (waiter, writer) = (cluster.http(waiter), cluster.http(writer));
        let channel = format!("lab{i}");
        let claim = json!({ "stage": "ingress", "limit": 5, "owner": "router", "ttl_ms": 30_000,
                            "channel": channel, "wait_ms": 15_000 });
        let (body, late) =
            claim_while_enqueued(&waiter, "/v1/claims", claim, &writer, &channel).await;
        assert_eq!(body["items"].as_array().map(Vec::len), Some(1), "{body}");
        assert!(late < PROMPT, "answered {late:?} after the enqueue");

        let lane = format!("fifo{i}");
        let claim = json!({ "owner": "router", "ttl_ms": 30_000, "wait_ms": 15_000 });
        let path = format!("/v1/lanes/ingress/{lane}/claim");
        let (body, late) = claim_while_enqueued(&waiter, &path, claim, &writer, &lane).await;
        assert!(body["item"].is_object(), "{body}");
        assert_eq!(body["item"]["channel_id"], lane.as_str());
        assert!(late < PROMPT, "answered {late:?} after the enqueue");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiting_claim_on_a_follower_answers_empty_after_its_wait() {
    let cluster = NodeCluster::start().await.unwrap();
    let h = cluster.http(cluster.follower().await.unwrap());
    let started = Instant::now();
    let r = h
        .json(
            Method::POST,
            "/v1/lanes/ingress/quiet/claim",
            ADMIN,
            &json!({ "owner": "w", "ttl_ms": 30_000, "wait_ms": 600 }),
        )
        .await;
    let waited = started.elapsed();
    let body = r.ok();
    assert!(body["item"].is_null(), "{body}");
    assert!(waited >= Duration::from_millis(600), "{waited:?}");
    assert!(waited < Duration::from_millis(600) + PROMPT, "{waited:?}");
    cluster.shutdown().await;
}
