//! Claims that wait for work (`wait_ms`, docs/SPEC.md §4.7a): answered as soon as a row can be
//! claimed, empty once the wait is over, bounded, and dropped with their connection.

use crate::harness::*;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

/// How late a waiting claim may answer after the write that gave it work, on a busy machine.
const PROMPT: Duration = Duration::from_millis(1_500);

fn ready_claim(wait_ms: u64) -> Value {
    json!({ "stage": "ingress", "limit": 10, "owner": "router", "ttl_ms": LONG_TTL,
            "channel": "lab", "wait_ms": wait_ms })
}

fn fifo_claim(wait_ms: u64) -> Value {
    json!({ "owner": "router", "ttl_ms": LONG_TTL, "wait_ms": wait_ms })
}

/// `raftlane_claim_waiters` as `/metrics` shows it.
async fn waiters(api: &Api) -> u64 {
    let text = api.call(Method::GET, "/metrics", None, None).await.text();
    text.lines()
        .find_map(|l| l.strip_prefix("raftlane_claim_waiters "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
        .unwrap_or_else(|| panic!("no raftlane_claim_waiters in /metrics:\n{text}"))
}

/// Run `claim` while, `after` it started, `write` gives it work; answers the claim's response,
/// how long it waited in all, and how long after the write's answer it was answered.
async fn claim_while<C, W>(claim: C, after: Duration, write: W) -> (Resp, Duration, Duration)
where
    C: std::future::Future<Output = Resp>,
    W: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let claim = async {
        let r = claim.await;
        (r, Instant::now())
    };
    let write = async {
        tokio::time::sleep(after).await;
        write.await;
        Instant::now()
    };
    let ((r, answered), written) = tokio::join!(claim, write);
    (
        r,
        answered - started,
        answered.saturating_duration_since(written),
    )
}

#[tokio::test]
async fn a_waiting_claim_is_answered_when_a_row_arrives() {
    let api = start().await;
    let (r, waited, late) = claim_while(
        api.post("/v1/claims", ready_claim(10_000)),
        Duration::from_millis(300),
        async {
            api.enqueue("lab", "MSH|1").await;
        },
    )
    .await;
    ok(&r, 200);
    let items = r.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{}", r.body);
    assert!(
        waited >= Duration::from_millis(300),
        "answered before the row: {waited:?}"
    );
    assert!(late < PROMPT, "answered {late:?} after the enqueue");
    // The same claim as an immediate one: leased to its owner, first attempt.
    assert_eq!(items[0]["attempts"], 1);
    let row = api.get(&format!("/v1/rows/{}", items[0]["row_id"])).await;
    ok(&row, 200);
    assert_eq!(row.body["row"]["claim"]["owner"], "router");
}

#[tokio::test]
async fn a_waiting_lane_claim_is_answered_when_its_head_arrives() {
    let api = start().await;
    // Work on another lane does not answer it.
    let (r, waited, late) = claim_while(
        api.post("/v1/lanes/ingress/lab/claim", fifo_claim(10_000)),
        Duration::from_millis(300),
        async {
            api.enqueue("other", "MSH|0").await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            api.enqueue("lab", "MSH|1").await;
        },
    )
    .await;
    ok(&r, 200);
    assert!(r.body["item"].is_object(), "{}", r.body);
    assert_eq!(r.body["item"]["channel_id"], "lab");
    assert!(waited >= Duration::from_millis(600), "{waited:?}");
    assert!(late < PROMPT, "answered {late:?} after the enqueue");
}

#[tokio::test]
async fn a_waiting_claim_answers_empty_when_its_wait_is_over() {
    let api = start().await;
    let before = api.digest().await;
    let started = Instant::now();
    let r = api.post("/v1/claims", ready_claim(400)).await;
    let waited = started.elapsed();
    ok(&r, 200);
    assert_eq!(r.body["items"], json!([]));
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    assert!(waited < Duration::from_millis(400) + PROMPT, "{waited:?}");

    let started = Instant::now();
    let r = api
        .post("/v1/lanes/ingress/lab/claim", fifo_claim(400))
        .await;
    let waited = started.elapsed();
    ok(&r, 200);
    assert!(r.body["item"].is_null(), "{}", r.body);
    assert_eq!(r.body["reason"], "empty");
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    // An idle wait proposes nothing (its attempts were answered by reads).
    assert_eq!(api.digest().await, before);
    assert_eq!(waiters(&api).await, 0);
}

/// A head backing off is claimed as soon as its backoff ends, with no write to wake the claim.
#[tokio::test]
async fn a_waiting_claim_wakes_when_a_backoff_ends() {
    let api = start().await;
    api.enqueue("lab", "MSH|1").await;
    let claimed = api.claim_ingress("lab", 1).await;
    let (row, fence) = (&claimed[0]["row_id"], &claimed[0]["fence"]);
    let r = api
        .post(
            &format!("/v1/rows/{row}/fail"),
            json!({ "fence": fence, "error": "later",
                    "retry": { "backoff_ms": 700, "multiplier": 1.0, "max_backoff_ms": 700 } }),
        )
        .await;
    ok(&r, 200);
    let due_at = r.body["next_attempt_at"].as_u64().expect("next_attempt_at");
    let before = api.digest().await;

    for (path, body) in [
        ("/v1/claims", ready_claim(10_000)),
        ("/v1/lanes/ingress/lab/claim", fifo_claim(10_000)),
    ] {
        let started = Instant::now();
        let r = api.post(path, body).await;
        let waited = started.elapsed();
        ok(&r, 200);
        if path == "/v1/claims" {
            let items = r.body["items"].as_array().expect("items");
            assert_eq!(items.len(), 1, "{}", r.body);
            assert_eq!(&items[0]["row_id"], row);
            // Give it back for the lane claim, due at once.
            let back = api
                .post(
                    &format!("/v1/rows/{row}/fail"),
                    json!({ "fence": items[0]["fence"], "error": "again",
                            "retry": { "backoff_ms": 700, "multiplier": 1.0, "max_backoff_ms": 700 } }),
                )
                .await;
            ok(&back, 200);
        } else {
            assert_eq!(&r.body["item"]["row_id"], row, "{}", r.body);
        }
        assert!(now_ms() + 50 >= due_at, "claimed before the backoff ended");
        assert!(waited < Duration::from_millis(700) + PROMPT, "{waited:?}");
    }
    assert_ne!(api.digest().await, before);
}

#[tokio::test]
async fn wait_ms_out_of_range_is_refused_naming_it() {
    let api = start().await;
    let before = api.digest().await;
    let r = api.post("/v1/claims", ready_claim(30_001)).await;
    api_error(&r, 400, "invalid", Some("wait_ms"));
    let r = api
        .post("/v1/lanes/ingress/lab/claim", fifo_claim(30_001))
        .await;
    api_error(&r, 400, "invalid", Some("wait_ms"));
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": "w", "ttl_ms": 10, "wait_ms": -1 }),
        )
        .await;
    api_error(&r, 400, "invalid", Some("wait_ms"));
    assert_eq!(api.digest().await, before);
    // 0 is "answer at once", as without it.
    let started = Instant::now();
    let r = api.post("/v1/claims", ready_claim(0)).await;
    ok(&r, 200);
    assert!(started.elapsed() < Duration::from_millis(300));
}

/// A client that goes away while its claim waits takes the waiter with it.
#[tokio::test]
async fn a_disconnect_drops_the_waiter() {
    let api = start().await;
    let addr = api.base.trim_start_matches("http://").to_string();
    let body = ready_claim(20_000).to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/claims HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ADMIN}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.expect("head");
    tcp.write_all(body.as_bytes()).await.expect("body");
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(&api).await != 1 {
        assert!(Instant::now() < deadline, "the claim never waited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(tcp);
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters(&api).await != 0 {
        assert!(Instant::now() < deadline, "the waiter outlived its client");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The row that arrives next is not claimed by the claim that went away.
    api.enqueue("lab", "MSH|1").await;
    let r = api.post("/v1/claims", ready_claim(0)).await;
    ok(&r, 200);
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(1));
}
