//! A small HTTP client for node-to-node API calls (forwarded writes, read index), with
//! connection reuse and per-call timeouts.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

#[derive(Clone)]
pub struct PeerClient {
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("peer unreachable: {0}")]
    Unreachable(String),
    #[error("peer timed out")]
    Timeout,
    #[error("bad request: {0}")]
    Request(String),
}

impl PeerClient {
    pub fn new(timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Self { client, timeout }
    }

    /// Send a request and collect the response body.
    pub async fn call(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<(StatusCode, hyper::HeaderMap, Bytes), PeerError> {
        let mut builder = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            builder = builder.header(*k, v);
        }
        let req = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| PeerError::Request(e.to_string()))?;
        let fut = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| PeerError::Unreachable(e.to_string()))?;
            let (parts, body) = resp.into_parts();
            let bytes = body
                .collect()
                .await
                .map_err(|e| PeerError::Unreachable(e.to_string()))?
                .to_bytes();
            Ok((parts.status, parts.headers, bytes))
        };
        tokio::time::timeout(self.timeout, fut)
            .await
            .map_err(|_| PeerError::Timeout)?
    }
}

/// `http://addr` unless the address already carries a scheme.
pub fn base_url(addr: &str) -> String {
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.trim_end_matches('/').to_string()
    } else {
        format!("http://{}", addr.trim_end_matches('/'))
    }
}
