//! A node whose local state lags behind the cluster must not refuse what only its lag hides:
//! a token created a moment ago, or a destination's retry policy changed a moment ago. Both are
//! looked up locally first (cheap) and confirmed with a linearizable read before the answer
//! depends on them.

use axum::http::Method;
use raftlane_api::backend::{BoxFuture, ClusterStatus};
use raftlane_api::peer::PeerClient;
use raftlane_api::{ApiConfig, Backend, LocalBackend, ProposeError};
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::{Envelope, Response, StoreError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const ADMIN: &str = "admin-secret";
const TTL: u64 = 120_000;

/// A node that falls behind: once [`Lagging::freeze`] is called its local reads stop seeing
/// new writes (they come from a replica that no longer receives them) until the node is asked
/// for a read index and waits for it, as a follower catches up for a linearizable read. Writes
/// always reach the up-to-date replica.
struct Lagging {
    live: LocalBackend,
    stale: LocalBackend,
    frozen: AtomicBool,
    asked: AtomicBool,
    caught_up: AtomicBool,
}

impl Lagging {
    fn new() -> Self {
        Self {
            live: LocalBackend::new(),
            stale: LocalBackend::new(),
            frozen: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            caught_up: AtomicBool::new(false),
        }
    }

    /// From now on local reads lag behind every write (until a linearizable read).
    fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
        self.lag_again();
    }

    /// Forget a catch-up: local reads come from the stale replica again.
    fn lag_again(&self) {
        self.asked.store(false, Ordering::SeqCst);
        self.caught_up.store(false, Ordering::SeqCst);
    }

    fn reads(&self) -> &LocalBackend {
        if self.caught_up.load(Ordering::SeqCst) {
            &self.live
        } else {
            &self.stale
        }
    }
}

impl Backend for Lagging {
    fn node_id(&self) -> u64 {
        1
    }

    fn propose(&self, envelope: Envelope) -> BoxFuture<'_, Result<(u64, Response), ProposeError>> {
        Box::pin(async move {
            if self.frozen.load(Ordering::SeqCst) {
                return self.live.propose(envelope).await;
            }
            let mirrored = self.stale.propose(envelope.clone()).await?;
            let answer = self.live.propose(envelope).await?;
            assert_eq!(mirrored, answer, "the two replicas diverged");
            Ok(answer)
        })
    }

    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>> {
        self.asked.store(true, Ordering::SeqCst);
        self.live.read_index()
    }

    fn wait_applied(
        &self,
        index: u64,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<(), ProposeError>> {
        if self.asked.load(Ordering::SeqCst) {
            self.caught_up.store(true, Ordering::SeqCst);
        }
        self.live.wait_applied(index, timeout)
    }

    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError> {
        self.reads().with_reader(f)
    }

    fn status(&self) -> ClusterStatus {
        self.live.status()
    }

    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>> {
        self.reads().digest()
    }

    fn add_learner(&self, id: u64, addr: String) -> BoxFuture<'_, Result<(), ProposeError>> {
        self.live.add_learner(id, addr)
    }

    fn change_membership(&self, voters: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        self.live.change_membership(voters)
    }

    fn ready(&self) -> Result<(), String> {
        Ok(())
    }
}

struct Node {
    base: String,
    http: PeerClient,
    backend: Arc<Lagging>,
}

async fn start() -> Node {
    let backend = Arc::new(Lagging::new());
    let config = ApiConfig {
        admin_token: ADMIN.into(),
        cluster_secret: "cs".into(),
        ..Default::default()
    };
    let addr = raftlane_testkit::api::serve(backend.clone(), &config).await;
    Node {
        base: format!("http://{addr}"),
        http: PeerClient::new(Duration::from_secs(10)),
        backend,
    }
}

impl Node {
    async fn call(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        raftlane_testkit::http::call(&self.http, &self.base, token, method, path, body).await
    }

    /// POST as admin expecting a 2xx; returns the body.
    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, body) = self.call(ADMIN, Method::POST, path, Some(body)).await;
        assert!((200..300).contains(&status), "{path}: {status} {body}");
        body
    }
}

#[tokio::test]
async fn a_token_created_past_a_lagging_node_is_accepted() {
    let node = start().await;
    node.backend.freeze();
    let created = node
        .post(
            "/v1/tokens",
            json!({ "name": "late-worker", "role": "worker" }),
        )
        .await;
    let token = created["token"].as_str().expect("token").to_string();
    node.backend.lag_again();

    let (status, body) = node.call(&token, Method::GET, "/v1/messages", None).await;
    assert_eq!(
        status, 200,
        "the new token is refused by a lagging node: {body}"
    );

    // A token nobody created is still refused, after the same confirmation.
    node.backend.lag_again();
    let (status, body) = node
        .call("no-such-token", Method::GET, "/v1/messages", None)
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized");
}

#[tokio::test]
async fn fail_uses_the_retry_policy_the_cluster_has_not_the_one_a_lagging_node_saw() {
    let node = start().await;
    // A claimed outbound row to "slow", known to the lagging replica too.
    node.post("/v1/channels/feed/messages", json!({ "raw": "m" }))
        .await;
    let claimed = node
        .post(
            "/v1/claims",
            json!({ "stage": "ingress", "limit": 1, "owner": "router", "ttl_ms": TTL }),
        )
        .await;
    let ingress = &claimed["items"][0];
    node.post(
        &format!("/v1/rows/{}/handoff", ingress["row_id"]),
        json!({ "fence": ingress["fence"], "deliveries": [{ "destination": "slow", "payload": "p" }] }),
    )
    .await;
    let head = node
        .post(
            "/v1/lanes/outbound/slow/claim",
            json!({ "owner": "w", "ttl_ms": TTL }),
        )
        .await;
    let row = &head["item"];
    assert!(row["row_id"].is_u64(), "a claimed row: {head}");

    // The cluster now gives up on "slow" after one attempt; this node has not seen it yet.
    node.backend.freeze();
    let doc = json!({
        "destinations": { "slow": { "retry": { "max_attempts": 1, "backoff_ms": 100, "multiplier_milli": 2000, "max_backoff_ms": 1000 } } }
    });
    let (mut headers, bytes) = raftlane_testkit::http::json_request(Some(ADMIN), Some(doc));
    headers.push(("if-match", "0".to_string()));
    let url = format!("{}/v1/config", node.base);
    let (status, _, raw) = node
        .http
        .call(Method::PUT, &url, &headers, bytes)
        .await
        .expect("PUT /v1/config");
    assert_eq!(status.as_u16(), 200, "{}", String::from_utf8_lossy(&raw));
    node.backend.lag_again();

    let failed = node
        .post(
            &format!("/v1/rows/{}/fail", row["row_id"]),
            json!({ "fence": row["fence"], "error": "connection refused" }),
        )
        .await;
    assert_eq!(
        failed["dead"], true,
        "the row must be dead-lettered under the current policy: {failed}"
    );
}
