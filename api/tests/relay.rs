//! The follower's relay against a stand-in leader: concurrent forwarded writes share calls and
//! each caller gets its own answer; a leader without the batch route gets them one by one.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use raftlane_api::backend::ProposeError;
use raftlane_api::peer::PeerClient;
use raftlane_api::write::relay::Relay;
use raftlane_api::write::signing::{cluster_auth, PATH_PROPOSE, PATH_PROPOSE_BATCH};
use raftlane_statemachine::wire::command::EnqueueIngress;
use raftlane_statemachine::{codec, Command, Envelope, MessageId, Outcome, Response};
use std::future::IntoFuture;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Answer = Result<(u64, Response), ProposeError>;

/// Calls the stand-in leader received, per route.
#[derive(Default)]
struct Seen {
    batch_calls: AtomicU64,
    single_calls: AtomicU64,
}

/// The stand-in's answer to an envelope: "enqueued" as the message id the envelope's channel
/// names, so every caller can check it got the answer to its own write.
fn answer(envelope: &Envelope) -> Answer {
    match &envelope.command {
        Command::EnqueueIngress(EnqueueIngress { channel, .. }) => {
            let id: u64 = channel.trim_start_matches('c').parse().unwrap_or(u64::MAX);
            Ok((
                id + 1000,
                Ok(Outcome::Enqueued {
                    message_id: MessageId(id),
                    duplicate: false,
                }),
            ))
        }
        _ => Err(ProposeError::Refused("unexpected command".into())),
    }
}

async fn batch(State(seen): State<Arc<Seen>>, body: Bytes) -> (StatusCode, Vec<u8>) {
    seen.batch_calls.fetch_add(1, Ordering::Relaxed);
    // Answer slowly, so that writes arriving meanwhile gather into the next call.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let envelopes: Vec<Envelope> = codec::decode(&body).expect("a batch of envelopes");
    let answers: Vec<Answer> = envelopes.iter().map(answer).collect();
    let result: Result<Vec<Answer>, ProposeError> = Ok(answers);
    (StatusCode::OK, codec::encode(&result))
}

async fn single(State(seen): State<Arc<Seen>>, body: Bytes) -> (StatusCode, Vec<u8>) {
    seen.single_calls.fetch_add(1, Ordering::Relaxed);
    let envelope: Envelope = codec::decode(&body).expect("one envelope");
    (StatusCode::OK, codec::encode(&answer(&envelope)))
}

/// Serve a stand-in leader; `with_batch_route: false` plays a node from before the batch route.
async fn leader(with_batch_route: bool) -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let mut app = Router::new().route(PATH_PROPOSE, post(single));
    if with_batch_route {
        app = app.route(PATH_PROPOSE_BATCH, post(batch));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(axum::serve(listener, app.with_state(seen.clone())).into_future());
    (addr, seen)
}

fn enqueue(n: u64) -> Envelope {
    Envelope::new(
        1,
        "test",
        Command::EnqueueIngress(EnqueueIngress {
            channel: format!("c{n}"),
            raw: "x".into(),
            fields: Default::default(),
            idempotency_key: None,
        }),
    )
}

/// Forward `n` writes at once through a fresh relay; every caller must get its own answer.
async fn forward_concurrently(addr: &str, n: u64) -> Relay {
    let relay = Relay::start(
        PeerClient::new(Duration::from_secs(5)),
        cluster_auth("secret"),
    );
    let calls = (0..n).map(|i| {
        let relay = relay.clone();
        async move { (i, relay.propose(1, addr, enqueue(i)).await) }
    });
    for (i, got) in futures::future::join_all(calls).await {
        match got {
            Ok((index, Ok(Outcome::Enqueued { message_id, .. }))) => {
                assert_eq!(message_id, MessageId(i), "write {i} got another's answer");
                assert_eq!(index, i + 1000);
            }
            other => panic!("write {i}: {other:?}"),
        }
    }
    relay
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_forwards_share_calls_and_keep_their_own_answers() {
    let (addr, seen) = leader(true).await;
    let relay = forward_concurrently(&addr, 300).await;
    let calls = seen.batch_calls.load(Ordering::Relaxed);
    assert!(
        calls < 150,
        "300 concurrent forwards took {calls} calls: not batched"
    );
    assert_eq!(seen.single_calls.load(Ordering::Relaxed), 0);
    assert_eq!(relay.counts(), (calls, 300));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_without_the_batch_route_gets_the_writes_one_by_one() {
    let (addr, seen) = leader(false).await;
    forward_concurrently(&addr, 40).await;
    assert_eq!(seen.batch_calls.load(Ordering::Relaxed), 0);
    assert_eq!(seen.single_calls.load(Ordering::Relaxed), 40);
}

#[tokio::test]
async fn an_unreachable_leader_fails_every_write_as_retryable() {
    // Nothing listens on port 1 of the loopback.
    let relay = Relay::start(
        PeerClient::new(Duration::from_secs(2)),
        cluster_auth("secret"),
    );
    let got = relay.propose(1, "127.0.0.1:1", enqueue(1)).await;
    assert!(matches!(got, Err(ProposeError::Unavailable(_))), "{got:?}");
}

#[tokio::test]
async fn without_a_cluster_secret_nothing_is_forwarded() {
    let (addr, seen) = leader(true).await;
    let relay = Relay::start(PeerClient::new(Duration::from_secs(2)), None);
    let got = relay.propose(1, &addr, enqueue(1)).await;
    assert!(matches!(got, Err(ProposeError::Fatal(_))), "{got:?}");
    assert_eq!(seen.batch_calls.load(Ordering::Relaxed), 0);
}
