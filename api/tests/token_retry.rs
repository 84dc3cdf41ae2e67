//! `POST /v1/tokens` is retry-safe: a retry with the same `Request-Id` whose first attempt
//! committed gets the very token that was stored (it works), and a `Request-Id` reused for
//! another request is refused with 409 (`request_id_reused`, docs/SPEC.md §10.5) instead of
//! showing a token that would never work.

use axum::http::Method;
use raftlane_testkit::api::LocalApi;
use serde_json::{json, Value};

const ADMIN: &str = "admin-secret";

/// The kit's API on a fresh local backend, with this file's helpers.
struct Api(LocalApi);

impl std::ops::Deref for Api {
    type Target = LocalApi;
    fn deref(&self) -> &LocalApi {
        &self.0
    }
}

async fn start(cluster_secret: &str) -> Api {
    Api(LocalApi::start(ADMIN, cluster_secret).await)
}

impl Api {
    /// `POST /v1/tokens` with `Request-Id: request_id`.
    async fn create(&self, request_id: &str, body: Value) -> (u16, Value) {
        let headers = [
            ("authorization", format!("Bearer {ADMIN}")),
            ("content-type", "application/json".to_string()),
            ("request-id", request_id.to_string()),
        ];
        let url = format!("{}/v1/tokens", self.base);
        let (status, _, raw) = self
            .http
            .call(Method::POST, &url, &headers, body.to_string().into_bytes())
            .await
            .expect("POST /v1/tokens");
        (
            status.as_u16(),
            serde_json::from_slice(&raw).unwrap_or(Value::Null),
        )
    }

    /// The status of a read made with `token`.
    async fn works(&self, token: &str) -> u16 {
        raftlane_testkit::http::call(
            &self.http,
            &self.base,
            token,
            Method::GET,
            "/v1/stats",
            None,
        )
        .await
        .0
    }
}

#[tokio::test]
async fn a_retried_token_creation_returns_the_stored_token() {
    let api = start("cluster-secret").await;
    let body = json!({ "name": "alice", "role": "viewer" });
    let (status, first) = api.create("mint-1", body.clone()).await;
    assert_eq!(status, 201, "{first}");
    let token = first["token"].as_str().expect("a token").to_string();
    assert_eq!(api.works(&token).await, 200);
    let after_first = api.digest().await["digest"].clone();

    // The client did not see the answer and retries: same token, same index, nothing applied.
    let (status, retry) = api.create("mint-1", body).await;
    assert_eq!(status, 201, "{retry}");
    assert_eq!(retry["token"], first["token"]);
    assert_eq!(retry["index"], first["index"]);
    assert_eq!(api.works(&token).await, 200);
    assert_eq!(api.digest().await["digest"].clone(), after_first);

    // The same Request-Id for another principal: another request, refused; no token shown.
    let (status, reused) = api
        .create("mint-1", json!({ "name": "bob", "role": "viewer" }))
        .await;
    assert_eq!(status, 409, "{reused}");
    assert_eq!(reused["error"]["code"], "request_id_reused");
    assert!(reused["error"].get("token").is_none());
    assert_eq!(api.digest().await["digest"].clone(), after_first);
    // ...nor for the same principal with another role.
    let (status, reused) = api
        .create("mint-1", json!({ "name": "alice", "role": "admin" }))
        .await;
    assert_eq!(status, 409, "{reused}");
    assert_eq!(api.works(&token).await, 200);

    // A new Request-Id rotates: a new token works, the old one no longer does.
    let (status, rotated) = api
        .create("mint-2", json!({ "name": "alice", "role": "viewer" }))
        .await;
    assert_eq!(status, 201, "{rotated}");
    assert_ne!(rotated["token"], first["token"]);
    assert_eq!(
        api.works(rotated["token"].as_str().expect("token")).await,
        200
    );
    assert_eq!(api.works(&token).await, 401);
}

#[tokio::test]
async fn without_a_cluster_secret_a_replay_is_refused_rather_than_shown_a_dead_token() {
    let api = start("").await;
    let body = json!({ "name": "carol", "role": "viewer" });
    let (status, first) = api.create("mint-1", body.clone()).await;
    assert_eq!(status, 201, "{first}");
    let token = first["token"].as_str().expect("a token").to_string();
    assert_eq!(api.works(&token).await, 200);
    // Random tokens cannot be derived again: the retry is told to mint anew.
    let (status, retry) = api.create("mint-1", body).await;
    assert_eq!(status, 409, "{retry}");
    assert_eq!(retry["error"]["code"], "token_not_issued");
    assert_eq!(api.works(&token).await, 200);
}
