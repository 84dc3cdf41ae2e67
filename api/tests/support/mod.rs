//! What the API's black-box tests share: serving a router on a loopback port and encoding a
//! JSON request with a bearer token.

use raftlane_api::backend::Backend;
use raftlane_api::{ApiConfig, AppState};
use serde_json::Value;
use std::future::IntoFuture;
use std::sync::Arc;

/// Serve the API over `backend` with `config` on 127.0.0.1 (a free port); returns `host:port`.
pub async fn serve(backend: Arc<dyn Backend>, config: &ApiConfig) -> String {
    let state = AppState::new(backend, config);
    let app = raftlane_api::router(state, axum::Router::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local addr").to_string();
    tokio::spawn(axum::serve(listener, app).into_future());
    addr
}

/// Headers and bytes of a JSON call, with `Authorization: Bearer <token>` when given.
pub fn json_request(
    token: Option<&str>,
    body: Option<Value>,
) -> (Vec<(&'static str, String)>, Vec<u8>) {
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("authorization", format!("Bearer {t}")));
    }
    let bytes = match body {
        Some(b) => {
            headers.push(("content-type", "application/json".to_string()));
            b.to_string().into_bytes()
        }
        None => Vec::new(),
    };
    (headers, bytes)
}

/// One JSON call to `base` (`http://host:port`) with `token`: the status and the body parsed as
/// JSON (`Null` when empty or not JSON).
#[allow(dead_code)] // `http.rs` keeps the headers, so it has its own
pub async fn call(
    http: &raftlane_api::peer::PeerClient,
    base: &str,
    token: &str,
    method: axum::http::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (headers, bytes) = json_request(Some(token), body);
    let url = format!("{base}{path}");
    let (status, _, raw) = http
        .call(method, &url, &headers, bytes)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    (
        status.as_u16(),
        serde_json::from_slice(&raw).unwrap_or(Value::Null),
    )
}

/// The API over a fresh in-memory backend on loopback, with a raw HTTP client for it: what the
/// smaller black-box files start from (`http.rs` keeps its own, richer one).
#[allow(dead_code)] // each test file uses its own subset
pub struct LocalApi {
    /// `http://host:port`.
    pub base: String,
    pub http: raftlane_api::peer::PeerClient,
    /// The bootstrap admin token the API was started with.
    pub admin: String,
}

#[allow(dead_code)]
impl LocalApi {
    pub async fn start(admin_token: &str, cluster_secret: &str) -> Self {
        let config = ApiConfig {
            admin_token: admin_token.into(),
            cluster_secret: cluster_secret.into(),
            ..Default::default()
        };
        let addr = serve(Arc::new(raftlane_api::LocalBackend::new()), &config).await;
        Self {
            base: format!("http://{addr}"),
            http: raftlane_api::peer::PeerClient::new(std::time::Duration::from_secs(10)),
            admin: admin_token.into(),
        }
    }

    /// A JSON call as admin: the status and the parsed body.
    pub async fn admin_call(
        &self,
        method: axum::http::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        call(&self.http, &self.base, &self.admin, method, path, body).await
    }

    /// `GET /v1/cluster/digest` as admin (asserted 200): `{last_applied, digest}`.
    pub async fn digest(&self) -> Value {
        let (status, body) = self
            .admin_call(axum::http::Method::GET, "/v1/cluster/digest", None)
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}
