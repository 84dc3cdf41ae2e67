//! Idle polls answered without a Raft write: an empty FIFO claim and an empty `POST /v1/claims`
//! answer exactly what the proposed command would, and leave `(last_applied, digest)` untouched;
//! claims that could claim something, or that the state machine must arbitrate (a lane held by
//! another owner, a row inflight), are still proposed.

use axum::http::Method;
use raftlane_testkit::api::LocalApi;
use serde_json::{json, Value};

const ADMIN: &str = "admin-secret";
const TTL: u64 = 120_000;

/// The kit's API on a fresh local backend, with this file's helpers.
struct Api(LocalApi);

impl std::ops::Deref for Api {
    type Target = LocalApi;
    fn deref(&self) -> &LocalApi {
        &self.0
    }
}

async fn start() -> Api {
    Api(LocalApi::start(ADMIN, "cs").await)
}

impl Api {
    /// POST expecting 200 (201 for enqueues); returns the body.
    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, body) = self.admin_call(Method::POST, path, Some(body)).await;
        assert!(status == 200 || status == 201, "{path}: {status} {body}");
        body
    }

    /// `(last_applied, digest)`: changes with every applied command, even an empty claim.
    async fn applied_digest(&self) -> (u64, String) {
        let body = self.digest().await;
        (
            body["last_applied"].as_u64().expect("last_applied"),
            body["digest"].as_str().expect("digest").to_string(),
        )
    }

    async fn fifo_claim(&self, stage: &str, lane: &str, owner: &str) -> Value {
        self.post(
            &format!("/v1/lanes/{stage}/{lane}/claim"),
            json!({ "owner": owner, "ttl_ms": TTL }),
        )
        .await
    }

    async fn claim_ready(&self, stage: &str, channel: Option<&str>) -> Value {
        let mut body = json!({ "stage": stage, "limit": 10, "owner": "router", "ttl_ms": TTL });
        if let Some(c) = channel {
            body["channel"] = json!(c);
        }
        self.post("/v1/claims", body).await
    }

    async fn enqueue(&self, channel: &str) {
        self.post(
            &format!("/v1/channels/{channel}/messages"),
            json!({ "raw": "x" }),
        )
        .await;
    }
}

#[tokio::test]
async fn empty_claims_are_answered_without_a_write() {
    let api = start().await;
    api.enqueue("other").await; // something in the state, in another lane and channel
    let before = api.applied_digest().await;

    let fifo = api.fifo_claim("outbound", "printer", "w").await;
    assert_eq!(fifo, json!({ "item": null, "reason": "empty" }));
    let fifo = api.fifo_claim("ingress", "feed", "w").await;
    assert_eq!(fifo, json!({ "item": null, "reason": "empty" }));
    let ready = api.claim_ready("outbound", None).await;
    assert_eq!(ready, json!({ "items": [] }));
    // Due rows exist in the stage, but none of this channel.
    let ready = api.claim_ready("ingress", Some("feed")).await;
    assert_eq!(ready, json!({ "items": [] }));

    assert_eq!(
        api.applied_digest().await,
        before,
        "nothing may be proposed"
    );
}

#[tokio::test]
async fn claims_that_find_work_are_still_proposed() {
    let api = start().await;
    api.enqueue("feed").await;
    let before = api.applied_digest().await;
    let ready = api.claim_ready("ingress", Some("feed")).await;
    assert_eq!(ready["items"].as_array().map(Vec::len), Some(1));
    assert!(
        api.applied_digest().await.0 > before.0,
        "the claim was applied"
    );

    api.enqueue("orders").await;
    let before = api.applied_digest().await;
    let fifo = api.fifo_claim("ingress", "orders", "w").await;
    assert!(fifo["item"].is_object(), "the head is claimed: {fifo}");
    assert!(api.applied_digest().await.0 > before.0);
}

#[tokio::test]
async fn a_head_that_is_not_due_is_reported_without_a_write() {
    let api = start().await;
    api.enqueue("feed").await;
    let items = api.claim_ready("ingress", Some("feed")).await;
    let item = &items["items"][0];
    let failed = api
        .post(
            &format!("/v1/rows/{}/fail", item["row_id"]),
            json!({
                "fence": item["fence"],
                "error": "later",
                "retry": { "max_attempts": 5, "backoff_ms": 600_000, "multiplier": 1.0, "max_backoff_ms": 600_000 }
            }),
        )
        .await;
    assert_eq!(failed["dead"], false, "{failed}");
    let due_at = failed["next_attempt_at"].as_u64().expect("next_attempt_at");

    let before = api.applied_digest().await;
    let fifo = api.fifo_claim("ingress", "feed", "w").await;
    assert_eq!(
        fifo,
        json!({ "item": null, "reason": "not_due", "due_at": due_at })
    );
    let ready = api.claim_ready("ingress", None).await;
    assert_eq!(ready, json!({ "items": [] }));
    assert_eq!(
        api.applied_digest().await,
        before,
        "nothing may be proposed"
    );
}

#[tokio::test]
async fn a_lane_held_by_another_owner_or_with_a_row_out_is_arbitrated_by_a_write() {
    let api = start().await;
    api.enqueue("feed").await;
    let claimed = api.fifo_claim("ingress", "feed", "a").await;
    let item = claimed["item"].clone();
    assert!(item.is_object(), "{claimed}");

    // A row is inflight: the state machine decides (here: busy, held by `a`).
    let before = api.applied_digest().await;
    let busy = api.fifo_claim("ingress", "feed", "b").await;
    assert_eq!(busy["reason"], "lane_busy", "{busy}");
    assert_eq!(busy["holder"], "a");
    assert!(api.applied_digest().await.0 > before.0, "proposed");
    // Its own owner's poll is proposed too while the row is out (and hands the row back).
    let before = api.applied_digest().await;
    let own = api.fifo_claim("ingress", "feed", "a").await;
    assert_eq!(own["item"]["row_id"], item["row_id"], "{own}");
    assert_eq!(own["item"]["fence"], item["fence"], "{own}");
    assert!(api.applied_digest().await.0 > before.0, "proposed");

    // Done: the lane is empty but `a` still holds its lease.
    api.post(
        &format!("/v1/rows/{}/done", item["row_id"]),
        json!({ "fence": item["fence"] }),
    )
    .await;
    let before = api.applied_digest().await;
    let busy = api.fifo_claim("ingress", "feed", "b").await;
    assert_eq!(busy["reason"], "lane_busy", "{busy}");
    assert!(
        api.applied_digest().await.0 > before.0,
        "another owner's lease: proposed"
    );
    let before = api.applied_digest().await;
    let own = api.fifo_claim("ingress", "feed", "a").await;
    assert_eq!(own, json!({ "item": null, "reason": "empty" }));
    assert_eq!(
        api.applied_digest().await,
        before,
        "the holder's idle poll: no write"
    );
}
