//! Black-box tests of membership changes and token creation against a real three-node cluster,
//! sent to a FOLLOWER: like writes, membership changes are forwarded to the leader (signed
//! node-to-node calls), refusals are 4xx JSON errors rather than 503, and a token creation
//! retried on another node returns the token that was stored.

use hyper::Method;
use raftlane_client::{Client, ClientError};
use raftlane_testkit::node::{NodeCluster, ADMIN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// `(id, voter)` of each member, as `c`'s node sees the configuration.
async fn members(c: &Client) -> Vec<(u64, bool)> {
    let v = c.cluster().await.expect("GET /v1/cluster");
    let mut out: Vec<(u64, bool)> = v.membership.iter().map(|m| (m.id, m.voter)).collect();
    out.sort_unstable();
    out
}

/// Wait until `c`'s node reports exactly `want`.
async fn wait_for_members(c: &Client, want: &[(u64, bool)]) {
    let started = Instant::now();
    loop {
        let seen = members(c).await;
        if seen == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "membership is {seen:?}, expected {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn api_error(e: &ClientError) -> (Option<u16>, Option<&str>, Option<&str>) {
    (e.status(), e.code(), e.field())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn membership_changes_sent_to_a_follower_reach_the_leader() {
    let cluster = NodeCluster::start().await.unwrap();
    let c = cluster.follower_client().await.unwrap();
    let three = [(1, true), (2, true), (3, true)];
    assert_eq!(members(&c).await, three);

    // A no-op change (the current voters) through the follower: accepted, nothing changes.
    let ok = c
        .request(
            Method::POST,
            "/v1/cluster/membership",
            Some(json!({ "voters": [1, 2, 3] })),
        )
        .await
        .expect("an idempotent change through a follower");
    assert_eq!(ok, json!({ "ok": true }));
    wait_for_members(&c, &three).await;

    // A voter that is not a member: refused, a 409 naming the field and why. (Sent right
    // after the change above: a change Raft has not committed yet makes it wait, not fail.)
    let e = c
        .request(
            Method::POST,
            "/v1/cluster/membership",
            Some(json!({ "voters": [1, 2, 3, 99] })),
        )
        .await
        .unwrap_err();
    assert_eq!(
        api_error(&e),
        (Some(409), Some("membership_refused"), Some("voters"))
    );
    assert!(e.to_string().contains("99"), "{e}");
    // Bad input is refused before anything is forwarded.
    let e = c
        .request(
            Method::POST,
            "/v1/cluster/membership",
            Some(json!({ "voters": [] })),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(&e), (Some(400), Some("invalid"), Some("voters")));
    let e = c
        .request(
            Method::POST,
            "/v1/cluster/learners",
            Some(json!({ "id": 4, "addr": "no-port" })),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(&e), (Some(400), Some("invalid"), Some("addr")));
    wait_for_members(&c, &three).await;

    // A real change: a fourth node joins as a learner, then becomes a voter, both through the
    // follower.
    // A fourth node in no configuration yet (it does not bootstrap): it waits to be added.
    let fourth = cluster.start_unconfigured(4).await.expect("node 4");
    let addr = fourth.addr.to_string();
    let ok = c
        .request(
            Method::POST,
            "/v1/cluster/learners",
            Some(json!({ "id": 4, "addr": addr })),
        )
        .await
        .expect("add a learner through a follower");
    assert_eq!(ok, json!({ "ok": true }));
    wait_for_members(&c, &[(1, true), (2, true), (3, true), (4, false)]).await;

    c.request(
        Method::POST,
        "/v1/cluster/membership",
        Some(json!({ "voters": [1, 2, 3, 4] })),
    )
    .await
    .expect("promote the learner through a follower");
    let four = [(1, true), (2, true), (3, true), (4, true)];
    wait_for_members(&c, &four).await;
    // Every node agrees, the new one included.
    let mut all = cluster.addrs.clone();
    all.push(addr.clone());
    let everyone = Client::new(all, ADMIN);
    for i in 0..4 {
        wait_for_members(&everyone.pinned(i), &four).await;
    }

    // Writes through the follower still work, and the new voter applies them too.
    let m = c.enqueue("lab", "MSH|after-join", None).await.unwrap();
    let newcomer = everyone.pinned(3);
    let view =
        serde_json::to_value(newcomer.message_with_bodies(m.message_id).await.unwrap()).unwrap();
    assert_eq!(view["message"]["channel_id"], "lab");
    assert_eq!(view["message"]["raw"], "MSH|after-join");
    let digest = cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    let started = Instant::now();
    while newcomer.digest().await.unwrap().1 != digest {
        assert!(started.elapsed() < Duration::from_secs(20), "node 4 lags");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    fourth.shutdown().await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_creation_retried_on_another_node_returns_the_stored_token() {
    let cluster = NodeCluster::start().await.unwrap();
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let follower = cluster.follower_client().await.unwrap();
    let other = cluster.client().pinned(cluster.index_of(leader));
    let body = json!({ "name": "svc", "role": "viewer" });

    let first = follower
        .for_request("mint-svc")
        .request(Method::POST, "/v1/tokens", Some(body.clone()))
        .await
        .expect("create through a follower");
    // The answer was "lost": the client retries the same request on another node.
    let retry = other
        .for_request("mint-svc")
        .request(Method::POST, "/v1/tokens", Some(body))
        .await
        .expect("retry on the leader");
    assert_eq!(retry["token"], first["token"]);
    assert_eq!(retry["index"], first["index"]);
    let token = first["token"].as_str().expect("token");
    for i in 0..3 {
        let as_svc = cluster.client().pinned(i).with_token(token);
        let stats: Result<Value, _> = as_svc.request(Method::GET, "/v1/stats", None).await;
        assert!(stats.is_ok(), "node {}: {stats:?}", i + 1);
    }

    // The same id for another principal is refused: it names another request (another body).
    let e = other
        .for_request("mint-svc")
        .request(
            Method::POST,
            "/v1/tokens",
            Some(json!({ "name": "svc2", "role": "viewer" })),
        )
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409), "{e}");
    assert_eq!(e.code(), Some("request_id_reused"));
    cluster.shutdown().await;
}

/// POST `body` to `path` through `c`; the refusal's `(status, code, field)` and message.
async fn refused(
    c: &Client,
    path: &str,
    body: Value,
) -> ((Option<u16>, Option<String>, Option<String>), String) {
    let e = c
        .request(Method::POST, path, Some(body.clone()))
        .await
        .expect_err(&format!("{path} {body} must be refused"));
    (
        (
            e.status(),
            e.code().map(str::to_string),
            e.field().map(str::to_string),
        ),
        e.to_string(),
    )
}

fn answer(status: u16, code: &str, field: &str) -> (Option<u16>, Option<String>, Option<String>) {
    (
        Some(status),
        Some(code.to_string()),
        Some(field.to_string()),
    )
}

/// docs/SPEC.md §9.10: changes that would break the cluster are refused, naming the field and
/// changing nothing, whether sent to the leader or (forwarded) to a follower; a learner where
/// nothing listens, or one that stops following, is removed again within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn membership_changes_that_would_break_the_cluster_are_refused() {
    let tuning = raftlane_raft::Tuning {
        learner_catchup_timeout_ms: 3_000,
        ..Default::default()
    };
    let mut cluster = NodeCluster::start_with(raftlane_testkit::node::ClusterOptions {
        tuning,
        ..Default::default()
    })
    .await
    .unwrap();
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let follower = cluster.follower().await.unwrap();
    let three = [(1, true), (2, true), (3, true)];
    let leader_addr = cluster.peers[&leader].clone();
    let follower_addr = cluster.peers[&follower].clone();
    let at_leader = cluster.client().pinned(cluster.index_of(leader));
    let at_follower = cluster.client().pinned(cluster.index_of(follower));

    for c in [&at_leader, &at_follower] {
        let voters = "/v1/cluster/membership";
        let learners = "/v1/cluster/learners";
        // Two voters out in one change.
        let (got, msg) = refused(c, voters, json!({ "voters": [leader] })).await;
        assert_eq!(got, answer(409, "membership_refused", "voters"), "{msg}");
        assert!(msg.contains("one voter per change"), "{msg}");
        // Ids start at 1; a voter named twice; a voter that is no member.
        for bad in [json!([0, 1, 2]), json!([1, 1, 2, 3])] {
            let (got, msg) = refused(c, voters, json!({ "voters": bad })).await;
            assert_eq!(got, answer(400, "invalid", "voters"), "{msg}");
        }
        let (got, msg) = refused(c, voters, json!({ "voters": [1, 2, 3, 9] })).await;
        assert_eq!(got, answer(409, "membership_refused", "voters"), "{msg}");
        let (got, msg) = refused(c, learners, json!({ "id": 0, "addr": "127.0.0.1:9" })).await;
        assert_eq!(got, answer(400, "invalid", "id"), "{msg}");
        // The leader's own address, another member's (with a scheme), an id at a new address.
        let (got, msg) = refused(c, learners, json!({ "id": 4, "addr": leader_addr })).await;
        assert_eq!(got, answer(409, "membership_refused", "addr"), "{msg}");
        assert!(msg.contains("leader"), "{msg}");
        let (got, msg) = refused(
            c,
            learners,
            json!({ "id": 4, "addr": format!("http://{follower_addr}/") }),
        )
        .await;
        assert_eq!(got, answer(409, "membership_refused", "addr"), "{msg}");
        let (got, msg) = refused(
            c,
            learners,
            json!({ "id": follower, "addr": "127.0.0.1:9" }),
        )
        .await;
        assert_eq!(got, answer(409, "membership_refused", "id"), "{msg}");
        assert_eq!(members(c).await, three);
    }

    // A learner where nothing listens: the add waits for the bound, removes it and says so.
    let nothing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let started = Instant::now();
    let (got, msg) = refused(
        &at_follower,
        "/v1/cluster/learners",
        json!({ "id": 5, "addr": nothing }),
    )
    .await;
    assert_eq!(got, answer(409, "membership_refused", "addr"), "{msg}");
    assert!(
        msg.contains("removed") && msg.contains("did not catch up"),
        "{msg}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "answered before the bound"
    );
    wait_for_members(&at_follower, &three).await;
    let status = at_leader.cluster().await.unwrap();
    assert!(
        status
            .removed_learners
            .iter()
            .any(|r| r.id == 5 && r.addr == nothing && r.reason.contains("not answering")),
        "{:?}",
        status.removed_learners
    );

    // A learner that caught up and then stopped following is removed by the leader's watch.
    let fourth = cluster.start_unconfigured(4).await.expect("node 4");
    at_follower
        .request(
            Method::POST,
            "/v1/cluster/learners",
            Some(json!({ "id": 4, "addr": fourth.addr.to_string() })),
        )
        .await
        .expect("a learner that listens is added");
    wait_for_members(&at_follower, &[(1, true), (2, true), (3, true), (4, false)]).await;
    fourth.shutdown().await;
    // Writes move the leader on; node 4 falls behind and stops answering.
    cluster
        .client()
        .enqueue("lab", "MSH|after-4-stopped", None)
        .await
        .unwrap();
    let waited = Instant::now();
    loop {
        let status = at_leader.cluster().await.unwrap();
        if status.removed_learners.iter().any(|r| r.id == 4) {
            assert!(!status.membership.iter().any(|m| m.id == 4), "{status:?}");
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "learner 4 was not removed: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for_members(&at_follower, &three).await;

    // With one voter down, removing a healthy one would leave no majority that answers.
    let down = cluster.follower().await.unwrap();
    let healthy = [1, 2, 3]
        .into_iter()
        .find(|id| *id != down && *id != leader)
        .unwrap();
    cluster.stop(down).await;
    tokio::time::sleep(Duration::from_secs(6)).await; // its last heartbeat answer goes stale
    let keep: Vec<u64> = [leader, down].to_vec();
    let (got, msg) = refused(
        &at_leader,
        "/v1/cluster/membership",
        json!({ "voters": keep }),
    )
    .await;
    assert_eq!(got, answer(409, "membership_refused", "voters"), "{msg}");
    assert!(msg.contains("not a majority"), "{msg}");
    // Removing the one that is down is fine.
    at_leader
        .request(
            Method::POST,
            "/v1/cluster/membership",
            Some(json!({ "voters": [leader, healthy] })),
        )
        .await
        .expect("removing the voter that is down");
    let mut two = vec![(leader, true), (healthy, true)];
    two.sort_unstable();
    wait_for_members(&at_leader, &two).await;
    cluster.shutdown().await;
}
