//! Request ids: what makes a retried write exactly-once.
//!
//! Every proposal carries a request id; the state machine remembers the answer to each
//! `(principal, request id)` for a while and answers a repeat with the first answer instead of
//! applying it again (see `raftlane_statemachine::apply::request`). A client that may retry a write
//! sends `Request-Id: <id>` and reuses it on the retry; without one, the node picks a random id,
//! which still lets the node itself retry across a leader change without a duplicate.
//!
//! One HTTP request may propose more than once, so each proposal gets `<id>/<n>`, numbered in
//! the order the handler proposes: a retried request makes the same proposals in the same
//! order and so finds the same answers.
//!
//! A client-chosen id names one request, not whatever request reuses it: [`bind`] (a middleware)
//! fingerprints every write that carries a `Request-Id` (method, path and query, the headers
//! that feed commands, the body), and each proposal of that request carries it as its
//! envelope's `fingerprint`, so the state machine answers a repeat only when it is the same
//! request and refuses any other with `409 request_id_reused` (docs/SPEC.md §10.5). The
//! fingerprint is taken from the request and not from the commands it proposes because a true
//! retry's commands differ (values sealed under a fresh nonce, a new random token, the node's
//! clock), while its request does not. A node-drawn id needs no fingerprint: nobody else can
//! send it.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub const HEADER: &str = raftlane_contract::headers::REQUEST_ID;
/// The header as errors name it (`field`).
pub const HEADER_NAME: &str = raftlane_contract::headers::REQUEST_ID_FIELD;
/// Room left for the `/<n>` suffix inside the state machine's limit.
const MAX_CLIENT_LEN: usize = raftlane_statemachine::apply::request::MAX_REQUEST_ID_LEN - 8;

/// The headers a route turns into command fields (the raw enqueue's descriptive fields and
/// idempotency key, the config's compare-and-set version, JSON or raw text): two requests that
/// differ in one of them are different requests. Every other header (tracing, proxies, the
/// test client's time) may differ between a request and its retry. A route that starts reading
/// a new header into a command adds it here.
const BOUND_HEADERS: [&str; 8] = [
    "content-type",
    raftlane_contract::headers::IF_MATCH,
    raftlane_contract::headers::IDEMPOTENCY_KEY,
    "x-control-id",
    "x-message-type",
    "x-source-type",
    "x-summary",
    "x-metadata",
];

/// The SHA-256 of one HTTP request as far as it decides what the request proposes (see the
/// module docs), kept in the request's extensions by [`bind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// Every part length-prefixed, so no two different requests frame to the same bytes.
    pub fn of(method: &Method, path_and_query: &str, headers: &HeaderMap, body: &[u8]) -> Self {
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        };
        part(b"raftlane-request-v1");
        part(method.as_str().as_bytes());
        part(path_and_query.as_bytes());
        for name in BOUND_HEADERS {
            let values: Vec<&[u8]> = headers.get_all(name).iter().map(|v| v.as_bytes()).collect();
            part(name.as_bytes());
            part(&(values.len() as u64).to_be_bytes());
            for v in values {
                part(v);
            }
        }
        part(body);
        Self(h.finalize().into())
    }
}

/// Middleware: fingerprint a write that carries a client's `Request-Id` (its body is read here
/// once and handed on unchanged). Reads and requests without the header pass untouched.
pub async fn bind(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    if method == Method::GET || method == Method::HEAD || !req.headers().contains_key(HEADER) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, state.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(e) => return body_read_error(e).into_response(),
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path(), |p| p.as_str());
    let fingerprint = Fingerprint::of(&method, path, &parts.headers, &bytes);
    parts.extensions.insert(fingerprint);
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// A body [`bind`] could not read: over the limit (`413`, as the handlers' own extractors
/// answer), or broken off.
fn body_read_error(e: axum::Error) -> ApiError {
    if let Some(late) = crate::body_deadline::timed_out(&e) {
        return crate::extract::body_timeout(late);
    }
    let too_large =
        std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
    if too_large {
        ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "request body exceeds the configured limit",
        )
    } else {
        ApiError::invalid("body", e.to_string())
    }
}

/// The request ids of one HTTP request.
#[derive(Clone, Debug)]
pub struct RequestIds {
    base: String,
    next: Arc<AtomicU32>,
    /// The request's fingerprint when the client chose the id (see [`bind`]).
    fingerprint: Option<Fingerprint>,
}

impl RequestIds {
    /// From a request's `Request-Id` header and the fingerprint [`bind`] left in its extensions.
    pub fn from_parts(parts: &Parts) -> Result<Self, ApiError> {
        let mut ids = Self::from_headers(&parts.headers)?;
        if parts.headers.contains_key(HEADER) {
            ids.fingerprint = parts.extensions.get::<Fingerprint>().copied();
        }
        Ok(ids)
    }

    /// From the `Request-Id` header, or a fresh random id; bound to no fingerprint.
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, ApiError> {
        let base = match headers.get(HEADER) {
            None => format!("n-{:032x}", rand::random::<u128>()),
            Some(v) => {
                let id = v.to_str().unwrap_or_default();
                let ok = !id.is_empty()
                    && id.len() <= MAX_CLIENT_LEN
                    && id.bytes().all(|b| b.is_ascii_graphic());
                if !ok {
                    return Err(ApiError::invalid(
                        HEADER_NAME,
                        format!("must be 1 to {MAX_CLIENT_LEN} visible ASCII characters"),
                    ));
                }
                id.to_string()
            }
        };
        Ok(Self {
            base,
            next: Arc::new(AtomicU32::new(0)),
            fingerprint: None,
        })
    }

    /// The id of this request's next proposal.
    pub fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}/{n}", self.base)
    }

    /// The fingerprint this request's proposals are bound to, when the client chose the id.
    pub fn fingerprint(&self) -> Option<[u8; 32]> {
        self.fingerprint.map(|Fingerprint(f)| f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_is_numbered_per_proposal_and_a_bad_one_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(HEADER, "abc-1".parse().unwrap());
        let ids = RequestIds::from_headers(&h).unwrap();
        assert_eq!(ids.next(), "abc-1/0");
        assert_eq!(ids.next(), "abc-1/1");
        h.insert(HEADER, "a b".parse().unwrap());
        assert!(RequestIds::from_headers(&h).is_err());
        h.insert(HEADER, "x".repeat(57).parse().unwrap());
        assert!(RequestIds::from_headers(&h).is_err());
    }

    #[test]
    fn a_fingerprint_covers_method_path_body_and_the_headers_that_feed_commands() {
        let h = HeaderMap::new();
        let base = Fingerprint::of(&Method::POST, "/v1/channels/a/messages", &h, b"{}");
        assert_eq!(
            base,
            Fingerprint::of(&Method::POST, "/v1/channels/a/messages", &h, b"{}")
        );
        let mut traced = HeaderMap::new();
        traced.insert("traceparent", "00-abc".parse().unwrap());
        traced.insert(crate::request_id::HEADER, "r-1".parse().unwrap());
        traced.insert("raftlane-client-time-ms", "5".parse().unwrap());
        assert_eq!(
            base,
            Fingerprint::of(&Method::POST, "/v1/channels/a/messages", &traced, b"{}"),
            "headers that propose nothing do not count"
        );
        let mut keyed = HeaderMap::new();
        keyed.insert("idempotency-key", "k".parse().unwrap());
        let others = [
            Fingerprint::of(&Method::PUT, "/v1/channels/a/messages", &h, b"{}"),
            Fingerprint::of(&Method::POST, "/v1/channels/b/messages", &h, b"{}"),
            Fingerprint::of(&Method::POST, "/v1/channels/a/messages?x=1", &h, b"{}"),
            Fingerprint::of(&Method::POST, "/v1/channels/a/messages", &h, b"{ }"),
            Fingerprint::of(&Method::POST, "/v1/channels/a/messages", &keyed, b"{}"),
        ];
        for o in others {
            assert_ne!(o, base);
        }
        // Only a client's id is bound.
        let ids = RequestIds::from_headers(&h).unwrap();
        assert_eq!(ids.fingerprint(), None);
    }

    #[test]
    fn without_a_header_each_request_gets_its_own_valid_id() {
        let a = RequestIds::from_headers(&HeaderMap::new()).unwrap().next();
        let b = RequestIds::from_headers(&HeaderMap::new()).unwrap().next();
        assert_ne!(a, b);
        assert!(raftlane_statemachine::apply::request::check_id(&a).is_ok());
    }
}
