//! Raw HTTP to one node, for tests that must see what the typed client hides: every status,
//! header and body as the server sent it, no failover, no retries, no hidden headers.

use hyper::{HeaderMap, Method, StatusCode};
use raftlane_client::transport::{base_url, PeerClient};
use serde_json::Value;
use std::time::Duration;

/// One HTTP answer, unprocessed (the typed client hides statuses, retries 503 and drops headers).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The body parsed as JSON, or `Null` when it is not JSON.
    pub json: Value,
    pub text: String,
}

impl Reply {
    /// Assert the API's error shape: exactly `{"error": {code, message, field?}}` with a
    /// non-empty message, this status and code, and `field` present exactly when given.
    /// `extra` names further keys the error object may carry (e.g. `current_version`).
    #[track_caller]
    pub fn assert_error_with(&self, status: u16, code: &str, field: Option<&str>, extra: &[&str]) {
        assert_eq!(self.status.as_u16(), status, "status of {self:?}");
        let top = self
            .json
            .as_object()
            .unwrap_or_else(|| panic!("error body is not a JSON object: {self:?}"));
        assert_eq!(top.len(), 1, "only `error` at the top level: {self:?}");
        let err = top["error"]
            .as_object()
            .unwrap_or_else(|| panic!("`error` is not an object: {self:?}"));
        assert_eq!(
            err.get("code").and_then(Value::as_str),
            Some(code),
            "code of {self:?}"
        );
        assert!(
            err.get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.trim().is_empty()),
            "non-empty message in {self:?}"
        );
        assert_eq!(
            err.get("field").and_then(Value::as_str),
            field,
            "field of {self:?}"
        );
        for key in err.keys() {
            assert!(
                ["code", "message", "field"].contains(&key.as_str())
                    || extra.contains(&key.as_str()),
                "unexpected key {key} in {self:?}"
            );
        }
    }

    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str, field: Option<&str>) {
        self.assert_error_with(status, code, field, &[]);
    }

    /// Assert a 2xx answer and return its JSON.
    #[track_caller]
    pub fn ok(&self) -> &Value {
        assert!(self.status.is_success(), "expected success: {self:?}");
        &self.json
    }

    /// The error's message (empty when there is none).
    pub fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }
}

/// A raw HTTP client for one node.
#[derive(Clone)]
pub struct Http {
    base: String,
    client: PeerClient,
}

impl Http {
    /// A client for the node at `addr` (`host:port`, or with a scheme).
    pub fn new(addr: &str, timeout: Duration) -> Self {
        Self::with_tls(addr, timeout, None)
    }

    /// Like [`Self::new`], over TLS with `tls` when given.
    pub fn with_tls(
        addr: &str,
        timeout: Duration,
        tls: Option<&raftlane_client::tls::ClientTls>,
    ) -> Self {
        Self {
            base: base_url(addr),
            client: PeerClient::with_tls(timeout, tls),
        }
    }

    /// Send `body` with `content_type` (if any) and `Authorization: Bearer token` (if any).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
        headers: &[(&str, String)],
    ) -> Reply {
        let mut hs: Vec<(&str, String)> = Vec::new();
        if let Some(t) = token {
            hs.push(("authorization", format!("Bearer {t}")));
        }
        if let Some(ct) = content_type {
            hs.push(("content-type", ct.to_string()));
        }
        hs.extend(headers.iter().cloned());
        let url = format!("{}{}", self.base, path);
        let (status, headers, bytes) = self
            .client
            .call(method.clone(), &url, &hs, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        Reply {
            status,
            headers,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// A JSON request (`body` serialized) with a token.
    pub async fn json(&self, method: Method, path: &str, token: &str, body: &Value) -> Reply {
        self.send(
            method,
            path,
            Some(token),
            Some("application/json"),
            body.to_string().into_bytes(),
            &[],
        )
        .await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(Method::GET, path, token, None, Vec::new(), &[])
            .await
    }
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
pub async fn call(
    http: &PeerClient,
    base: &str,
    token: &str,
    method: Method,
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
