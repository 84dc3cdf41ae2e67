//! The HTTP transport under the client and under node-to-node calls (forwarded writes, read
//! index, membership): connection reuse, a per-call timeout, and the one reading of a peer
//! address. One implementation, so a client and a forwarding node dial the same way.

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

/// Split a peer address into its scheme (`http://` unless it says `https://`) and its
/// `host:port`, without a trailing `/`. The one place that reads an address: dialing a peer
/// and checking a learner's address must agree on what the address means.
pub fn split_scheme(addr: &str) -> (&'static str, &str) {
    let (scheme, rest) = if let Some(rest) = addr.strip_prefix("https://") {
        ("https://", rest)
    } else if let Some(rest) = addr.strip_prefix("http://") {
        ("http://", rest)
    } else {
        ("http://", addr)
    };
    (scheme, rest.trim_end_matches('/'))
}

/// `http://addr` unless the address already carries a scheme.
pub fn base_url(addr: &str) -> String {
    let (scheme, hostport) = split_scheme(addr);
    format!("{scheme}{hostport}")
}

#[cfg(test)]
mod addresses_become_base_urls {
    use super::*;

    #[test]
    fn a_bare_address_is_dialed_over_http() {
        assert_eq!(split_scheme("n1:7001"), ("http://", "n1:7001"));
        assert_eq!(base_url("n1:7001"), "http://n1:7001");
    }

    #[test]
    fn a_given_scheme_is_kept_and_a_trailing_slash_dropped() {
        assert_eq!(split_scheme("https://n2:7001/"), ("https://", "n2:7001"));
        assert_eq!(base_url("http://n3:7001//"), "http://n3:7001");
        assert_eq!(base_url("https://n2:7001"), "https://n2:7001");
    }
}
