//! The API over a backend, without Raft: the real router (`raftlane_api::router`) served over
//! real loopback HTTP on a free port, over a [`LocalBackend`] (the state machine in memory, a
//! single replica that always leads) or any other [`Backend`] a test stands in (a lagging
//! replica, a leader that loses answers). What the API crate's black-box tests start: they
//! guard the HTTP contract, so they need HTTP but not elections or disks.
//!
//! ```no_run
//! # async fn demo() {
//! use raftlane_testkit::api::LocalApi;
//! let api = LocalApi::start("admin-token", "cluster-secret").await;
//! let (status, body) = api.admin_call(hyper::Method::GET, "/v1/stats", None).await;
//! assert_eq!(status, 200, "{body}");
//! # }
//! ```

use hyper::Method;
use raftlane_api::backend::Backend;
use raftlane_api::{ApiConfig, AppState, LocalBackend};
use raftlane_client::transport::PeerClient;
use raftlane_client::Client;
use serde_json::Value;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

/// Serve the API over `backend` with `config` on 127.0.0.1 (a free port); returns `host:port`.
/// The server runs until the test's runtime ends.
pub async fn serve(backend: Arc<dyn Backend>, config: &ApiConfig) -> String {
    let state = AppState::new(backend, config);
    let app = raftlane_api::router(state, axum::Router::new());
    let listener = crate::wait::free_listener().await;
    let addr = listener.local_addr().expect("local addr").to_string();
    tokio::spawn(axum::serve(listener, app).into_future());
    addr
}

/// The API over a fresh in-memory backend on loopback, with a raw HTTP client for it.
pub struct LocalApi {
    /// `host:port`.
    pub addr: String,
    /// `http://host:port`.
    pub base: String,
    pub http: PeerClient,
    /// The bootstrap admin token the API was started with.
    pub admin: String,
}

impl LocalApi {
    /// A fresh [`LocalBackend`] with this admin token and cluster secret, other settings default.
    pub async fn start(admin_token: &str, cluster_secret: &str) -> Self {
        Self::start_with(ApiConfig {
            admin_token: admin_token.into(),
            cluster_secret: cluster_secret.into(),
            ..Default::default()
        })
        .await
    }

    /// A fresh [`LocalBackend`] with `config` (body limits, keyring, ...).
    pub async fn start_with(config: ApiConfig) -> Self {
        let addr = serve(Arc::new(LocalBackend::new()), &config).await;
        Self {
            base: format!("http://{addr}"),
            addr,
            http: PeerClient::new(Duration::from_secs(10)),
            admin: config.admin_token,
        }
    }

    /// The typed client, as admin.
    pub fn client(&self) -> Client {
        Client::new(vec![self.addr.clone()], self.admin.clone())
    }

    /// A JSON call as admin: the status and the parsed body.
    pub async fn admin_call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        crate::http::call(&self.http, &self.base, &self.admin, method, path, body).await
    }

    /// `GET /v1/cluster/digest` as admin (asserted 200): `{last_applied, digest}`.
    pub async fn digest(&self) -> Value {
        let (status, body) = self
            .admin_call(Method::GET, "/v1/cluster/digest", None)
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}
