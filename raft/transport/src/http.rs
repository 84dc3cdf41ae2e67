//! The HTTP transport under the client and under node-to-node calls (forwarded writes, read
//! index, membership): connection reuse, a per-call timeout, and the one reading of a peer
//! address. One implementation, so a client and a forwarding node dial the same way.
//!
//! TLS: a transport made [`PeerClient::with_tls`] dials every node over TLS (an `http://` URL
//! is upgraded to `https://`: with a CA configured, nothing goes out in plain text); one made
//! with [`PeerClient::new`] dials `http://` in plain TCP and cannot verify an `https://` node.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// How long an idle pooled connection is kept (see the node's `--http-header-timeout`).
const POOL_IDLE: Duration = Duration::from_secs(5);

use crate::tls::ClientTls;

#[derive(Clone)]
pub struct PeerClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    /// Upgrade `http://` URLs to `https://` (set when a CA is configured).
    always_tls: bool,
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
    /// Plain HTTP (an `https://` URL is refused: no CA to verify it against).
    pub fn new(timeout: Duration) -> Self {
        Self::with_tls(timeout, None)
    }

    /// Over TLS with `tls` when given (every URL, see the module doc), else as [`Self::new`].
    pub fn with_tls(timeout: Duration, tls: Option<&ClientTls>) -> Self {
        let connector = crate::tls::connector(tls, Duration::from_secs(2));
        let client = Client::builder(TokioExecutor::new())
            // Below a node's header timeout (10 s by default), which also closes kept-alive
            // connections that wait that long for a request: the pool lets go first.
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        Self {
            client,
            timeout,
            always_tls: tls.is_some(),
        }
    }

    /// The same transport (and connection pool) with another per-call timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether every call goes over TLS.
    pub fn is_tls(&self) -> bool {
        self.always_tls
    }

    /// `GET url` and write a 2xx answer's body to `sink` as it arrives, without holding it
    /// (a backup can be larger than memory). The timeout bounds the wait for the answer and
    /// then each wait for more of the body, not the whole transfer. Any other status: its body
    /// is collected and returned, and `sink` is not written. Answers the status, the headers,
    /// that body (empty on success) and the bytes written.
    pub async fn download(
        &self,
        url: &str,
        headers: &[(&str, String)],
        sink: &mut (dyn std::io::Write + Send),
    ) -> Result<(StatusCode, hyper::HeaderMap, Bytes, u64), PeerError> {
        let url = self.upgrade(url);
        let mut builder = Request::builder().method(Method::GET).uri(url.as_str());
        for (k, v) in headers {
            builder = builder.header(*k, v);
        }
        let req = builder
            .body(Full::new(Bytes::new()))
            .map_err(|e| PeerError::Request(e.to_string()))?;
        let resp = tokio::time::timeout(self.timeout, self.client.request(req))
            .await
            .map_err(|_| PeerError::Timeout)?
            .map_err(|e| PeerError::Unreachable(error_chain(&e)))?;
        let (parts, mut body) = resp.into_parts();
        if !parts.status.is_success() {
            let bytes = tokio::time::timeout(self.timeout, body.collect())
                .await
                .map_err(|_| PeerError::Timeout)?
                .map_err(|e| PeerError::Unreachable(e.to_string()))?
                .to_bytes();
            return Ok((parts.status, parts.headers, bytes, 0));
        }
        let mut written = 0u64;
        loop {
            let frame = tokio::time::timeout(self.timeout, body.frame())
                .await
                .map_err(|_| PeerError::Timeout)?;
            let Some(frame) = frame else { break };
            let frame = frame.map_err(|e| PeerError::Unreachable(error_chain(&e)))?;
            if let Ok(data) = frame.into_data() {
                sink.write_all(&data)
                    .map_err(|e| PeerError::Request(format!("cannot write the download: {e}")))?;
                written += data.len() as u64;
            }
        }
        Ok((parts.status, parts.headers, Bytes::new(), written))
    }

    /// `url` with `http://` upgraded to `https://` when every call goes over TLS.
    fn upgrade(&self, url: &str) -> String {
        match url.strip_prefix("http://") {
            Some(rest) if self.always_tls => format!("https://{rest}"),
            _ => url.to_string(),
        }
    }

    /// Send a request and collect the response body.
    pub async fn call(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<(StatusCode, hyper::HeaderMap, Bytes), PeerError> {
        let url = self.upgrade(url);
        let mut builder = Request::builder().method(method).uri(url.as_str());
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
                .map_err(|e| PeerError::Unreachable(error_chain(&e)))?;
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

/// An error with its sources: hyper's own message ("client error (Connect)") hides the cause
/// a TLS failure names (an unknown CA, a name mismatch, a refused certificate). Also what the
/// Raft transport reports (`raftlane_raft::network`).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
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
