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

use crate::error::ApiError;
use axum::http::HeaderMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub const HEADER: &str = raftlane_contract::headers::REQUEST_ID;
/// Room left for the `/<n>` suffix inside the state machine's limit.
const MAX_CLIENT_LEN: usize = raftlane_statemachine::apply::request::MAX_REQUEST_ID_LEN - 8;

/// The request ids of one HTTP request.
#[derive(Clone, Debug)]
pub struct RequestIds {
    base: String,
    next: Arc<AtomicU32>,
}

impl RequestIds {
    /// From the `Request-Id` header, or a fresh random id.
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
                        "Request-Id",
                        format!("must be 1 to {MAX_CLIENT_LEN} visible ASCII characters"),
                    ));
                }
                id.to_string()
            }
        };
        Ok(Self {
            base,
            next: Arc::new(AtomicU32::new(0)),
        })
    }

    /// The id of this request's next proposal.
    pub fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}/{n}", self.base)
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
    fn without_a_header_each_request_gets_its_own_valid_id() {
        let a = RequestIds::from_headers(&HeaderMap::new()).unwrap().next();
        let b = RequestIds::from_headers(&HeaderMap::new()).unwrap().next();
        assert_ne!(a, b);
        assert!(raftlane_statemachine::apply::request::check_id(&a).is_ok());
    }
}
